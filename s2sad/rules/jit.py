"""``_adj`` for derivatives compiled with ``jit=True``: numba versions of the adjoint helpers that
rule templates call, for the rules whose helpers numba can compile.

A helper missing here is a typing error when numba compiles the derivative, which
``codegen/jit.py`` turns into a fallback to Python with one warning naming the user's line.  Each
helper is a stub with a numba ``overload`` (the body is chosen by argument types when the
derivative compiles), with the semantics of its Python twin in ``rules/numpy``.  Imports numba:
only ``jit=True`` imports this module.
"""

import numpy as np
from numba.core import types as nt
from numba.cpython.unsafe.tuple import tuple_setitem
from numba.extending import overload, register_jitable

from ..runtime import jit as _jrt
from . import jit_lapack   # (registers the LAPACK names compiled helpers call, for numba's cache)
from . import jit_reductions as _R     # (its (outer, n, inner) split of a shape at an axis)
from .jit_einsum import adjoint as einsum, tangent as einsum_tangent  # noqa: F401 (_adj's)
from .jit_arrays import (roll, tile, repeat, cumprod, polyval,   # noqa: F401 (_adj's, named
                         polyval_tangent, interp, interp_tangent,  # in namespace())
                         tangent_as, trapezoid, trapezoid_tangent, matrix_power,
                         matrix_power_tangent, eigh, sinc, inner, convolve, take,
                         take_along_axis)


def sum(g, a, axis=None, keepdims=False):
    raise NotImplementedError("s2sad: _adj.sum runs inside numba-compiled derivatives only")


def mean(g, a, axis=None, keepdims=False):
    raise NotImplementedError


def matmul(g, a, b, which):
    raise NotImplementedError


def dot(g, a, b, which):
    raise NotImplementedError


def like(r, x):
    raise NotImplementedError


def kron(g, a, b, which):
    raise NotImplementedError


def diag(g, v, k=0):
    raise NotImplementedError


def triu(g, m_, k=0):
    raise NotImplementedError


def tril(g, m_, k=0):
    raise NotImplementedError


def outer(g, a, b, which):
    raise NotImplementedError


def reshape_back(g, a, order="C"):
    raise NotImplementedError


def transpose(g, a, axes=None):
    raise NotImplementedError


def inv(g, ans):
    raise NotImplementedError


def det(g, ans, a):
    raise NotImplementedError


def det_tangent(t, ans, a):
    raise NotImplementedError


def slogdet(g, ans, a):
    raise NotImplementedError


def solve(g, ans, a, b):
    raise NotImplementedError


def cholesky(g, ans, a, upper=False):
    raise NotImplementedError


def where(g, condition, x, first):
    raise NotImplementedError


def maximum(g, x1, x2, which, sign=1, nan=False):
    raise NotImplementedError


def _correction(ddof=0, correction=None):
    raise NotImplementedError


def var(g, a, axis=None, ddof=0, keepdims=False, mean=None):
    raise NotImplementedError


def std(g, ans, a, axis=None, ddof=0, keepdims=False):
    raise NotImplementedError


def prod(g, a, axis=None, keepdims=False):
    raise NotImplementedError


def extremum(g, ans, a, axis=None, keepdims=False):
    raise NotImplementedError


def power_base(g, x1, x2):
    raise NotImplementedError


def power_exponent(g, ans, x1, x2):
    raise NotImplementedError


def _transposed(x):
    """The jitable ``x -> cj(x).T`` for a numba array type ``x``: a view where ``x`` is
    contiguous (C or F) or complex (its conjugate is a new C array); a contiguous copy otherwise,
    which numba's ``@`` wants."""
    if isinstance(x.dtype, nt.Complex) or x.layout in ("C", "F"):
        return _cj_t
    return _cj_t_copy


@register_jitable
def _cj_t(x):
    return _jrt.cj(x).T


@register_jitable
def _cj_t_copy(x):
    return np.ascontiguousarray(_jrt.cj(x).T)


@overload(matmul, prefer_literal=True)
def _matmul(g, a, b, which):
    """``rules.numpy.products.matmul`` for 1-d and 2-d operands: g times the other operand's
    conjugate transpose, in the operand's dtype."""
    if not isinstance(which, nt.IntegerLiteral):
        return None
    w = which.literal_value
    if not (_fc_array(a, (1, 2)) and _fc_array(b, (1, 2))):
        return None
    cj, C = _jrt.cj, np.ascontiguousarray
    A, B = a.ndim, b.ndim
    # the transposed operand as a view where it is contiguous (or conjugated, which makes a new
    # C array): BLAS reads it through its trans flag, where the copy cost a pass over it
    ta = _transposed(a)
    if (A, B) == (2, 1):
        if w == 0:
            return lambda g, a, b, which: like(np.outer(g, cj(b)), a)
        return lambda g, a, b, which: like(ta(a) @ g, b)
    if (A, B) == (2, 2):
        if w == 0:
            tb = _transposed(b)
            return lambda g, a, b, which: like(g @ tb(b), a)
        return lambda g, a, b, which: like(ta(a) @ g, b)
    if (A, B) == (1, 2):
        if w == 0:
            return lambda g, a, b, which: like(C(cj(b)) @ g, a)
        return lambda g, a, b, which: like(np.outer(cj(a), g), b)
    if (A, B) == (1, 1):
        if w == 0:
            return lambda g, a, b, which: like(g * cj(b), a)
        return lambda g, a, b, which: like(g * cj(a), b)


@overload(dot, prefer_literal=True)
def _dot(g, a, b, which):
    if isinstance(a, nt.Array) and isinstance(b, nt.Array) and a.ndim <= 2 and b.ndim <= 2:
        return lambda g, a, b, which: matmul(g, a, b, which)


def _whole(axis):
    return axis is None or isinstance(axis, (nt.NoneType, nt.Omitted))


def _lit(t, default=None):
    """The value of a literal (or omitted) argument type, else ``default``."""
    if not isinstance(t, nt.Type):             # an omitted argument: its default itself
        return t
    if isinstance(t, nt.Omitted):
        return t.value
    if isinstance(t, nt.Literal):
        return t.literal_value
    if isinstance(t, nt.NoneType):
        return None
    return default


_NOLIT = object()


def _fc(t):
    """A float or complex scalar, or an array of them."""
    return _jrt._real_or_complex(t)


def _real(t):
    d = t.dtype if isinstance(t, nt.Array) else t
    return isinstance(d, (nt.Float, nt.Integer, nt.Boolean))


def _fc_array(t, ndims=None):
    return isinstance(t, nt.Array) and _fc(t) and (ndims is None or t.ndim in ndims)


def _fits(g, a):
    """``g`` may become an adjoint of ``a`` in a's dtype without the Python helper's casts
    (a complex ``g`` for a real ``a`` is left to Python)."""
    return not (_jrt._is_complex(g) and not _jrt._is_complex(a))


@overload(like)
def _like(r, x):
    """``rules.adjoints.like`` for a float or complex array ``x`` and an array ``r`` of its shape:
    r in x's dtype (the imaginary part dropped for a real x); for a float or complex scalar ``x``
    and a scalar ``r``, r as x's kind of number."""
    if isinstance(x, nt.Complex) and isinstance(r, (nt.Float, nt.Integer, nt.Complex)):
        return lambda r, x: complex(r)
    if isinstance(x, nt.Float) and isinstance(r, (nt.Float, nt.Integer)):
        return lambda r, x: float(r)
    if isinstance(x, nt.Float) and isinstance(r, nt.Complex):
        return lambda r, x: r.real
    if not (_fc_array(x) and isinstance(r, nt.Array)):
        return None
    dt = x.dtype
    if _jrt._is_complex(r) and not _jrt._is_complex(x):
        return lambda r, x: np.real(r).astype(dt)
    if r.dtype == dt:
        return lambda r, x: r
    return lambda r, x: r.astype(dt)


@register_jitable
def _spread(g, shape, axis, out):
    """``out`` (C-contiguous, of ``shape``) filled with ``g`` repeated along ``axis``: g holds the
    other axes' values, in C order (the result of a reduction over ``axis``, with or without
    keepdims)."""
    gf = np.ascontiguousarray(g).ravel()
    of = out.ravel()
    nd = len(shape)
    for k in range(of.size):
        rem = k
        gi = 0
        gstride = 1
        for d in range(nd - 1, -1, -1):
            c = rem % shape[d]
            rem //= shape[d]
            if d != axis:
                gi += c * gstride
                gstride *= shape[d]
        of[k] = gf[gi]
    return out


def _reduced(g, a, axis):
    """Types of a reduction's adjoint ``g`` over one integer ``axis`` of array ``a`` that
    :func:`_spread` handles: an array of a.ndim - 1 (or, keepdims, a.ndim) dimensions, or a
    scalar when a is 1-d."""
    if not (isinstance(axis, nt.Integer) and isinstance(a, nt.Array)):
        return None
    if isinstance(g, nt.Array) and g.ndim in (a.ndim - 1, a.ndim) and g.ndim >= 1:
        return "array"
    if isinstance(g, (nt.Float, nt.Integer, nt.Complex)) and a.ndim == 1:
        return "scalar"
    return None


# -- reductions over a tuple of axes -----------------------------------------------------------
def rows_of(g, n):
    raise NotImplementedError


@overload(rows_of)
def _rows_of(g, n):
    """A reduction's result (or adjoint) over a tuple of axes as the 1-d array of its ``n``
    values in C order (a number: the reduction over every axis)."""
    if isinstance(g, nt.Array):
        return lambda g, n: np.ascontiguousarray(g).reshape(n)
    if isinstance(g, (nt.Float, nt.Integer)):
        return lambda g, n: np.full(n, g)


