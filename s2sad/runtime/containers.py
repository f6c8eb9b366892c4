"""Containers: displays (tuple/list/dict literals), closures and calls with ``*``, the undo of
list/dict mutation, container reads (``d.get``, ``d.values()``...), loop sequences (:func:`seq`),
the adjoints of ``zip``/``enumerate``/``reversed``/``sorted``/``min``/``max``/``sum``, and ``+``/``*``
on lists and tuples.
"""

from collections import deque

import numpy as np

from .arrays import (_is_array, _others_products, _z, add, array_module, cj, is_zero,
                     refuse_maxlen, unbroadcast)
from .iterators import Iter, _mark_loop, listed
from .values import _object_differentiable, differentiable
from .indexing import getitem_adjoint


_KEYS_VIEW, _ITEMS_VIEW = type({}.keys()), type({}.items())


def _keys_of(x):
    """Whether iterating ``x`` yields a dict's keys: they carry no derivative (keys_read refuses
    floats), so the dict gets none back from what took them."""
    return isinstance(x, dict) or type(x) is _KEYS_VIEW


def concat_str(*parts):
    return "".join(parts)


def not_in(container, item):
    return item not in container


# -- displays (tuple/list/dict literals); the lowering turns `(a, b)` into build_tuple(a, b) -----
def build_tuple(*items):
    return items


def build_list(*items):
    return list(items)


def build_dict(keys, *values):
    return dict(zip(keys, values))


def parts(g, n):
    """Split the adjoint of an n-element tuple/list into n adjoints (a zero splits into zeros)."""
    if is_zero(g):
        return (0.0,) * n
    return tuple(0.0 if v is None else v for v in g)


def dict_parts(g, keys):
    """Adjoints of the values of a dict display ``{k1: v1, ...}``: where a key is repeated, only
    its last value is kept (Python's rule), so only that one gets the key's adjoint."""
    if is_zero(g):
        return (0.0,) * len(keys)
    last = {}
    for i, k in enumerate(keys):
        last[k] = i
    return tuple(0.0 if g.get(k) is None or last[k] != i else g[k] for i, k in enumerate(keys))


def sum_adjoint(g, iterable):
    """Adjoint of builtin ``sum(iterable)``: every element receives g (summed down to its shape)."""
    if isinstance(iterable, (list, tuple)):
        return type(iterable)(unbroadcast(g, v) if hasattr(v, "shape") or isinstance(v, float) else g
                              for v in iterable)
    if not hasattr(iterable, "shape"):      # d.values(), iterators: one adjoint per element
        return [unbroadcast(g, v) if hasattr(v, "shape") or isinstance(v, float) else g
                for v in listed(iterable)]
    # an array summed over its first axis
    return array_module(iterable).broadcast_to(g, iterable.shape).astype(iterable.dtype)


def prod_adjoint(g, iterable, start=1):
    """Adjoint of ``math.prod(iterable, start=start)`` in the iterable: each item gets g times
    the product of ``start`` and the others (conjugated), summed down to its shape."""
    items = list(iterable) if isinstance(iterable, (list, tuple)) or _is_array(iterable) \
        else listed(iterable)
    adj = [unbroadcast(g * cj(o), v) if hasattr(v, "shape") or isinstance(v, (float, complex))
           else g * cj(o) for o, v in zip(_others_products(items, start), items)]
    if isinstance(iterable, (list, tuple)):
        return type(iterable)(adj)
    if _is_array(iterable):
        return array_module(iterable).asarray(adj).astype(iterable.dtype, copy=False)
    return adj


def prod_start_adjoint(g, iterable, start, ans):
    """Adjoint of ``math.prod(iterable, start=start)`` in ``start``."""
    items = list(iterable) if isinstance(iterable, (list, tuple)) or _is_array(iterable) \
        else listed(iterable)
    rest = 1
    for v in items:
        rest = rest * v
    return unbroadcast(g * cj(rest), start)


# -- closures, displays with *, calls with * --------------------------------------------------
def make_closure(names, *values):
    """Stands for a nested def/lambda in the IR (the emitters write the definition itself)."""
    raise AssertionError("make_closure is never called")


def star_args(*segments):
    """``(a, *xs, b)``: concatenate segments into one tuple."""
    out = []
    for seg in segments:
        out.extend(seg)
    return tuple(out)


