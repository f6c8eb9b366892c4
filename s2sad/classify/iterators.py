"""Iterators that see an in-place change: an object changed while an iterator over it is still
to be used (:func:`_check_pending_iterators`), and a ``for`` loop whose body changes what it
walks (:func:`_check_loop_sources`).  Both follow the object through any name
(:class:`.objects.Objects`)."""
from .. import ir, runtime
from ..errors import UnsupportedSyntaxError
from ..frontend.analysis import _changed_in_place, _made_again_before
from .common import _block_chains, _opname_of


def _check_pending_iterators(fn, pos, varied):
    """An object changed in place while an iterator over it (zip, enumerate, iter, reversed, map,
    filter, a generator, a dict view) has yet to be used up: Python's iterator then yields the
    changed object's values, whose adjoints s2sad would send to the positions the object had
    when the iterator was made (and ``a *= y`` on an array, which s2sad rebinds, would not even
    give Python's values).  Refused, whatever name the change goes through: another name bound
    to the same object, a join of branches, a container or attribute it was put in, a function
    that returned it (objects.Objects follows these)."""
    from ..frontend.analysis import may_run_after
    from .objects import Objects, iterator_sources
    makers = [(s, made) for s in ir.walk(fn.body) if (made := iterator_sources(s)) is not None]
    if not makers:
        return
    objs = Objects(fn)
    stmts = list(ir.walk(fn.body))
    chains = _block_chains(fn)
    for s in stmts:
        changed, how = _changed_in_place(fn, s)
        rebound = s.target if isinstance(s, ir.Assign) else None
        if changed is None and rebound is None:
            continue
        hit = objs.of(changed) if changed is not None else set()
        for made, (call, names, late) in makers:
            if s is made or not may_run_after(pos, made, s):
                continue
            it = made.target
            rebinds = False
            if hit & objs.sources.get(("s", id(made)), set()):
                name = changed
            elif late and rebound in names:
                # (a generator reads its names when it runs: rebinding counts)
                name, rebinds = rebound, True
            else:
                continue
            if not (how == "augmented" or it in varied or name in varied or
                    any(n in varied for n in names)):
                continue          # (nothing carries a derivative: Python's values are s2sad's)
            i_s, loops_s = pos[id(s)]
            if isinstance(name, str) and i_s < pos[id(made)][0] and any(
                    isinstance(t, ir.Assign) and t.target == name and
                    pos[id(t)][0] < i_s and pos[id(t)][1] <= loops_s and
                    pos[id(t)][1] <= pos[id(made)][1] for t in stmts):
                continue          # (in a loop, rebound to a new object before it is changed)
            me = ("s", id(made))
            later = [t for t in stmts if t is not s and may_run_after(pos, s, t) and
                     any(objs.holds(v, me) for v in t.reads()) and
                     not _made_again_before(chains, made, s, t)]
            if later:
                user = isinstance(name, str) and not name.startswith("_")
                what = f"`{name}`" if user else "a list, array or dict"
                if rebinds:
                    raise UnsupportedSyntaxError(
                        f"this line binds {what} anew while a generator expression made on line "
                        f"{made.origin.line}, which reads {what}, is still to be used: Python runs "
                        f"the generator when its values are taken, with the new value; s2sad "
                        f"computes its values where it is made", origin=s.origin,
                        fix=f"use the generator up before binding {what} again (e.g. `vals = "
                            f"list(...)`), or use another name")
                if how == "augmented":
                    op = f"{name} {_opname_of(s.value)}= ..."
                    raise UnsupportedSyntaxError(
                        f"`{op}` changes {what} in place (an array or a list) while an iterator or "
                        f"dict view made on line {made.origin.line} over the same object is still "
                        f"to be used: Python's iterator then yields the changed values",
                        origin=s.origin,
                        fix=f"write `{name} = {name} {_opname_of(s.value)} ...` (a new value), or use "
                            f"the iterator up first (e.g. `pairs = list(zip(...))`)")
                raise UnsupportedSyntaxError(
                    f"this line changes {what} in place while an iterator or dict view made on "
                    f"line {made.origin.line} over the same object (under this or another name) "
                    f"is still to be used: Python's iterator then yields the changed values, and "
                    f"s2sad cannot tell which of them they are", origin=s.origin,
                    fix=f"use the iterator up before changing `{name}` (e.g. `pairs = list(zip("
                        f"...))`), or change a copy (`{name} = {name}.copy()`, `list(...)`)"
                    if user else "use the iterator up before the change (e.g. `pairs = "
                                 "list(zip(...))`), or change a copy")


