"""``collections.deque`` holding values that carry derivatives.

A deque's adjoint (reverse mode) is a list with one adjoint per item, as a list's is; its tangent
(forward mode) is a deque of the items' tangents, so that a method the forward sweep mirrors on
it (``appendleft``, ``popleft``, ``rotate``...) keeps the two in step.  ``deque(iterable)`` has
the rule of ``list(iterable)``; the methods that change a deque in place (``append``,
``appendleft``, ``pop``, ``popleft``, ``extend``, ``extendleft``, ``insert``, ``remove``,
``rotate``, ``reverse``, ``clear``) have handlers the runtime calls (``runtime.IN_PLACE_RULES``),
each giving the deque's adjoint before the call from its adjoint after.

A deque with ``maxlen`` drops items from its other end when full, which the reverse sweep of an
``append`` does not see: it is refused (classify/after_activity.py, and here at run time).
"""
import collections as _collections
import sys as _sys

from .. import runtime as _r
from ..errors import UnsupportedSyntaxError as _Unsupported
from .registry import defrule

_deque = _collections.deque
DQ = {"_dq": _sys.modules[__name__]}

refuse_maxlen = _r.refuse_maxlen


def _zeros(n):
    return [0.0] * n


def _list(g, n):
    """A deque's adjoint as a new list of n adjoints (a zero gives n zeros)."""
    return _zeros(n) if _r.is_zero(g) else [_r._z(v) for v in g]


# -- deque(iterable) ------------------------------------------------------------------------------
def deque_adjoint(g, iterable):
    if _r.is_zero(g):
        return 0.0
    return _r.seq_adjoint(list(g), iterable)


def deque_tangent(t, iterable, ans):
    from ..runtime.forward import seq_tangent
    out = seq_tangent(t, iterable, list(ans))
    return _deque(out)


def zeros_tangent(d):
    """The zero tangent of a deque: a deque of zero tangents (forward mode mirrors its methods)."""
    from ..runtime.forward import zeros_like
    return _deque((zeros_like(v) for v in d), d.maxlen)


# (maxlen: refused on values that carry a derivative, see above; `forbid` says so at the call)
defrule(_deque, "iterable=(), maxlen=None", vjp={"iterable": "_dq.deque_adjoint(g, iterable)"},
        jvp={"iterable": "_dq.deque_tangent(t, iterable, ans)"}, forbid={"maxlen": None},
        kind="container", ns=DQ, name="collections.deque")


# -- methods that change a deque in place ---------------------------------------------------------
def _custom(back, d):
    """The record of a deque method's call (``runtime.pull`` calls ``pull``).  It holds a float,
    as if it carried a derivative: forward mode over generated code (a second derivative) meets
    ``runtime.call`` with a result that does, and refuses it, rather than drop the change.  (Not
    the deque itself: the record is kept on the tape, which would then hold the deque.)"""
    def pull(g, g_self=_r._NOTHING):
        if g_self is _r._NOTHING:
            raise _Unsupported("a deque holding values that carry a derivative is changed in "
                               "place where s2sad cannot follow the change",
                               fix="keep the deque in a local variable of the function being "
                                   "differentiated, or use a list")
        return back(g, g_self)
    return ("custom", pull, 0.0)


def _arity(name, args, kwargs, lo, hi):
    if kwargs or not lo <= len(args) <= hi:
        raise TypeError(f"deque.{name}() got an unexpected set of arguments")


def _append(d, args, kwargs):
    refuse_maxlen(d)
    _arity("append", args, kwargs, 1, 1)
    d.append(args[0])
    n = len(d)

    def back(g, g_self):
        after = _list(g_self, n)
        return after[:-1], (after[-1],), {}
    return None, _custom(back, d)


def _appendleft(d, args, kwargs):
    refuse_maxlen(d)
    _arity("appendleft", args, kwargs, 1, 1)
    d.appendleft(args[0])
    n = len(d)

    def back(g, g_self):
        after = _list(g_self, n)
        return after[1:], (after[0],), {}
    return None, _custom(back, d)


