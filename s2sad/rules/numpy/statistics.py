"""Statistics: ``average``, nan-reductions (``nansum``, ``nanmean``, ``nanmax``, ``nanvar``...), ``ptp``, order statistics (``quantile``, ``percentile``,
``median``), ``cov``, ``corrcoef``.
"""
import numpy as np

from ... import runtime as _rt
from ..adjoints import (A, _NoValue, _count_as, _each, _inverse, _mH, asarray, broadcast, cj, count,
                        expand, export, like, norm_axes, shape, tangent_as, xp)
from .reductions import _MAX, _VAR, _masked_centered, _reduce_tangent, extremum, extremum_tangent
from ..registry import defrule

defrule(np.average, "a, axis=None, weights=None, returned=False, *, keepdims=False",
        vjp={"a": "_adj.average(g, ans, a, axis, weights, keepdims, 'a')",
             "weights": "_adj.average(g, ans, a, axis, weights, keepdims, 'weights')"},
        jvp={"a": "_adj.average_tangent(t, ans, a, axis, weights, keepdims, 'a')",
             "weights": "_adj.average_tangent(t, ans, a, axis, weights, keepdims, 'weights')"},
        forbid={"returned": False}, ns=A)
defrule(np.nansum, "a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True",
        vjp={"a": "_rt.dtype_guard(dtype, _adj.nansum(g, a, axis, keepdims, where=where))",
             "initial": "_rt.unbroadcast(g, initial)"},
        jvp={"a": "_adj.nansum_tangent(t, a, axis, keepdims, where=where)", "initial": "t"},
        forbid={"out": None}, ns=A)
defrule(np.nanmean, "a, axis=None, dtype=None, out=None, keepdims=False, *, where=True",
        vjp={"a": "_rt.dtype_guard(dtype, _adj.nansum(g, a, axis, keepdims, True, where=where))"},
        jvp={"a": "_adj.nansum_tangent(t, a, axis, keepdims, True, where=where)"},
        forbid={"out": None}, ns=A)
# max/min over the values that are not nan: nan never equals the result, so it gets nothing
_each([np.nanmax, np.nanmin], _MAX,
      vjp={"a": "_adj.extremum(g, ans, a, axis, keepdims, where=where)",
           "initial": "_rt.extremum_initial_adjoint(g, ans, a, initial, axis, keepdims, "
                      "where=where)"},
      jvp={"a": "_adj.extremum_tangent(t, ans, a, axis, keepdims, where=where)"},
      forbid={"out": None}, ns=A)
# variance and standard deviation of the values that are not nan (the nan entries get nothing)
defrule(np.nanvar, _VAR,
        vjp={"a": "_adj.nanvar(g, a, axis, _adj._correction(ddof, correction), keepdims, "
                  "where=where)"},
        jvp={"a": "_adj.nanvar_tangent(t, a, axis, _adj._correction(ddof, correction), keepdims, "
                  "where=where)"},
        forbid={"out": None, "mean": None}, ns=A)
defrule(np.nanstd, _VAR,
        vjp={"a": "_adj.nanstd(g, ans, a, axis, _adj._correction(ddof, correction), keepdims, "
                  "where=where)"},
        jvp={"a": "_adj.nanstd_tangent(t, ans, a, axis, _adj._correction(ddof, correction), "
                  "keepdims, where=where)"},
        forbid={"out": None, "mean": None}, ns=A)
defrule(np.ptp, "a, axis=None, out=None, keepdims=False",
        vjp={"a": "_adj.ptp(g, a, axis, keepdims)"}, jvp={"a": "_adj.ptp_tangent(t, a, axis, keepdims)"},
        forbid={"out": None}, ns=A)
