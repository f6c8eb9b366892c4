"""``scipy.linalg``: triangular and Cholesky solves, ``block_diag``, ``expm``, and the functions
that share the NumPy table's helpers (``cholesky``, ``inv``, ``det``, ``solve``).

Loaded only once the user's code has imported SciPy.
"""
import numpy as np
import scipy.linalg as _sl

from ..adjoints import A, _mH, _mT, asarray, cj, export, is_zero, like, shape, xp
from ..numpy.concat_permute import _back
from ..numpy.linalg import cholesky, cholesky_adjoint_tangent, outer_triangle, triangle
from ..registry import defrule
from ...errors import RuleError

A = dict(A, _sl=_sl)

_NOWRITE = {"overwrite_a": False, "overwrite_b": False}
_NOWRITE_B = {"overwrite_ab": False, "overwrite_b": False}
# the default of logm/sqrtm's deprecated disp= and blocksize= (a sentinel in recent SciPy)
_sl_unset = _sl.logm.__defaults__[0] if _sl.logm.__defaults__ else True
A["_sl_unset"] = _sl_unset
defrule(_sl.solve_triangular, "a, b, trans=0, lower=False, unit_diagonal=False, "
        "overwrite_b=False, check_finite=True",
        joint=(("a", "b"), "_adj.solve_triangular(g, ans, a, b, trans, lower, unit_diagonal)"),
        forbid={"overwrite_b": False}, ns=A)
defrule(_sl.cho_factor, "a, lower=False, overwrite_a=False, check_finite=True",
        vjp={"a": "_adj.cho_factor(g, ans, a, lower)"}, kind="any",
        forbid={"overwrite_a": False}, ns=A)
defrule(_sl.cho_solve, "c_and_lower, b, overwrite_b=False, check_finite=True",
        joint=(("c_and_lower", "b"), "_adj.cho_solve(g, ans, c_and_lower, b)"),
        forbid={"overwrite_b": False}, ns=A)
defrule(_sl.block_diag, "*arrs", vjp={"arrs": "_adj.block_diag(g, arrs)"}, ns=A)
defrule(_sl.cholesky, "a, lower=False, overwrite_a=False, check_finite=True",
        vjp={"a": "_adj.cholesky(g, ans, a, not lower)"}, forbid={"overwrite_a": False}, ns=A)
defrule(_sl.inv, "a, overwrite_a=False, check_finite=True",
        vjp={"a": "_adj.inv(g, ans)"}, jvp={"a": "-(ans @ t @ ans)"},
        forbid={"overwrite_a": False}, ns=A)
defrule(_sl.det, "a, overwrite_a=False, check_finite=True", vjp={"a": "_adj.det(g, ans, a)"},
        forbid={"overwrite_a": False}, ns=A)
defrule(_sl.solve, "a, b, lower=False, overwrite_a=False, overwrite_b=False, check_finite=True, "
        "assume_a=None, transposed=False",
        joint=(("a", "b"), "_adj.solve(g, ans, a, b)"),
        forbid={"overwrite_a": False, "overwrite_b": False, "transposed": False,
                "assume_a": None}, ns=A)
defrule(_sl.expm, "A", vjp={"A": "_adj.expm(g, A)"}, jvp={"A": "_adj.expm_tangent(t, A)"}, ns=A)
# disp=False makes logm/sqrtm return (result, error estimate): the helpers take either form
defrule(_sl.logm, "A, disp=_sl_unset", vjp={"A": "_adj.logm(g, ans, A)"},
        jvp={"A": "_adj.logm_tangent(t, ans, A)"}, kind="any", ns=A)
defrule(_sl.sqrtm, "A, disp=_sl_unset, blocksize=_sl_unset", vjp={"A": "_adj.sqrtm(g, ans, A)"},
        jvp={"A": "_adj.sqrtm_tangent(t, ans, A)"}, kind="any", ns=A)
defrule(_sl.solve_sylvester, "a, b, q",
        joint=(("a", "b", "q"), "_adj.solve_sylvester(g, ans, a, b, q)"),
        jvp={"a": "_adj.sylvester_tangent(t, ans, a, b, 'a')",
             "b": "_adj.sylvester_tangent(t, ans, a, b, 'b')",
             "q": "_adj.sylvester_tangent(t, ans, a, b, 'q')"}, ns=A)
