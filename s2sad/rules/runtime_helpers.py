"""Rules for the helpers that generated derivative code calls (``_rt.*`` from
:mod:`s2sad.runtime`, ``_adj.*`` from :mod:`.adjoints`), so that generated code is itself
differentiable: forward over reverse (``hvp``, ``hessian``) and reverse over reverse
(``grad`` of a generated gradient).

Most helpers are linear in their first argument, the incoming adjoint (called ``grad`` here,
because ``g``, ``t`` and ``ans`` are template names): their tangent in it is the helper applied to
the tangent, and their adjoint in it is the transposed operation.  Arguments only read for their
shape, dtype or an index carry no derivative and are not listed.  Where a helper depends on a
primal value (``pow_base_adjoint(grad, a, b)`` is ``grad * b * a ** (b - 1)``) that dependence
gets its own entry: those entries are what second derivatives are made of.

Helpers in this module are reached from templates as ``_rr.*``.
"""
import collections
import sys

import numpy as np

from .. import runtime as _r
from . import adjoints as _adjoints
from .registry import defrule, defzero

NS = {"_adj": _adjoints, "_rr": sys.modules[__name__]}
_any = dict(kind="any", ns=NS)
_same = dict(kind="same", ns=NS)
ZERO = "0.0 * ans"          # a tangent that vanishes (almost everywhere), shaped like the output


# -- helpers the templates below call ---------------------------------------------------------------
def expand_like(g, like):
    """Transpose of ``unbroadcast(., like)``: ``g`` broadcast back to the shape of ``like``."""
    if _r.is_zero(g):
        return 0.0
    shape = getattr(like, "shape", None)
    if shape is None or getattr(g, "shape", None) == shape:
        return g
    return _r.array_module(like).broadcast_to(g, shape).copy()


def take(g, idx):
    """Transpose of ``getitem_adjoint(., x, idx)``: ``g[idx]`` (zero stays zero)."""
    if _r.is_zero(g):
        return 0.0
    v = g[idx]
    return 0.0 if v is None else v


def scatter(g, like, idx):
    """Transpose of ``setitem_value_adjoint(., idx, v)``: zeros shaped like ``like``, ``g`` at idx."""
    if _r.is_zero(g):
        return 0.0
    if isinstance(like, (list, dict)):
        out = _r.zeros_like(like)
        out[idx] = g
        return out
    out = _r.array_module(like).zeros(np.shape(like), dtype=np.result_type(like, g))
    out[idx] = g            # (repeated indices: the last write, the one the adjoint took)
    return out


def scatter_add(g, like, idx):
    """Transpose of ``take(., idx)`` (a gather): zeros shaped like ``like`` with ``g`` added at
    idx, repeated indices adding up (``scatter`` keeps the last, which is the transpose of a
    write, not of a read)."""
    if _r.is_zero(g):
        return 0.0
    if isinstance(like, (list, dict)):
        return scatter(g, like, idx)
    m = _r.array_module(like)
    out = m.zeros(np.shape(like), dtype=np.result_type(like, g))
    m.add.at(out, idx, g)
    return out


def tuple_of(g, n):
    """Transpose of ``parts(., n)``: the adjoint of a tuple is a tuple of adjoints."""
    if _r.is_zero(g):
        return 0.0
    return tuple(g)


def pow_d2(a, b):
    """d/da of b * a ** (b - 1), with the exponents 0, 1, 2 exact (no 0 ** -1)."""
    if type(b) in (int, float):
        if b == 0 or b == 1:
            return 0.0 * a
        if b == 2:
            return 2.0 + 0.0 * a
        if b == 3:
            return 6.0 * a
    return b * (b - 1) * a ** (b - 2)


def pow_db(a, b):
    """d/db of b * a ** (b - 1)."""
    return a ** (b - 1) * (1 + b * _r.safe_log(a))


def _small_int(b):
    return type(b) in (int, float) and float(b).is_integer() and abs(b) < 64


def falling(b, k):
    """b (b - 1) ... (b - k + 1)."""
    out = 1
    for i in range(k):
        out = out * (b - i)
    return out


def pow_dk(a, b, k):
    """d^k/da^k of a ** b, exact where b is a small whole number (no 0 ** -1 for a vanishing
    derivative): the derivatives of ``pow_d2`` and of itself, for third and higher orders."""
    if _small_int(b) and 0 <= b < k:
        return 0.0 * a
    c = falling(b, k)
    e = b - k
    if _small_int(e) and e == 0:
        return c + 0.0 * a
    return c * a ** (int(e) if _small_int(e) and e > 0 else e)


