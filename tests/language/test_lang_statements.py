"""The rest of the statement and expression language."""
import logging
import math

import numpy as np
import pytest

import s2sad
from lang_helpers import check_grads, rng, assert_close

GRAVITY = 9.81
COEFFS = (0.5, -0.25, 0.125)
SETTINGS = {"eps": 1e-3, "power": 3}
log = logging.getLogger("s2sad.tests.language")


# == case: conditional_expression
def relu_mix(x, a):
    y = x if x > 0 else a * x
    return y * y + (a if a > 1 else a * a)


def test_conditional_expression():
    check_grads(relu_mix, (0.7, 0.4), wrt=(0, 1))
    check_grads(relu_mix, (-0.7, 1.4), wrt=(0, 1))
    assert_close(s2sad.grad(relu_mix, wrt=(0, 1))(-0.7, 1.4), [2 * 1.4 * 1.4 * -0.7, 2 * 1.4 * 0.49 + 1.0])


# == case: and_or_short_circuit
def pick(x, y, use_x, fallback):
    v = (use_x and x) or y           # returns an operand, not a bool
    w = fallback or x * 2.0          # fallback None/0.0 -> x * 2
    return v * w


def test_and_or_short_circuit():
    check_grads(pick, (1.3, 0.6, True, None), wrt=(0, 1))
    check_grads(pick, (1.3, 0.6, False, 0.5), wrt=(0, 1))
    assert_close(s2sad.grad(pick, wrt=(0, 1))(1.3, 0.6, True, None), [4 * 1.3, 0.0])
    assert_close(s2sad.grad(pick, wrt=(0, 1))(1.3, 0.6, False, 0.5), [0.0, 0.5])


def guarded(x, items):
    return (items and items[0] * x) or x * x


def test_and_or_with_containers():
    assert_close(s2sad.grad(guarded)(0.9, [3.0]), 3.0)
    assert_close(s2sad.grad(guarded)(0.9, []), 1.8)


# == case: chained_comparisons
def clamp_energy(x, lo, hi):
    if lo < x < hi:
        return x * x
    elif x <= lo <= hi:
        return lo * x
    return hi * hi * x


def test_chained_comparisons():
    for x in (0.5, -1.5, 2.5):
        check_grads(clamp_energy, (x, -1.0, 2.0), wrt=(0, 1, 2))


# == case: assert_statement
def checked_sqrt_sum(x):
    assert x.ndim == 1, "expected a vector"
    assert np.all(x > 0), f"non-positive entries: {x[x <= 0]}"
    return np.sum(np.sqrt(x))


def test_assert_statement():
    r = rng(60)
    x = r.random(4) + 0.2
    check_grads(checked_sqrt_sum, (x,))
    with pytest.raises(AssertionError, match="expected a vector"):
        s2sad.grad(checked_sqrt_sum)(np.ones((2, 2)))


# == case: print_side_effect_once
def noisy_loss(w, x):
    y = np.tanh(w @ x)
    print("loss step, y =", round(float(y), 3))
    return y * y


def test_print_side_effect_once(capsys):
    r = rng(61)
    w, x = r.standard_normal(3), r.standard_normal(3)
    capsys.readouterr()
    g = s2sad.grad(noisy_loss)(w, x)
    out = capsys.readouterr().out
    assert out.count("loss step") == 1, out
    y = np.tanh(w @ x)
    assert_close(g, 2 * y * (1 - y * y) * x)


# == case: logging_side_effect_once
def logged_loss(w):
    log.info("evaluating with |w| = %.3f", float(np.linalg.norm(w)))
    v = np.sum(np.cos(w))
    log.debug("value %s", v)
    return v


def test_logging_side_effect_once(caplog):
    r = rng(62)
    w = r.standard_normal(3)
    with caplog.at_level(logging.DEBUG, logger="s2sad.tests.language"):
        g = s2sad.grad(logged_loss)(w)
    msgs = [rec.getMessage() for rec in caplog.records if rec.name == "s2sad.tests.language"]
    assert len(msgs) == 2, msgs
    assert msgs[0].startswith("evaluating with |w| = ")
    assert_close(g, -np.sin(w))


# == case: side_effect_counter_once
CALLS = {"n": 0}


def count_call():
    CALLS["n"] += 1


def counted_loss(x):
    count_call()
    return np.sum(x ** 3)


