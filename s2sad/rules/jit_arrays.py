"""Rearrangements and scans of arrays for derivatives compiled with ``jit=True``: the adjoints of
``np.roll``, ``np.tile``, ``np.repeat``, ``np.cumprod`` and ``np.polyval`` (``_adj.*``), and
numba versions of ``np.roll``, ``np.flip``, ``np.repeat`` and ``np.cumprod`` that take the
``axis`` argument numba's own do not, and of ``np.tile`` (one integer ``reps``) and
``np.polyval``, which numba lacks: bound for NumPy's in the generated module, so the user's
``np.roll(x, 1, axis=0)`` and the templates' ``np.flip(g, axis)`` compile.  (``np.vstack`` and
``np.hstack`` of a list: ``jit_substitutes`` and ``rules/jit.py``, beside concatenate's.)

Each follows its Python twin in ``rules/numpy`` for real float arrays and the argument forms
written here; another form is a typing error, and the derivative runs as Python with the
fallback warning.  Imports numba: only ``jit=True`` imports this module.
"""
import numpy as np
from numba.core import types as nt
from numba.cpython.unsafe.tuple import tuple_setitem
from numba.extending import overload, register_jitable

from ..runtime.jit import REFUSED
from .jit_reductions import _split, _value


def _stub(name):
    def stub(*args, **kwargs):
        raise NotImplementedError(f"s2sad: {name} runs inside numba-compiled derivatives only")
    stub.__name__ = stub.__qualname__ = name
    return stub


roll, tile, repeat, cumprod, polyval, polyval_tangent = (
    _stub(n) for n in ("roll", "tile", "repeat", "cumprod", "polyval", "polyval_tangent"))
np_roll, np_flip, np_repeat, np_tile, np_polyval, np_cumprod = (
    _stub(n) for n in ("np.roll", "np.flip", "np.repeat", "np.tile", "np.polyval",
                       "np.cumprod"))


def _real_array(t):
    return isinstance(t, nt.Array) and isinstance(t.dtype, nt.Float)


def _none(t):
    return t is None or isinstance(t, (nt.NoneType, nt.Omitted))


def _int(t):
    return isinstance(t, (nt.Integer, int)) and not isinstance(t, nt.Boolean)


@register_jitable
def _rows(a, axis):
    """``a`` as a C-ordered (outer, n, inner) array along ``axis`` (None: the flattened
    array, (1, size, 1))."""
    b = np.ascontiguousarray(a)
    if axis is None:
        return b.reshape((1, b.size, 1))
    return b.reshape(_split(b.shape, axis % b.ndim))


@register_jitable
def _rolled(a, shift, axis):
    """``np.roll(a, shift, axis)`` for one integer shift, a new C-ordered array."""
    b = _rows(a, axis)
    n = b.shape[1]
    out = np.empty_like(b)
    if n == 0:
        return out.reshape(a.shape)
    s = shift % n
    for i in range(b.shape[0]):
        for k in range(n):
            out[i, (k + s) % n, :] = b[i, k, :]
    return out.reshape(a.shape)


# -- np.roll, np.flip, np.repeat with their axis -------------------------------------------------
@overload(np_roll)
def _np_roll(a, shift, axis=None):
    if isinstance(a, nt.Array) and _int(shift) and (_none(axis) or _int(axis)):
        return lambda a, shift, axis=None: _rolled(a, shift, axis)


@overload(np_flip)
def _np_flip(m, axis=None):
    if not isinstance(m, nt.Array) or not (_none(axis) or _int(axis)):
        return None

    def impl(m, axis=None):
        return _rows(m, axis)[:, ::-1, :].copy().reshape(m.shape)
    return impl


