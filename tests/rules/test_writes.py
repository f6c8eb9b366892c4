"""Writes into arrays (issue 3, item 4), end to end against central differences.

The reverse sweep must restore what each write destroyed: a value read, then overwritten, then the
old read used again; buffers filled in loops; recurrences that read what an earlier iteration
wrote.  Writes into an array the caller passed in are either differentiated correctly or refused
with an error that names the line -- never a silently wrong gradient.

Most programs end in ``return np.sum(np.sin(y))`` (or similar) rather than ``return y``: returning
the written buffer itself is refused today (bug B7, see test_return_buffer_directly).
"""
import inspect

import numpy as np
import pytest

import s2sad
from s2sad.errors import S2SADError, UnsupportedSyntaxError
from s2sad.testing import check_grads

RNG = np.random.default_rng(20240601)
X = RNG.uniform(0.5, 1.5, (4, 3))
V = RNG.uniform(-1, 1, 4)
B = RNG.uniform(-1, 1, 6)

BUGS = {
    "B6": "bug B6: in-place NumPy mutators (np.put, ndarray.fill, np.copyto, np.fill_diagonal, "
          "np.add.at, np.putmask, ndarray.sort) writing active values are invisible: gradient 0",
    "B7": "bug B7: returning an array written in place is refused as an alias write",
    "B12": "bug B12: a write through a view (y.T[0] = ..., y.reshape(-1)[k] = ..., r = y[1]; "
           "r[:] = ...) is lost, or mis-attributed when the base is an argument",
    "B13": "bug B13: an active value written into an integer buffer keeps its derivative",
    "B14": "bug B14: fancy assignment with repeated indices: every write gets the adjoint, "
           "not only the last",
}


FIXED = ['B1', 'B10', 'B11', 'B12', 'B13', 'B14', 'B15', 'B16', 'B2', 'B3', 'B4', 'B5', 'B6', 'B7', 'B8', 'B9']   # bugs fixed in s2sad since these tests were written


def xfail(bug):
    if bug in FIXED:
        return pytest.mark.skipif(False, reason="fixed")   # fixed: now runs as a plain test
    return pytest.mark.xfail(strict=True, reason=BUGS[bug])


# -- np.empty_like / np.zeros buffers filled element by element ----------------------------------
def empty_like_rows(x):
    y = np.empty_like(x)
    for i in range(x.shape[0]):
        y[i] = np.sin(x[i]) * x[i, 0]
    return np.sum(np.cos(y))


def empty_like_elements(x):
    y = np.empty_like(x)
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            y[i, j] = x[i, j] * x[(i + 1) % x.shape[0], j]
    return np.sum(y * y)


def zeros_iadd_ij(x):
    y = np.zeros((4, 3))
    for i in range(4):
        for j in range(3):
            y[i, j] += x[i, j] * x[(i + 1) % 4, j]
            y[i, j] += x[i, j]
    return np.sum(np.sin(y))


def zeros_loop_rows(x, v):
    out = np.zeros((x.shape[0], 2))
    for i in range(x.shape[0]):
        out[i, 0] = np.dot(x[i], x[i]) * v[i]
        out[i, 1] = np.max(x[i]) - v[i] ** 2
    return np.sum(out ** 3)


def columns_scan(x):
    y = np.empty_like(x)
    y[:, 0] = x[:, 0]
    for j in range(1, x.shape[1]):
        y[:, j] = np.maximum(y[:, j - 1], x[:, j]) * 0.9 + x[:, j] * 0.1
    return np.sum(y.sum(axis=1) ** 2)


# -- slices, fancy indices, masks -----------------------------------------------------------------
def slice_assign(x):
    y = np.zeros((4, 5))
    y[:, 1:4] = x * 2.0
    y[::2, 0] = x[::2, 1]
    y[1:3, 1:3] = np.exp(x[:2, :2])          # overwrites part of the first write
    y[-1, -2:] = x[-1, :2] * y[0, 1]         # reads a written value, writes elsewhere
    return np.sum(np.sin(y))


def ellipsis_newaxis(x):
    y = np.zeros((2, 4, 3))
    y[..., 1] = x[:, 1]
    y[1, ...] += x
    y[:, None, 0, 0] = x[0, 0] * 3.0
    return np.sum(np.sin(y))


def negative_indices(x):
    y = np.zeros((4, 3))
    y[-1, -1] = x[0, 0]
    y[-2:, :2] = x[:2, 1:] * x[0, 0]
    return np.sum(np.cos(y))


