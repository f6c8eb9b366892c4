"""Building and launching the kernels, shared by both families (:mod:`.segments`, :mod:`.tiled`).

* ``CONFIG``: launch parameters of both kernels and the switches below; ``_state``: the errors
  that made a fast path fall back.
* The lazy Numba import (:func:`_nb`, with the numba-cuda 0.30 + NumPy 2.5 ``np.row_stack``
  workaround) and the per-specialisation kernel cache (:func:`_compiled`).
* Entry points: on a real GPU the kernels are launched through a thin entry point that takes raw
  device pointers (int64 scalars) instead of array objects, which avoids Numba's per-argument
  conversion cost (``CONFIG["pointers"]``); the array entry point is the fallback and the one the
  simulator runs (:func:`_finish`, :class:`_Launcher`).
* Launching on CuPy's current stream (:func:`_launch`), device tables uploaded from pinned host
  memory (:func:`_device_table`), and plans: the host work of one adjoint, recorded once and
  replayed (:func:`_planned`).
* The bounded, thread-safe caches (:class:`_Cache`: device tables, plans).

A kernel family supplies only the kernel body ``body(src, dst, table, tlen, nblocks)`` and the
host work that fills its table.
"""
import threading

import numpy as np

from ..errors import MissingExtraError
from .gemm import active as graph_active, retain

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
    # words (see .words): contiguous aligned runs move as uint32/uint64 words; copies of any dtype
    # as word_copy-byte words, float16 accumulations as word_acc-byte words of packed halves
    "words": True,
    "word_copy": 8,
    "word_acc": 4,
    "max_grid": 1 << 20,
    "pointers": True,  # raw-pointer entry points on the GPU (falls back to arrays if they fail to build)
    "launch": "cupy",  # who launches raw-pointer kernels: "cupy" (a few µs) or "numba"
    "table_cache": 256,
}

_state = {"pointer_error": None, "cupy_launch_error": None, "words_error": None}
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
        try:
            from numba import cuda as _c
        except ImportError as e:
            raise MissingExtraError.of(
                e, "the concatenate and permute adjoints on CuPy arrays (Numba CUDA kernels)",
                "gpu", "cupy, numba and numba-cuda") from None
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


_NAMES = {np.dtype(np.float16): "float16", np.dtype(np.float32): "float32",
          np.dtype(np.float64): "float64", np.dtype(np.complex64): "complex64",
          np.dtype(np.complex128): "complex128", np.dtype(np.uint32): "uint32",
          np.dtype(np.uint64): "uint64"}


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
        if graph_active() and cp.cuda.runtime.streamIsCapturing(stream.ptr):
            # a capture only records the upload: the cached table would be empty for later calls
            raise RuntimeError("graph mode: a kernel table the warm-up call did not make is "
                               "needed during capture")
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


def _get_words(builder, *args):
    """A kernel over words (see :mod:`.words`), or None when it fails to build; the caller then
    moves elements instead.  The error is kept in ``_state["words_error"]`` (which turns words off
    from then on); unlike :func:`_get`, a failure does not give up the raw-pointer entry."""
    try:
        return builder(*args, _use_pointers())
    except Exception as e:  # noqa: BLE001  (record and fall back to elements)
        _state["words_error"] = repr(e)
        return None


_tls = threading.local()      # .rec: the launches being recorded for a plan (see _planned)


def _launch(launcher, grid, block, gpu, args, keep=None):
    rec = getattr(_tls, "rec", None)
    if rec is not None:
        rec.append((launcher, grid, block, args, keep))
    if keep is not None:
        retain(keep)          # graph mode: a captured graph holds the tables its kernels read
    launcher(grid, block, args, gpu)


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
        tuple(sorted(CONFIG["tile_wide"].items())), CONFIG["launch"], CONFIG["words"], \
        CONFIG["word_copy"], CONFIG["word_acc"]


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
    for launcher, grid, block, sdelta, slen, grp, dd, tail, keep in launches:
        if keep is not None:
            retain(keep)
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
