"""What forward-mode derivatives compiled with ``jit=True`` call as ``_fw.*``: the tangent helpers
of :mod:`.tangents` and :mod:`.forward` again, for ``numba.njit``.

The same pattern as :mod:`.jit` (``_rt``): each helper is a Python stub with a numba ``overload``
whose body numba picks by the argument types when it compiles the derivative; a type no body here
handles is a typing error, which ``codegen/jit.py`` turns into a fallback to Python with one
warning naming the user's line.  Any ``_fw`` helper not listed in :func:`namespace` (dynamic call
sites, objects, containers) is the AttributeError of :func:`.jit.missing`: that derivative runs
as Python.

A rule without a tangent template (``jvp=``) has its tangent computed from its adjoint template,
one output element at a time (``codegen/forward.py``, ``_vjp_loop``): ``(J t)_k = <J^T e_k, t>``.
:func:`basis`, :func:`inner`, :func:`put`, :func:`out_size` and :func:`out_zeros` are the pieces of
that loop; they have bodies for real floats and real float arrays only (a complex output needs the
second direction ``i e_k``: it runs as Python, as :func:`.forward.jvp_by_vjp`).  Imports numba:
only ``jit=True`` imports this module.
"""
import numpy as np
from numba.core import types as nt
from numba.extending import overload

from . import jit as _jrt


def _real_float(t):
    d = t.dtype if isinstance(t, nt.Array) else t
    return isinstance(d, nt.Float)


# -- the stubs (called only inside compiled derivatives) ------------------------------------------
def zeros_like(x):
    raise NotImplementedError("s2sad: _fw.zeros_like runs inside numba-compiled derivatives only")


def bcast(t, ans):
    raise NotImplementedError


def into(t, dest):
    raise NotImplementedError


def out_zeros(ans):
    raise NotImplementedError


def out_size(ans):
    raise NotImplementedError


def basis(ans, k):
    raise NotImplementedError


def inner(a, t):
    raise NotImplementedError


def put(out, k, v):
    raise NotImplementedError


def seq_tangent(t, x, ans):
    raise NotImplementedError


# -- their bodies ---------------------------------------------------------------------------------
@overload(zeros_like)
def _zeros_like(x):
    """``runtime.tangents.zeros_like``: 0.0 for a real number, 0j for a complex one, a floating
    zero array (float64 for integer arrays) for an array."""
    if isinstance(x, nt.Array):
        dt = _jrt._float_dtype(x)
        return lambda x: np.zeros(x.shape, dt)
    if isinstance(x, nt.Complex):
        return lambda x: 0j
    if isinstance(x, (nt.Float, nt.Integer, nt.Boolean)):
        return lambda x: 0.0


@overload(bcast)
def _bcast(t, ans):
    """``runtime.tangents.bcast``: ``t`` broadcast to the shape of ``ans`` (a copy), or ``t``
    itself where it has that shape already or ``ans`` has no shape."""
    if not isinstance(ans, nt.Array):
        if isinstance(t, (nt.Float, nt.Integer, nt.Complex, nt.Boolean)):
            return lambda t, ans: t
        return None
    if isinstance(t, nt.Array):
        if t.ndim == ans.ndim:
            def impl(t, ans):
                if t.shape == ans.shape:
                    return t
                return np.broadcast_to(t, ans.shape).copy()
            return impl
        return lambda t, ans: np.broadcast_to(t, ans.shape).copy()
    if isinstance(t, (nt.Float, nt.Integer, nt.Complex)):
        return lambda t, ans: np.full(ans.shape, t)


@overload(into)
def _into(t, dest):
    """``runtime.tangents.into``: the tangent written into ``dest[...]``; an integer or bool
    array keeps none (0)."""
    if isinstance(dest, nt.Array):
        if isinstance(dest.dtype, (nt.Float, nt.Complex)):
            return lambda t, dest: t
        return lambda t, dest: 0.0
    return None


