"""What s2sad differentiates for a callable given to the API (``grad``, ``vjp``, ``jvp``, the
transforms), how ``wrt`` names its arguments, and gradient functions (``grad_function``): the
function s2sad reads for ``grad(grad(f))`` is a generated gradient function.

:mod:`.api` and :mod:`.transforms` both use this module; it imports neither.
"""
import functools
import inspect
import sys
import threading

from . import runtime
from .cache import reverse_derivative
from .codegen import text as T
from .codegen.load import GeneratedModule
from .errors import ArgumentError, S2SADError, WrtError, caller_origin
from .frontend.source import get_function
from .ir import Origin

_FUNCTION = type(lambda: None)


def _def_origin(pyfunc):
    if hasattr(pyfunc, "__s2sad_wrapper__"):        # generated for a callee given to the API
        o = caller_origin()
        if o is not None:
            return o
    code = pyfunc.__code__
    return Origin(code.co_filename, code.co_firstlineno, 0, "", pyfunc.__qualname__)


def _grad_of(fn):
    """(f, wrt) when ``fn`` is a gradient function s2sad returned (``grad(f)``), else None."""
    return getattr(fn, "__s2sad_grad_of__", None)


# -- what s2sad differentiates for a callable given to the API -------------------------------------
#
# * a gradient function s2sad returned (``grad(f)``): a generated, readable gradient function;
# * a callee with a rule (``np.sin``, ``np.moveaxis``, a user's ``defrule``): a one-line Python
#   function calling it with the arguments of this call, so the rule is used (NumPy's own Python
#   source is never read: it gave zero gradients);
# * a ``functools.partial``: a generated function of the remaining arguments whose bound arguments
#   are closure data (not differentiated);
# * an object with a Python ``__call__``: its bound ``__call__``;
# * a Python function of the user's: itself;
# * a Python function of an installed package or the standard library without a rule: refused,
#   as the classifier refuses a call to it inside a function.

_TABLE_PACKAGES = {"numpy", "scipy", "cupy", "cupyx", "s2sad"}   # what the built-in tables name


def _rule_of(fn):
    from .rules import registry
    if type(fn) is _FUNCTION and runtime._is_python(fn):
        top = (fn.__module__ or "").split(".")[0]
        if top not in _TABLE_PACKAGES and top not in getattr(sys, "stdlib_module_names", ()):
            # the user's own function: only a rule of the user's can name it, and declaring one
            # loaded the tables (so a first gradient read from the disk cache loads none)
            return registry._RULES.get(fn)
        registry._ensure_tables()                 # user code: only the user's own rules
        return registry._RULES.get(fn)
    try:
        return registry.lookup(fn)
    except Exception:
        return None


def _call_of(fn):
    """The Python ``__call__`` of a callable object (an instance of a class), or None."""
    if isinstance(fn, (type, functools.partial)) or inspect.isfunction(fn) or \
            inspect.ismethod(fn) or inspect.isbuiltin(fn):
        return None
    call = getattr(type(fn), "__call__", None)
    call = getattr(call, "__func__", call)
    return call if inspect.isfunction(call) else None


def _per_call(fn):
    """How the function s2sad reads for ``fn`` depends on a call: "grad" (on the arguments'
    kinds), "shape" (on the number of positional arguments and the keyword names: partials and
    callees with a rule), or None (it does not)."""
    while hasattr(fn, "__s2sad_function__") and _grad_of(fn) is None:
        fn = fn.__s2sad_function__
    if _grad_of(fn) is not None:
        return "grad"
    if isinstance(fn, functools.partial) or _rule_of(fn) is not None:
        return "shape"
    return None


