"""Array and number helpers of generated code: zero tests, the array module of a value,
conjugation, un-broadcasting, adjoint accumulation (:func:`add`), zeros, and the small adjoints
of the Python rule table (``abs``, ``**``, ``math.hypot``...) and of dtype-changing calls.

Generated sweeps use ``0.0`` as the zero adjoint of a value whose adjoint has not been produced yet
(Python's float zero adds to any float or complex scalar or array, NumPy or CuPy, without changing
its dtype); containers use tuples/lists/dicts of adjoints with ``None`` for leaves that carry none.
"""
import functools as _functools
from collections import deque as _deque
import types as _types

import numpy as np

from . import hooks as _hooks


_FunctionType = _types.FunctionType
_ModuleType = _types.ModuleType
_BuiltinType = _types.BuiltinFunctionType
_NDARRAY = np.ndarray


def _is_array(x):
    """A NumPy/CuPy array or NumPy scalar (the numpy module itself has .dtype and .shape too)."""
    t = type(x)
    if t is _NDARRAY:
        return True
    if hasattr(t, "__getattr__"):
        # (a class with its own __getattr__: asked on the class, whose answer needs no instance
        # ready to give it, as an object __new__ made before its __init__ runs is not)
        return hasattr(t, "dtype") and hasattr(t, "shape") and t is not _ModuleType
    return hasattr(x, "dtype") and hasattr(x, "shape") and t is not _ModuleType


def probe(x, name):
    """``getattr(x, name, None)`` for s2sad's own questions about a value, without calling a
    ``__getattr__`` of its class when the class itself has no such attribute (see
    :func:`_is_array`)."""
    t = type(x)
    if hasattr(t, "__getattr__") and not hasattr(t, name):
        return None
    return getattr(x, name, None)
_partial = _functools.partial

_SCALARS = (float, int, complex, bool)


def is_zero(a):
    return a is None or (type(a) is float and a == 0.0)


# The exact array types (``numpy.ndarray``; ``cupy.ndarray`` once a CuPy array was seen) -> their
# module: helpers of generated code test ``type(x) in ARRAY_MODULES`` once for their fast paths
# (subclasses take the general paths).
ARRAY_MODULES = {_NDARRAY: np}


def array_module(x):
    """``numpy`` or ``cupy``, by the type of ``x``; never imports CuPy itself."""
    t = type(x)
    m = ARRAY_MODULES.get(t)
    if m is not None:
        return m
    if t.__module__.startswith("cupy"):
        import cupy
        if t is cupy.ndarray:
            ARRAY_MODULES[t] = cupy
        return cupy
    return np


def cj(x):
    """Complex conjugate, free for real values (adjoint templates of complex-capable rules)."""
    if type(x) in ARRAY_MODULES:
        return x.conj() if x.dtype.kind == "c" else x
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
        tg = type(g)
        if tg is float:
            return g
        if tg is complex:
            return g.real
        # (a NumPy complex number or array: the sum of a complex adjoint over a real number's
        # broadcast, ``x + c`` with a complex array c; its real part is the gradient)
        dt = getattr(g, "dtype", None)
        return g.real if dt is not None and dt.kind == "c" else g
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
    if tx is type(g) and tx in ARRAY_MODULES:
        # the common cases: arrays of one type and a real or complex dtype, decided once
        xdt = x.dtype
        if g.dtype == xdt and xdt.kind in "fc":
            shape = x.shape
            if g.shape == shape:
                return g                # nothing to sum, nothing to cast
            g = _reduce_to(g, shape, x)
            return g if g.dtype == xdt else g.astype(xdt, copy=False)
    if tx is float or tx is int:
        if type(g) is float:
            return g
        if type(g) is complex:
            return g.real
        if type(g) is _NDARRAY and g.size and not any(g.strides) and g.dtype.kind in "fc":
            # one value repeated (a full reduction's adjoint, stride 0): its sum is value * count
            # (the correctly rounded sum; a pass over the elements would add the same value
            # g.size times)
            s = g.reshape(-1)[0] * g.size
        else:
            s = g.sum() if hasattr(g, "sum") else g
        return real_like(s, x)
    if (tx is list or tx is tuple or tx is _deque) and type(g) in (list, tuple) and \
            len(g) != len(x):
        _refuse_sequence_arithmetic()
    shape = getattr(x, "shape", None)
    xdt = getattr(x, "dtype", None)
    if xdt is not None and shape is not None and xdt.kind not in "fcO" and _is_array(x):
        return array_module(x).zeros(shape)    # integer/bool arrays carry no derivative
    if shape is None:                       # other Python scalars (complex, bool)
        if hasattr(g, "shape") and g.shape != ():
            return g.sum()
        return g
    if type(g) is complex and xdt is not None and xdt.kind != "c":
        g = g.real                          # (a real input's adjoint is real)
    gshape = getattr(g, "shape", ())
    if gshape != shape:
        if not gshape and not hasattr(g, "shape"):
            # a Python scalar adjoint for an array input: broadcast it out
            xp = array_module(x)
            g = xp.full(shape, g, dtype=np.result_type(g, x.dtype) if x.dtype.kind == "c" else x.dtype)
        else:
            g = _reduce_to(g, shape, x)
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


