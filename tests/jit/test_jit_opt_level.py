"""jit=True compiles a derivative that takes arrays of 3 or more dims at LLVM level 2
(codegen/jit._opt_level: level 3 unswitches numba's broadcasting loops exponentially, a
batch-norm gradient took minutes to compile).  The gradient is the Python derivative's, and
numba's own setting is left as it was (the suite runs at NUMBA_OPT=0, tests/conftest.py: there
the level is not changed)."""
import warnings

import numpy as np

import s2sad
from s2sad.errors import JitFallbackWarning


def batch_norm(x, gamma, beta):
    mu = np.mean(x, axis=(0, 2, 3), keepdims=True)
    var = np.var(x, axis=(0, 2, 3), keepdims=True)
    xh = (x - mu) / np.sqrt(var + 1e-5)
    y = gamma[None, :, None, None] * xh + beta[None, :, None, None]
    return np.sum(y * y) / np.std(y, axis=(0, 2, 3)).sum()


def test_a_four_dim_broadcasting_gradient_compiles_and_leaves_numbas_level():
    from numba.core import config
    before = config.OPT
    r = np.random.default_rng(0)
    args = r.random((3, 2, 4, 3)), r.random(2), r.random(2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)   # (it compiled: no fallback)
        got = s2sad.grad(batch_norm, wrt=(0, 1, 2), jit=True)(*args)
    want = s2sad.grad(batch_norm, wrt=(0, 1, 2))(*args)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    assert config.OPT is before


def sum_over_axes(x):
    return np.sum(np.sin(np.sum(x, axis=(1, 2))) + 2.0)


def test_reductions_over_a_tuple_of_axes_with_an_empty_axis():
    # (jit_reductions.to_rows: rows of the kept axes, outer 3 here, even when n is 0)
    for shape in ((3, 0, 2), (3, 2, 4), (0, 2, 3)):
        x = np.random.default_rng(1).random(shape)
        with warnings.catch_warnings():
            warnings.simplefilter("error", JitFallbackWarning)
            v, g = s2sad.value_and_grad(sum_over_axes, jit=True)(x)
        v0, g0 = s2sad.value_and_grad(sum_over_axes)(x)
        assert abs(v - v0) <= 1e-12 * abs(v0) and g.shape == x.shape
        np.testing.assert_allclose(g, g0, rtol=1e-12)
