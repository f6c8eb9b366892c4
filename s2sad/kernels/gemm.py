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
import collections
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
    """``a @ b``; on CuPy arrays, inside :func:`graph_matmuls`, through the capturable route, and
    outside it where :func:`_gains` says the direct route saves device work."""
    ta, tb = type(a), type(b)
    if ta is _NDARRAY or tb is _NDARRAY or not (_CUPY.get(ta) or _is_cupy(ta)) or \
            not (_CUPY.get(tb) or _is_cupy(tb)):
        return a @ b
    if getattr(_state, "on", False):
        return _gemm(a, b)
    if _DIRECT and _gains(a, b):
        try:
            return _gemm(a, b)
        except RuntimeError as e:       # a cuBLAS status: s2sad's bug, never the user's
            _off(e)
    return a @ b


_NDARRAY = np.ndarray
_CUPY = {}      # type -> whether it is CuPy's (its module's top package is cupy)


def _is_cupy(t):
    r = _CUPY[t] = t.__module__.split(".")[0] == "cupy"
    return r


def _off(e):
    """Plain mode: the direct route failed; CuPy's product from now on (with one warning)."""
    global _DIRECT
    _DIRECT = False
    from .. import logs
    logs.log.warning("s2sad: the direct cuBLAS product failed (%s); CuPy's matmul runs the "
                     "products from now on", e)


# S2SAD_CUPY_GEMM=0: outside graph mode, every CuPy product is CuPy's own ``a @ b``
_DIRECT = os.environ.get("S2SAD_CUPY_GEMM", "1") != "0"
# Which products take the direct route in plain mode.  Measured on the H200 host
# (benchmarks/gpu_hostcost.py, float32, 2026-12-02): CuPy's ``a @ w`` of a (4, 32, 64) stack and a
# (64, 64) matrix costs ~96 us of host time (it copies non-contiguous stacks and builds pointer
# arrays: two more launches), this route ~38 (a plan kept per shapes and strides, one cuBLAS
# call); a two-dimensional product costs CuPy ~29 (its ``dot``: no copies; transposed matrices
# read in place) and this route ~37.  So every real product of one dtype with a stacked operand
# takes it (small steps are host-bound, large ones save the copies), two-dimensional ones do not.
# S2SAD_CUPY_GEMM=0 turns it off.


def _gains(a, b):
    """True when the direct route is cheaper than CuPy's ``matmul``: for stacks (ndim > 2) CuPy
    copies every operand that is not C-contiguous (a transposed matrix, the heads of a (B, T, H,
    d) array seen as (B, H, T, d), a slice) and runs a stack times one matrix as a batch of
    products where one product does; and at every size its host cost is higher (above).
    Two-dimensional products stay CuPy's (``dot``: no copies, less host time than this route)."""
    return a.dtype == b.dtype and a.dtype in _TYPES and (a.ndim > 2 or b.ndim > 2)


@contextlib.contextmanager
def device_products():
    """Plain mode (no graph) on CuPy arrays: derived callees run the sweeps whose products go
    through :func:`matmul` (s2sad.graphs.device_sweeps) too."""
    before = getattr(_state, "plain", False)
    _state.plain = True
    try:
        yield
    finally:
        _state.plain = before


def plain_active():
    return getattr(_state, "plain", False)


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
        lib.cublasGemmBatchedEx.argtypes = [v, i, i, i, i, i, v, v, i, i, v, i, i, v, v, i, i,
                                             i, i, i]
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
        self.stream = None              # the stream last set on the handle
        # made now, not during a capture (where their fill would only be recorded)
        self.scalars = {t: (cupy.ones((), t), cupy.zeros((), t))
                        for t in {s for _, _, s in _TYPES.values()}}
        # per product dtype: (cuBLAS type, compute type, addresses of its 1 and 0)
        self.args = {dt: (c, comp, self.scalars[st][0].data.ptr, self.scalars[st][1].data.ptr)
                     for dt, (c, comp, st) in _TYPES.items()}
        cupy.cuda.Device().synchronize()


def _handle():
    import cupy
    dev = cupy.cuda.runtime.getDevice()
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


def _layout(x, r, c):
    """(cuBLAS op, leading dimension) that reads the last two axes of ``x``, a row-major r x c
    matrix (stack), in place; None when neither axis has unit stride (a copy is needed)."""
    item = x.itemsize
    rs, cs = x.strides[-2], x.strides[-1]
    if r == 1:
        rs = c * item                   # (one row, or one column: that stride is never used)
    if c == 1:
        cs = item
    if rs % item or cs % item or rs < 0 or cs < 0:
        return None
    rs, cs = rs // item, cs // item
    if (c == 1 or cs == 1) and (r == 1 or rs >= c):
        return _N, rs if r > 1 else max(1, c)
    if (r == 1 or rs == 1) and (c == 1 or cs >= r):
        return _T, cs if c > 1 else max(1, r)
    return None


