"""In-place writes: :func:`check_mutation` refuses writes of values that carry a derivative into
arguments (the caller's objects), through views, and through another name of the same object.
It also runs the other checks of in-place changes: pending iterators and loop sources
(:mod:`.iterators`), deferred readers (:mod:`.lazy`), shared and augmented writes
(:mod:`.writes`)."""
import operator

from .. import ir, runtime
from ..errors import ArgumentWriteError, UnsupportedSyntaxError
from ..frontend.analysis import positions as _positions
from .aliases import _copy_aliases, _is_view_call, _read_via_copies, _shares_memory_call, \
    advanced_index, defining_call, returned_operand, stale_reads
from .common import _hashable, _insert_guards
from .iterators import _check_loop_sources, _check_pending_iterators
from .lazy import _check_bound_methods, _check_lazy
from .writes import _check_augmented, _check_augmented_argument, _check_augmented_shared


def check_mutation(fn, varied):
    """Refuse in-place writes s2sad cannot differentiate correctly: writes of values that carry a
    derivative into a parameter (the caller's object), and writes through one name into a list or
    array that another name still refers to."""
    pos = _positions(fn)
    all_aliases = _copy_aliases(fn)
    reads = {}
    for s in ir.walk(fn.body):
        if isinstance(s, ir.Assign) and isinstance(s.value, str):
            continue                              # a copy only passes the object on
        for v in s.reads():
            reads[v] = reads.get(v, 0) + 1
    views = _view_sources(fn)
    all_params = set(fn.params) - {getattr(fn, "constructed", None)}
    fresh = _fresh_names(fn)
    rebound = {k: v & all_params for k, v in fresh.items()}
    from ..frontend.analysis import _mutated, bound_names
    assigned = {v for t in ir.walk(fn.body) for v in bound_names(t)}
    _check_pending_iterators(fn, pos, varied)
    _check_loop_sources(fn)
    _check_lazy(fn, pos)
    _check_bound_methods(fn, pos)
    guards = []
    # (generated code differentiated again: its tape's stacks are its own business)
    code = getattr(getattr(fn, "pyfunc", None), "__code__", None)
    generated = code is not None and code.co_filename.startswith("<s2sad-generated") or \
        (getattr(getattr(fn, "pyfunc", None), "__module__", None) or "").startswith("s2sad_generated")
    from .writes import check_writes_shared
    check_writes_shared(fn, pos, varied, guards)
    if generated:
        guards[:] = [(i, g) for i, g in ((i, _without_own_stacks(g)) for i, g in guards)
                     if g is not None]
    from ..frontend.analysis import building
    # names bound to a call that may return its operand itself (y = np.real(x)...): (name,
    # that call, its operand), for _check_returned_argument
    returned = [(t.target, t.value, src) for t in ir.walk(fn.body) if isinstance(t, ir.Assign)
                and isinstance(t.value, ir.Call) and (src := returned_operand(t.value))]
    for s in ir.walk(fn.body):
        if building(s):
            continue        # (a comprehension's own new list or dict: nobody else's object)
        # a parameter rebound to a new object (``args = list(args)``) is no longer the caller's
        rb = rebound.get(id(s), set())
        m = _mutated(s)
        params = all_params - ({m} & rb)
        if m is not None:
            call = s.value if isinstance(s, ir.Assign) else s.call
            group = all_aliases.get(m, {m})
            if group & params and any(v in varied for v in call.reads()):
                # whether the method changes the caller's object is known only when it runs
                call.info["argument"] = sorted(group & params)[0]
        permutes = deque_change = False
        _check_augmented(fn, s, pos, reads)
        aug = s.value if isinstance(s, ir.Assign) else None
        if isinstance(aug, ir.Call) and "augmented" in aug.extra and aug.args and \
                isinstance(aug.args[0], str) and \
                getattr(fn, "kinds", {}).get(aug.args[0]) not in ("f", "i", "z"):
            # (``y = np.real(x); y += b``: an array changed in place, which may be x itself)
            v = aug.args[0]
            _check_returned_argument(returned, s, v, all_aliases.get(v, {v}), params,
                                     all_aliases)
        _check_augmented_shared(fn, s, pos, guards)
        _check_augmented_argument(fn, s, all_aliases, all_params - rb, guards)
        if isinstance(s, ir.SetItem) and isinstance(s.obj, str):
            hot = any(v in varied for v in ir.operand_vars(s.value))
            obj = s.obj
        elif isinstance(s, ir.Mutate):
            hot = any(v in varied for v in s.call.reads()[1:])
            obj = s.obj
        elif m is not None and isinstance(call.fn, ir.Method) and call.fn.name in _PERMUTING:
            # xs.sort() / xs.reverse(): every other name of xs sees the new order (the caller's
            # too, for an argument)
            hot, obj, permutes = m in varied, m, True
        elif m is not None and isinstance(call.fn, ir.Method) and _deque_change(fn, call, m):
            # d.appendleft(v), d.popleft(), d.rotate(n), q[0].append(v) on a deque...: followed on
            # the deque's own name (rules/deques.py), not through another one
            hot = m in varied or any(v in varied for v in call.reads()[1:])
            obj, deque_change = m, True
        else:
            continue
        params = all_params - ({obj} & rb)
        group = all_aliases.get(obj, {obj})
        if obj in fresh.get(id(s), ()):
            # (rebound to a new object on every path here: no parameter that still holds the
            # caller's object is another name for it, whatever it was a copy of before)
            group = group - (params - assigned)
        if isinstance(s, (ir.SetItem, ir.Mutate)) and not getattr(s, "attr", None):
            _check_returned_argument(returned, s, obj, group, params, all_aliases)
        if (hot or obj in varied) and not permutes and not getattr(s, "attr", None) and \
                not group & params and not generated:
            # a write into an object read out of an argument (self.buf[i] = v, obj.items.append(v)
            # in a method or helper): the caller's object changes, which s2sad does not follow
            # back (the method's own attribute writes, self.w = v, it does)
            root = _taken_from_param(fn, obj, set(params))
            # (a method's self.items.append(v) is an update of its object, which the
            # dispatcher differentiates: only item writes are refused for self)
            if root is not None and (isinstance(s, ir.SetItem) or root[0] != "self"):
                p, text = root
                raise ArgumentWriteError(
                    f"this line changes `{text}` in place, an object held by the argument `{p}`"
                    f"{' (the method' + chr(39) + 's object)' if p == 'self' else ''}, with a value "
                    f"that carries a derivative or in an object that does; s2sad does not follow "
                    f"such changes back to the caller", origin=s.origin,
                    # (param=None: not a write a method's update of its object covers; with
                    # param="self" the dispatcher retried it as one and lost the write)
                    param=None,
                    fix=f"build the new value and assign it to the attribute (`{text} = "
                        f"new_value`, e.g. with np.where or a copy changed in place), or return it")
        if not hot:
            # a constant written in place: harmless, unless another name for the same object
            # carries derivatives (the reverse sweep would read the changed object through it),
            # or the object is a view of one that does
            cold_view = any(isinstance(t, ir.Assign) and t.target in group and
                            isinstance(t.value, ir.Call) and _is_view_call(t.value) and
                            any(isinstance(a, str) and a in varied for a in t.value.args)
                            for t in ir.walk(fn.body)) and isinstance(s, ir.SetItem) and \
                not getattr(s, "attr", None)
            if not cold_view and (len(group) < 2 or not any(v in varied for v in group)):
                continue
            if not cold_view and obj not in params and group & params:
                p = sorted(group & params)[0]
                raise ArgumentWriteError(
                    f"this line writes into `{obj}`, which is the argument `{p}` (an object the "
                    f"caller passed in, that carries a derivative); s2sad does not follow writes "
                    f"into an argument through another name", origin=s.origin, param=p,
                    fix=f"work on a copy (`{obj} = {p}.copy()`, `list({p})`) and return the result "
                        f"if the caller needs it")
        if permutes and group & params:
            p = sorted(group & params)[0]
            raise ArgumentWriteError(
                f"this line reorders `{p}`, a list the caller passed in, in place; s2sad does not "
                f"follow such changes back to the caller", origin=s.origin, param=p,
                fix=f"sort a new list instead (`{p} = sorted({p}, ...)`, `{p} = {p}[::-1]`), and "
                    f"return it if the caller needs it")
        root = _taken_from_param(fn, obj, set(fn.params)) if permutes or deque_change else None
        if root is not None and deque_change and hot:
            # (self.q.appendleft(v) in a method: the deque is changed where s2sad follows its
            # own name only, not the object that holds it)
            name = call.fn.name
            if name in _DEQUE_ONLY:
                raise UnsupportedSyntaxError(
                    f"this line changes `{root[1]}`, a deque taken from `{root[0]}` (an "
                    f"argument), in place with `.{name}(...)`; s2sad does not follow such changes "
                    f"back to the object that holds it", origin=s.origin,
                    fix=f"build the new deque and store that (`{root[1]} = deque(...)`), or keep "
                        f"the deque in a local variable of the function being differentiated")
            # (`.pop()`, `.append(v)`...: a list's or a deque's; which, is known only when it runs)
            local = root[1].rsplit(".", 1)[-1].strip("[].") or "items"
            local = local if local.isidentifier() and local != root[0] else "items"
            raise UnsupportedSyntaxError(
                f"this line changes `{root[1]}`, taken from `{root[0]}` (an argument), in place "
                f"with `.{name}(...)`; s2sad does not follow such changes back to the object "
                f"that holds it", origin=s.origin,
                fix=f"change a copy in a local variable and store that: `{local} = "
                    f"list({root[1]})`, then `{local}.{name}(...)`, then `{root[1]} = {local}`")
        if root is not None and permutes:   # (self.items.sort() in a method: not followed)
            raise UnsupportedSyntaxError(
                f"this line reorders `{root[1]}`, a list taken from `{root[0]}` (an argument), in "
                f"place; s2sad does not follow such changes back to the caller", origin=s.origin,
                fix=f"sort a new list and store that (`{root[1]} = sorted({root[1]}, ...)`), or "
                    f"return it")
        if group & params:
            p = sorted(group & params)[0]
            if p in _captured(fn) and not getattr(s, "attr", None):
                # a closure writing into a variable of the function that made it
                raise ArgumentWriteError(
                    f"this line writes a value that carries a derivative into `{p}`, a variable "
                    f"of the enclosing function that this closure captured; s2sad does not "
                    f"differentiate writes into objects the function did not make",
                    origin=s.origin, param=p,
                    fix=f"have the closure return the value, and write it into `{p}` in the "
                        f"enclosing function (`{p}[i] = g(...)`, `{p}.append(g(...))`), or build a "
                        f"new object there")
            what = f"`{p}.{s.attr}`" if getattr(s, "attr", None) else f"the argument `{p}`"
            raise ArgumentWriteError(
                f"this line writes a value that carries a derivative into {what}, an object the "
                f"caller passed in; s2sad does not differentiate writes into arguments",
                origin=s.origin, param=p,
                fix=(f"return the new value instead of storing it on `{p}`" if getattr(s, "attr", None)
                     else f"work on a copy (e.g. `{p} = {p}.copy()` or `list({p})`) and return the "
                          f"result, or return the new value instead of storing it"))
        group = _copy_aliases(fn, s, pos).get(obj, {obj})
        others = sorted(v for v in group if v != obj and _read_via_copies(fn, v, obj, reads))
        if others:      # (only those that still hold the object when it is changed)
            others = sorted(set(others) & stale_reads(fn, s, obj, set(others)))
        made = defining_call(fn, obj)
        if made is not None and isinstance(made.fn, ir.Attr) and isinstance(made.args[0], str):
            owner, name = made.args[0], made.fn.name
            again = [t for t in ir.walk(fn.body) if isinstance(t, ir.Assign) and
                     isinstance(t.value, ir.Call) and t.value is not made and
                     isinstance(t.value.fn, ir.Attr) and t.value.fn.name == name and
                     t.value.args[0] == owner]
            if again:
                raise UnsupportedSyntaxError(
                    f"this line changes `{owner}.{name}` in place with a value that carries a "
                    f"derivative, and the function reads `{owner}.{name}` again; s2sad does not "
                    f"follow derivatives through state kept on objects", origin=s.origin,
                    fix="keep the values in a local list and read them from there")
        is_view = made is not None and _shares_memory_call(fn, made)
        if not is_view:
            # bound in several places (branches): a view on any of them is enough
            made = next((t.value for t in ir.walk(fn.body) if isinstance(t, ir.Assign) and
                         t.target in all_aliases.get(obj, {obj}) and isinstance(t.value, ir.Call)
                         and _shares_memory_call(fn, t.value) and any(isinstance(a, str)
                                                                      for a in t.value.args)), made)
            is_view = made is not None and _shares_memory_call(fn, made)
        if is_view and not getattr(s, "attr", None) and any(isinstance(a, str) for a in made.args):
            src = next(a for a in made.args if isinstance(a, str))
            how = made.rule.name if made.rule is not None else f".{made.fn.name}"
            if src.startswith("_") and not obj.startswith("_"):
                # a view of a value its own line computes (``a = (m @ v)[::-1]``): no name to give
                at = next((t.origin for t in ir.walk(fn.body) if isinstance(t, ir.Assign) and
                           t.value is made), None)
                line = f" on line {at.line}" if at is not None and getattr(at, "line", None) \
                    else ""
                raise UnsupportedSyntaxError(
                    f"this line writes into `{obj}`, a view (made by {how}{line}) of a value "
                    f"computed there; s2sad does not follow writes through views",
                    origin=s.origin,
                    fix=f"make `{obj}` a copy where it is made, the copy last (`{obj} = "
                        f"(...)[...].copy()`)")
            what = f"`{obj}`, a view of `{src}` (made by {how})" if not obj.startswith("_") else \
                f"a value taken from `{src}` (by {how}) that shares memory with it"
            raise UnsupportedSyntaxError(
                f"this line writes into {what}; s2sad does not follow writes through views",
                origin=s.origin,
                fix=f"write into `{src}` itself with one index (e.g. `{src}[i, j] = ...` for an "
                    f"array), or build the nested values as new lists/arrays" if obj.startswith("_")
                else f"write into `{src}` itself with an index (e.g. `{src}[...] = ...`), or make "
                     f"`{obj}` a copy")
        if getattr(s, "attr", None):
            # an object taken out of a container and changed: the container still holds it
            others += sorted(c for c in views.get(obj, ()) if reads.get(c) and c not in others)
        if others:
            other = f"`{others[0]}`" if not others[0].startswith("_") else \
                "the list, tuple or dict it was taken from"
            what = f"`{obj}`" if not obj.startswith("_") else "an object taken from a container"
            raise UnsupportedSyntaxError(
                f"{what} is changed in place while {other} refers to the same object; "
                f"s2sad does not follow derivatives through such aliases", origin=s.origin,
                fix=f"make a copy (`{obj} = {obj}.copy()`, `list(...)`, `copy.copy(...)`) before "
                    f"changing it, or build a new object" if not obj.startswith("_") else
                    "take the object into a local variable, copy it (`copy.copy(...)`), change the "
                    "copy and put it back, or build a new object")

    # an attribute written on an object of a class that stores it some other way (a property's
    # setter, a descriptor, its own __setattr__): checked when the line runs
    kinds = getattr(fn, "kinds", {})
    for s in ir.walk(fn.body):
        if isinstance(s, ir.SetItem) and getattr(s, "attr", None) and isinstance(s.obj, str) \
                and kinds.get(s.obj) not in ("a", "c", "f", "i", "z") and \
                any(v in varied for v in ir.operand_vars(s.value)):
            guards.append((id(s), ir.ExprStmt(ir.Call(
                ir.Static(runtime.attr_write_guard, "_rt.attr_write_guard"),
                [s.obj, ir.Const(s.attr), ir.Const(s.origin)]), s.origin)))

    by_stmt = {}
    for i, g in guards:
        by_stmt.setdefault(i, []).append(g)
    _insert_guards(fn.body, by_stmt)


