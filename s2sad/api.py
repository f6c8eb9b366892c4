"""The front door: ``differentiate``, ``grad``, ``value_and_grad``, ``vjp``; ``jvp`` and
``forward_source`` (forward mode).  What s2sad reads for a callable given here is in
:mod:`.callables`; the transforms built on these (Jacobians, Hessians) in :mod:`.transforms`.

Argument handling and cache lookup happen here; everything else happens once per build.
"""
import functools
import inspect
import os
import sys
import threading
import warnings

from . import runtime
from .cache import (CACHE, forward_derivative, forward_jit_derivative, jit_derivative,
                    reverse_derivative)
from .callables import (_concrete, _def_origin, _label, _per_call, _relocate, _required_args,
                        _wrt, numba_options)
from .runtime.forward import _jvp_python, materialize
from .errors import ArgumentError, NonScalarOutputError, S2SADError, WrtError, caller_origin
from .frontend.source import _static_value, get_function
from .kernels.device import guard_arguments, is_cupy
from . import pickling
from . import graphs
from .codegen.load import user_origin as _user_origin
from .runtime.transformed import Transformed
from .runtime.values import type_of
from .runtime.values import _owned

# the recursion limit while a derivative runs: ~3 frames per level of a recursive function of
# yours (950 levels need < 3000); not more, since recursion through C (a __getattr__ that calls
# itself) overflows Python 3.11's C stack near 11000 levels, a crash where Python would raise
# RecursionError
_RECURSION_LIMIT = 8000
_DATA = object()         # a closure cell that holds data (or nothing yet), in _Spec._snapshot
_NDARRAY = __import__("numpy").ndarray
_FLOAT64 = __import__("numpy").float64


class _Spec:
    """A user function, its signature, and a normalised ``wrt``."""

    def __init__(self, fn, wrt):
        self.user = fn
        self.pyfunc = get_function(fn)
        self.numba_options = numba_options(fn)     # (an @numba.njit function's compile options)
        if self.numba_options is not None:
            from .classify.inline import check_numba_callee
            check_numba_callee(self.pyfunc)
        self.bound_self = getattr(fn, "__self__", None) if inspect.ismethod(fn) else None
        self.sig = inspect.signature(self.pyfunc, follow_wrapped=False)
        self._defaults = _defaults_of(self.pyfunc)
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
        self._memo = {}          # (mask, kinds, types) -> derivative (skips the cache key)
        self._typed = {}         # (mask, kinds) -> how many typed specialisations
        self._quick = {}         # (argument types, wrt, check) -> derivative: skips mask and kinds
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
                # an index counts the positional parameters, as JAX's argnums does: a
                # keyword-only one is chosen by name (wrt=-1 of f(x, y, *, scale) is y)
                positional = [n for n in user_params if ps[n].kind != ps[n].KEYWORD_ONLY]
                if not -len(positional) <= w < len(positional):
                    kw_only = [n for n in user_params if n not in positional]
                    raise WrtError(f"wrt={w} but {self.pyfunc.__qualname__} has "
                                   f"{len(positional)} positional parameter(s): {positional}",
                                   origin=_def_origin(self.pyfunc),
                                   fix=f"use an index in 0..{len(positional) - 1} or a name" +
                                   (f" (keyword-only parameters by name: {kw_only})"
                                    if kw_only else ""))
                out.append((self.params.index(positional[w % len(positional)]), None))
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
        now = _defaults_of(self.pyfunc)
        if self._defaults != now:
            # (defaults given to the function again since: the signature reads them)
            self.sig = inspect.signature(self.pyfunc, follow_wrapped=False)
            self._defaults = now
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

    def derivative(self, args, wrt, check=True, jit=None):
        """(derivative, full argument list) for bound ``args``; ``wrt`` holds (parameter index,
        element of *args or None) pairs.  ``jit``: numba options; then the derivative is the
        :class:`~s2sad.codegen.jit.CompiledDerivative`."""
        quick = None
        if jit is None and not self.cells and self._generation == CACHE.generation and \
                not (self.pyfunc.__closure__ and self._closure_changed()):
            # positional floats, ints and NumPy arrays (no CuPy: no device guard) of the types of
            # an earlier call pick the derivative that call picked
            sig = _signature(args)
            if sig is not None:
                quick = (sig, tuple(wrt), check)
                d = self._quick.get(quick)
                if d is not None and d.fresh():
                    return d, args
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
        if jit is not None:
            from .codegen.jit import arg_type
            return self._compiled(key, jit, tuple(arg_type(a) for a in full)), full
        # specialised on the arguments' types too (kind, dtype kind, ndim: classify/types.py),
        # at most _TYPED_MAX ways per kinds; then one derivative for all (types unknown)
        types = tuple(type_of(a) for a in full)
        tkey = key + (types,)
        d = self._memo.get(tkey)
        if d is None or not d.fresh():
            n = self._typed.get(key, 0)
            if d is None and n >= _TYPED_MAX:
                types, tkey = None, key + (None,)
                d = self._memo.get(tkey)
            if d is None or not d.fresh():
                try:
                    d = self._memo[tkey] = reverse_derivative(self.pyfunc, key[0], kinds,
                                                              types=types)
                except S2SADError as e:
                    _relocate(e)
                    raise
                if types is not None:
                    self._typed[key] = n + 1
        if quick is not None and not self.cells and len(self._quick) < 16:
            self._quick[quick] = d
        return d, full


    def _compiled(self, key, options, types):
        k = key + ("jit", tuple(sorted(options.items())), types)
        c = self._memo.get(k)
        if c is None or not c.fresh():
            try:
                c = self._memo[k] = jit_derivative(self.pyfunc, key[0], key[1], options, types)
            except S2SADError as e:
                _relocate(e)
                # the numba build inlines callees and closures, which Python mode keeps as
                # calls: a refusal only that build meets (an alias its bindings make) runs as
                # Python, as any construct numba does not compile; Python mode's own refusal,
                # where it has one, is raised by _compiled_value_and_grad
                c = self._memo[k] = _JitRefused(e, self.pyfunc)
        return c


