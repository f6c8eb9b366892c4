"""Keywords that change semantics (``out=``, ``where=`` on a ufunc, ``order=`` where unsupported,
and the like) on a value that carries a derivative raise ``s2sad.RuleError`` naming the call and
the user's file:line -- end to end, through ``s2sad.grad`` on user functions.  The same keywords
on inactive values run as NumPy runs them, and the rest of the function is differentiated.
"""
import inspect

import numpy as np
import pytest

import s2sad
from s2sad.errors import RuleError, S2SADError
from s2sad.testing import check_grads

RNG = np.random.default_rng(3)
X = RNG.uniform(0.5, 1.5, (3, 4))
W = RNG.uniform(-1, 1, (4, 2))
MASK = X > 1.0

BUGS = {
    "B16": "bug B16: out= on an active value is not refused when the call's result is unused "
           "(statement `np.exp(x, out=buf)` or unused target): the write into `out` is invisible "
           "and the gradient is silently zero",
}


FIXED = ['B1', 'B10', 'B11', 'B12', 'B14', 'B15', 'B16', 'B2', 'B3', 'B4', 'B5', 'B6', 'B7', 'B8', 'B9']   # bugs fixed in s2sad since these tests were written


def xfail(bug):
    if bug in FIXED:
        return pytest.mark.skipif(False, reason="fixed")   # fixed: now runs as a plain test
    return pytest.mark.xfail(strict=True, reason=BUGS[bug])


def _line_of(f, needle):
    src, first = inspect.getsourcelines(f)
    return first + next(k for k, text in enumerate(src) if needle in text)


# -- active: refused --------------------------------------------------------------------------------
def ufunc_out(x):
    buf = np.empty_like(x)
    return np.sum(np.exp(x, out=buf))


def ufunc_out_binary(x):
    buf = np.empty_like(x)
    y = np.multiply(x, 2.0, out=buf)
    return np.sum(y)


def ufunc_out_self(x):
    y = x * 1.0
    z = np.sin(y, out=y)
    return np.sum(z)


def ufunc_out_tuple(x):
    buf = np.empty_like(x)
    return np.sum(np.add(x, x, out=(buf,)))


def ufunc_where(x):
    return np.sum(np.add(x, 1.0, where=MASK))


def ufunc_where_out(x):
    buf = np.zeros_like(x)
    return np.sum(np.log(x, out=buf, where=MASK))


def ufunc_where_active_mask(x):
    return np.sum(np.sqrt(x, where=x > 1.0))


def reduction_out(x):
    buf = np.empty(4)
    return np.sum(np.sum(x, axis=0, out=buf))


def reduction_where(x):
    return np.sum(x, where=MASK)


def mean_where(x):
    return np.mean(x, axis=1, where=MASK).sum()


def max_where(x):
    return np.max(x, initial=0.0, where=MASK)


def method_sum_out(x):
    buf = np.empty(3)
    return x.sum(axis=1, out=buf).sum()


def method_clip_out(x):
    buf = np.empty_like(x)
    return x.clip(0.7, 1.2, out=buf).sum()


def var_mean(x):
    return np.var(x, axis=1, mean=np.mean(x, axis=1, keepdims=True)).sum()


def cumsum_out(x):
    buf = np.empty_like(x)
    return np.cumsum(x, axis=1, out=buf).sum()


def dot_out(x):
    buf = np.empty((3, 2))
    return np.sum(np.dot(x, W, out=buf))


def matmul_axes(x):
    return np.sum(np.matmul(x, W, axes=[(-2, -1), (-2, -1), (-2, -1)]))


def einsum_out(x):
    buf = np.empty((3, 2))
    return np.sum(np.einsum("ij,jk->ik", x, W, out=buf))


def sort_order(x):
    return np.sum(np.sort(x, order="f0"))


def linspace_retstep(x):
    pts, step = np.linspace(x[0, 0], x[1, 1], 5, retstep=True)
    return np.sum(pts) * step


def ravel_order_k(x):
    return np.sum(np.sin(x[:, ::2].ravel(order="K")))


def np_ravel_order_k(x):
    return np.sum(np.ravel(x.T[::2], order="K") ** 2)


def flatten_order_k(x):
    return np.sum(np.cos(x[::2, ::-1].flatten(order="K")))


def diff_prepend(x):
    return np.sum(np.diff(x, axis=1, prepend=0.0) ** 2)


def clip_out(x):
    buf = np.empty_like(x)
    return np.sum(np.clip(x, 0.7, 1.2, out=buf))


def take_out(x):
    buf = np.empty(2)
    return np.sum(np.take(x, [0, 5], out=buf))


