"""The on-disk derivative cache: generated modules as real ``.py`` files, shared between processes.

The in-memory cache (:mod:`s2sad.cache`) asks :func:`obtain` on each of its misses.  An entry is
one file ``<folder>/<name>-<key>.py``: the generated module's source, as it was built, then one
comment line of metadata (JSON) and one comment line holding the SHA-256 of everything above it.

- **Key** (:func:`entry_key`): SHA-256 of the function (its file, qualified name, the text of its
  lines, a fingerprint of its code object and of nested ones), its defaults, its closure
  constants, the values of the module globals and builtins its code names (as values, or as stable
  references: a module's name, a library function's module and name, a user function's code), the
  mode, wrt mask and argument kinds, the rule tables in force (s2sad's own files by size and
  modification time, every rule the user declared, NumPy's version) and s2sad's version.  A
  function that reads anything without such a description (an object of a user class...) has no
  key: it is built in memory only.
- **Entry**: every name of the generated module's namespace its code reads is recorded as a
  reference (:func:`_reference`: a global or closure value of the user's function, a builtin, a
  module, an importable module attribute, a constant, a lazy stub of a derived callee) with the
  type of the object.  A namespace object that has no such reference (a local function, an object
  of unknown provenance) means no entry is written: nothing is guessed.
- **Load**: the file's hash, its format, s2sad's version and the key are checked *before* anything
  is compiled; every reference is resolved again and must give an object of the recorded type;
  the globals read by the callees whose return types the code relied on (``callee_globals``)
  must have the values they had.
  Any difference: the entry is built again (and rewritten).  The rule modules that publish the
  ``_adj.<name>`` helpers the code calls were recorded when it was written (``"adj"``); the hit
  imports exactly those, not every rule table.  The module is compiled with the
  file's real name, so tracebacks, pdb and ``linecache`` show it; its source map (generated line
  -> user line) comes from the metadata.
- **jit=True entries** hold the numba-written module (its namespace recorded as it was before
  the numba helpers were bound, which the load binds again: ``codegen/jit.rebind``), and numba
  caches its machine code beside the file (``__pycache__``, ``cache=True``), so another process
  loads that instead of compiling.  numba's cache checks only the file's text, not the values it
  compiled in as constants: the entry records a hash of them (the data the code reads, and the
  globals and closure cells of the user functions and numba functions it reaches), checked on
  load; a change rejects the entry, whose rewrite makes numba compile again.  The entry's key
  holds the argument types and numba options.  Eviction and ``clear`` remove the machine code
  with its entry.
- **Writes** are atomic (a temporary file, then ``os.replace``); a ``filelock`` per entry makes
  racing processes build it once.  Past ``S2SAD_CACHE_MAX_MB`` (default 200) the least recently
  used entries go (a hit sets its file's access time).
- **Folder**: ``S2SAD_CACHE_DIR``, else ``platformdirs.user_cache_dir("s2sad")``.  It must belong
  to the user and be writable by nobody else: otherwise the disk cache is off for the process with
  one warning, or, for a folder the user named in ``S2SAD_CACHE_DIR``, an :class:`S2SADError`.
  ``S2SAD_CACHE=0`` turns the disk cache off.
"""
import builtins
import hashlib
import importlib
import json
import os
import stat
import sys
import threading
import time
import types
import warnings

import numpy as np

from ._version import __version__
from .errors import S2SADError

FORMAT = 1
_MARK_META = "# s2sad-cache-entry "
_MARK_HASH = "# s2sad-cache-sha256 "
_MISSING = object()

# this process: entries read from disk, misses (built), entries written, functions without a key
# or whose derivative could not be written (``skipped``), entries found but refused (``rejected``)
STATS = {"hits": 0, "misses": 0, "writes": 0, "skipped": 0, "rejected": 0}
LOG = []              # the last reasons an entry was skipped or refused (for tests and debugging)
_lock = threading.Lock()


def _note(what, reason):
    with _lock:
        STATS[what] += 1
        LOG.append(f"{what}: {reason}")
        del LOG[:-50]


# -- settings and folder --------------------------------------------------------------------------
def enabled():
    return os.environ.get("S2SAD_CACHE", "1").strip().lower() not in ("0", "false", "off", "no")


def folder():
    """(the cache folder, whether the user named it in ``S2SAD_CACHE_DIR``)."""
    d = os.environ.get("S2SAD_CACHE_DIR")
    if d:
        return os.path.abspath(os.path.expanduser(d)), True
    import platformdirs
    return platformdirs.user_cache_dir("s2sad", appauthor=False), False


