"""``xp = get_array_module(x)`` is resolved when the derivative is built (issue 14, item 1).

The derivative is specialised on the array library of its arguments (``runtime.kind_of``: "a" for
NumPy's arrays, "a:<library>" for another's), so ``xp`` is a module known at build time:
``xp.tanh(h)`` is a primitive site with ``tanh``'s rule, not a call dispatched at run time through
``_rt.call``, and ``xp`` has no adjoint.  A second array library (a CuPy-like fake module here, the
real CuPy on a GPU) gets a derivative of its own.
"""
import sys
import types

import numpy as np
import pytest

import s2sad
from s2sad import runtime
from s2sad.cache import CACHE
from s2sad.rules.namespaces import defnamespace
from s2sad.testing import check_grads


# -- a CuPy-like library: its arrays are NumPy arrays of its own class, its functions NumPy's ----
fakecupy = types.ModuleType("fakecupy")


class ndarray(np.ndarray):
    pass


ndarray.__module__ = "fakecupy"
fakecupy.ndarray = ndarray
for _name in ("tanh", "sum", "exp", "max", "mean", "swapaxes", "concatenate", "moveaxis"):
    setattr(fakecupy, _name, getattr(np, _name))


def get_array_module(*arrays):
    """cupy.get_array_module's behaviour for numpy and fakecupy arrays."""
    return fakecupy if any(isinstance(a, ndarray) for a in arrays) else np


fakecupy.get_array_module = get_array_module
sys.modules["fakecupy"] = fakecupy
s2sad.defzero(get_array_module)
defnamespace(get_array_module, lambda libs: (fakecupy if "fakecupy" in libs else np)
             if libs <= {"numpy", "fakecupy"} else None)


def on_fake(a):
    return np.asarray(a).view(ndarray)


def layer(x, W):
    xp = get_array_module(x)
    h = xp.tanh(x @ W)
    return xp.sum(h * h)


def softmax_concat(x, W):
    xp = get_array_module(x)
    s = x @ W
    s = s - xp.max(s, axis=-1, keepdims=True)
    p = xp.exp(s)
    p = p / xp.sum(p, axis=-1, keepdims=True)
    z = xp.concatenate([x, xp.swapaxes(p, 0, 1).T], axis=-1)
    return xp.mean(xp.tanh(z) ** 2)


