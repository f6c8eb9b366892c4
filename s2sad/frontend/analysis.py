"""Analyses over the IR, each a small pass: value kinds, activity, definitions, aliasing.

All are flow-insensitive over variable names (conservative, simple, and enough for the emitters).
"""
from .. import ir
from ..runtime import _is_array

# value kinds: 'f' Python real scalar, 'a' array (NumPy/CuPy, incl. NumPy scalars),
# 'c' container (tuple/list/dict), 'i' integer/bool/None/str (never differentiable), '?' unknown,
# 'o' an object whose class defines operators in Python (else like '?')
_CONTAINERS = {tuple: "c", list: "c", dict: "c"}


def kind_of_value(v):
    t = type(v)
    if t is float:
        return "f"
    if t is int or t is bool or v is None or t is str:
        return "i"
    if t in _CONTAINERS:
        return "c"
    if _is_array(v):
        return "a"
    if t is complex:
        return "z"
    return "?"


def join(a, b):
    if a is None:
        return b
    if b is None or a == b:
        return a
    if {a, b} == {"?", "o"}:
        # an object with Python operators, or not yet known: operators on it are decided at
        # run time either way (that is all "o" changes)
        return "o"
    return "?"


def operand_kind(op, kinds):
    if isinstance(op, str):
        return kinds.get(op, "?")
    if isinstance(op, ir.Const):
        return kind_of_value(op.value)
    return "?"


def param_names(fn):
    return list(fn.params)


def definitions(fn):
    """var -> number of places that bind it (params count once; loop targets too)."""
    counts = {p: 1 for p in fn.params}
    for s in ir.walk(fn.body):
        for t in bound_names(s):
            counts[t] = counts.get(t, 0) + 1
    return counts


def _mutated(s):
    """The object a method call may update (``obj.m(...)`` on an object), or None."""
    call = s.value if isinstance(s, ir.Assign) else s.call if isinstance(s, ir.ExprStmt) else None
    if isinstance(call, ir.Call) and call.info:
        return call.info.get("mutates")
    return None


def bound_names(s):
    """Names a statement (re)binds."""
    if isinstance(s, ir.Assign):
        m = _mutated(s)
        return [s.target, m] if m else [s.target]
    if isinstance(s, ir.ExprStmt):
        m = _mutated(s)
        return [m] if m else []
    if isinstance(s, ir.For):
        return [s.target]
    if isinstance(s, ir.Mutate):
        return [s.target] if s.target else []
    if isinstance(s, ir.With):
        return [v for _, v in s.items if v]
    if isinstance(s, ir.Try):
        return [v for _, v, _ in s.handlers if v]
    return []


def top_level_defs(fn):
    """Variables bound by a statement directly in the function body (not under if/loop)."""
    return {s.target for s in fn.body if isinstance(s, ir.Assign)}


def positions(fn):
    """Statement id -> (index in program order, ids of the loops around it)."""
    pos = {}

    def walk(block, loops):
        for s in block:
            pos[id(s)] = (len(pos), loops)
            inner = loops | {id(s)} if isinstance(s, (ir.For, ir.While)) else loops
            for b in ir.children(s):
                walk(b, inner)
    walk(fn.body, frozenset())
    return pos


def may_run_after(pos, first, later):
    """Whether statement ``later`` can run after statement ``first`` (later in program order, or
    both inside one loop)."""
    i, li = pos[id(first)]
    j, lj = pos[id(later)]
    return j > i or bool(li & lj)


def building(s):
    """Whether ``s`` puts an item into the list or dict a comprehension makes: a new object that
    nothing else sees until it is made (not a change of anything another name holds; in a
    loop, each pass makes a new one)."""
    return isinstance(s, ir.SetItem) and s.building or \
        isinstance(s, ir.Mutate) and bool(s.call.extra.get("building"))


def mutations(fn):
    """(statement, variable it changes in place) for every in-place change (not those that build
    a comprehension's result: :func:`building`)."""
    out = []
    for s in ir.walk(fn.body):
        if building(s):
            continue
        if isinstance(s, (ir.SetItem, ir.DelItem, ir.Mutate)):
            out.append((s, s.obj))
        elif _mutated(s):
            out.append((s, _mutated(s)))
    return out


