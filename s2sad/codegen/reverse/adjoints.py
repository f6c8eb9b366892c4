"""Contributions to adjoints (the first assigns, later ones add) and the text of a rule's
template for one statement."""
import ast as _ast

from ... import ir
from .. import text as T
from .names import _ANS, b
from .operands import _is_scalar_operand, _operand_vars_deep, _real_const
from .same_shape import shape_classes


def _plus(bv, expr):
    """``bv + expr``; ``bv - e`` for an ``expr`` that is ``-e`` (the same numbers: IEEE
    subtraction is the addition of the negation; one array operation instead of two).  Built as
    a tree: an ``expr`` of lower precedence than ``+`` (a rule's ``a if c else b``) gets its
    parentheses (pasted as text, ``bv + a if c else b`` dropped ``bv`` whenever c was false)."""
    try:
        tree = _ast.parse(expr, mode="eval").body
    except SyntaxError:
        return f"{bv} + ({expr})"
    if isinstance(tree, _ast.UnaryOp) and isinstance(tree.op, _ast.USub):
        return _ast.unparse(_ast.BinOp(_ast.Name(bv, _ast.Load()), _ast.Sub(), tree.operand))
    return _ast.unparse(_ast.BinOp(_ast.Name(bv, _ast.Load()), _ast.Add(), tree))


