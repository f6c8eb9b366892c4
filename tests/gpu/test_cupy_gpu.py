"""Functions written with CuPy (``cupy.X`` or ``xp = cupy.get_array_module(x)``) differentiated on
the GPU: gradients against the same functions on NumPy arrays, everything kept on the device.
Run with NUMBA_ENABLE_CUDASIM=0 on a machine with CuPy and a GPU; skipped otherwise."""
import numpy as np
import pytest
import scipy.linalg
import scipy.special as sp

import s2sad
from s2sad import DeviceMismatchError
from gpu_helpers import GPU_OK, assert_same, cp, gam, needs_gpu, to_gpu

pytestmark = needs_gpu

if GPU_OK:
    import cupyx
    import cupyx.scipy.linalg
    import cupyx.scipy.special


# -- the same source on both kinds of arrays (xp = get_array_module(x)) ------------------------------
def ew(x, y):
    xp = gam(x)
    return xp.sum(xp.tanh(x) * xp.exp(-y * y) + xp.sqrt(x * x + 1.0) / (2.0 + xp.sin(y)))


def ew_binary(x, y):
    xp = gam(x)
    z = xp.maximum(x, y) + xp.hypot(x, y) + xp.arctan2(x, y + 3.0) + xp.logaddexp(x, y)
    return xp.mean(xp.where(x > 0, z, -z) ** 2)


def reductions(x):
    xp = gam(x)
    return (xp.sum(x, axis=0) @ xp.mean(x, axis=1)[: x.shape[1]] + xp.max(x) * xp.min(x, axis=None)
            + xp.var(x) + xp.std(x, axis=1).sum() + xp.prod(x[:2, :3] + 2.0)
            + xp.cumsum(x, axis=1).sum() + xp.linalg.norm(x))


def linalg(a, b):
    xp = gam(a)
    return xp.sum(xp.tanh(a @ b)) + xp.trace(a.T @ a) + xp.dot(a[0], b[:, 0]) + \
        xp.einsum("ij,jk->", a, b) + xp.sum(xp.matmul(b.T, a.T) ** 2)


def families(a, b):
    xp = gam(a)
    c = xp.concatenate([a, b, a], axis=1)
    s = xp.stack([a, b], axis=0)
    t = xp.transpose(s, (2, 0, 1))
    m = xp.moveaxis(s, 0, -1)
    w = xp.swapaxes(c, 0, 1)
    h = xp.hstack([a.T, b.T])
    v = xp.vstack([a, b])
    return xp.sum(c * c) + xp.sum(t[0] * t[-1]) + xp.sum(m ** 3) + xp.sum(w[::2] ** 2) + \
        xp.sum(xp.tanh(h)) + xp.sum(v.T @ v) + xp.sum(a.T * b.T)


def dynamic_methods(x):
    xp = gam(x)
    y = x.reshape(-1, 2).T
    z = y.transpose(1, 0).sum(axis=1) + x.ravel()[::2]
    return xp.sum(z * z) + x.mean() + x.max(axis=0).sum()


def special(x):
    return cupyx.scipy.special.erf(x).sum() + cupyx.scipy.special.expit(x).sum() + \
        cupyx.scipy.special.logsumexp(x, axis=1).sum() + \
        (cupyx.scipy.special.softmax(x, axis=0) * x).sum() + cupyx.scipy.special.gammaln(x * x + 1).sum()


def special_ref(x):
    return sp.erf(x).sum() + sp.expit(x).sum() + sp.logsumexp(x, axis=1).sum() + \
        (sp.softmax(x, axis=0) * x).sum() + sp.gammaln(x * x + 1).sum()


# -- written with cupy. directly (compared with the NumPy twin) ------------------------------------
def cp_written(a, b):
    c = cp.concatenate([cp.tanh(a), b.T], axis=0)
    return cp.sum(c @ c.T) + cp.sum(cp.moveaxis(cp.stack([a, b.T]), 0, 2) ** 2)


