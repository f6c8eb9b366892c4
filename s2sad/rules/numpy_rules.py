"""NumPy derivative table.  One entry per primitive: adjoint (``vjp``) and tangent (``jvp``).

In a template ``g`` is the output's adjoint, ``ans`` the output, ``t`` a parameter's tangent.
Complex values follow DESIGN.md: a holomorphic ``f`` has adjoint ``g * conj(f'(z))``
(``_rt.cj`` is free on real values).  Larger adjoints live in :mod:`.adjoints` (``_adj``).
CuPy arrays reach the same templates: they use ``np.`` only for functions CuPy arrays dispatch
through ``__array_ufunc__`` / ``__array_function__``, or call ``_adj`` helpers that pick the module.
"""
import operator

import numpy as np

from . import adjoints as _adjoints
from .registry import defmethod, defrule, defzero, defzero_method

A = {"_adj": _adjoints}

UNARY = "x, /, out=None, *, where=True, casting='same_kind', order='K', dtype=None, subok=True"
BINARY = ("x1, x2, /, out=None, *, where=True, casting='same_kind', order='K', dtype=None, "
          "subok=True")
UFUNC = {"out": None, "where": True}


def _each(fns, *args, **kw):
    rules = []
    for fn in fns:
        if fn is not None:
            rules.append(defrule(fn, *args, **kw))
    return rules


def _np(*names, mod=np):
    """The callees of ``names`` that exist in this NumPy (aliases added in 2.0 may be missing)."""
    out = []
    for n in names:
        obj = mod
        for part in n.split("."):
            obj = getattr(obj, part, None)
        if obj is not None and obj not in out:
            out.append(obj)
    return out


def holo(names, d, complex_ok=True):
    """Elementwise unary ufunc with derivative expression ``d`` (in ``x`` and ``ans``)."""
    vjp = f"g * _rt.cj({d})" if complex_ok else f"g * ({d})"
    _each(_np(*names), UNARY, vjp={"x": vjp}, jvp={"x": f"t * ({d})"}, forbid=UFUNC)


# -- elementwise: unary ---------------------------------------------------------------------------
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
_each(_np("abs", "absolute"), UNARY, vjp={"x": "g * np.sign(x)"},
      jvp={"x": "np.real(_rt.cj(np.sign(x)) * t)"}, forbid=UFUNC)
_each(_np("fabs"), UNARY, vjp={"x": "g * np.sign(x)"}, jvp={"x": "t * np.sign(x)"}, forbid=UFUNC)
_each(_np("conj", "conjugate"), UNARY, vjp={"x": "_rt.cj(g)"}, jvp={"x": "_rt.cj(t)"},
      forbid=UFUNC)
defrule(np.real, "val", vjp={"val": "_adj.like(g, val)"}, jvp={"val": "np.real(t)"}, ns=A)
defrule(np.imag, "val", vjp={"val": "_adj.imag(g, val)"}, jvp={"val": "np.imag(t)"}, ns=A)
defrule(np.angle, "z, deg=False", vjp={"z": "_adj.angle(g, z, deg)"}, ns=A)
defrule(np.sinc, "x", vjp={"x": "g * _adj.sinc(x)"}, jvp={"x": "t * _adj.sinc(x)"}, ns=A)

# -- elementwise: binary (broadcasting) -------------------------------------------------------------
_each(_np("add"), BINARY,
      vjp={"x1": "_rt.unbroadcast(g, x1)", "x2": "_rt.unbroadcast(g, x2)"},
      jvp={"x1": "t", "x2": "t"}, forbid=UFUNC)
_each(_np("subtract"), BINARY,
      vjp={"x1": "_rt.unbroadcast(g, x1)", "x2": "_rt.unbroadcast(-g, x2)"},
      jvp={"x1": "t", "x2": "-t"}, forbid=UFUNC)
_each(_np("multiply"), BINARY,
      vjp={"x1": "_rt.unbroadcast(g * _rt.cj(x2), x1)",
           "x2": "_rt.unbroadcast(g * _rt.cj(x1), x2)"},
      jvp={"x1": "t * x2", "x2": "x1 * t"}, forbid=UFUNC)
_each(_np("divide", "true_divide"), BINARY,
      vjp={"x1": "_rt.unbroadcast(g / _rt.cj(x2), x1)",
           "x2": "_rt.unbroadcast(-g * _rt.cj(ans / x2), x2)"},
      jvp={"x1": "t / x2", "x2": "-t * ans / x2"}, forbid=UFUNC)
_each(_np("power", "pow", "float_power"), BINARY,
      vjp={"x1": "_adj.power_base(g, x1, x2)", "x2": "_adj.power_exponent(g, ans, x1, x2)"},
      jvp={"x1": "t * x2 * x1 ** (x2 - 1)", "x2": "t * ans * np.log(x1)"}, forbid=UFUNC, ns=A)
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

# where / clip
defrule(np.where, "condition, x=None, y=None",
        vjp={"x": "_adj.where(g, condition, x, True)", "y": "_adj.where(g, condition, y, False)"},
        jvp={"x": "np.where(condition, t, 0 * t)", "y": "np.where(condition, 0 * t, t)"}, ns=A)