def pow_dk_db(a, b, k):
    """d/db of ``pow_dk(a, b, k)`` = a ** (b - k) (d/db falling(b, k) + falling(b, k) log a)."""
    dfall = 0
    for j in range(k):
        term = 1
        for i in range(k):
            if i != j:
                term = term * (b - i)
        dfall = dfall + term
    return a ** (b - k) * (dfall + falling(b, k) * _r.safe_log(a))


def pow_db_da(a, b):
    """d/da of ``pow_db(a, b)``."""
    return a ** (b - 2) * ((b - 1) * (1 + b * _r.safe_log(a)) + b)


def pow_db_db(a, b):
    """d/db of ``pow_db(a, b)``."""
    la = _r.safe_log(a)
    return a ** (b - 1) * la * (2 + b * la)


def safe_log_tangent(t, a):
    """Tangent of ``safe_log(a)``: t / a where a is positive (or complex), 0 where log is set to 0."""
    if type(a) in (int, float):
        return t / a if a != 0 else 0.0 * t
    xp = _r.array_module(a)
    if getattr(a, "dtype", np.dtype(float)).kind == "c":
        return t / xp.where(a == 0, 1, a)
    return xp.where(a > 0, t / xp.where(a > 0, a, 1), 0.0)


def _unit(x):
    """(x / |x|, |x| with 0 made 1): the direction of complex ``x`` (0 where x is 0)."""
    if type(x) is complex:
        ax = abs(x)
        return (x / ax if ax else 0j), (ax or 1.0)
    m = _r.array_module(x)
    ax = m.abs(x)
    safe = m.where(ax == 0, 1, ax)
    return m.where(ax == 0, 0, x / safe), safe


def abs_adjoint_x(grad, x, s, ans=0.0):
    """The change of ``abs_adjoint(grad, x) = grad x / |x|`` as ``x`` moves by ``s``: none for
    real x (the sign is piecewise constant: ``0 * ans``); for complex x, grad (s - u Re(conj(u)
    s)) / |x| with u = x / |x|.  The map s -> this is its own adjoint (the reverse rule's too)."""
    if not _r.is_complex(x):
        return 0.0 * ans
    u, ax = _unit(x)
    return grad * (s - u * (u.conjugate() * s).real) / ax


def abs_adjoint_grad(g, x):
    """Adjoint in ``grad`` of ``abs_adjoint(grad, x)``: Re(conj(u) g) for complex x (the real
    ``grad`` of |x| meets the complex result), sign(x) g for real x."""
    if not _r.is_complex(x):
        return _r.abs_adjoint(g, x)
    u = _unit(x)[0]
    return (u.conjugate() * g).real


def abs_tangent_x(tan, x, s, ans=0.0):
    """The change of ``abs_tangent(tan, x) = Re(conj(x) tan) / |x|`` as ``x`` moves by ``s``:
    none for real x; for complex x, (Re(conj(s) tan) - Re(conj(u) tan) Re(conj(u) s)) / |x|."""
    if not _r.is_complex(x):
        return 0.0 * ans
    u, ax = _unit(x)
    return ((s.conjugate() * tan).real - (u.conjugate() * tan).real * (u.conjugate() * s).real) \
        / ax


def hypot_out(grad, out, coords, t):
    """Tangent of ``hypot_adjoint(grad, out, coords)`` in ``out``."""
    return tuple(-grad * c * t / (out * out) if out != 0 else 0.0 for c in coords)


def hypot_coords(grad, out, t):
    return tuple(grad * tc / out if out != 0 else 0.0 for tc in t)


def _pop_pos(obj, i):
    n = len(obj)
    return i if i >= 0 else n + 1 + i


def unpop_rest(g, obj, i=-1):
    """Transpose of ``unpop(., 0, obj, i)``: the list adjoint without the popped position."""
    if _r.is_zero(g):
        return 0.0
    if isinstance(obj, dict):
        return {k: v for k, v in g.items() if k != i}
    g = list(g)
    del g[_pop_pos(obj, i)]
    return g


def unpop_item(g, obj, i=-1):
    """Transpose of ``unpop(0, ., obj, i)``: the adjoint at the popped position."""
    if _r.is_zero(g):
        return 0.0
    if isinstance(obj, dict):
        return _r._z(g.get(i))
    return _r._z(g[_pop_pos(obj, i)])


