"""The numba versions of the helpers derivatives call in jit=True mode (s2sad/runtime/jit.py,
s2sad/rules/jit.py): each compiled derivative gives the Python derivative's numbers (1e-12; float32
to float32 rounding, in float32), the inputs' dtypes, and finite differences' numbers; a type a
helper has no body for falls back to Python with one warning and the same numbers.

Each user function below exercises several helpers, so that one compile covers them."""
import math
import warnings

import numpy as np
import pytest

import s2sad
from s2sad.errors import JitFallbackWarning
from s2sad.testing import check_grads

numba = pytest.importorskip("numba")


# -- functions whose derivatives compile -----------------------------------------------------------
def structure(A, x):            # triu, tril, diag (both ways), reshape_back, transpose, outer
    s = np.sum(np.triu(A, 1) * A) + np.sum(np.tril(A) ** 3) + np.sum(np.diag(A) ** 2)
    s = s + np.sum(np.diag(np.diag(A, -1), -1) * A) + np.sum(np.sin(A.reshape(-1)))
    s = s + np.sum(np.cos(A.ravel())) + np.sum(A.T @ A) + np.sum(np.transpose(A) * A)
    return s + np.sum(np.outer(x, np.diag(A)) ** 2) + np.sum(np.triu(x) * A)


def kron2(x, y):                # kron of matrices and of vectors
    return np.sum(np.kron(x, y) ** 2) + np.sum(np.kron(np.diag(x), np.diag(y)) * 0.5)


def linalg(A, b, B):            # det, slogdet, inv, solve (vector and matrix), cholesky
    S = A @ A.T + np.eye(A.shape[0])
    s, l = np.linalg.slogdet(A)
    L = np.linalg.cholesky(S)
    return (np.linalg.det(A) + l + np.sum(np.linalg.inv(A) ** 2)
            + np.sum(np.linalg.solve(A, b) ** 2) + np.sum(np.linalg.solve(S, B))
            + np.sum(L * L) + np.sum(np.tril(L, -1)))


def selections(x, y):           # where, maximum, minimum, abs
    s = np.sum(np.where(x > 0.2, x ** 2, np.sin(x))) + np.sum(np.where(y < 0, 0.0, y) * x)
    s = s + np.sum(np.maximum(x, y) * x) + np.sum(np.minimum(x, 0.1) ** 2)
    return s + np.sum(np.abs(x) * y) + np.sum(np.maximum(x, x) * y)


def statistics(A, x):           # sum over an axis, var, std, prod, max/min, mean
    s = np.sum(np.sum(A, axis=0) ** 2) + np.sum(np.sum(A, 1) * x[:A.shape[0]])
    s = s + np.std(x) * np.var(x) + np.var(A) + np.prod(x) + np.prod(A)
    return s + np.max(x) * np.min(A) + np.mean(A) ** 2 + np.max(A)


def powers(x, y, n):            # x ** k (literal and not), ** arrays, np.power
    s = np.sum(x ** 2) + np.sum(x ** 3) + np.sum(x ** 1) + np.sum(x ** 0)
    s = s + np.sum(x ** y) + np.sum(np.power(x, y)) + np.sum(np.power(x, 2.5))
    s = s + np.sum(np.power(x, n)) + np.sum(x ** n) + np.sum(np.power(2.0, y))
    return s + np.sum(x ** 0.5)


def scalars(a, b):              # acc of scalars, abs of a float, ** with a float exponent
    y = a * b * b * b
    y = y * a * b + abs(a - 2 * b) * a
    return y + a ** 2.5 + b ** 3


def newaxis(x):                 # getitem adjoints with None in the index
    return np.sum(np.sin(x[:, None] - x[None, :]) * x[None, :])


def permute3(A):                # transpose with an axes tuple (a fallback before round 2)
    return np.sum(np.transpose(A, (1, 0, 2)) * A) + np.sum(np.transpose(A, (2, 0, 1)) ** 2)


