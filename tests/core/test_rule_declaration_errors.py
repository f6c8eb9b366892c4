"""Mistakes in declaring a rule name the user's line and end with a Fix (issue 10: every
S2SADError does)."""
import warnings

import numpy as np
import pytest

import s2sad
from s2sad.errors import JitFallbackWarning, RuleError


def _bad_calls():
    yield lambda: s2sad.defrule(abs, "g, /", vjp={"g": "g"})                # hides a template name
    yield lambda: s2sad.defrule(abs, "x, /", vjp={"y": "g"})                # not a parameter
    yield lambda: s2sad.defrule(abs, "x, /", vjp={"x": "g *"}).adjoint_function("x")   # template
    yield lambda: s2sad.defrule(abs, "x, y=, /", vjp={"x": "g"})            # params do not parse
    yield lambda: s2sad.defrule(abs, "x, /", vjp={"x": "g"}, aliases={"t": "y"})   # no such param


@pytest.mark.parametrize("k", range(5))
def test_rule_declaration_errors(k):
    call = list(_bad_calls())[k]
    with pytest.raises(RuleError) as e:
        call()
    msg = str(e.value)
    assert "test_rule_declaration_errors.py:" in msg
    assert "\nFix: " in msg


# -- a rule template that is a conditional expression ------------------------------------------
def _scaled(x, double):
    return x * 2.0 if double else x


def _uses_scaled(x, flag):
    return np.sum(_scaled(x, flag) ** 2) + np.sum(np.sin(x))


def test_conditional_template_added_to_an_adjoint_keeps_the_sum():
    # the reverse sweep pasted `_b_x + <template>` as text: with the template `g * 2.0 if double
    # else g`, `_b_x + g * 2.0 if double else g` dropped the adjoint gathered before whenever the
    # condition was false (a silently wrong gradient: 2x instead of 2x + cos x)
    import s2sad
    s2sad.defrule(_scaled, "x, double", vjp={"x": "g * 2.0 if double else g"})
    x = np.array([0.3, -0.2, 0.5])
    for flag in (True, False):
        expected = 2 * (2.0 if flag else 1.0) ** 2 * x + np.cos(x)
        np.testing.assert_allclose(s2sad.grad(_uses_scaled)(x, flag), expected, rtol=1e-12)


def _softplus(x):
    return np.log1p(np.exp(x))


def _softplus_ok(x):
    return np.log1p(np.exp(x))


def test_a_user_rule_whose_adjoint_has_another_shape_is_refused_when_it_runs():
    # np.sum(g * ...) for an array argument: the scalar was broadcast into the gradient, every
    # element got the total, without an error
    import scipy.special as sp
    s2sad.defrule(_softplus, "x", vjp={"x": "np.sum(g * sp.expit(x))"}, ns={"sp": sp})

    def loss(x):
        return np.sum(_softplus(x) * np.arange(3.0))
    x = np.array([0.3, -1.2, 0.8])
    with pytest.raises(s2sad.RuleError, match=r"adjoint of shape \(\).*has shape \(3,\)"):
        s2sad.grad(loss)(x)
    s2sad.defrule(_softplus_ok, "x", vjp={"x": "g * sp.expit(x)"}, ns={"sp": sp})   # (right)

    def loss_ok(x):
        return np.sum(_softplus_ok(x) * np.arange(3.0))
    np.testing.assert_allclose(s2sad.grad(loss_ok)(x), np.arange(3.0) / (1 + np.exp(-x)))

    def scalar(v):
        return _softplus_ok(v) * 2.0
    assert s2sad.grad(scalar)(0.4) == pytest.approx(2 / (1 + np.exp(-0.4)))


def _square(x):
    return x * x


def _square_ok(x):
    return x * x


def test_a_user_rule_whose_tangent_has_another_shape_is_refused_when_it_runs():
    s2sad.defrule(_square, "x", vjp={"x": "2 * g * x"}, jvp={"x": "np.sum(2 * t * x)"})
    s2sad.defrule(_square_ok, "x", vjp={"x": "2 * g * x"}, jvp={"x": "2 * t * x"})

    def loss(x):
        return np.sum(_square(x) * np.arange(3.0))

    def loss_ok(x):
        return np.sum(_square_ok(x) * np.arange(3.0))
    x = np.array([0.3, -1.2, 0.8])
    with pytest.raises(s2sad.RuleError, match=r"tangent of shape \(\).*has shape \(3,\)"):
        s2sad.jvp(loss, (x,), (np.ones(3),))
    assert s2sad.jvp(loss_ok, (x,), (np.ones(3),))[1] == pytest.approx(np.sum(2 * x * np.arange(3)))


