"""Elementwise functions: unary ufuncs (one line each: the callee and f'(x)), binary ufuncs with
broadcasting, ``where``, ``clip``, ``select``, ``nan_to_num``.
"""
import math

import numpy as np

from ... import runtime as _rt
from ...kernels import elementwise as _ew
from ..adjoints import (A, BINARY, UFUNC, UNARY, _NoValue, _each, _np, _results, asarray, cj,
                        export, like, tangent_list, xp)
from ..registry import defmethod, defrule


def holo(names, d, complex_ok=True):
    """Elementwise unary ufunc with derivative expression ``d`` (in ``x`` and ``ans``)."""
    vjp = f"g * _rt.cj({d})" if complex_ok else f"g * ({d})"
    _each(_np(*names), UNARY, vjp={"x": vjp}, jvp={"x": f"t * ({d})"}, forbid=UFUNC)


# -- unary -----------------------------------------------------------------------------------------
#      callee names                      f'(x)
holo(["exp"],                           "ans")
holo(["exp2"],                          "ans * math.log(2.0)")
holo(["expm1"],                         "ans + 1")
holo(["log"],                           "1 / x")
holo(["log2"],                          "1 / (x * math.log(2.0))")
holo(["log10"],                         "1 / (x * math.log(10.0))")
holo(["log1p"],                         "1 / (1 + x)")
holo(["sqrt"],                          "0.5 / ans")
holo(["cbrt"],                          "1 / (3 * ans * ans)", complex_ok=False)
holo(["square"],                        "2 * x")
holo(["reciprocal"],                    "-(ans * ans)")
holo(["sin"],                           "np.cos(x)")
holo(["cos"],                           "-np.sin(x)")
holo(["tan"],                           "1 + ans * ans")
holo(["arcsin", "asin"],                "1 / np.sqrt(1 - x * x)")
holo(["arccos", "acos"],                "-1 / np.sqrt(1 - x * x)")
holo(["arctan", "atan"],                "1 / (1 + x * x)")
holo(["sinh"],                          "np.cosh(x)")
holo(["cosh"],                          "np.sinh(x)")
holo(["tanh"],                          "1 - ans * ans")
holo(["arcsinh", "asinh"],              "1 / np.sqrt(x * x + 1)")
holo(["arccosh", "acosh"],              "1 / (np.sqrt(x - 1) * np.sqrt(x + 1))")
holo(["arctanh", "atanh"],              "1 / (1 - x * x)")
holo(["deg2rad", "radians"],            "math.pi / 180", complex_ok=False)
holo(["rad2deg", "degrees"],            "180 / math.pi", complex_ok=False)

_each(_np("negative"), UNARY, vjp={"x": "-g"}, jvp={"x": "-t"}, forbid=UFUNC)
_each(_np("positive"), UNARY, vjp={"x": "g"}, jvp={"x": "t"}, forbid=UFUNC)
# (_rt.unit(x) is np.sign(x), written np.sign(x) where x is known to be real: its rule turns
# x / |x| with complex x, for second derivatives)
_each(_np("abs", "absolute"), UNARY, vjp={"x": "g * _rt.unit(x)"},
      jvp={"x": "np.real(_rt.cj(_rt.unit(x)) * t)"}, forbid=UFUNC)
_each(_np("fabs"), UNARY, vjp={"x": "g * np.sign(x)"}, jvp={"x": "t * np.sign(x)"}, forbid=UFUNC)
_each(_np("conj", "conjugate"), UNARY, vjp={"x": "_rt.cj(g)"}, jvp={"x": "_rt.cj(t)"},
      forbid=UFUNC)
defrule(np.real, "val", vjp={"val": "_adj.like(g, val)"}, jvp={"val": "np.real(t)"}, ns=A)
defrule(np.real_if_close, "a, tol=100", vjp={"a": "_adj.like(g, a)"},
        jvp={"a": "np.real(t) if np.result_type(ans).kind != 'c' else t"}, ns=A)
defrule(np.imag, "val", vjp={"val": "_adj.imag(g, val)"}, jvp={"val": "np.imag(t)"}, ns=A)
defrule(np.angle, "z, deg=False", vjp={"z": "_adj.angle(g, z, deg)"}, ns=A)
defrule(np.sinc, "x", vjp={"x": "g * _adj.sinc(x)"}, jvp={"x": "t * _adj.sinc(x)"}, ns=A)

