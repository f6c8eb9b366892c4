"""The few helpers that generated code calls: accumulation, zeros, un-broadcasting, indexing.

Generated sweeps use ``0.0`` as the zero adjoint of a value whose adjoint has not been produced yet
(Python's float zero adds to any float or complex scalar or array, NumPy or CuPy, without changing
its dtype); containers use tuples/lists/dicts of adjoints with ``None`` for leaves that carry none.
"""
import functools as _functools
import threading as _threading
import operator as _operator
import numbers
import types as _types

import numpy as np

from .errors import ArgumentWriteError

_FunctionType = _types.FunctionType
_ModuleType = _types.ModuleType
_BuiltinType = _types.BuiltinFunctionType
_NDARRAY = np.ndarray


def _is_array(x):
    """A NumPy/CuPy array or NumPy scalar (the numpy module itself has .dtype and .shape too)."""
    return hasattr(x, "dtype") and hasattr(x, "shape") and type(x) is not _ModuleType
_partial = _functools.partial

_SCALARS = (float, int, complex, bool)


def is_zero(a):
    return a is None or (type(a) is float and a == 0.0)


def array_module(x):
    """``numpy`` or ``cupy``, by the type of ``x``; never imports CuPy itself."""
    mod = type(x).__module__
    if mod.startswith("cupy"):
        import cupy
        return cupy
    return np


def cj(x):
    """Complex conjugate, free for real values (adjoint templates of complex-capable rules)."""
    if type(x) is float or type(x) is int:
        return x
    if type(x) is complex:
        return x.conjugate()
    dt = getattr(x, "dtype", None)
    if dt is not None and dt.kind == "c":
        return x.conj()
    return x


def real_like(g, x):
    """Drop the imaginary part of ``g`` when ``x`` is real (gradients of real inputs are real)."""
    if type(x) is float:
        if type(g) is complex:
            return g.real
        if type(g) is float:
            return g
        return g
    dt = getattr(g, "dtype", None)
    if dt is not None and dt.kind == "c":
        xdt = getattr(x, "dtype", None)
        if (xdt is not None and xdt.kind != "c") or isinstance(x, (float, int)):
            return g.real
    elif type(g) is complex and not isinstance(x, complex) and getattr(x, "dtype", np.dtype(complex)).kind != "c":
        return g.real
    return g


def unbroadcast(g, x):
    """Sum ``g`` down to the shape of ``x`` (the adjoint of NumPy broadcasting), in x's dtype."""
    tx = type(x)
    if tx is float or tx is int:
        if type(g) is float:
            return g
        if type(g) is complex:
            return g.real
        s = g.sum() if hasattr(g, "sum") else g
        return real_like(s, x)
    if (tx is list or tx is tuple) and type(g) in (list, tuple) and len(g) != len(x):
        _refuse_sequence_arithmetic()
    shape = getattr(x, "shape", None)
    xdt = getattr(x, "dtype", None)
    if xdt is not None and shape is not None and xdt.kind not in "fcO" and _is_array(x):
        return array_module(x).zeros(shape)    # integer/bool arrays carry no derivative
    if shape is None:                       # other Python scalars (complex, bool)
        if hasattr(g, "shape") and g.shape != ():
            return g.sum()
        return g
    gshape = getattr(g, "shape", ())
    if gshape != shape:
        if not gshape and not hasattr(g, "shape"):
            # a Python scalar adjoint for an array input: broadcast it out
            xp = array_module(x)
            g = xp.full(shape, g, dtype=np.result_type(g, x.dtype) if x.dtype.kind == "c" else x.dtype)
        else:
            extra = len(gshape) - len(shape)
            if extra > 0:
                g = g.sum(axis=tuple(range(extra)))
            axes = tuple(i for i, n in enumerate(shape) if n == 1 and g.shape[i] != 1)
            if axes:
                g = g.sum(axis=axes, keepdims=True)
            if g.shape != shape:
                g = g.reshape(shape) if g.size == int(np.prod(shape)) else \
                    array_module(x).broadcast_to(g, shape)
    dt = getattr(x, "dtype", None)
    if dt is not None:
        gdt = getattr(g, "dtype", None)
        if gdt is not None and gdt != dt:
            if gdt.kind == "c" and dt.kind != "c":
                g = g.real
            if dt.kind in "fc":
                g = g.astype(dt, copy=False)
        elif gdt is None:
            xp = array_module(x)
            g = xp.asarray(g, dtype=dt)
    return g


def _refuse_sequence_arithmetic():
    from .errors import UnsupportedSyntaxError
    raise UnsupportedSyntaxError(
        "`+` or `*` joined or repeated lists or tuples whose type s2sad did not know when it built "
        "the derivative (it cannot tell which part of the result came from which operand)",
        fix="make the operands visibly lists: `list(a) + list(b)`, `[*a, *b]`, or `list(a) * 3`")


def add(a, b):
    """Adjoint accumulation that understands zeros (None / 0.0) and containers."""
    if a is None or (type(a) is float and a == 0.0 and not _is_leaf_value(b)):
        return b
    if b is None:
        return a
    ta = type(a)
    if ta is tuple or ta is list or isinstance(a, tuple):
        if type(b) is float and b == 0.0:
            return a
        vals = [add(x, y) for x, y in zip(a, b)]
        if hasattr(a, "_fields"):
            return ta(*vals)
        return ta(vals)
    if ta is dict:
        if type(b) is float and b == 0.0:
            return a
        out = dict(a)
        for k, v in b.items():
            out[k] = add(out.get(k), v)
        return out
    return a + b


def _is_leaf_value(b):
    return not isinstance(b, (tuple, list, dict)) and b is not None


def zeros_like(x):
    """A zero adjoint with the shape/structure of ``x``; None for values that carry no derivative."""
    if isinstance(x, float):
        return 0.0
    if isinstance(x, complex):
        return 0j
    if isinstance(x, (tuple, list)):
        return type(x)(zeros_like(v) for v in x)
    if isinstance(x, dict):
        return {k: zeros_like(v) for k, v in x.items()}
    dt = getattr(x, "dtype", None) if _is_array(x) else None
    if dt is not None and dt.kind in "fc":
        return array_module(x).zeros_like(x)
    if dt is not None and dt.kind == "O":       # an object array holding floats: float zeros
        return np.zeros(x.shape)
    return None


def materialize(g, x):
    """Turn a symbolic zero adjoint (0.0 / None) into real zeros shaped like ``x``; an object's
    adjoint becomes the same dataclass (gradient fields) or a dict of attribute gradients."""
    if _is_object(x):
        return _object_grad(g, x)
    tx = type(x)
    if tx is int or tx is bool or tx is str or x is None:
        return None
    dt = getattr(x, "dtype", None)
    if dt is not None and dt.kind not in "fcO":
        return None
    if is_zero(g):
        return zeros_like(x)
    if type(g) in (tuple, list) and type(x) in (tuple, list):
        return type(x)(materialize(a, b) for a, b in zip(g, x))
    if type(g) is dict and type(x) is dict:
        return {k: materialize(g.get(k), v) for k, v in x.items()}
    if hasattr(x, "shape") and getattr(g, "shape", None) != x.shape:
        return unbroadcast(g, x)
    return g


def _is_object(x):
    return hasattr(x, "__dict__") and not hasattr(x, "dtype") and not isinstance(x, type) \
        and not callable(x) or (hasattr(x, "__dict__") and hasattr(type(x), "__call__")
                                and not isinstance(x, type) and not hasattr(x, "__code__")
                                and not hasattr(x, "dtype") and _object_differentiable(x))


def _object_grad(g, x):
    import dataclasses
    attrs = {k: v for k, v in vars(x).items()}
    gd = g if isinstance(g, dict) else {}
    out = {}
    for k, v in attrs.items():
        if differentiable(v):
            out[k] = materialize(gd.get(k, 0.0), v)
        else:
            out[k] = None
    if dataclasses.is_dataclass(x):
        import copy
        obj = copy.copy(x)
        for k, v in out.items():
            object.__setattr__(obj, k, v)
        return obj
    return {k: v for k, v in out.items() if v is not None}


# -- indexing ---------------------------------------------------------------------------------
def _basic_index(idx):
    """True when ``x[idx]`` cannot select an element twice (no integer/boolean arrays)."""
    if isinstance(idx, tuple):
        return all(_basic_index(i) for i in idx)
    return idx is None or idx is Ellipsis or isinstance(idx, (slice, numbers.Integral))


def getitem_adjoint(g, x, idx):
    """Adjoint of ``x[idx]``: zeros shaped like x with ``g`` placed (added for repeats) at idx."""
    if isinstance(x, (tuple, list)):
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
    if isinstance(x, (tuple, list, dict)):
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
    from .rules.adjoints import _index_trick_kind
    kind = _index_trick_kind(obj)
    if kind is None:
        return None
    key = subscript_key(layout, flat)
    if isinstance(key, str) and kind == "concat":
        from .errors import UnsupportedSyntaxError
        from .rules.adjoints import _trick_name
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
        from .errors import UnsupportedSyntaxError
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
    from .rules import adjoints as adj
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
    from .rules import adjoints as adj
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
    view = _VIEW_OF.get(type(v))
    if view is not None:            # d.items() and d.values() are live: a view of a copy of d
        return getattr(dict(v.mapping), view)()
    return v


_VIEW_OF = {type({}.keys()): "keys", type({}.values()): "values", type({}.items()): "items"}


def keys_read(origin, *xs):
    """Before a dict's keys are read as values (``sorted(d)``, ``for k in d``, ``d.keys()``,
    ``d.items()``...; classify._guard_key_reads): refuse keys that are floats (or tuples holding
    floats).  s2sad keeps a dict's derivative per key and drops the keys' own derivatives, which
    is right for values read by key but not for keys that come back out as values."""
    for x in xs:
        t = type(x)
        if t is dict or t is _KEYS_VIEW or t is _ITEMS_VIEW:
            bad = next((k for k in (x.mapping if t is not dict else x) if _inexact_key(k)), None)
            if bad is not None:
                from .errors import UnsupportedSyntaxError
                raise UnsupportedSyntaxError(
                    f"this line reads the keys of a dict as values, and a key is a "
                    f"{type(bad).__name__} ({bad!r}); keys that are floats may carry derivatives, "
                    f"which s2sad does not follow through dict keys (it keeps a dict's "
                    f"derivative per key)", origin=origin,
                    fix="keep such pairs in a list (`pairs = list(zip(keys, values))`) or key the "
                        "dict by strings or integers; reading values by key (`d[k]`, `d.values()`) "
                        "is fine")


_KEYS_VIEW, _ITEMS_VIEW = type({}.keys()), type({}.items())


