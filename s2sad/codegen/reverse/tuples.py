"""Tuple adjoints as one variable per element (``jit=True``).

Numba tuples are immutable and may hold values of different types, so a tuple's adjoint cannot be
one object that contributions update (the Python derivative's ``_rt.getitem_adjoint`` /
``_rt.acc_getitem`` / ``_rt.parts``).  Where a tuple's length is known when the derivative is
built, its adjoint is scalarised instead: ``_b_t_0, _b_t_1, ...``, one adjoint per element, and
the reverse sweep of

- ``t = (a, b)`` adds ``_b_t_0`` into ``_b_a`` and ``_b_t_1`` into ``_b_b``;
- ``y = t[k]`` (``k`` a constant) adds ``_b_y`` into ``_b_t_k``;
- ``t2 = t`` adds each ``_b_t2_i`` into ``_b_t_i``.

:func:`known_tuples` picks the variables this is right for: every binding is a tuple display of
``n`` items or a copy of another such variable of the same length, and every read is one of those
copies or a subscript with a constant integer.  Any other read (a call, ``len``, a loop over it, the
return value) or binding keeps the variable, and the tuples it is copied from or to, on the
runtime path.  The adjoint state (``_State``) still tracks the tuple as one name: defined means
all its element adjoints are.
"""
import operator as _operator

from ... import ir, runtime
from .. import text as T
from .names import b


def _display(v):
    """The items of a tuple display ``(a, b, ...)`` (a classified build_tuple call), or None."""
    if isinstance(v, ir.Call) and v.cls == "primitive" and v.rule is not None and \
            v.rule.fn is runtime.build_tuple and not v.kwargs:
        items = (v.info or {}).get("bound", {}).get("items")
        if isinstance(items, tuple) and len(items) == len(v.args):
            return items
    return None


def _const_index(idx, n):
    if isinstance(idx, ir.Index) and not idx.is_tuple and len(idx.parts) == 1:
        idx = idx.parts[0]
    if isinstance(idx, ir.Const) and type(idx.value) is int and -n <= idx.value < n:
        return idx.value % n
    return None


def known_tuples(fn):
    """``{variable: length}`` of the tuples whose adjoints can be one variable per element."""
    length, bad = {}, set(fn.params)
    copies = []                                     # (target, source)
    getitems = []                                   # (obj, index operand, stmt)
    allowed = {}                                    # id(stmt) -> the tuple var it may read
    for s in ir.walk(fn.body):
        if isinstance(s, ir.Assign):
            v, t = s.value, s.target
            items = _display(v)
            if items is not None and items:
                if length.setdefault(t, len(items)) != len(items):
                    bad.add(t)
                for x in items:                     # (nested tuples: left to the runtime path)
                    if isinstance(x, str):
                        bad.add(x)
                continue
            if isinstance(v, str):
                copies.append((t, v))
                allowed[id(s)] = v
                continue
            if isinstance(v, ir.Call) and isinstance(v.fn, ir.Static) and \
                    v.fn.obj is _operator.getitem and len(v.args) == 2 and \
                    isinstance(v.args[0], str) and not ir.operand_vars(v.args[1]):
                getitems.append((v.args[0], v.args[1]))
                allowed[id(s)] = v.args[0]
                bad.add(t)
                continue
            bad.add(t)
        else:
            for x in _bound(s):
                bad.add(x)
    # reads other than the allowed ones (a call that carries no derivative reads what it likes:
    # its reverse touches no adjoint)
    for s in ir.walk(fn.body):
        call = s.value if isinstance(s, ir.Assign) else s.call if isinstance(s, ir.ExprStmt) \
            else None
        if isinstance(call, ir.Call) and call.cls in ("inactive", "zero") and \
                id(s) not in allowed:
            continue
        reads = list(s.reads())
        if isinstance(s, (ir.SetItem, ir.Mutate, ir.DelItem)) and isinstance(s.obj, str):
            reads.append(s.obj)
        ok = allowed.get(id(s))
        for x in reads:
            if x != ok:
                bad.add(x)
    for obj, idx in getitems:
        if obj in length and _const_index(idx, length[obj]) is None:
            bad.add(obj)
    # copies: the target is a tuple of the source's length, both stay or both go
    changed = True
    while changed:
        changed = False
        for t, src in copies:
            if src in length and src not in bad:
                if length.setdefault(t, length[src]) != length[src]:
                    bad.add(t)
            if (t in bad or t not in length) != (src in bad or src not in length):
                if t not in bad or src not in bad:
                    bad.update((t, src))
                    changed = True
    return {v: n for v, n in length.items() if v not in bad}


def _bound(s):
    if isinstance(s, ir.Mutate):
        return [s.target] if s.target else []
    if isinstance(s, ir.For):
        return [s.target]
    if isinstance(s, ir.With):
        return [v for _, v in s.items if v]
    if isinstance(s, ir.Try):
        return [v for _, v, _ in s.handlers if v]
    return []