def reappend(g, grad):
    """Transpose of ``unappend``: (adjoint of the list before, adjoint of the item) -> list."""
    if _r.is_zero(g) or _r.is_zero(grad):
        return 0.0
    before, item = g
    before = [0.0] * (len(grad) - 1) if _r.is_zero(before) else list(before)
    return before + [_r._z(item)]


def trigamma(x):
    from scipy.special import polygamma
    return float(polygamma(1, x))


def inv_out(grad, out, t):
    """Tangent in ``ans`` of ``inv(g, ans) = -(h @ g @ h)`` with ``h = ans^H``."""
    h = np.conj(np.swapaxes(out, -1, -2))
    th = np.conj(np.swapaxes(t, -1, -2))
    return -(th @ grad @ h + h @ grad @ th)


# -- runtime (``_rt``) --------------------------------------------------------------------------------
defrule(_r.unbroadcast, "grad, x, /",
        vjp={"grad": "_rr.expand_like(g, grad)"}, jvp={"grad": "_rt.unbroadcast(t, x)"}, **_any)
defrule(_r.cj, "x, /", vjp={"x": "_rt.cj(g)"}, jvp={"x": "_rt.cj(t)"}, **_same)
# sum_product(a, b, x) is unbroadcast(a * b, x): the product's rule, then unbroadcast's
defrule(_r.sum_product, "a, b, x, /",
        vjp={"a": "_rt.unbroadcast(_rr.expand_like(g, a * b) * _rt.cj(b), a)",
             "b": "_rt.unbroadcast(_rr.expand_like(g, a * b) * _rt.cj(a), b)"},
        jvp={"a": "_rt.sum_product(t, b, x)", "b": "_rt.sum_product(a, t, x)"}, **_any)
defrule(_r.real_like, "grad, x, /", vjp={"grad": "g"}, jvp={"grad": "_rt.real_like(t, x)"}, **_any)
defrule(_r.add, "a, b, /", vjp={"a": "g", "b": "g"}, jvp={"a": "t", "b": "t"}, **_any)
defrule(_r.getitem_adjoint, "grad, x, idx, /",
        vjp={"grad": "_rr.take(g, idx)"}, jvp={"grad": "_rt.getitem_adjoint(t, x, idx)"}, **_any)
defrule(_r.acc_getitem, "acc, x, idx, grad, /, _owned=False",
        vjp={"acc": "g", "grad": "_rt.unbroadcast(_rr.take(g, idx), grad)"},
        jvp={"acc": "t", "grad": "_rt.getitem_adjoint(t, x, idx)"}, **_any)
defrule(_r.setitem_adjoint, "grad, idx, /",
        vjp={"grad": "_rt.setitem_adjoint(g, idx)"}, jvp={"grad": "_rt.setitem_adjoint(t, idx)"},
        **_any)
defrule(_r.setitem_value_adjoint, "grad, idx, v, /",
        vjp={"grad": "_rr.scatter(g, grad, idx)"},
        jvp={"grad": "_rt.setitem_value_adjoint(t, idx, v)"}, **_any)
defrule(_r.add_at_delta, "a, indices, b, /",
        vjp={"b": "_rt.unbroadcast(_rr.take(g, indices), b)"},
        jvp={"b": "_rt.add_at_delta(a, indices, t)"}, constant=("a", "indices"), **_any)
defrule(_r.snap, "v, /", vjp={"v": "g"}, jvp={"v": "_rt.snap(t)"}, view=False, **_any)
defrule(_r.parts, "grad, n, /", vjp={"grad": "_rr.tuple_of(g, n)"}, jvp={"grad": "_rt.parts(t, n)"},
        kind="container", ns=NS)
defrule(_r.dict_parts, "grad, keys, /", vjp={"grad": "dict(zip(keys, g))"},
        jvp={"grad": "_rt.dict_parts(t, keys)"}, kind="container", ns=NS)
defrule(_r.materialize, "grad, x, /", vjp={"grad": "g"}, jvp={"grad": "_rt.materialize(t, x)"},
        **_any)
defrule(_r.pow_base_adjoint, "grad, a, b, /",
        vjp={"grad": "_rt.unbroadcast(_rt.pow_base_adjoint(g, a, b), grad)",
             "a": "_rt.unbroadcast(g * grad * _rr.pow_d2(a, b), a)",
             "b": "_rt.unbroadcast(g * grad * _rr.pow_db(a, b), b)"},
        jvp={"grad": "_rt.pow_base_adjoint(t, a, b)",
             "a": "grad * t * _rr.pow_d2(a, b)",
             "b": "grad * t * _rr.pow_db(a, b)"}, **_same)
