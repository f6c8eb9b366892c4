"""Readers that run later than s2sad computes them: map/filter/starmap and generator
expressions (computed where they are made, by Python when their values are taken), whose
function's state changes in between (:func:`_check_lazy`), and a bound method taken from an
object changed before the call (:func:`_check_bound_methods`)."""
import functools

from .. import ir, runtime
from ..errors import UnsupportedSyntaxError
from .aliases import _copy_aliases
from .common import _hashable, _remade_between


_ITER_MAKERS_RT = {runtime.izip, runtime.ienumerate, runtime.ireversed, runtime.iiter}


_TAKES_FUNCTIONS = {sorted, min, max, functools.partial, functools.reduce, runtime.make_closure,
                    runtime.apply}


def _deferred_state(fn, var, binds, late, held, seen=None):
    """What calling the function in ``var`` reads when it runs: names a closure captured
    (``late``: rebinding them counts too, closures read their cells when called) and objects
    it was made from (``held``: a bound method's object, functools.partial's arguments, a
    closure's default values), following closures that call closures."""
    seen = set() if seen is None else seen
    if var in seen:
        return
    seen.add(var)
    for b in binds.get(var, ()):
        v = b.value
        if isinstance(v, str):
            _deferred_state(fn, v, binds, late, held, seen)         # g = h
        elif isinstance(v, ir.Call) and isinstance(v.fn, ir.Static) and \
                v.fn.obj is runtime.make_closure:
            for key, a in zip(v.args[0].value, v.args[1:]):
                if isinstance(a, str):
                    (held if key.endswith("=") else late).add(a)
                    _deferred_state(fn, a, binds, late, held, seen)
        elif isinstance(v, ir.Call) and not (isinstance(v.fn, ir.Static) and
                                             v.fn.obj in (runtime.build_list, runtime.build_tuple,
                                                          runtime.build_dict)):
            for a in v.args:                      # o.m, functools.partial(g, a), ...
                if isinstance(a, str):
                    held.add(a)
                    _deferred_state(fn, a, binds, late, held, seen)


def _iterator_names(fn):
    """Names bound to an iterator s2sad made (zip, enumerate, iter, reversed, map, filter,
    generator expressions)."""
    return {s.target for s in ir.walk(fn.body) if isinstance(s, ir.Assign) and
            isinstance(s.value, ir.Call) and isinstance(s.value.fn, ir.Static) and
            _hashable(s.value.fn.obj) and s.value.fn.obj in _ITER_MAKERS_RT}


