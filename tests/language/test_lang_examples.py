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
