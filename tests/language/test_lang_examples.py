"""Realistic programs: integrators, recurrent cells, trees, models and training loops."""
import dataclasses
import functools

import numpy as np

import s2sad
from lang_helpers import check_grads, check_obj_grad, as_attr_dict, rng, assert_close


# == case: logistic_regression_minibatches
def logistic_loss(w, b, batches):
    total, n = 0.0, 0
    for X, y in batches:
        z = X @ w + b
        total = total + np.sum(np.logaddexp(0.0, z) - y * z)
        n += len(y)
    return total / n


def test_logistic_regression_minibatches():
    r = rng(83)
    batches = [(r.standard_normal((5, 3)), (r.random(5) > 0.5).astype(float)) for _ in range(3)]
    w = r.standard_normal(3)
    check_grads(logistic_loss, (w, 0.2, batches), wrt=(0, 1))
    X = np.concatenate([b[0] for b in batches])
    y = np.concatenate([b[1] for b in batches])
    p = 1 / (1 + np.exp(-(X @ w + 0.2)))
    assert_close(s2sad.grad(logistic_loss)(w, 0.2, batches), X.T @ (p - y) / 15)


# == case: mlp_class_training_step
class TinyMLP:
    def __init__(self, W1, b1, W2, b2):
        self.W1, self.b1, self.W2, self.b2 = W1, b1, W2, b2

    def __call__(self, X):
        H = np.tanh(X @ self.W1 + self.b1)
        return H @ self.W2 + self.b2

    def params(self):
        return {"W1": self.W1, "b1": self.b1, "W2": self.W2, "b2": self.b2}


def mlp_loss(model, X, y):
    pred = model(X)
    return np.mean((pred - y) ** 2)


def sgd_step(model, X, y, lr):
    g = as_attr_dict(s2sad.grad(mlp_loss)(model, X, y), ["W1", "b1", "W2", "b2"])
    return TinyMLP(*(getattr(model, k) - lr * g[k] for k in ["W1", "b1", "W2", "b2"]))


def test_mlp_class_training_step():
    r = rng(81)
    X = r.standard_normal((16, 3))
    y = np.sin(X[:, 0]) + 0.5 * X[:, 1]
    model = TinyMLP(0.5 * r.standard_normal((3, 8)), np.zeros(8), 0.5 * r.standard_normal(8), 0.0)
    check_obj_grad(mlp_loss, (model, X[:4], y[:4]), 0, ["W1", "b1", "W2", "b2"])
    losses = [mlp_loss(model, X, y)]
    for _ in range(15):
        model = sgd_step(model, X, y, 0.1)
        losses.append(mlp_loss(model, X, y))
    assert losses[-1] < 0.7 * losses[0], losses
    assert all(b <= a + 1e-12 for a, b in zip(losses, losses[1:])), losses


# == case: rk4_lambda_rhs
def rk4(f, y0, t0, t1, n):
    h = (t1 - t0) / n
    y, t = y0, t0
    for _ in range(n):
        k1 = f(t, y)
        k2 = f(t + h / 2, y + h / 2 * k1)
        k3 = f(t + h / 2, y + h / 2 * k2)
        k4 = f(t + h, y + h * k3)
        y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        t = t + h
    return y


def decay_final(k, y0):
    return rk4(lambda t, y: -k * y + np.sin(t), y0, 0.0, 1.0, 20)


def oscillator_energy(omega, state):
    rhs = lambda t, s: np.array([s[1], -omega ** 2 * s[0]])
    s = rk4(rhs, state, 0.0, 2.0, 40)
    return 0.5 * s[1] ** 2 + 0.5 * omega ** 2 * s[0] ** 2


def test_rk4_lambda_rhs():
    check_grads(decay_final, (0.8, 1.3), wrt=(0, 1))
    # y' = -k y (no forcing) has y(1) = y0 exp(-k); RK4 with 20 steps is accurate to ~1e-8
    g = s2sad.grad(lambda k, y0: rk4(lambda t, y: -k * y, y0, 0.0, 1.0, 20), wrt=0)(0.8, 1.3)
    assert_close(g, -1.3 * np.exp(-0.8), rtol=1e-6)
    check_grads(oscillator_energy, (1.4, np.array([0.3, -0.5])), wrt=(0, 1))


# == case: rnn_cell_over_list
def rnn_cell(params, h, x):
    Wh, Wx, b = params
    return np.tanh(Wh @ h + Wx @ x + b)


