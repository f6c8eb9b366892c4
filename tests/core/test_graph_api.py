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


# -- state read through objects and closures (what a replay checks first) --------------------------

class _Model:
    def __init__(self, rng):
        self.W = rng.standard_normal((3, 3))
        self.scale = 2.0
        self.parts = [rng.standard_normal(4), rng.standard_normal(4)]

    def loss(self, x):
        return np.sum(np.tanh(self.W @ x) * self.scale) + np.sum(self.parts[1] * x[0])


def _recorded_reads(fn, *args, wrt):
    d = s2sad.differentiate(fn, wrt=wrt).derivative(*args)
    fwd, bwd = graphs.sweeps(d)
    graphs._state.reads = []
    try:
        v, t = fwd(*args)
        g = bwd(t, 1.0)
        return graphs._state.reads, v, g, d
    finally:
        graphs._state.reads = None


@pytest.fixture
def numpy_as_device(monkeypatch):
    monkeypatch.setattr(graphs, "_is_cupy", lambda x: isinstance(x, np.ndarray))


def test_attribute_reads_of_self_are_checked(numpy_as_device):
    """A method's step reads self.W, self.scale, self.parts: recorded while the step runs; a
    replay is allowed while each is the same (in-place updates are), not once one is rebound."""
    rng = np.random.default_rng(4)
    m, x = _Model(rng), rng.standard_normal((3, 4))
    reads, v, g, d = _recorded_reads(_Model.loss, m, x, wrt=1)
    assert "_s2sad_attr" in graphs.sweeps(d)[0].__code__.co_names
    assert {(o is m, n) for o, n, _ in reads} == {(True, "W"), (True, "scale"), (True, "parts")}
    plain = s2sad.value_and_grad(_Model.loss, wrt=1)(m, x)
    assert v == plain[0]
    np.testing.assert_allclose(g[0], plain[1], rtol=1e-13)
    assert graphs._unwatchable(reads) is None and graphs._unchanged(reads)
    m.W *= 2                                       # in place: the graph reads it where it is
    m.scale = 4.0 / 2                              # another float, equal
    assert graphs._unchanged(reads)
    W = m.W
    m.W = W.copy()                                 # rebound: capture again
    assert not graphs._unchanged(reads)
    m.W = W
    m.scale = 3.0
    assert not graphs._unchanged(reads)
    m.scale = 2.0
    p1 = m.parts[1]
    m.parts[1] = p1 + 1                            # an item of a list it holds, rebound
    assert not graphs._unchanged(reads)
    m.parts[1] = p1
    assert graphs._unchanged(reads)
    del m.scale
    assert not graphs._unchanged(reads)


def test_state_no_check_can_see_falls_back():
    """An object holding a NumPy array (or a set...) read by the step: the warning's reason."""
    rng = np.random.default_rng(5)
    m, x = _Model(rng), rng.standard_normal((3, 4))
    reads, *_ = _recorded_reads(_Model.loss, m, x, wrt=1)
    why = graphs._unwatchable(reads)
    assert isinstance(why, graphs._UnwatchableState)
    assert str(why).startswith("it reads .W of a _Model, a ndarray, whose changes a replay "
                               "cannot see")


_GLOBAL_MODEL = None


def uses_a_global_model(x):
    return np.sum(np.tanh(_GLOBAL_MODEL.W @ x))


def test_attributes_of_a_global_object_are_checked(numpy_as_device):
    global _GLOBAL_MODEL
    rng = np.random.default_rng(6)
    _GLOBAL_MODEL = _Model(rng)
    x = rng.standard_normal((3, 4))
    reads, *_ = _recorded_reads(uses_a_global_model, x, wrt=0)
    assert [(o is _GLOBAL_MODEL, n) for o, n, _ in reads] == [(True, "W")]
    assert graphs._unchanged(reads)
    _GLOBAL_MODEL.W = _GLOBAL_MODEL.W + 1
    assert not graphs._unchanged(reads)


def test_closure_cells_are_checked():
    rng = np.random.default_rng(7)
    W = rng.standard_normal((3, 3))

    def step(x):
        return np.sum(W @ x) * k

    def rebind(new):
        nonlocal W
        W = new
    k = 2
    reads = graphs._cell_reads(step)
    assert len(reads) == 2 and {n for _, n, _ in reads} == {"cell_contents"}
    assert graphs._unchanged(reads)
    W *= 2
    k = 4 // 2
    assert graphs._unchanged(reads)
    rebind(W.copy())
    assert not graphs._unchanged(reads)


def test_objects_as_arguments_are_keyed_by_identity():
    """`self` passed as an argument: the key holds that object (its reads are checked); NumPy
    arrays and containers read by subscript are not keys (the call runs without a graph)."""
    m = _Model(np.random.default_rng(0))
    assert graphs._leaf_key(m) == ("o", id(m))
    assert graphs._leaf_key(np.ones(3)) is None
    assert graphs._leaf_key({1, 2}) is None
    assert graphs._leaf_key(2.5) == ("v", float, 2.5)
    leaves = []
    graphs._flatten(([m, 1.0], {"k": m}), leaves)
    assert leaves == [m, 1.0, m]


