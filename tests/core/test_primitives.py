"""Point 7 of issue 2: the first primitives, end to end through generated code, against central
differences on random float64 inputs."""
import math
import re

import numpy as np
import pytest

import s2sad
from core_util import check_grads, positive, randn


# -- Python floats -------------------------------------------------------------------------------
def float_arith(x, y):
    a = x + y
    b = x - y * 2.5
    c = x * y
    d = x / y
    e = -x + (+y)
    f = x ** 3 + y ** 2.0 + 2.0 ** x
    g = x ** y
    return a * b + c * d + e * f - g


def test_float_arithmetic():
    check_grads(float_arith, (positive(seed=1), positive(seed=2)))


def test_float_arithmetic_grad_is_a_float():
    gx, gy = s2sad.grad(float_arith, wrt=(0, 1))(1.3, 0.7)
    assert type(gx) is float and type(gy) is float


def int_mixing(x, n):
    return x * n + n / x - n ** 2 * x + 3 * x ** n


def test_int_and_float_mixing():
    check_grads(int_mixing, (0.8, 3), wrt=0)


def aug_assign(x, y):
    s = x
    s += y
    s *= x
    s -= y * 0.5
    s /= 1.5 + y * y
    s **= 2
    return s


def test_augmented_assignment():
    check_grads(aug_assign, (0.6, -1.1))


def comparisons(x, y):
    s = 0.0
    if x < y:
        s = s + x
    if x <= y:
        s = s + 2.0 * y
    if x > y:
        s = s + x * y
    if x >= y:
        s = s - y
    if x == y:
        s = s + 100.0 * x
    if x != y:
        s = s + x * x
    return s


@pytest.mark.parametrize("x, y", [(0.3, 1.1), (1.1, 0.3)])
def test_comparisons_route_the_gradient(x, y):
    check_grads(comparisons, (x, y))


