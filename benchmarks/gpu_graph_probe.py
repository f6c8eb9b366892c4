"""What whole-step CUDA graphs (issue 14 item 2, ``graph=True``) need from CuPy, cuBLAS and Numba.

    python benchmarks/gpu_graph_probe.py            # on a CUDA machine with CuPy (and numba-cuda)

Self-contained: each probe runs in try/except and prints one line, OK or FAIL with a short error,
then a few numbers.  Probes:

  i    CuPy stream capture of elementwise ops and reductions: default pool, a private pool
       (``cupy.cuda.MemoryPool`` through ``using_allocator``), ``MemoryAsyncPool``; replay reads new
       input values; what a host synchronisation inside capture raises and whether the stream is
       usable afterwards.
  ii   ``a @ b`` during capture (expected: NotImplementedError from CuPy's cuBLAS ``setStream``).
  iii  cuBLAS during capture: CuPy's wrapper ``cupy_backends.cuda.libs.cublas.sgemm`` (its every
       call goes through ``setStream``, which raises while the stream captures: cupy_backends/cuda/
       libs/cublas.pyx), then cuBLAS itself through ctypes on a private handle (libcublas found in
       /proc/self/maps): cublasSgemm_v2 and cublasGemmStridedBatchedEx, a user workspace
       (cublasSetWorkspace_v2), device-pointer scalars vs host-pointer scalars.
  iv   a Numba CUDA kernel launched on the capture stream (``cuda.external_stream(stream.ptr)``).
  v    replay against eager for a 30-op elementwise chain (small and large arrays).
  vi   if s2sad's own graph-safe matmul (s2sad/kernels/gemm.py) is importable: its results against
       CuPy's for several layouts, batches and dtypes, eagerly and under capture.
  Measured on the H200 (2026-12-02, CuPy 14.2, CUDA 13.2): i.a, i.b, i.d, ii-v OK; i.c (MemoryAsyncPool)
  fails with cudaErrorInvalidValue, so graph mode uses a private MemoryPool; a host sync inside
  capture raises CuPy's RuntimeError('the current stream is capturing, so D2H transfers are
  disallowed') before CUDA sees it, and end_capture still succeeds; the 30-op chain replays 8.8x
  faster than eager at 1K elements (the same at 16M).
  vii  s2sad's graph=True on a small MLP and attention step: gradients against graph=False (also
       after the inputs change), fallback warnings, ms per call.  PROBE_TRACE=1 prints tracebacks.
"""
import ctypes
import os
import sys
import time
import traceback

import numpy as np

np.row_stack = getattr(np, "row_stack", np.vstack)      # numba-cuda with NumPy 2.5
import cupy as cp  # noqa: E402

RESULTS = []


def report(name, fn):
    try:
        extra = fn()
        RESULTS.append((name, "OK"))
        print(f"OK    {name}" + (f": {extra}" if extra else ""), flush=True)
    except Exception as e:                          # noqa: BLE001 (a probe reports every failure)
        RESULTS.append((name, "FAIL"))
        msg = f"{type(e).__name__}: {e}".replace("\n", " ")[:300]
        print(f"FAIL  {name}: {msg}", flush=True)
        if os.environ.get("PROBE_TRACE"):
            traceback.print_exc()


