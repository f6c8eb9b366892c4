"""jit=True: the adjoint of np.linalg.eigh of a real symmetric matrix compiles (rules/jit_arrays.py,
as rules.numpy.linalg.eigh: eigenvalues and eigenvectors, the lower triangle read); it made the
derivative run as Python before."""
import numpy as np
import pytest

from .compare import same_as_python

numba = pytest.importorskip("numba")


def spectrum(x, y):
    A = np.outer(x, x) + np.diag(y ** 2 + np.arange(1.0, 5.0))
    w, V = np.linalg.eigh(A)
    return np.sum(w * np.arange(4.0)) + np.sum(V[:, -1] ** 4)


def values(A):                      # not symmetric: eigh reads the lower triangle alone
    return np.sum(np.linalg.eigh(A)[0] ** 2)


_R = np.random.default_rng(97)


def test_eigh_compiles():
    same_as_python(spectrum, (_R.normal(size=4), _R.normal(size=4)), (0, 1))


def test_eigh_reads_the_lower_triangle():
    A = _R.normal(size=(4, 4)) + np.diag(np.arange(4.0) * 3)
    g = same_as_python(values, (A,), (0,))[0]
    assert np.all(np.triu(g, 1) == 0)


def test_eigenvalues_only_at_a_repeated_eigenvalue():
    # (the eigenvectors' adjoint is zero: no 1 / (w_j - w_i) term; a ZeroDivisionError reached
    # the user from the compiled code before, where Python mode gives 2A)
    import s2sad
    A = np.diag([1.0, 1.0, 2.0])
    np.testing.assert_allclose(s2sad.grad(values, jit=True)(A), 2 * A, atol=1e-14)
    np.testing.assert_allclose(s2sad.grad(values)(A), 2 * A, atol=1e-14)
