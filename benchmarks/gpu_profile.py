"""Where a GPU step's device time goes: kernel-by-kernel, s2sad against PyTorch eager.

Runs the steps of ``gpu_step.py`` (choose with ``--only``) under ``torch.profiler`` with CUDA
activity. CUPTI records every kernel and memory copy the process launches, CuPy's and Numba's as
well as PyTorch's, so one profiler gives both sides. For each side it prints the kernels grouped
by name (calls, total µs, share), the number of launches, and the totals: the rows that s2sad has
and PyTorch has not are the device work to remove.

    PYTHONPATH=$PWD:$PWD/build/gpu_deps NUMBA_ENABLE_CUDASIM=0 \
        python benchmarks/gpu_profile.py --only "B32" --top 25

Needs CuPy, PyTorch and an NVIDIA GPU. No timings are asserted anywhere; this is a reading aid.
"""
import argparse
import collections
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)

import gpu_step  # noqa: E402


def kernels(prof):
    """(name, device µs) for every kernel and memory operation the profiler saw."""
    out = []
    for ev in prof.events():
        dev = getattr(ev, "device_type", None)
        if dev is None or "CUDA" not in str(dev):
            continue
        us = getattr(ev, "device_time", None)
        if us is None:
            us = getattr(ev, "cuda_time", 0.0)
        out.append((ev.name, float(us)))
    return out


def profile(fn, sync, calls):
    import torch
    from torch.profiler import ProfilerActivity, profile as tprofile
    for _ in range(3):
        fn()
    sync()
    torch.cuda.synchronize()
    with tprofile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        sync()
        torch.cuda.synchronize()
    return kernels(prof)


def short(name, width=70):
    name = name.replace("\n", " ")
    return name if len(name) <= width else name[:width - 3] + "..."


def summary(label, ks, calls, top):
    by = collections.defaultdict(lambda: [0, 0.0])
    for name, us in ks:
        by[name][0] += 1
        by[name][1] += us
    total = sum(us for _, us in ks) / calls
    print(f"\n### {label}: {len(ks) / calls:.0f} device operations, {total:.1f} µs per call")
    print("| kernel | per call | µs per call | share |")
    print("|---|---:|---:|---:|")
    rows = sorted(by.items(), key=lambda kv: -kv[1][1])
    for name, (n, us) in rows[:top]:
        print(f"| `{short(name)}` | {n / calls:g} | {us / calls:.1f} | "
              f"{100 * us / max(total * calls, 1e-9):.1f}% |")
    if len(rows) > top:
        rest = sum(us for _, (n, us) in rows[top:]) / calls
        print(f"| ({len(rows) - top} more names) | | {rest:.1f} | |")
    return total


def host_profile(fn, sync, calls, top):
    """cProfile of ``calls`` plain calls (after a warm-up): where the host time goes."""
    import cProfile
    import io
    import pstats
    for _ in range(3):
        fn()
    sync()
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(calls):
        fn()
    sync()
    pr.disable()
    out = io.StringIO()
    pstats.Stats(pr, stream=out).sort_stats("tottime").print_stats(top)
    print(f"\n### host: cProfile of {calls} calls, by own time\n```")
    print(out.getvalue()[:6000])
    print("```")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", default="B32", help="profile the steps whose name contains this")
    ap.add_argument("--calls", type=int, default=5)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--graph", action="store_true", help="also profile s2sad with graph=True")
    ap.add_argument("--host", action="store_true",
                    help="also the host side of plain s2sad: cProfile's top functions by own time")
    args = ap.parse_args(argv)
    import cupy
    import numpy as np
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    import s2sad
    sync = cupy.cuda.Device().synchronize
    for case in gpu_step.cases(False, False):
        name, step, port, params_np, data_np, names = case
        if args.only not in name:
            continue
        print(f"\n## {name}")
        dt = np.float32
        params = [cupy.asarray(p, dt) for p in params_np]
        data = [cupy.asarray(d, dt) for d in data_np]
        variants = [("s2sad", s2sad.value_and_grad(step, wrt=tuple(range(len(params)))))]
        if args.graph:
            variants.append(("s2sad graph=True",
                             s2sad.value_and_grad(step, wrt=tuple(range(len(params))), graph=True)))
        if args.host:
            host_profile(lambda: variants[0][1](*params, *data), sync, 20, args.top)
        totals = {}
        for label, vg in variants:
            ks = profile(lambda: vg(*params, *data), sync, args.calls)
            totals[label] = summary(label, ks, args.calls, args.top)
        tp = [torch.tensor(p, dtype=torch.float32, device="cuda", requires_grad=True)
              for p in params_np]
        td = [torch.tensor(d, dtype=torch.float32, device="cuda") for d in data_np]

        def torch_step():
            for p in tp:
                p.grad = None
            loss = port(*tp, *td)
            loss.backward()
            return loss
        ks = profile(torch_step, torch.cuda.synchronize, args.calls)
        totals["PyTorch"] = summary("PyTorch eager", ks, args.calls, args.top)
        print("\n" + ", ".join(f"{k}: {v:.1f} µs" for k, v in totals.items()))


if __name__ == "__main__":
    main()