def chain(x, n=30):
    """n elementwise ops."""
    y = x
    for i in range(n // 3):
        y = y * 1.0001
        y = cp.tanh(y)
        y = y + 0.5
    return y


def capture(fn, stream=None):
    """(graph, result of fn) captured on a fresh non-blocking stream."""
    s = stream or cp.cuda.Stream(non_blocking=True)
    with s:
        s.begin_capture()
        try:
            out = fn()
        finally:
            g = s.end_capture()
    return g, out, s


# -- i: elementwise and reductions --------------------------------------------------------------

def p_elementwise_default_pool():
    x = cp.random.rand(1000).astype(cp.float32)
    chain(x).sum()                               # warm: compile + load kernels
    g, out, s = capture(lambda: (chain(x) * x).sum(axis=0))     # (chain alone saturates)
    g.launch(s)
    s.synchronize()
    want = float((chain(x) * x).sum())
    got1 = float(out)
    x[...] = x * 0.5
    g.launch(s)
    s.synchronize()
    want2 = float((chain(x) * x).sum())
    got2 = float(out)
    assert abs(got1 - want) < 1e-3 * abs(want), (got1, want)
    assert abs(got2 - want2) < 1e-3 * abs(want2), (got2, want2)
    return f"replay {got1:.5g}=={want:.5g}, after input change {got2:.5g}=={want2:.5g}"


def p_private_pool():
    pool = cp.cuda.MemoryPool()
    x = cp.random.rand(4096).astype(cp.float32)
    chain(x).sum()
    with cp.cuda.using_allocator(pool.malloc):
        g, out, s = capture(lambda: cp.max(chain(x), axis=0) + cp.mean(x))
    # eager allocations from the default pool must not land on the graph's memory
    junk = [cp.full(4096, 7.0, cp.float32) for _ in range(8)]
    g.launch(s)
    s.synchronize()
    want = float(cp.max(chain(x)) + cp.mean(x))
    assert abs(float(out) - want) < 1e-4 * abs(want)
    assert all(float(j[0]) == 7.0 for j in junk)
    return f"pool used {pool.used_bytes()} B, total {pool.total_bytes()} B"


def p_async_pool():
    if not hasattr(cp.cuda, "MemoryAsyncPool"):
        raise RuntimeError("no MemoryAsyncPool")
    apool = cp.cuda.MemoryAsyncPool()
    x = cp.random.rand(1000).astype(cp.float32)
    with cp.cuda.using_allocator(apool.malloc):
        chain(x).sum()
        g, out, s = capture(lambda: chain(x).sum())
        g.launch(s)
        s.synchronize()
        g.launch(s)                              # a second replay of a graph that allocates
        s.synchronize()
    return f"value {float(out):.5g}"


def p_host_sync_in_capture():
    x = cp.random.rand(100).astype(cp.float32)
    s = cp.cuda.Stream(non_blocking=True)
    err = end_err = None
    with s:
        s.begin_capture()
        try:
            y = x * 2
            float(y.sum())
        except Exception as e:                       # noqa: BLE001
            err = e
        try:
            s.end_capture()
        except Exception as e:                       # noqa: BLE001
            end_err = e
    # the stream is usable afterwards?
    with s:
        z = float((x * 3).sum())
    after = s.is_capturing() if hasattr(s, "is_capturing") else "?"
    return (f"in-capture: {type(err).__name__}: {str(err)[:90]!r}; end_capture: "
            f"{type(end_err).__name__}: {str(end_err)[:90]!r}; afterwards ok ({z:.3g}), "
            f"is_capturing={after}")


# -- ii: matmul ---------------------------------------------------------------------------------

def p_matmul_in_capture():
    a = cp.random.rand(64, 64).astype(cp.float32)
    (a @ a).sum()
    try:
        capture(lambda: a @ a)
    except NotImplementedError as e:
        return f"raises as expected: {e}"
    return "no error: CuPy captures matmuls now"


# -- iii: cuBLAS ---------------------------------------------------------------------------------

def p_cupy_cublas_wrapper():
    from cupy_backends.cuda.libs import cublas
    a = cp.random.rand(32, 32).astype(cp.float32)
    c = cp.empty_like(a)
    h = cp.cuda.device.get_cublas_handle()
    one = np.array(1.0, np.float32)
    zero = np.array(0.0, np.float32)
    try:
        capture(lambda: cublas.sgemm(h, 0, 0, 32, 32, 32, one.ctypes.data, a.data.ptr, 32,
                                     a.data.ptr, 32, zero.ctypes.data, c.data.ptr, 32))
    except NotImplementedError as e:
        return f"raises (setStream wrapper): {e}"
    return "no error"


_LIB = []


def libcublas():
    if _LIB:
        return _LIB[0]
    cp.cuda.device.get_cublas_handle()               # makes CuPy load libcublas
    path = None
    with open("/proc/self/maps") as f:
        for line in f:
            p = line.split()[-1]
            if "libcublas.so" in os.path.basename(p) and "Lt" not in os.path.basename(p):
                path = p
                break
    if path is None:
        raise RuntimeError("libcublas not found in /proc/self/maps")
    lib = ctypes.CDLL(path)
    _LIB.append(lib)
    return lib


def check(status, what):
    if status != 0:
        raise RuntimeError(f"{what} returned cuBLAS status {status}")


class Handle:
    """A private cuBLAS handle with a workspace; pointer mode as asked."""

    def __init__(self, device_scalars=True, workspace=32 << 20):
        lib = libcublas()
        self.lib = lib
        h = ctypes.c_void_p()
        check(lib.cublasCreate_v2(ctypes.byref(h)), "cublasCreate_v2")
        self.h = h
        self.ws = cp.empty(workspace, cp.uint8)
        check(lib.cublasSetWorkspace_v2(h, ctypes.c_void_p(self.ws.data.ptr),
                                        ctypes.c_size_t(workspace)), "cublasSetWorkspace_v2")
        check(lib.cublasSetPointerMode_v2(h, 1 if device_scalars else 0), "SetPointerMode")
        self.device_scalars = device_scalars

    def set_stream(self):
        check(self.lib.cublasSetStream_v2(self.h, ctypes.c_void_p(cp.cuda.get_current_stream().ptr)),
              "cublasSetStream_v2")


def sgemm_rowmajor(hd, a, b, c, alpha, beta):
    """c = a @ b for C-contiguous float32 matrices (column-major: c^T = b^T a^T)."""
    m, k = a.shape
    n = b.shape[1]
    hd.set_stream()
    if hd.device_scalars:
        pa, pb = ctypes.c_void_p(alpha.data.ptr), ctypes.c_void_p(beta.data.ptr)
    else:
        pa, pb = ctypes.byref(ctypes.c_float(alpha)), ctypes.byref(ctypes.c_float(beta))
    check(hd.lib.cublasSgemm_v2(hd.h, 0, 0, n, m, k, pa, ctypes.c_void_p(b.data.ptr), n,
                                ctypes.c_void_p(a.data.ptr), k, pb, ctypes.c_void_p(c.data.ptr), n),
          "cublasSgemm_v2")


def _gemm_capture(device_scalars):
    hd = Handle(device_scalars)
    a = cp.random.rand(48, 40).astype(cp.float32)
    b = cp.random.rand(40, 24).astype(cp.float32)
    c = cp.empty((48, 24), cp.float32)
    if device_scalars:
        alpha, beta = cp.ones((), cp.float32), cp.zeros((), cp.float32)
    else:
        alpha, beta = 1.0, 0.0
    sgemm_rowmajor(hd, a, b, c, alpha, beta)        # warm: loads the kernel
    cp.cuda.get_current_stream().synchronize()

    def body():
        t = cp.tanh(a)
        sgemm_rowmajor(hd, t, b, c, alpha, beta)
        return c * 2.0
    g, out, s = capture(body)
    g.launch(s)
    s.synchronize()
    e1 = float(cp.abs(out - 2.0 * (cp.tanh(a) @ b)).max())
    a[...] = cp.random.rand(48, 40).astype(cp.float32)
    g.launch(s)
    s.synchronize()
    e2 = float(cp.abs(out - 2.0 * (cp.tanh(a) @ b)).max())
    assert e1 < 1e-4 and e2 < 1e-4, (e1, e2)
    # CuPy's own matmul still right afterwards (its handle untouched)
    e3 = float(cp.abs(a @ b - cp.asarray(cp.asnumpy(a) @ cp.asnumpy(b))).max())
    assert e3 < 1e-3, e3
    return f"max err {e1:.2g}, after input change {e2:.2g}; CuPy matmul after: {e3:.2g}"


def p_ctypes_sgemm_device_scalars():
    return _gemm_capture(True)


def p_ctypes_sgemm_host_scalars():
    return _gemm_capture(False)


_DT = {np.dtype(np.float16): (2, 68, np.float32), np.dtype(np.float32): (0, 68, np.float32),
       np.dtype(np.float64): (1, 70, np.float64), np.dtype(np.complex64): (4, 68, np.complex64),
       np.dtype(np.complex128): (5, 70, np.complex128)}


def gemm_ex_batched(hd, a, b):
    """(batch, m, k) @ (batch, k, n), C-contiguous, through cublasGemmStridedBatchedEx."""
    bt, m, k = a.shape
    n = b.shape[2]
    dtype = a.dtype
    cuda_t, compute, scalar_t = _DT[dtype]
    c = cp.empty((bt, m, n), dtype)
    alpha, beta = cp.ones((), scalar_t), cp.zeros((), scalar_t)
    hd.set_stream()
    ll = ctypes.c_longlong
    check(hd.lib.cublasGemmStridedBatchedEx(
        hd.h, 0, 0, n, m, k, ctypes.c_void_p(alpha.data.ptr),
        ctypes.c_void_p(b.data.ptr), cuda_t, n, ll(k * n),
        ctypes.c_void_p(a.data.ptr), cuda_t, k, ll(m * k),
        ctypes.c_void_p(beta.data.ptr), ctypes.c_void_p(c.data.ptr), cuda_t, n, ll(m * n),
        bt, compute, -1), "cublasGemmStridedBatchedEx")
    return c, (alpha, beta)


def p_gemm_ex_batched():
    hd = Handle(True)
    out = []
    for dt in (np.float16, np.float32, np.float64, np.complex64, np.complex128):
        a = cp.asarray(np.random.rand(3, 20, 12)).astype(dt)
        b = cp.asarray(np.random.rand(3, 12, 9)).astype(dt)
        gemm_ex_batched(hd, a, b)
        cp.cuda.get_current_stream().synchronize()
        keep = []
        g, c, s = capture(lambda: keep.append(gemm_ex_batched(hd, a, b)) or keep[-1][0])
        g.launch(s)
        s.synchronize()
        ref = a.astype(np.complex128 if a.dtype.kind == "c" else np.float64) @ \
            b.astype(np.complex128 if a.dtype.kind == "c" else np.float64)
        err = float(cp.abs(c - ref).max() / cp.abs(ref).max())
        assert err < (1e-2 if dt == np.float16 else 1e-5), (dt, err)
        out.append(f"{np.dtype(dt).name} {err:.1g}")
    return ", ".join(out)


# -- iv: numba ------------------------------------------------------------------------------------

def p_numba_kernel_in_capture():
    from numba import cuda

    @cuda.jit
    def axpy(y, x, a):
        i = cuda.grid(1)
        if i < y.size:
            y[i] += a * x[i]
    x = cp.arange(1000, dtype=cp.float32)
    y = cp.zeros(1000, cp.float32)
    ns0 = cuda.external_stream(cp.cuda.get_current_stream().ptr)
    axpy[8, 128, ns0](y, x, 1.0)                     # compile + load
    cp.cuda.get_current_stream().synchronize()
    y[...] = 0

    s = cp.cuda.Stream(non_blocking=True)
    ns = cuda.external_stream(s.ptr)

    def body():
        z = x * 2
        axpy[8, 128, ns](y, z, 0.5)
        return y + 1
    g, out, s = capture(body, s)
    g.launch(s)
    g.launch(s)
    s.synchronize()
    want = np.arange(1000, dtype=np.float32) * 2.0 + 1
    err = float(np.abs(cp.asnumpy(out) - want).max())
    assert err < 1e-3, err
    return f"2 replays accumulate: max err {err:.2g}"


# -- v: timing -------------------------------------------------------------------------------------

def _best(fn, n=200):
    best = 1e9
    for _ in range(5):
        cp.cuda.Device().synchronize()
        t = time.perf_counter()
        for _ in range(n):
            fn()
        cp.cuda.Device().synchronize()
        best = min(best, (time.perf_counter() - t) / n)
    return best * 1e6


def p_timing():
    out = []
    for size in (1024, 1 << 24):
        x = cp.random.rand(size).astype(cp.float32)
        s = cp.cuda.Stream(non_blocking=True)
        with s:
            chain(x)
            s.synchronize()
            pool = cp.cuda.MemoryPool()
            with cp.cuda.using_allocator(pool.malloc):
                g, _, _ = capture(lambda: chain(x), s)
            eager = _best(lambda: chain(x), 50 if size > 4096 else 200)
            replay = _best(lambda: g.launch(s), 50 if size > 4096 else 200)
        out.append(f"n={size}: eager {eager:.1f} us, replay {replay:.1f} us "
                   f"({eager / replay:.1f}x)")
    return "; ".join(out)


# -- vi: s2sad's graph-safe matmul -----------------------------------------------------------------

def p_s2sad_gemm():
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from s2sad.kernels import gemm
    rng = np.random.default_rng(0)
    cases = [((5, 7), (7, 3)), ((7,), (7, 3)), ((5, 7), (7,)), ((2, 3, 5, 7), (7, 4)),
             ((2, 3, 5, 7), (2, 3, 7, 4)), ((3, 1, 5, 7), (4, 7, 2)), ((6, 4), (4, 6))]
    errs = []
    for dt in (np.float32, np.float64, np.complex64):
        for sa, sb in cases:
            a = cp.asarray(rng.standard_normal(sa)).astype(dt)
            b = cp.asarray(rng.standard_normal(sb)).astype(dt)
            fa = a.swapaxes(-1, -2).copy().swapaxes(-1, -2) if a.ndim > 1 else a   # F-order
            for ta, tb in ((a, b), (fa, b),
                           (a, b[..., ::-1] if b.ndim > 1 else b)):
                ref = cp.matmul(ta, tb)
                with gemm.graph_matmuls():
                    got = gemm.matmul(ta, tb)
                errs.append(float(cp.abs(got - ref).max() / (cp.abs(ref).max() + 1e-30)))
                cp.cuda.get_current_stream().synchronize()
                pool = cp.cuda.MemoryPool()
                with cp.cuda.using_allocator(pool.malloc), gemm.graph_matmuls():
                    g, out, s = capture(lambda: gemm.matmul(ta, tb))
                g.launch(s)
                s.synchronize()
                errs.append(float(cp.abs(out - ref).max() / (cp.abs(ref).max() + 1e-30)))
    worst = max(errs)
    assert worst < 1e-4, worst
    return f"{len(errs)} products (eager + captured), worst relative error {worst:.2g}"


def p_s2sad_graph_steps():
    """s2sad's graph=True on the issue's small MLP and attention steps (benchmarks/gpu_step.py):
    gradients against graph=False, any GraphFallbackWarning, ms per call of both."""
    import warnings
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import s2sad
    import gpu_step
    rng = np.random.default_rng(0)
    f32 = lambda *s: cp.asarray(rng.standard_normal(s) * 0.3, dtype=cp.float32)   # noqa: E731
    t = cp.asarray(np.eye(10)[rng.integers(0, 10, 64)], dtype=cp.float32)
    cases = [("mlp N64", gpu_step.mlp_step,
              [f32(32, 64), f32(64), f32(64, 64), f32(64), f32(64, 10), f32(10)], [f32(64, 32), t]),
             ("attention B4 T32 D64", gpu_step.attention_step,
              [f32(64, 64) for _ in range(4)], [f32(4, 32, 64), f32(4, 32, 128)])]
    out = []
    for name, step, params, data in cases:
        wrt = tuple(range(len(params)))
        plain = s2sad.value_and_grad(step, wrt=wrt)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            graph = s2sad.value_and_grad(step, wrt=wrt, graph=True)
            for _ in range(3):
                v, g = graph(*params, *data)
            params2 = [p * 1.5 for p in params]
            v2, g2 = graph(*params2, *data)
        v0, g0 = plain(*params, *data)
        v20, g20 = plain(*params2, *data)
        err = max(float(cp.abs(a - b).max() / (cp.abs(b).max() + 1e-30))
                  for a, b in zip(g + g2, g0 + g20))
        ms_plain = _best(lambda: plain(*params, *data), 20) / 1e3
        ms_graph = _best(lambda: graph(*params, *data), 20) / 1e3
        warned = "; ".join(str(x.message).splitlines()[0][:160] for x in w)
        out.append(f"{name}: max rel grad err {err:.2g}, value {float(v):.6g} vs {float(v0):.6g}, "
                   f"plain {ms_plain:.3f} ms, graph {ms_graph:.3f} ms"
                   + (f", WARNINGS: {warned}" if warned else ""))
    return " | ".join(out)


def main():
    print(f"CuPy {cp.__version__}, CUDA runtime {cp.cuda.runtime.runtimeGetVersion()}, "
          f"device {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}, "
          f"Python {sys.version.split()[0]}, NumPy {np.__version__}")
    try:
        import numba_cuda
        print(f"numba-cuda {getattr(numba_cuda, '__version__', '?')}")
    except ImportError:
        pass
    for name, fn in [
            ("i.a elementwise+reduction capture, default pool, replay + new input", p_elementwise_default_pool),
            ("i.b capture with a private MemoryPool (using_allocator)", p_private_pool),
            ("i.c capture with MemoryAsyncPool, two replays", p_async_pool),
            ("i.d host sync (float(y.sum())) during capture", p_host_sync_in_capture),
            ("ii  a @ b during capture", p_matmul_in_capture),
            ("iii.a cupy_backends cublas.sgemm during capture", p_cupy_cublas_wrapper),
            ("iii.b ctypes cublasSgemm_v2, device scalars + workspace", p_ctypes_sgemm_device_scalars),
            ("iii.c ctypes cublasSgemm_v2, host scalars + workspace", p_ctypes_sgemm_host_scalars),
            ("iii.d ctypes cublasGemmStridedBatchedEx f16/f32/f64/c64/c128", p_gemm_ex_batched),
            ("iv  numba kernel on the capture stream (external_stream)", p_numba_kernel_in_capture),
            ("v   30-op chain: eager vs replay", p_timing),
            ("vi  s2sad.kernels.gemm.matmul eager + captured", p_s2sad_gemm),
            ("vii s2sad graph=True steps vs graph=False", p_s2sad_graph_steps)]:
        report(name, fn)
    print("summary:", " ".join(f"{n.split()[0]}={r}" for n, r in RESULTS))


if __name__ == "__main__":
    main()
