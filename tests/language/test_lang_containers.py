"""Containers: tuple/list/dict inputs, intermediates, outputs; mutation; unpacking; *args/**kwargs."""
import collections

import numpy as np

import s2sad
from lang_helpers import check_grads, rng, assert_close


# == case: tuple_argument_gradient_structure
def affine_loss(params, x):
    W, b = params
    return np.sum(np.tanh(W @ x + b))


def test_tuple_argument_gradient_mirrors_structure():
    r = rng(20)
    params = (r.standard_normal((3, 4)), r.standard_normal(3))
    x = r.standard_normal(4)
    check_grads(affine_loss, (params, x), wrt=(0, 1))
    g = s2sad.grad(affine_loss)(params, x)
    assert isinstance(g, tuple) and len(g) == 2
    assert g[0].shape == (3, 4) and g[1].shape == (3,)
    s = 1 - np.tanh(params[0] @ x + params[1]) ** 2
    assert_close(g[1], s)
    assert_close(g[0], np.outer(s, x))


# == case: dict_argument_config
def gaussian_nll(params, x):
    mu, log_sigma = params["mu"], params["log_sigma"]
    z = (x - mu) / np.exp(log_sigma)
    return np.sum(0.5 * z * z + log_sigma)


def test_dict_argument_gradient_is_dict():
    r = rng(22)
    params = {"mu": 0.3, "log_sigma": -0.2, "name": "gauss"}
    x = r.standard_normal(6)
    check_grads(gaussian_nll, (params, x), wrt=(0, 1))
    g = s2sad.grad(gaussian_nll)(params, x)
    assert isinstance(g, dict) and set(g) >= {"mu", "log_sigma"}
    assert g.get("name") is None or g.get("name") == 0
    s = np.exp(0.2)     # 1 / sigma
    assert_close(g["mu"], -np.sum((x - 0.3) * s * s))


# == case: nested_pytree_argument
def two_layer(params, x):
    h = np.tanh(params["layers"][0]["W"] @ x + params["layers"][0]["b"])
    y = params["layers"][1]["W"] @ h
    return np.sum(y ** 2) + params["reg"] * np.sum(params["layers"][0]["W"] ** 2)


def test_nested_pytree_argument():
    r = rng(23)
    params = {"layers": [{"W": r.standard_normal((4, 3)), "b": r.standard_normal(4)},
                         {"W": r.standard_normal((2, 4))}],
              "reg": 0.01}
    check_grads(two_layer, (params, r.standard_normal(3)), wrt=0)
    g = s2sad.grad(two_layer)(params, r.standard_normal(3))
    assert isinstance(g["layers"], list) and g["layers"][1]["W"].shape == (2, 4)


# == case: tuple_output_vjp
def polar(x, y):
    r = np.sqrt(x * x + y * y)
    return r, np.arctan2(y, x)


def test_tuple_output_vjp():
    value, pb = s2sad.vjp(polar, 1.2, -0.7)
    assert isinstance(value, tuple) and len(value) == 2
    gx, gy = pb((1.0, 0.0))
    r = np.hypot(1.2, -0.7)
    assert_close([gx, gy], [1.2 / r, -0.7 / r])
    check_grads(polar, (1.2, -0.7))


# == case: dict_output_vjp
def stats(x):
    m = np.mean(x)
    return {"mean": m, "var": np.mean((x - m) ** 2), "n": len(x)}


def test_dict_output_vjp():
    r = rng(24)
    x = r.standard_normal(5)
    value, pb = s2sad.vjp(stats, x)
    assert value["n"] == 5
    (gx,) = pb({"mean": 0.0, "var": 1.0, "n": None})
    assert_close(gx, 2 * (x - x.mean()) / 5)
    check_grads(stats, (x,))


# == case: swap_by_tuple_assignment
def rotate_pairs(x, y, n):
    for _ in range(n):
        x, y = 0.8 * y - 0.1 * x, x + 0.3 * y
    return x * y


def test_swap_by_tuple_assignment():
    check_grads(rotate_pairs, (0.7, -1.1, 5), wrt=(0, 1))


