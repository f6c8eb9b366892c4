"""`with` blocks and try/except/else/finally."""
import contextlib
import threading

import numpy as np
import pytest

import s2sad
from lang_helpers import check_grads, rng, assert_close

_LOCK = threading.Lock()
_RLOCK = threading.RLock()


# == case: exception_leaving_function_propagates
class ConvergenceError(RuntimeError):
    pass


def must_converge(x, limit):
    y = x * x
    if y > limit:
        raise ConvergenceError(f"diverged: {y:.3f} > {limit}")
    return y


def test_exception_leaving_function_propagates():
    with pytest.raises(ConvergenceError) as ei:
        s2sad.grad(must_converge)(3.0, 2.0)
    assert type(ei.value) is ConvergenceError
    assert str(ei.value) == "diverged: 9.000 > 2.0"
    assert_close(s2sad.grad(must_converge)(1.1, 2.0), 2.2)


# == case: exception_from_numpy_propagates
def shape_mismatch(a, b):
    return np.sum(a @ b)


def test_exception_from_numpy_propagates():
    r = rng(58)
    a, b = r.standard_normal((2, 3)), r.standard_normal(4)
    with pytest.raises(ValueError) as ei:
        shape_mismatch(a, b)
    with pytest.raises(ValueError) as ei2:
        s2sad.grad(shape_mismatch)(a, b)
    assert type(ei2.value) is type(ei.value)
    assert str(ei2.value) == str(ei.value)


# == case: with_threading_lock
def locked_update(w, g, lr):
    with _LOCK:
        w_new = w - lr * g
    with _RLOCK:
        penalty = np.sum(w_new ** 2)
    return penalty


def test_with_threading_lock():
    r = rng(50)
    check_grads(locked_update, (r.standard_normal(4), r.standard_normal(4), 0.1), wrt=(0, 1, 2))
    assert not _LOCK.locked()


# == case: with_contextlib_manager
EVENTS = []


@contextlib.contextmanager
def timed(label):
    EVENTS.append(("enter", label))
    try:
        yield label
    finally:
        EVENTS.append(("exit", label))


def timed_loss(x, a):
    with timed("forward") as tag:
        y = np.sin(a * x)
        z = np.sum(y * y) if tag == "forward" else 0.0
    return z


def test_with_contextlib_manager_runs_once():
    r = rng(51)
    x = r.standard_normal(5)
    EVENTS.clear()
    v, g = s2sad.value_and_grad(timed_loss, wrt=(0, 1))(x, 0.7)
    assert EVENTS == [("enter", "forward"), ("exit", "forward")]
    assert_close(v, np.sum(np.sin(0.7 * x) ** 2))
    assert_close(g[0], 2 * np.sin(0.7 * x) * np.cos(0.7 * x) * 0.7)
    check_grads(timed_loss, (x, 0.7), wrt=(0, 1))


# == case: with_np_errstate
def safe_log_ratio(x, y):
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.log(x / y)
    return np.sum(np.where(np.isfinite(r), r, 0.0) ** 2)


def test_with_np_errstate():
    r = rng(52)
    x, y = r.random(5) + 0.5, r.random(5) + 0.5
    check_grads(safe_log_ratio, (x, y), wrt=(0, 1))


# == case: try_active_computation_no_exception
def robust_norm(x):
    try:
        n = np.sqrt(np.sum(x * x))
        y = x / n
    except ZeroDivisionError:
        y = x
    return np.sum(y * np.arange(1.0, len(x) + 1.0))


def test_try_active_computation_no_exception():
    r = rng(54)
    check_grads(robust_norm, (r.standard_normal(4),))


# == case: handler_catches_exception_raised_in_function
def inverse_or_fallback(x, a):
    try:
        if abs(a) < 0.5:
            raise ValueError("too small")
        y = x / a
    except ValueError:
        y = x * a * a           # active computation inside the handler
    return np.sum(np.sin(y))


def test_handler_catches_exception_raised_in_function():
    r = rng(55)
    x = r.standard_normal(3)
    check_grads(inverse_or_fallback, (x, 0.3), wrt=(0, 1))    # handler path
    check_grads(inverse_or_fallback, (x, 1.7), wrt=(0, 1))    # normal path
    g = s2sad.grad(inverse_or_fallback, wrt=1)(x, 0.3)
    assert_close(g, np.sum(np.cos(x * 0.09) * x * 0.6))


# == case: try_else_finally_active
LOG = []


def fit_step(w, x):
    try:
        z = w @ x
    except TypeError:
        z = 0.0
    else:
        z = np.tanh(z) * 2.0      # active computation in else
    finally:
        LOG.append("step")
        w2 = w * w                # active computation in finally
    return z + np.sum(w2)


def test_try_else_finally_active():
    r = rng(57)
    w, x = r.standard_normal(3), r.standard_normal(3)
    LOG.clear()
    g = s2sad.grad(fit_step)(w, x)
    assert LOG == ["step"]
    assert_close(g, 2 * (1 - np.tanh(w @ x) ** 2) * x + 2 * w)
    check_grads(fit_step, (w, x), wrt=(0, 1))


# == case: nested_try_reraise
def reraises(x):
    try:
        try:
            y = np.log(x)
            if y > 10:
                raise OverflowError("big")
        except OverflowError:
            raise
    finally:
        z = x * 2.0
    return y + z


def test_nested_try_reraise():
    check_grads(reraises, (1.7,))
    with pytest.raises(OverflowError) as ei:
        s2sad.grad(reraises)(1e6)
    assert type(ei.value) is OverflowError and ei.value.args == ("big",)


