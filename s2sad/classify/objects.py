"""Which objects a variable may hold: a flow-insensitive may-point-to analysis of a lowered function.

An abstract object stands for every object made at one place: a statement of the function
(``("s", id(stmt))``), a parameter (``("p", name)``) and whatever it holds (``("pc", name)``), a
module-level constant (``("k", id(value))``).  ``pts[var]`` is the set of objects ``var`` may be
(an array view counts as the array: they share memory); ``contents[obj]`` the objects ``obj`` may
hold (items, values, attributes, what a closure or bound method captured).  Objects that are
iterators (zip, enumerate, iter, reversed, map, filter, generators, dict views) are in ``iters``,
and ``sources[it]`` are the objects such an iterator reads when it is advanced (through other
iterators too).

It over-approximates: where it cannot tell (a call into Python code, a method of an object of
unknown type), the result may be any argument or anything reachable from one.  Used by
classify to refuse in-place changes of an object that a pending iterator still reads, whatever
route (a copy, a join of branches, a container, an attribute, a function's return) the object
took to the iterator.
"""
import copy
import operator

from .. import ir, runtime
from .aliases import returned_operand

_ITER_MAKERS = {runtime.izip, runtime.ienumerate, runtime.ireversed, runtime.iiter,
                zip, enumerate, reversed, iter}
_DICT_VIEWS = ("values", "items", "keys")
_CONSUMERS = {runtime.seq, runtime.loop_seq, runtime.zip_seq, runtime.loop_zip_seq,
              runtime.listed}
# calls that return a new container holding their arguments (displays, closures, partials)
_HOLDERS = {runtime.build_list, runtime.build_tuple, runtime.build_dict, runtime.make_closure,
            runtime.star_args}
# calls that return a new container holding the items of their arguments (shallow copies)
_SHALLOW = {list, tuple, dict, set, frozenset, sorted, copy.copy, runtime.seq_add, runtime.seq_mul}
_NUMBER_KINDS = ("f", "i", "z")
_ARRAY_ATTRS_VIEW = {"T", "mT", "real", "imag"}
_ZERO_ATTRS = {"shape", "ndim", "size", "dtype", "itemsize", "nbytes", "strides", "flags",
               "device", "__class__"}
# methods that put their arguments into the receiver, or their arguments' items
_ADDS_ITEM = {"append", "insert", "setdefault", "add", "__setitem__"}
_ADDS_ITEMS = {"extend", "update", "__iadd__", "union", "__ior__"}


def _hashable(obj):
    try:
        hash(obj)
        return True
    except TypeError:
        return False


def call_of(s):
    if isinstance(s, ir.Assign) and isinstance(s.value, ir.Call):
        return s.value
    if isinstance(s, ir.ExprStmt):
        return s.call
    return None


def iterator_sources(s):
    """(call, names of what it walks, late) when statement ``s`` makes an iterator or dict view
    (``late``: a generator, which reads its names when it runs), else None."""
    v = call_of(s)
    if not isinstance(s, ir.Assign) or v is None:
        return None
    if isinstance(v.fn, ir.Static) and _hashable(v.fn.obj) and v.fn.obj in _ITER_MAKERS:
        # (map/filter/generators: the list the lowering built is private; what they walk is
        # in "sources")
        if "sources" in v.extra:
            return v, list(v.extra["sources"]), v.extra.get("late", False)
        return v, [a for a in v.args if isinstance(a, str)], False
    if isinstance(v.fn, ir.Method) and v.fn.name in _DICT_VIEWS and v.args and \
            isinstance(v.args[0], str):
        return v, [v.args[0]], False                # a dict view follows its dict
    return None


