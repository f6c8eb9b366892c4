"""Point 5 of issue 2: control flow, each case checked against central differences."""
import numpy as np
import pytest

import s2sad
from core_util import check_grads, positive, randn


# -- if / elif / else ----------------------------------------------------------------------------
def branchy(x, a):
    if a > 0.5:
        y = x * 2.0
    elif a > -0.5:
        y = np.sin(x)
    else:
        y = x ** 3
    return np.sum(y) * a


@pytest.mark.parametrize("a", [1.3, 0.1, -1.7])
def test_if_elif_else_each_branch(a):
    check_grads(branchy, (randn(4), a), wrt=(0, 1))


@pytest.mark.parametrize("a, expected", [(1.3, 2.0 * 1.3), (-1.7, None)])
def test_if_elif_else_values(a, expected):
    x = randn(4)
    g = s2sad.grad(branchy)(x, a)
    want = np.full(4, 2.0 * a) if a > 0.5 else 3 * x ** 2 * a
    np.testing.assert_allclose(g, want, rtol=1e-12)


def branch_on_active(x):
    if np.sum(x) > 0:
        return np.sum(np.exp(x))
    return np.sum(x * x)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_branch_on_active_value(seed):
    x = randn(5, seed=seed)
    check_grads(branch_on_active, (x,))


def float_branches(x, y):
    if x > y:
        z = x * y
    else:
        z = x + y * y
    if z < 0.0:
        z = -z
    return z


@pytest.mark.parametrize("x, y", [(1.2, 0.3), (0.3, 1.2), (-2.0, 0.7), (0.5, -3.0)])
def test_if_on_python_floats(x, y):
    check_grads(float_branches, (x, y))


def if_without_else(x, flag):
    y = x
    if flag:
        y = np.tanh(y)
    return np.sum(y * x)


@pytest.mark.parametrize("flag", [True, False])
def test_if_without_else(flag):
    check_grads(if_without_else, (randn(3), flag), wrt=0)


def conditional_expression(x, a):
    y = np.sin(x) if a > 0 else np.cos(x)
    return np.sum(y)


@pytest.mark.parametrize("a", [1.0, -1.0])
def test_conditional_expression(a):
    check_grads(conditional_expression, (randn(3), a), wrt=0)


def bool_ops(x, a, b):
    if a > 0 and b > 0:
        return x * a * b
    if a > 0 or b > 0:
        return x * (a + b)
    return x


@pytest.mark.parametrize("a, b", [(1.0, 2.0), (1.0, -2.0), (-1.0, -2.0)])
def test_and_or_in_conditions(a, b):
    check_grads(bool_ops, (0.7, a, b))


# -- while ---------------------------------------------------------------------------------------
def grow_until(x):
    y = x
    while np.sum(y * y) < 100.0:          # trip count depends on the data
        y = y * 1.5 + 0.1
    return np.sum(np.sin(y))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_while_data_dependent_trip_count(seed):
    check_grads(grow_until, (randn(3, seed=seed),))


def newton_sqrt(a):
    x = a
    n = 0
    while n < 30:
        x = 0.5 * (x + a / x)
        n += 1
    return x


def test_while_counter_newton():
    a = positive(seed=4)
    check_grads(newton_sqrt, (a,))
    g = s2sad.grad(newton_sqrt)(a)
    assert isinstance(g, float)
    assert g == pytest.approx(0.5 / np.sqrt(a), rel=1e-10)


def halve_until_small(x):
    s = x
    steps = 0
    while abs(s) > 0.01:
        s = s * 0.5
        steps = steps + 1
    return s * steps


def test_while_trip_count_from_float():
    check_grads(halve_until_small, (3.7,))
    check_grads(halve_until_small, (-50.3,))


def while_zero_trips(x):
    y = x * 2.0
    while y > 1e9:
        y = y * 0.5
    return y


def test_while_zero_iterations():
    check_grads(while_zero_trips, (0.3,))


# -- for -----------------------------------------------------------------------------------------
def for_range(x, n):
    s = 0.0
    for i in range(n):
        s = s + x[i] * x[i]
    return s


def test_for_range():
    x = randn(6)
    check_grads(for_range, (x, 4), wrt=0)
    g = s2sad.grad(for_range)(x, 4)
    np.testing.assert_allclose(g, np.r_[2 * x[:4], 0, 0], rtol=1e-12)


def for_range_start_stop_step(x):
    s = 0.0
    for i in range(1, len(x), 2):
        s = s + np.sin(x[i]) * x[i - 1]
    for j in range(len(x) - 1, -1, -3):
        s = s * 1.1 + x[j]
    return s


def test_for_range_start_stop_step():
    check_grads(for_range_start_stop_step, (randn(7),))


def for_repeated_update(x, n):
    y = x
    for _ in range(n):
        y = np.sin(y) * 1.3 + x
    return np.sum(y)


@pytest.mark.parametrize("n", [0, 1, 5])
def test_for_loop_carried_array(n):
    check_grads(for_repeated_update, (randn(4), n), wrt=0)


def for_over_array_rows(X, w):
    s = 0.0
    for row in X:
        s = s + np.sum(np.tanh(row * w))
    return s


def test_for_over_array_rows():
    check_grads(for_over_array_rows, (randn(4, 3), randn(3, seed=1)))


def for_over_1d_array(x):
    s = 1.0
    for v in x:
        s = s * v + v
    return s