# == case: handler_catches_numpy_error
def checked_solve(A, b):
    try:
        x = np.linalg.solve(A, b)
    except np.linalg.LinAlgError:
        x = b / np.trace(A)
    return np.sum(x ** 2)


def test_handler_catches_numpy_error():
    r = rng(56)
    A = r.standard_normal((3, 3)) + 3 * np.eye(3)
    b = r.standard_normal(3)
    check_grads(checked_solve, (A, b), wrt=(0, 1))
    S = np.ones((3, 3)) * 1.3                     # singular: the handler runs
    check_grads(checked_solve, (S, b), wrt=1)     # (A is at a discontinuity: no FD along A)
    gA, gb = s2sad.grad(checked_solve, wrt=(0, 1))(S, b)
    tr = np.trace(S)
    assert_close(gb, 2 * b / tr ** 2)
    assert_close(gA, -2 * np.sum(b ** 2) / tr ** 3 * np.eye(3))


# == case: try_in_loop_with_continue
def skip_bad(xs, w):
    total = 0.0
    for x in xs:
        try:
            if x < 0:
                raise ArithmeticError
            total = total + w * np.sqrt(x)
        except ArithmeticError:
            total = total - 0.1 * w * x
            continue
        total = total + x * w * w
    return total


def test_try_in_loop_with_continue():
    xs = [0.5, -1.0, 2.0, -0.3, 1.1]
    check_grads(skip_bad, (xs, 0.8), wrt=(0, 1))


# == case: with_suppress_and_nullcontext
def tolerant(x, k):
    out = k * x
    with contextlib.suppress(KeyError):
        out = out + {"a": 1.0}["b"] * x     # KeyError: the rest of the block is skipped
    with contextlib.nullcontext():
        out = out * x
    return np.sum(out)


def test_with_suppress_and_nullcontext():
    r = rng(53)
    x = r.standard_normal(4)
    check_grads(tolerant, (x, 1.4), wrt=(0, 1))
    assert_close(s2sad.grad(tolerant)(x, 1.4), 2 * 1.4 * x)


# == case: handler_catches_a_method_cut_short
class Budget:
    def __init__(self):
        self.spent = 0.0

    def charge(self, v):
        self.spent = self.spent + v * v     # the object changes...
        if v > 10.0:
            raise ValueError("over budget")  # ...and then the method raises
        return self.spent


def charge_or_skip(x):
    b = Budget()
    try:
        b.charge(3.0 * x)
    except ValueError:
        pass
    return b.spent


def charge_through(b, v):
    b.charge(v)
    return 1.0


def charge_inside_helper(x):
    b = Budget()
    try:
        charge_through(b, 3.0 * x)
    except ValueError:
        pass
    return b.spent


def charge_then_fail_elsewhere(x):
    b = Budget()
    try:
        b.charge(x)
        x = {}["missing"]
    except KeyError:
        pass
    return b.spent


@pytest.mark.parametrize("f", [charge_or_skip, charge_inside_helper])
def test_handler_catching_an_exception_from_a_method_that_changed_its_object_refuses(f):
    # the method's update before the raise stays on the object, its derivative is lost with the
    # raise: s2sad refuses (both modes) instead of returning 0 (the answer is 18 x)
    for run in (lambda: s2sad.grad(f)(5.0), lambda: s2sad.jvp(f, (5.0,), (1.0,))):
        with pytest.raises(s2sad.S2SADError, match="Budget.charge") as ei:
            run()
        assert "test_lang_with_try.py" in str(ei.value) and "half of a call" in str(ei.value)
    if f is charge_or_skip:             # no exception: it differentiates (the helper's update
        assert_close(s2sad.grad(f)(1.0), 18.0)     # of its argument is refused as before)
        assert_close(s2sad.jvp(f, (1.0,), (1.0,))[1], 18.0)


def test_handler_catching_an_exception_from_elsewhere_after_a_method_call():
    assert_close(s2sad.grad(charge_then_fail_elsewhere)(2.0), 4.0)
    assert_close(s2sad.jvp(charge_then_fail_elsewhere, (2.0,), (1.0,))[1], 4.0)


# == case: context_manager_swallows_a_method_cut_short
def charge_suppressed(x):
    b = Budget()
    with contextlib.suppress(ValueError):
        b.charge(3.0 * x)
    return b.spent


def charge_suppressed_other(x):
    b = Budget()
    with contextlib.suppress(KeyError):
        b.charge(3.0 * x)
    return b.spent


def test_context_manager_swallowing_an_exception_from_a_method_that_changed_its_object_refuses():
    # contextlib.suppress is an except clause in disguise: the same refusal, naming the with line
    for run in (lambda: s2sad.grad(charge_suppressed)(5.0),
                lambda: s2sad.jvp(charge_suppressed, (5.0,), (1.0,))):
        with pytest.raises(s2sad.S2SADError, match="Budget.charge") as ei:
            run()
        assert "with contextlib.suppress(ValueError)" in str(ei.value)
        assert "swallowed" in str(ei.value)
    # no raise: the gradient as before; the generated with names the check
    assert_close(s2sad.grad(charge_suppressed)(1.0), 18.0)
    assert_close(s2sad.jvp(charge_suppressed, (1.0,), (1.0,))[1], 18.0)
    check_grads(charge_suppressed, (1.0,))
    src = s2sad.differentiate(charge_suppressed).adjoint_source()
    assert "with _rt.exit_check(" in src
    # an exception the manager lets through reaches the user as it was
    for run in (lambda: s2sad.grad(charge_suppressed_other)(5.0),
                lambda: s2sad.jvp(charge_suppressed_other, (5.0,), (1.0,))):
        with pytest.raises(ValueError, match="over budget"):
            run()
