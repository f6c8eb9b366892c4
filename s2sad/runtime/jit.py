"""What derivatives compiled with ``jit=True`` call as ``_rt.*``: the run-time helpers of
``runtime/`` again, for ``numba.njit``.

Each helper is a Python stub with a numba ``overload``: numba picks the body by the types of the
arguments when it compiles the derivative, so the code generated for a float is the float's
(``unbroadcast(g, x)`` between two floats is ``g``; ``cj`` of a real is the value itself).  A type
that no body here handles is a typing error, which ``codegen/jit.py`` turns into a fallback to
Python with one warning naming the user's line.  This module imports numba: only ``jit=True``
imports it.

The semantics are those of the Python helpers (``runtime/arrays.py``, ``runtime/indexing.py``),
restricted to floats, complex numbers and arrays of them with basic indices (integers and
slices); anything else does not compile, and runs as Python.
"""
import types as _types

import numpy as np
from numba import njit
from numba.core import types as nt
from numba.core.errors import TypingError
from numba.extending import overload, register_jitable

_SCALAR = (nt.Float, nt.Integer, nt.Boolean)
SHAPE_ERROR = "s2sad-jit: an adjoint changed shape"
MISSING = "s2sad-jit: no numba version of"


def _is_scalar(t):
    return isinstance(t, _SCALAR)


def _is_complex(t):
    if isinstance(t, nt.Complex):
        return True
    return isinstance(t, nt.Array) and isinstance(t.dtype, nt.Complex)


def _basic_index(idx):
    """Integers, slices, ``None`` (a new axis), and tuples of them: indices whose ``a[idx] += g``
    adds each element once."""
    one = (nt.Integer, nt.SliceType, nt.NoneType)
    if isinstance(idx, one):
        return True
    return isinstance(idx, nt.BaseTuple) and all(isinstance(t, one) for t in idx.types)


def _float_dtype(x):
    """The dtype of an adjoint of array type ``x``: its own if floating, else float64."""
    d = x.dtype
    return d if isinstance(d, (nt.Float, nt.Complex)) else nt.float64


# -- the stubs (called only inside compiled derivatives) ------------------------------------------
def zero_of(x):
    raise NotImplementedError("s2sad: _rt.zero_of runs inside numba-compiled derivatives only")


def acc(a, b):
    raise NotImplementedError


def is_zero(a):
    raise NotImplementedError


def cj(x):
    raise NotImplementedError


def real_like(g, x):
    raise NotImplementedError


def unbroadcast(g, x):
    raise NotImplementedError


def getitem_adjoint(g, x, idx):
    raise NotImplementedError


def acc_getitem(acc, x, idx, g):
    raise NotImplementedError


def setitem_adjoint(g, idx):
    raise NotImplementedError


def setitem_value_adjoint(g, idx, v):
    raise NotImplementedError


def add(a, b):
    raise NotImplementedError


def snap(v):
    raise NotImplementedError


def pow_base_adjoint(g, a, b):
    raise NotImplementedError


def pow_exponent_adjoint(g, ans, a):
    raise NotImplementedError


def abs_adjoint(g, x):
    raise NotImplementedError


# -- their bodies ---------------------------------------------------------------------------------
@overload(zero_of)
def _zero_of(x):
    if isinstance(x, nt.Array):
        dt = _float_dtype(x)
        return lambda x: np.zeros(x.shape, dt)
    if isinstance(x, nt.Complex):
        return lambda x: 0j
    if _is_scalar(x):
        return lambda x: 0.0


@overload(acc)
def _acc(a, b):
    if isinstance(a, nt.Array) and isinstance(b, nt.Array):
        def impl(a, b):
            if a.shape != b.shape:
                raise ValueError(SHAPE_ERROR)
            return a + b
        return impl
    if isinstance(a, nt.Array) and (_is_scalar(b) or isinstance(b, nt.Complex)):
        return lambda a, b: a + b
    if (_is_scalar(a) or isinstance(a, nt.Complex)) and (_is_scalar(b) or isinstance(b, nt.Complex)):
        return lambda a, b: a + b           # (an 'a'-kind value that is a NumPy scalar here)
    if (_is_scalar(a) or isinstance(a, nt.Complex)) and (_is_scalar(b) or
                                                        isinstance(b, nt.Complex)):
        return lambda a, b: a + b


@overload(is_zero)
def _is_zero(a):
    if isinstance(a, nt.NoneType):
        return lambda a: True
    if _is_scalar(a) or isinstance(a, nt.Complex):
        return lambda a: a == 0
    if isinstance(a, nt.Array):
        return lambda a: False


@overload(cj)
def _cj(x):
    if _is_complex(x):
        return lambda x: np.conj(x)
    if _is_scalar(x) or isinstance(x, nt.Array):
        return lambda x: x