_TYPED_MAX = 8          # typed specialisations of one function per argument kinds


class _JitRefused:
    """Stands for a numba derivative whose build refused the function (see _Spec._compiled):
    ``run`` gives None, the derivative runs as Python, with one JitFallbackWarning naming the
    refusal."""

    def __init__(self, error, pyfunc):
        self.error, self.pyfunc, self._warned = error, pyfunc, False
        self.failed = f"{type(error).__name__}: {error}"

    def fresh(self):
        return True

    def run(self, *args):
        if not self._warned:
            self._warned = True
            from .errors import JitFallbackWarning
            where = self.error.origin.short() if self.error.origin is not None else \
                self.pyfunc.__qualname__
            first = str(self.error.message).split("\n", 1)[0]
            warnings.warn(f"{where}: jit=True could not build the derivative of "
                          f"{self.pyfunc.__qualname__}: {first}\nIt runs as Python (the same "
                          f"numbers, without the speed).", JitFallbackWarning, stacklevel=4)
        return None

_SPECS = {}              # (function, wrt) -> _Spec, most recent last: grad(f)(x) inside a loop
_SPECS_MAX = 128
_SPECS_LOCK = threading.Lock()


class _Same:
    """An object compared by identity (``==`` of two is ``is``): a default's value."""
    __slots__ = ("v",)

    def __init__(self, v):
        self.v = v

    def __eq__(self, other):
        return self.v is other.v


def _defaults_of(f):
    """``f``'s defaults, each compared by identity (kept alive: ``f.__defaults__ = ...`` makes
    new ones; ``f.__kwdefaults__["c"] = v`` changes the dict in place)."""
    d = getattr(f, "__defaults__", None) or ()
    kw = getattr(f, "__kwdefaults__", None) or {}
    return tuple(map(_Same, d)), tuple((k, _Same(v)) for k, v in kw.items())


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


_limit_lock = threading.Lock()
_limit_state = {"holders": 0, "saved": None}


def _hold_limit():
    """Raise the interpreter's recursion limit for a call of a derivative (generated code of deep
    programs recurses through nested calls).  The limit is one for the whole process: calls from
    several threads count as holders, and the last to finish puts the old limit back (one
    thread's restore used to cut the limit under another that still ran)."""
    with _limit_lock:
        if _limit_state["holders"] == 0:
            old = sys.getrecursionlimit()
            if old >= _RECURSION_LIMIT:
                return False
            _limit_state["saved"] = old
            sys.setrecursionlimit(_RECURSION_LIMIT)
        _limit_state["holders"] += 1
        return True


def _release_limit():
    with _limit_lock:
        _limit_state["holders"] -= 1
        if _limit_state["holders"] == 0:
            if sys.getrecursionlimit() == _RECURSION_LIMIT:     # (unless changed meanwhile)
                sys.setrecursionlimit(_limit_state["saved"])
            _limit_state["saved"] = None


def _run(fn, *args):
    held = _hold_limit()
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
        if held:
            _release_limit()


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
    if len(wrt) == 1 and wrt[0][1] is None:         # one whole argument: what follows, quicker
        g, x = grads[0], args[wrt[0][0]]
        if not (type(g) is _NDARRAY and type(x) is _NDARRAY and g.shape == x.shape and
                g.dtype == x.dtype):
            g = runtime.materialize(g, x)
        elif not _owned(g):             # (a reduction's adjoint: a read-only broadcast view)
            g = g.copy()
        return [g]
    if _whole_arrays(grads, args, wrt):
        return list(grads)
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
            elif not _owned(g):
                g = g.copy()
        else:
            parts = runtime.parts(g, len(args[i]))
            g = runtime.materialize(parts[el], args[i][el])
        if id(g) in seen and hasattr(g, "copy"):
            g = g.copy()
        elif _shares_with(g, out):
            g = g.copy()
        seen.add(id(g))
        out.append(g)
    return out


def _whole_arrays(grads, args, wrt):
    """The common case of :func:`_finish_grads`, decided with fewer checks: whole NumPy (or
    CuPy) array arguments in increasing order, each gradient an array of its argument's type,
    shape and dtype that owns its buffer (base None: it shares memory with no other gradient)
    and is the user's to change (writable, no stride 0), no two the same object; or a Python
    float argument with a float gradient.  Then the gradients are returned as they are."""
    if len(grads) != len(wrt):
        return False
    last = -1
    arrays = 0
    for (i, el), g in zip(wrt, grads):
        if el is not None or i <= last:
            return False
        last = i
        x = args[i]
        t = type(g)
        if (t is float or t is _FLOAT64) and type(x) is float:  # (immutable: nothing to copy)
            continue
        arrays += 1
        if t is not type(x) or not (t is _NDARRAY or is_cupy(g)) or \
                g.base is not None or g.shape != x.shape or g.dtype != x.dtype:
            return False
        if t is _NDARRAY:
            if not _owned(g):
                return False
        elif g.size > 1 and 0 in g.strides:     # (CuPy's arrays are always writable)
            return False
    return len({id(g) for g in grads if type(g) is not float and type(g) is not _FLOAT64}) == \
        arrays


