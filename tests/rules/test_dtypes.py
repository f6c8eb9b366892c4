"""dtypes end to end (issue 3, item 5).

* float32 inputs give float32 gradients (arithmetic, ufuncs, reductions, matmul, broadcasting with
  Python floats and float64 scalars), close to the float64 gradients;
* complex64 / complex128 follow DESIGN.md: the gradient of a real loss L is dL/dRe z + i dL/dIm z,
  checked against closed forms and against central differences on the real and imaginary parts;
* integer and boolean arrays are inactive: vjp returns None for them, grad with respect to one
  raises WrtError naming the argument.
"""
import numpy as np
import pytest

import s2sad
from s2sad.errors import WrtError
from s2sad.testing import check_grads, numerical_grad

RNG = np.random.default_rng(7)
X = RNG.uniform(0.5, 1.5, (3, 4))
W = RNG.uniform(-1, 1, (4, 2))
V = RNG.uniform(-1, 1, 4)

BUGS = {
    "B8": "bug B8: a complex constant `a + bj` / Python complex scalars taken for real: conj "
          "dropped, gradient conjugated",
    "B9": "bug B9: real operand times a complex constant: complex gradient for a real argument",
    "B15": "bug B15: a cast to an integer dtype (astype(int), asarray/array(dtype=int), "
           "sum(dtype=int)) keeps the derivative",
    "B10": "bug B10: .real / .imag of a Python complex scalar crash in the reverse sweep",
}


FIXED = ['B1', 'B10', 'B11', 'B12', 'B14', 'B15', 'B16', 'B2', 'B3', 'B4', 'B5', 'B6', 'B7', 'B8', 'B9']   # bugs fixed in s2sad since these tests were written


def xfail(bug):
    if bug in FIXED:
        return pytest.mark.skipif(False, reason="fixed")   # fixed: now runs as a plain test
    return pytest.mark.xfail(strict=True, reason=BUGS[bug])


# -- float32 --------------------------------------------------------------------------------------
def arith(x):
    return np.sum(x * x - 3.0 * x / (1.0 + x) + x ** 2.5)


def ufuncs(x):
    return np.sum(np.exp(-x) * np.sin(x) + np.log1p(x) * np.tanh(x) + np.sqrt(x) + np.arctan2(x, 1.0))


def reductions(x):
    return np.mean(x, axis=0).sum() + np.std(x) * np.max(x, axis=1).sum() + np.prod(x[0]) \
        + np.linalg.norm(x, axis=1).sum() + np.var(x, axis=1, ddof=1).sum()


def matmul(x, w):
    return np.sum(np.tanh(x @ w) ** 2) + np.trace(x.T @ x) * 0.1


def bcast_python_float(x, v):
    return np.sum((x - 0.5) * v * 2.0 + v[None, :] ** 2 / 3.0)


def bcast_f64_scalar(x):
    c = np.float64(1.5)
    return np.sum(x * c + np.float64(0.25) * x ** 2)


def bcast_f64_0d(x):
    return np.sum(x * np.array(2.0) + np.mean(x) * np.array([1.0, 2.0, 3.0, 4.0]))


def mixed_f32_f64(x, v64):
    return np.sum(x * v64) + np.sum(np.exp(x) @ v64)


def with_int_array(x, n):
    return np.sum(x * n + x[:, n % 4] ** 2)


def astype_roundtrip(x):
    y = x.astype(np.float64) * 3.0
    return np.sum(y.astype(x.dtype) ** 2)


def shape_ops(x):
    y = np.concatenate([x, x[::-1]], axis=0).reshape(4, 6).T
    return np.sum(np.stack([y, y * 2.0])[:, 1:, ::2] ** 2)


def linalg32(x):
    a = x[:, :3] + 3.0 * np.eye(3, dtype=x.dtype)
    return np.sum(np.linalg.solve(a, x[:, 3])) + np.log(np.abs(np.linalg.det(a))) \
        + np.sum(np.linalg.inv(a))


F32 = [(arith, (X,)), (ufuncs, (X,)), (reductions, (X,)), (matmul, (X, W)),
       (bcast_python_float, (X, V)), (bcast_f64_scalar, (X,)), (bcast_f64_0d, (X,)),
       (mixed_f32_f64, (X, V)), (with_int_array, (X, np.arange(4))), (astype_roundtrip, (X,)),
       (shape_ops, (X,)), (linalg32, (X,))]


