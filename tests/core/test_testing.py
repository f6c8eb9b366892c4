"""Point 9 of issue 2: s2sad.testing.check_grads itself -- it passes on right derivatives and, which
matters more, fails with a clear message on wrong ones."""
import dataclasses

import numpy as np
import pytest

import s2sad
import s2sad.testing as T
from s2sad.testing import check_grads, numerical_grad
from core_util import randn


def quad(x, A):
    return np.sum(x * (A @ x))


def vec(x):
    return np.sin(x) * x[0]


def tree_fn(p, scale):
    return np.sum(p["w"] * p["b"][0]) * scale + p["b"][1] ** 2


def cplx(z):
    return np.sum(np.abs(z) ** 2 + np.real(z) * np.imag(z))


def test_passes_on_scalar_array_tree_and_complex_functions():
    check_grads(quad, (randn(3), randn(3, 3, seed=1)))
    check_grads(vec, (randn(4),))
    check_grads(tree_fn, ({"w": randn(2), "b": (randn(2, seed=1), 0.3)}, 1.7))
    check_grads(cplx, (randn(3) + 1j * randn(3, seed=1),))


def test_numerical_grad_matches_analytic():
    x, A = randn(3), randn(3, 3, seed=1)
    np.testing.assert_allclose(numerical_grad(quad, (x, A)), (A + A.T) @ x, rtol=1e-7)
    gx, gA = numerical_grad(quad, (x, A), wrt=(0, 1))
    np.testing.assert_allclose(gA, np.outer(x, x), rtol=1e-7)
    z = randn(3) + 1j * randn(3, seed=1)
    # d/dRe + i d/dIm of |z|^2 + Re z Im z
    want = 2 * z + (z.imag + 1j * z.real)
    np.testing.assert_allclose(numerical_grad(cplx, (z,)), want, rtol=1e-7)


@pytest.fixture
def wrong_vjp(monkeypatch):
    """Make s2sad.vjp return gradients that are 1% off."""
    real = s2sad.vjp

    def off(f, *args):
        v, pb = real(f, *args)
        return v, lambda ct: tuple(_scale(g, 1.01) for g in pb(ct))
    monkeypatch.setattr(s2sad, "vjp", off)


def _scale(g, s):
    if g is None:
        return None
    if isinstance(g, dict):
        return {k: _scale(v, s) for k, v in g.items()}
    if isinstance(g, (tuple, list)):
        return type(g)(_scale(v, s) for v in g)
    return g * s


def test_fails_on_a_wrong_vjp_naming_the_argument(wrong_vjp):
    with pytest.raises(AssertionError) as ei:
        check_grads(quad, (randn(3), randn(3, 3, seed=1)), wrt=1)
    msg = str(ei.value)
    assert "argument 1 ('A')" in msg
    assert "expected" in msg and "got" in msg


def test_fails_inside_a_pytree_naming_the_leaf(wrong_vjp):
    with pytest.raises(AssertionError) as ei:
        check_grads(tree_fn, ({"w": randn(2), "b": (randn(2, seed=1), 0.3)}, 1.7), wrt=0)
    assert "argument 0 ('p')['w']" in str(ei.value)


def test_fails_on_a_wrong_grad(monkeypatch):
    real = s2sad.value_and_grad

    def off(f, wrt=0):
        vg = real(f, wrt)
        return lambda *a: (vg(*a)[0], vg(*a)[1] * 0.5)
    monkeypatch.setattr(s2sad, "value_and_grad", off)
    with pytest.raises(AssertionError) as ei:
        check_grads(quad, (randn(3), randn(3, 3, seed=1)), wrt=0)
    assert "grad" in str(ei.value)


def test_fails_on_a_wrong_shape(monkeypatch):
    real = s2sad.vjp

    def bad_shape(f, *args):
        v, pb = real(f, *args)
        return v, lambda ct: tuple(None if g is None else np.append(g, 0.0) for g in pb(ct))
    monkeypatch.setattr(s2sad, "vjp", bad_shape)
    with pytest.raises(AssertionError) as ei:
        check_grads(vec, (randn(4),))
    assert "shape" in str(ei.value)


def test_fails_on_a_wrong_value(monkeypatch):
    real = s2sad.vjp
    monkeypatch.setattr(s2sad, "vjp", lambda f, *a: (real(f, *a)[0] + 1.0, real(f, *a)[1]))
    with pytest.raises(AssertionError) as ei:
        check_grads(quad, (randn(3), randn(3, 3, seed=1)))
    assert "value" in str(ei.value)


def test_wrong_complex_convention_is_caught(monkeypatch):
    real = s2sad.vjp

    def conj(f, *args):
        v, pb = real(f, *args)
        return v, lambda ct: tuple(None if g is None else np.conj(g) for g in pb(ct))
    monkeypatch.setattr(s2sad, "vjp", conj)
    with pytest.raises(AssertionError):
        check_grads(cplx, (randn(3) + 1j * randn(3, seed=1),))


def test_wrt_by_name_and_errors():
    check_grads(quad, (randn(3), randn(3, 3, seed=1)), wrt="x")
    with pytest.raises(ValueError):
        check_grads(quad, (randn(3), randn(3, 3, seed=1)), wrt="nope")
    with pytest.raises(ValueError):
        check_grads(quad, (np.arange(3), randn(3, 3, seed=1)), wrt=0)


def test_forward_mode_hook():
    try:
        from s2sad import transforms
        transforms.jvp
    except (ImportError, AttributeError):
        with pytest.raises(NotImplementedError, match="forward mode"):
            check_grads(quad, (randn(3), randn(3, 3, seed=1)), modes=("fwd",))
        return
    check_grads(quad, (randn(3), randn(3, 3, seed=1)), modes=("rev", "fwd"))


def test_unknown_mode():
    with pytest.raises(ValueError):
        check_grads(quad, (randn(3), randn(3, 3, seed=1)), modes=("sideways",))


def test_is_documented():
    assert "dot-product" in T.__doc__
    assert "wrt" in check_grads.__doc__ and "AssertionError" in check_grads.__doc__


@dataclasses.dataclass
class _Model:
    w: np.ndarray
    b: float
    name: str = "m"


def _model_loss(m, x):
    return float(np.sum(np.tanh(x @ m.w + m.b) ** 2))


def test_dataclass_arguments_in_both_modes():
    """A dataclass argument is a pytree: each float field is perturbed and checked, and
    forward mode gets its tangent as a dict of field tangents."""
    rng = np.random.default_rng(4)
    m = _Model(rng.standard_normal(3), 0.2)
    check_grads(_model_loss, (m, rng.standard_normal((4, 3))), modes=("rev", "fwd"))


def test_dataclass_argument_mismatch_is_reported_by_field():
    m = _Model(np.ones(2), 0.5)

    def loss(m):
        return float(np.sum(m.w)) * m.b

    bad = dataclasses.replace(m)
    try:
        T._dot_test(loss, (m,), [0], [_Model(np.zeros(2), 0.0)], 1.0, eps=1e-6, rtol=1e-6,
                    atol=1e-9, rng=np.random.default_rng(0), n_dirs=1, what="reverse")
    except AssertionError as e:
        assert "argument 0 ('m').w" in str(e)
    else:
        raise AssertionError("a zero gradient passed the check")
    assert bad == m
