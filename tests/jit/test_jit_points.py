"""jit=True: indexing with one integer array per dimension (``A[i, j]``, read and written)
compiles (runtime/jit.py: the points scattered back, repeated ones adding up on reads; on writes
only a repeated point's last write gets its adjoint, as runtime.indexing); it made the derivative
run as Python before."""
import numpy as np
import pytest

from .compare import same_as_python, same_jvp_as_python

numba = pytest.importorskip("numba")


def upper(x, y):
    A = np.outer(x, y)
    i, j = np.triu_indices(4)
    return np.sum(A[i, j] ** 2) + np.sum(A[np.array([0, 0, -1]), np.array([1, 1, -2])] * 3.0)


def diagonal_set(x, y):
    A = np.zeros((4, 4))
    A[np.arange(4), np.arange(4)] = x
    A[np.array([0, 0]), np.array([3, 3])] = y[:2]        # (the last write wins)
    return np.sum(A @ y) + np.sum(A ** 2)


def cube(x, y):
    T = np.sin(x)[:, None, None] * y[None, :, None] * np.arange(1.0, 3.0)[None, None, :]
    return np.sum(T[np.array([0, 1, 3]), np.array([2, 2, 0]), np.array([1, 0, 1])] ** 3)


_R = np.random.default_rng(103)
CASES = [upper, diagonal_set, cube]


@pytest.mark.parametrize("f", CASES, ids=["read", "write", "3d"])
def test_points_compile(f):
    same_as_python(f, (_R.normal(size=4), _R.normal(size=4)), (0, 1))


@pytest.mark.parametrize("f", CASES, ids=["read", "write", "3d"])
def test_points_tangent(f):
    r = np.random.default_rng(10)
    same_jvp_as_python(f, (_R.normal(size=4), _R.normal(size=4)),
                       (r.normal(size=4), r.normal(size=4)))
