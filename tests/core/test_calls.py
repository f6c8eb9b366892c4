"""Point 6 of issue 2 (calls into user functions, derived recursively) and point 2's source kinds
(nested, decorated, methods, closures)."""
import functools

import numpy as np
import pytest

import s2sad
from s2sad.cache import CACHE
from core_util import check_grads, positive, randn



# -- keyword arguments, defaults, keyword-only -----------------------------------------------------
def scaled_sin(x, scale=2.0, shift=0.0):
    return np.sin(x * scale) + shift


def uses_defaults(x, s):
    return np.sum(scaled_sin(x)) + np.sum(scaled_sin(x, s)) + np.sum(scaled_sin(x, shift=s))


def test_defaults_and_keywords():
    check_grads(uses_defaults, (randn(3), 0.7), wrt=(0, 1))


def damped(x, n=5, scale=1.0):
    y = x
    for _ in range(n):
        y = np.sin(y) * scale + y * 0.5
    return y


def test_defaults_given_again_are_read_by_gradients_made_before_and_after():
    # (api._Spec read the signature once: a gradient made before, and one made after, kept the
    # old defaults; the same numbers as the function's own are wanted)
    old = damped.__defaults__
    try:
        g = s2sad.grad(damped)
        g(0.3)
        damped.__defaults__ = (2, 3.0)
        want = s2sad.grad(lambda x: damped(x, 2, 3.0))(0.3)
        assert g(0.3) == pytest.approx(want, rel=1e-14)
        assert s2sad.grad(damped)(0.3) == pytest.approx(want, rel=1e-14)
        check_grads(damped, (0.3,))
    finally:
        damped.__defaults__ = old


def kwonly(x, *, power, weight=1.0):
    return weight * np.sum(x ** power)


def uses_kwonly(x, w):
    return kwonly(x, power=3, weight=w) + kwonly(x * w, power=2)


def test_keyword_only_arguments():
    check_grads(uses_kwonly, (randn(4), 1.3), wrt=(0, 1))


def keywords_reordered(x, y):
    return scaled_sin(shift=y, scale=y, x=x)


def test_keywords_in_any_order():
    check_grads(keywords_reordered, (randn(3), 0.4), wrt=(0, 1))


def test_grad_called_with_keyword_arguments():
    x = randn(3)
    g1 = s2sad.grad(kwonly)(x, power=3, weight=0.5)
    np.testing.assert_allclose(g1, 0.5 * 3 * x ** 2, rtol=1e-12)


# -- nesting of derived calls --------------------------------------------------------------------
def inner(a, b):
    return a * np.exp(b)


def middle(a, b):
    return inner(a, b) + inner(b, a) * 0.5


def outer(x, y):
    return np.sum(middle(x, y) * middle(y, x))


def test_nested_user_calls():
    check_grads(outer, (randn(3), randn(3, seed=1)), wrt=(0, 1))


def returns_tuple(x):
    return x * 2.0, np.sin(x)


def unpacks(x):
    a, b = returns_tuple(x)
    return np.sum(a * b)


def test_callee_returning_tuple():
    check_grads(unpacks, (randn(4),))


def inactive_arg_callee(x, n):
    return x ** n


def calls_with_int(x):
    return inactive_arg_callee(x, 3) + inactive_arg_callee(2.0, 2) * x


def test_callee_with_constant_and_int_args():
    check_grads(calls_with_int, (0.8,))
    assert s2sad.grad(calls_with_int)(0.8) == pytest.approx(3 * 0.8 ** 2 + 4.0)


# -- recursion -----------------------------------------------------------------------------------
def rpow(x, n):
    if n == 0:
        return 1.0
    return x * rpow(x, n - 1)


def test_self_recursion_small():
    check_grads(rpow, (1.1, 5), wrt=0)
    assert s2sad.grad(rpow)(1.1, 5) == pytest.approx(5 * 1.1 ** 4, rel=1e-12)