def _keys_of(x):
    """Whether iterating ``x`` yields a dict's keys: they carry no derivative (keys_read refuses
    floats), so the dict gets none back from what took them."""
    return isinstance(x, dict) or type(x) is _KEYS_VIEW


def _inexact_key(k):
    if isinstance(k, (float, complex)) or isinstance(getattr(k, "dtype", None), np.dtype) and \
            k.dtype.kind in "fc":
        return True
    return isinstance(k, tuple) and any(_inexact_key(e) for e in k)


def concat_str(*parts):
    return "".join(parts)


def not_in(container, item):
    return item not in container


# -- displays (tuple/list/dict literals); the lowering turns `(a, b)` into build_tuple(a, b) -----
def build_tuple(*items):
    return items


def build_list(*items):
    return list(items)


def build_dict(keys, *values):
    return dict(zip(keys, values))


def parts(g, n):
    """Split the adjoint of an n-element tuple/list into n adjoints (a zero splits into zeros)."""
    if is_zero(g):
        return (0.0,) * n
    return tuple(0.0 if v is None else v for v in g)


def dict_parts(g, keys):
    """Adjoints of the values of a dict display ``{k1: v1, ...}``: where a key is repeated, only
    its last value is kept (Python's rule), so only that one gets the key's adjoint."""
    if is_zero(g):
        return (0.0,) * len(keys)
    last = {}
    for i, k in enumerate(keys):
        last[k] = i
    return tuple(0.0 if g.get(k) is None or last[k] != i else g[k] for i, k in enumerate(keys))


# -- small adjoint helpers used by the Python rule table ----------------------------------------
def safe_log(a):
    """log(a) where it is defined; 0 where a == 0 (the pow-exponent adjoint there is 0 anyway)."""
    if type(a) is float or type(a) is int:
        return __import__("math").log(a) if a > 0 else (0.0 if a == 0 else complex(__import__("cmath").log(a)))
    xp = array_module(a)
    dt = getattr(a, "dtype", None)
    if dt is not None and dt.kind == "c":
        return xp.log(xp.where(a == 0, 1, a))
    with np.errstate(divide="ignore", invalid="ignore"):
        return xp.where(a > 0, xp.log(xp.where(a > 0, a, 1)), 0.0)


def pow_base_adjoint(g, a, b):
    if type(b) is int or type(b) is float:
        if b == 0:
            return g * 0.0
        if b == 1:
            return g
        if b == 2:
            return g * cj(2 * a)
        return g * cj(b * a ** (b - 1))
    return g * cj(b * a ** (b - 1))


def pow_exponent_adjoint(g, ans, a):
    return g * cj(ans * safe_log(a))


def abs_adjoint(g, x):
    if type(x) is float or type(x) is int:
        return g * (1.0 if x > 0 else -1.0 if x < 0 else 0.0)
    if type(x) is complex:
        return g * (x / abs(x)) if x != 0 else 0j
    xp = array_module(x)
    if x.dtype.kind == "c":
        ax = xp.abs(x)
        return g * xp.where(ax == 0, 0, x / xp.where(ax == 0, 1, ax))
    return g * xp.sign(x)


def abs_tangent(t, x):
    if type(x) is float or type(x) is int:
        return t * (1.0 if x > 0 else -1.0 if x < 0 else 0.0)
    if type(x) is complex:
        return (x.conjugate() * t).real / abs(x) if x != 0 else 0.0 * abs(t)
    xp = array_module(x)
    if getattr(x, "dtype", np.dtype(float)).kind == "c":
        ax = xp.abs(x)
        return (xp.conj(x) * t).real / xp.where(ax == 0, 1, ax)
    return t * xp.sign(x)


def real_adjoint(g, x):
    """Adjoint of ``x.real``: a real g becomes the complex gradient g + 0j for complex x."""
    dt = getattr(x, "dtype", None)
    if dt is not None and dt.kind == "c":
        return g.astype(dt) if hasattr(g, "astype") else complex(g)
    return g


def imag_adjoint(g, x):
    dt = getattr(x, "dtype", None)
    if dt is not None and dt.kind == "c":
        return (1j * g).astype(dt) if hasattr(g, "astype") else 1j * g
    if isinstance(x, complex):
        return 1j * g
    return 0.0 * g


def hypot_adjoint(g, ans, coords):
    return tuple(g * c / ans if ans != 0 else 0.0 for c in coords)


def digamma(x):
    from scipy.special import digamma as dg   # only reached for math.gamma / math.lgamma
    return float(dg(x))


def sum_adjoint(g, iterable):
    """Adjoint of builtin ``sum(iterable)``: every element receives g (summed down to its shape)."""
    if isinstance(iterable, (list, tuple)):
        return type(iterable)(unbroadcast(g, v) if hasattr(v, "shape") or isinstance(v, float) else g
                              for v in iterable)
    if not hasattr(iterable, "shape"):      # d.values(), iterators: one adjoint per element
        return [unbroadcast(g, v) if hasattr(v, "shape") or isinstance(v, float) else g
                for v in listed(iterable)]
    # an array summed over its first axis
    return array_module(iterable).broadcast_to(g, iterable.shape).astype(iterable.dtype)


# -- kinds of run-time values (the build is specialised on them) ----------------------------------
def kind_of(v):
    t = type(v)
    if t is _NDARRAY:
        return "a"
    if t is float:
        return "f"
    if t is complex:
        return "z"
    if t is int or t is bool or v is None or t is str:
        return "i"
    if t is tuple or t is list or t is dict:
        return "c"
    if _is_array(v):
        return "a"
    if isinstance(v, (tuple, list, dict)):
        return "c"
    if class_has_operators(t):
        return "o"                      # an object whose class defines __add__... in Python
    return "?"


def differentiable(v):
    """True for values that carry a derivative: real/complex floats and arrays, containers of them,
    object arrays holding any of them."""
    t = type(v)
    if t is _NDARRAY:
        k = v.dtype.kind
        return k in "fc" or k == "O" and _object_array_differentiable(v)
    if t is float or t is complex:
        return True
    if t is tuple or t is list or isinstance(v, (tuple, list)):
        return any(differentiable(x) for x in v)
    if t is dict or isinstance(v, dict):
        return any(differentiable(x) for x in v.values())
    if t is _ModuleType:
        return False
    dt = getattr(v, "dtype", None)
    if dt is not None and hasattr(v, "shape"):
        return dt.kind in "fc" or dt.kind == "O" and _object_array_differentiable(v)
    if t is _FunctionType:
        inner = getattr(v, "__s2sad_transform__", None)     # s2sad.grad(f): as f
        return _closure_differentiable(v) or (inner is not None and differentiable(inner[1]))
    if t is _partial:
        return differentiable(v.args) or differentiable(v.keywords)
    if t in _DICT_VIEWS:
        return any(differentiable(x) for x in v)     # d.values(), d.items() over floats
    if isinstance(v, Iter):
        # s2sad's own iterator: what it has yet to yield is not known, and a callee that
        # captures it or is given it may consume it (its adjoint goes back to its values)
        return True
    if t is _types.MethodType:
        return differentiable(v.__func__) or differentiable(v.__self__)
    if isinstance(v, np.ufunc):
        # np.frompyfunc(f, ...): the ufunc holds f (a closure may carry a derivative); NumPy shows
        # it only to the garbage collector
        import gc
        return _frompyfunc(v) and any(type(r) is _FunctionType and differentiable(r)
                                      for r in gc.get_referents(v))
    return _object_differentiable(v)


_DICT_VIEWS = (type({}.values()), type({}.items()), type({}.keys()))


def _object_array_differentiable(a):
    """An object array (``np.frompyfunc``, ``dtype=object``) carries a derivative when one of its
    elements does.  Only object arrays are scanned; numeric arrays are decided by their dtype."""
    return any(differentiable(x) for x in a.flat)


def _closure_differentiable(fn, depth=0):
    """A closure carries a derivative when a value it captured does."""
    if not fn.__closure__ or depth > 4:
        return False
    for c in fn.__closure__:
        try:
            x = c.cell_contents
        except ValueError:
            continue
        if type(x) is _FunctionType:
            if x is not fn and _closure_differentiable(x, depth + 1):
                return True
        elif differentiable(x):
            return True
    return False


def _object_differentiable(v, depth=0):
    """A user object carries a derivative when one of its attributes does."""
    import types
    d = getattr(v, "__dict__", None)
    if d is None or depth > 3 or isinstance(v, (type, types.ModuleType, types.FunctionType,
                                                  types.MethodType)):
        return False
    for x in list(d.values()):
        t = type(x)
        if t is float or t is complex:
            return True
        if t is _FunctionType or t is _partial or t is _types.MethodType:
            # (np.vectorize(f).pyfunc, o.f = lambda: y)
            if differentiable(x):
                return True
            continue
        if t in (tuple, list, dict):
            if differentiable(x):
                return True
            continue
        dt = getattr(x, "dtype", None)
        if dt is not None and hasattr(x, "shape"):
            if differentiable(x):
                return True
        elif hasattr(x, "__dict__") and _object_differentiable(x, depth + 1):
            return True
    return False


# -- derived callees (built lazily; recursion and mutual recursion work) --------------------------
def _data_cells(fn):
    if not fn.__closure__:
        return ()
    from .frontend.source import split_closure
    return tuple(split_closure(fn)[1])


class DerivedStub:
    """``f__fwd``/``f__bwd`` for a user function called from generated code.  The derivative is
    looked up (and built once) per value kinds of the arguments; the tape remembers which one.
    Data held in the callee's closure cells is passed first (it carries no derivative here)."""

    __slots__ = ("callee", "mask", "_last", "_cells")

    def __init__(self, callee, mask):
        self.callee, self.mask, self._last = callee, mask, None
        self._cells = _data_cells(callee)

    def resolve(self, args):
        """(derivative, the sweep's arguments) for a call with ``args``."""
        if self._cells:
            from .frontend.source import data_cell_values
            args = tuple(data_cell_values(self.callee, self._cells)) + tuple(args)
            mask = (False,) * len(self._cells) + self.mask
        else:
            mask = self.mask
        kinds = tuple(kind_of(a) for a in args)
        last = self._last
        if last is not None and last[0] == kinds and last[1].fresh():
            d = last[1]
        else:
            from .cache import reverse_derivative
            d = reverse_derivative(self.callee, mask, kinds)
            self._last = (kinds, d)
        return d, args

    def fwd(self, *args):
        d, args = self.resolve(args)
        value, tape = d.fwd(*args)
        return value, (d.bwd, tape)

    @staticmethod
    def bwd(tape, g):
        bwd, inner = tape
        return bwd(inner, g)


