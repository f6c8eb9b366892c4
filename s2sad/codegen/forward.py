"""Forward-mode emitter: an analysed IR function becomes ``f__jvp(params..., tangents...)``.

``f__jvp`` runs the user's computation and, next to every statement whose result carries a
derivative, the statement's tangent: ``_d_v`` is the tangent of ``v``.  It returns
``(value, tangent of the value)``.  Only the active parameters (``wrt``) take a tangent.

How tangents exist.  Every *active* variable (varied by a ``wrt`` parameter and reaching the
output) has a tangent wherever it has a value: a statement that binds an active variable from
values that carry no tangent gives it a zero tangent (``0.0`` for Python scalars, a zero array or
container from :func:`zeros_like` otherwise), so control flow needs no joins.  Templates come from
the rule table (``jvp=``), linear in ``t``; the output tangent is the sum over the active
parameters.  A rule without a tangent template falls back to :func:`jvp_by_vjp`.

Aliasing.  Tangents mirror the aliasing of the values: a view's tangent is a view of the tangent,
a copy ``y = x`` shares ``x``'s tangent, so an in-place write ``y[i] = v`` writes ``_d_y[i] = _d_v``
into the right buffer.  Where a template returns an input tangent unchanged for a value that is
not a view (``y = x + 0.0``) and ``y`` is later written in place, the tangent is copied first.

The second half of this module holds the helpers generated forward code calls as ``_fw.*``:
zeros, broadcasting, dynamic call sites (:func:`jvp_call`, :func:`jvp_method`, :func:`jvp_attr`),
the lazy derived-callee stub (:class:`ForwardStub`) and the tangent-from-adjoint fallback.
"""
import ast as _ast
import functools
import inspect
import operator
import sys
import types

import numpy as np

from ..runtime import _is_array
from .. import ir, runtime
from ..errors import ArgumentWriteError, OpaqueCalleeError, RuleError, UnsupportedSyntaxError
from ..frontend.analysis import (IN_PLACE_METHODS, activity, changed_in_place, in_place_call,
                                 written_arrays)
from . import text as T
from .reverse import _OpaqueSite, _is_scalar_operand

_DISPLAYS = (runtime.build_list, runtime.build_tuple, runtime.build_dict)
_LIST_MUTATORS = {"append", "extend", "insert", "pop", "remove", "reverse", "clear"}
_ADDERS = {"append", "extend", "insert"}


def d(v):
    """The tangent's name: ``_d_x`` for ``x``, ``_d_4`` for ``_4``."""
    return f"_d{v}" if v.startswith("_") else f"_d_{v}"


# -- activity -------------------------------------------------------------------------------------
# forward mode uses the reverse emitter's analysis (frontend/analysis.py: activity, in_place_call)
_IN_PLACE = IN_PLACE_METHODS
_in_place_call = in_place_call


def forward_activity(fn, wrt):
    """Active variables for forward mode: :func:`~s2sad.frontend.analysis.activity`."""
    return activity(fn, wrt)


