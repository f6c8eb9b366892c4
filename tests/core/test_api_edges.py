"""The front door's edges (issue 10): callables given to the API directly (NumPy's Python wrappers
with rules, functools.partial objects, callable objects, closures over data), and the refusals of
arguments that do not fit (duplicated wrt, jvp primals not in a tuple, tangents and cotangents of
the wrong shape).  Every derivative is checked in both modes; every refusal names this file's line
and ends with a Fix."""
import functools
import inspect
import math
import os
import warnings

import numpy as np
import pytest

import s2sad
from s2sad.api import ArgumentError
from s2sad.errors import (OpaqueCalleeError, RuleError, S2SADError, UnsupportedSyntaxError,
                          WrtError)
from s2sad.testing import _random_tree, check_grads

HERE = os.path.basename(__file__)
BOTH = ("rev", "fwd")


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def line_after():
    """The line number after the caller's (the statement inside ``with pytest.raises``)."""
    return inspect.currentframe().f_back.f_lineno + 2


def assert_refusal(excinfo, line=None):
    msg = str(excinfo.value)
    assert isinstance(excinfo.value, S2SADError)
    if line is not None:
        assert f"{HERE}:{line}" in msg, msg
    assert "\nFix: " in msg, msg
    return msg


# -- class 5: NumPy's Python wrappers (and every callee with a rule) given directly ----------------
def test_vjp_of_np_moveaxis_given_directly():
    x = rand(2, 3, 4)
    value, pullback = s2sad.vjp(np.moveaxis, x, 0, -1)
    np.testing.assert_array_equal(value, np.moveaxis(x, 0, -1))
    ct = rand(3, 4, 2, seed=1)
    gx, g_src, g_dst = pullback(ct)
    np.testing.assert_array_equal(gx, np.moveaxis(ct, -1, 0))       # was all zeros
    assert g_src is None and g_dst is None
    check_grads(np.moveaxis, (x, 0, -1), wrt=0, modes=BOTH)


def test_vjp_of_np_diag_with_a_keyword_given_directly():
    d = rand(3)
    value, pullback = s2sad.vjp(np.diag, d, k=-1)
    np.testing.assert_array_equal(value, np.diag(d, k=-1))
    ct = rand(4, 4, seed=1)
    (gd,) = pullback(ct)
    np.testing.assert_array_equal(gd, np.diag(ct, k=-1))             # was all zeros
    check_grads(functools.partial(np.diag, k=-1), (d,), modes=BOTH)
    m = rand(4, 4, seed=2)
    _, pullback = s2sad.vjp(np.diag, m, -1)                          # k positionally
    np.testing.assert_array_equal(pullback(rand(3, seed=3))[0],
                                  np.diag(rand(3, seed=3), -1))


def test_jvp_of_np_real_and_np_imag_given_directly():
    z = rand(3) + 1j * rand(3, seed=1)
    t = rand(3, seed=2) + 1j * rand(3, seed=3)
    v, tr = s2sad.jvp(np.real, (z,), (t,))
    np.testing.assert_array_equal(v, z.real)
    np.testing.assert_array_equal(tr, t.real)
    v, ti = s2sad.jvp(np.imag, (z,), (t,))
    np.testing.assert_array_equal(v, z.imag)
    np.testing.assert_array_equal(ti, t.imag)
    # and the same as through a lambda, in reverse mode too
    ct = rand(3, seed=4)
    for fn in (np.real, np.imag):
        direct = s2sad.vjp(fn, z)[1](ct)[0]
        wrapped = s2sad.vjp(lambda a, fn=fn: fn(a), z)[1](ct)[0]
        np.testing.assert_array_equal(direct, wrapped)
    np.testing.assert_array_equal(s2sad.vjp(np.imag, z)[1](ct)[0], 1j * ct)


