"""Class 2 of issue 10: NumPy index tricks.

``np.r_[...]`` and ``np.c_[...]`` are concatenations; they gave zero gradients in both modes
(the items sat in the subscript, a position the getitem rule gives no derivative).  They are now
lowered to a call with the items as arguments and differentiated through the concat family.
``np.mgrid``/``np.ogrid`` expand slices whose bounds may carry derivatives; ``np.s_`` and
``np.index_exp`` return their items.  Every form is checked against central differences in
reverse and forward mode; the forms s2sad does not differentiate are refused with a clear error."""
import numpy as np
import pytest

import s2sad
from s2sad.errors import RuleError, S2SADError, UnsupportedSyntaxError
from s2sad.testing import check_grads

RNG = np.random.default_rng(20250210)
A = RNG.standard_normal(3)
B = RNG.standard_normal(4)
M = RNG.standard_normal((2, 3))
N = RNG.standard_normal((2, 2))
T = float(RNG.uniform(0.5, 1.5))
BOTH = ("rev", "fwd")


def r_two(a, b):
    return np.sum(np.sin(np.r_[a, b]) * np.arange(7.0))


def r_scalars_slices(a, b):
    v = np.r_[a, 2.5, b[1:], 0:6, -1:1:4j, [1.0, 2.0]]
    return np.sum(np.cos(v) * np.linspace(-1, 1, v.size))


def r_python_float_item(a, t):
    v = np.r_[t, a, t * t]
    return np.sum(v ** 3)


def r_single(a):
    return np.sum(np.r_[a] ** 2) + np.r_[a * 2.0,][1]


def r_directive_2d(a, m):
    v = np.r_["0,2", a, m]                     # (1, 3) and (2, 3) stacked: (3, 3)
    return np.sum(np.tanh(v) * np.arange(9.0).reshape(3, 3))


def r_directive_axis(m, n):
    v = np.r_["1", m, n]                       # along axis 1: (2, 5)
    return np.sum(v * v * np.arange(10.0).reshape(2, 5))


def r_directive_trans1d(a, b3):
    v = np.r_["0,2,0", a, b3]                  # 1-D items become columns: (6, 1)
    return np.sum(np.sin(v) * np.arange(6.0).reshape(6, 1))


def r_directive_ndmin3(m, a):
    v = np.r_["-1,3,0", m, m * a]
    return np.sum(np.exp(v) * np.arange(v.size).reshape(v.shape))


def c_columns(a, t):
    v = np.c_[a, a * a, np.cos(a), 0:3, t * a]     # (3, 5)
    return np.sum(v ** 2 * np.arange(15.0).reshape(3, 5))


def c_with_matrix(m, a2):
    v = np.c_[m, a2]                           # (2, 3) and a 1-D of 2 as a column: (2, 4)
    return np.sum(np.sin(v) * np.arange(8.0).reshape(2, 4))


def r_in_loop(a):
    acc = np.zeros(0)
    for k in range(3):
        acc = np.r_[acc, a[k] * a]
    return np.sum(acc ** 2)


def r_complex(z, a):
    v = np.r_[z, a]
    return np.sum(np.abs(v) ** 2) + np.real(np.sum(v * v))


def r_bounds_carry_derivative(t):
    v = np.r_[0.0:t:5j, t:2 * t:4j]
    return np.sum(np.sin(v))


def r_arange_bounds(t):
    v = np.r_[t:t + 2.9:0.5]                    # start + i*step: the count does not move
    return np.sum(v ** 2)


def mgrid_dense(t):
    x, y = np.mgrid[0.0:t:4j, -t:t:3j]
    return np.sum(np.sin(x) * np.cos(y))


def mgrid_one(t):
    return np.sum(np.mgrid[t:3.0 * t:5j] ** 2)


def ogrid_sparse(t):
    x, y = np.ogrid[0.0:t:4j, -t:2.0:3j]
    return np.sum(np.sin(x) * np.exp(y))


