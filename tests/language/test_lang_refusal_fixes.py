"""Programs that were refused though s2sad can differentiate them, and refusals whose message did
not describe the user's program (found by probing; one section per finding)."""
import numpy as np
import pytest

import s2sad
from s2sad.errors import ArgumentWriteError, S2SADError
from lang_helpers import check_grads, check_obj_grad, line_of

X = np.array([0.3, 0.7, -0.4])


def _no_internals(msg):
    import re
    assert "_rt." not in msg and "_b_" not in msg and "_s_" not in msg
    assert not re.search(r"`_\d+", msg), msg


# -- a method that counts its calls on self, called on an object the caller passed in ----------
# Before: "this line calls a method that changes `m`, an object the caller passed in, with values
# that carry a derivative" (reverse mode), though `self.calls += 1` writes an int.
class Counted:
    def __init__(self, w):
        self.w = w
        self.calls = 0
        self.log = []

    def apply(self, x):
        self.calls += 1
        self.log.append(self.calls)
        return np.sin(self.w * x)

    def keep(self, x):
        self.last = np.sum(x)
        return np.sin(self.w * x)


def counted_twice(x, m):
    y = m.apply(x)
    y = m.apply(y)
    return np.sum(y) * m.w + 0 * m.calls


def counted_keeps(x, m):
    y = m.keep(x)
    return np.sum(y) + m.last


def test_method_counting_calls_on_an_argument():
    m = Counted(1.5)
    g = s2sad.grad(counted_twice)(X, m)
    assert m.calls == 2 and m.log == [1, 2]           # the method ran as Python runs it
    check_grads(counted_twice, (X, Counted(1.5)), wrt=0)
    check_obj_grad(counted_twice, (X, Counted(1.5)), 1, ["w"])
    check_grads(lambda x: counted_twice(x, Counted(1.5)), (X,), modes=("rev", "fwd"))
    np.testing.assert_allclose(g, s2sad.grad(lambda x: counted_twice(x, Counted(1.5)))(X))


def test_method_keeping_a_float_on_an_argument_is_refused_naming_it():
    with pytest.raises(ArgumentWriteError) as e:
        s2sad.grad(counted_keeps)(X, Counted(1.5))
    msg = str(e.value)
    assert f":{line_of(counted_keeps, 'y = m.keep(x)')}:" in msg
    assert "`m.last`" in msg and "`m.calls`" not in msg
    _no_internals(msg)


# -- second derivatives through a closure made by another function, called in a loop -----------
# Before: "second derivatives through a call s2sad resolves only at run time (a function defined
# inside the function and called there, a method of a local object, an in-place method of a deque
# or list ..., a function passed in as an argument)": none of which `kf` is, with a fix that did
# not say what to move or what to pass.  (Second derivatives through such calls are not supported:
# hessian is forward mode over the first derivative, whose call of `kf` is resolved only when it
# runs.)
def make_filter(theta):
    def kf(v):
        return theta * v
    return kf


def filtered(theta, x):
    acc = x
    kf = make_filter(theta)
    for i in range(3):
        acc = kf(acc)
    return np.sum(acc ** 2)


def kf(theta, v):                    # the fix the message gives
    return theta * v


def filtered_fixed(theta, x):
    acc = x
    for i in range(3):
        acc = kf(theta, acc)
    return np.sum(acc ** 2)


def lambda_filtered(theta, x):
    k = lambda v: theta * v          # noqa: E731
    acc = x
    for i in range(2):
        acc = k(acc)
    return np.sum(acc ** 2)


def step(theta, v):
    return theta * v


def lambda_fixed(theta, x):
    acc = x
    for i in range(2):
        acc = step(theta, acc)
    return np.sum(acc ** 2)


@pytest.mark.parametrize("second", ["hessian", "grad_of_grad"])
def test_second_derivative_through_a_closure_names_it(second):
    run = (lambda f: s2sad.hessian(f)(1.3, X)) if second == "hessian" else \
        (lambda f: s2sad.grad(lambda t: s2sad.grad(f)(t, X))(1.3))
    check_grads(filtered, (1.3, X), modes=("rev", "fwd"))          # first derivatives work
    with pytest.raises(S2SADError) as e:
        run(filtered)
    msg = str(e.value)
    assert f":{line_of(filtered, 'acc = kf(acc)')}:" in msg
    assert "call of `kf`, a function defined inside `make_filter` (a closure over `theta`)" in msg
    assert "define `kf(theta, v)` at module level" in msg and "`kf(theta, ...)`" in msg
    assert "__fwd" not in msg and "__jvp" not in msg and "passed in as an argument" not in msg
    _no_internals(msg)
    h = run(filtered_fixed)                      # the fix applied
    eps = 1e-6
    g = s2sad.grad(filtered_fixed)
    np.testing.assert_allclose(h, (g(1.3 + eps, X) - g(1.3 - eps, X)) / (2 * eps), rtol=1e-6)
    with pytest.raises(S2SADError) as e:
        run(lambda_filtered)
    msg = str(e.value)
    assert f":{line_of(lambda_filtered, 'acc = k(acc)')}:" in msg
    assert "call of `k`, a lambda made inside `lambda_filtered`" in msg
    assert "define `step(theta, v)` at module level" in msg
    h = run(lambda_fixed)
    g = s2sad.grad(lambda_fixed)
    np.testing.assert_allclose(h, (g(1.3 + eps, X) - g(1.3 - eps, X)) / (2 * eps), rtol=1e-6)


# -- `self.items.pop()` on a list held by the method's object --------------------------------------
# Before: "this line changes `self.items`, a deque taken from `self` ..." with the fix "build the
# new deque and store that (`self.items = deque(...)`)": the value is a list.  Which of the two it
# is, is known only when it runs: the message names neither, and its fix works for a list.
class Stack:
    def __init__(self, items):
        self.items = items

    def take(self):
        return self.items.pop()

    def take_fixed(self):             # the fix the message gives
        items = list(self.items)
        v = items.pop()
        self.items = items
        return v


def popped(x):
    s = Stack([x[0], x[1], x[2]])
    a = s.take()
    return a * 2.0 + s.items[0] * s.items[-1]


def popped_fixed(x):
    s = Stack([x[0], x[1], x[2]])
    a = s.take_fixed()
    return a * 2.0 + s.items[0] * s.items[-1]


@pytest.mark.parametrize("mode", ["rev", "fwd"])
def test_pop_of_a_list_on_self_is_not_called_a_deque(mode):
    with pytest.raises(S2SADError) as e:
        if mode == "rev":
            s2sad.grad(popped)(X)
        else:
            s2sad.jvp(popped, (X,), (np.ones(3),))
    msg = str(e.value)
    assert f":{line_of(Stack.take, 'return self.items.pop()')}:" in msg
    assert "deque" not in msg and "`self.items`" in msg and "`.pop(...)`" in msg
    assert "`items = list(self.items)`, then `items.pop(...)`, then `self.items = items`" in msg
    _no_internals(msg)
    check_grads(popped_fixed, (X,), modes=(mode,))
