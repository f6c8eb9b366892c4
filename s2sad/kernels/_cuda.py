"""Numba CUDA kernels for the concat and permute adjoints/tangents (CuPy arrays; NumPy under the simulator).

Kernel interface: every kernel reads and writes *flat* 1-D buffers of a real dtype (complex arrays
are seen as pairs of reals) and is told, through an int64 table, the element offset, shape and
strides of every region it touches.  Any view (negative strides, transposed, Fortran order,
stride-0 broadcast) is therefore handled by passing its base buffer plus offset and strides, and
under Numba's CUDA simulator the very same index logic runs on NumPy buffers.

Two kernels:

* ``segments``: copies (or adds) a list of strided regions ("segments") from one flat source buffer
  to one flat destination buffer in ONE launch: each block finds its segment by binary search in the
  table's cumulative block counts.  Used for every concat adjoint/tangent (all inputs of one
  destination dtype in one launch) and for permutations that keep the innermost axis.
* ``tiled``: a shared-memory tile transpose (``T x (T+1)``, 64 x 64 by default, each of 32 x 4
  threads moving 2 x 16 elements) for permutations that move the innermost axis; remaining axes
  are batched.  Interior tiles take a path without bounds tests, so each thread issues all its
  loads (and all its read-modify-writes) back to back; addresses advance by precomputed steps.
  float16 moves through float32 tiles and arithmetic.

Several destination arrays in one launch: on CuPy the destination (or source) buffer is a flat
view spanning the address range of all the arrays involved (device addresses share one space), so
user gradient buffers can be accumulated into in place.  On NumPy (simulator) this needs the arrays
to share one base buffer; otherwise the work is split per base buffer.

On a real GPU the kernels are launched through a thin entry point that takes raw device pointers
(int64 scalars) instead of array objects, which avoids Numba's per-argument conversion cost
(``CONFIG["pointers"]``); the array entry point is the fallback and the one the simulator runs.
"""
import threading

import numpy as np

from .device import is_cupy, check_devices

CONFIG = {
    "tpb": 128,        # threads per block, segments kernel (tuned on H200: 128x8 best of 4)
    "ept": 8,          # elements per thread, segments kernel
    # tiled kernel: tile edge and block height (block width tile_tx); each thread moves
    # (tile / tile_tx) x (tile / tile_by) elements.  H200, float32 TB/s on the 8192² swap and the
    # 256³ (2,0,1) permutation: (32, 8) 3.45/3.23, (64, 4) 3.27/2.97, (64, 8) 2.95/2.75,
    # (64, 2) 2.70/2.44.  float64 and complex64 like (32, 8) too; float16 (64, 4): 1.54/1.46
    # against 1.18/1.13.
    "tile": 32,
    "tile_tx": 32,
    "tile_by": 8,
    "tile_wide": {"float16": (64, 4)},   # (tile, tile_by) for the dtypes that differ
    "max_grid": 1 << 20,
    "pointers": True,  # raw-pointer entry points on the GPU (falls back to arrays if they fail to build)
    "launch": "cupy",  # who launches raw-pointer kernels: "cupy" (a few µs) or "numba"
    "table_cache": 256,
}

_state = {"pointer_error": None, "cupy_launch_error": None}
_kernels = {}
_streams = {}
_lock = threading.RLock()


class _Cache:
    """A bounded dict (at most ``CONFIG["table_cache"]`` entries, the oldest evicted first) that
    several threads fill at once: a lookup takes no lock (one ``dict.get``); storing and evicting
    take a small lock of the cache's own, so two threads never evict the same entry (a KeyError)
    nor iterate the dict while another changes it (a RuntimeError)."""
    __slots__ = ("_d", "_lock")

    def __init__(self):
        self._d = {}
        self._lock = threading.Lock()

    def get(self, key):
        return self._d.get(key)

    def put(self, key, value):
        """Store ``value`` under ``key`` and return it; if another thread stored one under that
        key first, keep that one and return it."""
        with self._lock:
            have = self._d.get(key)
            if have is not None:
                return have
            limit = max(int(CONFIG["table_cache"]), 1)
            while len(self._d) >= limit:
                del self._d[next(iter(self._d))]
            self._d[key] = value
            return value

    def clear(self):
        with self._lock:
            self._d.clear()

    def __len__(self):
        return len(self._d)

    def __contains__(self, key):
        return key in self._d


_tables = _Cache()


# ---------------------------------------------------------------------------------------------
# lazy numba import
# ---------------------------------------------------------------------------------------------
cuda = None   # numba.cuda, imported lazily (a module global: the simulator swaps it in kernels)


def _nb():
    global cuda
    if cuda is None:
        if not hasattr(np, "row_stack"):      # numba-cuda 0.30 + NumPy 2.5
            np.row_stack = np.vstack
        from numba import cuda as _c
        cuda = _c
    return cuda


def simulated():
    """True when Numba's CUDA simulator is active."""
    _nb()
    return _sim_config()


def _sim_config():
    try:
        from numba.cuda.core import config
    except Exception:  # pragma: no cover
        from numba.core import config
    return bool(getattr(config, "ENABLE_CUDASIM", 0))


_REAL = {np.dtype(np.float16): np.dtype(np.float16), np.dtype(np.float32): np.dtype(np.float32),
         np.dtype(np.float64): np.dtype(np.float64), np.dtype(np.complex64): np.dtype(np.float32),
         np.dtype(np.complex128): np.dtype(np.float64)}
_NAMES = {np.dtype(np.float16): "float16", np.dtype(np.float32): "float32",
          np.dtype(np.float64): "float64", np.dtype(np.complex64): "complex64",
          np.dtype(np.complex128): "complex128"}


def _real(dt):
    r = _REAL.get(np.dtype(dt))
    if r is None:
        raise TypeError(f"s2sad kernels support float16/32/64 and complex64/128, not {dt}")
    return r


def _compute(a, b):
    return np.float64 if (a == np.float64 or b == np.float64) else np.float32


def _tile_type(dt):
    """The arithmetic (and shared-tile) type of the tiled kernel: float16 goes through float32."""
    return np.float32 if dt == np.float16 else dt.type