# -- closures, displays with *, calls with * --------------------------------------------------
def make_closure(names, *values):
    """Stands for a nested def/lambda in the IR (the emitters write the definition itself)."""
    raise AssertionError("make_closure is never called")


def star_args(*segments):
    """``(a, *xs, b)``: concatenate segments into one tuple."""
    out = []
    for seg in segments:
        out.extend(seg)
    return tuple(out)


def star_args_adjoint(g, segments):
    if is_zero(g):
        return (0.0,) * len(segments)
    out, k = [], 0
    for seg in segments:
        n = len(seg)
        part = tuple(g[k:k + n])
        if isinstance(seg, list):
            part = list(part)
        elif hasattr(seg, "shape"):
            part = array_module(seg).stack([array_module(seg).asarray(v) for v in part]) if n else \
                array_module(seg).zeros_like(seg)
        out.append(part)
        k += n
    return tuple(out)


def merge_dicts(*ds):
    out = {}
    for d in ds:
        out.update(d)
    return out


def apply(fn, args, kwargs):
    return fn(*args, **(kwargs or {}))


def seq_adjoint(g, seq):
    """Adjoint of ``list(seq)`` / ``tuple(seq)``: g in the structure of seq."""
    if is_zero(g) or _keys_of(seq):
        return 0.0
    if isinstance(seq, (list, tuple)):
        return type(seq)(_z(v) for v in g)
    if isinstance(seq, Iter):
        return [_z(v) for v in g]
    if hasattr(seq, "shape"):
        xp = array_module(seq)
        if not len(g):
            return xp.zeros_like(seq)
        row = seq.shape[1:]             # rows without an adjoint are zero rows
        return xp.stack([xp.zeros(row, dtype=seq.dtype) if is_zero(v) else
                         xp.broadcast_to(xp.asarray(v), row) for v in g]).astype(seq.dtype, copy=False)
    return g


def identity(x):
    return x


# -- container mutation (list.append/extend/insert/pop, dict.update) ------------------------------
def unappend(g):
    """Adjoint of ``xs.append(v)``: (adjoint of xs before, adjoint of v)."""
    if is_zero(g):
        return 0.0, 0.0
    return list(g[:-1]), _z(g[-1])


def unextend(g, seq):
    n = len(seq)
    if is_zero(g):
        return 0.0, 0.0
    part = g[len(g) - n:]
    return list(g[:len(g) - n]), (type(seq)(_z(v) for v in part) if isinstance(seq, (list, tuple)) else
                                 seq_adjoint([_z(v) for v in part], seq))


def uninsert(g, i):
    if is_zero(g):
        return 0.0, 0.0
    g = list(g)
    n = len(g)
    pos = i if i >= 0 else max(n - 1 + i, 0)
    pos = min(pos, n - 1)
    v = g.pop(pos)
    return g, _z(v)


def unpop(g, gy, obj, i=-1):
    """Adjoint of ``y = xs.pop(i)`` for xs before the pop (obj is xs after it)."""
    if isinstance(obj, dict):
        out = dict(g) if not is_zero(g) else {}
        out[i] = gy
        return out
    n = len(obj)
    base = list(g) if not is_zero(g) else [0.0] * n
    pos = i if i >= 0 else n + 1 + i
    base.insert(pos, gy if gy is not None else 0.0)
    return base


def unupdate(g, other):
    if is_zero(g):
        return 0.0, 0.0
    keys = list(other.keys()) if isinstance(other, dict) else [k for k, _ in other]
    before = {k: v for k, v in g.items() if k not in keys}
    if isinstance(other, dict):
        return before, {k: _z(g.get(k)) for k in keys}
    return before, type(other)((k, _z(g.get(k))) for k in keys)     # a sequence of pairs


def _z(v):
    return 0.0 if v is None else v


# -- builtins over sequences --------------------------------------------------------------------
def _items(args):
    return listed(args[0]) if len(args) == 1 else list(args)


def _first_equal(items, ans):
    """Index of the first item that is, or equals, ``ans``; None where that cannot be told (an
    item whose comparison is not a plain truth value, NaN)."""
    for i, v in enumerate(items):
        if v is ans:
            return i
        try:
            eq = v == ans
        except Exception:
            return None
        if type(eq) is not bool and type(eq) is not np.bool_:
            return None
        if eq:
            return i
    return None


def extremum_default_adjoint(g, args):
    """Adjoint (or tangent) of ``min``/``max``'s ``default=``: all of g when the iterable was empty."""
    return g if len(args) == 1 and not _items(args) else 0.0


def extremum_adjoint(g, args, key, pick, *ans):
    """Adjoint of builtin ``min``/``max`` (of several arguments or of one iterable).  With a
    ``key``, the item taken is found from the result ``ans`` (the first item equal to it is the
    one Python took): calling the key again in the reverse sweep would read the variables it
    captured as they are then (a loop variable has moved on: late binding)."""
    items = _items(args)
    if not items:
        return (0.0,) * len(args)
    best = _first_equal(items, ans[0]) if key is not None and ans else None
    if best is None:
        keyf = key if key is not None else (lambda v: v)
        vals = [keyf(v) for v in items]
        best = pick(range(len(items)), key=lambda k: vals[k])
    adj = [0.0] * len(items)
    adj[best] = g
    if len(args) == 1:
        seq = args[0]
        if _keys_of(seq):
            return (0.0,)
        if hasattr(seq, "shape"):
            return (getitem_adjoint(g, seq, best),)
        return (type(seq)(adj) if isinstance(seq, (list, tuple)) else adj,)
    return tuple(adj)


def _sorted_order(items, ans):
    """The positions in ``items`` of the values of ``ans`` (sorted's result, or its first n), in
    order: each result value is the first unused item that is it or, failing that, equals it
    (a stable sort keeps equal items in their order).  None where that cannot be told (values
    that cannot be hashed, NaN, a result changed since)."""
    if not isinstance(ans, (list, tuple)) or len(ans) > len(items):
        return None
    by_id, by_val = {}, None
    for i, v in enumerate(items):
        by_id.setdefault(id(v), []).append(i)
    used, order = set(), []
    for a in ans:
        k = next((i for i in by_id.get(id(a), ()) if i not in used), None)
        if k is None:
            if by_val is None:
                by_val = {}
                try:
                    for i, v in enumerate(items):
                        by_val.setdefault(v, []).append(i)
                except TypeError:
                    return None
            try:
                k = next((i for i in by_val.get(a, ()) if i not in used), None)
            except TypeError:
                return None
            if k is None:
                return None
        used.add(k)
        order.append(k)
    return order


def sorted_adjoint(g, iterable, key, reverse, ans=None):
    """Adjoint of ``sorted``.  With a ``key``, the order is read from the result ``ans`` (which
    item each result value is): calling the key again in the reverse sweep would read the
    variables it captured as they are then (a loop variable has moved on: late binding)."""
    if _keys_of(iterable):
        return 0.0
    items = listed(iterable)
    order = _sorted_order(items, ans) if key is not None and ans is not None else None
    if order is None:
        keyf = key if key is not None else (lambda v: v)
        order = sorted(range(len(items)), key=lambda k: keyf(items[k]), reverse=reverse)
    if is_zero(g):
        return 0.0
    adj = [0.0] * len(items)
    for pos, k in enumerate(order):
        adj[k] = g[pos]
    if isinstance(iterable, tuple):
        return tuple(adj)
    if hasattr(iterable, "shape"):
        return seq_adjoint(adj, iterable)
    return adj


# -- dynamic call sites ---------------------------------------------------------------------------
_NOTHING = object()
# A record says how to pull an output adjoint back to the callee and the arguments:
#   ("rule", rule, bound, ans, is_method, nargs, kwnames)   a primitive with a rule
#   ("derived", d, tape, mask, names, kwnames, ncells, cellnames, nself, npos)  a Python function
#   ("partial", inner record, nargs_partial, partial keyword names, nargs, kwnames)
#   ("attr", name) / ("self",)                         attribute reads on objects / bound methods
#   ("dataclass", field names, nargs, kwnames)         a dataclass constructed from fields

_IN_PLACE_METHODS = {"sort", "reverse", "popitem", "update", "setdefault", "remove", "clear",
                     "__setitem__", "__delitem__", "__iadd__",
                     # followed as statements on local lists; reached here only on other lists
                     # (module-level, inside a dict...), which s2sad does not follow
                     "append", "extend", "insert", "pop"}
# (type, method name) -> handler(obj, args, kwargs) -> (value, ("custom", pull_fn)) for in-place
# methods s2sad does follow (list.sort, list.reverse); filled by rules.python_rules.  pull_fn(g,
# g_self) gives (adjoint of the object before, adjoints of args, of kwargs).
IN_PLACE_RULES = {}


def refuse_vectorize(fn, args, kwargs):
    """``np.vectorize(f)`` calls ``f`` element by element from inside NumPy, where s2sad cannot
    follow it: refuse when values that carry a derivative go in."""
    made = "np.vectorize(...)" if isinstance(fn, np.vectorize) else \
        "np.frompyfunc(...)" if _frompyfunc(fn) else None
    # (the function itself may carry a derivative: a closure over one, ``lambda t: t * y``)
    if made and (any(differentiable(a) for a in args) or differentiable(fn) or
                 any(differentiable(v) for v in kwargs.values())):
        from .errors import OpaqueCalleeError
        raise OpaqueCalleeError(
            f"{made} calls its function element by element from inside NumPy, so s2sad "
            "cannot follow the values that carry a derivative through it",
            fix="call the function on the arrays directly (NumPy operations broadcast), or loop "
                "over the elements in your own code")


def _frompyfunc(fn):
    """A ufunc made by ``np.frompyfunc(f, nin, nout)`` (object loops only), or its method."""
    u = fn if isinstance(fn, np.ufunc) else getattr(fn, "__self__", None)
    return isinstance(u, np.ufunc) and all(set(t.replace("->", "")) == {"O"} for t in u.types)


_DUNDERS = {_operator.add: ("__add__", "__radd__"), _operator.sub: ("__sub__", "__rsub__"),
            _operator.mul: ("__mul__", "__rmul__"), _operator.truediv: ("__truediv__", "__rtruediv__"),
            _operator.floordiv: ("__floordiv__", "__rfloordiv__"), _operator.mod: ("__mod__", "__rmod__"),
            _operator.pow: ("__pow__", "__rpow__"), _operator.matmul: ("__matmul__", "__rmatmul__"),
            _operator.neg: ("__neg__",), _operator.pos: ("__pos__",), abs: ("__abs__",),
            _operator.getitem: ("__getitem__",)}


def python_dunder(obj, name):
    """``type(obj).name`` when it is a Python function s2sad may derive (a user class's
    ``__add__``...), else None."""
    f = getattr(type(obj), name, None)
    return f if _is_python(f) else None


