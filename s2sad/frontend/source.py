"""Source retrieval and namespace resolution for a user's function."""
import __future__
import ast
import builtins
import contextlib
import inspect
import types as _types
import keyword
import linecache
import os
import re
import sys
import threading
import types

from ..errors import SourceUnavailableError, StaleSourceError
from ..ir import Origin, Uncommented, Verbatim

_MISSING = object()


class FunctionSource:
    """The parsed definition of a Python function and the namespaces its names resolve in."""

    def __init__(self, fn):
        self.fn = fn
        self.code = fn.__code__
        self.file = self.code.co_filename
        self.first_line = self.code.co_firstlineno
        self.node, self.lines, self._tree = _parse(fn)
        static, data = split_closure(fn)
        self.closure = static              # cells read as constants at build time
        self.data_cells = data             # cells that become leading parameters of the sweeps
        self.cells = dict(zip(self.code.co_freevars, fn.__closure__ or ()))
        self.globals = fn.__globals__
        self.imports = {}                  # names imported inside the function (lowering fills it)

    def resolve(self, name):
        """Value of a free name: an import inside the function, a closure cell, then module
        globals, then builtins; _MISSING if none."""
        if name in self.imports:
            return self.imports[name]
        if name in self.closure:
            return self.closure[name]
        if name in self.globals:
            return self.globals[name]
        return getattr(builtins, name, _MISSING)

    def origin(self, node):
        """Origin of a gast node: file, line in the file, and that line's text.  For a function
        defined inside generated code (a closure s2sad re-emitted), the user's own line."""
        lineno = getattr(node, "lineno", None)
        if lineno is None:
            return Origin(self.file, self.first_line, 0, "", self.fn.__qualname__)
        line = self.first_line + lineno - 1
        user = origin_of(self.file, line)
        if user is not None:
            return user
        text = self.lines[lineno - 1] if 0 < lineno <= len(self.lines) else ""
        return Origin(self.file, line, getattr(node, "col_offset", 0), text.strip(),
                      self.fn.__qualname__)

    def _original(self, node):
        """The node of the untouched syntax tree (``ast``) at ``node``'s place, or None.  The
        gast tree may have been rewritten by the passes before lowering; the text is not."""
        if self._tree is None or getattr(node, "lineno", None) is None:
            return None
        line = self.first_line + node.lineno - 1
        kind = type(node).__name__
        for n in ast.walk(self._tree):
            if type(n).__name__ == kind and getattr(n, "lineno", None) == line and \
                    n.col_offset == node.col_offset:
                return n
        return None

    def segment(self, node):
        """The source of a nested def/lambda as (text, Origin) pairs, to be emitted as written.

        A def's lines lose the indentation of its first line; lines inside a multi-line string
        are :class:`~s2sad.ir.Verbatim` (written exactly as in the file, nothing added),
        and a line that continues onto the next one (inside a string, after a backslash) is
        :class:`~s2sad.ir.Uncommented`.  The text is parsed back and compared with the
        definition, so nothing but the definition itself can reach the generated module."""
        import gast
        orig = self._original(node)
        first, last = node.lineno, getattr(node, "end_lineno", node.lineno)
        if isinstance(node, (gast.FunctionDef, gast.AsyncFunctionDef)) and node.decorator_list:
            first = min(first, min(d.lineno for d in node.decorator_list))
        if isinstance(node, gast.Lambda):
            text = None
            if first == last and 0 < first <= len(self.lines):
                # columns are UTF-8 byte offsets
                raw = self.lines[first - 1].encode("utf-8")
                text = raw[node.col_offset:node.end_col_offset].decode("utf-8", "replace")
                if orig is None or not _same_tree(text, orig, "eval"):
                    text = None
            if text is None:
                text = ast.unparse(orig if orig is not None else gast.gast_to_ast(node))
            return [(text, self.origin(node))]
        lines = self.lines[first - 1:last]
        inside = set()          # indices of lines that begin inside a string token
        for n in (ast.walk(orig) if orig is not None else gast.walk(node)):
            if type(n).__name__ == "JoinedStr" or type(n).__name__ == "Constant" and \
                    isinstance(n.value, (str, bytes)):
                start = n.lineno - (self.first_line - 1 if orig is not None else 0)
                end = (getattr(n, "end_lineno", None) or n.lineno) - \
                    (self.first_line - 1 if orig is not None else 0)
                inside.update(range(start + 1 - first, end + 1 - first))
        margin = _indent(lines[0]) if lines else ""
        body = []
        for k, line in enumerate(lines):
            if k in inside:
                body.append(Verbatim(line))
                continue
            ws = len(line) - len(line.lstrip(" \t\f"))
            indent, rest = _indent(line), line[ws:]
            text = indent[len(margin):] + rest if indent.startswith(margin) else rest
            if k + 1 in inside or rest.rstrip().endswith("\\"):
                text = Uncommented(text)
            body.append(text)
        if orig is not None and not _same_tree("\n".join(body), orig, "exec"):
            from ..errors import UnsupportedSyntaxError
            raise UnsupportedSyntaxError(
                f"s2sad cannot copy the nested definition {getattr(node, 'name', 'lambda')!r} "
                f"into the derivative exactly as written",
                origin=self.origin(node),
                fix="define the function at module level and call it from here")
        out = []
        for k, text in enumerate(body):
            fake = type("N", (), {"lineno": first + k, "col_offset": 0})()
            out.append((text, self.origin(fake)))
        return out


