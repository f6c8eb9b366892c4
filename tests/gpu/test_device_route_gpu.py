"""Plain mode on CuPy arrays (issue 14, device time of large steps): the direct cuBLAS products
(s2sad/kernels/gemm.py, transposed and head-split views read in place), the fused elementwise
kernels (s2sad/kernels/elementwise.py), the one-kernel maximum adjoint and the bias sums as
matrix-vector products, each against the NumPy reference or CuPy's own route.  Skipped without
CuPy and a GPU."""
import ast

import numpy as np
import pytest

import s2sad
from s2sad import graphs
from s2sad.kernels import elementwise, gemm
from s2sad.runtime import arrays
from gpu_helpers import cp, gam, needs_gpu

pytestmark = needs_gpu


def _heads(x, B, T, H, d):
    """(B, H, T, d) views of a (B, T, H*d) array, as attention makes them."""
    return x.reshape(B, T, H, d).transpose(0, 2, 1, 3)


# each case: the base arrays' shapes, and the views taken of them (the same ops on NumPy and CuPy)
PRODUCTS = {
    "stack @ matrix": ((8, 64, 96), (96, 48), lambda a: a, lambda b: b),
    "slice @ matrix.T": ((8, 64, 192), (48, 96), lambda a: a[..., 96:], lambda b: b.T),
    "heads @ heads^T": ((4, 128, 128), (4, 128, 128), lambda a: _heads(a, 4, 128, 4, 32),
                        lambda b: _heads(b, 4, 128, 4, 32).swapaxes(-1, -2)),
    "scores @ heads": ((4, 4, 128, 128), (4, 128, 128), lambda a: a,
                       lambda b: _heads(b, 4, 128, 4, 32)),
    "heads^T @ grads": ((4, 128, 128), (4, 4, 128, 128),
                        lambda a: _heads(a, 4, 128, 4, 32).swapaxes(-1, -2), lambda b: b),
    "broadcast batch": ((3, 1, 64, 70), (4, 70, 50), lambda a: a, lambda b: b),
    "interleaved broadcast": ((2, 1, 3, 1, 40, 30), (1, 4, 1, 2, 30, 20), lambda a: a,
                              lambda b: b),
    "row vector, reversed rows": ((1, 70), (70, 30), lambda a: a[::-1], lambda b: b),
}


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(PRODUCTS))
def test_direct_products(name, dt):
    sa, sb, va_of, vb_of = PRODUCTS[name]
    rng = np.random.default_rng(0)
    a0 = rng.standard_normal(sa).astype(dt)
    b0 = rng.standard_normal(sb).astype(dt)
    a, b = va_of(a0), vb_of(b0)
    va, vb = va_of(cp.asarray(a0)), vb_of(cp.asarray(b0))
    assert va.strides == a.strides and vb.strides == b.strides
    want = a @ b
    tol = 2e-5 if dt == np.float32 else 1e-12
    for _ in range(2):                               # a new plan, then the kept one
        got = gemm._gemm(va, vb)
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(cp.asnumpy(got), want, rtol=tol, atol=tol * 10)
    # plain mode takes this route where CuPy would copy or batch a stack @ matrix
    if va.ndim > 2 and (not (va.flags.c_contiguous and vb.flags.c_contiguous) or vb.ndim == 2):
        assert gemm._gains(va, vb)
    np.testing.assert_allclose(cp.asnumpy(gemm.matmul(va, vb)), want, rtol=tol, atol=tol * 10)