# ---------------------------------------------------------------------------------------------
# kernels (built lazily, cached per specialisation)
# ---------------------------------------------------------------------------------------------
def _compiled(key, build):
    """The object cached under ``key`` in ``_kernels``, built once by ``build()`` (under the lock)."""
    k = _kernels.get(key)
    if k is None:
        with _lock:
            k = _kernels.get(key)
            if k is None:
                _nb()
                k = _kernels[key] = build()
    return k


def _ptr_intrinsic(dt):
    def build():
        from numba.cuda.extending import intrinsic
        from numba.cuda import types
        from numba.cuda.np.numpy_support import from_dtype
        nbt = from_dtype(dt)

        @intrinsic
        def as_ptr(typingctx, addr):
            sig = types.CPointer(nbt)(types.int64)

            def codegen(context, builder, signature, args):
                return builder.inttoptr(args[0], context.get_value_type(signature.return_type))
            return sig, codegen
        return as_ptr
    return _compiled(("ptr", dt), build)


class _Launcher:
    """A compiled kernel ``body(src, dst, table, tlen, nblocks)`` and the cheapest way to launch it.

    ``pointers``: the kernel takes raw device addresses and lengths (7 int64 scalars) instead of
    arrays.  Such a kernel is launched by CuPy's driver call on CuPy's current stream (the cubin
    Numba built, loaded once per device: a few µs per launch), or, with ``CONFIG["launch"] ==
    "numba"`` or when that fails, by Numba's own launch on CuPy's stream.  Array kernels (the
    simulator, and the fallback when pointer entries fail to build) use Numba's launch."""

    __slots__ = ("kernel", "pointers", "_fns")

    def __init__(self, kernel, pointers):
        self.kernel, self.pointers, self._fns = kernel, pointers, {}

    def __call__(self, grid, block, args, gpu):
        """Launch on ``grid`` blocks (int or tuple) of ``block`` threads (tuple)."""
        if not gpu:
            self.kernel[grid, block](*args)
            return
        if self.pointers:
            if type(grid) is int:
                grid = (grid,)
            if CONFIG["launch"] == "cupy":
                fn = self._cupy_function()
                if fn is not None:
                    fn(grid, block, tuple(map(np.int64, args)))   # CuPy's current stream
                    return
        import cupy as cp
        dev = cp.cuda.runtime.getDevice()
        if cuda.current_context().device.id != dev:      # Numba launches in its current context
            with cuda.gpus[dev]:
                return self._numba_launch(grid, block, args)
        self._numba_launch(grid, block, args)

    def _numba_launch(self, grid, block, args):
        if self.pointers:
            ov = self.kernel.overloads
            if len(ov) == 1:
                next(iter(ov.values())).launch(args, grid + (1,) * (3 - len(grid)),
                                               block + (1,) * (3 - len(block)), _stream(core=True), 0)
                return
        self.kernel[grid, block, _stream()](*args)

    def _cupy_function(self):
        import cupy as cp
        dev = cp.cuda.runtime.getDevice()
        try:
            return self._fns[dev]
        except KeyError:
            pass
        with _lock:
            fn = None
            try:
                compiled = next(iter(self.kernel.overloads.values()))
                lib = compiled._codelibrary
                cc = tuple(int(c) for c in cp.cuda.Device(dev).compute_capability)
                module = cp.cuda.function.Module()
                module.load(_as_bytes(lib.get_cubin(cc=cc)))
                fn = module.get_function(compiled.entry_name)
            except Exception as e:  # noqa: BLE001  (record and fall back to Numba's launch)
                _state["cupy_launch_error"] = repr(e)
            self._fns[dev] = fn
            return fn


def _as_bytes(cubin):
    """The bytes of a cubin as Numba returns it (bytes, or a cuda.core ObjectCode)."""
    if isinstance(cubin, (bytes, bytearray, memoryview)):
        return bytes(cubin)
    code = getattr(cubin, "code", None)
    if isinstance(code, (bytes, bytearray, memoryview)):
        return bytes(code)
    if isinstance(code, str):                 # a file path
        with open(code, "rb") as f:
            return f.read()
    raise TypeError(f"cannot read a cubin from {type(cubin).__name__}")


def _finish(body, sdt, ddt, pointers):
    """A :class:`_Launcher` for ``body(src, dst, table, tlen, nblocks)`` over flat buffers of the
    real dtypes ``sdt``/``ddt`` and an int64 table: array arguments, or a raw-pointer entry."""
    if not pointers:
        sig = f"void({_NAMES[sdt]}[::1], {_NAMES[ddt]}[::1], int64[::1], int64, int64)"
        return _Launcher(cuda.jit(sig)(body), False)
    from numba.cuda.np.numpy_support import carray
    dev = cuda.jit(device=True)(body)
    ps, pd, pi = _ptr_intrinsic(sdt), _ptr_intrinsic(ddt), _ptr_intrinsic(np.dtype(np.int64))

    def entry(sp, slen, dp, dlen, tp, tlen, nblocks):
        dev(carray(ps(sp), (slen,)), carray(pd(dp), (dlen,)), carray(pi(tp), (tlen,)), tlen, nblocks)
    return _Launcher(cuda.jit("void(int64, int64, int64, int64, int64, int64, int64)")(entry), True)


def _segments_kernel(st, dt, D, acc, pointers):
    tpb, ept = CONFIG["tpb"], CONFIG["ept"]
    return _compiled(("seg", st, dt, D, acc, pointers, tpb, ept),
                     lambda: _build_segments(st, dt, D, acc, pointers, tpb, ept))


