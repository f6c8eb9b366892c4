"""Lowering: a gast function definition becomes an IR :class:`~s2sad.ir.Function` in A-normal form.

Every operation becomes a call site: operators call :mod:`operator` functions, ``x[i]`` calls
``operator.getitem``, ``x.T`` is an :class:`~s2sad.ir.Attr` site, ``x.sum()`` a
:class:`~s2sad.ir.Method` site.  ``and``/``or`` and conditional expressions become ``If`` statements;
loops over sequences become loops over ``range`` with an explicit read of the element.
"""
import functools
import itertools
import math
import operator
import types

import gast

from .. import ir, runtime
from ..errors import UnsupportedSyntaxError
from .attrs import normalise as normalise_attrs
from .mangle import mangle_function, unparsed
from .source import _MISSING

BINOPS = {
    gast.Add: operator.add, gast.Sub: operator.sub, gast.Mult: operator.mul,
    gast.Div: operator.truediv, gast.FloorDiv: operator.floordiv, gast.Mod: operator.mod,
    gast.Pow: operator.pow, gast.MatMult: operator.matmul, gast.LShift: operator.lshift,
    gast.RShift: operator.rshift, gast.BitAnd: operator.and_, gast.BitOr: operator.or_,
    gast.BitXor: operator.xor,
}
UNARYOPS = {gast.USub: operator.neg, gast.UAdd: operator.pos, gast.Not: operator.not_,
            gast.Invert: operator.invert}
CMPOPS = {gast.Eq: operator.eq, gast.NotEq: operator.ne, gast.Lt: operator.lt,
          gast.LtE: operator.le, gast.Gt: operator.gt, gast.GtE: operator.ge,
          gast.Is: operator.is_, gast.IsNot: operator.is_not, gast.In: operator.contains,
          gast.NotIn: "not in"}

_CONSTRUCT_NAMES = {
    gast.Lambda: "a lambda expression", gast.ListComp: "a list comprehension",
    gast.SetComp: "a set comprehension", gast.DictComp: "a dict comprehension",
    gast.GeneratorExp: "a generator expression", gast.Yield: "`yield` (generator functions)",
    gast.YieldFrom: "`yield from` (generator functions)", gast.Await: "`await` (async functions)",
    gast.NamedExpr: "an assignment expression (:=)", gast.Starred: "starred arguments (*args)",
    gast.JoinedStr: None, gast.Set: None,
    gast.With: "a `with` statement", gast.AsyncWith: "`async with`", gast.Try: "a try statement",
    gast.AsyncFor: "`async for`", gast.ClassDef: "a class definition inside the function",
    gast.FunctionDef: "a nested function definition", gast.Global: "a `global` declaration",
    gast.Nonlocal: "a `nonlocal` declaration", gast.Delete: "a `del` statement",
}


_SCOPES = (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda, gast.ClassDef, gast.ListComp,
           gast.SetComp, gast.DictComp, gast.GeneratorExp)


def _scope_nodes(node):
    """Nodes of a function's own scope: nested functions, lambdas, classes and comprehensions are
    not entered (their names are their own), but a nested def's name, decorators and defaults are."""
    todo = list(gast.iter_child_nodes(node))
    while todo:
        n = todo.pop()
        yield n
        if isinstance(n, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
            todo.extend(n.decorator_list)
            if not isinstance(n, gast.ClassDef):
                todo.extend(d for d in n.args.defaults + n.args.kw_defaults if d is not None)
            continue
        if isinstance(n, gast.Lambda):
            todo.extend(d for d in n.args.defaults + n.args.kw_defaults if d is not None)
            continue
        if isinstance(n, (gast.ListComp, gast.SetComp, gast.DictComp, gast.GeneratorExp)):
            todo.append(n.generators[0].iter)
            # an assignment expression inside a comprehension binds in the enclosing function
            todo.extend(m.target for m in gast.walk(n) if isinstance(m, gast.NamedExpr))
            continue
        todo.extend(gast.iter_child_nodes(n))


def _assigned_names(fnode):
    """(local names, names declared global, names declared nonlocal) of a function's own scope."""
    names, glob, nonloc = set(), set(), set()
    for node in _scope_nodes(fnode):
        if isinstance(node, gast.Name) and isinstance(node.ctx, (gast.Store, gast.Del)):
            names.add(node.id)
        elif isinstance(node, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, gast.Global):
            glob.update(node.names)
        elif isinstance(node, gast.Nonlocal):
            nonloc.update(node.names)
        elif isinstance(node, gast.ExceptHandler) and isinstance(node.name, gast.Name):
            names.add(node.name.id)
    return names - glob - nonloc, glob, nonloc


def free_names(node):
    """Names a nested function or lambda reads from outside itself."""
    params = {a.id for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs}
    for a in (node.args.vararg, node.args.kwarg):
        if a is not None:
            params.add(a.id)
    if isinstance(node, gast.Lambda):
        own = params
    else:
        own = params | _assigned_names(node)[0]
    loads = set()
    for n in gast.walk(node):
        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load):
            loads.add(n.id)
    return loads - own


def _stores(nodes, name):
    return any(isinstance(m, gast.Name) and m.id == name and isinstance(m.ctx, gast.Store)
               for n in nodes for m in gast.walk(n))


_MUTATORS = {"append", "extend", "insert", "pop", "update"}

# Calls that consume an iterable argument, and which arguments ("all", "one": the single-argument
# form of min/max, or positions); each such argument gets a cursor (runtime.here).
_ITER_CONSUMERS = {sorted: (0,), list: (0,), tuple: (0,), set: (0,), frozenset: (0,), dict: (0,),
                   sum: (0,), any: (0,), all: (0,), min: "one", max: "one", zip: "all",
                   enumerate: (0,), iter: (0,), next: (0,), math.fsum: (0,), math.prod: (0,)}
try:
    import heapq as _heapq
    _ITER_CONSUMERS.update({_heapq.nsmallest: (1,), _heapq.nlargest: (1,)})
    _ITER_CONSUMERS.update({itertools.starmap: (1,), itertools.islice: (0,),
                            itertools.takewhile: (1,), itertools.dropwhile: (1,)})
except ImportError:     # pragma: no cover
    pass
# ... of which these take every value
_ITER_DRAINS = {sorted, list, tuple, set, frozenset, dict, sum, any, all, min, max, math.fsum,
                math.prod}
# Calls that make an iterator: inside a derivative they make a runtime.Iter
_ITER_MAKERS = {zip: runtime.izip, enumerate: runtime.ienumerate, reversed: runtime.ireversed,
                iter: runtime.iiter}


def _leaves_early(nodes):
    """True when a loop body may stop the loop early (``break``, ``return``; not inside nested
    loops or functions)."""
    stack = list(nodes)
    while stack:
        n = stack.pop()
        if isinstance(n, (gast.Break, gast.Return)):
            return True
        if isinstance(n, (gast.For, gast.While)):
            stack.extend(n.orelse)
            stack.extend(x for x in gast.walk(n) if isinstance(x, gast.Return))
            continue
        if isinstance(n, (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda, gast.ClassDef)):
            continue
        stack.extend(gast.iter_child_nodes(n))
    return False


def _hashable(obj):
    try:
        hash(obj)
        return True
    except TypeError:
        return False


