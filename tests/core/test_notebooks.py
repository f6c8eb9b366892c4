"""Issue 16, point 5: functions typed in IPython/Jupyter cells and at the Python 3.13+ REPL
differentiate like functions in files; where Python keeps no source, the error says where s2sad
can read it and how to fix it.

IPython runs in a subprocess (``InteractiveShell`` replaces ``sys.modules['__main__']``, adds
builtins and warning filters: it would leak into the rest of the suite); each cell's result comes
back as JSON.
"""
import json
import linecache
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import s2sad

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_DRIVER = r'''
import json, sys, traceback
import numpy as np
from IPython.core.interactiveshell import InteractiveShell
from IPython.core.compilerop import CachingCompiler
from traitlets.config import Config

class KernelNames(CachingCompiler):
    """Cell file names as ipykernel gives them: /tmp/ipykernel_<pid>/<hash>.py (no such file)."""
    def get_code_name(self, raw_code, transformed_code, number):
        import hashlib
        h = hashlib.sha1(raw_code.encode()).hexdigest()[:8]
        return f"/tmp/ipykernel_{os.getpid()}/{h}.py"

import os
spec = json.loads(sys.stdin.read())
config = Config()
config.HistoryManager.hist_file = ":memory:"
kw = {"compiler_class": KernelNames} if spec["kernel_names"] else {}
shell = InteractiveShell.instance(config=config, **kw)
out = []
for cell in spec["cells"]:
    r = shell.run_cell(cell, store_history=True)
    err = r.error_before_exec or r.error_in_exec
    if err is not None:
        out.append({"error": type(err).__name__, "message": str(err)})
    elif isinstance(r.result, str):
        out.append({"value": r.result})
    elif r.result is not None:
        out.append({"value": np.asarray(r.result, dtype=float).tolist()})
    else:
        out.append({})
print("@@CELLS@@" + json.dumps(out))
'''


def run_cells(*cells, kernel_names=False):
    """Run ``cells`` one after another in one IPython shell; [{value|error, message}] per cell."""
    pytest.importorskip("IPython")
    spec = json.dumps({"cells": [textwrap.dedent(c).strip("\n") for c in cells],
                       "kernel_names": kernel_names})
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", _DRIVER], input=spec, capture_output=True,
                          text=True, cwd=ROOT, env=env, timeout=300)
    assert "@@CELLS@@" in proc.stdout, proc.stdout + proc.stderr
    return json.loads(proc.stdout.split("@@CELLS@@", 1)[1])


def value(result):
    assert "value" in result, result
    return np.asarray(result["value"])


X = np.array([0.5, -1.25, 2.0])
SETUP = "import numpy as np\nimport s2sad\nx = np.array([0.5, -1.25, 2.0])"


def test_function_defined_in_one_cell_differentiated_in_another():
    out = run_cells(SETUP,
                    """
                    def f(x):
                        y = np.sin(x) * x
                        return np.sum(y * y)
                    """,
                    "s2sad.grad(f)(x)",
                    "f.__code__.co_filename")
    assert out[3]["value"].startswith("<ipython-input-2-"), out[3]
    s, c = np.sin(X), np.cos(X)
    np.testing.assert_allclose(value(out[2]), 2 * s * X * (c * X + s), rtol=1e-12)


def test_redefined_function_gives_the_new_gradient():
    """A later cell redefines f (and a decorated g): grad follows the new code, while a gradient
    function taken before the redefinition keeps differentiating the old one."""
    out = run_cells(SETUP,
                    "def f(x):\n    return np.sum(x ** 3)",
                    "old = s2sad.grad(f)\nold(x)",
                    "def f(x):\n    return np.sum(np.exp(x))",
                    "s2sad.grad(f)(x)",
                    "old(x)",
                    "@s2sad.differentiate\ndef g(x):\n    return np.sum(np.cos(x))",
                    "g.grad(x)",
                    "@s2sad.differentiate\ndef g(x):\n    return np.sum(np.cos(2 * x))",
                    "g.grad(x)")
    np.testing.assert_allclose(value(out[2]), 3 * X ** 2, rtol=1e-12)
    np.testing.assert_allclose(value(out[4]), np.exp(X), rtol=1e-12)
    np.testing.assert_allclose(value(out[5]), 3 * X ** 2, rtol=1e-12)
    np.testing.assert_allclose(value(out[7]), -np.sin(X), rtol=1e-12)
    np.testing.assert_allclose(value(out[9]), -2 * np.sin(2 * X), rtol=1e-12)