def _over_axes(g, a, axis):
    """The adjoint of a reduction of the float array ``a`` over a tuple of axes, which the
    helpers below take as one over axis 1 of ``a`` arranged as rows (``jit_reductions.to_rows``:
    the reduced axes last, the rest first)."""
    return _R._axes_tuple(axis) and isinstance(a, nt.Array) and \
        isinstance(a.dtype, nt.Float) and (isinstance(g, nt.Array) or isinstance(g, nt.Float))


def _rows_adjoint(signature, call):
    """An adjoint ``impl(signature)`` of a reduction over a tuple of axes: ``call`` (reading
    ``G``, g as rows, and ``b``, a as rows, ``n`` rows) over axis 1 of the rows, and its result
    put back in ``a``'s shape."""
    src = (f"def impl({signature}):\n"
           f"    b, steps = to_rows(a, axes_array(axis))\n"
           f"    n = b.shape[0]\n"
           f"    G = rows_of(g, n)\n"
           f"    return from_rows({call}, a, steps)\n")
    ns = dict(globals(), to_rows=_R.to_rows, axes_array=_R.axes_array, from_rows=_R.from_rows)
    exec(src, ns)
    return ns["impl"]


@overload(sum)
def _sum(g, a, axis=None, keepdims=False):
    if _over_axes(g, a, axis):
        return _rows_adjoint("g, a, axis=None, keepdims=False", "sum(G, b, 1, False)")
    if not (isinstance(a, nt.Array) and _fits(g, a)) and not isinstance(a, (nt.Float, nt.Integer)):
        return None
    if _whole(axis) and isinstance(a, nt.Array) and not isinstance(g, nt.Array):
        dt = _jrt._float_dtype(a)
        return lambda g, a, axis=None, keepdims=False: np.full(a.shape, g, dt)
    if _whole(axis) and isinstance(a, (nt.Float, nt.Integer)) and isinstance(g, nt.Float):
        return lambda g, a, axis=None, keepdims=False: g
    kind = _reduced(g, a, axis)
    if kind is not None:
        dt = _jrt._float_dtype(a)
        if kind == "scalar":
            return lambda g, a, axis=None, keepdims=False: np.full(a.shape, g, dt)
        return lambda g, a, axis=None, keepdims=False: _spread(g, a.shape, axis % a.ndim,
                                                              np.empty(a.shape, dt))


@overload(mean)
def _mean(g, a, axis=None, keepdims=False):
    if _over_axes(g, a, axis):
        return _rows_adjoint("g, a, axis=None, keepdims=False", "mean(G, b, 1, False)")
    if not (isinstance(a, nt.Array) and _fits(g, a)):
        return None
    dt = _jrt._float_dtype(a)
    C = _jrt.const_of(g)
    if _whole(axis) and not isinstance(g, nt.Array):
        return lambda g, a, axis=None, keepdims=False: np.full(a.shape, g / a.size, dt)
    kind = _reduced(g, a, axis)
    if kind == "scalar":
        return lambda g, a, axis=None, keepdims=False: np.full(a.shape, g / a.size, dt)
    if kind == "array":
        def impl(g, a, axis=None, keepdims=False):
            ax = axis % a.ndim
            return _spread(g / C(a.shape[ax]), a.shape, ax, np.empty(a.shape, dt))
        return impl


# -- products and matrix structure ---------------------------------------------------------------
@register_jitable
def _kron2(G, A, B, which, out):
    """``rules.numpy.products.kron`` for 2-d factors: G viewed as (p, r, q, s), contracted with
    the other factor's conjugate."""
    p, q = A.shape
    r, s = B.shape
    if which == 0:
        for i in range(p):
            for k in range(q):
                t = out[i, k]
                for j in range(r):
                    for l in range(s):
                        t += G[i * r + j, k * s + l] * _jrt.cj(B[j, l])
                out[i, k] = t
    else:
        for j in range(r):
            for l in range(s):
                t = out[j, l]
                for i in range(p):
                    for k in range(q):
                        t += G[i * r + j, k * s + l] * _jrt.cj(A[i, k])
                out[j, l] = t
    return out


def _result(*ts):
    """The numba dtype NumPy gives the arithmetic of arrays of these types."""
    from numba.np.numpy_support import as_dtype, from_dtype
    return from_dtype(np.result_type(*[as_dtype(t.dtype if isinstance(t, nt.Array) else t)
                                       for t in ts]))


@overload(kron, prefer_literal=True)
def _kron(g, a, b, which):
    w = _lit(which, _NOLIT)
    if w not in (0, 1) or not (_fc_array(a, (1, 2)) and _fc_array(b, (1, 2)) and
                               isinstance(g, nt.Array) and a.ndim == b.ndim == g.ndim):
        return None
    rt = _result(g, a, b)
    if a.ndim == 2:
        if w == 0:
            return lambda g, a, b, which: like(_kron2(g, a, b, 0, np.zeros(a.shape, rt)), a)
        return lambda g, a, b, which: like(_kron2(g, a, b, 1, np.zeros(b.shape, rt)), b)

    def impl1(g, a, b, which):
        A = np.ascontiguousarray(a).reshape((1, a.size))
        B = np.ascontiguousarray(b).reshape((1, b.size))
        G = np.ascontiguousarray(g).reshape((1, g.size))
        if w == 0:
            return like(_kron2(G, A, B, 0, np.zeros((1, a.size), rt)).reshape(a.shape), a)
        return like(_kron2(G, A, B, 1, np.zeros((1, b.size), rt)).reshape(b.shape), b)
    return impl1


@overload(diag)
def _diag(g, v, k=0):
    """``np.diagonal(g, k).copy()`` for a vector v; g on the k-th diagonal of zeros for a
    matrix."""
    if not (_fc_array(v, (1, 2)) and isinstance(g, nt.Array) and _fits(g, v)):
        return None
    dt = v.dtype
    if v.ndim == 1 and g.ndim == 2:
        def impl(g, v, k=0):
            out = np.empty(v.shape, dt)
            for i in range(out.size):
                out[i] = g[i, i + k] if k >= 0 else g[i - k, i]
            return out
        return impl
    if v.ndim == 2 and g.ndim == 1:
        def impl2(g, v, k=0):
            out = np.zeros(v.shape, dt)
            for i in range(g.size):
                if k >= 0:
                    out[i, i + k] = g[i]
                else:
                    out[i - k, i] = g[i]
            return out
        return impl2


def _tri(upper):
    def ov(g, m_, k=0):
        if not (_fc_array(m_, (1, 2)) and isinstance(g, nt.Array) and g.ndim == 2 and
                _fits(g, m_)):
            return None
        if m_.ndim == 2:
            if upper:
                return lambda g, m_, k=0: like(np.triu(g, k), m_)
            return lambda g, m_, k=0: like(np.tril(g, k), m_)
        if upper:
            return lambda g, m_, k=0: like(np.triu(g, k).sum(axis=0), m_)
        return lambda g, m_, k=0: like(np.tril(g, k).sum(axis=0), m_)
    return ov


overload(triu)(_tri(True))
overload(tril)(_tri(False))


@overload(outer, prefer_literal=True)
def _outer(g, a, b, which):
    w = _lit(which, _NOLIT)
    if w not in (0, 1) or not (_fc_array(a) and _fc_array(b) and isinstance(g, nt.Array) and
                               g.ndim == 2):
        return None
    if w == 0:
        return lambda g, a, b, which: like(
            (np.ascontiguousarray(g) @ _jrt.cj(np.ascontiguousarray(b).ravel())).reshape(a.shape),
            a)
    return lambda g, a, b, which: like(
        (_jrt.cj(np.ascontiguousarray(a).ravel()) @ np.ascontiguousarray(g)).reshape(b.shape), b)


# -- shape -------------------------------------------------------------------------------------
@overload(reshape_back, prefer_literal=True)
def _reshape_back(g, a, order="C"):
    """g in a's shape, read in C order: order='C', or 'A'/'K' of an array numba knows is
    C-contiguous (what ``rules.numpy.shape._order`` resolves them to)."""
    o = _lit(order, _NOLIT)
    if not (_fc_array(a) and isinstance(g, nt.Array) and _fits(g, a)):
        return None
    if o == "C" or (o in ("A", "K") and a.layout == "C"):
        return lambda g, a, order="C": like(np.ascontiguousarray(g).reshape(a.shape), a)


@overload(transpose)
def _transpose(g, a, axes=None):
    """The adjoint of ``a.T`` / ``np.transpose(a)``: g reversed back; of ``np.transpose(a, axes)``
    with a tuple of a.ndim integers: g permuted by the inverse permutation."""
    if not (_fc_array(a) and isinstance(g, nt.Array) and g.ndim == a.ndim and _fits(g, a)):
        return None
    if _whole(axes):
        return lambda g, a, axes=None: like(np.ascontiguousarray(g.T), a)
    if isinstance(axes, nt.UniTuple) and isinstance(axes.dtype, nt.Integer) and \
            len(axes) == a.ndim:
        def impl(g, a, axes=None):
            nd = a.ndim
            inv = axes
            for i in range(nd):
                inv = _jrt.tuple_setitem(inv, axes[i] % nd, i)
            return like(np.ascontiguousarray(np.transpose(g, inv)), a)
        return impl


def array_adjoint_of(g, obj):
    raise NotImplementedError


