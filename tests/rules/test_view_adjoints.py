"""Adjoints that are views where a view is correct (issue 14, item 1), and the other low-overhead
adjoints of the GPU steps: the concat adjoint is a slice of the cotangent, the permute adjoint a
transposed view, a stack of matrices times a matrix has one matrix product as W's adjoint, sum and
mean of a scalar cotangent are one fill, and a float32 max adjoint stays float32.  Views are safe
because adjoints are never written in place (the loop cases below would see it).  The whole steps
of benchmarks/gpu_step.py are checked against finite differences at their --numpy sizes."""
import os
import subprocess
import sys

import numpy as np
import pytest

import s2sad
from s2sad.rules import adjoints as _adj
from s2sad.rules.numpy.concat_permute import reshape_is_view
from s2sad.testing import check_grads

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

rng = np.random.default_rng(7)


# -- the helpers ----------------------------------------------------------------------------------
def test_concat_adjoint_parts_are_slices_of_the_cotangent():
    g = rng.standard_normal((3, 7))
    x, y = rng.standard_normal((3, 2)), rng.standard_normal((3, 5))
    gx, gy = _adj.concatenate(g, [x, y], 1)
    np.testing.assert_array_equal(gx, g[:, :2])
    np.testing.assert_array_equal(gy, g[:, 2:])
    assert gx.base is g and gy.base is g                # views, no copy
    # axis=None: flat slices reshaped to each input
    hx, hy = _adj.concatenate(g.reshape(-1), [x, y], None)
    np.testing.assert_array_equal(hx, g.reshape(-1)[:6].reshape(3, 2))
    assert np.shares_memory(hx, g) and np.shares_memory(hy, g)


def test_concat_adjoint_converts_where_dtypes_differ_and_drops_integers():
    g = rng.standard_normal((5,))
    x32 = np.ones(2, np.float32)
    n = np.arange(3)
    gx, gn = _adj.concatenate(g, [x32, n], 0)
    assert gx.dtype == np.float32 and not np.shares_memory(gx, g)
    np.testing.assert_allclose(gx, g[:2].astype(np.float32))
    assert gn is None


def test_permute_adjoints_are_transposed_views():
    a = rng.standard_normal((2, 3, 4, 5))
    g = rng.standard_normal((2, 4, 3, 5))                # the cotangent of a.transpose(0, 2, 1, 3)
    r = _adj.transpose(g, a, (0, 2, 1, 3))
    assert np.shares_memory(r, g) and r.shape == a.shape
    np.testing.assert_array_equal(r, g.transpose(0, 2, 1, 3))
    gm = rng.standard_normal((2, 4, 5, 3))               # of np.moveaxis(a, 1, -1)
    r = _adj.moveaxis(gm, a, 1, -1)
    assert np.shares_memory(r, gm)
    np.testing.assert_array_equal(r, np.moveaxis(gm, -1, 1))
    gs = rng.standard_normal((2, 3, 5, 4))               # of np.swapaxes(a, -1, -2)
    r = _adj.swapaxes(gs, a, -1, -2)
    assert np.shares_memory(r, gs)
    np.testing.assert_array_equal(r, np.swapaxes(gs, -1, -2))


@pytest.mark.parametrize("seed", range(40))
def test_reshape_is_view_agrees_with_numpy(seed):
    r = np.random.default_rng(seed)
    nd = int(r.integers(1, 5))
    shp = tuple(int(n) for n in r.integers(1, 4, nd))
    v = np.zeros(shp).transpose(r.permutation(nd))
    if r.random() < 0.3:
        v = v[..., ::2]
    sizes = [n for n in v.shape]
    total = int(np.prod(sizes))
    # a random new shape of the same size: merge or split neighbouring factors
    new = list(v.shape) if r.random() < 0.5 else [total]
    if len(new) > 1 and r.random() < 0.5:
        i = int(r.integers(0, len(new) - 1))
        new[i:i + 2] = [new[i] * new[i + 1]]
    expect = np.shares_memory(v.reshape(new), v) or v.size == 0
    assert reshape_is_view(v.shape, v.strides, tuple(new)) == expect, (v.shape, v.strides, new)


def test_reshape_is_view_head_split():
    v = np.zeros((4, 6)).T                               # (6, 4), F order
    assert not reshape_is_view(v.shape, v.strides, (24,))
    assert reshape_is_view(v.shape, v.strides, (2, 3, 4)) == \
        np.shares_memory(v.reshape(2, 3, 4), v)


