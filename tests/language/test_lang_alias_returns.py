"""Calls that return their operand itself only at times, and values written into integer arrays.

NumPy returns the operand itself (or a view of it) from ``a.astype(a.dtype, copy=False)``,
``np.array(a, copy=None)`` / ``copy=False``, ``a.conj()`` / ``a.conjugate()`` of a real array,
``np.real_if_close(a)`` of a real array, ``np.diag`` of a matrix (a view of its diagonal).  A write
into one name is then seen through the other.  s2sad took their results for new arrays and gave
silently wrong gradients (``astype_alias``: [1.0082, 1.42, -0.92, 2.2] where the derivative is
[0, 2.8516, -0.92, 2.2]); now the write is checked when it runs and refused, naming the line, when
the two really share memory (classify.aliases.returned_operand, used by classify.objects,
classify.writes and frontend.analysis.written_arrays), and computed as before when they do not.
With ``jit=True`` (numba's versions of these calls copy) such a function runs as Python.

A float written into an integer or bool array (``y[0] = x[0] * 10.0``) is truncated, so it carries
no derivative; the reverse sweep gave it one (11 instead of 1 in ``int_buf``).
"""
import warnings

import numpy as np
import pytest

import s2sad
from lang_helpers import check_grads, line_of

HERE = __file__
X = np.array([0.33, 0.71, -0.46, 1.1])


