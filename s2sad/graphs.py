"""Graph mode (``graph=True``): a whole ``value_and_grad`` step on CuPy arrays, forward and reverse
sweeps together, recorded once into a CUDA graph per argument specialisation and replayed.

Per specialisation (the structure of the arguments; each CuPy array's shape, dtype, contiguity and
device; each Python scalar's type and value):

1. the first call runs the step eagerly, with matrix products already on the capturable route
   (:mod:`.kernels.gemm`), so every kernel it needs is compiled and loaded, the derivative is
   built, and the device's memory pool is warm; its result is returned;
2. right after it, the same step is captured on a private stream (``stream.begin_capture()``) into
   a CUDA graph, reading static input buffers (copies of that call's arrays) and allocating
   everything it makes from a memory pool that belongs to the graph (so eager work never reuses
   memory the graph writes);
3. later calls copy their arrays into the static buffers, launch the graph on the current stream,
   and return **fresh copies** of the value and the gradients (arrays the caller owns: a later
   call never overwrites them).  Python objects in the result (not arrays) are the ones the
   capture returned.

Anything the capture cannot record falls back, for that specialisation and for good, to the plain
step (``graph=False``), with one :class:`~s2sad.errors.GraphFallbackWarning` naming the user's line:
a host synchronisation (``float(x.sum())``, ``.get()``, ``if x.max() > 0`` on a device value), a
library call that refuses capture (cuBLAS through CuPy outside the matrix products s2sad routes,
cuSOLVER, ...), an allocation the capture rejects.

What a replay cannot see: values the step computes on the host (Python floats of host arithmetic,
NumPy arrays, host random numbers) are those of the capturing call; device arrays reached other
than through the arguments are read where they were at capture (in-place updates are seen).  What
was read through a module global, a closure cell of the function, or an object's attribute
(``self.W``, ``model.W``) is checked before each replay: rebound, the next call captures again
(:func:`_unchanged`); state no check can see (a NumPy array or set held by an object) makes the
specialisation run without a graph, with the warning.
"""
import ast
import collections
import contextlib
import copy
import re
import threading
import types
import warnings

import numpy as np

from .cache import CACHE
from .callables import _def_origin
from .codegen.load import user_origin
from .errors import ArgumentError, GraphFallbackWarning, caller_origin
from .kernels import contract, elementwise, gemm
from .kernels.device import is_cupy
from . import runtime as _runtime
from .runtime import hooks

MAX_SPECIALISATIONS = 8
_SWEEPS = "_s2sad_graph_sweeps"
_DEVICE_SWEEPS = "_s2sad_device_sweeps"


# -- the derivative's sweeps, with matrix products on the capturable route -------------------------

def resolve(expr, ns, local=()):
    """The object the dotted name ``expr`` (an ``ast`` expression) denotes in namespace ``ns``, or
    None (not a dotted name, rooted at a name in ``local``, or unknown)."""
    parts = []
    while isinstance(expr, ast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if not isinstance(expr, ast.Name) or expr.id in local or expr.id not in ns:
        return None
    obj = ns[expr.id]
    for p in reversed(parts):
        obj = getattr(obj, p, None)
        if obj is None:
            return None
    return obj


class _SweepPass(ast.NodeTransformer):
    """What the passes over the generated sweeps share: they rewrite the sweeps' own bodies
    (``depth`` > 0 inside them; ``local``, the names a sweep binds), never a def, lambda or class
    nested in them (the user's code, copied as written: s2sad reads its source again when it is
    called, and refuses a code object that differs), and resolve dotted names of module globals
    in ``ns``."""

    def __init__(self, namespace):
        self.ns = namespace
        self.depth = 0
        self.local = set()

    def visit_FunctionDef(self, node):
        if self.depth:
            return node
        self.local = {a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg)} | \
            {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and
             not isinstance(n.ctx, ast.Load)}
        self.depth += 1
        try:
            self.generic_visit(node)
        finally:
            self.depth -= 1
        return node

    def visit_AsyncFunctionDef(self, node):
        return self.visit_FunctionDef(node)

    def visit_Lambda(self, node):
        return node

    def visit_ClassDef(self, node):
        return node

    def _resolve(self, expr):
        """The object a dotted name of module globals denotes, or None (a local, or unknown)."""
        return resolve(expr, self.ns, self.local)