def test_materialise_uses_the_permute_kernel_under_the_simulator():
    code = (
        "import numpy as np\n"
        "from s2sad.kernels import launch\n"
        "launch.CONFIG.update(tpb=8, ept=2, tile=8, tile_tx=8, tile_by=4, tile_wide={})\n"
        "from s2sad.rules.numpy.concat_permute import materialise\n"
        "g = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)\n"
        "v = g.transpose(0, 2, 1, 3)\n"
        "m = materialise(v, backend='cuda')\n"
        "assert m.flags.c_contiguous and not np.shares_memory(m, g)\n"
        "np.testing.assert_array_equal(m, v)\n"
        "s = g[:, :, :, ::2]\n"
        "np.testing.assert_array_equal(materialise(s, backend='cuda'), s)\n"
        "print('ok')\n")
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1",
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "ok"


def test_matmul_adjoint_of_a_stack_times_a_matrix():
    for dt in (np.float64, np.float32):
        tol = dict(rtol=1e-5, atol=1e-5) if dt == np.float32 else dict(rtol=1e-12)
        x = rng.standard_normal((3, 4, 5)).astype(dt)
        W = rng.standard_normal((5, 6)).astype(dt)
        g = rng.standard_normal((3, 4, 6)).astype(dt)
        gW = _adj.matmul(g, x, W, 1)
        assert gW.shape == W.shape and gW.dtype == dt
        np.testing.assert_allclose(gW, np.einsum("btd,btk->dk", x, g), **tol)
        gx = _adj.matmul(g, x, W, 0)
        np.testing.assert_allclose(gx, g @ W.T, **tol)
        # two stacks of one batch shape; a broadcast batch takes the general path
        B = rng.standard_normal((3, 5, 2)).astype(dt)
        h = rng.standard_normal((3, 4, 2)).astype(dt)
        np.testing.assert_allclose(_adj.matmul(h, x, B, 1), np.swapaxes(x, -1, -2) @ h, **tol)
        B1 = rng.standard_normal((1, 5, 2)).astype(dt)
        np.testing.assert_allclose(_adj.matmul(h, x, B1, 1),
                                   (np.swapaxes(x, -1, -2) @ h).sum(0, keepdims=True), **tol)


def test_sum_and_mean_of_a_scalar_cotangent_are_one_fill_in_the_dtype():
    a = rng.standard_normal((3, 4)).astype(np.float32)
    m = _adj.mean(2.0, a)
    assert m.dtype == np.float32 and m.shape == a.shape
    np.testing.assert_array_equal(m, np.full((3, 4), np.float32(2.0 / 12)))
    s = _adj.sum(np.float32(3.0), a)
    assert s.dtype == np.float32
    np.testing.assert_array_equal(s, np.full((3, 4), 3.0, np.float32))


def test_max_adjoint_float32_shares_ties():
    a = np.array([[1.0, 3.0, 3.0], [2.0, 0.0, -1.0]], np.float32)
    ans = a.max(axis=1, keepdims=True)
    g = np.array([[0.5], [2.0]], np.float32)
    r = _adj.extremum(g, ans, a, 1, True)
    assert r.dtype == np.float32
    np.testing.assert_array_equal(r, np.array([[0, 0.25, 0.25], [2.0, 0, 0]], np.float32))


# -- generated code --------------------------------------------------------------------------------
def skip_path(x, y, C):
    h = np.tanh(np.concatenate([x, y @ C], axis=-1))
    return np.sum(np.transpose(h, (1, 0)) ** 2)


def test_generated_concat_and_transpose_adjoints_are_views():
    x, y = rng.standard_normal((4, 3)), rng.standard_normal((4, 2))
    C = rng.standard_normal((2, 5))
    d = s2sad.differentiate(skip_path, wrt=(0, 1, 2))
    src = d.adjoint_source(x, y, C)
    assert "_adj.concatenate(" in src and "_adj.transpose(" in src
    assert "copy" not in src and "ascontiguousarray" not in src
    gx, gy, gC = s2sad.grad(skip_path, wrt=(0, 1, 2))(x, y, C)
    # x's adjoint is a slice of the concatenation's cotangent (no copy of it was made)
    assert gx.base is not None and not gx.flags.c_contiguous
    check_grads(skip_path, (x, y, C))


def loop_concat(a, b):
    s = 0.0
    for i in range(3):
        x = np.concatenate([a * (i + 1.0), b])
        s = s + x[i] * x[4] + x[3] * x[3]
    return s


def loop_transpose(a, b):
    s = 0.0
    for i in range(3):
        x = np.transpose(np.concatenate([a, b * (i + 1.0)], axis=0))
        s = s + x[0, i] * x[1, 2] + x[1, 1] * x[2, 3]
    return s


