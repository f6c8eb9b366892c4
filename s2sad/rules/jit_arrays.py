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

from .jit_reductions import _split


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
    w = getattr(which, "literal_value", which)
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
    w = getattr(which, "literal_value", which)
    if not (_poly_args(p, x) and w in ("p", "x")):
        return None
    if w == "x":
        return lambda t, p, x, which="p": t * _derivative_at(p, x)
    if _real_array(t) and t.ndim == 1:
        return lambda t, p, x, which="p": np_polyval(t, x)


def versions():
    """{NumPy function: its numba version}, for the names holding NumPy in generated code."""
    return {np.roll: np_roll, np.flip: np_flip, np.repeat: np_repeat, np.tile: np_tile,
            np.polyval: np_polyval, np.cumprod: np_cumprod}

