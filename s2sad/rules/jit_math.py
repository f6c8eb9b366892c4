"""``np.exp`` and ``np.log`` of float64 arrays, for ``jit=True``, in loops LLVM turns into SIMD
code.

Numba compiles ``np.exp(a)`` as one call of the C library's scalar ``exp`` per element (it uses a
vector math library only where Intel's SVML is installed): about 4 ns an element on the dev
machine's AMD EPYC, five times NumPy's own SIMD loop (a 128 x 128 kernel matrix: 70 against 14 µs,
the largest single cost of ratio.py's gp_lml in Numba mode).  :func:`exp` here is the textbook
method, written as one loop without branches or calls, which LLVM vectorises (products and sums
contracted into fused multiply-adds), 15 against NumPy's 13 µs there:

- ``x = n ln2 + r`` with ``|r| <= ln2 / 2``: ``n`` rounded by adding and subtracting 1.5 * 2^52
  (the sum's low bits hold ``n``), ``r`` by Cody and Waite's two-part ln2 (exact products);
- ``exp(r)`` by its Taylor polynomial of degree 13 (truncation below 5e-18 relative) in Horner's
  form;
- the product with ``2^n`` made from the exponent bits of two factors ``2^(n//2)`` and
  ``2^(n - n//2)``, so that results down in the subnormal range and up to the largest float
  come out without a branch;
- beyond ``[-745.14, 709.79]`` the result is 0 or inf; NaN stays NaN.

Its error is within about 1 ulp of the exact value (tests/jit/test_jit_math.py compares it with
the C library's across the range).  :func:`log` is the same kind of loop (the classic fdlibm
method, below): 119 µs against numba's 346 and NumPy's 83 for 100,000 values on the dev machine
(turing_broadcast's log density), within 1 ulp.  Other dtypes, scalars and the ``out=`` form are
numba's own functions.  The loops are compiled with NumPy's error model (a division by zero is
inf, not an exception: the exception's branch would keep LLVM from vectorising).  Imports numba:
only ``jit=True`` imports it.
"""
import math

import numpy as np
from llvmlite import ir as llvm_ir
from numba import njit
from numba.core import types as nt
from numba.extending import intrinsic, overload, register_jitable

_LOG2E = 1.4426950408889634             # 1 / ln 2
_LN2_HI = 6.93147180369123816490e-01    # ln 2, its first 32 bits (n * _LN2_HI is exact)
_LN2_LO = 1.90821492927058770002e-10    # ln 2 - _LN2_HI
_SHIFT = 6755399441055744.0             # 1.5 * 2^52: x + _SHIFT - _SHIFT rounds x to an integer
_SHIFT_BITS = int(np.array([_SHIFT]).view(np.int64)[0])
_HI = 709.782712893384                  # above: inf
_LO = -745.1332191019412                # below: 0
# 1 / k!, k = 2 .. 13
_C = tuple(1.0 / math.factorial(k) for k in range(2, 14))
(_C2, _C3, _C4, _C5, _C6, _C7, _C8, _C9, _C10, _C11, _C12, _C13) = _C


@intrinsic
def _as_bits(typingctx, x):
    """The bits of a float64 as an int64 (a bit cast: no instruction in vector code)."""
    return nt.int64(nt.float64), \
        lambda context, builder, sig, args: builder.bitcast(args[0], llvm_ir.IntType(64))


@intrinsic
def _from_bits(typingctx, x):
    """The float64 whose bits are the int64 ``x``."""
    return nt.float64(nt.int64), \
        lambda context, builder, sig, args: builder.bitcast(args[0], llvm_ir.DoubleType())


@register_jitable
def _exp1(x):
    """exp of one float64, as described above (a loop of it vectorises: no branch, no call)."""
    v = min(max(x, -746.0), 710.0)
    s = v * _LOG2E + _SHIFT
    k = s - _SHIFT
    r = (v - k * _LN2_HI) - k * _LN2_LO
    p = _C13
    p = p * r + _C12
    p = p * r + _C11
    p = p * r + _C10
    p = p * r + _C9
    p = p * r + _C8
    p = p * r + _C7
    p = p * r + _C6
    p = p * r + _C5
    p = p * r + _C4
    p = p * r + _C3
    p = p * r + _C2
    p = p * r + 1.0
    p = p * r + 1.0
    e = _as_bits(s) - _SHIFT_BITS       # n, from the low bits of the shifted sum
    h = e >> 1                          # 2^n as 2^h 2^(n - h): both normal numbers
    y = p * _from_bits((h + 1023) << 52) * _from_bits((e - h + 1023) << 52)
    y = np.inf if x > _HI else y
    y = 0.0 if x < _LO else y
    return x if x != x else y