class Objects:
    def __init__(self, fn, kinds=None):
        self.kinds = kinds if kinds is not None else getattr(fn, "kinds", {}) or {}
        self.pts = {}
        self.contents = {}
        self.iters = set()
        self.sources = {}
        self.not_arrays = set()         # objects that are certainly lists, tuples, dicts...
        # objects that arrays may be: an array's items (its rows: ``list(m)``, ``zip(m, ...)``,
        # ``for r in m``) are views of it, so an array counts as holding itself (items_of)
        self.arrays = set()
        for p in fn.params:
            self.pts[p] = {("p", p)}
            if self.kinds.get(p) == "a":
                self.arrays.add(("p", p))
            if self.kinds.get(p) == "c":
                self.not_arrays.add(("p", p))
            self.contents[("p", p)] = {("pc", p)}
            self.contents[("pc", p)] = {("pc", p)}
        stmts = list(ir.walk(fn.body))
        for s in stmts:
            if iterator_sources(s) is not None:
                self.iters.add(("s", id(s)))
            call = call_of(s)
            if isinstance(s, ir.Assign) and call is not None and (
                    isinstance(call.fn, ir.Static) and _hashable(call.fn.obj) and
                    call.fn.obj in _HOLDERS | _SHALLOW or
                    call.cls == "primitive" and call.rule is not None and
                    call.rule.kind == "container" and not call.rule.view):
                self.not_arrays.add(("s", id(s)))
        for _ in range(100):
            self._changed = False
            for s in stmts:
                self._flow(s)
            if not self._changed:
                break
        self._close_sources(stmts)

    # -- queries ----------------------------------------------------------------------------
    def of(self, op):
        """The objects an operand may be."""
        if isinstance(op, str):
            return self.pts.get(op, set())
        if isinstance(op, ir.Const) and not isinstance(
                op.value, (int, float, complex, str, bytes, bool, type(None), tuple, frozenset,
                           range, type(Ellipsis))):
            return {("k", id(op.value))}
        return set()

    def items_of(self, objs):
        out = set()
        for o in objs:
            out |= self.contents.get(o, set())
        return out | (set(objs) & self.arrays)     # (a row of an array: a view of it)

    def reach(self, objs):
        """``objs`` and everything they hold, at any depth."""
        out, todo = set(objs), list(objs)
        while todo:
            for c in self.contents.get(todo.pop(), ()):
                if c not in out:
                    out.add(c)
                    todo.append(c)
        return out

    def holds(self, var, obj):
        """Whether ``var`` may be ``obj`` or hold it (at any depth)."""
        memo = self.__dict__.setdefault("_held", {})
        if var not in memo:
            memo[var] = self.reach(self.of(var))
        return obj in memo[var]

    # -- the analysis ---------------------------------------------------------------------------
    def _add(self, table, key, objs):
        cur = table.setdefault(key, set())
        new = set(objs) - cur
        if new:
            cur |= new
            self._changed = True
            if table is self.pts and self.kinds.get(key) == "a":
                self.arrays |= new

    def _put_in(self, holders, objs):
        for h in list(holders):
            self._add(self.contents, h, objs)

    def _flow(self, s):
        me = ("s", id(s))
        if isinstance(s, ir.Assign):
            if isinstance(s.value, ir.Call):
                self._add(self.pts, s.target, self._call(s, s.value, me))
            else:
                self._add(self.pts, s.target, self.of(s.value) or {me})
        elif isinstance(s, ir.ExprStmt):
            self._call(s, s.call, me)
        elif isinstance(s, ir.SetItem):
            self._put_in(self.of(s.obj), self.of(s.value))
        elif isinstance(s, ir.Mutate):
            args = s.call.args[1:] + [v for _, v in s.call.kwargs]
            self._method_adds(s.call.fn.name, self.of(s.obj), args)
            if s.target:
                # (pop/setdefault: an item, or the default)
                self._add(self.pts, s.target, {me} | self.items_of(self.of(s.obj)) |
                          self._plain(args))
        elif isinstance(s, ir.For):
            self._add(self.pts, s.target, {me})
        elif isinstance(s, ir.With):
            for c, v in s.items:
                if v:
                    self._add(self.pts, v, {me} | self.reach(self.of(c)))
        elif isinstance(s, ir.Try):
            for _, v, _ in s.handlers:
                if v:
                    self._add(self.pts, v, {me})

    def _plain(self, ops):
        """What the operands may be, less iterators (a call that consumes an iterator does not
        return it)."""
        out = set()
        for op in ops:
            out |= self.of(op)
        return out - self.iters

    def _method_adds(self, name, holders, args):
        if name in _ADDS_ITEM:
            objs = set()
            for a in args:
                objs |= self.of(a)
        elif name in _ADDS_ITEMS:
            objs = self.items_of(self._plain(args))
        elif name in ("sort", "reverse", "pop", "popitem", "remove", "clear", "discard", "fill"):
            return
        else:
            objs = self.reach(set().union(*(self.of(a) for a in args)) if args else set())
        self._put_in(holders, objs)

    def _call(self, s, call, me):
        """The objects the call's result may be (and the contents it adds)."""
        fn = call.fn
        ops = [v for op in call.operands() for v in ir.operand_vars(op)] + \
            list(call.extra.get("captured", ()))
        target = s.target if isinstance(s, ir.Assign) else None
        obj = fn.obj if isinstance(fn, ir.Static) and _hashable(fn.obj) else None
        if call.cls == "primitive" and call.rule is not None and \
                _hashable(getattr(call.rule, "fn", None)) and call.rule.fn in _SHALLOW:
            obj = call.rule.fn                  # (``a + b`` of lists: runtime.seq_add)
        made = iterator_sources(s)
        if made is not None:
            _, names, _ = made
            walked = set().union(*(self.of(n) for n in names)) if names else set()
            if obj in (runtime.iiter, iter) and call.args:
                walked |= self.of(call.args[0])         # (the list a map/generator was lowered to)
            self._add(self.sources, me, walked)
            items = self.items_of(walked)
            yielded = ("y", id(s))                      # the tuples zip/enumerate/items yield
            self._add(self.contents, yielded, items)
            self._add(self.contents, me, items | {yielded})
            out = {me}
            if obj in (runtime.iiter, iter) and call.args:
                out |= self.of(call.args[0]) & self.iters   # iter(it) is it
            return out
        if target is not None and self.kinds.get(target) in _NUMBER_KINDS:
            return {me}                                 # numbers: never changed in place
        if obj is runtime.here:
            return self.of(call.args[0]) | {me}         # the value itself, or a cursor on it
        if obj in _CONSUMERS:
            # the values an iterator yields, as a list (or the list/array itself)
            args = self._plain(call.args)
            yielded = ("y", id(s))
            items = self.items_of(set().union(*(self.of(a) for a in call.args)))
            self._add(self.contents, yielded, items)
            self._add(self.contents, me, items | {yielded})
            return {me} | args
        if obj is operator.getitem or obj is runtime.subscript:
            recv = call.args[0]
            k = self.kinds.get(recv) if isinstance(recv, str) else None
            objs = self.of(recv)
            items = self.items_of(objs)
            self._add(self.contents, me, items)          # (a slice of a list: a new list)
            out = {me}
            if k != "a":
                out |= items                            # an item of a list, tuple, dict
            if k != "c":
                out |= objs - self.iters - self.not_arrays      # a view of an array
            return out
        if isinstance(fn, ir.Attr):
            recv = self.of(call.args[0])
            if fn.name in _ZERO_ATTRS:
                return {me}
            if fn.name in _ARRAY_ATTRS_VIEW or (call.rule is not None and call.rule.view):
                return {me} | (recv - self.iters)
            # an attribute's value, or a bound method (which holds its object)
            self._add(self.contents, me, recv)
            return {me} | self.items_of(recv)
        if obj in _HOLDERS:
            self._add(self.contents, me, set().union(*(self.of(v) for v in ops)) if ops else ())
            return {me}
        if obj is copy.deepcopy:
            return {me}
        if obj in _SHALLOW or isinstance(fn, ir.Method) and fn.name == "copy" and \
                len(call.args) == 1 and not call.kwargs:
            self._add(self.contents, me, self.items_of(set().union(*(self.of(v) for v in ops))
                                                       if ops else set()))
            return {me}
        if call.info and call.info.get("mutates"):
            recv = self.of(call.info["mutates"])
            self._method_adds(fn.name if isinstance(fn, ir.Method) else "", recv,
                              (call.args[1:] if isinstance(fn, ir.Method) else list(call.args)) +
                              [v for _, v in call.kwargs])
        src = returned_operand(call)
        if src is not None and call.cls != "zero":
            # a.astype(t, copy=False), a.conj(), np.array(a, copy=None)...: a itself at times
            return {me} | (self.of(src) - self.iters)
        if call.cls in ("primitive", "zero") and call.rule is not None:
            if call.cls == "zero":
                return {me}
            if call.rule.view:
                plain = self._plain(ops)
                self._add(self.contents, me, plain | self.items_of(plain))
                return {me} | plain
            if call.rule.kind == "container":
                # a new list, tuple or dict of items of the arguments (sorted, heapq.nsmallest...)
                self._add(self.contents, me, self.items_of(
                    set().union(*(self.of(v) for v in ops)) if ops else set()))
                return {me}
            if call.rule.kind not in ("any", "getitem"):
                return {me}                             # a new array or number (``a + b``...)
            rfn = call.rule.fn if _hashable(getattr(call.rule, "fn", None)) else None
            pos = [self.of(a) for a in call.args]
            kw = set().union(*(self.of(v) for _, v in call.kwargs)) if call.kwargs else set()
            if rfn is sum:
                # a number, or a new list of the items' items
                self._add(self.contents, me, self.items_of(self.items_of(
                    set().union(*pos) if pos else set())))
                return {me}
            if rfn in (min, max) and call.args:
                # an item of the one iterable, or one of the arguments (or the default)
                return {me} | kw | (self.items_of(pos[0]) if len(pos) == 1 else
                                    set().union(*pos) - self.iters)
            if rfn is next and call.args:
                return {me} | self.items_of(pos[0]) | set().union(set(), *pos[1:])
            if isinstance(fn, ir.Method) and fn.name == "get" and call.args:
                return {me} | self.items_of(pos[0]) | set().union(set(), *pos[2:]) | kw
            # max(l1, l2), next(it, default), d.get(k, default): an argument or an item of one
            args = set().union(*(self.of(v) for v in ops)) if ops else set()
            items = self.items_of(args)
            self._add(self.contents, me, items)
            return {me} | (args - self.iters) | items
        args = set().union(*(self.of(v) for v in ops)) if ops else set()
        if isinstance(fn, ir.Static) and isinstance(fn.obj, type):
            # a class: a new instance, holding whatever the arguments reach
            self._add(self.contents, me, self.reach(args))
            return {me}
        # a call into Python code, a method of an object of unknown type, a function without
        # source: its result may be any argument, or anything an argument holds
        anything = self.reach(set().union(*(self.of(v) for v in ops)) if ops else set())
        self._add(self.contents, me, anything)
        return {me} | anything

    def _close_sources(self, stmts):
        """An iterator over an iterator reads what that one reads."""
        changed = True
        while changed:
            changed = False
            for it, srcs in self.sources.items():
                more = set()
                for o in srcs & self.iters:
                    more |= self.sources.get(o, set())
                if not more <= srcs:
                    srcs |= more
                    changed = True
