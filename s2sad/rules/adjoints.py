"""Helpers for adjoints too large to read well as one inline expression.

Templates reach this module as ``_adj`` (``_adj.sum(g, a, axis, keepdims)``).  Every helper works
on NumPy and CuPy arrays alike: it allocates through :func:`xp` (the array module of its argument)
and uses array methods.  Conventions (DESIGN.md): an adjoint has its input's shape and dtype; the
gradient of a real loss w.r.t. a complex ``z`` is dL/dRe z + i dL/dIm z, so a holomorphic ``f``
has adjoint ``g * conj(f'(z))``.
"""
import builtins
import functools
import math
import numbers

import numpy as np

from .. import runtime as _rt
from ..errors import RuleError
from ..kernels.device import _has_cupy, check_devices as _check_devices

_NoValue = getattr(np, "_NoValue", None)


# -- small utilities ----------------------------------------------------------------------------
_NDARRAY = np.ndarray
_np_outer = np.outer


def xp(*xs):
    """The array module (NumPy or CuPy) of the first array among ``xs``."""
    for x in xs:
        if hasattr(x, "shape") and hasattr(x, "dtype") and not isinstance(x, np.generic):
            return _rt.array_module(x)
    return np


def asarray(x, like=None):
    """``x`` as an array of the array module of ``like`` (arrays are returned as they are; a
    NumPy scalar joins ``like``'s module when that is CuPy)."""
    if hasattr(x, "shape") and hasattr(x, "dtype"):
        if like is not None and isinstance(x, np.generic):
            m = xp(like)
            if m is not np:
                return m.asarray(x)
        return x
    return xp(like).asarray(x)


def cj(x):
    return _rt.cj(x)


def shape(x):
    s = getattr(x, "shape", None)
    return tuple(s) if s is not None else np.shape(x)


def _inverse(perm):
    """The inverse of a permutation, as a tuple of Python ints (NumPy and CuPy transposes)."""
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[int(p)] = i
    return tuple(inv)


def ndim(x):
    return len(shape(x))


def _flag(v, default=False):
    return default if v is None or v is _NoValue else v


def like(g, x):
    """``g`` (an array or scalar) as an adjoint for ``x``: x's dtype, x's kind of value.

    A Python float input gets a Python float, a list/tuple of scalars gets a list/tuple, a real
    array input drops the imaginary part of ``g``."""
    if g is None:
        return None
    if isinstance(x, (list, tuple)):
        return array_adjoint(g, x)
    if isinstance(x, bool) or isinstance(x, numbers.Integral) and not hasattr(x, "dtype"):
        return None
    if type(x) is float:
        g = asarray(g)
        if g.dtype.kind == "c":
            g = g.real
        return float(g.sum()) if g.shape != () else float(g)
    if type(x) is complex:
        g = asarray(g)
        return complex(g.sum()) if g.shape != () else complex(g)
    dt = getattr(x, "dtype", None)
    if dt is None:
        return g
    if dt.kind == "O":                      # an object array holding floats: an array adjoint
        g = asarray(g)
        if g.shape != x.shape:
            g = g.reshape(x.shape) if g.size == x.size else _rt.unbroadcast(g, x)
        return g
    if dt.kind not in "fc":
        return None
    gdt = getattr(g, "dtype", None)
    if isinstance(x, np.generic):           # NumPy scalar input: NumPy scalar adjoint
        g = asarray(g)
        if g.dtype.kind == "c" and dt.kind != "c":
            g = g.real
        return dt.type(g) if g.shape == () else g.astype(dt)
    if gdt is None:
        return xp(x).asarray(g, dtype=dt) if dt.kind == "c" or not isinstance(g, complex) \
            else xp(x).asarray(g.real, dtype=dt)
    if gdt != dt:
        if gdt.kind == "c" and dt.kind != "c":
            g = g.real
        g = g.astype(dt, copy=False)
    if g.shape != x.shape:
        g = g.reshape(x.shape) if g.size == x.size else _rt.unbroadcast(g, x)
    return g


def full_like(g, x):
    """``g`` broadcast to x's shape as a fresh, writable array in x's dtype."""
    s = shape(x)
    m = xp(x, g)
    g = asarray(g, like=x)
    dt = getattr(x, "dtype", None)
    if dt is None or dt.kind not in "fc":
        dt = g.dtype if g.dtype.kind in "fc" else np.dtype(float)
    if g.dtype.kind == "c" and dt.kind != "c":
        g = g.real
    out = m.broadcast_to(g, s).astype(dt, copy=True)
    return like(out, x) if not hasattr(x, "dtype") or isinstance(x, np.generic) else out


def zeros_for(x, dtype=None):
    dt = dtype or getattr(x, "dtype", np.dtype(float))
    return xp(x).zeros(shape(x), dtype=dt)


def is_zero(g):
    return _rt.is_zero(g)


def norm_axes(axis, nd):
    """``axis`` (None, int or tuple, possibly negative) as a sorted tuple of non-negative ints."""
    if axis is None:
        return tuple(range(nd))
    if isinstance(axis, (tuple, list)):
        return tuple(sorted(int(a) % nd if nd else 0 for a in axis))
    return (int(axis) % nd if nd else 0,)


def expand(g, xshape, axis, keepdims, like=None):
    """Reshape the result of a reduction over ``axis`` so it broadcasts against ``xshape``
    (a scalar ``g`` becomes an array of the array module of ``like``)."""
    g = asarray(g, like=like)
    if keepdims:
        return g
    axes = norm_axes(axis, len(xshape))
    new = tuple(1 if i in axes else n for i, n in enumerate(xshape))
    return g.reshape(new)


def count(xshape, axis):
    axes = norm_axes(axis, len(xshape))
    return int(np.prod([xshape[i] for i in axes])) if axes else 1


# -- reductions ---------------------------------------------------------------------------------
def sum(g, a, axis=None, keepdims=False):
    """Adjoint of ``np.sum(a, axis, keepdims)``: g copied along the reduced axes."""
    if axis is None and type(a) is _NDARRAY and a.dtype.kind == "f" and \
            (type(g) is float or type(g) is _NDARRAY and g.ndim == 0 and g.dtype.kind == "f" or
             isinstance(g, np.floating)):
        return np.full(a.shape, g, dtype=a.dtype)          # the common case, directly
    return full_like(expand(g, shape(a), axis, _flag(keepdims), like=a), a)


def mean(g, a, axis=None, keepdims=False):
    n = count(shape(a), axis)
    return full_like(expand(g, shape(a), axis, _flag(keepdims), like=a) / n, a)


def _others_product(a, axes):
    """For each element, the product of the other elements of its reduction group (exact with zeros)."""
    m = xp(a)
    a = asarray(a)
    nd = a.ndim
    keep = [i for i in range(nd) if i not in axes]
    perm = keep + list(axes)
    t = a.transpose(perm)
    lead = t.shape[:len(keep)]
    n = int(np.prod(t.shape[len(keep):])) if axes else 1
    flat = t.reshape(lead + (n,))
    one = m.ones(lead + (1,), dtype=a.dtype)
    left = m.concatenate([one, m.cumprod(flat[..., :-1], axis=-1)], axis=-1)
    right = m.flip(m.concatenate([one, m.cumprod(m.flip(flat, -1)[..., :-1], axis=-1)], axis=-1),
                   -1)
    other = (left * right).reshape(t.shape)
    return other.transpose(_inverse(perm))


def prod(g, a, axis=None, keepdims=False):
    """Adjoint of ``np.prod``: g times the product of the other elements (exact with zeros)."""
    a = asarray(a)
    axes = norm_axes(axis, a.ndim)
    ge = expand(g, a.shape, axis, _flag(keepdims), like=a)
    return like(ge * cj(_others_product(a, axes)), a) if a.ndim else like(asarray(g, like=a), a)


def extremum(g, ans, a, axis=None, keepdims=False):
    """Adjoint of max/min: g shared evenly among the elements equal to the extremum."""
    a = asarray(a)
    ans_e = expand(ans, a.shape, axis, _flag(keepdims), like=a)
    mask = (a == ans_e)
    n = mask.sum(axis=norm_axes(axis, a.ndim), keepdims=True)
    ge = expand(g, a.shape, axis, _flag(keepdims), like=a)
    # where the extremum came from `initial=` no element ties with it: nothing to share
    return like(mask * (ge / xp(a).maximum(n, 1)), a)


def var(g, a, axis=None, ddof=0, keepdims=False, mean=None):
    a = asarray(a)
    n = count(a.shape, axis)
    mu = a.mean(axis=norm_axes(axis, a.ndim), keepdims=True) if mean is None or mean is _NoValue \
        else mean
    ge = expand(g, a.shape, axis, _flag(keepdims), like=a)
    return like(ge * (2.0 / (n - ddof)) * (a - mu), a)


def std(g, ans, a, axis=None, ddof=0, keepdims=False):
    a = asarray(a)
    n = count(a.shape, axis)
    mu = a.mean(axis=norm_axes(axis, a.ndim), keepdims=True)
    ge = expand(g, a.shape, axis, _flag(keepdims), like=a)
    se = expand(ans, a.shape, axis, _flag(keepdims), like=a)
    m = xp(a)
    # a zero standard deviation (one element, or equal elements) has a zero subgradient here
    safe = m.where(se == 0, 1, se)
    return like(m.where(se == 0, 0, ge * (a - mu) / ((n - ddof) * safe)), a)


def _correction(ddof, correction):
    if correction is not None and correction is not _NoValue:
        return correction
    return ddof


def cumsum(g, a, axis=None):
    """Adjoint of ``np.cumsum``: reversed cumulative sum of g (flattened when axis is None)."""
    a = asarray(a)
    m = xp(a)
    g = asarray(g)
    if axis is None:
        r = m.flip(m.cumsum(m.flip(g.ravel(), 0), axis=0), 0).reshape(a.shape)
    else:
        r = m.flip(m.cumsum(m.flip(g, axis), axis=axis), axis)
    return like(r, a)


def cumprod(g, ans, a, axis=None):
    """Adjoint of ``np.cumprod``; exact also when ``a`` has zeros (then O(n^2) along axis)."""
    a = asarray(a)
    m = xp(a)
    g = asarray(g)
    if axis is None:
        return like(cumprod(g.ravel(), ans.ravel(), a.ravel(), 0).reshape(a.shape), a)
    axis = axis % a.ndim
    if not bool((a == 0).any()):
        r = m.flip(m.cumsum(m.flip(g * cj(ans), axis), axis=axis), axis) / cj(a)
        return like(r, a)
    at = m.moveaxis(a, axis, -1)
    gt = m.moveaxis(g, axis, -1)
    out = m.zeros(at.shape, dtype=np.result_type(at.dtype, gt.dtype))
    for i in range(at.shape[-1]):
        b = at.copy()
        b[..., i] = 1
        c = m.cumprod(b, axis=-1)
        out[..., i] = (gt[..., i:] * cj(c[..., i:])).sum(axis=-1)
    return like(m.moveaxis(out, -1, axis), a)


# -- elementwise --------------------------------------------------------------------------------
def power_base(g, x1, x2):
    """Adjoint of ``x1 ** x2`` for the base: g * conj(x2 x1^(x2-1)), 0 where x2 == 0."""
    d = x2 * x1 ** (x2 - 1)
    if bool(np.any(x2 == 0)):
        m = xp(d, x1, x2)
        d = m.where(asarray(x2, like=d) == 0, 0, d)
    return _rt.unbroadcast(g * cj(d), x1)


def power_exponent(g, ans, x1, x2):
    """Adjoint of ``x1 ** x2`` for the exponent: g * conj(x1^x2 log x1), 0 where x1 == 0."""
    m = xp(ans, x1, x2)
    x1a = asarray(x1, like=ans)
    safe = m.where(x1a == 0, 1, x1a)
    d = ans * m.log(safe)
    return _rt.unbroadcast(g * cj(d), x2)


def maximum(g, x1, x2, which, sign=1, nan=False):
    m = xp(g, x1, x2)
    a, b = (x1, x2) if which == 0 else (x2, x1)
    a = asarray(a, like=g)
    b = asarray(b, like=g)
    win = (a > b) if sign > 0 else (a < b)
    if nan:
        win = win | (m.isnan(b) & ~m.isnan(a))
    r = m.where(win, g, m.where(a == b, 0.5 * g, 0 * g))
    return _rt.unbroadcast(r, x1 if which == 0 else x2)


def clip(g, a, lo, hi, which):
    """Adjoint of ``clip(a, lo, hi)`` = minimum(maximum(a, lo), hi), ties split evenly."""
    m = xp(g, a, lo, hi)
    a_ = asarray(a, like=g)
    t = a_ if lo is None else m.maximum(a_, lo)
    # share of g reaching maximum(a, lo) from minimum(., hi)
    if hi is None:
        g_t, g_hi = g, None
    else:
        g_t = m.where(t < hi, g, m.where(t == hi, 0.5 * g, 0 * g))
        g_hi = m.where(t > hi, g, m.where(t == hi, 0.5 * g, 0 * g))
    if which == "hi":
        return _rt.unbroadcast(g_hi, hi)
    if lo is None:
        return _rt.unbroadcast(g_t, a) if which == "a" else None
    g_a = m.where(a_ > lo, g_t, m.where(a_ == lo, 0.5 * g_t, 0 * g_t))
    if which == "a":
        return _rt.unbroadcast(g_a, a)
    return _rt.unbroadcast(g_t - g_a, lo)


