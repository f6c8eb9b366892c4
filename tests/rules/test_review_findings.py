"""Findings of a review of the rule tables (2026-12-03), each checked end to end against central
differences in both modes (the table cases in cases_numpy.py / cases_scipy.py cover the rules):

* np.cumulative_sum / np.cumulative_prod with include_initial=True (refused with a misleading
  message before); second derivatives through cumulative_sum as through cumsum.
* float32 arguments got float64 tangents from max/min/ptp, nanmean/nanvar/nanstd, trapezoid,
  polyval and quantile (an integer count or a float64 constant in the helper), and float32
  tangents for a float64 output (quantile with a float64 q, interp, float_power, diff with a
  float64 prepend=): a tangent has the output's dtype.
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


X32 = X.astype(np.float32)
F32 = [
    ("max", lambda x: np.max(x, axis=1)), ("min", lambda x: np.min(x)),
    ("ptp", lambda x: np.ptp(x, axis=0)), ("nanmean", lambda x: np.nanmean(x, axis=1)),
    ("nanvar", lambda x: np.nanvar(x)), ("nanstd", lambda x: np.nanstd(x, axis=0)),
    ("trapezoid", lambda x: np.trapezoid(x)), ("trapezoid-dx", lambda x: np.trapezoid(x, dx=0.5)),
    ("quantile", lambda x: np.quantile(x, 0.3, axis=1)),
    ("quantile-list", lambda x: np.quantile(x, [0.2, 0.7])),
    ("median", lambda x: np.median(x, axis=0)),
    ("polyval", lambda x: np.polyval(np.array([1.0, -2.0, 0.5], dtype=np.float32), x)),
    ("interp", lambda x: np.interp(x, [0.0, 1.0, 2.0], [1.0, 3.0, 2.0])),
    ("float_power", lambda x: np.float_power(x, 1.5)),
    ("diff-prepend", lambda x: np.diff(x, prepend=np.zeros((3, 1)))),
]


@pytest.mark.parametrize("name,f", F32, ids=[n for n, _ in F32])
def test_float32_tangents(name, f):
    value, tangent = s2sad.jvp(f, (X32,), (np.ones_like(X32),))
    assert np.result_type(tangent) == np.result_type(value), (name, tangent.dtype, value.dtype)
    check_grads(f, (X,), modes=("fwd",))