def test_for_over_1d_array():
    check_grads(for_over_1d_array, (randn(5),))


def for_over_list(xs, c):
    s = 0.0
    for v in xs:
        s = s + np.sum(v * v) * c
    return s


def test_for_over_list_of_arrays():
    xs = [randn(3, seed=1), randn(2, seed=2), randn(4, seed=3)]
    check_grads(for_over_list, (xs, 0.7))


def for_over_literal_list(a, b):
    s = 0.0
    for v in [a, b, a * b]:
        s = s + v * v
    return s


def test_for_over_literal_list():
    check_grads(for_over_literal_list, (0.4, -1.3))


def for_enumerate(x):
    s = 0.0
    for i, v in enumerate(x):
        s = s + (i + 1) * v * v
    return s


def test_for_enumerate():
    x = randn(5)
    check_grads(for_enumerate, (x,))
    np.testing.assert_allclose(s2sad.grad(for_enumerate)(x), 2 * np.arange(1, 6) * x, rtol=1e-12)


def for_zip(x, y):
    s = 0.0
    for a, b in zip(x, y):
        s = s + a * np.exp(b)
    return s


def test_for_zip():
    check_grads(for_zip, (randn(4), randn(4, seed=1)), wrt=(0, 1))


def for_zip_enumerate(x, ys):
    s = 0.0
    for i, (a, b) in enumerate(zip(x, ys)):
        s = s + i * a * b
    return s


def test_for_enumerate_zip():
    check_grads(for_zip_enumerate, (randn(3), [0.5, -1.2, 2.0]), wrt=(0, 1))


# -- break / continue ----------------------------------------------------------------------------
def for_break(x, limit):
    s = 0.0
    for i in range(len(x)):
        if s > limit:
            break
        s = s + x[i] * x[i]
    return s


@pytest.mark.parametrize("limit", [0.5, 100.0])
def test_for_break(limit):
    check_grads(for_break, (randn(8), limit), wrt=0)


def for_continue(x):
    s = 0.0
    for i in range(len(x)):
        if x[i] < 0:
            continue
        s = s + np.sin(x[i])
    return s


def test_for_continue():
    x = randn(8)
    check_grads(for_continue, (x,))
    np.testing.assert_allclose(s2sad.grad(for_continue)(x), np.where(x < 0, 0.0, np.cos(x)),
                               rtol=1e-12)


def while_break_continue(x):
    s = 0.0
    i = 0
    while True:
        i = i + 1
        if i > 20:
            break
        if i % 3 == 0:
            continue
        s = s + x * i
        s = np.sin(s)
    return s


def test_while_true_break_continue():
    check_grads(while_break_continue, (0.37,))


# -- returns -------------------------------------------------------------------------------------
def early_return(x):
    if x > 0:
        return x * x
    return -x * 3.0


@pytest.mark.parametrize("x", [1.5, -0.8])
def test_early_return(x):
    check_grads(early_return, (x,))
    assert s2sad.grad(early_return)(x) == pytest.approx(2 * x if x > 0 else -3.0)


def two_ifs(x, a):
    if a > 1:
        return x * 2.0
    if a > 0:
        return x * 3.0
    return x * 4.0


@pytest.mark.parametrize("a, expected", [(2.0, 2.0), (0.5, 3.0), (-1.0, 4.0)])
def test_sequential_early_returns(a, expected):
    assert s2sad.grad(two_ifs)(1.3, a) == expected


def return_in_loop(x, limit):
    s = 0.0
    for i in range(len(x)):
        s = s + x[i] * x[i]
        if s > limit:
            return s * 2.0
    return s


@pytest.mark.parametrize("limit", [0.3, 1e6])
def test_return_inside_loop(limit):
    check_grads(return_in_loop, (randn(6), limit), wrt=0)


def many_returns(x, k):
    if k == 0:
        return np.sum(x)
    elif k == 1:
        return np.sum(x * x)
    while k > 1:
        if k == 5:
            return np.prod(x)
        k = k - 1
    return np.sum(np.sin(x))


@pytest.mark.parametrize("k", [0, 1, 3, 5, 9])
def test_multiple_returns(k):
    check_grads(many_returns, (randn(4), k), wrt=0)


# -- nested loops --------------------------------------------------------------------------------
def nested(A, x):
    n = A.shape[0]
    y = 0.0
    for i in range(n):
        acc = 0.0
        for j in range(n):
            if j == i:
                continue
            acc = acc + A[i, j] * x[j]
        y = y + np.tanh(acc) * x[i]
    return y


def test_nested_loops():
    check_grads(nested, (randn(4, 4), randn(4, seed=1)), wrt=(0, 1))


def nested_while_for(x):
    s = 0.0
    k = 0
    while k < 3:
        for v in x:
            s = s + v * (k + 1)
            if s > 50.0:
                break
        s = s * 0.5
        k = k + 1
    return s


def test_nested_while_for_break():
    check_grads(nested_while_for, (randn(4),))


def triangular(x):
    s = 0.0
    for i in range(len(x)):
        for j in range(i):
            s = s + x[i] * x[j]
    return s


def test_nested_data_dependent_inner_trip_count():
    x = randn(5)
    check_grads(triangular, (x,))
    want = np.array([np.sum(x) - x[i] for i in range(5)])
    np.testing.assert_allclose(s2sad.grad(triangular)(x), want, rtol=1e-12)