# -- binary (broadcasting) -------------------------------------------------------------------------
_each(_np("add"), BINARY,
      vjp={"x1": "_rt.unbroadcast(g, x1)", "x2": "_rt.unbroadcast(g, x2)"},
      jvp={"x1": "t", "x2": "t"}, forbid=UFUNC)
_each(_np("subtract"), BINARY,
      vjp={"x1": "_rt.unbroadcast(g, x1)", "x2": "-_rt.unbroadcast(g, x2)"},
      jvp={"x1": "t", "x2": "-t"}, forbid=UFUNC)
_each(_np("multiply"), BINARY,
      vjp={"x1": "_rt.unbroadcast(g * _rt.cj(x2), x1)",
           "x2": "_rt.unbroadcast(g * _rt.cj(x1), x2)"},
      jvp={"x1": "t * x2", "x2": "x1 * t"}, forbid=UFUNC)
_each(_np("divide", "true_divide"), BINARY,
      vjp={"x1": "_rt.unbroadcast(g / _rt.cj(x2), x1)",
           "x2": "-_rt.unbroadcast(g * _rt.cj(ans), x2) / _rt.cj(x2)"},
      jvp={"x1": "t / x2", "x2": "-t * ans / x2"}, forbid=UFUNC)
_each(_np("power", "pow"), BINARY,
      vjp={"x1": "_adj.power_base(g, x1, x2)", "x2": "_adj.power_exponent(g, ans, x1, x2)"},
      jvp={"x1": "t * x2 * x1 ** (x2 - 1)", "x2": "t * ans * np.log(x1)"}, forbid=UFUNC, ns=A)
# (float_power computes in float64 / complex128 whatever its inputs: so do its tangents)
_each(_np("float_power"), BINARY,
      vjp={"x1": "_adj.power_base(g, x1, x2)", "x2": "_adj.power_exponent(g, ans, x1, x2)"},
      jvp={"x1": "t * x2 * np.float_power(x1, x2 - 1)", "x2": "t * ans * np.log(x1)"},
      forbid=UFUNC, ns=A)
_each(_np("maximum"), BINARY,
      vjp={"x1": "_adj.maximum(g, x1, x2, 0)", "x2": "_adj.maximum(g, x1, x2, 1)"},
      jvp={"x1": "_adj.maximum_tangent(t, x1, x2, 0)", "x2": "_adj.maximum_tangent(t, x1, x2, 1)"},
      forbid=UFUNC, ns=A)
_each(_np("minimum"), BINARY,
      vjp={"x1": "_adj.maximum(g, x1, x2, 0, sign=-1)",
           "x2": "_adj.maximum(g, x1, x2, 1, sign=-1)"},
      jvp={"x1": "_adj.maximum_tangent(t, x1, x2, 0, sign=-1)",
           "x2": "_adj.maximum_tangent(t, x1, x2, 1, sign=-1)"}, forbid=UFUNC, ns=A)
_each(_np("fmax"), BINARY,
      vjp={"x1": "_adj.maximum(g, x1, x2, 0, nan=True)",
           "x2": "_adj.maximum(g, x1, x2, 1, nan=True)"},
      jvp={"x1": "_adj.maximum_tangent(t, x1, x2, 0, nan=True)",
           "x2": "_adj.maximum_tangent(t, x1, x2, 1, nan=True)"}, forbid=UFUNC, ns=A)
_each(_np("fmin"), BINARY,
      vjp={"x1": "_adj.maximum(g, x1, x2, 0, sign=-1, nan=True)",
           "x2": "_adj.maximum(g, x1, x2, 1, sign=-1, nan=True)"},
      jvp={"x1": "_adj.maximum_tangent(t, x1, x2, 0, sign=-1, nan=True)",
           "x2": "_adj.maximum_tangent(t, x1, x2, 1, sign=-1, nan=True)"}, forbid=UFUNC, ns=A)
_each(_np("hypot"), BINARY,
      vjp={"x1": "_rt.unbroadcast(g * x1 / ans, x1)", "x2": "_rt.unbroadcast(g * x2 / ans, x2)"},
      jvp={"x1": "t * x1 / ans", "x2": "t * x2 / ans"}, forbid=UFUNC)
_each(_np("arctan2", "atan2"), BINARY,
      vjp={"x1": "_rt.unbroadcast(g * x2 / (x1 * x1 + x2 * x2), x1)",
           "x2": "_rt.unbroadcast(-g * x1 / (x1 * x1 + x2 * x2), x2)"},
      jvp={"x1": "t * x2 / (x1 * x1 + x2 * x2)", "x2": "-t * x1 / (x1 * x1 + x2 * x2)"},
      forbid=UFUNC)
