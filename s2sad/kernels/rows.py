"""Adjoints of reductions along the last axis, one CuPy kernel each.

:func:`extremum_adjoint` is the adjoint of ``max``/``min`` over the last axis (the ``s -
s.max(-1, keepdims=True)`` of every softmax): ``g`` shared evenly among the elements equal to the
extremum.  The general path (``rules/numpy/reductions.extremum``) launches five kernels for it
(``a == ans``, the tie count, ``maximum(n, 1)``, the division, the product with the mask), which
on a small step costs the host ~80 us; here one warp per row counts the ties and writes the row.
The values are the general path's, bit for bit: ``v = g / max(count, 1)`` in the arrays' dtype,
written where ``a == ans`` and ``0 * v`` elsewhere (``mask * v`` with a boolean mask).
"""
import numpy as np

from .device import is_cupy
from .elementwise import built

_CTYPES = {np.dtype(np.float32): "float", np.dtype(np.float64): "double"}
_KERNELS = {}                   # dtype -> kernel, or None where it did not build
_NEW = object()
_WARPS = 8                      # rows per block of 256 threads


def _kernel(dt):
    import cupy
    return cupy.RawKernel(r"""
extern "C" __global__ void s2sad_extremum_adjoint(
        const __T__* __restrict__ a, const __T__* __restrict__ m, const __T__* __restrict__ g,
        __T__* __restrict__ out, const long long rows, const long long n) {
    const long long row = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const int lane = threadIdx.x & 31;
    if (row >= rows) return;                 // (the whole warp: one row per warp)
    const __T__* ar = a + row * n;
    __T__* o = out + row * n;
    const __T__ mv = m[row];
    long long c = 0;
    for (long long j = lane; j < n; j += 32) c += (ar[j] == mv);
    for (int s = 16; s > 0; s >>= 1) c += __shfl_xor_sync(0xffffffffu, c, s);
    const __T__ v = g[row] / (__T__)(c > 1 ? c : 1);
    for (long long j = lane; j < n; j += 32) o[j] = (ar[j] == mv) ? v : (__T__)0 * v;
}
""".replace("__T__", _CTYPES[dt]), "s2sad_extremum_adjoint", options=("--fmad=false",))


def _last_axis(axis, ndim):
    if type(axis) is tuple and len(axis) == 1:
        axis = axis[0]
    if axis is None:
        return ndim == 1
    return type(axis) is int and axis in (-1, ndim - 1)


def extremum_adjoint(g, ans, a, axis, keepdims):
    """The adjoint of ``a.max(axis, keepdims=keepdims)`` (or min: the same) for cotangent ``g``
    and result ``ans``, as one kernel, when ``a`` is a C-contiguous CuPy array of float32 or
    float64 reduced along its last axis and ``g``, ``ans`` are C-contiguous CuPy arrays of its
    dtype and the result's shape; None otherwise (the caller's general path)."""
    t = type(a)
    if not is_cupy(a) or not hasattr(a, "flags") or a.ndim == 0 or \
            a.dtype not in _CTYPES or not _last_axis(axis, a.ndim) or not a.flags.c_contiguous \
            or a.size == 0:
        return None
    want = a.shape[:-1] + ((1,) if keepdims else ())
    for x in (g, ans):
        if type(x) is not t or x.dtype != a.dtype or x.shape != want or \
                not x.flags.c_contiguous:
            return None
    n = a.shape[-1]
    rows = a.size // n
    k = _KERNELS.get(a.dtype, _NEW)
    if k is _NEW:               # (None, kept, where it did not build: the general path)
        k = _KERNELS[a.dtype] = built(lambda: _kernel(a.dtype), "the extremum adjoint kernel")
    if k is None:
        return None
    out = t(a.shape, a.dtype)
    k((-(-rows // _WARPS),), (32 * _WARPS,), (a, ans, g, out, np.int64(rows), np.int64(n)))
    return out
