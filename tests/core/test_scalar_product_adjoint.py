"""The adjoint of a real number in a product (``s * A``, ``A * s``): sum(g * A), written as
``_rt.sum_product(g, A, s)`` in Python mode (one dot product for real NumPy arrays of one shape
and dtype, no product array), the product summed otherwise; Numba mode writes it too (its
compiled version multiplies and sums in one pass; its fusion pass reads it as
``_rt.unbroadcast(g * A, s)`` and makes that an accumulator).  Values, types, and
derivatives of the generated code (forward over reverse, reverse over reverse)."""
import numpy as np
import pytest

import s2sad
from s2sad import runtime as rt
from s2sad import transforms as tr


def scaled(s, A):
    return np.sum(np.sin(s * A)) + np.sum(A * s * A)


def _grad_s(s, A):
    return np.sum(np.cos(s * A) * A) + np.sum(A * A)


def _hess_s(s, A):
    return -np.sum(np.sin(s * A) * A * A)


def test_python_mode_writes_sum_product():
    A = np.random.default_rng(0).standard_normal((5, 4))
    src = s2sad.differentiate(scaled, wrt=0).adjoint_source(0.7, A)
    assert src.count("_rt.sum_product(") == 2, src


def test_numba_mode_sums_the_product_in_one_pass():
    pytest.importorskip("numba")
    A = np.random.default_rng(0).standard_normal((5, 4))
    src = s2sad.differentiate(scaled, wrt=0).adjoint_source(0.7, A, jit=True)
    assert "sum_product" in src or "_acc" in src, src          # (a helper, or a fused loop)
    want = s2sad.grad(scaled, wrt=(0, 1))(0.7, A)
    got = s2sad.grad(scaled, wrt=(0, 1), jit=True)(0.7, A)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_gradient_of_the_scalar(dtype):
    A = np.random.default_rng(1).standard_normal((6, 3)).astype(dtype)
    s = 0.7
    g = s2sad.grad(scaled, wrt=0)(s, A)
    tol = 1e-12 if dtype == "float64" else 1e-5
    np.testing.assert_allclose(float(g), _grad_s(s, A.astype(np.float64)), rtol=tol)
    gs, gA = s2sad.grad(scaled, wrt=(0, 1))(s, A)
    want_A = np.cos(s * A) * s + 2 * s * A
    np.testing.assert_allclose(gA, want_A, rtol=tol, atol=tol)
    assert gA.dtype == np.dtype(dtype)


@pytest.mark.parametrize("a, b, x", [
    (np.arange(6.0).reshape(2, 3), np.ones((2, 3)) * 0.5, 1.0),
    (np.arange(6.0).reshape(2, 3).T, np.arange(6.0).reshape(3, 2), 2),        # a strided view
    (np.arange(6, dtype=np.float32), np.full(6, 0.25, np.float32), 1.5),
    (np.arange(6.0).reshape(2, 3), np.arange(3.0), 1.0),                        # broadcast
    (np.arange(4.0) + 1j, np.arange(4.0), 1.0),                                 # complex
    (np.arange(4.0), np.arange(4, dtype=np.float32), 1.0),                       # two dtypes
    (np.arange(4.0), 2.0, 1.0),                                                 # a number
    (np.arange(4.0), np.arange(4.0), np.float64(1.0)),                          # NumPy scalar x
])
def test_sum_product_equals_unbroadcast_of_the_product(a, b, x):
    got = rt.sum_product(a, b, x)
    want = rt.unbroadcast(a * b, x)
    assert type(got) is type(want) and np.asarray(got).dtype == np.asarray(want).dtype
    np.testing.assert_allclose(got, want, rtol=1e-6 if np.asarray(a).dtype == np.float32 else 1e-14)


def test_second_derivatives_through_sum_product():
    A = np.random.default_rng(2).standard_normal((4, 3))
    s = 0.4
    assert tr.hessian(scaled, wrt=0)(s, A) == pytest.approx(_hess_s(s, A), rel=1e-10)
    gg = s2sad.grad(s2sad.grad(scaled, wrt=0), wrt=0)
    assert gg(s, A) == pytest.approx(_hess_s(s, A), rel=1e-10)