def test_views_of_buffers_filled_in_place_stay_right():
    """x is read only by indexing: its adjoint is a buffer filled in place (acc_getitem), once
    per trip; the concat adjoint hands out views of it, which must not see a later trip."""
    a, b = rng.standard_normal(3), rng.standard_normal(3)
    check_grads(loop_concat, (a, b))
    ga, gb = s2sad.grad(loop_concat, wrt=(0, 1))(a, b)
    # closed form: trip i reads x = [a*(i+1), b]
    ea, eb = np.zeros(3), np.zeros(3)
    for i in range(3):
        c = i + 1.0
        x = np.concatenate([a * c, b])
        gx = np.zeros(6)
        gx[i] += x[4]
        gx[4] += x[i]
        gx[3] += 2 * x[3]
        ea += c * gx[:3]
        eb += gx[3:]
    np.testing.assert_allclose(ga, ea, rtol=1e-12)
    np.testing.assert_allclose(gb, eb, rtol=1e-12)
    A, B = rng.standard_normal((2, 4)), rng.standard_normal((2, 4))
    check_grads(loop_transpose, (A, B))


# -- the steps of benchmarks/gpu_step.py -------------------------------------------------------
def _cases():
    import gpu_step
    return gpu_step.cases(True, False)


@pytest.mark.parametrize("i", range(5))
def test_gpu_steps_gradients(i):
    name, step, _, params, data, _ = _cases()[i]
    args = tuple(np.asarray(a, np.float64) for a in list(params) + list(data))
    check_grads(step, args, wrt=tuple(range(len(params))))
    # float32 in, float32 out (no float64 round trip reaches the gradients)
    a32 = [np.asarray(a, np.float32) for a in args]
    _, grads = s2sad.value_and_grad(step, wrt=tuple(range(len(params))))(*a32)
    assert [g.dtype for g in grads] == [np.float32] * len(params), name


def shared(a, b, c):
    return np.sum((a + b.T) * c)


def test_returned_gradients_never_share_memory():
    """b's adjoint is a transposed view of the cotangent that is also a's adjoint: each gradient
    the user gets is theirs to change in place (an in-place clip of one must not change the
    other), so the API copies one that overlaps another."""
    a, b, c = rng.standard_normal((3, 4)), rng.standard_normal((4, 3)), rng.standard_normal((3, 4))
    vg = s2sad.value_and_grad(shared, wrt=(0, 1, 2))
    for _ in range(2):                  # (the second call takes the per-signature fast path)
        _, (ga, gb, gc) = vg(a, b, c)
        assert not np.shares_memory(ga, gb) and not np.shares_memory(gb, gc)
    np.testing.assert_allclose(gb, c.T, rtol=1e-12)
    np.testing.assert_allclose(ga, c, rtol=1e-12)
    before = gb.copy()
    ga *= 2.0
    np.testing.assert_array_equal(gb, before)
    check_grads(shared, (a, b, c))


# -- reduction adjoints are read-only broadcast views (issue 12: kron_sum) -------------------------
def two_sums(x):
    return np.sum(x ** 2) + 3.0 * np.sum(x) + np.mean(np.sin(x), axis=0).sum() + \
        2.0 * np.average(x)


def sum_then_loop(x):
    y = np.zeros(x.shape)
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            y[i, j] = np.sin(x[i, j])
    return np.sum(y) + np.mean(y) + x[0, 1] * np.sum(x)


def kron_sum(x, y):
    return np.sum(np.kron(x, y))


def sum_dict(p):
    return np.sum(p["w"]) + np.mean(p["v"], axis=1, keepdims=True).sum()