def test_self_recursion_depth_400():
    x = 1.001
    v, g = s2sad.value_and_grad(rpow)(x, 400)
    assert v == pytest.approx(x ** 400, rel=1e-12)
    assert g == pytest.approx(400 * x ** 399, rel=1e-12)


def test_recursion_depth_400_leaves_recursion_limit_alone():
    import sys
    before = sys.getrecursionlimit()
    s2sad.grad(rpow)(1.0001, 400)
    assert sys.getrecursionlimit() == before


def rpow_array(x, n):
    if n == 0:
        return np.ones_like(x)
    return x * rpow_array(x, n - 1)


def test_self_recursion_on_arrays():
    check_grads(lambda_free_sum_rpow, (positive(3),))


def lambda_free_sum_rpow(x):
    return np.sum(rpow_array(x, 6))


def is_even_sum(x, n):
    if n == 0:
        return x
    return is_odd_sum(x * 0.9, n - 1)


def is_odd_sum(x, n):
    if n == 0:
        return np.sin(x)
    return is_even_sum(np.sin(x) + 0.3, n - 1)


@pytest.mark.parametrize("n", [0, 1, 4, 7])
def test_mutual_recursion(n):
    check_grads(is_even_sum, (0.4, n), wrt=0)


def test_mutual_recursion_deep():
    v, g = s2sad.value_and_grad(is_even_sum)(0.2, 401)
    x, eps = 0.2, 1e-6
    fd = (is_even_sum(x + eps, 401) - is_even_sum(x - eps, 401)) / (2 * eps)
    assert v == is_even_sum(0.2, 401)
    assert g == pytest.approx(fd, rel=1e-6)


def fib_like(x, n):
    if n <= 1:
        return x
    return fib_like(x, n - 1) * 0.5 + np.sin(fib_like(x, n - 2))


def test_tree_recursion():
    check_grads(fib_like, (0.9, 6), wrt=0)


def test_derived_callees_are_cached():
    x = randn(3)
    s2sad.grad(outer)(x, x)
    n = CACHE.builds
    s2sad.grad(outer)(x, x)
    s2sad.grad(outer)(x * 2, x)
    assert CACHE.builds == n


# -- kinds of functions --------------------------------------------------------------------------
def make_closure(scale):
    offset = np.array([0.5, -1.0, 2.0])

    def f(x):
        return np.sum(np.sin(x * scale) + offset * x)
    return f


def test_nested_function_with_closure_cells():
    f = make_closure(1.7)
    x = randn(3)
    check_grads(f, (x,))
    np.testing.assert_allclose(s2sad.grad(f)(x), 1.7 * np.cos(1.7 * x) + [0.5, -1.0, 2.0],
                               rtol=1e-12)


def test_closures_with_different_cells_give_their_own_derivatives():
    x = randn(3)
    g1 = s2sad.grad(make_closure(1.0))(x)
    g2 = s2sad.grad(make_closure(3.0))(x)
    np.testing.assert_allclose(g1, np.cos(x) + [0.5, -1.0, 2.0], rtol=1e-12)
    np.testing.assert_allclose(g2, 3.0 * np.cos(3.0 * x) + [0.5, -1.0, 2.0], rtol=1e-12)