def changed_in_place(fn):
    """Variables a statement may change in place: those of :func:`mutations`, and the arguments
    of calls into Python code other than operators (such a call may change them)."""
    found = {v for _, v in mutations(fn) if isinstance(v, str)}
    for s in ir.walk(fn.body):
        call = s.value if isinstance(s, ir.Assign) else s.call if isinstance(s, ir.ExprStmt) else None
        if isinstance(call, ir.Call) and call.info and call.cls in ("dynamic", "derived") and \
                not call.info.get("operator"):
            found.update(a for a in call.args if isinstance(a, str))
    return found


# -- calls that may return their operand's object ------------------------------------------------
# NumPy returns the operand itself (or a view of it) from these when there is nothing to convert:
# ``a.astype(a.dtype, copy=False)`` is ``a``, ``a.conj()`` of a real array is ``a``,
# ``np.array(a, copy=None)`` is ``a``, ``np.real_if_close(a)`` is ``a`` unless ``a`` is complex,
# ``np.diag`` of a matrix is a view of its diagonal.  Their rules do not say ``view`` (the result is
# a new array as often as not), so an analysis that asks only ``rule.view`` takes the result for a
# new object and a write into one name is not seen through the other.  Every analysis of which
# names share an object asks :func:`returned_operand` (classify.objects: the run-time checks of
# writes; classify.writes: ``a op= v``; written_arrays below: what the reverse sweep saves by
# copy; codegen.jit: numba's versions copy).
#
# name -> None (always may), or (keyword, index in call.args) of a ``copy=`` parameter: then only
# when it is given and is not a constant true value (``copy=False``, ``copy=None``, a variable)
_MAY_RETURN_SELF = {                 # methods: the receiver (call.args[0])
    "astype": ("copy", 5),           # a.astype(dtype, order, casting, subok, copy)
    "conj": None,                    # a real or integer array's conj() is the array itself
    "conjugate": None,
    "__array__": None,
}
_MAY_RETURN_FIRST = {                # NumPy / CuPy functions: the first argument
    "array": ("copy", None),         # np.array(a, copy=False / None): a, if no conversion
    "real": None,                    # np.real(a) of a real array: a itself
    "imag": None,                    # np.imag(z) of a complex array: a view
    "real_if_close": None,           # a itself unless complex
    "diag": None,                    # np.diag of a 2-D array: a view of its diagonal
    "diagonal": None,                # np.linalg.diagonal: a view
}


def _array_library_function(obj):
    """The name of a NumPy or CuPy function (np.array, cupy.real...), else None."""
    mod = getattr(obj, "__module__", None)
    name = getattr(obj, "__name__", None)
    if not isinstance(mod, str) or not isinstance(name, str) or \
            mod.split(".")[0] not in ("numpy", "cupy"):
        return None
    return name


def _may_not_copy(call, how):
    if how is None:
        return True
    key, index = how
    given = [v for k, v in call.kwargs if k == key]
    if not given and index is not None and len(call.args) > index:
        given = [call.args[index]]
    if not given:
        return False                                     # (copy=True by default)
    v = given[0]
    return not (isinstance(v, ir.Const) and v.value is not None and bool(v.value))


def returned_operand(call):
    """The name of the operand whose object (or memory) ``call``'s result may be, for the calls
    that return their operand itself only sometimes (see the table above); else None.  (Calls
    that always return a view, ``rule.view`` and classify.aliases._is_view_call, are not
    answered here.)"""
    if not isinstance(call, ir.Call) or not call.args or not isinstance(call.args[0], str):
        return None
    fn = call.fn
    if isinstance(fn, ir.Method):
        how = _MAY_RETURN_SELF.get(fn.name, False)
    elif isinstance(fn, ir.Static):
        name = _array_library_function(fn.obj)
        how = _MAY_RETURN_FIRST.get(name, False) if name is not None else False
    else:
        return None
    if how is False or not _may_not_copy(call, how):
        return None
    return call.args[0]