def _indent(line):
    """The indentation of a line as Python counts it (a form feed resets it)."""
    ws = line[:len(line) - len(line.lstrip(" \t\f"))]
    return ws.rsplit("\f", 1)[-1]


def _same_tree(text, orig, mode):
    """True when ``text`` parses to exactly the ``ast`` node ``orig`` (a statement in "exec"
    mode, an expression in "eval" mode)."""
    try:
        tree = ast.parse(text, mode=mode)
    except (SyntaxError, ValueError, RecursionError):
        return False
    if mode == "eval":
        got = tree.body
    else:
        got = tree.body[0] if len(tree.body) == 1 else None
    try:
        return got is not None and ast.dump(got) == ast.dump(orig)
    except RecursionError:
        return False


_STATIC_TYPES = None


def _static_value(v):
    """Values a closure cell may hold that s2sad reads as constants at build time (functions,
    modules, classes, ufuncs); everything else (numbers, arrays, containers, objects) is data."""
    global _STATIC_TYPES
    if _STATIC_TYPES is None:
        import types
        import numpy as np
        _STATIC_TYPES = (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType,
                         types.BuiltinMethodType, types.MethodType, np.ufunc, str, bytes, bool,
                         type(None), int)
    return isinstance(v, _STATIC_TYPES) or callable(v) and not hasattr(v, "__dict__")


def _closure_carries(v):
    """A function in a cell that captured data carrying a derivative (``g1 = lambda t: y`` read by
    another closure), or a bound method whose object holds one (``g3 = box.scaled``), or a
    ufunc of np.frompyfunc over such a function, is data: its captured values' adjoints go back
    through the cell."""
    t = type(v)
    if t is _types.MethodType:
        from ..runtime import differentiable
        return differentiable(v)
    if t is not _types.FunctionType:
        import numpy as np
        if isinstance(v, np.ufunc):
            from ..runtime import differentiable
            return differentiable(v)
        return False
    if not v.__closure__:
        return False
    from ..runtime import _closure_differentiable
    return _closure_differentiable(v)


def split_closure(fn):
    """({name: value} of static closure cells, [names of data cells]) in co_freevars order."""
    static, data = {}, []
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
        try:
            v = cell.cell_contents
        except ValueError:          # empty cell (bound later in the enclosing scope)
            data.append(name)
            continue
        if _static_value(v) and (v is fn or not _closure_carries(v)):   # (itself: recursion)
            static[name] = v
        else:
            data.append(name)
    return static, data


from ..runtime.dispatch import data_cell_values  # noqa: E402,F401 (its home: the runtime reads it too)


def get_function(obj):
    """The Python function behind ``obj`` (unwrapping decorators, bound methods, our wrappers,
    Numba dispatchers)."""
    from ..runtime.values import numba_function, numba_ufunc
    seen = set()
    while True:
        if id(obj) in seen:
            break
        seen.add(id(obj))
        if hasattr(obj, "__s2sad_function__"):
            obj = obj.__s2sad_function__
            continue
        if inspect.ismethod(obj):
            obj = obj.__func__
            continue
        if numba_function(obj) is not None:         # @numba.njit: the Python function it compiles
            obj = numba_function(obj)
            continue
        if numba_ufunc(obj):                        # numba.vectorize: no derivative of its kernel
            break
        if hasattr(obj, "__wrapped__") and not inspect.isfunction(obj):
            # a wrapper object (functools.lru_cache...): its Python function is underneath.  A
            # wrapper *function* (functools.wraps) is differentiated itself: it may change values.
            obj = obj.__wrapped__
            continue
        break
    if not inspect.isfunction(obj):
        wrapper = primitive_function(obj)
        if wrapper is not None:
            return wrapper
        raise SourceUnavailableError(
            f"{obj!r} is not a Python function with source code (it is a {type(obj).__name__})",
            fix="differentiate a function defined with `def` in a .py file, or declare a rule for "
                "this callee with s2sad.defrule(...)")
    return obj


