"""CuPy counterparts of issue 15's new rules: ``cupyx.scipy.signal`` convolutions, the
``cupyx.scipy.linalg`` functions that SciPy's rules cover (``solve_triangular``, ``expm``,
``block_diag``) and ``cupy.linalg.eig``/``eigvals`` (CuPy 14+).  Each is differentiated on the GPU in
both modes and compared with the same function of NumPy arrays (or, where CuPy's results differ
from NumPy's by convention, with central differences of CuPy's own primal): the derivatives must be
CuPy arrays (nothing moved to the host).  Skipped without CuPy and a GPU."""
import numpy as np
import pytest
import scipy.linalg as sl
import scipy.signal as ssig

import s2sad
from gpu_helpers import GPU_OK, assert_same, cp, needs_gpu, to_gpu

pytestmark = needs_gpu

if GPU_OK:
    import cupyx.scipy.linalg as csl
    import cupyx.scipy.signal as cssig
else:
    csl = cssig = None


def _both_modes(fr, fg, args, what, rtol=1e-6, atol=1e-9):
    """Gradients (reverse) and a directional derivative (forward) of the scalar functions ``fr``
    (NumPy) and ``fg`` (CuPy) at ``args``: the same, and the GPU's on the GPU."""
    wrt = tuple(range(len(args)))
    # SciPy's rule holds for CuPy's function only where CuPy computes SciPy's function
    np.testing.assert_allclose(float(fg(*to_gpu(args))), float(fr(*args)), rtol=1e-9,
                               err_msg=f"{what}: CuPy's primal differs from SciPy's")
    ref = s2sad.grad(fr, wrt=wrt)(*args)
    got = s2sad.grad(fg, wrt=wrt)(*to_gpu(args))
    assert_same(got, ref, f"{what} (reverse)", rtol=rtol, atol=atol)
    rng = np.random.default_rng(7)
    tans = tuple(rng.standard_normal(np.shape(a)) + (1j * rng.standard_normal(np.shape(a))
                                                      if np.iscomplexobj(a) else 0) for a in args)
    _, tr = s2sad.jvp(fr, args, tans)
    _, tg = s2sad.jvp(fg, to_gpu(args), to_gpu(tans))
    assert_same(tg, tr, f"{what} (forward)", rtol=rtol, atol=atol)


def _loss(xp, y):
    w = xp.cos(xp.arange(y.size, dtype=float).reshape(y.shape))
    return (xp.abs(y) ** 2 * w).sum() if y.dtype.kind == "c" else (y * y * w).sum()


# -- cupyx.scipy.signal ----------------------------------------------------------------------------
SIGNAL_1D = [(name, mode, n1, n2, cplx)
             for name in ("convolve", "correlate", "fftconvolve", "oaconvolve")
             for mode in ("full", "same", "valid")
             for n1, n2 in ((9, 4), (4, 9))
             for cplx in (False, True)]


@pytest.mark.parametrize("name,mode,n1,n2,cplx", SIGNAL_1D)
def test_signal_1d(name, mode, n1, n2, cplx):
    if getattr(cssig, name, None) is None:
        pytest.skip(f"cupyx.scipy.signal has no {name}")
    rng = np.random.default_rng(n1 * 10 + n2)
    a, v = rng.standard_normal(n1), rng.standard_normal(n2)
    if cplx:
        a, v = a + 1j * rng.standard_normal(n1), v + 1j * rng.standard_normal(n2)

    def fr(a, v):
        return _loss(np, getattr(ssig, name)(a, v, mode=mode))

    def fg(a, v):
        return _loss(cp, getattr(cssig, name)(a, v, mode=mode))
    _both_modes(fr, fg, (a, v), f"{name} {mode} {n1}x{n2}")


@pytest.mark.parametrize("name", ["convolve2d", "correlate2d", "fftconvolve"])   # (CuPy's
# convolve/correlate take 1-d arrays only)
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("shapes", [((6, 5), (3, 2)), ((3, 2), (6, 5))])
def test_signal_2d(name, mode, shapes):
    rng = np.random.default_rng(3)
    a, v = rng.standard_normal(shapes[0]), rng.standard_normal(shapes[1])

    def fr(a, v):
        return _loss(np, getattr(ssig, name)(a, v, mode=mode))

    def fg(a, v):
        return _loss(cp, getattr(cssig, name)(a, v, mode=mode))
    _both_modes(fr, fg, (a, v), f"{name} {mode} {shapes}")


def test_signal_refusals_on_gpu():
    """boundary='wrap' changes the map: refused on CuPy as on NumPy."""
    def f(a, v):
        return cssig.convolve2d(a, v, boundary="wrap").sum()
    with pytest.raises(s2sad.S2SADError, match="boundary"):
        s2sad.grad(f)(cp.ones((4, 4)), cp.ones((2, 2)))


# -- cupyx.scipy.linalg ----------------------------------------------------------------------------
@pytest.mark.parametrize("trans", [0, 1, 2])
@pytest.mark.parametrize("lower", [False, True])
@pytest.mark.parametrize("bshape", [(4,), (4, 3), (2, 4, 3)])
def test_solve_triangular(trans, lower, bshape):
    rng = np.random.default_rng(trans + 3 * lower)
    batch = bshape[:-2] if len(bshape) == 3 else ()
    a = rng.standard_normal(batch + (4, 4)) + 4 * np.eye(4)
    b = rng.standard_normal(bshape)

    def fr(a, b):
        return _loss(np, sl.solve_triangular(a, b, trans=trans, lower=lower))

    def fg(a, b):
        return _loss(cp, csl.solve_triangular(a, b, trans=trans, lower=lower))
    _both_modes(fr, fg, (a, b), f"solve_triangular trans={trans} lower={lower} b{bshape}")


