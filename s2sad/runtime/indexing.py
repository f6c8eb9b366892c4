"""Indexing: adjoints of ``x[idx]`` reads and writes, scatter-accumulation, subscripts of receivers
known only at run time (np.r_/np.c_ held in a variable), and :func:`snap` (a copy taken before an
in-place change).
"""
import numbers
from collections import deque

import numpy as np

from . import hooks
from .arrays import (_NDARRAY, _is_array, _z, add, array_module, is_zero, real_like,
                     refuse_maxlen, unbroadcast)
from .values import differentiable


# -- indexing ---------------------------------------------------------------------------------
def _basic_index(idx):
    """True when ``x[idx]`` cannot select an element twice (no integer/boolean arrays)."""
    if isinstance(idx, tuple):
        return all(_basic_index(i) for i in idx)
    return idx is None or idx is Ellipsis or isinstance(idx, (slice, numbers.Integral))


def _new_axes_only(idx):
    """True when ``idx`` is ``None`` or a tuple of ``None`` and full slices (``x[:, None]``,
    ``x[None]``, ``x[None, :]``): ``x[idx]`` is all of x, its axes in order, with new axes of
    length 1 (with no more slices than x has axes, which the caller checks by the shape)."""
    if idx is None:
        return True
    if type(idx) is not tuple:
        return False
    for i in idx:
        if i is not None and not (type(i) is slice and i.start is None and i.stop is None and
                                  i.step is None):
            return False
    return True


def getitem_adjoint(g, x, idx):
    """Adjoint of ``x[idx]``: zeros shaped like x with ``g`` placed (added for repeats) at idx."""
    if type(x) is _NDARRAY and type(g) is _NDARRAY and _new_axes_only(idx):
        # x[:, None] and the like: every element of x once, so the adjoint is g in x's shape (a
        # new array of x's dtype, as the zeros and the add below would give)
        dt = x.dtype
        if dt.kind in "fc" and g.shape == x[idx].shape:
            return (g if dt.kind == "c" else real_like(g, x)).reshape(x.shape).astype(dt)
    if isinstance(x, (tuple, list, deque)):
        if type(x) is deque:
            refuse_maxlen(x)            # (its items may have been pushed out by an append)
        if isinstance(idx, slice) and is_zero(g):
            return 0.0                  # (a zero adjoint of a slice: of a list, of any length)
        out = [0.0] * len(x)
        if isinstance(idx, slice):
            for k, v in zip(range(*idx.indices(len(x))), g):
                out[k] = v
        else:
            out[idx] = g
        if isinstance(x, tuple):
            return type(x)(*out) if hasattr(x, "_fields") else type(x)(out)
        return out
    if isinstance(x, dict):
        return {idx: g}
    if x.dtype.kind not in "fcO":
        return 0.0                      # an integer/bool array carries no derivative
    xp = array_module(x)
    out = xp.zeros(x.shape, dtype=_grad_dtype(x, g))
    return acc_getitem(out, x, idx, g, _owned=True)


def _grad_dtype(x, g):
    dt = x.dtype
    gdt = getattr(g, "dtype", None)
    if dt.kind != "c" and gdt is not None and gdt.kind == "c":
        return dt
    return dt


def acc_getitem(acc, x, idx, g, _owned=False):
    """Add ``g`` into ``acc[idx]`` in place, allocating ``acc`` if it is still a symbolic zero.

    Only used on adjoint buffers the derivative allocated itself (never a user's array)."""
    if not _owned and is_zero(acc):
        return getitem_adjoint(g, x, idx)
    if type(acc) is _NDARRAY and type(g) is _NDARRAY and type(x) is _NDARRAY and \
            _new_axes_only(idx):
        kind = acc.dtype.kind                  # (a new-axis view: one element per element)
        if kind in "fc" and x.dtype.kind in "fc":
            acc[idx] += g if kind == "c" else real_like(g, x)
            return acc
    if isinstance(x, (tuple, list, dict, deque)):
        return add(acc, getitem_adjoint(g, x, idx))
    if x.dtype.kind not in "fcO":
        return acc
    if acc.dtype.kind != "c":
        g = real_like(g, x)
    if _basic_index(idx):
        acc[idx] += g
    else:
        scatter_add(acc, idx, g)
    return acc


