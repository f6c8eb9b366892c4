"""``scipy.stats``: the densities, distribution functions and quantiles of the common
distributions, in both call forms, with respect to the data and every parameter.

Loaded only once the user's code has imported SciPy.  The callees are not fixed objects (``norm.logpdf``
is a bound method made on each access, ``norm(0, 1)`` a new frozen distribution), so the rules are
made by a resolver (:func:`~s2sad.rules.registry.defresolver`), keyed by the distribution's class
and the method's name, and cached:

* ``norm.logpdf(x, loc, scale)``, ``stats.gamma.cdf(x, a, loc=0, scale=1)``: a bound method of a
  distribution (any instance of a class in the table with the table's support).  Its parameters are
  bound by the distribution's own names (``x, a, loc=0, scale=1``; ``k, mu, loc=0`` for discrete
  ones; ``q`` for ``ppf``/``isf``), so positional and keyword calls bind alike.
* ``norm(loc, scale)``: freezing.  The frozen distribution is an object whose adjoint is, as for any
  object, a dict of attribute adjoints: ``{"args": (...), "kwds": {...}}`` (its attributes
  ``args``/``kwds`` hold the parameters as given).  The freeze rule hands each parameter its part.
* ``frozen.logpdf(x)``: a bound method of a frozen distribution, a rule whose first parameter is
  the object (``receiver=True``).

Formulas are in closed form in the standardised variable ``z = (x - loc) / scale``.  A shape
derivative of a distribution function with no closed form (``gamma.cdf`` w.r.t. ``a`` needs
d/da of the incomplete gamma function) uses ``_adj.gammainc_da`` / ``_adj.betainc_da`` /
``_adj.betainc_db`` when the special-function table provides them; otherwise an active shape
parameter there is refused with the reason (never a zero).

Multivariate: ``multivariate_normal`` (``logpdf``/``pdf`` w.r.t. ``x``, ``mean`` and ``cov``; SciPy
reads the lower triangle of ``cov`` only, so the gradient goes there, as for ``eigh``) and
``dirichlet`` (w.r.t. ``x`` and ``alpha``).
"""
import math
import sys

import numpy as np
import scipy.special as _sp
import scipy.stats as _st
from scipy.stats._distn_infrastructure import rv_continuous, rv_discrete, rv_frozen, rv_generic

from ... import runtime as _rt
from ...errors import RuleError
from ..adjoints import A, export
from ..registry import Rule, defresolver

try:
    from scipy.stats._multivariate import (dirichlet_frozen, dirichlet_gen,
                                           multivariate_normal_frozen, multivariate_normal_gen)
except ImportError:                                          # pragma: no cover
    dirichlet_frozen = dirichlet_gen = multivariate_normal_frozen = multivariate_normal_gen = None

_LOG2PI = math.log(2 * math.pi)
_psi = _sp.psi


def _special(name):
    """A helper of the scipy.special table (``_adj.gammainc_da``...), or None if it has none."""
    return sys.modules["s2sad.rules.adjoints"].__dict__.get(name)


# -- the distributions, in standard form (loc 0, scale 1) -------------------------------------------
class _Cont:
    """``dz``: d logpdf/dz; ``dsh``: d logpdf/d shape, one per shape; ``dF``: dF/d shape of the
    standard CDF, one per shape, or a name ``"gammainc_da"``... of a helper (None: none)."""
    kind = "cont"

    def __init__(self, dist, dz, dsh=(), dF=()):
        self.dist, self.dz, self.dsh, self.dF = dist, dz, tuple(dsh), tuple(dF)
        self.shapes = tuple(s.strip() for s in (dist.shapes or "").split(",") if s.strip())

    def lp(self, z, sh):
        return self.dist.logpdf(z, *sh)

    def logF(self, z, sh):
        return self.dist.logcdf(z, *sh)

    def cdf_shape(self, i):
        """The function z, shapes -> dF/d shape_i, or None when there is none."""
        d = self.dF[i] if i < len(self.dF) else None
        if callable(d):
            return d
        if isinstance(d, tuple):                  # (helper names, function of them)
            helpers = [_special(n) for n in d[0]]
            if all(h is not None for h in helpers):
                return lambda z, sh: d[1](z, sh, *helpers)
        return None


class _Disc:
    """``dsh``: d logpmf/d shape at the shifted data ``k - loc``; None for an integer shape."""
    kind = "disc"

    def __init__(self, dist, dsh):
        self.dist, self.dsh = dist, tuple(dsh)
        self.shapes = tuple(s.strip() for s in (dist.shapes or "").split(",") if s.strip())