# order statistics (method='linear'): the two neighbouring sorted values, interpolated
_Q = "a, q, axis=None, out=None, overwrite_input=False, method='linear', keepdims=False, *, weights=None"
_QF = {"out": None, "overwrite_input": False, "method": "linear", "weights": None}
for _fn, _scale in ((np.quantile, 1.0), (np.percentile, 100.0)):
    defrule(_fn, _Q,
            vjp={"a": f"_adj.quantile(g, ans, a, q, axis, keepdims, {_scale}, 'a')",
                 "q": f"_adj.quantile(g, ans, a, q, axis, keepdims, {_scale}, 'q')"},
            jvp={"a": f"_adj.quantile_tangent(t, ans, a, q, axis, keepdims, {_scale}, 'a')",
                 "q": f"_adj.quantile_tangent(t, ans, a, q, axis, keepdims, {_scale}, 'q')"},
            forbid=_QF, ns=A)
defrule(np.median, "a, axis=None, out=None, overwrite_input=False, keepdims=False",
        vjp={"a": "_adj.quantile(g, ans, a, 0.5, axis, keepdims)"},
        jvp={"a": "_adj.quantile_tangent(t, ans, a, 0.5, axis, keepdims)"},
        forbid={"out": None, "overwrite_input": False}, ns=A)
defrule(np.cov, "m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *, "
        "dtype=None",
        vjp={"m": "_adj.cov(g, ans, m, y, rowvar, bias, ddof, dtype, 'm')",
             "y": "_adj.cov(g, ans, m, y, rowvar, bias, ddof, dtype, 'y')"},
        jvp={"m": "_adj.cov_tangent(t, ans, m, y, rowvar, bias, ddof, dtype, 'm')",
             "y": "_adj.cov_tangent(t, ans, m, y, rowvar, bias, ddof, dtype, 'y')"},
        forbid={"fweights": None, "aweights": None}, ns=A)
defrule(np.corrcoef, "x, y=None, rowvar=True, *, dtype=None",
        vjp={"x": "_adj.corrcoef(g, ans, x, y, rowvar, dtype, 'x')",
             "y": "_adj.corrcoef(g, ans, x, y, rowvar, dtype, 'y')"},
        jvp={"x": "_adj.corrcoef_tangent(t, ans, x, y, rowvar, dtype, 'x')",
             "y": "_adj.corrcoef_tangent(t, ans, x, y, rowvar, dtype, 'y')"}, ns=A)


# -- helpers the templates call --------------------------------------------------------------------
def _keep(keepdims):
    return False if keepdims is None or keepdims is _NoValue else bool(keepdims)


def _average_weights(a, axis, weights):
    """The weights of ``np.average`` laid out to broadcast against ``a`` (as NumPy lays them out),
    and the function taking an array of a's shape back to the shape of ``weights``."""
    w = asarray(weights, like=a)
    if tuple(w.shape) == tuple(a.shape):
        return w, lambda x: x
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    axes = tuple(int(ax) % a.ndim for ax in axes)
    order = tuple(int(i) for i in np.argsort(axes))
    wt = w.transpose(order)
    lay = wt.reshape(tuple(s if ax in axes else 1 for ax, s in enumerate(a.shape)))
    inv = _inverse(order)
    return lay, lambda x: _rt.unbroadcast(x, lay).reshape(wt.shape).transpose(inv)


def average(g, ans, a, axis=None, weights=None, keepdims=False, which="a"):
    """Adjoint of ``np.average`` (returned=False): ``a`` gets g w / sum(w), the weights get
    g (a - avg) / sum(w)."""
    a_ = asarray(a)
    kd = _keep(keepdims)
    axes = norm_axes(axis, a_.ndim)
    ge = expand(g, a_.shape, axis, kd, like=a_)
    if weights is None:
        return like(broadcast(ge / count(a_.shape, axis), a_), a) if which == "a" else None
    w, back = _average_weights(a_, axis, weights)
    W = w.sum(axis=axes, keepdims=True)
    if which == "a":
        return like(_rt.unbroadcast(ge * cj(w / W), a_), a)
    ae = expand(ans, a_.shape, axis, kd, like=a_)
    return like(back(ge * cj((a_ - ae) / W)), weights)


