"""s2sad.grad / value_and_grad called inside a function that is itself differentiated, as in JAX
and autograd (issue 10): both modes, against central differences."""
import numpy as np
import pytest

import s2sad
from s2sad.testing import check_grads

rng = np.random.default_rng(11)
X = rng.standard_normal(3)
TH = rng.standard_normal(3)


def energy(x):
    return np.sum(x ** 3) + np.sum(np.sin(x))


def force_work(x):
    force = -s2sad.grad(energy)(x)
    return np.sum(force * x)


def value_and_force(x):
    e, g = s2sad.value_and_grad(energy)(x)
    return e * 2.0 + np.sum(g * g)


def grad_of_grad_user(x):
    return np.sum(denergy(x) * x)


def denergy(x):
    return s2sad.grad(energy)(x)


def closure_over_data(x, th):
    f = lambda y: np.sum(np.sin(y * th))   # noqa: E731
    return np.sum(s2sad.grad(f)(x) * x)


def grad_wrt_second(x, th):
    g = s2sad.grad(lambda a, b: np.sum(a * a * b), wrt=1)(x, th)
    return np.sum(g * th)


@pytest.mark.parametrize("f", [force_work, value_and_force, grad_of_grad_user],
                         ids=lambda f: f.__name__)
@pytest.mark.parametrize("mode", ["rev", "fwd"])
def test_nested_grad(f, mode):
    check_grads(f, (X,), modes=(mode,))


@pytest.mark.parametrize("f", [closure_over_data, grad_wrt_second], ids=lambda f: f.__name__)
@pytest.mark.parametrize("mode", ["rev", "fwd"])
def test_nested_grad_two_args(f, mode):
    check_grads(f, (X, TH), wrt=(0, 1), modes=(mode,))


def test_grad_of_a_function_returning_grad():
    h = s2sad.grad(lambda x: np.sum(denergy(x)))
    want = 6.0 * X - np.sin(X)
    np.testing.assert_allclose(h(X), want, rtol=1e-10)


def jvp_inside(x, th):
    v, t = s2sad.jvp(lambda y: np.sin(y) * th, (x,), (th * 2.0,))
    return np.sum(v * t)


def jvp_inside_module_fn(x, th):
    v, t = s2sad.jvp(energy, (x,), (th,))
    return v * t


@pytest.mark.parametrize("f", [jvp_inside, jvp_inside_module_fn], ids=lambda f: f.__name__)
@pytest.mark.parametrize("mode", ["rev", "fwd"])
def test_nested_jvp(f, mode):
    check_grads(f, (X, TH), wrt=(0, 1), modes=(mode,))
