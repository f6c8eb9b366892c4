"""Rules for Python itself: operators (on Python numbers and, with broadcasting, on arrays),
the ``math`` module, builtins, and the displays the lowering produces (tuples, lists, dicts).

One line per primitive; ``g`` is the output's adjoint, ``ans`` the output.
"""
import builtins
import functools
import math
import operator

from .. import runtime as _r
from .registry import defattr, defcontainer, defmethod, defrule, defzero, defzero_method  # noqa: F401

B = dict(broadcast=True, kind="same")
ub = "_rt.unbroadcast"

# -- arithmetic operators (Python numbers and arrays) ---------------------------------------------
defrule(operator.add, "a, b, /", vjp={"a": f"{ub}(g, a)", "b": f"{ub}(g, b)"},
        jvp={"a": "t", "b": "t"}, **B)
defrule(operator.sub, "a, b, /", vjp={"a": f"{ub}(g, a)", "b": f"-{ub}(g, b)"},
        jvp={"a": "t", "b": "-t"}, **B)
defrule(operator.mul, "a, b, /", vjp={"a": f"{ub}(g * _rt.cj(b), a)", "b": f"{ub}(g * _rt.cj(a), b)"},
        jvp={"a": "t * b", "b": "a * t"}, **B)
defrule(operator.truediv, "a, b, /",
        vjp={"a": f"{ub}(g / _rt.cj(b), a)", "b": f"-{ub}(g * _rt.cj(ans), b) / _rt.cj(b)"},
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
# divmod(a, b) = (a // b, a % b): the quotient steps, the remainder is a - b (a // b)
defrule(builtins.divmod, "a, b, /",
        vjp={"a": f"{ub}(_rt.part_or_zero(g, 1), a)",
             "b": f"{ub}(-_rt.part_or_zero(g, 1) * (a // b), b)"},
        jvp={"a": "(0.0 * t, t)", "b": "(0.0 * t, -t * (a // b))"}, kind="container")
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
        builtins.isinstance, builtins.type, builtins.round, builtins.slice,
        builtins.print, builtins.str, builtins.repr, builtins.format, builtins.id, builtins.hash,
        builtins.callable, builtins.hasattr, builtins.issubclass, _r.concat_str)

# -- indexing and displays -------------------------------------------------------------------------
defrule(operator.getitem, "obj, idx, /", vjp={"obj": "_rt.getitem_adjoint(g, obj, idx)"},
        constant=("idx",),
        jvp={"obj": "t[idx]"}, view=True, kind="getitem")
# x[...] on a receiver whose kind is unknown when the derivative is built, with a key that may
# carry a derivative (``r = np.r_; r[a, b]``): routed here by the classifier (runtime.subscript)
defrule(_r.subscript, "obj, layout, /, *flat",
        vjp={"obj": "_rt.getitem_adjoint(g, obj, _rt.subscript_key(layout, flat))",
             "flat": "_rt.subscript_adjoint(g, obj, layout, flat)"},
        jvp={"obj": "t[_rt.subscript_key(layout, flat)]",
             "flat": "_rt.subscript_tangent(t, ans, obj, layout, flat)"},
        view=True, kind="any", name="x[...] (receiver known at run time)")
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
defrule(math.prod, "iterable, /, *, start=1",
        vjp={"iterable": "_rt.prod_adjoint(g, iterable, start)",
             "start": "_rt.prod_start_adjoint(g, iterable, start, ans)"},
        jvp={"iterable": "_fw.prod_tangent(t, iterable, start, ans)",
             "start": "_fw.bcast(t * math.prod(iterable), ans)"}, kind="any")
# fmod(x, y) = x - q y and remainder(x, y) = x - n y, q and n integers: (x - ans) / y
for _fn in (math.fmod, math.remainder):
    defrule(_fn, "x, y, /", vjp={"x": "g", "y": "-g * ((x - ans) / y)"},
            jvp={"x": "t", "y": "-t * ((x - ans) / y)"}, **F)
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
# (a key only orders the items, which stay in place where the order does not change: a key that
# carries a derivative, a closure over x, gives none, ``constant``)
defrule(builtins.sorted, "iterable, /, *, key=None, reverse=False",
        vjp={"iterable": "_rt.sorted_adjoint(g, iterable, key, reverse, ans)"},
        jvp={"iterable": "_fw.sorted_tangent(t, iterable, key, reverse)"}, kind="container",
        constant=("key",))
