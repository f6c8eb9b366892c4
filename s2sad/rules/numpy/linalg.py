"""``np.linalg``: inverses and solves, determinants, decompositions (Cholesky, eigh, QR, SVD),
``pinv``, ``lstsq``, ``matrix_power``, ``multi_dot``, and the norms.
"""
import functools

import numpy as np

from ... import runtime as _rt
from ...errors import RuleError
from ..adjoints import (A, _each, _flag, _inverse, _mH, _mT, _np, asarray, cj, expand, export,
                        is_zero, like, norm_axes, shape, tangent_list, xp)
from ..registry import defrule

# -- np.linalg -------------------------------------------------------------------------------------
defrule(np.linalg.inv, "a", vjp={"a": "_adj.inv(g, ans)"},
        jvp={"a": "-(ans @ t @ ans)"}, ns=A)
defrule(np.linalg.det, "a", vjp={"a": "_adj.det(g, ans, a)"},
        jvp={"a": "_adj.det_tangent(t, ans, a)"}, ns=A)
defrule(np.linalg.slogdet, "a", vjp={"a": "_adj.slogdet(g, ans, a)"},
        jvp={"a": "_adj.slogdet_tangent(t, ans, a)"}, kind="any", ns=A)
defrule(np.linalg.solve, "a, b", joint=(("a", "b"), "_adj.solve(g, ans, a, b)"),
        jvp={"a": "-np.linalg.solve(a, t @ ans) if np.ndim(b) != 1 "
                  "else -np.linalg.solve(a, (t @ ans[..., None]))[..., 0]",
             "b": "np.linalg.solve(a, t)"}, ns=A)
defrule(np.linalg.cholesky, "a, /, *, upper=False", vjp={"a": "_adj.cholesky(g, ans, a, upper)"},
        ns=A)
defrule(np.linalg.eigh, "a, UPLO='L'", vjp={"a": "_adj.eigh(g, ans, a, UPLO)"}, kind="any", ns=A)
defrule(np.linalg.eigvalsh, "a, UPLO='L'", vjp={"a": "_adj.eigvalsh(g, ans, a, UPLO)"}, ns=A)
defrule(np.linalg.eig, "a", vjp={"a": "_adj.eig(g, ans, a)"}, jvp={"a": "_adj.eig_tangent(t, ans, a)"},
        kind="any", ns=A)
defrule(np.linalg.eigvals, "a", vjp={"a": "_adj.eigvals(g, ans, a)"},
        jvp={"a": "_adj.eigvals_tangent(t, ans, a)"}, ns=A)
defrule(np.linalg.qr, "a, mode='reduced'", vjp={"a": "_adj.qr(g, ans, a, mode)"}, kind="any",
        ns=A)
defrule(np.linalg.svd, "a, full_matrices=True, compute_uv=True, hermitian=False",
        vjp={"a": "_adj.svd(g, ans, a, full_matrices, compute_uv, hermitian)"}, kind="any", ns=A)
_each(_np("linalg.svdvals"), "x, /", vjp={"x": "_adj.svd(g, ans, x, False, False)"}, ns=A)
defrule(np.linalg.pinv, "a, rcond=None, hermitian=False, *, rtol=None",
        vjp={"a": "_adj.pinv(g, ans, a, hermitian)"},
        jvp={"a": "_adj.pinv_tangent(t, ans, a, hermitian)"}, ns=A)
defrule(np.linalg.lstsq, "a, b, rcond=None", joint=(("a", "b"), "_adj.lstsq(g, ans, a, b, rcond)"),
        jvp={"a": "_adj.lstsq_tangent(t, ans, a, b, 'a')", "b": "_adj.lstsq_tangent(t, ans, a, b, 'b')"},
        kind="any", ns=A)
defrule(np.linalg.matrix_power, "a, n", vjp={"a": "_adj.matrix_power(g, a, n)"},
        jvp={"a": "_adj.matrix_power_tangent(t, a, n)"}, ns=A)
defrule(np.linalg.multi_dot, "arrays, *, out=None", vjp={"arrays": "_adj.multi_dot(g, arrays)"},
        jvp={"arrays": "_adj.multi_dot_tangent(t, arrays, ans)"}, forbid={"out": None}, ns=A)

# -- norms -----------------------------------------------------------------------------------------
_each(_np("linalg.norm"), "x, ord=None, axis=None, keepdims=False",
      vjp={"x": "_adj.norm(g, ans, x, ord, axis, keepdims)"},
      jvp={"x": "_adj.norm_tangent(t, ans, x, ord, axis, keepdims)"}, ns=A)
_each(_np("linalg.vector_norm"), "x, /, *, axis=None, keepdims=False, ord=2",
      vjp={"x": "_adj.vector_norm(g, ans, x, axis, keepdims, ord)"},
      jvp={"x": "_adj.norm_tangent(t, ans, x, ord, axis, keepdims, vector=True)"}, ns=A)
_each(_np("linalg.matrix_norm"), "x, /, *, keepdims=False, ord='fro'",
      vjp={"x": "_adj.norm(g, ans, x, ord, (-2, -1), keepdims)"},
      jvp={"x": "_adj.norm_tangent(t, ans, x, ord, (-2, -1), keepdims)"}, ns=A)


# -- helpers the templates call --------------------------------------------------------------------
def inv(g, ans):
    """Adjoint of ``inv``: -A^-H g A^-H."""
    h = _mH(ans)
    return -(h @ g @ h)


def det(g, ans, a):
    """Adjoint of ``det``: g adj(a)^H (adj(a) = det(a) a^-1 where a is invertible; at a singular
    matrix, where inv raises, :func:`adjugate`'s SVD form: the gradient is finite there)."""
    m = xp(a)
    try:
        ai = m.linalg.inv(a)
    except np.linalg.LinAlgError:
        return like(m.asarray(g)[..., None, None] * _mH(adjugate(a)), a)
    ge = m.asarray(g * cj(ans))[..., None, None]
    return like(ge * _mH(ai), a)


def det_tangent(t, ans, a):
    """Tangent of ``det``: det(a) tr(a^-1 t), or tr(adj(a) t) at a singular matrix."""
    m = xp(a, t)
    try:
        return ans * m.trace(m.linalg.solve(a, t), axis1=-2, axis2=-1)
    except np.linalg.LinAlgError:
        return m.trace(adjugate(a) @ t, axis1=-2, axis2=-1)


def adjugate(a):
    """adj(a), the transpose of the cofactor matrix (det(a) a^-1 for an invertible a), of any
    square matrix (a stack of them): with a = U diag(s) V^H, adj(a) = det(U) det(V^H) V diag(c)
    U^H, c_i the product of the singular values other than s_i (prefix and suffix products: no
    division, so a zero singular value is no trouble)."""
    m = xp(a)
    u, sv, vh = m.linalg.svd(a)
    one = m.ones(sv.shape[:-1] + (1,), sv.dtype)
    before = m.cumprod(m.concatenate([one, sv[..., :-1]], axis=-1), axis=-1)
    after = m.flip(m.cumprod(m.concatenate([one, m.flip(sv, -1)[..., :-1]], axis=-1), axis=-1),
                   -1)
    c = (before * after).astype(u.dtype)
    scale = (m.linalg.det(u) * m.linalg.det(vh))[..., None, None]
    return scale * ((_mH(vh) * c[..., None, :]) @ _mH(u))