# (function, a text of the offending line, the keyword named in the message)
REFUSED = [
    (ufunc_out, "np.exp(x, out=buf)", "out"),
    (ufunc_out_binary, "np.multiply(x, 2.0, out=buf)", "out"),
    (ufunc_out_self, "np.sin(y, out=y)", "out"),
    (ufunc_out_tuple, "np.add(x, x, out=(buf,))", "out"),
    (ufunc_where, "where=MASK", "where"),
    (ufunc_where_out, "np.log(x, out=buf, where=MASK)", None),
    (ufunc_where_active_mask, "np.sqrt(x, where=x > 1.0)", "where"),
    (reduction_out, "np.sum(x, axis=0, out=buf)", "out"),
    (method_sum_out, "x.sum(axis=1, out=buf)", "out"),
    (method_clip_out, "x.clip(0.7, 1.2, out=buf)", "out"),
    (var_mean, "np.var(x, axis=1, mean=", "mean"),
    (cumsum_out, "np.cumsum(x, axis=1, out=buf)", "out"),
    (dot_out, "np.dot(x, W, out=buf)", "out"),
    (matmul_axes, "np.matmul(x, W, axes=", "axes"),
    (einsum_out, "np.einsum(\"ij,jk->ik\", x, W, out=buf)", "out"),
    (sort_order, "np.sort(x, order=\"f0\")", "order"),
    (linspace_retstep, "retstep=True", "retstep"),
    (ravel_order_k, "ravel(order=\"K\")", "order"),
    (np_ravel_order_k, "np.ravel(x.T[::2], order=\"K\")", "order"),
    (flatten_order_k, "flatten(order=\"K\")", "order"),
    (clip_out, "np.clip(x, 0.7, 1.2, out=buf)", "out"),
    (take_out, "np.take(x, [0, 5], out=buf)", "out"),
]


@pytest.mark.parametrize("f,line,kw", REFUSED, ids=[f.__name__ for f, _, _ in REFUSED])
def test_refused_on_active_value(f, line, kw):
    x = X.copy()
    with pytest.raises(RuleError) as ei:
        s2sad.grad(f)(x)
    msg = str(ei.value)
    lineno = _line_of(f, line)
    assert f"test_bad_keywords_e2e.py:{lineno}" in msg, msg
    assert line in msg, msg                                  # the user's source line is quoted
    if kw is not None:
        assert f"{kw}=" in msg, msg                          # the keyword is named
    assert "Fix:" in msg or "use " in msg, msg             # and how to fix it
    np.testing.assert_array_equal(x, X)


def test_diff_prepend_is_differentiated():
    # (refused until np.diff's rule took prepend=/append=)
    from s2sad.testing import check_grads
    check_grads(diff_prepend, (X.copy(),), modes=("rev", "fwd"))


def test_message_names_the_callee():
    with pytest.raises(RuleError) as ei:
        s2sad.grad(ufunc_out)(X)
    msg = str(ei.value)
    assert "exp(" in msg and "out=" in msg and "carries a derivative" in msg, msg
    with pytest.raises(RuleError) as ei:
        s2sad.grad(method_sum_out)(X)
    assert "sum(" in str(ei.value) and "out=" in str(ei.value), str(ei.value)


@pytest.mark.parametrize("f", [reduction_where, mean_where, max_where],
                         ids=["reduction_where", "mean_where", "max_where"])
def test_where_of_a_reduction_is_differentiated(f):
    # where= of the reductions was refused; it now has derivatives (tests/rules/
    # test_reduction_where.py): the masked-out elements get zero
    g = s2sad.grad(f)(X)
    assert np.all(g[~np.broadcast_to(MASK, X.shape)] == 0.0)
    if f is mean_where:
        # MASK leaves row 1 empty: its mean is nan (0/0, as NumPy says) and depends on no element,
        # so the row gets zero, not nan; the other rows get 1 / (their count)
        with np.errstate(invalid="ignore"):
            assert np.isnan(f(X))
        np.testing.assert_array_equal(g, MASK / np.maximum(MASK.sum(axis=1, keepdims=True), 1))
    else:
        check_grads(f, (X,), modes=("rev", "fwd"))


def test_refused_at_build_time_not_after_running():
    """The refusal comes before the user's code runs: no partial writes into out=."""
    calls = []

    def f(x):
        calls.append(1)
        buf = np.zeros_like(x)
        return np.sum(np.exp(x, out=buf))

    with pytest.raises(RuleError):
        s2sad.grad(f)(X)
    assert calls == []


# -- out= whose result is unused: the write itself is the output ------------------------------------
def out_statement(x):
    buf = np.empty_like(x)
    np.exp(x, out=buf)
    return np.sum(buf)