_CLIP = "a, a_min=None, a_max=None, out=None, *, min=None, max=None, **kwargs"
defrule(np.clip, _CLIP,
        vjp={"a": "_adj.clip(g, a, *_adj.clip_bounds(a, a_min, a_max, min, max), 'a')",
             "a_min": "_adj.clip(g, a, *_adj.clip_bounds(a, a_min, a_max, min, max), 'lo')",
             "a_max": "_adj.clip(g, a, *_adj.clip_bounds(a, a_min, a_max, min, max), 'hi')",
             "min": "_adj.clip(g, a, *_adj.clip_bounds(a, a_min, a_max, min, max), 'lo')",
             "max": "_adj.clip(g, a, *_adj.clip_bounds(a, a_min, a_max, min, max), 'hi')"},
        jvp={"a": "_adj.clip_tangent(t, a, *_adj.clip_bounds(a, a_min, a_max, min, max), 'a')",
             "a_min": "_adj.clip_tangent(t, a, *_adj.clip_bounds(a, a_min, a_max, min, max), 'lo')",
             "a_max": "_adj.clip_tangent(t, a, *_adj.clip_bounds(a, a_min, a_max, min, max), 'hi')",
             "min": "_adj.clip_tangent(t, a, *_adj.clip_bounds(a, a_min, a_max, min, max), 'lo')",
             "max": "_adj.clip_tangent(t, a, *_adj.clip_bounds(a, a_min, a_max, min, max), 'hi')"},
        forbid={"out": None}, ns=A)

# -- reductions -----------------------------------------------------------------------------------
_RED = "a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True"
_each(_np("sum"), _RED, vjp={"a": "_rt.dtype_guard(dtype, _adj.sum(g, a, axis, keepdims))",
                             "initial": "_rt.unbroadcast(g, initial)"},
      jvp={"a": "np.sum(t, axis=axis, keepdims=keepdims)"}, forbid={"out": None, "where": True},
      ns=A)
_each(_np("mean"), "a, axis=None, dtype=None, out=None, keepdims=False, *, where=True",
      vjp={"a": "_adj.mean(g, a, axis, keepdims)"},
      jvp={"a": "np.mean(t, axis=axis, keepdims=keepdims)"}, forbid={"out": None, "where": True},
      ns=A)
_each(_np("prod"), _RED,
      vjp={"a": "_rt.dtype_guard(dtype, _adj.prod(_rt.times_initial(g, initial), a, axis, keepdims))",
           "initial": "_rt.unbroadcast(g * np.prod(a, axis=axis, keepdims=keepdims), initial)"},
      jvp={"a": "_adj.prod_tangent(t, a, axis, keepdims)"},
      forbid={"out": None, "where": True}, ns=A)
_MAX = "a, axis=None, out=None, keepdims=False, initial=None, where=True"
_each(_np("max", "amax", "min", "amin"), _MAX,
      vjp={"a": "_adj.extremum(g, ans, a, axis, keepdims)",
           "initial": "_rt.extremum_initial_adjoint(g, ans, a, initial, axis, keepdims)"},
      jvp={"a": "_adj.extremum_tangent(t, ans, a, axis, keepdims)"},
      forbid={"out": None, "where": True}, ns=A)
_VAR = ("a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, "
        "mean=None, correction=None")
_each(_np("var"), _VAR,
      vjp={"a": "_adj.var(g, a, axis, _adj._correction(ddof, correction), keepdims)"},
      jvp={"a": "_adj.var_tangent(t, a, axis, _adj._correction(ddof, correction), keepdims)"},
      forbid={"out": None, "where": True, "mean": None}, ns=A)
_each(_np("std"), _VAR,
      vjp={"a": "_adj.std(g, ans, a, axis, _adj._correction(ddof, correction), keepdims)"},
      jvp={"a": "_adj.std_tangent(t, ans, a, axis, _adj._correction(ddof, correction), "
                "keepdims)"},
      forbid={"out": None, "where": True, "mean": None}, ns=A)
_each(_np("cumsum", "cumulative_sum"), "a, axis=None, dtype=None, out=None",
      vjp={"a": "_adj.cumsum(g, a, axis)"}, jvp={"a": "np.cumsum(t, axis=axis)"},
      forbid={"out": None}, ns=A)
_each(_np("cumprod", "cumulative_prod"), "a, axis=None, dtype=None, out=None",
      vjp={"a": "_adj.cumprod(g, ans, a, axis)"}, forbid={"out": None}, ns=A)
_each(_np("linalg.norm"), "x, ord=None, axis=None, keepdims=False",
      vjp={"x": "_adj.norm(g, ans, x, ord, axis, keepdims)"},
      jvp={"x": "_adj.norm_tangent(t, ans, x, ord, axis, keepdims)"}, ns=A)
_each(_np("linalg.vector_norm"), "x, /, *, axis=None, keepdims=False, ord=2",
      vjp={"x": "_adj.vector_norm(g, ans, x, axis, keepdims, ord)"},
      jvp={"x": "_adj.norm_tangent(t, ans, x, ord, axis, keepdims, vector=True)"}, ns=A)
_each(_np("linalg.matrix_norm"), "x, /, *, keepdims=False, ord='fro'",
      vjp={"x": "_adj.norm(g, ans, x, ord, (-2, -1), keepdims)"},
      jvp={"x": "_adj.norm_tangent(t, ans, x, ord, (-2, -1), keepdims)"}, ns=A)

# ufunc methods: reduce and accumulate (axis=0 by default, unlike np.sum), outer
_UREDUCE = "array, axis=0, dtype=None, out=None, keepdims=False, initial=None, where=True"
defrule(np.add.reduce, _UREDUCE, name="np.add.reduce",
        vjp={"array": "_rt.dtype_guard(dtype, _adj.sum(g, array, axis, keepdims))",
             "initial": "_rt.unbroadcast(g, initial)"},
        jvp={"array": "np.add.reduce(t, axis=axis, keepdims=keepdims)"},
        forbid={"out": None, "where": True}, ns=A)
