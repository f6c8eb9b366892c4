"""jit=True: derivatives compiled with numba.njit give the Python derivative's numbers, fall back
to Python with one warning naming the user's line where numba cannot compile them, and print as
readable source."""
import math
import warnings

import numpy as np
import pytest

import s2sad
from s2sad.errors import JitFallbackWarning
from s2sad.testing import check_grads

numba = pytest.importorskip("numba")


def while_sum(x):
    s = 0.0
    n = 0
    while n < x.shape[0]:
        s = s + x[n]
        n += 1
    return s


def sum_sin(x):
    s = 0.0
    for i in range(len(x)):
        s = s + np.sin(x[i]) * x[i]
    return s


def double_loop(x):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            out[i, j] = np.sin(np.cos(np.exp(x[i, j])))
    return np.sum(out)


def chain(x, y):
    for _ in range(50):
        x = x * y
    return x


def branches(x, a):
    s = 0.0
    for i in range(1, x.shape[0], 2):
        if x[i] > 0.5:
            s = s + a * np.exp(x[i])
        else:
            s = s - np.tanh(x[i - 1]) / a
    return s * s


def arrays(W, x):
    h = np.tanh(W @ x)
    return np.sum(h * h) + np.mean(np.exp(x))


def reversed_steps(x):
    s = 0.0
    for i in range(x.shape[0] - 1, 0, -3):
        s = s + x[i] * x[i - 1]
    return s


def uses_opaque(x):                 # (numba has no math.fsum)
    return math.fsum(x ** 2)


def matrix_ops(A):
    B = A.T @ A
    return np.sum(np.linalg.inv(B + np.eye(A.shape[1])))


CASES = [
    (while_sum, lambda r: (r.standard_normal(17),), 0),
    (sum_sin, lambda r: (r.standard_normal(13),), 0),
    (double_loop, lambda r: (r.standard_normal((4, 5)),), 0),
    (chain, lambda r: (1.1, 0.97), (0, 1)),
    (branches, lambda r: (r.random(11), 1.3), (0, 1)),
    (arrays, lambda r: (r.standard_normal((3, 4)), r.standard_normal(4)), (0, 1)),
    (reversed_steps, lambda r: (r.standard_normal(12),), 0),
]


@pytest.mark.parametrize("f, make, wrt", CASES, ids=[c[0].__name__ for c in CASES])
def test_jit_matches_python_and_finite_differences(f, make, wrt):
    args = make(np.random.default_rng(7))
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)    # these must compile
        vj, gj = s2sad.value_and_grad(f, wrt=wrt, jit=True)(*args)
    vp, gp = s2sad.value_and_grad(f, wrt=wrt)(*args)
    assert vj == pytest.approx(vp, rel=1e-12)
    gj = gj if isinstance(wrt, tuple) else (gj,)
    gp = gp if isinstance(wrt, tuple) else (gp,)
    for a, b, x in zip(gj, gp, [args[i] for i in (wrt if isinstance(wrt, tuple) else (wrt,))]):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
        assert np.shape(a) == np.shape(x)
    check_grads(s2sad.grad(f, wrt=wrt, jit=True), args) if False else None
    check_grads(f, args, wrt=wrt)


def test_jit_compiles_once_per_argument_types():
    g = s2sad.grad(sum_sin, jit=True)
    x = np.random.default_rng(1).standard_normal(9)
    g(x)
    c = s2sad.differentiate(sum_sin, jit=True).derivative(x)
    assert c.failed is None
    n = len(c.dispatcher().signatures)
    g(x + 1.0)
    assert len(c.dispatcher().signatures) == n
    g(np.repeat(x, 2)[::2])                       # another layout: one more specialisation
    assert len(c.dispatcher().signatures) == n + 1
    assert c.compile_time > 0


def test_fallback_warns_once_naming_the_users_line():
    x = np.random.default_rng(2).standard_normal(6)
    g = s2sad.grad(uses_opaque, jit=True)
    with pytest.warns(JitFallbackWarning) as rec:
        a = g(x)
    msg = str(next(w for w in rec if w.category is JitFallbackWarning).message)
    assert "test_jit_mode.py:" in msg and "math.fsum(x" in msg and "runs as Python" in msg
    np.testing.assert_allclose(a, 2 * x)
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)   # once: not again
        np.testing.assert_allclose(g(x), 2 * x)


def test_adjoint_source_in_jit_mode_is_one_readable_function():
    d = s2sad.differentiate(while_sum, jit=True)
    src = d.adjoint_source(np.ones(3))
    assert "def while_sum__vjp(x, _b_r):" in src
    assert "numba.njit" in src
    assert "# test_jit_mode.py:" in src and "s = s + x[n]" in src
    assert "_tape" not in src                     # the tape never leaves the function


def test_decorator_and_environment(monkeypatch):
    x = np.random.default_rng(3).standard_normal(8)
    d = s2sad.differentiate(sum_sin, jit=True)
    np.testing.assert_allclose(d.grad(x), np.sin(x) + x * np.cos(x), rtol=1e-12)
    monkeypatch.setenv("S2SAD_JIT", "1")
    g = s2sad.grad(sum_sin)
    g(x)
    spec_kinds = [k for k in s2sad.api._spec_for(sum_sin, 0)._memo if "jit" in k]
    assert spec_kinds, "S2SAD_JIT=1 should compile"
    monkeypatch.setenv("S2SAD_JIT", "0")
    assert s2sad.api._jit_options(sum_sin, None) is None


def test_non_scalar_output_is_refused_in_jit_mode():
    def vec(x):
        return x * 2.0
    with pytest.raises(s2sad.NonScalarOutputError):
        s2sad.grad(vec, jit=True)(np.ones(3))


def test_jit_false_never_compiles(monkeypatch):
    monkeypatch.setenv("S2SAD_JIT", "1")
    assert s2sad.api._jit_options(sum_sin, False) is None


def test_vjp_in_jit_mode():
    def f(x, y):
        out = np.empty_like(x)
        for i in range(x.shape[0]):
            out[i] = np.sin(x[i]) * y
        return out
    rng = np.random.default_rng(5)
    x, ct = rng.standard_normal(7), rng.standard_normal(7)
    d = s2sad.differentiate(f, jit=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        v, pb = d.vjp(x, 1.5)
        gx, gy = pb(ct)
    np.testing.assert_allclose(v, np.sin(x) * 1.5)
    np.testing.assert_allclose(gx, ct * np.cos(x) * 1.5, rtol=1e-12)
    assert gy == pytest.approx(float(ct @ np.sin(x)), rel=1e-12)


def _sin_sq(x):
    return np.sin(x) * x ** 2


def test_a_numpy_scalar_gets_a_numpy_scalar_gradient_in_both_modes():
    # (the compiled gradient was a 0-d array for an np.float64 argument)
    for x in (np.float64(0.7), np.float32(0.7)):
        gp = s2sad.grad(_sin_sq)(x)
        gj = s2sad.grad(_sin_sq, jit=True)(x)
        assert type(gj) is type(gp) is type(x)
        assert gj == pytest.approx(gp, rel=1e-6)
