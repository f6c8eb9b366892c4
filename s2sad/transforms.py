"""Forward mode and the transforms built from both modes.

* :func:`jvp` -- ``(value, J v)`` by the generated forward code (``f__jvp``).
* :func:`forward_source` -- the generated forward-mode module, as text (``s2sad dump --mode forward``).
* :func:`jacfwd`, :func:`jacrev`, :func:`jacobian` -- full Jacobians, column by column (forward) or
  row by row (reverse); ``jacobian`` picks the cheaper one from the input and output sizes.
* :func:`hvp` -- Hessian-vector products, forward over reverse: the forward emitter differentiates
  the generated reverse sweeps (``f__fwd``/``f__bwd``) themselves.
* :func:`hessian` -- the full Hessian, one :func:`hvp` per input element.
* :func:`grad_function` -- a Python function (generated, with readable source) computing the
  gradient of ``f``; s2sad can differentiate it again, in either mode (``grad(grad(f))``).
"""
import functools
import inspect

import numpy as np

from . import runtime
from .api import _run, _scalar_seed, vjp
from .cache import reverse_derivative
from .codegen import text as T
from .codegen.build_forward import forward_derivative
from .codegen.forward import _jvp_python, materialize, zeros_like
from .codegen.load import GeneratedModule
from .errors import OpaqueCalleeError, S2SADError, UnsupportedSyntaxError, WrtError
from .frontend.source import get_function

__all__ = ["jvp", "forward_source", "jacfwd", "jacrev", "jacobian", "hessian", "hvp",
           "grad_function"]


# -- forward mode ---------------------------------------------------------------------------------
_TUPLE_FIX = ("pass the arguments as a tuple and their tangents as a tuple of the same length: "
              "s2sad.jvp(f, (x,), (t,)), or s2sad.jvp(f, (x, y), (tx, None)) (None: no tangent)")


def jvp(f, primals, tangents):
    """``(f(*primals), J tangents)``: ``primals`` and ``tangents`` are tuples with one entry per
    positional argument (``None``, or zeros, for arguments that carry no tangent)."""
    from .api import ArgumentError, _label, caller_origin, check_like
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
    self_ = getattr(f, "__self__", None) if inspect.ismethod(f) else None
    if self_ is not None:
        primals, tangents = (self_,) + primals, (None,) + tangents
    value, tout = _run(lambda: _jvp_python(fn, primals, tangents, top=True))
    return value, materialize(tout, value)


jvp.__s2sad_jvp__ = True        # inside a differentiated function: runtime.jvp_function


def _concrete(f, args, kwargs=None):
    """The Python function s2sad reads for ``f`` called with ``args`` (see api._concrete):
    ``f`` itself, a generated gradient function for ``s2sad.grad(g)``, a one-line function
    calling a callee with a rule, a function of a partial's remaining arguments, or the bound
    ``__call__`` of a callable object."""
    from .api import _concrete as concrete
    return concrete(f, tuple(args), kwargs)


def _names(f):
    """Names of the positional parameters of ``f`` (those of the underlying function for a
    gradient function s2sad returned)."""
    from .api import _positional_names
    return _positional_names(f)


def _wrt(f, wrt):
    """(positions of the positional arguments named by ``wrt``, whether ``wrt`` was single)."""
    from .api import _grad_of, _label
    inner = _grad_of(f)
    label = f"the gradient of {_label(inner[0])}" if inner is not None else _label(f)
    return _positions(label, _names(f), wrt)


def _positions(label, names, wrt):
    from .api import caller_origin
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


def _wraps(f):
    """functools.wraps for the functions the transforms return (names and docs of ``f``'s
    Python function where it has one)."""
    try:
        from .api import _per_call
        target = _concrete(f, ()) if _per_call(f) is None else f
        return functools.wraps(get_function(target) if _per_call(f) is None else target,
                               updated=())
    except Exception:
        return lambda g: g


def forward_source(f, wrt=0, *example_args):
    """The generated forward-mode module for ``f`` with respect to ``wrt`` (an index, a name, or
    a tuple of them).  Built for array arguments unless example arguments are given."""
    from .api import _per_call, _required_args
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
    return forward_derivative(fn, mask, kinds).source


# -- Jacobians ------------------------------------------------------------------------------------
def _flat_size(x):
    return int(np.size(x))


def _require_array(x):
    """Jacobians are arrays over array (or float) inputs and outputs."""
    if isinstance(x, (float, int, complex)) or (hasattr(x, "shape") and hasattr(x, "dtype")):
        return
    from .api import caller_origin
    raise WrtError(
        f"jacobian/hessian work on float or array inputs and outputs, not a {type(x).__name__}",
        origin=caller_origin(),
        fix="differentiate with respect to an array (for a dict, list or dataclass of arrays, use "
            "grad/vjp/jvp, or pass the values as one array, e.g. np.concatenate([...]))")


def _basis(x):
    """Unit tangents for every element of ``x`` (a float or an array), in C order."""
    _require_array(x)
    if isinstance(x, (float, int)):
        yield 1.0
        return
    x = np.asarray(x)
    for k in range(x.size):
        e = np.zeros(x.shape, dtype=x.dtype if x.dtype.kind in "fc" else np.float64)
        e.flat[k] = 1.0
        yield e


