"""``p op= ...`` on an argument that is an array or a list changes the caller's object in place
(Python's ``__imul__``, ``__iadd__``...); s2sad makes a new value and rebinds the name.  A function
of yours that did so silently gave its caller the old values (a wrong value and gradient: the
caller read its array after the call as if nothing had changed).  Refused now, like any write into
an argument (``p[0] = v``), with the fix; numbers and tuples, which Python rebinds too, and
arguments rebound to a copy first, are unchanged."""
import numpy as np
import pytest

import s2sad
from s2sad.errors import ArgumentWriteError
from s2sad.testing import check_grads

X = np.array([0.5, -1.0, 2.0])


def scale_(v, a):
    v *= a
    return v


def caller_reads_after(x, a):
    z = x.copy()
    w = scale_(z, a)
    return np.sum(w) + np.sum(z ** 2)


def closure_scales(x, a):
    def scale(v):
        v *= a
    z = x.copy()
    scale(z)
    return np.sum(z ** 2)


def doubles(x, buf):
    buf *= 2.0
    return np.sum(x * buf)


def constant_buffer(x, a):
    buf = np.ones(3)
    s = doubles(x, buf)
    return s + np.sum(x * buf) * a


def add_item(lst, v):
    lst += [v]
    return len(lst)


def list_grows(x, a):
    lst = [x[0]]
    add_item(lst, a * x[1])
    return sum(lst)


def alias_of_argument(v, a):
    w = v
    w += a
    return np.sum(w)


def entry_scales_input(x, a):
    x *= a
    return np.sum(x)


@pytest.mark.parametrize("f", [caller_reads_after, closure_scales, constant_buffer, list_grows,
                               alias_of_argument, entry_scales_input])
@pytest.mark.parametrize("mode", ["rev", "fwd"])
def test_in_place_augmented_write_into_an_argument_is_refused(f, mode):
    with pytest.raises(ArgumentWriteError) as e:
        if mode == "rev":
            s2sad.grad(f, wrt=(0, 1))(X.copy(), 1.5)
        else:
            s2sad.jvp(f, (X.copy(), 1.5), (np.ones(3), 1.0))
    msg = str(e.value)
    assert "test_lang_argument_inplace.py:" in msg and "in place" in msg and "Fix:" in msg


def test_the_plain_functions_do_change_the_callers_object():
    # what s2sad would have missed: the caller's array or list changed by the callee
    z = X.copy()
    scale_(z, 2.0)
    np.testing.assert_allclose(z, 2.0 * X)
    assert caller_reads_after(X, 1.5) == pytest.approx(np.sum(1.5 * X) + np.sum((1.5 * X) ** 2))
    assert list_grows(X, 1.5) == pytest.approx(X[0] + 1.5 * X[1])


# -- what stays accepted -----------------------------------------------------------------------
def scale_number(t, a):
    t *= a
    return t


def number_argument(x, a):
    return scale_number(x[0], a) + scale_number(a, x[1])


def tuple_argument(x, a):
    def grow(tp):
        tp += (a,)
        return sum(tp)
    tp = (x[0], x[1])
    return grow(tp) + sum(tp)


def copied_first(x, a):
    def scale(v):
        v = v.copy()
        v *= a
        return v
    z = x * 1.0
    return np.sum(scale(z)) + np.sum(z ** 2)


def new_value(x, a):
    def scale(v):
        v = v * a
        return v
    z = x * 1.0
    return np.sum(scale(z)) + np.sum(z ** 2)


@pytest.mark.parametrize("f", [number_argument, tuple_argument, copied_first, new_value])
@pytest.mark.parametrize("mode", ["rev", "fwd"])
def test_rebinding_arguments_still_differentiates(f, mode):
    check_grads(f, (X.copy(), 1.5), wrt=(0, 1), modes=(mode,))


# -- closures writing into what they captured -------------------------------------------------
def closure_appends(x, a):
    acc = []

    def push(v):
        acc.append(v * a)
    push(x[0])
    push(x[1])
    return sum(acc)


def closure_fills(x, a):
    buf = np.zeros(3)

    def put(i, v):
        buf[i] = v
    for i in range(3):
        put(i, x[i] * a)
    return np.sum(buf ** 2)


