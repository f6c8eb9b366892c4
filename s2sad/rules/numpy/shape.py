"""Shape functions and array constructors: reshape, squeeze, tile, repeat, flip, roll, pad, split,
take, sort, diff, ``array``/``asarray``, ``broadcast_arrays``, ``meshgrid``, ``linspace``, ``full``.
"""
import numbers

import numpy as np

from ... import runtime as _rt
from ...errors import RuleError
from ..adjoints import (A, _NDARRAY, _each, _np, array_adjoint, asarray, export, is_zero, like,
                        shape, tmap_zero, xp)
from ..registry import defmethod, defrule
from .concat_permute import materialise, reshape_is_view

_each(_np("reshape"), "a, /, shape=None, order='C', *, newshape=None, copy=None",
      vjp={"a": "_adj.reshape_back(g, a, order)"},
      jvp={"a": "_adj.reshape_to(t, shape if shape is not None else newshape, order, a)"},
      view=True, ns=A)
defrule(np.ravel, "a, order='C'", vjp={"a": "_adj.reshape_back(g, a, order)"},
        jvp={"a": "np.ravel(t, order)"}, view=True, ns=A)
_each(_np("squeeze", "expand_dims"), "a, axis=None",
      vjp={"a": "_adj.reshape_back(g, a)"}, jvp={"a": "np.reshape(t, np.shape(ans))"}, view=True,
      ns=A)
defrule(np.broadcast_to, "array, shape, subok=False", vjp={"array": "_rt.unbroadcast(g, array)"},
        jvp={"array": "np.broadcast_to(t, shape)"}, view=True)
_each(_np("atleast_1d", "atleast_2d", "atleast_3d"), "*arys",
      vjp={"arys": "_adj.atleast(g, arys)"}, view=True, kind="any", ns=A)
defrule(np.tile, "A, reps", vjp={"A": "_adj.tile(g, A, reps)"}, jvp={"A": "np.tile(t, reps)"},
        ns=A)
defrule(np.repeat, "a, repeats, axis=None", vjp={"a": "_adj.repeat(g, a, repeats, axis)"},
        jvp={"a": "np.repeat(t, repeats, axis)"}, ns=A)
defrule(np.flip, "m, axis=None", vjp={"m": "np.flip(g, axis)"}, jvp={"m": "np.flip(t, axis)"},
        view=True)
defrule(np.fliplr, "m", vjp={"m": "np.fliplr(g)"}, jvp={"m": "np.fliplr(t)"}, view=True)
defrule(np.flipud, "m", vjp={"m": "np.flipud(g)"}, jvp={"m": "np.flipud(t)"}, view=True)
defrule(np.roll, "a, shift, axis=None", vjp={"a": "_adj.roll(g, a, shift, axis)"},
        jvp={"a": "np.roll(t, shift, axis)"}, ns=A)
defrule(np.rot90, "m, k=1, axes=(0, 1)", vjp={"m": "np.rot90(g, -k, axes)"},
        jvp={"m": "np.rot90(t, k, axes)"}, view=True)
defrule(np.pad, "array, pad_width, mode='constant', **kwargs",
        vjp={"array": "_adj.pad(g, array, pad_width, mode, kwargs)"},
        jvp={"array": "_adj.pad_tangent(t, array, pad_width, mode, kwargs)"}, ns=A)
defrule(np.split, "ary, indices_or_sections, axis=0",
        vjp={"ary": "_adj.split(g, ary, indices_or_sections, axis)"}, kind="any", view=True, ns=A)
defrule(np.array_split, "ary, indices_or_sections, axis=0",
        vjp={"ary": "_adj.split(g, ary, indices_or_sections, axis, 'array_split')"}, kind="any",
        view=True, ns=A)
for _k in ("hsplit", "vsplit", "dsplit"):
    defrule(getattr(np, _k), "ary, indices_or_sections",
            vjp={"ary": f"_adj.split(g, ary, indices_or_sections, 0, {_k!r})"}, kind="any",
            view=True, ns=A)
defrule(np.take, "a, indices, axis=None, out=None, mode='raise'",
        vjp={"a": "_adj.take(g, a, indices, axis, mode)"},
        jvp={"a": "np.take(t, indices, axis, mode=mode)"}, forbid={"out": None}, ns=A)