def _f32(args, which):
    return tuple(a.astype(np.float32) if i in which and isinstance(a, np.ndarray) else a
                 for i, a in enumerate(args))


@pytest.mark.parametrize("f,args", F32, ids=[f.__name__ for f, _ in F32])
def test_float32_gradients(f, args):
    """float32 arrays in -> float32 gradients of the right shape, close to the float64 ones; the
    float64 gradient itself is checked against finite differences."""
    float_pos = tuple(i for i, a in enumerate(args)
                      if isinstance(a, np.ndarray) and a.dtype.kind == "f")
    check_grads(f, args, wrt=float_pos)
    # the first argument in float32, the others as given (mixed_f32_f64 keeps a float64 vector)
    which = {0} if f is mixed_f32_f64 else set(float_pos)
    a32 = _f32(args, which)
    g32 = s2sad.grad(f, wrt=float_pos)(*a32)
    g64 = s2sad.grad(f, wrt=float_pos)(*args)
    for i, ga, gb in zip(float_pos, g32, g64):
        assert isinstance(ga, np.ndarray), (i, type(ga))
        assert ga.dtype == a32[i].dtype, (f.__name__, i, ga.dtype, a32[i].dtype)
        assert ga.shape == args[i].shape
        np.testing.assert_allclose(ga, gb, rtol=3e-3, atol=3e-4 * np.max(np.abs(gb)),
                                   err_msg=f"{f.__name__}: argument {i}")


def test_float32_vjp_cotangent_and_value():
    """vjp on float32: the value is float32 (as NumPy computes it) and so is the pullback."""
    x = X.astype(np.float32)

    def f(x):
        return np.tanh(x) * 2.0 + x.sum(axis=0)

    value, pb = s2sad.vjp(f, x)
    assert value.dtype == np.float32
    (g,) = pb(np.ones_like(value))
    assert g.dtype == np.float32 and g.shape == x.shape


def test_float32_python_float_weak():
    """A Python float does not promote float32 (NEP 50), and the gradient stays float32."""
    x = X.astype(np.float32)

    def f(x, a):
        return np.sum(x * a + a)

    v, (gx, ga) = s2sad.value_and_grad(f, wrt=(0, 1))(x, 0.5)
    assert v.dtype == np.float32
    assert gx.dtype == np.float32
    assert isinstance(ga, float) or np.shape(ga) == ()
    np.testing.assert_allclose(ga, float(np.sum(x)) + x.size, rtol=1e-5)


def test_float32_numpy_scalar_input():
    """A np.float32 scalar argument gets a float32 gradient."""
    def f(a, x):
        return np.sum(np.sin(a * x))

    a = np.float32(0.7)
    g = s2sad.grad(f)(a, X.astype(np.float32))
    assert np.result_type(g) == np.float32, type(g)
    assert abs(float(g) - float(np.sum(np.cos(0.7 * X) * X))) < 1e-3


# -- float64 --------------------------------------------------------------------------------------
def test_float64_gradients_are_float64():
    for f, args in F32:
        float_pos = tuple(i for i, a in enumerate(args)
                          if isinstance(a, np.ndarray) and a.dtype.kind == "f")
        gs = s2sad.grad(f, wrt=float_pos)(*args)
        for i, g in zip(float_pos, gs):
            assert g.dtype == np.float64, (f.__name__, i, g.dtype)


# -- complex ---------------------------------------------------------------------------------------
Z = RNG.standard_normal((3, 2)) + 1j * RNG.standard_normal((3, 2))
Zw = RNG.standard_normal((3, 2)) + 1j * RNG.standard_normal((3, 2))


def abs2(z):
    return np.sum(np.abs(z) ** 2)


def real_inner(z, w):
    return np.sum(np.real(z * np.conj(w)))


def abs_exp(z):
    return np.abs(np.exp(z)).sum()


def complex_mix(z, w):
    return np.sum(np.abs(z @ w.T @ z + z.conj()) ** 2) + np.real(np.vdot(w, z)) + np.angle(z[0, 0])


def complex_ufuncs(z):
    return np.sum(np.abs(np.sin(z) * np.log(z) + np.sqrt(z) / (1.0 + z * z)))


