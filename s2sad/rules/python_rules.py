"""Rules for Python itself: operators (on Python numbers and, with broadcasting, on arrays),
the ``math`` module, builtins, and the displays the lowering produces (tuples, lists, dicts).

One line per primitive; ``g`` is the output's adjoint, ``ans`` the output.
"""
import builtins
import functools
import math
import operator

from .. import runtime as _r
from .registry import defattr, defcontainer, defrule, defzero, defzero_method  # noqa: F401

B = dict(broadcast=True, kind="same")
ub = "_rt.unbroadcast"

# -- arithmetic operators (Python numbers and arrays) ---------------------------------------------
defrule(operator.add, "a, b, /", vjp={"a": f"{ub}(g, a)", "b": f"{ub}(g, b)"},
        jvp={"a": "t", "b": "t"}, **B)
defrule(operator.sub, "a, b, /", vjp={"a": f"{ub}(g, a)", "b": f"{ub}(-g, b)"},
        jvp={"a": "t", "b": "-t"}, **B)
defrule(operator.mul, "a, b, /", vjp={"a": f"{ub}(g * _rt.cj(b), a)", "b": f"{ub}(g * _rt.cj(a), b)"},
        jvp={"a": "t * b", "b": "a * t"}, **B)
defrule(operator.truediv, "a, b, /",
        vjp={"a": f"{ub}(g / _rt.cj(b), a)", "b": f"{ub}(-g * _rt.cj(ans / b), b)"},
        jvp={"a": "t / b", "b": "-t * ans / b"}, **B)
defrule(operator.pow, "a, b, /",
        vjp={"a": f"{ub}(_rt.pow_base_adjoint(g, a, b), a)",
             "b": f"{ub}(_rt.pow_exponent_adjoint(g, ans, a), b)"},
        jvp={"a": "t * b * a ** (b - 1)", "b": "t * ans * _rt.safe_log(a)"}, **B)
defrule(builtins.pow, "base, exp, mod=None, /",
        vjp={"base": f"{ub}(_rt.pow_base_adjoint(g, base, exp), base)",
             "exp": f"{ub}(_rt.pow_exponent_adjoint(g, ans, base), exp)"},
        jvp={"base": "t * exp * base ** (exp - 1)", "exp": "t * ans * _rt.safe_log(base)"},
        forbid={"mod": None}, **B)
defrule(operator.mod, "a, b, /",
        vjp={"a": f"{ub}(g, a)", "b": f"{ub}(-g * (a // b), b)"}, jvp={"a": "t", "b": "-t * (a // b)"}, **B)
defrule(operator.neg, "a, /", vjp={"a": "-g"}, jvp={"a": "-t"}, kind="same")
defrule(operator.pos, "a, /", vjp={"a": "g"}, jvp={"a": "t"}, kind="same")
defrule(builtins.abs, "x, /", vjp={"x": "_rt.abs_adjoint(g, x)"},
        jvp={"x": "(x.conjugate() * t).real / abs(x) if type(x) is complex and x != 0 "
                  "else _rt.abs_tangent(t, x)"}, kind="same")
defrule(builtins.float, "x=0.0, /", vjp={"x": "_rt.real_like(g, x)"}, jvp={"x": "t"}, kind="float")
defzero(operator.floordiv, operator.lt, operator.le, operator.gt, operator.ge, operator.eq,
        operator.ne, operator.not_, operator.is_, operator.is_not, operator.contains, _r.not_in,
        operator.and_, operator.or_, operator.xor, operator.invert, operator.lshift,
        operator.rshift, builtins.len, builtins.int, builtins.bool, builtins.range,
        builtins.isinstance, builtins.type, builtins.round, builtins.divmod, builtins.slice,
        builtins.print, builtins.str, builtins.repr, builtins.format, builtins.id, builtins.hash,
        builtins.callable, builtins.hasattr, builtins.issubclass, _r.concat_str)

# -- indexing and displays -------------------------------------------------------------------------
defrule(operator.getitem, "obj, idx, /", vjp={"obj": "_rt.getitem_adjoint(g, obj, idx)"},
        constant=("idx",),
        jvp={"obj": "t[idx]"}, view=True, kind="getitem")
defrule(_r.build_tuple, "*items", vjp={"items": "_rt.parts(g, n_items)"}, jvp={"items": "t"},
        kind="container", name="tuple display")
defrule(_r.build_list, "*items", vjp={"items": "_rt.parts(g, n_items)"}, jvp={"items": "t"},
        kind="container", name="list display")
defrule(_r.build_dict, "keys, *values", vjp={"values": "_rt.dict_parts(g, keys)"},
        kind="container", name="dict display")

