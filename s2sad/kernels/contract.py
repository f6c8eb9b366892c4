"""Contractions that are matrix products, on the capturable route of graph mode (``graph=True``).

CuPy's ``dot``, ``tensordot``, ``inner``, ``einsum`` and ``matmul`` call cuBLAS through its own
wrapper, which refuses stream capture (:mod:`.gemm`).  In graph mode (inside
:func:`.gemm.graph_matmuls`), :func:`capturable` maps such a callee to a form that computes the
same contraction as **one** :func:`.gemm.matmul` of reshaped, transposed views of its operands:

- ``matmul``, ``linalg.matmul``: :func:`.gemm.matmul` itself;
- ``dot(a, b)``: a matrix product for 1-D and 2-D operands, else ``tensordot(a, b, ([-1], [-2]))``
  (``[0]`` for a 1-D ``b``), as NumPy defines it;
- ``tensordot(a, b, axes)``, ``linalg.tensordot``: the free axes of ``a`` times the contracted
  axes, times the contracted axes times the free axes of ``b``;
- ``inner(a, b)``: ``tensordot(a, b, ([-1], [-1]))``;
- ``einsum(subscripts, a, b)`` with a subscripts string (ellipses allowed) that is one
  contraction: no index repeated within an operand or the output, none summed within a single
  operand, operands of equal sizes per index (no size-1 broadcasting).  Batch indices (in both
  operands and the output), contracted (in both, not in the output), free (in one and the output).
- the array method ``x.dot(b)``.

Anything else (0-d operands, integer dtypes, keywords such as ``out=``, an einsum that is not one
contraction, NumPy arrays, and every call outside graph mode) runs the callee itself, unchanged.
The one table (:data:`_FORMS`, keyed on the callee objects of NumPy and, once imported, CuPy) is
read by the three places graph mode reaches a product: ``graphs.sweeps`` (calls resolved when the
derivative is built), ``runtime.dispatch.call`` (callees known at run time: ``xp.matmul`` with
``xp`` a local variable) and the adjoints in ``rules/numpy/products.py``.  cuSOLVER
(``linalg.solve``, ``inv``, ``det``, ...) has no capturable route: graph mode falls back there.
"""
import functools
import operator
import sys

import numpy as np

from . import gemm

_FLOATS = "fc"
_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _device(*xs):
    """True when every operand is a CuPy array (the arrays the capturable route takes)."""
    for x in xs:
        if type(x).__module__.split(".")[0] != "cupy" or not hasattr(x, "dtype"):
            return False
    return True


def _mm(a, b):
    return gemm.matmul(a, b)


# -- the contractions (NotImplemented: not a single matrix product; the caller runs the callee) ---

def _float(*xs):
    return all(x.dtype.kind in _FLOATS for x in xs)


def tensordot(a, b, axes=2):
    """``tensordot(a, b, axes)`` as one matrix product, or NotImplemented."""
    if not _float(a, b):
        return NotImplemented
    na, nb = a.ndim, b.ndim
    try:
        if isinstance(axes, (int, np.integer)):
            n = int(axes)
            if n < 0 or n > na or n > nb:
                return NotImplemented
            ax_a, ax_b = list(range(na - n, na)), list(range(n))
        else:
            ax_a, ax_b = axes
            ax_a = [ax_a] if isinstance(ax_a, (int, np.integer)) else list(ax_a)
            ax_b = [ax_b] if isinstance(ax_b, (int, np.integer)) else list(ax_b)
            if len(ax_a) != len(ax_b) or any(not -na <= i < na for i in ax_a) or \
                    any(not -nb <= i < nb for i in ax_b):
                return NotImplemented
            ax_a = [operator.index(i) % na for i in ax_a]
            ax_b = [operator.index(i) % nb for i in ax_b]
    except (TypeError, ValueError):
        return NotImplemented
    if len(set(ax_a)) != len(ax_a) or len(set(ax_b)) != len(ax_b) or \
            any(a.shape[i] != b.shape[j] for i, j in zip(ax_a, ax_b)):
        return NotImplemented                      # the library's own error
    free_a = [i for i in range(na) if i not in ax_a]
    free_b = [j for j in range(nb) if j not in ax_b]
    sa = tuple(a.shape[i] for i in free_a)
    sb = tuple(b.shape[j] for j in free_b)
    k = 1
    for i in ax_a:
        k *= a.shape[i]
    m = 1
    for s in sa:
        m *= s
    n = 1
    for s in sb:
        n *= s
    A = a.transpose(free_a + ax_a).reshape(m, k)
    B = b.transpose(ax_b + free_b).reshape(k, n)
    return _mm(A, B).reshape(sa + sb)


