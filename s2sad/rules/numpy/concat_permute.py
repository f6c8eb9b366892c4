"""The concat family (``concatenate``, ``stack``, ``vstack``, ..., ``block``) and the permute family
(``transpose``, ``moveaxis``, ``swapaxes``, ...).  On CuPy arrays their adjoints and tangents run
as the kernels of :mod:`s2sad.kernels`; NumPy arrays take a NumPy path.
"""
import builtins
import numbers

import numpy as np

from ...kernels.device import _has_cupy
from ...kernels.device import check_devices as _check_devices
from ..adjoints import (A, _ARRAYS, _NDARRAY, _each, _inverse, _np, array_adjoint, asarray,
                        export, is_zero, like, ndim, shape, tangent_list, xp)
from ..registry import defmethod, defrule

# -- concat family ---------------------------------------------------------------------------------
_each(_np("concatenate", "concat"), "arrays, /, axis=0, out=None, *, dtype=None, "
      "casting='same_kind'", vjp={"arrays": "_adj.concatenate(g, arrays, axis)"},
      jvp={"arrays": "_adj.concat_tangent(t, arrays, axis)"}, forbid={"out": None}, kind="array", ns=A)
defrule(np.stack, "arrays, axis=0, out=None, *, dtype=None, casting='same_kind'",
        vjp={"arrays": "_adj.stack(g, arrays, axis)"}, jvp={"arrays": "np.stack(_adj.tangent_list(t, arrays), axis)"},
        forbid={"out": None}, ns=A)
for _k in ("vstack", "hstack"):
    defrule(getattr(np, _k), "tup, *, dtype=None, casting='same_kind'",
            vjp={"tup": f"_adj.{_k}(g, tup)"}, jvp={"tup": f"np.{_k}(_adj.tangent_list(t, tup))"}, ns=A)
defrule(np.dstack, "tup", vjp={"tup": "_adj.dstack(g, tup)"}, jvp={"tup": "np.dstack(_adj.tangent_list(t, tup))"}, ns=A)
defrule(np.column_stack, "tup", vjp={"tup": "_adj.column_stack(g, tup)"},
        jvp={"tup": "np.column_stack(_adj.tangent_list(t, tup))"}, ns=A)
defrule(np.append, "arr, values, axis=None",
        vjp={"arr": "_adj.append(g, arr, values, axis, 0)",
             "values": "_adj.append(g, arr, values, axis, 1)"}, ns=A)
# np.insert / np.delete / np.resize move elements: the same call on the elements' flat indices
# says where each output element came from, and the adjoint gathers g back there (_gather_back)
defrule(np.insert, "arr, obj, values, axis=None",
        vjp={"arr": "_adj.insert(g, arr, obj, values, axis, 0)",
             "values": "_adj.insert(g, arr, obj, values, axis, 1)"},
        jvp={"arr": "_adj.insert_tangent(t, arr, obj, values, axis, 0)",
             "values": "_adj.insert_tangent(t, arr, obj, values, axis, 1)"}, ns=A)
defrule(np.delete, "arr, obj, axis=None", vjp={"arr": "_adj.delete(g, arr, obj, axis)"},
        jvp={"arr": "np.delete(t, obj, axis)"}, ns=A)
defrule(np.resize, "a, new_shape", vjp={"a": "_adj.resize(g, a, new_shape)"},
        jvp={"a": "np.resize(t, new_shape)"}, ns=A)
defrule(np.block, "arrays", vjp={"arrays": "_adj.block(g, arrays)"}, ns=A)
_each(_np("unstack"), "x, /, *, axis=0", vjp={"x": "_adj.unstack(g, x, axis)"}, kind="any",
      view=True, ns=A)

# -- permute family --------------------------------------------------------------------------------
_each(_np("transpose", "permute_dims"), "a, axes=None", vjp={"a": "_adj.transpose(g, a, axes)"},
      jvp={"a": "_adj.permute_tangent(t, a, axes)"}, view=True, ns=A)
defrule(np.moveaxis, "a, source, destination",
        vjp={"a": "_adj.moveaxis(g, a, source, destination)"},
        jvp={"a": "np.moveaxis(t, source, destination)"}, view=True, ns=A)
defrule(np.swapaxes, "a, axis1, axis2", vjp={"a": "_adj.swapaxes(g, a, axis1, axis2)"},
        jvp={"a": "np.swapaxes(t, axis1, axis2)"}, view=True, ns=A)