def _batch_strides(x, batch):
    """Element strides of ``x`` along the broadcast batch axes ``batch`` (0 where broadcast), or
    None (a stride that is not a whole number of elements, or negative)."""
    item = x.itemsize
    lead = len(batch) - (x.ndim - 2)
    out = []
    for d, n in enumerate(batch):
        if d < lead or x.shape[d - lead] == 1:
            out.append(0)
            continue
        s = x.strides[d - lead]
        if s % item or s < 0:
            return None
        out.append(s // item)
    return out


def _plan(a, b, batch, m, k, n):
    """How to run ``a @ b`` without copies: (a, b, op/ld of each, merged batch axes as
    [(size, stride_a, stride_b, stride_c)], at most three), copying only an operand whose
    matrices have no unit stride or whose strides are not whole elements (or, rarely, both when
    broadcasting leaves more than three batch axes that do not nest)."""
    import cupy
    ops = []
    for x, r, c in ((a, m, k), (b, k, n)):
        lay = _layout(x, r, c)
        st = _batch_strides(x, batch) if lay is not None else None
        if st is None:
            x = cupy.ascontiguousarray(x)
            lay, st = _layout(x, r, c), _batch_strides(x, batch)
            if lay is None or st is None:
                raise AssertionError(f"gemm: no layout for a C-contiguous {x.shape} operand")
        ops.append((x, lay, st))
    (a, la, sa), (b, lb, sb) = ops
    sc, acc = [], m * n
    for size in reversed(batch):
        sc.append(acc)
        acc *= size
    sc.reverse()
    axes = [(size, sa[d], sb[d], sc[d]) for d, size in enumerate(batch) if size > 1]
    merged = []
    for ax in axes:                 # adjacent axes whose strides nest become one axis
        if merged:
            size0, *st0 = merged[-1]
            size1, *st1 = ax
            if all(s0 == s1 * size1 for s0, s1 in zip(st0, st1)):
                merged[-1] = (size0 * size1,) + tuple(st1)
                continue
        merged.append(ax)
    if len(merged) > 3:             # broadcasting that interleaves: make both stacks real
        a = cupy.ascontiguousarray(cupy.broadcast_to(a, batch + (m, k)))
        b = cupy.ascontiguousarray(cupy.broadcast_to(b, batch + (k, n)))
        return _plan(a, b, batch, m, k, n)
    return a, b, la, lb, merged


_PTRS = []
_POINTERS = collections.OrderedDict()   # plain mode: (stream, addresses, axes) -> pointer arrays
_POINTERS_KEPT = 256


def _pointers_kernel():
    """One launch that writes the three pointer arrays of a batched product over up to three
    batch axes (byte offsets from each operand's base).  A RawKernel: its launch costs the host
    about half of an ElementwiseKernel's (benchmarks/gpu_hostcost.py)."""
    if not _PTRS:
        import cupy
        _PTRS.append(cupy.RawKernel(r"""
extern "C" __global__ void s2sad_gemm_pointers(
        long long* out, const long long nb, const long long pa, const long long pb,
        const long long pc, const long long n1, const long long n2, const long long a0,
        const long long a1, const long long a2, const long long b0, const long long b1,
        const long long b2, const long long c0, const long long c1, const long long c2) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= nb) return;
    const long long i0 = i / (n1 * n2), r = i % (n1 * n2), i1 = r / n2, i2 = r % n2;
    out[i] = pa + i0 * a0 + i1 * a1 + i2 * a2;
    out[i + nb] = pb + i0 * b0 + i1 * b1 + i2 * b2;
    out[i + 2 * nb] = pc + i0 * c0 + i1 * c1 + i2 * c2;
}""", "s2sad_gemm_pointers"))
    return _PTRS[0]


def _pointer_arrays(a, b, out, axes, item, count, stream):
    """The device array of the ``3 * count`` operand addresses of a pointer-array batch.  In
    plain mode it is kept per (stream, base addresses, batch axes): a training loop's products
    meet the same addresses again (CuPy's memory pool hands out the same blocks), and then no
    kernel runs at all.  While a graph is made it is fresh and lives as long as the graph."""
    import cupy
    capturing = active()
    key = (stream, a.data.ptr, b.data.ptr, out.data.ptr, tuple(axes), item)
    if not capturing:
        ptrs = _POINTERS.get(key)
        if ptrs is not None:
            return ptrs
    ptrs = cupy.empty(3 * count, np.int64)
    st = [ax[j] * item for j in (1, 2, 3) for ax in axes]
    args = (ptrs,) + tuple(np.int64(v) for v in (count, key[1], key[2], key[3], axes[1][0],
                                                   axes[2][0], *st))
    _pointers_kernel()((-(-count // 128),), (128,), args)
    if capturing:
        retain(ptrs)
    else:
        _POINTERS[key] = ptrs
        if len(_POINTERS) > _POINTERS_KEPT:
            _POINTERS.popitem(last=False)
    return ptrs


def _run(hd, dt, a, b, opa, lda, opb, ldb, m, n, k, axes, out):
    """C = A B (row-major) as column-major C^T = B^T A^T on handle ``hd``: one product, a
    strided batch (one batch axis), or a pointer-array batch (two or three axes that do not nest:
    the heads of a (B, T, H, d) array seen as (B, H, T, d))."""
    import cupy
    cuda_t, compute, one, zero = hd.args[dt]
    lib = hd.lib
    stream = cupy.cuda.get_current_stream().ptr
    if stream != getattr(hd, "stream", None):
        _check(lib.cublasSetStream_v2(hd.h, stream), "cublasSetStream_v2")
        hd.stream = stream
    if len(axes) <= 1:
        count, sa, sb, sc = axes[0] if axes else (1, 0, 0, m * n)
        _check(lib.cublasGemmStridedBatchedEx(
            hd.h, opb, opa, n, m, k, one,
            b.data.ptr, cuda_t, ldb, sb,
            a.data.ptr, cuda_t, lda, sa,
            zero, out.data.ptr, cuda_t, n, sc,
            count, compute, -1), "cublasGemmStridedBatchedEx")
        return
    axes = [(1, 0, 0, 0)] * (3 - len(axes)) + list(axes)
    count = math.prod(ax[0] for ax in axes)
    base = _pointer_arrays(a, b, out, axes, np.dtype(dt).itemsize, count, stream).data.ptr
    _check(lib.cublasGemmBatchedEx(
        hd.h, opb, opa, n, m, k, one,
        base + 8 * count, cuda_t, ldb,
        base, cuda_t, lda,
        zero, base + 16 * count, cuda_t, n,
        count, compute, -1), "cublasGemmBatchedEx")


_PLANS = {}                     # (shapes, strides, dtypes) -> a plan that needed no copy


def _gemm(a, b):
    key = (a.shape, a.strides, b.shape, b.strides, a.dtype, b.dtype)
    plan = _PLANS.get(key)
    if plan is None:
        got = _new_plan(a, b)
        if got is None:
            return a @ b
        plan, A, B = got
        if plan[-1]:            # an operand was copied: this plan is for the copies (not kept)
            return _gemm_planned(A, B, plan, shaped=True)
        if len(_PLANS) > 512:
            _PLANS.clear()
        _PLANS[key] = plan
    return _gemm_planned(a, b, plan)


def _new_plan(a, b):
    """(dtype, a 1-D, b 1-D, m, k, n, batch, op/ld of a and b, batch axes, rows, copied) for
    ``a @ b``, or None (CuPy's own ``a @ b``: other dtypes, 0-d operands, mismatched shapes)."""
    dt = np.result_type(a.dtype, b.dtype)
    if dt not in _TYPES or a.ndim == 0 or b.ndim == 0:
        return None
    a1, b1 = a.ndim == 1, b.ndim == 1
    sa = (1,) + a.shape if a1 else a.shape
    sb = b.shape + (1,) if b1 else b.shape
    m, k = sa[-2:]
    k2, n = sb[-2:]
    if k != k2:
        return None                      # CuPy's own shape error
    batch = tuple(np.broadcast_shapes(sa[:-2], sb[:-2]))
    if k == 0 or m * n * math.prod(batch) == 0:
        return (dt, a1, b1, m, k, n, batch, None, None, None, m, False), a, b
    A, B = _shaped(a, dt, a1, b1, True), _shaped(b, dt, a1, b1, False)
    A2, B2, la, lb, axes = _plan(A, B, batch, m, k, n)
    rows = m
    if len(axes) == 1 and axes[0][2] == 0 and la[0] == _N and axes[0][1] == m * la[1]:
        # a stack of matrices times one matrix, the stack's rows evenly spaced (x @ W with
        # x of shape (B, T, D)): one product of a (B*T, D) matrix
        rows, axes = m * axes[0][0], []
    return (dt, a1, b1, m, k, n, batch, la, lb, axes, rows, A2 is not A or B2 is not B), A2, B2


def _shaped(x, dt, a1, b1, left):
    if x.dtype != dt:
        x = x.astype(dt)
    if left and a1:
        return x[None, :]
    if not left and b1:
        return x[:, None]
    return x


def _gemm_planned(a, b, plan, shaped=False):
    import cupy
    dt, a1, b1, m, k, n, batch, la, lb, axes, rows, _ = plan
    if la is None:
        out = cupy.zeros(batch + (m, n), dt)
    else:
        A, B = (a, b) if shaped else (_shaped(a, dt, a1, b1, True), _shaped(b, dt, a1, b1, False))
        hd = _handle()
        retain(hd)
        out = cupy.empty(batch + (m, n), dt)
        _run(hd, dt, A, B, la[0], la[1], lb[0], lb[1], rows, n, k, axes, out)
    if a1:
        out = out[..., 0, :]
    if b1:
        out = out[..., 0]
    return out
