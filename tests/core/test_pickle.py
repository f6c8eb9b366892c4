"""Plain pickle (and cloudpickle) of @differentiate functions and of what grad/value_and_grad
return: module-level functions by reference, closures and lambdas by value (their source text
travels, so a process without the file rebuilds them)."""
import importlib.util
import os
import pickle
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import pickle_target as pt
import s2sad
from s2sad.api import Differentiable
from s2sad.errors import NotPicklableError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
W = np.array([0.3, -0.7, 1.1])
X = np.array([1.5, 2.0, -0.4])


def _round_trip(obj):
    return pickle.loads(pickle.dumps(obj))


def test_module_level_differentiate_is_pickled_by_reference():
    b = pickle.dumps(pt.loss)
    assert b"pickle_target" in b and b"def loss" not in b and len(b) < 100
    assert pickle.loads(b) is pt.loss


def test_grad_of_module_function_by_reference():
    g = s2sad.grad(pt.plain, wrt=(0, 1))
    b = pickle.dumps(g)
    assert b"def plain" not in b and b"pickle_target" in b
    g2 = pickle.loads(b)
    gw, gx = g2(W, X)
    np.testing.assert_allclose(gw, np.cos(W) * X, rtol=1e-14)
    np.testing.assert_allclose(gx, np.sin(W), rtol=1e-14)
    assert g2.__name__ == "plain"


def test_value_and_grad_keeps_its_options():
    vg = _round_trip(s2sad.value_and_grad(pt.with_aux, has_aux=True))
    (v, aux), g = vg(W)
    assert v == pytest.approx(np.sum(np.sin(W) ** 2), rel=1e-14)
    np.testing.assert_allclose(aux, np.sin(W), rtol=1e-14)
    np.testing.assert_allclose(g, 2 * np.sin(W) * np.cos(W), rtol=1e-13)
    g2 = _round_trip(s2sad.grad(pt.loss, argnums=1))
    np.testing.assert_allclose(g2(W, X), pt.loss.grad(W, X)[1], rtol=1e-14)


def test_differentiate_of_grad_of_differentiable():
    g = _round_trip(s2sad.grad(pt.loss))         # f is the module-level Differentiable
    np.testing.assert_allclose(g(W, X), pt.loss.grad(W, X)[0], rtol=1e-14)


def test_closure_by_value():
    data = np.array([0.1, 0.2, 0.3])
    f = pt.make_closure(data)
    g = s2sad.grad(f)
    b = pickle.dumps(g)
    assert b"def inner" in b                     # the source text travels
    g2 = pickle.loads(b)
    np.testing.assert_allclose(g2(W), g(W), rtol=1e-14)
    t = np.tanh(W) * 2.0
    np.testing.assert_allclose(g(W), 3.0 * 2 * (t - data) * 2.0 * (1 - np.tanh(W) ** 2),
                               rtol=1e-13)


def test_lambda_and_local_differentiable():
    g = _round_trip(s2sad.grad(lambda v: np.sum(v ** 3)))
    np.testing.assert_allclose(g(W), 3 * W ** 2, rtol=1e-14)

    c = 0.5

    @s2sad.differentiate
    def local(w):
        return np.sum(np.exp(c * w))
    d = _round_trip(local)
    assert isinstance(d, Differentiable)
    np.testing.assert_allclose(d.grad(W), c * np.exp(c * W), rtol=1e-14)
    assert d(W) == pytest.approx(local(W), rel=1e-15)


def test_recursive_local_function():
    def make():
        def power(x, n):
            return 1.0 if n == 0 else x * power(x, n - 1)
        return power
    g = _round_trip(s2sad.grad(make()))
    assert g(1.5, 4) == pytest.approx(4 * 1.5 ** 3, rel=1e-14)


def test_unpicklable_capture_is_refused():
    lock = threading.Lock()

    def f(w):
        with lock:
            return np.sum(w * w)
    with pytest.raises(NotPicklableError) as e:
        pickle.dumps(s2sad.grad(f))
    msg = str(e.value)
    assert "cannot pickle test_unpicklable_capture_is_refused.<locals>.f (" in msg
    assert "the captured variable 'lock' holds a lock, which pickle cannot send" in msg
    assert "\nFix: pass lock as an argument instead of capturing it" in msg


