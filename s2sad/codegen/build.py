"""The pipeline for one function: source -> IR -> classify -> analyse -> emit -> load."""
import numpy as np

from .. import classify as C
from ..classify import closures, inline, updates
from ..classify.writes import drop_proven_guards
from ..errors import S2SADError
from .. import ir, runtime
from ..frontend import analysis, jumps, statics
from ..frontend.lower import lower
from ..frontend.source import FunctionSource
from ..rules import registry
from . import text as T
from .derivative import Derivative  # noqa: F401 (its home is light: the disk cache loads it)
from .load import GeneratedModule, is_generated
from .reverse import ReverseEmitter

_RESERVED = {"_rt", "np", "math"}


def lower_function(pyfunc, constructor=False, mutating=False):
    src = FunctionSource(pyfunc)
    fn = lower(src)
    jumps.structure(fn)
    if runtime.numba_options(pyfunc) is not None:
        analysis.check_numba_isinstance(pyfunc, fn)
    if mutating:
        # a method that updates its object: the object, as it is at the end, is a second output
        self_param = fn.params[len(src.data_cells)]
        ret = fn.body[-1]
        pair = "_r_and_self"
        fn.body[-1:] = [ir.Assign(pair, ir.Call(ir.Static(runtime.build_tuple, "build_tuple"),
                                                [ret.value, self_param]), ret.origin),
                        ir.Return(pair, ret.origin)]
        fn.constructed = self_param
    if constructor:
        # an __init__ differentiated as a constructor returns the object it filled in
        self_param = fn.params[len(src.data_cells)]
        fn.body[-1] = ir.Return(self_param, fn.body[-1].origin)
        fn.constructed = self_param
    return fn


def inline_for_jit(fn, param_kinds, kinds):
    """``jit=True`` compiles one numba function: calls of user functions are inlined where they
    can be (classify/inline.py); the kinds of the function after that."""
    from ..classify import inline
    for _ in range(inline.MAX_DEPTH):
        if not inline.expand(fn):
            break
        kinds = C.classify(fn, dict(zip(fn.params, param_kinds)))
    from .jit import methods_as_functions
    methods_as_functions(fn, kinds)
    return kinds


def inline_named(fn, named, param_kinds, kinds):
    """Python mode: calls inside loops of small plain functions that the function's own code names
    or that are passed in fixed (``named``: so that its cache key covers their code) are inlined
    (classify/inline.py): no derived call, tape and ``__bwd`` per trip."""
    if not named:
        return kinds
    for _ in range(inline.MAX_DEPTH):
        if not inline.expand(fn, named=named):
            break
        kinds = C.classify(fn, dict(zip(fn.params, param_kinds)))
    return kinds


def _sites(fn):
    out = []
    for s in ir.walk(fn.body):
        call = s.value if isinstance(s, ir.Assign) else s.call if isinstance(s, ir.ExprStmt) else None
        if isinstance(call, ir.Call):
            cls, chosen = C.site_description(call)
            out.append((s.origin, repr(call.fn) if not isinstance(call.fn, ir.Static) else call.fn.text,
                        cls, chosen))
    return out


def build_reverse(pyfunc, mask, param_kinds, namer_factory, constructor=False, mutating=False,
                  jit=False, param_types=None):
    """:func:`_build_reverse`; in Python mode, where inlining callees (an optimisation) leads to a
    refusal, the derivative is built again with derived calls: inlining must never make s2sad
    refuse a program it accepts without it (a callee's ``s += ...`` beside the caller's reads)."""
    try:
        return _build_reverse(pyfunc, mask, param_kinds, namer_factory, constructor, mutating,
                              jit, param_types)
    except S2SADError:
        if jit or constructor or mutating or not inline.named_functions(pyfunc, param_kinds):
            raise
    return _build_reverse(pyfunc, mask, param_kinds, namer_factory, constructor, mutating, jit,
                          param_types, inline_calls=False)