defrule(np.multiply.reduce, _UREDUCE, name="np.multiply.reduce",
        vjp={"array": "_rt.dtype_guard(dtype, _adj.prod(_rt.times_initial(g, initial), array, axis, "
                      "keepdims))",
             "initial": "_rt.unbroadcast(g * np.prod(array, axis=axis, keepdims=keepdims), initial)"},
        jvp={"array": "_adj.prod_tangent(t, array, axis, keepdims)"},
        forbid={"out": None, "where": True}, ns=A)
for _u in ("maximum", "minimum"):
    defrule(getattr(np, _u).reduce, _UREDUCE, name=f"np.{_u}.reduce",
            vjp={"array": "_adj.extremum(g, ans, array, axis, keepdims)",
                 "initial": "_rt.extremum_initial_adjoint(g, ans, array, initial, axis, keepdims)"},
            jvp={"array": "_adj.extremum_tangent(t, ans, array, axis, keepdims)"},
            forbid={"out": None, "where": True, "dtype": None}, ns=A)
    defrule(getattr(np, _u).accumulate, "array, axis=0, dtype=None, out=None",
            name=f"np.{_u}.accumulate", vjp={"array": "_adj.running_extremum(g, ans, array, axis)"},
            forbid={"out": None, "dtype": None}, ns=A)
defrule(np.add.accumulate, "array, axis=0, dtype=None, out=None", name="np.add.accumulate",
        vjp={"array": "_rt.dtype_guard(dtype, _adj.cumsum(g, array, axis))"},
        jvp={"array": "np.add.accumulate(t, axis=axis)"}, forbid={"out": None}, ns=A)
defrule(np.multiply.accumulate, "array, axis=0, dtype=None, out=None",
        name="np.multiply.accumulate",
        vjp={"array": "_rt.dtype_guard(dtype, _adj.cumprod(g, ans, array, axis))"},
        forbid={"out": None}, ns=A)
for _u in ("add", "subtract", "multiply", "divide"):
    defrule(getattr(np, _u).outer, BINARY.replace("x1, x2", "A, B"), name=f"np.{_u}.outer",
            vjp={"A": f"_adj.ufunc_outer(g, A, B, {_u!r}, 0)", "B": f"_adj.ufunc_outer(g, A, B, {_u!r}, 1)"},
            jvp={"A": f"_adj.ufunc_outer_tangent(t, A, B, {_u!r}, 0)",
                 "B": f"_adj.ufunc_outer_tangent(t, A, B, {_u!r}, 1)"},
            forbid=UFUNC, ns=A)

# select: each choice where its condition is the first true one
defrule(np.select, "condlist, choicelist, default=0",
        vjp={"choicelist": "_adj.select(g, condlist, choicelist, default, 'choices')",
             "default": "_adj.select(g, condlist, choicelist, default, 'default')"},
        jvp={"choicelist": "_adj.select_tangent(t, condlist, choicelist, 'choices')",
             "default": "_adj.select_tangent(t, condlist, choicelist, 'default')"},
        constant=("condlist",), ns=A)

# -- linear algebra -------------------------------------------------------------------------------
_MATMUL = ("x1, x2, /, out=None, *, casting='same_kind', order='K', dtype=None, subok=True, "
           "axes=None, axis=None")
defrule(operator.matmul, "x1, x2, /",
        vjp={"x1": "_adj.matmul(g, x1, x2, 0)", "x2": "_adj.matmul(g, x1, x2, 1)"},
        jvp={"x1": "t @ x2", "x2": "x1 @ t"}, ns=A)
_each(_np("matmul", "linalg.matmul"), _MATMUL,
      vjp={"x1": "_adj.matmul(g, x1, x2, 0)", "x2": "_adj.matmul(g, x1, x2, 1)"},
      jvp={"x1": "np.matmul(t, x2)", "x2": "np.matmul(x1, t)"},
      forbid={"out": None, "axes": None, "axis": None}, ns=A)
defrule(np.dot, "a, b, out=None", vjp={"a": "_adj.dot(g, a, b, 0)", "b": "_adj.dot(g, a, b, 1)"},
        jvp={"a": "np.dot(t, b)", "b": "np.dot(a, t)"}, forbid={"out": None}, ns=A)
defrule(np.vdot, "a, b, /", vjp={"a": "_adj.vdot(g, a, b, 0)", "b": "_adj.vdot(g, a, b, 1)"},
        jvp={"a": "np.vdot(t, b)", "b": "np.vdot(a, t)"}, ns=A)
defrule(np.inner, "a, b, /", vjp={"a": "_adj.inner(g, a, b, 0)", "b": "_adj.inner(g, a, b, 1)"},
        jvp={"a": "np.inner(t, b)", "b": "np.inner(a, t)"}, ns=A)
defrule(np.outer, "a, b, out=None", vjp={"a": "_adj.outer(g, a, b, 0)", "b": "_adj.outer(g, a, b, 1)"},
        jvp={"a": "np.outer(t, b)", "b": "np.outer(a, t)"}, forbid={"out": None}, ns=A)
_each(_np("linalg.outer"), "x1, x2, /",
      vjp={"x1": "_adj.outer(g, x1, x2, 0)", "x2": "_adj.outer(g, x1, x2, 1)"}, ns=A)
_each(_np("vecdot", "linalg.vecdot"), "x1, x2, /, *, axis=-1",
      vjp={"x1": "_adj.vecdot(g, x1, x2, axis, 0)", "x2": "_adj.vecdot(g, x1, x2, axis, 1)"},
      ns=A)
_each(_np("tensordot", "linalg.tensordot"), "a, b, axes=2",
      vjp={"a": "_adj.tensordot(g, a, b, axes, 0)", "b": "_adj.tensordot(g, a, b, axes, 1)"},
      jvp={"a": "np.tensordot(t, b, axes)", "b": "np.tensordot(a, t, axes)"}, ns=A)