defrule(np.take_along_axis, "arr, indices, axis=-1",
        vjp={"arr": "_adj.take_along_axis(g, arr, indices, axis)"},
        jvp={"arr": "np.take_along_axis(t, indices, axis)"}, ns=A)
defrule(np.sort, "a, axis=-1, kind=None, order=None, *, stable=None",
        vjp={"a": "_adj.sort(g, a, axis)"}, jvp={"a": "_adj.sort_tangent(t, a, axis)"}, forbid={"order": None}, ns=A)
defrule(np.partition, "a, kth, axis=-1, kind='introselect', order=None",
        vjp={"a": "_adj.partition(g, ans, a, axis)"},
        jvp={"a": "_adj.partition_tangent(t, ans, a, axis)"}, forbid={"order": None}, ns=A)
defrule(np.gradient, "f, *varargs, axis=None, edge_order=1",
        vjp={"f": "_adj.gradient(g, f, varargs, axis, edge_order)",
             "varargs": "_adj.gradient_spacing(g, f, varargs, axis, edge_order)"},
        jvp={"f": "_adj.gradient_tangent(t, f, varargs, axis, edge_order)",
             "varargs": "_adj.tangent_as(_adj.gradient_spacing_tangent(t, f, varargs, axis, "
                        "edge_order), ans)"},
        kind="any", ns=A)
_PLAIN = "prepend is None and append is None"
defrule(np.diff, "a, n=1, axis=-1, prepend=None, append=None",
        vjp={"a": f"_adj.diff(g, a, n, axis) if {_PLAIN} else "
                  f"_adj.diff_ext(g, a, n, axis, prepend, append, 'a')",
             "prepend": "_adj.diff_ext(g, a, n, axis, prepend, append, 'prepend')",
             "append": "_adj.diff_ext(g, a, n, axis, prepend, append, 'append')"},
        jvp={"a": f"np.diff(t, n, axis) if {_PLAIN} else _adj.tangent_as("
                  f"_adj.diff_ext_tangent(t, a, n, axis, prepend, append, 'a'), ans)",
             "prepend": "_adj.tangent_as(_adj.diff_ext_tangent(t, a, n, axis, prepend, append, "
                        "'prepend'), ans)",
             "append": "_adj.tangent_as(_adj.diff_ext_tangent(t, a, n, axis, prepend, append, "
                       "'append'), ans)"}, ns=A)
defrule(np.copy, "a, order='K', subok=False", vjp={"a": "g"}, jvp={"a": "np.copy(t)"})
_each(_np("ascontiguousarray", "asfortranarray"), "a, dtype=None, *, like=None",
      vjp={"a": "_adj.like(g, a)"}, jvp={"a": "_adj.array_tangent(t, ans, a)"}, view=True, ns=A)
defrule(np.array, "object, dtype=None, *, copy=True, order='K', subok=False, ndmin=0, ndmax=0, "
        "like=None", vjp={"object": "_rt.dtype_guard(dtype, _adj.array_adjoint_of(g, object))"},
        jvp={"object": "_adj.array_tangent(t, ans, object)"},
        ns=A)
_each(_np("asarray", "asanyarray"), "a, dtype=None, order=None, *, device=None, copy=None, "
      "like=None", vjp={"a": "_rt.dtype_guard(dtype, _adj.array_adjoint_of(g, a))"},
      jvp={"a": "_adj.array_tangent(t, ans, a)"}, view=True,
      ns=A)
defrule(np.broadcast_arrays, "*args, subok=False",
        vjp={"args": "_adj.broadcast_arrays(g, args)"}, kind="any", view=True, ns=A)
defrule(np.meshgrid, "*xi, copy=True, sparse=False, indexing='xy'",
        vjp={"xi": "_adj.meshgrid(g, xi, indexing, sparse)"}, kind="any", ns=A)
# arange(start, stop, step): start + k step; stop only sets the length (arange(stop): none)
defrule(np.arange, "start_or_stop, stop=None, step=1, *, dtype=None, device=None, like=None",
        vjp={"start_or_stop": "_adj.arange_adjoint(g, ans, start_or_stop, stop, step, 0)",
             "step": "_adj.arange_adjoint(g, ans, start_or_stop, stop, step, 2)"},
        jvp={"start_or_stop": "_adj.arange_tangent(t, ans, start_or_stop, stop, step, 0)",
             "step": "_adj.arange_tangent(t, ans, start_or_stop, stop, step, 2)"},
        constant=("stop",), ns=A)
