"""A matrix product that CUDA stream capture accepts, for graph mode (``graph=True``).

CuPy refuses every cuBLAS call while a stream captures: each of its cuBLAS wrappers first calls
``cupy_backends.cuda.libs.cublas.setStream``, which raises ``NotImplementedError('calling cuBLAS API
during stream capture is currently unsupported')`` when ``runtime.streamIsCapturing(stream)``.
cuBLAS itself records into a graph under NVIDIA's documented conditions: a workspace set by the
user (``cublasSetWorkspace``) and scalars passed by device pointer.  So, in graph mode only, matrix
products go to ``cublasGemmStridedBatchedEx`` directly, through ctypes, from the ``libcublas`` CuPy
has already loaded, on a private handle (per thread and device: its stream, workspace and pointer
mode never touch CuPy's own handle).

:func:`matmul` is the one entry point: ``a @ b`` everywhere, except on CuPy arrays inside
:func:`graph_matmuls` (the thread that prepares and captures a graph), where it is the direct
cuBLAS call.  Operands are passed in place when their last two axes are row- or column-contiguous
(transposed views need no copy) and their batch axes have one stride (or broadcast from one
matrix); otherwise they are copied first (elementwise copies capture fine).  dtypes float16,
float32, float64, complex64, complex128 (float16 accumulates in float32, like CuPy's); others fall
back to ``a @ b``.
"""
import contextlib
import ctypes
import math
import os
import threading

import numpy as np

_state = threading.local()

# cudaDataType, cublasComputeType_t, scalar dtype (CUBLAS_COMPUTE_32F = 68, _64F = 70)
_TYPES = {np.dtype(np.float16): (2, 68, np.float32), np.dtype(np.float32): (0, 68, np.float32),
          np.dtype(np.float64): (1, 70, np.float64), np.dtype(np.complex64): (4, 68, np.complex64),
          np.dtype(np.complex128): (5, 70, np.complex128)}
_WORKSPACE = 32 << 20
_N, _T = 0, 1
_lib = []
_lock = threading.Lock()


def active():
    """True on a thread inside :func:`graph_matmuls`."""
    return getattr(_state, "on", False)


@contextlib.contextmanager
def graph_matmuls():
    """Graph mode on this thread: :func:`matmul` of CuPy arrays calls cuBLAS directly
    (graph-capturable), and the device buffers kernels read that the caller does not own (cached
    tables, this handle's workspace and scalars) are collected, through :func:`retain`, in the
    list this yields: a captured graph keeps them alive."""
    before, kept = active(), getattr(_state, "keep", None)
    _state.on, _state.keep = True, []
    try:
        yield _state.keep
    finally:
        _state.on, _state.keep = before, kept


def retain(obj):
    """Inside :func:`graph_matmuls`, keep ``obj`` alive as long as the graph being made."""
    keep = getattr(_state, "keep", None)
    if keep is not None:
        keep.append(obj)


def matmul(a, b):
    """``a @ b``; inside :func:`graph_matmuls`, on CuPy arrays, through the capturable route."""
    if not getattr(_state, "on", False) or type(a).__module__.split(".")[0] != "cupy" or \
            type(b).__module__.split(".")[0] != "cupy":
        return a @ b
    return _gemm(a, b)


def prepare():
    """Create this thread's handle for the current device (do it before capture: creating a
    handle synchronises)."""
    _handle()


def _library():
    with _lock:
        if _lib:
            return _lib[0]
        import cupy
        cupy.cuda.device.get_cublas_handle()      # makes CuPy load libcublas
        path = None
        with open("/proc/self/maps") as f:
            for line in f:
                p = line.split()[-1]
                base = os.path.basename(p)
                if base.startswith("libcublas.so"):
                    path = p
                    break
        if path is None:
            raise RuntimeError("graph mode: libcublas is not loaded in this process")
        lib = ctypes.CDLL(path)
        v, i, ll = ctypes.c_void_p, ctypes.c_int, ctypes.c_longlong
        lib.cublasGemmStridedBatchedEx.argtypes = [v, i, i, i, i, i, v, v, i, i, ll, v, i, i, ll,
                                                   v, v, i, i, ll, i, i, i]
        lib.cublasCreate_v2.argtypes = [ctypes.POINTER(v)]
        lib.cublasSetStream_v2.argtypes = [v, v]
        lib.cublasSetWorkspace_v2.argtypes = [v, v, ctypes.c_size_t]
        lib.cublasSetPointerMode_v2.argtypes = [v, i]
        _lib.append(lib)
        return lib


def _check(status, what):
    if status != 0:
        raise RuntimeError(f"graph mode: {what} returned cuBLAS status {status}")