def _t_dF(z, sh, betainc_da):
    # F(z) = 1 - I_w(v/2, 1/2) / 2 for z > 0 (the mirror below), w = v / (v + z^2)
    v, = sh
    at0 = z == 0                                  # F(0) = 1/2 whatever v
    z = np.where(at0, 1.0, z)
    w = v / (v + z * z)
    a = v / 2
    dI_dw = np.exp((a - 1) * np.log(w) - 0.5 * np.log1p(-w) - _sp.betaln(a, 0.5))
    dI = 0.5 * betainc_da(a, 0.5, w) + dI_dw * z * z / (v + z * z) ** 2
    return np.where(at0, 0.0, np.where(z > 0, -0.5, 0.5) * dI)


_SPEC_ROWS = [
    # distribution   d logpdf/dz                            d logpdf/d shapes            dF/d shapes
    (_st.norm,     lambda z, sh: -z, (), ()),
    (_st.halfnorm, lambda z, sh: -z, (), ()),
    (_st.expon,    lambda z, sh: -np.ones_like(z), (), ()),
    (_st.laplace,  lambda z, sh: -np.sign(z), (), ()),
    (_st.cauchy,   lambda z, sh: -2 * z / (1 + z * z), (), ()),
    (_st.logistic, lambda z, sh: -np.tanh(z / 2), (), ()),
    (_st.uniform,  lambda z, sh: np.zeros_like(z), (), ()),
    (_st.t,        lambda z, sh: -(sh[0] + 1) * z / (sh[0] + z * z),
     (lambda z, sh: 0.5 * (_psi((sh[0] + 1) / 2) - _psi(sh[0] / 2) - 1 / sh[0]
                           - np.log1p(z * z / sh[0])
                           + (sh[0] + 1) * z * z / (sh[0] * (sh[0] + z * z))),),
     ((("betainc_da",), _t_dF),)),
    (_st.gamma,    lambda z, sh: (sh[0] - 1) / z - 1,
     (lambda z, sh: np.log(z) - _psi(sh[0]),),
     ((("gammainc_da",), lambda z, sh, da: da(sh[0], z)),)),
    (_st.chi2,     lambda z, sh: (sh[0] / 2 - 1) / z - 0.5,
     (lambda z, sh: 0.5 * (np.log(z / 2) - _psi(sh[0] / 2)),),
     ((("gammainc_da",), lambda z, sh, da: 0.5 * da(sh[0] / 2, z / 2)),)),
    (_st.invgamma, lambda z, sh: -(sh[0] + 1) / z + 1 / (z * z),
     (lambda z, sh: -np.log(z) - _psi(sh[0]),),
     ((("gammainc_da",), lambda z, sh, da: -da(sh[0], 1 / z)),)),
    (_st.beta,     lambda z, sh: (sh[0] - 1) / z - (sh[1] - 1) / (1 - z),
     (lambda z, sh: np.log(z) - _psi(sh[0]) + _psi(sh[0] + sh[1]),
      lambda z, sh: np.log1p(-z) - _psi(sh[1]) + _psi(sh[0] + sh[1])),
     ((("betainc_da",), lambda z, sh, da: da(sh[0], sh[1], z)),
      (("betainc_db",), lambda z, sh, db: db(sh[0], sh[1], z)))),
    (_st.lognorm,  lambda z, sh: -(1 + np.log(z) / sh[0] ** 2) / z,
     (lambda z, sh: -1 / sh[0] + np.log(z) ** 2 / sh[0] ** 3,),
     (lambda z, sh: -_st.norm.pdf(np.log(z) / sh[0]) * np.log(z) / sh[0] ** 2,)),
    (_st.weibull_min, lambda z, sh: (sh[0] - 1) / z - sh[0] * z ** (sh[0] - 1),
     (lambda z, sh: 1 / sh[0] + np.log(z) * (1 - z ** sh[0]),),
     (lambda z, sh: np.exp(-z ** sh[0]) * z ** sh[0] * np.log(z),)),
]
_DISC_ROWS = [
    (_st.poisson,   (lambda k, sh: k / sh[0] - 1,)),
    (_st.binom,     (None, lambda k, sh: k / sh[1] - (sh[0] - k) / (1 - sh[1]))),
    (_st.nbinom,    (lambda k, sh: _psi(k + sh[0]) - _psi(sh[0]) + np.log(sh[1]),
                     lambda k, sh: sh[0] / sh[1] - k / (1 - sh[1]))),
    (_st.geom,      (lambda k, sh: 1 / sh[0] - (k - 1) / (1 - sh[0]),)),
    (_st.bernoulli, (lambda k, sh: k / sh[0] - (1 - k) / (1 - sh[0]),)),
]
_SPECS = {}           # class name -> spec
for _d, _dz, _dsh, _dF in _SPEC_ROWS:
    _SPECS[type(_d).__name__] = _Cont(_d, _dz, _dsh, _dF)
