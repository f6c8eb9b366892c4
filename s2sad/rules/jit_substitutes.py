"""Forward callees that numba cannot compile but has an equivalent for, for ``jit=True``.

A derivative compiled with ``numba.njit`` calls the user's functions as the user wrote them
(``scipy.linalg.solve_triangular(L, y, lower=True)``).  Numba compiles NumPy's functions but not
SciPy's; the table here maps such a callee to a numba function with the same semantics for the
argument types it has a body for (any other type is a typing error, and the derivative runs as
Python, with the fallback warning).  :func:`bind` makes the generated module's names reach these
versions: a callee named ``scipy.linalg.solve_triangular`` reads ``scipy`` from the module's
namespace, so ``scipy`` is bound there to a stand-in module whose ``linalg.solve_triangular`` is
the numba version and whose other attributes are SciPy's own.

Each version follows SciPy's results (dtype, shape, the errors it raises: ``LinAlgError`` for a
singular triangular matrix or a matrix that is not positive definite, ``ValueError`` for shapes
that do not fit and for infinities or NaNs when ``check_finite``); ``overwrite_*`` are accepted
and ignored (SciPy *may* overwrite, never must).  Imports numba: only ``jit=True`` imports it.
"""
import types as _types

import numpy as np
from numba.core import types as nt
from numba.cpython.unsafe.tuple import tuple_setitem
from numba.extending import overload, register_jitable

from .. import ir

_TABLE = {}                 # id(callee) -> (callee, numba stub)


def substitute(callee):
    """Register the decorated stub (a function with a numba ``overload``) as ``callee``'s numba
    version."""
    def deco(stub):
        _TABLE[id(callee)] = (callee, stub)
        return stub
    return deco


def version_of(obj):
    """The numba version of ``obj``, or None."""
    hit = _TABLE.get(id(obj))
    return hit[1] if hit is not None and hit[0] is obj else None


# -- binding in a generated module's namespace ----------------------------------------------------
def bind(fn, namespace):
    """Rebind, in ``namespace`` (a derivative module's), the names through which the calls of
    ``fn`` (its IR) reach a callee of the table: a name bound to the callee itself, or the first
    name of a dotted callee text (``scipy`` of ``scipy.linalg.solve_triangular``), bound to a
    stand-in module.  Returns the dotted texts rebound (what :func:`rebind` takes)."""
    _load()
    paths = {}                      # dotted callee text -> its version
    for s in ir.walk(fn.body):
        call = s.value if isinstance(s, ir.Assign) else s.call if isinstance(s, ir.ExprStmt) \
            else None
        if not (isinstance(call, ir.Call) and isinstance(call.fn, ir.Static)):
            continue
        v = version_of(call.fn.obj)
        text = call.fn.text or ""
        parts = text.split(".")
        if v is None or len(parts) < 2 or not all(p.isidentifier() for p in parts) or \
                parts[0] not in namespace:
            continue
        paths[text] = v
    _apply(namespace, paths)
    return list(paths)


def rebind(namespace, texts):
    """:func:`bind` again without the IR function, from the dotted callee texts it bound (a
    derivative read from the disk cache): each text is followed from its root's value in
    ``namespace``; raises ValueError where it no longer reaches a callee of the table."""
    _load()
    paths = {}
    for text in texts:
        parts = text.split(".")
        obj = namespace.get(parts[0])
        for p in parts[1:]:
            obj = getattr(obj, p, None)
        v = version_of(obj)
        if v is None or len(parts) < 2:
            raise ValueError(f"{text} has no numba version now")
        paths[text] = v
    _apply(namespace, paths)