def out_unused_target(x):
    buf = np.empty_like(x)
    _ = np.multiply(x, 2.0, out=buf)
    return np.sum(buf * buf)


def out_where_statement(x):
    buf = np.zeros_like(x)
    np.add(x, 1.0, out=buf, where=MASK)
    return np.sum(buf ** 2)


def cumsum_out_statement(x):
    buf = np.empty_like(x)
    np.cumsum(x, axis=1, out=buf)
    return np.sum(buf ** 2)


@pytest.mark.parametrize("f", [pytest.param(f, marks=xfail("B16")) for f in
                               (out_statement, out_unused_target, out_where_statement,
                                cumsum_out_statement)])
def test_out_with_unused_result(f):
    """Right, or refused with the line; today: silently zero gradient."""
    try:
        check_grads(f, (X,))
    except S2SADError as e:
        assert "test_bad_keywords_e2e.py" in str(e), str(e)
        assert "out=" in str(e)


# -- the same keywords on inactive values work ----------------------------------------------------
def inactive_out(x):
    buf = np.empty((3, 4))
    c = np.exp(MASK * 1.0, out=buf)                  # nothing active flows into out=
    return np.sum(x * c)


def inactive_out_statement(x):
    buf = np.empty((3, 4))
    np.multiply(MASK, 2.0, out=buf)
    return np.sum(x * buf)


def inactive_where(x):
    c = np.add(np.ones((3, 4)), 1.0, out=np.zeros((3, 4)), where=MASK)
    return np.sum(x * c)


def inactive_reduction_where(x):
    k = np.sum(MASK, axis=0, where=MASK)
    s = np.sum(np.ones((3, 4)), where=MASK)
    return np.sum(x * k) * s


def inactive_order(x):
    idx = np.arange(12).reshape(3, 4, order="F").ravel(order="K")
    return np.sum(x.ravel()[idx] ** 2)


def inactive_sort_order(x):
    rec = np.array([(2, 1.0), (1, 3.0)], dtype=[("a", int), ("b", float)])
    s = np.sort(rec, order="a")
    return np.sum(x) * s["b"][0]


def inactive_cumsum_out(x):
    buf = np.empty(4)
    np.cumsum(np.arange(4.0), out=buf)
    return np.sum(x * buf)


def inactive_linspace_retstep(x):
    pts, step = np.linspace(0.0, 1.0, 4, retstep=True)
    return np.sum(x * pts) * step


def active_allowed_keywords(x):
    # order='F' on reshape/ravel and where=True / out=None spelled out are supported
    y = np.reshape(x, (4, 3), order="F").ravel(order="F")
    z = np.exp(x, out=None, where=True)
    return np.sum(y ** 2) + np.sum(z, where=True) + np.sum(np.add(x, x, order="F"))


def memory_order_k_and_a(x):
    # order='K' / 'A' follow memory order: on a Fortran-ordered x.T they read column by column
    w = np.arange(12.0)
    return np.sum(x.T.ravel(order="K") * w) + np.sum(np.reshape(x.T, (12,), order="A") * w ** 2) \
        + np.sum(x.ravel(order="K") * np.sqrt(w))


INACTIVE = [inactive_out, inactive_out_statement, inactive_where, inactive_reduction_where,
            inactive_order, inactive_sort_order, inactive_cumsum_out, inactive_linspace_retstep,
            active_allowed_keywords, memory_order_k_and_a]


@pytest.mark.parametrize("f", INACTIVE, ids=[f.__name__ for f in INACTIVE])
def test_same_keywords_on_inactive_values(f):
    check_grads(f, (X,))
    value = s2sad.value_and_grad(f)(X)[0]
    assert value == pytest.approx(f(X), rel=1e-12)


# -- a value that carries a derivative into a parameter the rule has no derivative for ------------
def pad_with_active_fill(x, d):
    return np.sum(np.pad(x, 1, constant_values=d) ** 2)


def test_active_value_into_a_parameter_without_derivative_is_refused():
    # np.pad's rule differentiates `array` only: an active fill value must not silently get zero
    with pytest.raises(s2sad.RuleError, match="constant_values") as ei:
        s2sad.grad(pad_with_active_fill, wrt=(0, 1))(np.ones(3), 0.5)
    assert f"{__file__}:{_line_of(pad_with_active_fill, 'np.pad')}" in str(ei.value)
    # a constant fill value is fine
    g = s2sad.grad(pad_with_active_fill)(np.ones(3), 0.5)
    np.testing.assert_allclose(g, 2 * np.ones(3))
