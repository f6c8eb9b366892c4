"""Realistic programs: integrators, recurrent cells, trees, models and training loops."""
import dataclasses
import functools

import numpy as np

import s2sad
from lang_helpers import check_grads, check_obj_grad, as_attr_dict, rng, assert_close


# == case: logistic_regression_minibatches
def logistic_loss(w, b, batches):
    total, n = 0.0, 0
    for X, y in batches:
        z = X @ w + b
        total = total + np.sum(np.logaddexp(0.0, z) - y * z)
        n += len(y)
    return total / n


def test_logistic_regression_minibatches():
    r = rng(83)
    batches = [(r.standard_normal((5, 3)), (r.random(5) > 0.5).astype(float)) for _ in range(3)]
    w = r.standard_normal(3)
    check_grads(logistic_loss, (w, 0.2, batches), wrt=(0, 1))
    X = np.concatenate([b[0] for b in batches])
    y = np.concatenate([b[1] for b in batches])
    p = 1 / (1 + np.exp(-(X @ w + 0.2)))
    assert_close(s2sad.grad(logistic_loss)(w, 0.2, batches), X.T @ (p - y) / 15)


# == case: mlp_class_training_step
class TinyMLP:
    def __init__(self, W1, b1, W2, b2):
        self.W1, self.b1, self.W2, self.b2 = W1, b1, W2, b2

    def __call__(self, X):
        H = np.tanh(X @ self.W1 + self.b1)
        return H @ self.W2 + self.b2

    def params(self):
        return {"W1": self.W1, "b1": self.b1, "W2": self.W2, "b2": self.b2}


def mlp_loss(model, X, y):
    pred = model(X)
    return np.mean((pred - y) ** 2)


def sgd_step(model, X, y, lr):
    g = as_attr_dict(s2sad.grad(mlp_loss)(model, X, y), ["W1", "b1", "W2", "b2"])
    return TinyMLP(*(getattr(model, k) - lr * g[k] for k in ["W1", "b1", "W2", "b2"]))


def test_mlp_class_training_step():
    r = rng(81)
    X = r.standard_normal((16, 3))
    y = np.sin(X[:, 0]) + 0.5 * X[:, 1]
    model = TinyMLP(0.5 * r.standard_normal((3, 8)), np.zeros(8), 0.5 * r.standard_normal(8), 0.0)
    check_obj_grad(mlp_loss, (model, X[:4], y[:4]), 0, ["W1", "b1", "W2", "b2"])
    losses = [mlp_loss(model, X, y)]
    for _ in range(15):
        model = sgd_step(model, X, y, 0.1)
        losses.append(mlp_loss(model, X, y))
    assert losses[-1] < 0.7 * losses[0], losses
    assert all(b <= a + 1e-12 for a, b in zip(losses, losses[1:])), losses