@overload(real_like)
def _real_like(g, x):
    if _is_complex(g) and not _is_complex(x):
        return lambda g, x: g.real
    return lambda g, x: g


@register_jitable
def _reduce_to(g, x, out):
    """Sum ``g`` into ``out`` (shaped like ``x``) over the axes NumPy broadcast ``x`` along."""
    gs = g.shape
    xs = x.shape
    lead = g.ndim - x.ndim
    gf = np.ascontiguousarray(g).ravel()
    of = out.ravel()
    for k in range(gf.size):
        rem = k
        oidx = 0
        ostride = 1
        for d in range(g.ndim - 1, -1, -1):
            c = rem % gs[d]
            rem //= gs[d]
            xd = d - lead
            if xd >= 0:
                if xs[xd] != 1:
                    oidx += c * ostride
                ostride *= xs[xd]
        of[oidx] += gf[k]
    return out


@overload(unbroadcast)
def _unbroadcast(g, x):
    if _is_scalar(x):
        if isinstance(g, nt.Complex):
            return lambda g, x: g.real
        if _is_scalar(g):
            return lambda g, x: g
        if isinstance(g, nt.Array):
            if _is_complex(g):
                return lambda g, x: g.sum().real
            return lambda g, x: g.sum()
    if isinstance(x, nt.Complex):
        if _is_scalar(g) or isinstance(g, nt.Complex):
            return lambda g, x: g
        if isinstance(g, nt.Array):
            return lambda g, x: g.sum()
    if isinstance(x, nt.Array):
        dt = _float_dtype(x)
        drop_imag = _is_complex(g) and not _is_complex(x)
        if _is_scalar(g) or isinstance(g, nt.Complex):
            if drop_imag:
                return lambda g, x: np.full(x.shape, g.real, dt)
            return lambda g, x: np.full(x.shape, g, dt)
        if isinstance(g, nt.Array):
            if g.ndim == x.ndim and not drop_imag:
                def impl(g, x):
                    if g.shape == x.shape:
                        return g.astype(dt)
                    return _reduce_to(g, x, np.zeros(x.shape, dt))
                return impl
            if drop_imag:
                return lambda g, x: _reduce_to(np.real(g), x, np.zeros(x.shape, dt))
            return lambda g, x: _reduce_to(g, x, np.zeros(x.shape, dt))


@overload(getitem_adjoint, prefer_literal=True)
def _getitem_adjoint(g, x, idx):
    if isinstance(x, nt.BaseTuple) and len(x.types) == 2 and isinstance(idx, nt.IntegerLiteral) \
            and isinstance(g, nt.Float):
        # a pair's item (``s, l = np.linalg.slogdet(a)``): g at idx, 0.0 at the other place
        if idx.literal_value in (0, -2):
            return lambda g, x, idx: (g, 0.0)
        if idx.literal_value in (1, -1):
            return lambda g, x, idx: (0.0, g)
        return None
    if not isinstance(x, nt.Array) or not _basic_index(idx):
        raise TypingError("s2sad jit: the adjoint of this subscript is not compiled "
                          "(an index other than integers and slices)")
    dt = _float_dtype(x)

    def impl(g, x, idx):
        out = np.zeros(x.shape, dt)
        out[idx] += real_like(g, x)
        return out
    return impl


@overload(acc_getitem)
def _acc_getitem(acc, x, idx, g):
    if not isinstance(acc, nt.Array) or not _basic_index(idx):
        raise TypingError("s2sad jit: the adjoint of this subscript is not compiled "
                          "(an index other than integers and slices)")

    def impl(acc, x, idx, g):
        acc[idx] += real_like(g, acc)
        return acc
    return impl


@overload(setitem_adjoint)
def _setitem_adjoint(g, idx):
    if _is_scalar(g):
        return lambda g, idx: g
    if isinstance(g, nt.Array) and _basic_index(idx):
        def impl(g, idx):
            out = g.copy()
            out[idx] = 0
            return out
        return impl


@overload(setitem_value_adjoint)
def _setitem_value_adjoint(g, idx, v):
    if not (isinstance(g, nt.Array) and _basic_index(idx)):
        return None
    if isinstance(v, nt.Array):
        return lambda g, idx, v: unbroadcast(np.copy(g[idx]), v)
    return lambda g, idx, v: unbroadcast(g[idx], v)


@overload(add)
def _add(a, b):
    if isinstance(a, nt.NoneType):
        return lambda a, b: b
    if isinstance(b, nt.NoneType):
        return lambda a, b: a
    ok = (nt.Float, nt.Integer, nt.Complex, nt.Array)
    if isinstance(a, ok) and isinstance(b, ok):
        return lambda a, b: a + b


