"""Closures whose captured state changes after they are made.

A nested ``def``/``lambda`` reads the variables it captured (its cells) when it is *called*
(Python's late binding).  The emitters give a closure's value the derivative of what it captured
where it is made (reverse: the closure's adjoint goes back to its cells at the definition, through
``_rt.dict_parts``; forward: its tangent is ``{cell: tangent}`` taken there).  A call by the
closure's own name reads the cells by name at the call (``extra["captured"]``) and is right
whatever happened in between; a call through another route (an alias, ``map``, ``sorted(key=)``,
a container) goes through the closure's value, and would see the cells as they were when the
closure was made.

So a change of what a closure reads (a cell rebound, or an object a cell may hold changed in
place: an item or attribute write, a mutating method, ``a op= v``) after the closure is made
makes the closure anew right after the change (:func:`remake`: the definition is emitted again;
Python's function reads the same cells, so what the program computes is unchanged).  The name
then holds a closure whose value follows the current state.  What that cannot fix is refused
(:func:`check`): a copy of the closure taken before the change (another name, a container, a
value made from it) and used after it, and a change the definition cannot be repeated after (the
closure is bound in several places, has default values, or the change may run where the
definition has not).
"""
from .. import ir, runtime
from .common import _cells, _is_make

_NUMBER_KINDS = ("f", "i", "z")


def _defs(fn):
    """Statements that make a closure (the user's definitions, not the ones :func:`remake` adds)."""
    return [s for s in ir.walk(fn.body) if isinstance(s, ir.Assign) and _is_make(s.value) and
            not s.value.extra.get("remade")]


def _has_defaults(s):
    return any(k.endswith("=") for k in s.value.args[0].value)


def _changes(fn, s, objs):
    """(statement, name) for each statement that may change what the closure made by ``s``
    reads: rebinding one of its cells, or changing in place an object a cell may hold."""
    from ..frontend.analysis import _changed_in_place
    from ..frontend.analysis import bound_names
    cells = _cells(s)
    if not cells:
        return []
    reach = {}
    for v in cells:
        reach[v] = objs.reach(objs.of(v)) if objs is not None else set()
    out = []
    for t in ir.walk(fn.body):
        if t is s or (isinstance(t, ir.Assign) and _is_make(t.value) and
                      t.value.extra.get("remade") is s):
            continue
        hit = next((v for v in cells if v in bound_names(t)), None)
        if hit is None:
            changed, how = _changed_in_place(fn, t)
            # (``a op= v``: s2sad rebinds ``a`` on the next line, which counts; another name of
            # the object is writes._check_augmented_shared's)
            if isinstance(changed, str) and how != "augmented":
                if changed in cells:
                    hit = changed
                elif objs is not None:
                    mine = objs.of(changed)
                    hit = next((v for v in cells if mine & reach[v]), None)
                    if hit is not None:
                        hit = changed
        if hit is not None:
            out.append((t, hit))
    return out


def _objects(fn, kinds):
    from .objects import Objects
    try:
        return Objects(fn, kinds)
    except Exception:                           # (an analysis failure: names only)
        return None


def _parents(fn):
    """id(statement) -> the block (list) that holds it."""
    out = {}

    def walk(block):
        for t in block:
            out[id(t)] = block
            for b in ir.children(t):
                walk(b)
    walk(fn.body)
    return out


def _dominates(chains, s, t):
    """Whether every way to ``t`` runs ``s`` first, in this pass (``s`` lies in a block around
    ``t``, before it)."""
    cs, ct = chains[id(s)], chains[id(t)]
    if len(ct) < len(cs) or ct[:len(cs) - 1] != cs[:-1]:
        return False
    block, k = cs[-1]
    bt, kt = ct[len(cs) - 1]
    return bt == block and kt > k


def _binders(fn, g):
    from ..frontend.analysis import bound_names
    return [t for t in ir.walk(fn.body) if g in bound_names(t) and not
            (isinstance(t, ir.Assign) and _is_make(t.value) and t.value.extra.get("remade"))]