def test_same_text_run_again_in_a_new_cell():
    """The same cell text run twice (two cells, two names) and a helper redefined in between:
    the caller sees the helper as it is when the gradient is taken."""
    cell = "def f(x):\n    return np.sum(helper(x) * x)"
    out = run_cells(SETUP,
                    "def helper(x):\n    return np.sin(x)",
                    cell,
                    "s2sad.grad(f)(x)",
                    "def helper(x):\n    return x * x",
                    cell,
                    "s2sad.grad(f)(x)")
    np.testing.assert_allclose(value(out[3]), np.cos(X) * X + np.sin(X), rtol=1e-12)
    np.testing.assert_allclose(value(out[6]), 3 * X ** 2, rtol=1e-12)


def test_closures_lambdas_methods_and_magics_in_cells():
    out = run_cells(SETUP,
                    """
                    here = %pwd
                    def make(a):
                        def inner(x):
                            return np.sum(a * np.tanh(x))
                        return inner
                    sq = lambda x: np.sum(x * x)
                    """,
                    "s2sad.grad(make(3.0))(x)",
                    "s2sad.grad(sq)(x)",
                    """
                    class Model:
                        def __init__(self, w):
                            self.w = w

                        def loss(self, x):
                            return np.sum((self.w * x) ** 2)
                    """,
                    "s2sad.grad(Model(1.5).loss)(x)",
                    "s2sad.value_and_grad(lambda x: np.sum(np.log1p(x * x)))(x)[1]")
    for r in out:
        assert "error" not in r, r
    np.testing.assert_allclose(value(out[2]), 3.0 / np.cosh(X) ** 2, rtol=1e-12)
    np.testing.assert_allclose(value(out[3]), 2 * X, rtol=1e-12)
    np.testing.assert_allclose(value(out[5]), 2 * 1.5 ** 2 * X, rtol=1e-12)
    np.testing.assert_allclose(value(out[6]), 2 * X / (1 + X * X), rtol=1e-12)


def test_jupyter_kernel_cell_names():
    """ipykernel names each cell /tmp/ipykernel_<pid>/<hash>.py, a file that does not exist;
    the text is in linecache."""
    out = run_cells(SETUP,
                    "def f(x):\n    return np.sum(np.sqrt(1 + x * x))",
                    "s2sad.grad(f)(x)",
                    "f.__code__.co_filename",
                    "def f(x):\n    return np.prod(x)",
                    "s2sad.grad(f)(x)",
                    kernel_names=True)
    assert out[3]["value"].startswith("/tmp/ipykernel_") and out[3]["value"].endswith(".py")
    assert not os.path.exists(out[3]["value"])
    np.testing.assert_allclose(value(out[2]), X / np.sqrt(1 + X * X), rtol=1e-12)
    np.testing.assert_allclose(value(out[5]), np.prod(X) / X, rtol=1e-12)


def test_refusal_in_a_cell_names_the_cell_line():
    out = run_cells(SETUP,
                    """
                    def gen(x):
                        for v in x:
                            yield v * v

                    def f(x):
                        return sum(gen(x))
                    """,
                    "s2sad.grad(f)(x)")
    err = out[2]
    assert err.get("error") == "UnsupportedSyntaxError", err
    assert re.match(r"<ipython-input-2-[0-9a-f]+>:3: `yield`", err["message"]), err
    assert "    yield v * v\nFix:" in err["message"], err


# -- the Python 3.13+ REPL ---------------------------------------------------------------------
# Python 3.13's REPL compiles input N under the name <python-input-N> and puts its text in
# linecache.cache under that name; 3.14's keeps it by code object (linecache._getlines_from_code).

def _repl_input(name, src, ns):
    """Run ``src`` as the REPL does with input ``name`` and return nothing; ``ns`` is __main__."""
    code = compile(src, name, "exec")
    if hasattr(linecache, "_getlines_from_code"):       # 3.14+: keyed by code object
        linecache._register_code(code, src, name)
    else:                                               # 3.13: by input name
        linecache.cache[name] = (len(src), None, [ln + "\n" for ln in src.splitlines()],
                                 "<stdin>")
    exec(code, ns)


@pytest.fixture
def repl():
    names = []
    ns = {"np": np, "s2sad": s2sad, "__name__": "__main__"}

    def run(src):
        name = f"<python-input-{len(names)}>"
        names.append(name)
        _repl_input(name, textwrap.dedent(src), ns)
        return ns
    yield run
    for name in names:
        linecache.cache.pop(name, None)