defrule(_r.pow_exponent_adjoint, "grad, out, a, /",
        vjp={"grad": "_rt.unbroadcast(g * out * _rt.safe_log(a), grad)",
             "out": "_rt.unbroadcast(g * grad * _rt.safe_log(a), out)",
             "a": "_rt.unbroadcast(_rr.safe_log_tangent(g * grad * out, a), a)"},
        jvp={"grad": "_rt.pow_exponent_adjoint(t, out, a)",
             "out": "grad * t * _rt.safe_log(a)",
             "a": "grad * out * _rr.safe_log_tangent(t, a)"}, **_same)
defrule(_r.safe_log, "a, /", vjp={"a": "_rr.safe_log_tangent(g, a)"},
        jvp={"a": "_rr.safe_log_tangent(t, a)"}, **_same)
# (|x|'s derivative moves with x where x is complex: x / |x| turns as x does)
defrule(_r.abs_adjoint, "grad, x, /",
        vjp={"grad": "_rt.unbroadcast(_rr.abs_adjoint_grad(g, x), grad)",
             "x": "_rt.unbroadcast(_rr.abs_adjoint_x(grad, x, g), x)"},
        jvp={"grad": "_rt.abs_adjoint(t, x)", "x": "_rr.abs_adjoint_x(grad, x, t, ans)"},
        **_same)
# a user rule's adjoint or tangent, checked for its shape: the value itself
defrule(_r.rule_adjoint, "adj, x, rule, param, origin, /", vjp={"adj": "g"}, jvp={"adj": "t"},
        **_any)
defrule(_r.rule_tangent, "tan, ans_, rule, origin, /", vjp={"tan": "g"}, jvp={"tan": "t"},
        **_any)
defrule(_r.unit, "x, /", vjp={"x": "_rt.unbroadcast(_rr.abs_adjoint_x(1.0, x, g), x)"},
        jvp={"x": "_rr.abs_adjoint_x(1.0, x, t, ans)"}, **_same)
defrule(_r.abs_tangent, "tan, x, /",
        vjp={"tan": "_rt.unbroadcast(_rt.abs_adjoint(g, x), tan)",
             "x": "_rt.unbroadcast(_rr.abs_adjoint_x(g, x, tan), x)"},
        jvp={"tan": "_rt.abs_tangent(t, x)", "x": "_rr.abs_tangent_x(tan, x, t, ans)"}, **_same)
defrule(_r.real_adjoint, "grad, x, /", vjp={"grad": "np.real(g)"},
        jvp={"grad": "_rt.real_adjoint(t, x)"}, **_any)
defrule(_r.imag_adjoint, "grad, x, /", vjp={"grad": "np.real(-1j * g)"},
        jvp={"grad": "_rt.imag_adjoint(t, x)"}, **_any)
defrule(_r.hypot_adjoint, "grad, out, coords, /",
        jvp={"grad": "_rt.hypot_adjoint(t, out, coords)",
             "out": "_rr.hypot_out(grad, out, coords, t)",
             "coords": "_rr.hypot_coords(grad, out, t)"}, kind="container", ns=NS)
defrule(_r.sum_adjoint, "grad, iterable, /", jvp={"grad": "_rt.sum_adjoint(t, iterable)"}, **_any)
# the helpers above, so that derivatives of derivatives of derivatives go through
UB = "_rt.unbroadcast"
defrule(pow_d2, "a, b, /",
        vjp={"a": f"{UB}(g * _rr.pow_dk(a, b, 3), a)", "b": f"{UB}(g * _rr.pow_dk_db(a, b, 2), b)"},
        jvp={"a": "t * _rr.pow_dk(a, b, 3)", "b": "t * _rr.pow_dk_db(a, b, 2)"}, **_same)
defrule(pow_dk, "a, b, k, /",
        vjp={"a": f"{UB}(g * _rr.pow_dk(a, b, k + 1), a)",
             "b": f"{UB}(g * _rr.pow_dk_db(a, b, k), b)"},
        jvp={"a": "t * _rr.pow_dk(a, b, k + 1)", "b": "t * _rr.pow_dk_db(a, b, k)"}, **_same)
