"""The forward sweep: the user's statements and calls, with the pushes of what the reverse sweep
reads, loop counters, progress records of ``try``/``with``, the tapes of derived callees and the
records of sites resolved at run time, and the run-time checks on their results."""
from ... import ir, runtime
from ...frontend.analysis import defined_in
from .. import text as T
from .operands import _OpaqueSite


_COMPOUND = (ir.If, ir.For, ir.While, ir.Try, ir.With)


class ForwardSweep:
    """The part of :class:`~.emitter.ReverseEmitter` that writes the forward sweep."""

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
                    if self.mode.get(v) == "stack" and v in assigned and \
                            (id(s), "pre", v) not in self.no_push:
                        caps[v] = self.fresh("cap")
                        out.append(T.Line(f"{caps[v]} = {v}", s.origin))
                out.extend(self.shape_lines(s))   # (shapes of the arrays a loop's reverse owns)
                out.extend(self.fwd_stmt(s))
                out.extend(self.pushes(s, "pre", caps))
                out.extend(self.pushes(s, "post"))
                continue
            out.extend(self.shape_lines(s))
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
            return T.container_guard(s, self.kinds, c) + \
                [T.Line(f"{s.target} = {text}" if s.target else text, o)]
        if isinstance(s, ir.With):
            items = T.with_items_text(s, lambda x: T.operand_text(x, c), c)
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
            body += self.trip_end_lines(s)
            cnt = self.counters.get(id(s))
            pre = self.reserve_lines(s)          # (stacks.py: room before the loop)
            if cnt:
                pre.append(T.Line(f"{cnt} = 0", o))
                body = [T.Line(f"{cnt} += 1", o)] + body
            if s.brk:
                body += [T.Line(f"if {s.brk}:", o), T.Line("    break", o)]
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
            # (stacks.py: what a while loop's own trips push stays on lists: no room, no trip index)
            if not tb:
                return pre + [T.Nest(f"while {test}:", o, body)]
            return pre + [T.Nest("while True:", o, tb +
                                 [T.Line(f"if not {test}:", o), T.Line("    break", o)] + body)]
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
        check = T.caught_check(s, c)
        for k, (t, n, blk) in enumerate(s.handlers):
            head = "except" + (f" {T.operand_text(t, c)}" if t is not None else "") + \
                (f" as {n}" if n else "") + ":"
            hb = check + ([T.Line(f"{which} = {k}", o)] if which else []) + self.fwd_block(blk)
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
            helper = "_rt.call"
            if isinstance(fn, ir.Method):
                # (the object and the name: the callee may be a value stored on the object,
                # whose adjoint is not the object's)
                helper = "_rt.call_method"
                callee = f"{T.operand_text(call.args[0], c)}, {fn.name!r}"
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
            line = [T.Line(f"{target}, {rec} = {helper}({', '.join(parts)})", o)]
            if arg:
                site = self.consts.name_for(o)
                line.append(T.Line(f"_rt.no_update({rec}, {arg!r}, {site})", o))
            if not call.info.get("operator"):
                receiver = isinstance(fn, ir.Method) and bool(call.info.get("mutates")) and \
                    target in self.varied
                line += T.identity_check(target, call, o, self.changed, self.consts,
                                         receiver=receiver)
            return line
        line = T.call_as_is(target, call, o, c, self.fresh, self.real)
        if cls == "opaque" and call.info.get("varied_args"):
            site = self.consts.name_for(_OpaqueSite(call, o))
            line.append(T.Line(f"_rt.check_opaque({target}, {site})", o))
        if call.info.get("base_cls", cls) in ("derived", "dynamic", "opaque") and \
                not isinstance(call.fn, ir.Attr):
            line += T.identity_check(target, call, o, self.changed, self.consts)
        return line