def _pop(d, args, kwargs):
    _arity("pop", args, kwargs, 0, 0)
    value = d.pop()
    n = len(d)

    def back(g, g_self):
        return _list(g_self, n) + [_r._z(g)], (), {}
    return value, _custom(back, d)


def _popleft(d, args, kwargs):
    _arity("popleft", args, kwargs, 0, 0)
    value = d.popleft()
    n = len(d)

    def back(g, g_self):
        return [_r._z(g)] + _list(g_self, n), (), {}
    return value, _custom(back, d)


def _extend(d, args, kwargs, left=False):
    refuse_maxlen(d)
    _arity("extendleft" if left else "extend", args, kwargs, 1, 1)
    src = args[0]
    items = _r.listed(src) if src is not d else list(src)
    if left:
        d.extendleft(items)
    else:
        d.extend(items)
    n, k = len(d), len(items)

    def back(g, g_self):
        after = _list(g_self, n)
        if left:
            before, added = after[k:], after[:k][::-1]
        else:
            before, added = after[:n - k], after[n - k:]
        return before, (_r.seq_adjoint(added, src) if src is not d else 0.0,), {}
    return None, _custom(back, d)


def _extendleft(d, args, kwargs):
    return _extend(d, args, kwargs, left=True)


def _insert(d, args, kwargs):
    refuse_maxlen(d)
    _arity("insert", args, kwargs, 2, 2)
    i, v = args
    n0 = len(d)
    pos = max(0, min(n0, i + n0 if i < 0 else i))     # where list.insert / deque.insert put it
    d.insert(i, v)
    n = len(d)

    def back(g, g_self):
        after = _list(g_self, n)
        return after[:pos] + after[pos + 1:], (0.0, after[pos]), {}
    return None, _custom(back, d)


def _remove(d, args, kwargs):
    _arity("remove", args, kwargs, 1, 1)
    pos = d.index(args[0])                            # (ValueError as deque.remove's)
    del d[pos]
    n = len(d)

    def back(g, g_self):
        after = _list(g_self, n)
        return after[:pos] + [0.0] + after[pos:], (0.0,), {}
    return None, _custom(back, d)


def _permute(d, order, nargs=0):
    """Put d's items in ``order`` (the item now at position j was at ``order[j]``)."""
    items = list(d)
    d.clear()
    d.extend(items[k] for k in order)
    n = len(order)

    def back(g, g_self):
        after = _list(g_self, n)
        before = _zeros(n)
        for j, k in enumerate(order):
            before[k] = after[j]
        return before, (0.0,) * nargs, {}
    return None, _custom(back, d)


def _rotate(d, args, kwargs):
    if kwargs or len(args) > 1:
        d.rotate(*args, **kwargs)                     # raises deque's own TypeError
    steps = args[0] if args else 1
    n = len(d)
    return _permute(d, [(j - steps) % n for j in range(n)], len(args))


def _reverse(d, args, kwargs):
    _arity("reverse", args, kwargs, 0, 0)
    return _permute(d, list(range(len(d)))[::-1])


def _clear(d, args, kwargs):
    _arity("clear", args, kwargs, 0, 0)
    n = len(d)
    d.clear()

    def back(g, g_self):
        return _zeros(n), (), {}
    return None, _custom(back, d)


IN_PLACE = {"append": _append, "appendleft": _appendleft, "pop": _pop, "popleft": _popleft,
            "extend": _extend, "extendleft": _extendleft, "insert": _insert, "remove": _remove,
            "rotate": _rotate, "reverse": _reverse, "clear": _clear}
for _name, _handler in IN_PLACE.items():
    _r.IN_PLACE_RULES[(_deque, _name)] = _handler


# -- second derivatives: the helpers above are linear in the adjoint / tangent they map ------------
defrule(deque_adjoint, "grad, iterable, /", jvp={"grad": "_dq.deque_adjoint(t, iterable)"},
        kind="any", ns=DQ)
defrule(deque_tangent, "tan, iterable, result, /",
        jvp={"tan": "_dq.deque_tangent(t, iterable, result)"}, kind="any", ns=DQ)
