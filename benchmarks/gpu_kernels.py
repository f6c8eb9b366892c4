"""Benchmark of the s2sad concat/permute adjoint kernels on a GPU (issue 6, item 7).

    NUMBA_ENABLE_CUDASIM=0 PYTHONPATH=. python benchmarks/gpu_kernels.py [--out results.md] [--quick]

Every method ACCUMULATES into existing gradient buffers (dx += adjoint), so the effective bandwidth
counts dy read + dx read + dx written:
  * s2sad:  s2sad.kernels.concat_adjoint(dy, xs, 0, acc=dxs) / permute_adjoint(dy, axes, acc=dx)
  * cupy:   dxs[i] += dy[a:b] per input / dx += dy.transpose(inverse)
  * torch:  autograd backward of torch.cat / permute with existing .grad (AccumulateGrad adds)
Time per call: wall clock over back-to-back calls, synchronised at the end (host overhead included).
"""
import argparse
import datetime
import os
import sys
import time

os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "0")
import numpy as np  # noqa: E402
import cupy as cp  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from s2sad.kernels import concat_adjoint, permute_adjoint, _cuda  # noqa: E402

try:
    import torch
except Exception:  # noqa: BLE001
    torch = None

TORCH_DT = {}
if torch is not None:
    TORCH_DT = {np.float16: torch.float16, np.float32: torch.float32, np.float64: torch.float64,
                np.complex64: torch.complex64}


def timeit(fn, n_iter, warm=3, sync=cp.cuda.Device().synchronize):
    for _ in range(warm):
        fn()
    sync()
    t = time.perf_counter()
    for _ in range(n_iter):
        fn()
    sync()
    return (time.perf_counter() - t) / n_iter


def iters(nbytes):
    return max(10, min(300, int(2e9 / max(nbytes, 1))))


def copy_bandwidth():
    a = cp.ones(1 << 28, cp.float32)         # 1 GiB
    b = cp.empty_like(a)
    t = timeit(lambda: cp.copyto(b, a), 20)
    return 2 * a.nbytes / t / 1e12


def rand(shape, dt):
    x = cp.random.standard_normal(shape, dtype=cp.float32 if dt == np.float16 else
                                  (np.float64 if dt == np.complex64 else dt))
    if np.dtype(dt).kind == "c":
        x = x + 1j * x[::-1]
    return x.astype(dt)


def bench_concat(k, n, dt):
    xs = [rand((n,), dt) for _ in range(k)]
    dy = rand((k * n,), dt)
    dxs = [cp.zeros((n,), dt) for _ in range(k)]
    nbytes = 3 * dy.nbytes
    res = {}
    res["s2sad"] = timeit(lambda: concat_adjoint(dy, xs, 0, acc=dxs), iters(nbytes))

    def cupy_native():
        for i in range(k):
            dxs[i] += dy[i * n:(i + 1) * n]
    res["cupy"] = timeit(cupy_native, iters(nbytes))
    # correctness spot check
    ref = [d.copy() for d in dxs]
    concat_adjoint(dy, xs, 0, acc=dxs)
    assert all(bool(cp.allclose(d, r + dy[i * n:(i + 1) * n], rtol=1e-2, atol=1e-2))
               for i, (d, r) in enumerate(zip(dxs, ref)))
    if torch is not None:
        txs = [torch.zeros(n, dtype=TORCH_DT[dt], device="cuda", requires_grad=True) for _ in range(k)]
        y = torch.cat(txs)
        tdy = torch.from_dlpack(dy)
        torch.autograd.backward(y, tdy, retain_graph=True)
        res["torch"] = timeit(lambda: torch.autograd.backward(y, tdy, retain_graph=True), iters(nbytes),
                              sync=torch.cuda.synchronize)
    return nbytes, res


def bench_permute(shape, axes, dt, peers=True):
    x = rand(shape, dt)
    dy = cp.ascontiguousarray(x.transpose(axes))
    dx = cp.zeros(shape, dt)
    inv = tuple(np.argsort(axes))
    nbytes = 3 * dy.nbytes
    res = {}
    res["s2sad"] = timeit(lambda: permute_adjoint(dy, axes, acc=dx), iters(nbytes))
    if not peers:
        d0 = dx.copy()
        permute_adjoint(dy, axes, acc=dx)
        assert bool(cp.allclose(dx, d0 + dy.transpose(inv), rtol=1e-2, atol=1e-2))
        return nbytes, res

    def cupy_native():
        dx[...] += dy.transpose(inv)
    res["cupy"] = timeit(cupy_native, iters(nbytes))
    d0 = dx.copy()
    permute_adjoint(dy, axes, acc=dx)
    assert bool(cp.allclose(dx, d0 + dy.transpose(inv), rtol=1e-2, atol=1e-2))
    if torch is not None:
        tx = torch.zeros(shape, dtype=TORCH_DT[dt], device="cuda", requires_grad=True)
        y = tx.permute(*axes)
        tdy = torch.from_dlpack(dy)
        torch.autograd.backward(y, tdy, retain_graph=True)
        res["torch"] = timeit(lambda: torch.autograd.backward(y, tdy, retain_graph=True), iters(nbytes),
                              sync=torch.cuda.synchronize)
    return nbytes, res


