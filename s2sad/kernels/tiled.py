"""The permute family: the ``tiled`` kernel and the host work of every permute adjoint/tangent.

``tiled`` is a shared-memory tile transpose (``T x (T+1)``; by ``CONFIG``, 32 x 32 tiles moved by
32 x 8 threads, 4 elements each, and for float16 64 x 64 tiles moved by 32 x 4 threads, 32 elements
each) for permutations that move the innermost axis; remaining axes are batched.
Interior tiles take a path without bounds tests, so each thread issues all its loads (and all its
read-modify-writes) back to back; addresses advance by precomputed steps.  float16 moves through
float32 tiles and arithmetic, and, where both fast axes are contiguous, even and 4-byte aligned, in
pairs: each global access is a uint32 word of two halves (:func:`_pairs`, :mod:`.words`).
Permutations that keep the innermost axis, and mixed dtypes, go through the ``segments`` kernel of
:mod:`.segments` as one strided segment.

Entry point (called by :mod:`s2sad.kernels` for CuPy arrays, or with ``backend="cuda"``):
:func:`permute`.
"""
import numpy as np

from .device import array_module, check_devices, _other_gpu
from .launch import CONFIG, _Fresh, _acc_key, _compiled, _config_key, _device_table, _finish, \
    _get, _get_words, _launch, _nb, _planned, _state, _use_pointers
from .layout import _Span, _addr, _collapse, _extent, _layout, _real
from .segments import _Seg, _run_segments
from .words import HALF, half_helpers

cuda = None   # numba.cuda, set when a kernel is built (a module global: the simulator swaps it in kernels)


# ---------------------------------------------------------------------------------------------
# the kernel (built lazily, cached per specialisation)
# ---------------------------------------------------------------------------------------------
def _tile_type(dt):
    """The arithmetic (and shared-tile) type of the tiled kernel: float16 goes through float32."""
    return np.float32 if dt == np.float16 else dt.type


def _tile_config(edt):
    """(tile edge, block width, block height) of the tiled kernel for elements of dtype ``edt``;
    the shared tile stays under 40 kB."""
    T, BY = CONFIG["tile_wide"].get(edt.name, (CONFIG["tile"], CONFIG["tile_by"]))
    while T > 16 and T * (T + 1) * np.dtype(_tile_type(edt)).itemsize > 40000:
        T //= 2
    return T, min(CONFIG["tile_tx"], T), min(BY, T)


def _tiled_kernel(edt, DB, acc, T, TX, BY, PK, pointers):
    return _compiled(("tile", edt, DB, acc, T, TX, BY, PK, pointers),
                     lambda: _build_tiled(edt, DB, acc, T, TX, BY, pointers, PK))


def _word_ops(edt, PK):
    """``(WT, LD, GET, PUT, ADD)`` of the kernel body for words of ``PK`` elements along both fast
    axes: the buffers' dtype, a loaded destination word as a thread holds it, element ``k`` of a
    source word (in the tile's type), the word that stores tile values ``v0, v1`` (``PUT``) or adds
    them to an old word (``ADD``).  PK = 1: the elements themselves; PK = 2: float16 pairs packed
    in uint32 words (the low half is the element at the lower address)."""
    CT = _tile_type(edt)
    if PK == 1:
        OT = edt.type

        def LD(x):
            return CT(x)

        def GET(w, k):
            return CT(w)

        def PUT(v0, v1):
            return OT(v0)

        def ADD(old, v0, v1):
            return OT(old + v0)
        return edt, LD, GET, PUT, ADD
    h2f, f2h = half_helpers()
    WT = np.uint32

    def LD(x):
        return x

    def GET(w, k):
        return h2f((w >> WT(16 * k)) & WT(0xFFFF))

    def PUT(v0, v1):
        return WT(f2h(v0) | (f2h(v1) << WT(16)))

    def ADD(old, v0, v1):
        return WT(f2h(h2f(old & WT(0xFFFF)) + v0) | (f2h(h2f(old >> WT(16)) + v1) << WT(16)))
    return np.dtype(WT), LD, GET, PUT, ADD


