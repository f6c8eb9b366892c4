"""The CuPy path of s2sad.kernels on a real GPU, against NumPy references.  Run with
NUMBA_ENABLE_CUDASIM=0; skipped without CuPy or a GPU."""
import os

import numpy as np
import pytest

from s2sad import DeviceMismatchError
from s2sad.kernels import concat_adjoint, concat_tangent, permute_adjoint, permute_tangent
from kernel_cases import DTYPES, LAYOUTS, rand, strided, tol

try:
    import cupy as cp
    _OK = cp.is_available() and os.environ.get("NUMBA_ENABLE_CUDASIM") == "0"
except Exception:  # noqa: BLE001
    cp, _OK = None, False

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not _OK, reason="needs CuPy, a GPU and NUMBA_ENABLE_CUDASIM=0")]


@pytest.fixture(params=["cupy-launch", "numba-launch", "arrays"], autouse=True)
def route(request):
    """Every test runs through each kernel entry: raw pointers launched by CuPy (the default),
    raw pointers launched by Numba, and Numba's array arguments (the fallback)."""
    from s2sad.kernels import launch
    old = dict(launch.CONFIG)
    launch.CONFIG["pointers"] = request.param != "arrays"
    launch.CONFIG["launch"] = "numba" if request.param == "numba-launch" else "cupy"
    yield request.param
    assert launch._state["cupy_launch_error"] is None
    assert launch._state["pointer_error"] is None
    launch.CONFIG.update(old)


def gpu_like(x):
    """The same layout on the GPU (cupy.asarray keeps strides only for contiguous data, so rebuild views)."""
    return cp.asarray(x)


