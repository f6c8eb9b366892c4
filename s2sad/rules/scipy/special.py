"""``scipy.special``: elementwise special functions (one line each: the name and f'(x)), the gamma
and beta families (with the incomplete functions' derivatives in their shape parameters), Bessel
functions (in their argument), exponential integrals, entropies, ``xlogy``, ``polygamma``,
``logsumexp``, ``softmax``, ``log_softmax``.

Loaded only once the user's code has imported SciPy.  The functions are ufuncs; their templates
follow the NumPy table's conventions.  Orders (``v`` of ``jv``, ``n`` of ``expn``, ``polygamma``'s
``n``) carry no derivative: a value that carries one there is refused, never given a zero.

Public helpers other tables rely on (``_adj.<name>``): ``gammainc_da(a, x)`` (dP/da of the
regularized lower incomplete gamma function), ``betainc_da(a, b, x)`` and ``betainc_db(a, b, x)``
(dI/da, dI/db of the regularized incomplete beta function): series and continued fractions
differentiated term by term, accurate to ~1e-12 relative where the function is not tiny.
"""
import numpy as np
import scipy.special as _sp

from ... import runtime as _rt
from ..adjoints import BINARY, UFUNC, UNARY, A, _flag, asarray, cj, expand, export, is_zero, \
    like, ndim, norm_axes, xp
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
special("digamma",   "_adj.like(_sp.polygamma(1, x), x)")
special("psi",       "_adj.like(_sp.polygamma(1, x), x)")
special("loggamma",  "_sp.digamma(x)", complex_ok=True)
special("i0",        "_sp.i1(x)")
special("i0e",       "_sp.i1e(x) - np.sign(x) * ans")
special("i1",        "_sp.i0(x) - ans / x")
special("i1e",       "_sp.i0e(x) - ans * (np.sign(x) + 1 / x)")
special("dawsn",     "1 - 2 * x * ans")
special("expm1",     "ans + 1", complex_ok=True)
special("log1p",     "1 / (1 + x)", complex_ok=True)
special("exprel",    "np.where(x == 0, 0.5, (x * np.exp(x) - np.expm1(x)) / (x * x + (x == 0)))")
special("entr",      "-np.log(x) - 1")
special("erfcx",     "2 * x * ans - 2 / math.sqrt(math.pi)", complex_ok=True)
special("rgamma",    "_adj.rgamma_d(x, ans)", complex_ok=True)
special("exp1",      "-np.exp(-x) / x", complex_ok=True)
special("expi",      "np.exp(x) / x", complex_ok=True)
# Bessel functions of integer order 0 and 1
special("j0",        "-_sp.j1(x)")
special("j1",        "np.where(x == 0, 0.5, _sp.j0(x) - ans / np.where(x == 0, 1, x))")
special("y0",        "-_sp.y1(x)")
special("y1",        "_sp.y0(x) - ans / x")
special("k0",        "-_sp.k1(x)")
special("k0e",       "ans - _sp.k1e(x)")
special("k1",        "-_sp.k0(x) - ans / x")
special("k1e",       "ans - _sp.k0e(x) - ans / x")
# scipy.special.sinc is np.sinc: the NumPy table's rule


def order_special(name, d, complex_ok=False, order="v"):
    """Elementwise ``fn(order, x)``: derivative ``d`` in x only (in order, x and ans); a value
    that carries a derivative into the order is refused (it has no rule)."""
    fn = _fn(_sp, name)
    if fn is None:
        return
    params = f"{order}, x, /" + BINARY[len("x1, x2, /"):]
    vjp = f"_rt.unbroadcast(g * _rt.cj({d}), x)" if complex_ok else f"_rt.unbroadcast(g * ({d}), x)"
    defrule(fn, params, vjp={"x": vjp}, jvp={"x": f"t * ({d})"}, forbid=UFUNC, ns=A)


#             name   f'(x) (d/dx at a fixed order)
order_special("jv",  "(_sp.jv(v - 1, x) - _sp.jv(v + 1, x)) / 2", complex_ok=True)
order_special("yv",  "(_sp.yv(v - 1, x) - _sp.yv(v + 1, x)) / 2", complex_ok=True)
order_special("yn",  "(_sp.yn(n - 1, x) - _sp.yn(n + 1, x)) / 2", order="n")
order_special("iv",  "(_sp.iv(v - 1, x) + _sp.iv(v + 1, x)) / 2", complex_ok=True)
order_special("kv",  "-(_sp.kv(v - 1, x) + _sp.kv(v + 1, x)) / 2", complex_ok=True)
order_special("kve", "ans - (_sp.kve(v - 1, x) + _sp.kve(v + 1, x)) / 2", complex_ok=True)
order_special("expn", "_adj.expn_d(n, x)", order="n")
# ive(v, z) = iv(v, z) exp(-|Re z|) is not holomorphic: its own helpers
defrule(_sp.ive, "v, x, /" + BINARY[len("x1, x2, /"):],
        vjp={"x": "_rt.unbroadcast(_adj.ive_adjoint(g, ans, v, x), x)"},
        jvp={"x": "_adj.ive_tangent(t, ans, v, x)"}, forbid=UFUNC, ns=A)

# the gamma and beta families
TERNARY = "a, b, x, /" + BINARY[len("x1, x2, /"):]
BETA = "a, b, /" + BINARY[len("x1, x2, /"):]
GAMMA2 = "a, x, /" + BINARY[len("x1, x2, /"):]
UB = "_rt.unbroadcast"
defrule(_sp.beta, BETA,
        vjp={"a": f"{UB}(g * ans * (_sp.digamma(a) - _sp.digamma(a + b)), a)",
             "b": f"{UB}(g * ans * (_sp.digamma(b) - _sp.digamma(a + b)), b)"},
        jvp={"a": "t * ans * (_sp.digamma(a) - _sp.digamma(a + b))",
             "b": "t * ans * (_sp.digamma(b) - _sp.digamma(a + b))"}, forbid=UFUNC, ns=A)
