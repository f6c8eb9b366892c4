"""Class 4 of issue 10: object arrays carry derivatives.

``np.frompyfunc(f, 1, 1)(x)`` returns an object array; it was treated as a value without a
derivative, so the gradient was silently zero.  An object array that holds floats carries
derivatives: s2sad follows such arrays through NumPy's own operations and refuses the callees that
build them out of its sight (``np.frompyfunc``), in both modes.  Integer and bool outputs
(``dtype=int`` casts) carry none: their tangents used to be truncated casts of the input tangents
instead of zero."""
import math

import numpy as np
import pytest

import s2sad
from s2sad import runtime
from s2sad.errors import OpaqueCalleeError
from s2sad.testing import check_grads
from s2sad.transforms import jvp

RNG = np.random.default_rng(20250211)
X = RNG.uniform(0.2, 1.2, 4)
BOTH = ("rev", "fwd")


def _sq(v):
    return v * v + 1.0


# -- differentiable(): the run-time test for "carries a derivative" ------------------------------
def test_object_arrays_holding_floats_are_differentiable():
    assert runtime.differentiable(np.array([1.0, 2.0], dtype=object))
    assert runtime.differentiable(np.array([1, 2.5], dtype=object))
    assert runtime.differentiable(np.array([1, 1j], dtype=object))
    assert runtime.differentiable(np.array([np.float32(1.0), None], dtype=object))
    inner = np.empty(2, dtype=object)
    inner[0], inner[1] = np.zeros(3), "label"
    assert runtime.differentiable(inner)                  # an element is a float array
    assert runtime.differentiable(np.frompyfunc(_sq, 1, 1)(X))
    assert runtime.differentiable([np.array([0.5], dtype=object)])


def test_object_arrays_without_floats_are_not():
    assert not runtime.differentiable(np.array([1, 2, 3], dtype=object))
    assert not runtime.differentiable(np.array(["a", None, True], dtype=object))
    assert not runtime.differentiable(np.empty((0,), dtype=object))
    assert not runtime.differentiable(np.arange(3))
    assert runtime.differentiable(X)


# -- np.frompyfunc: refused in both modes -------------------------------------------------------------
def frompyfunc_user(x):
    return np.sum(np.frompyfunc(_sq, 1, 1)(x).astype(float))


def frompyfunc_math(x):
    u = np.frompyfunc(math.sin, 1, 1)
    return float(np.sum(u(x)))


def frompyfunc_reduce(x):
    u = np.frompyfunc(lambda a, b: a * b, 2, 1)
    return float(u.reduce(x))


def frompyfunc_of_object_array(x):
    o = x.astype(object)
    return float(np.sum(np.frompyfunc(_sq, 1, 1)(o)))


@pytest.mark.parametrize("f", [frompyfunc_user, frompyfunc_math, frompyfunc_reduce,
                               frompyfunc_of_object_array])
@pytest.mark.parametrize("mode", ["rev", "fwd"])
def test_frompyfunc_is_refused(f, mode):
    with pytest.raises(OpaqueCalleeError) as e:
        if mode == "rev":
            s2sad.grad(f)(X)
        else:
            jvp(f, (X,), (np.ones_like(X),))
    msg = str(e.value)
    assert "test_object_arrays.py:" in msg and "Fix:" in msg, msg


def test_frompyfunc_on_values_without_derivative_runs():
    def f(x):
        labels = np.frompyfunc(str, 1, 1)(np.arange(3))
        return np.sum(x) * len(labels)
    np.testing.assert_allclose(s2sad.grad(f)(X), np.full(4, 3.0))


# -- object arrays built from floats: differentiated -----------------------------------------------
def array_of_list(x):
    a = np.array([x[0], x[1] * 2.0, x[2] ** 2], dtype=object)
    return float(np.sum(a * a))


def asarray_object(x):
    a = np.asarray(x, dtype=object)
    return float(a[0] * a[1] + a[2] * a[3])


def astype_object(x):
    return np.sum(x.astype(object) ** 2)


