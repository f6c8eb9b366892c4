"""Regressions from the language fuzzer (seed 20261201): adjoints that may be the symbolic zero
0.0 reaching templates that reshape or index their g."""
import numpy as np
import pytest

import s2sad
from s2sad.testing import check_grads

X = np.array([0.3, -1.2, 0.8])
Y = 0.7


def test_unappend_element_adjoint_may_be_zero():
    # 20261201:12186 -- the appended element was popped: unappend gives it 0.0, which reached
    # getitem_adjoint of a slice
    def f(x, y):
        l8 = []
        l8.append(list(x)[::1])
        l8.pop()
        return sum(l8) + y

    check_grads(f, (X, Y), modes=("rev", "fwd"))


def test_setitem_value_adjoint_may_be_zero():
    # an element of a list adjoint that nothing reached is 0.0 (the list's own adjoint is not)
    def f(x, y):
        l = [0.0, 0.0]
        l[0] = np.array([t * y for t in x])
        l[1] = y * x[0]
        return l[1]

    check_grads(f, (X, Y), modes=("rev", "fwd"))


def test_max_unpicked_argument_adjoint_may_be_zero():
    # 20261201:65 (and 2833, 4267, 5715, 6333) -- max gives the argument it did not pick 0.0,
    # which reached np.array's np.reshape(g, np.shape(object))
    def f(x, y):
        return max(np.dot(x, x), np.dot(np.array([t * y for t in x]), x))

    check_grads(f, (X, Y), modes=("rev", "fwd"))
    check_grads(f, (X, 3.0), modes=("rev", "fwd"))


def test_map_never_consumed_whose_function_raises():
    # 20261201:4742: map/filter/generator expressions are computed where they are made; one never
    # used is left out (Python never calls its function)
    def f(x, y):
        it5 = {y: y}.values()
        it6 = map(lambda t: next(it5), x)     # noqa: F841  (never used: Python calls nothing)
        return y * x[0]

    check_grads(f, (X, Y), modes=("rev", "fwd"))


def test_generator_and_filter_never_consumed_whose_function_raises():
    def f(x, y):
        it5 = {y: y}.values()
        g = (next(it5) for t in x)                      # noqa: F841
        h = filter(lambda t: next(it5), x)              # noqa: F841
        return y * x[0]

    check_grads(f, (X, Y), modes=("rev", "fwd"))