def _apply(namespace, paths):
    """Bind the versions: each name bound to a callee of the table, then each root of the dotted
    ``paths`` ({text: version}) to a stand-in module."""
    for name, value in list(namespace.items()):
        v = version_of(value) if not isinstance(value, _types.ModuleType) else None
        if v is not None:
            namespace[name] = v
    tree = {}                       # root name -> {attr path...: version}
    for name, value in namespace.items():
        if value is np:             # (NumPy's reductions as rule templates and methods written as
            tree[name] = dict(_NUMPY_LEAVES)    # functions call them: np.mean(_d_x, axis=0))
    for text, v in paths.items():
        parts = text.split(".")
        tree.setdefault(parts[0], {})[tuple(parts[1:])] = v
    for root, leaves in tree.items():
        namespace[root] = _stand_in(namespace[root], leaves)
    for hook in _MODULE_HOOKS:      # (a rule template's module, e.g. _sp: see _load)
        hook(namespace)


def _stand_in(obj, leaves):
    """A module reading as ``obj``, except along the attribute paths of ``leaves``."""
    mod = _types.ModuleType(getattr(obj, "__name__", "s2sad_jit_stand_in"))
    heads = {}
    for path, v in leaves.items():
        heads.setdefault(path[0], {})[path[1:]] = v
    for head, rest in heads.items():
        if () in rest:
            setattr(mod, head, rest[()])
        else:
            setattr(mod, head, _stand_in(getattr(obj, head), rest))
    mod.__getattr__ = lambda name: getattr(obj, name)
    return mod


_LOADED = False
_MODULE_HOOKS = []
_NUMPY_LEAVES = {}          # (name,) -> version: bound on every name that holds NumPy itself


def _load():
    """Register the rows whose library is installed (SciPy's when SciPy imports)."""
    global _LOADED
    if _LOADED:
        return
    _LOADED = True
    substitute(np.kron)(kron)
    substitute(np.concatenate)(concatenate)
    substitute(np.stack)(stack)
    substitute(np.vstack)(vstack)
    substitute(np.hstack)(hstack)
    from . import jit_math          # (np.exp and np.log of float64 arrays in SIMD loops)
    for fn, version in ((np.exp, jit_math.exp), (np.log, jit_math.log)):
        substitute(fn)(version)
        _NUMPY_LEAVES[(fn.__name__,)] = version
    from . import jit_einsum        # (np.einsum with literal subscripts, as loop nests)
    substitute(np.einsum)(jit_einsum.einsum)
    from . import jit_arrays        # (np.roll, np.flip, np.repeat with an axis)
    for fn, version in jit_arrays.versions().items():
        substitute(fn)(version)
        _NUMPY_LEAVES[(fn.__name__,)] = version
    from . import jit_reductions    # (np.max/min/mean/... over one axis, keepdims)
    for fn, version in jit_reductions.versions().items():
        substitute(fn)(version)
        # (its path under numpy: ("sum",), ("linalg", "norm"))
        _NUMPY_LEAVES[tuple(fn.__module__.split(".")[1:]) + (fn.__name__,)] = version
    try:
        import scipy.linalg as sl
    except ImportError:             # (no SciPy: nothing of it to stand in for)
        return
    substitute(sl.solve_triangular)(solve_triangular)
    substitute(sl.cho_solve)(cho_solve)
    substitute(sl.cholesky)(cholesky)
    import scipy.special
    from . import jit_special       # (scipy.special's rows: compiled calls of SciPy's kernels)
    for fn, version in jit_special.versions().items():
        substitute(fn)(version)
    leaves = jit_special.module_leaves()
    for fn, version in jit_reductions.scipy_versions().items():     # (logsumexp, softmax...)
        substitute(fn)(version)
        leaves[(fn.__name__,)] = version
    _MODULE_HOOKS.append(lambda namespace: _bind_module(namespace, scipy.special, leaves))


def _bind_module(namespace, module, leaves):
    """Bind each name of ``namespace`` that holds ``module`` itself (a rule template's ``_sp``
    for ``scipy.special``) to a stand-in module reading the numba versions along ``leaves``."""
    for name, value in list(namespace.items()):
        if value is module:
            namespace[name] = _stand_in(module, leaves)


# -- helpers ----------------------------------------------------------------------------------------
def _lit(t, default=None):
    if not isinstance(t, nt.Type):
        return t
    if isinstance(t, nt.Omitted):
        return t.value
    if isinstance(t, nt.Literal):
        return t.literal_value
    return default