def rnn_loss(params, xs, h0, targets):
    h = h0
    hs = []
    for x in xs:
        h = rnn_cell(params, h, x)
        hs.append(h)
    return sum(np.sum((hh - t) ** 2) for hh, t in zip(hs, targets)) / len(xs)


def test_rnn_cell_over_list():
    r = rng(80)
    H, D, T = 4, 3, 5
    params = (0.5 * r.standard_normal((H, H)), r.standard_normal((H, D)), r.standard_normal(H))
    xs = [r.standard_normal(D) for _ in range(T)]
    targets = [r.standard_normal(H) for _ in range(T)]
    check_grads(rnn_loss, (params, xs, r.standard_normal(H), targets), wrt=(0, 1, 2))
    g = s2sad.grad(rnn_loss)(params, xs, np.zeros(H), targets)
    assert isinstance(g, tuple) and [a.shape for a in g] == [(H, H), (H, D), (H,)]


# == case: recursive_tree_sum
def tree_sum(tree):
    if isinstance(tree, tuple):
        return sum(tree_sum(child) for child in tree)
    return tree * tree


def tree_weighted(tree, depth=1.0):
    if isinstance(tree, tuple):
        total = 0.0
        for child in tree:
            total = total + tree_weighted(child, depth + 1.0)
        return total
    return np.sin(tree) / depth


def test_recursive_tree_sum():
    tree = (0.5, (1.2, -0.3), ((0.7,), 2.1, (-1.1, (0.4,))))
    check_grads(tree_sum, (tree,))
    g = s2sad.grad(tree_sum)(tree)
    assert isinstance(g, tuple) and isinstance(g[2][0], tuple)
    assert_close(g[2][2][1][0], 0.8)
    assert_close(g[1][1], -0.6)
    check_grads(tree_weighted, (tree,))


# == case: early_returns_in_loop_and_try
def first_feasible_cost(candidates, scale):
    for c in candidates:
        try:
            if c <= 0:
                raise ValueError("infeasible")
            cost = scale * np.log(c)
        except ValueError:
            continue
        if cost > 0.1:
            return cost * cost
    return scale * 0.0 - 1.0


def test_early_returns_in_loop_and_try():
    check_grads(first_feasible_cost, ([-1.0, 0.5, 1.0, 2.5, 3.0], 1.2), wrt=(0, 1))
    g = s2sad.grad(first_feasible_cost, wrt=(0, 1))([-1.0, 0.5, 1.0, 2.5, 3.0], 1.2)
    cost = 1.2 * np.log(2.5)
    assert_close(g[0], [0.0, 0.0, 0.0, 2 * cost * 1.2 / 2.5, 0.0])
    assert_close(g[1], 2 * cost * np.log(2.5))
    assert_close(s2sad.grad(first_feasible_cost, wrt=1)([-1.0, 0.5], 1.2), 0.0)


# == case: attention_with_helpers
def softmax(z, axis=-1):
    z = z - np.max(z, axis=axis, keepdims=True)
    e = np.exp(z)
    return e / np.sum(e, axis=axis, keepdims=True)


def attention(params, X):
    Q, K, V = (X @ params[k] for k in ("Wq", "Wk", "Wv"))
    A = softmax(Q @ K.T / np.sqrt(Q.shape[-1]))
    return A @ V


def attention_loss(params, X):
    return np.sum(attention(params, X) ** 2)


def test_attention_with_helpers():
    r = rng(84)
    params = {k: r.standard_normal((3, 2)) for k in ("Wq", "Wk", "Wv")}
    check_grads(attention_loss, (params, r.standard_normal((4, 3))), wrt=(0, 1))


# == case: optimizer_state_dataclass
@dataclasses.dataclass
class Momentum:
    velocity: np.ndarray
    beta: float = 0.9


def unrolled_momentum(w0, lr, grads_seq):
    opt = Momentum(np.zeros_like(w0))
    w = w0
    for g in grads_seq:
        opt.velocity = opt.beta * opt.velocity + g * w
        w = w - lr * opt.velocity
    return np.sum(w ** 2)


def test_optimizer_state_dataclass():
    r = rng(85)
    seq = [r.standard_normal(3) for _ in range(4)]
    check_grads(unrolled_momentum, (r.standard_normal(3), 0.1, seq), wrt=(0, 1, 2))