class _Products(_SweepPass):
    """Matrix products onto the capturable route (:mod:`.kernels.contract`): ``a @ b`` ->
    ``_s2sad_matmul(a, b)``; a call whose callee resolves, in the module's namespace, to a
    product (``np.matmul``, ``cupy.dot``, ``cupy.tensordot``, ``cupy.einsum``... under whatever
    name the generated code binds it: the resolved ``xp`` of ``xp = cupy.get_array_module(x)``
    too) -> the routed callee (:func:`.kernels.contract.route`); ``x.dot(b)`` on a local value ->
    ``_s2sad_capturable(x.dot)(b)``.  Callees known only at run time (``_rt.call(xp.matmul,
    ...)``) are routed by ``runtime.dispatch.call``."""

    def __init__(self, namespace, plain=False):
        super().__init__(namespace)
        self.plain = plain              # products only (device_sweeps): no capture bookkeeping
        self.routes = {}                # callee -> the name its routed form is bound to

    def visit_BinOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.MatMult):
            return ast.copy_location(ast.Call(ast.Name("_s2sad_matmul", ast.Load()),
                                              [node.left, node.right], []), node)
        return node

    def visit_Attribute(self, node):
        # a read of an object's attribute, recorded while a graph is captured (_note): a replay
        # must see that it is still the same
        if self.plain or not isinstance(node.ctx, ast.Load) or self.depth == 0 or \
                self._library(node):
            return self.generic_visit(node) if self.plain else node
        value = self.visit(node.value)
        return ast.copy_location(ast.Call(ast.Name("_s2sad_attr", ast.Load()),
                                          [value, ast.Constant(node.attr)], []), node)

    def _library(self, expr):
        """A dotted name rooted at a library module global (``np.float32``, ``_rt.add``)."""
        while isinstance(expr, ast.Attribute):
            expr = expr.value
        return isinstance(expr, ast.Name) and expr.id not in self.local and \
            _is_library(self.ns.get(expr.id))

    def visit_Call(self, node):
        f = node.func
        callee = self._resolve(f)
        self.generic_visit(node)
        if callee is not None and self.plain:
            if contract.form_of(callee) is contract.matmul:
                node.func = ast.copy_location(ast.Name("_s2sad_matmul", ast.Load()), f)
        elif callee is not None:
            if callee is _RT_ATTR:
                node.func = ast.copy_location(ast.Name("_s2sad_rt_attr", ast.Load()), f)
                return node
            if callee is _RT_CALL_METHOD:
                node.func = ast.copy_location(ast.Name("_s2sad_rt_call_method", ast.Load()), f)
                return node
            routed = contract.route(callee)
            if routed is not None:
                name = self.routes.get(routed)
                if name is None:
                    name = self.routes[routed] = f"_s2sad_route{len(self.routes)}"
                node.func = ast.copy_location(ast.Name(name, ast.Load()), f)
            elif _uncapturable(callee):
                node.func = ast.copy_location(
                    ast.Call(ast.Name("_s2sad_guard", ast.Load()), [node.func], []), f)
        elif isinstance(f, ast.Attribute) and f.attr == "dot" and not self.plain:
            node.func = ast.copy_location(
                ast.Call(ast.Name("_s2sad_capturable", ast.Load()), [node.func], []), f)
        return node


def sweeps(d):
    """(fwd, bwd) of derivative ``d`` with its matrix products on the capturable route
    (:class:`_Products`; the same generated source, compiled again under the same file name, so
    tracebacks and the source map still name the user's lines).  Built once per derivative."""
    seen = getattr(_state, "used", None)
    if seen is not None:
        seen.append(d)                 # capturing: a derived callee's freshness is checked too
    got = getattr(d, _SWEEPS, None)
    if got is not None:
        return got
    ns = dict(d.module.module.__dict__)
    rewrite = _Products(ns)
    tree = rewrite.visit(ast.parse(d.module.source))
    ns["_s2sad_capturable"] = contract.capturable
    ns["_s2sad_attr"] = _attr
    ns["_s2sad_guard"] = _guard
    ns["_s2sad_rt_attr"] = _rt_attr
    ns["_s2sad_rt_call_method"] = _rt_call_method
    ns.update({name: routed for routed, name in rewrite.routes.items()})
    return _rebuilt(d, tree, ns, _SWEEPS)


def _rebuilt(d, tree, ns, attr):
    """(fwd, bwd) of derivative ``d`` compiled from the rewritten ``tree`` in namespace ``ns``
    (products through :func:`.kernels.gemm.matmul`; runs of elementwise statements, then the
    other elementwise expressions, as single kernels unless ``S2SAD_CUPY_FUSE=0``), under the
    generated module's file name, kept on ``d`` as ``attr``."""
    ns["_s2sad_matmul"] = gemm.matmul
    if elementwise.ENABLED:
        runs = _Runs(ns, d.module.filename)
        tree = runs.visit(tree)
        fuse = _Elementwise(ns)
        tree = fuse.visit(tree)
        # a run's fallback (its leaves not in the kernel's layouts: a Python number where an
        # array was, a small result) keeps the single-expression kernels of its statements
        fallbacks = [(name, fuse.visit(mod)) for name, mod in runs.pending]
        ns.update({name: f.entry() for name, f in fuse.fused.items()})
        for name, mod in fallbacks:
            runs.groups[name].fallback = _compiled(mod, name, d.module.filename, ns)
        ns.update({name: g.entry() for name, g in runs.groups.items()})
    ast.fix_missing_locations(tree)
    exec(compile(tree, d.module.filename, "exec"), ns)
    got = (ns[d.fwd.__name__], ns[d.bwd.__name__])
    try:
        setattr(d, attr, got)
    except AttributeError:
        pass
    return got