# -- the emitter ----------------------------------------------------------------------------------
class ForwardEmitter:
    def __init__(self, fn, kinds, active, wrt, namespace, derived_namer):
        self.fn = fn
        self.kinds = kinds
        self.active = active
        self.wrt = list(wrt)
        self.namespace = namespace
        self.consts = T.Consts(namespace)
        self.derived_namer = derived_namer        # (pyfunc, mask) -> jvp name
        self.written = written_arrays(fn)
        self.changed = changed_in_place(fn)       # variables changed in place (identity checks)
        self.n = 0
        self.names = _all_names(fn)
        self.tnames = {}
        self.real = {v for v, k in kinds.items() if k == "f"}
        self.real |= {self.d(v) for v in self.real}
        self.closure_keys = _closure_keys(fn)
        self.cell_reads = set()                   # variables whose tangents closures' tangents read
        self.origin = fn.origin

    def d(self, v):
        """The tangent's name (``_d_x``), made unique where the function already uses it
        (differentiating generated forward code)."""
        name = self.tnames.get(v)
        if name is None:
            name, k = d(v), 1
            while name in self.names or name in self.tnames.values():
                k += 1
                name = f"_d{k}{v}" if v.startswith("_") else f"_d{k}_{v}"
            self.tnames[v] = name
        return name

    def fresh(self, base):
        self.n += 1
        return f"_{base}{self.n}"

    # -- operands ---------------------------------------------------------------------------
    def is_active(self, op):
        return isinstance(op, str) and op in self.active

    def text(self, op):
        return T.operand_text(op, self.consts)

    def zero_text(self, op):
        """A materialised zero tangent for the value of operand ``op``."""
        if isinstance(op, ir.Const):
            v = op.value
            if isinstance(v, (bool, int, float)):
                return "0.0"
            if v is None or isinstance(v, str):
                return "None"
            if isinstance(v, complex):
                return "0j"
            return f"_fw.zeros_like({self.text(op)})"
        if isinstance(op, str) and self.kinds.get(op) in ("f", "i"):
            return "0.0"
        return f"_fw.zeros_like({self.text(op)})"

    def tangent_text(self, op, materialize=False):
        """``_d_x`` for an active operand; for an inactive one None (or a zero if asked)."""
        if isinstance(op, tuple):
            if not any(self.is_active(x) for x in op) and not materialize:
                return None
            parts = [self.tangent_text(x, True) for x in op]
            return f"({parts[0]},)" if len(parts) == 1 else "(" + ", ".join(parts) + ")"
        if isinstance(op, dict):
            if not any(self.is_active(x) for x in op.values()) and not materialize:
                return None
            return "{" + ", ".join(f"{k!r}: {self.tangent_text(v, True)}" for k, v in op.items()) + "}"
        if self.is_active(op):
            return self.d(op)
        return self.zero_text(op) if materialize else None

    # -- templates --------------------------------------------------------------------------
    def jvp_tree(self, rule, p, bound, target, ans=None):
        tree = rule.tangent_template(p)
        names = {n.id for n in _ast.walk(tree) if isinstance(n, _ast.Name)}
        mapping = {}
        for q in rule.signature.parameters:
            if q in names and q != "t":
                mapping[q] = T.parse_expr(self.text(bound.get(q)))
        for nm in names:
            if nm.startswith("n_") and isinstance(bound.get(nm[2:]), tuple):
                mapping[nm] = T.parse_expr(str(len(bound[nm[2:]])))
        mapping["t"] = T.parse_expr(self.tangent_text(bound.get(p), True))
        mapping["ans"] = T.parse_expr(ans or target)
        tree = T.substitute(tree, mapping)
        real = self.real | ({target} if self.kinds.get(target) == "f" else set())
        return T.simplify(tree, real_names=real)

    def needs_broadcast(self, rule, bound):
        """Elementwise broadcasting op with two or more array operands: a single tangent term
        may be smaller than the output."""
        fn = rule.fn
        elementwise = rule.broadcast or isinstance(fn, np.ufunc) or fn is np.where
        if not elementwise:
            return False
        ops = [bound.get(p) for p in rule.differentiable]
        arrays = [o for o in ops if isinstance(o, str) and not _is_scalar_operand(o, self.kinds)
                  or isinstance(o, ir.Const) and hasattr(o.value, "shape")]
        return len(arrays) >= 2

    def primitive_tangent(self, call, target, ans=None):
        """Source text of the tangent of a primitive call site's result (``ans``: the name that
        holds the result, when not yet ``target``)."""
        rule, bound = call.rule, call.info["bound"]
        terms = []
        fallback = []
        for p in rule.differentiable:
            v = bound.get(p)
            act = any(self.is_active(x) for x in v) if isinstance(v, tuple) else \
                any(self.is_active(x) for x in v.values()) if isinstance(v, dict) else self.is_active(v)
            if not act:
                continue
            if rule.fn is operator.getitem and isinstance(bound.get("idx"), ir.Index):
                sub = T.index_subscript_text(bound["idx"], self.consts)
                terms.append(T.parse_expr(f"{self.d(v)}[{sub}]"))
            elif p in rule.jvp:
                terms.append(self.jvp_tree(rule, p, bound, target, ans))
            else:
                fallback.append(p)
        for p in fallback:
            rname = self.consts.name_for(rule)
            args = "(" + "".join(f"{self.text(bound.get(q))}, " for q in rule.signature.parameters) + ")"
            terms.append(T.parse_expr(f"_fw.jvp_by_vjp({rname}, {p!r}, "
                                      f"{self.tangent_text(bound.get(p), True)}, {ans or target}, "
                                      f"{args})"))
        tree = terms[0]
        for t in terms[1:]:
            if rule.kind in ("container", "any"):     # the output may be a list: add elementwise
                tree = _ast.Call(T.parse_expr("_rt.add"), [tree, t], [])
            else:
                tree = _ast.BinOp(tree, _ast.Add(), t)
        tree = _ast.fix_missing_locations(_Fold().visit(tree))
        text = T.unparse(tree)
        if self.needs_broadcast(rule, bound) and not (len(terms) > 1 and not fallback):
            text = f"_fw.bcast({text}, {ans or target})"
        elif target in self.written and not rule.view and isinstance(tree, _ast.Name):
            text = f"_rt.snap({text})"
        return text

    # -- statements -------------------------------------------------------------------------
    def block(self, stmts):
        out = []
        for s in stmts:
            out.extend(self.stmt(s))
        return out

    def stmt(self, s):
        o = self.origin = s.origin
        c = self.consts
        if isinstance(s, ir.Assign):
            return self.assign(s) + self.alias_check(s)
        if isinstance(s, ir.SetItem):
            if s.attr:
                lines = [T.Line(f"{self.text(s.obj)}.{s.attr} = {self.text(s.value)}", o)]
                if self.is_active(s.obj):     # an object's tangent: {attribute: tangent}
                    lines.append(T.Line(f"{self.d(s.obj)} = _fw.set_attr({self.d(s.obj)}, "
                                        f"{s.attr!r}, {self.tangent_text(s.value, True)})", o))
                return lines
            lines = [T.Line(f"{self.text(s.obj)}[{T.index_subscript_text(s.index, c)}] = "
                            f"{self.text(s.value)}", o)]
            if self.is_active(s.obj):
                tv = self.tangent_text(s.value, True)
                if self.kinds.get(s.obj) != "c":
                    tv = f"_fw.into({tv}, {self.text(s.obj)})"    # an integer array keeps none
                lines.append(T.Line(f"{self.d(s.obj)}[{T.index_subscript_text(s.index, c)}] = {tv}", o))
            return lines
        if isinstance(s, ir.ExprStmt):
            return self.expr_stmt(s)
        if isinstance(s, ir.DelItem):
            sub = T.index_subscript_text(s.index, c)
            lines = [T.Line(f"del {self.text(s.obj)}[{sub}]", o)]
            if self.is_active(s.obj):
                lines.append(T.Line(f"del {self.d(s.obj)}[{sub}]", o))
            return lines
        if isinstance(s, ir.Mutate):
            return self.mutate(s)
        if isinstance(s, ir.With):
            items = ", ".join(self.text(x) + (f" as {v}" if v else "") for x, v in s.items)
            return [T.Nest(f"with {items}:", o, self.block(s.body))]
        if isinstance(s, ir.Try):
            items = [T.Nest("try:", o, self.block(s.body))]
            for typ, name, blk in s.handlers:
                head = "except" + (f" {self.text(typ)}" if typ is not None else "") + \
                    (f" as {name}" if name else "") + ":"
                items.append(T.Nest(head, o, self.block(blk)))
            if s.orelse:
                items.append(T.Nest("else:", o, self.block(s.orelse)))
            if s.finalbody:
                items.append(T.Nest("finally:", o, self.block(s.finalbody)))
            return items
        if isinstance(s, ir.Raise):
            return [T.Line("raise" + (f" {self.text(s.exc)}" if s.exc is not None else ""), o)]
        if isinstance(s, ir.If):
            body, orelse = self.block(s.body), self.block(s.orelse)
            test = self.text(s.test)
            if not body and orelse:
                return [T.Nest(f"if not {test}:", o, orelse)]
            return [T.Nest(f"if {test}:", o, body, orelse or None)]
        if isinstance(s, ir.For):
            body = self.block(s.body)
            rng = (f"range({self.text(s.start)}, {self.text(s.stop)}, {self.text(s.step)})")
            if isinstance(s.start, ir.Const) and s.start.value == 0 and \
                    isinstance(s.step, ir.Const) and s.step.value == 1:
                rng = f"range({self.text(s.stop)})"
            if s.brk:
                body += [T.Line(f"if {s.brk}:", o), T.Line("    break", o)]
            return [T.Nest(f"for {s.target} in {rng}:", o, body)]
        if isinstance(s, ir.While):
            test = self.text(s.test)
            tb = self.block(s.test_body)
            body = self.block(s.body)
            if s.brk:
                body += [T.Line(f"if {s.brk}:", o), T.Line("    break", o)]
            if not tb:
                return [T.Nest(f"while {test}:", o, body)]
            return [T.Nest("while True:", o,
                           tb + [T.Line(f"if not {test}:", o), T.Line("    break", o)] + body)]
        if isinstance(s, ir.Return):
            v = s.value
            return [T.Line(f"return {self.text(v)}, {self.tangent_text(v, True)}", o)]
        raise AssertionError(f"unexpected statement {s!r}")

    def alias_check(self, s):
        """As in the reverse emitter: a call into Python code whose result is changed in place
        later must not have returned one of its arguments or its own object."""
        call = s.value
        if not isinstance(call, ir.Call) or not call.info or call.info.get("operator") or \
                call.info.get("base_cls", call.cls) not in ("derived", "dynamic", "opaque") or \
                isinstance(call.fn, ir.Attr):
            return []
        return T.identity_check(s.target, call, s.origin, self.changed, self.consts,
                                receiver=bool(call.info.get("mutates")))

    def assign(self, s):
        t, v, o = s.target, s.value, s.origin
        c = self.consts
        if not isinstance(v, ir.Call):
            lines = [T.Line(f"{t} = {self.text(v)}", o)]
            if t in self.active:
                lines.append(T.Line(f"{self.d(t)} = {self.tangent_text(v, True)}", o))
            return lines
        call = v
        if isinstance(call.fn, ir.Static) and call.fn.obj is runtime.make_closure:
            src = call.extra["source"]
            if call.extra.get("lambda"):
                lines = [T.Line(f"{t} = {src[0][0]}", o)]
            else:
                lines = [T.Line(text, org, raw=k > 0) for k, (text, org) in enumerate(src)]
            if t in self.active:       # a closure's tangent: {cell name: tangent of its data}
                parts = [f"{k!r}: {self.d(a)}" for k, a in zip(call.args[0].value, call.args[1:])
                         if self.is_active(a) and a != t]
                self.cell_reads.update(a for a in call.args[1:] if self.is_active(a) and a != t)
                lines.append(T.Line(f"{self.d(t)} = {{{', '.join(parts)}}}", o))
            return lines
        if isinstance(call.fn, ir.Static) and call.fn.obj is runtime.apply:
            f, a, kw = call.args
            if t in self.active and call.cls == "dynamic":
                ft = f", {self.d(f)}" if self.is_active(f) else ""
                return [T.Line(f"{t}, {self.d(t)} = _fw.jvp_apply({self.text(f)}, {self.text(a)}, "
                               f"{self.tangent_text(a) or 'None'}, {self.text(kw)}, "
                               f"{self.tangent_text(kw) or 'None'}{ft})", o)]
            star = f"*{self.text(a)}" + ("" if isinstance(kw, ir.Const) and kw.value is None
                                         else f", **{self.text(kw)}")
            lines = [T.Line(f"{t} = {self.text(f)}({star})", o)]
            if t in self.active:
                lines.append(T.Line(f"{self.d(t)} = {self.zero_text(t)}", o))
            return lines
        mirror = self.mirror_site(call)
        if mirror is not None:
            return self.mirrored(call, mirror, t, o)
        if t not in self.active or call.cls not in ("primitive", "derived", "dynamic"):
            lines = [T.Line(f"{t} = {T.call_text(call, c)}", o)]
            if call.cls == "opaque" and call.info.get("varied_args"):
                site = c.name_for(_OpaqueSite(call, o))
                lines.append(T.Line(f"_rt.check_opaque({t}, {site})", o))
            if t in self.active:
                lines.append(T.Line(f"{self.d(t)} = {self.zero_of_call(call, t)}", o))
            return lines
        if call.cls == "derived" and not call.extra.get("captured"):
            args = call.info["callargs"]
            mask = tuple(self.is_active(a) for a in args)
            name = self.derived_namer(call.info["callee"], mask)
            parts = [self.text(a) for a in args] + [self.d(a) for a, m in zip(args, mask) if m]
            return [T.Line(f"{t}, {self.d(t)} = {name}({', '.join(parts)})", o)]
        if call.cls in ("dynamic", "derived"):
            recv = self.updated_receiver(call)
            if recv is not None:
                return [T.Line(f"{t}, {self.d(t)}, {self.d(recv)} = {self.dynamic_text(call, True)}", o)]
            return [T.Line(f"{t}, {self.d(t)} = {self.dynamic_text(call)}", o)]
        # primitive
        if isinstance(call.fn, ir.Static) and call.fn.obj in _DISPLAYS:
            return [T.Line(f"{t} = {T.call_text(call, c)}", o),
                    T.Line(f"{self.d(t)} = {self.zero_of_call(call, t)}", o)]
        if isinstance(call.fn, ir.Static) and call.fn.obj is functools.partial:
            # a partial's tangent: (tangents of its arguments, tangents of its keywords)
            bound = call.info["bound"]
            ta = self.tangent_text(tuple(bound.get("args", ())), True)
            tk = self.tangent_text(dict(bound.get("keywords", {})), True)
            return [T.Line(f"{t} = {T.call_text(call, c)}", o), T.Line(f"{self.d(t)} = ({ta}, {tk})", o)]
        tan = self.primitive_tangent(call, t)
        primal = T.call_text(call, c)
        if t in call.reads():
            if _reads_name(tan, t):          # the tangent reads the old value: keep it apart
                tmp = self.fresh("v")        # (and the result, ``ans``, under another name)
                tan = self.primitive_tangent(call, t, ans=tmp)
                return [T.Line(f"{tmp} = {primal}", o), T.Line(f"{self.d(t)} = {tan}", o),
                        T.Line(f"{t} = {tmp}", o)]
            return [T.Line(f"{self.d(t)} = {tan}", o), T.Line(f"{t} = {primal}", o)]
        return [T.Line(f"{t} = {primal}", o), T.Line(f"{self.d(t)} = {tan}", o)]

    def zero_of_call(self, call, t):
        """The tangent of a value computed without active inputs (a display's is a display of
        its items' tangents, so that the container can take active items later)."""
        fn = call.fn
        if isinstance(fn, ir.Static) and fn.obj in _DISPLAYS:
            if fn.obj is runtime.build_dict:
                parts = [self.tangent_text(a, True) for a in call.args[1:]]
                return f"_rt.build_dict({self.text(call.args[0])}, {', '.join(parts)})"
            parts = [self.tangent_text(a, True) for a in call.args]
            if fn.obj is runtime.build_list:
                return "[" + ", ".join(parts) + "]"
            return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
        return self.zero_text(t)

    def updated_receiver(self, call):
        """The object a method call may update, when it carries a tangent here."""
        recv = call.info.get("mutates") if call.info else None
        return recv if recv is not None and self.is_active(recv) else None

    def dynamic_text(self, call, updates=False):
        fn = call.fn
        c = self.consts
        args = call.args[1:] if isinstance(fn, (ir.Method, ir.Attr)) else call.args
        argt = _tuple_text([self.text(a) for a in args])
        tant = _tuple_text([self.tangent_text(a) or "None" for a in args])
        kw = ""
        if call.kwargs:
            kw = ", {" + ", ".join(f"{k!r}: {self.text(v)}" for k, v in call.kwargs) + "}, {" + \
                 ", ".join(f"{k!r}: {self.tangent_text(v) or 'None'}" for k, v in call.kwargs) + "}"
        if isinstance(fn, ir.Attr):
            r = call.args[0]
            return f"_fw.jvp_attr({self.text(r)}, {self.tangent_text(r) or 'None'}, {fn.name!r})"
        if isinstance(fn, ir.Method):
            r = call.args[0]
            helper = "jvp_method_update" if updates else "jvp_method"
            return (f"_fw.{helper}({self.text(r)}, {self.tangent_text(r) or 'None'}, {fn.name!r}, "
                    f"{argt}, {tant}{kw})")
        callee = T.static_callee_text(fn, c) if isinstance(fn, ir.Static) else T.operand_text(fn.var, c)
        ftan = self.closure_tangent(call)
        if ftan is not None:                                             # a closure over active data
            if not kw:
                kw = ", None, None"
            kw += f", {ftan}"
        return f"_fw.jvp_call({callee}, {argt}, {tant}{kw})"

    def closure_tangent(self, call):
        """Text of the tangent of a called closure: its captured variables' tangents *now* (a
        closure reads them when it is called), defaults' tangents from when it was made."""
        fn = call.fn
        captured = call.extra.get("captured")
        var = fn.var if isinstance(fn, ir.Dynamic) else None
        made = self.d(var) if var is not None and self.is_active(var) else None
        if not captured:
            return made
        if isinstance(fn, ir.Static):               # a closure calling itself: its data cells
            keys = list(captured)
        else:
            keys = self.closure_keys.get(var)
            if keys is not None and not any(k.endswith("=") for k in keys):
                made = None                     # no defaults: everything is read now
            keys = [k for k in keys if not k.endswith("=")] if keys is not None else None
        if keys is None or len(keys) != len(captured):
            if any(self.is_active(v) for v in captured):
                raise UnsupportedSyntaxError(
                    f"forward mode cannot tell which variables the closure `{var}` reads when it "
                    f"is called here (it is defined more than once, with different captures)",
                    origin=self.origin, fix="give each nested function its own name")
            return made
        now = ", ".join(f"{k!r}: {self.d(v)}" for k, v in zip(keys, captured)
                        if self.is_active(v) and v != var)
        self.cell_reads.update(v for v in captured if self.is_active(v) and v != var)
        if made is None:
            return f"{{{now}}}" if now else None
        return f"{{**{made}, {now}}}" if now else made

    def mirror_site(self, call):
        """A list method that changes an active list: its tangent list changes the same way."""
        fn = call.fn
        if isinstance(fn, ir.Method) and fn.name in _LIST_MUTATORS and self.is_active(call.args[0]) \
                and not call.kwargs and self.kinds.get(call.args[0]) != "a":
            return fn.name
        return None

    def mirrored(self, call, name, target, o):
        recv = call.args[0]
        c = self.consts
        args = call.args[1:]
        if self.kinds.get(recv) != "c" or \
                name not in ("append", "insert", "reverse", "clear") or call.kwargs:
            # maybe not a container, or the tangent's change depends on the values (remove by
            # value, extend by an iterable): decided at run time, next to the primal change
            text = self.dynamic_text(call)
            if target is None:
                return [T.Line(text, o)]
            if target in self.active:
                return [T.Line(f"{target}, {self.d(target)} = {text}", o)]
            return [T.Line(f"{target}, _ = {text}", o)]
        primal = T.call_text(call, c)
        if name in _ADDERS:
            targs = [self.text(a) for a in args[:-1]] + [self.tangent_text(args[-1], True)] \
                if args else []
        else:
            targs = [self.text(a) for a in args]
        tline = f"{self.d(recv)}.{name}({', '.join(targs)})"
        if target is None:
            return [T.Line(primal, o), T.Line(tline, o)]
        if target in self.active:
            return [T.Line(f"{target} = {primal}", o), T.Line(f"{self.d(target)} = {tline}", o)]
        return [T.Line(f"{target} = {primal}", o), T.Line(tline, o)]

    def mutate(self, s):
        """``[t =] obj.append(v)`` and friends: the tangent container changes the same way."""
        t, obj, call, o = s.target, s.obj, s.call, s.origin
        primal = T.call_text(call, self.consts)
        lines = [T.Line(f"{t} = {primal}" if t else primal, o)]
        if not self.is_active(obj):
            if t and t in self.active:
                lines.append(T.Line(f"{self.d(t)} = {self.zero_text(t)}", o))
            return lines
        name = call.fn.name
        args = call.args[1:]
        if name in ("append", "insert") and args:
            targs = [self.text(a) for a in args[:-1]] + [self.tangent_text(args[-1], True)]
        elif name == "pop" and len(args) <= 1:
            targs = [self.text(a) for a in args]
        else:
            # extend by any iterable, update from a dict or pairs, pop with a default: the
            # tangent container changes at run time, next to the primal one
            text = self.dynamic_text(call)
            if t and t in self.active:
                return [T.Line(f"{t}, {self.d(t)} = {text}", o)]
            return [T.Line(f"{t}, _ = {text}" if t else text, o)]
        tline = f"{self.d(obj)}.{name}({', '.join(targs)})"
        if t and t in self.active:
            tline = f"{self.d(t)} = {tline}"
        lines.append(T.Line(tline, o))
        return lines

    def expr_stmt(self, s):
        call, o = s.call, s.origin
        mirror = self.mirror_site(call)
        if mirror is not None:
            return self.mirrored(call, mirror, None, o)
        if call.cls == "dynamic" and any(self.is_active(v) for v in call.reads()):
            recv = self.updated_receiver(call)
            if recv is not None:
                return [T.Line(f"_, _, {self.d(recv)} = {self.dynamic_text(call, True)}", o)]
            return [T.Line(self.dynamic_text(call), o)]
        if call.cls == "derived":
            args = call.info["callargs"]
            mask = tuple(self.is_active(a) for a in args)
            if any(mask):
                name = self.derived_namer(call.info["callee"], mask)
                parts = [self.text(a) for a in args] + [self.d(a) for a, m in zip(args, mask) if m]
                return [T.Line(f"{name}({', '.join(parts)})", o)]
        return [T.Line(T.call_text(call, self.consts), o)]

    # -- driver -----------------------------------------------------------------------------
    def emit(self, name):
        fn = self.fn
        params = list(fn.params) + [self.d(p) for p in self.wrt]
        body = self.block(fn.body)
        # a parameter that is not differentiated but gets a tangent later (an object a method
        # updates with values that carry one) starts with none
        late = [p for p in fn.params if p not in self.wrt and self.is_active(p)]
        # a closure's tangent reads its captured variables' tangents when it is made or called,
        # where the variable may be bound only later or on another path (Python reads it when the
        # closure runs, or never): those tangents start as None (no tangent)
        late += sorted(v for v in self.cell_reads if v not in fn.params)
        body = [T.Line(f"{self.d(p)} = None", fn.origin) for p in late] + body
        triples = [(0, f"def {name}({', '.join(params)}):", None)]
        T.render(body, lambda h: [], triples, 1)
        return triples