def average_tangent(t, ans, a, axis=None, weights=None, keepdims=False, which="a"):
    a_ = asarray(a)
    kd = _keep(keepdims)
    axes = norm_axes(axis, a_.ndim)
    if weights is None:
        return asarray(t, like=a_).mean(axis=axes, keepdims=kd)
    w, _ = _average_weights(a_, axis, weights)
    W = w.sum(axis=axes, keepdims=True)
    if which == "a":
        return (asarray(t, like=a_) * (w / W)).sum(axis=axes, keepdims=kd)
    tw, _ = _average_weights(a_, axis, t)
    ae = expand(ans, a_.shape, axis, kd, like=a_)
    return (tw * (a_ - ae) / W).sum(axis=axes, keepdims=kd)


def _ok(a, where=True):
    """Where ``a`` is not nan and ``where=`` keeps the element."""
    ok = ~xp(a).isnan(a)
    return ok if where is True else ok & xp(a).asarray(where, dtype=bool)


def nansum(g, a, axis=None, keepdims=False, mean=False, where=True):
    """Adjoint of ``np.nansum`` / ``np.nanmean``: nothing flows to the nan entries (nor to those
    ``where=`` leaves out)."""
    a_ = asarray(a)
    m = xp(a_)
    ok = _ok(a_, where)
    ge = expand(g, a_.shape, axis, _keep(keepdims), like=a_)
    if mean:
        n = ok.sum(axis=norm_axes(axis, a_.ndim), keepdims=True)
        ge = ge / m.maximum(n, 1)
    return like(m.where(ok, ge, 0 * ge), a)


def nansum_tangent(t, a, axis=None, keepdims=False, mean=False, where=True):
    a_ = asarray(a)
    m = xp(a_)
    ok = _ok(a_, where)
    t = asarray(t, like=a_)
    axes = norm_axes(axis, a_.ndim)
    r = m.where(ok, t, m.zeros_like(t)).sum(axis=axes, keepdims=_keep(keepdims))
    # (the count in t's dtype: a float32 tangent stays float32)
    return r / _count_as(ok.sum(axis=axes, keepdims=_keep(keepdims)), r) if mean else r


def _nan_centered(a, axis, where=True):
    """(ok, n, d) for the nan-reductions of spread: where ``a`` is not nan (and ``where=`` keeps
    it), how many such values each slice has (kept dims), and ``a`` minus their mean there (0 at
    the other entries)."""
    ok = _ok(a, where)
    n, d = _masked_centered(a, axis, ok)
    return ok, n, d


def nanvar(g, a, axis=None, ddof=0, keepdims=False, where=True):
    """Adjoint of ``np.nanvar``: as ``var``'s over the values that are not nan, 0 at the nan ones
    (a slice with no more than ``ddof`` values gives nan, as the variance does)."""
    a_ = asarray(a)
    m = xp(a_)
    ok, n, d = _nan_centered(a_, axis, where)
    ge = expand(g, a_.shape, axis, _keep(keepdims), like=a_)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = ge * (2.0 / (n - ddof)) * d
    return like(m.where(ok, r, 0 * r), a)


def nanvar_tangent(t, a, axis=None, ddof=0, keepdims=False, where=True):
    a_ = asarray(a)
    m = xp(a_)
    ok, n, d = _nan_centered(a_, axis, where)
    t = asarray(t, like=a_)
    c = (cj(d) * t).real if a_.dtype.kind == "c" or t.dtype.kind == "c" else d * t
    with np.errstate(divide="ignore", invalid="ignore"):
        c = c * _count_as(2.0 / (n - ddof), c)
    return _reduce_tangent(m.where(ok, c, m.zeros_like(c)), a_, axis, keepdims)