def _buffer(a):
    while getattr(a, "base", None) is not None:
        a = a.base
    return a


def _shares_with(g, earlier):
    """Whether the gradient ``g`` may share memory with one returned before it: an adjoint may be
    a view (the slice of a concatenation's cotangent, a transposed one), and each gradient the user
    gets must be theirs to change in place."""
    if getattr(g, "base", None) is None or not hasattr(g, "copy"):
        return False
    root = _buffer(g)
    for o in earlier:
        if o is not None and _buffer(o) is root:
            may = getattr(runtime.array_module(g), "may_share_memory", None)
            if may is None or may(g, o):
                return True
    return False


def _jit_options(fn, jit):
    """numba options for ``jit=`` (None: Python).  ``jit=None`` means: as the environment says
    (``S2SAD_JIT=1``), or as ``fn`` itself was compiled (a ``numba.njit`` function: its options);
    ``jit=True``: njit with its defaults, or ``fn``'s own options; a dict: those options."""
    if jit is False:
        return None
    if isinstance(jit, dict):
        return dict(jit)
    from .callables import numba_options
    own = numba_options(fn)
    if jit is None and own is None and os.environ.get("S2SAD_JIT", "") not in ("1", "true", "yes"):
        return None
    return dict(own or {})


def _compiled_value_and_grad(spec, args, wrt, has_aux, options):
    """``_value_and_grad`` through the numba-compiled derivative; None where it runs as Python
    (it has warned once, naming the line numba refused)."""
    if has_aux:
        return None
    c, full = spec.derivative(args, wrt, jit=options)
    if isinstance(c, _JitRefused):
        spec.derivative(args, wrt)          # (Python mode's own refusal first, where it has one)
    out = _run(c.run, full, 1.0)
    if out is None:
        return None
    value, grads = out
    _scalar_seed(value, spec.pyfunc)              # (refuses an output that is not a real scalar)
    return value, _finish_grads(list(grads), args, wrt), c


def _value_and_grad(spec, args, kwargs, wrt, has_aux=False, jit=None):
    """(value, gradients, the derivative used); with ``has_aux`` the value is ``(value, aux)``,
    and the output's adjoint seeds only ``value`` (``aux`` carries no derivative)."""
    args = spec.bind(args, kwargs)
    if jit is not None:
        out = _compiled_value_and_grad(spec, args, wrt, has_aux, jit)
        if out is not None:
            return out
    d, full = spec.derivative(args, wrt)
    fwd, bwd = d.fwd, d.bwd
    dev = getattr(d, "_s2sad_on_device", None)
    if dev is None:                 # (a derivative is specialised on its arguments' array library)
        dev = graphs.on_device(full)
        try:
            d._s2sad_on_device = dev
        except AttributeError:
            pass
    if dev:
        # CuPy: matrix products that read transposed and head-split views in place, elementwise
        # expressions as single kernels (s2sad.graphs.device_sweeps)
        fwd, bwd = graphs.device_sweeps(d)

    def sweeps():
        value, tape = fwd(*full)
        if has_aux:
            _check_aux(value, spec.pyfunc)
            seed = type(value)((_scalar_seed(value[0], spec.pyfunc), None))
            return value, bwd(tape, seed)
        return value, bwd(tape, _scalar_seed(value, spec.pyfunc))
    if fwd is not d.fwd:
        with graphs.gemm.device_products():
            value, grads = _run(sweeps)
    else:
        value, grads = _run(sweeps)
    return value, _finish_grads(grads, args, wrt), d


def _check_aux(out, pyfunc):
    if type(out) not in (tuple, list) or len(out) != 2:
        what = f"a {type(out).__name__} of {len(out)}" if isinstance(out, (tuple, list)) else \
            _describe(out)
        raise ArgumentError(f"has_aux=True, but {pyfunc.__qualname__} returned {what}, not a "
                            f"pair (value, aux)", origin=_def_origin(pyfunc),
                            fix="return (value, aux): the scalar to differentiate and anything "
                                "else to pass out (it gets no derivative); or drop has_aux=True")


def _wrt_or_argnums(wrt, argnums):
    """``wrt``, or JAX's name for it, ``argnums`` (giving both is an error); 0 when neither."""
    if argnums is None:
        return 0 if wrt is None else wrt
    if wrt is not None:
        raise WrtError(f"wrt={wrt!r} and argnums={argnums!r} both given: argnums is another name "
                       f"for wrt", origin=caller_origin(), fix="give only one of them")
    return argnums