def _closure_keys(fn):
    """Closure variable -> the names it captured (None where it is made with different names)."""
    out = {}
    for s in ir.walk(fn.body):
        if isinstance(s, ir.Assign) and isinstance(s.value, ir.Call) and \
                isinstance(s.value.fn, ir.Static) and s.value.fn.obj is runtime.make_closure:
            keys = tuple(s.value.args[0].value)
            if s.target in out and out[s.target] != keys:
                out[s.target] = None
            else:
                out[s.target] = keys
    return out


def _all_names(fn):
    names = set(fn.params)
    for s in ir.walk(fn.body):
        names.update(s.reads())
        for attr in ("target", "obj"):
            v = getattr(s, attr, None)
            if isinstance(v, str):
                names.add(v)
    return names


class _Fold(_ast.NodeTransformer):
    """Readability: fold constant arithmetic (``2 - 1`` -> ``1``), ``a ** 1`` -> ``a``,
    ``a * 1`` -> ``a``, ``a + -b`` -> ``a - b``."""

    _OPS = {_ast.Add: operator.add, _ast.Sub: operator.sub, _ast.Mult: operator.mul}

    def visit_BinOp(self, node):
        self.generic_visit(node)
        lt, rt = node.left, node.right
        op = type(node.op)
        if isinstance(lt, _ast.Constant) and isinstance(rt, _ast.Constant) and op in self._OPS \
                and type(lt.value) in (int, float) and type(rt.value) in (int, float):
            return _ast.copy_location(_ast.Constant(self._OPS[op](lt.value, rt.value)), node)
        if op in (_ast.Pow, _ast.Mult) and isinstance(rt, _ast.Constant) and type(rt.value) is int \
                and rt.value == 1:
            return lt
        if op is _ast.Mult and isinstance(lt, _ast.Constant) and type(lt.value) is int and lt.value == 1:
            return rt
        if op is _ast.Add and isinstance(rt, _ast.UnaryOp) and isinstance(rt.op, _ast.USub):
            return _ast.copy_location(_ast.BinOp(lt, _ast.Sub(), rt.operand), node)
        return node


