"""``_adj``: the namespace of the adjoint and tangent helpers that rule templates call.

Templates reach helpers as ``_adj.<name>`` (``_adj.sum(g, a, axis, keepdims)``).  This module holds
the small utilities every table shares and the mechanism; the helpers of each derivative table live
beside its rows, in the topic modules of :mod:`s2sad.rules.numpy` and :mod:`s2sad.rules.scipy`,
which end with ``export(globals())`` to publish them here.  The namespace is filled as the tables
load (``_adj.name`` loads them on first use).

Every helper works on NumPy and CuPy arrays alike: it allocates through :func:`xp` (the array
module of its argument) and uses array methods.  Conventions (DESIGN.md): an adjoint has its input's
shape and dtype; the gradient of a real loss w.r.t. a complex ``z`` is dL/dRe z + i dL/dIm z, so a
holomorphic ``f`` has adjoint ``g * conj(f'(z))``.
"""
import functools
import numbers
import sys

import numpy as np

from .. import runtime as _rt
from .registry import defrule

_NoValue = getattr(np, "_NoValue", None)


# -- small utilities -------------------------------------------------------------------------------
_NDARRAY = np.ndarray
_np_outer = np.outer
_ARRAYS = _rt.ARRAY_MODULES     # exact array type -> its module (NumPy's; CuPy's once seen)


def xp(*xs):
    """The array module (NumPy or CuPy) of the first array among ``xs``."""
    for x in xs:
        m = _ARRAYS.get(type(x))
        if m is not None:
            return m
        if hasattr(x, "shape") and hasattr(x, "dtype") and not isinstance(x, np.generic):
            return _rt.array_module(x)
    return np


def asarray(x, like=None):
    """``x`` as an array of the array module of ``like`` (arrays are returned as they are; a
    NumPy scalar joins ``like``'s module when that is CuPy)."""
    if type(x) in _ARRAYS:
        return x
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
    tx = type(x)
    if tx is type(g) and tx in _ARRAYS and g.shape == x.shape and g.dtype == x.dtype and \
            x.dtype.kind in "fc":
        return g                        # (the common case: an array adjoint as it is)
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


def broadcast(g, x):
    """``g`` broadcast to x's shape in x's dtype, as :func:`full_like`, but for a real or complex
    NumPy array ``x`` of ``_VIEW_MIN`` elements or more a read-only view (stride 0 along the
    broadcast axes), no copy.

    The adjoint of a reduction is such a broadcast, and filling an array of x's size with it costs
    about half the primal (and the next rule reads that array again).  An adjoint may be a read-only
    view: contributions add into new arrays (``_b_x = _b_x + g``), a buffer the reverse sweep writes
    into in place is its own (``_rt.own`` copies), a write into the view raises (it is never
    silent), and the user's gradients are copied when not writable (``runtime.materialize``).

    A real CuPy array of ``_DEVICE_VIEW_MIN`` elements or more gets a broadcast view too (CuPy has
    no read-only flag: the derivative writes only into buffers it made, ``_rt.own``, and the user's
    gradients are copied when they have a stride 0, ``runtime.materialize``).  Other arrays get
    :func:`full_like`'s fresh array."""
    if type(x) is not _NDARRAY:
        if device_view(x):
            return _device_broadcast(g, x)
        return full_like(g, x)
    if x.dtype.kind not in "fc":
        return full_like(g, x)
    dt = x.dtype
    tg = type(g)
    if tg is _NDARRAY and g.size == 1 and g.ndim <= x.ndim and g.dtype.kind in "fc":
        g = g.reshape(())[()]                   # (a NumPy scalar: a copy of the one value)
        tg = type(g)
    if tg is float or tg is complex or isinstance(g, np.number):
        # one value: the buffer is a NumPy scalar of x's dtype (immutable, so the view is
        # read-only and aliases nothing), every stride 0
        if dt.kind != "c" and (tg is complex or isinstance(g, np.complexfloating)):
            g = g.real
        if x.size < _VIEW_MIN:
            out = np.empty(x.shape, dt)
            out.fill(g)
            return out
        return _NDARRAY(x.shape, dt, dt.type(g), 0, (0,) * x.ndim)
    if tg is not _NDARRAY:
        return full_like(g, x)
    if g.dtype.kind == "c" and dt.kind != "c":
        g = g.real
    if g.shape == x.shape:
        return g if g.dtype == dt else g.astype(dt)
    if x.size < _VIEW_MIN:
        out = np.empty(x.shape, dt)
        out[...] = g
        return out
    return np.broadcast_to(g if g.dtype == dt else g.astype(dt), x.shape)


# Below this many elements a fresh array (np.empty and a fill) costs less than a view does: its
# making, and the copy a gradient the user gets then needs (api._finish_grads), ~1 us each.
_VIEW_MIN = 4096
# The same for CuPy arrays (a fill is one kernel launch, the view's one-element array another)
_DEVICE_VIEW_MIN = 1 << 16


