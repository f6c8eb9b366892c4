"""Scalar and array programs with known higher derivatives (s2sad reads their source, so they
live in a file)."""
import math

import numpy as np


def cubic(x):
    return 2.0 * x ** 4 - 3.0 * x ** 3 + x * x - 5.0 * x + 1.0


def trig_exp(x):
    return math.sin(x) * math.exp(0.5 * x)


def np_log_mix(x):
    return np.log(1.0 + x * x) + np.exp(-x) * np.cos(x)


def looped_power(x):
    # x ** 5 built by a loop
    y = 1.0
    for _ in range(5):
        y = y * x
    return y


def branchy(x):
    if x > 0:
        return x ** 3
    return -x ** 3 + np.sin(x)


def np_quartic(x, A):
    # sum_i (A x)_i^4 / 4: gradient A^T (Ax)^3, Hessian 3 A^T diag((Ax)^2) A
    y = A @ x
    return 0.25 * np.sum(y ** 4)


def looped_chain(x):
    # sum_k exp(-k x_k x_{k+1}), a loop over elements with indexing
    total = 0.0
    for k in range(len(x) - 1):
        total = total + np.exp(-(k + 1) * x[k] * x[k + 1])
    return total


def looped_tanh_layers(x, Ws):
    h = x
    for W in Ws:
        h = np.tanh(W @ h)
    return np.sum(h * h)
