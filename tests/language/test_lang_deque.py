"""collections.deque holding values that carry derivatives (rules/deques.py).

Before, ``deque(...)`` was an opaque callee whose result s2sad took for a constant: every
gradient through a deque was silently zero (reverse and forward), and ``d.appendleft(v)`` on an
empty deque crashed inside s2sad.  Now construction, indexing, iteration and the in-place methods
are followed in both modes; a deque with ``maxlen`` and changes s2sad cannot follow (a deque taken
from a list, from ``self``) are refused at the user's line.
"""
import copy
from collections import deque

import numpy as np
import pytest

import s2sad
from s2sad.errors import S2SADError
from lang_helpers import check_grads, line_of

X = np.array([1.3, 0.7, 2.1])
BOTH = ("rev", "fwd")


def construct_index(x):
    d = deque([x[0] * 2.0, x[1] * 3.0])
    return d[0] + d[1] * 2.0 + d[-1] * x[2]


def append_pop(x):
    d = deque()
    d.append(x[0] * 2.0)
    d.appendleft(x[1])
    d.append(x[2] ** 2)
    a = d.popleft()
    b = d.pop()
    return a * 3.0 + b * d[0] + d[-1]


def pops_in_expressions(x):
    d = deque([x[0], x[1], x[2]])
    return d.pop() * 2.0 + d.popleft() * 3.0 + d[0] ** 2


def iterate(x):
    d = deque([x[0], x[1] * 2.0, x[2]])
    s = 0.0
    for v in d:
        s = s + v * v
    for i, v in enumerate(d):
        s = s + v * (i + 1.0)
    return s + sum(d) + max(d) * sorted(d)[0] + list(d)[1] * tuple(d)[2]


def reorder(x):
    d = deque([x[0], x[1], x[2], x[0] * x[1]])
    d.rotate(1)
    d.rotate(-3)
    d.reverse()
    return d[0] * 1.0 + d[1] * 2.0 + d[2] * 3.0 + d[3] * 4.0


def more_methods(x):
    d = deque([x[0], x[1]])
    d.extend([x[2], x[0] * 5.0])
    d.extendleft([x[1] * 7.0, x[2]])
    d.insert(2, x[0] * x[2])
    d.remove(d[1])
    d[0] = d[0] * x[1]
    del d[1]
    e = d.copy()
    e.appendleft(x[2])
    f = copy.copy(d)
    f.clear()
    f.append(x[1] ** 3)
    return d[0] + 2.0 * d[1] + 3.0 * d[2] + 4.0 * d[-1] + e[0] * e[1] + f[0]


def queue_loop(x):
    d = deque([x[0]])
    s = 0.0
    for i in range(4):
        v = d.popleft()
        s = s + v * (i + 1.0)
        d.append(v * x[1])
        d.appendleft(v * 0.5)
    while len(d) > 1:
        a = d.popleft()
        b = d.pop()
        d.append(a * b + x[2])
    return s + d[0]


def window(x):
    d = deque()
    s = 0.0
    for i in range(3):
        d.append(x[i] ** 2)
        if len(d) > 2:
            d.popleft()
        s = s + sum(d)
    return s


def joined(x):
    d = deque([x[0]])
    d += [x[1]]
    d += (x[2] * 2.0,)
    e = d * 2
    f = d + deque([x[0] ** 2])
    return d[1] * 3.0 + d[2] * d[0] + e[4] * 5.0 + f[3]


def of_arrays(x):
    d = deque()
    d.append(x[:2] * 2.0)
    d.appendleft(x[1:] ** 2)
    d.rotate()
    return np.sum(d[0] * d[1]) + np.sum(np.stack(d)) + np.sum(d.pop())


def from_array(x):
    d = deque(x * 2.0)
    d.rotate(1)
    return d[0] * 2.0 + d[1] * d[2]


@pytest.mark.parametrize("f", [construct_index, append_pop, pops_in_expressions, iterate, reorder,
                               more_methods, queue_loop, window, joined, of_arrays, from_array])
def test_deque_gradients_both_modes(f):
    check_grads(f, (X,), modes=BOTH)


def test_deque_gradient_was_silently_zero():
    # the first case of the report: d = deque([2 x0, 3 x1]); d[0] + 2 d[1]
    g = s2sad.grad(construct_index)(X)
    np.testing.assert_allclose(g, [2.0, 6.0 + 3.0 * X[2], 3.0 * X[1]])
    _, t = s2sad.jvp(construct_index, (X,), (np.array([1.0, 0.0, 0.0]),))
    assert t == pytest.approx(2.0)


