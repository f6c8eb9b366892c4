"""A filled-in zero adjoint stays zero: where the output does not depend on a value (an item of a
callee's tuple left unused, a branch not taken), that value's adjoint is 0.0, and its
contributions must be zeros, not ``0.0 * inf`` (nan) where a number beside it is infinite.
Python mode once left the check out for every real scalar (fa6e18a, for speed): ``a, b =
pair(x, c)`` with ``c = inf`` and ``b`` unused gave a nan gradient for a function equal to
``2 * x``.  The check now stays (as ``if _b_t != 0:``, no call) unless the contributions are the
adjoint times constants alone.  Numba mode's zero of an array is zeros (one type per variable),
and its check said "not zero" for every array: ``zeros * inf`` gave nan; it now looks at the
elements.  Both modes."""
import math

import numpy as np
import pytest

import s2sad


def pair(x, c):
    return x * 2.0, x * c


def unused_item(x, c):                  # b = x * c is never used: its adjoint is a filled-in 0.0
    a, b = pair(x, c)
    return a


def branch(x, c):                       # the product is made, then the branch that reads it is
    p = x * c                           # not taken
    s = x * 3.0
    if x > 10.0:
        s = s + p
    return s


def array_branch(x, c):                 # an array made, read only in a branch not taken
    p = np.sin(x) * c
    s = np.sum(x)
    if s > 100.0:
        s = s + np.sum(p)
    return s


def loop_call(x, c):                    # the unused item in a loop
    s = 0.0
    for i in range(3):
        a, b = pair(x, c)
        s = s + a
    return s


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("f, want", [(unused_item, 2.0), (branch, 3.0), (loop_call, 6.0)])
def test_an_unused_infinite_value_leaves_the_gradient_finite(f, want, jit):
    pytest.importorskip("numba") if jit else None
    for c in (math.inf, -math.inf, 2.5):
        v, (g,) = s2sad.value_and_grad(f, wrt=(0,), jit=jit)(1.5, c)
        assert g == want, (f.__name__, c, g)


@pytest.mark.parametrize("jit", [False, True])
def test_an_unused_infinite_array_leaves_the_gradient_finite(jit):
    # (Numba mode's zero of an array is zeros, not 0.0: its check looks at the elements)
    pytest.importorskip("numba") if jit else None
    for c in (np.inf, np.full(3, -np.inf), 2.5):
        v, (g,) = s2sad.value_and_grad(array_branch, wrt=(0,), jit=jit)(np.ones(3), c)
        np.testing.assert_array_equal(g, np.ones(3))


def test_the_check_is_a_comparison_and_left_out_where_contributions_are_linear():
    src = s2sad.differentiate(branch, wrt=0).adjoint_source(1.5, 2.0)
    # (p's adjoint goes to x through `x * c`: behind the check, a comparison, no call)
    assert "if _b_p != 0:" in src and "_rt.is_zero" not in src, src
    # (s = s + p's contributions are the adjoint itself: no check)
    assert src.count("!= 0") == 1, src