class _Runs(_SweepPass):
    """Each maximal run of consecutive statements of one statement list of the sweeps, each
    ``name = <elementwise expression of names>`` (:func:`.kernels.elementwise.compile_expr`, no
    hoisted leaf) or ``name = other`` where the run bound ``other`` (an alias), with two or more
    of the first kind -> ``a, b, ... = _s2sad_grpN(leaves...)``, a
    :class:`.kernels.elementwise.Group` that runs them as one kernel on CuPy arrays and as
    written otherwise.  Its targets are the last binding of each name the run binds (in the
    order of those bindings); its leaves, the names the run reads before binding them."""

    def __init__(self, namespace, filename):
        super().__init__(namespace)
        self.filename = filename        # (the fallbacks keep the statements' lines: tracebacks)
        self.groups = {}
        self.pending = []               # (group name, its fallback's module) for _rebuilt
        self.reads = collections.Counter()

    def visit_FunctionDef(self, node):
        if not self.depth:              # (names read or deleted anywhere in the sweep)
            self.reads = collections.Counter(
                n.id for n in ast.walk(node)
                if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Store))
        return super().visit_FunctionDef(node)

    def generic_visit(self, node):
        # statement lists in order (the groups are numbered in the order of the code)
        for field, old in ast.iter_fields(node):
            if isinstance(old, list):
                if self.depth and old and isinstance(old[0], ast.stmt):
                    setattr(node, field, self._rewrite(old))
                else:
                    for x in old:
                        if isinstance(x, ast.AST):
                            self.visit(x)
            elif isinstance(old, ast.AST):
                self.visit(old)
        return node

    def _member(self, stmt, bound):
        """compile_expr's (C template, leaf names) of ``stmt``, the name it copies if it is an
        alias of a name in ``bound``, or None: ``stmt`` ends a run."""
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and
                isinstance(stmt.targets[0], ast.Name)):
            return None
        if isinstance(stmt.value, ast.Name):
            return stmt.value.id if stmt.value.id in bound else None
        got = elementwise.compile_expr(stmt.value, self._resolve, _runtime.cj, _IN_PLACE)
        if got is None or not all(isinstance(x, str) for x in got[1]):
            return None
        return got[:2]

    def _rewrite(self, body):
        out, run, bound = [], [], set()
        for stmt in body + [None]:
            got = None if stmt is None else self._member(stmt, bound)
            if got is not None:
                run.append((stmt, got))
                bound.add(stmt.targets[0].id)
                continue
            if sum(not isinstance(g, str) for _, g in run) >= 2:
                out.append(self._group(run))
            else:
                out.extend(s for s, _ in run)
            run, bound = [], set()
            if stmt is not None:    # (not an elementwise statement, nor an alias of the run's)
                out.append(self.visit(stmt))
        return out

    def _group(self, run):
        """The statement that runs ``run`` ((statement, compile_expr's or an alias's source)
        pairs) as one :class:`.kernels.elementwise.Group`."""
        leaves, value, stmts, reads, last = [], {}, [], [], {}
        for stmt, got in run:
            target = stmt.targets[0].id
            if isinstance(got, str):                # an alias: the same value
                value[target] = value[got]
            else:
                cexpr, names = got
                refs, mine, earlier = [], [], False
                for n in names:
                    if n in value:
                        refs.append(f"t{value[n]}")
                        earlier = True
                    else:
                        if n not in leaves:
                            leaves.append(n)
                        refs.append("{%d}" % leaves.index(n))
                        mine.append(leaves.index(n))
                stmts.append(cexpr.format(*refs))
                reads.append((tuple(mine), earlier))
                value[target] = len(stmts) - 1
            last.pop(target, None)
            last[target] = True                     # (order of each name's last binding)
        outputs = list(last)
        # a name no other line of the sweep reads is not stored (its value is computed if a
        # later statement of the run needs it)
        inside = collections.Counter(n.id for st, _ in run for n in ast.walk(st.value)
                                     if isinstance(n, ast.Name))
        outputs = [n for n in outputs if self.reads[n] > inside[n]] or outputs[-1:]
        stored = list(dict.fromkeys(value[n] for n in outputs))
        picks = [stored.index(value[n]) for n in outputs]
        text = "; ".join(ast.unparse(s) for s, _ in run)
        name = f"_s2sad_grp{len(self.groups)}"
        self.groups[name] = elementwise.Group(stmts, reads, stored, picks, len(leaves),
                                              self._fallback(name, run, leaves, outputs), text)
        first = run[0][0]
        target = ast.Name(outputs[0], ast.Store()) if len(outputs) == 1 else \
            ast.Tuple([ast.Name(n, ast.Store()) for n in outputs], ast.Store())
        call = ast.Call(ast.Name(name, ast.Load()), [ast.Name(n, ast.Load()) for n in leaves], [])
        return ast.copy_location(ast.Assign([target], call), first)

    def _fallback(self, name, run, leaves, outputs):
        """The run's statements as written, in a function of its leaves that returns its
        outputs (compiled under the generated file's name and lines: a traceback names the
        user's line)."""
        ret = ast.Name(outputs[0], ast.Load()) if len(outputs) == 1 else \
            ast.Tuple([ast.Name(n, ast.Load()) for n in outputs], ast.Load())
        body = [s for s, _ in run] + [ast.copy_location(ast.Return(ret), run[-1][0])]
        args = ast.arguments(posonlyargs=[], args=[ast.arg(n) for n in leaves], kwonlyargs=[],
                             kw_defaults=[], defaults=[])
        fn = ast.copy_location(ast.FunctionDef(name, args, body, [], None, None), run[0][0])
        if hasattr(fn, "type_params"):
            fn.type_params = []
        mod = ast.fix_missing_locations(ast.Module([fn], []))
        self.pending.append((name, copy.deepcopy(mod)))
        return _compiled(mod, name, self.filename, self.ns)


