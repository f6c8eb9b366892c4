"""The reverse-mode emitter: its state (the IR function, value kinds, activity, the reads each
statement records, names of tapes, records and counters), fresh names, and ``emit``, which writes
``f__fwd`` and ``f__bwd`` as a whole.  The sweeps, contributions and the save plan are in the
modules of its parts, mixed in."""
from ... import ir
from ...frontend.analysis import bound_names, changed_in_place
from .. import text as T
from .adjoints import AdjointContributions
from .forward_sweep import ForwardSweep
from .in_place import write_in_place
from .names import _TAKEN, _State, b
from .operands import _index_only_vars
from .reverse_calls import ReverseCalls
from .reverse_sweep import ReverseSweep
from .recompute import Recompute
from .saves import SavePlan
from .shapes import ShapeSaves
from .stacks import ArrayStacks
from .tuples import TupleAdjoints, known_tuples


class ReverseEmitter(AdjointContributions, ReverseSweep, ReverseCalls, SavePlan, ForwardSweep,
                     TupleAdjoints, ShapeSaves, Recompute, ArrayStacks):
    def __init__(self, fn, kinds, active, varied, wrt, namespace, derived_namer, jit=False,
                 types=None):
        self.fn = fn
        self.jit = jit                        # write for numba.njit (see codegen/jit.py)
        self.types = types or {}              # var -> classify.types type, where known
        self.kinds = kinds
        self.active = active
        self.varied = varied
        self.wrt = list(wrt)                  # active parameter names, in order
        self.namespace = namespace
        self.consts = T.Consts(namespace)
        self.derived_namer = derived_namer    # (pyfunc, mask) -> (fwd_name, bwd_name)
        self.reads = {}                       # id(stmt) -> {"pre": [...], "post": [...]}
        self.synthetic = {}                   # emitter-made var -> "name" | "stack"
        self.site_names = {}                  # id(stmt) -> tape/record name
        self.counters = {}                    # id(loop) -> counter name
        self.provided = []                    # loop targets the reverse loops re-bind
        self.depth = 0
        self.n = 0
        self.real = {v for v, k in kinds.items() if k in ("f", "i")}
        # (typed real scalars and arrays: conj of them is themselves)
        self.real |= {v for v, t in self.types.items() if t[0] in "sa" and t[1] in "bif"}
        self.index_only = _index_only_vars(fn)
        self.changed = changed_in_place(fn)   # variables changed in place (identity checks)
        self.owned = set()                    # adjoint buffers the enclosing loops write in place
        # tuples of known length whose adjoints are one variable per element (numba: tuples.py)
        self.tuples = known_tuples(fn) if jit else {}
        self._live = None                     # (tuples.live_elements, when first asked)
        self.hoisted = []                     # [(names, text)] templates bind first (jit mode)
        self.shape_vars = {}                  # (where, var) -> the name of var's saved shape
        self.shape_users = {}                 # shape name -> (var, [statements reading it])
        self.shape_binds = {}                 # id(stmt) -> [(name, var, form)] (dtypes)
        self._blocks = self._first_users = None   # (shapes.py, when first asked)
        # stacks as arrays (stacks.py: plan_array_stacks, after the save plan; jit mode)
        self.array_stacks, self.stack_index, self.stack_length = {}, {}, {}
        self.reserves, self.trip_index, self.shape_ndim = {}, {}, {}
        self._written = None                  # (analysis.written_arrays, when first asked)
        self._loop_bound = None               # (shapes.py: what loop bodies bind, when asked)
        self._shape_classes = None            # (same_shape.shape_classes, when first asked)

    def fresh(self, base):
        taken = getattr(_TAKEN, "names", ())
        while True:
            self.n += 1
            name = f"_{base}{self.n}"
            if name not in taken:
                return name

    def zero(self, v):
        """The text of a zero adjoint for ``v``: the symbolic ``0.0``; for numba (which types every
        variable once), a zero of v's own type: ``0.0`` for a float, zeros like v for an array."""
        if self.jit and self.kinds.get(v) not in ("f", "i") and \
                (self.types.get(v) or ("?",))[0] != "s":
            return f"_rt.zero_of({v})"          # (numba picks 0.0 or zeros by v's type)
        return "0.0"

    # -- reads ------------------------------------------------------------------------------
    def read(self, stmt, when, var):
        if not isinstance(var, str) or var in self.provided:
            return
        slot = self.reads.setdefault(id(stmt), {"pre": [], "post": []})
        if var not in slot[when]:
            slot[when].append(var)

    # -- driver -----------------------------------------------------------------------------
    def emit(self, fwd_name, bwd_name):
        fn = self.fn
        names = set(fn.params)
        for st_ in ir.walk(fn.body):
            names.update(bound_names(st_))
        _TAKEN.names = names
        ret = fn.body[-1]
        assert isinstance(ret, ir.Return)
        st = _State()
        out_var = ret.value if isinstance(ret.value, str) and ret.value in self.active else None
        if out_var is not None:
            st.defined.add(out_var)
        rev = self.rev_block(fn.body[:-1], st) if out_var is not None else []
        self.plan_saves(rev)
        o = fn.origin
        fwd = []
        self.plan_array_stacks()
        for v, m in self.mode.items():
            if m == "stack":
                fwd.extend(self.stack_init_lines(v))
        fwd += self.trip_index_lines()
        fwd += self.fwd_block(fn.body)
        grads = [b(p) if p in st.defined else self.zero(p) for p in self.wrt]
        if not self.jit and getattr(self, "in_place_buffers", True):
            # (products into dead adjoints; not of adjoints the types say are numbers: `g * 0.5`
            # of a float stays as it reads)
            scalars = {b(v) for v, t in self.types.items() if t is not None and t[0] == "s"}
            write_in_place(rev, self.expand, ", ".join(grads), scalars)
        names = self.tape_names()
        tape = "_tape"
        while tape in _TAKEN.names:
            tape = "_" + tape
        head = []
        if names:
            head.append(T.Line(", ".join(names) + ("," if len(names) == 1 else "") + f" = {tape}", None))
        bwd = head + rev + [T.Line("return (" + ", ".join(grads) + ("," if len(grads) == 1 else "")
                                   + ")", None)]
        out_name = out_var or "_r"
        fwd_src = self.render_function(f"def {fwd_name}({', '.join(fn.params)}):", fwd, o)
        bwd_src = self.render_function(f"def {bwd_name}({tape}, {b(out_name)}):", bwd, o)
        self._parts = (fwd, rev, grads, out_name, ret)
        return fwd_src, bwd_src

    def emit_fused(self, name, module_arrays=()):
        """One function ``name(*params, seed, *module_arrays) -> (value, gradients)``: the forward
        sweep, then the reverse sweep, in one body (after :meth:`emit`).  The tape never leaves
        the function, so numba keeps its lists native; what the forward sweep returned is kept in
        a fresh name (the reverse sweep rebinds variables to their saved values).
        ``module_arrays``: module-level arrays the code reads, taken as parameters (numba would
        compile a global array's values in as constants: codegen/jit.module_arrays)."""
        fwd, rev, grads, out_name, ret = self._parts
        assert isinstance(fwd[-1], T.Line) and fwd[-1].text.startswith("return ")
        value = self.fresh("value")
        o = self.fn.origin
        body = fwd[:-1] + [T.Line(f"{value} = {T.operand_text(ret.value, self.consts)}", ret.origin)]
        body += rev + [T.Line(f"return {value}, (" + ", ".join(grads) +
                              ("," if len(grads) == 1 else "") + ")", None)]
        params = list(self.fn.params) + [b(out_name)] + list(module_arrays)
        return self.render_function(f"def {name}({', '.join(params)}):", body, o)

    def expand(self, hook):
        if hook.when == "trip":
            return self.trip_start_lines(hook.key, hook.origin)
        if hook.when == "discard":
            # the statement raised after saving its inputs: drop what it pushed
            return [x for v in self.discards(hook.key)
                    for x in self.pop_lines(v, hook.origin, target=False)]
        return [x for v in self.pops(hook.key)
                for x in ([T.Line(f"{v} = {self.recompute_text[v]}", hook.origin)]
                          if self.mode.get(v) == "recompute" else self.pop_lines(v, hook.origin))]

    def render_function(self, header, body, origin):
        triples = [(0, header, None)]
        T.render(body, self.expand, triples, 1)
        return triples
