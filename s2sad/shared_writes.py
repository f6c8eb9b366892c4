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
"""
import operator

import numpy as np

from . import ir, runtime

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


def _chains(fn):
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
    from .frontend.analysis import may_run_after, positions
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
    chains = _chains(fn)
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
    classify._check_augmented_shared's."""
    from .frontend.analysis import _changed_in_place, _made_again_before
    from .frontend.analysis import may_run_after
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
    chains = _chains(fn)
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
            if u == w or u in redone or u in fn.params or kinds.get(u) in _NUMBER_KINDS:
                continue
            if not any(may_run_after(pos, b, s) for b in binders.get(u, ())):
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