def slogdet(g, ans, a):
    """Adjoint of ``slogdet``: g is (g_sign, g_logabsdet)."""
    m = xp(a)
    sign, logdet = ans
    gs, gl = (g if isinstance(g, (tuple, list)) else (None, g))
    ai_h = _mH(m.linalg.inv(a))
    r = 0.0
    if not is_zero(gl):
        r = m.asarray(gl)[..., None, None] * ai_h
    if not is_zero(gs) and a.dtype.kind == "c":
        c = -(cj(gs) * sign).imag
        r = r + (1j * m.asarray(c))[..., None, None] * ai_h
    if type(r) is float:
        return m.zeros_like(a)
    return like(r, a)


def _solve_parts(grad, out, a, b):
    """(m, a_, b_, vec, G, X, gb): :func:`solve`'s operands as matrices and its gb = a^-H G
    before it is summed onto b's shape."""
    m = xp(a, b)
    a_ = asarray(a)
    b_ = asarray(b, like=a_)
    vec = b_.ndim == 1
    G, X = m.asarray(grad), m.asarray(out)
    if vec:
        G, X = G[..., None], X[..., None]
    return m, a_, b_, vec, G, X, m.linalg.solve(_mH(a_), G)


def solve(g, ans, a, b):
    """Adjoints of ``solve(a, b)`` (both at once): gb = A^-H g, ga = -gb x^H."""
    m, a_, b_, vec, G, X, gb = _solve_parts(g, ans, a, b)
    ga = -(gb @ _mH(X))
    ga = _rt.unbroadcast(ga, a_)
    gb = gb[..., 0] if vec else _rt.unbroadcast(gb, b_)
    return like(ga, a), like(gb, b)


def _phi(x):
    """Lower triangle with the diagonal halved."""
    m = xp(x)
    return m.tril(x, -1) + 0.5 * m.tril(m.triu(x))


def cholesky(g, ans, a, upper=False):
    """Adjoint of ``cholesky`` (A = L L^H), for the function as LAPACK computes it: only the lower
    (or, with upper=True, the upper) triangle of ``a`` is read."""
    m = xp(a)
    L = _mH(ans) if upper else ans
    gL = _mH(m.asarray(g)) if upper else m.asarray(g)
    if m is np and L.ndim == 2 and gL.shape == L.shape and L.shape[-1] > 0:
        sl = _scipy_lapack()
        if sl is not None:
            return like(_cholesky_lapack(sl, gL, L, upper), a)
    P = _phi(_mH(L) @ gL)
    # S = L^-H P L^-1
    n = L.shape[-1]
    eye = m.eye(n, dtype=L.dtype)
    Linv = _solve_tri(L, eye, lower=True)
    S = _mH(Linv) @ P @ Linv
    S = 0.5 * (S + _mH(S))                  # the gradient w.r.t. a Hermitian A
    return like(_from_hermitian(S, "U" if upper else "L"), a)


def _scipy_lapack():
    try:
        import scipy.linalg as sl
    except ImportError:
        return None
    return sl


@functools.lru_cache(maxsize=16)
def _tri_mask_cached(n):
    w = np.tri(n, dtype=bool)
    w.flags.writeable = False
    return w


def triangle(x, lower=True, diag=1.0):
    """The lower (or upper) triangle of the NumPy matrix ``x`` as a new array, its diagonal
    multiplied by ``diag``; a select, as np.tril/np.triu do (an inf or nan off the triangle
    gives 0, not nan), with the boolean mask cached for n <= 512 (np.tri costs as much as the
    select at n = 128)."""
    n = x.shape[-1]
    w = _tri_mask_cached(n) if n <= 512 else np.tri(n, dtype=bool)
    r = np.where(w if lower else w.T, x, 0)
    if diag != 1.0:
        r.flat[::n + 1] *= diag
    return r


def outer_triangle(u, v, lower=True, diag=1.0):
    """``triangle(np.multiply.outer(u, v), lower, diag)`` for NumPy vectors of one length,
    without computing the other triangle."""
    n = u.shape[0]
    w = _tri_mask_cached(n) if n <= 512 else np.tri(n, dtype=bool)
    r = np.zeros((n, n), np.result_type(u, v))
    np.multiply.outer(u, v, out=r, where=w if lower else w.T)
    if diag != 1.0:
        r.flat[::n + 1] *= diag
    return r


def _cholesky_symbolic(sl, gL, L):
    """The NumPy 2-D Cholesky adjoint of a lower L by the symbolic formula (Murray 2016,
    "Differentiation of the Cholesky decomposition"): the gradient w.r.t. the Hermitian A is
    (S + S^H) / 2 with S = L^-H Phi(L^H gL) L^-1, Phi the lower triangle with its diagonal halved.
    LAPACK reads one triangle of ``a``, which gets twice the off-diagonal part of (S + S^H) / 2:
    the lower triangle of S + S^H with its diagonal halved (see :func:`_symbolic_full`)."""
    trmm, trsm = sl.get_blas_funcs(("trmm", "trsm"), (L, gL))
    # gL's lower triangle only: an optimised trmm may multiply the zeros of L's other triangle
    # by gL's upper triangle (0 * inf = nan, seen with OpenBLAS on an AMD core)
    X = _symbolic_full(trmm, trsm, np.asfortranarray(L, dtype=trmm.dtype), triangle(gL))
    _keep_lower(X, 0.5)
    return X


def _symbolic_full(trmm, trsm, Lf, gL):
    """S + S^H (S = L^-H Phi(L^H gL) L^-1) as a new Fortran-ordered matrix, for ``Lf`` the lower
    factor in Fortran order (no copy by the BLAS wrappers) and BLAS routines of its dtype.

    - L^H gL by trmm (L triangular): its lower triangle reads only the lower triangle of gL (the
      upper triangle of L is a constant zero), so gL's upper triangle may hold anything: Phi
      (:func:`_keep_lower`, in place) clears the other triangle, an inf or nan there included.
    - S^H = L^-H (L^-H Phi)^H by two left triangular solves (trsm) in place.
    (One sygst call instead of the two solves has half their flops but ran slower up to n = 256
    on one core: its diagonal blocks are level-2 code.)"""
    M = trmm(1.0, Lf, gL, lower=1, trans_a=2)
    _keep_lower(M, 0.5)                                               # Phi(L^H gL)
    M = trsm(1.0, Lf, M, lower=1, trans_a=2, overwrite_b=1)           # Y = L^-H Phi
    # S^H = L^-H Y^H: a left solve again (the right-side trsm ran ~15% slower at n = 64-128)
    Z = trsm(1.0, Lf, _mH(M), lower=1, trans_a=2, overwrite_b=1)
    return np.add(Z, _mH(Z), out=Z)             # (NumPy buffers the overlapping operand)


