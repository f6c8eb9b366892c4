"""Reductions: ``sum``, ``mean``, ``prod``, ``max``/``min``, ``var``, ``std``, ``cumsum``,
``cumprod`` (functions and ndarray methods).
"""
import numpy as np

from ..adjoints import (A, _NDARRAY, _NoValue, _count_as, _each, _flag, _inverse, _np, _shape_only,
                        asarray, broadcast, cj, count, device_view, expand, export, full_like,
                        is_zero, like, ndim, norm_axes, shape, xp)
from ...kernels import rows as _rows
from ..registry import defmethod

_RED = "a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True"
# where= (a mask that carries no derivative, broadcast against a) is passed on to the helpers and
# to NumPy as a keyword; where=True, the default, is dropped from the generated text
# (codegen/text.py), which then reads as the call without it
_each(_np("sum"), _RED,
      vjp={"a": "_rt.dtype_guard(dtype, _adj.sum(g, a, axis, keepdims, where=where))",
           "initial": "_rt.unbroadcast(g, initial)"},
      jvp={"a": "np.sum(t, axis=axis, keepdims=keepdims, where=where)"}, forbid={"out": None},
      ns=A)
_each(_np("mean"), "a, axis=None, dtype=None, out=None, keepdims=False, *, where=True",
      vjp={"a": "_adj.mean(g, a, axis, keepdims, where=where)"},
      jvp={"a": "np.mean(t, axis=axis, keepdims=keepdims, where=where)"}, forbid={"out": None},
      ns=A)
_each(_np("prod"), _RED,
      vjp={"a": "_rt.dtype_guard(dtype, _adj.prod(_rt.times_initial(g, initial), a, axis, keepdims, "
                "where=where))",
           "initial": "_rt.unbroadcast(g * np.prod(a, axis=axis, keepdims=keepdims, where=where), "
                      "initial)"},
      jvp={"a": "_rt.times_initial(_adj.prod_tangent(t, a, axis, keepdims, where=where), initial)",
           "initial": "t * np.prod(a, axis=axis, keepdims=keepdims, where=where)"},
      forbid={"out": None}, ns=A)
_MAX = "a, axis=None, out=None, keepdims=False, initial=None, where=True"
_each(_np("max", "amax", "min", "amin"), _MAX,
      vjp={"a": "_adj.extremum(g, ans, a, axis, keepdims, where=where)",
           "initial": "_rt.extremum_initial_adjoint(g, ans, a, initial, axis, keepdims, "
                      "where=where)"},
      jvp={"a": "_adj.extremum_tangent(t, ans, a, axis, keepdims, where=where)"},
      forbid={"out": None}, ns=A)
_VAR = ("a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, "
        "mean=None, correction=None")
_each(_np("var"), _VAR,
      vjp={"a": "_adj.var(g, a, axis, _adj._correction(ddof, correction), keepdims, where=where)"},
      jvp={"a": "_adj.var_tangent(t, a, axis, _adj._correction(ddof, correction), keepdims, "
                "where=where)"},
      forbid={"out": None, "mean": None}, ns=A)
_each(_np("std"), _VAR,
      vjp={"a": "_adj.std(g, ans, a, axis, _adj._correction(ddof, correction), keepdims, "
                "where=where)"},
      jvp={"a": "_adj.std_tangent(t, ans, a, axis, _adj._correction(ddof, correction), "
                "keepdims, where=where)"},
      forbid={"out": None, "mean": None}, ns=A)
_each(_np("cumsum"), "a, axis=None, dtype=None, out=None",
      vjp={"a": "_adj.cumsum(g, a, axis)"}, jvp={"a": "np.cumsum(t, axis=axis)"},
      forbid={"out": None}, ns=A)
_each(_np("cumprod"), "a, axis=None, dtype=None, out=None",
      vjp={"a": "_adj.cumprod(g, ans, a, axis)"}, forbid={"out": None}, ns=A)