def _concrete(fn, args=(), kwargs=None):
    """A Python function (or bound method) s2sad can read for ``fn`` called with ``args`` and
    ``kwargs`` (see above)."""
    kwargs = kwargs or {}
    while hasattr(fn, "__s2sad_function__") and _grad_of(fn) is None:
        fn = fn.__s2sad_function__
    inner = _grad_of(fn)
    if inner is not None:
        f, w = inner
        return grad_function(_concrete(f, args), w, *args)
    rule = _rule_of(fn)
    if rule is not None:
        return _primitive_wrapper(fn, rule, args, kwargs)
    if isinstance(fn, functools.partial):
        return _partial_wrapper(fn, args, kwargs)
    if runtime.numba_ufunc(fn):
        from .errors import OpaqueCalleeError
        raise OpaqueCalleeError(
            f"{getattr(fn, '__name__', 'this callee')} is a Numba vectorize/guvectorize ufunc with "
            f"no derivative rule; s2sad differentiates @numba.njit functions from their Python "
            f"source, but not the element-wise kernel of a ufunc",
            origin=caller_origin(), fix=runtime._rule_skeleton(fn))
    call = None if hasattr(fn, "__wrapped__") else _call_of(fn)   # lru_cache, numba.njit: below
    if call is not None:
        _refuse_library(call, fn)
        return fn.__call__
    if inspect.ismethod(fn):
        _refuse_library(fn.__func__, fn)
        return fn
    try:
        pyfunc = get_function(fn)
    except S2SADError as e:
        if e.origin is None:
            e.locate(caller_origin())
        raise
    _refuse_library(pyfunc, fn)
    return fn


def _refuse_library(pyfunc, fn):
    """Refuse a Python function of an installed package or the standard library that has no rule:
    s2sad reaches library code only through rules (inside a function as at the front door)."""
    if not inspect.isfunction(pyfunc) or pyfunc.__code__.co_filename.startswith("<") or \
            runtime._is_python(pyfunc):             # user code (cached per code object)
        return
    from .errors import OpaqueCalleeError
    if _call_of(fn) is not None:
        what = (f"a {runtime._type_name(fn)} object, whose __call__ is Python code of an installed "
                f"package (or the standard library) with no derivative rule")
    else:
        ref = runtime._public_ref(fn) or runtime._public_ref(pyfunc) or \
            f"{pyfunc.__module__}.{pyfunc.__qualname__}"
        what = (f"{ref} is a Python function of an installed package (or the standard library) "
                f"with no derivative rule")
    raise OpaqueCalleeError(
        f"{what}; s2sad differentiates your own code and calls library code only through rules",
        origin=caller_origin(), fix=runtime._rule_skeleton(fn))


_WRAPPERS = {}           # (callee key, call shape) -> generated function (or factory)
_WRAPPERS_LOCK = threading.Lock()


