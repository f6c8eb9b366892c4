"""Writes into an array or list while another name that shares its memory is read afterwards.

In Python, ``a[0] = y`` (an item or slice write, ``a[2] -= y``, ``a *= y``) changes the object, so a
view of it (``v = a[:]``, ``a.T``, ``np.asarray(a)``...), the array it is a view of, or a list that
holds it sees the change.  s2sad's reverse sweep differentiates names: the adjoint of ``v`` read
afterwards would go to ``a`` as it was before the write.

* :func:`rederive_views` (at the end of classification, before activity analysis): a name bound
  once to a view that certainly shares the written array's memory (basic slicing, ``.T``,
  ``.real``, ``np.asarray`` of an array...), from operands that are still the same when the write
  runs, is bound again right after the write (``v = a[:]`` repeated).  Python's values are the
  same (the view sees the new values); both sweeps then follow the write into the view.
* :func:`check_writes_shared` (with the other in-place checks): any other name read afterwards
  that may share the written object's memory or hold it (objects.Objects) gets a check when the
  write runs (:func:`runtime.share_guard`), which refuses when it really does.

``a op= v`` on an array or list (:func:`_check_augmented`, :func:`_check_augmented_shared`, with
the other in-place checks): Python changes the object, s2sad makes a new value and rebinds ``a``;
refused while another name of the object is read afterwards, or guarded when one may be
(:func:`runtime.inplace_guard`).
"""
import operator

import numpy as np

from .. import ir, runtime
from ..errors import UnsupportedSyntaxError
from .aliases import _copy_aliases, _is_view_call, _read_via_copies, returned_operand
from .common import _block_chains, _opname_of
from .iterators import own_pass_sequence

_NUMBER_KINDS = ("f", "i", "z")
_VIEW_ATTRS = {"T", "mT", "real", "imag"}
_VIEW_METHODS = {"transpose", "diagonal", "swapaxes", "view"}
_VIEW_FUNCS = {np.transpose, np.diagonal, np.swapaxes, np.real, np.imag, np.asarray,
               np.asanyarray, np.atleast_1d}


def _hashable(obj):
    try:
        hash(obj)
        return True
    except TypeError:
        return False


def certain_view(call, kinds):
    """The name of the array ``call`` certainly returns a view of (or the array itself), else
    None.  ``a[i]`` (a row, or a number), ``.reshape``/``.ravel`` (views or copies) are not."""
    if not isinstance(call, ir.Call) or not call.args or not isinstance(call.args[0], str):
        return None
    src, rest, fn = call.args[0], call.args[1:], call.fn
    if kinds.get(src) != "a":
        return None
    if isinstance(fn, ir.Static) and fn.obj is operator.getitem:
        if len(rest) != 1 or not isinstance(rest[0], ir.Index):
            return None
        sliced = False
        for p in rest[0].parts:
            if isinstance(p, ir.Slice):
                sliced = True
                if any(isinstance(q, str) and kinds.get(q) != "i"
                       for q in (p.lower, p.upper, p.step)):
                    return None
            elif isinstance(p, ir.Const) and (p.value is Ellipsis or p.value is None):
                sliced = True
            elif not (isinstance(p, ir.Const) and type(p.value) is int or
                      isinstance(p, str) and kinds.get(p) == "i"):
                return None                     # (an array or list index: a copy)
        return src if sliced else None
    if call.kwargs or not all(isinstance(r, ir.Const) for r in rest):
        return None
    if isinstance(fn, ir.Attr) and fn.name in _VIEW_ATTRS and not rest:
        return src
    if isinstance(fn, ir.Method) and fn.name in _VIEW_METHODS:
        return src
    if isinstance(fn, ir.Static) and _hashable(fn.obj) and fn.obj in _VIEW_FUNCS:
        return src
    return None


def _augmented_var(s, kinds):
    """``a`` for ``a op= v`` on a value that may be an array or list (s2sad rebinds it)."""
    call = s.value if isinstance(s, ir.Assign) else None
    if isinstance(call, ir.Call) and "augmented" in call.extra and call.args and \
            isinstance(call.args[0], str) and kinds.get(call.args[0]) not in _NUMBER_KINDS:
        return call.args[0]
    return None


