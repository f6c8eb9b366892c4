"""The LAPACK-level NumPy paths of the Cholesky and triangular-solve adjoints (issue 12, gp_lml):
``cholesky``'s adjoint by trmm and two trsm below n = 64, from there Murray's blocked sweep on
trtri-inverted diagonal blocks and products,
``solve_triangular``'s by trtrs without SciPy's checks (a C-ordered real matrix passed as its
transpose) and a selected triangle, and the matrix ``diagonal`` / 1-D ``a @ b`` shortcuts.  Each
against the general formula it replaces (dense inverses), in float64, float32 and complex, lower
and upper, C and F order, sizes on both sides of the cached-mask limit (512), and end to end
through ``check_grads``."""
import math

import numpy as np
import pytest

sl = pytest.importorskip("scipy.linalg")

from s2sad.rules.numpy import linalg as nl  # noqa: E402
from s2sad.rules.numpy import products  # noqa: E402
from s2sad.rules.scipy import linalg as scl  # noqa: E402
from s2sad.testing import check_grads  # noqa: E402


def _spd(rng, n, dtype):
    x = rng.standard_normal((n, n))
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal((n, n))
    return (x @ np.conj(x.T) + n * np.eye(n)).astype(dtype)


def _cholesky_reference(gL, L, upper):
    """The gradient w.r.t. ``a`` of np.linalg.cholesky(a) from dense inverses: with
    S = L^-H Phi(L^H gL) L^-1 (Phi: lower triangle, diagonal halved), the read triangle of
    S + S^H with its diagonal halved."""
    Li = np.linalg.inv(L)
    P = np.tril(np.conj(L.T) @ np.tril(gL))
    P[np.diag_indices_from(P)] *= 0.5
    S = np.conj(Li.T) @ P @ Li
    R = S + np.conj(S.T)
    r = np.tril(R)
    r[np.diag_indices_from(r)] = 0.5 * np.real(np.diag(R))
    return np.conj(r.T) if upper else r


@pytest.mark.parametrize("n", [1, 2, 7, 63, 64, 65, 97, 112, 200, 383, 384, 600])
@pytest.mark.parametrize("dtype", ["float64", "complex128"])
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_adjoint_matches_dense_formula(n, dtype, upper):
    """n < 64: the symbolic formula; from 64: the blocked sweep with inverted diagonal blocks
    (blocks of 32, 48 from n = 112, 64 from 384: 65 leaves a block of 1, 97 one of 1, 200 one of
    8, 600 one of 24), whose diagonal blocks use the symbolic formula."""
    rng = np.random.default_rng(n)
    a = _spd(rng, n, dtype)
    ans = np.linalg.cholesky(a, upper=upper)
    g = rng.standard_normal((n, n)).astype(dtype)
    if dtype.startswith("complex"):
        g = g + 1j * rng.standard_normal((n, n))
    got = nl.cholesky(g, ans, a, upper)
    L = np.conj(ans.T) if upper else ans
    gL = np.conj(g.T) if upper else g
    want = _cholesky_reference(gL, L, upper)
    assert got.dtype == a.dtype and got.shape == a.shape
    scale = np.abs(want).max()
    assert np.abs(got - want).max() <= 1e-10 * n * scale
    # the triangle LAPACK does not read gets nothing
    off = np.tril(got, -1) if upper else np.triu(got, 1)
    assert not off.any()
    if dtype.startswith("complex"):
        assert not np.imag(np.diag(got)).any()


def test_cholesky_adjoint_large_blocks():
    """From n = 768 the blocks are 128 wide (the last one 32 here)."""
    rng = np.random.default_rng(5)
    a = _spd(rng, 800, "float64")
    L = np.linalg.cholesky(a)
    g = rng.standard_normal((800, 800))
    want = _cholesky_reference(g, L, False)
    got = nl.cholesky(g, L, a)
    assert np.abs(got - want).max() <= 1e-9 * np.abs(want).max()
    np.testing.assert_allclose(nl._cholesky_symbolic(sl, g, L), want, rtol=0,
                               atol=1e-9 * np.abs(want).max())