class Differentiable:
    """What ``@differentiate`` returns: the original function, plus its derivatives."""

    def __init__(self, fn, wrt=0, mode="reverse", has_aux=False, jit=None, graph=False):
        self.__s2sad_function__ = fn
        functools.update_wrapper(self, fn)
        self._fn = fn
        self._wrt = wrt
        self._mode = mode
        self._has_aux = has_aux
        self._jit = jit
        self._jit_options = _jit_options(fn, jit)
        self._specs = _Specs(fn, wrt)
        self._last = None
        self._graph = _graph_option(graph, jit, fn) and \
            graphs.Graphed(_graph_step(self._specs, has_aux), fn)

    @property
    def _spec(self):
        """The :class:`_Spec` of a call without arguments (a Python function or method), or
        with placeholders for the required positional arguments (partials, callees with rules)."""
        return self._specs.get(_required_args(self._fn) if self._specs.per == "shape" else (), {})

    def __call__(self, *args, **kwargs):
        return self._fn(*args, **kwargs)

    def __reduce__(self):
        """By reference when its module holds it under its name, else as
        ``Differentiable(fn, ...)`` with ``fn`` by reference or by value (:mod:`.pickling`)."""
        options = {"wrt": self._wrt, "mode": self._mode, "has_aux": self._has_aux}
        if getattr(self, "_jit", None) is not None:
            options["jit"] = self._jit
        if getattr(self, "_graph", False):
            options["graph"] = True
        return pickling.reduce(self, Differentiable, self._fn, options)

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        graph = bool(getattr(self, "_graph", False))
        shared = graphs.method_wrt(self._wrt) if graph and inspect.isfunction(self._fn) else None
        d = Differentiable(self._fn.__get__(obj, objtype), self._wrt, self._mode, self._has_aux,
                           self._jit, graph and shared is None)
        if shared is not None:
            # graph=True on a method: one Graphed for the class, `self` its first argument (so
            # each access does not capture again; specialised per instance, graphs.Bound)
            g = self.__dict__.get("_method_graph")
            if g is None:
                g = self._method_graph = graphs.Graphed(
                    _graph_step(_Specs(self._fn, shared), self._has_aux), self._fn)
            d._graph = graphs.Bound(g, obj)
        return d

    def value_and_grad(self, *args, **kwargs):
        """``(value, gradient)``; with ``has_aux=True``, ``((value, aux), gradient)``."""
        if self._graph:
            return self._graph(args, kwargs)
        spec = self._specs.get(args, kwargs)
        v, g, self._last = _value_and_grad(spec, args, kwargs, spec.wrt, self._has_aux,
                                           self._jit_options)
        return v, (g[0] if spec.single else tuple(g))

    def grad(self, *args, **kwargs):
        """The gradient; with ``has_aux=True``, ``(gradient, aux)``."""
        v, g = self.value_and_grad(*args, **kwargs)
        return (g, v[1]) if self._has_aux else g

    def vjp(self, *args, **kwargs):
        return _vjp(self._fn, args, kwargs, self._jit_options)

    def derivative(self, *args, jit=None, **kwargs):
        """The built :class:`~s2sad.codegen.build.Derivative` for these arguments (or the last
        one used, or one built for array arguments when called with none).  ``jit=True`` (or a
        decorator's ``jit=True``): the :class:`~s2sad.codegen.jit.CompiledDerivative`."""
        opts = self._jit_options if jit is None else _jit_options(self._fn, jit)
        if args or kwargs:
            spec = self._specs.get(args, kwargs)
            d = spec.derivative(spec.bind(args, kwargs), spec.wrt, jit=opts)[0]
            if isinstance(d, _JitRefused):
                raise d.error                   # (no numba derivative to show)
            if opts is None:
                self._last = d
            return d
        if self._last is None or opts is not None:
            nc = len(self._spec.cells)
            n = len(self._spec.params)
            wrt = {i for i, _ in self._spec.wrt}
            mask = [False] * nc + [i in wrt for i in range(n)]
            kinds = ["?"] * nc + ["a"] * n
            if opts is not None:
                return jit_derivative(self._spec.pyfunc, tuple(mask), tuple(kinds), opts)
            self._last = reverse_derivative(self._spec.pyfunc, tuple(mask), tuple(kinds))
        return self._last

    def adjoint_source(self, *args, jit=None, **kwargs):
        """The generated module (forward and reverse sweeps) as Python source; for
        ``@differentiate(mode="forward")`` the tangent module; with ``jit=True`` the one function
        that ``numba.njit`` compiles."""
        if self._mode == "forward":
            return self.forward_source(*args, jit=jit)
        return self.derivative(*args, jit=jit, **kwargs).source

    def explain(self, *args, **kwargs):
        """Every call site: file:line, its class, and the rule or function chosen."""
        return explain_derivative(self.derivative(*args, **kwargs))

    def jvp(self, primals, tangents):
        """Forward mode: ``(value, tangent of the output)`` for tangents of the inputs (compiled
        with numba under ``differentiate(f, jit=True)``, as :func:`jvp` with ``jit=True``)."""
        return _jvp(self._fn, primals, tangents, self._jit_options)

    def forward_source(self, *args, jit=None):
        """The generated forward-mode (tangent) module as Python source; with ``jit=True`` (or
        a decorator's ``jit=True``) the function that ``numba.njit`` compiles."""
        opts = self._jit_options if jit is None else _jit_options(self._fn, jit)
        return forward_source(self._fn, self._wrt, *args, jit=opts is not None)


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


def differentiate(fn=None, *, wrt=None, mode="reverse", has_aux=False, argnums=None, jit=None,
                  graph=False):
    """Decorator: ``@differentiate`` or ``@differentiate(wrt=(0, "x"))``.

    The decorated function still runs as itself; it gains ``.value_and_grad``, ``.grad``,
    ``.vjp``, ``.adjoint_source()`` and ``.explain()``.  ``wrt`` defaults to 0; ``argnums`` is
    another name for it (JAX's).  With ``has_aux=True`` the function returns ``(value, aux)``:
    ``.grad`` returns ``(gradient, aux)`` and ``.value_and_grad`` ``((value, aux), gradient)``.
    ``jit=True`` compiles the derivative with ``numba.njit``; ``graph=True`` replays a CUDA graph
    of ``.value_and_grad``/``.grad`` on CuPy arrays (see :func:`grad`)."""
    wrt = _wrt_or_argnums(wrt, argnums)
    if fn is None:
        return lambda f: Differentiable(f, wrt, mode, has_aux, jit, graph)
    return Differentiable(fn, wrt, mode, has_aux, jit, graph)


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