def _binds(s):
    if isinstance(s, (ir.Assign, ir.For)):
        return [s.target]
    if isinstance(s, ir.Mutate):
        return [s.target] if s.target else []
    if isinstance(s, ir.With):
        return [v for _, v in s.items if v]
    if isinstance(s, ir.Try):
        return [v for _, v, _ in s.handlers if v]
    return []


def surely_bound(fn):
    """id(statement) -> names bound on every path that reaches it (parameters included)."""
    out = {}

    def block(stmts, bound):
        bound = set(bound)
        for s in stmts:
            out[id(s)] = frozenset(bound)
            if isinstance(s, ir.If):
                a, b = block(s.body, bound), block(s.orelse, bound)
                bound |= a & b
            elif isinstance(s, ir.For):
                block(s.body, bound | {s.target})
            elif isinstance(s, ir.While):
                block(s.body, block(s.test_body, bound))
            elif isinstance(s, ir.With):
                bound |= {v for _, v in s.items if v}
                bound = block(s.body, bound)
            elif isinstance(s, ir.Try):
                block(s.body, bound)
                for _, v, h in s.handlers:
                    block(h, bound | ({v} if v else set()))
                block(s.orelse, bound)
                block(s.finalbody, bound)
            else:
                bound.update(_binds(s))
        return bound
    block(fn.body, set(fn.params))
    return out


def rederive_views(fn, kinds):
    """Bind certain views of an array again right after each write into the array (see the
    module's docstring); records ``fn.rederived``: id(write) -> the names bound again."""
    from ..frontend.analysis import may_run_after, positions
    fn.rederived = {}
    binders = {}
    for s in ir.walk(fn.body):
        for v in _binds(s):
            binders.setdefault(v, []).append(s)
    views = {}
    for v, bs in binders.items():
        if len(bs) == 1 and isinstance(bs[0], ir.Assign):
            src = certain_view(bs[0].value, kinds)
            if src is not None and src != v:
                views[v] = (bs[0], src)
    if not views:
        return
    pos = positions(fn)
    chains = _block_chains(fn)
    stmts = list(ir.walk(fn.body))
    # ``a op= v`` is lowered to ``_t = a op v`` (marked augmented) and ``a = _t``
    aug_tmps = {s.target: v for s in stmts if (v := _augmented_var(s, kinds)) is not None}

    def aug_rebind(b, o):
        return isinstance(b, ir.Assign) and isinstance(b.value, str) and aug_tmps.get(b.value) == o

    def stable(o, d, s, w_aug):
        """Whether name ``o`` holds, when ``s`` runs, the object it held when ``d`` ran."""
        bs = [b for b in binders.get(o, ()) if not (w_aug and o == w_aug and aug_rebind(b, o))]
        if not bs:
            return True                         # (a parameter, or only ``o op= ...``)
        if len(bs) > 1:
            return False
        b = bs[0]
        loops_b = pos[id(b)][1] | ({id(b)} if isinstance(b, ir.For) else set())
        if not (pos[id(b)][0] < pos[id(d)][0] and pos[id(b)][0] < pos[id(s)][0] and
                loops_b <= pos[id(d)][1] and loops_b <= pos[id(s)][1]):
            return False
        cb, cs = chains[id(b)], chains[id(s)]
        if isinstance(b, ir.For):
            return cs[:len(cb)] == cb and len(cs) > len(cb)     # s in the loop's body
        return cs[:len(cb) - 1] == cb[:-1] and len(cs) >= len(cb) and cs[len(cb) - 1][1] > cb[-1][1]

    for s in stmts:
        w_aug = _augmented_var(s, kinds)
        w = s.obj if isinstance(s, ir.SetItem) and isinstance(s.obj, str) and s.attr is None \
            else w_aug
        if w is None or kinds.get(w) in _NUMBER_KINDS:
            continue
        later = set()
        for t in stmts:
            if t is not s and may_run_after(pos, s, t):
                later.update(t.reads())
        redo = set()
        for u in views:
            path, v = [], u
            while v in views and v not in path:
                path.append(v)
                v = views[v][1]
                if v == w:
                    break
            if v != w or u not in later:
                continue
            d_u = views[u][0]
            if not may_run_after(pos, d_u, s):
                continue                        # (bound only after the write)
            ok = True
            for p in path:
                d, src = views[p]
                ops = [q for op in d.value.operands() for q in ir.operand_vars(op)]
                if any(not stable(q, d, s, w_aug) for q in ops if q not in path):
                    ok = False
            if ok:
                redo.update(path)
        if not redo:
            continue
        new = []
        for v in sorted(redo, key=lambda v: pos[id(views[v][0])][0]):
            d = views[v][0]
            c = d.value
            call = ir.Call(c.fn, list(c.args), list(c.kwargs), dict(c.extra))
            call.cls, call.rule = c.cls, c.rule
            call.info = dict(c.info) if c.info is not None else None
            new.append(ir.Assign(v, call, d.origin))
        fn.rederived[id(s)] = set(redo)
        after = s
        if w_aug is not None:           # (after ``a = _t``, which follows ``_t = a op v``)
            after = next((t for t in stmts if aug_rebind(t, w_aug) and t.value == s.target), None)
            if after is None:
                del fn.rederived[id(s)]
                continue
        _insert_after(fn.body, after, new)


