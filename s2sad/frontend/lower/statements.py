"""Lowering of statements: assignments (to names, unpacked targets, items, attributes, globals and
cells), augmented assignments, in-place mutations, ``if``/``while``/``with``/``try``/``raise``/
``assert``/``del``, imports inside the function, ``super().__init__``, ``np.add.at``.

A part of :class:`~.lowerer.Lowerer`, which it is mixed into: the methods use the lowerer's
state (``self.block``, ``self.locals``, ``self.namespace``...) and call each other across
the parts.
"""
import ast
import operator

import gast

from ... import ir, runtime
from ...errors import UnsupportedSyntaxError
from ..source import _MISSING
from .tables import BINOPS, _MUTATORS, _opname


class StatementLowering:
    """Statements (``for`` loops: :class:`~.loops.LoopLowering`)."""

    # -- statements -------------------------------------------------------------------------
    def stmt(self, node):
        o = self.src.origin(node)
        if isinstance(node, gast.Assign):
            if len(node.targets) == 1 and isinstance(node.targets[0], gast.Name) and \
                    self._plain_local(node.targets[0].id):
                self._assign_value(node.value, node.targets[0].id, o)
            elif not self._display_unpacked(node, o):
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
        if any(isinstance(a, gast.Starred) for a in call.args):
            return False
        call_args = call.args
        if call.keywords:
            # d.update(k=v, ...) (after a dict display given first) is d.update({..., "k": v})
            if f.attr != "update" or any(k.arg is None for k in call.keywords) or \
                    len(call.args) > 1 or call.args and not isinstance(call.args[0], gast.Dict):
                return False
            first = call.args[0] if call.args else gast.Dict(keys=[], values=[])
            merged = gast.Dict(keys=list(first.keys) + [gast.Constant(value=k.arg, kind=None)
                                                        for k in call.keywords],
                               values=list(first.values) + [k.value for k in call.keywords])
            call_args = [gast.copy_location(merged, call)]
        obj = self.name(f.value.id) if on_local else self.expr(f.value)
        args = [obj] + [self.expr(a) for a in call_args]
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

    def _display_unpacked(self, node, o):
        """``a, b = b, a`` (a display unpacked into as many targets): each value into a name of
        its own first, then the targets, with no tuple between (an item of a tuple would be
        another name for the same object, which the analyses could take for a view).  False
        when ``node`` is not of that form."""
        value, targets = node.value, node.targets
        if len(targets) != 1 or not isinstance(targets[0], (gast.Tuple, gast.List)) or \
                not isinstance(value, (gast.Tuple, gast.List)) or \
                len(value.elts) != len(targets[0].elts) or \
                any(isinstance(e, gast.Starred) for e in value.elts + targets[0].elts):
            return False
        ops = []
        for e in value.elts:
            v = self.expr(e)
            if isinstance(v, str):       # (Python evaluates them all before it assigns)
                t = self.tmp()
                self.emit(ir.Assign(t, v, o))
                v = t
            ops.append(v)
        for t, v in zip(targets[0].elts, ops):
            self.assign(t, v, o)
        return True

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
            # (``lst[i] += v``, ``o.w += v``: Python changes the item in place, which other
            # names and other items or attributes may hold too; classify.writes checks that
            # nothing else sees it)
            aug = {"augmented_item": _target_text(t)}
            self.emit(ir.Assign(new, ir.Call(ir.Static(fn, _opname(fn)), [old, rhs], extra=aug),
                                o))
            if isinstance(t, gast.Subscript):
                self.emit(ir.SetItem(obj, idx, new, o))
            else:
                self.emit(ir.SetItem(obj, ir.Index([ir.Const(t.attr)], False), new, o, attr=t.attr))
        else:
            self.unsupported(t, f"augmented assignment to {type(t).__name__}")


def _target_text(node):
    """The source of an assignment's target, as the user would write it (``acc[i]``)."""
    return ast.unparse(gast.gast_to_ast(node))