_PRIMITIVES = {}


def primitive_function(fn):
    """For a callee with a derivative rule but no Python source (``np.sin``, ``sp.expit``), a
    one-line Python function that calls it, so that ``grad(np.sin)`` works like ``grad(f)``.
    Its parameters are the rule's required positional ones; its source lives in ``linecache``."""
    from ..rules.registry import lookup, _key
    try:
        rule = lookup(fn)
    except TypeError:
        return None
    if rule is None or rule.zero:
        return None
    key = _key(fn)
    made = _PRIMITIVES.get(key)
    if made is not None:
        return made
    params = [p.name for p in rule.signature.parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty]
    if not params:
        return None
    import linecache
    ident = "".join(c if c.isalnum() else "_" for c in rule.name.split(".")[-1]) or "primitive"
    if not ident.isidentifier() or keyword.iskeyword(ident):
        ident = f"{ident}_"
    filename = f"<s2sad primitive {rule.name}>"
    src = f"def {ident}({', '.join(params)}):\n    return _callee({', '.join(params)})\n"
    linecache.cache[filename] = (len(src), None, split_lines(src, True), filename)
    ns = {"_callee": fn, "__name__": "s2sad.primitives"}
    exec(compile(src, filename, "exec"), ns)
    made = _PRIMITIVES[key] = ns[ident]
    return made


# -- generated modules: the user's line behind each of their lines --------------------------------
# codegen/load.py registers every module it loads; an Origin (of a node of a function s2sad
# re-emitted, of a traceback's frame) names the user's line instead of the generated one.
_GENERATED = {}          # file name of a generated module -> the GeneratedModule


def register_generated(module):
    """Record a generated module (``module.filename``, ``module.line_origins``: generated line
    number, 1-based, -> Origin)."""
    _GENERATED[module.filename] = module


def origin_of(filename, lineno):
    """The user's Origin for a line of generated code, or None."""
    mod = _GENERATED.get(filename)
    if mod is None:
        return None
    return mod.line_origins.get(lineno)


def is_generated(filename):
    return filename in _GENERATED


# -- reading the source of the code that runs -----------------------------------------------
_LINE_END = re.compile(r"\r\n|\r|\n")


def split_lines(text, keepends=False):
    """``text`` split at Python's own line ends only (``\n``, ``\r\n``, ``\r``), like
    ``str.splitlines``.  ``str.splitlines`` also splits at form feed, vertical tab, U+001C..U+001E,
    U+0085, U+2028 and U+2029, which may sit inside a string literal: splitting there would turn
    text inside a string into code."""
    out, start = [], 0
    for m in _LINE_END.finditer(text):
        out.append(text[start:m.end() if keepends else m.start()])
        start = m.end()
    if start < len(text):
        out.append(text[start:])
    return out


# the future features a code object carries in co_flags, to compile its text the same way
# (an IPython cell compiled under an earlier cell's `from __future__ import annotations`);
# nested_scopes is left out: its flag is CO_NESTED, which every nested function has
_FUTURE_FLAGS = 0
for _name in __future__.all_feature_names:
    if _name != "nested_scopes":
        _FUTURE_FLAGS |= getattr(__future__, _name).compiler_flag
del _name


