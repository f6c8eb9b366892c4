"""Moving elements as wider words: the host-side splitting and the float16 bit helpers.

A kernel that moves 2-byte (or 4-byte) elements one by one issues narrow memory accesses: on an
H200 the float16 concat and permute adjoints ran at about half the rate of float32.  Here, runs of
elements that are contiguous and suitably aligned on both sides are re-expressed in *words*
(``uint32``/``uint64``), so each access moves 4 or 8 bytes:

* a **copy** does not look at its elements: any dtype's contiguous run is copied as words
  (``pack == 0``: the kernel copies the words' bits);
* an **accumulation** of float16 unpacks each word into its ``pack`` halves, adds them in float32
  and rounds each sum back to float16 (round to nearest even, as the element path does), so the
  result is bit for bit the element path's.

:func:`widen` splits a segment of the segments kernel (:mod:`.segments`) into an unaligned head,
a word body and a tail (1-D runs), or turns it whole into words (n-D runs whose inner axis and
every outer stride are word multiples); segments that do not qualify stay element segments.
The tiled kernel (:mod:`.tiled`) packs float16 pairs along both fast axes itself and uses only
:func:`half_helpers`.

``CONFIG["words"]`` (:mod:`.launch`) switches all of this off (the element path alone); so does
a word kernel that fails to build on the GPU (``_state["words_error"]``, see ``launch._get_words``:
the work then moves as elements, nothing is launched twice).
"""
import numpy as np

from .launch import CONFIG, _sim_config, _state

HALF = np.dtype(np.float16)
WORD = {4: np.dtype(np.uint32), 8: np.dtype(np.uint64)}


# ---------------------------------------------------------------------------------------------
# float16 <-> bits, for kernels
# ---------------------------------------------------------------------------------------------
def half_helpers():
    """``(h2f, f2h)`` for kernel bodies: ``h2f(bits)`` is the float16 whose bits are the low 16 of
    the unsigned integer ``bits``, as float32; ``f2h(x)`` is the bits of float32 ``x`` rounded to
    float16 (nearest even), zero-extended to uint32.  LLVM bitcasts on the GPU (one ``cvt`` each
    way); NumPy scalar views under the simulator."""
    if _sim_config():
        return _sim_h2f, _sim_f2h
    return _gpu_helpers()


def _sim_h2f(bits):
    return np.float32(np.uint16(int(bits) & 0xFFFF).view(np.float16))


def _sim_f2h(x):
    return np.uint32(np.float16(x).view(np.uint16))


_gpu = []


def _h2f_codegen(context, builder, signature, args):
    """LLVM IR of ``h2f``: the low 16 bits of an integer, bitcast to half, widened to float."""
    from llvmlite import ir
    v = args[0]
    if v.type.width > 16:
        v = builder.trunc(v, ir.IntType(16))
    return builder.fpext(builder.bitcast(v, ir.HalfType()), ir.FloatType())


def _f2h_codegen(context, builder, signature, args):
    """LLVM IR of ``f2h``: a float (or double) rounded to half, its 16 bits zero-extended to i32."""
    from llvmlite import ir
    v = args[0]
    if isinstance(v.type, ir.DoubleType):
        v = builder.fptrunc(v, ir.FloatType())
    h = builder.fptrunc(v, ir.HalfType())
    return builder.zext(builder.bitcast(h, ir.IntType(16)), ir.IntType(32))


def intrinsics(intrinsic, types):
    """``(h2f, f2h)`` as Numba intrinsics made by ``intrinsic`` (the CUDA target's here; the CPU
    target's in the tests, which check the same IR exhaustively against NumPy)."""
    @intrinsic
    def h2f(typingctx, bits):
        if not isinstance(bits, types.Integer):
            return None
        return types.float32(bits), _h2f_codegen

    @intrinsic
    def f2h(typingctx, x):
        if not isinstance(x, types.Float) or x.bitwidth < 32:
            return None
        return types.uint32(x), _f2h_codegen
    return h2f, f2h


_gpu = []


def _gpu_helpers():
    if not _gpu:
        from numba.cuda import types
        from numba.cuda.extending import intrinsic
        _gpu[:] = intrinsics(intrinsic, types)
    return tuple(_gpu)


# ---------------------------------------------------------------------------------------------
# segments -> word segments
# ---------------------------------------------------------------------------------------------
def word_size(dt, acc):
    """Bytes per word for a run of dtype ``dt`` (copy, or accumulation when ``acc``); 0: no words."""
    if not CONFIG["words"] or _state["words_error"] is not None:
        return 0
    if acc:
        if dt != HALF:
            return 0
        w = CONFIG["word_acc"]
    else:
        w = CONFIG["word_copy"]
    return w if w > dt.itemsize else 0


def widen(segs, acc, seg_type):
    """The segments ``segs`` (of :class:`.segments._Seg`), with every qualifying run re-expressed
    in words (``seg.pack``: 1 for elements, 0 for copied words, 2 or 4 for packed float16)."""
    out = []
    for s in segs:
        w = word_size(s.srdt, acc) if s.srdt == s.drdt else 0
        if not w or s.sst[-1] != 1 or s.dstr[-1] != 1 or s.shape[-1] < 2:
            out.append(s)
            continue
        out.extend(_split(s, w, acc, seg_type))
    return out


def _split(s, w, acc, seg_type):
    isz = s.srdt.itemsize
    r = w // isz
    wdt = WORD[w]
    pack = r if acc else 0

    def words(saddr, daddr, shape, sst, dstr):
        seg = seg_type(s.src, saddr, s.dst, daddr, shape, sst, dstr, wdt, wdt)
        seg.pack = pack
        return seg

    def elements(off, n):
        return seg_type(s.src, s.saddr + off * isz, s.dst, s.daddr + off * isz, [n], [1], [1],
                        s.srdt, s.drdt)
    if len(s.shape) == 1:
        if (s.saddr - s.daddr) % w or s.saddr % isz:
            return [s]                    # the two sides can never be word-aligned together
        n = s.n
        head = ((-s.saddr) % w) // isz
        nw = (n - head) // r if n > head else 0
        if nw == 0:
            return [s]
        tail = n - head - nw * r
        out = [words(s.saddr + head * isz, s.daddr + head * isz, [nw], [1], [1])]
        if head:
            out.append(elements(0, head))
        if tail:
            out.append(elements(head + nw * r, tail))
        return out
    outer = list(s.sst[:-1]) + list(s.dstr[:-1])
    if s.saddr % w or s.daddr % w or s.shape[-1] % r or any((x * isz) % w for x in outer):
        return [s]
    shape = list(s.shape[:-1]) + [s.shape[-1] // r]
    return [words(s.saddr, s.daddr, shape, [x * isz // w for x in s.sst[:-1]] + [1],
                  [x * isz // w for x in s.dstr[:-1]] + [1])]