_each(_np("logaddexp"), BINARY,
      vjp={"x1": "_rt.unbroadcast(g * np.exp(x1 - ans), x1)",
           "x2": "_rt.unbroadcast(g * np.exp(x2 - ans), x2)"},
      jvp={"x1": "t * np.exp(x1 - ans)", "x2": "t * np.exp(x2 - ans)"}, forbid=UFUNC)
_each(_np("logaddexp2"), BINARY,
      vjp={"x1": "_rt.unbroadcast(g * np.exp2(x1 - ans), x1)",
           "x2": "_rt.unbroadcast(g * np.exp2(x2 - ans), x2)"},
      jvp={"x1": "t * np.exp2(x1 - ans)", "x2": "t * np.exp2(x2 - ans)"}, forbid=UFUNC)
_each(_np("remainder", "mod"), BINARY,
      vjp={"x1": "_rt.unbroadcast(g, x1)", "x2": "_rt.unbroadcast(-g * np.floor_divide(x1, x2), x2)"},
      jvp={"x1": "t", "x2": "-t * np.floor_divide(x1, x2)"}, forbid=UFUNC)
_each(_np("fmod"), BINARY,
      vjp={"x1": "_rt.unbroadcast(g, x1)", "x2": "_rt.unbroadcast(-g * np.trunc(x1 / x2), x2)"},
      jvp={"x1": "t", "x2": "-t * np.trunc(x1 / x2)"}, forbid=UFUNC)
_each(_np("copysign"), BINARY,
      vjp={"x1": "_rt.unbroadcast(np.where(np.signbit(x1) == np.signbit(ans), g, -g), x1)"},
      jvp={"x1": "np.where(np.signbit(x1) == np.signbit(ans), t, -t)"}, forbid=UFUNC,
      constant=("x2",))
_each(_np("ldexp"), BINARY,
      vjp={"x1": "_rt.unbroadcast(g * np.ldexp(1.0, x2).astype(np.result_type(x1)), x1)"},
      jvp={"x1": "np.ldexp(t, x2)"}, forbid=UFUNC)

# heaviside(x1, h): h where x1 == 0 (x1 steps: no derivative); nextafter(x1, x2): x1 moved by
# one ulp (slope 1 in x1)
defrule(np.heaviside, BINARY, vjp={"x2": "_rt.unbroadcast(g * (x1 == 0), x2)"},
        jvp={"x2": "_adj.as_primal(np.where(x1 == 0, t, _adj.zero_tangent(t)), t, ans)"}, constant=("x1",), forbid=UFUNC)
defrule(np.nextafter, BINARY, vjp={"x1": "_rt.unbroadcast(g + 0 * ans, x1)"},
        jvp={"x1": "t + 0 * ans"}, constant=("x2",), forbid=UFUNC)

# where / clip
defrule(np.where, "condition, x=None, y=None",
        vjp={"x": "_adj.where(g, condition, x, True)", "y": "_adj.where(g, condition, y, False)"},
        jvp={"x": "_adj.as_primal(np.where(condition, t, _adj.zero_tangent(t)), t, ans)",
             "y": "_adj.as_primal(np.where(condition, _adj.zero_tangent(t), t), t, ans)"}, ns=A)
_CLIP = "a, a_min=None, a_max=None, out=None, *, min=None, max=None, **kwargs"
defrule(np.clip, _CLIP,
        vjp={"a": "_adj.clip(g, a, *_adj.clip_bounds(a, a_min, a_max, min, max), 'a')",
             "a_min": "_adj.clip(g, a, *_adj.clip_bounds(a, a_min, a_max, min, max), 'lo')",
             "a_max": "_adj.clip(g, a, *_adj.clip_bounds(a, a_min, a_max, min, max), 'hi')",
             "min": "_adj.clip(g, a, *_adj.clip_bounds(a, a_min, a_max, min, max), 'lo')",
             "max": "_adj.clip(g, a, *_adj.clip_bounds(a, a_min, a_max, min, max), 'hi')"},
        jvp={"a": "_adj.clip_tangent(t, a, *_adj.clip_bounds(a, a_min, a_max, min, max), 'a')",
             "a_min": "_adj.as_primal(_adj.clip_tangent(t, a, *_adj.clip_bounds(a, a_min, a_max, min, max), 'lo'), t, ans)",
             "a_max": "_adj.as_primal(_adj.clip_tangent(t, a, *_adj.clip_bounds(a, a_min, a_max, min, max), 'hi'), t, ans)",
             "min": "_adj.as_primal(_adj.clip_tangent(t, a, *_adj.clip_bounds(a, a_min, a_max, min, max), 'lo'), t, ans)",
             "max": "_adj.as_primal(_adj.clip_tangent(t, a, *_adj.clip_bounds(a, a_min, a_max, min, max), 'hi'), t, ans)"},
        forbid={"out": None}, ns=A)