defrule(np.linspace, "start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *, "
        "device=None", vjp={"start": "_adj.linspace(g, start, stop, num, endpoint, axis, 0)",
                            "stop": "_adj.linspace(g, start, stop, num, endpoint, axis, 1)"},
        jvp={"start": "_adj.linspace_tangent(t, start, stop, num, endpoint, axis, 0)",
             "stop": "_adj.linspace_tangent(t, start, stop, num, endpoint, axis, 1)"},
        forbid={"retstep": False}, ns=A)

# -- constructors filled with a value: the fill value carries the derivative -----------------------
defrule(np.full, "shape, fill_value, dtype=None, order='C', *, device=None, like=None",
        vjp={"fill_value": "_rt.dtype_guard(dtype, _rt.unbroadcast(g, fill_value))"},
        jvp={"fill_value": "_rt.dtype_guard(ans.dtype, np.broadcast_to(t, ans.shape).astype(ans.dtype))"})
defrule(np.full_like, "a, fill_value, dtype=None, order='K', subok=True, shape=None, *, "
        "device=None", vjp={"fill_value": "_rt.dtype_guard(_rt.dtype_of(dtype, a), "
                                          "_rt.unbroadcast(g, fill_value))"},
        jvp={"fill_value": "_rt.dtype_guard(ans.dtype, np.broadcast_to(t, ans.shape).astype(ans.dtype))"},
        constant=("a",))      # (a gives the shape and dtype: its values reach nothing)

# -- ndarray methods -------------------------------------------------------------------------------
defmethod("reshape", "self, *shape, order='C', copy=None",
          vjp={"self": "_adj.reshape_back(g, self, order)"},
          jvp={"self": "t.reshape(*shape, order=order)"}, view=True, ns=A)
defmethod("ravel", "self, order='C'", vjp={"self": "_adj.reshape_back(g, self, order)"},
          jvp={"self": "t.ravel(order)"}, view=True, ns=A)
defmethod("flatten", "self, order='C'", vjp={"self": "_adj.reshape_back(g, self, order)"},
          jvp={"self": "t.flatten(order)"}, ns=A)
defmethod("squeeze", "self, axis=None", vjp={"self": "_adj.reshape_back(g, self)"},
          jvp={"self": "t.squeeze(axis)"}, view=True, ns=A)
defmethod("copy", "self, order='C'", vjp={"self": "g"}, jvp={"self": "t.copy()"})
defmethod("astype", "self, dtype, order='K', casting='unsafe', subok=True, copy=True",
          vjp={"self": "_rt.dtype_guard(dtype, _adj.astype(g, self))"},
          jvp={"self": "t.astype(dtype)"}, ns=A)
defmethod("item", "self, *args", vjp={"self": "_adj.item(g, self, args)"},
          jvp={"self": "t.item(*args)"}, kind="float", ns=A)
defmethod("repeat", "self, repeats, axis=None", vjp={"self": "_adj.repeat(g, self, repeats, axis)"},
          jvp={"self": "t.repeat(repeats, axis)"}, ns=A)
defmethod("take", "self, indices, axis=None, out=None, mode='raise'",
          vjp={"self": "_adj.take(g, self, indices, axis, mode)"},
          jvp={"self": "t.take(indices, axis, mode=mode)"}, forbid={"out": None}, ns=A)


# -- helpers the templates call --------------------------------------------------------------------
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


def array_adjoint_of(g, obj):
    """Adjoint of ``np.array(obj)`` / ``np.asarray(obj)`` (zero-guarded: an adjoint that is the
    symbolic 0.0, e.g. of an integer array that carries none, is not reshaped)."""
    return array_adjoint(np.reshape(g, np.shape(obj)), obj)


