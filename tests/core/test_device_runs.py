"""Runs of consecutive elementwise statements as one kernel (s2sad.graphs._Runs, issue 14: host
time of small GPU steps), checked on the CPU.

device_sweeps replaces each run of two or more elementwise statements (``_2 = _1 + b1;
h = maximum(_2, 0.0)``) by one ``a, b = _s2sad_grpN(leaves...)``, a
s2sad.kernels.elementwise.Group: one kernel on CuPy arrays, the statements as written otherwise.
Here (NumPy arrays) every Group takes its fallback, so the rewritten sweeps must give exactly the
generated sweeps' numbers; which runs are found, their outputs and aliases, the layouts that take
the kernel route and the kernel's C text are checked too.  The kernels run in
tests/gpu/test_device_route_gpu.py."""
import ast
import math
import textwrap
import traceback

import numpy as np
import pytest

import s2sad
from s2sad import graphs
from s2sad.api import _spec_for
from s2sad.kernels import elementwise


def mlp_step(W1, b1, W2, b2, W3, b3, x, t):
    h = np.maximum(x @ W1 + b1, 0.0)
    h = np.tanh(h @ W2 + b2)
    z = h @ W3 + b3
    z = z - np.max(z, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.sum(logp * t) / x.shape[0]


def attention_step(Wq, Wk, Wo, x, y):
    B, T, D = x.shape
    q = (x @ Wq).reshape(B, T, 2, D // 2).transpose(0, 2, 1, 3)
    k = np.swapaxes((x @ Wk).reshape(B, T, 2, D // 2), 1, 2)
    s = (q @ np.swapaxes(k, -1, -2)) * (1.0 / math.sqrt(D // 2))
    s = s - np.max(s, axis=-1, keepdims=True)
    p = np.exp(s)
    p = p / np.sum(p, axis=-1, keepdims=True)
    o = np.moveaxis(p @ q, 1, 2).reshape(B, T, D)
    h = np.tanh(np.concatenate([x, o @ Wo], axis=-1))
    err = h - y
    return np.mean(err * err)


def _mlp_args(rng):
    return [rng.standard_normal((6, 9)), rng.standard_normal(9), rng.standard_normal((9, 8)),
            rng.standard_normal(8), rng.standard_normal((8, 5)), rng.standard_normal(5),
            rng.standard_normal((4, 6)), np.eye(5)[[0, 3, 1, 4]]]


def _attention_args(rng):
    return [rng.standard_normal((6, 6)) / 3, rng.standard_normal((6, 6)) / 3,
            rng.standard_normal((6, 6)) / 3, rng.standard_normal((2, 5, 6)),
            rng.standard_normal((2, 5, 12))]


STEPS = {
    "mlp": (mlp_step, _mlp_args, 6, [
        "_2 = _1 + b1; h = np.maximum(_2, 0.0)",
        "_4 = _3 + b2; h = np.tanh(_4)",
        "_7 = z - _6; z = _7; _8 = np.exp(z)",
        "logp = z - _10; _11 = logp * t",
        "_b_13 = _b_r / _15; _b_12 = -_b_13"]),     # (numbers: the fallback, called directly)
    "attention": (attention_step, _attention_args, 3, [
        "_12 = 1.0 / _11; s = _9 * _12",            # (_12 a number: the fallback runs it)
        "_14 = s - _13; s = _14; p = np.exp(s)",
        "h = np.tanh(_21); err = h - y; _22 = err * err"]),
}


def _sweeps(step, args, nw):
    wrt = tuple(range(nw))
    spec = _spec_for(step, wrt)
    d, full = spec.derivative(spec.bind(tuple(args), {}), [(i, None) for i in wrt])
    return d, full


def _groups(fn):
    return {k: v for k, v in fn.__globals__.items() if k.startswith("_s2sad_grp")}


@pytest.mark.parametrize("name", sorted(STEPS))
def test_runs_of_steps_give_the_same_numbers(name):
    step, make, nw, runs = STEPS[name]
    args = make(np.random.default_rng(0))
    d, full = _sweeps(step, args, nw)
    fwd, bwd = graphs.device_sweeps(d)
    texts = sorted(g.text for g in _groups(fwd).values())
    assert texts == sorted(runs)
    val, tape = fwd(*full)
    want_val, want_tape = d.fwd(*full)
    assert val == want_val
    got, want = bwd(tape, 1.0), d.bwd(want_tape, 1.0)
    assert len(got) == nw
    for a, b in zip(got, want):
        assert np.array_equal(a, b)
    v, g = s2sad.value_and_grad(step, wrt=tuple(range(nw)))(*args)
    assert v == want_val and all(np.array_equal(a, b) for a, b in zip(g, want))


def test_run_outputs_and_aliases():
    """The group's targets are the last binding of each name (in that order) that another line
    of the sweep reads: ``_7`` is read only by ``z = _7`` (an alias: one stored value), so the
    run returns z and _8."""
    step, make, nw, _ = STEPS["mlp"]
    d, _ = _sweeps(step, make(np.random.default_rng(0)), nw)
    fwd, _b = graphs.device_sweeps(d)
    by_text = {g.text: g for g in _groups(fwd).values()}
    g = by_text["_7 = z - _6; z = _7; _8 = np.exp(z)"].group
    assert g.stmts == ("({0} - {1})", "exp(t0)") and g.stored == (0, 1)
    assert g.picks == (0, 1) and g.arity == 2
    assert g.reads == (((0, 1), False), ((), True))
    z, m = np.linspace(-1, 1, 12).reshape(4, 3), np.ones((4, 1))
    z2, _8 = g.fallback(z, m)
    assert np.array_equal(z2, z - m) and np.array_equal(_8, np.exp(z - m))


SWEEP = '''
def sweep(x, y, b, n):
    a = x * y
    c = a + b
    s = np.sum(c)
    e = np.exp(c) * 2.0
    g = e - np.sum(x)
    h = g * g
    k = h + 1.0
    lst = [h, k]
    m = k * k
    m2 = m
    m = m2 + x
    m3 = m
    if n > 0:
        u = m * 2.0
        u = np.tanh(u)
    else:
        u = m
    w = x.T * 2.0
    r = w + 1.0
    q = r * r
    return a, c, s, e, g, h, k, lst, m, m2, m3, u, w, r, q
'''


def _rewrite(src, filename="<runs test>"):
    import linecache
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    ns = {"np": np}
    runs = graphs._Runs(ns, filename)
    tree = runs.visit(ast.parse(src))
    ast.fix_missing_locations(tree)
    ns.update({k: g.entry() for k, g in runs.groups.items()})
    exec(compile(tree, filename, "exec"), ns)
    plain = {"np": np}
    exec(compile(src, filename, "exec"), plain)
    return ns, plain, tree


def test_runs_break_at_other_statements():
    ns, plain, tree = _rewrite(SWEEP)
    texts = [g.text for _, g in sorted(ns.items()) if _.startswith("_s2sad_grp")]
    assert texts == [
        "a = x * y; c = a + b",                 # ends at a reduction
        # e = exp(c) * 2.0 alone (the next reads a hoisted call: np.sum(x))
        "h = g * g; k = h + 1.0",               # ends at a container
        "m = k * k; m2 = m; m = m2 + x; m3 = m",        # aliases, a rebound name
        "u = m * 2.0; u = np.tanh(u)",          # a run in a nested statement list
        "r = w + 1.0; q = r * r",               # w = x.T * 2.0 has a hoisted leaf: not in it
    ], texts
    code = ast.unparse(tree)
    assert "a, c = _s2sad_grp0(x, y, b)" in code
    assert "m2, m, m3 = _s2sad_grp2(k, x)" in code       # order of the last bindings
    assert "u = _s2sad_grp3(m)" in code                  # one output: no tuple
    assert "e = np.exp(c) * 2.0" in code and "w = x.T * 2.0" in code
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((3, 3)), rng.standard_normal((3, 3))
    for n in (1, 0):
        b = rng.standard_normal(3)
        got, want = ns["sweep"](x, y, b, n), plain["sweep"](x, y, b, n)
        for a, w in zip(got, want):
            if isinstance(a, list):
                assert all(np.array_equal(p, r) for p, r in zip(a, w))
            else:
                assert np.array_equal(a, w)
        m, m2, m3, u = got[8], got[9], got[10], got[11]
        assert m3 is m and m2 is not m                   # aliases as in the original code
        assert (u is m) == (n == 0)


def test_run_group_internals():
    """A name read before the run rebinds it is a leaf (its value at entry); read after, the
    run's own value; the first binding of a rebound name is stored only when an alias keeps it."""
    ns, plain, _ = _rewrite(textwrap.dedent('''
        def sweep(x):
            a = x + 1
            x = a * 2
            b = x + a
            return a, x, b
        '''))
    (g,) = [v.group for k, v in ns.items() if k.startswith("_s2sad_grp")]
    assert g.stmts == ("({0} + ((__T__)1.0))", "(t0 * ((__T__)2.0))", "(t1 + t0)")
    assert g.arity == 1 and g.stored == (0, 1, 2) and g.reads == (((0,), False), ((), True),
                                                                    ((), True))
    x = np.arange(4.0)
    assert all(np.array_equal(p, q) for p, q in zip(ns["sweep"](x), plain["sweep"](x)))

    ns, _, _ = _rewrite(textwrap.dedent('''
        def sweep(x, y):
            m = x * y
            m2 = m
            m = m2 + x
            return m, m2
        '''))
    (g,) = [v.group for k, v in ns.items() if k.startswith("_s2sad_grp")]
    assert g.stored == (0, 1) and g.picks == (0, 1)      # outputs m2 (first m), m


def test_kernel_route_needs_full_shaped_results():
    """Every statement must read a full-shaped leaf or an earlier result (those are full): a
    statement of bias vectors or scalars alone would have another shape, and the run falls
    back."""
    ns, _, _ = _rewrite(textwrap.dedent('''
        def sweep(z, r, c):
            t = r * 2.0
            u = z - t
            v = u * c
            return t, u, v
        '''))
    (g,) = [v.group for k, v in ns.items() if k.startswith("_s2sad_grp")]
    F, R, C, O = elementwise._FULL, elementwise._ROW, elementwise._COL, elementwise._ONE
    assert g.arity == 3 and g.reads == (((0,), False), ((1,), True), ((2,), True))  # (r, z, c)
    assert not g._fits((R, F, C))                   # t = r * 2.0 would be row-shaped
    assert not g._fits((O, F, "s"))                 # one element
    assert not g._fits(("s", F, F))                 # a number
    assert g._fits((F, F, C)) and g._fits((F, R, O))

    ns, _, _ = _rewrite(textwrap.dedent('''
        def sweep(z, b):
            a = z + b
            h = np.maximum(a, 0.0)
            return a, h
        '''))
    (g,) = [v.group for k, v in ns.items() if k.startswith("_s2sad_grp")]
    assert g._fits((F, C)) and g._fits((F, O)) and g._fits((F, "s")) and not g._fits((C, C))


def test_group_kernel_source():
    """The C text of a small run (two outputs, a bias read along the last axis, a number)."""
    ns, _, _ = _rewrite(textwrap.dedent('''
        def sweep(x, b, s):
            a = x + b
            h = np.maximum(a, 0.0)
            h = h * s
            return a, h
        '''))
    (g,) = [v.group for k, v in ns.items() if k.startswith("_s2sad_grp")]
    assert g.stored == (0, 2) and g.picks == (0, 1)      # the first h: computed, not stored
    src = elementwise._source(g.stmts, g.stored, np.dtype(np.float32),
                              (elementwise._FULL, elementwise._COL, "s"), True)
    assert src.startswith('extern "C" __global__ void s2sad_fused(const float* __restrict__ a0, '
                          'const float* __restrict__ a1, const float s2, float* __restrict__ '
                          'out0, float* __restrict__ out1, const long long n, '
                          'const long long last) {')
    assert "if (j < N) { v0[u] = a0[j]; v1[u] = a1[j % L]; }" in src
    work = [ln.strip() for ln in src.splitlines() if ln.strip().startswith(("const float t",
                                                                           "out"))]
    assert work == [
        "const float t0 = (float)((v0[u] + v1[u]));",
        "const float t1 = (float)((((t0 != t0) | (((float)0.0) != ((float)0.0))) ? "
        "(t0 + ((float)0.0)) : max(t0, ((float)0.0))));",
        "const float t2 = (float)((t1 * s2));",
        "out0[j] = t0;",
        "out1[j] = t2;"]
    # one expression (Fused) is the same kernel with one statement
    one = elementwise._source(("({0} * {1})",), (0,), np.dtype(np.float64),
                              (elementwise._FULL, elementwise._FULL), False)
    assert "const double t0 = (double)((v0[u] * v1[u]));" in one and "out0[j] = t0;" in one


def test_fallback_tracebacks_name_the_statement():
    src = textwrap.dedent('''
        def sweep(x, y):
            a = x + 1.0
            b = a * y
            return b
        ''')
    ns, _, _ = _rewrite(src, "<runs tb>")
    with pytest.raises(ValueError) as e:
        ns["sweep"](np.ones(3), np.ones(4))
    frames = traceback.extract_tb(e.value.__traceback__)
    assert (frames[-1].filename, frames[-1].lineno) == ("<runs tb>", 4)
    assert frames[-1].line == "b = a * y"


def test_fuse_off_leaves_runs(monkeypatch):
    monkeypatch.setattr(elementwise, "ENABLED", False)

    def f(x, b):
        h = np.tanh(x + b)
        return np.sum(h * h)
    d, full = _sweeps(f, [np.ones((2, 3)), np.ones(3)], 2)
    fwd, _b = graphs.device_sweeps(d)
    assert not _groups(fwd) and not [k for k in fwd.__globals__ if k.startswith("_s2sad_ew")]


class _FakeDevice(np.ndarray):
    """NumPy arrays that _plan takes for CuPy's (its module test), for the emulated kernel."""


_FakeDevice.__module__ = "cupy.emulated"


LAUNCHES = []


def _emulated_kernel(stmts, stored, dt, modes, small):
    """The kernel of _source computed with NumPy from the same C templates (arithmetic and the
    one-argument functions), arguments as Group.__call__ passes them: operands (read in their
    layouts), outputs, n, last."""
    import re
    T = elementwise._SCALAR[dt]
    code = [re.sub(r"\(\(__T__\)([^)]*)\)", r"T(\1)", c) for c in stmts]
    code = [re.sub(r"\b(exp|tanh|log)\(", r"np.\1(", c) for c in code]

    class K:
        def compile(self):
            pass

        def __call__(self, grid, block, args):
            LAUNCHES.append((stmts, modes))
            k = len(modes)
            vals, outs = args[:k], args[k:k + len(stored)]
            shape = outs[0].shape
            L = []
            for v, m in zip(vals, modes):
                if m == "s":
                    assert type(v) is T
                    L.append(v)
                    continue
                assert type(v) is _FakeDevice and v.flags.c_contiguous
                v = np.asarray(v)
                L.append({elementwise._FULL: lambda: v,
                          elementwise._ROW: lambda: v.reshape(shape[:-1] + (1,)),
                          elementwise._COL: lambda: v.reshape(shape[-1]),
                          elementwise._ONE: lambda: v.reshape(())}[m]())
            t = []
            for c in code:
                c = re.sub(r"\bt(\d+)\b", r"t[\1]", c).format(*[f"L[{i}]" for i in range(k)])
                t.append(np.broadcast_to(eval(c, {"np": np, "T": T, "L": L, "t": t}), shape)
                         .astype(dt))
            for o, j in zip(outs, stored):
                o[...] = t[j]
    return K()


def test_group_launch_wiring_emulated(monkeypatch):
    """Group.__call__'s kernel route with an emulated kernel (no GPU here): operands in their
    layouts (a bias, a keepdims row, a broadcast view, a number), the stored outputs, and the
    aliases returned as the same array; the numbers of the statements as written."""
    monkeypatch.setattr(elementwise, "_ND", _FakeDevice)
    monkeypatch.setattr(elementwise, "_kernel", _emulated_kernel)
    ns, plain, _ = _rewrite(textwrap.dedent('''
        def sweep(x, b, r, g, s):
            a = x + b
            h = np.tanh(a)
            z = a * r - h
            z2 = z
            e = z2 * s + g
            e = e / (1.0 + h * h)
            return a, h, z, z2, e
        '''))
    (name,) = [k for k in ns if k.startswith("_s2sad_grp")]
    grp = ns[name].group
    assert grp.stored == (0, 1, 2, 4) and grp.picks == (0, 1, 2, 2, 3)
    rng = np.random.default_rng(3)
    for dt in (np.float32, np.float64):
        x = rng.standard_normal((4, 6)).astype(dt).view(_FakeDevice)
        b = rng.standard_normal(6).astype(dt).view(_FakeDevice)
        r = rng.standard_normal((4, 1)).astype(dt).view(_FakeDevice)
        g = np.broadcast_to(np.asarray(rng.standard_normal(()), dt), (4, 6)).view(_FakeDevice)
        assert 0 in g.strides                     # (an adjoint of a sum: a broadcast view)
        LAUNCHES.clear()
        got = ns["sweep"](x, b, r, g, 0.3)
        assert LAUNCHES == [(grp.stmts, ("f", "c", "r", "s", "1"))]   # one launch (x b r s g)
        assert got[3] is got[2] and type(got[4]) is _FakeDevice
        want = plain["sweep"](*(np.asarray(v) for v in (x, b, r, g)), 0.3)
        for a, w in zip(got, want):
            assert a.dtype == dt and a.shape == (4, 6)
            np.testing.assert_allclose(np.asarray(a), w, rtol=1e-6 if dt == np.float32 else 1e-14)
        # a bias alone in a statement: not full-shaped, the statements as written
        ns2, _, _ = _rewrite(textwrap.dedent('''
            def sweep(x, b):
                c = b * 2.0
                d = x + c
                return c, d
            '''))
        (n2,) = [k for k in ns2 if k.startswith("_s2sad_grp")]
        LAUNCHES.clear()
        c, d = ns2["sweep"](x, b)
        assert list(ns2[n2].group.plans.values()) == [None] and c.shape == (6,)
        assert LAUNCHES == [] and np.array_equal(d, np.asarray(x) + np.asarray(b) * 2.0)


def test_plan_layouts():
    """_plan's layouts (shared by Fused and Group): a one-element operand of more axes than the
    others would broadcast the result to more axes, so it is not taken."""
    x = np.ones((4, 5)).view(_FakeDevice)
    one = np.ones((1, 1, 1)).view(_FakeDevice)
    assert elementwise._plan([x, np.ones((1, 1)).view(_FakeDevice)])[2] == ("f", "1")
    assert elementwise._plan([x, np.ones(()).view(_FakeDevice)])[2] == ("f", "1")
    assert elementwise._plan([x, one]) is None and (x + one).shape == (1, 4, 5)
    got = elementwise._plan([x, np.ones((4, 1)).view(_FakeDevice), np.ones(5).view(_FakeDevice),
                             2.0])
    assert got[:5] == (np.dtype(np.float64), (4, 5), ("f", "r", "c", "s"), 20, 5)
    assert elementwise._plan([x, np.ones((4, 5), np.float32).view(_FakeDevice)]) is None


def test_names_nothing_else_reads_are_not_stored():
    """``_4 = _3 + b2; h = tanh(_4)``: no other line of the sweep reads ``_4`` (the tape keeps
    ``_3``), so the kernel stores h only; ``_2`` of ``_2 = _1 + b1; h = maximum(_2, 0.0)`` is
    on the tape (relu's adjoint reads it): both are stored."""
    step, make, nw, _ = STEPS["mlp"]
    d, _ = _sweeps(step, make(np.random.default_rng(0)), nw)
    fwd, _b = graphs.device_sweeps(d)
    by_text = {g.text: g.group for g in _groups(fwd).values()}
    tanh_run = next(g for t, g in by_text.items() if t.startswith("_4 = _3 + b2"))
    assert tanh_run.stored == (1,) and tanh_run.picks == (0,)
    relu_run = next(g for t, g in by_text.items() if t.startswith("_2 = _1 + b1"))
    assert relu_run.stored == (0, 1)


def test_a_run_that_falls_back_keeps_its_expressions_fused():
    """The attention step's ``_12 = 1.0 / _11; s = _9 * _12`` falls back at run time (``_12`` is
    a Python number): its fallback runs ``_9 * _12`` through the single-expression kernel, as
    the statement would run outside a run (large arrays: one kernel of four elements a thread)."""
    step, make, nw, _ = STEPS["attention"]
    args = make(np.random.default_rng(0))
    d, full = _sweeps(step, args, nw)
    fwd, bwd = graphs.device_sweeps(d)
    (g,) = [g.group for g in _groups(fwd).values() if g.text.startswith("_12 = 1.0")]
    names = g.fallback.__code__.co_names
    assert any(n.startswith("_s2sad_ew") for n in names), names
    val, tape = fwd(*full)
    want_val, want_tape = d.fwd(*full)
    assert val == want_val


def test_fused_launch_wiring_emulated(monkeypatch):
    """Fused.__call__'s kernel route (shared with Group: _Launches._prepared) with the emulated
    kernel: a bias, a keepdims row, a broadcast view and a number in one expression; one launch,
    the plan kept for the next call of the same signature, the numbers of the expression."""
    import ast as _ast
    monkeypatch.setattr(elementwise, "_ND", _FakeDevice)
    monkeypatch.setattr(elementwise, "_kernel", _emulated_kernel)
    text = "(x + b) * r - g / s"
    node = _ast.parse(text, mode="eval").body
    cexpr, leaves, nops = elementwise.compile_expr(node, lambda e: None, lambda v: v)
    f = elementwise.Fused(cexpr, len(leaves), eval("lambda " + ", ".join(leaves) + ": " + text),
                          text, nops)
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 5)).view(_FakeDevice)
    b = rng.standard_normal(5).view(_FakeDevice)
    r = rng.standard_normal((3, 1)).view(_FakeDevice)
    g = np.broadcast_to(np.asarray(rng.standard_normal(())), (3, 5)).view(_FakeDevice)
    for _ in range(2):
        LAUNCHES.clear()
        got = f(x, b, r, g, 2.0)
        assert LAUNCHES == [((cexpr,), ("f", "c", "r", "1", "s"))] and type(got) is _FakeDevice
        want = (np.asarray(x) + np.asarray(b)) * np.asarray(r) - np.asarray(g) / 2.0
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-14)
    assert len(f.plans) == 1
