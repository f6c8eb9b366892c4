"""Lists grown in place: ``xs.extend(xs)``, ``xs.extend(generator)``, ``xs += (a, b)`` and a list
joined by ``+=`` then repeated.

Before: ``xs.extend(xs)`` gave a silently wrong gradient (the reverse sweep read the list as it
was after the extend: zero for ``d = list(x[:2])``) or crashed inside s2sad; an extend by a
generator crashed (``object of type 'Iter' has no len()``); ``xs += (a, b)``, valid Python,
raised TypeError (s2sad made it ``xs + (a, b)``); and ``e = d * 2`` after ``d += [v]`` was
refused (the kind of ``d`` was lost).
"""
import numpy as np
import pytest

import s2sad
from lang_helpers import check_grads

X = np.array([1.3, 0.7, 2.1])


def extend_self(x):
    d = list(x[:2])
    d.extend(d)
    return d[2] * 5.0 + d[3] * d[0]


def extend_self_display(x):
    d = [x[0], x[1] * 2.0]
    d.extend(d)
    d.extend(d)
    return d[2] * 5.0 + d[7] * d[0] + d[5]


def extend_generator(x):
    d = [x[0], x[1]]
    d.extend(v * 2.0 for v in x)
    return d[1] + d[3] * d[4]


def iadd_tuple(x):
    d = [x[0]]
    d += (x[1] * 2.0, x[2])
    d += [x[0] ** 2]
    return d[1] * d[2] + d[3]


def iadd_then_repeat(x):
    d = [x[0]]
    d += [x[1]]
    e = d * 2
    f = d + [x[2]]
    return d[1] * 3.0 + e[3] * 5.0 + f[2] * e[0]


@pytest.mark.parametrize("f", [extend_self, extend_self_display, extend_generator, iadd_tuple,
                               iadd_then_repeat])
def test_lists_grown_in_place(f):
    check_grads(f, (X,), modes=("rev", "fwd"))


def test_extend_self_was_silently_zero():
    # d = [x0, x1, x0, x1]: 5 x0 + x1 x0
    np.testing.assert_allclose(s2sad.grad(extend_self)(X), [5.0 + X[1], X[0], 0.0])
