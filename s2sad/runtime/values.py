"""Kinds of run-time values: which values carry a derivative (:func:`differentiable`), the kind
letter a build is specialised on (:func:`kind_of`) and the finer type (:func:`type_of`), user code versus installed libraries
(:func:`is_user_code`), the Python function of a Numba dispatcher (:func:`numba_function`), and
adjoints shaped like a value (:func:`materialize`).
"""
import operator as _operator
from collections import deque as _deque
import threading as _threading
import types as _types
import weakref as _weakref

import numpy as np

from .arrays import (_FunctionType, _ModuleType, _NDARRAY, _is_array, _partial, is_zero, probe,
                    unbroadcast, zeros_like)
from .iterators import Iter
from .transformed import Transformed


def materialize(g, x):
    """Turn a symbolic zero adjoint (0.0 / None) into real zeros shaped like ``x``; an object's
    adjoint becomes the same dataclass (gradient fields) or a dict of attribute gradients.  A
    gradient is the user's to change in place: a read-only or broadcast (stride 0) NumPy array, as
    reduction adjoints return (rules.adjoints.broadcast), is copied."""
    if _is_object(x):
        return _object_grad(g, x)
    tx = type(x)
    if tx is int or tx is bool or tx is str or x is None:
        return None
    dt = getattr(x, "dtype", None)
    if dt is not None and dt.kind not in "fcO":
        return None
    if tx is _deque:                # a deque's adjoint is a list; its gradient a deque
        g = [None] * len(x) if is_zero(g) else g
        return _deque((materialize(a, b) for a, b in zip(g, x)), x.maxlen)
    if is_zero(g):
        return zeros_like(x)
    if type(g) in (tuple, list) and type(x) in (tuple, list):
        return type(x)(materialize(a, b) for a, b in zip(g, x))
    if type(g) is dict and type(x) is dict:
        return {k: materialize(g.get(k), v) for k, v in x.items()}
    if isinstance(x, np.generic) and type(g) in (float, complex, int):
        # a NumPy scalar's gradient is a NumPy scalar of its dtype (compiled code gives a
        # Python float; unbroadcast would make it a 0-d array)
        g = g.real if dt.kind != "c" and type(g) is complex else g
        return dt.type(g)
    if hasattr(x, "shape") and getattr(g, "shape", None) != x.shape:
        g = unbroadcast(g, x)
    if (tx is float or (dt is not None and dt.kind == "f")) and \
            (type(g) is complex or getattr(getattr(g, "dtype", None), "kind", "") == "c"):
        # a real input's gradient is real: the real part of a complex adjoint (the rules keep
        # to this where they sum onto a real value; this is the last guard before the user)
        g = g.real
    if tx is _NDARRAY and type(g) is not _NDARRAY and dt.kind in "fc" and x.ndim == 0 and \
            isinstance(g, (float, complex, int, np.number)):
        # a 0-d array's gradient is a 0-d array of its dtype (NumPy's arithmetic on 0-d arrays
        # gives scalars: the sweep's adjoint is one)
        return np.array(g, dtype=dt)
    if type(g) is _NDARRAY and not _owned(g):
        return g.copy()
    if type(g).__module__.startswith("cupy") and g.size > 1 and 0 in g.strides:
        return g.copy()                 # a CuPy broadcast view (a reduction's adjoint)
    return g


def _owned(g):
    """Whether the NumPy array ``g`` may be handed to the user as theirs: writable, and no element
    shared by two indices (no stride 0)."""
    return g.flags.writeable and (g.size < 2 or 0 not in g.strides)


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


# -- kinds of run-time values (the build is specialised on them) ----------------------------------
STATIC = "static"


# the type of np.sum, np.linalg.norm... since NumPy 1.25, _ArrayFunctionDispatcher: module-level,
# no closure, fixed as a function is (before: a plain function, which the test below takes)
_NP_DISPATCHER = type(np.sum) if type(np.sum) is not _types.FunctionType else None


def static_value(v):
    """True for the values a derivative is specialised on by identity (frontend/statics.py):
    modules, builtins, NumPy ufuncs and array functions (np.sum), and module-level Python
    functions without closure."""
    if isinstance(v, (_types.ModuleType, _types.BuiltinFunctionType, np.ufunc)):
        return True
    if _NP_DISPATCHER is not None and type(v) is _NP_DISPATCHER:
        return True
    if type(v) is _types.FunctionType:
        q = v.__qualname__
        return v.__closure__ is None and "<locals>" not in q and "<lambda>" not in q
    return False


_ARRAY_KINDS = {}


def _array_kind(t):
    """"a" for NumPy's arrays and scalars, "a:<library>" for another library's ("a:cupy"): a
    derivative is specialised on its arguments' array library (frontend/namespaces.py)."""
    k = _ARRAY_KINDS.get(t)
    if k is None:
        lib = (getattr(t, "__module__", None) or "").partition(".")[0]
        k = _ARRAY_KINDS[t] = "a" if lib in ("numpy", "") else f"a:{lib}"
    return k