def _compiled(mod, name, filename, ns):
    """Function ``name`` of module AST ``mod`` compiled under ``filename`` in namespace ``ns``."""
    space = {}
    exec(compile(ast.fix_missing_locations(mod), filename, "exec"), ns, space)
    return space[name]


class _Elementwise(_SweepPass):
    """Each elementwise expression of the sweeps (:func:`.kernels.elementwise.compile_expr`) ->
    ``_s2sad_ewN(leaves...)``, a :class:`.kernels.elementwise.Fused` that runs it as one kernel
    on CuPy arrays (``elementwise.MIN_ELEMENTS``) and as written otherwise."""

    def __init__(self, namespace):
        super().__init__(namespace)
        self.fused = {}

    def _fuse(self, node):
        got = elementwise.compile_expr(node, self._resolve, _runtime.cj, _IN_PLACE) \
            if self.depth else None
        if got is None:
            return self.generic_visit(node)
        cexpr, leaves, nops = got
        params = [x if isinstance(x, str) else f"_s2sad_l{i}" for i, x in enumerate(leaves)]
        hoisted = {id(x): p for x, p in zip(leaves, params) if not isinstance(x, str)}
        body = _Hoist(hoisted).visit(node)
        args = ast.arguments(posonlyargs=[], args=[ast.arg(p) for p in params], kwonlyargs=[],
                             kw_defaults=[], defaults=[])
        lam = ast.fix_missing_locations(ast.Expression(ast.Lambda(args, body)))
        fallback = eval(compile(lam, "<s2sad fused>", "eval"), self.ns)
        name = f"_s2sad_ew{len(self.fused)}"
        self.fused[name] = elementwise.Fused(cexpr, len(leaves), fallback, ast.unparse(body),
                                             nops)
        call_args = [ast.Name(x, ast.Load()) if isinstance(x, str) else self.visit(x)
                     for x in leaves]
        return ast.copy_location(ast.Call(ast.Name(name, ast.Load()), call_args, []), node)

    visit_BinOp = visit_UnaryOp = visit_Call = _fuse


_IN_PLACE = {_runtime.mul_into: "ab", _runtime.rmul_into: "ba"}


class _Hoist(ast.NodeTransformer):
    """The expression with each hoisted subexpression (by identity) replaced by its parameter."""

    def __init__(self, hoisted):
        self.hoisted = hoisted

    def visit(self, node):
        p = self.hoisted.get(id(node))
        if p is not None:
            return ast.Name(p, ast.Load())
        return self.generic_visit(_shallow(node))


def _shallow(node):
    """A copy of ``node`` whose fields are copied one level (the hoisted children stay shared)."""
    new = type(node)()
    for f, v in ast.iter_fields(node):
        setattr(new, f, list(v) if isinstance(v, list) else v)
    for a in node._attributes:
        if hasattr(node, a):
            setattr(new, a, getattr(node, a))
    return new


def device_sweeps(d):
    """(fwd, bwd) of derivative ``d`` for plain (not graph) mode on CuPy arrays: the generated
    code with ``a @ b`` and ``matmul`` callees through :func:`.kernels.gemm.matmul`, which reads
    transposed and head-split views in place where CuPy's matmul would copy them (products
    only: no capture bookkeeping).  Built once per derivative."""
    got = getattr(d, _DEVICE_SWEEPS, None)
    if got is not None:
        return got
    ns = dict(d.module.module.__dict__)
    tree = _Products(ns, plain=True).visit(ast.parse(d.module.source))
    return _rebuilt(d, tree, ns, _DEVICE_SWEEPS)


def on_device(args):
    """True when an argument is a CuPy array (plain mode then uses :func:`device_sweeps`)."""
    return any(is_cupy(a) for a in args)


def _graph_sweeps(d):
    """runtime.dispatch's hook: a derived callee's capturable sweeps in graph mode, its
    device sweeps in plain mode on CuPy arrays, else None."""
    if gemm.active():
        return sweeps(d)
    if gemm.plain_active():
        return device_sweeps(d)
    return None


def _graph_callee(fn):
    """runtime.dispatch's hook: a callee known only at run time (``xp.matmul`` of a local ``xp``),
    on the capturable route in graph mode (or refused while capturing: :func:`_guard`)."""
    if not gemm.active():
        return fn
    return _guard(fn) if _uncapturable(fn) else contract.capturable(fn)


