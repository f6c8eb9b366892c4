"""Issue 13: the cost of a new process — `import numpy`, `import s2sad`, and the first gradient cold
(empty disk cache) and warm (read from the disk cache), for the README quickstart and for the
attention model of examples/gpu_attention.py on NumPy arrays.

Each number is the median over --runs new processes (each running a small .py file), timed inside
the process with time.perf_counter; the rows' runs are interleaved (one process of each row per
round), so that a change in the machine's load hits every row alike.  "first gradient" is from
after `import s2sad` (and `numpy.random`, which makes the data) to the first gradient: the
decorator or `s2sad.grad`, the derivative (built, or read from disk) and one call; for the
attention model also importing its module (which declares a rule: `s2sad.defzero`, so the rule
tables load in full) and making its parameters and data.  "import s2sad" rows: after `import numpy` (s2sad's own part), and from nothing (which
imports NumPy too: the target is <= 1.5x `import numpy`).

Python's bytecode cache is on, as for any installed package: the processes write and read their
`.pyc` files under a temporary PYTHONPYCACHEPREFIX (PYTHONDONTWRITEBYTECODE is dropped), filled by
one unmeasured run of each script first.  --no-bytecode measures s2sad compiled from source in
every process instead (NumPy keeps its installed bytecode).

    python benchmarks/first_gradient.py [--runs 7] [--no-bytecode]
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
IMPORT_BOTH = "import time; t = time.perf_counter(); import s2sad; print(time.perf_counter() - t)"

QUICKSTART = '''
import time
import numpy as np
import s2sad
rng = np.random.default_rng(0)
W, x, y = rng.standard_normal((3, 4)), rng.standard_normal(4), rng.standard_normal(3)
t = time.perf_counter()

@s2sad.differentiate
def loss(W, x, y):
    h = np.tanh(W @ x)
    err = h - y
    return 0.5 * np.sum(err * err)

value, gW = loss.value_and_grad(W, x, y)
print(time.perf_counter() - t)
'''

ATTENTION = '''
import sys, time
sys.path.insert(0, {tests!r})
import numpy as np
import s2sad
np.random.default_rng(0)          # (NumPy's random module, which the data need, is imported)
t = time.perf_counter()
from attention_loader import load
m = load()
params, teacher = m.init(np, 32, dtype="float64")
x, y = m.data(np, teacher, 4, 16, 32, dtype="float64")
g = s2sad.grad(m.loss, wrt=(0, 1, 2, 3, 4))(*params, x, y)
print(time.perf_counter() - t)
'''


_SCRIPTS = tempfile.mkdtemp(prefix="s2sad-bench-scripts-")


def script(code):
    path = os.path.join(_SCRIPTS, f"bench_{abs(hash(code))}.py")
    with open(path, "w") as fh:
        fh.write(code)
    return path


def once(path, env):
    """What the script at ``path`` prints, in ms (one new process)."""
    r = subprocess.run([sys.executable, path], capture_output=True, text=True, env=env,
                       cwd=ROOT, timeout=600)
    if r.returncode != 0:
        raise SystemExit(r.stderr)
    return float(r.stdout.strip().splitlines()[-1]) * 1e3


def interleaved(rows, runs):
    """{name: [ms per run]} for rows (name, path, env, before) run in rounds of one process each;
    ``before()``, when given, runs before each of that row's processes (emptying a folder)."""
    out = {name: [] for name, _, _, _ in rows}
    for _ in range(runs):
        for name, path, env, before in rows:
            if before is not None:
                before()
            out[name].append(once(path, env))
    return out


def _empty(folder):
    def empty():
        for f in os.listdir(folder):
            os.unlink(os.path.join(folder, f))
    return empty


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--no-bytecode", action="store_true",
                    help="compile s2sad from source in every process (no .pyc)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    base = dict(os.environ, PYTHONPATH=ROOT)
    for k in ("S2SAD_CACHE", "S2SAD_LOG", "PYTHONPYCACHEPREFIX", "PYTHONDONTWRITEBYTECODE"):
        base.pop(k, None)
    pyc = tempfile.mkdtemp(prefix="s2sad-bench-pyc-")
    if args.no_bytecode:
        base["PYTHONDONTWRITEBYTECODE"] = "1"
    else:
        base["PYTHONPYCACHEPREFIX"] = pyc
    load0 = os.getloadavg()
    folders = []
    rows = [("import numpy", script(IMPORT_NUMPY), base, None),
            ("import s2sad (after numpy)", script(IMPORT_S2SAD), base, None),
            ("import s2sad (from nothing)", script(IMPORT_BOTH), base, None)]
    for name, code in (("quickstart", QUICKSTART),
                       ("attention model", ATTENTION.format(tests=os.path.join(ROOT, "tests",
                                                                              "gpu")))):
        folder = tempfile.mkdtemp(prefix="s2sad-bench-")
        folders.append(folder)
        env = dict(base, S2SAD_CACHE_DIR=folder)
        path = script(code)
        # cold: an empty cache folder each time; then (the folder holding the entries the cold
        # run wrote) from disk; and with the disk cache off
        rows.append((f"{name}: first gradient, cold", path, env, _empty(folder)))
        rows.append((f"{name}: first gradient, from disk", path, env, None))
        rows.append((f"{name}: first gradient, S2SAD_CACHE=0", path, dict(env, S2SAD_CACHE="0"),
                     None))
    try:
        for _, path, env, before in rows:         # fills the bytecode cache (not measured)
            if before is not None:
                before()
            once(path, env)
        got = interleaved(rows, args.runs)
    finally:
        for folder in folders + [pyc, _SCRIPTS]:
            shutil.rmtree(folder, ignore_errors=True)
    load1 = os.getloadavg()
    table = [(name, statistics.median(v), min(v)) for name, v in got.items()]
    if args.json:
        print(json.dumps({"rows": table, "load": [load0, load1]}))
        return
    med = dict((name, m) for name, m, _ in table)
    print(f"Python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs, "
          f"median (min) of {args.runs} new processes, bytecode "
          f"{'off' if args.no_bytecode else 'on'}; load average {load0[0]:.1f} before, "
          f"{load1[0]:.1f} after")
    print(f"| {'what':46} | median ms | min ms |")
    print(f"|{'-' * 48}|-----------|--------|")
    for what, m, low in table:
        print(f"| {what:46} | {m:9.1f} | {low:6.1f} |")
    print(f"import s2sad (from nothing) / import numpy: "
          f"{med['import s2sad (from nothing)'] / med['import numpy']:.2f}x (target <= 1.5x)")


if __name__ == "__main__":
    main()