def _insert_after(block, s, new):
    for i, t in enumerate(block):
        if t is s:
            block[i + 1:i + 1] = new
            return True
        for b in ir.children(t):
            if _insert_after(b, s, new):
                return True
    return False


def check_writes_shared(fn, pos, varied, guards, objs=None):
    """An item or slice write, ``del`` or in-place method on ``w`` while another name that may
    share ``w``'s memory or hold it is read afterwards (and was bound before): a check when the
    write runs (:func:`runtime.share_guard`) refuses when it really does.  Names bound again after
    the write (:func:`rederive_views`) see the write.  ``a op= v`` is
    _check_augmented_shared's (below)."""
    from ..frontend.analysis import _changed_in_place, _made_again_before
    from ..frontend.analysis import may_run_after
    kinds = getattr(fn, "kinds", {}) or {}
    stmts = list(ir.walk(fn.body))
    writes = []
    for s in stmts:
        w, how = _changed_in_place(fn, s)
        if not isinstance(w, str) or how == "augmented" or getattr(s, "attr", None) is not None \
                or kinds.get(w) in _NUMBER_KINDS or kinds.get(w) == "o":
            continue
        if how == "method" and kinds.get(w) not in ("a", "c"):
            continue            # (a method of an object: an update s2sad follows, or refuses)
        writes.append((s, w))
    if not writes:
        return
    if objs is None:
        from .objects import Objects
        objs = Objects(fn)
    binders = {}
    for t in stmts:
        for v in _binds(t):
            binders.setdefault(v, []).append(t)
    bound = None
    chains = _block_chains(fn)
    rederived = getattr(fn, "rederived", {})
    for s, w in writes:
        targets = objs.of(w)
        if not targets:
            continue
        redone = rederived.get(id(s), set())
        later = set()
        for t in stmts:
            if t is not s and may_run_after(pos, s, t):
                # (a read that every way from the write to it binds the name again first, as a
                # temporary in a loop's body, reads the new binding)
                later.update(u for u in t.reads() if not any(
                    _made_again_before(chains, b, s, t) for b in binders.get(u, ())))
        flagged = []
        for u in sorted(later):
            if u == w or u in redone or kinds.get(u) in _NUMBER_KINDS:
                continue
            if u in fn.params and ("p", u) not in targets:
                continue            # (a parameter counts when the write may go into its object)
            if u not in fn.params and not any(may_run_after(pos, b, s)
                                              for b in binders.get(u, ())):
                continue                        # (bound only after the write)
            if not (objs.reach(objs.of(u)) & targets):
                continue
            flagged.append(u)
        if not flagged:
            continue
        if not (w in varied or any(v in varied for v in s.reads()) or
                any(u in varied for u in flagged)):
            continue                            # (nothing carries a derivative)
        if bound is None:
            bound = surely_bound(fn)
        here = bound.get(id(s), frozenset())
        sure = [u for u in flagged if u in here]
        others = sure + [u for u in flagged if u not in here]
        w_user = next((u for u in others if not u.startswith("_")), None)
        fix = (f"make `{w_user}` a copy (`.copy()`, `list(...)`) where it is made, or write into "
               f"a copy of `{w}`" if w_user else
               f"write into a copy of `{w}` (`{w} = {w}.copy()`), or read the values before the "
               f"write into a new array or list")
        guards.append((id(s), ir.ExprStmt(ir.Call(
            ir.Static(runtime.share_guard, "_rt.share_guard"),
            [w, ir.Const(w), ir.Const(tuple(others)), ir.Const(fix), ir.Const(s.origin)] + sure),
            s.origin)))


