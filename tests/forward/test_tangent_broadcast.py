"""Forward mode: a tangent has its value's shape when an inactive operand widens the output.

A float ``y`` minus an array constant is an array; its tangent must be the float tangent broadcast
to that shape (before the fix it stayed a float, so ``np.sum`` of it counted it once, silently)."""
import numpy as np
import pytest

import s2sad


def diff_scalar_minus_array(x, y):
    return np.sum(y - np.zeros(3)) + np.sum(x)


def array_const_times_scalar(x, y):
    return np.sum(np.ones((2, 3)) * y + x)


def active_plus_wider_inactive(x, y):
    return np.sum(np.sin(x + y + np.ones((2, 3))))


def where_wider_condition(x, y):
    c = np.array([[True, False, True], [False, True, True]])
    return np.sum(np.where(c, x, y) ** 2)


def maximum_with_wider_constant(x, y):
    z = np.ones((2, 3))
    return np.sum(np.maximum(x * y, z))


CASES = [diff_scalar_minus_array, array_const_times_scalar, active_plus_wider_inactive,
         where_wider_condition, maximum_with_wider_constant]


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
@pytest.mark.parametrize("y_is_float", [True, False])
def test_jvp_matches_reverse_mode(f, y_is_float):
    rng = np.random.default_rng(3)
    x = rng.uniform(0.5, 2.0, 3)
    y = 1.3 if y_is_float else rng.uniform(0.5, 2.0, 3)
    tx = rng.standard_normal(3)
    ty = 0.7 if y_is_float else rng.standard_normal(3)
    value, tangent = s2sad.jvp(f, (x, y), (tx, ty))
    gx, gy = s2sad.grad(f, wrt=(0, 1))(x, y)
    assert value == pytest.approx(f(x, y), rel=1e-12)
    assert tangent == pytest.approx(np.sum(gx * tx) + np.sum(gy * ty), rel=1e-10, abs=1e-12)


def test_scalar_minus_array_tangent_value():
    # the exact case: d/dy sum(y - zeros(3)) = 3
    _, t = s2sad.jvp(diff_scalar_minus_array, (np.ones(3), 2.0), (np.zeros(3), 1.0))
    assert t == 3.0
