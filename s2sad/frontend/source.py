"""Source retrieval and namespace resolution for a user's function."""
import builtins
import inspect
import keyword
import linecache
import textwrap

import gast

from ..errors import SourceUnavailableError
from ..ir import Origin

_MISSING = object()


class FunctionSource:
    """The parsed definition of a Python function and the namespaces its names resolve in."""

    def __init__(self, fn):
        self.fn = fn
        self.code = fn.__code__
        self.file = self.code.co_filename
        self.first_line = self.code.co_firstlineno
        self.node, self.lines = _parse(fn)
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
        from ..codegen.load import origin_of
        user = origin_of(self.file, line)
        if user is not None:
            return user
        text = self.lines[lineno - 1] if 0 < lineno <= len(self.lines) else ""
        return Origin(self.file, line, getattr(node, "col_offset", 0), text.strip(),
                      self.fn.__qualname__)


    def segment(self, node):
        """The source lines of a nested def/lambda as (text, Origin) pairs, dedented."""
        first, last = node.lineno, getattr(node, "end_lineno", node.lineno)
        if isinstance(node, gast.FunctionDef) and node.decorator_list:
            first = min(first, min(d.lineno for d in node.decorator_list))
        if isinstance(node, gast.Lambda):
            if first == last:
                text = self.lines[first - 1][node.col_offset:node.end_col_offset]
                return [(text, self.origin(node))]
            import ast as _ast
            return [(_ast.unparse(gast.gast_to_ast(node)), self.origin(node))]
        lines = self.lines[first - 1:last]
        body = textwrap.dedent("\n".join(lines)).split("\n")
        out = []
        for k, text in enumerate(body):
            fake = type("N", (), {"lineno": first + k, "col_offset": 0})()
            out.append((text, self.origin(fake)))
        return out


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


def split_closure(fn):
    """({name: value} of static closure cells, [names of data cells]) in co_freevars order."""
    static, data = {}, []
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
        try:
            v = cell.cell_contents
        except ValueError:          # empty cell (bound later in the enclosing scope)
            data.append(name)
            continue
        if _static_value(v):
            static[name] = v
        else:
            data.append(name)
    return static, data


def data_cell_values(fn, names):
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    return [cells[n].cell_contents for n in names]


def get_function(obj):
    """The Python function behind ``obj`` (unwrapping decorators, bound methods, our wrappers)."""
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
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    ns = {"_callee": fn, "__name__": "s2sad.primitives"}
    exec(compile(src, filename, "exec"), ns)
    made = _PRIMITIVES[key] = ns[ident]
    return made


def _parse(fn):
    where = f"{fn.__code__.co_filename}:{fn.__code__.co_firstlineno}"
    try:
        lines, _ = inspect.getsourcelines(fn.__code__)    # the code itself, never __wrapped__
    except (OSError, TypeError) as e:
        raise SourceUnavailableError(
            f"cannot read the source of {fn.__qualname__} (defined at {where}): {e}",
            fix="define the function in a .py file (functions created by exec() or typed at a "
                "plain REPL have no source s2sad can read), or declare a rule with s2sad.defrule")
    src = textwrap.dedent("".join(lines))
    try:
        tree = gast.parse(src)
    except SyntaxError as e:
        raise SourceUnavailableError(f"cannot parse the source of {fn.__qualname__} at {where}: {e}")
    node = tree.body[0]
    if not isinstance(node, (gast.FunctionDef, gast.AsyncFunctionDef)):
        # a lambda: find the one this code object came from
        lambdas = [n for n in gast.walk(tree) if isinstance(n, gast.Lambda)]
        if not lambdas:
            raise SourceUnavailableError(f"cannot find the definition of {fn.__qualname__} at {where}")
        node = _pick_lambda(fn, lambdas, lines)
    elif not isinstance(node, (gast.FunctionDef, gast.AsyncFunctionDef)):
        raise SourceUnavailableError(f"cannot find the definition of {fn.__qualname__} at {where}")
    return node, [l.rstrip("\n") for l in src.splitlines()]


def _pick_lambda(fn, lambdas, lines):
    """The lambda whose source span holds the columns of ``fn``'s code (Python 3.11+), else the
    first whose parameter names match."""
    code = fn.__code__
    first = code.co_firstlineno
    indent = len(lines[0]) - len(lines[0].lstrip())
    cols = set()
    if hasattr(code, "co_positions"):
        for ln, _, col, _ in code.co_positions():
            if ln is not None and col is not None:
                cols.add((ln - first + 1, col - indent))
    names = list(code.co_varnames[:code.co_argcount])
    best = [n for n in lambdas
            if [a.id for a in n.args.posonlyargs + n.args.args] == names]
    for n in best or lambdas:
        for ln, col in cols:
            if (n.lineno, n.col_offset) <= (ln, col) <= (n.end_lineno, n.end_col_offset):
                return n
    cands = best or lambdas
    if len(cands) > 1:
        # no column information (Python 3.10): the lambda whose names and constants match the code
        have = set(code.co_names) | set(code.co_freevars) | set(code.co_varnames) | \
            {repr(c) for c in code.co_consts if isinstance(c, (int, float, complex, str))}

        def score(n):
            want = set()
            for m in gast.walk(n.body):
                if isinstance(m, gast.Name):
                    want.add(m.id)
                elif isinstance(m, gast.Attribute):
                    want.add(m.attr)
                elif isinstance(m, gast.Constant) and isinstance(m.value, (int, float, complex, str)):
                    want.add(repr(m.value))
            return len(want & have) - len(want - have)
        return max(cands, key=score)
    return cands[0]


def source_line(file, line):
    return linecache.getline(file, line).strip()