# -- log -------------------------------------------------------------------------------------------
# log x = k ln2 + log(1 + f), x = 2^k (1 + f) with sqrt(1/2) <= 1 + f < sqrt(2) (the exponent moved
# by one where the mantissa is past sqrt(2), found from the bits by one carry), and
# log(1 + f) = f - f^2/2 + s (f^2/2 + R(s^2)), s = f / (2 + f), R the minimax polynomial of the
# classic fdlibm method (its coefficients); subnormal x scaled by 2^54 first.
_LG1 = 6.666666666666735130e-01
_LG2 = 3.999999999940941908e-01
_LG3 = 2.857142874366239149e-01
_LG4 = 2.222219843214978396e-01
_LG5 = 1.818357216161805012e-01
_LG6 = 1.531383769920937332e-01
_LG7 = 1.479819860511658591e-01
_TWO54 = 18014398509481984.0
_TINY = 2.2250738585072014e-308         # the smallest normal float64
_MANT = (1 << 52) - 1
_ONE_BITS = 0x3FF0 << 48                # the exponent bits of 1.0
_SQRT2_CARRY = 0x95F619980C433          # mantissa + this carries into bit 52 past sqrt(2)


@register_jitable
def _log1(x):
    """log of one float64 (a loop of it vectorises: no branch, no call)."""
    sub = x < _TINY
    xs = x * _TWO54 if sub else x
    hx = _as_bits(xs)
    k = ((hx >> 52) & 0x7FF) - 1023 - (54 if sub else 0)
    t = hx & _MANT
    i = (t + _SQRT2_CARRY) & (1 << 52)
    m = _from_bits(t | (i ^ _ONE_BITS))   # in [sqrt(1/2), sqrt(2))
    k = k + (i >> 52)
    f = m - 1.0
    s = f / (2.0 + f)
    z = s * s
    w = z * z
    t1 = w * (_LG2 + w * (_LG4 + w * _LG6))
    t2 = z * (_LG1 + w * (_LG3 + w * (_LG5 + w * _LG7)))
    r = t2 + t1
    hfsq = 0.5 * f * f
    dk = float(k)
    y = dk * _LN2_HI - ((hfsq - (s * (hfsq + r) + dk * _LN2_LO)) - f)
    y = -np.inf if x == 0.0 else y
    y = np.nan if x < 0.0 else y
    y = x if x == np.inf else y
    return x if x != x else y


def _over_arrays(scalar):
    """A compiled ``f(a)``: ``scalar`` of each element of the float64 array ``a`` (any layout), as
    a new C-ordered array, in one loop that LLVM vectorises (products and sums contracted into
    fused multiply-adds; NumPy's error model, whose division by zero is inf, not an exception
    whose branch would keep the loop scalar)."""
    @njit(fastmath={"contract"}, error_model="numpy")
    def over(a):
        out = np.empty(a.shape, np.float64)
        fo = out.reshape(-1)
        fa = np.ascontiguousarray(a).reshape(-1)
        for i in range(fa.size):
            fo[i] = scalar(fa[i])
        return out
    return over


exp_array = _over_arrays(_exp1)
log_array = _over_arrays(_log1)


def exp(x, out=None):
    raise NotImplementedError("s2sad: runs inside numba-compiled derivatives only")


def log(x, out=None):
    raise NotImplementedError("s2sad: runs inside numba-compiled derivatives only")


def _version(stub, ufunc, over):
    """Overload ``stub`` as ``ufunc``: ``over`` for a float64 array without ``out=``, numba's own
    ``ufunc`` otherwise."""
    @overload(stub)
    def _typed(x, out=None):
        if isinstance(x, nt.Array) and x.dtype == nt.float64 and x.ndim >= 1 and \
                (out is None or isinstance(out, nt.NoneType)):
            return lambda x, out=None: over(x)
        if out is None or isinstance(out, nt.NoneType):
            return lambda x, out=None: ufunc(x)
        return lambda x, out=None: ufunc(x, out)


_version(exp, np.exp, exp_array)
_version(log, np.log, log_array)
