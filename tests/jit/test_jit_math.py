"""jit=True: the loops written for speed in the numba helpers give the numbers they replace.

- ``np.exp`` and ``np.log`` of float64 arrays (rules/jit_math.py): within 1 ulp of the C
  library's across the whole range, exact at the ends of the range (0, inf, NaN, negative
  numbers, the largest finite result, subnormal inputs and results), any layout, and other
  dtypes and scalars through numba's own functions;
- ``scipy.linalg.solve_triangular``'s numba version (no copy of the matrix: substitution along
  its rows for every ``trans``) against SciPy, and its adjoint against the Python rule, for
  every trans, triangle, unit diagonal, one or several right-hand sides, real and complex;
- ``np.sum`` of a real array in NumPy's pairwise order (NumPy's value bit for bit, where numba's
  own sum adds one element at a time);
- the reduction of a broadcast adjoint (``_rt.unbroadcast``, a carried position instead of a
  division per element) and ``_rt.sum_product`` against the Python helpers, on every pattern of
  summed axes;
- end to end: a Gaussian-process likelihood (exp, Cholesky, a triangular solve, broadcast
  differences, a scalar noise) has Python mode's gradient in Numba mode.
"""
import math

import numpy as np
import pytest
import scipy.linalg

import s2sad
from s2sad.testing import check_grads

numba = pytest.importorskip("numba")

from s2sad.rules import jit_math, jit_substitutes  # noqa: E402
from s2sad.rules import jit as jit_rules  # noqa: E402
from s2sad.rules.scipy import linalg as scipy_rules  # noqa: E402
from s2sad.runtime import arrays as rt_arrays  # noqa: E402
from s2sad.runtime import jit as jit_rt  # noqa: E402

_exp = numba.njit(lambda x: jit_math.exp(x))


def _ulps(got, want):
    scale = np.spacing(np.abs(want))
    scale[scale == 0] = np.nextafter(0.0, 1.0)
    return np.abs(got - want) / scale


@pytest.mark.parametrize("lo, hi", [(-1.0, 1.0), (-40.0, 40.0), (-700.0, 700.0),
                                    (-745.0, -708.0), (700.0, 709.78), (-1e-8, 1e-8)])
def test_exp_is_within_one_ulp_of_the_c_library(lo, hi):
    x = np.random.default_rng(int(abs(lo) * 7 + hi)).uniform(lo, hi, 20000)
    want = np.array([math.exp(v) for v in x])
    assert _ulps(_exp(x), want).max() <= 1.0
    assert _ulps(np.exp(x), want).max() <= 4.0          # (NumPy's, for scale)


def test_exp_at_the_ends_of_its_range():
    x = np.array([np.nan, np.inf, -np.inf, 709.782712893384, 709.7827128933841, 710.0,
                  -745.1332191019411, -745.1332191019412, -746.0, -720.0, 0.0, -0.0, 1e-300,
                  -1e-300, 5e-324, 1.0])
    with np.errstate(over="ignore"):
        want = np.exp(x)
    got = _exp(x)
    assert np.isnan(got[0]) and got[1] == np.inf and got[2] == 0.0
    np.testing.assert_array_equal(got[1:-1], want[1:-1])
    assert _ulps(got[-1:], want[-1:]).max() <= 1.0
    assert np.isfinite(got[3]) and got[3] == want[3]              # the largest result
    assert 0 < got[9] < np.finfo(np.float64).tiny                    # a subnormal result


@pytest.mark.parametrize("make", [lambda a: a, lambda a: a.T, lambda a: a[::2, 1::3],
                                  lambda a: a.reshape(4, 5, 6), lambda a: a[0]])
def test_exp_of_any_layout_keeps_shape_and_values(make):
    a = make(np.random.default_rng(1).standard_normal((20, 6)) * 5)
    got = _exp(a)
    assert got.shape == a.shape and got.dtype == np.float64
    assert _ulps(got, np.exp(a)).max() <= 1.0


def test_exp_of_other_types_is_numbas():
    assert _exp(np.ones(3, np.float32)).dtype == np.float32
    assert _exp(1.5) == pytest.approx(math.exp(1.5), rel=1e-15)
    np.testing.assert_allclose(_exp(np.array([1 + 2j, -1j])), np.exp(np.array([1 + 2j, -1j])))
    np.testing.assert_allclose(_exp(np.arange(4)), np.exp(np.arange(4)))
    assert _exp(np.empty((0, 3))).shape == (0, 3)


_log = numba.njit(lambda x: jit_math.log(x))