def fancy_assign(x):
    y = np.zeros((6, 3))
    y[[0, 2, 5]] = x[:3]
    y[np.array([1, 3])] = x[1:3] ** 2
    y[np.array([0, 4]), np.array([2, 0])] = x[3, :2] * 5.0
    return np.sum(np.sin(y))


def fancy_repeated_set(x):
    y = np.zeros(5)
    y[[0, 0, 3]] = x[:3, 0]                  # repeated index: the last write wins
    return np.sum(np.sin(y))


def fancy_repeated_iadd(x):
    y = np.zeros(5)
    y[[0, 0, 3]] += x[:3, 0]                 # NumPy buffers: the last write wins here too
    return np.sum(np.sin(y))


def mask_constant(x):
    y = x * 1.0
    y[y > 1.0] = 0.0
    return np.sum(y ** 2)


def mask_active(x):
    y = np.zeros((4, 3))
    m = x > 1.0
    y[m] = x[m] * 3.0
    y[~m] = np.sqrt(x[~m])
    return np.sum(np.sin(y))


def mask_scalar_active(x):
    y = x * 1.0
    y[x < 0.8] = x[0, 0]                     # one active scalar broadcast into a masked write
    return np.sum(np.sin(y))


# -- overwrites: the reverse sweep must restore what each write destroyed ------------------------
def overwrite_many(x):
    y = np.zeros(3)
    y[0] = x[0, 0]
    a = y[0] * 2.0
    y[0] = a * x[1, 0]
    b = y[0] + y[1]
    y[0] = np.sin(b)
    y[1] = y[0] * a
    return np.sum(y * b)


def read_overwrite_use_old_loop(x):
    y = x[:, 0] * 1.0
    s = 0.0
    for k in range(3):
        old = y[k]
        y[k] = np.sin(y[k + 1]) * old
        s = s + y[k] * old
    return s + np.sum(y ** 2)


def overwrite_in_loop_same_slot(x):
    y = np.zeros(2)
    acc = 0.0
    for i in range(x.shape[0]):
        y[0] = y[0] * x[i, 0] + x[i, 1]      # the slot is read and overwritten every iteration
        acc = acc + y[0] * x[i, 2]
    return acc + y[0]


def whole_array_augmented(x):
    y = np.ones((4, 3))
    y *= x
    y += x ** 2
    y /= 1.0 + x
    y -= 0.5 * x
    return np.sum(y ** 2)


def overlapping_self_update(x):
    y = x[:, 0] * 1.0
    y[1:] *= y[:-1]                          # NumPy copies the overlapping operand first
    return np.sum(y * y)


def shift_self(x):
    y = x[:, 0] * 1.0
    y[1:] = y[:-1] * 2.0
    return np.sum(np.sin(y))


def branch_write(x):
    y = np.zeros(4)
    for i in range(4):
        if x[i, 0] > 1.0:
            y[i] = x[i, 1] * y[i - 1]
        else:
            y[i] = x[i, 2] + 1.0
    return np.sum(np.sin(y))


def full_overwrite(x):
    y = np.zeros_like(x)
    y[:] = x
    y[0] = 2.0 * y[1]
    return np.sum(np.sin(y))


# -- recurrences on a fresh buffer ------------------------------------------------------------------
def linear_recurrence(a, b):
    x = np.zeros(b.shape[0])
    x[0] = b[0]
    for i in range(1, b.shape[0]):
        x[i] = x[i - 1] * a + b[i]
    return np.sum(x * x)


def recurrence_in_place(b):
    x = b.copy()
    for i in range(1, x.shape[0]):
        x[i] = x[i] * x[i - 1] + 0.5
    return np.sum(np.sin(x))


def second_order_recurrence(a, b):
    x = np.empty(b.shape[0])
    x[0] = b[0]
    x[1] = b[1] + a * x[0]
    for i in range(2, b.shape[0]):
        x[i] = a * x[i - 1] - 0.3 * x[i - 2] + b[i] * x[i - 1]
    return np.sum(x ** 2)


def cumulative_rows(x):
    y = np.zeros((4, 3))
    y[0] = x[0]
    for i in range(1, 4):
        y[i] = y[i - 1] * x[i] + np.tanh(y[i - 1])
    return np.sum(y)


def while_write(x):
    y = np.zeros(5)
    i = 0
    while i < 4:
        y[i + 1] = y[i] * 0.5 + x[i, i % 3]
        i += 1
    return np.sum(y ** 2)


