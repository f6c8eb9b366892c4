"""jit=True keeps the numbers a loop saves for the reverse sweep in arrays, not lists
(codegen/reverse/stacks.py): their lengths known before the loop where the ranges read constants
and parameters, made room for per loop (``_rt.reserve``) where they do not; a stack pushed once
per trip of one loop shares the loop's trip index, any other has a fill index of its own; a
``while`` body, or a ``for`` body with a ``break``, pushes on lists (an array rebound per trip
costs numba two atomic reference count updates a trip).  Each derivative is compared
with Python mode's and with central differences, in the loop shapes where an index or a length
could be off by one."""
import math

import numpy as np
import pytest

import s2sad

from .compare import same_as_python

pytest.importorskip("numba")


def running(x, n):                      # one push per trip: the trip index
    acc = 0.0
    for i in range(n):
        acc = acc + math.sin(x[i]) * acc + x[i] * x[i]
    return acc


def triangle(x):                        # the inner range changes per trip: reserve
    n = x.shape[0]
    acc = 1.0
    for i in range(n):
        for j in range(i):
            acc = acc * math.cos(x[j] * 0.1) + x[i] * 0.01
    return acc


def stepped(x, n):                      # a negative step, and trips that may be none
    acc = 0.5
    for i in range(n - 1, -1, -2):
        acc = math.tanh(acc * x[i] + 0.3)
    return acc


def early(x):                           # a break: fewer trips than the range
    acc = 0.1
    for i in range(x.shape[0]):
        acc = math.sin(acc + x[i])
        if acc > 0.9:
            break
    return acc


def some(x):                            # pushes under an if: a fill index of its own
    acc = 1.0
    for i in range(x.shape[0]):
        if x[i] > 0.5:
            acc = acc * math.exp(x[i] * 0.1)
        else:
            acc = math.sin(acc) + x[i]
    return acc


def twice(x, n):                        # a stack pushed before the loop and in it
    acc = math.sin(x[0])
    acc = math.cos(acc) * x[1]
    for i in range(n):
        acc = math.sin(acc) * x[i]
    for i in range(n):
        acc = math.cos(acc) * x[i]
    return acc


def inner_in_while(x):                  # a for loop inside a while loop
    acc = 0.3
    k = 0
    while k < 3:
        for i in range(x.shape[0]):
            acc = math.sin(acc * x[i] + k)
        k += 1
    return acc


def param_in_while(x, n):               # a length known per entry only: reserve
    acc = 0.3
    k = 0
    while k < 4:
        for i in range(n):
            acc = math.sin(acc * x[i] + k)
        k += 1
    return acc


def in_while(x):                        # pushes in a while body: room per trip
    acc = 0.3
    k = 0
    while k < x.shape[0]:
        acc = math.sin(acc * x[k])
        k += 1
    return acc


def nested_break(x):                    # an inner loop's trip count saved per outer trip
    acc = 0.2
    for i in range(4):
        for j in range(x.shape[0]):
            acc = math.sin(acc + x[j] * (i + 1))
            if acc > 0.8:
                break
    return acc


CASES = [
    (running, lambda r: (r.random(12), 12), (0,)),
    (running, lambda r: (r.random(12), 0), (0,)),
    (triangle, lambda r: (r.random(30),), (0,)),
    (stepped, lambda r: (r.random(9), 9), (0,)),
    (stepped, lambda r: (r.random(9), 0), (0,)),
    (early, lambda r: (r.random(20),), (0,)),
    (some, lambda r: (r.random(15),), (0,)),
    (twice, lambda r: (r.random(6) + 0.5, 6), (0,)),
    (inner_in_while, lambda r: (r.random(7),), (0,)),
    (in_while, lambda r: (r.random(8),), (0,)),
    (param_in_while, lambda r: (r.random(50), 50), (0,)),
    (nested_break, lambda r: (r.random(10),), (0,)),
]


@pytest.mark.parametrize("f, make, wrt", CASES,
                         ids=[f"{c[0].__name__}-{k}" for k, c in enumerate(CASES)])