defrule(_sp.betaln, BETA,
        vjp={"a": f"{UB}(g * (_sp.digamma(a) - _sp.digamma(a + b)), a)",
             "b": f"{UB}(g * (_sp.digamma(b) - _sp.digamma(a + b)), b)"},
        jvp={"a": "t * (_sp.digamma(a) - _sp.digamma(a + b))",
             "b": "t * (_sp.digamma(b) - _sp.digamma(a + b))"}, forbid=UFUNC, ns=A)
_DBETA_DX = "np.exp(_sp.xlogy(a - 1, x) + _sp.xlog1py(b - 1, -x) - _sp.betaln(a, b))"
defrule(_sp.betainc, TERNARY,
        vjp={"a": f"{UB}(g * _adj.betainc_da(a, b, x), a)",
             "b": f"{UB}(g * _adj.betainc_db(a, b, x), b)",
             "x": f"{UB}(g * {_DBETA_DX}, x)"},
        jvp={"a": "t * _adj.betainc_da(a, b, x)", "b": "t * _adj.betainc_db(a, b, x)",
             "x": f"t * {_DBETA_DX}"}, forbid=UFUNC, ns=A)
if _fn(_sp, "betaincc") is not None:
    defrule(_sp.betaincc, TERNARY,
            vjp={"a": f"{UB}(-g * _adj.betainc_da(a, b, x), a)",
                 "b": f"{UB}(-g * _adj.betainc_db(a, b, x), b)",
                 "x": f"{UB}(-g * {_DBETA_DX}, x)"},
            jvp={"a": "-t * _adj.betainc_da(a, b, x)", "b": "-t * _adj.betainc_db(a, b, x)",
                 "x": f"-t * {_DBETA_DX}"}, forbid=UFUNC, ns=A)
_DGAMMA_DX = "np.exp(_sp.xlogy(a - 1, x) - x - _sp.gammaln(a))"
defrule(_sp.gammainc, GAMMA2,
        vjp={"a": f"{UB}(g * _adj.gammainc_da(a, x), a)", "x": f"{UB}(g * {_DGAMMA_DX}, x)"},
        jvp={"a": "t * _adj.gammainc_da(a, x)", "x": f"t * {_DGAMMA_DX}"}, forbid=UFUNC, ns=A)
defrule(_sp.gammaincc, GAMMA2,
        vjp={"a": f"{UB}(-g * _adj.gammainc_da(a, x), a)", "x": f"{UB}(-g * {_DGAMMA_DX}, x)"},
        jvp={"a": "-t * _adj.gammainc_da(a, x)", "x": f"-t * {_DGAMMA_DX}"}, forbid=UFUNC, ns=A)
defrule(_sp.multigammaln, "a, d", vjp={"a": "_adj.like(g * _adj.multigammaln_d(a, d), a)"},
        jvp={"a": "_adj.tangent_as(t * _adj.multigammaln_d(a, d), ans)"}, ns=A)
defzero(_sp.gammasgn)

# relative entropies
defrule(_sp.rel_entr, BINARY,
        vjp={"x1": f"{UB}(g * (np.log(x1 / x2) + 1), x1)", "x2": f"{UB}(-g * x1 / x2, x2)"},
        jvp={"x1": "t * (np.log(x1 / x2) + 1)", "x2": "-t * x1 / x2"}, forbid=UFUNC, ns=A)
defrule(_sp.kl_div, BINARY,
        vjp={"x1": f"{UB}(g * np.log(x1 / x2), x1)", "x2": f"{UB}(g * (1 - x1 / x2), x2)"},
        jvp={"x1": "t * np.log(x1 / x2)", "x2": "t * (1 - x1 / x2)"}, forbid=UFUNC, ns=A)

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
# logsumexp: a rule (s2sad never looks inside SciPy's array-API code), with b=, axis=, keepdims=
# and return_sign= (the sign of a real result carries no derivative; a complex one's phase does)
_lse_rule = defrule(_sp.logsumexp, "a, axis=None, b=None, keepdims=False, return_sign=False",
        vjp={"a": "_adj.logsumexp(g, ans, a, axis, b, keepdims, 0, return_sign)",
             "b": "_adj.logsumexp(g, ans, a, axis, b, keepdims, 1, return_sign)"},
        jvp={"a": "_adj.logsumexp_tangent(t, ans, a, axis, b, keepdims, 0, return_sign)",
             "b": "_adj.logsumexp_tangent(t, ans, a, axis, b, keepdims, 1, return_sign)"},
        kind="any", ns=A)
_lse_rule.array_unless = ("return_sign",)      # (an array, or a tuple with return_sign=True)
defrule(_sp.softmax, "x, axis=None", vjp={"x": "_adj.softmax(g, ans, x, axis)"},
        jvp={"x": "ans * (t - np.sum(ans * t, axis=axis, keepdims=True))"}, ns=A)
defrule(_sp.log_softmax, "x, axis=None", vjp={"x": "_adj.log_softmax(g, ans, x, axis)"},
        jvp={"x": "t - np.sum(np.exp(ans) * t, axis=axis, keepdims=True)"}, ns=A)