def _tuple_text(parts):
    if len(parts) == 1:
        return f"({parts[0]},)"
    return "(" + ", ".join(parts) + ")"


def _reads_name(text, name):
    return any(isinstance(n, _ast.Name) and n.id == name for n in _ast.walk(T.parse_expr(text)))


# =================================================================================================
# Helpers generated forward code calls (``_fw.*``)
# =================================================================================================
def zeros_like(x):
    """A zero tangent for the value ``x``: ``0.0`` for Python numbers, a floating zero array for
    arrays (integer arrays too), containers of zeros for containers, None for the rest."""
    t = type(x)
    if t is float or t is int or t is bool:
        return 0.0
    if t is complex:
        return 0j
    if t is tuple or t is list:
        return t(zeros_like(v) for v in x)
    if t is dict:
        return {k: zeros_like(v) for k, v in x.items()}
    if _is_array(x):
        dt = x.dtype
        xp = runtime.array_module(x)
        return xp.zeros(x.shape, dtype=dt if dt.kind in "fc" else np.float64)
    if isinstance(x, tuple) and hasattr(x, "_fields"):      # SVDResult, EighResult...
        return t(*(zeros_like(v) for v in x))
    return None


def materialize(t, x):
    """A tangent with the structure of ``x`` (symbolic zeros/None replaced by zeros)."""
    if t is None or (type(t) is float and t == 0.0 and not isinstance(x, (float, int))):
        return zeros_like(x)
    if type(t) in (tuple, list) and type(x) in (tuple, list):
        return type(x)(materialize(a, b) for a, b in zip(t, x))
    if type(t) is dict and type(x) is dict:
        return {k: materialize(t.get(k), v) for k, v in x.items()}
    return t


def into(t, dest):
    """The tangent written into ``dest[...]``: none (0) when ``dest`` is an integer or bool array,
    which truncates what is written into it."""
    dt = getattr(dest, "dtype", None)
    return 0 if dt is not None and dt.kind not in "fcO" else t


def bcast(t, ans):
    """The tangent ``t`` broadcast to the shape of ``ans`` (a broadcasting op's single term)."""
    if type(ans) in (list, tuple) and type(t) in (list, tuple) and len(t) != len(ans):
        runtime._refuse_sequence_arithmetic()
    shape = getattr(ans, "shape", None)
    if shape is None or getattr(t, "shape", None) == shape:
        return t
    xp = runtime.array_module(ans)
    return xp.broadcast_to(t, shape).copy() if hasattr(t, "shape") or shape else t


# -- rules at run time ------------------------------------------------------------------------------
_TANGENT_FNS = {}


def tangent_function(rule, param):
    """A rule's tangent template compiled into ``f(t, ans, **params)``."""
    key = (id(rule), param)
    fn = _TANGENT_FNS.get(key)
    if fn is None:
        from ..rules.registry import NAMESPACE
        params = ", ".join(["t", "ans"] + [p for p in rule.signature.parameters if p not in ("t", "ans")])
        src = f"def _tangent({params}):\n    return {rule.jvp[param].strip()}\n"
        glb = dict(NAMESPACE)
        glb["_rt"] = runtime
        glb["_fw"] = sys.modules[__name__]
        exec(compile(src, f"<tangent {rule.name}:{param}>", "exec"), glb)
        fn = _TANGENT_FNS[key] = (glb["_tangent"], rule)
    return fn[0]


def _leaves(x):
    """(getter-path, array) pairs for the floating leaves of a value (arrays, floats, tuples)."""
    if isinstance(x, (tuple, list)):
        out = []
        for i, v in enumerate(x):
            out += [((i,) + p, a) for p, a in _leaves(v)]
        return out
    if isinstance(x, (float, complex)) or (hasattr(x, "dtype") and getattr(x.dtype, "kind", "") in "fc"):
        return [((), x)]
    return []


def _with_leaf(x, path, value):
    if not path:
        return value
    items = list(x)
    items[path[0]] = _with_leaf(items[path[0]], path[1:], value)
    return type(x)(*items) if hasattr(x, "_fields") else type(x)(items)


def _inner(a, b):
    """Real inner product of two tangents with the same structure (None/0.0 are zeros)."""
    if a is None or b is None or (type(a) is float and a == 0.0) or (type(b) is float and b == 0.0):
        return 0.0
    if isinstance(a, (tuple, list)):
        return sum(_inner(x, y) for x, y in zip(a, b))
    return np.sum(np.conj(a) * b)


def _fallback_output(x):
    """An output :func:`jvp_by_vjp` can build the tangent of: numbers, arrays, tuples/lists of them."""
    if isinstance(x, (tuple, list)):
        return all(_fallback_output(v) for v in x)
    return isinstance(x, (float, int, complex, bool)) or x is None or \
        (_is_array(x))


