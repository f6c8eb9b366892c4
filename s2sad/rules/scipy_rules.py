"""SciPy derivative table (loaded only once the user's code has imported SciPy).

``scipy.special`` functions are ufuncs; their templates follow the NumPy table's conventions.
"""
import scipy.linalg as _sl
import scipy.special as _sp

from . import adjoints as _adjoints
from .numpy_rules import UFUNC, UNARY, BINARY
from .registry import defrule, defzero

A = {"_adj": _adjoints, "_sp": _sp, "_sl": _sl}


def _fn(mod, name):
    return getattr(mod, name, None)


def special(name, d, complex_ok=False):
    """Elementwise unary special function with derivative expression ``d`` (in x and ans)."""
    fn = _fn(_sp, name)
    if fn is None:
        return
    vjp = f"g * _rt.cj({d})" if complex_ok else f"g * ({d})"
    defrule(fn, UNARY, vjp={"x": vjp}, jvp={"x": f"t * ({d})"}, forbid=UFUNC, ns=A)


# -- scipy.special ----------------------------------------------------------------------------------
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

# -- scipy.linalg -----------------------------------------------------------------------------------
_NOWRITE = {"overwrite_a": False, "overwrite_b": False}
defrule(_sl.solve_triangular, "a, b, trans=0, lower=False, unit_diagonal=False, "
        "overwrite_b=False, check_finite=True",
        joint=(("a", "b"), "_adj.solve_triangular(g, ans, a, b, trans, lower, unit_diagonal)"),
        forbid={"overwrite_b": False}, ns=A)
defrule(_sl.cho_factor, "a, lower=False, overwrite_a=False, check_finite=True",
        vjp={"a": "_adj.cho_factor(g, ans, a, lower)"}, kind="any",
        forbid={"overwrite_a": False}, ns=A)
defrule(_sl.cho_solve, "c_and_lower, b, overwrite_b=False, check_finite=True",
        joint=(("c_and_lower", "b"), "_adj.cho_solve(g, ans, c_and_lower, b)"),
        forbid={"overwrite_b": False}, ns=A)
defrule(_sl.block_diag, "*arrs", vjp={"arrs": "_adj.block_diag(g, arrs)"}, ns=A)
defrule(_sl.cholesky, "a, lower=False, overwrite_a=False, check_finite=True",
        vjp={"a": "_adj.cholesky(g, ans, a, not lower)"}, forbid={"overwrite_a": False}, ns=A)
defrule(_sl.inv, "a, overwrite_a=False, check_finite=True",
        vjp={"a": "_adj.inv(g, ans)"}, jvp={"a": "-(ans @ t @ ans)"},
        forbid={"overwrite_a": False}, ns=A)
defrule(_sl.det, "a, overwrite_a=False, check_finite=True", vjp={"a": "_adj.det(g, ans, a)"},
        forbid={"overwrite_a": False}, ns=A)
defrule(_sl.solve, "a, b, lower=False, overwrite_a=False, overwrite_b=False, check_finite=True, "
        "assume_a=None, transposed=False",
        joint=(("a", "b"), "_adj.solve(g, ans, a, b)"),
        forbid={"overwrite_a": False, "overwrite_b": False, "transposed": False,
                "assume_a": None}, ns=A)
defrule(_sl.expm, "A", vjp={"A": "_adj.expm(g, A)"}, jvp={"A": "_adj.expm_tangent(t, A)"}, ns=A)