WRITES = [
    (empty_like_rows, (X,)), (empty_like_elements, (X,)), (zeros_iadd_ij, (X,)),
    (zeros_loop_rows, (X, V)), (columns_scan, (X,)),
    (slice_assign, (X,)), (ellipsis_newaxis, (X,)), (negative_indices, (X,)), (fancy_assign, (X,)),
    pytest.param(fancy_repeated_set, (X,), marks=xfail("B14")),
    pytest.param(fancy_repeated_iadd, (X,), marks=xfail("B14")),
    (mask_constant, (X,)), (mask_active, (X,)), (mask_scalar_active, (X,)),
    (overwrite_many, (X,)), (read_overwrite_use_old_loop, (X,)), (overwrite_in_loop_same_slot, (X,)),
    (whole_array_augmented, (X,)), (overlapping_self_update, (X,)), (shift_self, (X,)),
    (branch_write, (X,)), (full_overwrite, (X,)),
    (linear_recurrence, (0.9, B)), (recurrence_in_place, (B,)), (second_order_recurrence, (0.7, B)),
    (cumulative_rows, (X,)), (while_write, (X,)),
]


def _name(p):
    return (p.values[0] if hasattr(p, "values") else p[0]).__name__


@pytest.mark.parametrize("f,args", WRITES, ids=[_name(p) for p in WRITES])
def test_write(f, args):
    check_grads(f, args)


def test_writes_do_not_touch_the_inputs():
    """Differentiating a program that copies and writes leaves the caller's arrays as they were."""
    b = B.copy()
    s2sad.grad(recurrence_in_place)(b)
    assert np.array_equal(b, B)
    x = X.copy()
    s2sad.grad(whole_array_augmented)(x)
    assert np.array_equal(x, X)


def test_recurrence_gradient_value():
    """The gradient of x[i] = a x[i-1] + b[i] with respect to a, in closed form."""
    a, b = 0.9, np.array([1.0, 0.5, -0.25, 2.0])

    def closed(a):
        x = [b[0]]
        for i in range(1, 4):
            x.append(x[-1] * a + b[i])
        return x

    x = closed(a)
    dx = [0.0]
    for i in range(1, 4):
        dx.append(dx[-1] * a + x[i - 1])
    expected_a = sum(2 * xi * dxi for xi, dxi in zip(x, dx))
    ga, gb = s2sad.grad(linear_recurrence, wrt=(0, 1))(a, b)
    assert isinstance(ga, float) or np.shape(ga) == ()
    assert abs(ga - expected_a) <= 1e-12 * abs(expected_a)
    assert gb.shape == (4,) and gb.dtype == np.float64


# -- returning the written buffer itself ---------------------------------------------------------
def ret_zeros(x):
    y = np.zeros(3)
    y[0] = x[0, 0]
    return y


def ret_empty_like(x):
    y = np.empty_like(x)
    for i in range(x.shape[0]):
        y[i] = np.sin(x[i]) * x[i, 0]
    return y


def ret_recurrence(a, b):
    x = np.zeros(b.shape[0])
    x[0] = b[0]
    for i in range(1, b.shape[0]):
        x[i] = x[i - 1] * a + b[i]
    return x


def ret_alias(x):
    y = np.zeros(3)
    y[1] = x[1, 1] ** 2
    z = y
    return z


@pytest.mark.parametrize("f,args", [
    pytest.param(ret_zeros, (X,), marks=xfail("B7")),
    pytest.param(ret_empty_like, (X,), marks=xfail("B7")),
    pytest.param(ret_recurrence, (0.9, B), marks=xfail("B7")),
    pytest.param(ret_alias, (X,), marks=xfail("B7")),
])
def test_return_buffer_directly(f, args):
    check_grads(f, args)


# -- writes through views -------------------------------------------------------------------------
def view_T(x):
    y = np.zeros((3, 4))
    y.T[0] = x[0] * 2.0
    return np.sum(np.sin(y))


def view_reshape(x):
    y = np.zeros((4, 3))
    y.reshape(-1)[5] = x[0, 0]
    return np.sum(np.sin(y))


def view_row(x):
    y = np.zeros((4, 3))
    r = y[1]
    r[:] = x[0] * 2.0
    return np.sum(np.sin(y))


@pytest.mark.parametrize("f", [pytest.param(view_T, marks=xfail("B12")),
                               pytest.param(view_reshape, marks=xfail("B12")),
                               pytest.param(view_row, marks=xfail("B12"))])
def test_write_through_view_of_local(f):
    """Correct, or refused: a silently dropped write is the failure."""
    try:
        check_grads(f, (X,))
    except S2SADError as e:
        assert "line" in str(e) or ".py:" in str(e)