defrule(_sl.solve_continuous_lyapunov, "a, q",
        joint=(("a", "q"), "_adj.solve_continuous_lyapunov(g, ans, a, q)"),
        jvp={"a": "_adj.lyapunov_tangent(t, ans, a, 'a')",
             "q": "_adj.lyapunov_tangent(t, ans, a, 'q')"}, ns=A)
defrule(_sl.solve_banded, "l_and_u, ab, b, overwrite_ab=False, overwrite_b=False, "
        "check_finite=True", joint=(("ab", "b"), "_adj.solve_banded(g, ans, l_and_u, ab, b)"),
        jvp={"ab": "_adj.solve_banded_tangent(t, ans, l_and_u, ab, b, 'ab')",
             "b": "_adj.solve_banded_tangent(t, ans, l_and_u, ab, b, 'b')"},
        forbid=_NOWRITE_B, ns=A)


# -- helpers the templates call --------------------------------------------------------------------
def _trans_code(trans):
    return {0: 0, 1: 1, 2: 2, "N": 0, "T": 1, "C": 2, "n": 0, "t": 1, "c": 2}[trans]


def _linalg_of(m):
    """The SciPy-like linalg module of array module ``m`` (SciPy's, or CuPy's for CuPy arrays)."""
    if m is np:
        return _sl
    import cupyx.scipy.linalg as csl
    return csl


def _trtrs(a, b, trans=0, lower=False, unit_diagonal=False):
    """``scipy.linalg.solve_triangular(a, b, ...)`` for a NumPy matrix ``a`` and a matrix ``b``, by
    LAPACK trtrs without SciPy's checks (the forward call made them; a singular ``a`` still goes
    to SciPy, which raises).  A C-ordered real ``a`` is passed as its transpose, which LAPACK
    reads without a copy: op(a) = op'(a^T) with the triangle swapped."""
    trtrs = _sl.get_lapack_funcs("trtrs", (a, b))
    if a.dtype.kind == "f" and a.flags.c_contiguous and not a.flags.f_contiguous:
        x, info = trtrs(a.T, b, lower=not lower, trans=0 if trans else 1,
                        unitdiag=unit_diagonal)
    else:
        x, info = trtrs(a, b, lower=lower, trans=trans, unitdiag=unit_diagonal)
    if info != 0:
        return _sl.solve_triangular(a, b, trans=trans, lower=lower, unit_diagonal=unit_diagonal)
    return x


def solve_triangular(g, ans, a, b, trans=0, lower=False, unit_diagonal=False):
    """Adjoints of ``scipy.linalg.solve_triangular`` (both at once; ``cupyx.scipy.linalg``'s for
    CuPy arrays).  Batches of matrices (``a`` of shape (..., n, n)) included: ``b`` is one
    vector per matrix when it has one dimension, else matrices (SciPy's rule)."""
    m = xp(a, b)
    sl = _linalg_of(m)
    tr = _trans_code(trans)
    a_ = asarray(a, like=b)
    # op(A) x = b  =>  gb = op(A)^-H g
    G = m.asarray(g)
    X = asarray(ans)
    vec = len(shape(b)) == 1
    if vec:
        G, X = G[..., None], X[..., None]
    solve = _trtrs if m is np and a_.ndim == 2 and G.ndim == 2 else sl.solve_triangular
    if tr == 0:
        gb = solve(a_, G, trans=2, lower=lower, unit_diagonal=unit_diagonal)
    elif tr == 2:
        gb = solve(a_, G, trans=0, lower=lower, unit_diagonal=unit_diagonal)
    else:  # op(A) = A^T, op(A)^H = conj(A)
        gb = cj(solve(a_, cj(G), trans=0, lower=lower, unit_diagonal=unit_diagonal))
    ga = _read_triangle_adjoint(m, gb, X, tr, lower, unit_diagonal, vec)
    if vec:
        gb = gb[..., 0]
    return like(ga, a), like(gb, b)


