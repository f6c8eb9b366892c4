"""Signal processing and polynomials: ``cross``, ``convolve``, ``correlate``, ``interp``,
``trapezoid``, ``polyval``.
"""
import numpy as np

from ... import runtime as _rt
from ..adjoints import A, _each, _np, asarray, cj, expand, export, like, shape, xp
from .shape import diff
from ..registry import defrule

defrule(np.cross, "a, b, axisa=-1, axisb=-1, axisc=-1, axis=None",
        vjp={"a": "_adj.cross(g, a, b, axisa, axisb, axisc, axis, 0)",
             "b": "_adj.cross(g, a, b, axisa, axisb, axisc, axis, 1)"},
        jvp={"a": "np.cross(t, b, axisa, axisb, axisc, axis)",
             "b": "np.cross(a, t, axisa, axisb, axisc, axis)"}, ns=A)
defrule(np.convolve, "a, v, mode='full'",
        vjp={"a": "_adj.convolve(g, a, v, mode, 0)", "v": "_adj.convolve(g, a, v, mode, 1)"},
        jvp={"a": "np.convolve(t, v, mode)", "v": "np.convolve(a, t, mode)"}, ns=A)
defrule(np.correlate, "a, v, mode='valid'",
        vjp={"a": "_adj.correlate(g, a, v, mode, 0)", "v": "_adj.correlate(g, a, v, mode, 1)"},
        jvp={"a": "np.correlate(t, v, mode)", "v": "np.correlate(a, t, mode)"}, ns=A)
defrule(np.interp, "x, xp, fp, left=None, right=None, period=None",
        vjp={k: f"_adj.interp(g, x, xp, fp, left, right, {k!r})"
             for k in ("x", "xp", "fp", "left", "right")},
        jvp={k: f"_adj.tangent_as(_adj.interp_tangent(t, x, xp, fp, left, right, {k!r}), ans)"
             for k in ("x", "xp", "fp", "left", "right")},
        forbid={"period": None}, ns=A)
_each(_np("trapezoid", "trapz"), "y, x=None, dx=1.0, axis=-1",
      vjp={k: f"_adj.trapezoid(g, y, x, dx, axis, {k!r})" for k in ("y", "x", "dx")},
      jvp={k: f"_adj.trapezoid_tangent(t, y, x, dx, axis, {k!r})" for k in ("y", "x", "dx")},
      ns=A)
defrule(np.polyval, "p, x", vjp={"p": "_adj.polyval(g, p, x, 'p')", "x": "_adj.polyval(g, p, x, 'x')"},
        jvp={"p": "_adj.polyval_tangent(t, p, x, 'p')", "x": "_adj.polyval_tangent(t, p, x, 'x')"},
        ns=A)


# -- helpers the templates call --------------------------------------------------------------------
def _cross_axes(axisa, axisb, axisc, axis):
    if axis is not None:
        return axis, axis, axis
    return axisa, axisb, axisc


def cross(g, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None, which=0):
    """Adjoint of ``np.cross``: g . (a x b) = a . (b x g), so ``a`` gets conj(b) x g and ``b``
    gets g x conj(a) (2-vectors taken as 3-vectors with a zero third component)."""
    axisa, axisb, axisc = _cross_axes(axisa, axisb, axisc, axis)
    m = xp(g, a, b)
    A = m.moveaxis(asarray(a, like=g), axisa, -1)
    B = m.moveaxis(asarray(b, like=g), axisb, -1)
    na, nb = A.shape[-1], B.shape[-1]

    def three(v):
        if v.shape[-1] == 3:
            return v
        return m.concatenate([v, m.zeros(v.shape[:-1] + (1,), dtype=v.dtype)], axis=-1)
    g_ = asarray(g, like=A)
    if na == 2 and nb == 2:
        z = m.zeros(g_.shape + (2,), dtype=g_.dtype)
        G = m.concatenate([z, g_[..., None]], axis=-1)
    else:
        G = m.moveaxis(g_, axisc, -1) if g_.ndim else g_
    if which == 0:
        r = m.cross(cj(three(B)), G)[..., :na]
        return like(m.moveaxis(_rt.unbroadcast(r, A), -1, axisa), a)
    r = m.cross(G, cj(three(A)))[..., :nb]
    return like(m.moveaxis(_rt.unbroadcast(r, B), -1, axisb), b)


