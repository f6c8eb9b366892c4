"""The package's layers import downward only, and its import graph has no cycle (issue 11).

The test reads every module of ``s2sad/`` with ``ast`` and takes every import in it: at the top,
inside functions and methods (a lazy import is still a dependency: a lower layer that imports an
upper one inside a function is a cycle that only shows at run time), under ``if``/``try``.
Importing a submodule also runs its packages' ``__init__``; that is Python's package mechanism and
not counted as an edge, but ``import s2sad`` or ``from s2sad import X`` (X not a module) is.
Tables loaded by name (``importlib.import_module`` in ``rules/registry.py``) are not imports.

Layers, lowest first (``LAYERS``; docs/architecture.md has the same map): an import may only go to
a module of the same or a lower layer, and the graph has no cycle (so neither has any layer).
"""
import ast
import os

import pytest

PKG = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                   "s2sad")

# module or package -> layer; a module takes the layer of the longest entry that names it or a
# package above it.  A new top-level module needs an entry.
LAYERS = {
    # 0 -- foundation: the IR's node types and Origin, the error classes
    "s2sad.ir": 0,
    "s2sad.errors": 0,
    "s2sad._version": 0,
    "s2sad.logs": 0,
    # 1 -- GPU kernels (device guard, Numba CUDA kernels): nothing of the pipeline
    "s2sad.kernels": 1,
    # 2 -- the helpers generated code calls (``_rt``, ``_fw``)
    "s2sad.runtime": 2,
    # 3 -- the rule registry and tables (their helpers call ``_rt``)
    "s2sad.rules": 3,
    # 4 -- source, lowering, analyses
    "s2sad.frontend": 4,
    # 5 -- classification and the checks that run with it (the package ``s2sad/classify/``: call
    # sites, the may-point-to analysis, in-place writes, iterators, deferred readers, closures)
    "s2sad.classify": 5,
    # 6 -- code generation: emitters, builders, loading
    "s2sad.codegen": 6,
    # 7 -- the derivative cache, which calls the builders on a miss
    "s2sad.cache": 7,
    # the disk layer under it: entries as .py files shared between processes
    "s2sad.diskcache": 7,
    # 8 -- the front door and the transforms (callables <- api <- transforms)
    "s2sad.callables": 8,
    "s2sad.api": 8,
    "s2sad.graphs": 8,          # graph=True: capture and replay (api imports it)
    "s2sad.pickling": 8,
    "s2sad.transforms": 8,
    # the rules for s2sad's own API (grad inside a differentiated function) name the API's
    # functions: a table above the API, loaded by name by the registry, imported by no module
    "s2sad.rules.transforms": 8,
    # 9 -- tools and the package's public names
    "s2sad.cli": 9,
    "s2sad.htmlview": 9,
    "s2sad.testing": 9,
    "s2sad.__main__": 9,
    "s2sad": 9,
}

# TEMPORARY: the runtime's own upward imports, which go away when the runtime moves into the
# ``s2sad/runtime/`` package (callbacks the builder registers instead of imports), together with
# the ``_fw`` helpers (the second half of codegen/forward.py) that move into the runtime.  Empty
# this once that move lands: test_temporary_allowance_is_still_needed fails for an entry that no
# import uses any more.  (importer prefix, imported prefix) -> why.
TEMPORARY_RUNTIME_EDGES = {}


def _modules():
    mods = {}
    root = os.path.dirname(PKG)
    for dirpath, dirnames, filenames in os.walk(PKG):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        for f in filenames:
            if f.endswith(".py"):
                path = os.path.join(dirpath, f)
                name = os.path.relpath(path, root)[:-3].replace(os.sep, ".")
                if name.endswith(".__init__"):
                    name = name[:-len(".__init__")]
                mods[name] = path
    return mods


def _imports(name, path, mods):
    """The modules of the package that ``name`` imports (anywhere in its file)."""
    is_pkg = path.endswith("__init__.py")
    here = name if is_pkg else name.rpartition(".")[0]
    with open(path, encoding="utf-8") as fh:
        tree = ast.parse(fh.read(), path)
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = here.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1])
                base = f"{base}.{node.module}" if node.module else base
            else:
                base = node.module or ""
            targets = []
            for a in node.names:
                sub = f"{base}.{a.name}"
                targets.append(sub if sub in mods else base)    # a module, or a name in base
        else:
            continue
        for t in targets:
            while t and t not in mods and t.startswith("s2sad."):
                t = t.rpartition(".")[0]            # `import s2sad.x.y.z` of a name: its module
            if t in mods and t != name:
                out.add(t)
    return out


def _graph():
    mods = _modules()
    return mods, {m: _imports(m, p, mods) for m, p in mods.items()}


def _covers(prefix, name):
    return name == prefix or name.startswith(prefix + ".")


def _layer(name):
    best = max((k for k in LAYERS if _covers(k, name)), key=len, default=None)
    return None if best is None else LAYERS[best]


def _allowed(src, dst):
    return any(_covers(a, src) and _covers(b, dst) for a, b in TEMPORARY_RUNTIME_EDGES)


def _cycles(edges):
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def test_the_walk_sees_function_level_imports():
    """The walk itself: lazy imports inside functions are edges."""
    _, edges = _graph()
    assert "s2sad.codegen.build" in edges["s2sad.cache"]          # inside _build_reverse
    assert "s2sad.codegen.build_forward" in edges["s2sad.cache"]  # inside _build_forward
    assert "s2sad.rules.registry" in edges["s2sad"]               # the package's own imports


def test_every_module_has_a_layer():
    mods, _ = _graph()
    missing = sorted(m for m in mods if _layer(m) is None)
    assert not missing, f"modules without a layer in LAYERS: {missing}"


def test_layers_import_downward_only():
    _, edges = _graph()
    bad = sorted(f"{src} (layer {_layer(src)}) imports {dst} (layer {_layer(dst)})"
                 for src, dsts in edges.items() for dst in dsts
                 if _layer(src) is not None and _layer(dst) is not None and
                 _layer(dst) > _layer(src) and not _allowed(src, dst))
    assert not bad, "upward imports:\n  " + "\n  ".join(bad)


def test_no_import_cycle():
    _, edges = _graph()
    kept = {m: {d for d in ds if not _allowed(m, d)} for m, ds in edges.items()}
    cycles = _cycles(kept)
    lines = []
    for comp in cycles:
        lines.append(", ".join(comp))
        lines += [f"    {m} -> {sorted(d for d in kept[m] if d in comp)}" for m in comp]
    assert not cycles, "import cycles:\n" + "\n".join(lines)


@pytest.mark.parametrize("entry", sorted(TEMPORARY_RUNTIME_EDGES))
def test_temporary_allowance_is_still_needed(entry):
    """An entry of TEMPORARY_RUNTIME_EDGES that no import uses any more must go."""
    _, edges = _graph()
    src, dst = entry
    used = [(m, d) for m, ds in edges.items() for d in ds if _covers(src, m) and _covers(dst, d)]
    assert used, f"no module of {src} imports {dst} any more: remove {entry} from " \
                 f"TEMPORARY_RUNTIME_EDGES"
