"""Words (s2sad/kernels/words.py): contiguous aligned runs moved as uint32/uint64 words, float16
accumulated as packed pairs, float16 permutes moved in pairs.  The splitting is checked on its own
(no Numba); the kernels run under Numba's CUDA simulator and must agree bit for bit with NumPy
(float16 sums rounded once from float32, as the element path does) and with the element path."""
import os

import numpy as np
import pytest

from s2sad.kernels import concat_adjoint, permute_adjoint
from s2sad.kernels import launch, words
from kernel_cases import bits_equal, special_halves

SIM = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"
# (inf - inf and overflow to inf are among the cases: NumPy warns about them, as it should)
pytestmark = pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning",
                                        "ignore:overflow:RuntimeWarning")
sim_only = pytest.mark.skipif(not SIM, reason="simulator tests (NUMBA_ENABLE_CUDASIM=1)")
H = np.float16


class _S:
    """A stand-in for segments._Seg (the splitting takes the class to build with)."""

    def __init__(self, src, saddr, dst, daddr, shape, sst, dstr, srdt, drdt):
        self.src, self.saddr, self.dst, self.daddr = src, saddr, dst, daddr
        self.shape, self.sst, self.dstr = list(shape), list(sst), list(dstr)
        self.srdt, self.drdt = np.dtype(srdt), np.dtype(drdt)
        self.n = int(np.prod(shape))
        self.pack = 1


