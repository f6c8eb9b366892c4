"""After activity analysis (:func:`finish`): the in-place checks (:mod:`.mutation`), writes of
values that carry a derivative through ``global``/``nonlocal``, keywords and parameters a rule
has no derivative for, and sites with no argument that carries one marked ``inactive``; then the
key-read guards (:mod:`.keys`)."""
import collections
import operator

from .. import ir, runtime
from ..errors import RUNTIME_CALL_SECOND_ORDER, RuleError, UnsupportedSyntaxError
from .keys import _guard_key_reads
from .mutation import check_mutation


def finish(fn, active, varied):
    """After activity analysis: mark sites with no active argument ``inactive``, check that
    rules support the keywords given on active calls, and refuse writes of values that carry a
    derivative through ``global``/``nonlocal``, into arguments, or through aliases."""
    check_mutation(fn, varied)
    _augmented_sequences(fn)
    for s in ir.walk(fn.body):
        if isinstance(s, ir.With):
            for ctx, var in s.items:
                if var is not None and any(v in varied for v in ir.operand_vars(ctx)):
                    # (``with Scope(x) as s``: the value is ``__enter__``'s, which s2sad does not
                    # differentiate; it was taken for a constant, a zero gradient)
                    raise UnsupportedSyntaxError(
                        f"`with ... as {var}` binds what the context manager's `__enter__` "
                        f"returns, and the context manager is made from values that carry a "
                        f"derivative; s2sad does not differentiate `__enter__`", origin=s.origin,
                        fix=f"compute `{var}` before the `with` statement and use the context "
                            f"manager without `as` (or call its methods yourself)")
    for names, origin in getattr(fn, "nonlocal_writers", ()):
        hot = sorted(n for n in names if n in varied)
        if hot:
            raise UnsupportedSyntaxError(
                f"a nested function writes `nonlocal {', '.join(hot)}`, a value that carries a "
                f"derivative", origin=origin,
                fix="return the new value from the nested function instead of assigning it")
    flat = {s.target: s.value for s in ir.walk(fn.body) if isinstance(s, ir.Assign) and
            isinstance(s.value, ir.Call) and isinstance(s.value.fn, ir.Attr) and
            s.value.fn.name == "flat"}
    for s in ir.walk(fn.body):
        if isinstance(s, ir.SetItem) and isinstance(s.obj, str) and s.obj in flat and \
                any(v in varied for v in ir.operand_vars(s.value)):
            _refuse_flat(flat[s.obj], s.origin)        # z.flat[i] = v, into a constant array too
        if isinstance(s, ir.SetItem) and s.attr is not None and isinstance(s.obj, str) and \
                getattr(fn, "kinds", {}).get(s.obj) == "a" and \
                (s.obj in varied or any(v in varied for v in ir.operand_vars(s.value))):
            _refuse_array_attribute(s)
        if isinstance(s, ir.SetItem) and isinstance(s.obj, ir.Const) and \
                any(v in varied for v in ir.operand_vars(s.value)):
            text = s.obj.text or ""
            if s.attr is not None and text.startswith("_cell_"):
                what = f"a write through `nonlocal {text[len('_cell_'):]}`"
            elif s.attr is None and text == "_globals":
                what = f"a write through `global {s.index.parts[0].value}`"
            else:
                what = f"a write into the module-level `{text or 'object'}`"
            raise UnsupportedSyntaxError(
                f"{what} of a value that carries a derivative", origin=s.origin,
                fix="return the value instead of storing it in a global/nonlocal variable")
        if isinstance(s, ir.Mutate) and isinstance(s.obj, ir.Const) and \
                any(v in varied for v in s.call.reads()):
            raise UnsupportedSyntaxError(
                f"`.{s.call.fn.name}(...)` changes the module-level `{s.obj.text or 'object'}` with "
                f"a value that carries a derivative; s2sad does not follow values kept outside the "
                f"function", origin=s.origin,
                fix="build the list or dict inside the function and return it (or pass it in and "
                    "return the new one)")
        call = s.value if isinstance(s, ir.Assign) else s.call if isinstance(s, ir.ExprStmt) else None
        if not isinstance(call, ir.Call):
            continue
        varied_args = [v for v in call.reads() if v in varied]
        call.info["varied_args"] = varied_args
        if call.cls == "dynamic" and call.info.get("operator") and \
                call.fn.obj is operator.getitem and isinstance(call.args[1], ir.Index) and \
                any(v in varied for v in ir.operand_vars(call.args[1])):
            # obj[a, b] / obj[a:b] on a class with a Python __getitem__: the key's parts would
            # get no derivative back (o[k] with one value k does)
            raise UnsupportedSyntaxError(
                "a subscript with several parts or a slice, on an object whose class defines "
                "__getitem__ in Python, with a key part that carries a derivative",
                origin=s.origin,
                fix="build the key as one value first (`key = (a, b)`) and write `obj[key]`")
        if call.cls == "opaque" and varied_args and isinstance(call.fn, ir.Attr) and \
                call.fn.name == "flat":
            _refuse_flat(call, s.origin)
        if call.cls == "primitive" and call.rule.fn is collections.deque and \
                (varied_args or isinstance(s, ir.Assign) and s.target in varied):
            _check_deque_maxlen(call, s.origin)
        if call.cls == "primitive" and call.rule.forbid and varied_args:
            _check_forbid(call, s.origin)
        if call.cls == "primitive" and varied_args:
            _check_nondifferentiable(call, varied, s.origin)
        if isinstance(s, ir.ExprStmt) and call.cls == "opaque" and varied_args and \
                isinstance(call.fn, ir.Static) and call.fn.obj in (runtime.call, runtime.call_method):
            # a derivative differentiated again (hessian, grad of grad): its call resolved at run
            # time, made for its effect (a helper that changes an argument, a method)
            message, fix = RUNTIME_CALL_SECOND_ORDER
            raise UnsupportedSyntaxError(message, origin=s.origin, fix=fix)
        if isinstance(s, ir.ExprStmt) and call.cls == "opaque" and varied_args and \
                isinstance(call.fn, ir.Static) and call.fn.obj is setattr:
            raise UnsupportedSyntaxError(
                "`setattr(obj, name, value)` with a name known only when it runs, and a value "
                "that carries a derivative (or an object that does): s2sad follows attributes "
                "written by name", origin=s.origin,
                fix="write the attribute by name (`obj.w = value`), one line per attribute")
        if isinstance(s, ir.ExprStmt) and call.cls == "opaque" and varied_args:
            name = call.fn.text if isinstance(call.fn, ir.Static) else f".{call.fn.name}" \
                if isinstance(call.fn, (ir.Method, ir.Attr)) else "this call"
            raise UnsupportedSyntaxError(
                f"`{name}(...)` is called for its effect on values that carry a derivative, and "
                f"s2sad has no rule for it (it may change an array in place, which s2sad cannot "
                f"see)", origin=s.origin, fix=runtime.refusals.in_place_fix(call))
        if call.cls == "opaque" and not varied_args:
            call.info["base_cls"] = call.cls
            call.cls = "inactive"
            continue
        if call.info.get("mutates") and call.cls == "dynamic":
            target = s.target if isinstance(s, ir.Assign) else None
            if any(v in active for v in call.info["diff_vars"]) and \
                    (call.info["mutates"] in active or (target is not None and target in active)):
                continue
        if isinstance(s, ir.ExprStmt) and call.cls in ("derived", "dynamic") and varied_args:
            # called for its effect with values that carry a derivative: run it through the
            # runtime, which builds its derivative (and so refuses writes into its arguments)
            call.info["effect"] = True
            continue
        if call.cls in ("primitive", "derived", "dynamic"):
            target = s.target if isinstance(s, ir.Assign) else None
            if not any(v in active for v in call.info.get("diff_vars", [])) or \
                    (target is not None and target not in active):
                if call.cls in ("derived", "dynamic") and varied_args and \
                        not (call.cls == "derived" and _leaves_arguments(call.info["callee"])):
                    # (its result carries no derivative, its arguments do: it runs as it is,
                    # and must leave them as they were: codegen.text.snapshot_call)
                    call.info["snapshot"] = True
                call.info["base_cls"] = call.cls
                call.cls = "inactive"
                continue
    _guard_key_reads(fn)