def _check_augmented(fn, s, pos, reads):
    """``a *= y`` / ``xs += [v]`` change an array or list in place in Python; s2sad rebinds the
    name.  Refused while another name refers to the same object (``a = x`` before)."""
    call = s.value if isinstance(s, ir.Assign) else None
    if not isinstance(call, ir.Call) or "augmented" not in call.extra:
        return
    var = call.args[0] if isinstance(call.args[0], str) else s.target
    kind = getattr(fn, "kinds", {}).get(var)
    if kind in ("f", "i", "z"):
        return                                 # numbers: rebinding is what Python does
    group = _copy_aliases(fn, s, pos).get(var, {var})
    others = sorted(v for v in group if v != var and _read_via_copies(fn, v, var, reads))
    if others:
        name = call.extra["augmented"]
        other = f"`{others[0]}`" if not others[0].startswith("_") else "another name"
        raise UnsupportedSyntaxError(
            f"`{name} {_opname_of(call)}= ...` changes `{name}` in place (for an array or a list) "
            f"while {other} refers to the same object; s2sad does not follow derivatives through "
            f"such aliases", origin=s.origin,
            fix=f"write `{name} = {name} {_opname_of(call)} ...` to make a new value, or copy "
                f"first (`{name} = {name}.copy()`)")


def _check_augmented_argument(fn, s, aliases, callers, guards):
    """``p *= y`` where ``p`` (or a name for the same object) is still the object the caller passed
    in: Python changes the caller's array or list in place, s2sad makes a new value and rebinds
    ``p``, so a caller that reads its object afterwards (a function of yours calling this one)
    would read the old values.  A check at run time (:func:`runtime.argument_inplace_guard`)
    refuses when the object is one that ``op=`` changes in place (arrays, lists, dicts, sets);
    numbers, tuples and strings are rebound by Python too."""
    call = s.value if isinstance(s, ir.Assign) else None
    if not isinstance(call, ir.Call) or "augmented" not in call.extra or \
            not isinstance(call.args[0], str):
        return
    var = call.args[0]
    if getattr(fn, "kinds", {}).get(var) in ("f", "i", "z"):
        return
    hit = sorted(aliases.get(var, {var}) & set(callers))
    if not hit:
        return
    guards.append((id(s), ir.ExprStmt(ir.Call(
        ir.Static(runtime.argument_inplace_guard, "_rt.argument_inplace_guard"),
        [var, ir.Const(getattr(call.fn, "obj", None)), ir.Const(call.extra["augmented"]),
         ir.Const(hit[0]), ir.Const(s.origin)]), s.origin)))