# factorial, factorial2, factorialk, comb, perm: with exact=False, real (or complex) functions
# through the gamma function; 0 where SciPy returns 0 (a negative n for extend='zero', k outside
# [0, N] for comb and perm), and 0 for exact=True (integers).  comb(repetition=True) is refused.
def _params(fn):
    import inspect
    return str(inspect.signature(fn))[1:-1]


def _factorial_rule(fn, k):
    params = _params(fn)
    ext = "extend" if "extend" in params else "'zero'"
    d = f"_adj.factorialx_d(ans, n, exact, {ext}, {k})"
    defrule(fn, params, vjp={"n": f"_adj.like(g * _rt.cj({d}), n)"},
            jvp={"n": f"_adj.tangent_as(t * {d}, ans)"}, ns=A, name=f"scipy.special.{fn.__name__}")


for _name, _k in (("factorial", "1"), ("factorial2", "2"), ("factorialk", "k")):
    if _fn(_sp, _name) is not None:
        _factorial_rule(_fn(_sp, _name), _k)
for _name in ("comb", "perm"):
    _f = _fn(_sp, _name)
    if _f is not None:
        _d = "_adj.{}_d(ans, N, k, exact, {!r})".format
        defrule(_f, _params(_f),
                vjp={p: f"_rt.unbroadcast(g * _rt.cj({_d(_name, p)}), {p})" for p in ("N", "k")},
                jvp={p: f"_adj.tangent_as(t * {_d(_name, p)}, ans)" for p in ("N", "k")},
                forbid={"repetition": False} if "repetition" in _params(_f) else None, ns=A,
                name=f"scipy.special.{_name}")


# binom(n, k) = Gamma(n+1) / (Gamma(k+1) Gamma(n-k+1)) and poch(z, m) = Gamma(z+m) / Gamma(z):
# analytic functions (SciPy's binom is nan at a negative integer n), so where SciPy returns 0 at a
# pole of a denominator Gamma the derivative is that of the analytic function, not 0
for _name in ("binom", "poch"):
    _f = _fn(_sp, _name)
    if _f is not None:
        _ps = ("x1", "x2")
        defrule(_f, BINARY,
                vjp={p: f"{UB}(g * _adj.{_name}_d(ans, x1, x2, {i}), {p})"
                     for i, p in enumerate(_ps)},
                jvp={p: f"t * _adj.{_name}_d(ans, x1, x2, {i})" for i, p in enumerate(_ps)},
                forbid=UFUNC, ns=A)


def _scipy_names():
    """Rules of SciPy's ufuncs are named ``scipy.special.<name>`` in messages (not ``numpy.``)."""
    from ..registry import _RULES, _key
    for name in dir(_sp):
        fn = getattr(_sp, name, None)
        if isinstance(fn, np.ufunc):
            rule = _RULES.get(_key(fn))
            if rule is not None and rule.name.startswith("numpy."):
                rule.name = f"scipy.special.{fn.__name__}"


_scipy_names()

# -- helpers the templates call --------------------------------------------------------------------
def _lse_weights(ans, a, axis, b, keepdims, return_sign):
    """(w, b, full shape): w = exp(a) / sum(b exp(a)), the summands' weights in the full shape
    (times the sign of a real sum when return_sign; holomorphic for complex inputs)."""
    a_ = asarray(a)
    bb = None if b is None else asarray(b, like=a_)
    full = a_.shape if bb is None else np.broadcast_shapes(a_.shape, bb.shape)
    if return_sign:
        r, sgn = ans
        lse = asarray(r, like=a_) + xp(a_).log(asarray(sgn, like=a_) + 0j) \
            if (a_.dtype.kind == "c" or (bb is not None and bb.dtype.kind == "c")) else r
        sgn_e = expand(sgn, full, axis, keepdims, like=a_)
    else:
        lse, sgn_e = ans, None
    le = expand(lse, full, axis, keepdims, like=a_)
    e = xp(a_).exp(a_ - le)
    if sgn_e is not None and e.dtype.kind != "c":
        e = e * sgn_e          # real: sum b exp(a) = sign * exp(r)
    return e, bb, full


def _lse_cotangent(g, ans, return_sign):
    """The cotangent of log(sum b exp(a)) (complex for complex results): from g, or from
    (g_r, g_sign) when return_sign (the sign of a real sum is piecewise constant)."""
    if not return_sign:
        return g
    gr, gs = g if isinstance(g, (tuple, list)) else (g, None)
    sgn = ans[1]
    gr = 0.0 if gr is None else gr
    if gs is None or is_zero(gs) or getattr(asarray(sgn), "dtype", np.dtype(float)).kind != "c":
        return gr
    # log S = r + i arg(S); sign = exp(i arg S): d sign = i sign d(arg S)
    return gr + 1j * (-(cj(asarray(gs)) * sgn).imag)


def logsumexp(g, ans, a, axis=None, b=None, keepdims=False, which=0, return_sign=False):
    """Adjoint of ``scipy.special.logsumexp`` for ``a`` (which=0) or ``b`` (which=1)."""
    e, bb, full = _lse_weights(ans, a, axis, b, keepdims, return_sign)
    gl = _lse_cotangent(g, ans, return_sign)
    if is_zero(gl):
        return 0.0
    ge = expand(gl, full, axis, keepdims, like=e)
    if which == 1:
        return _rt.unbroadcast(ge * cj(e), b)
    if bb is not None:
        e = e * bb
    return _rt.unbroadcast(ge * cj(e), a)


def _special_of(m):
    """The special-function module of array module ``m`` (SciPy's, or CuPy's for CuPy arrays)."""
    if m is np:
        return _sp
    import cupyx.scipy.special as csp
    return csp