def _build_reverse(pyfunc, mask, param_kinds, namer_factory, constructor=False, mutating=False,
                   jit=False, param_types=None, inline_calls=True):
    """Build the reverse-mode derivative of ``pyfunc`` w.r.t. the parameters where ``mask`` is True.

    ``param_kinds`` gives each parameter's value kind ('f', 'a', 'c', 'i', '?');
    ``namer_factory(namespace)`` returns the function that names (and binds) derived callees.
    ``jit=True``: the module holds one function, ``f__vjp(*params, seed) -> (value, gradients)``,
    written for ``numba.njit`` (its ``_rt`` and ``_adj`` are the numba helpers); codegen/jit.py
    compiles it.  ``param_types`` (classify.types, one per parameter): the derivative is
    specialised on them, and leaves out what they prove unneeded."""
    fn = lower_function(pyfunc, constructor, mutating)
    wrt = [p for p, m in zip(fn.params, mask) if m]
    made = None
    if jit:
        from .jit import containers_for_numba   # (dicts and lists it only reads: tuples)
        param_types, made = containers_for_numba(fn, param_types)
    # (Python mode: what may be inlined, read before fixed arguments become constants)
    named = None if jit or constructor or mutating or not inline_calls else \
        inline.named_functions(pyfunc, param_kinds)
    param_kinds = statics.bind(fn, param_kinds)    # (functions and modules passed in)
    kinds = C.classify(fn, dict(zip(fn.params, param_kinds)))
    if named:
        kinds = inline_named(fn, named, param_kinds, kinds)
    if jit:
        kinds = inline_for_jit(fn, param_kinds, kinds)
    closures.remake(fn, kinds)       # (closures made again after changes of what they read)
    # an update of its object: the attributes it may change (None: not known), which the
    # dispatcher reads when the caller does not follow the update (runtime.no_update)
    writes = updates.self_writes(fn, fn.constructed) if mutating else None
    active, varied = analysis.activity(fn, wrt)
    C.finish(fn, active, varied)
    closures.check(fn, varied)
    namespace = dict(registry.NAMESPACE)
    namespace.update(fn.namespace)
    namespace["_rt"] = runtime
    namespace.setdefault("np", np)
    name = pyfunc.__name__ if pyfunc.__name__.isidentifier() else "f"
    fwd_name, bwd_name = f"{name}__fwd", f"{name}__bwd"
    own_key = (pyfunc, tuple(mask))
    namer = namer_factory(namespace, own_key, (fwd_name, bwd_name))
    types = None
    if param_types is not None:
        from ..classify import types as _types
        types = _types.infer(fn, param_types)
        drop_proven_guards(fn, types)
    em = ReverseEmitter(fn, kinds, active, varied, wrt, namespace, namer, jit=jit, types=types)
    # a derivative of s2sad's own generated code (second and third derivatives): its adjoint
    # buffers are not written in place (own_buffers), since the rules of the runtime helpers
    # model values, not a list popped in place under them
    em.in_place_buffers = not is_generated(getattr(getattr(pyfunc, "__code__", None),
                                                   "co_filename", ""))
    fwd_triples, bwd_triples = em.emit(fwd_name, bwd_name)
    header = [(0, f"# s2sad reverse-mode derivative of {pyfunc.__qualname__} "
                  f"({fn.origin.short()}), with respect to {', '.join(wrt) or 'nothing'}", None),
              (0, "", None)]
    binding = None
    if jit:
        from .jit import bind_namespace, module_arrays
        arrays = module_arrays(fn)
        binding = bind_namespace(fn, namespace, arrays=arrays)
        if made:
            binding[1]["tuples"] = made
        header[0] = (0, header[0][1] + "; forward and reverse sweeps in one function, for "
                        "numba.njit (jit=True)" + _arrays_note(arrays), None)
        fwd_name = bwd_name = f"{name}__vjp"
        triples = header + em.emit_fused(fwd_name, arrays)
        from .jit_fuse import fuse      # (runs of elementwise statements: one loop each)
        from .jit_ints import checked_ints      # (Python's ints: products and powers)
        triples = fuse(triples, fn.params, param_types, namespace)
        triples = checked_ints(triples, fn.params, param_types, namespace)
    else:
        triples = header + fwd_triples + [(0, "", None), (0, "", None)] + bwd_triples
    lines = T.format_lines(triples)
    line_origins = {i + 1: t[2] for i, t in enumerate(triples) if t[2] is not None}
    source = "\n".join(lines) + "\n"
    mod = GeneratedModule(name, source, namespace, line_origins)
    d = Derivative(fn, mod, mod[fwd_name], mod[bwd_name], wrt, _sites(fn))
    d.jit_binding = binding
    d.self_writes = writes
    return d


def _arrays_note(arrays):
    """The header's words for the module-level arrays a jit derivative takes as parameters."""
    if not arrays:
        return ""
    return (f"; the module-level array{'s' if len(arrays) > 1 else ''} {', '.join(arrays)} "
            f"{'are' if len(arrays) > 1 else 'is'} passed in at each call (numba would compile "
            f"{'their' if len(arrays) > 1 else 'its'} values in)")