# the array API's: axis=None for 1-d arrays only; include_initial=True puts the sum's 0 (the
# product's 1) first along the axis, a constant: its cotangent entry is dropped
_CUMUL = "x, /, *, axis=None, dtype=None, out=None, include_initial=False"
_each(_np("cumulative_sum"), _CUMUL,
      vjp={"x": "_adj.cumulative_sum(g, x, axis, include_initial)"},
      jvp={"x": "np.cumulative_sum(t, axis=axis, include_initial=include_initial)"},
      forbid={"out": None}, ns=A)
_each(_np("cumulative_prod"), _CUMUL,
      vjp={"x": "_adj.cumulative_prod(g, ans, x, axis, include_initial)"},
      forbid={"out": None}, ns=A)

# -- ndarray methods -------------------------------------------------------------------------------
defmethod("sum", "self, axis=None, dtype=None, out=None, keepdims=False, initial=None, "
          "where=True",
          vjp={"self": "_rt.dtype_guard(dtype, _adj.sum(g, self, axis, keepdims, where=where))",
               "initial": "_rt.unbroadcast(g, initial)"},
          jvp={"self": "np.sum(t, axis=axis, keepdims=keepdims, where=where)"},
          forbid={"out": None}, ns=A)
defmethod("mean", "self, axis=None, dtype=None, out=None, keepdims=False, *, where=True",
          vjp={"self": "_adj.mean(g, self, axis, keepdims, where=where)"},
          jvp={"self": "np.mean(t, axis=axis, keepdims=keepdims, where=where)"},
          forbid={"out": None}, ns=A)
defmethod("prod", "self, axis=None, dtype=None, out=None, keepdims=False, initial=None, "
          "where=True",
          vjp={"self": "_rt.dtype_guard(dtype, _adj.prod(_rt.times_initial(g, initial), self, axis, "
                       "keepdims, where=where))",
               "initial": "_rt.unbroadcast(g * np.prod(self, axis=axis, keepdims=keepdims, "
                          "where=where), initial)"},
          forbid={"out": None}, ns=A)
for _k in ("max", "min"):
    defmethod(_k, "self, axis=None, out=None, keepdims=False, initial=None, where=True",
              vjp={"self": "_adj.extremum(g, ans, self, axis, keepdims, where=where)"},
              forbid={"out": None}, ns=A)
_MVAR = ("self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, "
         "mean=None, correction=None")
defmethod("var", _MVAR,
          vjp={"self": "_adj.var(g, self, axis, _adj._correction(ddof, correction), keepdims, "
                       "where=where)"},
          forbid={"out": None, "mean": None}, ns=A)
defmethod("std", _MVAR,
          vjp={"self": "_adj.std(g, ans, self, axis, _adj._correction(ddof, correction), "
                       "keepdims, where=where)"},
          forbid={"out": None, "mean": None}, ns=A)
defmethod("cumsum", "self, axis=None, dtype=None, out=None",
          vjp={"self": "_adj.cumsum(g, self, axis)"}, jvp={"self": "t.cumsum(axis)"},
          forbid={"out": None}, ns=A)
defmethod("cumprod", "self, axis=None, dtype=None, out=None",
          vjp={"self": "_adj.cumprod(g, ans, self, axis)"}, forbid={"out": None}, ns=A)


# -- helpers the templates call --------------------------------------------------------------------
def _unmasked(where):
    """True for ``where=True`` (NumPy's default: every element takes part)."""
    return where is True or where is _NoValue or \
        (isinstance(where, (bool, np.bool_)) and bool(where))


def _mask(where, a):
    """``where=`` as a boolean array of a's shape, in a's array module."""
    m = xp(a)
    return m.broadcast_to(m.asarray(where, dtype=bool), shape(a))


def _keep(w, r, a):
    """``r`` where the mask ``w`` is True, 0 elsewhere, as an adjoint for ``a``."""
    return like(xp(a).where(w, r, 0), a)


def _masked_count(w, axis, like_=None):
    """How many elements of each reduction group the mask ``w`` keeps (kept dims, at least 1:
    an empty group gives nothing rather than 0/0), in like_'s real dtype."""
    n = w.sum(axis=norm_axes(axis, w.ndim), keepdims=True)
    return _count_as(xp(w).maximum(n, 1), like_)