# -- select: each choice where its condition is the first true one ---------------------------------
defrule(np.select, "condlist, choicelist, default=0",
        vjp={"choicelist": "_adj.select(g, condlist, choicelist, default, 'choices')",
             "default": "_adj.select(g, condlist, choicelist, default, 'default')"},
        jvp={"choicelist": "_adj.select_tangent(t, condlist, choicelist, 'choices')",
             "default": "_adj.as_primal(_adj.select_tangent(t, condlist, choicelist, 'default'), t, ans)"},
        constant=("condlist",), ns=A)

# -- nan_to_num ------------------------------------------------------------------------------------
defrule(np.nan_to_num, "x, copy=True, nan=0.0, posinf=None, neginf=None",
        vjp={"x": "_adj.nan_to_num(g, x)", "nan": "_adj.nan_to_num(g, x, 'nan', nan)",
             "posinf": "_adj.nan_to_num(g, x, 'posinf', posinf)",
             "neginf": "_adj.nan_to_num(g, x, 'neginf', neginf)"},
        jvp={"x": "_adj.nan_to_num_tangent(t, x)",
             "nan": "_adj.as_primal(_adj.nan_to_num_tangent(t, x, 'nan'), t, ans)",
             "posinf": "_adj.as_primal(_adj.nan_to_num_tangent(t, x, 'posinf'), t, ans)",
             "neginf": "_adj.as_primal(_adj.nan_to_num_tangent(t, x, 'neginf'), t, ans)"},
        forbid={"copy": True}, ns=A)

# -- ndarray methods -------------------------------------------------------------------------------
for _k in ("conj", "conjugate"):
    defmethod(_k, "self", vjp={"self": "_rt.cj(g)"}, jvp={"self": "_rt.cj(t)"})
defmethod("clip", "self, min=None, max=None, out=None, **kwargs",
          vjp={"self": "_adj.clip(g, self, min, max, 'a')",
               "min": "_adj.clip(g, self, min, max, 'lo')",
               "max": "_adj.clip(g, self, min, max, 'hi')"}, forbid={"out": None}, ns=A)


# -- helpers the templates call --------------------------------------------------------------------
def power_base(g, x1, x2):
    """Adjoint of ``x1 ** x2`` for the base: g * conj(x2 x1^(x2-1)), 0 where x2 == 0."""
    d = x2 * x1 ** (x2 - 1)
    if bool(np.any(x2 == 0)):
        m = xp(d, x1, x2)
        d = m.where(asarray(x2, like=d) == 0, 0, d)
    return _rt.unbroadcast(g * cj(d), x1)


def power_exponent(g, ans, x1, x2):
    """Adjoint of ``x1 ** x2`` for the exponent: g * conj(x1^x2 log x1), 0 where x1 == 0."""
    m = xp(ans, x1, x2)
    x1a = asarray(x1, like=ans)
    safe = m.where(x1a == 0, 1, x1a)
    d = ans * m.log(safe)
    return _rt.unbroadcast(g * cj(d), x2)


def maximum(g, x1, x2, which, sign=1, nan=False):
    a, b = (x1, x2) if which == 0 else (x2, x1)
    if not nan and type(g) is not np.ndarray:
        r = _ew.maximum_adjoint(g, a, b, sign)          # large CuPy arrays: one kernel
        if r is not None:
            return _rt.unbroadcast(r, x1 if which == 0 else x2)
    m = xp(g, x1, x2)
    a = asarray(a, like=g)
    # a Python number compares with an array as it is (relu's 0.0: no array made for it)
    b = b if type(b) in (float, int) and hasattr(a, "shape") and not nan else asarray(b, like=g)
    win = (a > b) if sign > 0 else (a < b)
    if nan:
        win = win | (m.isnan(b) & ~m.isnan(a))
    r = m.where(win, g, m.where(a == b, 0.5 * g, 0 * g))
    return _rt.unbroadcast(r, x1 if which == 0 else x2)