_OPERATOR_CLASSES = {}


def class_has_operators(cls):
    """True for a user class that defines arithmetic operators or ``__getitem__`` in Python."""
    known = _OPERATOR_CLASSES.get(cls)
    if known is None:
        known = _OPERATOR_CLASSES[cls] = any(
            _is_python(getattr(cls, n, None)) for names in _DUNDERS.values() for n in names)
    return known


def operator_methods(fn, args):
    """The Python methods that may compute ``fn(*args)`` (``a + b``, ``-a``, ``a[i]``...) on
    objects of user classes, in Python's order: (method, its object, its other arguments,
    reflected).  A binary operator's second entry, ``__radd__``..., is tried when the first
    returns NotImplemented."""
    names = _DUNDERS[fn]
    if len(names) == 1:                     # -a, abs(a), a[i]: a method of the first operand
        m = python_dunder(args[0], names[0]) if args else None
        return [(m, args[0], tuple(args[1:]), False)] if m is not None else []
    if len(args) != 2:
        return []
    a, b = args
    out = []
    m = python_dunder(a, names[0])
    if m is not None:
        out.append((m, a, (b,), False))
    m = python_dunder(b, names[1])
    if m is not None:
        out.append((m, b, (a,), True))
    return out


def _call_operator(fn, args):
    """``fn(*args)`` on objects of user classes, their operator methods differentiated; None when
    no such method applies."""
    unary = len(_DUNDERS[fn]) == 1
    for m, self_, rest, reflected in operator_methods(fn, args):
        value, rec = _call_derived(m, rest, {}, self_=self_)
        if unary or value is not NotImplemented:
            return value, ("operator", rec, int(reflected))
    return None


def call(fn, *args, **kwargs):
    """Run a call whose callee is only known now; returns (value, record for :func:`pull`)."""
    import functools
    import inspect
    refuse_vectorize(fn, args, kwargs)
    if not kwargs and type(fn) is _BuiltinType and fn in _DUNDERS:
        done = _call_operator(fn, args)
        if done is not None:
            return done
    self_ = getattr(fn, "__self__", None)
    if type(self_) in (list, dict) and getattr(fn, "__name__", None) in _IN_PLACE_METHODS and \
            (differentiable(self_) or any(differentiable(a) for a in args + tuple(kwargs.values()))):
        handler = IN_PLACE_RULES.get((type(self_), fn.__name__))
        if handler is not None:
            return handler(self_, args, kwargs)
        from .errors import UnsupportedSyntaxError
        grow = fn.__name__ in ("append", "extend", "insert", "pop")
        raise UnsupportedSyntaxError(
            f"`.{fn.__name__}(...)` changes a {type(self_).__name__} that holds values carrying "
            f"derivatives in a way s2sad does not follow" +
            (" (s2sad follows these on lists held by a local variable)" if grow else ""),
            fix="keep the list in a local variable (`xs = []` ... `xs.append(v)`) or build it with a "
                "comprehension, and return it if the caller needs it" if grow else
                "build a new list/dict instead (e.g. `sorted(xs)`, `xs[::-1]`, `{**d, k: v}`)")
    if type(self_) in (list, dict, tuple) and hasattr(fn, "__name__"):
        # d.get / d.values / d.items / d.copy...: the container-method rules (they gave zero)
        from .rules.registry import lookup_container_method
        rule = lookup_container_method(fn.__name__)
        if rule is not None:
            ans = fn(*args, **kwargs)
            if rule.zero:
                return ans, None
            bound = rule.bind((self_,) + args, kwargs)
            _check_rule_params(rule, bound)
            return ans, ("rule", rule, bound, ans, True, len(args), list(kwargs))
    if inspect.ismethod(fn):
        func = fn.__func__
        if _is_python(func):
            return _call_derived(func, args, kwargs, self_=self_)
    elif self_ is not None and not isinstance(self_, type(np)) and hasattr(fn, "__name__") \
            and (_is_array(self_) or type(self_) in (float, complex)):
        # a method of a NumPy/CuPy array (or of a Python float/complex: z.conjugate())
        from .rules.registry import lookup_method
        rule = lookup_method(fn.__name__)
        if rule is None and any(differentiable(a) for a in args + tuple(kwargs.values())):
            from .errors import OpaqueCalleeError
            raise OpaqueCalleeError(
                f"the array method .{fn.__name__}() has no derivative rule and is called with "
                f"values that carry a derivative (it may change the array in place)",
                fix="compute the new value with an expression and assign it, or declare a rule "
                    "with s2sad.defmethod")
        ans = fn(*args, **kwargs)
        if rule is None and differentiable(self_) and (ans is None or differentiable(ans)):
            from .errors import OpaqueCalleeError       # (a.sort(), a.fill(0) change a in place)
            raise OpaqueCalleeError(
                f"the method .{fn.__name__}() of a {type(self_).__name__} that carries a derivative "
                f"has no derivative rule" + (" (it changes the array in place)" if ans is None else ""),
                fix="compute the new value with an expression and assign it (`a = np.sort(a)`), or "
                    "declare a rule with s2sad.defmethod")
        if rule is None or rule.zero:
            return ans, None
        bound = rule.bind((self_,) + args, kwargs)
        _check_rule_params(rule, bound)
        return ans, ("rule", rule, bound, ans, True, len(args), list(kwargs))
    if isinstance(self_, DerivedStub) and getattr(fn, "__func__", None) is DerivedStub.fwd:
        # generated code calling a derived callee, itself being differentiated: see through
        d, full = self_.resolve(args)
        (value, inner), rec = _call_derived(d.fwd, full, {})
        return (value, (d.bwd, inner)), ("stubfwd", rec, len(full) - len(args))
    if fn is DerivedStub.bwd:
        (bwd, inner), g = args
        value, rec = _call_derived(bwd, (inner, g), {})
        return value, ("stubbwd", rec)
    if fn is init_into:
        cls, obj = args[0], args[1]
        base = super(cls, obj).__init__
        func = getattr(base, "__func__", None)
        if func is not None and _is_python(func):
            _, rec = _call_derived(func, args[2:], kwargs, self_=obj, mode="init")
            return obj, ("init_into", rec)
        base(*args[2:], **kwargs)
        return obj, None
    if getattr(fn, "__s2sad_jvp__", False) and not kwargs and len(args) == 3:
        # s2sad.jvp(f, primals, tangents) inside: its generated forward sweep is Python too
        jfn, full, layout = jvp_function(*args)
        value, rec = _call_derived(jfn, full, {})
        return value, ("jvp", rec, layout)
    parts_ = transform_parts(fn, args)
    if parts_ is not None:
        # s2sad.grad(f) / value_and_grad(f) called inside a function being differentiated: the
        # generated gradient function is Python s2sad differentiates like any other
        done = [_call_derived(p, args, kwargs) if _is_python(p) else call(p, *args, **kwargs)
                for p in parts_]
        if len(done) == 1:
            return done[0]
        return tuple(v for v, _ in done), ("parts", [r for _, r in done])
    if isinstance(fn, functools.partial):
        value, rec = call(fn.func, *(fn.args + args), **{**fn.keywords, **kwargs})
        return value, ("partial", rec, len(fn.args), list(fn.keywords), len(args), list(kwargs))
    from .rules.registry import lookup
    try:
        rule = lookup(fn)
    except TypeError:
        rule = None
    if rule is not None:
        ans = fn(*args, **kwargs)
        if rule.zero:
            return ans, None
        if rule.receiver:           # a bound method's rule: its object is the first parameter
            bound = rule.bind((self_,) + args, kwargs)
            _check_rule_params(rule, bound)
            return ans, ("rule", rule, bound, ans, True, len(args), list(kwargs))
        bound = rule.bind(args, kwargs)
        _check_rule_params(rule, bound)
        return ans, ("rule", rule, bound, ans, False, len(args), list(kwargs))
    if _is_python(fn):
        return _call_derived(fn, args, kwargs)
    if isinstance(fn, type) and issubclass(fn, tuple) and hasattr(fn, "_fields"):
        ans = fn(*args, **kwargs)              # a named tuple built from its fields
        return ans, ("namedtuple", len(args), list(kwargs), list(fn._fields))
    if isinstance(fn, type):
        import dataclasses
        if dataclasses.is_dataclass(fn) and not hasattr(fn, "__post_init__"):
            ans = fn(*args, **kwargs)
            names = [f.name for f in dataclasses.fields(fn) if f.init]
            return ans, ("dataclass", names, len(args), list(kwargs))
        init = fn.__init__
        if _is_python(init) and any(differentiable(a) for a in args + tuple(kwargs.values())):
            obj = fn.__new__(fn)
            _, rec = _call_derived(init, args, kwargs, self_=obj, mode="init")
            return obj, rec
    elif not inspect.isroutine(fn) and hasattr(type(fn), "__call__") and \
            _is_python(getattr(type(fn).__call__, "__func__", type(fn).__call__)):
        # a callable object (a model with __call__)
        return _call_derived(type(fn).__call__, args, kwargs, self_=fn)
    ans = fn(*args, **kwargs)
    # (a method's own object is one of its inputs)
    recv = () if self_ is None or isinstance(self_, (type, _ModuleType)) else (self_,)
    if may_carry(ans) and any(differentiable(a) for a in recv + args + tuple(kwargs.values())):
        from .errors import OpaqueCalleeError
        raise OpaqueCalleeError(_opaque_message(fn), fix=_rule_skeleton(fn))
    return ans, None


def may_carry(value):
    """What an opaque callee (no rule, no source) given values that carry a derivative may
    return without a refusal: only values that hold no float or complex numbers.  An iterator
    (other than s2sad's own) is not known to hold none: it counts as carrying one."""
    if differentiable(value):
        return True
    return hasattr(value, "__next__") and not isinstance(value, (str, bytes, Iter))


def _check_rule_params(rule, bound):
    """A value carrying a derivative must not reach a parameter the rule has no derivative for."""
    if (getattr(rule.fn, "__module__", None) or "").startswith("s2sad."):
        return
    skip = set(rule.differentiable) | set(rule.constant)
    for p, v in bound.items():
        if p not in skip and v is not None and differentiable(v):
            from .errors import RuleError
            why = rule.why.get(p)
            raise RuleError(f"a value carrying a derivative reaches parameter `{p}` of "
                            f"{rule.name}, which has no derivative rule for it" +
                            (f" ({why})" if why else ""),
                            fix=f"pass a constant for `{p}`, or declare the derivative with "
                                f"s2sad.defrule(..., vjp={{{p!r}: ...}})")


_USER_CACHE = {}


