"""jit=True fuses runs of elementwise array statements into one loop (codegen/jit_fuse.py): the
fused derivative gives Python mode's numbers (to 1e-12) and the finite differences', whichever
branch (the loop, or the original statements when shapes differ) runs."""
import math

import numpy as np
import pytest

import s2sad

numba = pytest.importorskip("numba")

LOG_2PI = math.log(2 * math.pi)


def logdens(theta, x):
    mu = 1.0 + math.exp(theta[0])
    sigma = 0.1 + math.exp(theta[1])
    lx = np.log(x)
    loglik = np.sum(-lx - math.log(sigma) - 0.5 * LOG_2PI - (lx - mu) ** 2 / (2 * sigma ** 2))
    return loglik - 0.5 * mu ** 2 + sigma


def mlp(W, X, Y):
    H = np.tanh(W @ X)
    Z = H * (0 <= H) - Y
    return np.sum(Z ** 2) + np.sum(np.exp(-H) * Y)


def mixed(a, b):
    return np.sum(np.exp(a) * np.sin(b) + a * a)


def ratio_sum(x, c):
    return np.sum(np.sin(x) / c + x * x)


def _grads(f, args, wrt, jit):
    v, g = s2sad.value_and_grad(f, wrt=wrt, jit=jit)(*args)
    return v, (g if isinstance(g, tuple) else (g,))


def _close(a, b, tol=1e-12):
    a, b = np.asarray(a, float), np.asarray(b, float)
    assert a.shape == b.shape
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def _fd(f, args, wrt, grads, seed=0, eps=1e-6):
    """Central differences along a random direction of each argument in ``wrt``."""
    rng = np.random.default_rng(seed)
    for k, g in zip(wrt, grads):
        d = rng.standard_normal(np.shape(args[k]))
        up = list(args)
        dn = list(args)
        up[k] = args[k] + eps * d
        dn[k] = args[k] - eps * d
        fd = (f(*up) - f(*dn)) / (2 * eps)
        assert abs(fd - np.sum(g * d)) <= 1e-5 * (1 + abs(fd)), (k, fd, np.sum(g * d))


def test_log_density_forward_and_reverse_fuse_into_one_loop():
    rng = np.random.default_rng(1)
    args = (rng.standard_normal(2), rng.lognormal(1.5, 0.5, 1000))
    src = s2sad.differentiate(logdens, wrt=0, jit=True).adjoint_source(*args)
    # the log, the chain after it, the sum and the reverse sweep's array statements: one loop
    assert src.count("for _i in range(") == 1
    assert "fused into one loop" in src and "np.log(_f_x[_i])" in src
    assert "_acc1 += " in src
    v0, g0 = _grads(logdens, args, 0, False)
    v1, g1 = _grads(logdens, args, 0, True)
    _close(v0, v1)
    _close(g0[0], g1[0])
    _fd(logdens, args, (0,), g1)


def test_mlp_chains_around_matrix_products():
    rng = np.random.default_rng(2)
    args = (rng.standard_normal((6, 5)), rng.standard_normal((5, 7)), rng.standard_normal((6, 7)))
    src = s2sad.differentiate(mlp, wrt=(0, 1, 2), jit=True).adjoint_source(*args)
    assert "fused into one loop" in src
    v0, g0 = _grads(mlp, args, (0, 1, 2), False)
    v1, g1 = _grads(mlp, args, (0, 1, 2), True)
    _close(v0, v1)
    for a, b in zip(g0, g1):
        _close(a, b)
    _fd(mlp, args, (0, 1, 2), g1)


@pytest.mark.parametrize("shapes", [((3, 4), (3, 4)), ((3, 1), (1, 4)), ((1, 4), (3, 4))])
def test_shapes_that_differ_take_the_original_statements(shapes):
    # same ndim, so the loop is written; shapes that broadcast run the unfused branch
    rng = np.random.default_rng(3)
    args = tuple(rng.standard_normal(s) for s in shapes)
    src = s2sad.differentiate(mixed, wrt=(0, 1), jit=True).adjoint_source(*args)
    assert "fused into one loop" in src and "else:" in src
    v0, g0 = _grads(mixed, args, (0, 1), False)
    v1, g1 = _grads(mixed, args, (0, 1), True)
    _close(v0, v1)
    for a, b in zip(g0, g1):
        _close(a, b)
    _fd(mixed, args, (0, 1), g1)


def test_non_contiguous_arguments():
    rng = np.random.default_rng(4)
    a = rng.standard_normal((5, 3)).T            # (Fortran order)
    b = rng.standard_normal((6, 6))[::2, 1:]
    v0, g0 = _grads(mixed, (a, b), (0, 1), False)
    v1, g1 = _grads(mixed, (a, b), (0, 1), True)
    _close(v0, v1)
    for x, y in zip(g0, g1):
        _close(x, y)


def test_division_by_zero_in_the_loop_is_numpys():
    # a zero divisor gives inf as NumPy's arrays do, not Python's ZeroDivisionError
    x = np.array([0.5, -1.0, 2.0])
    with np.errstate(divide="ignore", invalid="ignore"):
        v0, g0 = _grads(ratio_sum, (x, 0.0), 0, False)
        v1, g1 = _grads(ratio_sum, (x, 0.0), 0, True)
    assert np.all(np.isinf(g1[0]))
    np.testing.assert_array_equal(g0[0], g1[0])
    assert np.isnan(v0) == np.isnan(v1) and (np.isnan(v0) or v0 == v1)


def test_fusion_can_be_switched_off(monkeypatch):
    monkeypatch.setenv("S2SAD_JIT_FUSE", "0")
    rng = np.random.default_rng(5)
    args = (rng.standard_normal(2), rng.lognormal(1.5, 0.5, 50))
    def unfused(theta, x):        # (a function of its own: derivatives are cached per function)
        return np.sum(np.exp(x) * theta[0] - x)

    src = s2sad.differentiate(unfused, wrt=0, jit=True).adjoint_source(*args)
    assert "for _i in range(" not in src and "np.exp(x)" in src
