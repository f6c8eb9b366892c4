"""The CUDA kernel paths of s2sad.kernels, run on NumPy buffers under Numba's CUDA simulator,
checked against the plain NumPy path (which is itself checked against np.concatenate/np.transpose)."""
import os
import subprocess
import sys

import numpy as np
import pytest

from s2sad.kernels import concat_adjoint, concat_tangent, permute_adjoint, permute_tangent
from kernel_cases import DTYPES, LAYOUTS, rand, strided, tol

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

pytestmark = pytest.mark.skipif(os.environ.get("NUMBA_ENABLE_CUDASIM") != "1",
                                reason="simulator tests (NUMBA_ENABLE_CUDASIM=1)")


@pytest.fixture(autouse=True, scope="module")
def small_launches():
    """Tiny launch parameters; yields :mod:`s2sad.kernels.segments` (the concat family, whose
    module-level ``_launch`` the tests below replace to count launches)."""
    from s2sad.kernels import launch, segments
    saved = dict(launch.CONFIG)
    # tiny blocks: the simulator runs a Python thread per CUDA thread
    launch.CONFIG.update(tpb=8, ept=2, tile=8, tile_tx=8, tile_by=4, tile_wide={})
    yield segments
    launch.CONFIG.clear()
    launch.CONFIG.update(saved)


def same(a, b, dtype=None):
    assert (a is None) == (b is None)
    if a is None:
        return
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, b.shape, a.dtype, b.dtype)
    np.testing.assert_allclose(a, b, rtol=tol(a.dtype), atol=tol(a.dtype))


# ---------------------------------------------------------------- NumPy path vs NumPy itself
def test_numpy_path_is_slicing():
    rng = np.random.default_rng(0)
    xs = [rand(rng, (2, 3), np.float64), rand(rng, (2, 4), np.float32), np.arange(6).reshape(2, 3)]
    g = rng.standard_normal((2, 10))
    r = concat_adjoint(g, xs, axis=1)
    np.testing.assert_array_equal(r[0], g[:, :3])
    np.testing.assert_array_equal(r[1], g[:, 3:7].astype(np.float32))
    assert r[1].dtype == np.float32 and r[2] is None
    # dot-product test: <concat(t), g> == sum <t_i, adj_i>
    ts = [rand(rng, x.shape, np.float64) for x in xs[:2]] + [None]
    y = concat_tangent(ts, xs, axis=1)
    lhs = np.sum(y * g)
    rhs = sum(np.sum(t * a) for t, a in zip(ts, r) if t is not None)
    assert abs(lhs - rhs) < 1e-5
    x = rng.standard_normal((2, 3, 4))
    np.testing.assert_array_equal(permute_adjoint(np.transpose(x, (1, 2, 0)), (1, 2, 0)), x)
    np.testing.assert_array_equal(permute_tangent(x, (1, 2, 0)), np.transpose(x, (1, 2, 0)))
    assert permute_adjoint(x.T, None).flags.c_contiguous


# ---------------------------------------------------------------- concat adjoint (kernels)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("axis", [0, 1, -1, None])
def test_concat_adjoint_dtypes_axes(dtype, axis):
    rng = np.random.default_rng(1)
    shapes = [(3, 2, 4), (3, 2, 4), (3, 2, 4)]
    if axis == 0:
        shapes = [(1, 2, 4), (3, 2, 4), (2, 2, 4)]
    elif axis in (1,):
        shapes = [(3, 1, 4), (3, 3, 4), (3, 2, 4)]
    elif axis == -1:
        shapes = [(3, 2, 1), (3, 2, 3), (3, 2, 2)]
    xs = [rand(rng, s, dtype) for s in shapes]
    g = np.concatenate([rand(rng, s, dtype) for s in shapes], axis=axis)
    got = concat_adjoint(g, xs, axis, backend="cuda")
    ref = concat_adjoint(g, xs, axis, backend="numpy")
    for a, b in zip(got, ref):
        same(a, b)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_concat_adjoint_strided_cotangent(layout):
    rng = np.random.default_rng(2)
    g = strided(rng, (5, 6), np.float64, layout)
    xs = [np.zeros((5, 2)), np.zeros((5, 1)), np.zeros((5, 3))]
    for axis in (1,):
        got = concat_adjoint(g, xs, axis, backend="cuda")
        ref = concat_adjoint(g, xs, axis, backend="numpy")
        for a, b in zip(got, ref):
            same(a, b)
    got = concat_adjoint(g, [np.zeros((2, 6)), np.zeros((3, 6))], 0, backend="cuda")
    same(got[1], np.ascontiguousarray(g[2:]))