def _m_loss(self, W, x):
    return np.sum(np.tanh(x @ W) * self.scale)


class _WithMethod:
    loss = s2sad.differentiate(_m_loss, wrt=0, graph=True)      # bound: 0 is W

    def __init__(self, scale):
        self.scale = scale


def test_method_accesses_share_the_class_graph_function():
    """graph=True on a method: every access, on every instance, calls one Graphed of the plain
    function with the instance first (wrt shifted by one), so an access does not capture again."""
    a, b = _WithMethod(2.0), _WithMethod(3.0)
    ga, gb = a.loss._graph, b.loss._graph
    assert isinstance(ga, graphs.Bound) and ga.obj is a and gb.obj is b
    assert ga.graphed is gb.graphed is a.loss._graph.graphed
    rng = np.random.default_rng(8)
    W, x = rng.standard_normal((4, 3)), rng.standard_normal((2, 4))
    (v, g), used = ga.graphed.step((b, W, x), {})
    want = s2sad.value_and_grad(_m_loss, wrt=1)(b, W, x)
    assert v == want[0] and len(used) == 1
    np.testing.assert_allclose(g, want[1], rtol=1e-13)
    with pytest.raises(ArgumentError, match="graph=True needs CuPy arrays, but _m_loss got "
                                            "numpy.ndarray"):
        a.loss.grad(W, x)
    assert graphs.method_wrt(0) == 1 and graphs.method_wrt((0, "x")) == (1, "x")
    assert graphs.method_wrt([1, 2]) == [2, 3]
    assert graphs.method_wrt(-1) is None and graphs.method_wrt(None) is None
    plain = s2sad.differentiate(_m_loss, wrt=0)                   # graph=False: unchanged
    assert not getattr(plain.__get__(a), "_graph", False)


_PARAMS = {}


def uses_a_global_dict(x):
    return np.sum(np.tanh(_PARAMS["W"] @ x)) + _helper(_PARAMS["W"], x).sum()


def test_global_containers_and_callees_are_checked(numpy_as_device):
    """A global dict's items and a derived callee's freshness: part of what a replay checks."""
    rng = np.random.default_rng(9)
    _PARAMS["W"] = rng.standard_normal((3, 3))
    x = rng.standard_normal((3, 2))
    d = s2sad.differentiate(uses_a_global_dict, wrt=0).derivative(x)
    reads = graphs._global_reads([d])
    assert [n for _, n, _ in reads] == ["_PARAMS"]
    assert graphs._unwatchable(reads) is None and graphs._unchanged(reads)
    _PARAMS["W"] *= 2
    assert graphs._unchanged(reads)
    _PARAMS["W"] = _PARAMS["W"] + 1                  # an item rebound: capture again
    assert not graphs._unchanged(reads)
    fwd, bwd = graphs.sweeps(d)
    graphs._state.used = []
    try:
        with s2sad.kernels.gemm.graph_matmuls():
            bwd(fwd(x)[1], 1.0)
        callees = graphs._state.used
    finally:
        graphs._state.used = None
    assert [c.ir.name for c in callees] == ["_helper"]


def test_global_host_array_is_unwatchable():
    rng = np.random.default_rng(9)
    _PARAMS["W"] = rng.standard_normal((3, 3))
    d = s2sad.differentiate(uses_a_global_dict, wrt=0).derivative(rng.standard_normal((3, 2)))
    why = graphs._unwatchable(graphs._global_reads([d]))
    assert str(why) == ("it reads the global _PARAMS, a ndarray, whose changes a replay cannot see "
                        "(pass it to the step as an argument)")


def test_replay_copies_every_array_argument_each_time(monkeypatch):
    """_Captured.replay with a fake CuPy: one memcpy per contiguous array argument, an
    elementwise copy for a strided one, every replay (also for the same array objects: they may
    have changed in place), nothing for scalars; then the launch."""
    import sys
    import types as _types
    log = []

    class Stream:
        def wait_event(self, e):
            log.append("wait")

        def record(self):
            return "event"

    stream = Stream()
    fake = _types.ModuleType("cupy")
    fake.cuda = _types.SimpleNamespace(get_current_stream=lambda: stream)
    monkeypatch.setitem(sys.modules, "cupy", fake)

    class Mem:
        def __init__(self, name):
            self.name = name

        def copy_from_device_async(self, src, n, s):
            assert s is stream
            log.append(("memcpy", self.name, src.name, n))

    class Arr:
        def __init__(self, name, nbytes=8):
            self.data, self.nbytes, self.name = Mem(name), nbytes, name

        def __setitem__(self, k, v):
            log.append(("elementwise", self.name, v.name))

    graph = _types.SimpleNamespace(launch=lambda s: log.append("launch"))
    bufs = [Arr("bW", 48), None, Arr("bx", 16)]
    c = graphs._Captured(graph, None, bufs, (tuple, (None, None)), [1.5, 2.5], lambda: True,
                         [True, False, False])
    W, x = Arr("W", 48), Arr("x", 16)
    for _ in range(2):
        assert c.replay([W, 3.0, x]) == (1.5, 2.5)
    assert log == [("memcpy", "bW", "W", 48), ("elementwise", "bx", "x"), "launch",
                   "wait", ("memcpy", "bW", "W", 48), ("elementwise", "bx", "x"), "launch"]


