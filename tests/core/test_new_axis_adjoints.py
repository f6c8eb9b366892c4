"""Adjoints of reads that only add axes (``x[:, None]``, ``x[None, :]``, ``x[None]``): the run-time
helpers take them as ``g`` in x's shape (runtime/indexing.getitem_adjoint / acc_getitem) instead of
zeros plus a scattered add; the numbers, dtypes and ownership are those of the general path."""
import numpy as np
import pytest

import s2sad
from s2sad.runtime import indexing as ix

S = slice(None)


def _general(g, x, idx):
    out = np.zeros(x.shape, x.dtype)
    out[idx] += g.real if x.dtype.kind != "c" else g
    return out


@pytest.mark.parametrize("shape, idx", [
    ((5,), (None, S)), ((5,), (S, None)), ((5,), None), ((5,), (None,)),
    ((5,), (None, None, S)), ((3, 4), (S, None, S)), ((3, 4), (S, None)),
    ((3, 4), (None, S, S, None)), ((3, 4), (None,))])
@pytest.mark.parametrize("xdt, gdt", [("float64", "float64"), ("float32", "float64"),
                                      ("float64", "complex128"), ("complex128", "float64")])
def test_getitem_adjoint_of_new_axes(shape, idx, xdt, gdt):
    rng = np.random.default_rng(len(shape))
    x = rng.standard_normal(shape).astype(xdt)
    g = rng.standard_normal(x[idx].shape).astype(gdt)
    if gdt.startswith("complex"):
        g = g + 1j * rng.standard_normal(g.shape)
    got = ix.getitem_adjoint(g, x, idx)
    want = _general(g, x, idx)
    assert got.dtype == x.dtype and got.shape == x.shape
    np.testing.assert_array_equal(got, want)
    assert not np.shares_memory(got, g)          # a buffer of its own: later adds go into it
    acc = ix.acc_getitem(got, x, idx, g)
    assert acc is got
    np.testing.assert_array_equal(acc, 2 * want)


def test_other_indices_keep_the_general_path():
    x = np.arange(5.0)
    g = np.ones((3, 1))
    np.testing.assert_array_equal(ix.getitem_adjoint(g, x, (slice(1, 4), None)),
                                  [0.0, 1.0, 1.0, 1.0, 0.0])
    np.testing.assert_array_equal(ix.getitem_adjoint(np.ones((1, 2)), x, (None, slice(None, None, 3))),
                                  [1.0, 0.0, 0.0, 1.0, 0.0])
    acc = ix.getitem_adjoint(g, x, (slice(1, 4), None))
    np.testing.assert_array_equal(ix.acc_getitem(acc, x, (None, slice(0, 2)), np.ones((1, 2))),
                                  [1.0, 2.0, 1.0, 1.0, 0.0])


def test_outer_difference_gradient():
    """f = sum_ij W_ij (x_i - x_j)^2: df/dx_k = 2 sum_j W_kj (x_k - x_j) - 2 sum_i W_ik (x_i - x_k)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal(7)
    W = rng.standard_normal((7, 7))

    def f(x, W):
        d = x[:, None] - x[None, :]
        return np.sum(W * d ** 2)

    got = s2sad.grad(f, wrt=0)(x, W)
    d = x[:, None] - x[None, :]
    want = 2 * (W * d).sum(axis=1) - 2 * (W * d).sum(axis=0)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    assert got.shape == (7,) and got.dtype == np.float64