@overload(array_adjoint_of)
def _array_adjoint_of(g, obj):
    """The adjoint of ``np.array(obj)`` for a list of floats (a comprehension's list): one float per
    item, held as a 1-d array (what ``_rt.unappend`` and ``_rt.seq_adjoint_of`` take); for an
    array ``obj``, g in its shape and dtype."""
    if isinstance(obj, nt.List) and isinstance(obj.dtype, nt.Float) and \
            isinstance(g, nt.Array) and g.ndim == 1 and not _jrt._is_complex(g):
        dt = obj.dtype
        return lambda g, obj: g.astype(dt)
    if _fc_array(obj) and isinstance(g, nt.Array) and g.ndim == obj.ndim and _fits(g, obj):
        return lambda g, obj: like(np.ascontiguousarray(g).reshape(obj.shape), obj)


def array_tangent(t, ans, src=None):
    raise NotImplementedError


@overload(array_tangent)
def _array_tangent(t, ans, src=None):
    """The tangent of ``np.array(obj)``/``np.asarray(obj)`` (``rules.numpy.shape.array_tangent``)
    in the result's dtype, as a new array: of a list of numbers (a display ``np.array([a * y[0],
    -y[1]])``: its items' tangents) or of an array; none (0.0) for an integer or bool result."""
    if not isinstance(ans, nt.Array):
        return None
    if not isinstance(ans.dtype, (nt.Float, nt.Complex)):
        return lambda t, ans, src=None: 0.0
    dt = ans.dtype
    if isinstance(t, nt.List) and isinstance(t.dtype, _jrt._NUMBER + (nt.Complex,)) and \
            ans.ndim == 1:
        def impl(t, ans, src=None):
            out = np.empty(len(t), dt)
            for i in range(len(t)):
                out[i] = t[i]
            return out
        return impl
    if isinstance(t, nt.Array) and t.ndim == ans.ndim and \
            (isinstance(dt, nt.Complex) or not isinstance(t.dtype, nt.Complex)):
        return lambda t, ans, src=None: t.astype(dt)
    return None


# -- linear algebra (2-d, float or complex; stacks of matrices run as Python) -------------------
def _mat(*ts):
    return all(_fc_array(t, (2,)) for t in ts)


@register_jitable
def _mH(x):
    return np.ascontiguousarray(_jrt.cj(x).T)


@overload(inv)
def _inv(g, ans):
    if _mat(g, ans):
        def impl(g, ans):
            h = _mH(ans)
            return -(h @ np.ascontiguousarray(g) @ h)
        return impl


@overload(det)
def _det(g, ans, a):
    """At a singular matrix (det 0) the Python rule's adjugate form runs (a run-time refusal:
    numba's inv would raise)."""
    if _mat(a) and isinstance(g, (nt.Float, nt.Complex)) and _fits(g, a):
        def impl(g, ans, a):
            if ans == 0:
                raise ValueError(_jrt.REFUSED)
            return like((g * _jrt.cj(ans)) * _mH(np.linalg.inv(np.ascontiguousarray(a))), a)
        return impl


@overload(det_tangent)
def _det_tangent(t, ans, a):
    """``rules.numpy.linalg.det_tangent``: det(a) tr(a^-1 t); at a singular matrix the Python
    rule's adjugate form (a run-time refusal)."""
    if _mat(a) and _mat(t) and not _jrt._is_complex(a) and not _jrt._is_complex(t):
        def impl(t, ans, a):
            if ans == 0:
                raise ValueError(_jrt.REFUSED)
            return ans * np.trace(np.linalg.solve(np.ascontiguousarray(a),
                                                  np.ascontiguousarray(t)))
        return impl
    return None


@overload(slogdet)
def _slogdet(g, ans, a):
    """g is (g_sign, g_logabsdet); the sign of a real matrix carries no derivative."""
    if not (_mat(a) and not _jrt._is_complex(a) and isinstance(g, nt.BaseTuple) and
            len(g.types) == 2 and isinstance(g.types[1], (nt.Float, nt.Integer))):
        return None
    dt = a.dtype

    def impl(g, ans, a):
        gl = g[1]
        if gl == 0:
            return np.zeros(a.shape, dt)
        return like(gl * _mH(np.linalg.inv(np.ascontiguousarray(a))), a)
    return impl


@overload(solve)
def _solve(g, ans, a, b):
    """``(ga, gb)``: gb = A^-H g, ga = -gb x^H, for a matrix a and a vector or matrix b."""
    if not (_mat(a) and _fc_array(b, (1, 2)) and isinstance(g, nt.Array) and
            g.ndim == b.ndim and isinstance(ans, nt.Array) and _fits(g, a) and _fits(g, b)):
        return None
    if b.ndim == 1:
        def impl(g, ans, a, b):
            gb = np.linalg.solve(_mH(a), np.ascontiguousarray(g))
            ga = -np.outer(gb, _jrt.cj(ans))
            return like(ga, a), like(gb, b)
        return impl

    def impl2(g, ans, a, b):
        gb = np.linalg.solve(_mH(a), np.ascontiguousarray(g))
        ga = -(gb @ _mH(ans))
        return like(ga, a), like(gb, b)
    return impl2


def solve_triangular(g, ans, a, b, trans=0, lower=False, unit_diagonal=False):
    raise NotImplementedError


@overload(solve_triangular, prefer_literal=True)
def _solve_triangular_adj(g, ans, a, b, trans=0, lower=False, unit_diagonal=False):
    """``rules.scipy.linalg.solve_triangular`` for one matrix: gb = op(A)^-H g,
    g_op(A) = -gb x^H, on a's triangle (its diagonal left out for a unit diagonal)."""
    from . import jit_substitutes as S
    tr = S._trans_code(trans)
    if tr is None or not (_mat(a) and _fc_array(b, (1, 2)) and isinstance(g, nt.Array) and
                          g.ndim == b.ndim and isinstance(ans, nt.Array) and
                          ans.ndim == b.ndim and _fits(g, a) and _fits(g, b)):
        return None
    rt = _result(g, a)
    solve = S.trsolve

    def impl(g, ans, a, b, trans=0, lower=False, unit_diagonal=False):
        G = np.empty((g.shape[0], 1 if g.ndim == 1 else g.shape[-1]), rt)
        X = np.ascontiguousarray(ans).reshape((ans.shape[0], -1))
        G[:, :] = np.ascontiguousarray(g).reshape((g.shape[0], -1))
        if tr == 0:
            gb = solve(a, G, 2, lower, unit_diagonal)
        elif tr == 2:
            gb = solve(a, G, 0, lower, unit_diagonal)
        else:
            gb = _jrt.cj(solve(a, np.ascontiguousarray(_jrt.cj(G)), 0, lower, unit_diagonal))
        ga = _neg_outer_triangle(gb, X, tr, lower, unit_diagonal)
        return like(ga, a), like(gb.reshape(b.shape), b)
    return impl


@register_jitable
def _neg_outer_triangle(gb, X, tr, lower, unit):
    """a's adjoint in ``solve_triangular``: the triangle of a that is read (its diagonal left out
    for a unit diagonal) of -op^-1(gb X^H), op^-1 undoing trans (none, ^T, ^H): element (i, j)
    is -sum_c u[i, c] v[j, c] with (u, v) = (gb, conj X), (conj X, gb) or (X, conj gb).  Made
    on the triangle only, by loops for one right-hand side, else from one product."""
    n = gb.shape[0]
    if tr == 0:
        u, v = gb, np.conj(X)
    elif tr == 1:
        u, v = np.conj(X), gb
    else:
        u, v = X, np.conj(gb)
    out = np.zeros((n, n), (u[:1, :1] * v[:1, :1]).dtype)
    if u.shape[1] != 1:
        out[:, :] = u @ np.ascontiguousarray(v.T)
    for i in range(n):
        lo, hi = (0, i + 1) if lower else (i, n)
        if unit:
            lo, hi = (lo, hi - 1) if lower else (lo + 1, hi)
        if u.shape[1] == 1:
            ui = u[i, 0]
            for j in range(lo, hi):
                out[i, j] = -(ui * v[j, 0])
        else:
            for j in range(lo, hi):
                out[i, j] = -out[i, j]
            for j in range(0, lo):
                out[i, j] = 0
            for j in range(hi, n):
                out[i, j] = 0
    return out


def cho_solve(g, ans, c_and_lower, b):
    raise NotImplementedError


@overload(cho_solve)
def _cho_solve_adj(g, ans, c_and_lower, b):
    """``rules.scipy.linalg.cho_solve``: ((gc, None), gb), gb = A^-1 g, gc from the symmetric
    part of -gb x^H on c's triangle."""
    from . import jit_substitutes as S
    if not (isinstance(c_and_lower, nt.BaseTuple) and len(c_and_lower.types) == 2 and
            _mat(c_and_lower.types[0]) and isinstance(c_and_lower.types[1], nt.Boolean) and
            _fc_array(b, (1, 2)) and isinstance(g, nt.Array) and g.ndim == b.ndim and
            isinstance(ans, nt.Array) and ans.ndim == b.ndim and
            _fits(g, c_and_lower.types[0]) and _fits(g, b)):
        return None
    rt = _result(g, c_and_lower.types[0])
    solve2 = S._cho_solve2

    def impl(g, ans, c_and_lower, b):
        c = c_and_lower[0]
        G = np.empty((g.shape[0], 1 if g.ndim == 1 else g.shape[-1]), rt)
        G[:, :] = np.ascontiguousarray(g).reshape((g.shape[0], -1))
        X = np.ascontiguousarray(ans).reshape((ans.shape[0], -1))
        gb = solve2(c_and_lower, G, G, False)
        gA = -(gb @ _mH(X))
        Sy = gA + _mH(gA)
        if c_and_lower[1]:
            gc = np.tril(Sy @ np.tril(c))
        else:
            gc = np.triu(np.triu(c) @ Sy)
        return (like(gc, c), None), like(gb.reshape(b.shape), b)
    return impl


