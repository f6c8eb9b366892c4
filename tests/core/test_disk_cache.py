"""Issue 13: the on-disk derivative cache (s2sad/diskcache.py), shared between processes.

Each test runs user scripts in new processes with its own cache folder; a script prints the
gradient it got, the hand-written gradient's agreement, and the disk cache's counters (hits:
entries read, misses: derivatives built, writes)."""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _env(cache):
    """The environment of a user's process: s2sad first on its path, the cache in ``cache``."""
    return dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]),
                S2SAD_CACHE_DIR=str(cache))

SCRIPT = '''
import json, sys, warnings
import numpy as np
import s2sad
from s2sad import diskcache
warnings.simplefilter("error")          # (the cache must not warn: co_lnotab on Python 3.12)
K = {K}

def helper(a):
    return np.sin(a) * 2.0

def loss(W, x, y):
    h = np.tanh(W @ x)
    err = h - y
    return 0.5 * np.sum(err * err) + K * np.sum(helper(h))

{EXTRA}
rng = np.random.default_rng(0)
W, x, y = rng.standard_normal((3, 4)), rng.standard_normal(4), rng.standard_normal(3)
g = s2sad.grad(loss)(W, x, y)
h = np.tanh(W @ x)
want = np.outer(((h - y) + K * 2 * np.cos(h)) * (1 - h * h), x)
print(json.dumps({{"ok": bool(np.allclose(g, want, rtol=1e-10, atol=1e-12)),
                  "g00": float(g[0, 0]), "stats": diskcache.STATS, "log": diskcache.LOG}}))
'''


def run(tmp_path, cache, K=3.0, extra="", env=None, name="user_script.py"):
    script = tmp_path / name
    script.write_text(SCRIPT.format(K=K, EXTRA=extra))
    e = _env(cache)
    e.pop("S2SAD_CACHE", None)
    e.update(env or {})
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=e,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def entries(cache):
    return sorted(p for p in os.listdir(cache) if p.endswith(".py"))


@pytest.fixture
def cache(tmp_path):
    d = tmp_path / "cache"
    d.mkdir(mode=0o700)
    return d


def test_a_second_process_reads_what_the_first_wrote(tmp_path, cache):
    first = run(tmp_path, cache)
    assert first["ok"] and first["stats"]["misses"] == 2 and first["stats"]["writes"] == 2
    assert first["stats"]["hits"] == 0
    assert len(entries(cache)) == 2                  # loss and helper
    second = run(tmp_path, cache)
    assert second["ok"] and second["g00"] == first["g00"]
    assert second["stats"]["hits"] == 2 and second["stats"]["misses"] == 0, second


def test_the_entry_is_a_real_file_with_the_source_map(tmp_path, cache):
    run(tmp_path, cache)
    extra = ('d = s2sad.differentiate(loss).derivative(np.ones((3, 4)), np.ones(4), np.ones(3))\n'
             'import linecache\n'
             'assert d.cache_path and d.module.filename == d.cache_path, d.cache_path\n'
             'assert linecache.getline(d.cache_path, 4).strip().startswith("_1 = W @ x")\n'
             'from s2sad.frontend.source import origin_of\n'
             'o = origin_of(d.cache_path, 4)\n'
             'assert o.text == "h = np.tanh(W @ x)" and o.file.endswith("user_script.py"), o\n')
    out = run(tmp_path, cache, extra=extra)
    assert out["ok"] and out["stats"]["hits"] == 2


def test_a_tampered_entry_is_rebuilt_not_run(tmp_path, cache):
    run(tmp_path, cache)
    marker = tmp_path / "ran"
    for name in entries(cache):
        p = cache / name
        text = p.read_text()
        # code that would leave a marker file and stop the process, if it ever ran
        p.write_text(f"open({str(marker)!r}, 'w').close()\nraise SystemExit(3)\n" + text)
    out = run(tmp_path, cache)
    assert not marker.exists()
    assert out["ok"]
    # (each entry is checked twice: before and after taking its lock)
    assert out["stats"]["rejected"] == 4 and out["stats"]["misses"] == 2, out
    assert any("hash does not match" in line for line in out["log"])
    again = run(tmp_path, cache)                       # rewritten: read back
    assert again["stats"]["hits"] == 2 and not marker.exists()