@overload(np_repeat)
def _np_repeat(a, repeats, axis=None):
    if _none(axis) and not _int(repeats):       # (an array of repeats: numba's own)
        return lambda a, repeats, axis=None: np.repeat(a, repeats)
    if not (isinstance(a, nt.Array) and _int(repeats) and (_none(axis) or _int(axis))):
        return None

    def impl(a, repeats, axis=None):
        if repeats < 0:
            raise ValueError("negative dimensions are not allowed")
        b = _rows(a, axis)
        out = np.empty((b.shape[0], b.shape[1], repeats, b.shape[2]), a.dtype)
        for k in range(repeats):
            out[:, :, k, :] = b
        if axis is None:
            return out.reshape(out.size)
        ax = axis % a.ndim
        return out.reshape(tuple_setitem(a.shape, ax, a.shape[ax] * repeats))
    return impl


@overload(np_tile)
def _np_tile(A, reps):
    """``np.tile`` with one integer ``reps``: copies along the last axis."""
    if not (isinstance(A, nt.Array) and A.ndim >= 1 and _int(reps)):
        return None

    def impl(A, reps):
        n = A.shape[-1]
        b = np.ascontiguousarray(A).reshape((A.size // max(n, 1), 1, n))
        out = np.empty((b.shape[0], max(reps, 0), n), A.dtype)
        for k in range(max(reps, 0)):
            out[:, k, :] = b[:, 0, :]
        return out.reshape(tuple_setitem(A.shape, A.ndim - 1, n * max(reps, 0)))
    return impl


@overload(np_cumprod)
def _np_cumprod(a, axis=None, dtype=None, out=None):
    """``np.cumprod`` along one axis (numba's own: the flattened array only)."""
    if not (_none(dtype) and _none(out)):
        return None
    if _none(axis):
        return lambda a, axis=None, dtype=None, out=None: np.cumprod(a)
    if not (_real_array(a) and _int(axis)):
        return None

    def impl(a, axis=None, dtype=None, out=None):
        b = _rows(a, axis)
        r = b.copy()
        for k in range(1, b.shape[1]):
            r[:, k, :] = r[:, k - 1, :] * b[:, k, :]
        return r.reshape(a.shape)
    return impl


@overload(np_polyval)
def _np_polyval(p, x):
    """Horner's rule, as NumPy's ``polyval`` for a 1-d ``p``."""
    if not (isinstance(p, nt.Array) and p.ndim == 1 and
            (isinstance(x, nt.Array) or isinstance(x, (nt.Float, nt.Integer)))):
        return None

    def impl(p, x):
        r = 0.0 * x
        for k in range(p.shape[0]):
            r = r * x + p[k]
        return r
    return impl


# -- the adjoints ---------------------------------------------------------------------------------
@overload(roll)
def _roll(g, a, shift, axis=None):
    """``np.roll`` back by ``-shift`` (one integer shift; axis None or one integer)."""
    if _real_array(a) and _real_array(g) and _int(shift) and (_none(axis) or _int(axis)):
        return lambda g, a, shift, axis=None: _rolled(g, -shift, axis)


@overload(tile)
def _tile(g, A, reps):
    """The sum of g's ``reps`` copies of A along A's last axis (one integer ``reps``)."""
    if not (_real_array(A) and _real_array(g) and _int(reps) and A.ndim >= 1 and
            g.ndim == A.ndim):
        return None

    def impl(g, A, reps):
        n = A.shape[-1]
        G = np.ascontiguousarray(g).reshape((A.size // max(n, 1), reps, n))
        return G.sum(axis=1).reshape(A.shape)
    return impl


@overload(repeat)
def _repeat(g, a, repeats, axis=None):
    """The sum of each item's ``repeats`` copies (one integer; axis None or one integer)."""
    if not (_real_array(a) and _real_array(g) and _int(repeats) and
            (_none(axis) or _int(axis))):
        return None

    def impl(g, a, repeats, axis=None):
        b = _rows(a, axis)
        G = np.ascontiguousarray(g).reshape((b.shape[0], b.shape[1], repeats, b.shape[2]))
        return G.sum(axis=2).reshape(a.shape)
    return impl


@overload(cumprod)
def _cumprod(g, ans, a, axis=None):
    """Along each row: grad_i = prod(a_j, j < i) * S_i with S_i = g_i + a_{i+1} S_{i+1}, the
    exact adjoint (zeros in ``a`` too) in one pass each way, no division."""
    if not (_real_array(a) and _real_array(g) and (_none(axis) or _int(axis))):
        return None
    dt = a.dtype

    def impl(g, ans, a, axis=None):
        b = _rows(a, axis)
        G = np.ascontiguousarray(g).reshape(b.shape)
        out = np.empty(b.shape, dt)
        n = b.shape[1]
        for i in range(b.shape[0]):
            for j in range(b.shape[2]):
                s = 0.0
                for k in range(n - 1, -1, -1):
                    s = G[i, k, j] + (b[i, k + 1, j] * s if k + 1 < n else 0.0)
                    out[i, k, j] = s
                p = 1.0
                for k in range(n):
                    out[i, k, j] *= p
                    p *= b[i, k, j]
        return out.reshape(a.shape)
    return impl


def _poly_args(p, x):
    return _real_array(p) and p.ndim == 1 and (_real_array(x) or isinstance(x, nt.Float))


@register_jitable
def _derivative_at(p, x):
    """p'(x) by Horner's rule (0 for a constant polynomial)."""
    n = p.shape[0] - 1
    r = 0.0 * x
    for k in range(n):
        r = r * x + p[k] * (n - k)
    return r


@overload(polyval, prefer_literal=True)
def _polyval(g, p, x, which="p"):
    """``p[k]`` gets sum(g x^(N-k)); ``x`` gets g p'(x)."""
    w = _value(which)
    if not (_poly_args(p, x) and (isinstance(g, nt.Float) or _real_array(g)) and
            w in ("p", "x")):
        return None
    if w == "x":
        return lambda g, p, x, which="p": g * _derivative_at(p, x)
    dt = p.dtype
    if isinstance(x, nt.Float):
        def at_a_number(g, p, x, which="p"):
            n = p.shape[0]
            out = np.empty(n, dt)
            pw = 1.0
            for k in range(n - 1, -1, -1):
                out[k] = g * pw
                pw = pw * x
            return out
        return at_a_number

    def impl(g, p, x, which="p"):
        n = p.shape[0]
        out = np.empty(n, dt)
        pw = np.ones(x.shape, dt)
        gx = g + np.zeros(x.shape, dt)
        for k in range(n - 1, -1, -1):
            out[k] = np.sum(gx * pw)
            pw = pw * x
        return out
    return impl


@overload(polyval_tangent, prefer_literal=True)
def _polyval_tangent(t, p, x, which="p"):
    w = _value(which)
    if not (_poly_args(p, x) and w in ("p", "x")):
        return None
    if w == "x":
        return lambda t, p, x, which="p": t * _derivative_at(p, x)
    if _real_array(t) and t.ndim == 1:
        return lambda t, p, x, which="p": np_polyval(t, x)


def versions():
    """{NumPy function: its numba version}, for the names holding NumPy in generated code."""
    return {np.roll: np_roll, np.flip: np_flip, np.repeat: np_repeat, np.tile: np_tile,
            np.polyval: np_polyval, np.cumprod: np_cumprod, np.interp: np_interp,
            np.inner: np_inner}


# -- np.interp ------------------------------------------------------------------------------------
interp, interp_tangent, tangent_as = (_stub(n) for n in ("interp", "interp_tangent",
                                                         "tangent_as"))


def _knots(t):
    """xp or fp: a 1-d float array, or a list of floats (a literal in the user's call)."""
    return (_real_array(t) and t.ndim == 1) or \
        (isinstance(t, nt.List) and isinstance(t.dtype, (nt.Float, nt.Integer)))


def _interp_args(x, xp, fp, left, right, which):
    w = _value(which)
    ok = (_real_array(x) and x.ndim == 1) or isinstance(x, nt.Float)
    ends = all(_none(b) or isinstance(b, (nt.Float, nt.Integer)) for b in (left, right))
    return w if ok and _knots(xp) and _knots(fp) and ends and \
        w in ("x", "xp", "fp", "left", "right") else None


@register_jitable
def _segment(P, xv):
    """Where ``xv`` falls among the knots ``P`` (as ``rules.numpy.signal._interp_setup``): the
    segment's ends j, j1, the weight of j1, and whether xv is below / above the knots."""
    n = P.shape[0]
    j = min(max(np.searchsorted(P, xv, side="right") - 1, 0), max(n - 2, 0))
    j1 = min(j + 1, n - 1)
    dx = P[j1] - P[j]
    w = 0.0 if dx == 0 else (xv - P[j]) / dx
    return j, j1, w, dx, xv < P[0], xv > P[n - 1]


@register_jitable
def _segments(xs, xp, fp):
    """Each point of ``xs`` among the knots (``_segment``): the arrays of its segment's ends
    j, j1, the weight w of j1, the segment's slope (0 beyond the knots or on a zero-width
    segment), whether it is below / above the knots; and the number of knots."""
    P = np.asarray(xp, dtype=np.float64)
    F = np.asarray(fp, dtype=np.float64)
    m = xs.shape[0]
    J = np.empty(m, np.intp)
    J1 = np.empty(m, np.intp)
    W = np.empty(m)
    S = np.empty(m)
    below = np.empty(m, np.bool_)
    above = np.empty(m, np.bool_)
    for i in range(m):
        j, j1, w, dx, lo, hi = _segment(P, xs[i])
        J[i], J1[i], W[i], below[i], above[i] = j, j1, w, lo, hi
        S[i] = (F[j1] - F[j]) / dx if not (lo or hi) and dx != 0 else 0.0
    return J, J1, W, S, below, above, P.shape[0]


@register_jitable
def _adjoint_x(g, J, J1, W, S, below, above, n, left, right):
    return g * S


@register_jitable
def _adjoint_fp(g, J, J1, W, S, below, above, n, left, right):
    out = np.zeros(n)
    for i in range(g.shape[0]):
        if not (below[i] or above[i]):
            out[J[i]] += g[i] * (1 - W[i])
            out[J1[i]] += g[i] * W[i]
        if below[i] and left is None:
            out[0] += g[i]
        if above[i] and right is None:
            out[n - 1] += g[i]
    return out


@register_jitable
def _adjoint_xp(g, J, J1, W, S, below, above, n, left, right):
    out = np.zeros(n)
    for i in range(g.shape[0]):
        out[J[i]] -= g[i] * S[i] * (1 - W[i])
        out[J1[i]] -= g[i] * S[i] * W[i]
    return out


@register_jitable
def _adjoint_left(g, J, J1, W, S, below, above, n, left, right):
    return np.sum(np.where(below, g, 0.0))


@register_jitable
def _adjoint_right(g, J, J1, W, S, below, above, n, left, right):
    return np.sum(np.where(above, g, 0.0))


_ADJOINTS = {"x": _adjoint_x, "fp": _adjoint_fp, "xp": _adjoint_xp, "left": _adjoint_left,
             "right": _adjoint_right}


def np_interp(x, xp, fp, left=None, right=None, period=None):
    raise NotImplementedError


@overload(np_interp)
def _np_interp(x, xp, fp, left=None, right=None, period=None):
    """``np.interp`` with ``left=``/``right=`` (numba's own takes neither): numba's, then the
    given end values where x is beyond the knots."""
    if not _none(period):
        return None
    if _none(left) and _none(right):
        return lambda x, xp, fp, left=None, right=None, period=None: np.interp(x, xp, fp)
    if not (isinstance(x, nt.Array) and x.ndim == 1 and
            all(_none(b) or isinstance(b, (nt.Float, nt.Integer)) for b in (left, right))):
        return None

    def impl(x, xp, fp, left=None, right=None, period=None):
        r = np.interp(x, xp, fp)
        P = np.asarray(xp)
        for i in range(x.shape[0]):
            if left is not None and x[i] < P[0]:
                r[i] = left
            if right is not None and x[i] > P[-1]:
                r[i] = right
        return r
    return impl


@overload(interp, prefer_literal=True)
def _interp(g, x, xp, fp, left=None, right=None, which="fp"):
    """The adjoint for ``which`` ('x', 'xp', 'fp', 'left', 'right', as
    ``rules.numpy.signal.interp``), chosen when the derivative compiles."""
    w = _interp_args(x, xp, fp, left, right, which)
    if w is None or not (isinstance(g, nt.Float) or (_real_array(g) and g.ndim == 1)):
        return None
    number = isinstance(x, nt.Float)
    adjoint = _ADJOINTS[w]

    def impl(g, x, xp, fp, left=None, right=None, which="fp"):
        xs = np.full(1, x) if number else np.asarray(x)
        return adjoint(np.full(xs.shape[0], 1.0) * g, *_segments(xs, xp, fp), left, right)
    if w == "x" and number:                                 # (a number's adjoint: a number)
        run = register_jitable(impl)
        return lambda g, x, xp, fp, left=None, right=None, which="fp": \
            run(g, x, xp, fp, left, right, which)[0]
    return impl


@register_jitable
def _tangent_x(t, i, j, j1, w, slope, below, above, inside, n, left, right):
    return slope * _item(t, i)


@register_jitable
def _tangent_fp(t, i, j, j1, w, slope, below, above, inside, n, left, right):
    r = (1 - w) * t[j] + w * t[j1] if inside else 0.0
    if below and left is None:
        r += t[0]
    if above and right is None:
        r += t[n - 1]
    return r


@register_jitable
def _tangent_xp(t, i, j, j1, w, slope, below, above, inside, n, left, right):
    return -slope * ((1 - w) * t[j] + w * t[j1])


@register_jitable
def _tangent_left(t, i, j, j1, w, slope, below, above, inside, n, left, right):
    return t if below else 0.0 * t


@register_jitable
def _tangent_right(t, i, j, j1, w, slope, below, above, inside, n, left, right):
    return t if above else 0.0 * t


_TANGENTS = {"x": _tangent_x, "fp": _tangent_fp, "xp": _tangent_xp, "left": _tangent_left,
             "right": _tangent_right}


@overload(interp_tangent, prefer_literal=True)
def _interp_tangent(t, x, xp, fp, left=None, right=None, which="fp"):
    """The tangent through ``which`` at each point of x (``rules.numpy.signal.interp_tangent``):
    the knots' weights times t, the slope times t, or t where x is beyond an end."""
    w = _interp_args(x, xp, fp, left, right, which)
    if w is None or not (isinstance(t, nt.Float) or (_real_array(t) and t.ndim == 1)):
        return None
    number = isinstance(x, nt.Float)
    point = _TANGENTS[w]

    def impl(t, x, xp, fp, left=None, right=None, which="fp"):
        xs = np.full(1, x) if number else np.asarray(x)
        J, J1, W, S, below, above, n = _segments(xs, xp, fp)
        out = np.zeros(xs.shape[0])
        for i in range(xs.shape[0]):
            out[i] = point(t, i, J[i], J1[i], W[i], S[i], below[i], above[i],
                           not (below[i] or above[i]), n, left, right)
        return out
    if number:
        run = register_jitable(impl)
        return lambda t, x, xp, fp, left=None, right=None, which="fp": \
            run(t, x, xp, fp, left, right, which)[0]
    return impl


def _item(t, i):
    raise NotImplementedError


@overload(_item)
def _item_ov(t, i):
    """t[i] of an array, t itself of a number."""
    if isinstance(t, nt.Array):
        return lambda t, i: t[i]
    return lambda t, i: t


@overload(tangent_as)
def _tangent_as(t, ans):
    """``rules.adjoints.tangent_as``: float64 tangents of float64 outputs, as they are."""
    if isinstance(t, (nt.Float, nt.Array)) and isinstance(ans, (nt.Float, nt.Array)):
        return lambda t, ans: t


# -- np.trapezoid of a 1-d array ---------------------------------------------------------------
trapezoid, trapezoid_tangent = _stub("trapezoid"), _stub("trapezoid_tangent")


def _trap_args(y, x, dx, axis, which):
    """A 1-d float ``y`` (axis 0 or -1), ``x`` None or a 1-d float array, ``dx`` a number."""
    w = _value(which)
    ax = _value(axis)
    return w if (_real_array(y) and y.ndim == 1 and (_none(x) or (_real_array(x) and
                                                                   x.ndim == 1)) and
                 (isinstance(dx, (nt.Float, nt.Integer, float, int)) or
                  isinstance(dx, nt.Omitted)) and ax in (0, -1) and
                 w in ("y", "x", "dx")) else None


@register_jitable
def _steps(y, x, dx):
    """The widths d_k of the trapezoids: diff(x), or dx each (NumPy's error for x of another
    length than y)."""
    n = y.shape[0]
    if x is None:
        return np.full(max(n - 1, 0), 1.0) * dx
    if x.shape[0] != n:
        raise ValueError("operands could not be broadcast together")
    return x[1:] - x[:-1]


@overload(trapezoid, prefer_literal=True)
def _trapezoid(g, y, x=None, dx=1.0, axis=-1, which="y"):
    """``rules.numpy.signal.trapezoid`` for a 1-d ``y``: y gets g (d_{k-1} + d_k) / 2, x gets
    diff's adjoint of g (y_k + y_{k+1}) / 2, dx gets g sum((y_k + y_{k+1}) / 2)."""
    w = _trap_args(y, x, dx, axis, which)
    if w is None or not isinstance(g, nt.Float) or (w == "x" and _none(x)):
        return None
    if w == "y":
        def wrt_y(g, y, x=None, dx=1.0, axis=-1, which="y"):
            d = _steps(y, x, dx)
            out = np.zeros(y.shape[0])
            for k in range(d.shape[0]):
                out[k] += g * d[k] / 2
                out[k + 1] += g * d[k] / 2
            return out
        return wrt_y
    if w == "dx":
        return lambda g, y, x=None, dx=1.0, axis=-1, which="y": \
            g * np.sum((y[1:] + y[:-1]) / 2)

    def wrt_x(g, y, x=None, dx=1.0, axis=-1, which="y"):
        _steps(y, x, dx)
        out = np.zeros(x.shape[0])
        for k in range(x.shape[0] - 1):
            gd = g * (y[k] + y[k + 1]) / 2
            out[k + 1] += gd
            out[k] -= gd
        return out
    return wrt_x


@overload(trapezoid_tangent, prefer_literal=True)
def _trapezoid_tangent(t, y, x=None, dx=1.0, axis=-1, which="y"):
    w = _trap_args(y, x, dx, axis, which)
    if w is None or (w == "x" and _none(x)):
        return None
    if w == "y" and _real_array(t) and t.ndim == 1:
        return lambda t, y, x=None, dx=1.0, axis=-1, which="y": \
            np.sum(_steps(y, x, dx) * (t[1:] + t[:-1]) / 2)
    if w == "dx" and isinstance(t, (nt.Float, nt.Integer)):
        return lambda t, y, x=None, dx=1.0, axis=-1, which="y": \
            t * np.sum((y[1:] + y[:-1]) / 2)
    if w == "x" and _real_array(t) and t.ndim == 1:
        return lambda t, y, x=None, dx=1.0, axis=-1, which="y": \
            np.sum((t[1:] - t[:-1]) * (y[1:] + y[:-1]) / 2)


# -- np.linalg.matrix_power of a real matrix --------------------------------------------------
matrix_power, matrix_power_tangent = _stub("matrix_power"), _stub("matrix_power_tangent")


@register_jitable
def _powers(B, k):
    """[I, B, B^2, ..., B^(k-1)] of a C-ordered square matrix."""
    pows = [np.eye(B.shape[0])]
    for i in range(1, k):
        pows.append(np.ascontiguousarray(pows[i - 1] @ B))
    return pows


@overload(matrix_power)
def _matrix_power(g, a, n):
    """sum_k (A^T)^k G (A^T)^(n-1-k); for n < 0 through B = inv(A), gA = -B^T gB B^T (as
    ``rules.numpy.linalg.matrix_power``, real matrices)."""
    if not (_real_array(a) and a.ndim == 2 and _real_array(g) and g.ndim == 2 and _int(n)):
        return None

    def impl(g, a, n):
        if n == 0:
            return np.zeros(a.shape)
        A = np.ascontiguousarray(a)
        Bt = np.ascontiguousarray((np.linalg.inv(A) if n < 0 else A).T)
        k = abs(n)
        pows = _powers(Bt, k)
        G = np.ascontiguousarray(g)
        gB = np.zeros(a.shape)
        for i in range(k):
            gB += pows[i] @ G @ pows[k - 1 - i]
        if n < 0:
            gB = -(Bt @ gB @ Bt)
        return gB
    return impl


@overload(matrix_power_tangent)
def _matrix_power_tangent(t, a, n):
    if not (_real_array(a) and a.ndim == 2 and _real_array(t) and t.ndim == 2 and _int(n)):
        return None

    def impl(t, a, n):
        if n == 0:
            return np.zeros(a.shape)
        A = np.ascontiguousarray(a)
        B = np.ascontiguousarray(np.linalg.inv(A)) if n < 0 else A
        T = np.ascontiguousarray(t)
        if n < 0:
            T = -(B @ T @ B)
        k = abs(n)
        pows = _powers(B, k)
        r = np.zeros(a.shape)
        for i in range(k):
            r += pows[i] @ T @ pows[k - 1 - i]
        return r
    return impl


# -- np.linalg.eigh of a real symmetric matrix ------------------------------------------------
eigh = _stub("eigh")


@overload(eigh, prefer_literal=True)
def _eigh(g, ans, a, UPLO="L"):
    """V (diag(gw) + F o (V^T gV)) V^T, symmetrised, onto the triangle LAPACK read (twice off the
    diagonal), F_ij = 1 / (w_j - w_i) off the diagonal: ``rules.numpy.linalg.eigh`` for one real
    matrix (distinct eigenvalues assumed there too)."""
    uplo = _value(UPLO)
    if not (_real_array(a) and a.ndim == 2 and uplo in ("L", "U", "l", "u") and
            isinstance(g, nt.BaseTuple) and len(g.types) == 2 and
            all(_real_array(t) for t in g.types) and g.types[0].ndim == 1 and
            g.types[1].ndim == 2 and isinstance(ans, nt.BaseTuple)):
        return None
    lower = uplo in ("L", "l")

    def impl(g, ans, a, UPLO="L"):
        w, v = ans
        gw, gv = g
        n = w.shape[0]
        vt = np.ascontiguousarray(v.T)
        P = vt @ np.ascontiguousarray(gv)
        inner = np.zeros((n, n))
        for i in range(n):
            for j in range(n):
                if i == j:
                    inner[i, j] = gw[i]
                elif P[i, j] != 0.0:            # (no cotangent: no term, whatever the gap)
                    if w[j] == w[i]:
                        raise ValueError(REFUSED)   # (the Python rule decides)
                    inner[i, j] = P[i, j] / (w[j] - w[i])
        S = np.ascontiguousarray(v) @ inner @ vt
        out = np.zeros((n, n))
        for i in range(n):
            for j in range(n):
                if i == j:
                    out[i, i] = S[i, i]
                elif (i > j) == lower:
                    out[i, j] = S[i, j] + S[j, i]       # (2 x the symmetrised S)
        return out
    return impl


# -- np.sinc, np.inner and np.convolve of vectors, np.take and np.take_along_axis of a vector ------
sinc, inner, convolve, take, take_along_axis = (
    _stub(n) for n in ("sinc", "inner", "convolve", "take", "take_along_axis"))


@overload(sinc)
def _sinc(x):
    """The normalized sinc's derivative: (cos(pi x) - sinc(x)) / x, 0 at x = 0."""
    if isinstance(x, nt.Float):
        return lambda x: 0.0 if x == 0 else (np.cos(np.pi * x) - np.sinc(x)) / x
    if _real_array(x):
        def impl(x):
            safe = np.where(x == 0, 1.0, x)
            return np.where(x == 0, 0.0, (np.cos(np.pi * safe) - np.sinc(safe)) / safe)
        return impl


def np_inner(a, b):
    raise NotImplementedError


@overload(np_inner)
def _np_inner(a, b):
    """np.inner of two real vectors (numba has no np.inner)."""
    if _real_array(a) and _real_array(b) and a.ndim == 1 and b.ndim == 1:
        def impl(a, b):
            if a.shape[0] != b.shape[0]:
                raise ValueError("shapes not aligned")
            return np.dot(np.ascontiguousarray(a), np.ascontiguousarray(b))
        return impl


@overload(inner, prefer_literal=True)
def _inner(g, a, b, which):
    """np.inner of two vectors: g times the other."""
    k = _value(which)
    if _real_array(a) and _real_array(b) and a.ndim == 1 and b.ndim == 1 and \
            isinstance(g, nt.Float) and k in (0, 1):
        if k == 0:
            return lambda g, a, b, which: g * b
        return lambda g, a, b, which: g * a


@register_jitable
def _correlate_valid(f, k):
    """``np.correlate(f, k, 'valid')`` of real vectors, len(f) >= len(k)."""
    n = f.shape[0] - k.shape[0] + 1
    out = np.zeros(max(n, 0))
    for i in range(n):
        s = 0.0
        for j in range(k.shape[0]):
            s += f[i + j] * k[j]
        out[i] = s
    return out


@overload(convolve, prefer_literal=True)
def _convolve(g, a, v, mode="full", which=0):
    """Mode 'full' of two vectors: a gets correlate(g, v, 'valid'), v correlate(g, a, 'valid')."""
    m = _value(mode)
    k = _value(which)
    if not (_real_array(a) and _real_array(v) and a.ndim == 1 and v.ndim == 1 and
            _real_array(g) and g.ndim == 1 and m in ("full", 2) and k in (0, 1)):
        return None
    if k == 0:
        return lambda g, a, v, mode="full", which=0: _correlate_valid(g, v.astype(np.float64))
    return lambda g, a, v, mode="full", which=0: _correlate_valid(g, a.astype(np.float64))


@register_jitable
def _scatter_back(g, n, dt, indices):
    """Zeros of length ``n`` with each ``g[k]`` added at ``indices[k]`` (negative ones from the
    end; repeated ones add up): the adjoint of a gather from a vector."""
    out = np.zeros(n, dt)
    for k in range(len(indices)):
        out[indices[k] % n] += g[k]
    return out


@overload(take, prefer_literal=True)
def _take(g, a, indices, axis=None, mode="raise"):
    """A vector's items at integer indices (mode 'raise', negative ones from the end): g added
    back at each index (repeated ones add up)."""
    md = _value(mode)
    idx_ok = (isinstance(indices, nt.Array) and isinstance(indices.dtype, nt.Integer) and
              indices.ndim == 1) or (isinstance(indices, nt.List) and
                                      isinstance(indices.dtype, nt.Integer))
    if not (_real_array(a) and a.ndim == 1 and _none(axis) and md == "raise" and idx_ok and
            _real_array(g) and g.ndim == 1):
        return None

    return lambda g, a, indices, axis=None, mode="raise": \
        _scatter_back(g, a.shape[0], a.dtype, indices)


@overload(take_along_axis, prefer_literal=True)
def _take_along_axis(g, arr, indices, axis=-1):
    """Of a vector (axis 0 or -1): g added back at each index."""
    ax = _value(axis)
    if not (_real_array(arr) and arr.ndim == 1 and isinstance(indices, nt.Array) and
            isinstance(indices.dtype, nt.Integer) and indices.ndim == 1 and ax in (0, -1) and
            _real_array(g) and g.ndim == 1):
        return None

    return lambda g, arr, indices, axis=-1: _scatter_back(g, arr.shape[0], arr.dtype, indices)