def _mark(call, fn, wrt, kind, specs=None, has_aux=False, options=None):
    """The :class:`~s2sad.runtime.transformed.Transformed` object ``grad``/``value_and_grad``
    return: it runs ``call``, has ``fn``'s name and docs (not ``__wrapped__``, which would make
    s2sad differentiate ``fn`` instead of its gradient), and pickles as ``grad(fn, wrt=wrt,
    has_aux=has_aux, **options)`` (:mod:`.pickling`)."""
    make = grad if kind == "grad" else value_and_grad
    keywords = {"wrt": wrt, "has_aux": has_aux, **(options or {})}
    wrapper = Transformed(call, lambda: pickling.reduce(None, make, fn, keywords))
    try:
        one = specs.one if specs is not None else None
        functools.update_wrapper(wrapper, one.pyfunc if one is not None else fn, updated=())
    except Exception:
        pass
    wrapper.__dict__.pop("__wrapped__", None)
    # differentiated again (runtime.transform_parts; not with has_aux: refused as library code)
    wrapper.__s2sad_grad_of__ = (fn, wrt) if kind == "grad" and not has_aux else None
    wrapper.__s2sad_transform__ = (kind, fn, wrt) if not has_aux else None
    return wrapper


def value_and_grad(fn, wrt=None, *, has_aux=False, argnums=None, jit=None, graph=False):
    """``value_and_grad(f, wrt)(*args) -> (value, gradient)``; a tuple of gradients for a tuple wrt.

    ``wrt`` defaults to 0; ``argnums`` is another name for it (JAX's).  ``has_aux=True``: ``f``
    returns ``(value, aux)`` and the call ``((value, aux), gradient)``; ``aux`` carries no
    derivative.  ``jit=True`` compiles the derivative with ``numba.njit``; ``graph=True`` replays
    the step as a CUDA graph on CuPy arrays (see :func:`grad`)."""
    wrt = _wrt_or_argnums(wrt, argnums)
    specs = _Specs(fn, wrt)
    if _graph_option(graph, jit, fn):
        g = graphs.Graphed(_graph_step(specs, has_aux), fn)
        return _mark(lambda *a, **k: g(a, k), fn, wrt, "value_and_grad", specs, has_aux,
                     {"graph": True})
    return _mark(_vg(specs, has_aux, _jit_options(fn, jit)), fn, wrt, "value_and_grad", specs,
                 has_aux, None if jit is None else {"jit": jit})


def _graph_option(graph, jit, fn):
    """Whether ``graph=`` asks for graph mode (True/False only; not with ``jit=True``)."""
    if graph is not True and graph is not False:
        raise ArgumentError(f"graph={graph!r} for {_label(fn)}: graph takes True or False",
                            origin=caller_origin(), fix="pass graph=True or graph=False")
    if graph and jit:
        raise ArgumentError(f"graph=True and jit=True for {_label(fn)}: jit compiles the derivative "
                            f"for the CPU with numba, graph captures CuPy's GPU work; they do not "
                            f"combine", origin=caller_origin(),
                            fix="use graph=True for CuPy arrays, jit=True for NumPy arrays")
    return graph


def _graph_step(specs, has_aux):
    """The step :class:`~s2sad.graphs.Graphed` runs and captures: ``value_and_grad`` through
    the derivative's graph-safe sweeps (:func:`~s2sad.graphs.sweeps`); returns
    ``((value, gradients), the derivatives it used)``."""
    def step(args, kwargs):
        s = specs.get(args, kwargs)
        full_args = s.bind(args, kwargs)
        d, full = s.derivative(full_args, s.wrt)
        fwd, bwd = graphs.sweeps(d)

        def sweeps():
            value, tape = fwd(*full)
            if has_aux:
                _check_aux(value, s.pyfunc)
                return value, bwd(tape, type(value)((_scalar_seed(value[0], s.pyfunc), None)))
            return value, bwd(tape, _scalar_seed(value, s.pyfunc))
        value, grads = _run(sweeps)
        g = _finish_grads(grads, full_args, s.wrt)
        return (value, g[0] if s.single else tuple(g)), (d,)
    return step


def _vg(specs, has_aux=False, jit=None):
    # arguments of the types of an earlier call (positional floats, ints, complex numbers and NumPy
    # arrays of a dtype, tuples, dicts and lists of them; with jit, of a layout too; a dict's keys
    # in order) run the derivative that call used, with what the full path would check: rules
    # unchanged (CACHE.generation), the globals it read still bound to the same objects
    # (d.fresh()); compiled: numba's own dispatch, the call's cost
    memo = {} if not has_aux else None      # signature -> (spec, derivative, cache generation)

    def vg(*args, **kwargs):
        sig = _signature(args, layout=jit is not None, containers=True) \
            if memo is not None and not kwargs else None
        hit = memo.get(sig) if sig is not None else None
        if hit is not None:
            s, d, gen = hit
            if gen == CACHE.generation and d.fresh() and getattr(d, "failed", None) is None:
                out = _run(_sweeps, d, s.pyfunc, args) if jit is None else _run(d.quick, args)
                if out is not None:             # (None: a compiled check refused)
                    value, grads = out
                    if jit is not None:
                        _scalar_seed(value, s.pyfunc)
                        grads = list(grads)
                    g = _finish_grads(grads, args, s.wrt)
                    return value, (g[0] if s.single else tuple(g))
        s = specs.get(args, kwargs)
        v, g, d = _value_and_grad(s, args, kwargs, s.wrt, has_aux, jit)
        if sig is not None and s is specs.one and not s.pyfunc.__closure__ and s.plain and \
                s.bound_self is None and len(args) == len(s.params) and len(memo) < 16 and \
                (jit is None or getattr(d, "failed", True) is None):   # (compiled, not fallen back)
            memo[sig] = (s, d, CACHE.generation)
        return v, (g[0] if s.single else tuple(g))
    return vg