def clip(g, a, lo, hi, which):
    """Adjoint of ``clip(a, lo, hi)`` = minimum(maximum(a, lo), hi), ties split evenly."""
    m = xp(g, a, lo, hi)
    a_ = asarray(a, like=g)
    t = a_ if lo is None else m.maximum(a_, lo)
    # share of g reaching maximum(a, lo) from minimum(., hi)
    if hi is None:
        g_t, g_hi = g, None
    else:
        g_t = m.where(t < hi, g, m.where(t == hi, 0.5 * g, 0 * g))
        g_hi = m.where(t > hi, g, m.where(t == hi, 0.5 * g, 0 * g))
    if which == "hi":
        return _rt.unbroadcast(g_hi, hi)
    if lo is None:
        return _rt.unbroadcast(g_t, a) if which == "a" else None
    g_a = m.where(a_ > lo, g_t, m.where(a_ == lo, 0.5 * g_t, 0 * g_t))
    if which == "a":
        return _rt.unbroadcast(g_a, a)
    return _rt.unbroadcast(g_t - g_a, lo)


@_results(2)
def clip_bounds(a, a_min, a_max, min, max):
    lo = a_min if a_min is not None and a_min is not _NoValue else \
        (min if min is not _NoValue else None)
    hi = a_max if a_max is not None and a_max is not _NoValue else \
        (max if max is not _NoValue else None)
    return lo, hi


def where(g, condition, x, first):
    """Adjoint of ``np.where`` for operand ``x`` (``first``: the one taken where ``condition``):
    g where x was taken, 0 elsewhere, a zero even where g is inf or nan (``0 * g`` would make a
    nan of a value the output does not depend on: the "safe where" idiom,
    ``np.sqrt(np.where(x > 0, x, 0))``)."""
    m = xp(g, x)
    g = asarray(g, like=x)
    zero = m.zeros((), g.dtype)
    r = m.where(condition, g, zero) if first else m.where(condition, zero, g)
    return _rt.unbroadcast(r, x)


def imag(g, val):
    """Adjoint of ``np.imag``: i g for complex input, zero for real."""
    dt = getattr(val, "dtype", None)
    if isinstance(val, complex) or (dt is not None and dt.kind == "c"):
        return like(1j * asarray(g, like=val), val)
    return like(0 * asarray(g, like=val), val)


def angle(g, z, deg=False):
    """Adjoint of ``np.angle``: g i / conj(z) (times 180/pi in degrees)."""
    z_ = asarray(z)
    m = xp(z_)
    scale = 180.0 / math.pi if deg else 1.0
    if z_.dtype.kind != "c":
        return like(0 * asarray(g, like=z_) * z_, z)
    az2 = (z_ * z_.conj()).real
    safe = m.where(az2 == 0, 1, az2)
    return like(g * scale * 1j * z_ / safe * (az2 != 0), z)


def angle_adjoint_tangent(grad, z, deg, t):
    """Tangent of :func:`angle`'s ``g i z / |z|^2`` in ``z`` along ``t`` (a second derivative of
    ``np.angle``): g i (t / |z|^2 - 2 z Re(conj(z) t) / |z|^4); nothing for real z."""
    z_ = asarray(z)
    m = xp(z_)
    if z_.dtype.kind != "c":
        return like(0 * asarray(grad, like=z_) * z_, z)
    scale = 180.0 / math.pi if deg else 1.0
    t = asarray(t, like=z_)
    az2 = (z_ * z_.conj()).real
    safe = m.where(az2 == 0, 1, az2)
    d = t / safe - 2 * z_ * (z_.conj() * t).real / (safe * safe)
    return like(grad * scale * 1j * d * (az2 != 0), z)


def sinc(x):
    """Derivative of the normalized sinc: (cos(pi x) - sinc(x)) / x, 0 at x = 0."""
    m = xp(x)
    x_ = asarray(x)
    safe = m.where(x_ == 0, 1, x_)
    d = (m.cos(math.pi * safe) - m.sinc(safe)) / safe
    return m.where(x_ == 0, 0, d)


def maximum_tangent(t, x1, x2, which, sign=1, nan=False):
    m = xp(t, x1, x2)
    a, b = (x1, x2) if which == 0 else (x2, x1)
    a = asarray(a, like=t)
    b = asarray(b, like=t)
    win = (a > b) if sign > 0 else (a < b)
    if nan:
        win = win | (m.isnan(b) & ~m.isnan(a))
    if type(t) not in (float, int, complex):
        t = asarray(t, like=a)
    r = m.where(win, t, m.where(a == b, 0.5 * t, zero_tangent(t)))
    if type(t) in (float, int, complex):        # (see as_primal)
        dt = m.result_type(x1, x2)
        if dt.kind in "fc" and r.dtype != dt:
            r = r.astype(dt)
    return r