def _inputs(seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((5, 4)), rng.standard_normal((4, 3))


def test_kinds_name_the_array_library():
    x, _ = _inputs()
    assert runtime.kind_of(x) == "a"
    assert runtime.kind_of(np.float64(1.5)) == "a"
    assert runtime.kind_of(on_fake(x)) == "a:fakecupy"


@pytest.mark.parametrize("f", [layer, softmax_concat])
def test_xp_sites_are_primitives_on_numpy(f):
    x, W = _inputs()
    src = s2sad.differentiate(f, wrt=(0, 1)).adjoint_source(x, W)
    assert "_rt.call" not in src
    assert "_b_xp" not in src
    assert "xp = numpy" in src                     # the module, known when it was built
    assert "numpy.tanh(" in src
    check_grads(f, (x, W))


def test_layer_gradient_closed_form():
    x, W = _inputs(1)
    h = np.tanh(x @ W)
    gx, gW = s2sad.grad(layer, wrt=(0, 1))(x, W)
    g1 = 2 * h * (1 - h * h)
    np.testing.assert_allclose(gx, g1 @ W.T, rtol=1e-12)
    np.testing.assert_allclose(gW, x.T @ g1, rtol=1e-12)


def test_second_library_builds_its_own_derivative():
    def own():      # this function's derivatives in the cache
        return {k: d for k, d in list(CACHE._store.items()) if k[0] is softmax_concat.__code__}
    for k, d in own().items():      # (an earlier test in the same worker may have built
        CACHE.discard(k, d)         # them: start without)
    x, W = _inputs(2)
    vg = s2sad.value_and_grad(softmax_concat, wrt=(0, 1))
    v_np, g_np = vg(x, W)
    before = own()
    v_fk, g_fk = vg(on_fake(x), on_fake(W))
    after = own()
    assert len(after) == len(before) + 1            # a derivative for fakecupy arrays
    vg(on_fake(x), on_fake(W))
    vg(x, W)
    assert own() == after                           # each reused
    assert v_fk == pytest.approx(v_np, rel=1e-14)
    for a, b in zip(g_fk, g_np):
        assert type(a) is ndarray
        np.testing.assert_allclose(np.asarray(a), b, rtol=1e-12, atol=1e-15)
    src_fk = s2sad.differentiate(softmax_concat, wrt=(0, 1)).adjoint_source(on_fake(x), on_fake(W))
    src_np = s2sad.differentiate(softmax_concat, wrt=(0, 1)).adjoint_source(x, W)
    assert "xp = fakecupy" in src_fk and "fakecupy.exp(" in src_fk and "_rt.call" not in src_fk
    assert "xp = numpy" in src_np and "fakecupy" not in src_np


def test_callee_specialised_on_the_library_it_is_called_with():
    def outer(x, W):
        return 2.0 * layer(x, W)
    x, W = _inputs(3)
    g_np = s2sad.grad(outer, wrt=(0, 1))(x, W)
    g_fk = s2sad.grad(outer, wrt=(0, 1))(on_fake(x), on_fake(W))
    for a, b in zip(g_fk, g_np):
        assert type(a) is ndarray
        np.testing.assert_allclose(np.asarray(a), b, rtol=1e-12)
    check_grads(outer, (x, W))


def rebound(x, W):
    x = x * 1.5
    xp = get_array_module(x)
    return xp.sum(xp.tanh(x @ W))


def of_computed(x, W):
    h = x @ W
    xp = get_array_module(h)
    return xp.sum(xp.tanh(h))


def mixed_library(x, W):
    xp = get_array_module(x, W)
    return xp.sum(xp.tanh(x @ W))


@pytest.mark.parametrize("f", [rebound, of_computed])
def test_namespace_of_a_value_known_only_at_run_time_stays_dynamic(f):
    # (the library of a computed or rebound value is not fixed by the arguments' kinds)
    x, W = _inputs(4)
    src = s2sad.differentiate(f, wrt=(0, 1)).adjoint_source(x, W)
    assert "_rt.call_method(xp, 'tanh'" in src
    check_grads(f, (x, W))


def test_mixed_libraries_resolve_to_the_non_numpy_one():
    x, W = _inputs(5)
    src = s2sad.differentiate(mixed_library, wrt=(0, 1)).adjoint_source(x, on_fake(W))
    assert "xp = fakecupy" in src
    src = s2sad.differentiate(mixed_library, wrt=(0, 1)).adjoint_source(x, W)
    assert "xp = numpy" in src


def test_unknown_library_is_left_to_run_time():
    class Other(np.ndarray):
        pass
    Other.__module__ = "otherlib"
    x, W = _inputs(6)
    # the fake resolver knows numpy and fakecupy only: otherlib arrays are not resolved
    src = s2sad.differentiate(layer, wrt=(0, 1)).adjoint_source(x.view(Other), W)
    assert "_rt.call_method(xp, 'tanh'" in src


def test_array_api_compat_namespace():
    aac = pytest.importorskip("array_api_compat")
    from tests.core import xp_idiom_target as t
    x, W = _inputs(7)
    src = s2sad.differentiate(t.compat_layer, wrt=(0, 1)).adjoint_source(x, W)
    assert "_rt.call" not in src and "_b_xp" not in src
    assert t.compat_layer.__globals__["aac"] is aac
    check_grads(t.compat_layer, (x, W))


@pytest.mark.gpu
def test_cupy_get_array_module_on_the_gpu():
    cupy = pytest.importorskip("cupy")
    if not cupy.is_available():
        pytest.skip("no GPU")
    from tests.core import xp_idiom_target as t
    x, W = _inputs(8)
    src = s2sad.differentiate(t.cupy_layer, wrt=(0, 1)).adjoint_source(cupy.asarray(x),
                                                                       cupy.asarray(W))
    assert "xp = cupy" in src and "cupy.tanh(" in src
    assert "_rt.call" not in src and "_b_xp" not in src
    g_gpu = s2sad.grad(t.cupy_layer, wrt=(0, 1))(cupy.asarray(x), cupy.asarray(W))
    g_cpu = s2sad.grad(t.cupy_layer, wrt=(0, 1))(x, W)
    for a, b in zip(g_gpu, g_cpu):
        assert isinstance(a, cupy.ndarray)
        np.testing.assert_allclose(cupy.asnumpy(a), b, rtol=1e-10)