def dot(a, b):
    """``dot(a, b)`` (NumPy's definition) as one matrix product, or NotImplemented."""
    if a.ndim == 0 or b.ndim == 0 or not _float(a, b):
        return NotImplemented
    if a.ndim <= 2 and b.ndim <= 2:
        return _mm(a, b)
    return tensordot(a, b, ([a.ndim - 1], [b.ndim - 2 if b.ndim > 1 else 0]))


def inner(a, b):
    """``inner(a, b)`` as one matrix product, or NotImplemented."""
    if a.ndim == 0 or b.ndim == 0:
        return NotImplemented
    return tensordot(a, b, ([a.ndim - 1], [b.ndim - 1]))


def matmul(a, b):
    if a.ndim == 0 or b.ndim == 0:
        return NotImplemented
    return _mm(a, b)


def _einsum_indices(subscripts, a, b):
    """(indices of a, of b, of the output) with ellipses spelled out, or None."""
    s = subscripts.replace(" ", "")
    if "->" in s:
        lhs, out = s.split("->", 1)
    else:
        lhs, out = s, None
    ins = lhs.split(",")
    if len(ins) != 2 or "->" in (out or ""):
        return None
    used = {c for c in s if c.isalpha()}
    if any(not (c.isalpha() or c in ".") for c in s.replace("->", "").replace(",", "")):
        return None
    spare = [c for c in _LETTERS if c not in used]
    spelled = []
    n_ell = 0
    for sub, x in zip(ins, (a, b)):
        if sub.count("...") > 1 or "." in sub.replace("...", ""):
            return None
        if "..." in sub:
            n = x.ndim - (len(sub) - 3)
            if n < 0:
                return None
            n_ell = max(n_ell, n)
    ell = "".join(spare[:n_ell])
    for sub, x in zip(ins, (a, b)):
        if "..." in sub:
            n = x.ndim - (len(sub) - 3)
            sub = sub.replace("...", ell[n_ell - n:])
        if len(sub) != x.ndim:
            return None
        spelled.append(sub)
    ia, ib = spelled
    if out is None:
        counts = {}
        for c in ia + ib:
            counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted((c for c in counts if counts[c] == 1 and c not in ell),
                                   key=_LETTERS.index))
    else:
        if out.count("...") > 1 or "." in out.replace("...", ""):
            return None
        if "..." in out:
            out = out.replace("...", ell)
        elif ell:
            return None
    return ia, ib, out