def written_arrays(fn, classes=False, types=None):
    """Variables that may share memory with an array or container changed in place (``x[i] = v``,
    ``l.append(v)``, ``l.reverse()``); with
    ``classes``, a dict from each such variable to a name for its sharing class.  ``types``
    (classify/types.py, where known): a variable typed a number shares memory with nothing (the
    index ``i + 1`` of ``u[i + 1]``, the element it reads)."""
    number = {v for v, t in (types or {}).items() if t is not None and t[0] == "s"}
    # every in-place change counts: item writes, list/dict methods with rules (``Mutate``) and
    # method calls that may update their receiver (``l.reverse()``, ``l.sort()``, ``o.add(v)``)
    written = {obj for _, obj in mutations(fn) if isinstance(obj, str)}
    if not written:
        return {} if classes else set()
    # union variables connected by copies and view-producing calls
    parent = {}

    def find(a):
        while parent.get(a, a) != a:
            a = parent[a]
        return a

    def union(a, b):
        if a in number or b in number:
            return
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[ra] = rb

    for s in ir.walk(fn.body):
        if isinstance(s, ir.Assign):
            if isinstance(s.value, str):
                union(s.target, s.value)
            elif isinstance(s.value, ir.Call) and s.value.info is not None and s.value.info.get("view"):
                for v in s.value.reads():
                    union(s.target, v)
            elif isinstance(s.value, ir.Call) and returned_operand(s.value) is not None:
                union(s.target, s.value.args[0])      # (a.astype(t, copy=False): a, at times)
    roots = {find(w) for w in written}
    allvars = set(parent) | written
    for s in ir.walk(fn.body):
        if isinstance(s, ir.Assign):
            allvars.add(s.target)
    allvars -= number - written
    if classes:
        return {v: find(v) for v in allvars if find(v) in roots}
    return {v for v in allvars if find(v) in roots}


def diff_reads(stmt):
    """Variables whose derivative can flow into the statement's result."""
    if isinstance(stmt, ir.Assign):
        v = stmt.value
        if isinstance(v, ir.Call):
            info = v.info or {}
            return info.get("diff_vars", [])
        return ir.operand_vars(v)
    if isinstance(stmt, ir.SetItem):
        return ir.operand_vars(stmt.value) + ir.operand_vars(stmt.obj)
    return []


def diff_reads_call(s):
    call = s.value if isinstance(s, ir.Assign) else s.call
    return (call.info or {}).get("diff_vars", call.reads())


from ..runtime.containers import IN_PLACE_METHODS  # noqa: E402,F401 (list/dict methods that change their object)


def in_place_call(s):
    """(receiver, call) for a call that may change its receiver and is not a ``Mutate``
    statement: a container method (``d.update(k=v)``, ``xs.sort()``) or a method of an object
    (``acc.add(v)``); else None."""
    call = s.value if isinstance(s, ir.Assign) else s.call if isinstance(s, ir.ExprStmt) else None
    if not isinstance(call, ir.Call):
        return None
    if isinstance(call.fn, ir.Method) and call.fn.name in IN_PLACE_METHODS and call.args and \
            isinstance(call.args[0], str):
        return call.args[0], call
    if call.info and call.info.get("mutates"):
        return call.info["mutates"], call
    return None


def activity(fn, active_params):
    """Active variables: varied (depend on an active input) and useful (reach the output).

    Beyond data flow through assignments: an in-place change (``x[i] = v``, ``xs.append(v)``,
    ``acc.add(v)``, ``d.update(k=v)``) makes its receiver varied by what it writes and what it
    writes useful when the receiver is; a user function or method called for its effect with
    varied arguments uses them (its derivative is built, so a write into an argument is refused
    or followed, never silently dropped)."""
    varied = set(active_params)
    changed = True
    stmts = list(ir.walk(fn.body))
    while changed:
        changed = False
        for s in stmts:
            if isinstance(s, ir.Assign) and s.target not in varied:
                if any(v in varied for v in diff_reads(s)):
                    varied.add(s.target)
                    changed = True
            elif isinstance(s, ir.SetItem) and isinstance(s.obj, str) and s.obj not in varied:
                if any(v in varied for v in ir.operand_vars(s.value)):
                    varied.add(s.obj)
                    changed = True
            elif isinstance(s, ir.Mutate):
                if s.obj not in varied and any(v in varied for v in s.call.reads()):
                    varied.add(s.obj)
                    changed = True
                if s.target and s.target not in varied and s.obj in varied:
                    varied.add(s.target)
                    changed = True
            ip = in_place_call(s)
            if ip is not None and ip[0] not in varied and any(v in varied for v in ip[1].reads()):
                varied.add(ip[0])
                changed = True
    useful = set()
    for s in stmts:
        if isinstance(s, ir.Return):
            useful.update(ir.operand_vars(s.value))
        if isinstance(s, ir.ExprStmt) and s.call.cls in ("derived", "dynamic"):
            useful.update(v for v in s.call.reads() if v in varied)
    changed = True
    while changed:
        changed = False
        for s in stmts:
            new = ()
            if isinstance(s, ir.Assign) and s.target in useful:
                new = diff_reads(s)
            elif isinstance(s, ir.SetItem) and s.obj in useful:
                new = ir.operand_vars(s.value)
            elif isinstance(s, ir.Mutate) and (s.obj in useful or (s.target and s.target in useful)):
                new = s.call.reads()
            ip = in_place_call(s)
            if ip is not None and ip[0] in useful:
                new = list(new) + ip[1].reads()
            new = [v for v in new if v not in useful]
            if new:
                useful.update(new)
                changed = True
    return varied & useful, varied