def _captured(fn):
    """The names a closure reads from the function that made it (its free variables)."""
    code = getattr(getattr(fn, "pyfunc", None), "__code__", None)
    return set(code.co_freevars) if code is not None else set()


_PERMUTING = {"sort", "reverse"}      # in-place list methods s2sad follows (rules.python)
# in-place methods of collections.deque (rules/deques.py) that lists lack, and those it shares
# with lists (which, on a list, are Mutate statements or refused when the call runs)
_DEQUE_ONLY = {"appendleft", "popleft", "extendleft", "rotate"}
_DEQUE_SHARED = {"append", "pop", "extend", "insert", "remove", "clear"}


def _without_own_stacks(g):
    """A run-time sharing check (``runtime.share_guard``) of a derivative's code differentiated
    again (hessian, grad of grad), without its own stacks (names ``_s_...``): None for a push or
    pop on one (the objects are the tape's lists, which the nested tapes of a recursive function
    make deeper than the check looks), and a stack that holds a value read by the write's reverse
    sweep is no reader of the user's: the first derivative's code copies what it needs the
    values of (``_rt.snap``) and keeps the rest for their shapes.  Other guards as they are."""
    call = getattr(g, "call", None)
    if not isinstance(call, ir.Call) or not isinstance(call.fn, ir.Static) or \
            call.fn.obj is not runtime.share_guard or len(call.args) < 5:
        return g

    def stack(c):
        return isinstance(c, ir.Const) and isinstance(c.value, str) and c.value.startswith("_s_")
    value, name, others, fix, origin, *seen = call.args
    if stack(name):
        return None
    names = list(others.value)
    keep = [k for k, n in enumerate(names) if not n.startswith("_s_")]
    if len(keep) == len(names):
        return g
    if not keep:
        return None
    # (``seen`` holds the values of the first names, those surely bound at the write: the kept
    # ones stay first)
    args = [value, name, ir.Const(tuple(names[k] for k in keep)), fix, origin] + \
        [seen[k] for k in keep if k < len(seen)]
    return ir.ExprStmt(ir.Call(call.fn, args), g.origin)