# Libraries a capture cannot record: cuSOLVER (every CuPy/cupyx linalg call) checks its status on
# the host (a synchronisation, which ends a capture), so such a call is refused before it runs,
# while capturing only.  (The H200 test that "stalled" with cupy.linalg.solve was stuck before
# any capture, building the derivative: fixed in frontend/statics.py.)
_UNCAPTURABLE = ("cupy.linalg", "cupyx.linalg", "cupyx.scipy.linalg", "cupyx.lapack",
                 "cupy.cusolver", "cupy_backends.cuda.libs.cusolver")


class _NotCapturable(Exception):
    pass


# linalg functions that do not run cuSOLVER (products, norms, views): a step may use them
_LINALG_OK = {"matmul", "tensordot", "multi_dot", "vecdot", "matrix_transpose", "outer", "cross",
              "diagonal", "trace", "norm", "vector_norm", "matrix_norm"}
_LINALG_CALL = re.compile(r"linalg\.(\w+)")
_WHERE = re.compile(r"#\s+(\S+:\d+)\s*(.*)$")


class _Where:
    """The user's line a generated line came from (its ``# file:line  text`` comment)."""

    def __init__(self, where, text):
        self.where, self.text = where, text

    def short(self):
        return self.where


def _linalg_site(used):
    """Where the step's derivatives (``used``: those the warm-up call ran) call a linear-algebra
    routine that runs cuSOLVER (``cupy.linalg.solve``, ``xp.linalg.inv``, ``cupyx.scipy.linalg...``,
    as resolved or at run time), as a :class:`_Where`; None when they call none."""
    for d in used:
        src = getattr(getattr(d, "module", None), "source", "") or ""
        if "linalg." not in src:
            continue
        where, texts = None, {}
        for line in src.splitlines():
            m = _WHERE.search(line)
            if m:
                where = m.group(1)
                if m.group(2).strip():
                    texts[where] = m.group(2).strip()       # (on the first line of a group)
            if any(name not in _LINALG_OK for name in _LINALG_CALL.findall(line.split("#")[0])):
                return _Where(where, texts.get(where, "")) if where else \
                    _Where("(generated code)", line.strip())
    return None


@contextlib.contextmanager
def _no_cusolver():
    """While this thread captures, CuPy's cuSOLVER handles are refused (every cupy.linalg,
    cupyx.lapack and cupyx.scipy.linalg routine asks for one first): a linalg call reached
    anywhere (a rule's adjoint, a callee known only at run time) ends the capture with
    :class:`_NotCapturable` before any cuSOLVER work is recorded.
    Other threads get the handles as before."""
    from cupy.cuda import device
    names = [n for n in ("get_cusolver_handle", "get_cusolver_sp_handle") if hasattr(device, n)]
    saved = {n: getattr(device, n) for n in names}

    def refusing(orig, name):
        def get(*args, **kwargs):
            if getattr(_state, "capturing", False):
                raise _NotCapturable(f"cupy.cuda.device.{name}: cuSOLVER checks its status on "
                                     f"the host, which a CUDA graph cannot record")
            return orig(*args, **kwargs)
        return get
    try:
        for n in names:
            setattr(device, n, refusing(saved[n], n))
    except (AttributeError, TypeError):         # (a module that refuses new attributes)
        pass
    try:
        yield
    finally:
        for n, f in saved.items():
            try:
                setattr(device, n, f)
            except (AttributeError, TypeError):
                pass


def _uncapturable(fn):
    mod = getattr(fn, "__module__", None)
    return isinstance(mod, str) and mod.startswith(_UNCAPTURABLE)


def _guard(fn):
    """``fn``, or while a graph is captured on this thread a function that raises (the capture
    then ends and the step runs without a graph, with the warning naming the user's line)."""
    if not getattr(_state, "capturing", False):
        return fn

    def refused(*args, **kwargs):
        name = f"{getattr(fn, '__module__', '')}.{getattr(fn, '__name__', fn)}"
        raise _NotCapturable(f"{name} runs cuSOLVER, which checks its status on the host: a CUDA "
                             f"graph cannot record it")
    return refused


hooks.register(graph_sweeps=_graph_sweeps, graph_callee=_graph_callee)   # (runtime.dispatch)


# -- state read through objects: what a replay checks is unchanged ---------------------------------
# A graph bakes in what the captured step read: device pointers, host numbers.  Arguments are
# copied in on every replay and module globals are checked by the derivative's freshness; the
# attributes of objects (``self.W`` in a method, ``model.W`` of a global ``model``, an object
# passed as an argument) are recorded while the graph is captured, with any list, tuple or dict
# they hold, and a replay first checks each is still the same object (numbers: equal): if one was
# rebound (``self.W = self.W - lr * g``), the step is captured again.  An attribute holding state
# these checks cannot see (a NumPy array, a set, an object read by subscript) makes the
# specialisation run without a graph, with the warning.