def _real_dtype(*xs):
    dt = np.result_type(*[x.dtype if hasattr(x, "dtype") else np.asarray(x).dtype for x in xs])
    return dt if dt.kind == "f" else np.dtype(float)


def rgamma_d(x, ans):
    """d/dx 1/Gamma(x) = -psi(x)/Gamma(x); at the poles of Gamma (x = -n), (-1)^n n!."""
    m = xp(x, ans)
    S = _special_of(m)
    x_ = asarray(x)
    pole = (x_.real <= 0) & (x_ == m.round(x_.real))
    safe = m.where(pole, 0.5, x_)
    n = m.where(pole, -x_.real, 0)
    at_pole = (1 - 2 * (n % 2)) * S.gamma(n + 1)
    out = m.where(pole, at_pole, -asarray(ans) * S.psi(safe))
    return out.astype(np.result_type(x_, ans), copy=False)


def expn_d(n, x):
    """d/dx E_n(x) = -E_{n-1}(x); E_0(x) = exp(-x)/x, so d/dx E_0 = -exp(-x) (x + 1) / x^2."""
    m = xp(n, x)
    S = _special_of(m)
    n_ = asarray(n, like=x)
    x_ = asarray(x, like=n_)
    lower = -S.expn(m.maximum(n_ - 1, 0), x_)
    return m.where(n_ >= 1, lower, -m.exp(-x_) * (x_ + 1) / (x_ * x_))


def _ive_parts(ans, v, x):
    m = xp(ans, x)
    S = _special_of(m)
    x_ = asarray(x, like=ans)
    h = (S.ive(v - 1, x_) + S.ive(v + 1, x_)) / 2        # iv'(x) exp(-|Re x|)
    return h, m.sign(x_.real)


def ive_adjoint(g, ans, v, x):
    """Adjoint of ive(v, x) = iv(v, x) exp(-|Re x|) in x: g conj(h) - sign(Re x) Re(conj(g) ans)."""
    h, s = _ive_parts(ans, v, x)
    return g * cj(h) - s * (cj(asarray(g)) * ans).real


def ive_tangent(t, ans, v, x):
    h, s = _ive_parts(ans, v, x)
    return t * h - s * asarray(t).real * ans


def factorialx_d(out, n, exact=False, extend="zero", k=1):
    """d/dn of ``factorial`` (k=1), ``factorial2`` (k=2) or ``factorialk`` with value ``out``.
    With exact=False they are Gamma(n + 1) (k=1) and, for extend='complex', k^(n/k) Gamma(1 + n/k)
    times a constant: d = out (psi(1 + n/k) + log k) / k.  0 where SciPy returns 0 (extend='zero'
    and n < 0), for exact=True (integers), and for k > 1 with extend='zero' (integers only)."""
    return _factorialx_parts(out, n, exact, extend, k, "d")


def _factorialx_parts(out, n, exact, extend, k, part):
    """``factorialx_d``'s value (part='d'), or its partial derivatives in ``out`` ('out') and
    ``n`` ('n'), for second derivatives."""
    if _flag(exact) or (k != 1 and extend != "complex"):
        return 0.0 * asarray(out)
    n_ = asarray(n)
    m = xp(n_)
    S = _special_of(m)
    out_ = asarray(out, like=n_)
    z = 1 + n_ / k
    with np.errstate(all="ignore"):
        if part == "n":
            r = out_ * S.polygamma(1, z) / (k * k)
        else:
            c = S.psi(z) + (np.log(k) if k != 1 else 0.0)
            c = c / k if k != 1 else c
            r = c if part == "out" else out_ * c
    if extend != "complex":
        r = m.where(n_ < 0, m.zeros_like(r), r)   # SciPy's 0 for n < 0 (nan stays nan)
    return r


def _binomial_parts(out, N, k, exact, which, part, kind):
    """d/dN, d/dk of ``comb`` (kind 'comb': Gamma(N+1) / (Gamma(k+1) Gamma(N-k+1))) or ``perm``
    ('perm': Gamma(N+1) / Gamma(N-k+1)) with value ``out``, 0 outside 0 <= k <= N, where SciPy
    returns 0 (part='d'); their partial derivatives in ``out``, ``N``, ``k`` (second order)."""
    if _flag(exact):
        return 0.0 * asarray(out)
    m = xp(N, k)
    S = _special_of(m)
    N_ = asarray(N)
    k_ = asarray(k, like=N_)
    out_ = asarray(out, like=N_)
    ok = (k_ <= N_) & (N_ >= 0) & (k_ >= 0)
    a, b, c = N_ + 1, N_ - k_ + 1, k_ + 1
    with np.errstate(all="ignore"):
        if part in ("d", "out"):
            if which == "N":
                r = S.psi(a) - S.psi(b)
            else:
                r = S.psi(b) - (S.psi(c) if kind == "comb" else 0)
            if part == "d":
                r = out_ * r
        else:                  # the derivative in N or k of r above (times out)
            p1 = S.polygamma(1, b)
            if which == "N":
                r = S.polygamma(1, a) - p1 if part == "N" else p1
            elif part == "N":
                r = p1
            else:
                r = -p1 - (S.polygamma(1, c) if kind == "comb" else 0)
            r = out_ * r
    return m.where(ok, r, m.zeros_like(r))


def comb_d(out, N, k, exact=False, which="N"):
    """d/dN (which='N') or d/dk of ``scipy.special.comb(N, k, exact=False)`` with value ``out``:
    out (psi(N+1) - psi(N-k+1)), out (psi(N-k+1) - psi(k+1)); 0 outside 0 <= k <= N."""
    return _binomial_parts(out, N, k, exact, which, "d", "comb")


