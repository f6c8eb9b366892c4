"""Functions as values: closures, nested defs, lambdas, partial, higher-order builtins."""
import functools
import math

import numpy as np

import s2sad
from lang_helpers import check_grads, rng, assert_close


# == case: builtin_abs
def l1_plus(x, y):
    return abs(x - y) + abs(x * y)


def test_builtin_abs():
    check_grads(l1_plus, (0.7, -1.9), wrt=(0, 1))
    assert_close(s2sad.grad(l1_plus, wrt=(0, 1))(0.7, -1.9), [1.0 + 1.9, -1.0 - 0.7])


# == case: builtin_sum_min_max
def spread(xs):
    return max(xs) - min(xs) + 0.1 * sum(xs)


def softmin_gap(x, y):
    return min(x * y, x + y) + max(x, y, 0.5)


def test_builtin_sum_min_max():
    xs = [0.3, 1.7, -0.8, 0.9]
    check_grads(spread, (xs,))
    assert_close(s2sad.grad(spread)(xs), [0.1, 1.1, -0.9, 0.1])
    check_grads(softmin_gap, (1.3, 0.4), wrt=(0, 1))


# == case: builtin_sorted_with_key
def top2_by_magnitude(xs):
    ranked = sorted(xs, key=abs, reverse=True)
    return ranked[0] * ranked[1]


def median3(a, b, c):
    return sorted([a, b, c])[1]


def test_builtin_sorted_with_key():
    xs = [0.3, -1.7, 0.8, 1.1]
    check_grads(top2_by_magnitude, (xs,))
    assert_close(s2sad.grad(top2_by_magnitude)(xs), [0.0, 1.1, 0.0, -1.7])
    check_grads(median3, (0.2, 1.5, 0.9), wrt=(0, 1, 2))