def _deque_change(fn, call, m):
    """A method call that may change a deque in place: a name only a deque has, or one it shares
    with lists on a receiver known to be a container or taken out of one (``q[0].append(v)``;
    on a local name these are Mutate statements)."""
    name = call.fn.name
    if name in _DEQUE_ONLY:
        return True
    if name not in _DEQUE_SHARED:
        return False
    if call.info.get("recv_kind") == "c":
        return True
    made = defining_call(fn, m)
    return made is not None and (isinstance(made.fn, ir.Attr) or isinstance(made.fn, ir.Static)
                                 and made.fn.obj is operator.getitem)


def _taken_from_param(fn, var, params):
    """(parameter, expression) when ``var`` was read out of a parameter (``var = p.items``,
    ``var = p[0]``, chains of those), else None."""
    seen, path = set(), ""
    while var not in params and var not in seen:
        seen.add(var)
        made = defining_call(fn, var)
        if made is None or not made.args or not isinstance(made.args[0], str):
            return None
        if isinstance(made.fn, ir.Attr):
            path = f".{made.fn.name}{path}"
        elif isinstance(made.fn, ir.Static) and made.fn.obj is operator.getitem:
            if advanced_index(fn, made):
                return None             # (a copy of the array's items)
            path = f"[...]{path}"
        else:
            return None
        var = made.args[0]
    return (var, var + path) if var in params else None