defrule(np.rollaxis, "a, axis, start=0", vjp={"a": "_adj.rollaxis(g, a, axis, start)"},
        jvp={"a": "np.rollaxis(t, axis, start)"}, view=True, ns=A)
_each(_np("matrix_transpose", "linalg.matrix_transpose"), "x, /",
      vjp={"x": "_adj.matrix_transpose(g, x)"}, jvp={"x": "np.swapaxes(t, -1, -2)"}, view=True,
      ns=A)

# -- ndarray methods -------------------------------------------------------------------------------
defmethod("transpose", "self, *axes", vjp={"self": "_adj.transpose(g, self, axes)"},
          jvp={"self": "t.transpose(*axes)"}, view=True, ns=A)
defmethod("swapaxes", "self, axis1, axis2", vjp={"self": "_adj.swapaxes(g, self, axis1, axis2)"},
          jvp={"self": "t.swapaxes(axis1, axis2)"}, view=True, ns=A)


# -- helpers the templates call --------------------------------------------------------------------
def _kernels():
    try:
        from ...kernels import concat_adjoint, permute_adjoint
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
    if (type(g) is not _NDARRAY or type(x) is not _NDARRAY) and _has_cupy((g, x)):
        _check_devices(f"the adjoint of {name}", (g, x), names=("cotangent", "input"))


def concat_adjoint(g, arrays, axis=0, name="concatenate"):
    """Adjoints of ``concatenate(arrays, axis)``: one per input, None for integer/bool inputs.

    Each adjoint is a slice of the cotangent (a view: no copy, no kernel; one in a dtype other
    than its input's is converted).  Adjoints are never written in place (generated code
    accumulates with ``a + b``; the in-place paths write only into buffers the derivative
    allocated itself), so a view is as good as a copy; what reads it (an elementwise operation,
    a matrix product) reads it where it lies."""
    _guard(name, g, arrays)
    views = _concat_views(g, arrays, axis)
    if views is not None:
        return views
    fn = _kernels()[0]
    res = fn(g, arrays, axis)
    return tuple(None if r is None else like(r, a) for r, a in zip(res, arrays))


def _concat_views(g, arrays, axis):
    """The slices of ``g`` that are the adjoints of the arrays of a concatenation, or None where
    the inputs are not all arrays of g's array module or do not add up to g's shape (then the
    kernel path decides, and raises its errors)."""
    if not _one_array_type(g, arrays):
        if not (hasattr(g, "shape") and hasattr(g, "dtype")) or isinstance(g, np.generic) or \
                not _all_arrays(arrays):
            return None
        m = xp(g)
        if any(xp(a) is not m for a in arrays):
            return None
    if axis is None:
        flat = g.reshape(-1)
        sizes = [a.size for a in arrays]
        if builtins.sum(sizes) != flat.shape[0]:
            return None
        out, off = [], 0
        for a, n in zip(arrays, sizes):
            out.append(_adjoint_view(flat[off:off + n].reshape(a.shape), a))
            off += n
        return tuple(out)
    if g.ndim == 0 or any(a.ndim != g.ndim for a in arrays):
        return None
    ax = int(axis) % g.ndim
    if builtins.sum(a.shape[ax] for a in arrays) != g.shape[ax]:
        return None
    out, off = [], 0
    lead = (slice(None),) * ax
    for a in arrays:
        n = a.shape[ax]
        out.append(_adjoint_view(g[lead + (slice(off, off + n),)], a))
        off += n
    return tuple(out)


def _adjoint_view(piece, a):
    if a.dtype.kind not in "fc":
        return None                     # an integer/bool input carries no derivative
    return like(piece, a)               # (a view where the dtypes agree)


def permute_adjoint(g, axes, a=None, name="transpose"):
    """Adjoint of ``transpose(a, axes)``: the cotangent transposed back, as a view (adjoints are
    never written in place, see ``concat_adjoint``).  What needs it contiguous materialises it:
    ``reshape_back`` through :func:`materialise` (the permute kernel on CuPy arrays), a matrix
    product or an elementwise operation reads the strides as they are."""
    _guard(name, g, a)
    try:
        inv = _INVERSES.get(axes)
    except TypeError:                   # (unhashable axes)
        inv = None
    if inv is None:
        inv = _inverse(tuple(int(a) for a in axes))
        if type(axes) is tuple and len(_INVERSES) < 256:
            _INVERSES[axes] = inv
    return asarray(g).transpose(inv)