def _fused(expr_text, ns=None):
    node = ast.parse(expr_text, mode="eval").body
    ns = dict(ns or {}, cupy=cp, numpy=np)
    cexpr, leaves, nops = elementwise.compile_expr(node, lambda e: graphs.resolve(e, ns),
                                                   s2sad.runtime.cj)
    assert all(isinstance(x, str) for x in leaves), leaves     # (every call here is fused)
    args = ast.arguments(posonlyargs=[], args=[ast.arg(n) for n in leaves], kwonlyargs=[],
                         kw_defaults=[], defaults=[])
    lam = eval(compile(ast.fix_missing_locations(ast.Expression(ast.Lambda(args, node))),
                       "<t>", "eval"), ns)
    return elementwise.Fused(cexpr, len(leaves), lam, expr_text, nops), leaves


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("expr,shapes", [
    ("g * (1 - h * h)", {"g": (300, 400), "h": (300, 400)}),
    ("s - m", {"s": (8, 64, 256), "m": (8, 64, 1)}),                 # keepdims along the last axis
    ("cupy.exp(x + b) * 0.5", {"x": (512, 300), "b": (300,)}),        # a bias
    ("-(a / c) ** 2 + cupy.tanh(a)", {"a": (70000,), "c": (1,)}),     # one element
    ("2 * (g * e) - 0.1", {"g": (250, 300), "e": (250, 300)}),
    ("cupy.maximum(x - 1.0, 0.0) * y + cupy.minimum(x, y)", {"x": (1100, 1000),
                                                            "y": (1100, 1000)}),
    # small arrays take the kernel too (its launch costs the host less than CuPy's two)
    ("g * (1 - h * h)", {"g": (3, 5), "h": (3, 5)}),
    ("s - m", {"s": (2, 3, 4), "m": (2, 3, 1)}),
    ("a * b + 1", {"a": (), "b": ()}),
    ("cupy.exp(x + b) * 0.5", {"x": (7, 1), "b": (1,)}),
    ("x / y - 2", {"x": (0, 4), "y": (0, 4)}),
])
def test_fused_kernels_match_cupy(expr, shapes, dt):
    rng = np.random.default_rng(1)
    f, leaves = _fused(expr)
    vals = [cp.asarray(rng.uniform(0.5, 1.5, shapes[n]).astype(dt)) for n in leaves]
    assert elementwise._plan(vals) is not None           # the kernel route is taken
    got = f(*vals)
    want = f.fallback(*vals)                             # CuPy's own kernels, one per operation
    assert got.shape == want.shape and got.dtype == want.dtype
    assert elementwise.FAILED == [] and None not in f.kernels.values()
    # the same operations in the same order, each rounded (no fma contraction): the same bits for
    # arithmetic; CUDA's exp/tanh compiled without contraction may differ in the last bit
    if "cupy." in expr:
        np.testing.assert_allclose(cp.asnumpy(got), cp.asnumpy(want),
                                   rtol=1e-6 if dt == np.float32 else 1e-15, atol=0)
    else:
        np.testing.assert_array_equal(cp.asnumpy(got), cp.asnumpy(want))


def _group(src):
    """The one Group (entry) that s2sad.graphs._Runs makes of the function in ``src``."""
    import textwrap
    ns = {"cupy": cp, "numpy": np}
    runs = graphs._Runs(ns, "<group test>")
    runs.visit(ast.parse(textwrap.dedent(src)))
    (g,) = runs.groups.values()
    return g.entry()


RUN = """
def sweep(x, b, r, s):
    a = x + b
    h = cupy.maximum(a, 0.0)
    z = a * r - h
    z2 = z
    e = z2 * s + 1.5
    e = e / (1.0 + h * h)
    return a, h, z, z2, e
"""


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(3, 5), (2, 3, 4), (300, 400), (2048, 1500)])
def test_group_kernel_matches_its_fallback(shape, dt):
    """A run as one kernel (s2sad.kernels.elementwise.Group): the same bits as CuPy's kernels,
    one per operation (arithmetic and maximum, each statement rounded to the dtype, no fma);
    the alias is the same array object; a bias, a keepdims row and a number as operands."""
    g = _group(RUN)
    assert g.text.startswith("a = x + b; h = cupy.maximum(a, 0.0)")
    rng = np.random.default_rng(7)
    x = cp.asarray(rng.standard_normal(shape).astype(dt))
    b = cp.asarray(rng.standard_normal(shape[-1:]).astype(dt))
    r = cp.asarray(rng.standard_normal(shape[:-1] + (1,)).astype(dt))
    for _ in range(2):                                   # a new plan, then the kept one
        got = g(x, b, r, 0.3)
        want = g.group.fallback(x, b, r, 0.3)
        assert [v.shape for v in got] == [shape] * 5 and all(v.dtype == dt for v in got)
        assert got[3] is got[2] and want[3] is want[2]   # z2 = z: one array
        for a, w in zip(got, want):
            np.testing.assert_array_equal(cp.asnumpy(a), cp.asnumpy(w))
    assert [p is not None for p in g.group.plans.values()] == [True]   # the kernel route
    assert elementwise.FAILED == [] and None not in g.group.kernels.values()


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_group_kernel_transcendental(dt):
    g = _group("""
        def sweep(x, y):
            h = cupy.tanh(x)
            err = h - y
            e2 = err * err
            return h, err, e2
        """)
    rng = np.random.default_rng(8)
    x, y = (cp.asarray(rng.standard_normal((64, 96)).astype(dt)) for _ in range(2))
    got, want = g(x, y), g.group.fallback(x, y)
    assert list(g.group.plans.values())[0] is not None
    for a, w in zip(got, want):         # CUDA's tanh compiled without contraction: last bit
        np.testing.assert_allclose(cp.asnumpy(a), cp.asnumpy(w),
                                   rtol=1e-6 if dt == np.float32 else 1e-15, atol=1e-7)
    assert elementwise.FAILED == []