def test_solve_triangular_unit_diagonal_complex():
    rng = np.random.default_rng(5)
    a = rng.standard_normal((4, 4)) + 1j * rng.standard_normal((4, 4))
    b = rng.standard_normal((4, 2)) + 1j * rng.standard_normal((4, 2))

    def fr(a, b):
        return _loss(np, sl.solve_triangular(a, b, trans=2, unit_diagonal=True))

    def fg(a, b):
        return _loss(cp, csl.solve_triangular(a, b, trans=2, unit_diagonal=True))
    _both_modes(fr, fg, (a, b), "solve_triangular unit_diagonal complex")


@pytest.mark.parametrize("cplx", [False, True])
def test_expm(cplx):
    rng = np.random.default_rng(11)
    a = 0.5 * rng.standard_normal((4, 4))
    if cplx:
        a = a + 0.5j * rng.standard_normal((4, 4))

    def fr(a):
        return _loss(np, sl.expm(a))

    def fg(a):
        return _loss(cp, csl.expm(a))

    def fg_keyword(a):
        return _loss(cp, csl.expm(a=a))              # CuPy's keyword (SciPy's is A=)
    _both_modes(fr, fg, (a,), "expm")
    _both_modes(fr, fg_keyword, (a,), "expm(a=)")


def test_block_diag():
    rng = np.random.default_rng(2)
    args = (rng.standard_normal((2, 2)), rng.standard_normal((1, 3)))

    def fr(x, y):
        return _loss(np, sl.block_diag(x, y))

    def fg(x, y):
        return _loss(cp, csl.block_diag(x, y))
    _both_modes(fr, fg, args, "block_diag")


# -- cupy.linalg.eig / eigvals ---------------------------------------------------------------------
def _needs_eig():
    if getattr(cp.linalg, "eig", None) is None:
        pytest.skip("this CuPy has no cupy.linalg.eig")
    try:
        cp.linalg.eig(cp.eye(2))
    except Exception as e:   # noqa: BLE001  (geev needs CUDA 12.6+)
        pytest.skip(f"cupy.linalg.eig does not run here: {e}")


def _matrix(kind, rng):
    if kind == "real-eigenvalues":         # distinct real eigenvalues, not symmetric
        q = rng.standard_normal((4, 4))
        return q @ np.diag([1.0, 2.0, 3.5, -1.5]) @ np.linalg.inv(q)
    return rng.standard_normal((4, 4))      # complex-conjugate pairs, almost surely


@pytest.mark.parametrize("kind", ["real-eigenvalues", "general"])
def test_eigvals(kind):
    """Order-free function of the eigenvalues (CuPy's order may differ from NumPy's)."""
    _needs_eig()
    a = _matrix(kind, np.random.default_rng(4))

    def fr(a):
        w = np.linalg.eigvals(a)
        return (np.abs(w) ** 3).sum() + (w * w).real.sum()

    def fg(a):
        w = cp.linalg.eigvals(a)
        return (cp.abs(w) ** 3).sum() + (w * w).real.sum()
    _both_modes(fr, fg, (a,), f"eigvals {kind}", rtol=1e-5)


@pytest.mark.parametrize("kind", ["real-eigenvalues", "general"])
def test_eig_gauge_free(kind):
    """A function of eig's results that neither the eigenvalues' order nor the eigenvectors'
    phases change: the same as NumPy's (whose eigenvectors are real where CuPy's are complex)."""
    _needs_eig()
    a = _matrix(kind, np.random.default_rng(6))

    def make(xp):
        def f(a):
            w, v = xp.linalg.eig(a)
            return (w.real * xp.abs(v[0]) ** 2 + w.imag * xp.abs(v[1]) ** 2).sum()
        return f
    _both_modes(make(np), make(cp), (a,), f"eig {kind}", rtol=1e-5)


def test_eig_vectors_against_central_differences():
    """The eigenvectors themselves (their phase convention: unit norm, largest component real, as
    LAPACK's): s2sad's derivative on the GPU against central differences of CuPy's eig."""
    _needs_eig()
    rng = np.random.default_rng(8)
    a = cp.asarray(_matrix("general", rng))
    wv = cp.asarray(rng.standard_normal((4, 4)))

    def f(a):
        w, v = cp.linalg.eig(a)
        order = cp.argsort(w.real * 1000 + w.imag)          # an order the perturbation keeps
        v = v[:, order]
        return (v.real * wv).sum() + (v.imag * wv.T).sum()
    g = s2sad.grad(f)(a)
    assert type(g).__module__.startswith("cupy")
    d = cp.asarray(rng.standard_normal((4, 4)))
    eps = 1e-6
    fd = (float(f(a + eps * d)) - float(f(a - eps * d))) / (2 * eps)
    np.testing.assert_allclose(float((g * d).sum()), fd, rtol=1e-5, atol=1e-8)
    _, tan = s2sad.jvp(f, (a,), (d,))
    np.testing.assert_allclose(float(tan), fd, rtol=1e-5, atol=1e-8)


def test_counterparts_are_mapped():
    from s2sad.rules.registry import lookup
    for name in ("convolve", "correlate", "fftconvolve", "oaconvolve", "convolve2d",
                 "correlate2d"):
        if getattr(cssig, name, None) is not None:
            assert lookup(getattr(cssig, name)).name == f"cupyx.scipy.signal.{name}"
    for name in ("solve_triangular", "expm", "block_diag"):
        assert lookup(getattr(csl, name)).name == f"cupyx.scipy.linalg.{name}"
    assert lookup(csl.expm).public_name("A") == "a"
