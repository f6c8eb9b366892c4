"""``scipy.linalg``: triangular and Cholesky solves, ``block_diag``, ``expm``, and the functions
that share the NumPy table's helpers (``cholesky``, ``inv``, ``det``, ``solve``).

Loaded only once the user's code has imported SciPy.
"""
import numpy as np
import scipy.linalg as _sl

from ..adjoints import A, _mH, asarray, cj, export, is_zero, like, shape, xp
from ..numpy.concat_permute import _back
from ..numpy.linalg import cholesky
from ..registry import defrule

A = dict(A, _sl=_sl)

_NOWRITE = {"overwrite_a": False, "overwrite_b": False}
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


# -- helpers the templates call --------------------------------------------------------------------
def _trans_code(trans):
    return {0: 0, 1: 1, 2: 2, "N": 0, "T": 1, "C": 2, "n": 0, "t": 1, "c": 2}[trans]


def solve_triangular(g, ans, a, b, trans=0, lower=False, unit_diagonal=False):
    """Adjoints of ``scipy.linalg.solve_triangular`` (both at once)."""
    import scipy.linalg as sl
    tr = _trans_code(trans)
    a_ = asarray(a)
    # op(A) x = b  =>  gb = op(A)^-H g
    G = asarray(g)
    X = asarray(ans)
    vec = X.ndim == 1
    if vec:
        G, X = G[:, None], X[:, None]
    if tr == 0:
        gb = sl.solve_triangular(a_, G, trans=2, lower=lower, unit_diagonal=unit_diagonal)
    elif tr == 2:
        gb = sl.solve_triangular(a_, G, trans=0, lower=lower, unit_diagonal=unit_diagonal)
    else:  # op(A) = A^T, op(A)^H = conj(A)
        gb = cj(sl.solve_triangular(a_, cj(G), trans=0, lower=lower,
                                    unit_diagonal=unit_diagonal))
    gop = -(gb @ _mH(X))                      # gradient w.r.t. op(A)
    ga = gop if tr == 0 else (gop.T if tr == 1 else _mH(gop))
    m = xp(a_)
    ga = m.tril(ga) if lower else m.triu(ga)
    if unit_diagonal:
        ga = ga - m.diag(m.diagonal(ga))
    if vec:
        gb = gb[:, 0]
    return like(ga, a), like(gb, b)


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
    """Adjoint of ``expm``: the upper-right block of expm([[A^H, G], [0, A^H]])."""
    import scipy.linalg as sl
    A_ = asarray(A)
    n = A_.shape[-1]
    G = asarray(g)
    dt = np.result_type(A_.dtype, G.dtype)
    M = np.zeros(A_.shape[:-2] + (2 * n, 2 * n), dtype=dt)
    M[..., :n, :n] = _mH(A_)
    M[..., n:, n:] = _mH(A_)
    M[..., :n, n:] = G
    return like(sl.expm(M)[..., :n, n:], A)


def expm_tangent(t, A):
    import scipy.linalg as sl
    A_ = asarray(A)
    n = A_.shape[-1]
    T = asarray(t)
    dt = np.result_type(A_.dtype, T.dtype)
    M = np.zeros(A_.shape[:-2] + (2 * n, 2 * n), dtype=dt)
    M[..., :n, :n] = A_
    M[..., n:, n:] = A_
    M[..., :n, n:] = T
    return sl.expm(M)[..., :n, n:]


export(globals())