_INVERSES = {}          # axes (a tuple) -> its inverse permutation (Python ints)


def materialise(g, backend=None):
    """``g`` as a C-contiguous array.  A permuted view of a C-contiguous array (an adjoint of
    the permute family) is copied by the permute kernel of :mod:`s2sad.kernels` (CUDA on CuPy
    arrays, ``backend="cuda"`` under the simulator); anything else by the array module."""
    if g.flags.c_contiguous:
        return g
    order = tuple(sorted(range(g.ndim), key=lambda i: -g.strides[i]))
    u = g.transpose(order)
    if u.flags.c_contiguous:
        try:
            from ...kernels import permute_adjoint as _kernel
        except ImportError:
            _kernel = None
        if _kernel is not None:
            # (the kernel returns transpose(u, inverse(axes)): here g, contiguous)
            return _kernel(u, order, backend=backend)
    return xp(g).ascontiguousarray(g)


def reshape_is_view(shp, strides, new):
    """Whether a C-order reshape of an array of shape ``shp`` and ``strides`` to ``new`` can be a
    view (NumPy's rule: each group of old axes that becomes a group of new axes is contiguous
    within itself)."""
    old = [(n, s) for n, s in zip(shp, strides) if n != 1]
    new = [n for n in new if n != 1]
    if 0 in shp:
        return True
    oi = ni = 0
    while oi < len(old) and ni < len(new):
        np_, op = new[ni], old[oi][0]
        nj, oj = ni + 1, oi + 1
        while np_ != op:
            if np_ < op:
                if nj >= len(new):
                    return False
                np_ *= new[nj]
                nj += 1
            else:
                if oj >= len(old):
                    return False
                op *= old[oj][0]
                oj += 1
        for k in range(oi, oj - 1):
            if old[k][1] != old[k + 1][0] * old[k + 1][1]:
                return False
        oi, ni = oj, nj
    return True


def concatenate(g, arrays, axis=0):
    if _one_array_type(g, arrays):
        return concat_adjoint(g, arrays, axis)      # (what the general path below does for them)
    arrs = [asarray(a) if not isinstance(a, (float, int, complex)) else a for a in arrays]
    if axis is None:
        return concat_adjoint(g, arrs, None) if not _all_arrays(arrays) else \
            concat_adjoint(g, arrays, None)
    return concat_adjoint(g, arrays if _all_arrays(arrays) else
                          [asarray(a, like=g) for a in arrays], axis)


def _one_array_type(g, arrays):
    """True when ``g`` and every array are of one exact array type (NumPy's or CuPy's ndarray)."""
    t = type(g)
    if t not in _ARRAYS:
        return False
    for a in arrays:
        if type(a) is not t:
            return False
    return True


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


def _host(obj):
    """An index argument on the host (a CuPy array of indices copied back; NumPy builds the maps)."""
    return obj.get() if hasattr(obj, "get") and not isinstance(obj, np.ndarray) else obj


def _gather_back(g, imap, x):
    """The adjoint for ``x`` of an output whose element k came from ``x``'s flat element
    ``imap[k]`` (-1: from elsewhere): g added up at those elements (repeats add)."""
    g = asarray(g)
    m = xp(g)
    x_ = asarray(x, like=g)
    imap = m.asarray(imap).reshape(-1)
    G = g.reshape(-1)
    keep = imap >= 0
    out = m.zeros(x_.size, dtype=np.result_type(x_.dtype, G.dtype))
    m.add.at(out, imap[keep], G[keep])
    return _back(out, x)


def insert(g, arr, obj, values, axis=None, which=0):
    """Adjoint of ``np.insert`` for ``arr`` (which=0) or ``values`` (1, broadcast into the
    inserted places: their adjoints add up)."""
    a_, v_ = np.shape(arr), np.shape(values)
    obj = _host(obj)
    if which == 1 and _truncates(arr):
        return _back(xp(g).zeros(int(np.prod(v_))), values)
    if which == 0:
        imap = np.insert(np.arange(int(np.prod(a_))).reshape(a_), obj, np.full(v_, -1),
                         axis=axis)             # (values of their shape: the same places)
    else:
        imap = np.insert(np.full(a_, -1), obj, np.arange(int(np.prod(v_))).reshape(v_),
                         axis=axis)
    return _gather_back(g, imap, arr if which == 0 else values)