for _pick in (builtins.min, builtins.max):
    defrule(_pick, "*args, key=None, default=None",
            vjp={"args": f"_rt.extremum_adjoint(g, args, key, {_pick.__name__}, ans)",
                 "default": "_rt.extremum_default_adjoint(g, args)"},
            jvp={"args": f"_fw.extremum_tangent(t, args, key, {_pick.__name__})",
                 "default": "_rt.extremum_default_adjoint(t, args)"}, kind="any",
            constant=("key",))
defrule(_r.identity, "x, /", vjp={"x": "g"}, jvp={"x": "t"}, kind="any")
# complex(re, im) == re + 1j * im, for complex re and im too (complex(z) is z)
defrule(builtins.complex, "real=0.0, imag=0.0, /",
        vjp={"real": "_rt.real_like(g, real)", "imag": "_rt.real_like(-1j * g, imag)"},
        jvp={"real": "t + 0j", "imag": "1j * t"}, kind="complex")
defzero(builtins.any, builtins.all, builtins.open, builtins.dir,
        builtins.ord, builtins.chr)
# Iterators: inside a derivative, zip/enumerate/reversed/iter make a _rt.Iter (it remembers what it
# yielded), and every call that consumes one gets a cursor, _rt.here(it) (see runtime.Iter).
for _made, _maker in ((builtins.zip, _r.izip), (builtins.enumerate, _r.ienumerate),
                      (builtins.reversed, _r.ireversed)):
    _params, _vjp, _jvp = {
        builtins.zip: ("*iterables, strict=False", {"iterables": "_rt.zip_adjoint(g, iterables)"},
                       {"iterables": "_fw.zip_tangent(t, iterables)"}),
        builtins.enumerate: ("iterable, start=0", {"iterable": "_rt.enumerate_adjoint(g, iterable)"},
                             {"iterable": "_fw.enumerate_tangent(t, iterable)"}),
        builtins.reversed: ("seq, /", {"seq": "_rt.reversed_adjoint(g, seq)"},
                            {"seq": "_fw.reversed_tangent(t, seq)"}),
    }[_made]
    defrule(_made, _params, vjp=_vjp, jvp=_jvp, kind="any")
    defrule(_maker, _params, vjp=_vjp, jvp=_jvp, kind="any", name=_made.__name__)
defrule(builtins.iter, "obj, /", vjp={"obj": "_rt.iter_adjoint(g, obj, ans)"},
        jvp={"obj": "_fw.iter_tangent(t, obj)"}, kind="any")
defrule(_r.iiter, "obj, /", vjp={"obj": "_rt.iter_adjoint(g, obj, ans)"},
        jvp={"obj": "_fw.iter_tangent(t, obj)"}, kind="any", name="iter")
for _zs in (_r.zip_seq, _r.loop_zip_seq):
    defrule(_zs, "*xs", vjp={"xs": "_rt.zip_seq_adjoint(g, xs, ans)"},
            jvp={"xs": "_fw.zip_seq_tangent(t, xs, ans)"}, kind="container", view=True,
            name="loop sequences")
# a + b and a * b where an operand may be a list or tuple (classify picks these rules then)
defrule(_r.seq_add, "a, b, /", vjp={"a": "_rt.add_part(g, a, b, 0)", "b": "_rt.add_part(g, a, b, 1)"},
        jvp={"a": "_rt.add_part_tangent(t, a, b, 0)", "b": "_rt.add_part_tangent(t, a, b, 1)"},
        kind="any", broadcast=True, name="+")
defrule(_r.seq_mul, "a, b, /", vjp={"a": "_rt.mul_part(g, a, b, 0)", "b": "_rt.mul_part(g, a, b, 1)"},
        jvp={"a": "_rt.mul_part_tangent(t, a, b, 0)", "b": "_rt.mul_part_tangent(t, a, b, 1)"},
        kind="any", broadcast=True, name="*")
defrule(_r.here, "x, /", vjp={"x": "_rt.here_adjoint(g, x, ans)"},
        jvp={"x": "_rt.here_tangent(t, x, ans)"}, kind="any", view=True, name="iterator use")
defrule(builtins.next, "iterator, default=None, /",
        vjp={"iterator": "_rt.next_adjoint(g, iterator)", "default": "_rt.next_default_adjoint(g, iterator)"},
        jvp={"iterator": "_rt.next_tangent(t, iterator, ans)",
             "default": "_rt.next_default_tangent(t, iterator)"}, kind="any")

