"""Calls of a gradient with arguments of the types of an earlier call reuse that call's
derivative (api: _vg's and _Spec.derivative's memos): the same checks and numbers as a first
call, and a new derivative whenever the full path would build one."""
import numpy as np
import pytest

import s2sad
from s2sad.cache import CACHE
from s2sad.errors import WrtError

SCALE = 2.0


def scaled(x):
    return np.sum(np.sin(x)) * SCALE


def test_types_changing_between_calls_of_one_gradient():
    vg = s2sad.value_and_grad(scaled)
    for x in (0.3, np.array([0.1, 0.2]), np.array([0.4, 0.5], dtype=np.float32), 0.7,
              np.array([[0.1, 0.2], [0.3, 0.4]]), np.array([0.1, 0.2])):
        for _ in range(2):
            v, g = vg(x)
            np.testing.assert_allclose(v, np.sum(np.sin(x)) * 2.0, rtol=1e-6)
            np.testing.assert_allclose(g, np.cos(x) * 2.0, rtol=1e-6)
            assert type(g) is type(np.cos(x) * 2.0) or isinstance(x, float)
    with pytest.raises(WrtError, match="carries no derivative"):
        vg(np.array([1, 2]))                            # an int array after float ones
    with pytest.raises(WrtError, match="carries no derivative"):
        s2sad.differentiate(scaled).grad(3)


def test_a_global_rebound_between_calls_of_one_gradient(monkeypatch):
    g = s2sad.grad(scaled)
    df = s2sad.differentiate(scaled)
    x = np.array([0.3, 0.6])
    for _ in range(2):
        np.testing.assert_allclose(g(x), np.cos(x) * 2.0)
        np.testing.assert_allclose(df.grad(x), np.cos(x) * 2.0)
    monkeypatch.setitem(globals(), "SCALE", 5.0)
    np.testing.assert_allclose(g(x), np.cos(x) * 5.0)
    np.testing.assert_allclose(df.grad(x), np.cos(x) * 5.0)


def cubed(x):
    return np.sum(x ** 3)


def test_a_cleared_cache_builds_again():
    g = s2sad.grad(cubed)
    x = np.array([0.5, 1.5])
    g(x)
    n = CACHE.builds
    np.testing.assert_allclose(g(x), 3 * x ** 2)
    assert CACHE.builds == n                            # the memo: nothing built
    CACHE.clear()
    np.testing.assert_allclose(g(x), 3 * x ** 2)
    assert CACHE.builds == n + 1                        # the cleared derivative is not reused


def test_a_closure_cell_that_changes_type_between_calls():
    def outer():
        scale = 2.0

        def f(x):
            return np.sum(scale * x * x)
        g = s2sad.grad(f)
        x = np.array([0.5, 1.5])
        first = [g(x), g(x)]
        scale = np.array([1.0, 3.0])
        return first, g(x)
    first, after = outer()
    x = np.array([0.5, 1.5])
    for a in first:
        np.testing.assert_allclose(a, 4.0 * x)
    np.testing.assert_allclose(after, 2 * np.array([1.0, 3.0]) * x)


def ignores_x(x, y):
    return np.sum(y * y)


def test_a_gradient_no_path_reaches_is_zeros_like_its_argument():
    g = s2sad.grad(ignores_x)
    x = np.ones((2, 3), dtype=np.float32)
    for _ in range(2):
        out = g(x, np.array([1.0]))
        assert out.shape == (2, 3) and out.dtype == np.float32 and not out.any()
    assert s2sad.grad(ignores_x, wrt=(0, 1))(x, np.array([2.0]))[1] == pytest.approx([4.0])
