"""Comprehensions and generator expressions, with zip/enumerate/reversed/range."""
import math

import numpy as np
import pytest

import s2sad
from lang_helpers import check_grads, rng, assert_close


# == case: dict_comprehension_output
def per_feature_grads(x, names):
    return {n: math.tanh(v) * v for n, v in zip(names, x)}


def test_dict_comprehension_output_vjp():
    x = [0.4, -1.1, 0.8]
    names = ["a", "b", "c"]
    value, pb = s2sad.vjp(per_feature_grads, x, names)
    assert set(value) == {"a", "b", "c"}
    ct = {"a": 1.0, "b": -2.0, "c": 0.5}
    gx, gn = pb(ct)
    want = [ct[n] * (math.tanh(v) + v * (1 - math.tanh(v) ** 2)) for n, v in zip(names, x)]
    assert_close(gx, want)
    assert gn is None


# == case: sum_of_squares_genexpr
def sum_sq(x):
    return sum(v * v for v in x)


def test_sum_of_squares_genexpr():
    r = rng(10)
    x = r.standard_normal(6)
    check_grads(sum_sq, (x,))
    assert_close(s2sad.grad(sum_sq)(x), 2 * x)
    xs = [float(v) for v in x]
    check_grads(sum_sq, (xs,))


# == case: list_comprehension_features
def rbf_features(x, centers, gamma):
    feats = [np.exp(-gamma * (x - c) ** 2) for c in centers]
    return np.sum(np.stack(feats) ** 2)


def test_list_comprehension_features():
    r = rng(11)
    centers = [float(c) for c in np.linspace(-1, 1, 4)]
    check_grads(rbf_features, (r.standard_normal(5), centers, 0.9), wrt=(0, 2))


# == case: nested_for_with_if_filters
def upper_triangle_energy(pos, k):
    n = len(pos)
    return sum(k / ((pos[i] - pos[j]) ** 2 + 0.1)
               for i in range(n) for j in range(n) if i < j if j - i != 2)


def test_nested_for_with_if_filters():
    r = rng(13)
    pos = [float(v) for v in r.standard_normal(5)]
    check_grads(upper_triangle_energy, (pos, 1.2), wrt=(0, 1))


# == case: zip_enumerate
def weighted_residual(preds, targets, w):
    total = 0.0
    for i, (p, t) in enumerate(zip(preds, targets)):
        total = total + w ** i * (p - t) ** 2
    return total


def zipped_genexpr(a, b):
    return sum(u * np.sin(v) for u, v in zip(a, b))


def test_zip_enumerate():
    r = rng(14)
    preds = [float(v) for v in r.standard_normal(4)]
    targets = [float(v) for v in r.standard_normal(4)]
    check_grads(weighted_residual, (preds, targets, 0.8), wrt=(0, 1, 2))
    check_grads(zipped_genexpr, (r.standard_normal(3), r.standard_normal(3)), wrt=(0, 1))


# == case: reversed_range
def discounted_return(rewards, gamma):
    g = 0.0
    out = []
    for r_t in reversed(rewards):
        g = r_t + gamma * g
        out.append(g)
    return sum(out[k] * out[k] for k in range(0, len(out), 2))


def test_reversed_range():
    rewards = [0.5, -0.2, 1.1, 0.3, 0.9]
    check_grads(discounted_return, (rewards, 0.9), wrt=(0, 1))


# == case: comprehension_over_array_rows
def row_softmax_entropy(X):
    probs = [np.exp(row) / np.sum(np.exp(row)) for row in X]
    return -sum(np.sum(p * np.log(p)) for p in probs)


def test_comprehension_over_array_rows():
    r = rng(15)
    check_grads(row_softmax_entropy, (r.standard_normal((3, 4)),))


# == case: comprehension_with_conditional_expression
def leaky_sum(xs, slope):
    return sum([v if v > 0 else slope * v for v in xs])


def test_comprehension_with_conditional_expression():
    xs = [0.7, -1.2, 0.4, -0.3]
    check_grads(leaky_sum, (xs, 0.1), wrt=(0, 1))
    g = s2sad.grad(leaky_sum, wrt=(0, 1))(xs, 0.1)
    assert_close(g[0], [1.0, 0.1, 1.0, 0.1])
    assert_close(g[1], -1.5)


# == case: nested_comprehension_matrix
def gram_trace(vectors, alpha):
    G = [[alpha * np.dot(u, v) for v in vectors] for u in vectors]
    return sum(G[i][i] for i in range(len(G))) + 0.5 * sum(sum(row) for row in G)


def test_nested_comprehension_matrix():
    r = rng(16)
    vecs = [r.standard_normal(3) for _ in range(3)]
    check_grads(gram_trace, (vecs, 0.7), wrt=(0, 1))


# == case: comprehension_closure_over_active
def moments(x, orders):
    mu = np.mean(x)
    return [np.mean((x - mu) ** k) for k in orders]


def moment_loss(x):
    m = moments(x, (2, 3, 4))
    return m[0] + 0.5 * m[1] + 0.1 * m[2]


def test_comprehension_closure_over_active():
    r = rng(17)
    check_grads(moment_loss, (r.standard_normal(8),))
    x = r.standard_normal(8)
    check_grads(lambda v: moments(v, [2, 3]), (x,))


# == case: generator_expression_into_max_min
def margin(scores, label):
    correct = scores[label]
    return max(scores[j] - correct + 1.0 for j in range(len(scores)) if j != label)


def test_generator_expression_into_max():
    scores = [0.3, 1.2, -0.4, 0.9]
    check_grads(margin, (scores, 2), wrt=0)
    assert_close(s2sad.grad(margin)(scores, 2), [0.0, 1.0, -1.0, 0.0])