def _check_lazy(fn, pos):
    """map/filter/starmap and generator expressions are computed where they are made (the
    lowering builds their values there: lower._lazy); Python computes each value when it is
    taken.  The two differ when, in between, what their function reads changes (a name a
    closure captured, rebound or changed in place; the object of a bound method), or when an
    iterator they take values from (walking it, or in their function) is read elsewhere too.
    Both are refused."""
    from ..frontend.analysis import may_run_after, _mutated, bound_names
    binds = {}
    for s in ir.walk(fn.body):
        if isinstance(s, ir.Assign):
            binds.setdefault(s.target, []).append(s)
    iterators = None
    aliases = None
    for made in ir.walk(fn.body):
        v = made.value if isinstance(made, ir.Assign) else None
        lazy = v.extra.get("lazy") if isinstance(v, ir.Call) else None
        if lazy is None or lazy.get("dropped"):
            continue
        it, token = made.target, lazy["token"]
        late, held = set(), set()
        if lazy["fn"] is None:                    # a generator: it reads its names when it runs
            for n in v.extra.get("sources", ()):
                late.add(n)
                _deferred_state(fn, n, binds, late, held)
        elif isinstance(lazy["fn"], str):
            _deferred_state(fn, lazy["fn"], binds, late, held)
        walks = set(v.extra.get("sources", ()))
        uses = [t for t in ir.walk(fn.body) if t is not made and it in t.reads()]
        what = lazy["what"] if lazy["fn"] is None else f"the function given to {lazy['what']}"
        this = "this generator expression" if lazy["fn"] is None else f"this {lazy['what']}"
        line = made.origin.line

        def ours(t):
            c = t.value if isinstance(t, ir.Assign) else getattr(t, "call", None)
            return isinstance(c, ir.Call) and c.extra.get("lazy_of") is token

        if late or held:
            if aliases is None:
                aliases = _copy_aliases(fn)
            for s in ir.walk(fn.body):
                if s is made or ours(s) or not may_run_after(pos, made, s):
                    continue
                changed = s.obj if isinstance(s, (ir.SetItem, ir.Mutate, ir.DelItem)) and \
                    isinstance(s.obj, str) else _mutated(s)
                hit = None
                if changed is not None and aliases.get(changed, {changed}) & (late | held):
                    hit = changed
                elif late & set(bound_names(s)) and not isinstance(s, ir.For):
                    hit = sorted(late & set(bound_names(s)))[0]
                if hit is None:
                    continue
                if any(may_run_after(pos, s, t) and not _remade_between(pos, s, made, t)
                       for t in uses):
                    name = f"`{hit}`" if not hit.startswith("_") else "a value"
                    raise UnsupportedSyntaxError(
                        f"this line changes {name}, which {what} (line {line}) reads; Python "
                        f"computes its values only when they are taken, after this change, "
                        f"s2sad where it is made", origin=s.origin,
                        fix=f"take the values where they are made (`list(...)`), or give the "
                            f"function the value it needs as an argument or a default "
                            f"(`lambda t, v=v: ...`)")
        if iterators is None:
            iterators = _iterator_names(fn)
        shared = sorted((walks | late | held) & iterators)
        for name in shared:
            other = next((t for t in ir.walk(fn.body) if t is not made and not ours(t) and
                          name in t.reads() and may_run_after(pos, made, t)), None)
            if other is not None and uses:
                shown = f"`{name}`" if not name.startswith("_") else "an iterator"
                raise UnsupportedSyntaxError(
                    f"{this} takes values from {shown} (walking it, or in its function), which "
                    f"line {other.origin.line} reads "
                    f"too; Python takes them only when its values are used, s2sad where it is "
                    f"made, so the two would take different values", origin=made.origin,
                    fix=f"take all the values where they are made (`vals = list(...)`), or "
                        f"give each its own list of the values (`vals = list({name})` first)")


def _check_bound_methods(fn, pos):
    """``g = o.m`` then ``o`` changed, then ``g(...)``: a bound method reads ``o`` when it is
    called, while its derivative goes back to ``o`` where the method was taken.  Refused."""
    from ..frontend.analysis import may_run_after, _mutated
    aliases = None
    for made in ir.walk(fn.body):
        v = made.value if isinstance(made, ir.Assign) else None
        if not (isinstance(v, ir.Call) and isinstance(v.fn, ir.Attr) and v.args and
                isinstance(v.args[0], str)):
            continue
        g, obj = made.target, v.args[0]
        calls = [t for t in ir.walk(fn.body) if t is not made and _calls_var(t, g)]
        if not calls:
            continue
        if aliases is None:
            aliases = _copy_aliases(fn)
        group = aliases.get(obj, {obj})
        for s in ir.walk(fn.body):
            if s is made or not may_run_after(pos, made, s):
                continue
            changed = s.obj if isinstance(s, (ir.SetItem, ir.Mutate, ir.DelItem)) and \
                isinstance(s.obj, str) else _mutated(s)
            if changed is None or changed not in group:
                continue
            if any(may_run_after(pos, s, t) and not _remade_between(pos, s, made, t)
                   for t in calls):
                shown = f"`{obj}`" if not obj.startswith("_") else "the object"
                raise UnsupportedSyntaxError(
                    f"this line changes {shown} after its method `{v.fn.name}` was taken on line "
                    f"{made.origin.line} and before that method is called; the call reads the "
                    f"changed object, which s2sad does not follow", origin=s.origin,
                    fix=f"call `{obj}.{v.fn.name}(...)` where it is needed instead of keeping the "
                        f"bound method")


def _calls_var(t, g):
    """Whether statement ``t`` calls ``g`` or passes it as a function (``key=g``, map(g, ...))."""
    c = t.value if isinstance(t, ir.Assign) else getattr(t, "call", None)
    if not isinstance(c, ir.Call) or g not in c.reads():
        return False
    if isinstance(c.fn, ir.Dynamic) and c.fn.var == g:
        return True
    if any(v == g for _, v in c.kwargs):
        return True
    return isinstance(c.fn, ir.Static) and _hashable(c.fn.obj) and c.fn.obj in _TAKES_FUNCTIONS