def nanstd(g, ans, a, axis=None, ddof=0, keepdims=False, where=True):
    """Adjoint of ``np.nanstd``; 0 where the standard deviation is 0 (as ``std``'s)."""
    a_ = asarray(a)
    m = xp(a_)
    ok, n, d = _nan_centered(a_, axis, where)
    ge = expand(g, a_.shape, axis, _keep(keepdims), like=a_)
    se = expand(ans, a_.shape, axis, _keep(keepdims), like=a_)
    safe = m.where(se == 0, 1, se)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = ge * d / ((n - ddof) * safe)
    return like(m.where(ok & (se != 0), r, 0 * r), a)


def nanstd_tangent(t, ans, a, axis=None, ddof=0, keepdims=False, where=True):
    m = xp(a)
    ans_ = asarray(ans, like=asarray(a))
    safe = m.where(ans_ == 0, 1, ans_)
    return m.where(ans_ == 0, 0, nanvar_tangent(t, a, axis, ddof, keepdims, where) / (2 * safe))


def ptp(g, a, axis=None, keepdims=False):
    """Adjoint of ``np.ptp`` = max - min (ties split evenly)."""
    a_ = asarray(a)
    axes = norm_axes(axis, a_.ndim)
    ge = expand(g, a_.shape, axis, _keep(keepdims), like=a_)
    hi = a_.max(axis=axes, keepdims=True)
    lo = a_.min(axis=axes, keepdims=True)
    return like(extremum(ge, hi, a_, axes, True) - extremum(ge, lo, a_, axes, True), a)


def ptp_tangent(t, a, axis=None, keepdims=False):
    a_ = asarray(a)
    axes = norm_axes(axis, a_.ndim)
    hi = a_.max(axis=axes, keepdims=True)
    lo = a_.min(axis=axes, keepdims=True)
    out = shape(a_.max(axis=axes, keepdims=_keep(keepdims)))
    return (extremum_tangent(t, hi, a_, axes, True) -
            extremum_tangent(t, lo, a_, axes, True)).reshape(out)


def _quantile_setup(a, q, axis, scale):
    """Order statistics of ``a`` over ``axis`` (flattened to the last axis), and for each q the
    interpolation weights over the sorted positions (NumPy's method='linear')."""
    a_ = asarray(a)
    m = xp(a_)
    axes = norm_axes(axis, a_.ndim)
    keep = [i for i in range(a_.ndim) if i not in axes]
    perm = keep + list(axes)
    at = a_.transpose(perm)
    lead = at.shape[:len(keep)]
    n = int(np.prod(at.shape[len(keep):])) if axes else 1
    flat = at.reshape(lead + (n,))
    order = m.argsort(flat, axis=-1, kind="stable")
    qq = asarray(q, like=a_)
    qq = (qq.real if qq.dtype.kind == "c" else qq).astype(a_.real.dtype if a_.dtype.kind in "fc"
                                                          else np.float64) / scale
    qshape = tuple(qq.shape)
    h = qq.reshape(-1) * (n - 1)
    lo = m.clip(m.floor(h), 0, n - 1).astype(np.int64)
    hi = m.minimum(lo + 1, n - 1)
    frac = h - lo
    ar = m.arange(n)
    W = (1 - frac)[:, None] * (ar == lo[:, None]) + frac[:, None] * (ar == hi[:, None])
    return dict(a=a_, m=m, perm=perm, at_shape=at.shape, lead=lead, n=n, flat=flat,
                order=order, qshape=qshape, lo=lo, hi=hi, W=W)