def reshape_back(g, a, order="C"):
    """Adjoint of reshape / ravel / flatten / squeeze / expand_dims: g reshaped to a's shape.

    ``g`` may be a permuted view (the adjoint of a transpose is one): where the reshape needs a
    copy of a CuPy array, the permute kernel makes it (``materialise``)."""
    if type(g) is _NDARRAY and type(a) is _NDARRAY and (order == "C" or order is None):
        return like(g.reshape(a.shape), a)          # (the common case of the path below)
    g = asarray(g, like=a)
    o = _order(order, a)
    if o == "C" and type(g) is not np.ndarray and hasattr(g, "flags") and \
            hasattr(g, "strides") and not g.flags.c_contiguous and \
            not reshape_is_view(g.shape, g.strides, shape(a)):
        g = materialise(g)
    return like(g.reshape(shape(a), order=o), a)


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


_PAD_LINEAR = ("constant", "empty", "edge", "reflect", "symmetric", "wrap", "linear_ramp", "mean")


def _pad_axes(array, pad_width, mode, kwargs):
    """``np.pad`` of an array as one linear map per axis (the array's constant offsets --
    ``constant_values``, ``end_values`` -- left out): a list of (axis, P) with P of shape
    (n + before + after, n), P[:, j] the padded unit vector e_j.  NumPy pads axis after axis and each
    axis's padding reads the padded earlier axes, so the whole map is the product of these (they
    commute: each acts along its own axis).  Every ``pad_width`` form NumPy takes (int, (n,),
    (before, after), ((before, after),), one pair per axis, a dict of axes) is read the way
    np.pad reads it."""
    if callable(mode) or mode not in _PAD_LINEAR:
        name = getattr(mode, "__name__", mode)
        raise RuleError(f"np.pad(mode={name!r}) is not differentiable (its padding is not a "
                        f"fixed linear function of the array)",
                        fix="use mode='constant', 'edge', 'reflect', 'symmetric', 'wrap', "
                            "'linear_ramp' or 'mean'")
    nd = len(shape(array))
    pw = np.broadcast_to(np.asarray(_pad_pairs(pad_width, nd), dtype=np.int64), (nd, 2))
    kw = dict(kwargs or {})
    kw.pop("constant_values", None)          # offsets, not part of the linear map
    kw.pop("end_values", None)
    if mode == "linear_ramp":
        kw["end_values"] = 0
    stat = kw.pop("stat_length", None)
    stat = None if stat is None else np.broadcast_to(np.asarray(stat, dtype=np.int64), (nd, 2))
    out = []
    for ax, n in enumerate(shape(array)):
        lo, hi = int(pw[ax, 0]), int(pw[ax, 1])
        if lo == 0 and hi == 0:
            continue
        k = dict(kw)
        if stat is not None:
            k["stat_length"] = (tuple(int(v) for v in stat[ax]),)
        P = np.pad(np.eye(n), ((lo, hi), (0, 0)), mode="constant" if mode == "empty" else mode,
                   **k)
        out.append((ax, P))
    return out


def _pad_pairs(pad_width, nd):
    """``pad_width`` as np.pad reads it; a dict ``{axis: width or (before, after)}`` (NumPy 2.3+;
    negative axes count from the end, the other axes get no padding) as one pair per axis."""
    if not isinstance(pad_width, dict):
        return pad_width
    seq = [(0, 0)] * nd
    for axis, width in pad_width.items():
        if np.ndim(width) == 0:
            seq[axis] = (int(width), int(width))
        else:
            before, after = width
            seq[axis] = (int(before), int(after))
    return seq


def _apply_axis(m, x, P, ax):
    """P applied along axis ``ax`` of ``x``."""
    P = m.asarray(P) if m is not np else P
    r = m.tensordot(P.astype(x.real.dtype if x.dtype.kind == "c" else x.dtype, copy=False), x,
                    axes=([1], [ax]))
    return m.moveaxis(r, 0, ax)


def pad(g, array, pad_width, mode="constant", kwargs=None):
    """Adjoint of ``np.pad``: the transpose of its per-axis linear maps (modes constant, empty,
    edge, reflect and symmetric -- even or odd --, wrap, linear_ramp, mean)."""
    a_ = asarray(array)
    m = xp(a_)
    g = m.asarray(g)
    for ax, P in _pad_axes(a_, pad_width, mode, kwargs):
        g = _apply_axis(m, g, P.T, ax)
    return like(m.ascontiguousarray(g), array)


def pad_tangent(t, array, pad_width, mode="constant", kwargs=None):
    a_ = asarray(array)
    m = xp(a_)
    t = m.asarray(t)
    if t.shape != a_.shape:
        t = m.broadcast_to(t, a_.shape)
    for ax, P in _pad_axes(a_, pad_width, mode, kwargs):
        t = _apply_axis(m, t, P, ax)
    return t


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


