"""The transforms built from both modes.

* :func:`jacfwd`, :func:`jacrev`, :func:`jacobian` -- full Jacobians, column by column (forward) or
  row by row (reverse); ``jacobian`` picks the cheaper one from the input and output sizes.
* :func:`hvp` -- Hessian-vector products, forward over reverse: the forward emitter differentiates
  the generated reverse sweeps (``f__fwd``/``f__bwd``) themselves.
* :func:`hessian` -- the full Hessian, one :func:`hvp` per input element.

Also importable from here: :func:`jvp` -- ``(value, J v)`` by the generated forward code
(``f__jvp``) -- and :func:`forward_source` -- the generated forward-mode module, as text (``s2sad
dump --mode forward``), both defined in :mod:`.api`; :func:`grad_function` -- a Python function
(generated, with readable source) computing the gradient of ``f``, which s2sad can differentiate
again, in either mode (``grad(grad(f))``), defined in :mod:`.callables`.
"""
import functools

import numpy as np

from .api import _scalar_seed, forward_source, jvp, vjp  # jvp, forward_source: re-exported
from .callables import _concrete, _per_call, _wrt, grad_function  # grad_function: re-exported
from .runtime.forward import zeros_like
from .errors import (RUNTIME_CALL_SECOND_ORDER, OpaqueCalleeError, UnsupportedSyntaxError, WrtError,
                     caller_origin)
from .frontend.source import get_function

__all__ = ["jvp", "forward_source", "jacfwd", "jacrev", "jacobian", "hessian", "hvp",
           "grad_function"]


def _wraps(f):
    """functools.wraps for the functions the transforms return (names and docs of ``f``'s
    Python function where it has one)."""
    try:
        target = _concrete(f, ()) if _per_call(f) is None else f
        return functools.wraps(get_function(target) if _per_call(f) is None else target,
                               updated=())
    except Exception:
        return lambda g: g


def _portable(call, make, f, **options):
    """``call`` (the function a transform returns) as an object that runs it and pickles as
    ``make(f, **options)`` (pickle looked ``call`` up by the name it took from ``f`` and found
    ``f``: "not the same object"), with ``call``'s name and docs."""
    from . import pickling
    from .runtime.transformed import Transformed
    w = Transformed(call, lambda: pickling.reduce(None, make, f, options))
    for k in ("__module__", "__name__", "__qualname__", "__doc__"):
        if hasattr(call, k):
            setattr(w, k, getattr(call, k))
    return w


# -- Jacobians ------------------------------------------------------------------------------------
def _flat_size(x):
    return int(np.size(x))


def _require_array(x):
    """Jacobians are arrays over array (or float) inputs and outputs."""
    if isinstance(x, (float, int, complex)) or (hasattr(x, "shape") and hasattr(x, "dtype")):
        return
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
    return _portable(jac, jacfwd, f, wrt=wrt)


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
    return _portable(jac, jacrev, f, wrt=wrt)


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
    return _portable(jac, jacobian, f, wrt=wrt)


# -- second order ---------------------------------------------------------------------------------
def _with_defaults(f, args):
    """``args`` followed by the defaults of the parameters they leave out, where every parameter
    is positional-or-keyword (the generated gradient :func:`grad_function` builds takes them all;
    the defaults are constants of the call, not differentiated)."""
    import inspect
    concrete = _concrete(f, tuple(args))
    params = list(inspect.signature(get_function(concrete)).parameters.values())
    if inspect.ismethod(concrete):
        params = params[1:]
    if len(args) >= len(params) or any(p.kind != p.POSITIONAL_OR_KEYWORD for p in params) or \
            any(p.default is p.empty for p in params[len(args):]):
        return list(args)
    return list(args) + [p.default for p in params[len(args):]]


def hvp(f, wrt=0):
    """``hvp(f, wrt)(*args, v)``: the Hessian of the scalar ``f`` (w.r.t. argument ``wrt``) times
    ``v``, by forward mode over the generated reverse sweep."""
    positions, single = _wrt(f, wrt)
    if not single:
        raise WrtError("hvp takes a single wrt (an index or a name)", origin=caller_origin(),
                       fix="use hvp(f, wrt=0), or s2sad.hessian for the full Hessian")

    @_wraps(f)
    def hv(*args):
        *primal, v = args
        primal = _with_defaults(f, primal)
        g = grad_function(f, wrt, *primal)
        tans = [None] * len(primal)
        tans[positions[0]] = v
        try:
            return jvp(g, tuple(primal), tuple(tans))[1]
        except OpaqueCalleeError as e:
            if not any(f"s2sad.runtime.{h} has no" in e.message for h in ("call", "call_method", "pull")):
                raise
            # forward mode over the reverse sweep meets a call resolved at run time
            message, fix = RUNTIME_CALL_SECOND_ORDER
            raise UnsupportedSyntaxError(message, origin=e.origin, fix=fix) from None
    return _portable(hv, hvp, f, wrt=wrt)


def hessian(f, wrt=0):
    """``hessian(f, wrt)(*args)``: the Hessian of a scalar function, shape x.shape + x.shape."""
    positions, single = _wrt(f, wrt)
    if not single:
        raise WrtError("hessian takes a single wrt (an index or a name): the Hessian with respect "
                       "to one argument", origin=caller_origin(),
                       fix="use hessian(f, wrt=0), hessian(f, wrt=1)... for each argument's "
                           "block, or pack the arguments into one array argument")
    h = hvp(f, wrt)

    @_wraps(f)
    def hess(*args):
        _scalar_seed(f(*args), get_function(_concrete(f, args)))
        args = tuple(_with_defaults(f, args))
        if positions[0] >= len(args):
            raise WrtError(f"hessian: wrt={wrt!r} names argument {positions[0]}, and the call "
                           f"gives {len(args)} argument(s)", origin=caller_origin(),
                           fix="pass that argument in the call")
        x = args[positions[0]]
        cols = [h(*args, e) for e in _basis(x)]
        return _assemble(cols, np.shape(x), np.shape(x), True)
    return _portable(hess, hessian, f, wrt=wrt)
