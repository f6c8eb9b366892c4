"""jit=True, forward mode: the tangents of np.maximum/np.minimum/np.fmax/np.fmin compile
(rules/jit.py maximum_tangent); a ReLU made any compiled jvp run as Python before."""
import numpy as np
import pytest

import s2sad

from .compare import compiled_jvp, random_tangents, same_jvp_as_python

numba = pytest.importorskip("numba")


def relu_net(W, x, b):
    h = np.maximum(W @ x + b, 0.0)
    return np.sum(np.minimum(h, 1.5) ** 2) + np.sum(np.fmax(x, b[:3]))


def scalars(a, b):
    return max(a, 0.1) + np.maximum(a, b) * np.minimum(a * b, 0.3) + np.fmin(b, 2.0)


def broadcast(X, v):
    return np.sum(np.maximum(X, v) * np.minimum(v[None, :], X.T.T))


_R = np.random.default_rng(71)
CASES = [(relu_net, (_R.normal(size=(4, 3)), _R.normal(size=3), _R.normal(size=4))),
         (scalars, (0.4, -0.3)),
         (broadcast, (_R.normal(size=(5, 3)), _R.normal(size=3)))]


@pytest.mark.parametrize("f, args", CASES, ids=[c[0].__name__ for c in CASES])
def test_tangent_compiles_as_python(f, args):
    same_jvp_as_python(f, args, random_tangents(args, 3))


def test_a_tie_gives_half_to_each_as_python():
    def f(x, y):
        return np.sum(np.maximum(x, y) * np.array([1.0, 10.0, 100.0]))
    x = np.array([0.5, -1.0, 2.0])
    for t in [(np.array([1.0, 2.0, 4.0]), 8.0), (np.zeros(3), 1.0)]:
        got = compiled_jvp(f, (x, 0.5), t)
        assert got == s2sad.jvp(f, (x, 0.5), t)
    # x[0] ties y: half of each tangent; x[1] loses (y's); x[2] wins (x's)
    assert compiled_jvp(f, (x, 0.5), (np.array([1.0, 2.0, 4.0]), 8.0))[1] == \
        pytest.approx(0.5 * (1.0 + 8.0) + 10.0 * 8.0 + 100.0 * 4.0)
