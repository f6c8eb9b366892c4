"""Issue 12, Numba-mode gaps: tuple adjoints as one variable per element (codegen/reverse/
tuples.py), templates with starred arguments (np.clip), values saved only for their shapes, and
inner-loop trip counts.  Each compiled derivative runs without a JitFallbackWarning and gives
Python mode's numbers (1e-12) and finite differences'."""
import re

import numpy as np
import pytest

import s2sad

from .compare import compiled, fallback_same_as_python, same_as_python

pytest.importorskip("numba")

_R = np.random.default_rng(12)


def _step(x, v, k):                 # a tuple of two arrays, built and returned
    a = -k * x
    return x + 0.1 * v, v + 0.1 * a


def _simulate(x, v, k, steps):      # the tuple flows through a loop: unpacked, rebuilt, copied
    for t in range(steps):
        x, v = _step(x, v, k)
    return x, v


def tuple_loop(x0, v0, k):
    x, v = _simulate(x0, v0, k, 4)
    return np.sum(x * x) + 0.5 * np.sum(v ** 2)


def _mixed(x, s):                   # a heterogeneous tuple: (array, float, float)
    return x * s, s * s, np.sum(x)


def tuple_mixed(x, s):
    p = _mixed(x, s)
    q = p                           # a copy: its elements' adjoints go back element by element
    if s > 0.0:
        r = q[1] * 2.0              # one element read in one branch only
    else:
        r = q[2]
    a, b, c = q
    return np.sum(a ** 2) + r * c + b


def tuple_one_element(x, s):
    t = (x * s,)
    (u,) = t
    w = (u, u)                      # the same variable twice in one tuple
    return np.sum(w[0] * w[1]) + np.sum(t[0])


def tuple_with_constants(x):
    t = (x * 2.0, "a", 3)           # a string and an int next to an array: no adjoints for them
    a, s, n = t                     # (s = t[1] carries no derivative)
    return np.sum(a) * n


def tuple_rebound(x, k):
    t = (x, k)
    if k > 1.0:
        t = (x * k, k * k)          # bound twice, in a branch: one variable per element still
    u, v = t
    return np.sum(u) * v


TUPLES = [
    (tuple_with_constants, (_R.standard_normal(3),), (0,)),
    (tuple_rebound, (_R.standard_normal(3), 2.0), (0, 1)),
    (tuple_rebound, (_R.standard_normal(3), 0.5), (0, 1)),
    (tuple_loop, (_R.standard_normal(5), _R.standard_normal(5), 1.3), (0, 1, 2)),
    (tuple_mixed, (_R.standard_normal(4), 0.7), (0, 1)),
    (tuple_mixed, (_R.standard_normal(4), -0.4), (0, 1)),
    (tuple_one_element, (_R.standard_normal(3), 1.1), (0, 1)),
]




@pytest.mark.parametrize("f, args, wrt", TUPLES, ids=[f"{c[0].__name__}{i}" for i, c in
                                                      enumerate(TUPLES)])
def test_tuple_adjoints_compile(f, args, wrt):
    same_as_python(f, args, wrt)


def test_tuple_loop_closed_form():
    """x_{t+1} = x + 0.1 v, v_{t+1} = v - 0.1 k x: linear in (x0, v0), so the gradient is the
    transposed propagator applied to the loss's gradient."""
    x0, v0, k = _R.standard_normal(3), _R.standard_normal(3), 1.3
    M = np.array([[1.0, 0.1], [-0.1 * k, 1.0]])
    P = np.linalg.matrix_power(M, 4)
    xT, vT = P[0, 0] * x0 + P[0, 1] * v0, P[1, 0] * x0 + P[1, 1] * v0
    gx = P[0, 0] * 2 * xT + P[1, 0] * vT
    gv = P[0, 1] * 2 * xT + P[1, 1] * vT
    _, (g0, g1) = compiled(tuple_loop, (0, 1), (x0, v0, k))
    np.testing.assert_allclose(g0, gx, rtol=1e-12)
    np.testing.assert_allclose(g1, gv, rtol=1e-12)


