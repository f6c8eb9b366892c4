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
from .errors import S2SADError, WrtError
from .frontend.source import get_function

__all__ = ["jvp", "forward_source", "jacfwd", "jacrev", "jacobian", "hessian", "hvp",
           "grad_function"]


# -- forward mode ---------------------------------------------------------------------------------
def jvp(f, primals, tangents):
    """``(f(*primals), J tangents)``: ``primals`` and ``tangents`` are tuples with one entry per
    positional argument (``None``, or zeros, for arguments that carry no tangent)."""
    primals, tangents = tuple(primals), tuple(tangents)
    f = _concrete(f, primals)
    fn = get_function(f)
    if len(tangents) != len(primals):
        raise TypeError(f"jvp: {len(tangents)} tangent(s) for {len(primals)} argument(s) of "
                        f"{fn.__qualname__}")
    self_ = getattr(f, "__self__", None) if inspect.ismethod(f) else None
    if self_ is not None:
        primals, tangents = (self_,) + primals, (None,) + tangents
    value, tout = _run(lambda: _jvp_python(fn, primals, tangents, top=True))
    return value, materialize(tout, value)


def _concrete(f, args):
    """``f`` itself, or for a gradient function s2sad returned (``s2sad.grad(g)``) the generated,
    readable gradient function that s2sad can differentiate (:func:`grad_function`)."""
    from .api import _concrete as concrete
    return concrete(f, tuple(args))


def _names(f):
    """Names of the positional parameters of ``f`` (those of the underlying function for a
    gradient function s2sad returned)."""
    from .api import _grad_of
    inner = _grad_of(f)
    if inner is not None:
        return _names(inner[0])
    fn = get_function(f)
    names = [p.name for p in inspect.signature(fn).parameters.values()
             if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return names[1:] if inspect.ismethod(f) else names


def _wrt(f, wrt):
    """(positions of the positional arguments named by ``wrt``, whether ``wrt`` was single)."""
    from .api import _grad_of
    inner = _grad_of(f)
    label = f"the gradient of {getattr(inner[0], '__qualname__', 'f')}" if inner is not None \
        else get_function(f).__qualname__
    return _positions(label, _names(f), wrt)


def _positions(label, names, wrt):
    single = not isinstance(wrt, (tuple, list))
    out = []
    for w in ([wrt] if single else list(wrt)):
        if isinstance(w, bool) or not isinstance(w, (int, str)):
            raise WrtError(f"wrt={w!r}: give a parameter index or name")
        if isinstance(w, str):
            if w not in names:
                raise WrtError(f"wrt={w!r} is not a parameter of {label}{tuple(names)}",
                               fix=f"use one of {names}")
            w = names.index(w)
        elif not -len(names) <= w < len(names):
            raise WrtError(f"wrt={w} but {label} has {len(names)} positional "
                           f"parameter(s): {names}")
        out.append(w % len(names))
    return out, single


def forward_source(f, wrt=0, *example_args):
    """The generated forward-mode module for ``f`` with respect to ``wrt`` (an index, a name, or
    a tuple of them).  Built for array arguments unless example arguments are given."""
    from .api import _grad_of
    if _grad_of(f) is not None:
        if not example_args:
            raise S2SADError("forward_source of a gradient function s2sad returned: give example "
                             "arguments (its generated code is specialised on their kinds)",
                             fix="forward_source(s2sad.grad(f), 0, *args)")
        f = _concrete(f, example_args)
    fn = get_function(f)
    positions, _ = _wrt(f, wrt)
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
    from .errors import WrtError
    raise WrtError(
        f"jacobian/hessian work on float or array inputs and outputs, not a {type(x).__name__}",
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

    @functools.wraps(get_function(f))
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

    @functools.wraps(get_function(f))
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

    @functools.wraps(get_function(f))
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
    f = _concrete(f, example_args)
    fn = get_function(f)
    positions, single = _wrt(f, wrt)
    sig = inspect.signature(fn)
    params = list(sig.parameters)
    if inspect.ismethod(f) or runtime._data_cells(fn) or \
            any(p.kind != p.POSITIONAL_OR_KEYWORD for p in sig.parameters.values()) or \
            len(example_args) != len(params):
        raise S2SADError(f"second derivatives of {fn.__qualname__}: s2sad builds them for plain "
                         f"functions called with all their positional arguments (no closures over "
                         f"data, methods, *args/**kwargs, or defaults left out)",
                         fix="wrap the call in a plain function of the arguments")
    mask = tuple(i in positions for i in range(len(params)))
    kinds = tuple(runtime.kind_of(a) for a in example_args)
    key = (fn.__code__, id(fn.__globals__), mask, kinds, single)
    g = _GRAD_FUNCTIONS.get(key)
    if g is not None:
        return g
    d = reverse_derivative(fn, mask, kinds)
    name = fn.__name__ if fn.__name__.isidentifier() else "f"
    fwd_name, bwd_name = f"{name}__fwd", f"{name}__bwd"
    o = d.ir.origin
    body = [
        (1, f"_r, _tape = {fwd_name}({', '.join(params)})", o),
        (1, f"_g = {bwd_name}(_tape, 1.0)", o),
        (1, "return _g[0]" if single else "return _g", o),
    ]
    triples = [(0, f"# s2sad: the gradient of {fn.__qualname__} ({o.short()}) with "
                   f"respect to {', '.join(d.wrt)}", None), (0, "", None),
               (0, f"def {name}__grad({', '.join(params)}):", None)] + body
    lines = T.format_lines(triples)
    line_origins = {i + 1: t[2] for i, t in enumerate(triples) if t[2] is not None}
    namespace = {fwd_name: d.fwd, bwd_name: d.bwd}
    mod = GeneratedModule(f"{name}_grad", "\n".join(lines) + "\n", namespace, line_origins)
    g = mod[f"{name}__grad"]
    _GRAD_FUNCTIONS[key] = g
    return g


def hvp(f, wrt=0):
    """``hvp(f, wrt)(*args, v)``: the Hessian of the scalar ``f`` (w.r.t. argument ``wrt``) times
    ``v``, by forward mode over the generated reverse sweep."""
    positions, single = _wrt(f, wrt)
    if not single:
        raise WrtError("hvp takes a single wrt (an index or a name)")

    @functools.wraps(get_function(f))
    def hv(*args):
        *primal, v = args
        g = grad_function(f, wrt, *primal)
        tans = [None] * len(primal)
        tans[positions[0]] = v
        return jvp(g, tuple(primal), tuple(tans))[1]
    return hv


def hessian(f, wrt=0):
    """``hessian(f, wrt)(*args)``: the Hessian of a scalar function, shape x.shape + x.shape."""
    positions, _ = _wrt(f, wrt)
    h = hvp(f, wrt)
    fn = get_function(f)

    @functools.wraps(fn)
    def hess(*args):
        _scalar_seed(f(*args), fn)
        x = args[positions[0]]
        cols = [h(*args, e) for e in _basis(x)]
        return _assemble(cols, np.shape(x), np.shape(x), True)
    return hess