def type_of(v):
    """The type of a run-time value, as classify/types.py spells types: ``("s", k)`` for a Python
    or NumPy number of kind ``k`` in ``"bifc"``, ``("a", k, ndim)`` for a NumPy array of a numeric
    dtype, ``("T", (t0, t1, ...))`` for a tuple of up to 32 items (not a namedtuple), nested
    ones too, with its items' types (None for those unknown); None for anything else.  A
    derivative is specialised on these (api.py for the function differentiated,
    :class:`~s2sad.runtime.dispatch.DerivedStub` for the functions it calls)."""
    t = type(v)
    if t is float:
        return ("s", "f")
    if t is int:
        return ("s", "i")
    if t is bool:
        return ("s", "b")
    if t is complex:
        return ("s", "c")
    if t is _NDARRAY:
        k = v.dtype.kind
        if k == "u":
            k = "i"
        return ("a", k, v.ndim) if k in "bifc" else None
    if isinstance(v, np.generic):
        k = v.dtype.kind
        k = "i" if k == "u" else k
        return ("s", k) if k in "bifc" else None
    if t is tuple and 0 < len(v) <= _TUPLE_TYPED:
        # a tuple of known length (not a namedtuple), its items' types, None for those unknown
        items = tuple(type_of(x) for x in v)
        return ("T", items) if any(x is not None for x in items) else None
    return None


_TUPLE_TYPED = 32       # longer tuples (of parameters, say) are typed as unknown


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
        return _array_kind(t)
    if isinstance(v, (tuple, list, dict, _deque)):
        return "c"
    if class_has_operators(t):
        return "o"                      # an object whose class defines __add__... in Python
    if static_value(v):
        return (STATIC, v)              # a function or module: fixed when the derivative is built
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
    if t is tuple or t is list or isinstance(v, (tuple, list, _deque)):
        return any(differentiable(x) for x in v)
    if t is dict or isinstance(v, dict):
        return any(differentiable(x) for x in v.values())
    if t is _ModuleType:
        return False
    dt = probe(v, "dtype")
    if dt is not None and hasattr(v, "shape"):
        return dt.kind in "fc" or dt.kind == "O" and _object_array_differentiable(v)
    if t is _FunctionType:
        return _closure_differentiable(v)
    if t is Transformed:                                    # s2sad.grad(f): as f
        inner = v.__s2sad_transform__
        return inner is not None and differentiable(inner[1])
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
        # np.frompyfunc(f, ...): the ufunc holds f, which may carry a derivative (a closure, a
        # functools.partial, a bound method or a callable object holding one); NumPy shows it
        # only to the garbage collector
        import gc
        return _frompyfunc(v) and any(callable(r) and differentiable(r)
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


# -- Numba-compiled callables, recognised without importing Numba ----------------------------------
#
# A function decorated with ``numba.njit`` / ``numba.jit`` is a CPU dispatcher holding the Python
# function it compiles (``.py_func``); s2sad differentiates that function's source, exactly as if
# the decorator were absent.  ``numba.vectorize`` / ``guvectorize`` make ufuncs whose Python kernel
# is scalar code applied element by element: s2sad does not differentiate them (they need a rule).

def _numba_type(obj, names):
    t = type(obj)
    return (getattr(t, "__module__", None) or "").startswith("numba.") and \
        any(c.__name__ in names for c in t.__mro__)


_NUMBA_OPTIONS = _weakref.WeakKeyDictionary()    # Python function -> its dispatcher's options


def numba_function(obj):
    """The Python function a Numba CPU dispatcher (``@numba.njit``, ``@numba.jit``) compiles,
    or None for anything else (CUDA kernels included).  It remembers the dispatcher's compile
    options for that function (:func:`numba_options`)."""
    if type(obj) is _FunctionType or not _numba_type(obj, ("CPUDispatcher",)):
        return None
    py = getattr(obj, "py_func", None)
    if not isinstance(py, _FunctionType):
        return None
    opts = getattr(obj, "targetoptions", None)
    _NUMBA_OPTIONS[py] = dict(opts) if isinstance(opts, dict) else {}
    return py


def cached_function(obj):
    """The Python function under a ``functools.lru_cache`` (or ``functools.cache``) wrapper, or
    None for anything else.  A cached function is pure by its user's promise (the cache hands
    back earlier results), so its derivative is that of the function it wraps; the wrapper itself
    still runs wherever no derivative is needed."""
    if type(obj) is not _LRU_WRAPPER:
        return None
    fn = getattr(obj, "__wrapped__", None)
    return fn if isinstance(fn, _FunctionType) else None


_LRU_WRAPPER = type(__import__("functools").lru_cache(maxsize=1)(lambda: None))


def numba_options(obj):
    """The compile options of a Numba CPU dispatcher (a copy of its ``targetoptions``: the
    options given to the decorator, e.g. nopython, fastmath, cache, boundscheck, parallel,
    error_model), for the dispatcher or for the Python function s2sad read through it (the
    options of the dispatcher it was last read through); None for anything else."""
    if numba_function(obj) is not None:
        obj = obj.py_func
    try:
        opts = _NUMBA_OPTIONS.get(obj)
    except TypeError:                                  # (not weakly referable)
        return None
    return dict(opts) if opts is not None else None


def numba_ufunc(obj):
    """True for a ufunc made by ``numba.vectorize`` or ``numba.guvectorize``."""
    return _numba_type(obj, ("DUFunc", "GUFunc", "UFuncDispatcher", "GUFuncBuilder"))


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
        from ..errors import has_kept_text
        return has_kept_text(fn.__code__)     # an IPython cell, a 3.13+ REPL input
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