def test_group_falls_back_when_a_result_is_not_full():
    """A statement of a keepdims row and a number would have the row's shape: the whole run
    runs as written (CuPy's kernels), the same numbers; as do mixed dtypes and NumPy arrays."""
    g = _group("""
        def sweep(r, z):
            t = r * 2.0
            u = z - t
            return t, u
        """)
    rng = np.random.default_rng(9)
    z = cp.asarray(rng.standard_normal((40, 30)))
    r = cp.asarray(rng.standard_normal((40, 1)))
    t, u = g(r, z)
    assert list(g.group.plans.values()) == [None] and t.shape == (40, 1)
    np.testing.assert_array_equal(cp.asnumpy(u), cp.asnumpy(z - r * 2.0))
    t, u = g(z, z.astype(np.float32))                  # mixed dtypes
    assert u.dtype == np.float64 and list(g.group.plans.values())[-1] is None
    t, u = g(cp.asnumpy(z), cp.asnumpy(z))             # NumPy: the fallback, called directly
    assert isinstance(u, np.ndarray)
    assert elementwise.FAILED == []


def mlp_cp(W1, b1, W2, b2, x, t):
    h = cp.maximum(x @ W1 + b1, 0.0)
    h = cp.tanh(h @ W2 + b2)
    z = h - cp.max(h, axis=1, keepdims=True)
    logp = z - cp.log(cp.sum(cp.exp(z), axis=1, keepdims=True))
    return -cp.sum(logp * t) / x.shape[0]


def test_group_in_a_step():
    """A small (host-bound) MLP step: the forward sweep's runs take their kernels, and the
    rewritten sweeps give the generated sweeps' numbers (the same bits but for tanh/exp)."""
    from s2sad.api import _spec_for
    rng = np.random.default_rng(10)
    args = [cp.asarray(a) for a in _mlp_args(rng, N=16, D=8, H=16)]
    wrt = (0, 1, 2, 3)
    spec = _spec_for(mlp_cp, wrt)
    d, full = spec.derivative(spec.bind(tuple(args), {}), [(i, None) for i in wrt])
    fwd, bwd = graphs.device_sweeps(d)
    groups = {g.text: g.group for k, g in fwd.__globals__.items() if k.startswith("_s2sad_grp")}
    relu = [t for t in groups if "maximum(" in t and "+ b1" in t]
    tanh = [t for t in groups if "tanh(" in t and "+ b2" in t]
    assert relu and tanh, sorted(groups)
    val, tape = fwd(*full)
    got = bwd(tape, 1.0)
    want_val, want_tape = d.fwd(*full)
    want = d.bwd(want_tape, 1.0)
    for t in relu + tanh:                                # the kernel route was taken
        assert [p is not None for p in groups[t].plans.values()] == [True], t
    assert elementwise.FAILED == []
    assert abs(float(val) - float(want_val)) <= 1e-12 * abs(float(want_val))
    for a, b in zip(got, want):
        assert isinstance(a, cp.ndarray) and a.dtype == b.dtype
        np.testing.assert_allclose(cp.asnumpy(a), cp.asnumpy(b), rtol=1e-12, atol=1e-12)


def test_fused_falls_back_outside_its_layouts():
    f, leaves = _fused("a * b + 1")
    rng = np.random.default_rng(2)
    a = cp.asarray(rng.standard_normal((400, 300)))
    for b in (a[:, ::-1], a.T.copy().T, cp.asarray(rng.standard_normal((400, 1)).astype(np.float32)),
              np.float64(2.0), 3 + 1j):
        if isinstance(b, cp.ndarray) and b.dtype == a.dtype and b.flags.c_contiguous:
            continue
        assert elementwise._plan([a, b]) is None
        np.testing.assert_allclose(cp.asnumpy(f(a, b)), cp.asnumpy(a * b + 1))
    small = cp.ones((10, 10))
    assert elementwise._plan([small, small]) is not None     # every size (gpu_hostcost.py)


