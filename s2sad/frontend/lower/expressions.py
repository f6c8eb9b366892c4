"""Lowering of expressions to operands: names, constants, attribute chains, operators,
comparisons, ``and``/``or`` and conditional expressions (``If`` statements), subscripts and
index tricks (``np.r_[...]``), displays, f-strings, nested functions and lambdas (closures).

A part of :class:`~.lowerer.Lowerer`, which it is mixed into: the methods use the lowerer's
state (``self.block``, ``self.locals``, ``self.namespace``...) and call each other across
the parts.
"""
import operator

import gast

from ... import ir, runtime
from ...errors import UnsupportedSyntaxError
from ..mangle import unparsed
from ..source import _MISSING
from .scopes import free_names
from .tables import BINOPS, CMPOPS, UNARYOPS, _index_trick, _opname


class ExpressionLowering:
    """Expressions (calls: :class:`~.calls.CallLowering`)."""

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
            if isinstance(node.op, (gast.USub, gast.UAdd)) and \
                    isinstance(node.operand, gast.Constant) and \
                    type(node.operand.value) in (int, float, complex):
                # a signed number literal is one constant (``x ** -1.5``, ``x[-1]``): no
                # temporary, nothing saved for the reverse sweep
                v = node.operand.value
                return self._finish(ir.Const(-v if isinstance(node.op, gast.USub) else v),
                                    target, o)
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
                return self._dict_unpack(node, target, o)
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

    def _dict_unpack(self, node, target, o):
        """``{**a, k: v, **b}`` -> ``merge_dicts(a, {k: v}, b)``: runs of ``k: v`` pairs become dict
        displays, the mappings are taken as they are, and the merge keeps each key's last value
        (Python's rule), so a key's adjoint goes back to the part that gave it.  Keys and values
        are evaluated left to right, as Python does."""
        parts, run = [], []

        def flush():
            if run:
                keys = [k for k, _ in run]
                vals = [v for _, v in run]
                if all(isinstance(k, ir.Const) and k.text is None for k in keys):
                    keyop = ir.Const(tuple(k.value for k in keys))
                else:
                    keyop = self._pack(keys, o)
                parts.append(self._call(ir.Call(ir.Static(runtime.build_dict, "build_dict"),
                                                [keyop] + vals), None, o))
                run.clear()

        for k, v in zip(node.keys, node.values):
            if k is None:
                flush()
                parts.append(self.expr(v))
            else:
                run.append((self.expr(k), self.expr(v)))
        flush()
        return self._call(ir.Call(ir.Static(runtime.merge_dicts, "_rt.merge_dicts"), parts),
                          target, o)

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
        from ...rules import adjoints as adj
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
