"""Rules for s2sad's own API called inside a function that is itself differentiated.

``s2sad.grad(f)`` returns a function; its derivative with respect to what ``f`` captured (a closure
over data) is the closure's: the returned function's adjoint (a dict of the captured values'
adjoints) passes to ``f`` unchanged.  Calling it runs the generated gradient function, which s2sad
differentiates like any Python function (see ``runtime.transform_parts``).
"""
from .. import api as _api
from .registry import defrule

for _t in (_api.grad, _api.value_and_grad):
    defrule(_t, "fn, wrt=0", vjp={"fn": "g"}, jvp={"fn": "t"}, kind="any")

# -- helpers of generated forward sweeps (s2sad.jvp inside a function differentiated in reverse mode)
from ..runtime import forward as _fw  # noqa: E402

defrule(_fw.bcast, "tan, like, /", vjp={"tan": "_rt.unbroadcast(g, tan)"},
        jvp={"tan": "_fw.bcast(t, like)"}, kind="any")
defrule(_fw.materialize, "tan, like, /", vjp={"tan": "g"}, jvp={"tan": "_fw.materialize(t, like)"},
        kind="any")
defrule(_fw.into, "tan, dest, /", vjp={"tan": "_fw.into(g, dest)"}, jvp={"tan": "_fw.into(t, dest)"},
        kind="any")
