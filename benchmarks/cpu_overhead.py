"""CPU benchmark: time per gradient call, s2sad against its peers, measured side by side.

Run:  python benchmarks/cpu_overhead.py [--repeat 7]

Peers are optional: HIPS autograd, JAX (eager and jit) and PyTorch are timed when importable.
Hand-written NumPy gradients are the floor.  Ratios are reported relative to s2sad, from the
best of several repeats of many calls each, in the same process (the machines are shared and
noisy: quote ratios, never absolute times from one run).
"""
import argparse
import math
import platform
import sys
import time

import numpy as np

sys.path.insert(0, __import__("os").path.join(__import__("os").path.dirname(__file__), ".."))
import s2sad  # noqa: E402


# -- the programs ----------------------------------------------------------------------------
def loss(W, x, y):
    h = np.tanh(W @ x)
    err = h - y
    return 0.5 * np.sum(err * err)


def loss_grad_by_hand(W, x, y):
    h = np.tanh(W @ x)
    err = h - y
    return np.outer(err * (1 - h * h), x)


def rnn_scalar(w, xs):
    h = 0.0
    for x in xs:
        h = math.tanh(w * h + x)
    return h * h


def rnn_scalar_np(w, xs):        # the same with NumPy scalars, for autograd
    h = 0.0
    for x in xs:
        h = np.tanh(w * h + x)
    return h * h


def mlp(W1, W2, X, Y):
    H = np.tanh(X @ W1)
    P = H @ W2
    return np.mean((P - Y) ** 2)


def timeit(fn, n, repeat):
    best = math.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - t0) / n)
    return best


def peers():
    out = {}
    try:
        import autograd
        import autograd.numpy as anp
        out["autograd"] = (autograd, anp)
    except ImportError:
        pass
    try:
        import jax
        jax.config.update("jax_enable_x64", True)
        out["jax"] = jax
    except ImportError:
        pass
    try:
        import torch
        torch.set_num_threads(1)
        out["torch"] = torch
    except ImportError:
        pass
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    P = peers()
    rows = []

    # 1. the quickstart loss, small arrays: per-call overhead dominates
    W, x, y = rng.standard_normal((3, 4)), rng.standard_normal(4), rng.standard_normal(3)
    g = s2sad.grad(loss)
    assert np.allclose(g(W, x, y), loss_grad_by_hand(W, x, y))
    case = {"s2sad": lambda: g(W, x, y), "numpy by hand": lambda: loss_grad_by_hand(W, x, y)}
    if "autograd" in P:
        ag, anp = P["autograd"]

        def loss_ag(W, x, y):
            h = anp.tanh(W @ x)
            err = h - y
            return 0.5 * anp.sum(err * err)
        gag = ag.grad(loss_ag)
        case["autograd"] = lambda: gag(W, x, y)
    if "jax" in P:
        jax = P["jax"]
        jnp = jax.numpy

        def loss_jax(W, x, y):
            h = jnp.tanh(W @ x)
            err = h - y
            return 0.5 * jnp.sum(err * err)
        gj = jax.grad(loss_jax)
        gjj = jax.jit(gj)
        Wj, xj, yj = (jnp.asarray(a) for a in (W, x, y))
        gjj(Wj, xj, yj).block_until_ready()
        case["jax (eager)"] = lambda: gj(Wj, xj, yj).block_until_ready()
        case["jax (jit)"] = lambda: gjj(Wj, xj, yj).block_until_ready()
    if "torch" in P:
        torch = P["torch"]
        Wt, xt, yt = (torch.tensor(a) for a in (W, x, y))

        def tgrad():
            w = Wt.clone().requires_grad_(True)
            h = torch.tanh(w @ xt)
            err = h - yt
            (0.5 * torch.sum(err * err)).backward()
            return w.grad
        case["torch"] = tgrad
    rows.append(("quickstart loss, W 3x4", case, 2000))

    # 2. a scalar recurrence over 100 Python floats (interpreter-bound)
    xs = list(rng.standard_normal(100) * 0.5)
    gr = s2sad.grad(rnn_scalar)
    case = {"s2sad": lambda: gr(0.7, xs)}
    if "autograd" in P:
        ag, anp = P["autograd"]
        gar = ag.grad(rnn_scalar_np)
        case["autograd"] = lambda: gar(0.7, xs)
    if "torch" in P:
        torch = P["torch"]

        def trnn():
            w = torch.tensor(0.7, dtype=torch.float64, requires_grad=True)
            h = torch.tensor(0.0, dtype=torch.float64)
            for x in xs:
                h = torch.tanh(w * h + x)
            (h * h).backward()
            return w.grad
        case["torch"] = trnn
    if "jax" in P:
        jax = P["jax"]
        jnp = jax.numpy

        def rnn_jax(w, xs):
            h = 0.0
            for x in xs:
                h = jnp.tanh(w * h + x)
            return h * h
        gjr = jax.jit(jax.grad(rnn_jax))
        xsj = jnp.asarray(xs)
        gjr(0.7, xsj).block_until_ready()
        case["jax (jit)"] = lambda: gjr(0.7, xsj).block_until_ready()
    rows.append(("scalar RNN, 100 steps of math.tanh", case, 200))

    # 3. a two-layer MLP on a 256-sample batch (arithmetic-bound)
    X, Y = rng.standard_normal((256, 64)), rng.standard_normal((256, 8))
    W1, W2 = rng.standard_normal((64, 128)) * 0.1, rng.standard_normal((128, 8)) * 0.1
    gm = s2sad.grad(mlp, wrt=(0, 1))
    case = {"s2sad": lambda: gm(W1, W2, X, Y)}
    if "autograd" in P:
        ag, anp = P["autograd"]

        def mlp_ag(W1, W2, X, Y):
            H = anp.tanh(X @ W1)
            return anp.mean((H @ W2 - Y) ** 2)
        gam = ag.grad(mlp_ag, (0, 1))
        case["autograd"] = lambda: gam(W1, W2, X, Y)
    if "torch" in P:
        torch = P["torch"]
        W1t, W2t, Xt, Yt = (torch.tensor(a) for a in (W1, W2, X, Y))

        def tmlp():
            a = W1t.clone().requires_grad_(True)
            b = W2t.clone().requires_grad_(True)
            torch.mean((torch.tanh(Xt @ a) @ b - Yt) ** 2).backward()
            return a.grad, b.grad
        case["torch"] = tmlp
    if "jax" in P:
        jax = P["jax"]
        jnp = jax.numpy

        def mlp_jax(W1, W2, X, Y):
            return jnp.mean((jnp.tanh(X @ W1) @ W2 - Y) ** 2)
        gjm = jax.jit(jax.grad(mlp_jax, (0, 1)))
        args_j = tuple(jnp.asarray(a) for a in (W1, W2, X, Y))
        jax.block_until_ready(gjm(*args_j))
        case["jax (jit)"] = lambda: jax.block_until_ready(gjm(*args_j))
    rows.append(("MLP 256x64 -> 128 -> 8", case, 200))

    print(f"# CPU gradient benchmark ({platform.processor() or platform.machine()}, "
          f"Python {platform.python_version()}, NumPy {np.__version__})")
    print("| program | tool | µs per gradient | time / s2sad's |")
    print("|---|---|---:|---:|")
    for name, case, n in rows:
        times = {k: timeit(f, n, args.repeat) for k, f in case.items()}
        base = times["s2sad"]
        for k, t in times.items():
            print(f"| {name} | {k} | {t * 1e6:.1f} | {t / base:.2f} |")


if __name__ == "__main__":
    main()