# -- read-only methods of containers (dict.get, dict.items...) ---------------------------------------
defcontainer("get", "self, key, default=None, /",
             vjp={"self": "_rt.dict_get_adjoint(g, self, key)", "default": "_rt.dict_default_adjoint(g, self, key)"},
             jvp={"self": "_fw.get_tangent(t, self, key, ans)",
                  "default": "_fw.default_tangent(t, self, key, ans)"},
             kind="any")
# (a dict view is live: it shares the dict's memory, so a view read in the reverse sweep is saved
# as a copy when the dict changes later, like an array view)
defcontainer("values", "self, /", vjp={"self": "_rt.values_adjoint(g, self)"},
             jvp={"self": "_fw.values_tangent(t, self)"}, kind="any", view=True)
defcontainer("items", "self, /", vjp={"self": "_rt.items_adjoint(g, self)"},
             jvp={"self": "_fw.items_tangent(t, self)"}, kind="any", view=True)
defcontainer("copy", "self, /", vjp={"self": "g"}, jvp={"self": "_fw.copy_tangent(t, self)"},
             kind="container")
defcontainer("keys", "self, /", zero=True)
defcontainer("index", "self, *args", zero=True)
defcontainer("count", "self, *args", zero=True)
defrule(functools.partial, "func, /, *args, **keywords",
        vjp={"args": "_rt.partial_args_adjoint(g, n_args)",
             "keywords": "_rt.partial_keywords_adjoint(g)"}, kind="any")
for _sq in (_r.seq, _r.loop_seq):
    defrule(_sq, "x, /", vjp={"x": "_rt.seq_adjoint_of(g, x)"},        # (an array: itself)
            jvp={"x": "_fw.seq_tangent(t, x, ans)"}, kind="same", view=True,
            name="loop sequence")
defrule(builtins.super, "cls, obj, /", vjp={"obj": "g"}, jvp={"obj": "t"}, kind="any", view=True)

# -- helpers that generated reverse sweeps call (so derivatives can be differentiated again) ---------
defrule(_r.dtype_guard, "dtype, adj, /", vjp={"adj": "_rt.dtype_guard(dtype, g)"},
        jvp={"adj": "_rt.dtype_guard(dtype, t)"}, kind="any")
defrule(_r.times_initial, "x, initial, /",
        vjp={"x": "_rt.times_initial(g, initial)", "initial": "_rt.unbroadcast(g * x, initial)"},
        jvp={"x": "_rt.times_initial(t, initial)", "initial": "t * x"}, kind="any")
defzero(_r.dtype_of)
defzero(_r.keys_read)       # a check (classify.keys._guard_key_reads): no value, no derivative
defzero(_r.argument_inplace_guard)   # a check (classify.writes._check_augmented_argument)
defzero(_r.inplace_guard)   # a check (classify.writes._check_augmented_shared): no value, no derivative
defzero(_r.item_inplace_guard)   # (the same, for ``lst[i] op= ...``)
defzero(_r.attr_write_guard)   # a check (classify.mutation): no value, no derivative
defzero(_r.share_guard)     # a check (classify.writes.check_writes_shared): no value, no derivative

# -- dict(), copies, conversions, heapq, in-place list methods ---------------------------------------
# Their helpers live here, next to the rules; templates reach them as ``_pr.*``.
import copy as _copy                     # noqa: E402
import dataclasses as _dataclasses       # noqa: E402
import heapq as _heapq                   # noqa: E402
import sys as _sys                       # noqa: E402

from ..errors import UnsupportedSyntaxError as _Unsupported  # noqa: E402

PR = {"_pr": _sys.modules[__name__]}


def _is_iterator(x):
    return not isinstance(x, (list, tuple, dict, str, range)) and not _r._is_array(x) and \
        iter(x) is x


def _listed(x, what):
    """The items of ``x``: an s2sad iterator (runtime.Iter: zip, enumerate, map... inside a
    derivative) gives the values it yielded; a foreign iterator is used up and refused."""
    seen = getattr(x, "seen", None)
    if isinstance(seen, list):
        return seen
    if _is_iterator(x):
        _refuse_iterator(what)
    return x


