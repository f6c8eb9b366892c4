"""Numbers the reverse sweep computes again instead of saving (codegen/reverse/recompute.py):
arithmetic of loop counters, parameters and constants, and elements of arrays never changed, bound
once and before each read in the same trip.  Where the value could differ when the reverse sweep
runs (a loop-carried value, an element of an array changed later, a name bound twice) it is
saved as before.  Every derivative is checked against finite differences, in both modes."""
import re

import numpy as np
import pytest

import s2sad
from s2sad.testing import check_grads


def ar1(y, phi, sigma):
    ll = 0.0
    for t in range(1, y.shape[0]):
        e = y[t] - phi * y[t - 1]
        ll += -0.5 * (e / sigma) ** 2
    return ll


def carried(x, c):                   # `prev` is the previous trip's value where it is read
    s = 0.0
    prev = c * 1.0
    for t in range(x.shape[0]):
        s += np.sin(prev * x[t])
        prev = x[t] * 2.0 + t
    return s


def changed_later(x):                # y[t - 1] is read, then y changes: its value must be saved
    y = x * 1.0
    s = 0.0
    for t in range(1, y.shape[0]):
        v = y[t - 1]
        s += np.sin(v) * v
        y[t] = v * 0.5 + y[t]
    return s + np.sum(y * y)


def bound_twice(x, c):               # `a` is bound in both arms: saved
    s = 0.0
    for t in range(x.shape[0]):
        if x[t] > 0:
            a = x[t] * c
        else:
            a = x[t] - c
        s += np.cos(a) * a
    return s


def _source(f, args, wrt, jit=False):
    return s2sad.differentiate(f, wrt=wrt, jit=jit).adjoint_source(*args, jit=jit)


R = np.random.default_rng(5)


@pytest.mark.parametrize("jit", [False, True])
def test_arithmetic_of_counters_and_parameters_is_computed_again(jit):
    if jit:
        pytest.importorskip("numba")
    args = (R.normal(size=12), 0.4, 1.3)
    src = _source(ar1, args, (0, 1, 2), jit)
    # nothing of the trip is saved: the index, the elements of y and e / sigma come back as code
    assert ".append(" not in src and ".pop()" not in src, src
    assert re.search(r"= \(\(y\[t\] - \(phi \* y\[\(t - 1\)\]\)\) / sigma\)", src), src
    check_grads(ar1, args, wrt=(0, 1, 2))
    g = s2sad.grad(ar1, wrt=(0, 1, 2), jit=jit)(*args)
    gp = s2sad.grad(ar1, wrt=(0, 1, 2), jit=False)(*args)
    for a, b in zip(g, gp):
        np.testing.assert_allclose(a, b, rtol=1e-13)


@pytest.mark.parametrize("f, args, wrt, saved", [
    (carried, (R.normal(size=6), 0.7), (0, 1), "prev"),
    (changed_later, (R.normal(size=6),), (0,), "v"),
    (bound_twice, (R.normal(size=6), 0.3), (0, 1), "a"),
])
def test_values_that_may_differ_are_saved(f, args, wrt, saved):
    src = _source(f, args, wrt)
    assert f"{saved} = _s_{saved}.pop()" in src, src
    check_grads(f, args, wrt=wrt)


def increments(x, c):                # z is bound once at the top level and never changed
    z = x * c
    s = 0.0
    for t in range(1, z.shape[0]):
        d = z[t] - z[t - 1]
        s += np.sin(d) * c
    return s


def test_elements_of_an_array_bound_once_are_read_again():
    args = (R.normal(size=7), 0.8)
    src = _source(increments, args, (0, 1))
    assert "_s_d" not in src and "d = (z[t] - z[(t - 1)])" in src, src
    check_grads(increments, args, wrt=(0, 1))


def stepped(x, k):                   # dt is bound once at the top level
    dt = 0.01
    s = 0.0
    for t in range(x.shape[0]):
        h = 0.5 * dt * x[t]
        s += np.sin(h) * k
    return s


def test_top_level_numbers_are_leaves():
    args = (R.normal(size=5), 1.7)
    src = _source(stepped, args, (0, 1))
    assert "_s_h" not in src and "h = ((0.5 * dt) * x[t])" in src, src
    check_grads(stepped, args, wrt=(0, 1))