def test_tuple_adjoint_source_is_per_element():
    src = s2sad.differentiate(tuple_mixed, wrt=(0, 1)).adjoint_source(
        _R.standard_normal(4), 0.7, jit=True)
    code = "\n".join(ln.split("#")[0] for ln in src.splitlines())
    assert "_rt.parts" not in code and "getitem_adjoint" not in code and \
        "acc_getitem" not in code
    assert "_b_q_2 = _b_c" in code and "_b_q_0 = _rt.acc(_b_q_0, _b_a)" in code
    assert "_b_p_1 = _b_q_1" in code and "_b_q_1 = _rt.zero_of(q[1])" in code
    src = s2sad.differentiate(tuple_with_constants).adjoint_source(np.ones(3), jit=True)
    assert "_b_t_1 = 0.0" in src and "getitem_adjoint" not in src
    # (Python mode keeps one tuple adjoint object)
    py = s2sad.differentiate(tuple_mixed, wrt=(0, 1)).adjoint_source(_R.standard_normal(4), 0.7)
    assert "_rt.getitem_adjoint(" in py or "_rt.acc_getitem(" in py


def _dynamic_index(x, s):
    t = (x * s, x + s)
    out = 0.0
    for i in range(2):
        out = out + np.sum(t[i] ** 2)   # a variable index: the runtime tuple adjoint
    return out


def test_tuple_with_variable_index_keeps_runtime_path():
    args = (_R.standard_normal(3), 0.9)
    src = s2sad.differentiate(_dynamic_index, wrt=(0, 1)).adjoint_source(*args, jit=True)
    assert "_b_t_0" not in src
    fallback_same_as_python(_dynamic_index, args, (0, 1))


# -- templates with starred arguments (np.clip: `_adj.clip(g, a, *_adj.clip_bounds(...), 'a')`) --
def clipped(x, lo, hi):
    y = np.clip(x, lo, hi) ** 2                 # both bounds differentiable
    z = np.clip(x * 2.0, -0.3, None)            # one bound
    w = np.clip(x, a_min=None, a_max=hi)        # keywords, the other bound
    return np.sum(y) + np.sum(z * x) + np.sum(w ** 3)


def test_clip_compiles():
    x = np.array([-1.0, -0.62, -0.31, -0.05, 0.11, 0.2, 0.48, 0.93])
    for lo, hi in ((-0.4, 0.5), (-0.9, 0.1)):
        gj = same_as_python(clipped, (x, lo, hi), (0, 1, 2))
    # at (-0.9, 0.1): x < lo at -1.0 only, x > hi at 0.11, 0.2, 0.48, 0.93 (y and w)
    lo, hi = -0.9, 0.1
    want_lo = 2 * lo * 1
    want_hi = 2 * hi * 4 + 3 * hi ** 2 * 4
    assert gj[1] == pytest.approx(want_lo, rel=1e-12)
    assert gj[2] == pytest.approx(want_hi, rel=1e-12)


def test_starred_template_source():
    """The bounds are bound to names before the call, so numba sees 'a'/'lo'/'hi' as literals; a
    starred tuple display is spliced."""
    src = s2sad.differentiate(clipped, wrt=(0, 1, 2)).adjoint_source(
        np.linspace(-1, 1, 5), -0.4, 0.5, jit=True)
    code = "\n".join(ln.split("#")[0] for ln in src.splitlines())
    assert "*_adj" not in code and "*(" not in code
    assert "= _adj.clip_bounds(x, lo, hi, None, None)" in code
    assert code.count(", 'lo')") == 1 and code.count(", 'hi')") == 2
    from s2sad.codegen import text as T
    import ast
    tree, hoisted = T.unstar(ast.parse("f(g, *(a, b), *h(x), 'a')", mode="eval").body,
                             lambda e: 3, iter(["_u1", "_u2", "_u3"]).__next__)
    assert T.unparse(tree) == "f(g, a, b, _u1, _u2, _u3, 'a')" and hoisted == [
        (["_u1", "_u2", "_u3"], "h(x)")]
    tree, hoisted = T.unstar(ast.parse("f(*h(x), 'a')", mode="eval").body, lambda e: None,
                             lambda: "_u9")
    assert T.unparse(tree) == "f(*h(x), 'a')" and hoisted == []


