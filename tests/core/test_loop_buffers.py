"""Python mode: adjoint buffers a reverse loop writes in place (codegen/reverse/reverse_sweep.py,
``own_buffers``), and no zero guards between typed real scalars (``math`` functions are typed)."""
import math

import numpy as np

import s2sad
from s2sad.testing import check_grads


def naive_map(x):
    y = np.empty_like(x)
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            y[i, j] = math.sin(math.cos(math.exp(x[i, j])))
    return np.sum(y * y)


def overwrite(x):                 # each element written three times: only the last write counts
    y = np.zeros_like(x)
    for k in range(3):
        for i in range(x.shape[0]):
            y[i] = x[i] * (k + 1.0)
    return np.sum(y * x)


def recurrence(x):                # y is read as well as written, by element
    y = np.zeros(x.shape[0])
    for i in range(1, x.shape[0]):
        y[i] = y[i - 1] * 0.5 + x[i]
    return np.sum(y ** 2)


def comprehension(x):
    return np.sum(np.array([math.sin(math.cos(math.exp(v))) for v in x.ravel()]))


def sliced(x):                    # a slice is not one element: the general helpers
    s = 0.0
    for i in range(x.shape[0] - 1):
        s = s + np.sum(x[i:i + 2] ** 2)
    return s


X = np.random.default_rng(3).standard_normal((3, 4))


def bwd_source(f, *args):
    return s2sad.differentiate(f).adjoint_source(*args).split("__bwd")[1]


def test_elementwise_loop_writes_its_buffers_in_place():
    src = bwd_source(naive_map, X)
    assert "_b_y = _rt.own(_b_y, y)" in src and "_b_x = _rt.own(0.0, x)" in src
    assert "_b_y[i, j] = 0.0" in src and "_b_x[i, j] += _b_5" in src
    assert "setitem_adjoint" not in src and "acc_getitem" not in src and "is_zero" not in src
    check_grads(naive_map, (X,))
    g = s2sad.grad(naive_map)(X)
    e = np.exp(X)
    y = np.sin(np.cos(e))
    assert np.allclose(g, 2 * y * np.cos(np.cos(e)) * -np.sin(e) * e, rtol=1e-12)


def test_repeated_writes_give_only_the_last_its_adjoint():
    x = np.arange(1.0, 5.0)
    assert "_b_y[i] = 0.0" in bwd_source(overwrite, x)
    # sum(3 x * x): 6 x
    assert np.allclose(s2sad.grad(overwrite)(x), 6 * x, rtol=1e-14)
    check_grads(overwrite, (x,))


def test_a_buffer_the_loop_also_reads_is_written_in_place():
    # y[i] written and y[i - 1] read by element: one buffer, its element read and zeroed for the
    # write, added to for the read (no copy of the adjoint per write, no snapshot of y per read)
    src = bwd_source(recurrence, X[0])
    assert "_rt.own(_b_y" in src and "setitem_adjoint" not in src and "snap(y)" not in src
    check_grads(recurrence, (X[0],))
    x = X[0]
    n = len(x)
    M = np.tril(0.5 ** np.subtract.outer(np.arange(n), np.arange(n)).clip(0))
    M[:, 0] = 0.0                   # y = M x (y[0] stays 0)
    assert np.allclose(s2sad.grad(recurrence)(x), 2 * M.T @ (M @ x), rtol=1e-13)


def test_comprehension_pops_its_list_adjoint_in_place():
    src = bwd_source(comprehension, X)
    assert "_rt.own_list(_b_1)" in src and "_rt.unappend_owned(_b_1)" in src
    assert "is_zero(_b_v)" not in src
    check_grads(comprehension, (X,))


def test_slices_are_not_elements():
    src = bwd_source(sliced, X[0])
    assert "_rt.own(" not in src
    check_grads(sliced, (X[0],))