def jvp_by_vjp(rule, which, t, ans, args):
    """Tangent of a primitive that has only an adjoint rule: ``(J t)_k = <J^T e_k, t>`` for every
    element ``k`` of the output (one adjoint evaluation per output element)."""
    bound = dict(zip(rule.signature.parameters, args))
    if rule.joint:
        names = list(rule.joint[0])
        adj = rule.adjoint_function("*")

        def pull(g):
            return adj(g, ans, **bound)[names.index(which)]
    else:
        adj = rule.adjoint_function(which)

        def pull(g):
            return adj(g, ans, **bound)
    if not _fallback_output(ans):
        raise RuleError(f"forward mode: the rule for {rule.name} has no tangent template (jvp=), and "
                        f"its output (a {type(ans).__name__}) is not an array, a number or a "
                        f"tuple/list of them, so the tangent cannot be recovered from the adjoint",
                        fix=f"add jvp={{{which!r}: ...}} to the rule for {rule.name}")
    zero = zeros_like(ans)
    out = zeros_like(ans)

    def component(path, basis_of):
        """The tangent's component along one output direction: Re<pull(e), t> for e = 1, and for
        a complex output also along e = i (the adjoint convention makes these the real and
        imaginary parts)."""
        re = np.real(_inner(pull(_with_leaf(zero, path, basis_of(1))), t))
        if not complex_out:
            return re
        return re + 1j * np.real(_inner(pull(_with_leaf(zero, path, basis_of(1j))), t))
    for path, leaf in _leaves(ans):
        complex_out = isinstance(leaf, complex) or np.iscomplexobj(leaf)
        if isinstance(leaf, (float, complex)) or np.ndim(leaf) == 0:
            scalar = isinstance(leaf, (float, complex))
            val = component(path, (lambda u: type(leaf)(u) if complex_out else type(leaf)(1))
                            if scalar else (lambda u: np.ones_like(leaf) * u))
            out = _with_leaf(out, path, type(leaf)(val) if scalar
                             else np.asarray(val, dtype=leaf.dtype))
            continue
        res = np.zeros(leaf.shape, dtype=leaf.dtype)
        for k in range(leaf.size):
            def basis_of(u, k=k):
                b = np.zeros(leaf.shape, dtype=leaf.dtype)
                b.flat[k] = u
                return b
            res.flat[k] = component(path, basis_of)
        out = _with_leaf(out, path, res)
    return out


def _rule_tangent(rule, bound, ans, tangents):
    """Sum over active parameters of the rule's tangent templates; ``tangents``: param -> t."""
    out = None
    for p, t in tangents.items():
        if p in rule.jvp:
            term = tangent_function(rule, p)(t, ans, **bound)
        else:
            term = jvp_by_vjp(rule, p, t, ans, tuple(bound.values()))
        out = term if out is None else runtime.add(out, term)
    return zeros_like(ans) if out is None else out


def _active_tangent(t, v):
    if isinstance(t, dict) and _is_object(v):      # an object's attribute tangents
        return True
    return t is not None and runtime.differentiable(v)


def _is_object(x):
    """An instance of a user class (its tangent: a dict of attribute tangents)."""
    import types
    return hasattr(x, "__dict__") and not isinstance(
        x, (type, types.ModuleType, types.FunctionType, types.MethodType, functools.partial))


def set_attr(tobj, name, t):
    """``obj.name = v`` on an object that carries a tangent: record ``v``'s tangent."""
    if not isinstance(tobj, dict):
        tobj = {}
    tobj[name] = t
    return tobj


# -- derived callees --------------------------------------------------------------------------------
class ForwardStub:
    """``f__jvp`` for a user function called from generated forward code: the forward derivative
    is looked up (and built once, lazily) per value kinds of the arguments."""

    __slots__ = ("callee", "mask", "nparams", "_last")

    def __init__(self, callee, mask):
        self.callee, self.mask, self._last = callee, tuple(mask), None
        self.nparams = len(mask)

    def __call__(self, *args):
        primals = args[:self.nparams]
        kinds = tuple(runtime.kind_of(a) for a in primals)
        last = self._last
        if last is not None and last[0] == kinds:
            f = last[1]
        else:
            from ..cache import forward_derivative
            f = forward_derivative(self.callee, self.mask, kinds).jvp
            self._last = (kinds, f)
        return f(*args)

    def __repr__(self):
        return f"<forward derivative of {self.callee.__qualname__}>"


def _is_python(fn):
    return inspect.isfunction(fn) and not (fn.__module__ or "").startswith("s2sad.")


def _jvp_python(fn, args, targs, kwargs=None, tkwargs=None, top=False, ftan=None, init=False,
                mut=False):
    """Run the forward derivative of the Python function ``fn`` on these arguments and tangents
    (None: no tangent).  ``top``: the tangents are the user's, copy those the function writes.
    ``ftan``: the tangent of a closure (``{captured name: tangent}``, ``"param="`` for the
    defaults it was made with).  ``init``: ``fn`` is an ``__init__`` run as a constructor on
    ``args[0]``, whose tangent (a dict of attribute tangents) it fills in."""
    from ..cache import forward_derivative
    kwargs = kwargs or {}
    tkwargs = tkwargs or {}
    call_args, call_kwargs = tuple(args), dict(kwargs)
    ct = ftan if isinstance(ftan, dict) else {}
    code = fn.__code__
    if kwargs or code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS) or fn.__kwdefaults__ \
            or (fn.__defaults__ and len(args) < code.co_argcount):
        sig = inspect.signature(fn, follow_wrapped=False)
        ba = sig.bind(*args, **kwargs)
        tb = sig.bind(*(tuple(targs) + (None,) * (len(args) - len(targs))),
                      **{k: tkwargs.get(k) for k in kwargs})
        given = set(ba.arguments)
        ba.apply_defaults()
        args = tuple(ba.arguments.values())
        # a default value's tangent: the one it had when the closure was made
        targs = tuple(tb.arguments.get(k) if k in given else ct.get(f"{k}=")
                      for k in ba.arguments)
    else:
        args = tuple(args)
        targs = tuple(targs) + (None,) * (len(args) - len(targs))
    cells = runtime._data_cells(fn)
    if cells:          # data held in closure cells: leading parameters (tangents from ftan)
        from ..frontend.source import data_cell_values
        args = tuple(data_cell_values(fn, cells)) + args
        targs = tuple(ct.get(n) for n in cells) + targs
    mask = [_active_tangent(t, a) for t, a in zip(targs, args)]
    if init or mut:
        mask[len(cells)] = True          # the object's tangent is filled in / updated
    mask = tuple(mask)
    if not any(mask):
        value = fn(*call_args, **call_kwargs)
        return value, zeros_like(value)
    kinds = tuple(runtime.kind_of(a) for a in args)
    dv = forward_derivative(fn, mask, kinds, init=init, mut=mut)
    written = set(getattr(dv, "written_params", ())) if top else set()
    tans = [materialize(runtime.snap(t) if p in written else t, a)
            for p, t, a, m in zip(dv.ir.params, targs, args, mask) if m]
    return dv.jvp(*args, *tans)


def is_stub_sweep(obj):
    """True for ``f__fwd``/``f__bwd`` of a derived callee inside generated reverse code."""
    return isinstance(getattr(obj, "__self__", None), runtime.DerivedStub) or \
        obj is runtime.DerivedStub.bwd


def _jvp_stub(fn, args, targs):
    """Forward mode through a derived callee's sweeps inside generated reverse code: the stub
    picks the callee's generated ``__fwd``/``__bwd``, which are differentiated as Python code."""
    if fn is runtime.DerivedStub.bwd:
        (bwd, inner), g = args
        ttape, tg = targs
        tinner = ttape[1] if isinstance(ttape, tuple) else None
        return _jvp_python(bwd, (inner, g), (tinner, tg))
    stub = fn.__self__
    from ..cache import reverse_derivative
    cells = runtime._data_cells(stub.callee)
    if cells:
        from ..frontend.source import data_cell_values
        args = tuple(data_cell_values(stub.callee, cells)) + tuple(args)
        targs = (None,) * len(cells) + tuple(targs)
    mask = (False,) * len(cells) + tuple(stub.mask)
    d = reverse_derivative(stub.callee, mask, tuple(runtime.kind_of(a) for a in args))
    (value, tape), (tv, ttape) = _jvp_python(d.fwd, tuple(args), tuple(targs))
    return (value, (d.bwd, tape)), (tv, (None, ttape))