_state = threading.local()
_RT_ATTR = _runtime.attr
_RT_CALL_METHOD = _runtime.call_method
_SCALARS = (int, float, complex, bool, str, bytes, type(None), np.generic, frozenset, range)


_LIBRARIES = {"numpy", "cupy", "cupyx", "cupy_backends", "scipy", "math", "cmath", "operator",
              "builtins", "s2sad", "numba", "array_api_compat", "functools", "itertools"}


def _is_library(obj):
    return isinstance(obj, types.ModuleType) and \
        getattr(obj, "__name__", "").split(".")[0] in _LIBRARIES


# an attribute of one of these is a method its type fixes (the derivative's own tape and stacks
# read .append/.pop: a new bound method at each read, never "the same" object)
_BUILTIN_CONTAINERS = (tuple, list, dict, set, frozenset)


def _watched(obj):
    """Whether an attribute read of ``obj`` is recorded (not of arrays, numbers, tuples, library
    modules: what they give back is fixed by the object itself)."""
    return not (hasattr(obj, "dtype") or isinstance(obj, _BUILTIN_CONTAINERS + _SCALARS) or
                _is_library(obj))


class _Computed:
    """What a property read gives: computed anew each time, so no replay check can keep it."""

    def __init__(self, owner, name):
        self.owner, self.name = owner, name

    def __getitem__(self, k):              # (what makes _opaque see it)
        raise TypeError


def _note(obj, name, value):
    reads = getattr(_state, "reads", None)
    if reads is not None and _watched(obj):
        if isinstance(getattr(type(obj), name, None), property):
            value = _Computed(type(obj).__name__, name)
        reads.append((obj, name, _snapshot(value)))


def _attr(obj, name):
    value = getattr(obj, name)
    _note(obj, name, value)
    return value


def _rt_attr(obj, name):
    out = _RT_ATTR(obj, name)
    _note(obj, name, out[0])
    return out


def _rt_call_method(obj, name, /, *args, **kwargs):
    prop = isinstance(getattr(type(obj), name, None), property)
    _note(obj, name, None if prop else getattr(obj, name))
    return _RT_CALL_METHOD(obj, name, *args, **kwargs)


def _opaque(x):
    """State a replay cannot check: a container other than list, tuple and dict (NumPy arrays
    included), read by subscript or iteration rather than by attribute."""
    t = type(x)
    if isinstance(x, _SCALARS) or _is_cupy(x) or t in (list, tuple, dict):
        return False
    return hasattr(t, "__getitem__") or hasattr(t, "__iter__")


def _snapshot(value):
    """(structure, leaves) of ``value`` through lists, tuples and dicts."""
    leaves = []
    return _flatten(value, leaves), leaves


def _same(a, b):
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, types.BuiltinMethodType):     # ([].append: bound to the same object)
        return a.__self__ is b.__self__ and a.__name__ == b.__name__
    return isinstance(a, _SCALARS + (types.MethodType,)) and a == b


class _UnwatchableState(Exception):
    pass


def _unwatchable(reads):
    """The reason a replay could not check the state these reads reached, or None."""
    for obj, name, (_, leaves) in reads:
        for x in leaves:
            if _opaque(x):
                what = f"the global {name}" if isinstance(obj, _Globals) else \
                    "a closure variable" if name == "cell_contents" else \
                    f".{name} of a {type(obj).__name__}"
                if isinstance(x, _Computed):
                    return _UnwatchableState(
                        f"it reads the property {what}, computed anew at each read, which a "
                        f"replay cannot check (pass its value to the step as an argument)")
                return _UnwatchableState(
                    f"it reads {what}, a {type(x).__name__}, whose "
                    f"changes a replay cannot see (pass it to the step as an argument)")
    return None


def _cell_reads(fn):
    """The closure cells of the user's function as reads (a cell rebound by ``nonlocal``)."""
    fn = getattr(fn, "__func__", fn)
    out = []
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            value = cell.cell_contents
        except ValueError:                         # an empty cell
            continue
        out.append((cell, "cell_contents", _snapshot(value)))
    return out


class _Globals:
    """A module's globals read by name (a read of :func:`_unchanged`)."""

    def __init__(self, glb):
        self.glb = glb

    def __getattr__(self, name):
        try:
            return self.__dict__["glb"][name]
        except KeyError:
            raise AttributeError(name) from None


def _global_reads(used):
    """The module globals the derivatives read that hold lists, tuples, dicts or state no check
    can see (their binding is checked by ``d.fresh()``; their items are not)."""
    out = []
    for d in used:
        glb, refs = getattr(getattr(d, "ir", None), "global_refs", (None, ()))
        for name, value in refs:
            if type(value) in (list, tuple, dict) or _opaque(value):
                out.append((_Globals(glb), name, _snapshot(value)))
    return out


def _unchanged(reads):
    for obj, name, (tree, leaves) in reads:
        try:
            now = getattr(obj, name)
        except Exception:                          # noqa: BLE001 (a deleted attribute)
            return False
        got = []
        if _flatten(now, got) != tree or len(got) != len(leaves) or \
                not all(_same(a, b) for a, b in zip(got, leaves)):
            return False
    return True


