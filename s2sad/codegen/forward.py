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

The helpers generated forward code calls as ``_fw.*`` (zeros, broadcasting, dynamic call sites,
the lazy derived-callee stub, the tangent-from-adjoint fallback) live in :mod:`s2sad.runtime.forward`.
"""
import ast as _ast
import copy
import functools
import operator

import numpy as np

from .. import ir, runtime
from ..errors import UnsupportedSyntaxError
from ..frontend.analysis import (IN_PLACE_METHODS, activity, changed_in_place, in_place_call,
                                 written_arrays)
from . import text as T
from .jit import template_methods_as_functions
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
    def __init__(self, fn, kinds, active, wrt, namespace, derived_namer, jit=False):
        self.fn = fn
        self.jit = jit                            # write for numba.njit (codegen/jit.py)
        self.pre = []                             # lines a tangent needs first (jit: _vjp_loop)
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
        if self.jit:
            tree = _drop_default_keywords(tree, rule, bound)
            tree = template_methods_as_functions(
                tree, set(rule.signature.parameters) | {"t", "ans"})
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
        """Elementwise broadcasting op where the sum of the tangent terms may be smaller than
        the output: some operand that may be an array is inactive (``y - zeros(3)`` with a float
        ``y``: the term ``_d_y`` is a float, the output has shape (3,)).  When every operand that
        may be an array is active, the terms together broadcast to the output's shape."""
        fn = rule.fn
        elementwise = rule.broadcast or isinstance(fn, np.ufunc) or fn is np.where
        if not elementwise:
            return False
        for p in rule.differentiable:
            v = bound.get(p)
            for o in (v if isinstance(v, tuple) else v.values() if isinstance(v, dict) else (v,)):
                if o is None or _is_scalar_operand(o, self.kinds):
                    continue
                if not (isinstance(o, str) and self.is_active(o)):
                    return True
        return False

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
            if self.jit:
                terms.append(T.parse_expr(self.vjp_loop(rule, p, bound, ans or target)))
                continue
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
        if self.needs_broadcast(rule, bound):
            text = f"_fw.bcast({text}, {ans or target})"
        elif target in self.written and not rule.view and isinstance(tree, _ast.Name):
            text = f"_rt.snap({text})"
        if rule.user and not rule.broadcast:
            # (a user's rule: a tangent of another shape than its result's would be broadcast
            # on, without an error; checked when it runs, as its adjoints are in reverse mode)
            site = self.consts.name_for(self.origin)
            text = f"_rt.rule_tangent({text}, {ans or target}, {rule.name!r}, {site})"
        return text

    def vjp_loop(self, rule, p, bound, ans):
        """jit mode, a rule without a tangent template for ``p``: the tangent from the rule's
        adjoint template, one output element at a time, ``(J t)_k = <J^T e_k, t>``, as lines in
        :attr:`pre` (numba compiles them with the rest); returns the name that holds it.  The
        ``_fw`` pieces have bodies for real outputs only (others: the fallback to Python)."""
        tree = rule.template("*" if rule.joint else p)
        if rule.joint:
            k = list(rule.joint[0]).index(p)
            tree = _ast.Subscript(tree, _ast.Constant(k), _ast.Load())
        k, g, out = self.fresh("k"), self.fresh("e"), self.fresh("jv")
        mapping = {q: T.parse_expr(self.text(bound.get(q))) for q in rule.signature.parameters}
        names = {n.id for n in _ast.walk(tree) if isinstance(n, _ast.Name)}
        for nm in names:
            if nm.startswith("n_") and isinstance(bound.get(nm[2:]), tuple):
                mapping[nm] = T.parse_expr(str(len(bound[nm[2:]])))
        mapping["g"] = T.parse_expr(g)
        mapping["ans"] = T.parse_expr(ans)
        tree = T.simplify(T.substitute(tree, mapping), real_names=self.real)
        pulled = T.unparse(_ast.fix_missing_locations(tree))
        tan = self.tangent_text(bound.get(p), True)
        o = self.origin
        self.pre += [T.Line(f"{out} = _fw.out_zeros({ans})", o),
                     T.Nest(f"for {k} in range(_fw.out_size({ans})):", o, [
                         T.Line(f"{g} = _fw.basis({ans}, {k})", o),
                         T.Line(f"{out} = _fw.put({out}, {k}, _fw.inner({pulled}, {tan}))", o)])]
        return out

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
            items = T.with_items_text(s, self.text, c)
            return [T.Nest(f"with {items}:", o, self.block(s.body))]
        if isinstance(s, ir.Try):
            items = [T.Nest("try:", o, self.block(s.body))]
            check = T.caught_check(s, c)
            for typ, name, blk in s.handlers:
                head = "except" + (f" {self.text(typ)}" if typ is not None else "") + \
                    (f" as {name}" if name else "") + ":"
                items.append(T.Nest(head, o, check + self.block(blk)))
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
        updated = self.updated_receiver(call) if call.cls == "dynamic" else None
        if t not in self.active and updated is not None:
            # (a method, or a called object, that updates an object carrying a tangent: its
            # result carries none here, the object's tangent after the call does)
            return [T.Line(f"{t}, _, {self.d(updated)} = {self.dynamic_text(call, True)}", o)]
        if t not in self.active or call.cls not in ("primitive", "derived", "dynamic"):
            lines = T.call_as_is(t, call, o, c, self.fresh, self.real)
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
        self.pre = []
        tan = self.primitive_tangent(call, t)
        primal = T.call_text(call, c)
        if t in call.reads():
            if _reads_name(tan, t) or self.pre:   # the tangent reads the old value: keep it
                self.pre = []                     # apart (and the result, ``ans``, under
                tmp = self.fresh("v")             # another name)
                tan = self.primitive_tangent(call, t, ans=tmp)
                pre, self.pre = self.pre, []
                return [T.Line(f"{tmp} = {primal}", o)] + pre + \
                    [T.Line(f"{self.d(t)} = {tan}", o), T.Line(f"{t} = {tmp}", o)]
            return [T.Line(f"{self.d(t)} = {tan}", o), T.Line(f"{t} = {primal}", o)]
        pre, self.pre = self.pre, []
        return [T.Line(f"{t} = {primal}", o)] + pre + [T.Line(f"{self.d(t)} = {tan}", o)]

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
        # (updates: a called object whose __call__ may update it; its tangent after comes back)
        helper = "jvp_call_update" if updates and isinstance(fn, ir.Dynamic) else "jvp_call"
        return f"_fw.{helper}({callee}, {argt}, {tant}{kw})"

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
        lines = T.container_guard(s, self.kinds, self.consts) + \
            [T.Line(f"{t} = {primal}" if t else primal, o)]
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
            guard = lines[:-1]
            if t and t in self.active:
                return guard + [T.Line(f"{t}, {self.d(t)} = {text}", o)]
            return guard + [T.Line(f"{t}, _ = {text}" if t else text, o)]
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
    def emit(self, name, module_arrays=()):
        """``name(*params, *tangents, *module_arrays)``; ``module_arrays`` (jit mode): the
        module-level arrays the code reads, taken as parameters (codegen/jit.module_arrays)."""
        fn = self.fn
        params = list(fn.params) + [self.d(p) for p in self.wrt] + list(module_arrays)
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