def _check_augmented_shared(fn, s, pos, guards):
    """``a *= y`` on an array or list changes the object in place; s2sad makes a new value and
    rebinds ``a``.  That is right only while nothing else that holds the object (or shares its
    memory: a view ``a = x[1:]``, ``x.T``, ``np.asarray(x)``..., the array it is a view of, a list
    holding it) is read afterwards.  A sure view read afterwards is refused here; a name that may
    share the object (``r = m[0]``: a row of a matrix, or a number; a function's result) gets a
    check at run time (:func:`runtime.inplace_guard`) that refuses when the object is one that
    ``op=`` changes in place."""
    from ..frontend.analysis import may_run_after
    call = s.value if isinstance(s, ir.Assign) else None
    if not isinstance(call, ir.Call) or not call.args or not isinstance(call.args[0], str) or \
            "augmented" not in call.extra and "augmented_item" not in call.extra:
        return
    var = call.args[0]
    kinds = getattr(fn, "kinds", {})
    if kinds.get(var) in ("f", "i", "z"):
        return
    item = back = None
    if "augmented_item" in call.extra:
        # ``obj[key] op= v``, lowered to ``var = obj[key]; t = var op v; obj[key] = t``: the
        # item is written back (for an array, into its memory), but in Python ``var``'s object
        # is changed in place, which other items of a list or dict, and other names, may hold
        back = _write_back_stmt(fn, s)
        if back is None or kinds.get(back.obj) == "a":
            return
        item = back.obj, _key_operand(back)
    # who sees a change of ``var``'s object: SYM links (aliases, views: both see each other's
    # changes), PART links a -> b (a is held by b: an element, a list item), ELEM links (two
    # containers holding the same elements: ``list(v)``, ``zip(...)``)
    adj = {}

    def link(a, b, kind, certain=False):
        if not isinstance(a, str) or not isinstance(b, str) or a == b or \
                kinds.get(b) in ("f", "i", "z") or kinds.get(a) in ("f", "i", "z"):
            return
        adj.setdefault(a, []).append((b, kind, certain))
        if kind != "part":
            adj.setdefault(b, []).append((a, kind, certain))
        else:                       # (b holds a: another item of b may be the same object)
            adj.setdefault(b, []).append((a, "held", False))
    for t in ir.walk(fn.body):
        if t is not s and not may_run_after(pos, t, s):
            continue
        if isinstance(t, ir.Assign) and isinstance(t.value, str):
            link(t.target, t.value, "sym", True)
        elif isinstance(t, ir.Assign) and isinstance(t.value, ir.Call):
            c = t.value
            names = [a for a in c.args if isinstance(a, str)] + \
                [v for _, v in c.kwargs if isinstance(v, str)]
            f = c.fn.obj if isinstance(c.fn, ir.Static) else None
            if "augmented" in c.extra:
                link(t.target, c.args[0], "sym", True)   # (Python's result is the same object)
            elif _is_view_call(c) or f in _MAY_RETURN_ARGUMENT:
                getitem = f in (operator.getitem, runtime.subscript)
                idx = c.args[1] if getitem and len(c.args) > 1 else None
                sliced = isinstance(idx, ir.Index) and any(
                    isinstance(p, ir.Slice) or isinstance(p, ir.Const) and
                    (p.value is Ellipsis or p.value is None) for p in idx.parts)
                src = kinds.get(c.args[0]) if c.args else None
                if getitem and src == "c":
                    if not sliced:                       # an item of a list: held by the list
                        link(t.target, c.args[0], "part")
                    else:                                # a slice: a new list, the same items
                        link(t.target, c.args[0], "elem")
                    continue
                for a in (names[:1] if getitem or isinstance(c.fn, (ir.Attr, ir.Method))
                          else names):
                    # x[i] of an array: a row (a view) or a number
                    link(t.target, a, "sym", not getitem or sliced)
            elif (src := returned_operand(c)) is not None:
                # a.astype(t, copy=False), a.conj(), np.array(a, copy=None)...: a, at times
                link(t.target, src, "sym")
            elif f in (runtime.build_list, runtime.build_tuple, runtime.build_dict):
                for a in names:
                    link(a, t.target, "part")
            elif c.cls == "primitive" and c.rule is not None and \
                    c.rule.kind not in ("any", "container", "getitem"):
                # arithmetic: a new array or number; ``[a] * 3``, ``l1 + l2``: a new list of
                # the same items (not np.stack([...]) of a list: a new array)
                if f in (operator.mul, operator.add):
                    for a in names:
                        if kinds.get(a) == "c":
                            link(t.target, a, "elem")
                continue
            elif c.cls == "primitive" and c.rule is not None:
                for a in names:                          # list(v), zip(v, w)...: v's elements
                    link(t.target, a, "elem")
            else:
                # functions s2sad has no rule for, user functions: the result may be an argument
                for a in names + list(c.extra.get("captured", ())):
                    link(t.target, a, "sym")
        elif isinstance(t, ir.SetItem) and isinstance(t.obj, str):
            for a in ir.operand_vars(t.value):
                link(a, t.obj, "part")
        elif isinstance(t, ir.Mutate) and isinstance(t.obj, str):
            for a in t.call.reads()[1:]:
                link(a, t.obj, "part")

    def seen_by(certain_only, container=False):
        # (name, whether the object itself changed or one it holds); a list extended in place
        # does not change the elements it shares with another container
        todo, done = [(var, "self")], set()
        while todo:
            n, state = todo.pop()
            if (n, state) in done:
                continue
            done.add((n, state))
            for m, kind, certain in adj.get(n, ()):
                if certain_only and not certain:
                    continue
                if kind == "elem" and state == "self" and (container or kinds.get(n) == "c"):
                    continue
                if kind == "held":
                    # an item of a container that holds the object may be the object itself
                    # (``[a] * 3``, ``(a, a)``); a container changed itself changes no item
                    if state == "part":
                        todo.append((m, "self"))
                    continue
                todo.append((m, state if kind == "sym" else "part"))
        return {n for n, _ in done}
    # (the item's container: its slot gets the new value; its other slots are the guard's)
    own = {var, s.target} | ({item[0]} if item is not None else set())
    later = set()
    for t in ir.walk(fn.body):      # (the write-back reads the key and container, not var)
        if t is not s and t is not back and may_run_after(pos, s, t):
            later.update(v for v in t.reads() if v not in own)
    later -= getattr(fn, "rederived", {}).get(id(s), set())    # (views bound again after s)
    later -= _bound_before_read(fn, s, later, back)
    if back is not None:
        # (``for k, v in d.items(): d[k] -= ...``: the loop's pairs hold this pass's value, and
        # later passes read other keys' pairs)
        loop = (_block_of(fn.body, back, None) or (None, None))[1]
        if isinstance(loop, ir.For):
            later.discard(own_pass_sequence(fn, loop, back))
    hit = sorted(later & seen_by(True))
    name = call.extra["augmented"] if item is None else call.extra["augmented_item"]
    op = _opname_of(call)
    fix = (f"write `{name} = {name} {op} ...` to make a new value, or make `{name}` a copy "
           f"(`.copy()`, `list(...)`) before changing it")
    if hit:
        w = next((v for v in hit if not v.startswith("_")), hit[0])
        other = f"`{w}`" if not w.startswith("_") else "another value"
        raise UnsupportedSyntaxError(
            f"`{name} {op}= ...` changes `{name}` in place, and `{name}` shares memory with "
            f"{other} (a view, e.g. a slice, `.T`, `.reshape`, `np.asarray`), which is read "
            f"afterwards; s2sad makes a new value for `{name}` and does not follow the change "
            f"into {other}", origin=s.origin, fix=fix)
    hit = sorted(later & seen_by(False))
    if item is not None:
        # at run time: whether another item of the container, or a name read afterwards,
        # holds the item or shares its memory (all of those bound here), or may (not all)
        seen = hit if set(hit) <= surely_bound(fn).get(id(s), frozenset()) else []
        w = next((v for v in hit if not v.startswith("_")), None)
        other = f"`{w}`" if w is not None else "another value"
        guards.append((id(s), ir.ExprStmt(ir.Call(
            ir.Static(runtime.item_inplace_guard, "_rt.item_inplace_guard"),
            [var, item[0], item[1], ir.Const(getattr(call.fn, "obj", None)), ir.Const(name),
             ir.Const(other), ir.Const(s.origin), ir.Const(bool(hit) and not seen)] + seen),
            s.origin)))
        return
    if hit:
        # (a list changed in place (``l += [v]``) changes no element it shares with another)
        arrays_only = not (later & seen_by(False, container=True))
        w = next((v for v in hit if not v.startswith("_")), hit[0])
        other = f"`{w}`" if not w.startswith("_") else "another value"
        # (when all of them are bound here, the guard looks at what they hold: ``list(zip(a,
        # x))`` of a vector holds numbers, not views)
        seen = hit if set(hit) <= surely_bound(fn).get(id(s), frozenset()) else []
        guards.append((id(s), ir.ExprStmt(ir.Call(
            ir.Static(runtime.inplace_guard, "_rt.inplace_guard"),
            [var, ir.Const(getattr(call.fn, "obj", None)), ir.Const(name), ir.Const(other),
             ir.Const(fix), ir.Const(s.origin), ir.Const(arrays_only)] + seen), s.origin)))