_NO = object()


def _fc_array(t, ndims):
    return isinstance(t, nt.Array) and isinstance(t.dtype, (nt.Float, nt.Complex)) and \
        t.ndim in ndims


def _result(*ts):
    from numba.np.numpy_support import as_dtype, from_dtype
    return from_dtype(np.result_type(*[as_dtype(t.dtype) for t in ts]))


@register_jitable
def _check_finite(a):
    for v in np.ascontiguousarray(a).ravel():
        if not np.isfinite(v):
            raise ValueError("array must not contain infs or NaNs")


@register_jitable
def trsolve(a, B, code, lower, unit):
    """Solve op(a) X = B in place of ``B`` (2-d, C-contiguous, the result's dtype): op is a
    (code 0), a^T (1) or a^H (2); ``a`` lower or upper triangular (the other triangle is not
    read); ``unit``: a's diagonal taken as ones.  No copy of ``a``: op(a) = a by substitution
    along a's rows (each unknown from the ones solved before it), op(a) = a^T or a^H by
    substitution along op(a)'s columns, which are a's rows (each unknown, once solved, taken
    off the rows after it)."""
    n = a.shape[0]
    k = B.shape[1]
    for i0 in range(n):
        if code == 0:
            i = i0 if lower else n - 1 - i0
        else:
            i = n - 1 - i0 if lower else i0     # op(a) is upper where a is lower
        d = a[i, i]
        if code == 2:
            d = np.conj(d)
        if not unit and d == 0:
            raise np.linalg.LinAlgError("singular matrix: resolution failed at a zero diagonal "
                                        "element")
        if code == 0:
            lo, hi = (0, i) if lower else (i + 1, n)
            for c in range(k):
                t = B[i, c]
                for j in range(lo, hi):
                    t -= a[i, j] * B[j, c]
                B[i, c] = t if unit else t / d
        else:
            # op(a)[j, i] = a[i, j] (conjugated for a^H): the unknowns j that row i of a reaches
            lo, hi = (0, i) if lower else (i + 1, n)
            for c in range(k):
                xi = B[i, c] if unit else B[i, c] / d
                B[i, c] = xi
                if code == 1:
                    for j in range(lo, hi):
                        B[j, c] -= a[i, j] * xi
                else:
                    for j in range(lo, hi):
                        B[j, c] -= np.conj(a[i, j]) * xi
    return B


@register_jitable
def _square(a, b):
    if a.shape[0] != a.shape[1]:
        raise ValueError("expected square matrix")
    if b.shape[0] != a.shape[0]:
        raise ValueError("shapes of a and b are incompatible")


def _trans_code(trans):
    """SciPy's trans (0/1/2, 'N'/'T'/'C') as a code, from a literal; None if not literal."""
    v = _lit(trans, _NO)
    return {0: 0, 1: 1, 2: 2, "N": 0, "T": 1, "C": 2, "n": 0, "t": 1, "c": 2}.get(v) \
        if not isinstance(v, (list, dict)) and v is not _NO else None


# -- scipy.linalg.solve_triangular ----------------------------------------------------------------
def solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False,
                     check_finite=True):
    raise NotImplementedError("s2sad: runs inside numba-compiled derivatives only")


@overload(solve_triangular, prefer_literal=True)
def _solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False,
                      check_finite=True):
    """One matrix ``a`` (2-d float or complex), ``b`` a vector or a matrix; ``trans`` a literal."""
    code = _trans_code(trans)
    if code is None or not (_fc_array(a, (2,)) and _fc_array(b, (1, 2))):
        return None
    dt = _result(a, b)
    if b.ndim == 1:
        def impl(a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False,
                 check_finite=True):
            _square(a, b)
            if check_finite:
                _check_finite(a)
                _check_finite(b)
            B = np.empty((b.shape[0], 1), dt)
            B[:, 0] = b
            return trsolve(a, B, code, lower, unit_diagonal)[:, 0].copy()
        return impl

    def impl2(a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False,
              check_finite=True):
        _square(a, b)
        if check_finite:
            _check_finite(a)
            _check_finite(b)
        B = np.empty(b.shape, dt)
        B[:, :] = b
        return trsolve(a, B, code, lower, unit_diagonal)
    return impl2


