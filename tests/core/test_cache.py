"""Point 8 of issue 2: one build per (code, closure, mode, wrt, activity signature); a second
call does no transformation work; concurrent first calls build once."""
import threading
import time

import numpy as np
import pytest

import s2sad
import s2sad.codegen.build as build_mod
from s2sad.cache import CACHE
from core_util import randn


def cached_fn(x, y):
    return np.sum(np.sin(x) * y)


def cached_float(x, y):
    return x * np.cos(y)


def test_first_call_builds_once_second_call_does_not():
    CACHE.clear()
    x, y = randn(3), randn(3, seed=1)
    n = CACHE.builds
    g1 = s2sad.grad(cached_fn)(x, y)
    assert CACHE.builds == n + 1
    g2 = s2sad.grad(cached_fn)(x, y)
    s2sad.value_and_grad(cached_fn)(x * 2.0, y)
    s2sad.grad(cached_fn)(randn(7), randn(7, seed=2))    # other shapes, same activity signature
    assert CACHE.builds == n + 1
    np.testing.assert_array_equal(g1, g2)


def test_second_call_does_no_transformation_work(monkeypatch):
    x, y = randn(3), randn(3, seed=1)
    s2sad.grad(cached_fn)(x, y)
    s2sad.vjp(cached_fn, x, y)              # vjp differentiates every float argument: its own key
    n = CACHE.builds

    def fail(*a, **k):
        raise AssertionError("the pipeline ran again for a cached derivative")
    monkeypatch.setattr(build_mod, "build_reverse", fail)
    monkeypatch.setattr(build_mod, "lower_function", fail)
    monkeypatch.setattr(build_mod, "lower", fail)
    g = s2sad.grad(cached_fn)(x, y)
    np.testing.assert_allclose(g, np.cos(x) * y, rtol=1e-12)
    v, pb = s2sad.vjp(cached_fn, x, y)
    gx, gy = pb(1.0)
    np.testing.assert_allclose(gy, np.sin(x), rtol=1e-12)
    s2sad.differentiate(cached_fn).grad(x, y)
    assert CACHE.builds == n


def test_decorated_function_builds_once():
    d = s2sad.differentiate(cached_fn, wrt=1)
    x, y = randn(3), randn(3, seed=1)
    d.grad(x, y)
    n = CACHE.builds
    for _ in range(5):
        d.value_and_grad(x, y)
        d.grad(x, y)
    d.adjoint_source(x, y)
    d.explain(x, y)
    assert CACHE.builds == n


def test_each_wrt_is_its_own_derivative():
    CACHE.clear()
    x, y = randn(3), randn(3, seed=1)
    n = CACHE.builds
    gx = s2sad.grad(cached_fn, wrt=0)(x, y)
    gy = s2sad.grad(cached_fn, wrt=1)(x, y)
    gxy = s2sad.grad(cached_fn, wrt=(0, 1))(x, y)
    s2sad.grad(cached_fn, wrt="x")(x, y)          # same as wrt=0
    assert CACHE.builds == n + 3
    np.testing.assert_allclose(gx, gxy[0], rtol=1e-15)
    np.testing.assert_allclose(gy, gxy[1], rtol=1e-15)


def test_activity_signature_is_part_of_the_key():
    CACHE.clear()
    n = CACHE.builds
    g_float = s2sad.grad(cached_float)(0.3, 1.2)
    g_array = s2sad.grad(cached_float)(np.float64(0.3), np.array(1.2))
    assert CACHE.builds == n + 2
    assert g_float == pytest.approx(np.cos(1.2))
    assert float(g_array) == pytest.approx(np.cos(1.2))
    s2sad.grad(cached_float)(0.7, -0.1)
    assert CACHE.builds == n + 2


def test_clear_forces_a_rebuild():
    x, y = randn(3), randn(3, seed=1)
    s2sad.grad(cached_fn)(x, y)
    CACHE.clear()
    assert len(CACHE) == 0
    n = CACHE.builds
    s2sad.grad(cached_fn)(x, y)
    assert CACHE.builds == n + 1