def clip_bounds(a, a_min, a_max, min, max):
    lo = a_min if a_min is not None and a_min is not _NoValue else \
        (min if min is not _NoValue else None)
    hi = a_max if a_max is not None and a_max is not _NoValue else \
        (max if max is not _NoValue else None)
    return lo, hi


def where(g, condition, x, first):
    m = xp(g, x)
    g = asarray(g, like=x)
    r = m.where(condition, g, 0 * g) if first else m.where(condition, 0 * g, g)
    return _rt.unbroadcast(r, x)


def imag(g, val):
    """Adjoint of ``np.imag``: i g for complex input, zero for real."""
    dt = getattr(val, "dtype", None)
    if isinstance(val, complex) or (dt is not None and dt.kind == "c"):
        return like(1j * asarray(g, like=val), val)
    return like(0 * asarray(g, like=val), val)


def angle(g, z, deg=False):
    """Adjoint of ``np.angle``: g i / conj(z) (times 180/pi in degrees)."""
    z_ = asarray(z)
    m = xp(z_)
    scale = 180.0 / math.pi if deg else 1.0
    if z_.dtype.kind != "c":
        return like(0 * asarray(g, like=z_) * z_, z)
    az2 = (z_ * z_.conj()).real
    safe = m.where(az2 == 0, 1, az2)
    return like(g * scale * 1j * z_ / safe * (az2 != 0), z)


def sinc(x):
    """Derivative of the normalized sinc: (cos(pi x) - sinc(x)) / x, 0 at x = 0."""
    m = xp(x)
    x_ = asarray(x)
    safe = m.where(x_ == 0, 1, x_)
    d = (m.cos(math.pi * safe) - m.sinc(safe)) / safe
    return m.where(x_ == 0, 0, d)


# -- linear algebra -----------------------------------------------------------------------------
def _mT(x):
    return x.swapaxes(-1, -2)


def _mH(x):
    return cj(x).swapaxes(-1, -2)


def matmul(g, a, b, which):
    """Adjoint of ``a @ b`` for ``a`` (which=0) or ``b`` (which=1); 1-D operands and batches."""
    if type(a) is _NDARRAY and type(b) is _NDARRAY and type(g) is _NDARRAY and \
            a.dtype is b.dtype and a.dtype is g.dtype and a.dtype.kind == "f" and a.ndim == 2:
        # the common real matrix cases, without the general machinery
        if b.ndim == 1:
            return _np_outer(g, b) if which == 0 else a.T @ g
        if b.ndim == 2:
            return g @ b.T if which == 0 else a.T @ g
    m = xp(a, b, g)
    a_ = asarray(a, like=b)
    b_ = asarray(b, like=a)
    a1, b1 = a_.ndim == 1, b_.ndim == 1
    A = a_[None, :] if a1 else a_
    B = b_[:, None] if b1 else b_
    G = m.asarray(g)
    if b1:
        G = G[..., None]
    if a1:
        G = G[..., None, :]
    if which == 0:
        r = G @ _mH(B)
        r = _rt.unbroadcast(r, A)
        if a1:
            r = r[0]
        return like(r, a)
    r = _mH(A) @ G
    r = _rt.unbroadcast(r, B)
    if b1:
        r = r[:, 0]
    return like(r, b)


def _tensordot_axes(a, b, axes):
    na, nb = a.ndim, b.ndim
    if isinstance(axes, numbers.Integral):
        n = int(axes)
        return list(range(na - n, na)), list(range(n))
    ax_a, ax_b = axes
    if isinstance(ax_a, numbers.Integral):
        ax_a = [ax_a]
    if isinstance(ax_b, numbers.Integral):
        ax_b = [ax_b]
    return [int(i) % na for i in ax_a], [int(i) % nb for i in ax_b]


def tensordot(g, a, b, axes, which):
    """Adjoint of ``np.tensordot(a, b, axes)``."""
    m = xp(a, b, g)
    a_ = asarray(a, like=b)
    b_ = asarray(b, like=a)
    g = m.asarray(g)
    ax_a, ax_b = _tensordot_axes(a_, b_, axes)
    free_a = [i for i in range(a_.ndim) if i not in ax_a]
    free_b = [i for i in range(b_.ndim) if i not in ax_b]
    nfa = len(free_a)
    if m is not np and (not free_b if which == 0 else not free_a):
        # no axis to contract (inner products of vectors): an outer product; CuPy's tensordot
        # refuses empty axis lists with zero-dimensional operands
        if which == 0:
            r = g.reshape(g.shape + (1,) * b_.ndim) * cj(b_)
            cur = free_a + [ax_a[ax_b.index(j)] for j in sorted(ax_b)]
            return like(r.transpose(_inverse(cur)), a)
        r = cj(a_).reshape(a_.shape + (1,) * g.ndim) * g
        cur = [ax_b[ax_a.index(i)] for i in sorted(ax_a)] + free_b
        return like(r.transpose(_inverse(cur)), b)
    if which == 0:
        r = m.tensordot(g, cj(b_), axes=(list(range(nfa, g.ndim)), free_b))
        cur = free_a + [ax_a[ax_b.index(j)] for j in sorted(ax_b)]
        return like(r.transpose(_inverse(cur)), a)
    r = m.tensordot(cj(a_), g, axes=(free_a, list(range(nfa))))
    cur = [ax_b[ax_a.index(i)] for i in sorted(ax_a)] + free_b
    return like(r.transpose(_inverse(cur)), b)


def dot(g, a, b, which):
    """Adjoint of ``np.dot(a, b)``: scalar product, matrix product, or N-D tensordot."""
    a_ = asarray(a, like=b)
    b_ = asarray(b, like=a)
    if a_.ndim == 0 or b_.ndim == 0:
        other = b_ if which == 0 else a_
        return _rt.unbroadcast(asarray(g, like=other) * cj(other), a if which == 0 else b)
    if a_.ndim <= 2 and b_.ndim <= 2:
        return matmul(g, a, b, which)
    axes = ([a_.ndim - 1], [0 if b_.ndim == 1 else b_.ndim - 2])
    return tensordot(g, a, b, axes, which)


def inner(g, a, b, which):
    a_ = asarray(a, like=b)
    b_ = asarray(b, like=a)
    if a_.ndim == 0 or b_.ndim == 0:
        return dot(g, a, b, which)
    return tensordot(g, a, b, ([a_.ndim - 1], [b_.ndim - 1]), which)


def outer(g, a, b, which):
    m = xp(a, b, g)
    a_ = asarray(a, like=b).ravel()
    b_ = asarray(b, like=a).ravel()
    g = m.asarray(g).reshape(a_.size, b_.size)
    if which == 0:
        return like((g @ cj(b_)).reshape(shape(a)), a)
    return like((cj(a_) @ g).reshape(shape(b)), b)


def vdot(g, a, b, which):
    """``vdot(a, b) = sum(conj(a) * b)`` over flattened inputs: antilinear in a."""
    a_ = asarray(a, like=b)
    b_ = asarray(b, like=a)
    if which == 0:
        return like((cj(asarray(g, like=b_)) * b_.ravel()).reshape(shape(a)), a)
    return like((asarray(g, like=a_) * a_.ravel()).reshape(shape(b)), b)


def vecdot(g, x1, x2, axis, which):
    """``vecdot(x1, x2) = sum(conj(x1) * x2, axis)``."""
    m = xp(x1, x2, g)
    a_ = asarray(x1, like=x2)
    b_ = asarray(x2, like=x1)
    ge = m.expand_dims(m.asarray(g), axis)
    if which == 0:
        return _rt.unbroadcast(cj(ge) * b_, x1)
    return _rt.unbroadcast(ge * a_, x2)


def kron(g, a, b, which):
    """Adjoint of ``np.kron``: g viewed as (a0, b0, a1, b1, ...), contracted with the other factor."""
    m = xp(a, b, g)
    a_ = asarray(a, like=b)
    b_ = asarray(b, like=a)
    nd = max(a_.ndim, b_.ndim)
    A = a_.reshape((1,) * (nd - a_.ndim) + a_.shape)
    B = b_.reshape((1,) * (nd - b_.ndim) + b_.shape)
    inter = []
    for i in range(nd):
        inter += [A.shape[i], B.shape[i]]
    G = m.asarray(g).reshape(inter)
    ia = list(range(0, 2 * nd, 2))
    ib = list(range(1, 2 * nd, 2))
    if which == 0:
        r = m.einsum(G, list(range(2 * nd)), cj(B), ib, ia)
        return like(r.reshape(a_.shape), a)
    r = m.einsum(G, list(range(2 * nd)), cj(A), ia, ib)
    return like(r.reshape(b_.shape), b)


def _diag_index(shp, offset, axis1, axis2):
    """Index tuple selecting the ``offset`` diagonal of axes (axis1, axis2) of an array of shape shp
    after those axes were moved to the end."""
    n1, n2 = shp[axis1], shp[axis2]
    if offset >= 0:
        k = max(0, min(n1, n2 - offset))
        i = np.arange(k)
        j = i + offset
    else:
        k = max(0, min(n1 + offset, n2))
        j = np.arange(k)
        i = j - offset
    return i, j


def diagonal(g, a, offset=0, axis1=0, axis2=1):
    """Adjoint of ``np.diagonal``: g placed on the diagonal of zeros shaped like a."""
    a_ = asarray(a)
    m = xp(a_)
    nd = a_.ndim
    axis1, axis2 = axis1 % nd, axis2 % nd
    out = m.zeros(a_.shape, dtype=a_.dtype if a_.dtype.kind in "fc" else np.dtype(float))
    i, j = _diag_index(a_.shape, offset, axis1, axis2)
    view = m.moveaxis(out, (axis1, axis2), (-2, -1))
    if m is not np:
        i, j = m.asarray(i), m.asarray(j)
    gg = m.asarray(g)
    if out.dtype.kind != "c" and gg.dtype.kind == "c":
        gg = gg.real
    view[..., i, j] = gg
    return like(out, a)


def trace(g, a, offset=0, axis1=0, axis2=1):
    a_ = asarray(a)
    m = xp(a_)
    i, j = _diag_index(a_.shape, offset, axis1 % a_.ndim, axis2 % a_.ndim)
    gg = m.asarray(g)
    d = m.broadcast_to(gg[..., None], gg.shape + (len(i),))
    return diagonal(d, a, offset, axis1, axis2)


def diag(g, v, k=0):
    v_ = asarray(v)
    m = xp(v_)
    if v_.ndim == 1:
        return like(m.diagonal(m.asarray(g), k).copy(), v)
    return diagonal(g, v, k, 0, 1)


def _tri(xp_, n, mcols, k, dtype=bool):
    return xp_.tri(n, mcols, k, dtype=dtype)


def triu(g, m_, k=0):
    a = asarray(m_)
    mod = xp(a)
    if a.ndim < 2:
        return like(mod.triu(mod.asarray(g), k).sum(0), m_)
    return like(mod.triu(mod.asarray(g), k), m_)


def tril(g, m_, k=0):
    a = asarray(m_)
    mod = xp(a)
    if a.ndim < 2:
        return like(mod.tril(mod.asarray(g), k).sum(0), m_)
    return like(mod.tril(mod.asarray(g), k), m_)


def einsum(g, operands, which, **kwargs):
    """Adjoints of ``np.einsum(subscripts, *ops)`` for every operand (a tuple; None for the
    subscripts string).  Handles implicit output, ellipses, repeated indices (diagonals), and
    indices summed within a single operand."""
    if not isinstance(operands[0], str):
        raise RuleError("np.einsum: only the subscripts-string form is differentiable",
                        fix="write the subscripts as a string: np.einsum('ij,jk->ik', a, b)")
    subs, *ops = operands
    ops_ = [asarray(o) for o in ops]
    m = xp(*ops_)
    ins, out = _einsum_parse(subs, [o.ndim for o in ops_])
    g = m.asarray(g)
    sizes = {}
    for s, o in zip(ins, ops_):
        for c, n in zip(s, o.shape):
            if n != 1 or c not in sizes:
                sizes[c] = n
    res = [None]
    for k, (s, o) in enumerate(zip(ins, ops_)):
        if which is not None and k != which:
            res.append(None)
            continue
        if o.dtype.kind not in "fc":
            res.append(None)
            continue
        others = [(ins[j], cj(ops_[j])) for j in range(len(ops_)) if j != k]
        avail = set(out).union(*[set(t) for t, _ in others]) if others else set(out)
        uniq = []
        for c in s:
            if c not in uniq:
                uniq.append(c)
        keep = [c for c in uniq if c in avail]
        args = [g, list(out)]
        spec = out + "," + ",".join(t for t, _ in others) + "->" + "".join(keep) if others \
            else out + "->" + "".join(keep)
        r = m.einsum(spec, g, *[a for _, a in others])
        # indices only in this operand: broadcast
        full_shape = [sizes[c] for c in uniq]
        r = r.reshape([sizes[c] if c in keep else 1 for c in uniq])
        r = m.broadcast_to(r, full_shape)
        if len(uniq) != len(s):           # repeated indices: put r on the diagonals
            z = m.zeros(o.shape, dtype=np.result_type(r.dtype, o.dtype))
            idx = []
            for c in s:
                n = sizes[c]
                pos = uniq.index(c)
                shp = [1] * len(uniq)
                shp[pos] = n
                idx.append(m.arange(n).reshape(shp))
            z[tuple(idx)] = r
            r = z
        else:
            # size-1 broadcast dims of the operand
            r = _rt.unbroadcast(m.ascontiguousarray(r), o) if r.shape != o.shape else r
        res.append(like(r, ops[k]))
    if which is not None:
        return res[which + 1]
    return tuple(res)


