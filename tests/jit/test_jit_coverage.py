"""jit=True coverage, round 2: comprehensions over arrays (``_rt.seq``, list adjoints), tuples
returned by inlined functions (``_rt.parts``), built-in max/min, concatenate/stack of lists,
transpose with axes, cumsum, trace, and forward callees numba cannot compile that have numba
versions (rules/jit_substitutes.py: scipy.linalg.solve_triangular/cho_solve/cholesky, np.kron of
a view).  Each compiled derivative gives Python mode's numbers (1e-12) and finite differences'.

One user function covers several helpers, so that one compile checks them."""
import math
import warnings

import numpy as np
import pytest
import scipy.linalg

import s2sad
from s2sad.errors import JitFallbackWarning
from s2sad.testing import check_grads

numba = pytest.importorskip("numba")


def _pair(t):                       # inlined in jit mode: its tuple's adjoint is _rt.parts'
    p = 1.0 / (1.0 + math.exp(-t))
    return 2.0 * p, math.log(p) + math.log(1.0 - p)


def sequences(x, t):                # comprehension over ravel(), tuple unpacking, max/min
    s = np.sum(np.array([math.sin(math.cos(v)) * v for v in x.ravel()]))
    a, b = _pair(t)
    c, d = _pair(x[0, 1])
    return s * a + b * c + d + max(t, 0.1) * min(t * t, 0.3, t) + max(t * 3.0, t * t)


def shapes(A, x):                   # concatenate/stack of lists, transpose(axes), cumsum, trace
    s = np.sum(np.concatenate([x, np.sin(x)]) ** 2) + np.sum(np.stack([x, x * 2]) * 3.0)
    s = s + np.sum(np.concatenate([A, A * x[:3]], axis=1) ** 3)
    s = s + np.sum(np.transpose(A, (1, 0)) * A) + np.sum(np.cumsum(x) ** 2) + np.trace(A) ** 2
    return s + np.sum(np.cumsum(A, axis=1) * A) + np.sum(np.cumsum(A, 0) ** 2) + np.trace(A, 1)


def scipy_linalg(M, y, B):          # solve_triangular (lower/upper, trans), cho_solve, cholesky
    S = M @ M.T + 3.0 * np.eye(M.shape[0])
    L = np.linalg.cholesky(S)
    a = scipy.linalg.solve_triangular(L, y, lower=True)
    b = scipy.linalg.solve_triangular(L.T, B, trans=1)
    c = scipy.linalg.solve_triangular(L, y, lower=True, trans="C", unit_diagonal=True)
    U = scipy.linalg.cholesky(S)
    d = scipy.linalg.cho_solve((U, False), y) + scipy.linalg.cho_solve((L, True), y)
    return a @ a + np.sum(b * B) + np.sum(c ** 2) + np.sum(d * y) + np.sum(U ** 2)


def view_kron(x, y):                # np.kron of a view (numba's takes C/F arrays only)
    return np.sum(np.kron(x[:3, :2], np.triu(y)) ** 2)


_R = np.random.default_rng(21)
COMPILED = [
    (sequences, (_R.standard_normal((3, 4)), 0.4), (0, 1)),
    (shapes, (_R.standard_normal((3, 3)), _R.standard_normal(4)), (0, 1)),
    (scipy_linalg, (_R.standard_normal((4, 4)), _R.standard_normal(4),
                    _R.standard_normal((4, 2))), (0, 1, 2)),
    (view_kron, (_R.standard_normal((4, 3)), _R.standard_normal((2, 2))), (0, 1)),
]


def _compiled(f, wrt, args):
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        return s2sad.value_and_grad(f, wrt=wrt, jit=True)(*args)