def test_every_entry_point_uses_the_rule_of_a_callee_given_directly():
    x = rand(3, seed=5)
    cos = np.cos(x)
    assert s2sad.grad(np.sin)(0.5) == pytest.approx(math.cos(0.5), abs=1e-15)
    v, g = s2sad.value_and_grad(np.sum)(x)
    assert v == np.sum(x) and np.array_equal(g, np.ones(3))
    np.testing.assert_allclose(s2sad.jvp(np.sin, (x,), (np.ones(3),))[1], cos, rtol=1e-14)
    for jac in (s2sad.jacobian, s2sad.jacfwd, s2sad.jacrev):
        np.testing.assert_allclose(jac(np.sin)(x), np.diag(cos), rtol=1e-14, atol=1e-15)
        np.testing.assert_allclose(jac(np.moveaxis, 0)(rand(2, 3), 0, 1),
                                   np.eye(6).reshape(2, 3, 3, 2).transpose(1, 0, 2, 3).reshape(
                                       3, 2, 2, 3), atol=0)
    np.testing.assert_allclose(s2sad.hessian(np.var)(x), (2 / 3) * (np.eye(3) - 1 / 3),
                               rtol=1e-12, atol=1e-15)
    v = rand(3, seed=6)
    np.testing.assert_allclose(s2sad.hvp(np.sum)(x, v), np.zeros(3), atol=0)
    d = s2sad.differentiate(np.moveaxis)
    gx = d.vjp(rand(2, 3), 0, 1)[1](rand(3, 2, seed=7))[0]
    np.testing.assert_array_equal(gx, rand(3, 2, seed=7).T)
    explained = d.explain(rand(2, 3), 0, 1)
    assert "rule np.moveaxis" in explained and "numeric.py" not in explained
    assert "moveaxis" in s2sad.transforms.forward_source(np.moveaxis, 0, rand(2, 3), 0, 1)


def test_a_callee_declared_non_differentiable_has_zero_derivative_given_directly():
    assert s2sad.grad(np.floor)(1.3) == 0.0 == s2sad.grad(lambda x: np.floor(x))(1.3)
    np.testing.assert_array_equal(s2sad.jvp(np.floor, (rand(3),), (np.ones(3),))[1], np.zeros(3))


def _rule_callees():
    import scipy.linalg  # noqa: F401  (load SciPy's optional table)
    import scipy.special  # noqa: F401
    from s2sad.rules import registry
    registry.lookup(np.sin)
    from s2sad.rules import load_optional_tables
    load_optional_tables()
    out = []
    for rule in list(registry._RULES.values()):
        fn = rule.fn
        mod = "numpy" if isinstance(fn, np.ufunc) else (getattr(fn, "__module__", None) or "")
        if rule.zero or not mod.split(".")[0] in ("numpy", "scipy") or isinstance(fn, tuple):
            continue
        out.append((rule.name, fn))
    return out


def _output_ok(y):
    leaves = y if isinstance(y, tuple) else (y,)
    return all(isinstance(v, (float, np.floating, np.ndarray)) and np.all(np.isfinite(v)) and
               np.asarray(v).dtype.kind in "fc" for v in leaves) and len(leaves) > 0


def _trees_equal(a, b):
    if isinstance(a, tuple):
        return isinstance(b, tuple) and len(a) == len(b) and all(map(_trees_equal, a, b))
    if a is None or b is None:
        return a is None and b is None
    return np.allclose(a, b, rtol=1e-12, atol=1e-14)


def test_sweep_every_numpy_and_scipy_rule_given_directly_equals_through_a_lambda():
    """Every NumPy/SciPy callee with a rule that works on one random float64 array: vjp and jvp
    of the callee given directly equal those of ``lambda a: callee(a)``."""
    rng = np.random.default_rng(0)
    checked, wrong = [], []
    for name, fn in _rule_callees():
        for x in (rng.standard_normal((3, 3)) * 0.3 + 0.1, rng.uniform(0.1, 0.9, (3, 3))):
            try:
                with warnings.catch_warnings(), np.errstate(all="ignore"):
                    warnings.simplefilter("ignore")
                    y = fn(x)
            except Exception:
                continue
            if _output_ok(y):
                break
        else:
            continue
        ct = _random_tree(y, rng)
        t = rng.standard_normal(x.shape)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                v1, p1 = s2sad.vjp(fn, x)
                g1 = p1(ct)[0]
                _, t1 = s2sad.jvp(fn, (x,), (t,))
            except S2SADError as e:                  # a refusal is allowed, not a wrong answer
                assert "Fix:" in str(e), (name, str(e))
                continue
            v2, p2 = s2sad.vjp(lambda a: fn(a), x)
            g2 = p2(ct)[0]
            _, t2 = s2sad.jvp(lambda a: fn(a), (x,), (t,))
        checked.append(name)
        if not (_trees_equal(v1, v2) and _trees_equal(g1, g2) and _trees_equal(t1, t2)):
            wrong.append(name)
    assert not wrong, f"given directly differs from through a lambda: {wrong}"
    assert len(checked) > 100, checked
    for must in ("np.diag", "np.real", "np.imag", "np.sum", "np.transpose", "numpy.sin"):
        assert must in checked, must


