"""The runtime package (``_rt`` in generated code) imports nothing above it: the layers above
register callbacks in :mod:`s2sad.runtime.hooks`.  These tests check that every hook is set once
s2sad is imported and its rule tables are loaded, and that the package keeps one namespace."""
import ast
import pathlib

import numpy as np

import s2sad
from s2sad import runtime
from s2sad.runtime import hooks

_ABOVE = ("api", "cache", "cli", "classify", "codegen", "frontend", "rules", "transforms", "testing",
          "kernels")


def test_every_hook_is_set():
    from s2sad.rules import registry
    registry.lookup(np.sin)                       # loads the rule tables
    unset = [k for k, v in vars(hooks).items()
             if not k.startswith("_") and k != "register" and v is None]
    assert not unset


def test_register_refuses_unknown_names():
    try:
        hooks.register(no_such_hook=print)
    except NameError:
        return
    raise AssertionError("register accepted an unknown hook")


def test_runtime_imports_nothing_above_it():
    root = pathlib.Path(runtime.__file__).parent
    bad = []
    for path in sorted(root.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level >= 2:
                top = (node.module or "").split(".")[0]
                names = [a.name for a in node.names] if not node.module else [top]
                bad += [f"{path.name}: {n}" for n in names if n in _ABOVE]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and \
                    (node.module or "").startswith("s2sad"):
                bad.append(f"{path.name}: {node.module}")
            elif isinstance(node, ast.Import):
                bad += [f"{path.name}: {a.name}" for a in node.names if a.name.startswith("s2sad")]
    assert not bad, bad


def test_one_namespace():
    """Generated code reaches every helper as ``_rt.name`` (private ones too), and rules and
    messages name them ``s2sad.runtime.name``."""
    from s2sad.runtime import dispatch, containers
    assert runtime.call is dispatch.call and runtime._data_cells is dispatch._data_cells
    assert runtime.build_tuple is containers.build_tuple
    assert runtime.call.__module__ == "s2sad.runtime"
    assert not hasattr(runtime, "jvp_call")        # _fw's helpers stay in runtime.forward
    from s2sad.runtime import forward
    assert forward.zeros_like is not runtime.zeros_like