def _sweeps(d, pyfunc, args):
    value, tape = d.fwd(*args)
    return value, d.bwd(tape, _scalar_seed(value, pyfunc))


def _signature(args, layout=False, containers=False):
    """What picks a derivative for positional arguments (their kinds and types, and whether each
    carries a derivative): each argument's type, and an array's dtype and ndim (with ``layout``,
    also its contiguity, on which numba dispatches); None when an argument is not a float, int,
    complex, bool or NumPy array of a numeric dtype, or a tuple of those (with ``containers``,
    also a dict of those under string keys, with its keys in order, or a list of those)."""
    out = []
    for a in args:
        t = type(a)
        if t is _NDARRAY:
            dt = a.dtype
            if dt.kind not in "biufc":
                return None
            if layout:
                f = a.flags
                out.append((dt, a.ndim, f.c_contiguous, f.f_contiguous))
            else:
                out.append((dt, a.ndim))
        elif t is float or t is int or t is complex or t is bool:
            out.append(t)
        elif t is tuple and a:
            inner = _signature(a, layout)           # (a tuple of those, nested too)
            if inner is None:
                return None
            out.append((tuple, inner))
        elif containers and t is dict and a and all(type(k) is str for k in a):
            inner = _signature(tuple(a.values()), layout)
            if inner is None:
                return None
            out.append((dict, tuple(a), inner))
        elif containers and t is list and a:
            inner = _signature(a, layout)
            if inner is None:
                return None
            out.append((list, inner))
        else:
            return None
    return tuple(out)


def grad(fn, wrt=None, *, has_aux=False, argnums=None, jit=None, graph=False):
    """``grad(f, wrt)(*args)``: the gradient of a scalar function (a tuple for a tuple wrt).

    ``wrt`` defaults to 0; ``argnums`` is another name for it (JAX's).  ``has_aux=True``: ``f``
    returns ``(value, aux)`` and the call ``(gradient, aux)``.
    The result can be differentiated again: ``grad(grad(f))`` (without ``has_aux``).

    ``jit=True`` (or ``S2SAD_JIT=1``) compiles the forward and reverse sweeps, fused into one
    function, with ``numba.njit``; a ``numba.njit`` function is compiled with its own options.
    What numba cannot compile runs as Python, with one :class:`~s2sad.errors.JitFallbackWarning`
    naming the line.  ``jit=False`` never compiles.

    ``graph=True`` (CuPy arrays only): the first call per argument specialisation (shapes, dtypes,
    devices, Python scalar values) runs eagerly and then records the forward and reverse sweeps
    into a CUDA graph; later calls copy the arguments into the graph's buffers and replay it.  The
    returned arrays are fresh copies the caller owns.  What cannot be captured (a host
    synchronisation such as ``float(x.sum())``, data-dependent control flow) runs without a graph,
    with one :class:`~s2sad.errors.GraphFallbackWarning` naming the line (:mod:`s2sad.graphs`)."""
    wrt = _wrt_or_argnums(wrt, argnums)
    specs = _Specs(fn, wrt)
    if _graph_option(graph, jit, fn):
        gr = graphs.Graphed(_graph_step(specs, has_aux), fn)

        def vg(*args, **kwargs):
            return gr(args, kwargs)
    else:
        vg = _vg(specs, has_aux, _jit_options(fn, jit))

    if has_aux:
        def g(*args, **kwargs):
            v, gr = vg(*args, **kwargs)
            return gr, v[1]
    else:
        def g(*args, **kwargs):
            return vg(*args, **kwargs)[1]
    return _mark(g, fn, wrt, "grad", specs, has_aux,
                 {"graph": True} if graph else None if jit is None else {"jit": jit})


def vjp(fn, *args, **kwargs):
    """``value, pullback = vjp(f, *args)``; ``pullback(ct)`` returns one adjoint per positional
    argument (``None`` for arguments that carry no derivative).

    Compiled with numba (the forward sweep runs again inside each ``pullback``) where
    ``S2SAD_JIT=1``, for a ``numba.njit`` function, or through ``differentiate(f, jit=True).vjp``."""
    return _vjp(fn, args, kwargs, _jit_options(fn, None))


