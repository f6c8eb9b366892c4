"""Functions tests/core/test_pickle.py pickles: module-level ones travel by reference."""
import numpy as np

import s2sad

SCALE = 2.0


def helper(x):
    return np.tanh(x) * SCALE


@s2sad.differentiate(wrt=(0, 1))
def loss(w, x):
    return np.sum(helper(w * x) ** 2)


def plain(w, x):
    return np.sum(np.sin(w) * x)


def with_aux(w):
    r = np.sin(w)
    return np.sum(r * r), r


def make_closure(data):
    k = 3.0

    def inner(w):
        return np.sum((helper(w) - data) ** 2) * k
    return inner