class AdjointContributions:
    """The part of :class:`~.emitter.ReverseEmitter` that writes contributions to adjoints."""

    # -- contributions ----------------------------------------------------------------------
    def contribute(self, var, expr, origin, out, st):
        if not isinstance(var, str) or var not in self.active:
            return
        assert var not in self.tuples, var      # (tuples.py writes their contributions)
        self.flush_hoisted(origin, out)
        st.zero.discard(var)
        bv = b(var)
        if var in st.defined:
            if self.jit and self.kinds.get(var) == "a":
                # (a contribution has the shape of var: _rt.acc checks it, where NumPy would
                # broadcast a zero made for another shape of var silently)
                out.append(T.Line(f"{bv} = _rt.acc({bv}, {expr})", origin))
            elif self.kinds.get(var) in ("a", "f"):
                out.append(T.Line(f"{bv} = {_plus(bv, expr)}", origin))
            else:
                out.append(T.Line(f"{bv} = _rt.add({bv}, {expr})", origin))
        else:
            out.append(T.Line(f"{bv} = {expr}", origin))
            st.defined.add(var)

    def contribute_getitem(self, var, idx, s, o, out, st):
        """``x[idx]`` read where x is only ever read by indexing: accumulate in place into an
        adjoint buffer the derivative allocated (no O(n) zeros per element read in a loop)."""
        bv = b(var)
        it = T.operand_text(idx, self.consts)
        if var in self.owned and self.scalar_index(var, idx):
            # (one element, into the buffer the enclosing loop owns: see own_buffers)
            for v in ir.operand_vars(idx):
                self.read(s, "pre", v)
            it = it[1:-1] if isinstance(idx, ir.Index) and len(idx.parts) > 1 else it
            out.append(T.Line(f"{bv}[{it}] += {b(s.target)}", o))
            return
        # (jit=True: the compiled helpers read a real array's shape alone)
        x = self.standin_text(s, var) if self.jit else None
        if x is None:
            self.read(s, "pre", var)
            x = var
        for v in ir.operand_vars(idx):
            self.read(s, "pre", v)
        st.zero.discard(var)
        if var in st.defined:
            out.append(T.Line(f"{bv} = _rt.acc_getitem({bv}, {x}, {it}, {b(s.target)})", o))
        else:
            out.append(T.Line(f"{bv} = _rt.getitem_adjoint({b(s.target)}, {x}, {it})", o))
            st.defined.add(var)

    def contribute_many(self, pairs, expr, origin, out, st):
        """``expr`` evaluates to a tuple; ``pairs`` lists (position, var) of the parts to use."""
        n = len(pairs)
        live = [(i, v) for i, v in pairs if isinstance(v, str) and v in self.active]
        self.flush_hoisted(origin, out)
        if not live:
            return
        distinct = len({v for _, v in live}) == len(live)
        if distinct and all(v not in st.defined for _, v in live):
            names = ["_"] * n
            for i, v in live:
                names[i] = b(v)
            lhs = ", ".join(names) + ("," if n == 1 else "")
            out.append(T.Line(f"{lhs} = {expr}", origin))
            st.defined.update(v for _, v in live)
            return
        tmp = self.fresh("g")
        out.append(T.Line(f"{tmp} = {expr}", origin))
        for i, v in live:
            self.contribute(v, f"{tmp}[{i}]", origin, out, st)

    def result_count(self, node):
        """How many values the template call ``node`` (an AST) returns, where its helper
        (``_adj.name``/``_rt.name``) declares it (rules.adjoints._results); else None."""
        if isinstance(node, _ast.Call) and isinstance(node.func, _ast.Attribute) and \
                isinstance(node.func.value, _ast.Name) and node.func.value.id in ("_adj", "_rt"):
            ns = self.namespace.get(node.func.value.id)
            n = getattr(getattr(ns, node.func.attr, None), "n_results", None)
            return n if isinstance(n, int) else None
        return None

    def flush_hoisted(self, origin, out):
        """The bindings templates hoisted (:meth:`template_text`, jit mode), written into out."""
        for names, text in self.hoisted:
            out.append(T.Line(", ".join(names) + ("," if len(names) == 1 else "") +
                              f" = {text}", origin))
        self.hoisted = []

    def typed_real_scalar(self, o):
        """A variable the type inference knows is a real scalar (a Python or NumPy number)."""
        t = self.types.get(o) if isinstance(o, str) else None
        return t is not None and t[0] == "s" and t[1] in "bif"

    def beside_masks(self, arrays):
        """Of the array operands of an elementwise operation, those whose adjoint needs no
        ``unbroadcast``: every other array operand is a boolean mask of the same shape
        (same_shape.py), so ``g`` (of the result's shape) has the operand's shape and dtype."""
        if self._shape_classes is None:
            self._shape_classes = shape_classes(self.fn, self.kinds, self.types, self.changed)
        cls = self._shape_classes
        if len({cls.get(o, o) for o in arrays}) != 1:
            return set()
        masks = {o for o in arrays if (self.types.get(o) or ("?",))[0] == "a" and
                 self.types[o][1] == "b"}
        return {o for o in arrays if self.kinds.get(o) == "a" and arrays - {o} <= masks}

    # -- templates --------------------------------------------------------------------------
    def operand_ast(self, op):
        return T.parse_expr(T.operand_text(op, self.consts))

    def template_text(self, rule, which, stmt, bound, target):
        tree = rule.template(which)
        names = {n.id for n in _ast.walk(tree) if isinstance(n, _ast.Name)}
        mapping = {}
        params = rule.signature.parameters
        drop_ub = set()
        candidates = set()
        for p in params:
            if p not in names:
                continue
            v = bound.get(p)
            mapping[p] = self.operand_ast(v)
            candidates.update(_operand_vars_deep(v))
        for nm in names:
            if nm.startswith("n_") and isinstance(bound.get(nm[2:]), tuple):
                mapping[nm] = T.parse_expr(str(len(bound[nm[2:]])))
        if "g" in names:
            mapping["g"] = T.parse_expr(b(target))
        if "ans" in names:
            mapping["ans"] = T.parse_expr(_ANS)
        # unbroadcast(e, v) is e when every operand is a Python scalar/constant and v is too
        ops = [bound.get(p) for p in params]
        scalar_ops = all(_is_scalar_operand(o, self.kinds) or self.typed_real_scalar(o) for o in ops
                         if isinstance(o, (str, ir.Const)))
        if scalar_ops:
            drop_ub = {o for o in ops if isinstance(o, str)}
        elif rule.broadcast:
            # elementwise op with one array operand and constants: the array keeps its shape
            # (an operand of unknown kind may be a list: `l * 2` repeats it, and unbroadcast
            # refuses that at run time rather than give a list twice too long)
            arrays = {o for o in ops if isinstance(o, str) and self.kinds.get(o) != "f"}
            if len(arrays) == 1 and all(self.kinds.get(o) == "a" for o in arrays) and \
                    all(_real_const(o) or o in self.real or o in arrays
                        for o in ops if isinstance(o, (str, ir.Const))):
                drop_ub = set(arrays)
            elif len(arrays) > 1 and all(_real_const(o) or o in self.real or o in arrays
                                         for o in ops if isinstance(o, (str, ir.Const))):
                drop_ub = self.beside_masks(arrays)
        tree = T.substitute(tree, mapping)
        if self.jit:
            # (numba: starred arguments spliced, or bound to names first: self.hoisted)
            tree, hoisted = T.unstar(tree, self.result_count, lambda: self.fresh("u"))
            self.hoisted.extend(hoisted)
        real = self.real | ({_ANS} if self.kinds.get(target) == "f" or target in self.real else set())
        # (a real number's adjoint in a product, sum(g * y), as one dot product: one pass
        # without the product's array)
        sum_for = () if scalar_ops else \
            {o for o in ops if isinstance(o, str) and (self.kinds.get(o) in ("f", "i") or
                                                       self.typed_real_scalar(o))}
        tree = T.simplify(tree, real_names=real, drop_unbroadcast_for=drop_ub, sum_for=sum_for)
        tree = self.shape_args(tree, stmt)         # (arrays read for their shapes only)
        used = {n.id for n in _ast.walk(tree) if isinstance(n, _ast.Name)}
        for var in sorted(candidates & used):
            self.read(stmt, "pre", var)
        if _ANS in used:
            self.read(stmt, "post", target)
            tree = T.substitute(tree, {_ANS: T.parse_expr(target)})
        return T.unparse(tree)