for _d, _dsh in _DISC_ROWS:
    _SPECS[type(_d).__name__] = _Disc(_d, _dsh)

_CONT_METHODS = ("logpdf", "pdf", "logcdf", "cdf", "logsf", "sf", "ppf", "isf")
_DISC_METHODS = ("logpmf", "pmf")


def _params(spec, method):
    first = "q" if method in ("ppf", "isf") else "k" if spec.kind == "disc" else "x"
    rest = list(spec.shapes) + (["loc=0"] if spec.kind == "disc" else ["loc=0", "scale=1"])
    return [first] + rest


def _names(spec, method):
    return [p.split("=")[0] for p in _params(spec, method)]


def _no_closed_form(spec, method, name):
    """Why ``name`` has no derivative in ``method`` (None: it has one)."""
    if spec.kind == "disc":
        if name == "loc":
            return "the probability mass function of a shifted lattice is not differentiable in loc"
        i = spec.shapes.index(name) if name in spec.shapes else -1
        if i >= 0 and spec.dsh[i] is None:
            return f"`{name}` is an integer count"
        return None
    if name not in spec.shapes or method in ("logpdf", "pdf"):
        return None
    i = spec.shapes.index(name)
    if spec.cdf_shape(i) is None:
        need = [n for n in (spec.dF[i][0] if isinstance(spec.dF[i], tuple) else ())]
        return (f"the derivative of {method} with respect to the shape parameter `{name}` has no "
                f"closed form" + (f"; it needs d/d{name} of an incomplete special function "
                                  f"({', '.join(need)}), which s2sad does not provide yet"
                                  if need else ""))
    return None


# -- the partial derivatives ---------------------------------------------------------------------
def _cont_partial(spec, method, which, vals, ans):
    """d method / d which, elementwise (broadcast over every argument)."""
    names = _names(spec, method)
    x, loc, scale = vals[0], vals[-2], vals[-1]
    sh = tuple(np.asarray(v, dtype=float) for v in vals[1:-2])
    x, loc, scale = (np.asarray(v, dtype=float) for v in (x, loc, scale))
    ans = np.asarray(ans, dtype=float)
    shape_i = spec.shapes.index(which) if which in spec.shapes else -1
    if method in ("ppf", "isf"):
        z = (ans - loc) / scale                  # the standardised quantile
        with np.errstate(all="ignore"):
            f = np.exp(spec.lp(z, sh))
            if which == "q":
                d = (scale if method == "ppf" else -scale) / f
            elif which == "loc":
                d = np.ones_like(z)
            elif which == "scale":
                d = z
            else:
                d = -scale * spec.cdf_shape(shape_i)(z, sh) / f
        return np.broadcast_to(d, ans.shape) if d.shape != ans.shape else d
    with np.errstate(all="ignore"):
        z = (x - loc) / scale
        lp = spec.lp(z, sh)
        inside = lp > -np.inf
        zc = np.where(inside, z, 0.5)           # (formulas are read only inside the support)
        if method in ("logpdf", "pdf"):
            if shape_i >= 0:
                d = spec.dsh[shape_i](zc, sh)
            else:
                dz = spec.dz(zc, sh)
                d = {"x": dz / scale, "loc": -dz / scale,
                     "scale": -(1 + zc * dz) / scale}[which]
            if method == "pdf":
                d = d * ans
        else:
            if shape_i >= 0:
                dF = spec.cdf_shape(shape_i)(zc, sh)
                ratio = 1.0
            else:
                # f(z) times d z / d which, and for the logs f / F (or f / S) from the logs
                dF = {"x": 1 / scale, "loc": -1 / scale, "scale": -zc / scale}[which]
                ratio = None
            if method == "cdf":
                d = dF * (np.exp(lp) if ratio is None else 1.0)
            elif method == "sf":
                d = -dF * (np.exp(lp) if ratio is None else 1.0)
            elif method == "logcdf":
                d = dF * (np.exp(lp - ans) if ratio is None else np.exp(-ans))
            else:                                # logsf
                d = -dF * (np.exp(lp - ans) if ratio is None else np.exp(-ans))
        d = np.where(inside, d, 0.0)
    return d