# -- math ----------------------------------------------------------------------------------------
F = dict(kind="float")
for _fn, _d in [
    (math.sin, "g * math.cos(x)"), (math.cos, "-g * math.sin(x)"),
    (math.tan, "g / math.cos(x) ** 2"), (math.exp, "g * ans"), (math.expm1, "g * (ans + 1.0)"),
    (math.log1p, "g / (1.0 + x)"), (math.sqrt, "g / (2.0 * ans)"), (math.tanh, "g * (1.0 - ans * ans)"),
    (math.sinh, "g * math.cosh(x)"), (math.cosh, "g * math.sinh(x)"),
    (math.asin, "g / math.sqrt(1.0 - x * x)"), (math.acos, "-g / math.sqrt(1.0 - x * x)"),
    (math.atan, "g / (1.0 + x * x)"), (math.asinh, "g / math.sqrt(x * x + 1.0)"),
    (math.acosh, "g / math.sqrt(x * x - 1.0)"), (math.atanh, "g / (1.0 - x * x)"),
    (math.erf, "g * 2.0 / math.sqrt(math.pi) * math.exp(-x * x)"),
    (math.erfc, "-g * 2.0 / math.sqrt(math.pi) * math.exp(-x * x)"),
    (math.log2, "g / (x * math.log(2.0))"), (math.log10, "g / (x * math.log(10.0))"),
    (math.fabs, "g * math.copysign(1.0, x)"), (math.lgamma, "g * _rt.digamma(x)"),
    (math.gamma, "g * ans * _rt.digamma(x)"), (math.degrees, "g * (180.0 / math.pi)"),
    (math.radians, "g * (math.pi / 180.0)"),
]:
    defrule(_fn, "x, /", vjp={"x": _d}, jvp={"x": _d.replace("g", "t", 1)}, **F)
defrule(math.log, "x, base=math.e, /",
        vjp={"x": "g / (x * math.log(base))", "base": "-g * ans / (base * math.log(base))"},
        jvp={"x": "t / (x * math.log(base))", "base": "-t * ans / (base * math.log(base))"}, **F)
defrule(math.pow, "x, y, /",
        vjp={"x": "_rt.pow_base_adjoint(g, x, y)", "y": "_rt.pow_exponent_adjoint(g, ans, x)"},
        jvp={"x": "t * y * x ** (y - 1)", "y": "t * ans * _rt.safe_log(x)"}, **F)
defrule(math.atan2, "y, x, /",
        vjp={"y": "g * x / (x * x + y * y)", "x": "-g * y / (x * x + y * y)"},
        jvp={"y": "t * x / (x * x + y * y)", "x": "-t * y / (x * x + y * y)"}, **F)
defrule(math.hypot, "*coordinates", vjp={"coordinates": "_rt.hypot_adjoint(g, ans, coordinates)"},
        jvp={"coordinates": "_fw.hypot_tangent(t, ans, coordinates)"}, **F)
defrule(math.copysign, "x, y, /", vjp={"x": "g * math.copysign(1.0, x) * math.copysign(1.0, y)"},
        jvp={"x": "t * math.copysign(1.0, x) * math.copysign(1.0, y)"}, constant=("y",), **F)
defzero(math.floor, math.ceil, math.trunc, math.isnan, math.isinf, math.isfinite, math.isclose,
        math.factorial, math.comb, math.perm, math.gcd)

# -- builtins over sequences ------------------------------------------------------------------------
defrule(builtins.sum, "iterable, /, start=0",
        vjp={"iterable": "_rt.sum_adjoint(g, iterable)", "start": f"{ub}(g, start)"},
        jvp={"iterable": "_fw.sum_tangent(t, iterable, ans)", "start": "_fw.bcast(t, ans)"}, kind="any")
defrule(math.fsum, "seq, /", vjp={"seq": "_rt.sum_adjoint(g, seq)"},
        jvp={"seq": "float(_fw.sum_tangent(t, seq, ans))"}, **F)
defrule(math.ldexp, "x, i, /", vjp={"x": "g * math.ldexp(1.0, i)"}, jvp={"x": "t * math.ldexp(1.0, i)"},
        constant=("i",), **F)

# -- array attributes --------------------------------------------------------------------------------
# .T / .mT belong to the permute family: on CuPy arrays their adjoints run as the permute kernel
defattr("T", vjp={"self": "_adj.transpose(g, self, None)"}, jvp={"self": "t.T"}, view=True)
defattr("mT", vjp={"self": "_adj.swapaxes(g, self, -1, -2)"}, jvp={"self": "np.swapaxes(t, -1, -2)"},
        view=True)
defattr("real", vjp={"self": "_rt.real_adjoint(g, self)"}, jvp={"self": "t.real"}, view=True)
defattr("imag", vjp={"self": "_rt.imag_adjoint(g, self)"}, jvp={"self": "t.imag"}, view=True)

# -- functions as values, conversions, builtins over sequences ---------------------------------------
defrule(_r.make_closure, "names, *values", vjp={"values": "_rt.dict_parts(g, names)"}, kind="any",
        name="closure")
defrule(_r.star_args, "*segments", vjp={"segments": "_rt.star_args_adjoint(g, segments)"},
        jvp={"segments": "_fw.star_args_tangent(t, segments)"}, kind="container", name="starred arguments")