_NEW_OBJECT_MAKERS = {list, dict, tuple, set, runtime.build_list, runtime.build_dict,
                      runtime.build_tuple}


def _new_object(value):
    """True for a call that certainly returns a new object (a copy or a fresh container)."""
    import copy
    if not isinstance(value, ir.Call):
        return False
    f = value.fn
    if isinstance(f, ir.Method):
        return f.name == "copy"
    if isinstance(f, ir.Static):
        return _hashable(f.obj) and f.obj in _NEW_OBJECT_MAKERS or \
            f.obj in (copy.copy, copy.deepcopy)
    return False


# operators whose result is a new object (arrays, lists, tuples) or an immutable number
_NEW_RESULT_OPS = {operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
                   operator.mod, operator.pow, operator.matmul, operator.neg, operator.pos}


def _new_value(value, kinds):
    """True for a call that certainly returns a new object (:func:`_new_object`), or an
    operator (``u + k * lap``, not an augmented ``u += v``) none of whose operands is an object
    of a user class (whose ``__add__`` could return itself)."""
    if _new_object(value):
        return True
    return isinstance(value, ir.Call) and isinstance(value.fn, ir.Static) and \
        _hashable(value.fn.obj) and value.fn.obj in _NEW_RESULT_OPS and \
        "augmented" not in value.extra and "augmented_item" not in value.extra and \
        not value.kwargs and all(not isinstance(a, str) or kinds.get(a) not in ("o", None)
                                 for a in value.args)