def write_arg_via_view(x):
    y = x[1:]
    y[0] = 5.0 * x[0]
    return x.sum()


@xfail("B12")
def test_write_through_view_of_argument():
    """Either refused (like a direct write into the argument) or right; today it is neither."""
    x = X.copy()
    try:
        value, g = s2sad.value_and_grad(write_arg_via_view)(x)
    except UnsupportedSyntaxError as e:
        assert "test_writes.py" in str(e) and "y[0] = 5.0 * x[0]" in str(e)
        return
    # what a correct gradient is: d/dx of sum(x with x[1] replaced by 5 x[0]), at the original x
    expected = np.ones_like(X)
    expected[1] = 0.0
    expected[0] += 5.0
    np.testing.assert_allclose(g, expected)


# -- writes into arguments -------------------------------------------------------------------------
def write_into_arg(x):
    x[0] = np.sin(x[0])
    return x.sum()


def write_into_arg_other(x, v):
    x[0, 0] = v[0] * 2.0
    return x.sum()


def write_into_arg_loop(x):
    for i in range(1, x.shape[0]):
        x[i] = x[i] + x[i - 1]
    return np.sum(x ** 2)


@pytest.mark.parametrize("f,args,line", [
    (write_into_arg, (X,), "x[0] = np.sin(x[0])"),
    (write_into_arg_other, (X, V), "x[0, 0] = v[0] * 2.0"),
    (write_into_arg_loop, (X,), "x[i] = x[i] + x[i - 1]"),
])
def test_write_into_argument_refused(f, args, line):
    args = tuple(a.copy() for a in args)
    before = [a.copy() for a in args]
    with pytest.raises(UnsupportedSyntaxError) as ei:
        s2sad.grad(f, wrt=tuple(range(len(args))))(*args)
    msg = str(ei.value)
    src, first = inspect.getsourcelines(f)
    lineno = first + next(k for k, text in enumerate(src) if line in text)
    assert f"test_writes.py:{lineno}" in msg, msg
    assert line in msg, msg
    assert "argument" in msg and "copy" in msg, msg
    for a, b in zip(args, before):
        assert np.array_equal(a, b), "a refused derivative must not have run the user's writes"


def write_const_into_arg(x):
    x[0] = 0.0
    return np.sum(x ** 2)


def test_write_constant_into_argument():
    """A constant written into an argument: the overwritten entries get a zero gradient."""
    x = X.copy()
    g = s2sad.grad(write_const_into_arg)(x)
    expected = 2 * X
    expected[0] = 0.0
    np.testing.assert_allclose(g, expected, rtol=1e-12)


def augmented_into_arg(x):
    x *= 2.0
    return np.sum(x * x)


def test_augmented_assignment_on_argument():
    """``x *= 2.0`` on an argument: refused, or differentiated at the caller's x."""
    x = X.copy()
    try:
        g = s2sad.grad(augmented_into_arg)(x)
    except UnsupportedSyntaxError as e:
        assert "x *= 2.0" in str(e)
        return
    np.testing.assert_allclose(g, 8.0 * X, rtol=1e-12)


def fill_helper(buf, v):
    buf[0] = v


def write_via_helper(x):
    y = np.zeros(3)
    fill_helper(y, x[0, 0])
    return np.sum(np.sin(y))


def test_write_into_argument_of_a_helper():
    """A helper writing into the buffer it is given: refused at the helper's line, or right."""
    try:
        check_grads(write_via_helper, (X,))
    except UnsupportedSyntaxError as e:
        assert "buf[0] = v" in str(e) and "test_writes.py" in str(e)


# -- in-place NumPy functions and methods writing active values -----------------------------------
def np_put(x):
    y = np.zeros(5)
    np.put(y, [0, 2], x[0, :2])
    return np.sum(np.sin(y))


def fill_method(x):
    y = np.empty(3)
    y.fill(x[0, 0])
    return np.sum(np.sin(y))


def np_copyto(x):
    y = np.zeros((4, 3))
    np.copyto(y, x)
    return np.sum(np.sin(y))


def np_fill_diagonal(x):
    y = np.zeros((3, 3))
    np.fill_diagonal(y, x[0, :3])
    return np.sum(np.sin(y))


def np_add_at(x):
    y = np.zeros(3)
    np.add.at(y, [0, 0, 2], x[0, :3])
    return np.sum(np.sin(y))


def np_putmask(x):
    y = np.zeros((4, 3))
    np.putmask(y, x > 1.0, x)
    return np.sum(np.sin(y))


def sort_in_place(x):
    y = x * 1.0
    y.sort(axis=1)
    return np.sum(y * np.arange(3.0))


