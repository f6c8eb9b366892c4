"""A real input whose values meet complex arrays gets a real gradient: the real part of the
complex adjoint summed over its broadcast (``x + c``, x a Python float, c a complex array).
Before, a Python float's gradient came back as a NumPy complex number with an imaginary part
(``runtime.real_like`` let NumPy complex scalars through): a silently wrong type and value for
anyone who steps ``x -= lr * g``."""
import warnings

import numpy as np
import pytest

import s2sad
from s2sad import runtime as rt
from s2sad.rules import adjoints as adj
from s2sad.testing import check_grads

C = np.array([1 + 2j, 3 - 1j, 0.5j])


def shifted_energy(x):
    return np.sum(np.abs(x + C) ** 2)


def want(x):
    return 2 * np.sum(np.real(np.asarray(x)[..., None] + C), axis=-1)


@pytest.mark.parametrize("x", [0.3, np.float64(0.3), np.float32(0.3), np.array(0.3),
                               np.array([0.3, 0.1, -0.2])], ids=["float", "float64", "float32",
                                                                 "0-d", "1-d"])
def test_gradient_of_a_real_input_is_real(x):
    g = s2sad.grad(shifted_energy)(x)
    assert np.isrealobj(g)
    want_g = want(x) if np.ndim(x) == 0 else 2 * np.real(x + C)
    np.testing.assert_allclose(g, want_g, rtol=1e-6)
    if not isinstance(x, np.float32):
        check_grads(shifted_energy, (x,))


def test_value_and_grad_and_compiled_mode_agree():
    v, g = s2sad.value_and_grad(shifted_energy)(0.3)
    assert v == pytest.approx(shifted_energy(0.3)) and type(g) is not complex
    assert np.isrealobj(g) and g == pytest.approx(9.8)
    pytest.importorskip("numba")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")            # (a fallback to Python mode is fine here)
        gj = s2sad.grad(shifted_energy, jit=True)(0.3)
    assert np.isrealobj(gj) and gj == pytest.approx(9.8)


def test_unbroadcast_of_one_repeated_value_to_a_number():
    """A full reduction's adjoint (stride 0) summed to a number is value * count, without a pass
    over its elements; the same number as the pass up to rounding, and real for a real target."""
    for dt, n in ((np.float64, 100_000), (np.float32, 1000), (np.float64, 1)):
        x = np.ones(n, dt)
        v = adj.broadcast(dt(0.1), x)
        got = rt.unbroadcast(v, 2.0)
        assert type(got) is type(np.asarray(v).sum())
        np.testing.assert_allclose(got, np.asarray(v).copy().sum(), rtol=1e-6 if dt is
                                   np.float32 else 1e-12)
    vc = adj.broadcast(np.complex128(0.1 + 1j), np.ones(50_000, complex))
    got = rt.unbroadcast(vc, 2.0)
    assert np.isrealobj(got) and got == pytest.approx(5000.0)


def test_materialize_keeps_real_inputs_real():
    """The last guard before the user: a complex adjoint for a real input is its real part."""
    from s2sad.runtime.values import materialize
    assert materialize(np.complex128(1 + 2j), 0.3) == 1.0
    assert type(materialize(1 + 2j, 0.3)) is float
    g = materialize(np.array([1 + 2j, 3 - 1j]), np.zeros(2))
    assert np.isrealobj(g) and g.tolist() == [1.0, 3.0]
    g32 = materialize(np.array([1 + 2j], np.complex64), np.zeros(1, np.float32))
    assert np.isrealobj(g32)
    assert materialize(np.complex128(1 + 2j), 0.3 + 0j) == 1 + 2j          # complex input
    assert materialize(np.array([1 + 2j]), np.zeros(1, complex))[0] == 1 + 2j


def imag_of_scaled_element(x):
    return (x[2] * (1 + 1j)).imag


def real_of_scaled_element(x):
    return (x[2] * (1 + 1j)).real


def imag_of_built_complex(x):
    return (complex(x[0], 1.0) * x[1]).imag


@pytest.mark.parametrize("f", [imag_of_scaled_element, real_of_scaled_element,
                               imag_of_built_complex])
def test_numpy_float_element_times_a_complex_number(f):
    """``x[2]`` is a NumPy float (a subclass of float): its product with a Python complex is a
    Python complex, whose adjoint reached ``unbroadcast`` (asarray of a complex in float64) and
    ``imag_adjoint`` (``.astype`` on a Python complex) and crashed inside s2sad."""
    x = np.random.default_rng(1).standard_normal(6)
    g = s2sad.grad(f)(x)
    assert np.isrealobj(g)
    check_grads(f, (x,), modes=("rev", "fwd"))


# np.sign is piecewise constant on real values; on complex z it is z / |z|, which moves with z.
# s2sad's rule for it is the piecewise constant's: a complex argument that carries a derivative
# is refused where it runs (the gradient was 0 without a word before), a real one is left alone.
def sign_of_complex(x):
    return np.sum(np.real(np.sign(x + 2j)))


def sign_of_complex_kept(x):
    z = x * (1 + 1j) + 1j
    return np.sum(np.imag(np.sign(z) * z))


def sign_of_real(x):
    return np.sum(np.sign(x) * x ** 2)


@pytest.mark.parametrize("f", [sign_of_complex, sign_of_complex_kept])
@pytest.mark.parametrize("mode", ["rev", "fwd"])
def test_sign_of_a_complex_value_that_carries_a_derivative_is_refused(f, mode):
    from s2sad import transforms
    x = np.array([0.3, -0.7, 1.1])
    with pytest.raises(s2sad.UnsupportedSyntaxError) as e:
        if mode == "rev":
            s2sad.grad(f)(x)
        else:
            transforms.jvp(f, (x,), (np.ones(3),))
    msg = str(e.value)
    assert "test_real_input_complex_values.py:" in msg and "sign of a complex value" in msg
    assert "np.abs" in msg


def test_sign_of_real_values_is_left_alone_and_unguarded():
    x = np.array([0.3, -0.7, 1.1])
    np.testing.assert_allclose(s2sad.grad(sign_of_real)(x), 2 * np.abs(x))
    assert "real_only" not in s2sad.differentiate(sign_of_real).adjoint_source(x)
