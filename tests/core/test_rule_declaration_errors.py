"""Mistakes in declaring a rule name the user's line and end with a Fix (issue 10: every
S2SADError does)."""
import numpy as np
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


# -- a rule template that is a conditional expression ------------------------------------------
def _scaled(x, double):
    return x * 2.0 if double else x


def _uses_scaled(x, flag):
    return np.sum(_scaled(x, flag) ** 2) + np.sum(np.sin(x))


def test_conditional_template_added_to_an_adjoint_keeps_the_sum():
    # the reverse sweep pasted `_b_x + <template>` as text: with the template `g * 2.0 if double
    # else g`, `_b_x + g * 2.0 if double else g` dropped the adjoint gathered before whenever the
    # condition was false (a silently wrong gradient: 2x instead of 2x + cos x)
    import s2sad
    s2sad.defrule(_scaled, "x, double", vjp={"x": "g * 2.0 if double else g"})
    x = np.array([0.3, -0.2, 0.5])
    for flag in (True, False):
        expected = 2 * (2.0 if flag else 1.0) ** 2 * x + np.cos(x)
        np.testing.assert_allclose(s2sad.grad(_uses_scaled)(x, flag), expected, rtol=1e-12)