def floor_mod(x):
    return (x // 1.0) * x + x % 1.0


def test_floordiv_and_mod():
    check_grads(floor_mod, (2.37,))
    assert s2sad.grad(floor_mod)(2.37) == pytest.approx(2.0 + 1.0)


def abs_float(x):
    return abs(x) * 2.0 + abs(x * x - 1.0)


@pytest.mark.parametrize("x", [0.4, -1.7])
def test_builtin_abs(x):
    check_grads(abs_float, (x,))


def float_conversion(x):
    return float(x) * 2.0 + float(np.sum(x)) * x


def test_float_conversion():
    check_grads(float_conversion, (1.3,))


def builtin_max_min(x, y):
    return max(x, y) * 2.0 + min(x, y * 0.5)


def test_builtin_max_min():
    check_grads(builtin_max_min, (0.3, 1.4))
    check_grads(builtin_max_min, (1.9, 1.4))


def builtin_sum(xs):
    return sum(xs) * 2.0


def test_builtin_sum_of_list():
    check_grads(builtin_sum, ([0.5, 1.5, -0.3],))


# -- math ----------------------------------------------------------------------------------------
MATH_UNARY = [
    ("sin", randn(seed=1)), ("cos", randn(seed=2)), ("tan", 0.4), ("exp", randn(seed=3)),
    ("log", positive(seed=4)), ("log1p", positive(seed=5)), ("expm1", randn(seed=6)),
    ("sqrt", positive(seed=7)), ("tanh", randn(seed=8)), ("atan", randn(seed=9)),
    ("erf", randn(seed=10)), ("erfc", randn(seed=11)), ("sinh", randn(seed=12)),
    ("cosh", randn(seed=13)), ("asin", 0.3), ("acos", -0.4), ("asinh", randn(seed=14)),
    ("log10", positive(seed=15)), ("log2", positive(seed=16)), ("fabs", -1.3),
    ("lgamma", positive(seed=17)),
]


def math_unary(name, x):
    return getattr(math, name)(x)


def apply_math(x, fn):
    return fn(x) * 1.5


@pytest.mark.parametrize("name, x", MATH_UNARY, ids=[n for n, _ in MATH_UNARY])
def test_math_unary(name, x):
    fn = getattr(math, name)
    check_grads(apply_math, (x, fn), wrt=0)
    g = s2sad.grad(apply_math)(x, fn)
    assert type(g) is float


def math_direct(x, y):
    a = math.sin(x) * math.cos(y) + math.exp(x * 0.3) - math.log(y) + math.sqrt(y)
    b = math.pow(y, x) + math.atan2(x, y) + math.hypot(x, y) + math.tanh(x) * math.erf(y)
    return a * b + math.pi * x


def test_math_functions_called_directly():
    check_grads(math_direct, (positive(seed=1), positive(seed=2)))


# -- NumPy arithmetic with broadcasting ----------------------------------------------------------
def np_arith(a, b):
    return np.sum((a + b) * (a - b) / (1.5 + b * b) - a * 2.0 + 3.0 / (2.0 + a * a) - (-b))


@pytest.mark.parametrize("sa, sb", [((3,), (3,)), ((2, 3), (3,)), ((3, 1), (1, 4)),
                                    ((2, 3, 4), (4,)), ((2, 1, 4), (3, 1)), ((), (2, 3)),
                                    ((4,), ())])
def test_numpy_arithmetic_broadcasting(sa, sb):
    a = randn(*sa, seed=1)
    b = randn(*sb, seed=2)
    if isinstance(a, float):
        a = np.float64(a)
    if isinstance(b, float):
        b = np.float64(b)
    check_grads(np_arith, (a, b))
    ga, gb = s2sad.grad(np_arith, wrt=(0, 1))(a, b)
    assert np.shape(ga) == np.shape(a) and np.shape(gb) == np.shape(b)


def scalar_and_array(s, x):
    return np.sum(s * x + x / s - s)


def test_python_float_times_array_gives_float_gradient():
    check_grads(scalar_and_array, (0.7, randn(3)))
    gs = s2sad.grad(scalar_and_array)(0.7, randn(3))
    assert np.shape(gs) == ()


def np_functions_arith(a, b):
    return np.sum(np.multiply(np.add(a, b), np.subtract(a, b)) + np.divide(a, 2.0 + b * b)
                  + np.negative(a))


def test_numpy_arithmetic_functions():
    check_grads(np_functions_arith, (randn(2, 3), randn(3, seed=1)))


# -- unary ufuncs --------------------------------------------------------------------------------
UFUNCS = [("sin", randn), ("cos", randn), ("tan", lambda *s, seed=0: 0.5 * randn(*s, seed=seed)),
          ("exp", randn), ("log", positive), ("sqrt", positive), ("tanh", randn), ("abs", randn),
          ("arctan", randn), ("log1p", positive), ("expm1", randn), ("square", randn),
          ("sinh", randn), ("cosh", randn), ("absolute", randn), ("negative", randn)]


def apply_ufunc(x, fn):
    return np.sum(fn(x) * np.cos(x))


@pytest.mark.parametrize("name, make", UFUNCS, ids=[n for n, _ in UFUNCS])
def test_unary_ufunc(name, make):
    check_grads(apply_ufunc, (make(2, 3, seed=5), getattr(np, name)), wrt=0)


def ufuncs_direct(x):
    return np.sum(np.sin(x) * np.cos(x) + np.tan(x * 0.3) + np.exp(-x) + np.log(1.0 + x * x)
                  + np.sqrt(2.0 + x) + np.tanh(x) * np.abs(x))


def test_unary_ufuncs_called_directly():
    check_grads(ufuncs_direct, (randn(5),))


# -- power ---------------------------------------------------------------------------------------
def powers(x, y, p):
    return np.sum(x ** 2 + x ** p + np.power(x, 3) + np.power(x, y) + y ** x + p ** x + x ** 0.5)


def test_power_all_positions():
    check_grads(powers, (positive(4, seed=1), positive(4, seed=2), 1.7))


def test_power_with_broadcast_exponent():
    check_grads(powers, (positive(2, 4, seed=1), positive(4, seed=2), 0.6))


def int_power_negative_base(x):
    return np.sum(x ** 3 + x ** 2)


def test_integer_power_of_negative_base():
    x = randn(6)
    assert (x < 0).any()
    check_grads(int_power_negative_base, (x,))


# -- maximum / minimum ---------------------------------------------------------------------------
def max_min(a, b):
    return np.sum(np.maximum(a, b) * 2.0 + np.minimum(a, b * 0.5) + np.maximum(a, 0.0))


def test_maximum_minimum():
    check_grads(max_min, (randn(5), randn(5, seed=1)))


def test_maximum_minimum_broadcasting():
    check_grads(max_min, (randn(2, 5), randn(5, seed=1)))


# -- reductions ----------------------------------------------------------------------------------
REDUCTIONS = [(None, False), (0, False), (1, False), (-1, False), ((0, 2), False), (1, True),
              (None, True), ((1, 2), True)]


def red_sum(x, axis, keepdims):
    return np.sum(np.sin(np.sum(x, axis=axis, keepdims=keepdims)))


def red_mean(x, axis, keepdims):
    return np.sum(np.sin(np.mean(x, axis=axis, keepdims=keepdims)))


def red_prod(x, axis, keepdims):
    return np.sum(np.sin(np.prod(x, axis=axis, keepdims=keepdims)))


def red_methods(x):
    return x.sum() + np.sum(x.mean(axis=0) ** 2) + np.sum(x.prod(axis=1, keepdims=True)) \
        + np.sum(x.sum(axis=-1) * 2.0)


@pytest.mark.parametrize("axis, keepdims", REDUCTIONS, ids=str)
@pytest.mark.parametrize("fn", [red_sum, red_mean, red_prod], ids=lambda f: f.__name__)
def test_reductions(fn, axis, keepdims):
    check_grads(fn, (randn(2, 3, 4), axis, keepdims), wrt=0)


def test_reduction_keepdims_shape():
    x = randn(2, 3, 4)
    out = np.sum(x, axis=1, keepdims=True)
    assert out.shape == (2, 1, 4)
    g = s2sad.grad(red_sum)(x, 1, True)
    np.testing.assert_allclose(g, np.broadcast_to(np.cos(out), x.shape), rtol=1e-12)


def sum_axis_literal(x):
    return np.sum(np.sum(x, axis=1, keepdims=True) * x) + np.mean(x, axis=0)[1] \
        + np.prod(x, 0)[0]


def test_reductions_with_literal_axis():
    check_grads(sum_axis_literal, (randn(3, 4),))


def test_reduction_methods():
    check_grads(red_methods, (randn(3, 4),))


# -- matmul / dot --------------------------------------------------------------------------------
def mm(A, B):
    return np.sum(np.sin(A @ B))


def dot(A, B):
    return np.sum(np.sin(np.dot(A, B)))


def matmul_fn(A, B):
    return np.sum(np.cos(np.matmul(A, B)))


MATMUL_SHAPES = [((3, 4), (4, 2)), ((3, 4), (4,)), ((4,), (4, 2)), ((4,), (4,)),
                 ((2, 3, 4), (4, 5)), ((2, 3, 4), (2, 4, 2))]


@pytest.mark.parametrize("sa, sb", MATMUL_SHAPES, ids=str)
@pytest.mark.parametrize("fn", [mm, dot, matmul_fn], ids=lambda f: f.__name__)
def test_matmul_dot(fn, sa, sb):
    if fn is dot and len(sa) == 3 and len(sb) == 3:
        pytest.skip("np.dot of two 3-d arrays is not a matmul")
    check_grads(fn, (randn(*sa, seed=1), randn(*sb, seed=2)))


def method_dot(A, x):
    return np.sum(A.dot(x) * A.T.dot(A.dot(x)))


def test_dot_method_and_transpose():
    check_grads(method_dot, (randn(3, 3), randn(3, seed=1)))


# -- reading by int, slice, fancy index ----------------------------------------------------------
def read_int(x):
    return x[0] * x[-1] + x[2] ** 2


def read_2d(X):
    return X[0, 1] * X[1][2] + np.sum(X[1]) + np.sum(X[:, 0] * X[-1, :3])


def read_slices(x):
    return np.sum(x[1:4] * x[:3]) + np.sum(x[::2]) + np.sum(x[::-1] * x) + np.sum(x[-2:])


def read_2d_slices(X):
    return np.sum(X[1:, :2] ** 2) + np.sum(X[:, 1:] * X[:, :-1]) + np.sum(X[..., 0])


def read_fancy(x):
    idx = np.array([0, 2, 2, 4])                     # repeated index: adjoints must add up
    return np.sum(x[idx] ** 2) + np.sum(x[[1, 1, 3]] * 3.0)


def read_mask(x):
    return np.sum(x[x > 0] ** 2)


def read_newaxis(x):
    return np.sum(x[:, None] * x[None, :])


@pytest.mark.parametrize("fn, shape", [(read_int, (5,)), (read_2d, (3, 4)), (read_slices, (6,)),
                                       (read_2d_slices, (3, 4)), (read_fancy, (5,)),
                                       (read_mask, (7,)), (read_newaxis, (4,))],
                         ids=lambda v: getattr(v, "__name__", str(v)))
def test_indexing_reads(fn, shape):
    check_grads(fn, (randn(*shape),))


def test_fancy_index_repeats_accumulate():
    x = randn(5)
    g = s2sad.grad(read_fancy)(x)
    want = np.zeros(5)
    want[0] += 2 * x[0]
    want[2] += 4 * x[2]
    want[4] += 2 * x[4]
    want[1] += 6.0
    want[3] += 3.0
    np.testing.assert_allclose(g, want, rtol=1e-12)


def read_list_and_tuple(xs, t):
    return xs[0] * xs[2] + t[1] ** 2 + xs[-1] * t[0]


def test_indexing_lists_and_tuples():
    check_grads(read_list_and_tuple, ([0.3, 1.2, -0.7], (2.0, 0.5)))


def read_dict(d):
    return np.sum(d["w"] * d["b"]) + d["c"] ** 2


def test_indexing_dicts():
    check_grads(read_dict, ({"w": randn(3), "b": randn(3, seed=1), "c": 0.4},))


# -- len / .shape / .ndim are inactive -------------------------------------------------------------
def shape_driven(x):
    n = len(x)
    rows, cols = x.shape
    s = 0.0
    for i in range(n):
        s = s + np.sum(x[i]) * (i + 1) / cols
    return s * x.ndim + rows * np.sum(x) + x.size * x[0, 0]


def test_len_shape_ndim_are_inactive():
    x = randn(3, 4)
    check_grads(shape_driven, (x,))
    d = s2sad.differentiate(shape_driven)
    report = d.explain(x)
    rows = [re.match(r"^(\S+)\s+(getattr \.\w+|\S+)\s+(\w+)", line).groups()
            for line in report.splitlines()[2:]]
    shape_rows = [r for r in rows if r[1] in ("len", "getattr .shape", "getattr .ndim")]
    assert {r[1] for r in shape_rows} == {"len", "getattr .shape", "getattr .ndim"}, report
    for r in shape_rows:
        assert r[2] in ("zero", "inactive"), r


def reshape_and_friends(x):
    y = x.reshape(2, 6).T
    z = np.reshape(x, (4, 3))
    return np.sum(y * y) + np.sum(np.transpose(z) @ z) + np.sum(x.ravel()[:3])


def test_reshape_transpose_ravel():
    check_grads(reshape_and_friends, (randn(3, 4),))


def complex_fn(z, w):
    return np.sum(np.abs(z * w + np.conj(z)) ** 2) + np.real(np.sum(z * z))


def test_complex_inputs_as_pairs_of_reals():
    z = randn(3, seed=1) + 1j * randn(3, seed=2)
    w = randn(3, seed=3) + 1j * randn(3, seed=4)
    check_grads(complex_fn, (z, w))
    g = s2sad.grad(complex_fn)(z, w)
    assert g.dtype == np.complex128