def zero_tangent(t):
    """A zero of ``t``'s kind: for a Python number a Python number, so that it promotes as
    weakly as ``t`` does (the tangent of a Python-float ``lo`` of ``clip`` on float32 arrays is
    float32, as the tangent of ``x * c`` is); else ``zeros_like(t)``."""
    if type(t) in (float, int, complex):
        return type(t)(0)
    return xp(t).zeros_like(t)


def as_primal(r, t, ans):
    """The tangent ``r`` made from the tangent ``t`` of a Python number, in the dtype of the
    primal result ``ans`` (NumPy makes float64 of a Python float where no array takes part:
    ``where(c, 1.0, 0.0)``, while the Python float itself promotes weakly in the primal)."""
    if type(t) in (float, int, complex):
        dt = getattr(ans, "dtype", None)
        if dt is not None and dt.kind in "fc" and getattr(r, "dtype", dt) != dt:
            return r.astype(dt)
    return r


def clip_tangent(t, a, lo, hi, which):
    """Tangent of clip = minimum(maximum(a, lo), hi) (ties split evenly, as the adjoint)."""
    m = xp(t, a, lo, hi)
    a_ = asarray(a, like=t)
    t = asarray(t, like=a_)
    tmax = a_ if lo is None else m.maximum(a_, lo)
    if which == "hi":
        return maximum_tangent(t, tmax, hi, 1, sign=-1)
    if lo is None:
        inner = t
    else:
        inner = maximum_tangent(t, a_, lo, 0 if which == "a" else 1)
    return inner if hi is None else maximum_tangent(inner, tmax, hi, 0, sign=-1)


def _nan_to_num_mask(x, which):
    m = xp(x)
    X = asarray(x)
    if which == "x":
        return m.isfinite(X)
    if X.dtype.kind == "c":          # NumPy replaces the real and imaginary parts separately
        X = X.real
    if which == "nan":
        return m.isnan(X)
    return m.isposinf(X) if which == "posinf" else m.isneginf(X)


def nan_to_num(g, x, which="x", value=None):
    """Adjoint of ``nan_to_num``: ``x`` gets g where it is finite, 0 where it was replaced; an
    active ``nan=`` / ``posinf=`` / ``neginf=`` value gets the sum of g over what it replaced."""
    ok = _nan_to_num_mask(x, which)
    gx = asarray(g, like=asarray(x))
    r = xp(gx).where(ok, gx, 0 * gx)
    if which == "x":
        return like(r, x)
    r = r.real if asarray(x).dtype.kind == "c" else r
    return _rt.unbroadcast(r, value)


def nan_to_num_tangent(t, x, which="x"):
    ok = _nan_to_num_mask(x, which)
    return xp(ok).where(ok, t, zero_tangent(t))


def _select_masks(g, condlist):
    """For each condition, where it is the first true one (np.select's choice)."""
    m = xp(g)
    taken = m.zeros(g.shape, dtype=bool)
    masks = []
    for c in condlist:
        c = m.broadcast_to(asarray(c, like=g).astype(bool), g.shape)
        masks.append(c & ~taken)
        taken = taken | c
    return masks, taken


def select(g, condlist, choicelist, default, which):
    """Adjoint of ``np.select(condlist, choicelist, default)``: each choice gets g where its
    condition is the first true one, ``default`` where none is."""
    g = asarray(g)
    m = xp(g)
    masks, taken = _select_masks(g, condlist)
    zero = m.zeros((), g.dtype)             # (not 0 * g: see where)
    if which == "default":
        return _rt.unbroadcast(m.where(taken, zero, g), default)
    return tuple(_rt.unbroadcast(m.where(mk, g, zero), ch) for mk, ch in zip(masks, choicelist))


def select_tangent(t, condlist, choicelist, which):
    """Tangent of ``np.select`` along the choices (``t`` a list) or ``default``."""
    if which == "default":
        m = xp(t, *condlist)
        shape = np.broadcast_shapes(np.shape(t), *[np.shape(c) for c in condlist])
        _, taken = _select_masks(m.zeros(shape, dtype=bool), condlist)
        return m.where(taken, zero_tangent(t), t)
    ts = tangent_list(t, choicelist)
    return xp(*ts).select(list(condlist), ts, default=0)


export(globals())
