"""Arrays proven to have one shape, for the reverse sweep's ``unbroadcast``.

An elementwise operation (a rule declared ``broadcast=True``) whose array operands all have one
shape gives a result of that shape: ``m = 0 <= h`` and ``r = h * m`` have h's shape.  Shapes are
tracked as classes of variables: a parameter, or a variable bound once and never changed in
place, starts a class of its own; the result of such an operation (or of a comparison) on
arrays of one class, with real numbers beside them, joins their class.  Nothing else is assumed (a matrix product, a
reduction, a call start new classes).

The emitter uses it for one case (codegen/reverse/adjoints.py): the adjoint of an array operand
of such an operation whose other array operands are boolean masks of its class
(``h * (0 <= h)``, ``np.where``-free ReLU) needs no ``unbroadcast``: ``g`` has the result's shape,
which is the operand's, and a mask changes no dtype.  The operand is then no longer kept for
the reverse sweep only for its shape.
"""
import operator

from ... import ir
from ...frontend.analysis import bound_names
from .operands import _real_const


def shape_classes(fn, kinds, types, changed):
    """{variable: representative} for the variables whose shape equals another's (those not
    listed are their own class).  ``types``: classify/types.py's, where known (an operand is an
    array where its kind or its type says so)."""
    count = {}
    for s in ir.walk(fn.body):
        for v in bound_names(s):
            count[v] = count.get(v, 0) + 1
    params = set(fn.params)

    def stable(v):
        return v not in changed and count.get(v, 0) == (0 if v in params else 1)

    parent = {}

    def find(v):
        while v in parent:
            v = parent[v]
        return v

    for s in ir.walk(fn.body):
        if not (isinstance(s, ir.Assign) and isinstance(s.target, str) and stable(s.target)):
            continue
        call = s.value
        if not (isinstance(call, ir.Call) and not call.kwargs and _elementwise(call)):
            continue

        def is_array(a):
            return isinstance(a, str) and (kinds.get(a) == "a" or
                                           (types.get(a) or ("?",))[0] == "a")
        arrays = [a for a in call.args if is_array(a)]
        rest = [a for a in call.args if not is_array(a)]
        if not arrays or not all(stable(a) for a in arrays) or \
                not all(_real_const(a) or (isinstance(a, str) and kinds.get(a) in ("f", "i"))
                        for a in rest):
            continue
        roots = {find(a) for a in arrays}
        if len(roots) == 1:
            root = roots.pop()
            if root != s.target:
                parent[s.target] = root
    return {v: find(v) for v in parent}


_COMPARE = {operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne}


def _elementwise(call):
    """A call whose result has its operands' broadcast shape: a rule declared broadcast=True,
    or a comparison (no derivative; on an array operand, elementwise)."""
    if call.cls == "primitive" and call.rule is not None and call.rule.broadcast:
        return True
    return call.cls == "zero" and isinstance(call.fn, ir.Static) and \
        getattr(call.fn, "obj", None) in _COMPARE and len(call.args) == 2