def _partition_perm(ans, a, axis):
    """The permutation ``idx`` with take_along_axis(a, idx, axis) == ans (``ans`` the partitioned
    array, found by matching the stable sort orders of both: exact whatever order the partition
    left the other elements in; ties, where no derivative exists, matched in order)."""
    m = xp(a)
    idx = m.empty(a.shape, dtype=np.intp)
    m.put_along_axis(idx, m.argsort(ans, axis=axis, kind="stable"),
                     m.argsort(a, axis=axis, kind="stable"), axis=axis)
    return idx


def partition(g, ans, a, axis=-1):
    """Adjoint of ``np.partition``: g sent back through the permutation it applied."""
    a_ = asarray(a)
    m = xp(a_)
    g = m.asarray(g)
    if axis is None:
        return like(partition(g.ravel(), ans, a_.ravel(), 0).reshape(a_.shape), a)
    idx = _partition_perm(asarray(ans, like=a_), a_, axis)
    out = m.zeros(a_.shape, dtype=np.result_type(a_.dtype, g.dtype))
    m.put_along_axis(out, idx, m.broadcast_to(g, a_.shape), axis=axis)
    return like(out, a)


def partition_tangent(t, ans, a, axis=-1):
    a_ = asarray(a)
    m = xp(a_)
    t = m.broadcast_to(asarray(t, like=a_), a_.shape)
    if axis is None:
        return partition_tangent(t.ravel(), ans, a_.ravel(), 0)
    return m.take_along_axis(t, _partition_perm(asarray(ans, like=a_), a_, axis), axis)


# -- np.gradient -----------------------------------------------------------------------------------
# Along each axis the result is a linear map of f (second-order central differences inside, one-
# or two-sided differences of order edge_order at the ends), whose coefficients depend on the
# spacing: a scalar h (the map is D/h) or the coordinates x (rational functions of their
# differences).  Derivatives in f apply the map (or its transpose, a matrix built by running
# np.gradient on the identity); derivatives in the coordinates are taken by a complex step on
# np.gradient itself (exact: its formulas are rational in x), three coordinates at a time (each
# result depends on at most three neighbouring coordinates).

def _gradient_axes(f, varargs, axis):
    """[(axis, spacing)] in the order np.gradient returns its results, and whether it returns one
    array."""
    nd = len(shape(f))
    axes = tuple(range(nd)) if axis is None else \
        tuple(int(a) % nd for a in (axis if isinstance(axis, (tuple, list)) else (axis,)))
    if len(varargs) == 0:
        sp = [1.0] * len(axes)
    elif len(varargs) == 1 and np.ndim(varargs[0]) == 0:
        sp = [varargs[0]] * len(axes)
    elif len(varargs) == len(axes):
        sp = list(varargs)
    else:
        raise TypeError("np.gradient: invalid number of spacing arguments")
    return list(zip(axes, sp)), len(axes) == 1


def _gradient_parts(g, n):
    if n == 1 and not isinstance(g, (tuple, list)):
        return [g]
    return list(g)


def _coord_sp(s):
    return np.ndim(s) != 0


def _gradient_matrix(n, sp, edge_order):
    """The (n, n) matrix of np.gradient along one axis (column j: the gradient of e_j); for a
    scalar spacing, that of spacing 1."""
    return np.gradient(np.eye(n), sp if _coord_sp(sp) else 1.0, axis=0, edge_order=edge_order)


def gradient(g, f, varargs, axis=None, edge_order=1):
    """Adjoint of ``np.gradient`` w.r.t. ``f``: the transposed per-axis maps, summed."""
    f_ = asarray(f)
    m = xp(f_)
    pairs, _ = _gradient_axes(f_, varargs, axis)
    out = None
    for (ax, sp), gk in zip(pairs, _gradient_parts(g, len(pairs))):
        if is_zero(gk):
            continue
        D = _gradient_matrix(f_.shape[ax], _real_spacing(sp), edge_order)
        if not _coord_sp(sp):
            D = D / _as_np(sp)
        r = _apply_axis(m, m.broadcast_to(m.asarray(gk), f_.shape), _mat_like(D, m).conj().T, ax)
        out = r if out is None else out + r
    if out is None:
        return m.zeros(f_.shape, dtype=f_.dtype)
    return like(out, f)


