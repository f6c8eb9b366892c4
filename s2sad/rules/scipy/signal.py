"""``scipy.signal``: ``convolve``, ``correlate``, ``fftconvolve``, ``oaconvolve``, ``convolve2d``
and ``correlate2d`` (modes full, same and valid), w.r.t. both inputs.

Each is linear in each input.  With ``g`` the output's adjoint placed in the full-mode output (the
same/valid results are centred slices of it, as SciPy takes them), the adjoint of ``in1`` of a
convolution is the valid-mode convolution of that full adjoint with ``in2`` reversed and
conjugated, and likewise for ``in2``; a correlation is the convolution with ``in2`` reversed and
conjugated (SciPy's own identity).  Tangents run the callee on the tangent.  The helpers work on
CuPy arrays too (with ``cupyx.scipy.signal``), for the CuPy table's mirrors of these rules.

Loaded only once the user's code has imported SciPy.
"""
import numpy as np
import scipy.signal as _ssig

from ... import runtime as _rt
from ..adjoints import A, asarray, cj, export, like, shape, xp
from ..registry import defrule

A = dict(A, _ssig=_ssig)

for _name, _corr in (("convolve", False), ("correlate", True)):
    defrule(getattr(_ssig, _name), "in1, in2, mode='full', method='auto'",
            vjp={"in1": f"_adj.signal_conv(g, in1, in2, mode, 0, None, {_corr})",
                 "in2": f"_adj.signal_conv(g, in1, in2, mode, 1, None, {_corr})"},
            jvp={"in1": f"_ssig.{_name}(t, in2, mode, method)",
                 "in2": f"_ssig.{_name}(in1, t, mode, method)"}, ns=A)
for _name in ("fftconvolve", "oaconvolve"):
    if hasattr(_ssig, _name):
        defrule(getattr(_ssig, _name), "in1, in2, mode='full', axes=None",
                vjp={"in1": "_adj.signal_conv(g, in1, in2, mode, 0, axes, False)",
                     "in2": "_adj.signal_conv(g, in1, in2, mode, 1, axes, False)"},
                jvp={"in1": f"_ssig.{_name}(t, in2, mode, axes)",
                     "in2": f"_ssig.{_name}(in1, t, mode, axes)"}, ns=A)
for _name, _adjoint in (("convolve2d", "signal_conv"), ("correlate2d", "signal_corr2d")):
    # other boundaries (wrap, symm) and a nonzero fill change the map: refused, not followed
    defrule(getattr(_ssig, _name), "in1, in2, mode='full', boundary='fill', fillvalue=0",
            vjp={"in1": f"_adj.{_adjoint}(g, in1, in2, mode, 0)",
                 "in2": f"_adj.{_adjoint}(g, in1, in2, mode, 1)"},
            jvp={"in1": f"_ssig.{_name}(t, in2, mode)", "in2": f"_ssig.{_name}(in1, t, mode)"},
            forbid={"boundary": "fill", "fillvalue": 0}, ns=A)


# -- helpers the templates call --------------------------------------------------------------------
def _signal_of(m):
    """The signal module of array module ``m`` (SciPy's, or CuPy's for CuPy arrays)."""
    if m is np:
        return _ssig
    import cupyx.scipy.signal as cssig
    return cssig


def _flipconj(v, axes):
    m = xp(v)
    return cj(m.flip(v, axis=axes))


def _conv_axes(nd, axes):
    if axes is None:
        return tuple(range(nd))
    axes = (axes,) if np.ndim(axes) == 0 else tuple(axes)
    return tuple(sorted(int(a) % nd for a in axes))


def signal_corr2d(g, in1, in2, mode="full", which=0):
    """Adjoint of ``correlate2d``, which SciPy computes its own way: 'same' takes the slice of the
    full result that starts half a sample later than convolve's (rounded up), and 'valid' with
    ``in2`` the larger correlates ``in2`` with ``in1`` and reverses the result."""
    a = asarray(in1)
    v = asarray(in2, like=a)
    if mode == "valid" and all(p <= q for p, q in zip(a.shape, v.shape)) and a.shape != v.shape:
        m = xp(a, v)
        r = signal_conv(m.flip(m.asarray(g)), v, a, "valid", 1 - which, None, True)
        return like(r, in1 if which == 0 else in2)
    return signal_conv(g, in1, in2, mode, which, None, True, up=(mode == "same"))


def signal_conv(g, in1, in2, mode="full", which=0, axes=None, corr=False, up=False):
    """Adjoint of a SciPy convolution (``corr``: correlation) w.r.t. ``in1`` (which=0) or ``in2``;
    ``up``: the 'same' slice starts at the rounded-up half of the size difference."""
    a = asarray(in1)
    v = asarray(in2, like=a)
    if a.ndim != v.ndim:
        raise ValueError("in1 and in2 should have the same dimensionality")
    if corr:                                     # correlate(a, v) = convolve(a, R(v))
        r = signal_conv(g, a, _flipconj(v, None), mode, which, axes, False, up)
        return like(r, in1) if which == 0 else like(_flipconj(asarray(r), None), in2)
    m = xp(a, v)
    ax = _conv_axes(a.ndim, axes)
    G = m.asarray(g)
    # the full-mode output shape and where the result of `mode` sits in it
    full = [max(p, q) for p, q in zip(a.shape, v.shape)]
    for i in ax:
        full[i] = a.shape[i] + v.shape[i] - 1
    gf = G
    if mode != "full":
        gf = m.zeros(tuple(full), dtype=G.dtype)
        sl = []
        for i in range(a.ndim):
            off = (full[i] - G.shape[i] + up) // 2 if i in ax else 0
            sl.append(slice(off, off + G.shape[i]))
        gf[tuple(sl)] = G
    other = v if which == 0 else a
    r = _signal_of(m).fftconvolve(gf, _flipconj(other, ax), mode="valid", axes=ax) \
        if gf.size and other.size else m.zeros(a.shape if which == 0 else v.shape, dtype=G.dtype)
    target = a if which == 0 else v
    r = _rt.unbroadcast(r, target) if r.shape != target.shape else r
    if gf.dtype.kind != "c" and other.dtype.kind != "c" and r.dtype.kind == "c":
        r = r.real
    return like(r, in1 if which == 0 else in2)


export(globals())