_R = np.random.default_rng(11)
_M = _R.standard_normal((4, 4)) + 4 * np.eye(4)
COMPILED = [
    (structure, (_M, _R.standard_normal(4)), (0, 1)),
    (kron2, (_R.standard_normal((3, 2)), _R.standard_normal((2, 3))), (0, 1)),
    (linalg, (_M, _R.standard_normal(4), _R.standard_normal((4, 2))), (0, 1, 2)),
    (selections, (np.array([0.5, -0.3, 0.1, 0.2, 1.2]), np.array([0.4, -1.0, 0.1, -0.2, 2.0])),
     (0, 1)),
    (statistics, (_R.standard_normal((3, 5)), _R.standard_normal(5)), (0, 1)),
    (powers, (_R.random(5) + 0.5, _R.standard_normal(5), 3), (0, 1)),
    (scalars, (1.3, 0.7), (0, 1)),
    (newaxis, (_R.standard_normal(6),), 0),
    (permute3, (_R.standard_normal((2, 2, 3)),), 0),
]


def _tuple(g, wrt):
    return g if isinstance(wrt, tuple) else (g,)


def _compiled(f, wrt, args):
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        return s2sad.value_and_grad(f, wrt=wrt, jit=True)(*args)


@pytest.mark.parametrize("f, args, wrt", COMPILED, ids=[c[0].__name__ for c in COMPILED])
def test_compiled_helpers_match_python(f, args, wrt):
    vj, gj = _compiled(f, wrt, args)
    vp, gp = s2sad.value_and_grad(f, wrt=wrt)(*args)
    assert vj == pytest.approx(vp, rel=1e-12)
    for a, b, i in zip(_tuple(gj, wrt), _tuple(gp, wrt), wrt if isinstance(wrt, tuple) else (wrt,)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
        assert np.shape(a) == np.shape(args[i]) and np.asarray(a).dtype == np.asarray(b).dtype
    if f is selections:             # its arguments sit on ties and kinks: differences elsewhere
        args = tuple(a + 0.0123 for a in args)
    check_grads(f, args, wrt=wrt)


# -- float32 and complex inputs --------------------------------------------------------------------
def f32(A, x):
    return (np.sum(np.triu(A) * A) + np.sum(A.T @ A) + np.sum(np.kron(A, A)) + np.sum(x ** 2)
            + np.sum(x ** 3) + np.sum(np.where(x > 0, x, 0 * x)) + np.sum(np.maximum(x, 0.1))
            + np.sum(np.sum(A, axis=0) * x[:3]) + np.sum(A.reshape(-1) ** 2) + np.prod(x))


def complex_inputs(A, x):       # kron, triu, transpose, reshape, outer, det, inv, prod, power
    K = np.kron(A, A) + np.outer(x, x)
    M = np.triu(A).reshape(-1)
    T = A.T @ A
    z = np.sum(K * np.conj(K)) + np.sum(M * np.conj(M)) + np.sum(T * np.conj(T)) + np.prod(x) * np.conj(np.prod(x))
    d = np.linalg.det(A)
    Ai = np.linalg.inv(A)
    return np.real(z + d * np.conj(d) + np.sum(Ai * np.conj(Ai)) + np.sum(x ** 2))


def test_float32_runs_as_python_with_numpys_numbers():
    """numba promotes a Python float times a float32 array to float64 (NumPy 2 keeps float32):
    float32 arguments run as Python, with one warning, so the numbers and dtypes are NumPy's."""
    r = np.random.default_rng(3)
    A = r.standard_normal((3, 3)).astype(np.float32)
    x = r.standard_normal(4).astype(np.float32)
    with pytest.warns(JitFallbackWarning, match="dtype float32"):
        vj, gj = s2sad.value_and_grad(f32, wrt=(0, 1), jit=True)(A, x)
    vp, gp = s2sad.value_and_grad(f32, wrt=(0, 1))(A, x)
    assert vj == vp
    for a, b in zip(gj, gp):
        assert a.dtype == b.dtype == np.float32
        np.testing.assert_array_equal(a, b)


def test_complex_inputs():
    r = np.random.default_rng(4)
    A = r.standard_normal((3, 3)) + 1j * r.standard_normal((3, 3)) + 3 * np.eye(3)
    x = r.standard_normal(9) + 1j * r.standard_normal(9)
    args = (A, x)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always", JitFallbackWarning)
        vj, gj = s2sad.value_and_grad(complex_inputs, wrt=(0, 1), jit=True)(*args)
    vp, gp = s2sad.value_and_grad(complex_inputs, wrt=(0, 1))(*args)
    assert [str(w.message) for w in rec if w.category is JitFallbackWarning] == []
    assert vj == pytest.approx(vp, rel=1e-12)
    for a, b in zip(gj, gp):
        assert a.dtype == b.dtype == np.complex128
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    check_grads(complex_inputs, args, wrt=(0, 1))


# -- types a helper has no body for: Python runs, with one warning and the same numbers -----------
def kron3(x, y):
    return np.sum(np.kron(x, y) ** 2)


def triu3(A):
    return np.sum(np.triu(A) ** 2)


def outer_scalar(x):
    return np.sum(np.outer(x, 2.0) ** 2)


def inv_stack(A):
    return np.sum(np.linalg.inv(A))


def det_stack(A):
    return np.sum(np.linalg.det(A))


def slogdet_complex(A):
    return np.linalg.slogdet(A)[1]


def where_scalar_condition(x):
    return np.sum(np.where(x[0] > 0, x, 2 * x))


def maximum_complex_adjoint(x, y):
    return np.sum(np.maximum(x, y) * (1 + 2j)).real


def fsum_values(A):                 # (numba has no math.fsum)
    return math.fsum(A[:, 0] * A[:, 1])


def power_scalar_exponent(a, b):
    return a ** b


def abs_complex(z):
    return np.sum(np.abs(z)) + 0 * np.sum(np.real(z))


FALLBACK = [
    (kron3, lambda r: (r.standard_normal((2, 2, 2)), r.standard_normal((2, 1, 2))), (0, 1)),
    (triu3, lambda r: (r.standard_normal((2, 3, 3)),), 0),
    (outer_scalar, lambda r: (r.standard_normal(3),), 0),
    (inv_stack, lambda r: (r.standard_normal((2, 3, 3)) + 3 * np.eye(3),), 0),
    (det_stack, lambda r: (r.standard_normal((2, 3, 3)),), 0),
    (where_scalar_condition, lambda r: (r.standard_normal(4),), 0),
    (fsum_values, lambda r: (r.standard_normal((3, 2)),), 0),
    (power_scalar_exponent, lambda r: (1.7, 0.6), (0, 1)),
]


@pytest.mark.parametrize("f, make, wrt", FALLBACK, ids=[c[0].__name__ for c in FALLBACK])
def test_unhandled_types_fall_back_with_the_same_numbers(f, make, wrt):
    args = make(np.random.default_rng(5))
    with pytest.warns(JitFallbackWarning) as rec:
        vj, gj = s2sad.value_and_grad(f, wrt=wrt, jit=True)(*args)
    # (the first JitFallbackWarning: numba on Python 3.12 adds DeprecationWarnings of its own)
    assert "runs as Python" in str(next(w for w in rec if w.category is JitFallbackWarning).message)
    vp, gp = s2sad.value_and_grad(f, wrt=wrt)(*args)
    assert vj == vp
    for a, b in zip(_tuple(gj, wrt), _tuple(gp, wrt)):
        np.testing.assert_array_equal(a, b)
    check_grads(f, args, wrt=wrt)


# -- bodies the generated forward code cannot reach yet (numba has no np.mean/np.std over an axis,
# nor keepdims): the helpers called directly against their Python twins --------------------------
def test_axis_bodies_match_the_python_helpers():
    from s2sad.rules import jit as J
    from s2sad.rules.numpy import reductions as R

    @numba.njit
    def run(g1, g2, A, ans_std, ans_max, gk):
        return (J.sum(g1, A, 1, False), J.sum(gk, A, 0, True), J.mean(g1, A, -1, False),
                J.mean(gk, A, 0, True), J.var(g1, A, 1, J._correction(1, None), False),
                J.std(g2, ans_std, A, 0, J._correction(0, None), False),
                J.extremum(g2, ans_max, A, 0, False))

    r = np.random.default_rng(6)
    A = r.standard_normal((3, 4))
    A[1, 2] = A[0, 2]                                    # a tie for the max over axis 0
    A[:, 3] = 1.5                                        # a zero standard deviation
    A[2, 2] = A[0, 2] = 9.0
    g1, g2, gk = r.standard_normal(3), r.standard_normal(4), r.standard_normal((1, 4))
    s, m = np.std(A, axis=0), np.max(A, axis=0)
    got = run(g1, g2, A, s, m, gk)
    want = (R.sum(g1, A, 1, False), R.sum(gk, A, 0, True), R.mean(g1, A, -1, False),
            R.mean(gk, A, 0, True), R.var(g1, A, 1, 1, False), R.std(g2, s, A, 0, 0, False),
            R.extremum(g2, m, A, 0, False))
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    assert got[6][0, 2] == got[6][2, 2] == 0.5 * g2[2]   # the tie shares g
    assert np.all(got[5][:, 3] == 0.0)
