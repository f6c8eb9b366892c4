"""The command line: ``python -m tests.fuzz --n 20000 --seed S``.

Program ``k`` of seed ``S`` is generated from ``random.Random("S:k")`` and judged at a point drawn
from the same pair, so ``--replay S:k`` reproduces any one of them.  ``--n`` counts judged programs
(agree + refused + wrong + crash); discarded ones (the plain function raises, or is not
differentiable at the point) are replaced by the next ones.  The result does not depend on
``--jobs``.
"""
import argparse
import collections
import multiprocessing
import os
import sys
import time
import zlib

from .grammar import TAGS, random_program
from .known import KNOWN_BROKEN
from .oracle import ALL_MODES, DISCARDED, JUDGED, MODES, check_source, njit_primal


def point_seed(seed, k):
    return zlib.crc32(f"{seed}:{k}".encode())


def program_for(seed, k, exclude=frozenset()):
    return random_program(f"{seed}:{k}", exclude)


def _one(task):
    seed, k, exclude, modes, timeout = task[:5]
    prog = program_for(seed, k, exclude)
    res = check_source(prog.source, seed=point_seed(seed, k), modes=modes, timeout=timeout)
    fail = res.outcome in ("wrong", "crash")
    njit = None
    if len(task) > 5 and task[5] and res.outcome == "fellback":
        njit = njit_primal(prog.source, point_seed(seed, k))
    return {
        "njit_primal": njit,
        "k": k,
        "outcome": res.outcome,
        "modes": {m: (r.outcome, r.signature, r.detail) for m, r in res.modes.items()},
        "signature": res.signature,
        "detail": res.detail,
        "tags": sorted(prog.tags),
        "source": prog.source if fail or res.outcome in ("refused", "fellback") else None,
        "result": res if fail else None,
    }


def _run_tasks(tasks, jobs):
    if jobs <= 1:
        for t in tasks:
            yield _one(t)
        return
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(jobs, maxtasksperchild=200) as pool:
        yield from pool.imap(_one, tasks, chunksize=4)