def max_bytes():
    try:
        return int(float(os.environ.get("S2SAD_CACHE_MAX_MB", "200")) * 1024 * 1024)
    except ValueError:
        return 200 * 1024 * 1024


_FOLDERS = {}           # folder -> None (usable) or why not
_WARNED = set()


def why_unsafe(path):
    """Why ``path`` cannot hold the cache (another user owns it, others can write to it), or
    None.  Creates it (private to the user) if it is missing."""
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        st = os.stat(path)
    except OSError as e:
        return f"it cannot be created or read ({e})"
    if not stat.S_ISDIR(st.st_mode):
        return "it is not a folder"
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        return f"it belongs to another user (uid {st.st_uid}, not {os.getuid()})"
    if os.name == "posix" and st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return (f"others can write to it (mode {stat.S_IMODE(st.st_mode):o}): they could put "
                f"code there that this process would run")
    return None


def usable_folder():
    """The cache folder, or None when the disk cache is off or the folder is refused."""
    if not enabled():
        return None
    path, explicit = folder()
    why = _FOLDERS.get(path, _MISSING)
    if why is _MISSING:
        why = _FOLDERS[path] = why_unsafe(path)
    if why is None:
        return path
    if explicit:
        raise S2SADError(f"the derivative cache folder {path} (S2SAD_CACHE_DIR) is refused: {why}",
                         fix=f"make it private (chmod 700 {path}, owned by you), point "
                             f"S2SAD_CACHE_DIR at a folder of your own, or set S2SAD_CACHE=0")
    if path not in _WARNED:
        _WARNED.add(path)
        warnings.warn(f"s2sad: the derivative cache folder {path} is refused ({why}); "
                      f"derivatives are not cached on disk in this process. Make it private "
                      f"(chmod 700), or set S2SAD_CACHE_DIR or S2SAD_CACHE=0", RuntimeWarning,
                      stacklevel=2)
    return None


# -- fingerprints ---------------------------------------------------------------------------------
class Unkeyable(Exception):
    """A value without a description that stays the same from one process to the next."""


_LIBRARIES = {"numpy", "scipy", "cupy", "cupyx", "s2sad", "numba", "math", "builtins", "gast"}


def _library(module):
    top = (module or "").split(".")[0]
    return top in _LIBRARIES or top in getattr(sys, "stdlib_module_names", ())


def _attr(module, qualname):
    """The object ``module.qualname`` names, or _MISSING (only modules already imported)."""
    obj = sys.modules.get(module, _MISSING)
    for part in qualname.split("."):
        if obj is _MISSING or part == "<locals>":
            return _MISSING
        obj = getattr(obj, part, _MISSING)
    return obj


