"""jit=True: the adjoint and tangent of np.sort along the last axis compile (rules/jit.py
_adj.sort/_adj.sort_tangent: each row's stable sorting permutation, as the Python helper's, so
ties and NaN go where Python mode sends them); a derivative with np.sort ran as Python before."""
import warnings

import numpy as np
import pytest

import s2sad
from s2sad.errors import JitFallbackWarning

from .compare import same_as_python

numba = pytest.importorskip("numba")


def weighted_order(x):
    return np.sum(np.sort(x) * np.arange(x.shape[-1]))


def ends(x):
    return np.sort(x)[-1] * 2.0 + np.sort(x ** 2)[0]


_R = np.random.default_rng(31)


@pytest.mark.parametrize("f, x", [(weighted_order, _R.normal(size=(3, 4))),
                                  (weighted_order, _R.normal(size=(2, 3, 5))),
                                  (weighted_order, _R.normal(size=(4, 6))[::2, ::-1]),
                                  (ends, _R.normal(size=6))],
                         ids=["2d", "3d", "strided", "1d"])
def test_sort_compiles(f, x):
    same_as_python(f, (x,), (0,))


@pytest.mark.parametrize("x", [np.array([[1.0, 3.0, 1.0, 2.0], [0.5, 0.5, 0.5, -1.0]]),
                               np.array([[1.0, np.nan, -2.0, 1.0]])], ids=["ties", "nan"])
def test_ties_and_nan_as_python_mode(x):
    t = np.linspace(0.5, 2.0, x.size).reshape(x.shape)
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        gj = s2sad.grad(weighted_order, jit=True)(x)
        tj = s2sad.jvp(weighted_order, (x,), (t,), jit=True)[1]
    np.testing.assert_array_equal(gj, s2sad.grad(weighted_order)(x))
    np.testing.assert_array_equal(tj, s2sad.jvp(weighted_order, (x,), (t,))[1])


def last_axis_written(x):           # np.sort(x, axis=1): rules/jit_reductions.sort
    return np.sum(np.sort(x, axis=1)[:, 0]) + np.sum(np.sort(x, axis=-1) * np.arange(5.0))


def test_sort_with_the_last_axis_written_compiles():
    from s2sad.rules import jit_reductions as R

    @numba.njit
    def f(a):
        return R.sort(a, axis=1)

    x = _R.normal(size=(3, 5))
    x[1, 2] = np.nan
    np.testing.assert_array_equal(f(x), np.sort(x, axis=1))
    same_as_python(last_axis_written, (_R.normal(size=(3, 5)),), (0,))