def _drop_default_keywords(tree, rule, bound):
    """jit mode: a template's keyword argument ``kw=q`` where the call left the rule parameter
    ``q`` at its default (``np.sum(t, axis=axis, keepdims=keepdims)`` for ``np.sum(x)``), or
    such a trailing positional argument (``t.ravel(order)``), is left out, so the callee takes its own default (the rule's signature states the callee's); numba
    compiles ``np.sum(t)`` but not every keyword NumPy takes.  A copy of ``tree``."""
    params = rule.signature.parameters

    def at_default(q):
        p = params.get(q)
        v = bound.get(q)
        if p is None or p.default is p.empty or not isinstance(v, ir.Const):
            return False
        d = p.default
        return (d is None and v.value is None) or (
            type(d) in (bool, int, str) and type(v.value) is type(d) and v.value == d)
    def dropped(a):
        return isinstance(a, _ast.Name) and a.id in params and at_default(a.id)
    tree = copy.deepcopy(tree)
    for node in _ast.walk(tree):
        if isinstance(node, _ast.Call):
            node.keywords = [k for k in node.keywords if not (k.arg and dropped(k.value))]
            while node.args and dropped(node.args[-1]):     # (trailing positionals: t.ravel())
                node.args.pop()
    return tree


def _tuple_text(parts):
    if len(parts) == 1:
        return f"({parts[0]},)"
    return "(" + ", ".join(parts) + ")"


def _reads_name(text, name):
    return any(isinstance(n, _ast.Name) and n.id == name for n in _ast.walk(T.parse_expr(text)))