defrule(pow_db, "a, b, /",
        vjp={"a": f"{UB}(g * _rr.pow_db_da(a, b), a)", "b": f"{UB}(g * _rr.pow_db_db(a, b), b)"},
        jvp={"a": "t * _rr.pow_db_da(a, b)", "b": "t * _rr.pow_db_db(a, b)"}, **_same)
defrule(safe_log_tangent, "tan, a, /",
        vjp={"tan": f"{UB}(_rr.safe_log_tangent(g, a), tan)",
             "a": f"{UB}(_rr.safe_log_tangent(-g * tan / a, a), a)"},
        jvp={"tan": "_rr.safe_log_tangent(t, a)", "a": "_rr.safe_log_tangent(-tan * t / a, a)"},
        **_same)
defrule(expand_like, "grad, like, /", vjp={"grad": "_rt.unbroadcast(g, grad)"},
        jvp={"grad": "_rr.expand_like(t, like)"}, **_any)
defrule(take, "grad, idx, /", vjp={"grad": "_rr.scatter_add(g, grad, idx)"},
        jvp={"grad": "_rr.take(t, idx)"}, **_any)
defrule(scatter, "grad, like, idx, /", vjp={"grad": f"{UB}(_rr.take(g, idx), grad)"},
        jvp={"grad": "_rr.scatter(t, like, idx)"}, **_any)
defrule(tuple_of, "grad, n, /", vjp={"grad": "_rt.seq_adjoint(g, grad)"},
        jvp={"grad": "_rr.tuple_of(t, n)"}, kind="container", ns=NS)
# the tape stacks of generated code (third derivatives through loops)
defrule(_r.unpop, "grad, gy, obj, i=-1, /",
        vjp={"grad": "_rr.unpop_rest(g, obj, i)", "gy": "_rr.unpop_item(g, obj, i)"},
        jvp={"grad": "_rt.unpop(t, 0.0, obj, i)", "gy": "_rt.unpop(0.0, t, obj, i)"},
        kind="container", ns=NS)
defrule(_r.unappend, "grad, /", vjp={"grad": "_rr.reappend(g, grad)"},
        jvp={"grad": "_rt.unappend(t)"}, kind="container", ns=NS)
defrule(_r.digamma, "x, /", vjp={"x": "g * _rr.trigamma(x)"}, jvp={"x": "t * _rr.trigamma(x)"},
        kind="float", ns=NS)
defzero(_r.zeros_like, _r.is_zero, _r.kind_of, _r.differentiable, _r.check_opaque)
# the checks generated code runs before a step (they raise or return nothing of use): the code
# differentiated again runs them as they are
defzero(_r.keys_read, _r.not_receiver, _r.not_alias, _r.inplace_guard, _r.argument_inplace_guard,
        _r.share_guard, _r.no_update, _r.container_receiver)
# The adjoints of the Python table's containers (lists, tuples, dicts, iterators, ``xs.extend``,
# ``del xs[i]``, ``sorted``, ``min``/``max``...) are linear in the adjoint they take and read
# their other arguments only for structure (lengths, keys, the order the items took): forward
# mode over a reverse sweep (hessian, hvp) takes the same helper of the tangent.
for _h, _rest in [(_r.seq_adjoint, "seq"), (_r.seq_adjoint_of, "x"), (_r.own_list, ""),
                  (_r.unappend_owned, ""), (_r.unextend, "seq"), (_r.uninsert, "i"),
                  (_r.undel, "obj, idx"), (_r.unupdate, "other"),
                  (_r.star_args_adjoint, "segments"), (_r.extremum_default_adjoint, "args"),
                  (_r.extremum_adjoint, "args, key, pick, /, *found"),
                  (_r.sorted_adjoint, "iterable, key, reverse, result=None"),
                  (_r.dict_get_adjoint, "d, key"), (_r.dict_default_adjoint, "d, key"),
                  (_r.values_adjoint, "d"), (_r.items_adjoint, "d"),
                  (_r.partial_args_adjoint, "n"), (_r.cell_adjoint, "name"),
                  (_r.partial_keywords_adjoint, ""), (_r.zip_adjoint, "iterables"),
                  (_r.enumerate_adjoint, "iterable"), (_r.reversed_adjoint, "seq"),
                  (_r.iter_adjoint, "obj, result"), (_r.zip_seq_adjoint, "xs, result"),
                  (_r.add_part, "a, b, which"), (_r.here_adjoint, "x, result"),
                  (_r.next_adjoint, "it"), (_r.next_default_adjoint, "it")]:
    _params = "grad" + (", " + _rest if _rest else "") + ("" if "/" in _rest else ", /")
    _names = [p.split("=")[0].strip() for p in _rest.split(",") if p.strip() and p.strip() != "/"]
    _args = ", ".join(["t"] + [n.lstrip("*") if not n.startswith("*") else n for n in _names])
    defrule(_h, _params, jvp={"grad": f"_rt.{_h.__name__}({_args})"}, **_any)