# == case: dict_comprehension
def layer_norms(params):
    norms = {name: np.sqrt(np.sum(w * w)) for name, w in params.items()}
    return norms["W1"] + 2.0 * norms["W2"]


def test_dict_comprehension():
    r = rng(12)
    params = {"W1": r.standard_normal((3, 2)), "W2": r.standard_normal(4)}
    check_grads(layer_norms, (params,))
    g = s2sad.grad(layer_norms)(params)
    assert set(g) == {"W1", "W2"}
    assert_close(g["W1"], params["W1"] / np.linalg.norm(params["W1"]))


# == case: set_comprehension
def distinct_scales(x, ks):
    scales = {k % 3 for k in ks}          # an inactive set of ints
    return sum(s * x * x for s in sorted(scales))


def test_set_comprehension():
    check_grads(distinct_scales, (1.3, [1, 4, 2, 5, 8]), wrt=0)
    assert_close(s2sad.grad(distinct_scales)(1.3, [1, 4, 2, 5, 8]), 2 * 1.3 * (1 + 2))


# == case: materialised_zip
def pair_energy(ws, ms):
    pairs = list(zip(ws, ms))
    triples = tuple(zip(ws, ms, reversed(ms)))
    return sum(w * m * m for w, m in pairs) + sum(a * c for a, _, c in triples)


def test_materialised_zip():
    ws, ms = [0.3, 0.7, -0.4], [2.0, 5.0, 1.5]
    check_grads(pair_energy, (ws, ms), wrt=(0, 1))
    gw = s2sad.grad(pair_energy)(ws, ms)
    assert_close(gw, [m * m + c for m, c in zip(ms, reversed(ms))])


# == case: a name bound to a comprehension that reads the same name (the old object throughout)
def rebound_list(xs, w):
    xs = [xs[i] * w for i in range(len(xs))]
    return w + sum(xs)


def rebound_dict(p, w):
    p = {k: p.get(k, 0.0) * w for k in ("a", "b")}
    return p["a"] + p["b"]


def rebound_dict_walked(p):
    p = {k: p[k] * 2.0 for k in p}
    return np.sum(p["w"] ** 2)


def sgd_steps(params, grads):           # the usual update, in a loop: refused before
    for _ in range(2):
        params = [p - 0.1 * g * p for p, g in zip(params, grads)]
    return sum(np.sum(p ** 2) for p in params)


def read_then_rebound(p):               # a call keeps the old dict for its reverse sweep
    s = np.sum(p["w"] ** 2)
    p = {k: v * 2.0 for k, v in p.items()}
    return s * np.sum(p["w"])


def test_a_comprehension_bound_to_the_name_it_reads():
    # (its list or dict was built in the name itself, so the comprehension read the new, empty
    # one: a value and gradient silently wrong, a KeyError, or a refusal)
    w0 = np.array([1.0, 2.0])
    assert s2sad.value_and_grad(rebound_list, wrt=(0, 1))([1.0, 2.0], 3.0) == \
        (12.0, ([3.0, 3.0], 4.0))
    v, (gp, gw) = s2sad.value_and_grad(rebound_dict, wrt=(0, 1))({"a": 1.0, "b": 2.0}, 3.0)
    assert (v, gp, gw) == (9.0, {"a": 3.0, "b": 3.0}, 3.0)
    assert s2sad.jvp(rebound_list, ([1.0, 2.0], 3.0), ([0.0, 0.0], 1.0)) == (12.0, 4.0)
    np.testing.assert_allclose(s2sad.grad(rebound_dict_walked)({"w": w0})["w"], 8.0 * w0)
    params, grads = [np.array([1.0, 2.0]), np.array([0.5])], [np.ones(2), np.ones(1)]
    check_grads(sgd_steps, (params, grads), wrt=(0, 1))
    check_grads(read_then_rebound, ({"w": w0},))


def argument_name_rebound(a, b):        # x is the argument a, then a new list
    x = a
    x = [x[i] * b for i in range(3)]
    return sum(x)


def set_after_list(a):                  # forward mode summed a set's tangent without end
    s = [a]
    s = {v for v in (1.5, 2.5)}
    return np.sum(a) * sum(s)


def test_rebinding_an_argument_s_name_and_a_set_after_a_list():
    x = np.array([0.5, -1.0, 2.0])
    check_grads(argument_name_rebound, (x, 1.5), wrt=(0, 1))
    check_grads(set_after_list, (x,))
    assert s2sad.jvp(set_after_list, (x,), (np.ones(3),))[1] == 12.0


def closure_reads_the_rebound_name(a, b):
    xs = [a, b]

    def g(x):
        return x * len(xs)              # the old xs, in Python, while the new one is built

    xs = [g(x) for x in xs]
    return np.sum(xs[0] * xs[1])


def closure_reads_the_rebound_dict(a, b):
    p = {"a": a, "b": b}

    def g(k):
        return p[k] * 2.0

    p = {k: g(k) for k in p}
    return np.sum(p["a"] * p["b"])


def test_a_closure_called_in_the_comprehension_reads_the_old_object():
    a, b = np.array([0.1, 0.2, 0.3]), np.array([1.0, -2.0, 0.5])
    for f in (closure_reads_the_rebound_name, closure_reads_the_rebound_dict):
        v, g = s2sad.value_and_grad(f)(a, b)
        assert v == pytest.approx(f(a, b), rel=1e-14)
        np.testing.assert_allclose(g, 4 * b, rtol=1e-14)
        assert s2sad.jvp(f, (a, b), (np.ones(3), None))[1] == pytest.approx(np.sum(4 * b))
