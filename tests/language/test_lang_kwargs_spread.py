"""Calls that spread dicts into keywords (``f(**kw)``, ``f(**a, **b)``): the merged keywords carry
the derivatives of their values, from module-level constants and from local dicts alike."""
import numpy as np
import pytest

import s2sad
from s2sad.testing import check_grads

TOL = dict(b=2.0)
SCALE = {"b": 0.5, "c": 1.5}


def g(a, b=1.0, c=0.0):
    return a * b + c


def spread_constant(x):
    return g(x[0], **TOL) * x[1]


def spread_two(x):
    kw = {"c": x[1] ** 2}
    return g(x[0], **kw, **TOL) + g(x[1], **SCALE)


def spread_active_values(x):
    a = {"b": x[1]}
    c = {"c": np.sin(x[0])}
    return g(x[0], **a, **c)


def spread_in_loop(x):
    acc = 0.0
    for i in range(2):
        kw = {"b": x[i], "c": x[1 - i]}
        acc = acc + g(x[i], **kw)
    return acc


@pytest.mark.parametrize("f", [spread_constant, spread_two, spread_active_values, spread_in_loop])
@pytest.mark.parametrize("mode", ["rev", "fwd"])
def test_keyword_spread(f, mode):
    check_grads(f, (np.array([0.7, -1.3]),), modes=(mode,))


def test_keyword_spread_values():
    x = np.array([1.0, 3.0])
    v, gr = s2sad.value_and_grad(spread_two)(x)
    assert v == pytest.approx(1.0 * 2.0 + 9.0 + 3.0 * 0.5 + 1.5)
    np.testing.assert_allclose(gr, [2.0, 6.0 + 0.5])