def mgrid_real_step(t):
    g = np.mgrid[t:t + 1.9:0.5, 0:2]
    return np.sum(g[0] ** 2 + g[1])


def s_identity(a):
    return np.sum(np.s_[a] ** 2) + np.sum(np.index_exp[a * 2.0][0])


def s_tuple(a, b):
    u, v = np.s_[a, b]
    return np.sum(u) * np.sum(v ** 2)


def s_as_index(a):
    return np.sum(a[np.s_[1:3]] ** 2) + np.sum(a[np.index_exp[::2]])


CASES = [
    (r_two, (A, B)),
    (r_scalars_slices, (A, B)),
    (r_python_float_item, (A, T)),
    (r_single, (A,)),
    (r_directive_2d, (A, M)),
    (r_directive_axis, (M, N)),
    (r_directive_trans1d, (A, A)),
    (r_directive_ndmin3, (M, A)),
    (c_columns, (A, T)),
    (c_with_matrix, (M, A[:2].copy())),
    (r_in_loop, (A,)),
    (r_bounds_carry_derivative, (T,)),
    (r_arange_bounds, (T,)),
    (mgrid_dense, (T,)),
    (mgrid_one, (T,)),
    (ogrid_sparse, (T,)),
    (mgrid_real_step, (T,)),
    (s_identity, (A,)),
    (s_tuple, (A, B)),
    (s_as_index, (A,)),
]


@pytest.mark.parametrize("f,args", CASES, ids=[c[0].__name__ for c in CASES])
def test_index_trick_gradients(f, args):
    check_grads(f, args, modes=BOTH)


@pytest.mark.parametrize("f,args", CASES, ids=[c[0].__name__ for c in CASES])
def test_index_trick_gradient_is_not_zero(f, args):
    """(check_grads would pass a zero gradient of a function that is flat; none of these is)"""
    g = s2sad.grad(f, wrt=0)(*args)
    assert np.max(np.abs(g)) > 1e-3


def test_complex_items():
    z = RNG.standard_normal(2) + 1j * RNG.standard_normal(2)
    check_grads(r_complex, (z, A), modes=BOTH)


def test_values_are_numpys():
    """The lowered call computes exactly what the subscript did."""
    for f, args in CASES:
        v, _ = s2sad.value_and_grad(f)(*args)
        assert v == pytest.approx(f(*args), rel=1e-13, abs=1e-13), f.__name__


def test_generated_code_routes_items_through_the_concat_adjoint():
    src = s2sad.differentiate(r_two).adjoint_source(A, B)
    assert "_adj.index_concat(np.r_, True, a, b)" in src
    assert "_adj.index_concat_adjoint(" in src


def test_gradient_values_r_and_c():
    g_a, g_b = s2sad.grad(r_two, wrt=(0, 1))(A, B)
    w = np.arange(7.0)
    np.testing.assert_allclose(g_a, np.cos(A) * w[:3], rtol=1e-13)
    np.testing.assert_allclose(g_b, np.cos(B) * w[3:], rtol=1e-13)
    assert g_a.dtype == np.float64 and g_a.shape == (3,)
    gt = s2sad.grad(r_python_float_item, wrt=1)(A, T)
    assert type(gt) is float
    assert gt == pytest.approx(3 * T ** 2 + 3 * T ** 4 * 2 * T, rel=1e-12)


def test_integer_items_carry_nothing():
    def f(a):
        return np.sum(np.r_[a, np.arange(3), 7] * 2.0)
    np.testing.assert_allclose(s2sad.grad(f)(A), np.full(3, 2.0))


def _refused(exc, f, *args, modes=("rev", "fwd")):
    for mode in modes:
        with pytest.raises(exc) as e:
            if mode == "rev":
                s2sad.grad(f)(*args)
            else:
                from s2sad.transforms import jvp
                jvp(f, args, tuple(np.ones_like(a) for a in args))
        msg = str(e.value)
        assert "test_index_tricks.py:" in msg, msg
        assert "Fix:" in msg, msg
    return msg