def check(a, b):
    assert (a is None) == (b is None)
    if a is None:
        return
    a = cp.asnumpy(a)
    assert a.shape == b.shape and a.dtype == b.dtype
    np.testing.assert_allclose(a, b, rtol=tol(a.dtype), atol=tol(a.dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("axis", [0, 1, None])
def test_concat_adjoint(dtype, axis):
    rng = np.random.default_rng(0)
    shapes = [(300, 7), (300, 7), (300, 7)] if axis is None else \
        ([(100, 7), (1, 7), (301, 7)] if axis == 0 else [(33, 5), (33, 1), (33, 700)])
    xs = [rand(rng, s, dtype) for s in shapes]
    g = np.concatenate([rand(rng, s, dtype) for s in shapes], axis=axis)
    got = concat_adjoint(cp.asarray(g), [cp.asarray(x) for x in xs], axis)
    for a, b in zip(got, concat_adjoint(g, xs, axis)):
        check(a, b)


@pytest.mark.parametrize("layout", ["neg", "T", "step", "bcast"])
def test_concat_adjoint_strided_cotangent(layout):
    rng = np.random.default_rng(1)
    gbig = cp.asarray(rand(rng, (130, 90), np.float32))
    views = {"neg": gbig[::-1, ::-1][:65, :45], "T": gbig.T[:45, :65].T, "step": gbig[::2, ::-2],
             "bcast": cp.broadcast_to(gbig[:1, :45], (65, 45))}
    g = views[layout]
    xs = [cp.zeros((65, 20), cp.float32), cp.zeros((65, 25), cp.float64)]
    got = concat_adjoint(g, xs, 1)
    for a, b in zip(got, concat_adjoint(cp.asnumpy(g), [cp.asnumpy(x) for x in xs], 1)):
        check(a, b)


def test_concat_adjoint_mixed_many_and_acc():
    rng = np.random.default_rng(2)
    sizes = rng.integers(0, 5, 1500)
    xs = [np.zeros((int(s), 3), np.float32) for s in sizes]
    xs[3] = np.arange(int(sizes[3]) * 3).reshape(-1, 3)
    xs[7] = xs[7].astype(np.float16)
    g = rand(rng, (int(sizes.sum()), 3), np.float64)
    got = concat_adjoint(cp.asarray(g), [cp.asarray(x) for x in xs], 0)
    for a, b in zip(got, concat_adjoint(g, xs, 0)):
        check(a, b)
    # accumulation into separate user buffers, one of them twice and one strided
    x = rand(rng, (50, 40), np.complex64)
    bufs = [cp.asarray(rand(rng, (50, 40), np.complex64)), None,
            cp.asarray(np.asfortranarray(rand(rng, (50, 40), np.complex64)))[::-1]]
    bufs[1] = bufs[0]
    expect = [cp.asnumpy(b) for b in bufs]
    gg = rand(rng, (150, 40), np.complex64)
    expect[0] = expect[0] + gg[:50] + gg[50:100]
    expect[2] = expect[2] + gg[100:]
    concat_adjoint(cp.asarray(gg), [cp.asarray(x)] * 3, 0, acc=bufs)
    check(bufs[0], expect[0])
    check(bufs[2], expect[2])


def test_concat_tangent():
    rng = np.random.default_rng(3)
    xs = [rand(rng, (40, 3), np.float32), rand(rng, (20, 3), np.float64), rand(rng, (7, 3), np.float32)]
    ts = [rand(rng, (40, 3), np.float32), None, rand(rng, (3, 7), np.float32).T]
    got = concat_tangent([None if t is None else cp.asarray(t) for t in ts], [cp.asarray(x) for x in xs], 0)
    check(got, concat_tangent(ts, xs, 0))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("axes", [(1, 0), (2, 0, 1), (0, 2, 1), (1, 0, 2), None])
def test_permute(dtype, axes):
    rng = np.random.default_rng(4)
    shape = (70, 45) if axes == (1, 0) else (33, 40, 65)
    g = rand(rng, shape, dtype)
    check(permute_adjoint(cp.asarray(g), axes), permute_adjoint(g, axes))
    check(permute_tangent(cp.asarray(g), axes), permute_tangent(g, axes))
    acc = rand(rng, permute_adjoint(g, axes).shape, dtype)
    ca = cp.asarray(acc)
    permute_adjoint(cp.asarray(g), axes, acc=ca)
    check(ca, (acc + permute_adjoint(g, axes)).astype(dtype))


def test_permute_strided_input_and_stream():
    rng = np.random.default_rng(5)
    base = cp.asarray(rand(rng, (80, 90, 6), np.float32))
    g = base[::-1, 5:70:2, ::2]
    with cp.cuda.Stream(non_blocking=True) as s:
        r = permute_adjoint(g, (2, 0, 1))
        s.synchronize()
    check(r, permute_adjoint(cp.asnumpy(g), (2, 0, 1)))


def test_device_guard_mixed():
    with pytest.raises(DeviceMismatchError, match="concat_adjoint"):
        concat_adjoint(cp.ones(4), [cp.ones(2), np.ones(2)], 0)


@pytest.mark.parametrize("dtype", [np.float16, np.complex64, np.float64])
def test_plan_cache_replay(dtype):
    """Repeated calls with the same layout replay a recorded plan: results must stay right."""
    rng = np.random.default_rng(6)
    xs = [rand(rng, (n, 5), dtype) for n in (3, 0, 4, 2)]
    xs.insert(2, np.arange(10).reshape(2, 5))
    cxs = [cp.asarray(x) for x in xs]
    for it in range(3):
        g = rand(rng, (11, 5), dtype)
        got = concat_adjoint(cp.asarray(g), cxs, 0)
        for a, b in zip(got, concat_adjoint(g, xs, 0)):
            check(a, b)
        bufs = [cp.zeros(x.shape, x.dtype) if x.dtype.kind in "fc" else None for x in xs]
        bufs[3] = bufs[0] if xs[3].shape == xs[0].shape else bufs[3]
        concat_adjoint(cp.asarray(g), cxs, 0, acc=bufs)
        check(bufs[4], g[9:].astype(dtype))
        check(bufs[0], g[:3].astype(dtype))
    gflat = rand(rng, (37,), dtype)
    xs2 = [rand(rng, (2, 3), dtype), rand(rng, (31,), dtype)]
    for it in range(2):
        got = concat_adjoint(cp.asarray(gflat), [cp.asarray(x) for x in xs2], None)
        check(got[0], gflat[:6].reshape(2, 3))


@pytest.mark.parametrize("dtype", [np.float32, np.complex64, np.complex128, np.float16])
@pytest.mark.parametrize("axes", [(1, 0), (2, 0, 1)])
def test_permute_plan_replay(dtype, axes):
    """Repeated permute adjoints with one layout replay a recorded plan: new cotangents, fresh
    outputs and accumulation buffers must all come out right on every call."""
    rng = np.random.default_rng(7)
    shape = (130, 67) if axes == (1, 0) else (9, 70, 66)
    acc_ref = rand(rng, tuple(shape[i] for i in np.argsort(axes)), dtype)
    acc = cp.asarray(acc_ref)
    for it in range(3):
        g = rand(rng, shape, dtype)
        fresh = permute_adjoint(cp.asarray(g), axes)
        check(fresh, permute_adjoint(g, axes))
        permute_adjoint(cp.asarray(g), axes, acc=acc)
        acc_ref = (acc_ref + permute_adjoint(g, axes)).astype(dtype)
        check(acc, acc_ref)
        strided_g = cp.asarray(np.concatenate([g, g], axis=-1))[..., ::2]   # not contiguous
        check(permute_adjoint(strided_g, axes), permute_adjoint(cp.asnumpy(strided_g), axes))


def test_kernels_on_another_gpu_than_the_current_one():
    """Arrays on GPU 1 while GPU 0 is current: the kernels run on the arrays' GPU (as CuPy's own
    operations must) and the results stay there."""
    if cp.cuda.runtime.getDeviceCount() < 2:
        pytest.skip("needs two GPUs")
    rng = np.random.default_rng(8)
    xs = [rand(rng, (40, n), np.float32) for n in (3, 30, 7)]
    g = rand(rng, (40, 40), np.float32)
    g3 = rand(rng, (20, 30, 40), np.complex64)
    with cp.cuda.Device(1):
        cg, cxs, cg3 = cp.asarray(g), [cp.asarray(x) for x in xs], cp.asarray(g3)
        acc = cp.zeros((40, 20, 30), np.complex64)
    assert cp.cuda.runtime.getDevice() == 0
    for _ in range(2):                                   # recorded, then replayed
        got = concat_adjoint(cg, cxs, 1)
        assert all(a.device.id == 1 for a in got)
        for a, b in zip(got, concat_adjoint(g, xs, 1)):
            check(a, b)
        r = permute_adjoint(cg3, (1, 2, 0))
        assert r.device.id == 1
        check(r, permute_adjoint(g3, (1, 2, 0)))
    permute_adjoint(cg3, (1, 2, 0), acc=acc)
    check(acc, permute_adjoint(g3, (1, 2, 0)))


@pytest.mark.parametrize("goff", [0, 1, 2, 3])
def test_float16_words_bitwise(goff):
    """float16 concat accumulation in packed pairs (uint32 words) and copies in uint64 words: bit
    for bit NumPy's float32 sum rounded once, at every alignment of g; the same shapes at another
    alignment get a plan of their own."""
    from s2sad.kernels import launch
    from kernel_cases import bits_equal, special_halves
    rng = np.random.default_rng(9)
    sizes = [4097, 1, 2, 3000, 8, 5]
    n = sum(sizes)
    gbuf = cp.asarray(special_halves(rng, n + 8))
    for shift in (goff, (goff + 1) % 4, goff):
        g = gbuf[shift: shift + n]
        gh = cp.asnumpy(g)
        acc_h = [special_halves(rng, k) for k in sizes]
        accs = [cp.asarray(a) for a in acc_h]
        concat_adjoint(g, [cp.zeros(k, np.float16) for k in sizes], 0, acc=accs)
        fresh = concat_adjoint(g, [cp.zeros(k, np.float16) for k in sizes], 0)
        pos = 0
        for a, ah, f, k in zip(accs, acc_h, fresh, sizes):
            part = gh[pos:pos + k]
            bits_equal(cp.asnumpy(a), (ah.astype(np.float32) + part.astype(np.float32)).astype(np.float16))
            bits_equal(cp.asnumpy(f), part)   # (nan payloads may change where elements convert)
            pos += k
    assert launch._state["words_error"] is None


@pytest.mark.parametrize("shape,axes", [((130, 66), (1, 0)), ((9, 70, 66), (2, 0, 1)),
                                        ((64, 128), (1, 0)), ((131, 66), (1, 0))])
def test_float16_permute_pairs_bitwise(shape, axes):
    from s2sad.kernels import launch
    from kernel_cases import bits_equal, special_halves
    rng = np.random.default_rng(10)
    inv = tuple(np.argsort(axes))
    for it in range(2):                                  # recorded, then replayed
        g = special_halves(rng, int(np.prod(shape))).reshape(shape)
        ref = np.ascontiguousarray(np.transpose(g, inv))
        a = special_halves(rng, ref.size).reshape(ref.shape)
        ca = cp.asarray(a)
        permute_adjoint(cp.asarray(g), axes, acc=ca)
        bits_equal(cp.asnumpy(ca), (a.astype(np.float32) + ref.astype(np.float32)).astype(np.float16))
        bits_equal(cp.asnumpy(permute_adjoint(cp.asarray(g), axes)), ref)
    assert launch._state["words_error"] is None
