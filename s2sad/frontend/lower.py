"""Lowering: a gast function definition becomes an IR :class:`~s2sad.ir.Function` in A-normal form.

Every operation becomes a call site: operators call :mod:`operator` functions, ``x[i]`` calls
``operator.getitem``, ``x.T`` is an :class:`~s2sad.ir.Attr` site, ``x.sum()`` a
:class:`~s2sad.ir.Method` site.  ``and``/``or`` and conditional expressions become ``If`` statements;
loops over sequences become loops over ``range`` with an explicit read of the element.
"""
import operator

import gast

from .. import ir, runtime
from ..errors import UnsupportedSyntaxError
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
    gast.Import: "an import inside the function", gast.ImportFrom: "an import inside the function",
}


def _assigned_names(fnode):
    """Names bound anywhere in the function body (Python's rule for local variables)."""
    names = set()
    for node in gast.walk(fnode):
        if isinstance(node, gast.Name) and isinstance(node.ctx, (gast.Store, gast.Del)):
            names.add(node.id)
    return names


class Lowerer:
    def __init__(self, src):
        self.src = src
        self.counter = 0
        self.namespace = {}
        self.block = None
        self.fnode = src.node
        args = self.fnode.args
        if args.vararg is not None or args.kwarg is not None:
            raise UnsupportedSyntaxError(
                f"{src.fn.__qualname__} takes *args/**kwargs, which s2sad does not differentiate yet",
                origin=src.origin(self.fnode), fix="list the parameters explicitly")
        self.params = [a.id for a in args.posonlyargs + args.args + args.kwonlyargs]
        self.locals = _assigned_names(self.fnode) | set(self.params)

    # -- helpers ----------------------------------------------------------------------------
    def tmp(self):
        self.counter += 1
        return f"_{self.counter}"

    def emit(self, stmt):
        self.block.append(stmt)

    def unsupported(self, node, what=None):
        what = what or _CONSTRUCT_NAMES.get(type(node)) or f"`{type(node).__name__}`"
        raise UnsupportedSyntaxError(
            f"{what} is not supported by s2sad yet", origin=self.src.origin(node),
            fix="rewrite this line with plain assignments, calls, if/for/while; or move it into a "
                "helper with a rule (s2sad.defrule)")

    def free(self, name, node):
        value = self.src.resolve(name)
        if value is _MISSING:
            raise UnsupportedSyntaxError(f"name {name!r} is not defined", origin=self.src.origin(node),
                                         fix=f"define {name!r} before calling the function")
        self.namespace[name] = value
        return value

    # -- function ---------------------------------------------------------------------------
    def lower_function(self):
        self.block = []
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
        return ir.Function(self.src.fn.__name__, self.params, self.block,
                           self.src.origin(self.fnode), pyfunc=self.src.fn,
                           namespace=self.namespace)

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
            if len(node.targets) == 1 and isinstance(node.targets[0], gast.Name):
                self.expr(node.value, target=node.targets[0].id)
            else:
                v = self.expr(node.value)
                for t in node.targets:
                    self.assign(t, v, o)
        elif isinstance(node, gast.AnnAssign):
            if node.value is not None:
                if isinstance(node.target, gast.Name):
                    self.expr(node.value, target=node.target.id)
                else:
                    self.assign(node.target, self.expr(node.value), o)
        elif isinstance(node, gast.AugAssign):
            self.augassign(node, o)
        elif isinstance(node, gast.Expr):
            if isinstance(node.value, gast.Constant):
                return                                  # docstring
            v = node.value
            if isinstance(v, gast.Call):
                call = self.call(v)
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
            if node.orelse:
                self.unsupported(node, "`while ... else`")
            saved, self.block = self.block, []
            test = self.expr(node.test)
            test_body, self.block = self.block, saved
            self.emit(ir.While(test_body, test, self.sub_block(node.body), o))
        elif isinstance(node, gast.For):
            self.for_loop(node, o)
        elif isinstance(node, gast.Break):
            self.emit(ir.Break(o))
        elif isinstance(node, gast.Continue):
            self.emit(ir.Continue(o))
        elif isinstance(node, gast.Pass):
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
        else:
            self.unsupported(node)

    def assign(self, target, value, o):
        """Store operand ``value`` into an assignment target."""
        if isinstance(target, gast.Name):
            self.emit(ir.Assign(target.id, value, o))
        elif isinstance(target, (gast.Tuple, gast.List)):
            if any(isinstance(e, gast.Starred) for e in target.elts):
                self.unsupported(target, "starred unpacking")
            for k, elt in enumerate(target.elts):
                t = self.tmp() if not isinstance(elt, gast.Name) else elt.id
                self.emit(ir.Assign(t, ir.Call(ir.Static(operator.getitem, "[]"),
                                               [value, ir.Index([ir.Const(k)], False)]), o))
                if not isinstance(elt, gast.Name):
                    self.assign(elt, t, o)
        elif isinstance(target, gast.Subscript):
            obj = self.expr(target.value)
            if not isinstance(obj, str):
                self.unsupported(target, "assignment into a non-local value")
            idx = self.index(target.slice)
            self.emit(ir.SetItem(obj, idx, value, o))
        else:
            self.unsupported(target, f"assignment to {type(target).__name__}")

    def augassign(self, node, o):
        fn = BINOPS.get(type(node.op))
        t = node.target
        if isinstance(t, gast.Name):
            rhs = self.expr(node.value)
            self._call(ir.Call(ir.Static(fn, _opname(fn)), [t.id, rhs]), t.id, o)
        elif isinstance(t, gast.Subscript):
            obj = self.expr(t.value)
            idx = self.index(t.slice)
            old = self.tmp()
            self.emit(ir.Assign(old, ir.Call(ir.Static(operator.getitem, "[]"), [obj, idx]), o))
            rhs = self.expr(node.value)
            new = self.tmp()
            self.emit(ir.Assign(new, ir.Call(ir.Static(fn, _opname(fn)), [old, rhs]), o))
            self.emit(ir.SetItem(obj, idx, new, o))
        else:
            self.unsupported(t, f"augmented assignment to {type(t).__name__}")

    def for_loop(self, node, o):
        if node.orelse:
            self.unsupported(node, "`for ... else`")
        it = node.iter
        target = node.target
        # for x in range(...)
        if (isinstance(it, gast.Call) and isinstance(it.func, gast.Name) and it.func.id == "range"
                and it.func.id not in self.locals and not it.keywords
                and self.src.resolve("range") is range and 1 <= len(it.args) <= 3):
            ops = [self.expr(a) for a in it.args]
            start, stop, step = ((ir.Const(0), ops[0], ir.Const(1)) if len(ops) == 1 else
                                 (ops[0], ops[1], ir.Const(1)) if len(ops) == 2 else ops)
            if isinstance(target, gast.Name) and not self._assigned_in(node.body, target.id):
                self.emit(ir.For(target.id, start, stop, step, self.sub_block(node.body), o))
            else:
                k = self.tmp()
                saved, self.block = self.block, []
                self.assign(target, k, o)
                self.stmts(node.body)
                body, self.block = self.block, saved
                self.emit(ir.For(k, start, stop, step, body, o))
            return
        # for a, b in zip(...), for i, x in enumerate(...), for x in seq
        seqs, enum = self._sequence_parts(it)
        k = self.tmp()
        lens = []
        for s in seqs:
            n = self.tmp()
            self.emit(ir.Assign(n, ir.Call(ir.Static(len, "len"), [s]), o))
            self.namespace["len"] = len
            lens.append(n)
        stop = lens[0]
        if len(lens) > 1:
            stop = self.tmp()
            self.emit(ir.Assign(stop, ir.Call(ir.Static(min, "min"), lens), o))
            self.namespace["min"] = min
        saved, self.block = self.block, []
        elems = []
        for s in seqs:
            e = self.tmp()
            self.emit(ir.Assign(e, ir.Call(ir.Static(operator.getitem, "[]"),
                                           [s, ir.Index([k], False)]), o))
            elems.append(e)
        item = elems[0]
        if enum or len(elems) > 1:
            # bind the target structurally: (i, x) for enumerate, (a, b) for zip
            parts = ([k] if enum else []) + ([elems[0]] if len(elems) == 1 else elems)
            if enum and len(elems) > 1:
                parts = [k, tuple(elems)]
            self._bind_struct(target, parts, o)
        else:
            self.assign(target, item, o)
        self.stmts(node.body)
        body, self.block = self.block, saved
        self.emit(ir.For(k, ir.Const(0), stop, ir.Const(1), body, o))

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
        """(sequences, enumerate?) for zip(...)/enumerate(...)/a sequence."""
        if isinstance(it, gast.Call) and isinstance(it.func, gast.Name) and not it.keywords \
                and it.func.id not in self.locals:
            f = self.src.resolve(it.func.id)
            if f is enumerate and len(it.args) == 1:
                inner, _ = self._sequence_parts(it.args[0])
                if len(inner) == 1 or (isinstance(it.args[0], gast.Call)):
                    if len(inner) > 1:
                        return inner, True
                    return inner, True
            if f is zip and it.args:
                return [self.expr(a) for a in it.args], False
        return [self.expr(it)], False

    def _assigned_in(self, body, name):
        for n in body:
            for m in gast.walk(n):
                if isinstance(m, gast.Name) and m.id == name and isinstance(m.ctx, gast.Store):
                    return True
        return False

    # -- expressions ------------------------------------------------------------------------
    def expr(self, node, target=None):
        """Lower an expression; returns an operand.  With ``target``, the value lands in that name."""
        o = self.src.origin(node)
        if isinstance(node, gast.Constant):
            return self._finish(ir.Const(node.value), target, o)
        if isinstance(node, gast.Name):
            if node.id in self.locals:
                return self._finish(node.id, target, o)
            value = self.free(node.id, node)
            return self._finish(ir.Const(value, node.id), target, o)
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
            return self._call(self.call(node), target, o)
        if isinstance(node, gast.Subscript):
            obj = self.expr(node.value)
            idx = self.index(node.slice)
            return self._call(ir.Call(ir.Static(operator.getitem, "[]"), [obj, idx]), target, o)
        if isinstance(node, (gast.Tuple, gast.List)):
            if any(isinstance(e, gast.Starred) for e in node.elts):
                self.unsupported(node, "starred elements in a tuple/list display")
            items = [self.expr(e) for e in node.elts]
            build = runtime.build_tuple if isinstance(node, gast.Tuple) else runtime.build_list
            return self._call(ir.Call(ir.Static(build, build.__name__), items), target, o)
        if isinstance(node, gast.Dict):
            if any(k is None for k in node.keys):
                self.unsupported(node, "`**` in a dict display")
            keys = [self.expr(k) for k in node.keys]
            vals = [self.expr(v) for v in node.values]
            return self._call(ir.Call(ir.Static(runtime.build_dict, "build_dict"),
                                      [self._pack(keys, o)] + vals), target, o)
        if isinstance(node, gast.Slice):
            return self._call(ir.Call(ir.Static(slice, "slice"), [self._opt(node.lower),
                              self._opt(node.upper), self._opt(node.step)]), target, o)
        if isinstance(node, gast.JoinedStr):
            return self._finish(self._fstring(node), target, o)
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

    def call(self, node):
        if any(isinstance(a, gast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            self.unsupported(node, "`*args`/`**kwargs` in a call")
        f = node.func
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
        args = recv + [self.expr(a) for a in node.args]
        kwargs = [(k.arg, self.expr(k.value)) for k in node.keywords]
        return ir.Call(callee, args, kwargs)

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

    def index(self, node):
        if isinstance(node, gast.Tuple):
            return ir.Index([self._index_part(e) for e in node.elts], True)
        return ir.Index([self._index_part(node)], False)

    def _index_part(self, node):
        if isinstance(node, gast.Slice):
            return ir.Slice(*(self.expr(p) if p is not None else None
                              for p in (node.lower, node.upper, node.step)))
        return self.expr(node)


_OPNAMES = {operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/",
            operator.floordiv: "//", operator.mod: "%", operator.pow: "**", operator.matmul: "@",
            operator.lshift: "<<", operator.rshift: ">>", operator.and_: "&", operator.or_: "|",
            operator.xor: "^", operator.neg: "-", operator.pos: "+", operator.not_: "not",
            operator.invert: "~", operator.eq: "==", operator.ne: "!=", operator.lt: "<",
            operator.le: "<=", operator.gt: ">", operator.ge: ">=", operator.is_: "is",
            operator.is_not: "is not"}


def _opname(fn):
    return _OPNAMES[fn]


def lower(src):
    """Lower a :class:`~s2sad.frontend.source.FunctionSource` to an IR function."""
    return Lowerer(src).lower_function()