def complex_reductions(z):
    return np.abs(np.prod(z, axis=0)).sum() + np.real(np.sum(z * z)) + np.var(z) \
        + np.abs(np.cumsum(z, axis=1)).sum()


def complex_linalg(z):
    a = z[:2, :2] + 3.0 * np.eye(2)
    return np.abs(np.linalg.det(a)) + np.real(np.trace(np.linalg.inv(a))) \
        + np.linalg.norm(a)


def complex_from_real(x):
    z = x[0] + 1j * x[1]
    return np.sum(np.abs(z * z + 1.0))


def complex_real_imag(z):
    return np.sum(np.real(z) ** 2 * np.imag(z)) + np.sum(z.real * z.imag)


COMPLEX = [(abs2, (Z,)), (real_inner, (Z, Zw)), (abs_exp, (Z,)), (complex_mix, (Z, Zw)),
           (complex_ufuncs, (Z + 2.0,)), (complex_reductions, (Z,)), (complex_linalg, (Z,)),
           (complex_from_real, (X,)), (complex_real_imag, (Z,))]


@pytest.mark.parametrize("f,args", COMPLEX, ids=[f.__name__ for f, _ in COMPLEX])
def test_complex128_against_differences(f, args):
    """check_grads perturbs real and imaginary parts (complex directions) and compares."""
    check_grads(f, args)


@pytest.mark.parametrize("f,args", COMPLEX[:4], ids=[f.__name__ for f, _ in COMPLEX[:4]])
def test_complex_convention_elementwise(f, args):
    """grad = dL/dRe z + i dL/dIm z, element by element (numerical_grad, both parts)."""
    g = s2sad.grad(f, wrt=tuple(range(len(args))))(*args)
    n = numerical_grad(f, args, wrt=tuple(range(len(args))))
    for a, b in zip(g, n):
        assert a.dtype == np.complex128
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-8)


def test_complex_closed_forms():
    # L = sum |z|^2: dL/dRe = 2 Re z, dL/dIm = 2 Im z -> 2 z
    np.testing.assert_allclose(s2sad.grad(abs2)(Z), 2 * Z, rtol=1e-12)
    # L = sum Re(z conj w) = sum(Re z Re w + Im z Im w): grad_z = w, grad_w = z
    gz, gw = s2sad.grad(real_inner, wrt=(0, 1))(Z, Zw)
    np.testing.assert_allclose(gz, Zw, rtol=1e-12)
    np.testing.assert_allclose(gw, Z, rtol=1e-12)
    # L = sum |exp z| = sum exp(Re z): grad = exp(Re z), imaginary part 0
    g = s2sad.grad(abs_exp)(Z)
    np.testing.assert_allclose(g.real, np.exp(Z.real), rtol=1e-12)
    np.testing.assert_allclose(g.imag, 0.0, atol=1e-12)


def test_complex64():
    z = Z.astype(np.complex64)
    w = Zw.astype(np.complex64)
    for f, args in [(abs2, (z,)), (real_inner, (z, w)), (abs_exp, (z,))]:
        gs = s2sad.grad(f, wrt=tuple(range(len(args))))(*args)
        g64 = s2sad.grad(f, wrt=tuple(range(len(args))))(*(a.astype(np.complex128) for a in args))
        for a, ga, gb in zip(args, gs, g64):
            assert ga.dtype == np.complex64, (f.__name__, ga.dtype)
            assert ga.shape == a.shape
            np.testing.assert_allclose(ga, gb, rtol=1e-4, atol=1e-5)


def test_complex_vjp_of_complex_output():
    """vjp of a holomorphic map: the pullback of w is w * conj(f'(z))."""
    value, pb = s2sad.vjp(np.exp.__call__ if False else _cexp, Z)
    w = Zw
    (g,) = pb(w)
    np.testing.assert_allclose(g, w * np.conj(np.exp(Z)), rtol=1e-12)


def _cexp(z):
    return np.exp(z)


@xfail("B9")
def test_real_input_complex_output_vjp_is_real():
    """A real input through complex intermediates: the gradient of a real array is real."""
    def f(x):
        return np.exp(1j * x) * 2.0

    value, pb = s2sad.vjp(f, V)
    (g,) = pb(np.ones_like(value) * (0.3 - 0.4j))
    assert g.dtype == np.float64, g.dtype
    np.testing.assert_allclose(g, np.real(np.conj(1j * value) * (0.3 - 0.4j)), rtol=1e-12)


