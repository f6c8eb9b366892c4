"""Inlining derived callees: a call of a user function becomes that function's body.

Used for ``jit=True``, where the forward and reverse sweeps are one numba function and a call into
another generated derivative (through its lazy stub) cannot be compiled; and in Python mode for
small callees called in a loop or with a loop of their own, among the functions the caller's code
names or is given fixed (``named``: the caller's cache key holds their code), where a derived call
per trip costs more than the callee's work and a derived callee's loop gets no argument types.  A call site classified
``derived`` is replaced by the callee's lowered IR: its variables renamed apart
(``_sum1_y`` for ``y`` of the first inlined ``_sum``), its parameters bound by plain assignments
to the call's arguments, functions and modules passed in fixed as constants
(``frontend/statics.py``: ``_sum(identity, x)`` calls ``identity`` itself, which is then inlined
in turn), and its single ``return`` (after ``jumps.structure``) an assignment to the call's
target.  The callee's lines keep their own origins, so the source map points into the callee.

Only what is plainly safe is inlined: a module-level Python function without closure, defaults
bound, *args or **kwargs, generators, or recursion; whose IR has only assignments, calls, item
writes, if/for/while and break/continue (no try, with, raise, del, closures or lazy iterators);
that reads its module's globals (the same dict as the caller's, so staleness checks still hold);
and whose namespace names agree with the caller's.  Anything else stays a derived call.
"""
import inspect
import types

from .. import ir
from ..frontend import jumps, statics
from ..frontend.analysis import bound_names
from ..frontend.lower import lower
from ..frontend.source import FunctionSource
from ..runtime.values import STATIC, static_value

_SIMPLE = (ir.Assign, ir.ExprStmt, ir.SetItem, ir.If, ir.For, ir.While, ir.Break, ir.Return)
_EXTRA_OK = {"augmented"}
MAX_DEPTH = 4
MAX_STATEMENTS = 400


MAX_NAMED_STATEMENTS = 60


def named_functions(pyfunc, param_kinds=()):
    """The plain Python functions ``pyfunc``'s code reads from its module's globals, and those
    passed in as fixed arguments (Python mode inlines only those: the derivative's cache key holds
    their code, see diskcache.entry_key)."""
    glb = getattr(pyfunc, "__globals__", None)
    code = getattr(pyfunc, "__code__", None)
    if glb is None or code is None:
        return set()
    out = {id(v) for n in code.co_names for v in [glb.get(n)] if type(v) is types.FunctionType}
    out.update(id(k[1]) for k in param_kinds if isinstance(k, tuple) and len(k) == 2 and
               k[0] == STATIC and type(k[1]) is types.FunctionType)
    return out


def expand(fn, depth=0, named=None):
    """Inline the derived call sites of ``fn`` (classified) that qualify; True if any was.
    ``named`` (Python mode): only callees among these ids, of at most MAX_NAMED_STATEMENTS
    statements, called inside a loop (a derived call per trip costs more than the work of a small
    callee) or that have a loop themselves (the caller's types then reach into it: a derived
    callee is specialised on value kinds only)."""
    counter = [0]
    taken = set(fn.params)
    for s in ir.walk(fn.body):
        taken.update(bound_names(s))
    changed = _block(fn.body, fn, taken, counter, (getattr(fn, "pyfunc", None),), named)
    return changed


def _block(stmts, fn, taken, counter, stack, named=None, in_loop=False):
    changed = False
    i = 0
    while i < len(stmts):
        s = stmts[i]
        loop = in_loop or isinstance(s, (ir.For, ir.While))
        for b in ir.children(s):
            changed |= _block(b, fn, taken, counter, stack, named, loop)
        new = _inline_site(s, fn, taken, counter, stack, named, in_loop) \
            if isinstance(s, ir.Assign) else None
        if new is not None:
            stmts[i:i + 1] = new
            i += len(new)
            changed = True
        else:
            i += 1
    return changed


def _qualifies(callee, stack):
    if type(callee) is not types.FunctionType or callee.__closure__ or callee in stack:
        return False
    code = callee.__code__
    if code.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_VARARGS |
                        inspect.CO_VARKEYWORDS | inspect.CO_ASYNC_GENERATOR):
        return False
    return len(stack) <= MAX_DEPTH


def _simple(block):
    for s in ir.walk(block):
        if not isinstance(s, _SIMPLE):
            return False
        if isinstance(s, ir.SetItem) and s.attr is not None:
            return False
        call = s.value if isinstance(s, ir.Assign) else s.call if isinstance(s, ir.ExprStmt) \
            else None
        if isinstance(call, ir.Call) and set(call.extra) - _EXTRA_OK:
            return False
    return True


def lower_callee(callee):
    """The IR of a user function a call recurses into (lowered, its jumps structured), or None:
    one whose closure holds data, or that cannot be lowered (its own build reports why)."""
    try:
        src = FunctionSource(callee)
        if src.data_cells:
            return None
        body_fn = lower(src)
        jumps.structure(body_fn)
    except Exception:
        return None
    return body_fn