def run(n, seed, jobs=1, exclude=frozenset(), modes=MODES, timeout=60, progress=None,
        njit=False):
    """The first ``n`` judged programs of ``seed`` (a list of row dicts, by k) and the
    discarded ones.  ``njit``: a fallen-back program's row says whether numba compiles its plain
    function (``njit_primal``)."""
    judged, discarded = [], []
    k0 = 0
    t0 = time.time()
    while len(judged) < n:
        need = n - len(judged)
        batch = need + max(8, need // 20)
        tasks = [(seed, k, frozenset(exclude), tuple(modes), timeout, njit)
                 for k in range(k0, k0 + batch)]
        k0 += batch
        for row in _run_tasks(tasks, jobs):
            if row["outcome"] in JUDGED:
                if len(judged) < n:
                    judged.append(row)
            else:
                discarded.append(row)
            if progress and (len(judged) % max(1, n // 20) == 0) and row["outcome"] in JUDGED:
                c = collections.Counter(r["outcome"] for r in judged)
                progress(f"  {len(judged)}/{n} judged in {time.time() - t0:.0f}s: "
                         + " ".join(f"{o}={c[o]}" for o in JUDGED))
    last = judged[-1]["k"] if judged else -1
    discarded = [r for r in discarded if r["k"] < last]
    return judged, discarded


def summary_line(seed, judged, discarded, seconds, modes, exclude):
    c = collections.Counter(r["outcome"] for r in judged)
    d = collections.Counter(r["outcome"] for r in discarded)
    ex = f" exclude={','.join(sorted(exclude))}" if exclude else ""
    return (f"fuzz seed={seed} n={len(judged)} modes={','.join(modes)}{ex}: "
            + " ".join(f"{o}={c[o]}" for o in JUDGED)
            + " (discarded: " + " ".join(f"{o}={d[o]}" for o in DISCARDED) + f") in {seconds:.0f}s")


def breakdown(judged):
    per = collections.defaultdict(collections.Counter)
    for r in judged:
        for t in r["tags"]:
            per[t][r["outcome"]] += 1
    lines = [f"{'construct':<20} {'programs':>8} " + " ".join(f"{o:>8}" for o in JUDGED)]
    for t in sorted(per, key=lambda t: (-per[t]["wrong"] - per[t]["crash"], t)):
        c = per[t]
        lines.append(f"{t:<20} {sum(c.values()):>8} " + " ".join(f"{c[o]:>8}" for o in JUDGED))
    return "\n".join(lines)


def njit_gaps(judged, seed):
    """The fallen-back programs whose plain function numba compiles, counted by the first line of
    each mode's fallback reason (numbers and names left out)."""
    import re
    fell = [r for r in judged if r["outcome"] == "fellback"]
    gaps = [r for r in fell if r.get("njit_primal")]
    why = collections.Counter()
    first = {}
    for r in gaps:
        for m, (o, _, detail) in sorted(r["modes"].items()):
            if o == "fellback":
                text = re.sub(r"\d+", "N", str(detail).split(" here: ", 1)[-1])[:100]
                why[(m, text)] += 1
                first.setdefault((m, text), f"{seed}:{r['k']}")
    lines = [f"fell back: {len(fell)}; of those, numba.njit compiles the plain f: {len(gaps)}"]
    lines += [f"  {n:4d} {m}: {text} (e.g. {first[(m, text)]})"
              for (m, text), n in why.most_common(20)]
    return "\n".join(lines)


def failure_classes(judged, outcomes=("wrong", "crash")):
    groups = collections.OrderedDict()
    for r in judged:
        if r["outcome"] in outcomes:
            groups.setdefault(r["signature"], []).append(r)
    return groups


def _shrink_task(task):
    from .shrink import shrink
    source, result, pseed, budget = task
    return shrink(source, result, seed=pseed, budget_s=budget)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=200, help="judged programs to run (default 200)")
    ap.add_argument("--seed", default="0", help="seed (any string; default 0)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                    help="worker processes (default: all cores)")
    ap.add_argument("--modes", default="rev,fwd",
                    help="comma separated, of rev, fwd, revjit, fwdjit (jit=True: numba; each "
                         "also compared with its Python mode); default rev,fwd")
    ap.add_argument("--exclude", default="", help="constructs (tags) to leave out, comma separated")
    ap.add_argument("--exclude-known", action="store_true",
                    help="leave out the constructs in tests/fuzz/known.py KNOWN_BROKEN")
    ap.add_argument("--timeout", type=int, default=60, help="seconds per program")
    ap.add_argument("--breakdown", action="store_true", help="print the per-construct table")
    ap.add_argument("--show-failures", action="store_true",
                    help="print a program (and its outcome) for each failure class")
    ap.add_argument("--show-refusals", action="store_true", help="list the refusal classes")
    ap.add_argument("--shrink", action="store_true",
                    help="shrink one program of each failure class and print it")
    ap.add_argument("--shrink-budget", type=float, default=300.0, help="seconds per shrink")
    ap.add_argument("--shrink-per-class", type=int, default=1,
                    help="programs to shrink per failure class (distinct results are printed)")
    ap.add_argument("--replay", metavar="SEED:K", help="print program K of SEED and judge it")
    ap.add_argument("--file", help="judge the program in this file (defines f(x, y))")
    ap.add_argument("--list-tags", action="store_true", help="print the construct names")
    ap.add_argument("--njit-primal", action="store_true",
                    help="with jit modes: count the fallbacks whose plain f numba.njit compiles "
                         "(the compiled mode's own gaps), by reason")
    ap.add_argument("--save", metavar="PATH",
                    help="write every wrong/crash/refused/fellback program (JSON lines: id, "
                         "outcome, "
                         "signature, constructs, source, report) to PATH")
    a = ap.parse_args(argv)

    modes = tuple(m for m in a.modes.split(",") if m)
    if set(modes) - set(ALL_MODES):
        ap.error(f"unknown modes: {', '.join(sorted(set(modes) - set(ALL_MODES)))} "
                 f"(of {', '.join(ALL_MODES)})")
    exclude = set(t for t in a.exclude.split(",") if t)
    unknown = exclude - TAGS
    if unknown:
        ap.error(f"unknown constructs: {', '.join(sorted(unknown))} (see --list-tags)")
    if a.exclude_known:
        exclude |= KNOWN_BROKEN
    if a.list_tags:
        print(" ".join(sorted(TAGS)))
        return 0
    if a.replay or a.file:
        if a.replay:
            seed, k = a.replay.rsplit(":", 1)
            prog = program_for(seed, int(k), exclude)
            src, pseed = prog.source, point_seed(seed, int(k))
            print(src)
            print("constructs:", " ".join(sorted(prog.tags)))
        else:
            with open(a.file) as fh:
                src = fh.read()
            pseed = 0
        res = check_source(src, seed=pseed, modes=modes, timeout=a.timeout)
        print(res.report())
        if a.shrink and res.outcome in ("wrong", "crash"):
            from .shrink import shrink
            print("shrunk:")
            print(shrink(src, res, seed=pseed, budget_s=a.shrink_budget))
        return 1 if res.outcome in ("wrong", "crash") else 0

    t0 = time.time()
    log = lambda s: print(s, file=sys.stderr, flush=True)  # noqa: E731
    judged, discarded = run(a.n, a.seed, a.jobs, exclude, modes, a.timeout, progress=log,
                            njit=a.njit_primal)
    secs = time.time() - t0
    if a.njit_primal:
        print(njit_gaps(judged, a.seed))
        print()
    if a.save:
        import json
        with open(a.save, "w") as fh:
            for r in judged:
                if r["source"] is None:
                    continue
                fh.write(json.dumps({
                    "id": f"{a.seed}:{r['k']}", "outcome": r["outcome"],
                    "signature": r["signature"], "constructs": r["tags"], "source": r["source"],
                    "report": r["result"].report() if r["result"] else
                    "\n".join(f"{m}: {o[0]}: {o[2]}" for m, o in r["modes"].items())}) + "\n")
    if a.breakdown:
        print(breakdown(judged))
        print()
    elif any(r["outcome"] in ("wrong", "crash") for r in judged):
        print("constructs in failing programs:")
        print(breakdown([r for r in judged if r["outcome"] in ("wrong", "crash")]))
        print()
    groups = failure_classes(judged)
    if groups:
        again = " ".join(f"--{k} {v}" for k, v in (("exclude", a.exclude), ("modes", a.modes)) if v
                         and v != "rev,fwd") + (" --exclude-known" if a.exclude_known else "")
        print(f"failure classes (signature: count, first programs; see one with "
              f"python -m tests.fuzz --replay {a.seed}:K {again}".rstrip() + "):")
        for sig, rows in groups.items():
            ids = ", ".join(f"{a.seed}:{r['k']}" for r in rows[:5])
            print(f"  {sig}: {len(rows)} ({ids})")
        print()
    if a.show_refusals:
        ref = failure_classes(judged, ("refused",))
        print("refusal classes:")
        for sig, rows in sorted(ref.items(), key=lambda kv: -len(kv[1])):
            print(f"  {sig}: {len(rows)} (e.g. {a.seed}:{rows[0]['k']}: "
                  f"{rows[0]['modes'][rows[0]['signature'].split(':')[0]][2][:150]})")
        print()
    if a.show_failures:
        for sig, rows in groups.items():
            r = rows[0]
            print(f"=== {sig} ({a.seed}:{r['k']}; constructs: {' '.join(r['tags'])})")
            print(r["source"])
            print(r["result"].report())
            print()
    if a.shrink and groups:
        which = [(sig, r) for sig, rows in groups.items() for r in rows[:a.shrink_per_class]]
        tasks = [(r["source"], r["result"], point_seed(a.seed, r["k"]), a.shrink_budget)
                 for _, r in which]
        if a.jobs > 1:
            ctx = multiprocessing.get_context("fork")
            with ctx.Pool(min(a.jobs, len(tasks))) as pool:
                small = pool.map(_shrink_task, tasks)
        else:
            small = [_shrink_task(t) for t in tasks]
        shown = set()
        for (sig, r), s in zip(which, small):
            if s in shown:
                continue
            shown.add(s)
            print(f"=== shrunk: {sig} (from {a.seed}:{r['k']}; constructs: {' '.join(r['tags'])})")
            print(s)
    print(summary_line(a.seed, judged, discarded, secs, modes, exclude))
    c = collections.Counter(r["outcome"] for r in judged)
    return 1 if c["wrong"] or c["crash"] else 0