def test_reduction_adjoints_are_read_only_broadcast_views(monkeypatch):
    big = np.ones((80, 60))
    s = _adj.sum(2.0, big)                      # as large as kron_sum's: a view, no fill
    assert s.strides == (0, 0) and not s.flags.writeable and s[79, 59] == 2.0
    for v in (_adj.mean(2.0, big), _adj.average(2.0, None, big)):
        assert v.strides == (0, 0) and not v.flags.writeable and v[3, 4] == 2.0 / 4800
    small = _adj.sum(2.0, big[:10])             # small: a fresh array costs less
    assert small.flags.writeable and small.strides == (480, 8) and small[9, 59] == 2.0
    monkeypatch.setattr(_adj, "_VIEW_MIN", 0)    # (views at any size from here)
    a = rng.standard_normal((3, 4))
    for s in (_adj.sum(3.0, a), _adj.sum(np.float64(3.0), a), _adj.sum(np.array(3.0), a),
              _adj.sum(np.array([[3.0]]), a, None, True)):
        assert s.strides == (0, 0) and not s.flags.writeable and s.shape == a.shape
        np.testing.assert_array_equal(s, np.full((3, 4), 3.0))
    m = _adj.mean(np.array([1.0, 2.0, 3.0, 4.0]), a, 0)
    assert m.strides == (0, 8) and not m.flags.writeable
    np.testing.assert_array_equal(m, np.tile([1 / 3, 2 / 3, 1.0, 4 / 3], (3, 1)))
    with pytest.raises(ValueError, match="read-only"):
        _adj.sum(3.0, a)[...] += 1.0            # a write into the view raises, never silently
    z = _adj.sum(1.0 + 2.0j, a)                  # a real input drops the imaginary part
    assert z.dtype == np.float64 and z[0, 0] == 1.0
    z = _adj.sum(1.0 + 2.0j, a.astype(complex))
    assert z.dtype == complex and z[2, 3] == 1.0 + 2.0j
    # the buffer is the helper's own: changing the cotangent afterwards changes nothing
    g = np.array(5.0)
    s = _adj.sum(g, a)
    g[...] = 7.0
    assert s[1, 1] == 5.0
    # integer input: a fresh float array, as before
    i = _adj.sum(2.0, np.arange(3))
    assert i.flags.writeable and i.dtype == np.float64


def test_user_gradients_after_reductions_are_writable_and_their_own(monkeypatch):
    monkeypatch.setattr(_adj, "_VIEW_MIN", 0)    # (the reductions' adjoints are views)
    x = rng.standard_normal((3, 4))
    y = rng.standard_normal((2, 2))
    expect = 2 * x + 3.0 + np.cos(x) / 3 + 2.0 / 12
    vg = s2sad.value_and_grad(two_sums)
    for _ in range(2):                      # (the second call takes the per-signature fast path)
        _, g = vg(x)
        assert g.flags.writeable and 0 not in g.strides
        np.testing.assert_allclose(g, expect, rtol=1e-12)
        g *= 0.0                            # the user's to change: the next call is unaffected
    for jit in (False, True):
        gx, gy = s2sad.grad(kron_sum, wrt=(0, 1), jit=jit)(x, y)
        for g in (gx, gy):
            assert g.flags.writeable and 0 not in g.strides
        np.testing.assert_allclose(gx, np.full(x.shape, y.sum()), rtol=1e-12)
        np.testing.assert_allclose(gy, np.full(y.shape, x.sum()), rtol=1e-12)
    # pytrees, vjp, the Differentiable methods, jacobian
    p = {"w": rng.standard_normal(3), "v": rng.standard_normal((2, 5))}
    gp = s2sad.grad(sum_dict)(p)
    for k, e in (("w", np.ones(3)), ("v", np.full((2, 5), 0.2))):
        assert gp[k].flags.writeable and 0 not in gp[k].strides
        np.testing.assert_allclose(gp[k], e, rtol=1e-12)
    _, pull = s2sad.vjp(two_sums, x)
    (gv,) = pull(1.0)
    assert gv.flags.writeable and 0 not in gv.strides
    np.testing.assert_allclose(gv, expect, rtol=1e-12)
    d = s2sad.differentiate(two_sums)
    for g in (d.grad(x), d.value_and_grad(x)[1], d.vjp(x)[1](1.0)[0]):
        assert g.flags.writeable and 0 not in g.strides
        np.testing.assert_allclose(g, expect, rtol=1e-12)
    J = s2sad.jacrev(two_sums)(x)
    assert J.flags.writeable and 0 not in J.strides
    np.testing.assert_allclose(J, expect, rtol=1e-12)


def test_sums_accumulated_into_one_adjoint_and_owned_loop_buffers(monkeypatch):
    """x in two sums (and a mean): the second contribution adds to the first view (a new array);
    sum_then_loop's y gets its adjoint from a sum and a mean (views), then the loop's reverse
    writes x's own buffer in place, and x[0, 1] adds to a sum's view."""
    monkeypatch.setattr(_adj, "_VIEW_MIN", 0)
    x = rng.standard_normal((3, 4))
    check_grads(two_sums, (x,))
    check_grads(sum_then_loop, (x,))
    for jit in (False, True):
        g = s2sad.grad(sum_then_loop, jit=jit)(x)
        e = np.cos(x) * (1 + 1 / 12) + x[0, 1]
        e[0, 1] += np.sum(x)
        np.testing.assert_allclose(g, e, rtol=1e-12)
    check_grads(kron_sum, (x[:2, :2], np.triu(rng.standard_normal((3, 3)))), wrt=(0, 1))