def _build_tiled(edt, DB, acc, T, TX, BY, pointers, PK=1):
    """Tiled transpose over elements of dtype ``edt`` (complex elements move whole: 8/16-byte
    accesses); float16 moves through float32 tiles and arithmetic, in pairs (``PK == 2``: each
    global access moves a uint32 word of two halves adjacent along the fast axis of its side)."""
    global cuda
    cuda = _nb()
    from numba.cuda.np.numpy_support import from_dtype
    CT = _tile_type(edt)
    CTN = from_dtype(np.dtype(CT))
    WDT, LD, GET, PUT, ADD = _word_ops(edt, PK)
    VTN = from_dtype(np.dtype(CT)) if PK == 1 else from_dtype(WDT)
    LD, GET, PUT, ADD = (cuda.jit(device=True)(f) for f in (LD, GET, PUT, ADD))
    ACC = acc
    NY, NX = T // BY, T // (TX * PK)   # each thread moves NY x NX words of PK elements
    NACC = NY * NX
    SHAPE = (T, T + 1)               # compile-time shape of the shared tile (+1: no bank conflicts)
    TT = T
    TW = T // PK                     # words per tile edge along a fast axis

    def body(src, dst, meta, mlen, nbatch):
        # meta: n_a, n_l, nt_a, nt_l, s_a, s_l, d_a, d_l, src_off, dst_off, l_on_x,
        #       (shape, ss, ds) * DB, outermost batch axis first
        # a: the source's fast axis (loads coalesce along it), l: the destination's fast axis.
        # n_a, n_l count elements; strides and offsets count words (of PK elements; s_a = d_l = 1
        # when PK > 1).
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
        # per-thread steps between the words a thread moves (strength-reduced addressing)
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
            # load: thread (tx, ty) reads the word of a = a0 + PK*(tx + ix*TX) + k, l = l0 + ty + iy*BY
            p0 = so + (ta * TW + tx) * s_a + (l0 + ty) * s_l
            if full:                  # interior tile: no bounds tests, loads issued together
                for iy in range(NY):
                    for ix in range(NX):
                        w = src[p0 + iy * sy + ix * sx]
                        for k in range(PK):
                            tile[ty + iy * BY, PK * (tx + ix * TX) + k] = GET(w, k)
            else:
                for iy in range(NY):
                    il = l0 + ty + iy * BY
                    for ix in range(NX):
                        ia = a0 + PK * (tx + ix * TX)
                        if il < n_l and ia < n_a:
                            w = src[p0 + iy * sy + ix * sx]
                            for k in range(PK):
                                tile[ty + iy * BY, PK * (tx + ix * TX) + k] = GET(w, k)
            cuda.syncthreads()
            # store: thread (tx, ty) writes the word of l = l0 + PK*(tx + ix*TX) + k, a = a0 + ty + iy*BY
            q0 = do + (a0 + ty) * d_a + (tl * TW + tx) * d_l
            if full and ACC:
                # all of a thread's loads of dst first, then its stores (not load-add-store
                # per element, which serialises the thread's memory traffic)
                old = cuda.local.array(NACC, VTN)
                k = 0
                for iy in range(NY):
                    for ix in range(NX):
                        old[k] = LD(dst[q0 + iy * dy + ix * dx])
                        k += 1
                k = 0
                for iy in range(NY):
                    for ix in range(NX):
                        x0 = PK * (tx + ix * TX)
                        dst[q0 + iy * dy + ix * dx] = ADD(old[k], tile[x0, ty + iy * BY],
                                                          tile[x0 + PK - 1, ty + iy * BY])
                        k += 1
            elif full:
                for iy in range(NY):
                    for ix in range(NX):
                        x0 = PK * (tx + ix * TX)
                        dst[q0 + iy * dy + ix * dx] = PUT(tile[x0, ty + iy * BY],
                                                          tile[x0 + PK - 1, ty + iy * BY])
            else:
                for iy in range(NY):
                    ia = a0 + ty + iy * BY
                    for ix in range(NX):
                        x0 = PK * (tx + ix * TX)
                        il = l0 + x0
                        if il < n_l and ia < n_a:
                            p = q0 + iy * dy + ix * dx
                            if ACC:
                                dst[p] = ADD(LD(dst[p]), tile[x0, ty + iy * BY],
                                             tile[x0 + PK - 1, ty + iy * BY])
                            else:
                                dst[p] = PUT(tile[x0, ty + iy * BY], tile[x0 + PK - 1, ty + iy * BY])
            cuda.syncthreads()
            bz += cuda.gridDim.z

    return _finish(body, WDT, WDT, pointers)


