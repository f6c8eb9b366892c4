"""The concat family: the ``segments`` kernel and the host work of every concat adjoint/tangent.

``segments`` copies (or adds) a list of strided regions ("segments") from one flat source buffer
to one flat destination buffer in ONE launch: each block finds its segment by binary search in the
table's cumulative block counts.  Used for every concat adjoint/tangent (all inputs of one
destination dtype in one launch) and, through :func:`_run_segments`, for the permutations of
:mod:`.tiled` that keep the innermost axis.  Contiguous aligned runs move as uint32/uint64 words
(copies of any dtype; float16 accumulations as packed halves): :mod:`.words`.

Entry points (called by :mod:`s2sad.kernels` for CuPy arrays, or with ``backend="cuda"``):
:func:`concat_adjoint` and :func:`concat_tangent`.
"""
import numpy as np

from .device import array_module, check_devices, is_cupy, _other_gpu
from .launch import CONFIG, _Fresh, _acc_key, _compiled, _config_key, _device_table, _finish, \
    _get, _get_words, _launch, _nb, _planned, _use_pointers
from .layout import _Span, _addr, _collapse, _extent, _group_spans, _info, _layout, _norm_axis, \
    _real
from .words import half_helpers, widen

cuda = None   # numba.cuda, set when a kernel is built (a module global: the simulator swaps it in kernels)


# ---------------------------------------------------------------------------------------------
# the kernel (built lazily, cached per specialisation)
# ---------------------------------------------------------------------------------------------
def _compute(a, b):
    return np.float64 if (a == np.float64 or b == np.float64) else np.float32


def _segments_kernel(st, dt, D, acc, pack, pointers):
    tpb, ept = CONFIG["tpb"], CONFIG["ept"]
    return _compiled(("seg", st, dt, D, acc, pack, pointers, tpb, ept),
                     lambda: _build_segments(st, dt, D, acc, pointers, tpb, ept, pack))


def _element_ops(st, dt, pack):
    """``(VT, LD, ADD, PUT)`` of the kernel body: the type a thread holds loaded values in, the
    conversion of a loaded value to it, the value stored by an accumulation ``ADD(old, new)`` and
    by a copy ``PUT(new)``.  ``pack``: 1 = elements (arithmetic in float32 or float64); 0 = words
    whose bits are copied; 2 or 4 = words of packed float16 halves (see :mod:`.words`)."""
    if pack == 1:
        CT = _compute(st, dt)
        OT = dt.type

        def LD(x):
            return CT(x)

        def ADD(b, a):
            return OT(b + a)

        def PUT(a):
            return OT(a)
        return CT, LD, ADD, PUT
    WT = st.type

    def LD(x):
        return x

    def PUT(a):
        return a
    if pack == 0:
        return WT, LD, PUT, PUT
    h2f, f2h = half_helpers()
    PACK = pack

    def ADD(b, a):
        r = WT(0)
        for k in range(PACK):
            sh = WT(16 * k)
            m = WT(0xFFFF)
            r = WT(r | (WT(f2h(h2f((b >> sh) & m) + h2f((a >> sh) & m))) << sh))
        return r
    return WT, LD, ADD, PUT


def _build_segments(st, dt, D, acc, pointers, tpb, ept, pack=1):
    global cuda
    cuda = _nb()
    VT, LD, ADD, PUT = _element_ops(st, dt, pack)
    LD, ADD, PUT = (cuda.jit(device=True)(f) for f in (LD, ADD, PUT))
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
                va = cuda.local.array(EPT, VT)
                for e in range(EPT):
                    va[e] = LD(src[so + (k0 + e * TPB) * ss])
                if ACC:
                    vb = cuda.local.array(EPT, VT)
                    for e in range(EPT):
                        vb[e] = LD(dst[do + (k0 + e * TPB) * ds])
                    for e in range(EPT):
                        dst[do + (k0 + e * TPB) * ds] = ADD(vb[e], va[e])
                else:
                    for e in range(EPT):
                        dst[do + (k0 + e * TPB) * ds] = PUT(va[e])
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
                        dst[di] = ADD(LD(dst[di]), LD(src[si]))
                    else:
                        dst[di] = PUT(LD(src[si]))
            b += cuda.gridDim.x

    return _finish(body, st, dt, pointers)