@register_jitable
def _lower_inverse(L):
    """L^-1 of a lower-triangular L, by forward substitution (what the Python helper asks
    ``scipy.linalg.solve_triangular`` for)."""
    n = L.shape[0]
    X = np.zeros(L.shape, L.dtype)
    for c in range(n):
        X[c, c] = 1.0 / L[c, c]
        for i in range(c + 1, n):
            t = X[i, c] * 0
            for j in range(c, i):
                t += L[i, j] * X[j, c]
            X[i, c] = -t / L[i, i]
    return X


@overload(cholesky, prefer_literal=True)
def _cholesky(g, ans, a, upper=False):
    """``rules.numpy.linalg.cholesky``: S = L^-H phi(L^H g) L^-1, symmetrised, on the triangle
    LAPACK reads; for real float64/float32 by SciPy's trmm and trsm, blocked above n = 64
    (rules/jit_lapack.py)."""
    up = _lit(upper, _NOLIT)
    if up not in (True, False) or not (_mat(g, ans, a) and _fits(g, a)):
        return None
    lapack = None
    if g.dtype == ans.dtype and ans.dtype in (nt.float64, nt.float32):
        lapack = jit_lapack.cholesky_adjoint_blocked("d" if ans.dtype == nt.float64 else "s")
    if lapack is not None:
        # real: trmm and trsm from SciPy's BLAS (what the Python helper calls)
        def impl_lapack(g, ans, a, upper=False):
            if up:
                r = lapack(np.ascontiguousarray(g.T), np.ascontiguousarray(ans.T))
                return like(np.ascontiguousarray(r.T), a)
            return like(lapack(np.ascontiguousarray(g), np.ascontiguousarray(ans)), a)
        return impl_lapack
    half = _jrt.const_of(ans)

    def impl(g, ans, a, upper=False):
        L = _mH(ans) if up else np.ascontiguousarray(ans)
        gL = _mH(g) if up else np.ascontiguousarray(g)
        M = _mH(L) @ gL
        P = np.tril(M, -1) + half(0.5) * np.tril(np.triu(M))
        Linv = _lower_inverse(L)
        S = _mH(Linv) @ P @ Linv
        S = half(0.5) * (S + _mH(S))
        if up:
            r = 2 * np.triu(S, 1)
        else:
            r = 2 * np.tril(S, -1)
        for i in range(S.shape[0]):
            r[i, i] = S[i, i].real
        return like(r, a)
    return impl


# -- elementwise selections --------------------------------------------------------------------
@overload(where, prefer_literal=True)
def _where(g, condition, x, first):
    f = _lit(first, _NOLIT)
    if f not in (True, False) or not _fc(g) or not isinstance(condition, nt.Array):
        return None
    # (a zero, not 0 * g, where the other operand was taken: rules.numpy.elementwise.where)
    if f:
        return lambda g, condition, x, first: _jrt.unbroadcast(
            np.where(condition, g, np.zeros_like(g)), x)
    return lambda g, condition, x, first: _jrt.unbroadcast(
        np.where(condition, np.zeros_like(g), g), x)


@register_jitable
def _wins(a, b, sign, nan):
    """Where operand ``a`` of np.maximum (sign 1) / np.minimum (-1) is the result, ``b`` one of
    them an array; with ``nan`` (fmax/fmin) also where only ``b`` is NaN."""
    win = (a > b) if sign > 0 else (a < b)
    if nan:
        win = win | (np.isnan(b) & ~np.isnan(a))
    return win


@overload(maximum, prefer_literal=True)
def _maximum(g, x1, x2, which, sign=1, nan=False):
    """Adjoint of maximum/minimum (sign -1), fmax/fmin (nan=True): g to the winner, half to each
    of a tie."""
    w, sg, nn = _lit(which, _NOLIT), _lit(sign, _NOLIT), _lit(nan, _NOLIT)
    if w not in (0, 1) or sg not in (1, -1) or nn not in (True, False):
        return None
    if not (_fc(g) and _real(x1) and _real(x2) and not _jrt._is_complex(g)):
        return None
    C = _jrt.const_of(g)

    def impl(g, x1, x2, which, sign=1, nan=False):
        a, b = (x1, x2) if w == 0 else (x2, x1)
        win = _wins(a, b, sg, nn)
        r = np.where(win, g, np.where(a == b, C(0.5) * g, 0 * g))
        return _jrt.unbroadcast(r, x1 if w == 0 else x2)
    return impl


def maximum_tangent(t, x1, x2, which, sign=1, nan=False):
    raise NotImplementedError


@overload(maximum_tangent, prefer_literal=True)
def _maximum_tangent(t, x1, x2, which, sign=1, nan=False):
    """``rules.numpy.elementwise.maximum_tangent``: the tangent ``t`` of operand ``which`` where it
    wins, half of it at a tie, zero elsewhere, in the result's shape (maximum/minimum with sign
    -1, fmax/fmin with nan=True; real operands)."""
    w, sg, nn = _lit(which, _NOLIT), _lit(sign, _NOLIT), _lit(nan, _NOLIT)
    if w not in (0, 1) or sg not in (1, -1) or nn not in (True, False):
        return None
    if not (_real(t) and _real(x1) and _real(x2)):
        return None
    if not any(isinstance(v, nt.Array) for v in (t, x1, x2)):
        def scalar(t, x1, x2, which, sign=1, nan=False):
            a, b = (x1, x2) if w == 0 else (x2, x1)
            win = (a > b) if sg > 0 else (a < b)
            if nn:
                win = win or (np.isnan(b) and not np.isnan(a))
            return float(t) if win else 0.5 * t if a == b else 0.0
        return scalar
    C = _jrt.const_of(x1 if isinstance(x1, nt.Array) else x2)

    def impl(t, x1, x2, which, sign=1, nan=False):
        a, b = (x1, x2) if w == 0 else (x2, x1)
        win = _wins(a, b, sg, nn)
        tt = t + np.zeros_like(win, C)           # (t in the result's shape)
        return np.where(win, tt, np.where(a == b, C(0.5) * tt, C(0) * tt))
    return impl


# -- statistics ---------------------------------------------------------------------------------
@overload(_correction)
def _correction_ov(ddof=0, correction=None):
    if _whole(correction):
        return lambda ddof=0, correction=None: ddof
    return lambda ddof=0, correction=None: correction


def _stat_args(g, a, axis):
    """'whole' or 'axis' where var/std/extremum have a compiled body for these types."""
    if not (isinstance(a, nt.Array) and isinstance(a.dtype, nt.Float)) or _jrt._is_complex(g):
        return None
    if _whole(axis) and isinstance(g, (nt.Float, nt.Integer)):
        return "whole"
    if _reduced(g, a, axis) == "array":
        return "axis"
    return None


@overload(var)
def _var(g, a, axis=None, ddof=0, keepdims=False, mean=None):
    if _over_axes(g, a, axis) and _whole(mean):
        return _rows_adjoint("g, a, axis=None, ddof=0, keepdims=False, mean=None",
                             "var(G, b, 1, ddof, False, None)")
    kind = _stat_args(g, a, axis)
    if kind is None or not _whole(mean):
        return None
    C = a.dtype
    if kind == "whole":
        return lambda g, a, axis=None, ddof=0, keepdims=False, mean=None: like(
            g * C(2.0 / (a.size - ddof)) * (a - np.mean(a)), a)

    def impl(g, a, axis=None, ddof=0, keepdims=False, mean=None):
        ax = axis % a.ndim
        n = a.shape[ax]
        mu = _spread(np.sum(a, axis=ax) / C(n), a.shape, ax, np.empty(a.shape, C))
        ge = _spread(g, a.shape, ax, np.empty(a.shape, C))
        return like(ge * C(2.0 / (n - ddof)) * (a - mu), a)
    return impl


@overload(std)
def _std(g, ans, a, axis=None, ddof=0, keepdims=False):
    if _over_axes(g, a, axis):
        return _rows_adjoint("g, ans, a, axis=None, ddof=0, keepdims=False",
                             "std(G, rows_of(ans, n), b, 1, ddof, False)")
    kind = _stat_args(g, a, axis)
    if kind is None:
        return None
    C = a.dtype
    if kind == "whole":
        def impl(g, ans, a, axis=None, ddof=0, keepdims=False):
            if ans == 0:
                return np.zeros(a.shape, C)
            return like(g * (a - np.mean(a)) / (C(a.size - ddof) * ans), a)
        return impl

    def impl2(g, ans, a, axis=None, ddof=0, keepdims=False):
        ax = axis % a.ndim
        n = a.shape[ax]
        mu = _spread(np.sum(a, axis=ax) / C(n), a.shape, ax, np.empty(a.shape, C))
        ge = _spread(g, a.shape, ax, np.empty(a.shape, C))
        se = _spread(ans, a.shape, ax, np.empty(a.shape, C))
        safe = np.where(se == 0, C(1), se)
        return like(np.where(se == 0, C(0), ge * (a - mu) / (C(n - ddof) * safe)), a)
    return impl2


@register_jitable
def _others_along(a, ax, one):
    """For each element of ``a``, the product of the other elements of its line along axis
    ``ax`` (C-ordered, of a's shape), exact with zeros: left and right running products."""
    f = np.ascontiguousarray(a).ravel()
    out = np.empty(f.size, f.dtype)
    outer, n, inner = _R._split(a.shape, ax)
    if f.size == 0:
        return out.reshape(a.shape)
    for o in range(outer):
        for i in range(inner):
            base = o * n * inner + i
            p = one
            for j in range(n):
                out[base + j * inner] = p
                p = p * f[base + j * inner]
            p = one
            for j in range(n - 1, -1, -1):
                out[base + j * inner] *= p
                p = p * f[base + j * inner]
    return out.reshape(a.shape)


