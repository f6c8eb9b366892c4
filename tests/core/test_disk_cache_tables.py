"""Issue 13: a derivative read from the disk cache loads only the rule modules its code calls.

The generated code reaches helpers as ``_adj.<name>``; the entry records which rule module
publishes each one, and a hit imports exactly those (never every table, nor SciPy's).  The tables
loaded in full later (a cache miss, a lookup, a user rule) must be the same as in a process that
loaded them in one go.  The rows of s2sad's own tables are read lazily (rules.registry.Rule): every
one must still be a valid rule."""
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

QUICKSTART = '''
import json, sys
import numpy as np
{IMPORTS}
import s2sad
from s2sad import diskcache
from s2sad.rules import registry

def loss(W, x, y):
    h = np.tanh(W @ x)
    err = h - y
    return 0.5 * np.sum(err * err)

W = np.arange(12.0).reshape(3, 4) / 10
x, y = np.linspace(-1, 1, 4), np.array([0.1, -0.2, 0.3])
g = s2sad.grad(loss)(W, x, y)
h = np.tanh(W @ x)
want = np.outer((h - y) * (1 - h * h), x)
out = {{"ok": bool(np.allclose(g, want, rtol=1e-12, atol=1e-14)), "stats": diskcache.STATS,
       "log": diskcache.LOG, "loaded": registry._loaded,
       "rules": sorted(m for m in sys.modules if m.startswith("s2sad.rules"))}}
{AFTER}
print(json.dumps(out))
'''

# every rule of the tables, described by value (the same in any process that loaded them)
DESCRIBE = '''
from s2sad.rules import registry
registry._ensure_tables()
registry._load_optional_tables()
def text(v):
    return sorted(v.items()) if isinstance(v, dict) else v
rows = sorted(repr([where, rule.name, str(rule.signature), text(rule.vjp), text(rule.jvp),
                    rule.joint, rule.kind, rule.zero, text(rule.aliases)])
              for where, rule in registry.iter_rules())
out["table"] = rows
out["sum_rule"] = registry.lookup(np.sum).name
'''


def run(tmp_path, cache, imports="", after=""):
    script = tmp_path / "user_script.py"
    script.write_text(QUICKSTART.format(IMPORTS=imports, AFTER=after))
    env = _env(cache)
    env.pop("S2SAD_CACHE", None)
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.fixture
def cache(tmp_path):
    d = tmp_path / "cache"
    d.mkdir(mode=0o700)
    return d


HIT_RULES = ["s2sad.rules", "s2sad.rules.adjoints", "s2sad.rules.numpy",
             "s2sad.rules.numpy.products", "s2sad.rules.numpy.reductions", "s2sad.rules.registry"]


def test_a_hit_imports_only_the_helper_modules_it_calls(tmp_path, cache):
    pytest.importorskip("scipy")
    imports = "import scipy.special, scipy.stats"        # SciPy's tables would load with all
    first = run(tmp_path, cache, imports)
    assert first["ok"] and first["stats"]["writes"] == 1 and first["loaded"]
    assert "s2sad.rules.scipy.special" in first["rules"]           # a miss loads every table
    (entry,) = [p for p in os.listdir(cache) if p.endswith(".py")]
    text = (cache / entry).read_text()
    assert "_adj.sum(" in text and "_adj.matmul(" in text
    meta = json.loads(text.split("# s2sad-cache-entry ")[1].splitlines()[0])
    assert meta["adj"] == {"matmul": "s2sad.rules.numpy.products",
                           "sum": "s2sad.rules.numpy.reductions"}
    second = run(tmp_path, cache, imports)
    assert second["ok"] and second["stats"]["hits"] == 1 and second["stats"]["misses"] == 0
    assert second["rules"] == HIT_RULES, second["rules"]
    assert not second["loaded"]


def test_tables_loaded_after_a_hit_are_the_tables_loaded_at_once(tmp_path, cache):
    pytest.importorskip("scipy")
    imports = "import scipy.special, scipy.stats, scipy.linalg"
    first = run(tmp_path, cache, imports, after=DESCRIBE)        # a miss: every table at once
    second = run(tmp_path, cache, imports, after=DESCRIBE)       # a hit, then every table
    assert second["stats"]["hits"] == 1 and second["rules"] == HIT_RULES
    assert len(first["table"]) > 600
    assert second["table"] == first["table"]
    assert first["sum_rule"] == second["sum_rule"] == "np.sum"


