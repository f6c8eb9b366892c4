"""Stacks of saved values as arrays (``jit=True``).

Python mode pushes a value the reverse sweep reads on a list (``_s_x.append(x)``) and pops it
(``x = _s_x.pop()``).  Compiled by numba, a list per stack costs compile time (40 float stacks:
~4.5 s of numba's lowering against ~2.6 s as arrays) and a capacity check per push.  Here a stack
of numbers (as the types prove them) or of the emitter's loop counters is a 1-d array with a fill
index, its length known before the first push where the trip counts are:

    _s_x = _np.empty(100)                       # one value per trip of `for t in range(100)`
    _t1 = 0
    for t in range(100):
        _s_x[_t1] = x                           # every stack pushed once per trip of the loop,
        ...                                     # nowhere else, shares the loop's trip index
        _t1 += 1
    ...
    for t in range(100 - 1, -1, -1):
        _t1 -= 1
        ...
        x = _s_x[_t1]

A stack pushed under an ``if``, or more than once per trip, or in several places, has its own fill
index (``_s_x[_k_x] = x; _k_x += 1`` ... ``_k_x -= 1; x = _s_x[_k_x]``). The length is the pushes
outside loops plus, per loop around a push, the product of the trip counts, when every ``range``
around the pushes reads only constants and parameters never rebound; otherwise the stack starts
with the pushes outside loops, and ``_rt.reserve`` makes room for ``c`` pushes per trip before each
loop that pushes on it, or before the outermost loop around it whose body binds nothing the inner
ranges read (``n * k`` once, not ``k`` per trip of the outer loop; ``range`` is evaluated once,
when the loop starts; a push under an ``if`` counts as one per trip). Either way every push writes
inside the array, so numba needs no bounds check.

A ``while`` loop's trip count is not known when it starts, and a ``for`` loop with a ``break`` may
make far fewer trips than its range (an iteration capped at a million trips): a stack pushed in
their trips (not in a ``for`` loop inside them) stays a list. An array there would need room
made trip by trip, ``s = _rt.reserve(s, k + 1)``, and an array rebound in a loop costs numba a
reference count increment and decrement per trip (atomic): measured on the dev machine, a 1000-
trip while loop pushing one integer, 5.0 us with the array against 2.3 with a list's append
(1.1 with no push at all). A ``for`` loop inside them gets its room before it starts, once per
outer trip; no reserve is hoisted past them. A stack that a ``try`` or ``with`` body pushes on
stays a list too, as do stacks of anything but the numbers the types prove float, integer or
bool, and the emitter's loop counters (arrays, tuples, complex numbers, values of unknown type:
numba needs one element type, known when the array is made). Shapes saved for the reverse sweep
(shapes.py) of arrays whose ndim the types know go on a 2-d integer array, a row per push
(``_s_shape1[_t1, 0] = _shape1[0]`` ... ``_shape1 = (_s_shape1[_t1, 0],)``). The types' kinds
are numba's here: it types integer arithmetic as NumPy does (``int ** int`` is an integer), and a
kind that two bindings join is the wider one (``s = 0`` then ``s = s + 0.5``: a float)."""
from ... import ir
from ...frontend.analysis import defined_in, definitions
from .. import text as T
from .names import _fresh, stack


_DTYPES = {("s", "f"): "_np.float64", ("s", "i"): "_np.int64", ("s", "b"): "_np.bool_"}


def _open_ended(loop):
    """A ``while`` loop, or a ``for`` loop that may end early: room for its pushes is made trip by
    trip (a `for i in range(10**6)` that converges after 20 trips allocates for 20, not 10**6)."""
    return isinstance(loop, ir.While) or loop.brk is not None


def count_name(v):
    """The fill index of an array stack of its own: ``_k_x`` for ``x``."""
    return _fresh("_k", v)


class _Site:
    __slots__ = ("loops", "direct")

    def __init__(self, loops, direct):
        self.loops = loops          # the loops around the push (for and while), outermost first
        self.direct = direct        # the push is a statement of the innermost loop's own body


