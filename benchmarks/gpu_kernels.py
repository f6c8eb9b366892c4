"""Benchmark of the s2sad concat/permute adjoint kernels on a GPU (issue 6, item 7).

    NUMBA_ENABLE_CUDASIM=0 PYTHONPATH=. python benchmarks/gpu_kernels.py [--out results.md] [--quick]

The float16 check of issue 14 (one call, about a minute; `timeout` so that it cannot hang):

    NUMBA_ENABLE_CUDASIM=0 timeout -k 10 175 python benchmarks/gpu_kernels.py --no-tune --tune-f16 \
        --dtypes float16,float32 --cases "concat 8x16M,permute" --compare-words

``--compare-words`` adds, under each case, a row of s2sad with words off (the element path:
``launch.CONFIG["words"] = False``) and checks that both paths give the same bits.

Every method ACCUMULATES into existing gradient buffers (dx += adjoint), so the effective bandwidth
counts dy read + dx read + dx written:
  * s2sad:  s2sad.kernels.concat_adjoint(dy, xs, 0, acc=dxs) / permute_adjoint(dy, axes, acc=dx)
  * cupy:   dxs[i] += dy[a:b] per input / dx += dy.transpose(inverse)
  * torch:  autograd backward of torch.cat / permute into .grad buffers of their own (AccumulateGrad
            adds in place; see _own_grads)
Time per call ("µs"): wall clock over back-to-back calls, synchronised at the end (host overhead
included); TB/s is computed from it.  "GPU µs": device time per call alone, measured with CUDA events
around calls queued behind a long matrix product (so the host's launch work is hidden).
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
from s2sad.kernels import concat_adjoint, permute_adjoint, launch  # noqa: E402

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


_BUSY = None


def device_time(fn, n_iter, sync=cp.cuda.Device().synchronize):
    """Device time per call: queue the calls behind ~20 ms of matrix products, so that the GPU runs
    them back to back whatever the host costs per call; time them with events."""
    global _BUSY
    if _BUSY is None:
        _BUSY = cp.ones((4096, 4096), cp.float32)
    n_iter = min(n_iter, 100)
    fn()
    sync()
    for _ in range(8):
        _BUSY @ _BUSY
    e0, e1 = cp.cuda.Event(), cp.cuda.Event()
    e0.record()
    for _ in range(n_iter):
        fn()
    e1.record()
    done_early = e0.done           # True: the queue ran dry, host overhead leaked into the timing
    e1.synchronize()
    sync()
    t = cp.cuda.get_elapsed_time(e0, e1) * 1e-3 / n_iter
    return float("nan") if done_early else t


def measure(fn, nbytes, sync=cp.cuda.Device().synchronize):
    n = iters(nbytes)
    return timeit(fn, n, sync=sync), device_time(fn, n, sync=sync)


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


def _own_grads(tensors):
    """Give each leaf a gradient buffer of its own.  Without one, the first backward makes .grad a
    view of the incoming gradient (AccumulateGrad steals it) and later backward calls add into
    dy itself: two streams of traffic instead of three, and wrong sums."""
    for t in tensors:
        t.grad = torch.zeros_like(t)


def words_off(fn, compare, fresh_acc, result):
    """With ``compare``: s2sad's time with words off, and whether both paths give the same bits
    (one call each on the same inputs into fresh copies of the accumulation buffers)."""
    if not compare:
        return {}
    a1, a2 = fresh_acc(), fresh_acc()
    fn(a1)
    launch.CONFIG["words"] = False
    try:
        fn(a2)
        same = all(bool(cp.array_equal(x.view(cp.uint8), y.view(cp.uint8)))
                   for x, y in zip(result(a1), result(a2)))
        t = measure(lambda: fn(a2), 3 * sum(x.nbytes for x in result(a2)))
    finally:
        launch.CONFIG["words"] = True
    return {"s2sad words off": t, "same bits": same}


def bench_concat(k, n, dt, compare=False):
    xs = [rand((n,), dt) for _ in range(k)]
    dy = rand((k * n,), dt)
    dxs = [cp.zeros((n,), dt) for _ in range(k)]
    nbytes = 3 * dy.nbytes
    res = {}
    res["s2sad"] = measure(lambda: concat_adjoint(dy, xs, 0, acc=dxs), nbytes)
    res.update(words_off(lambda acc: concat_adjoint(dy, xs, 0, acc=acc), compare,
                         lambda: [d.copy() for d in dxs], lambda acc: acc))

    def cupy_native():
        for i in range(k):
            dxs[i] += dy[i * n:(i + 1) * n]
    res["cupy"] = measure(cupy_native, nbytes)
    # correctness spot check
    ref = [d.copy() for d in dxs]
    concat_adjoint(dy, xs, 0, acc=dxs)
    assert all(bool(cp.allclose(d, r + dy[i * n:(i + 1) * n], rtol=1e-2, atol=1e-2))
               for i, (d, r) in enumerate(zip(dxs, ref)))
    if torch is not None:
        txs = [torch.zeros(n, dtype=TORCH_DT[dt], device="cuda", requires_grad=True) for _ in range(k)]
        y = torch.cat(txs)
        tdy = torch.from_dlpack(dy)
        _own_grads(txs)
        res["torch"] = measure(lambda: torch.autograd.backward(y, tdy, retain_graph=True), nbytes,
                               sync=torch.cuda.synchronize)
        g0 = txs[-1].grad.clone()           # the peer accumulates, as the formula counts
        torch.autograd.backward(y, tdy, retain_graph=True)
        assert bool(torch.allclose(txs[-1].grad, g0 + tdy[(k - 1) * n:], rtol=1e-2, atol=1e-2))
    return nbytes, res


def bench_permute(shape, axes, dt, peers=True, compare=False):
    x = rand(shape, dt)
    dy = cp.ascontiguousarray(x.transpose(axes))
    dx = cp.zeros(shape, dt)
    inv = tuple(np.argsort(axes))
    nbytes = 3 * dy.nbytes
    res = {}
    res["s2sad"] = measure(lambda: permute_adjoint(dy, axes, acc=dx), nbytes)
    base = dx + rand(shape, dt) if compare else None
    res.update(words_off(lambda acc: permute_adjoint(dy, axes, acc=acc), compare,
                         lambda: base.copy(), lambda acc: [acc]))
    if not peers:
        d0 = dx.copy()
        permute_adjoint(dy, axes, acc=dx)
        assert bool(cp.allclose(dx, d0 + dy.transpose(inv), rtol=1e-2, atol=1e-2))
        return nbytes, res

    def cupy_native():
        dx[...] += dy.transpose(inv)
    res["cupy"] = measure(cupy_native, nbytes)
    d0 = dx.copy()
    permute_adjoint(dy, axes, acc=dx)
    assert bool(cp.allclose(dx, d0 + dy.transpose(inv), rtol=1e-2, atol=1e-2))
    if torch is not None:
        tx = torch.zeros(shape, dtype=TORCH_DT[dt], device="cuda", requires_grad=True)
        y = tx.permute(*axes)
        tdy = torch.from_dlpack(dy)
        _own_grads([tx])
        res["torch"] = measure(lambda: torch.autograd.backward(y, tdy, retain_graph=True), nbytes,
                               sync=torch.cuda.synchronize)
        g0 = tx.grad.clone()
        torch.autograd.backward(y, tdy, retain_graph=True)
        assert bool(torch.allclose(tx.grad, g0 + tdy.permute(*inv), rtol=1e-2, atol=1e-2))
    return nbytes, res


def profile_host(out_lines):
    """Where the host time of the small s2sad calls goes (cProfile, top entries)."""
    import cProfile
    import io
    import pstats
    xs = [rand((1 << 10,), np.float32) for _ in range(8)]
    dy = rand((8 << 10,), np.float32)
    dxs = [cp.zeros((1 << 10,), np.float32) for _ in range(8)]
    g = rand((256, 256, 256), np.float32)
    acc = cp.zeros((256, 256, 256), np.float32)
    calls = {"concat 8x1K": lambda: concat_adjoint(dy, xs, 0, acc=dxs),
             "permute 256³": lambda: permute_adjoint(g, (2, 0, 1), acc=acc)}
    for name, fn in calls.items():
        fn()
        cp.cuda.Device().synchronize()
        pr = cProfile.Profile()
        pr.enable()
        for _ in range(200):
            fn()
        pr.disable()
        cp.cuda.Device().synchronize()
        buf = io.StringIO()
        pstats.Stats(pr, stream=buf).sort_stats("tottime").print_stats(12)
        out_lines += ["", f"host profile, {name}, 200 calls:", "```", buf.getvalue().strip(), "```"]


def tune():
    """Pick launch parameters on the large float32 cases (a few compiles)."""
    best = {}
    for tpb, ept in [(128, 8), (128, 16), (256, 8), (256, 16), (128, 32), (512, 8)]:
        launch.CONFIG.update(tpb=tpb, ept=ept)
        nb, r = bench_concat(8, 1 << 24, np.float32)
        best[(tpb, ept)] = nb / r["s2sad"][0] / 1e12
    (tpb, ept) = max(best, key=best.get)
    launch.CONFIG.update(tpb=tpb, ept=ept)
    return {"segments (tpb, ept) -> TB/s": best, "(tile, block y) -> TB/s": tune_permute()}


def tune_permute():
    """Pick the permute kernel's tile edge and block height on the two float32 permutes (8192²
    swap, 256³ (2, 0, 1)): each thread moves (tile / 32) x (tile / block y) elements.  The choice
    with the best smaller TB/s of the two wins."""
    tb = {}
    for tile, by in [(32, 8), (64, 8), (64, 4), (64, 2)]:
        launch.CONFIG.update(tile=tile, tile_by=by)
        r2 = [bench_permute(shape, axes, np.float32, peers=False)
              for shape, axes in [((8192, 8192), (1, 0)), ((256, 256, 256), (2, 0, 1))]]
        tb[(tile, by)] = tuple(round(nb / r["s2sad"][0] / 1e12, 3) for nb, r in r2)
    tile, by = max(tb, key=lambda k: min(tb[k]))
    launch.CONFIG.update(tile=tile, tile_by=by)
    return tb


def tune_f16():
    """Pick the float16 concat accumulation's word (4 or 8 bytes: 2 or 4 halves) on the 8x16M
    concat, and the float16 permute tile (tile edge, block height) on the two float16 permutes,
    as tune_permute does for float32 (float16 permutes move pairs of halves: a thread moves
    tile / (2 * min(32, tile / 2)) x (tile / block height) words)."""
    cw = {}
    for w in (4, 8):
        launch.CONFIG["word_acc"] = w
        nb, r = bench_concat(8, 1 << 24, np.float16)
        cw[w] = round(nb / r["s2sad"][0] / 1e12, 3)
        print(f"tune float16 concat 8x16M word_acc={w}: {cw[w]} TB/s", flush=True)
    launch.CONFIG["word_acc"] = max(cw, key=cw.get)
    tb = {"concat word_acc -> TB/s": cw}
    for tile, by in [(64, 4), (64, 8), (32, 8)]:
        launch.CONFIG["tile_wide"] = {"float16": (tile, by)}
        r2 = [bench_permute(shape, axes, np.float16, peers=False)
              for shape, axes in [((8192, 8192), (1, 0)), ((256, 256, 256), (2, 0, 1))]]
        tb[(tile, by)] = tuple(round(nb / r["s2sad"][0] / 1e12, 3) for nb, r in r2)
        print(f"tune float16 permute tile {(tile, by)}: {tb[(tile, by)]} TB/s (8192², 256³)", flush=True)
    best = max((k for k in tb if type(k) is tuple), key=lambda k: min(tb[k]))
    launch.CONFIG["tile_wide"] = {"float16": best}
    return tb


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--no-tune", action="store_true")
    ap.add_argument("--tune-permute", action="store_true", help="tune only the permute tile")
    ap.add_argument("--dtypes", default="float16,float32,float64,complex64")
    ap.add_argument("--cases", default="", help="only cases whose label contains one of these (comma-separated)")
    ap.add_argument("--launch", default=None, help="s2sad kernel launcher: cupy or numba")
    ap.add_argument("--profile", action="store_true", help="append a host profile of the small calls")
    ap.add_argument("--tune-f16", action="store_true",
                    help="tune the float16 concat word and permute tile (float16 kernels only)")
    ap.add_argument("--compare-words", action="store_true",
                    help="also time s2sad with words off (the element path) and compare the bits")
    args = ap.parse_args()
    if args.launch:
        launch.CONFIG["launch"] = args.launch
    props = cp.cuda.runtime.getDeviceProperties(0)
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    lines = [f"Card: {name}; date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; "
             f"cupy {cp.__version__}; torch {getattr(torch, '__version__', 'absent')}"]
    bw = copy_bandwidth()
    lines.append(f"Device-to-device copy (cp.copyto, 1 GiB float32, read+write): {bw:.2f} TB/s")
    tuned = tune_permute() if args.tune_permute else (None if args.no_tune else tune())
    if args.tune_f16:
        tuned = {"float16": tune_f16(), "other": tuned}
    print(lines[-1], f"\ntuning: {tuned}", flush=True)
    lines.append(f"Launch config: {dict((k, launch.CONFIG[k]) for k in ('tpb', 'ept', 'tile', 'tile_by', 'tile_wide', 'words', 'word_copy', 'word_acc'))}; "
                 f"tuning: {tuned}")
    lines.append("")
    lines.append("| case | dtype | s2sad µs | s2sad GPU µs | s2sad TB/s | %copy | cupy µs | cupy GPU µs "
                 "| cupy TB/s | torch µs | torch GPU µs | torch TB/s |")
    lines.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    cw = args.compare_words
    cases = [("concat 8x16M", lambda dt: bench_concat(8, 1 << 24, dt, compare=cw)),
             ("concat 8x1K", lambda dt: bench_concat(8, 1 << 10, dt, compare=cw)),
             ("concat 64x4K", lambda dt: bench_concat(64, 1 << 12, dt, compare=cw)),
             ("permute 8192² (1,0)", lambda dt: bench_permute((8192, 8192), (1, 0), dt, compare=cw)),
             ("permute 256³ (2,0,1)", lambda dt: bench_permute((256, 256, 256), (2, 0, 1), dt,
                                                               compare=cw))]
    if args.cases:
        cases = [c for c in cases if any(w in c[0] for w in args.cases.split(","))]
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
                t, tg = r.get(m, (None, None))
                cells.append("–" if t is None else f"{t * 1e6:.1f}")
                cells.append("–" if tg is None else f"{tg * 1e6:.1f}")
                cells.append("–" if t is None else f"{nb / t / 1e12:.3f}")
                if m == "s2sad":
                    cells.append(f"{100 * nb / t / 1e12 / bw:.0f}%")
            lines.append(f"| {label} | {dname} | " + " | ".join(cells) + " |")
            print(lines[-1], flush=True)
            if "s2sad words off" in r:
                t, tg = r["s2sad words off"]
                lines.append(f"| {label}, words off | {dname} | {t * 1e6:.1f} | {tg * 1e6:.1f} | "
                             f"{nb / t / 1e12:.3f} | {100 * nb / t / 1e12 / bw:.0f}% | same bits as "
                             f"words: {r['same bits']} | | | | | |")
                print(lines[-1], flush=True)
    lines.append("")
    lines.append(f"Kernel entry: {'raw pointers' if launch._use_pointers() else 'array arguments'}, "
                 f"launched by {launch.CONFIG['launch']} (pointer build error: {launch._state['pointer_error']}; "
                 f"CuPy launch error: {launch._state['cupy_launch_error']}; "
                 f"words build error: {launch._state['words_error']})")
    if args.profile:
        profile_host(lines)
    text = "\n".join(lines)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