@pytest.mark.parametrize("layout", ["neg", "T", "F", "step"])
def test_concat_adjoint_strided_complex(layout):
    rng = np.random.default_rng(3)
    g = strided(rng, (4, 6), np.complex128, layout)
    xs = [np.zeros((4, 4), np.complex64), np.zeros((4, 2), np.complex128)]
    for a, b in zip(concat_adjoint(g, xs, 1, backend="cuda"), concat_adjoint(g, xs, 1)):
        same(a, b)


def test_concat_adjoint_mixed_dtypes_and_nondiff():
    rng = np.random.default_rng(4)
    xs = [rand(rng, (2, 3), np.float16), np.arange(6).reshape(2, 3), rand(rng, (1, 3), np.float64),
          np.ones((2, 3), bool), rand(rng, (2, 3), np.complex64), rand(rng, (3, 3), np.float32)]
    g = rand(rng, (12, 3), np.complex128)
    got = concat_adjoint(g, xs, 0, backend="cuda")
    ref = concat_adjoint(g, xs, 0, backend="numpy")
    assert got[1] is None and got[3] is None
    assert [None if a is None else a.dtype for a in got] == \
        [np.float16, None, np.float64, None, np.complex64, np.float32]
    for a, b in zip(got, ref):
        same(a, b)
    np.testing.assert_allclose(got[2], g[4:5].real)          # real input: real part
    # real cotangent, complex input: imaginary part zero
    g2 = rng.standard_normal((12, 3))
    got = concat_adjoint(g2, xs, 0, backend="cuda")
    np.testing.assert_array_equal(got[4], g2[7:9].astype(np.complex64))


def test_concat_adjoint_all_integer_no_launch(monkeypatch, small_launches):
    def boom(*a, **k):
        raise AssertionError("launched")
    monkeypatch.setattr(small_launches, "_launch", boom)
    r = concat_adjoint(np.ones(5), [np.arange(2), np.array([True, False, True])], None, backend="cuda")
    assert r == (None, None)


def test_concat_adjoint_zero_size_and_repeated():
    rng = np.random.default_rng(5)
    x = rand(rng, (2, 3), np.float32)
    xs = [x, np.zeros((0, 3), np.float32), x, np.zeros((0, 3), np.float64)]
    g = rand(rng, (4, 3), np.float32)
    got = concat_adjoint(g, xs, 0, backend="cuda")
    assert got[1].shape == (0, 3) and got[3].shape == (0, 3) and got[3].dtype == np.float64
    same(got[0], g[:2])
    same(got[2], g[2:])
    assert got[0] is not got[2]


def test_concat_adjoint_flat_axis_none_and_scalars():
    rng = np.random.default_rng(6)
    xs = [rand(rng, (2, 3), np.float64), rand(rng, (4,), np.float64), np.float64(1.0),
          rand(rng, (2, 1, 2), np.float32)]
    g = rng.standard_normal(15)
    got = concat_adjoint(g, xs, None, backend="cuda")
    ref = concat_adjoint(g, xs, None, backend="numpy")
    for a, b in zip(got, ref):
        same(np.asarray(a), np.asarray(b))
    np.testing.assert_array_equal(got[0], g[:6].reshape(2, 3))
    r = concat_adjoint(np.arange(3.0), [np.zeros(1), 2.5, np.zeros(1)], None, backend="cuda")
    assert type(r[1]) is float and r[1] == 1.0


def test_concat_adjoint_many_inputs():
    rng = np.random.default_rng(7)
    sizes = rng.integers(0, 3, 1200)
    xs = [np.zeros((int(s), 2), np.float32) for s in sizes]
    g = rand(rng, (int(sizes.sum()), 2), np.float32)
    got = concat_adjoint(g, xs, 0, backend="cuda")
    ref = concat_adjoint(g, xs, 0, backend="numpy")
    assert len(got) == 1200
    for a, b in zip(got, ref):
        same(a, b)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.complex128])
