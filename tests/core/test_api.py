"""The front door (issue 2's user story): differentiate, grad, value_and_grad, vjp."""
import numpy as np
import pytest

import s2sad
from core_util import check_grads, randn


def loss(W, x, y):
    h = np.tanh(W @ x)
    err = h - y
    return 0.5 * np.sum(err * err)


def grad_W(W, x, y):
    h = np.tanh(W @ x)
    return np.outer((h - y) * (1 - h * h), x)


def grad_x(W, x, y):
    h = np.tanh(W @ x)
    return W.T @ ((h - y) * (1 - h * h))


def data():
    return randn(3, 4), randn(4, seed=1), randn(3, seed=2)


def test_decorator_keeps_the_plain_function():
    d = s2sad.differentiate(loss)
    W, x, y = data()
    assert d(W, x, y) == loss(W, x, y)
    assert d.__name__ == "loss" and d.__doc__ == loss.__doc__


def test_decorator_value_and_grad_default_wrt_0():
    d = s2sad.differentiate(loss)
    W, x, y = data()
    v, gW = d.value_and_grad(W, x, y)
    assert v == loss(W, x, y)
    assert gW.shape == W.shape and gW.dtype == np.float64
    np.testing.assert_allclose(gW, grad_W(W, x, y), rtol=1e-12)
    np.testing.assert_allclose(d.grad(W, x, y), gW, rtol=0)


def test_decorator_with_wrt_by_index_and_name():
    d = s2sad.differentiate(wrt=(0, "x"))(loss)
    W, x, y = data()
    gW, gx = d.grad(W, x, y)
    np.testing.assert_allclose(gW, grad_W(W, x, y), rtol=1e-12)
    np.testing.assert_allclose(gx, grad_x(W, x, y), rtol=1e-12)


def test_grad_tuple_and_single():
    W, x, y = data()
    g = s2sad.grad(loss, wrt=(0, 1))(W, x, y)
    assert isinstance(g, tuple) and len(g) == 2
    g1 = s2sad.grad(loss, wrt=1)(W, x, y)
    assert isinstance(g1, np.ndarray)
    np.testing.assert_allclose(g1, g[1], rtol=1e-15)
    g_neg = s2sad.grad(loss, wrt=-1)(W, x, y)
    np.testing.assert_allclose(g_neg, -(np.tanh(W @ x) - y), rtol=1e-12)


def test_value_and_grad_function():
    W, x, y = data()
    v, g = s2sad.value_and_grad(loss, wrt=0)(W, x, y)
    assert v == loss(W, x, y)
    np.testing.assert_allclose(g, grad_W(W, x, y), rtol=1e-12)


def test_grad_with_keyword_arguments_at_call():
    W, x, y = data()
    g = s2sad.grad(loss, wrt="x")(W, y=y, x=x)
    np.testing.assert_allclose(g, grad_x(W, x, y), rtol=1e-12)


def test_vjp_one_entry_per_positional_argument():
    W, x, y = data()
    v, pullback = s2sad.vjp(loss, W, x, y)
    assert v == loss(W, x, y)
    gW, gx, gy = pullback(1.0)
    np.testing.assert_allclose(gW, grad_W(W, x, y), rtol=1e-12)
    np.testing.assert_allclose(gx, grad_x(W, x, y), rtol=1e-12)
    np.testing.assert_allclose(gy, -(np.tanh(W @ x) - y), rtol=1e-12)
    gW2, _, _ = pullback(2.0)                 # a pullback can be called again
    np.testing.assert_allclose(gW2, 2 * gW, rtol=1e-12)


def mixed(x, n, name, flag):
    return x * n if flag else x


def test_vjp_none_where_not_differentiable():
    v, pullback = s2sad.vjp(mixed, 1.5, 3, "label", True)
    assert v == 4.5
    assert pullback(1.0) == (3.0, None, None, None)


def vector_fn(x, A):
    return A @ np.sin(x)