def _fd(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for k in range(x.size):
        e = np.zeros_like(x)
        e[k] = eps
        g[k] = (f(x + e) - f(x - e)) / (2 * eps)
    return g


def _jvp_grad(f, x, jit=None):
    return np.array([s2sad.jvp(f, (x.copy(),), (e,), jit=jit)[1] for e in np.eye(x.size)])


def _numba():
    pytest.importorskip("numba")


# == B1: aliases that share memory ================================================================
def astype_alias(x):
    a = x * 1.0
    b = a.astype(np.float64, copy=False)        # b is a
    a[0] = x[1] ** 2
    return np.sum(b ** 2)


def array_copy_none(x):
    a = x * 1.0
    b = np.array(a, copy=None)                  # b is a
    a[0] = x[1] ** 2
    return np.sum(b ** 2)


def array_copy_false(x):
    a = x * 1.0
    b = np.array(a, copy=False)                 # b is a
    a[0] = x[1] ** 2
    return np.sum(b ** 2)


def conj_alias(x):
    a = x * 1.0
    b = a.conj()                                # a real array: b is a
    a[0] = x[1] ** 2
    return np.sum(b ** 2)


def conjugate_alias(x):
    a = x * 1.0
    b = a.conjugate()
    a[0] = x[1] ** 2
    return np.sum(b ** 2)


def real_if_close_alias(x):
    a = x * 1.0
    b = np.real_if_close(a)                     # not complex: b is a
    a[0] = x[1] ** 2
    return np.sum(b ** 2)


def diag_alias(x):
    a = np.outer(x, x)
    b = np.diag(a)                              # a view of a's diagonal
    a[0, 0] = x[1] ** 2
    return np.sum(b ** 2)


def write_through_alias(x):
    a = x * 1.0
    b = a.astype(np.float64, copy=False)
    b[0] = x[1] ** 2                            # changes a too
    return np.sum(a ** 2)


def argument_alias(x):
    b = np.array(x, copy=None)                  # b is the argument x
    b[0] = x[1] ** 2
    return np.sum(x ** 2)


def augmented_alias(x):
    a = x * 1.0
    b = a.conj()
    a *= x
    return np.sum(b ** 2)


def rows_in_a_list(x):
    a = np.outer(x, x)
    rows = list(a)                              # views of a's rows
    a[0, 0] = x[1] ** 2
    return np.sum(rows[0] ** 2)


_SHARED = [(astype_alias, "a[0] = "), (array_copy_none, "a[0] = "), (array_copy_false, "a[0] = "),
           (conj_alias, "a[0] = "), (conjugate_alias, "a[0] = "), (real_if_close_alias, "a[0] = "),
           (diag_alias, "a[0, 0] = "), (write_through_alias, "b[0] = "),
           (argument_alias, "b[0] = "), (augmented_alias, "a *= x"), (rows_in_a_list, "a[0, 0] = ")]


def _assert_refused(ei, f, needle):
    msg = str(ei.value)
    assert f"{HERE}:{line_of(f, needle)}" in msg, msg
    assert "Fix:" in msg and "copy" in msg, msg


@pytest.mark.parametrize("f, needle", _SHARED, ids=[f.__name__ for f, _ in _SHARED])
def test_shared_memory_refused_reverse(f, needle):
    with pytest.raises(s2sad.S2SADError) as ei:
        s2sad.grad(f)(X.copy())
    _assert_refused(ei, f, needle)


@pytest.mark.parametrize("f, needle", _SHARED, ids=[f.__name__ for f, _ in _SHARED])
def test_shared_memory_refused_forward(f, needle):
    with pytest.raises(s2sad.S2SADError) as ei:
        s2sad.jvp(f, (X.copy(),), (np.ones(4),))
    _assert_refused(ei, f, needle)


@pytest.mark.parametrize("f, needle", _SHARED, ids=[f.__name__ for f, _ in _SHARED])
def test_shared_memory_refused_jit(f, needle):
    _numba()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", s2sad.errors.JitFallbackWarning)
        with pytest.raises(s2sad.S2SADError) as ei:
            s2sad.grad(f, jit=True)(X.copy())
        _assert_refused(ei, f, needle)
        with pytest.raises(s2sad.S2SADError) as ei:
            s2sad.jvp(f, (X.copy(),), (np.ones(4),), jit=True)
        _assert_refused(ei, f, needle)


# -- the same calls where nothing is shared when it runs: computed, not refused -----------------------
def copy_when_it_runs(x):
    a = x * 1.0
    b = np.array(a[::2], copy=None, order="C")  # a strided view: np.array copies it
    c = a.astype(np.complex128, copy=False)     # another dtype: a copy
    a[0] = x[1] ** 2
    return np.sum(b ** 2) + np.sum(a) + np.sum((c * c).real)


def read_before_the_write(x):
    a = x * 1.0
    b = a.astype(np.float64, copy=False)        # b is a ...
    y = np.sin(b)                               # ... read before the write only
    a[0] = x[1] ** 2
    return np.sum(y) + np.sum(a)


def constant_write(x):
    a = np.zeros(4)
    b = a.conj()                                # b is a: sees the 5.0
    a[0] = 5.0
    return np.sum(b * x)


def rows_of_a_vector(x):
    a = x * 2.0
    vals = list(a)                              # numbers, not views
    a[0] = x[1] ** 2
    return vals[0] * vals[1] + np.sum(a)


def values_walked_after_the_write(x):
    a = x * 2.0
    vals = list(a)                              # (jit forward mode: its tangent was the tangent
    a[0] = x[1] ** 2                            # of a itself, which this write changed)
    s = 0.0
    for v in vals:
        s = s + v * v
    return s + np.sum(a)


_COMPUTED = [copy_when_it_runs, read_before_the_write, constant_write, rows_of_a_vector,
             values_walked_after_the_write]


@pytest.mark.parametrize("f", _COMPUTED, ids=[f.__name__ for f in _COMPUTED])
def test_not_shared_when_it_runs(f):
    check_grads(f, (X.copy(),), modes=("rev", "fwd"))
    np.testing.assert_allclose(s2sad.grad(f)(X.copy()), _fd(f, X), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("f", _COMPUTED, ids=[f.__name__ for f in _COMPUTED])
def test_not_shared_when_it_runs_jit(f):
    _numba()
    want = _fd(f, X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", s2sad.errors.JitFallbackWarning)
        np.testing.assert_allclose(s2sad.grad(f, jit=True)(X.copy()), want, rtol=1e-6,
                                   atol=1e-8)
        np.testing.assert_allclose(_jvp_grad(f, X, jit=True), want, rtol=1e-6, atol=1e-8)


def constant_write_diag(x):
    a = np.zeros((4, 4))
    b = np.diag(a)                              # a view: sees the 5.0
    a[0, 0] = 5.0
    return np.sum(b * x)


def test_numba_copy_runs_as_python():
    """numba's ``np.diag`` (and ``a.conj()``) make copies: the compiled derivative gave 0 where
    NumPy's ``b`` sees the write; it runs as Python, with a warning naming the line."""
    _numba()
    # (a derivative warns once: tests/forward/test_suite_programs runs this test's body too, and
    # may have done so before in this process)
    from s2sad.cache import CACHE
    CACHE.clear()
    with pytest.warns(s2sad.errors.JitFallbackWarning, match="may return `a` itself") as w:
        g = s2sad.grad(constant_write_diag, jit=True)(X.copy())
    np.testing.assert_allclose(g, [5.0, 0.0, 0.0, 0.0])
    assert any(f"{line_of(constant_write_diag, 'b = np.diag(a)')}" in str(r.message) for r in w)


# == B5: floats written into integer and bool arrays ================================================
def int_buf(x):
    y = np.zeros(3, dtype=np.int64)
    y[0] = x[0] * 10.0                          # truncated: no derivative
    return np.sum(y) * 1.0 + np.sum(x)


def int_slice(x):
    y = np.zeros(3, dtype=np.int64)
    y[0:2] = x[:2] * 10.0
    return np.sum(y) * 1.0 + np.sum(x)


def int_fancy(x):
    y = np.zeros(3, dtype=np.int64)
    y[[0, 2]] = x[[0, 1]] * 10.0
    return np.sum(y) * 1.0 + np.sum(x)


def bool_buf(x):
    y = np.zeros(3, dtype=bool)
    y[0] = x[0] * 10.0
    return np.sum(y) * 1.0 + np.sum(x)


def int_augmented(x):
    y = np.zeros(3, dtype=np.int64)
    y[0] += x[0] * 10.0
    return np.sum(y) * 1.0 + np.sum(x)


def int_loop(x):
    y = np.zeros(3, dtype=np.int64)
    for i in range(3):
        y[i] = x[i] * 10.0
    return np.sum(y) * 1.0 + np.sum(x)


def int_2d(x):
    y = np.zeros((2, 3), dtype=np.int32)
    y[1] = x * 10.0
    y[0, 1] = x[2] * 3.0
    return np.sum(y * x)


def int_or_float(x, n):
    y = np.zeros(3, dtype=np.int64 if n > 0 else np.float64)
    y[1] = x[0] * 7.0
    return np.sum(y * x)


_INT = [int_buf, int_slice, int_fancy, bool_buf, int_augmented, int_loop, int_2d]
X3 = np.array([0.33, 0.71, -0.46])


@pytest.mark.parametrize("f", _INT, ids=[f.__name__ for f in _INT])
def test_int_buffer_carries_no_derivative(f):
    want = _fd(f, X3)
    np.testing.assert_allclose(s2sad.grad(f)(X3.copy()), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(_jvp_grad(f, X3), want, rtol=1e-6, atol=1e-8)
    check_grads(f, (X3.copy(),), modes=("rev", "fwd"))


def test_int_buf_values():
    np.testing.assert_allclose(s2sad.grad(int_buf)(X3.copy()), [1.0, 1.0, 1.0])     # was [11, 1, 1]


@pytest.mark.parametrize("n", [1, 0])
def test_dtype_known_only_when_it_runs(n):
    want = _fd(lambda x: int_or_float(x, n), X3)
    np.testing.assert_allclose(s2sad.grad(int_or_float)(X3.copy(), n), want, rtol=1e-6, atol=1e-8)
    check_grads(int_or_float, (X3.copy(), n), wrt=0, modes=("rev", "fwd"))


@pytest.mark.parametrize("f", _INT, ids=[f.__name__ for f in _INT])
def test_int_buffer_carries_no_derivative_jit(f):
    _numba()
    want = _fd(f, X3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", s2sad.errors.JitFallbackWarning)
        np.testing.assert_allclose(s2sad.grad(f, jit=True)(X3.copy()), want, rtol=1e-6,
                                   atol=1e-8)
        np.testing.assert_allclose(_jvp_grad(f, X3, jit=True), want, rtol=1e-6, atol=1e-8)


def test_int_loop_compiles():
    """The compiled mode keeps the check (``_rt.inexact``, ``_rt.keep_if``) and compiles."""
    _numba()
    with warnings.catch_warnings():
        warnings.simplefilter("error", s2sad.errors.JitFallbackWarning)
        np.testing.assert_allclose(s2sad.grad(int_loop, jit=True)(X3.copy()), [1.0, 1.0, 1.0])


def test_float_buffer_code_unchanged():
    """Where the array's type shows it is a float array, the generated code has no check."""
    def float_loop(x):
        y = np.zeros(3)
        for i in range(3):
            y[i] = x[i] * 10.0
        return np.sum(y ** 2)
    src = s2sad.differentiate(float_loop).adjoint_source(X3.copy())
    assert "dtype_guard" not in src and "dtype_of" not in src, src
    check_grads(float_loop, (X3.copy(),), modes=("rev", "fwd"))
