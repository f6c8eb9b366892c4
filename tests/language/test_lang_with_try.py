"""`with` blocks and try/except/else/finally."""
import contextlib
import threading

import numpy as np
import pytest

import s2sad
from lang_helpers import check_grads, rng, assert_close

_LOCK = threading.Lock()
_RLOCK = threading.RLock()


# == case: exception_leaving_function_propagates
class ConvergenceError(RuntimeError):
    pass


def must_converge(x, limit):
    y = x * x
    if y > limit:
        raise ConvergenceError(f"diverged: {y:.3f} > {limit}")
    return y


def test_exception_leaving_function_propagates():
    with pytest.raises(ConvergenceError) as ei:
        s2sad.grad(must_converge)(3.0, 2.0)
    assert type(ei.value) is ConvergenceError
    assert str(ei.value) == "diverged: 9.000 > 2.0"
    assert_close(s2sad.grad(must_converge)(1.1, 2.0), 2.2)


# == case: exception_from_numpy_propagates
def shape_mismatch(a, b):
    return np.sum(a @ b)


def test_exception_from_numpy_propagates():
    r = rng(58)
    a, b = r.standard_normal((2, 3)), r.standard_normal(4)
    with pytest.raises(ValueError) as ei:
        shape_mismatch(a, b)
    with pytest.raises(ValueError) as ei2:
        s2sad.grad(shape_mismatch)(a, b)
    assert type(ei2.value) is type(ei.value)
    assert str(ei2.value) == str(ei.value)