class Lowerer:
    def __init__(self, src):
        self.src = src
        self.counter = 0
        self.namespace = {}
        self.block = None
        self.fnode = src.node
        # private names (self.__w) as Python spelled them in the class body: _Class__w
        self._mangled = mangle_function(src.fn, self.fnode)
        args = self.fnode.args
        self.params = list(src.data_cells)
        self.params += [a.id for a in args.posonlyargs + args.args]
        if args.vararg is not None:
            self.params.append(args.vararg.id)
        self.params += [a.id for a in args.kwonlyargs]
        if args.kwarg is not None:
            self.params.append(args.kwarg.id)
        if isinstance(self.fnode, gast.Lambda):
            self.locals, self.globals_decl, self.nonlocal_decl = set(), set(), set()
        else:
            self.locals, self.globals_decl, self.nonlocal_decl = _assigned_names(self.fnode)
        self.locals |= set(self.params)
        self.renames = {}
        self.global_refs = {}            # module globals read at build time (checked before reuse)
        self.closures = {}               # local variable -> enclosing variables its closure reads
        self._lazy_fns = {}              # list a map/filter/starmap builds -> its function
        self._nonlocal_writers = []      # (names, origin) of nested defs writing our variables

    # -- helpers ----------------------------------------------------------------------------
    def tmp(self):
        """A fresh temporary ``_N`` (never a name the function already uses: generated code has
        such names, and s2sad differentiates generated code too)."""
        while True:
            self.counter += 1
            name = f"_{self.counter}"
            if name not in self.locals:
                return name

    def emit(self, stmt):
        self.block.append(stmt)

    def unsupported(self, node, what=None):
        what = what or _CONSTRUCT_NAMES.get(type(node)) or f"`{type(node).__name__}`"
        fix = "define the class at module level, outside the function" \
            if isinstance(node, gast.ClassDef) else \
            "rewrite this line with plain assignments, calls, if/for/while; or move it into a " \
            "helper with a rule (s2sad.defrule)"
        raise UnsupportedSyntaxError(f"{what} is not supported by s2sad yet",
                                     origin=self.src.origin(node), fix=fix)

    def free(self, name, node):
        value = self.src.resolve(name)
        if value is _MISSING:
            raise UnsupportedSyntaxError(f"name {name!r} is not defined", origin=self.src.origin(node),
                                         fix=f"define {name!r} before calling the function")
        self.namespace[name] = value
        if name not in self.src.closure and name not in self.src.imports and \
                name in self.src.globals and not isinstance(value, types.ModuleType):
            self.global_refs[name] = value
        return value

    # -- function ---------------------------------------------------------------------------
    def lower_function(self):
        self.block = []
        self.fnode = normalise_attrs(self, self.fnode)
        body = self.fnode.body
        if isinstance(self.fnode, gast.Lambda):
            r = self.expr(body)
            self.emit(ir.Return(r, self.src.origin(body)))
        else:
            if isinstance(self.fnode, gast.AsyncFunctionDef):
                self.unsupported(self.fnode, "an async function")
            for node in gast.walk(self.fnode):
                if isinstance(node, (gast.Yield, gast.YieldFrom, gast.Await)):
                    self.unsupported(node)
            self.stmts(body)
        fn = ir.Function(self.src.fn.__name__, self.params, self.block,
                         self.src.origin(self.fnode), pyfunc=self.src.fn, namespace=self.namespace)
        self._drop_unused_lazy(fn)
        fn.nonlocal_writers = self._nonlocal_writers
        fn.global_refs = (self.src.globals, tuple(self.global_refs.items()))
        return fn

    def stmts(self, nodes):
        for n in nodes:
            self.stmt(n)

    def sub_block(self, nodes):
        saved, self.block = self.block, []
        self.stmts(nodes)
        out, self.block = self.block, saved
        return out

    # -- statements -------------------------------------------------------------------------
    def stmt(self, node):
        o = self.src.origin(node)
        if isinstance(node, gast.Assign):
            if len(node.targets) == 1 and isinstance(node.targets[0], gast.Name) and \
                    self._plain_local(node.targets[0].id):
                self._assign_value(node.value, node.targets[0].id, o)
            else:
                v = self._unpacked(node.value, node.targets, o)
                for t in node.targets:
                    self.assign(t, v, o)
        elif isinstance(node, gast.AnnAssign):
            if node.value is not None:
                if isinstance(node.target, gast.Name) and self._plain_local(node.target.id):
                    self._assign_value(node.value, node.target.id, o)
                else:
                    self.assign(node.target, self.expr(node.value), o)
        elif isinstance(node, gast.AugAssign):
            self.augassign(node, o)
        elif isinstance(node, gast.Expr):
            if isinstance(node.value, gast.Constant):
                return                                  # docstring
            v = node.value
            if isinstance(v, gast.Call):
                if self._mutation(v, None, o):
                    return
                if self._super_init(v, o):
                    return
                if self._add_at(v, o):
                    return
                call = self.call(v)
                if isinstance(call, str):               # lowered to statements (map, reduce...)
                    return
                self.emit(ir.ExprStmt(call, o))
            else:
                self.expr(v)
        elif isinstance(node, gast.Return):
            v = self.expr(node.value, target="_r") if node.value is not None else ir.Const(None)
            self.emit(ir.Return(v, o))
        elif isinstance(node, gast.If):
            test = self.expr(node.test)
            self.emit(ir.If(test, self.sub_block(node.body), self.sub_block(node.orelse), o))
        elif isinstance(node, gast.While):
            saved, self.block = self.block, []
            test = self.expr(node.test)
            test_body, self.block = self.block, saved
            self.emit(ir.While(test_body, test, self.sub_block(node.body), o,
                               orelse=self.sub_block(node.orelse)))
        elif isinstance(node, gast.For):
            self.for_loop(node.target, node.iter, lambda: self.stmts(node.body), o,
                          orelse=node.orelse, body_nodes=node.body)
        elif isinstance(node, gast.Break):
            self.emit(ir.Break(o))
        elif isinstance(node, gast.Continue):
            self.emit(ir.Continue(o))
        elif isinstance(node, (gast.Pass, gast.Global, gast.Nonlocal)):
            pass
        elif isinstance(node, gast.Assert):
            test = self.expr(node.test)
            saved, self.block = self.block, []
            msg = self.expr(node.msg) if node.msg is not None else None
            exc = self.tmp()
            args = [msg] if msg is not None else []
            self.emit(ir.Assign(exc, ir.Call(ir.Static(AssertionError, "AssertionError"), args), o))
            self.emit(ir.Raise(exc, o))
            fail, self.block = self.block, saved
            self.namespace["AssertionError"] = AssertionError
            self.emit(ir.If(test, [], fail, o))
        elif isinstance(node, gast.Raise):
            if node.cause is not None:
                self.unsupported(node, "`raise ... from ...`")
            self.emit(ir.Raise(self.expr(node.exc) if node.exc is not None else None, o))
        elif isinstance(node, (gast.FunctionDef, gast.Lambda)):
            self.closure(node, node.name, o)
        elif isinstance(node, gast.With):
            items = []
            for it in node.items:
                ctx = self.expr(it.context_expr)
                var = None
                if it.optional_vars is not None:
                    if not isinstance(it.optional_vars, gast.Name):
                        self.unsupported(it.optional_vars, "`with ... as` a non-name target")
                    var = self.name(it.optional_vars.id)
                items.append((ctx, var))
            self.emit(ir.With(items, self.sub_block(node.body), o))
        elif isinstance(node, gast.Try):
            handlers = []
            for h in node.handlers:
                t = self.expr(h.type) if h.type is not None else None
                name = self.name(h.name.id) if isinstance(h.name, gast.Name) else None
                handlers.append((t, name, self.sub_block(h.body)))
            self.emit(ir.Try(self.sub_block(node.body), handlers, self.sub_block(node.orelse),
                             self.sub_block(node.finalbody), o))
        elif isinstance(node, (gast.Import, gast.ImportFrom)):
            self.imports(node, o)
        elif isinstance(node, gast.Delete):
            for t in node.targets:
                if isinstance(t, gast.Name):
                    continue                # the name's value may still be needed by the reverse sweep
                if isinstance(t, gast.Subscript):
                    obj = self.expr(t.value)
                    self.emit(ir.DelItem(obj, self.index(t.slice), o))
                else:
                    self.unsupported(t, f"`del` of {type(t).__name__}")
        else:
            self.unsupported(node)

    def imports(self, node, o):
        """``import m as n`` / ``from m import f`` inside the function: done now, at build time
        (imports are idempotent); the names then read like module globals."""
        import importlib
        try:
            if isinstance(node, gast.Import):
                for a in node.names:
                    mod = importlib.import_module(a.name)
                    if a.asname:
                        self.src.imports[a.asname] = mod
                    else:
                        root = a.name.split(".")[0]
                        self.src.imports[root] = importlib.import_module(root)
                return
            package = self.src.globals.get("__package__")
            mod = importlib.import_module("." * node.level + (node.module or ""), package)
            for a in node.names:
                if a.name == "*":
                    self.unsupported(node, "`from ... import *` inside the function")
                value = getattr(mod, a.name, _MISSING)
                if value is _MISSING:
                    value = importlib.import_module(f"{mod.__name__}.{a.name}")
                self.src.imports[a.asname or a.name] = value
        except ImportError as e:
            raise UnsupportedSyntaxError(f"this import fails when s2sad builds the derivative: {e}",
                                         origin=o, fix="fix the import, or move it to the top of "
                                                       "the module") from None

    def _super_init(self, call, o):
        """``super().__init__(...)`` in a constructor: the base class fills in the same object,
        which the IR makes explicit (``self = init_into(__class__, self, ...)``)."""
        f = call.func
        if not (isinstance(f, gast.Attribute) and f.attr == "__init__" and
                isinstance(f.value, gast.Call) and isinstance(f.value.func, gast.Name) and
                f.value.func.id == "super" and not f.value.args and
                "__class__" in self.src.closure and self.params):
            return False
        if any(isinstance(a, gast.Starred) for a in call.args) or call.keywords:
            return False
        first = self.params[len(self.src.data_cells)]
        cls = self.src.closure["__class__"]
        self.namespace["__class__"] = cls
        args = [ir.Const(cls, "__class__"), first] + [self.expr(a) for a in call.args]
        self._call(ir.Call(ir.Static(runtime.init_into, "_rt.init_into"), args), first, o)
        return True

    def name(self, n):
        return self.renames.get(n, n)

    def _plain_local(self, n):
        return n not in self.globals_decl and n not in self.nonlocal_decl

    def _assign_value(self, value, target, o):
        target = self.name(target)
        if isinstance(value, gast.Call) and self._mutation(value, target, o):
            return
        if isinstance(value, gast.Lambda):
            self.closure(value, target, o)
            return
        self.expr(value, target=target)

    def _mutation(self, call, target, o):
        """``x.append(v)`` and friends on a local: lowered to a Mutate statement."""
        f = call.func
        if not (isinstance(f, gast.Attribute) and f.attr in _MUTATORS):
            return False
        on_local = isinstance(f.value, gast.Name) and f.value.id in self.locals
        on_attr = isinstance(f.value, gast.Attribute) and isinstance(f.value.value, gast.Name) and \
            f.value.value.id in self.locals           # self.hist.append(v)
        if not (on_local or on_attr):
            return False
        if any(isinstance(a, gast.Starred) for a in call.args) or call.keywords:
            return False
        obj = self.name(f.value.id) if on_local else self.expr(f.value)
        args = [obj] + [self.expr(a) for a in call.args]
        self.emit(ir.Mutate(target, obj, ir.Call(ir.Method(f.attr), args), o))
        if on_attr:
            # the list is still the object's attribute: written back, so that the object is
            # seen to change (a method doing this updates self)
            owner = self.expr(f.value.value)
            self.emit(ir.SetItem(owner, ir.Index([ir.Const(f.value.attr)], False), obj, o,
                                 attr=f.value.attr))
        return True

    def assign(self, target, value, o):
        """Store operand ``value`` into an assignment target."""
        if isinstance(target, gast.Name):
            n = target.id
            if n in self.globals_decl:
                self.namespace["_globals"] = self.src.globals
                self.emit(ir.SetItem(ir.Const(self.src.globals, "_globals"),
                                     ir.Index([ir.Const(n)], False), value, o))
            elif n in self.nonlocal_decl and n in self.src.cells:
                cname = f"_cell_{n}"
                self.namespace[cname] = self.src.cells[n]
                self.emit(ir.SetItem(ir.Const(self.src.cells[n], cname),
                                     ir.Index([ir.Const("cell_contents")], False), value, o,
                                     attr="cell_contents"))
            else:
                self.emit(ir.Assign(self.name(n), value, o))
        elif isinstance(target, (gast.Tuple, gast.List)):
            stars = [k for k, e in enumerate(target.elts) if isinstance(e, gast.Starred)]
            if len(stars) > 1:
                self.unsupported(target, "two starred targets")
            n = len(target.elts)
            for k, elt in enumerate(target.elts):
                if stars and k == stars[0]:
                    after = n - k - 1
                    idx = ir.Index([ir.Slice(ir.Const(k), ir.Const(-after) if after else None, None)],
                                   False)
                    part = self.tmp()
                    self.emit(ir.Assign(part, ir.Call(ir.Static(operator.getitem, "[]"), [value, idx]), o))
                    lst = self.tmp()
                    self.emit(ir.Assign(lst, ir.Call(ir.Static(list, "list"), [part]), o))
                    self.namespace["list"] = list
                    self.assign(elt.value, lst, o)
                    continue
                pos = k if not stars or k < stars[0] else k - n
                if isinstance(elt, gast.Name) and self._plain_local(elt.id):
                    t = self.name(elt.id)
                    self.emit(ir.Assign(t, ir.Call(ir.Static(operator.getitem, "[]"),
                                                   [value, ir.Index([ir.Const(pos)], False)]), o))
                else:
                    t = self.tmp()
                    self.emit(ir.Assign(t, ir.Call(ir.Static(operator.getitem, "[]"),
                                                   [value, ir.Index([ir.Const(pos)], False)]), o))
                    self.assign(elt, t, o)
        elif isinstance(target, gast.Subscript):
            obj = self.expr(target.value)
            idx = self.index(target.slice)
            self.emit(ir.SetItem(obj, idx, value, o))
        elif isinstance(target, gast.Attribute):
            obj = self.expr(target.value)
            self.emit(ir.SetItem(obj, ir.Index([ir.Const(target.attr)], False), value, o,
                                 attr=target.attr))
        else:
            self.unsupported(target, f"assignment to {type(target).__name__}")

    def _add_at(self, node, o):
        """``np.add.at(a, indices, b)`` (scatter-add, repeated indices add up), lowered as
        ``a[...] += _rt.add_at_delta(a, indices, b)``: a write into ``a`` that the analyses and
        both emitters already follow (and refuse where ``a`` is an argument or a view)."""
        if not isinstance(node.func, gast.Attribute) or node.func.attr != "at" or node.keywords \
                or len(node.args) != 3 or any(isinstance(a, gast.Starred) for a in node.args):
            return False
        found = self._static_chain(node.func)
        owner = getattr(found[0], "__self__", None) if found else None
        if getattr(owner, "__name__", None) != "add" or type(owner).__name__ != "ufunc":
            return False
        obj, idx, vals = (self.expr(a) for a in node.args)
        delta = self.tmp()
        self.emit(ir.Assign(delta, ir.Call(ir.Static(runtime.add_at_delta, "_rt.add_at_delta"),
                                           [obj, idx, vals]), o))
        whole = ir.Index([ir.Const(Ellipsis)], False)
        old, new = self.tmp(), self.tmp()
        self.emit(ir.Assign(old, ir.Call(ir.Static(operator.getitem, "[]"), [obj, whole]), o))
        self.emit(ir.Assign(new, ir.Call(ir.Static(operator.add, "+"), [old, delta]), o))
        self.emit(ir.SetItem(obj, whole, new, o))
        return True

    def augassign(self, node, o):
        fn = BINOPS.get(type(node.op))
        t = node.target
        if isinstance(t, gast.Name):
            rhs = self.expr(node.value)
            cur = self.expr(gast.Name(id=t.id, ctx=gast.Load(), annotation=None, type_comment=None))
            # (``a *= y`` changes an array or list in place: check_mutation refuses it while
            # another name still refers to the object)
            aug = {"augmented": t.id}
            if self._plain_local(t.id):
                self._call(ir.Call(ir.Static(fn, _opname(fn)), [cur, rhs], extra=aug),
                           self.name(t.id), o)
            else:
                new = self._call(ir.Call(ir.Static(fn, _opname(fn)), [cur, rhs], extra=aug), None, o)
                self.assign(t, new, o)
        elif isinstance(t, (gast.Subscript, gast.Attribute)):
            obj = self.expr(t.value)
            if isinstance(t, gast.Subscript):
                idx = self.index(t.slice)
                read = ir.Call(ir.Static(operator.getitem, "[]"), [obj, idx])
            else:
                read = ir.Call(ir.Attr(t.attr), [obj])
            old = self.tmp()
            self.emit(ir.Assign(old, read, o))
            rhs = self.expr(node.value)
            new = self.tmp()
            self.emit(ir.Assign(new, ir.Call(ir.Static(fn, _opname(fn)), [old, rhs]), o))
            if isinstance(t, gast.Subscript):
                self.emit(ir.SetItem(obj, idx, new, o))
            else:
                self.emit(ir.SetItem(obj, ir.Index([ir.Const(t.attr)], False), new, o, attr=t.attr))
        else:
            self.unsupported(t, f"augmented assignment to {type(t).__name__}")

    def for_loop(self, target, it, body_fn, o, orelse=(), body_nodes=()):
        """Lower ``for target in it`` with a body produced by ``body_fn()`` into self.block."""
        orelse_ir = self.sub_block(orelse) if orelse else []
        # for x in range(...)
        if (isinstance(it, gast.Call) and isinstance(it.func, gast.Name) and it.func.id == "range"
                and it.func.id not in self.locals and not it.keywords
                and self.src.resolve("range") is range and 1 <= len(it.args) <= 3
                and not any(isinstance(a, gast.Starred) for a in it.args)):
            ops = [self.expr(a) for a in it.args]
            start, stop, step = ((ir.Const(0), ops[0], ir.Const(1)) if len(ops) == 1 else
                                 (ops[0], ops[1], ir.Const(1)) if len(ops) == 2 else ops)
            saved, self.block = self.block, []
            if isinstance(target, gast.Name) and self._plain_local(target.id) and \
                    not _stores(body_nodes, target.id):
                var = self.name(target.id)
            else:
                var = self.tmp()
                self.assign(target, var, o)
            body_fn()
            body, self.block = self.block, saved
            self.emit(ir.For(var, start, stop, step, body, o, orelse=orelse_ir))
            return
        # for a, b in zip(...), for i, x in enumerate(...), for x in reversed(seq), for x in seq
        seqs, enum, rev = self._sequence_parts(it)
        # iterate by index over something indexable: dict views, sets, generators, dicts
        # (their keys) become lists; lists, tuples and arrays pass through
        breakable = _leaves_early(body_nodes)
        # a body that reads the loop's own iterable may take values from it (a nested loop,
        # sum(it), next(it)): Python's loop then skips them; s2sad took them all first
        walked = {n.id for n in gast.walk(it) if isinstance(n, gast.Name)}
        breakable = breakable or bool(walked & set(self._names_read(body_nodes)))
        if len(seqs) > 1:
            # zip(...) in the header: the values Python's zip takes from each (an iterator
            # zipped with a shorter sequence gives up exactly as many as zip pulls)
            ops = [self._here(sq, o) for sq in seqs]
            call = ir.Call(ir.Static(runtime.loop_zip_seq, "_rt.loop_zip_seq") if breakable else
                           ir.Static(runtime.zip_seq, "_rt.zip_seq"), ops)
            self._link_heres(call, range(len(ops)))
            both = self._call(call, None, o)
            seqs = [self._call(ir.Call(ir.Static(operator.getitem, "[]"),
                                       [both, ir.Index([ir.Const(j)], False)]), None, o)
                    for j in range(len(ops))]
        else:
            seqs = [sq if isinstance(sq, ir.Const) and isinstance(sq.value, (list, tuple)) else
                    self._seq(sq, o, breakable) for sq in seqs]
        k = self.tmp()
        lens = []
        for sq in seqs:
            n = self.tmp()
            self.emit(ir.Assign(n, ir.Call(ir.Static(len, "len"), [sq]), o))
            self.namespace["len"] = len
            lens.append(n)
        stop = lens[0]
        if len(lens) > 1:
            stop = self.tmp()
            self.emit(ir.Assign(stop, ir.Call(ir.Static(min, "min"), lens), o))
            self.namespace["min"] = min
        saved, self.block = self.block, []
        pos = k
        if rev:
            pos = self.tmp()
            last = self.tmp()
            self.emit(ir.Assign(last, ir.Call(ir.Static(operator.sub, "-"), [stop, ir.Const(1)]), o))
            self.emit(ir.Assign(pos, ir.Call(ir.Static(operator.sub, "-"), [last, k]), o))
        elems = []
        for sq in seqs:
            e = self.tmp()
            self.emit(ir.Assign(e, ir.Call(ir.Static(operator.getitem, "[]"),
                                           [sq, ir.Index([pos], False)]), o))
            elems.append(e)
        if enum or len(elems) > 1:
            parts = ([k] if enum else []) + ([elems[0]] if len(elems) == 1 else elems)
            if enum and len(elems) > 1:
                parts = [k, tuple(elems)]
            self._bind_struct(target, parts, o)
        else:
            self.assign(target, elems[0], o)
        body_fn()
        body, self.block = self.block, saved
        self.emit(ir.For(k, ir.Const(0), stop, ir.Const(1), body, o, orelse=orelse_ir))

    def _bind_struct(self, target, parts, o):
        if isinstance(target, (gast.Tuple, gast.List)) and len(target.elts) == len(parts):
            for elt, p in zip(target.elts, parts):
                if isinstance(p, tuple):
                    self._bind_struct(elt, list(p), o)
                else:
                    self.assign(elt, p, o)
        else:
            # target is a single name receiving a tuple
            items = [p if not isinstance(p, tuple) else self._pack(list(p), o) for p in parts]
            t = self.tmp()
            self.emit(ir.Assign(t, ir.Call(ir.Static(runtime.build_tuple, "build_tuple"), items), o))
            self.assign(target, t, o)

    def _pack(self, items, o):
        t = self.tmp()
        self.emit(ir.Assign(t, ir.Call(ir.Static(runtime.build_tuple, "build_tuple"), items), o))
        return t

    def _sequence_parts(self, it):
        """(sequences, enumerate?, reversed?) for zip(...)/enumerate(...)/reversed(...)/a sequence."""
        if isinstance(it, gast.Call) and isinstance(it.func, gast.Name) and not it.keywords \
                and it.func.id not in self.locals \
                and not any(isinstance(a, gast.Starred) for a in it.args):
            f = self.src.resolve(it.func.id)
            if f is enumerate and len(it.args) == 1:
                inner, _, rev = self._sequence_parts(it.args[0])
                if not rev:
                    return inner, True, False
            if f is zip and it.args:
                return [self.expr(a) for a in it.args], False, False
            if f is reversed and len(it.args) == 1:
                inner, enum, rev = self._sequence_parts(it.args[0])
                if not enum and not rev and len(inner) == 1:
                    return inner, False, True
        return [self.expr(it)], False, False

    # -- expressions ------------------------------------------------------------------------
    def expr(self, node, target=None):
        """Lower an expression; returns an operand.  With ``target``, the value lands in that name."""
        o = self.src.origin(node)
        if isinstance(node, gast.Constant):
            return self._finish(ir.Const(node.value), target, o)
        if isinstance(node, gast.Name):
            n = node.id
            if n in self.locals:
                return self._finish(self.name(n), target, o)
            if n in self.globals_decl:
                self.namespace["_globals"] = self.src.globals
                return self._call(ir.Call(ir.Static(operator.getitem, "[]"),
                                          [ir.Const(self.src.globals, "_globals"),
                                           ir.Index([ir.Const(n)], False)]), target, o)
            if n in self.nonlocal_decl and n in self.src.cells:
                cname = f"_cell_{n}"
                self.namespace[cname] = self.src.cells[n]
                return self._call(ir.Call(ir.Attr("cell_contents"),
                                          [ir.Const(self.src.cells[n], cname)]), target, o)
            value = self.free(n, node)
            return self._finish(ir.Const(value, n), target, o)
        if isinstance(node, gast.Attribute):
            chain = self._static_chain(node)
            if chain is not None:
                return self._finish(ir.Const(chain[0], chain[1]), target, o)
            obj = self.expr(node.value)
            return self._call(ir.Call(ir.Attr(node.attr), [obj]), target, o)
        if isinstance(node, gast.BinOp):
            a, b = self.expr(node.left), self.expr(node.right)
            fn = BINOPS[type(node.op)]
            return self._call(ir.Call(ir.Static(fn, _opname(fn)), [a, b]), target, o)
        if isinstance(node, gast.UnaryOp):
            a = self.expr(node.operand)
            fn = UNARYOPS[type(node.op)]
            return self._call(ir.Call(ir.Static(fn, _opname(fn)), [a]), target, o)
        if isinstance(node, gast.Compare):
            return self.compare(node, target, o)
        if isinstance(node, gast.BoolOp):
            return self.boolop(node, target, o)
        if isinstance(node, gast.IfExp):
            t = target or self.tmp()
            test = self.expr(node.test)
            body = self._branch(node.body, t)
            orelse = self._branch(node.orelse, t)
            self.emit(ir.If(test, body, orelse, o))
            return t
        if isinstance(node, gast.Call):
            c = self.call(node, target)
            if isinstance(c, str):
                return c if c == target else self._finish(c, target, o)
            return self._call(c, target, o)
        if isinstance(node, gast.Subscript):
            obj = self.expr(node.value)
            if isinstance(obj, ir.Const) and _index_trick(obj.value):
                return self.index_trick(obj, node.slice, target, o)
            idx = self.index(node.slice)
            return self._call(ir.Call(ir.Static(operator.getitem, "[]"), [obj, idx]), target, o)
        if isinstance(node, (gast.Tuple, gast.List)):
            if any(isinstance(e, gast.Starred) for e in node.elts):
                seq = self.star_args(node.elts, o)
                if isinstance(node, gast.Tuple):
                    return self._finish(seq, target, o)
                self.namespace["list"] = list
                return self._call(ir.Call(ir.Static(list, "list"), [seq]), target, o)
            items = [self.expr(e) for e in node.elts]
            build = runtime.build_tuple if isinstance(node, gast.Tuple) else runtime.build_list
            return self._call(ir.Call(ir.Static(build, build.__name__), items), target, o)
        if isinstance(node, gast.Dict):
            if any(k is None for k in node.keys):
                self.unsupported(node, "`**` in a dict display")
            keys = [self.expr(k) for k in node.keys]
            vals = [self.expr(v) for v in node.values]
            if all(isinstance(k, ir.Const) and k.text is None for k in keys):
                keyop = ir.Const(tuple(k.value for k in keys))
            else:
                keyop = self._pack(keys, o)
            return self._call(ir.Call(ir.Static(runtime.build_dict, "build_dict"),
                                      [keyop] + vals), target, o)
        if isinstance(node, gast.Lambda):
            t = target or self.tmp()
            self.closure(node, t, o)
            return t
        if isinstance(node, gast.GeneratorExp):
            # a generator: used up once (its values are computed here, eagerly)
            # (its values are computed here; Python computes them when they are taken, with
            # the names' values then: everything it reads counts as a source)
            # (names its comprehensions and lambdas bind are their own, not sources)
            n0 = len(self.block)
            it = self._lazy(self._iterator(self.comprehension(node, None, o),
                                           self._free_names_read([node])),
                            n0, [node.generators[0].iter], "a generator expression")
            it.extra["late"] = True
            return self._call(it, target, o)
        if isinstance(node, (gast.ListComp, gast.SetComp, gast.DictComp)):
            return self.comprehension(node, target, o)
        if isinstance(node, gast.Slice):
            return self._call(ir.Call(ir.Static(slice, "slice"), [self._opt(node.lower),
                              self._opt(node.upper), self._opt(node.step)]), target, o)
        if isinstance(node, gast.JoinedStr):
            return self._finish(self._fstring(node), target, o)
        if isinstance(node, gast.NamedExpr):
            name = self.name(node.target.id)
            self.expr(node.value, target=name)
            return self._finish(name, target, o) if target and target != name else name
        self.unsupported(node)

    def _fstring(self, node):
        # f-strings only ever format values for printing/logging: keep them as an inactive call
        parts = []
        for v in node.values:
            if isinstance(v, gast.Constant):
                parts.append(ir.Const(v.value))
            else:
                val = self.expr(v.value)
                spec = ir.Const("")
                if v.format_spec is not None:
                    spec = self._fstring(v.format_spec)
                parts.append(self._call(ir.Call(ir.Static(format, "format"), [val, spec]), None,
                                        self.src.origin(v)))
                self.namespace["format"] = format
        t = self.tmp()
        self.emit(ir.Assign(t, ir.Call(ir.Static(runtime.concat_str, "_rt.concat_str"), parts),
                            self.src.origin(node)))
        return t

    def _opt(self, node):
        return self.expr(node) if node is not None else ir.Const(None)

    def _branch(self, node, t):
        saved, self.block = self.block, []
        self.expr(node, target=t)
        out, self.block = self.block, saved
        return out

    def _finish(self, operand, target, o):
        if target is None:
            return operand
        self.emit(ir.Assign(target, operand, o))
        return target

    def _call(self, call, target, o):
        t = target
        if t is None or t in call.reads():
            t = self.tmp()
        self.emit(ir.Assign(t, call, o))
        if target is not None and t != target:
            self.emit(ir.Assign(target, t, o))
            return target
        return t

    def compare(self, node, target, o):
        left = self.expr(node.left)
        if len(node.ops) == 1:
            return self._call(self._cmp(node.ops[0], left, self.expr(node.comparators[0])), target, o)
        # chained comparison: a < b < c  ->  a < b and b < c (b evaluated once)
        t = target or self.tmp()
        rights = []

        def chain(i, left):
            right = self.expr(node.comparators[i])
            self.emit(ir.Assign(t, self._cmp(node.ops[i], left, right), o))
            if i + 1 < len(node.ops):
                saved, self.block = self.block, []
                chain(i + 1, right)
                rest, self.block = self.block, saved
                self.emit(ir.If(t, rest, [], o))
        chain(0, left)
        del rights
        return t

    def _cmp(self, op, a, b):
        fn = CMPOPS[type(op)]
        if fn is operator.contains:
            return ir.Call(ir.Static(fn, "in"), [b, a])
        if fn == "not in":
            return ir.Call(ir.Static(runtime.not_in, "not in"), [b, a])
        return ir.Call(ir.Static(fn, _opname(fn)), [a, b])

    def boolop(self, node, target, o):
        t = target or self.tmp()
        is_and = isinstance(node.op, gast.And)

        def chain(i):
            self.expr(node.values[i], target=t)
            if i + 1 < len(node.values):
                saved, self.block = self.block, []
                chain(i + 1)
                rest, self.block = self.block, saved
                self.emit(ir.If(t, rest, [], o) if is_and else ir.If(t, [], rest, o))
        chain(0)
        return t

    def call(self, node, target=None):
        """An IR Call for a call expression, or the name of the variable holding the result when
        the call was lowered to statements (``map``, ``filter``, ``functools.reduce``)."""
        o = self.src.origin(node)
        if any(isinstance(a, gast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            return self.star_call(node, o)
        f = node.func
        if isinstance(f, gast.Name) and f.id == "super" and not node.args and \
                f.id not in self.locals and "__class__" in self.src.closure and self.params:
            # zero-argument super() needs the class cell; spell it out
            self.namespace["super"] = super
            self.namespace["__class__"] = self.src.closure["__class__"]
            first = self.params[len(self.src.data_cells)]
            return ir.Call(ir.Static(super, "super"),
                           [ir.Const(self.src.closure["__class__"], "__class__"), first])
        if isinstance(f, gast.Name) and f.id not in self.locals and not node.keywords:
            special = self.src.resolve(f.id)
            if special is map and len(node.args) >= 2:
                n0 = len(self.block)
                return self._lazy(self._iterator(self.map_call(node, o),
                                                 self._free_names_read(node.args[1:])),
                                  n0, node.args[1:],
                                  "map")
            if special is filter and len(node.args) == 2:
                n0 = len(self.block)
                return self._lazy(self._iterator(self.filter_call(node, o),
                                                 self._free_names_read(node.args[1:])),
                                  n0, node.args[1:],
                                  "filter")
        chain0 = self._static_chain(f) if isinstance(f, gast.Attribute) else None
        if chain0 is not None and chain0[0] is functools.reduce and not node.keywords \
                and len(node.args) in (2, 3):
            return self.reduce_call(node, o, target)
        callee0 = chain0[0] if chain0 is not None else self.src.resolve(f.id) \
            if isinstance(f, gast.Name) and f.id not in self.locals else None
        if callee0 is itertools.accumulate and 1 <= len(node.args) <= 2 and \
                all(k.arg in ("func", "initial") for k in node.keywords):
            return self.accumulate_call(node, o, target)
        if callee0 is itertools.chain and not node.keywords:
            return self.chain_call(node, o, target)
        if callee0 is itertools.starmap and len(node.args) == 2 and not node.keywords:
            n0 = len(self.block)
            return self._lazy(self._iterator(self.starmap_call(node, o),
                                             self._free_names_read(node.args[1:])),
                              n0, node.args[1:],
                              "itertools.starmap")
        chain = self._static_chain(f) if isinstance(f, gast.Attribute) else None
        if isinstance(f, gast.Name) and f.id not in self.locals:
            callee = ir.Static(self.free(f.id, f), f.id)
            recv = []
        elif chain is not None:
            callee = ir.Static(chain[0], chain[1])
            recv = []
        elif isinstance(f, gast.Attribute):
            callee = ir.Method(f.attr)
            recv = [self.expr(f.value)]
        else:
            callee = ir.Dynamic(self.expr(f))
            recv = []
        drains = isinstance(callee, ir.Static) and _hashable(callee.obj) and \
            callee.obj in _ITER_DRAINS
        # a generator expression consumed whole by sorted/sum/min/...: its list is enough
        args = recv + [self.comprehension(a, None, self.src.origin(a))
                       if drains and isinstance(a, gast.GeneratorExp) else self.expr(a)
                       for a in node.args]
        kwargs = [(k.arg, self.expr(k.value)) for k in node.keywords]
        heres = ()
        if isinstance(callee, ir.Static) and _hashable(callee.obj):
            # iterators: makers remember what they yield, consumers take a cursor (runtime.Iter)
            which = _ITER_CONSUMERS.get(callee.obj)
            if which is not None and not (which == "one" and len(args) != 1):
                heres = [k for k in range(len(args)) if which in ("all", "one") or k in which]
                args = [self._here(a, o) if k in heres else a for k, a in enumerate(args)]
            maker = _ITER_MAKERS.get(callee.obj)
            if maker is not None:
                callee = ir.Static(maker, f"_rt.{maker.__name__}")
        extra = {}
        if isinstance(callee, ir.Dynamic) and callee.var in self.closures:
            # a local closure reads the variables it captured when it is called
            extra["captured"] = list(self.closures[callee.var])
        elif isinstance(callee, ir.Static) and callee.obj is self.src.fn and self.src.data_cells:
            extra["captured"] = list(self.src.data_cells)      # a closure calling itself
        call = ir.Call(callee, args, kwargs, extra=extra)
        self._link_heres(call, heres)
        return call

    def _link_heres(self, call, positions):
        """Tell each ``_rt.here`` the call (and argument) it feeds, so classification can drop it
        where the argument is known not to be an iterator."""
        for k in positions:
            a = call.args[k]
            if isinstance(a, str):
                made = self.block[-1] if self.block else None
                for st in reversed(self.block):
                    if isinstance(st, ir.Assign) and st.target == a:
                        made = st
                        break
                v = made.value if isinstance(made, ir.Assign) and made.target == a else None
                if isinstance(v, ir.Call) and isinstance(v.fn, ir.Static) and v.fn.obj is runtime.here:
                    v.extra["consumer"] = (call, k)

    def _unpacked(self, value, targets, o):
        """The value of an assignment; an iterator unpacked into names (``a, b = (... for ...)``,
        ``a, b = zip(...)``) is used up into a list first."""
        if not any(isinstance(t, (gast.Tuple, gast.List)) for t in targets):
            return self.expr(value)
        if isinstance(value, gast.GeneratorExp):
            return self.comprehension(value, None, o)
        f = value.func if isinstance(value, gast.Call) else None
        made = isinstance(f, gast.Name) and f.id not in self.locals and \
            self.src.resolve(f.id) in (zip, enumerate, reversed, iter, map, filter)
        v = self.expr(value)
        return self._seq(v, o) if made else v

    def _here(self, operand, o):
        """``_rt.here(x)`` for an operand a call consumes as an iterable (a cursor if it is an
        iterator; classification drops it where x is known to be a list, array...)."""
        if not isinstance(operand, str):
            return operand
        return self._call(ir.Call(ir.Static(runtime.here, "_rt.here"), [operand]), None, o)

    def _seq(self, sq, o, breakable=False):
        # (a loop that may stop early, or whose body reads what it walks, takes all of an
        # iterator's values here: runtime.loop_seq makes a later use of that iterator an error
        # rather than a wrong value)
        fn = (runtime.loop_seq, "_rt.loop_seq") if breakable else (runtime.seq, "_rt.seq")
        call = ir.Call(ir.Static(*fn), [self._here(sq, o)])
        self._link_heres(call, [0])
        return self._call(call, None, o)

    def _iterator(self, lst, sources=()):
        """map/filter/generator expressions are lowered to a list; Python gives an iterator (used
        up once).  ``sources``: the names of what it walks (a later in-place change of one while
        the iterator is pending is refused: classify._check_pending_iterators)."""
        return ir.Call(ir.Static(runtime.iiter, "_rt.iiter"), [lst],
                       extra={"sources": [self.name(n) if n in self.locals else n
                                          for n in sources]})

    def _lazy(self, it, n0, iterables, what):
        """Mark ``it``, the iterator of a map/filter/starmap/generator expression whose values the
        statements from ``self.block[n0]`` on compute here, eagerly: Python computes them when they
        are taken.  ``extra["lazy"]``: the function it calls (``fn``, None for a generator), what
        the computation reads (``reads``: names; a generator's are its "sources") and its
        statements (``body``), so that :meth:`_drop_unused_lazy` can leave out the work of one
        that is never used, and classify._check_lazy can refuse one whose function reads state
        that changes before its values are taken."""
        stmts = self.block[n0:]
        k = next(i for i, st in enumerate(stmts) if isinstance(st, ir.Assign) and
                 st.target == it.args[0])
        body = stmts[k + 1:]
        token = object()
        for st in ir.walk(body):
            for c in (getattr(st, "value", None), getattr(st, "call", None)):
                if isinstance(c, ir.Call):
                    c.extra["lazy_of"] = token
        it.extra["lazy"] = {"fn": self._lazy_fns.get(it.args[0]), "body": body, "token": token,
                            "what": what,
                            "pure": all(_pure_iterable(n, self) for n in iterables)}
        return it

    def _drop_unused_lazy(self, fn):
        """A map/filter/generator expression whose iterator is never read: Python never calls its
        function (nor takes values from what it walks), so its eagerly computed values are left
        out (only when making it evaluates nothing with effects: ``map(f, g(x))`` calls g)."""
        reads = {v for st in ir.walk(fn.body) for v in st.reads()}
        drop = set()
        for st in ir.walk(fn.body):
            c = st.value if isinstance(st, ir.Assign) else getattr(st, "call", None)
            lazy = c.extra.get("lazy") if isinstance(c, ir.Call) else None
            if lazy is None:
                continue
            if lazy["pure"] and not (isinstance(st, ir.Assign) and st.target in reads):
                drop.update(id(b) for b in lazy["body"])
                lazy["dropped"] = True
            del lazy["body"]
        if not drop:
            return

        def prune(block):
            block[:] = [st for st in block if id(st) not in drop]
            for st in block:
                for b in ir.children(st):
                    prune(b)
        prune(fn.body)

    def _free_names_read(self, nodes):
        """Names the expressions read from the function's scope: as :meth:`_names_read`, less
        the targets of comprehensions and the parameters of lambdas inside them, where those
        read their own."""
        out = set()

        def visit(n, bound):
            if isinstance(n, gast.Name):
                if isinstance(n.ctx, gast.Load) and n.id not in bound:
                    out.add(n.id)
                return
            if isinstance(n, (gast.GeneratorExp, gast.ListComp, gast.SetComp, gast.DictComp)):
                inner = set(bound)
                for k, g in enumerate(n.generators):
                    visit(g.iter, bound if k == 0 else inner)     # (the first one: outside)
                    inner |= {t.id for t in gast.walk(g.target) if isinstance(t, gast.Name)}
                    for c in g.ifs:
                        visit(c, inner)
                for e in ((n.key, n.value) if isinstance(n, gast.DictComp) else (n.elt,)):
                    visit(e, inner)
                return
            if isinstance(n, gast.Lambda):
                for d in list(n.args.defaults) + [d for d in n.args.kw_defaults if d is not None]:
                    visit(d, bound)
                a = n.args
                params = {p.id for p in list(a.posonlyargs) + list(a.args) + list(a.kwonlyargs) +
                          [a.vararg, a.kwarg] if isinstance(p, gast.Name)}
                visit(n.body, bound | params)
                return
            for c in gast.iter_child_nodes(n):
                visit(c, bound)
        for node in nodes:
            visit(node, set())
        return sorted(out)

    def _names_read(self, nodes):
        return sorted({n.id for node in nodes for n in gast.walk(node)
                       if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)})

    def _static_chain(self, node):
        """(value, text) for an attribute chain rooted at a free name (``np.linalg.norm``)."""
        names = []
        n = node
        while isinstance(n, gast.Attribute):
            names.append(n.attr)
            n = n.value
        if not isinstance(n, gast.Name) or n.id in self.locals:
            return None
        value = self.free(n.id, n)
        text = n.id
        for a in reversed(names):
            try:
                value = getattr(value, a)
            except AttributeError:
                return None
            text += "." + a
        # only fold attribute chains through modules and classes (not instance state)
        import types
        root = self.src.resolve(n.id)
        if not isinstance(root, (types.ModuleType, type)):
            return None
        return value, text

    # -- functions as values ---------------------------------------------------------------
    def closure(self, node, target, o):
        """A nested ``def`` or ``lambda``: emitted as written (it closes over the sweep's own
        variables, which keep the user's names); for the analyses it is a call that captures the
        enclosing variables it reads, so derivatives flow back into them."""
        free = free_names(node)
        captured = sorted(v for v in free if v in self.locals)
        for v in sorted(free - set(captured)):
            if v in self.globals_decl or v in self.nonlocal_decl:
                continue
            val = self.src.resolve(v)
            if val is not _MISSING:
                self.namespace[v] = val
        for n in gast.walk(node):
            if isinstance(n, gast.Nonlocal) and set(n.names) & self.locals:
                written = {m.id for m in gast.walk(node) if isinstance(m, gast.Name)
                           and isinstance(m.ctx, gast.Store)}
                if set(n.names) & self.locals & written:
                    self._nonlocal_writers.append((set(n.names) & self.locals & written, o))
        lines = self.src.segment(node)
        mangled = id(node) in self._mangled
        moved = {v: self.name(v) for v in captured if self.name(v) != v}
        if moved:
            # it reads a name that means a renamed variable here (a comprehension's target
            # shadowing an enclosing variable: ``{k: max(x, key=lambda t: t - i) for i, k in
            # ...}``): written anew, reading the renamed variable
            import copy
            node = copy.deepcopy(node)
            for n in gast.walk(node):
                if isinstance(n, gast.Name) and n.id in moved:
                    n.id = moved[n.id]
        if moved or mangled:        # its text is not the code that runs: written anew
            org = self.src.origin(node)
            lines = [(text, org) for text in unparsed(node)]
        # default values are taken when the function is made: they count as captured values,
        # named "param=" (the emitted definition evaluates them again, as Python would)
        a = node.args
        pos = a.posonlyargs + a.args
        keys, vals = [moved.get(v, v) for v in captured], [self.name(v) for v in captured]
        for arg, d in list(zip(pos[len(pos) - len(a.defaults):], a.defaults)) + \
                [(k, d) for k, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None]:
            op = self.expr(d)
            if isinstance(op, str):
                keys.append(f"{arg.id}=")
                vals.append(op)
        call = ir.Call(ir.Static(runtime.make_closure, "closure"),
                       [ir.Const(tuple(keys))] + vals,
                       extra={"source": lines, "lambda": isinstance(node, gast.Lambda),
                              "name": getattr(node, "name", None)})
        target = self.name(target)
        if not isinstance(node, gast.Lambda) and node.name != target:
            self.unsupported(node, "a nested definition bound to another name")
        self.emit(ir.Assign(target, call, o))
        self.closures[target] = [self.name(v) for v in captured]
        return target

    def comprehension(self, node, target, o):
        """``[e for x in xs if c]`` -> an explicit loop that appends (a dict/set display likewise)."""
        result = target if target and not isinstance(node, gast.SetComp) else self.tmp()
        is_dict = isinstance(node, gast.DictComp)
        if is_dict:
            self.emit(ir.Assign(result, ir.Call(ir.Static(runtime.build_dict, "build_dict"),
                                                [ir.Const(())]), o))
        else:
            self.emit(ir.Assign(result, ir.Call(ir.Static(runtime.build_list, "build_list"), []), o))
        saved_renames = dict(self.renames)
        added = set()
        targets = {n.id for gen in node.generators for n in gast.walk(gen.target)
                   if isinstance(n, gast.Name)}
        first = node.generators[0]
        if any(isinstance(n, gast.Name) and n.id in targets for n in gast.walk(first.iter)):
            # the first iterable is evaluated outside the comprehension, where the targets'
            # names still mean the enclosing variables: ``[t * 2 for t in [t, y]]``
            pre = self.tmp()
            self.expr(first.iter, target=pre)
            self.locals.add(pre)
            added.add(pre)
            first = gast.comprehension(target=first.target, iter=gast.copy_location(
                gast.Name(id=pre, ctx=gast.Load(), annotation=None, type_comment=None), first.iter),
                ifs=first.ifs, is_async=0)
        gens = [first] + list(node.generators[1:])
        for gen in gens:
            for n in gast.walk(gen.target):
                if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store):
                    if n.id in self.locals or n.id in self.renames:
                        self.renames[n.id] = self._fresh_name(n.id)
                    if n.id not in self.locals:
                        added.add(n.id)
                        self.locals.add(n.id)

        def level(i):
            if i == len(gens):
                if is_dict:
                    k, v = self.expr(node.key), self.expr(node.value)
                    self.emit(ir.SetItem(result, ir.Index([k], False), v, o))
                else:
                    e = self.expr(node.elt)
                    self.emit(ir.Mutate(None, result, ir.Call(ir.Method("append"), [result, e]), o))
                return
            gen = gens[i]

            def body():
                if gen.ifs:
                    conds = gen.ifs
                    test = self.expr(conds[0] if len(conds) == 1 else
                                     gast.BoolOp(op=gast.And(), values=conds))
                    saved, self.block = self.block, []
                    level(i + 1)
                    inner, self.block = self.block, saved
                    self.emit(ir.If(test, inner, [], o))
                else:
                    level(i + 1)
            self.for_loop(gen.target, gen.iter, body, o)
        level(0)
        self.renames = saved_renames
        self.locals -= added
        if isinstance(node, gast.SetComp):
            self.namespace["set"] = set
            return self._call(ir.Call(ir.Static(set, "set"), [result]), target, o)
        return result

    def _fresh_name(self, base):
        while True:
            self.counter += 1
            name = f"{base}_{self.counter}"
            if name not in self.locals:
                return name

    def star_args(self, elts, o):
        """``(a, *xs, b)`` -> ``_rt.star_args((a,), xs, (b,))``: a tuple whose adjoint splits back."""
        segs, run = [], []
        for e in elts:
            if isinstance(e, gast.Starred):
                if run:
                    segs.append(self._pack(run, o))
                    run = []
                segs.append(self.expr(e.value))
            else:
                run.append(self.expr(e))
        if run:
            segs.append(self._pack(run, o))
        return self._call(ir.Call(ir.Static(runtime.star_args, "_rt.star_args"), segs), None, o)

    def star_call(self, node, o):
        f = node.func
        if isinstance(f, gast.Name) and f.id not in self.locals:
            callee = ir.Const(self.free(f.id, f), f.id)
        else:
            callee = self.expr(f)
        args = self.star_args(node.args, o)
        kws = [k for k in node.keywords if k.arg is not None]
        parts = []
        if kws:
            keys = ir.Const(tuple(k.arg for k in kws))
            vals = [self.expr(k.value) for k in kws]
            parts.append(self._call(ir.Call(ir.Static(runtime.build_dict, "build_dict"),
                                            [keys] + vals), None, o))
        for k in node.keywords:
            if k.arg is None:
                parts.append(self.expr(k.value))
        if not parts:
            kw = ir.Const(None)
        elif len(parts) == 1:
            kw = parts[0]
        else:
            kw = self._call(ir.Call(ir.Static(runtime.merge_dicts, "_rt.merge_dicts"), parts), None, o)
        return ir.Call(ir.Static(runtime.apply, "_rt.apply"), [callee, args, kw])

    def map_call(self, node, o, target=None):
        # map(f, a, b) -> [f(x, y) for x, y in zip(a, b)]
        fn = self.expr(node.args[0])
        seqs = node.args[1:]
        result = target or self.tmp()
        self._lazy_fns[result] = fn
        self.emit(ir.Assign(result, ir.Call(ir.Static(runtime.build_list, "build_list"), []), o))
        names = [self.tmp() for _ in seqs]
        zipped = gast.Call(func=gast.Name(id="zip", ctx=gast.Load(), annotation=None,
                                          type_comment=None), args=list(seqs), keywords=[]) \
            if len(seqs) > 1 else seqs[0]
        for n in names:
            self.locals.add(n)
        tgt = gast.Tuple(elts=[gast.Name(id=n, ctx=gast.Store(), annotation=None, type_comment=None)
                               for n in names], ctx=gast.Store()) if len(seqs) > 1 else \
            gast.Name(id=names[0], ctx=gast.Store(), annotation=None, type_comment=None)
        gast.copy_location(zipped, node)

        def body():
            v = self._call(self._make_call(fn, names), None, o)
            self.emit(ir.Mutate(None, result, ir.Call(ir.Method("append"), [result, v]), o))
        self.namespace["zip"] = zip
        self.for_loop(tgt, zipped, body, o)
        return result

    def starmap_call(self, node, o):
        """``itertools.starmap(f, rows)`` -> ``[f(*row) for row in rows]`` (as map)."""
        fn = self.expr(node.args[0])
        result = self.tmp()
        self._lazy_fns[result] = fn
        self.emit(ir.Assign(result, ir.Call(ir.Static(runtime.build_list, "build_list"), []), o))
        name = self.tmp()
        self.locals.add(name)

        def body():
            v = self._call(ir.Call(ir.Static(runtime.apply, "_rt.apply"), [fn, name, ir.Const(None)]),
                           None, o)
            self.emit(ir.Mutate(None, result, ir.Call(ir.Method("append"), [result, v]), o))
        self.for_loop(gast.Name(id=name, ctx=gast.Store(), annotation=None, type_comment=None),
                      node.args[1], body, o)
        return result

    def filter_call(self, node, o, target=None):
        fn = self.expr(node.args[0])
        result = target or self.tmp()
        self._lazy_fns[result] = fn
        self.emit(ir.Assign(result, ir.Call(ir.Static(runtime.build_list, "build_list"), []), o))
        name = self.tmp()
        self.locals.add(name)

        def body():
            if isinstance(fn, ir.Const) and fn.value is None:
                test = name
            else:
                test = self._call(self._make_call(fn, [name]), None, o)
            self.emit(ir.If(test, [ir.Mutate(None, result, ir.Call(ir.Method("append"),
                                                                   [result, name]), o)], [], o))
        self.for_loop(gast.Name(id=name, ctx=gast.Store(), annotation=None, type_comment=None),
                      node.args[1], body, o)
        return result

    def chain_call(self, node, o, target=None):
        """``itertools.chain(a, b, ...)`` -> the list of the items of a, then of b..."""
        result = target or self.tmp()
        self.emit(ir.Assign(result, ir.Call(ir.Static(runtime.build_list, "build_list"), []), o))
        for it in node.args:
            name = self.tmp()
            self.locals.add(name)

            def body(name=name):
                self.emit(ir.Mutate(None, result, ir.Call(ir.Method("append"), [result, name]), o))
            self.for_loop(gast.Name(id=name, ctx=gast.Store(), annotation=None, type_comment=None),
                          it, body, o)
        return result

    def accumulate_call(self, node, o, target=None):
        """``itertools.accumulate(xs, f, initial=v)`` -> the list of running values:
        ``acc = v`` (or the first x), then ``acc = f(acc, x)`` for each further x."""
        kw = {k.arg: k.value for k in node.keywords}
        fn_node = node.args[1] if len(node.args) == 2 else kw.get("func")
        fn = self.expr(fn_node) if fn_node is not None and \
            not (isinstance(fn_node, gast.Constant) and fn_node.value is None) else None
        result = target or self.tmp()
        self.emit(ir.Assign(result, ir.Call(ir.Static(runtime.build_list, "build_list"), []), o))
        acc, first, name = self.tmp(), self.tmp(), self.tmp()
        for v in (acc, first, name):
            self.locals.add(v)

        def combine():
            if fn is None:
                return ir.Call(ir.Static(operator.add, "+"), [acc, name])
            return self._make_call(fn, [acc, name])
        initial = kw.get("initial")
        if initial is not None and not (isinstance(initial, gast.Constant) and initial.value is None):
            self.expr(initial, target=acc)
            self.emit(ir.Mutate(None, result, ir.Call(ir.Method("append"), [result, acc]), o))

            def body():
                self._call(combine(), acc, o)
                self.emit(ir.Mutate(None, result, ir.Call(ir.Method("append"), [result, acc]), o))
        else:
            self.emit(ir.Assign(first, ir.Const(True), o))

            def body():
                saved, self.block = self.block, []
                self.emit(ir.Assign(acc, name, o))
                self.emit(ir.Assign(first, ir.Const(False), o))
                then, self.block = self.block, []
                self._call(combine(), acc, o)
                other, self.block = self.block, saved
                self.emit(ir.If(first, then, other, o))
                self.emit(ir.Mutate(None, result, ir.Call(ir.Method("append"), [result, acc]), o))
        self.for_loop(gast.Name(id=name, ctx=gast.Store(), annotation=None, type_comment=None),
                      node.args[0], body, o)
        return result

    def reduce_call(self, node, o, target=None):
        # functools.reduce(f, xs[, init]) -> acc = init or xs[0]; for x in rest: acc = f(acc, x)
        fn = self.expr(node.args[0])
        seq = self.expr(node.args[1])
        if not (isinstance(seq, ir.Const) and isinstance(seq.value, (list, tuple))):
            seq = self._seq(seq, o)             # iterators, dict views: the values, indexable
        acc = self.tmp()
        self.locals.add(acc)
        if len(node.args) == 3:
            self.expr(node.args[2], target=acc)
            start = ir.Const(0)
        else:
            self.emit(ir.Assign(acc, ir.Call(ir.Static(operator.getitem, "[]"),
                                             [seq, ir.Index([ir.Const(0)], False)]), o))
            start = ir.Const(1)
        n = self.tmp()
        self.namespace["len"] = len
        self.emit(ir.Assign(n, ir.Call(ir.Static(len, "len"), [seq]), o))
        k = self.tmp()
        saved, self.block = self.block, []
        x = self.tmp()
        self.emit(ir.Assign(x, ir.Call(ir.Static(operator.getitem, "[]"),
                                       [seq, ir.Index([k], False)]), o))
        self._call(self._make_call(fn, [acc, x]), acc, o)
        body, self.block = self.block, saved
        self.emit(ir.For(k, start, n, ir.Const(1), body, o))
        return acc

    def _make_call(self, fn, args):
        if isinstance(fn, ir.Const):
            return ir.Call(ir.Static(fn.value, fn.text or "f"), args)
        return ir.Call(ir.Dynamic(fn), args)

    def index(self, node):
        if isinstance(node, gast.Tuple):
            return ir.Index([self._index_part(e) for e in node.elts], True)
        return ir.Index([self._index_part(node)], False)

    def _index_part(self, node):
        if isinstance(node, gast.Slice):
            return ir.Slice(*(self.expr(p) if p is not None else None
                              for p in (node.lower, node.upper, node.step)))
        return self.expr(node)

    def index_trick(self, obj, key, target, o):
        """``np.r_[a, 0.0, 0:3]``, ``np.c_[...]``, ``np.mgrid[...]``, ``np.s_[...]``: a call with
        the items as arguments, so that their derivatives are routed back (``np.r_`` and
        ``np.c_`` are concatenations); slices become ``_adj.r_slice(lo, hi, step)`` values."""
        from ..rules import adjoints as adj
        kind = adj._index_trick_kind(obj.value)
        elts, is_tuple = (key.elts, True) if isinstance(key, gast.Tuple) else ([key], False)
        what = f"`{obj.text or 'np.r_'}[...]`"
        if any(isinstance(e, gast.Starred) for e in elts):
            raise UnsupportedSyntaxError(f"{what} with `*` items is not supported by s2sad",
                                         origin=o, fix="use np.concatenate(...) with the list")
        if kind == "concat" and not is_tuple and isinstance(key, gast.Constant) and \
                isinstance(key.value, str):
            raise UnsupportedSyntaxError(
                f"{what} with a string builds a matrix from variables named in the string, "
                f"which s2sad cannot follow", origin=o, fix="use np.block([[a, b], [c, d]])")
        self.namespace["_adj"] = adj
        items = []
        for e in elts:
            if isinstance(e, gast.Slice):
                bounds = [self.expr(p) if p is not None else ir.Const(None)
                          for p in (e.lower, e.upper, e.step)]
                items.append(self._call(ir.Call(ir.Static(adj.r_slice, "_adj.r_slice"), bounds),
                                        None, o))
            else:
                items.append(self.expr(e))
        fn = adj.index_concat if kind == "concat" else adj.index_trick
        return self._call(ir.Call(ir.Static(fn, f"_adj.{fn.__name__}"),
                                  [obj, ir.Const(is_tuple)] + items), target, o)


