"""The sweeps plain mode runs on CuPy arrays (s2sad.graphs.device_sweeps), checked on the CPU.

The generated code is rewritten twice: matrix products go through s2sad.kernels.gemm.matmul, and
each elementwise expression through a s2sad.kernels.elementwise.Fused, which runs one kernel on
large CuPy arrays and the expression as written otherwise.  Here (NumPy arrays) every Fused takes
its fallback, so the rewritten sweeps must give exactly the numbers of the generated ones; the
expressions the rewrite hands to kernels, and their C text, are checked too.  The kernels run in
tests/gpu/test_device_route_gpu.py."""
import ast

import numpy as np
import pytest

import s2sad
from s2sad import graphs
from s2sad.api import _spec_for
from s2sad.kernels import elementwise
from s2sad.testing import check_grads


def step(W1, b1, W2, x, y):
    h = np.maximum(x @ W1 + b1, 0.0)
    z = np.tanh(h @ W2)
    s = z - np.max(z, axis=1, keepdims=True)
    p = np.exp(s) / np.sum(np.exp(s), axis=1, keepdims=True)
    err = p - y
    return np.mean(err * err) + 0.5 * np.sum(W1 ** 2)


def _args():
    rng = np.random.default_rng(0)
    return [rng.standard_normal((5, 7)), rng.standard_normal(7), rng.standard_normal((7, 3)),
            rng.standard_normal((4, 5)), rng.standard_normal((4, 3))]


def test_rewritten_sweeps_give_the_same_numbers():
    args = _args()
    wrt = (0, 1, 2)
    v, g = s2sad.value_and_grad(step, wrt=wrt)(*args)
    spec = _spec_for(step, wrt)
    d, full = spec.derivative(spec.bind(tuple(args), {}), [(i, None) for i in wrt])
    fwd, bwd = graphs.device_sweeps(d)
    assert graphs.device_sweeps(d) == (fwd, bwd)                 # built once per derivative
    val, tape = fwd(*full)
    got = bwd(tape, 1.0)
    assert val == v
    for a, b in zip(got, g):
        assert np.array_equal(a, b)
    fused = {k: f for k, f in fwd.__globals__.items() if k.startswith("_s2sad_ew")}
    texts = {f.text for f in fused.values()}
    assert any("tanh" in t for t in texts) and any("1 - z * z" in t or "1 - " in t for t in texts)
    assert any(k.startswith("_s2sad_matmul") for k in fwd.__globals__)
    check_grads(step, tuple(args), wrt=wrt)


def _compile(text):
    node = ast.parse(text, mode="eval").body
    ns = {"np": np, "numpy": np, "_rt": s2sad.runtime, "len": len}
    got = elementwise.compile_expr(node, lambda e: graphs.resolve(e, ns), s2sad.runtime.cj)
    return got and got[:2]          # (C text, leaves); test_operation_count checks the third


@pytest.mark.parametrize("text,want", [
    ("g * (1 - h * h)", ("({0} * (((__T__)1.0) - ({1} * {1})))", ["g", "h"])),
    ("-np.exp(a) / _rt.cj(b)", ("((-exp({0})) / {1})", ["a", "b"])),
    ("x ** 2 + np.negative(y)", ("(pow({0}, ((__T__)2.0)) + (-{1}))", ["x", "y"])),
    ("np.abs(0.5 * t)", ("fabs((((__T__)0.5) * {0}))", ["t"])),
    ("+(a - 1)", ("(+({0} - ((__T__)1.0)))", ["a"])),
    ("np.maximum(a, 0.0)",       # CuPy's float maximum: NaN if either is, else CUDA's max
     ("((({0} != {0}) | (((__T__)0.0) != ((__T__)0.0))) ? ({0} + ((__T__)0.0)) : "
      "max({0}, ((__T__)0.0)))", ["a"])),
])
def test_expressions_to_c(text, want):
    assert _compile(text) == want


@pytest.mark.parametrize("text,nops", [("g * (1 - h * h)", 3), ("np.maximum(a, 0.0)", 1),
                                       ("-np.exp(a) / _rt.cj(b)", 3), ("+(a - 1)", 1)])