@pytest.mark.parametrize("sign", [1, -1])
@pytest.mark.parametrize("scalar", [True, False])
def test_maximum_adjoint_kernel(sign, scalar):
    rng = np.random.default_rng(3)
    a = cp.asarray(np.round(rng.standard_normal((300, 300)), 1).astype(np.float32))
    g = cp.asarray(rng.standard_normal((300, 300)).astype(np.float32))
    b = 0.0 if scalar else cp.asarray(np.round(rng.standard_normal((300, 300)), 1)
                                      .astype(np.float32))
    got = elementwise.maximum_adjoint(g, a, b, sign)
    win = (a > b) if sign > 0 else (a < b)
    want = cp.where(win, g, cp.where(a == b, 0.5 * g, 0 * g))
    assert got is not None and got.dtype == np.float32 and elementwise.FAILED == []
    assert bool((got == want).all())
    assert bool((a == b).any())                          # the ties were exercised


def test_bias_sum_as_product():
    rng = np.random.default_rng(4)
    g = cp.asarray(rng.standard_normal((4096, 300)).astype(np.float32))
    got = arrays._sum_leading(g, 1)
    np.testing.assert_allclose(cp.asnumpy(got), cp.asnumpy(g).astype(np.float64).sum(0),
                               rtol=1e-4, atol=1e-3)
    g3 = cp.asarray(rng.standard_normal((8, 512, 40)))
    np.testing.assert_allclose(cp.asnumpy(arrays._sum_leading(g3, 2)),
                               cp.asnumpy(g3).sum((0, 1)), rtol=1e-12, atol=1e-10)
    # the vector of ones is kept per (device, stream, dtype, length) and stays ones
    ones = arrays._ones(cp, 4096, np.dtype(np.float32))
    assert arrays._ones(cp, 4096, np.dtype(np.float32)) is ones and bool((ones == 1).all())
    again = arrays._sum_leading(2 * g, 1)
    np.testing.assert_allclose(cp.asnumpy(again), 2 * cp.asnumpy(got), rtol=1e-6, atol=1e-5)
    with cp.cuda.Stream():                                   # another stream: its own vector
        assert arrays._ones(cp, 4096, np.dtype(np.float32)) is not ones