def _truncates(arr):
    """np.insert gives its result ``arr``'s dtype: values put into an integer (or bool) array
    lose their fraction, and their derivative."""
    dt = getattr(arr, "dtype", None)
    return (np.asarray(arr).dtype if dt is None else dt).kind not in "fc"


def insert_tangent(t, arr, obj, values, axis=None, which=0):
    """Tangent of ``np.insert`` along ``arr`` (which=0) or ``values`` (1): the call with zeros
    for the other (none where ``arr`` is an integer array, which truncates the values)."""
    if which == 1 and _truncates(arr):
        return np.zeros(np.insert(np.zeros(np.shape(arr), bool), obj,
                                  np.zeros(np.shape(values), bool), axis=axis).shape)
    t = asarray(t, like=arr)
    if which == 0:
        return np.insert(t, obj, xp(t).zeros(np.shape(values), t.dtype), axis=axis)
    z = xp(t).zeros(np.shape(arr), dtype=np.result_type(asarray(arr).dtype, t.dtype))
    return np.insert(z, obj, t, axis=axis)


def delete(g, arr, obj, axis=None):
    """Adjoint of ``np.delete``: g back at the elements kept."""
    a_ = np.shape(arr)
    imap = np.delete(np.arange(int(np.prod(a_))).reshape(a_), _host(obj), axis=axis)
    return _gather_back(g, imap, arr)


def resize(g, a, new_shape):
    """Adjoint of ``np.resize`` (``a`` repeated, or cut, to fill ``new_shape``): each element
    gets the adjoints of its copies."""
    a_ = np.shape(a)
    return _gather_back(g, np.resize(np.arange(int(np.prod(a_))), new_shape), a)


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


def _nd(a):
    return a.ndim if type(a) in _ARRAYS else ndim(a)


def _memo_axes(key, make):
    """``make()``, the axes of a permute adjoint, remembered by ``key`` (the rule's name, ndim and
    arguments; made afresh when they are not hashable)."""
    try:
        axes = _AXES.get(key)
    except TypeError:
        return make()
    if axes is None:
        axes = make()
        if len(_AXES) < 512:
            _AXES[key] = axes
    return axes


_AXES = {}


def transpose(g, a, axes=None):
    nd = _nd(a)
    if axes is None or (isinstance(axes, tuple) and len(axes) == 0):
        axes = tuple(range(nd))[::-1]
    elif isinstance(axes, (tuple, list)) and len(axes) == 1 and isinstance(axes[0], (tuple, list)):
        axes = tuple(axes[0])
    axes = tuple(int(x) % nd for x in axes)
    return like(permute_adjoint(asarray(g, like=a), axes, a, "transpose"), a)


def moveaxis(g, a, source, destination):
    nd = _nd(a)

    def make():
        src = [source] if isinstance(source, numbers.Integral) else list(source)
        dst = [destination] if isinstance(destination, numbers.Integral) else list(destination)
        src = [s % nd for s in src]
        dst = [d % nd for d in dst]
        order = [n for n in range(nd) if n not in src]
        for d, s in sorted(zip(dst, src)):
            order.insert(d, s)
        return tuple(order)
    order = _memo_axes(("moveaxis", nd, type(source), source, type(destination), destination),
                       make)
    return like(permute_adjoint(asarray(g, like=a), order, a, "moveaxis"), a)


def swapaxes(g, a, axis1, axis2):
    nd = _nd(a)

    def make():
        axes = list(range(nd))
        i, j = axis1 % nd, axis2 % nd
        axes[i], axes[j] = axes[j], axes[i]
        return tuple(axes)
    axes = _memo_axes(("swapaxes", nd, type(axis1), axis1, type(axis2), axis2), make)
    return like(permute_adjoint(asarray(g, like=a), axes, a, "swapaxes"), a)


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


def concat_tangent(t, arrays, axis=0):
    try:
        from ...kernels import concat_tangent as ct
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
        from ...kernels import permute_tangent as pt
    except ImportError:
        return asarray(t).transpose(axes)
    return pt(asarray(t, like=a), tuple(int(x) % nd for x in axes))


export(globals())