def tune():
    """Pick launch parameters on the large float32 cases (a few compiles)."""
    best = {}
    for tpb, ept in [(128, 8), (128, 16), (256, 8), (256, 16), (128, 32), (512, 8)]:
        _cuda.CONFIG.update(tpb=tpb, ept=ept)
        nb, r = bench_concat(8, 1 << 24, np.float32)
        best[(tpb, ept)] = nb / r["s2sad"] / 1e12
    (tpb, ept) = max(best, key=best.get)
    _cuda.CONFIG.update(tpb=tpb, ept=ept)
    return {"segments (tpb, ept) -> TB/s": best, "(tile, block y) -> TB/s": tune_permute()}


def tune_permute():
    """Pick the permute kernel's tile edge and block height on the 8192² float32 swap; each
    thread moves (tile / 32) x (tile / block y) elements."""
    tb = {}
    for tile, by in [(32, 8), (32, 4), (64, 8), (64, 16), (64, 4), (64, 2)]:
        _cuda.CONFIG.update(tile=tile, tile_by=by)
        nb, r = bench_permute((8192, 8192), (1, 0), np.float32, peers=False)
        tb[(tile, by)] = round(nb / r["s2sad"] / 1e12, 3)
    tile, by = max(tb, key=tb.get)
    _cuda.CONFIG.update(tile=tile, tile_by=by)
    return tb


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--no-tune", action="store_true")
    ap.add_argument("--tune-permute", action="store_true", help="tune only the permute tile")
    ap.add_argument("--dtypes", default="float16,float32,float64,complex64")
    args = ap.parse_args()
    props = cp.cuda.runtime.getDeviceProperties(0)
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    lines = [f"Card: {name}; date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; "
             f"cupy {cp.__version__}; torch {getattr(torch, '__version__', 'absent')}"]
    bw = copy_bandwidth()
    lines.append(f"Device-to-device copy (cp.copyto, 1 GiB float32, read+write): {bw:.2f} TB/s")
    tuned = tune_permute() if args.tune_permute else (None if args.no_tune else tune())
    lines.append(f"Launch config: {dict((k, _cuda.CONFIG[k]) for k in ('tpb', 'ept', 'tile', 'tile_by'))}; "
                 f"tuning: {tuned}")
    lines.append(f"Kernel entry: {'raw pointers' if _cuda._use_pointers() else 'array arguments'}"
                 f" (pointer build error: {_cuda._state['pointer_error']})")
    lines.append("")
    lines.append("| case | dtype | s2sad µs | s2sad TB/s | %copy | cupy µs | cupy TB/s | torch µs | torch TB/s |")
    lines.append("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    cases = [("concat 8x16M", lambda dt: bench_concat(8, 1 << 24, dt)),
             ("concat 8x1K", lambda dt: bench_concat(8, 1 << 10, dt)),
             ("concat 64x4K", lambda dt: bench_concat(64, 1 << 12, dt)),
             ("permute 8192² (1,0)", lambda dt: bench_permute((8192, 8192), (1, 0), dt)),
             ("permute 256³ (2,0,1)", lambda dt: bench_permute((256, 256, 256), (2, 0, 1), dt))]
    for label, fn in cases:
        for dname in args.dtypes.split(","):
            dt = np.dtype(dname).type
            try:
                nb, r = fn(dt)
            except Exception as e:  # noqa: BLE001
                lines.append(f"| {label} | {dname} | error: {e!r} |")
                print(lines[-1], flush=True)
                continue
            cells = []
            for m in ("s2sad", "cupy", "torch"):
                t = r.get(m)
                cells.append("–" if t is None else f"{t * 1e6:.1f}")
                cells.append("–" if t is None else f"{nb / t / 1e12:.3f}")
                if m == "s2sad":
                    cells.append(f"{100 * nb / t / 1e12 / bw:.0f}%")
            lines.append(f"| {label} | {dname} | " + " | ".join(cells) + " |")
            print(lines[-1], flush=True)
    text = "\n".join(lines)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
