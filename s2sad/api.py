"""The front door: ``differentiate``, ``grad``, ``value_and_grad``, ``vjp``.

Argument handling and cache lookup happen here; everything else happens once per build.
"""
import functools
import inspect
import sys
import threading

from . import runtime
from .cache import CACHE, reverse_derivative
from .errors import ArgumentError, NonScalarOutputError, S2SADError, WrtError, caller_origin
from .frontend.source import _static_value, get_function
from .ir import Origin
from .kernels.device import guard_arguments

_RECURSION_LIMIT = 20000
_DATA = object()         # a closure cell that holds data (or nothing yet), in _Spec._snapshot
_NDARRAY = __import__("numpy").ndarray
_FUNCTION = type(lambda: None)


def _def_origin(pyfunc):
    if hasattr(pyfunc, "__s2sad_wrapper__"):        # generated for a callee given to the API
        o = caller_origin()
        if o is not None:
            return o
    code = pyfunc.__code__
    return Origin(code.co_filename, code.co_firstlineno, 0, "", pyfunc.__qualname__)


class _Spec:
    """A user function, its signature, and a normalised ``wrt``."""

    def __init__(self, fn, wrt):
        self.user = fn
        self.pyfunc = get_function(fn)
        self.bound_self = getattr(fn, "__self__", None) if inspect.ismethod(fn) else None
        self.sig = inspect.signature(self.pyfunc, follow_wrapped=False)
        self._split_closure()
        self.params = list(self.sig.parameters)
        self.plain = all(p.kind == p.POSITIONAL_OR_KEYWORD for p in self.sig.parameters.values())
        self.offset = 1 if self.bound_self is not None else 0
        self.single = not isinstance(wrt, (tuple, list))
        self.wrt = self._normalise(wrt)

    def _split_closure(self):
        """Which closure cells hold data (passed to the sweeps as leading parameters) and a
        snapshot of the others, which derivatives read as constants; forgets built derivatives."""
        from .frontend.source import split_closure
        static, self.cells = split_closure(self.pyfunc)
        names = self.pyfunc.__code__.co_freevars
        self._snapshot = tuple(static.get(n, _DATA) for n in names)
        self._memo = {}          # (mask, kinds) -> derivative: the per-call path skips the cache key
        self._generation = CACHE.generation

    def _closure_changed(self):
        """True when a closure cell was rebound since the split (a later assignment in the
        enclosing function, or ``nonlocal``): a constant read at build time, or a data cell that
        now holds a function."""
        for cell, was in zip(self.pyfunc.__closure__, self._snapshot):
            try:
                v = cell.cell_contents
            except ValueError:
                v = _DATA
            if v is was:
                continue
            if was is _DATA:
                if v is not _DATA and _static_value(v):
                    return True
            elif not (type(v) is type(was) and type(v) in (int, str, bytes) and v == was):
                return True
        return False

    def locate(self, i):
        """(parameter index, element of *args or None) of the i-th positional argument of a call."""
        ps = list(self.sig.parameters.values())
        named = [k for k, p in enumerate(ps) if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        i += self.offset
        if i < len(named):
            return named[i], None
        va = [k for k, p in enumerate(ps) if p.kind == p.VAR_POSITIONAL]
        if va:
            return va[0], i - len(named)
        return None, None

    def _normalise(self, wrt):
        items = [wrt] if self.single else list(wrt)
        ps = self.sig.parameters
        user_params = [n for n in self.params[self.offset:]
                       if ps[n].kind not in (ps[n].VAR_POSITIONAL, ps[n].VAR_KEYWORD)]
        has_va = any(p.kind == p.VAR_POSITIONAL for p in ps.values())
        out = []
        for w in items:
            if isinstance(w, bool) or not isinstance(w, (int, str)):
                raise WrtError(f"wrt={w!r}: give a parameter index or name",
                               origin=_def_origin(self.pyfunc),
                               fix=f"use one of {list(range(len(user_params)))} or {user_params}")
            if isinstance(w, int) and has_va and w >= 0:
                out.append(self.locate(w))
                continue
            if isinstance(w, int):
                if not -len(user_params) <= w < len(user_params):
                    raise WrtError(f"wrt={w} but {self.pyfunc.__qualname__} has "
                                   f"{len(user_params)} parameter(s): {user_params}",
                                   origin=_def_origin(self.pyfunc),
                                   fix=f"use an index in 0..{len(user_params) - 1} or a name")
                out.append((self.params.index(user_params[w % len(user_params)]), None))
            else:
                if w not in self.params[self.offset:]:
                    raise WrtError(f"wrt={w!r} is not a parameter of {self.pyfunc.__qualname__}"
                                   f"{tuple(user_params)}", origin=_def_origin(self.pyfunc),
                                   fix=f"use one of {user_params}")
                out.append((self.params.index(w), None))
        if len(set(out)) != len(out):
            names = [self.params[i] if el is None else f"{self.params[i]}[{el}]" for i, el in out]
            twice = sorted({n for n in names if names.count(n) > 1})
            raise WrtError(f"wrt={wrt!r} names {', '.join(map(repr, twice))} twice (as an index "
                           f"and/or a name)", origin=caller_origin() or _def_origin(self.pyfunc),
                           fix=f"name each argument once, e.g. wrt={tuple(dict.fromkeys(names))!r}")
        return out

    def bind(self, args, kwargs):
        if self.bound_self is not None:
            args = (self.bound_self,) + tuple(args)
        if not kwargs and len(args) == len(self.params) and self.plain:
            return list(args)
        try:
            ba = self.sig.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{self.pyfunc.__qualname__}(): {e}") from None
        ba.apply_defaults()
        return list(ba.arguments.values())

    def full_args(self, args):
        """Closure data first, then the bound arguments: the sweeps' parameters."""
        if not self.cells:
            return args
        from .frontend.source import data_cell_values
        return data_cell_values(self.pyfunc, self.cells) + list(args)

    def derivative(self, args, wrt, check=True):
        """(derivative, full argument list) for bound ``args``; ``wrt`` holds (parameter index,
        element of *args or None) pairs."""
        try:
            guard_arguments(self.pyfunc.__qualname__, args, self.params)  # NumPy/CuPy mixed
        except S2SADError as e:
            if e.origin is None:
                e.locate(caller_origin() or _def_origin(self.pyfunc))
            raise
        if self.pyfunc.__closure__ and self._closure_changed() or self._generation != CACHE.generation:
            self._split_closure()
        full = self.full_args(args)
        nc = len(full) - len(args)
        mask = [False] * len(full)
        for i, el in wrt:
            v = args[i] if el is None else (args[i][el] if el < len(args[i]) else None)
            if check and not runtime.differentiable(v):
                name = self.params[i] if el is None else f"{self.params[i]}[{el}]"
                raise WrtError(f"argument {name!r} of {self.pyfunc.__qualname__} is "
                               f"{_describe(v)}, which carries no derivative",
                               origin=_def_origin(self.pyfunc),
                               fix="differentiate with respect to a float, complex or floating-point "
                                   "array argument (convert with np.asarray(x, dtype=float)), or "
                                   "leave this argument out of wrt")
            mask[i + nc] = True
        kinds = tuple(runtime.kind_of(a) for a in full)
        key = (tuple(mask), kinds)
        d = self._memo.get(key)
        if d is None or not d.fresh():
            try:
                d = self._memo[key] = reverse_derivative(self.pyfunc, key[0], kinds)
            except S2SADError as e:
                _relocate(e)
                raise
        return d, full


_SPECS = {}              # (function, wrt) -> _Spec, most recent last: grad(f)(x) inside a loop
_SPECS_MAX = 128
_SPECS_LOCK = threading.Lock()


def _spec_for(fn, wrt):
    """The :class:`_Spec` of ``fn`` and ``wrt``, shared by the ``grad(fn)`` calls of one
    function (reading a signature costs more than a small gradient).  A bounded cache: it keeps
    at most ``_SPECS_MAX`` functions alive."""
    try:
        key = (fn, ("n", tuple(wrt)) if isinstance(wrt, (tuple, list)) else ("1", wrt))
        hash(key)
    except TypeError:
        return _Spec(fn, wrt)
    spec = _SPECS.get(key)
    if spec is None:
        spec = _Spec(fn, wrt)
        with _SPECS_LOCK:
            if len(_SPECS) >= _SPECS_MAX:
                _SPECS.pop(next(iter(_SPECS)), None)
            _SPECS[key] = spec
    return spec


def _describe(v):
    dt = getattr(v, "dtype", None)
    if dt is not None:
        return f"an array of dtype {dt}"
    return f"a value of type {type(v).__name__}"


def _run(fn, *args):
    old = sys.getrecursionlimit()
    if old < _RECURSION_LIMIT:
        sys.setrecursionlimit(_RECURSION_LIMIT)
    try:
        return fn(*args)
    except S2SADError as e:
        if e.origin is None:
            _locate(e)
        _relocate(e)
        raise
    except Exception as e:
        _annotate(e)
        raise
    finally:
        if old < _RECURSION_LIMIT:
            sys.setrecursionlimit(old)


def _user_origin(e):
    """The user's line behind the innermost generated-code frame of an exception's traceback."""
    from .codegen.load import origin_of
    tb = e.__traceback__
    origin = None
    while tb is not None:
        o = origin_of(tb.tb_frame.f_code.co_filename, tb.tb_lineno)
        if o is not None:
            origin = o
        tb = tb.tb_next
    return origin


def _locate(e):
    """Give an S2SADError raised at run time (no origin yet) the user's line it came from."""
    origin = _user_origin(e)
    if origin is not None and e.args:
        if hasattr(e, "message"):
            e.locate(origin)
        else:
            e.origin = origin
            e.args = (f"{origin.where()}: {e.args[0]}\n    {origin.text}",) + tuple(e.args[1:])


def _annotate(e):
    """Point an exception raised inside generated code at the user's line."""
    origin = _user_origin(e)
    if origin is not None:
        note = f"(s2sad) while differentiating {origin.where()}: {origin.text}"
        if hasattr(e, "add_note"):
            e.add_note(note)
        else:                                   # Python 3.10: keep the note where 3.11 puts it
            try:
                e.__notes__ = list(getattr(e, "__notes__", [])) + [note]
            except (AttributeError, TypeError):
                pass


def _scalar_seed(value, pyfunc):
    t = type(value)
    if t is float:
        return 1.0
    if t is int:
        raise NonScalarOutputError(
            f"{pyfunc.__qualname__} returned an int; a gradient needs a floating-point output",
            origin=_def_origin(pyfunc), fix="return a float")
    shape = getattr(value, "shape", None)
    dt = getattr(value, "dtype", None)
    if shape == () and dt is not None and dt.kind == "f":
        return 1.0
    if shape is not None and dt is not None and shape != ():
        raise NonScalarOutputError(
            f"grad needs a scalar output, but {pyfunc.__qualname__} returned an array of shape "
            f"{shape}", origin=_def_origin(pyfunc),
            fix="reduce the output to a scalar (e.g. np.sum(...)), or use s2sad.vjp / s2sad.jacobian "
                "for vector outputs")
    raise NonScalarOutputError(
        f"grad needs a real scalar output, but {pyfunc.__qualname__} returned {_describe(value)}",
        origin=_def_origin(pyfunc),
        fix="return a real float (for complex outputs take .real or abs(...)), or use s2sad.vjp")


def _finish_grads(grads, args, wrt):
    """Gradients in the order of ``wrt`` ((parameter, element) pairs), zeros materialised."""
    params = sorted({i for i, _ in wrt})
    by_param = dict(zip(params, grads))
    out = []
    seen = set()
    for i, el in wrt:
        g = by_param[i]
        if el is None:
            x = args[i]
            if not (type(g) is _NDARRAY and type(x) is _NDARRAY and g.shape == x.shape and
                    g.dtype == x.dtype):
                g = runtime.materialize(g, x)
        else:
            parts = runtime.parts(g, len(args[i]))
            g = runtime.materialize(parts[el], args[i][el])
        if id(g) in seen and hasattr(g, "copy"):
            g = g.copy()
        seen.add(id(g))
        out.append(g)
    return out


def _value_and_grad(spec, args, kwargs, wrt):
    """(value, gradients, the derivative used)."""
    args = spec.bind(args, kwargs)
    d, full = spec.derivative(args, wrt)

    def sweeps():
        value, tape = d.fwd(*full)
        return value, d.bwd(tape, _scalar_seed(value, spec.pyfunc))
    value, grads = _run(sweeps)
    return value, _finish_grads(grads, args, wrt), d


class Differentiable:
    """What ``@differentiate`` returns: the original function, plus its derivatives."""

    def __init__(self, fn, wrt=0, mode="reverse"):
        self.__s2sad_function__ = fn
        functools.update_wrapper(self, fn)
        self._fn = fn
        self._wrt = wrt
        self._mode = mode
        self._specs = _Specs(fn, wrt)
        self._last = None

    @property
    def _spec(self):
        """The :class:`_Spec` of a call without arguments (a Python function or method), or
        with placeholders for the required positional arguments (partials, callees with rules)."""
        return self._specs.get(_required_args(self._fn) if self._specs.per == "shape" else (), {})

    def __call__(self, *args, **kwargs):
        return self._fn(*args, **kwargs)

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return Differentiable(self._fn.__get__(obj, objtype), self._wrt, self._mode)

    def value_and_grad(self, *args, **kwargs):
        spec = self._specs.get(args, kwargs)
        v, g, self._last = _value_and_grad(spec, args, kwargs, spec.wrt)
        return v, (g[0] if spec.single else tuple(g))

    def grad(self, *args, **kwargs):
        return self.value_and_grad(*args, **kwargs)[1]

    def vjp(self, *args, **kwargs):
        return vjp(self._fn, *args, **kwargs)

    def derivative(self, *args, **kwargs):
        """The built :class:`~s2sad.codegen.build.Derivative` for these arguments (or the last
        one used, or one built for array arguments when called with none)."""
        if args or kwargs:
            spec = self._specs.get(args, kwargs)
            self._last = spec.derivative(spec.bind(args, kwargs), spec.wrt)[0]
        elif self._last is None:
            nc = len(self._spec.cells)
            n = len(self._spec.params)
            wrt = {i for i, _ in self._spec.wrt}
            mask = [False] * nc + [i in wrt for i in range(n)]
            kinds = ["?"] * nc + ["a"] * n
            self._last = reverse_derivative(self._spec.pyfunc, tuple(mask), tuple(kinds))
        return self._last

    def adjoint_source(self, *args, **kwargs):
        """The generated module (forward and reverse sweeps) as Python source; for
        ``@differentiate(mode="forward")`` the tangent module."""
        if self._mode == "forward":
            return self.forward_source(*args)
        return self.derivative(*args, **kwargs).source

    def explain(self, *args, **kwargs):
        """Every call site: file:line, its class, and the rule or function chosen."""
        return explain_derivative(self.derivative(*args, **kwargs))

    def jvp(self, primals, tangents):
        """Forward mode: ``(value, tangent of the output)`` for tangents of the inputs."""
        from . import transforms
        return transforms.jvp(self._fn, primals, tangents)

    def forward_source(self, *args):
        """The generated forward-mode (tangent) module as Python source."""
        from . import transforms
        return transforms.forward_source(self._fn, self._wrt, *args)


def explain_derivative(d):
    rows = []
    for origin, callee, cls, chosen in d.sites:
        rows.append((origin.short(), callee, cls, chosen, origin.text))
    w1 = max([len(r[0]) for r in rows] + [4])
    w2 = max([len(r[1]) for r in rows] + [6])
    w3 = max([len(r[2]) for r in rows] + [5])
    lines = [f"call sites of {d.ir.name} (with respect to {', '.join(d.wrt) or 'nothing'}):",
             f"{'line':<{w1}}  {'callee':<{w2}}  {'class':<{w3}}  chosen"]
    for where, callee, cls, chosen, text in rows:
        lines.append(f"{where:<{w1}}  {callee:<{w2}}  {cls:<{w3}}  {chosen}")
    return "\n".join(lines)


def differentiate(fn=None, *, wrt=0, mode="reverse"):
    """Decorator: ``@differentiate`` or ``@differentiate(wrt=(0, "x"))``.

    The decorated function still runs as itself; it gains ``.value_and_grad``, ``.grad``,
    ``.vjp``, ``.adjoint_source()`` and ``.explain()``."""
    if fn is None:
        return lambda f: Differentiable(f, wrt, mode)
    return Differentiable(fn, wrt, mode)


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

def _rule_of(fn):
    from .rules import registry
    if type(fn) is _FUNCTION and runtime._is_python(fn):
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
        from .transforms import grad_function
        f, w = inner
        return grad_function(_concrete(f, args), w, *args)
    rule = _rule_of(fn)
    if rule is not None:
        return _primitive_wrapper(fn, rule, args, kwargs)
    if isinstance(fn, functools.partial):
        return _partial_wrapper(fn, args, kwargs)
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
    from .codegen.load import GeneratedModule
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
            rule.signature.bind(*args, **kwargs)
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


class _Specs:
    """The :class:`_Spec` for each call of a callable given to the API: one, or one per call
    shape (partials and callees with a rule), or one per call (gradient functions s2sad
    returned, whose generated code depends on the arguments' kinds)."""

    def __init__(self, fn, wrt):
        self.fn, self.wrt = fn, wrt
        self.per = _per_call(fn)
        self.one = _spec_for(_concrete(fn), wrt) if self.per is None else None
        self.memo = {}

    def get(self, args, kwargs):
        if self.one is not None:
            return self.one
        if self.per == "grad":
            return _Spec(_concrete(self.fn, args, kwargs), self.wrt)
        key = (len(args), tuple(kwargs))
        s = self.memo.get(key)
        if s is None:
            s = _Spec(_concrete(self.fn, args, kwargs), self.wrt)
            if len(self.memo) < 64:
                self.memo[key] = s
        return s


def _leaf_like(x):
    return isinstance(x, (float, complex, int, bool)) or (hasattr(x, "shape") and hasattr(x, "dtype"))


def _kind(x):
    dt = getattr(x, "dtype", None)
    if dt is not None:
        return dt.kind
    return {bool: "b", int: "i", float: "f", complex: "c"}.get(type(x), "?")


def check_like(t, ref, what, label, fix, path=""):
    """Refuse a tangent (or cotangent) ``t`` whose structure, shape or kind does not match the
    value ``ref`` it belongs to (NumPy would broadcast it silently).  ``None`` and an exact
    Python ``0``/``0.0`` mean zero anywhere."""
    tt = type(t)
    if tt is type(ref) and (tt is float or tt is _NDARRAY and t.shape == ref.shape and
                            t.dtype == ref.dtype):
        return                                      # the common case, quickly
    if t is None or (tt in (int, float) and t == 0):
        return
    where = f"{label}{path}"
    if isinstance(ref, (tuple, list)):
        if not isinstance(t, (tuple, list)) or len(t) != len(ref):
            n = f"{type(t).__name__} of {len(t)}" if isinstance(t, (tuple, list)) else type(t).__name__
            raise ArgumentError(f"{what} for {where} is a {n}, but the value is a "
                                f"{type(ref).__name__} of {len(ref)}", origin=caller_origin(), fix=fix)
        for k, (a, b) in enumerate(zip(t, ref)):
            check_like(a, b, what, label, fix, f"{path}[{k}]")
        return
    if isinstance(ref, dict):
        if not isinstance(t, dict) or not set(t) <= set(ref):
            extra = sorted(map(repr, set(t) - set(ref))) if isinstance(t, dict) else None
            raise ArgumentError(f"{what} for {where} is "
                                + (f"a dict with keys {', '.join(extra)} the value lacks" if extra
                                   else f"a {type(t).__name__}, but the value is a dict"),
                                origin=caller_origin(), fix=fix)
        for k, a in t.items():
            check_like(a, ref[k], what, label, fix, f"{path}[{k!r}]")
        return
    if _leaf_like(ref):
        rk = _kind(ref)
        if rk not in "fc":
            return                                  # carries no derivative: nothing to check
        if not _leaf_like(t):
            raise ArgumentError(f"{what} for {where} is a {type(t).__name__}, but the value is "
                                f"{_describe(ref) if hasattr(ref, 'dtype') else 'a ' + type(ref).__name__}",
                                origin=caller_origin(), fix=fix)
        ts, rs = tuple(getattr(t, "shape", ())), tuple(getattr(ref, "shape", ()))
        if ts != rs:
            raise ArgumentError(f"{what} for {where} has shape {ts}, but the value has shape {rs} "
                                f"(it would be broadcast silently)", origin=caller_origin(), fix=fix)
        tk = _kind(t)
        if tk == "c" and rk == "f":
            raise ArgumentError(f"{what} for {where} is complex, but the value is real",
                                origin=caller_origin(), fix=fix)
        if tk not in "biufc":
            raise ArgumentError(f"{what} for {where} has dtype kind {tk!r}; it must be a number",
                                origin=caller_origin(), fix=fix)
        return
    if isinstance(t, dict):                          # an object's tangent: one per attribute
        for k, a in t.items():
            if isinstance(k, str) and hasattr(ref, k):
                check_like(a, getattr(ref, k), what, label, fix, f"{path}.{k}")


def _mark(wrapper, fn, wrt, kind, specs=None):
    """Give a returned gradient function its name and docs, not ``__wrapped__`` (which would make
    s2sad differentiate ``fn`` instead of its gradient)."""
    try:
        one = specs.one if specs is not None else None
        functools.update_wrapper(wrapper, one.pyfunc if one is not None else fn, updated=())
    except Exception:
        pass
    wrapper.__dict__.pop("__wrapped__", None)
    wrapper.__s2sad_grad_of__ = (fn, wrt) if kind == "grad" else None
    wrapper.__s2sad_transform__ = (kind, fn, wrt)      # differentiated again: runtime.transform_parts
    return wrapper


def value_and_grad(fn, wrt=0):
    """``value_and_grad(f, wrt)(*args) -> (value, gradient)``; a tuple of gradients for a tuple wrt."""
    specs = _Specs(fn, wrt)
    return _mark(_vg(specs), fn, wrt, "value_and_grad", specs)


def _vg(specs):
    def vg(*args, **kwargs):
        s = specs.get(args, kwargs)
        v, g, _ = _value_and_grad(s, args, kwargs, s.wrt)
        return v, (g[0] if s.single else tuple(g))
    return vg


def grad(fn, wrt=0):
    """``grad(f, wrt)(*args)``: the gradient of a scalar function (a tuple for a tuple wrt).

    The result can be differentiated again: ``grad(grad(f))``."""
    specs = _Specs(fn, wrt)
    vg = _vg(specs)

    def g(*args, **kwargs):
        return vg(*args, **kwargs)[1]
    return _mark(g, fn, wrt, "grad", specs)


def vjp(fn, *args, **kwargs):
    """``value, pullback = vjp(f, *args)``; ``pullback(ct)`` returns one adjoint per positional
    argument (``None`` for arguments that carry no derivative)."""
    target = _concrete(fn, args, kwargs)
    spec = _Spec(target, 0) if hasattr(target, "__s2sad_wrapper__") and \
        isinstance(target.__s2sad_wrapper__, functools.partial) else _spec_for(target, 0)
    full = spec.bind(args, kwargs)
    npos = len(args)
    where = [spec.locate(i) for i in range(npos)]
    wrt = [w for w in where if w[0] is not None and runtime.differentiable(
        full[w[0]] if w[1] is None else full[w[0]][w[1]])]
    d, allargs = spec.derivative(full, wrt, check=False)
    value, tape = _run(d.fwd, *allargs)

    def pullback(ct):
        check_like(ct, value, "the cotangent", "the output",
                   "give pullback a cotangent shaped like the output (np.ones_like(value), or a "
                   "tuple/list/dict of such for a container output)")
        grads = _run(d.bwd, tape, ct)
        fin = dict(zip(wrt, _finish_grads(grads, full, wrt)))
        return tuple(fin.get(w) for w in where)
    return value, pullback