def test_operation_count(text, nops):
    """What decides a Fused's size threshold (one operation: from 1M elements, else 64K)."""
    node = ast.parse(text, mode="eval").body
    ns = {"np": np, "_rt": s2sad.runtime}
    got = elementwise.compile_expr(node, lambda e: graphs.resolve(e, ns), s2sad.runtime.cj)
    assert got[2] == nops
    f = elementwise.Fused(got[0], len(got[1]), None, text, got[2])
    assert f.min == (elementwise.MIN_ELEMENTS_ONE_OP if nops == 1 else elementwise.MIN_ELEMENTS)


@pytest.mark.parametrize("text", [
    "_rt.cj(x)",                 # no operation: nothing to run
    "a > b", "a and b", "a @ b", "a // b", "a % b",
    "np.arctan2(a, b)",          # a two-argument ufunc without a kernel form
    "np.sum(a)", "a.sum()", "x", "1.5",
])
def test_expressions_left_to_cupy(text):
    assert _compile(text) is None


@pytest.mark.parametrize("text,want,hoisted", [
    ("x.T * 2", "({0} * ((__T__)2.0))", ["x.T"]),
    ("g + _adj.sum(h, a) * g", "({0} + ({1} * {0}))", ["g", "_adj.sum(h, a)"]),
    ("-f(a * b) / _rt.cj(c)", "((-{0}) / {1})", ["f(a * b)", "c"]),
    ("a * float('inf') + 1j", "(({0} * {1}) + {2})", ["a", "float('inf')", "1j"]),
])
def test_other_subexpressions_are_computed_first(text, want, hoisted):
    """What a kernel cannot compute is a leaf the generated code evaluates first (left to
    right): the operations around it still run as one kernel."""
    cexpr, leaves = _compile(text)
    assert cexpr == want
    assert [x if isinstance(x, str) else ast.unparse(x) for x in leaves] == hoisted


def test_hoisted_leaves_keep_their_own_fusion():
    def f(x, y):
        z = np.sum(np.tanh(x * y + 1.0), axis=0) * 2.0 + np.exp(y)[0]
        return np.sum(z * z)
    args = (np.linspace(0.1, 1, 12).reshape(3, 4), np.linspace(-1, 1, 12).reshape(3, 4))
    spec = _spec_for(f, (0, 1))
    d, full = spec.derivative(spec.bind(args, {}), [(0, None), (1, None)])
    fwd, bwd = graphs.device_sweeps(d)
    texts = sorted(v.text for k, v in fwd.__globals__.items() if k.startswith("_s2sad_ew"))
    assert any("_s2sad_l" in t for t in texts), texts     # a hoisted call inside a fused one
    v, g = s2sad.value_and_grad(f, wrt=(0, 1))(*args)
    val, tape = fwd(*full)
    got = bwd(tape, 1.0)
    assert val == v and all(np.array_equal(a, b) for a, b in zip(got, g))


def test_fused_falls_back_without_cupy_arrays():
    f = elementwise.Fused("({0} * {1})", 2, lambda a, b: a * b, "a * b")
    a = np.arange(70000.0)
    assert elementwise._plan([a, a]) is None
    assert np.array_equal(f(a, a), a * a)
    assert f(2.0, 3) == 6.0


def test_a_kernel_that_does_not_build_is_tried_once(monkeypatch, caplog):
    """elementwise.built: a kernel whose build fails gives None, one warning naming it and a
    FAILED record; its users keep the None (the extremum adjoint's kernel here: the general
    path runs after it, no second build or warning)."""
    from s2sad.kernels import rows

    class _FakeDevice(np.ndarray):
        pass
    _FakeDevice.__module__ = "cupy.emulated"
    calls = []

    def broken(dt):
        calls.append(dt)
        raise RuntimeError("no compiler here")
    monkeypatch.setattr(rows, "_kernel", broken)
    monkeypatch.setattr(rows, "_KERNELS", {})
    monkeypatch.setattr(elementwise, "FAILED", [])
    a = np.arange(12.0).reshape(3, 4).view(_FakeDevice)
    ans = np.asarray(a).max(axis=-1, keepdims=True).view(_FakeDevice)
    g = np.ones((3, 1)).view(_FakeDevice)
    with caplog.at_level("WARNING"):
        for _ in range(3):
            assert rows.extremum_adjoint(g, ans, a, -1, True) is None
    assert calls == [np.dtype(np.float64)]
    assert elementwise.FAILED == [("the extremum adjoint kernel",
                                   "RuntimeError('no compiler here')")]
    assert sum("the extremum adjoint kernel did not build" in r.getMessage()
               for r in caplog.records) == 1
