"""jit=True takes tuples of arrays and numbers as arguments (nested ones too: a model's
parameters, ``((W1, b1), (W2, b2))``), as numba does, and their gradients are tuples of the same
shape; and dicts of them under string keys that the function reads only as ``p["W"]`` (passed to
numba as the tuple of their values, codegen/jit.containers_as_tuples; the gradient is a dict
again), and lists it only reads (``ws[i]``, ``len``, ``for w in ws``, ``zip``), passed as tuples
(the gradient is a list again).
The derivative is typed on the items (runtime.values.type_of), and the compiled helpers
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


def dict_model(p, x):
    h = np.tanh(p["W"] @ x + p["b"])
    (V, c) = p["out"]
    return np.sum((V @ h + c) ** 2) * p["scale"]


def dict_walked(p, x):                  # keys known only at run time
    s = 0.0
    for k in p:
        s = s + np.sum(np.sin(p[k] * x))
    return s


def dict_items_to_a_helper(p, x):        # compiles: the dict's items are passed on
    return layer((p["W"], p["b"]), x) + np.sum(p["W"])


def _dict_layer(p, x):
    return np.sum(np.tanh(p["W"] @ x + p["b"]) ** 2)


def dict_to_a_helper(p, x):              # the dict itself is passed on
    return _dict_layer(p, x) * 2.0


PARAMS = {"W": W, "b": B, "out": (W * 0.3, B * 2.0), "scale": 0.5}


def test_a_dict_of_parameters_compiles_and_its_gradient_is_a_dict():
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        vj, gj = s2sad.value_and_grad(dict_model, wrt=(0, 1), jit=True)(PARAMS, X)
    vp, gp = s2sad.value_and_grad(dict_model, wrt=(0, 1))(PARAMS, X)
    assert vj == pytest.approx(vp, rel=1e-12)
    assert type(gj[0]) is dict and list(gj[0]) == list(PARAMS)
    for k in PARAMS:
        same_tree(gj[0][k], gp[0][k])
    same_tree(gj[1], gp[1])
    check_grads(dict_model, (PARAMS, X), wrt=(0, 1))
    # the same keys in another order: another specialisation, the same numbers
    other = {k: PARAMS[k] for k in reversed(list(PARAMS))}
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        v2, g2 = s2sad.value_and_grad(dict_model, wrt=(0, 1), jit=True)(other, X)
    assert v2 == pytest.approx(vp, rel=1e-12) and list(g2[0]) == list(other)
    for k in PARAMS:
        same_tree(g2[0][k], gp[0][k])


def test_the_items_of_a_dict_passed_on_compile():
    p = {"W": W, "b": B}
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        vj, gj = s2sad.value_and_grad(dict_items_to_a_helper, wrt=(0, 1), jit=True)(p, X)
    vp, gp = s2sad.value_and_grad(dict_items_to_a_helper, wrt=(0, 1))(p, X)
    assert vj == pytest.approx(vp, rel=1e-12)
    for k in p:
        same_tree(gj[0][k], gp[0][k])


def test_a_dict_read_otherwise_runs_as_python_with_a_warning():
    for f in (dict_walked, dict_to_a_helper):
        with pytest.warns(JitFallbackWarning, match="argument 0 is dict"):
            vj, gj = s2sad.value_and_grad(f, wrt=(0, 1), jit=True)({"W": W, "b": B}, X)
        vp, gp = s2sad.value_and_grad(f, wrt=(0, 1))({"W": W, "b": B}, X)
        assert vj == pytest.approx(vp, rel=1e-12)
        for k in ("W", "b"):
            same_tree(gj[0][k], gp[0][k])


def test_a_tangent_item_of_another_shape_is_refused_on_a_later_call_too():
    # the second call takes the per-signature shortcut (api._jvp_again), which checks each
    # item's shape as the first call's full path does: a (1,) tangent for a (4,) item would be
    # broadcast silently
    from s2sad.errors import ArgumentError
    good = ((np.ones_like(W), np.ones_like(B)), np.zeros_like(X))
    bad = ((np.ones_like(W), np.ones(1)), np.zeros_like(X))
    for jit in (True, False):
        s2sad.jvp(layer, ((W, B), X), good, jit=jit)
        with pytest.raises(ArgumentError, match=r"argument 0\[1\] has shape \(1,\)"):
            s2sad.jvp(layer, ((W, B), X), bad, jit=jit)


def list_layers(ws, x):
    h = x
    for W in ws:
        h = np.tanh(W @ h)
    return np.sum(h ** 2)


def list_indexed(ws, x):
    h = x
    for i in range(len(ws)):
        h = np.sin(ws[i] @ h) + 0.1 * h
    return h @ h + np.sum(ws[-1])


def list_zipped(ws, bs, x):
    h = x
    for W, b in zip(ws, bs):
        h = np.tanh(W @ h + b)
    return np.sum(h ** 2)


def list_extended(ws, x):               # builds another list from it: runs as Python
    vs = ws + [ws[0] * 2.0]
    return np.sum(vs[-1] @ x)


@pytest.mark.parametrize("f, args", [
    (list_layers, ([W, W * 0.5, W.T.copy()], X)),
    (list_indexed, ([W, W * 0.5], X)),
    (list_zipped, ([W, W.T.copy()], [B, B * 2.0], X)),
], ids=["layers", "indexed", "zipped"])
def test_a_list_it_only_reads_compiles_and_its_gradient_is_a_list(f, args):
    wrt = tuple(range(len(args)))
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        vj, gj = s2sad.value_and_grad(f, wrt=wrt, jit=True)(*args)
    vp, gp = s2sad.value_and_grad(f, wrt=wrt)(*args)
    assert vj == pytest.approx(vp, rel=1e-12)
    for a, u, v in zip(args, gj, gp):
        assert type(u) is type(v) is type(a)
        for uu, vv in zip(u if isinstance(u, list) else [u], v if isinstance(v, list) else [v]):
            np.testing.assert_allclose(uu, vv, rtol=1e-12, atol=1e-12)
    check_grads(f, args, wrt=wrt)


def test_a_list_used_otherwise_runs_as_python_with_a_warning():
    with pytest.warns(JitFallbackWarning, match="argument 0 is list"):
        vj, gj = s2sad.value_and_grad(list_extended, wrt=(0, 1), jit=True)([W, W * 0.5], X)
    vp, gp = s2sad.value_and_grad(list_extended, wrt=(0, 1))([W, W * 0.5], X)
    assert vj == pytest.approx(vp, rel=1e-12)
    for u, v in zip(gj[0], gp[0]):
        np.testing.assert_allclose(u, v, rtol=1e-12)


def test_later_calls_with_new_values_take_the_shortcut_and_stay_right():
    # api._vg keys its per-signature shortcut on a dict's keys (in order) and a list's length
    # and item types; each call below is compared with Python mode's numbers
    gd = s2sad.value_and_grad(dict_model, wrt=(0, 1), jit=True)
    gl = s2sad.value_and_grad(list_layers, wrt=(0, 1), jit=True)
    r = np.random.default_rng(5)
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        for k in range(4):
            p = {"W": r.normal(size=(4, 4)) * 0.5, "b": r.normal(size=4),
                 "out": (r.normal(size=(4, 4)), r.normal(size=4)), "scale": float(k + 1)}
            if k == 2:
                p = {key: p[key] for key in ("scale", "out", "b", "W")}     # another order
            ws = [r.normal(size=(4, 4)) * 0.5 for _ in range(2 + (k == 1))]
            x = r.normal(size=4)
            for g, f, a in ((gd, dict_model, p), (gl, list_layers, ws)):
                vj, gj = g(a, x)
                vp, gp = s2sad.value_and_grad(f, wrt=(0, 1))(a, x)
                assert vj == pytest.approx(vp, rel=1e-12)
                assert type(gj[0]) is type(a) and list(gj[0]) == list(gp[0]) if type(a) is dict \
                    else len(gj[0]) == len(a)
                for u, v in zip(leaves(tuple(gj[0].values()) if type(a) is dict else
                                       tuple(gj[0])),
                                leaves(tuple(gp[0].values()) if type(a) is dict else
                                       tuple(gp[0]))):
                    np.testing.assert_allclose(u, v, rtol=1e-12, atol=1e-12)
                np.testing.assert_allclose(gj[1], gp[1], rtol=1e-12, atol=1e-12)


def _like(a, r):
    """A random tangent of the structure of ``a`` (dicts and lists too)."""
    if type(a) is dict:
        return {k: _like(v, r) for k, v in a.items()}
    if type(a) in (tuple, list):
        return type(a)(_like(v, r) for v in a)
    return r.normal(size=np.shape(a)) if np.ndim(a) else float(r.normal())


@pytest.mark.parametrize("f, args", [
    (dict_model, (PARAMS, X)),
    (dict_items_to_a_helper, ({"W": W, "b": B}, X)),
    (list_layers, ([W, W * 0.5, W.T.copy()], X)),
    (list_zipped, ([W, W.T.copy()], [B, B * 2.0], X)),
], ids=["dict", "dict-items-passed-on", "list", "lists-zipped"])
def test_forward_mode_compiles_dicts_and_lists_it_only_reads(f, args):
    # their tangents are dicts (the same keys) and lists too, passed to numba as tuples; later
    # calls with new values (api._jvp_again) and tangents with one argument left out agree too
    r = np.random.default_rng(2)
    for k in range(3):
        tangents = _like(args, r)
        if k == 2:
            tangents = tangents[:-1] + (None,)
        with warnings.catch_warnings():
            warnings.simplefilter("error", JitFallbackWarning)
            vj, tj = s2sad.jvp(f, args, tangents, jit=True)
        vp, tp = s2sad.jvp(f, args, tangents)
        assert vj == pytest.approx(vp, rel=1e-12) and tj == pytest.approx(tp, rel=1e-10)
        args = _like(args, r)
    # and against the reverse mode's gradient: <grad, tangent>
    tangents = _like(args, r)
    _, g = s2sad.value_and_grad(f, wrt=tuple(range(len(args))))(*args)
    dot = sum(float(np.sum(u * v)) for u, v in zip(leaves(_flat_tree(g)),
                                                    leaves(_flat_tree(tangents))))
    assert s2sad.jvp(f, args, tangents, jit=True)[1] == pytest.approx(dot, rel=1e-9)


def _flat_tree(t):
    if type(t) is dict:
        return tuple(_flat_tree(v) for v in t.values())
    if type(t) in (tuple, list):
        return tuple(_flat_tree(v) for v in t)
    return t


def test_forward_mode_refuses_a_dict_tangent_item_of_another_shape_on_a_later_call_too():
    from s2sad.errors import ArgumentError
    p = {"W": W, "b": B}
    good = ({"W": np.ones_like(W), "b": np.ones_like(B)}, None)
    bad = ({"W": np.ones_like(W), "b": np.ones(1)}, None)
    for jit in (True, False):
        s2sad.jvp(dict_items_to_a_helper, (p, X), good, jit=jit)
        with pytest.raises(ArgumentError, match=r"has shape \(1,\)"):
            s2sad.jvp(dict_items_to_a_helper, (p, X), bad, jit=jit)


def dict_display(W, b, x):
    p = {"W": W, "b": b, "scale": 0.5}
    h = np.tanh(p["W"] @ x + p["b"])
    return np.sum(h ** 2) * p["scale"]


def dict_display_in_a_loop(W, x):
    s = 0.0
    for i in range(3):
        layer_ = {"w": W * (i + 1.0), "shift": float(i)}
        s = s + np.sum(np.sin(layer_["w"] @ x) + layer_["shift"])
    return s


def dict_display_walked(W, b, x):        # a display read otherwise: it stays a dict
    p = {"W": W, "b": b}
    s = 0.0
    for k in p:
        s = s + np.sum(p[k])
    return s + np.sum(p["W"] @ x)


@pytest.mark.parametrize("f, args", [
    (dict_display, (W, B, X)),
    (dict_display_in_a_loop, (W, X)),
], ids=["display", "display-in-a-loop"])
def test_a_dict_display_it_only_reads_compiles(f, args):
    # (codegen/jit.dict_displays_as_tuples: a tuple of its values, read as p[0])
    wrt = tuple(range(len(args)))
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        vj, gj = s2sad.value_and_grad(f, wrt=wrt, jit=True)(*args)
        tangents = tangent_of(args, np.random.default_rng(3))
        _, tj = s2sad.jvp(f, args, tangents, jit=True)
    vp, gp = s2sad.value_and_grad(f, wrt=wrt)(*args)
    assert vj == pytest.approx(vp, rel=1e-12)
    for u, v in zip(gj, gp):
        np.testing.assert_allclose(u, v, rtol=1e-12, atol=1e-12)
    assert tj == pytest.approx(s2sad.jvp(f, args, tangents)[1], rel=1e-10)
    assert "build_dict" not in s2sad.differentiate(f, wrt=wrt).adjoint_source(*args, jit=True)
    check_grads(f, args, wrt=wrt)


def test_a_dict_display_read_otherwise_runs_as_python_with_a_warning():
    with pytest.warns(JitFallbackWarning, match="build_dict"):
        vj, gj = s2sad.value_and_grad(dict_display_walked, wrt=(0, 1), jit=True)(W, B, X)
    vp, gp = s2sad.value_and_grad(dict_display_walked, wrt=(0, 1))(W, B, X)
    assert vj == pytest.approx(vp, rel=1e-12)
    for u, v in zip(gj, gp):
        np.testing.assert_allclose(u, v, rtol=1e-12)
