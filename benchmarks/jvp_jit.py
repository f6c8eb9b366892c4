"""Forward mode, Python vs ``jit=True``, side by side in one run: ``s2sad.jvp`` of
``benchmarks/ratio.py``'s loop cases (Mooncake's ``_sum_sin_1000`` and ``_sum_1000``: a while
loop through ``_sum(f, x)``), interleaved rounds, best time of each.

    python benchmarks/jvp_jit.py [--rounds 15] [--only _sum_sin_1000]

Prints microseconds per call and each over the NumPy primal's time; the compile time is reported
apart (the first compiled call).  Quote only ratios measured in one run.
"""
import argparse
import os
import sys
import time
import timeit
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ratio  # noqa: E402

import s2sad  # noqa: E402

CASES = ("_sum_sin_1000", "_sum_1000")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--only", action="append")
    a = ap.parse_args(argv)
    warnings.simplefilter("error", s2sad.errors.JitFallbackWarning)
    rng = np.random.default_rng(0)
    print(f"{'case':16s} {'primal us':>10s} {'Python jvp':>18s} {'jit jvp':>18s} "
          f"{'Python/jit':>10s} {'compile s':>9s}")
    for name in a.only or CASES:
        f, make, _ = ratio.CASES[name]
        args = make(rng)
        tans = tuple(rng.standard_normal(np.shape(x)) for x in args)
        t0 = time.perf_counter()
        jv = s2sad.jvp(f, args, tans, jit=True)
        compile_s = time.perf_counter() - t0
        pv = s2sad.jvp(f, args, tans)
        assert abs(jv[1] - pv[1]) <= 1e-12 * max(1.0, abs(pv[1])), (jv, pv)
        calls = {"primal": lambda: f(*args),
                 "python": lambda: s2sad.jvp(f, args, tans),
                 "jit": lambda: s2sad.jvp(f, args, tans, jit=True)}
        best = {k: float("inf") for k in calls}
        for _ in range(a.rounds):
            for k, c in calls.items():
                n = 200 if k == "jit" else 20
                best[k] = min(best[k], min(timeit.repeat(c, number=n, repeat=3)) / n)
        us = {k: v * 1e6 for k, v in best.items()}
        print(f"{name:16s} {us['primal']:10.1f} {us['python']:9.1f} ({us['python'] / us['primal']:5.2f}x)"
              f" {us['jit']:9.1f} ({us['jit'] / us['primal']:5.3f}x) "
              f"{us['python'] / us['jit']:9.1f}x {compile_s:9.2f}")


if __name__ == "__main__":
    main()