def sum_product(a, b, x):
    """``unbroadcast(a * b, x)`` where the derivative's types say ``x`` is a real number (the
    adjoint of a scalar ``x`` in ``x * y``: the sum of g * y): one dot product, without the
    product's array, where ``a`` and ``b`` are real NumPy arrays of one shape and dtype and ``x``
    a Python float or int (a NumPy scalar of their dtype, as the sum gives); else the product
    summed as before."""
    if type(a) is _NDARRAY and type(b) is _NDARRAY and (type(x) is float or type(x) is int):
        dt = a.dtype
        if dt.kind == "f" and b.dtype == dt and a.shape == b.shape:
            return np.dot(a.reshape(-1), b.reshape(-1))
    return unbroadcast(a * b, x)


def _reduce_to(g, shape, x):
    """The array ``g`` summed down to ``shape`` (x's: leading axes, then axes of length 1)."""
    extra = len(g.shape) - len(shape)
    if extra > 0:
        g = _sum_leading(g, extra)
    gs = g.shape
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and gs[i] != 1)
    if axes:
        g = g.sum(axis=axes, keepdims=True)
    if g.shape != shape:
        g = g.reshape(shape) if g.size == int(np.prod(shape)) else \
            array_module(x).broadcast_to(g, shape)
    return g


def _sum_leading(g, n):
    """``g.sum(axis=(0, ..., n-1))``.  A large C-contiguous CuPy array is summed as one matrix-vector
    product with a vector of ones (a bias's adjoint: the rows of an (N, H) cotangent): cuBLAS reads
    it at full bandwidth where CuPy's axis-0 reduction measured 4x slower on an H200."""
    t = type(g)
    if t is not np.ndarray and t.__module__.startswith("cupy") and g.size >= 1 << 16 and \
            g.dtype.kind in "fc" and g.flags.c_contiguous:
        import cupy
        lead = 1
        for k in g.shape[:n]:
            lead *= k
        mm = cupy.matmul
        if _hooks.graph_callee is not None:
            mm = _hooks.graph_callee(mm)        # graph mode: the capturable product
        return mm(_ones(cupy, lead, g.dtype), g.reshape(lead, -1)).reshape(g.shape[n:])
    return g.sum(axis=tuple(range(n)))


_ONES = {}          # (device, stream, dtype, length) -> a CuPy vector of ones, never freed


def _ones(cupy, n, dt):
    """A vector of ``n`` ones in ``dt`` on the current device, kept per stream (made on it, so
    its fill is ordered before every use) for the next bias adjoint of that size: no allocation
    and fill launch per step.  Kept ones are never freed (a CUDA graph may read them); past 64,
    or while a capture runs, a fresh vector is made."""
    stream = cupy.cuda.get_current_stream().ptr
    key = (cupy.cuda.runtime.getDevice(), stream, dt, n)
    v = _ONES.get(key)
    if v is None:
        v = cupy.ones(n, dt)
        if len(_ONES) < 64 and not cupy.cuda.runtime.streamIsCapturing(stream):
            _ONES[key] = v
    return v


def _refuse_sequence_arithmetic():
    from ..errors import UnsupportedSyntaxError
    raise UnsupportedSyntaxError(
        "`+` or `*` joined or repeated lists or tuples whose type s2sad did not know when it built "
        "the derivative (it cannot tell which part of the result came from which operand)",
        fix="make the operands visibly lists: `list(a) + list(b)`, `[*a, *b]`, or `list(a) * 3`")