def r_matrix_directive(a, b):
    return np.sum(np.asarray(np.r_["r", a, b]))


def c_matrix_directive(a, b):
    return np.sum(np.asarray(np.r_["c", a, b]))


def r_string_matrix(a):
    return np.sum(np.asarray(np.r_["a, a"]))


def r_starred(a, b):
    parts = [a, b]
    return np.sum(np.r_[*parts])


def mr_masked(a, b):
    return np.sum(np.ma.mr_[a, b])


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")
def test_matrix_directives_are_refused():
    msg = _refused(RuleError, r_matrix_directive, A, A)
    assert "np.matrix" in msg and "np.r_" in msg
    _refused(RuleError, c_matrix_directive, A, A)


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")
def test_matrix_directive_without_derivative_still_runs():
    def f(a):
        m = np.r_["r", 1.0, 2.0]
        return np.sum(a) * float(np.asarray(m).sum())
    np.testing.assert_allclose(s2sad.grad(f)(A), np.full(3, 3.0))


def test_string_key_is_refused():
    msg = _refused(UnsupportedSyntaxError, r_string_matrix, A, modes=("rev",))
    assert "np.block" in msg


def test_starred_items_are_refused():
    msg = _refused(UnsupportedSyntaxError, r_starred, A, B, modes=("rev",))
    assert "np.concatenate" in msg


def test_masked_concatenator_is_refused():
    _refused(S2SADError, mr_masked, A, B)


def test_ix_is_refused_not_zero():
    def f(a):
        u, v = np.ix_(a, a)
        return np.sum(u * v)
    with pytest.raises(S2SADError) as e:
        s2sad.grad(f)(A)
    assert "Fix:" in str(e.value) and "test_index_tricks.py:" in str(e.value)


def test_ix_of_integer_indices_is_fine():
    def f(m):
        return np.sum(m[np.ix_([0, 1], [0, 2])] ** 2)
    np.testing.assert_allclose(s2sad.grad(f)(M), 2 * M * np.array([[1, 0, 1], [1, 0, 1]]))


# -- CuPy: cupy.r_ / cupy.c_ (items and scalars; CuPy has no slices or directives) ----------------
def _gpu():
    import os
    try:
        import cupy as cp
        ok = bool(cp.is_available()) and os.environ.get("NUMBA_ENABLE_CUDASIM") == "0"
    except Exception:  # noqa: BLE001
        return None
    return cp if ok else None


try:
    import cupy
except Exception:  # noqa: BLE001
    cupy = None


def cupy_r(a, b):
    return cupy.sum(cupy.sin(cupy.r_[a, 2.5, b * b]) * cupy.arange(7.0))


def cupy_c(a, b):
    return cupy.sum(cupy.c_[a, b * a] ** 2)


@pytest.mark.gpu
@pytest.mark.parametrize("f", [cupy_r, cupy_c])
def test_cupy_index_tricks_on_the_gpu(f):
    cp = _gpu()
    if cp is None:
        pytest.skip("needs CuPy, a GPU and NUMBA_ENABLE_CUDASIM=0")
    from s2sad.transforms import jvp
    a, b = cp.asarray(A), cp.asarray(A[::-1].copy())
    ga, gb = s2sad.grad(f, wrt=(0, 1))(a, b)
    assert type(ga).__module__.startswith("cupy") and ga.shape == (3,)
    eps = 1e-6
    for k in range(3):
        e = cp.zeros(3)
        e[k] = 1.0
        fd_a = float(f(a + eps * e, b) - f(a - eps * e, b)) / (2 * eps)
        fd_b = float(f(a, b + eps * e) - f(a, b - eps * e)) / (2 * eps)
        assert float(ga[k]) == pytest.approx(fd_a, rel=1e-6, abs=1e-8)
        assert float(gb[k]) == pytest.approx(fd_b, rel=1e-6, abs=1e-8)
        _, t = jvp(f, (a, b), (e, cp.zeros(3)))
        assert float(t) == pytest.approx(fd_a, rel=1e-6, abs=1e-8)
