"""Comprehensions and generator expressions, with zip/enumerate/reversed/range."""
import math

import numpy as np

import s2sad
from lang_helpers import check_grads, rng, assert_close


# == case: dict_comprehension_output
def per_feature_grads(x, names):
    return {n: math.tanh(v) * v for n, v in zip(names, x)}


def test_dict_comprehension_output_vjp():
    x = [0.4, -1.1, 0.8]
    names = ["a", "b", "c"]
    value, pb = s2sad.vjp(per_feature_grads, x, names)
    assert set(value) == {"a", "b", "c"}
    ct = {"a": 1.0, "b": -2.0, "c": 0.5}
    gx, gn = pb(ct)
    want = [ct[n] * (math.tanh(v) + v * (1 - math.tanh(v) ** 2)) for n, v in zip(names, x)]
    assert_close(gx, want)
    assert gn is None