def _masked_centered(a, axis, w):
    """(n, d) for var/std with ``where=`` (and the nan-reductions', statistics.py): the count of
    each group (kept dims) and ``a`` minus its mean over the kept elements, 0 at the others."""
    m = xp(a)
    axes = norm_axes(axis, a.ndim)
    n = w.sum(axis=axes, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        mu = m.where(w, a, 0).sum(axis=axes, keepdims=True) / _count_as(m.maximum(n, 1), a)
    return n, m.where(w, a - mu, 0)


@_shape_only("a")
def sum(g, a, axis=None, keepdims=False, where=True):
    """Adjoint of ``np.sum(a, axis, keepdims)``: g broadcast along the reduced axes (for a NumPy
    array a read-only view, :func:`~s2sad.rules.adjoints.broadcast`); 0 where ``where=`` is
    False."""
    if not _unmasked(where):
        return _keep(_mask(where, a), sum(g, a, axis, keepdims), a)
    if type(a) is _NDARRAY or device_view(a):
        if axis is None and not _flag(keepdims):
            return broadcast(g, a)                         # the common case, directly
        return broadcast(expand(g, shape(a), axis, _flag(keepdims), like=a), a)
    if axis is None and _real_scalar(g) and _real_array(a):
        return xp(a).full(a.shape, g, dtype=a.dtype)       # (CuPy: one fill, no host scalar)
    return full_like(expand(g, shape(a), axis, _flag(keepdims), like=a), a)


@_shape_only("a")
def mean(g, a, axis=None, keepdims=False, where=True):
    if not _unmasked(where):
        # the mean of the kept elements: g over their count, 0 at the others
        w = _mask(where, a)
        ge = expand(g, shape(a), axis, _flag(keepdims), like=a)
        return _keep(w, ge / _masked_count(w, axis, ge), a)
    n = count(shape(a), axis)
    if type(a) is _NDARRAY or device_view(a):
        if axis is None and not _flag(keepdims):
            return broadcast(g / n, a)
        return broadcast(expand(g, shape(a), axis, _flag(keepdims), like=a) / n, a)
    if axis is None and _real_scalar(g) and _real_array(a):
        # one fill in a's dtype: no 0-d array for g, no division on the device, no float64
        return xp(a).full(a.shape, g / n, dtype=a.dtype)
    return full_like(expand(g, shape(a), axis, _flag(keepdims), like=a) / n, a)


def _real_scalar(g):
    """A real number held on the host (a Python float, a NumPy floating scalar)."""
    return type(g) is float or isinstance(g, np.floating)


def _real_array(a):
    dt = getattr(a, "dtype", None)
    return dt is not None and dt.kind == "f" and hasattr(a, "shape") and \
        not isinstance(a, np.generic) and hasattr(xp(a), "full")


def _groups(a, axes):
    """``a`` with each reduction group flattened onto the last axis: (flat, perm, the shape
    before flattening); ``perm`` puts the reduced axes last."""
    nd = a.ndim
    keep = [i for i in range(nd) if i not in axes]
    perm = keep + list(axes)
    t = a.transpose(perm)
    n = int(np.prod(t.shape[len(keep):])) if axes else 1
    return t.reshape(t.shape[:len(keep)] + (n,)), perm, t.shape


def _others_product(a, axes):
    """For each element, the product of the other elements of its reduction group (exact with zeros)."""
    m = xp(a)
    a = asarray(a)
    if a.size == 0:
        # a zero-length group (or no group at all): nothing to multiply, an empty result
        return m.ones(a.shape, dtype=a.dtype)
    flat, perm, tshape = _groups(a, axes)
    one = m.ones(flat.shape[:-1] + (1,), dtype=a.dtype)
    left = m.concatenate([one, m.cumprod(flat[..., :-1], axis=-1)], axis=-1)
    right = m.flip(m.concatenate([one, m.cumprod(m.flip(flat, -1)[..., :-1], axis=-1)], axis=-1),
                   -1)
    other = (left * right).reshape(tshape)
    return other.transpose(_inverse(perm))


def _others_product_tangent(a, t, axes):
    """Tangent of :func:`_others_product` along ``t``: for element i, the sum over the other
    elements j of its group of t_j times the product of the elements other than i and j.
    Without zeros, others_i (sum_j t_j / a_j - t_i / a_i); with zeros, the prefix and suffix
    products and their tangents, one step along the group at a time (exact)."""
    m = xp(a)
    t = m.broadcast_to(asarray(t, like=a), a.shape)
    if a.size == 0:
        return m.zeros(a.shape, dtype=np.result_type(a, t))
    if not bool((a == 0).any()):
        q = t / a
        return _others_product(a, axes) * (q.sum(axis=axes, keepdims=True) - q)
    fa, perm, tshape = _groups(a, axes)
    ft = _groups(t, axes)[0]
    n = fa.shape[-1]
    dt = np.result_type(fa, ft)

    def sweep(x, tx):
        """The products of the elements before each position, and their tangents."""
        p, dp = m.ones(x.shape[:-1], dt), m.zeros(x.shape[:-1], dt)
        prods, tans = [], []
        for i in range(n):
            prods.append(p)
            tans.append(dp)
            p, dp = p * x[..., i], dp * x[..., i] + p * tx[..., i]
        return m.stack(prods, axis=-1), m.stack(tans, axis=-1)
    left, dleft = sweep(fa, ft)
    right, dright = sweep(m.flip(fa, -1), m.flip(ft, -1))
    right, dright = m.flip(right, -1), m.flip(dright, -1)
    r = (dleft * right + left * dright).reshape(tshape)
    return r.transpose(_inverse(perm))


def prod(g, a, axis=None, keepdims=False, where=True):
    """Adjoint of ``np.prod``: g times the product of the other elements (exact with zeros);
    with ``where=``, the elements left out count as 1 and get 0."""
    a = asarray(a)
    if not _unmasked(where):
        w = _mask(where, a)
        return _keep(w, prod(g, xp(a).where(w, a, 1), axis, keepdims), a)
    axes = norm_axes(axis, a.ndim)
    ge = expand(g, a.shape, axis, _flag(keepdims), like=a)
    return like(ge * cj(_others_product(a, axes)), a) if a.ndim else like(asarray(g, like=a), a)


def prod_adjoint_tangent(grad, a, axis=None, keepdims=False, where=True, t=0.0):
    """Tangent of :func:`prod` (the adjoint) in ``a``, along ``t``: ``grad`` times the tangent of
    the product of the other elements (a second derivative of ``np.prod``)."""
    a = asarray(a)
    if is_zero(grad) or is_zero(t):
        return like(xp(a).zeros(a.shape, a.dtype), a)
    if not _unmasked(where):
        w = _mask(where, a)
        m = xp(a)
        return _keep(w, prod_adjoint_tangent(grad, m.where(w, a, 1), axis, keepdims,
                                             True, m.where(w, asarray(t, like=a), 0)), a)
    if not a.ndim:
        return like(xp(a).zeros(a.shape, a.dtype), a)
    ge = expand(grad, a.shape, axis, _flag(keepdims), like=a)
    return like(ge * cj(_others_product_tangent(a, t, norm_axes(axis, a.ndim))), a)


def extremum(g, ans, a, axis=None, keepdims=False, where=True):
    """Adjoint of max/min: g shared evenly among the elements equal to the extremum (among those
    ``where=`` keeps)."""
    if type(a) is not _NDARRAY and _unmasked(where):
        r = _rows.extremum_adjoint(g, ans, a, axis, keepdims)   # CuPy, last axis: one kernel
        if r is not None:
            return r
    a = asarray(a)
    ans_e = expand(ans, a.shape, axis, _flag(keepdims), like=a)
    mask = (a == ans_e)
    if not _unmasked(where):
        mask = mask & _mask(where, a)
    # the tie count in a's real dtype: a float32 adjoint stays float32 (an int64 count would
    # make ge / n float64, cast back by like)
    n = mask.sum(axis=norm_axes(axis, a.ndim), keepdims=True,
                 dtype=a.dtype if a.dtype.kind == "f" else None)
    ge = expand(g, a.shape, axis, _flag(keepdims), like=a)
    # where the extremum came from `initial=` no element ties with it: nothing to share
    return like(mask * (ge / xp(a).maximum(n, 1)), a)


def var(g, a, axis=None, ddof=0, keepdims=False, mean=None, where=True):
    a = asarray(a)
    if not _unmasked(where):
        n, d = _masked_centered(a, axis, _mask(where, a))
        ge = expand(g, a.shape, axis, _flag(keepdims), like=a)
        with np.errstate(divide="ignore", invalid="ignore"):
            return like(ge * (2.0 / (n - ddof)) * d, a)
    n = count(a.shape, axis)
    mu = a.mean(axis=norm_axes(axis, a.ndim), keepdims=True) if mean is None or mean is _NoValue \
        else mean
    ge = expand(g, a.shape, axis, _flag(keepdims), like=a)
    return like(ge * (2.0 / (n - ddof)) * (a - mu), a)


def std(g, ans, a, axis=None, ddof=0, keepdims=False, where=True):
    a = asarray(a)
    if _unmasked(where):
        n = count(a.shape, axis)
        d = a - a.mean(axis=norm_axes(axis, a.ndim), keepdims=True)
    else:
        n, d = _masked_centered(a, axis, _mask(where, a))
    ge = expand(g, a.shape, axis, _flag(keepdims), like=a)
    se = expand(ans, a.shape, axis, _flag(keepdims), like=a)
    m = xp(a)
    # a zero standard deviation (one element, or equal elements) has a zero subgradient here
    safe = m.where(se == 0, 1, se)
    with np.errstate(divide="ignore", invalid="ignore"):
        return like(m.where(se == 0, 0, ge * d / ((n - ddof) * safe)), a)


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


def cumprod_adjoint_tangent(grad, a, axis, t):
    """Tangent of :func:`cumprod` (the adjoint, sum_{i >= j} g_i conj(y_i / a_j)) in ``a``
    along ``t``, with the result y = cumprod(a) moving with it (a second derivative of
    ``np.cumprod``; its rule gives the part through ``ans`` none).  Without zeros, dy = y cumsum(t
    / a); with zeros, per element j the products without a_j and their tangents (exact)."""
    a = asarray(a)
    m = xp(a)
    G = asarray(grad, like=a)
    T = m.broadcast_to(asarray(t, like=a), a.shape)
    if axis is None:
        return like(cumprod_adjoint_tangent(G.ravel(), a.ravel(), 0, T.ravel())
                    .reshape(a.shape), a)
    axis = axis % a.ndim

    def rev_cumsum(v):
        return m.flip(m.cumsum(m.flip(v, axis), axis=axis), axis)
    if not bool((a == 0).any()):
        y = m.cumprod(a, axis=axis)
        dy = y * m.cumsum(T / a, axis=axis)
        r = rev_cumsum(G * cj(dy)) / cj(a) - cj(T) / cj(a * a) * rev_cumsum(G * cj(y))
        return like(r, a)
    at, tt, gt = (m.moveaxis(v, axis, -1) for v in (a, T, G))
    out = m.zeros(at.shape, dtype=np.result_type(at.dtype, tt.dtype, gt.dtype))
    n = at.shape[-1]
    for j in range(n):
        b, tb = at.copy(), tt.copy()
        b[..., j], tb[..., j] = 1, 0
        c = m.ones(at.shape[:-1], dtype=out.dtype)
        dc = m.zeros(at.shape[:-1], dtype=out.dtype)
        acc = m.zeros(at.shape[:-1], dtype=out.dtype)
        for i in range(n):
            c, dc = c * b[..., i], dc * b[..., i] + c * tb[..., i]
            if i >= j:
                acc = acc + gt[..., i] * cj(dc)
        out[..., j] = acc
    return like(m.moveaxis(out, -1, axis), a)


def _drop_initial(g, x, axis, include_initial):
    """(g as an array of the output's shape, the axis): with include_initial=True, without the
    entry at the constant first place along the axis."""
    x_ = asarray(x)
    ax = 0 if axis is None else int(axis) % max(x_.ndim, 1)
    g = asarray(g, like=x_)
    n = 1 if _flag(include_initial) else 0
    if g.ndim != x_.ndim:                  # (a cotangent that is a broadcast scalar)
        g = xp(x_).broadcast_to(g, x_.shape[:ax] + (x_.shape[ax] + n,) + x_.shape[ax + 1:])
    if n:
        g = g[(slice(None),) * ax + (slice(1, None),)]
    return g, ax


def cumulative_sum(g, x, axis=None, include_initial=False):
    """Adjoint of ``np.cumulative_sum``: cumsum's along ``axis`` (0 for a 1-d array's
    axis=None); with include_initial=True, the cotangent of the constant 0 put first is dropped."""
    g, ax = _drop_initial(g, x, axis, include_initial)
    return cumsum(g, x, ax)


def cumulative_prod(g, ans, x, axis=None, include_initial=False):
    """Adjoint of ``np.cumulative_prod``, as :func:`cumulative_sum`'s (the constant 1)."""
    g, ax = _drop_initial(g, x, axis, include_initial)
    if _flag(include_initial):
        ans = asarray(ans, like=asarray(x))[(slice(None),) * ax + (slice(1, None),)]
    return cumprod(g, ans, asarray(x), ax)


def _reduce_tangent(contrib, a, axis, keepdims):
    return asarray(contrib).sum(axis=norm_axes(axis, ndim(a)), keepdims=_flag(keepdims))


def prod_tangent(t, a, axis=None, keepdims=False, where=True):
    a = asarray(a)
    if not _unmasked(where):
        w = _mask(where, a)
        m = xp(a)
        return prod_tangent(m.where(w, asarray(t, like=a), 0), m.where(w, a, 1), axis, keepdims)
    return _reduce_tangent(t * _others_product(a, norm_axes(axis, a.ndim)), a, axis, keepdims)


def extremum_tangent(t, ans, a, axis=None, keepdims=False, where=True):
    a = asarray(a)
    ans_e = expand(ans, a.shape, axis, _flag(keepdims), like=a)
    mask = (a == ans_e)
    if not _unmasked(where):
        mask = mask & _mask(where, a)
    n = mask.sum(axis=norm_axes(axis, a.ndim), keepdims=True)
    # no element equals an all-nan slice's nan (nanmax/nanmin): its tangent is 0
    # (a select, not t * mask: a nan tangent off the extremum must not reach it)
    t = asarray(t, like=a)
    # (the tie count in t's dtype: a float32 tangent stays float32)
    return _reduce_tangent(xp(a).where(mask, t, xp(a).zeros_like(t)) /
                           _count_as(xp(a).maximum(n, 1), t), a, axis, keepdims)


def var_tangent(t, a, axis=None, ddof=0, keepdims=False, where=True):
    a = asarray(a)
    if _unmasked(where):
        n = count(a.shape, axis)
        d = a - a.mean(axis=norm_axes(axis, a.ndim), keepdims=True)
    else:
        n, d = _masked_centered(a, axis, _mask(where, a))     # (d is 0 where the mask is False)
        n = _count_as(n, d)
    c = (cj(d) * t).real if a.dtype.kind == "c" or asarray(t).dtype.kind == "c" else d * t
    with np.errstate(divide="ignore", invalid="ignore"):
        return _reduce_tangent(c * (2.0 / (n - ddof)), a, axis, keepdims)


def std_tangent(t, ans, a, axis=None, ddof=0, keepdims=False, where=True):
    """Tangent of std; 0 where the standard deviation is 0 (as the adjoint, see ``std``)."""
    m = xp(a)
    ans_ = asarray(ans, like=asarray(a))
    safe = m.where(ans_ == 0, 1, ans_)
    return m.where(ans_ == 0, 0, var_tangent(t, a, axis, ddof, keepdims, where) / (2 * safe))


export(globals(), also=('_correction',))
