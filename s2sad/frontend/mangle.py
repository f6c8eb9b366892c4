"""Private-name mangling, as Python's compiler does it, applied to a function's syntax tree.

Inside a class body (and in every function, lambda and comprehension nested in it), Python
rewrites an identifier that starts with two underscores and does not end with two (``__w``) to
``_ClassName__w``, the class name stripped of its leading underscores: names read and written,
parameters, attribute names (``self.__w``, ``obj.__w``, ``cls.__w``), nested def names, ``global``
and ``nonlocal`` declarations and imported names.  Keyword argument names in calls and strings
(``getattr(o, "__w")``) are left alone.  Mangling is lexical: a function defined outside a class and
assigned to one later is not mangled.

The class is found from the function's ``__qualname__`` and checked against its code object (the
text s2sad reads is verified to compile to that code, so the names the code holds tell which
spelling Python used); the code wins when the two disagree (a ``__qualname__`` copied by
``functools.wraps`` or assigned by hand).
"""
import ast
import types

import gast


def _private(name):
    return isinstance(name, str) and name.startswith("__") and not name.endswith("__") and \
        "." not in name


def mangle(cls, name):
    """``name`` as Python spells it inside class ``cls`` (a class name, or None)."""
    if not cls or not _private(name):
        return name
    stripped = cls.lstrip("_")
    if not stripped:
        return name
    return f"_{stripped}{name}"


def qualname_class(qualname):
    """The innermost class in whose body a function with this ``__qualname__`` was written."""
    parts = (qualname or "").split(".")
    for i in range(len(parts) - 2, -1, -1):
        if parts[i] != "<locals>" and parts[i + 1] != "<locals>" and \
                not parts[i].startswith("<"):
            return parts[i]
    return None


def _code_names(code):
    out = set()
    todo = [code]
    while todo:
        c = todo.pop()
        out.update(c.co_names, c.co_varnames, c.co_cellvars, c.co_freevars)
        todo.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    return out


def _idents(node):
    """Identifiers in ``node`` that Python would mangle inside a class."""
    out = set()
    for n in gast.walk(node):
        if isinstance(n, gast.Name):
            out.add(n.id)
        elif isinstance(n, gast.Attribute):
            out.add(n.attr)
        elif isinstance(n, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)) and \
                n is not node:
            out.add(n.name)
        elif isinstance(n, (gast.Global, gast.Nonlocal)):
            out.update(n.names)
        elif isinstance(n, gast.alias):
            out.update(x for x in (n.name, n.asname) if x)
    return {x for x in out if _private(x)}


def defining_class(fn, node):
    """The class name Python mangled ``fn``'s private names with, or None (no private names, or
    none mangled)."""
    private = _idents(node)
    if not private:
        return None
    names = _code_names(fn.__code__)
    options = [qualname_class(getattr(fn, "__qualname__", "")), None]
    for p in private:           # spellings the code holds: _K__w
        for n in names:
            if n.endswith(p) and len(n) > len(p) + 1 and n[0] == "_" and n[1] != "_":
                options.append(n[1:-len(p)])

    def hits(cls):
        return sum(mangle(cls, p) in names for p in private)
    return max(options, key=hits)       # the first best: __qualname__'s class on a tie


class _Mangler(gast.NodeVisitor):
    def __init__(self, cls):
        self.cls = cls
        self.touched = set()         # ids of nested defs and lambdas holding a mangled name
        self.stack = []

    def _m(self, name):
        new = mangle(self.cls, name)
        if new != name:
            self.touched.update(self.stack)
        return new

    def visit_Name(self, node):
        node.id = self._m(node.id)
        self.generic_visit(node)

    def visit_Attribute(self, node):
        node.attr = self._m(node.attr)
        self.generic_visit(node)

    def visit_Global(self, node):
        node.names = [self._m(n) for n in node.names]

    visit_Nonlocal = visit_Global

    def visit_alias(self, node):
        if node.asname:
            node.asname = self._m(node.asname)
        if "." not in node.name:
            node.name = self._m(node.name)

    def visit_ImportFrom(self, node):
        if node.module and "." not in node.module:
            node.module = self._m(node.module)
        self.generic_visit(node)

    def _function(self, node, top):
        if not top:
            node.name = self._m(node.name)
        # decorators, defaults and annotations are evaluated outside; the body inside
        self.stack.append(id(node))
        self.generic_visit(node)
        self.stack.pop()

    def visit_Lambda(self, node):
        self.stack.append(id(node))
        self.generic_visit(node)
        self.stack.pop()

    def visit_FunctionDef(self, node):
        self._function(node, False)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node):
        own = node.name                 # its body is mangled with its name as written
        node.name = self._m(node.name)
        for n in node.bases + node.keywords + node.decorator_list:
            self.visit(n)
        saved, self.cls = self.cls, own
        self.stack.append(id(node))
        for n in node.body:
            self.visit(n)
        self.stack.pop()
        self.cls = saved


def mangle_function(fn, node):
    """Mangle the private names of ``node`` (the definition of ``fn``) in place, as Python did
    when it compiled ``fn``.  Returns the ids of the nested defs and lambdas that changed (their
    text, copied into a derivative, would no longer be the code that runs), or an empty set."""
    cls = defining_class(fn, node)
    if cls is None or not cls.lstrip("_"):
        return set()
    m = _Mangler(cls)
    if isinstance(node, (gast.FunctionDef, gast.AsyncFunctionDef)):
        m._function(node, True)
        m.touched.discard(id(node))
    else:
        m.visit(node)
    m.touched.discard(id(node))
    return m.touched


def unparsed(node):
    """The source of a (mangled) nested def or lambda, one string per line, written from its
    syntax tree; multi-line docstrings are dropped (they are the only strings ``ast.unparse``
    writes across lines)."""
    tree = gast.gast_to_ast(node)
    for n in ast.walk(tree):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.body and \
                isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant) and \
                isinstance(n.body[0].value.value, str) and \
                any(c in n.body[0].value.value for c in "\n\r"):
            n.body = n.body[1:] or [ast.Pass()]
    return ast.unparse(tree).split("\n")
