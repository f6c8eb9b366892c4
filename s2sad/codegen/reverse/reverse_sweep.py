"""The reverse sweep of statements: blocks, branches, loops (trip counts), ``try``/``with``
(progress records), in-place changes of lists and dicts, item writes and deletions.  Adjoints
that exist on one side of a join only are set to ``0.0`` on the other."""
import operator as _operator

from ... import ir
from ...errors import UnsupportedSyntaxError
from ...frontend.analysis import (bound_names, defined_in, diff_reads_call, in_place_call,
                                  read_in, upward_exposed)
from .. import text as T
from .names import _State, b


class ReverseSweep:
    """The part of :class:`~.emitter.ReverseEmitter` that reverses statements."""

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
            pop = "unappend_owned" if obj in self.owned else "unappend"
            out.append(T.Line(f"{bo}, {g} = _rt.{pop}({bo})", o))
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
                lines.append(self.zero_line(v, o))
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
            lines = (lines or []) + [self.zero_line(v, o) for v in sorted(consumed)]
            not_run = [self.zero_line(v, o) for v in sorted(newly)]
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
        keep = self.keeps_written(s) if isinstance(s.value, str) and s.value in self.active \
            else None
        if obj in self.owned and self.scalar_index(obj, s.index):
            # (an element of a buffer the loop owns: read it and zero it in place)
            it = idx[1:-1] if isinstance(s.index, ir.Index) and len(s.index.parts) > 1 else idx
            self.contribute(s.value, self.unless_truncated(keep, f"{b(obj)}[{it}]"), o, out, st)
            out.append(T.Line(f"{b(obj)}[{it}] = 0.0", o))
            return [T.Hook(id(s), "pops", o)] + out
        if isinstance(s.value, str) and s.value in self.active:
            self.read(s, "pre", s.value)
            may_zero = s.value not in st.defined or s.value in st.zero or keep is not None
            self.contribute(s.value, self.unless_truncated(
                keep, f"_rt.setitem_value_adjoint({b(obj)}, {idx}, {s.value})"), o, out, st)
            if may_zero:
                # (taken from an adjoint that may be 0.0, or from a list/dict adjoint whose
                # element there may be 0.0: nothing reached it)
                st.zero.add(s.value)
        out.append(T.Line(f"{b(obj)} = _rt.setitem_adjoint({b(obj)}, {idx})", o))
        return [T.Hook(id(s), "pops", o)] + out

    def keeps_written(self, s):
        """For ``obj[idx] = v``: None when ``obj`` certainly keeps the derivative of what is
        written into it (a list or dict, an array its type shows is float or complex), else the
        name of the value the forward sweep saves to tell when it runs (shapes.dtype_var): an
        integer or bool array truncates ``v``, whose derivative is then zero."""
        obj = s.obj
        if s.attr is not None or not isinstance(obj, str) or self.kinds.get(obj) in ("c", "o"):
            return None             # (an attribute, a list or dict, an object of yours)
        t = self.types.get(obj)
        if t is not None and t[0] == "a" and t[1] in "fc":
            return None
        return self.dtype_var(s, obj)

    def unless_truncated(self, keep, expr):
        if keep is None:
            return expr
        return f"_rt.keep_if({keep}, {expr})" if self.jit else f"_rt.dtype_guard({keep}, {expr})"

    def rev_if(self, s, st):
        sa, sb = st.copy(), st.copy()
        A = self.nested(lambda: self.rev_block(s.body, sa))
        B = self.nested(lambda: self.rev_block(s.orelse, sb))
        if not A and not B and sa.defined == sb.defined == st.defined:
            return []
        for v in sorted(sb.defined - sa.defined):
            A.append(self.zero_line(v, s.origin))
        for v in sorted(sa.defined - sb.defined):
            B.append(self.zero_line(v, s.origin))
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
        own, owned = self.own_buffers(s, body, st)
        entry = set(st.defined)
        init = [self.zero_line(v, s.origin) for v in sorted(carried - entry)]
        st_body = _State(entry | carried, st.zero | (carried - entry))
        if isinstance(s, ir.For):
            self.provided.append(s.target)
        try:
            inner = self.nested(lambda: self.rev_block(body, st_body))
        finally:
            if isinstance(s, ir.For):
                self.provided.pop()
            self.owned -= owned
        killed = sorted(carried - st_body.defined)   # overwritten in the body by a value with
        if not inner and not killed and not own:      # no derivative: zero after one trip or more
            return []
        inner += [self.zero_line(v, s.origin) for v in killed]
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
            cnt = None
            if s.brk:
                cnt = self.counter(s)
                rng = f"{rng}[:{cnt}]"
            if self.jit:
                # (numba has no reversed(range) nor range slices): the same values, last first
                start, stop, step = (T.operand_text(op, self.consts)
                                     for op in (s.start, s.stop, s.step))
                if cnt is not None:
                    # the first cnt values (the loop ended early): start .. start+(cnt-1)*step
                    rng = f"range({start} + ({cnt} - 1) * {step}, {start} - {step}, -{step})"
                elif rng == f"range({stop})":
                    rng = f"range({stop} - 1, -1, -1)"
                else:
                    rng = (f"range({start} + (len(range({start}, {stop}, {step})) - 1) * {step}, "
                           f"{start} - {step}, -{step})")
                header = f"for {s.target} in {rng}:"
                inner = [T.Hook(id(s), "trip", o)] + inner    # (stacks.py: its trip index)
            else:
                header = f"for {s.target} in reversed({rng}):"
        else:
            cnt = self.counter(s)
            header = f"for _ in range({cnt}):"
            if self.jit:
                inner = [T.Hook(id(s), "trip", o)] + inner    # (stacks.py: its trip index)
        return init + [T.Hook(id(s), "pops", o)] + own + [T.Nest(header, o, inner)]

    # -- adjoint buffers a loop writes in place (both modes) ---------------------------------
    def scalar_index(self, var, idx):
        """Whether ``var[idx]`` is one element of the typed real array ``var``: as many parts as
        it has dimensions, each a typed integer scalar or an int constant."""
        t = self.types.get(var)
        if t is None or t[0] != "a" or t[1] != "f":
            return False
        parts = idx.parts if isinstance(idx, ir.Index) else [idx]
        if len(parts) != t[2]:
            return False
        for p in parts:
            if isinstance(p, ir.Const):
                if type(p.value) is not int:
                    return False
            elif not (isinstance(p, str) and self.types.get(p) == ("s", "i") and p != var):
                return False
        return True

    def own_buffers(self, loop, body, st):
        """Adjoints the reverse loop may write in place, element by element: of typed real arrays
        that the loop body only writes one element of (``y[i, j] = v``, v a typed real scalar) or
        only reads one element of (``t = x[i, j]``, and reads no other way in the body: what
        other statements add to x's adjoint, before or after the loop, goes to other buffers
        since the owned one is a copy), and of
        lists it only appends to.  Before the reverse loop each gets a buffer of its own
        (``_rt.own``: a copy of its adjoint, or zeros; ``_rt.own_list``), so no other value
        shares it.  Returns (those lines, the variables)."""
        if not getattr(self, "in_place_buffers", True) or \
                any(isinstance(x, (ir.Try, ir.With)) for x in ir.walk(body)):
            return [], set()
        seen = set()
        lists = set()
        bad = set()
        written, indexed = set(), set()
        for x in ir.walk(body):
            if isinstance(x, ir.SetItem) and isinstance(x.obj, str) and x.attr is None:
                seen.add(x.obj)
                written.add(x.obj)
                if not (self.scalar_index(x.obj, x.index) and x.obj not in ir.operand_vars(x.value)
                        and (isinstance(x.value, ir.Const) or self.typed_real_scalar(x.value))):
                    bad.add(x.obj)
                bad.update(ir.operand_vars(x.index))
                bad.update(ir.operand_vars(x.value))
                continue
            if isinstance(x, ir.Mutate) and isinstance(x.obj, str) and x.target is None and \
                    x.call.fn.name == "append" and len(x.call.args) == 2:
                lists.add(x.obj)
                bad.update(ir.operand_vars(x.call.args[1]))
                continue
            if isinstance(x, ir.Assign) and isinstance(x.value, ir.Call) and \
                    x.value.cls == "primitive" and x.value.rule.fn is _operator.getitem and \
                    isinstance(x.value.args[0], str):
                v = x.value.args[0]
                seen.add(v)
                indexed.add(v)
                if not self.scalar_index(v, x.value.args[1]):
                    bad.add(v)
                bad.update(ir.operand_vars(x.value.args[1]))
                bad.update(bound_names(x))
                continue
            if isinstance(x, (ir.ExprStmt, ir.Assign)) and isinstance(getattr(
                    x, "call", getattr(x, "value", None)), ir.Call) and \
                    (x.call if isinstance(x, ir.ExprStmt) else x.value).cls in \
                    ("inactive", "zero") and in_place_call(x) is None:
                # (a call with no derivative that changes nothing, as the run-time write checks
                # (_rt.share_guard): its reverse touches no adjoint)
                bad.update(bound_names(x))
                continue
            # (what else the body reads: only differentiable reads touch an adjoint in reverse)
            bad.update(diff_reads_call(x) if isinstance(x, ir.ExprStmt) or
                       (isinstance(x, ir.Assign) and isinstance(x.value, ir.Call)) else x.reads())
            bad.update(bound_names(x))
            if isinstance(x, (ir.Mutate, ir.DelItem)) and isinstance(x.obj, str):
                bad.add(x.obj)
        # (an array both written and read by element: the write reads and zeroes its element of
        # the buffer, a read adds to its element, in the reverse order of the forward; no value
        # of the array is needed, only its shape)
        arrays = sorted(v for v in seen - bad - self.owned
                        if v in self.active and self.types.get(v, ("?",))[0] == "a")
        # (lists the body only appends to: their adjoints are popped from in place)
        # (jit mode: a list's adjoint is a 1-d array there, whose unappend is a view already)
        lsts = [] if self.jit else sorted(v for v in lists - seen - bad - self.owned
                                          if v in self.active and v in st.defined)
        lines = []
        for v in arrays:
            g = b(v) if v in st.defined else "0.0"
            if self.jit and (self.depth > 0 or v in self.written_anywhere()):
                # (its shape alone, bound before the loop, which changes no shape: no array kept
                # alive per trip of an enclosing loop, no copy of one the loop writes into)
                x = f"_adj.standin({self.shape_var(loop, v)})"
            else:
                self.read(loop, "post", v)
                x = v
            lines.append(T.Line(f"{b(v)} = _rt.own({g}, {x})", loop.origin))
            st.defined.add(v)
            st.zero.discard(v)
        for v in lsts:
            lines.append(T.Line(f"{b(v)} = _rt.own_list({b(v)})", loop.origin))
        found = set(arrays) | set(lsts)
        self.owned |= found
        return lines, found

    def counter(self, s):
        cnt = self.counters.get(id(s))
        if cnt is None:
            cnt = self.counters[id(s)] = self.fresh("n")
        self.synthetic[cnt] = "name" if self.depth == 0 else "stack"
        self.read(s, "post", cnt)
        return cnt