# -- values saved only for their shapes (codegen/reverse/shapes.py) ---------------------------------
def reduced_in_loop(x, w):
    s = 0.0
    for i in range(3):
        y = np.sin(x * w[i])
        s = s + np.sum(y) * w[i] + np.mean(y * y)   # y * y: read by mean's adjoint for its shape
    return s + np.sum(x ** 2)


def reduced_then_changed(x):
    y = x * 2.0
    s = np.sum(y)                   # only y's shape is needed: no copy of y before the write
    y[0] = 5.0
    return s * np.sum(y * x)


def test_shapes_saved_instead_of_arrays():
    x, w = _R.standard_normal(5), np.array([0.3, 0.7, 1.1])
    d = s2sad.differentiate(reduced_in_loop, wrt=(0, 1))
    code = "\n".join(ln.split("#")[0].rstrip() for ln in d.adjoint_source(x, w, jit=True)
                     .splitlines())
    # y * y (_7) travels as its shape; y itself is still saved (sin's adjoint reads it)
    assert "_s_7" not in code and "_s_y.append(y)" in code
    sh = re.search(r"(_shape\d+) = _7\.shape\n", code).group(1)
    # (on a 2-d integer array, a row per trip: codegen/reverse/stacks.py)
    assert f"_s{sh} = _np.empty((3, 1), _np.int64)" in code
    assert re.search(rf"_s{sh}\[_t\d+, 0\] = {sh}\[0\]\n", code), code
    assert re.search(rf"{sh} = \(_s{sh}\[_t\d+, 0\],\)\n", code), code
    assert f"_adj.mean(_b_8, _adj.standin({sh}), None, False)" in code
    # (x ** 2 after the loop is bound once at the top level: it travels by name, as it is)
    assert "_b_9 = _adj.sum(_b_10, _9, None, False)" in code
    # Python mode keeps the arrays (its types know a dtype's kind, not its size)
    py = d.adjoint_source(x, w)
    assert "standin" not in py and "_s_7.append(_7)" in py
    same_as_python(reduced_in_loop, (x, w), (0, 1))


def test_shape_save_skips_the_copy_before_a_write():
    x = _R.standard_normal(4)
    d = s2sad.differentiate(reduced_then_changed)
    src = d.adjoint_source(x, jit=True)
    assert re.search(r"_shape\d+ = y\.shape", src) and "snap" not in src
    # Python mode too: y would be copied (it is written later); its shape and dtype are saved
    py = d.adjoint_source(x)
    sh = re.search(r"(_shape\d+) = \(y\.shape, y\.dtype\)", py).group(1)
    assert "snap" not in py and f"_adj.sum(_b_s, _adj.standin({sh}), None, False)" in py
    g32 = s2sad.grad(reduced_then_changed)(x.astype(np.float32))
    assert g32.dtype == np.float32
    np.testing.assert_allclose(g32, s2sad.grad(reduced_then_changed)(x), rtol=1e-5)
    g = same_as_python(reduced_then_changed, (x,), (0,))[0]
    y = x * 2.0
    y2 = y.copy()
    y2[0] = 5.0
    s, t = np.sum(y), np.sum(y2 * x)
    want = 2.0 * t + s * y2 + s * x * np.r_[0.0, 2.0 * np.ones(3)]
    np.testing.assert_allclose(g, want, rtol=1e-12)