@functools.lru_cache(maxsize=32)
def _strict_mask_cached(n, upper):
    """The C-ordered boolean mask of the strict upper (or lower) triangle of an n x n matrix."""
    w = np.tri(n, k=-1, dtype=bool)
    w = np.ascontiguousarray(w.T) if upper else w
    w.flags.writeable = False
    return w


@functools.lru_cache(maxsize=32)
def _weights_cached(n, upper, diag, dtype):
    """C-ordered n x n weights: 0 on the strict upper (or lower) triangle, ``diag`` on the
    diagonal, 1 elsewhere."""
    w = np.ones((n, n), dtype)
    w[_strict_mask_cached(n, upper)] = 0
    w.reshape(-1)[::n + 1] = diag
    w.flags.writeable = False
    return w


def _keep_lower(x, diag=1.0):
    """In place: the NumPy float or complex matrix ``x`` (C or Fortran contiguous) keeps its
    lower triangle, its strict upper triangle set to 0 and its diagonal multiplied by ``diag``.
    One product with cached weights, walked in ``x``'s own memory order, where ``x`` is finite
    (its sum is); else a select, so that an inf or nan in the dropped triangle reaches nothing."""
    n = x.shape[-1]
    if x.flags.c_contiguous:
        v, upper = x, True                   # x's strict upper triangle, row by row
    else:
        v, upper = x.T, False                # the same elements: the strict lower of x^T
    if n > 512:
        w = np.ones((n, n), x.dtype)
        w[np.tri(n, k=-1, dtype=bool).T if upper else np.tri(n, k=-1, dtype=bool)] = 0
        w.reshape(-1)[::n + 1] = diag
    else:
        w = _weights_cached(n, upper, diag, x.dtype)
    if np.isfinite(v.sum()):
        np.multiply(v, w, out=v)
    else:                                    # (no 0 * inf: no nan, no RuntimeWarning)
        np.copyto(v, 0, where=_strict_mask_cached(n, upper) if n <= 512 else w == 0)
        if diag != 1.0:
            v.reshape(-1)[::n + 1] *= diag
    return x


def _cholesky_lapack(sl, gL, L, upper):
    """The NumPy 2-D Cholesky adjoint (lower L; the conjugate transpose of the result with
    upper=True): :func:`_cholesky_symbolic` for n < 64, else :func:`_cholesky_blocked`, Murray's
    blocked reverse sweep (2016, section 4.2, here with conjugate transposes for complex L), which
    walks the diagonal blocks from the last, moves each block's cotangent onto the blocks left of
    it and above it with products, and runs the symbolic formula on each diagonal block: about
    n^3 flops against 3 n^3 for the symbolic formula on the whole matrix."""
    n = L.shape[-1]
    r = _cholesky_blocked(sl, gL, L, _block_size(n)) if n >= 64 else None
    if r is None:                               # (a block with a zero pivot: the solves' inf/nan)
        r = _cholesky_symbolic(sl, gL, L)
    return _mH(r) if upper else r


def _block_size(n):
    """Block width of :func:`_cholesky_blocked`.  One core, us per adjoint at n = 64 / 128 / 256
    (trsm sweep of before with blocks of 64; this sweep with blocks of 32, 48, 64): the H200
    host's Xeon 187 / 535 / 2384; 147, 159, 143 / 442, 378, 396 / 2228, 2113, 2179; an AMD EPYC
    dev machine 86 / 246 / 967; 75, 85, 89 / 204, 202, 227 / 790, 800, 826; at 512 (EPYC) 5087;
    4827, 4864, 4840 (96: 4728)."""
    return 32 if n < 112 else 48 if n < 384 else 64 if n < 768 else 128


def _cholesky_blocked(sl, gL, L, nb):
    """Murray's sweep, every triangular solve replaced by a product with the inverse of a diagonal
    block (trtri, then matrix products): on BLAS libraries whose small triangular routines are
    slow next to their products (seen on one Intel Xeon host: a 64 x 64 trmm and two trsm 116
    us, a 128 x 128 product 82), this is the difference between ~2 and ~3 factorisations.  The
    inverted blocks cost no accuracy next to the solves of before (the blocks' updates cost the
    digits the whole-matrix formula keeps; tests/rules/test_linalg_lapack_paths.py measures both
    against an extended-precision reference on ill-conditioned kernels).

    The working matrix ``A`` starts as the lower triangle of the cotangent (an inf or nan above
    the diagonal reaches nothing); each diagonal block takes the whole S + S^H of its symbolic
    formula (also used for the update of the blocks left of it), and one select at the end keeps
    the lower triangle and halves the diagonal.  None when a diagonal block is singular (trtri's
    info > 0)."""
    n = L.shape[-1]
    dt = np.result_type(gL, L)
    trtri, = sl.get_lapack_funcs(("trtri",), (np.empty(0, dt),))
    dt = np.dtype(trtri.dtype)
    # Lbar, becoming the adjoint: its lower triangle (the upper one multiplies the constant zeros
    # of L, and a product would turn an inf there into nan); then the updates of the diagonal
    # blocks leave finite values above their diagonals, which the products ignore (they meet
    # the zeros of L's blocks) and Phi and the last select drop
    A = triangle(gL).astype(dt, copy=False)
    # L is read below its diagonal blocks and in their lower triangles only (each block D made
    # triangular below, whoever made L: no pass over the whole matrix)
    L = L.astype(dt, copy=False)
    H = (lambda x: x.T) if dt.kind != "c" else _mH
    for k in range(n, 0, -nb):
        j = max(0, k - nb)
        D = triangle(L[j:k, j:k])
        Di, info = trtri(D, lower=1)                              # (a copy: D stays)
        if info:
            return None
        Db = A[j:k, j:k]
        if k < n:
            Cb = A[k:, j:k]
            Cb[...] = Cb @ Di                                     # Cbar D^-1
            if j:
                A[k:, :j] -= Cb @ L[j:k, :j]                      # Bbar -= Cbar R
            Db -= H(Cb) @ L[k:, j:k]
        P = H(D) @ Db                                             # D^H Dbar
        # Phi: one product with cached weights, no select (an inf or nan above P's diagonal
        # comes from Dbar's lower triangle, which puts one below it too)
        np.multiply(P, _weights_cached(k - j, True, 0.5, dt), out=P)
        X = H(Di) @ (P @ Di)                                      # S = D^-H Phi D^-1
        np.add(X, H(X), out=Db)                                   # S + S^H
        if j:                                                     # Rbar -= X R (+ Cbar^H B)
            A[j:k, :j] -= Db @ L[j:k, :j] + H(Cb) @ L[k:, :j] if k < n else Db @ L[j:k, :j]
    return _keep_lower(A, 0.5)


def _solve_tri(L, B, lower=True):
    m = xp(L)
    if m is np:
        try:
            import scipy.linalg as sl
            if L.ndim == 2:
                return sl.solve_triangular(L, B, lower=lower)
        except ImportError:
            pass
    return m.linalg.solve(L, m.broadcast_to(B, L.shape[:-2] + B.shape[-2:]))