def _refuse_iterator(what):
    raise _Unsupported(
        f"{what} of an iterator (zip, map, a generator...) whose items carry derivatives: the "
        f"iterator is used up when {what} runs, and s2sad cannot read its items again to route "
        f"their derivatives back",
        fix="make a list first: `list(zip(keys, values))`")


def _dict_rows(iterable):
    """The keys of ``dict(iterable)``'s input rows, in order (a mapping's keys for a mapping)."""
    if isinstance(iterable, dict) or (hasattr(iterable, "keys") and hasattr(iterable, "__getitem__")):
        return None
    return [row[0] for row in _listed(iterable, "dict(...)")]


def _last_rows(keys, skip):
    """{key: position of the row whose value dict() keeps} (the last one; ``skip`` keys are
    overridden by keyword arguments)."""
    return {k: i for i, k in enumerate(keys) if k not in skip}


def dict_adjoint(g, iterable, kwargs):
    """Adjoint of ``dict(iterable, **kwargs)`` in ``iterable``: a mapping's adjoint is a dict of
    the values dict() kept; a sequence of (key, value) rows gets one (0, adjoint) per row, zero for
    rows a later row with the same key (or a keyword) overrode."""
    if _r.is_zero(g):
        return 0.0
    keys = _dict_rows(iterable)
    if keys is None:
        return {k: _r._z(g.get(k)) for k in iterable.keys() if k not in kwargs and k in g}
    last = _last_rows(keys, kwargs)
    out = []
    for i, row in enumerate(_listed(iterable, "dict(...)")):
        v = _r._z(g.get(row[0])) if last.get(row[0]) == i else 0.0
        out.append([0.0, v] if isinstance(row, list) else (0.0, v))
    return tuple(out) if isinstance(iterable, tuple) else out


def dict_kwargs_adjoint(g, kwargs):
    """Adjoint of ``dict(..., **kwargs)`` in the keyword arguments: {name: adjoint}."""
    if _r.is_zero(g):
        return {}
    return {k: _r._z(g.get(k)) for k in kwargs}


def dict_tangent(t, iterable, kwargs, ans):
    """Tangent of ``dict(iterable, **kwargs)`` in ``iterable``: a complete dict (zeros for the
    keys the keywords set)."""
    from ..runtime.forward import _elems, zeros_like, materialize
    out = {k: zeros_like(v) for k, v in ans.items()}   # an int value's tangent is 0.0, not None
    keys = _dict_rows(iterable)
    if keys is None:
        tm = _r.materialize(t, iterable) if not isinstance(t, dict) else t
        for k in iterable.keys():
            if k not in kwargs:
                out[k] = materialize(tm.get(k), ans[k])
        return out
    last = _last_rows(keys, kwargs)
    for i, (k, tr) in enumerate(zip(keys, _elems(t, _listed(iterable, "dict(...)")))):
        if last.get(k) == i and not _r.is_zero(tr):
            out[k] = materialize(_r.parts(tr, 2)[1], ans[k])
    return out


def dict_kwargs_tangent(t, ans):
    from ..runtime.forward import zeros_like, materialize
    out = {k: zeros_like(v) for k, v in ans.items()}   # an int value's tangent is 0.0, not None
    for k, v in t.items():
        out[k] = materialize(v, ans[k])
    return out


def dict_rows_transpose(c, iterable, kwargs):
    """Transpose of ``dict_adjoint(., iterable, kwargs)`` (linear in its first argument): the
    adjoints of the rows dict() kept, by key."""
    if _r.is_zero(c):
        return 0.0
    keys = _dict_rows(iterable)
    if keys is None:
        return {k: v for k, v in c.items() if k not in kwargs}
    out = {}
    for k, i in _last_rows(keys, kwargs).items():
        row = c[i] if i < len(c) else 0.0
        out[k] = 0.0 if _r.is_zero(row) else _r.parts(row, 2)[1]
    return out


defrule(builtins.dict, "iterable=(), /, **kwargs",
        vjp={"iterable": "_pr.dict_adjoint(g, iterable, kwargs)",
             "kwargs": "_pr.dict_kwargs_adjoint(g, kwargs)"},
        jvp={"iterable": "_pr.dict_tangent(t, iterable, kwargs, ans)",
             "kwargs": "_pr.dict_kwargs_tangent(t, ans)"}, kind="container", ns=PR)


