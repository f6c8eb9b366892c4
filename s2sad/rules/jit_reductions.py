"""NumPy's reductions over one axis, and with ``keepdims``, for ``jit=True``.

numba compiles ``np.sum(a)`` and ``np.sum(a, axis=k)``, but ``np.max``, ``np.min``, ``np.mean``,
``np.prod``, ``np.var`` and ``np.std`` only over the whole array, and none of them with
``keepdims``: ``np.max(x, axis=1)`` or ``x - np.mean(x, axis=1, keepdims=True)`` made a whole
derivative run as Python.  The versions here take ``axis`` (``None`` or one integer, negative
counted from the end) and ``keepdims`` (a constant, as a program writes it), with NumPy's results:
its dtype (the mean, variance and standard deviation of integers are float64), shape, nan
propagation (max/min), and its errors (a reduction without identity over an empty axis raises
ValueError).  Any other argument (``out=``, ``dtype=``, ``initial=``, ``where=``, a tuple of axes,
a complex array over an axis) is a typing error: the derivative runs as Python, with the
fallback warning.  Over the whole array without keepdims each calls numba's own function, as a
derivative did before these versions (complex arrays, and ``np.sum``'s ``dtype=``, included),
except ``np.sum`` of a real array: NumPy's pairwise order (``runtime.jit.array_sum``: NumPy's value
bit for bit for a contiguous array), where numba's adds one element at a time into one running sum
(another value past 8 elements, and about 4 times slower).
Sums over an axis add in index order: NumPy adds pairwise along a contiguous axis, so the last
bits of a long sum can differ (as numba's own ``np.sum`` does).

:func:`versions` gives ``{numpy function: numba version}``; ``rules/jit_substitutes.py``
registers them (this module imports nothing else of s2sad).  The adjoint helpers of these reductions
(``_adj.sum``, ``_adj.extremum``, ...: ``rules/jit.py``) already take one integer axis.
"""
import numpy as np
from numba.core import types as nt
from numba.cpython.unsafe.tuple import tuple_setitem
from numba.extending import overload, register_jitable

from ..runtime.jit import advance as _advance, array_sum

_SUM, _PROD, _MAX, _MIN, _MEAN, _VAR, _STD, _LSE = range(8)
_NAMES = {_MAX: "maximum", _MIN: "minimum"}


def _value(t):
    """The constant an argument type stands for (an omitted argument: its default, given as the
    value itself or as ``Omitted``; a literal: its value), else the type."""
    if isinstance(t, nt.Omitted):
        return t.value
    if isinstance(t, nt.NoneType):
        return None
    if isinstance(t, nt.Literal):
        return t.literal_value
    return t


def _omitted(t, default=None):
    """The argument is left at its default (omitted, or that constant)."""
    v = _value(t)
    return not isinstance(v, nt.Type) and (v is default if default is None else
                                           type(v) is type(default) and v == default)


def _flag(t):
    """keepdims as a Python bool, or None when it is not a constant."""
    v = _value(t)
    return bool(v) if isinstance(v, (bool, int, np.bool_)) else None


def _whole(axis):
    """``axis`` is None (or left out): the reduction is over the whole array."""
    return axis is None or isinstance(axis, (nt.NoneType, nt.Omitted))


def _no_value(t):
    """``initial=``/``where=`` left out (NumPy's ``_NoValue``, None or the ``True`` default)."""
    v = _value(t)
    return v is None or v is True or v is np._NoValue


# -- the kernels: a C-ordered copy viewed as (outer, n, inner), reduced over n ---------------------
@register_jitable
def _split(shape, ax):
    outer = 1
    for d in range(ax):
        outer *= shape[d]
    inner = 1
    for d in range(ax + 1, len(shape)):
        inner *= shape[d]
    return outer, shape[ax], inner


@register_jitable
def _axis_of(axis, nd):
    if axis < -nd or axis >= nd:
        raise ValueError("axis is out of bounds for array")
    return axis % nd


def _axes_tuple(axis):
    """``axis`` is a tuple of integers (``np.sum(x, axis=(0, 2))``)."""
    return isinstance(axis, nt.BaseTuple) and len(axis.types) > 0 and \
        all(isinstance(t, nt.Integer) for t in axis.types)