def _build_segments(st, dt, D, acc, pointers, tpb, ept):
    CT = _compute(st, dt)
    OT = dt.type
    TPB, EPT, ACC = tpb, ept, acc
    W = 4 + 3 * D

    def body(src, dst, table, tlen, nblocks):
        nseg = tlen // W
        tid = cuda.threadIdx.x
        b = cuda.blockIdx.x
        while b < nblocks:
            lo = 0
            hi = nseg - 1
            while lo < hi:
                mid = (lo + hi + 1) // 2
                if table[(mid) * W + 2] <= b:
                    lo = mid
                else:
                    hi = mid - 1
            s = lo
            n = table[(s) * W + 3]
            so = table[(s) * W + 0]
            do = table[(s) * W + 1]
            k0 = (b - table[(s) * W + 2]) * (TPB * EPT) + tid
            if D == 1 and k0 + (EPT - 1) * TPB < n:
                # a full run of a 1-D segment: all loads first, then all stores (the loads
                # of one thread overlap instead of waiting on each store)
                ss = table[(s) * W + 5]
                ds = table[(s) * W + 6]
                va = cuda.local.array(EPT, CT)
                for e in range(EPT):
                    va[e] = CT(src[so + (k0 + e * TPB) * ss])
                if ACC:
                    vb = cuda.local.array(EPT, CT)
                    for e in range(EPT):
                        vb[e] = CT(dst[do + (k0 + e * TPB) * ds])
                    for e in range(EPT):
                        dst[do + (k0 + e * TPB) * ds] = OT(vb[e] + va[e])
                else:
                    for e in range(EPT):
                        dst[do + (k0 + e * TPB) * ds] = OT(va[e])
                b += cuda.gridDim.x
                continue
            for e in range(EPT):
                k = k0 + e * TPB
                if k < n:
                    if D == 1:
                        si = so + k * table[(s) * W + 5]
                        di = do + k * table[(s) * W + 6]
                    else:
                        si = so
                        di = do
                        rem = k
                        for d in range(D - 1, -1, -1):
                            sz = table[(s) * W + 4 + d]
                            q = rem // sz
                            c = rem - q * sz
                            rem = q
                            si += c * table[(s) * W + 4 + D + d]
                            di += c * table[(s) * W + 4 + 2 * D + d]
                    if ACC:
                        dst[di] = OT(CT(dst[di]) + CT(src[si]))
                    else:
                        dst[di] = OT(CT(src[si]))
            b += cuda.gridDim.x

    return _finish(body, st, dt, pointers)


def _tile_config(edt):
    """(tile edge, block width, block height) of the tiled kernel for elements of dtype ``edt``;
    the shared tile stays under 40 kB."""
    T, BY = CONFIG["tile_wide"].get(edt.name, (CONFIG["tile"], CONFIG["tile_by"]))
    while T > 16 and T * (T + 1) * np.dtype(_tile_type(edt)).itemsize > 40000:
        T //= 2
    return T, min(CONFIG["tile_tx"], T), min(BY, T)


def _tiled_kernel(edt, DB, acc, T, TX, BY, pointers):
    return _compiled(("tile", edt, DB, acc, T, TX, BY, pointers),
                     lambda: _build_tiled(edt, DB, acc, T, TX, BY, pointers))


def _build_tiled(edt, DB, acc, T, TX, BY, pointers):
    """Tiled transpose over elements of dtype ``edt`` (complex elements move whole: 8/16-byte
    accesses); float16 moves through float32 tiles and arithmetic."""
    from numba.cuda.np.numpy_support import from_dtype
    CT = _tile_type(edt)
    CTN = from_dtype(np.dtype(CT))
    OT = edt.type
    ACC = acc
    NY, NX = T // BY, T // TX        # each thread moves NY x NX elements
    NACC = NY * NX
    SHAPE = (T, T + 1)               # compile-time shape of the shared tile (+1: no bank conflicts)
    TT = T

    def body(src, dst, meta, mlen, nbatch):
        # meta: n_a, n_l, nt_a, nt_l, s_a, s_l, d_a, d_l, src_off, dst_off, l_on_x,
        #       (shape, ss, ds) * DB, outermost batch axis first
        # a: the source's fast axis (loads coalesce along it), l: the destination's fast axis.
        # Grid: (l tiles, a tiles, batches) or (a tiles, l tiles, batches); batches stride by
        # gridDim.z.  No integer division except for batch axes after the outermost.
        tile = cuda.shared.array(SHAPE, CTN)
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        n_a = meta[0]
        n_l = meta[1]
        s_a = meta[4]
        s_l = meta[5]
        d_a = meta[6]
        d_l = meta[7]
        if meta[10]:
            tl = cuda.blockIdx.x
            ta = cuda.blockIdx.y
        else:
            ta = cuda.blockIdx.x
            tl = cuda.blockIdx.y
        # per-thread steps between the elements a thread moves (strength-reduced addressing)
        sx = TX * s_a
        sy = BY * s_l
        dx = TX * d_l
        dy = BY * d_a
        bz = cuda.blockIdx.z
        while bz < nbatch:
            so = meta[8]
            do = meta[9]
            bb = bz
            for j in range(DB - 1, 0, -1):
                sz = meta[11 + 3 * j]
                q = bb // sz
                c = bb - q * sz
                bb = q
                so += c * meta[12 + 3 * j]
                do += c * meta[13 + 3 * j]
            if DB > 0:
                so += bb * meta[12]
                do += bb * meta[13]
            a0 = ta * TT
            l0 = tl * TT
            full = a0 + TT <= n_a and l0 + TT <= n_l
            # load: thread (tx, ty) reads a = a0 + tx + ix*TX, l = l0 + ty + iy*BY
            p0 = so + (a0 + tx) * s_a + (l0 + ty) * s_l
            if full:                  # interior tile: no bounds tests, loads issued together
                for iy in range(NY):
                    for ix in range(NX):
                        tile[ty + iy * BY, tx + ix * TX] = CT(src[p0 + iy * sy + ix * sx])
            else:
                for iy in range(NY):
                    il = l0 + ty + iy * BY
                    for ix in range(NX):
                        ia = a0 + tx + ix * TX
                        if il < n_l and ia < n_a:
                            tile[ty + iy * BY, tx + ix * TX] = CT(src[p0 + iy * sy + ix * sx])
            cuda.syncthreads()
            # store: thread (tx, ty) writes l = l0 + tx + ix*TX, a = a0 + ty + iy*BY
            q0 = do + (a0 + ty) * d_a + (l0 + tx) * d_l
            if full and ACC:
                # all of a thread's loads of dst first, then its stores (not load-add-store
                # per element, which serialises the thread's memory traffic)
                old = cuda.local.array(NACC, CTN)
                k = 0
                for iy in range(NY):
                    for ix in range(NX):
                        old[k] = CT(dst[q0 + iy * dy + ix * dx])
                        k += 1
                k = 0
                for iy in range(NY):
                    for ix in range(NX):
                        dst[q0 + iy * dy + ix * dx] = OT(old[k] + tile[tx + ix * TX, ty + iy * BY])
                        k += 1
            elif full:
                for iy in range(NY):
                    for ix in range(NX):
                        dst[q0 + iy * dy + ix * dx] = OT(tile[tx + ix * TX, ty + iy * BY])
            else:
                for iy in range(NY):
                    ia = a0 + ty + iy * BY
                    for ix in range(NX):
                        il = l0 + tx + ix * TX
                        if il < n_l and ia < n_a:
                            p = q0 + iy * dy + ix * dx
                            if ACC:
                                dst[p] = OT(CT(dst[p]) + tile[tx + ix * TX, ty + iy * BY])
                            else:
                                dst[p] = OT(tile[tx + ix * TX, ty + iy * BY])
            cuda.syncthreads()
            bz += cuda.gridDim.z

    return _finish(body, edt, edt, pointers)