def jvp_call(fn, args, targs, kwargs=None, tkwargs=None, ftan=None, _bound=False):
    """A call whose callee is only known at run time: returns (value, tangent).

    ``targs``/``tkwargs`` hold the arguments' tangents, None for arguments that carry none;
    ``ftan`` the callee's own tangent (a closure over data that carries one)."""
    kwargs = kwargs or {}
    tkwargs = tkwargs or {}
    runtime.refuse_vectorize(fn, args, kwargs)
    if not kwargs and type(fn) is types.BuiltinFunctionType and fn in runtime._DUNDERS:
        done = _jvp_operator(fn, args, targs)
        if done is not None:
            return done
    self_ = getattr(fn, "__self__", None)
    if isinstance(self_, runtime.DerivedStub) or fn is runtime.DerivedStub.bwd:
        return _jvp_stub(fn, args, targs)
    if getattr(fn, "__s2sad_jvp__", False) and not kwargs and len(args) == 3:
        jfn, full, (ncells, cellnames, _, mask) = runtime.jvp_function(*args)
        tf, tp, tt = (tuple(targs) + (None,) * 3)[:3]
        ct = tf if isinstance(tf, dict) else {}
        tp = tuple(tp) if isinstance(tp, (tuple, list)) else (None,) * len(args[1])
        tt = tuple(tt) if isinstance(tt, (tuple, list)) else (None,) * len(args[2])
        tfull = [ct.get(n) for n in cellnames] + list(tp) + \
            [t for t, m in zip(tt, mask[ncells:]) if m]
        return _jvp_python(jfn, full, tuple(tfull))
    parts_ = runtime.transform_parts(fn, args)
    if parts_ is not None:                   # s2sad.grad(f) / value_and_grad(f) inside
        done = [jvp_call(p, args, targs, kwargs, tkwargs, ftan=ftan) for p in parts_]
        if len(done) == 1:
            return done[0]
        return tuple(v for v, _ in done), tuple(t for _, t in done)
    if fn is runtime.init_into:              # super().__init__(...) inside a constructor
        cls, obj = args[0], args[1]
        base = super(cls, obj).__init__
        func = getattr(base, "__func__", None)
        tobj = targs[1] if len(targs) > 1 and isinstance(targs[1], dict) else {}
        if func is not None and _is_python(func):
            _, tobj = _jvp_python(func, (obj,) + tuple(args[2:]), (tobj,) + tuple(targs[2:]),
                                  kwargs, tkwargs, init=True)
            return obj, tobj
        base(*args[2:], **kwargs)
        return obj, tobj
    if isinstance(fn, type):
        return _jvp_construct(fn, args, targs, kwargs, tkwargs)
    if self_ is not None and not inspect.ismodule(self_) and hasattr(fn, "__name__") and not _bound:
        return jvp_method(self_, ftan if isinstance(ftan, dict) else None, fn.__name__, args,
                          targs, kwargs, tkwargs)
    if _is_python(fn):
        return _jvp_python(fn, args, targs, kwargs, tkwargs, ftan=ftan)
    if isinstance(fn, functools.partial):
        pa, pk = ftan if isinstance(ftan, tuple) and len(ftan) == 2 else (None, None)
        pa = tuple(pa) if pa is not None else (None,) * len(fn.args)
        return jvp_call(fn.func, fn.args + tuple(args), pa + tuple(targs),
                        {**fn.keywords, **(kwargs or {})}, {**(pk or {}), **(tkwargs or {})})
    from ..rules.registry import lookup
    rule = lookup(fn) if not isinstance(fn, (list, dict)) else None
    call = getattr(type(fn), "__call__", None)
    if rule is None and inspect.isfunction(call) and _is_python(call):  # an object of a user class
        # (its __call__ may update the object, as a method may: the object's tangent follows;
        # a rule for the object itself, e.g. a scipy.stats distribution, wins over its source)
        trecv = ftan if isinstance(ftan, dict) else None
        value, tv, tself = jvp_method_update(fn, trecv, "__call__", args, targs, kwargs, tkwargs)
        if isinstance(trecv, dict) and isinstance(tself, dict) and tself is not trecv:
            trecv.clear()
            trecv.update(tself)
        return value, tv
    value = fn(*args, **kwargs)
    if rule is not None and not rule.zero:
        bound = rule.bind(args, kwargs)
        return value, _rule_tangent(rule, bound, value, _param_tangents(rule, args, targs, kwargs, tkwargs))
    if rule is None and runtime.differentiable(value) and any(
            _active_tangent(t, a) for t, a in list(zip(targs, args)) +
            [(tkwargs.get(k), v) for k, v in kwargs.items()]):
        raise OpaqueCalleeError(runtime._opaque_message(fn), fix=runtime._rule_skeleton(fn))
    return value, zeros_like(value)


def _jvp_operator(fn, args, targs):
    """``a + b``, ``-a``, ``a[i]`` on objects of user classes: their Python ``__add__`` /
    ``__radd__``... in forward mode; None when no such method applies."""
    unary = len(runtime._DUNDERS[fn]) == 1
    targs = tuple(targs) + (None,) * (len(args) - len(targs))

    def obj_t(t):
        return t if isinstance(t, dict) else None
    for m, self_, rest, reflected in runtime.operator_methods(fn, args):
        tans = (obj_t(targs[1]), targs[0]) if reflected else (obj_t(targs[0]),) + tuple(targs[1:])
        value, t = _jvp_python(m, (self_,) + tuple(rest), tans)
        if unary or value is not NotImplemented:
            return value, t
    return None


def _jvp_construct(cls, args, targs, kwargs, tkwargs):
    """``cls(*args, **kwargs)``: a user class's ``__init__`` is differentiated as a constructor
    (the object's tangent is a dict of attribute tangents); a plain dataclass's fields take the
    arguments' tangents."""
    import dataclasses
    from ..rules.registry import lookup
    try:
        rule = lookup(cls)
    except TypeError:
        rule = None
    if rule is None and dataclasses.is_dataclass(cls) and not hasattr(cls, "__post_init__"):
        obj = cls(*args, **kwargs)
        names = [f.name for f in dataclasses.fields(cls) if f.init]
        tobj = {}
        for n, t in list(zip(names, targs)) + [(k, tkwargs.get(k)) for k in kwargs]:
            if t is not None:
                tobj[n] = t
        return obj, tobj
    init = cls.__init__
    if rule is None and _is_python(init) and runtime.constructible(cls):
        obj = cls.__new__(cls)
        _, tobj = _jvp_python(init, (obj,) + tuple(args), ({},) + tuple(targs), kwargs, tkwargs,
                              init=True)
        return obj, tobj if isinstance(tobj, dict) else {}
    value = cls(*args, **kwargs)
    if rule is not None and not rule.zero:
        bound = rule.bind(args, kwargs)
        return value, _rule_tangent(rule, bound, value, _param_tangents(rule, args, targs, kwargs,
                                                                        tkwargs))
    if rule is None and runtime.differentiable(value) and any(
            _active_tangent(t, a) for t, a in list(zip(targs, args)) +
            [(tkwargs.get(k), v) for k, v in kwargs.items()]):
        raise OpaqueCalleeError(runtime._opaque_message(cls), fix=runtime._rule_skeleton(cls))
    return value, {} if _is_object(value) else zeros_like(value)


def _param_tangents(rule, args, targs, kwargs, tkwargs, self_=None, tself=None):
    """Rule parameter -> tangent, for the active arguments of a call bound to the rule."""
    allargs = ((self_,) if self_ is not None else ()) + tuple(args)
    alltans = ((tself,) if self_ is not None else ()) + tuple(targs)
    ba = rule.signature.bind(*[("__pos__", i) for i in range(len(allargs))],
                             **{k: ("__kw__", k) for k in kwargs})
    out = {}
    for p, marker in ba.arguments.items():
        if p not in rule.differentiable:
            continue
        if isinstance(marker, dict):                 # a **kwargs parameter: {name: tangent}
            tans = {k: tkwargs.get(k) if _active_tangent(tkwargs.get(k), kwargs[k]) else None
                    for k in marker}
            if any(v is not None for v in tans.values()):
                out[p] = {k: zeros_like(kwargs[k]) if v is None else v for k, v in tans.items()}
            continue
        markers = marker if isinstance(marker, tuple) and marker and isinstance(marker[0], tuple) \
            else (marker,)
        tans, any_active = [], False
        for m in markers:
            if m[0] == "__pos__":
                tv, val = alltans[m[1]], allargs[m[1]]
            else:
                tv, val = tkwargs.get(m[1]), kwargs[m[1]]
            if _active_tangent(tv, val):
                any_active = True
                tans.append(tv)
            else:
                tans.append(zeros_like(val))
        if any_active:
            out[p] = tuple(tans) if markers is marker else tans[0]
    return out