def _remade_after(parents, t, s):
    block = parents.get(id(t))
    if block is None:
        return False
    k = next(i for i, u in enumerate(block) if u is t) + 1
    while k < len(block) and isinstance(block[k], ir.Assign) and _is_make(block[k].value) and \
            block[k].value.extra.get("remade") is not None:
        if block[k].value.extra["remade"] is s:
            return True
        k += 1
    return False


def remake(fn, kinds):
    """Make each closure anew after each change of what it reads, where the definition can be
    repeated there (see the module's docstring).  The builders run it after classification (it
    needs the value kinds and which calls change their object) and before activity analysis;
    names bound again are recorded in ``fn.rederived`` (id(change) -> names), which the checks
    of writes into shared objects (writes.py: check_writes_shared, _check_augmented_shared) leave
    out."""
    from .common import _block_chains
    from .sites import classify_call
    from ..frontend.analysis import positions, may_run_after
    defs = _defs(fn)
    if not defs:
        return
    objs = _objects(fn, kinds)
    if getattr(fn, "rederived", None) is None:
        fn.rederived = {}
    rederived = fn.rederived
    # ``a op= v`` is lowered to ``_t = a op v`` (marked augmented) and ``a = _t``
    aug = {s.target: s for s in ir.walk(fn.body) if isinstance(s, ir.Assign) and
           isinstance(s.value, ir.Call) and "augmented" in s.value.extra}
    for _ in range(8):                  # closures reading closures: a remade one changes others
        added = False
        chains, parents, pos = _block_chains(fn), _parents(fn), positions(fn)
        for s in defs:
            g = s.target
            if _has_defaults(s) or _binders(fn, g) != [s]:
                continue
            # (a closure that reads g when it is called reads it too)
            via = {g}
            for d in defs:
                if set(_cells(d)) & via:
                    via.add(d.target)
            readers = [u for u in ir.walk(fn.body) if set(u.reads()) & via]
            for t, _ in _changes(fn, s, objs):
                if not isinstance(t, (ir.Assign, ir.ExprStmt, ir.SetItem, ir.Mutate, ir.DelItem)):
                    continue
                if not _dominates(chains, s, t) or _remade_after(parents, t, s):
                    continue
                if not any(may_run_after(pos, t, u) for u in readers if u is not t):
                    continue
                call = s.value
                again = ir.Call(call.fn, list(call.args), list(call.kwargs),
                                extra=dict(call.extra, remade=s))
                classify_call(again, kinds, t.origin)
                block = parents[id(t)]
                k = next(i for i, u in enumerate(block) if u is t)
                block.insert(k + 1, ir.Assign(g, again, t.origin))
                added = True
                # (writes.rederive_views: a name bound again after a write sees the write)
                rederived.setdefault(id(t), set()).add(g)
                if isinstance(t, ir.Assign) and isinstance(t.value, str) and t.value in aug:
                    rederived.setdefault(id(aug[t.value]), set()).add(g)
                chains, parents, pos = _block_chains(fn), _parents(fn), positions(fn)
        if not added:
            break


def _direct(u, g):
    """A call by the closure's own name: it reads the cells by name when it runs."""
    c = u.value if isinstance(u, ir.Assign) else getattr(u, "call", None)
    return isinstance(c, ir.Call) and isinstance(c.fn, ir.Dynamic) and c.fn.var == g and \
        c.extra.get("captured") is not None and \
        g not in [x for op in c.args + [v for _, v in c.kwargs] for x in ir.operand_vars(op)]


def _only_as_key(call, held):
    """The closure given as a key or folding function only: the result is not the closure."""
    import functools
    fn = call.fn
    if not (isinstance(fn, ir.Static) and fn.obj in (sorted, min, max, functools.reduce,
                                                     runtime.make_closure)):
        return False
    if fn.obj is runtime.make_closure:
        return True         # a closure reading the closure's name: it reads it when called
    pos = [a for a in call.args if isinstance(a, str) and a in held]
    if fn.obj is functools.reduce:
        return all(a == call.args[0] for a in pos) and \
            not any(v in held for _, v in call.kwargs if isinstance(v, str))
    return not pos and all(k == "key" for k, v in call.kwargs if isinstance(v, str) and v in held)


