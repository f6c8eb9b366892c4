"""Which attributes of its object a method that updates it may change: :func:`self_writes`.

A method that writes into ``self`` is differentiated as an update of its object (outputs
``(result, self)``, ``codegen/build.py``).  Where the object is one the caller passed in, the
caller does not follow the update (``runtime.no_update``); that is harmless when the attributes
the method changed hold nothing that carries a derivative afterwards (``self.calls += 1``, a
flag, a list of ints), which the dispatcher checks when the call has run
(``runtime.dispatch._update_carries``).  For that it needs the names of those attributes, which
this module reads from the method's IR; where it cannot tell (``self``, or an object it holds,
reaches a call that may change it: another method of ``self``, a user function, a callee
without a rule), the answer is None and the update counts as carrying one.
"""
import copy

from .. import ir
from ..frontend.analysis import bound_names
from .objects import Objects, call_of

_READ_ONLY = {copy.copy, copy.deepcopy}


def self_writes(fn, self_param):
    """Sorted names of the attributes of ``self_param`` (the object a method updates) that ``fn``
    may bind or change in place, or None when that is not known."""
    objs = Objects(fn)
    me, held = ("p", self_param), ("pc", self_param)

    def reaches(var):
        return bool(objs.reach(objs.of(var)) & {me, held})

    stmts = list(ir.walk(fn.body))
    # variables bound only by reading an attribute of the object (or copies of those): which
    # attribute names they may hold
    bindings = {}
    for s in stmts:
        for v in bound_names(s):
            bindings.setdefault(v, []).append(s)
    attr_of = {}
    changed = True
    while changed:
        changed = False
        for v, where in bindings.items():
            names = set()
            for s in where:
                call = s.value if isinstance(s, ir.Assign) else None
                if isinstance(call, ir.Call) and isinstance(call.fn, ir.Attr) and \
                        isinstance(call.args[0], str) and objs.of(call.args[0]) == {me} and \
                        not (call.info or {}).get("mutates"):
                    names.add(call.fn.name)
                elif isinstance(s, ir.Assign) and isinstance(s.value, str) and \
                        s.value in attr_of and s.value != v:
                    names |= attr_of[s.value]
                else:
                    names = None
                    break
            if names is not None and attr_of.get(v) != names:
                attr_of[v] = names
                changed = True

    written = set()

    def changes(var):
        """``var``'s object is changed in place: which attributes that is (False: unknown)."""
        if not isinstance(var, str) or not reaches(var):
            return True                    # (an object the method made itself)
        if var in attr_of:
            written.update(attr_of[var])
            return True
        return False

    for s in stmts:
        if isinstance(s, ir.SetItem):
            if getattr(s, "attr", None) and objs.of(s.obj) == {me}:
                written.add(s.attr)                     # self.name = value
            elif not changes(s.obj):
                return None
        elif isinstance(s, ir.DelItem):
            if not changes(s.obj):
                return None
        elif isinstance(s, ir.Mutate):
            if not changes(s.obj):
                return None
        elif isinstance(s, ir.With):
            if any(isinstance(c, str) and reaches(c) for c, _ in s.items):
                return None
        call = call_of(s)
        if call is None:
            continue
        info = call.info or {}
        if info.get("mutates") and not changes(info["mutates"]):
            return None
        if isinstance(call.fn, ir.Attr):
            continue                                    # an attribute read
        if call.cls in ("primitive", "zero") and call.rule is not None:
            # (a rule's callee changes nothing but an ``out=`` array)
            out = dict(call.kwargs).get("out")
            if out is not None and any(not changes(v) for v in ir.operand_vars(out)):
                return None
            continue
        if isinstance(call.fn, ir.Static) and any(call.fn.obj is f for f in _READ_ONLY):
            continue
        ops = [v for op in call.operands() for v in ir.operand_vars(op)] + \
            [v for v in call.extra.get("captured", ()) if isinstance(v, str)]
        if isinstance(call.fn, ir.Method) and call.args and isinstance(call.args[0], str):
            ops.append(call.args[0])
        if any(reaches(v) for v in ops):
            return None            # the object, or one it holds, given to code that may change it
    return sorted(written)
