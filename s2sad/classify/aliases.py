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