# -- subscripts of receivers whose kind is unknown when the derivative is built -------------------
# ``r[a, b]`` where ``r`` may be np.r_/np.c_ (np.mgrid, np.ogrid, np.s_, np.index_exp, CuPy's)
# held in a variable or passed in: the classifier routes such sites to ``subscript``, the key's
# parts flattened (a slice gives its three bounds) and described by ``layout`` = (is_tuple, a
# string of "v" for a value and "s" for a slice).  The items of an index trick then get their
# adjoints (a concatenation's, see adjoints.index_concat); for any other receiver the key carries
# no derivative, as in ``x[i]``.
def subscript_key(layout, flat):
    """The key ``obj[...]`` is given, rebuilt from its flattened parts."""
    is_tuple, parts = layout
    items, k = [], 0
    for p in parts:
        if p == "s":
            items.append(slice(flat[k], flat[k + 1], flat[k + 2]))
            k += 3
        else:
            items.append(flat[k])
            k += 1
    return tuple(items) if is_tuple else items[0]


def _trick_items(obj, layout, flat):
    """(kind, is_tuple, items, packed) when ``obj`` is an index trick, else None (``packed``: one
    value that is itself the tuple of items, as in ``key = (a, b); r[key]``)."""
    if type(obj) is _NDARRAY or isinstance(obj, (list, tuple, dict)):
        return None
    _index_trick_kind = hooks.index_tricks_module()._index_trick_kind
    kind = _index_trick_kind(obj)
    if kind is None:
        return None
    key = subscript_key(layout, flat)
    if isinstance(key, str) and kind == "concat":
        from ..errors import UnsupportedSyntaxError
        _trick_name = hooks.index_tricks_module()._trick_name
        raise UnsupportedSyntaxError(
            f"{_trick_name(obj)}[...] (reached through a variable) with a string builds a matrix "
            f"from variables named in the string, which s2sad cannot follow",
            fix="use np.block([[a, b], [c, d]]) or np.concatenate")
    if isinstance(key, tuple):
        return kind, True, list(key), not layout[0]
    return kind, False, [key], False


def subscript(obj, layout, *flat):
    """``obj[key]`` for a receiver known only at run time (see above)."""
    key = subscript_key(layout, flat)
    if _trick_items(obj, layout, flat) is None and not (
            _is_array(obj) or isinstance(obj, (list, tuple, dict, str, bytes, range))) and \
            differentiable(key):
        from ..errors import UnsupportedSyntaxError
        name = type(obj).__name__
        raise UnsupportedSyntaxError(
            f"a {name}[...] whose key carries a derivative: s2sad cannot tell how the value a "
            f"{name} returns depends on its key (the type was not known when the derivative was "
            f"built)",
            fix="for a class of your own, call `obj.__getitem__(key)` (s2sad differentiates it), "
                "or pass the object as an argument; for np.r_/np.c_ write np.r_[...] directly or "
                "use np.concatenate")
    return obj[key]


def subscript_adjoint(g, obj, layout, flat):
    """Adjoints of the flattened key parts of ``subscript(obj, layout, *flat)``: an index
    trick's items get theirs (a slice's bounds through the values it expands to); any other
    receiver's key gets none."""
    out = [0.0] * len(flat)
    trick = _trick_items(obj, layout, flat)
    if trick is None or is_zero(g):
        return tuple(out)
    kind, is_tuple, items, packed = trick
    adj = hooks.index_tricks_module()
    fn = adj.index_concat_adjoint if kind == "concat" else adj.index_trick_adjoint
    got = fn(g, obj, is_tuple, items)
    if packed:
        out[0] = tuple(got)
        return tuple(out)
    k = 0
    for p, gk in zip(layout[1], got):
        if p == "s":
            for j in range(3):
                if differentiable(flat[k + j]):
                    out[k + j] = adj.r_slice_adjoint(gk, *flat[k:k + 3], j)
            k += 3
        else:
            out[k] = gk
            k += 1
    return tuple(out)


def subscript_tangent(tflat, ans, obj, layout, flat):
    """Tangent of ``subscript(obj, layout, *flat)`` from the tangents of the key parts."""
    trick = _trick_items(obj, layout, flat)
    if trick is None:
        return 0.0
    kind, is_tuple, items, packed = trick
    adj = hooks.index_tricks_module()
    if packed:
        t0 = tflat[0]
        tin = list(t0) if isinstance(t0, (tuple, list)) else [None] * len(items)
    else:
        tin, k = [], 0
        for p in layout[1]:
            if p == "s":
                parts = [adj.r_slice_tangent(tflat[k + j], *flat[k:k + 3], j) for j in range(3)
                         if tflat[k + j] is not None and not is_zero(tflat[k + j])]
                parts = [x for x in parts if not is_zero(x)]
                tin.append(_sum_or_none(parts))
                k += 3
            else:
                tin.append(tflat[k])
                k += 1
    fn = adj.index_concat_tangent if kind == "concat" else adj.index_trick_tangent
    return fn(tin, ans, obj, is_tuple, items)


