"""Lowering of loops: ``for`` over ``range``, over sequences, ``zip``/``enumerate``/``reversed``
(a ``range`` loop with an explicit read of each element), and comprehensions (an explicit loop
that appends).

A part of :class:`~.lowerer.Lowerer`, which it is mixed into: the methods use the lowerer's
state (``self.block``, ``self.locals``, ``self.namespace``...) and call each other across
the parts.
"""
import operator

import gast

from ... import ir, runtime
from .scopes import _leaves_early, _stores


def _is_prange(obj):
    """Numba's ``prange`` (told by its module and name: s2sad does not import numba for it)."""
    return isinstance(obj, type) and obj.__name__ == "prange" and \
        getattr(obj, "__module__", "").startswith("numba.")


class LoopLowering:
    """``for`` loops and comprehensions."""

    def _is_range(self, func):
        """Whether the callee ``func`` (a name or ``module.name``) is Python's ``range``, or
        Numba's ``prange`` (``numba.prange``, ``from numba import prange``): a loop whose
        iterations Numba may run in parallel has the meaning of the serial loop, which the
        derivative runs (its reverse sweep adds into shared adjoints)."""
        if isinstance(func, gast.Name) and func.id not in self.locals:
            obj = self.src.resolve(func.id)
        elif isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name) and \
                func.value.id not in self.locals:
            obj = getattr(self.src.resolve(func.value.id), func.attr, None)
        else:
            return False
        return obj is range or _is_prange(obj)

    def for_loop(self, target, it, body_fn, o, orelse=(), body_nodes=()):
        """Lower ``for target in it`` with a body produced by ``body_fn()`` into self.block."""
        orelse_ir = self.sub_block(orelse) if orelse else []
        # for x in range(...)
        if (isinstance(it, gast.Call) and self._is_range(it.func) and not it.keywords
                and 1 <= len(it.args) <= 3
                and not any(isinstance(a, gast.Starred) for a in it.args)):
            ops = [self.expr(a) for a in it.args]
            start, stop, step = ((ir.Const(0), ops[0], ir.Const(1)) if len(ops) == 1 else
                                 (ops[0], ops[1], ir.Const(1)) if len(ops) == 2 else ops)
            saved, self.block = self.block, []
            if isinstance(target, gast.Name) and self._plain_local(target.id) and \
                    not _stores(body_nodes, target.id):
                var = self.name(target.id)
            else:
                var = self.tmp()
                self.assign(target, var, o)
            body_fn()
            body, self.block = self.block, saved
            self.emit(ir.For(var, start, stop, step, body, o, orelse=orelse_ir))
            return
        # for a, b in zip(...), for i, x in enumerate(...), for x in reversed(seq), for x in seq
        seqs, enum, rev = self._sequence_parts(it)
        # iterate by index over something indexable: dict views, sets, generators, dicts
        # (their keys) become lists; lists, tuples and arrays pass through
        breakable = _leaves_early(body_nodes)
        # a body that reads the loop's own iterable may take values from it (a nested loop,
        # sum(it), next(it)): Python's loop then skips them; s2sad took them all first
        walked = {n.id for n in gast.walk(it) if isinstance(n, gast.Name)}
        breakable = breakable or bool(walked & set(self._names_read(body_nodes)))
        if len(seqs) > 1:
            # zip(...) in the header: the values Python's zip takes from each (an iterator
            # zipped with a shorter sequence gives up exactly as many as zip pulls)
            ops = [self._here(sq, o) for sq in seqs]
            call = ir.Call(ir.Static(runtime.loop_zip_seq, "_rt.loop_zip_seq") if breakable else
                           ir.Static(runtime.zip_seq, "_rt.zip_seq"), ops)
            self._link_heres(call, range(len(ops)))
            both = self._call(call, None, o)
            seqs = [self._call(ir.Call(ir.Static(operator.getitem, "[]"),
                                       [both, ir.Index([ir.Const(j)], False)]), None, o)
                    for j in range(len(ops))]
        else:
            seqs = [sq if isinstance(sq, ir.Const) and isinstance(sq.value, (list, tuple)) else
                    self._seq(sq, o, breakable) for sq in seqs]
        k = self.tmp()
        lens = []
        for sq in seqs:
            n = self.tmp()
            self.emit(ir.Assign(n, ir.Call(ir.Static(len, "len"), [sq]), o))
            self.namespace["len"] = len
            lens.append(n)
        stop = lens[0]
        if len(lens) > 1:
            stop = self.tmp()
            self.emit(ir.Assign(stop, ir.Call(ir.Static(min, "min"), lens), o))
            self.namespace["min"] = min
        saved, self.block = self.block, []
        pos = k
        if rev:
            pos = self.tmp()
            last = self.tmp()
            self.emit(ir.Assign(last, ir.Call(ir.Static(operator.sub, "-"), [stop, ir.Const(1)]), o))
            self.emit(ir.Assign(pos, ir.Call(ir.Static(operator.sub, "-"), [last, k]), o))
        elems = []
        for sq in seqs:
            e = self.tmp()
            self.emit(ir.Assign(e, ir.Call(ir.Static(operator.getitem, "[]"),
                                           [sq, ir.Index([pos], False)]), o))
            elems.append(e)
        if enum or len(elems) > 1:
            parts = ([k] if enum else []) + ([elems[0]] if len(elems) == 1 else elems)
            if enum and len(elems) > 1:
                parts = [k, tuple(elems)]
            self._bind_struct(target, parts, o)
        else:
            self.assign(target, elems[0], o)
        body_fn()
        body, self.block = self.block, saved
        self.emit(ir.For(k, ir.Const(0), stop, ir.Const(1), body, o, orelse=orelse_ir))

    def _bind_struct(self, target, parts, o):
        if isinstance(target, (gast.Tuple, gast.List)) and len(target.elts) == len(parts):
            for elt, p in zip(target.elts, parts):
                if isinstance(p, tuple):
                    self._bind_struct(elt, list(p), o)
                else:
                    self.assign(elt, p, o)
        else:
            # target is a single name receiving a tuple
            items = [p if not isinstance(p, tuple) else self._pack(list(p), o) for p in parts]
            t = self.tmp()
            self.emit(ir.Assign(t, ir.Call(ir.Static(runtime.build_tuple, "build_tuple"), items), o))
            self.assign(target, t, o)

    def _pack(self, items, o):
        t = self.tmp()
        self.emit(ir.Assign(t, ir.Call(ir.Static(runtime.build_tuple, "build_tuple"), items), o))
        return t

    def _sequence_parts(self, it):
        """(sequences, enumerate?, reversed?) for zip(...)/enumerate(...)/reversed(...)/a sequence."""
        if isinstance(it, gast.Call) and isinstance(it.func, gast.Name) and not it.keywords \
                and it.func.id not in self.locals \
                and not any(isinstance(a, gast.Starred) for a in it.args):
            f = self.src.resolve(it.func.id)
            if f is enumerate and len(it.args) == 1:
                inner, _, rev = self._sequence_parts(it.args[0])
                if not rev:
                    return inner, True, False
            if f is zip and it.args:
                return [self.expr(a) for a in it.args], False, False
            if f is reversed and len(it.args) == 1:
                inner, enum, rev = self._sequence_parts(it.args[0])
                if not enum and not rev and len(inner) == 1:
                    return inner, False, True
        return [self.expr(it)], False, False

    def comprehension(self, node, target, o):
        """``[e for x in xs if c]`` -> an explicit loop that appends (a dict/set display likewise)."""
        # (built in the target itself; where the comprehension reads the name it is bound to,
        # ``xs = [xs[i] * w for i in range(len(xs))]``, it reads the old object throughout,
        # under a name of its own)
        old_names = [n.id for n in gast.walk(node) if isinstance(n, gast.Name) and target and
                     self.renames.get(n.id, n.id) == target]
        old = None
        if old_names:
            old = self.tmp()
            self.emit(ir.Assign(old, target, o))
        # (a local closure that reads the target sees the old object too, in Python: the new
        # one is built under a name of its own and bound to the target when it is made)
        captured = {v for vs in self.closures.values() for v in vs}
        into = target if target and not isinstance(node, gast.SetComp) and \
            target not in captured else None
        result = into or self.tmp()
        is_dict = isinstance(node, gast.DictComp)
        if is_dict:
            self.emit(ir.Assign(result, ir.Call(ir.Static(runtime.build_dict, "build_dict"),
                                                [ir.Const(())]), o))
        else:
            self.emit(ir.Assign(result, ir.Call(ir.Static(runtime.build_list, "build_list"), []), o))
        saved_renames = dict(self.renames)
        for n in old_names:
            self.renames[n] = old
        added = set()
        targets = {n.id for gen in node.generators for n in gast.walk(gen.target)
                   if isinstance(n, gast.Name)}
        first = node.generators[0]
        if any(isinstance(n, gast.Name) and n.id in targets for n in gast.walk(first.iter)):
            # the first iterable is evaluated outside the comprehension, where the targets'
            # names still mean the enclosing variables: ``[t * 2 for t in [t, y]]``
            pre = self.tmp()
            self.expr(first.iter, target=pre)
            self.locals.add(pre)
            added.add(pre)
            first = gast.comprehension(target=first.target, iter=gast.copy_location(
                gast.Name(id=pre, ctx=gast.Load(), annotation=None, type_comment=None), first.iter),
                ifs=first.ifs, is_async=0)
        gens = [first] + list(node.generators[1:])
        for gen in gens:
            for n in gast.walk(gen.target):
                if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store):
                    if n.id in self.locals or n.id in self.renames:
                        self.renames[n.id] = self._fresh_name(n.id)
                    if n.id not in self.locals:
                        added.add(n.id)
                        self.locals.add(n.id)

        def level(i):
            if i == len(gens):
                if is_dict:
                    k, v = self.expr(node.key), self.expr(node.value)
                    self.emit(ir.SetItem(result, ir.Index([k], False), v, o, building=True))
                else:
                    e = self.expr(node.elt)
                    # (building: the new list, which nothing else sees until it is made)
                    self.emit(ir.Mutate(None, result, ir.Call(ir.Method("append"), [result, e],
                                                              extra={"building": True}), o))
                return
            gen = gens[i]

            def body():
                if gen.ifs:
                    conds = gen.ifs
                    test = self.expr(conds[0] if len(conds) == 1 else
                                     gast.BoolOp(op=gast.And(), values=conds))
                    saved, self.block = self.block, []
                    level(i + 1)
                    inner, self.block = self.block, saved
                    self.emit(ir.If(test, inner, [], o))
                else:
                    level(i + 1)
            self.for_loop(gen.target, gen.iter, body, o)
        level(0)
        self.renames = saved_renames
        self.locals -= added
        if isinstance(node, gast.SetComp):
            self.namespace["set"] = set
            return self._call(ir.Call(ir.Static(set, "set"), [result]), target, o)
        if target and result != target:
            self.emit(ir.Assign(target, result, o))
            return target
        return result