def _fresh_names(fn):
    """id(statement) -> names that, on every path to it, were rebound to a new object since they
    last held another (a parameter's ``x = x.copy()``; ``u = u0`` then, in a loop, ``u = u + k *
    lap`` before ``u[0] = 0.0``): a write through such a name changes no argument.  A loop's body
    starts with the names it assigns taken out (a later trip starts with what the one before left),
    so do a try's handlers and what follows a nested block."""
    from ..frontend.analysis import bound_names
    out = {}
    kinds = getattr(fn, "kinds", None) or {}
    new_tmps = {s.target for s in ir.walk(fn.body) if isinstance(s, ir.Assign) and
                s.target.startswith("_") and _new_value(s.value, kinds)}

    def binds(st):                  # (names the statement itself binds, not its blocks)
        return set(bound_names(st))

    def assigned(blocks):
        return {v for b in blocks for st in ir.walk(b) for v in bound_names(st)}

    def block(stmts, fresh):
        fresh = set(fresh)
        for s in stmts:
            out[id(s)] = fresh
            kids = ir.children(s)
            if isinstance(s, (ir.For, ir.While)):
                start = fresh - assigned(kids) - binds(s)
                for b in kids:
                    block(b, start)
            elif isinstance(s, ir.Try):
                block(s.body, fresh)
                start = fresh - assigned([s.body]) - binds(s)
                for b in kids[1:]:
                    block(b, start)
            elif isinstance(s, ir.If):
                # fresh after the if: fresh at the end of both branches (the names they assign
                # joined as the rest: a name fresh in one branch only may hold anything)
                ends = [block(b, fresh) for b in kids]
                fresh = ends[0] & ends[1]
                continue
            else:
                for b in kids:
                    block(b, fresh)
            if isinstance(s, ir.Assign):
                new = _new_value(s.value, kinds) or isinstance(s.value, str) and s.value in new_tmps
                fresh = fresh | {s.target} if new else fresh - {s.target}
            else:
                # a name rebound inside a nested block (or by the statement: a loop's target,
                # ``v = xs.pop()``, ``with ... as v``) may hold anything after it
                fresh = fresh - assigned(kids) - binds(s)
        return fresh
    block(fn.body, set())
    return out