def _full_from_mode(g, n, k, mode):
    """The zero-padded full-mode adjoint of a 1-D convolution result in ``mode``."""
    m = xp(g)
    g = asarray(g)
    L = n + k - 1
    mn, mx = min(n, k), max(n, k)
    if mode == "full":
        return g
    off = (mn - 1) // 2 if mode == "same" else mn - 1
    return m.concatenate([m.zeros(off, dtype=g.dtype), g,
                          m.zeros(L - off - g.shape[0], dtype=g.dtype)])


def _mode_name(mode):
    return {0: "valid", 1: "same", 2: "full"}.get(mode, mode)


def convolve(g, a, v, mode="full", which=0):
    """Adjoint of ``np.convolve`` (c = a * v): ``a`` gets correlate(g_full, v, 'valid'), ``v``
    gets correlate(g_full, a, 'valid')."""
    m = xp(g, a, v)
    A = asarray(a, like=g).reshape(-1)
    V = asarray(v, like=g).reshape(-1)
    gf = _full_from_mode(g, A.shape[0], V.shape[0], _mode_name(mode))
    if which == 0:
        return like(m.correlate(gf, V, "valid").reshape(shape(a)), a)
    return like(m.correlate(gf, A, "valid").reshape(shape(v)), v)


def correlate(g, a, v, mode="valid", which=0):
    """Adjoint of ``np.correlate(a, v)`` = convolve(a, conj(v[::-1])) in modes 'full' and
    'valid'.  In mode 'same' NumPy centres the result differently when ``a`` is the shorter
    (offset len(a) // 2 into the full result, not (len(v) - 1) // 2): g is put back into the full
    result at NumPy's offset, and the full-mode adjoint taken."""
    m = xp(g, a, v)
    V = asarray(v, like=g).reshape(-1)
    vr = cj(m.flip(V, 0))
    if _mode_name(mode) == "same":
        n, k = int(np.size(a)), V.shape[0]
        off = (k - 1) // 2 if n >= k else n // 2
        G = asarray(g, like=V).reshape(-1)
        g = m.concatenate([m.zeros(off, dtype=G.dtype), G,
                           m.zeros(n + k - 1 - off - G.shape[0], dtype=G.dtype)])
        mode = "full"
    if which == 0:
        return convolve(g, a, vr, mode, 0)
    r = asarray(convolve(g, a, vr, mode, 1))
    return like(cj(m.flip(r, 0)).reshape(shape(v)), v)


def _interp_setup(x, xp_, fp):
    m = xp(x, xp_, fp)
    X = asarray(x, like=fp)
    P = asarray(xp_, like=fp)
    F = asarray(fp, like=P)
    n = P.shape[0]
    j = m.clip(m.searchsorted(P, X, side="right") - 1, 0, max(n - 2, 0))
    j1 = m.minimum(j + 1, n - 1)
    dx = P[j1] - P[j]
    safe = m.where(dx == 0, 1, dx)
    w = m.where(dx == 0, 0, (X - P[j]) / safe)
    below = X < P[0]
    above = X > P[n - 1]
    inside = ~(below | above)
    return m, X, P, F, n, j, j1, w, safe, dx, below, above, inside


