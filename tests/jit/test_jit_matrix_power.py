"""jit=True: np.linalg.matrix_power of a real matrix compiles, its adjoint and tangent for
positive, zero and negative powers (rules/jit_arrays.py, as rules.numpy.linalg.matrix_power);
it made the derivative run as Python before."""
import numpy as np
import pytest

from .compare import random_tangents, same_as_python, same_jvp_as_python

numba = pytest.importorskip("numba")


def powers(A, w):
    return np.sum(np.linalg.matrix_power(A, 3) * w) + np.trace(np.linalg.matrix_power(A, -2)) + \
        np.sum(np.linalg.matrix_power(A, 1) ** 2) + np.sum(np.linalg.matrix_power(A, 0))


_R = np.random.default_rng(89)
ARGS = (_R.normal(size=(3, 3)) + 3 * np.eye(3), _R.normal(size=(3, 3)))


def test_matrix_power_compiles():
    same_as_python(powers, ARGS, (0, 1))


def test_matrix_power_tangent():
    same_jvp_as_python(powers, ARGS, random_tangents(ARGS, 6))