@overload(prod)
def _prod(g, a, axis=None, keepdims=False):
    """g times the product of the other elements, exact with zeros (left and right running
    products, as the Python helper's cumprods); over the whole array or one axis."""
    if _over_axes(g, a, axis):
        return _rows_adjoint("g, a, axis=None, keepdims=False", "prod(G, b, 1, False)")
    if not (_fc_array(a) and _fits(g, a)):
        return None
    dt = a.dtype
    kind = _reduced(g, a, axis)
    if kind == "array":
        def along(g, a, axis=None, keepdims=False):
            ax = axis % a.ndim
            ge = _spread(g, a.shape, ax, np.empty(a.shape, dt))
            return like(ge * _jrt.cj(_others_along(a, ax, dt(1))), a)
        return along
    if kind == "scalar" or _whole(axis) and isinstance(g, (nt.Float, nt.Complex)):
        # (over the whole array, or a 1-d array over its axis: one line of all the elements)
        return lambda g, a, axis=None, keepdims=False: like(
            g * _jrt.cj(_others_along(np.ascontiguousarray(a).ravel(), 0, dt(1))
                        .reshape(a.shape)), a)


def prod_tangent(t, a, axis=None, keepdims=False):
    raise NotImplementedError


@overload(prod_tangent, prefer_literal=True)
def _prod_tangent(t, a, axis=None, keepdims=False):
    """sum of t times the product of the other elements, over the whole array or one axis (as
    ``rules.numpy.reductions.prod_tangent``)."""
    if not (_fc_array(a) and isinstance(t, nt.Array) and t.ndim == a.ndim and _fits(t, a)):
        return None
    dt = a.dtype
    keep = _lit(keepdims, _NOLIT)
    if _whole(axis) and keep is False:
        def whole(t, a, axis=None, keepdims=False):
            f = np.ascontiguousarray(a).ravel()
            return np.sum(np.ascontiguousarray(t).ravel() * _others_along(f, 0, dt(1)))
        return whole
    if _R._axes_tuple(axis):
        run = _row_tangent(_prod_rows, False, t, a, axis, keepdims, True)
        if run is not None:
            return lambda t, a, axis=None, keepdims=False: run(t, 0.0, a, axis, 0)
        return None
    if isinstance(axis, nt.Integer) and keep in (False, True):
        def along(t, a, axis=None, keepdims=False):
            ax = axis % a.ndim
            s = np.sum(t * _others_along(a, ax, dt(1)), axis=ax)
            return np.expand_dims(s, ax) if keep else s
        return along


# -- the tangents of var, std and max/min (and prod over a tuple of axes), read as rows ----------
def var_tangent(t, a, axis=None, ddof=0, keepdims=False, where=True):
    raise NotImplementedError


def std_tangent(t, ans, a, axis=None, ddof=0, keepdims=False, where=True):
    raise NotImplementedError


def extremum_tangent(t, ans, a, axis=None, keepdims=False, where=True):
    raise NotImplementedError


def axes_of(axis, nd):
    raise NotImplementedError


@overload(axes_of)
def _axes_of(axis, nd):
    """The reduced axes as an int64 array: every axis (None), one, or a tuple's."""
    if _whole(axis):
        return lambda axis, nd: np.arange(nd)
    if isinstance(axis, nt.Integer):
        return lambda axis, nd: np.full(1, axis, np.int64)
    if _R._axes_tuple(axis):
        return lambda axis, nd: _R.axes_array(axis)


@register_jitable
def _var_rows(T, b, ans, ddof):
    """Per row: 2/(n - ddof) * sum((b - mean) * T) (``rules.numpy.reductions.var_tangent``)."""
    out = np.empty(b.shape[0], b.dtype)
    n = b.shape[1]
    for o in range(b.shape[0]):
        mu = np.sum(b[o]) / n
        out[o] = np.sum((b[o] - mu) * T[o]) * (2.0 / (n - ddof))
    return out


@register_jitable
def _std_rows(T, b, ans, ddof):
    """var's tangent / (2 std), 0 where the standard deviation is 0."""
    v = _var_rows(T, b, ans, ddof)
    for o in range(v.shape[0]):
        v[o] = 0.0 if ans[o] == 0 else v[o] / (2 * ans[o])
    return v


@register_jitable
def _extremum_rows(T, b, ans, ddof):
    """The mean of T over the elements equal to the row's max/min (a select: a NaN tangent off
    the extremum does not reach it; 0 for a row of NaN)."""
    out = np.empty(b.shape[0], b.dtype)
    for o in range(b.shape[0]):
        s = 0.0
        c = 0
        for k in range(b.shape[1]):
            if b[o, k] == ans[o]:
                s += T[o, k]
                c += 1
        out[o] = s / max(c, 1)
    return out


@register_jitable
def _prod_rows(T, b, ans, ddof):
    out = np.empty(b.shape[0], b.dtype)
    for o in range(b.shape[0]):
        out[o] = np.sum(T[o] * _others_along(b[o], 0, b.dtype.type(1)))
    return out


def _row_tangent(rows, with_ans, t, a, axis, keepdims, where):
    """The impl of a reduction's tangent from ``rows(T, b, ans_rows, ddof)`` (per row of the
    array read as rows over the reduced axes), shaped as the reduction's result."""
    keep = _lit(keepdims, _NOLIT)
    if not (isinstance(a, nt.Array) and isinstance(a.dtype, nt.Float) and
            isinstance(t, nt.Array) and t.ndim == a.ndim and isinstance(t.dtype, nt.Float) and
            keep in (False, True) and _R._no_value(where)) or \
            not (_whole(axis) or isinstance(axis, nt.Integer) or _R._axes_tuple(axis)):
        return None
    nd = a.ndim
    k = nd if _whole(axis) else 1 if isinstance(axis, nt.Integer) else len(axis.types)
    zeros = (0,) * max(nd - k, 1)
    scalar = not keep and k == nd

    @register_jitable
    def run(t, ans, a, axis, ddof):
        axes = axes_of(axis, a.ndim)
        b, _ = _R.to_rows(a, axes)
        T, _ = _R.to_rows(t, axes)
        r = rows(T, b, rows_of(ans, b.shape[0]) if with_ans else b[:, 0], ddof)
        if scalar:
            return r[0]
        if keep:
            return r.reshape(_R.ones_at(a.shape, axes))
        return r.reshape(_R.kept_shape(a.shape, axes, zeros))
    return run


@overload(var_tangent)
def _var_tangent(t, a, axis=None, ddof=0, keepdims=False, where=True):
    run = _row_tangent(_var_rows, False, t, a, axis, keepdims, where)
    if run is not None and isinstance(ddof, (nt.Integer, nt.Omitted, int)):
        return lambda t, a, axis=None, ddof=0, keepdims=False, where=True: \
            run(t, 0.0, a, axis, ddof)


@overload(std_tangent)
def _std_tangent(t, ans, a, axis=None, ddof=0, keepdims=False, where=True):
    run = _row_tangent(_std_rows, True, t, a, axis, keepdims, where)
    if run is not None and isinstance(ddof, (nt.Integer, nt.Omitted, int)):
        return lambda t, ans, a, axis=None, ddof=0, keepdims=False, where=True: \
            run(t, ans, a, axis, ddof)


@overload(extremum_tangent)
def _extremum_tangent(t, ans, a, axis=None, keepdims=False, where=True):
    run = _row_tangent(_extremum_rows, True, t, a, axis, keepdims, where)
    if run is not None:
        return lambda t, ans, a, axis=None, keepdims=False, where=True: \
            run(t, ans, a, axis, 0)


@overload(extremum)
def _extremum(g, ans, a, axis=None, keepdims=False):
    """g shared evenly among the elements equal to the max/min."""
    if _over_axes(g, a, axis):
        return _rows_adjoint("g, ans, a, axis=None, keepdims=False",
                             "extremum(G, rows_of(ans, n), b, 1, False)")
    kind = _stat_args(g, a, axis)
    if kind is None:
        return None
    if kind == "whole":
        def impl(g, ans, a, axis=None, keepdims=False):
            mask = a == ans
            return like(mask * (g / max(mask.sum(), 1)), a)
        return impl
    C = a.dtype

    def impl2(g, ans, a, axis=None, keepdims=False):
        ax = axis % a.ndim
        mask = a == _spread(ans, a.shape, ax, np.empty(a.shape, C))
        n = _spread(np.sum(mask, axis=ax), a.shape, ax, np.empty(a.shape, np.int64))
        ge = _spread(g, a.shape, ax, np.empty(a.shape, C))
        return like(mask * (ge / np.maximum(n, 1)), a)
    return impl2


# -- np.diff ---------------------------------------------------------------------------------------
def diff(g, a, n=1, axis=-1):
    raise NotImplementedError


@register_jitable
def _diff_back(b, ax):
    """One step of np.diff's adjoint along ``ax`` of a C-contiguous ``b``: -diff(pad(b, 1, 1))."""
    outer, m, inner = _R._split(b.shape, ax)
    v = b.reshape((outer, m, inner))
    out = np.zeros((outer, m + 1, inner), b.dtype)
    for p in range(outer):
        for k in range(m + 1):
            for q in range(inner):
                s = out[p, k, q]
                if k >= 1:
                    s += v[p, k - 1, q]
                if k < m:
                    s -= v[p, k, q]
                out[p, k, q] = s
    return out.reshape(tuple_setitem(b.shape, ax, m + 1))


