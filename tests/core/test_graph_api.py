"""graph=True's API surface on the CPU (the GPU behaviour: tests/gpu/test_graph_mode.py): the
argument checks, NumPy arguments refused with the fix, pickling keeps the option, and the
sweeps graph mode runs (matrix products routed through s2sad.kernels.gemm) give the same numbers."""
import pickle
import warnings

import numpy as np
import pytest

import s2sad
from s2sad import graphs
from s2sad.errors import ArgumentError, GraphFallbackWarning, S2SADWarning


def loss(W, x):
    h = np.tanh(W @ x)
    z = np.matmul(h.T, h)
    return np.sum(z * z)


def _args():
    rng = np.random.default_rng(0)
    return rng.standard_normal((4, 3)), rng.standard_normal((3, 2))


@pytest.mark.parametrize("make", [
    lambda: s2sad.grad(loss, graph=True),
    lambda: s2sad.value_and_grad(loss, graph=True),
    lambda: s2sad.differentiate(loss, graph=True).grad,
    lambda: s2sad.differentiate(loss, graph=True).value_and_grad])
def test_numpy_arguments_are_refused(make):
    W, x = _args()
    f = make()
    with pytest.raises(ArgumentError) as e:
        f(W, x)
    msg = str(e.value)
    assert "graph=True needs CuPy arrays, but loss got numpy.ndarray" in msg
    assert "test_graph_api.py" in msg
    assert "Fix: pass CuPy arrays, or drop graph=True for NumPy arguments" in msg


def test_scalars_only_are_refused():
    with pytest.raises(ArgumentError, match="got no arrays"):
        s2sad.grad(lambda a: a * a, graph=True)(3.0)


@pytest.mark.parametrize("api", [s2sad.grad, s2sad.value_and_grad])
def test_graph_takes_a_bool_and_not_jit(api):
    with pytest.raises(ArgumentError, match=r"graph='yes' for loss: graph takes True or False"):
        api(loss, graph="yes")
    with pytest.raises(ArgumentError, match="graph=True and jit=True for loss") as e:
        api(loss, graph=True, jit=True)
    assert "Fix: use graph=True for CuPy arrays, jit=True for NumPy arrays" in str(e.value)
    with pytest.raises(ArgumentError, match="graph=True and jit=True"):
        s2sad.differentiate(loss, graph=True, jit=True)


def test_graph_false_is_the_plain_path():
    W, x = _args()
    g0 = s2sad.grad(loss, wrt=(0, 1))(W, x)
    g1 = s2sad.grad(loss, wrt=(0, 1), graph=False)(W, x)
    for a, b in zip(g0, g1):
        np.testing.assert_array_equal(a, b)


def test_pickled_gradient_keeps_graph():
    g = pickle.loads(pickle.dumps(s2sad.grad(loss, graph=True)))
    with pytest.raises(ArgumentError, match="graph=True needs CuPy arrays"):
        g(*_args())
    d = pickle.loads(pickle.dumps(s2sad.differentiate(loss, graph=True)))
    assert d._graph
    with pytest.raises(ArgumentError, match="graph=True needs CuPy arrays"):
        d.grad(*_args())


def test_warning_classes():
    assert issubclass(GraphFallbackWarning, S2SADWarning)
    assert issubclass(S2SADWarning, UserWarning)


def test_graph_sweeps_route_matmuls_and_agree():
    """graphs.sweeps(d): the same generated code with `@` and np.matmul through gemm.matmul; on
    NumPy arrays (even inside graph_matmuls) the same numbers as the plain sweeps."""
    W, x = _args()
    d = s2sad.differentiate(loss, wrt=(0, 1)).derivative(W, x)
    fwd, bwd = graphs.sweeps(d)
    assert graphs.sweeps(d) == (fwd, bwd)                   # built once per derivative
    assert "_s2sad_matmul" in fwd.__code__.co_names
    assert "matmul" not in fwd.__code__.co_names
    v0, t0 = d.fwd(W, x)
    g0 = d.bwd(t0, 1.0)
    with s2sad.kernels.gemm.graph_matmuls():
        v1, t1 = fwd(W, x)
        g1 = bwd(t1, 1.0)
    assert v0 == v1
    for a, b in zip(g0, g1):
        np.testing.assert_allclose(a, b, rtol=1e-14)
    # the rewritten code keeps the generated file name and lines (tracebacks, source map)
    assert fwd.__code__.co_filename == d.fwd.__code__.co_filename
    assert fwd.__code__.co_firstlineno == d.fwd.__code__.co_firstlineno


