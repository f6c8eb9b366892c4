"""What derivatives compiled with ``jit=True`` call as ``_rt.*``: the run-time helpers of
``runtime/`` again, for ``numba.njit``.

Each helper is a Python stub with a numba ``overload``: numba picks the body by the types of the
arguments when it compiles the derivative, so the code generated for a float is the float's
(``unbroadcast(g, x)`` between two floats is ``g``; ``cj`` of a real is the value itself).  A type
that no body here handles is a typing error, which ``codegen/jit.py`` turns into a fallback to
Python with one warning naming the user's line.  This module imports numba: only ``jit=True``
imports it.

The semantics are those of the Python helpers (``runtime/arrays.py``, ``runtime/indexing.py``),
restricted to floats, complex numbers and arrays of them with basic indices (integers and
slices); anything else does not compile, and runs as Python.
"""
import types as _types

import numpy as np
from numba import njit
from numba.core import types as nt
from numba.core.errors import TypingError
from numba.cpython.unsafe.tuple import tuple_setitem  # noqa: F401 (rules/jit.py reads it)
from numba.extending import overload, register_jitable

_SCALAR = (nt.Float, nt.Integer, nt.Boolean)
SHAPE_ERROR = "s2sad-jit: an adjoint changed shape"
MISSING = "s2sad-jit: no numba version of"


def _is_scalar(t):
    return isinstance(t, _SCALAR)


def _is_complex(t):
    if isinstance(t, nt.Complex):
        return True
    return isinstance(t, nt.Array) and isinstance(t.dtype, nt.Complex)


_NUMBER = (nt.Float, nt.Integer, nt.Boolean)       # the items of a list of numbers


def _tree(t):
    """An array, a number, or a tuple of those (nested too): what a tuple argument, its
    adjoint and its items are in compiled code."""
    if isinstance(t, nt.BaseTuple):
        return bool(t.types) and all(_tree(x) for x in t.types)
    return isinstance(t, (nt.Array, nt.Complex) + _SCALAR)


def _any_index(x, idx):
    """``x[idx]`` with an integer known only at run time, of a tuple whose items have one type
    (``ws[i]``, ``for w in ws``): a tuple of arrays or numbers."""
    return isinstance(x, nt.UniTuple) and _tree(x) and isinstance(idx, nt.Integer) and \
        not isinstance(idx, nt.IntegerLiteral)


def _basic_index(idx):
    """Integers, slices, ``None`` (a new axis), and tuples of them: indices whose ``a[idx] += g``
    adds each element once."""
    one = (nt.Integer, nt.SliceType, nt.NoneType)
    if isinstance(idx, one):
        return True
    return isinstance(idx, nt.BaseTuple) and all(isinstance(t, one) for t in idx.types)


def _gather_index(idx, x, contiguous=True):
    """A 1-d integer array (``x[idx]``: rows of x, repeats allowed), or a boolean mask of a 1-d
    x's shape (``x[mask]``): indices whose adjoint ``_scatter_rows``/``_scatter_mask`` add."""
    if not isinstance(idx, nt.Array) or not isinstance(x, nt.Array):
        return None
    if isinstance(idx.dtype, nt.Integer) and idx.ndim == 1:
        return "rows"
    if isinstance(idx.dtype, nt.Boolean) and idx.ndim == x.ndim == 1 and \
            (x.layout == "C" or not contiguous):        # (numba indexes with 1-d masks only)
        return "mask"
    return None


def _points(idx, x):
    """``x[i, j, ...]`` with one 1-d integer array per dimension of ``x`` (the points
    (i[m], j[m], ...)): their number, else None."""
    if isinstance(idx, nt.BaseTuple) and isinstance(x, nt.Array) and len(idx.types) >= 2 and \
            len(idx.types) == x.ndim and \
            all(isinstance(t, nt.Array) and isinstance(t.dtype, nt.Integer) and t.ndim == 1
                for t in idx.types):
        return len(idx.types)
    return None


def _points_fn(k, body, args, shape_of):
    """A jitable function of ``args`` looping over the points of ``idx`` (``k`` arrays) in the
    array ``shape_of``: ``body`` reads ``{pos}``, the point as an index tuple (each index from the
    end where negative)."""
    pos = ", ".join(f"idx[{d}][m] % shape[{d}]" for d in range(k))
    src = (f"def f({args}):\n"
           f"    shape = {shape_of}.shape\n"
           f"    for d in range({k}):\n"
           f"        if idx[d].shape[0] != idx[0].shape[0]:\n"
           f"            raise IndexError('shape mismatch: indexing arrays could not be "
           f"broadcast together')\n"
           + body.format(pos=f"({pos},)"))
    ns = dict(globals())
    exec(src, ns)
    return register_jitable(ns["f"])


def _points_add(k):
    """``acc[i[m], j[m], ...] += g[m]`` for every point (repeated ones add up), returning acc."""
    return _points_fn(k, "    for m in range(idx[0].shape[0]):\n"
                         "        acc[{pos}] += g[m]\n    return acc\n", "acc, idx, g", "acc")


@register_jitable
def _scatter_rows(acc, idx, g):
    """acc[idx] += g with repeated indices each added (np.add.at): rows of acc."""
    n = acc.shape[0]
    for k in range(idx.size):
        i = idx[k]
        if i < 0:
            i += n
        acc[i] += g[k]
    return acc


@register_jitable
def _scatter_mask(acc, mask, g):
    """acc[mask] += g, g holding the selected elements in C order; acc C-contiguous."""
    if mask.shape != acc.shape:
        raise IndexError("s2sad jit: a boolean index of another shape than the array")
    flat = acc.reshape(acc.size)
    m = np.ascontiguousarray(mask).reshape(mask.size)
    j = 0
    for k in range(m.size):
        if m[k]:
            flat[k] += g[j]
            j += 1
    return acc


def _float_dtype(x):
    """The dtype of an adjoint of array type ``x``: its own if floating, else float64."""
    d = x.dtype
    return d if isinstance(d, (nt.Float, nt.Complex)) else nt.float64


# -- the stubs (called only inside compiled derivatives) ------------------------------------------
def zero_of(x):
    raise NotImplementedError("s2sad: _rt.zero_of runs inside numba-compiled derivatives only")


def acc(a, b):
    raise NotImplementedError


def is_zero(a):
    raise NotImplementedError


def cj(x):
    raise NotImplementedError


def real_like(g, x):
    raise NotImplementedError


def unbroadcast(g, x):
    raise NotImplementedError


def getitem_adjoint(g, x, idx):
    raise NotImplementedError


def acc_getitem(acc, x, idx, g):
    raise NotImplementedError


def setitem_adjoint(g, idx):
    raise NotImplementedError


def setitem_value_adjoint(g, idx, v):
    raise NotImplementedError


def add(a, b):
    raise NotImplementedError


def snap(v):
    raise NotImplementedError


def own(g, x):
    raise NotImplementedError


def pow_base_adjoint(g, a, b):
    raise NotImplementedError


def pow_exponent_adjoint(g, ans, a):
    raise NotImplementedError


def abs_adjoint(g, x):
    raise NotImplementedError


