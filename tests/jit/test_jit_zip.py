"""jit=True: ``for a, b in zip(x, y)`` over arrays compiles (runtime/jit.py zip_seq and its
adjoint, with the adjoints of a tuple's items: getitem_adjoint, acc_getitem, zero_of on tuples
of arrays); such a loop made the whole derivative run as Python before."""
import numpy as np
import pytest

from .compare import random_tangents, same_as_python, same_jvp_as_python

numba = pytest.importorskip("numba")


def pairs(x, y):
    s = 0.0
    for a, b in zip(x, y):
        s += np.sin(a) * b
    for i, v in enumerate(x):
        s += i * v ** 2
    return s


def rows(X, t):                     # a least-squares loss, one row at a time
    loss = 0.0
    w = np.linspace(0.5, 1.5, X.shape[1])
    for row, target in zip(X, t):
        r = np.dot(row, w) * np.tanh(target) - target
        loss += r * r
    return loss


def three(x, y, z):
    s = 0.0
    for a, b, c in zip(x, y, z):
        s += a * b + np.exp(c) * a
    return s


def uneven(x, y):                   # zip stops at the shorter sequence
    s = 0.0
    for a, b in zip(x, y):
        s += a * np.cos(b)
    return s


_R = np.random.default_rng(53)
CASES = [(pairs, (_R.normal(size=5), _R.normal(size=5)), (0, 1)),
         (rows, (_R.normal(size=(6, 3)), _R.normal(size=6)), (0, 1)),
         (three, (_R.normal(size=4), _R.normal(size=4), _R.normal(size=4)), (0, 1, 2)),
         (uneven, (_R.normal(size=6), _R.normal(size=4)), (0, 1)),
         (pairs, (_R.normal(size=10)[::2], _R.normal(size=5)), (0, 1))]
IDS = ["pairs", "rows", "three", "uneven", "strided"]


@pytest.mark.parametrize("f, args, wrt", CASES, ids=IDS)
def test_zip_loops_compile(f, args, wrt):
    same_as_python(f, args, wrt)


@pytest.mark.parametrize("f, args, wrt", CASES, ids=IDS)
def test_zip_loops_tangent(f, args, wrt):
    same_jvp_as_python(f, args, random_tangents(args, 2))


def test_one_sequence_differentiated():
    x, y = _R.normal(size=5), _R.normal(size=5)
    same_as_python(pairs, (x, y), (1,))
    same_as_python(rows, (_R.normal(size=(6, 3)), y[:5]), (0,))