# the helpers above are linear in their first argument: rules for them, so that generated
# gradients can be differentiated again (hessian, grad of grad)
defrule(dict_adjoint, "grad, iterable, kwargs, /",
        vjp={"grad": "_pr.dict_rows_transpose(g, iterable, kwargs)"},
        jvp={"grad": "_pr.dict_adjoint(t, iterable, kwargs)"}, kind="any", ns=PR)
defrule(dict_rows_transpose, "grad, iterable, kwargs, /",
        vjp={"grad": "_pr.dict_adjoint(g, iterable, kwargs)"},
        jvp={"grad": "_pr.dict_rows_transpose(t, iterable, kwargs)"}, kind="any", ns=PR)
defrule(dict_kwargs_adjoint, "grad, kwargs, /", vjp={"grad": "_pr.dict_kwargs_adjoint(g, kwargs)"},
        jvp={"grad": "_pr.dict_kwargs_adjoint(t, kwargs)"}, kind="any", ns=PR)


# x.tolist(): nested lists of Python numbers, the adjoint an array again
def tolist_adjoint(g, a):
    if _r.is_zero(g):
        return 0.0
    xp = _r.array_module(a)
    shape = a.shape

    def dense(v, shape):
        if _r.is_zero(v):
            return xp.zeros(shape, dtype=a.dtype)
        if not shape:
            return xp.asarray(v, dtype=a.dtype) if a.dtype.kind == "c" else \
                xp.asarray(_r.real_like(v, a), dtype=a.dtype)
        return xp.stack([dense(e, shape[1:]) for e in v]) if shape[0] else xp.zeros(shape, a.dtype)
    return dense(g, shape)


def tolist_tangent(t, a):
    return _r.materialize(t, a).tolist()


defmethod("tolist", "self, /", vjp={"self": "_pr.tolist_adjoint(g, self)"},
          jvp={"self": "_pr.tolist_tangent(t, self)"}, kind="any", ns=PR)
defrule(tolist_adjoint, "grad, a, /", vjp={"grad": "_pr.tolist_tangent(g, a)"},
        jvp={"grad": "_pr.tolist_adjoint(t, a)"}, kind="any", ns=PR)
defrule(tolist_tangent, "tan, a, /", vjp={"tan": "_pr.tolist_adjoint(g, a)"},
        jvp={"tan": "_pr.tolist_tangent(t, a)"}, kind="any", ns=PR)


# copy.copy / copy.deepcopy: the copy's adjoint is the original's; a copied tangent, so that
# in-place changes of the copy do not reach the original's tangent.  A class that copies itself
# in its own way (__copy__, __deepcopy__, __getstate__/__setstate__, __reduce__ in Python) may
# change values on the way: refused.
_COPY_HOOKS = ("__copy__", "__getstate__", "__setstate__", "__reduce__", "__reduce_ex__")


def _check_copy(x, deep, depth=0):
    t = type(x)
    if t in (float, int, complex, str, bool) or x is None or _r._is_array(x):
        return
    for name in _COPY_HOOKS + (("__deepcopy__",) if deep else ()):
        if _r._is_python(getattr(t, name, None)):
            raise _Unsupported(
                f"copy.{'deepcopy' if deep else 'copy'} of a {t.__name__}, whose class copies "
                f"itself with its own {name}: s2sad does not follow how the copy's values come "
                f"from the original's", fix=f"build the copy yourself (`{t.__name__}(...)` from "
                                            f"the original's attributes)")
    if deep and depth < 32:
        items = x.values() if isinstance(x, dict) else x if isinstance(x, (list, tuple)) else \
            vars(x).values() if hasattr(x, "__dict__") and not callable(x) else ()
        for v in items:
            _check_copy(v, deep, depth + 1)


def copy_adjoint(g, x):
    _check_copy(x, False)
    return g


def deepcopy_adjoint(g, x):
    _check_copy(x, True)
    return g


def copy_tangent(t, x=None):
    _check_copy(x, False)
    return _copy.copy(t)


def deepcopy_tangent(t, x=None):
    _check_copy(x, True)
    return _copy.deepcopy(t)


defrule(_copy.copy, "x, /", vjp={"x": "_pr.copy_adjoint(g, x)"}, jvp={"x": "_pr.copy_tangent(t, x)"},
        kind="any", ns=PR)
defrule(_copy.deepcopy, "x, memo=None, _nil=None, /", vjp={"x": "_pr.deepcopy_adjoint(g, x)"},
        jvp={"x": "_pr.deepcopy_tangent(t, x)"}, kind="any", ns=PR)
