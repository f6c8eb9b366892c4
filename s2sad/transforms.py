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
import itertools

import numpy as np

from . import runtime
from .api import _Spec, _run, _scalar_seed, _finish_grads
from .cache import CACHE, reverse_derivative
from .codegen import text as T
from .codegen.build_forward import forward_derivative
from .codegen.forward import _jvp_python, materialize, zeros_like
from .codegen.load import GeneratedModule
from .errors import NonScalarOutputError, WrtError
from .frontend.source import get_function

__all__ = ["jvp", "forward_source", "jacfwd", "jacrev", "jacobian", "hessian", "hvp",
           "grad_function"]


# -- forward mode ---------------------------------------------------------------------------------
def jvp(f, primals, tangents):
    """``(f(*primals), J tangents)``: ``primals`` and ``tangents`` are tuples with one entry per
    positional argument (``None``, or zeros, for arguments that carry no tangent)."""
    fn = get_function(f)
    primals, tangents = tuple(primals), tuple(tangents)
    if len(tangents) != len(primals):
        raise TypeError(f"jvp: {len(tangents)} tangent(s) for {len(primals)} argument(s) of "
                        f"{fn.__qualname__}")
    self_ = getattr(f, "__self__", None) if inspect.ismethod(f) else None
    if self_ is not None:
        primals, tangents = (self_,) + primals, (None,) + tangents
    value, tout = _run(lambda: _jvp_python(fn, primals, tangents, top=True))
    return value, materialize(tout, value)


def forward_source(f, wrt=0, *example_args):
    """The generated forward-mode module for ``f`` with respect to ``wrt`` (an index, a name, or
    a tuple of them).  Built for array arguments unless example arguments are given."""
    spec = _Spec(f, wrt)
    n = len(spec.params)
    mask = tuple(i in spec.wrt for i in range(n))
    if example_args:
        args = spec.bind(example_args, {})
        kinds = tuple(runtime.kind_of(a) for a in args)
    else:
        kinds = ("a",) * n
    return forward_derivative(spec.pyfunc, mask, kinds).source


# -- Jacobians ------------------------------------------------------------------------------------
def _flat_size(x):
    return int(np.size(x))


def _basis(x):
    """Unit tangents for every element of ``x`` (a float or an array), in C order."""
    if isinstance(x, (float, int)):
        yield 1.0
        return
    x = np.asarray(x)
    for k in range(x.size):
        e = np.zeros(x.shape, dtype=x.dtype if x.dtype.kind in "fc" else np.float64)
        e.flat[k] = 1.0
        yield e


def _wrt_positions(spec):
    return [i - spec.offset for i in spec.wrt]


def _assemble(cols, in_shape, out_shape, by_column):
    """Stack per-input (columns) or per-output (rows) slices into out_shape + in_shape."""
    cols = [np.asarray(c) for c in cols]
    if by_column:
        arr = np.stack(cols, axis=-1) if cols else np.zeros(out_shape + (0,))
        return arr.reshape(tuple(out_shape) + tuple(in_shape))
    arr = np.stack(cols, axis=0) if cols else np.zeros((0,) + in_shape)
    return arr.reshape(tuple(out_shape) + tuple(in_shape))


def _result(spec, parts):
    return parts[0] if spec.single else tuple(parts)


def jacfwd(f, wrt=0):
    """``jacfwd(f, wrt)(*args)``: the Jacobian by forward mode, one ``jvp`` per input element.
    Shape: output shape + input shape (a tuple of Jacobians for a tuple ``wrt``)."""
    spec = _Spec(f, wrt)

    @functools.wraps(spec.pyfunc)
    def jac(*args):
        out = []
        for pos in _wrt_positions(spec):
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
        return _result(spec, out)
    return jac


def jacrev(f, wrt=0):
    """``jacrev(f, wrt)(*args)``: the Jacobian by reverse mode, one pullback per output element."""
    spec = _Spec(f, wrt)

    @functools.wraps(spec.pyfunc)
    def jac(*args, **kwargs):
        full = spec.bind(args, kwargs)
        d = spec.derivative(full, spec.wrt)
        value, tape = _run(d.fwd, *full)
        rows = [[] for _ in spec.wrt]
        for e in _basis(value):
            # the tape is consumed by the reverse sweep (stacks are popped): record it again
            value, tape = _run(d.fwd, *full)
            grads = _finish_grads(_run(d.bwd, tape, e), full, spec.wrt)
            for r, g in zip(rows, grads):
                r.append(g)
        out = [_assemble(r, np.shape(full[i]), np.shape(value), False)
               for r, i in zip(rows, spec.wrt)]
        return _result(spec, out)
    return jac


def jacobian(f, wrt=0):
    """The Jacobian of ``f``, by forward mode when the inputs are smaller than the output and by
    reverse mode otherwise."""
    spec = _Spec(f, wrt)
    fwd, rev = jacfwd(f, wrt), jacrev(f, wrt)

    @functools.wraps(spec.pyfunc)
    def jac(*args):
        n_in = sum(_flat_size(args[p]) for p in _wrt_positions(spec))
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
    spec = _Spec(f, wrt)
    args = spec.bind(example_args, {})
    mask = tuple(i in spec.wrt for i in range(len(args)))
    kinds = tuple(runtime.kind_of(a) for a in args)
    key = (spec.pyfunc.__code__, spec.pyfunc.__closure__, id(spec.pyfunc.__globals__), mask, kinds,
           spec.single)
    g = _GRAD_FUNCTIONS.get(key)
    if g is not None:
        return g
    d = reverse_derivative(spec.pyfunc, mask, kinds)
    name = spec.pyfunc.__name__ if spec.pyfunc.__name__.isidentifier() else "f"
    params = list(spec.params)
    fwd_name, bwd_name = f"{name}__fwd", f"{name}__bwd"
    o = d.ir.origin
    body = [
        (1, f"_r, _tape = {fwd_name}({', '.join(params)})", o),
        (1, f"_g = {bwd_name}(_tape, 1.0)", o),
    ]
    if spec.single:
        body.append((1, "return _g[0]", o))
    else:
        body.append((1, "return _g", o))
    triples = [(0, f"# s2sad: the gradient of {spec.pyfunc.__qualname__} ({o.short()}) with "
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
    spec = _Spec(f, wrt)
    if not spec.single:
        raise WrtError("hvp takes a single wrt (an index or a name)")

    @functools.wraps(spec.pyfunc)
    def hv(*args):
        *primal, v = args
        full = spec.bind(tuple(primal), {})
        g = grad_function(f, wrt, *primal)
        pos = spec.wrt[0]
        tans = [None] * len(full)
        tans[pos] = v
        _, t = jvp(g, tuple(full[spec.offset:]) if spec.offset else tuple(full),
                   tuple(tans[spec.offset:]) if spec.offset else tuple(tans))
        return t
    return hv


def hessian(f, wrt=0):
    """``hessian(f, wrt)(*args)``: the Hessian of a scalar function, shape x.shape + x.shape."""
    spec = _Spec(f, wrt)
    h = hvp(f, wrt)

    @functools.wraps(spec.pyfunc)
    def hess(*args):
        value = f(*args)
        _scalar_seed(value, spec.pyfunc)
        x = args[_wrt_positions(spec)[0]]
        cols = [h(*args, e) for e in _basis(x)]
        return _assemble(cols, np.shape(x), np.shape(x), True)
    return hess


CACHE, get_function, itertools, zeros_like, NonScalarOutputError  # noqa: B018
