"""``scipy.special``: elementwise special functions (one line each: the name and f'(x)), ``xlogy``,
``polygamma``, ``logsumexp``, ``softmax``, ``log_softmax``.

Loaded only once the user's code has imported SciPy.  The functions are ufuncs; their templates
follow the NumPy table's conventions.
"""
import numpy as np
import scipy.special as _sp

from ... import runtime as _rt
from ..adjoints import BINARY, UFUNC, UNARY, A, _flag, asarray, expand, export, like, ndim, \
    norm_axes, xp
from ..registry import defrule, defzero

A = dict(A, _sp=_sp)


def _fn(mod, name):
    return getattr(mod, name, None)


def special(name, d, complex_ok=False):
    """Elementwise unary special function with derivative expression ``d`` (in x and ans)."""
    fn = _fn(_sp, name)
    if fn is None:
        return
    vjp = f"g * _rt.cj({d})" if complex_ok else f"g * ({d})"
    defrule(fn, UNARY, vjp={"x": vjp}, jvp={"x": f"t * ({d})"}, forbid=UFUNC, ns=A)



#        name        f'(x)
special("expit",     "ans * (1 - ans)")
special("logit",     "1 / (x * (1 - x))")
special("erf",       "(2 / math.sqrt(math.pi)) * np.exp(-x * x)", complex_ok=True)
special("erfc",      "(-2 / math.sqrt(math.pi)) * np.exp(-x * x)", complex_ok=True)
special("erfinv",    "(math.sqrt(math.pi) / 2) * np.exp(ans * ans)")
special("erfcinv",   "(-math.sqrt(math.pi) / 2) * np.exp(ans * ans)")
special("ndtr",      "np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)")
special("ndtri",     "math.sqrt(2 * math.pi) * np.exp(0.5 * ans * ans)")
special("log_ndtr",  "np.exp(-0.5 * x * x - ans) / math.sqrt(2 * math.pi)")
special("log_expit", "1 - _sp.expit(x)")
special("gammaln",   "_sp.digamma(x)")
special("gamma",     "ans * _sp.digamma(x)")
special("digamma",   "_sp.polygamma(1, x).astype(np.result_type(x))")
special("psi",       "_sp.polygamma(1, x).astype(np.result_type(x))")
special("i0",        "_sp.i1(x)")
special("i0e",       "_sp.i1e(x) - np.sign(x) * ans")
special("i1",        "_sp.i0(x) - ans / x")
special("i1e",       "_sp.i0e(x) - ans * (np.sign(x) + 1 / x)")
special("dawsn",     "1 - 2 * x * ans")
special("expm1",     "ans + 1", complex_ok=True)
special("log1p",     "1 / (1 + x)", complex_ok=True)
special("exprel",    "np.where(x == 0, 0.5, (x * np.exp(x) - np.expm1(x)) / (x * x + (x == 0)))")
special("entr",      "-np.log(x) - 1")
special("sinc",      "_adj.sinc(x)") if hasattr(_sp, "sinc") else None

defrule(_sp.xlogy, BINARY,
        vjp={"x1": "_rt.unbroadcast(g * np.log(x2), x1)",
             "x2": "_rt.unbroadcast(g * x1 / x2, x2)"},
        jvp={"x1": "t * np.log(x2)", "x2": "t * x1 / x2"}, forbid=UFUNC, ns=A)
defrule(_sp.xlog1py, BINARY,
        vjp={"x1": "_rt.unbroadcast(g * np.log1p(x2), x1)",
             "x2": "_rt.unbroadcast(g * x1 / (1 + x2), x2)"},
        jvp={"x1": "t * np.log1p(x2)", "x2": "t * x1 / (1 + x2)"}, forbid=UFUNC, ns=A)
defrule(_sp.polygamma, BINARY, vjp={"x2": "_rt.unbroadcast(g * _sp.polygamma(x1 + 1, x2), x2)"},
        jvp={"x2": "t * _sp.polygamma(x1 + 1, x2)"}, forbid=UFUNC, ns=A)
defrule(_sp.logsumexp, "a, axis=None, b=None, keepdims=False, return_sign=False",
        vjp={"a": "_adj.logsumexp(g, ans, a, axis, b, keepdims, 0)",
             "b": "_adj.logsumexp(g, ans, a, axis, b, keepdims, 1)"},
        jvp={"a": "_adj.logsumexp_tangent(t, ans, a, axis, b, keepdims, 0)",
             "b": "_adj.logsumexp_tangent(t, ans, a, axis, b, keepdims, 1)"},
        forbid={"return_sign": False}, ns=A)
defrule(_sp.softmax, "x, axis=None", vjp={"x": "_adj.softmax(g, ans, x, axis)"},
        jvp={"x": "ans * (t - np.sum(ans * t, axis=axis, keepdims=True))"}, ns=A)
defrule(_sp.log_softmax, "x, axis=None", vjp={"x": "_adj.log_softmax(g, ans, x, axis)"},
        jvp={"x": "t - np.sum(np.exp(ans) * t, axis=axis, keepdims=True)"}, ns=A)
defzero(*[f for f in (_fn(_sp, n) for n in ("comb", "perm", "factorial", "factorial2"))
          if f is not None])


# -- helpers the templates call --------------------------------------------------------------------
def logsumexp(g, ans, a, axis=None, b=None, keepdims=False, which=0):
    """Adjoint of ``scipy.special.logsumexp`` for ``a`` (which=0) or ``b`` (which=1)."""
    m = xp(a)
    a_ = asarray(a)
    ge = expand(g, a_.shape if b is None else np.broadcast_shapes(a_.shape, np.shape(b)),
                axis, keepdims, like=a_)
    le = expand(ans, a_.shape if b is None else np.broadcast_shapes(a_.shape, np.shape(b)),
                axis, keepdims, like=a_)
    e = m.exp(a_ - le)
    if which == 1:
        return _rt.unbroadcast(ge * e, b)
    if b is not None:
        e = e * b
    return _rt.unbroadcast(ge * e, a)


def softmax(g, ans, x, axis=None):
    gs = g * ans
    ax = norm_axes(axis, ndim(ans))
    return like(gs - ans * gs.sum(axis=ax, keepdims=True), x)


def log_softmax(g, ans, x, axis=None):
    m = xp(ans)
    ax = norm_axes(axis, ndim(ans))
    return like(g - m.exp(ans) * asarray(g).sum(axis=ax, keepdims=True), x)


def logsumexp_tangent(t, ans, a, axis=None, b=None, keepdims=False, which=0):
    m = xp(a)
    a_ = asarray(a)
    full = a_.shape if b is None else np.broadcast_shapes(a_.shape, np.shape(b))
    le = expand(ans, full, axis, keepdims, like=a_)
    e = m.exp(a_ - le)
    if which == 0 and b is not None:
        e = e * b
    return (e * t).sum(axis=norm_axes(axis, len(full)), keepdims=_flag(keepdims))


export(globals())