def _check_loop_sources(fn):
    """A ``for`` loop over a list or array whose body changes it in place: s2sad walks the values
    by index as the loop starts, Python's iterator (zip, enumerate...) sees the changes.  Refused,
    whatever name the change goes through (objects.Objects: another name, a container holding
    the object, a join of branches...)."""
    seqs = (runtime.seq, runtime.loop_seq, runtime.zip_seq, runtime.loop_zip_seq)
    objs = None

    def block(stmts):
        nonlocal objs
        for k, s in enumerate(stmts):
            v = s.value if isinstance(s, ir.Assign) else None
            if isinstance(v, ir.Call) and isinstance(v.fn, ir.Static) and v.fn.obj in seqs:
                srcs = {a for a in v.args if isinstance(a, str)}
                loop = next((t for t in stmts[k + 1:] if isinstance(t, ir.For)), None)
                if loop is not None and srcs:
                    if objs is None:
                        from .objects import Objects
                        objs = Objects(fn)
                    walked = set().union(*(objs.of(a) for a in srcs))
                    for o in walked & objs.iters:
                        walked |= objs.sources.get(o, set())
                    for t in ir.walk(loop.body):
                        # (item writes under a one-sequence loop read back live, as in Python;
                        # under zip(...) the values were taken first; growing, shrinking,
                        # reordering and ``a op= v`` (which s2sad rebinds) always)
                        changed, how = _changed_in_place(fn, t)
                        if changed is None or getattr(t, "attr", None) or \
                                isinstance(t, ir.SetItem) and v.fn.obj in seqs[:2] and \
                                (not _from_dict_view(fn, srcs) or
                                 _own_key(t, loop, s.target)):
                            continue
                        hit = objs.of(changed)
                        if not hit & walked:
                            continue
                        name = changed if isinstance(changed, str) and \
                            not changed.startswith("_") else None
                        if name is not None and name in _loop_items(loop, s.target):
                            # (``for k, v in d.items(): v *= w``: an item, changed in place)
                            op = _opname_of(t.value) if how == "augmented" else None
                            raise UnsupportedSyntaxError(
                                f"this line changes `{name}`, an item this `for` loop takes "
                                f"from what it walks, in place (the item is still held there); "
                                f"s2sad takes the loop's values as it starts, Python's "
                                f"sequence sees the change", origin=t.origin,
                                fix=f"make a new value (`{name} = {name} {op} ...`) and store it "
                                    f"where it belongs if the change is wanted there" if op else
                                f"change a copy (`{name} = {name}.copy()`) and store it where it "
                                f"belongs if the change is wanted there")
                        what = f"`{name}`" if name else "a list or array the loop walks"
                        raise UnsupportedSyntaxError(
                            f"this line changes {what} in place while a `for` loop walks it (under "
                            f"this or another name); s2sad takes the loop's values as it starts, "
                            f"Python's iterator sees the change", origin=t.origin,
                            fix=(f"loop over a copy (`for ... in list({name})`) or build a new "
                                 f"list instead of changing `{name}` inside the loop") if name
                            else "loop over a copy (`for ... in list(...)`) or build a new list "
                                 "instead of changing it inside the loop")
            for b in ir.children(s):
                block(b)
    block(fn.body)


