"""Dot-product tests of the SciPy rules (the table loads only when SciPy is imported)."""
import pytest

pytest.importorskip("scipy")

from cases_scipy import CASES  # noqa: E402
from rulecheck import rule_params, run_rule, run_tangent, tangent_params  # noqa: E402


@pytest.mark.parametrize("case,dtype", rule_params(CASES))
def test_rule(case, dtype):
    run_rule(case, dtype)


@pytest.mark.parametrize("case,dtype", tangent_params(CASES))
def test_tangent(case, dtype):
    run_tangent(case, dtype)