def test_fallback_warning_names_the_users_line():
    """Graphed._warn: one GraphFallbackWarning naming the line the error came from."""
    W, x = _args()

    def bad(W, x):
        return np.sum(W @ x) + float(np.sum(x))

    gr = graphs.Graphed(lambda a, k: None, bad)
    d = s2sad.differentiate(bad, wrt=0).derivative(W, x)
    try:
        d.fwd(W, "not an array")
    except Exception as e:                   # noqa: BLE001
        err = e
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        gr._warn(err, "CUDARuntimeError: cudaErrorStreamCaptureUnsupported")
    assert len(w) == 1 and w[0].category is GraphFallbackWarning
    msg = str(w[0].message)
    assert "test_graph_api.py:" in msg and "graph=True could not capture the step of" in msg
    assert "cudaErrorStreamCaptureUnsupported" in msg
    assert "return np.sum(W @ x) + float(np.sum(x))" in msg


def _helper(W, x):
    return np.tanh(W @ x)


_K = 2.0


def with_callee_loop_and_nested_def(W, x):
    h = _helper(W, x)                       # a derived callee (its own derivative, not rewritten)

    def inner(z):                           # a nested def: copied as written, read again
        return z @ W.T * _K
    y = inner(x.T)
    s = 0.0
    for i in range(3):
        s = s + np.sum(h[i] ** 2)
    if y.shape[0] > 1:
        y = y * 2
    return s + np.sum(np.matmul(y, W) ** 2)


def test_graph_step_on_callees_loops_and_nested_defs():
    """api._graph_step (what graph mode runs and captures) against graph=False, on code whose
    generated module holds a nested def (rewriting it made s2sad refuse it as stale source)."""
    from s2sad import api
    rng = np.random.default_rng(3)
    W, x = rng.standard_normal((3, 3)), rng.standard_normal((3, 4))
    step = api._graph_step(api._Specs(with_callee_loop_and_nested_def, (0, 1)), False)
    want = s2sad.value_and_grad(with_callee_loop_and_nested_def, wrt=(0, 1))(W, x)
    for on in (False, True):
        with s2sad.kernels.gemm.graph_matmuls() if on else warnings.catch_warnings():
            (v, g), used = step((W, x), {})
        assert v == want[0] and len(used) == 1
        for a, b in zip(g, want[1]):
            np.testing.assert_allclose(a, b, rtol=1e-13)
    # in graph mode the derived callee runs its rewritten sweeps too (runtime.dispatch._sweeps)
    from s2sad.runtime import dispatch
    callee = s2sad.differentiate(_helper, wrt=(0, 1)).derivative(W, x)
    assert dispatch._sweeps(callee) == (callee.fwd, callee.bwd)
    with s2sad.kernels.gemm.graph_matmuls():
        assert dispatch._sweeps(callee) == graphs.sweeps(callee)
        assert "_s2sad_matmul" in dispatch._sweeps(callee)[0].__code__.co_names
    d = used[0]
    fwd, _ = graphs.sweeps(d)
    assert "_s2sad_route0" in fwd.__code__.co_names and "matmul" not in fwd.__code__.co_names
    inner = [c for c in fwd.__code__.co_consts if getattr(c, "co_name", "") == "inner"]
    assert inner and "_s2sad_matmul" not in inner[0].co_names