# ---------------------------------------------------------------------------------------------
# array descriptions: (object, data address, shape, strides in real elements)
# ---------------------------------------------------------------------------------------------
def _addr(x):
    if is_cupy(x):
        return x.data.ptr
    return x.__array_interface__["data"][0]


def _layout(x, rdt, pairs=True):
    """Shape and strides (in units of ``rdt`` elements) of ``x``; with ``pairs`` a complex x (seen
    as pairs of reals) gets a trailing (2,) axis.  None when a stride is not a multiple."""
    isz = rdt.itemsize
    shape = list(x.shape)
    strides = []
    for s in x.strides:
        if s % isz:
            return None
        strides.append(s // isz)
    if pairs and x.dtype.kind == "c":
        shape.append(2)
        strides.append(1)
    return shape, strides


def _collapse(shape, strides_list):
    """Drop unit axes and merge axes that are contiguous in every stride list."""
    dims = [(n, [s[j] for s in strides_list]) for j, n in enumerate(shape) if n != 1]
    if not dims:
        return [1], [[0] for _ in strides_list]
    out = [dims[0]]
    for n, st in dims[1:]:
        pn, pst = out[-1]
        if all(ps == s * n for ps, s in zip(pst, st)):
            out[-1] = (pn * n, st)
        else:
            out.append((n, st))
    return [n for n, _ in out], [[st[i] for _, st in out] for i in range(len(strides_list))]


def _extent(shape, strides):
    lo = hi = 0
    for n, s in zip(shape, strides):
        if n == 0:
            return 0, -1
        if s < 0:
            lo += (n - 1) * s
        else:
            hi += (n - 1) * s
    return lo, hi


class _Seg:
    __slots__ = ("src", "saddr", "dst", "daddr", "shape", "sst", "dstr", "srdt", "drdt", "n")

    def __init__(self, src, saddr, dst, daddr, shape, sst, dstr, srdt, drdt):
        self.src, self.saddr, self.dst, self.daddr = src, saddr, dst, daddr
        self.srdt, self.drdt = srdt, drdt
        shape, (sst, dstr) = _collapse(shape, [sst, dstr])
        self.shape, self.sst, self.dstr = shape, sst, dstr
        n = 1
        for s in shape:
            n *= s
        self.n = n


def _root(x):
    r = x
    while isinstance(r.base, np.ndarray):
        r = r.base
    return r


class _Span:
    """A flat buffer of dtype ``rdt`` covering the memory of several arrays, and its base address."""

    def __init__(self, objs, ranges, rdt):
        self.rdt = rdt
        isz = rdt.itemsize
        base = min(lo for lo, _ in ranges)
        end = max(hi for _, hi in ranges) + isz
        self.base = base
        self.length = max((end - base) // isz, 1)
        self.gpu = is_cupy(objs[0])
        self.objs = objs
        self._flat = None

    def flat(self):
        if self._flat is None:
            isz = self.rdt.itemsize
            if self.gpu:
                import cupy as cp
                mem = cp.cuda.UnownedMemory(self.base, self.length * isz, self.objs)
                self._flat = cp.ndarray((self.length,), self.rdt, cp.cuda.MemoryPointer(mem, 0))
            else:
                root = _root(self.objs[0])
                rb = root.reshape(-1, order="A") if (root.flags.c_contiguous or root.flags.f_contiguous) \
                    else None
                if rb is None or not np.shares_memory(rb, root):
                    raise ValueError("cannot form a flat view of a non-contiguous base buffer")
                u8 = rb.view(np.uint8)
                off = self.base - u8.__array_interface__["data"][0]
                self._flat = u8[off: off + self.length * isz].view(self.rdt)
        return self._flat


def _group_spans(items, rdt, gpu):
    """Split (obj, lo_addr, hi_addr) items into span groups: one on the GPU, one per base buffer on CPU."""
    if gpu:
        return [items]
    groups = {}
    for it in items:
        groups.setdefault(id(_root(it[0])), []).append(it)
    return list(groups.values())


# ---------------------------------------------------------------------------------------------
# launching
# ---------------------------------------------------------------------------------------------
def _stream(core=False):
    """CuPy's current stream as a Numba stream (``core``: as the cuda.core stream that a compiled
    kernel's ``launch`` takes; passing Numba's own object there is deprecated)."""
    import cupy as cp
    key = (cp.cuda.runtime.getDevice(), cp.cuda.get_current_stream().ptr, core)
    ptr = key[1]
    s = _streams.get(key)
    if s is None:
        _nb()
        s = cuda.default_stream() if ptr == 0 else cuda.external_stream(ptr)
        if core:
            try:
                from numba.cuda.cudadrv.driver import _to_core_stream
                s = _to_core_stream(s)
            except ImportError:       # older numba-cuda: launch takes Numba's stream
                pass
        _streams[key] = s
    return s


_uploads = []     # (event, pinned host buffer) of table copies that may still be in flight
_uploads_lock = threading.Lock()


def _device_table(table):
    """The table on the GPU, cached by content (training loops repeat the same layouts).

    Uploaded from pinned host memory on CuPy's current stream, so the copy does not make the host
    wait for the GPU (a copy from pageable memory waits for all the work queued before it); the
    pinned buffer is held until the copy's event has passed."""
    import cupy as cp
    key = (cp.cuda.runtime.getDevice(), table.tobytes())
    t = _tables.get(key)
    if t is None:
        stream = cp.cuda.get_current_stream()
        mem = cp.cuda.alloc_pinned_memory(max(table.nbytes, 1))
        host = np.frombuffer(mem, table.dtype, table.size).reshape(table.shape)
        host[...] = table
        t = cp.empty(table.shape, table.dtype)
        t.set(host, stream=stream)
        event = stream.record()
        with _uploads_lock:       # (a lost entry would free the pinned buffer mid-copy)
            _uploads[:] = [u for u in _uploads if not u[0].done]
            _uploads.append((event, mem))
        t = _tables.put(key, t)
    return t


def _use_pointers():
    return CONFIG["pointers"] and _state["pointer_error"] is None


def _get(builder, *args):
    """Build a kernel; on the GPU try the raw-pointer entry first, fall back to array arguments."""
    if _use_pointers():
        try:
            return builder(*args, True)
        except Exception as e:  # noqa: BLE001  (record and fall back)
            _state["pointer_error"] = repr(e)
    return builder(*args, False)


_tls = threading.local()      # .rec: the launches being recorded for a plan (see _planned)


def _launch(launcher, grid, block, gpu, args, keep=None):
    rec = getattr(_tls, "rec", None)
    if rec is not None:
        rec.append((launcher, grid, block, args, keep))
    launcher(grid, block, args, gpu)


def _run_segments(segs, acc):
    """Copy (acc=False) or add (acc=True) every segment; one launch per (dtypes, buffer group, round)."""
    segs = [s for s in segs if s.n > 0]
    if not segs:
        return
    gpu = is_cupy(segs[0].src)
    by_dt = {}
    for s in segs:
        by_dt.setdefault((s.srdt, s.drdt), []).append(s)
    for (srdt, drdt), group in by_dt.items():
        for batch in _rounds(group, acc):
            _launch_segment_batch(batch, srdt, drdt, acc, gpu)


def _rounds(group, acc):
    """Split segments so that no two segments of one launch write overlapping memory (race-free acc)."""
    if not acc:
        return [group]
    isz = group[0].drdt.itemsize
    ivals = []
    for s in group:
        lo, hi = _extent(s.shape, s.dstr)
        if any(st == 0 and n > 1 for n, st in zip(s.shape, s.dstr)):
            raise ValueError("cannot accumulate into a buffer with overlapping elements (stride 0)")
        ivals.append((s.daddr + lo * isz, s.daddr + hi * isz, s))
    ivals.sort(key=lambda t: t[0])
    rounds, ends = [], []
    for lo, hi, s in ivals:
        for r, e in enumerate(ends):
            if e < lo:
                rounds[r].append(s)
                ends[r] = hi
                break
        else:
            rounds.append([s])
            ends.append(hi)
    return rounds


def _launch_segment_batch(batch, srdt, drdt, acc, gpu):
    sisz, disz = srdt.itemsize, drdt.itemsize
    # source and destination span groups
    sitems, ditems = {}, {}
    for s in batch:
        lo, hi = _extent(s.shape, s.sst)
        it = sitems.get(id(s.src))
        rng = (s.saddr + lo * sisz, s.saddr + hi * sisz)
        sitems[id(s.src)] = (s.src, min(rng[0], it[1]) if it else rng[0], max(rng[1], it[2]) if it else rng[1])
        lo, hi = _extent(s.shape, s.dstr)
        it = ditems.get(id(s.dst))
        rng = (s.daddr + lo * disz, s.daddr + hi * disz)
        ditems[id(s.dst)] = (s.dst, min(rng[0], it[1]) if it else rng[0], max(rng[1], it[2]) if it else rng[1])
    for sg in _group_spans(list(sitems.values()), srdt, gpu):
        sids = {id(o) for o, _, _ in sg}
        for dg in _group_spans(list(ditems.values()), drdt, gpu):
            dids = {id(o) for o, _, _ in dg}
            part = [s for s in batch if id(s.src) in sids and id(s.dst) in dids]
            if not part:
                continue
            sspan = _Span([o for o, _, _ in sg], [(a, b) for _, a, b in sg], srdt)
            dspan = _Span([o for o, _, _ in dg], [(a, b) for _, a, b in dg], drdt)
            _launch_segments_table(part, sspan, dspan, srdt, drdt, acc, gpu)


def _launch_segments_table(part, sspan, dspan, srdt, drdt, acc, gpu):
    D = max(len(s.shape) for s in part)
    W = 4 + 3 * D
    tpb, ept = CONFIG["tpb"], CONFIG["ept"]
    per = tpb * ept
    table = np.zeros((len(part), W), np.int64)   # flattened to 1-D for the kernel
    nblocks = 0
    sisz, disz = srdt.itemsize, drdt.itemsize
    for i, s in enumerate(part):
        pad = D - len(s.shape)
        row = table[i]
        row[0] = (s.saddr - sspan.base) // sisz
        row[1] = (s.daddr - dspan.base) // disz
        row[2] = nblocks
        row[3] = s.n
        row[4:4 + D] = [1] * pad + s.shape
        row[4 + D:4 + 2 * D] = [0] * pad + s.sst
        row[4 + 2 * D:4 + 3 * D] = [0] * pad + s.dstr
        nblocks += -(-s.n // per)
    kernel = _get(_segments_kernel, srdt, drdt, D, acc) if gpu else \
        _segments_kernel(srdt, drdt, D, acc, False)
    grid = min(nblocks, CONFIG["max_grid"])
    tlen = table.size
    if not gpu:
        _launch(kernel, grid, (tpb,), gpu, (sspan.flat(), dspan.flat(), table.ravel(), tlen, nblocks))
        return
    dt = _device_table(table)
    if kernel.pointers:
        args = (sspan.base, sspan.length, dspan.base, dspan.length, dt.data.ptr, tlen, nblocks)
    else:
        args = (sspan.flat(), dspan.flat(), dt.ravel(), tlen, nblocks)
    _launch(kernel, grid, (tpb,), gpu, args, keep=dt)


# ---------------------------------------------------------------------------------------------
# plans: the host work of one adjoint, recorded once and replayed
# ---------------------------------------------------------------------------------------------
# On the GPU (raw-pointer kernels) the host work of a concat or permute adjoint (layout analysis,
# tables, table upload, kernel lookup) depends only on the layout of the cotangent g, the shapes and
# dtypes involved and the addresses of the accumulation buffers.  ``_planned`` records the launches
# of the first call under that key, with source addresses relative to g and destination addresses
# relative to the fresh output buffers (or absolute, inside the accumulation buffers, whose
# addresses are part of the key); later calls allocate the outputs and launch, nothing else.
_plans = _Cache()


class _Fresh:
    """A flat output buffer for all the fresh adjoints of one dtype, handed out in pieces."""
    __slots__ = ("buf", "pos", "zero")

    def __init__(self, xp, dt, n, zero):
        self.buf = xp.zeros(n, dt) if zero else xp.empty(n, dt)
        self.pos, self.zero = 0, zero

    def take(self, shape, n):
        out = self.buf[self.pos: self.pos + n].reshape(shape)
        self.pos += n
        return out


def _acc_key(acc):
    if acc is None:
        return None
    return tuple(None if b is None else (b.data.ptr, b.shape, b.strides, b.dtype.char) for b in acc)


def _config_key():
    return CONFIG["tpb"], CONFIG["ept"], CONFIG["tile"], CONFIG["tile_tx"], CONFIG["tile_by"], \
        tuple(sorted(CONFIG["tile_wide"].items())), CONFIG["launch"]


def _planned(key, g, acc, compute):
    """``compute()`` -> (outputs, fresh buffers by dtype, address of g used or None); the outputs,
    from the plan recorded under ``key`` when there is one."""
    plan = _plans.get(key)
    if plan is not None:
        return _replay(plan, g, acc)
    _tls.rec = []
    try:
        outs, fresh, gaddr = compute()
        rec = _tls.rec
    finally:
        _tls.rec = None
    plan = _record(rec, fresh, outs, acc, gaddr)
    if plan is not None:
        _plans.put(key, plan)
    return outs


def _replay(plan, g, acc):
    import cupy as cp
    launches, fresh_spec, outs_spec = plan
    bufs = [(cp.zeros(n, dt) if zero else cp.empty(n, dt)) for dt, n, zero in fresh_spec]
    gptr = g.data.ptr
    for launcher, grid, block, sdelta, slen, grp, dd, tail, _keep in launches:
        dbase = dd if grp < 0 else bufs[grp].data.ptr + dd
        launcher(grid, block, (gptr + sdelta, slen, dbase) + tail, True)
    outs = []
    for spec in outs_spec:
        if spec is None:
            outs.append(None)
        elif spec[0] == "acc":
            outs.append(acc[spec[1]])
        else:
            _, grp, off, shape, dt = spec
            b = bufs[grp]
            outs.append(cp.ndarray(shape, dt, memptr=b.data + off * dt.itemsize) if len(b)
                        else b.reshape(shape))
    return outs


def _record(rec, fresh, outs, acc, gaddr):
    if gaddr is None:
        return None
    fresh_list = list(fresh.items())
    launches = []
    for launcher, grid, block, args, keep in rec:
        if not launcher.pointers:
            return None
        sbase, slen, dbase = args[:3]
        grp, dd = -1, dbase
        for j, (dt, f) in enumerate(fresh_list):
            p = f.buf.data.ptr
            if f.buf.size and p <= dbase < p + f.buf.nbytes:
                grp, dd = j, dbase - p
        if grp < 0 and acc is None:
            return None
        launches.append((launcher, grid, block, sbase - gaddr, slen, grp, dd, tuple(args[3:]), keep))
    fresh_spec = [(dt, int(f.buf.size), f.zero) for dt, f in fresh_list]
    outs_spec = []
    for i, o in enumerate(outs):
        if o is None:
            outs_spec.append(None)
        elif acc is not None and acc[i] is not None:
            outs_spec.append(("acc", i))
        else:
            for j, (dt, f) in enumerate(fresh_list):
                if o.dtype == dt:
                    off = (o.data.ptr - f.buf.data.ptr) // dt.itemsize if o.size else 0
                    outs_spec.append(("fresh", j, off, o.shape, dt))
                    break
            else:
                return None
    return launches, fresh_spec, outs_spec


# ---------------------------------------------------------------------------------------------
# concat
# ---------------------------------------------------------------------------------------------
def _xp(a):
    if is_cupy(a):
        import cupy
        return cupy
    return np


def _region_strides(shape, g_stride):
    """C-order strides of a flat run of ``shape`` inside a 1-D buffer of stride ``g_stride``."""
    st, acc = [], g_stride
    for n in reversed(shape):
        st.append(acc)
        acc *= n
    return st[::-1]


def _other_gpu(dev):
    """``cupy.cuda.Device`` of ``dev`` ("cuda:N") when it is not the current device, else None:
    kernels launch on the current device, so work on another GPU's arrays switches to it."""
    if dev is None or dev == "cpu":
        return None
    import cupy as cp
    i = int(dev[5:])
    return None if i == cp.cuda.runtime.getDevice() else cp.cuda.Device(i)


def concat_adjoint(g, arrays, infos, axis, starts, acc):
    other = _other_gpu(check_devices("concat_adjoint", (g, arrays, acc) if acc is not None else (g, arrays)))
    if other is not None:
        with other:
            return concat_adjoint(g, arrays, infos, axis, starts, acc)
    xp = _xp(g)
    gpu = xp is not np

    def compute():
        return _concat_adjoint(g, arrays, infos, axis, starts, acc, xp, gpu)
    if gpu and _use_pointers() and (axis is not None or g.ndim == 1) and \
            (acc is None or not any(b is None and info[1] is not None for b, info in zip(acc, infos))):
        # (mixed fresh and accumulated outputs share one destination span: not planned)
        key = ("cat", g.shape, g.strides, g.dtype.char, g.device.id, axis, tuple(infos),
               tuple(type(x) for x in arrays), _acc_key(acc), _config_key())
        outs = _planned(key, g, acc, compute)
    else:
        outs = compute()[0]
    return tuple(_scalar_out(x, o) for x, o in zip(arrays, outs))


def _concat_adjoint(g, arrays, infos, axis, starts, acc, xp, gpu):
    """The uncached path; returns (outputs, fresh buffers by dtype, address of g used)."""
    g0 = g
    if axis is None and g.ndim != 1:
        g = g.reshape(-1)
    grdt = _real(g.dtype)
    gisz = grdt.itemsize
    gaddr = _addr(g)
    gl = _layout(g, grdt)
    if gl is None:
        g = xp.ascontiguousarray(g)
        gaddr, gl = _addr(g), _layout(g, grdt)
    gshape, gstr = gl
    gcomplex = g.dtype.kind == "c"
    if gcomplex:
        gshape, gstr = gshape[:-1], gstr[:-1]
    outs = [None] * len(arrays)
    # fresh output buffers: one per destination dtype
    fresh_sizes = {}
    for i, (shape, dt) in enumerate(infos):
        if dt is None or (acc is not None and acc[i] is not None):
            continue
        n = int(np.prod(shape, dtype=np.int64))
        fresh_sizes[dt] = fresh_sizes.get(dt, 0) + n
    # (a real cotangent fills only the real parts of a complex input's adjoint)
    fresh = {dt: _Fresh(xp, dt, n, dt.kind == "c" and not gcomplex) for dt, n in fresh_sizes.items()}
    segs_copy, segs_add = [], []
    for i, (shape, dt) in enumerate(infos):
        if dt is None:
            continue
        s0 = starts[i]
        if axis is None:
            n = int(np.prod(shape, dtype=np.int64))
            goff = s0 * gstr[0]
            rshape, rst = list(shape), _region_strides(shape, gstr[0])
        else:
            n = int(np.prod(shape, dtype=np.int64))
            goff = s0 * gstr[axis]
            rshape, rst = list(shape), list(gstr)
        buf = acc[i] if acc is not None else None
        if buf is None:
            out = outs[i] = fresh[dt].take(shape, n)
        else:
            if tuple(buf.shape) != tuple(shape):
                raise ValueError(f"acc[{i}] has shape {tuple(buf.shape)}, expected {tuple(shape)}")
            out = buf
            outs[i] = buf
        if n == 0:
            continue
        drdt = _real(out.dtype)
        dl = _layout(out, drdt)
        dshape, dstr = dl
        dcomplex = out.dtype.kind == "c"
        sshape, sst = list(rshape), list(rst)
        saddr = gaddr + goff * gisz      # strides are in real units already (complex = 2 reals)
        if gcomplex and dcomplex:
            sshape, sst = sshape + [2], sst + [1]
        elif dcomplex:          # real cotangent into a complex input: real parts only
            dstr = dstr[:-1]
        seg = _Seg(g, saddr, out, _addr(out), sshape, sst, dstr, grdt, drdt)
        (segs_add if buf is not None else segs_copy).append(seg)
    _run_segments(segs_copy, False)
    _run_segments(segs_add, True)
    if g is not g0:
        gaddr = None                 # g was copied: the recorded plan would point at a temporary
    return outs, fresh, gaddr


def _scalar_out(x, o):
    if o is None:
        return None
    t = type(x)
    if t is float:
        return float(o.reshape(()))
    if t is complex:
        return complex(o.reshape(()))
    return o


def concat_tangent(tangents, arrays, axis):
    other = _other_gpu(check_devices("concat_tangent", (tangents, arrays)))
    if other is not None:
        with other:
            return concat_tangent(tangents, arrays, axis)
    from . import _info, _norm_axis
    xp = np
    for a in (*tangents, *arrays):
        if is_cupy(a):
            xp = _xp(a)
            break
    infos = [_info(x) for x in arrays]
    if not any(dt is not None for _, dt in infos):
        return None
    rdt = np.result_type(*[(x.dtype if hasattr(x, "dtype") else np.asarray(x).dtype) for x in arrays])
    if rdt.kind not in "fc":
        rdt = np.result_type(*[dt for _, dt in infos if dt is not None])
    if axis is None:
        shapes = [(int(np.prod(s, dtype=np.int64)),) for s, _ in infos]
        ax = 0
    else:
        ax = _norm_axis(axis, max(len(infos[0][0]), 1))
        shapes = [tuple(s) for s, _ in infos]
    oshape = list(shapes[0])
    oshape[ax] = sum(s[ax] for s in shapes)
    need_zero = any(t is None or dt is None for t, (_, dt) in zip(tangents, infos)) or \
        (rdt.kind == "c" and any(t is not None and getattr(t, "dtype", np.dtype(float)).kind != "c"
                                 for t in tangents))
    out = xp.zeros(oshape, rdt) if need_zero else xp.empty(oshape, rdt)
    ordt = _real(rdt)
    oaddr = _addr(out)
    oshape_r, ostr = _layout(out, ordt)
    ocomplex = rdt.kind == "c"
    if ocomplex:
        ostr = ostr[:-1]
    segs = []
    pos = 0
    for t, shp, (_, dt) in zip(tangents, shapes, infos):
        start = pos
        pos += shp[ax]
        if t is None or dt is None:
            continue
        if not hasattr(t, "dtype"):
            t = xp.asarray(t)
        if t.dtype.kind not in "fc":
            t = t.astype(rdt)
        t = t.reshape(shp) if tuple(t.shape) != shp else t
        n = int(np.prod(shp, dtype=np.int64))
        if n == 0:
            continue
        trdt = _real(t.dtype)
        tl = _layout(t, trdt)
        if tl is None:
            t = xp.ascontiguousarray(t)
            tl = _layout(t, trdt)
        tshape, tst = tl
        tcomplex = t.dtype.kind == "c"
        dstr = list(ostr)
        daddr = oaddr + start * ostr[ax] * ordt.itemsize
        if tcomplex and ocomplex:
            sshape, sst = list(shp) + [2], tst
            dstr = dstr + [1]
        elif tcomplex:          # complex tangent of a real output: real part
            sshape, sst = list(shp), tst[:-1]
            sst = list(sst)
        else:
            sshape, sst = list(shp), tst
        segs.append(_Seg(t, _addr(t), out, daddr, sshape, sst, dstr, trdt, ordt))
    _run_segments(segs, False)
    return out


# ---------------------------------------------------------------------------------------------
# permute
# ---------------------------------------------------------------------------------------------
def permute(g, perm, acc):
    """``transpose(g, perm)`` materialised C-contiguous, or added into ``acc`` in place."""
    other = _other_gpu(check_devices("permute_adjoint", (g, acc) if acc is not None else (g,)))
    if other is not None:
        with other:
            return permute(g, perm, acc)
    xp = _xp(g)
    gpu = xp is not np
    oshape = tuple(g.shape[p] for p in perm)
    if acc is not None and tuple(acc.shape) != oshape:
        raise ValueError(f"acc has shape {tuple(acc.shape)}, expected {oshape}")

    def compute():
        return _permute(g, perm, acc, oshape, xp, gpu)
    if gpu and _use_pointers():
        key = ("perm", g.shape, g.strides, g.dtype.char, g.device.id, perm,
               _acc_key(None if acc is None else (acc,)), _config_key())
        return _planned(key, g, None if acc is None else (acc,), compute)[0]
    return compute()[0][0]


def _permute(g, perm, acc, oshape, xp, gpu):
    """The unplanned path; returns ([output], fresh buffers by dtype, address of g used)."""
    fresh = {}
    n = int(np.prod(oshape, dtype=np.int64))
    if acc is None:
        fresh[g.dtype] = f = _Fresh(xp, g.dtype, n, False)
        out = f.take(oshape, n)
    else:
        out = acc
    gaddr = _addr(g)
    if n == 0:
        return [out], fresh, gaddr
    sc, dc = g.dtype.kind == "c", out.dtype.kind == "c"
    shape = list(oshape)
    if g.dtype == out.dtype:
        # tiled kernel: elements move whole (complex ones too), so strides are in elements
        gl = _layout(g, g.dtype, pairs=False)
        if gl is not None:
            dsh, dst = _layout(out, out.dtype, pairs=False)
            sst = [gl[1][p] for p in perm]
            if acc is not None and any(s == 0 and k > 1 for k, s in zip(shape, dst)):
                raise ValueError("cannot accumulate into a buffer with overlapping elements (stride 0)")
            cshape, (csst, cdst) = _collapse(shape, [sst, dst])
            if len(cshape) >= 2:
                a = min(range(len(cshape)), key=lambda j: abs(csst[j]))
                l = min(range(len(cshape)), key=lambda j: abs(cdst[j]))
                if a != l and abs(csst[a]) == 1 and abs(cdst[l]) == 1 and cshape[a] > 1 and cshape[l] > 1:
                    _launch_tiled(g, out, cshape, csst, cdst, a, l, g.dtype, acc is not None, gpu)
                    return [out], fresh, gaddr
    # general path: one strided segment (real units; complex = pairs of reals)
    srdt, drdt = _real(g.dtype), _real(out.dtype)
    gl = _layout(g, srdt)
    if gl is None:
        g = xp.ascontiguousarray(g)
        gl = _layout(g, srdt)
        gaddr = None                 # g was copied: a recorded plan would point at a temporary
    gsh, gst = gl
    dsh, dst = _layout(out, drdt)
    if sc:
        gst = gst[:-1]
    if dc:
        dst = dst[:-1]
    sst = [gst[p] for p in perm]
    if acc is not None and any(s == 0 and k > 1 for k, s in zip(shape, dst)):
        raise ValueError("cannot accumulate into a buffer with overlapping elements (stride 0)")
    if sc and dc:
        seg = _Seg(g, _addr(g), out, _addr(out), shape + [2], sst + [1], dst + [1], srdt, drdt)
    else:
        seg = _Seg(g, _addr(g), out, _addr(out), shape, sst, dst, srdt, drdt)
    _run_segments([seg], acc is not None)
    return [out], fresh, gaddr


def _launch_tiled(g, out, shape, sst, dstr, a, l, edt, acc, gpu):
    T, TX, BY = _tile_config(edt)
    isz = edt.itemsize
    slo, shi = _extent(shape, sst)
    dlo, dhi = _extent(shape, dstr)
    sspan = _Span([g], [(_addr(g) + slo * isz, _addr(g) + shi * isz)], edt)
    dspan = _Span([out], [(_addr(out) + dlo * isz, _addr(out) + dhi * isz)], edt)
    batch = [j for j in range(len(shape)) if j not in (a, l)]
    DB = len(batch)
    nt_a = -(-shape[a] // T)
    nt_l = -(-shape[l] // T)
    nb = 1
    for j in batch:
        nb *= shape[j]
    l_on_x = nt_a <= 65535             # grid y and z take at most 65535 blocks
    grid = (nt_l, nt_a) if l_on_x else (nt_a, nt_l)
    if grid[1] > 65535:
        raise ValueError(f"permutation too large for one launch ({shape[a]} x {shape[l]})")
    grid += (min(nb, 65535),)
    meta = [shape[a], shape[l], nt_a, nt_l, sst[a], sst[l], dstr[a], dstr[l],
            (_addr(g) - sspan.base) // isz, (_addr(out) - dspan.base) // isz, int(l_on_x)]
    for j in batch:
        meta += [shape[j], sst[j], dstr[j]]
    meta = np.asarray(meta, np.int64)
    kernel = _get(_tiled_kernel, edt, DB, acc, T, TX, BY) if gpu else \
        _tiled_kernel(edt, DB, acc, T, TX, BY, False)
    block = (TX, BY)
    if not gpu:
        _launch(kernel, grid, block, gpu, (sspan.flat(), dspan.flat(), meta, meta.size, nb))
        return
    dm = _device_table(meta)
    if kernel.pointers:
        args = (sspan.base, sspan.length, dspan.base, dspan.length, dm.data.ptr, meta.size, nb)
    else:
        args = (sspan.flat(), dspan.flat(), dm, meta.size, nb)
    _launch(kernel, grid, block, gpu, args, keep=dm)