def _check_returned_argument(returned, s, obj, group, params, aliases):
    """A write into ``obj`` (statement ``s``), a name bound to a call that may return its operand
    itself (``y = np.real(x)``, ``x.conj()`` of a real array, ``x.astype(t, copy=False)``:
    frontend.analysis.returned_operand; ``returned``: (name, call, operand) of each) of an
    argument: the write may change the caller's array, which the derivative also reads as it
    was (a silently wrong gradient before)."""
    for target, call, src in returned:
        if target not in group:
            continue
        hit = sorted(aliases.get(src, {src}) & params)
        if hit:
            p = hit[0]
            how = call.rule.name if call.rule is not None else f".{getattr(call.fn, 'name', '')}"
            raise ArgumentWriteError(
                f"this line writes into `{obj}`, which {how} may have returned as the argument "
                f"`{p}` itself (NumPy returns its operand where nothing needs converting), an "
                f"object the caller passed in; s2sad does not follow writes into arguments",
                origin=s.origin, param=p,
                fix=f"make `{obj}` a copy before writing into it (`{obj} = {obj}.copy()`), and "
                    f"return the result if the caller needs it")


def _view_sources(fn):
    """var -> containers it was read out of (``p = ps[i]``), following copies."""
    src = {}
    for s in ir.walk(fn.body):
        if isinstance(s, ir.Assign) and isinstance(s.value, ir.Call) and \
                isinstance(s.value.fn, ir.Static) and s.value.fn.obj is operator.getitem and \
                isinstance(s.value.args[0], str):
            src.setdefault(s.target, set()).add(s.value.args[0])
    changed = True
    while changed:
        changed = False
        for s in ir.walk(fn.body):
            if isinstance(s, ir.Assign) and isinstance(s.value, str) and s.value in src:
                before = len(src.get(s.target, ()))
                src.setdefault(s.target, set()).update(src[s.value])
                changed |= len(src[s.target]) != before
    return src