# == case: keyword_only_arguments
def elastic(x, *, alpha, l1_ratio=0.5):
    return alpha * (l1_ratio * np.sum(np.abs(x)) + (1 - l1_ratio) * np.sum(x * x))


def elastic_user(x, alpha):
    return elastic(x, alpha=alpha) + elastic(2.0 * x, l1_ratio=0.2, alpha=1.0)


def test_keyword_only_arguments():
    r = rng(27)
    x = r.standard_normal(4) + 0.05
    check_grads(elastic_user, (x, 0.8), wrt=(0, 1))
    g = s2sad.grad(elastic, wrt="alpha")(x, alpha=0.8)
    assert_close(g, 0.5 * np.sum(np.abs(x)) + 0.5 * np.sum(x * x))


# == case: container_passed_through_helpers
def unpack_state(state):
    return state["pos"], state["vel"]


def step_state(state, dt):
    pos, vel = unpack_state(state)
    return {"pos": pos + dt * vel, "vel": vel - dt * np.sin(pos)}


def pendulum_energy(state, dt, n):
    for _ in range(n):
        state = step_state(state, dt)
    pos, vel = unpack_state(state)
    return 0.5 * vel ** 2 - np.cos(pos)


def test_container_passed_through_helpers():
    state = {"pos": 0.6, "vel": -0.2}
    check_grads(pendulum_energy, (state, 0.05, 10), wrt=(0, 1))


# == case: tuple_of_arrays_concatenate
def stacked_norm(parts):
    v = np.concatenate(parts)
    return np.sqrt(np.sum(v * v))


def test_tuple_of_arrays_concatenate():
    r = rng(28)
    parts = (r.standard_normal(2), r.standard_normal(3), r.standard_normal(1))
    check_grads(stacked_norm, (parts,))
    g = s2sad.grad(stacked_norm)(parts)
    assert isinstance(g, tuple) and [p.shape for p in g] == [(2,), (3,), (1,)]


# == case: tuple_and_starred_unpacking
def head_tail(values):
    first, *middle, last = values
    a, (b, c) = first, (last, middle[0])
    return a * b + c * sum(middle)


def test_tuple_and_starred_unpacking():
    vals = [0.3, 1.2, -0.5, 0.9, 2.0]
    check_grads(head_tail, (vals,))
    g = s2sad.grad(head_tail)(vals)
    c, mid = 1.2, 1.2 - 0.5 + 0.9
    assert_close(g, [2.0, mid + c, c, c, 0.3])


# == case: list_append_extend_pop_insert
def trajectory_cost(x0, v, steps):
    xs = [x0]
    for _ in range(steps):
        xs.append(xs[-1] + 0.1 * v * xs[-1])
    xs.extend([2.0 * xs[-1], xs[0] * v])
    last = xs.pop()
    xs.insert(0, last * last)
    return sum(x * x for x in xs)


def test_list_append_extend_pop_insert():
    check_grads(trajectory_cost, (0.9, -0.4, 4), wrt=(0, 1))


# == case: list_item_assignment
def smooth(xs, alpha):
    ys = list(xs)
    for i in range(1, len(ys)):
        ys[i] = alpha * ys[i - 1] + (1 - alpha) * ys[i]
    return sum(y * y for y in ys)


def test_list_item_assignment():
    xs = [0.4, -0.2, 1.3, 0.8, -0.6]
    check_grads(smooth, (xs, 0.7), wrt=(0, 1))


# == case: list_slicing_and_len
def moving_average_loss(xs, k):
    windows = [sum(xs[i:i + k]) / k for i in range(len(xs) - k + 1)]
    return sum(w * w for w in windows)


def test_list_slicing_and_len():
    xs = [0.5, -1.0, 0.8, 1.4, -0.3, 0.2]
    check_grads(moving_average_loss, (xs, 3), wrt=0)


# == case: list_argument_with_int_leaf
def scaled_sum(items):
    values, n = items[0], items[1]
    return n * np.sum(values ** 2) + items[2] * 3.0


def test_list_argument_with_int_leaf_gets_none_or_zero():
    r = rng(21)
    items = [r.standard_normal(3), 4, 0.5]
    check_grads(scaled_sum, (items,))
    g = s2sad.grad(scaled_sum)(items)
    assert isinstance(g, list) and len(g) == 3
    assert_close(g[0], 8 * items[0])
    assert g[1] is None or g[1] == 0
    assert_close(g[2], 3.0)