def test_an_entry_of_another_version_is_ignored(tmp_path, cache):
    run(tmp_path, cache)
    import hashlib
    for name in entries(cache):
        p = cache / name
        text = p.read_text()
        body = text.rpartition("# s2sad-cache-sha256 ")[0]
        source, _, meta = body.rpartition("# s2sad-cache-entry ")
        meta = json.loads(meta)
        meta["version"] = "0.0.1"                      # a consistent entry of another version
        body = source + "# s2sad-cache-entry " + json.dumps(meta) + "\n"
        p.write_text(body + "# s2sad-cache-sha256 " + hashlib.sha256(body.encode()).hexdigest()
                     + "\n")
    out = run(tmp_path, cache)
    assert out["ok"] and out["stats"]["hits"] == 0 and out["stats"]["misses"] == 2
    assert any("another s2sad version" in line for line in out["log"]), out["log"]


@pytest.mark.parametrize("change", ["global", "rule", "closure"])
def test_a_changed_constant_or_rule_misses(tmp_path, cache, change):
    base = {"global": {}, "rule": {}, "closure": {}}[change]
    if change == "closure":
        # loss reads K through a closure instead of a global
        extra = ("def make(k):\n    def loss(W, x, y):\n        h = np.tanh(W @ x)\n"
                 "        err = h - y\n        return 0.5 * np.sum(err * err) + k * np.sum(helper(h))\n"
                 "    return loss\nloss = make(K)\n")
        # (an int in a cell is a constant of the derivative; a float would be data, passed to
        # the sweeps as a parameter: then the same entry serves every value)
        first = run(tmp_path, cache, K=3, extra=extra, **base)
        second = run(tmp_path, cache, K=5, extra=extra)
        assert first["ok"] and second["ok"] and second["g00"] != first["g00"]
        # the closure's constant is part of the key: a new entry for loss (helper is shared)
        assert second["stats"]["misses"] == 1 and second["stats"]["hits"] == 1, second
        return
    if change == "global":
        first = run(tmp_path, cache, K=3.0)
        second = run(tmp_path, cache, K=5.0)
        assert first["ok"] and second["ok"] and second["g00"] != first["g00"]
        assert second["stats"]["misses"] == 1 and second["stats"]["hits"] == 1, second
        return
    # a user rule declared for helper: the derivative of loss changes (helper is a primitive)
    rule = ("s2sad.defrule(helper, 'a', vjp={'a': 'g * %s * np.cos(a)'})\n")
    first = run(tmp_path, cache, extra=rule % "2.0")
    second = run(tmp_path, cache, extra=rule % "2.0")
    assert first["ok"] and second["ok"] and second["stats"]["hits"] == 1
    third = run(tmp_path, cache, extra=rule % "3.0")    # a wrong rule, on purpose: it is used
    assert third["stats"]["misses"] == 1 and third["stats"]["hits"] == 0, third
    assert not third["ok"]


def test_two_processes_racing_build_once(tmp_path, cache):
    script = tmp_path / "race.py"
    script.write_text(SCRIPT.format(K=3.0, EXTRA=""))
    e = _env(cache)
    procs = [subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=e) for _ in range(2)]
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        outs.append(json.loads(out.strip().splitlines()[-1]))
    assert all(o["ok"] for o in outs)
    assert sum(o["stats"]["misses"] for o in outs) == 2      # each entry built by one process
    assert sum(o["stats"]["writes"] for o in outs) == 2
    assert sum(o["stats"]["hits"] for o in outs) == 2
    assert len(entries(cache)) == 2


def test_a_folder_others_can_write_to_is_refused(tmp_path, cache):
    if os.name != "posix":
        pytest.skip("permission bits")
    os.chmod(cache, 0o777)
    script = tmp_path / "s.py"
    script.write_text(SCRIPT.format(K=3.0, EXTRA=""))
    e = _env(cache)
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=e,
                       timeout=300)
    assert r.returncode != 0
    assert "is refused: others can write to it (mode 777)" in r.stderr
    assert "Fix: make it private" in r.stderr
    assert entries(cache) == []
    # the default folder (not named by the user): a warning, and no disk cache
    from s2sad import diskcache
    assert "others can write" in diskcache.why_unsafe(str(cache))
    os.chmod(cache, 0o700)
    assert diskcache.why_unsafe(str(cache)) is None