def _write_back_stmt(fn, s):
    """The ``obj[index] = t`` statement right after ``s`` (``t = item op v``), or None."""
    found = _block_of(fn.body, s, None)
    if found is None:
        return None
    block = found[0]
    k = next(i for i, t in enumerate(block) if t is s)
    t = block[k + 1] if k + 1 < len(block) else None
    if isinstance(t, ir.SetItem) and t.value == s.target and isinstance(t.obj, str):
        return t
    return None


def _key_operand(t):
    """The key of the write ``t`` (``obj[index] = ...`` or ``obj.attr = ...``) as an operand of
    a call (an attribute's name as a constant; a slice's slot: not known, None)."""
    if t.attr is not None:
        return ir.Const(t.attr)
    key = t.index
    if isinstance(key, ir.Index):
        if any(isinstance(p, ir.Slice) for p in key.parts):
            return ir.Const(None)
        return tuple(key.parts) if key.is_tuple else key.parts[0]
    return key


def _bound_before_read(fn, s, names, back=None):
    """The names among ``names`` that every way on from ``s`` binds again before anything can
    read them: the object such a name holds when ``s`` runs is never read afterwards.  Followed:
    the straight-line statements after ``s`` in its block (assignments, item writes, calls), up
    to the first that is not one (a branch, a loop); in a ``for`` loop's body then the next
    pass's from the body's start, for names that nothing outside the loop reads.  (``E += a;
    E += b`` in a loop: each one's result, which holds E's object, is bound again in the next
    pass before ``E = ...`` reads it.)  ``back``: the write-back of an augmented item write
    right after ``s`` (``d[k] = t``), which stores the new value and reads nothing s changed."""
    found = _block_of(fn.body, s, None)
    if found is None:
        return set()
    block, loop = found
    k = next(i for i, t in enumerate(block) if t is s)
    out, todo, whole = _bound_first([t for t in block[k + 1:] if t is not back], set(names))
    if todo and whole and isinstance(loop, ir.For):
        inside = {id(t) for t in ir.walk(loop.body)}
        outside = {v for t in ir.walk(fn.body) if id(t) not in inside for v in t.reads()}
        again = _bound_first(block[:k], todo - outside - {loop.target})[0]
        out |= again
    return out