def perm_d(out, N, k, exact=False, which="N"):
    """d/dN, d/dk of ``scipy.special.perm(N, k, exact=False)``: out (psi(N+1) - psi(N-k+1)),
    out psi(N-k+1); 0 outside 0 <= k <= N."""
    return _binomial_parts(out, N, k, exact, which, "d", "perm")


def _pole(m, x):
    """Where Gamma(x) has a pole (x a nonpositive integer)."""
    return (x <= 0) & (x == m.floor(x))


def binom_d(out, n, k, which):
    """d/dn (which=0) or d/dk (which=1) of ``scipy.special.binom(n, k)`` with value ``out``:
    out (psi(n+1) - psi(n-k+1)), out (psi(n-k+1) - psi(k+1)).  Where binom is 0 because
    Gamma(n-k+1) or Gamma(k+1) has a pole, the derivative of 1/Gamma there, (-1)^j j! at -j,
    gives the (nonzero) derivative: binom(2, 3) = 0, d/dn = 1/3.  nan where binom is nan (n a
    negative integer)."""
    m = xp(n, k)
    S = _special_of(m)
    n_ = asarray(n)
    k_ = asarray(k, like=n_)
    out_ = asarray(out, like=n_)
    a, b, c = n_ + 1, n_ - k_ + 1, k_ + 1
    with np.errstate(all="ignore"):
        pb, pc = _pole(m, b), _pole(m, c)
        r = out_ * ((S.psi(a) - S.psi(b)) if which == 0 else (S.psi(b) - S.psi(c)))
        jb, jc = m.where(pb, -b, 0), m.where(pc, -c, 0)
        sb, sc = 1 - 2 * (jb % 2), 1 - 2 * (jc % 2)
        # at a pole of Gamma(b) (c not one): Gamma(a) / Gamma(c) (-1)^jb jb!, with signs, in logs
        at_b = S.gammasgn(a) * S.gammasgn(m.where(pc, 0.5, c)) * sb * \
            m.exp(S.gammaln(a) - S.gammaln(m.where(pc, 0.5, c)) + S.gammaln(jb + 1))
        # at a pole of Gamma(c) (b not one): d/dk = Gamma(a) (-1)^jc jc! / Gamma(b); d/dn = 0
        at_c = S.gammasgn(a) * S.gammasgn(m.where(pb, 0.5, b)) * sc * \
            m.exp(S.gammaln(a) + S.gammaln(jc + 1) - S.gammaln(m.where(pb, 0.5, b)))
        if which == 0:
            r = m.where(pb & ~pc, at_b, m.where(pc, 0.0, r))
        else:
            r = m.where(pb & ~pc, -at_b, m.where(pc & ~pb, at_c, m.where(pc, 0.0, r)))
        r = m.where(m.isnan(out_), np.nan, r)
    return r.astype(np.result_type(out_, n_, k_), copy=False)


def poch_d(out, z, mm, which):
    """d/dz (which=0) or d/dm (which=1) of ``scipy.special.poch(z, m)`` = Gamma(z+m) / Gamma(z)
    with value ``out``: out (psi(z+m) - psi(z)), out psi(z+m).  At a pole of Gamma(z) (z = -j)
    where Gamma(z+m) is finite, poch is 0 and d/dz = Gamma(z+m) (-1)^j j!, d/dm = 0.  Where both
    z and z+m are nonpositive integers (poch(-3, 2) = 6, a polynomial in z) d/dz is
    out (psi(1-z-m) - psi(1-z)); d/dm does not exist there (poch(-3, m) is 0 for m near 2 but not
    2): refused."""
    m = xp(z, mm)
    S = _special_of(m)
    z_ = asarray(z)
    m_ = asarray(mm, like=z_)
    out_ = asarray(out, like=z_)
    s = z_ + m_
    with np.errstate(all="ignore"):
        pz, ps = _pole(m, z_), _pole(m, s)
        both = pz & ps
        if which == 1:
            if bool(m.any(both)):
                from ...errors import UnsupportedSyntaxError
                raise UnsupportedSyntaxError(
                    "the derivative of scipy.special.poch(z, m) in m does not exist where z and "
                    "z + m are both nonpositive integers (poch jumps there: poch(-3, 2) = 6, "
                    "poch(-3, 2.5) = 0)",
                    fix="keep z away from nonpositive integers, or pass m as a constant "
                        "(an int, or a value that carries no derivative)")
            r = m.where(pz, 0.0, out_ * S.psi(s))
        else:
            j = m.where(pz, -z_, 0)
            sz = 1 - 2 * (j % 2)
            safe_s = m.where(ps, 0.5, s)
            at_z = S.gammasgn(safe_s) * sz * m.exp(S.gammaln(safe_s) + S.gammaln(j + 1))
            refl = out_ * (S.psi(m.where(both, 1 - s, 1.0)) - S.psi(m.where(both, 1 - z_, 1.0)))
            r = m.where(both, refl, m.where(pz, at_z, out_ * (S.psi(s) - S.psi(z_))))
        r = m.where(m.isnan(out_), np.nan, r)
    return r.astype(np.result_type(out_, z_, m_), copy=False)


def multigammaln_d(a, d):
    """d/da log Gamma_d(a) = sum_{j<d} psi(a - j/2)."""
    m = xp(a)
    S = _special_of(m)
    a_ = asarray(a)
    return sum(S.psi(a_ - j / 2) for j in range(int(d)))