def test_python_313_repl_input(repl):
    ns = repl("def f(x):\n    return np.sum(np.arctan(x) * x)\n")
    assert ns["f"].__code__.co_filename == "<python-input-0>"
    g = s2sad.grad(ns["f"])(X)
    np.testing.assert_allclose(g, X / (1 + X * X) + np.arctan(X), rtol=1e-12)
    ns = repl("def f(x):\n    return np.sum(x ** 4)\n")            # redefined in input 1
    np.testing.assert_allclose(s2sad.grad(ns["f"])(X), 4 * X ** 3, rtol=1e-12)
    ns = repl("h = s2sad.differentiate(lambda x: np.sum(np.sinh(x)))\n")
    np.testing.assert_allclose(ns["h"].grad(X), np.cosh(X), rtol=1e-12)


def test_repl_text_kept_by_code_object(monkeypatch):
    """The 3.14 way, on any Python: linecache finds the text from the code object only."""
    kept = {}

    def getlines_from_code(code):
        return kept.get((code.co_filename, code.co_firstlineno), [])
    monkeypatch.setattr(linecache, "_getlines_from_code", getlines_from_code, raising=False)
    src = "import numpy as np\n\ndef f(x):\n    return np.sum(np.expm1(x) * 2.0)\n"
    name = "<python-input-7>"
    assert name not in linecache.cache
    code = compile(src, name, "exec")
    todo = [code]
    while todo:
        c = todo.pop()
        kept[(c.co_filename, c.co_firstlineno)] = src.splitlines(True)
        todo.extend(k for k in c.co_consts if hasattr(k, "co_code"))
    ns = {"__name__": "__main__"}
    exec(code, ns)
    np.testing.assert_allclose(s2sad.grad(ns["f"])(X), 2 * np.exp(X), rtol=1e-12)


def test_same_name_other_text_is_stale():
    """The staleness check holds for cell names too: text under the name that is not what the
    function was compiled from is refused, not differentiated."""
    name = "<python-input-stale>"
    src1 = "def f(x):\n    return np.sum(x * x)\n"
    src2 = "def f(x):\n    return np.sum(x * x * x)\n"
    ns = {"np": np}
    try:
        _repl_input(name, src1, ns)
        f1 = ns["f"]
        _repl_input(name, src2, ns)        # the same name again, with other text
        f2 = ns["f"]
        with pytest.raises(s2sad.errors.StaleSourceError) as ei:
            s2sad.grad(f1)(X)
        assert "the source of f is not the code that runs" in str(ei.value)
        assert "\nFix: " in str(ei.value)
        np.testing.assert_allclose(s2sad.grad(f2)(X), 3 * X * X, rtol=1e-12)
    finally:
        linecache.cache.pop(name, None)


# -- where Python keeps no source --------------------------------------------------------------

def _assert_says_where_source_works(msg):
    for words in (".py file", "IPython/Jupyter", "3.13+ REPL", "Fix:", "linecache.cache[name]"):
        assert words in msg, (words, msg)


def test_exec_of_a_string_says_where_source_works_and_the_fix_works():
    src = "def f(x):\n    return np.sum(np.cos(x) * x)\n"
    ns = {"np": np}
    exec(src, ns)
    with pytest.raises(s2sad.errors.SourceUnavailableError) as ei:
        s2sad.grad(ns["f"])(X)
    msg = str(ei.value)
    _assert_says_where_source_works(msg)
    assert "<string>:1" in msg and "exec()" in msg
    # the fix the message gives
    name = "<my-code-1>"
    try:
        linecache.cache[name] = (len(src), None, src.splitlines(True), name)
        exec(compile(src, name, "exec"), ns)
        np.testing.assert_allclose(s2sad.grad(ns["f"])(X), np.cos(X) - X * np.sin(X),
                                   rtol=1e-12)
    finally:
        linecache.cache.pop(name, None)


def test_python_dash_c_says_where_source_works():
    prog = ("import numpy as np, s2sad\n"
            "def f(x):\n    return np.sum(x * x)\n"
            "try:\n    s2sad.grad(f)(np.ones(2))\n"
            "except s2sad.errors.SourceUnavailableError as e:\n    print('REFUSED', e)\n")
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=300)
    assert "REFUSED" in proc.stdout, proc.stdout + proc.stderr
    assert "<string>:2" in proc.stdout and "python -c" in proc.stdout, proc.stdout
    _assert_says_where_source_works(proc.stdout)