def axes_array(axes):
    raise NotImplementedError


@overload(axes_array)
def _axes_array(axes):
    """A tuple of integers (each a literal or not) as an int64 array."""
    if _axes_tuple(axes):
        src = "def f(axes):\n    return np.array([" + \
            "".join(f"np.int64(axes[{i}]), " for i in range(len(axes.types))) + "])\n"
        ns = {"np": np}
        exec(src, ns)
        return ns["f"]


@register_jitable
def _row_steps(shape, axes):
    """For :func:`to_rows`: the step of each axis of ``shape`` in the flat (outer, n) rows (a
    kept axis counts rows, a reduced one columns, each group in its order), outer and n.  NumPy's
    errors for an axis out of range or repeated."""
    nd = len(shape)
    red = np.zeros(nd, np.bool_)
    for ax in axes:
        k = _axis_of(ax, nd)
        if red[k]:
            raise ValueError("duplicate value in 'axis'")
        red[k] = True
    n = 1
    for d in range(nd):
        if red[d]:
            n *= shape[d]
    step = np.empty(nd, np.int64)
    rows = n
    cols = 1
    outer = 1
    for d in range(nd - 1, -1, -1):
        if red[d]:
            step[d] = cols
            cols *= shape[d]
        else:
            step[d] = rows
            rows *= shape[d]
            outer *= shape[d]
    return step, outer, n


@register_jitable
def to_rows(a, axes):
    """``a`` with the axes ``axes`` (an int64 array, negative ones from the end) moved last, in
    their order, the others first, in theirs, as a C-ordered (outer, n) array, and the steps
    :func:`from_rows` takes back: a reduction over several axes as one over axis 1.  A copy
    made in one walk over ``a`` in its index order (np.transpose of a tuple and its copy cost
    numba ~4 s to compile, this ~0.1 s)."""
    step, outer, n = _row_steps(a.shape, axes)
    out = np.empty(a.size, a.dtype)
    idx = np.zeros(a.ndim, np.int64)
    pos = 0
    for v in a.flat:
        out[pos] = v
        pos = _advance(idx, pos, step, a.shape)
    return out.reshape((outer, n)), step


@register_jitable
def from_rows(r, a, step):
    """The inverse of :func:`to_rows`: ``r`` (outer, n) back in ``a``'s shape and axis order."""
    flat = np.ascontiguousarray(r).reshape(r.size)
    out = np.empty(a.size, r.dtype)
    idx = np.zeros(a.ndim, np.int64)
    pos = 0
    for f in range(a.size):
        out[f] = flat[pos]
        pos = _advance(idx, pos, step, a.shape)
    return out.reshape(a.shape)


@register_jitable
def kept_shape(shape, axes, zeros):
    """``shape`` without the axes ``axes`` (a tuple of the result's length, ``zeros``)."""
    nd = len(shape)
    red = np.zeros(nd, np.bool_)
    for ax in axes:
        red[ax % nd] = True
    out = zeros
    j = 0
    for d in range(nd):
        if not red[d]:
            out = tuple_setitem(out, j, shape[d])
            j += 1
    return out


@register_jitable
def ones_at(shape, axes):
    """``shape`` with 1 at the axes ``axes`` (keepdims)."""
    out = shape
    for ax in axes:
        out = tuple_setitem(out, ax % len(shape), 1)
    return out


