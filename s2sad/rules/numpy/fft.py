"""FFT: linear maps; the adjoint of a transform is the other transform with the dual norm.
"""
import numpy as np

from ...errors import RuleError
from ..adjoints import A, asarray, export, like, ndim, xp
from ..registry import defrule

_FFT = "a, n=None, axis=-1, norm=None, out=None"
_FFT2 = "a, s=None, axes=(-2, -1), norm=None, out=None"
defrule(np.fft.fft, _FFT, vjp={"a": "_adj.fft(g, a, n, axis, norm)"},
        jvp={"a": "np.fft.fft(t, n, axis, norm)"}, forbid={"out": None}, ns=A)
defrule(np.fft.ifft, _FFT, vjp={"a": "_adj.fft(g, a, n, axis, norm, True)"},
        jvp={"a": "np.fft.ifft(t, n, axis, norm)"}, forbid={"out": None}, ns=A)
defrule(np.fft.rfft, _FFT, vjp={"a": "_adj.rfft(g, a, n, axis, norm)"},
        jvp={"a": "np.fft.rfft(t, n, axis, norm)"}, forbid={"out": None}, ns=A)
defrule(np.fft.irfft, _FFT, vjp={"a": "_adj.irfft(g, a, n, axis, norm)"},
        jvp={"a": "np.fft.irfft(t, n, axis, norm)"}, forbid={"out": None}, ns=A)
defrule(np.fft.fft2, _FFT2, vjp={"a": "_adj.fftn(g, a, s, axes, norm)"},
        jvp={"a": "np.fft.fft2(t, s, axes, norm)"}, forbid={"out": None}, ns=A)
defrule(np.fft.ifft2, _FFT2, vjp={"a": "_adj.fftn(g, a, s, axes, norm, True)"},
        jvp={"a": "np.fft.ifft2(t, s, axes, norm)"}, forbid={"out": None}, ns=A)

_FFTN = "a, s=None, axes=None, norm=None, out=None"
defrule(np.fft.fftn, _FFTN, vjp={"a": "_adj.fftn(g, a, s, axes, norm)"},
        jvp={"a": "np.fft.fftn(t, s, axes, norm)"}, forbid={"out": None}, ns=A)
defrule(np.fft.ifftn, _FFTN, vjp={"a": "_adj.fftn(g, a, s, axes, norm, True)"},
        jvp={"a": "np.fft.ifftn(t, s, axes, norm)"}, forbid={"out": None}, ns=A)
# the shifts permute the entries: each one's adjoint is the other
defrule(np.fft.fftshift, "x, axes=None", vjp={"x": "np.fft.ifftshift(g, axes)"},
        jvp={"x": "np.fft.fftshift(t, axes)"}, ns=A)
defrule(np.fft.ifftshift, "x, axes=None", vjp={"x": "np.fft.fftshift(g, axes)"},
        jvp={"x": "np.fft.ifftshift(t, axes)"}, ns=A)


# -- helpers the templates call --------------------------------------------------------------------
_DUAL_NORM = {None: "forward", "backward": "forward", "ortho": "ortho", "forward": "backward"}


def _dual(norm):
    try:
        return _DUAL_NORM[norm]
    except KeyError:
        raise RuleError(f"fft: norm={norm!r} is not one of None, 'backward', 'ortho', 'forward'",
                        fix="use norm=None, 'backward', 'ortho' or 'forward'")


def _fit(g, length, axis):
    """``g`` cut or zero-padded along ``axis`` to ``length`` (the adjoint of NumPy's n=/s=)."""
    m = xp(g)
    n = g.shape[axis]
    if n == length:
        return g
    if n > length:
        idx = [slice(None)] * g.ndim
        idx[axis] = slice(0, length)
        return g[tuple(idx)]
    pw = [(0, 0)] * g.ndim
    pw[axis] = (0, length - n)
    return m.pad(g, pw)


def _fft_axes(a, s, axes):
    nd = ndim(a)
    if axes is None:
        axes = tuple(range(nd)) if s is None else tuple(range(nd - len(s), nd))
    return tuple(int(ax) % nd for ax in axes)


def fft(g, a, n=None, axis=-1, norm=None, inverse=False):
    """Adjoint of ``fft`` (``ifft`` with inverse=True): the other transform with the dual norm,
    cut / padded back to the input's length."""
    m = xp(a)
    A = asarray(a)
    G = asarray(g, like=A)
    f = m.fft.fft if inverse else m.fft.ifft
    r = f(G, axis=axis, norm=_dual(norm))
    return like(_fit(r, A.shape[axis], axis), a)


def fftn(g, a, s=None, axes=(-2, -1), norm=None, inverse=False):
    m = xp(a)
    A = asarray(a)
    G = asarray(g, like=A)
    axes = _fft_axes(A, s, axes)
    f = m.fft.fftn if inverse else m.fft.ifftn
    r = f(G, axes=axes, norm=_dual(norm))
    for ax in axes:
        r = _fit(r, A.shape[ax], ax)
    return like(r, a)


def rfft(g, a, n=None, axis=-1, norm=None):
    """Adjoint of ``rfft`` (real input): Re of the inverse transform of g zero-filled to the full
    spectrum, with the dual norm."""
    m = xp(a)
    A = asarray(a)
    G = asarray(g, like=A)
    ax = axis % A.ndim
    nn = A.shape[ax] if n is None else int(n)
    full = _fit(G, nn, ax)
    r = m.fft.ifft(full, axis=ax, norm=_dual(norm)).real
    return like(_fit(r, A.shape[ax], ax), a)


def irfft(g, a, n=None, axis=-1, norm=None):
    """Adjoint of ``irfft``: y = c sum_k w_k Re(a_k e^(2 pi i jk/n)) with w = 1 at 0 and the
    Nyquist bin, 2 elsewhere, so ``a`` gets w * rfft(g) with the dual norm."""
    m = xp(a)
    A = asarray(a)
    G = asarray(g, like=A)
    ax = axis % A.ndim
    nn = 2 * (A.shape[ax] - 1) if n is None else int(n)
    r = m.fft.rfft(G.real if G.dtype.kind == "c" else G, n=nn, axis=ax, norm=_dual(norm))
    k = r.shape[ax]
    w = m.full(k, 2.0, dtype=r.real.dtype)
    w[0] = 1.0
    if nn % 2 == 0:
        w[-1] = 1.0
    sh = [1] * r.ndim
    sh[ax] = k
    r = r * w.reshape(sh)
    return like(_fit(r, A.shape[ax], ax), a)


export(globals())