def test_same_as_python_and_differences(f, make, wrt):
    same_as_python(f, make(np.random.default_rng(7)), wrt)


def source(f, *args):
    return s2sad.differentiate(f, wrt=0, jit=True).adjoint_source(*args)


def test_one_push_per_trip_uses_the_trip_index_and_a_known_length():
    src = source(running, np.ones(4), 4)
    assert "_s_acc = _np.empty(len(range(n)))" in src
    assert ".append(" not in src and ".pop()" not in src
    assert "_s_acc[_t" in src and "_rt.reserve" not in src


def test_lengths_add_the_pushes_outside_loops_and_per_loop():
    src = source(twice, np.ones(6), 6)
    # acc: one push before the loops, one per trip of each of the two loops of n trips
    assert "_s_acc = _np.empty(1 + 2 * len(range(n)))" in src
    assert "_np.empty(4, _np.int64)" in source(nested_break, np.ones(5))


def test_a_range_read_inside_the_function_reserves_before_the_loop():
    src = source(triangle, np.ones(5))
    assert "_rt.reserve(" in src and ".append(" not in src


def test_a_for_loop_in_a_while_loop_reserves_per_entry():
    src = source(param_in_while, np.ones(5), 5)
    assert "_s_acc = _np.empty(0)" in src and "_rt.reserve(_s_acc" in src


def test_pushes_under_an_if_have_their_own_fill_index():
    src = source(some, np.ones(5))
    assert "_k_acc += 1" in src and "_k_acc -= 1" in src


def test_counters_of_inner_loops_are_integer_arrays():
    src = source(nested_break, np.ones(5))
    assert "_np.int64)" in src


def two_regions(y0, a):                 # y read by element, bound again mid-trip
    y = y0.copy()
    for t in range(20):
        d0 = a * y[0] - y[0] * y[1]
        y = y + 0.01 * np.array([d0, -y[1]])
        d1 = y[0] * y[1]
        y = y * (1.0 + 0.001 * d1)
    return y[0] + y[1]


def test_one_shape_saved_per_binding_of_an_array_read_by_element():
    args = (np.array([0.7, 0.4]), 1.3)
    same_as_python(two_regions, args, (0, 1))
    src = s2sad.differentiate(two_regions, wrt=(0, 1), jit=True).adjoint_source(*args)
    # (four element reads before y is bound again, two after: one shape each)
    assert src.count("= y.shape") == 2, src


def newton(a, x0):                      # a while loop with a break, as Numba users write it
    x = x0
    k = 0
    while k < 50:
        fx = x * x * x - a
        x = x - fx / (3.0 * x * x)
        if abs(fx) < 1e-12:
            break
        k += 1
    return x


def test_a_while_loop_pushes_on_lists():
    src = source(in_while, np.ones(5))
    assert "_s_acc.append(acc)" in src and "_rt.reserve(" not in src
    same_as_python(newton, (2.0, 1.5), (0, 1))
    same_as_python(in_while, (np.random.default_rng(3).random(200),), (0,))


def capped(x, cap):                     # an iteration capped far above the trips it makes
    acc = 0.5
    for i in range(cap):
        acc = math.cos(acc * x[0]) + 0.1 * x[1]
        if i > 30:
            break
    return acc


def test_a_loop_that_may_end_early_pushes_on_lists():
    src = source(capped, np.ones(2), 10 ** 9)
    assert "len(range(cap))" not in src and "_s_acc.append(acc)" in src
    # (a billion-trip cap: room for 10**9 floats up front would be 8 GB)
    same_as_python(capped, (np.array([0.7, 0.3]), 10 ** 9), (0,))


# -- operands of elementwise operations kept as shapes (codegen/reverse/shapes.py) -------------
def ode(y0, a, b):                      # an RK2 step loop through a list display, as rk4
    y = y0.copy()
    for _ in range(30):
        k1 = np.array([a * y[0] - b * y[0] * y[1], -y[1] + b * y[0] * y[1]])
        k2y = y + 0.05 * k1
        k2 = np.array([a * k2y[0] - b * k2y[0] * k2y[1], -k2y[1] + b * k2y[0] * k2y[1]])
        y = y + 0.05 * (k1 + k2)
    return y[0] + y[1]


