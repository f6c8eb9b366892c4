"""Every callee the rule tables support, by table and module: ``s2sad rules`` and the site's
docs/coverage.md (filled by docs/hooks.py when the site is built).

The tables are read through :func:`.registry.iter_rules` and :func:`.registry.lookup`; this module
only names what they hold.  A callee is named by its public path (``numpy.linalg.eig``,
``scipy.special.gammainc``, ``builtins.sorted``), found by walking the public namespaces of each
library (the first namespace that holds the object names it).  Callees made afresh on each access
(``scipy.stats.norm.logpdf``) are found by asking :func:`~.registry.lookup` about the public
methods of the objects in those namespaces, as generated code would.  The helpers s2sad's own
generated code calls (``s2sad.runtime``, the tables' helpers, which have rules so that generated
code can be differentiated again) are not listed: they are not written by users.

Each entry says which parameters carry derivatives:

* reverse mode: the parameters with an adjoint template (``vjp=``/``joint=``);
* forward mode: those with a tangent template (``jvp=``), and, marked ``*``, those with an adjoint
  template only, whose tangent forward mode recovers from the adjoint (one adjoint per element of
  the output).
"""
import importlib
import json
import re
import sys
import types

import numpy as np

from . import registry

#: table name -> (library to import, namespaces to walk in order).  The first namespace holding an
#: object names it, so the general ones come first (``numpy.matmul`` rather than
#: ``numpy.linalg.matmul``).
TABLES = {
    "numpy": ("numpy", ["numpy", "numpy.linalg", "numpy.fft", "numpy.random", "numpy.emath",
                        "numpy.lib.stride_tricks", "numpy.polynomial.polynomial"]),
    "python": (None, ["builtins", "math", "cmath", "operator", "functools", "itertools", "copy",
                      "dataclasses", "heapq", "io", "statistics", "s2sad"]),
    "scipy": ("scipy", ["scipy.special", "scipy.linalg", "scipy.stats", "scipy.integrate",
                        "scipy.signal", "scipy.fft", "scipy.ndimage", "scipy.interpolate",
                        "scipy.optimize", "scipy.spatial.distance", "scipy.sparse"]),
    "cupy": ("cupy", ["cupy", "cupy.linalg", "cupy.fft", "cupy.random", "cupyx",
                      "cupyx.scipy.special", "cupyx.scipy.linalg", "cupyx.scipy.signal",
                      "cupyx.scipy.ndimage", "cupyx.scipy.fft"]),
}
#: the tables the same everywhere (CuPy is not installed on every machine): docs/coverage.md
DOC_TABLES = ("numpy", "python", "scipy")
#: the top-level package of a callee's module -> its table, for callees no namespace holds
_TOP = {"numpy": "numpy", "scipy": "scipy", "cupy": "cupy", "cupyx": "cupy", "s2sad": None}
_OBJECT_METHODS = {"method": ("ndarray methods", "numpy"),       # x.name(...) on an array
                   "attr": ("ndarray attributes", "numpy"),      # x.name
                   "container": ("dict/list/tuple methods", "python")}
FORWARD_BY_ADJOINT = "*"
REGENERATE = "s2sad rules --format md --tables numpy,python,scipy"


class Entry:
    """One supported callee."""

    def __init__(self, table, topic, callee, rule, note="", rank=0):
        self.table, self.topic, self.callee, self.rule, self.note = table, topic, callee, rule, note
        self.rank = rank                 # the topic's place in the listing
        self.aliases = []                # other public names of the same object
        self.zero = bool(rule.zero)
        if self.zero:
            self.reverse, self.forward = [], []
            return
        params = list(rule.signature.parameters)
        rev = set(rule.joint[0]) if rule.joint else set(rule.vjp)
        fwd = {p for p, text in rule.jvp.items() if text.replace(" ", "") != "0.0*ans"}
        name = rule.public_name                  # the callee's own names (odeint's t, not times)
        self.reverse = [name(p) for p in params if p in rev]
        self.forward = [name(p) if p in fwd else name(p) + FORWARD_BY_ADJOINT for p in params
                        if p in fwd or p in rev]

    def as_dict(self):
        return {"table": self.table, "topic": self.topic, "callee": self.callee,
                "aliases": self.aliases, "zero": self.zero, "reverse": self.reverse, "forward": self.forward,
                "note": self.note}