defrule(np.einsum, "*operands, out=None, optimize=False, **kwargs",
        vjp={"operands": "_adj.einsum(g, operands, None)"},
        jvp={"operands": "_adj.einsum_tangent(t, operands)"}, forbid={"out": None}, ns=A)
defrule(np.kron, "a, b", vjp={"a": "_adj.kron(g, a, b, 0)", "b": "_adj.kron(g, a, b, 1)"},
        jvp={"a": "np.kron(t, b)", "b": "np.kron(a, t)"}, ns=A)
defrule(np.trace, "a, offset=0, axis1=0, axis2=1, dtype=None, out=None",
        vjp={"a": "_adj.trace(g, a, offset, axis1, axis2)"},
        jvp={"a": "np.trace(t, offset, axis1, axis2)"}, forbid={"out": None}, ns=A)
_each(_np("linalg.trace"), "x, /, *, offset=0, dtype=None",
      vjp={"x": "_adj.trace(g, x, offset, -2, -1)"}, ns=A)
defrule(np.diagonal, "a, offset=0, axis1=0, axis2=1",
        vjp={"a": "_adj.diagonal(g, a, offset, axis1, axis2)"},
        jvp={"a": "np.diagonal(t, offset, axis1, axis2)"}, view=True, ns=A)
_each(_np("linalg.diagonal"), "x, /, *, offset=0",
      vjp={"x": "_adj.diagonal(g, x, offset, -2, -1)"}, ns=A)
defrule(np.diag, "v, k=0", vjp={"v": "_adj.diag(g, v, k)"}, jvp={"v": "np.diag(t, k)"}, ns=A)
defrule(np.triu, "m, k=0", vjp={"m": "_adj.triu(g, m, k)"}, jvp={"m": "np.triu(t, k)"}, ns=A)
defrule(np.tril, "m, k=0", vjp={"m": "_adj.tril(g, m, k)"}, jvp={"m": "np.tril(t, k)"}, ns=A)
defrule(np.linalg.inv, "a", vjp={"a": "_adj.inv(g, ans)"},
        jvp={"a": "-(ans @ t @ ans)"}, ns=A)
defrule(np.linalg.det, "a", vjp={"a": "_adj.det(g, ans, a)"},
        jvp={"a": "ans * np.trace(np.linalg.solve(a, t), axis1=-2, axis2=-1)"}, ns=A)
defrule(np.linalg.slogdet, "a", vjp={"a": "_adj.slogdet(g, ans, a)"},
        jvp={"a": "_adj.slogdet_tangent(t, ans, a)"}, kind="any", ns=A)
defrule(np.linalg.solve, "a, b", joint=(("a", "b"), "_adj.solve(g, ans, a, b)"),
        jvp={"a": "-np.linalg.solve(a, t @ ans) if np.ndim(b) != 1 "
                  "else -np.linalg.solve(a, (t @ ans[..., None]))[..., 0]",
             "b": "np.linalg.solve(a, t)"}, ns=A)
defrule(np.linalg.cholesky, "a, /, *, upper=False", vjp={"a": "_adj.cholesky(g, ans, a, upper)"},
        ns=A)
defrule(np.linalg.eigh, "a, UPLO='L'", vjp={"a": "_adj.eigh(g, ans, a, UPLO)"}, kind="any", ns=A)
defrule(np.linalg.eigvalsh, "a, UPLO='L'", vjp={"a": "_adj.eigvalsh(g, ans, a, UPLO)"}, ns=A)
defrule(np.linalg.qr, "a, mode='reduced'", vjp={"a": "_adj.qr(g, ans, a, mode)"}, kind="any",
        ns=A)
defrule(np.linalg.svd, "a, full_matrices=True, compute_uv=True, hermitian=False",
        vjp={"a": "_adj.svd(g, ans, a, full_matrices, compute_uv, hermitian)"}, kind="any", ns=A)
_each(_np("linalg.svdvals"), "x, /", vjp={"x": "_adj.svd(g, ans, x, False, False)"}, ns=A)
defrule(np.linalg.pinv, "a, rcond=None, hermitian=False, *, rtol=None",
        vjp={"a": "_adj.pinv(g, ans, a, hermitian)"},
        jvp={"a": "_adj.pinv_tangent(t, ans, a, hermitian)"}, ns=A)
defrule(np.linalg.lstsq, "a, b, rcond=None", joint=(("a", "b"), "_adj.lstsq(g, ans, a, b, rcond)"),
        jvp={"a": "_adj.lstsq_tangent(t, ans, a, b, 'a')", "b": "_adj.lstsq_tangent(t, ans, a, b, 'b')"},
        kind="any", ns=A)
defrule(np.linalg.matrix_power, "a, n", vjp={"a": "_adj.matrix_power(g, a, n)"},
        jvp={"a": "_adj.matrix_power_tangent(t, a, n)"}, ns=A)
defrule(np.linalg.multi_dot, "arrays, *, out=None", vjp={"arrays": "_adj.multi_dot(g, arrays)"},
        jvp={"arrays": "_adj.multi_dot_tangent(t, arrays, ans)"}, forbid={"out": None}, ns=A)

# -- shape functions ------------------------------------------------------------------------------
_each(_np("reshape"), "a, /, shape=None, order='C', *, newshape=None, copy=None",
      vjp={"a": "_adj.reshape_back(g, a, order)"},
      jvp={"a": "_adj.reshape_to(t, shape if shape is not None else newshape, order, a)"},
      view=True, ns=A)
defrule(np.ravel, "a, order='C'", vjp={"a": "_adj.reshape_back(g, a, order)"},
        jvp={"a": "np.ravel(t, order)"}, view=True, ns=A)