def star_args_adjoint(g, segments):
    """Adjoint of :func:`star_args`: ``g`` (the adjoint of the joined tuple) cut into the
    segments.  A call that had no derivative record (``np.floor(*xs)`` on Python floats) gives back
    the zeros marker of unknown length (``dispatch._Zeros``): zero for every segment."""
    if is_zero(g) or getattr(g, "zeros", False) is True:
        return (0.0,) * len(segments)
    out, k = [], 0
    for seg in segments:
        n = len(seg)
        part = tuple(g[k:k + n])
        if isinstance(seg, list):
            part = list(part)
        elif hasattr(seg, "shape"):
            part = array_module(seg).stack([array_module(seg).asarray(v) for v in part]) if n else \
                array_module(seg).zeros_like(seg)
        out.append(part)
        k += n
    return tuple(out)


def merge_dicts(*ds):
    """``{**a, **b}`` (and the keywords of ``f(**a, **b)``): a new dict, a later part's value
    winning over an earlier one's.  Each part must be a mapping, as Python requires of ``**``
    (``dict.update`` would also take a sequence of pairs)."""
    out = {}
    for d in ds:
        if not hasattr(d, "keys"):
            raise TypeError(f"'{type(d).__name__}' object is not a mapping")
        out.update(d)
    return out


def merge_kwargs(*ds):
    """The keywords of ``f(k=v, **a, **b)``, merged: as :func:`merge_dicts`, but a keyword given
    twice is Python's TypeError, not a later value winning."""
    out = {}
    for d in ds:
        if not hasattr(d, "keys"):
            raise TypeError(f"argument after ** must be a mapping, not {type(d).__name__}")
        for k in d.keys():
            if k in out:
                raise TypeError(f"got multiple values for keyword argument '{k}'")
            out[k] = d[k]
    return out


def apply(fn, args, kwargs):
    return fn(*args, **(kwargs or {}))


def seq_adjoint(g, seq):
    """Adjoint of ``list(seq)`` / ``tuple(seq)``: g in the structure of seq."""
    if is_zero(g) or _keys_of(seq):
        return 0.0
    if isinstance(seq, (list, tuple)):
        return type(seq)(_z(v) for v in g)
    if isinstance(seq, Iter):
        return [_z(v) for v in g]
    if hasattr(seq, "shape"):
        xp = array_module(seq)
        if not len(g):
            return xp.zeros_like(seq)
        row = seq.shape[1:]             # rows without an adjoint are zero rows
        return xp.stack([xp.zeros(row, dtype=seq.dtype) if is_zero(v) else
                         xp.broadcast_to(xp.asarray(v), row) for v in g]).astype(seq.dtype, copy=False)
    return g


def identity(x):
    return x


# -- container mutation (list.append/extend/insert/pop, dict.update) ------------------------------
# The list and dict methods that change their object (frontend.analysis follows them as statements
# on local containers; forward mode mirrors them on the tangent container).
IN_PLACE_METHODS = {"append", "extend", "insert", "pop", "update", "setdefault", "sort", "remove",
                    "clear", "popitem", "reverse"}
# ... and those of collections.deque besides (rules/deques.py)
DEQUE_IN_PLACE_METHODS = IN_PLACE_METHODS | {"appendleft", "popleft", "extendleft", "rotate"}


def unappend(g):
    """Adjoint of ``xs.append(v)``: (adjoint of xs before, adjoint of v)."""
    if is_zero(g):
        return 0.0, 0.0
    return list(g[:-1]), _z(g[-1])


def own_list(g):
    """A list adjoint in a new list, which the reverse sweep of a loop then pops from in place
    (:func:`unappend_owned`); the symbolic 0.0 stays."""
    return g if is_zero(g) else list(g)


def unappend_owned(g):
    """:func:`unappend` on a list adjoint the derivative owns (:func:`own_list`): its last item
    is popped in place."""
    if is_zero(g):
        return 0.0, 0.0
    return g, _z(g.pop())


def unextend(g, seq):
    n = len(seq.seen if isinstance(seq, Iter) else seq)     # (an iterator: what it yielded)
    if is_zero(g):
        return 0.0, 0.0
    part = g[len(g) - n:]
    return list(g[:len(g) - n]), (type(seq)(_z(v) for v in part) if isinstance(seq, (list, tuple)) else
                                 seq_adjoint([_z(v) for v in part], seq))


def uninsert(g, i):
    if is_zero(g):
        return 0.0, 0.0
    g = list(g)
    n = len(g)
    pos = i if i >= 0 else max(n - 1 + i, 0)
    pos = min(pos, n - 1)
    v = g.pop(pos)
    return g, _z(v)