def available(table):
    """Whether the library of ``table`` can be imported here."""
    lib = TABLES[table][0]
    if lib is None:
        return True
    try:
        importlib.import_module(lib)
        return True
    except Exception:   # noqa: BLE001  (CuPy without a usable CUDA runtime fails in many ways)
        return False


def _namespaces(tables):
    out = []
    for table in tables:
        for name in TABLES[table][1]:
            try:
                mod = importlib.import_module(name)
            except Exception:   # noqa: BLE001  (a namespace this version lacks)
                continue
            out.append((table, name, mod))
    return out


def _public(mod):
    names = getattr(mod, "__all__", None)
    if names is None or mod.__name__ in ("numpy", "builtins"):
        names = dir(mod)
    for n in sorted(set(names)):
        if n.startswith("_"):
            continue
        try:
            yield n, getattr(mod, n)
        except Exception:   # noqa: BLE001  (a lazy attribute that fails to load)
            continue


def _is_instance(obj):
    """An object whose methods may be callees with rules (a distribution, a ufunc)."""
    return not isinstance(obj, (types.ModuleType, type, types.FunctionType,
                                types.BuiltinFunctionType, types.MethodType, str, bytes, int,
                                float, complex, bool, tuple, list, dict, set, frozenset,
                                np.ndarray, np.generic)) and obj is not None


def _lookup(obj):
    try:
        return registry.lookup(obj)
    except Exception:   # noqa: BLE001  (a resolver that cannot judge a foreign object)
        return None


def _module_path(fn):
    """``package.module`` of a callee, without private parts (``numpy._core.fromnumeric`` -> numpy)."""
    mod = getattr(fn, "__module__", None) or ""
    parts = []
    for p in mod.split("."):
        if p.startswith("_"):
            break
        parts.append(p)
    return ".".join(parts) or None


def collect(tables=None):
    """The entries of ``tables`` (default: every table whose library is installed), sorted."""
    tables = [t for t in TABLES if t in tables] if tables else [t for t in TABLES if available(t)]
    for t in tables:
        lib = TABLES[t][0]
        if lib is not None:
            importlib.import_module(lib)         # SciPy's and CuPy's tables load once imported
    rules = list(registry.iter_rules())          # loads the tables
    entries = {}                                 # callee path -> Entry
    named = set()                                # ids of rules listed
    ranks = {}                                   # topic -> its place in the listing

    def add(table, topic, callee, rule, note=""):
        rank = ranks.setdefault(topic, len(ranks))
        if callee not in entries:
            entries[callee] = Entry(table, topic, callee, rule, note, rank)
        named.add(id(rule))
        return entries[callee]

    seen = {}                                    # id of a namespace object -> its Entry or None
    for table, name, mod in _namespaces(tables):
        ranks.setdefault(name, len(ranks))
        for n, obj in _public(mod):
            path = f"{name}.{n}"
            if id(obj) in seen:
                if seen[id(obj)] is not None and not path.endswith("." + seen[id(obj)].callee):
                    seen[id(obj)].aliases.append(path)
                continue
            seen[id(obj)] = None
            rule = _lookup(obj)
            if rule is not None:
                note = "freezing: the frozen object's methods carry these derivatives" \
                    if _is_instance(obj) and name == "scipy.stats" else ""
                seen[id(obj)] = add(table, name, path, rule, note)
            if _is_instance(obj):
                for m in dir(obj):
                    if m.startswith("_"):
                        continue
                    try:
                        meth = getattr(obj, m)
                    except Exception:   # noqa: BLE001
                        continue
                    if callable(meth) and (r := _lookup(meth)) is not None:
                        add(table, name, f"{path}.{m}", r)
    # rules the namespaces do not reach: object methods, and callees named by their module
    for where, rule in rules:
        if id(rule) in named:
            continue
        if where in _OBJECT_METHODS:
            topic, table = _OBJECT_METHODS[where]
            if table in tables:
                add(table, topic, rule.name, rule)
            continue
        mod = _module_path(rule.fn)
        if mod is None:
            continue
        top = mod.split(".")[0]
        table = _TOP[top] if top in _TOP else "python" if top in sys.stdlib_module_names else None
        if table in tables:                      # (a user's own rules are not listed)
            qn = getattr(rule.fn, "__qualname__", None) or getattr(rule.fn, "__name__", rule.name)
            add(table, mod, f"{mod}.{qn}", rule)
    order = {t: i for i, t in enumerate(TABLES)}
    for key, e in list(entries.items()):
        # the name the rule itself gives (scipy.special.jv rather than its alias jn) leads
        own = e.rule.name.rsplit(".", 1)[-1]
        better = [a for a in e.aliases if a.rsplit(".", 1)[-1] == own and
                  a.rsplit(".", 1)[0] == e.topic]
        if better and e.callee.rsplit(".", 1)[-1] != own and better[0] not in entries:
            e.aliases.remove(better[0])
            e.aliases.append(e.callee)
            del entries[key]
            e.callee = better[0]
            entries[e.callee] = e
        e.aliases.sort()
    return sorted(entries.values(), key=lambda e: (order[e.table], e.rank, e.callee.lower()))