def refuse_maxlen(d):
    """A deque with ``maxlen`` drops items from its other end when it is full, which the reverse
    sweep of ``d.append(v)`` (followed as a list's) does not see: refused when it holds, or is
    given, values that carry a derivative."""
    if type(d) is _deque and d.maxlen is not None:
        from ..errors import UnsupportedSyntaxError
        raise UnsupportedSyntaxError(
            f"a deque with maxlen={d.maxlen} holds values that carry a derivative; it drops "
            f"items from its other end when full, which s2sad does not follow",
            fix=MAXLEN_FIX)


MAXLEN_FIX = ("use a list and keep its last n items yourself (`xs.append(v)` then "
              "`xs = xs[-n:]`), or a deque without maxlen")


def add(a, b):
    """Adjoint accumulation that understands zeros (None / 0.0) and containers."""
    if a is None or (type(a) is float and a == 0.0 and not _is_leaf_value(b)):
        return b
    if b is None:
        return a
    ta = type(a)
    if ta is tuple or ta is list or isinstance(a, tuple) or ta is _deque:
        if type(b) is float and b == 0.0:
            return a
        if hasattr(b, "__len__") and len(a) != len(b):
            _refuse_length_mismatch(a, b)
        vals = [add(x, y) for x, y in zip(a, b)]
        if hasattr(a, "_fields"):
            return ta(*vals)
        return ta(vals) if ta is not _deque else _deque(vals, a.maxlen)
    if ta is dict:
        if type(b) is float and b == 0.0:
            return a
        out = dict(a)
        for k, v in b.items():
            out[k] = add(out.get(k), v)
        return out
    return a + b


def _refuse_length_mismatch(a, b):
    """Two adjoints of one list, tuple or deque (or a tangent and its value) that differ in length:
    zip would drop the longer one's tail (a silently wrong derivative), and which items line up is
    not known.  Refused, never truncated."""
    from ..errors import UnsupportedSyntaxError
    raise UnsupportedSyntaxError(
        f"s2sad met two parts of the derivative of one {type(a).__name__} with different "
        f"lengths ({len(a)} and {len(b)}) and cannot tell which of their items belong together "
        "(a list that grows or shrinks while a value read from it earlier is still used)",
        fix="give the list each length its own name (`ys = xs + [v]` instead of "
            "`xs.append(v)`), or build a new list with `list(xs)` before changing it")


def _is_leaf_value(b):
    return not isinstance(b, (tuple, list, dict, _deque)) and b is not None


def part_or_zero(g, i):
    """Part ``i`` of a tuple's adjoint ``g`` (0.0 where it has none: a zero adjoint, or a part
    no one read)."""
    if is_zero(g):
        return 0.0
    v = g[i]
    return 0.0 if v is None else v


def zeros_like(x):
    """A zero adjoint with the shape/structure of ``x``; None for values that carry no derivative."""
    if isinstance(x, float):
        return 0.0
    if isinstance(x, complex):
        return 0j
    if isinstance(x, (tuple, list)):
        return type(x)(zeros_like(v) for v in x)
    if isinstance(x, _deque):                   # (a deque's adjoint is a list)
        return [zeros_like(v) for v in x]
    if isinstance(x, dict):
        return {k: zeros_like(v) for k, v in x.items()}
    dt = getattr(x, "dtype", None) if _is_array(x) else None
    if dt is not None and dt.kind in "fc":
        return array_module(x).zeros_like(x)
    if dt is not None and dt.kind == "O":       # an object array holding floats: float zeros
        return np.zeros(x.shape)
    return None


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
            if type(a) is _NDARRAY and a.dtype.kind == "f":
                return _square_adjoint(g, a)
            return g * cj(2 * a)
        return g * cj(b * a ** (b - 1))
    return g * cj(b * a ** (b - 1))


def _square_adjoint(g, a):
    """``g * (2 * a)`` for a real NumPy array ``a``, in one pass where ``g`` is one value: a number,
    or the stride-0 view a full reduction's adjoint is (``np.sum(r ** 2)``: ``a * (2 * g)``,
    exact, since doubling is); for a ``g`` of a's shape and dtype, in one buffer (no ``2 * a``
    temporary).  The same values and dtype as ``g * (2 * a)``."""
    tg = type(g)
    if tg is _NDARRAY:
        if g.shape == a.shape and g.size and not any(g.strides):
            return a * (2 * g[(0,) * g.ndim])         # (a NumPy scalar of g's dtype)
        if g.shape == a.shape and g.dtype == a.dtype:
            r = a * 2.0
            np.multiply(r, g, out=r)
            return r
    elif tg is float or isinstance(g, np.floating):
        return a * (2 * g)
    return g * (2 * a)


