"""Functions as values: closures, nested defs, lambdas, partial, higher-order builtins."""
import functools
import math

import numpy as np

import s2sad
from lang_helpers import check_grads, rng, assert_close


# == case: builtin_abs
def l1_plus(x, y):
    return abs(x - y) + abs(x * y)


def test_builtin_abs():
    check_grads(l1_plus, (0.7, -1.9), wrt=(0, 1))
    assert_close(s2sad.grad(l1_plus, wrt=(0, 1))(0.7, -1.9), [1.0 + 1.9, -1.0 - 0.7])
