"""jit=True: np.diff along any axis, n times (rules/jit_reductions.diff: numba's own takes the
last axis only) and its adjoint (rules/jit.py _adj.diff) compile; a derivative with
``np.diff(x, axis=0)`` ran as Python before.  prepend=/append= still run as Python."""
import numpy as np
import pytest

import s2sad

from .compare import same_as_python, same_jvp_as_python

numba = pytest.importorskip("numba")

from s2sad.rules import jit_reductions as R  # noqa: E402


@numba.njit
def _diff(a, n, axis):
    return R.diff(a, n, axis)


_R = np.random.default_rng(23)


@pytest.mark.parametrize("a", [_R.normal(size=7), _R.normal(size=(4, 5)),
                               _R.normal(size=(2, 3, 4)), _R.normal(size=(8, 5))[::2, ::-1],
                               np.arange(12).reshape(3, 4) ** 2],
                         ids=["1d", "2d", "3d", "strided", "int"])
def test_numba_version_matches_numpy(a):
    for axis in range(-a.ndim, a.ndim):
        for n in range(0, a.shape[axis] + 2):
            got, want = _diff(a, n, axis), np.diff(a, n, axis)
            assert got.shape == want.shape and got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)


def differences(x):
    return np.sum(np.diff(x, axis=1) ** 2) + np.sum(np.diff(x, 2, axis=0) ** 3) + \
        np.sum(np.diff(x) * x[:, 1:])


def second_differences(x):
    return np.sum(np.sin(np.diff(x, n=2, axis=-1)))


@pytest.mark.parametrize("f, x", [(differences, _R.normal(size=(4, 5))),
                                  (differences, _R.normal(size=(8, 5))[::2]),
                                  (second_differences, _R.normal(size=(2, 3, 5))),
                                  (lambda x: np.sum(np.diff(x) ** 2), _R.normal(size=7))],
                         ids=["axes", "strided", "3d", "1d"])
def test_derivatives_compile(f, x):
    same_as_python(f, (x,), (0,))
    same_jvp_as_python(f, (x,), (_R.normal(size=x.shape),), rel=1e-11)


def test_diff_template_reads_plainly():
    src = s2sad.differentiate(second_differences).adjoint_source(_R.normal(size=(2, 3, 5)))
    assert "_adj.diff(_b_1, x, 2, -1)" in src and "None is None" not in src
