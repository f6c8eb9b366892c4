"""The few helpers that generated code calls: accumulation, zeros, un-broadcasting, indexing.

Generated sweeps use ``0.0`` as the zero adjoint of a value whose adjoint has not been produced yet
(Python's float zero adds to any float or complex scalar or array, NumPy or CuPy, without changing
its dtype); containers use tuples/lists/dicts of adjoints with ``None`` for leaves that carry none.
"""
import numbers

import numpy as np

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
    shape = getattr(x, "shape", None)
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


def add(a, b):
    """Adjoint accumulation that understands zeros (None / 0.0) and containers."""
    if a is None or (type(a) is float and a == 0.0 and not _is_leaf_value(b)):
        return b
    if b is None:
        return a
    ta = type(a)
    if ta is tuple or ta is list:
        if type(b) is float and b == 0.0:
            return a
        return ta(add(x, y) for x, y in zip(a, b))
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
    dt = getattr(x, "dtype", None)
    if dt is not None and dt.kind in "fc":
        return array_module(x).zeros_like(x)
    return None


def materialize(g, x):
    """Turn a symbolic zero adjoint (0.0 / None) into real zeros shaped like ``x``."""
    if is_zero(g):
        return zeros_like(x)
    if type(g) in (tuple, list) and type(x) in (tuple, list):
        return type(x)(materialize(a, b) for a, b in zip(g, x))
    if type(g) is dict and type(x) is dict:
        return {k: materialize(g.get(k), v) for k, v in x.items()}
    if hasattr(x, "shape") and getattr(g, "shape", None) != x.shape:
        return unbroadcast(g, x)
    return g


# -- indexing ---------------------------------------------------------------------------------
def _basic_index(idx):
    """True when ``x[idx]`` cannot select an element twice (no integer/boolean arrays)."""
    if isinstance(idx, tuple):
        return all(_basic_index(i) for i in idx)
    return idx is None or idx is Ellipsis or isinstance(idx, (slice, numbers.Integral))


def getitem_adjoint(g, x, idx):
    """Adjoint of ``x[idx]``: zeros shaped like x with ``g`` placed (added for repeats) at idx."""
    if isinstance(x, (tuple, list)):
        out = [None] * len(x)
        if isinstance(idx, slice):
            for k, v in zip(range(*idx.indices(len(x))), g):
                out[k] = v
        else:
            out[idx] = g
        return type(x)(out) if isinstance(x, tuple) else out
    if isinstance(x, dict):
        return {idx: g}
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
    if acc.dtype.kind != "c":
        g = real_like(g, x)
    if _basic_index(idx):
        acc[idx] += g
    else:
        array_module(acc).add.at(acc, idx, g)
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
    """Adjoint of ``x[idx] = v`` for ``v``: ``g[idx]`` summed down to v's shape, as a copy."""
    if is_zero(g):
        return 0.0
    if isinstance(g, (list, dict)):
        try:
            return g[idx]
        except (KeyError, IndexError):
            return None
    return unbroadcast(g[idx].copy() if hasattr(g[idx], "copy") else g[idx], v)


def snap(v):
    """A copy of an array that is later written in place (so the reverse sweep sees the old value)."""
    c = getattr(v, "copy", None)
    if c is not None and hasattr(v, "shape"):
        return c()
    if isinstance(v, list):
        return list(v)
    if isinstance(v, dict):
        return dict(v)
    return v