@pytest.mark.parametrize("lo, hi", [(0.5, 2.0), (0.9, 1.1), (1 - 1e-9, 1 + 1e-9), (1e-300, 1e-290),
                                    (1e300, 1.7e308), (1e-320, 1e-309), (1e-5, 1e5)])
def test_log_is_within_one_ulp_of_the_c_library(lo, hi):
    x = np.random.default_rng(int(math.log(hi) * 10) % 1000).uniform(lo, hi, 20000)
    want = np.array([math.log(v) for v in x])
    assert _ulps(_log(x), want).max() <= 1.0
    x = np.exp(np.random.default_rng(2).uniform(-700, 700, 20000))
    assert _ulps(_log(x), np.array([math.log(v) for v in x])).max() <= 1.0


def test_log_at_the_ends_of_its_range():
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, -1.0, -1e-300, 1.0, 5e-324,
                  2.2250738585072014e-308, 1.7976931348623157e308, 2.0, 0.5])
    with np.errstate(all="ignore"):
        want = np.log(x)
    got = _log(x)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = np.isfinite(want)
    assert _ulps(got[ok], want[ok]).max() <= 1.0
    np.testing.assert_array_equal(got[~ok], want[~ok])
    assert got[3] == -np.inf and got[4] == -np.inf and got[1] == np.inf and got[7] == 0.0


def test_log_of_any_layout_and_other_types():
    a = np.random.default_rng(3).lognormal(0, 2, (20, 6))
    for v in (a, a.T, a[::2, 1::3], a.reshape(4, 5, 6), a[0]):
        got = _log(v)
        assert got.shape == v.shape and _ulps(got, np.log(v)).max() <= 1.0
    assert _log(np.ones(3, np.float32)).dtype == np.float32
    assert _log(2.5) == pytest.approx(math.log(2.5), rel=1e-15)
    np.testing.assert_allclose(_log(np.array([1 + 2j, -1j])), np.log(np.array([1 + 2j, -1j])))


# -- solve_triangular and its adjoint ------------------------------------------------------------
def _tri(rng, n, lower, complex_):
    a = rng.standard_normal((n, n)) + (1j * rng.standard_normal((n, n)) if complex_ else 0)
    a = np.tril(a) if lower else np.triu(a)
    a[np.arange(n), np.arange(n)] = 2.0 + rng.random(n)
    # the other triangle holds junk: neither version may read it
    junk = np.triu(np.full((n, n), 7.0), 1) if lower else np.tril(np.full((n, n), 7.0), -1)
    return a + junk


def _compiled(tr, lower, unit):
    """The numba solve and its adjoint in one function (trans, lower and unit_diagonal as
    constants, as generated code passes them)."""
    def both(g, a, b):
        x = jit_substitutes.solve_triangular(a, b, tr, lower, unit)
        return x, jit_rules.solve_triangular(g, x, a, b, tr, lower, unit)
    return numba.njit(both)