def _read_triangle_adjoint(m, gb, X, tr, lower, unit_diagonal, vec):
    """A's adjoint in ``solve_triangular``, -gb x^H as op(A)'s, on the triangle it reads (no
    diagonal when it is taken as ones); ``gb`` and ``X`` with a last axis of 1 where ``vec``."""
    if vec and m is np and gb.ndim == 2:
        # one vector: A's adjoint is the read triangle of an outer product, made there only
        u, v = gb[:, 0], -cj(X[:, 0])              # op(A)'s adjoint is -gb x^H = outer(u, v)
        if tr == 1:
            u, v = v, u
        elif tr == 2:
            u, v = cj(v), cj(u)
        return outer_triangle(u, v, lower, 0.0 if unit_diagonal else 1.0)
    gop = gb @ _mH(-X)              # op(A)'s adjoint (the minus on the smaller factor)
    ga = gop if tr == 0 else (_mT(gop) if tr == 1 else _mH(gop))
    return _read_triangle(m, ga, lower, unit_diagonal)


def _read_triangle(m, x, lower, unit_diagonal):
    if m is np and x.ndim == 2:
        return triangle(x, lower, 0.0 if unit_diagonal else 1.0)
    x = m.tril(x) if lower else m.triu(x)
    if unit_diagonal:
        x = x * (1 - m.eye(x.shape[-1], dtype=x.real.dtype))
    return x


def solve_triangular_adjoint_tangent(grad, out, a, b, trans, lower, unit_diagonal, t, which):
    """Tangent of :func:`solve_triangular`'s (ga, gb) (a second derivative) in ``ans``
    (which='out': ga = -gb x^H moves with x) or in ``a`` (op(A)^H gb = G gives d gb =
    -op(A)^-H op(dA)^H gb, dA on the triangle A is read from: the helper at G' = -op(dA)^H gb)."""
    m = xp(a, b)
    a_ = asarray(a, like=b)
    if a_.ndim != 2:
        raise RuleError("the second derivative of scipy.linalg.solve_triangular with a stack of "
                        "matrices is not supported yet",
                        fix="solve one matrix at a time (a loop), or take the second derivative "
                            "by differences of s2sad.grad")
    tr = _trans_code(trans)
    gb = m.asarray(solve_triangular(grad, out, a, b, trans, lower, unit_diagonal)[1])
    T = m.asarray(t)
    if which == "out":
        vec = gb.ndim == 1
        ga = _read_triangle_adjoint(m, gb[:, None] if vec else gb, T[:, None] if vec else T, tr,
                                    lower, unit_diagonal, vec)
        return like(ga, a), like(m.zeros(gb.shape, gb.dtype), b)
    dA = _read_triangle(m, T, lower, unit_diagonal)
    opH = _mH(dA) if tr == 0 else (cj(dA) if tr == 1 else dA)
    return solve_triangular(-(opH @ gb), out, a, b, trans, lower, unit_diagonal)


def cho_factor(g, ans, a, lower=False):
    m = xp(a)
    c = ans[0]
    gc = g[0] if isinstance(g, (tuple, list)) else g
    if is_zero(gc):
        return m.zeros_like(asarray(a))
    if lower:
        return cholesky(m.tril(gc), m.tril(c), a, upper=False)
    return cholesky(m.triu(gc), m.triu(c), a, upper=True)


def cho_solve(g, ans, c_and_lower, b):
    """Adjoints of ``cho_solve((c, lower), b)``: ((gc, None), gb)."""
    import scipy.linalg as sl
    m = xp(b)
    c, lower = c_and_lower
    G = asarray(g)
    X = asarray(ans)
    vec = X.ndim == 1
    if vec:
        G, X = G[:, None], X[:, None]
    gb = sl.cho_solve((c, lower), G)
    gA = -(gb @ _mH(X))
    S = gA + _mH(gA)
    if lower:
        L = m.tril(c)
        gc = m.tril(S @ L)
    else:
        U = m.triu(c)
        gc = m.triu(U @ S)
    if vec:
        gb = gb[:, 0]
    return (like(gc, c), None), like(gb, b)


