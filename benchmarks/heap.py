"""Gradient time in fresh processes, with and without s2sad's settling of glibc's heap thresholds
(``s2sad/runtime/heap.py``; ``S2SAD_MALLOC=0`` turns it off).

    python heap.py [--cases simple_mlp,gp_lml] [--procs 8] [--threads 1]

Each case runs in ``--procs`` fresh processes per setting, the settings alternating, with the
disk cache on as users have it (a temporary ``S2SAD_CACHE_DIR``, filled by one process first: the
derivative is loaded, not built, which frees less, and that is what leaves glibc's thresholds
low; ``--no-disk-cache`` builds it in every process).  A process makes ``value_and_grad`` of a
``ratio.py`` case, calls it once, counts the page faults of 100
more calls (``ru_minflt``) and keeps the best of 7 rounds of 200 calls (200 for the primal too).
Printed: per setting, the gradient / primal ratio of each process, their median, and the page
faults per call.  Only on Linux (``resource``); the settling itself only on glibc.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, {here!r})
import numpy as np, ratio, s2sad
f, make, wrt = ratio.CASES[{case!r}]
args = ratio.case_inputs({case!r})
g = s2sad.value_and_grad(f, wrt=wrt if len(wrt) > 1 else wrt[0])
g(*args)

def best(fn, n=200):
    b = float("inf")
    for _ in range(7):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        b = min(b, (time.perf_counter() - t) / n)
    return b

f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(100):
    g(*args)
faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0) / 100
tp, tg = best(lambda: f(*args)), best(lambda: g(*args))
print(json.dumps({{"primal": tp, "grad": tg, "faults": faults}}))
"""


def run_one(case, setting, threads, cache_dir):
    env = dict(os.environ, S2SAD_MALLOC=setting)
    if cache_dir is None:
        env["S2SAD_CACHE"] = "0"
    else:
        env.update(S2SAD_CACHE="1", S2SAD_CACHE_DIR=cache_dir)
    for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[v] = str(threads)
    out = subprocess.run([sys.executable, "-c", CHILD.format(here=HERE, case=case)], env=env,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", default="simple_mlp")
    p.add_argument("--procs", type=int, default=8)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--no-disk-cache", action="store_true")
    a = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as d:
        table(a, None if a.no_disk_cache else d)


def table(a, cache_dir):
    settings = (("off (S2SAD_MALLOC=0)", "0"), ("on (default)", "1"))
    print("| case | heap settling | gradient / primal, each process | median | page faults "
          "per call |")
    print("|---|---|---|---:|---:|")
    for case in a.cases.split(","):
        if cache_dir is not None:
            run_one(case, "1", a.threads, cache_dir)          # (fills the disk cache)
        got = {s: [] for _, s in settings}
        for _ in range(a.procs):
            for _, s in settings:
                got[s].append(run_one(case, s, a.threads, cache_dir))
        for label, s in settings:
            ratios = [r["grad"] / r["primal"] for r in got[s]]
            faults = statistics.median(r["faults"] for r in got[s])
            print(f"| {case} | {label} | {' '.join(f'{x:.2f}' for x in ratios)} | "
                  f"{statistics.median(ratios):.2f} | {faults:.0f} |")


if __name__ == "__main__":
    main()
