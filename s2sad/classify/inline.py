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
# (consumer: a _rt.here cursor and the call it feeds, which are inlined together)
_EXTRA_OK = {"augmented", "augmented_item", "building", "consumer"}
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
    closures = _closures(fn) if named is None else {}
    changed = _block(fn.body, fn, taken, counter, (getattr(fn, "pyfunc", None),), named,
                     closures=closures)
    if closures:
        _drop_unused_makers(fn, closures)
    return changed


def _block(stmts, fn, taken, counter, stack, named=None, in_loop=False, closures=None):
    changed = False
    i = 0
    while i < len(stmts):
        s = stmts[i]
        loop = in_loop or isinstance(s, (ir.For, ir.While))
        for b in ir.children(s):
            changed |= _block(b, fn, taken, counter, stack, named, loop, closures)
        new = None
        if isinstance(s, ir.Assign):
            new = _inline_closure_site(s, fn, taken, counter, closures) if closures else None
            if new is None:
                new = _inline_site(s, fn, taken, counter, stack, named, in_loop)
        if new is not None:
            stmts[i:i + 1] = new
            i += len(new)
            changed = True
        else:
            i += 1
    return changed


# code flags of functions never inlined: generators, coroutines, *args, **kwargs
_NOT_INLINED = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_VARARGS | \
    inspect.CO_VARKEYWORDS | inspect.CO_ASYNC_GENERATOR


def _qualifies(callee, stack):
    if type(callee) is not types.FunctionType or callee.__closure__ or callee in stack:
        return False
    if callee.__code__.co_flags & _NOT_INLINED:
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


def check_numba_callee(py):
    """Refuse ``py``, the Python function of a ``numba.njit`` dispatcher, when it tests
    ``isinstance`` against a number class (frontend.analysis.check_numba_isinstance); checked
    once per function, wherever it is reached (the API, a call site), since a derivative of the
    same Python function built without numba in the way may be cached."""
    from ..frontend import analysis
    if getattr(py, "__code__", None) in analysis._NUMBA_CHECKED:
        return
    body = lower_callee(py)
    if body is not None:
        analysis.check_numba_isinstance(py, body)


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
    if not _fits(body_fn, args, fn, MAX_STATEMENTS if named is None else MAX_NAMED_STATEMENTS):
        return None
    if named is not None and not in_loop and \
            not any(isinstance(x, (ir.For, ir.While)) for x in ir.walk(body_fn.body)):
        return None
    # functions and modules passed in are constants inside
    statics.bind(body_fn, static_kinds(args))
    return _splice(s, fn, body_fn, args, callee.__name__, taken, counter)


def _fits(body_fn, args, fn, limit):
    """``body_fn`` (a lowered callee) can replace a call with ``args`` in ``fn``: one parameter
    per argument, a body of at most ``limit`` plain statements (:func:`_simple`) ending in its
    one ``return``, and namespace names and module globals that agree with fn's."""
    if len(args) != len(body_fn.params) or not body_fn.body or \
            not isinstance(body_fn.body[-1], ir.Return) or \
            sum(1 for _ in ir.walk(body_fn.body)) > limit or not _simple(body_fn.body[:-1]):
        return False
    for name, value in body_fn.namespace.items():
        if name in fn.namespace and fn.namespace[name] is not value:
            return False
    glb, refs = getattr(body_fn, "global_refs", (None, ()))
    own_glb = getattr(fn, "global_refs", (None, ()))[0]
    return not (refs and own_glb is not None and glb is not own_glb)


def _splice(s, fn, body_fn, args, name, taken, counter):
    """The statements that replace the call site ``s``: ``body_fn``'s (lowered, checked) body,
    its variables renamed apart, its parameters bound to ``args``, its return assigned to s's
    target."""
    refs = getattr(body_fn, "global_refs", (None, ()))[1]
    own_glb, own_refs = getattr(fn, "global_refs", (None, ()))
    counter[0] += 1
    base = name.lstrip("_")
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