def _check_nondifferentiable(call, varied, origin):
    """A value that carries a derivative must not reach a parameter the rule has no derivative
    for (it would silently get none)."""
    rule = call.rule
    if (getattr(rule.fn, "__module__", None) or "").startswith("s2sad."):
        return          # helpers of generated code: their other parameters are shapes and flags
    diff = set(rule.differentiable) | set(rule.constant)
    for p, op in call.info["bound"].items():
        if p in diff:
            continue
        ops = op.values() if isinstance(op, dict) else op if isinstance(op, tuple) else (op,)
        hot = [v for o in ops for v in ir.operand_vars(o) if v in varied]
        if hot:
            why = getattr(rule, "why", {}).get(p)
            named = [v for v in hot if not v.startswith("_")]
            # (a value the line computes has a generated name: `x * 2.0`, a lambda)
            msg = f"`{named[0]}` carries a derivative into parameter `{p}` of {rule.name}, which " \
                f"has no derivative rule for it" if named else \
                f"the value passed to parameter `{p}` of {rule.name} carries a derivative, and " \
                f"{rule.name} has no derivative rule for `{p}`"
            raise RuleError(msg + (f" ({why})" if why else ""), origin=origin,
                fix=f"pass a constant for `{p}`, or declare the derivative with s2sad.defrule("
                    f"..., vjp={{{p!r}: ...}})")


