"""Dicts spread with ``**``: into keywords (``f(**kw)``, ``f(**a, **b)``), where the merged keywords
carry the derivatives of their values, from module-level constants and from local dicts alike, and
a keyword given twice is Python's TypeError; and into dict displays (``{**a, "k": v, **b}``), where
a later key wins and only the value kept gets the key's derivative."""
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


def spread_twice(x):
    a = {"b": x[1]}
    return g(x[0], **a, **{"b": 2.0})


def spread_twice_explicit(x):
    a = {"b": x[1]}
    return g(x[0], b=x[0], **a)


@pytest.mark.parametrize("f", [spread_twice, spread_twice_explicit])
@pytest.mark.parametrize("mode", ["rev", "fwd"])
def test_keyword_given_twice_raises_as_python_does(f, mode):
    # before: the later value won, and s2sad returned a derivative of a call Python refuses
    x = np.array([0.7, -1.3])
    with pytest.raises(TypeError, match="multiple values for keyword argument 'b'"):
        f(x)
    with pytest.raises(TypeError, match="multiple values for keyword argument 'b'"):
        if mode == "rev":
            s2sad.grad(f)(x)
        else:
            s2sad.jvp(f, (x,), (np.ones(2),))


# -- ** in dict displays ---------------------------------------------------------------------------
DEFAULTS = {"scale": 2.0, "shift": 0.5}


def display_merge(x, y):
    d = {"a": x[0], **{"b": y, "a": 3.0 * x[1]}, "c": np.sum(x ** 2)}
    e = {**d, "b": d["b"] * y, **{"z": x[2]}}
    return sum(e.values())


def display_defaults(x, y):
    opts = {**DEFAULTS, "shift": y * x[0]}
    return np.sum(x) * opts["scale"] + opts["shift"]


def display_copy_then_write(x, y):
    base = {"w": x, "v": y}
    m = {**base}
    m["w"] = m["w"] * 2.0
    return np.sum(m["w"]) * base["v"] + np.sum(base["w"] ** 2)


def display_in_loop(x, y):
    state = {"acc": 0.0, "k": y}
    for i in range(3):
        state = {**state, "acc": state["acc"] + state["k"] * x[i]}
        state = {"k": state["k"] * x[i], **state}      # "k" from state wins: unchanged
    return state["acc"] + state["k"]


def display_key_order(x, y):
    d = {**{"p": x[0], "q": x[1]}, "p": y, "r": x[2]}
    return sum(v * (i + 1) for i, v in enumerate(d.values()))


@pytest.mark.parametrize("f", [display_merge, display_defaults, display_copy_then_write,
                               display_in_loop, display_key_order])
@pytest.mark.parametrize("mode", ["rev", "fwd"])
def test_dict_display_spread(f, mode):
    check_grads(f, (np.array([0.3, -0.7, 1.1]), 0.4), modes=(mode,))


def test_dict_display_spread_values():
    x, y = np.array([0.3, -0.7, 1.1]), 0.4
    # e = {a: 3 x1, b: y^2, c: |x|^2, z: x2}: the "a": x[0] of the first display is overwritten
    v, (gx, gy) = s2sad.value_and_grad(display_merge, wrt=(0, 1))(x, y)
    assert v == pytest.approx(display_merge(x, y))
    np.testing.assert_allclose(gx, [2 * x[0], 3.0 + 2 * x[1], 2 * x[2] + 1.0])
    assert gy == pytest.approx(2 * y)
    # the order of d's keys is Python's (p first, though its value is the later y)
    gx, gy = s2sad.grad(display_key_order, wrt=(0, 1))(x, y)
    np.testing.assert_allclose(gx, [0.0, 2.0, 3.0])
    assert gy == pytest.approx(1.0)


def display_of_pairs(x, y):
    return {**[("a", x[0])]}["a"] * y


def test_dict_display_spread_of_a_non_mapping_raises_as_python_does():
    x = np.array([0.3, -0.7, 1.1])
    with pytest.raises(TypeError, match="not a mapping"):
        display_of_pairs(x, 1.0)
    with pytest.raises(TypeError, match="not a mapping"):
        s2sad.grad(display_of_pairs)(x, 1.0)
