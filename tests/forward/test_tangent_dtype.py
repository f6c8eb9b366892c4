"""The tangent of a Python-float argument promotes as the float itself does in the primal.

``np.clip(x, c, 10.0)`` on a float32 ``x`` is float32 (a Python float is a weak scalar), and so
is the tangent along ``c``, as it is for ``x * c``.  Rules that made the zeros of such a tangent
with ``zeros_like`` or combined two Python numbers in ``np.where`` gave a float64 tangent for a
float32 primal (clip bounds, ``where``'s x and y, ``select``'s default, ``nan_to_num``'s values,
``maximum(x, c)``).
"""
import numpy as np
import pytest

import s2sad


def clip_lo(x, c):
    return np.sum(np.clip(x, c, 10.0))


def clip_hi(x, c):
    return np.sum(np.clip(x, -1.0, c))


def where_y(x, c):
    return np.sum(np.where(x > 0.5, x, c))


def where_x(x, c):
    return np.sum(np.where(x > 0.5, c, x))


def select_default(x, c):
    return np.sum(np.select([x > 0.5], [x], default=c))


def nan_to_num_posinf(x, c):
    return np.sum(np.nan_to_num(np.where(x > 0.5, np.inf, x), posinf=c))


def maximum_c(x, c):
    return np.sum(np.maximum(x, c))


def heaviside_c(x, c):
    return np.sum(np.heaviside(x - 0.5, c) * x)


FUNCS = [clip_lo, clip_hi, where_y, where_x, select_default, nan_to_num_posinf, maximum_c,
         heaviside_c]


@pytest.mark.parametrize("f", FUNCS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_tangent_of_python_float_has_the_primal_dtype(f, dtype):
    x = np.linspace(0.0, 1.0, 7, dtype=dtype)
    c = 0.3
    v, t = s2sad.jvp(f, (x, c), (np.zeros_like(x), 1.0))
    assert v == f(x, c)
    assert np.asarray(v).dtype == dtype
    assert np.asarray(t).dtype == dtype, (f.__name__, np.asarray(t).dtype)
    # the value: a central difference in float64
    x64 = x.astype(np.float64)
    fd = (f(x64, c + 1e-6) - f(x64, c - 1e-6)) / 2e-6
    assert np.allclose(t, fd, rtol=1e-3, atol=1e-3)
    # and the tangent along x keeps x's dtype too
    v, t = s2sad.jvp(f, (x, c), (np.ones_like(x), 1.0))
    assert np.asarray(t).dtype == dtype