def device_view(x):
    """A large real CuPy array (no NumPy, no shape-only stand-in): :func:`broadcast` gives a view."""
    t = type(x)
    return t is not _NDARRAY and t.__module__.startswith("cupy") and \
        getattr(x, "size", 0) >= _DEVICE_VIEW_MIN and x.dtype.kind == "f"


def _device_broadcast(g, x):
    m = xp(x)
    if type(g) is float or isinstance(g, np.floating):
        ge = m.full((1,) * x.ndim, g, dtype=x.dtype)
    else:
        ge = m.asarray(g)
        if ge.dtype != x.dtype:
            ge = ge.astype(x.dtype) if ge.dtype.kind != "c" else ge.real.astype(x.dtype)
    return m.broadcast_to(ge, x.shape)


def zeros_for(x, dtype=None):
    dt = dtype or getattr(x, "dtype", np.dtype(float))
    return xp(x).zeros(shape(x), dtype=dt)


def tangent_as(t, ans):
    """A tangent in the floating dtype of the primal output ``ans`` (a float32 output gets a
    float32 tangent, a float64 one a float64 tangent), when both are of the same kind; anything
    else (Python numbers, a zero, other kinds) as it is.  A tuple of outputs: each of its own."""
    if type(t) in (tuple, list) and type(ans) in (tuple, list) and len(t) == len(ans):
        return type(t)(tangent_as(a, b) for a, b in zip(t, ans))
    dt, tdt = getattr(ans, "dtype", None), getattr(t, "dtype", None)
    if dt is None or tdt is None or dt == tdt or not hasattr(t, "astype") or \
            dt.kind not in "fc" or tdt.kind not in "fc" or (tdt.kind == "c" and dt.kind == "f"):
        return t
    return t.astype(dt)


def _count_as(n, x):
    """A count (an integer array) in the real floating dtype of ``x``, so that dividing a float32
    ``x`` by it keeps float32."""
    dt = getattr(x, "dtype", None)
    if dt is None or dt.kind not in "fc":
        return n
    return n.astype(x.real.dtype if dt.kind == "c" else dt)


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


def _mT(x):
    return x.swapaxes(-1, -2)


def _mH(x):
    return cj(x).swapaxes(-1, -2)


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


def tangent_list(t, arrays):
    """Tangents of the members of a list argument, zeros (in the member's shape) where None/0.0."""
    out = []
    for ti, a in zip(t, arrays):
        if is_zero(ti):
            dt = getattr(a, "dtype", None)
            ti = xp(a).zeros(shape(a), dtype=dt if dt is not None and dt.kind in "fc" else float)
        out.append(ti)
    return out


def tmap_zero(t):
    if isinstance(t, (list, tuple)):
        return [tmap_zero(x) for x in t]
    return 0.0 if t is None else t


# -- writing the tables ----------------------------------------------------------------------------
A = {"_adj": sys.modules[__name__]}    # ns= of the rows whose templates call helpers

UNARY = "x, /, out=None, *, where=True, casting='same_kind', order='K', dtype=None, subok=True"
BINARY = ("x1, x2, /, out=None, *, where=True, casting='same_kind', order='K', dtype=None, "
          "subok=True")
UFUNC = {"out": None, "where": True}


def _each(fns, *args, **kw):
    rules = []
    for fn in fns:
        if fn is not None:
            rules.append(defrule(fn, *args, **kw))
    return rules


def _np(*names, mod=np):
    """The callees of ``names`` that exist in this NumPy (aliases added in 2.0 may be missing)."""
    out = []
    for n in names:
        obj = mod
        for part in n.split("."):
            obj = getattr(obj, part, None)
        if obj is not None and obj not in out:
            out.append(obj)
    return out


# -- a zero adjoint in, a zero adjoint out ---------------------------------------------------------
# Adjoints are linear in the incoming adjoint ``g`` and tangents in ``t``.  Generated code uses 0.0
# as the zero of every kind (where branches join, an adjoint that one side did not produce is 0.0),
# and such a zero can reach a helper that reshapes or indexes ``g``.  Every public helper whose
# first parameter is ``g`` or ``t`` therefore answers 0.0 for it without running.
_NOT_LINEAR_ENTRY = {"is_zero", "like", "expand", "full_like", "broadcast", "tmap_zero",
                     "tangent_list"}


def _zero_passes_through(fn):
    helper = _exact_guard(fn)
    if helper is None:
        def helper(g, *args, **kwargs):
            if type(g) is float and g == 0.0 or g is None:
                return 0.0
            return fn(g, *args, **kwargs)
    return functools.wraps(fn)(helper)