def _njit_rules():
    numba = pytest.importorskip("numba")

    @numba.njit
    def total(x):
        return x * x

    @numba.njit
    def first_only(x):
        return x * x

    @numba.njit
    def right(x):
        return x * x
    s2sad.defrule(total, "x", vjp={"x": "np.sum(2 * g * x)"}, jvp={"x": "np.sum(2 * t * x)"})
    s2sad.defrule(first_only, "x", vjp={"x": "2 * g[:1] * x[:1]"}, jvp={"x": "2 * t[:1] * x[:1]"})
    s2sad.defrule(right, "x", vjp={"x": "2 * g * x"}, jvp={"x": "2 * t * x"})
    return total, first_only, right


_total = _first_only = _right = None
_W = np.arange(3.0)


def _loss_total(x):
    return np.sum(_total(x) * _W)


def _loss_first(x):
    return np.sum(_first_only(x) * _W)


def _loss_right(x):
    return np.sum(_right(x) * _W)


def _check_refused_and_right(bad, good, quiet):
    x = np.array([1.0, 2.0, 3.0])
    for jit in (False, True):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", JitFallbackWarning)
            for loss in bad:
                with pytest.raises(s2sad.RuleError, match="adjoint of shape") as e:
                    s2sad.grad(loss, jit=jit)(x)
                assert "test_rule_declaration_errors.py:" in str(e.value)
                with pytest.raises(s2sad.RuleError, match="tangent of shape"):
                    s2sad.jvp(loss, (x,), (np.ones(3),), jit=jit)
        with warnings.catch_warnings():
            # (compiled without a fallback where the call is resolved when the code is built)
            warnings.simplefilter("error" if quiet else "ignore", JitFallbackWarning)
            np.testing.assert_allclose(s2sad.grad(good, jit=jit)(x), 2 * x * _W)
            assert s2sad.jvp(good, (x,), (np.ones(3),), jit=jit)[1] == pytest.approx(16.0)


def test_a_user_rule_of_another_shape_is_refused_in_the_numba_build_too():
    # jit=True compiled the template unchecked: a numba function with a rule whose adjoint was a
    # sum got every element the total (gradient [16, 16, 16] for [0, 4, 12]), silently
    global _total, _first_only, _right
    _total, _first_only, _right = _njit_rules()
    _check_refused_and_right((_loss_total, _loss_first), _loss_right, quiet=True)


def test_a_user_rule_reached_at_run_time_is_checked_too():
    # a callee known only when the code runs (here, a closure's): its rule was applied by the
    # run-time dispatch, unchecked in both modes ([16, 16, 16], and [0, 0, 0] for a (1,) adjoint)
    total, first_only, right = _njit_rules()

    def loss_total(x):
        return np.sum(total(x) * _W)

    def loss_first(x):
        return np.sum(first_only(x) * _W)

    def loss_right(x):
        return np.sum(right(x) * _W)
    _check_refused_and_right((loss_total, loss_first), loss_right, quiet=False)


def _sq(x):
    return x * x


def _sum_sq(x):
    return np.sum(_sq(x))


def test_a_rule_declared_again_replaces_the_one_derivatives_were_built_with():
    # a rule fixed in a notebook (declared again) was ignored: every derivative built before kept
    # the old template (and one that had recursed into the function ignored a rule declared
    # for it later), a silently stale gradient
    x = np.array([1.0, 2.0])
    g, vg, h = s2sad.grad(_sum_sq), s2sad.value_and_grad(_sum_sq), s2sad.hessian(_sum_sq)
    np.testing.assert_allclose(g(x), 2 * x)                 # (recursed into _sq)
    np.testing.assert_allclose(h(x), 2 * np.eye(2))
    s2sad.defrule(_sq, "x", vjp={"x": "g * 3 * x"}, jvp={"x": "3 * x * t"})
    np.testing.assert_allclose(g(x), 3 * x)
    np.testing.assert_allclose(vg(x)[1], 3 * x)
    assert s2sad.jvp(_sum_sq, (x,), (np.ones(2),))[1] == pytest.approx(9.0)
    s2sad.defrule(_sq, "x", vjp={"x": "g * 2 * x"}, jvp={"x": "2 * x * t"})     # fixed
    np.testing.assert_allclose(g(x), 2 * x)
    np.testing.assert_allclose(s2sad.grad(_sum_sq, jit=True)(x), 2 * x)
    assert s2sad.jvp(_sum_sq, (x,), (np.ones(2),))[1] == pytest.approx(6.0)
    s2sad.defzero(_sq)
    np.testing.assert_allclose(g(x), 0 * x)
