"""Lowering of calls: the callee (a static object, a method, a dynamic value), star-arguments
(``_rt.apply``), zero-argument ``super()``, the cursors of iterator consumers, and the calls
lowered to loops: ``map``, ``filter``, ``itertools.starmap``/``chain``/``accumulate``/``pairwise``,
``functools.reduce``.

A part of :class:`~.lowerer.Lowerer`, which it is mixed into: the methods use the lowerer's
state (``self.block``, ``self.locals``, ``self.namespace``...) and call each other across
the parts.
"""
import functools
import itertools
import operator

import gast

from ... import ir, runtime
from .tables import _ITER_CONSUMERS, _ITER_DRAINS, _ITER_MAKERS, _hashable


class CallLowering:
    """Calls."""

    def call(self, node, target=None):
        """An IR Call for a call expression, or the name of the variable holding the result when
        the call was lowered to statements (``map``, ``filter``, ``functools.reduce``)."""
        o = self.src.origin(node)
        if any(isinstance(a, gast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            return self.star_call(node, o)
        f = node.func
        if isinstance(f, gast.Name) and f.id == "super" and not node.args and \
                f.id not in self.locals and "__class__" in self.src.closure and self.params:
            # zero-argument super() needs the class cell; spell it out
            self.namespace["super"] = super
            self.namespace["__class__"] = self.src.closure["__class__"]
            first = self.params[len(self.src.data_cells)]
            return ir.Call(ir.Static(super, "super"),
                           [ir.Const(self.src.closure["__class__"], "__class__"), first])
        if isinstance(f, gast.Name) and f.id not in self.locals and not node.keywords:
            special = self.src.resolve(f.id)
            if special is map and len(node.args) >= 2:
                n0 = len(self.block)
                return self._lazy(self._iterator(self.map_call(node, o),
                                                 self._free_names_read(node.args[1:])),
                                  n0, node.args[1:],
                                  "map")
            if special is filter and len(node.args) == 2:
                n0 = len(self.block)
                return self._lazy(self._iterator(self.filter_call(node, o),
                                                 self._free_names_read(node.args[1:])),
                                  n0, node.args[1:],
                                  "filter")
        chain0 = self._static_chain(f) if isinstance(f, gast.Attribute) else None
        if chain0 is not None and chain0[0] is functools.reduce and not node.keywords \
                and len(node.args) in (2, 3):
            return self.reduce_call(node, o, target)
        callee0 = chain0[0] if chain0 is not None else self.src.resolve(f.id) \
            if isinstance(f, gast.Name) and f.id not in self.locals else None
        if callee0 is itertools.accumulate and 1 <= len(node.args) <= 2 and \
                all(k.arg in ("func", "initial") for k in node.keywords):
            return self.accumulate_call(node, o, target)
        if callee0 is itertools.chain and not node.keywords:
            return self.chain_call(node, o, target)
        if callee0 is getattr(itertools, "pairwise", None) and len(node.args) == 1 and \
                not node.keywords:
            return self.pairwise_call(node, o, target)
        if callee0 is itertools.starmap and len(node.args) == 2 and not node.keywords:
            n0 = len(self.block)
            return self._lazy(self._iterator(self.starmap_call(node, o),
                                             self._free_names_read(node.args[1:])),
                              n0, node.args[1:],
                              "itertools.starmap")
        chain = self._static_chain(f) if isinstance(f, gast.Attribute) else None
        if isinstance(f, gast.Name) and f.id not in self.locals:
            callee = ir.Static(self.free(f.id, f), f.id)
            recv = []
        elif chain is not None:
            callee = ir.Static(chain[0], chain[1])
            recv = []
        elif isinstance(f, gast.Attribute):
            callee = ir.Method(f.attr)
            recv = [self.expr(f.value)]
        else:
            callee = ir.Dynamic(self.expr(f))
            recv = []
        drains = isinstance(callee, ir.Static) and _hashable(callee.obj) and \
            callee.obj in _ITER_DRAINS
        # a generator expression consumed whole by sorted/sum/min/...: its list is enough
        args = recv + [self.comprehension(a, None, self.src.origin(a))
                       if drains and isinstance(a, gast.GeneratorExp) else self.expr(a)
                       for a in node.args]
        kwargs = [(k.arg, self.expr(k.value)) for k in node.keywords]
        heres = ()
        if isinstance(callee, ir.Static) and _hashable(callee.obj):
            # iterators: makers remember what they yield, consumers take a cursor (runtime.Iter)
            which = _ITER_CONSUMERS.get(callee.obj)
            if which is not None and not (which == "one" and len(args) != 1):
                heres = [k for k in range(len(args)) if which in ("all", "one") or k in which]
                args = [self._here(a, o) if k in heres else a for k, a in enumerate(args)]
            maker = _ITER_MAKERS.get(callee.obj)
            if maker is not None:
                callee = ir.Static(maker, f"_rt.{maker.__name__}")
        extra = {}
        if isinstance(callee, ir.Dynamic) and callee.var in self.closures:
            # a local closure reads the variables it captured when it is called
            extra["captured"] = list(self.closures[callee.var])
        elif isinstance(callee, ir.Static) and callee.obj is self.src.fn and self.src.data_cells:
            extra["captured"] = list(self.src.data_cells)      # a closure calling itself
        call = ir.Call(callee, args, kwargs, extra=extra)
        self._link_heres(call, heres)
        return call

    def star_args(self, elts, o):
        """``(a, *xs, b)`` -> ``_rt.star_args((a,), xs, (b,))``: a tuple whose adjoint splits back."""
        segs, run = [], []
        for e in elts:
            if isinstance(e, gast.Starred):
                if run:
                    segs.append(self._pack(run, o))
                    run = []
                segs.append(self.expr(e.value))
            else:
                run.append(self.expr(e))
        if run:
            segs.append(self._pack(run, o))
        return self._call(ir.Call(ir.Static(runtime.star_args, "_rt.star_args"), segs), None, o)

    def star_call(self, node, o):
        f = node.func
        if isinstance(f, gast.Name) and f.id not in self.locals:
            callee = ir.Const(self.free(f.id, f), f.id)
        else:
            callee = self.expr(f)
        args = self.star_args(node.args, o)
        kws = [k for k in node.keywords if k.arg is not None]
        parts = []
        if kws:
            keys = ir.Const(tuple(k.arg for k in kws))
            vals = [self.expr(k.value) for k in kws]
            parts.append(self._call(ir.Call(ir.Static(runtime.build_dict, "build_dict"),
                                            [keys] + vals), None, o))
        for k in node.keywords:
            if k.arg is None:
                parts.append(self.expr(k.value))
        if not parts:
            kw = ir.Const(None)
        elif len(parts) == 1:
            kw = parts[0]
        else:
            kw = self._call(ir.Call(ir.Static(runtime.merge_kwargs, "_rt.merge_kwargs"), parts),
                            None, o)
        return ir.Call(ir.Static(runtime.apply, "_rt.apply"), [callee, args, kw])

    def map_call(self, node, o, target=None):
        # map(f, a, b) -> [f(x, y) for x, y in zip(a, b)]
        fn = self.expr(node.args[0])
        seqs = node.args[1:]
        result = target or self.tmp()
        self._lazy_fns[result] = fn
        self.emit(ir.Assign(result, ir.Call(ir.Static(runtime.build_list, "build_list"), []), o))
        names = [self.tmp() for _ in seqs]
        zipped = gast.Call(func=gast.Name(id="zip", ctx=gast.Load(), annotation=None,
                                          type_comment=None), args=list(seqs), keywords=[]) \
            if len(seqs) > 1 else seqs[0]
        for n in names:
            self.locals.add(n)
        tgt = gast.Tuple(elts=[gast.Name(id=n, ctx=gast.Store(), annotation=None, type_comment=None)
                               for n in names], ctx=gast.Store()) if len(seqs) > 1 else \
            gast.Name(id=names[0], ctx=gast.Store(), annotation=None, type_comment=None)
        gast.copy_location(zipped, node)

        def body():
            v = self._call(self._make_call(fn, names), None, o)
            self.emit(ir.Mutate(None, result, ir.Call(ir.Method("append"), [result, v]), o))
        self.namespace["zip"] = zip
        self.for_loop(tgt, zipped, body, o)
        return result

    def starmap_call(self, node, o):
        """``itertools.starmap(f, rows)`` -> ``[f(*row) for row in rows]`` (as map)."""
        fn = self.expr(node.args[0])
        result = self.tmp()
        self._lazy_fns[result] = fn
        self.emit(ir.Assign(result, ir.Call(ir.Static(runtime.build_list, "build_list"), []), o))
        name = self.tmp()
        self.locals.add(name)

        def body():
            v = self._call(ir.Call(ir.Static(runtime.apply, "_rt.apply"), [fn, name, ir.Const(None)]),
                           None, o)
            self.emit(ir.Mutate(None, result, ir.Call(ir.Method("append"), [result, v]), o))
        self.for_loop(gast.Name(id=name, ctx=gast.Store(), annotation=None, type_comment=None),
                      node.args[1], body, o)
        return result

    def filter_call(self, node, o, target=None):
        fn = self.expr(node.args[0])
        result = target or self.tmp()
        self._lazy_fns[result] = fn
        self.emit(ir.Assign(result, ir.Call(ir.Static(runtime.build_list, "build_list"), []), o))
        name = self.tmp()
        self.locals.add(name)

        def body():
            if isinstance(fn, ir.Const) and fn.value is None:
                test = name
            else:
                test = self._call(self._make_call(fn, [name]), None, o)
            self.emit(ir.If(test, [ir.Mutate(None, result, ir.Call(ir.Method("append"),
                                                                   [result, name]), o)], [], o))
        self.for_loop(gast.Name(id=name, ctx=gast.Store(), annotation=None, type_comment=None),
                      node.args[1], body, o)
        return result

    def chain_call(self, node, o, target=None):
        """``itertools.chain(a, b, ...)`` -> the list of the items of a, then of b..."""
        result = target or self.tmp()
        self.emit(ir.Assign(result, ir.Call(ir.Static(runtime.build_list, "build_list"), []), o))
        for it in node.args:
            name = self.tmp()
            self.locals.add(name)

            def body(name=name):
                self.emit(ir.Mutate(None, result, ir.Call(ir.Method("append"), [result, name]), o))
            self.for_loop(gast.Name(id=name, ctx=gast.Store(), annotation=None, type_comment=None),
                          it, body, o)
        return result

    def pairwise_call(self, node, o, target=None):
        """``itertools.pairwise(xs)`` -> ``items = list(xs)``, then the list of
        ``(items[i], items[i + 1])``."""
        items, i = self.tmp(), self.tmp()
        self.locals.update((items, i))
        self.namespace.update(list=list, range=range, len=len)
        src = gast.Call(func=gast.Name(id="list", ctx=gast.Load(), annotation=None,
                                       type_comment=None), args=[node.args[0]], keywords=[])
        self.expr(gast.copy_location(src, node), target=items)
        pairs = gast.parse(f"[({items}[{i}], {items}[{i} + 1]) for {i} in "
                           f"range(len({items}) - 1)]").body[0].value
        for n in gast.walk(pairs):
            gast.copy_location(n, node)
        return self.expr(pairs, target=target)

    def accumulate_call(self, node, o, target=None):
        """``itertools.accumulate(xs, f, initial=v)`` -> the list of running values:
        ``acc = v`` (or the first x), then ``acc = f(acc, x)`` for each further x."""
        kw = {k.arg: k.value for k in node.keywords}
        fn_node = node.args[1] if len(node.args) == 2 else kw.get("func")
        fn = self.expr(fn_node) if fn_node is not None and \
            not (isinstance(fn_node, gast.Constant) and fn_node.value is None) else None
        result = target or self.tmp()
        self.emit(ir.Assign(result, ir.Call(ir.Static(runtime.build_list, "build_list"), []), o))
        acc, first, name = self.tmp(), self.tmp(), self.tmp()
        for v in (acc, first, name):
            self.locals.add(v)

        def combine():
            if fn is None:
                return ir.Call(ir.Static(operator.add, "+"), [acc, name])
            return self._make_call(fn, [acc, name])
        initial = kw.get("initial")
        if initial is not None and not (isinstance(initial, gast.Constant) and initial.value is None):
            self.expr(initial, target=acc)
            self.emit(ir.Mutate(None, result, ir.Call(ir.Method("append"), [result, acc]), o))

            def body():
                self._call(combine(), acc, o)
                self.emit(ir.Mutate(None, result, ir.Call(ir.Method("append"), [result, acc]), o))
        else:
            self.emit(ir.Assign(first, ir.Const(True), o))

            def body():
                saved, self.block = self.block, []
                self.emit(ir.Assign(acc, name, o))
                self.emit(ir.Assign(first, ir.Const(False), o))
                then, self.block = self.block, []
                self._call(combine(), acc, o)
                other, self.block = self.block, saved
                self.emit(ir.If(first, then, other, o))
                self.emit(ir.Mutate(None, result, ir.Call(ir.Method("append"), [result, acc]), o))
        self.for_loop(gast.Name(id=name, ctx=gast.Store(), annotation=None, type_comment=None),
                      node.args[0], body, o)
        return result

    def reduce_call(self, node, o, target=None):
        # functools.reduce(f, xs[, init]) -> acc = init or xs[0]; for x in rest: acc = f(acc, x)
        fn = self.expr(node.args[0])
        seq = self.expr(node.args[1])
        if not (isinstance(seq, ir.Const) and isinstance(seq.value, (list, tuple))):
            seq = self._seq(seq, o)             # iterators, dict views: the values, indexable
        acc = self.tmp()
        self.locals.add(acc)
        if len(node.args) == 3:
            self.expr(node.args[2], target=acc)
            start = ir.Const(0)
        else:
            self.emit(ir.Assign(acc, ir.Call(ir.Static(operator.getitem, "[]"),
                                             [seq, ir.Index([ir.Const(0)], False)]), o))
            start = ir.Const(1)
        n = self.tmp()
        self.namespace["len"] = len
        self.emit(ir.Assign(n, ir.Call(ir.Static(len, "len"), [seq]), o))
        k = self.tmp()
        saved, self.block = self.block, []
        x = self.tmp()
        self.emit(ir.Assign(x, ir.Call(ir.Static(operator.getitem, "[]"),
                                       [seq, ir.Index([k], False)]), o))
        self._call(self._make_call(fn, [acc, x]), acc, o)
        body, self.block = self.block, saved
        self.emit(ir.For(k, start, n, ir.Const(1), body, o))
        return acc

    def _make_call(self, fn, args):
        if isinstance(fn, ir.Const):
            return ir.Call(ir.Static(fn.value, fn.text or "f"), args)
        return ir.Call(ir.Dynamic(fn), args)
