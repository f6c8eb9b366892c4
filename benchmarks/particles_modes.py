"""Side by side: examples/particles_numba.py's loss, its njit primal, and value_and_grad in Python
mode (jit=False) and Numba mode (jit=True); best of N calls each, in alternating rounds.

Run:  python benchmarks/particles_modes.py [--repeat 10] [--rounds 2] [--steps 200] [--particles 16]
      [--no-python]   (Python mode takes about a second per call here)

To compare two trees, run it from outside the repository with PYTHONPATH=<tree> (the package is
installed editable; the current directory would win) and S2SAD_CACHE=0.
"""
import argparse
import os
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--particles", type=int, default=16)
    p.add_argument("--no-python", action="store_true")
    a = p.parse_args(argv)
    import particles_numba as P
    import s2sad
    from s2sad.errors import JitFallbackWarning
    warnings.simplefilter("error", JitFallbackWarning)
    rng = np.random.default_rng(0)
    n = a.particles
    args = (np.arange(1, n + 1) + 0.1 * rng.standard_normal(n), 0.3 * rng.standard_normal(n),
            2.0, 0.1, 0.01, a.steps, np.arange(1, n + 1) * 1.05)
    wrt = ("v0", "k", "c")
    P.loss(*args)
    jt = s2sad.value_and_grad(P.loss, wrt=wrt, jit=True)
    vj, gj = jt(*args)
    py = None if a.no_python else s2sad.value_and_grad(P.loss, wrt=wrt, jit=False)
    if py is not None:
        vp, gp = py(*args)
        diff = max(float(np.max(np.abs(np.asarray(x) - np.asarray(y)))) for x, y in zip(gj, gp))
        print(f"|jit - python| = {diff:.1e} (values {vj!r} / {vp!r})")
    print(f"s2sad from {os.path.dirname(s2sad.__file__)}; {n} particles, {a.steps} steps")
    for r in range(a.rounds):
        tp = P.best_time(lambda: P.loss(*args), a.repeat)
        tj = P.best_time(lambda: jt(*args), a.repeat)
        line = f"round {r}: primal {tp * 1e3:.4f} ms | jit {tj * 1e3:.3f} ms ({tj / tp:.1f}x)"
        if py is not None:
            tpy = P.best_time(lambda: py(*args), max(1, a.repeat // 5))
            line += f" | python {tpy * 1e3:.1f} ms ({tpy / tp:.0f}x)"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