def unpop(g, gy, obj, i=-1):
    """Adjoint of ``y = xs.pop(i)`` for xs before the pop (obj is xs after it)."""
    if isinstance(obj, dict):
        out = dict(g) if not is_zero(g) else {}
        out[i] = gy
        return out
    n = len(obj)
    base = list(g) if not is_zero(g) else [0.0] * n
    pos = i if i >= 0 else n + 1 + i
    base.insert(pos, gy if gy is not None else 0.0)
    return base


def unupdate(g, other):
    if is_zero(g):
        return 0.0, 0.0
    keys = list(other.keys()) if isinstance(other, dict) else [k for k, _ in other]
    before = {k: v for k, v in g.items() if k not in keys}
    if isinstance(other, dict):
        return before, {k: _z(g.get(k)) for k in keys}
    return before, type(other)((k, _z(g.get(k))) for k in keys)     # a sequence of pairs


# -- builtins over sequences --------------------------------------------------------------------
def _items(args):
    return listed(args[0]) if len(args) == 1 else list(args)


def _first_equal(items, ans):
    """Index of the first item that is, or equals, ``ans``; None where that cannot be told (an
    item whose comparison is not a plain truth value, NaN)."""
    for i, v in enumerate(items):
        if v is ans:
            return i
        try:
            eq = v == ans
        except Exception:
            return None
        if type(eq) is not bool and type(eq) is not np.bool_:
            return None
        if eq:
            return i
    return None


def extremum_default_adjoint(g, args):
    """Adjoint (or tangent) of ``min``/``max``'s ``default=``: all of g when the iterable was empty."""
    return g if len(args) == 1 and not _items(args) else 0.0


def extremum_adjoint(g, args, key, pick, *ans):
    """Adjoint of builtin ``min``/``max`` (of several arguments or of one iterable).  With a
    ``key``, the item taken is found from the result ``ans`` (the first item equal to it is the
    one Python took): calling the key again in the reverse sweep would read the variables it
    captured as they are then (a loop variable has moved on: late binding)."""
    items = _items(args)
    if not items:
        return (0.0,) * len(args)
    best = _first_equal(items, ans[0]) if key is not None and ans else None
    if best is None:
        keyf = key if key is not None else (lambda v: v)
        vals = [keyf(v) for v in items]
        best = pick(range(len(items)), key=lambda k: vals[k])
    adj = [0.0] * len(items)
    adj[best] = g
    if len(args) == 1:
        seq = args[0]
        if _keys_of(seq):
            return (0.0,)
        if hasattr(seq, "shape"):
            return (getitem_adjoint(g, seq, best),)
        return (type(seq)(adj) if isinstance(seq, (list, tuple)) else adj,)
    return tuple(adj)


def _sorted_order(items, ans):
    """The positions in ``items`` of the values of ``ans`` (sorted's result, or its first n), in
    order: each result value is the first unused item that is it or, failing that, equals it
    (a stable sort keeps equal items in their order).  None where that cannot be told (values
    that cannot be hashed, NaN, a result changed since)."""
    if not isinstance(ans, (list, tuple)) or len(ans) > len(items):
        return None
    by_id, by_val = {}, None
    for i, v in enumerate(items):
        by_id.setdefault(id(v), []).append(i)
    used, order = set(), []
    for a in ans:
        k = next((i for i in by_id.get(id(a), ()) if i not in used), None)
        if k is None:
            if by_val is None:
                by_val = {}
                try:
                    for i, v in enumerate(items):
                        by_val.setdefault(v, []).append(i)
                except TypeError:
                    return None
            try:
                k = next((i for i in by_val.get(a, ()) if i not in used), None)
            except TypeError:
                return None
            if k is None:
                return None
        used.add(k)
        order.append(k)
    return order


def sorted_adjoint(g, iterable, key, reverse, ans=None):
    """Adjoint of ``sorted``.  With a ``key``, the order is read from the result ``ans`` (which
    item each result value is): calling the key again in the reverse sweep would read the
    variables it captured as they are then (a loop variable has moved on: late binding)."""
    if _keys_of(iterable):
        return 0.0
    items = listed(iterable)
    order = _sorted_order(items, ans) if key is not None and ans is not None else None
    if order is None:
        keyf = key if key is not None else (lambda v: v)
        order = sorted(range(len(items)), key=lambda k: keyf(items[k]), reverse=reverse)
    if is_zero(g):
        return 0.0
    adj = [0.0] * len(items)
    for pos, k in enumerate(order):
        adj[k] = g[pos]
    if isinstance(iterable, tuple):
        return tuple(adj)
    if hasattr(iterable, "shape"):
        return seq_adjoint(adj, iterable)
    return adj


