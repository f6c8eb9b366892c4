"""Names of one object: plain copies (``b = a``), the call that binds a name, calls that
return a view (memory shared with an operand), and calls that may return their operand itself
(:func:`returned_operand`, from frontend.analysis, whose written_arrays asks it too)."""
import operator

from .. import ir, runtime
from ..frontend.analysis import returned_operand  # noqa: F401 (one table for every analysis)


def _copy_aliases(fn, before=None, pos=None):
    """Classes of variables bound to the same object by plain copies (``b = a``).  With
    ``before`` (a statement), only copies that can run before it count."""
    parent = {}

    def find(a):
        while parent.get(a, a) != a:
            a = parent[a]
        return a
    for s in ir.walk(fn.body):
        if isinstance(s, ir.Assign) and isinstance(s.value, str):
            if before is not None:
                i, loops = pos[id(s)]
                j, wloops = pos[id(before)]
                if i > j and not (loops & wloops):
                    continue
            ra, rb = find(s.target), find(s.value)
            if ra != rb:
                parent[ra] = rb
    classes = {}
    for v in list(parent):
        classes.setdefault(find(v), set()).add(v)
    for root, members in classes.items():
        members.add(root)
    return {v: members for members in classes.values() for v in members}


def _read_via_copies(fn, v, changed, reads):
    """Whether ``v`` is read, directly or through plain copies of it made at any point (``d5 = v``
    after ``changed`` was written in place through another name: ``d5`` is the changed object
    too, but the reverse sweep would route its adjoint around the write).  Copies of ``changed``
    itself do not count."""
    copies = {}
    for t in ir.walk(fn.body):
        if isinstance(t, ir.Assign) and isinstance(t.value, str):
            copies.setdefault(t.value, []).append(t.target)
    seen, todo = {changed}, [v]
    while todo:
        u = todo.pop()
        if u in seen:
            continue
        seen.add(u)
        if reads.get(u):
            return True
        todo.extend(copies.get(u, ()))
    return False


def defining_call(fn, var):
    """The call that binds ``var``, when exactly one statement binds it."""
    found = [s for s in ir.walk(fn.body) if isinstance(s, ir.Assign) and s.target == var]
    if len(found) == 1 and isinstance(found[0].value, ir.Call):
        return found[0].value
    return None


def _is_view_call(call):
    return (call.rule is not None and call.rule.view) or \
        (isinstance(call.fn, (ir.Attr, ir.Method)) and call.fn.name in _VIEW_NAMES)


def _shares_memory_call(fn, call):
    """A view call, less a slice of a list or tuple (a new list) and an array's advanced
    indexing (a copy)."""
    return _is_view_call(call) and not (
        isinstance(call.fn, ir.Static) and call.fn.obj is operator.getitem and
        len(call.args) == 2 and isinstance(call.args[0], str) and
        getattr(fn, "kinds", {}).get(call.args[0]) == "c" and isinstance(call.args[1], ir.Index)
        and any(isinstance(p, ir.Slice) for p in call.args[1].parts)) and \
        not advanced_index(fn, call)


def advanced_index(fn, call):
    """``x[idx]`` of an array with an integer or boolean array, or a list, in the index
    (``x[idx]``, ``x[x > 0]``, ``x[[0, 2]]``, ``m[1:, idx]``): NumPy's advanced indexing, which
    returns a copy, never a view."""
    if not (isinstance(call.fn, ir.Static) and call.fn.obj is operator.getitem and
            len(call.args) == 2 and isinstance(call.args[0], str)):
        return False
    kinds = getattr(fn, "kinds", None) or {}
    if kinds.get(call.args[0]) != "a":
        return False
    idx = call.args[1]
    parts = idx.parts if isinstance(idx, ir.Index) else [idx]
    for p in parts:
        if isinstance(p, ir.Const) and isinstance(p.value, list):
            return True
        if _array_valued(fn, p, kinds, 4):
            return True
        made = defining_call(fn, p) if isinstance(p, str) else None
        obj = made.fn.obj if made is not None and isinstance(made.fn, ir.Static) else None
        if kinds.get(p) == "c" and obj in (runtime.build_list, list):
            return True
    return False


def _array_valued(fn, p, kinds, depth):
    """An operand that is an array: of kind ``a``, or a comparison or logical operator of one
    (a boolean mask: ``x > 0``, ``(x > 0) & (x < 1)``)."""
    if not isinstance(p, str):
        return False
    if kinds.get(p) == "a":
        return True
    made = defining_call(fn, p)
    obj = made.fn.obj if made is not None and isinstance(made.fn, ir.Static) else None
    return depth > 0 and _hashable_obj(obj) and obj in _MASK_MAKERS and \
        any(_array_valued(fn, a, kinds, depth - 1) for a in made.args)


def _hashable_obj(obj):
    try:
        hash(obj)
        return True
    except TypeError:
        return False