def _ref_name(v):
    """(module, qualname) that names ``v`` itself, or None."""
    if isinstance(v, np.ufunc):
        return ("numpy", v.__name__) if getattr(np, v.__name__, None) is v else None
    module, qual = getattr(v, "__module__", None), getattr(v, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(qual, str) or module == "__main__":
        return None
    try:
        return (module, qual) if _attr(module, qual) is v else None
    except Exception:
        return None


def code_fp(c):
    """A code object as the same list in every process (co_consts' sets sorted)."""
    return ["code", c.co_name, getattr(c, "co_qualname", ""), c.co_argcount,
            c.co_posonlyargcount, c.co_kwonlyargcount, c.co_flags, c.co_firstlineno,
            c.co_code.hex(), list(c.co_names), list(c.co_varnames), list(c.co_freevars),
            list(c.co_cellvars), [_const_fp(k) for k in c.co_consts],
            c.co_linetable.hex()]       # (co_lnotab warns from Python 3.12 on)


def _const_fp(k):
    if isinstance(k, types.CodeType):
        return code_fp(k)
    if isinstance(k, tuple):
        return ["tuple", [_const_fp(x) for x in k]]
    if isinstance(k, frozenset):
        return ["frozenset", sorted(json.dumps(_const_fp(x)) for x in k)]
    return [type(k).__name__, repr(k)]


def value_fp(v, depth=0):
    """A description of ``v`` that is the same in another process exactly when the derivative
    built from it would be; raises :class:`Unkeyable` for values that have none."""
    if depth > 20:
        raise Unkeyable("a value nested too deeply")
    t = type(v)
    if v is None or t in (bool, int, float, complex, str, bytes) or v is Ellipsis:
        return [t.__name__, repr(v)]
    if t in (tuple, list):
        if len(v) > 10000:
            raise Unkeyable("a long sequence")
        return [t.__name__, [value_fp(x, depth + 1) for x in v]]
    if t is dict:
        items = [[value_fp(k, depth + 1), value_fp(x, depth + 1)] for k, x in v.items()]
        return ["dict", sorted(items, key=json.dumps)]
    if t in (set, frozenset):
        return [t.__name__, sorted((value_fp(x, depth + 1) for x in v), key=json.dumps)]
    if isinstance(v, types.ModuleType):
        return ["module", v.__name__]
    if t is np.ndarray:
        if v.dtype.hasobject or v.nbytes > (1 << 22):
            raise Unkeyable("an object or large array")
        return ["ndarray", v.dtype.str, list(v.shape),
                hashlib.sha256(np.ascontiguousarray(v).tobytes()).hexdigest()]
    if isinstance(v, np.generic):
        return ["npscalar", v.dtype.str, repr(v.item())]
    if isinstance(v, np.dtype):
        return ["dtype", v.str]
    if t is types.FunctionType and not _library(v.__module__):
        return ["function", v.__module__, v.__qualname__, code_fp(v.__code__),
                value_fp(v.__defaults__, depth + 1), value_fp(v.__kwdefaults__, depth + 1),
                bool(v.__closure__)]
    if isinstance(v, type) and not _library(v.__module__):
        members = []
        for klass in v.__mro__[:-1]:
            for name, m in sorted(vars(klass).items()):
                if name in ("__dict__", "__weakref__", "__doc__", "__module__", "__qualname__"):
                    continue
                f = getattr(m, "__func__", m)
                if isinstance(m, property):
                    members.append([name, "property"] + [code_fp(x.__code__) for x in
                                                         (m.fget, m.fset, m.fdel) if x])
                elif isinstance(f, types.FunctionType):
                    members.append([name, type(m).__name__, code_fp(f.__code__)])
                else:
                    members.append([name, value_fp(m, depth + 1)])
        return ["class", v.__module__, v.__qualname__, [k.__qualname__ for k in v.__mro__],
                members]
    if t is types.MethodType:
        return ["method", value_fp(v.__func__, depth + 1), value_fp(v.__self__, depth + 1)]
    from .runtime import DerivedStub
    if isinstance(v, DerivedStub):
        return ["stub", value_fp(v.callee, depth + 1), list(v.mask)]
    if t.__name__ == "partial" and t.__module__ == "functools":
        return ["partial", value_fp(v.func, depth + 1), value_fp(v.args, depth + 1),
                value_fp(v.keywords, depth + 1)]
    ref = _ref_name(v)
    if ref is not None:
        return ["ref", ref[0], ref[1]]
    raise Unkeyable(f"a {t.__module__}.{t.__qualname__} object")


def _names_read(code):
    out, todo = set(), [code]
    while todo:
        c = todo.pop()
        out.update(c.co_names)
        todo.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    return out


_FILES_FP = None


def _files_fp():
    """s2sad's own files by path, size and modification time (computed once a process)."""
    global _FILES_FP
    if _FILES_FP is None:
        h = hashlib.sha256()
        todo = [os.path.dirname(os.path.abspath(__file__))]
        while todo:
            with os.scandir(todo.pop()) as it:
                found = sorted(it, key=lambda e: e.name)
            for e in found:
                if e.is_dir() and e.name != "__pycache__":
                    todo.append(e.path)
                elif e.name.endswith(".py"):
                    st = e.stat()
                    h.update(f"{e.path}:{st.st_size}:{st.st_mtime_ns}\n".encode())
        _FILES_FP = h.hexdigest()
    return _FILES_FP


_RULES_FP = [0, None]


def _rules_fp():
    """Every rule the user declared (``defrule``, ``defzero``, ``defmethod``...), as values."""
    from .rules import registry
    decl = registry.USER_DECLARATIONS
    n = len(decl)
    if _RULES_FP[0] != n or _RULES_FP[1] is None:
        _RULES_FP[1] = hashlib.sha256(json.dumps(
            [[what, value_fp(args)] for what, args in decl[:n]]).encode()).hexdigest()
        _RULES_FP[0] = n
    return _RULES_FP[1]


def _source_text(pyfunc):
    """The lines of the file the function's code spans (decorators included)."""
    import linecache
    code = pyfunc.__code__
    lines = linecache.getlines(code.co_filename, pyfunc.__globals__)
    last = code.co_firstlineno
    todo = [code]
    while todo:
        c = todo.pop()
        last = max([last] + [ln for _, _, ln in c.co_lines() if ln is not None])
        todo.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    if not lines:
        raise Unkeyable("no source text")
    return "".join(lines[code.co_firstlineno - 1:last])


def entry_key(pyfunc, mode, mask, kinds):
    """The entry's key (hex SHA-256); raises :class:`Unkeyable`."""
    from .frontend.source import split_closure
    code = pyfunc.__code__
    glb = pyfunc.__globals__
    static, data = split_closure(pyfunc) if pyfunc.__closure__ else ({}, [])
    closure = [[n, value_fp(static[n]) if n in static else "data"]
               for n in code.co_freevars]
    names = []
    for n in sorted(_names_read(code)):
        if n in glb:
            names.append([n, value_fp(glb[n])])
        elif getattr(builtins, n, _MISSING) is not _MISSING:
            names.append([n, "builtin"])
    parts = [FORMAT, __version__, sys.implementation.cache_tag, np.__version__, _files_fp(),
             _rules_fp(), code.co_filename, pyfunc.__qualname__, pyfunc.__module__,
             hashlib.sha256(_source_text(pyfunc).encode("utf-8", "surrogatepass")).hexdigest(),
             code_fp(code), value_fp(pyfunc.__defaults__), value_fp(pyfunc.__kwdefaults__),
             closure, names, mode, [bool(m) for m in mask], list(kinds)]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


# -- references to the namespace's objects --------------------------------------------------------
def _type_name(v):
    t = type(v)
    return f"{t.__module__}.{t.__qualname__}"


def _reference(name, v, pyfunc, top=True):
    """How to get ``v`` (the namespace's ``name``) again in another process, or None."""
    from .runtime import DerivedStub
    from .runtime.forward import ForwardStub
    glb = pyfunc.__globals__
    cells = dict(zip(pyfunc.__code__.co_freevars, pyfunc.__closure__ or ()))
    if top:
        if name == "_globals" and v is glb:
            return ["globals"]
        if isinstance(v, types.CellType):
            for n, c in cells.items():
                if c is v:
                    return ["cell", n]
            return None
        stub = getattr(v, "__self__", None)
        if isinstance(stub, DerivedStub) and getattr(v, "__name__", "") == "fwd":
            callee = _reference(None, stub.callee, pyfunc, False)
            return callee and ["stub_fwd", callee, list(stub.mask)]
        if v is DerivedStub.bwd:
            return ["stub_bwd"]
        if type(v) is ForwardStub:
            callee = _reference(None, v.callee, pyfunc, False)
            return callee and ["stub_jvp", callee, list(v.mask)]
    if name is not None:
        c = cells.get(name)
        if c is not None:
            try:
                if c.cell_contents is v:
                    return ["closure", name]
            except ValueError:
                pass
        if glb.get(name, _MISSING) is v:
            return ["global", name]
        if getattr(builtins, name, _MISSING) is v:
            return ["builtin", name]
    if isinstance(v, types.ModuleType):
        return ["module", v.__name__] if sys.modules.get(v.__name__) is v else None
    t = type(v)
    if v is None or t in (bool, int, str):
        return ["const", v]
    if t in (float, complex):
        return ["const_" + t.__name__, repr(v)]
    from .ir import Origin
    if t is Origin:                     # a user line that run-time refusals name
        return ["origin", _origin_out(v)]
    ref = _ref_name(v)
    if ref is not None:
        return ["attr", ref[0], ref[1]]
    if name is None:
        # a callee: a global or closure value of the function under another name
        for n, c in cells.items():
            try:
                if c.cell_contents is v:
                    return ["closure", n]
            except ValueError:
                pass
        for n, x in glb.items():
            if x is v:
                return ["global", n]
    return None


def _resolve(ref, pyfunc, stubs):
    kind = ref[0]
    if kind == "globals":
        return pyfunc.__globals__
    if kind == "cell":
        return dict(zip(pyfunc.__code__.co_freevars, pyfunc.__closure__ or ()))[ref[1]]
    if kind == "closure":
        return dict(zip(pyfunc.__code__.co_freevars, pyfunc.__closure__ or ()))[ref[1]].cell_contents
    if kind == "global":
        return pyfunc.__globals__[ref[1]]
    if kind == "builtin":
        return getattr(builtins, ref[1])
    if kind == "module":
        return importlib.import_module(ref[1])
    if kind == "const":
        return ref[1]
    if kind == "const_float":
        return float(ref[1])
    if kind == "const_complex":
        return complex(ref[1])
    if kind == "attr":
        if ref[1] not in sys.modules:
            importlib.import_module(ref[1])
        obj = _attr(ref[1], ref[2])
        if obj is _MISSING:
            raise LookupError(f"{ref[1]}.{ref[2]} is gone")
        return obj
    if kind in ("stub_fwd", "stub_jvp"):
        callee = _resolve(ref[1], pyfunc, stubs)
        k = (kind, id(callee), tuple(ref[2]))
        s = stubs.get(k)
        if s is None:
            from .runtime import DerivedStub
            from .runtime.forward import ForwardStub
            s = stubs[k] = (DerivedStub if kind == "stub_fwd" else ForwardStub)(callee,
                                                                               tuple(ref[2]))
        return s.fwd if kind == "stub_fwd" else s
    if kind == "origin":
        return _origin_in(ref[1])
    if kind == "stub_bwd":
        from .runtime import DerivedStub
        return DerivedStub.bwd
    raise LookupError(f"unknown reference {kind!r}")


# -- entries --------------------------------------------------------------------------------------
def _origin_out(o):
    return None if o is None else [o.file, o.line, o.col, o.text, o.func]


def _origin_in(o):
    from .ir import Origin
    return None if o is None else Origin(*o)


class LoadedFunction:
    """What a derivative read from disk keeps of the IR function it was built from: its name,
    parameters, where it is defined, the function itself and the module globals it read."""

    def __init__(self, pyfunc, name, params, origin, global_names):
        self.pyfunc, self.name, self.params, self.origin = pyfunc, name, params, origin
        glb = pyfunc.__globals__
        self.global_refs = (glb, tuple((n, glb.get(n, _MISSING)) for n in global_names))


def entry_path(folder_path, pyfunc, key):
    name = "".join(c if c.isalnum() or c == "_" else "_" for c in pyfunc.__qualname__)[:60]
    return os.path.join(folder_path, f"{name}-{key[:40]}.py")


def _metadata(d, pyfunc, key):
    """The entry's metadata for derivative ``d``, or raises Unkeyable."""
    mod = d.module
    code = compile(mod.source, "<check>", "exec")
    refs = {}
    jit = getattr(d, "jit_binding", None)
    # jit=True: the names as they were before codegen/jit.bind_namespace (the numba helpers and
    # versions it bound are made again when the entry is read: codegen/jit.rebind)
    namespace = jit[0] if jit is not None else mod.namespace
    for n in sorted(_names_read(code)):
        if n not in namespace:
            if n in mod.namespace and n not in ("_rt", "_adj", "_fw", "_np"):
                raise Unkeyable(f"the generated module's {n!r} was bound for numba only")
            continue
        v = namespace[n]
        r = _reference(n, v, pyfunc)
        if r is None:
            raise Unkeyable(f"the generated module's {n!r} ({_type_name(v)}) has no reference "
                            f"another process can resolve")
        refs[n] = [r, _type_name(v)]
    adj = _helper_tables(mod.source, refs) if jit is None else {}
    fn = d.ir
    glb, grefs = getattr(fn, "global_refs", (None, ()))
    # globals the code relied on through its callees (their return types: classify/types.py),
    # which the key does not hold: checked again when the entry is loaded
    own = _names_read(pyfunc.__code__)
    callee_globals = [[n, value_fp(glb[n])] for n, _ in grefs if n not in own and n in glb]
    # (the names the code reads: those of refs, and the numba helper modules, which hold none)
    environment = _environment_fp(mod.namespace, refs) if jit is not None else None
    sites = []
    for origin, callee, cls, chosen in d.sites:
        if not all(isinstance(x, str) or x is None for x in (callee, cls, chosen)):
            raise Unkeyable("a call site described by objects")
        sites.append([_origin_out(origin), callee, cls, chosen])
    return {"format": FORMAT, "version": __version__, "key": key, "name": mod.name,
            "mode": d.mode, "fwd": d.fwd.__name__,
            "bwd": d.bwd.__name__ if d.bwd is not None else None,
            "wrt": list(d.wrt), "sites": sites, "refs": refs, "adj": adj,
            "lines": {str(k): _origin_out(o) for k, o in mod.line_origins.items()},
            "fn": [fn.name, list(fn.params), _origin_out(fn.origin)],
            "globals": [n for n, _ in grefs], "callee_globals": callee_globals,
            "written_params": getattr(d, "written_params", None),
            "self_writes": getattr(d, "self_writes", None),
            "jit": jit[1] if jit is not None else None, "environment": environment}


def _data_like(v):
    return v is None or type(v) in (bool, int, float, complex, str, bytes, tuple, list, dict) or \
        isinstance(v, (np.ndarray, np.generic, np.dtype))


def _environment_fp(namespace, names):
    """What numba compiles into a jit entry's machine code as constants, as a hex SHA-256: the
    data values (numbers, arrays, tuples...) the generated code reads, and those read by the user
    functions it reaches (their globals and closure cells, followed through the functions and
    numba dispatchers they read, across modules).  numba's own cache checks none of them (only
    the file's text), so the disk cache does: a change rejects the entry, and the entry written
    again differs in this line of its metadata, which makes numba compile again."""
    out = []
    seen = set()
    todo = []
    for n in sorted(names):
        if n not in namespace:
            continue
        v = namespace[n]
        if _data_like(v):
            out.append(["ns", n, value_fp(v)])
        else:
            todo.append(v)
    while todo:
        v = todo.pop()
        f = getattr(v, "py_func", v)                # (a numba dispatcher: its Python function)
        if id(f) in seen or not isinstance(f, types.FunctionType) or _library(f.__module__):
            continue
        seen.add(id(f))
        where = f"{f.__module__}.{f.__qualname__}"
        cells = dict(zip(f.__code__.co_freevars, f.__closure__ or ()))
        for n in sorted(_names_read(f.__code__) | set(cells)):
            if n in cells:
                try:
                    g = cells[n].cell_contents
                except ValueError:
                    continue
            else:
                g = f.__globals__.get(n, _MISSING)
                if g is _MISSING:
                    continue
            if _data_like(g):
                out.append([where, n, value_fp(g)])
            else:
                todo.append(g)
    return hashlib.sha256(json.dumps(sorted(out, key=json.dumps)).encode()).hexdigest()


def _helper_tables(source, refs):
    """{name: the rule module defining it} of every ``_adj.<name>`` the generated code reads.

    The helpers are published in :mod:`s2sad.rules.adjoints` as their tables load; a hit imports
    exactly these modules (:func:`_import_helpers`) instead of letting ``_adj.<name>`` load every
    table."""
    if refs.get("_adj", [None])[0] != ["module", "s2sad.rules.adjoints"]:
        return {}
    import ast
    from .rules import adjoints
    out = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                node.value.id == "_adj":
            fn = getattr(adjoints, node.attr, None)
            module = getattr(fn, "__module__", None)
            if isinstance(module, str) and module.startswith("s2sad.rules."):
                out[node.attr] = module
    return dict(sorted(out.items()))


def _import_helpers(adj):
    """Import the rule modules that define the ``_adj`` helpers of an entry (see above); each
    name must then be published without loading anything else."""
    if not adj:
        return
    from .rules import adjoints
    for module in sorted(set(adj.values())):
        if not module.startswith("s2sad.rules."):
            raise ValueError(f"a helper module outside s2sad's rules: {module!r}")
        try:
            importlib.import_module(module)
        except ImportError as e:
            raise ValueError(f"the helper module {module} cannot be imported ({e})") from None
    published = vars(adjoints)
    missing = sorted(n for n, m in adj.items() if getattr(published.get(n), "__module__", None) != m)
    if missing:
        raise ValueError(f"_adj.{missing[0]} is not published by {adj[missing[0]]}")


def _write(path, source, meta):
    if not source.endswith("\n"):
        source += "\n"
    body = source + _MARK_META + json.dumps(meta) + "\n"
    text = body + _MARK_HASH + hashlib.sha256(body.encode("utf-8", "surrogatepass")).hexdigest() \
        + "\n"
    tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
    try:
        with open(tmp, "w", encoding="utf-8", errors="surrogatepass", newline="") as fh:
            fh.write(text)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _read(path, key):
    """(source, metadata) of a checked entry, None if there is none; raises ValueError for an
    entry that fails a check."""
    try:
        with open(path, encoding="utf-8", errors="surrogatepass", newline="") as fh:
            text = fh.read()
    except FileNotFoundError:
        return None
    body, sep, digest = text.rpartition(_MARK_HASH)
    if not sep or hashlib.sha256(body.encode("utf-8", "surrogatepass")).hexdigest() != \
            digest.strip():
        raise ValueError("its hash does not match its content")
    source, sep, meta = body.rpartition(_MARK_META)
    if not sep:
        raise ValueError("no metadata")
    meta = json.loads(meta)
    if meta.get("format") != FORMAT or meta.get("version") != __version__:
        raise ValueError(f"written by another s2sad version ({meta.get('version')})")
    if meta.get("key") != key:
        raise ValueError("its key is another one")
    return source, meta


def _load(path, key, pyfunc):
    """The Derivative of a checked entry, or None."""
    got = _read(path, key)
    if got is None:
        return None
    source, meta = got
    glb = pyfunc.__globals__
    for n, fp in meta.get("callee_globals", ()):
        try:
            now = value_fp(glb[n])
        except (KeyError, Unkeyable):
            now = None
        if now is None or json.dumps(now) != json.dumps(fp):
            raise ValueError(f"the global {n!r} a callee reads has another value now")
    stubs, namespace = {}, {}
    for n, (ref, tname) in meta["refs"].items():
        try:
            v = _resolve(ref, pyfunc, stubs)
        except Exception as e:
            raise ValueError(f"{n!r} cannot be resolved again ({type(e).__name__}: {e})")
        if _type_name(v) != tname:
            raise ValueError(f"{n!r} is a {_type_name(v)} now, not a {tname}")
        namespace[n] = v
    _import_helpers(meta.get("adj"))
    if meta.get("jit") is not None:
        from .codegen.jit import rebind
        unbound = dict(namespace)
        rebind(namespace, meta["jit"])
        try:
            now = _environment_fp(namespace, meta["refs"])
        except Unkeyable as e:
            raise ValueError(f"its environment has no description now ({e})") from None
        if now != meta.get("environment"):
            raise ValueError("a value numba compiled into its machine code has changed")
    from .codegen.derivative import Derivative
    from .codegen.load import GeneratedModule
    lines = {int(k): _origin_in(o) for k, o in meta["lines"].items()}
    mod = GeneratedModule(meta["name"], source, namespace, lines, filename=path)
    name, params, origin = meta["fn"]
    fn = LoadedFunction(pyfunc, name, params, _origin_in(origin), meta["globals"])
    sites = [(_origin_in(o), c, k, ch) for o, c, k, ch in meta["sites"]]
    fwd = mod[meta["fwd"]]
    bwd = mod[meta["bwd"]] if meta["bwd"] else None
    d = Derivative(fn, mod, fwd, bwd, meta["wrt"], sites, mode=meta["mode"])
    if meta["mode"] == "forward":
        d.jvp = fwd
    if meta["written_params"] is not None:
        d.written_params = meta["written_params"]
    d.self_writes = meta.get("self_writes")
    d.cache_path = path
    if meta.get("jit") is not None:
        d.jit_binding = (unbound, meta["jit"])
    return d


def _try_load(path, key, pyfunc):
    try:
        d = _load(path, key, pyfunc)
    except (ValueError, KeyError, TypeError, SyntaxError) as e:
        _note("rejected", f"{path}: {e}")
        return None
    if d is not None:
        with _lock:
            STATS["hits"] += 1
        try:
            # recently used (for eviction): its access time; the modification time stays, since
            # older numba takes it as the stamp of the machine code it cached beside the file
            os.utime(path, ns=(time.time_ns(), os.stat(path).st_mtime_ns))
        except OSError:
            pass
    return d


def obtain(pyfunc, mode, mask, kinds, build):
    """The derivative from the disk cache, else ``build()`` (written to the cache if it can be)."""
    where = usable_folder()
    if where is None:
        return build()
    if not all(type(k) is str for k in kinds):
        # specialised on a function or module passed in (frontend/statics.py): its identity has
        # no reference another process could check, so the derivative stays in memory
        _note("skipped", f"{pyfunc.__qualname__}: specialised on a function or module argument")
        return build()
    try:
        key = entry_key(pyfunc, mode, mask, kinds)
    except Unkeyable as e:
        _note("skipped", f"{pyfunc.__qualname__}: no key ({e})")
        key = None
    if key is None:
        return build()          # (outside the except: a refusal build() raises has no context)
    path = entry_path(where, pyfunc, key)
    d = _try_load(path, key, pyfunc)
    if d is not None:
        return d
    from filelock import FileLock, Timeout
    try:
        lock = FileLock(path + ".lock", timeout=120)
        lock.acquire()
    except (OSError, Timeout) as e:
        _note("skipped", f"{path}: no lock ({e})")
        with _lock:
            STATS["misses"] += 1
        return build()
    try:
        d = _try_load(path, key, pyfunc)        # built by another process meanwhile
        if d is not None:
            return d
        with _lock:
            STATS["misses"] += 1
        d = build()
        try:
            meta = _metadata(d, pyfunc, key)
        except Unkeyable as e:
            _note("skipped", f"{pyfunc.__qualname__}: not written ({e})")
            return d
        try:
            _write(path, d.module.source, meta)
        except OSError as e:
            _note("skipped", f"{path}: not written ({e})")
            return d
        with _lock:
            STATS["writes"] += 1
    finally:
        lock.release()
    _evict(where)
    # the module as it is read back, compiled under its real file name
    loaded = _try_load(path, key, pyfunc)
    if loaded is not None:
        with _lock:
            STATS["hits"] -= 1                # (not a hit: it was built here)
        return loaded
    return d


# -- managing the folder --------------------------------------------------------------------------
def _machine_code(path):
    """{entry stem: [(file, size)]}: what numba cached beside the folder's jit entries (its
    ``__pycache__``, files named after the entry's file)."""
    out = {}
    try:
        with os.scandir(os.path.join(path, "__pycache__")) as it:
            for e in it:
                if e.name.endswith((".nbi", ".nbc")) and e.is_file(follow_symlinks=False):
                    stem = e.name.split(".", 1)[0]
                    out.setdefault(stem, []).append((e.path, e.stat(follow_symlinks=False).st_size))
    except (FileNotFoundError, NotADirectoryError):
        pass
    return out


def entries(path=None):
    """[(file, size, time of last use)] of the folder's entries; a jit entry's size includes the
    machine code numba cached for it."""
    path = path or folder()[0]
    out = []
    code = _machine_code(path)
    try:
        with os.scandir(path) as it:
            for e in it:
                if e.name.endswith(".py") and e.is_file(follow_symlinks=False):
                    st = e.stat(follow_symlinks=False)
                    extra = sum(s for _, s in code.get(e.name[:-3], ()))
                    out.append((e.path, st.st_size + extra, max(st.st_atime, st.st_mtime)))
    except FileNotFoundError:
        pass
    return out


def _evict(path, limit=None):
    limit = max_bytes() if limit is None else limit
    found = entries(path)
    total = sum(s for _, s, _ in found)
    if total <= limit:
        return 0
    gone = 0
    code = _machine_code(path)
    for file, size, _ in sorted(found, key=lambda e: e[2]):
        if total <= limit:
            break
        stem = os.path.basename(file)[:-3]
        for f in [file, file + ".lock"] + [f for f, _ in code.get(stem, ())]:
            try:
                os.unlink(f)
            except OSError:
                pass
        total -= size
        gone += 1
    return gone


def clear(path=None):
    """Remove every entry (and lock file) of the folder; returns how many entries went."""
    path = path or folder()[0]
    n = 0
    try:
        names = os.listdir(path)
    except FileNotFoundError:
        return 0
    for f in names:
        if f.endswith((".py", ".py.lock")) or f.endswith(".tmp"):
            try:
                os.unlink(os.path.join(path, f))
                n += f.endswith(".py")
            except OSError:
                pass
    for files in _machine_code(path).values():
        for f, _ in files:
            try:
                os.unlink(f)
            except OSError:
                pass
    return n


def info():
    """The folder, its entries and their size, and this process's hits and misses."""
    path, explicit = folder()
    found = entries(path)
    with _lock:
        stats = dict(STATS)
    asked = stats["hits"] + stats["misses"]
    return {"folder": path, "explicit": explicit, "enabled": enabled(),
            "refused": why_unsafe(path) if os.path.isdir(path) else None,
            "entries": len(found), "bytes": sum(s for _, s, _ in found),
            "limit_bytes": max_bytes(), **stats,
            "hit_rate": stats["hits"] / asked if asked else None}
