"""jit=True derivatives in the disk cache: numba's machine code is cached beside the entry's file,
so a second process loads it instead of compiling (numba's ``stats.cache_hits``), and what numba
compiled into it as constants is checked before it is used.

Each test runs a user script in new processes with its own cache folder; the script prints
whether the compiled gradient equals the Python-mode one, the disk cache's counters and numba's
cache hits and misses for the derivative it ran."""
import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("numba")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

LIB = '''
import numba
SCALE = {SCALE}

@numba.njit
def weight(i):
    return SCALE * (i + 1)
'''

SCRIPT = '''
import json, math, warnings
import numpy as np
import s2sad
from s2sad import diskcache
from s2sad.cache import forward_jit_derivative, jit_derivative
from s2sad.runtime.values import type_of
from jitlib import weight
K = {K}


def inner(v):
    return v * K


def f(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += weight(i) * math.sin(x[i]) + inner(x[i]) ** 2
    return s


warnings.simplefilter("error")          # (a fallback to Python fails the test)
x = np.linspace(0.1, 1.0, 5)
t = np.linspace(1.0, 2.0, 5)
g = s2sad.grad(f, jit={OPTIONS})(x)
jv = s2sad.jvp(f, (x,), (t,), jit={OPTIONS})[1]
want = s2sad.grad(f, jit=False)(x)
opts = {OPTIONS} if isinstance({OPTIONS}, dict) else {{}}
rev = jit_derivative(f, (True,), ("a",), opts, (type_of(x),))
fwd = forward_jit_derivative(f, (True,), ("a",), opts, (type_of(x),))
out = {{"same": bool(np.allclose(g, want, rtol=1e-12) and np.isclose(jv, want @ t, rtol=1e-12)),
       "g0": float(g[0]), "stats": diskcache.STATS, "log": diskcache.LOG}}
for name, c in (("rev", rev), ("fwd", fwd)):
    st = c.dispatcher().stats
    out[name] = [sum(st.cache_hits.values()), sum(st.cache_misses.values())]
print(json.dumps(out))
'''


def run(tmp_path, cache, K=2.0, SCALE=1.0, options="True", env=None):
    (tmp_path / "jitlib.py").write_text(LIB.format(SCALE=SCALE))
    script = tmp_path / "user_jit.py"
    script.write_text(SCRIPT.format(K=K, OPTIONS=options))
    e = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, str(tmp_path),
                                                    os.environ.get("PYTHONPATH", "")]),
             S2SAD_CACHE_DIR=str(cache))
    e.pop("S2SAD_CACHE", None)
    e.pop("NUMBA_CACHE_DIR", None)
    e.pop("NUMBA_OPT", None)            # (tests/conftest.py's 0: numba declines to cache some
    #                                      unoptimised code)
    e.update(env or {})
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=e,
                       timeout=600, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def machine_code(cache):
    d = cache / "__pycache__"
    return sorted(p for p in os.listdir(d) if p.endswith((".nbi", ".nbc"))) if d.exists() else []


@pytest.fixture
def cache(tmp_path):
    d = tmp_path / "cache"
    d.mkdir(mode=0o700)
    return d


def test_a_second_process_loads_the_machine_code(tmp_path, cache):
    first = run(tmp_path, cache)
    assert first["same"], first
    assert first["rev"] == [0, 1] and first["fwd"] == [0, 1]          # compiled
    assert machine_code(cache)
    second = run(tmp_path, cache)
    assert second["same"] and second["g0"] == first["g0"], second
    assert second["rev"] == [1, 0] and second["fwd"] == [1, 0], second     # loaded
    assert second["stats"]["misses"] == 0, second


def test_a_changed_constant_in_an_njit_callee_of_another_module_compiles_again(tmp_path, cache):
    """numba compiles jitlib.SCALE into the machine code and its cache checks only the entry's
    text, which does not change: without s2sad's check the second process ran the first one's
    machine code, a wrong gradient."""
    run(tmp_path, cache, SCALE=1.0)
    changed = run(tmp_path, cache, SCALE=5.0)
    assert changed["same"], changed
    assert changed["rev"] == [0, 1] and changed["fwd"] == [0, 1], changed
    assert any("a value numba compiled" in m for m in changed["log"]), changed["log"]
    again = run(tmp_path, cache, SCALE=5.0)
    assert again["same"] and again["rev"] == [1, 0] and again["g0"] == changed["g0"], again


def test_a_changed_global_of_an_inlined_callee_compiles_again(tmp_path, cache):
    run(tmp_path, cache, K=2.0)
    changed = run(tmp_path, cache, K=3.0)
    assert changed["same"] and changed["rev"] == [0, 1], changed


def test_numba_options_are_part_of_the_entry(tmp_path, cache):
    plain = run(tmp_path, cache)
    fast = run(tmp_path, cache, options='{"fastmath": True}')
    assert fast["same"] and fast["rev"] == [0, 1], fast        # not the plain entry's code
    assert run(tmp_path, cache, options='{"fastmath": True}')["rev"] == [1, 0]
    assert plain["rev"] == [0, 1]


def test_cache_option_without_the_disk_cache_compiles_in_memory(tmp_path, cache):
    """jit={"cache": True} with S2SAD_CACHE=0 (no file for numba's cache): compiled, not a
    RuntimeError from numba's cache locator."""
    out = run(tmp_path, cache, options='{"cache": True}', env={"S2SAD_CACHE": "0"})
    assert out["same"] and out["rev"][0] == 0, out
    assert machine_code(cache) == []


def test_clear_and_eviction_remove_the_machine_code(tmp_path, cache):
    run(tmp_path, cache)
    assert machine_code(cache)
    from s2sad import diskcache
    assert diskcache._evict(str(cache), limit=0) >= 1
    assert machine_code(cache) == []
    run(tmp_path, cache)
    assert machine_code(cache)
    assert diskcache.clear(str(cache)) >= 1
    assert machine_code(cache) == []


def test_code_numba_declines_to_cache_still_compiles(tmp_path, cache):
    """Unoptimised code (NUMBA_OPT=0) may hold an address, which numba will not cache (its
    NumbaWarning, an error under the script's warnings filter): compiled in each process, quietly."""
    for _ in range(2):
        out = run(tmp_path, cache, env={"NUMBA_OPT": "0"})
        assert out["same"] and out["rev"][0] == 0, out