class ArrayStacks:
    """The part of :class:`~.emitter.ReverseEmitter` that lays out stacks as arrays (jit mode)."""

    def plan_array_stacks(self):
        """After the save plan: which stacks are arrays (``self.array_stacks``: var -> dtype
        text), the index each uses (``self.stack_index``), the length each starts with
        (``self.stack_length``), the reserves before loops (``self.reserves``: id(For) ->
        [(var, the text of the pushes the loop makes)]) and the loops' shared trip indices
        (``self.trip_index``)."""
        self.array_stacks, self.stack_index, self.stack_length = {}, {}, {}
        self.reserves, self.trip_index, self.shape_ndim = {}, {}, {}
        if not self.jit:
            return
        counters = set(self.counters.values())
        dtype = {}
        for v, m in self.mode.items():
            if m != "stack":
                continue
            if v in counters:
                dtype[v] = "_np.int64"
            elif v in self.shape_users:
                # (a saved shape of an array whose ndim the types know: one row per push)
                t = self.types.get(self.shape_users[v][0])
                if t is not None and t[0] == "a" and type(t[2]) is int and t[2] > 0:
                    dtype[v] = "_np.int64"
                    self.shape_ndim[v] = t[2]
            elif v not in self.synthetic and self.types.get(v) in _DTYPES:
                dtype[v] = _DTYPES[self.types[v]]
        if not dtype:
            return
        sites = {v: [] for v in dtype}
        bad = set()

        def visit(block, loops, direct, unbounded):
            for s in block:
                for when in ("pre", "post"):
                    for v in self.pushed(s, when):
                        if v in dtype:
                            if unbounded:
                                bad.add(v)
                            else:
                                sites[v].append(_Site(loops, direct))
                if isinstance(s, ir.For):
                    visit(s.body, loops + (s,), True, unbounded)
                elif isinstance(s, ir.While):
                    visit(s.test_body, loops + (s,), False, unbounded)
                    visit(s.body, loops + (s,), True, unbounded)
                else:
                    for blk in ir.children(s):
                        visit(blk, loops, False,
                              unbounded or isinstance(s, (ir.Try, ir.With)))

        visit(self.fn.body, (), False, False)
        defs = definitions(self.fn)
        for v, t in dtype.items():
            if v in bad or any(s.loops and _open_ended(s.loops[-1]) for s in sites[v]):
                continue                    # (a list: see the module's docstring)
            self.array_stacks[v] = t
            ss = sites[v]
            one = ss[0].loops[-1] if len(ss) == 1 and ss[0].loops and ss[0].direct else None
            if one is not None:
                # (one push per trip of one loop: the loop's trip index)
                if id(one) not in self.trip_index:
                    self.trip_index[id(one)] = self.fresh("t")
                self.stack_index[v] = self.trip_index[id(one)]
            else:
                self.stack_index[v] = count_name(v)
            length = self._length(ss, defs)
            if length is not None:
                self.stack_length[v] = length
                continue
            self.stack_length[v] = str(sum(1 for s in ss if not s.loops))
            per_loop = {}
            for s in ss:
                if s.loops:
                    loop, trips = self._hoisted(s.loops)
                    counts = per_loop.setdefault(id(loop), {})
                    counts[trips] = counts.get(trips, 0) + 1
            for key, counts in per_loop.items():
                need = " + ".join(str(c) if k == "1" else k if c == 1 else f"{c} * {k}"
                                  for k, c in counts.items())
                self.reserves.setdefault(key, []).append((v, need))

    def _hoisted(self, loops):
        """The outermost of ``loops`` (around one push, outermost first) before which the trip
        counts of it and of every loop inside it are known (the ranges inside read nothing the
        loop binds), and the text of their product: there one reserve makes room for all the
        pushes its trips make (a mixture's inner `for j in range(k)`, in `for i in range(n)`:
        `n * k` before the outer loop, not `k` before each inner one)."""
        a = len(loops) - 1                  # (never an open-ended loop: their stacks are lists)
        while a > 0 and not _open_ended(loops[a - 1]):
            bound = defined_in([loops[a - 1]])
            if any(isinstance(op, str) and op in bound for loop in loops[a:]
                   for op in (loop.start, loop.stop, loop.step)):
                break
            a -= 1
        n, parts = self._trips(loops[a:])
        if n != 1 or not parts:
            parts.insert(0, str(n))
        return loops[a], " * ".join(parts)

    def _trips(self, loops):
        """The trips ``loops`` make together: the product of the constant ranges' lengths, and the
        texts of the others' (``len(range(n))``)."""
        n, parts = 1, []
        for loop in loops:
            ops = (loop.start, loop.stop, loop.step)
            if all(isinstance(op, ir.Const) and type(op.value) is int for op in ops):
                n *= len(range(loop.start.value, loop.stop.value, loop.step.value))
            else:
                parts.append(self.trips_text(loop))
        return n, parts

    def _length(self, sites, defs):
        """The text of the number of pushes on a stack, when the ranges of the loops around its
        push sites read only constants and parameters never rebound, and no ``while`` loop is
        around them (else None)."""
        terms, total = {}, 0
        for s in sites:
            if any(_open_ended(loop) or not all(
                    isinstance(op, ir.Const) or op in self.fn.params and defs.get(op) == 1
                    for op in (loop.start, loop.stop, loop.step)) for loop in s.loops):
                return None
            n, parts = self._trips(s.loops)
            if not parts:
                total += n
            else:
                key = " * ".join(parts)
                terms[key] = terms.get(key, 0) + n
        texts = [(f"{n} * {k}" if n != 1 else k) for k, n in terms.items() if n]
        if total or not texts:
            texts.insert(0, str(total))
        return " + ".join(texts)

    def trips_text(self, loop):
        c = self.consts
        if isinstance(loop.start, ir.Const) and loop.start.value == 0 and \
                isinstance(loop.step, ir.Const) and loop.step.value == 1:
            return f"len(range({T.operand_text(loop.stop, c)}))"
        return (f"len(range({T.operand_text(loop.start, c)}, {T.operand_text(loop.stop, c)}, "
                f"{T.operand_text(loop.step, c)}))")

    # -- the lines --------------------------------------------------------------------------
    def stack_init_lines(self, v):
        """The lines that make ``v``'s empty stack, at the start of the forward sweep."""
        t = self.array_stacks.get(v)
        if t is None:
            return [T.Line(f"{stack(v)} = []", None)]
        n = self.stack_length[v]
        if v in self.shape_ndim:
            n = f"({n}, {self.shape_ndim[v]})"
        out = [T.Line(f"{stack(v)} = _np.empty({n}" +
                      ("" if t == "_np.float64" else f", {t}") + ")", None)]
        k = self.stack_index[v]
        if k == count_name(v):
            out.append(T.Line(f"{k} = 0", None))
        return out

    def trip_index_lines(self):
        return [T.Line(f"{t} = 0", None) for t in self.trip_index.values()]

    def reserve_lines(self, loop):
        """Before ``for`` loop ``loop``, room on each array stack its body pushes on for every
        trip (where the stack's length was not known at the start)."""
        out = []
        for v, need in self.reserves.get(id(loop), ()):
            out.append(T.Line(f"{stack(v)} = _rt.reserve({stack(v)}, {self.stack_index[v]} + "
                              f"{need})", loop.origin))
        return out

    def trip_end_lines(self, loop):
        """The forward loop body's last line: the next trip's index (loops with a trip index)."""
        t = self.trip_index.get(id(loop))
        return [T.Line(f"{t} += 1", loop.origin)] if t else []

    def trip_start_lines(self, key, origin):
        """The reverse loop body's first line: the index of the trip it reverses."""
        t = self.trip_index.get(key)
        return [T.Line(f"{t} -= 1", origin)] if t else []

    def push_lines(self, v, val, origin):
        if v not in self.array_stacks:
            return [T.Line(f"{stack(v)}.append({val})", origin)]
        k = self.stack_index[v]
        nd = self.shape_ndim.get(v)
        if nd is None:
            out = [T.Line(f"{stack(v)}[{k}] = {val}", origin)]
        else:
            # (item by item: numba compiles a row set from a tuple with its error message's
            # formatting, ~5 s the first time)
            row = self._row(v, k)
            out = [T.Line(f"{row} = {val}[0]" if nd == 1 else f"{row} = {val}", origin)]
        if k == count_name(v):
            out.append(T.Line(f"{k} += 1", origin))
        return out

    def pop_lines(self, v, origin, target=True):
        """``v = <its last saved value>`` (``target=False``: the value dropped)."""
        if v not in self.array_stacks:
            return [T.Line(f"{v} = {stack(v)}.pop()" if target else f"{stack(v)}.pop()", origin)]
        k = self.stack_index[v]
        out = [T.Line(f"{k} -= 1", origin)] if k == count_name(v) else []
        value = f"{stack(v)}[{k}]"
        if v in self.shape_ndim:        # (a shape: the tuple of its row)
            value = f"({self._row(v, k)}{',' if self.shape_ndim[v] == 1 else ''})"
        return out + ([T.Line(f"{v} = {value}", origin)] if target else [])

    def _row(self, v, k):
        """The items of row ``k`` of the shape stack of ``v``: ``_s_shape1[_t1, 0], ...``."""
        return ", ".join(f"{stack(v)}[{k}, {i}]" for i in range(self.shape_ndim[v]))
