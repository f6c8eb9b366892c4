"""The reverse sweep of assignments and calls: primitive sites (a rule's templates), derived
callees (their own ``__bwd``), sites resolved at run time (``_rt.pull``), method calls that may
update their object."""
import math
import operator as _operator

from ... import ir, runtime
from .. import text as T
from .names import b


class ReverseCalls:
    """The part of :class:`~.emitter.ReverseEmitter` for assignments and calls, reversed."""

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
        for i, a in enumerate(call.args[1:] if isinstance(call.fn, ir.Method) else call.args):
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
        if self.tuples and self.rev_tuple_assign(s, st, body):
            pass                        # (a tuple adjoint held as one variable per element)
        elif not isinstance(v, ir.Call):
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
        if maybe_zero and not self.jit and self.typed_real_scalar(t) and \
                all(self.typed_real_scalar(x) for x in st.defined - defined_before) and \
                self.reads_only_integers(s):
            # a real scalar's filled-in 0.0 is a zero of its own type, and contributions made of
            # it and constants alone (`_b_a = _b_t`, `-_b_t`, `_b_t * 2.0`) are zeros too:
            # nothing reshapes or indexes it (no guard)
            st.zero |= (st.defined - defined_before) | (zero_before & defined_before)
            maybe_zero = False
        if maybe_zero:
            # the output's adjoint may be the 0.0 filled in where branches joined: then every
            # contribution is zero (not 0.0 * inf, nan, where a value the output does not depend
            # on is infinite), and helpers that reshape or index their g must not see it
            newly = sorted(st.defined - defined_before)
            body = [T.Nest(f"if {self.nonzero_text(t)}:", o, body,
                           [self.zero_line(x, o, s) for x in newly] or None)]
            st.zero |= set(newly) | (zero_before & defined_before)
        return [T.Hook(id(s), "pops", o)] + body

    def reads_only_integers(self, s):
        """The reverse of ``s`` reads no saved value but integer or bool scalars (indices) and
        finite constants: its contributions are its adjoint times numbers that are finite."""
        slot = self.reads.get(id(s), {"pre": [], "post": []})
        call = s.value
        shape_only = set()
        if isinstance(call, ir.Call) and call.cls == "primitive" and call.rule is not None and \
                call.rule.fn is _operator.getitem:
            shape_only.add(call.args[0])        # (x[i]'s adjoint reads x for its shape alone)
        for v in slot["pre"] + slot["post"]:
            if v in shape_only:
                continue
            t = self.types.get(v)
            if not (t is not None and t[0] == "s" and t[1] in "bi"):
                return False
        ops = call.args if isinstance(call, ir.Call) else [call]
        return all(not isinstance(a, ir.Const) or not isinstance(a.value, (int, float)) or
                   math.isfinite(a.value) for a in ops)

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
                    text = self.template_text(rule, p, s, bound, t)
                    self.flush_hoisted(o, out)
                    out.append(T.Line(f"{tmp} = {text}", o))
                    for k, x in live:
                        self.contribute(x, f"{tmp}.get({k!r}, 0.0)", o, out, st)
            elif isinstance(v, str) and v in self.active:
                if rule.fn is _operator.getitem and p == "obj" and (v in self.index_only or (
                        v in self.owned and self.scalar_index(v, bound["idx"]))):
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
                text = self.template_text(rule, p, s, bound, t)
                if rule.user and not rule.broadcast:
                    # (a user's rule: an adjoint of another shape than its argument's would be
                    # broadcast into the gradient without an error: refused when it runs; in
                    # the numba build, runtime/jit.rule_adjoint)
                    site = self.consts.name_for(o)
                    self.read(s, "pre", v)          # (the argument, for its shape)
                    text = f"_rt.rule_adjoint({text}, {v}, {rule.name!r}, {p!r}, {site})"
                self.contribute(v, text, o, out, st)

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
