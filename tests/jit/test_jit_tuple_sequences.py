"""Numba mode compiles three loop idioms that ran as Python before: ``for v in reversed(x)``
(``len`` is an int whatever it is given, so ``x[n - 1 - i]`` is a plain subscript: sites.py
``_INT_BUILTINS``), and the concatenation and stack of a tuple of arrays, ``np.concatenate((y,
y[:1]))`` with y bound again in each trip (the tuple saved per trip; its adjoint a tuple of
pieces, one per item, whose layouts may differ: rules/jit.py).  Each compiled derivative runs
without a JitFallbackWarning and gives Python mode's numbers (1e-12) and finite differences'."""
import numpy as np
import pytest

from .compare import same_as_python

pytest.importorskip("numba")


def reversed_walk(x):
    s = 0.0
    for v in reversed(x):
        s = 0.5 * s + v * v
    return s


def reversed_rows(A):
    s = np.zeros(A.shape[1])
    for row in reversed(A):
        s = np.tanh(s + row)
    return np.sum(s ** 2)


def wrap_around(x):                     # y grows by one item per trip
    y = x
    for k in range(4):
        y = np.concatenate((y, y[:1])) * 0.9
    return np.sum(y ** 2)


def concat_axes(x):
    A = np.outer(x, x)
    B = np.concatenate((A, A[:, :2] * 2.0), axis=1)
    C = np.concatenate((B, B[:1], np.sin(B[1:3])), axis=0)
    return np.sum(C ** 2)


def stacked(x):
    y = x
    for k in range(3):
        y = np.sum(np.stack((y, np.sin(y)), axis=0) * np.array([[1.0], [0.5]]), axis=0)
    return np.sum(y ** 2)


_R = np.random.default_rng(3)
CASES = [
    (reversed_walk, (_R.standard_normal(6),)),
    (reversed_rows, (_R.standard_normal((4, 3)),)),
    (wrap_around, (_R.standard_normal(5),)),
    (concat_axes, (_R.standard_normal(4),)),
    (stacked, (_R.standard_normal(5),)),
]


@pytest.mark.parametrize("f, args", CASES, ids=[f.__name__ for f, _ in CASES])
def test_compiles_and_agrees(f, args):
    same_as_python(f, args, (0,))
