"""Classes: methods, dataclasses, __call__ models, properties, objects as differentiated arguments."""
import dataclasses
from dataclasses import dataclass

import numpy as np

import s2sad
from lang_helpers import check_grads, check_obj_grad, as_attr_dict, obj_fd_grad, rng, assert_close


# == case: bound_method_differentiated
class Quadratic:
    def __init__(self, A):
        self.A = A

    def energy(self, x):
        return 0.5 * x @ (self.A @ x)


def test_bound_method_differentiated():
    r = rng(32)
    M = r.standard_normal((4, 4))
    q = Quadratic(M + M.T)
    x = r.standard_normal(4)
    g = s2sad.grad(q.energy)(x)
    assert_close(g, q.A @ x)
    check_grads(q.energy, (x,))


# == case: differentiate_decorated_method
class Regressor:
    def __init__(self, X, y):
        self.X = X
        self.y = y

    @s2sad.differentiate
    def loss(self, w):
        r = self.X @ w - self.y
        return 0.5 * np.sum(r * r)


def test_differentiate_decorated_method():
    r = rng(39)
    reg = Regressor(r.standard_normal((5, 3)), r.standard_normal(5))
    w = r.standard_normal(3)
    v, g = reg.loss.value_and_grad(w)
    assert_close(v, 0.5 * np.sum((reg.X @ w - reg.y) ** 2))
    assert_close(g, reg.X.T @ (reg.X @ w - reg.y))
