"""Test programs for forward mode (s2sad reads their source, so they live in a file)."""
import math

import numpy as np


def poly(x):
    return 3.0 * x ** 3 - 2.0 * x + 1.0


def branches(x, a):
    if a > 0:
        y = np.sin(x) * a
    else:
        y = np.cos(x) - a
    return np.sum(y * y)


def loop_sum(x, n):
    s = 0.0
    for i in range(n):
        s = s + np.sum(np.tanh(x * (i + 1)))
    return s


def while_halving(x):
    y = x
    k = 0
    while np.sum(y * y) > 0.1 and k < 20:
        y = 0.5 * y + 0.01 * np.sin(y)
        k = k + 1
    return y


def helper(a, b):
    return a * np.exp(-b) + b


def calls_helper(x, y):
    z = helper(x, y)
    w = helper(z, 2.0)
    return w * x


def recursive_pow(x, n):
    if n == 0:
        return 1.0 + 0.0 * x
    return x * recursive_pow(x, n - 1)


def numpy_mix(W, x, b):
    h = np.tanh(W @ x + b)
    m = np.mean(h * h, axis=0)
    return np.exp(-m) + np.sum(np.log1p(h ** 2)) + np.dot(h, x[:h.shape[0]])


def broadcasting(x, y):
    return (x[:, None] * y[None, :]) + x[:, None]


def containers(x, y):
    t = (x, y * 2.0)
    lst = [t[0] * t[1], np.sin(x)]
    lst.append(x + y)
    d = {"a": lst[0], "b": lst[2]}
    u = lst.pop()
    return d["a"] + d["b"] * u + lst[1]


def inplace(x):
    out = np.zeros(5)
    out[0] = x[1] * x[2]
    out[1:4] = np.sin(x[:3])
    out[4] = np.sum(out[:4])
    out[2] += x[0]
    return out * x


def apply_twice(f, x):
    return f(f(x))


def use_dynamic(x):
    return apply_twice(np.sin, x) + apply_twice(poly, x)


def closure_user(x, k):
    g = lambda v: k * v * v
    return g(x) + g(2.0 * x)


def concat_permute(a, b):
    c = np.concatenate([a, b], axis=0)
    return np.transpose(c) @ (c @ np.stack([a[0], b[1]], axis=1))


def ignores(x, y):
    return x * 2.0 + 0.0 * len(y.shape)


def scalar_math(x, y):
    return math.sin(x) * math.exp(y) + math.atan2(y, x) + math.log1p(x * x)


# -- second-order programs --------------------------------------------------------------------------
def quad(x, A):
    return x @ A @ x


def rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def logistic(w, X, y):
    z = X @ w
    return np.sum(np.log1p(np.exp(-y * z)))


def scal(x):
    return math.sin(x) * x ** 3 + math.exp(-x * x)


def looped(x):
    s = 0.0
    for i in range(4):
        if s > 1.0:
            s = s + np.sum(np.sin(x) * x) * 0.5
        else:
            s = s + np.sum(x ** 2) * (i + 1)
    return s


def looped_calls(x, y):
    s = 0.0
    for i in range(3):
        s = s + helper(np.sum(x * y), np.sum(x) * 0.1)
    return s * s


def softplus_mlp(W, x):
    h = np.log1p(np.exp(W @ x))
    return np.sum(h * h) / h.shape[0]
