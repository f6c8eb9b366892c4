"""Names of one object: plain copies (``b = a``), the call that binds a name, calls that
return a view (memory shared with an operand), and calls that may return their operand itself
(:func:`returned_operand`, from frontend.analysis, whose written_arrays asks it too)."""
import operator

from .. import ir
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
    """A view call, less a slice of a list or tuple (a new list)."""
    return _is_view_call(call) and not (
        isinstance(call.fn, ir.Static) and call.fn.obj is operator.getitem and
        len(call.args) == 2 and isinstance(call.args[0], str) and
        getattr(fn, "kinds", {}).get(call.args[0]) == "c" and isinstance(call.args[1], ir.Index)
        and any(isinstance(p, ir.Slice) for p in call.args[1].parts))


_VIEW_NAMES = {"T", "mT", "real", "imag", "reshape", "view", "transpose", "swapaxes", "squeeze",
               "ravel", "diagonal", "__getitem__"}