def np_twin(a, b):
    c = np.concatenate([np.tanh(a), b.T], axis=0)
    return np.sum(c @ c.T) + np.sum(np.moveaxis(np.stack([a, b.T]), 0, 2) ** 2)


def block_diag_loss(a, b):
    return cp.sum(cupyx.scipy.linalg.block_diag(a, b) ** 2 * 1.5)


def block_diag_ref(a, b):
    return np.sum(scipy.linalg.block_diag(a, b) ** 2 * 1.5)


RNG = np.random.default_rng(0)


def _r(*shape):
    return RNG.standard_normal(shape)


CASES = [
    ("ew", ew, None, lambda: (_r(4, 5), _r(4, 5))),
    ("ew_broadcast", ew, None, lambda: (_r(4, 5), _r(5))),
    ("ew_binary", ew_binary, None, lambda: (_r(3, 4), _r(3, 4))),
    ("reductions", reductions, None, lambda: (_r(5, 4),)),
    ("linalg", linalg, None, lambda: (_r(3, 4), _r(4, 3))),
    ("families", families, None, lambda: (_r(3, 4), _r(3, 4))),
    ("dynamic_methods", dynamic_methods, None, lambda: (_r(4, 6),)),
    ("special", special, special_ref, lambda: (_r(3, 4),)),
    ("cp_written", cp_written, np_twin, lambda: (_r(3, 4), _r(4, 3))),
    ("block_diag", block_diag_loss, block_diag_ref, lambda: (_r(2, 3), _r(3, 2))),
]


def _strided(x, layout):
    """A CuPy view with the values of ``x`` but another memory layout."""
    g = cp.asarray(x)
    if layout == "contiguous":
        return g
    if layout == "fortran":
        return cp.asfortranarray(g)
    if layout == "transposed":
        return cp.ascontiguousarray(g.T).T
    if layout == "step":
        big = cp.zeros(tuple(2 * n for n in x.shape), x.dtype)
        v = big[tuple(slice(None, None, 2) for _ in x.shape)]
        v[...] = g
        return v
    if layout == "negative":
        return cp.ascontiguousarray(g[::-1])[::-1]
    raise ValueError(layout)