def _own_key(t, loop, seq):
    """Whether the item write ``t`` goes under the key the loop's pass took from a dict view
    (``for k, v in d.items(): d[k] = ...``): each key is written after its own pass read it, so
    the values Python's view yields are those the loop took as it started."""
    idx = t.index
    if not (isinstance(idx, ir.Index) and not idx.is_tuple and len(idx.parts) == 1 and
            isinstance(idx.parts[0], str)):
        return False
    items = {x.target for x in loop.body if _item_of(x, {seq}, None)}      # (k, v) = _s[i]
    keys = {x.target for x in loop.body if _item_of(x, items, 0)}          # k = _pair[0]
    key = idx.parts[0]
    bound = [x for x in ir.walk(loop.body) if getattr(x, "target", None) == key]
    return key in keys and len(bound) == 1


def own_pass_sequence(fn, loop, write):
    """The name of the pair sequence that ``loop`` (a ``for`` over a dict's ``.items()``) walks,
    when ``write`` (``d[k] = ...`` in its body) goes under the key of the loop's own pass
    (:func:`_own_key`); else None.  The sequence holds this pass's value too, but later passes
    read only other pairs (another key's value: the same object only if another item of the
    dict holds it, which the item guard sees)."""
    for x in loop.body:
        c = x.value if isinstance(x, ir.Assign) else None
        if not (isinstance(c, ir.Call) and len(c.args) == 2 and isinstance(c.args[0], str) and
                _item_of(x, {c.args[0]}, None)):
            continue
        idx = c.args[1]
        if not (isinstance(idx, ir.Index) and not idx.is_tuple and
                list(idx.parts) == [loop.target]):
            continue
        seq = c.args[0]                             # (pair = seq[i], i the loop's target)
        made = [t.value for t in ir.walk(fn.body)
                if isinstance(t, ir.Assign) and t.target == seq]
        ok = len(made) == 1 and isinstance(made[0], ir.Call) and \
            isinstance(made[0].fn, ir.Static) and made[0].fn.obj in (runtime.seq, runtime.loop_seq)
        if ok and _from_dict_view(fn, [a for a in made[0].args if isinstance(a, str)]) and \
                _own_key(write, loop, seq):
            return seq
        return None
    return None


def _item_of(x, names, const):
    """Whether statement ``x`` is ``target = name[i]`` for a name among ``names`` (``i`` the
    constant ``const``, or anything with const None)."""
    import operator
    if not (isinstance(x, ir.Assign) and isinstance(x.value, ir.Call) and
            isinstance(x.value.fn, ir.Static) and x.value.fn.obj is operator.getitem and
            len(x.value.args) == 2 and x.value.args[0] in names):
        return False
    if const is None:
        return True
    i = x.value.args[1]
    return isinstance(i, ir.Index) and not i.is_tuple and len(i.parts) == 1 and \
        isinstance(i.parts[0], ir.Const) and i.parts[0].value == const


def _loop_items(loop, seq):
    """The names ``loop`` binds to the items it takes from the sequence ``seq`` (``_s[k]``, and
    the parts of an item unpacked: ``for k, v in d.items()``)."""
    items = {seq}
    for t in ir.walk(loop.body):
        if isinstance(t, ir.Assign) and (isinstance(t.value, str) and t.value in items or
                                         _item_of(t, items, None)):
            items.add(t.target)
    return items - {seq}


def _from_dict_view(fn, names):
    """Whether a loop source may be a dict's ``.items()``/``.values()`` view: the loop takes its
    pairs as it starts, while Python's view shows a value written into the dict later in the loop
    (fuzz 9099:19866), so item writes in the body are not read back live as they are for lists."""
    defs = {}
    for s in ir.walk(fn.body):
        if isinstance(s, ir.Assign) and isinstance(s.value, ir.Call):
            defs.setdefault(s.target, []).append(s.value)
    seen, todo = set(), list(names)
    while todo:
        n = todo.pop()
        if n in seen:
            continue
        seen.add(n)
        for call in defs.get(n, ()):
            if isinstance(call.fn, ir.Method) and call.fn.name in ("items", "values"):
                return True
            if isinstance(call.fn, ir.Static) and call.fn.obj in (runtime.here, runtime.iiter):
                todo += [a for a in call.args if isinstance(a, str)]
    return False