def test_python_functions_of_installed_packages_without_a_rule_are_refused():
    import statistics
    for fn, x in ((np.linalg.cond, rand(3, 3)), (np.polyfit, rand(3)), (statistics.fmean, [1.0])):
        line = line_after()
        with pytest.raises(OpaqueCalleeError) as e:
            s2sad.grad(fn)(x)
        msg = assert_refusal(e, line)
        assert "no derivative rule" in msg and "s2sad.defrule(" in msg
    line = line_after()
    with pytest.raises(OpaqueCalleeError) as e:
        s2sad.vjp(np.linalg.cond, rand(3, 3))
    assert "numpy.linalg.cond" in assert_refusal(e, line)
    line = line_after()
    with pytest.raises(OpaqueCalleeError) as e:
        s2sad.jvp(np.linalg.cond, (rand(3, 3),), (rand(3, 3),))
    assert_refusal(e, line)
    line = line_after()
    with pytest.raises(OpaqueCalleeError) as e:
        s2sad.grad(np.vectorize(np.sin))(rand(3))            # a library object's __call__
    assert "numpy.vectorize object" in assert_refusal(e, line)


def test_a_builtin_without_a_rule_given_directly_names_the_line():
    import ctypes
    line = line_after()
    with pytest.raises(S2SADError) as e:
        s2sad.grad(ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_double)(math.cos))(0.3)
    assert_refusal(e, line)


# -- functools.partial and callable objects --------------------------------------------------------
def weighted(a, x, scale=1.0):
    return scale * np.sum(a * np.sin(x) * x)


def weighted_grad_x(a, x, scale=1.0):
    return scale * a * (np.cos(x) * x + np.sin(x))


class Model:
    def __init__(self, W, b):
        self.W, self.b = W, b

    def layer(self, x):
        return np.tanh(self.W @ x + self.b)

    def __call__(self, x):
        h = self.layer(x)
        return 0.5 * np.sum(h * h)

    def energy(self, x, c):
        return c * np.sum(self.W @ x)


class Quadratic:
    """A model whose __call__ calls no other method (second derivatives through method calls
    resolved at run time are refused, see test_hessian_through_a_call_...)."""

    def __init__(self, W, b):
        self.W, self.b = W, b

    def __call__(self, x):
        h = np.tanh(self.W @ x + self.b)
        return 0.5 * np.sum(h * h)


class VectorModel:
    def __init__(self, W):
        self.W = W

    def __call__(self, x):
        return np.sin(self.W @ x)


def model_grad(m, x):
    h = np.tanh(m.W @ x + m.b)
    return m.W.T @ (h * (1 - h * h))


def test_grad_of_a_partial_both_modes():
    a, x = rand(3), rand(3, seed=1)
    p = functools.partial(weighted, a)
    np.testing.assert_allclose(s2sad.grad(p)(x), weighted_grad_x(a, x), rtol=1e-12)
    np.testing.assert_allclose(s2sad.grad(p, wrt="x")(x), weighted_grad_x(a, x), rtol=1e-12)
    check_grads(p, (x,), modes=BOTH)
    # bound keywords, a keyword overriding one at the call, and a partial of a partial
    q = functools.partial(weighted, x=x, scale=2.0)
    np.testing.assert_allclose(s2sad.grad(q)(a), 2.0 * np.sin(x) * x, rtol=1e-12)
    np.testing.assert_allclose(s2sad.grad(q)(a, scale=3.0), 3.0 * np.sin(x) * x, rtol=1e-12)
    check_grads(q, (a,), modes=BOTH)
    pp = functools.partial(functools.partial(weighted, a), scale=-1.5)
    np.testing.assert_allclose(s2sad.grad(pp)(x), weighted_grad_x(a, x, -1.5), rtol=1e-12)
    check_grads(pp, (x,), modes=BOTH)
    # the bound arguments are constants: vjp gives no adjoint for them, and new data is used
    v, pullback = s2sad.vjp(p, x)
    assert v == weighted(a, x) and len(pullback(1.0)) == 1
    a2 = rand(3, seed=9)
    np.testing.assert_allclose(s2sad.grad(functools.partial(weighted, a2))(x),
                               weighted_grad_x(a2, x), rtol=1e-12)


