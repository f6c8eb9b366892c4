"""Tangent helpers of generated forward code (``_fw.*``, re-exported by :mod:`.forward`): zero
tangents shaped like a value, broadcasting, and the tangents of Python's builtins over sequences
(the ``jvp=`` templates of the Python rule table).
"""

from collections import defaultdict, deque

import numpy as np

from ..errors import RuleError
from .arrays import (_is_array, _others_products, _refuse_length_mismatch,
                     _refuse_sequence_arithmetic, array_module)
from .iterators import Iter, LazyList, listed, resolve


# =================================================================================================
# Helpers generated forward code calls (``_fw.*``)
# =================================================================================================
def zeros_like(x):
    """A zero tangent for the value ``x``: ``0.0`` for Python numbers, a floating zero array for
    arrays (integer arrays too), containers of zeros for containers, None for the rest."""
    t = type(x)
    if t is float or t is int or t is bool:
        return 0.0
    if t is complex:
        return 0j
    if t is tuple or t is list:
        return t(zeros_like(v) for v in x)
    if t is dict:
        return {k: zeros_like(v) for k, v in x.items()}
    if t is defaultdict:
        # (a missing key read makes the default's item: its tangent is the default's zero)
        make = x.default_factory
        out = defaultdict((lambda: zeros_like(make())) if make is not None else None)
        out.update((k, zeros_like(v)) for k, v in x.items())
        return out
    if t is deque:                  # a deque of tangents, which forward mode mirrors methods on
        return deque((zeros_like(v) for v in x), x.maxlen)
    if _is_array(x):
        dt = x.dtype
        xp = array_module(x)
        return xp.zeros(x.shape, dtype=dt if dt.kind in "fc" else np.float64)
    if isinstance(x, tuple) and hasattr(x, "_fields"):      # SVDResult, EighResult...
        return t(*(zeros_like(v) for v in x))
    return None


def materialize(t, x):
    """A tangent with the structure of ``x`` (symbolic zeros/None replaced by zeros)."""
    if t is None or (type(t) is float and t == 0.0 and not isinstance(x, (float, int))):
        return zeros_like(x)
    if type(t) in (tuple, list) and type(x) in (tuple, list):
        if len(t) != len(x):
            _refuse_length_mismatch(t, x)
        return type(x)(materialize(a, b) for a, b in zip(t, x))
    if type(t) is dict and type(x) is dict:
        return {k: materialize(t.get(k), v) for k, v in x.items()}
    if type(x) is deque and type(t) is not deque:
        if hasattr(t, "__len__") and len(t) != len(x):
            _refuse_length_mismatch(t, x)
        return deque((materialize(a, b) for a, b in zip(t, x)), x.maxlen)
    return t


def into(t, dest):
    """The tangent written into ``dest[...]``: none (0) when ``dest`` is an integer or bool array,
    which truncates what is written into it."""
    dt = getattr(dest, "dtype", None)
    return 0 if dt is not None and dt.kind not in "fcO" else t


def bcast(t, ans):
    """The tangent ``t`` broadcast to the shape of ``ans`` (a broadcasting op's single term)."""
    if type(ans) in (list, tuple, deque) and type(t) in (list, tuple, deque) and \
            len(t) != len(ans):
        _refuse_sequence_arithmetic()
    shape = getattr(ans, "shape", None)
    if shape is None or getattr(t, "shape", None) == shape:
        return t
    xp = array_module(ans)
    return xp.broadcast_to(t, shape).copy() if hasattr(t, "shape") or shape else t


# -- tangents of Python's builtins over sequences (the ``jvp=`` templates of rules.python) ----------
# A lazy iterator's tangent (zip, enumerate, reversed, dict views) is the eager list of its
# elements' tangents: every consumer walks the primal iterator once, and the list alongside it.
def _elems(t, x):
    """The tangents of the elements ``iter(x)`` yields, as a list (an endless run of zeros for
    an iterator that carries none: zip stops at the shortest)."""
    t = resolve(t)
    if isinstance(x, dict):
        return [zeros_like(k) for k in x]
    if isinstance(x, range):
        return [0.0] * len(x)
    if isinstance(x, (set, frozenset)) and (t is None or type(t) is float and t == 0.0):
        return [0.0] * len(x)       # (its elements are numbers or keys: nothing to carry)
    if t is None or (type(t) is float and t == 0.0):
        if isinstance(x, Iter):
            return [0.0] * len(x.seen)
        if isinstance(x, (list, tuple)) or (hasattr(x, "shape") and hasattr(x, "dtype")):
            return list(zeros_like(x)) if np.ndim(x) or isinstance(x, (list, tuple)) else []
        import itertools
        return itertools.repeat(0.0)
    if isinstance(t, dict):          # a dict view's tangent came as a dict
        return list(t.values())
    if _is_array(x) and x.ndim and (isinstance(t, (int, float, complex, np.generic)) or
                                    _is_array(t) and t.ndim < x.ndim):
        t = bcast(t, x)              # a broadcasting op's tangent kept its operand's shape
    return list(t)