class _Unit:
    """A text as compiled (a whole file, notebook cell or generated module, or one top-level
    statement of a file, padded to its lines): its syntax tree and its code objects by (name,
    first line); ``tree`` is None when the text does not compile."""

    def __init__(self, filename, text, flags, pytest_rewrite=False):
        self.text = text
        self.flags = flags
        self.tree = None
        self.codes = {}
        try:
            tree = ast.parse(text, filename)
            if pytest_rewrite:
                # a test module as pytest imports it: its assert statements rewritten
                from _pytest.assertion.rewrite import rewrite_asserts
                rewrite_asserts(tree, text.encode("utf-8"), filename, None)
                source = tree
            else:
                source = text         # compiled from text: no recursion limit on deep trees
            try:
                code = compile(source, filename, "exec", flags=flags, dont_inherit=True)
            except SyntaxError:
                # a notebook cell with top-level await
                code = compile(source, filename, "exec", dont_inherit=True,
                               flags=flags | getattr(ast, "PyCF_ALLOW_TOP_LEVEL_AWAIT", 0))
        except Exception:             # SyntaxError, RecursionError, pytest absent or changed...
            return
        self.tree = tree
        todo = [code]
        while todo:
            c = todo.pop()
            self.codes.setdefault((c.co_name, c.co_firstlineno), []).append(c)
            todo.extend(k for k in c.co_consts if isinstance(k, types.CodeType))

    def match(self, code):
        """True when this text compiles to ``code`` itself (its bytecode, constants, names,
        nested functions and positions)."""
        for c in self.codes.get((code.co_name, code.co_firstlineno), ()):
            if c == code and getattr(c, "co_qualname", None) == getattr(code, "co_qualname", None):
                return True
        return False


_UNITS = {}
_UNITS_LOCK = threading.Lock()


def _unit(filename, text, flags, pytest_rewrite=False, start=None):
    """The compiled text, cached while it stays the same (``start``: the first line of a
    top-level statement compiled alone; None for the whole text)."""
    key = (filename, flags, pytest_rewrite, start)
    u = _UNITS.get(key)
    if u is not None and u.text == text:
        return u
    u = _Unit(filename, text, flags, pytest_rewrite)
    with _UNITS_LOCK:
        while len(_UNITS) >= 256:
            _UNITS.pop(next(iter(_UNITS)), None)
        _UNITS[key] = u
    return u


_CONTINUES = (")", "]", "}", "else", "elif", "except", "finally")
_BLOCKS = ("try", "if ", "if(", "else", "elif", "except", "finally", "with ")
_IMPORT = re.compile(r"(import\s+[\w.]+|from\s+[\w.]+\s+import\s*[\w(*])")


_IMPORTS = {}


def _imports_before(lines, stop):
    """The import statements of the file's top level (also inside a top-level try/if/with)
    before line ``stop``, each on one line.  Judged by layout, like ``_statement``."""
    cached = _IMPORTS.get(id(lines))
    if cached is None or cached[0] is not lines:
        if len(_IMPORTS) >= 256:
            _IMPORTS.clear()
        cached = _IMPORTS[id(lines)] = (lines, _imports(lines))
    return [text for at, text in cached[1] if at < stop]


def _imports(lines):
    """[(line index where it ends, import statement on one line)] of the whole file."""
    out, i, in_block, stop = [], 0, False, len(lines)
    while i < stop:
        line = lines[i]
        text = line.lstrip(" \t")
        if line[:1] not in ("", " ", "\t", "\f", "\n", "\r", "#"):
            in_block = line.startswith(_BLOCKS)
        if (line is text or in_block) and _IMPORT.match(text) and \
                not text.startswith("from __future__"):
            parts, depth = [], 0
            while i < stop:
                piece = lines[i].split("#", 1)[0].strip()
                more = piece.endswith("\\")
                piece = piece.rstrip("\\").strip()
                depth += piece.count("(") - piece.count(")")
                parts.append(piece)
                i += 1
                if depth <= 0 and not more:
                    break
            out.append((i - 1, " ".join(p for p in parts if p)))
            continue
        i += 1
    return out


def _statement(lines, first):
    """(start, end): 0-based bounds of the top-level statement that holds line ``first``,
    judged by layout (lines that begin in column 0).  Only a guess: what it selects is used only
    if it compiles to exactly the function's code."""
    def top(k):
        c = lines[k][:1]
        return c not in ("", " ", "\t", "\f", "\n", "\r", "#")
    start = first - 1
    while start > 0 and (not top(start) or lines[start].startswith(_CONTINUES)):
        start -= 1
    while start > 0 and lines[start - 1].startswith("@"):
        start -= 1
    end, decorating = start + 1, lines[start].startswith("@")
    while end < len(lines):
        if top(end) and not lines[end].startswith(_CONTINUES):
            if not decorating:
                break
            decorating = lines[end].startswith("@")     # a further decorator, or what they wrap
        end += 1
    return start, end