def _factor_parts(c, lower, dc):
    """(the factor's triangle F and its tangent dF, with A = F F^H (lower) or F^H F (upper),
    and dA)."""
    m = xp(c)
    tri = m.tril if lower else m.triu
    F, dF = tri(asarray(c)), tri(asarray(dc))
    dA = dF @ _mH(F) + F @ _mH(dF) if lower else _mH(dF) @ F + _mH(F) @ dF
    return F, dF, dA


def _factor_adjoint(S, F, lower):
    """The factor's adjoint from the symmetric S = gA + gA^H: tril(S L) or triu(U S)."""
    m = xp(F)
    return m.tril(S @ F) if lower else m.triu(F @ S)


def cho_solve_adjoint_tangent(grad, out, c_and_lower, b, t, which):
    """Tangent of :func:`cho_solve`'s ((gc, None), gb) in ``ans`` (which='out') or in the
    factor (which='c': A = L L^H moves by dA, gb = A^-1 G by -A^-1 dA gb)."""
    import scipy.linalg as sl
    m = xp(b)
    c, lower = c_and_lower
    G, X = asarray(grad), asarray(out)
    vec = X.ndim == 1
    if vec:
        G, X = G[:, None], X[:, None]
    gb = sl.cho_solve((c, lower), G)
    F = (m.tril if lower else m.triu)(asarray(c))
    if which == "out":
        T = asarray(t)
        dgA = -(gb @ _mH(T[:, None] if vec else T))
        dgc = _factor_adjoint(dgA + _mH(dgA), F, lower)
        return (like(dgc, c), None), like(m.zeros(gb[:, 0].shape if vec else gb.shape, gb.dtype),
                                          b)
    dc = t[0] if isinstance(t, (tuple, list)) else t
    F, dF, dA = _factor_parts(c, lower, dc)
    dgb = -sl.cho_solve((c, lower), dA @ gb)
    gA, dgA = -(gb @ _mH(X)), -(dgb @ _mH(X))
    S, dS = gA + _mH(gA), dgA + _mH(dgA)
    dgc = _factor_adjoint(dS, F, lower) + ((m.tril(S @ dF)) if lower else m.triu(dF @ S))
    return (like(dgc, c), None), like(dgb[:, 0] if vec else dgb, b)


def cho_factor_adjoint_tangent(grad, out, a, lower, t):
    """Tangent of :func:`cho_factor`'s adjoint in ``ans`` = (c, lower): the Cholesky adjoint's
    (numpy/linalg.py) on the factor's triangle."""
    m = xp(a)
    c = out[0]
    gc = grad[0] if isinstance(grad, (tuple, list)) else grad
    dc = t[0] if isinstance(t, (tuple, list)) else t
    if is_zero(gc) or is_zero(dc):
        return m.zeros_like(asarray(a))
    tri = m.tril if lower else m.triu
    return cholesky_adjoint_tangent(tri(gc), tri(c), a, not lower, tri(dc))


def block_diag(g, arrs):
    g = asarray(g)
    out = []
    r = c = 0
    for a in arrs:
        s = shape(a)
        rows, cols = (1, 1) if len(s) == 0 else ((1, s[0]) if len(s) == 1 else s)
        piece = g[r:r + rows, c:c + cols]
        r += rows
        c += cols
        out.append(_back(piece.copy(), a) if _has_derivative(a) else None)
    return tuple(out)


def _has_derivative(a):
    if isinstance(a, bool):
        return False
    if isinstance(a, (float, complex)):
        return True
    if isinstance(a, (list, tuple)):
        return True
    dt = getattr(a, "dtype", None)
    return dt is not None and dt.kind in "fc"


def expm(g, A):
    """Adjoint of ``expm``: the upper-right block of expm([[A^H, G], [0, A^H]]) (for CuPy
    arrays, with ``cupyx.scipy.linalg.expm``)."""
    return like(_expm_block(_mH(asarray(A)), g), A)


def expm_tangent(t, A):
    return _expm_block(asarray(A), t)


