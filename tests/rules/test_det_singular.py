"""The derivative of ``np.linalg.det`` at a singular matrix is the cofactor matrix (adj(a)^T,
finite), as JAX gives; the rule took det(a) a^-1, and inv raised LinAlgError there (both modes,
forward mode too).  ``rules.numpy.linalg.adjugate`` computes it by the SVD; the compiled rule
hands a singular matrix to it (a run-time refusal)."""
import warnings

import numpy as np
import pytest

import s2sad
from s2sad.rules.numpy.linalg import adjugate


def det2(A):
    return np.linalg.det(A) * 2.0


SINGULAR = [np.array([[1.0, 2.0], [2.0, 4.0]]),                      # rank 1
            np.zeros((3, 3)),                                          # rank 0
            np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]])]   # rank 2


def cofactors(A):
    """By the definition: (-1)^(i+j) times the minor."""
    n = A.shape[0]
    C = np.empty_like(A)
    for i in range(n):
        for j in range(n):
            minor = np.delete(np.delete(A, i, 0), j, 1)
            C[i, j] = (-1) ** (i + j) * (np.linalg.det(minor) if minor.size else 1.0)
    return C


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("k", range(len(SINGULAR)))
def test_the_gradient_at_a_singular_matrix_is_the_cofactor_matrix(k, jit):
    if jit:
        pytest.importorskip("numba")
    A = SINGULAR[k]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                 # (a jit fallback is not the point)
        g = s2sad.grad(det2, jit=jit)(A)
        t = s2sad.jvp(det2, (A,), (np.eye(len(A)),), jit=jit)[1]
    np.testing.assert_allclose(g, 2.0 * cofactors(A), atol=1e-12)
    assert t == pytest.approx(2.0 * np.trace(cofactors(A).T), abs=1e-12)


def test_the_adjugate_is_det_times_the_inverse_where_that_exists():
    r = np.random.default_rng(4)
    A = r.normal(size=(2, 4, 4)) + 1j * r.normal(size=(2, 4, 4))
    want = np.linalg.det(A)[:, None, None] * np.linalg.inv(A)
    np.testing.assert_allclose(adjugate(A), want, rtol=1e-10, atol=1e-12)
