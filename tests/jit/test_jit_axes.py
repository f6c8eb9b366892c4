"""jit=True: NumPy's reductions over a tuple of axes compile (rules/jit_reductions.py to_rows:
the reduced axes moved last and the array viewed as rows, so each reduction and each adjoint
over one axis serves; a tuple of axes made the whole derivative run as Python before)."""
import warnings

import numpy as np
import pytest

import s2sad
from s2sad.errors import JitFallbackWarning

from .compare import random_tangents, same_as_python, same_jvp_as_python

numba = pytest.importorskip("numba")


def sums(X, w):
    return np.sum(np.sum(X, axis=(0, 2)) * w) + np.sum(np.mean(X, axis=(2, 0), keepdims=True) ** 2)


def spreads(X, w):
    return np.sum(np.var(X, axis=(0, 1), ddof=1) * np.sin(w[0])) + \
        np.sum(np.std(X, axis=(-1, 1)) ** 2) + np.std(X, axis=(0, 1, 2))


def extrema(X, w):
    return np.sum(np.max(X, axis=(0, 1)) * w[0]) + np.sum(np.min(X, axis=(1, 2), keepdims=True))


def products(X, w):
    return np.sum(np.prod(X, axis=(0, 2)) * w)


def methods(X, w):
    Z = X * w[0]
    return np.sum(Z.mean(axis=(0, 1)) ** 2) + Z.sum(axis=(1, 2)) @ np.arange(2.0) + \
        np.sum(Z.max(axis=(1, 2)))


def normalise(X, w):                 # batch statistics over (batch, width), keepdims
    mu = X.mean(axis=(0, 2), keepdims=True)
    sd = X.std(axis=(0, 2), keepdims=True)
    return np.sum(((X - mu) / (sd + 1e-3)) ** 3 * w[1])


_R = np.random.default_rng(71)
X = _R.normal(size=(2, 3, 4))
CASES = [(sums, (X, _R.normal(size=3))), (spreads, (X, _R.normal(size=3))),
         (extrema, (X, _R.normal(size=3))), (products, (X, _R.normal(size=3))),
         (methods, (X, _R.normal(size=3))), (normalise, (X, _R.normal(size=3))),
         (extrema, (np.array([[[1.0, 2.0], [2.0, 0.5]], [[2.0, 1.0], [0.5, 2.0]]]),
                    _R.normal(size=3))),
         (sums, (_R.normal(size=(5, 3, 6))[::2, :, 1::2], _R.normal(size=3)))]
IDS = ["sum-mean", "var-std", "max-min", "prod", "methods", "normalise", "ties", "strided"]


@pytest.mark.parametrize("f, args", CASES, ids=IDS)
def test_tuple_of_axes_compiles(f, args):
    same_as_python(f, args, (0, 1))


@pytest.mark.parametrize("f, args", CASES, ids=IDS)
def test_tuple_of_axes_tangent(f, args):
    same_jvp_as_python(f, args, random_tangents(args, 3))


def repeated(X, w):
    return np.sum(np.sum(X, axis=(1, -2)) * w[0])


def test_a_repeated_axis_raises_as_numpy_does():
    with pytest.raises(ValueError):
        np.sum(X, axis=(1, -2))
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        with pytest.raises(ValueError, match="duplicate"):
            s2sad.value_and_grad(repeated, wrt=(0,), jit=True)(X, np.ones(3))


def spreads_one_axis(X, w):            # (var, std, max and min had no compiled tangent at all)
    return np.sum(np.var(X, axis=1) * w[0]) + np.std(X) * w[1] + np.var(X, ddof=1) + \
        np.sum(np.std(X, axis=-1, keepdims=True) ** 2) + np.sum(np.max(X, axis=0)) * w[2] + \
        np.min(X) + np.sum(X.max(axis=1, keepdims=True))


@pytest.mark.parametrize("X", [_R.normal(size=(3, 4)), np.array([[1.0, 2.0, 2.0],
                                                                  [0.5, 0.5, -1.0]])],
                         ids=["random", "ties"])
def test_one_axis_and_whole_tangents(X):
    w = np.array([0.3, -1.2, 0.8])
    same_as_python(spreads_one_axis, (X, w), (0, 1))
    r = np.random.default_rng(9)
    same_jvp_as_python(spreads_one_axis, (X, w), (r.normal(size=X.shape), r.normal(size=3)))
