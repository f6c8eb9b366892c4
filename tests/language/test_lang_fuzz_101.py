"""Findings of tests/fuzz seed 101 (issue 10).

101:1176: a closure (lambda or nested def) that captured an iterator and consumed it had a zero
derivative through it: at run time an s2sad iterator (runtime.Iter) counted as carrying no
derivative, so the closure's data cell was passed to its derivative as a constant (and an iterator
given to a callee known only at run time, or bound in a partial, as well).

101:1043: ``max(zip(...), key=...)`` inside a loop, at a point where two keys are equal as
functions (``x2 * (x1 * y)`` and ``x1 * (x2 * y)``): which one wins is decided by rounding, and
differs between the point and its neighbours.  s2sad differentiates the branch Python took; the
construct itself is checked here where no such tie exists."""
import functools

import numpy as np
import pytest

import s2sad
from s2sad.testing import check_grads

X = np.array([0.3, -1.2, 0.8])
Y = 0.7
MODES = ("rev", "fwd")


# -- 101:1176: closures over iterators --------------------------------------------------------------
def lambda_sums_captured_filter(x, y):
    it2 = filter(lambda t: t, x)
    l1 = map(lambda t: sum(it2), x)          # the first call takes all values, later ones none
    return sum(l1)


def lambda_called_once(x, y):
    it2 = map(lambda t: t * y, x)
    g = lambda: sum(it2)
    return g()


def lambda_called_twice(x, y):
    it2 = (v * y for v in x)
    g = lambda: sum(it2)
    return g() + 2.0 * g()


def lambda_next_per_call(x, y):
    it2 = iter(x * y)
    g = lambda t: next(it2) * t
    return sum(map(g, x))


def nested_def_next_and_default(x, y):
    it2 = iter(x * y)

    def g(t):
        return next(it2) * t + next(it2, 0.0)
    return g(x[0]) + g(x[1])


def closure_and_outer_consumer(x, y):
    it2 = iter(x * y)
    g = lambda: next(it2)
    return g() * next(it2) + g()


def closures_in_a_list(x, y):
    it2 = iter(x * y)
    fs = [lambda: next(it2), lambda: 3.0 * next(it2)]
    return sum(f() for f in fs) + sum(it2)


def closure_over_zip(x, y):
    it2 = zip(x, iter(x * y))
    g = lambda: sum(p * q for p, q in it2)
    return g()


def closure_over_enumerate_max(x, y):
    it2 = enumerate(x * y)
    g = lambda: max(it2, key=lambda p: p[1])[1]
    return g()


def closure_over_reversed(x, y):
    it2 = reversed(list(x * y))
    g = lambda k: next(it2) * k
    return sum(map(g, [1.0, 2.0]))


def _total(it):
    return sum(it)


def _first_twice(it):
    return 2.0 * next(it) + sum(it)


def iterator_to_callee_known_at_run_time(x, y):
    fn = _first_twice if y > 0 else _total
    it2 = filter(lambda t: t > -5.0, x * y)
    return fn(it2) + fn(iter([y, y]))


def iterator_bound_in_partial(x, y):
    p = functools.partial(_first_twice, iter(x * y))
    return p()


@pytest.mark.parametrize("f", [
    lambda_sums_captured_filter, lambda_called_once, lambda_called_twice, lambda_next_per_call,
    nested_def_next_and_default, closure_and_outer_consumer, closures_in_a_list, closure_over_zip,
    closure_over_enumerate_max, closure_over_reversed, iterator_to_callee_known_at_run_time,
    iterator_bound_in_partial])
@pytest.mark.parametrize("mode", MODES)
def test_iterator_consumed_through_a_closure_or_dynamic_call(f, mode):
    check_grads(f, (X, Y), modes=(mode,))


def test_captured_filter_numbers():
    # sum(l1) = x0 + x1 + x2 (the first call takes every value; the others get an empty iterator)
    g = s2sad.grad(lambda_sums_captured_filter)(X, Y)
    np.testing.assert_allclose(g, [1.0, 1.0, 1.0])
    _, t = s2sad.jvp(lambda_sums_captured_filter, (X, Y), (np.array([1.0, 2.0, 4.0]), 0.0))
    assert float(t) == pytest.approx(7.0)


# -- 101:1043: max over zip with a key, in a loop ---------------------------------------------------
def max_zip_key_in_loop(x, y):
    a7 = np.zeros(3)
    for i in range(3):
        a7[i] = max(zip(list(x)[1:] + [x[i] for i8, v in enumerate(x)],
                        np.concatenate([x[:1], (x * y)[1:] + 0.25])),
                    key=lambda pq: pq[0] * pq[1])[0]
    return np.sum(a7)


def max_zip_key_tie(x, y):
    # (the fuzzer's program: at i == 1 the last two keys are x2 * (x1 * y) and x1 * (x2 * y))
    a7 = np.zeros(3)
    for i in range(3):
        a7[i] = max(zip(list(x)[1:] + [x[i] for i8, v in enumerate(x)],
                        np.concatenate([x[:1], (x * y)[1:]])),
                    key=lambda pq: pq[0] * pq[1])[0]
    return np.sum(a7)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("mode", MODES)
def test_max_zip_key_in_loop(seed, mode):
    rng = np.random.default_rng(seed)
    check_grads(max_zip_key_in_loop, (rng.standard_normal(3), float(rng.standard_normal())),
                modes=(mode,))


def test_max_zip_key_tie_differentiates_the_branch_python_took():
    x = np.array([-1.16980191, 1.73936788, -0.49591073])
    y = 0.3289696294602021
    assert x[2] * (x[1] * y) == x[1] * (x[2] * y)    # an exact tie: max keeps the first, x[2]
    # picked: x[0] (i = 0), x[2] (i = 1, the tie), x[2] (i = 2)
    np.testing.assert_allclose(s2sad.grad(max_zip_key_tie)(x, y), [1.0, 0.0, 2.0])
    for k, want in enumerate([1.0, 0.0, 2.0]):
        _, t = s2sad.jvp(max_zip_key_tie, (x, y), (np.eye(3)[k], 0.0))
        assert float(t) == want