# -- container read adjoints ----------------------------------------------------------------------
def dict_get_adjoint(g, d, key):
    return {key: g} if key in d else 0.0


def dict_default_adjoint(g, d, key):
    return 0.0 if key in d else g


def values_adjoint(g, d):
    if is_zero(g):
        return 0.0
    return {k: _z(v) for k, v in zip(d.keys(), g)}


def items_adjoint(g, d):
    if is_zero(g):
        return 0.0
    out = {}
    for k, pair in zip(d.keys(), g):
        out[k] = 0.0 if is_zero(pair) else _z(pair[1])
    return out


def partial_compound(origin):
    from ..errors import S2SADError
    raise S2SADError("an exception was caught after it interrupted a loop or branch that had "
                     "already done differentiable work; s2sad cannot replay half of it",
                     origin=origin, fix="move the try/except inside the loop, around the statement "
                                        "that raises")


def partial_args_adjoint(g, n):
    if is_zero(g) or not isinstance(g, dict):
        return (0.0,) * n
    return tuple(_z(v) for v in g.get("args", (0.0,) * n))


def cell_adjoint(g, name):
    """The adjoint of one captured variable, from a closure's adjoint (a dict by name)."""
    if isinstance(g, dict):
        return _z(g.get(name))
    return 0.0


def partial_keywords_adjoint(g):
    if is_zero(g) or not isinstance(g, dict):
        return {}
    return {k: _z(v) for k, v in g.get("keywords", {}).items()}


def zip_adjoint(g, iterables):
    """Adjoint of ``zip(a, b, ...)`` (consumed as a list of tuples) for each iterable."""
    n = len(iterables)
    if is_zero(g):
        return (0.0,) * n
    rows = list(g)
    iterables = [it.seen if isinstance(it, Iter) else it for it in iterables]
    cols = [[0.0] * (len(it) if hasattr(it, "__len__") else len(rows)) for it in iterables]
    for k, row in enumerate(rows):
        parts_ = parts(row, n)
        for j in range(n):
            if k < len(cols[j]):
                cols[j][k] = parts_[j]
    return tuple(seq_adjoint(c, it) if hasattr(it, "__len__") else c for c, it in zip(cols, iterables))


def enumerate_adjoint(g, iterable):
    if is_zero(g):
        return 0.0
    g = [parts(row, 2)[1] for row in g]
    if hasattr(iterable, "__len__") and len(g) < len(iterable):
        g = g + [0.0] * (len(iterable) - len(g))        # values never taken
    return seq_adjoint(g, iterable)


def reversed_adjoint(g, seq):
    if is_zero(g):
        return 0.0
    g = list(g)
    g = g + [0.0] * (len(seq) - len(g)) if hasattr(seq, "__len__") else g
    return seq_adjoint(g[::-1], seq)


def seq(x):
    """What a ``for`` loop walks by index: lists, tuples and arrays as they are; a dict's keys,
    dict views, sets, generators and iterators as a list."""
    t = type(x)
    if t is list or t is tuple or t is range or (hasattr(x, "shape") and hasattr(x, "dtype")):
        return x
    if t is dict:
        return list(x)
    if t is deque and x.maxlen is not None and differentiable(x):
        refuse_maxlen(x)
    if hasattr(x, "__dict__") and not isinstance(x, type) and _object_differentiable(x):
        import inspect
        from ..errors import UnsupportedSyntaxError
        it = getattr(t, "__iter__", None)
        gen = " (a generator function, `yield`)" if it is not None and \
            inspect.isgeneratorfunction(it) else ""
        raise UnsupportedSyntaxError(
            f"a loop walks over an object of class {t.__name__} that holds values carrying "
            f"derivatives; s2sad cannot follow its __iter__{gen}",
            fix="loop over the object's list or array attribute instead")
    return list(x)


def seq_adjoint_of(g, x):
    """Adjoint of :func:`seq`: the same list adjoint (a dict's keys carry none)."""
    if isinstance(x, dict):
        return 0.0
    if is_zero(g):
        return 0.0
    if isinstance(x, tuple) and isinstance(g, list):
        return tuple(g)
    return g