_each(_np("squeeze", "expand_dims"), "a, axis=None",
      vjp={"a": "_adj.reshape_back(g, a)"}, jvp={"a": "np.reshape(t, np.shape(ans))"}, view=True,
      ns=A)
defrule(np.broadcast_to, "array, shape, subok=False", vjp={"array": "_rt.unbroadcast(g, array)"},
        jvp={"array": "np.broadcast_to(t, shape)"}, view=True)
_each(_np("atleast_1d", "atleast_2d", "atleast_3d"), "*arys",
      vjp={"arys": "_adj.atleast(g, arys)"}, view=True, kind="any", ns=A)
defrule(np.tile, "A, reps", vjp={"A": "_adj.tile(g, A, reps)"}, jvp={"A": "np.tile(t, reps)"},
        ns=A)
defrule(np.repeat, "a, repeats, axis=None", vjp={"a": "_adj.repeat(g, a, repeats, axis)"},
        jvp={"a": "np.repeat(t, repeats, axis)"}, ns=A)
defrule(np.flip, "m, axis=None", vjp={"m": "np.flip(g, axis)"}, jvp={"m": "np.flip(t, axis)"},
        view=True)
defrule(np.fliplr, "m", vjp={"m": "np.fliplr(g)"}, jvp={"m": "np.fliplr(t)"}, view=True)
defrule(np.flipud, "m", vjp={"m": "np.flipud(g)"}, jvp={"m": "np.flipud(t)"}, view=True)
defrule(np.roll, "a, shift, axis=None", vjp={"a": "_adj.roll(g, a, shift, axis)"},
        jvp={"a": "np.roll(t, shift, axis)"}, ns=A)
defrule(np.rot90, "m, k=1, axes=(0, 1)", vjp={"m": "np.rot90(g, -k, axes)"},
        jvp={"m": "np.rot90(t, k, axes)"}, view=True)
defrule(np.pad, "array, pad_width, mode='constant', **kwargs",
        vjp={"array": "_adj.pad(g, array, pad_width, mode)"},
        jvp={"array": "np.pad(t, pad_width, mode)"}, ns=A)
defrule(np.split, "ary, indices_or_sections, axis=0",
        vjp={"ary": "_adj.split(g, ary, indices_or_sections, axis)"}, kind="any", view=True, ns=A)
defrule(np.array_split, "ary, indices_or_sections, axis=0",
        vjp={"ary": "_adj.split(g, ary, indices_or_sections, axis, 'array_split')"}, kind="any",
        view=True, ns=A)
for _k in ("hsplit", "vsplit", "dsplit"):
    defrule(getattr(np, _k), "ary, indices_or_sections",
            vjp={"ary": f"_adj.split(g, ary, indices_or_sections, 0, {_k!r})"}, kind="any",
            view=True, ns=A)
defrule(np.take, "a, indices, axis=None, out=None, mode='raise'",
        vjp={"a": "_adj.take(g, a, indices, axis, mode)"},
        jvp={"a": "np.take(t, indices, axis, mode=mode)"}, forbid={"out": None}, ns=A)
defrule(np.take_along_axis, "arr, indices, axis=-1",
        vjp={"arr": "_adj.take_along_axis(g, arr, indices, axis)"},
        jvp={"arr": "np.take_along_axis(t, indices, axis)"}, ns=A)
defrule(np.sort, "a, axis=-1, kind=None, order=None, *, stable=None",
        vjp={"a": "_adj.sort(g, a, axis)"}, jvp={"a": "_adj.sort_tangent(t, a, axis)"}, forbid={"order": None}, ns=A)
defrule(np.diff, "a, n=1, axis=-1, prepend=None, append=None",
        vjp={"a": "_adj.diff(g, a, n, axis)"}, jvp={"a": "np.diff(t, n, axis)"},
        forbid={"prepend": None, "append": None}, ns=A)
defrule(np.copy, "a, order='K', subok=False", vjp={"a": "g"}, jvp={"a": "np.copy(t)"})
_each(_np("ascontiguousarray", "asfortranarray"), "a, dtype=None, *, like=None",
      vjp={"a": "_adj.like(g, a)"}, jvp={"a": "_adj.array_tangent(t, ans, a)"}, view=True, ns=A)
defrule(np.array, "object, dtype=None, *, copy=True, order='K', subok=False, ndmin=0, ndmax=0, "
        "like=None", vjp={"object": "_rt.dtype_guard(dtype, _adj.array_adjoint(np.reshape(g, "
                                    "np.shape(object)), object))"},
        jvp={"object": "_adj.array_tangent(t, ans, object)"},
        ns=A)
_each(_np("asarray", "asanyarray"), "a, dtype=None, order=None, *, device=None, copy=None, "
      "like=None", vjp={"a": "_rt.dtype_guard(dtype, _adj.array_adjoint(np.reshape(g, np.shape(a)), "
                             "a))"}, jvp={"a": "_adj.array_tangent(t, ans, a)"}, view=True,
      ns=A)
defrule(np.broadcast_arrays, "*args, subok=False",
        vjp={"args": "_adj.broadcast_arrays(g, args)"}, kind="any", view=True, ns=A)
defrule(np.meshgrid, "*xi, copy=True, sparse=False, indexing='xy'",
        vjp={"xi": "_adj.meshgrid(g, xi, indexing, sparse)"}, kind="any", ns=A)
defrule(np.linspace, "start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *, "
        "device=None", vjp={"start": "_adj.linspace(g, start, stop, num, endpoint, axis, 0)",
                            "stop": "_adj.linspace(g, start, stop, num, endpoint, axis, 1)"},
        jvp={"start": "_adj.linspace_tangent(t, start, stop, num, endpoint, axis, 0)",
             "stop": "_adj.linspace_tangent(t, start, stop, num, endpoint, axis, 1)"},
        forbid={"retstep": False}, ns=A)