@pytest.mark.parametrize("f,name", [(closure_appends, "acc"), (closure_fills, "buf")])
def test_closure_writing_into_a_captured_variable_is_refused_as_such(f, name):
    # (the message used to call the captured variable "the argument", with a fix that does not
    # apply: work on a copy)
    with pytest.raises(ArgumentWriteError) as e:
        s2sad.grad(f, wrt=(0, 1))(X.copy(), 1.5)
    msg = str(e.value)
    assert f"`{name}`, a variable of the enclosing function that this closure captured" in msg
    assert "have the closure return the value" in msg


def through_real(x):
    s = np.sum(x ** 3)
    y = np.real(x)              # x itself, for a real array
    y[0] = 5.0
    return s + np.sum(y)


def through_conj(x):
    s = np.sum(x ** 3)
    y = x.conj()
    y[0] = 5.0
    return s + np.sum(y)


def through_astype(x):
    y = x.astype(x.dtype, copy=False)
    y[0] = 5.0
    return np.sum(y * x)


def through_real_of_a_local(x):         # a local array: followed, as before
    y = x * 1.0
    s = np.sum(y ** 3)
    z = np.real(y)
    z[0] = 5.0
    return s + np.sum(z)


def test_a_write_through_a_call_that_may_return_the_argument_itself_is_refused():
    # (before: not refused; the reverse sweep read the caller's changed array, a wrong gradient,
    # and the caller's array was changed)
    from s2sad.errors import ArgumentWriteError
    for f in (through_real, through_conj, through_astype):
        x = np.array([1.0, 2.0, 3.0])
        with pytest.raises(ArgumentWriteError, match="may have returned as the argument `x`"):
            s2sad.grad(f)(x)
        np.testing.assert_array_equal(x, [1.0, 2.0, 3.0])
    x = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(s2sad.grad(through_real_of_a_local)(x), [3.0, 13.0, 28.0])


def augmented_through_real(x, b):
    y = np.real(x)                      # x itself, for a real array
    y += b                              # changes the caller's x, in Python
    return np.sum(y * b)


def test_an_augmented_write_through_a_call_that_may_return_the_argument_is_refused():
    x = np.array([1.0, 2.0, 3.0])
    with pytest.raises(ArgumentWriteError, match="may have returned as the argument `x`"):
        s2sad.grad(augmented_through_real)(x, x * 2.0)


# == case: a name that held the argument, rebound to a new array before the write
def heat_step(u0, k):               # the boundary values set after each step: a new array each
    u = u0                          # trip, so u0, the caller's, is never written into
    for _ in range(4):
        u = u + k * (np.roll(u, 1) - 2 * u + np.roll(u, -1))
        u[0] = 0.0
        u[-1] = k * u[1]
    return np.sum(u ** 2)


def either_branch(u0, k, flag):     # rebound on both branches of an if
    u = u0
    if flag:
        u = u * k
    else:
        u = u - k
    u[1] = k
    return np.sum(u * u0)


def written_first(u0, k):           # the first trip writes into u0 itself
    u = u0
    for _ in range(2):
        u[0] = 0.0
        u = u + k * u
    return np.sum(u ** 2)


def one_branch(u0, k, flag):        # u may still be u0
    u = u0
    if flag:
        u = u * k
    u[1] = 2.0
    return np.sum(u)


def test_a_name_rebound_to_a_new_array_before_the_write_is_not_the_argument():
    # (refused before as a write into the argument: the alias check did not see the rebinding)
    u0 = np.random.default_rng(3).standard_normal(6)
    for f, args in ((heat_step, (u0, 0.2)), (either_branch, (u0, 0.7, True)),
                    (either_branch, (u0, 0.7, False))):
        kept = u0.copy()
        check_grads(f, args, wrt=(0, 1), modes=("rev", "fwd"))
        s2sad.grad(f, wrt=(0, 1))(*args)
        np.testing.assert_array_equal(u0, kept)       # the caller's array is untouched
    for f, args in ((written_first, (u0, 0.2)), (one_branch, (u0, 0.7, True))):
        for run in (lambda: s2sad.grad(f, wrt=(0, 1))(*args),
                    lambda: s2sad.jvp(f, args, (np.ones(6), 1.0) + args[2:])):
            with pytest.raises(ArgumentWriteError, match="`u0`"):
                run()