# -- arguments: leaves and the key of a specialisation ---------------------------------------------

def _is_cupy(x):
    return type(x).__module__.split(".")[0] == "cupy" and hasattr(x, "data") and \
        hasattr(x, "dtype")


def _flatten(obj, leaves):
    """The structure of ``obj`` (tuples, lists, dicts), its leaves appended to ``leaves``."""
    t = type(obj)
    if t is tuple or t is list:
        return (t, tuple(_flatten(v, leaves) for v in obj))
    if t is dict:
        return (dict, tuple((k, _flatten(v, leaves)) for k, v in obj.items()))
    leaves.append(obj)
    return None


def _unflatten(tree, it):
    if tree is None:
        return next(it)
    t, parts = tree
    if t is dict:
        return {k: _unflatten(v, it) for k, v in parts}
    return t(_unflatten(v, it) for v in parts)


def _leaf_key(x):
    if _is_cupy(x):
        f = x.flags
        return ("a", x.dtype, x.shape, f.c_contiguous, f.f_contiguous, x.data.device_id)
    t = type(x)
    if t in (float, int, complex, bool, str, type(None)):
        return ("v", t, x)
    if hasattr(x, "dtype") or _opaque(x):
        return None
    return ("o", id(x))         # an object (self): this one; its attributes are checked (_note)


# -- one captured specialisation ------------------------------------------------------------------

class _Captured:
    def __init__(self, graph, pool, buffers, out_tree, out_leaves, fresh, whole=None):
        self.graph, self.pool, self.buffers = graph, pool, buffers
        self.out_tree, self.out_leaves, self.fresh = out_tree, out_leaves, fresh
        self.done = None
        # per array argument: (position, its buffer, one memcpy?).  The key fixes each array's
        # contiguity, and its buffer has the order of the capturing call's array (C, or F for an
        # F-only array): a contiguous argument is one memcpy, another an elementwise copy.
        # Every argument is copied on every replay, even the same array object as last time:
        # the caller may have changed it in place (W -= lr * g), which identity cannot tell.
        whole = whole if whole is not None else [True] * len(buffers)
        self.copies = [(i, b, w) for i, (b, w) in enumerate(zip(buffers, whole)) if b is not None]

    def replay(self, leaves):
        import cupy
        stream = cupy.cuda.get_current_stream()
        if self.done is not None:
            stream.wait_event(self.done)       # the previous replay (maybe on another stream)
        for i, buf, whole in self.copies:
            x = leaves[i]
            if whole:
                buf.data.copy_from_device_async(x.data, x.nbytes, stream)
            else:
                buf[...] = x
        self.graph.launch(stream)
        out = [_fresh(o, stream) if _is_cupy(o) else o for o in self.out_leaves]
        self.done = stream.record()
        return _unflatten(self.out_tree, iter(out))


def _fresh(o, stream):
    """A copy of the graph's output array ``o`` (one memcpy where it is contiguous)."""
    import cupy
    if o.flags.c_contiguous and o.nbytes:
        c = cupy.empty(o.shape, o.dtype)
        c.data.copy_from_device_async(o.data, o.nbytes, stream)
        return c
    return o.copy()


def method_wrt(wrt):
    """``wrt`` of a method, counted on the function with ``self`` first (positions + 1, names as
    they are); None for a form this does not know."""
    if type(wrt) is int and wrt >= 0:
        return wrt + 1
    if type(wrt) is str:
        return wrt
    if type(wrt) in (tuple, list):
        parts = [method_wrt(w) for w in wrt]
        return None if None in parts else type(wrt)(parts)
    return None


class Bound:
    """``graph=True`` on a method (``@differentiate(graph=True)`` in a class body) accessed on
    an instance: the class's :class:`Graphed` of the plain function, called with the instance
    first: an argument keyed by identity (one specialisation per instance), whose attribute
    reads the replay checks (:func:`_unchanged`)."""

    def __init__(self, graphed, obj):
        self.graphed, self.obj = graphed, obj

    def __call__(self, args, kwargs):
        return self.graphed((self.obj,) + tuple(args), kwargs)

    @property
    def entries(self):
        return self.graphed.entries


class _Eager:
    """A specialisation that could not be captured: runs as ``graph=False``."""

    def __init__(self, why):
        self.why = why