@pytest.mark.parametrize("layout", ["contiguous", "fortran", "transposed", "step", "negative"])
@pytest.mark.parametrize("name,f,ref,make", CASES, ids=[c[0] for c in CASES])
def test_gradients_match_numpy(name, f, ref, make, layout):
    args = make()
    wrt = tuple(range(len(args)))
    v_ref, g_ref = s2sad.value_and_grad(ref or f, wrt=wrt)(*args)
    gargs = [_strided(a, layout) for a in args]
    v, g = s2sad.value_and_grad(f, wrt=wrt)(*gargs)
    assert_same(v, v_ref, f"{name} value", rtol=1e-10, atol=1e-10)
    assert_same(g, g_ref, f"{name} gradients", rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("dtype", ["float32", "complex128"])
def test_dtypes(dtype):
    def f(a, b):
        xp = gam(a)
        c = xp.concatenate([a, b], axis=0)
        return xp.sum(xp.abs(xp.transpose(c) @ c) ** 2)
    a = _r(3, 4) + (1j * _r(3, 4) if dtype == "complex128" else 0)
    b = _r(2, 4) + (1j * _r(2, 4) if dtype == "complex128" else 0)
    a, b = a.astype(dtype), b.astype(dtype)
    v_ref, g_ref = s2sad.value_and_grad(f, wrt=(0, 1))(a, b)
    v, g = s2sad.value_and_grad(f, wrt=(0, 1))(cp.asarray(a), cp.asarray(b))
    tol = 1e-4 if dtype == "float32" else 1e-9
    assert_same(v, v_ref, "value", rtol=tol, atol=tol)
    assert_same(g, g_ref, "gradients", rtol=tol, atol=tol)


def test_runtime_dispatch_finds_cupy_rules():
    """CuPy's functions have rules (the run-time dispatch of a callee known only when it runs finds
    them), and ``xp = cupy.get_array_module(x)`` is resolved when the derivative is built: each
    ``xp.*`` call site is CuPy's rule, chosen then (no run-time dispatch left)."""
    from s2sad.rules import lookup
    for fn in (cp.tanh, cp.sum, cp.concatenate, cp.transpose, cp.moveaxis, cp.matmul, cp.linalg.norm,
               cupyx.scipy.special.erf, cupyx.scipy.linalg.block_diag):
        r = lookup(fn)
        assert r is not None and not r.zero, fn
    assert lookup(cp.get_array_module).zero
    d = s2sad.differentiate(ew)
    text = d.explain(cp.ones((2, 2)), cp.ones((2, 2)))
    lines = text.splitlines()
    for name in ("cupy.tanh", "cupy.exp", "cupy.sqrt", "cupy.sin", "cupy.sum"):
        # (primitive where the call carries x's derivative, inactive where it reads y only)
        assert any(f" {name} " in ln and " rule " in ln for ln in lines), (name, text)
    assert "dynamic" not in text, text


def test_vjp_cotangent_stays_on_gpu():
    def f(a, b):
        return cp.concatenate([a, b.T], axis=1)
    a, b = cp.asarray(_r(3, 2)), cp.asarray(_r(4, 3))
    value, pull = s2sad.vjp(f, a, b)
    ga, gb = pull(cp.ones_like(value))
    assert_same(ga, np.ones((3, 2)), "ga")
    assert_same(gb, np.ones((4, 3)), "gb")


def test_host_to_device_transfer_adjoint():
    """``cupy.asarray`` of a host argument: the gradient comes back to the host, as NumPy."""
    def f(x):
        return cp.sum(cp.tanh(cp.asarray(x)))
    x = _r(5)
    g = s2sad.grad(f)(x)
    assert isinstance(g, np.ndarray) and g.dtype == x.dtype
    np.testing.assert_allclose(g, 1 - np.tanh(x) ** 2, rtol=1e-10)


# -- the device guard -------------------------------------------------------------------------------
def test_guard_mixed_arguments():
    with pytest.raises(DeviceMismatchError) as e:
        s2sad.grad(ew, wrt=(0, 1))(cp.asarray(_r(2, 2)), _r(2, 2))
    msg = str(e.value)
    assert "ew got arrays on different devices" in msg
    assert "cuda:0: argument x" in msg and "cpu: argument y" in msg
    assert "Fix:" in msg and "cupy.asarray" in msg


def test_guard_in_concat_adjoint():
    def f(a, b):
        return cp.concatenate([a, b], axis=0)
    a, b = cp.asarray(_r(2, 2)), cp.asarray(_r(3, 2))
    value, pull = s2sad.vjp(f, a, b)
    with pytest.raises(DeviceMismatchError, match=r"the adjoint of concatenate got arrays on "
                                                  r"different devices \(cpu: argument cotangent"):
        pull(np.ones((5, 2)))


def test_guard_two_gpus():
    if cp.cuda.runtime.getDeviceCount() < 2:
        pytest.skip("needs two GPUs")
    a = cp.asarray(_r(2, 2))
    with cp.cuda.Device(1):
        b = cp.asarray(_r(2, 2))
    with pytest.raises(DeviceMismatchError, match=r"cuda:0: argument x; cuda:1: argument y"):
        s2sad.grad(ew, wrt=(0, 1))(a, b)


def test_gradients_on_the_second_gpu():
    """A whole gradient (concatenate and transpose adjoints included) on GPU 1, inside
    ``with cupy.cuda.Device(1)``: the same values as on NumPy, every gradient on GPU 1."""
    if cp.cuda.runtime.getDeviceCount() < 2:
        pytest.skip("needs two GPUs")
    args = (_r(3, 4), _r(3, 4))
    ref = s2sad.value_and_grad(families, wrt=(0, 1))(*args)
    with cp.cuda.Device(1):
        gargs = to_gpu(args)
        for _ in range(2):
            got = s2sad.value_and_grad(families, wrt=(0, 1))(*gargs)
            assert all(g.device.id == 1 for g in got[1])
            assert_same(got, ref, "families on GPU 1")