def inexact(a):
    raise NotImplementedError


def keep_if(keep, g):
    raise NotImplementedError


# -- their bodies ---------------------------------------------------------------------------------
@overload(inexact)
def _inexact(a):
    """Whether a value written into ``a`` keeps its derivative: not for an integer or bool array,
    which truncates it (the Python mode's ``_rt.dtype_of`` and ``_rt.dtype_guard``; see
    codegen/reverse/shapes.py); known from the type, so a constant."""
    if isinstance(a, nt.Array):
        keeps = isinstance(a.dtype, (nt.Float, nt.Complex))
        return lambda a: keeps
    return lambda a: True


@overload(keep_if)
def _keep_if(keep, g):
    """``g`` (an adjoint), or a zero of its type when ``keep`` is false."""
    if isinstance(g, nt.Array):
        def impl(keep, g):
            return g if keep else np.zeros_like(g)
        return impl
    if isinstance(g, nt.Complex):
        return lambda keep, g: g if keep else 0j
    if _is_scalar(g):
        return lambda keep, g: g if keep else 0.0 * g


@overload(zero_of)
def _zero_of(x):
    if isinstance(x, nt.BaseTuple) and _tree(x):
        return _tuple_fn(len(x.types), "zero_of(x[{i}])", "x")
    if isinstance(x, nt.Array):
        dt = _float_dtype(x)
        return lambda x: np.zeros(x.shape, dt)
    if isinstance(x, nt.Complex):
        return lambda x: 0j
    if _is_scalar(x):
        return lambda x: 0.0
    if isinstance(x, (nt.List, nt.ListType)) and isinstance(x.dtype, _NUMBER):
        return lambda x: np.zeros(len(x), np.float64)   # (a list's adjoint: a 1-d array)


@overload(acc)
def _acc(a, b):
    if isinstance(a, nt.BaseTuple) and isinstance(b, nt.BaseTuple) and _tree(a) and _tree(b) \
            and len(a.types) == len(b.types):
        return _tuple_fn(len(a.types), "acc(a[{i}], b[{i}])", "a, b")     # (item by item)
    if isinstance(a, nt.Array) and isinstance(b, nt.Array):
        def impl(a, b):
            if a.shape != b.shape:
                raise ValueError(SHAPE_ERROR)
            return a + b
        return impl
    if isinstance(a, nt.Array) and (_is_scalar(b) or isinstance(b, nt.Complex)):
        return lambda a, b: a + b
    if (_is_scalar(a) or isinstance(a, nt.Complex)) and (_is_scalar(b) or isinstance(b, nt.Complex)):
        return lambda a, b: a + b           # (an 'a'-kind value that is a NumPy scalar here)
    if (_is_scalar(a) or isinstance(a, nt.Complex)) and (_is_scalar(b) or
                                                        isinstance(b, nt.Complex)):
        return lambda a, b: a + b


@overload(is_zero)
def _is_zero(a):
    if isinstance(a, nt.NoneType):
        return lambda a: True
    if isinstance(a, nt.BaseTuple):
        return lambda a: False          # (a tuple's adjoint: its zeros are added as they are)
    if _is_scalar(a) or isinstance(a, nt.Complex):
        return lambda a: a == 0
    if isinstance(a, nt.Array):
        # every element zero: a zero filled in where branches joined (zeros, in compiled code)
        # must skip its statement as Python mode's 0.0 does, or `zeros * inf` gives nan for a
        # value the output does not depend on.  Stops at the first non-zero element (the first,
        # for most adjoints); a nan is not zero.
        def impl(a):
            for v in a.flat:
                if v != 0:
                    return False
            return True
        return impl


@overload(cj)
def _cj(x):
    if _is_complex(x):
        return lambda x: np.conj(x)
    if _is_scalar(x) or isinstance(x, nt.Array):
        return lambda x: x


@overload(real_like)
def _real_like(g, x):
    if _is_complex(g) and not _is_complex(x):
        return lambda g, x: g.real
    return lambda g, x: g


@register_jitable
def advance(idx, pos, step, shape):
    """The next index ``idx`` of an array of ``shape`` in C order (the last axis fastest), in
    place, and the position ``pos`` moved by the steps of the axes it changed."""
    d = len(shape) - 1
    while d >= 0:
        idx[d] += 1
        pos += step[d]
        if idx[d] < shape[d]:
            break
        pos -= step[d] * shape[d]
        idx[d] = 0
        d -= 1
    return pos


