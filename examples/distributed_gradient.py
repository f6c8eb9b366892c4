# s2sad-example: own-test  (tests/examples/test_distributed_example.py: it needs Dask)
"""Data-parallel gradients with Dask: each worker process differentiates the loss on its own shard
of the data, and the shard gradients add up to the gradient over all of it.

Run:  python examples/distributed_gradient.py [--shards 4] [--rows 20000]

What travels to the workers is ``s2sad.value_and_grad(loss)``.  This script is ``__main__``, so
the workers cannot import ``loss`` by name: s2sad pickles it by value (its source text and the
names it reads), and each worker builds the derivative from that text (see docs/scaling.md).
Needs ``pip install 'dask[distributed]'``.
"""
import argparse
import os
import time

import numpy as np

import s2sad


def loss(w, b, X, y, share=1.0):
    """The summed logistic loss of a linear classifier plus ``share`` of an L2 penalty: a sum
    over rows, so the shards' losses (each with its share of the penalty) add up to the whole."""
    z = X @ w + b
    return np.sum(np.logaddexp(0.0, z) - y * z) + share * 0.5e-3 * np.sum(w * w)


def make_data(rows, cols, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((rows, cols))
    w_true = rng.standard_normal(cols)
    y = (X @ w_true + 0.3 * rng.standard_normal(rows) > 0).astype(float)
    return X, y


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shards", type=int, default=4)
    quick = os.environ.get("S2SAD_EXAMPLES_QUICK") == "1"       # CI's small setting
    ap.add_argument("--rows", type=int, default=2000 if quick else 20000)
    ap.add_argument("--cols", type=int, default=16)
    args = ap.parse_args()

    from dask.distributed import Client, LocalCluster

    X, y = make_data(args.rows, args.cols)
    rng = np.random.default_rng(1)
    w, b = 0.1 * rng.standard_normal(args.cols), 0.2
    vg = s2sad.value_and_grad(loss, wrt=(0, 1))

    t0 = time.perf_counter()
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        shards = [client.scatter((Xs, ys)) for Xs, ys in
                  zip(np.array_split(X, args.shards), np.array_split(y, args.shards))]
        futures = [client.submit(_shard_value_and_grad, vg, w, b, shard, len(y), pure=False)
                   for shard in shards]
        parts = client.gather(futures)
        workers = sorted({pid for *_, pid in parts})
    elapsed = time.perf_counter() - t0

    value = sum(v for v, _, _, _ in parts)
    gw = sum(g for _, g, _, _ in parts)
    gb = sum(g for _, _, g, _ in parts)
    v1, (gw1, gb1) = vg(w, b, X, y)                  # one process, all the data
    print(f"{args.shards} shards on {len(workers)} worker processes {workers}, "
          f"{elapsed:.1f} s with the cluster's start")
    print(f"loss       distributed {value:.10f}   single process {v1:.10f}")
    print(f"d loss/db  distributed {gb:.10f}   single process {gb1:.10f}")
    print(f"d loss/dw  distributed {np.array2string(gw[:4], precision=6)} ...")
    print(f"           single      {np.array2string(gw1[:4], precision=6)} ...")
    diff = max(np.max(np.abs(gw - gw1)), abs(gb - gb1))
    print(f"largest difference between the two gradients: {diff:.3e}")
    if not (np.allclose(gw, gw1, rtol=1e-10, atol=1e-10) and np.isclose(gb, gb1, rtol=1e-10)
            and np.isclose(value, v1, rtol=1e-12)):
        raise SystemExit("the distributed gradient differs from the single-process one")
    print("OK: the shard gradients sum to the full gradient")


def _shard_value_and_grad(vg, w, b, shard, rows):
    """Runs in a worker: value and gradient on one shard (and the worker's process id)."""
    Xs, ys = shard
    v, (gw, gb) = vg(w, b, Xs, ys, len(ys) / rows)
    return v, gw, gb, os.getpid()


if __name__ == "__main__":
    main()