# -- local closures (jit=True) ------------------------------------------------------------------
# A nested ``def``/``lambda`` called by its own name (``def rhs(y): return -k * y`` ... ``rhs(y)``)
# reads what it captured when it is called (late binding): its body inlined at the call, with the
# captured variables bound to the enclosing ones as they are there, computes the same.  numba
# cannot compile the dynamic call, so without this a local right-hand side made the whole
# derivative run as Python.  Only a closure bound once, without default values, that writes no
# captured variable (``nonlocal``), whose name is read only as the callee of direct calls, whose
# captured variables are exactly the enclosing function's locals it reads, and none of which a
# method or an attribute write changes in place (``l.insert(...)``, ``o.v = 1.0``).
def _closures(fn):
    """{name: (the making statement, the closure's code object)} of the local closures of
    ``fn`` that qualify (above)."""
    from .. import runtime
    pyfunc = getattr(fn, "pyfunc", None)
    code = getattr(pyfunc, "__code__", None)
    if code is None:
        return {}
    makers, bound, other_reads, mutated = {}, {}, set(), set()
    for s in ir.walk(fn.body):
        if isinstance(s, ir.Mutate) or (isinstance(s, ir.SetItem) and s.attr is not None):
            mutated.add(s.obj)                  # (l.insert(...), o.v = ..., setattr(o, 'v', ...))
        for v in bound_names(s):
            bound[v] = bound.get(v, 0) + 1
        call = s.value if isinstance(s, ir.Assign) else s.call if isinstance(s, ir.ExprStmt) \
            else None
        if isinstance(s, ir.Assign) and isinstance(call, ir.Call) and \
                isinstance(call.fn, ir.Static) and call.fn.obj is runtime.make_closure:
            makers[s.target] = s
        reads = _stmt_reads(s)
        if isinstance(call, ir.Call) and isinstance(call.fn, ir.Dynamic):
            reads = [v for v in reads if v != call.fn.var] + \
                [v for a in call.args for v in ir.operand_vars(a) if v == call.fn.var] + \
                [v for _, a in call.kwargs for v in ir.operand_vars(a) if v == call.fn.var]
        other_reads.update(reads)
    out = {}
    for name, s in makers.items():
        keys = s.value.args[0].value if isinstance(s.value.args[0], ir.Const) else None
        if bound.get(name) != 1 or name in other_reads or name in fn.params or \
                not isinstance(keys, tuple) or any(k.endswith("=") for k in keys):
            continue
        held = [a for a in s.value.args[1:] if isinstance(a, str)]
        if mutated.intersection(held):
            # (its body bound to a list or an object changed in place later: the alias that
            # binding makes is refused, where the call kept as it is runs as Python mode does)
            continue
        nested = _nested_code(code, s.value.extra.get("name") or "<lambda>", s.origin)
        if nested is None or set(nested.co_freevars) != set(keys) or _writes_cells(nested):
            continue
        out[name] = (s, nested)
    return out


def _stmt_reads(s):
    if isinstance(s, ir.Assign):
        return s.value.reads() if isinstance(s.value, ir.Call) else ir.operand_vars(s.value)
    if isinstance(s, ir.ExprStmt):
        return s.call.reads()
    if isinstance(s, ir.SetItem):
        return [s.obj] + ir.operand_vars(s.index) + ir.operand_vars(s.value)
    if isinstance(s, ir.Return):
        return ir.operand_vars(s.value)
    if isinstance(s, (ir.If, ir.While)):
        return ir.operand_vars(s.test)
    if isinstance(s, ir.For):
        return [v for p in (s.start, s.stop, s.step) for v in ir.operand_vars(p)]
    return []


def _nested_code(code, name, origin):
    """The code object of the closure named ``name`` defined at ``origin``'s line directly in
    ``code``, if exactly one is."""
    line = getattr(origin, "line", None)
    if getattr(origin, "file", None) != code.co_filename:     # (made in an inlined callee)
        return None
    hits = [c for c in code.co_consts if isinstance(c, types.CodeType) and c.co_name == name and
            c.co_firstlineno == line]
    return hits[0] if len(hits) == 1 else None


def _writes_cells(code):
    import dis
    return any(ins.opname in ("STORE_DEREF", "DELETE_DEREF") for ins in dis.get_instructions(code))


def _inline_closure_site(s, fn, taken, counter, closures):
    call = s.value
    if not (isinstance(call, ir.Call) and isinstance(call.fn, ir.Dynamic) and
            call.fn.var in closures and not call.kwargs and not set(call.extra) - {"captured"}):
        return None
    make, code = closures[call.fn.var]
    if code.co_flags & _NOT_INLINED:
        return None
    cells = tuple(types.CellType() for _ in code.co_freevars)     # (empty: data parameters)
    callee = types.FunctionType(code, fn.pyfunc.__globals__, code.co_name, None, cells)
    try:
        src = FunctionSource(callee)
        body_fn = lower(src)
        jumps.structure(body_fn)
    except Exception:                    # (what cannot be lowered stays a call)
        return None
    if list(src.data_cells) != list(code.co_freevars):
        return None
    held = dict(zip(make.value.args[0].value, make.value.args[1:]))    # (cell -> enclosing var)
    args = [held[v] for v in code.co_freevars] + list(call.args)    # (captured: as they are now)
    if not _fits(body_fn, args, fn, MAX_STATEMENTS):
        return None
    return _splice(s, fn, body_fn, args, code.co_name, taken, counter)


def _drop_unused_makers(fn, closures):
    """Remove the making statements of the closures no call reads any more (all inlined)."""
    read = set()
    for s in ir.walk(fn.body):
        read.update(_stmt_reads(s))
    gone = {id(make) for name, (make, _) in closures.items() if name not in read}
    if gone:
        _remove(fn.body, gone)


def _remove(stmts, gone):
    stmts[:] = [s for s in stmts if id(s) not in gone]
    for s in stmts:
        for b in ir.children(s):
            _remove(b, gone)


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