def mul_part_operand(grad, t, a, b, which, wrt):
    """Tangent of ``mul_part(grad, a, b, which)`` in operand ``wrt`` (0: a, 1: b): a repeated
    sequence's adjoint reads the count only; a product's, ``grad * conj(other)``, the other
    operand."""
    x, other = (a, b) if which == 0 else (b, a)
    if _r.is_zero(grad) or _r.is_zero(t) or wrt == which or \
            isinstance(x, (list, tuple, collections.deque)) and isinstance(other, int):
        return 0.0
    return _r.unbroadcast(grad * _r.cj(t), x)


defrule(_r.mul_part, "grad, a, b, which, /",
        jvp={"grad": "_rt.mul_part(t, a, b, which)",
             "a": "_rr.mul_part_operand(grad, t, a, b, which, 0)",
             "b": "_rr.mul_part_operand(grad, t, a, b, which, 1)"}, **_any)

# -- NumPy adjoints (``_adj``) ---------------------------------------------------------------------
A = _adjoints
# (where=: the mask of a reduction's where=, passed on; True, the default, drops out of the text)
RED = "grad, a, axis=None, keepdims=False, /, where=True"
defrule(A.sum, RED, vjp={"grad": "np.sum(g, axis=axis, keepdims=keepdims, where=where)"},
        jvp={"grad": "_adj.sum(t, a, axis, keepdims, where=where)"}, **_any)
defrule(A.mean, RED, vjp={"grad": "np.mean(g, axis=axis, keepdims=keepdims, where=where)"},
        jvp={"grad": "_adj.mean(t, a, axis, keepdims, where=where)"}, **_any)
defrule(A.like, "grad, x, /", vjp={"grad": "g"}, jvp={"grad": "_adj.like(t, x)"}, **_any)
defrule(A.full_like, "grad, x, /", jvp={"grad": "_adj.full_like(t, x)"}, **_any)
defrule(A.astype, "grad, x, /", vjp={"grad": "g"}, jvp={"grad": "_adj.astype(t, x)"}, **_any)
defrule(A.reshape_back, "grad, a, order='C', /", vjp={"grad": "np.reshape(g, np.shape(grad))"},
        jvp={"grad": "_adj.reshape_back(t, a, order)"}, **_any)
defrule(A.transpose, "grad, a, axes=None, /",
        jvp={"grad": "_adj.transpose(t, a, axes)"}, **_any)
defrule(A.moveaxis, "grad, a, source, destination, /",
        jvp={"grad": "_adj.moveaxis(t, a, source, destination)"}, **_any)
defrule(A.swapaxes, "grad, a, axis1, axis2, /",
        jvp={"grad": "_adj.swapaxes(t, a, axis1, axis2)"}, **_any)
defrule(A.extremum, "grad, out, a, axis=None, keepdims=False, /, where=True",
        jvp={"grad": "_adj.extremum(t, out, a, axis, keepdims, where=where)", "out": ZERO,
             "a": ZERO}, **_any)
defrule(A.maximum, "grad, x1, x2, which, sign=1, nan=False, /",
        jvp={"grad": "_adj.maximum(t, x1, x2, which, sign, nan)", "x1": ZERO, "x2": ZERO}, **_any)
defrule(A.where, "grad, condition, x, first, /",
        jvp={"grad": "_adj.where(t, condition, x, first)"}, **_any)
defrule(A.clip, "grad, a, lo, hi, which, /",
        jvp={"grad": "_adj.clip(t, a, lo, hi, which)", "a": ZERO, "lo": ZERO, "hi": ZERO}, **_any)
defrule(A.var, "grad, a, axis=None, ddof=0, keepdims=False, mean=None, /, where=True",
        jvp={"grad": "_adj.var(t, a, axis, ddof, keepdims, where=where)",
             "a": "_adj.var(grad, t, axis, ddof, keepdims, where=where)"}, **_any)