@pytest.mark.parametrize("f, args, wrt", COMPILED, ids=[c[0].__name__ for c in COMPILED])
def test_compiled_matches_python(f, args, wrt):
    vj, gj = _compiled(f, wrt, args)
    vp, gp = s2sad.value_and_grad(f, wrt=wrt)(*args)
    assert vj == pytest.approx(vp, rel=1e-12)
    for a, b, i in zip(gj, gp, wrt):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
        assert np.shape(a) == np.shape(args[i]) and np.asarray(a).dtype == np.asarray(b).dtype
    check_grads(f, args, wrt=wrt)
    if f is sequences:              # max/min pick other items: the compiled function again
        args2 = (-args[0], -2.0)
        vj, gj = _compiled(f, wrt, args2)
        vp, gp = s2sad.value_and_grad(f, wrt=wrt)(*args2)
        assert vj == pytest.approx(vp, rel=1e-12)
        for a, b in zip(gj, gp):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_scipy_errors_are_scipys():
    """The numba versions raise what SciPy raises: a singular triangular matrix, NaNs."""
    def f(L, y):
        return np.sum(scipy.linalg.solve_triangular(L, y, lower=True))
    L = np.tril(_R.standard_normal((3, 3))) + 3 * np.eye(3)
    y = _R.standard_normal(3)
    g = s2sad.grad(f, wrt=(0, 1), jit=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        gj = g(L, y)
    L0 = L.copy()
    L0[1, 1] = 0.0
    with pytest.raises(np.linalg.LinAlgError):
        scipy.linalg.solve_triangular(L0, y, lower=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        with pytest.raises(np.linalg.LinAlgError, match="singular"):
            g(L0, y)
        yn = y.copy()
        yn[0] = np.nan
        with pytest.raises(ValueError, match="infs or NaNs"):
            g(L, yn)
    np.testing.assert_allclose(gj[1], s2sad.grad(f, wrt=(0, 1))(L, y)[1], rtol=1e-12)


def test_batched_solve_triangular_falls_back():
    """A stack of matrices has no numba version: it runs as Python, with one warning naming the
    line, and Python's numbers."""
    def f(L, y):
        return np.sum(scipy.linalg.solve_triangular(L, y, lower=True) ** 2)
    L = np.tril(_R.standard_normal((2, 3, 3))) + 3 * np.eye(3)
    y = _R.standard_normal((2, 3, 1))
    with pytest.warns(JitFallbackWarning, match="test_jit_coverage.py"):
        gj = s2sad.grad(f, wrt=(0, 1), jit=True)(L, y)
    gp = s2sad.grad(f, wrt=(0, 1))(L, y)
    for a, b in zip(gj, gp):
        np.testing.assert_array_equal(a, b)


def test_clip_helper_with_literal_which():
    """``_adj.clip``'s numba body against the Python helper, every ``which`` and bound (np.clip
    itself compiles too: tests/jit/test_jit_gaps.py)."""
    from s2sad.rules import jit as J
    from s2sad.rules.numpy import elementwise as E
    a = np.array([-1.0, -0.5, 0.0, 0.5, 0.7, 2.0])
    g = np.arange(1.0, 7.0)

    @numba.njit
    def run(g, a):
        return (J.clip(g, a, -0.5, 0.5, "a"), J.clip(g, a, -0.5, 0.5, "lo"),
                J.clip(g, a, -0.5, 0.5, "hi"), J.clip(g, a, None, 0.7, "a"),
                J.clip(g, a, -0.5, None, "a"), J.clip(g, a, -0.5, None, "lo"))
    got = run(g, a)
    want = (E.clip(g, a, -0.5, 0.5, "a"), E.clip(g, a, -0.5, 0.5, "lo"),
            E.clip(g, a, -0.5, 0.5, "hi"), E.clip(g, a, None, 0.7, "a"),
            E.clip(g, a, -0.5, None, "a"), E.clip(g, a, -0.5, None, "lo"))
    for x, w in zip(got, want):
        np.testing.assert_allclose(x, w, rtol=0, atol=0)
    assert got[0].tolist() == [0.0, 1.0, 3.0, 2.0, 0.0, 0.0]
