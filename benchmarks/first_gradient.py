"""Issue 13: the cost of a new process — `import numpy`, `import s2sad`, and the first gradient cold
(empty disk cache) and warm (read from the disk cache), for the README quickstart and for the
attention model of examples/gpu_attention.py on NumPy arrays.

Each number is the median over --runs new processes (each running a small .py file), timed inside the process
with time.perf_counter.  "first gradient" is from after `import s2sad` (the decorator, the
derivative, one value_and_grad call) to its result.

    python benchmarks/first_gradient.py [--runs 7]
"""
import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

IMPORT_NUMPY = "import time; t = time.perf_counter(); import numpy; print(time.perf_counter() - t)"
IMPORT_S2SAD = ("import numpy, time; t = time.perf_counter(); import s2sad; "
                "print(time.perf_counter() - t)")

QUICKSTART = '''
import time
import numpy as np
import s2sad
t = time.perf_counter()

@s2sad.differentiate
def loss(W, x, y):
    h = np.tanh(W @ x)
    err = h - y
    return 0.5 * np.sum(err * err)

rng = np.random.default_rng(0)
W, x, y = rng.standard_normal((3, 4)), rng.standard_normal(4), rng.standard_normal(3)
value, gW = loss.value_and_grad(W, x, y)
print(time.perf_counter() - t)
'''

ATTENTION = '''
import sys, time
sys.path.insert(0, {tests!r})
import numpy as np
import s2sad
t = time.perf_counter()
from attention_loader import load
m = load()
params, teacher = m.init(np, 32, dtype="float64")
x, y = m.data(np, teacher, 4, 16, 32, dtype="float64")
g = s2sad.grad(m.loss, wrt=(0, 1, 2, 3, 4))(*params, x, y)
print(time.perf_counter() - t)
'''


_SCRIPTS = tempfile.mkdtemp(prefix="s2sad-bench-scripts-")


def timed(code, env, runs):
    """(median, min) in ms of what ``code`` (run as a .py file in new processes) prints."""
    path = os.path.join(_SCRIPTS, f"bench_{abs(hash(code))}.py")
    with open(path, "w") as fh:
        fh.write(code)
    out = []
    for _ in range(runs):
        r = subprocess.run([sys.executable, path], capture_output=True, text=True, env=env,
                           cwd=ROOT, timeout=600)
        if r.returncode != 0:
            raise SystemExit(r.stderr)
        out.append(float(r.stdout.strip().splitlines()[-1]) * 1e3)
    return statistics.median(out), min(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    base = dict(os.environ, PYTHONPATH=ROOT)
    rows = []
    rows.append(("import numpy", *timed(IMPORT_NUMPY, base, args.runs)))
    rows.append(("import s2sad (after numpy)", *timed(IMPORT_S2SAD, base, args.runs)))
    for name, code in (("quickstart", QUICKSTART),
                       ("attention model", ATTENTION.format(tests=os.path.join(ROOT, "tests",
                                                                              "gpu")))):
        folder = tempfile.mkdtemp(prefix="s2sad-bench-")
        try:
            env = dict(base, S2SAD_CACHE_DIR=folder)
            cold = []
            for _ in range(args.runs):           # cold: an empty cache folder each time
                for f in os.listdir(folder):
                    os.unlink(os.path.join(folder, f))
                cold.append(timed(code, env, 1)[0])
            rows.append((f"{name}: first gradient, cold", statistics.median(cold), min(cold)))
            rows.append((f"{name}: first gradient, from disk", *timed(code, env, args.runs)))
            rows.append((f"{name}: first gradient, S2SAD_CACHE=0",
                         *timed(code, dict(env, S2SAD_CACHE="0"), args.runs)))
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    shutil.rmtree(_SCRIPTS, ignore_errors=True)
    if args.json:
        print(json.dumps(rows))
        return
    print(f"Python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs, "
          f"median (min) of {args.runs} new processes")
    print(f"| {'what':45} | median ms | min ms |")
    print(f"|{'-' * 47}|-----------|--------|")
    for what, med, low in rows:
        print(f"| {what:45} | {med:9.1f} | {low:6.1f} |")


if __name__ == "__main__":
    main()