@register_jitable
def _reduce_to(g, x, out):
    """Sum ``g`` into ``out`` (shaped like ``x``, C-contiguous) over the axes NumPy broadcast
    ``x`` along.  One pass over ``g`` in C order: rows of its last axis, each added into ``out``
    with that axis's step there (0 where it is summed: then into one register), the position in
    ``out`` carried from row to row (no division per element)."""
    nd = g.ndim
    gf = np.ascontiguousarray(g).ravel()
    of = out.ravel()
    if nd == 0 or gf.size == 0:
        if gf.size:
            of[0] += gf[0]
        return out
    gs = g.shape
    xs = x.shape
    lead = nd - x.ndim
    step = np.zeros(nd, np.intp)            # out's step along each axis of g (0: summed)
    s = 1
    for d in range(nd - 1, -1, -1):
        xd = d - lead
        if xd >= 0:
            if xs[xd] != 1:
                step[d] = s
            s *= xs[xd]
    inner = gs[nd - 1]
    st = step[nd - 1]
    rows = np.empty(nd - 1, np.intp)        # the shape of the rows' outer axes
    for d in range(nd - 1):
        rows[d] = gs[d]
    row_step = step[:nd - 1]
    pos = np.zeros(nd - 1, np.intp)
    base = 0
    k = 0
    for _ in range(gf.size // inner):
        if st == 0:
            t = gf[k] * 0
            for c in range(inner):
                t += gf[k + c]
            of[base] += t
        else:
            o = base
            for c in range(inner):
                of[o] += gf[k + c]
                o += st
        k += inner
        base = advance(pos, base, row_step, rows)      # the next row
    return out


@overload(unbroadcast)
def _unbroadcast(g, x):
    if _is_scalar(x):
        if isinstance(g, nt.Complex):
            return lambda g, x: g.real
        if _is_scalar(g):
            return lambda g, x: g
        if isinstance(g, nt.Array):
            if _is_complex(g):
                return lambda g, x: array_sum(g).real
            return lambda g, x: array_sum(g)
    if isinstance(x, nt.Complex):
        if _is_scalar(g) or isinstance(g, nt.Complex):
            return lambda g, x: g
        if isinstance(g, nt.Array):
            return lambda g, x: array_sum(g)
    if isinstance(x, nt.Array):
        dt = _float_dtype(x)
        drop_imag = _is_complex(g) and not _is_complex(x)
        if _is_scalar(g) or isinstance(g, nt.Complex):
            if drop_imag:
                return lambda g, x: np.full(x.shape, g.real, dt)
            return lambda g, x: np.full(x.shape, g, dt)
        if isinstance(g, nt.Array):
            if g.ndim == x.ndim and not drop_imag:
                if g.dtype == dt:
                    # g itself where nothing is summed, as Python mode's unbroadcast: the only
                    # helpers that write into an adjoint (acc_getitem and its kin) are given
                    # the adjoints of arrays read by indexing alone, which come from
                    # getitem_adjoint, zero_of or own (new arrays), never from unbroadcast
                    def same(g, x):
                        if g.shape == x.shape:
                            return g
                        return _reduce_to(g, x, np.zeros(x.shape, dt))
                    return same

                def impl(g, x):
                    if g.shape == x.shape:
                        return g.astype(dt)
                    return _reduce_to(g, x, np.zeros(x.shape, dt))
                return impl
            if drop_imag:
                return lambda g, x: _reduce_to(np.real(g), x, np.zeros(x.shape, dt))
            return lambda g, x: _reduce_to(g, x, np.zeros(x.shape, dt))


@register_jitable
def _dot4(fa, fb):
    """The sum of ``fa * fb`` (1-d arrays of one size), with four running sums (numba's ``sum``
    adds one value at a time into one, each addition waiting for the one before)."""
    n = fa.size
    t0 = np.zeros(1, fa.dtype)[0]
    t1 = t0
    t2 = t0
    t3 = t0
    i = 0
    while i + 4 <= n:
        t0 += fa[i] * fb[i]
        t1 += fa[i + 1] * fb[i + 1]
        t2 += fa[i + 2] * fb[i + 2]
        t3 += fa[i + 3] * fb[i + 3]
        i += 4
    while i < n:
        t0 += fa[i] * fb[i]
        i += 1
    return (t0 + t1) + (t2 + t3)


@register_jitable
def _pairwise_leaf(f, lo, n):
    """:func:`_pairwise` of at most 128 values: fewer than 8 one by one; else 8 running sums
    combined as ((0+1)+(2+3))+((4+5)+(6+7)), then the rest one by one."""
    if n < 8:
        res = np.zeros(1, f.dtype)[0]
        for i in range(lo, lo + n):
            res += f[i]
        return res
    r0, r1, r2, r3 = f[lo], f[lo + 1], f[lo + 2], f[lo + 3]
    r4, r5, r6, r7 = f[lo + 4], f[lo + 5], f[lo + 6], f[lo + 7]
    i = 8
    m = n - n % 8
    while i < m:
        j = lo + i
        r0 += f[j]
        r1 += f[j + 1]
        r2 += f[j + 2]
        r3 += f[j + 3]
        r4 += f[j + 4]
        r5 += f[j + 5]
        r6 += f[j + 6]
        r7 += f[j + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += f[lo + i]
        i += 1
    return res


@register_jitable
def _pairwise(f):
    """NumPy's pairwise sum of the 1-d array ``f`` (its float add-reduction's order): up to 128
    values by :func:`_pairwise_leaf`; longer halves, split at a multiple of 8, summed apart and
    added (NumPy's recursion, walked here with an explicit stack), so that a contiguous array
    sums to NumPy's value bit for bit."""
    los = np.empty(64, np.intp)
    ns = np.empty(64, np.intp)
    stage = np.empty(64, np.intp)
    vals = np.empty(64, f.dtype)
    los[0], ns[0], stage[0] = 0, f.size, 0
    sp, nv = 1, 0
    while sp > 0:
        t = sp - 1
        lo, n = los[t], ns[t]
        if n <= 128:
            vals[nv] = _pairwise_leaf(f, lo, n)
            nv += 1
            sp -= 1
            continue
        n2 = n // 2
        n2 -= n2 % 8
        if stage[t] == 0:                   # the first half
            stage[t] = 1
            los[sp], ns[sp], stage[sp] = lo, n2, 0
            sp += 1
        elif stage[t] == 1:                 # the second half
            stage[t] = 2
            los[sp], ns[sp], stage[sp] = lo + n2, n - n2, 0
            sp += 1
        else:                               # both done: their sum
            vals[nv - 2] = vals[nv - 2] + vals[nv - 1]
            nv -= 1
            sp -= 1
    return vals[0]


@register_jitable
def array_sum(g):
    """The sum of the array ``g`` over its elements in C order, in NumPy's pairwise order
    (:func:`_pairwise`: NumPy's value for a contiguous array); also ``np.sum(a)``'s numba version
    for real arrays (rules/jit_reductions.py), where numba's adds one element at a time into one
    running sum (another value past 8 elements, and about 4 times slower)."""
    return _pairwise(np.ascontiguousarray(g).ravel())


def sum_product(a, b, x):
    raise NotImplementedError


@overload(sum_product)
def _sum_product(a, b, x):
    """``unbroadcast(a * b, x)`` for a real number ``x`` (the adjoint of x in x * y): for two
    real arrays of one dtype, one pass that multiplies and sums (no product array) where their
    shapes match."""
    if _is_scalar(x) and isinstance(a, nt.Array) and isinstance(b, nt.Array) and \
            not _is_complex(a) and not _is_complex(b) and a.dtype == b.dtype:
        def impl(a, b, x):
            if a.shape != b.shape:
                return unbroadcast(a * b, x)
            fa = np.ascontiguousarray(a).ravel()
            return _dot4(fa, np.ascontiguousarray(b).ravel())
        return impl
    return lambda a, b, x: unbroadcast(a * b, x)


def _item_of_tuple(x, idx):
    """The position (0 <= k < n) a literal integer ``idx`` picks in the tuple type ``x`` of
    arrays and numbers, or None."""
    if not (isinstance(x, nt.BaseTuple) and isinstance(idx, nt.IntegerLiteral) and _tree(x)):
        return None
    n, k = len(x.types), idx.literal_value
    return k % n if -n <= k < n else None


def _list_item(x, idx, g):
    """``x[idx]`` reads an item (a real number ``g``'s) or a slice (a 1-d real array ``g``'s)
    of the list of numbers ``x``."""
    if not (isinstance(x, (nt.List, nt.ListType)) and isinstance(x.dtype, _NUMBER)):
        return False
    if isinstance(idx, nt.Integer):
        return isinstance(g, (nt.Float, nt.Integer))
    return isinstance(idx, nt.SliceType) and isinstance(g, nt.Array) and g.ndim == 1 and \
        isinstance(g.dtype, (nt.Float, nt.Integer))


@overload(getitem_adjoint, prefer_literal=True)
def _getitem_adjoint(g, x, idx):
    k = _item_of_tuple(x, idx)
    if k is not None and (isinstance(g, nt.Float) or
                          (isinstance(g, nt.Array) and isinstance(g.dtype, nt.Float)) or
                          (isinstance(g, nt.BaseTuple) and _tree(g))):
        # a tuple's item (``s, l = np.linalg.slogdet(a)``; ``zip(x, y)``'s sequences; an item
        # of a tuple argument, itself a tuple too): g at k, zeros of the other items elsewhere
        return _tuple_fn(len(x.types), lambda i: "g" if i == k else f"zero_of(x[{i}])",
                         "g, x, idx")
    if _any_index(x, idx) and (isinstance(g, nt.Float) or
                               (isinstance(g, nt.Array) and isinstance(g.dtype, nt.Float))):
        # ws[i]: g at i (zeros plus g, so that every item has one type), zeros elsewhere
        n = len(x.types)
        at = register_jitable(_tuple_fn(
            n, "add_to(zero_of(x[{i}]), g) if k == {i} else zero_of(x[{i}])", "g, x, k",
            {"add_to": globals()["acc"]}))
        return lambda g, x, idx: at(g, x, idx % n)
    if isinstance(x, nt.BaseTuple):
        return None
    k = _points(idx, x)
    if k is not None and isinstance(g, nt.Array) and g.ndim == 1:
        # x[i, j]: each point's g added at it (repeated points add up)
        add = _points_add(k)
        dt = _float_dtype(x)
        return lambda g, x, idx: add(np.zeros(x.shape, dt), idx, real_like(g, x))
    if _list_item(x, idx, g):
        # an item or a slice of a list of numbers, whose adjoint is a 1-d array

        def of_list(g, x, idx):
            out = np.zeros(len(x), np.float64)
            out[idx] += g
            return out
        return of_list
    gather = _gather_index(idx, x, contiguous=False)     # (scattered into new zeros)
    if gather is not None and isinstance(g, nt.Array):
        dt = _float_dtype(x)
        if gather == "rows":
            return lambda g, x, idx: _scatter_rows(np.zeros(x.shape, dt), idx, real_like(g, x))
        return lambda g, x, idx: _scatter_mask(np.zeros(x.shape, dt), idx, real_like(g, x))
    if not isinstance(x, nt.Array) or not _basic_index(idx):
        raise TypingError("s2sad jit: the adjoint of this subscript is not compiled "
                          "(an index other than integers, slices, an integer array or a mask)")
    dt = _float_dtype(x)

    def impl(g, x, idx):
        out = np.zeros(x.shape, dt)
        out[idx] += real_like(g, x)
        return out
    return impl


@overload(acc_getitem, prefer_literal=True)
def _acc_getitem(acc, x, idx, g):
    k = _item_of_tuple(x, idx)
    if k is not None and isinstance(acc, nt.BaseTuple) and len(acc.types) == len(x.types) and \
            _tree(g):
        # a tuple's item (``mu, l = f(t)``): the adjoint of the tuple, g added at k
        return _tuple_fn(len(acc.types), lambda i: f"add_to(acc[{i}], g)" if i == k else
                         f"acc[{i}]", "acc, x, idx, g", {"add_to": globals()["acc"]})
    if _any_index(x, idx) and isinstance(acc, nt.UniTuple) and len(acc.types) == len(x.types) \
            and (_is_scalar(g) or isinstance(g, nt.Array)):
        n = len(x.types)                # ws[i]: g added at i
        at = register_jitable(_tuple_fn(n, "add_to(acc[{i}], g) if k == {i} else acc[{i}]",
                                        "acc, g, k", {"add_to": globals()["acc"]}))
        return lambda acc, x, idx, g: at(acc, g, idx % n)
    if isinstance(acc, nt.BaseTuple):
        return None
    k = _points(idx, acc)
    if k is not None and isinstance(g, nt.Array) and g.ndim == 1:
        add = _points_add(k)
        return lambda acc, x, idx, g: add(acc, idx, real_like(g, acc))
    if _list_item(x, idx, g) and isinstance(acc, nt.Array) and acc.ndim == 1:
        def of_list(acc, x, idx, g):
            acc[idx] += g
            return acc
        return of_list
    gather = _gather_index(idx, acc)
    if gather is not None and isinstance(g, nt.Array):
        if gather == "rows":
            return lambda acc, x, idx, g: _scatter_rows(acc, idx, real_like(g, acc))
        return lambda acc, x, idx, g: _scatter_mask(acc, idx, real_like(g, acc))
    if not isinstance(acc, nt.Array) or not _basic_index(idx):
        raise TypingError("s2sad jit: the adjoint of this subscript is not compiled "
                          "(an index other than integers, slices, an integer array or a mask)")

    def impl(acc, x, idx, g):
        acc[idx] += real_like(g, acc)
        return acc
    return impl


@overload(setitem_adjoint)
def _setitem_adjoint(g, idx):
    if _is_scalar(g):
        return lambda g, idx: g
    if _points(idx, g) is not None:                 # (x[i, j] = v: zeros at the points)
        clear = _points_fn(_points(idx, g), "    out = g.copy()\n"
                           "    for m in range(idx[0].shape[0]):\n"
                           "        out[{pos}] = 0\n    return out\n", "g, idx", "g")
        return lambda g, idx: clear(g, idx)
    if isinstance(g, nt.Array) and _basic_index(idx):
        def impl(g, idx):
            out = g.copy()
            out[idx] = 0
            return out
        return impl


@overload(setitem_value_adjoint)
def _setitem_value_adjoint(g, idx, v):
    if _points(idx, g) is not None:
        # x[i, j] = v: g at each point for v, where a repeated point's last write alone survives
        # (as runtime.indexing._setitem_fancy_adjoint)
        pick = _points_fn(_points(idx, g), "    seen = np.zeros(shape, np.bool_)\n"
                          "    r = np.zeros(idx[0].shape[0], g.dtype)\n"
                          "    for m in range(idx[0].shape[0] - 1, -1, -1):\n"
                          "        p = {pos}\n"
                          "        if not seen[p]:\n"
                          "            r[m] = g[p]\n"
                          "            seen[p] = True\n    return r\n", "g, idx", "g")
        return lambda g, idx, v: unbroadcast(pick(g, idx), v)
    if not (isinstance(g, nt.Array) and _basic_index(idx)):
        return None
    if isinstance(v, nt.Array):
        return lambda g, idx, v: unbroadcast(np.copy(g[idx]), v)
    return lambda g, idx, v: unbroadcast(g[idx], v)


@overload(own)
def _own(g, x):
    """``runtime.indexing.own``: the adjoint ``g`` of the real array ``x`` in a new buffer of x's
    shape (a scalar g, the 0.0 of an adjoint not yet defined, filled in), which the reverse loop
    then writes into element by element."""
    if not isinstance(x, nt.Array) or _is_complex(x) or _is_complex(g):
        return None
    dt = _float_dtype(x)
    if _is_scalar(g):
        return lambda g, x: np.full(x.shape, g, dt)
    if isinstance(g, nt.Array) and g.ndim == x.ndim:
        def impl(g, x):
            if g.shape != x.shape:
                raise ValueError(SHAPE_ERROR)
            return g.astype(dt)         # (always a copy)
        return impl


def reserve(stack, need):
    raise NotImplementedError


@overload(reserve)
def _reserve(stack, need):
    """A stack of saved values (codegen/reverse/stacks.py) with room for ``need`` values (rows,
    for a stack of shapes): itself, or a copy at least twice as long (the values pushed so far
    kept)."""
    if not (isinstance(stack, nt.Array) and stack.ndim in (1, 2) and isinstance(need, nt.Integer)):
        return None
    if stack.ndim == 2:                 # (saved shapes: a row per value)
        def rows(stack, need):
            n = stack.shape[0]
            if need <= n:
                return stack
            out = np.empty((max(need, 2 * n), stack.shape[1]), stack.dtype)
            for i in range(n):
                for j in range(stack.shape[1]):
                    out[i, j] = stack[i, j]
            return out
        return rows

    def impl(stack, need):
        n = stack.shape[0]
        if need <= n:
            return stack
        out = np.empty(max(need, 2 * n), stack.dtype)
        for i in range(n):              # (a loop: a slice assignment costs ~1 s of compile)
            out[i] = stack[i]
        return out
    return impl


@overload(add)
def _add(a, b):
    if isinstance(a, nt.NoneType):
        return lambda a, b: b
    if isinstance(b, nt.NoneType):
        return lambda a, b: a
    ok = (nt.Float, nt.Integer, nt.Complex, nt.Array)
    if isinstance(a, ok) and isinstance(b, ok):
        return lambda a, b: a + b
    if isinstance(a, nt.BaseTuple) and isinstance(b, nt.BaseTuple) and _tree(a) and _tree(b) \
            and len(a.types) == len(b.types):
        return _tuple_fn(len(a.types), "add(a[{i}], b[{i}])", "a, b")     # (item by item)
    if isinstance(a, nt.List) and isinstance(b, nt.List) and \
            isinstance(a.dtype, _NUMBER) and isinstance(b.dtype, _NUMBER):
        def lists(a, b):                # the tangents of two lists of numbers, item by item
            if len(a) != len(b):
                raise ValueError(SHAPE_ERROR)
            return [a[k] + b[k] for k in range(len(a))]
        return lists



@overload(snap)
def _snap(v):
    if isinstance(v, nt.Array):
        return lambda v: v.copy()
    return lambda v: v


def const_of(t):
    """The type a Python float constant takes next to a value of type ``t`` under NumPy 2's
    promotion (a float32 array keeps float32; numba would widen it to float64)."""
    d = t.dtype if isinstance(t, nt.Array) else t
    if isinstance(d, nt.Float):
        return d
    if isinstance(d, nt.Complex):
        return d.underlying_float
    return nt.float64


def _real_or_complex(t):
    """A float or complex scalar, or an array of them (not integers: their Python helpers take
    other paths)."""
    d = t.dtype if isinstance(t, nt.Array) else t
    return isinstance(d, (nt.Float, nt.Complex))


@overload(pow_base_adjoint, prefer_literal=True)
def _pow_base_adjoint(g, a, b):
    """``runtime.arrays.pow_base_adjoint``: a literal integer exponent (``x ** 2``) is decided when
    the derivative compiles, as the Python helper decides it for a Python int."""
    if not (_real_or_complex(a) and isinstance(g, (nt.Float, nt.Complex, nt.Array))):
        return None
    if isinstance(b, nt.IntegerLiteral):
        k = b.literal_value
        C = const_of(g)
        if k == 0:
            return lambda g, a, b: g * C(0.0)
        if k == 1:
            return lambda g, a, b: g
        if k == 2:
            return lambda g, a, b: g * cj(2 * a)
        return lambda g, a, b: g * cj(k * a ** (k - 1))
    if isinstance(b, (nt.Integer, nt.Float)):
        # a Python int or float exponent known only at run time: the helper's branches, by value
        # (g and g * cj(..) must have one type: g's shape is the power's, which is a's here)
        if isinstance(g, nt.Array) and not (isinstance(a, nt.Array) and a.ndim == g.ndim):
            return None
        C = const_of(g)
        if isinstance(b, nt.Float):
            B = const_of(a)             # a float exponent joins a float32 base as float32

            def impl(g, a, b):
                if b == 0:
                    return g * C(0.0)
                bb = B(b)
                if b == 1:
                    return g * cj(bb * a ** 0)
                return g * cj(bb * a ** (bb - B(1)))
            return impl

        def impl(g, a, b):
            if b == 0:
                return g * C(0.0)
            if b == 1:
                return g * cj(b * a ** 0)
            return g * cj(b * a ** (b - 1))
        return impl
    if isinstance(b, nt.Array) and _real_or_complex(b):
        return lambda g, a, b: g * cj(b * a ** (b - 1))


@overload(pow_exponent_adjoint)
def _pow_exponent_adjoint(g, ans, a):
    """``g * cj(ans * safe_log(a))`` for arrays (a Python float base takes a complex logarithm
    below zero in the Python helper: not compiled)."""
    if not isinstance(a, nt.Array):
        return None
    if isinstance(a.dtype, nt.Float):
        C = a.dtype
        return lambda g, ans, a: g * cj(ans * np.where(a > 0, np.log(np.where(a > 0, a, C(1))),
                                                         C(0.0)))
    if isinstance(a.dtype, nt.Complex):
        return lambda g, ans, a: g * cj(ans * np.log(np.where(a == 0, 1, a)))


@overload(abs_adjoint)
def _abs_adjoint(g, x):
    """``runtime.arrays.abs_adjoint`` for real values: g times the sign (0 at 0)."""
    if _is_scalar(x) and isinstance(g, (nt.Float, nt.Integer)):
        return lambda g, x: g * (1.0 if x > 0 else -1.0 if x < 0 else 0.0)
    if isinstance(x, nt.Array) and isinstance(x.dtype, (nt.Float, nt.Integer)):
        return lambda g, x: g * np.sign(x)


def abs_tangent(t, x):
    raise NotImplementedError


def unit(x):
    raise NotImplementedError


@overload(unit)
def _unit(x):
    """``runtime.arrays.unit`` of a real number or array: its sign."""
    if _is_scalar(x) and isinstance(x, (nt.Float, nt.Integer)):
        return lambda x: 1.0 if x > 0 else -1.0 if x < 0 else 0.0
    if isinstance(x, nt.Array) and isinstance(x.dtype, (nt.Float, nt.Integer)):
        return lambda x: np.sign(x)


@overload(abs_tangent)
def _abs_tangent(t, x):
    """``runtime.arrays.abs_tangent`` of a real number or array: t times the sign of x."""
    if _is_scalar(x) and isinstance(t, (nt.Float, nt.Integer)):
        return lambda t, x: t * (1.0 if x > 0 else -1.0 if x < 0 else 0.0)
    if isinstance(x, nt.Array) and isinstance(x.dtype, (nt.Float, nt.Integer)) and \
            (_is_scalar(t) or isinstance(t, nt.Array)):
        return lambda t, x: t * np.sign(x)


# -- sequences a loop or a comprehension walks (runtime/containers.py) ----------------------------
def seq(x):
    raise NotImplementedError


def loop_seq(x):
    raise NotImplementedError


def seq_adjoint_of(g, x):
    raise NotImplementedError


def unappend(g):
    raise NotImplementedError


def parts(g, n):
    raise NotImplementedError


def _walkable(x):
    """What ``seq`` hands back as it is: arrays and lists (a tuple too, when all its items have
    one type)."""
    return isinstance(x, (nt.Array, nt.List, nt.UniTuple))


@overload(seq)
def _seq(x):
    """``runtime.containers.seq``: lists, tuples and arrays as they are."""
    if _walkable(x):
        return lambda x: x


@overload(loop_seq)
def _loop_seq(x):
    """``loop_seq``: :func:`seq` (only iterators, which do not compile, are marked)."""
    if _walkable(x):
        return lambda x: x


@overload(seq_adjoint_of)
def _seq_adjoint_of(g, x):
    """The adjoint of ``seq(x)`` is the same adjoint (for an array or a list; the adjoint of a list
    of floats is a 1-d array of them in compiled code, see ``_adj.array_adjoint_of``)."""
    if isinstance(x, (nt.Array, nt.List)) and isinstance(g, (nt.Array, nt.List)):
        return lambda g, x: g
    if isinstance(x, nt.UniTuple) and isinstance(g, nt.BaseTuple) and \
            len(g.types) == len(x.types):
        return lambda g, x: g           # (a tuple's adjoint: a tuple of its items')


def zip_seq(*xs):
    raise NotImplementedError


def zip_seq_adjoint(g, xs, ans):
    raise NotImplementedError


@overload(zip_seq)
def _zip_seq(*xs):
    """``runtime.containers.zip_seq``: what ``for a, b in zip(x, y)`` walks by index, the lists,
    tuples and arrays as they are (an iterator does not compile)."""
    if xs and all(_walkable(x) for x in xs):
        return lambda *xs: xs


@overload(zip_seq_adjoint)
def _zip_seq_adjoint(g, xs, ans):
    """The adjoints of the zipped sequences: each item of ``g``, the adjoint of one sequence, is
    its adjoint (as :func:`seq_adjoint_of`)."""
    if isinstance(g, nt.BaseTuple) and isinstance(xs, nt.BaseTuple) and \
            len(g.types) == len(xs.types) and \
            all(isinstance(x, (nt.Array, nt.List)) and isinstance(gj, (nt.Array, nt.List)) or
                isinstance(x, nt.UniTuple) and isinstance(gj, nt.BaseTuple)   # (a tuple's)
                for gj, x in zip(g.types, xs.types)):
        return lambda g, xs, ans: g


def loop_zip_seq(*xs):
    raise NotImplementedError


@overload(loop_zip_seq)
def _loop_zip_seq(*xs):
    """``loop_zip_seq``: :func:`zip_seq` (only iterators, which do not compile, are marked)."""
    if xs and all(_walkable(x) for x in xs):
        return lambda *xs: xs


def seq_adjoint(g, seq):
    raise NotImplementedError


def _numbers(t):
    """A list of real numbers, or a 1-d real array: what a list of floats and its adjoint are in
    compiled code."""
    if isinstance(t, (nt.List, nt.ListType)):
        return isinstance(t.dtype, _NUMBER)
    return isinstance(t, nt.Array) and t.ndim == 1 and isinstance(t.dtype, _NUMBER)


@overload(seq_adjoint)
def _seq_adjoint(g, seq):
    """``runtime.containers.seq_adjoint`` of ``list(seq)`` for a 1-d real array or a list of
    numbers, whose adjoint ``g`` (the list's) is a 1-d array or a list of numbers: the same
    values, as an array of the array's float dtype (a new one: the list's adjoint stays its
    own) or as they are for a list."""
    if not (_numbers(seq) and _numbers(g)):
        return None
    if isinstance(seq, nt.Array):
        dt = _float_dtype(seq)

        def impl(g, seq):
            if len(g) != len(seq):
                raise ValueError(SHAPE_ERROR)
            return np.array([g[k] for k in range(len(g))], dt)
        return impl
    return lambda g, seq: g


def add_part(g, a, b, which):
    raise NotImplementedError


def add_part_tangent(t, a, b, which):
    raise NotImplementedError


@overload(add_part, prefer_literal=True)
def _add_part(g, a, b, which):
    """``runtime.containers.add_part``: the adjoint of list ``a`` (which=0) or ``b`` (1) in
    ``a + b`` of two lists of numbers, the slice of ``g`` (a 1-d array or a list) that is its
    part; for numbers and arrays, ``g`` summed to the operand's shape."""
    if not isinstance(which, nt.IntegerLiteral):
        return None
    first = which.literal_value == 0
    if isinstance(a, (nt.List, nt.ListType)) and isinstance(b, (nt.List, nt.ListType)):
        if not (_numbers(a) and _numbers(b) and _numbers(g)):
            return None
        if first:
            return lambda g, a, b, which: g[:len(a)]
        return lambda g, a, b, which: g[len(a):]
    ok = (nt.Float, nt.Integer, nt.Array)
    if isinstance(a, ok) and isinstance(b, ok):
        if first:
            return lambda g, a, b, which: unbroadcast(g, a)
        return lambda g, a, b, which: unbroadcast(g, b)


@overload(add_part_tangent, prefer_literal=True)
def _add_part_tangent(t, a, b, which):
    """``runtime.containers.add_part_tangent``: for two lists of numbers, the tangent ``t`` of
    one part (a list) with zeros for the other; else ``t``."""
    if not isinstance(which, nt.IntegerLiteral):
        return None
    if isinstance(a, (nt.List, nt.ListType)) and isinstance(b, (nt.List, nt.ListType)):
        if not (_numbers(a) and _numbers(b) and isinstance(t, nt.List) and _numbers(t)):
            return None
        if which.literal_value == 0:
            return lambda t, a, b, which: [float(v) for v in t] + [0.0] * len(b)
        return lambda t, a, b, which: [0.0] * len(a) + [float(v) for v in t]
    ok = (nt.Float, nt.Integer, nt.Array)
    if isinstance(a, ok) and isinstance(b, ok):
        return lambda t, a, b, which: t


@overload(unappend)
def _unappend(g):
    """``runtime.containers.unappend``: (the adjoint of the list before ``append``, the appended
    value's adjoint), for a list adjoint held as a 1-d array or a list."""
    if (isinstance(g, nt.Array) and g.ndim == 1) or isinstance(g, nt.List):
        return lambda g: (g[:-1], g[-1])


@overload(parts, prefer_literal=True)
def _parts(g, n):
    """``runtime.containers.parts``: the adjoints of a tuple's or a list's items (in compiled code
    a tuple adjoint is a tuple of them, a list's a list or a 1-d array)."""
    if isinstance(g, nt.BaseTuple) and isinstance(n, (nt.IntegerLiteral,)) and \
            len(g.types) == n.literal_value:
        return lambda g, n: g
    if isinstance(g, nt.List) or (isinstance(g, nt.Array) and g.ndim == 1):
        def impl(g, n):
            if len(g) != n:
                raise ValueError(SHAPE_ERROR)
            return g
        return impl


def _tuple_fn(n, item, args, namespace=None):
    """A function of ``args`` returning the n-tuple whose item i is ``item.format(i=i)`` (or
    ``item(i)``, a callable), reading this module's helpers and the names of ``namespace``."""
    text = item if callable(item) else (lambda i: item.format(i=i))
    src = f"def f({args}):\n    return (" + "".join(text(i) + ", " for i in range(n)) + ")\n"
    ns = dict(globals(), **(namespace or {}))
    exec(src, ns)
    return ns["f"]


def extremum_adjoint(g, args, key, pick, *ans):
    raise NotImplementedError


@register_jitable
def _first_best(items, sign):
    """The index Python's max (sign 1) / min (-1) takes: the first item no later one beats."""
    best = 0
    for k in range(1, len(items)):
        if (items[k] > items[best]) if sign > 0 else (items[k] < items[best]):
            best = k
    return best


def pick_sign(pick):
    """1 where the numba type ``pick`` is the builtin ``max``, -1 for ``min``, else 0."""
    import builtins
    fn = getattr(pick, "typing_key", None)
    return 1 if fn is builtins.max else -1 if fn is builtins.min else 0


@overload(extremum_adjoint)
def _extremum_adjoint(g, args, key, pick, *ans):
    """``runtime.containers.extremum_adjoint`` of the builtin ``max``/``min`` of several real
    numbers, or of one 1-d real array, without ``key``: g to the item Python picks (the first of
    equal ones), 0.0 to the others."""
    if not (isinstance(key, nt.NoneType) and isinstance(g, (nt.Float, nt.Integer))):
        return None
    sign = pick_sign(pick)
    if not sign or not isinstance(args, nt.BaseTuple):
        return None
    n = len(args.types)
    if n >= 2 and isinstance(args, nt.UniTuple) and isinstance(args.dtype, nt.Float):
        # (floats only: an int compared with a float as Python does it exactly)
        out = register_jitable(_tuple_fn(n, "g if best == {i} else 0.0", "g, best"))
        return lambda g, args, key, pick, *ans: out(float(g), _first_best(args, sign))
    if n == 1 and _numbers(args.types[0]) and isinstance(args.types[0].dtype, nt.Float):
        dt = args.types[0].dtype            # (a list's adjoint is a 1-d array in compiled code)

        def impl1(g, args, key, pick, *ans):
            x = args[0]
            out = np.zeros(len(x), dt)
            if len(x):
                out[_first_best(x, sign)] = g
            return (out,)
        return impl1


def sorted_adjoint(g, iterable, key, reverse, ans=None):
    raise NotImplementedError


@register_jitable
def sorted_order(items, reverse):
    """The positions of ``items`` in the order Python's ``sorted`` puts them (stable: equal items
    keep their order, with ``reverse=True`` too)."""
    v = np.empty(len(items), np.float64)
    for k in range(len(items)):
        v[k] = -items[k] if reverse else items[k]
    return np.argsort(v, kind="mergesort")


@overload(sorted_adjoint)
def _sorted_adjoint(g, iterable, key, reverse, ans=None):
    """``runtime.containers.sorted_adjoint`` without ``key``, of a list of floats or a 1-d float
    array (whose adjoint, and the sorted list's, is a 1-d array in compiled code): each item's
    adjoint is the one of its place in the result."""
    if not (isinstance(key, nt.NoneType) and _numbers(iterable) and
            isinstance(iterable.dtype, nt.Float) and isinstance(g, nt.Array) and g.ndim == 1):
        return None
    dt = _float_dtype(iterable) if isinstance(iterable, nt.Array) else nt.float64

    def impl(g, iterable, key, reverse, ans=None):
        if len(g) != len(iterable):
            raise ValueError(SHAPE_ERROR)
        order = sorted_order(iterable, reverse)
        out = np.zeros(len(iterable), dt)
        for pos in range(len(order)):
            out[order[pos]] = g[pos]
        return out
    return impl


# -- what fused loops call (codegen/jit_fuse.py) -------------------------------------------------
@njit(error_model="numpy")
def fdiv(a, b):
    """``a / b`` of two numbers as NumPy divides array elements (a zero divisor gives inf or nan,
    not ZeroDivisionError)."""
    return a / b


def flat(x):
    raise NotImplementedError


@overload(flat)
def _flat(x):
    """The elements of ``x`` in C order as a 1-d array: a view of a C-contiguous array, else a
    copy."""
    if isinstance(x, nt.Array):
        if x.layout == "C":
            return lambda x: x.reshape(x.size)
        return lambda x: np.ascontiguousarray(x).reshape(x.size)


def missing(prefix):
    """A module ``__getattr__``: numba reads a helper's attribute while it types the derivative;
    one with no numba version raises this AttributeError, which the caller turns into the
    fallback."""
    def __getattr__(name):
        raise AttributeError(f"{MISSING} {prefix}.{name}")
    return __getattr__


def helper_module(modname, prefix, names, ns):
    """A module holding the helpers ``names`` of the namespace ``ns`` (a module's globals), read by
    generated code as ``prefix.name``; any other name is the AttributeError of :func:`missing`."""
    mod = _types.ModuleType(modname)
    for name in names:
        setattr(mod, name, ns[name])
    mod.__getattr__ = missing(prefix)
    return mod


def times_initial(g, initial=None):
    raise NotImplementedError


@overload(times_initial)
def _times_initial(g, initial=None):
    """g, times ``initial`` where one is given (``runtime.arrays.times_initial``)."""
    if initial is None or isinstance(initial, (nt.NoneType, nt.Omitted)):
        return lambda g, initial=None: g
    return lambda g, initial=None: g * initial


def sum_adjoint(g, iterable):
    raise NotImplementedError


@overload(sum_adjoint)
def _sum_adjoint(g, iterable):
    """``runtime.containers.sum_adjoint`` of builtin ``sum``: for a list of numbers (whose
    adjoint is a 1-d float array in compiled code) or a 1-d real array, g for each element."""
    if not isinstance(g, (nt.Float, nt.Integer)):
        return None
    if isinstance(iterable, (nt.List, nt.ListType)) and \
            isinstance(iterable.dtype, (nt.Float, nt.Integer, nt.Boolean)):
        return lambda g, iterable: np.full(len(iterable), g, np.float64)
    if isinstance(iterable, nt.Array) and iterable.ndim == 1 and \
            isinstance(iterable.dtype, nt.Float):
        dt = iterable.dtype
        return lambda g, iterable: np.full(iterable.shape, g, dt)


def keys_read(origin, *xs):
    raise NotImplementedError


@overload(keys_read)
def _keys_read(origin, *xs):
    """``runtime.refusals.keys_read``: nothing to check for lists, tuples, arrays and numbers
    (only a dict's float keys are refused); a dict is not compiled (its check runs as Python)."""
    ok = (nt.List, nt.ListType, nt.Array, nt.BaseTuple, nt.Number, nt.Boolean)
    if all(isinstance(x, ok) for x in xs):
        return lambda origin, *xs: None


def namespace():
    """A module holding the compiled helpers under the names generated code uses (``_rt``)."""
    return helper_module("s2sad_jit_runtime", "_rt", (
                 "share_guard", "zero_of", "acc", "is_zero", "cj", "real_like", "unbroadcast",
                 "sum_product", "getitem_adjoint", "acc_getitem", "setitem_adjoint",
                 "setitem_value_adjoint",
                 "add", "snap", "own", "reserve",
                 "pow_base_adjoint", "pow_exponent_adjoint", "abs_adjoint", "seq", "loop_seq",
                 "seq_adjoint_of", "zip_seq", "zip_seq_adjoint", "unappend", "parts",
                 "abs_tangent", "unit", "rule_adjoint", "rule_tangent", "loop_zip_seq",
                 "seq_adjoint", "add_part",
                 "add_part_tangent",
                 "sorted_adjoint",
                 "extremum_adjoint", "fdiv", "flat",
                 "inexact", "keep_if", "times_initial", "keys_read", "sum_adjoint",
                 "inplace_guard", "argument_inplace_guard", "item_inplace_guard", "imul",
                 "ipow"),
                 globals())


__all__ = ["namespace", "SHAPE_ERROR", "njit"]


# -- run-time checks (classify/writes.py) -------------------------------------------------
# A check that finds what it refuses raises REFUSED; codegen/jit.py then runs the call again as the
# Python derivative, whose own check raises the error that names the user's line (a compiled
# function cannot carry it).  The check here may say more than the exact one (memory bounds that
# overlap, not shared elements): then the Python derivative runs and decides.
REFUSED = "s2sad-jit: a run-time check refused"


def rule_adjoint(adj, x, rule, param, origin):
    raise NotImplementedError


def rule_tangent(t, ans, rule, origin):
    raise NotImplementedError


@njit
def _keep_same_shape(value, like):
    if value.shape != like.shape:
        raise ValueError(REFUSED)
    return value


@njit
def _keep_one_element(value, like):
    if value.size != 1:
        raise ValueError(REFUSED)
    return value


@njit
def _keep(value, like):
    return value


def _rule_shape_check(value, like):
    """The body of :func:`rule_adjoint` / :func:`rule_tangent` for these numba types: the value
    where its shape is ``like``'s (a number's derivative a number, or a 0-d or one-element
    array), REFUSED at run time where it is not (the Python derivative then raises the error
    that names the rule); None (no compiled version: Python runs) where the types cannot fit."""
    number = _SCALAR + (nt.Complex,)
    if isinstance(value, number) and isinstance(like, number):
        return _keep
    if isinstance(value, nt.Array) and isinstance(like, nt.Array) and value.ndim == like.ndim:
        return _keep_same_shape
    if isinstance(value, nt.Array) and isinstance(like, number) and value.ndim <= 1:
        return _keep_one_element
    return None


@overload(rule_adjoint)
def _rule_adjoint(adj, x, rule, param, origin):
    """``runtime.rule_adjoint``: a user rule's adjoint of another shape than its argument's
    refused (see :func:`_rule_shape_check`)."""
    body = _rule_shape_check(adj, x)
    if body is None:
        return None
    return lambda adj, x, rule, param, origin: body(adj, x)


@overload(rule_tangent)
def _rule_tangent(t, ans, rule, origin):
    """``runtime.rule_tangent``: a user rule's tangent of another shape than its result's."""
    body = _rule_shape_check(t, ans)
    if body is None:
        return None
    return lambda t, ans, rule, origin: body(t, ans)


# -- Python's ints (codegen/jit_ints.py) ---------------------------------------------------------
_INT_LIMIT = 9.2e18          # (below 2**63: a product whose float is under it fits in int64)


@njit
def imul(a, b):
    """``a * b`` of two ints, as Python computes it, or the run-time refusal (REFUSED) where
    int64 would wrap around."""
    if abs(float(a) * float(b)) >= _INT_LIMIT:
        raise ValueError(REFUSED)
    return a * b


@njit
def ipow(a, b):
    """``a ** b`` of two ints, as Python computes it, or REFUSED where Python's result is a
    float (b < 0) or int64 would wrap around."""
    if b < 0:
        raise ValueError(REFUSED)
    if a == 0 or a == 1 or b == 0:
        return a ** b
    if a == -1:
        return 1 if b % 2 == 0 else -1
    if b * np.log2(abs(float(a))) >= 62.9:
        raise ValueError(REFUSED)
    return a ** b


def share_guard(value, name, others, fix, origin, *seen):
    raise NotImplementedError


@register_jitable
def _bounds(a):
    lo = a.ctypes.data
    hi = lo
    for i in range(a.ndim):
        step = (a.shape[i] - 1) * a.strides[i]
        if step < 0:
            lo += step
        else:
            hi += step
    return lo, hi + a.itemsize


def _overlaps(a, b):
    raise NotImplementedError


@overload(_overlaps)
def _overlaps_impl(a, b):
    if isinstance(a, nt.Array) and isinstance(b, nt.Array):
        def impl(a, b):
            if a.size == 0 or b.size == 0:
                return False
            alo, ahi = _bounds(a)
            blo, bhi = _bounds(b)
            return alo < bhi and blo < ahi
        return impl
    if isinstance(a, nt.Array) and (_is_scalar(b) or isinstance(b, nt.Complex)):
        return lambda a, b: False
    if isinstance(a, nt.Array) and isinstance(b, (nt.List, nt.ListType)) and \
            (_is_scalar(b.dtype) or isinstance(b.dtype, (nt.Complex, nt.Array))):
        def impl(a, b):             # (a list of numbers, or of arrays: rows of a matrix)
            for v in b:
                if _overlaps(a, v):
                    return True
            return False
        return impl


def inplace_guard(value, op, name, other, fix, origin, arrays_only=False, *seen):
    raise NotImplementedError


def argument_inplace_guard(value, op, name, param, origin):
    raise NotImplementedError


@overload(inplace_guard)
def _inplace_guard(value, op, name, other, fix, origin, arrays_only=False, *seen):
    """``runtime.inplace_guard`` before ``name op= ...``: a number is rebound, never changed in
    place (numba knows the type where s2sad's kinds did not: ``acc = 0.0`` then ``acc +=
    img[i, j] * k[a, b]``).  Anything else has no compiled version: the derivative runs as
    Python, whose check decides (the sharing it looks for may be NumPy's alone: ``a.conj()`` of
    a real array is ``a`` in NumPy, a copy in numba, so compiled values could not tell)."""
    if _is_scalar(value) or isinstance(value, nt.Complex):
        return lambda value, op, name, other, fix, origin, arrays_only=False, *seen: None
    return None


def item_inplace_guard(value, obj, key, op, name, other, origin, unknown=False, *seen):
    raise NotImplementedError


@overload(item_inplace_guard)
def _item_inplace_guard(value, obj, key, op, name, other, origin, unknown=False, *seen):
    """``runtime.item_inplace_guard`` before ``obj[key] op= ...``: an item of an array is
    written back into its memory, and a number is rebound; anything else (an array in a list)
    runs as Python, whose check looks at the other items."""
    if isinstance(obj, nt.Array) or _is_scalar(value) or isinstance(value, nt.Complex):
        return lambda value, obj, key, op, name, other, origin, unknown=False, *seen: None
    return None


@overload(argument_inplace_guard)
def _argument_inplace_guard(value, op, name, param, origin):
    """``runtime.argument_inplace_guard``: a number passes; anything else runs as Python, whose
    check refuses an array (changed in place, which the caller would see)."""
    if _is_scalar(value) or isinstance(value, nt.Complex):
        return lambda value, op, name, param, origin: None
    return None


@overload(share_guard)
def _share_guard(value, name, others, fix, origin, *seen):
    if not isinstance(value, nt.Array):
        return None
    from numba import literal_unroll

    def impl(value, name, others, fix, origin, *seen):
        for v in literal_unroll(seen):
            if _overlaps(value, v):
                raise ValueError(REFUSED)
    return impl