def astype_object_and_back(x):
    return np.sum(np.sin(x.astype(object).astype(float)))


def object_sum(x):
    a = np.array([x[0], x[1], x[2]], dtype=object)
    return a.sum() * x[3]


def object_slices(x):
    a = np.asarray(x, dtype=object)
    b = a[1:] * a[:-1]
    return float(b.sum())


def object_buffer(x):
    a = np.empty(2, dtype=object)
    a[0] = x[0] * x[1]
    a[1] = x[2]
    return float(a[0] + a[1] ** 3)


def object_mixed_with_ints(x):
    a = np.array([1, x[0], 2, x[1]], dtype=object)
    return float(np.sum(a * a))


OBJECT_CASES = [array_of_list, asarray_object, astype_object, astype_object_and_back, object_sum,
                object_slices, object_buffer, object_mixed_with_ints]


@pytest.mark.parametrize("f", OBJECT_CASES, ids=[f.__name__ for f in OBJECT_CASES])
def test_object_array_gradients(f):
    check_grads(f, (X,), modes=BOTH)
    g = s2sad.grad(f)(X)
    assert np.max(np.abs(g)) > 1e-3                     # not the silent zero of before
    assert g.dtype == np.float64 and g.shape == X.shape


def test_object_array_gradient_values():
    g = s2sad.grad(asarray_object)(X)
    np.testing.assert_allclose(g, [X[1], X[0], X[3], X[2]], rtol=1e-13)
    _, t = jvp(asarray_object, (X,), (np.array([1.0, 0.0, 0.0, 0.0]),))
    assert t == pytest.approx(X[1], rel=1e-13)


# -- integer outputs carry no derivative: zero, not a truncated tangent ----------------------------
def astype_int(x):
    return np.sum(x.astype(int) * 1.0 + x)


def astype_bool(x):
    return np.sum(x.astype(bool) * 1.0 + x)


def ascontiguous_int(x):
    return np.sum(np.ascontiguousarray(x * 3.0, dtype=int) * 1.0 + x)


def array_int(x):
    return np.sum(np.array(x * 3.0, dtype=int) * 1.0 + x)


def asarray_int(x):
    return np.sum(np.asarray(x * 3.0, dtype=np.int32) * 1.0 + x)


def full_int(x):
    return np.sum(np.full(2, x[0] * 3.0, dtype=int) * 1.0) + np.sum(x)


def full_like_int(x):
    return np.sum(np.full_like(np.arange(2), x[0] * 3.0) * 1.0) + np.sum(x)


def sum_int(x):
    return np.sum(x * 3.0, dtype=int) * 1.0 + np.sum(x)


def cumsum_int(x):
    return np.sum(np.cumsum(x * 3.0, dtype=int)) * 1.0 + np.sum(x)


def mean_int(x):
    return np.mean(x * 3.0, dtype=int) * 1.0 + np.sum(x)


def method_sum_int(x):
    return (x * 3.0).sum(dtype=int) * 1.0 + np.sum(x)


def ufunc_dtype_int(x):
    return np.sum(np.add(x * 3.0, x * 3.0, dtype=int, casting="unsafe") * 1.0) + np.sum(x)


INT_CASES = [astype_int, astype_bool, ascontiguous_int, array_int, asarray_int, full_int,
             full_like_int, sum_int, cumsum_int, mean_int, method_sum_int, ufunc_dtype_int]


@pytest.mark.parametrize("f", INT_CASES, ids=[f.__name__ for f in INT_CASES])
def test_integer_outputs_carry_no_derivative(f):
    x = np.array([0.3, 0.7, 1.9, 2.6])
    np.testing.assert_array_equal(s2sad.grad(f)(x), np.ones(4))
    _, t = jvp(f, (x,), (np.ones(4),))
    assert float(t) == 4.0


def test_dtype_guard_is_not_in_generated_code_without_dtype():
    def f(x):
        return np.sum(np.cumsum(x) ** 2)
    src = s2sad.differentiate(f).adjoint_source(X)
    assert "_rt.dtype_guard" not in src, src