def seq_tangent(t, x, ans):
    """Tangent of ``list(x)``, ``tuple(x)`` and of the loop sequence ``_rt.seq(x)``."""
    if ans is x:                     # _rt.seq of a list, tuple or array: the value itself
        return materialize(t, x)
    t = resolve(t)
    if isinstance(x, dict):
        return type(ans)(zeros_like(k) for k in ans)
    if t is None or (type(t) is float and t == 0.0):
        return zeros_like(ans)
    if isinstance(x, (list, tuple)):
        t = materialize(t, x)
    out = list(t) if not isinstance(t, dict) else list(t.values())
    if isinstance(ans, (list, tuple)) and len(out) != len(ans):
        raise RuleError(f"forward mode: the tangent of {type(x).__name__} has {len(out)} "
                        f"element(s) where the value has {len(ans)}",
                        fix="a rule's tangent template for this value gives the wrong number of "
                            "elements; check it against the value (s2sad.testing.check_grads(..., "
                            "modes=(\"fwd\",)))")
    return type(ans)(out) if isinstance(ans, (list, tuple)) else out


# The tangent of an iterator is read lazily (LazyList): its values' tangents are known once
# the calls that consume it have taken them.
def zip_tangent(t, iterables):
    return LazyList(lambda: list(zip(*[_elems(ti, x) for ti, x in zip(t, iterables)])))


def enumerate_tangent(t, iterable):
    return LazyList(lambda: [(0.0, e) for e in _elems(t, iterable)])


def reversed_tangent(t, seq):
    return _elems(t, seq)[::-1]


def zip_seq_tangent(t, xs, ans):
    return tuple(seq_tangent(tj, x, aj) if not isinstance(x, Iter) else
                 _elems(tj, x)[:len(aj)] for tj, x, aj in zip(t, xs, ans))


def iter_tangent(t, obj):
    if isinstance(obj, Iter):
        return t
    return LazyList(lambda: _elems(t, obj))


def star_args_tangent(t, segments):
    out = []
    for ti, seg in zip(t, segments):
        out.extend(_elems(ti, seg))
    return tuple(out)


def sum_tangent(t, iterable, ans):
    """Tangent of ``sum(iterable)`` in the iterable."""
    if hasattr(iterable, "shape") and hasattr(iterable, "dtype"):
        return array_module(iterable).sum(materialize(t, iterable), axis=0)
    out = None
    for e in _elems(t, iterable):
        if e is None or (type(e) is float and e == 0.0):
            continue
        out = e if out is None else out + e
    return zeros_like(ans) if out is None else bcast(out, ans)


def prod_tangent(t, iterable, start, ans):
    """Tangent of ``math.prod(iterable, start=start)`` in the iterable: each item's tangent
    times the product of ``start`` and the others."""
    items = listed(iterable) if not (hasattr(iterable, "shape") and hasattr(iterable, "dtype")) \
        else list(iterable)
    out = None
    for e, o in zip(_elems(t, iterable), _others_products(items, start)):
        if e is None or (type(e) is float and e == 0.0):
            continue
        out = e * o if out is None else out + e * o
    return zeros_like(ans) if out is None else bcast(out, ans)


def extremum_tangent(t, args, key, pick):
    """Tangent of builtin ``min``/``max``: the chosen element's (first of equals, like Python)."""
    if len(args) == 1:
        items, tans = listed(args[0]), _elems(t[0], args[0])
    else:
        items, tans = list(args), [materialize(ti, a) for ti, a in zip(t, args)]
    if not items:
        return 0.0                   # the default was returned
    keyf = key if key is not None else (lambda v: v)
    vals = [keyf(v) for v in items]
    best = pick(range(len(items)), key=lambda k: vals[k])
    return materialize(tans[best], items[best])


def sorted_tangent(t, iterable, key, reverse):
    items = listed(iterable)
    tans = _elems(t, iterable)
    keyf = key if key is not None else (lambda v: v)
    order = sorted(range(len(items)), key=lambda k: keyf(items[k]), reverse=reverse)
    return [materialize(tans[k], items[k]) for k in order]


def hypot_tangent(t, ans, coordinates):
    if ans == 0:
        return 0.0
    return sum(c * tc for c, tc in zip(coordinates, materialize(t, coordinates))) / ans


def get_tangent(t, d, key, ans):
    """Tangent of ``d.get(key, default)`` in ``d``."""
    if key in d and t is not None and not (type(t) is float and t == 0.0):
        return materialize(t.get(key) if isinstance(t, dict) else t[key], d[key])
    return zeros_like(ans)


def default_tangent(t, d, key, ans):
    """Tangent of ``d.get(key, default)`` in ``default``."""
    return zeros_like(ans) if key in d else t


def values_tangent(t, d):
    t = materialize(t, d)
    return [t[k] for k in d]


def items_tangent(t, d):
    t = materialize(t, d)
    return [(zeros_like(k), t[k]) for k in d]


def copy_tangent(t, x):
    t = materialize(t, x)
    return type(t)(t) if isinstance(t, (list, dict)) else \
        deque(t, t.maxlen) if isinstance(t, deque) else t