def _disc_partial(spec, method, which, vals, ans):
    k, loc = np.asarray(vals[0]), np.asarray(vals[-1])
    sh = tuple(np.asarray(v, dtype=float) for v in vals[1:-1])
    ans = np.asarray(ans, dtype=float)
    kk = (k - loc).astype(float)
    with np.errstate(all="ignore"):
        d = spec.dsh[spec.shapes.index(which)](kk, sh)
        if method == "pmf":
            d = d * ans
        inside = (ans > 0) if method == "pmf" else (ans > -np.inf)
        d = np.where(inside, d, 0.0)
    return d


def _partial(key, method, which, vals, ans):
    spec = _SPECS[key]
    why = _no_closed_form(spec, method, which)
    if why is not None:
        raise RuleError(f"scipy.stats.{spec.dist.name}.{method}: {why}",
                        fix=f"pass a constant for `{which}` (e.g. fit it in an outer loop), or "
                            f"declare the derivative with s2sad.defrule")
    if spec.kind == "disc":
        return _disc_partial(spec, method, which, vals, ans)
    return _cont_partial(spec, method, which, vals, ans)


# -- helpers the templates call ----------------------------------------------------------------------
def stats_vjp(g, ans, key, method, which, vals):
    """Adjoint of the argument ``which`` of ``dist.method(*vals)`` (vals in the rule's order)."""
    i = _names(_SPECS[key], method).index(which)
    return _rt.unbroadcast(g * _partial(key, method, which, vals, ans), vals[i])


def stats_jvp(t, ans, key, method, which, vals):
    return t * _partial(key, method, which, vals, ans)


class _NoDerivative:
    """The adjoint of a frozen distribution's parameter that has none: refused by the freeze
    rule if that parameter carries a derivative (it is dropped otherwise)."""

    def __init__(self, why):
        self.why = why

    def __add__(self, other):
        return self
    __radd__ = __add__

    def __repr__(self):
        return f"<no derivative: {self.why}>"


def _frozen_vals(self, method, x):
    """(spec, names, values in the rule's order, where each came from: ("args", i) / ("kwds", k))."""
    spec = _SPECS[type(self.dist).__name__]
    names = _names(spec, method)
    defaults = {"loc": 0, "scale": 1}
    vals = {names[0]: x}
    where = {}
    for i, v in enumerate(self.args):
        vals[names[1 + i]] = v
        where[names[1 + i]] = ("args", i)
    for k, v in self.kwds.items():
        vals[k] = v
        where[k] = ("kwds", k)
    return spec, names, tuple(vals.get(n, defaults.get(n)) for n in names), where


def stats_frozen_vjp(g, ans, method, self, x):
    """The frozen distribution's adjoint: ``{"args": (...), "kwds": {...}}``."""
    spec, names, vals, where = _frozen_vals(self, method, x)
    key = type(self.dist).__name__
    gargs, gkw = [0.0] * len(self.args), {}
    for n, (kind, pos) in where.items():
        why = _no_closed_form(spec, method, n)
        if why is not None:
            a = _NoDerivative(f"scipy.stats.{spec.dist.name}.{method}: {why}")
        else:
            a = _rt.unbroadcast(g * _partial(key, method, n, vals, ans), vals[names.index(n)])
        if kind == "args":
            gargs[pos] = a
        else:
            gkw[pos] = a
    return {"args": tuple(gargs), "kwds": gkw}


def stats_frozen_x(g, ans, method, self, x):
    spec, names, vals, _ = _frozen_vals(self, method, x)
    return _rt.unbroadcast(g * _partial(type(self.dist).__name__, method, names[0], vals, ans), x)


def stats_frozen_jvp(t, ans, method, self, x):
    """Tangent of ``frozen.method(x)`` from the frozen distribution's tangent (a dict)."""
    spec, names, vals, where = _frozen_vals(self, method, x)
    out = 0.0
    if not isinstance(t, dict):
        return out
    targs, tkw = t.get("args") or (), t.get("kwds") or {}
    for n, (kind, pos) in where.items():
        tn = (targs[pos] if pos < len(targs) else None) if kind == "args" else tkw.get(pos)
        if tn is None or _rt.is_zero(tn) or not np.any(np.asarray(tn) != 0):
            continue
        out = out + tn * _partial(type(self.dist).__name__, method, n, vals, ans)
    return out