_DEFINING = textwrap.dedent('''\
    import numpy as np
    import s2sad

    def make(data, scale):
        def loss(w):
            r = np.tanh(w) - data
            return scale * np.sum(r * r)
        return loss
    ''')

_WORKER = textwrap.dedent('''\
    import pickle, sys
    import numpy as np
    g = pickle.loads(open(sys.argv[1], "rb").read())
    print(repr(g(np.array([0.3, -0.7, 1.1])).tolist()))
    ''')


@pytest.mark.parametrize("pickler", ["pickle", "cloudpickle"])
def test_worker_without_the_file(tmp_path, pickler):
    """grad(closure) pickled, the defining file deleted, unpickled and run in a new process."""
    dumps = pickle.dumps if pickler == "pickle" else pytest.importorskip("cloudpickle").dumps
    src = tmp_path / "defining_mod.py"
    src.write_text(_DEFINING)
    spec = importlib.util.spec_from_file_location("s2sad_pickle_defining_mod", src)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    g = s2sad.grad(mod.make(np.array([0.1, 0.2, 0.3]), 2.5))
    expected = g(W)
    out = tmp_path / "g.pkl"
    out.write_bytes(dumps(g))
    src.unlink()
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.run([sys.executable, "-c", _WORKER, str(out)], capture_output=True, text=True,
                       env=env, cwd=str(tmp_path), timeout=300)
    assert p.returncode == 0, p.stderr
    got = np.array(eval(p.stdout.strip()))
    np.testing.assert_allclose(got, expected, rtol=1e-14)
    r = np.tanh(W) - np.array([0.1, 0.2, 0.3])
    np.testing.assert_allclose(got, 2.5 * 2 * r * (1 - np.tanh(W) ** 2), rtol=1e-13)


# -- what grad/value_and_grad return is an object now (so it can pickle itself); it still
# differentiates like the function it was: called inside a differentiated function, held in a
# global or made there, and differentiated again
def _inner(x):
    return np.sum(np.sin(x) * x)


_G_INNER = s2sad.grad(_inner)


def _made_inside(x):
    g = s2sad.grad(_inner)
    return np.sum(g(x) ** 2)


def _held_in_global(x):
    return np.sum(_G_INNER(x) ** 2)


def _value_and_grad_inside(x):
    v, g = s2sad.value_and_grad(_inner)(x)
    return v * np.sum(g)


@pytest.mark.parametrize("f", [_made_inside, _held_in_global, _value_and_grad_inside])
def test_returned_callables_differentiate_again(f):
    from s2sad.testing import check_grads
    check_grads(f, (np.array([0.3, 0.8, -1.2]),), modes=("rev", "fwd"))


def test_grad_of_grad_and_repr():
    assert s2sad.grad(s2sad.grad(lambda t: t ** 3))(2.0) == pytest.approx(12.0, rel=1e-14)
    assert repr(_G_INNER) == "<s2sad grad of _inner>"
    assert _G_INNER.__name__ == "_inner" and not hasattr(_G_INNER, "__wrapped__")


def test_the_second_order_and_jacobian_transforms_pickle():
    # (their functions took the user's function's name, and pickle found the user's function
    # under it: "not the same object"; they pickle as the transform of the function now)
    import pickle
    x = np.array([0.3, -0.2, 0.9])
    for t in (s2sad.hessian, s2sad.jacfwd, s2sad.jacrev, s2sad.jacobian):
        h = t(_pickled_sq)
        h2 = pickle.loads(pickle.dumps(h))
        np.testing.assert_allclose(h2(x), h(x), rtol=1e-14)
    hv = pickle.loads(pickle.dumps(s2sad.hvp(_pickled_sq)))
    np.testing.assert_allclose(hv(x, np.ones(3)), s2sad.hvp(_pickled_sq)(x, np.ones(3)))


def _pickled_sq(x):
    return np.sum(np.sin(x) * x ** 2)