# concat family
_each(_np("concatenate", "concat"), "arrays, /, axis=0, out=None, *, dtype=None, "
      "casting='same_kind'", vjp={"arrays": "_adj.concatenate(g, arrays, axis)"},
      jvp={"arrays": "_adj.concat_tangent(t, arrays, axis)"}, forbid={"out": None}, kind="array", ns=A)
defrule(np.stack, "arrays, axis=0, out=None, *, dtype=None, casting='same_kind'",
        vjp={"arrays": "_adj.stack(g, arrays, axis)"}, jvp={"arrays": "np.stack(_adj.tangent_list(t, arrays), axis)"},
        forbid={"out": None}, ns=A)
for _k in ("vstack", "hstack"):
    defrule(getattr(np, _k), "tup, *, dtype=None, casting='same_kind'",
            vjp={"tup": f"_adj.{_k}(g, tup)"}, jvp={"tup": f"np.{_k}(_adj.tangent_list(t, tup))"}, ns=A)
defrule(np.dstack, "tup", vjp={"tup": "_adj.dstack(g, tup)"}, jvp={"tup": "np.dstack(_adj.tangent_list(t, tup))"}, ns=A)
defrule(np.column_stack, "tup", vjp={"tup": "_adj.column_stack(g, tup)"},
        jvp={"tup": "np.column_stack(_adj.tangent_list(t, tup))"}, ns=A)
defrule(np.append, "arr, values, axis=None",
        vjp={"arr": "_adj.append(g, arr, values, axis, 0)",
             "values": "_adj.append(g, arr, values, axis, 1)"}, ns=A)
defrule(np.block, "arrays", vjp={"arrays": "_adj.block(g, arrays)"}, ns=A)
_each(_np("unstack"), "x, /, *, axis=0", vjp={"x": "_adj.unstack(g, x, axis)"}, kind="any",
      view=True, ns=A)

# index tricks: np.r_[...], np.c_[...] are concatenations; np.mgrid/np.ogrid expand slices;
# np.s_/np.index_exp return their items.  The lowering turns ``np.r_[a, 0:3]`` into
# ``_adj.index_concat(np.r_, True, a, _adj.r_slice(0, 3, None))`` (see adjoints.index_concat).
defrule(_adjoints.index_concat, "obj, is_tuple, /, *items",
        vjp={"items": "_adj.index_concat_adjoint(g, obj, is_tuple, items)"},
        jvp={"items": "_adj.index_concat_tangent(t, ans, obj, is_tuple, items)"},
        name="np.r_/np.c_ [...]", ns=A)
defrule(_adjoints.index_trick, "obj, is_tuple, /, *items",
        vjp={"items": "_adj.index_trick_adjoint(g, obj, is_tuple, items)"},
        jvp={"items": "_adj.index_trick_tangent(t, ans, obj, is_tuple, items)"},
        name="np.mgrid/np.ogrid/np.s_ [...]", kind="any", ns=A)
defrule(_adjoints.r_slice, "start, stop, step, /",
        vjp={"start": "_adj.r_slice_adjoint(g, start, stop, step, 0)",
             "stop": "_adj.r_slice_adjoint(g, start, stop, step, 1)",
             "step": "_adj.r_slice_adjoint(g, start, stop, step, 2)"},
        jvp={"start": "_adj.r_slice_tangent(t, start, stop, step, 0)",
             "stop": "_adj.r_slice_tangent(t, start, stop, step, 1)",
             "step": "_adj.r_slice_tangent(t, start, stop, step, 2)"},
        name="slice in an index trick", kind="any", ns=A)

# permute family
_each(_np("transpose", "permute_dims"), "a, axes=None", vjp={"a": "_adj.transpose(g, a, axes)"},
      jvp={"a": "_adj.permute_tangent(t, a, axes)"}, view=True, ns=A)
defrule(np.moveaxis, "a, source, destination",
        vjp={"a": "_adj.moveaxis(g, a, source, destination)"},
        jvp={"a": "np.moveaxis(t, source, destination)"}, view=True, ns=A)
defrule(np.swapaxes, "a, axis1, axis2", vjp={"a": "_adj.swapaxes(g, a, axis1, axis2)"},
        jvp={"a": "np.swapaxes(t, axis1, axis2)"}, view=True, ns=A)
defrule(np.rollaxis, "a, axis, start=0", vjp={"a": "_adj.rollaxis(g, a, axis, start)"},
        jvp={"a": "np.rollaxis(t, axis, start)"}, view=True, ns=A)
_each(_np("matrix_transpose", "linalg.matrix_transpose"), "x, /",
      vjp={"x": "_adj.matrix_transpose(g, x)"}, jvp={"x": "np.swapaxes(t, -1, -2)"}, view=True,
      ns=A)

# -- statistics -----------------------------------------------------------------------------------
defrule(np.average, "a, axis=None, weights=None, returned=False, *, keepdims=False",
        vjp={"a": "_adj.average(g, ans, a, axis, weights, keepdims, 'a')",
             "weights": "_adj.average(g, ans, a, axis, weights, keepdims, 'weights')"},
        jvp={"a": "_adj.average_tangent(t, ans, a, axis, weights, keepdims, 'a')",
             "weights": "_adj.average_tangent(t, ans, a, axis, weights, keepdims, 'weights')"},
        forbid={"returned": False}, ns=A)