def jvp_apply(fn, args, targs, kwargs, tkwargs, ftan=None):
    """``fn(*args, **kwargs)`` (a call with starred arguments) with the tangents of the argument
    tuple and keyword dict."""
    args = tuple(args)
    if targs is None or (type(targs) is float and targs == 0.0):
        targs = (None,) * len(args)
    targs = tuple(targs)
    kwargs = dict(kwargs or {})
    tkwargs = dict(tkwargs) if isinstance(tkwargs, dict) else {}
    return jvp_call(fn, args, targs, kwargs, tkwargs, ftan)


def _no_tangent(t):
    return t is None or (type(t) is float and t == 0.0)


def _container_method(recv, trecv, name, args, targs, kwargs, tkwargs):
    """A method of a list or dict (in place or read-only), its tangent container mirrored."""
    method = getattr(recv, name)
    targs = tuple(targs) + (None,) * (len(args) - len(targs))
    active_args = any(not _no_tangent(t) for t in targs) or \
        any(not _no_tangent(tkwargs.get(k)) for k in kwargs)
    if _no_tangent(trecv):
        if name in _IN_PLACE and active_args and runtime.differentiable(list(args) + list(kwargs.values())):
            raise UnsupportedSyntaxError(
                f"forward mode: `.{name}(...)` puts values that carry a derivative into a "
                f"{type(recv).__name__} that carries none here",
                fix="build the container from those values (a display or comprehension) instead")
        value = method(*args, **kwargs)
        return value, zeros_like(value)
    if name == "extend":
        n0 = len(recv)
        ta = targs[0] if targs else None
        tl = None if _no_tangent(ta) else list(_elems(ta, args[0]))
        value = method(*args, **kwargs)
        added = recv[n0:]
        trecv.extend([zeros_like(v) for v in added] if tl is None else
                     [materialize(t, v) for t, v in zip(tl, added)])
        return value, None
    if name in ("append", "insert"):
        value = method(*args, **kwargs)
        if args:
            last = materialize(targs[-1], args[-1])
            getattr(trecv, name)(*(list(args[:-1]) + [last]))
        return value, None
    if name == "pop":
        if isinstance(recv, dict):
            key = args[0]
            had = key in recv
            value = method(*args, **kwargs)
            if had:
                return value, materialize(trecv.pop(key, None), value)
            return value, materialize(targs[1] if len(targs) > 1 else None, value)
        value = method(*args, **kwargs)
        return value, materialize(trecv.pop(*args), value)
    if name == "remove":
        i = recv.index(args[0])
        value = method(*args)
        del trecv[i]
        return value, None
    if name in ("reverse", "clear"):
        value = method(*args, **kwargs)
        getattr(trecv, name)()
        return value, None
    if name == "sort":
        key, rev = kwargs.get("key"), kwargs.get("reverse", False)
        keyf = key if key is not None else (lambda v: v)
        order = sorted(range(len(recv)), key=lambda k: keyf(recv[k]), reverse=rev)
        tans = _elems(trecv, recv)
        value = method(*args, **kwargs)
        trecv[:] = [tans[k] for k in order]
        return value, None
    if name == "update":
        new = {}
        if args:
            other = args[0]
            pairs = other.items() if isinstance(other, dict) else list(other)
            tother = targs[0]
            if isinstance(other, dict):
                tpairs = [(k, (tother or {}).get(k) if isinstance(tother, dict) else None)
                          for k in other]
            else:
                tl = _elems(tother, pairs)
                tpairs = [(k, None if _no_tangent(tp) else tp[1]) for (k, _), tp in zip(pairs, tl)]
            vals = dict(pairs)
            for k, tv in tpairs:
                new[k] = materialize(tv, vals[k])
        for k, v in kwargs.items():
            new[k] = materialize(tkwargs.get(k), v)
        value = method(*args, **kwargs)
        trecv.update(new)
        return value, None
    if name == "setdefault":
        key = args[0]
        if key not in recv:
            trecv[key] = materialize(targs[1] if len(targs) > 1 else None,
                                     args[1] if len(args) > 1 else None)
        value = method(*args, **kwargs)
        return value, materialize(trecv.get(key), value)
    if name == "popitem":
        value = method()
        return value, (zeros_like(value[0]), materialize(trecv.pop(value[0], None), value[1]))
    value = method(*args, **kwargs)
    if name == "copy":
        return value, copy_tangent(trecv, recv)
    if name == "get":
        t = get_tangent(trecv, recv, args[0], value)
        if len(args) > 1 and args[0] not in recv:
            t = materialize(targs[1], value)
        return value, t
    if name == "values":
        return value, values_tangent(trecv, recv)
    if name == "items":
        return value, items_tangent(trecv, recv)
    if name in ("index", "count", "keys"):
        return value, zeros_like(value)
    if runtime.differentiable(value):
        raise OpaqueCalleeError(f"forward mode: the {type(recv).__name__} method .{name}() has no "
                                f"derivative rule", fix=runtime._rule_skeleton(method))
    return value, zeros_like(value)


def _bound_method_rule(method):
    """The rule of a bound method of a library object (a resolver's), or None."""
    if not isinstance(method, types.MethodType) or runtime._is_python(method.__func__):
        return None
    from ..rules.registry import lookup
    try:
        return lookup(method)
    except TypeError:
        return None


def jvp_method(recv, trecv, name, args, targs, kwargs=None, tkwargs=None):
    """``recv.name(*args, **kwargs)`` with tangents: list and dict methods are mirrored on the
    tangent container, array methods use their rules, methods of user classes are differentiated."""
    kwargs = kwargs or {}
    tkwargs = tkwargs or {}
    if type(recv) in (list, dict, tuple):
        return _container_method(recv, trecv, name, args, targs, kwargs, tkwargs)
    method = getattr(recv, name)
    if _is_array(recv) or type(recv) in (float, complex):      # (z.conjugate() of a Python complex)
        from ..rules.registry import lookup_method
        rule = lookup_method(name)
        value = method(*args, **kwargs)
        if rule is None or rule.zero:
            if rule is None and (value is None or runtime.differentiable(value)) and (
                    _active_tangent(trecv, recv) or any(_active_tangent(t, a) for t, a in zip(targs, args))):
                raise OpaqueCalleeError(f"the array method .{name}() has no derivative rule",
                                        fix=runtime._rule_skeleton(method))
            return value, zeros_like(value)
        bound = rule.bind((recv,) + tuple(args), kwargs)
        tans = _param_tangents(rule, args, targs, kwargs, tkwargs, self_=recv, tself=trecv)
        return value, _rule_tangent(rule, bound, value, tans)
    func = getattr(method, "__func__", None)
    rule = _bound_method_rule(method)
    if rule is not None:
        # a rule for this bound method (scipy.stats: norm.logpdf, norm(0, 1).logpdf) wins over
        # the library's Python source; a ``receiver`` rule's first parameter is the object
        value = method(*args, **kwargs)
        if rule.zero:
            return value, zeros_like(value)
        self_ = (recv,) if rule.receiver else ()
        bound = rule.bind(self_ + tuple(args), kwargs)
        tans = _param_tangents(rule, args, targs, kwargs, tkwargs, self_=recv if self_ else None,
                               tself=trecv)
        return value, _rule_tangent(rule, bound, value, tans)
    if func is not None and _is_python(func):
        self_ = method.__self__          # the object itself, also through super()
        if isinstance(self_, type):      # a classmethod: the class carries no tangent
            return _jvp_python(func, (self_,) + tuple(args), (None,) + tuple(targs), kwargs, tkwargs)
        return _jvp_python(func, (self_,) + tuple(args), (trecv,) + tuple(targs), kwargs, tkwargs)
    value, tv = jvp_call(method, args, targs, kwargs, tkwargs, _bound=True)
    if not _no_tangent(trecv) and runtime.differentiable(recv) and runtime.differentiable(value):
        from ..rules.registry import lookup       # a method without a rule, of an object that
        if lookup(method) is None:                # carries a tangent (it gave a zero tangent)
            raise OpaqueCalleeError(runtime._opaque_message(method), fix=runtime._rule_skeleton(method))
    return value, tv