class Graphed:
    """``graph=True`` around one ``value_and_grad`` step: ``step(args, kwargs)`` runs it eagerly
    and returns ``((value, grads), derivatives used)``; ``pyfunc`` is the user's function (for
    messages)."""

    def __init__(self, step, pyfunc):
        self.step = step
        self.pyfunc = pyfunc
        self.entries = {}
        self.lock = threading.RLock()
        self.warned = False

    def __call__(self, args, kwargs):
        leaves = []
        tree = _flatten((args, kwargs), leaves)
        keys = tuple(_leaf_key(x) for x in leaves)
        if not any(k is not None and k[0] == "a" for k in keys):
            self._refuse_host(leaves)
        key = (tree, keys) if None not in keys else None
        with self.lock:
            e = self.entries.get(key) if key is not None else None
            if isinstance(e, _Captured):
                if e.fresh():
                    return e.replay(leaves)
                del self.entries[key]              # a global it read was rebound: capture again
                e = None
            if isinstance(e, _Eager) or e is None and (key is None or
                                                       len(self.entries) >= MAX_SPECIALISATIONS):
                if key is None and not self.warned:
                    odd = next(x for x, k in zip(leaves, keys) if k is None)
                    self._warn(None, f"an argument of type {type(odd).__name__} (graph mode "
                                     f"captures CuPy arrays and Python scalars)")
                return self.step(args, kwargs)[0]
            with gemm.graph_matmuls():             # warm-up: the capturable route, eagerly
                out, used = self.step(args, kwargs)
            site = _linalg_site(used)
            if site is not None:
                # cuSOLVER is not captured (it reads its status on the host): the step runs
                # without a graph
                err = _NotCapturable("a linear-algebra routine (cuSOLVER checks its status on "
                                     "the host, which a CUDA graph cannot record)")
                err.origin = site
                if not self.warned:
                    self._warn(err, str(err))
                self.entries[key] = _Eager(err)
                return out
            self.entries[key] = self._capture(tree, leaves, used)
            return out

    def _refuse_host(self, leaves):
        kinds = sorted({type(x).__module__.split(".")[0] + "." + type(x).__name__
                        for x in leaves if hasattr(x, "dtype")})
        raise ArgumentError(
            f"graph=True needs CuPy arrays, but {self.pyfunc.__qualname__} got "
            + (", ".join(kinds) if kinds else "no arrays") +
            " (CUDA graphs record GPU work; there is nothing to capture)",
            origin=caller_origin(),
            fix="pass CuPy arrays, or drop graph=True for NumPy arguments (the gradient is the "
                "same without it)")

    def _capture(self, tree, leaves, used):
        import cupy
        gen = CACHE.generation
        cur = cupy.cuda.get_current_stream()
        buffers = []
        for x in leaves:
            if _is_cupy(x):
                with x.device:
                    b = cupy.empty(x.shape, x.dtype,
                                   order="F" if x.flags.f_contiguous and not x.flags.c_contiguous
                                   else "C")
                    b[...] = x
                buffers.append(b)
            else:
                buffers.append(None)
        sargs, skw = _unflatten(tree, iter(b if b is not None else x
                                           for b, x in zip(buffers, leaves)))
        gemm.prepare()
        stream = cupy.cuda.Stream(non_blocking=True)
        stream.wait_event(cur.record())
        pool = cupy.cuda.MemoryPool()
        err = graph = out = None
        reads, _state.reads = getattr(_state, "reads", None), []
        callees, _state.used = getattr(_state, "used", None), []
        with cupy.cuda.using_allocator(pool.malloc), gemm.graph_matmuls() as kept, stream, \
                _no_cusolver():
            stream.begin_capture()
            _state.capturing = True
            try:
                out, _ = self.step(sargs, skw)
            except Exception as e:                 # noqa: BLE001 (reported as the fallback's cause)
                err = e
            finally:
                _state.capturing = False
                try:
                    graph = stream.end_capture()
                except Exception as e:             # noqa: BLE001
                    err = err or e
                reads, _state.reads = _state.reads, reads
                callees, _state.used = _state.used, callees
        used = list({id(d): d for d in list(used) + callees}.values())
        if err is None:
            reads += _cell_reads(self.pyfunc) + _global_reads(used)
            err = _unwatchable(reads)
        if err is not None:
            if not self.warned:
                self._warn(err, str(err) if isinstance(err, _UnwatchableState) else
                           f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}")
            return _Eager(err)
        out_leaves = []
        out_tree = _flatten(out, out_leaves)

        def fresh():
            return CACHE.generation == gen and all(d.fresh() for d in used) and _unchanged(reads)
        whole = [b is not None and (x.flags.c_contiguous or x.flags.f_contiguous)
                 for b, x in zip(buffers, leaves)]
        c = _Captured(graph, pool, buffers, out_tree, out_leaves, fresh, whole)
        c.kept = kept             # device buffers the graph reads that nothing else may keep
        c.objects = [x for x, b in zip(leaves, buffers) if b is None]   # ("o", id) keys: alive
        return c

    def _warn(self, err, why):
        self.warned = True
        origin = getattr(err, "origin", None) if err is not None else None
        if origin is None and err is not None:
            origin = user_origin(err)
        if origin is None:
            origin = _def_origin(self.pyfunc)
        where = origin.short() if hasattr(origin, "short") else str(origin)
        text = getattr(origin, "text", "")
        warnings.warn(f"{where}: graph=True could not capture the step of "
                      f"{self.pyfunc.__qualname__} into a CUDA graph here: {why}\n    {text}\n"
                      f"It runs without a graph for these argument shapes and dtypes (the same "
                      f"numbers, without the speed).", GraphFallbackWarning, stacklevel=4)