def _file_lines(fn, where):
    """The lines of the file (or cell) ``fn``'s code was compiled from, as ``linecache`` holds
    them now (re-read from disk when the file changed)."""
    code = fn.__code__
    file = code.co_filename
    if not (file.startswith("<") and file.endswith(">")) or file in linecache.cache:
        # the fast path (inspect.findsource scans sys.modules on each call)
        linecache.checkcache(file)
        glb = fn.__globals__ if fn.__globals__.get("__file__") == file else None
        lines = linecache.getlines(file, glb)
        if lines:
            return lines
    # Python 3.14+'s REPL keeps the text of each input by code object, not by file name
    from_code = getattr(linecache, "_getlines_from_code", None)
    if from_code is not None:
        with contextlib.suppress(Exception):
            lines = from_code(code)
            if lines:
                return lines
    try:
        lines, _ = inspect.findsource(code)
    except (OSError, TypeError, IndexError) as e:
        lines = linecache.getlines(code.co_filename)
        if lines and len(lines) < code.co_firstlineno:
            raise _stale(fn, where) from None      # the file got shorter since it was compiled
        raise _unavailable(fn, where, e) from None
    return lines


def _unavailable(fn, where, e):
    """The error for a function whose text Python did not keep: it names the environments
    whose text s2sad reads, and the fix."""
    file = fn.__code__.co_filename
    if file.startswith("<") and file.endswith(">"):
        why = (f"Python keeps no text under the name {file} (code run by `python -c`, by "
               f"exec() of a string or typed at the REPL of Python 3.12 and older)")
    else:
        why = f"{file} cannot be read ({e})"
    return SourceUnavailableError(
        f"cannot read the source of {fn.__qualname__} (defined at {where}): {why}; s2sad reads "
        f"functions defined in .py files, in IPython/Jupyter cells and at the Python 3.13+ REPL",
        fix="define the function in a .py file and import or run it (or use IPython/Jupyter or "
            "the Python 3.13+ REPL); for text you exec() yourself, first register it: "
            "linecache.cache[name] = (len(src), None, src.splitlines(True), name) and "
            "exec(compile(src, name, 'exec'), namespace) with name = '<my-code-1>' (a new name "
            "for each text); or declare a rule with s2sad.defrule")


def _stale(fn, where):
    code = fn.__code__
    module = sys.modules.get(getattr(fn, "__module__", None) or "")
    imported = os.path.isfile(code.co_filename) and module is not None and \
        getattr(module, "__file__", None) and \
        os.path.abspath(module.__file__) == os.path.abspath(code.co_filename)
    name = fn.__qualname__
    if imported:
        why = (f"the file changed after module {module.__name__!r} was imported, and "
               f"s2sad would differentiate the new text instead of the code Python runs")
        fix = (f"importlib.reload({module.__name__}) (or %autoreload in IPython) or restart the "
               f"interpreter, and take {name} again from the reloaded module")
    else:
        why = (f"{name} was compiled from other text than the file holds now (exec or compile "
               f"of another string under this file name, or the file changed since)")
        fix = ("run the code again from the file as it is now (reload the module or restart the "
               "interpreter); for code made with exec(), write it to a .py file and import it")
    return StaleSourceError(
        f"the source of {name} is not the code that runs: {why}",
        origin=Origin(code.co_filename, code.co_firstlineno, 0, "", fn.__qualname__), fix=fix)


def _parse(fn):
    """(gast node of ``fn``'s definition with lines counted from its first line, the source
    lines from that line on, the untouched ``ast`` node).

    The text is checked to be the source of the code that runs: compiled again (the top-level
    statement that holds it, else the whole file, so that methods, closures and nested functions
    compile in their own context) it must give a code object equal to ``fn.__code__``
    (bytecode, constants, names, nested code, positions).
    A module edited after import, or code compiled from another string under a real file's name,
    is refused (StaleSourceError) instead of differentiated from text that does not run."""
    code = fn.__code__
    where = f"{code.co_filename}:{code.co_firstlineno}"
    lines, unit, rewrite, at = _defining_unit(fn, where)
    # the definition as written (for pytest's rewriting: as the user wrote the asserts)
    tree = unit.tree if not rewrite else \
        _unit(code.co_filename, unit.text, unit.flags, False, at).tree
    first = code.co_firstlineno
    node = _find_node(code, tree)
    if node is None:
        raise SourceUnavailableError(
            f"cannot find the definition of {fn.__qualname__} at {where}",
            fix="define the function with `def` (or a lambda) in a .py file")
    depth, line = syntax_depth(node)
    if depth > 50:
        text = lines[line - 1].strip() if line and 0 < line <= len(lines) else ""
        need_frames(depth, Origin(code.co_filename, line or first, 0, text, fn.__qualname__))
    import gast         # (imported here: a derivative read from the disk cache does not parse)
    gnode = gast.ast_to_gast(node)
    gast.increment_lineno(gnode, 1 - first)
    end = getattr(node, "end_lineno", None) or first
    own = lines[first - 1:end]
    if any("\r" in line for line in lines):
        own = split_lines("".join(lines))[first - 1:end]    # as Python counts lines
    else:
        own = [line[:-1] if line.endswith("\n") else line for line in own]
    return gnode, own, node


