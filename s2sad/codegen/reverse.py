"""Reverse-mode emitter: an analysed IR function becomes a forward sweep and a reverse sweep.

``f__fwd(params) -> (value, tape)`` runs the user's computation and saves what the reverse sweep
reads; ``f__bwd(tape, _b_r) -> tuple of adjoints`` (one per active parameter) walks it backwards.

How values reach the reverse sweep.  A variable bound once, directly in the function body (or a
parameter never rebound), still holds the same value at the end of the forward sweep: it travels in
the tape by name.  Any other value the reverse sweep reads is pushed onto a per-variable list
(``_s_v``) at the point it is read, and popped at the mirrored point.  Arrays later written in place
are copied when pushed.  Loops record their trip count only when it cannot be recomputed (``while``,
or a ``for`` that may end early); branches are re-taken from their saved test value.

How adjoints accumulate.  The emitter knows statically which adjoints exist at every point: the
first contribution assigns (``_b_x = ...``), later ones add.  Where control flow joins (branches,
loop back-edges) an adjoint that exists on one side only is set to ``0.0`` on the other.
"""
import ast as _ast
import operator as _operator
import threading

from .. import ir, runtime
from ..errors import UnsupportedSyntaxError
from ..frontend.analysis import (bound_names, changed_in_place, defined_in, definitions,
                                 may_run_after, mutations, positions, read_in, top_level_defs,
                                 upward_exposed, written_arrays)
from . import text as T


_ANS = "__ans__"


class _State:
    """The adjoints that exist at a point of the reverse sweep (``defined``), and those of them
    that may be the symbolic zero 0.0 there (``zero``: filled in where branches join)."""
    __slots__ = ("defined", "zero")

    def __init__(self, defined=(), zero=()):
        self.defined = set(defined)
        self.zero = set(zero)

    def copy(self):
        return _State(self.defined, self.zero)


_TAKEN = threading.local()   # .names: variables of the function being emitted (this thread)


def _fresh(prefix, v):
    taken = getattr(_TAKEN, "names", ())
    name = f"{prefix}{v}" if v.startswith("_") else f"{prefix}_{v}"
    k = 2
    # (a variable `r` and the temporary `_r` would both give `_b_r`: the user's variable yields)
    clash = not v.startswith("_") and "_" + v in taken
    while name in taken or clash:
        clash = False
        name = f"{prefix}{k}{v}" if v.startswith("_") else f"{prefix}{k}_{v}"
        k += 1
    return name


def b(v):
    """The adjoint's name: ``_b_x`` for ``x``, ``_b_4`` for ``_4``, ``_b_r`` for ``_r``; when the
    function already has a variable of that name (differentiating generated code), ``_b2_x``..."""
    return _fresh("_b", v)