def _run_threads(worker, n):
    """Run worker(0) ... worker(n - 1) in n threads at once and wait for them all."""
    threads = [threading.Thread(target=worker, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def threaded_fn(x, w):
    h = np.tanh(x * w)
    return np.sum(h * h) + np.sum(x)


def test_eight_threads_build_once_and_all_get_right_answers(monkeypatch):
    CACHE.clear()
    real_build = build_mod.build_reverse
    calls = []

    def slow_build(*a, **k):                 # widen the race window
        calls.append(1)
        time.sleep(0.05)
        return real_build(*a, **k)
    monkeypatch.setattr(build_mod, "build_reverse", slow_build)

    n = CACHE.builds
    barrier = threading.Barrier(8)
    results, errors = [None] * 8, []

    def worker(k):
        try:
            x = randn(5, seed=k)
            w = randn(5, seed=100 + k)
            barrier.wait()
            results[k] = (x, w, s2sad.grad(threaded_fn)(x, w))
        except Exception as e:                # noqa: BLE001
            errors.append(e)

    _run_threads(worker, 8)
    assert not errors, errors
    assert CACHE.builds == n + 1
    assert len(calls) == 1
    for x, w, g in results:
        h = np.tanh(x * w)
        np.testing.assert_allclose(g, 2 * h * (1 - h * h) * w + 1.0, rtol=1e-12)


def callee_for_threads(x):
    return np.sin(x) * x


def caller_for_threads(x):
    return np.sum(callee_for_threads(x) + callee_for_threads(x * 2.0))


def test_threads_with_derived_callees():
    CACHE.clear()
    n = CACHE.builds
    barrier = threading.Barrier(8)
    out, errors = [None] * 8, []

    def worker(k):
        try:
            x = randn(4, seed=k)
            barrier.wait()
            out[k] = (x, s2sad.grad(caller_for_threads)(x))
        except Exception as e:                # noqa: BLE001
            errors.append(e)

    _run_threads(worker, 8)
    assert not errors, errors
    assert CACHE.builds - n <= 2            # the caller, and the callee at most once
    for x, g in out:
        want = np.cos(x) * x + np.sin(x) + 2 * (np.cos(2 * x) * 2 * x + np.sin(2 * x))
        np.testing.assert_allclose(g, want, rtol=1e-12)


def test_rebinding_a_closure_constant_after_the_first_gradient():
    """A function, module or int a closure reads is a constant of its derivative: rebinding it in
    the enclosing function (or with nonlocal) must give the new derivative, also on a decorated
    function whose earlier derivative is memoised."""
    x = np.array([0.3, 0.7])

    def outer():
        act, n = np.sin, 3

        def f(x):
            return np.sum(act(x) * x ** n)
        df = s2sad.differentiate(f)
        before = df.grad(x)
        act, n = np.cos, 4
        return before, df.grad(x), s2sad.grad(f)(x), df.jvp((x,), (np.ones(2),))[1]
    before, after, fresh, tangent = outer()
    np.testing.assert_allclose(before, np.cos(x) * x ** 3 + np.sin(x) * 3 * x ** 2)
    expect = -np.sin(x) * x ** 4 + np.cos(x) * 4 * x ** 3
    np.testing.assert_allclose(after, expect)
    np.testing.assert_allclose(fresh, expect)
    np.testing.assert_allclose(tangent, np.sum(expect))


def test_closure_cell_that_changes_from_data_to_a_function():
    x = np.array([0.5, 1.5])

    def outer():
        scale = 2.0

        def f(x):
            return np.sum(scale(x)) if callable(scale) else np.sum(scale * x * x)
        df = s2sad.differentiate(f)
        first = df.grad(x)
        scale = np.exp
        return first, df.grad(x)
    first, second = outer()
    np.testing.assert_allclose(first, 4.0 * x)
    np.testing.assert_allclose(second, np.exp(x))


def test_inline_grad_of_many_closures_and_methods():
    """grad(f)(x) written inline shares the argument handling of earlier calls with the same
    function only: closures over other data, other functions and bound methods of other objects
    each get their own gradient."""
    x = np.array([0.2, -0.4, 1.1])

    def make(scale, act):
        return lambda v: np.sum(act(v) * scale)

    for scale, act, dact in [(2.0, np.sin, np.cos), (3.0, np.sin, np.cos), (2.0, np.tanh,
                                                                                lambda v: 1 - np.tanh(v) ** 2)]:
        for _ in range(2):
            np.testing.assert_allclose(s2sad.grad(make(scale, act))(x), scale * dact(x))

    class Model:
        def __init__(self, w):
            self.w = w

        def loss(self, v):
            return np.sum(self.w * v * v)
    for w in (1.0, 5.0):
        m = Model(w)
        np.testing.assert_allclose(s2sad.grad(m.loss)(x), 2 * w * x)