MUTATORS = [np_put, fill_method, np_copyto, np_fill_diagonal, np_add_at, np_putmask, sort_in_place]


@pytest.mark.parametrize("f", [pytest.param(f, marks=xfail("B6")) for f in MUTATORS],
                         ids=[f.__name__ for f in MUTATORS])
def test_in_place_numpy_mutator(f):
    """An active value written by an in-place NumPy function or method: right, or refused with
    the line.  Today the write is invisible: the gradient is silently zero (bug B6)."""
    try:
        check_grads(f, (X,))
    except S2SADError as e:
        assert "test_writes.py" in str(e), str(e)


# -- np.add.at: scatter-add, repeated indices add up ------------------------------------------------
def add_at_repeated(x):
    y = np.zeros(4)
    np.add.at(y, [0, 1, 1, 3, 1], x[0, :3].repeat(2)[:5] * x[1, 0])
    return np.sum(np.sin(y) * np.arange(1.0, 5.0))


def add_at_2d_tuple_index(x):
    y = np.ones((3, 3)) * x[2, 2]
    np.add.at(y, (np.array([0, 2, 0]), np.array([1, 1, 1])), x[0])
    return np.sum(y * y)


def add_at_scalar_and_loop(x):
    counts = np.zeros(3)
    for i in range(4):
        np.add.at(counts, [i % 3, (i + 1) % 3], x[i, 0] * x[i, 1])
    np.add.at(counts, 0, 2.0)
    return np.sum(np.tanh(counts))


ADD_AT = [add_at_repeated, add_at_2d_tuple_index, add_at_scalar_and_loop]


@pytest.mark.parametrize("f", ADD_AT, ids=[f.__name__ for f in ADD_AT])
def test_np_add_at(f):
    check_grads(f, (X,), modes=("rev", "fwd"))


def test_np_add_at_matches_bincount_gradient():
    idx = np.array([2, 0, 2, 2, 1, 0])

    def scatter(v):
        y = np.zeros(3)
        np.add.at(y, idx, v)
        return np.sum(y ** 3)
    v = RNG.uniform(-1, 1, 6)
    sums = np.bincount(idx, weights=v, minlength=3)
    np.testing.assert_allclose(s2sad.grad(scatter)(v), 3 * sums[idx] ** 2)


def add_at_into_argument(x, y):
    np.add.at(y, [0, 0], x[0, :2])
    return np.sum(y)


def test_np_add_at_into_an_argument_is_refused():
    with pytest.raises(UnsupportedSyntaxError) as ei:
        s2sad.grad(add_at_into_argument, wrt=(0, 1))(X, V.copy())
    assert "test_writes.py" in str(ei.value) and "np.add.at(y" in str(ei.value)


# -- dtypes of buffers -------------------------------------------------------------------------------
def f32_buffer(x):
    y = np.zeros(x.shape, dtype=np.float32)
    y[0] = x[0] * 2.0
    y[1:] = np.tanh(x[1:])
    return np.sum(y * y)


def f32_buffer_loop(x):
    y = np.empty_like(x)
    y[0] = x[0]
    for i in range(1, x.shape[0]):
        y[i] = y[i - 1] * x[i] + np.float32(0.5)
    return np.sum(y)


def test_float32_buffer_float32_input():
    x = X.astype(np.float32)
    for f in (f32_buffer, f32_buffer_loop):
        g32 = s2sad.grad(f)(x)
        g64 = s2sad.grad(f)(X)
        assert g32.dtype == np.float32 and g32.shape == x.shape, f.__name__
        assert g64.dtype == np.float64, f.__name__
        np.testing.assert_allclose(g32, g64, rtol=2e-3, atol=2e-4, err_msg=f.__name__)


def test_float32_buffer_float64_input():
    """A float64 value written into a float32 buffer: a float64 gradient, of the float32 math."""
    check_grads(f32_buffer, (X,), eps=1e-3, rtol=1e-2, atol=1e-4)
    g = s2sad.grad(f32_buffer)(X)
    assert g.dtype == np.float64


def int_buffer(x):
    y = np.zeros(3, dtype=int)
    y[0] = x[0, 0] * 10
    return np.sum(y * x[0])


@xfail("B13")
def test_write_into_int_buffer():
    check_grads(int_buffer, (X,))


def bool_buffer(x):
    y = np.zeros(3, dtype=bool)
    y[0] = x[0, 0] > 1.0
    return np.sum(np.where(y, x[0], -x[0]))


def test_write_into_bool_buffer():
    check_grads(bool_buffer, (X,))
