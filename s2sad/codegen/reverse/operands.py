"""What the emitter's parts ask of operands and call sites: variables read only by indexing, the
variables of a rule's bound arguments, Python scalars and real constants, and the constant that
names an opaque call site in a run-time check (the forward emitter uses it too)."""
import operator as _operator

from ... import ir


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
