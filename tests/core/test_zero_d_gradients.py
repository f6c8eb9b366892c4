"""The gradient of a 0-d array argument is a 0-d array of its dtype (before: a NumPy scalar, as
NumPy's arithmetic on 0-d arrays returns one), in every reverse-mode entry point; a Python float
argument still gets a float and a NumPy scalar a NumPy scalar."""
import numpy as np
import pytest

import s2sad
from s2sad.testing import check_grads


def cube(x):
    return x ** 3


def weighted(x, y):
    return np.sum(x * y) + x * 2.0


X0 = np.array(2.0)


@pytest.mark.parametrize("entry", ["grad", "value_and_grad", "vjp", "differentiate", "jit",
                                   "jacrev", "hessian"])
def test_a_0d_argument_gets_a_0d_gradient(entry):
    if entry == "grad":
        g = s2sad.grad(cube)(X0)
    elif entry == "value_and_grad":
        g = s2sad.value_and_grad(cube)(X0)[1]
    elif entry == "vjp":
        (g,) = s2sad.vjp(cube, X0)[1](1.0)
    elif entry == "differentiate":
        g = s2sad.differentiate(cube).grad(X0)
    elif entry == "jit":
        g = s2sad.grad(cube, jit=True)(X0)
    elif entry == "jacrev":
        g = s2sad.jacrev(cube)(X0)
    else:
        g = s2sad.hessian(cube)(X0)              # 6x = 12 = 3x^2 at x = 2
    assert type(g) is np.ndarray and g.shape == () and g.dtype == np.float64, (entry, type(g))
    assert float(g) == pytest.approx(12.0)


def test_dtypes_and_several_arguments():
    g = s2sad.grad(cube)(np.array(2.0, dtype=np.float32))
    assert type(g) is np.ndarray and g.shape == () and g.dtype == np.float32
    gz = s2sad.grad(lambda z: np.abs(z) ** 2)(np.array(1 + 2j))
    assert type(gz) is np.ndarray and gz.dtype == np.complex128 and gz == 2 + 4j
    gx, gy = s2sad.grad(weighted, (0, 1))(X0, np.array(3.0))
    assert all(type(v) is np.ndarray and v.shape == () for v in (gx, gy))
    assert (float(gx), float(gy)) == (5.0, 2.0)
    g0 = s2sad.grad(lambda x: 3.0)(X0)                # no dependence: zeros of its type
    assert type(g0) is np.ndarray and g0.shape == ()
    check_grads(cube, (X0,), modes=("rev", "fwd"))


def test_scalars_keep_their_types():
    assert type(s2sad.grad(cube)(2.0)) is float
    assert type(s2sad.grad(cube)(np.float64(2.0))) is np.float64
    g = s2sad.grad(lambda v: np.sum(v ** 2))(np.ones(3))
    assert type(g) is np.ndarray and g.shape == (3,)