defrule(np.nansum, "a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True",
        vjp={"a": "_rt.dtype_guard(dtype, _adj.nansum(g, a, axis, keepdims))",
             "initial": "_rt.unbroadcast(g, initial)"},
        jvp={"a": "_adj.nansum_tangent(t, a, axis, keepdims)", "initial": "t"},
        forbid={"out": None, "where": True}, ns=A)
defrule(np.nanmean, "a, axis=None, dtype=None, out=None, keepdims=False, *, where=True",
        vjp={"a": "_rt.dtype_guard(dtype, _adj.nansum(g, a, axis, keepdims, True))"},
        jvp={"a": "_adj.nansum_tangent(t, a, axis, keepdims, True)"},
        forbid={"out": None, "where": True}, ns=A)
# max/min over the values that are not nan: nan never equals the result, so it gets nothing
_each([np.nanmax, np.nanmin], _MAX,
      vjp={"a": "_adj.extremum(g, ans, a, axis, keepdims)",
           "initial": "_rt.extremum_initial_adjoint(g, ans, a, initial, axis, keepdims)"},
      jvp={"a": "_adj.extremum_tangent(t, ans, a, axis, keepdims)"},
      forbid={"out": None, "where": True}, ns=A)
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

# -- signal processing and polynomials ------------------------------------------------------------
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
        jvp={k: f"_adj.interp_tangent(t, x, xp, fp, left, right, {k!r})"
             for k in ("x", "xp", "fp", "left", "right")},
        forbid={"period": None}, ns=A)
_each(_np("trapezoid", "trapz"), "y, x=None, dx=1.0, axis=-1",
      vjp={k: f"_adj.trapezoid(g, y, x, dx, axis, {k!r})" for k in ("y", "x", "dx")},
      jvp={k: f"_adj.trapezoid_tangent(t, y, x, dx, axis, {k!r})" for k in ("y", "x", "dx")},
      ns=A)
defrule(np.polyval, "p, x", vjp={"p": "_adj.polyval(g, p, x, 'p')", "x": "_adj.polyval(g, p, x, 'x')"},
        jvp={"p": "_adj.polyval_tangent(t, p, x, 'p')", "x": "_adj.polyval_tangent(t, p, x, 'x')"},
        ns=A)
defrule(np.nan_to_num, "x, copy=True, nan=0.0, posinf=None, neginf=None",
        vjp={"x": "_adj.nan_to_num(g, x)", "nan": "_adj.nan_to_num(g, x, 'nan', nan)",
             "posinf": "_adj.nan_to_num(g, x, 'posinf', posinf)",
             "neginf": "_adj.nan_to_num(g, x, 'neginf', neginf)"},
        jvp={"x": "_adj.nan_to_num_tangent(t, x)", "nan": "_adj.nan_to_num_tangent(t, x, 'nan')",
             "posinf": "_adj.nan_to_num_tangent(t, x, 'posinf')",
             "neginf": "_adj.nan_to_num_tangent(t, x, 'neginf')"},
        forbid={"copy": True}, ns=A)

# -- FFT: linear maps; the adjoint is the other transform with the dual norm -----------------------
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

# -- zero derivative ------------------------------------------------------------------------------
defzero(*_np(
    # shape/type queries
    "shape", "ndim", "size", "result_type", "iscomplexobj", "isrealobj", "iscomplex", "isreal",
    "isscalar",
    # index-valued and piecewise-constant functions
    "argmax", "argmin", "argsort", "argwhere", "nonzero", "flatnonzero", "searchsorted",
    "count_nonzero", "digitize", "lexsort", "argpartition",
    "floor", "ceil", "round", "around", "rint", "fix", "trunc", "sign", "signbit", "heaviside",
    "floor_divide", "spacing", "nextafter",
    # predicates and comparisons
    "isnan", "isinf", "isfinite", "isneginf", "isposinf", "isclose", "allclose", "array_equal",
    "array_equiv", "greater", "greater_equal", "less", "less_equal", "equal", "not_equal",
    "logical_and", "logical_or", "logical_xor", "logical_not", "all", "any",
    "bitwise_and", "bitwise_or", "bitwise_xor", "invert", "left_shift", "right_shift", "gcd",
    "lcm",
    # constructors whose output carries no derivative
    "zeros", "ones", "empty", "eye", "identity", "arange", "tri", "indices",
    "zeros_like", "ones_like", "empty_like", "diag_indices", "tril_indices",
    "triu_indices", "ndindex", "unravel_index", "ravel_multi_index",
    "finfo", "iinfo", "dtype", "can_cast",
))

# -- ndarray methods ------------------------------------------------------------------------------
defmethod("sum", "self, axis=None, dtype=None, out=None, keepdims=False, initial=None, "
          "where=True", vjp={"self": "_rt.dtype_guard(dtype, _adj.sum(g, self, axis, keepdims))",
                             "initial": "_rt.unbroadcast(g, initial)"},
          jvp={"self": "np.sum(t, axis=axis, keepdims=keepdims)"},
          forbid={"out": None, "where": True}, ns=A)
defmethod("mean", "self, axis=None, dtype=None, out=None, keepdims=False, *, where=True",
          vjp={"self": "_adj.mean(g, self, axis, keepdims)"},
          jvp={"self": "np.mean(t, axis=axis, keepdims=keepdims)"},
          forbid={"out": None, "where": True}, ns=A)
defmethod("prod", "self, axis=None, dtype=None, out=None, keepdims=False, initial=None, "
          "where=True",
          vjp={"self": "_rt.dtype_guard(dtype, _adj.prod(_rt.times_initial(g, initial), self, axis, "
                       "keepdims))",
               "initial": "_rt.unbroadcast(g * np.prod(self, axis=axis, keepdims=keepdims), initial)"},
          forbid={"out": None, "where": True}, ns=A)