def test_partial_in_every_transform():
    a, x = rand(3), rand(3, seed=1)
    p = functools.partial(weighted, a)
    t = rand(3, seed=2)
    v, tout = s2sad.jvp(p, (x,), (t,))
    assert v == weighted(a, x)
    assert tout == pytest.approx(weighted_grad_x(a, x) @ t, rel=1e-12)
    hess = np.diag(a * (2 * np.cos(x) - np.sin(x) * x))
    np.testing.assert_allclose(s2sad.hessian(p)(x), hess, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(s2sad.hvp(p)(x, t), hess @ t, rtol=1e-10, atol=1e-12)
    for jac in (s2sad.jacobian, s2sad.jacfwd, s2sad.jacrev):
        np.testing.assert_allclose(jac(p)(x), weighted_grad_x(a, x), rtol=1e-12)
    d = s2sad.differentiate(p)
    np.testing.assert_allclose(d.grad(x), weighted_grad_x(a, x), rtol=1e-12)
    assert d(x) == weighted(a, x)


def test_partial_of_a_method_an_object_and_a_primitive():
    m = Model(rand(3, 3), rand(3, seed=1))
    x = rand(3, seed=2)
    pe = functools.partial(m.energy, c=2.0)
    np.testing.assert_allclose(s2sad.grad(pe)(x), 2.0 * m.W.sum(axis=0), rtol=1e-12)
    check_grads(pe, (x,), modes=BOTH)
    pm = functools.partial(m)
    np.testing.assert_allclose(s2sad.grad(pm)(x), model_grad(m, x), rtol=1e-12)
    pmv = functools.partial(np.moveaxis, source=0, destination=-1)
    y = rand(2, 3, 4)
    ct = rand(3, 4, 2, seed=3)
    np.testing.assert_array_equal(s2sad.vjp(pmv, y)[1](ct)[0], np.moveaxis(ct, -1, 0))
    check_grads(pmv, (y,), modes=BOTH)


def test_callable_object_both_modes_and_every_transform():
    m = Model(rand(3, 3), rand(3, seed=1))
    x = rand(3, seed=2)
    np.testing.assert_allclose(s2sad.grad(m)(x), model_grad(m, x), rtol=1e-12)
    v, g = s2sad.value_and_grad(m)(x)
    assert v == m(x)
    check_grads(m, (x,), modes=BOTH)
    t = rand(3, seed=3)
    assert s2sad.jvp(m, (x,), (t,))[1] == pytest.approx(model_grad(m, x) @ t, rel=1e-12)
    # the Hessian against central differences of the exact gradient
    q = Quadratic(m.W, m.b)
    eps = 1e-6
    fd = np.stack([(model_grad(m, x + eps * e) - model_grad(m, x - eps * e)) / (2 * eps)
                   for e in np.eye(3)], axis=1)
    np.testing.assert_allclose(s2sad.hessian(q)(x), fd, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(s2sad.hvp(q)(x, t), fd @ t, rtol=1e-6, atol=1e-8)
    with pytest.raises(UnsupportedSyntaxError) as e:     # __call__ calls self.layer
        s2sad.hessian(m)(x)
    assert_refusal(e, Model.__call__.__code__.co_firstlineno + 1)
    vm = VectorModel(rand(4, 3, seed=4))
    expected = np.cos(vm.W @ x)[:, None] * vm.W
    for jac in (s2sad.jacobian, s2sad.jacfwd, s2sad.jacrev):
        np.testing.assert_allclose(jac(vm)(x), expected, rtol=1e-12)
    check_grads(vm, (x,), modes=BOTH)
    np.testing.assert_allclose(s2sad.differentiate(m).grad(x), model_grad(m, x), rtol=1e-12)
    # a bound method still works as before
    np.testing.assert_allclose(s2sad.grad(m.energy)(x, 3.0), 3.0 * m.W.sum(axis=0), rtol=1e-12)


# -- closures over data ----------------------------------------------------------------------------
def make_quadratic(A):
    return lambda x: x @ A @ x


def make_nested(A, b):
    def f(x):
        return x @ A @ x + b @ np.sin(x)
    return f


def make_doubly_nested(A):
    def middle(c):
        def f(x):
            return c * np.sum(np.tanh(A @ x))
        return f
    return middle(2.5)


def make_vector(A):
    def f(x):
        return np.sin(A @ x)
    return f


def test_hessian_and_jacobian_of_closures_over_data():
    A, b, x = rand(3, 3), rand(3, seed=1), rand(3, seed=2)
    f = make_quadratic(A)
    np.testing.assert_allclose(s2sad.hessian(f)(x), A + A.T, rtol=1e-12)
    np.testing.assert_allclose(s2sad.hvp(f)(x, b), (A + A.T) @ b, rtol=1e-12)
    for jac in (s2sad.jacobian, s2sad.jacfwd, s2sad.jacrev):
        np.testing.assert_allclose(jac(f)(x), (A + A.T) @ x, rtol=1e-12)
    g = make_nested(A, b)
    np.testing.assert_allclose(s2sad.hessian(g)(x), A + A.T - np.diag(b * np.sin(x)),
                               rtol=1e-12, atol=1e-14)
    check_grads(g, (x,), modes=BOTH)
    h = make_doubly_nested(A)
    u = 1 - np.tanh(A @ x) ** 2
    np.testing.assert_allclose(s2sad.jacobian(h)(x), 2.5 * A.T @ u, rtol=1e-12)
    hh = 2.5 * A.T @ np.diag(-2 * np.tanh(A @ x) * u) @ A
    np.testing.assert_allclose(s2sad.hessian(h)(x), hh, rtol=1e-10, atol=1e-12)
    k = make_vector(rand(4, 3, seed=3))
    for jac in (s2sad.jacobian, s2sad.jacfwd, s2sad.jacrev):
        np.testing.assert_allclose(jac(k)(x), np.cos(rand(4, 3, seed=3) @ x)[:, None] *
                                   rand(4, 3, seed=3), rtol=1e-12)
    # new data in a new closure: the derivative is reused, and uses the new data
    A2 = rand(3, 3, seed=8)
    np.testing.assert_allclose(s2sad.hessian(make_quadratic(A2))(x), A2 + A2.T, rtol=1e-12)


def calls_a_nested_function(x):
    def inner(y):
        return y @ y
    return inner(x) * 2.0


def test_hessian_through_a_call_resolved_at_run_time_is_refused_clearly():
    x = rand(3)
    np.testing.assert_allclose(s2sad.jacobian(calls_a_nested_function)(x), 4 * x, rtol=1e-12)
    with pytest.raises(UnsupportedSyntaxError) as e:
        s2sad.hessian(calls_a_nested_function)(x)
    msg = assert_refusal(e)
    assert f"{HERE}:{calls_a_nested_function.__code__.co_firstlineno + 3}" in msg


# -- refusals of arguments that do not fit ---------------------------------------------------------
def two(a, x):
    return np.sum(a * np.sin(x))


def test_duplicated_wrt_is_refused_in_every_entry_point():
    a, x = rand(3), rand(3, seed=1)
    for make, wrt in ((s2sad.grad, (0, 0)), (s2sad.value_and_grad, (0, "a")),
                      (s2sad.grad, ("x", 1)), (s2sad.jacobian, (0, 0)), (s2sad.jacfwd, (1, "x")),
                      (s2sad.jacrev, ("a", 0)), (s2sad.hessian, (0, 0))):
        line = line_after()
        with pytest.raises(WrtError) as e:
            make(two, wrt=wrt)(a, x)
        msg = assert_refusal(e, line)
        assert "twice" in msg
    line = line_after()
    with pytest.raises(WrtError) as e:
        s2sad.differentiate(two, wrt=(1, "x"))
    assert "'x' twice" in assert_refusal(e, line)
    line = line_after()
    with pytest.raises(WrtError) as e:
        s2sad.hvp(two, wrt=(0, 1))
    assert_refusal(e, line)


def test_jvp_primals_not_in_a_tuple_are_refused():
    a, x = rand(3), rand(3, seed=1)
    line = line_after()
    with pytest.raises(ArgumentError) as e:
        s2sad.jvp(two, a, x)                    # was "f__jvp() takes 4 positional arguments..."
    msg = assert_refusal(e, line)
    assert "primals must be a tuple" in msg and isinstance(e.value, TypeError)
    line = line_after()
    with pytest.raises(ArgumentError) as e:
        s2sad.jvp(np.sin, (x,), x)
    assert "tangents must be a tuple" in assert_refusal(e, line)
    line = line_after()
    with pytest.raises(ArgumentError) as e:
        s2sad.jvp(two, (a, x), (x,))
    assert "1 tangent(s) for 2 argument(s)" in assert_refusal(e, line)


def test_jvp_tangents_that_do_not_fit_their_primals_are_refused():
    a, x = rand(3), rand(3, seed=1)
    for tangents, what in (((np.ones(1), x), "shape (1,)"), ((np.ones((3, 1)), None), "shape (3, 1)"),
                           ((1.0, None), "shape ()"), ((a + 1j * a, None), "complex")):
        line = line_after()
        with pytest.raises(ArgumentError) as e:
            s2sad.jvp(two, (a, x), tangents)
        assert what in assert_refusal(e, line)

    def tree(p):
        return p["w"] @ p["v"][0] + p["v"][1]

    p = {"w": rand(3), "v": [rand(3, seed=2), 0.5]}
    for t, where in (({"w": rand(2)}, "['w']"), ({"v": [rand(3), rand(2)]}, "['v'][1]"),
                     ({"v": [rand(3)]}, "['v']"), ({"u": rand(3)}, "'u'")):
        line = line_after()
        with pytest.raises(ArgumentError) as e:
            s2sad.jvp(tree, (p,), (t,))
        assert where in assert_refusal(e, line)
    # what fits: None and exact zeros for no tangent, a real tangent for a complex primal
    t = rand(3, seed=3)
    _, out = s2sad.jvp(two, (a, x), (None, t))
    assert out == pytest.approx(np.sum(a * np.cos(x) * t), rel=1e-12)
    assert s2sad.jvp(two, (a, x), (0.0, t))[1] == out
    _, tz = s2sad.jvp(np.exp, (x + 1j * a,), (t,))
    np.testing.assert_allclose(tz, np.exp(x + 1j * a) * t, rtol=1e-12)
    _, tree_out = s2sad.jvp(tree, (p,), ({"w": t},))
    assert tree_out == pytest.approx(t @ p["v"][0], rel=1e-12)


def test_vjp_cotangents_that_do_not_fit_the_output_are_refused():
    x = rand(3)
    _, pullback = s2sad.vjp(np.sin, x)
    for ct, what in ((np.ones(1), "shape (1,)"), (np.ones((2, 3)), "shape (2, 3)"),
                     (1.0, "shape ()"), (np.ones(3) * 1j, "complex"), ([1.0, 2.0, 3.0], "list")):
        line = line_after()
        with pytest.raises(ArgumentError) as e:
            pullback(ct)
        assert what in assert_refusal(e, line)

    def pair(x):
        return np.sin(x), np.sum(x)

    _, pullback = s2sad.vjp(pair, x)
    for ct, what in (((np.ones(3),), "tuple of 1"), ((np.ones(2), 1.0), "[0]"),
                     ((np.ones(3), np.ones(3)), "[1]")):
        line = line_after()
        with pytest.raises(ArgumentError) as e:
            pullback(ct)
        assert what in assert_refusal(e, line)
    (g,) = pullback((np.ones(3), 2.0))
    np.testing.assert_allclose(g, np.cos(x) + 2.0, rtol=1e-14)
    (g,) = s2sad.vjp(np.sum, x)[1](np.float64(1.0))                # a 0-d cotangent fits a float
    np.testing.assert_array_equal(g, np.ones(3))


# -- refusals name the callee and end with a Fix ---------------------------------------------------
_conj = __import__("operator").methodcaller("conjugate")


def calls_a_methodcaller(x):
    return _conj(x) * 2.0


def calls_ctypes(x, fn):
    return fn(x) * 2.0


def test_opaque_callee_skeletons_name_the_callee():
    with pytest.raises(OpaqueCalleeError) as e:
        s2sad.grad(calls_a_methodcaller)(0.3)
    msg = assert_refusal(e, calls_a_methodcaller.__code__.co_firstlineno + 1)
    assert "s2sad.defrule(_conj," in msg and "fn," not in msg
    import ctypes
    import ctypes.util
    name = ctypes.util.find_library("m")
    if name is None:
        pytest.skip("no C math library to call through ctypes")
    cos = ctypes.CDLL(name).cos
    cos.restype, cos.argtypes = ctypes.c_double, [ctypes.c_double]
    with pytest.raises(OpaqueCalleeError) as e:
        s2sad.grad(calls_ctypes)(0.3, cos)
    msg = assert_refusal(e, calls_ctypes.__code__.co_firstlineno + 1)
    assert "'cos'" in msg and "ctypes.fn" not in msg and "defrule(fn" not in msg


def pads(x):
    return np.sum(np.pad(x, 1, mode="maximum"))


def svd_hermitian(x):
    return np.sum(np.linalg.svd(x, hermitian=True, compute_uv=False))


def test_rule_refusals_end_with_a_fix():
    for fn, x in ((pads, rand(3)), (svd_hermitian, rand(3, 3))):
        with pytest.raises(RuleError) as e:
            s2sad.grad(fn)(x)
        assert_refusal(e, fn.__code__.co_firstlineno + 1)


# -- second derivatives through the helpers generated reverse code calls ---------------------------
def variance(a):
    return np.var(a)


def stdev(a):
    return np.std(a)


def outer_transposed(a):
    return np.sum(np.transpose(np.outer(a, a)) * np.arange(9.0).reshape(3, 3))


def test_second_derivatives_through_tangent_only_helper_rules():
    """Forward mode over a reverse sweep that calls ``_adj.var``/``_adj.std``/``_adj.outer``
    (rules with tangent templates only) gave silently zero Hessians."""
    x = np.array([0.3, 0.5, -0.7])
    eps = 1e-6
    for f in (variance, stdev, outer_transposed):
        g = s2sad.grad(f)
        fd = np.stack([(g(x + eps * e) - g(x - eps * e)) / (2 * eps) for e in np.eye(3)], axis=1)
        assert np.abs(fd).max() > 0.1
        np.testing.assert_allclose(s2sad.hessian(f)(x), fd, rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(s2sad.jacfwd(s2sad.grad(f))(x), fd, rtol=1e-6, atol=1e-8)
        # reverse over reverse needs adjoints of these helpers: refused, not zero
        with pytest.raises(RuleError) as e:
            s2sad.jacrev(s2sad.grad(f))(x)
        assert_refusal(e, f.__code__.co_firstlineno)


@functools.lru_cache(maxsize=None)
def cached_cube(x):
    return 3.0 * x * x * x


def test_wrapper_objects_over_user_functions_are_not_taken_for_callable_objects():
    """numba.njit dispatchers and functools.lru_cache objects have a library __call__, but wrap a
    user function (``__wrapped__``/``py_func``): that function is differentiated."""
    assert s2sad.grad(cached_cube)(2.0) == pytest.approx(36.0, rel=1e-14)
    numba = pytest.importorskip("numba")
    jitted = numba.njit(lambda x: np.sum(np.sin(x) * x))
    x = rand(3)
    np.testing.assert_allclose(s2sad.grad(jitted)(x), np.cos(x) * x + np.sin(x), rtol=1e-12)
    check_grads(jitted, (x,), modes=BOTH)