def test_a_user_rule_declared_after_a_hit_wins(tmp_path, cache):
    after = ('s2sad.defrule(np.tanh, "x, /", vjp={"x": "g * 2.0"})\n'
             'from s2sad.rules import registry as r\n'
             'out["tanh_vjp"] = r.lookup(np.tanh).vjp\n'
             'out["sum_rule"] = r.lookup(np.sum).name\n'
             'def f(x):\n    return np.tanh(x)\n'
             'out["g"] = float(s2sad.grad(f)(0.5))\n')
    run(tmp_path, cache)
    second = run(tmp_path, cache, after=after)
    assert second["stats"]["hits"] == 1
    assert second["tanh_vjp"] == {"x": "g * 2.0"} and second["sum_rule"] == "np.sum"
    assert second["g"] == 2.0


DYNAMIC = '''
import sys
import s2sad

class Box:
    def __getitem__(self, k):
        return 3.0

def f(x, boxes):
    b = boxes[0]
    return x * b[x]

try:
    s2sad.grad(f)(2.0, [Box()])
except s2sad.S2SADError as e:
    print(type(e).__name__, str(e).splitlines()[0].split(": ", 1)[1][:40])
'''


def test_a_hit_reaching_the_index_tricks_loads_them(tmp_path, cache):
    """Generated code that subscripts an object known only at run time asks the index-trick
    helpers (np.r_...), which the tables set: read from the disk cache, it runs before any table
    loaded (it crashed with an AttributeError on None)."""
    script = tmp_path / "dyn.py"
    script.write_text(DYNAMIC)
    env = _env(cache)
    env.pop("S2SAD_CACHE", None)
    out = []
    for _ in range(2):
        r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                           env=env, timeout=300)
        assert r.returncode == 0, r.stderr
        out.append(r.stdout.strip())
    assert len([p for p in os.listdir(cache) if p.endswith(".py")]) == 1
    assert out[0] == out[1] == "UnsupportedSyntaxError a Box[...] whose key carries a derivativ"


def test_every_built_in_rule_is_valid():
    """The rows of s2sad's own tables are checked when first read; read them all here."""
    from s2sad.rules import registry
    registry._ensure_tables()
    n = 0
    for table in (registry._RULES, registry._METHODS, registry._ATTRS,
                  registry._CONTAINER_METHODS):
        for rule in list(table.values()):
            rule._finish()
            assert "_pending" not in vars(rule) and rule.signature is not None
            n += 1
    assert n > 500


def test_a_user_rule_is_checked_at_its_declaration():
    from s2sad.errors import RuleError
    from s2sad.rules import registry

    def mine(x):
        return x

    with pytest.raises(RuleError) as e:
        registry.defrule(mine, "x, /", vjp={"y": "g"})
    assert "'y' is not a parameter of (x, /)" in str(e.value)
    assert __file__ in str(e.value)              # names the line of the declaration
    assert registry.lookup(mine) is None


def test_the_recorded_helper_modules_are_checked():
    from s2sad import diskcache
    from s2sad.rules import registry
    registry._ensure_tables()
    refs = {"_adj": [["module", "s2sad.rules.adjoints"], "builtins.module"]}
    src = "def f(g, a):\n    return _adj.sum(g, a, None, False) + _adj.like(g, a) + np.sum(a)\n"
    assert diskcache._helper_tables(src, refs) == {"like": "s2sad.rules.adjoints",
                                                   "sum": "s2sad.rules.numpy.reductions"}
    assert diskcache._helper_tables(src, {}) == {}
    diskcache._import_helpers({"sum": "s2sad.rules.numpy.reductions"})
    with pytest.raises(ValueError, match="outside s2sad's rules"):
        diskcache._import_helpers({"sum": "os"})
    with pytest.raises(ValueError, match="_adj.sum is not published by s2sad.rules.numpy.products"):
        diskcache._import_helpers({"sum": "s2sad.rules.numpy.products"})
    with pytest.raises(ValueError, match="cannot be imported"):
        diskcache._import_helpers({"sum": "s2sad.rules.numpy.no_such_topic"})
