"""Reverse mode over a gradient through np.dot, np.inner, np.outer, np.kron and np.tensordot: the
adjoint helpers of these products (rules/numpy/products.py) have adjoints of their own
(rules/runtime_helpers.py, as matmul's had), so ``grad`` of a function of ``grad(f)`` works; it
was refused ("products.dot has a tangent rule ... but no adjoint rule") for all but matmul."""
import numpy as np
import pytest

import s2sad
from s2sad.testing import check_grads


def with_dot(w, X):
    return np.sum(np.tanh(np.dot(X, w))) + 0.5 * np.dot(w, w)


def with_dot_matrices(W, X):
    return np.sum(np.sin(np.dot(X, W)) ** 2)


def with_inner(w, X):
    return np.sum(np.cos(np.inner(X, w))) + np.inner(w, w) ** 2


def with_outer(w, X):
    return np.sum(np.tanh(np.outer(w, X[0])) * X[:3, :3].ravel()[:3, None])


def with_kron(w, X):
    return np.sum(np.sin(np.kron(w, X[1])) ** 2)


def with_tensordot(W, X):
    return np.sum(np.tanh(np.tensordot(X, W, axes=([1], [0]))) ** 2)


def penalty(f):
    def p(w, X):
        return np.sum(s2sad.grad(f, wrt=(0, 1))(w, X)[0] ** 2) + \
            np.sum(s2sad.grad(f, wrt=(0, 1))(w, X)[1] ** 2)
    return p


R = np.random.default_rng(11)


@pytest.mark.parametrize("f, w", [
    (with_dot, R.normal(size=3)), (with_dot_matrices, R.normal(size=(3, 2))),
    (with_inner, R.normal(size=3)), (with_outer, R.normal(size=3)),
    (with_kron, R.normal(size=3)), (with_tensordot, R.normal(size=(3, 2))),
], ids=["dot", "dot-matrices", "inner", "outer", "kron", "tensordot"])
def test_reverse_mode_over_a_gradient_through_products(f, w):
    X = R.normal(size=(5, 3))
    check_grads(penalty(f), (w, X), wrt=(0, 1))
