"""jit=True: np.interp compiles, forward (numba's, with left=/right= added) and reverse, its
adjoints for x, xp, fp, left and right and its tangent (rules/jit_arrays.py: each point's segment
as ``rules.numpy.signal._interp_setup`` finds it); np.interp made the derivative run as Python."""
import numpy as np
import pytest

from .compare import random_tangents, same_as_python, same_jvp_as_python

numba = pytest.importorskip("numba")


def table(x, fp):                      # values at fixed knots, one of them a literal list
    return np.sum(np.interp(x, np.linspace(-3, 3, 7), fp) ** 2) + \
        np.interp(0.3, [0.0, 1.0, 4.0], fp[:3]) * np.sum(x)


def knots(x, xp):                      # the knots differentiated, end values given
    return np.sum(np.interp(x, xp, [0.0, 2.0, 3.0, 1.0], left=-1.0, right=5.0) * x)


def ends(x, lo):                       # an end value differentiated
    return np.sum(np.interp(x, [-1.0, 0.0, 2.0], [1.0, 0.5, 2.0], left=lo * 2.0, right=lo))


_X = np.array([-4.0, -2.5, -0.3, 0.1, 1.2, 2.9, 3.5])      # (inside and beyond, off the knots)
CASES = [(table, (_X, np.random.default_rng(1).normal(size=7))),
         (knots, (_X, np.array([-2.0, -0.5, 1.0, 2.5]))),
         (ends, (_X, 0.7))]


@pytest.mark.parametrize("f, args", CASES, ids=["fp", "xp", "left-right"])
def test_interp_compiles(f, args):
    same_as_python(f, args, (0, 1))


@pytest.mark.parametrize("f, args", CASES, ids=["fp", "xp", "left-right"])
def test_interp_tangent(f, args):
    same_jvp_as_python(f, args, random_tangents(args, 4))


def test_forward_version_with_end_values_matches_numpy():
    from numba import njit
    from s2sad.rules.jit_arrays import np_interp
    xp, fp = np.array([-1.0, 0.0, 2.0]), np.array([1.0, 0.5, 2.0])

    @njit
    def run(x):
        return np_interp(x, xp, fp, -7.0, 9.0), np_interp(x, xp, fp, None, 9.0), \
            np_interp(x, xp, fp)
    got = run(_X)
    want = (np.interp(_X, xp, fp, -7.0, 9.0), np.interp(_X, xp, fp, right=9.0),
            np.interp(_X, xp, fp))
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