def mul_into(g, x):
    """``g * x``, written into ``g``'s buffer where that changes nothing anyone can see.

    The reverse sweep calls it for an adjoint ``g`` that no later line reads
    (codegen/reverse/in_place.py).  It writes in place only where ``g`` is a writable NumPy array
    of a real or complex dtype that owns its buffer and that nothing else refers to (no other
    variable, container, or view: CPython's reference count, as NumPy's own elision of
    temporaries), and the product has g's shape and dtype (``x`` a number, or an array of g's
    shape and of g's dtype or bool).  Otherwise it is ``g * x``."""
    if type(g) is _NDARRAY and g.base is None and _getrefcount(g) <= _SOLE and \
            g.dtype.kind in "fc" and g.flags.writeable and _fits(g, x):
        return _np_multiply(g, x, out=g)
    return g * x


def rmul_into(g, x):
    """``x * g``, as :func:`mul_into` (the product of numbers commutes; other operands keep
    their order)."""
    if type(g) is _NDARRAY and g.base is None and _getrefcount(g) <= _SOLE and \
            g.dtype.kind in "fc" and g.flags.writeable and _fits(g, x):
        return _np_multiply(g, x, out=g)
    return x * g


def _fits(g, x):
    """Whether ``g * x`` has g's shape and dtype (NumPy 2's promotion: Python numbers are weak)."""
    tx = type(x)
    if tx is _NDARRAY:
        return x.shape == g.shape and (x.dtype == g.dtype or x.dtype.kind == "b")
    if tx is float or tx is int:
        return True
    return tx is complex and g.dtype.kind == "c"


def _probe(g, x):
    return _getrefcount(g)


def _sole_count():
    """The reference count :func:`mul_into` sees for an array that only its caller's local
    variable holds (the same call: a local passed as an argument)."""
    g = np.empty(2)
    return _probe(g, None)


_getrefcount = __import__("sys").getrefcount
_np_multiply = np.multiply
_SOLE = _sole_count()


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


def is_complex(x):
    """Whether ``x`` is a complex number or an array of complex numbers."""
    return type(x) is complex or getattr(getattr(x, "dtype", None), "kind", "") == "c"


def unit(x):
    """``np.sign(x)`` as the derivatives of ``abs`` write it: for complex x the direction
    x / |x| (0 at 0), which turns as x moves.  np.sign's own rule is a piecewise constant's,
    right for real x only; this one's (rules/runtime_helpers.py) covers complex x, so that
    derivatives of those derivatives (hessian, hvp) are right there too."""
    return np.sign(x)


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
        r = 1j * g          # (a Python complex where g is a NumPy float scalar: a float subclass)
        return r.astype(dt) if hasattr(r, "astype") else dt.type(r)
    if isinstance(x, complex):
        return 1j * g
    return 0.0 * g


def _others_products(items, start):
    """For each item, ``start`` times the product of the other items (prefix times suffix
    products: no division, so a zero item is fine)."""
    n = len(items)
    before = [start]
    for v in items[:-1]:
        before.append(before[-1] * v)
    after = [1] * n
    acc = 1
    for i in range(n - 1, -1, -1):
        after[i] = acc
        acc = acc * items[i]
    return [b * a for b, a in zip(before, after)]


def hypot_adjoint(g, ans, coords):
    return tuple(g * c / ans if ans != 0 else 0.0 for c in coords)


def digamma(x):
    from scipy.special import digamma as dg   # only reached for math.gamma / math.lgamma
    return float(dg(x))


def _z(v):
    return 0.0 if v is None else v


def real_part(g):
    return g.real if isinstance(g, complex) else g


def imag_part(g):
    return g.imag if isinstance(g, complex) else 0.0


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


def extremum_initial_adjoint(g, ans, a, initial, axis, keepdims, where=True):
    """Adjoint of ``initial=`` in max/min: g where the extremum is ``initial`` and no element of
    the data (of those ``where=`` keeps) reaches it (where elements tie with it, they take the
    adjoint)."""
    xp = array_module(a)
    axes = tuple(range(a.ndim)) if axis is None else \
        tuple(k % a.ndim for k in ((axis,) if isinstance(axis, int) else axis))
    ans_k = ans if keepdims else xp.expand_dims(ans, axes) if axes else ans
    eq = xp.asarray(a) == ans_k
    if where is not True:
        eq = eq & xp.asarray(where, dtype=bool)
    hit = eq.any(axis=axes, keepdims=keepdims) if axes else eq
    return unbroadcast(xp.where((ans == initial) & ~hit, g, 0.0), initial)
