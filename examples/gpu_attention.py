"""A small multi-head attention block with a residual connection, trained with s2sad gradients.

    python examples/gpu_attention.py          # on the GPU (CuPy arrays), a few training steps
    python examples/gpu_attention.py --cpu    # the same functions on NumPy arrays
    python examples/gpu_attention.py --quick  # 3 steps of a smaller block (also
                                              # S2SAD_EXAMPLES_QUICK=1)

The model is written once against the array module of its input (``xp = get_array_module(x)``),
so the same source runs, and is differentiated, with NumPy or CuPy arrays.  The generated
derivative keeps everything on the device: on CuPy arrays the adjoints of the head split
(``reshape`` + ``transpose``) and of the skip path (``concatenate``) run as s2sad's CUDA kernels.
Print the derivative with ``--show``.
"""
import argparse
import math
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import s2sad  # noqa: E402

try:
    import cupy
    get_array_module = cupy.get_array_module
except ImportError:          # CPU-only machines: the same code on NumPy arrays
    cupy = None

    def get_array_module(*arrays):
        return np
    s2sad.defzero(get_array_module)

N_HEADS = 4


def attention_block(Wq, Wk, Wv, Wo, Ws, x):
    """Self-attention over ``x`` (batch, tokens, features) with N_HEADS heads, then a skip path
    that sees the input and the attention output side by side, plus a residual connection."""
    xp = get_array_module(x)
    B, T, D = x.shape
    dh = D // N_HEADS
    # split heads: (B, T, D) -> (B, H, T, dh), keys as (B, H, dh, T)
    q = (x @ Wq).reshape(B, T, N_HEADS, dh).transpose(0, 2, 1, 3)
    k = xp.transpose((x @ Wk).reshape(B, T, N_HEADS, dh), (0, 2, 3, 1))
    v = xp.swapaxes((x @ Wv).reshape(B, T, N_HEADS, dh), 1, 2)
    s = (q @ k) * (1.0 / math.sqrt(dh))
    s = s - xp.max(s, axis=-1, keepdims=True)
    p = xp.exp(s)
    p = p / xp.sum(p, axis=-1, keepdims=True)
    # merge heads: (B, H, T, dh) -> (B, T, D)
    o = xp.moveaxis(p @ v, 1, 2).reshape(B, T, D)
    a = o @ Wo
    h = xp.concatenate([x, a], axis=-1)          # skip path: input and attention side by side
    return x + xp.tanh(h @ Ws)                   # residual connection


def loss(Wq, Wk, Wv, Wo, Ws, x, y):
    xp = get_array_module(x)
    err = attention_block(Wq, Wk, Wv, Wo, Ws, x) - y
    return xp.mean(err * err)


def init(xp, d_model, seed=0, dtype="float32"):
    """Weights (Wq, Wk, Wv, Wo, Ws) and a regression task: inputs and targets from a fixed
    random attention block."""
    rng = np.random.default_rng(seed)

    def w(n_in, n_out, scale=1.0):
        return xp.asarray(rng.standard_normal((n_in, n_out)) * (scale / math.sqrt(n_in)), dtype=dtype)
    params = [w(d_model, d_model), w(d_model, d_model), w(d_model, d_model), w(d_model, d_model),
              w(2 * d_model, d_model, 0.5)]
    teacher = [w(d_model, d_model, 2.0) for _ in range(4)] + [w(2 * d_model, d_model)]
    return params, teacher


def data(xp, teacher, batch, tokens, d_model, seed=1, dtype="float32"):
    rng = np.random.default_rng(seed)
    x = xp.asarray(rng.standard_normal((batch, tokens, d_model)), dtype=dtype)
    y = attention_block(*teacher, x)
    return x, y


def train(xp, steps=20, lr=2.0, batch=8, tokens=64, d_model=128, dtype="float32", show=False):
    params, teacher = init(xp, d_model, dtype=dtype)
    x, y = data(xp, teacher, batch, tokens, d_model, dtype=dtype)
    vg = s2sad.value_and_grad(loss, wrt=(0, 1, 2, 3, 4))
    history = []
    t0 = time.perf_counter()
    for step in range(steps):
        value, grads = vg(*params, x, y)
        params = [p - lr * g for p, g in zip(params, grads)]
        history.append(float(value))                 # one scalar to the host per step, for printing
        print(f"step {step:3d}  loss {history[-1]:.6f}")
    dt = time.perf_counter() - t0
    print(f"{steps} steps in {dt:.2f} s ({1e3 * dt / steps:.1f} ms per step, first step includes "
          f"building the derivative{' and compiling kernels' if xp is not np else ''})")
    if show:
        print(s2sad.differentiate(loss, wrt=(0, 1, 2, 3, 4)).adjoint_source(*params, x, y))
    return history


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cpu", action="store_true", help="NumPy arrays instead of CuPy")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--show", action="store_true", help="print the generated derivative")
    ap.add_argument("--quick", action="store_true", default=bool(os.environ.get(
        "S2SAD_EXAMPLES_QUICK")), help="3 steps, batch 2, 16 tokens, 32 features")
    args = ap.parse_args()
    size = dict(steps=3, batch=2, tokens=16, d_model=32) if args.quick else dict(steps=args.steps)
    if args.cpu or cupy is None or not cupy.is_available():
        if not args.cpu:
            print("CuPy or a GPU is not available: running on NumPy arrays")
        hist = train(np, show=args.show, **size)
    else:
        print(f"GPU: {cupy.cuda.runtime.getDeviceProperties(0)['name'].decode()}")
        hist = train(cupy, show=args.show, **size)
    print(f"loss {hist[0]:.6f} -> {hist[-1]:.6f}")


if __name__ == "__main__":
    main()