def _cholesky_extended(gL, L):
    """The dense formula of :func:`_cholesky_reference` in np.longdouble, L inverted row by row
    (forward substitution): a reference with more digits than float64 (x86: 64-bit mantissa)."""
    Le, ge = L.astype(np.longdouble), np.tril(gL).astype(np.longdouble)
    n = L.shape[0]
    Li = np.zeros((n, n), np.longdouble)
    eye = np.eye(n, dtype=np.longdouble)
    for i in range(n):
        Li[i] = (eye[i] - Le[i, :i] @ Li[:i]) / Le[i, i]
    P = np.tril(Le.T @ ge)
    P[np.diag_indices(n)] *= 0.5
    S = Li.T @ P @ Li
    R = S + S.T
    r = np.tril(R)
    r[np.diag_indices(n)] *= 0.5
    return r


@pytest.mark.skipif(np.finfo(np.longdouble).eps >= 1e-17, reason="long double is double here")
@pytest.mark.parametrize("jitter", [1e-4, 1e-7, 1e-9])
def test_cholesky_adjoint_blocked_sweep_accuracy(jitter):
    """On ill-conditioned squared-exponential kernels (cond(L) 8e2, 3e4, 3e5) the blocked sweep's
    error against an extended-precision reference stays far inside the adjoint's own condition,
    cond(L)^2 eps (measured: 0.3-0.6% of it; the sweep with triangular solves in its blocks, of
    before, was as far: 8e-13, 9.5e-9, 1.5e-7 against 8.6e-13, 3.9e-10, 7.9e-8 now).  The
    whole-matrix symbolic formula, used below n = 64, is closer still (2.6e-14, 2.1e-13, 1.4e-12):
    the blocks' updates, not the inverted blocks, cost the digits.  The BLAS's own blocking moves
    it: on the H200 host, 15 test processes beside each other (each BLAS on several threads), the
    blocked sweep at 1e-9 was 9.9e-7, 6.7% of the condition; the bound here is a quarter of it."""
    n = 128
    x = np.linspace(0.0, 4.0, n)
    a = np.exp(-0.5 * (x[:, None] - x[None, :]) ** 2) + jitter * np.eye(n)
    L = np.linalg.cholesky(a)
    gL = np.tril(np.random.default_rng(9).standard_normal((n, n)))
    ref = _cholesky_extended(gL, L)
    scale = float(np.abs(ref).max())
    err_blocked = float(np.abs(nl.cholesky(gL, L, a) - ref).max()) / scale
    err_solves = float(np.abs(nl._cholesky_symbolic(sl, gL, L) - ref).max()) / scale
    bound = np.linalg.cond(L) ** 2 * np.finfo(float).eps
    assert err_solves <= 0.05 * bound
    assert err_blocked <= 0.25 * bound


def test_cholesky_adjoint_general_path_agrees(monkeypatch):
    """Without SciPy the rule takes its dense general path; both give the same numbers."""
    rng = np.random.default_rng(3)
    a = _spd(rng, 100, "float64")
    ans = np.linalg.cholesky(a)
    g = rng.standard_normal((100, 100))
    fast = nl.cholesky(g, ans, a)
    monkeypatch.setattr(nl, "_scipy_lapack", lambda: None)
    slow = nl.cholesky(g, ans, a)
    np.testing.assert_allclose(fast, slow, rtol=1e-11, atol=1e-13)


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("n", [20, 100])
def test_cholesky_adjoint_float32_and_layouts(order, n):
    rng = np.random.default_rng(1)
    a = _spd(rng, n, "float32")
    ans = np.asarray(np.linalg.cholesky(a), order=order)
    g = np.asarray(rng.standard_normal((n, n)).astype(np.float32), order=order)
    got = nl.cholesky(g, ans, a)
    want = _cholesky_reference(g.astype(np.float64), ans.astype(np.float64), False)
    assert got.dtype == np.float32 and got.shape == (n, n)
    np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-3 * np.abs(want).max())


