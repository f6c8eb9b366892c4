"""The fast paths of the run-time and rule helpers (issue 14: host time of plain derivatives, the
untyped ones CuPy gets): each gives what the general path gives.

- the zero guard of every ``_adj`` helper linear in its first parameter is generated with the
  helper's own parameters and defaults (rules/adjoints._exact_guard);
- ``_rt.unbroadcast``, ``_adj.like`` and ``_rt.cj`` decide arrays of one exact type once;
- the permute adjoints remember their axes; the concat adjoint skips its generic checks for arrays
  of one type.
"""
import inspect

import numpy as np
import pytest

import s2sad
from s2sad import runtime as rt
from s2sad.rules import adjoints as adj
from s2sad.rules import registry


def _helpers():
    registry._ensure_tables()
    out = []
    for name in sorted(vars(adj)):
        fn = getattr(adj, name)
        if inspect.isfunction(fn) and hasattr(fn, "__wrapped__") and \
                fn.__code__.co_filename.startswith("<s2sad zero guard"):
            out.append((name, fn))
    return out


def test_exact_guards_have_their_helpers_signatures():
    helpers = _helpers()
    assert len(helpers) > 100            # the tables' helpers (matmul, sum, reshape_back...)
    names = {n for n, _ in helpers}
    assert {"matmul", "sum", "mean", "reshape_back", "concatenate", "extremum"} <= names
    for name, fn in helpers:
        own = inspect.signature(fn, follow_wrapped=False)
        assert own == inspect.signature(fn.__wrapped__), name
        assert fn.__name__ == fn.__wrapped__.__name__


def test_exact_guard_answers_zero_and_passes_defaults_and_keywords():
    calls = []

    def helper(g, a, axis=None, *, keepdims=False, scale=2.0):
        calls.append((g, a, axis, keepdims, scale))
        return g * scale

    guarded = adj._zero_passes_through(helper)
    assert guarded.__code__.co_filename.startswith("<s2sad zero guard")
    assert guarded(0.0, 1) == 0.0 and guarded(None, 1) == 0.0 and calls == []
    assert guarded(3.0, "a") == 6.0
    assert guarded(1.5, "a", 1, keepdims=True, scale=4.0) == 6.0
    assert calls == [(3.0, "a", None, False, 2.0), (1.5, "a", 1, True, 4.0)]
    with pytest.raises(TypeError, match="helper"):
        guarded(1.0)
    g = np.ones(3)
    assert guarded(g, 0) is not g and np.array_equal(guarded(g, 0), 2 * g)
    # *args helpers keep the generic guard
    star = adj._zero_passes_through(lambda g, *xs: (g, xs))
    assert star(0.0, 1, 2) == 0.0 and star(1.0, 1, 2) == (1.0, (1, 2))


@pytest.mark.parametrize("dt", [np.float64, np.float32, np.complex128])
def test_unbroadcast_of_arrays_of_one_type(dt):
    rng = np.random.default_rng(0)
    g = (rng.standard_normal((4, 3, 5)) + (1j * rng.standard_normal((4, 3, 5))
                                           if dt == np.complex128 else 0)).astype(dt)
    same = np.zeros((4, 3, 5), dt)
    assert rt.unbroadcast(g, same) is g                  # nothing to sum: g itself
    for shape, want in [((5,), g.sum(axis=(0, 1))), ((3, 1), g.sum(axis=(0, 2))[:, None]),
                        ((4, 1, 5), g.sum(axis=1, keepdims=True)), ((1, 1, 1), g.sum(keepdims=True))]:
        got = rt.unbroadcast(g, np.zeros(shape, dt))
        assert got.shape == shape and got.dtype == dt
        np.testing.assert_allclose(got, want, rtol=1e-5)
    # other dtypes and kinds keep the general path: a float64 adjoint for a float32 input is cast,
    # an integer input gets zeros
    g64 = np.ones((2, 3))
    got = rt.unbroadcast(g64, np.zeros(3, np.float32))
    assert got.dtype == np.float32 and np.array_equal(got, [2, 2, 2])
    assert np.array_equal(rt.unbroadcast(g64, np.zeros((2, 3), int)), np.zeros((2, 3)))


def test_like_and_cj_of_arrays():
    g = np.arange(6.0).reshape(2, 3)
    assert adj.like(g, np.zeros((2, 3))) is g
    r = adj.like(g, np.zeros((2, 3), np.float32))
    assert r.dtype == np.float32 and np.array_equal(r, g)
    assert adj.like(g, np.zeros((2, 3), int)) is None
    assert np.array_equal(adj.like(g, np.zeros(6)), np.arange(6.0))
    z = np.array([1 + 2j, 3 - 1j])
    assert np.array_equal(rt.cj(z), np.conj(z)) and rt.cj(g) is g


def test_permute_adjoints_with_remembered_axes():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 4, 5))

    def f(x):
        a = np.moveaxis(x, 1, 2)                    # (2, 4, 3, 5)
        b = np.swapaxes(a, -1, -3)                  # (2, 5, 3, 4)
        c = np.moveaxis(b, [0, 1], [np.int64(2), 3])
        return np.sum(c * np.arange(c.size).reshape(c.shape))

    for _ in range(2):                              # the second call reads the remembered axes
        g = s2sad.grad(f)(x)
        c = np.moveaxis(np.swapaxes(np.moveaxis(x, 1, 2), -1, -3), [0, 1], [2, 3])
        want = np.moveaxis(np.swapaxes(np.moveaxis(
            np.arange(c.size, dtype=float).reshape(c.shape), [2, 3], [0, 1]), -1, -3), 2, 1)
        assert np.array_equal(g, want)


def test_concatenate_adjoint_of_one_array_type():
    x = np.arange(6.0).reshape(2, 3)
    y = np.arange(4.0).reshape(2, 2)
    g = np.arange(10.0).reshape(2, 5)
    gx, gy = adj.concatenate(g, [x, y], -1)
    assert np.array_equal(gx, g[:, :3]) and np.array_equal(gy, g[:, 3:])
    gx, gi = adj.concatenate(g, [x, np.zeros((2, 2), int)], 1)
    assert np.array_equal(gx, g[:, :3]) and gi is None