# ---------------------------------------------------------------------------------------------
# permute
# ---------------------------------------------------------------------------------------------
def permute(g, perm, acc):
    """``transpose(g, perm)`` materialised C-contiguous, or added into ``acc`` in place."""
    other = _other_gpu(check_devices("permute_adjoint", (g, acc) if acc is not None else (g,)))
    if other is not None:
        with other:
            return permute(g, perm, acc)
    xp = array_module(g)
    gpu = xp is not np
    oshape = tuple(g.shape[p] for p in perm)
    if acc is not None and tuple(acc.shape) != oshape:
        raise ValueError(f"acc has shape {tuple(acc.shape)}, expected {oshape}")

    def compute():
        return _permute(g, perm, acc, oshape, xp, gpu)
    if gpu and _use_pointers():
        # (g's address modulo 16: whether float16 moves in pairs depends on it)
        key = ("perm", g.shape, g.strides, g.dtype.char, g.device.id, g.data.ptr % 16, perm,
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


def _pairs(g, out, shape, sst, dstr, a, l, edt):
    """True when a float16 permutation can move pairs of halves as uint32 words on both sides:
    both fast axes have unit stride and even length, every other stride is even and both arrays
    start on a 4-byte boundary (so every pair of elements 2i, 2i+1 along a fast axis is one
    aligned word)."""
    if edt != HALF or not CONFIG["words"] or _state["words_error"] is not None or sst[a] != 1 \
            or dstr[l] != 1:
        return False
    if shape[a] % 2 or shape[l] % 2 or _addr(g) % 4 or _addr(out) % 4:
        return False
    return all(x % 2 == 0 for j, x in enumerate(sst) if j != a) and \
        all(x % 2 == 0 for j, x in enumerate(dstr) if j != l)


def _launch_tiled(g, out, shape, sst, dstr, a, l, edt, acc, gpu):
    T, TX, BY = _tile_config(edt)
    batch = [j for j in range(len(shape)) if j not in (a, l)]
    DB = len(batch)
    PK = 2 if _pairs(g, out, shape, sst, dstr, a, l, edt) else 1
    if PK == 2 and gpu and _get_words(_tiled_kernel, edt, DB, acc, T, min(TX, T // 2), BY, 2) is None:
        PK = 1                             # the pair kernel failed to build: elements
    TX = min(TX, T // PK)
    # words: PK elements along the source's axis a and the destination's axis l
    wdt = np.dtype(np.uint32) if PK == 2 else edt
    isz = wdt.itemsize
    wsh_s = [n // PK if j == a else n for j, n in enumerate(shape)]
    wsh_d = [n // PK if j == l else n for j, n in enumerate(shape)]
    sst = [x if j == a else x // PK for j, x in enumerate(sst)]
    dstr = [x if j == l else x // PK for j, x in enumerate(dstr)]
    slo, shi = _extent(wsh_s, sst)
    dlo, dhi = _extent(wsh_d, dstr)
    sspan = _Span([g], [(_addr(g) + slo * isz, _addr(g) + shi * isz)], wdt)
    dspan = _Span([out], [(_addr(out) + dlo * isz, _addr(out) + dhi * isz)], wdt)
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
    kernel = _get(_tiled_kernel, edt, DB, acc, T, TX, BY, PK) if gpu else \
        _tiled_kernel(edt, DB, acc, T, TX, BY, PK, False)
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