# ---------------------------------------------------------------------------------------------
# segments: strided regions, launched by groups
# ---------------------------------------------------------------------------------------------
class _Seg:
    __slots__ = ("src", "saddr", "dst", "daddr", "shape", "sst", "dstr", "srdt", "drdt", "n", "pack")

    def __init__(self, src, saddr, dst, daddr, shape, sst, dstr, srdt, drdt):
        self.src, self.saddr, self.dst, self.daddr = src, saddr, dst, daddr
        self.srdt, self.drdt = srdt, drdt
        self.pack = 1          # elements; words: see .words.widen
        shape, (sst, dstr) = _collapse(shape, [sst, dstr])
        self.shape, self.sst, self.dstr = shape, sst, dstr
        n = 1
        for s in shape:
            n *= s
        self.n = n


def _run_segments(segs, acc):
    """Copy (acc=False) or add (acc=True) every segment; one launch per (dtypes, packing, buffer
    group, round).  Contiguous aligned runs move as words (:func:`.words.widen`); on the GPU the
    word kernels are built before anything is launched, and if one fails to build all of it
    moves as elements."""
    segs = [s for s in segs if s.n > 0]
    if not segs:
        return
    gpu = is_cupy(segs[0].src)
    plan = _batches(widen(segs, acc, _Seg), acc)
    if gpu and not all(_get_words(_segments_kernel, srdt, drdt, max(len(s.shape) for s in batch),
                                  acc, pack) is not None
                       for batch, srdt, drdt, pack in plan if pack != 1):
        plan = _batches(segs, acc)
    for batch, srdt, drdt, pack in plan:
        _launch_segment_batch(batch, srdt, drdt, acc, gpu, pack)


def _batches(segs, acc):
    """(segments, source dtype, destination dtype, packing) of each launch group."""
    by_dt = {}
    for s in segs:
        by_dt.setdefault((s.srdt, s.drdt, s.pack), []).append(s)
    return [(batch, srdt, drdt, pack) for (srdt, drdt, pack), group in by_dt.items()
            for batch in _rounds(group, acc)]


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


def _launch_segment_batch(batch, srdt, drdt, acc, gpu, pack):
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
            _launch_segments_table(part, sspan, dspan, srdt, drdt, acc, gpu, pack)


def _launch_segments_table(part, sspan, dspan, srdt, drdt, acc, gpu, pack):
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
    kernel = _get(_segments_kernel, srdt, drdt, D, acc, pack) if gpu else \
        _segments_kernel(srdt, drdt, D, acc, pack, False)
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
# concat
# ---------------------------------------------------------------------------------------------
def _region_strides(shape, g_stride):
    """C-order strides of a flat run of ``shape`` inside a 1-D buffer of stride ``g_stride``."""
    st, acc = [], g_stride
    for n in reversed(shape):
        st.append(acc)
        acc *= n
    return st[::-1]


def concat_adjoint(g, arrays, infos, axis, starts, acc):
    other = _other_gpu(check_devices("concat_adjoint", (g, arrays, acc) if acc is not None else (g, arrays)))
    if other is not None:
        with other:
            return concat_adjoint(g, arrays, infos, axis, starts, acc)
    xp = array_module(g)
    gpu = xp is not np

    def compute():
        return _concat_adjoint(g, arrays, infos, axis, starts, acc, xp, gpu)
    if gpu and _use_pointers() and (axis is not None or g.ndim == 1) and \
            (acc is None or not any(b is None and info[1] is not None for b, info in zip(acc, infos))):
        # (mixed fresh and accumulated outputs share one destination span: not planned)
        # (g's address modulo 16: which runs move as words depends on it)
        key = ("cat", g.shape, g.strides, g.dtype.char, g.device.id, g.data.ptr % 16, axis, tuple(infos),
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
    xp = np
    for a in (*tangents, *arrays):
        if is_cupy(a):
            xp = array_module(a)
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