for _f in (copy_adjoint, deepcopy_adjoint, copy_tangent, deepcopy_tangent):      # (identities)
    defrule(_f, "grad, x=None, /", vjp={"grad": "g"}, jvp={"grad": "t"}, kind="any", ns=PR)


# dataclasses.replace(obj, **changes) == type(obj)(**{fields of obj, then changes})
def _replace_fields(obj, changes):
    cls = type(obj)
    if not _dataclasses.is_dataclass(cls) or isinstance(obj, type):
        return None                                  # dataclasses.replace raised already
    if hasattr(cls, "__post_init__") or any(not f.init for f in _dataclasses.fields(cls)) or \
            _r._is_python(cls.__init__):
        raise _Unsupported(
            f"dataclasses.replace of a {cls.__name__}, which has __post_init__, its own __init__ or "
            f"fields computed outside __init__: s2sad does not follow how they depend on the "
            f"others", fix=f"build the new object with its constructor, `{cls.__name__}(...)` "
                           f"(with an `__init__` written in Python, which s2sad differentiates)")
    return [f.name for f in _dataclasses.fields(cls) if f.init]


def _fields_of(g):
    if _dataclasses.is_dataclass(g) and not isinstance(g, type):
        return {f.name: getattr(g, f.name) for f in _dataclasses.fields(g)}
    return g if isinstance(g, dict) else {}


def replace_adjoint(g, obj, changes):
    """Adjoint of ``dataclasses.replace(obj, **changes)`` in ``obj``: the fields it kept."""
    names = _replace_fields(obj, changes)
    if _r.is_zero(g):
        return 0.0
    g = _fields_of(g)
    return {k: v for k, v in g.items() if k in names and k not in changes and not _r.is_zero(v)}


def replace_changes_adjoint(g, obj, changes):
    _replace_fields(obj, changes)
    if _r.is_zero(g):
        return {}
    g = _fields_of(g)
    return {k: _r._z(g.get(k)) for k in changes}


def replace_tangent(t, obj, changes):
    names = _replace_fields(obj, changes)
    t = _fields_of(t)
    return {k: v for k, v in t.items() if k in names and k not in changes}


def replace_changes_tangent(t, obj, changes):
    _replace_fields(obj, changes)
    return {k: v for k, v in t.items() if not _r.is_zero(v)}


defrule(_dataclasses.replace, "obj, /, **changes",
        vjp={"obj": "_pr.replace_adjoint(g, obj, changes)",
             "changes": "_pr.replace_changes_adjoint(g, obj, changes)"},
        jvp={"obj": "_pr.replace_tangent(t, obj, changes)",
             "changes": "_pr.replace_changes_tangent(t, obj, changes)"}, kind="any", ns=PR)
# (both adjoints keep some of the fields of a dict: each is its own transpose)
defrule(replace_adjoint, "grad, obj, changes, /", vjp={"grad": "_pr.replace_adjoint(g, obj, changes)"},
        jvp={"grad": "_pr.replace_adjoint(t, obj, changes)"}, kind="any", ns=PR)
defrule(replace_changes_adjoint, "grad, obj, changes, /",
        vjp={"grad": "_pr.replace_changes_adjoint(g, obj, changes)"},
        jvp={"grad": "_pr.replace_changes_adjoint(t, obj, changes)"}, kind="any", ns=PR)


# heapq.nsmallest(n, it, key) == sorted(it, key=key)[:n]; nlargest with reverse=True (the
# documented equivalences, ties included): the sorted rule's helpers, cut to n
def firsts_adjoint(g, n, iterable, key, reverse, result=None):
    if _r.is_zero(g):
        return 0.0
    items = _listed(iterable, "heapq.nsmallest/nlargest")
    g = list(g) + [0.0] * (len(items) - len(g))
    return _r.sorted_adjoint(g, items if items is not iterable else iterable, key, reverse,
                             result)


def firsts_tangent(t, n, iterable, key, reverse):
    from ..runtime.forward import sorted_tangent
    items = _listed(iterable, "heapq.nsmallest/nlargest")
    return sorted_tangent(t, items, key, reverse)[:max(n, 0)]


defrule(_heapq.nsmallest, "n, iterable, key=None",
        vjp={"iterable": "_pr.firsts_adjoint(g, n, iterable, key, False, ans)"},
        jvp={"iterable": "_pr.firsts_tangent(t, n, iterable, key, False)"}, kind="container", ns=PR,
        constant=("key",))