def _from_hermitian(S, uplo):
    """Gradient w.r.t. the matrix a LAPACK routine reads as Hermitian from one triangle, given the
    gradient ``S`` (Hermitian) w.r.t. the Hermitian matrix it built: 2 S on the read triangle,
    Re diag(S) on the diagonal, zero on the other triangle."""
    m = xp(S)
    if uplo.upper() == "L":
        r = 2 * m.tril(S, -1)
    else:
        r = 2 * m.triu(S, 1)
    d = m.diagonal(S, axis1=-2, axis2=-1)
    if d.dtype.kind == "c":
        d = d.real
    n = S.shape[-1]
    i = m.arange(n)
    r = r.copy()
    r[..., i, i] = d
    return r


def eigh(g, ans, a, UPLO="L"):
    """Adjoint of ``eigh`` (distinct eigenvalues assumed; eigenvector phases must not matter)."""
    m = xp(a)
    w, v = ans
    gw, gv = g if isinstance(g, (tuple, list)) else (g, None)
    vh = _mH(v)
    n = w.shape[-1]
    inner = m.zeros(v.shape, dtype=v.dtype)
    if not is_zero(gw):
        inner = inner + m.asarray(gw)[..., None, :] * m.eye(n, dtype=w.dtype)
    if not is_zero(gv):
        inner = inner + _gap_inverse(w) * (vh @ m.asarray(gv))
    S = v @ inner @ vh
    S = 0.5 * (S + _mH(S))
    return like(_from_hermitian(S, UPLO), a)


def eigvalsh(g, ans, a, UPLO="L"):
    m = xp(a)
    w, v = m.linalg.eigh(a, UPLO)
    S = (v * m.asarray(g)[..., None, :]) @ _mH(v)
    S = 0.5 * (S + _mH(S))
    return like(_from_hermitian(S, UPLO), a)


# -- eig / eigvals: general matrices ---------------------------------------------------------------
# A = V diag(w) V^-1, each column of V of unit 2-norm with its largest component real (LAPACK's
# geev).  With M = V^-1 dA V: dw = diag(M); dV = V (F o M) + V diag(c), F_ij = 1/(w_j - w_i) off the
# diagonal, and c_j the multiple of v_j that keeps |v_j| = 1 (real part) and the largest component
# real (imaginary part).


def _eig_checks(w, V, need_gaps):
    """Refuse where the derivative would divide by ~0: eigenvalues that coincide (eigenvectors
    asked for) or a defective matrix (eigenvectors that are not independent)."""
    m = xp(w)
    eps = float(np.finfo(np.result_type(w).type(0).real.dtype).eps)
    scale = max(1.0, float(m.abs(w).max())) if w.size else 1.0
    n = w.shape[-1]
    if need_gaps and n > 1:
        diff = m.abs(w[..., None, :] - w[..., :, None]) + m.eye(n) * scale
        if float(diff.min()) <= 64 * eps * scale:
            raise RuleError("np.linalg.eig: the matrix has repeated eigenvalues; the derivative "
                            "of its eigenvectors divides by their difference (~0) and does not "
                            "exist", fix="use np.linalg.eigvals when only the eigenvalues are "
                                         "needed, or perturb the matrix so its eigenvalues differ")
    if n and float(m.max(m.asarray(np.linalg.cond(V)))) * eps > 1e-2:
        raise RuleError("np.linalg.eig/eigvals: the matrix is defective (its eigenvectors are not "
                        "independent): the eigenvalues are not differentiable there",
                        fix="perturb the matrix, or use np.linalg.eigh for Hermitian matrices")


def _gap_inverse(w):
    """F with F_ij = 1 / (w_j - w_i) off the diagonal, 0 on it."""
    m = xp(w)
    diff = w[..., None, :] - w[..., :, None]
    eye = m.eye(w.shape[-1], dtype=bool)
    return m.where(eye, 0, 1 / m.where(eye, 1, diff))


def _eig_top(V):
    """Row of each column's largest component (the one LAPACK makes real)."""
    m = xp(V)
    return m.argmax(m.abs(V), axis=-2)[..., None, :]


def eig_tangent(t, ans, a):
    m = xp(a)
    w, V = ans
    _eig_checks(w, V, True)
    T = asarray(t, like=V)
    Vi = m.linalg.inv(V)
    Mt = Vi @ T @ V
    dw = m.diagonal(Mt, axis1=-2, axis2=-1)
    dV = V @ (_gap_inverse(w) * Mt)
    dV = dV - V * (cj(V) * dV).sum(axis=-2, keepdims=True).real
    if dV.dtype.kind == "c":
        k = _eig_top(V)
        vk = m.take_along_axis(V, k, axis=-2)
        dk = m.take_along_axis(dV, k, axis=-2)
        dV = dV - 1j * V * (dk / vk).imag
    if w.dtype.kind != "c":
        dw, dV = dw.real, dV.real
    return dw, dV


def eig(g, ans, a):
    """Adjoint of ``np.linalg.eig`` (the transpose of :func:`eig_tangent`)."""
    m = xp(a)
    w, V = ans
    gw, gV = g if isinstance(g, (tuple, list)) else (g, None)
    _eig_checks(w, V, not is_zero(gV))
    n = w.shape[-1]
    dt = np.result_type(V.dtype, np.complex64 if V.dtype == np.float32 else np.float64)
    inner = m.zeros(V.shape, dtype=np.result_type(dt, w.dtype))
    if not is_zero(gw):
        inner = inner + m.asarray(gw)[..., None, :] * m.eye(n, dtype=inner.dtype)
    if not is_zero(gV):
        gY = m.asarray(gV)
        gY = gY - V * (cj(V) * gY).sum(axis=-2, keepdims=True).real
        if V.dtype.kind == "c":
            k = _eig_top(V)
            vk = m.take_along_axis(V, k, axis=-2).real
            b = -(cj(m.asarray(gV)) * V).sum(axis=-2, keepdims=True).imag
            Z = m.zeros(V.shape, dtype=V.dtype)
            m.put_along_axis(Z, k, -1j * b / vk, axis=-2)
            gY = gY + Z
        inner = inner + cj(_gap_inverse(w)) * (_mH(V) @ gY)
    Vi = m.linalg.inv(V)
    return like(_mH(Vi) @ inner @ _mH(V), a)


def eigvals(g, ans, a):
    m = xp(a)
    w, V = m.linalg.eig(asarray(a))
    _eig_checks(w, V, False)
    return eig(g, (w, V), a)


def eigvals_tangent(t, ans, a):
    m = xp(a)
    w, V = m.linalg.eig(asarray(a))
    _eig_checks(w, V, False)
    Vi = m.linalg.inv(V)
    dw = m.diagonal(Vi @ asarray(t, like=V) @ V, axis1=-2, axis2=-1)
    return dw if w.dtype.kind == "c" else dw.real


def _copyltu(M):
    m = xp(M)
    low = m.tril(M, -1)
    d = m.diagonal(M, axis1=-2, axis2=-1)
    return low + _mH(low) + d.real[..., None] * m.eye(M.shape[-1], dtype=M.real.dtype) \
        if M.dtype.kind == "c" else low + _mT(low) + d[..., None] * m.eye(M.shape[-1], dtype=M.dtype)