# -- the incomplete gamma and beta functions in their shape parameters ----------------------------
# Series and continued fractions differentiated term by term (the derivative's recurrence runs
# beside the function's), iterated until both converge, in float64, then cast back.
_EPS = np.finfo(np.float64).eps
_TOL = 8 * _EPS                  # relative change that counts as converged (round-off: a few ulps)
_MAXITER = 10000


def _f64(*xs):
    m = xp(*xs)
    arrs = [m.asarray(asarray(x, like=xs[0]), dtype=np.float64) for x in xs]
    return m, m.broadcast_arrays(*arrs)


def _gammainc_da_series(m, S, a, x):
    """dP/da for x <= max(a + 1, 8): P = x^a e^-x / Gamma(a+1) * sum_n x^n / ((a+1)...(a+n))."""
    c = m.ones_like(a)
    dc = m.zeros_like(a)
    tot, dtot = c.copy(), dc.copy()
    r = a.copy()
    logx = m.log(x)
    dl = logx - S.psi(a + 1)
    calm = 0
    for _ in range(_MAXITER):
        r = r + 1
        dc = dc * x / r - c * x / (r * r)
        c = c * x / r
        tot = tot + c
        dtot = dtot + dc
        moving = (m.abs(c) > _TOL * m.abs(tot)) | \
            (m.abs(dc) > _TOL * (m.abs(dtot) + m.abs(dl * tot)))
        calm = 0 if bool(m.any(moving)) else calm + 1
        if calm == 2:
            break
    pref = m.exp(a * logx - x - S.gammaln(a + 1))
    return pref * (dl * tot + dtot)


def _gammainc_da_cf(m, S, a, x):
    """dP/da = -dQ/da for x > max(a + 1, 8), from the continued fraction of Q (Cephes igamc) and the
    derivatives of its convergents."""
    big, biginv = 1 / _EPS, _EPS
    y = 1 - a
    z = x + y + 1
    c = m.zeros_like(a)
    pkm2, qkm2, pkm1, qkm1 = m.ones_like(a), x.copy(), x + 1, z * x
    dpkm2, dqkm2, dpkm1, dqkm1 = m.zeros_like(a), m.zeros_like(a), m.zeros_like(a), -x
    ans = pkm1 / qkm1
    dans = (dpkm1 - ans * dqkm1) / qkm1
    logx = m.log(x)
    dl = logx - S.psi(a)
    calm = 0
    for _ in range(_MAXITER):
        c = c + 1
        y = y + 1
        z = z + 2
        yc = y * c
        pk = pkm1 * z - pkm2 * yc
        qk = qkm1 * z - qkm2 * yc
        dpk = dpkm1 * z - pkm1 - dpkm2 * yc + pkm2 * c
        dqk = dqkm1 * z - qkm1 - dqkm2 * yc + qkm2 * c
        ok = qk != 0
        qs = m.where(ok, qk, 1)
        r = pk / qs
        new_ans = m.where(ok, r, ans)
        new_dans = m.where(ok, (dpk - new_ans * dqk) / qs, dans)
        moving = ok & ((m.abs(new_ans - ans) > _TOL * m.abs(new_ans)) |
                       (m.abs(new_dans - dans) > _TOL * (m.abs(new_dans) + m.abs(dl * new_ans))))
        ans, dans = new_ans, new_dans
        pkm2, pkm1, qkm2, qkm1 = pkm1, pk, qkm1, qk
        dpkm2, dpkm1, dqkm2, dqkm1 = dpkm1, dpk, dqkm1, dqk
        size = m.maximum(m.abs(pk), m.abs(qk))
        scale = m.where(size > big, biginv, m.where((size < biginv) & (size > 0), big, 1.0))
        pkm2, pkm1, qkm2, qkm1 = pkm2 * scale, pkm1 * scale, qkm2 * scale, qkm1 * scale
        dpkm2, dpkm1, dqkm2, dqkm1 = dpkm2 * scale, dpkm1 * scale, dqkm2 * scale, dqkm1 * scale
        calm = 0 if bool(m.any(moving)) else calm + 1
        if calm == 2:
            break
    ax = m.exp(a * logx - x - S.gammaln(a))
    return -(ans * ax * dl + dans * ax)


def gammainc_da(a, x):
    """d/da of the regularized lower incomplete gamma function P(a, x) = gammainc(a, x) (and
    -d/da of gammaincc); 0 at x = 0 and x = inf, nan where a <= 0 or x < 0."""
    m, (a_, x_) = _f64(a, x)
    S = _special_of(m)
    out = m.full(a_.shape, np.nan)
    good = (a_ > 0) & (x_ > 0) & m.isfinite(x_) & m.isfinite(a_)
    cf = good & (x_ > 8) & (x_ > a_ + 1)     # else the series, which converges faster there
    ser = good & ~cf
    if bool(m.any(ser)):
        out[ser] = _gammainc_da_series(m, S, a_[ser], x_[ser])
    if bool(m.any(cf)):
        out[cf] = _gammainc_da_cf(m, S, a_[cf], x_[cf])
    out = m.where((a_ > 0) & ((x_ == 0) | (x_ == np.inf)), 0.0, out)
    return _cast_back(out, a, x)


def _cast_back(out, *xs):
    dt = _real_dtype(*xs)
    if out.ndim == 0 and not any(hasattr(x, "shape") and not isinstance(x, np.generic)
                                 for x in xs):
        return dt.type(out) if dt != np.float64 else float(out)
    return out.astype(dt, copy=False)