def interp(g, x, xp_, fp, left=None, right=None, which="fp"):
    """Adjoint of ``np.interp``: ``fp`` gets g split between the two neighbouring knots by the
    interpolation weights (and the end values outside, unless left/right are given); ``x`` gets g
    times the slope of the segment (0 outside); ``xp`` through the segment's end points."""
    m, X, P, F, n, j, j1, w, safe, dx, below, above, inside = _interp_setup(x, xp_, fp)
    g_ = asarray(g, like=P)
    gb = m.broadcast_to(g_, X.shape)
    if which == "fp":
        out = m.zeros(F.shape, dtype=np.result_type(F.dtype, g_.dtype))
        lo_w = m.where(inside, 1 - w, 0).astype(out.real.dtype)
        hi_w = m.where(inside, w, 0).astype(out.real.dtype)
        _rt.scatter_add(out, j.reshape(-1), (gb * lo_w).reshape(-1))
        _rt.scatter_add(out, j1.reshape(-1), (gb * hi_w).reshape(-1))
        if left is None:
            out[0] += (gb * below).sum()
        if right is None:
            out[n - 1] += (gb * above).sum()
        return like(out, fp)
    if which == "left":
        return _rt.unbroadcast((gb * below).sum(), left) if hasattr(left, "shape") else \
            like((gb * below).sum(), left)
    if which == "right":
        return _rt.unbroadcast((gb * above).sum(), right) if hasattr(right, "shape") else \
            like((gb * above).sum(), right)
    slope = m.where(inside & (dx != 0), (F[j1] - F[j]) / safe, 0)
    if which == "x":
        r = gb * cj(slope)
        return _rt.unbroadcast(r, x) if hasattr(x, "shape") and not isinstance(x, np.generic) \
            else like(r, x)
    # xp: the knots of the segment: d/dxp[j] = -slope (1 - w), d/dxp[j+1] = -slope w
    c = gb * cj(slope)
    out = m.zeros(P.shape, dtype=np.result_type(P.dtype, c.real.dtype))
    _rt.scatter_add(out, j.reshape(-1), (-(c * (1 - w)).real).reshape(-1))
    _rt.scatter_add(out, j1.reshape(-1), (-(c * w).real).reshape(-1))
    return like(out, xp_)


def interp_tangent(t, x, xp_, fp, left=None, right=None, which="fp"):
    m, X, P, F, n, j, j1, w, safe, dx, below, above, inside = _interp_setup(x, xp_, fp)
    t_ = asarray(t, like=P)
    if which == "fp":
        r = m.where(inside, (1 - w) * t_[j] + w * t_[j1], m.zeros_like(t_[j]))
        if left is None:
            r = r + m.where(below, t_[0], m.zeros_like(t_[0]))
        if right is None:
            r = r + m.where(above, t_[n - 1], m.zeros_like(t_[0]))
        return r
    if which in ("left", "right"):
        mask = below if which == "left" else above
        return m.where(mask, t_, m.zeros_like(t_))
    slope = m.where(inside & (dx != 0), (F[j1] - F[j]) / safe, 0)
    if which == "x":
        return slope * t_
    return -slope * ((1 - w) * t_[j] + w * t_[j1])


def _trap_parts(y, x, dx, axis):
    y_ = asarray(y)
    m = xp(y_, x)
    nd = y_.ndim
    ax = axis % nd
    s1 = [slice(None)] * nd
    s2 = [slice(None)] * nd
    s1[ax] = slice(1, None)
    s2[ax] = slice(None, -1)
    if x is None:
        d = asarray(dx, like=y_)
        if type(dx) in (int, float, complex) and y_.dtype.kind in "fc":
            # a Python number, as np.trapezoid multiplies by it: y's precision (float32 stays)
            d = d.astype(np.result_type(y_.dtype, dx))
    else:
        xa = asarray(x, like=y_)
        if xa.ndim == 1:
            d = m.diff(xa)
            sh = [1] * nd
            sh[ax] = d.shape[0]
            d = d.reshape(sh)
        else:
            d = m.diff(xa, axis=ax)
    return m, y_, ax, tuple(s1), tuple(s2), d


