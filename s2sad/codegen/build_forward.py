"""The forward-mode pipeline for one function: source -> IR -> classify -> activity -> forward
emit -> load.  The cache (:func:`s2sad.cache.forward_derivative`) calls :func:`build_forward`."""
import numpy as np

from .. import classify as C
from ..classify import closures
from .. import runtime
from ..frontend.analysis import written_arrays
from ..rules import registry
from . import text as T
from .build import Derivative, _sites
from ..frontend import statics
from .build import inline_for_jit
from .build import lower_function as _lower
from ..runtime import forward as _fw
from ..runtime.forward import ForwardStub
from .forward import ForwardEmitter, forward_activity
from .load import GeneratedModule


def lower_function(pyfunc, constructor=False, mutating=False):
    """The IR of ``pyfunc`` (an ``__init__`` lowered as a constructor returns ``self``; a method
    that updates its object returns (result, ``self``))."""
    return _lower(pyfunc, constructor, mutating)


def _stub_sites_dynamic(fn):
    """In generated reverse code, ``f__fwd``/``f__bwd`` of derived callees are lazy stubs (no
    source, no rule): make them dynamic sites, which :func:`~.forward.jvp_call` sees through."""
    from .. import ir
    from ..runtime.forward import is_stub_sweep
    for s in ir.walk(fn.body):
        call = s.value if isinstance(s, ir.Assign) else s.call if isinstance(s, ir.ExprStmt) else None
        if isinstance(call, ir.Call) and isinstance(call.fn, ir.Static) and \
                is_stub_sweep(call.fn.obj):
            call.cls = "dynamic"
            call.rule = None
            call.info = {"diff_vars": call.reads()}


def _namer(namespace, own_key, own_name):
    names = {own_key: own_name}
    taken = set(namespace) | {own_name}

    def namer(callee, mask):
        k = (callee, tuple(mask))
        if k in names:
            return names[k]
        base = callee.__name__ if callee.__name__.isidentifier() else "f"
        name, n = f"{base}__jvp", 1
        while name in taken:
            n += 1
            name = f"{base}__jvp{n}"
        taken.add(name)
        namespace[name] = ForwardStub(callee, tuple(mask))
        names[k] = name
        return name
    return namer


def build_forward(pyfunc, mask, param_kinds, init=False, mut=False, jit=False,
                  param_types=None):
    """Build ``f__jvp`` for ``pyfunc`` with respect to the parameters where ``mask`` is True.
    ``mut``: a method that updates its object, whose outputs are (result, ``self``).
    ``jit=True``: written for ``numba.njit`` (its ``_rt``, ``_fw`` and ``_adj`` are the numba
    helpers, calls of user functions inlined); codegen/jit.py compiles it.  ``param_types``
    (codegen.jit.arg_type, one per argument; jit only): dicts and lists the function only reads
    are passed to numba as tuples, their tangents too (codegen.jit.containers_as_tuples)."""
    fn = lower_function(pyfunc, init, mut)
    wrt = [p for p, m in zip(fn.params, mask) if m]
    made = None
    if jit:
        from .jit import containers_for_numba   # (dicts and lists it only reads: tuples)
        made = containers_for_numba(fn, param_types)[1]
    if made:
        # f__jvp(*params, *tangents of wrt): a tangent is passed as its primal is
        n = len(fn.params)
        made += [[n + wrt.index(fn.params[i]), keys] for i, keys in list(made)
                 if fn.params[i] in wrt]
    param_kinds = statics.bind(fn, param_kinds)    # (functions and modules passed in)
    kinds = C.classify(fn, dict(zip(fn.params, param_kinds)))
    if jit:
        kinds = inline_for_jit(fn, param_kinds, kinds)
    closures.remake(fn, kinds)       # (closures made again after changes of what they read)
    _stub_sites_dynamic(fn)
    active, varied = forward_activity(fn, wrt)
    C.finish(fn, active, varied)
    closures.check(fn, varied)
    namespace = dict(registry.NAMESPACE)
    namespace.update(fn.namespace)
    namespace["_rt"] = runtime
    namespace["_fw"] = _fw
    namespace.setdefault("np", np)
    name = pyfunc.__name__ if pyfunc.__name__.isidentifier() else "f"
    jvp_name = f"{name}__jvp"
    namer = _namer(namespace, (pyfunc, tuple(mask)), jvp_name)
    em = ForwardEmitter(fn, kinds, active, wrt, namespace, namer, jit=jit)
    arrays = ()
    if jit:
        from .jit import module_arrays
        arrays = module_arrays(fn)
    triples = em.emit(jvp_name, arrays)
    header = [(0, f"# s2sad forward-mode derivative of {pyfunc.__qualname__} "
                  f"({fn.origin.short()}), with respect to {', '.join(wrt) or 'nothing'}", None),
              (0, "", None)]
    binding = None
    if jit:
        from .jit import bind_namespace
        from .build import _arrays_note
        binding = bind_namespace(fn, namespace, forward=True, arrays=arrays)
        if made:
            binding[1]["tuples"] = made
        header[0] = (0, header[0][1] + "; for numba.njit (jit=True)" + _arrays_note(arrays), None)
    if jit:
        from .jit_ints import checked_ints      # (Python's ints: products and powers)
        triples = checked_ints(triples, fn.params, param_types, namespace)
    triples = header + triples
    lines = T.format_lines(triples)
    line_origins = {i + 1: t[2] for i, t in enumerate(triples) if t[2] is not None}
    source = "\n".join(lines) + "\n"
    mod = GeneratedModule(f"{name}_jvp", source, namespace, line_origins)
    fwd = mod[jvp_name]
    dv = Derivative(fn, mod, fwd, None, wrt, _sites(fn), mode="forward")
    dv.jvp = fwd
    written = written_arrays(fn)
    dv.written_params = [p for p in wrt if p in written]
    dv.jit_binding = binding
    return dv