def deque_argument(d):
    e = deque(d)
    e.appendleft(d[1] * 2.0)
    return e[0] * e[2] + d[0] ** 2


def test_gradient_of_a_deque_argument_is_a_deque():
    d = deque([1.5, 2.0])
    g = s2sad.grad(deque_argument)(d)
    assert isinstance(g, deque)
    np.testing.assert_allclose(list(g), [3.0, 8.0])
    _, t = s2sad.jvp(deque_argument, (d,), (deque([0.0, 1.0]),))
    assert t == pytest.approx(8.0)


def returns_deque(x):
    d = deque([x[0] * 2.0, x[1]])
    d.appendleft(x[2])
    return d


def test_vjp_of_a_deque_output():
    value, pullback = s2sad.vjp(returns_deque, X)
    assert isinstance(value, deque)
    np.testing.assert_allclose(pullback(deque([1.0, 10.0, 100.0]))[0], [20.0, 100.0, 1.0])


def test_hessian_through_deque_construction():
    def f(x):
        d = deque([x[0] * x[1], x[2] ** 2])
        return d[0] * d[1]
    h = s2sad.hessian(f)(X)
    x0, x1, x2 = X
    expected = np.array([[0.0, x2 ** 2, 2 * x1 * x2],
                         [x2 ** 2, 0.0, 2 * x0 * x2],
                         [2 * x1 * x2, 2 * x0 * x2, 2 * x0 * x1]])
    np.testing.assert_allclose(h, expected)


# -- refusals ---------------------------------------------------------------------------------
def maxlen_empty(x):
    d = deque(maxlen=2)
    d.append(x[0])
    d.append(x[1])
    d.append(x[2])
    return d[0] * 2.0 + d[1]


def maxlen_values(x):
    d = deque([x[0], x[1], x[2]], 2)
    return d[0] * 2.0 + d[1]


def in_a_list(x):
    q = [deque()]
    q[0].append(x[0])
    return q[0][0] * 3.0


def in_a_dict(x):
    d = deque([x[0], x[1]])
    q = {"q": d}
    q["q"].rotate(1)
    return q["q"][0] * 3.0 + d[1]


class Holder:
    def __init__(self):
        self.q = deque()

    def push(self, v):
        self.q.append(v)

    def push_left(self, v):
        self.q.appendleft(v)


def in_an_attribute(x):
    h = Holder()
    h.push(x[0] * 2.0)
    h.push_left(x[1])
    return h.q[0] * 3.0 + h.q[1]


def push_into(d, v):
    d.appendleft(v * 2.0)


def into_an_argument(x):
    d = deque([x[0]])
    push_into(d, x[1])
    return d[0] * 3.0


def aliased(x):
    d = deque([x[0], x[1]])
    e = d
    e.appendleft(x[2])
    return d[0] * 3.0


@pytest.mark.parametrize("f, needle, words", [
    (maxlen_empty, "deque(maxlen=2)", "maxlen"),
    (maxlen_values, "deque([x[0], x[1], x[2]], 2)", "maxlen"),
    (in_a_list, "q[0].append(x[0])", "taken from `q`"),
    (in_a_dict, 'q["q"].rotate(1)', "taken from `q`"),
    (in_an_attribute, "self.q.appendleft(v)", "self.q"),
    (into_an_argument, "d.appendleft(v * 2.0)", "argument"),
    (aliased, "e.appendleft(x[2])", "same object"),
])
@pytest.mark.parametrize("mode", BOTH)
def test_refused_at_the_users_line(f, needle, words, mode):
    with pytest.raises(S2SADError) as e:
        if mode == "rev":
            s2sad.grad(f)(X)
        else:
            s2sad.jvp(f, (X,), (np.ones(3),))
    msg = str(e.value)
    fn = push_into if f is into_an_argument else Holder.push_left if f is in_an_attribute else f
    assert f":{line_of(fn, needle)}:" in msg
    assert words in msg
    assert "_rt." not in msg and "_b_" not in msg


def test_second_derivative_through_deque_methods_is_refused_not_wrong():
    def f(x):
        d = deque([x[0], x[1]])
        d.appendleft(x[2] * x[0])
        return d[0] * d[1]
    with pytest.raises(S2SADError) as e:
        s2sad.hessian(f)(X)
    assert "second derivatives" in str(e.value)
    assert "d.appendleft" in str(e.value)