def test_concat_adjoint_accumulate(dtype):
    rng = np.random.default_rng(8)
    xs = [rand(rng, (3, 2), dtype), rand(rng, (3, 3), dtype), rand(rng, (3, 1), dtype)]
    g = rand(rng, (3, 6), dtype)
    base = rand(rng, (3, 2), dtype)
    bufs = [base.copy(), strided(rng, (3, 3), dtype, "neg").copy()[::-1], None]
    bufs[1] = np.asfortranarray(bufs[1])[:, ::-1]        # a strided accumulation target
    expect = [bufs[0] + g[:, :2], bufs[1] + g[:, 2:5], g[:, 5:]]
    got = concat_adjoint(g, xs, 1, acc=bufs, backend="cuda")
    assert got[0] is bufs[0] and got[1] is bufs[1]
    for a, b in zip(got, expect):
        same(a, b.astype(dtype))


def test_concat_adjoint_accumulate_same_buffer_twice():
    """concatenate([x, x]) with one gradient buffer: both contributions land, no race."""
    rng = np.random.default_rng(9)
    x = rand(rng, (2, 3), np.float64)
    buf = rand(rng, (2, 3), np.float64)
    expect = buf.copy()
    g = rand(rng, (4, 3), np.float64)
    expect += g[:2] + g[2:]
    got = concat_adjoint(g, [x, x], 0, acc=[buf, buf], backend="cuda")
    assert got[0] is buf and got[1] is buf
    np.testing.assert_allclose(buf, expect, rtol=1e-12)


def test_concat_adjoint_accumulate_views_of_one_buffer(small_launches):
    """Targets that are views of one base buffer go in one launch (one span)."""
    rng = np.random.default_rng(10)
    store = rand(rng, (20,), np.float32)
    bufs = [store[:6].reshape(2, 3), store[10:16].reshape(3, 2).T]
    expect = [b.copy() for b in bufs]
    g = rand(rng, (4, 3), np.float32)
    expect[0] += g[:2]
    expect[1] += g[2:]
    calls = []
    orig = small_launches._launch
    small_launches._launch = lambda *a: (calls.append(1), orig(*a))
    try:
        concat_adjoint(g, [np.zeros((2, 3), np.float32)] * 2, 0, acc=bufs, backend="cuda")
    finally:
        small_launches._launch = orig
    assert len(calls) == 1
    for a, b in zip(bufs, expect):
        same(a, b)


def test_concat_adjoint_bad_inputs():
    with pytest.raises(ValueError, match="expected size 5 along axis 0"):
        concat_adjoint(np.ones((4, 2)), [np.ones((2, 2)), np.ones((3, 2))], 0, backend="cuda")
    with pytest.raises(ValueError, match="acc has 1 entries"):
        concat_adjoint(np.ones((5, 2)), [np.ones((2, 2)), np.ones((3, 2))], 0, acc=[None])
    with pytest.raises(ValueError, match="overlapping"):
        concat_adjoint(np.ones((2, 2)), [np.ones((2, 2))], 0,
                       acc=[np.broadcast_to(np.zeros(2), (2, 2))], backend="cuda")


# ---------------------------------------------------------------- concat tangent (kernels)
@pytest.mark.parametrize("axis", [0, 1, None])
def test_concat_tangent(axis):
    rng = np.random.default_rng(11)
    xs = [rand(rng, (2, 3), np.float32), rand(rng, (2, 3), np.float64), np.arange(6).reshape(2, 3),
          rand(rng, (2, 3), np.float32)]
    ts = [strided(rng, (2, 3), np.float32, "neg"), None, None, strided(rng, (2, 3), np.float32, "T")]
    got = concat_tangent(ts, xs, axis, backend="cuda")
    ref = concat_tangent(ts, xs, axis, backend="numpy")
    same(got, ref)
    assert got.dtype == np.float64


def test_concat_tangent_complex_mix():
    rng = np.random.default_rng(12)
    xs = [rand(rng, (2, 2), np.complex64), rand(rng, (3, 2), np.float32)]
    ts = [rand(rng, (2, 2), np.complex64), rand(rng, (3, 2), np.float32)]
    got = concat_tangent(ts, xs, 0, backend="cuda")
    same(got, np.concatenate(ts, 0))