def live_elements(fn, tuples, active):
    """``{(tuple, i)}``: the elements whose adjoints a contribution may reach (an element read by a
    constant subscript into an active variable, through copies either way); the others stay
    ``0.0`` and give their items nothing (a string or an int next to arrays needs no adjoint)."""
    live, copies = set(), []
    for s in ir.walk(fn.body):
        if not isinstance(s, ir.Assign):
            continue
        v = s.value
        if isinstance(v, str) and v in tuples and s.target in tuples:
            copies.append((s.target, v))
        elif isinstance(v, ir.Call) and isinstance(v.fn, ir.Static) and \
                v.fn.obj is _operator.getitem and len(v.args) == 2 and v.args[0] in tuples and \
                s.target in active:
            live.add((v.args[0], _const_index(v.args[1], tuples[v.args[0]])))
    changed = True
    while changed:
        changed = False
        for a, c in copies:
            for x, y in ((a, c), (c, a)):
                for i in range(tuples[x]):
                    if (x, i) in live and (y, i) not in live:
                        live.add((y, i))
                        changed = True
    return live


class TupleAdjoints:
    """The part of :class:`~.emitter.ReverseEmitter` that writes scalarised tuple adjoints."""

    def elem(self, t, i):
        """The adjoint of element ``i`` of the tuple ``t``."""
        return f"{b(t)}_{i}"

    def elem_live(self, t, i):
        if self._live is None:
            self._live = live_elements(self.fn, self.tuples, self.active)
        return (t, i) in self._live

    def elem_zero(self, t, i):
        return f"_rt.zero_of({t}[{i}])" if self.elem_live(t, i) else "0.0"

    def zero_line(self, v, o, stmt=None):
        """``_b_v = <zero>``; for a scalarised tuple, a zero per element.  ``stmt``: the statement
        whose reverse it is in, where the reverse sweep has v's shape (jit mode, shapes.py: v
        itself was not kept, and its name may hold another trip's array)."""
        n = self.tuples.get(v)
        if n is None:
            shape = self.shape_here(stmt, v) if stmt is not None and self.jit else None
            if shape is not None:
                return T.Line(f"{b(v)} = _rt.zero_of(_adj.standin({shape}))", o)
            return T.Line(f"{b(v)} = {self.zero(v)}", o)
        if n == 1:
            return T.Line(f"{self.elem(v, 0)} = {self.elem_zero(v, 0)}", o)
        return T.Line(", ".join(self.elem(v, i) for i in range(n)) + " = " +
                      ", ".join(self.elem_zero(v, i) for i in range(n)), o)

    def nonzero_text(self, v):
        """The test that ``v``'s adjoint is not a filled-in zero: a comparison for a real number in
        Python mode (no call), ``_rt.is_zero`` otherwise (numba's zero of an array is zeros);
        for a scalarised tuple, of its elements."""
        n = self.tuples.get(v)
        if n is not None:
            return "not (" + " and ".join(f"_rt.is_zero({self.elem(v, i)})"
                                          for i in range(n)) + ")"
        if not self.jit and self.typed_real_scalar(v):
            return f"{b(v)} != 0"
        return f"not _rt.is_zero({b(v)})"

    def contribute_elems(self, t, exprs, stmt, o, out, st):
        """Contributions ``exprs`` (one text or None per element) to the tuple ``t``'s adjoint."""
        if t not in self.active:
            return
        st.zero.discard(t)
        if t in st.defined:
            for i, e in enumerate(exprs):
                if e is not None:
                    out.append(T.Line(f"{self.elem(t, i)} = _rt.acc({self.elem(t, i)}, {e})", o))
            return
        for i, e in enumerate(exprs):
            if e is None:
                e = self.elem_zero(t, i)
                if e != "0.0":
                    self.read(stmt, "pre", t)
            out.append(T.Line(f"{self.elem(t, i)} = {e}", o))
        st.defined.add(t)

    def rev_tuple_assign(self, s, st, body):
        """The reverse of ``t = (a, b, ...)``, ``t = t2`` or ``y = t[k]`` where a tuple involved
        is scalarised; False where none is."""
        t, v, o = s.target, s.value, s.origin
        if t in self.tuples:
            n = self.tuples[t]
            items = _display(v)
            if items is not None:
                for i, x in enumerate(items):
                    if self.elem_live(t, i):
                        self.contribute(x, self.elem(t, i), o, body, st)
                return True
            if isinstance(v, str):
                self.contribute_elems(v, [self.elem(t, i) for i in range(n)], s, o, body, st)
                return True
        if isinstance(v, ir.Call) and v.cls == "primitive" and v.rule is not None and \
                v.rule.fn is _operator.getitem and isinstance(v.args[0], str) and \
                v.args[0] in self.tuples:
            obj = v.args[0]
            n = self.tuples[obj]
            k = _const_index(v.args[1], n)
            assert k is not None, s             # (known_tuples keeps constant subscripts only)
            exprs = [None] * n
            exprs[k] = b(t)
            self.contribute_elems(obj, exprs, s, o, body, st)
            return True
        return False
