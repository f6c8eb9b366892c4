"""Mistakes in declaring a rule name the user's line and end with a Fix (issue 10: every
S2SADError does)."""
import pytest

import s2sad
from s2sad.errors import RuleError


def _bad_calls():
    yield lambda: s2sad.defrule(abs, "g, /", vjp={"g": "g"})                # hides a template name
    yield lambda: s2sad.defrule(abs, "x, /", vjp={"y": "g"})                # not a parameter
    yield lambda: s2sad.defrule(abs, "x, /", vjp={"x": "g *"}).adjoint_function("x")   # template
    yield lambda: s2sad.defrule(abs, "x, y=, /", vjp={"x": "g"})            # params do not parse
    yield lambda: s2sad.defrule(abs, "x, /", vjp={"x": "g"}, aliases={"t": "y"})   # no such param


@pytest.mark.parametrize("k", range(5))
def test_rule_declaration_errors(k):
    call = list(_bad_calls())[k]
    with pytest.raises(RuleError) as e:
        call()
    msg = str(e.value)
    assert "test_rule_declaration_errors.py:" in msg
    assert "\nFix: " in msg