def test_vjp_of_array_output():
    x, A = randn(4), randn(3, 4, seed=1)
    ct = randn(3, seed=2)
    v, pullback = s2sad.vjp(vector_fn, x, A)
    np.testing.assert_allclose(v, A @ np.sin(x), rtol=1e-15)
    gx, gA = pullback(ct)
    np.testing.assert_allclose(gx, np.cos(x) * (A.T @ ct), rtol=1e-12)
    np.testing.assert_allclose(gA, np.outer(ct, np.sin(x)), rtol=1e-12)


def test_decorator_vjp():
    d = s2sad.differentiate(vector_fn)
    x, A = randn(4), randn(3, 4, seed=1)
    v, pullback = d.vjp(x, A)
    assert len(pullback(np.ones(3))) == 2


def test_gradients_do_not_alias_inputs_or_each_other():
    def_ = s2sad.grad(pass_through, wrt=(0, 1))
    x = randn(3)
    gx, gy = def_(x, x)
    assert gx is not x and gy is not x
    gx[0] = 100.0
    assert gy[0] != 100.0


def pass_through(x, y):
    return np.sum(x) + np.sum(y)


def test_float_grad_types():
    g = s2sad.grad(mixed)(1.5, 3, "l", True)
    assert type(g) is float and g == 3.0


def test_explain_report():
    d = s2sad.differentiate(loss)
    W, x, y = data()
    report = d.explain(W, x, y)
    lines = report.splitlines()
    assert lines[0] == "call sites of loss (with respect to W):"
    assert lines[1].split() == ["line", "callee", "class", "chosen"]
    assert any("np.tanh" in l and "primitive" in l for l in lines)
    assert any("@" in l.split() and "primitive" in l for l in lines)
    assert all("test_api.py:" in l for l in lines[2:])


def helper(a):
    return np.sin(a) * 2.0


def calls_helper(x):
    return np.sum(helper(x))


def test_explain_shows_derived_calls():
    report = s2sad.differentiate(calls_helper).explain(randn(3))
    row = [l for l in report.splitlines() if " helper " in l or l.split()[1:2] == ["helper"]]
    assert row and "derived" in row[0], report


def test_check_grads_on_the_user_story():
    check_grads(loss, data(), wrt=(0, 1, 2))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gradient_dtype_follows_the_input(dtype):
    W, x, y = (a.astype(dtype) for a in data())
    g = s2sad.grad(loss)(W, x, y)
    assert g.dtype == dtype
    np.testing.assert_allclose(g, grad_W(W, x, y), rtol=1e-4 if dtype == np.float32 else 1e-12)


def test_grad_of_a_primitive_with_a_rule():
    """Callees without Python source but with a rule (np.sin, math.exp, scipy's expit...) can be
    differentiated directly, in both modes and twice."""
    import math
    import scipy.special as sp
    assert abs(s2sad.grad(np.sin)(1.0) - math.cos(1.0)) < 1e-12
    assert abs(s2sad.grad(math.exp)(0.5) - math.exp(0.5)) < 1e-12
    assert abs(s2sad.grad(sp.expit)(0.3) - sp.expit(0.3) * (1 - sp.expit(0.3))) < 1e-12
    v, (gy, gx) = s2sad.value_and_grad(np.arctan2, wrt=(0, 1))(1.0, 2.0)
    assert abs(gy - 0.4) < 1e-12 and abs(gx + 0.2) < 1e-12
    assert abs(s2sad.jvp(np.exp, (1.0,), (1.0,))[1] - math.e) < 1e-12
    assert abs(s2sad.grad(s2sad.grad(np.sin))(1.0) + math.sin(1.0)) < 1e-12
    # a callee declared non-differentiable (defzero): zero, as through a lambda
    assert s2sad.grad(np.floor)(1.3) == 0.0 == s2sad.grad(lambda x: np.floor(x))(1.3)