def _expm_block(X, E):
    """The upper-right block of expm([[X, E], [0, X]]), in the array module of ``X``."""
    m = xp(X)
    n = X.shape[-1]
    E = m.asarray(E)
    M = m.zeros(X.shape[:-2] + (2 * n, 2 * n), dtype=np.result_type(X.dtype, E.dtype))
    M[..., :n, :n] = X
    M[..., n:, n:] = X
    M[..., :n, n:] = E
    return _linalg_of(m).expm(M)[..., :n, n:]


# -- logm, sqrtm: Frechet derivatives -------------------------------------------------------------
def _batched(fn, *arrays):
    """``fn`` on the trailing (n, n) matrices of same-batch arrays, stacked back."""
    first = arrays[0]
    if first.ndim == 2:
        return fn(*arrays)
    batch = first.shape[:-2]
    out = None
    for idx in np.ndindex(*batch):
        r = fn(*[x[idx] for x in arrays])
        if out is None:
            out = np.empty(batch + r.shape, dtype=r.dtype)
        out[idx] = r
    return out


def _result(ans):
    return ans[0] if isinstance(ans, tuple) else ans


def _block_upper(f, X, E):
    """The upper-right block of f([[X, E], [0, X]]): the Frechet derivative L_f(X, E)."""
    n = X.shape[-1]
    dt = np.result_type(X.dtype, E.dtype)
    M = np.zeros((2 * n, 2 * n), dtype=dt)
    M[:n, :n] = X
    M[n:, n:] = X
    M[:n, n:] = E
    return f(M)[:n, n:]