def _vjp(fn, args, kwargs, jit):
    target = _concrete(fn, args, kwargs)
    spec = _Spec(target, 0) if hasattr(target, "__s2sad_wrapper__") and \
        isinstance(target.__s2sad_wrapper__, functools.partial) else _spec_for(target, 0)
    full = spec.bind(args, kwargs)
    npos = len(args)
    where = [spec.locate(i) for i in range(npos)]
    wrt = [w for w in where if w[0] is not None and runtime.differentiable(
        full[w[0]] if w[1] is None else full[w[0]][w[1]])]
    if jit is not None and wrt:
        c, allargs = spec.derivative(full, wrt, check=False, jit=jit)
        if isinstance(c, _JitRefused):
            spec.derivative(full, wrt, check=False)     # (Python mode's own refusal first)
            c.run()
        if c.failed is None:
            value = _run(spec.pyfunc, *allargs)

            def compiled_pullback(ct):
                check_like(ct, value, "the cotangent", "the output",
                           "give pullback a cotangent shaped like the output")
                out = _run(c.run, allargs, ct)
                if out is None:                 # (fell back, and warned: Python from here on)
                    return _vjp(fn, args, kwargs, None)[1](ct)
                fin = dict(zip(wrt, _finish_grads(list(out[1]), full, wrt)))
                return tuple(fin.get(w) for w in where)
            return value, compiled_pullback
    d, allargs = spec.derivative(full, wrt, check=False)
    value, tape = _run(d.fwd, *allargs)

    def pullback(ct):
        check_like(ct, value, "the cotangent", "the output",
                   "give pullback a cotangent shaped like the output (np.ones_like(value), or a "
                   "tuple/list/dict of such for a container output)")
        # the reverse sweep pops the tape's loop stacks: each call gets its own copy of the
        # containers, so that the pullback can be called again (it raised IndexError: pop
        # from empty list the second time)
        grads = _run(d.bwd, _fresh_tape(tape), ct)
        fin = dict(zip(wrt, _finish_grads(grads, full, wrt)))
        return tuple(fin.get(w) for w in where)
    return value, pullback


def _fresh_tape(t):
    """``t`` with its lists copied (and the tuples holding them rebuilt), elements shared: what
    a reverse sweep pops is the copy's."""
    if type(t) is list:
        return [_fresh_tape(v) for v in t]
    if type(t) is tuple and any(type(v) in (list, tuple) for v in t):
        return tuple(_fresh_tape(v) for v in t)
    return t


# -- forward mode ---------------------------------------------------------------------------------
_TUPLE_FIX = ("pass the arguments as a tuple and their tangents as a tuple of the same length: "
              "s2sad.jvp(f, (x,), (t,)), or s2sad.jvp(f, (x, y), (tx, None)) (None: no tangent)")


def jvp(f, primals, tangents, *, jit=None):
    """``(f(*primals), J tangents)``: ``primals`` and ``tangents`` are tuples with one entry per
    positional argument (``None``, or zeros, for arguments that carry no tangent).

    ``jit=True`` (or ``S2SAD_JIT=1``, or ``f`` a ``numba.njit`` function) compiles the forward-mode
    derivative with ``numba.njit``; what numba cannot compile runs as Python, with one
    :class:`~s2sad.errors.JitFallbackWarning` naming the line.  ``jit=False`` never compiles."""
    return _jvp(f, primals, tangents, _jit_options(f, jit))


def _jvp(f, primals, tangents, options):
    key = None
    if options is not None:
        key = _jvp_key(f, primals, tangents, options)
        hit = _JVP_MEMO.get(key) if key is not None else None
        if hit is not None:
            done = _jvp_again(hit, primals, tangents)
            if done is not None:
                return done
    for what, v in (("primals", primals), ("tangents", tangents)):
        if not isinstance(v, (tuple, list)):
            raise ArgumentError(f"jvp({_label(f)}, primals, tangents): {what} must be a tuple with "
                                f"one entry per positional argument, not a {type(v).__name__}",
                                origin=caller_origin(), fix=_TUPLE_FIX)
    primals, tangents = tuple(primals), tuple(tangents)
    if len(tangents) != len(primals):
        raise ArgumentError(f"jvp: {len(tangents)} tangent(s) for {len(primals)} argument(s) of "
                            f"{_label(f)}", origin=caller_origin(), fix=_TUPLE_FIX)
    for k, (p, t) in enumerate(zip(primals, tangents)):
        check_like(t, p, "the tangent", f"argument {k}",
                   "give each tangent the shape (and a real or complex dtype like) its argument: "
                   "np.ones_like(x) or a random array of x.shape; None for no tangent")
    f = _concrete(f, primals)
    fn = get_function(f)
    if numba_options(f) is not None:
        from .classify.inline import check_numba_callee
        check_numba_callee(fn)
    self_ = getattr(f, "__self__", None) if inspect.ismethod(f) else None
    if self_ is not None:
        primals, tangents = (self_,) + primals, (None,) + tangents
    used = []
    compiled = None if options is None else _compiled_jvp(options, used)
    value, tout = _run(lambda: _jvp_python(fn, primals, tangents, top=True, compiled=compiled))
    if key is not None and used and fn is f and not f.__closure__ and len(_JVP_MEMO) < 64:
        c, mask = used[-1]
        if c.failed is None and not c.written_params and len(mask) == len(primals):
            _JVP_MEMO[key] = (c, mask, CACHE.generation)
    return value, materialize(tout, value)


