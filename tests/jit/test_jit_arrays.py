"""jit=True: np.roll, np.flip, np.tile, np.repeat, np.cumprod, np.polyval, np.vstack and
np.hstack compile, forward and reverse (rules/jit_arrays.py); each made the whole derivative run
as Python before.  Each case: Python mode's numbers (1e-12), central differences, the tangent."""
import numpy as np
import pytest

from .compare import random_tangents, same_as_python, same_jvp_as_python

numba = pytest.importorskip("numba")


def rolled(x, y):
    return np.sum(np.roll(x, 2) * y) + np.sum(np.roll(x, -1) ** 2)


def rolled_axis(X, y):
    return np.sum(np.roll(X, 1, axis=0) * np.sin(X)) + np.sum(np.roll(X, -3, axis=1) ** 2) * y[0]


def flipped(X, y):
    return np.sum(np.flip(X) * X) + np.sum(np.flip(X, axis=1)[0] * y) + np.sum(np.flip(y) * y)


def tiled(x, y):
    return np.sum(np.tile(x, 3) * np.arange(3.0 * x.shape[0])) + np.sum(np.tile(y, 2) ** 2)


def repeated(X, y):
    return np.sum(np.repeat(X, 2) ** 2) + np.sum(np.repeat(X, 3, axis=1) * X[0, 0]) + \
        np.sum(np.repeat(y, 2, axis=0) * np.arange(2.0 * y.shape[0]))


def products(x, y):
    return np.sum(np.cumprod(x) * y) + np.sum(np.cumprod(x * y) ** 2)


def products_axis(X, y):
    return np.sum(np.cumprod(X, axis=1) * np.cos(X)) + np.sum(np.cumprod(X, axis=0) ** 2) * y[0]


def poly(p, x):
    return np.sum(np.polyval(p, x) ** 2) + np.polyval(p, 0.3) * np.polyval(p, x[0])


def stacked(x, y):
    return np.sum(np.vstack([x, y, x * y]) ** 2 * np.arange(3.0)[:, None]) + \
        np.sum(np.hstack([x, 2.0 * y]) ** 3)


def stacked_2d(X, y):
    Y = X * y[0]
    return np.sum(np.vstack([X, Y]) ** 2 * np.arange(2.0 * X.shape[0])[:, None]) + \
        np.sum(np.hstack([X, np.sin(Y)]) ** 3)


_R = np.random.default_rng(61)
CASES = [(rolled, (_R.normal(size=6), _R.normal(size=6))),
         (rolled_axis, (_R.normal(size=(3, 4)), _R.normal(size=2))),
         (flipped, (_R.normal(size=(3, 4)), _R.normal(size=4))),
         (tiled, (_R.normal(size=4), _R.normal(size=(2, 3)))),
         (repeated, (_R.normal(size=(2, 3)), _R.normal(size=4))),
         (products, (_R.normal(size=5), _R.normal(size=5))),
         (products, (np.array([0.5, 0.0, 2.0, -1.5, 0.0, 3.0]), _R.normal(size=6))),
         (products_axis, (_R.normal(size=(3, 4)), _R.normal(size=2))),
         (poly, (_R.normal(size=4), _R.normal(size=5))),
         (stacked, (_R.normal(size=4), _R.normal(size=4))),
         (stacked_2d, (_R.normal(size=(2, 3)), _R.normal(size=2)))]
IDS = ["roll", "roll-axis", "flip", "tile", "repeat", "cumprod", "cumprod-zeros", "cumprod-axis",
       "polyval", "vstack-hstack", "stacks-2d"]


@pytest.mark.parametrize("f, args", CASES, ids=IDS)
def test_compiles(f, args):
    same_as_python(f, args, (0, 1))


@pytest.mark.parametrize("f, args", CASES, ids=IDS)
def test_tangent(f, args):
    same_jvp_as_python(f, args, random_tangents(args, 7))


def test_forward_versions_match_numpy():
    """The numba versions bound for NumPy's: the same arrays as NumPy's own."""
    from numba import njit
    from s2sad.rules import jit_arrays as J
    from s2sad.rules import jit_substitutes as S
    X = _R.normal(size=(3, 4))

    @njit
    def run(X):
        return (J.np_roll(X, 5), J.np_roll(X, -1, 1), J.np_flip(X), J.np_flip(X, 0),
                J.np_repeat(X, 2), J.np_repeat(X, 2, -1), J.np_tile(X, 3),
                J.np_polyval(X[0], X[1]), J.np_repeat(X[0], np.array([1, 0, 2, 1])),
                J.np_cumprod(X, 1), J.np_cumprod(X, -2), J.np_cumprod(X),
                S.vstack([X[0], X[1]]), S.hstack([X, X[:, :1]]))
    want = (np.roll(X, 5), np.roll(X, -1, 1), np.flip(X), np.flip(X, 0), np.repeat(X, 2),
            np.repeat(X, 2, -1), np.tile(X, 3), np.polyval(X[0], X[1]),
            np.repeat(X[0], np.array([1, 0, 2, 1])), np.cumprod(X, 1), np.cumprod(X, -2),
            np.cumprod(X), np.vstack([X[0], X[1]]), np.hstack([X, X[:, :1]]))
    for got, w in zip(run(X), want):
        np.testing.assert_array_equal(got, w)