def static_kinds(args):
    """The kinds ``statics.bind`` takes for a call's arguments: functions and modules passed in
    are fixed, anything else is not known."""
    return [(STATIC, a.value) if isinstance(a, ir.Const) and static_value(a.value) else "?"
            for a in args]


def _inline_site(s, fn, taken, counter, stack, named=None, in_loop=False):
    call = s.value
    if not (isinstance(call, ir.Call) and call.cls == "derived"):
        return None
    callee = call.info.get("callee")
    if named is not None and id(callee) not in named:
        return None
    pyfunc = getattr(fn, "pyfunc", None)
    if not _qualifies(callee, stack) or pyfunc is None or \
            callee.__globals__ is not pyfunc.__globals__:
        return None
    body_fn = lower_callee(callee)
    if body_fn is None:                  # (what cannot be lowered stays a derived call)
        return None
    args = call.info["callargs"]
    if len(args) != len(body_fn.params) or not body_fn.body or \
            not isinstance(body_fn.body[-1], ir.Return) or \
            sum(1 for _ in ir.walk(body_fn.body)) > \
            (MAX_STATEMENTS if named is None else MAX_NAMED_STATEMENTS) or \
            not _simple(body_fn.body[:-1]):
        return None
    if named is not None and not in_loop and \
            not any(isinstance(x, (ir.For, ir.While)) for x in ir.walk(body_fn.body)):
        return None
    for name, value in body_fn.namespace.items():
        if name in fn.namespace and fn.namespace[name] is not value:
            return None
    glb, refs = getattr(body_fn, "global_refs", (None, ()))
    own_glb, own_refs = getattr(fn, "global_refs", (None, ()))
    if refs and own_glb is not None and glb is not own_glb:
        return None
    # functions and modules passed in are constants inside
    statics.bind(body_fn, static_kinds(args))
    counter[0] += 1
    base = callee.__name__.lstrip("_")
    base = base if base.isidentifier() else "f"         # (a lambda: <lambda>)
    prefix = f"_{base}{counter[0]}_"
    names = set(body_fn.params)
    for st in ir.walk(body_fn.body):
        names.update(bound_names(st))
        if isinstance(st, (ir.For, ir.While)) and st.brk:
            names.add(st.brk)
    ren = {}
    for v in sorted(names):
        new = prefix + v.lstrip("_")
        while new in taken:
            new = "_" + new
        ren[v] = new
        taken.add(new)
    _rename_block(body_fn.body, ren)
    ret = body_fn.body[-1]
    out = []
    for p, a in zip(body_fn.params, args):
        if isinstance(a, ir.Const) and static_value(a.value):
            continue                     # (substituted where it is read)
        out.append(ir.Assign(ren[p], a, s.origin))
    out += body_fn.body[:-1]
    out.append(ir.Assign(s.target, ret.value, ret.origin))
    fn.namespace.update(body_fn.namespace)
    if own_glb is not None and refs:
        fn.global_refs = (own_glb, tuple(own_refs) + tuple(refs))
    return out


def _rename_call(call, ren):
    call.args = [ir.map_vars(a, ren) for a in call.args]
    call.kwargs = [(k, ir.map_vars(a, ren)) for k, a in call.kwargs]
    if isinstance(call.fn, ir.Dynamic):
        call.fn = ir.Dynamic(ren.get(call.fn.var, call.fn.var))
    if "augmented" in call.extra:
        call.extra["augmented"] = ren.get(call.extra["augmented"], call.extra["augmented"])


def _rename_block(stmts, ren):
    for s in stmts:
        if isinstance(s, ir.Assign):
            s.target = ren.get(s.target, s.target)
            if isinstance(s.value, ir.Call):
                _rename_call(s.value, ren)
            else:
                s.value = ir.map_vars(s.value, ren)
        elif isinstance(s, ir.ExprStmt):
            _rename_call(s.call, ren)
        elif isinstance(s, ir.SetItem):
            s.obj = ren.get(s.obj, s.obj)
            s.index = ir.map_vars(s.index, ren)
            s.value = ir.map_vars(s.value, ren)
        elif isinstance(s, ir.Return):
            s.value = ir.map_vars(s.value, ren)
        elif isinstance(s, ir.If):
            s.test = ir.map_vars(s.test, ren)
        elif isinstance(s, ir.For):
            s.target = ren.get(s.target, s.target)
            s.start, s.stop, s.step = (ir.map_vars(p, ren) for p in (s.start, s.stop, s.step))
            if s.brk:
                s.brk = ren.get(s.brk, s.brk)
        elif isinstance(s, ir.While):
            s.test = ir.map_vars(s.test, ren)
            if s.brk:
                s.brk = ren.get(s.brk, s.brk)
        for b in ir.children(s):
            _rename_block(b, ren)