def stats_frozen_x_jvp(t, ans, method, self, x):
    spec, names, vals, _ = _frozen_vals(self, method, x)
    return t * _partial(type(self.dist).__name__, method, names[0], vals, ans)


_FROZEN_KEYS = {"args", "kwds"}


def _frozen_adjoint_part(g, keys, name):
    if not isinstance(g, dict) or set(g) - keys:
        raise RuleError(f"a frozen scipy.stats distribution whose parameters carry a derivative "
                        f"is used in a way s2sad does not follow (its attribute(s) "
                        f"{sorted(set(g) - keys) if isinstance(g, dict) else '?'} are read)",
                        fix="call its methods (logpdf, cdf...) only, or call the distribution's "
                            "functions with the parameters: `norm.logpdf(x, loc, scale)`")
    return g.get(name, 0.0)


def stats_frozen_part(g, ans, name, i, value):
    """The adjoint of parameter ``name`` (the i-th of the freeze call) from the frozen
    distribution's adjoint ``g``."""
    part = _frozen_adjoint_part(g, _FROZEN_KEYS, "args" if i < len(ans.args) else "kwds")
    a = (part[i] if i < len(part) else 0.0) if i < len(ans.args) else \
        (part.get(name, 0.0) if isinstance(part, dict) else 0.0)
    if isinstance(a, _NoDerivative):
        raise RuleError(a.why, fix=f"pass a constant for `{name}`, or call the distribution's "
                                   f"function with the parameters instead of freezing it")
    return _rt.unbroadcast(a, value) if not _rt.is_zero(a) else 0.0


def stats_frozen_tangent(t, ans, name, i):
    """The frozen distribution's tangent from the tangent of its parameter ``name``."""
    if i < len(ans.args):
        return {"args": tuple(t if j == i else 0.0 for j in range(len(ans.args))), "kwds": {}}
    return {"args": (0.0,) * len(ans.args), "kwds": {name: t}}


# -- multivariate normal and Dirichlet ---------------------------------------------------------------
def _mvn_parts(x, mean, cov):
    """(x as (n, d) rows, residuals, Sigma^-1 (d, d), Sigma^-1 r (n, d), how to shape back)."""
    cov_ = np.asarray(cov, dtype=float)
    mean_ = np.zeros(()) if mean is None else np.asarray(mean, dtype=float)
    d = mean_.size if mean_.ndim else (cov_.shape[0] if cov_.ndim else 1)
    S = cov_ * np.eye(d) if cov_.ndim == 0 else np.diag(cov_) if cov_.ndim == 1 else cov_
    S = np.tril(S) + np.tril(S, -1).T                     # SciPy reads the lower triangle
    X = np.asarray(x, dtype=float)
    shape_x = X.shape
    if X.ndim == 0:
        X = X[np.newaxis]
    elif X.ndim == 1:
        X = X[:, np.newaxis] if d == 1 else X[np.newaxis, :]
    R = X - np.broadcast_to(mean_, (d,))
    Sinv = np.linalg.inv(S)
    U = R @ Sinv                                          # (..., d): Sigma^-1 r per row
    return R, Sinv, U, shape_x, d


def _fold_cov(G, cov):
    """The adjoint of ``cov`` as given from the adjoint of the full matrix Sigma."""
    cov_ = np.asarray(cov)
    if cov_.ndim == 0:
        return _rt.unbroadcast(np.trace(G), cov)
    if cov_.ndim == 1:
        return _rt.unbroadcast(np.diagonal(G).copy(), cov)
    Gs = G + G.T
    return _rt.unbroadcast(np.tril(Gs, -1) + np.diag(np.diagonal(G)), cov)


def stats_mvn(g, ans, which, pdf, x, mean, cov):
    """Adjoint of multivariate_normal.logpdf (pdf=True: .pdf) w.r.t. x, mean or cov (full
    matrix for which="Sigma")."""
    R, Sinv, U, shape_x, d = _mvn_parts(x, mean, cov)
    w = np.asarray(g, dtype=float) * (np.asarray(ans, dtype=float) if pdf else 1.0)
    w = np.broadcast_to(w, np.shape(ans)).reshape(R.shape[:-1])
    if which == "x":
        return _rt.unbroadcast((-w[..., None] * U).reshape(shape_x), x)
    if which == "mean":
        gm = (w[..., None] * U).reshape(-1, d).sum(axis=0)
        return _rt.unbroadcast(gm, mean)
    Uf, wf = U.reshape(-1, d), w.reshape(-1)
    G = -0.5 * (wf.sum() * Sinv - (Uf * wf[:, None]).T @ Uf)
    return G if which == "Sigma" else _fold_cov(G, cov)