defrule(A.std, "grad, out, a, axis=None, ddof=0, keepdims=False, /, where=True",
        jvp={"grad": "_adj.std(t, out, a, axis, ddof, keepdims, where=where)",
             "out": "_adj.std(-grad * t / out, out, a, axis, ddof, keepdims, where=where)",
             "a": "_adj.std(grad, out, t, axis, ddof, keepdims, where=where)"}, **_any)
defrule(A.cumsum, "grad, a, axis=None, /", jvp={"grad": "_adj.cumsum(t, a, axis)"}, **_any)
defrule(A.cumulative_sum, "grad, a, axis=None, include_initial=False, /",
        jvp={"grad": "_adj.cumulative_sum(t, a, axis, include_initial)"}, **_any)
defrule(A.diff, "grad, a, n=1, axis=-1, /", jvp={"grad": "_adj.diff(t, a, n, axis)"}, **_any)
defrule(A.diff_ext, "grad, a, n, axis, prepend, append, which, /",
        jvp={"grad": "_adj.diff_ext(t, a, n, axis, prepend, append, which)"}, **_any)
defrule(A.power_base, "grad, x1, x2, /",
        jvp={"grad": "_adj.power_base(t, x1, x2)",
             "x1": "_rt.unbroadcast(grad * t * _rr.pow_d2(x1, x2), x1)",
             "x2": "_rt.unbroadcast(grad * t * _rr.pow_db(x1, x2), x1)"}, **_any)
defrule(A.power_exponent, "grad, out, x1, x2, /",
        jvp={"grad": "_adj.power_exponent(t, out, x1, x2)",
             "out": "_rt.unbroadcast(grad * t * np.log(x1), x2)",
             "x1": "_rt.unbroadcast(grad * out * t / x1, x2)"}, **_any)
defrule(A.inv, "grad, out, /", jvp={"grad": "_adj.inv(t, out)", "out": "_rr.inv_out(grad, out, t)"},
        **_any)
# second derivatives through linear algebra and np.prod: each helper is linear in ``grad``; its
# tangents in the values it reads are in the tables beside it (numpy/linalg.py, reductions.py)
_T = "_adj.{}_adjoint_tangent(grad, out, {}, t, {!r})"
defrule(A.solve, "grad, out, a, b, /",
        jvp={"grad": "_adj.solve(t, out, a, b)", "out": _T.format("solve", "a, b", "out"),
             "a": _T.format("solve", "a, b", "a")}, **_any)
for _k in ("det", "slogdet"):
    defrule(getattr(A, _k), "grad, out, a, /",
            jvp={"grad": f"_adj.{_k}(t, out, a)", "out": _T.format(_k, "a", "out"),
                 "a": _T.format(_k, "a", "a")}, **_any)
defrule(A.cholesky, "grad, out, a, upper=False, /",
        jvp={"grad": "_adj.cholesky(t, out, a, upper)",
             "out": "_adj.cholesky_adjoint_tangent(grad, out, a, upper, t)"}, **_any)
defrule(A.prod, RED, jvp={"grad": "_adj.prod(t, a, axis, keepdims, where=where)",
                          "a": "_adj.prod_adjoint_tangent(grad, a, axis, keepdims, where, t)"},
        **_any)
defrule(A.eigh, "grad, out, a, UPLO='L', /",
        jvp={"grad": "_adj.eigh(t, out, a, UPLO)",
             "out": "_adj.eigh_adjoint_tangent(grad, out, a, UPLO, t)"}, **_any)
defrule(A.eigvalsh, "grad, out, a, UPLO='L', /",
        jvp={"grad": "_adj.eigvalsh(t, out, a, UPLO)",
             "a": "_adj.eigvalsh_adjoint_tangent(grad, a, UPLO, t)"}, **_any)
defrule(A.imag, "grad, val, /", jvp={"grad": "_adj.imag(t, val)"}, **_any)
defrule(A.angle, "grad, z, deg=False, /", jvp={"grad": "_adj.angle(t, z, deg)",
                                               "z": "_adj.angle_adjoint_tangent(grad, z, deg, t)"},
        **_any)
# cumprod's adjoint reads ans = cumprod(a) too: its whole change is given through a
defrule(A.cumprod, "grad, out, a, axis=None, /",
        jvp={"grad": "_adj.cumprod(t, out, a, axis)", "out": ZERO,
             "a": "_adj.cumprod_adjoint_tangent(grad, a, axis, t)"}, **_any)
# the FFTs' adjoints: linear in grad, reading only the input's shape and dtype
defrule(A.fft, "grad, a, n=None, axis=-1, norm=None, inverse=False, /",
        jvp={"grad": "_adj.fft(t, a, n, axis, norm, inverse)"}, **_any)
