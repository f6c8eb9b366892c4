"""jit=True: scipy.special.logsumexp, softmax and log_softmax compile (rules/jit_reductions.py
for the functions, rules/jit.py for their adjoints and logsumexp's tangent); each made the whole
derivative run as Python before.  The numba versions are checked against SciPy directly (every
axis, keepdims, infinities, NaN, ties, an empty axis) and through derivatives that must compile."""
import warnings

import numpy as np
import pytest
import scipy.special as sp
from scipy.special import logsumexp

import s2sad
from s2sad.errors import JitFallbackWarning

from .compare import same_as_python, same_jvp_as_python

numba = pytest.importorskip("numba")

from s2sad.rules import jit_reductions as R  # noqa: E402


@numba.njit
def _lse(a, axis):
    return R.logsumexp(a, axis=axis)


@numba.njit
def _lse_keep(a, axis):
    return R.logsumexp(a, axis=axis, keepdims=True)


@numba.njit
def _lse_whole(a):
    return R.logsumexp(a)


@numba.njit
def _soft(a, axis):
    return R.softmax(a, axis=axis), R.log_softmax(a, axis=axis)


@numba.njit
def _soft_whole(a):
    return R.softmax(a), R.log_softmax(a)


_R = np.random.default_rng(17)
ARRAYS = [_R.normal(size=(3, 4)) * 10,
          np.array([[1.0, 1.0, -np.inf], [-np.inf, -np.inf, -np.inf]]),
          np.array([[np.inf, 1.0, 2.0], [np.nan, 1.0, 0.0]]),
          _R.normal(size=(2, 3, 4)),
          np.array([[3.0, 3.0, 3.0]]),
          _R.normal(size=(6, 5))[::2, 1::2]]


def _same(got, want):
    assert np.shape(got) == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=1e-13, equal_nan=True)


@pytest.mark.parametrize("k", range(len(ARRAYS)))
def test_numba_versions_match_scipy(k):
    a = ARRAYS[k]
    with np.errstate(all="ignore"):
        for ax in range(-a.ndim, a.ndim):
            _same(_lse(a, ax), sp.logsumexp(a, axis=ax))
            _same(_lse_keep(a, ax), sp.logsumexp(a, axis=ax, keepdims=True))
            s, ls = _soft(a, ax)
            _same(s, sp.softmax(a, axis=ax))
            _same(ls, sp.log_softmax(a, axis=ax))
        _same(_lse_whole(a), sp.logsumexp(a))
        s, ls = _soft_whole(a)
        _same(s, sp.softmax(a))
        _same(ls, sp.log_softmax(a))


def test_empty_axis_and_integers():
    _same(_lse(np.empty((3, 0)), 1), sp.logsumexp(np.empty((3, 0)), axis=1))
    ints = np.arange(12).reshape(3, 4)
    _same(_lse(ints, 0), sp.logsumexp(ints, axis=0))


def lse_forms(x):
    return np.sum(sp.logsumexp(x, axis=1) ** 2) + logsumexp(x) * 0.5 + \
        np.sum(sp.logsumexp(x, axis=0, keepdims=True) * x)


def softmaxes(x):
    return np.sum(sp.softmax(x, axis=1) * np.cos(x)) + np.sum(sp.softmax(x) ** 2) + \
        np.sum(sp.log_softmax(x, axis=0) * x) + np.sum(sp.log_softmax(x) * np.sin(x))


def classifier(W, X, y):            # a softmax regression's loss
    z = X @ W
    return -np.sum(sp.log_softmax(z, axis=1) * y) + 0.1 * np.sum(logsumexp(z, axis=-1))


X = _R.normal(size=(5, 4))


@pytest.mark.parametrize("f", [lse_forms, softmaxes], ids=["logsumexp", "softmax"])
def test_derivatives_compile(f):
    same_as_python(f, (X,), (0,))


def test_classifier_gradient_compiles():
    y = np.eye(3)[[0, 2, 1, 1, 0]]
    same_as_python(classifier, (_R.normal(size=(4, 3)), X, y), (0, 1))


@pytest.mark.parametrize("f", [lse_forms, softmaxes], ids=["logsumexp", "softmax"])
def test_forward_mode_compiles(f):
    same_jvp_as_python(f, (X,), (_R.normal(size=X.shape),))


def test_b_and_return_sign_run_as_python():
    def weighted(x):
        return logsumexp(x, b=np.arange(1.0, 5.0))

    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        vj, gj = s2sad.value_and_grad(weighted, jit=True)(X[0])
    assert any(issubclass(m.category, JitFallbackWarning) for m in w)
    vp, gp = s2sad.value_and_grad(weighted)(X[0])
    assert vj == vp
    np.testing.assert_array_equal(gj, gp)