def _augmented_sequences(fn):
    """``xs += ys`` on a list, tuple or deque, which the lowering made ``xs = xs + ys``: Python's
    ``+=`` of a list or deque takes any iterable (``d += [v]``, ``xs += (a, b)``), its ``+`` only
    its own type, so the site calls ``runtime.seq_iadd`` (after the in-place checks, whose guards
    name the operator)."""
    for s in ir.walk(fn.body):
        call = s.value if isinstance(s, ir.Assign) else None
        if isinstance(call, ir.Call) and call.cls == "primitive" and \
                call.rule.fn is runtime.seq_add and "augmented" in call.extra and \
                isinstance(call.fn, ir.Static) and call.fn.obj is operator.add:
            call.fn = ir.Static(runtime.seq_iadd, "_rt.seq_iadd")


def _refuse_flat(call, origin):
    """``x.flat`` of an array that carries a derivative: a numpy.flatiter, an iterator (and an
    object indexed and written through) with no Python source, whose values s2sad cannot
    follow.  (Before, the run-time check named no callee: 'None returned an iterator'.)"""
    recv = call.args[0]
    name = recv if isinstance(recv, str) and not recv.startswith("_") else None
    x = name or "a"
    raise UnsupportedSyntaxError(
        f"`{name + '.flat' if name else '.flat'}` of an array, with values that carry a derivative, "
        f"is a NumPy flat iterator (numpy.flatiter), whose values s2sad cannot follow",
        origin=origin,
        fix=f"use `{x}.ravel()` (the same elements in the same order): `for v in {x}.ravel():`, "
            f"`{x}.ravel()[i]`, `sum({x}.ravel())`; to write one element, "
            f"`{x}[np.unravel_index(i, {x}.shape)] = v`")


_ARRAY_ATTR_FIX = {
    "flat": "write the elements with an index: `{a}[...] = v` (all of them), "
            "`{a}[np.unravel_index(i, {a}.shape)] = v` (one)",
    "shape": "make a new array: `{a} = {a}.reshape(...)`",
    "real": "make a new array: `{a} = v + 1j * {a}.imag`",
    "imag": "make a new array: `{a} = {a}.real + 1j * v`",
}


def _refuse_array_attribute(s):
    """``a.flat = v``, ``a.shape = ...``, ``a.real = v``, ``a.imag = v`` on an array that carries
    a derivative or is given one: they change the array in place, which s2sad does not follow
    (before, the reverse sweep crashed inside s2sad taking the attribute for an index)."""
    a = s.obj if not s.obj.startswith("_") else "a"
    fix = _ARRAY_ATTR_FIX.get(s.attr, "compute the new array with an expression and assign it "
                                       "to the name").format(a=a)
    raise UnsupportedSyntaxError(
        f"`{a}.{s.attr} = ...` changes an array in place through its attribute `{s.attr}`, with "
        f"values that carry a derivative; s2sad does not follow such writes", origin=s.origin,
        fix=fix)