def quantile(g, ans, a, q, axis=None, keepdims=False, scale=1.0, which="a"):
    """Adjoint of ``np.quantile`` / ``np.percentile`` (``scale=100``) / ``np.median`` with
    method='linear': each result is (1-f) s[lo] + f s[hi] of the sorted values s, so g reaches
    the two neighbouring order statistics; ``q`` gets g (s[hi] - s[lo]) (n - 1) / scale."""
    S = _quantile_setup(a, q, axis, scale)
    m, lead, n = S["m"], S["lead"], S["n"]
    K = S["W"].shape[0]
    gq = asarray(g, like=S["a"]).reshape((K,) + lead)
    if which == "q":
        srt = m.take_along_axis(S["flat"], S["order"], axis=-1)
        d = (m.take(srt, S["hi"], axis=-1) - m.take(srt, S["lo"], axis=-1)) * ((n - 1) / scale)
        d = m.moveaxis(d, -1, 0)                     # (K,) + lead
        r = (gq * cj(d)).reshape((K, -1)).sum(axis=1).reshape(S["qshape"])
        return like(r, q)
    gs = m.tensordot(m.moveaxis(gq, 0, -1), S["W"].astype(gq.real.dtype), axes=([-1], [0]))
    out = m.zeros(S["flat"].shape, dtype=gs.dtype)
    m.put_along_axis(out, S["order"], gs, axis=-1)
    out = out.reshape(S["at_shape"]).transpose(_inverse(S["perm"]))
    return like(out, a)


def quantile_tangent(t, ans, a, q, axis=None, keepdims=False, scale=1.0, which="a"):
    S = _quantile_setup(a, q, axis, scale)
    m, lead, n = S["m"], S["lead"], S["n"]
    if which == "q":
        srt = m.take_along_axis(S["flat"], S["order"], axis=-1)
        d = (m.take(srt, S["hi"], axis=-1) - m.take(srt, S["lo"], axis=-1)) * ((n - 1) / scale)
        tq = asarray(t, like=S["a"]).reshape(-1)
        return tangent_as(m.moveaxis(d * tq, -1, 0).reshape(shape(ans)), ans)
    tt = asarray(t, like=S["a"]).transpose(S["perm"]).reshape(lead + (n,))
    ts = m.take_along_axis(tt, S["order"], axis=-1)
    r = m.tensordot(S["W"].astype(S["a"].real.dtype), ts, axes=([1], [len(lead)]))
    # (in the output's dtype: a float64 q makes a float32 array's quantiles float64)
    return tangent_as(r.reshape(shape(ans)), ans)


def _cov_input(m_, y, rowvar, dtype=None):
    """The variables-by-observations matrix ``np.cov`` builds from ``m`` and ``y``."""
    mod = xp(m_, y)
    dts = [v.dtype if hasattr(v, "dtype") else np.result_type(v) for v in (m_, y) if v is not None]
    dt = dtype if dtype is not None else np.result_type(*dts, np.float64)
    ma = asarray(m_, like=y).astype(dt)
    X = ma.reshape(1, -1) if ma.ndim < 2 else ma
    if not rowvar and ma.ndim != 1:
        X = X.T
    parts = [X]
    if y is not None:
        ya = asarray(y, like=ma).astype(dt)
        Y = ya.reshape(1, -1) if ya.ndim < 2 else ya
        if not rowvar and Y.shape[0] != 1:
            Y = Y.T
        parts.append(Y)
    return mod.concatenate(parts, axis=0) if len(parts) > 1 else X, X.shape[0]


def _cov_back(gX, m_, y, rowvar, nm, which):
    """The part of a gradient w.r.t. the stacked matrix that belongs to ``m`` or ``y`` (the
    transposes of :func:`_cov_input` undone)."""
    x = m_ if which == "m" else y
    xa = asarray(x, like=gX)
    part = gX[:nm] if which == "m" else gX[nm:]
    if not rowvar:
        if which == "m" and xa.ndim != 1:
            part = part.T
        elif which == "y" and (xa.ndim >= 2 and xa.shape[0] != 1):
            part = part.T
    return like(part.reshape(xa.shape), x)


def _cov_fact(X, bias, ddof):
    if ddof is None:
        ddof = 0 if bias else 1
    return X.shape[1] - ddof