@pytest.mark.parametrize("n", [80, 100])
def test_cholesky_adjoint_ignores_unread_triangle_of_cotangent(n):
    """gL's upper triangle multiplies the constant zeros of L: it changes nothing.  (A nonfinite
    value there gives nan, as the earlier gemm-based rule and other AD tools do: 0 * inf.)"""
    rng = np.random.default_rng(2)
    a = _spd(rng, n, "float64")
    L = np.linalg.cholesky(a)
    g = rng.standard_normal((n, n))
    g_big = g + 1e3 * np.triu(rng.standard_normal((n, n)), 1)
    np.testing.assert_allclose(nl.cholesky(g_big, L, a), nl.cholesky(np.tril(g), L, a),
                               rtol=1e-9, atol=1e-9)


def _solve_tri_reference(g, ans, a, b, trans, lower, unit):
    """Adjoints of solve_triangular from a dense inverse of op(A)."""
    A = np.tril(a) if lower else np.triu(a)
    if unit:
        A = A - np.diag(np.diag(A)) + np.eye(len(A))
    op = {0: A, 1: A.T, 2: np.conj(A.T)}[trans]
    gb = np.linalg.solve(np.conj(op.T), g)
    X = ans if ans.ndim == 2 else ans[:, None]
    G = gb if gb.ndim == 2 else gb[:, None]
    gop = -G @ np.conj(X.T)
    ga = {0: gop, 1: gop.T, 2: np.conj(gop.T)}[trans]
    ga = np.tril(ga) if lower else np.triu(ga)
    if unit:
        ga = ga - np.diag(np.diag(ga))
    return ga, gb


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("trans", [0, 1, 2])
@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("bshape", [(6,), (6, 3)])
@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_solve_triangular_adjoint_layouts(order, trans, lower, bshape, dtype):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((6, 6)) + 4 * np.eye(6)
    b = rng.standard_normal(bshape)
    g = rng.standard_normal(bshape)
    if dtype.startswith("complex"):
        a = a + 1j * rng.standard_normal((6, 6))
        b = b + 1j * rng.standard_normal(bshape)
        g = g + 1j * rng.standard_normal(bshape)
    a = np.asarray(a, order=order)
    for unit in (False, True):
        ans = sl.solve_triangular(a, b, trans=trans, lower=lower, unit_diagonal=unit)
        ga, gb = scl.solve_triangular(g, ans, a, b, trans, lower, unit)
        want_a, want_b = _solve_tri_reference(g, ans, a, b, trans, lower, unit)
        np.testing.assert_allclose(ga, want_a, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(gb, want_b, rtol=1e-12, atol=1e-12)
        assert ga.dtype == a.dtype and gb.shape == b.shape


def test_trtrs_singular_goes_to_scipy():
    a = np.tril(np.ones((3, 3)))
    a[1, 1] = 0.0
    with pytest.raises(np.linalg.LinAlgError):
        scl._trtrs(a, np.ones((3, 1)), trans=2, lower=True)


def test_triangle_selects():
    x = np.arange(16.0).reshape(4, 4)
    x[0, 3] = np.inf
    np.testing.assert_array_equal(nl.triangle(x, True), np.tril(x))
    r = nl.triangle(x, False, 0.5)
    want = np.triu(x)
    want[np.diag_indices(4)] *= 0.5
    np.testing.assert_array_equal(r, want)
    np.testing.assert_array_equal(nl.triangle(x.T, True, 0.0), np.tril(x.T, -1))
    assert nl.triangle(x, True).flags.writeable


@pytest.mark.parametrize("n", [3, 600])
def test_outer_triangle(n):
    rng = np.random.default_rng(n)
    u = rng.standard_normal(n) + 1j * rng.standard_normal(n)
    v = rng.standard_normal(n)
    full = np.multiply.outer(u, v)
    np.testing.assert_array_equal(nl.outer_triangle(u, v, True), np.tril(full))
    np.testing.assert_array_equal(nl.outer_triangle(u, v, False, 0.0), np.triu(full, 1))
    assert nl.outer_triangle(v, v).dtype == np.float64


@pytest.mark.parametrize("offset", [-2, 0, 1])
def test_diagonal_adjoint_matrix_axes_swapped(offset):
    a = np.arange(20.0).reshape(4, 5)
    for ax1, ax2 in ((0, 1), (1, 0), (-1, -2)):
        d = np.diagonal(a, offset, ax1, ax2)
        g = np.arange(1.0, d.size + 1)
        got = products.diagonal(g, a, offset, ax1, ax2)
        # the adjoint of a linear map: <g, diag(a)> = <got, a> for every a
        for seed in range(3):
            t = np.random.default_rng(seed).standard_normal(a.shape)
            assert math.isclose(np.vdot(got, t), np.vdot(g, np.diagonal(t, offset, ax1, ax2)),
                                rel_tol=1e-12, abs_tol=1e-12)


def test_vector_dot_adjoint_keeps_dtype():
    a = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    b = np.array([4.0, 5.0, 6.0], dtype=np.float32)
    ga = products.matmul(2.0, a, b, 0)
    gb = products.matmul(np.float64(2.0), a, b, 1)
    assert ga.dtype == np.float32 and gb.dtype == np.float32
    np.testing.assert_array_equal(ga, 2 * b)
    np.testing.assert_array_equal(gb, 2 * a)


def gp_lml(x, y, s):
    d = x[:, None] - x[None, :]
    K = np.exp(-0.5 * d ** 2)
    L = np.linalg.cholesky(K + s * np.eye(len(x)))
    alpha = sl.solve_triangular(L, y, lower=True)
    return (-0.5 * (alpha @ alpha) - np.sum(np.log(np.diag(L)))
            - 0.5 * len(x) * math.log(2 * math.pi))


@pytest.mark.parametrize("n", [16, 70, 130])
def test_gp_lml_end_to_end(n):
    """Against finite differences: the symbolic formula (16), the blocked sweep with blocks of
    32 (70: 32, 32, 6) and of 48 (130: 48, 48, 34)."""
    rng = np.random.default_rng(0)
    x = np.sort(rng.uniform(-3, 3, n))
    y = rng.standard_normal(n)
    check_grads(gp_lml, (x, y, 0.7), rtol=1e-5)


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("dtype", ["float64", "float32", "complex128"])
def test_keep_lower_in_place(order, dtype):
    """_keep_lower: one product with cached weights, and a select where the dropped triangle
    held an inf or nan (0 * inf is nan: it must not stay)."""
    rng = np.random.default_rng(4)
    x = np.asarray(rng.standard_normal((6, 6)), dtype=dtype, order=order)
    want = np.tril(x)
    want[np.diag_indices(6)] *= 0.5
    y = x.copy(order=order)
    assert nl._keep_lower(y, 0.5) is y
    np.testing.assert_array_equal(y, want)
    x[0, 5], x[1, 3] = np.inf, np.nan
    nl._keep_lower(x, 0.5)
    np.testing.assert_array_equal(x, want)
    assert x.dtype == np.dtype(dtype)


@pytest.mark.parametrize("n", [40, 100, 200, 400])
def test_cholesky_adjoint_nonfinite_unread_triangle(n):
    """An inf or nan in the cotangent's strict upper triangle reaches nothing: the symbolic path
    (n < 64) cuts the cotangent to its lower triangle before trmm (an optimised trmm may multiply
    the zeros of L's other triangle by it: 0 * inf), and the blocked sweep (n >= 64) each
    diagonal block's before its product, at these positions (an off-diagonal block, and inside
    the diagonal blocks of the first and last steps)."""
    rng = np.random.default_rng(6)
    a = _spd(rng, n, "float64")
    L = np.linalg.cholesky(a)
    g = np.tril(rng.standard_normal((n, n)))
    want = nl.cholesky(g, L, a)
    g[0, n - 1], g[2, 5], g[n - 20, n - 10] = np.inf, np.nan, np.nan   # (the last: inside the
    got = nl.cholesky(g, L, a)                                         # blocked sweep's first block)
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * np.abs(want).max())
    np.testing.assert_allclose(want, _cholesky_reference(np.tril(g), L, False), rtol=0,
                               atol=1e-10 * np.abs(want).max())