def _kernel(code):
    """The kernel of ``code``: (b, ddof, dt) -> the (outer, inner) result of reducing a C-ordered
    b of shape (outer, n, inner) over its middle axis, in dtype ``dt``."""
    if code in (_SUM, _MEAN, _PROD):
        multiply, mean = code == _PROD, code == _MEAN

        @register_jitable
        def accumulate(b, ddof, dt):
            o, n, m = b.shape
            r = np.ones((o, m), dt) if multiply else np.zeros((o, m), dt)
            for i in range(o):
                for k in range(n):
                    for j in range(m):
                        if multiply:
                            r[i, j] *= b[i, k, j]
                        else:
                            r[i, j] += b[i, k, j]
            if mean:
                r /= n
            return r
        return accumulate
    if code in (_MAX, _MIN):
        larger = code == _MAX

        @register_jitable
        def extremum(b, ddof, dt):
            o, n, m = b.shape
            if n == 0:
                raise ValueError("zero-size array to reduction operation which has no identity")
            r = np.empty((o, m), dt)
            for i in range(o):
                for j in range(m):
                    t = b[i, 0, j]
                    for k in range(1, n):
                        v = b[i, k, j]
                        if v != v:                  # nan wins, as in NumPy
                            t = v
                            break
                        if (v > t) if larger else (v < t):
                            t = v
                    r[i, j] = t
            return r
        return extremum
    root = code == _STD

    @register_jitable
    def spread(b, ddof, dt):                        # var / std: two passes, as NumPy's
        o, n, m = b.shape
        r = np.empty((o, m), dt)
        for i in range(o):
            for j in range(m):
                mu = dt(0)
                for k in range(n):
                    mu += b[i, k, j]
                mu = mu / n
                s = dt(0)
                for k in range(n):
                    d = b[i, k, j] - mu
                    s += d * d
                if n - ddof > 0:
                    v = s / (n - ddof)
                elif s > 0:                         # NumPy's s / max(n - ddof, 0), without
                    v = dt(np.inf)                  # numba's ZeroDivisionError
                else:
                    v = dt(np.nan)
                r[i, j] = np.sqrt(v) if root else v
        return r
    return spread


@register_jitable
def _logsumexp_kernel(b, ddof, dt):
    """scipy.special.logsumexp along the middle axis, as SciPy computes it: the maximum's
    copies apart, log1p(sum of the others' exp(v - max) / count) + log(count) + max; where that
    is not finite, log(sum(exp(v))) (infinities and NaN as SciPy's); -inf over an empty axis."""
    o, n, m = b.shape
    r = np.empty((o, m), dt)
    for i in range(o):
        for j in range(m):
            if n == 0:
                r[i, j] = -np.inf
                continue
            t = b[i, 0, j]
            for k in range(1, n):
                v = b[i, k, j]
                if v != v:
                    t = v
                    break
                if v > t:
                    t = v
            count = 0
            s = 0.0
            direct = 0.0
            for k in range(n):
                v = b[i, k, j]
                direct += np.exp(v)
                if v == t:
                    count += 1
                else:
                    s += np.exp(v - t)
            if s != 0 and count > 0:
                s = s / count
            out = np.log1p(s) + np.log(count) + t
            if not np.isfinite(out):
                out = np.log(direct)
            r[i, j] = out
    return r


def _impl(code, nd, keep, whole, dt, naxes=0):
    """The body (a, axis, ddof) -> result for an array of ``nd`` dims: over the whole array
    (``whole``), one axis, or a tuple of ``naxes`` axes, with kept dims when ``keep``."""
    kernel = _logsumexp_kernel if code == _LSE else _kernel(code)
    if naxes:
        zeros = (0,) * max(nd - naxes, 1)

        @register_jitable
        def over_axes(a, axis, ddof):
            axes = axes_array(axis)
            b, _ = to_rows(a, axes)
            r = kernel(b.reshape((b.shape[0], b.shape[1], 1)), ddof, dt)
            if keep:
                return r.reshape(ones_at(a.shape, axes))
            if nd == naxes:
                return r[0, 0]
            return r.reshape(kept_shape(a.shape, axes, zeros))
        return over_axes
    if whole and keep:
        @register_jitable
        def whole_keep(a, axis, ddof):
            r = kernel(np.ascontiguousarray(a).reshape((1, a.size, 1)), ddof, dt)
            shp = a.shape
            for d in range(nd):
                shp = tuple_setitem(shp, d, 1)
            return r.reshape(shp)
        return whole_keep
    if whole:
        @register_jitable
        def scalar(a, axis, ddof):
            return kernel(np.ascontiguousarray(a).reshape((1, a.size, 1)), ddof, dt)[0, 0]
        return scalar
    if keep:
        @register_jitable
        def axis_keep(a, axis, ddof):
            ax = _axis_of(axis, nd)
            outer, n, inner = _split(a.shape, ax)
            r = kernel(np.ascontiguousarray(a).reshape((outer, n, inner)), ddof, dt)
            return r.reshape(tuple_setitem(a.shape, ax, 1))
        return axis_keep
    if nd == 1:
        @register_jitable
        def one_axis(a, axis, ddof):
            _axis_of(axis, 1)
            return kernel(np.ascontiguousarray(a).reshape((1, a.size, 1)), ddof, dt)[0, 0]
        return one_axis
    zeros = (0,) * (nd - 1)

    @register_jitable
    def axis_drop(a, axis, ddof):
        ax = _axis_of(axis, nd)
        outer, n, inner = _split(a.shape, ax)
        r = kernel(np.ascontiguousarray(a).reshape((outer, n, inner)), ddof, dt)
        shp = zeros
        j = 0
        for d in range(nd):
            if d != ax:
                shp = tuple_setitem(shp, j, a.shape[d])
                j += 1
        return r.reshape(shp)
    return axis_drop