def _assemble(cols, in_shape, out_shape, by_column):
    """Stack per-input (columns) or per-output (rows) slices into out_shape + in_shape."""
    cols = [np.asarray(c) for c in cols]
    if by_column:
        arr = np.stack(cols, axis=-1) if cols else np.zeros(tuple(out_shape) + (0,))
        return arr.reshape(tuple(out_shape) + tuple(in_shape))
    arr = np.stack(cols, axis=0) if cols else np.zeros((0,) + tuple(in_shape))
    return arr.reshape(tuple(out_shape) + tuple(in_shape))


def jacfwd(f, wrt=0):
    """``jacfwd(f, wrt)(*args)``: the Jacobian by forward mode, one ``jvp`` per input element.
    Shape: output shape + input shape (a tuple of Jacobians for a tuple ``wrt``)."""
    positions, single = _wrt(f, wrt)

    @_wraps(f)
    def jac(*args):
        out = []
        for pos in positions:
            x = args[pos]
            cols, value = [], None
            for e in _basis(x):
                tans = [None] * len(args)
                tans[pos] = e
                value, t = jvp(f, args, tans)
                cols.append(t)
            if value is None:
                value = f(*args)
            out.append(_assemble(cols, np.shape(x), np.shape(value), True))
        return out[0] if single else tuple(out)
    return jac


def jacrev(f, wrt=0):
    """``jacrev(f, wrt)(*args)``: the Jacobian by reverse mode, one pullback per output element
    (the forward sweep runs again for each: its tape is consumed by the reverse sweep)."""
    positions, single = _wrt(f, wrt)

    @_wraps(f)
    def jac(*args):
        for pos in positions:
            _require_array(args[pos])
        value = f(*args)
        rows = [[] for _ in positions]
        for e in _basis(value):
            _, pull = vjp(f, *args)
            cts = pull(e)
            for r, pos in zip(rows, positions):
                r.append(cts[pos] if cts[pos] is not None else zeros_like(args[pos]))
        out = [_assemble(r, np.shape(args[pos]), np.shape(value), False)
               for r, pos in zip(rows, positions)]
        return out[0] if single else tuple(out)
    return jac


def jacobian(f, wrt=0):
    """The Jacobian of ``f``, by forward mode when the inputs are smaller than the output and by
    reverse mode otherwise."""
    positions, _ = _wrt(f, wrt)
    fwd, rev = jacfwd(f, wrt), jacrev(f, wrt)

    @_wraps(f)
    def jac(*args):
        n_in = sum(_flat_size(args[p]) for p in positions)
        n_out = _flat_size(f(*args))
        return fwd(*args) if n_in < n_out else rev(*args)
    return jac


# -- second order ---------------------------------------------------------------------------------
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
    make = _GRAD_FUNCTIONS.get(key)
    if make is None:
        make = _GRAD_FUNCTIONS[key] = _grad_factory(fn, mask, kinds, params, held, single)
    return make(*lead)


def _def_origin(fn):
    from .api import _def_origin as origin
    return origin(fn)


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


def hvp(f, wrt=0):
    """``hvp(f, wrt)(*args, v)``: the Hessian of the scalar ``f`` (w.r.t. argument ``wrt``) times
    ``v``, by forward mode over the generated reverse sweep."""
    positions, single = _wrt(f, wrt)
    if not single:
        from .api import caller_origin
        raise WrtError("hvp takes a single wrt (an index or a name)", origin=caller_origin(),
                       fix="use hvp(f, wrt=0), or s2sad.hessian for the full Hessian")

    @_wraps(f)
    def hv(*args):
        *primal, v = args
        g = grad_function(f, wrt, *primal)
        tans = [None] * len(primal)
        tans[positions[0]] = v
        try:
            return jvp(g, tuple(primal), tuple(tans))[1]
        except OpaqueCalleeError as e:
            if not any(f"s2sad.runtime.{h} has no" in e.message for h in ("call", "pull")):
                raise
            # forward mode over the reverse sweep meets a call resolved at run time
            raise UnsupportedSyntaxError(
                "second derivatives through a call s2sad resolves only at run time (a function "
                "defined inside the function and called there, a method of a local object, a "
                "function passed in as an argument) are not supported yet",
                origin=e.origin, fix="define the called function at module level and pass it "
                "what it reads as arguments; first derivatives (grad, jvp, vjp, jacobian) of "
                "this function work") from None
    return hv


def hessian(f, wrt=0):
    """``hessian(f, wrt)(*args)``: the Hessian of a scalar function, shape x.shape + x.shape."""
    positions, _ = _wrt(f, wrt)
    h = hvp(f, wrt)

    @_wraps(f)
    def hess(*args):
        _scalar_seed(f(*args), get_function(_concrete(f, args)))
        x = args[positions[0]]
        cols = [h(*args, e) for e in _basis(x)]
        return _assemble(cols, np.shape(x), np.shape(x), True)
    return hess


