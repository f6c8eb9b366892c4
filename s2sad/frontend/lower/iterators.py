"""Iterators in the lowered function: ``_rt.here`` cursors for what a call consumes, ``_rt.seq``
for what a loop walks, and the lazy iterators of ``map``/``filter``/generator expressions,
whose values are computed eagerly (marked, so that classification can check them, and
dropped where never read).

A part of :class:`~.lowerer.Lowerer`, which it is mixed into: the methods use the lowerer's
state (``self.block``, ``self.locals``, ``self.namespace``...) and call each other across
the parts.
"""
import gast

from ... import ir, runtime
from .tables import _PURE_MAKERS, _hashable


class IteratorLowering:
    """Iterators and their laziness."""

    def _link_heres(self, call, positions):
        """Tell each ``_rt.here`` the call (and argument) it feeds, so classification can drop it
        where the argument is known not to be an iterator."""
        for k in positions:
            a = call.args[k]
            if isinstance(a, str):
                made = self.block[-1] if self.block else None
                for st in reversed(self.block):
                    if isinstance(st, ir.Assign) and st.target == a:
                        made = st
                        break
                v = made.value if isinstance(made, ir.Assign) and made.target == a else None
                if isinstance(v, ir.Call) and isinstance(v.fn, ir.Static) and v.fn.obj is runtime.here:
                    v.extra["consumer"] = (call, k)

    def _here(self, operand, o):
        """``_rt.here(x)`` for an operand a call consumes as an iterable (a cursor if it is an
        iterator; classification drops it where x is known to be a list, array...)."""
        if not isinstance(operand, str):
            return operand
        return self._call(ir.Call(ir.Static(runtime.here, "_rt.here"), [operand]), None, o)

    def _seq(self, sq, o, breakable=False):
        # (a loop that may stop early, or whose body reads what it walks, takes all of an
        # iterator's values here: runtime.loop_seq makes a later use of that iterator an error
        # rather than a wrong value)
        fn = (runtime.loop_seq, "_rt.loop_seq") if breakable else (runtime.seq, "_rt.seq")
        call = ir.Call(ir.Static(*fn), [self._here(sq, o)])
        self._link_heres(call, [0])
        return self._call(call, None, o)

    def _iterator(self, lst, sources=()):
        """map/filter/generator expressions are lowered to a list; Python gives an iterator (used
        up once).  ``sources``: the names of what it walks (a later in-place change of one while
        the iterator is pending is refused: classify.iterators._check_pending_iterators)."""
        return ir.Call(ir.Static(runtime.iiter, "_rt.iiter"), [lst],
                       extra={"sources": [self.name(n) if n in self.locals else n
                                          for n in sources]})

    def _lazy(self, it, n0, iterables, what):
        """Mark ``it``, the iterator of a map/filter/starmap/generator expression whose values the
        statements from ``self.block[n0]`` on compute here, eagerly: Python computes them when they
        are taken.  ``extra["lazy"]``: the function it calls (``fn``, None for a generator), what
        the computation reads (``reads``: names; a generator's are its "sources") and its
        statements (``body``), so that :meth:`_drop_unused_lazy` can leave out the work of one
        that is never used, and classify.lazy._check_lazy can refuse one whose function reads state
        that changes before its values are taken."""
        stmts = self.block[n0:]
        k = next(i for i, st in enumerate(stmts) if isinstance(st, ir.Assign) and
                 st.target == it.args[0])
        body = stmts[k + 1:]
        token = object()
        for st in ir.walk(body):
            for c in (getattr(st, "value", None), getattr(st, "call", None)):
                if isinstance(c, ir.Call):
                    c.extra["lazy_of"] = token
        it.extra["lazy"] = {"fn": self._lazy_fns.get(it.args[0]), "body": body, "token": token,
                            "what": what,
                            "pure": all(_pure_iterable(n, self) for n in iterables)}
        return it

    def _drop_unused_lazy(self, fn):
        """A map/filter/generator expression whose iterator is never read: Python never calls its
        function (nor takes values from what it walks), so its eagerly computed values are left
        out (only when making it evaluates nothing with effects: ``map(f, g(x))`` calls g)."""
        reads = {v for st in ir.walk(fn.body) for v in st.reads()}
        drop = set()
        for st in ir.walk(fn.body):
            c = st.value if isinstance(st, ir.Assign) else getattr(st, "call", None)
            lazy = c.extra.get("lazy") if isinstance(c, ir.Call) else None
            if lazy is None:
                continue
            if lazy["pure"] and not (isinstance(st, ir.Assign) and st.target in reads):
                drop.update(id(b) for b in lazy["body"])
                lazy["dropped"] = True
            del lazy["body"]
        if not drop:
            return

        def prune(block):
            block[:] = [st for st in block if id(st) not in drop]
            for st in block:
                for b in ir.children(st):
                    prune(b)
        prune(fn.body)

    def _free_names_read(self, nodes):
        """Names the expressions read from the function's scope: as :meth:`_names_read`, less
        the targets of comprehensions and the parameters of lambdas inside them, where those
        read their own."""
        out = set()

        def visit(n, bound):
            if isinstance(n, gast.Name):
                if isinstance(n.ctx, gast.Load) and n.id not in bound:
                    out.add(n.id)
                return
            if isinstance(n, (gast.GeneratorExp, gast.ListComp, gast.SetComp, gast.DictComp)):
                inner = set(bound)
                for k, g in enumerate(n.generators):
                    visit(g.iter, bound if k == 0 else inner)     # (the first one: outside)
                    inner |= {t.id for t in gast.walk(g.target) if isinstance(t, gast.Name)}
                    for c in g.ifs:
                        visit(c, inner)
                for e in ((n.key, n.value) if isinstance(n, gast.DictComp) else (n.elt,)):
                    visit(e, inner)
                return
            if isinstance(n, gast.Lambda):
                for d in list(n.args.defaults) + [d for d in n.args.kw_defaults if d is not None]:
                    visit(d, bound)
                a = n.args
                params = {p.id for p in list(a.posonlyargs) + list(a.args) + list(a.kwonlyargs) +
                          [a.vararg, a.kwarg] if isinstance(p, gast.Name)}
                visit(n.body, bound | params)
                return
            for c in gast.iter_child_nodes(n):
                visit(c, bound)
        for node in nodes:
            visit(node, set())
        return sorted(out)

    def _names_read(self, nodes):
        return sorted({n.id for node in nodes for n in gast.walk(node)
                       if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)})


def _pure_iterable(node, low):
    """True when evaluating ``node`` (what a map or generator walks) has no effect beyond
    making a value: names, constants, displays, attributes and zip/range/... of those."""
    for n in gast.walk(node):
        # (a list/set/dict comprehension is as pure as what it calls: the walk sees its calls)
        if isinstance(n, (gast.Lambda, gast.NamedExpr, gast.GeneratorExp)):
            return False
        if isinstance(n, gast.Call):
            f = n.func
            if isinstance(f, gast.Name) and f.id not in low.locals and \
                    _hashable(low.src.resolve(f.id)) and low.src.resolve(f.id) in _PURE_MAKERS:
                continue
            if isinstance(f, gast.Attribute) and f.attr in ("values", "items", "keys") and \
                    not n.args:
                continue
            return False
    return True