def test_off_with_S2SAD_CACHE_0(tmp_path, cache):
    out = run(tmp_path, cache, env={"S2SAD_CACHE": "0"})
    assert out["ok"] and out["stats"] == {"hits": 0, "misses": 0, "writes": 0, "skipped": 0,
                                          "rejected": 0}
    assert entries(cache) == []


def test_an_unkeyable_global_is_built_in_memory_only(tmp_path, cache):
    # a global object of a user class: no description another process could check; the
    # derivative of the function reading it is built in memory only (and right)
    extra = ("class Scale:\n    def __init__(self):\n        self.v = 1.0\n"
             "S = Scale()\n_loss = loss\n"
             "def loss(W, x, y):\n    return S.v * _loss(W, x, y)\n")
    out = run(tmp_path, cache, extra=extra)
    assert out["ok"]
    assert out["stats"]["skipped"] == 1 and out["stats"]["writes"] == 2, out
    assert any("no key (a __main__.Scale object)" in line for line in out["log"]), out["log"]
    assert len(entries(cache)) == 2                 # the inner loss and helper


def test_cli_info_clear_and_lru_eviction(tmp_path, cache):
    run(tmp_path, cache)
    e = _env(cache)
    r = subprocess.run([sys.executable, "-m", "s2sad", "cache", "info"], capture_output=True,
                       text=True, env=e, timeout=120)
    assert r.returncode == 0, r.stderr
    assert f"folder:   {cache}" in r.stdout and "entries:  2" in r.stdout
    assert "0 hits, 0 misses" in r.stdout
    # LRU: a limit below the two entries' size keeps the most recently used one
    sizes = {n: os.path.getsize(cache / n) for n in entries(cache)}
    older, newer = sorted(sizes)
    os.utime(cache / older, (1_000_000, 1_000_000))
    from s2sad import diskcache
    assert diskcache._evict(str(cache), limit=sizes[newer]) == 1
    assert entries(cache) == [newer]
    r = subprocess.run([sys.executable, "-m", "s2sad", "cache", "clear"], capture_output=True,
                       text=True, env=e, timeout=120)
    assert r.returncode == 0 and "removed 1 entry" in r.stdout
    assert entries(cache) == []


CALLEE_SCRIPT = '''
import json
import numpy as np
import s2sad
from s2sad import diskcache
SCALE = {SCALE}

def scaled(t):
    return SCALE * t

def loss(x):
    y = scaled(x[0]) + x[1]     # a number while SCALE is one: its adjoints are numbers
    return np.sum(y * x)

x = np.array([0.5, -1.0, 2.0])
g = s2sad.grad(loss)(x)
y = SCALE * x[0] + x[1]
want = y + np.array([np.sum(SCALE * x), np.sum(x * np.ones_like(y)), 0.0])
print(json.dumps({{"ok": bool(np.allclose(g, want)), "stats": diskcache.STATS,
                  "log": diskcache.LOG}}))
'''


def test_an_entry_that_relied_on_a_callee_global_is_rebuilt_when_it_changes(tmp_path, cache):
    # loss's code relies on scaled returning a number (classify/types.py); SCALE is not read by
    # loss itself, so the key does not hold it: the entry records it and checks it on load
    def go(scale):
        script = tmp_path / "callee_script.py"
        script.write_text(CALLEE_SCRIPT.format(SCALE=scale))
        e = _env(cache)
        e.pop("S2SAD_CACHE", None)
        r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                           env=e, timeout=300)
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout.strip().splitlines()[-1])
    first = go("2.0")
    assert first["ok"] and first["stats"]["writes"] >= 1
    again = go("2.0")
    assert again["ok"] and again["stats"]["hits"] >= 1 and again["stats"]["misses"] == 0
    changed = go("np.array([1.0, 2.0, 3.0])")
    assert changed["ok"], changed
    assert any("a callee reads has another value" in line for line in
               map(str, changed["log"])), changed["log"]


def test_fingerprints_of_code_do_not_warn():
    """The entry's key reads each code object's line table through ``co_linetable``:
    ``co_lnotab`` warns from Python 3.12 on, an error under ``-W error``."""
    import warnings
    from s2sad import diskcache

    def outer(x):
        def inner(y):
            return y * 2.0
        return inner(x) + 1.0

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fp = diskcache.code_fp(outer.__code__)
    assert fp[-1] == outer.__code__.co_linetable.hex()
    assert any(isinstance(k, list) and k[:2] == ["code", "inner"] for k in fp[13])