def stats_mvn_jvp(t, ans, which, pdf, x, mean, cov):
    R, Sinv, U, shape_x, d = _mvn_parts(x, mean, cov)
    if which == "x":
        T = np.asarray(t, dtype=float)
        T = T.reshape(R.shape)
        out = -(U * T).sum(-1)
    elif which == "mean":
        out = (U * np.broadcast_to(np.asarray(t, dtype=float), (d,))).sum(-1)
    else:
        T = np.asarray(t, dtype=float)
        if which == "Sigma":
            Ts = T
        else:
            Ts = T * np.eye(d) if T.ndim == 0 else np.diag(T) if T.ndim == 1 else \
                np.tril(T) + np.tril(T, -1).T
        out = -0.5 * (np.sum(Sinv * Ts.T) - np.einsum("...i,ij,...j->...", U, Ts, U))
    out = np.reshape(out, np.shape(ans))
    return out * ans if pdf else out


def _dir_parts(x, alpha):
    a = np.asarray(alpha, dtype=float)
    X = np.asarray(x, dtype=float)
    full = X
    if X.shape[0] == a.shape[0] - 1:
        full = np.concatenate([X, (1 - X.sum(0))[np.newaxis]], axis=0)
    return a, X, full


def stats_dirichlet(g, ans, which, pdf, x, alpha):
    a, X, full = _dir_parts(x, alpha)
    w = np.asarray(g, dtype=float) * (np.asarray(ans, dtype=float) if pdf else 1.0)
    w = np.broadcast_to(w, np.shape(ans))
    ext = (slice(None),) + (np.newaxis,) * (full.ndim - 1)
    if which == "x":
        dfull = (a - 1)[ext] / full
        dx = dfull[:X.shape[0]] - (dfull[-1:] if full.shape[0] != X.shape[0] else 0.0)
        return _rt.unbroadcast(w * dx, x)
    da = np.log(full) - _psi(a)[ext] + _psi(a.sum())
    return _rt.unbroadcast((w * da).reshape(a.shape[0], -1).sum(-1), alpha)


def stats_dirichlet_jvp(t, ans, which, pdf, x, alpha):
    a, X, full = _dir_parts(x, alpha)
    ext = (slice(None),) + (np.newaxis,) * (full.ndim - 1)
    T = np.asarray(t, dtype=float)
    if which == "x":
        dfull = (a - 1)[ext] / full
        dx = dfull[:X.shape[0]] - (dfull[-1:] if full.shape[0] != X.shape[0] else 0.0)
        out = (dx * T).sum(0)
    else:
        da = np.log(full) - _psi(a)[ext] + _psi(a.sum())
        out = (da * np.broadcast_to(T, a.shape)[ext]).sum(0)
    out = np.reshape(out, np.shape(ans))
    return out * ans if pdf else out


def stats_frozen_mv(g, ans, method, self, x):
    """Adjoint of a frozen multivariate_normal / dirichlet: a dict of attribute adjoints."""
    pdf = method == "pdf"
    if isinstance(self, multivariate_normal_frozen):
        return {"mean": stats_mvn(g, ans, "mean", pdf, x, self.mean, self.cov),
                "_cov": stats_mvn(g, ans, "Sigma", pdf, x, self.mean, self.cov)}
    return {"alpha": stats_dirichlet(g, ans, "alpha", pdf, x, self.alpha)}


def stats_frozen_mv_x(g, ans, method, self, x):
    pdf = method == "pdf"
    if isinstance(self, multivariate_normal_frozen):
        return stats_mvn(g, ans, "x", pdf, x, self.mean, self.cov)
    return stats_dirichlet(g, ans, "x", pdf, x, self.alpha)


def stats_frozen_mv_jvp(t, ans, method, self, x):
    pdf = method == "pdf"
    if not isinstance(t, dict):
        return 0.0
    out = 0.0
    if isinstance(self, multivariate_normal_frozen):
        for k, which in (("mean", "mean"), ("_cov", "Sigma")):
            if t.get(k) is not None and not _rt.is_zero(t[k]):
                out = out + stats_mvn_jvp(t[k], ans, which, pdf, x, self.mean, self.cov)
    elif t.get("alpha") is not None and not _rt.is_zero(t["alpha"]):
        out = out + stats_dirichlet_jvp(t["alpha"], ans, "alpha", pdf, x, self.alpha)
    return out


