"""jit=True: np.trapezoid of a 1-d array compiles, its adjoints for y, x and dx and its tangent
(rules/jit_arrays.py); it made the derivative run as Python before."""
import numpy as np
import pytest

from .compare import random_tangents, same_as_python, same_jvp_as_python

numba = pytest.importorskip("numba")


def area(y, x):
    return np.trapezoid(y ** 2, x) + np.trapezoid(np.sin(y))


def spaced(y, h):
    return np.trapezoid(np.exp(-y * y), dx=h) * 2.0


_R = np.random.default_rng(83)
CASES = [(area, (_R.normal(size=7), np.sort(_R.normal(size=7)))),
         (spaced, (_R.normal(size=6), 0.25))]


@pytest.mark.parametrize("f, args", CASES, ids=["x", "dx"])
def test_trapezoid_compiles(f, args):
    same_as_python(f, args, (0, 1))


@pytest.mark.parametrize("f, args", CASES, ids=["x", "dx"])
def test_trapezoid_tangent(f, args):
    same_jvp_as_python(f, args, random_tangents(args, 5))