class ReverseEmitter:
    def __init__(self, fn, kinds, active, varied, wrt, namespace, derived_namer):
        self.fn = fn
        self.kinds = kinds
        self.active = active
        self.varied = varied
        self.wrt = list(wrt)                  # active parameter names, in order
        self.namespace = namespace
        self.consts = T.Consts(namespace)
        self.derived_namer = derived_namer    # (pyfunc, mask) -> (fwd_name, bwd_name)
        self.reads = {}                       # id(stmt) -> {"pre": [...], "post": [...]}
        self.synthetic = {}                   # emitter-made var -> "name" | "stack"
        self.site_names = {}                  # id(stmt) -> tape/record name
        self.counters = {}                    # id(loop) -> counter name
        self.provided = []                    # loop targets the reverse loops re-bind
        self.depth = 0
        self.n = 0
        self.real = {v for v, k in kinds.items() if k in ("f", "i")}
        self.index_only = _index_only_vars(fn)
        self.changed = changed_in_place(fn)   # variables changed in place (identity checks)

    def fresh(self, base):
        taken = getattr(_TAKEN, "names", ())
        while True:
            self.n += 1
            name = f"_{base}{self.n}"
            if name not in taken:
                return name

    # -- reads ------------------------------------------------------------------------------
    def read(self, stmt, when, var):
        if not isinstance(var, str) or var in self.provided:
            return
        slot = self.reads.setdefault(id(stmt), {"pre": [], "post": []})
        if var not in slot[when]:
            slot[when].append(var)

    # -- contributions ----------------------------------------------------------------------
    def contribute(self, var, expr, origin, out, st):
        if not isinstance(var, str) or var not in self.active:
            return
        st.zero.discard(var)
        bv = b(var)
        if var in st.defined:
            if self.kinds.get(var) in ("a", "f"):
                out.append(T.Line(f"{bv} = {bv} + {expr}", origin))
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
        self.read(s, "pre", var)
        for v in ir.operand_vars(idx):
            self.read(s, "pre", v)
        st.zero.discard(var)
        if var in st.defined:
            out.append(T.Line(f"{bv} = _rt.acc_getitem({bv}, {var}, {it}, {b(s.target)})", o))
        else:
            out.append(T.Line(f"{bv} = _rt.getitem_adjoint({b(s.target)}, {var}, {it})", o))
            st.defined.add(var)

    def contribute_many(self, pairs, expr, origin, out, st):
        """``expr`` evaluates to a tuple; ``pairs`` lists (position, var) of the parts to use."""
        n = len(pairs)
        live = [(i, v) for i, v in pairs if isinstance(v, str) and v in self.active]
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
        scalar_ops = all(_is_scalar_operand(o, self.kinds) for o in ops
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
        tree = T.substitute(tree, mapping)
        real = self.real | ({_ANS} if self.kinds.get(target) == "f" else set())
        tree = T.simplify(tree, real_names=real, drop_unbroadcast_for=drop_ub)
        used = {n.id for n in _ast.walk(tree) if isinstance(n, _ast.Name)}
        for var in sorted(candidates & used):
            self.read(stmt, "pre", var)
        if _ANS in used:
            self.read(stmt, "post", target)
            tree = T.substitute(tree, {_ANS: T.parse_expr(target)})
        return T.unparse(tree)

    # -- statements -------------------------------------------------------------------------
    def rev_block(self, stmts, st):
        out = []
        for s in reversed(stmts):
            out.extend(self.rev_stmt(s, st))
        return out

    def rev_stmt(self, s, st):
        if isinstance(s, ir.Assign):
            return self.rev_assign(s, st)
        if isinstance(s, ir.SetItem):
            return self.rev_setitem(s, st)
        if isinstance(s, ir.If):
            return self.rev_if(s, st)
        if isinstance(s, (ir.For, ir.While)):
            return self.rev_loop(s, st)
        if isinstance(s, ir.Mutate):
            return self.rev_mutate(s, st)
        if isinstance(s, (ir.With, ir.Try)):
            return self.rev_try(s, st)
        if isinstance(s, ir.DelItem):
            return self.rev_delitem(s, st)
        if isinstance(s, ir.ExprStmt) and s.call.cls == "dynamic" and s.call.info.get("mutates"):
            return self.rev_mut_call(s, s.call, st)
        return []

    def rev_mut_call(self, s, call, st):
        """A method call that may update its object: the object's adjoint after the call goes in,
        its adjoint before the call comes out (with the arguments')."""
        recv = call.info["mutates"]
        t = s.target if isinstance(s, ir.Assign) else None
        has_t = t is not None and t in self.active and t in st.defined
        has_o = recv in self.active and recv in st.defined
        if not (has_t or has_o):
            return []
        o = s.origin
        rec = self.site_names.setdefault(id(s), self.fresh("rec"))
        self.synthetic[rec] = "name" if self.depth == 0 else "stack"
        self.read(s, "post", rec)
        gt = b(t) if has_t else "0.0"
        go = b(recv) if has_o else "0.0"
        if has_t:
            st.defined.discard(t)
        if has_o:
            st.defined.discard(recv)
        g = self.fresh("g")
        lines = [T.Line(f"{g} = _rt.pull({rec}, {gt}, {go})", o)]
        self.contribute(recv, f"{g}[0]", o, lines, st)
        for i, a in enumerate(call.args[1:]):
            self.contribute(a, f"{g}[1][{i}]", o, lines, st)
        for k, a in call.kwargs:
            self.contribute(a, f"{g}[2][{k!r}]", o, lines, st)
        return [T.Hook(id(s), "pops", o)] + lines

    def rev_assign(self, s, st):
        t = s.target
        v = s.value
        if isinstance(v, ir.Call) and v.cls == "dynamic" and v.info.get("mutates"):
            return self.rev_mut_call(s, v, st)
        if t not in self.active or t not in st.defined:
            return []
        o = s.origin
        body = []
        st.defined.discard(t)
        maybe_zero = t in st.zero
        st.zero.discard(t)
        defined_before, zero_before = set(st.defined), set(st.zero)
        v = s.value
        if not isinstance(v, ir.Call):
            self.contribute(v, b(t), o, body, st)
        elif v.cls == "primitive":
            self.rev_primitive(s, v, st, body)
        elif v.cls == "derived":
            self.rev_derived(s, v, st, body)
        elif v.cls == "dynamic":
            self.rev_dynamic(s, v, st, body)
        if v is not None and isinstance(v, ir.Call) and v.cls in ("derived", "dynamic"):
            # a callee's adjoints may be 0.0 (an argument its result does not depend on): what
            # consumes them is guarded like adjoints filled in where branches join
            st.zero |= st.defined - defined_before
        if not body:
            return []
        if maybe_zero:
            # the output's adjoint may be the 0.0 filled in where branches joined: then every
            # contribution is zero, and helpers that reshape or index their g must not see it
            newly = sorted(st.defined - defined_before)
            body = [T.Nest(f"if not _rt.is_zero({b(t)}):", o, body,
                           [T.Line(f"{b(x)} = 0.0", o) for x in newly] or None)]
            st.zero |= set(newly) | (zero_before & defined_before)
        return [T.Hook(id(s), "pops", o)] + body

    def rev_primitive(self, s, call, st, out):
        rule, bound, o, t = call.rule, call.info["bound"], s.origin, s.target
        if rule.joint:
            names, _ = rule.joint
            pairs = [(i, bound.get(p)) for i, p in enumerate(names)]
            if not any(isinstance(v, str) and v in self.active for _, v in pairs):
                return
            expr = self.template_text(rule, "*", s, bound, t)
            self.contribute_many(pairs, expr, o, out, st)
            return
        for p in rule.differentiable:
            v = bound.get(p)
            if isinstance(v, tuple):
                pairs = list(enumerate(v))
                if any(isinstance(x, str) and x in self.active for _, x in pairs):
                    # a part for one of *args may be 0.0 (max/min: the arguments not picked;
                    # zip: the values it did not take): what consumes it is guarded
                    may = {x for _, x in pairs if isinstance(x, str) and
                           (x not in st.defined or x in st.zero)}
                    self.contribute_many(pairs, self.template_text(rule, p, s, bound, t), o, out, st)
                    st.zero |= may & st.defined
            elif isinstance(v, dict):
                live = [(k, x) for k, x in v.items() if isinstance(x, str) and x in self.active]
                if live:
                    tmp = self.fresh("g")
                    out.append(T.Line(f"{tmp} = {self.template_text(rule, p, s, bound, t)}", o))
                    for k, x in live:
                        self.contribute(x, f"{tmp}.get({k!r}, 0.0)", o, out, st)
            elif isinstance(v, str) and v in self.active:
                if rule.fn is _operator.getitem and v in self.index_only and p == "obj":
                    self.contribute_getitem(v, bound["idx"], s, o, out, st)
                    continue
                same = [q for q in rule.differentiable if bound.get(q) == v]
                if len(same) > 1:
                    # one variable in several parameters (x * x): one line for all of them
                    if p != same[0]:
                        continue
                    texts = [self.template_text(rule, q, s, bound, t) for q in same]
                    if self.kinds.get(v) not in ("a", "f"):
                        # a list's adjoint is a list (l + l): `+` would concatenate them
                        expr = texts[0]
                        for x in texts[1:]:
                            expr = f"_rt.add({expr}, {x})"
                    elif len(set(texts)) == 1:
                        expr = f"{len(texts)} * ({texts[0]})"
                    else:
                        expr = " + ".join(f"({x})" for x in texts)
                    self.contribute(v, expr, o, out, st)
                    continue
                self.contribute(v, self.template_text(rule, p, s, bound, t), o, out, st)

    def rev_derived(self, s, call, st, out):
        args = call.info["callargs"]
        mask = tuple(isinstance(a, str) and a in self.active for a in args)
        _, bwd = self.derived_namer(call.info["callee"], mask)
        tape = self.site_names.setdefault(id(s), self.fresh("tape"))
        self.synthetic[tape] = "name" if self.depth == 0 else "stack"
        self.read(s, "post", tape)
        pairs = [(i, a) for i, a in enumerate([a for a, m in zip(args, mask) if m])]
        self.contribute_many(pairs, f"{bwd}({tape}, {b(s.target)})", s.origin, out, st)

    def rev_dynamic(self, s, call, st, out):
        rec = self.site_names.setdefault(id(s), self.fresh("rec"))
        self.synthetic[rec] = "name" if self.depth == 0 else "stack"
        self.read(s, "post", rec)
        g = self.fresh("g")
        lines = [T.Line(f"{g} = _rt.pull({rec}, {b(s.target)})", s.origin)]
        fn = call.fn
        if isinstance(fn, ir.Static) and fn.obj is runtime.apply:
            callee, args_var, kw_var = call.args
            self.contribute(callee, f"{g}[0]", s.origin, lines, st)
            self.contribute(args_var, f"{g}[1]", s.origin, lines, st)
            self.contribute(kw_var, f"{g}[2]", s.origin, lines, st)
            if len(lines) > 1:
                out.extend(lines)
            return
        recv = call.args[0] if isinstance(fn, (ir.Method, ir.Attr)) else \
            fn.var if isinstance(fn, ir.Dynamic) else None
        args = call.args[1:] if isinstance(fn, (ir.Method, ir.Attr)) else call.args
        captured = call.extra.get("captured")
        if captured:
            # the closure read these variables now: their adjoints come back by name
            for v in captured:
                self.contribute(v, f"_rt.cell_adjoint({g}[0], {v!r})", s.origin, lines, st)
        else:
            self.contribute(recv, f"{g}[0]", s.origin, lines, st)
        for i, a in enumerate(args):
            self.contribute(a, f"{g}[1][{i}]", s.origin, lines, st)
        for k, a in call.kwargs:
            self.contribute(a, f"{g}[2][{k!r}]", s.origin, lines, st)
        if len(lines) > 1:
            out.extend(lines)

    def rev_mutate(self, s, st):
        obj, t, call, o = s.obj, s.target, s.call, s.origin
        if obj not in self.active:
            return []
        has_obj = obj in st.defined
        has_t = t is not None and t in st.defined
        if not has_obj and not has_t:
            return []
        name = call.fn.name
        args = call.args[1:]
        c = self.consts
        bo = b(obj)
        out = []
        if name == "pop":
            idx = T.operand_text(args[0], c) if args else "-1"
            for v in ir.operand_vars(args[0]) if args else []:
                self.read(s, "pre", v)
            self.read(s, "post", obj)
            gt = b(t) if has_t else "0.0"
            if has_t:
                st.defined.discard(t)
            out.append(T.Line(f"{bo} = _rt.unpop({bo if has_obj else '0.0'}, {gt}, {obj}, {idx})", o))
            st.defined.add(obj)
            return [T.Hook(id(s), "pops", o)] + out
        if not has_obj:
            return []
        g = self.fresh("g")
        if name == "append":
            out.append(T.Line(f"{bo}, {g} = _rt.unappend({bo})", o))
        elif name == "extend":
            self.read(s, "pre", args[0])
            out.append(T.Line(f"{bo}, {g} = _rt.unextend({bo}, {T.operand_text(args[0], c)})", o))
        elif name == "insert":
            for v in ir.operand_vars(args[0]):
                self.read(s, "pre", v)
            out.append(T.Line(f"{bo}, {g} = _rt.uninsert({bo}, {T.operand_text(args[0], c)})", o))
            args = args[1:]
        elif name == "update":
            self.read(s, "pre", args[0])
            out.append(T.Line(f"{bo}, {g} = _rt.unupdate({bo}, {T.operand_text(args[0], c)})", o))
        else:
            raise UnsupportedSyntaxError(f"`.{name}()` on a value that carries a derivative",
                                         origin=o, fix="build a new list/dict instead")
        if args:
            var = args[-1] if name != "insert" else args[0]
            # an element's adjoint taken out of a list/dict adjoint may be 0.0 (nothing reached
            # that element): what consumes it is guarded
            may_zero = isinstance(var, str) and (var not in st.defined or var in st.zero)
            self.contribute(var, g, o, out, st)
            if may_zero and var in st.defined:
                st.zero.add(var)
        return [T.Hook(id(s), "pops", o)] + out

    def rev_delitem(self, s, st):
        if s.obj not in self.active or s.obj not in st.defined:
            return []
        idx = T.operand_text(s.index, self.consts)
        for v in ir.operand_vars(s.index):
            self.read(s, "pre", v)
        self.read(s, "post", s.obj)
        return [T.Hook(id(s), "pops", s.origin),
                T.Line(f"{b(s.obj)} = _rt.undel({b(s.obj)}, {s.obj}, {idx})", s.origin)]

    def rev_try(self, s, st):
        o = s.origin
        final = self.rev_block(s.finalbody, st)
        branches = []
        states = []
        for k, (_, _, blk) in enumerate(s.handlers):
            sk = st.copy()
            lines = self.nested(lambda: self.rev_block(blk, sk))
            branches.append((k, lines))
            states.append(sk)
        se = st.copy()
        else_lines = self.nested(lambda: self.rev_block(s.orelse, se))
        branches.append((-1, else_lines))
        states.append(se)
        union = set().union(*(x.defined for x in states))
        zero = set().union(*(x.zero for x in states))
        for (k, lines), sk in zip(branches, states):
            for v in sorted(union - sk.defined):
                lines.append(T.Line(f"{b(v)} = 0.0", o))
                zero.add(v)
        st.defined = union
        st.zero = zero
        # the try body: statement k ran to its end only if progress passed it
        body_items = []
        prog = None
        is_with = isinstance(s, ir.With)
        if s.handlers or is_with:
            prog = self.site_names.setdefault(("p", id(s)), self.fresh("p"))
        for k in reversed(range(len(s.body))):
            stmt = s.body[k]
            before = set(st.defined)
            lines = self.nested(lambda: self.rev_stmt(stmt, st)) if prog else self.rev_stmt(stmt, st)
            if not prog:
                body_items.extend(lines)
                continue
            if not lines and st.defined == before:
                continue
            newly, consumed = st.defined - before, before - st.defined
            lines = (lines or []) + [T.Line(f"{b(v)} = 0.0", o) for v in sorted(consumed)]
            not_run = [T.Line(f"{b(v)} = 0.0", o) for v in sorted(newly)]
            st.defined |= before
            st.zero |= newly | consumed
            if isinstance(stmt, (ir.If, ir.For, ir.While, ir.With, ir.Try)):
                partial = [T.Line(f"_rt.partial_compound({self.consts.name_for(stmt.origin)})", o)]
            else:
                partial = [T.Hook(id(stmt), "discard", o)]
            body_items.append(T.Nest(f"if {prog} > {k}:", o, lines,
                                     T.Nest(f"elif {prog} == {k}:", o, partial + not_run,
                                            not_run or None)))
        if is_with:
            if not body_items:
                self.site_names.pop(("p", id(s)), None)
                return []
            self.synthetic[prog] = "name" if self.depth == 0 else "stack"
            self.read(s, "post", prog)
            return [T.Hook(id(s), "pops", o)] + body_items
        if not s.handlers:
            return final + else_lines + body_items
        which = self.site_names.setdefault(("h", id(s)), self.fresh("h"))
        self.synthetic[prog] = self.synthetic[which] = "name" if self.depth == 0 else "stack"
        handler_nest = None
        for k, lines in reversed(branches):
            if not lines:
                continue
            node = T.Nest(f"if {which} == {k}:", o, lines, handler_nest)
            handler_nest = node
        # rewrite the chain's headers: first 'if', the rest 'elif'
        node, first = handler_nest, True
        while node is not None:
            if not first:
                node.header = "el" + node.header
            first = False
            node = node.orelse if isinstance(node.orelse, T.Nest) else None
        self.read(s, "post", which)
        self.read(s, "post", prog)
        items = final + ([handler_nest] if handler_nest else []) + body_items
        if not items:
            return []
        return [T.Hook(id(s), "pops", o)] + items

    def rev_setitem(self, s, st):
        obj = s.obj
        if obj not in self.active or obj not in st.defined:
            return []
        o = s.origin
        idx = T.operand_text(s.index, self.consts)
        for var in ir.operand_vars(s.index):
            self.read(s, "pre", var)
        out = []
        if isinstance(s.value, str) and s.value in self.active:
            self.read(s, "pre", s.value)
            may_zero = s.value not in st.defined or s.value in st.zero
            self.contribute(s.value, f"_rt.setitem_value_adjoint({b(obj)}, {idx}, {s.value})", o,
                            out, st)
            if may_zero:
                # (taken from an adjoint that may be 0.0, or from a list/dict adjoint whose
                # element there may be 0.0: nothing reached it)
                st.zero.add(s.value)
        out.append(T.Line(f"{b(obj)} = _rt.setitem_adjoint({b(obj)}, {idx})", o))
        return [T.Hook(id(s), "pops", o)] + out


    def rev_if(self, s, st):
        sa, sb = st.copy(), st.copy()
        A = self.nested(lambda: self.rev_block(s.body, sa))
        B = self.nested(lambda: self.rev_block(s.orelse, sb))
        if not A and not B and sa.defined == sb.defined == st.defined:
            return []
        for v in sorted(sb.defined - sa.defined):
            A.append(T.Line(f"{b(v)} = 0.0", s.origin))
        for v in sorted(sa.defined - sb.defined):
            B.append(T.Line(f"{b(v)} = 0.0", s.origin))
        st.zero = sa.zero | sb.zero | (sa.defined ^ sb.defined)
        st.defined = sa.defined | sb.defined
        test = T.operand_text(s.test, self.consts)
        self.read(s, "pre", s.test)
        if A and B:
            node = T.Nest(f"if {test}:", s.origin, A, B)
        elif A:
            node = T.Nest(f"if {test}:", s.origin, A)
        else:
            node = T.Nest(f"if not {test}:", s.origin, B)
        return [T.Hook(id(s), "pops", s.origin), node]

    def nested(self, thunk):
        self.depth += 1
        try:
            return thunk()
        finally:
            self.depth -= 1

    def rev_loop(self, s, st):
        body = s.body
        defs = defined_in(body)
        touched = self.active & (defs | read_in(body))
        carried = {v for v in touched
                   if v not in defs or upward_exposed(body, v) or v in st.defined}
        entry = set(st.defined)
        init = [T.Line(f"{b(v)} = 0.0", s.origin) for v in sorted(carried - entry)]
        st_body = _State(entry | carried, st.zero | (carried - entry))
        if isinstance(s, ir.For):
            self.provided.append(s.target)
        try:
            inner = self.nested(lambda: self.rev_block(body, st_body))
        finally:
            if isinstance(s, ir.For):
                self.provided.pop()
        killed = sorted(carried - st_body.defined)   # overwritten in the body by a value with
        if not inner and not killed:                  # no derivative: zero after one trip or more
            return []
        inner += [T.Line(f"{b(v)} = 0.0", s.origin) for v in killed]
        # after any number of trips (none included) a carried adjoint may still be a filled zero
        st.zero |= st_body.zero | (carried - entry) | (carried - st_body.defined)
        st.defined = entry | carried
        o = s.origin
        if isinstance(s, ir.For):
            rng = (f"range({T.operand_text(s.start, self.consts)}, "
                   f"{T.operand_text(s.stop, self.consts)}, {T.operand_text(s.step, self.consts)})")
            if isinstance(s.start, ir.Const) and s.start.value == 0 and \
                    isinstance(s.step, ir.Const) and s.step.value == 1:
                rng = f"range({T.operand_text(s.stop, self.consts)})"
            for op in (s.start, s.stop, s.step):
                self.read(s, "pre", op)
            if s.brk:
                cnt = self.counter(s)
                rng = f"{rng}[:{cnt}]"
            header = f"for {s.target} in reversed({rng}):"
        else:
            cnt = self.counter(s)
            header = f"for _ in range({cnt}):"
        return init + [T.Hook(id(s), "pops", o), T.Nest(header, o, inner)]

    def counter(self, s):
        cnt = self.counters.get(id(s))
        if cnt is None:
            cnt = self.counters[id(s)] = self.fresh("n")
        self.synthetic[cnt] = "name" if self.depth == 0 else "stack"
        self.read(s, "post", cnt)
        return cnt

    # -- saving -----------------------------------------------------------------------------
    def plan_saves(self):
        """Decide, per variable the reverse sweep reads, whether it travels by name or on a stack."""
        defs = definitions(self.fn)
        top = top_level_defs(self.fn)
        written = written_arrays(self.fn)
        self.written = written
        self.positions = positions(self.fn)
        self.mutations = mutations(self.fn)
        self.classes = written_arrays(self.fn, classes=True)
        self.mode = {}
        for slot in self.reads.values():
            for v in slot["pre"] + slot["post"]:
                if v in self.mode:
                    continue
                if v in self.synthetic:
                    self.mode[v] = self.synthetic[v]
                elif v in written:
                    self.mode[v] = "stack"
                elif defs.get(v, 0) == 1 and (v in self.fn.params or v in top):
                    self.mode[v] = "name"
                else:
                    self.mode[v] = "stack"

    def check_read_then_changed(self, call, s, o):
        """A call whose derivative is made apart (a user function, a closure, a call resolved when
        it runs) keeps what it read for its own reverse sweep: the objects themselves, not copies.
        An array, list or dict it reads (an argument, or a variable a local closure captured) that
        is changed in place after the call would be read changed when that reverse sweep runs, so
        the derivative would be silently wrong: refused (fuzz 8088:2130, 8088:15017)."""
        if self.site_names.get(id(s)) is None or isinstance(call.fn, ir.Attr):
            return      # the reverse sweep never pulls this call; an attribute read keeps no object
        args = call.info["callargs"] if call.cls == "derived" else \
            list(call.args[1:] if isinstance(call.fn, ir.Method) else call.args)
        if call.cls == "dynamic" and isinstance(call.fn, ir.Dynamic):
            args = args + [call.fn.var]
        seen = set()
        for v in args:
            if not isinstance(v, str) or v in seen:
                continue
            seen.add(v)
            for w in [v] + self._closure_cells(v):
                if self.kinds.get(w) not in ("a", "c") or w in self.synthetic:
                    continue
                if w in self.classes and self.changed_later(s, w):
                    via = "" if w == v else (" (through a closure that reads it)" if
                                             v.startswith("_") else
                                             f" (through the closure `{v}`, which reads it)")
                    raise UnsupportedSyntaxError(
                        f"`{w}` is read by a call{via} whose derivative keeps it for its reverse "
                        f"sweep, and `{w}` is changed in place afterwards; that sweep would read "
                        f"the changed value",
                        origin=o,
                        fix=f"pass a copy to the call (`{w}.copy()`, `list({w})`), or make the later "
                            f"change on a copy (`{w} = {w}.copy()` before it)")

    def _closure_cells(self, v):
        """The variables a local closure bound to ``v`` captured (none when ``v`` is not one)."""
        cells = self._cells_cache.get(v) if hasattr(self, "_cells_cache") else None
        if cells is not None:
            return cells
        if not hasattr(self, "_cells_cache"):
            self._cells_cache = {}
        cells = []
        for t in ir.walk(self.fn.body):
            if isinstance(t, ir.Assign) and t.target == v and isinstance(t.value, ir.Call) and \
                    isinstance(t.value.fn, ir.Static) and t.value.fn.obj is runtime.make_closure:
                cells += [w for k, w in zip(t.value.args[0].value, t.value.args[1:])
                          if not k.endswith("=") and isinstance(w, str)]
        self._cells_cache[v] = cells
        return cells

    def changed_later(self, s, v):
        """Whether an in-place change of ``v``'s memory can follow statement ``s`` (then a saved
        array or list must be a copy: the reverse sweep needs it as it was when ``s`` read it)."""
        cls = self.classes.get(v)
        return any(may_run_after(self.positions, s, m) for m, obj in self.mutations
                   if not isinstance(obj, str) or self.classes.get(obj, obj) == cls or cls is None)

    def pushes(self, s, when, caps=None):
        slot = self.reads.get(id(s))
        if not slot:
            return []
        out = []
        for v in slot[when]:
            if self.mode.get(v) == "stack":
                val = (caps or {}).get(v, v)
                if v in self.written and self.changed_later(s, v):
                    val = f"_rt.snap({val})"
                out.append(T.Line(f"{stack(v)}.append({val})", s.origin))
        return out

    def pops(self, key):
        slot = self.reads.get(key)
        if not slot:
            return []
        out = []
        for when in ("post", "pre"):
            for v in slot[when]:
                if self.mode.get(v) == "stack":
                    out.append(v)
        return out

    # -- forward sweep ----------------------------------------------------------------------
    def fwd_block(self, stmts):
        out = []
        for s in stmts:
            if isinstance(s, _COMPOUND):
                # a compound statement's own values are saved after it, so that what its body
                # saves is popped after them in the reverse sweep (last in, first out); a value
                # its body may change is captured first
                caps = {}
                assigned = defined_in(ir.children(s)[0] + [x for blk in ir.children(s)[1:] for x in blk])
                for v in (self.reads.get(id(s)) or {"pre": []})["pre"]:
                    if self.mode.get(v) == "stack" and v in assigned:
                        caps[v] = self.fresh("cap")
                        out.append(T.Line(f"{caps[v]} = {v}", s.origin))
                out.extend(self.fwd_stmt(s))
                out.extend(self.pushes(s, "pre", caps))
                out.extend(self.pushes(s, "post"))
                continue
            out.extend(self.pushes(s, "pre"))
            out.extend(self.fwd_stmt(s))
            out.extend(self.pushes(s, "post"))
        return out

    def fwd_stmt(self, s):
        o = s.origin
        c = self.consts
        if isinstance(s, ir.Assign):
            v = s.value
            if not isinstance(v, ir.Call):
                return [T.Line(f"{s.target} = {T.operand_text(v, c)}", o)]
            return self.fwd_call(s.target, v, s, o)
        if isinstance(s, ir.SetItem):
            if s.attr:
                return [T.Line(f"{T.operand_text(s.obj, c)}.{s.attr} = {T.operand_text(s.value, c)}", o)]
            return [T.Line(f"{T.operand_text(s.obj, c)}[{T.index_subscript_text(s.index, c)}] = "
                           f"{T.operand_text(s.value, c)}", o)]
        if isinstance(s, ir.DelItem):
            return [T.Line(f"del {T.operand_text(s.obj, c)}[{T.index_subscript_text(s.index, c)}]", o)]
        if isinstance(s, ir.Mutate):
            text = T.call_text(s.call, c)
            return [T.Line(f"{s.target} = {text}" if s.target else text, o)]
        if isinstance(s, ir.With):
            items = ", ".join(T.operand_text(x, c) + (f" as {v}" if v else "") for x, v in s.items)
            prog = self.site_names.get(("p", id(s)))
            if not prog:
                return [T.Nest(f"with {items}:", o, self.fwd_block(s.body))]
            body = []
            for k, stmt in enumerate(s.body):
                body.extend(self.fwd_block([stmt]))
                body.append(T.Line(f"{prog} = {k + 1}", o))
            return [T.Line(f"{prog} = 0", o), T.Nest(f"with {items}:", o, body)]
        if isinstance(s, ir.Try):
            return self.fwd_try(s)
        if isinstance(s, ir.ExprStmt):
            call = s.call
            if call.cls == "dynamic" and call.info.get("mutates") and not call.info.get("effect"):
                return self.fwd_call("_", call, s, o)
            if call.info and call.info.get("effect"):
                fn = call.fn
                if isinstance(fn, ir.Method):
                    callee, args = f"{T.operand_text(call.args[0], c)}.{fn.name}", call.args[1:]
                elif isinstance(fn, ir.Static):
                    callee, args = fn.text, call.args
                elif isinstance(fn, ir.Dynamic):
                    callee, args = T.operand_text(fn.var, c), call.args
                else:
                    return [T.Line(T.call_text(call, c), o)]
                parts = [callee] + [T.operand_text(a, c) for a in args] + \
                    [f"{k}={T.operand_text(v, c)}" for k, v in call.kwargs]
                arg = call.info.get("argument")
                if arg:
                    site = self.consts.name_for(o)
                    return [T.Line(f"_rt.no_update(_rt.call({', '.join(parts)})[1], {arg!r}, "
                                   f"{site})", o)]
                return [T.Line(f"_rt.call({', '.join(parts)})", o)]
            return [T.Line(T.call_text(call, c), o)]
        if isinstance(s, ir.Raise):
            return [T.Line("raise" + (f" {T.operand_text(s.exc, c)}" if s.exc is not None else ""), o)]
        if isinstance(s, ir.If):
            body, orelse = self.fwd_block(s.body), self.fwd_block(s.orelse)
            test = T.operand_text(s.test, c)
            if not body and orelse:
                return [T.Nest(f"if not {test}:", o, orelse)]
            return [T.Nest(f"if {test}:", o, body, orelse or None)]
        if isinstance(s, ir.For):
            body = self.fwd_block(s.body)
            rng = (f"range({T.operand_text(s.start, c)}, {T.operand_text(s.stop, c)}, "
                   f"{T.operand_text(s.step, c)})")
            if isinstance(s.start, ir.Const) and s.start.value == 0 and \
                    isinstance(s.step, ir.Const) and s.step.value == 1:
                rng = f"range({T.operand_text(s.stop, c)})"
            cnt = self.counters.get(id(s))
            pre = []
            if cnt:
                pre = [T.Line(f"{cnt} = 0", o)]
                body = [T.Line(f"{cnt} += 1", o)] + body
            if s.brk:
                body.append(T.Line(f"if {s.brk}:", o))
                body.append(T.Line("    break", o))
            return pre + [T.Nest(f"for {s.target} in {rng}:", o, body)]
        if isinstance(s, ir.While):
            cnt = self.counters.get(id(s))
            test = T.operand_text(s.test, c)
            tb = self.fwd_block(s.test_body)
            body = self.fwd_block(s.body)
            if cnt:
                body = [T.Line(f"{cnt} += 1", o)] + body
            if s.brk:
                body += [T.Line(f"if {s.brk}:", o), T.Line("    break", o)]
            pre = [T.Line(f"{cnt} = 0", o)] if cnt else []
            if not tb:
                return pre + [T.Nest(f"while {test}:", o, body)]
            return pre + [T.Nest("while True:", o,
                                 tb + [T.Line(f"if not {test}:", o), T.Line("    break", o)] + body)]
        if isinstance(s, ir.Return):
            return [T.Line(f"return {T.operand_text(s.value, c)}, {self.tape_text()}", o)]
        raise AssertionError(f"unexpected statement {s!r}")

    def fwd_try(self, s):
        o, c = s.origin, self.consts
        prog = self.site_names.get(("p", id(s)))
        which = self.site_names.get(("h", id(s)))
        pre = []
        body = []
        for k, stmt in enumerate(s.body):
            body.extend(self.fwd_block([stmt]))
            if prog:
                body.append(T.Line(f"{prog} = {k + 1}", o))
        if prog:
            pre = [T.Line(f"{which} = -1", o), T.Line(f"{prog} = 0", o)]
        node = T.Nest("try:", o, body)
        items = [node]
        for k, (t, n, blk) in enumerate(s.handlers):
            head = "except" + (f" {T.operand_text(t, c)}" if t is not None else "") + \
                (f" as {n}" if n else "") + ":"
            hb = ([T.Line(f"{which} = {k}", o)] if which else []) + self.fwd_block(blk)
            items.append(T.Nest(head, o, hb))
        if s.orelse:
            items.append(T.Nest("else:", o, self.fwd_block(s.orelse)))
        if s.finalbody:
            items.append(T.Nest("finally:", o, self.fwd_block(s.finalbody)))
        return pre + items

    def fwd_call(self, target, call, s, o):
        c = self.consts
        cls = call.cls
        if cls in ("derived", "dynamic"):
            self.check_read_then_changed(call, s, o)
        if isinstance(call.fn, ir.Static) and call.fn.obj is runtime.make_closure:
            src = call.extra["source"]
            if call.extra.get("lambda"):
                return [T.Line(f"{target} = {src[0][0]}", o)]
            return [T.Line(text, org, raw=k > 0) for k, (text, org) in enumerate(src)]
        if isinstance(call.fn, ir.Static) and call.fn.obj is runtime.apply:
            f, args, kw = (T.operand_text(x, c) for x in call.args)
            star = f"*{args}" + (f", **{kw}" if not (isinstance(call.args[2], ir.Const) and
                                                    call.args[2].value is None) else "")
            if cls == "dynamic":
                rec = self.site_names.get(id(s)) or "_"
                return [T.Line(f"{target}, {rec} = _rt.call({f}, {star})", o)]
            return [T.Line(f"{target} = {f}({star})", o)]
        if cls == "derived":
            args = call.info["callargs"]
            mask = tuple(isinstance(a, str) and a in self.active for a in args)
            fwd, _ = self.derived_namer(call.info["callee"], mask)
            tape = self.site_names.get(id(s))
            if tape is None:        # the reverse sweep never needs this call's tape
                tape = "_"
            argtext = ", ".join(T.operand_text(a, c) for a in args)
            return [T.Line(f"{target}, {tape} = {fwd}({argtext})", o)] + \
                T.identity_check(target, call, o, self.changed, self.consts, args=args)
        if cls == "dynamic":
            rec = self.site_names.get(id(s)) or "_"
            fn = call.fn
            kw = [f"{k}={T.operand_text(v, c)}" for k, v in call.kwargs]
            if isinstance(fn, ir.Attr):
                return [T.Line(f"{target}, {rec} = _rt.attr({T.operand_text(call.args[0], c)}, "
                               f"{fn.name!r})", o)]
            if isinstance(fn, ir.Method):
                callee = f"{T.operand_text(call.args[0], c)}.{fn.name}"
                args = call.args[1:]
            elif isinstance(fn, ir.Static):
                callee = T.static_callee_text(fn, c)
                args = call.args
            else:
                callee = T.operand_text(fn.var, c)
                args = call.args
            parts = [callee] + [T.operand_text(a, c) for a in args] + kw
            arg = call.info.get("argument")
            if arg and rec == "_":
                rec = self.fresh("rec")            # only for the check below
            line = [T.Line(f"{target}, {rec} = _rt.call({', '.join(parts)})", o)]
            if arg:
                site = self.consts.name_for(o)
                line.append(T.Line(f"_rt.no_update({rec}, {arg!r}, {site})", o))
            if not call.info.get("operator"):
                receiver = isinstance(fn, ir.Method) and bool(call.info.get("mutates")) and \
                    target in self.varied
                line += T.identity_check(target, call, o, self.changed, self.consts,
                                         receiver=receiver)
            return line
        line = [T.Line(f"{target} = {T.call_text(call, c)}", o)]
        if cls == "opaque" and call.info.get("varied_args"):
            site = self.consts.name_for(_OpaqueSite(call, o))
            line.append(T.Line(f"_rt.check_opaque({target}, {site})", o))
        if call.info.get("base_cls", cls) in ("derived", "dynamic", "opaque") and \
                not isinstance(call.fn, ir.Attr):
            line += T.identity_check(target, call, o, self.changed, self.consts)
        return line

    def tape_text(self):
        names = self.tape_names()
        if not names:
            return "()"
        return "(" + ", ".join(names) + ("," if len(names) == 1 else "") + ")"

    def tape_names(self):
        out = []
        for v, m in self.mode.items():
            if m == "name" and v not in out:
                out.append(v)
        for v, m in self.mode.items():
            if m == "stack":
                out.append(stack(v))
        return out

    # -- driver -----------------------------------------------------------------------------
    def emit(self, fwd_name, bwd_name):
        fn = self.fn
        names = set(fn.params)
        for st_ in ir.walk(fn.body):
            names.update(bound_names(st_))
        _TAKEN.names = names
        ret = fn.body[-1]
        assert isinstance(ret, ir.Return)
        st = _State()
        out_var = ret.value if isinstance(ret.value, str) and ret.value in self.active else None
        if out_var is not None:
            st.defined.add(out_var)
        rev = self.rev_block(fn.body[:-1], st) if out_var is not None else []
        self.plan_saves()
        o = fn.origin
        fwd = []
        for v, m in self.mode.items():
            if m == "stack":
                fwd.append(T.Line(f"{stack(v)} = []", None))
        fwd += self.fwd_block(fn.body)
        grads = [b(p) if p in st.defined else "0.0" for p in self.wrt]
        names = self.tape_names()
        tape = "_tape"
        while tape in _TAKEN.names:
            tape = "_" + tape
        head = []
        if names:
            head.append(T.Line(", ".join(names) + ("," if len(names) == 1 else "") + f" = {tape}", None))
        bwd = head + rev + [T.Line("return (" + ", ".join(grads) + ("," if len(grads) == 1 else "")
                                   + ")", None)]
        out_name = out_var or "_r"
        fwd_src = self.render_function(f"def {fwd_name}({', '.join(fn.params)}):", fwd, o)
        bwd_src = self.render_function(f"def {bwd_name}({tape}, {b(out_name)}):", bwd, o)
        return fwd_src, bwd_src

    def expand(self, hook):
        if hook.when == "discard":
            # the statement raised after saving its inputs: drop what it pushed
            slot = self.reads.get(hook.key) or {"pre": []}
            return [T.Line(f"{stack(v)}.pop()", hook.origin) for v in slot["pre"]
                    if self.mode.get(v) == "stack"]
        return [T.Line(f"{v} = {stack(v)}.pop()", hook.origin) for v in self.pops(hook.key)]

    def render_function(self, header, body, origin):
        triples = [(0, header, None)]
        T.render(body, self.expand, triples, 1)
        return triples


_COMPOUND = (ir.If, ir.For, ir.While, ir.Try, ir.With)


def stack(v):
    """The list a variable's saved values are pushed on: ``_s_x`` for ``x``, ``_s_4`` for ``_4``."""
    return _fresh("_s", v)


def _index_only_vars(fn):
    """Variables whose every differentiable use is ``x[...]`` (their adjoints can be filled in place)."""
    ok, bad = set(), set()
    for s in ir.walk(fn.body):
        if isinstance(s, ir.Assign):
            v = s.value
            if isinstance(v, ir.Call) and v.cls == "primitive" and v.rule.fn is _operator.getitem:
                obj = v.args[0]
                if isinstance(obj, str):
                    ok.add(obj)
                bad.update(ir.operand_vars(v.args[1]))
            elif isinstance(v, ir.Call):
                bad.update((v.info or {}).get("diff_vars", v.reads()))
            else:
                bad.update(ir.operand_vars(v))
        elif isinstance(s, ir.SetItem):
            bad.update([s.obj] + ir.operand_vars(s.value))
        elif isinstance(s, ir.Return):
            bad.update(ir.operand_vars(s.value))
    return ok - bad


def _operand_vars_deep(v):
    if isinstance(v, tuple):
        return [x for e in v for x in ir.operand_vars(e)]
    if isinstance(v, dict):
        return [x for e in v.values() for x in ir.operand_vars(e)]
    if v is None:
        return []
    return ir.operand_vars(v)


def _is_scalar_operand(o, kinds):
    if isinstance(o, ir.Const):
        return isinstance(o.value, (int, float, bool)) or o.value is None
    return kinds.get(o) in ("f", "i")


def _real_const(o):
    return isinstance(o, ir.Const) and (isinstance(o.value, (int, float, bool)) or o.value is None)


class _OpaqueSite:
    """What a run-time opaque-callee check needs to write its error message."""

    def __init__(self, call, origin):
        self.call = call
        self.origin = origin

    def __repr__(self):
        return f"<call site {self.origin.short()}>"