# ---------------------------------------------------------------- permute (kernels)
PERMS = [(1, 0), (0, 1), (2, 0, 1), (1, 2, 0), (0, 2, 1), (2, 1, 0), (1, 0, 2), (3, 1, 2, 0), (4, 2, 0, 3, 1)]


@pytest.mark.parametrize("axes", PERMS)
def test_permute_adjoint_axes(axes):
    rng = np.random.default_rng(13)
    shape = (9, 5, 4, 3, 2)[:len(axes)]
    x = rand(rng, shape, np.float32)
    g = np.ascontiguousarray(np.transpose(x, axes))
    got = permute_adjoint(g, axes, backend="cuda")
    np.testing.assert_array_equal(got, x)
    assert got.flags.c_contiguous
    np.testing.assert_array_equal(permute_tangent(x, axes, backend="cuda"), g)


@pytest.mark.parametrize("dtype", DTYPES)
def test_permute_adjoint_dtypes_tiled(dtype):
    rng = np.random.default_rng(14)
    g = rand(rng, (11, 13), dtype)                  # not multiples of the tile
    same(permute_adjoint(g, (1, 0), backend="cuda"), np.ascontiguousarray(g.T))
    g3 = rand(rng, (3, 10, 9), dtype)
    same(permute_adjoint(g3, (2, 0, 1), backend="cuda"), permute_adjoint(g3, (2, 0, 1)))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_permute_adjoint_strided(layout):
    rng = np.random.default_rng(15)
    g = strided(rng, (6, 5, 3), np.float64, layout)
    for axes in [(2, 0, 1), (1, 0, 2), None]:
        same(permute_adjoint(g, axes, backend="cuda"), permute_adjoint(g, axes))


@pytest.mark.parametrize("dtype", [np.float16, np.float64, np.complex64])
def test_permute_adjoint_accumulate(dtype):
    rng = np.random.default_rng(16)
    g = rand(rng, (10, 7), dtype)
    acc = strided(rng, (7, 10), dtype, "neg").copy()
    expect = acc + g.T
    got = permute_adjoint(g, (1, 0), acc=acc, backend="cuda")
    assert got is acc
    same(acc, expect.astype(dtype))
    acc2 = np.asfortranarray(rand(rng, (7, 10), dtype))[::-1]       # strided target
    expect2 = acc2 + g.T
    permute_adjoint(g, None, acc=acc2, backend="cuda")
    same(acc2, expect2.astype(dtype))


def test_permute_zero_size_and_0d():
    g = np.zeros((0, 3), np.float32)
    r = permute_adjoint(g, (1, 0), backend="cuda")
    assert r.shape == (3, 0) and r.dtype == np.float32
    r = permute_adjoint(np.array(2.0), (), backend="cuda")
    assert r.shape == () and r == 2.0


def test_permute_bad_axes():
    with pytest.raises(ValueError, match="not a permutation"):
        permute_adjoint(np.ones((2, 3)), (0, 0))


# ---------------------------------------------------------------- laziness and robustness
def _run(code):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=120)


def test_import_is_lazy():
    r = _run("import sys, numpy as np, s2sad, s2sad.kernels as k\n"
             "assert 'numba' not in sys.modules and 'cupy' not in sys.modules, 'imported at import'\n"
             "k.concat_adjoint(np.ones(4), [np.ones(2), np.ones(2)], 0)\n"
             "k.permute_adjoint(np.ones((2, 3)), None)\n"
             "k.check_devices('f', [np.ones(2), [np.ones(2)]])\n"
             "assert 'numba' not in sys.modules and 'cupy' not in sys.modules, 'imported on CPU path'\n")
    assert r.returncode == 0, r.stderr


def test_row_stack_shim():
    r = _run("import numpy as np\n"
             "if hasattr(np, 'row_stack'): del np.row_stack\n"
             "from s2sad.kernels import concat_adjoint\n"
             "assert not hasattr(np, 'row_stack')\n"
             "r = concat_adjoint(np.arange(4.), [np.ones(1), np.ones(3)], None, backend='cuda')\n"
             "assert np.row_stack is np.vstack and r[1].tolist() == [1., 2., 3.]\n")
    assert r.returncode == 0, r.stderr