def test_side_effect_counter_once():
    r = rng(63)
    x = r.standard_normal(4)
    CALLS["n"] = 0
    g = s2sad.grad(counted_loss)(x)
    assert CALLS["n"] == 1
    assert_close(g, 3 * x * x)
    CALLS["n"] = 0
    _, pb = s2sad.vjp(counted_loss, x)
    pb(1.0)
    pb(2.0)
    assert CALLS["n"] == 1


# == case: global_constants
def projectile_height(v0, angle, t):
    vy = v0 * np.sin(angle)
    return vy * t - 0.5 * GRAVITY * t * t + COEFFS[0] * SETTINGS["eps"]


def test_global_constants():
    check_grads(projectile_height, (12.0, 0.7, 0.9), wrt=(0, 1, 2))
    assert_close(s2sad.grad(projectile_height, wrt=2)(12.0, 0.7, 0.9), 12.0 * np.sin(0.7) - GRAVITY * 0.9)


# == case: del_and_pass
def with_del(x):
    tmp = x * 3.0
    y = np.sin(tmp)
    del tmp
    if np.sum(y) > 100:
        pass
    else:
        pass
    return np.sum(y * x)


def test_del_and_pass():
    r = rng(66)
    check_grads(with_del, (r.standard_normal(4),))


# == case: while_else
def newton_sqrt(a, tol):
    x = a
    it = 0
    while abs(x * x - a) > tol:
        x = 0.5 * (x + a / x)
        it += 1
        if it > 50:
            break
    else:
        x = x * 1.0 + 0.0 * a
    return x


def test_while_else():
    check_grads(newton_sqrt, (2.3, 1e-12), wrt=0)
    assert_close(s2sad.grad(newton_sqrt)(2.3, 1e-12), 0.5 / np.sqrt(2.3), rtol=1e-8)


# == case: while_loop_accumulate
def geometric(r, n):
    total, term, k = 0.0, 1.0, 0
    while k < n:
        total += term
        term *= r
        k += 1
    return total


def test_while_loop_accumulate():
    check_grads(geometric, (0.7, 6), wrt=0)
    assert_close(s2sad.grad(geometric)(0.7, 6), sum(k * 0.7 ** (k - 1) for k in range(1, 6)))


# == case: early_return_in_loop
def first_positive_score(xs, w):
    for x in xs:
        s = w * x - 0.3
        if s > 0:
            return s * s
    return -w


def test_early_return_in_loop():
    check_grads(first_positive_score, ([-0.2, 0.1, 0.9, 2.0], 1.1), wrt=(0, 1))
    check_grads(first_positive_score, ([-0.2, 0.1], 1.1), wrt=(0, 1))
    assert_close(s2sad.grad(first_positive_score, wrt=1)([-0.2, 0.1], 1.1), -1.0)


# == case: fstring_and_str_ops
def labelled_loss(x, name):
    key = f"{name}_{len(x)}".upper()
    weight = 2.0 if key.startswith("TRAIN") else 0.5
    return weight * np.sum(x ** 2)


def test_fstring_and_str_ops():
    r = rng(68)
    x = r.standard_normal(3)
    assert_close(s2sad.grad(labelled_loss)(x, "train"), 4.0 * x)
    assert_close(s2sad.grad(labelled_loss)(x, "test"), 1.0 * x)


# == case: raise_statement
def positive_log(x):
    if x <= 0:
        raise ValueError(f"log of non-positive {x}")
    return math.log(x) * x


def test_raise_statement():
    check_grads(positive_log, (1.7,))
    with pytest.raises(ValueError) as ei:
        s2sad.grad(positive_log)(-1.0)
    assert type(ei.value) is ValueError
    assert ei.value.args == ("log of non-positive -1.0",)


# == case: global_read_declared
def global_poly(x):
    global COEFFS
    return sum(c * x ** k for k, c in enumerate(COEFFS))


def test_global_read_declared():
    check_grads(global_poly, (0.8,))
    assert_close(s2sad.grad(global_poly)(0.8), -0.25 + 2 * 0.125 * 0.8)


# == case: for_else
def first_crossing(xs, threshold):
    for i, x in enumerate(xs):
        if x * x > threshold:
            hit = x * i
            break
    else:
        hit = -threshold * xs[-1]
    return hit


