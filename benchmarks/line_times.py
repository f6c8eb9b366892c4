"""Where a Python-mode gradient spends its time: each line of the generated forward and reverse
sweeps, timed.

    PYTHONPATH=$PWD python benchmarks/line_times.py gp_lml [--repeat 200] [--top 15]

Runs one case of ``benchmarks/ratio.py`` through the derivative ``value_and_grad`` uses for its
inputs (the typed specialisation), with every top-level statement of ``f__fwd`` and ``f__bwd``
wrapped in a timer (a loop or a branch counts as one statement), and prints, per statement, the
median time over the repeats, its share of the sweep, and the generated line.  The timers cost a
little (about 0.1 µs a statement); the primal's own time is printed for the ratio.  One core and
quiet BLAS threads give steadier numbers: ``OMP_NUM_THREADS=1 taskset -c 2 ...``.
"""
import argparse
import ast
import os
import statistics
import sys
import time

os.environ.setdefault("S2SAD_CACHE", "0")
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(_HERE))
sys.path.insert(0, _HERE)

import numpy as np  # noqa: E402

import ratio  # noqa: E402
from s2sad import runtime  # noqa: E402
from s2sad.cache import reverse_derivative  # noqa: E402
from s2sad.runtime.values import type_of  # noqa: E402


class _Timed(ast.NodeTransformer):
    """Wraps each top-level statement of one function in ``_t = _pc()`` ...
    ``_acc[i] += _pc() - _t``; ``return E`` becomes ``_ret = E`` timed, then ``return _ret``."""

    def __init__(self, offset):
        self.offset = offset
        self.lines = []

    def wrap(self, fn):
        body = []
        for st in fn.body:
            i = self.offset + len(self.lines)
            self.lines.append(ast.unparse(st).split("\n")[0])
            ret = None
            if isinstance(st, ast.Return) and st.value is not None:
                st, ret = ast.Assign([ast.Name("_ret", ast.Store())], st.value), st
            body.append(ast.parse("_t = _pc()").body[0])
            body.append(st)
            body.append(ast.parse(f"_acc[{i}] += _pc() - _t").body[0])
            if ret is not None:
                body.append(ast.Return(ast.Name("_ret", ast.Load())))
        fn.body = body
        return fn


def instrumented(d):
    """(fwd, bwd, labels, acc): the derivative's two sweeps with a timer per statement."""
    tree = ast.parse(d.source)
    fns = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    fwd_name, bwd_name = d.fwd.__name__, d.bwd.__name__
    timer = _Timed(0)
    labels = []
    for name in (fwd_name, bwd_name):
        start = len(timer.lines)
        timer.wrap(fns[name])
        labels += [(name, s) for s in timer.lines[start:]]
    mod = ast.Module([fns[fwd_name], fns[bwd_name]], [])
    ast.fix_missing_locations(mod)
    acc = [0.0] * len(labels)
    ns = dict(d.fwd.__globals__)
    ns.update(_pc=time.perf_counter, _acc=acc)
    exec(compile(mod, "<timed>", "exec"), ns)
    return ns[fwd_name], ns[bwd_name], labels, acc


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("case", choices=sorted(ratio.CASES))
    ap.add_argument("--repeat", type=int, default=200)
    ap.add_argument("--top", type=int, default=0, help="only the N slowest statements")
    a = ap.parse_args()
    f, make, wrt = ratio.CASES[a.case]
    args = make(np.random.default_rng(0))
    mask = tuple(i in wrt for i in range(len(args)))
    kinds = tuple(runtime.kind_of(x) for x in args)
    d = reverse_derivative(f, mask, kinds, types=tuple(type_of(x) for x in args))
    fwd, bwd, labels, acc = instrumented(d)
    runs = []
    prim = []
    for _ in range(a.repeat):
        t0 = time.perf_counter()
        f(*args)
        prim.append(time.perf_counter() - t0)
        acc[:] = [0.0] * len(acc)
        r, tape = fwd(*args)
        bwd(tape, 1.0)
        runs.append(list(acc))
    med = [statistics.median(r[i] for r in runs) for i in range(len(labels))]
    p = statistics.median(prim)
    sweeps = {}
    for (name, _), t in zip(labels, med):
        sweeps[name] = sweeps.get(name, 0.0) + t
    total = sum(sweeps.values())
    print(f"# {a.case}: primal {p * 1e6:.1f} µs; " + "; ".join(
        f"{n} {t * 1e6:.1f} µs" for n, t in sweeps.items()) +
        f"; ratio (sum of medians) {total / p:.2f}")
    order = range(len(labels))
    if a.top:
        order = sorted(order, key=lambda i: -med[i])[:a.top]
    for i in order:
        name, text = labels[i]
        print(f"{med[i] * 1e6:9.1f} µs {100 * med[i] / sweeps[name]:5.1f}%  "
              f"{name.rsplit('__', 1)[-1]:3s}  {text[:110]}")


if __name__ == "__main__":
    main()