def _logm(M):
    """logm of the block matrix; its "result may be inaccurate" warning, an estimate for the whole
    non-normal block matrix, is not about the block we read (accurate to ~1e-15 in tests)."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return _sl.logm(M)


def logm(g, ans, A):
    """Adjoint of ``logm``: L_log(A^H, G) (the log has real Taylor coefficients, so the adjoint of
    its Frechet derivative at A is the derivative at A^H)."""
    A_ = asarray(A)
    G = asarray(g[0] if isinstance(g, (tuple, list)) else g)
    G = np.broadcast_to(G, A_.shape)
    return like(_batched(lambda X, E: _block_upper(_logm, X, E), _mH(A_), G), A)


def logm_tangent(t, ans, A):
    A_ = asarray(A)
    T = np.broadcast_to(asarray(t), A_.shape)
    r = _batched(lambda X, E: _block_upper(_logm, X, E), A_, T)
    res = _result(ans)
    if np.result_type(res).kind != "c" and r.dtype.kind == "c":
        r = r.real
    return (r, 0.0) if isinstance(ans, tuple) else r


def sqrtm(g, ans, A):
    """Adjoint of ``sqrtm``: with S = sqrtm(A), dS solves S dS + dS S = dA, so gA solves
    S^H Y + Y S^H = G."""
    S = asarray(_result(ans))
    G = asarray(g[0] if isinstance(g, (tuple, list)) else g)
    G = np.broadcast_to(G, S.shape)
    Sh = _mH(S)
    return like(_batched(lambda X, E: _sl.solve_sylvester(X, X, E), Sh, G), A)


def sqrtm_tangent(t, ans, A):
    S = asarray(_result(ans))
    T = np.broadcast_to(asarray(t), S.shape)
    r = _batched(lambda X, E: _sl.solve_sylvester(X, X, E), S, T)
    return (r, 0.0) if isinstance(ans, tuple) else r


# -- Sylvester, Lyapunov, banded solves -----------------------------------------------------------
def solve_sylvester(g, ans, a, b, q):
    """Adjoints of ``solve_sylvester`` (A X + X B = Q), all at once: Y solves A^H Y + Y B^H = G;
    gQ = Y, gA = -Y X^H, gB = -X^H Y."""
    A_, B_, X = asarray(a), asarray(b), asarray(ans)
    Y = _sl.solve_sylvester(_mH(A_), _mH(B_), asarray(g))
    return like(-(Y @ _mH(X)), a), like(-(_mH(X) @ Y), b), like(Y, q)


def sylvester_tangent(t, ans, a, b, which):
    A_, B_, X = asarray(a), asarray(b), asarray(ans)
    T = asarray(t)
    rhs = T if which == "q" else (-(T @ X) if which == "a" else -(X @ T))
    return _sl.solve_sylvester(A_, B_, rhs)


def solve_continuous_lyapunov(g, ans, a, q):
    """Adjoints of ``solve_continuous_lyapunov`` (A X + X A^H = Q): Y solves A^H Y + Y A = G;
    gQ = Y, gA = -(Y X^H + Y^H X)."""
    A_, X = asarray(a), asarray(ans)
    Y = _sl.solve_continuous_lyapunov(_mH(A_), asarray(g))
    return like(-(Y @ _mH(X) + _mH(Y) @ X), a), like(Y, q)


def lyapunov_tangent(t, ans, a, which):
    A_, X = asarray(a), asarray(ans)
    T = asarray(t)
    rhs = T if which == "q" else -(T @ X + X @ _mH(T))
    return _sl.solve_continuous_lyapunov(A_, rhs)


def _band_index(l, u, n):
    i, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    r = u + i - j
    ok = (r >= 0) & (r < l + u + 1)
    return r, j, ok


def _band_to_dense(ab, l, u, n):
    """The (n, n) matrix whose band ``ab`` holds: A[i, j] = ab[u + i - j, j]."""
    r, j, ok = _band_index(l, u, n)
    A_ = np.zeros((n, n), dtype=ab.dtype)
    A_[ok] = ab[r[ok], j[ok]]
    return A_


def _dense_to_band(M, l, u, n):
    r, j, ok = _band_index(l, u, n)
    ab = np.zeros((l + u + 1, n), dtype=M.dtype)
    ab[r[ok], j[ok]] = M[ok]
    return ab


def solve_banded(g, ans, l_and_u, ab, b):
    """Adjoints of ``solve_banded((l, u), ab, b)`` (both at once): gb = A^-H g solved in band form
    (A^H has bands (u, l)), gA = -gb x^H kept on the band (the unused corners of ``ab`` get 0)."""
    l, u = (int(v) for v in l_and_u)
    AB = asarray(ab)
    n = AB.shape[-1]
    A_ = _band_to_dense(AB, l, u, n)
    abh = _dense_to_band(_mH(A_), u, l, n)
    G = asarray(g)
    X = asarray(ans)
    gb = _sl.solve_banded((u, l), abh, G)
    gb2, X2 = (gb[:, None], X[:, None]) if X.ndim == 1 else (gb, X)
    gA = -(gb2 @ _mH(X2))
    return like(_dense_to_band(gA, l, u, n), ab), like(gb, b)


def solve_banded_tangent(t, ans, l_and_u, ab, b, which):
    l, u = (int(v) for v in l_and_u)
    T = asarray(t)
    if which == "b":
        return _sl.solve_banded((l, u), asarray(ab), T)
    X = asarray(ans)
    n = asarray(ab).shape[-1]
    dA = _band_to_dense(T, l, u, n)
    return _sl.solve_banded((l, u), asarray(ab), -(dA @ X))


export(globals())
# second derivatives: forward mode over a reverse sweep that called the helper above
defrule(solve_triangular, "grad, out, a, b, trans=0, lower=False, unit_diagonal=False, /",
        jvp={"grad": "_adj.solve_triangular(t, out, a, b, trans, lower, unit_diagonal)",
             **{w: f"_adj.solve_triangular_adjoint_tangent(grad, out, a, b, trans, lower, "
                   f"unit_diagonal, t, {w!r})" for w in ("out", "a")}}, kind="any", ns=A)
defrule(cho_solve, "grad, out, c_and_lower, b, /",
        jvp={"grad": "_adj.cho_solve(t, out, c_and_lower, b)",
             "out": "_adj.cho_solve_adjoint_tangent(grad, out, c_and_lower, b, t, 'out')",
             "c_and_lower": "_adj.cho_solve_adjoint_tangent(grad, out, c_and_lower, b, t, 'c')"},
        kind="any", ns=A)
defrule(cho_factor, "grad, out, a, lower=False, /",
        jvp={"grad": "_adj.cho_factor(t, out, a, lower)",
             "out": "_adj.cho_factor_adjoint_tangent(grad, out, a, lower, t)"}, kind="any", ns=A)
