"""jit=True inlines calls of user functions (classify/inline.py), so one numba function holds
the whole derivative; functions passed as arguments are inlined where they are called."""
import math
import warnings

import numpy as np
import pytest

import s2sad
from s2sad.errors import JitFallbackWarning

pytest.importorskip("numba")


def identity(x):
    return x


def _sum(f, x):
    y = 0.0
    n = 0
    while n < len(x):
        y += f(x[n])
        n += 1
    return y


def sum_identity(x):
    return _sum(identity, x)


def sum_sin(x):
    return _sum(math.sin, x)


def scaled(a, b):
    return np.sum(a * b)


def helper_twice(x, y):
    s = scaled(x, y)
    for i in range(3):
        s = s + scaled(x * i, y)
    return s


def early(x):
    for i in range(x.shape[0]):
        if x[i] > 0.9:
            return x[i] * 2.0
    return 0.5 * x[0]


def calls_early(x):
    return early(x) + early(x * 0.5)


@pytest.mark.parametrize("f, args, wrt", [
    (sum_identity, (np.linspace(0.1, 1.0, 9),), 0),
    (sum_sin, (np.linspace(0.1, 1.0, 9),), 0),
    (helper_twice, (np.linspace(0.1, 1.0, 5), np.linspace(1.0, 2.0, 5)), (0, 1)),
    (calls_early, (np.array([0.2, 0.95, 0.4]),), 0),
    (calls_early, (np.array([0.2, 0.3, 0.4]),), 0),
], ids=["identity", "sin", "helper", "early-hit", "early-miss"])
def test_inlined_callees_compile_and_match(f, args, wrt):
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        vj, gj = s2sad.value_and_grad(f, wrt, jit=True)(*args)
    vp, gp = s2sad.value_and_grad(f, wrt)(*args)
    assert vj == pytest.approx(vp, rel=1e-12)
    for a, b in zip(gj if isinstance(wrt, tuple) else (gj,), gp if isinstance(wrt, tuple) else (gp,)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_inlined_source_points_at_the_callee():
    src = s2sad.differentiate(sum_identity, jit=True).adjoint_source(np.ones(3))
    assert "_sum__fwd" not in src and "identity__fwd" not in src
    assert "# test_jit_inline.py:" in src and "y += f(x[n])" in src


sq = lambda v: v * v  # noqa: E731  (a module-level lambda: inlined under a valid name)


def sum_sq(x):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + sq(x[i])
    return s


def test_lambda_callee_is_inlined():
    x = np.linspace(0.1, 1.0, 6)
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        g = s2sad.grad(sum_sq, jit=True)(x)
    np.testing.assert_allclose(g, 2 * x, rtol=1e-12)
    assert "_f1_v" in s2sad.differentiate(sum_sq, jit=True).adjoint_source(x)