def upward_exposed(body, v):
    """True when the loop body may read ``v`` before (re)defining it in the same iteration."""
    return _exposed(body, v)[0]


def _exposed(block, v):
    """(may read v before defining it, defines v on every path)."""
    for s in block:
        if isinstance(s, ir.Assign):
            if v in s.reads():
                return True, False
            if s.target == v:
                return False, True
        elif isinstance(s, (ir.SetItem, ir.DelItem, ir.Mutate)):
            if v == s.obj or v in s.reads():
                return True, False
            if isinstance(s, ir.Mutate) and s.target == v:
                return False, True
        elif isinstance(s, ir.With):
            if v in s.reads():
                return True, False
            e, d = _exposed(s.body, v)
            if e:
                return True, False
            if d:
                return False, True
        elif isinstance(s, ir.Try):
            if any(_exposed(b, v)[0] for b in ir.children(s)):
                return True, False
        elif isinstance(s, ir.If):
            if v in s.reads():
                return True, False
            e1, d1 = _exposed(s.body, v)
            e2, d2 = _exposed(s.orelse, v)
            if e1 or e2:
                return True, False
            if d1 and d2:
                return False, True
        elif isinstance(s, ir.For):
            if v in s.reads() or _exposed(s.body, v)[0]:
                return True, False
        elif isinstance(s, ir.While):
            e, d = _exposed(s.test_body, v)
            if e or v in s.reads():
                return True, False
            if d:
                return False, True
            if _exposed(s.body, v)[0]:
                return True, False
        elif v in s.reads():
            return True, False
    return False, False


def _reads_deep(s):
    out = set(s.reads())
    if isinstance(s, ir.SetItem):
        out.add(s.obj)
    for b in ir.children(s):
        for t in ir.walk(b):
            out.update(t.reads())
            if isinstance(t, ir.SetItem):
                out.add(t.obj)
    return out


def defined_in(block):
    out = set()
    for s in ir.walk(block):
        out.update(bound_names(s))
        if isinstance(s, (ir.SetItem, ir.Mutate, ir.DelItem)) and isinstance(s.obj, str):
            out.add(s.obj)
    return out


def read_in(block):
    out = set()
    for s in ir.walk(block):
        out.update(s.reads())
        if isinstance(s, (ir.SetItem, ir.Mutate, ir.DelItem)) and isinstance(s.obj, str):
            out.add(s.obj)
    return out


# -- in-place changes and re-made iterators (classify/: mutation, iterators, writes, closures) --
def _made_again_before(chains, made, s, t):
    """Whether every way from statement ``s`` to ``t`` runs ``made`` first (``t`` comes after
    ``made`` in the block that holds ``made``, and ``s`` is not between them there): then ``t``
    reads an iterator made after ``s`` (in a loop, the next round's)."""
    block, k_made = chains[id(made)][-1]
    k_t = next((k for b, k in chains[id(t)] if b == block), None)
    if k_t is None or k_t <= k_made:
        return False
    k_s = next((k for b, k in chains[id(s)] if b == block), None)
    return k_s is None or k_s > k_t or k_s < k_made


