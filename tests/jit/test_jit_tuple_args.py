"""jit=True takes tuples of arrays and numbers as arguments (nested ones too: a model's
parameters, ``((W1, b1), (W2, b2))``), as numba does, and their gradients are tuples of the same
shape.  The derivative is typed on the items (runtime.values.type_of), and the compiled helpers
(runtime/jit.py) make a tuple's adjoint item by item: unpacking, ``ws[i]`` with an index known only
at run time and ``for w in ws`` (a tuple of one item type).  Each case is compared with Python
mode and central differences, reverse mode and forward mode."""
import math
import warnings

import numpy as np
import pytest

import s2sad
from s2sad.errors import JitFallbackWarning
from s2sad.testing import check_grads

pytest.importorskip("numba")


def layer(p, x):
    W, b = p
    return np.sum(np.tanh(W @ x + b) ** 2)


def two_layers(params, x):
    (W1, b1), (W2, b2) = params
    h = np.tanh(W1 @ x + b1)
    return np.sum((W2 @ h + b2) ** 2)


def each(ws, x):                        # for over a tuple of one item type
    h = x
    for W in ws:
        h = np.tanh(W @ h)
    return np.sum(h ** 2)


def indexed(ws, x):                     # ws[i], i known only at run time
    h = x
    for i in range(len(ws)):
        h = np.sin(ws[i] @ h) + 0.1 * h
    return h @ h + np.sum(ws[-1])


def numbers(p, x):
    a, b = p
    return np.sum(a * x ** 2 + b * x) + a * b


def with_count(p, x):                   # an int item: no derivative
    scale, W, n = p
    s = 0.0
    for i in range(n):
        s += scale * np.sum(np.cos(W @ x) * (i + 1))
    return s


def scalars_loop(cs, x):
    s = 0.0
    for c in cs:
        s = s * c + math.sin(np.sum(x * c))
    return s


def unused_item(p, x):
    W, b = p
    return np.sum(np.sin(W @ x))


def calls_layer(p, x):                  # a callee that takes the tuple
    return layer(p, x) * 2.0 + p[1] @ x


rng = np.random.default_rng(7)
X = rng.standard_normal(4)
W = rng.standard_normal((4, 4)) * 0.5
B = rng.standard_normal(4)

CASES = [
    (layer, ((W, B), X)),
    (two_layers, (((W, B), (W * 0.3, B * 2)), X)),
    (each, ((W, W * 0.5, W.T.copy()), X)),
    (indexed, ((W, W * 0.5), X)),
    (numbers, ((0.7, 1.3), X)),
    (with_count, ((0.7, W, 3), X)),
    (scalars_loop, ((0.5, 1.5, 2.0), X)),
    (unused_item, ((W, B), X)),
    (calls_layer, ((W, B), X)),
]
IDS = [f.__name__ for f, _ in CASES]


def leaves(t):
    if isinstance(t, tuple):
        return [v for e in t for v in leaves(e)]
    return [t]


def same_tree(a, b):
    assert isinstance(a, tuple) == isinstance(b, tuple)
    if isinstance(b, tuple):
        assert len(a) == len(b)
        for u, v in zip(a, b):
            same_tree(u, v)
    elif b is None:
        assert a is None
    else:
        assert np.shape(a) == np.shape(b)
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("f, args", CASES, ids=IDS)
def test_the_gradient_compiles_and_agrees(f, args):
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        vj, gj = s2sad.value_and_grad(f, wrt=(0, 1), jit=True)(*args)
    vp, gp = s2sad.value_and_grad(f, wrt=(0, 1))(*args)
    assert vj == pytest.approx(vp, rel=1e-12)
    same_tree(gj, gp)
    check_grads(f, args, wrt=(0, 1))
    # each gradient array is the user's: writable, and no two share memory
    arrays = [v for v in leaves(gj) if isinstance(v, np.ndarray)]
    assert all(v.flags.writeable for v in arrays)
    assert not any(np.shares_memory(u, v) for i, u in enumerate(arrays) for v in arrays[i + 1:])


def test_the_gradient_of_a_tuple_has_its_structure():
    g = s2sad.grad(two_layers, jit=True)(((W, B), (W * 0.3, B * 2)), X)
    assert isinstance(g, tuple) and len(g) == 2 and all(len(p) == 2 for p in g)
    assert [np.shape(v) for v in leaves(g)] == [(4, 4), (4,), (4, 4), (4,)]


def tangent_of(t, r):
    if isinstance(t, tuple):
        return tuple(tangent_of(e, r) for e in t)
    return r.normal(size=np.shape(t)) if np.ndim(t) else float(r.normal())


@pytest.mark.parametrize("f, args", [c for c in CASES if c[0] is not with_count],
                         ids=[i for i in IDS if i != "with_count"])
def test_the_tangent_compiles_and_agrees(f, args):
    tangents = tangent_of(args, np.random.default_rng(1))
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        vj, tj = s2sad.jvp(f, args, tangents, jit=True)
    vp, tp = s2sad.jvp(f, args, tangents)
    assert vj == pytest.approx(vp, rel=1e-12) and tj == pytest.approx(tp, rel=1e-10)


def test_a_tuple_holding_what_numba_does_not_take_runs_as_python_with_a_warning():
    def scaled(p, x):
        name, w = p
        return np.sum(w * x) if name == "dot" else 0.0
    with pytest.warns(JitFallbackWarning, match="argument 0 is a tuple whose item 0 is str"):
        v, g = s2sad.value_and_grad(scaled, jit=True)(("dot", B), X)
    assert v == pytest.approx(float(B @ X))
    np.testing.assert_allclose(g[1], X)