@overload(out_zeros)
def _out_zeros(ans):
    if not _real_float(ans):
        return None
    if isinstance(ans, nt.Array):
        dt = ans.dtype
        return lambda ans: np.zeros(ans.shape, dt)
    return lambda ans: 0.0


@overload(out_size)
def _out_size(ans):
    if not _real_float(ans):
        return None
    if isinstance(ans, nt.Array):
        return lambda ans: ans.size
    return lambda ans: 1


@overload(basis)
def _basis(ans, k):
    """The ``k``-th unit cotangent of a real output: ``1.0`` for a number, an array shaped like
    ``ans`` with one 1 at flat position ``k``."""
    if not _real_float(ans):
        return None
    if isinstance(ans, nt.Array):
        dt = ans.dtype

        def impl(ans, k):
            e = np.zeros(ans.size, dt)
            e[k] = 1.0
            return e.reshape(ans.shape)
        return impl
    return lambda ans, k: 1.0


@overload(inner)
def _inner(a, t):
    """The real inner product of an adjoint ``a`` and a tangent ``t`` of one input (same shape;
    a number and a number)."""
    if not (_real_float(a) or isinstance(a, nt.Integer)) or \
            not (_real_float(t) or isinstance(t, nt.Integer)):
        return None
    if isinstance(a, nt.Array) and isinstance(t, nt.Array):
        def impl(a, t):
            if a.shape != t.shape:
                raise ValueError(_jrt.REFUSED)    # (the Python derivative decides)
            return np.sum(a * t)
        return impl
    if isinstance(a, nt.Array) or isinstance(t, nt.Array):
        return lambda a, t: np.sum(a * t)
    return lambda a, t: a * t


@overload(put)
def _put(out, k, v):
    """``out`` with its flat element ``k`` set to ``v`` (an array, written in place), or ``v``
    (a number: the only element)."""
    if isinstance(out, nt.Array):
        def impl(out, k, v):
            out.reshape(-1)[k] = v
            return out
        return impl
    if isinstance(out, nt.Float):
        return lambda out, k, v: float(v)


@overload(seq_tangent)
def _seq_tangent(t, x, ans):
    """``runtime.tangents.seq_tangent`` of the loop sequence ``_rt.seq(x)`` of an array or a
    list (compiled, the value itself): the tangent itself.  ``list(a)`` of an array (a new list,
    which a later write into ``a`` does not change): a copy of the tangent, which a write into
    ``a``'s tangent does not change either."""
    if _jrt._walkable(x) and isinstance(t, nt.Array) and isinstance(ans, nt.List):
        return lambda t, x, ans: t.copy()
    if _jrt._walkable(x) and isinstance(t, (nt.Array, nt.List)):
        return lambda t, x, ans: t
    if isinstance(x, nt.UniTuple) and isinstance(t, nt.UniTuple) and \
            len(t.types) == len(x.types):
        return lambda t, x, ans: t      # (a tuple's tangent: a tuple of its items')


def zip_seq_tangent(t, xs, ans):
    raise NotImplementedError


@overload(zip_seq_tangent)
def _zip_seq_tangent(t, xs, ans):
    """``runtime.tangents.zip_seq_tangent``: each zipped sequence's :func:`seq_tangent`."""
    if isinstance(t, nt.BaseTuple) and isinstance(xs, nt.BaseTuple) and \
            isinstance(ans, nt.BaseTuple) and len(t.types) == len(xs.types) == len(ans.types):
        return _jrt._tuple_fn(len(t.types), "seq_tangent(t[{i}], xs[{i}], ans[{i}])",
                              "t, xs, ans", {"seq_tangent": seq_tangent})


def sum_tangent(t, iterable, ans):
    raise NotImplementedError