def trapezoid(g, y, x=None, dx=1.0, axis=-1, which="y"):
    """Adjoint of ``np.trapezoid``: sum(d (y[1:] + y[:-1]) / 2) with d = diff(x) or dx."""
    m, y_, ax, s1, s2, d = _trap_parts(y, x, dx, axis)
    mid = (y_[s1] + y_[s2]) / 2
    ge = expand(g, shape(mid * d), ax, False, like=y_)
    if which == "y":
        h = ge * cj(d) / 2
        h = m.broadcast_to(h, np.broadcast_shapes(h.shape, mid.shape))
        pw1 = [(0, 0)] * h.ndim
        pw2 = [(0, 0)] * h.ndim
        pw1[ax] = (1, 0)
        pw2[ax] = (0, 1)
        return like(_rt.unbroadcast(m.pad(h, pw1) + m.pad(h, pw2), y_), y)
    gd = ge * cj(mid)
    if which == "dx":
        return _rt.unbroadcast(gd, dx) if hasattr(dx, "shape") and not isinstance(dx, np.generic) \
            else like(gd.sum(), dx)
    xa = asarray(x, like=y_)
    if xa.ndim == 1:
        gd = gd.sum(axis=tuple(i for i in range(gd.ndim) if i != ax))
        return like(diff(gd, xa, 1, 0), x)
    gd = _rt.unbroadcast(gd, m.diff(xa, axis=ax))
    return like(diff(gd, xa, 1, ax), x)


def trapezoid_tangent(t, y, x=None, dx=1.0, axis=-1, which="y"):
    m, y_, ax, s1, s2, d = _trap_parts(y, x, dx, axis)
    if which == "y":
        t_ = asarray(t, like=y_)
        return (d * (t_[s1] + t_[s2]) / 2).sum(axis=ax)
    mid = (y_[s1] + y_[s2]) / 2
    if which == "dx":
        return (asarray(t, like=y_) * mid).sum(axis=ax)
    _, _, _, _, _, dt = _trap_parts(y, t, dx, axis)
    return (dt * mid).sum(axis=ax)


def _horner(p, x):
    y = 0 * x
    for k in range(p.shape[0]):
        y = y * x + p[k]
    return y


def polyval(g, p, x, which="p"):
    """Adjoint of ``np.polyval``: ``p[k]`` gets g conj(x^(N-k)), ``x`` gets g conj(p'(x))."""
    P = asarray(p, like=x)
    m = xp(P, x)
    X = asarray(x, like=P)
    N = P.shape[0] - 1
    g_ = asarray(g, like=P)
    if which == "x":
        if N < 1:
            return like(0 * g_, x) if not hasattr(x, "shape") else _rt.unbroadcast(0 * g_, x)
        k = m.arange(N, 0, -1).reshape((N,) + (1,) * (P.ndim - 1))
        r = g_ * cj(_horner(P[:-1] * k, X))
        return _rt.unbroadcast(r, x) if hasattr(x, "shape") and not isinstance(x, np.generic) \
            else like(r, x)
    out = []
    pw = m.ones_like(X)
    rows = [None] * (N + 1)
    for k in range(N, -1, -1):
        rows[k] = _rt.unbroadcast(g_ * cj(pw), P[k]) if P.ndim > 1 else (g_ * cj(pw)).sum()
        pw = pw * X
    out = m.stack([asarray(r, like=P) for r in rows])
    return like(out, p)


def polyval_tangent(t, p, x, which="p"):
    P = asarray(p, like=x)
    m = xp(P, x)
    X = asarray(x, like=P)
    if which == "p":
        return _horner(asarray(t, like=P), X)
    N = P.shape[0] - 1
    if N < 1:
        return 0 * asarray(t, like=P) * X
    k = m.arange(N, 0, -1).reshape((N,) + (1,) * (P.ndim - 1))
    if P.dtype.kind in "fc":
        k = k.astype(P.dtype)          # (the powers as P's dtype: float32 stays float32)
    return asarray(t, like=P) * _horner(P[:-1] * k, X)


export(globals())
