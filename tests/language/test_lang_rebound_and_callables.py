"""False refusals fixed (issue 10): an argument rebound to a copy may be written into; module-level
functools.partial objects and callable instances are differentiated when called."""
import functools

import numpy as np
import pytest

import s2sad
from s2sad.errors import ArgumentWriteError
from s2sad.testing import check_grads

rng = np.random.default_rng(5)
X = rng.standard_normal(3)


def args_copy(*args):
    args = list(args)
    args[0] = args[0] * 2.0
    return args[0] * args[1]


def x_copy(x, y):
    x = x.copy()
    x[0] = y * 2.0
    return np.sum(x * x)


def dict_copy(d, y):
    d = dict(d)
    d["a"] = d["a"] * y
    return d["a"] + d["b"]


def test_args_rebound_to_copy():
    check_grads(args_copy, (1.5, 2.5), modes=("rev", "fwd"))
    check_grads(x_copy, (X, 0.7), modes=("rev", "fwd"))
    check_grads(dict_copy, ({"a": 1.2, "b": -0.4}, 0.7), modes=("rev", "fwd"))


def alias_then_copy(x, y):
    z = x
    x = x.copy()
    z[0] = y                 # z is still the caller's array
    return np.sum(x * z)


def copy_in_branch(x, y, flag):
    if flag:
        x = x.copy()
    x[0] = y                 # the caller's array when flag is False
    return np.sum(x)


@pytest.mark.parametrize("f, args", [(alias_then_copy, (X, 0.5)), (copy_in_branch, (X, 0.5, True))],
                         ids=["alias", "branch"])
def test_writes_into_the_callers_object_still_refused(f, args):
    with pytest.raises(ArgumentWriteError) as e:
        s2sad.grad(f, wrt=1)(*args)
    assert "test_lang_rebound_and_callables.py:" in str(e.value) and "Fix:" in str(e.value)


def _scaled_sq(a, x, b=0.0):
    return a * np.sum(x * x) + b * np.sum(x)


class Model:
    def __init__(self, w):
        self.w = w

    def __call__(self, x):
        return np.sum(np.tanh(self.w * x))


PARTIAL = functools.partial(_scaled_sq, 2.0, b=-1.0)
MODEL = Model(np.array([0.5, -1.5, 2.0]))


def uses_module_callables(x):
    return PARTIAL(x) + MODEL(x) * 3.0


def test_module_level_partial_and_callable_instance():
    check_grads(uses_module_callables, (X,), modes=("rev", "fwd"))


def constant_through_alias_of_argument(x, y):
    s = np.sum(x * x)
    a = x
    a[0] = 0.0               # changes the caller's x, which the derivative reads
    return s + np.sum(x) * y


def constant_through_alias_of_local(x, y):
    b = x * 1.0
    s = np.sum(b * b)
    a = b
    a[0] = 0.0               # b changes too
    return s + np.sum(b) * y


def test_constant_written_through_an_alias_refused():
    for f, err in ((constant_through_alias_of_argument, ArgumentWriteError),
                   (constant_through_alias_of_local, s2sad.errors.UnsupportedSyntaxError)):
        for run in (lambda: s2sad.grad(f)(X, 0.5), lambda: s2sad.jvp(f, (X, 0.5), (X, 0.0))):
            with pytest.raises(err) as e:
                run()
            assert "test_lang_rebound_and_callables.py:" in str(e.value) and "Fix:" in str(e.value)


def constant_into_argument_directly(x, y):
    s = np.sum(x * x)
    x[0] = 0.0               # s2sad keeps the values it needs from before the write
    return s * y


def test_constant_written_into_argument_directly():
    g = s2sad.grad(constant_into_argument_directly)(X.copy(), 0.5)
    np.testing.assert_allclose(g, 2 * X * 0.5, rtol=1e-12)
    v = np.array([0.3, 1.0, -2.0])
    _, t = s2sad.jvp(constant_into_argument_directly, (X.copy(), 0.5), (v, 0.0))
    np.testing.assert_allclose(t, np.sum(2 * X * v) * 0.5, rtol=1e-12)