# -- inner-loop trip counts -----------------------------------------------------------------------
def nested_loops(x, n, steps):
    m = x.shape[0]
    s = 0.0
    for t in range(steps):
        for i in range(n):
            for j in range(m):
                s = s + x[j] * (i + 1.0) * s * 0.01 + x[j]
    return s


def inner_stop_in_loop(x, steps):
    s = 0.0
    for t in range(steps):
        m = x.shape[0] - t              # bound in the outer loop: a different trip count each trip
        for j in range(m):
            s = s + x[j] * s * 0.1 + x[j]
    return s


def test_trip_counts_of_invariant_stops_are_not_saved():
    """A stop that is a parameter or a variable bound once before the loops travels by name: no
    trip count is pushed per outer trip, in either mode.  A stop bound inside the outer loop is
    saved once per outer trip (its value may differ between trips)."""
    x = _R.standard_normal(3)
    for jit in (None, True):
        src = s2sad.differentiate(nested_loops).adjoint_source(x, 2, 3, jit=jit)
        assert ".append(m)" not in src and ".append(n)" not in src and "_s_m" not in src
        src = s2sad.differentiate(inner_stop_in_loop).adjoint_source(x, 3, jit=jit)
        if jit:             # (an integer per outer trip: an array at the trip index, stacks.py)
            assert "] = m  " in src and "m = _s_m[_t" in src
        else:
            assert "_s_m.append(m)" in src and "m = _s_m.pop()" in src
    same_as_python(nested_loops, (x, 2, 3), (0,))
    same_as_python(inner_stop_in_loop, (x, 3), (0,))


def scaled_by_flag(x, flag):        # isinstance on a number class: numba's types decide it
    if isinstance(flag, int):
        return np.sum(x) * 2.0
    return np.sum(x) * 3.0


def test_isinstance_on_a_number_class_runs_as_python():
    # numba's isinstance(True, int) is False (a bool is no int to it), Python's True: the
    # compiled derivative took the other branch (3 where the gradient is 2); now the function
    # runs as Python, with the warning naming the line
    x = _R.normal(size=3)
    with pytest.warns(s2sad.errors.JitFallbackWarning, match="isinstance.*number class"):
        _, g = s2sad.value_and_grad(scaled_by_flag, jit=True)(x, True)
    np.testing.assert_allclose(g, np.full(3, 2.0))
    for flag in (True, 1, 1.0, np.int64(1), np.float32(1)):
        fallback_same_as_python(scaled_by_flag, (x, flag), 0)
    with pytest.warns(s2sad.errors.JitFallbackWarning, match="number class"):
        _, t = s2sad.jvp(scaled_by_flag, (x, True), (np.ones(3), 0), jit=True)
    assert t == pytest.approx(6.0)


def test_a_numba_function_testing_isinstance_on_a_number_class_is_refused():
    # the user's @njit function runs with numba's answer (isinstance(True, int) is False there:
    # 3 * sum(x)), a derivative built from its Python source would follow Python's (2): refused
    import numba

    def by_flag(x, flag):
        if isinstance(flag, int):
            return np.sum(x) * 2.0
        return np.sum(x) * 3.0
    compiled_f = numba.njit(by_flag)
    x = _R.normal(size=3)
    assert compiled_f(x, True) == pytest.approx(3 * np.sum(x))
    for jit in (False, True):
        with pytest.raises(s2sad.UnsupportedSyntaxError, match="compiled by numba") as ei:
            s2sad.grad(compiled_f, jit=jit)(x, True)
        assert "isinstance(flag, int)" in str(ei.value)
    # the same Python function differentiated plainly first (its derivative cached), then
    # through numba.njit, directly and as a callee: refused all the same
    s2sad.grad(scaled_by_flag)(x, True)
    again = numba.njit(scaled_by_flag)

    def outer(x):
        return again(x, True) * 1.0
    for run in (lambda: s2sad.grad(again)(x, True), lambda: s2sad.grad(outer)(x)):
        with pytest.raises(s2sad.UnsupportedSyntaxError, match="compiled by numba"):
            run()