def cov(g, ans, m_, y=None, rowvar=True, bias=False, ddof=None, dtype=None, which="m"):
    """Adjoint of ``np.cov``: C = Xc Xc^H / f with Xc the rows of X centred, so
    gXc = (G + G^H) Xc / f, and centring is its own adjoint."""
    X, nm = _cov_input(m_, y, rowvar, dtype)
    p = X.shape[0]
    Xc = X - X.mean(axis=1, keepdims=True)
    G = asarray(g, like=X).reshape(p, p)
    gX = (G + _mH(G)) @ Xc / _cov_fact(X, bias, ddof)
    gX = gX - gX.mean(axis=1, keepdims=True)
    return _cov_back(gX, m_, y, rowvar, nm, which)


def _cov_tangent_stacked(t, m_, y, rowvar, dtype, which):
    X, nm = _cov_input(m_, y, rowvar, dtype)
    z = [xp(X).zeros(shape(m_), dtype=X.dtype) if which != "m" else t]
    if y is not None:
        z.append(t if which == "y" else xp(X).zeros(shape(y), dtype=X.dtype))
    T, _ = _cov_input(z[0], z[1] if y is not None else None, rowvar, X.dtype)
    return X, T


def cov_tangent(t, ans, m_, y=None, rowvar=True, bias=False, ddof=None, dtype=None, which="m"):
    X, T = _cov_tangent_stacked(t, m_, y, rowvar, dtype, which)
    Xc = X - X.mean(axis=1, keepdims=True)
    Tc = T - T.mean(axis=1, keepdims=True)
    d = Tc @ _mH(Xc)
    return ((d + _mH(d)) / _cov_fact(X, bias, ddof)).reshape(shape(ans))


def corrcoef(g, ans, x, y=None, rowvar=True, dtype=None, which="x"):
    """Adjoint of ``np.corrcoef``: R = C / (s s^T), s = sqrt(Re diag C), through ``cov``."""
    X, nm = _cov_input(x, y, rowvar, dtype)
    p = X.shape[0]
    if p == 1:                               # R = C / C = 1
        return like(xp(X).zeros(shape(x) if which == "x" else shape(y), dtype=X.dtype),
                    x if which == "x" else y)
    Xc = X - X.mean(axis=1, keepdims=True)
    C = Xc @ _mH(Xc) / (X.shape[1] - 1)
    d = xp(X).diagonal(C).real
    s = xp(X).sqrt(d)
    R = C / s[:, None] / s[None, :]
    G = asarray(g, like=X).reshape(p, p)
    gC = G / s[:, None] / s[None, :]
    gR = (cj(G) * R).real
    gd = -0.5 * (gR.sum(axis=1) + gR.sum(axis=0)) / d
    gC = gC + xp(X).diag(gd).astype(gC.dtype)
    return cov(gC, None, x, y, rowvar, False, None, dtype, "m" if which == "x" else "y")


def corrcoef_tangent(t, ans, x, y=None, rowvar=True, dtype=None, which="x"):
    X, T = _cov_tangent_stacked(t, x, y, rowvar, dtype, "m" if which == "x" else "y")
    p = X.shape[0]
    m = xp(X)
    if p == 1:
        return 0 * asarray(ans, like=X)
    Xc = X - X.mean(axis=1, keepdims=True)
    Tc = T - T.mean(axis=1, keepdims=True)
    f = X.shape[1] - 1
    C = Xc @ _mH(Xc) / f
    dC = Tc @ _mH(Xc)
    dC = (dC + _mH(dC)) / f
    d = m.diagonal(C).real
    s = m.sqrt(d)
    R = C / s[:, None] / s[None, :]
    dd = m.diagonal(dC).real / d
    return (dC / s[:, None] / s[None, :] - 0.5 * R * (dd[:, None] + dd[None, :])).reshape(shape(ans))


export(globals())