def attention(Wq, Wk, Wv, Wo, x, y):
    xp = gam(x)
    B, T, D = x.shape
    q = (x @ Wq).reshape(B, T, 4, D // 4).transpose(0, 2, 1, 3)
    k = xp.swapaxes((x @ Wk).reshape(B, T, 4, D // 4), 1, 2)
    v = xp.transpose((x @ Wv).reshape(B, T, 4, D // 4), (0, 2, 1, 3))
    s = (q @ xp.swapaxes(k, -1, -2)) * 0.125
    s = s - xp.max(s, axis=-1, keepdims=True)
    p = xp.exp(s)
    p = p / xp.sum(p, axis=-1, keepdims=True)
    o = xp.moveaxis(p @ v, 1, 2).reshape(B, T, D)
    h = xp.tanh(xp.concatenate([x, o @ Wo], axis=-1))
    err = h - y
    return xp.mean(err * err)


def mlp(W1, b1, W2, b2, x, t):
    xp = gam(x)
    h = xp.maximum(x @ W1 + b1, 0.0)
    h = xp.tanh(h @ W2 + b2)
    z = h - xp.max(h, axis=1, keepdims=True)
    logp = z - xp.log(xp.sum(xp.exp(z), axis=1, keepdims=True))
    return -xp.sum(logp * t) / x.shape[0]


def _attention_args(rng, B=4, T=128, D=64):
    w = [rng.standard_normal((D, D)) / np.sqrt(D) for _ in range(4)]
    return w + [rng.standard_normal((B, T, D)), 0.5 * rng.standard_normal((B, T, 2 * D))]


def _mlp_args(rng, N=2048, D=64, H=256):
    return [rng.standard_normal((D, H)) / 8, 0.1 * rng.standard_normal(H),
            rng.standard_normal((H, H)) / 16, 0.1 * rng.standard_normal(H),
            rng.standard_normal((N, D)), np.eye(H)[rng.integers(0, H, N)]]


@pytest.mark.parametrize("step,make,nw", [(attention, _attention_args, 4), (mlp, _mlp_args, 4)])
@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_steps_on_the_device_route_match_numpy(step, make, nw, dt, monkeypatch):
    """Whole steps large enough for every route (direct products, fused kernels, maximum kernel,
    bias sums): CuPy gradients against NumPy's."""
    rng = np.random.default_rng(5)
    args = [a.astype(dt) for a in make(rng)]
    wrt = tuple(range(nw))
    v_np, g_np = s2sad.value_and_grad(step, wrt=wrt)(*args)
    dev = [cp.asarray(a) for a in args]
    used = []
    real = elementwise.Fused.__call__

    def spy(self, *vals):
        if elementwise._plan(vals) is not None:
            used.append(self.text)
        return real(self, *vals)
    monkeypatch.setattr(elementwise.Fused, "__call__", spy)
    v, g = s2sad.value_and_grad(step, wrt=wrt)(*dev)
    assert used, "no fused kernel ran"
    assert elementwise.FAILED == []
    tol = 1e-10 if dt == np.float64 else 2e-4
    assert abs(float(v) - float(v_np)) <= tol * abs(float(v_np))
    for a, b in zip(g, g_np):
        assert isinstance(a, cp.ndarray) and a.dtype == dt
        np.testing.assert_allclose(cp.asnumpy(a), b, rtol=tol, atol=tol)
    assert graphs.on_device(dev)


def reductions(x, w):
    xp = gam(x)
    c = xp.concatenate([x, x * w], axis=-1)
    s = xp.sum(c, axis=-1, keepdims=True)
    return xp.mean(c) + xp.sum(s * s) + xp.sum(xp.swapaxes(x, 0, 1))


@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_reduction_adjoints_as_views(dt):
    """Large sum/mean adjoints on CuPy are broadcast views (rules/numpy/reductions.py): they flow
    through slices, transposes and fused kernels, and the user's gradients are fresh arrays."""
    rng = np.random.default_rng(6)
    x = rng.standard_normal((64, 40, 32)).astype(dt)
    w = rng.standard_normal((64, 40, 32)).astype(dt)
    v_np, g_np = s2sad.value_and_grad(reductions, wrt=(0, 1))(x, w)
    v, g = s2sad.value_and_grad(reductions, wrt=(0, 1))(cp.asarray(x), cp.asarray(w))
    tol = 1e-10 if dt == np.float64 else 1e-4
    assert abs(float(v) - float(v_np)) <= tol * abs(float(v_np))
    for a, b in zip(g, g_np):
        assert 0 not in a.strides and a.flags.c_contiguous
        np.testing.assert_allclose(cp.asnumpy(a), b, rtol=tol, atol=tol)
        a[...] = 0                                   # the user's to change


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("shape,axis,keepdims", [((6, 7), -1, True), ((3, 4, 33), 2, False),
                                                 ((50,), None, False), ((2, 5, 300), (-1,), True),
                                                 ((1, 1), -1, False)])
def test_extremum_adjoint_kernel(shape, axis, keepdims, dt, monkeypatch):
    """One kernel for the adjoint of max over the last axis: the general path's values, bit for
    bit, ties shared evenly (values rounded to one decimal: many ties), a NaN row included."""
    from s2sad.kernels import rows
    from s2sad.rules.numpy import reductions
    rng = np.random.default_rng(4)
    a = cp.asarray(np.round(rng.standard_normal(shape), 1).astype(dt))
    a[..., 0] = a.max(axis=-1)                                    # a tie in every row
    if a.ndim > 1:
        a[(0,) * (a.ndim - 1) + (a.shape[-1] // 2,)] = cp.nan      # a row whose max is NaN
    ans = a.max(axis=axis, keepdims=keepdims)
    g = cp.asarray(rng.standard_normal(ans.shape).astype(dt))
    got = rows.extremum_adjoint(g, ans, a, axis, keepdims)
    assert got is not None and got.dtype == dt and elementwise.FAILED == []
    assert reductions.extremum(g, ans, a, axis, keepdims) is not None
    monkeypatch.setattr(rows, "extremum_adjoint", lambda *args: None)    # the general path
    want = reductions.extremum(g, ans, a, axis, keepdims)
    np.testing.assert_array_equal(cp.asnumpy(got), cp.asnumpy(want))
    if shape[-1] > 5:                                                 # ties were exercised
        assert bool((cp.sum(a == (ans if keepdims or axis is None else cp.expand_dims(ans, -1)),
                            axis=-1) > 1).any())


def test_extremum_adjoint_kernel_leaves_other_reductions():
    from s2sad.kernels import rows
    a = cp.ones((4, 5), np.float32)
    ans = a.max(axis=0, keepdims=True)
    assert rows.extremum_adjoint(cp.ones_like(ans), ans, a, 0, True) is None   # not the last axis
    b = cp.ones((4, 5), np.int64)
    assert rows.extremum_adjoint(cp.ones((4, 1), np.int64), b.max(-1, keepdims=True), b, -1,
                                 True) is None                                   # integers
    t = a.T                                                                      # not C-contiguous
    assert rows.extremum_adjoint(cp.ones((5, 1), np.float32), t.max(-1, keepdims=True), t, -1,
                                 True) is None