def _is_python(fn):
    """A Python function s2sad may derive: user code, not s2sad, the standard library or an
    installed package (those need rules)."""
    import inspect
    if not inspect.isfunction(fn):
        return False
    code = fn.__code__
    r = _USER_CACHE.get(code)
    if r is None:
        r = _USER_CACHE[code] = is_user_code(fn)
    return r


def is_user_code(fn):
    import os
    mod = fn.__module__ or ""
    if mod.startswith("s2sad.") and not mod.startswith("s2sad_generated"):
        return False
    f = fn.__code__.co_filename
    if f.startswith("<s2sad-generated"):
        return True
    if f.startswith("<"):
        return False
    f = os.path.realpath(f)
    for p in _library_dirs():
        if f.startswith(p):
            return False
    return "site-packages" not in f and "dist-packages" not in f


_LIBRARY_DIRS = []
_LIBRARY_LOCK = _threading.Lock()


def _library_dirs():
    """The standard library's and installed packages' folders, computed once (sysconfig fills
    its own tables on first use, which is not safe from several threads at once: "dictionary
    changed size during iteration")."""
    if not _LIBRARY_DIRS:
        import os
        import sysconfig
        with _LIBRARY_LOCK:
            if not _LIBRARY_DIRS:
                paths = sysconfig.get_paths()
                _LIBRARY_DIRS[:] = [os.path.realpath(paths[k]) + os.sep for k in
                                    ("stdlib", "platstdlib", "purelib", "platlib") if paths.get(k)]
    return _LIBRARY_DIRS


def constructible(cls):
    """A class whose construction s2sad differentiates: a user __init__, or a plain dataclass."""
    import dataclasses
    if dataclasses.is_dataclass(cls) and not hasattr(cls, "__post_init__"):
        return True
    init = getattr(cls, "__init__", None)
    return init is not None and _is_python(init)


def _call_derived(fn, args, kwargs, self_=None, mode="reverse"):
    import inspect
    from .cache import reverse_derivative
    nself = 0
    if self_ is not None:
        args = (self_,) + tuple(args)
        nself = 1
    code = fn.__code__
    names = None
    defaulted = ()
    if kwargs or code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS) or \
            (fn.__defaults__ and len(args) < code.co_argcount) or fn.__kwdefaults__:
        sig = inspect.signature(fn, follow_wrapped=False)
        ba = sig.bind(*args, **kwargs)
        given = set(ba.arguments)
        ba.apply_defaults()
        names = list(ba.arguments)
        vals = list(ba.arguments.values())
        defaulted = tuple(n for n in names if n not in given)
    else:
        vals = list(args)
    cellnames = _data_cells(fn)
    cells = []
    if cellnames:
        from .frontend.source import data_cell_values
        cells = data_cell_values(fn, cellnames)
    full = tuple(cells) + tuple(vals)
    mask = tuple(differentiable(a) for a in full)
    kinds = tuple(kind_of(a) for a in full)
    if nself and mode == "reverse" and fn.__code__ in _MUTATING:
        mode = "mut"
    try:
        d = reverse_derivative(fn, mask, kinds, mode)
    except ArgumentWriteError as e:
        # a method that writes into its own object: differentiate it as an update of the object
        first = fn.__code__.co_varnames[0] if fn.__code__.co_argcount else None
        if not (nself and mode == "reverse" and e.param == first):
            raise
        _MUTATING.add(fn.__code__)
        mode = "mut"
        d = reverse_derivative(fn, mask, kinds, mode)
    value, tape = d.fwd(*full)
    if mode == "mut":
        value = value[0]
    return value, ("derived", d, tape, mask, names, list(kwargs), len(cells), cellnames, nself,
                   len(args) - nself, defaulted, mode == "mut")


_MUTATING = set()          # code objects of methods that update their object


def pull(rec, g, g_self=_NOTHING):
    """Adjoints of a dynamic call: (adjoint of the callee, tuple for args, dict for kwargs).

    The callee's adjoint is the adjoint of a bound method's object, or a dict of a closure's
    captured variables.  ``g_self`` is given for a method call that may update its object: the
    adjoint of the object after the call (the result's callee adjoint is then the object's adjoint
    before the call)."""
    if rec is not None and rec[0] == "custom":
        return rec[1](g, g_self)
    if g_self is not _NOTHING:
        return _pull_mut(rec, g, g_self)
    if rec is None or is_zero(g):
        return _zero_pull(rec)
    kind = rec[0]
    if kind == "rule":
        _, rule, bound, ans, is_method, nargs, kwnames = rec
        params = list(rule.signature.parameters)
        adj = {}
        if rule.joint:
            vals = rule.adjoint_function("*")(g, ans, **bound)
            adj = dict(zip(rule.joint[0], vals))
        else:
            for p in rule.differentiable:
                v = bound.get(p)
                if v is not None and differentiable(v):
                    adj[p] = rule.adjoint_function(p)(g, ans, **bound)
        pos = []
        for p in params:
            kp = rule.signature.parameters[p].kind
            if kp == kp.VAR_POSITIONAL:
                pos.extend(adj.get(p, (0.0,) * len(bound.get(p, ()))))
            elif kp == kp.VAR_KEYWORD or p in kwnames:
                continue
            else:
                pos.append(adj.get(p, 0.0))
        pos = pos[:nargs + (1 if is_method else 0)]
        sig = rule.signature.parameters
        var_kw = [adj.get(p) for p in params if sig[p].kind == sig[p].VAR_KEYWORD]    # **kwargs
        var_kw = var_kw[0] if var_kw and isinstance(var_kw[0], dict) else {}
        kw = {k: _z(adj.get(k, 0.0) if k in sig else var_kw.get(k, 0.0)) for k in kwnames}
        if is_method:
            return _z(pos[0]), tuple(_z(v) for v in pos[1:]), kw
        return 0.0, tuple(_z(v) for v in pos), kw
    if kind == "derived":
        d, tape, mut = rec[1], rec[2], rec[-1]
        return _derived_adjoints(rec, d.bwd(tape, (g, 0.0) if mut else g))
    if kind == "operator":                  # a user class's __add__ / __radd__ / __neg__...
        _, inner, reflected = rec
        g_self, g_args, _ = pull(inner, g)
        if not g_args:
            return 0.0, (g_self,), {}
        return 0.0, ((g_args[0], g_self) if reflected else (g_self, g_args[0])), {}
    if kind == "jvp":
        _, inner, (ncells, cellnames, nprim, mask) = rec
        _, a, _ = pull(inner, g)
        a = list(a)
        f_adj = dict(zip(cellnames, a[:ncells])) if ncells else 0.0
        prim = tuple(a[ncells:ncells + nprim])
        it = iter(a[ncells + nprim:])
        tans = tuple(next(it) if m else 0.0 for m in mask[ncells:])
        return 0.0, (f_adj, prim, tans), {}
    if kind == "parts":                     # value_and_grad(f): (f, its gradient function)
        callee, pos, kw = 0.0, None, {}
        for r, gi in zip(rec[1], parts(g, len(rec[1]))):
            c, a, k = pull(r, gi)
            callee = add(callee, c)
            pos = a if pos is None else tuple(add(u, v) for u, v in zip(pos, a))
            kw = {n: add(kw.get(n, 0.0), k.get(n, 0.0)) for n in set(kw) | set(k)}
        return callee, pos, kw
    if kind == "partial":
        _, inner, npart, pkw, nargs, kwnames = rec
        c, a, k = pull(inner, g)
        callee = {"func": c, "args": tuple(a[:npart]), "keywords": {n: k.get(n, 0.0) for n in pkw}}
        return callee, tuple(a[npart:npart + nargs]), {n: k.get(n, 0.0) for n in kwnames}
    if kind == "stubfwd":
        gv, gt = parts(g, 2)
        g_inner = 0.0 if is_zero(gt) else parts(gt, 2)[1]
        c, a, k = pull(rec[1], (gv, g_inner))
        return 0.0, tuple(a[rec[2]:]), k
    if kind == "stubbwd":
        c, a, k = pull(rec[1], g)
        return 0.0, ((0.0, a[0]), a[1]), k
    if kind == "init_into":
        c, a, k = pull(rec[1], g)
        return 0.0, (0.0, c) + tuple(a), k
    if kind == "attr":
        return {rec[1]: g}, (), {}
    if kind == "namedtuple":
        _, nargs, kwnames, fields = rec
        vals = parts(g, len(fields))
        return 0.0, tuple(vals[:nargs]), {k: vals[fields.index(k)] for k in kwnames}
    if kind == "nt_attr":
        _, k, n, typ = rec
        vals = [0.0] * n
        vals[k] = g
        return typ(*vals), (), {}
    if kind == "self":
        return g, (), {}
    if kind == "dataclass":
        _, names, nargs, kwnames = rec
        pos = [_z(g.get(n)) if isinstance(g, dict) else 0.0 for n in names[:nargs]]
        kw = {n: _z(g.get(n)) if isinstance(g, dict) else 0.0 for n in kwnames}
        return 0.0, tuple(pos), kw
    raise AssertionError(f"unknown record {kind}")


def _pull_mut(rec, g, g_self):
    if rec is not None and rec[0] == "derived" and rec[-1]:
        if is_zero(g) and is_zero(g_self):
            return _ZERO_PULL
        # the sweep's output adjoint is (result, object after); its bwd takes the pair
        return _derived_adjoints(rec, rec[1].bwd(rec[2], (g, g_self)))
    r = pull(rec, g)
    c, a, k = r[0], r[1], r[2]
    return (add(g_self, c) if not is_zero(g_self) else c), a, k


def _derived_adjoints(rec, grads):
    """(callee adjoint, positional adjoints, keyword adjoints) of a derived call, from the
    gradients its reverse sweep returned (one per active sweep parameter)."""
    _, d, tape, mask, names, kwnames, ncells, cellnames, nself, npos, defaulted, mut = rec
    grads = iter(grads)
    full = [_z(next(grads)) if m else 0.0 for m in mask]
    cells = full[:ncells]
    vals = full[ncells:]
    callee = {n: v for n, v in zip(cellnames, cells)} if ncells else 0.0
    if defaulted:
        callee = dict(callee) if isinstance(callee, dict) else {}
        for n in defaulted:
            callee[f"{n}="] = vals[names.index(n)]
    if nself:
        callee = vals[0]
    if names is None:
        return callee, tuple(vals[nself:]), {}
    import inspect
    params = inspect.signature(d.ir.pyfunc, follow_wrapped=False).parameters
    by_name = dict(zip(names, vals))
    pos, kw = [], {}
    for n in names[nself:]:
        if n in defaulted:
            continue
        p = params.get(n)
        if p is not None and p.kind == p.VAR_POSITIONAL:
            pos.extend(by_name[n] if not is_zero(by_name[n]) else ())
        elif p is not None and p.kind == p.VAR_KEYWORD:
            if not is_zero(by_name[n]):
                kw.update(by_name[n])
        elif n in kwnames:
            kw[n] = by_name[n]
        else:
            pos.append(by_name[n])
    pos = pos[:npos] + [0.0] * max(0, npos - len(pos))
    for k in kwnames:
        kw.setdefault(k, 0.0)
    return callee, tuple(pos), kw


