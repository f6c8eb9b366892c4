"""jit=True: np.max/min/amax/amin/sum/prod/mean/var/std over one axis and with keepdims compile
(rules/jit_reductions.py); they made the whole derivative fall back to Python before.

The numba versions are checked against NumPy directly (values, dtypes, shapes, nan, errors) and
through derivatives that must compile (a JitFallbackWarning fails the test)."""
import itertools

import numpy as np
import pytest

numba = pytest.importorskip("numba")

from s2sad.rules import jit_reductions as R  # noqa: E402

from .compare import compiled, same_as_python, same_jvp_as_python  # noqa: E402

RNG = np.random.default_rng(11)
VERSION = {np.max: R.amax, np.min: R.amin, np.sum: R.sum, np.prod: R.prod, np.mean: R.mean,
           np.var: R.var, np.std: R.std}


_CALLS = {}


def _numba_call(name, whole, keepdims, ddof=None):
    """An njit function ``f(a, axis)`` calling the numba version of np.<name> as a program writes
    the call (keepdims and ddof constants; axis None when ``whole``)."""
    key = (name, whole, keepdims, ddof)
    if key not in _CALLS:
        v = VERSION[getattr(np, {"amax": "max", "amin": "min"}.get(name, name))]
        kw = ("axis=None" if whole else "axis=axis") + f", keepdims={keepdims!r}" + \
            ("" if ddof is None else f", ddof={ddof}")
        ns = {"v": v}
        exec(f"def f(a, axis):\n    return v(a, {kw})\n", ns)
        _CALLS[key] = numba.njit(ns["f"])
    return _CALLS[key]


def _arrays():
    yield RNG.normal(size=7)
    yield RNG.normal(size=(4, 5))
    yield RNG.normal(size=(3, 4, 5))
    yield RNG.normal(size=(6, 8))[::2, 1::3]                     # strided view
    yield RNG.normal(size=(4, 5)).astype(np.float32)
    yield RNG.integers(-5, 6, size=(3, 4))


CASES = [(a, ax) for a in _arrays() for ax in [None] + list(range(-a.ndim, a.ndim))]


def test_versions_cover_the_aliases():
    v = R.versions()
    assert v[np.max] is v[np.amax] is R.amax and v[np.min] is v[np.amin] is R.amin


@pytest.mark.parametrize("name", ["max", "min", "sum", "prod", "mean", "var", "std"])
@pytest.mark.parametrize("keepdims", [False, True])
def test_numba_versions_match_numpy(name, keepdims):
    ref = getattr(np, name)
    for a, ax in CASES:
        got = _numba_call(name, ax is None, keepdims)(a, 0 if ax is None else ax)
        want = ref(a, axis=ax, keepdims=keepdims)
        if isinstance(got, np.ndarray):     # (numba returns a scalar as a Python number)
            assert got.dtype == want.dtype, (name, a.dtype, ax)
        assert np.shape(got) == np.shape(want), (name, a.shape, ax)
        tol = 1e-5 if a.dtype == np.float32 else 1e-12
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


@pytest.mark.filterwarnings("ignore:Degrees of freedom")
@pytest.mark.parametrize("name", ["var", "std"])
def test_ddof(name):
    a = RNG.normal(size=(3, 4))
    for ax, ddof, keep in itertools.product([None, 0, 1, -1], [0, 1, 4, 5], [False, True]):
        with np.errstate(divide="ignore", invalid="ignore"):
            want = getattr(np, name)(a, axis=ax, ddof=ddof, keepdims=keep)
            got = _numba_call(name, ax is None, keep, ddof)(a, 0 if ax is None else ax)
        np.testing.assert_allclose(got, want, rtol=1e-12, equal_nan=True)


def test_nan_propagates_through_max_and_min():
    a = RNG.normal(size=(3, 4))
    a[1, 2] = np.nan
    for name in ("max", "min"):
        for ax in (None, 0, 1):
            np.testing.assert_array_equal(_numba_call(name, ax is None, False)(a, ax or 0),
                                          getattr(np, name)(a, axis=ax))


def test_errors_as_numpy():
    with pytest.raises(ValueError, match="zero-size"):
        _numba_call("max", False, False)(np.empty((3, 0)), 1)
    with pytest.raises(ValueError, match="out of bounds"):
        _numba_call("mean", False, False)(np.ones((3, 4)), 2)
    # sums and means of an empty axis are NumPy's (0 and nan)
    np.testing.assert_array_equal(_numba_call("sum", False, False)(np.empty((3, 0)), 1),
                                  np.zeros(3))


def test_other_arguments_are_not_compiled():
    # out=, initial=, where=: a typing error (the derivative then runs as Python; a tuple of
    # axes compiles: test_jit_axes.py)
    @numba.njit
    def initial(a):
        return R.amax(a, axis=0, initial=1.0)

    @numba.njit
    def where(a):
        return R.sum(a, axis=0, where=a > 0)

    for f in (initial, where):
        with pytest.raises(numba.core.errors.TypingError):
            f(np.ones((2, 3)))


X = RNG.normal(size=(6, 5))
GRADS = {
    "max_axis": lambda x: np.sum(np.max(x, axis=1) ** 2),
    "min_axis0_keep": lambda x: np.sum(np.min(x, axis=0, keepdims=True) * x),
    "amax_neg_axis": lambda x: np.sum(np.sin(np.amax(x, axis=-1))),
    "mean_axis0": lambda x: np.sum(np.mean(x, axis=0) ** 2),
    "centered": lambda x: np.sum((x - np.mean(x, axis=1, keepdims=True)) ** 2),
    "normalised": lambda x: np.sum(np.cos(x / np.sum(x * x, axis=1, keepdims=True))),
    "var_axis": lambda x: np.sum(np.var(x, axis=0)),
    "std_ddof_axis": lambda x: np.sum(np.std(x, axis=1, ddof=1)),
    "std_whole": lambda x: np.std(x) * np.mean(x),
    "softmax_by_hand": lambda x: np.sum(
        x * np.exp(x - np.max(x, axis=1, keepdims=True))
        / np.sum(np.exp(x - np.max(x, axis=1, keepdims=True)), axis=1, keepdims=True)),
}