def _as_np(x):
    return x.get() if hasattr(x, "get") else np.asarray(x)


def _real_spacing(sp):
    return _as_np(sp)


def _mat_like(D, m):
    return D if m is np else m.asarray(D)


def gradient_tangent(t, f, varargs, axis=None, edge_order=1):
    f_ = asarray(f)
    m = xp(f_)
    t = m.broadcast_to(asarray(t, like=f_), f_.shape)
    pairs, single = _gradient_axes(f_, varargs, axis)
    outs = tuple(m.gradient(t, sp, axis=ax, edge_order=edge_order) for ax, sp in pairs)
    return outs[0] if single else outs


def _coord_step(f, x, ax, edge_order, dx):
    """d/ds np.gradient(f, x + s dx) along ``ax`` at s = 0 (complex step, f real or complex)."""
    xa = _as_np(x).astype(np.float64)
    h = 1e-20 * max(1.0, float(np.abs(xa).max()))
    xc = xa + 1j * h * dx

    def part(v):
        return np.gradient(v.astype(np.complex128), xc, axis=ax, edge_order=edge_order).imag / h
    fa = _as_np(f)
    if fa.dtype.kind == "c":
        return part(fa.real) + 1j * part(fa.imag)
    return part(fa)


def gradient_spacing(g, f, varargs, axis=None, edge_order=1):
    """Adjoints of ``np.gradient``'s spacings: a scalar h scales its axis's result by 1/h; a
    coordinate array through the complex-step derivatives of the result (three colours)."""
    f_ = asarray(f)
    pairs, _ = _gradient_axes(f_, varargs, axis)
    gs = _gradient_parts(g, len(pairs))
    shared = len(varargs) == 1 and len(pairs) > 1
    res = [None] * len(varargs)
    for k, ((ax, sp), gk) in enumerate(zip(pairs, gs)):
        slot = 0 if shared else k
        if is_zero(gk) or not varargs or not _is_float_value(varargs[slot]):
            continue
        gk = np.broadcast_to(_as_np(gk), f_.shape)
        if not _coord_sp(sp):
            val = np.gradient(_as_np(f_), _as_np(sp), axis=ax, edge_order=edge_order)
            r = -(gk * np.conj(val / _as_np(sp))).sum()
            r = like(r, sp) if not hasattr(sp, "shape") or isinstance(sp, np.generic) else \
                like(xp(sp).asarray(r).reshape(()), sp)
        else:
            n = f_.shape[ax]
            acc = np.zeros(n)
            i = np.arange(n)
            base = np.clip(i - 1, 0, max(n - 3, 0))
            for c in range(3):
                dx = (np.arange(n) % 3 == c).astype(float)
                J = _coord_step(f_, sp, ax, edge_order, dx)
                # the coordinate (of colour c) each result depends on
                mi = base + (c - base) % 3
                ok = mi < n
                contrib = np.moveaxis((np.conj(gk) * J).real, ax, 0)
                contrib = contrib.reshape(n, -1).sum(axis=1)
                np.add.at(acc, mi[ok], contrib[ok])
            r = like(xp(sp).asarray(acc) if xp(sp) is not np else acc, sp)
        res[slot] = r if res[slot] is None else res[slot] + r
    return tuple(res)


def _is_float_value(v):
    if isinstance(v, bool):
        return False
    if isinstance(v, (float, complex)):
        return True
    dt = getattr(v, "dtype", None)
    return dt is not None and dt.kind in "fc"


def gradient_spacing_tangent(t, f, varargs, axis=None, edge_order=1):
    f_ = asarray(f)
    m = xp(f_)
    pairs, single = _gradient_axes(f_, varargs, axis)
    shared = len(varargs) == 1 and len(pairs) > 1
    outs = []
    for k, (ax, sp) in enumerate(pairs):
        tk = t[0 if shared else k] if varargs else None
        if tk is None or is_zero(tk):
            outs.append(m.zeros(f_.shape, dtype=np.result_type(f_.dtype, float)))
            continue
        if not _coord_sp(sp):
            val = m.gradient(f_, sp, axis=ax, edge_order=edge_order)
            outs.append(-val * (asarray(tk, like=f_) / sp))
        else:
            r = _coord_step(f_, sp, ax, edge_order, _as_np(tk).astype(np.float64)
                            if np.ndim(tk) else np.full(f_.shape[ax], float(tk)))
            outs.append(m.asarray(r) if m is not np else r)
    return outs[0] if single else tuple(outs)


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