def _betainc_cf(m, S, a, b, x):
    """(I, dI/da, dI/db) of I_x(a, b) from its continued fraction (Numerical Recipes' betacf),
    for x < (a + 1) / (a + b + 2): I = x^a (1-x)^b / (a B(a, b)) / (1 + d1 / (1 + d2 / ...))."""
    big, biginv = 1 / _EPS, _EPS
    one, zero = m.ones_like(a), m.zeros_like(a)
    # convergents A/B of 1 / (1 + d1 / (1 + d2 / ...)): A_n = A_{n-1} + d A_{n-2}
    Ap, Ac, Bp, Bc = zero.copy(), one.copy(), one.copy(), one.copy()
    dAp_a, dAc_a, dBp_a, dBc_a = zero.copy(), zero.copy(), zero.copy(), zero.copy()
    dAp_b, dAc_b, dBp_b, dBc_b = zero.copy(), zero.copy(), zero.copy(), zero.copy()
    K, dK_a, dK_b = one.copy(), zero.copy(), zero.copy()
    lx, l1x = m.log(x), m.log1p(-x)
    psab = S.psi(a + b)
    lF_a = lx - 1 / a - S.psi(a) + psab
    lF_b = l1x - S.psi(b) + psab
    calm = 0
    for k in range(1, 2 * _MAXITER):
        mm = k // 2
        if k % 2:       # d_{2m+1} = -(a+m)(a+b+m) x / ((a+2m)(a+2m+1))
            N = (a + mm) * (a + b + mm)
            N_a, N_b = (a + b + mm) + (a + mm), (a + mm)
            D = (a + 2 * mm) * (a + 2 * mm + 1)
            D_a = (a + 2 * mm + 1) + (a + 2 * mm)
            d = -x * N / D
            d_a = -x * (N_a * D - N * D_a) / (D * D)
            d_b = -x * N_b / D
        else:           # d_{2m} = m(b-m) x / ((a+2m-1)(a+2m))
            N = mm * (b - mm)
            D = (a + 2 * mm - 1) * (a + 2 * mm)
            D_a = (a + 2 * mm) + (a + 2 * mm - 1)
            d = x * N / D
            d_a = -x * N * D_a / (D * D)
            d_b = x * mm / D
        An = Ac + d * Ap
        Bn = Bc + d * Bp
        dAn_a = dAc_a + d_a * Ap + d * dAp_a
        dBn_a = dBc_a + d_a * Bp + d * dBp_a
        dAn_b = dAc_b + d_b * Ap + d * dAp_b
        dBn_b = dBc_b + d_b * Bp + d * dBp_b
        Ap, Ac, Bp, Bc = Ac, An, Bc, Bn
        dAp_a, dAc_a, dBp_a, dBc_a = dAc_a, dAn_a, dBc_a, dBn_a
        dAp_b, dAc_b, dBp_b, dBc_b = dAc_b, dAn_b, dBc_b, dBn_b
        ok = Bn != 0
        Bs = m.where(ok, Bn, 1)
        nK = m.where(ok, An / Bs, K)
        nK_a = m.where(ok, (dAn_a - nK * dBn_a) / Bs, dK_a)
        nK_b = m.where(ok, (dAn_b - nK * dBn_b) / Bs, dK_b)
        moving = ok & ((m.abs(nK - K) > _TOL * m.abs(nK)) |
                       (m.abs(nK_a - dK_a) > _TOL * (m.abs(nK_a) + m.abs(lF_a * nK))) |
                       (m.abs(nK_b - dK_b) > _TOL * (m.abs(nK_b) + m.abs(lF_b * nK))))
        K, dK_a, dK_b = nK, nK_a, nK_b
        size = m.maximum(m.abs(An), m.abs(Bn))
        s = m.where(size > big, biginv, m.where((size < biginv) & (size > 0), big, 1.0))
        Ap, Ac, Bp, Bc = Ap * s, Ac * s, Bp * s, Bc * s
        dAp_a, dAc_a, dBp_a, dBc_a = dAp_a * s, dAc_a * s, dBp_a * s, dBc_a * s
        dAp_b, dAc_b, dBp_b, dBc_b = dAp_b * s, dAc_b * s, dBp_b * s, dBc_b * s
        if k % 2 == 0:
            calm = 0 if bool(m.any(moving)) else calm + 1
            if calm == 2:       # twice in a row: a zero d_k does not end the loop early
                break
    F = m.exp(a * lx + b * l1x - m.log(a) - S.betaln(a, b))
    return F * K, F * (lF_a * K + dK_a), F * (lF_b * K + dK_b)


def _betainc_dab(a, b, x):
    """(dI/da, dI/db) of the regularized incomplete beta function I_x(a, b) = betainc(a, b, x)."""
    m, (a_, b_, x_) = _f64(a, b, x)
    S = _special_of(m)
    da = m.full(a_.shape, np.nan)
    db = m.full(a_.shape, np.nan)
    good = (a_ > 0) & (b_ > 0) & (x_ > 0) & (x_ < 1) & m.isfinite(a_) & m.isfinite(b_)
    direct = good & (x_ < (a_ + 1) / (a_ + b_ + 2))
    flip = good & ~direct
    if bool(m.any(direct)):
        _, da[direct], db[direct] = _betainc_cf(m, S, a_[direct], b_[direct], x_[direct])
    if bool(m.any(flip)):       # I_x(a, b) = 1 - I_{1-x}(b, a)
        _, d_b, d_a = _betainc_cf(m, S, b_[flip], a_[flip], 1 - x_[flip])
        da[flip], db[flip] = -d_a, -d_b
    edge = (a_ > 0) & (b_ > 0) & ((x_ == 0) | (x_ == 1))
    return m.where(edge, 0.0, da), m.where(edge, 0.0, db)