_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _einsum_parse(subs, ndims):
    subs = subs.replace(" ", "")
    if "->" in subs:
        lhs, out = subs.split("->")
        explicit = True
    else:
        lhs, out, explicit = subs, None, False
    ins = lhs.split(",")
    used = set(c for c in subs if c.isalpha())
    free = [c for c in _LETTERS if c not in used]
    ell_n = 0
    for s, nd in zip(ins, ndims):
        if "..." in s:
            ell_n = max(ell_n, nd - (len(s) - 3))
    ell = "".join(free[:ell_n])
    res = []
    for s, nd in zip(ins, ndims):
        if "..." in s:
            n = nd - (len(s) - 3)
            s = s.replace("...", ell[ell_n - n:] if n else "")
        res.append(s)
    if explicit:
        out = out.replace("...", ell)
    else:
        counts = {}
        for s in res:
            for c in s:
                counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c in counts if counts[c] == 1 and c not in ell))
    return res, out


def inv(g, ans):
    """Adjoint of ``inv``: -A^-H g A^-H."""
    h = _mH(ans)
    return -(h @ g @ h)


def det(g, ans, a):
    m = xp(a)
    ai = m.linalg.inv(a)
    ge = m.asarray(g * cj(ans))[..., None, None]
    return like(ge * _mH(ai), a)


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


def solve(g, ans, a, b):
    """Adjoints of ``solve(a, b)`` (both at once): gb = A^-H g, ga = -gb x^H."""
    m = xp(a, b)
    a_ = asarray(a)
    b_ = asarray(b, like=a_)
    vec = b_.ndim == 1
    G = m.asarray(g)
    X = m.asarray(ans)
    if vec:
        G = G[..., None]
        X = X[..., None]
    gb = m.linalg.solve(_mH(a_), G)
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
    P = _phi(_mH(L) @ gL)
    # S = L^-H P L^-1
    n = L.shape[-1]
    eye = m.eye(n, dtype=L.dtype)
    Linv = _solve_tri(L, eye, lower=True)
    S = _mH(Linv) @ P @ Linv
    S = 0.5 * (S + _mH(S))                  # the gradient w.r.t. a Hermitian A
    return like(_from_hermitian(S, "U" if upper else "L"), a)


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
        diff = w[..., None, :] - w[..., :, None]
        eye = m.eye(n, dtype=bool)
        F = m.where(eye, 0, 1 / m.where(eye, 1, diff))
        inner = inner + F * (vh @ m.asarray(gv))
    S = v @ inner @ vh
    S = 0.5 * (S + _mH(S))
    return like(_from_hermitian(S, UPLO), a)


def eigvalsh(g, ans, a, UPLO="L"):
    m = xp(a)
    w, v = m.linalg.eigh(a, UPLO)
    S = (v * m.asarray(g)[..., None, :]) @ _mH(v)
    S = 0.5 * (S + _mH(S))
    return like(_from_hermitian(S, UPLO), a)


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
    S2 = S * S
    E = S2[..., None, :] - S2[..., :, None]
    eye = m.eye(k, dtype=bool)
    F = m.where(eye, 0, 1 / m.where(eye, 1, E))
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


# -- shape functions ----------------------------------------------------------------------------
def _order(order, a):
    if order in (None, "C"):
        return "C"
    if order == "F":
        return "F"
    flags = getattr(a, "flags", None)
    if order in ("A", "K"):
        if flags is not None and flags.f_contiguous and not flags.c_contiguous:
            return "F"
        if order == "K" and flags is not None and not flags.c_contiguous and a.ndim > 1:
            raise RuleError("ravel(order='K') of a non-contiguous array is not differentiable",
                            fix="use order='C' (or copy the array first)")
        return "C"
    raise RuleError(f"order={order!r} is not supported", fix="use order='C', 'F', 'A' or 'K'")


def reshape_back(g, a, order="C"):
    """Adjoint of reshape / ravel / flatten / squeeze / expand_dims: g reshaped to a's shape."""
    g = asarray(g, like=a)
    return like(g.reshape(shape(a), order=_order(order, a)), a)


def reshape_to(t, shp, order="C", a=None):
    t = asarray(t, like=a)
    return t.reshape(shp, order=_order(order, a if a is not None else t))


def atleast(g, arys):
    if len(arys) == 1:
        return (reshape_back(g, arys[0]),)
    return tuple(None if is_zero(gi) else reshape_back(gi, a) for gi, a in zip(g, arys))


def tile(g, A, reps):
    A_ = asarray(A)
    reps = (reps,) if isinstance(reps, numbers.Integral) else tuple(reps)
    d = max(A_.ndim, len(reps))
    shp = (1,) * (d - A_.ndim) + A_.shape
    reps = (1,) * (d - len(reps)) + reps
    inter = []
    for r, n in zip(reps, shp):
        inter += [r, n]
    G = asarray(g, like=A_).reshape(inter)
    return like(G.sum(axis=tuple(range(0, 2 * d, 2))).reshape(A_.shape), A)


def repeat(g, a, repeats, axis=None):
    a_ = asarray(a)
    m = xp(a_)
    g = m.asarray(g)
    if axis is None:
        return like(repeat(g, a_.ravel(), repeats, 0).reshape(a_.shape), a)
    axis = axis % a_.ndim
    n = a_.shape[axis]
    if np.ndim(repeats) == 0 or np.size(repeats) == 1:
        r = int(np.asarray(repeats).ravel()[0]) if np.ndim(repeats) else int(repeats)
        gs = g.shape
        G = g.reshape(gs[:axis] + (n, r) + gs[axis + 1:])
        return like(G.sum(axis=axis + 1), a)
    idx = np.repeat(np.arange(n), np.asarray(repeats))
    gt = m.moveaxis(g, axis, 0)
    out = m.zeros((n,) + gt.shape[1:], dtype=g.dtype)
    _rt.scatter_add(out, m.asarray(idx) if m is not np else idx, gt)
    return like(m.moveaxis(out, 0, axis), a)


def roll(g, a, shift, axis=None):
    m = xp(a, g)
    neg = tuple(-s for s in shift) if isinstance(shift, (tuple, list)) else -shift
    return like(m.roll(asarray(g, like=a), neg, axis), a)


def pad(g, array, pad_width, mode="constant"):
    """Adjoint of ``np.pad`` for modes constant, edge, reflect, symmetric, wrap, empty."""
    a_ = asarray(array)
    m = xp(a_)
    g = m.asarray(g)
    if mode in ("constant", "empty"):
        pw = np.broadcast_to(np.asarray(pad_width, dtype=int).reshape(-1, 2)
                             if np.ndim(pad_width) else np.asarray([[pad_width, pad_width]]),
                             (a_.ndim, 2))
        sl = tuple(slice(int(lo), int(lo) + n) for (lo, _), n in zip(pw, a_.shape))
        return like(g[sl].copy(), array)
    if mode not in ("edge", "reflect", "symmetric", "wrap"):
        raise RuleError(f"np.pad(mode={mode!r}) is not differentiable",
                        fix="use mode='constant', 'edge', 'reflect', 'symmetric' or 'wrap'")
    idx = np.pad(np.arange(a_.size).reshape(a_.shape), pad_width, mode=mode)
    flat = m.zeros(a_.size, dtype=g.dtype)
    _rt.scatter_add(flat, m.asarray(idx.ravel()) if m is not np else idx.ravel(), g.ravel())
    return like(flat.reshape(a_.shape), array)


def split(g, ary, indices_or_sections, axis=0, kind="split"):
    """Adjoint of split / array_split / hsplit / vsplit / dsplit: the pieces' adjoints joined
    (zeros for pieces whose adjoint is zero)."""
    a_ = asarray(ary)
    m = xp(a_)
    if kind == "hsplit":
        axis = 0 if a_.ndim == 1 else 1
    elif kind == "vsplit":
        axis = 0
    elif kind == "dsplit":
        axis = 2
    fn = m.split if kind == "split" else m.array_split
    pieces = (m.array_split if kind == "array_split" else
              (m.split if kind == "split" else m.split))(a_, indices_or_sections, axis)
    dt = a_.dtype
    parts = [m.zeros(p.shape, dtype=dt) if is_zero(gi) else like(gi, p) for gi, p in zip(g, pieces)]
    return like(m.concatenate(parts, axis=axis), ary)


def take(g, a, indices, axis=None, mode="raise"):
    a_ = asarray(a)
    m = xp(a_)
    g = m.asarray(g)
    src = a_.ravel() if axis is None else a_
    ax = 0 if axis is None else axis % a_.ndim
    n = src.shape[ax]
    idx = m.asarray(indices)
    if mode == "wrap":
        idx = idx % n
    elif mode == "clip":
        idx = m.clip(idx, 0, n - 1)
    else:
        idx = idx % n if n else idx
    out = m.zeros(src.shape, dtype=a_.dtype)
    ot = m.moveaxis(out, ax, 0)
    # g has shape src.shape[:ax] + idx.shape + src.shape[ax+1:]
    gt = m.moveaxis(g.reshape(src.shape[:ax] + (idx.size,) + src.shape[ax + 1:]), ax, 0)
    _rt.scatter_add(ot, idx.ravel(), gt)
    return like(out.reshape(a_.shape), a)


def _along_axis_index(shp, indices, axis):
    m = np
    idx = []
    nd = len(shp)
    for d in range(nd):
        if d == axis:
            idx.append(indices)
        else:
            s = [1] * nd
            s[d] = shp[d] if indices.shape[d] != 1 or shp[d] == 1 else 1
            s[d] = indices.shape[d]
            idx.append(xp(indices).arange(indices.shape[d]).reshape(s))
    return tuple(idx)


def take_along_axis(g, arr, indices, axis=-1):
    a_ = asarray(arr)
    m = xp(a_)
    g = m.asarray(g)
    if axis is None:
        return like(take_along_axis(g, a_.ravel(), indices, 0).reshape(a_.shape), arr)
    axis = axis % a_.ndim
    idx = m.asarray(indices)
    full = tuple(max(i, j) if k != axis else j for k, (i, j) in
                 enumerate(zip(a_.shape, idx.shape)))
    idx = m.broadcast_to(idx, tuple(idx.shape[k] if k == axis else
                                    max(idx.shape[k], 1) for k in range(a_.ndim)))
    idx = idx % a_.shape[axis]
    out = m.zeros(a_.shape, dtype=a_.dtype)
    _rt.scatter_add(out, _along_axis_index(a_.shape, idx, axis), m.broadcast_to(g, idx.shape))
    return like(out, arr)


def sort(g, a, axis=-1):
    a_ = asarray(a)
    m = xp(a_)
    g = m.asarray(g)
    if axis is None:
        return like(sort(g, a_.ravel(), 0).reshape(a_.shape), a)
    perm = m.argsort(a_, axis=axis, kind="stable")
    out = m.zeros(a_.shape, dtype=a_.dtype)
    m.put_along_axis(out, perm, g, axis=axis)
    return like(out, a)


def diff(g, a, n=1, axis=-1):
    a_ = asarray(a)
    m = xp(a_)
    g = m.asarray(g)
    axis = axis % a_.ndim
    for _ in range(n):
        pw = [(0, 0)] * g.ndim
        pw[axis] = (1, 1)
        g = -m.diff(m.pad(g, pw), axis=axis)
    return like(g, a)


def broadcast_arrays(g, args):
    return tuple(None if is_zero(gi) else _rt.unbroadcast(gi, a) for gi, a in zip(g, args))


def meshgrid(g, xi, indexing="xy", sparse=False):
    res = []
    nd = len(xi)
    for k, (x, gk) in enumerate(zip(xi, g)):
        if is_zero(gk):
            res.append(None)
            continue
        gk = asarray(gk, like=x)
        ax = k
        if indexing == "xy" and nd >= 2 and k < 2:
            ax = 1 - k
        axes = tuple(i for i in range(gk.ndim) if i != ax)
        res.append(like(gk.sum(axis=axes).reshape(shape(x)), x))
    return tuple(res)


def linspace(g, start, stop, num=50, endpoint=True, axis=0, which=0):
    """Adjoint of ``np.linspace`` for ``start`` (which=0) or ``stop`` (which=1)."""
    m = xp(g)
    g = m.asarray(g)
    div = (num - 1) if endpoint else num
    w = m.arange(num, dtype=g.real.dtype) / div if div > 0 else m.zeros(num, dtype=g.real.dtype)
    if endpoint and num == 1:
        w = m.zeros(1, dtype=g.real.dtype)
    sh = [1] * g.ndim
    ax = axis % g.ndim
    sh[ax] = num
    w = w.reshape(sh)
    wt = (1 - w) if which == 0 else w
    r = (g * wt).sum(axis=ax)
    x = start if which == 0 else stop
    return _rt.unbroadcast(r, x) if hasattr(x, "shape") else like(r, x)


