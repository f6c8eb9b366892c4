"""Subgradients at ties (not differentiable, so not covered by the finite-difference table): the
adjoint is shared evenly among tied candidates."""
import numpy as np
import pytest

from rulecheck import tangent_function
from s2sad.rules import lookup, lookup_method


def adj(fn, param, g, *args, **kwargs):
    rule = lookup(fn) if not isinstance(fn, str) else lookup_method(fn)
    ans = fn(*args, **kwargs) if not isinstance(fn, str) else getattr(args[0], fn)(*args[1:], **kwargs)
    return rule.adjoint_function(param)(g, ans, **rule.bind(args, kwargs))


def test_maximum_minimum_ties_split_evenly():
    a = np.array([1.0, 2.0, 3.0])
    b = np.array([1.0, 1.0, 4.0])
    g = np.array([2.0, 2.0, 2.0])
    np.testing.assert_array_equal(adj(np.maximum, "x1", g, a, b), [1.0, 2.0, 0.0])
    np.testing.assert_array_equal(adj(np.maximum, "x2", g, a, b), [1.0, 0.0, 2.0])
    np.testing.assert_array_equal(adj(np.minimum, "x1", g, a, b), [1.0, 0.0, 2.0])
    np.testing.assert_array_equal(adj(np.minimum, "x2", g, a, b), [1.0, 2.0, 0.0])
    np.testing.assert_array_equal(adj(np.fmax, "x1", g, a, b), [1.0, 2.0, 0.0])


def test_maximum_tie_with_broadcast_scalar():
    a = np.array([0.0, 1.0, 0.0, -1.0])
    g = np.ones(4)
    assert adj(np.maximum, "x2", g, a, np.float64(0.0)) == 2.0  # two ties, one win


def test_max_min_reductions_split_ties():
    x = np.array([[1.0, 3.0, 3.0, 2.0], [5.0, 5.0, 5.0, 0.0]])
    g = np.array([6.0, 6.0])
    np.testing.assert_allclose(adj(np.max, "a", g, x, axis=1),
                               [[0, 3, 3, 0], [2, 2, 2, 0]])
    np.testing.assert_allclose(adj(np.amin, "a", 4.0, np.array([2.0, 1.0, 1.0])), [0, 2, 2])
    np.testing.assert_allclose(adj("max", "self", 4.0, np.array([2.0, 1.0, 2.0])), [2, 0, 2])


def test_clip_at_bounds_splits():
    a = np.array([-1.0, 0.0, 0.5, 1.0, 2.0])
    g = np.ones(5)
    ga = adj(np.clip, "a", g, a, np.array(0.0), np.array(1.0))
    glo = adj(np.clip, "a_min", g, a, np.array(0.0), np.array(1.0))
    ghi = adj(np.clip, "a_max", g, a, np.array(0.0), np.array(1.0))
    np.testing.assert_allclose(ga, [0, 0.5, 1, 0.5, 0])
    assert glo == 1.5 and ghi == 1.5          # sums: the adjoints add up to g everywhere
    assert glo.shape == () and ghi.shape == ()


def test_norm_inf_ties():
    x = np.array([1.0, -3.0, 3.0])
    np.testing.assert_allclose(adj(np.linalg.norm, "x", 2.0, x, np.inf), [0, -1, 1])


@pytest.mark.filterwarnings("ignore:All-NaN slice")
def test_nanmax_nanmin_skip_nans_and_split_ties():
    x = np.array([[1.0, np.nan, 3.0, 3.0], [np.nan] * 4, [2.0, -1.0, np.nan, 0.5]])
    g = np.array([4.0, 5.0, 6.0])
    # ties split, nan positions and an all-nan row get nothing
    np.testing.assert_allclose(adj(np.nanmax, "a", g, x, axis=1),
                               [[0, 0, 2, 2], [0, 0, 0, 0], [6, 0, 0, 0]])
    np.testing.assert_allclose(adj(np.nanmin, "a", g, x, axis=1),
                               [[4, 0, 0, 0], [0, 0, 0, 0], [0, 6, 0, 0]])
    r = lookup(np.nanmax)
    t = tangent_function(r, "a")(np.ones_like(x), np.nanmax(x, axis=1), **r.bind((x,), {"axis": 1}))
    np.testing.assert_allclose(t, [1.0, 0.0, 1.0])


def test_nan_to_num_passes_only_finite_entries():
    x = np.array([1.0, np.nan, np.inf, -np.inf, -2.0])
    np.testing.assert_allclose(adj(np.nan_to_num, "x", np.full(5, 3.0), x), [3, 0, 0, 0, 3])


def test_median_ties_and_quantile_interpolation():
    # the sort picks one of the tied values: the gradient sums to g
    ga = adj(np.median, "a", 2.0, np.array([1.0, 1.0, 1.0]))
    assert ga.sum() == 2.0 and np.count_nonzero(ga) == 1
    # q = 0.25 of 5 values: h = 1, exactly the second smallest
    np.testing.assert_allclose(adj(np.quantile, "a", 1.0, np.array([5.0, 1.0, 4.0, 2.0, 3.0]), 0.25),
                               [0, 0, 0, 1, 0])
    # q = 0.3: h = 1.2 -> 0.8 on the 2nd smallest, 0.2 on the 3rd
    np.testing.assert_allclose(adj(np.quantile, "a", 1.0, np.array([5.0, 1.0, 4.0, 2.0, 3.0]), 0.3),
                               [0, 0, 0, 0.8, 0.2])