def _sum_or_none(parts):
    """The sum of ``parts``, None for none."""
    if not parts:
        return None
    out = parts[0]
    for x in parts[1:]:
        out = out + x
    return out


def add_at_delta(a, indices, b):
    """The change ``np.add.at(a, indices, b)`` makes to ``a`` (repeated indices add up), as a new
    array: the frontend lowers ``np.add.at(a, i, b)`` to ``a[...] += add_at_delta(a, i, b)``."""
    d = array_module(a).zeros(a.shape, a.dtype)
    return scatter_add(d, indices, b)


def scatter_add(acc, idx, g):
    """``acc[idx] += g`` in place with repeated indices summed (``np.add.at``).  CuPy's ``add.at``
    takes no complex dtypes: there complex values go in as real and imaginary parts."""
    xp = array_module(acc)
    if xp is np or acc.dtype.kind != "c":
        xp.add.at(acc, idx, g)
        return acc
    g = xp.asarray(g)
    part = xp.zeros(acc.shape, acc.real.dtype)
    xp.add.at(part, idx, g.real)
    acc += part
    if g.dtype.kind == "c":
        part = xp.zeros(acc.shape, acc.real.dtype)
        xp.add.at(part, idx, g.imag)
        acc += 1j * part
    return acc


def own(g, x):
    """The adjoint ``g`` of the array ``x`` (zeros for the symbolic 0.0) in a new buffer of x's
    shape, which the reverse sweep of a loop then writes into in place (``_b_x[i, j] += g_t``,
    ``_b_x[i, j] = 0.0``): the derivative's own, shared with no other value."""
    xp = array_module(x)
    if is_zero(g):
        return xp.zeros(x.shape, dtype=x.dtype)
    out = xp.empty(x.shape, dtype=getattr(g, "dtype", None) or np.result_type(x.dtype, type(g)))
    out[...] = g
    return out


def setitem_adjoint(g, idx):
    """Adjoint of ``x[idx] = v`` for the old ``x``: a copy of ``g`` with zeros at ``idx``."""
    if is_zero(g):
        return g
    if isinstance(g, list):
        out = list(g)
        out[idx] = None if not isinstance(idx, slice) else [None] * len(out[idx])
        return out
    if isinstance(g, dict):
        out = dict(g)
        out.pop(idx, None)
        return out
    out = g.copy()
    out[idx] = 0
    return out


def setitem_value_adjoint(g, idx, v):
    """Adjoint of ``x[idx] = v`` for ``v``: ``g[idx]`` summed down to v's shape, as a copy.  With
    repeated fancy indices only the last write to an element survives, so only it gets ``g``."""
    if is_zero(g):
        return 0.0
    if hasattr(g, "shape") and not _basic_index(idx):
        return _setitem_fancy_adjoint(g, idx, v)
    if isinstance(g, (list, dict)):
        try:
            return _z(g[idx])
        except (KeyError, IndexError):
            return 0.0
    return unbroadcast(g[idx].copy() if hasattr(g[idx], "copy") else g[idx], v)


def _setitem_fancy_adjoint(g, idx, v):
    xp = array_module(g)
    # which positions of the index expression write last to their element
    marker = xp.zeros(g.shape, dtype=np.int64)
    sel = g[idx]
    ids = xp.arange(1, sel.size + 1, dtype=np.int64).reshape(sel.shape)
    marker[idx] = ids                       # the last write wins, as in NumPy
    winner = marker[idx] == ids
    return unbroadcast(xp.where(winner, sel, 0), v)


def snap(v):
    """A copy of an array, list, dict or dict view that is later changed in place (so the reverse
    sweep sees the old value); a shallow copy."""
    c = getattr(v, "copy", None)
    if c is not None and hasattr(v, "shape"):
        return c()
    if isinstance(v, list):
        return list(v)
    if isinstance(v, dict):
        return dict(v)
    if isinstance(v, deque):
        return deque(v, v.maxlen)
    view = _VIEW_OF.get(type(v))
    if view is not None:            # d.items() and d.values() are live: a view of a copy of d
        return getattr(dict(v.mapping), view)()
    return v


_VIEW_OF = {type({}.keys()): "keys", type({}.values()): "values", type({}.items()): "items"}


def undel(g, obj, idx):
    """Adjoint of ``del xs[i]`` / ``del d[k]`` for the container before the deletion."""
    if is_zero(g) or isinstance(g, dict):
        return g
    out = list(g)
    n = len(obj)
    pos = idx if idx >= 0 else n + 1 + idx
    out.insert(pos, 0.0)
    return out
