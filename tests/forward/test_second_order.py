"""Second order: Hessians of known functions against closed forms, Hessian-vector products
(forward over the generated reverse sweep) against finite differences of gradients, and
derivatives of the generated gradient code itself."""
import numpy as np
import pytest

import s2sad
from s2sad import transforms as tr

import programs as P
from fwdcheck import fd_grad


def R(*shape, seed=0):
    r = np.random.default_rng(seed).standard_normal(shape)
    return float(r) if shape == () else r


def test_hessian_quadratic_form():
    x, A = R(4), R(4, 4, seed=1)
    H = tr.hessian(P.quad)(x, A)
    assert H.shape == (4, 4)
    np.testing.assert_allclose(H, A + A.T, rtol=1e-12, atol=1e-12)


def rosen_hessian(x):
    n = len(x)
    H = np.zeros((n, n))
    for i in range(n - 1):
        H[i, i] += 1200 * x[i] ** 2 - 400 * x[i + 1] + 2
        H[i, i + 1] -= 400 * x[i]
        H[i + 1, i] -= 400 * x[i]
        H[i + 1, i + 1] += 200
    return H


@pytest.mark.parametrize("seed", [0, 1])
def test_hessian_rosenbrock(seed):
    x = R(5, seed=seed)
    np.testing.assert_allclose(tr.hessian(P.rosen)(x), rosen_hessian(x), rtol=1e-10, atol=1e-9)


def test_hessian_logistic_loss():
    w, X, y = R(3), R(6, 3, seed=1), np.sign(R(6, seed=2))
    s = 1 / (1 + np.exp(-y * (X @ w)))
    H = tr.hessian(P.logistic)(w, X, y)
    np.testing.assert_allclose(H, (X.T * (s * (1 - s))) @ X, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("x", [0.7, -1.3, 2.1])
def test_second_derivative_scalar(x):
    g = s2sad.grad(P.scal)
    fd = (g(x + 1e-6) - g(x - 1e-6)) / 2e-6
    assert tr.hvp(P.scal)(x, 1.0) == pytest.approx(fd, rel=1e-6)
    exact = (-np.sin(x) * x ** 3 + 6 * x ** 2 * np.cos(x) + 6 * x * np.sin(x)
             + (4 * x * x - 2) * np.exp(-x * x))
    assert tr.hessian(P.scal)(x) == pytest.approx(exact, rel=1e-10)


@pytest.mark.parametrize("name, f, make", [
    ("looped (tape stacks)", P.looped, lambda: (R(3) * 0.3,)),
    ("looped big branch", P.looped, lambda: (R(3) * 2.0,)),
    ("calls in loop", P.looped_calls, lambda: (R(3), R(3, seed=1))),
    ("softplus_mlp", P.softplus_mlp, lambda: (R(4, 3), R(3, seed=1))),
    ("numpy branches", P.branches, lambda: (R(4), 0.5)),
])
def test_hessian_against_finite_differences_of_gradients(name, f, make):
    args = make()
    g = s2sad.grad(f)
    H = tr.hessian(f)(*args)
    fd = fd_grad(lambda x: g(x, *args[1:]), args[0])
    np.testing.assert_allclose(H, fd, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(H, np.swapaxes(H.reshape(H.shape), 0, -1) if H.ndim == 2 else H,
                               rtol=1e-8, atol=1e-8)


def test_hvp_matches_hessian_times_vector():
    x = R(5)
    v = R(5, seed=9)
    np.testing.assert_allclose(tr.hvp(P.rosen)(x, v), rosen_hessian(x) @ v, rtol=1e-10, atol=1e-9)


def test_grad_function_is_readable_generated_code():
    g = tr.grad_function(P.scal, 0, 0.5)
    assert g.__module__.startswith("s2sad_generated")
    assert g(0.5) == pytest.approx(s2sad.grad(P.scal)(0.5))
    import inspect
    src = inspect.getsource(g)
    assert "scal__fwd(x)" in src and "scal__bwd(_tape, 1.0)" in src


def test_generated_sweeps_are_readable_by_the_frontend():
    from s2sad.frontend.source import FunctionSource
    d = s2sad.cache.reverse_derivative(P.looped, (True,), ("a",))
    src = FunctionSource(d.bwd)
    assert src.node.name == "looped__bwd"


def test_grad_of_grad_reverse_over_reverse():
    # reverse mode differentiates the generated reverse sweeps (grad_function) again
    g = tr.grad_function(P.scal, 0, 0.7)
    gg = s2sad.grad(g)
    expected = tr.hessian(P.scal)(0.7)
    assert gg(0.7) == pytest.approx(expected, rel=1e-10)
    assert s2sad.grad(s2sad.grad(P.scal))(0.7) == pytest.approx(expected, rel=1e-10)


def test_forward_over_forward_second_derivative():
    # the generated f__jvp is itself Python code s2sad can differentiate forward again
    from s2sad.cache import forward_derivative
    dv = forward_derivative(P.poly, (True,), ("f",))
    # d/dx of the tangent (9x^2 - 2) * t at t = 1 is 18 x
    value, tt = tr.jvp(dv.jvp, (1.5, 1.0), (1.0, 0.0))
    assert value[1] == pytest.approx(9 * 1.5 ** 2 - 2)
    assert tt[1] == pytest.approx(18 * 1.5)
    src = tr.forward_source(dv.jvp, 0, 1.5, 1.0)
    assert "_d_d_x" in src or "_d2_x" in src or "_d_x" in src


def _dict_loss(p):
    return np.sum(p["a"] ** 2) + np.sum(p["b"] * p["a"][:2])


def test_jacobian_and_hessian_of_a_dict_argument_are_refused_clearly():
    """Jacobians and Hessians are arrays over array inputs; a dict argument gets a WrtError that
    says what to use instead (it failed deep inside NumPy before)."""
    p = {"a": np.ones(3), "b": np.ones(2)}
    for make in (s2sad.hessian, s2sad.jacobian, s2sad.jacfwd, s2sad.jacrev):
        with pytest.raises(s2sad.errors.WrtError, match="float or array"):
            make(_dict_loss)(p)


def _complex_cumprod(z):
    return np.cumprod(z * 0.5 + 1.0)


def test_forward_mode_from_adjoint_for_complex_outputs():
    """np.cumprod has no tangent template: its tangent is recovered from its adjoint, along 1 and
    i for each complex output element (before, only the real direction, with a ComplexWarning)."""
    from s2sad.testing import check_grads
    rng = np.random.default_rng(3)
    z = rng.standard_normal(4) + 1j * rng.standard_normal(4)
    check_grads(_complex_cumprod, (z,), modes=("fwd",))
    check_grads(_complex_cumprod, (z.real.copy(),), modes=("fwd",))