def array_adjoint(g, obj):
    """Adjoint of ``np.array(obj)`` / ``np.asarray(obj)``: g split along the nesting of ``obj``
    (a list/tuple of scalars or arrays gets a list/tuple of adjoints)."""
    if g is None:
        return None
    if isinstance(obj, (list, tuple)):
        g = asarray(g)
        return type(obj)(array_adjoint(g[i], o) for i, o in enumerate(obj))
    if isinstance(obj, bool) or (isinstance(obj, numbers.Integral) and not hasattr(obj, "dtype")):
        return None
    if type(obj) is float:
        g = asarray(g)
        return float(g.real) if g.dtype.kind == "c" else float(g)
    if type(obj) is complex:
        return complex(g)
    return like(g, obj)


def item(g, a, args):
    a_ = asarray(a)
    m = xp(a_)
    out = m.zeros(a_.shape, dtype=a_.dtype)
    if a_.dtype.kind != "c" and isinstance(g, complex):
        g = g.real
    if not args:
        out.reshape(-1)[0] = g
    elif len(args) == 1 and isinstance(args[0], numbers.Integral):
        out.reshape(-1)[args[0]] = g
    else:
        idx = args[0] if len(args) == 1 else args
        out[tuple(idx)] = g
    return out


def astype(g, x):
    return like(g, x)


# -- concat and permute families ------------------------------------------------------------------
def _kernels():
    try:
        from ..kernels import concat_adjoint, permute_adjoint
        return concat_adjoint, permute_adjoint
    except ImportError:
        return _concat_adjoint_np, _permute_adjoint_np


def _concat_adjoint_np(g, arrays, axis=0):
    """Fallback (NumPy/CuPy slicing) for when :mod:`s2sad.kernels` is unavailable."""
    g = asarray(g)
    out = []
    if axis is None:
        flat = g.ravel()
        off = 0
        for a in arrays:
            n = int(np.prod(shape(a)))
            out.append(_kind_or_none(flat[off:off + n].reshape(shape(a)), a))
            off += n
        return tuple(out)
    off = 0
    ax = axis % g.ndim
    for a in arrays:
        n = shape(a)[ax]
        sl = (slice(None),) * ax + (slice(off, off + n),)
        out.append(_kind_or_none(g[sl], a))
        off += n
    return tuple(out)


def _kind_or_none(gi, a):
    dt = getattr(a, "dtype", None)
    if dt is not None and dt.kind not in "fc":
        return None
    if isinstance(a, (bool, int)) and not isinstance(a, float):
        return None
    return like(gi.copy(), a)


def _permute_adjoint_np(g, axes):
    return asarray(g).transpose(np.argsort(axes)).copy()


def _guard(name, g, x):
    """Device guard of the concat/permute adjoints: the cotangent and the inputs on one device
    (nothing to do, and no CuPy import, when no CuPy array is present)."""
    if _has_cupy((g, x)):
        _check_devices(f"the adjoint of {name}", (g, x), names=("cotangent", "input"))


def concat_adjoint(g, arrays, axis=0, name="concatenate"):
    """Adjoints of ``concatenate(arrays, axis)``: one per input, None for integer/bool inputs."""
    _guard(name, g, arrays)
    fn = _kernels()[0]
    res = fn(g, arrays, axis)
    return tuple(None if r is None else like(r, a) for r, a in zip(res, arrays))


def permute_adjoint(g, axes, a=None, name="transpose"):
    _guard(name, g, a)
    return _kernels()[1](g, tuple(int(a) for a in axes))


def concatenate(g, arrays, axis=0):
    arrs = [asarray(a) if not isinstance(a, (float, int, complex)) else a for a in arrays]
    if axis is None:
        return concat_adjoint(g, arrs, None) if not _all_arrays(arrays) else \
            concat_adjoint(g, arrays, None)
    return concat_adjoint(g, arrays if _all_arrays(arrays) else
                          [asarray(a, like=g) for a in arrays], axis)


def _all_arrays(arrays):
    return all(hasattr(a, "shape") and hasattr(a, "dtype") and not isinstance(a, np.generic)
               for a in arrays)


def _promoted(arrays, fn, g):
    """Run the concat adjoint on promoted views (``fn``: atleast_2d-like) and reshape back."""
    views = [fn(asarray(a, like=g)) for a in arrays]
    return views


def _concat_promoted(g, arrays, views, axis):
    res = concat_adjoint(g, views, axis)
    return tuple(None if r is None else _back(r, a) for r, a in zip(res, arrays))


def _back(r, a):
    if isinstance(a, (list, tuple)):
        return array_adjoint(r.reshape(np.shape(a)), a)
    if type(a) is float:
        return float(r.reshape(()).real)
    if type(a) is complex:
        return complex(r.reshape(()))
    return like(r.reshape(shape(a)), a)


def stack(g, arrays, axis=0):
    g = asarray(g)
    m = xp(g)
    ax = axis % g.ndim
    views = [m.expand_dims(asarray(a, like=g), ax) for a in arrays]
    return _concat_promoted(g, arrays, views, ax)


def vstack(g, tup):
    g = asarray(g)
    m = xp(g)
    views = [m.atleast_2d(asarray(a, like=g)) for a in tup]
    return _concat_promoted(g, tup, views, 0)


def hstack(g, tup):
    g = asarray(g)
    m = xp(g)
    views = [m.atleast_1d(asarray(a, like=g)) for a in tup]
    return _concat_promoted(g, tup, views, 0 if views and views[0].ndim == 1 else 1)


def dstack(g, tup):
    g = asarray(g)
    m = xp(g)
    views = [m.atleast_3d(asarray(a, like=g)) for a in tup]
    return _concat_promoted(g, tup, views, 2)


def column_stack(g, tup):
    g = asarray(g)
    views = []
    for a in tup:
        v = asarray(a, like=g)
        if v.ndim < 2:
            v = v.reshape(-1, 1)
        views.append(v)
    return _concat_promoted(g, tup, views, 1)


def append(g, arr, values, axis=None, which=0):
    g = asarray(g)
    a, v = asarray(arr, like=g), asarray(values, like=g)
    if axis is None:
        res = concat_adjoint(g, [a.ravel(), v.ravel()], 0)
    else:
        res = concat_adjoint(g, [a, v], axis)
    r = res[which]
    x = arr if which == 0 else values
    return None if r is None else _back(r, x)


def unstack(g, x, axis=0):
    m = xp(x)
    x_ = asarray(x)
    parts = []
    for gi in g:
        parts.append(m.zeros(x_.shape[:axis % x_.ndim] + x_.shape[axis % x_.ndim + 1:],
                             dtype=x_.dtype) if is_zero(gi) else asarray(gi))
    return like(m.stack(parts, axis=axis), x)


def block(g, arrays):
    """Adjoint of ``np.block(arrays)``: g cut along the nesting (innermost lists join on the last
    axis), each piece reshaped to its block's shape."""
    g = asarray(g)
    depth = _block_depth(arrays)
    nd = max(depth, _block_max_ndim(arrays))

    def shape_of(x, level):
        if isinstance(x, list):
            shps = [shape_of(e, level + 1) for e in x]
            ax = nd - (depth - level)
            out = list(shps[0])
            out[ax] = int(builtins.sum(s[ax] for s in shps))
            return tuple(out)
        s = shape(x)
        return (1,) * (nd - len(s)) + tuple(s)

    def cut(gg, x, level):
        if isinstance(x, list):
            ax = nd - (depth - level)
            off = 0
            res = []
            for e in x:
                n = shape_of(e, level + 1)[ax]
                sl = (slice(None),) * ax + (slice(off, off + n),)
                res.append(cut(gg[sl], e, level + 1))
                off += n
            return res
        return _back(gg.copy(), x) if not (hasattr(x, "dtype") and x.dtype.kind not in "fc") \
            else None

    return cut(g, arrays, 0)


def _block_depth(x):
    return 1 + _block_depth(x[0]) if isinstance(x, list) else 0


def _block_max_ndim(x):
    if isinstance(x, list):
        return max(_block_max_ndim(e) for e in x)
    return len(shape(x))


def transpose(g, a, axes=None):
    nd = ndim(a)
    if axes is None or (isinstance(axes, tuple) and len(axes) == 0):
        axes = tuple(range(nd))[::-1]
    elif isinstance(axes, (tuple, list)) and len(axes) == 1 and isinstance(axes[0], (tuple, list)):
        axes = tuple(axes[0])
    axes = tuple(int(x) % nd for x in axes)
    return like(permute_adjoint(asarray(g, like=a), axes, a, "transpose"), a)