class _ZeroPull(tuple):
    """(0.0, zeros..., {}) for calls whose output adjoint is zero: indexable at any position."""

    def __getitem__(self, i):
        if i == 0:
            return 0.0
        if i == 1:
            return _Zeros()
        return _ZeroDict()


class _Zeros:
    def __getitem__(self, i):
        return 0.0


class _ZeroDict(dict):
    def __missing__(self, k):
        return 0.0


_ZERO_PULL = _ZeroPull()


def _zero_pull(rec):
    """Zero adjoints of a call; the positional ones as a real tuple of zeros where the record
    tells how many (a call with ``*args`` reads that tuple whole)."""
    at = {"rule": 5, "derived": 9, "partial": 4}.get(rec[0]) if rec is not None else None
    if at is None:
        return _ZERO_PULL
    return 0.0, (0.0,) * rec[at], _ZeroDict()


def attr(obj, name):
    """Attribute read on a value of unknown type: arrays (and Python numbers) use the attribute
    rules, named tuples give their field's adjoint back in place, objects give their attribute's
    adjoint back as ``{name: adjoint}``, properties are differentiated."""
    if isinstance(obj, tuple) and hasattr(obj, "_fields") and name in obj._fields:
        value = getattr(obj, name)
        k = obj._fields.index(name)
        return value, ("nt_attr", k, len(obj), type(obj)) if differentiable(value) else None
    if (_is_array(obj)) or type(obj) in (float, complex):
        value = getattr(obj, name)
        from .rules.registry import lookup_attr
        rule = lookup_attr(name)
        if rule is not None and not rule.zero:
            return value, ("rule", rule, {"self": obj}, value, True, 0, [])
        return value, None
    prop = getattr(type(obj), name, None)
    if isinstance(prop, property) and prop.fget is not None and _is_python(prop.fget):
        return _call_derived(prop.fget, (), {}, self_=obj)
    value = getattr(obj, name)
    if getattr(value, "__self__", None) is obj and callable(value):
        return value, ("self",)
    if differentiable(value):
        return value, ("attr", name)
    return value, None


# -- opaque callees -------------------------------------------------------------------------------
def _ufunc_method(fn):
    from .rules.registry import ufunc_method_name
    return ufunc_method_name(fn)


def _opaque_message(fn, origin=None, text=None):
    full = _callee_ref(fn, text)
    if full is None:
        full = f"a {_object_name(fn)}"
    elif not isinstance(fn, (_types.FunctionType, _types.BuiltinFunctionType, type, np.ufunc)) \
            and not _ufunc_method(fn):
        full = f"{full} (of type {_type_name(fn)})"
    return (f"{full} has no Python source and no derivative rule, and it returned a value that "
            f"carries a derivative")


def _object_name(obj):
    """``ctypes._FuncPtr object 'cos'``: an object's type, and its own name where it has one."""
    name = getattr(obj, "__name__", None)
    return f"{_type_name(obj)} object" + (f" {name!r}" if isinstance(name, str) else "")


def _type_name(obj):
    t = type(obj)
    mod = t.__module__ or ""
    name = t.__name__ if "<locals>" in t.__qualname__ else t.__qualname__
    return name if mod in ("builtins", "") else f"{mod.split('.')[0]}.{name}"


def _callee_ref(fn, text=None):
    """How a user writes the callee ``fn``: its public path (``scipy.linalg.sqrtm``), else its
    spelling at the call site (``libm.cos``), else its module and name for a function or class;
    None for another object (a ctypes function, a ``np.vectorize`` object) seen without a call
    site."""
    ref = _ufunc_method(fn) or _public_ref(fn)
    if ref is not None:
        return ref
    if text:
        return text
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    if not isinstance(name, str) or not isinstance(
            fn, (_types.FunctionType, _types.BuiltinFunctionType, _types.MethodType, type)):
        return None
    mod = getattr(fn, "__module__", None) or ""
    return f"{mod.split('.')[0]}.{name}" if mod and mod != "builtins" else name


_ALTERNATIVES = {
    "numpy.frompyfunc": "np.frompyfunc's function is called element by element from inside "
                        "NumPy, where s2sad cannot follow it; call the function on the arrays "
                        "directly (NumPy operations broadcast), or loop over the elements in your "
                        "own code",
    "numpy.vectorize": "np.vectorize's function is called element by element from inside NumPy, "
                       "where s2sad cannot follow it; call the function on the arrays directly "
                       "(NumPy operations broadcast), or loop over the elements in your own code",
    "numpy.piecewise": "np.piecewise is not differentiated (its functions are called by NumPy); "
                       "write it with np.where or np.select, which are",
}


def _public_ref(fn):
    """A dotted name a user can write for ``fn``: the first public module on its module path
    that holds it (``scipy.linalg.sqrtm``, not ``scipy.linalg._matfuncs.sqrtm``); for a method
    of an object such a module holds, ``scipy.stats.norm.logpdf``.  None when there is none."""
    import sys
    owner = getattr(fn, "__self__", None)
    bound = owner is not None and not isinstance(owner, (_ModuleType, type))
    obj = owner if bound else fn
    parts = (getattr(fn, "__module__", None) or "").split(".")
    for k in range(1, len(parts) + 1):
        if parts[k - 1].startswith("_"):
            break
        mod = sys.modules.get(".".join(parts[:k]))
        if mod is None:
            continue
        name = getattr(obj, "__name__", None)
        if not (name and getattr(mod, name, None) is obj):
            name = next((a for a in dir(mod) if not a.startswith("_") and
                         getattr(mod, a, None) is obj), None)
        if name:
            return ".".join(parts[:k]) + f".{name}" + (f".{fn.__name__}" if bound else "")
    return None


def _rule_skeleton(fn, text=None):
    ref = _callee_ref(fn, text) or f"<the {_object_name(fn)} you call>"
    alt = _ALTERNATIVES.get(ref)
    if alt is not None:
        return alt
    return ("declare its derivative, e.g.\n\n"
            "    import s2sad\n"
            f"    s2sad.defrule({ref}, \"x, /\",\n"
            "                  vjp={\"x\": \"g * <derivative of the output w.r.t. x>\"})\n\n"
            "  (g is the output's adjoint, ans the output), or mark it non-differentiable with "
            f"s2sad.defzero({ref})")


def check_opaque(value, site):
    """Raise if an opaque callee (no source, no rule), called with values that carry a
    derivative, produced a differentiable value or an iterator (whose values s2sad cannot see:
    ``itertools.chain(xs, ys)``...)."""
    if hasattr(value, "__next__") and hasattr(value, "__iter__") and not isinstance(value, (str, bytes)):
        from .errors import OpaqueCalleeError
        fn = getattr(site.call.fn, "obj", None)
        qual = getattr(fn, "__qualname__", None) or repr(fn)
        name = _ufunc_method(fn) or f"{getattr(fn, '__module__', None) or ''}.{qual}".lstrip(".")
        raise OpaqueCalleeError(
            f"{name} returned an iterator over values that carry a derivative; s2sad cannot follow "
            f"the values an iterator without Python source yields", origin=site.origin,
            fix="build the values with a loop or a comprehension instead (map, filter, zip, "
                "enumerate, functools.reduce, itertools.accumulate and itertools.chain are followed)")
    if differentiable(value):
        from .errors import OpaqueCalleeError
        call = site.call
        fn = getattr(call.fn, "obj", None)
        text = getattr(call.fn, "text", None)
        desc = _opaque_message(fn, text=text) if fn is not None else \
            f"`{site.origin.text}` calls something s2sad has no rule for, and it returned a value " \
            f"that carries a derivative"
        raise OpaqueCalleeError(desc, origin=site.origin, fix=_rule_skeleton(fn, text)
                                if fn is not None else "declare a rule with s2sad.defrule")


# -- container read adjoints ----------------------------------------------------------------------
def dict_get_adjoint(g, d, key):
    return {key: g} if key in d else 0.0


def dict_default_adjoint(g, d, key):
    return 0.0 if key in d else g


def values_adjoint(g, d):
    if is_zero(g):
        return 0.0
    return {k: _z(v) for k, v in zip(d.keys(), g)}


def items_adjoint(g, d):
    if is_zero(g):
        return 0.0
    out = {}
    for k, pair in zip(d.keys(), g):
        out[k] = 0.0 if is_zero(pair) else _z(pair[1])
    return out


def real_part(g):
    return g.real if isinstance(g, complex) else g


def imag_part(g):
    return g.imag if isinstance(g, complex) else 0.0


def undel(g, obj, idx):
    """Adjoint of ``del xs[i]`` / ``del d[k]`` for the container before the deletion."""
    if is_zero(g) or isinstance(g, dict):
        return g
    out = list(g)
    n = len(obj)
    pos = idx if idx >= 0 else n + 1 + idx
    out.insert(pos, 0.0)
    return out


def partial_compound(origin):
    from .errors import S2SADError
    raise S2SADError("an exception was caught after it interrupted a loop or branch that had "
                     "already done differentiable work; s2sad cannot replay half of it",
                     origin=origin, fix="move the try/except inside the loop, around the statement "
                                        "that raises")


def partial_args_adjoint(g, n):
    if is_zero(g) or not isinstance(g, dict):
        return (0.0,) * n
    return tuple(_z(v) for v in g.get("args", (0.0,) * n))


def cell_adjoint(g, name):
    """The adjoint of one captured variable, from a closure's adjoint (a dict by name)."""
    if isinstance(g, dict):
        return _z(g.get(name))
    return 0.0


def partial_keywords_adjoint(g):
    if is_zero(g) or not isinstance(g, dict):
        return {}
    return {k: _z(v) for k, v in g.get("keywords", {}).items()}


def zip_adjoint(g, iterables):
    """Adjoint of ``zip(a, b, ...)`` (consumed as a list of tuples) for each iterable."""
    n = len(iterables)
    if is_zero(g):
        return (0.0,) * n
    rows = list(g)
    iterables = [it.seen if isinstance(it, Iter) else it for it in iterables]
    cols = [[0.0] * (len(it) if hasattr(it, "__len__") else len(rows)) for it in iterables]
    for k, row in enumerate(rows):
        parts_ = parts(row, n)
        for j in range(n):
            if k < len(cols[j]):
                cols[j][k] = parts_[j]
    return tuple(seq_adjoint(c, it) if hasattr(it, "__len__") else c for c, it in zip(cols, iterables))