@pytest.mark.parametrize("name", sorted(GRADS))
def test_derivatives_compile_and_agree(name):
    same_as_python(GRADS[name], (X,), (0,))


def test_softmax_by_hand_of_a_batch_3d():
    x = RNG.normal(size=(2, 3, 4))
    v, g = compiled(GRADS["softmax_by_hand"], (0,), (x,))
    assert np.shape(g[0]) == x.shape
    same_as_python(GRADS["softmax_by_hand"], (x,), (0,))


def test_whole_array_calls_stay_numbas_own():
    # complex arrays and np.sum's dtype= over the whole array compiled before these versions
    @numba.njit
    def f(a, c):
        return R.sum(a, dtype=np.float64) + R.sum(a, axis=0, dtype=np.float64)[0] + \
            R.prod(c).real + R.mean(c).real + R.amax(a) + R.var(a) + R.std(a, ddof=1)

    a = RNG.normal(size=(3, 4))
    c = a + 1j * a[::-1]
    want = np.sum(a) + np.sum(a, axis=0)[0] + np.prod(c).real + np.mean(c).real + np.max(a) + \
        np.var(a) + np.std(a, ddof=1)
    assert f(a, c) == pytest.approx(want, rel=1e-12)


# ndarray methods with arguments (codegen/jit.methods_as_functions: ``_np.max(x, axis=1)``) and
# np.prod over one axis (its adjoint, rules/jit._prod), which made the derivative run as Python
def _methods(x):
    return np.sum(x.max(axis=1) ** 2) + np.sum(x.mean(0) * x.sum(axis=0)) + \
        x.std(axis=1, ddof=1).sum() + x[:5, :5].trace() + \
        np.sum(x.var(axis=-1, keepdims=True) * x) + x.min(axis=0).sum() + x.T.dot(x).trace()


def _prods(x):
    return np.sum(np.prod(x, axis=1) ** 2) + np.sum(x.prod(axis=0, keepdims=True) * x) + \
        np.prod(x[0], axis=0) + np.sum(np.prod(x, -1, keepdims=True))


def _prod_3d(x):
    return np.sum(np.sin(np.prod(x, axis=1))) + np.sum(np.prod(x, axis=0) ** 2)


def test_methods_with_arguments_compile():
    same_as_python(_methods, (X,), (0,))


def test_methods_written_as_functions_in_the_jit_source_only():
    import s2sad
    d = s2sad.differentiate(_methods, jit=True)
    d.grad(X)
    src = d.adjoint_source(jit=True)
    assert "_np.max(x, axis=1)" in src and "_np.trace(_" in src and "_np.mean(x, 0)" in src
    assert "x.max(axis=1)" in s2sad.differentiate(_methods).adjoint_source(X)


@pytest.mark.parametrize("x", [X, np.where(np.abs(X) < 0.3, 0.0, X),
                               np.array([[0.0, 2.0, 0.0], [1.5, 0.0, -2.0]])],
                         ids=["plain", "zeros", "two_zeros_in_a_line"])
def test_prod_over_an_axis_compiles(x):
    same_as_python(_prods, (x,), (0,))


def test_prod_over_the_middle_axis_of_3d():
    x = RNG.normal(size=(2, 3, 4))
    x[1, 1, 2] = 0.0
    same_as_python(_prod_3d, (x,), (0,))


@pytest.mark.parametrize("f", [_methods, _prods, _prod_3d, lambda x: np.prod(x) * np.sum(x)],
                         ids=["methods", "prods", "prod_3d", "prod_whole"])
def test_forward_mode_compiles_the_same(f):
    x = X if f is not _prod_3d else RNG.normal(size=(2, 3, 4))
    t = RNG.normal(size=x.shape)
    vj, tj = same_jvp_as_python(f, (x,), (t,))
    eps = 1e-6
    assert tj == pytest.approx((f(x + eps * t) - f(x - eps * t)) / (2 * eps), rel=1e-6)


def _nan_stats(x, y):
    return np.nanmean(x * y) + np.nansum(x ** 2) * y[0, 0]


@pytest.mark.parametrize("with_nan", [False, True])
def test_nansum_and_nanmean_compile(with_nan):
    # (rules/jit.py: _adj.nansum and its tangent over the whole array; a nan entry gets no
    # derivative from the reduction, the same numbers as Python mode)
    import warnings

    import s2sad
    from s2sad.errors import JitFallbackWarning
    x, y = RNG.normal(size=(3, 4)), RNG.normal(size=(3, 4))
    if with_nan:
        x[1, 2] = np.nan
    else:
        same_as_python(_nan_stats, (x, y), (0, 1))
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        vj, gj = s2sad.value_and_grad(_nan_stats, wrt=(0, 1), jit=True)(x, y)
        tj = s2sad.jvp(_nan_stats, (x, y), (y, x), jit=True)[1]
    vp, gp = s2sad.value_and_grad(_nan_stats, wrt=(0, 1))(x, y)
    assert vj == pytest.approx(vp, rel=1e-12)
    for a, b in zip(gj, gp):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    assert tj == pytest.approx(s2sad.jvp(_nan_stats, (x, y), (y, x))[1], rel=1e-11)
