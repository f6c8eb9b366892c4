"""jit=True and module-level arrays: Numba compiles a global array's values into the machine code,
so a change made in place after the first call (``W[0] = 10.0``) was not seen and the compiled
gradient was silently the old one.  The derivative takes such arrays (and global tuples of them)
as parameters now, passed in at each call; an array read through a module attribute or a global
list runs as Python with a warning."""
import sys
import types
import warnings

import numpy as np
import pytest

import s2sad
from s2sad.errors import JitFallbackWarning

pytest.importorskip("numba")

W = np.array([1.0, 2.0, 3.0])
PAIR = (np.array([1.0, 1.0, 1.0]), np.array([0.5, 0.5, 0.5]))
ITEMS = [np.array([1.0, 2.0, 3.0])]
cfg = types.ModuleType("s2sad_test_cfg")
cfg.W = np.array([1.0, 2.0, 3.0])
sys.modules[cfg.__name__] = cfg

X = np.array([0.3, 0.7, -0.5])


def weighted(x):
    s = 0.0
    for i in range(3):
        s = s + W[i] * x[i] ** 2
    return s


def paired(x):
    s = 0.0
    for i in range(3):
        s = s + PAIR[0][i] * x[i] ** 2 + PAIR[1][i] * x[i]
    return s


def through_attr(x):
    s = 0.0
    for i in range(3):
        s = s + cfg.W[i] * x[i] ** 2
    return s


def through_list(x):
    s = 0.0
    for i in range(3):
        s = s + ITEMS[0][i] * x[i] ** 2
    return s


@pytest.fixture(autouse=True)
def _reset():
    W[:] = [1.0, 2.0, 3.0]
    PAIR[0][:] = 1.0
    cfg.W[:] = [1.0, 2.0, 3.0]
    ITEMS[0][:] = [1.0, 2.0, 3.0]
    yield


def test_in_place_change_of_a_global_array_is_seen_reverse():
    g = s2sad.grad(weighted, jit=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)     # compiled, not fallen back
        np.testing.assert_allclose(g(X), 2 * X * W)
        W[0] = 10.0
        np.testing.assert_allclose(g(X), 2 * X * W)           # was [0.6, 2.8, -3.0]
        v, gv = s2sad.value_and_grad(weighted, jit=True)(X)
    assert v == pytest.approx(np.sum(W * X ** 2))
    np.testing.assert_allclose(gv, 2 * X * W)


def test_in_place_change_of_a_global_array_is_seen_forward():
    t = np.array([1.0, 0.5, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        s2sad.jvp(weighted, (X,), (t,), jit=True)
        W[1] = -4.0
        _, dv = s2sad.jvp(weighted, (X,), (t,), jit=True)
    assert dv == pytest.approx(np.sum(2 * X * W * t))


def test_global_tuple_of_arrays_is_passed_in():
    g = s2sad.grad(paired, jit=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        g(X)
        PAIR[0][2] = 7.0
        np.testing.assert_allclose(g(X), 2 * X * PAIR[0] + PAIR[1])


def test_the_generated_source_names_the_arrays():
    src = s2sad.differentiate(weighted, jit=True).adjoint_source(X)
    assert "def weighted__vjp(x, _b_r, W):" in src
    assert "the module-level array W is passed in at each call" in src.splitlines()[0]


@pytest.mark.parametrize("fn, what", [(through_attr, "cfg.W"), (through_list, "list ITEMS")])
def test_arrays_numba_would_freeze_run_as_python(fn, what):
    src = cfg.W if fn is through_attr else ITEMS[0]
    g = s2sad.grad(fn, jit=True)
    with pytest.warns(JitFallbackWarning, match=what.replace(".", r"\.")) as rec:
        g(X)
    assert "test_jit_module_arrays.py" in str(
        next(w for w in rec if w.category is JitFallbackWarning).message)
    src[0] = 10.0
    np.testing.assert_allclose(g(X), 2 * X * src)