def enumerate_adjoint(g, iterable):
    if is_zero(g):
        return 0.0
    g = [parts(row, 2)[1] for row in g]
    if hasattr(iterable, "__len__") and len(g) < len(iterable):
        g = g + [0.0] * (len(iterable) - len(g))        # values never taken
    return seq_adjoint(g, iterable)


def reversed_adjoint(g, seq):
    if is_zero(g):
        return 0.0
    g = list(g)
    g = g + [0.0] * (len(seq) - len(g)) if hasattr(seq, "__len__") else g
    return seq_adjoint(g[::-1], seq)


def seq(x):
    """What a ``for`` loop walks by index: lists, tuples and arrays as they are; a dict's keys,
    dict views, sets, generators and iterators as a list."""
    t = type(x)
    if t is list or t is tuple or t is range or (hasattr(x, "shape") and hasattr(x, "dtype")):
        return x
    if t is dict:
        return list(x)
    if hasattr(x, "__dict__") and not isinstance(x, type) and _object_differentiable(x):
        import inspect
        from .errors import UnsupportedSyntaxError
        it = getattr(t, "__iter__", None)
        gen = " (a generator function, `yield`)" if it is not None and \
            inspect.isgeneratorfunction(it) else ""
        raise UnsupportedSyntaxError(
            f"a loop walks over an object of class {t.__name__} that holds values carrying "
            f"derivatives; s2sad cannot follow its __iter__{gen}",
            fix="loop over the object's list or array attribute instead")
    return list(x)


def seq_adjoint_of(g, x):
    """Adjoint of :func:`seq`: the same list adjoint (a dict's keys carry none)."""
    if isinstance(x, dict):
        return 0.0
    if is_zero(g):
        return 0.0
    if isinstance(x, tuple) and isinstance(g, list):
        return tuple(g)
    return g


def init_into(cls, obj, *args, **kwargs):
    """``super().__init__(*args)`` inside ``cls.__init__``; returns the object it filled in."""
    super(cls, obj).__init__(*args, **kwargs)
    return obj


# -- dtype-changing calls ----------------------------------------------------------------------
def dtype_guard(dtype, adj):
    """An adjoint through a cast to ``dtype``: none when the result is an integer or bool."""
    if dtype is None:
        return adj
    try:
        kind = np.dtype(dtype).kind
    except TypeError:
        return adj
    if kind in "fcO":                           # (object arrays carry derivatives)
        return adj
    return tuple(0.0 for _ in adj) if type(adj) is tuple else 0.0   # (*args rules: one each)


def dtype_of(dtype, a):
    return dtype if dtype is not None else getattr(a, "dtype", None)


def times_initial(g, initial):
    return g if initial is None else g * initial


def extremum_initial_adjoint(g, ans, a, initial, axis, keepdims):
    """Adjoint of ``initial=`` in max/min: g where the extremum is ``initial`` and no element of
    the data reaches it (where elements tie with it, they take the adjoint)."""
    xp = array_module(a)
    axes = tuple(range(a.ndim)) if axis is None else \
        tuple(k % a.ndim for k in ((axis,) if isinstance(axis, int) else axis))
    ans_k = ans if keepdims else xp.expand_dims(ans, axes) if axes else ans
    hit = (xp.asarray(a) == ans_k).any(axis=axes, keepdims=keepdims) if axes else \
        xp.asarray(a) == ans_k
    return unbroadcast(xp.where((ans == initial) & ~hit, g, 0.0), initial)


def not_receiver(value, obj, origin):
    """Refuse a method that changes its object and returns that same object (``return self``)
    when its result gets a name (``c.add(a).add(b)``, ``d = c.add(a)``): changes made through the
    second name would not reach the first one's derivative."""
    if value is obj and not _is_array(obj) and type(obj) not in (list, dict, tuple) and \
            differentiable(obj):
        from .errors import UnsupportedSyntaxError
        raise UnsupportedSyntaxError(
            "this method returns its own object (`return self`), and the object is changed "
            "through that second name (chaining, or assigning the result); s2sad does not follow "
            "changes through such a second name",
            origin=origin,
            fix="call such methods one per statement (`c.add(a)` then `c.add(b)`) and keep using "
                "the object's own name")


def not_alias(value, args, origin):
    """Refuse a call that returned one of its own arguments when the result is changed in place
    later: the change would reach the argument under a name s2sad does not connect to it."""
    if type(value) in (int, float, complex, bool, str, tuple) or value is None:
        return
    for a in args:
        if a is value:
            from .errors import UnsupportedSyntaxError
            raise UnsupportedSyntaxError(
                "this call returns one of its arguments (the same object), and the result is "
                "changed in place later; s2sad does not follow changes through such a second name",
                origin=origin,
                fix="change the object under its own name, or have the function return a copy "
                    "(`return x.copy()`)")


def inplace_guard(value, op, name, other, fix, origin, arrays_only=False, *seen):
    """Before ``name op= ...`` (see classify._check_augmented_shared): refuse when ``value`` is an
    object that ``op=`` changes in place (an array, a list), because ``other``, read afterwards,
    may hold it or share its memory and s2sad makes a new value instead.  ``arrays_only``: other
    only shares elements with ``value``, which a list changed in place keeps.  ``seen``: the
    values of the names that may share it, when all are known here; then only a real sharing
    (:func:`shares`) refuses."""
    dunder = "__i" + getattr(op, "__name__", "").strip("_") + "__"
    if hasattr(type(value), dunder) and not (arrays_only and isinstance(value, (list, dict, set))) \
            and (not seen or shares(value, seen)):
        from .errors import UnsupportedSyntaxError
        raise UnsupportedSyntaxError(
            f"`{name} {_AUG_TEXT.get(op, 'op')}= ...` changes `{name}` (a "
            f"{type(value).__module__}.{type(value).__qualname__}) in place, and it may be held by "
            f"{other} or share its memory (a row, an element, a function's result), which is read "
            f"afterwards; s2sad makes a new value for `{name}` and does not follow the change",
            origin=origin, fix=fix)


def shares(value, others, _depth=4):
    """Whether one of ``others`` is ``value``, holds it (as an item of a list, tuple, dict or set,
    an attribute, what a closure or bound method captured), or shares memory with it (an array
    and its views).  Values s2sad cannot look into (iterators, generators) count as sharing."""
    seen = set()
    todo = [(o, 0) for o in others]
    arr = value if isinstance(value, np.ndarray) or (
        _is_array(value) and not isinstance(value, np.generic)) else None
    while todo:
        o, d = todo.pop()
        if o is value:
            return True
        if o is None or isinstance(o, (*_SCALARS, str, bytes, np.generic, type, _ModuleType)) or \
                id(o) in seen:
            continue
        seen.add(id(o))
        if _is_array(o):
            if arr is not None and type(o) is type(arr) and \
                    array_module(o).may_share_memory(o, arr):
                return True
            if getattr(o, "dtype", None) is not None and o.dtype.kind == "O" and d < _depth:
                todo.extend((v, d + 1) for v in o.ravel().tolist())
            continue
        if d >= _depth:
            return True                 # (deeper than we look: assume it does)
        if isinstance(o, (list, tuple, set, frozenset)) or type(o) is LazyList:
            todo.extend((v, d + 1) for v in o)
        elif isinstance(o, dict):
            todo.extend((v, d + 1) for v in o.values())
            todo.extend((k, d + 1) for k in o)
        elif isinstance(o, (_types.MethodType,)):
            todo.append((o.__self__, d + 1))
        elif isinstance(o, _FunctionType):
            todo.extend((c.cell_contents, d + 1) for c in (o.__closure__ or ())
                        if _cell_full(c))
            todo.extend((v, d + 1) for v in (o.__defaults__ or ()))
        elif isinstance(o, _partial):
            todo.extend((v, d + 1) for v in (o.func, *o.args, *o.keywords.values()))
        elif hasattr(o, "__next__") or isinstance(o, (_types.GeneratorType, map, filter, zip)):
            return True                 # (an iterator: what it reads is not ours to see)
        elif hasattr(o, "__dict__") or hasattr(type(o), "__slots__"):
            vals = list(getattr(o, "__dict__", {}).values()) + \
                [getattr(o, n) for n in getattr(type(o), "__slots__", ()) if hasattr(o, n)]
            todo.extend((v, d + 1) for v in vals)
    return False


def _cell_full(c):
    try:
        c.cell_contents
        return True
    except ValueError:
        return False


def share_guard(value, name, others, fix, origin, *seen):
    """Before a write into ``value`` (the object of ``name``: an item or slice write, an in-place
    method; see classify._check_writes_shared): refuse when one of ``seen`` (the values of the
    names ``others``, read afterwards) holds it or shares its memory; s2sad's reverse sweep would
    give their adjoints to the object as it was before the write."""
    import sys
    frame_locals = None
    for k, other in enumerate(others):
        if k < len(seen):
            v = seen[k]
        else:                       # (a name not surely bound here: look it up, if it is)
            if frame_locals is None:
                frame_locals = sys._getframe(1).f_locals
            if other not in frame_locals:
                continue
            v = frame_locals[other]
        if shares(value, [v]):
            from .errors import UnsupportedSyntaxError
            what = f"`{other}`" if not other.startswith("_") else "a value read afterwards"
            obj = f"`{name}`" if not name.startswith("_") else "an object taken from a container"
            raise UnsupportedSyntaxError(
                f"this line writes into {obj} (a {type(value).__module__}."
                f"{type(value).__qualname__}) while {what} shares its memory or holds it (a view, "
                f"e.g. a slice, `.T`, `.reshape`, `np.asarray`, a row; a list or object that holds "
                f"it) and is read afterwards; s2sad does not follow the write into {what}",
                origin=origin, fix=fix)


_AUG_TEXT = {_operator.add: "+", _operator.sub: "-", _operator.mul: "*", _operator.truediv: "/",
             _operator.floordiv: "//", _operator.pow: "**", _operator.matmul: "@",
             _operator.mod: "%", _operator.and_: "&", _operator.or_: "|", _operator.xor: "^",
             _operator.lshift: "<<", _operator.rshift: ">>"}


def no_update(rec, name, origin):
    """Refuse a method call that changed ``name``, an object the caller passed in."""
    if rec is not None and rec[0] == "derived" and rec[-1]:
        raise ArgumentWriteError(
            f"this line calls a method that changes `{name}`, an object the caller passed in, "
            f"with values that carry a derivative; s2sad does not follow such changes back to the "
            f"caller", origin=origin, param=name,
            fix=f"make the object inside the function, or return the new values instead of "
                f"keeping them on `{name}`")