def _check_solve(run, rng, tr, lower, unit, cols, complex_):
    n = 9
    a = _tri(rng, n, lower, complex_)
    b = rng.standard_normal(n if cols is None else (n, cols))
    g = rng.standard_normal(b.shape)
    if complex_:
        b = b + 1j * rng.standard_normal(b.shape)
        g = g + 1j * rng.standard_normal(b.shape)
    want = scipy.linalg.solve_triangular(a, b, trans=tr, lower=lower, unit_diagonal=unit)
    got, (ga, gb) = run(g, a, b)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    pa, pb = scipy_rules.solve_triangular(g, want, a, b, tr, lower, unit)
    np.testing.assert_allclose(ga, pa, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gb, pb, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("unit", [False, True])
@pytest.mark.parametrize("lower", [False, True])
@pytest.mark.parametrize("tr", [0, 1, 2])
def test_solve_triangular_and_its_adjoint(tr, lower, unit):
    rng = np.random.default_rng(tr * 100 + lower * 10 + unit)
    run = _compiled(tr, lower, unit)
    for cols in (None, 1, 3):           # (a vector; matrices of one and of three columns)
        _check_solve(run, rng, tr, lower, unit, cols, False)


@pytest.mark.parametrize("tr, lower", [(0, True), (1, False), (2, True)])
def test_complex_solve_triangular_and_its_adjoint(tr, lower):
    rng = np.random.default_rng(tr)
    run = _compiled(tr, lower, False)
    for cols in (None, 3):
        _check_solve(run, rng, tr, lower, False, cols, True)


def test_a_zero_on_the_diagonal_is_singular():
    a = np.tril(np.ones((3, 3)))
    a[1, 1] = 0.0
    for tr in (0, 2):
        with pytest.raises(np.linalg.LinAlgError):
            _compiled(tr, True, False)(np.ones(3), a, np.ones(3))


# -- unbroadcast and sum_product -----------------------------------------------------------------
_unbroadcast = numba.njit(lambda g, x: jit_rt.unbroadcast(g, x))
_sum_product = numba.njit(lambda a, b, x: jit_rt.sum_product(a, b, x))


@pytest.mark.parametrize("gshape, xshape", [
    ((4, 5), (4, 1)), ((4, 5), (1, 5)), ((4, 5), (5,)), ((4, 5), (1, 1)), ((3, 4, 5), (4, 1)),
    ((3, 4, 5), (3, 1, 5)), ((3, 4, 5), (1, 4, 1)), ((3, 4, 5), (5,)), ((2, 3, 4, 5), (3, 1, 1)),
    ((7,), (1,)), ((6, 1), (1, 1)), ((0, 5), (1, 5)), ((4, 5), (4, 5))])
def test_unbroadcast_sums_the_broadcast_axes(gshape, xshape):
    rng = np.random.default_rng(len(gshape) * 10 + len(xshape))
    g = rng.standard_normal(gshape)
    x = np.zeros(xshape)
    want = rt_arrays.unbroadcast(g, x)
    for gg in (g, np.asfortranarray(g), g * (1 + 1j)):
        got = _unbroadcast(gg, x.astype(gg.dtype))
        assert got.shape == x.shape
        np.testing.assert_allclose(got, rt_arrays.unbroadcast(gg, x.astype(gg.dtype)),
                                   rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(_unbroadcast(g, 1.0), g.sum(), rtol=1e-13)
    np.testing.assert_allclose(want, _unbroadcast(g, x), rtol=1e-13, atol=1e-13)


_sum = numba.njit(lambda a: np.sum(a))
_array_sum = numba.njit(lambda a: jit_rt.array_sum(a))


def test_whole_array_sum_is_numpys_bit_for_bit():
    from s2sad.rules import jit_reductions     # (np.sum's numba version, as jit_substitutes binds)
    run = numba.njit(lambda a: jit_reductions.sum(a))
    rng = np.random.default_rng(4)
    for n in list(range(0, 140)) + [255, 256, 257, 1000, 8191, 8193, 100000]:
        for dt in (np.float64, np.float32):
            a = (rng.standard_normal(n) * 10.0 ** rng.uniform(-3, 3, n)).astype(dt)
            want = np.sum(a).tobytes()
            assert np.asarray(_array_sum(a), dt).tobytes() == want, (n, dt)
            assert np.asarray(run(a), dt).tobytes() == want, (n, dt)
    A = rng.standard_normal((300, 70))
    assert run(A) == np.sum(A) and run(A[:, ::3]) == pytest.approx(np.sum(A[:, ::3]), rel=1e-13)
    assert run(np.arange(5)) == 10                            # (integers: numba's own)


def test_sum_product_is_the_sum_of_the_product():
    rng = np.random.default_rng(3)
    for shape in [(0,), (1,), (7,), (13, 9), (2, 3, 5)]:
        a, b = rng.standard_normal(shape), rng.standard_normal(shape)
        assert _sum_product(a, b, 1.0) == pytest.approx(float(np.sum(a * b)), rel=1e-12,
                                                        abs=1e-12)
    a, b = rng.standard_normal((4, 5)), rng.standard_normal(5)        # broadcast: a * b summed
    assert _sum_product(a, b, 2.0) == pytest.approx(float(np.sum(a * b)), rel=1e-12)
    assert _sum_product(a, 3.0, 2.0) == pytest.approx(float(np.sum(a * 3.0)), rel=1e-12)


# -- end to end ------------------------------------------------------------------------------------
def gp(x, y, s):
    d = x[:, None] - x[None, :]
    K = np.exp(-0.5 * d ** 2)
    L = np.linalg.cholesky(K + s * np.eye(len(x)))
    alpha = scipy.linalg.solve_triangular(L, y, lower=True)
    return -0.5 * (alpha @ alpha) - np.sum(np.log(np.diag(L)))


def test_a_gp_likelihood_has_python_modes_gradient():
    rng = np.random.default_rng(5)
    x = np.sort(rng.uniform(0, 6, 40))
    y = rng.standard_normal(40)
    s = 0.7
    v0, g0 = s2sad.value_and_grad(gp, wrt=(0, 1, 2))(x, y, s)
    v1, g1 = s2sad.value_and_grad(gp, wrt=(0, 1, 2), jit=True)(x, y, s)
    assert v1 == pytest.approx(v0, rel=1e-12)
    for a, b in zip(g0, g1):
        np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-11)
    check_grads(gp, (x, y, s), wrt=(0, 1, 2))