def _call_names(sig, nargs, kw):
    """Parameter names for a call with ``nargs`` positional arguments and keywords ``kw``: the
    signature's positional names, then ``<*name>0``, ``<*name>1``... (valid, distinct, and not
    the keywords)."""
    import keyword
    ps = list(sig.parameters.values()) if sig is not None else []
    pos = [p.name for p in ps if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    star = next((p.name for p in ps if p.kind == p.VAR_POSITIONAL), "arg")
    taken = set(kw)
    out = []
    for i in range(nargs):
        n = pos[i] if i < len(pos) else f"{star}{i - len(pos)}"
        if not n.isidentifier() or keyword.iskeyword(n) or n.startswith("_s2sad") or n in taken:
            n = f"arg{i}"
        while n in taken:
            n += "_"
        taken.add(n)
        out.append(n)
    return out


def _check_keywords(kw, label):
    import keyword
    for k in kw:
        if not k.isidentifier() or keyword.iskeyword(k):
            raise ArgumentError(f"{label}: keyword argument {k!r} is not a Python name",
                                origin=caller_origin(),
                                fix="pass it positionally, or wrap the call in your own function")


def _forwarder(name, callee, params, kw, bound=(), bound_kw=(), self_=False):
    """A generated factory ``_make(<bound values>)`` returning ``name(*params, **kw)``, which
    calls ``callee`` with the bound values (closure data, ``self`` first), the parameters, and
    the bound keywords not given at the call."""
    ident = "".join(c if c.isalnum() else "_" for c in name) or "f"
    if not ident.isidentifier():
        ident = f"f_{ident}"
    import keyword
    if keyword.iskeyword(ident):
        ident += "_"
    own = set(params) | set(kw)
    cells = (["_self"] if self_ else []) + [f"_bound{i}" for i in range(len(bound))] + \
        [f"_kw_{k}" for k in bound_kw]
    for i, c in enumerate(cells):
        while c in own:
            c += "_"
        cells[i] = c
    call = cells[:len(cells) - len(bound_kw)] + list(params) + [f"{k}={k}" for k in kw] + \
        [f"{k}={c}" for k, c in zip(bound_kw, cells[len(cells) - len(bound_kw):]) if k not in kw]
    sig = ", ".join(list(params) + list(kw))
    src = (f"# s2sad: calls {name} with the arguments given to the API\n"
           f"def _make({', '.join(cells)}):\n"
           f"    def {ident}({sig}):\n"
           f"        return _callee({', '.join(call)})\n"
           f"    return {ident}\n")
    mod = GeneratedModule(f"{ident}_call", src, {"_callee": callee}, {})
    _WRAPPER_FILES.add(mod.filename)
    return mod["_make"]


_WRAPPER_FILES = set()   # file names of the generated calls above


def _relocate(e):
    """An error s2sad raised at the generated call of a callee given to the API: name the user's
    line that called s2sad instead."""
    o = getattr(e, "origin", None)
    if o is not None and o.file in _WRAPPER_FILES:
        user = caller_origin()
        if user is not None:
            e.locate(user)


def _primitive_wrapper(fn, rule, args, kwargs):
    """``def moveaxis(a, source, destination): return _callee(a, source, destination)`` for a
    callee with a rule, shaped like this call (keywords forwarded as keywords)."""
    from .rules.registry import _key
    kw = tuple(kwargs)
    key = ("rule", _key(fn), len(args), kw)
    w = _WRAPPERS.get(key)
    if w is None:
        _check_keywords(kw, rule.name)
        try:
            rule.bind_signature(*args, **kwargs)
        except TypeError as e:
            raise ArgumentError(f"{rule.name}{rule.signature}: {e}", origin=caller_origin(),
                                fix="pass the arguments its rule declares (s2sad differentiates "
                                    f"{rule.name} through its rule)") from None
        names = _call_names(rule.signature, len(args), kw)
        w = _forwarder(rule.name.split(".")[-1], fn, names, kw)()
        w.__s2sad_wrapper__ = fn
        w.__qualname__ = rule.name
        with _WRAPPERS_LOCK:
            w = _WRAPPERS.setdefault(key, w)
    return w


def _partial_wrapper(p, args, kwargs):
    """A generated function of the arguments given to ``functools.partial`` object ``p`` at this
    call; its bound arguments are closure data (constants for the derivative)."""
    from .rules.registry import _key
    pargs, pkw = tuple(p.args), dict(p.keywords)
    kw = tuple(kwargs)
    target, self_ = p.func, None
    if _rule_of(target) is None and not isinstance(target, functools.partial):
        target = _concrete(target, pargs + tuple(args), {**pkw, **kwargs})
        if inspect.ismethod(target):
            target, self_ = target.__func__, target.__self__
        elif not inspect.isfunction(target) and _rule_of(target) is None:
            target = get_function(target)
    bkw = tuple(pkw)
    key = ("partial", _key(target), self_ is not None, len(pargs), bkw, len(args), kw)
    make = _WRAPPERS.get(key)
    label = getattr(target, "__name__", None) or "partial"
    if make is None:
        _check_keywords(kw + bkw, label)
        try:
            sig = inspect.signature(p)
        except (TypeError, ValueError):
            sig = None
        names = _call_names(sig, len(args), kw)
        make = _forwarder(f"{label}_partial", target, names, kw, pargs, bkw, self_ is not None)
        with _WRAPPERS_LOCK:
            make = _WRAPPERS.setdefault(key, make)
    values = ([self_] if self_ is not None else []) + list(pargs) + [pkw[k] for k in bkw]
    w = make(*values)
    w.__s2sad_wrapper__ = p
    w.__qualname__ = f"partial({getattr(target, '__qualname__', label)}, ...)"
    return w


def _positional_names(fn):
    """Names of the positional parameters of a callable given to the API (for ``wrt``)."""
    while hasattr(fn, "__s2sad_function__") and _grad_of(fn) is None:
        fn = fn.__s2sad_function__
    inner = _grad_of(fn)
    if inner is not None:
        return _positional_names(inner[0])
    rule = _rule_of(fn)
    if rule is not None:
        sig = rule.signature
    elif isinstance(fn, functools.partial):
        sig = inspect.signature(fn)
    else:
        target = _concrete(fn)
        sig = inspect.signature(get_function(target), follow_wrapped=False)
        if inspect.ismethod(target):
            return [p.name for p in list(sig.parameters.values())[1:]
                    if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return [p.name for p in sig.parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def _required_args(fn):
    """Placeholder arguments (None) for the required positional parameters of a partial or a
    callee with a rule: the call shape of a derivative built without example arguments."""
    rule = _rule_of(fn)
    sig = rule.signature if rule is not None else inspect.signature(fn)
    return tuple(None for p in sig.parameters.values()
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty)


def _label(fn):
    """A name for ``fn`` in messages."""
    while hasattr(fn, "__s2sad_function__"):
        fn = fn.__s2sad_function__
    if isinstance(fn, functools.partial):
        return f"partial({_label(fn.func)}, ...)"
    rule = _rule_of(fn)
    if rule is not None:
        return rule.name
    return getattr(fn, "__qualname__", None) or type(fn).__qualname__


# -- Numba: the compile options of a function given as a dispatcher --------------------------------
def numba_options(fn):
    """The compile options of the Numba CPU dispatcher behind ``fn``, as a new dict, or None.

    ``fn`` may be the dispatcher (``@numba.njit(fastmath=True)``), what s2sad returned for it
    (``grad(f)``, ``value_and_grad(f)``, ``differentiate(f)``), a ``functools.partial`` or bound
    method of one, or its Python function ``f.py_func`` once s2sad has read it (a derived callee).
    The dict is the dispatcher's ``targetoptions``: the options given to the decorator (e.g.
    ``{'nopython': True, 'fastmath': True, 'boundscheck': None}``; ``cache``, ``parallel``,
    ``error_model``, ``nogil``... when given).  A compiled derivative of ``fn`` should be compiled
    with ``numba.njit(**numba_options(fn))``."""
    seen = set()
    while fn is not None and id(fn) not in seen:
        seen.add(id(fn))
        opts = runtime.numba_options(fn)
        if opts is not None:
            return opts
        if hasattr(fn, "__s2sad_function__"):               # differentiate(f)
            fn = fn.__s2sad_function__
        elif getattr(fn, "__s2sad_transform__", None):      # grad(f), value_and_grad(f)
            fn = fn.__s2sad_transform__[1]
        elif isinstance(fn, functools.partial):
            fn = fn.func
        elif inspect.ismethod(fn):
            fn = fn.__func__
        else:
            fn = getattr(fn, "__s2sad_wrapper__", None)     # a generated call of a callee
    return None


# -- wrt: positions of the arguments it names -----------------------------------------------------
def _names(f):
    """Names of the positional parameters of ``f`` (those of the underlying function for a
    gradient function s2sad returned)."""
    return _positional_names(f)


def _wrt(f, wrt):
    """(positions of the positional arguments named by ``wrt``, whether ``wrt`` was single)."""
    inner = _grad_of(f)
    label = f"the gradient of {_label(inner[0])}" if inner is not None else _label(f)
    return _positions(label, _names(f), wrt)


def _positions(label, names, wrt):
    single = not isinstance(wrt, (tuple, list))
    out = []
    use = f"use an index in 0..{len(names) - 1} or one of {names}"
    for w in ([wrt] if single else list(wrt)):
        if isinstance(w, bool) or not isinstance(w, (int, str)):
            raise WrtError(f"wrt={w!r}: give a parameter index or name", origin=caller_origin(),
                           fix=use)
        if isinstance(w, str):
            if w not in names:
                raise WrtError(f"wrt={w!r} is not a parameter of {label}{tuple(names)}",
                               origin=caller_origin(), fix=f"use one of {names}")
            w = names.index(w)
        elif not -len(names) <= w < len(names):
            raise WrtError(f"wrt={w} but {label} has {len(names)} positional "
                           f"parameter(s): {names}", origin=caller_origin(), fix=use)
        out.append(w % len(names))
    if len(set(out)) != len(out):
        twice = sorted({names[i] for i in out if out.count(i) > 1})
        raise WrtError(f"wrt={wrt!r} names {', '.join(map(repr, twice))} twice (as an index "
                       f"and/or a name)", origin=caller_origin(),
                       fix=f"name each argument once, e.g. wrt="
                           f"{tuple(names[i] for i in dict.fromkeys(out))!r}")
    return out, single


# -- gradient functions ----------------------------------------------------------------------------
_GRAD_FUNCTIONS = {}


def grad_function(f, wrt=0, *example_args):
    """A generated Python function ``f__grad(*params)`` returning the gradient of the scalar
    function ``f`` (a tuple for a tuple ``wrt``), specialised on the value kinds of
    ``example_args``.  Its source is readable and registered like every generated module, so s2sad
    can differentiate it again: ``jvp`` of it is a Hessian-vector product, and ``grad`` of one of
    its scalar outputs a second derivative."""
    positions, single = _wrt(f, wrt)
    f = _concrete(f, example_args)
    fn = get_function(f)
    self_ = f.__self__ if inspect.ismethod(f) else None
    sig = inspect.signature(fn)
    params = list(sig.parameters)[1 if self_ is not None else 0:]
    if any(p.kind != p.POSITIONAL_OR_KEYWORD for p in sig.parameters.values()) or \
            len(example_args) != len(params):
        raise S2SADError(f"second derivatives of {fn.__qualname__}: s2sad builds them for "
                         f"functions called with all their positional arguments (no *args/**kwargs,"
                         f" keyword-only parameters, or defaults left out); {fn.__qualname__}"
                         f"{sig} was called with {len(example_args)} argument(s)",
                         origin=_def_origin(fn),
                         fix="pass every argument positionally, or wrap the call in a function of "
                             "the arguments: lambda x, y: f(x, y, option=1)")
    # data in closure cells (and the object of a method) become closure data of the generated
    # gradient function, so that it is a closure over the same data
    cells = runtime._data_cells(fn)
    held = list(cells) + (["_self"] if self_ is not None else [])
    for i, c in enumerate(held):
        while c in params or held.count(c) > 1:
            c += "_"
        held[i] = c
    nlead = len(held)
    mask = (False,) * nlead + tuple(i in positions for i in range(len(params)))
    lead = []
    if cells:
        from .frontend.source import data_cell_values
        lead = list(data_cell_values(fn, cells))
    if self_ is not None:
        lead.append(self_)
    kinds = tuple(runtime.kind_of(a) for a in lead + list(example_args))
    from .cache import static_cells_key
    key = (fn.__code__, static_cells_key(fn), id(fn.__globals__), self_ is not None, mask, kinds,
           single)
    from .cache import CACHE
    make, gen = _GRAD_FUNCTIONS.get(key, (None, None))
    if make is None or gen != CACHE.generation:         # (a rule declared since: build again)
        make = _grad_factory(fn, mask, kinds, params, held, single)
        _GRAD_FUNCTIONS[key] = (make, CACHE.generation)
    return make(*lead)

def _grad_factory(fn, mask, kinds, params, held, single):
    """The generated module of :func:`grad_function`: ``_make(<closure data>)`` returning
    ``f__grad(*params)``."""
    d = reverse_derivative(fn, mask, kinds)
    name = fn.__name__ if fn.__name__.isidentifier() else "f"
    fwd_name, bwd_name = f"{name}__fwd", f"{name}__bwd"
    taken = set(params) | set(held)
    r, tape, g = (_fresh(n, taken) for n in ("_r", "_tape", "_g"))
    o = d.ir.origin
    ind = 2 if held else 1
    body = [
        (ind, f"{r}, {tape} = {fwd_name}({', '.join(held + params)})", o),
        (ind, f"{g} = {bwd_name}({tape}, 1.0)", o),
        (ind, f"return {g}[0]" if single else f"return {g}", o),
    ]
    head = [(0, f"# s2sad: the gradient of {fn.__qualname__} ({o.short()}) with "
                f"respect to {', '.join(d.wrt)}", None), (0, "", None)]
    if held:
        head.append((0, f"def _make({', '.join(held)}):", None))
    head.append((ind - 1, f"def {name}__grad({', '.join(params)}):", None))
    tail = [(1, f"return {name}__grad", None)] if held else []
    triples = head + body + tail
    lines = T.format_lines(triples)
    line_origins = {i + 1: t[2] for i, t in enumerate(triples) if t[2] is not None}
    namespace = {fwd_name: d.fwd, bwd_name: d.bwd}
    mod = GeneratedModule(f"{name}_grad", "\n".join(lines) + "\n", namespace, line_origins)
    if held:
        return mod["_make"]
    g = mod[f"{name}__grad"]
    return lambda: g


def _fresh(name, taken):
    while name in taken:
        name += "_"
    taken.add(name)
    return name


runtime.hooks.register(concrete=_concrete)   # (runtime.dispatch: s2sad.grad(f) inside a derivative)
