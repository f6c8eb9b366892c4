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


def safe_sqrt(x):                       # the "safe where" idiom: sqrt's adjoint is inf at 0
    return np.sum(np.sqrt(np.where(x > 0, x, 0.0)))


def safe_sqrt_select(x):
    return np.sum(np.sqrt(np.select([x > 0], [x], 0.0)))


def masked_nansum(x):                   # nan where x > 1: nansum's adjoint there is nan
    return np.nansum(np.where(x > 1, np.nan, x) ** 2)


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("f, x, want", [
    (safe_sqrt, [-1.0, 4.0, 0.25], [0.0, 0.25, 1.0]),
    (safe_sqrt_select, [-1.0, 4.0, 0.25], [0.0, 0.25, 1.0]),
    (masked_nansum, [0.5, 2.0, -0.3], [1.0, 0.0, -0.6]),
], ids=["where", "select", "nansum"])
def test_the_operand_where_does_not_take_gets_a_zero_not_nan(f, x, want, jit):
    # (the where/select adjoints filled the other positions with 0 * g: nan where g is inf or
    # nan, for values the output does not depend on; JAX and central differences give 0)
    if jit:
        pytest.importorskip("numba")
    # (forward mode gives nan at a masked zero of sqrt, as JAX's does: its tangent there is 0 /
    # (2 sqrt(0)))
    g = s2sad.grad(f, jit=jit)(np.array(x))
    np.testing.assert_allclose(g, want, rtol=1e-14)