@overload(snap)
def _snap(v):
    if isinstance(v, nt.Array):
        return lambda v: v.copy()
    return lambda v: v


def const_of(t):
    """The type a Python float constant takes next to a value of type ``t`` under NumPy 2's
    promotion (a float32 array keeps float32; numba would widen it to float64)."""
    d = t.dtype if isinstance(t, nt.Array) else t
    if isinstance(d, nt.Float):
        return d
    if isinstance(d, nt.Complex):
        return d.underlying_float
    return nt.float64


def _real_or_complex(t):
    """A float or complex scalar, or an array of them (not integers: their Python helpers take
    other paths)."""
    d = t.dtype if isinstance(t, nt.Array) else t
    return isinstance(d, (nt.Float, nt.Complex))


@overload(pow_base_adjoint, prefer_literal=True)
def _pow_base_adjoint(g, a, b):
    """``runtime.arrays.pow_base_adjoint``: a literal integer exponent (``x ** 2``) is decided when
    the derivative compiles, as the Python helper decides it for a Python int."""
    if not (_real_or_complex(a) and isinstance(g, (nt.Float, nt.Complex, nt.Array))):
        return None
    if isinstance(b, nt.IntegerLiteral):
        k = b.literal_value
        C = const_of(g)
        if k == 0:
            return lambda g, a, b: g * C(0.0)
        if k == 1:
            return lambda g, a, b: g
        if k == 2:
            return lambda g, a, b: g * cj(2 * a)
        return lambda g, a, b: g * cj(k * a ** (k - 1))
    if isinstance(b, (nt.Integer, nt.Float)):
        # a Python int or float exponent known only at run time: the helper's branches, by value
        # (g and g * cj(..) must have one type: g's shape is the power's, which is a's here)
        if isinstance(g, nt.Array) and not (isinstance(a, nt.Array) and a.ndim == g.ndim):
            return None
        C = const_of(g)
        if isinstance(b, nt.Float):
            B = const_of(a)             # a float exponent joins a float32 base as float32

            def impl(g, a, b):
                if b == 0:
                    return g * C(0.0)
                bb = B(b)
                if b == 1:
                    return g * cj(bb * a ** 0)
                return g * cj(bb * a ** (bb - B(1)))
            return impl

        def impl(g, a, b):
            if b == 0:
                return g * C(0.0)
            if b == 1:
                return g * cj(b * a ** 0)
            return g * cj(b * a ** (b - 1))
        return impl
    if isinstance(b, nt.Array) and _real_or_complex(b):
        return lambda g, a, b: g * cj(b * a ** (b - 1))


@overload(pow_exponent_adjoint)
def _pow_exponent_adjoint(g, ans, a):
    """``g * cj(ans * safe_log(a))`` for arrays (a Python float base takes a complex logarithm
    below zero in the Python helper: not compiled)."""
    if not isinstance(a, nt.Array):
        return None
    if isinstance(a.dtype, nt.Float):
        C = a.dtype
        return lambda g, ans, a: g * cj(ans * np.where(a > 0, np.log(np.where(a > 0, a, C(1))),
                                                         C(0.0)))
    if isinstance(a.dtype, nt.Complex):
        return lambda g, ans, a: g * cj(ans * np.log(np.where(a == 0, 1, a)))


@overload(abs_adjoint)
def _abs_adjoint(g, x):
    """``runtime.arrays.abs_adjoint`` for real values: g times the sign (0 at 0)."""
    if _is_scalar(x) and isinstance(g, (nt.Float, nt.Integer)):
        return lambda g, x: g * (1.0 if x > 0 else -1.0 if x < 0 else 0.0)
    if isinstance(x, nt.Array) and isinstance(x.dtype, (nt.Float, nt.Integer)):
        return lambda g, x: g * np.sign(x)


def missing(prefix):
    """A module ``__getattr__``: numba reads a helper's attribute while it types the derivative;
    one with no numba version raises this AttributeError, which the caller turns into the
    fallback."""
    def __getattr__(name):
        raise AttributeError(f"{MISSING} {prefix}.{name}")
    return __getattr__


def namespace():
    """A module holding the compiled helpers under the names generated code uses (``_rt``)."""
    mod = _types.ModuleType("s2sad_jit_runtime")
    for name in ("zero_of", "acc", "is_zero", "cj", "real_like", "unbroadcast", "getitem_adjoint",
                 "acc_getitem", "setitem_adjoint", "setitem_value_adjoint", "add", "snap",
                 "pow_base_adjoint", "pow_exponent_adjoint", "abs_adjoint"):
        setattr(mod, name, globals()[name])
    mod.__getattr__ = missing("_rt")
    return mod


__all__ = ["namespace", "SHAPE_ERROR", "njit"]
