"""jit=True: np.sinc, np.inner, np.convolve (mode 'full'), np.take and np.take_along_axis of
vectors compile (rules/jit_arrays.py); each made the derivative run as Python before."""
import numpy as np
import pytest

from .compare import random_tangents, same_as_python, same_jvp_as_python

numba = pytest.importorskip("numba")


def filters(x, y):
    return np.sum(np.convolve(x, y) ** 2) + np.inner(x, y) * 2.0 + np.sum(np.sinc(x) * y) + \
        np.sinc(x[0] * 0.5)


def gathers(x, y):
    order = np.argsort(y)
    return np.sum(np.take(x, [0, 2, 2, -1]) * y) + \
        np.sum(np.take_along_axis(x, order, axis=0) * np.arange(4.0))


_R = np.random.default_rng(101)
CASES = [(filters, (_R.normal(size=5), _R.normal(size=5))),
         (filters, (np.array([0.0, 0.5, -1.5, 2.0, 0.25]), _R.normal(size=5))),
         (gathers, (_R.normal(size=4), _R.normal(size=4)))]


@pytest.mark.parametrize("f, args", CASES, ids=["filters", "sinc-at-zero", "gathers"])
def test_compiles(f, args):
    same_as_python(f, args, (0, 1))


@pytest.mark.parametrize("f, args", CASES, ids=["filters", "sinc-at-zero", "gathers"])
def test_tangent(f, args):
    same_jvp_as_python(f, args, random_tangents(args, 8))