def _diff_parts(a, axis, prepend, append):
    """(a, its array module, the axis, [prepend, append]) as np.diff lays them out: a number is
    a slab of length 1 along the axis, of a's shape along the others."""
    a_ = asarray(a)
    m = xp(a_)
    ax = axis % a_.ndim
    parts = []
    for v in (prepend, append):
        if v is None:
            parts.append(None)
            continue
        v_ = m.asarray(v)
        if v_.ndim == 0:
            shp = list(a_.shape)
            shp[ax] = 1
            v_ = m.broadcast_to(v_, tuple(shp))
        parts.append(v_)
    return a_, m, ax, parts


def _diff_piece(x, full, ax, lp, la, which):
    idx = [slice(None)] * full.ndim
    idx[ax] = slice(0, lp) if which == "prepend" else slice(lp, lp + la) if which == "a" else \
        slice(lp + la, None)
    return x[tuple(idx)]


def diff_ext(g, a, n, axis, prepend, append, which):
    """Adjoint of ``np.diff(a, n, axis, prepend=, append=)`` w.r.t. ``which``: the difference of
    the concatenation, whose adjoint is cut back into the three parts."""
    a_, m, ax, (p, q) = _diff_parts(a, axis, prepend, append)
    full = m.concatenate([v for v in (p, a_, q) if v is not None], axis=ax)
    gf = asarray(diff(g, full, n, ax))
    lp = 0 if p is None else p.shape[ax]
    piece = _diff_piece(gf, full, ax, lp, a_.shape[ax], which)
    if which == "a":
        return like(piece, a)
    return _rt.unbroadcast(piece, prepend if which == "prepend" else append)


def diff_ext_tangent(t, a, n, axis, prepend, append, which):
    a_, m, ax, (p, q) = _diff_parts(a, axis, prepend, append)
    t_ = m.asarray(t)
    parts = []
    for name, v in (("prepend", p), ("a", a_), ("append", q)):
        if v is None:
            continue
        parts.append(m.broadcast_to(t_, v.shape) if name == which else m.zeros(v.shape, t_.dtype))
    return m.diff(m.concatenate(parts, axis=ax), n=n, axis=ax)


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


def sort_tangent(t, a, axis=-1):
    a_ = asarray(a)
    m = xp(a_)
    t = asarray(t, like=a_)
    if axis is None:
        return sort_tangent(t.ravel(), a_.ravel(), 0)
    return m.take_along_axis(t, m.argsort(a_, axis=axis, kind="stable"), axis)


def arange_adjoint(g, ans, start_or_stop, stop, step, which):
    """Adjoints of ``np.arange``'s start (which 0; none when it is the only bound: the stop) and
    step (which 2): the values are start + k step, k = 0, 1, ..."""
    if stop is None and which == 0:
        return _rt.unbroadcast(0.0 * asarray(g).sum(), start_or_stop)
    g_ = asarray(g)
    m = xp(g_)
    s = g_.sum() if which == 0 else (g_ * m.arange(g_.shape[0], dtype=g_.real.dtype)).sum()
    return _rt.unbroadcast(s, start_or_stop if which == 0 else step)


def arange_tangent(t, ans, start_or_stop, stop, step, which):
    a = asarray(ans)
    m = xp(a)
    if stop is None and which == 0:
        return m.zeros_like(a)
    if which == 0:
        return m.full(a.shape, t, dtype=a.dtype if a.dtype.kind in "fc" else None)
    return m.arange(a.shape[0], dtype=a.dtype if a.dtype.kind in "fc" else None) * t


def linspace_tangent(t, start, stop, num=50, endpoint=True, axis=0, which=0):
    m = xp(t)
    t = asarray(t)
    z = 0 * t
    return m.linspace(t, z, num, endpoint=endpoint, axis=axis) if which == 0 else \
        m.linspace(z, t, num, endpoint=endpoint, axis=axis)


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


export(globals())