def betainc_da(a, b, x):
    """d/da of the regularized incomplete beta function betainc(a, b, x) (0 at x = 0 and 1)."""
    return _cast_back(_betainc_dab(a, b, x)[0], a, b, x)


def betainc_db(a, b, x):
    """d/db of the regularized incomplete beta function betainc(a, b, x) (0 at x = 0 and 1)."""
    return _cast_back(_betainc_dab(a, b, x)[1], a, b, x)


def softmax(g, ans, x, axis=None):
    gs = g * ans
    ax = norm_axes(axis, ndim(ans))
    return like(gs - ans * gs.sum(axis=ax, keepdims=True), x)


def log_softmax(g, ans, x, axis=None):
    m = xp(ans)
    ax = norm_axes(axis, ndim(ans))
    return like(g - m.exp(ans) * asarray(g).sum(axis=ax, keepdims=True), x)


def logsumexp_tangent(t, ans, a, axis=None, b=None, keepdims=False, which=0, return_sign=False):
    e, bb, full = _lse_weights(ans, a, axis, b, keepdims, return_sign)
    if which == 0 and bb is not None:
        e = e * bb
    tau = (e * t).sum(axis=norm_axes(axis, len(full)), keepdims=_flag(keepdims))
    if not return_sign:
        return tau
    sgn = ans[1]
    if asarray(tau).dtype.kind != "c":
        return (tau, 0.0 * asarray(sgn))
    return (tau.real, 1j * tau.imag * sgn)


def logsumexp_d(grad, out, a, axis, b, keepdims, which, return_sign, wrt, t):
    """Tangent of the adjoint :func:`logsumexp` (a second derivative) in ``out`` (its value),
    ``a`` or ``b``: the weights w = exp(a - out) move by -w t_out, w t_a; b scales them."""
    if return_sign:
        from ...errors import UnsupportedSyntaxError
        raise UnsupportedSyntaxError(
            "second derivatives of scipy.special.logsumexp(..., return_sign=True) are not "
            "supported yet", fix="differentiate once, or write the sum with return_sign=False")
    if is_zero(grad) or is_zero(t):
        return 0.0
    e, bb, full = _lse_weights(out, a, axis, b, keepdims, False)
    ge = expand(grad, full, axis, keepdims, like=e)
    if wrt == "b":                               # (which == 0: the adjoint of a is ge w b)
        return _rt.unbroadcast(ge * cj(e * asarray(t, like=e)), a)
    de = -e * expand(t, full, axis, keepdims, like=e) if wrt == "out" else e * asarray(t, like=e)
    if which == 1:
        return _rt.unbroadcast(ge * cj(de), b)
    if bb is not None:
        de = de * bb
    return _rt.unbroadcast(ge * cj(de), a)


def softmax_d(grad, out, x, axis, t):
    """Tangent of the adjoint :func:`softmax` in the softmax's value ``out``."""
    if is_zero(grad) or is_zero(t):
        return 0.0
    ax = norm_axes(axis, ndim(out))
    s = (grad * out).sum(axis=ax, keepdims=True)
    return like(t * grad - t * s - out * (t * grad).sum(axis=ax, keepdims=True), x)


def log_softmax_d(grad, out, x, axis, t):
    """Tangent of the adjoint :func:`log_softmax` in its value ``out``."""
    if is_zero(grad) or is_zero(t):
        return 0.0
    m = xp(out)
    ax = norm_axes(axis, ndim(out))
    return like(-m.exp(out) * t * asarray(grad).sum(axis=ax, keepdims=True), x)


export(globals(), also=("_factorialx_parts", "_binomial_parts"))

# the adjoints above are themselves differentiable (forward over reverse: hessian, hvp): linear
# in their first argument, and depending on the values they read
_LSE = "grad, out, a, axis=None, b=None, keepdims=False, which=0, return_sign=False, /"
_LSE_ARGS = "grad, out, a, axis, b, keepdims, which, return_sign"
defrule(logsumexp, _LSE,
        jvp={"grad": "_adj.logsumexp(t, out, a, axis, b, keepdims, which, return_sign)",
             "out": f"_adj.logsumexp_d({_LSE_ARGS}, 'out', t)",
             "a": f"_adj.logsumexp_d({_LSE_ARGS}, 'a', t)",
             "b": f"_adj.logsumexp_d({_LSE_ARGS}, 'b', t) if which == 0 else 0.0 * ans"},
        kind="any", ns=A)
# factorial's, comb's and perm's derivatives, in the values they read (the partials have no rules:
# a third derivative is refused)
defrule(factorialx_d, "out, n, exact=False, extend='zero', k=1, /",
        jvp={"out": "t * _adj._factorialx_parts(out, n, exact, extend, k, 'out')",
             "n": "t * _adj._factorialx_parts(out, n, exact, extend, k, 'n')"}, kind="any", ns=A)
for _kind, _f in (("comb", comb_d), ("perm", perm_d)):
    defrule(_f, "out, N, k, exact=False, which='N', /",
            jvp={p: f"t * _adj._binomial_parts(out, N, k, exact, which, {p!r}, {_kind!r})"
                 for p in ("out", "N", "k")}, kind="any", ns=A)
defrule(softmax, "grad, out, x, axis=None, /",
        jvp={"grad": "_adj.softmax(t, out, x, axis)",
             "out": "_adj.softmax_d(grad, out, x, axis, t)"}, kind="any", ns=A)
defrule(log_softmax, "grad, out, x, axis=None, /",
        jvp={"grad": "_adj.log_softmax(t, out, x, axis)",
             "out": "_adj.log_softmax_d(grad, out, x, axis, t)"}, kind="any", ns=A)
