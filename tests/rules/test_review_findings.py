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
from s2sad.errors import RuleError
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


# -- scipy.special.factorial / comb / perm ----------------------------------------------------------
sp = pytest.importorskip("scipy.special")
N5 = RNG.uniform(3.0, 6.0, 5)
K5 = RNG.uniform(0.2, 2.8, 5)


def factorials(x):
    return (np.sum(sp.factorial(x) ** 2) + np.sum(sp.factorial2(x, extend="complex"))
            + np.sum(np.log(sp.factorialk(x, 3, extend="complex"))))


def binomials(n, k):
    return np.sum(np.sin(sp.comb(n, k))) + np.sum(np.log(sp.perm(n, k, exact=False)))


@pytest.mark.parametrize("mode", ["rev", "fwd"])
def test_factorial_comb_perm(mode):
    check_grads(factorials, (X.ravel() * 2,), modes=(mode,))
    check_grads(binomials, (N5, K5), wrt=(0, 1), modes=(mode,))


def test_factorial_comb_perm_values():
    psi, gamma = sp.digamma, sp.gamma
    assert s2sad.grad(sp.factorial)(2.5) == pytest.approx(gamma(3.5) * psi(3.5))
    # SciPy's 0 for n < 0 (extend='zero'): a zero derivative there
    g = s2sad.grad(lambda x: np.sum(sp.factorial(x)))(np.array([-1.5, -1.0, 0.5, 2.0]))
    assert np.allclose(g, [0.0, 0.0, gamma(1.5) * psi(1.5), 2.0 * psi(3.0)])
    gn, gk = s2sad.grad(lambda n, k: sp.comb(n, k), (0, 1))(5.5, 2.0)
    c = sp.comb(5.5, 2.0)
    assert (gn, gk) == (pytest.approx(c * (psi(6.5) - psi(4.5))), pytest.approx(c * (psi(4.5) - psi(3.0))))
    gn, gk = s2sad.grad(lambda n, k: sp.perm(n, k), (0, 1))(5.5, 2.0)
    p = sp.perm(5.5, 2.0)
    assert (gn, gk) == (pytest.approx(p * (psi(6.5) - psi(4.5))), pytest.approx(p * psi(4.5)))
    # outside 0 <= k <= N SciPy returns 0
    gn, gk = s2sad.grad(lambda n, k: np.sum(sp.comb(n, k)), (0, 1))(np.array([1.0, -1.0, 3.0]),
                                                                     np.array([2.0, 0.5, -0.5]))
    assert not gn.any() and not gk.any()
    # exact=True: integers, no derivative
    assert s2sad.grad(lambda n: sp.comb(n, 2.0, exact=True) * 1.0 + n)(5.0) == 1.0
    assert s2sad.grad(lambda x: np.sum(sp.factorial(x)))(np.float32([1.5, 2.5])).dtype == np.float32


def comb_with_repetition(n):
    return sp.comb(n, 2.0, repetition=True)


def test_comb_with_repetition_is_refused():
    with pytest.raises(RuleError, match="repetition") as e:
        s2sad.grad(comb_with_repetition)(4.5)
    assert "test_review_findings.py" in str(e.value)


def test_factorial_comb_perm_second_order():
    check_grads(s2sad.grad(factorials), (X.ravel() * 2,), modes=("fwd",))
    check_grads(s2sad.grad(binomials, (0, 1)), (N5, K5), wrt=(0, 1), modes=("fwd",))