# == case: dict_item_assignment_and_update
def build_features(x, w):
    feats = {}
    feats["lin"] = w * x
    feats["sq"] = x * x
    feats.update({"cube": x ** 3, "sin": np.sin(w * x)})
    feats["lin"] = feats["lin"] + 1.0
    return sum(np.sum(v) for v in feats.values())


def test_dict_item_assignment_and_update():
    r = rng(25)
    check_grads(build_features, (r.standard_normal(4), 0.6), wrt=(0, 1))


# == case: star_args
def weighted_total(scale, *terms):
    return scale * sum(t * t for t in terms)


def calls_weighted_total(a, b, c):
    return weighted_total(a, b, c, b * c)


def test_star_args_in_callee():
    check_grads(calls_weighted_total, (0.5, 1.3, -0.8), wrt=(0, 1, 2))


def test_star_args_differentiated_directly():
    g = s2sad.grad(weighted_total, wrt=(0, 1))(0.5, 1.3, -0.8)
    assert_close(g[0], 1.3 ** 2 + 0.8 ** 2)
    assert_close(g[1], 2 * 0.5 * 1.3)


# == case: star_kwargs
def penalty(x, **weights):
    total = 0.0
    for name, w in weights.items():
        if name == "l1":
            total = total + w * np.sum(np.abs(x))
        elif name == "l2":
            total = total + w * np.sum(x * x)
    return total


def regularised(x, lam):
    return np.sum(np.log1p(x * x)) + penalty(x, l1=0.1 * lam, l2=lam)


def test_star_kwargs_in_callee():
    r = rng(26)
    check_grads(regularised, (r.standard_normal(5) + 0.05, 0.3), wrt=(0, 1))


# == case: sum_of_dict_values_and_sorted_rows
def sum_dict_values(x):
    d = {f"k{i}": x[i] ** 2 for i in range(len(x)) if i != 1}
    return sum(d.values()) + d["k0"] * d.get("k2", 0.0)


def sorted_rows(X):
    rows = sorted(X, key=lambda r: float(r[0]))
    return float(np.sum(rows[0] * 2.0 + rows[-1]))


def test_sum_of_dict_values_and_sorted_rows():
    """sum over a dict view, and sorted over the rows of an array (rows the result does not use
    get zero adjoints): both used to fail in the reverse sweep."""
    r = rng(11)
    check_grads(sum_dict_values, (r.standard_normal(3),))
    check_grads(sorted_rows, (r.standard_normal((4, 3)),))


# == case: defaultdict_accumulators
def binned_energy(x):
    bins = collections.defaultdict(float)       # a missing key's item: the default, 0.0
    for i, v in enumerate(x):
        bins[i % 2] += v * v
    return bins[0] * bins[1]


def binned_vectors(x):
    acc = collections.defaultdict(lambda: np.zeros(2))
    for i in range(3):
        acc[i % 2] = acc[i % 2] + x[i] * np.array([1.0, 2.0])
    return np.sum(acc[0] * acc[1])


def test_defaultdict_accumulators():
    # forward mode gave the defaultdict no tangent (a TypeError inside the generated code); its
    # tangent is a defaultdict whose default is the zero of the default
    x = np.array([0.3, -1.2, 0.8])
    for f in (binned_energy, binned_vectors):
        check_grads(f, (x,), modes=("rev", "fwd"))
    assert_close(s2sad.grad(binned_energy)(x), [2 * 0.3 * 1.44, -2.4 * 0.73, 1.6 * 1.44])


def update_with_keywords(x):
    s = {"k": x[0], "z": 1.0}
    s.update(k=s["k"] * x[1], j=x[2])
    s.update({"z": x[2] * 3}, k=s["k"] ** 2)
    return s["k"] * s["z"] + s["j"] ** 2


def test_dict_update_with_keywords():
    # (reverse mode refused d.update(k=v); forward mode followed it)
    check_grads(update_with_keywords, (rng(7).standard_normal(3),))
