"""Shared helpers of the core pipeline tests."""
import numpy as np

from s2sad.testing import check_grads  # noqa: F401  (re-exported for the tests)


def rng(seed=0):
    return np.random.default_rng(seed)


def randn(*shape, seed=0):
    """Random float64 values (a Python float for no shape)."""
    r = np.random.default_rng(seed).standard_normal(shape)
    return float(r) if shape == () else r


def positive(*shape, seed=0):
    """Random float64 values in [0.5, 2)."""
    r = np.random.default_rng(seed).uniform(0.5, 2.0, shape)
    return float(r) if shape == () else r