def _defining_unit(fn, where):
    """(the lines of ``fn``'s file, the compiled text (:class:`_Unit`) that gives ``fn``'s code,
    whether it was compiled with pytest's assert rewriting, the statement's first line or None
    for the whole text); StaleSourceError when no text does."""
    code = fn.__code__
    lines = _file_lines(fn, where)
    flags = code.co_flags & _FUTURE_FLAGS
    # first the top-level statement that holds the function (cheap in a long file), then the
    # whole text; for a module pytest imported, the same with its asserts rewritten
    start, end = _statement(lines, code.co_firstlineno) \
        if 0 < code.co_firstlineno <= len(lines) else (None, None)
    tries = [(False, start), (False, None)]
    if "@py_builtins" in fn.__globals__:
        tries += [(True, start), (True, None)]
    for rewrite, at in tries:
        if at is None:
            unit = _unit(code.co_filename, "".join(lines), flags, rewrite)
        elif start is not None:
            # the statement on its own lines, after the file's imports: Python compiles a call
            # of a method on an imported module differently (LOAD_ATTR, not LOAD_METHOD)
            imports = _imports_before(lines, at)
            if len(imports) > at:
                continue
            chunk = "".join(i + "\n" for i in imports) + "\n" * (at - len(imports)) + \
                "".join(lines[at:end])
            unit = _unit(code.co_filename, chunk, flags, rewrite, at)
        else:
            continue
        if unit.match(code):
            return lines, unit, rewrite, at
    raise _stale(fn, where)


def defining_text(fn):
    """(file name, text, compiler flags): the text s2sad reads for ``fn``, which compiles to
    ``fn``'s code (the top-level statement that holds it, after the file's imports and padded to
    its lines, or the whole file).  Another process that compiles it under that name, with it in
    ``linecache``, has the same function's source (:mod:`s2sad.pickling`)."""
    code = fn.__code__
    _, unit, _, _ = _defining_unit(fn, f"{code.co_filename}:{code.co_firstlineno}")
    return code.co_filename, unit.text, unit.flags


def _find_node(code, tree):
    """The def or lambda in ``tree`` that compiled to ``code``."""
    first = code.co_firstlineno
    if code.co_name != "<lambda>":
        for n in ast.walk(tree):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == code.co_name:
                start = min([n.lineno] + [d.lineno for d in n.decorator_list])
                if start == first:
                    return n
        return None
    lambdas = [n for n in ast.walk(tree) if isinstance(n, ast.Lambda) and n.lineno == first]
    names = list(code.co_varnames[:code.co_argcount + code.co_kwonlyargcount])
    if code.co_flags & inspect.CO_VARARGS:
        names.append(code.co_varnames[len(names)])
    if code.co_flags & inspect.CO_VARKEYWORDS:
        names.append(code.co_varnames[len(names)])

    def params(n):
        a = n.args
        out = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]
        out += [x.arg for x in (a.vararg, a.kwarg) if x is not None]
        return sorted(out)
    lambdas = [n for n in lambdas if params(n) == sorted(names)] or lambdas
    if len(lambdas) <= 1:
        return lambdas[0] if lambdas else None
    # the smallest lambda whose body holds every position of the code's instructions
    spans = [p for p in (code.co_positions() if hasattr(code, "co_positions") else ())
             if p[0] is not None and p[2] is not None and not (p[0] == p[1] and p[2] == p[3])]
    if spans:
        def holds(n):
            b = n.body
            return all((b.lineno, b.col_offset) <= (p[0], p[2]) and
                       (p[1], p[3]) <= (b.end_lineno, b.end_col_offset) for p in spans)
        found = [n for n in lambdas if holds(n)]
        if found:
            return min(found, key=lambda n: (n.body.end_lineno - n.body.lineno,
                                             n.body.end_col_offset - n.body.col_offset))
    # no column information (Python 3.10): the lambda whose names and constants match the code
    have = set(code.co_names) | set(code.co_freevars) | set(code.co_varnames) | \
        {repr(c) for c in code.co_consts if isinstance(c, (int, float, complex, str))}

    def score(n):
        want = set()
        for m in ast.walk(n.body):
            if isinstance(m, ast.Name):
                want.add(m.id)
            elif isinstance(m, ast.Attribute):
                want.add(m.attr)
            elif isinstance(m, ast.Constant) and isinstance(m.value, (int, float, complex, str)):
                want.add(repr(m.value))
        return len(want & have) - len(want - have)
    return max(lambdas, key=score)


