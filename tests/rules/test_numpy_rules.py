"""Dot-product tests of every NumPy rule against central differences (float64), plus dtype checks
(float32 in -> float32 adjoint) and complex inputs for the complex-capable rules."""
import pytest

from cases_numpy import CASES
from rulecheck import rule_params, run_rule, run_tangent, tangent_params


@pytest.mark.parametrize("case,dtype", rule_params(CASES))
def test_rule(case, dtype):
    run_rule(case, dtype)


@pytest.mark.parametrize("case,dtype", tangent_params(CASES))
def test_tangent(case, dtype):
    run_tangent(case, dtype)
