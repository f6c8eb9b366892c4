"""jit=True: builtin ``sum`` of a list built in a loop, of a display of numbers, and of a 1-d
array compiles (runtime/jit.py: ``_rt.sum_adjoint``, and ``_rt.keys_read``, the dict-key check
that has nothing to check for lists); such a derivative ran as Python before."""
import math

import numpy as np
import pytest

from .compare import same_as_python

numba = pytest.importorskip("numba")


def appended(x):
    out = []
    for v in x.ravel():
        out.append(v * v)
    return sum(out)


def terms(x, a):
    acc = []
    for i in range(x.shape[0]):
        acc.append(math.sin(x[i] * a) / (i + 1.0))
    return sum(acc) + sum([a, a * a, 2.0])


def over_an_array(x):
    return sum(np.cos(x)) * 2.0


_R = np.random.default_rng(4)


@pytest.mark.parametrize("f, args, wrt", [
    (appended, (_R.standard_normal((3, 4)),), (0,)),
    (terms, (_R.standard_normal(6), 0.7), (0, 1)),
    (over_an_array, (_R.standard_normal(5),), (0,)),
], ids=["appended", "terms", "over_an_array"])
def test_builtin_sum_compiles(f, args, wrt):
    same_as_python(f, args, wrt)