_MASK_MAKERS = {operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne,
                operator.and_, operator.or_, operator.xor, operator.invert}


_VIEW_NAMES = {"T", "mT", "real", "imag", "reshape", "view", "transpose", "swapaxes", "squeeze",
               "ravel", "diagonal", "__getitem__"}


# -- which names still hold an object after it is changed in place (flow-sensitive) ------------
def _flow(block, state, visit):
    """Run ``visit(stmt, state) -> state`` over ``block`` in the order statements may run, a
    loop's body again until nothing changes (states are sets, joined by union: a may-analysis).
    Returns (the state at the end, the union of the states at a ``break``/``continue`` in it
    (not in a nested loop): what reaches the loop's head and its exit besides the end).  A
    ``try`` body may stop at any statement: its handlers start from every state in it."""
    jumps = frozenset()
    for s in block:
        state = visit(s, state)
        if isinstance(s, (ir.Break, ir.Continue)):
            jumps |= state
        elif isinstance(s, ir.If):
            a, ja = _flow(s.body, state, visit)
            b, jb = _flow(s.orelse, state, visit)
            state, jumps = a | b, jumps | ja | jb
        elif isinstance(s, (ir.For, ir.While)):
            head = state
            while True:
                inner = head
                if isinstance(s, ir.While):
                    inner, _ = _flow(s.test_body, inner, visit)
                if isinstance(s, ir.For):
                    inner = visit(("bind", s.target), inner)
                out, jb = _flow(s.body, inner, visit)
                nxt = head | out | jb
                if nxt == head:
                    break
                head = nxt
            state = head
            if isinstance(s, ir.While):
                state, _ = _flow(s.test_body, head, visit)
                state |= head
            if s.orelse:
                o2, j2 = _flow(s.orelse, state, visit)
                state, jumps = state | o2, jumps | j2
        elif isinstance(s, (ir.Try, ir.With)):
            everywhere = [state]

            def each(t, st, _everywhere=everywhere):
                out = visit(t, st)
                _everywhere.append(out)
                return out
            cur = state
            for b in ir.children(s):
                out, jb = _flow(b, cur | frozenset().union(*everywhere), each)
                cur, jumps = cur | out, jumps | jb
            state = cur | frozenset().union(*everywhere)
    return state, jumps


def stale_reads(fn, write, obj, names):
    """Of ``names`` (other names that plain copies may make for ``obj``'s object), those that may
    still hold the object ``write`` changes in place (through ``obj``) when the write runs, and
    are read afterwards, directly or through copies made of them later, before they are bound
    again.  Flow-sensitive, where :func:`_copy_aliases` is not: after a swap of two buffers in a
    loop (``u, un = un, u``), ``u`` and ``un`` are never one object when ``un[i] = ...`` runs."""
    def pairs(s, state):
        if isinstance(s, tuple):                        # ("bind", name): a loop variable
            return frozenset(p for p in state if s[1] not in p)
        if isinstance(s, ir.Assign):
            x = s.target
            kept = frozenset(p for p in state if x not in p)
            if isinstance(s.value, str) and s.value != x:
                y = s.value
                new = {frozenset((x, y))} | {frozenset((x, *(p - {y}))) for p in state
                                             if y in p and len(p) == 2 and x not in p}
                return kept | new
            return kept
        bound = [b for b in _bound(s) if b]
        return frozenset(p for p in state if not (p & set(bound))) if bound else state
    at = {}

    def record(s, state):
        if not isinstance(s, tuple):
            at[id(s)] = at.get(id(s), frozenset()) | state
        return pairs(s, state)
    _flow(fn.body, frozenset(), record)
    held = {v for v in names if frozenset((v, obj)) in at.get(id(write), frozenset())}
    if not held:
        return set()
    # (name, the held name it took its object from): seeded when the write runs
    found = set()

    def stale(s, state):
        if isinstance(s, tuple):
            return frozenset(p for p in state if p[0] != s[1])
        reads = _read_names(s)
        found.update(o for w, o in state if w in reads)
        if s is write:                  # (its own reads run before it writes)
            state = state | {(v, v) for v in held}
        if isinstance(s, ir.Assign):
            x = s.target
            kept = frozenset(p for p in state if p[0] != x)
            if isinstance(s.value, str):
                kept |= {(x, o) for w, o in state if w == s.value}
            return kept
        bound = set(b for b in _bound(s) if b)
        return frozenset(p for p in state if p[0] not in bound) if bound else state
    _flow(fn.body, frozenset(), stale)
    return found


def _bound(s):
    from ..frontend.analysis import bound_names
    return bound_names(s)


def _read_names(s):
    """What a statement reads (an item write reads the object it writes into); for a compound
    statement only its own operands (the test, the bounds)."""
    out = set(s.reads())
    if isinstance(s, (ir.SetItem, ir.DelItem, ir.Mutate)) and isinstance(s.obj, str):
        out.add(s.obj)
    return out
