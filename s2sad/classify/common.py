"""Small helpers the refusal checks share: hashability, where a statement sits (the blocks
around it, whether a definition runs again between two statements), putting guard statements
before the statements they check, and the operator of ``a op= v``."""
import operator

from .. import ir, runtime


def _hashable(obj):
    try:
        hash(obj)
        return True
    except TypeError:
        return False


def _block_chains(fn):
    """id(statement) -> [(id(block), index in it)] for the blocks around it, outermost first."""
    out = {}

    def walk(block, chain):
        for k, s in enumerate(block):
            here = chain + [(id(block), k)]
            out[id(s)] = here
            for b in ir.children(s):
                walk(b, here)
    walk(fn.body, [])
    return out


def _remade_between(pos, s, made, t):
    """Whether every way from statement ``s`` to statement ``t`` runs ``made`` again (it lies
    between them in straight-line order, or, for ``t`` reached in the loop's next pass, where
    that pass runs it before ``t``)."""
    i_s, i_m, i_t = pos[id(s)][0], pos[id(made)][0], pos[id(t)][0]
    if i_s < i_m < i_t:
        return True
    common = pos[id(s)][1] & pos[id(t)][1]
    return i_t <= i_s and bool(common) and common <= pos[id(made)][1] and \
        (i_m < i_t or i_m > i_s)


def _insert_guards(block, guards):
    """Put each guard statement (or list of them) just before the statement it checks (by id)."""
    if not guards:
        return
    i = 0
    while i < len(block):
        gs = guards.get(id(block[i]))
        for g in (gs if isinstance(gs, list) else [gs] if gs is not None else []):
            g.call.cls, g.call.info = "inactive", {"varied_args": []}
            block.insert(i, g)
            i += 1
        for b in ir.children(block[i]):
            _insert_guards(b, guards)
        i += 1


def _opname_of(call):
    return {operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/",
            operator.floordiv: "//", operator.pow: "**", operator.matmul: "@",
            operator.mod: "%"}.get(getattr(call.fn, "obj", None), "op")


def _is_make(call):
    """Whether ``call`` makes a closure (``runtime.make_closure``)."""
    return isinstance(call, ir.Call) and isinstance(call.fn, ir.Static) and \
        call.fn.obj is runtime.make_closure


def _cells(s):
    """The variables the closure that statement ``s`` makes captures."""
    return [v for k, v in zip(s.value.args[0].value, s.value.args[1:])
            if not k.endswith("=") and isinstance(v, str)]