def logged(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    return wrapper


@logged
def decorated(x, y):
    return np.sum(np.tanh(x) * y)


def test_decorated_function_uses_wrapped_source():
    check_grads(decorated, (randn(3), randn(3, seed=1)), wrt=(0, 1))


def calls_decorated(x):
    return decorated(x, x) * 2.0


def test_call_into_decorated_function():
    check_grads(calls_decorated, (randn(3),))


class Model:
    def __init__(self, w):
        self.w = w

    def predict(self, x):
        return np.tanh(self.w @ x)

    def loss(self, x, y):
        r = self.predict(x) - y
        return 0.5 * np.sum(r * r)

    @s2sad.differentiate(wrt="x")
    def decorated_loss(self, x):
        return np.sum(self.predict(x) ** 2)


def test_bound_method():
    m = Model(randn(2, 3))
    check_grads(m.loss, (randn(3, seed=1), randn(2, seed=2)), wrt=(0, 1))


def test_bound_method_value_and_grad():
    m = Model(randn(2, 3))
    x, y = randn(3, seed=1), randn(2, seed=2)
    v, g = s2sad.value_and_grad(m.loss, wrt="x")(x, y)
    assert v == m.loss(x, y)
    h = np.tanh(m.w @ x)
    np.testing.assert_allclose(g, m.w.T @ ((h - y) * (1 - h * h)), rtol=1e-12)


def test_differentiate_on_a_method():
    m = Model(randn(2, 3))
    x = randn(3, seed=1)
    assert m.decorated_loss(x) == pytest.approx(np.sum(np.tanh(m.w @ x) ** 2))
    g = m.decorated_loss.grad(x)
    h = np.tanh(m.w @ x)
    np.testing.assert_allclose(g, m.w.T @ (2 * h * (1 - h * h)), rtol=1e-12)


def test_unbound_method_with_explicit_self():
    m = Model(randn(2, 3))
    x, y = randn(3, seed=1), randn(2, seed=2)
    g = s2sad.grad(Model.loss, wrt="x")(m, x, y)
    np.testing.assert_allclose(g, s2sad.grad(m.loss, wrt="x")(x, y), rtol=1e-12)


def calls_method_on_argument(m, x):
    return m.loss(x, x[:2]) + np.sum(x)


def test_call_of_method_on_an_argument():
    m = Model(randn(2, 3))
    check_grads(calls_method_on_argument, (m, randn(3, seed=1)), wrt=1)


def takes_function(f, x):
    return f(x) * 2.0


def square_sum(x):
    return np.sum(x * x)


def test_function_passed_as_argument():
    x = randn(3)
    check_grads(takes_function, (square_sum, x), wrt=1)
    np.testing.assert_allclose(s2sad.grad(takes_function, wrt=1)(square_sum, x), 4 * x,
                               rtol=1e-12)


# -- a zero-rule callee that returns a module (cupy.get_array_module) -----------------------------
def _fake_get_array_module(x):
    return np


_fake_get_array_module.__module__ = "cupy._fake"      # as CuPy's own function would say
s2sad.defzero(_fake_get_array_module)


def via_array_module(x):
    xp = _fake_get_array_module(x)
    return xp.mean(xp.tanh(x) * xp.sum(x, axis=0))


def test_module_returned_by_a_zero_rule_is_not_an_array():
    # regression: the result of get_array_module was taken for an array, so xp.mean(...) became
    # the array method ndarray.mean with xp as self (an inactive site: zero gradient)
    check_grads(via_array_module, (randn(4, 3),))
    assert "dynamic" in s2sad.differentiate(via_array_module).explain(randn(4, 3))


def _with_module(xp, x):
    return xp.sum(xp.tanh(x) * x)


def passes_a_module(x):
    return _with_module(np, x) * 2.0


def test_array_module_passed_as_an_argument():
    # an array-module parameter (xp) is neither an array nor differentiable
    check_grads(passes_a_module, (randn(3),))
    check_grads(_with_module, (np, randn(3)), wrt=1)


def keyword_scaled(x, *, c=2.0):
    return np.sum(x * c)


def test_keyword_defaults_changed_in_place_are_read():
    old = dict(keyword_scaled.__kwdefaults__)
    try:
        g = s2sad.grad(keyword_scaled)
        np.testing.assert_allclose(g(np.ones(3)), 2.0)
        keyword_scaled.__kwdefaults__["c"] = 9.0
        np.testing.assert_allclose(g(np.ones(3)), 9.0)
        np.testing.assert_allclose(s2sad.grad(keyword_scaled)(np.ones(3)), 9.0)
    finally:
        keyword_scaled.__kwdefaults__.update(old)


def test_hessian_with_two_wrt_names_hessian_in_its_message():
    from s2sad.errors import WrtError
    with pytest.raises(WrtError, match="hessian takes a single wrt"):
        s2sad.hessian(lambda a, b: np.sum(a * b) ** 2, wrt=(0, 1))