def _holders(fn, g, kinds):
    """Variables that may hold the closure in ``g`` (a copy, a container holding it, a value
    made from it), with the statements that put it there."""
    held = {g}
    adders = {}
    changed = True
    while changed:
        changed = False
        for t in ir.walk(fn.body):
            got = None
            if isinstance(t, ir.Assign):
                v = t.value
                if isinstance(v, str):
                    got = t.target if v in held else None
                elif isinstance(v, ir.Call) and not (isinstance(v.fn, ir.Static) and
                                                     v.fn.obj is runtime.make_closure):
                    ops = {x for op in v.args + [kv for _, kv in v.kwargs]
                           for x in ir.operand_vars(op)}
                    if ops & held and kinds.get(t.target) not in _NUMBER_KINDS and \
                            not _only_as_key(v, held):
                        got = t.target
            elif isinstance(t, ir.SetItem) and isinstance(t.obj, str) and \
                    set(ir.operand_vars(t.value)) & held:
                got = t.obj
            elif isinstance(t, ir.Mutate) and isinstance(t.obj, str) and \
                    set(t.call.reads()[1:]) & held:
                got = t.obj
            if got is None or got == g:
                continue
            if t not in adders.setdefault(got, []):
                adders[got].append(t)
            if got not in held:
                held.add(got)
                changed = True
    return held, adders


def check(fn, varied):
    """Refuse a closure whose captured state changes while a value of it made before the change
    is used after it (see the module's docstring).  The builders run it after classify.finish."""
    from .common import _remade_between
    from ..errors import UnsupportedSyntaxError
    from ..frontend.analysis import positions, may_run_after
    defs = _defs(fn)
    if not defs:
        return
    kinds = getattr(fn, "kinds", {}) or {}
    objs = _objects(fn, kinds)
    pos = positions(fn)
    parents = _parents(fn)
    for s in defs:
        g = s.target
        changes = [(t, v) for t, v in _changes(fn, s, objs) if may_run_after(pos, s, t)]
        if not changes:
            continue
        cells = _cells(s)
        if not any(v in varied for v in cells) and not any(v in varied for _, v in changes):
            continue
        held, adders = _holders(fn, g, kinds)
        remakes = [t for t in ir.walk(fn.body) if isinstance(t, ir.Assign) and
                   _is_make(t.value) and t.value.extra.get("remade") is s]
        adders[g] = _binders(fn, g) + remakes
        for t, v in changes:
            handled = _remade_after(parents, t, s)
            for w in sorted(held):
                if w == g and handled:
                    continue
                uses = [u for u in ir.walk(fn.body) if w in u.reads() and u is not t and
                        may_run_after(pos, t, u) and not
                        (w == g and (_direct(u, g) or isinstance(u, ir.Assign) and
                                     _is_make(u.value)))]
                for u in uses:
                    if not any(may_run_after(pos, b, t) and not _remade_between(pos, t, b, u)
                               for b in adders.get(w, ())):
                        continue
                    what = "a lambda" if g.startswith("_") else f"the function `{g}`"
                    name = f"`{v}`" if not v.startswith("_") else "a value"
                    via = "" if w == g else \
                        (f" through `{w}`, taken from it before the change," if not w.startswith("_")
                         else " through a value taken from it before the change")
                    raise UnsupportedSyntaxError(
                        f"this line changes {name}, which {what} (line {s.origin.line}) reads when "
                        f"it is called, and the function is used{via} after the change (line "
                        f"{u.origin.line}); Python's call reads the changed value, the derivative "
                        f"s2sad gives it would follow the value as it was when the function was "
                        f"made", origin=t.origin,
                        fix=f"use the function by its own name after the change (not a copy or "
                            f"container of it taken before), define it after the change, or pass "
                            f"the value it needs as an argument")
