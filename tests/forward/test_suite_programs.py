"""Forward mode on every test program of the core and language suites.

Each test of ``tests/core`` and ``tests/language`` that checks gradients with ``check_grads`` is
run again here with ``check_grads`` replaced by forward-mode checks: the jvp against central
differences, and the forward/reverse dot-product test <J v, w> = <v, J^T w>.
"""
import importlib
import inspect
import itertools
import os
import sys

import copy

import pytest

from fwdcheck import check_forward
from s2sad import testing as _t

HERE = os.path.dirname(os.path.abspath(__file__))
SUITES = {"core": os.path.normpath(os.path.join(HERE, "..", "core")),
          "language": os.path.normpath(os.path.join(HERE, "..", "language"))}

# tests whose programs forward mode does not handle yet, with the reason
XFAIL = {}


def _collect():
    out = []
    for suite, path in SUITES.items():
        if not os.path.isdir(path):
            continue
        for name in sorted(os.listdir(path)):
            if not (name.startswith("test_") and name.endswith(".py")):
                continue
            out.append((suite, path, name[:-3]))
    return out


def _cases():
    cases = []
    for suite, path, modname in _collect():
        src = open(os.path.join(path, modname + ".py")).read()
        for line in src.splitlines():
            if line.startswith("def test_"):
                fname = line[4:line.index("(")]
                cases.append(pytest.param(suite, path, modname, fname, id=f"{suite}/{modname}::{fname}"))
    return cases


def _expand(fn):
    """Argument sets of a test function from its parametrize marks; None if it needs fixtures."""
    marks = [m for m in getattr(fn, "pytestmark", []) if m.name == "parametrize"]
    params = list(inspect.signature(fn).parameters)
    grids = []
    covered = set()
    for m in marks:
        names = m.args[0]
        names = [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)
        rows = []
        for v in m.args[1]:
            if hasattr(v, "values") and hasattr(v, "marks"):      # pytest.param(...)
                if any(mk.name in ("xfail", "skip", "skipif", "gpu") for mk in v.marks):
                    continue
                v = v.values if len(names) > 1 else v.values[0]
            rows.append(dict(zip(names, v)) if len(names) > 1 else {names[0]: v})
        grids.append(rows)
        covered.update(names)
    if set(params) - covered:
        return None
    out = []
    for combo in itertools.product(*grids) if grids else [()]:
        kw = {}
        for d in combo:
            kw.update(d)
        out.append(kw)
    return out


class _Counter:
    def __init__(self):
        self.n = 0


class _ReverseFailure(Exception):
    """Raised out of a replaced check_grads: reverse mode already fails on this program."""


class _ForwardFailure(Exception):
    """Raised out of a replaced check_grads: the forward-mode check itself failed."""


@pytest.mark.parametrize("suite, path, modname, fname", _cases())
def test_forward_on_suite_program(suite, path, modname, fname, monkeypatch):
    key = f"{suite}/{modname}::{fname}"
    if key in XFAIL:
        pytest.xfail(XFAIL[key])
    monkeypatch.syspath_prepend(path)
    mod = importlib.import_module(modname)
    fn = getattr(mod, fname)
    kwsets = _expand(fn)
    if kwsets is None:
        pytest.skip("needs fixtures")
    count = _Counter()
    original = _t.check_grads

    def fwd_check_grads(f, args, wrt=None, **kw):
        count.n += 1
        try:        # reverse mode first: a program it cannot do is not forward mode's business
            original(f, copy.deepcopy(args), wrt, **{k: v for k, v in kw.items() if k != "modes"})
        except Exception:
            raise _ReverseFailure()
        try:
            check_forward(f, args, wrt, **kw)
        except Exception as e:
            raise _ForwardFailure(e) from e

    names = [n for n in vars(mod) if n == "check_grads"]
    helper_mods = [m for m in (sys.modules.get("lang_helpers"), sys.modules.get("core_util")) if m]
    for n in names:
        monkeypatch.setattr(mod, n, fwd_check_grads)
    for m in helper_mods:
        if hasattr(m, "check_grads"):
            monkeypatch.setattr(m, "check_grads", fwd_check_grads)
    ran = False
    for kw in kwsets:
        marks = [m.name for m in getattr(fn, "pytestmark", [])]
        if "xfail" in marks or "skip" in marks or "skipif" in marks or "gpu" in marks:
            pytest.skip("marked skip/xfail in its suite")
        try:
            fn(**kw)
        except _ForwardFailure as e:
            raise e.args[0]
        except _ReverseFailure:
            continue
        except pytest.skip.Exception:
            continue
        except BaseException as e:       # the suite's own assertions: not forward mode's business
            if isinstance(e, KeyboardInterrupt):
                raise
            continue
        ran = True
    if not count.n or not ran:
        pytest.skip("no check_grads call")
