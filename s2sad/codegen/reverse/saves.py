"""The save plan: per variable the reverse sweep reads, by name in the tape or on a stack; the
pushes and pops (one of each for reads of one value that follow each other); copies where an
array is changed in place later, and the refusal where a call's own reverse sweep would read an
object changed after it; the tape."""
from ... import ir
from ...classify.common import _cells, _is_make
from ...errors import UnsupportedSyntaxError
from ...frontend.analysis import (bound_names, defined_in, definitions, may_run_after, mutations,
                                  positions, top_level_defs, written_arrays)
from .. import text as T
from .names import stack


_COMPOUND = (ir.If, ir.For, ir.While, ir.Try, ir.With)


def _hook_keys(items):
    """The keys of the "pops" hooks among text items (nested ones included)."""
    out = set()
    todo = list(items)
    while todo:
        it = todo.pop()
        if isinstance(it, T.Hook):
            if it.when == "pops":
                out.add(it.key)
        elif isinstance(it, T.Nest):
            todo.extend(it.body)
            if isinstance(it.orelse, T.Nest):
                todo.append(it.orelse)
            elif it.orelse:
                todo.extend(it.orelse)
    return out


class SavePlan:
    """The part of :class:`~.emitter.ReverseEmitter` that decides how values reach the reverse sweep."""

    # -- saving -----------------------------------------------------------------------------
    def plan_saves(self, rev=()):
        """Decide, per variable the reverse sweep reads, whether it travels by name or on a stack,
        and which reads of one value share one push and one pop (``rev``: the reverse sweep's
        items, whose hooks say which statements pop)."""
        defs = definitions(self.fn)
        top = top_level_defs(self.fn)
        written = written_arrays(self.fn, types=self.types)
        self.written = written
        self.positions = positions(self.fn)
        self.mutations = mutations(self.fn)
        self.classes = written_arrays(self.fn, classes=True, types=self.types)
        self.closure_cells = None          # built by _closure_cells when first needed
        self.mode = {}
        for slot in self.reads.values():
            for v in slot["pre"] + slot["post"]:
                if v in self.mode:
                    continue
                if v in self.synthetic:
                    self.mode[v] = self.synthetic[v]
                elif v in written:
                    self.mode[v] = "stack"
                elif defs.get(v, 0) == 1 and (v in self.fn.params or v in top):
                    self.mode[v] = "name"
                else:
                    self.mode[v] = "stack"
        # (numbers the reverse sweep computes again rather than pops: recompute.py)
        self.recompute_text, named = self.recomputed(defs, top)
        for v in self.recompute_text:
            self.mode[v] = "recompute"
        for p in named:                 # (bound once, before: by name in the tape)
            self.mode.setdefault(p, "name")
        self.no_push, self.no_pop = set(), set()          # (id(stmt), "pre" | "post", var)
        self._share_block(self.fn.body, _hook_keys(rev))

    def _share_block(self, block, hooks):
        """Reads of one stacked value by statements of one block that follow each other, with no
        rebinding of the variable between them, share one push (the first read's) and one pop (the
        last read's, which the reverse sweep runs first; the variable keeps that value until the
        first read's reverse has run: the reverse sweep rebinds a variable only by popping it, and
        pops between the two give that same object).  Only variables never changed in place (their
        pushes are never copies), only blocks whose statements all run once they start (a ``try``
        or ``with`` body that records progress does not: its reverse may skip a statement's), and
        only statements whose reverse pops (has a hook)."""
        last = {}          # var -> the read whose push stands for the value the var has now
        for s in block:
            slot = self.reads.get(id(s)) if id(s) in hooks else None
            compound = isinstance(s, _COMPOUND)
            bound = defined_in([s]) if compound else set(bound_names(s))
            for when in ("pre", "post"):
                if when == "post":
                    for v in bound:
                        last.pop(v, None)
                for v in (slot or {}).get(when, ()):
                    if self.mode.get(v) not in ("stack", "recompute") or v in self.written or \
                            v in self.synthetic and v not in self.shape_users:
                        continue
                    if compound and when == "pre" and v in bound:
                        continue    # (saved after the statement from a copy of its value before)
                    if v in last:
                        self.no_push.add((id(s), when, v))
                        self.no_pop.add(last[v])
                    last[v] = (id(s), when, v)
            if compound:
                for blk in self._whole_blocks(s):
                    self._share_block(blk, hooks)

    def _whole_blocks(self, s):
        """The blocks of compound statement ``s`` whose statements the reverse sweep reverses all
        or none of (not a ``while`` test, which it does not reverse; not a body that records its
        progress for the handlers)."""
        if isinstance(s, ir.While):
            return [s.body]
        if isinstance(s, (ir.Try, ir.With)) and ("p", id(s)) in self.site_names:
            return ir.children(s)[1:]
        return ir.children(s)

    def check_read_then_changed(self, call, s, o):
        """A call whose derivative is made apart (a user function, a closure, a call resolved when
        it runs) keeps what it read for its own reverse sweep: the objects themselves, not copies.
        An array, list or dict it reads (an argument, or a variable a local closure captured) that
        is changed in place after the call would be read changed when that reverse sweep runs, so
        the derivative would be silently wrong: refused (fuzz 8088:2130, 8088:15017)."""
        if self.site_names.get(id(s)) is None or isinstance(call.fn, ir.Attr):
            return      # the reverse sweep never pulls this call; an attribute read keeps no object
        args = call.info["callargs"] if call.cls == "derived" else \
            list(call.args[1:] if isinstance(call.fn, ir.Method) else call.args)
        if call.cls == "dynamic" and isinstance(call.fn, ir.Dynamic):
            args = args + [call.fn.var]
        seen = set()
        for v in args:
            if not isinstance(v, str) or v in seen:
                continue
            seen.add(v)
            for w in [v] + self._closure_cells(v):
                if self.kinds.get(w) not in ("a", "c") or w in self.synthetic:
                    continue
                if w in self.classes and self.changed_later(s, w):
                    via = "" if w == v else (" (through a closure that reads it)" if
                                             v.startswith("_") else
                                             f" (through the closure `{v}`, which reads it)")
                    # (a generated name, the loop sequence of ``map(f, a)``...: the user's name
                    # for the same object)
                    user = w if not w.startswith("_") else next(
                        (u for u in sorted(self.classes) if not u.startswith("_") and
                         self.classes[u] == self.classes[w] and u in self.kinds), None)
                    what, it = (f"`{user}`", f"`{user}`") if user else \
                        ("an array or list", "it")
                    raise UnsupportedSyntaxError(
                        f"{what} is read by a call{via} whose derivative keeps it for its reverse "
                        f"sweep, and {it} is changed in place afterwards; that sweep would read "
                        f"the changed value",
                        origin=o,
                        fix=f"pass a copy to the call (`{user}.copy()`, `list({user})`), or make the "
                            f"later change on a copy (`{user} = {user}.copy()` before it)" if user
                        else "pass a copy to the call (`a.copy()`, `list(a)`), or make the later "
                             "change on a copy")

    def _closure_cells(self, v):
        """The variables a local closure bound to ``v`` captured (none when ``v`` is not one)."""
        if self.closure_cells is None:
            self.closure_cells = {}
            for t in ir.walk(self.fn.body):
                if isinstance(t, ir.Assign) and _is_make(t.value):
                    self.closure_cells.setdefault(t.target, []).extend(_cells(t))
        return self.closure_cells.get(v, [])

    def changed_later(self, s, v, when="pre"):
        """Whether an in-place change of ``v``'s memory can follow statement ``s`` (then a saved
        array or list must be a copy: the reverse sweep needs it as it was when ``s`` read it).
        Read after a compound statement (``when="post"``), the changes inside it are done, unless
        a loop around it runs them again."""
        cls = self.classes.get(v)
        inside = () if when != "post" else \
            {id(x) for blk in ir.children(s) for x in ir.walk(blk)}
        around = self.positions[id(s)][1]
        # (``xs.extend(xs)``: the statement changes what it read itself, after reading it)
        return any((bool(around & self.positions[id(m)][1]) if id(m) in inside else
                    m is s and when == "pre" and isinstance(s, ir.Mutate) or
                    may_run_after(self.positions, s, m)) for m, obj in self.mutations
                   if not isinstance(obj, str) or self.classes.get(obj, obj) == cls or cls is None)

    def pushed(self, s, when):
        """The variables statement ``s`` pushes on their stacks (``when``: before or after it)."""
        slot = self.reads.get(id(s))
        if not slot:
            return []
        return [v for v in slot[when]
                if self.mode.get(v) == "stack" and (id(s), when, v) not in self.no_push]

    def pushes(self, s, when, caps=None):
        out = []
        for v in self.pushed(s, when):
            val = (caps or {}).get(v, v)
            if v in self.written and self.changed_later(s, v, when):
                val = f"_rt.snap({val})"
            out.extend(self.push_lines(v, val, s.origin))
        return out

    def pops(self, key):
        slot = self.reads.get(key)
        if not slot:
            return []
        out = []
        for when in ("post", "pre"):
            for v in slot[when]:
                if self.mode.get(v) in ("stack", "recompute") and \
                        (key, when, v) not in self.no_pop and v not in out:
                    out.append(v)
        return out

    def discards(self, key):
        """What statement ``key`` pushed before it ran (dropped when it raised)."""
        slot = self.reads.get(key) or {"pre": []}
        return [v for v in slot["pre"] if self.mode.get(v) == "stack" and
                (key, "pre", v) not in self.no_push]

    def tape_text(self):
        names = self.tape_names()
        if not names:
            return "()"
        return "(" + ", ".join(names) + ("," if len(names) == 1 else "") + ")"

    def tape_names(self):
        out = []
        for v, m in self.mode.items():
            if m == "name" and v not in out:
                out.append(v)
        for v, m in self.mode.items():
            if m == "stack":
                out.append(stack(v))
        return out