class _Handle:
    def __init__(self, lib):
        import cupy
        self.lib = lib
        h = ctypes.c_void_p()
        _check(lib.cublasCreate_v2(ctypes.byref(h)), "cublasCreate_v2")
        self.h = h
        self.workspace = cupy.empty(_WORKSPACE, cupy.uint8)
        _check(lib.cublasSetWorkspace_v2(h, self.workspace.data.ptr, _WORKSPACE),
               "cublasSetWorkspace_v2")
        _check(lib.cublasSetPointerMode_v2(h, 1), "cublasSetPointerMode_v2")   # device scalars
        # made now, not during a capture (where their fill would only be recorded)
        self.scalars = {t: (cupy.ones((), t), cupy.zeros((), t))
                        for t in {s for _, _, s in _TYPES.values()}}
        cupy.cuda.Device().synchronize()


def _handle():
    import cupy
    dev = cupy.cuda.Device().id
    handles = getattr(_state, "handles", None)
    if handles is None:
        handles = _state.handles = {}
    hd = handles.get(dev)
    if hd is None:
        if cupy.cuda.runtime.streamIsCapturing(cupy.cuda.get_current_stream().ptr):
            raise RuntimeError("graph mode: a matrix product met during capture that did not run "
                               "during the warm-up call")
        hd = handles[dev] = _Handle(_library())
    return hd


def _operand(x, batch, r, c):
    """(array, batch stride, cuBLAS op, leading dimension) of a row-major r x c matrix stack."""
    import cupy
    item = x.itemsize
    nbatch = len(batch)
    xb = (1,) * (nbatch - (x.ndim - 2)) + x.shape[:-2]
    for _ in range(2):
        st = x.strides
        ok = all(s % item == 0 and s >= 0 for s in st)
        if ok:
            rs, cs = st[-2] // item, st[-1] // item
            if (c == 1 or cs == 1) and (r == 1 or rs >= c):
                op, ld = _N, rs if r > 1 else max(1, c)
            elif (r == 1 or rs == 1) and (c == 1 or cs >= r):
                op, ld = _T, cs if c > 1 else max(1, r)
            else:
                ok = False
        if ok:
            if math.prod(xb) == 1:
                return x, 0, op, ld
            if xb == batch:
                bstr = [s // item for s in st[:-2]]
                bshape = x.shape[:-2]
                dims = [d for d in range(len(bshape)) if bshape[d] > 1]
                inner = dims[-1]
                sb = bstr[inner]
                if all(bstr[d] == sb * math.prod(bshape[d + 1:]) for d in dims):
                    return x, sb, op, ld
        # copy: broadcast batch axes made real, matrices row-major
        x = cupy.ascontiguousarray(cupy.broadcast_to(x, batch + x.shape[-2:]))
        xb = batch
    raise AssertionError("unreachable: a C-contiguous operand always fits")


def _gemm(a, b):
    import cupy
    dt = np.result_type(a.dtype, b.dtype)
    if dt not in _TYPES or a.ndim == 0 or b.ndim == 0:
        return a @ b
    a = a.astype(dt, copy=False)
    b = b.astype(dt, copy=False)
    a1, b1 = a.ndim == 1, b.ndim == 1
    if a1:
        a = a[None, :]
    if b1:
        b = b[:, None]
    m, k = a.shape[-2:]
    k2, n = b.shape[-2:]
    if k != k2:
        return a @ b                      # CuPy's own shape error
    batch = tuple(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
    if k == 0 or m * n * math.prod(batch) == 0:
        out = cupy.zeros(batch + (m, n), dt)
    else:
        hd = _handle()
        retain(hd)
        A, sa, opa, lda = _operand(a, batch, m, k)
        B, sb, opb, ldb = _operand(b, batch, k, n)
        out = cupy.empty(batch + (m, n), dt)
        cuda_t, compute, scalar_t = _TYPES[dt]
        one, zero = hd.scalars[scalar_t]
        lib = hd.lib
        _check(lib.cublasSetStream_v2(hd.h, cupy.cuda.get_current_stream().ptr),
               "cublasSetStream_v2")
        # row-major C = A B is column-major C^T = B^T A^T
        _check(lib.cublasGemmStridedBatchedEx(
            hd.h, opb, opa, n, m, k, one.data.ptr,
            B.data.ptr, cuda_t, ldb, sb,
            A.data.ptr, cuda_t, lda, sa,
            zero.data.ptr, out.data.ptr, cuda_t, n, m * n,
            math.prod(batch), compute, -1), "cublasGemmStridedBatchedEx")
    if a1:
        out = out[..., 0, :]
    if b1:
        out = out[..., 0]
    return out