defrule(_heapq.nlargest, "n, iterable, key=None",
        vjp={"iterable": "_pr.firsts_adjoint(g, n, iterable, key, True, ans)"},
        jvp={"iterable": "_pr.firsts_tangent(t, n, iterable, key, True)"}, kind="container", ns=PR,
        constant=("key",))
# (the adjoint places the first n adjoints where their items were; the tangent takes them back)
defrule(firsts_adjoint, "grad, n, iterable, key, reverse, result=None, /",
        vjp={"grad": "_pr.firsts_tangent(g, n, iterable, key, reverse)"},
        jvp={"grad": "_pr.firsts_adjoint(t, n, iterable, key, reverse, result)"}, kind="any",
        ns=PR)
defrule(firsts_tangent, "tan, n, iterable, key, reverse, /",
        vjp={"tan": "_pr.firsts_adjoint(g, n, iterable, key, reverse)"},
        jvp={"tan": "_pr.firsts_tangent(t, n, iterable, key, reverse)"}, kind="any", ns=PR)


# list.sort / list.reverse on a list that holds values carrying derivatives: the list is
# permuted in place; its adjoint before the call is its adjoint after, permuted back.  (The call
# site is a method call that updates its object, so the reverse sweep hands in that adjoint.)
def _permute_in_place(xs, order):
    def back(g, g_self=_r._NOTHING):
        if g_self is _r._NOTHING:
            raise _Unsupported("an in-place sort or reverse of a list reached s2sad where it "
                               "cannot follow the change of the list",
                               fix="build a new list: `xs = sorted(xs, key=...)`, `xs = xs[::-1]`")
        if _r.is_zero(g_self):
            return 0.0, (), _r._ZeroDict()
        before = [0.0] * len(order)
        for pos, k in enumerate(order):
            before[k] = _r._z(g_self[pos])
        return before, (), _r._ZeroDict()
    xs[:] = [xs[k] for k in order]
    return None, ("custom", back)


def list_sort(xs, args, kwargs):
    if args or set(kwargs) - {"key", "reverse"}:
        xs.sort(*args, **kwargs)                     # raises Python's own TypeError
    key = kwargs.get("key")
    keyf = key if key is not None else (lambda v: v)
    keys = [keyf(v) for v in xs]
    order = sorted(range(len(xs)), key=keys.__getitem__, reverse=bool(kwargs.get("reverse", False)))
    return _permute_in_place(xs, order)


def list_reverse(xs, args, kwargs):
    if args or kwargs:
        xs.reverse(*args, **kwargs)
    return _permute_in_place(xs, list(range(len(xs)))[::-1])


_r.IN_PLACE_RULES[(list, "sort")] = list_sort
_r.IN_PLACE_RULES[(list, "reverse")] = list_reverse


def merge_dicts_adjoint(g, ds):
    """Adjoint of ``{**a, **b}`` and of ``f(**a, **b)``'s merged keywords: each key's adjoint goes
    to the last dict that gave it (a later dict overrides an earlier one, as in Python)."""
    if _r.is_zero(g):
        return (0.0,) * len(ds)
    last = {}
    for i, d in enumerate(ds):
        for k in d:
            last[k] = i
    return tuple({k: g[k] for k in d if last[k] == i and k in g} or 0.0 for i, d in enumerate(ds))


def merge_dicts_tangent(t, ds):
    """Tangent of the merged keywords: the tangents of the values kept, by key."""
    from ..runtime.forward import zeros_like
    out = {}
    for td, d in zip(t, ds):
        for k, v in d.items():
            out[k] = td[k] if isinstance(td, dict) and td.get(k) is not None else zeros_like(v)
    return out


defrule(_r.merge_dicts, "*ds", vjp={"ds": "_pr.merge_dicts_adjoint(g, ds)"},
        jvp={"ds": "_pr.merge_dicts_tangent(t, ds)"}, kind="container", ns=PR,
        name="dict display with **")
# (no key repeats here: merge_kwargs raises on one, so the same adjoints serve)
defrule(_r.merge_kwargs, "*ds", vjp={"ds": "_pr.merge_dicts_adjoint(g, ds)"},
        jvp={"ds": "_pr.merge_dicts_tangent(t, ds)"}, kind="container", ns=PR,
        name="keyword arguments (**)")