def _exact_guard(fn):
    """The zero guard of ``fn`` with ``fn``'s own parameters (names and defaults), so that a call
    binds its arguments once, not through ``*args, **kwargs`` and again (a helper runs per
    operation of every reverse sweep); None for a signature with ``*args``, ``**kwargs`` or
    positional-only parameters (then the generic guard)."""
    import inspect
    code = fn.__code__
    if code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS) or code.co_posonlyargcount:
        return None
    names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    if any(n.startswith("_s2sad_") for n in names) or not names:
        return None
    pos = names[:code.co_argcount]
    kwonly = names[code.co_argcount:]
    defaults = fn.__defaults__ or ()
    kwdefaults = fn.__kwdefaults__ or {}
    first = len(pos) - len(defaults)
    params = [n if i < first else f"{n}=_s2sad_d[{i - first}]" for i, n in enumerate(pos)]
    if kwonly:
        params.append("*")
        params += [f"{n}=_s2sad_kw[{n!r}]" if n in kwdefaults else n for n in kwonly]
    args = list(pos) + [f"{n}={n}" for n in kwonly]
    src = (f"def {fn.__name__}({', '.join(params)}):\n"
           f"    if _s2sad_type({pos[0] if pos else kwonly[0]}) is _s2sad_float and "
           f"{pos[0] if pos else kwonly[0]} == 0.0 or {pos[0] if pos else kwonly[0]} is None:\n"
           f"        return 0.0\n"
           f"    return _s2sad_fn({', '.join(args)})\n")
    ns = {"_s2sad_fn": fn, "_s2sad_d": defaults, "_s2sad_kw": kwdefaults, "_s2sad_type": type,
          "_s2sad_float": float}
    exec(compile(src, f"<s2sad zero guard of {fn.__qualname__}>", "exec"), ns)
    return ns[fn.__name__]


def _first_parameter(fn):
    """The name of ``fn``'s first parameter, or None (``inspect.signature``'s answer, read from
    the code object: this runs for every helper a table publishes)."""
    import inspect
    code = inspect.unwrap(fn).__code__
    named = code.co_argcount + code.co_kwonlyargcount      # then *args, then **kwargs
    if code.co_argcount:
        return code.co_varnames[0]
    if code.co_flags & inspect.CO_VARARGS:
        return code.co_varnames[named]
    if code.co_kwonlyargcount:
        return code.co_varnames[0]
    if code.co_flags & inspect.CO_VARKEYWORDS:
        return code.co_varnames[named]
    return None


def _results(n):
    """Decorator: the helper always returns a tuple of ``n`` values.  A template may pass it
    starred (``f(g, *_adj.h(x), 'a')``); for numba the emitter binds the ``n`` values to names
    first (codegen/text.unstar), so constants after it stay literals."""
    def mark(fn):
        fn.n_results = n
        return fn
    return mark


def _shape_only(*params):
    """Decorator: the helper reads only the shape and dtype of these parameters (``sum``'s
    ``a``).  In jit mode the emitter then saves the shape of such an argument, where its type
    is a real array, instead of the array (codegen/reverse/shapes.py)."""
    def mark(fn):
        fn.shape_params = params
        return fn
    return mark


def standin(meta):
    """An array of shape and dtype ``meta = (shape, dtype)`` that owns one element (every stride
    0): what a helper that reads only its argument's shape and dtype (:func:`_shape_only`) is
    given for an array whose shape and dtype alone were saved (codegen/reverse/shapes.py)."""
    shape, dtype = meta
    return np.broadcast_to(np.zeros((), dtype), shape)


def export(namespace, also=()):
    """Publish the helpers of a table module as ``_adj.<name>``: every public function it defines
    (and the private names in ``also`` that templates use), those linear in their first parameter
    wrapped with the zero guard above.  A module calls it last, with its ``globals()``: its own
    calls then go through the wrapped helpers too."""
    import inspect
    module = namespace["__name__"]
    mine = globals()
    for name, fn in list(namespace.items()):
        if not inspect.isfunction(fn) or fn.__module__ != module or \
                name.startswith("_") and name not in also:
            continue
        if not name.startswith("_") and name not in _NOT_LINEAR_ENTRY:
            if _first_parameter(fn) in ("g", "t"):
                fn = namespace[name] = _zero_passes_through(fn)
        other = getattr(mine.get(name), "__module__", module)
        if other != module:
            raise RuntimeError(f"_adj.{name} is defined twice: in {other} and in {module}")
        mine[name] = fn


export(globals())


def __getattr__(name):
    """A helper not published yet: its table has not loaded.  Load the tables (and those of the
    optional libraries imported since), then look again."""
    if name.startswith("__"):
        raise AttributeError(name)
    from . import registry
    registry._ensure_tables()
    if name not in globals() and registry._optional_pending():
        registry._load_optional_tables()
    try:
        return globals()[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