class _WithProperty:
    def __init__(self, W):
        self.W = W

    @property
    def W2(self):
        return self.W * 2


def _reads_property(m, x):
    return np.sum(np.tanh(m.W2 @ x))


def test_property_reads_fall_back(numpy_as_device):
    """A property gives a new value at each read: the step runs without a graph (capturing
    again on every call would be slower than no graph)."""
    rng = np.random.default_rng(10)
    m, x = _WithProperty(rng.standard_normal((3, 3))), rng.standard_normal((3, 2))
    reads, v, g, _ = _recorded_reads(_reads_property, m, x, wrt=1)
    assert v == s2sad.value_and_grad(_reads_property, wrt=1)(m, x)[0]
    why = graphs._unwatchable(reads)
    assert str(why) == ("it reads the property .W2 of a _WithProperty, computed anew at each "
                        "read, which a replay cannot check (pass its value to the step as an "
                        "argument)")


def _tape_step(W, x):
    h = np.tanh(x @ W)
    s = 0.0
    for i in range(3):                        # a loop: the derivative pushes and pops its stacks
        s = s + np.sum(h * i)
    return s


def test_the_derivatives_own_tape_is_not_state_to_check(numpy_as_device):
    """The sweeps read .append/.pop of their own tape lists (a new bound method at each read):
    not reads of the user's state, so a replay stays allowed (before, every later call captured
    again: on the H200 each capture kept its memory pool, until the device ran out of memory)."""
    rng = np.random.default_rng(2)
    W, x = rng.standard_normal((4, 3)), rng.standard_normal((5, 4))
    reads, v, g, d = _recorded_reads(_tape_step, W, x, wrt=0)
    assert all(type(o) not in (list, dict, tuple, set) for o, _, _ in reads)
    assert graphs._unchanged(reads)
    assert graphs._same([].append, [].append) is False
    lst = []
    assert graphs._same(lst.append, lst.append)


def _solve_step(A, b):
    return np.sum(np.linalg.solve(A + 4 * np.eye(3), b) ** 2)


def test_cusolver_calls_are_refused_while_capturing(monkeypatch):
    """A linalg call (cuSOLVER on CuPy: on the H200 cupy.linalg.solve inside a capture did not
    return) raises before it runs while a graph is captured, and only then; here NumPy's linalg
    stands in for CuPy's."""
    monkeypatch.setattr(graphs, "_UNCAPTURABLE", graphs._UNCAPTURABLE + ("numpy.linalg",))
    rng = np.random.default_rng(1)
    A, b = rng.standard_normal((3, 3)), rng.standard_normal(3)
    d = s2sad.differentiate(_solve_step, wrt=(0, 1)).derivative(A, b)
    fwd, _ = graphs.sweeps(d)
    assert "_s2sad_guard" in fwd.__code__.co_names
    assert fwd(A, b)[0] == pytest.approx(_solve_step(A, b), rel=1e-12)     # not capturing
    graphs._state.capturing = True
    try:
        with pytest.raises(graphs._NotCapturable, match="numpy.linalg.solve runs cuSOLVER"):
            fwd(A, b)
        monkeypatch.setattr(graphs.gemm, "active", lambda: True)             # in graph mode:
        with pytest.raises(graphs._NotCapturable):                            # run-time callees
            graphs._graph_callee(np.linalg.inv)(A)
    finally:
        graphs._state.capturing = False
    assert graphs._guard(np.linalg.inv) is np.linalg.inv


def _with_solve(A, b):
    x = np.linalg.solve(A + 4 * np.eye(3), b)
    return np.sum(x ** 2) + np.linalg.norm(b)


def _with_norm_only(A, b):
    return np.sum(A @ b) + np.linalg.norm(b)


def test_linalg_steps_are_not_captured():
    """graph=True never starts a capture of a step whose derivative runs cuSOLVER (a capture
    with it stalled on the H200): graphs._linalg_site finds the user's line; products and norms
    do not count."""
    from s2sad import graphs
    from s2sad.api import _spec_for
    A, b = np.random.default_rng(0).standard_normal((3, 3)), np.ones(3)
    for fn, want in ((_with_solve, "x = np.linalg.solve(A + 4 * np.eye(3), b)"),
                     (_with_norm_only, None)):
        spec = _spec_for(fn, (0, 1))
        d, _ = spec.derivative(spec.bind((A, b), {}), [(0, None), (1, None)])
        site = graphs._linalg_site([d])
        if want is None:
            assert site is None
        else:
            assert site.text == want and site.short().startswith("test_graph_api.py:")
