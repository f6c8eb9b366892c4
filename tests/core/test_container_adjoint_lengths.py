"""Adjoints (and tangents) of lists, tuples and deques of different lengths are never truncated.

runtime.add added two list adjoints item by item with zip and dropped the longer one's tail, and
forward mode's materialize did the same with a tangent and its value: a derivative silently
missing terms.  A mismatch is now refused; lists that grow and shrink in user code keep their
correct derivatives (reverse, forward, second order).
"""
from collections import deque

import numpy as np
import pytest

import s2sad
from s2sad import runtime as rt
from s2sad.errors import UnsupportedSyntaxError
from s2sad.runtime import tangents
from s2sad.testing import check_grads


@pytest.mark.parametrize("a, b", [([1.0, 2.0], [3.0]), ([1.0], [3.0, 4.0]), ((1.0, 2.0), (3.0,)),
                                  (deque([1.0, 2.0]), [3.0]), ([[1.0], 2.0], [[1.0, 5.0], 2.0])])
def test_add_refuses_lists_of_different_lengths(a, b):
    # before: [4.0] (the 2.0 dropped), [4.0], (4.0,), deque([4.0]), [[2.0], 4.0]
    with pytest.raises(UnsupportedSyntaxError, match="different lengths"):
        rt.add(a, b)


def test_add_keeps_equal_lengths_and_zero():
    assert rt.add([1.0, 2.0], [3.0, 4.0]) == [4.0, 6.0]
    assert rt.add([1.0, 2.0], 0.0) == [1.0, 2.0]
    assert rt.add(None, [1.0]) == [1.0]


def test_materialize_refuses_a_tangent_of_another_length():
    with pytest.raises(UnsupportedSyntaxError, match="different lengths"):
        tangents.materialize([1.0], [1.0, 2.0])      # before: [1.0]
    with pytest.raises(UnsupportedSyntaxError, match="different lengths"):
        tangents.materialize([1.0], deque([1.0, 2.0]))
    assert tangents.materialize([None, 1.0], [1.0, 2.0]) == [0.0, 1.0]


def _append_loop(x):
    xs = []
    for i in range(3):
        xs.append(x[i] * x[i])
    ys = [x[0], x[1]]
    return sum(a + b for a, b in zip(xs, ys)) + sum(xs)


def _pop_while(x):
    a = [x[0], x[1], x[2], x[3]]
    s = 0.0
    while len(a) > 1:
        v = a.pop()
        s = s + v * a[-1]
    return s


def _grow_by_concatenation(x):
    a = [x[0]]
    s = 0.0
    for i in range(3):
        a = a + [x[i + 1] * a[-1]]
        s = s + a[-1]
    return s


def _read_then_grow(x):
    a = [x[0], x[1]]
    t = a[0] * a[1]
    a.append(x[2])
    t = t + a[2] * a[0]
    a.extend([x[3], x[1]])
    b = a[1:3]
    return t + sum(a) * b[0]


def _conditional_comprehension(x):
    a = [x[i] ** 2 for i in range(4) if x[i] > -1.0]
    return np.sum(np.array(a) * x[:len(a)]) + a[0] * a[-1]


@pytest.mark.parametrize("f", [_append_loop, _pop_while, _grow_by_concatenation, _read_then_grow,
                               _conditional_comprehension])
def test_lists_that_change_length(f):
    x = np.array([0.7, -1.3, 0.4, 1.1])
    check_grads(f, (x,), modes=("rev", "fwd"))
    H = s2sad.hessian(f)(x)
    g = s2sad.grad(f)
    eps = 1e-5
    Hn = np.stack([(g(x + eps * e) - g(x - eps * e)) / (2 * eps) for e in np.eye(4)], axis=1)
    np.testing.assert_allclose(H, Hn, atol=1e-6)
