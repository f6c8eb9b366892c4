"""grad(grad(f)) and third derivatives against closed forms; Hessians of NumPy programs with loops
against closed forms and finite differences of gradients."""
import math

import numpy as np
import pytest

import s2sad
from s2sad import transforms as tr

import higher_programs as H
from fwdcheck import fd_grad

# (function, first, second, third derivative)
SCALAR = [
    ("cubic", H.cubic,
     lambda x: 8 * x ** 3 - 9 * x ** 2 + 2 * x - 5,
     lambda x: 24 * x ** 2 - 18 * x + 2,
     lambda x: 48 * x - 18),
    ("trig_exp", H.trig_exp,
     lambda x: math.exp(0.5 * x) * (math.cos(x) + 0.5 * math.sin(x)),
     lambda x: math.exp(0.5 * x) * (math.cos(x) - 0.75 * math.sin(x)),
     lambda x: math.exp(0.5 * x) * (-0.25 * math.cos(x) - 1.375 * math.sin(x))),
    ("np_log_mix", H.np_log_mix,
     lambda x: 2 * x / (1 + x * x) - math.exp(-x) * (math.cos(x) + math.sin(x)),
     lambda x: (2 - 2 * x * x) / (1 + x * x) ** 2 + 2 * math.exp(-x) * math.sin(x),
     lambda x: (4 * x ** 3 - 12 * x) / (1 + x * x) ** 3
     + 2 * math.exp(-x) * (math.cos(x) - math.sin(x))),
    ("looped_power", H.looped_power,
     lambda x: 5 * x ** 4, lambda x: 20 * x ** 3, lambda x: 60 * x ** 2),
]


@pytest.mark.parametrize("name, f, d1, d2, d3", SCALAR, ids=[s[0] for s in SCALAR])
@pytest.mark.parametrize("x", [0.7, -1.3])
def test_grad_of_grad_and_third_derivative(name, f, d1, d2, d3, x):
    g = s2sad.grad(f)
    gg = s2sad.grad(g)
    ggg = s2sad.grad(gg)
    assert float(g(x)) == pytest.approx(d1(x), rel=1e-12, abs=1e-12)
    assert float(gg(x)) == pytest.approx(d2(x), rel=1e-10, abs=1e-12)
    assert float(ggg(x)) == pytest.approx(d3(x), rel=1e-9, abs=1e-10)
    # forward over reverse agrees
    assert float(tr.hessian(f)(x)) == pytest.approx(d2(x), rel=1e-10, abs=1e-12)
    # forward over forward over the generated jvp: d/dx of (f'(x) * 1)
    value, tt = tr.jvp(g, (x,), (1.0,))
    assert float(tt) == pytest.approx(d2(x), rel=1e-10, abs=1e-12)


@pytest.mark.parametrize("x", [0.8, -0.6])
def test_grad_of_grad_through_a_branch(x):
    gg = s2sad.grad(s2sad.grad(H.branchy))
    exact = 6 * x if x > 0 else -6 * x - math.sin(x)
    assert float(gg(x)) == pytest.approx(exact, rel=1e-10)
    ggg = s2sad.grad(gg)
    assert float(ggg(x)) == pytest.approx(6.0 if x > 0 else -6.0 - math.cos(x), rel=1e-10)


def R(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def test_hessian_numpy_quartic_closed_form():
    x, A = R(4), R(3, 4, seed=1)
    y = A @ x
    expected = 3 * A.T @ np.diag(y ** 2) @ A
    np.testing.assert_allclose(tr.hessian(H.np_quartic)(x, A), expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(tr.jacfwd(s2sad.grad(H.np_quartic))(x, A), expected,
                               rtol=1e-10, atol=1e-12)


def test_hessian_loop_over_elements_closed_form():
    x = R(4) * 0.7
    n = len(x)
    Hx = np.zeros((n, n))
    for k in range(n - 1):
        c = k + 1
        e = np.exp(-c * x[k] * x[k + 1])
        a, b = x[k], x[k + 1]
        Hx[k, k] += c * c * b * b * e
        Hx[k + 1, k + 1] += c * c * a * a * e
        Hx[k, k + 1] += (c * c * a * b - c) * e
        Hx[k + 1, k] += (c * c * a * b - c) * e
    np.testing.assert_allclose(tr.hessian(H.looped_chain)(x), Hx, rtol=1e-10, atol=1e-12)


def test_hessian_of_looped_layers_against_differences_of_gradients():
    x = R(3)
    Ws = [R(3, 3, seed=1) * 0.6, R(2, 3, seed=2) * 0.6]
    Hx = tr.hessian(H.looped_tanh_layers)(x, Ws)
    g = s2sad.grad(H.looped_tanh_layers)
    fd = fd_grad(lambda v: g(v, Ws), x)
    np.testing.assert_allclose(Hx, fd, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(Hx, Hx.T, rtol=1e-10, atol=1e-12)