# -- scipy.linalg.cholesky --------------------------------------------------------------------------
def cholesky(a, lower=False, overwrite_a=False, check_finite=True):
    raise NotImplementedError("s2sad: runs inside numba-compiled derivatives only")


@overload(cholesky)
def _cholesky(a, lower=False, overwrite_a=False, check_finite=True):
    """The lower factor L (``lower``), else the upper factor L^H, zeros in the other triangle."""
    if not _fc_array(a, (2,)):
        return None

    def impl(a, lower=False, overwrite_a=False, check_finite=True):
        if check_finite:
            _check_finite(a)
        L = np.linalg.cholesky(np.ascontiguousarray(a))
        if lower:
            return L
        return np.ascontiguousarray(np.conj(L).T)
    return impl


# -- scipy.linalg.cho_solve -------------------------------------------------------------------------
def cho_solve(c_and_lower, b, overwrite_b=False, check_finite=True):
    raise NotImplementedError("s2sad: runs inside numba-compiled derivatives only")


@overload(cho_solve)
def _cho_solve(c_and_lower, b, overwrite_b=False, check_finite=True):
    """``(c, lower)`` a pair of a matrix and a bool (cho_factor's result, or built by the user):
    A x = b with A = L L^H (lower) or U^H U, only c's triangle read."""
    if not (isinstance(c_and_lower, nt.BaseTuple) and len(c_and_lower.types) == 2 and
            _fc_array(c_and_lower.types[0], (2,)) and
            isinstance(c_and_lower.types[1], (nt.Boolean, nt.Integer)) and _fc_array(b, (1, 2))):
        return None
    dt = _result(c_and_lower.types[0], b)
    if b.ndim == 1:
        def impl(c_and_lower, b, overwrite_b=False, check_finite=True):
            B = np.empty((b.shape[0], 1), dt)
            B[:, 0] = b
            return _cho_solve2(c_and_lower, b, B, check_finite)[:, 0].copy()
        return impl

    def impl2(c_and_lower, b, overwrite_b=False, check_finite=True):
        B = np.empty(b.shape, dt)
        B[:, :] = b
        return _cho_solve2(c_and_lower, b, B, check_finite)
    return impl2


@register_jitable
def _cho_solve2(c_and_lower, b, B, check_finite):
    c = c_and_lower[0]
    _square(c, b)
    if check_finite:
        _check_finite(c)
        _check_finite(b)
    if c_and_lower[1]:          # L (L^H x) = b
        trsolve(c, B, 0, True, False)
        trsolve(c, B, 2, True, False)
    else:                       # U^H (U x) = b
        trsolve(c, B, 2, False, False)
        trsolve(c, B, 0, False, False)
    return B


# -- NumPy functions numba compiles for some memory layouts only --------------------------------------
def kron(a, b):
    raise NotImplementedError("s2sad: runs inside numba-compiled derivatives only")


@overload(kron)
def _kron(a, b):
    """numba's ``np.kron`` takes C- or F-ordered arrays: a view (``x[:20, :20]``) is copied
    first."""
    if not (isinstance(a, nt.Array) and isinstance(b, nt.Array)):
        return None
    if a.layout in "CF" and b.layout in "CF":
        return lambda a, b: np.kron(a, b)
    return lambda a, b: np.kron(np.ascontiguousarray(a), np.ascontiguousarray(b))