def stats_frozen_mv_x_jvp(t, ans, method, self, x):
    pdf = method == "pdf"
    if isinstance(self, multivariate_normal_frozen):
        return stats_mvn_jvp(t, ans, "x", pdf, x, self.mean, self.cov)
    return stats_dirichlet_jvp(t, ans, "x", pdf, x, self.alpha)


def stats_mv_part(g, ans, key, value):
    """Adjoint of a freeze parameter of multivariate_normal (mean, cov) or dirichlet (alpha)."""
    keys = {"mean", "_cov"} if key in ("mean", "_cov") else {"alpha"}
    a = _frozen_adjoint_part(g, keys, key)
    if _rt.is_zero(a):
        return 0.0
    return _fold_cov(a, value) if key == "_cov" else _rt.unbroadcast(a, value)


def stats_mv_tangent(t, ans, key, value):
    if key == "_cov":
        T = np.asarray(t, dtype=float)
        d = ans.mean.shape[0]
        t = T * np.eye(d) if T.ndim == 0 else np.diag(T) if T.ndim == 1 else \
            np.tril(T) + np.tril(T, -1).T
    elif key == "mean":
        t = np.broadcast_to(np.asarray(t, dtype=float), ans.mean.shape)
    return {key: t}


# -- the resolver ------------------------------------------------------------------------------------
_CACHE = {}
_MV_METHODS = ("logpdf", "pdf")


def _supported(dist, spec):
    ref = spec.dist
    return dist.a == ref.a and dist.b == ref.b and type(dist) is type(ref) and \
        getattr(dist, "shapes", None) == ref.shapes


def _method_rule(spec, method):
    key = type(spec.dist).__name__
    params = _params(spec, method)
    names = _names(spec, method)
    vals = "(" + ", ".join(names) + ",)"
    vjp, jvp, why = {}, {}, {}
    for n in names:
        reason = _no_closed_form(spec, method, n) if n != names[0] else None
        if spec.kind == "disc" and n == names[0]:
            continue                                    # the data of a pmf is an integer
        if reason is not None:
            why[n] = reason
            continue
        vjp[n] = f"_adj.stats_vjp(g, ans, {key!r}, {method!r}, {n!r}, {vals})"
        jvp[n] = f"_adj.stats_jvp(t, ans, {key!r}, {method!r}, {n!r}, {vals})"
    const = (names[0],) if spec.kind == "disc" else ()
    return Rule(getattr(spec.dist, method), ", ".join(params), vjp=vjp, jvp=jvp, ns=A, why=why,
                constant=const, name=f"scipy.stats.{spec.dist.name}.{method}")


def _freeze_rule(spec):
    params = _params(spec, "logpdf")[1:]
    names = [p.split("=")[0] for p in params]
    vjp = {n: f"_adj.stats_frozen_part(g, ans, {n!r}, {i}, {n})" for i, n in enumerate(names)}
    jvp = {n: f"_adj.stats_frozen_tangent(t, ans, {n!r}, {i})" for i, n in enumerate(names)}
    return Rule(spec.dist, ", ".join(params), vjp=vjp, jvp=jvp, ns=A, kind="any",
                name=f"scipy.stats.{spec.dist.name}")


def _frozen_rule(spec, method):
    m = repr(method)
    first = _names(spec, method)[0]
    vjp = {"self": f"_adj.stats_frozen_vjp(g, ans, {m}, self, {first})"}
    jvp = {"self": f"_adj.stats_frozen_jvp(t, ans, {m}, self, {first})"}
    const = ()
    if spec.kind == "cont":
        vjp[first] = f"_adj.stats_frozen_x(g, ans, {m}, self, {first})"
        jvp[first] = f"_adj.stats_frozen_x_jvp(t, ans, {m}, self, {first})"
    else:
        const = (first,)
    return Rule(None, f"self, {first}", vjp=vjp, jvp=jvp, ns=A,
                receiver=True, constant=const,
                name=f"scipy.stats.{spec.dist.name}(...).{method}")


