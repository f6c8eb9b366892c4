"""s2sad's iterators: :class:`Iter` (a lazy iterator that remembers what it yielded),
:class:`Cursor` (the values one consuming call took), :class:`LazyList` (tangents known once the
iterator is consumed), and the adjoints and tangents of ``here``, ``next`` and the iterator
makers (``izip``, ``ienumerate``...).
"""

from .arrays import _is_array, is_zero


# -- iterators: materialised once, where Python consumes them -------------------------------------
# Inside a derivative, zip/enumerate/reversed/iter/map/filter make an :class:`Iter`: it pulls from
# the real iterator lazily, exactly as Python would (an exhausted one yields nothing), and keeps the
# values it yielded.  Each call that consumes an iterator gets a :class:`Cursor` (``_rt.here(it)``),
# which records which of its parent's values that call took.  The adjoint of an iterator is the
# list of its yielded values' adjoints; a cursor's adjoint is scattered back to those positions.
class Iter:
    """A lazy iterator that remembers what it yielded (``seen``).  ``loop``: the origin of a
    loop that took all its values at once and may have stopped early (see :func:`loop_seq`)."""
    __slots__ = ("_src", "seen", "loop")

    def __init__(self, src):
        self._src = iter(src)
        self.seen = []
        self.loop = None

    def __iter__(self):
        return self

    def __next__(self):
        v = next(self._src)
        self.seen.append(v)
        return v

    def __repr__(self):
        return f"<s2sad iterator, {len(self.seen)} value(s) taken>"


class Cursor(Iter):
    """The values one consuming call took from an :class:`Iter` (or from another cursor):
    ``idx`` are their positions in the parent's ``seen``."""
    __slots__ = ("parent", "idx")

    def __init__(self, parent):
        self.parent = parent
        self.seen = []
        self.idx = []
        self.loop = None

    def __next__(self):
        p = self.parent
        i = len(p.seen)
        v = next(p)
        self.idx.append(i)
        self.seen.append(v)
        return v


def here(x):
    """What a consuming call gets for ``x``: a :class:`Cursor` on an iterator (so the call's share
    of the values is known later), ``x`` itself for lists, tuples, arrays, dicts, views."""
    if isinstance(x, Iter):
        if x.loop is not None:
            _refuse_after_loop()
        return Cursor(x)
    if type(x) in (list, tuple, dict, range) or _is_array(x) or not hasattr(x, "__next__"):
        return x
    return Cursor(Iter(x))          # an iterator from outside (a generator, a raw zip object)


def listed(x):
    """The values ``x`` yielded (an iterator, after the fact) or yields (anything else)."""
    if isinstance(x, Iter):
        return x.seen
    return list(x)


def here_adjoint(g, x, ans):
    """Adjoint of :func:`here`: a cursor's adjoints go back to its positions in ``x``."""
    if is_zero(g) or not isinstance(ans, Cursor):
        return g                    # (x itself: a list, array... possibly a saved copy of it)
    # an iterator made elsewhere (a raw zip object that a call resolved at run time returned,
    # ``zip(*pair)``; an argument) has no Iter of its own: its values' adjoints, in the order it
    # yielded them, go to whatever made it (that call's pullback; an argument's are dropped).
    # (It was 0.0: a zero gradient through ``zip(*m)``.)
    n = len(x.seen) if isinstance(x, Iter) else len(ans.parent.seen)
    out = [0.0] * n
    for i, gi in zip(ans.idx, g):
        if not is_zero(gi):
            out[i] = gi if is_zero(out[i]) else out[i] + gi
    return out


class LazyList:
    """The tangents of an iterator's values, known only once the iterator has been consumed: a
    list computed when it is read (forward mode reads it after the consuming call)."""
    __slots__ = ("_make",)

    def __init__(self, make):
        self._make = make

    def resolve(self):
        return self._make()

    def __iter__(self):
        return iter(self._make())

    def __len__(self):
        return len(self._make())

    def __getitem__(self, k):
        return self._make()[k]


def resolve(t):
    return t.resolve() if type(t) is LazyList else t


def here_tangent(t, x, ans):
    """Tangent of :func:`here`: the parent's tangents at the positions the cursor took."""
    if is_zero(t) or not isinstance(ans, Cursor):
        return t
    # (an iterator made elsewhere, a raw zip object: its tangent lists its values' tangents in
    # the order it yields them, the positions the cursor took; see here_adjoint)
    return LazyList(lambda: [_elem(resolve(t), i) for i in ans.idx])


def _elem(t, i):
    if is_zero(t):
        return 0.0
    return t[i] if i < len(t) else 0.0


def izip(*iterables, strict=False):
    return Iter(zip(*iterables, strict=strict))


def ienumerate(iterable, start=0):
    return Iter(enumerate(iterable, start))


def ireversed(seq):
    return Iter(reversed(seq))


def iiter(obj):
    return obj if isinstance(obj, Iter) else Iter(obj)


_NO_DEFAULT = object()


def next_adjoint(g, it):
    """Adjoint of ``next(it)`` for the iterator: its one value (if it gave one)."""
    if is_zero(g):
        return 0.0
    return [g] if getattr(it, "idx", None) else []


def next_default_adjoint(g, it):
    return 0.0 if getattr(it, "idx", None) else g


def next_tangent(t, it, ans):
    return resolve(t)[0] if getattr(it, "idx", None) and not is_zero(t) else 0.0


def next_default_tangent(t, it):
    return 0.0 if getattr(it, "idx", None) else t


def _mark_loop(x):
    """A loop that may stop early (break/return), or whose body reads the iterable it walks,
    walks the values of iterator ``x``: s2sad takes them all first, so a use of the iterator in
    the body or after the loop could not see what Python would."""
    while isinstance(x, Iter):
        x.loop = True
        x = getattr(x, "parent", None)


def _refuse_after_loop():
    from ..errors import UnsupportedSyntaxError
    raise UnsupportedSyntaxError(
        "an iterator is used again inside or after a `for` loop that walked it and that may have "
        "stopped early (break or return) or uses it in its body; s2sad takes a loop's values "
        "before it runs, so it cannot know which values are left", fix="take the values into a "
            "list first (`items = list(it)`), loop over it, and use `items[k:]` for the rest")