def _qr_square_or_tall(A, Q, R, gQ, gR):
    m = xp(A)
    if is_zero(gQ):
        gQ = m.zeros_like(Q)
    if is_zero(gR):
        gR = m.zeros_like(R)
    M = R @ _mH(gR) - _mH(gQ) @ Q
    B = gQ + Q @ _copyltu(M)
    # gA = B R^-H  <=>  solve R gA^H = B^H
    return _mH(m.linalg.solve(R, _mH(B))) if m is not np or R.ndim > 2 else \
        _mH(_solve_tri(R, _mH(B), lower=False))


def qr(g, ans, a, mode="reduced"):
    """Adjoint of ``qr`` for modes 'reduced' (and 'complete' when rows <= columns) and 'r'."""
    m = xp(a)
    a_ = asarray(a)
    rows, cols = a_.shape[-2:]
    if mode == "r":
        Q, R = m.linalg.qr(a_)
        gQ, gR = None, g
    elif mode in ("reduced", "complete"):
        if mode == "complete" and rows > cols:
            raise RuleError("np.linalg.qr(mode='complete') with more rows than columns has no "
                            "unique derivative", fix="use mode='reduced'")
        Q, R = ans
        gQ, gR = g if isinstance(g, (tuple, list)) else (g, None)
    else:
        raise RuleError(f"np.linalg.qr(mode={mode!r}) is not differentiable",
                        fix="use mode='reduced' (or 'complete' for square or wide matrices)")
    if rows >= cols:
        return like(_qr_square_or_tall(a_, Q, R, gQ, gR), a)
    # wide: A = Q [X | Y], R = [R1 | R2]
    if is_zero(gQ):
        gQ = m.zeros_like(Q)
    if is_zero(gR):
        gR = m.zeros_like(R)
    Y = a_[..., rows:]
    gR1, gR2 = gR[..., :rows], gR[..., rows:]
    gY = Q @ gR2
    gQ2 = gQ + Y @ _mH(gR2)
    gX = _qr_square_or_tall(a_[..., :rows], Q, R[..., :rows], gQ2, gR1)
    return like(m.concatenate([gX, gY], axis=-1), a)


def svd(g, ans, a, full_matrices=True, compute_uv=True, hermitian=False):
    """Adjoint of ``svd`` (distinct nonzero singular values assumed).  With ``full_matrices=True``
    and a non-square input, U or Vh is not unique: only g for S is supported then."""
    m = xp(a)
    a_ = asarray(a)
    rows, cols = a_.shape[-2:]
    k = min(rows, cols)
    if hermitian:
        raise RuleError("np.linalg.svd(hermitian=True) is not differentiable",
                        fix="use np.linalg.eigh for Hermitian matrices, or hermitian=False")
    if not compute_uv:
        U, S, Vh = m.linalg.svd(a_, full_matrices=False)
        return like((U * m.asarray(g)[..., None, :]) @ Vh, a)
    U, S, Vh = ans
    gU, gS, gVh = g if isinstance(g, (tuple, list)) else (None, g, None)
    if full_matrices and rows != cols:
        if not (is_zero(gU) and is_zero(gVh)):
            raise RuleError("np.linalg.svd(full_matrices=True) of a non-square matrix: U and Vh "
                            "are not unique", fix="use full_matrices=False")
        U, Vh = U[..., :, :k], Vh[..., :k, :]
    return like(_svd_thin(U, S, Vh, gU, gS, gVh), a)


def _svd_thin(U, S, Vh, gU, gS, gVh):
    m = xp(U)
    V = _mH(Vh)
    rows, cols = U.shape[-2], Vh.shape[-1]
    k = S.shape[-1]
    Sd = S.astype(U.dtype)
    if is_zero(gU) and is_zero(gVh):
        return (U * m.asarray(gS)[..., None, :]) @ Vh
    gU = m.zeros_like(U) if is_zero(gU) else m.asarray(gU)
    gV = m.zeros_like(V) if is_zero(gVh) else _mH(m.asarray(gVh))
    UhgU = _mH(U) @ gU
    VhgV = _mH(V) @ gV
    F = _gap_inverse(S * S)
    J = F * (UhgU - _mH(UhgU))
    K = F * (VhgV - _mH(VhgV))
    inner = J * Sd[..., None, :] + Sd[..., :, None] * K
    if not is_zero(gS):
        inner = inner + m.asarray(gS)[..., None, :] * m.eye(k, dtype=U.dtype)
    if U.dtype.kind == "c":
        dU = m.diagonal(UhgU, axis1=-2, axis2=-1)
        inner = inner + (1j * dU.imag / (2 * S))[..., None, :] * m.eye(k, dtype=U.dtype) * 1
    gA = U @ inner @ Vh
    if rows > k:
        Sinv = 1 / Sd
        proj = gU - U @ UhgU
        gA = gA + (proj * Sinv[..., None, :]) @ Vh
    if cols > k:
        Sinv = 1 / Sd
        proj = gV - V @ VhgV
        gA = gA + U @ _mH(proj * Sinv[..., None, :])
    return gA


def norm(g, ans, x, ord=None, axis=None, keepdims=False):
    """Adjoint of ``np.linalg.norm`` for vector norms (any ord) and matrix norms
    ('fro', 'nuc', 1, -1, 2, -2, inf, -inf)."""
    m = xp(x)
    x_ = asarray(x)
    if x_.dtype.kind not in "fc":
        return None
    nd = x_.ndim
    if axis is None:
        if ord is not None and nd == 2:
            return like(_matrix_norm(g, ans, x_, ord, (0, 1), keepdims), x)
        if ord is not None and nd != 1:
            raise RuleError("np.linalg.norm: ord needs axis for arrays of more than 2 dimensions",
                            fix="give axis= (one axis for a vector norm, two for a matrix norm)")
        axes = tuple(range(nd))
        r = _vector_norm(g, ans, x_.ravel() if nd > 1 else x_, ord, (0,) if nd else (),
                         keepdims and nd == 1)
        return like(r.reshape(x_.shape), x)
    if isinstance(axis, (tuple, list)) and len(axis) == 2:
        return like(_matrix_norm(g, ans, x_, ord, tuple(a % nd for a in axis), keepdims), x)
    if isinstance(axis, (tuple, list)):
        axis = axis[0]
    return like(_vector_norm(g, ans, x_, ord, (axis % nd,), keepdims), x)


def vector_norm(g, ans, x, axis=None, keepdims=False, ord=2):
    """Adjoint of ``np.linalg.vector_norm``: axis None means all elements, flattened."""
    x_ = asarray(x)
    axes = norm_axes(axis, x_.ndim)
    if len(axes) == 1:
        return like(_vector_norm(g, ans, x_, ord, axes, keepdims), x)
    m = xp(x_)
    keep = [i for i in range(x_.ndim) if i not in axes]
    t = x_.transpose(keep + list(axes))
    t = t.reshape(t.shape[:len(keep)] + (-1,))
    ge = expand(g, x_.shape, axes, keepdims, like=x_).transpose(keep + list(axes))
    ge = ge.reshape(ge.shape[:len(keep)] + (1,))
    ne = expand(ans, x_.shape, axes, keepdims, like=x_).transpose(keep + list(axes))
    ne = ne.reshape(ne.shape[:len(keep)] + (1,))
    r = _vector_norm(ge, ne, t, ord, (t.ndim - 1,), True)
    shp = [x_.shape[i] for i in keep + list(axes)]
    return like(r.reshape(shp).transpose(_inverse(keep + list(axes))), x)