# -- iterators: materialised once, where Python consumes them -------------------------------------
# Inside a derivative, zip/enumerate/reversed/iter/map/filter make an :class:`Iter`: it pulls from
# the real iterator lazily, exactly as Python would (an exhausted one yields nothing), and keeps the
# values it yielded.  Each call that consumes an iterator gets a :class:`Cursor` (``_rt.here(it)``),
# which records which of its parent's values that call took.  The adjoint of an iterator is the
# list of its yielded values' adjoints; a cursor's adjoint is scattered back to those positions.
class Iter:
    """A lazy iterator that remembers what it yielded (``seen``).  ``loop``: the origin of a
    loop that took all its values at once and may have stopped early (see :func:`loop_seq`)."""
    __slots__ = ("_src", "seen", "loop")

    def __init__(self, src):
        self._src = iter(src)
        self.seen = []
        self.loop = None

    def __iter__(self):
        return self

    def __next__(self):
        v = next(self._src)
        self.seen.append(v)
        return v

    def __repr__(self):
        return f"<s2sad iterator, {len(self.seen)} value(s) taken>"


class Cursor(Iter):
    """The values one consuming call took from an :class:`Iter` (or from another cursor):
    ``idx`` are their positions in the parent's ``seen``."""
    __slots__ = ("parent", "idx")

    def __init__(self, parent):
        self.parent = parent
        self.seen = []
        self.idx = []
        self.loop = None

    def __next__(self):
        p = self.parent
        i = len(p.seen)
        v = next(p)
        self.idx.append(i)
        self.seen.append(v)
        return v


def here(x):
    """What a consuming call gets for ``x``: a :class:`Cursor` on an iterator (so the call's share
    of the values is known later), ``x`` itself for lists, tuples, arrays, dicts, views."""
    if isinstance(x, Iter):
        if x.loop is not None:
            _refuse_after_loop()
        return Cursor(x)
    if type(x) in (list, tuple, dict, range) or _is_array(x) or not hasattr(x, "__next__"):
        return x
    return Cursor(Iter(x))          # an iterator from outside (a generator, a raw zip object)


def listed(x):
    """The values ``x`` yielded (an iterator, after the fact) or yields (anything else)."""
    if isinstance(x, Iter):
        return x.seen
    return list(x)


def here_adjoint(g, x, ans):
    """Adjoint of :func:`here`: a cursor's adjoints go back to its positions in ``x``."""
    if is_zero(g) or not isinstance(ans, Cursor):
        return g                    # (x itself: a list, array... possibly a saved copy of it)
    if not isinstance(x, Iter):
        return 0.0                  # an iterator from outside: nothing to route back to
    out = [0.0] * len(x.seen)
    for i, gi in zip(ans.idx, g):
        if not is_zero(gi):
            out[i] = gi if is_zero(out[i]) else out[i] + gi
    return out


class LazyList:
    """The tangents of an iterator's values, known only once the iterator has been consumed: a
    list computed when it is read (forward mode reads it after the consuming call)."""
    __slots__ = ("_make",)

    def __init__(self, make):
        self._make = make

    def resolve(self):
        return self._make()

    def __iter__(self):
        return iter(self._make())

    def __len__(self):
        return len(self._make())

    def __getitem__(self, k):
        return self._make()[k]


def resolve(t):
    return t.resolve() if type(t) is LazyList else t


def here_tangent(t, x, ans):
    """Tangent of :func:`here`: the parent's tangents at the positions the cursor took."""
    if is_zero(t) or not isinstance(ans, Cursor):
        return t
    if not isinstance(x, Iter):
        return 0.0
    return LazyList(lambda: [_elem(resolve(t), i) for i in ans.idx])


def _elem(t, i):
    if is_zero(t):
        return 0.0
    return t[i] if i < len(t) else 0.0


def izip(*iterables, strict=False):
    return Iter(zip(*iterables, strict=strict))


def ienumerate(iterable, start=0):
    return Iter(enumerate(iterable, start))


def ireversed(seq):
    return Iter(reversed(seq))


def iiter(obj):
    return obj if isinstance(obj, Iter) else Iter(obj)


def iter_adjoint(g, obj, ans):
    """Adjoint of ``iter(obj)``: the values' adjoints, in obj's structure."""
    if isinstance(obj, Iter) or is_zero(g):
        return g                    # iter() of an iterator is the iterator itself
    return seq_adjoint(list(g) + [0.0] * (len(obj) - len(g)) if hasattr(obj, "__len__") else g, obj)


_NO_DEFAULT = object()


def next_adjoint(g, it):
    """Adjoint of ``next(it)`` for the iterator: its one value (if it gave one)."""
    if is_zero(g):
        return 0.0
    return [g] if getattr(it, "idx", None) else []


def next_default_adjoint(g, it):
    return 0.0 if getattr(it, "idx", None) else g


def next_tangent(t, it, ans):
    return resolve(t)[0] if getattr(it, "idx", None) and not is_zero(t) else 0.0


def next_default_tangent(t, it):
    return 0.0 if getattr(it, "idx", None) else t


def zip_seq(*xs):
    """The sequences a ``for ... in zip(*xs)`` loop walks by index: lists, tuples and arrays as
    they are; for an iterator, exactly the values Python's zip takes from it."""
    if not any(isinstance(x, Iter) for x in xs):
        return tuple(seq(x) for x in xs)
    rows = list(zip(*xs))
    return tuple(x if type(x) in (list, tuple, range) or _is_array(x) else
                 [r[j] for r in rows] for j, x in enumerate(xs))


def zip_seq_adjoint(g, xs, ans):
    if is_zero(g):
        return (0.0,) * len(xs)
    return tuple(gj if isinstance(x, Iter) else seq_adjoint_of(gj, x)
                 for gj, x in zip(parts(g, len(xs)), xs))


def transform_parts(fn, args):
    """For a function s2sad's API returned (``grad(f)``, ``value_and_grad(f)``), the Python
    functions whose results it returns: [the generated gradient function] or [f, that function];
    None for anything else."""
    t = getattr(fn, "__s2sad_transform__", None) if type(fn) is _FunctionType else None
    if t is None:
        return None
    kind, f, wrt = t
    from .api import _concrete, grad
    if kind == "grad":
        return [_concrete(fn, args)]
    if kind == "value_and_grad":
        return [_concrete(f, args), _concrete(grad(f, wrt), args)]
    return None


def jvp_function(f, primals, tangents):
    """(generated forward function, its arguments, layout) for ``s2sad.jvp(f, primals,
    tangents)``: the arguments are f's captured data, the primals, and the tangents that are
    given (layout: number and names of the captured values, number of primals, tangent mask)."""
    from .api import _concrete
    from .cache import forward_derivative
    primals, tangents = tuple(primals), tuple(tangents)
    fn = _concrete(f, primals)
    if not _is_python(fn):
        from .errors import UnsupportedSyntaxError
        raise UnsupportedSyntaxError(
            "s2sad.jvp inside a differentiated function takes a Python function",
            fix="pass a function defined in Python (a def or a lambda)")
    cells = _data_cells(fn)
    lead = ()
    if cells:
        from .frontend.source import data_cell_values
        lead = tuple(data_cell_values(fn, cells))
    args = lead + primals
    targs = (None,) * len(lead) + tangents
    mask = tuple(t is not None and not is_zero(t) for t in targs)
    d = forward_derivative(fn, mask, tuple(kind_of(a) for a in args))
    full = args + tuple(t for t, m in zip(targs, mask) if m)
    return d.jvp, full, (len(lead), list(cells), len(primals), mask)


# -- + and * on lists and tuples (concatenation and repetition) -----------------------------------
def seq_add(a, b):
    return a + b


def seq_mul(a, b):
    return a * b


def _is_seq(x):
    return isinstance(x, (list, tuple))


def add_part(g, a, b, which):
    """Adjoint of ``a + b`` for a (which=0) or b (1): a slice of g when it concatenated
    sequences, else summed down to the operand's shape (broadcasting)."""
    x = a if which == 0 else b
    if _is_seq(a) and _is_seq(b):
        if is_zero(g):
            return 0.0
        g = list(g)
        return type(x)(_z(v) for v in (g[:len(a)] if which == 0 else g[len(a):]))
    return unbroadcast(g, x)


def add_part_tangent(t, a, b, which):
    """Tangent of ``a + b`` from a (which=0) or b (1): zeros for the other part of a
    concatenation."""
    if _is_seq(a) and _is_seq(b):
        from .codegen.forward import materialize, zeros_like
        x, other = (a, b) if which == 0 else (b, a)
        mine, pad = list(materialize(t, x)), list(zeros_like(other))
        return type(a)(mine + pad if which == 0 else pad + mine)
    return t


def mul_part(g, a, b, which):
    """Adjoint of ``a * b`` for a (which=0) or b (1); for a repeated sequence (``[x] * 3``) the
    repeats' adjoints add up."""
    x, other = (a, b) if which == 0 else (b, a)
    if _is_seq(x) and isinstance(other, int):
        if is_zero(g):
            return 0.0
        g, n = list(g), len(x)
        out = [0.0] * n
        for k, v in enumerate(g):
            out[k % n] = add(out[k % n], _z(v))
        return type(x)(out)
    return unbroadcast(g * cj(other), x)


def mul_part_tangent(t, a, b, which):
    x, other = (a, b) if which == 0 else (b, a)
    if _is_seq(x) and isinstance(other, int):
        from .codegen.forward import materialize
        return type(x)(list(materialize(t, x)) * other)
    return t * other


def _mark_loop(x):
    """A loop that may stop early (break/return), or whose body reads the iterable it walks,
    walks the values of iterator ``x``: s2sad takes them all first, so a use of the iterator in
    the body or after the loop could not see what Python would."""
    while isinstance(x, Iter):
        x.loop = True
        x = getattr(x, "parent", None)


def _refuse_after_loop():
    from .errors import UnsupportedSyntaxError
    raise UnsupportedSyntaxError(
        "an iterator is used again inside or after a `for` loop that walked it and that may have "
        "stopped early (break or return) or uses it in its body; s2sad takes a loop's values "
        "before it runs, so it cannot know which values are left", fix="take the values into a "
            "list first (`items = list(it)`), loop over it, and use `items[k:]` for the rest")


def loop_seq(x):
    """:func:`seq` for a loop with ``break``/``return``, or whose body reads the iterable it
    walks (see :func:`_mark_loop`)."""
    _mark_loop(x)
    return seq(x)


def loop_zip_seq(*xs):
    for x in xs:
        _mark_loop(x)
    return zip_seq(*xs)