def _bound_first(stmts, todo):
    """(names of ``todo`` that the straight-line assignments at the start of ``stmts`` bind before
    reading them, those neither bound nor read there, whether every statement was followed)."""
    out = set()
    for t in stmts:
        if not todo:
            return out, todo, True
        if not isinstance(t, (ir.Assign, ir.SetItem, ir.ExprStmt, ir.Mutate)):
            return out, todo, False
        todo = todo - set(t.reads())                # (read first: the old object)
        if isinstance(t, ir.SetItem) and isinstance(t.obj, str):
            todo = todo - {t.obj}
        bound = _binds(t)
        if bound and isinstance(bound[0], str) and bound[0] in todo:
            out.add(bound[0])
            todo = todo - {bound[0]}
    return out, todo, True


def _block_of(block, s, owner):
    """(the statement list that holds ``s``, the statement whose body it is or None), or None."""
    if any(t is s for t in block):
        return block, owner
    for t in block:
        for b in ir.children(t):
            found = _block_of(b, s, t if b is getattr(t, "body", None) else None)
            if found is not None:
                return found
    return None


# functions whose result is taken for a view of their argument (which it is for an array, or the
# array itself); calls that return their argument only at times: aliases.returned_operand
_MAY_RETURN_ARGUMENT = {np.real, np.imag, np.asarray, np.asanyarray}


def drop_proven_guards(fn, types):
    """Leave out the checks before ``name op= ...`` (``runtime.inplace_guard``,
    ``runtime.argument_inplace_guard``) whose value the derivative's types prove a number: a
    number is rebound by ``op=``, never changed in place (the kinds the checks were placed by do
    not know ``acc = 0.0; acc += img[i, j] * k[a, b]`` is a float; the types, from the arguments'
    dtypes and ndims, do); and the sharing checks before writes into arrays made fresh before
    them (:func:`_drop_fresh_share_guards`)."""
    guards = (runtime.inplace_guard, runtime.argument_inplace_guard)

    def proven(s):
        c = s.call if isinstance(s, ir.ExprStmt) else None
        return c is not None and isinstance(c.fn, ir.Static) and c.fn.obj in guards and \
            c.args and isinstance(c.args[0], str) and (types.get(c.args[0]) or ("",))[0] == "s"

    def block(b):
        b[:] = [s for s in b if not proven(s)]
        for s in b:
            for child in ir.children(s):
                block(child)
    block(fn.body)
    # (a name a closure captures may be read through it, unseen here: never taken for fresh)
    from .common import _cells, _is_make
    captured = {v for s in ir.walk(fn.body) if isinstance(s, ir.Assign) and _is_make(s.value)
                for v in _cells(s)}
    _drop_fresh_share_guards(fn.body, set(), types, captured)