# methods that leave their object as it is (on lists, dicts, arrays)
_READ_ONLY_METHODS = {"copy", "index", "count", "get", "keys", "values", "items", "astype", "item",
                      "tolist", "sum", "mean", "prod", "max", "min", "argmax", "argmin", "argsort",
                      "all", "any", "cumsum", "cumprod", "std", "var", "dot", "conj", "conjugate",
                      "round", "reshape", "ravel", "flatten", "transpose", "swapaxes", "squeeze",
                      "diagonal", "trace", "nonzero", "searchsorted", "view", "repeat", "take",
                      "ptp", "__len__", "__getitem__", "__contains__", "__iter__", "__reversed__"}


def _changed_in_place(fn, s):
    """(the operand statement ``s`` may change in place, how) or (None, None): an item or
    attribute write, ``del``, a method that changes its object, ``a op= v`` on a value that
    may be an array or a list (s2sad rebinds the name; Python changes the object)."""
    if building(s):
        return None, None       # (a comprehension's own result, seen by nothing until made)
    if isinstance(s, (ir.SetItem, ir.Mutate, ir.DelItem)):
        return s.obj, "write"
    m = _mutated(s)
    if m is not None:
        call = s.value if isinstance(s, ir.Assign) else s.call
        if isinstance(call.fn, ir.Method) and call.fn.name in _READ_ONLY_METHODS:
            return None, None
        # (a method of a user class that changes what its object holds, ``self.items.sort()``,
        # is refused where the method itself is differentiated: a write into an argument)
        return m, "method"
    call = s.value if isinstance(s, ir.Assign) else None
    if isinstance(call, ir.Call) and "augmented" in call.extra and call.args and \
            isinstance(call.args[0], str) and \
            getattr(fn, "kinds", {}).get(call.args[0]) not in ("f", "i", "z"):
        return call.args[0], "augmented"
    return None, None

def scalar_isinstance_site(fn):
    """The first statement of the IR function ``fn`` that tests ``isinstance(v, C)`` against a
    number class C (``int``, ``float``, ``bool``, ``complex``, the ``numbers`` ABCs, NumPy's
    scalar types) or a class known only when it runs; None if there is none.  Python and numba
    may disagree on it: a bool is no ``int`` to numba, a NumPy ``int64`` or ``float32`` is an
    ``int`` or a ``float``."""
    for s in ir.walk(fn.body):
        call = s.value if isinstance(s, ir.Assign) else s.call if isinstance(s, ir.ExprStmt) \
            else None
        if not (isinstance(call, ir.Call) and isinstance(call.fn, ir.Static) and
                call.fn.obj is isinstance and len(call.args) == 2):
            continue
        cls = call.args[1]
        if isinstance(cls, ir.Const) and not _number_class(cls.value):
            continue
        return s
    return None


def _number_class(c):
    """Whether the class (or tuple of classes) ``c`` holds a number class on which Python's and
    numba's isinstance may disagree."""
    import numbers
    import numpy as np
    if type(c) is tuple:
        return any(_number_class(x) for x in c)
    return c in (int, float, complex, bool) or isinstance(c, type) and (
        issubclass(c, np.generic) or c in (numbers.Number, numbers.Complex, numbers.Real,
                                           numbers.Rational, numbers.Integral))


_NUMBA_CHECKED = set()          # code objects of numba-compiled functions found free of such tests


def check_numba_isinstance(py, fn):
    """Refuse ``py``, a function the user compiled with ``numba.njit`` (``fn``: its IR), when it
    tests ``isinstance`` against a number class (:func:`scalar_isinstance_site`): the user's
    compiled function runs with numba's answer, a derivative built from the Python source would
    follow Python's, which may be the other branch.  (classify.inline.check_numba_callee lowers
    the function where its caller has no IR.)"""
    code = getattr(py, "__code__", None)
    if code is None or code in _NUMBA_CHECKED:
        return
    s = scalar_isinstance_site(fn)
    if s is not None:
        from ..errors import UnsupportedSyntaxError
        raise UnsupportedSyntaxError(
            f"{py.__name__} is compiled by numba, which decides `isinstance` against a number "
            f"class by its own types (a bool is no int to it, a NumPy int64 or float32 is an int "
            f"or a float); the derivative, built from the Python source, would follow Python's "
            f"answer, which may be the other branch", origin=s.origin,
            fix="test what numba and Python agree on (e.g. pass the choice as a separate "
                "argument of one type), or differentiate the function without numba.njit")
    _NUMBA_CHECKED.add(code)