@overload(sum_tangent)
def _sum_tangent(t, iterable, ans):
    """``runtime.tangents.sum_tangent`` of builtin ``sum``: the items' tangents added from the
    first, for a list of numbers or a 1-d real array (its tangent a list or a 1-d array); for an
    array of more dimensions, the tangent summed over its first axis."""
    if _jrt._numbers(iterable) and _jrt._numbers(t) and _real_float(ans):
        def impl(t, iterable, ans):
            if len(t) != len(iterable):
                raise ValueError(_jrt.SHAPE_ERROR)
            out = 0.0
            for v in t:
                out += v
            return out
        return impl
    if isinstance(iterable, nt.Array) and iterable.ndim > 1 and isinstance(t, nt.Array) and \
            t.ndim == iterable.ndim and _real_float(t) and isinstance(ans, nt.Array):
        def rows(t, iterable, ans):
            if t.shape != iterable.shape:
                raise ValueError(_jrt.SHAPE_ERROR)
            return t.sum(axis=0)
        return rows


def extremum_tangent(t, args, key, pick):
    raise NotImplementedError


@overload(extremum_tangent)
def _extremum_tangent(t, args, key, pick):
    """``runtime.tangents.extremum_tangent`` of the builtin ``max``/``min`` of several real
    numbers, or of one list of them or 1-d real array, without ``key``: the tangent of the item
    Python picks (the first of equal ones), as ``_rt.extremum_adjoint`` picks it."""
    sign = _jrt.pick_sign(pick)
    if not sign or not isinstance(key, nt.NoneType) or not isinstance(args, nt.BaseTuple) or \
            not isinstance(t, nt.BaseTuple) or len(t.types) != len(args.types):
        return None
    n = len(args.types)
    if n >= 2 and isinstance(args, nt.UniTuple) and isinstance(args.dtype, nt.Float) and \
            all(isinstance(ti, (nt.Float, nt.Integer)) for ti in t.types):
        pick_t = _jrt.register_jitable(_choose(n))
        return lambda t, args, key, pick: pick_t(t, _jrt._first_best(args, sign))
    if n == 1 and _jrt._numbers(args.types[0]) and isinstance(args.types[0].dtype, nt.Float) \
            and _jrt._numbers(t.types[0]):
        def impl1(t, args, key, pick):
            x, tx = args[0], t[0]
            if len(tx) != len(x):
                raise ValueError(_jrt.SHAPE_ERROR)
            return float(tx[_jrt._first_best(x, sign)])
        return impl1


def sorted_tangent(t, iterable, key=None, reverse=False):
    raise NotImplementedError


@overload(sorted_tangent)
def _sorted_tangent(t, iterable, key=None, reverse=False):
    """``runtime.tangents.sorted_tangent`` without ``key``, of a list of floats or a 1-d float
    array: the items' tangents in the order of the sorted list (a list)."""
    if not ((key is None or isinstance(key, (nt.NoneType, nt.Omitted))) and
            _jrt._numbers(iterable) and
            isinstance(iterable.dtype, nt.Float) and _jrt._numbers(t)):
        return None

    def impl(t, iterable, key=None, reverse=False):
        if len(t) != len(iterable):
            raise ValueError(_jrt.SHAPE_ERROR)
        order = _jrt.sorted_order(iterable, reverse)
        return [float(t[order[pos]]) for pos in range(len(order))]
    return impl


def _choose(n):
    """A function ``(t, best) -> float(t[best])`` for an n-tuple ``t`` of numbers whose items
    may differ in type (an integer zero among floats)."""
    body = "".join(f"    if best == {k}:\n        return float(t[{k}])\n" for k in range(n - 1))
    src = f"def choose(t, best):\n{body}    return float(t[{n - 1}])\n"
    ns = {}
    exec(src, ns)
    return ns["choose"]


def namespace():
    """A module holding the compiled helpers under the names generated forward code uses
    (``_fw``)."""
    return _jrt.helper_module("s2sad_jit_forward", "_fw", (
        "zeros_like", "bcast", "into", "out_zeros", "out_size", "basis", "inner", "put",
        "seq_tangent", "zip_seq_tangent", "sum_tangent", "extremum_tangent",
        "sorted_tangent"), globals())