def _whole_array(a, axis, keepdims):
    """Over the whole array without keepdims: numba's own function, as before this module."""
    return isinstance(a, nt.Array) and _whole(axis) and _flag(keepdims) is False


def _typed(code, a, axis, keepdims):
    """(nd, keep, whole, result dtype) for these argument types, or None (not handled)."""
    if not isinstance(a, nt.Array) or not isinstance(a.dtype, (nt.Float, nt.Integer)) or \
            isinstance(a.dtype, nt.Boolean):
        return None
    keep = _flag(keepdims)
    if keep is None:
        return None
    whole = _whole(axis)
    if not whole and not isinstance(axis, nt.Integer) and not _axes_tuple(axis):
        return None
    if code in (_MEAN, _VAR, _STD, _LSE):
        dt = a.dtype if isinstance(a.dtype, nt.Float) else nt.float64
    elif code in (_SUM, _PROD) and isinstance(a.dtype, nt.Integer):
        dt = nt.int64 if a.dtype.signed else nt.uint64
    else:
        dt = a.dtype
    return a.ndim, keep, whole, dt, len(axis.types) if _axes_tuple(axis) else 0


def _np_dtype(dt):
    from numba.np.numpy_support import as_dtype
    return as_dtype(dt).type


# -- the stubs and their overloads ---------------------------------------------------------------
def _stub(name):
    def stub(*args, **kwargs):
        raise NotImplementedError(f"s2sad: np.{name}'s numba version runs inside numba-compiled "
                                  f"derivatives only")
    stub.__name__ = stub.__qualname__ = name
    return stub


amax, amin, sum, prod, mean, var, std = (_stub(n) for n in
                                         ("max", "min", "sum", "prod", "mean", "var", "std"))


def _extremum(code, builtin):
    def ov(a, axis=None, out=None, keepdims=False, initial=None, where=True):
        if not (_omitted(out) and _no_value(initial) and _no_value(where)):
            return None
        if _whole_array(a, axis, keepdims):         # numba's own (complex arrays too)
            return lambda a, axis=None, out=None, keepdims=False, initial=None, where=True: \
                builtin(a)
        t = _typed(code, a, axis, keepdims)
        if t is None:
            return None
        run = _impl(code, t[0], t[1], t[2], _np_dtype(t[3]), t[4])
        return lambda a, axis=None, out=None, keepdims=False, initial=None, where=True: \
            run(a, axis, 0)
    return ov


overload(amax)(_extremum(_MAX, np.max))
overload(amin)(_extremum(_MIN, np.min))