def _cover(parts, s):
    """(start element, count, pack, word bytes) of each part, in element units of ``s``."""
    isz = s.srdt.itemsize
    out = []
    for p in parts:
        wsz = p.srdt.itemsize
        assert (p.saddr - s.saddr) == (p.daddr - s.daddr)       # both sides move together
        assert p.saddr % wsz == 0 and p.daddr % wsz == 0          # every word is aligned
        out.append(((p.saddr - s.saddr) // isz, p.n * wsz // isz, p.pack, wsz))
    return sorted(out)


@pytest.fixture
def config():
    saved = dict(launch.CONFIG)
    yield launch.CONFIG
    launch.CONFIG.clear()
    launch.CONFIG.update(saved)


# ------------------------------------------------------------------ the splitting (no kernels)
@pytest.mark.parametrize("off,n,expect", [
    (0, 8, [(0, 8, 2, 4)]),                                   # aligned, whole words
    (2, 7, [(0, 1, 1, 2), (1, 6, 2, 4)]),                     # 1 head half, 3 words
    (0, 7, [(0, 6, 2, 4), (6, 1, 1, 2)]),                     # 3 words, 1 tail half
    (2, 2, [(0, 1, 1, 2), (1, 1, 1, 2)]),                     # head and tail, no word... see below
])
def test_split_float16_accumulation(off, n, expect, config):
    s = _S(None, 1000 + off, None, 2000 + off, [n], [1], [1], H, H)
    parts = words.widen([s], True, _S)
    if off == 2 and n == 2:          # one half before the boundary, one after: no whole word
        assert parts == [s]
        return
    assert _cover(parts, s) == expect


def test_split_rules(config):
    s = _S(None, 1000, None, 2002, [8], [1], [1], H, H)
    assert words.widen([s], True, _S) == [s]                  # the sides can never align together
    s = _S(None, 1000, None, 2000, [8], [2], [1], H, H)
    assert words.widen([s], True, _S) == [s]                  # strided source
    s = _S(None, 1001, None, 2001, [8], [1], [1], H, H)
    assert words.widen([s], True, _S) == [s]                  # elements off their own alignment
    s = _S(None, 1000, None, 2000, [8], [1], [1], np.float32, np.float32)
    assert words.widen([s], True, _S) == [s]                  # float32 adds stay elements
    parts = words.widen([s], False, _S)                        # ... but copy as uint64
    assert _cover(parts, s) == [(0, 8, 0, 8)]
    s = _S(None, 1004, None, 2004, [9], [1], [1], np.float32, np.float32)
    assert _cover(words.widen([s], False, _S), s) == [(0, 1, 1, 4), (1, 8, 0, 8)]
    s = _S(None, 1000, None, 2000, [8], [1], [1], np.float16, np.float32)
    assert words.widen([s], False, _S) == [s]                 # a conversion is no copy
    s = _S(None, 1000, None, 2000, [8], [1], [1], np.float64, np.float64)
    assert words.widen([s], False, _S) == [s]                 # already 8 bytes
    config["words"] = False
    s = _S(None, 1000, None, 2000, [8], [1], [1], H, H)
    assert words.widen([s], True, _S) == [s]


def test_split_two_dimensional(config):
    # rows of 6 halves, row strides 10 (source) and 6 (destination): 3 words a row
    s = _S(None, 1000, None, 2000, [4, 6], [10, 1], [6, 1], H, H)
    (p,) = words.widen([s], True, _S)
    assert (p.shape, p.sst, p.dstr, p.pack, p.srdt) == ([4, 3], [5, 1], [3, 1], 2, np.dtype(np.uint32))
    for bad in ([4, 5], [10, 1], [6, 1], 1000), ([4, 6], [9, 1], [6, 1], 1000), \
            ([4, 6], [10, 1], [6, 1], 1002):
        shape, sst, dstr, addr = bad
        s = _S(None, addr, None, 2000, shape, sst, dstr, H, H)
        assert words.widen([s], True, _S) == [s]


# ------------------------------------------------------------------ kernels under the simulator
@pytest.fixture
def sim(config):
    """Tiny launches (a Python thread per simulated CUDA thread); records the packing of every
    segments launch and the pair choice of every tiled launch."""
    from s2sad.kernels import segments, tiled
    config.update(tpb=8, ept=2, tile=8, tile_tx=8, tile_by=4, tile_wide={})
    seen = []
    seg0, tile0 = segments._segments_kernel, tiled._tiled_kernel

    def seg(st, dt, D, acc, pack, pointers):
        seen.append(("seg", pack))
        return seg0(st, dt, D, acc, pack, pointers)

    def tile(edt, DB, acc, T, TX, BY, PK, pointers):
        seen.append(("tile", PK))
        return tile0(edt, DB, acc, T, TX, BY, PK, pointers)
    segments._segments_kernel, tiled._tiled_kernel = seg, tile
    yield seen
    segments._segments_kernel, tiled._tiled_kernel = seg0, tile0


def halves_at(rng, n, off):
    """n float16 values starting ``off`` halves into a fresh buffer (so at a chosen alignment)."""
    buf = special_halves(rng, n + off + 3)
    base = (-(buf.__array_interface__["data"][0] // 2)) % 4       # 8-byte boundary first
    return buf[base + off: base + off + n] if base + off + n <= buf.size else \
        special_halves(rng, n)


@sim_only
@pytest.mark.parametrize("goff,aoff", [(0, 0), (1, 1), (1, 0), (2, 0), (3, 1)])
def test_concat_accumulate_float16_offsets(goff, aoff, sim):
    rng = np.random.default_rng(40 + 4 * goff + aoff)
    sizes = [9, 1, 2, 16, 5, 0, 8]
    g = halves_at(rng, sum(sizes), goff)
    xs = [np.zeros(n, H) for n in sizes]
    acc = [halves_at(rng, n, aoff) for n in sizes]
    expect = [(a.astype(np.float32) + g[s:s + n].astype(np.float32)).astype(H)
              for a, s, n in zip(acc, np.cumsum([0] + sizes[:-1]), sizes)]
    got = concat_adjoint(g, xs, 0, acc=acc, backend="cuda")
    for a, e in zip(got, expect):
        bits_equal(a, e)
    if goff % 2 == aoff % 2:         # some inputs share the alignment: packed pairs were used
        assert ("seg", 2) in sim


@sim_only
def test_concat_words_match_element_path(sim, config):
    rng = np.random.default_rng(50)
    sizes = [7, 12, 3, 10]
    g = halves_at(rng, sum(sizes), 0)
    out = []
    for on in (True, False):
        config["words"] = on
        acc = [halves_at(np.random.default_rng(51 + i), n, 0) for i, n in enumerate(sizes)]
        out.append(concat_adjoint(g, [np.zeros(n, H) for n in sizes], 0, acc=acc, backend="cuda"))
    for a, b in zip(*out):
        bits_equal(a, b)
    assert ("seg", 2) in sim and ("seg", 1) in sim


@sim_only
def test_concat_accumulate_same_buffer_twice_float16(sim):
    rng = np.random.default_rng(52)
    g = halves_at(rng, 20, 0)
    b = halves_at(rng, 10, 0)
    expect = ((b.astype(np.float32) + g[:10].astype(np.float32)).astype(H).astype(np.float32)
              + g[10:].astype(np.float32)).astype(H)
    concat_adjoint(g, [np.zeros(10, H)] * 2, 0, acc=[b, b], backend="cuda")
    bits_equal(b, expect)


@sim_only
@pytest.mark.parametrize("goff", [0, 1])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.complex64])
def test_concat_fresh_copies_words(dtype, goff, sim):
    """Fresh adjoints are copies: moved as uint64 words with element heads/tails, bit for bit
    (goff=1: g starts one element off the outputs' alignment; words only for complex64)."""
    rng = np.random.default_rng(53)
    sizes = [5, 8, 1, 13]
    n = sum(sizes)
    big = rng.standard_normal(2 * n + 8).astype(dtype)
    g = big[goff:n + goff]
    got = concat_adjoint(g, [np.zeros(k, dtype) for k in sizes], 0, backend="cuda")
    pos = 0
    for a, k in zip(got, sizes):
        np.testing.assert_array_equal(a.view(np.uint8), np.ascontiguousarray(g[pos:pos + k]).view(np.uint8))
        pos += k
    assert (("seg", 0) in sim) == (goff == 0 or dtype == np.complex64)


@sim_only
def test_concat_axis1_rows_as_words(sim):
    rng = np.random.default_rng(54)
    widths = [4, 2, 6, 3]                              # 3: an odd row stays elements
    g = special_halves(rng, 5 * sum(widths)).reshape(5, sum(widths))
    xs = [np.zeros((5, w), H) for w in widths]
    acc = [special_halves(rng, 5 * w).reshape(5, w) for w in widths]
    expect = []
    pos = 0
    for a, w in zip(acc, widths):
        expect.append((a.astype(np.float32) + g[:, pos:pos + w].astype(np.float32)).astype(H))
        pos += w
    got = concat_adjoint(g, xs, 1, acc=acc, backend="cuda")
    for a, e in zip(got, expect):
        bits_equal(a, e)


@sim_only
@pytest.mark.parametrize("layout", ["neg", "step", "T"])
def test_concat_strided_float16_stays_correct(layout, sim):
    from kernel_cases import strided
    rng = np.random.default_rng(55)
    g = strided(rng, (6, 8), H, layout)
    xs = [np.zeros((2, 8), H), np.zeros((4, 8), H)]
    acc = [special_halves(rng, 16).reshape(2, 8), special_halves(rng, 32).reshape(4, 8)]
    expect = [(acc[0].astype(np.float32) + g[:2].astype(np.float32)).astype(H),
              (acc[1].astype(np.float32) + g[2:].astype(np.float32)).astype(H)]
    got = concat_adjoint(g, xs, 0, acc=acc, backend="cuda")
    for a, e in zip(got, expect):
        bits_equal(a, e)


@sim_only
@pytest.mark.parametrize("shape,axes,pk", [
    ((10, 6), (1, 0), 2),          # partial tiles (the tile is 8 here)
    ((16, 8), (1, 0), 2),          # whole tiles
    ((4, 6, 10), (2, 0, 1), 2),    # a batch axis
    ((6, 4, 10), (1, 0, 2), None), # keeps the innermost axis: segments kernel (words)
    ((11, 6), (1, 0), 1),          # odd fast axis: elements
    ((10, 7), (1, 0), 1),
])
@pytest.mark.parametrize("acc", [False, True])
def test_permute_float16_pairs(shape, axes, pk, acc, sim):
    rng = np.random.default_rng(60)
    g = special_halves(rng, int(np.prod(shape))).reshape(shape)
    inv = tuple(np.argsort(axes))
    ref = np.ascontiguousarray(np.transpose(g, inv))
    if acc:
        a = special_halves(rng, ref.size).reshape(ref.shape)
        expect = (a.astype(np.float32) + ref.astype(np.float32)).astype(H)
        got = permute_adjoint(g, axes, acc=a, backend="cuda")
        assert got is a
    else:
        expect = ref
        got = permute_adjoint(g, axes, backend="cuda")
    bits_equal(got, expect)
    tiles = [p for k, p in sim if k == "tile"]
    assert tiles == ([] if pk is None else [pk])


@sim_only
def test_permute_float16_misaligned_or_strided_target(sim):
    rng = np.random.default_rng(61)
    g = special_halves(rng, 60).reshape(6, 10)
    buf = special_halves(rng, 61)
    a = buf[1:].reshape(10, 6)               # odd start: no pairs
    expect = (a.astype(np.float32) + g.T.astype(np.float32)).astype(H)
    permute_adjoint(g, (1, 0), acc=a, backend="cuda")
    bits_equal(a, expect)
    big = special_halves(rng, 10 * 7).reshape(10, 7)
    a2 = big[:, :6]                          # an odd row stride
    expect2 = (a2.astype(np.float32) + g.T.astype(np.float32)).astype(H)
    permute_adjoint(g, (1, 0), acc=a2, backend="cuda")
    bits_equal(a2, expect2)
    assert [p for k, p in sim if k == "tile"] == [1, 1]


@sim_only
def test_concat_accumulate_adjacent_views_of_one_float16_buffer(sim):
    """Accumulation buffers that are adjacent odd-length views of one buffer: words never cross
    from one view into the next (the halves at the seams go as elements)."""
    rng = np.random.default_rng(62)
    sizes = [5, 7, 6, 3]
    buf = special_halves(rng, sum(sizes))
    before = buf.copy()
    views, pos = [], 0
    for k in sizes:
        views.append(buf[pos:pos + k])
        pos += k
    g = special_halves(rng, sum(sizes))
    concat_adjoint(g, [np.zeros(k, H) for k in sizes], 0, acc=views, backend="cuda")
    bits_equal(buf, (before.astype(np.float32) + g.astype(np.float32)).astype(H))
    assert ("seg", 2) in sim and ("seg", 1) in sim


def test_half_bit_intrinsics_ir_exhaustive():
    """The LLVM IR the GPU kernels use for float16 <-> bits (words.intrinsics), compiled for the
    CPU: every one of the 65536 halves decodes as NumPy's float16 does, and float32 values
    (all halves, their midpoints and neighbours, overflow, subnormals) round to NumPy's bits."""
    numba = pytest.importorskip("numba")
    from numba.core import types
    from numba.extending import intrinsic
    h2f, f2h = words.intrinsics(intrinsic, types)

    @numba.njit
    def decode(bits, out):
        for i in range(bits.size):
            out[i] = h2f(bits[i])

    @numba.njit
    def encode(x, out):
        for i in range(x.size):
            out[i] = f2h(x[i])
    bits = np.arange(1 << 16, dtype=np.uint32)
    out = np.empty(bits.size, np.float32)
    decode(bits, out)
    ref = bits.astype(np.uint16).view(np.float16).astype(np.float32)
    np.testing.assert_array_equal(out.view(np.uint32)[~np.isnan(ref)], ref.view(np.uint32)[~np.isnan(ref)])
    assert np.isnan(out[np.isnan(ref)]).all()
    decode(bits + np.uint32(0xABCD0000), out)           # high bits are ignored
    np.testing.assert_array_equal(np.isnan(out), np.isnan(ref))
    f = np.unique(ref[np.isfinite(ref)])                  # sorted; ties are the midpoints
    x = np.concatenate([f, f[:-1] + np.diff(f) / 2, np.nextafter(f, np.inf), np.nextafter(f, -np.inf),
                        np.float32([1e9, -1e9, 65520, 65519.99, 1e-9, -1e-9, np.inf, -np.inf])])
    x = x.astype(np.float32)
    assert x.size > 4 * 60000
    got = np.empty(x.size, np.uint32)
    with np.errstate(over="ignore"):
        encode(x, got)
        expect = x.astype(np.float16).view(np.uint16).astype(np.uint32)
    np.testing.assert_array_equal(got, expect)