# -- np.concatenate / np.stack of a list (numba's take a tuple) ---------------------------------------
def concatenate(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    raise NotImplementedError("s2sad: runs inside numba-compiled derivatives only")


def stack(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    raise NotImplementedError("s2sad: runs inside numba-compiled derivatives only")


def _defaults(out, dtype, casting):
    return all(isinstance(t, (nt.NoneType, nt.Omitted)) or t is None for t in (out, dtype)) and \
        (isinstance(casting, nt.Omitted) or casting == "same_kind" or
         _lit(casting, None) == "same_kind")


@register_jitable
def _check_rows(arrays, k):
    a0 = arrays[0]
    for a in arrays:
        for d in range(a0.ndim):
            if d != k and a.shape[d] != a0.shape[d]:
                raise ValueError("all the input array dimensions except for the concatenation "
                                 "axis must match exactly")


@register_jitable
def _put0(r, i, j, a):
    r[i:j] = a


@register_jitable
def _put1(r, i, j, a):
    r[:, i:j] = a


@register_jitable
def _put2(r, i, j, a):
    r[:, :, i:j] = a


@overload(concatenate, prefer_literal=True)
def _concatenate(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    """A tuple: numba's own; a list of arrays of one type: along a literal axis 0, 1 or 2."""
    if not _defaults(out, dtype, casting):
        return None
    if isinstance(arrays, nt.BaseTuple):
        return lambda arrays, axis=0, out=None, dtype=None, casting="same_kind": \
            np.concatenate(arrays, axis)
    ax = _lit(axis, _NO)
    if not (isinstance(arrays, nt.List) and isinstance(arrays.dtype, nt.Array) and
            isinstance(ax, int) and arrays.dtype.ndim >= 1):
        return None
    nd, dt = arrays.dtype.ndim, arrays.dtype.dtype
    if not -nd <= ax < nd or ax % nd > 2:
        return None
    k = ax % nd
    put = (_put0, _put1, _put2)[k]

    def impl(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
        if len(arrays) == 0:
            raise ValueError("need at least one array to concatenate")
        _check_rows(arrays, k)
        n = 0
        for a in arrays:
            n += a.shape[k]
        shape = tuple_setitem(arrays[0].shape, k, n)
        r = np.empty(shape, dt)
        o = 0
        for a in arrays:
            put(r, o, o + a.shape[k], a)
            o += a.shape[k]
        return r
    return impl


@overload(stack, prefer_literal=True)
def _stack(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    """A tuple: numba's own; a list of arrays of one type and shape: along a literal axis 0."""
    if not _defaults(out, dtype, casting):
        return None
    if isinstance(arrays, nt.BaseTuple):
        return lambda arrays, axis=0, out=None, dtype=None, casting="same_kind": \
            np.stack(arrays, axis)
    ax = _lit(axis, _NO)
    if not (isinstance(arrays, nt.List) and isinstance(arrays.dtype, nt.Array) and
            isinstance(ax, int) and ax in (0, -arrays.dtype.ndim - 1)):
        return None
    dt = arrays.dtype.dtype

    def impl(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
        if len(arrays) == 0:
            raise ValueError("need at least one array to stack")
        s0 = arrays[0].shape
        for a in arrays:
            if a.shape != s0:
                raise ValueError("all input arrays must have the same shape")
        r = np.empty((len(arrays),) + s0, dt)
        for i in range(len(arrays)):
            r[i] = arrays[i]
        return r
    return impl


# -- np.vstack, np.hstack of a list -----------------------------------------------------------
def vstack(tup):
    raise NotImplementedError


def hstack(tup):
    raise NotImplementedError


@overload(vstack)
def _vstack(tup):
    """A list of arrays: 1-d items as the rows of a 2-d array, others joined along axis 0."""
    if not (isinstance(tup, nt.List) and isinstance(tup.dtype, nt.Array)):
        return None
    if tup.dtype.ndim == 1:
        return lambda tup: stack(tup, 0)
    return lambda tup: concatenate(tup, 0)


@overload(hstack)
def _hstack(tup):
    """A list of arrays joined along axis 0 (1-d items) or 1."""
    if not (isinstance(tup, nt.List) and isinstance(tup.dtype, nt.Array)):
        return None
    if tup.dtype.ndim == 1:
        return lambda tup: concatenate(tup, 0)
    return lambda tup: concatenate(tup, 1)