def _compiled_jvp(options, used):
    """The ``compiled`` hook of :func:`~s2sad.runtime.forward._jvp_python`: the forward-mode
    derivative compiled with numba (one per argument types), run on the arguments and their
    tangents (copies of those the function writes), or None where it runs as Python; ``used``
    gets (compiled derivative, mask) of each run."""
    def run(fn, mask, kinds, args, targs):
        from .codegen.jit import arg_type       # (dicts and lists: codegen.jit.arg_type)
        types = tuple(arg_type(a) for a in args)
        key = (fn, tuple(mask), tuple(kinds), tuple(sorted(dict(options).items())), types)
        if key in _JVP_REFUSED:
            return None
        try:
            c = forward_jit_derivative(fn, mask, kinds, options, types)
        except S2SADError as e:
            # a refusal only the numba build meets (see _Spec._compiled): Python mode's own
            # refusal where it has one, else the derivative runs as Python, with one warning
            forward_derivative(fn, tuple(mask), tuple(kinds))
            if e.origin is None:
                e.locate(_def_origin(fn))
            refused = _JitRefused(e, fn)
            if len(_JVP_REFUSED) >= 256:
                _JVP_REFUSED.clear()
            _JVP_REFUSED[key] = refused
            return refused.run()
        if c.failed is not None:
            return None
        written = set(c.written_params)
        tans = [materialize(runtime.snap(t) if p in written else t, a)
                for p, t, a, m in zip(c.ir.params, targs, args, mask) if m]
        out = c.call(tuple(args) + tuple(tans))
        if out is not None:
            used.append((c, mask))
        return out
    return run


# jvp(f, ..., jit=True) of a plain function (module-level or closure-free, positional arguments
# only) called again with arguments and tangents of the same types and layouts: the compiled
# derivative that call ran, while the rules (CACHE.generation) and the globals it read (fresh())
# are unchanged and it has not fallen back; the checks of the full path that the types do not
# settle (tangent shapes) are made again
_JVP_MEMO = {}       # (f, options, primals' signature, tangents' signature) -> (c, mask, generation)
_JVP_REFUSED = {}    # (f, mask, kinds, options, types) -> _JitRefused: the numba build refused
_FUNCTION = type(_signature)


def _jvp_key(f, primals, tangents, options):
    if type(f) is not _FUNCTION or type(primals) is not tuple or type(tangents) is not tuple or \
            len(primals) != len(tangents) or f.__closure__:
        return None
    code = f.__code__
    if code.co_argcount != len(primals) or code.co_kwonlyargcount or \
            code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS):
        return None
    ps = _signature(primals, layout=True, containers=True)
    if ps is None:
        return None
    ts = _signature(tuple(t for t in tangents if t is not None), layout=True, containers=True)
    if ts is None:
        return None
    return (f, tuple(sorted(options.items())), ps, tuple(t is None for t in tangents), ts)


def _same_shapes(t, p):
    """Whether the tangent ``t`` has the type of the primal ``p``, and its shape where it is an
    array (item by item in a tuple)."""
    if type(t) is not type(p):
        return False
    if type(t) is _NDARRAY:
        return t.shape == p.shape
    if type(t) is tuple or type(t) is list:
        return len(t) == len(p) and all(_same_shapes(a, b) for a, b in zip(t, p))
    if type(t) is dict:
        return list(t) == list(p) and all(_same_shapes(t[k], p[k]) for k in p)
    return True


def _jvp_again(hit, primals, tangents):
    c, mask, gen = hit
    if gen != CACHE.generation or c.failed is not None or not c.fresh():
        return None
    tans = []
    for p, t, m in zip(primals, tangents, mask):
        if t is None:
            continue
        if not _same_shapes(t, p):
            return None                     # (the full path says why, or materialises zeros)
        if m:
            tans.append(t)
    args = tuple(primals) + tuple(tans)
    if c._tuples:                           # (dicts and lists the function only reads)
        from .codegen.jit import _containers_in
        args = _containers_in(args, c._tuples)
    try:
        return _run(c.dispatcher(), *args, *c.arrays_now())
    except ValueError as e:
        from .runtime.jit import REFUSED
        if REFUSED in str(e):
            return None                     # (the full path runs the Python derivative)
        raise


jvp.__s2sad_jvp__ = True        # inside a differentiated function: runtime.jvp_function


def forward_source(f, wrt=0, *example_args, jit=False):
    """The generated forward-mode module for ``f`` with respect to ``wrt`` (an index, a name, or
    a tuple of them).  Built for array arguments unless example arguments are given.
    ``jit=True``: the function ``jvp(..., jit=True)`` compiles with ``numba.njit``."""
    return forward_derivative_of(f, wrt, *example_args, jit=jit).source


def forward_derivative_of(f, wrt=0, *example_args, jit=False):
    """The built forward-mode :class:`~s2sad.codegen.build.Derivative` whose source
    :func:`forward_source` returns (its module's source map and call sites: ``s2sad dump
    --html``)."""
    per = _per_call(f)
    if per == "grad" and not example_args:
        raise S2SADError("forward_source of a gradient function s2sad returned: give example "
                         "arguments (its generated code is specialised on their kinds)",
                         fix="forward_source(s2sad.grad(f), 0, *args)")
    positions, _ = _wrt(f, wrt)
    f = _concrete(f, example_args or (_required_args(f) if per == "shape" else ()))
    fn = get_function(f)
    cells = runtime._data_cells(fn)
    nparams = len(inspect.signature(fn).parameters) + len(cells)
    off = len(cells) + (1 if inspect.ismethod(f) else 0)
    mask = tuple((i - off) in positions and i >= off for i in range(nparams))
    if example_args:
        args = list(example_args)
        if inspect.ismethod(f):
            args = [f.__self__] + args
        if cells:
            from .frontend.source import data_cell_values
            args = list(data_cell_values(fn, cells)) + args
        kinds = tuple(runtime.kind_of(a) for a in args) + ("a",) * (nparams - len(args))
    else:
        kinds = ("a",) * nparams
    if jit:
        return forward_jit_derivative(fn, mask, kinds, _jit_options(fn, True))
    return forward_derivative(fn, mask, kinds)


runtime.hooks.register(grad=grad)   # (runtime.dispatch: s2sad.grad(f) inside a derivative)
