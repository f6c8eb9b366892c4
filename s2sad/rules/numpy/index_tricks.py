"""Index tricks: ``np.r_``/``np.c_`` (concatenations), ``np.mgrid``/``np.ogrid``,
``np.s_``/``np.index_exp``.
"""
import builtins
import math
import numbers
import sys

import numpy as np

from ..adjoints import A, _inverse, asarray, export, is_zero, like, tmap_zero, xp
from .concat_permute import concat_adjoint, concat_tangent
from ..registry import defrule


# -- helpers the templates call --------------------------------------------------------------------
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
    from ...errors import RuleError
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


# -- the table -------------------------------------------------------------------------------------
# index tricks: np.r_[...], np.c_[...] are concatenations; np.mgrid/np.ogrid expand slices;
# np.s_/np.index_exp return their items.  The lowering turns ``np.r_[a, 0:3]`` into
# ``_adj.index_concat(np.r_, True, a, _adj.r_slice(0, 3, None))`` (see index_concat above).
defrule(index_concat, "obj, is_tuple, /, *items",
        vjp={"items": "_adj.index_concat_adjoint(g, obj, is_tuple, items)"},
        jvp={"items": "_adj.index_concat_tangent(t, ans, obj, is_tuple, items)"},
        name="np.r_/np.c_ [...]", ns=A)
defrule(index_trick, "obj, is_tuple, /, *items",
        vjp={"items": "_adj.index_trick_adjoint(g, obj, is_tuple, items)"},
        jvp={"items": "_adj.index_trick_tangent(t, ans, obj, is_tuple, items)"},
        name="np.mgrid/np.ogrid/np.s_ [...]", kind="any", ns=A)
defrule(r_slice, "start, stop, step, /",
        vjp={"start": "_adj.r_slice_adjoint(g, start, stop, step, 0)",
             "stop": "_adj.r_slice_adjoint(g, start, stop, step, 1)",
             "step": "_adj.r_slice_adjoint(g, start, stop, step, 2)"},
        jvp={"start": "_adj.r_slice_tangent(t, start, stop, step, 0)",
             "stop": "_adj.r_slice_tangent(t, start, stop, step, 1)",
             "step": "_adj.r_slice_tangent(t, start, stop, step, 2)"},
        name="slice in an index trick", kind="any", ns=A)

export(globals(), also=('_index_trick_kind', '_trick_name'))


from ...runtime import hooks as _hooks  # noqa: E402
_hooks.register(index_tricks=sys.modules[__name__])   # (runtime.indexing: np.r_ held in a variable)