def jvp_method_update(recv, trecv, name, args, targs, kwargs=None, tkwargs=None):
    """``recv.name(...)`` for a method that may update its object: (value, tangent, the object's
    tangent after the call).  A method that writes into ``self`` is differentiated with the
    updated object as a second output (as in reverse mode)."""
    if isinstance(recv, types.ModuleType):            # xp.mean(...): a function, not a method
        value, tv = jvp_method(recv, None, name, args, targs, kwargs, tkwargs)
        return value, tv, trecv
    method = getattr(recv, name)
    func = getattr(method, "__func__", None)
    if func is None or not _is_python(func) or isinstance(method.__self__, type) or \
            _bound_method_rule(method) is not None:
        value, tv = jvp_method(recv, trecv, name, args, targs, kwargs, tkwargs)
        return value, tv, trecv
    recv = method.__self__                           # the object itself, also through super()
    if func.__code__ not in runtime._MUTATING:
        try:
            value, tv = _jvp_python(func, (recv,) + tuple(args), (trecv,) + tuple(targs),
                                    kwargs, tkwargs)
            return value, tv, trecv
        except ArgumentWriteError as e:
            first = func.__code__.co_varnames[0] if func.__code__.co_argcount else None
            if e.param != first:
                raise
            runtime._MUTATING.add(func.__code__)
    (value, _), (tv, tself) = _jvp_python(func, (recv,) + tuple(args), (trecv,) + tuple(targs),
                                          kwargs, tkwargs, mut=True)
    return value, tv, tself


def jvp_attr(obj, tobj, name):
    """Attribute read on a value of unknown type: arrays use the attribute rules, objects of user
    classes their attribute tangents (a dict), properties are differentiated."""
    if _is_array(obj) or type(obj) in (float, complex):      # (z.real, z.imag of a Python complex)
        value = getattr(obj, name)
        if tobj is not None:
            from ..rules.registry import lookup_attr
            rule = lookup_attr(name)
            if rule is not None and not rule.zero and "self" in rule.jvp:
                return value, tangent_function(rule, "self")(materialize(tobj, obj), value, self=obj)
        return value, zeros_like(value)
    prop = getattr(type(obj), name, None)
    if isinstance(prop, property) and prop.fget is not None and _is_python(prop.fget):
        return _jvp_python(prop.fget, (obj,), (tobj,))
    value = getattr(obj, name)
    if getattr(value, "__self__", None) is obj and callable(value):
        return value, tobj                   # a bound method: its object's tangent
    if isinstance(obj, dict) and isinstance(tobj, dict) and getattr(type(obj), name, None) is None \
            and name in obj and value is obj[name]:
        # a dict whose __getattr__ reads its items (scipy's OptimizeResult, OdeResult...): the
        # item's tangent
        t = tobj.get(name)
        if t is None or (type(t) is float and t == 0.0 and not isinstance(value, (float, int))):
            t = zeros_like(value)
        return value, t
    if isinstance(tobj, dict) and not isinstance(obj, dict):
        t = tobj.get(name)
        if t is None or (type(t) is float and t == 0.0 and not isinstance(value, (float, int))):
            t = zeros_like(value)
            if isinstance(value, (list, dict)) or _is_object(value):
                if t is None:
                    t = {}
                tobj[name] = t               # a mutable attribute: its tangent stays with it
        return value, t
    return value, zeros_like(value)


# -- tangents of Python's builtins over sequences (the ``jvp=`` templates of python_rules) -----------
# A lazy iterator's tangent (zip, enumerate, reversed, dict views) is the eager list of its
# elements' tangents: every consumer walks the primal iterator once, and the list alongside it.
def _elems(t, x):
    """The tangents of the elements ``iter(x)`` yields, as a list (an endless run of zeros for
    an iterator that carries none: zip stops at the shortest)."""
    t = runtime.resolve(t)
    if isinstance(x, dict):
        return [zeros_like(k) for k in x]
    if isinstance(x, range):
        return [0.0] * len(x)
    if t is None or (type(t) is float and t == 0.0):
        if isinstance(x, runtime.Iter):
            return [0.0] * len(x.seen)
        if isinstance(x, (list, tuple)) or (hasattr(x, "shape") and hasattr(x, "dtype")):
            return list(zeros_like(x)) if np.ndim(x) or isinstance(x, (list, tuple)) else []
        import itertools
        return itertools.repeat(0.0)
    if isinstance(t, dict):          # a dict view's tangent came as a dict
        return list(t.values())
    if _is_array(x) and x.ndim and (isinstance(t, (int, float, complex, np.generic)) or
                                    _is_array(t) and t.ndim < x.ndim):
        t = bcast(t, x)              # a broadcasting op's tangent kept its operand's shape
    return list(t)


def seq_tangent(t, x, ans):
    """Tangent of ``list(x)``, ``tuple(x)`` and of the loop sequence ``_rt.seq(x)``."""
    if ans is x:                     # _rt.seq of a list, tuple or array: the value itself
        return materialize(t, x)
    t = runtime.resolve(t)
    if isinstance(x, dict):
        return type(ans)(zeros_like(k) for k in ans)
    if t is None or (type(t) is float and t == 0.0):
        return zeros_like(ans)
    if isinstance(x, (list, tuple)):
        t = materialize(t, x)
    out = list(t) if not isinstance(t, dict) else list(t.values())
    if isinstance(ans, (list, tuple)) and len(out) != len(ans):
        raise RuleError(f"forward mode: the tangent of {type(x).__name__} has {len(out)} "
                        f"element(s) where the value has {len(ans)}",
                        fix="a rule's tangent template for this value gives the wrong number of "
                            "elements; check it against the value (s2sad.testing.check_grads(..., "
                            "modes=(\"fwd\",)))")
    return type(ans)(out) if isinstance(ans, (list, tuple)) else out


# The tangent of an iterator is read lazily (runtime.LazyList): its values' tangents are known once
# the calls that consume it have taken them.
def zip_tangent(t, iterables):
    return runtime.LazyList(lambda: list(zip(*[_elems(ti, x) for ti, x in zip(t, iterables)])))


def enumerate_tangent(t, iterable):
    return runtime.LazyList(lambda: [(0.0, e) for e in _elems(t, iterable)])


def reversed_tangent(t, seq):
    return _elems(t, seq)[::-1]


def zip_seq_tangent(t, xs, ans):
    return tuple(seq_tangent(tj, x, aj) if not isinstance(x, runtime.Iter) else
                 _elems(tj, x)[:len(aj)] for tj, x, aj in zip(t, xs, ans))


def iter_tangent(t, obj):
    if isinstance(obj, runtime.Iter):
        return t
    return runtime.LazyList(lambda: _elems(t, obj))


def star_args_tangent(t, segments):
    out = []
    for ti, seg in zip(t, segments):
        out.extend(_elems(ti, seg))
    return tuple(out)


def sum_tangent(t, iterable, ans):
    """Tangent of ``sum(iterable)`` in the iterable."""
    if hasattr(iterable, "shape") and hasattr(iterable, "dtype"):
        return runtime.array_module(iterable).sum(materialize(t, iterable), axis=0)
    out = None
    for e in _elems(t, iterable):
        if e is None or (type(e) is float and e == 0.0):
            continue
        out = e if out is None else out + e
    return zeros_like(ans) if out is None else bcast(out, ans)


def extremum_tangent(t, args, key, pick):
    """Tangent of builtin ``min``/``max``: the chosen element's (first of equals, like Python)."""
    if len(args) == 1:
        items, tans = runtime.listed(args[0]), _elems(t[0], args[0])
    else:
        items, tans = list(args), [materialize(ti, a) for ti, a in zip(t, args)]
    if not items:
        return 0.0                   # the default was returned
    keyf = key if key is not None else (lambda v: v)
    vals = [keyf(v) for v in items]
    best = pick(range(len(items)), key=lambda k: vals[k])
    return materialize(tans[best], items[best])


def sorted_tangent(t, iterable, key, reverse):
    items = runtime.listed(iterable)
    tans = _elems(t, iterable)
    keyf = key if key is not None else (lambda v: v)
    order = sorted(range(len(items)), key=lambda k: keyf(items[k]), reverse=reverse)
    return [materialize(tans[k], items[k]) for k in order]


def hypot_tangent(t, ans, coordinates):
    if ans == 0:
        return 0.0
    return sum(c * tc for c, tc in zip(coordinates, materialize(t, coordinates))) / ans


def get_tangent(t, d, key, ans):
    """Tangent of ``d.get(key, default)`` in ``d``."""
    if key in d and t is not None and not (type(t) is float and t == 0.0):
        return materialize(t.get(key) if isinstance(t, dict) else t[key], d[key])
    return zeros_like(ans)


def default_tangent(t, d, key, ans):
    """Tangent of ``d.get(key, default)`` in ``default``."""
    return zeros_like(ans) if key in d else t


def values_tangent(t, d):
    t = materialize(t, d)
    return [t[k] for k in d]


def items_tangent(t, d):
    t = materialize(t, d)
    return [(zeros_like(k), t[k]) for k in d]


def copy_tangent(t, x):
    t = materialize(t, x)
    return type(t)(t) if isinstance(t, (list, dict)) else t


RuleError  # noqa: B018 (raised by the build for rules without tangents where no fallback applies)