def broadcast_in_loop(x, c):            # an operand of shape (1,) against (n,): reduced per trip
    y = x.copy()
    for _ in range(6):
        y = np.sin(y + c) * c
    return np.sum(y)


def rows_in_loop(m, r):                 # a row (1, k) against a matrix (n, k), a 2-d saved shape
    y = m
    for i in range(4):
        y = np.tanh(y * r + 0.1 * i)
    return np.sum(y * y)


def shrinking(x):                       # the operands' shapes change every trip
    y = x
    for _ in range(5):
        y = y[1:] * np.cos(y[:-1]) + 0.1
    return np.sum(y)


def while_rows(m, r):                   # shapes saved in a while loop: a list of tuples
    y = m
    k = 0
    while k < 7 and np.sum(y) < 100.0:
        y = y * r + 0.3
        k += 1
    return np.sum(np.sin(y))


SHAPE_CASES = [
    (ode, lambda r: (np.array([1.0, 0.5]), 1.1, 0.4), (0, 1, 2)),
    (broadcast_in_loop, lambda r: (r.random(5), r.random(1)), (0, 1)),
    (rows_in_loop, lambda r: (r.random((3, 4)), r.random((1, 4))), (0, 1)),
    (shrinking, lambda r: (r.random(9),), (0,)),
    (while_rows, lambda r: (r.random((2, 3)), 0.5 + r.random((1, 3))), (0, 1)),
]


@pytest.mark.parametrize("f, make, wrt", SHAPE_CASES, ids=[c[0].__name__ for c in SHAPE_CASES])
def test_operands_kept_as_shapes_same_as_python_and_differences(f, make, wrt):
    same_as_python(f, make(np.random.default_rng(11)), wrt)


def test_a_loop_keeps_no_arrays_for_their_shapes_alone():
    args = (np.array([1.0, 0.5]), 1.1, 0.4)
    src = s2sad.differentiate(ode, wrt=(0, 1, 2), jit=True).adjoint_source(*args)
    # every array the loop makes is read by its reverse for its shape alone: the shapes go on
    # integer arrays, a row per trip, and the lists of the two displays are not kept either
    loop = src.split("for _ in range(30):")[1].split("for _ in range(")[0]
    assert ".append(" not in loop, loop
    assert "_adj.list_adjoint(" in src and "_adj.array_adjoint_of(" not in src
    assert "_np.empty((30, 1), _np.int64)" in src
    assert "_rt.unbroadcast(" in src and "_adj.standin(_shape" in src
    src2 = s2sad.differentiate(while_rows, wrt=(0, 1), jit=True).adjoint_source(
        np.ones((2, 3)), np.ones((1, 3)))
    assert "_np.int64)" not in src2 and "_rt.reserve(" not in src2
    assert ".append(_shape" in src2


def _rhs(y, a, b):
    return np.array([a * y[0] - b * y[0] * y[1], -y[1] + b * y[0] * y[1]])


def ode_calls(y0, a, b):                # the same through an inlined right-hand side
    y = y0.copy()
    for _ in range(30):
        k1 = _rhs(y, a, b)
        k2 = _rhs(y + 0.05 * k1, a, b)
        y = y + 0.05 * (k1 + k2)
    return y[0] + y[1]


def test_a_zero_filled_in_for_an_operand_kept_as_a_shape_is_made_from_the_shape():
    args = (np.array([1.0, 0.5]), 1.1, 0.4)
    same_as_python(ode_calls, args, (0, 1, 2))
    src = s2sad.differentiate(ode_calls, wrt=(0, 1, 2), jit=True).adjoint_source(*args)
    # (the callee's parameter y and the operand y + 0.05 * k1 are not kept: their names may hold
    # another trip's array, so their zeros come from their saved shapes)
    assert "_b_rhs1_y = _rt.zero_of(_adj.standin(_shape" in src, src
    assert "_rt.zero_of(_rhs1_y)" not in src and "_rt.zero_of(_rhs2_y)" not in src