# == case: kalman_filter_dict_state
def kalman_nll(q, r_var, observations):
    state = {"mean": 0.0, "var": 1.0}
    nll = 0.0
    for y in observations:
        pred_var = state["var"] + q
        s = pred_var + r_var
        nll = nll + 0.5 * (np.log(2 * np.pi * s) + (y - state["mean"]) ** 2 / s)
        gain = pred_var / s
        state = {"mean": state["mean"] + gain * (y - state["mean"]), "var": (1 - gain) * pred_var}
    return nll


def test_kalman_filter_dict_state():
    obs = [0.3, 0.9, 0.4, 1.3, 1.1, 0.7]
    check_grads(kalman_nll, (0.2, 0.5, obs), wrt=(0, 1, 2))


# == case: newton_solver_function_argument
def newton(f, df, x0, tol=1e-12, maxiter=50):
    x = x0
    for _ in range(maxiter):
        step = f(x) / df(x)
        x = x - step
        if abs(step) < tol:
            break
    return x


def kepler_anomaly(M, e):
    # E - e sin E = M, differentiated through the unrolled Newton iterations
    return newton(lambda E: E - e * np.sin(E) - M, lambda E: 1 - e * np.cos(E), M)


def test_newton_solver_function_argument():
    M, e = 1.1, 0.3
    check_grads(kepler_anomaly, (M, e), wrt=(0, 1))
    E = kepler_anomaly(M, e)
    gM, ge = s2sad.grad(kepler_anomaly, wrt=(0, 1))(M, e)
    assert_close([gM, ge], [1 / (1 - e * np.cos(E)), np.sin(E) / (1 - e * np.cos(E))], rtol=1e-8)


# == case: dict_configured_model
def build_model(cfg):
    acts = {"tanh": np.tanh, "relu": lambda z: np.maximum(z, 0.0), "softplus": lambda z: np.logaddexp(0.0, z)}
    act = acts[cfg["activation"]]

    def forward(params, x):
        h = x
        for layer in params["layers"]:
            h = act(layer["W"] @ h + layer["b"])
        return cfg["out_scale"] * np.sum(h)
    return forward


def configured_loss(params, x, cfg):
    forward = build_model(cfg)
    out = forward(params, x)
    reg = cfg["l2"] * sum(np.sum(l["W"] ** 2) for l in params["layers"])
    return (out - cfg["target"]) ** 2 + reg


def test_dict_configured_model():
    r = rng(82)
    params = {"layers": [{"W": r.standard_normal((4, 3)), "b": r.standard_normal(4)},
                         {"W": r.standard_normal((2, 4)), "b": r.standard_normal(2)}]}
    x = r.standard_normal(3)
    for act in ("tanh", "relu", "softplus"):
        cfg = {"activation": act, "out_scale": 0.7, "l2": 0.01, "target": 0.3}
        check_grads(configured_loss, (params, x, cfg), wrt=(0, 1))


# == case: bisection_with_partial
def residual(x, a, b):
    return x ** 3 + a * x - b


def solve_then_loss(a, b):
    f = functools.partial(residual, a=a, b=b)
    lo, hi = -10.0, 10.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if f(mid) > 0:
            hi = mid
        else:
            lo = mid
    # one Newton step from the bracket carries the derivative (implicit-function style)
    x = mid - f(mid) / (3 * mid ** 2 + a)
    return x * x


def test_bisection_with_partial():
    a, b = 1.5, 2.0
    g = s2sad.grad(solve_then_loss, wrt=(0, 1))(a, b)
    x = np.roots([1, 0, a, -b]).real[np.abs(np.roots([1, 0, a, -b]).imag) < 1e-9][0]
    dxdb = 1 / (3 * x * x + a)
    dxda = -x / (3 * x * x + a)
    assert_close(g, [2 * x * dxda, 2 * x * dxdb], rtol=1e-6)


# == case: gmm_loglik_list_of_components
def gmm_loglik(weights, means, log_stds, xs):
    comps = list(zip(weights, means, log_stds))
    total = 0.0
    for x in xs:
        terms = [w * np.exp(-0.5 * ((x - m) / np.exp(ls)) ** 2) / (np.exp(ls) * np.sqrt(2 * np.pi))
                 for w, m, ls in comps]
        total = total + np.log(sum(terms))
    return total


def test_gmm_loglik_list_of_components():
    weights, means, log_stds = [0.3, 0.7], [-0.5, 1.0], [-0.2, 0.1]
    xs = np.array([0.1, -0.8, 1.4, 0.6])
    check_grads(gmm_loglik, (weights, means, log_stds, xs), wrt=(0, 1, 2, 3))