def _additive(code, builtin):
    def ov(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
        if not (_omitted(out) and _no_value(initial) and _no_value(where)):
            return None
        whole = _whole(axis)
        if not _omitted(dtype):
            # dtype=: numba's own np.sum takes it (without keepdims), as before this module
            if code != _SUM or _flag(keepdims) is not False:
                return None
            if whole:
                return lambda a, axis=None, dtype=None, out=None, keepdims=False, initial=None, \
                    where=True: builtin(a, dtype=dtype)
            return lambda a, axis=None, dtype=None, out=None, keepdims=False, initial=None, \
                where=True: builtin(a, axis=axis, dtype=dtype)
        if _whole_array(a, axis, keepdims) and code == _SUM and isinstance(a.dtype, nt.Float):
            return lambda a, axis=None, dtype=None, out=None, keepdims=False, initial=None, \
                where=True: array_sum(a)
        if _whole_array(a, axis, keepdims):         # numba's own (complex arrays too)
            return lambda a, axis=None, dtype=None, out=None, keepdims=False, initial=None, \
                where=True: builtin(a)
        t = _typed(code, a, axis, keepdims)
        if t is None:
            return None
        nd, keep, whole, dt, naxes = t
        if code == _SUM and not keep and not whole and not naxes:
            return lambda a, axis=None, dtype=None, out=None, keepdims=False, initial=None, \
                where=True: builtin(a, axis=axis)
        run = _impl(code, nd, keep, whole, _np_dtype(dt), naxes)
        return lambda a, axis=None, dtype=None, out=None, keepdims=False, initial=None, \
            where=True: run(a, axis, 0)
    return ov


overload(sum)(_additive(_SUM, np.sum))
overload(prod)(_additive(_PROD, np.prod))


@overload(mean)
def _mean(a, axis=None, dtype=None, out=None, keepdims=False, where=True):
    if not (_omitted(dtype) and _omitted(out) and _no_value(where)):
        return None
    if _whole_array(a, axis, keepdims):
        return lambda a, axis=None, dtype=None, out=None, keepdims=False, where=True: np.mean(a)
    t = _typed(_MEAN, a, axis, keepdims)
    if t is None:
        return None
    nd, keep, whole, dt, naxes = t
    run = _impl(_MEAN, nd, keep, whole, _np_dtype(dt), naxes)
    return lambda a, axis=None, dtype=None, out=None, keepdims=False, where=True: run(a, axis, 0)


def _spread(code, builtin):
    def ov(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=True, mean=None,
           correction=None):
        if not (_omitted(dtype) and _omitted(out) and _no_value(where) and _omitted(mean) and
                _omitted(correction)):
            return None
        if not isinstance(ddof, (nt.Integer, nt.Omitted, int)):
            return None
        if _whole_array(a, axis, keepdims) and _omitted(ddof, 0):
            return lambda a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=True, \
                mean=None, correction=None: builtin(a)
        t = _typed(code, a, axis, keepdims)
        if t is None:
            return None
        run = _impl(code, t[0], t[1], t[2], _np_dtype(t[3]), t[4])
        return lambda a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=True, \
            mean=None, correction=None: run(a, axis, ddof)
    return ov


overload(var)(_spread(_VAR, np.var))
overload(std)(_spread(_STD, np.std))


# -- scipy.special's logsumexp, softmax and log_softmax ------------------------------------------
logsumexp, softmax, log_softmax = (_stub(n) for n in ("logsumexp", "softmax", "log_softmax"))


@overload(logsumexp)
def _logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False):
    """Real arrays (integers as float64), over the whole array or one axis; not b= or
    return_sign=True (those run as Python)."""
    if not (_omitted(b) and _omitted(return_sign, False)):
        return None
    t = _typed(_LSE, a, axis, keepdims)
    if t is None:
        return None
    run = _impl(_LSE, t[0], t[1], t[2], _np_dtype(t[3]), t[4])
    return lambda a, axis=None, b=None, keepdims=False, return_sign=False: run(a, axis, 0)


def _float_array(x):
    return isinstance(x, nt.Array) and isinstance(x.dtype, nt.Float)


@overload(softmax)
def _softmax(x, axis=None):
    """exp(x - max) / its sum, over the whole array or one axis (as SciPy)."""
    if not (_float_array(x) and (_whole(axis) or isinstance(axis, nt.Integer))):
        return None

    def impl(x, axis=None):
        e = np.exp(x - amax(x, axis=axis, keepdims=True))
        return e / sum(e, axis=axis, keepdims=True)
    return impl


@overload(log_softmax)
def _log_softmax(x, axis=None):
    """x - max - log(sum(exp(x - max))), a maximum that is not finite taken as 0 (as SciPy)."""
    if not (_float_array(x) and (_whole(axis) or isinstance(axis, nt.Integer))):
        return None

    def impl(x, axis=None):
        m = amax(x, axis=axis, keepdims=True)
        d = x - np.where(np.isfinite(m), m, 0.0)
        return d - np.log(sum(np.exp(d), axis=axis, keepdims=True))
    return impl


# -- np.linalg.norm over one axis -----------------------------------------------------------------
def norm(x, ord=None, axis=None, keepdims=False):
    raise NotImplementedError("s2sad: np.linalg.norm's numba version runs inside numba-compiled "
                              "derivatives only")