def init_into(cls, obj, *args, **kwargs):
    """``super().__init__(*args)`` inside ``cls.__init__``; returns the object it filled in."""
    super(cls, obj).__init__(*args, **kwargs)
    return obj


def iter_adjoint(g, obj, ans):
    """Adjoint of ``iter(obj)``: the values' adjoints, in obj's structure."""
    if isinstance(obj, Iter) or is_zero(g):
        return g                    # iter() of an iterator is the iterator itself
    return seq_adjoint(list(g) + [0.0] * (len(obj) - len(g)) if hasattr(obj, "__len__") else g, obj)


def zip_seq(*xs):
    """The sequences a ``for ... in zip(*xs)`` loop walks by index: lists, tuples and arrays as
    they are; for an iterator, exactly the values Python's zip takes from it."""
    if not any(isinstance(x, Iter) for x in xs):
        return tuple(seq(x) for x in xs)
    rows = list(zip(*xs))
    return tuple(x if type(x) in (list, tuple, range) or _is_array(x) else
                 [r[j] for r in rows] for j, x in enumerate(xs))


def zip_seq_adjoint(g, xs, ans):
    if is_zero(g):
        return (0.0,) * len(xs)
    return tuple(gj if isinstance(x, Iter) else seq_adjoint_of(gj, x)
                 for gj, x in zip(parts(g, len(xs)), xs))


# -- + and * on lists and tuples (concatenation and repetition) -----------------------------------
def seq_add(a, b):
    return a + b


def seq_iadd(a, b):
    """``a += b`` of a list, tuple or deque, as a new value (as the lowering makes it, see
    classify/writes.py for the names that may share ``a``): a list's or deque's ``+=`` takes any
    iterable, where its ``+`` takes only its own type."""
    ta = type(a)
    if ta is not type(b) and (ta is list or ta is deque):
        b = list(b) if ta is list else deque(b)
    return a + b


def seq_mul(a, b):
    return a * b


def _is_seq(x):
    return isinstance(x, (list, tuple, deque))


def _seq_as(x, items):
    """Adjoints ``items`` in the structure of the sequence ``x`` (a deque's adjoint is a list)."""
    return list(items) if isinstance(x, deque) else type(x)(items)


def add_part(g, a, b, which):
    """Adjoint of ``a + b`` for a (which=0) or b (1): a slice of g when it concatenated
    sequences, else summed down to the operand's shape (broadcasting)."""
    x = a if which == 0 else b
    if _is_seq(a) and _is_seq(b):
        if is_zero(g):
            return 0.0
        g = list(g)
        return _seq_as(x, (_z(v) for v in (g[:len(a)] if which == 0 else g[len(a):])))
    return unbroadcast(g, x)


def add_part_tangent(t, a, b, which):
    """Tangent of ``a + b`` from a (which=0) or b (1): zeros for the other part of a
    concatenation."""
    if _is_seq(a) and _is_seq(b):
        from .tangents import materialize, zeros_like
        x, other = (a, b) if which == 0 else (b, a)
        mine, pad = list(materialize(t, x)), list(zeros_like(other))
        return type(a)(mine + pad if which == 0 else pad + mine)
    return t


def mul_part(g, a, b, which):
    """Adjoint of ``a * b`` for a (which=0) or b (1); for a repeated sequence (``[x] * 3``) the
    repeats' adjoints add up."""
    x, other = (a, b) if which == 0 else (b, a)
    if _is_seq(x) and isinstance(other, int):
        if is_zero(g):
            return 0.0
        g, n = list(g), len(x)
        out = [0.0] * n
        for k, v in enumerate(g):
            out[k % n] = add(out[k % n], _z(v))
        return _seq_as(x, out)
    return unbroadcast(g * cj(other), x)


def mul_part_tangent(t, a, b, which):
    x, other = (a, b) if which == 0 else (b, a)
    if _is_seq(x) and isinstance(other, int):
        from .tangents import materialize
        return type(x)(list(materialize(t, x)) * other)
    return t * other


def loop_seq(x):
    """:func:`seq` for a loop with ``break``/``return``, or whose body reads the iterable it
    walks (see :func:`_mark_loop`)."""
    _mark_loop(x)
    return seq(x)


def loop_zip_seq(*xs):
    for x in xs:
        _mark_loop(x)
    return zip_seq(*xs)