for _k in ("max", "min"):
    defmethod(_k, "self, axis=None, out=None, keepdims=False, initial=None, where=True",
              vjp={"self": "_adj.extremum(g, ans, self, axis, keepdims)"},
              forbid={"out": None, "where": True}, ns=A)
_MVAR = ("self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, "
         "mean=None, correction=None")
defmethod("var", _MVAR,
          vjp={"self": "_adj.var(g, self, axis, _adj._correction(ddof, correction), keepdims)"},
          forbid={"out": None, "where": True, "mean": None}, ns=A)
defmethod("std", _MVAR,
          vjp={"self": "_adj.std(g, ans, self, axis, _adj._correction(ddof, correction), "
                       "keepdims)"},
          forbid={"out": None, "where": True, "mean": None}, ns=A)
defmethod("cumsum", "self, axis=None, dtype=None, out=None",
          vjp={"self": "_adj.cumsum(g, self, axis)"}, jvp={"self": "t.cumsum(axis)"},
          forbid={"out": None}, ns=A)
defmethod("cumprod", "self, axis=None, dtype=None, out=None",
          vjp={"self": "_adj.cumprod(g, ans, self, axis)"}, forbid={"out": None}, ns=A)
defmethod("dot", "self, b, out=None",
          vjp={"self": "_adj.dot(g, self, b, 0)", "b": "_adj.dot(g, self, b, 1)"},
          jvp={"self": "t.dot(b)", "b": "self.dot(t)"}, forbid={"out": None}, ns=A)
defmethod("reshape", "self, *shape, order='C', copy=None",
          vjp={"self": "_adj.reshape_back(g, self, order)"},
          jvp={"self": "t.reshape(*shape, order=order)"}, view=True, ns=A)
defmethod("ravel", "self, order='C'", vjp={"self": "_adj.reshape_back(g, self, order)"},
          jvp={"self": "t.ravel(order)"}, view=True, ns=A)
defmethod("flatten", "self, order='C'", vjp={"self": "_adj.reshape_back(g, self, order)"},
          jvp={"self": "t.flatten(order)"}, ns=A)
defmethod("squeeze", "self, axis=None", vjp={"self": "_adj.reshape_back(g, self)"},
          jvp={"self": "t.squeeze(axis)"}, view=True, ns=A)
defmethod("transpose", "self, *axes", vjp={"self": "_adj.transpose(g, self, axes)"},
          jvp={"self": "t.transpose(*axes)"}, view=True, ns=A)
defmethod("swapaxes", "self, axis1, axis2", vjp={"self": "_adj.swapaxes(g, self, axis1, axis2)"},
          jvp={"self": "t.swapaxes(axis1, axis2)"}, view=True, ns=A)
defmethod("copy", "self, order='C'", vjp={"self": "g"}, jvp={"self": "t.copy()"})
for _k in ("conj", "conjugate"):
    defmethod(_k, "self", vjp={"self": "_rt.cj(g)"}, jvp={"self": "_rt.cj(t)"})
defmethod("clip", "self, min=None, max=None, out=None, **kwargs",
          vjp={"self": "_adj.clip(g, self, min, max, 'a')",
               "min": "_adj.clip(g, self, min, max, 'lo')",
               "max": "_adj.clip(g, self, min, max, 'hi')"}, forbid={"out": None}, ns=A)
defmethod("astype", "self, dtype, order='K', casting='unsafe', subok=True, copy=True",
          vjp={"self": "_rt.dtype_guard(dtype, _adj.astype(g, self))"},
          jvp={"self": "t.astype(dtype)"}, ns=A)
defmethod("item", "self, *args", vjp={"self": "_adj.item(g, self, args)"},
          jvp={"self": "t.item(*args)"}, kind="float", ns=A)
defmethod("repeat", "self, repeats, axis=None", vjp={"self": "_adj.repeat(g, self, repeats, axis)"},
          jvp={"self": "t.repeat(repeats, axis)"}, ns=A)
defmethod("take", "self, indices, axis=None, out=None, mode='raise'",
          vjp={"self": "_adj.take(g, self, indices, axis, mode)"},
          jvp={"self": "t.take(indices, axis, mode=mode)"}, forbid={"out": None}, ns=A)
defmethod("diagonal", "self, offset=0, axis1=0, axis2=1",
          vjp={"self": "_adj.diagonal(g, self, offset, axis1, axis2)"},
          jvp={"self": "t.diagonal(offset, axis1, axis2)"}, view=True, ns=A)
defmethod("trace", "self, offset=0, axis1=0, axis2=1, dtype=None, out=None",
          vjp={"self": "_adj.trace(g, self, offset, axis1, axis2)"},
          jvp={"self": "t.trace(offset, axis1, axis2)"}, forbid={"out": None}, ns=A)
defzero_method("argmax", "argmin", "argsort", "nonzero", "all", "any", "round", "searchsorted",
               "argpartition", "tobytes")

# constructors filled with a value: the fill value carries the derivative
defrule(np.full, "shape, fill_value, dtype=None, order='C', *, device=None, like=None",
        vjp={"fill_value": "_rt.dtype_guard(dtype, _rt.unbroadcast(g, fill_value))"},
        jvp={"fill_value": "_rt.dtype_guard(ans.dtype, np.broadcast_to(t, ans.shape).astype(ans.dtype))"})
defrule(np.full_like, "a, fill_value, dtype=None, order='K', subok=True, shape=None, *, "
        "device=None", vjp={"fill_value": "_rt.dtype_guard(_rt.dtype_of(dtype, a), "
                                          "_rt.unbroadcast(g, fill_value))"},
        jvp={"fill_value": "_rt.dtype_guard(ans.dtype, np.broadcast_to(t, ans.shape).astype(ans.dtype))"})