def _vector_norm(g, ans, x, ord, axes, keepdims):
    m = xp(x)
    ge = expand(g, x.shape, axes, keepdims, like=x)
    ne = expand(ans, x.shape, axes, keepdims, like=x)
    ax = m.abs(x)
    sgn = m.sign(x)
    if ord is None or ord == 2:
        safe = m.where(ne == 0, 1, ne)
        return m.where(ne == 0, 0, ge * x / safe)
    if ord == 1:
        return ge * sgn
    if ord == 0:
        return 0 * ge * x
    if ord in (np.inf, -np.inf):
        mask = ax == ne
        n = mask.sum(axis=axes, keepdims=True)
        return ge * sgn * mask / n
    p = float(ord)
    safe = m.where(ne == 0, 1, ne)
    return ge * sgn * (ax / safe) ** (p - 1)


def _matrix_norm(g, ans, x, ord, axes, keepdims):
    m = xp(x)
    r0, c0 = axes
    ge = expand(g, x.shape, axes, keepdims, like=x)
    if ord is None or ord == "fro":
        ne = expand(ans, x.shape, axes, keepdims, like=x)
        safe = m.where(ne == 0, 1, ne)
        return m.where(ne == 0, 0, ge * x / safe)
    if ord in (1, -1, np.inf, -np.inf):
        # 1: max over columns of column abs-sums (sum over rows); inf: max over rows
        sum_axis = r0 if ord in (1, -1) else c0
        other = c0 if ord in (1, -1) else r0
        s = m.abs(x).sum(axis=sum_axis, keepdims=True)
        ne = expand(ans, x.shape, axes, keepdims, like=x)
        mask = s == ne
        n = mask.sum(axis=other, keepdims=True)
        return ge * m.sign(x) * mask / n
    if ord in (2, -2, "nuc"):
        xm = m.moveaxis(x, (r0, c0), (-2, -1))
        U, S, Vh = m.linalg.svd(xm, full_matrices=False)
        gm = m.moveaxis(ge, (r0, c0), (-2, -1))[..., 0, 0]
        if ord == "nuc":
            r = U @ Vh
        else:
            i = 0 if ord == 2 else -1
            r = U[..., :, i:i + 1 if i == 0 else None] @ Vh[..., i:i + 1 if i == 0 else None, :]
        r = r * gm[..., None, None]
        return m.moveaxis(r, (-2, -1), (r0, c0))
    raise RuleError(f"np.linalg.norm: ord={ord!r} is not differentiable for matrices",
                    fix="use ord=None/'fro', 'nuc', 1, -1, 2, -2, np.inf or -np.inf")


def norm_tangent(t, ans, x, ord=None, axis=None, keepdims=False, vector=False):
    """Tangent of a norm: Re <gradient of each output, t>, summed over that output's group."""
    m = xp(x)
    x_ = asarray(x)
    ones = m.ones(np.shape(ans), dtype=np.result_type(ans))
    if vector:
        gr = vector_norm(ones, ans, x_, axis, keepdims, ord)
        axes = norm_axes(axis, x_.ndim)
    else:
        gr = norm(ones, ans, x_, ord, axis, keepdims)
        axes = norm_axes(axis, x_.ndim) if axis is not None else tuple(range(x_.ndim))
    c = (cj(gr) * t).real
    return c.sum(axis=axes, keepdims=_flag(keepdims))


def _herm_lower(T):
    """The Hermitian matrix LAPACK builds from the lower triangle of ``T`` (eigh's view)."""
    m = xp(T)
    low = m.tril(T, -1)
    d = m.diagonal(T, axis1=-2, axis2=-1)
    d = d.real if d.dtype.kind == "c" else d
    return low + _mH(low) + d[..., None] * m.eye(T.shape[-1], dtype=d.dtype)


def pinv(g, ans, a, hermitian=False):
    """Adjoint of ``pinv`` (constant rank): with X = A^+,
    gA = -X^H G X^H + (I - A X) G^H X X^H + X^H X G^H (I - X A); with hermitian=True NumPy reads
    only the lower triangle, so the gradient goes there (as for eigh)."""
    A = asarray(a)
    if hermitian:
        A = _herm_lower(A)
    X = asarray(ans, like=A)
    G = asarray(g, like=A)
    Xh, Gh = _mH(X), _mH(G)
    r = -(Xh @ G @ Xh) + (Gh @ X @ Xh - A @ (X @ (Gh @ (X @ Xh)))) \
        + (Xh @ X @ Gh - Xh @ (X @ (Gh @ (X @ A))))
    if hermitian:
        r = _from_hermitian(0.5 * (r + _mH(r)), "L")
    return like(r, a)


def pinv_tangent(t, ans, a, hermitian=False):
    A = asarray(a)
    X = asarray(ans, like=A)
    T = asarray(t, like=A)
    if hermitian:
        A, T = _herm_lower(A), _herm_lower(T)
    Th = _mH(T)
    Xh = _mH(X)
    return -(X @ T @ X) + X @ Xh @ Th - X @ Xh @ Th @ A @ X + Th @ Xh @ X - X @ A @ Th @ Xh @ X


def lstsq(g, ans, a, b, rcond=None):
    """Adjoints of ``np.linalg.lstsq`` (full rank; both at once) for the solution x = A^+ b (b gets
    A^+H gx, A through pinv with G = gx b^H), the residuals ||b - A x||^2 (envelope theorem: b gets
    2 r g, A gets -2 r x^H g) and the singular values (through svd); the rank has none."""
    m = xp(a, b)
    A = asarray(a)
    B = asarray(b, like=A)
    x, res, rank, sv = ans
    gx, gres, _, gsv = (tuple(g) + (None,) * 4)[:4] if isinstance(g, (tuple, list)) else \
        (g, None, None, None)
    vec = B.ndim == 1
    Bm = B[:, None] if vec else B
    Xs = asarray(x, like=A)
    Xm = Xs[:, None] if vec else Xs
    ga = m.zeros(A.shape, dtype=np.result_type(A.dtype, B.dtype))
    gb = m.zeros(Bm.shape, dtype=ga.dtype)
    if not is_zero(gx):
        P = m.linalg.pinv(A)
        G = asarray(gx, like=A)
        G = G[:, None] if vec else G
        gb = gb + _mH(P) @ G
        ga = ga + pinv(G @ _mH(Bm), P, A)
    if not is_zero(gres) and getattr(res, "size", 0):
        r = Bm - A @ Xm
        gr = asarray(gres, like=A).reshape(1, -1)
        gb = gb + 2 * r * gr
        ga = ga - 2 * (r * gr) @ _mH(Xm)
    if not is_zero(gsv):
        ga = ga + svd(gsv, sv, A, False, False)
    return like(ga, a), like(gb[:, 0] if vec else gb, b)