def moveaxis(g, a, source, destination):
    nd = ndim(a)
    src = [source] if isinstance(source, numbers.Integral) else list(source)
    dst = [destination] if isinstance(destination, numbers.Integral) else list(destination)
    src = [s % nd for s in src]
    dst = [d % nd for d in dst]
    order = [n for n in range(nd) if n not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return like(permute_adjoint(asarray(g, like=a), tuple(order), a, "moveaxis"), a)


def swapaxes(g, a, axis1, axis2):
    nd = ndim(a)
    axes = list(range(nd))
    i, j = axis1 % nd, axis2 % nd
    axes[i], axes[j] = axes[j], axes[i]
    return like(permute_adjoint(asarray(g, like=a), tuple(axes), a, "swapaxes"), a)


def rollaxis(g, a, axis, start=0):
    nd = ndim(a)
    axis = axis % nd
    start = start + nd if start < 0 else start
    axes = list(range(nd))
    if axis < start:
        start -= 1
    if axis != start:
        axes.remove(axis)
        axes.insert(start, axis)
    return like(permute_adjoint(asarray(g, like=a), tuple(axes), a, "rollaxis"), a)


def matrix_transpose(g, x):
    return swapaxes(g, x, -1, -2)


# -- index tricks: np.r_, np.c_ (concatenations), np.mgrid/np.ogrid, np.s_/np.index_exp ---------
# ``np.r_[a, 0.0, b, 0:3]`` is lowered to ``_adj.index_concat(np.r_, True, a, 0.0, b, _s)`` with
# ``_s = _adj.r_slice(0, 3, None)``: the items become arguments, so their adjoints are routed back
# through the concatenate machinery (the slice's adjoint is the cotangent of the values it expands
# to, which ``r_slice``'s rule turns into adjoints of its bounds).
def _index_trick_kind(obj):
    """"concat" (np.r_, np.c_, cupy.r_...), "grid" (np.mgrid, np.ogrid), "expr" (np.s_,
    np.index_exp), or None for any other object."""
    for cls in type(obj).__mro__:
        mod = cls.__module__ or ""
        if not (mod.startswith("numpy") or mod.startswith("cupy")):
            continue
        if cls.__name__ == "AxisConcatenator":
            return "concat"
        if cls.__name__ == "nd_grid":
            return "grid"
        if cls.__name__ == "IndexExpression":
            return "expr"
    return None


def r_slice(start, stop, step):
    """A slice inside an index trick (``0:6``, ``0:1:5j``): the slice itself."""
    return slice(start, stop, step)


def _slice_values(start, stop, step):
    """The values an index trick expands a slice to: (values, linspace?) as NumPy computes them."""
    start = 0 if start is None else start
    step = 1 if step is None else step
    if isinstance(step, (complex, np.complexfloating)):
        return np.linspace(start, stop, num=int(abs(step))), True
    return np.arange(start, stop, step), False


def r_slice_adjoint(g, start, stop, step, which):
    """Adjoint of a slice's bound (which: 0 start, 1 stop, 2 step) from the cotangent ``g`` of the
    values the slice expands to (``arange``: start + i step; complex step: ``linspace``)."""
    bound = (start, stop, step)[which]
    if is_zero(g):
        return 0.0
    m = xp(g)
    g = m.ravel(m.asarray(g))
    n = g.shape[0]
    if isinstance(step, (complex, np.complexfloating)):
        if which == 2:
            return 0.0
        frac = m.arange(n, dtype=float) / (n - 1) if n > 1 else m.zeros(n)
        w = 1.0 - frac if which == 0 else frac
    elif which == 0:
        w = m.ones(n)
    elif which == 2:
        w = m.arange(n, dtype=float)
    else:
        return 0.0                     # a real step: stop only decides how many values
    return like((g * w).sum(), bound)


def r_slice_tangent(t, start, stop, step, which):
    """Tangent of the values a slice expands to, from the tangent ``t`` of one bound."""
    if is_zero(t):
        return 0.0
    vals, lin = _slice_values(start, stop, step)
    n = vals.shape[0]
    if lin:
        if which == 2:
            return 0.0
        frac = np.arange(n, dtype=float) / (n - 1) if n > 1 else np.zeros(n)
        return t * (1.0 - frac if which == 0 else frac)
    if which == 0:
        return t * np.ones(n)
    if which == 2:
        return t * np.arange(n, dtype=float)
    return 0.0


def _refuse_trick(obj, what, fix):
    from ..errors import RuleError
    raise RuleError(f"{_trick_name(obj)}[...] {what}", fix=fix)


def _trick_name(obj):
    mod = (type(obj).__module__ or "").split(".")[0]
    m = __import__(mod) if mod in ("numpy", "cupy") else None
    for name in ("r_", "c_", "mgrid", "ogrid", "s_", "index_exp"):
        if m is not None and getattr(m, name, None) is obj:
            return f"{'np' if mod == 'numpy' else mod}.{name}"
    return type(obj).__name__


def index_concat(obj, is_tuple, *items):
    """``np.r_[items]`` / ``np.c_[items]`` (``is_tuple``: the subscript was a tuple)."""
    return obj[tuple(items) if is_tuple else items[0]]


def _concat_plan(obj, items):
    """What ``obj[items]`` (np.r_, np.c_, cupy.r_...) does with each item, as NumPy's
    AxisConcatenator does it: (axis, [(position, item, view, permutation, base shape)]).  ``view``
    is the array the item becomes before the concatenation (its block of the result has its
    shape); ``permutation`` the transpose applied to the item promoted to ``ndmin`` dimensions."""
    if type(obj).__name__ not in ("RClass", "CClass", "AxisConcatenator") or \
            getattr(obj, "matrix", False):
        _refuse_trick(obj, "of this kind has no derivative in s2sad",
                      "use np.r_ or np.c_, or np.concatenate")
    axis, ndmin, trans1d = obj.axis, obj.ndmin, obj.trans1d
    plan = []
    for k, item in enumerate(items):
        if isinstance(item, str):
            if k != 0:
                raise ValueError("special directives must be the first entry.")
            if item in ("r", "c"):
                _refuse_trick(obj, f"with the directive {item!r} builds an np.matrix, which s2sad "
                                   f"does not differentiate",
                              "leave out the 'r'/'c' directive (np.r_['0,2', ...] gives a 2-D "
                              "array), or use np.concatenate/np.stack")
            if "," in item:
                vec = [int(x) for x in item.split(",")]
                axis, ndmin = vec[:2]
                if len(vec) == 3:
                    trans1d = vec[2]
            else:
                axis = int(item)
            continue
        perm = None
        if isinstance(item, slice):
            view, _ = _slice_values(item.start, item.stop, item.step)
            base = view.shape
            if ndmin > 1:
                view = view.reshape((1,) * (ndmin - 1) + view.shape)
                if trans1d != -1:
                    perm = list(range(ndmin))
                    t1 = trans1d % ndmin
                    perm[-1], perm[t1] = perm[t1], perm[-1]
        elif type(item) in np.ScalarType:
            base = ()
            view = np.asarray(item).reshape((1,) * ndmin)
        else:
            view = asarray(item)
            base = view.shape
            nd = view.ndim
            if nd < ndmin:
                view = view.reshape((1,) * (ndmin - nd) + base)
                if trans1d != -1:
                    k2 = ndmin - nd
                    k1 = trans1d + k2 + 1 if trans1d < 0 else trans1d
                    d = list(range(ndmin))
                    perm = d[:k1] + d[k2:] + d[k1:k2]
        if perm is not None:
            view = view.transpose(perm)
        plan.append((k, item, view, perm, base))
    return axis, plan


def index_concat_adjoint(gout, obj, is_tuple, items):
    """Adjoints of the items of ``np.r_[items]``/``np.c_[items]``: one per item (0.0 for
    directives and for items that carry none); a slice gets the cotangent of its values."""
    out = [0.0] * len(items)
    if is_zero(gout):
        return tuple(out)
    axis, plan = _concat_plan(obj, items)
    g = asarray(gout)
    m = xp(g)
    views = [v if xp(v) is m else m.asarray(v) for _, _, v, _, _ in plan]   # (CuPy: one device)
    sizes = builtins.sum(v.shape[axis % v.ndim] for v in views)
    if g.ndim != views[0].ndim or sizes != g.shape[axis % g.ndim]:
        _refuse_trick(obj, f"gave a result of shape {tuple(g.shape)} that s2sad cannot split "
                           f"back into its items", "use np.concatenate")
    pieces = concat_adjoint(g, views, axis, _trick_name(obj))
    for (k, item, view, perm, base), r in zip(plan, pieces):
        if r is None:
            continue
        if perm is not None:
            r = r.transpose(_inverse(perm))
        r = r.reshape(base)
        if isinstance(item, slice):
            out[k] = r
        elif isinstance(item, bool) or (isinstance(item, numbers.Integral) and
                                        not hasattr(item, "dtype")):
            continue
        else:
            a = like(r, item)
            out[k] = 0.0 if a is None else a
    return tuple(out)


def index_concat_tangent(tin, ans, obj, is_tuple, items):
    """Tangent of ``np.r_[items]``: the items' tangents laid out as the items are (a slice's
    tangent is the tangent of its values), concatenated."""
    axis, plan = _concat_plan(obj, items)
    ts = []
    for k, item, view, perm, base in plan:
        tk = tin[k] if tin is not None else None
        if tk is None or is_zero(tk) or isinstance(tk, (list, tuple)) and \
                builtins.all(is_zero(x) for x in tk):
            ts.append(None)
            continue
        if isinstance(tk, (list, tuple)):
            tk = tmap_zero(tk)
        shape = view.shape if perm is None else tuple(view.shape[i] for i in _inverse(perm))
        v = asarray(tk, like=ans)
        if v.size != math.prod(shape):
            # a single term's tangent may be smaller than its item (y - a with a constant a)
            v = xp(v).broadcast_to(v, np.shape(item)) if np.size(item) == math.prod(shape) \
                else xp(v).broadcast_to(v, shape)
        v = v.reshape(shape)
        ts.append(v if perm is None else v.transpose(perm))
    if builtins.all(x is None for x in ts):
        return xp(ans).zeros_like(ans)      # (a tangent that is indexed next must be an array)
    m = xp(ans)
    views = [v if xp(v) is m else m.asarray(v) for _, _, v, _, _ in plan]
    res = concat_tangent(ts, views, axis)
    dt = getattr(ans, "dtype", None)
    return res.astype(dt, copy=False) if dt is not None and dt.kind in "fc" else res


def index_trick(obj, is_tuple, *items):
    """``np.mgrid[items]``, ``np.ogrid[items]``, ``np.s_[items]``, ``np.index_exp[items]``."""
    return obj[tuple(items) if is_tuple else items[0]]


def _grid_slices(obj, is_tuple, items):
    if not builtins.all(isinstance(i, slice) for i in items):
        _refuse_trick(obj, "with an item that is not a slice", "use np.meshgrid")
    return list(items) if is_tuple else [items[0]]


def index_trick_adjoint(gout, obj, is_tuple, items):
    """Adjoints of the items of an index trick: for a grid, each slice gets the cotangent of its
    values (the grid's cotangent summed over the other axes); np.s_/np.index_exp return their
    items, so each item gets its part of the cotangent."""
    out = [0.0] * len(items)
    if is_zero(gout):
        return tuple(out)
    kind = _index_trick_kind(obj)
    if kind == "expr":
        if is_tuple or getattr(obj, "maketuple", False):
            parts = gout if isinstance(gout, (list, tuple)) else ()
            for k, gk in enumerate(parts):
                if not isinstance(items[k], slice) and gk is not None:
                    out[k] = gk
        elif not isinstance(items[0], slice):
            out[0] = gout
        return tuple(out)
    slices = _grid_slices(obj, is_tuple, items)
    if not is_tuple:
        out[0] = asarray(gout).reshape(-1)
        return tuple(out)
    sparse = getattr(obj, "sparse", False)
    nd = len(slices)
    for k in range(nd):
        gk = gout[k] if sparse else asarray(gout)[k]
        if is_zero(gk):
            continue
        gk = asarray(gk)
        other = tuple(i for i in range(nd) if i != k)
        out[k] = (gk.sum(axis=other) if other else gk).reshape(-1)
    return tuple(out)


def index_trick_tangent(tin, ans, obj, is_tuple, items):
    kind = _index_trick_kind(obj)
    if kind == "expr":
        if is_tuple or getattr(obj, "maketuple", False):
            return tuple(None if isinstance(i, slice) else t for i, t in zip(items, tin))
        return tin[0]
    slices = _grid_slices(obj, is_tuple, items)
    tin = [None if t is None or is_zero(t) else t for t in tin]
    if not is_tuple:
        return 0.0 if tin[0] is None else asarray(tin[0], like=ans).astype(ans.dtype, copy=False)
    nd = len(slices)
    sparse = getattr(obj, "sparse", False)
    outs = []
    for k in range(nd):
        ref = ans[k]
        if tin[k] is None:
            outs.append(xp(ref).zeros(ref.shape, dtype=ref.dtype))
            continue
        shp = [1] * nd
        shp[k] = -1
        tk = asarray(tin[k], like=ref).reshape(shp)
        outs.append(xp(ref).broadcast_to(tk, ref.shape).astype(ref.dtype))
    if sparse:
        return type(ans)(outs) if isinstance(ans, (list, tuple)) else outs
    return xp(ans).stack(outs)


# -- tangents of list-taking functions ------------------------------------------------------------
def tangent_list(t, arrays):
    """Tangents of the members of a list argument, zeros (in the member's shape) where None/0.0."""
    out = []
    for ti, a in zip(t, arrays):
        if is_zero(ti):
            dt = getattr(a, "dtype", None)
            ti = xp(a).zeros(shape(a), dtype=dt if dt is not None and dt.kind in "fc" else float)
        out.append(ti)
    return out


def concat_tangent(t, arrays, axis=0):
    try:
        from ..kernels import concat_tangent as ct
    except ImportError:
        m = xp(*arrays)
        ts = tangent_list(t, arrays)
        return m.concatenate([m.ravel(x) for x in ts] if axis is None else ts, axis=axis or 0)
    return ct([None if is_zero(ti) else ti for ti in t], arrays, axis)


def permute_tangent(t, a, axes=None):
    nd = ndim(a)
    if axes is None or (isinstance(axes, tuple) and len(axes) == 0):
        axes = tuple(range(nd))[::-1]
    elif isinstance(axes, (tuple, list)) and len(axes) == 1 and isinstance(axes[0], (tuple, list)):
        axes = tuple(axes[0])
    try:
        from ..kernels import permute_tangent as pt
    except ImportError:
        return asarray(t).transpose(axes)
    return pt(asarray(t, like=a), tuple(int(x) % nd for x in axes))


# -- SciPy ----------------------------------------------------------------------------------------
def logsumexp(g, ans, a, axis=None, b=None, keepdims=False, which=0):
    """Adjoint of ``scipy.special.logsumexp`` for ``a`` (which=0) or ``b`` (which=1)."""
    m = xp(a)
    a_ = asarray(a)
    ge = expand(g, a_.shape if b is None else np.broadcast_shapes(a_.shape, np.shape(b)),
                axis, keepdims, like=a_)
    le = expand(ans, a_.shape if b is None else np.broadcast_shapes(a_.shape, np.shape(b)),
                axis, keepdims, like=a_)
    e = m.exp(a_ - le)
    if which == 1:
        return _rt.unbroadcast(ge * e, b)
    if b is not None:
        e = e * b
    return _rt.unbroadcast(ge * e, a)


def softmax(g, ans, x, axis=None):
    gs = g * ans
    ax = norm_axes(axis, ndim(ans))
    return like(gs - ans * gs.sum(axis=ax, keepdims=True), x)


def log_softmax(g, ans, x, axis=None):
    m = xp(ans)
    ax = norm_axes(axis, ndim(ans))
    return like(g - m.exp(ans) * asarray(g).sum(axis=ax, keepdims=True), x)


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


# -- tangents that need more than one line ----------------------------------------------------------
def _reduce_tangent(contrib, a, axis, keepdims):
    return asarray(contrib).sum(axis=norm_axes(axis, ndim(a)), keepdims=_flag(keepdims))


def maximum_tangent(t, x1, x2, which, sign=1, nan=False):
    m = xp(t, x1, x2)
    a, b = (x1, x2) if which == 0 else (x2, x1)
    a = asarray(a, like=t)
    b = asarray(b, like=t)
    win = (a > b) if sign > 0 else (a < b)
    if nan:
        win = win | (m.isnan(b) & ~m.isnan(a))
    t = asarray(t, like=a)
    return m.where(win, t, m.where(a == b, 0.5 * t, 0 * t))


def clip_tangent(t, a, lo, hi, which):
    """Tangent of clip = minimum(maximum(a, lo), hi) (ties split evenly, as the adjoint)."""
    m = xp(t, a, lo, hi)
    a_ = asarray(a, like=t)
    t = asarray(t, like=a_)
    tmax = a_ if lo is None else m.maximum(a_, lo)
    if which == "hi":
        return maximum_tangent(t, tmax, hi, 1, sign=-1)
    if lo is None:
        inner = t
    else:
        inner = maximum_tangent(t, a_, lo, 0 if which == "a" else 1)
    return inner if hi is None else maximum_tangent(inner, tmax, hi, 0, sign=-1)


def prod_tangent(t, a, axis=None, keepdims=False):
    a = asarray(a)
    return _reduce_tangent(t * _others_product(a, norm_axes(axis, a.ndim)), a, axis, keepdims)


def extremum_tangent(t, ans, a, axis=None, keepdims=False):
    a = asarray(a)
    ans_e = expand(ans, a.shape, axis, _flag(keepdims), like=a)
    mask = (a == ans_e)
    n = mask.sum(axis=norm_axes(axis, a.ndim), keepdims=True)
    # no element equals an all-nan slice's nan (nanmax/nanmin): its tangent is 0
    return _reduce_tangent(t * mask / xp(a).maximum(n, 1), a, axis, keepdims)


def var_tangent(t, a, axis=None, ddof=0, keepdims=False):
    a = asarray(a)
    n = count(a.shape, axis)
    mu = a.mean(axis=norm_axes(axis, a.ndim), keepdims=True)
    c = (cj(a - mu) * t).real if a.dtype.kind == "c" or asarray(t).dtype.kind == "c" \
        else (a - mu) * t
    return _reduce_tangent(c * (2.0 / (n - ddof)), a, axis, keepdims)


def std_tangent(t, ans, a, axis=None, ddof=0, keepdims=False):
    """Tangent of std; 0 where the standard deviation is 0 (as the adjoint, see ``std``)."""
    m = xp(a)
    ans_ = asarray(ans, like=asarray(a))
    safe = m.where(ans_ == 0, 1, ans_)
    return m.where(ans_ == 0, 0, var_tangent(t, a, axis, ddof, keepdims) / (2 * safe))


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


def sort_tangent(t, a, axis=-1):
    a_ = asarray(a)
    m = xp(a_)
    t = asarray(t, like=a_)
    if axis is None:
        return sort_tangent(t.ravel(), a_.ravel(), 0)
    return m.take_along_axis(t, m.argsort(a_, axis=axis, kind="stable"), axis)


def einsum_tangent(t, operands, **kwargs):
    subs, *ops = operands
    m = xp(*ops)
    out = None
    for k, tk in enumerate(t[1:]):
        if is_zero(tk) or tk is None:
            continue
        args = list(ops)
        args[k] = tk
        r = m.einsum(subs, *args)
        out = r if out is None else out + r
    return out


def linspace_tangent(t, start, stop, num=50, endpoint=True, axis=0, which=0):
    m = xp(t)
    t = asarray(t)
    z = 0 * t
    return m.linspace(t, z, num, endpoint=endpoint, axis=axis) if which == 0 else \
        m.linspace(z, t, num, endpoint=endpoint, axis=axis)


def logsumexp_tangent(t, ans, a, axis=None, b=None, keepdims=False, which=0):
    m = xp(a)
    a_ = asarray(a)
    full = a_.shape if b is None else np.broadcast_shapes(a_.shape, np.shape(b))
    le = expand(ans, full, axis, keepdims, like=a_)
    e = m.exp(a_ - le)
    if which == 0 and b is not None:
        e = e * b
    return (e * t).sum(axis=norm_axes(axis, len(full)), keepdims=_flag(keepdims))


def array_tangent(t, ans, src=None):
    """Tangent of ``np.array``/``np.asarray``: the tangent in the output's dtype; none for an
    integer or bool output (a cast would turn the tangent itself into integers).  A new array
    (``ans`` is not ``src`` itself) gets a new tangent: writes into one must not reach the other."""
    m = xp(ans)
    dt = np.result_type(ans)
    if dt.kind not in "fcO":
        return 0.0
    if isinstance(t, (list, tuple)):
        return m.asarray(tmap_zero(t), dtype=dt)
    fresh = src is not None and ans is not src and getattr(ans, "base", None) is not src
    return m.array(t, dtype=dt, copy=True) if fresh else m.asarray(t, dtype=dt)


def tmap_zero(t):
    if isinstance(t, (list, tuple)):
        return [tmap_zero(x) for x in t]
    return 0.0 if t is None else t


# -- statistics: average, nan-reductions, order statistics, cov/corrcoef ----------------------------
def _keep(keepdims):
    return False if keepdims is None or keepdims is _NoValue else bool(keepdims)


def _average_weights(a, axis, weights):
    """The weights of ``np.average`` laid out to broadcast against ``a`` (as NumPy lays them out),
    and the function taking an array of a's shape back to the shape of ``weights``."""
    w = asarray(weights, like=a)
    if tuple(w.shape) == tuple(a.shape):
        return w, lambda x: x
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    axes = tuple(int(ax) % a.ndim for ax in axes)
    order = tuple(int(i) for i in np.argsort(axes))
    wt = w.transpose(order)
    lay = wt.reshape(tuple(s if ax in axes else 1 for ax, s in enumerate(a.shape)))
    inv = _inverse(order)
    return lay, lambda x: _rt.unbroadcast(x, lay).reshape(wt.shape).transpose(inv)


def average(g, ans, a, axis=None, weights=None, keepdims=False, which="a"):
    """Adjoint of ``np.average`` (returned=False): ``a`` gets g w / sum(w), the weights get
    g (a - avg) / sum(w)."""
    a_ = asarray(a)
    kd = _keep(keepdims)
    axes = norm_axes(axis, a_.ndim)
    ge = expand(g, a_.shape, axis, kd, like=a_)
    if weights is None:
        return like(full_like(ge / count(a_.shape, axis), a_), a) if which == "a" else None
    w, back = _average_weights(a_, axis, weights)
    W = w.sum(axis=axes, keepdims=True)
    if which == "a":
        return like(_rt.unbroadcast(ge * cj(w / W), a_), a)
    ae = expand(ans, a_.shape, axis, kd, like=a_)
    return like(back(ge * cj((a_ - ae) / W)), weights)


def average_tangent(t, ans, a, axis=None, weights=None, keepdims=False, which="a"):
    a_ = asarray(a)
    kd = _keep(keepdims)
    axes = norm_axes(axis, a_.ndim)
    if weights is None:
        return asarray(t, like=a_).mean(axis=axes, keepdims=kd)
    w, _ = _average_weights(a_, axis, weights)
    W = w.sum(axis=axes, keepdims=True)
    if which == "a":
        return (asarray(t, like=a_) * (w / W)).sum(axis=axes, keepdims=kd)
    tw, _ = _average_weights(a_, axis, t)
    ae = expand(ans, a_.shape, axis, kd, like=a_)
    return (tw * (a_ - ae) / W).sum(axis=axes, keepdims=kd)


def nansum(g, a, axis=None, keepdims=False, mean=False):
    """Adjoint of ``np.nansum`` / ``np.nanmean``: nothing flows to the nan entries."""
    a_ = asarray(a)
    m = xp(a_)
    ok = ~m.isnan(a_)
    ge = expand(g, a_.shape, axis, _keep(keepdims), like=a_)
    if mean:
        n = ok.sum(axis=norm_axes(axis, a_.ndim), keepdims=True)
        ge = ge / m.maximum(n, 1)
    return like(m.where(ok, ge, 0 * ge), a)


def nansum_tangent(t, a, axis=None, keepdims=False, mean=False):
    a_ = asarray(a)
    m = xp(a_)
    ok = ~m.isnan(a_)
    t = asarray(t, like=a_)
    axes = norm_axes(axis, a_.ndim)
    r = m.where(ok, t, 0 * t).sum(axis=axes, keepdims=_keep(keepdims))
    return r / ok.sum(axis=axes, keepdims=_keep(keepdims)) if mean else r


def ptp(g, a, axis=None, keepdims=False):
    """Adjoint of ``np.ptp`` = max - min (ties split evenly)."""
    a_ = asarray(a)
    axes = norm_axes(axis, a_.ndim)
    ge = expand(g, a_.shape, axis, _keep(keepdims), like=a_)
    hi = a_.max(axis=axes, keepdims=True)
    lo = a_.min(axis=axes, keepdims=True)
    return like(extremum(ge, hi, a_, axes, True) - extremum(ge, lo, a_, axes, True), a)


def ptp_tangent(t, a, axis=None, keepdims=False):
    a_ = asarray(a)
    axes = norm_axes(axis, a_.ndim)
    hi = a_.max(axis=axes, keepdims=True)
    lo = a_.min(axis=axes, keepdims=True)
    out = shape(a_.max(axis=axes, keepdims=_keep(keepdims)))
    return (extremum_tangent(t, hi, a_, axes, True) -
            extremum_tangent(t, lo, a_, axes, True)).reshape(out)


def _quantile_setup(a, q, axis, scale):
    """Order statistics of ``a`` over ``axis`` (flattened to the last axis), and for each q the
    interpolation weights over the sorted positions (NumPy's method='linear')."""
    a_ = asarray(a)
    m = xp(a_)
    axes = norm_axes(axis, a_.ndim)
    keep = [i for i in range(a_.ndim) if i not in axes]
    perm = keep + list(axes)
    at = a_.transpose(perm)
    lead = at.shape[:len(keep)]
    n = int(np.prod(at.shape[len(keep):])) if axes else 1
    flat = at.reshape(lead + (n,))
    order = m.argsort(flat, axis=-1, kind="stable")
    qq = asarray(q, like=a_)
    qq = (qq.real if qq.dtype.kind == "c" else qq).astype(a_.real.dtype if a_.dtype.kind in "fc"
                                                          else np.float64) / scale
    qshape = tuple(qq.shape)
    h = qq.reshape(-1) * (n - 1)
    lo = m.clip(m.floor(h), 0, n - 1).astype(np.int64)
    hi = m.minimum(lo + 1, n - 1)
    frac = h - lo
    ar = m.arange(n)
    W = (1 - frac)[:, None] * (ar == lo[:, None]) + frac[:, None] * (ar == hi[:, None])
    return dict(a=a_, m=m, perm=perm, at_shape=at.shape, lead=lead, n=n, flat=flat,
                order=order, qshape=qshape, lo=lo, hi=hi, W=W)


def quantile(g, ans, a, q, axis=None, keepdims=False, scale=1.0, which="a"):
    """Adjoint of ``np.quantile`` / ``np.percentile`` (``scale=100``) / ``np.median`` with
    method='linear': each result is (1-f) s[lo] + f s[hi] of the sorted values s, so g reaches
    the two neighbouring order statistics; ``q`` gets g (s[hi] - s[lo]) (n - 1) / scale."""
    S = _quantile_setup(a, q, axis, scale)
    m, lead, n = S["m"], S["lead"], S["n"]
    K = S["W"].shape[0]
    gq = asarray(g, like=S["a"]).reshape((K,) + lead)
    if which == "q":
        srt = m.take_along_axis(S["flat"], S["order"], axis=-1)
        d = (m.take(srt, S["hi"], axis=-1) - m.take(srt, S["lo"], axis=-1)) * ((n - 1) / scale)
        d = m.moveaxis(d, -1, 0)                     # (K,) + lead
        r = (gq * cj(d)).reshape((K, -1)).sum(axis=1).reshape(S["qshape"])
        return like(r, q)
    gs = m.tensordot(m.moveaxis(gq, 0, -1), S["W"].astype(gq.real.dtype), axes=([-1], [0]))
    out = m.zeros(S["flat"].shape, dtype=gs.dtype)
    m.put_along_axis(out, S["order"], gs, axis=-1)
    out = out.reshape(S["at_shape"]).transpose(_inverse(S["perm"]))
    return like(out, a)


def quantile_tangent(t, ans, a, q, axis=None, keepdims=False, scale=1.0, which="a"):
    S = _quantile_setup(a, q, axis, scale)
    m, lead, n = S["m"], S["lead"], S["n"]
    if which == "q":
        srt = m.take_along_axis(S["flat"], S["order"], axis=-1)
        d = (m.take(srt, S["hi"], axis=-1) - m.take(srt, S["lo"], axis=-1)) * ((n - 1) / scale)
        tq = asarray(t, like=S["a"]).reshape(-1)
        return m.moveaxis(d * tq, -1, 0).reshape(shape(ans))
    tt = asarray(t, like=S["a"]).transpose(S["perm"]).reshape(lead + (n,))
    ts = m.take_along_axis(tt, S["order"], axis=-1)
    r = m.tensordot(S["W"].astype(S["a"].real.dtype), ts, axes=([1], [len(lead)]))
    return r.reshape(shape(ans))


def _cov_input(m_, y, rowvar, dtype=None):
    """The variables-by-observations matrix ``np.cov`` builds from ``m`` and ``y``."""
    mod = xp(m_, y)
    dts = [v.dtype if hasattr(v, "dtype") else np.result_type(v) for v in (m_, y) if v is not None]
    dt = dtype if dtype is not None else np.result_type(*dts, np.float64)
    ma = asarray(m_, like=y).astype(dt)
    X = ma.reshape(1, -1) if ma.ndim < 2 else ma
    if not rowvar and ma.ndim != 1:
        X = X.T
    parts = [X]
    if y is not None:
        ya = asarray(y, like=ma).astype(dt)
        Y = ya.reshape(1, -1) if ya.ndim < 2 else ya
        if not rowvar and Y.shape[0] != 1:
            Y = Y.T
        parts.append(Y)
    return mod.concatenate(parts, axis=0) if len(parts) > 1 else X, X.shape[0]


def _cov_back(gX, m_, y, rowvar, nm, which):
    """The part of a gradient w.r.t. the stacked matrix that belongs to ``m`` or ``y`` (the
    transposes of :func:`_cov_input` undone)."""
    x = m_ if which == "m" else y
    xa = asarray(x, like=gX)
    part = gX[:nm] if which == "m" else gX[nm:]
    if not rowvar:
        if which == "m" and xa.ndim != 1:
            part = part.T
        elif which == "y" and (xa.ndim >= 2 and xa.shape[0] != 1):
            part = part.T
    return like(part.reshape(xa.shape), x)


def _cov_fact(X, bias, ddof):
    if ddof is None:
        ddof = 0 if bias else 1
    return X.shape[1] - ddof


def cov(g, ans, m_, y=None, rowvar=True, bias=False, ddof=None, dtype=None, which="m"):
    """Adjoint of ``np.cov``: C = Xc Xc^H / f with Xc the rows of X centred, so
    gXc = (G + G^H) Xc / f, and centring is its own adjoint."""
    X, nm = _cov_input(m_, y, rowvar, dtype)
    p = X.shape[0]
    Xc = X - X.mean(axis=1, keepdims=True)
    G = asarray(g, like=X).reshape(p, p)
    gX = (G + _mH(G)) @ Xc / _cov_fact(X, bias, ddof)
    gX = gX - gX.mean(axis=1, keepdims=True)
    return _cov_back(gX, m_, y, rowvar, nm, which)


def _cov_tangent_stacked(t, m_, y, rowvar, dtype, which):
    X, nm = _cov_input(m_, y, rowvar, dtype)
    z = [xp(X).zeros(shape(m_), dtype=X.dtype) if which != "m" else t]
    if y is not None:
        z.append(t if which == "y" else xp(X).zeros(shape(y), dtype=X.dtype))
    T, _ = _cov_input(z[0], z[1] if y is not None else None, rowvar, X.dtype)
    return X, T


def cov_tangent(t, ans, m_, y=None, rowvar=True, bias=False, ddof=None, dtype=None, which="m"):
    X, T = _cov_tangent_stacked(t, m_, y, rowvar, dtype, which)
    Xc = X - X.mean(axis=1, keepdims=True)
    Tc = T - T.mean(axis=1, keepdims=True)
    d = Tc @ _mH(Xc)
    return ((d + _mH(d)) / _cov_fact(X, bias, ddof)).reshape(shape(ans))


def corrcoef(g, ans, x, y=None, rowvar=True, dtype=None, which="x"):
    """Adjoint of ``np.corrcoef``: R = C / (s s^T), s = sqrt(Re diag C), through ``cov``."""
    X, nm = _cov_input(x, y, rowvar, dtype)
    p = X.shape[0]
    if p == 1:                               # R = C / C = 1
        return like(xp(X).zeros(shape(x) if which == "x" else shape(y), dtype=X.dtype),
                    x if which == "x" else y)
    Xc = X - X.mean(axis=1, keepdims=True)
    C = Xc @ _mH(Xc) / (X.shape[1] - 1)
    d = xp(X).diagonal(C).real
    s = xp(X).sqrt(d)
    R = C / s[:, None] / s[None, :]
    G = asarray(g, like=X).reshape(p, p)
    gC = G / s[:, None] / s[None, :]
    gR = (cj(G) * R).real
    gd = -0.5 * (gR.sum(axis=1) + gR.sum(axis=0)) / d
    gC = gC + xp(X).diag(gd).astype(gC.dtype)
    return cov(gC, None, x, y, rowvar, False, None, dtype, "m" if which == "x" else "y")


def corrcoef_tangent(t, ans, x, y=None, rowvar=True, dtype=None, which="x"):
    X, T = _cov_tangent_stacked(t, x, y, rowvar, dtype, "m" if which == "x" else "y")
    p = X.shape[0]
    m = xp(X)
    if p == 1:
        return 0 * asarray(ans, like=X)
    Xc = X - X.mean(axis=1, keepdims=True)
    Tc = T - T.mean(axis=1, keepdims=True)
    f = X.shape[1] - 1
    C = Xc @ _mH(Xc) / f
    dC = Tc @ _mH(Xc)
    dC = (dC + _mH(dC)) / f
    d = m.diagonal(C).real
    s = m.sqrt(d)
    R = C / s[:, None] / s[None, :]
    dd = m.diagonal(dC).real / d
    return (dC / s[:, None] / s[None, :] - 0.5 * R * (dd[:, None] + dd[None, :])).reshape(shape(ans))


# -- signal: cross, convolve/correlate, interp, trapezoid, polyval ---------------------------------
def _cross_axes(axisa, axisb, axisc, axis):
    if axis is not None:
        return axis, axis, axis
    return axisa, axisb, axisc


def cross(g, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None, which=0):
    """Adjoint of ``np.cross``: g . (a x b) = a . (b x g), so ``a`` gets conj(b) x g and ``b``
    gets g x conj(a) (2-vectors taken as 3-vectors with a zero third component)."""
    axisa, axisb, axisc = _cross_axes(axisa, axisb, axisc, axis)
    m = xp(g, a, b)
    A = m.moveaxis(asarray(a, like=g), axisa, -1)
    B = m.moveaxis(asarray(b, like=g), axisb, -1)
    na, nb = A.shape[-1], B.shape[-1]

    def three(v):
        if v.shape[-1] == 3:
            return v
        return m.concatenate([v, m.zeros(v.shape[:-1] + (1,), dtype=v.dtype)], axis=-1)
    g_ = asarray(g, like=A)
    if na == 2 and nb == 2:
        z = m.zeros(g_.shape + (2,), dtype=g_.dtype)
        G = m.concatenate([z, g_[..., None]], axis=-1)
    else:
        G = m.moveaxis(g_, axisc, -1) if g_.ndim else g_
    if which == 0:
        r = m.cross(cj(three(B)), G)[..., :na]
        return like(m.moveaxis(_rt.unbroadcast(r, A), -1, axisa), a)
    r = m.cross(G, cj(three(A)))[..., :nb]
    return like(m.moveaxis(_rt.unbroadcast(r, B), -1, axisb), b)


def _full_from_mode(g, n, k, mode):
    """The zero-padded full-mode adjoint of a 1-D convolution result in ``mode``."""
    m = xp(g)
    g = asarray(g)
    L = n + k - 1
    mn, mx = min(n, k), max(n, k)
    if mode == "full":
        return g
    off = (mn - 1) // 2 if mode == "same" else mn - 1
    return m.concatenate([m.zeros(off, dtype=g.dtype), g,
                          m.zeros(L - off - g.shape[0], dtype=g.dtype)])


def _mode_name(mode):
    return {0: "valid", 1: "same", 2: "full"}.get(mode, mode)


def convolve(g, a, v, mode="full", which=0):
    """Adjoint of ``np.convolve`` (c = a * v): ``a`` gets correlate(g_full, v, 'valid'), ``v``
    gets correlate(g_full, a, 'valid')."""
    m = xp(g, a, v)
    A = asarray(a, like=g).reshape(-1)
    V = asarray(v, like=g).reshape(-1)
    gf = _full_from_mode(g, A.shape[0], V.shape[0], _mode_name(mode))
    if which == 0:
        return like(m.correlate(gf, V, "valid").reshape(shape(a)), a)
    return like(m.correlate(gf, A, "valid").reshape(shape(v)), v)


def correlate(g, a, v, mode="valid", which=0):
    """Adjoint of ``np.correlate(a, v)`` = convolve(a, conj(v[::-1]))."""
    m = xp(g, a, v)
    V = asarray(v, like=g).reshape(-1)
    vr = cj(m.flip(V, 0))
    if which == 0:
        return convolve(g, a, vr, mode, 0)
    r = asarray(convolve(g, a, vr, mode, 1))
    return like(cj(m.flip(r, 0)).reshape(shape(v)), v)


def _interp_setup(x, xp_, fp):
    m = xp(x, xp_, fp)
    X = asarray(x, like=fp)
    P = asarray(xp_, like=fp)
    F = asarray(fp, like=P)
    n = P.shape[0]
    j = m.clip(m.searchsorted(P, X, side="right") - 1, 0, max(n - 2, 0))
    j1 = m.minimum(j + 1, n - 1)
    dx = P[j1] - P[j]
    safe = m.where(dx == 0, 1, dx)
    w = m.where(dx == 0, 0, (X - P[j]) / safe)
    below = X < P[0]
    above = X > P[n - 1]
    inside = ~(below | above)
    return m, X, P, F, n, j, j1, w, safe, dx, below, above, inside


def interp(g, x, xp_, fp, left=None, right=None, which="fp"):
    """Adjoint of ``np.interp``: ``fp`` gets g split between the two neighbouring knots by the
    interpolation weights (and the end values outside, unless left/right are given); ``x`` gets g
    times the slope of the segment (0 outside); ``xp`` through the segment's end points."""
    m, X, P, F, n, j, j1, w, safe, dx, below, above, inside = _interp_setup(x, xp_, fp)
    g_ = asarray(g, like=P)
    gb = m.broadcast_to(g_, X.shape)
    if which == "fp":
        out = m.zeros(F.shape, dtype=np.result_type(F.dtype, g_.dtype))
        lo_w = m.where(inside, 1 - w, 0).astype(out.real.dtype)
        hi_w = m.where(inside, w, 0).astype(out.real.dtype)
        _rt.scatter_add(out, j.reshape(-1), (gb * lo_w).reshape(-1))
        _rt.scatter_add(out, j1.reshape(-1), (gb * hi_w).reshape(-1))
        if left is None:
            out[0] += (gb * below).sum()
        if right is None:
            out[n - 1] += (gb * above).sum()
        return like(out, fp)
    if which == "left":
        return _rt.unbroadcast((gb * below).sum(), left) if hasattr(left, "shape") else \
            like((gb * below).sum(), left)
    if which == "right":
        return _rt.unbroadcast((gb * above).sum(), right) if hasattr(right, "shape") else \
            like((gb * above).sum(), right)
    slope = m.where(inside & (dx != 0), (F[j1] - F[j]) / safe, 0)
    if which == "x":
        r = gb * cj(slope)
        return _rt.unbroadcast(r, x) if hasattr(x, "shape") and not isinstance(x, np.generic) \
            else like(r, x)
    # xp: the knots of the segment: d/dxp[j] = -slope (1 - w), d/dxp[j+1] = -slope w
    c = gb * cj(slope)
    out = m.zeros(P.shape, dtype=np.result_type(P.dtype, c.real.dtype))
    _rt.scatter_add(out, j.reshape(-1), (-(c * (1 - w)).real).reshape(-1))
    _rt.scatter_add(out, j1.reshape(-1), (-(c * w).real).reshape(-1))
    return like(out, xp_)


def interp_tangent(t, x, xp_, fp, left=None, right=None, which="fp"):
    m, X, P, F, n, j, j1, w, safe, dx, below, above, inside = _interp_setup(x, xp_, fp)
    t_ = asarray(t, like=P)
    if which == "fp":
        r = m.where(inside, (1 - w) * t_[j] + w * t_[j1], 0 * t_[j])
        if left is None:
            r = r + m.where(below, t_[0], 0 * t_[0])
        if right is None:
            r = r + m.where(above, t_[n - 1], 0 * t_[0])
        return r
    if which in ("left", "right"):
        mask = below if which == "left" else above
        return m.where(mask, t_, 0 * t_)
    slope = m.where(inside & (dx != 0), (F[j1] - F[j]) / safe, 0)
    if which == "x":
        return slope * t_
    return -slope * ((1 - w) * t_[j] + w * t_[j1])


def _trap_parts(y, x, dx, axis):
    y_ = asarray(y)
    m = xp(y_, x)
    nd = y_.ndim
    ax = axis % nd
    s1 = [slice(None)] * nd
    s2 = [slice(None)] * nd
    s1[ax] = slice(1, None)
    s2[ax] = slice(None, -1)
    if x is None:
        d = asarray(dx, like=y_)
    else:
        xa = asarray(x, like=y_)
        if xa.ndim == 1:
            d = m.diff(xa)
            sh = [1] * nd
            sh[ax] = d.shape[0]
            d = d.reshape(sh)
        else:
            d = m.diff(xa, axis=ax)
    return m, y_, ax, tuple(s1), tuple(s2), d


def trapezoid(g, y, x=None, dx=1.0, axis=-1, which="y"):
    """Adjoint of ``np.trapezoid``: sum(d (y[1:] + y[:-1]) / 2) with d = diff(x) or dx."""
    m, y_, ax, s1, s2, d = _trap_parts(y, x, dx, axis)
    mid = (y_[s1] + y_[s2]) / 2
    ge = expand(g, shape(mid * d), ax, False, like=y_)
    if which == "y":
        h = ge * cj(d) / 2
        h = m.broadcast_to(h, np.broadcast_shapes(h.shape, mid.shape))
        pw1 = [(0, 0)] * h.ndim
        pw2 = [(0, 0)] * h.ndim
        pw1[ax] = (1, 0)
        pw2[ax] = (0, 1)
        return like(_rt.unbroadcast(m.pad(h, pw1) + m.pad(h, pw2), y_), y)
    gd = ge * cj(mid)
    if which == "dx":
        return _rt.unbroadcast(gd, dx) if hasattr(dx, "shape") and not isinstance(dx, np.generic) \
            else like(gd.sum(), dx)
    xa = asarray(x, like=y_)
    if xa.ndim == 1:
        gd = gd.sum(axis=tuple(i for i in range(gd.ndim) if i != ax))
        return like(diff(gd, xa, 1, 0), x)
    gd = _rt.unbroadcast(gd, m.diff(xa, axis=ax))
    return like(diff(gd, xa, 1, ax), x)


def trapezoid_tangent(t, y, x=None, dx=1.0, axis=-1, which="y"):
    m, y_, ax, s1, s2, d = _trap_parts(y, x, dx, axis)
    if which == "y":
        t_ = asarray(t, like=y_)
        return (d * (t_[s1] + t_[s2]) / 2).sum(axis=ax)
    mid = (y_[s1] + y_[s2]) / 2
    if which == "dx":
        return (asarray(t, like=y_) * mid).sum(axis=ax)
    _, _, _, _, _, dt = _trap_parts(y, t, dx, axis)
    return (dt * mid).sum(axis=ax)


def _horner(p, x):
    y = 0 * x
    for k in range(p.shape[0]):
        y = y * x + p[k]
    return y


def polyval(g, p, x, which="p"):
    """Adjoint of ``np.polyval``: ``p[k]`` gets g conj(x^(N-k)), ``x`` gets g conj(p'(x))."""
    P = asarray(p, like=x)
    m = xp(P, x)
    X = asarray(x, like=P)
    N = P.shape[0] - 1
    g_ = asarray(g, like=P)
    if which == "x":
        if N < 1:
            return like(0 * g_, x) if not hasattr(x, "shape") else _rt.unbroadcast(0 * g_, x)
        k = m.arange(N, 0, -1).reshape((N,) + (1,) * (P.ndim - 1))
        r = g_ * cj(_horner(P[:-1] * k, X))
        return _rt.unbroadcast(r, x) if hasattr(x, "shape") and not isinstance(x, np.generic) \
            else like(r, x)
    out = []
    pw = m.ones_like(X)
    rows = [None] * (N + 1)
    for k in range(N, -1, -1):
        rows[k] = _rt.unbroadcast(g_ * cj(pw), P[k]) if P.ndim > 1 else (g_ * cj(pw)).sum()
        pw = pw * X
    out = m.stack([asarray(r, like=P) for r in rows])
    return like(out, p)


def polyval_tangent(t, p, x, which="p"):
    P = asarray(p, like=x)
    m = xp(P, x)
    X = asarray(x, like=P)
    if which == "p":
        return _horner(asarray(t, like=P), X)
    N = P.shape[0] - 1
    if N < 1:
        return 0 * asarray(t, like=P) * X
    k = m.arange(N, 0, -1).reshape((N,) + (1,) * (P.ndim - 1))
    return asarray(t, like=P) * _horner(P[:-1] * k, X)


# -- more linear algebra: pinv, lstsq, matrix_power, multi_dot --------------------------------------
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


# -- FFT ------------------------------------------------------------------------------------------
_DUAL_NORM = {None: "forward", "backward": "forward", "ortho": "ortho", "forward": "backward"}


def _dual(norm):
    try:
        return _DUAL_NORM[norm]
    except KeyError:
        raise RuleError(f"fft: norm={norm!r} is not one of None, 'backward', 'ortho', 'forward'",
                        fix="use norm=None, 'backward', 'ortho' or 'forward'")


def _fit(g, length, axis):
    """``g`` cut or zero-padded along ``axis`` to ``length`` (the adjoint of NumPy's n=/s=)."""
    m = xp(g)
    n = g.shape[axis]
    if n == length:
        return g
    if n > length:
        idx = [slice(None)] * g.ndim
        idx[axis] = slice(0, length)
        return g[tuple(idx)]
    pw = [(0, 0)] * g.ndim
    pw[axis] = (0, length - n)
    return m.pad(g, pw)


def _fft_axes(a, s, axes):
    nd = ndim(a)
    if axes is None:
        axes = tuple(range(nd)) if s is None else tuple(range(nd - len(s), nd))
    return tuple(int(ax) % nd for ax in axes)


def fft(g, a, n=None, axis=-1, norm=None, inverse=False):
    """Adjoint of ``fft`` (``ifft`` with inverse=True): the other transform with the dual norm,
    cut / padded back to the input's length."""
    m = xp(a)
    A = asarray(a)
    G = asarray(g, like=A)
    f = m.fft.fft if inverse else m.fft.ifft
    r = f(G, axis=axis, norm=_dual(norm))
    return like(_fit(r, A.shape[axis], axis), a)


def fftn(g, a, s=None, axes=(-2, -1), norm=None, inverse=False):
    m = xp(a)
    A = asarray(a)
    G = asarray(g, like=A)
    axes = _fft_axes(A, s, axes)
    f = m.fft.fftn if inverse else m.fft.ifftn
    r = f(G, axes=axes, norm=_dual(norm))
    for ax in axes:
        r = _fit(r, A.shape[ax], ax)
    return like(r, a)


def rfft(g, a, n=None, axis=-1, norm=None):
    """Adjoint of ``rfft`` (real input): Re of the inverse transform of g zero-filled to the full
    spectrum, with the dual norm."""
    m = xp(a)
    A = asarray(a)
    G = asarray(g, like=A)
    ax = axis % A.ndim
    nn = A.shape[ax] if n is None else int(n)
    full = _fit(G, nn, ax)
    r = m.fft.ifft(full, axis=ax, norm=_dual(norm)).real
    return like(_fit(r, A.shape[ax], ax), a)


def irfft(g, a, n=None, axis=-1, norm=None):
    """Adjoint of ``irfft``: y = c sum_k w_k Re(a_k e^(2 pi i jk/n)) with w = 1 at 0 and the
    Nyquist bin, 2 elsewhere, so ``a`` gets w * rfft(g) with the dual norm."""
    m = xp(a)
    A = asarray(a)
    G = asarray(g, like=A)
    ax = axis % A.ndim
    nn = 2 * (A.shape[ax] - 1) if n is None else int(n)
    r = m.fft.rfft(G.real if G.dtype.kind == "c" else G, n=nn, axis=ax, norm=_dual(norm))
    k = r.shape[ax]
    w = m.full(k, 2.0, dtype=r.real.dtype)
    w[0] = 1.0
    if nn % 2 == 0:
        w[-1] = 1.0
    sh = [1] * r.ndim
    sh[ax] = k
    r = r * w.reshape(sh)
    return like(_fit(r, A.shape[ax], ax), a)


def _nan_to_num_mask(x, which):
    m = xp(x)
    X = asarray(x)
    if which == "x":
        return m.isfinite(X)
    if X.dtype.kind == "c":          # NumPy replaces the real and imaginary parts separately
        X = X.real
    if which == "nan":
        return m.isnan(X)
    return m.isposinf(X) if which == "posinf" else m.isneginf(X)


def nan_to_num(g, x, which="x", value=None):
    """Adjoint of ``nan_to_num``: ``x`` gets g where it is finite, 0 where it was replaced; an
    active ``nan=`` / ``posinf=`` / ``neginf=`` value gets the sum of g over what it replaced."""
    ok = _nan_to_num_mask(x, which)
    gx = asarray(g, like=asarray(x))
    r = xp(gx).where(ok, gx, 0 * gx)
    if which == "x":
        return like(r, x)
    r = r.real if asarray(x).dtype.kind == "c" else r
    return _rt.unbroadcast(r, value)


def nan_to_num_tangent(t, x, which="x"):
    ok = _nan_to_num_mask(x, which)
    t_ = asarray(t, like=asarray(x))
    return xp(ok).where(ok, t_, 0 * t_)


def slogdet_tangent(t, ans, a):
    """Tangent of ``slogdet``: (sign, log|det|) move by (i Im tr(a^-1 t) sign, Re tr(a^-1 t))."""
    m = xp(a, t)
    tr = m.trace(m.linalg.solve(a, t), axis1=-2, axis2=-1)
    sign = ans[0]
    if m.iscomplexobj(tr):
        return (1j * tr.imag * sign, tr.real)
    return (m.zeros_like(sign), tr)


# -- ufunc methods and np.select -------------------------------------------------------------------
def running_extremum(g, ans, a, axis=0):
    """Adjoint of ``np.maximum.accumulate`` / ``np.minimum.accumulate``.

    Output ``i`` equals the elements ``j <= i`` where the running extremum was reached with its
    current value (its "plateau"); like ``np.max``, its adjoint is shared evenly among them (what
    central differences give at a tie)."""
    a = asarray(a)
    m = xp(a)
    if a.ndim == 0:
        return like(asarray(g, like=a), a)
    axis = axis % a.ndim
    A = m.moveaxis(a, axis, -1)
    Y = m.moveaxis(asarray(ans, like=a), axis, -1)
    G = m.moveaxis(m.broadcast_to(asarray(g, like=a), a.shape), axis, -1)
    n = A.shape[-1]
    idx = m.broadcast_to(m.arange(n), A.shape)
    hit = A == Y                                    # element j is (one of) the extremum at j
    start = m.ones(Y.shape, dtype=bool)
    start[..., 1:] = Y[..., 1:] != Y[..., :-1]      # a new plateau of the running extremum
    end = m.ones(Y.shape, dtype=bool)
    end[..., :-1] = start[..., 1:]
    first = m.maximum.accumulate(m.where(start, idx, 0), axis=-1)
    last = m.flip(m.minimum.accumulate(m.flip(m.where(end, idx, n - 1), -1), axis=-1), -1)
    hits = m.cumsum(hit, axis=-1)
    before = m.take_along_axis(hits - hit, first, axis=-1)
    w = G / m.maximum(hits - before, 1)             # output i's share for each of its elements
    cw = m.cumsum(w, axis=-1)
    r = m.where(hit, m.take_along_axis(cw, last, axis=-1) - (cw - w), 0 * w)
    return like(m.moveaxis(r, -1, axis), a)


_OUTER_OPS = ("add", "subtract", "multiply", "divide", "true_divide")


def ufunc_outer(g, a, b, op, which):
    """Adjoint of ``np.<op>.outer(a, b)`` (shape ``a.shape + b.shape``) for ``a`` (which=0) or
    ``b`` (which=1): the elementwise adjoint summed over the other operand's axes."""
    m = xp(a, b, g)
    A, B, g = m.asarray(a), m.asarray(b), m.asarray(g)
    na, nb = A.ndim, B.ndim
    Ae = A.reshape(A.shape + (1,) * nb)
    Be = B.reshape((1,) * na + B.shape)
    if op == "add":
        d = g
    elif op == "subtract":
        d = g if which == 0 else -g
    elif op == "multiply":
        d = g * cj(Be) if which == 0 else g * cj(Ae)
    else:                                   # divide
        d = g / cj(Be) if which == 0 else -g * cj(Ae / (Be * Be))
    axes = tuple(range(na, na + nb)) if which == 0 else tuple(range(na))
    r = d.sum(axis=axes) if axes else d
    return like(r, a if which == 0 else b)


def ufunc_outer_tangent(t, a, b, op, which):
    """Tangent of ``np.<op>.outer(a, b)`` along ``a`` (which=0) or ``b`` (which=1)."""
    m = xp(a, b, t)
    a, b, t = m.asarray(a), m.asarray(b), m.asarray(t)
    if op in ("add", "subtract"):
        z = m.zeros_like(b if which == 0 else a)
        if which == 0:
            return m.add.outer(t, z)
        return m.add.outer(z, t) if op == "add" else m.subtract.outer(z, t)
    if op == "multiply":
        return m.multiply.outer(t, b) if which == 0 else m.multiply.outer(a, t)
    if which == 0:
        return m.divide.outer(t, b)
    return -m.multiply.outer(a, t / (b * b))


def _select_masks(g, condlist):
    """For each condition, where it is the first true one (np.select's choice)."""
    m = xp(g)
    taken = m.zeros(g.shape, dtype=bool)
    masks = []
    for c in condlist:
        c = m.broadcast_to(asarray(c, like=g).astype(bool), g.shape)
        masks.append(c & ~taken)
        taken = taken | c
    return masks, taken


def select(g, condlist, choicelist, default, which):
    """Adjoint of ``np.select(condlist, choicelist, default)``: each choice gets g where its
    condition is the first true one, ``default`` where none is."""
    g = asarray(g)
    m = xp(g)
    masks, taken = _select_masks(g, condlist)
    if which == "default":
        return _rt.unbroadcast(m.where(taken, 0 * g, g), default)
    return tuple(_rt.unbroadcast(m.where(mk, g, 0 * g), ch) for mk, ch in zip(masks, choicelist))


def select_tangent(t, condlist, choicelist, which):
    """Tangent of ``np.select`` along the choices (``t`` a list) or ``default``."""
    if which == "default":
        t = asarray(t)
        m = xp(t)
        shape = np.broadcast_shapes(t.shape, *[np.shape(c) for c in condlist])
        _, taken = _select_masks(m.zeros(shape, dtype=t.dtype), condlist)
        return m.where(taken, 0 * t, t)
    ts = tangent_list(t, choicelist)
    return xp(*ts).select(list(condlist), ts, default=0)


# -- a zero adjoint in, a zero adjoint out ---------------------------------------------------------
# Adjoints are linear in the incoming adjoint ``g`` and tangents in ``t``.  Generated code uses 0.0
# as the zero of every kind (where branches join, an adjoint that one side did not produce is 0.0),
# and such a zero can reach a helper that reshapes or indexes ``g``.  Every public helper whose
# first parameter is ``g`` or ``t`` therefore answers 0.0 for it without running.
_NOT_LINEAR_ENTRY = {"is_zero", "like", "expand", "full_like", "tmap_zero", "tangent_list"}


def _zero_passes_through(fn):
    @functools.wraps(fn)
    def helper(g, *args, **kwargs):
        if type(g) is float and g == 0.0 or g is None:
            return 0.0
        return fn(g, *args, **kwargs)
    return helper


def _wrap_linear_helpers():
    import inspect
    mod = globals()
    for name, fn in list(mod.items()):
        if name.startswith("_") or name in _NOT_LINEAR_ENTRY or not inspect.isfunction(fn) or \
                fn.__module__ != __name__:
            continue
        params = list(inspect.signature(fn).parameters)
        if params and params[0] in ("g", "t"):
            mod[name] = _zero_passes_through(fn)


_wrap_linear_helpers()