def cconst_times_active(z):
    return np.sum(np.real(z * (0.3 + 0.7j)))


def cconst_divide(z):
    return np.sum(np.imag(z / (0.3 - 0.7j)))


def cconst_named(z):
    c = complex(0.3, 0.7)
    return np.sum(np.real(z * c))


def cconst_1j(z):
    return np.sum(np.real(1j * z))


@pytest.mark.parametrize("f", [pytest.param(cconst_times_active, marks=xfail("B8")),
                               pytest.param(cconst_divide, marks=xfail("B8")),
                               pytest.param(cconst_named, marks=xfail("B8")), cconst_1j])
def test_complex_constant_times_active(f):
    check_grads(f, (Z,))


def real_through_complex(x):
    return np.sum(np.real(np.exp(1j * x)))


def real_through_complex2(z):
    return np.sum(np.abs(z + np.exp(1j * np.real(z))) ** 2)


@pytest.mark.parametrize("f,args", [
    pytest.param(real_through_complex, (V,), marks=xfail("B9")),
    pytest.param(real_through_complex2, (Z,), marks=xfail("B9")),
])
def test_real_input_complex_intermediate(f, args):
    check_grads(f, args)


def py_complex_mul(a, b):
    return abs(a * b) + (a / b).imag


def py_complex_real(a, b):
    return (a * b).real


@pytest.mark.parametrize("f", [pytest.param(py_complex_mul, marks=xfail("B8")),
                               pytest.param(py_complex_real, marks=xfail("B10"))])
def test_python_complex_scalars(f):
    check_grads(f, (complex(0.3, 0.7), complex(-0.2, 0.5)))


# -- integers and booleans are inactive -------------------------------------------------------------
def use_int(x, n, m):
    return np.sum(x[n] * 2.0 + m * x[0])


def test_int_and_bool_arrays_get_none_from_vjp():
    n = np.array([0, 2, 2])
    m = np.array([True, False, True, True])
    value, pb = s2sad.vjp(use_int, X, n, m)
    gx, gn, gm = pb(1.0)
    assert gn is None and gm is None
    assert gx.dtype == np.float64 and gx.shape == X.shape
    check_grads(use_int, (X, n, m), wrt=0)


def test_python_int_and_bool_get_none_from_vjp():
    def f(x, k, flag):
        return np.sum(x * k) if flag else np.sum(x)

    value, pb = s2sad.vjp(f, X, 3, True)
    gx, gk, gf = pb(1.0)
    assert gk is None and gf is None
    np.testing.assert_allclose(gx, 3.0)


@pytest.mark.parametrize("bad,what", [(np.arange(4), "int64"), (np.ones(4, dtype=bool), "bool"),
                                      (np.arange(4, dtype=np.int32), "int32"), (3, "int")])
def test_grad_wrt_int_or_bool_raises(bad, what):
    def f(x, n):
        return np.sum(x * n)

    with pytest.raises(WrtError) as ei:
        s2sad.grad(f, wrt=1)(V, bad)
    msg = str(ei.value)
    assert "'n'" in msg and what in msg and "carries no derivative" in msg, msg
    assert "test_dtypes.py" in msg, msg


def test_argmax_index_is_inactive():
    def f(x):
        k = np.argmax(x, axis=1)
        return np.sum(x[np.arange(3), k] * k)

    check_grads(f, (X,))


def cast_astype(x):
    r = (x * 10).astype(np.int64)
    return np.sum(r * x)


def cast_astype_int(x):
    return np.sum(x.astype(int) * x)


def cast_asarray(x):
    return np.sum(np.asarray(x * 10, dtype=np.int64) * x)


def cast_array(x):
    return np.sum(np.array(x * 10, dtype=int) * x)


def cast_sum_dtype(x):
    return np.sum(np.sum(x, dtype=np.int64) * x)


def cast_bool(x):
    return np.sum((x > 1.0).astype(np.float64) * x)


@pytest.mark.parametrize("f", [pytest.param(f, marks=xfail("B15")) for f in
                               (cast_astype, cast_astype_int, cast_asarray, cast_array,
                                cast_sum_dtype)] + [cast_bool])
def test_int_casts_are_inactive(f):
    """An integer array computed from an active value is piecewise constant: no derivative."""
    check_grads(f, (X,))