def _mv_rules(kind, method):
    pdf = method == "pdf"
    if kind == "mvn_method":
        vjp = {p: f"_adj.stats_mvn(g, ans, {p!r}, {pdf}, x, mean, cov)" for p in ("x", "mean", "cov")}
        jvp = {p: f"_adj.stats_mvn_jvp(t, ans, {p!r}, {pdf}, x, mean, cov)"
               for p in ("x", "mean", "cov")}
        return Rule(None, "x, mean=None, cov=1, allow_singular=False", vjp=vjp, jvp=jvp, ns=A,
                    forbid={"allow_singular": False},
                    name=f"scipy.stats.multivariate_normal.{method}")
    if kind == "dir_method":
        vjp = {p: f"_adj.stats_dirichlet(g, ans, {p!r}, {pdf}, x, alpha)" for p in ("x", "alpha")}
        jvp = {p: f"_adj.stats_dirichlet_jvp(t, ans, {p!r}, {pdf}, x, alpha)" for p in ("x", "alpha")}
        return Rule(None, "x, alpha", vjp=vjp, jvp=jvp, ns=A,
                    name=f"scipy.stats.dirichlet.{method}")
    if kind == "frozen":
        m = repr(method)
        return Rule(None, "self, x", vjp={"self": f"_adj.stats_frozen_mv(g, ans, {m}, self, x)",
                                          "x": f"_adj.stats_frozen_mv_x(g, ans, {m}, self, x)"},
                    jvp={"self": f"_adj.stats_frozen_mv_jvp(t, ans, {m}, self, x)",
                         "x": f"_adj.stats_frozen_mv_x_jvp(t, ans, {m}, self, x)"},
                    ns=A, receiver=True, name=f"scipy.stats frozen multivariate.{method}")
    if kind == "mvn_freeze":
        return Rule(None, "mean=None, cov=1, allow_singular=False, seed=None",
                    vjp={"mean": "_adj.stats_mv_part(g, ans, 'mean', mean)",
                         "cov": "_adj.stats_mv_part(g, ans, '_cov', cov)"},
                    jvp={"mean": "_adj.stats_mv_tangent(t, ans, 'mean', mean)",
                         "cov": "_adj.stats_mv_tangent(t, ans, '_cov', cov)"},
                    forbid={"allow_singular": False}, ns=A, kind="any",
                    name="scipy.stats.multivariate_normal")
    return Rule(None, "alpha, seed=None", vjp={"alpha": "_adj.stats_mv_part(g, ans, 'alpha', alpha)"},
                jvp={"alpha": "_adj.stats_mv_tangent(t, ans, 'alpha', alpha)"}, ns=A, kind="any",
                name="scipy.stats.dirichlet")


def _cached(key, make):
    rule = _CACHE.get(key)
    if rule is None:
        rule = _CACHE[key] = make()
    return rule


@defresolver
def resolve(fn):
    """The rule of a scipy.stats callee: a distribution's method (module or frozen form) or the
    distribution itself (freezing); None for anything else."""
    owner = getattr(fn, "__self__", None)
    name = getattr(fn, "__name__", None)
    if isinstance(owner, rv_generic):
        spec = _SPECS.get(type(owner).__name__)
        methods = _DISC_METHODS if spec is not None and spec.kind == "disc" else _CONT_METHODS
        if spec is None or name not in methods or not _supported(owner, spec):
            return None
        return _cached((type(owner), name), lambda: _method_rule(spec, name))
    if isinstance(owner, rv_frozen):
        dist = owner.dist
        spec = _SPECS.get(type(dist).__name__)
        methods = _DISC_METHODS if spec is not None and spec.kind == "disc" else _CONT_METHODS
        if spec is None or name not in methods or not _supported(dist, spec):
            return None
        return _cached(("frozen", type(dist), name), lambda: _frozen_rule(spec, name))
    if isinstance(fn, rv_generic) and not isinstance(fn, type):
        spec = _SPECS.get(type(fn).__name__)
        if spec is None or not _supported(fn, spec):
            return None
        return _cached(("freeze", type(fn)), lambda: _freeze_rule(spec))
    if multivariate_normal_gen is None:
        return None
    if isinstance(owner, (multivariate_normal_gen, dirichlet_gen)) and name in _MV_METHODS:
        kind = "mvn_method" if isinstance(owner, multivariate_normal_gen) else "dir_method"
        return _cached((kind, name), lambda: _mv_rules(kind, name))
    if isinstance(owner, (multivariate_normal_frozen, dirichlet_frozen)) and name in _MV_METHODS:
        return _cached(("frozen_mv", name), lambda: _mv_rules("frozen", name))
    if isinstance(fn, multivariate_normal_gen):
        return _cached("mvn_freeze", lambda: _mv_rules("mvn_freeze", None))
    if isinstance(fn, dirichlet_gen):
        return _cached("dir_freeze", lambda: _mv_rules("dir_freeze", None))
    return None


export(globals())