def einsum(*operands, **kwargs):
    """``einsum(subscripts, a, b)`` that is one contraction, as one matrix product; else
    NotImplemented."""
    if kwargs.keys() - {"optimize"} or len(operands) != 3 or not isinstance(operands[0], str):
        return NotImplemented
    subscripts, a, b = operands
    if not hasattr(a, "ndim") or not hasattr(b, "ndim") or not _float(a, b):
        return NotImplemented
    got = _einsum_indices(subscripts, a, b)
    if got is None:
        return NotImplemented
    ia, ib, out = got
    if len(set(ia)) != len(ia) or len(set(ib)) != len(ib) or len(set(out)) != len(out):
        return NotImplemented                      # diagonals
    if any(c not in ia and c not in ib for c in out) or \
            any(c not in ib and c not in out for c in ia) or \
            any(c not in ia and c not in out for c in ib):
        return NotImplemented                      # a sum within one operand (or an error)
    size = {}
    for sub, x in ((ia, a), (ib, b)):
        for c, n in zip(sub, x.shape):
            if size.setdefault(c, n) != n:
                return NotImplemented              # size-1 broadcasting (or an error)
    batch = [c for c in out if c in ia and c in ib]
    contr = [c for c in ia if c in ib and c not in out]
    fa = [c for c in ia if c not in ib]
    fb = [c for c in ib if c not in ia]

    def prod(cs):
        p = 1
        for c in cs:
            p *= size[c]
        return p
    A = a.transpose([ia.index(c) for c in batch + fa + contr]) \
        .reshape(prod(batch), prod(fa), prod(contr))
    B = b.transpose([ib.index(c) for c in batch + contr + fb]) \
        .reshape(prod(batch), prod(contr), prod(fb))
    got = batch + fa + fb
    r = _mm(A, B).reshape([size[c] for c in got])
    return r.transpose([got.index(c) for c in out])


# -- the table, keyed on callees -------------------------------------------------------------------

_NAMES = {"matmul": matmul, "linalg.matmul": matmul, "dot": dot, "tensordot": tensordot,
          "linalg.tensordot": tensordot, "inner": inner, "einsum": einsum}
_FORMS = {}             # callee -> its contraction
_MODULES = []           # the modules whose callees _FORMS holds


def _table():
    mods = [np] + [sys.modules[m] for m in ("cupy",) if m in sys.modules]
    if len(mods) != len(_MODULES):
        for mod in mods[len(_MODULES):]:
            for name, form in _NAMES.items():
                obj = mod
                for part in name.split("."):
                    obj = getattr(obj, part, None)
                if obj is not None:
                    try:
                        _FORMS[obj] = form
                    except TypeError:
                        pass
            _FORMS[operator.matmul] = matmul
        _MODULES[:] = mods
    return _FORMS


def form_of(fn):
    """The contraction behind callee ``fn`` (NumPy's or CuPy's ``matmul``, ``dot``,
    ``tensordot``, ``inner``, ``einsum``; an array's bound ``.dot``), or None."""
    if getattr(fn, "__name__", None) == "dot" and _device(getattr(fn, "__self__", None)):
        return _method_dot
    try:
        return _table().get(fn)
    except TypeError:                  # an unhashable callee
        return None


def _method_dot(self_, b, *rest, **kwargs):
    if rest or kwargs or not _device(b):
        return NotImplemented
    return dot(self_, b)


@functools.lru_cache(maxsize=None)
def _routed(fn, form):
    @functools.wraps(fn)
    def routed(*args, **kwargs):
        if gemm.active():
            arrays = [x for x in args if hasattr(x, "ndim")]
            if arrays and _device(*arrays):
                r = form(*args, **kwargs)
                if r is not NotImplemented:
                    return r
        return fn(*args, **kwargs)
    routed.__s2sad_routes__ = fn
    return routed


def route(fn):
    """For a callee resolved when the derivative is built: a function that runs its contraction
    in graph mode on CuPy arrays (where it is one matrix product) and ``fn`` otherwise; None when
    ``fn`` is not a product."""
    form = form_of(fn)
    if form is None or form is _method_dot:
        return None
    try:
        return _routed(fn, form)
    except TypeError:
        return None


def capturable(fn):
    """``fn``, or in graph mode its capturable form (for callees known only at run time, and for
    the adjoints of the product rules)."""
    if not gemm.active():
        return fn
    form = form_of(fn)
    if form is None:
        return fn
    if form is _method_dot:
        self_ = fn.__self__

        def method(*args, **kwargs):
            r = _method_dot(self_, *args, **kwargs)
            return fn(*args, **kwargs) if r is NotImplemented else r
        return method
    return route(fn) or fn