def lstsq_tangent(t, ans, a, b, which):
    """Tangent of ``lstsq``'s (x, residuals, rank, s) along ``a`` or ``b`` (full rank)."""
    m = xp(a, b)
    A = asarray(a)
    B = asarray(b, like=A)
    x, res, rank, sv = ans
    vec = B.ndim == 1
    Bm = B[:, None] if vec else B
    Xm = asarray(x, like=A)
    Xm = Xm[:, None] if vec else Xm
    T = asarray(t, like=A)
    P = m.linalg.pinv(A)
    r = Bm - A @ Xm
    if which == "b":
        Tm = T[:, None] if vec else T
        dx = P @ Tm
        dr = Tm
        ds = m.zeros(shape(sv), dtype=asarray(sv).dtype)
    else:
        dx = pinv_tangent(T, P, A) @ Bm
        dr = -(T @ Xm)
        u, _, vh = m.linalg.svd(A, full_matrices=False)
        ds = (cj(u) * (T @ _mH(vh))).sum(axis=-2).real
    dres = 2 * (cj(r) * dr).real.sum(axis=0) if getattr(res, "size", 0) else \
        m.zeros(shape(res), dtype=asarray(res).dtype)
    dres = dres.reshape(shape(res))
    return (dx[:, 0] if vec else dx), dres, 0.0 * m.zeros(()), ds


def matrix_power(g, a, n):
    """Adjoint of ``matrix_power(a, n)``: sum_k (A^H)^k G (A^H)^(n-1-k); for n < 0 through
    B = inv(A) (gA = -B^H gB B^H)."""
    m = xp(a)
    A = asarray(a)
    G = asarray(g, like=A)
    n = int(n)
    if n == 0:
        return like(0 * G, a)
    B = m.linalg.inv(A) if n < 0 else A
    k = abs(n)
    Bh = _mH(B)
    pows = [None] * k
    pows[0] = m.broadcast_to(m.eye(A.shape[-1], dtype=B.dtype), B.shape)
    for i in range(1, k):
        pows[i] = pows[i - 1] @ Bh
    gB = 0
    for i in range(k):
        gB = gB + pows[i] @ G @ pows[k - 1 - i]
    if n < 0:
        gB = -(Bh @ gB @ Bh)
    return like(gB, a)


def matrix_power_tangent(t, a, n):
    m = xp(a)
    A = asarray(a)
    T = asarray(t, like=A)
    n = int(n)
    if n == 0:
        return 0 * T
    B = m.linalg.inv(A) if n < 0 else A
    if n < 0:
        T = -(B @ T @ B)
    k = abs(n)
    pows = [m.broadcast_to(m.eye(A.shape[-1], dtype=B.dtype), B.shape)]
    for i in range(1, k):
        pows.append(pows[-1] @ B)
    r = 0
    for i in range(k):
        r = r + pows[i] @ T @ pows[k - 1 - i]
    return r


def _multi_dot_mats(arrays):
    mats = [asarray(x, like=arrays[0]) for x in arrays]
    first, last = mats[0].ndim == 1, mats[-1].ndim == 1
    if first:
        mats[0] = mats[0][None, :]
    if last:
        mats[-1] = mats[-1][:, None]
    return mats


def _chain(mats):
    r = mats[0]
    for x in mats[1:]:
        r = r @ x
    return r


def multi_dot(g, arrays):
    """Adjoint of ``np.linalg.multi_dot``: A_i gets (A_0..A_{i-1})^H G (A_{i+1}..)^H."""
    mats = _multi_dot_mats(arrays)
    k = len(mats)
    G = asarray(g, like=mats[0]).reshape(mats[0].shape[0], mats[-1].shape[1])
    left = [None] * k
    right = [None] * k
    for i in range(k):
        left[i] = None if i == 0 else (mats[0] if i == 1 else left[i - 1] @ mats[i - 1])
    for i in range(k - 1, -1, -1):
        right[i] = None if i == k - 1 else (mats[-1] if i == k - 2 else mats[i + 1] @ right[i + 1])
    out = []
    for i, x in enumerate(arrays):
        r = G
        if left[i] is not None:
            r = _mH(left[i]) @ r
        if right[i] is not None:
            r = r @ _mH(right[i])
        out.append(like(r.reshape(shape(x)), x))
    return tuple(out)


def multi_dot_tangent(t, arrays, ans=None):
    mats = _multi_dot_mats(arrays)
    ts = tangent_list(t, arrays)
    tm = _multi_dot_mats(ts)
    r = None
    for i in range(len(mats)):
        if is_zero(t[i]):
            continue
        term = _chain(mats[:i] + [tm[i]] + mats[i + 1:])
        r = term if r is None else r + term
    if r is None:
        r = 0 * _chain(mats)
    return r.reshape(shape(ans)) if ans is not None else r


def slogdet_tangent(t, ans, a):
    """Tangent of ``slogdet``: (sign, log|det|) move by (i Im tr(a^-1 t) sign, Re tr(a^-1 t))."""
    m = xp(a, t)
    tr = m.trace(m.linalg.solve(a, t), axis1=-2, axis2=-1)
    sign = ans[0]
    if m.iscomplexobj(tr):
        return (1j * tr.imag * sign, tr.real)
    return (m.zeros_like(sign), tr)



# -- second derivatives: tangents of the adjoint helpers above -------------------------------------
# Forward mode over a generated reverse sweep (hvp, hessian, jacfwd of grad) differentiates the
# helpers that sweep calls.  Each helper is linear in its incoming adjoint ``grad`` (its tangent
# there is the helper itself, declared in runtime_helpers.py); these are its tangents in the
# values it also reads (``ans``, ``a``), along ``t``.

def _inv_or_refuse(a, what):
    """``inv(a)``, or a RuleError where ``a`` is singular (a second derivative there is not
    supported: the first derivative's singular-matrix form has no tangent rule)."""
    try:
        return xp(a).linalg.inv(a)
    except np.linalg.LinAlgError:
        raise RuleError(f"the second derivative of {what} at a singular matrix is not supported",
                        fix="take the second derivative by differences of s2sad.grad") from None


def det_adjoint_tangent(grad, out, a, t, which):
    """Tangent of :func:`det`'s ``g cj(ans) a^-H`` in ``ans`` (which='out') or ``a``."""
    m = xp(a)
    ai = _inv_or_refuse(a, "np.linalg.det")
    if which == "out":
        return like(m.asarray(grad * cj(t))[..., None, None] * _mH(ai), a)
    return like(m.asarray(grad * cj(out))[..., None, None] * _mH(-(ai @ t @ ai)), a)


