"""Findings of a review of the rule tables (2026-12-03), each checked end to end against central
differences in both modes (the table cases in cases_numpy.py / cases_scipy.py cover the rules):

* np.cumulative_sum / np.cumulative_prod with include_initial=True (refused with a misleading
  message before); second derivatives through cumulative_sum as through cumsum.
"""
import numpy as np
import pytest

import s2sad
from s2sad.testing import check_grads

RNG = np.random.default_rng(11)
X = RNG.uniform(0.5, 1.5, (3, 4))


def cumul_sum(x):
    return np.sum(np.sin(np.cumulative_sum(x, axis=-1, include_initial=True)))


def cumul_prod(x):
    return np.sum(np.cumulative_prod(x, axis=0, include_initial=True) ** 2)


def cumul_1d(x):
    return np.cumulative_sum(x[0], include_initial=True) * np.cumulative_prod(x[1], include_initial=True)


@pytest.mark.parametrize("f", [cumul_sum, cumul_prod, cumul_1d])
@pytest.mark.parametrize("mode", ["rev", "fwd"])
def test_cumulative_include_initial(f, mode):
    check_grads(f, (X,), modes=(mode,))


def test_cumulative_include_initial_values():
    x = np.array([1.0, 2.0, 3.0])
    g = s2sad.grad(lambda x: np.sum(np.cumulative_sum(x, include_initial=True) * np.arange(4.0)))(x)
    assert np.allclose(g, [6.0, 5.0, 3.0])          # sum_k k * (x1 + ... + x_k)
    assert s2sad.grad(cumul_sum)(X.astype(np.float32)).dtype == np.float32


def test_cumulative_sum_second_order():
    check_grads(s2sad.grad(cumul_sum), (X,), modes=("fwd",))