def _check_deque_maxlen(call, origin):
    """``deque(..., maxlen=n)`` that holds values carrying derivatives: when full, it drops an
    item from its other end on ``append``, which the reverse sweep (that of a list's append)
    does not see."""
    v = call.info["bound"].get("maxlen")
    if v is None or isinstance(v, ir.Const) and v.value is None:
        return
    raise UnsupportedSyntaxError(
        "a deque with maxlen= holds values that carry a derivative; it drops items from its "
        "other end when full, which s2sad does not follow", origin=origin, fix=runtime.MAXLEN_FIX)


def _check_forbid(call, origin):
    bound = call.info["bound"]
    for p, allowed in call.rule.forbid.items():
        v = bound.get(p)
        if isinstance(v, (str, ir.Index, tuple, dict)):
            ok = False
        else:
            val = v.value if isinstance(v, ir.Const) else v
            try:
                ok = val is allowed or bool(val == allowed)
            except Exception:
                ok = False
        if not ok:
            raise RuleError(
                f"{call.rule.name}(..., {p}=...) is not supported on a value that carries "
                f"a derivative", origin=origin,
                fix=f"drop {p}= (s2sad supports only {p}={allowed!r} here) and write the "
                    f"computation without it")


_LEAVES = {}         # a user function -> whether it provably changes none of its arguments


def _leaves_arguments(callee):
    """Whether the user function ``callee`` provably changes none of the objects it is given:
    no item, attribute or in-place write (``p[i] = v``, ``p.w = v``, ``p += v``, ``p.append``)
    into a parameter or a name that may hold one or a part of one, and no call that is given
    one of those other than of a function with a derivative rule (which changes nothing).  What
    it calls otherwise, and anything it cannot be lowered for, counts as a change."""
    key = getattr(callee, "__code__", None)
    if key is None:
        return False
    if key in _LEAVES:
        return _LEAVES[key]
    from .inline import lower_callee
    from ..rules import registry
    body = lower_callee(callee)
    ok = body is not None
    if ok:
        held = set(body.params)
        for _ in range(3):              # (names that may hold a parameter or a part of one)
            for s in ir.walk(body.body):
                if isinstance(s, ir.Assign) and s.target not in held and (
                        isinstance(s.value, str) and s.value in held or
                        isinstance(s.value, ir.Call) and s.value.args and
                        any(isinstance(a, str) and a in held for a in s.value.args) and
                        not _new_by_rule(s.value, registry)):
                    held.add(s.target)
        for s in ir.walk(body.body):
            if isinstance(s, (ir.SetItem, ir.DelItem, ir.Mutate)) and \
                    (not isinstance(s.obj, str) or s.obj in held):
                ok = False
                break
            call = s.value if isinstance(s, ir.Assign) else s.call if isinstance(s, ir.ExprStmt) \
                else None
            if not isinstance(call, ir.Call) or \
                    not any(isinstance(a, str) and a in held for a in call.reads()):
                continue
            if "augmented" in call.extra or "augmented_item" in call.extra:
                ok = False
                break
            fn = call.fn
            if isinstance(fn, ir.Static) and registry.lookup(fn.obj) is not None:
                continue
            if isinstance(fn, ir.Attr):
                continue                # (reading an attribute changes nothing)
            if isinstance(fn, ir.Method) and registry.lookup_method(fn.name) is not None:
                continue
            ok = False
            break
    if len(_LEAVES) > 4096:
        _LEAVES.clear()
    _LEAVES[key] = ok
    return ok


def _new_by_rule(call, registry):
    """Whether ``call`` is of a callee with a derivative rule whose result shares no memory with
    its arguments (not ``view=True``)."""
    if not isinstance(call.fn, ir.Static):
        return False
    rule = registry.lookup(call.fn.obj)
    return rule is not None and not rule.view
