"""Values the reverse sweep computes again instead of saving them: a number defined once by
arithmetic (or an element of an array that is never changed) from loop counters, parameters that
are never rebound and constants (``_4 = t - 1``, ``_5 = y[_4]`` in ``for t in range(1, n)``).
Pushing such a value on a stack in every trip and popping it back costs more than the arithmetic,
and a stack is what makes a compiled derivative slow to compile; the reverse loop binds the loop
counter to the same value the forward trip had, so the value is the same.

Only where it is sure to be: the variable is bound once, by a statement that runs before each
statement reading it in the same trip of every loop around it (it lies in an enclosing block,
earlier; or it is that statement, read after it ran), its type is a number, and its leaves are
constants, counters of ``for`` loops around the definition, parameters and top-level names bound
once (``dt = 0.01``), elements of arrays bound once (parameters, or at the top level: ``_6 =
_rt.seq(x)`` of ``for v in x``) and never changed in place (as the written-arrays analysis
says), or such values again."""
import operator

from ... import ir
from ...classify.common import _block_chains
from .. import text as T

_ARITH = {operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/",
          operator.floordiv: "//", operator.mod: "%"}
_DEPTH = 6
_LONGEST = 120          # (characters: longer recomputations are saved, for the reader)


class Recompute:
    """The part of :class:`~.emitter.ReverseEmitter` that picks values to compute again."""

    def recomputed(self, defs, top):
        """({var: text} for the stacked variables the reverse sweep can compute again (see the
        module's docstring), the parameters and top-level names those texts read), given
        ``defs`` (var -> number of places binding it) and ``top`` (names bound at the top
        level)."""
        self._rc_defs, self._rc_top = defs, top
        self._rc_assign = {}
        self._rc_loops = {}
        for s in ir.walk(self.fn.body):
            if isinstance(s, ir.Assign):
                self._rc_assign.setdefault(s.target, s)
            if isinstance(s, ir.For):
                self._rc_loops[id(s)] = s.target
        self._rc_chains = _block_chains(self.fn)
        sites = {}
        for key, slot in self.reads.items():
            for when in ("pre", "post"):
                for v in slot[when]:
                    sites.setdefault(v, []).append((key, when))
        out, named = {}, set()
        for v, keys in sites.items():
            if self.mode.get(v) != "stack" or v in self.synthetic or v in self.written:
                continue
            t = self.types.get(v)
            if t is None or t[0] != "s" or defs.get(v) != 1 or v not in self._rc_assign:
                continue
            d = self._rc_assign[v]
            # (read after its own statement: `_7 = e / s`'s adjoint reads _7)
            if not all(k == id(d) and when == "post" or self._dominates(d, k)
                       for k, when in keys):
                continue
            self._rc_used = set()
            text = self._expr(d, _DEPTH)
            if text is not None and len(text) <= _LONGEST:
                out[v] = text
                named |= self._rc_used
        return out, named

    def _dominates(self, d, key):
        """Whether statement ``d`` runs before statement ``key`` in each trip that runs ``key``: it
        lies earlier in a block that holds ``key`` (or a statement around it)."""
        cd, ck = self._rc_chains.get(id(d)), self._rc_chains.get(key)
        if cd is None or ck is None or len(ck) < len(cd) or ck[:len(cd) - 1] != cd[:-1]:
            return False
        return ck[len(cd) - 1][0] == cd[-1][0] and ck[len(cd) - 1][1] > cd[-1][1]

    def _expr(self, d, depth):
        """The text computing ``d``'s value again, or None."""
        c = d.value
        if isinstance(c, str):                      # (a copy: `v = _9` of a loop over an array)
            return self._leaf(c, d, depth)
        if not isinstance(c, ir.Call) or not isinstance(c.fn, ir.Static) or c.kwargs:
            return None
        f = c.fn.obj
        if f in _ARITH and len(c.args) == 2:
            a, b_ = (self._leaf(x, d, depth) for x in c.args)
            return None if a is None or b_ is None else f"({a} {_ARITH[f]} {b_})"
        if f is operator.neg and len(c.args) == 1:
            a = self._leaf(c.args[0], d, depth)
            return None if a is None else f"(-{a})"
        if f is operator.getitem and len(c.args) == 2 and isinstance(c.args[0], str):
            arr, idx = c.args
            t = self.types.get(arr)
            if t is None or t[0] != "a" or self._rc_defs.get(arr) != 1 or arr in self.written or \
                    not (arr in self.fn.params or arr in self._rc_top):
                return None
            self._rc_used.add(arr)
            parts = idx.parts if isinstance(idx, ir.Index) else [idx]
            if len(parts) != t[2]:
                return None
            texts = []
            for p in parts:
                if isinstance(p, str) and self.types.get(p) != ("s", "i"):
                    return None
                x = self._leaf(p, d, depth)
                if x is None:
                    return None
                texts.append(x)
            return f"{arr}[{', '.join(texts)}]"
        return None

    def _leaf(self, x, d, depth):
        if isinstance(x, ir.Const):
            return T.operand_text(x, self.consts) if type(x.value) in (int, float) else None
        if not isinstance(x, str) or self._rc_defs.get(x) != 1:
            return None
        t = self.types.get(x)
        if t is None or t[0] != "s":
            return None
        if x in self.fn.params or x in self._rc_top:
            self._rc_used.add(x)          # (bound once, before: by name in the tape)
            return x
        loops = self.positions[id(d)][1]
        if any(self._rc_loops.get(k) == x for k in loops):
            return x
        a = self._rc_assign.get(x)
        if a is None or depth == 0 or x in self.synthetic:
            return None
        return self._expr(a, depth - 1)