def slogdet_adjoint_tangent(grad, out, a, t, which):
    """Tangent of :func:`slogdet`'s adjoint in ``ans`` = (sign, logdet) (which='out': only the
    sign's term of a complex matrix moves) or in ``a`` (a^-H moves by -(a^-1 t a^-1)^H)."""
    m = xp(a)
    gs, gl = grad if isinstance(grad, (tuple, list)) else (None, grad)
    ai = _inv_or_refuse(a, "np.linalg.slogdet")
    complex_sign = not is_zero(gs) and a.dtype.kind == "c"
    if which == "out":
        if not complex_sign:
            return m.zeros_like(a)
        dc = -(cj(gs) * t[0]).imag
        return like((1j * m.asarray(dc))[..., None, None] * _mH(ai), a)
    dai_h = _mH(-(ai @ t @ ai))
    r = m.zeros_like(dai_h)
    if not is_zero(gl):
        r = r + m.asarray(gl)[..., None, None] * dai_h
    if complex_sign:
        c = -(cj(gs) * out[0]).imag
        r = r + (1j * m.asarray(c))[..., None, None] * dai_h
    return like(r, a)


def solve_adjoint_tangent(grad, out, a, b, t, which):
    """Tangent of :func:`solve`'s (ga, gb) in ``ans`` (which='out': ga = -gb x^H moves with x)
    or in ``a`` (A^H gb = G gives d gb = -A^-H dA^H gb: the helper itself at G' = -dA^H gb)."""
    m, a_, b_, vec, G, X, gb = _solve_parts(grad, out, a, b)
    T = m.asarray(t)
    if which == "out":
        ga = -(gb @ _mH(T[..., None] if vec else T))
        return like(_rt.unbroadcast(ga, a_), a), like(m.zeros(b_.shape, gb.dtype), b)
    G2 = -(_mH(T) @ gb)
    return solve(G2[..., 0] if vec else G2, out, a, b)


def cholesky_adjoint_tangent(grad, out, a, upper, t):
    """Tangent of :func:`cholesky`'s adjoint in ``ans`` (the factor L, moving by dL): from
    S = L^-H Phi(L^H gL) L^-1, dS = dLi^H P Li + Li^H Phi(dL^H gL) Li + Li^H P dLi with
    dLi = -Li dL Li (Li = L^-1)."""
    m = xp(a)
    L = _mH(out) if upper else out
    dL = _mH(m.asarray(t)) if upper else m.asarray(t)
    gL = _mH(m.asarray(grad)) if upper else m.asarray(grad)
    n = L.shape[-1]
    Li = _solve_tri(L, m.eye(n, dtype=L.dtype), lower=True)
    dLi = -(Li @ dL @ Li)
    P = _phi(_mH(L) @ gL)
    dS = _mH(dLi) @ P @ Li + _mH(Li) @ _phi(_mH(dL) @ gL) @ Li + _mH(Li) @ P @ dLi
    return like(_from_hermitian(0.5 * (dS + _mH(dS)), "U" if upper else "L"), a)


_SMOOTH_NORMS = (None, 2, "fro")           # the 2-norm and Frobenius: ge * x / ans
_FLAT_NORMS = (1, -1, 0, np.inf, -np.inf)   # piecewise linear in x: no second derivative


def _norm_second(x, ord, matrix):
    """'smooth', 'flat', or a RuleError for a norm whose adjoint has no tangent rule."""
    if ord is None or (ord == 2 and not matrix) or (ord == "fro" and matrix):
        return "smooth"
    if any(ord is o or (not isinstance(ord, str) and ord == o) for o in _FLAT_NORMS):
        return "flat"
    raise RuleError(f"the second derivative of np.linalg.norm with ord={ord!r}"
                    f"{' for matrices' if matrix else ''} is not supported",
                    fix="take the second derivative by differences of s2sad.grad, or use the "
                        "2-norm (ord=None)")


def norm_adjoint_tangent(grad, out, x, ord=None, axis=None, keepdims=False, t=0.0, which="x",
                         vector=False):
    """Tangent of :func:`norm` (or, vector=True, :func:`vector_norm`) in ``x`` or ``ans``.  For the
    2-norm and Frobenius norm the adjoint is ge x / ans: linear in x at a fixed ans (the helper
    at t), and -ge x t_ans / ans^2 in ans (the helper at grad t / ans); the piecewise linear
    norms' adjoints do not move."""
    helper = vector_norm if vector else norm
    x_ = asarray(x)
    matrix = not vector and (isinstance(axis, (tuple, list)) and len(axis) == 2 or
                             axis is None and ord is not None and x_.ndim == 2)
    if _norm_second(x_, ord, matrix) == "flat":
        return like(xp(x_).zeros(x_.shape, x_.dtype), x)
    args = (axis, keepdims, ord) if vector else (ord, axis, keepdims)
    if which == "x":
        return helper(grad, out, t, *args)
    m = xp(x_)
    o = m.asarray(out)
    q = m.where(o == 0, 0, grad * m.asarray(t) / m.where(o == 0, 1, o))
    return -helper(q, out, x, *args)



def eigh_adjoint_tangent(grad, out, a, UPLO, t):
    """Tangent of :func:`eigh`'s adjoint in ``ans`` = (w, v), along (dw, dv): with
    inner = diag(gw) + F o (v^H gv) and S = v inner v^H, dF_ij = -(dw_j - dw_i) F_ij^2."""
    m = xp(a)
    w, v = out
    dw, dv = t
    gw, gv = grad if isinstance(grad, (tuple, list)) else (grad, None)
    vh = _mH(v)
    inner = m.zeros(v.shape, dtype=v.dtype)
    dinner = m.zeros(v.shape, dtype=v.dtype)
    if not is_zero(gw):
        inner = inner + m.asarray(gw)[..., None, :] * m.eye(w.shape[-1], dtype=w.dtype)
    if not is_zero(gv):
        F = _gap_inverse(w)
        M = vh @ m.asarray(gv)
        inner = inner + F * M
        if not is_zero(dw):
            dd = m.asarray(dw)
            dinner = dinner - (dd[..., None, :] - dd[..., :, None]) * F * F * M
        if not is_zero(dv):
            dinner = dinner + F * (_mH(m.asarray(dv)) @ m.asarray(gv))
    dS = v @ dinner @ vh
    if not is_zero(dv):
        dv = m.asarray(dv)
        dS = dS + dv @ inner @ vh + v @ inner @ _mH(dv)
    return like(_from_hermitian(0.5 * (dS + _mH(dS)), UPLO), a)


def eigvalsh_adjoint_tangent(grad, a, UPLO, t):
    """Tangent of :func:`eigvalsh`'s adjoint v diag(g) v^H in ``a`` (which it decomposes again):
    dv = v (F o (v^H dA v)), dA the Hermitian matrix eigh reads from t's ``UPLO`` triangle."""
    m = xp(a)
    w, v = m.linalg.eigh(a, UPLO)
    T = m.asarray(t)
    low = UPLO.upper() == "L"
    half = m.tril(T, -1) if low else m.triu(T, 1)
    diag = m.diagonal(T, axis1=-2, axis2=-1).real
    dA = half + _mH(half) + diag[..., None, :] * m.eye(w.shape[-1], dtype=w.dtype)
    dv = v @ (_gap_inverse(w) * (_mH(v) @ dA @ v))
    G = m.asarray(grad)[..., None, :]
    dS = (dv * G) @ _mH(v) + (v * G) @ _mH(dv)
    return like(_from_hermitian(0.5 * (dS + _mH(dS)), UPLO), a)

export(globals())
