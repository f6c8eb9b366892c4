"""jit=True: a local closure called by its own name (``def rhs(y): ...`` then ``rhs(y)``) is
inlined at its calls (classify/inline.py), with what it captured read there, as Python's late
binding reads it; the dynamic call made the whole derivative run as Python before.  Closures
that do not qualify (default values, ``nonlocal`` writes, passed on as values) still give the
right numbers, through the fallback."""
import math

import numpy as np
import pytest

import s2sad
from s2sad.testing import check_grads

from .compare import fallback_same_as_python, same_as_python, same_jvp_as_python

numba = pytest.importorskip("numba")


def rk4(y0, k):
    def rhs(y):
        return -k * y + np.sin(y)
    y = y0
    for i in range(20):
        a = rhs(y)
        b = rhs(y + 0.05 * a)
        c = rhs(y + 0.05 * b)
        d = rhs(y + 0.1 * c)
        y = y + 0.1 / 6 * (a + 2 * b + 2 * c + d)
    return np.sum(y)


def late_binding(x, k):             # each call reads k as it is then
    f = lambda t: k * t ** 2        # noqa: E731
    s = f(x)
    k = k * 3.0
    s = s + f(x)
    for i in range(3):
        k = k + 1.0
        s = s + f(x * i)
    return np.sum(s)


def matrix_step(x, w):
    def step(v, h):
        return np.tanh(w @ v) * h
    v = x
    for i in range(5):
        v = step(v, 0.5 + i)
    return v @ v


def euler(x0, a):
    def f(t, x):
        return -a * x + math.sin(t)
    x = x0
    t = 0.0
    for n in range(50):
        x = x + 0.01 * f(t, x)
        t += 0.01
    return x


_R = np.random.default_rng(5)
CASES = {
    "rk4": (rk4, (_R.standard_normal(4), 0.7), (0, 1)),
    "late_binding": (late_binding, (_R.standard_normal(3), 0.4), (0, 1)),
    "matrix_step": (matrix_step, (_R.standard_normal(3), _R.standard_normal((3, 3))), (0, 1)),
    "euler": (euler, (0.3, 1.2), (0, 1)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_closures_are_inlined_and_compile(name):
    f, args, wrt = CASES[name]
    same_as_python(f, args, wrt)


@pytest.mark.parametrize("name", ["rk4", "late_binding"])
def test_forward_mode_compiles_too(name):
    f, args, _ = CASES[name]
    tangents = tuple(_R.standard_normal(np.shape(a)) if np.ndim(a) else 0.3 for a in args)
    same_jvp_as_python(f, args, tangents)


def test_inlined_source_reads_the_closures_lines():
    d = s2sad.differentiate(rk4, wrt=(0, 1), jit=True)
    d.grad(*CASES["rk4"][1])
    src = d.adjoint_source(jit=True)
    assert "_rhs1_k = k" in src and "def rhs" not in src and "_rt.call" not in src
    assert "return -k * y + np.sin(y)" in src         # (the closure's own line, as its origin)


def with_default(x, k):             # a default value: not inlined
    def f(t, s=2.0):
        return k * t * s
    return np.sum(f(x) + f(x, 3.0))


def nonlocal_write(x, k):           # writes what it captured: not inlined
    n = 0.0

    def f(t):
        nonlocal n
        n = n + 1.0
        return k * t * n
    return np.sum(f(x) + f(x))


def passed_on(x, k):                # the closure is a value (map): not inlined
    f = lambda t: k * t ** 2        # noqa: E731
    return sum(map(f, x)) + f(x[0])


def test_a_nonlocal_write_is_refused_in_both_modes():
    for jit in (False, True):
        with pytest.raises(s2sad.UnsupportedSyntaxError, match="nonlocal n"):
            s2sad.value_and_grad(nonlocal_write, wrt=(0, 1), jit=jit)(np.ones(3), 0.6)


@pytest.mark.parametrize("f", [with_default, passed_on])
def test_closures_left_as_calls_still_give_the_right_numbers(f):
    args = (_R.standard_normal(3), 0.6)
    fallback_same_as_python(f, args, (0, 1))
    check_grads(f, args, wrt=(0, 1))