defrule(A.fftn, "grad, a, s=None, axes=(-2, -1), norm=None, inverse=False, /",
        jvp={"grad": "_adj.fftn(t, a, s, axes, norm, inverse)"}, **_any)
for _k in ("rfft", "irfft"):
    defrule(getattr(A, _k), "grad, a, n=None, axis=-1, norm=None, /",
            jvp={"grad": f"_adj.{_k}(t, a, n, axis, norm)"}, **_any)
_N = "_adj.norm_adjoint_tangent(grad, out, x, ord, axis, keepdims, t, {!r}, {})"
defrule(A.norm, "grad, out, x, ord=None, axis=None, keepdims=False, /",
        jvp={"grad": "_adj.norm(t, out, x, ord, axis, keepdims)",
             "out": _N.format("out", False), "x": _N.format("x", False)}, **_any)
defrule(A.vector_norm, "grad, out, x, axis=None, keepdims=False, ord=2, /",
        jvp={"grad": "_adj.vector_norm(t, out, x, axis, keepdims, ord)",
             "out": _N.format("out", True), "x": _N.format("x", True)}, **_any)
defrule(A.array_adjoint, "grad, obj, /", jvp={"grad": "_adj.array_adjoint(t, obj)"}, **_any)
defrule(A.array_adjoint_of, "grad, obj, /", jvp={"grad": "_adj.array_adjoint_of(t, obj)"}, **_any)
defrule(A.item, "grad, a, args, /", jvp={"grad": "_adj.item(t, a, args)"}, **_any)
for _k in ("take", "take_along_axis", "diagonal", "trace", "diag", "triu", "tril", "tile", "repeat",
           "roll", "sort", "pad", "split"):
    _f = getattr(A, _k, None)
    if _f is not None:
        defrule(_f, "grad, *rest", jvp={"grad": f"_adj.{_k}(t, *rest)"}, **_any)
for _k in ("concatenate", "stack", "vstack", "hstack", "dstack", "column_stack", "block",
           "concat_adjoint", "atleast", "broadcast_arrays", "unstack"):
    _f = getattr(A, _k, None)
    if _f is not None:
        defrule(_f, "grad, *rest", jvp={"grad": f"_adj.{_k}(t, *rest)"}, kind="any", ns=NS)

# bilinear adjoints: (grad, a, b, ..., which) is linear in grad and in the operand it does not
# return the adjoint of; it does not depend on the other one's values
# (and, as matmul's below, adjoints for reverse mode over a derivative: with F the product
# itself, the adjoint w.r.t. grad is F(g, b) or F(a, g), w.r.t. the operand the helper does not
# return the other adjoint of the product; not vdot, which conjugates its first operand)
for _k, _mid in (("dot", ""), ("inner", ""), ("outer", ""), ("vdot", ""),
                 ("kron", ""), ("tensordot", "axes, ")):
    _f = getattr(A, _k)
    _ax = ", axes" if _mid else ""
    defrule(_f, f"grad, a, b, {_mid}which, /",
            vjp=None if _k == "vdot" else {
                "grad": f"np.{_k}(g, b{_ax}) if which == 0 else np.{_k}(a, g{_ax})",
                "a": f"_adj.{_k}(grad, a, g, {_mid}0) if which == 1 else 0.0",
                "b": f"_adj.{_k}(grad, g, b, {_mid}1) if which == 0 else 0.0"},
            jvp={"grad": f"_adj.{_k}(t, a, b, {_mid}which)",
                 "a": f"_adj.{_k}(grad, t, b, {_mid}which) if which == 1 else {ZERO}",
                 "b": f"_adj.{_k}(grad, a, t, {_mid}which) if which == 0 else {ZERO}"}, **_any)
defrule(A.matmul, "grad, a, b, which, /",
        vjp={"grad": "np.matmul(g, b) if which == 0 else np.matmul(a, g)",
             "a": "_adj.matmul(grad, a, g, 0) if which == 1 else 0.0",
             "b": "_adj.matmul(grad, g, b, 1) if which == 0 else 0.0"},
        jvp={"grad": "_adj.matmul(t, a, b, which)",
             "a": f"_adj.matmul(grad, t, b, which) if which == 1 else {ZERO}",
             "b": f"_adj.matmul(grad, a, t, which) if which == 0 else {ZERO}"}, **_any)