# constructors whose array shares memory with nothing (each call makes a new one)
_FRESH = (np.empty, np.zeros, np.ones, np.full, np.empty_like, np.zeros_like, np.ones_like,
          np.full_like, np.copy)
_SHAPE_ATTRS = ("shape", "size", "ndim", "dtype")


def _fresh_call(call, types):
    if not isinstance(call, ir.Call):
        return False
    if isinstance(call.fn, ir.Static):
        return any(call.fn.obj is f for f in _FRESH)
    return isinstance(call.fn, ir.Method) and call.fn.name == "copy" and not call.kwargs and \
        len(call.args) == 1 and isinstance(call.args[0], str) and \
        (types.get(call.args[0]) or ("",))[0] == "a"


def _aliases(s, v, types):
    """Whether simple statement ``s`` may make another name hold (or share memory with) the array
    ``v``: any read of ``v`` but an element write into it, an element read the types prove a
    number, ``len(v)``, ``v.shape``... and the sharing checks themselves."""
    if v not in s.reads() and not (isinstance(s, (ir.SetItem, ir.Mutate, ir.DelItem)) and
                                   s.obj == v):
        return False
    if isinstance(s, ir.SetItem):
        return s.attr is not None or v in ir.operand_vars(s.value) or \
            v in ir.operand_vars(s.index)
    call = s.call if isinstance(s, ir.ExprStmt) else \
        s.value if isinstance(s, ir.Assign) else None
    if not isinstance(call, ir.Call) or call.kwargs:
        return True
    rest = [a for a in call.args[1:] if v in ir.operand_vars(a)]
    if isinstance(call.fn, ir.Static) and call.fn.obj is runtime.share_guard:
        return False
    if not call.args or call.args[0] != v or rest:
        return True
    if isinstance(call.fn, ir.Attr):
        return call.fn.name not in _SHAPE_ATTRS
    if isinstance(call.fn, ir.Static) and call.fn.obj is len:
        return False
    return not (isinstance(call.fn, ir.Static) and call.fn.obj is operator.getitem and
                isinstance(s, ir.Assign) and (types.get(s.target) or ("",))[0] == "s")


def _drop_fresh_share_guards(block, fresh, types, captured):
    """Leave out the sharing checks (``runtime.share_guard``) before a write into an array that
    the same block made fresh earlier (``vn = np.empty(n)``, ``y = x.copy()``) when nothing since
    may have made another name hold it: the names the check lists held other objects (a loop
    around makes a new array per trip; a loop whose body writes into it sees no alias made in any
    of its trips).  The kinds and objects the checks were placed by are flow-insensitive: a step
    function called in a loop, returning the arrays it filled, gets a check per element written
    (``xn[i] = ...`` against the previous step's ``x``)."""
    from ..frontend.analysis import bound_names
    fresh = set(fresh)
    keep = []
    for s in block:
        call = s.call if isinstance(s, ir.ExprStmt) else None
        if call is not None and isinstance(call.fn, ir.Static) and \
                call.fn.obj is runtime.share_guard and call.args and call.args[0] in fresh:
            continue
        keep.append(s)
        if ir.children(s):
            stay = set()
            if fresh:                   # (what it binds and reads, for the names still fresh)
                inner = list(ir.walk([s]))
                bound = {n for x in inner for n in bound_names(x)}
                stay = {v for v in fresh if v not in bound and
                        not any(_aliases(x, v, types) for x in inner if not ir.children(x))
                        and not any(v in x.reads() for x in inner if ir.children(x))}
            for child in ir.children(s):
                _drop_fresh_share_guards(child, stay, types, captured)
            fresh = stay
            continue
        fresh = {v for v in fresh if not _aliases(s, v, types) and v not in bound_names(s)}
        if isinstance(s, ir.Assign) and _fresh_call(s.value, types) and s.target not in captured:
            fresh.add(s.target)
    block[:] = keep
