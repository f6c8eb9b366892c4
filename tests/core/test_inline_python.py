"""Python mode inlines calls of small functions in loops and of small functions with loops
(classify/inline.py ``named``; codegen/build.py ``inline_named``): only functions the caller's code
names or that are passed in fixed, whose code the caller's cache key holds."""
import math

import numpy as np

import s2sad
from s2sad.testing import check_grads


def identity(v):
    return v


def _sum(f, x):                         # a while loop calling the function it is given
    y = 0.0
    n = 0
    while n < len(x):
        y += f(x[n])
        n += 1
    return y


def sum_identity(x):
    return _sum(identity, x)


def sum_sin(x):
    return _sum(math.sin, x)


def square(v):
    return v * v


def in_a_loop(x):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + square(x[i]) * 0.5
    return s


def scaled(a):
    return np.sin(a) * 2.0


def not_in_a_loop(x):
    return np.sum(scaled(x))


def cube(v):
    return v * v * v


def cubes(x):                           # calls cube in a loop; the caller below does not name it
    s = 0.0
    for i in range(x.shape[0]):
        s = s + cube(x[i])
    return s


def calls_cubes(x):
    return cubes(x) * 2.0


X = np.random.default_rng(5).standard_normal(6)


def source(f, *args):
    return s2sad.differentiate(f).adjoint_source(*args)


def test_a_callee_with_a_loop_and_the_function_it_is_given_are_inlined():
    src = source(sum_identity, X)
    assert " _sum__fwd(" not in src and " identity__fwd(" not in src
    assert "_b_sum1_x[_sum1_n] += " in src           # typed: one element, in place
    assert np.allclose(s2sad.grad(sum_identity)(X), np.ones(6), rtol=0, atol=0)
    src = source(sum_sin, X)
    assert " _sum__fwd(" not in src and "math.cos(" in src
    assert np.allclose(s2sad.grad(sum_sin)(X), np.cos(X), rtol=1e-14)
    check_grads(sum_sin, (X,))


def test_a_small_callee_in_a_loop_is_inlined():
    src = source(in_a_loop, X)
    assert " square__fwd(" not in src and "_square1_v" in src
    assert np.allclose(s2sad.grad(in_a_loop)(X), X, rtol=1e-14)


def test_a_callee_outside_loops_without_a_loop_stays_derived():
    src = source(not_in_a_loop, X)
    assert " scaled__fwd(" in src
    row = [r for r in s2sad.differentiate(not_in_a_loop).explain(X).splitlines() if "scaled" in r]
    assert row and "derived" in row[0]


def test_only_functions_the_caller_names_are_inlined():
    # cubes is inlined into calls_cubes (it has a loop); cube, which only cubes names, stays a
    # derived call there (calls_cubes's cache key does not hold cube's code)
    src = source(calls_cubes, X)
    assert " cubes__fwd(" not in src and " cube__fwd(" in src
    assert np.allclose(s2sad.grad(calls_cubes)(X), 6 * X ** 2, rtol=1e-14)
    # differentiated itself, cubes names cube: inlined there
    assert " cube__fwd(" not in source(cubes, X)