def test_for_else():
    check_grads(first_crossing, ([0.1, 0.5, 1.4, 0.2], 1.0), wrt=(0, 1))   # break taken
    check_grads(first_crossing, ([0.1, 0.5, 0.4, 0.2], 1.0), wrt=(0, 1))   # else taken
    assert_close(s2sad.grad(first_crossing, wrt=1)([0.1, 0.5, 0.4, 0.2], 1.0), -0.2)


# == case: nonlocal_read
def make_counter_loss(scale):
    calls = 0

    def loss(x):
        nonlocal calls
        calls += 1                      # an inactive int: allowed
        return scale * np.sum(x * x) + 0.0 * calls
    return loss, lambda: calls


def nonlocal_reader(x, a):
    factor = a * 2.0

    def inner(v):
        nonlocal factor
        return factor * v
    return np.sum(inner(x) * x)


def test_nonlocal_read():
    r = rng(64)
    x = r.standard_normal(3)
    check_grads(nonlocal_reader, (x, 0.6), wrt=(0, 1))
    loss, ncalls = make_counter_loss(1.5)
    g = s2sad.grad(loss)(x)
    assert_close(g, 3.0 * x)
    assert ncalls() == 1


# == case: augmented_assignment_all_targets
class Box:
    def __init__(self, v):
        self.v = v


def aug_everything(x, y):
    a = x
    a += y
    a *= x
    a -= 0.5 * y
    a /= 1.5
    a **= 2
    box = Box(x)
    box.v += y
    box.v *= 2.0
    arr = np.array([x, y, x * y])
    arr[0] += y
    arr[1:] *= x
    arr[2] -= 1.0
    lst = [x, y]
    lst[1] += x
    lst[0] *= lst[1]
    d = {"k": y}
    d["k"] += x * x
    d["k"] /= 2.0
    return a + box.v + np.sum(arr ** 2) + lst[0] + lst[1] + d["k"]


def test_augmented_assignment_all_targets():
    check_grads(aug_everything, (0.8, -1.3), wrt=(0, 1))


def aug_arrays(W, x):
    h = W @ x
    h += 1.0
    h *= h
    h[0] -= x[0]
    return np.sum(h)


def test_augmented_assignment_arrays():
    r = rng(65)
    W, x = r.standard_normal((3, 3)), r.standard_normal(3)
    W0, x0 = W.copy(), x.copy()
    check_grads(aug_arrays, (W, x), wrt=(0, 1))
    s2sad.grad(aug_arrays, wrt=(0, 1))(W, x)
    np.testing.assert_array_equal(W, W0)     # inputs are not mutated
    np.testing.assert_array_equal(x, x0)


# == case: isinstance_and_type_dispatch
def as_total(x):
    if isinstance(x, (list, tuple)):
        return sum(as_total(v) for v in x)
    if isinstance(x, dict):
        return sum(as_total(v) for v in x.values())
    return np.sum(x ** 2)


def test_isinstance_and_type_dispatch():
    r = rng(67)
    tree = [r.standard_normal(2), {"a": 0.5, "b": (1.3, r.standard_normal(3))}]
    check_grads(as_total, (tree,))


# == case: walrus_operator
def walrus(xs, c):
    kept = [y for x in xs if (y := c * x * x) > 0.1]
    if (n := len(kept)) > 0:
        return sum(kept) / n
    return c


def test_walrus_operator():
    check_grads(walrus, ([0.2, 0.9, -1.1, 0.05], 1.3), wrt=(0, 1))


# == case: imports_inside_the_function
def local_imports(A, x):
    import scipy.linalg as sla
    from numpy import tanh
    from math import sin as msin
    import numpy.linalg
    y = sla.solve(A @ A.T + np.eye(2), x)
    return float(np.sum(tanh(y))) * msin(0.3) + numpy.linalg.norm(x)


def test_imports_inside_the_function():
    """Imports inside a function happen when the derivative is built; the names then read like
    module globals (and the derivative is reused on later calls)."""
    from s2sad.cache import CACHE
    r = rng(12)
    A, x = r.standard_normal((2, 2)), r.standard_normal(2)
    check_grads(local_imports, (A, x), wrt=(0, 1))
    s2sad.grad(local_imports, wrt=(0, 1))(A, x)
    n = CACHE.builds
    s2sad.grad(local_imports, wrt=(0, 1))(A, x)
    assert CACHE.builds == n