_OPNAMES = {operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/",
            operator.floordiv: "//", operator.mod: "%", operator.pow: "**", operator.matmul: "@",
            operator.lshift: "<<", operator.rshift: ">>", operator.and_: "&", operator.or_: "|",
            operator.xor: "^", operator.neg: "-", operator.pos: "+", operator.not_: "not",
            operator.invert: "~", operator.eq: "==", operator.ne: "!=", operator.lt: "<",
            operator.le: "<=", operator.gt: ">", operator.ge: ">=", operator.is_: "is",
            operator.is_not: "is not"}


_PURE_MAKERS = {zip, enumerate, reversed, iter, range, list, tuple, len}


def _pure_iterable(node, low):
    """True when evaluating ``node`` (what a map or generator walks) has no effect beyond
    making a value: names, constants, displays, attributes and zip/range/... of those."""
    for n in gast.walk(node):
        if isinstance(n, (gast.Lambda, gast.NamedExpr, gast.GeneratorExp, gast.ListComp,
                          gast.SetComp, gast.DictComp)):
            return False
        if isinstance(n, gast.Call):
            f = n.func
            if isinstance(f, gast.Name) and f.id not in low.locals and \
                    _hashable(low.src.resolve(f.id)) and low.src.resolve(f.id) in _PURE_MAKERS:
                continue
            if isinstance(f, gast.Attribute) and f.attr in ("values", "items", "keys") and \
                    not n.args:
                continue
            return False
    return True


def _opname(fn):
    return _OPNAMES[fn]


def _index_trick(value):
    """np.r_, np.c_, np.mgrid, np.ogrid, np.s_, np.index_exp (and CuPy's): lowered as calls."""
    cls = type(value)
    if cls.__module__.startswith(("numpy", "cupy")) and not isinstance(value, type):
        from ..rules.adjoints import _index_trick_kind
        return _index_trick_kind(value) is not None
    return False


def lower(src):
    """Lower a :class:`~s2sad.frontend.source.FunctionSource` to an IR function."""
    return Lowerer(src).lower_function()