def syntax_depth(node):
    """(how deeply the syntax tree under ``node`` nests, the line of its deepest node), counted
    without recursion."""
    deepest, line, todo = 0, getattr(node, "lineno", None), [(node, 1)]
    while todo:
        n, d = todo.pop()
        if d > deepest:
            deepest, line = d, getattr(n, "lineno", line)
        todo.extend((c, d + 1) for c in ast.iter_child_nodes(n))
    return deepest, line


# -- room on the stack for deeply nested expressions ------------------------------------------
# s2sad's passes (gast conversion, lowering, copies of templates) recurse on the syntax tree, a
# few Python frames per level: a long chain such as `x + x*2 + ... + x*300` (300 levels) needs
# more than Python's default limit of 1000 frames, although Python compiles it.  While a
# derivative is built (``build_scope``), the limit is raised as far as the function needs and
# put back when the last build that raised it ends.
_FRAMES_PER_LEVEL = 8
_MAX_LIMIT = 30000 if sys.version_info >= (3, 11) else 8000   # 3.10 frames use the C stack
_limit_lock = threading.Lock()
_limit_state = {"holders": 0, "saved": None, "set": None}
_scopes = threading.local()


@contextlib.contextmanager
def build_scope():
    """The span of one derivative build: a recursion limit raised by ``need_frames`` inside it
    is restored when it ends."""
    stack = getattr(_scopes, "stack", None)
    if stack is None:
        stack = _scopes.stack = []
    stack.append(False)
    try:
        yield
    finally:
        raised = stack.pop()
        if raised:
            with _limit_lock:
                _limit_state["holders"] -= 1
                if _limit_state["holders"] == 0:
                    # put back, unless someone else changed it meanwhile
                    if sys.getrecursionlimit() == _limit_state["set"]:
                        sys.setrecursionlimit(_limit_state["saved"])
                    _limit_state["saved"] = _limit_state["set"] = None


def _depth_now():
    f, n = sys._getframe(), 0
    while f is not None:
        n += 1
        f = f.f_back
    return n


def need_frames(depth, origin=None):
    """Make room for passes that recurse ``depth`` levels; refuse a tree too deep for that
    (``origin``: where its deepest part is)."""
    want = _depth_now() + _FRAMES_PER_LEVEL * depth + 400
    if want <= sys.getrecursionlimit():
        return
    if want > _MAX_LIMIT:
        from ..errors import UnsupportedSyntaxError
        raise UnsupportedSyntaxError(
            f"an expression nested {depth} levels deep: s2sad's passes recurse once per level "
            f"and this needs more than {_MAX_LIMIT} Python frames", origin=origin,
            fix="split the expression into several statements (for a long sum, add its terms "
                "in a few partial sums or in a loop)")
    stack = getattr(_scopes, "stack", None)
    if not stack:
        return                       # outside a build: leave the interpreter's limit alone
    with _limit_lock:
        if not stack[-1]:
            if _limit_state["holders"] == 0:
                _limit_state["saved"] = sys.getrecursionlimit()
            _limit_state["holders"] += 1
            stack[-1] = True
        if want > sys.getrecursionlimit():
            sys.setrecursionlimit(want)
            _limit_state["set"] = want


def source_line(file, line):
    return linecache.getline(file, line).strip()


from ..runtime import hooks as _hooks  # noqa: E402
_hooks.register(split_closure=split_closure, origin_of=origin_of)
