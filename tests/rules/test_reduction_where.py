"""``where=`` of NumPy's reductions (np.sum/mean/prod/max/min/var/std, their methods, the
nan-reductions and ufunc.reduce): the elements the mask leaves out take no part in the value, so
they get a zero derivative, and the others get that of the reduction over the kept ones.  They
were refused before.  Checked against finite differences in both modes, and against the
derivative of the same reduction written with np.where on the kept elements."""
import numpy as np
import pytest

import s2sad
from s2sad.testing import check_grads

RNG = np.random.default_rng(7)
X = RNG.normal(size=(4, 5)) + 0.1 * np.arange(20).reshape(4, 5)   # distinct values (no ties)
M = RNG.random((4, 5)) > 0.35
M[:, 0] = True                                                     # every row keeps one
ROW = np.array([True, False, True, True, False])                   # broadcast against (4, 5)


def _fns():
    return {
        "sum": lambda x, w: np.sum(np.sin(x), where=w),
        "sum_axis": lambda x, w: np.sum(x * x, axis=1, where=w) @ np.arange(4.0),
        "sum_keepdims_initial": lambda x, w: np.sum(
            np.sum(x, axis=0, keepdims=True, initial=1.5, where=w) ** 2),
        "mean": lambda x, w: np.mean(np.exp(x), where=w),
        "mean_axis": lambda x, w: np.sum(np.mean(x, axis=1, where=w) ** 2),
        "prod_axis": lambda x, w: np.sum(np.prod(x, axis=1, where=w)),
        "max_axis": lambda x, w: np.sum(np.max(x, axis=1, initial=-10.0, where=w) ** 2),
        "min": lambda x, w: np.min(x, initial=10.0, where=w),
        "var_axis": lambda x, w: np.sum(np.var(x, axis=1, where=w)),
        "std_ddof": lambda x, w: np.sum(np.std(x, axis=0, ddof=1, where=w | ROW)),
        "method_sum": lambda x, w: (x ** 2).sum(axis=0, where=w) @ np.arange(5.0),
        "method_mean": lambda x, w: x.mean(where=w) * x[0, 0],
        "method_max": lambda x, w: x.max(axis=1, initial=-10.0, where=w).sum(),
        "method_var": lambda x, w: x.var(axis=1, where=w).sum(),
        "nansum": lambda x, w: np.nansum(x * x, axis=1, where=w).sum(),
        "nanmean": lambda x, w: np.nanmean(np.cos(x), axis=0, where=w | ROW).sum(),
        "nanvar": lambda x, w: np.nanvar(x, axis=1, where=w).sum(),
        "nanstd": lambda x, w: np.nanstd(x, axis=1, where=w).sum(),
        "nanmax": lambda x, w: np.nanmax(x, axis=1, initial=-10.0, where=w).sum(),
        "add_reduce": lambda x, w: np.add.reduce(x * x, axis=1, where=w).sum(),
        "multiply_reduce": lambda x, w: np.multiply.reduce(x, axis=1, where=w).sum(),
        "maximum_reduce": lambda x, w: np.maximum.reduce(x, axis=1, initial=-10.0,
                                                         where=w).sum(),
        "row_mask_broadcast": lambda x, w: np.sum(np.mean(x ** 3, axis=1, where=ROW)),
    }


FNS = _fns()


@pytest.mark.parametrize("name", sorted(FNS))
def test_where_reduction_matches_finite_differences(name):
    check_grads(FNS[name], (X, M), wrt=0, modes=("rev", "fwd"))


# the same reductions, written without where= (what a user would write before): the derivatives
# must agree exactly in structure (zero off the mask)
_PLAIN = {
    "sum_axis": lambda x, w: np.sum(np.where(w, x * x, 0.0), axis=1) @ np.arange(4.0),
    "mean_axis": lambda x, w: np.sum((np.sum(np.where(w, x, 0.0), axis=1) / w.sum(axis=1)) ** 2),
    "prod_axis": lambda x, w: np.sum(np.prod(np.where(w, x, 1.0), axis=1)),
    "max_axis": lambda x, w: np.sum(np.max(np.where(w, x, -10.0), axis=1) ** 2),
}


@pytest.mark.parametrize("name", sorted(_PLAIN))
def test_where_reduction_equals_the_masked_rewrite(name):
    g = s2sad.grad(FNS[name])(X, M)
    ref = s2sad.grad(_PLAIN[name])(X, M)
    np.testing.assert_allclose(g, ref, rtol=1e-12, atol=1e-12)
    assert np.all(g[~M] == 0.0)


def test_where_elements_left_out_get_zero_even_when_they_would_win():
    # the largest element is masked out: max takes the largest kept one, and only it gets g
    x = np.array([1.0, 9.0, 3.0, 2.0])
    w = np.array([True, False, True, True])
    g = s2sad.grad(lambda x: np.max(x, initial=-np.inf, where=w))(x)
    np.testing.assert_array_equal(g, [0.0, 0.0, 1.0, 0.0])
    # the initial value wins where nothing kept reaches it
    g = s2sad.grad(lambda x, c: np.max(x, initial=c, where=w), wrt=(0, 1))(x, 5.0)
    np.testing.assert_array_equal(g[0], [0.0, 0.0, 0.0, 0.0])
    assert g[1] == 1.0


def test_where_float32_stays_float32():
    x = X.astype(np.float32)
    for name in ("sum_axis", "mean_axis", "var_axis", "nanvar", "max_axis"):
        g = s2sad.grad(FNS[name])(x, M)
        assert g.dtype == np.float32, name


def test_default_mask_reads_as_before_in_the_generated_source():
    def f(x):
        return np.sum(np.mean(x, axis=1) ** 2)
    src = s2sad.differentiate(f).adjoint_source(X)
    assert "_adj.mean(_b_1, x, 1, False)" in src and "where=" not in src, src
    src = s2sad.differentiate(FNS["mean_axis"]).adjoint_source(X, M)
    assert "where=w" in src, src


@pytest.mark.parametrize("name", ["sum_axis", "mean_axis", "max_axis", "var_axis", "std_ddof",
                                  "method_mean"])
def test_where_second_derivatives(name):
    # the adjoint helpers' own rules pass where= on (forward over reverse)
    f = FNS[name]
    h = s2sad.hessian(lambda x: f(x, M))(X)
    gr = s2sad.grad(lambda x: f(x, M))
    eps = 1e-6
    for i, j in ((0, 0), (1, 3), (3, 4)):
        e = np.zeros_like(X)
        e[i, j] = eps
        fd = (gr(X + e) - gr(X - e)) / (2 * eps)
        np.testing.assert_allclose(h[i, j], fd, rtol=1e-5, atol=1e-6)