defrule(builtins.list, "iterable=(), /", vjp={"iterable": "_rt.seq_adjoint(g, iterable)"},
        jvp={"iterable": "_fw.seq_tangent(t, iterable, ans)"}, kind="container")
defrule(builtins.tuple, "iterable=(), /", vjp={"iterable": "_rt.seq_adjoint(g, iterable)"},
        jvp={"iterable": "_fw.seq_tangent(t, iterable, ans)"}, kind="container")
defrule(builtins.sorted, "iterable, /, *, key=None, reverse=False",
        vjp={"iterable": "_rt.sorted_adjoint(g, iterable, key, reverse)"},
        jvp={"iterable": "_fw.sorted_tangent(t, iterable, key, reverse)"}, kind="container")
defrule(builtins.min, "*args, key=None", vjp={"args": "_rt.extremum_adjoint(g, args, key, min)"},
        jvp={"args": "_fw.extremum_tangent(t, args, key, min)"}, kind="any")
defrule(builtins.max, "*args, key=None", vjp={"args": "_rt.extremum_adjoint(g, args, key, max)"},
        jvp={"args": "_fw.extremum_tangent(t, args, key, max)"}, kind="any")
defrule(_r.identity, "x, /", vjp={"x": "g"}, jvp={"x": "t"}, kind="any")
defrule(builtins.complex, "real=0.0, imag=0.0, /",
        vjp={"real": "_rt.real_part(g)", "imag": "_rt.imag_part(g)"},
        jvp={"real": "t + 0j", "imag": "1j * t"}, kind="complex")
defzero(builtins.any, builtins.all, builtins.open, builtins.setattr, builtins.vars, builtins.dir,
        builtins.ord, builtins.chr)
defrule(builtins.zip, "*iterables, strict=False", vjp={"iterables": "_rt.zip_adjoint(g, iterables)"},
        jvp={"iterables": "_fw.zip_tangent(t, iterables)"}, kind="any")
defrule(builtins.enumerate, "iterable, start=0", vjp={"iterable": "_rt.enumerate_adjoint(g, iterable)"},
        jvp={"iterable": "_fw.enumerate_tangent(t, iterable)"}, kind="any")
defrule(builtins.reversed, "seq, /", vjp={"seq": "_rt.reversed_adjoint(g, seq)"},
        jvp={"seq": "_fw.reversed_tangent(t, seq)"}, kind="any")
defrule(builtins.iter, "obj, /", vjp={"obj": "_rt.seq_adjoint(g, obj)"},
        jvp={"obj": "iter(_fw._elems(t, obj))"}, kind="any")

# -- read-only methods of containers (dict.get, dict.items...) ---------------------------------------
defcontainer("get", "self, key, default=None, /",
             vjp={"self": "_rt.dict_get_adjoint(g, self, key)", "default": "_rt.dict_default_adjoint(g, self, key)"},
             jvp={"self": "_fw.get_tangent(t, self, key, ans)",
                  "default": "_fw.default_tangent(t, self, key, ans)"},
             kind="any")
defcontainer("values", "self, /", vjp={"self": "_rt.values_adjoint(g, self)"},
             jvp={"self": "_fw.values_tangent(t, self)"}, kind="any")
defcontainer("items", "self, /", vjp={"self": "_rt.items_adjoint(g, self)"},
             jvp={"self": "_fw.items_tangent(t, self)"}, kind="any")
defcontainer("copy", "self, /", vjp={"self": "g"}, jvp={"self": "_fw.copy_tangent(t, self)"},
             kind="container")
defcontainer("keys", "self, /", zero=True)
defcontainer("index", "self, *args", zero=True)
defcontainer("count", "self, *args", zero=True)
defrule(functools.partial, "func, /, *args, **keywords",
        vjp={"args": "_rt.partial_args_adjoint(g, n_args)",
             "keywords": "_rt.partial_keywords_adjoint(g)"}, kind="any")
defrule(_r.seq, "x, /", vjp={"x": "_rt.seq_adjoint_of(g, x)"},
        jvp={"x": "_fw.seq_tangent(t, x, ans)"}, kind="any", view=True,
        name="loop sequence")
defrule(builtins.super, "cls, obj, /", vjp={"obj": "g"}, jvp={"obj": "t"}, kind="any", view=True)

# -- helpers that generated reverse sweeps call (so derivatives can be differentiated again) ---------
defrule(_r.dtype_guard, "dtype, adj, /", vjp={"adj": "_rt.dtype_guard(dtype, g)"},
        jvp={"adj": "_rt.dtype_guard(dtype, t)"}, kind="any")
defrule(_r.times_initial, "x, initial, /",
        vjp={"x": "_rt.times_initial(g, initial)", "initial": "_rt.unbroadcast(g * x, initial)"},
        jvp={"x": "_rt.times_initial(t, initial)", "initial": "t * x"}, kind="any")
defzero(_r.dtype_of)