@overload(norm)
def _norm(x, ord=None, axis=None, keepdims=False):
    """The 2-norm of a real array's vectors along one axis (ord None), keepdims; over the whole
    array without keepdims numba's own np.linalg.norm, as before."""
    if not (isinstance(x, nt.Array) and isinstance(x.dtype, nt.Float) and _omitted(ord)):
        return None
    keep = _flag(keepdims)
    if _whole(axis) and keep is False:
        return lambda x, ord=None, axis=None, keepdims=False: np.linalg.norm(x)
    if not isinstance(axis, nt.Integer) or keep is None:
        return None
    if keep:
        return lambda x, ord=None, axis=None, keepdims=False: \
            np.sqrt(sum(x * x, axis=axis, keepdims=True))
    return lambda x, ord=None, axis=None, keepdims=False: np.sqrt(sum(x * x, axis=axis))


# -- np.diff along any axis ------------------------------------------------------------------------
def diff(a, n=1, axis=-1, prepend=None, append=None):
    raise NotImplementedError("s2sad: np.diff's numba version runs inside numba-compiled "
                              "derivatives only")


@register_jitable
def _diff_step(b, ax):
    """One np.diff of a C-contiguous ``b`` along ``ax``."""
    outer, m, inner = _split(b.shape, ax)
    v = b.reshape((outer, m, inner))
    k = max(m - 1, 0)
    out = np.empty((outer, k, inner), b.dtype)
    for p in range(outer):
        for i in range(k):
            for q in range(inner):
                out[p, i, q] = v[p, i + 1, q] - v[p, i, q]
    return out.reshape(tuple_setitem(b.shape, ax, k))


@overload(diff)
def _diff(a, n=1, axis=-1, prepend=None, append=None):
    """np.diff(a, n, axis) of a float, complex or integer array (no prepend=/append=); numba's
    own takes the last axis only."""
    if not (isinstance(a, nt.Array) and isinstance(a.dtype, (nt.Float, nt.Complex, nt.Integer))
            and not isinstance(a.dtype, nt.Boolean) and _no_value(prepend) and
            _no_value(append) and isinstance(n, (nt.Integer, nt.Omitted, int)) and
            isinstance(axis, (nt.Integer, nt.Omitted, int))):
        return None
    nd = a.ndim

    def impl(a, n=1, axis=-1, prepend=None, append=None):
        if n < 0:
            raise ValueError("order must be non-negative")
        ax = _axis_of(axis, nd)
        r = np.ascontiguousarray(a)
        for _ in range(n):
            r = _diff_step(r, ax)
        return r
    return impl


# -- np.sort along the last axis, written with axis= --------------------------------------------
def sort(a, axis=-1, kind=None, order=None, stable=None):
    raise NotImplementedError("s2sad: np.sort's numba version runs inside numba-compiled "
                              "derivatives only")


@overload(sort)
def _sort(a, axis=-1, kind=None, order=None, stable=None):
    """np.sort along the last axis (axis -1 or ndim - 1, a constant) of a real array: numba's
    own, which takes no arguments but the array (its sort puts NaN last, as NumPy's)."""
    ax = _value(axis)
    if not (isinstance(a, nt.Array) and isinstance(a.dtype, (nt.Float, nt.Integer)) and
            isinstance(ax, int) and ax in (-1, a.ndim - 1) and _omitted(kind) and
            _omitted(order) and _omitted(stable)):
        return None
    return lambda a, axis=-1, kind=None, order=None, stable=None: np.sort(a)


def scipy_versions():
    """{scipy.special function: its numba version} (logsumexp, softmax, log_softmax)."""
    import scipy.special as sp
    return {sp.logsumexp: logsumexp, sp.softmax: softmax, sp.log_softmax: log_softmax}


def versions():
    """{NumPy function: its numba version} (``np.amax``/``np.amin`` are ``np.max``/``np.min``'s
    aliases: both names get the version)."""
    return {np.max: amax, np.amax: amax, np.min: amin, np.amin: amin, np.sum: sum,
            np.prod: prod, np.mean: mean, np.var: var, np.std: std, np.linalg.norm: norm,
            np.diff: diff, np.sort: sort}