@overload(diff)
def _diff(g, a, n=1, axis=-1):
    """The adjoint of ``np.diff(a, n, axis)``: n steps of -diff of g padded with a zero at both
    ends (as ``rules.numpy.shape.diff``)."""
    if not (_fc_array(a) and _real(a) and isinstance(g, nt.Array) and g.ndim == a.ndim and
            isinstance(g.dtype, nt.Float) and isinstance(n, (nt.Integer, nt.Omitted, int)) and
            isinstance(axis, (nt.Integer, nt.Omitted, int))):
        return None

    def impl(g, a, n=1, axis=-1):
        ax = axis % a.ndim
        r = np.ascontiguousarray(g)
        for _ in range(n):
            r = _diff_back(r, ax)
        return like(r, a)
    return impl


# -- np.sort -------------------------------------------------------------------------------------
def sort(g, a, axis=-1):
    raise NotImplementedError


def sort_tangent(t, a, axis=-1):
    raise NotImplementedError


@register_jitable
def _sort_perm(a):
    """Each row's (last axis) stable sorting permutation of ``a``, rows in C order:
    (its (rows, n) int array, n)."""
    n = a.shape[-1] if a.ndim else 1
    b = np.ascontiguousarray(a).reshape((a.size // max(n, 1), n))
    perm = np.empty(b.shape, np.intp)
    for r in range(b.shape[0]):
        perm[r] = np.argsort(b[r], kind="mergesort")
    return perm, n


def _sort_last(a, axis):
    """np.sort of a real float array along its last axis (axis -1 or ndim - 1, a literal)."""
    ax = _lit(axis, _NOLIT)
    return _fc_array(a) and _real(a) and isinstance(ax, int) and ax in (-1, a.ndim - 1)


@overload(sort, prefer_literal=True)
def _sort(g, a, axis=-1):
    """g sent back through each row's sorting permutation (stable, as the Python helper's)."""
    if not (_sort_last(a, axis) and isinstance(g, nt.Array) and g.ndim == a.ndim):
        return None
    dt = a.dtype

    def impl(g, a, axis=-1):
        perm, n = _sort_perm(a)
        gb = np.ascontiguousarray(g).reshape(perm.shape)
        out = np.zeros(perm.shape, dt)
        for r in range(perm.shape[0]):
            for k in range(n):
                out[r, perm[r, k]] = gb[r, k]
        return like(out.reshape(a.shape), a)
    return impl


@overload(sort_tangent, prefer_literal=True)
def _sort_tangent(t, a, axis=-1):
    """t taken through each row's sorting permutation."""
    if not (_sort_last(a, axis) and isinstance(t, nt.Array) and t.ndim == a.ndim):
        return None

    def impl(t, a, axis=-1):
        perm, n = _sort_perm(a)
        tb = np.ascontiguousarray(t).reshape(perm.shape)
        out = np.empty(perm.shape, tb.dtype)
        for r in range(perm.shape[0]):
            for k in range(n):
                out[r, k] = tb[r, perm[r, k]]
        return out.reshape(a.shape)
    return impl


# -- np.nansum, np.nanmean ------------------------------------------------------------------------
def nansum(g, a, axis=None, keepdims=False, mean=False, where=True):
    raise NotImplementedError


def nansum_tangent(t, a, axis=None, keepdims=False, mean=False, where=True):
    raise NotImplementedError


def _nan_whole(a, axis, keepdims, mean, where):
    """Over the whole real array, no keepdims and no where=: numba's own nansum/nanmean."""
    return _fc_array(a) and _real(a) and _whole(axis) and _lit(keepdims, _NOLIT) is False and \
        _lit(mean, _NOLIT) in (False, True) and _lit(where, _NOLIT) is True


@overload(nansum, prefer_literal=True)
def _nansum(g, a, axis=None, keepdims=False, mean=False, where=True):
    """g at the entries that are not nan (divided by their count for nanmean), 0 at the nan."""
    if not (_nan_whole(a, axis, keepdims, mean, where) and isinstance(g, (nt.Float, nt.Integer))):
        return None
    dt = a.dtype
    average = _lit(mean)

    def impl(g, a, axis=None, keepdims=False, mean=False, where=True):
        ok = ~np.isnan(a)
        ge = g / max(np.sum(ok), 1) if average else g
        return np.where(ok, ge, 0.0).astype(dt)
    return impl


@overload(nansum_tangent, prefer_literal=True)
def _nansum_tangent(t, a, axis=None, keepdims=False, mean=False, where=True):
    """The sum (mean) of t over the entries that are not nan."""
    if not (_nan_whole(a, axis, keepdims, mean, where) and isinstance(t, nt.Array) and
            t.ndim == a.ndim):
        return None
    average = _lit(mean)

    def impl(t, a, axis=None, keepdims=False, mean=False, where=True):
        ok = ~np.isnan(a)
        r = np.sum(np.where(ok, t, 0.0))
        if not average:
            return r
        n = np.sum(ok)
        return r / n if n else np.nan
    return impl


# -- scipy.special.logsumexp, softmax, log_softmax ---------------------------------------------
def logsumexp(g, ans, a, axis=None, b=None, keepdims=False, which=0, return_sign=False):
    raise NotImplementedError


def logsumexp_tangent(t, ans, a, axis=None, b=None, keepdims=False, which=0, return_sign=False):
    raise NotImplementedError


def softmax(g, ans, x, axis=None):
    raise NotImplementedError


def log_softmax(g, ans, x, axis=None):
    raise NotImplementedError


def _lse_plain(a, b, which, return_sign):
    """The forms compiled here: a real float array, for ``a`` (which=0), no b=, no sign."""
    return _fc_array(a) and _real(a) and _lit(b, _NOLIT) is None and \
        _lit(which, _NOLIT) == 0 and _lit(return_sign, _NOLIT) is False


@overload(logsumexp, prefer_literal=True)
def _logsumexp(g, ans, a, axis=None, b=None, keepdims=False, which=0, return_sign=False):
    """g exp(a - ans), g and ans spread along the reduced axis (``rules.scipy.special``)."""
    if not _lse_plain(a, b, which, return_sign):
        return None
    dt = a.dtype
    if _whole(axis) and isinstance(g, (nt.Float, nt.Integer)) and isinstance(ans, nt.Float):
        return lambda g, ans, a, axis=None, b=None, keepdims=False, which=0, \
            return_sign=False: like(g * np.exp(a - ans), a)
    kind = _reduced(g, a, axis)
    if kind == "scalar" and isinstance(ans, nt.Float):
        return lambda g, ans, a, axis=None, b=None, keepdims=False, which=0, \
            return_sign=False: like(g * np.exp(a - ans), a)
    if kind == "array" and isinstance(ans, nt.Array) and ans.ndim == g.ndim:
        def impl(g, ans, a, axis=None, b=None, keepdims=False, which=0, return_sign=False):
            ax = axis % a.ndim
            ge = _spread(g, a.shape, ax, np.empty(a.shape, dt))
            le = _spread(ans, a.shape, ax, np.empty(a.shape, dt))
            return like(ge * np.exp(a - le), a)
        return impl


@overload(logsumexp_tangent, prefer_literal=True)
def _logsumexp_tangent(t, ans, a, axis=None, b=None, keepdims=False, which=0,
                       return_sign=False):
    """sum of exp(a - ans) t over the reduced axis."""
    if not (_lse_plain(a, b, which, return_sign) and isinstance(t, nt.Array) and
            t.ndim == a.ndim):
        return None
    dt = a.dtype
    keep = _lit(keepdims, _NOLIT)
    if _whole(axis) and keep is False and isinstance(ans, nt.Float):
        return lambda t, ans, a, axis=None, b=None, keepdims=False, which=0, \
            return_sign=False: np.sum(np.exp(a - ans) * t)
    if isinstance(axis, nt.Integer) and keep in (False, True) and \
            (isinstance(ans, nt.Array) or a.ndim == 1 and isinstance(ans, nt.Float)):
        def along(t, ans, a, axis=None, b=None, keepdims=False, which=0, return_sign=False):
            ax = axis % a.ndim
            le = _spread(np.asarray(ans), a.shape, ax, np.empty(a.shape, dt))
            s = np.sum(np.exp(a - le) * t, axis=ax)
            return np.expand_dims(s, ax) if keep else s
        return along


def _softmax_form(g, ans, x, axis):
    """"whole" or "axis" where g, ans and x are float arrays of one shape, else None."""
    if not (_fc_array(x) and _real(x) and isinstance(g, nt.Array) and
            isinstance(ans, nt.Array) and g.ndim == ans.ndim == x.ndim):
        return None
    return "whole" if _whole(axis) else "axis" if isinstance(axis, nt.Integer) else None


@overload(softmax)
def _softmax(g, ans, x, axis=None):
    """g ans - ans sum(g ans) along the axis."""
    form = _softmax_form(g, ans, x, axis)
    dt = x.dtype if form else None
    if form == "whole":
        def whole(g, ans, x, axis=None):
            gs = g * ans
            return like(gs - ans * np.sum(gs), x)
        return whole
    if form == "axis":
        def along(g, ans, x, axis=None):
            ax = axis % x.ndim
            gs = g * ans
            return like(gs - ans * _spread(np.sum(gs, axis=ax), x.shape, ax,
                                           np.empty(x.shape, dt)), x)
        return along


@overload(log_softmax)
def _log_softmax(g, ans, x, axis=None):
    """g - exp(ans) sum(g) along the axis."""
    form = _softmax_form(g, ans, x, axis)
    dt = x.dtype if form else None
    if form == "whole":
        return lambda g, ans, x, axis=None: like(g - np.exp(ans) * np.sum(g), x)
    if form == "axis":
        def along(g, ans, x, axis=None):
            ax = axis % x.ndim
            return like(g - np.exp(ans) * _spread(np.sum(g, axis=ax), x.shape, ax,
                                                  np.empty(x.shape, dt)), x)
        return along


# -- np.linalg.norm -----------------------------------------------------------------------------
def norm(g, ans, x, ord=None, axis=None, keepdims=False):
    raise NotImplementedError


def norm_tangent(t, ans, x, ord=None, axis=None, keepdims=False, vector=False):
    raise NotImplementedError


def _two_norm(ans, x, ord, axis, keepdims):
    """True where ``np.linalg.norm(x, ord, axis, keepdims)`` is the 2-norm of a real 1-D array or
    the Frobenius norm of a real 2-D one, a scalar ``ans``: ord and axis None, keepdims a literal
    False.  Every other form (another ord, an axis, complex or integer x) has no compiled body:
    it falls back to the Python helper."""
    return (isinstance(x, nt.Array) and isinstance(x.dtype, nt.Float) and x.ndim in (1, 2) and
            _lit(ord, _NOLIT) is None and _lit(axis, _NOLIT) is None and
            _lit(keepdims, _NOLIT) is False and isinstance(ans, nt.Float))


def _norm_along(x, ord, axis, keepdims):
    """The 2-norm of a real array's vectors along one integer axis (ord None), keepdims a
    literal: whether it is kept, else None."""
    keep = _lit(keepdims, _NOLIT)
    if isinstance(x, nt.Array) and isinstance(x.dtype, nt.Float) and \
            _lit(ord, _NOLIT) is None and isinstance(axis, nt.Integer) and keep in (False, True):
        return keep
    return None


@register_jitable
def _norm_weights(ans, x, ax, dt):
    """x / ans with ans spread along axis ``ax`` (0 where ans is 0)."""
    ae = _spread(np.asarray(ans), x.shape, ax, np.empty(x.shape, dt))
    safe = np.where(ae == 0, 1.0, ae)
    return np.where(ae == 0, 0.0, x / safe)


@overload(norm, prefer_literal=True)
def _norm(g, ans, x, ord=None, axis=None, keepdims=False):
    """g x / ans (zeros where ans is 0), as ``rules.numpy.linalg.norm`` for these forms."""
    if _norm_along(x, ord, axis, keepdims) is not None and \
            (isinstance(g, nt.Array) or x.ndim == 1 and isinstance(g, (nt.Float, nt.Integer))):
        dt = x.dtype

        def along(g, ans, x, ord=None, axis=None, keepdims=False):
            ax = axis % x.ndim
            ge = _spread(np.asarray(g), x.shape, ax, np.empty(x.shape, dt))
            return ge * _norm_weights(ans, x, ax, dt)
        return along
    if not (_two_norm(ans, x, ord, axis, keepdims) and isinstance(g, (nt.Float, nt.Integer))):
        return None
    dt = x.dtype

    def impl(g, ans, x, ord=None, axis=None, keepdims=False):
        if ans == 0:
            return np.zeros(x.shape, dt)
        return like(g * x / ans, x)
    return impl


@overload(norm_tangent, prefer_literal=True)
def _norm_tangent(t, ans, x, ord=None, axis=None, keepdims=False, vector=False):
    """sum(x / ans * t) (0 where ans is 0), as ``rules.numpy.linalg.norm_tangent``."""
    keep = _norm_along(x, ord, axis, keepdims)
    if keep is not None and _lit(vector, _NOLIT) is False and isinstance(t, nt.Array) and \
            t.ndim == x.ndim:
        dx = x.dtype

        def along(t, ans, x, ord=None, axis=None, keepdims=False, vector=False):
            ax = axis % x.ndim
            s = np.sum(_norm_weights(ans, x, ax, dx) * t, axis=ax)
            return np.expand_dims(s, ax) if keep else s
        return along
    if not (_two_norm(ans, x, ord, axis, keepdims) and _lit(vector, _NOLIT) is False and
            isinstance(t, nt.Array) and isinstance(t.dtype, nt.Float) and t.ndim == x.ndim):
        return None
    dt = ans

    def impl(t, ans, x, ord=None, axis=None, keepdims=False, vector=False):
        if ans == 0:
            return dt(0)
        return dt(np.sum(x / ans * t))
    return impl


# -- np.power -----------------------------------------------------------------------------------
@overload(power_base)
def _power_base(g, x1, x2):
    """g * conj(x2 x1^(x2-1)), 0 where x2 == 0 (a scalar base with a scalar exponent: Python,
    whose float power differs from NumPy's below zero and at 0 ** -1)."""
    if not (_fc(g) and _fc(x1) and (isinstance(x2, (nt.Integer, nt.Float)) or _fc(x2))):
        return None
    if isinstance(x2, nt.Array):
        Z = _result(x1, x2)
        return lambda g, x1, x2: _jrt.unbroadcast(
            g * _jrt.cj(np.where(x2 == 0, Z(0), x2 * x1 ** (x2 - 1))), x1)
    if not isinstance(x1, nt.Array):
        return None
    if isinstance(x2, nt.Float):
        B = _jrt.const_of(x1)           # a Python float exponent joins float32 as float32

        def impl(g, x1, x2):
            bb = B(x2)
            d = bb * x1 ** (bb - B(1))
            if x2 == 0:
                d = np.zeros_like(d)
            return _jrt.unbroadcast(g * _jrt.cj(d), x1)
        return impl

    def impl2(g, x1, x2):
        d = x2 * x1 ** (x2 - 1)
        if x2 == 0:
            d = np.zeros_like(d)
        return _jrt.unbroadcast(g * _jrt.cj(d), x1)
    return impl2


@overload(power_exponent)
def _power_exponent(g, ans, x1, x2):
    """g * conj(x1^x2 log x1), 0 where x1 == 0."""
    if not (_fc(g) and _fc(x1) and _fc(x2) and _fc(ans)):
        return None
    if isinstance(x1, nt.Array):
        one = x1.dtype(1)
        return lambda g, ans, x1, x2: _jrt.unbroadcast(
            g * _jrt.cj(ans * np.log(np.where(x1 == 0, one, x1))), x2)

    one = x1(1)

    def impl(g, ans, x1, x2):
        safe = x1 if x1 != 0 else one
        return _jrt.unbroadcast(g * _jrt.cj(ans * np.log(safe)), x2)
    return impl


# -- concatenate / stack of a list of arrays, transpose with axes, cumsum, trace, clip -----------
def concatenate(g, arrays, axis=0):
    raise NotImplementedError


def stack(g, arrays, axis=0):
    raise NotImplementedError


def cumsum(g, a, axis=None):
    raise NotImplementedError


def trace(g, a, offset=0, axis1=0, axis2=1):
    raise NotImplementedError


def clip_bounds(a, a_min, a_max, min, max):
    raise NotImplementedError


def clip(g, a, lo, hi, which):
    raise NotImplementedError


def _array_list(arrays, g):
    """A list of float or complex arrays of one type, whose adjoints ``g`` fits."""
    return isinstance(arrays, nt.List) and _fc_array(arrays.dtype) and \
        isinstance(g, nt.Array) and _fits(g, arrays.dtype)


def _array_tuple(arrays, g, ndim):
    """A tuple of float or complex arrays of ``ndim`` dimensions, whose adjoints ``g`` fits (the
    items' layouts may differ: ``(y, y[:1])``)."""
    return isinstance(arrays, nt.BaseTuple) and bool(arrays.types) and \
        isinstance(g, nt.Array) and all(_fc_array(t) and t.ndim == ndim and _fits(g, t)
                                        for t in arrays.types)


@overload(concatenate, prefer_literal=True)
def _concatenate(g, arrays, axis=0):
    """The pieces of g along a literal axis 0, 1 or 2 (of the items' dimensions), as a list of
    adjoints in the items' dtype for a list (``_rt.parts`` takes it), a tuple for a tuple."""
    ax = _lit(axis, _NOLIT)
    if not isinstance(ax, int) or not isinstance(g, nt.Array):
        return None
    nd = g.ndim
    k = ax % nd if -nd <= ax < nd else None
    if k is None or k > 2:
        return None
    piece = (_piece0, _piece1, _piece2)[k]
    if _array_tuple(arrays, g, nd):
        def at(i):                      # (the offset of item i: the lengths of those before it)
            o = " + ".join(f"arrays[{j}].shape[k]" for j in range(i)) or "0"
            return f"like(np.ascontiguousarray(piece(g, {o}, {o} + arrays[{i}].shape[k])), " \
                   f"arrays[{i}])"
        # (one adjoint per item, a tuple: _rt.parts takes it)
        return _jrt._tuple_fn(len(arrays.types), at, "g, arrays, axis=0",
                              {"like": like, "np": np, "piece": piece, "k": k})
    if not (_array_list(arrays, g) and g.ndim == arrays.dtype.ndim):
        return None

    def impl(g, arrays, axis=0):
        out = []
        o = 0
        for a in arrays:
            n = a.shape[k]
            out.append(like(np.ascontiguousarray(piece(g, o, o + n)), a))
            o += n
        return out
    return impl


@register_jitable
def _piece0(g, i, j):
    return g[i:j]


@register_jitable
def _piece1(g, i, j):
    return g[:, i:j]


@register_jitable
def _piece2(g, i, j):
    return g[:, :, i:j]


@overload(stack, prefer_literal=True)
def _stack(g, arrays, axis=0):
    """g's slices along a literal axis 0 (the new one), one per item, as a list of adjoints (a
    tuple for a tuple)."""
    ax = _lit(axis, _NOLIT)
    if not (isinstance(ax, int) and isinstance(g, nt.Array) and ax % g.ndim == 0 and
            -g.ndim <= ax < g.ndim):
        return None
    if _array_tuple(arrays, g, g.ndim - 1):
        return _jrt._tuple_fn(len(arrays.types), "like(np.ascontiguousarray(g[{i}]), arrays[{i}])",
                              "g, arrays, axis=0", {"like": like, "np": np})
    if not (_array_list(arrays, g) and g.ndim == arrays.dtype.ndim + 1):
        return None

    def impl(g, arrays, axis=0):
        out = []
        for i in range(len(arrays)):
            out.append(like(np.ascontiguousarray(g[i]), arrays[i]))
        return out
    return impl


@overload(cumsum)
def _cumsum(g, a, axis=None):
    """Reversed cumulative sums of g: of the flattened g (axis None, in C order), or along
    axis 0 or 1 of a 1-d or 2-d a."""
    if not (_fc_array(a, (1, 2)) and isinstance(g, nt.Array) and _fits(g, a)):
        return None
    rt = _result(g, a)
    if _whole(axis) and g.ndim == 1:
        def impl(g, a, axis=None):
            f = np.ascontiguousarray(g)
            r = np.empty(f.size, rt)
            t = rt(0)
            for i in range(f.size - 1, -1, -1):
                t += f[i]
                r[i] = t
            return like(r.reshape(a.shape), a)
        return impl
    if isinstance(axis, nt.Integer) and g.ndim == a.ndim:
        def impl2(g, a, axis=None):
            ax = axis % a.ndim
            G = np.ascontiguousarray(g).reshape((g.shape[0], -1))
            r = np.empty(G.shape, rt)
            if ax == 0:
                for j in range(G.shape[1]):
                    t = rt(0)
                    for i in range(G.shape[0] - 1, -1, -1):
                        t += G[i, j]
                        r[i, j] = t
            else:
                for i in range(G.shape[0]):
                    t = rt(0)
                    for j in range(G.shape[1] - 1, -1, -1):
                        t += G[i, j]
                        r[i, j] = t
            return like(r.reshape(a.shape), a)
        return impl2


@overload(trace, prefer_literal=True)
def _trace(g, a, offset=0, axis1=0, axis2=1):
    """g on the offset-th diagonal of zeros shaped like a matrix a (axes 0 and 1)."""
    a1, a2 = _lit(axis1, _NOLIT), _lit(axis2, _NOLIT)
    if not (_fc_array(a, (2,)) and isinstance(g, (nt.Float, nt.Integer, nt.Complex)) and
            _fits(g, a) and a1 in (0, -2) and a2 in (1, -1)):
        return None
    dt = a.dtype

    def impl(g, a, offset=0, axis1=0, axis2=1):
        out = np.zeros(a.shape, dt)
        n, m = a.shape
        if offset >= 0:
            for i in range(max(0, min(n, m - offset))):
                out[i, i + offset] = g
        else:
            for i in range(max(0, min(n + offset, m))):
                out[i - offset, i] = g
        return out
    return impl


@overload(clip_bounds)
def _clip_bounds(a, a_min, a_max, min, max):
    """(lo, hi): a_min/a_max, else min/max (None where neither is given)."""
    none = lambda t: t is None or isinstance(t, (nt.NoneType, nt.Omitted))  # noqa: E731
    lo = "min" if none(a_min) else "a_min"
    hi = "max" if none(a_max) else "a_max"
    src = f"def impl(a, a_min, a_max, min, max):\n    return ({lo}, {hi})\n"
    ns = {}
    exec(src, ns)
    return ns["impl"]


@overload(clip, prefer_literal=True)
def _clip(g, a, lo, hi, which):
    """``rules.numpy.elementwise.clip`` for real values: ties split evenly."""
    w = _lit(which, _NOLIT)
    if w not in ("a", "lo", "hi") or not (_fc(g) and isinstance(a, nt.Array) and _real(a) and
                                          not _jrt._is_complex(g)):
        return None
    nolo, nohi = isinstance(lo, nt.NoneType), isinstance(hi, nt.NoneType)
    if not ((nolo or _real(lo)) and (nohi or _real(hi))) or (nolo and nohi):
        return None
    if (w == "hi" and nohi) or (w == "lo" and nolo):
        return None
    C = _jrt.const_of(g)
    ub = _jrt.unbroadcast
    if w == "hi":
        if nolo:
            return lambda g, a, lo, hi, which: ub(_clip_share(g, a, hi, C(0.5), 1), hi)
        return lambda g, a, lo, hi, which: ub(_clip_share(g, np.maximum(a, lo), hi, C(0.5), 1),
                                              hi)
    if nolo:                                    # (w == "a")
        return lambda g, a, lo, hi, which: ub(_clip_share(g, a, hi, C(0.5), -1), a)
    if nohi:
        def g_t(g, t, hi):
            return g
    else:
        def g_t(g, t, hi):
            return _clip_share(g, t, hi, C(0.5), -1)
    g_t = register_jitable(g_t)
    if w == "a":
        return lambda g, a, lo, hi, which: ub(_clip_share(g_t(g, np.maximum(a, lo), hi), a, lo,
                                                          C(0.5), 1), a)

    def impl(g, a, lo, hi, which):
        gt = g_t(g, np.maximum(a, lo), hi)
        return ub(gt - _clip_share(gt, a, lo, C(0.5), 1), lo)
    return impl


@register_jitable
def _clip_share(g, t, b, half, side):
    """g where t is beyond the bound b on ``side`` (1: above, -1: below), half of g where
    t == b, else 0 (``rules.numpy.elementwise.clip``'s np.where pairs)."""
    win = (t > b) if side > 0 else (t < b)
    return np.where(win, g, np.where(t == b, half * g, 0 * g))


_ZERO = np.zeros(1)     # (numba compiles a global array in as a read-only constant)


@register_jitable
def standin(shape):
    """A read-only float64 array of this shape over one constant zero (every stride 0): what a
    helper that reads only its argument's shape and dtype (rules.adjoints._shape_only, the
    compiled ``_rt.unbroadcast``) is given in place of a real array whose shape alone was saved
    (codegen/reverse/shapes.py).  Nothing is allocated (a new one-element base cost about as much
    as the rest of an ``acc_getitem``)."""
    return np.broadcast_to(_ZERO, shape)


def list_adjoint(g):
    raise NotImplementedError


@overload(list_adjoint)
def _list_adjoint(g):
    """The adjoint of ``np.array(obj)`` for a list display of real numbers (types ``("L", "f")``)
    whose list was not kept: ``array_adjoint_of(g, obj)`` reads it for its numba type alone, a
    list of floats (codegen/reverse/shapes.py)."""
    if isinstance(g, nt.Array) and g.ndim == 1 and not _jrt._is_complex(g):
        return lambda g: g.astype(np.float64)


# -- np.vstack, np.hstack of a list; a list's tangents ---------------------------------------
def vstack(g, tup):
    raise NotImplementedError


def hstack(g, tup):
    raise NotImplementedError


def tangent_list(t, arrays):
    raise NotImplementedError


@overload(tangent_list)
def _tangent_list(t, arrays):
    """The tangents of a list's arrays: compiled, a list of them (none left out)."""
    if isinstance(t, nt.List) and isinstance(t.dtype, nt.Array):
        return lambda t, arrays: t


@overload(vstack)
def _vstack(g, tup):
    """The rows of g for 1-d items; for items of 2 or more dimensions their pieces of g along
    axis 0 (``_adj.concatenate``)."""
    if not _array_list(tup, g):
        return None
    if tup.dtype.ndim == 1 and g.ndim == 2:
        def rows(g, tup):
            out = []
            for k in range(len(tup)):
                out.append(g[k].copy())
            return out
        return rows
    if tup.dtype.ndim >= 2 and g.ndim == tup.dtype.ndim:
        return lambda g, tup: concatenate(g, tup, 0)


@overload(hstack)
def _hstack(g, tup):
    """The pieces of g along axis 0 for 1-d items, along axis 1 for others."""
    if not (_array_list(tup, g) and g.ndim == tup.dtype.ndim):
        return None
    if g.ndim == 1:
        return lambda g, tup: concatenate(g, tup, 0)
    return lambda g, tup: concatenate(g, tup, 1)


def namespace():
    """A module holding the compiled helpers under the names templates use (``_adj``)."""
    return _jrt.helper_module("s2sad_jit_adjoints", "_adj", (
                 "sum", "mean", "matmul", "dot", "like", "kron", "diag", "triu", "tril", "outer",
                 "reshape_back", "transpose", "inv", "det", "det_tangent", "slogdet", "solve",
                 "cholesky",
                 "where", "maximum", "maximum_tangent", "_correction", "var", "std", "prod",
                 "prod_tangent",
                 "extremum", "norm", "nansum", "nansum_tangent", "diff", "sort",
                 "sort_tangent", "einsum", "einsum_tangent", "roll", "tile", "repeat",
                 "cumprod", "polyval", "polyval_tangent", "vstack", "hstack", "tangent_list",
                 "var_tangent", "std_tangent", "extremum_tangent",
                 "interp", "interp_tangent", "tangent_as", "trapezoid", "trapezoid_tangent",
                 "matrix_power", "matrix_power_tangent", "eigh", "sinc", "inner", "convolve",
                 "take", "take_along_axis",
                 "logsumexp", "logsumexp_tangent", "softmax", "log_softmax", "norm_tangent",
                 "power_base", "power_exponent", "array_adjoint_of", "array_tangent",
                 "solve_triangular",
                 "concatenate", "stack", "cumsum", "trace", "clip_bounds", "clip",
                 "cho_solve", "standin", "list_adjoint"), globals())