def select(entries, pattern):
    """Entries whose callee, other names or module match the regex (case-insensitive)."""
    rx = re.compile(pattern, re.IGNORECASE)
    return [e for e in entries if rx.search(e.callee) or rx.search(e.topic) or
            any(rx.search(a) for a in e.aliases)]


def _groups(entries):
    out = {}
    for e in entries:
        out.setdefault((e.table, e.topic), []).append(e)
    return out


def _label(e, code=""):
    """``numpy.abs (also absolute)``: the callee and its other public names."""
    def short(a):
        return a[len(e.topic) + 1:] if a.startswith(e.topic + ".") else a
    text = f"{code}{e.callee}{code}"
    if e.aliases:
        text += " (also " + ", ".join(f"{code}{short(a)}{code}" for a in e.aliases) + ")"
    return text


def _params(ps):
    return ", ".join(ps) if ps else "-"


def render_text(entries):
    lines = []
    for (table, topic), group in _groups(entries).items():
        rows = [e for e in group if not e.zero]
        zeros = [e for e in group if e.zero]
        lines.append(f"{topic} [{table}]: {len(rows)} with derivatives, {len(zeros)} zero-derivative")
        width = max([len(_label(e)) for e in rows] + [10])
        for e in rows:
            lines.append(f"  {_label(e):<{width}}  reverse: {_params(e.reverse):<24} "
                         f"forward: {_params(e.forward)}" + (f"  ({e.note})" if e.note else ""))
        if zeros:
            lines.append("  zero derivative: " + ", ".join(_label(e) for e in zeros))
        lines.append("")
    lines.append(f"reverse/forward: the parameters that carry derivatives in each mode; "
                 f"{FORWARD_BY_ADJOINT}: forward mode through the adjoint rule "
                 f"(one adjoint per output element).")
    return "\n".join(lines) + "\n"


def render_markdown(entries, tables):
    versions = []
    for t in tables:
        lib = TABLES[t][0]
        if lib is not None and lib in sys.modules:
            versions.append(f"{lib} {getattr(sys.modules[lib], '__version__', '?')}")
    n = sum(not e.zero for e in entries)
    z = sum(e.zero for e in entries)
    out = ["# Supported callees", "",
           f"<!-- Generated by `{REGENERATE}` "
           f"({', '.join(versions)}): do not edit by hand. -->", "",
           f"Every callee with a derivative rule in s2sad's tables of {', '.join(tables)} "
           f"({n} with derivatives, {z} declared zero-derivative). "
           "`s2sad rules` prints the same list for the libraries installed here (CuPy's mirrors "
           "of the NumPy and SciPy rules included), `s2sad rules --grep PATTERN` a part of it. "
           "Functions with Python source that are not listed are differentiated through their "
           "source; a callee with neither is refused with an error naming your line.", "",
           "Columns: the parameters that carry derivatives in reverse mode (an adjoint rule) and "
           f"in forward mode (a tangent rule; `{FORWARD_BY_ADJOINT}`: from the adjoint rule, one "
           "adjoint per element of the output). Zero-derivative callees return values that carry "
           "no derivative (indices, signs, comparisons); they are listed apart under each "
           "module.", ""]
    for (table, topic), group in _groups(entries).items():
        rows = [e for e in group if not e.zero]
        zeros = [e for e in group if e.zero]
        out += [f"## {topic}", ""]
        if rows:
            out += ["| callee | reverse | forward |", "| --- | --- | --- |"]
            for e in rows:
                name = _label(e, "`") + (f" ({e.note})" if e.note else "")
                out.append(f"| {name} | {_params(e.reverse)} | "
                           f"{_params(e.forward).replace('*', chr(92) + '*')} |")
            out.append("")
        if zeros:
            out += ["Zero derivative: " + ", ".join(_label(e, "`") for e in zeros) + ".", ""]
    return "\n".join(out)


def render_json(entries):
    return json.dumps([e.as_dict() for e in entries], indent=1) + "\n"
