"""Types across calls of user functions (classify/types.py, runtime DerivedStub).

A derived call's result has the type its callee returns for the argument types at the call (the
callee lowered and inferred on its own), so the caller's reverse sweep leaves out the run-time
``unbroadcast`` between numbers; the callee's own derivative is specialised on the types of the
arguments it is called with, so its code is plain too.  The caller relies on the callee's
globals: rebinding one of them rebuilds the caller (a wrong gradient otherwise)."""
import math

import numpy as np
import pytest

import s2sad
from s2sad.cache import CACHE
from s2sad.testing import check_grads

LO, HI = 0.1, 10.0


def to_interval(t):
    p = 1.0 / (1.0 + math.exp(-t))
    return LO + (HI - LO) * p, math.log(p) + math.log(1.0 - p)


def logdensity(theta, x):
    mu, jac_mu = to_interval(theta[0])
    sigma, jac_sigma = to_interval(theta[1])
    z = (np.log(x) - mu) / sigma
    return np.sum(-0.5 * z ** 2 - math.log(sigma)) + jac_mu + jac_sigma


def _inputs():
    r = np.random.default_rng(3)
    return np.array([0.3, -0.4]), r.lognormal(1.0, 0.5, 40)


def _bwd(src):
    return src[src.index("__bwd("):]


def test_callee_results_are_typed_in_the_caller():
    theta, x = _inputs()
    src = s2sad.differentiate(logdensity, wrt=0).adjoint_source(theta, x)
    bwd = _bwd(src)
    # the sum of numbers at the end, and the numbers the callee returned: no run-time checks
    assert "_b_jac_sigma = _b_r" in bwd, src
    assert "_rt.unbroadcast(_b_r" not in bwd, src
    check_grads(logdensity, (theta, x), wrt=0, modes=("rev", "fwd"))


def _callee_sources(name):
    return [d.source for d in list(CACHE._store.values())
            if f"def {name}__bwd(" in getattr(d, "source", "")]


def test_the_callee_is_specialised_on_its_argument_types():
    theta, x = _inputs()
    value, g = s2sad.value_and_grad(logdensity, wrt=0)(theta, x)
    srcs = _callee_sources("to_interval")
    assert srcs
    typed = [s for s in srcs if "_rt.unbroadcast" not in s and "_rt.cj" not in s]
    assert typed, srcs[0]
    h = 1e-6
    for i in range(2):
        e = np.zeros(2)
        e[i] = h
        fd = (logdensity(theta + e, x) - logdensity(theta - e, x)) / (2 * h)
        assert g[i] == pytest.approx(fd, rel=1e-6)


SCALE = 2.0


def scaled(t):
    return SCALE * t


def uses_scaled(x):
    y = scaled(x[0]) + x[1]         # (numbers: the adjoint of x[1] is g itself, no unbroadcast)
    return np.sum(y * x)


def test_rebinding_a_global_the_callee_read_rebuilds_the_caller():
    global SCALE
    x = np.array([0.5, -1.0, 2.0])
    g = s2sad.grad(uses_scaled)
    try:
        SCALE = 2.0
        y = SCALE * x[0] + x[1]
        np.testing.assert_allclose(g(x), y + np.array([SCALE, 1.0, 0.0]) * x.sum())
        # now y is an array: the adjoint of x[1] is a sum, not the array g
        SCALE = np.array([1.0, 2.0, 3.0])
        y = SCALE * x[0] + x[1]
        want = y + np.array([np.sum(SCALE * x), np.sum(x), 0.0])
        np.testing.assert_allclose(g(x), want)
        check_grads(uses_scaled, (x,), wrt=0)
    finally:
        SCALE = 2.0


def returns_by_branch(t, flag):
    if flag:
        return t * 2.0
    return np.array([t, t])


def uses_branches(x):
    return np.sum(returns_by_branch(x[0], x[1] > 0) * x[:2])


def test_a_callee_whose_returns_differ_is_not_typed():
    # a number on one path, an array on the other: the caller keeps its run-time checks
    for x in (np.array([0.5, 1.0, 3.0]), np.array([0.5, -1.0, 3.0])):
        check_grads(uses_branches, (x,), wrt=0)


def countdown(t, n):
    if n == 0:
        return t
    return countdown(t * 1.5, n - 1)


def uses_recursion(x):
    return np.sum(countdown(x[0], 3) * x)


def test_recursive_callee():
    check_grads(uses_recursion, (np.array([0.5, -1.0, 2.0]),), wrt=0)


@pytest.mark.parametrize("x", [np.array([0.5, -1.0]), np.array([0.5, -1.0], np.float32),
                               np.array([[0.5, -1.0], [2.0, 0.25]])])
def test_callee_called_with_several_types(x):
    def f(x):
        return np.sum(scaled(x) * x) + scaled(float(x.ravel()[0]))
    g = s2sad.grad(f)(x)
    np.testing.assert_allclose(g, 4.0 * x + np.eye(x.size, 1).ravel().reshape(x.shape) * 2.0,
                               rtol=1e-6)
    assert g.dtype == x.dtype


def log_odds(t):
    p = 1.0 / (1.0 + math.exp(-t))
    return math.log(p) + math.log(1.0 - p, 2.0)


def test_natural_log_adjoint_reads_as_division():
    # math.log's default base is bound as the constant e; log(e) is exactly 1.0, and the
    # adjoint reads g / x (the explicit base 2 keeps its log)
    rev = s2sad.differentiate(log_odds).adjoint_source(0.3)
    fwd = s2sad.differentiate(log_odds).forward_source(0.3)
    for src in (rev, fwd):
        assert "2.718281828459045" not in src, src
        assert "math.log(2.0)" in src, src
    check_grads(log_odds, (0.3,), modes=("rev", "fwd"))


def minus_sin(x):
    y = 1.0 - x
    return np.sum(np.sin(x) * y)


def test_a_negated_contribution_is_a_subtraction():
    x = np.linspace(-1.0, 1.0, 5)
    src = s2sad.differentiate(minus_sin).adjoint_source(x)
    assert " + -" not in src and "_b_x = _b_x - " in src, src
    check_grads(minus_sin, (x,), modes=("rev",))
    check_grads(log_odds, (0.3,), modes=("rev",))


def lotka_volterra(y, a, b):         # np.array of a list display of numbers: a 1-d float array
    return np.array([a * y[0] - b * y[0] * y[1], -y[1] + b * y[0] * y[1]])


def euler_steps(y0, a, b):
    y = y0.copy()
    for _ in range(5):
        y = y + 0.1 * lotka_volterra(y, a, b)
    return y[0] * y[1]


def test_array_of_a_list_of_numbers_is_typed():
    # the display's items are numbers and np.array makes a 1-d float array of them, so the loop's
    # `y` stays a typed vector: no run-time unbroadcast or conj between the numbers
    args = (np.array([1.0, 0.5]), 1.1, 0.4)
    src = s2sad.differentiate(lotka_volterra, wrt=(0, 1, 2)).adjoint_source(*args)
    assert "_rt.unbroadcast" not in _bwd(src) and "_rt.cj" not in _bwd(src), src
    check_grads(euler_steps, args, wrt=(0, 1, 2), modes=("rev", "fwd"))
    src = s2sad.differentiate(euler_steps, wrt=(0, 1, 2)).adjoint_source(*args)
    assert "_rt.cj" not in _bwd(src), src
