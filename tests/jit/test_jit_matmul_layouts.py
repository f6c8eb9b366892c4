"""jit=True: the adjoints of ``a @ b`` read the transposed operand as a view where it is
contiguous (C or F order; BLAS's trans flag), and copy it only where it is not (numba's ``@``
wants contiguous operands).  Every layout gives Python mode's numbers and compiles."""
import numpy as np
import pytest

from .compare import same_as_python

pytest.importorskip("numba")

R = np.random.default_rng(11)


def mm(A, B):
    return np.sum((A @ B) ** 2)


def mv(A, x):
    return np.sum(np.tanh(A @ x))


def _layouts(m, n):
    a = R.standard_normal((m, n))
    big = R.standard_normal((m, 2 * n))
    return {"C": a, "F": np.asfortranarray(a), "strided": big[:, ::2]}


@pytest.mark.parametrize("la", ["C", "F", "strided"])
@pytest.mark.parametrize("lb", ["C", "F", "strided"])
def test_matrix_product_adjoints_every_layout(la, lb):
    A, B = _layouts(5, 7)[la], _layouts(7, 4)[lb]
    gA, gB = same_as_python(mm, (A, B), (0, 1))
    G = 2 * (A @ B)
    np.testing.assert_allclose(gA, G @ B.T, rtol=1e-12)
    np.testing.assert_allclose(gB, A.T @ G, rtol=1e-12)


@pytest.mark.parametrize("la", ["C", "F", "strided"])
def test_matrix_vector_adjoint_every_layout(la):
    A, x = _layouts(6, 3)[la], R.standard_normal(3)
    gA, gx = same_as_python(mv, (A, x), (0, 1))
    d = 1 - np.tanh(A @ x) ** 2
    np.testing.assert_allclose(gx, A.T @ d, rtol=1e-12)
    np.testing.assert_allclose(gA, np.outer(d, x), rtol=1e-12)
