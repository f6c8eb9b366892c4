"""A rule parameter under an internal name (``aliases=``): a callee's keyword named like a
template name (``t``, the tangent) binds to the rule parameter that takes it, in both modes, at
build time and when the call is resolved at run time (``**kw``, ``functools.partial``)."""
import functools

import numpy as np
import pytest

import s2sad
from s2sad.errors import RuleError, S2SADError
from s2sad.rules.registry import Rule


def scaled(x, t=1.0):
    """x * t, computed where s2sad cannot look (np.vectorize): only its rule gives its
    derivative, in both modes, also when the call is resolved at run time."""
    return np.vectorize(lambda v: v * t)(np.asarray(x, dtype=float))


s2sad.defrule(scaled, "x, tt=1.0", aliases={"t": "tt"},
              vjp={"x": "g * tt", "tt": "np.sum(g * x)"},
              jvp={"x": "t * tt", "tt": "t * x"})


def by_keyword(x, s):
    return np.sum(scaled(x, t=s) ** 2)


def by_position(x, s):
    return np.sum(scaled(x, s) ** 2)


def by_dict(x, s):
    kw = {"t": s}
    return np.sum(scaled(x, **kw) ** 2)


def by_partial(x, s):
    f = functools.partial(scaled, t=s)
    return np.sum(f(x) ** 2)


X, S = np.array([0.5, -1.5, 2.0]), 0.7
WANT = (2 * S * S * X, 2 * S * np.sum(X * X))


@pytest.mark.parametrize("f", [by_keyword, by_position, by_dict, by_partial])
def test_keyword_binds_to_the_aliased_parameter(f):
    gx, gs = s2sad.grad(f, wrt=(0, 1))(X, S)
    np.testing.assert_allclose(gx, WANT[0])
    assert gs == pytest.approx(WANT[1])
    tx, ts = np.array([1.0, 0.5, -2.0]), 0.3
    _, tan = s2sad.jvp(f, (X, S), (tx, ts))
    assert tan == pytest.approx(np.sum(WANT[0] * tx) + WANT[1] * ts)


def by_internal_name(x, s):
    return np.sum(scaled(x, tt=s))


@pytest.mark.parametrize("mode", ["rev", "fwd"])
def test_the_internal_name_is_not_a_keyword(mode):
    with pytest.raises(S2SADError, match=r"unexpected keyword argument 'tt' \(the callee's "
                                         r"keyword is 't'\)") as e:
        if mode == "rev":
            s2sad.grad(by_internal_name)(X, S)
        else:
            s2sad.jvp(by_internal_name, (X, S), (X, S))
    msg = str(e.value)
    assert "test_rule_aliases.py:" in msg and "\nFix: " in msg
    assert "(x, t)" in msg                    # the parameters under the callee's own names


def test_bind_and_names():
    rule = s2sad.rules.registry.lookup(scaled)
    assert dict(rule.bind((X,), {"t": 2.0})) == {"x": X, "tt": 2.0}
    assert rule.public_name("tt") == "t" and rule.public_name("x") == "x"
    with pytest.raises(TypeError):
        rule.bind((X,), {"tt": 2.0})


@pytest.mark.parametrize("aliases", [{"t": "nope"}, {"x": "tt"}])
def test_bad_aliases(aliases):
    with pytest.raises(RuleError, match="aliases="):
        Rule(scaled, "x, tt=1.0", vjp={"x": "g * tt"}, aliases=aliases)
