"""Products and matrix structure: ``matmul`` (and ``@``), ``dot``, ``inner``, ``outer``,
``vdot``, ``vecdot``, ``tensordot``, ``einsum``, ``kron``; ``trace``, ``diagonal``, ``diag``,
``triu``, ``tril``.
"""
import numbers

import numpy as np
import operator

from ... import runtime as _rt
from ...errors import RuleError
from ...kernels.contract import capturable as _capturable   # graph mode: tensordot/einsum as gemm
from ...kernels.gemm import matmul as _graph_matmul   # a @ b, but capturable in graph mode
from ..adjoints import (A, _ARRAYS, _NDARRAY, _each, _inverse, _mH, _np, _np_outer, asarray, cj,
                        export, is_zero, like, shape, xp)
from ..registry import defmethod, defrule

_MATMUL = ("x1, x2, /, out=None, *, casting='same_kind', order='K', dtype=None, subok=True, "
           "axes=None, axis=None")
defrule(operator.matmul, "x1, x2, /",
        vjp={"x1": "_adj.matmul(g, x1, x2, 0)", "x2": "_adj.matmul(g, x1, x2, 1)"},
        jvp={"x1": "t @ x2", "x2": "x1 @ t"}, ns=A)
_each(_np("matmul", "linalg.matmul"), _MATMUL,
      vjp={"x1": "_adj.matmul(g, x1, x2, 0)", "x2": "_adj.matmul(g, x1, x2, 1)"},
      jvp={"x1": "np.matmul(t, x2)", "x2": "np.matmul(x1, t)"},
      forbid={"out": None, "axes": None, "axis": None}, ns=A)
defrule(np.dot, "a, b, out=None", vjp={"a": "_adj.dot(g, a, b, 0)", "b": "_adj.dot(g, a, b, 1)"},
        jvp={"a": "np.dot(t, b)", "b": "np.dot(a, t)"}, forbid={"out": None}, ns=A)
defrule(np.vdot, "a, b, /", vjp={"a": "_adj.vdot(g, a, b, 0)", "b": "_adj.vdot(g, a, b, 1)"},
        jvp={"a": "np.vdot(t, b)", "b": "np.vdot(a, t)"}, ns=A)
defrule(np.inner, "a, b, /", vjp={"a": "_adj.inner(g, a, b, 0)", "b": "_adj.inner(g, a, b, 1)"},
        jvp={"a": "np.inner(t, b)", "b": "np.inner(a, t)"}, ns=A)
defrule(np.outer, "a, b, out=None", vjp={"a": "_adj.outer(g, a, b, 0)", "b": "_adj.outer(g, a, b, 1)"},
        jvp={"a": "np.outer(t, b)", "b": "np.outer(a, t)"}, forbid={"out": None}, ns=A)
_each(_np("linalg.outer"), "x1, x2, /",
      vjp={"x1": "_adj.outer(g, x1, x2, 0)", "x2": "_adj.outer(g, x1, x2, 1)"}, ns=A)
_each(_np("vecdot", "linalg.vecdot"), "x1, x2, /, *, axis=-1",
      vjp={"x1": "_adj.vecdot(g, x1, x2, axis, 0)", "x2": "_adj.vecdot(g, x1, x2, axis, 1)"},
      ns=A)
_each(_np("tensordot", "linalg.tensordot"), "a, b, axes=2",
      vjp={"a": "_adj.tensordot(g, a, b, axes, 0)", "b": "_adj.tensordot(g, a, b, axes, 1)"},
      jvp={"a": "np.tensordot(t, b, axes)", "b": "np.tensordot(a, t, axes)"}, ns=A)
defrule(np.einsum, "*operands, out=None, optimize=False, **kwargs",
        vjp={"operands": "_adj.einsum(g, operands, None)"},
        jvp={"operands": "_adj.einsum_tangent(t, operands)"}, forbid={"out": None}, ns=A)
defrule(np.kron, "a, b", vjp={"a": "_adj.kron(g, a, b, 0)", "b": "_adj.kron(g, a, b, 1)"},
        jvp={"a": "np.kron(t, b)", "b": "np.kron(a, t)"}, ns=A)
defrule(np.trace, "a, offset=0, axis1=0, axis2=1, dtype=None, out=None",
        vjp={"a": "_adj.trace(g, a, offset, axis1, axis2)"},
        jvp={"a": "np.trace(t, offset, axis1, axis2)"}, forbid={"out": None}, ns=A)
_each(_np("linalg.trace"), "x, /, *, offset=0, dtype=None",
      vjp={"x": "_adj.trace(g, x, offset, -2, -1)"}, ns=A)
defrule(np.diagonal, "a, offset=0, axis1=0, axis2=1",
        vjp={"a": "_adj.diagonal(g, a, offset, axis1, axis2)"},
        jvp={"a": "np.diagonal(t, offset, axis1, axis2)"}, view=True, ns=A)
_each(_np("linalg.diagonal"), "x, /, *, offset=0",
      vjp={"x": "_adj.diagonal(g, x, offset, -2, -1)"}, ns=A)
defrule(np.diag, "v, k=0", vjp={"v": "_adj.diag(g, v, k)"}, jvp={"v": "np.diag(t, k)"}, ns=A)
defrule(np.triu, "m, k=0", vjp={"m": "_adj.triu(g, m, k)"}, jvp={"m": "np.triu(t, k)"}, ns=A)
defrule(np.tril, "m, k=0", vjp={"m": "_adj.tril(g, m, k)"}, jvp={"m": "np.tril(t, k)"}, ns=A)

# -- ndarray methods -------------------------------------------------------------------------------
defmethod("dot", "self, b, out=None",
          vjp={"self": "_adj.dot(g, self, b, 0)", "b": "_adj.dot(g, self, b, 1)"},
          jvp={"self": "t.dot(b)", "b": "self.dot(t)"}, forbid={"out": None}, ns=A)
defmethod("diagonal", "self, offset=0, axis1=0, axis2=1",
          vjp={"self": "_adj.diagonal(g, self, offset, axis1, axis2)"},
          jvp={"self": "t.diagonal(offset, axis1, axis2)"}, view=True, ns=A)
defmethod("trace", "self, offset=0, axis1=0, axis2=1, dtype=None, out=None",
          vjp={"self": "_adj.trace(g, self, offset, axis1, axis2)"},
          jvp={"self": "t.trace(offset, axis1, axis2)"}, forbid={"out": None}, ns=A)


# -- helpers the templates call --------------------------------------------------------------------
def matmul(g, a, b, which):
    """Adjoint of ``a @ b`` for ``a`` (which=0) or ``b`` (which=1); 1-D operands and batches."""
    if type(a) is _NDARRAY and type(b) is _NDARRAY and type(g) is _NDARRAY and \
            a.dtype is b.dtype and a.dtype is g.dtype and a.dtype.kind == "f" and a.ndim == 2:
        # the common real matrix cases, without the general machinery
        if b.ndim == 1:
            return _np_outer(g, b) if which == 0 else a.T @ g
        if b.ndim == 2:
            return g @ b.T if which == 0 else a.T @ g
    if type(a) is _NDARRAY and type(b) is _NDARRAY and a.ndim == 1 and b.ndim == 1 and \
            isinstance(g, float) and a.dtype is b.dtype and a.dtype.kind == "f":
        # a real dot product a @ b: g times the other vector (in the vectors' dtype)
        return (g * (b if which == 0 else a)).astype(a.dtype, copy=False)
    r = _real_matmul_adjoint(g, a, b, which)
    if r is not None:
        return r
    m = xp(a, b, g)
    a_ = asarray(a, like=b)
    b_ = asarray(b, like=a)
    a1, b1 = a_.ndim == 1, b_.ndim == 1
    A = a_[None, :] if a1 else a_
    B = b_[:, None] if b1 else b_
    G = m.asarray(g)
    if b1:
        G = G[..., None]
    if a1:
        G = G[..., None, :]
    if which == 0:
        r = _graph_matmul(G, _mH(B))
        r = _rt.unbroadcast(r, A)
        if a1:
            r = r[0]
        return like(r, a)
    r = _graph_matmul(_mH(A), G)
    r = _rt.unbroadcast(r, B)
    if b1:
        r = r[:, 0]
    return like(r, b)


def _real_matmul_adjoint(g, a, b, which):
    """The adjoint of ``a @ b`` for real arrays of one type and dtype (NumPy or CuPy) whose
    shapes need no broadcasting back: a stack of matrices times a matrix (``x @ W`` with x of
    shape (B, T, D): W's adjoint is one product of the stack seen as a (B*T, D) matrix, not a
    batch of products summed after), or two stacks of one batch shape.  None otherwise (the
    general path)."""
    t = type(a)
    if type(b) is not t or type(g) is not t or t not in _ARRAYS and not hasattr(a, "ndim"):
        return None
    dt = a.dtype
    if dt.kind != "f" or b.dtype != dt or g.dtype != dt:
        return None
    an, bn = a.ndim, b.ndim
    if an < 2 or bn < 2:
        return None
    ash, bsh = a.shape, b.shape
    if g.shape != ash[:-1] + bsh[-1:]:
        return None
    mm = _np_matmul if t is _NDARRAY else _graph_matmul     # (NumPy: gemm.matmul is a @ b)
    if bn == 2:
        if which == 0:
            return mm(g, b.T)
        if an == 2:
            return mm(a.T, g)
        return mm(a.reshape(-1, ash[-1]).T, g.reshape(-1, bsh[-1]))
    if bn == an and ash[:-2] == bsh[:-2]:
        if which == 0:
            return mm(g, b.swapaxes(-1, -2))
        return mm(a.swapaxes(-1, -2), g)
    return None


_np_matmul = operator.matmul


def _tensordot_axes(a, b, axes):
    na, nb = a.ndim, b.ndim
    if isinstance(axes, numbers.Integral):
        n = int(axes)
        return list(range(na - n, na)), list(range(n))
    ax_a, ax_b = axes
    if isinstance(ax_a, numbers.Integral):
        ax_a = [ax_a]
    if isinstance(ax_b, numbers.Integral):
        ax_b = [ax_b]
    return [int(i) % na for i in ax_a], [int(i) % nb for i in ax_b]


def tensordot(g, a, b, axes, which):
    """Adjoint of ``np.tensordot(a, b, axes)``."""
    m = xp(a, b, g)
    a_ = asarray(a, like=b)
    b_ = asarray(b, like=a)
    g = m.asarray(g)
    ax_a, ax_b = _tensordot_axes(a_, b_, axes)
    free_a = [i for i in range(a_.ndim) if i not in ax_a]
    free_b = [i for i in range(b_.ndim) if i not in ax_b]
    nfa = len(free_a)
    if m is not np and (not free_b if which == 0 else not free_a):
        # no axis to contract (inner products of vectors): an outer product; CuPy's tensordot
        # refuses empty axis lists with zero-dimensional operands
        if which == 0:
            r = g.reshape(g.shape + (1,) * b_.ndim) * cj(b_)
            cur = free_a + [ax_a[ax_b.index(j)] for j in sorted(ax_b)]
            return like(r.transpose(_inverse(cur)), a)
        r = cj(a_).reshape(a_.shape + (1,) * g.ndim) * g
        cur = [ax_b[ax_a.index(i)] for i in sorted(ax_a)] + free_b
        return like(r.transpose(_inverse(cur)), b)
    if which == 0:
        r = _capturable(m.tensordot)(g, cj(b_), axes=(list(range(nfa, g.ndim)), free_b))
        cur = free_a + [ax_a[ax_b.index(j)] for j in sorted(ax_b)]
        return like(r.transpose(_inverse(cur)), a)
    r = _capturable(m.tensordot)(cj(a_), g, axes=(free_a, list(range(nfa))))
    cur = [ax_b[ax_a.index(i)] for i in sorted(ax_a)] + free_b
    return like(r.transpose(_inverse(cur)), b)


def dot(g, a, b, which):
    """Adjoint of ``np.dot(a, b)``: scalar product, matrix product, or N-D tensordot."""
    a_ = asarray(a, like=b)
    b_ = asarray(b, like=a)
    if a_.ndim == 0 or b_.ndim == 0:
        other = b_ if which == 0 else a_
        return _rt.unbroadcast(asarray(g, like=other) * cj(other), a if which == 0 else b)
    if a_.ndim <= 2 and b_.ndim <= 2:
        return matmul(g, a, b, which)
    axes = ([a_.ndim - 1], [0 if b_.ndim == 1 else b_.ndim - 2])
    return tensordot(g, a, b, axes, which)


def inner(g, a, b, which):
    a_ = asarray(a, like=b)
    b_ = asarray(b, like=a)
    if a_.ndim == 0 or b_.ndim == 0:
        return dot(g, a, b, which)
    return tensordot(g, a, b, ([a_.ndim - 1], [b_.ndim - 1]), which)


def outer(g, a, b, which):
    m = xp(a, b, g)
    a_ = asarray(a, like=b).ravel()
    b_ = asarray(b, like=a).ravel()
    g = m.asarray(g).reshape(a_.size, b_.size)
    if which == 0:
        return like((g @ cj(b_)).reshape(shape(a)), a)
    return like((cj(a_) @ g).reshape(shape(b)), b)


def vdot(g, a, b, which):
    """``vdot(a, b) = sum(conj(a) * b)`` over flattened inputs: antilinear in a."""
    a_ = asarray(a, like=b)
    b_ = asarray(b, like=a)
    if which == 0:
        return like((cj(asarray(g, like=b_)) * b_.ravel()).reshape(shape(a)), a)
    return like((asarray(g, like=a_) * a_.ravel()).reshape(shape(b)), b)


def vecdot(g, x1, x2, axis, which):
    """``vecdot(x1, x2) = sum(conj(x1) * x2, axis)``."""
    m = xp(x1, x2, g)
    a_ = asarray(x1, like=x2)
    b_ = asarray(x2, like=x1)
    ge = m.expand_dims(m.asarray(g), axis)
    if which == 0:
        return _rt.unbroadcast(cj(ge) * b_, x1)
    return _rt.unbroadcast(ge * a_, x2)


def kron(g, a, b, which):
    """Adjoint of ``np.kron``: g viewed as (a0, b0, a1, b1, ...), contracted with the other factor."""
    m = xp(a, b, g)
    a_ = asarray(a, like=b)
    b_ = asarray(b, like=a)
    nd = max(a_.ndim, b_.ndim)
    A = a_.reshape((1,) * (nd - a_.ndim) + a_.shape)
    B = b_.reshape((1,) * (nd - b_.ndim) + b_.shape)
    inter = []
    for i in range(nd):
        inter += [A.shape[i], B.shape[i]]
    G = m.asarray(g).reshape(inter)
    ia = list(range(0, 2 * nd, 2))
    ib = list(range(1, 2 * nd, 2))
    if which == 0:
        r = m.einsum(G, list(range(2 * nd)), cj(B), ib, ia)
        return like(r.reshape(a_.shape), a)
    r = m.einsum(G, list(range(2 * nd)), cj(A), ia, ib)
    return like(r.reshape(b_.shape), b)


def _diag_index(shp, offset, axis1, axis2):
    """Index tuple selecting the ``offset`` diagonal of axes (axis1, axis2) of an array of shape shp
    after those axes were moved to the end."""
    n1, n2 = shp[axis1], shp[axis2]
    if offset >= 0:
        k = max(0, min(n1, n2 - offset))
        i = np.arange(k)
        j = i + offset
    else:
        k = max(0, min(n1 + offset, n2))
        j = np.arange(k)
        i = j - offset
    return i, j


def diagonal(g, a, offset=0, axis1=0, axis2=1):
    """Adjoint of ``np.diagonal``: g placed on the diagonal of zeros shaped like a."""
    a_ = asarray(a)
    m = xp(a_)
    nd = a_.ndim
    axis1, axis2 = axis1 % nd, axis2 % nd
    out = m.zeros(a_.shape, dtype=a_.dtype if a_.dtype.kind in "fc" else np.dtype(float))
    gg = m.asarray(g)
    if out.dtype.kind != "c" and gg.dtype.kind == "c":
        gg = gg.real
    if nd == 2:
        # a matrix (C-ordered, just made): its k-th diagonal is a strided slice of the flat
        # buffer, with k counted on out's own axes
        n1, n2 = out.shape
        k = offset if axis1 < axis2 else -offset
        cnt = max(0, min(n1, n2 - k)) if k >= 0 else max(0, min(n1 + k, n2))
        start = k if k >= 0 else -k * n2
        out.reshape(-1)[start:start + cnt * (n2 + 1):n2 + 1] = gg
        return like(out, a)
    i, j = _diag_index(a_.shape, offset, axis1, axis2)
    view = m.moveaxis(out, (axis1, axis2), (-2, -1))
    if m is not np:
        i, j = m.asarray(i), m.asarray(j)
    view[..., i, j] = gg
    return like(out, a)


def trace(g, a, offset=0, axis1=0, axis2=1):
    a_ = asarray(a)
    m = xp(a_)
    i, j = _diag_index(a_.shape, offset, axis1 % a_.ndim, axis2 % a_.ndim)
    gg = m.asarray(g)
    d = m.broadcast_to(gg[..., None], gg.shape + (len(i),))
    return diagonal(d, a, offset, axis1, axis2)


def diag(g, v, k=0):
    v_ = asarray(v)
    m = xp(v_)
    if v_.ndim == 1:
        return like(m.diagonal(m.asarray(g), k).copy(), v)
    return diagonal(g, v, k, 0, 1)


def _tri(xp_, n, mcols, k, dtype=bool):
    return xp_.tri(n, mcols, k, dtype=dtype)


def triu(g, m_, k=0):
    a = asarray(m_)
    mod = xp(a)
    if a.ndim < 2:
        return like(mod.triu(mod.asarray(g), k).sum(0), m_)
    return like(mod.triu(mod.asarray(g), k), m_)


def tril(g, m_, k=0):
    a = asarray(m_)
    mod = xp(a)
    if a.ndim < 2:
        return like(mod.tril(mod.asarray(g), k).sum(0), m_)
    return like(mod.tril(mod.asarray(g), k), m_)


def einsum(g, operands, which, **kwargs):
    """Adjoints of ``np.einsum(subscripts, *ops)`` for every operand (a tuple; None for the
    subscripts string).  Handles implicit output, ellipses, repeated indices (diagonals), and
    indices summed within a single operand."""
    if not isinstance(operands[0], str):
        subs, ops, where = _einsum_sublists(operands)
        r = einsum(g, (subs,) + tuple(ops), which, **kwargs)
        if which is not None:
            return r
        out = [None] * len(operands)
        for k, pos in enumerate(where):
            out[pos] = r[k + 1]
        return tuple(out)
    subs, *ops = operands
    ops_ = [asarray(o) for o in ops]
    m = xp(*ops_)
    ins, out = _einsum_parse(subs, [o.ndim for o in ops_])
    g = m.asarray(g)
    sizes = {}
    for s, o in zip(ins, ops_):
        for c, n in zip(s, o.shape):
            if n != 1 or c not in sizes:
                sizes[c] = n
    res = [None]
    for k, (s, o) in enumerate(zip(ins, ops_)):
        if which is not None and k != which:
            res.append(None)
            continue
        if o.dtype.kind not in "fc":
            res.append(None)
            continue
        others = [(ins[j], cj(ops_[j])) for j in range(len(ops_)) if j != k]
        avail = set(out).union(*[set(t) for t, _ in others]) if others else set(out)
        uniq = []
        for c in s:
            if c not in uniq:
                uniq.append(c)
        keep = [c for c in uniq if c in avail]
        args = [g, list(out)]
        spec = out + "," + ",".join(t for t, _ in others) + "->" + "".join(keep) if others \
            else out + "->" + "".join(keep)
        r = _capturable(m.einsum)(spec, g, *[a for _, a in others])
        # indices only in this operand: broadcast
        full_shape = [sizes[c] for c in uniq]
        r = r.reshape([sizes[c] if c in keep else 1 for c in uniq])
        r = m.broadcast_to(r, full_shape)
        if len(uniq) != len(s):           # repeated indices: put r on the diagonals
            z = m.zeros(o.shape, dtype=np.result_type(r.dtype, o.dtype))
            idx = []
            for c in s:
                n = sizes[c]
                pos = uniq.index(c)
                shp = [1] * len(uniq)
                shp[pos] = n
                idx.append(m.arange(n).reshape(shp))
            z[tuple(idx)] = r
            r = z
        else:
            # size-1 broadcast dims of the operand
            r = _rt.unbroadcast(m.ascontiguousarray(r), o) if r.shape != o.shape else r
        res.append(like(r, ops[k]))
    if which is not None:
        return res[which + 1]
    return tuple(res)


_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _einsum_parse(subs, ndims):
    subs = subs.replace(" ", "")
    if "->" in subs:
        lhs, out = subs.split("->")
        explicit = True
    else:
        lhs, out, explicit = subs, None, False
    ins = lhs.split(",")
    used = set(c for c in subs if c.isalpha())
    free = [c for c in _LETTERS if c not in used]
    ell_n = 0
    for s, nd in zip(ins, ndims):
        if "..." in s:
            ell_n = max(ell_n, nd - (len(s) - 3))
    ell = "".join(free[:ell_n])
    res = []
    for s, nd in zip(ins, ndims):
        if "..." in s:
            n = nd - (len(s) - 3)
            s = s.replace("...", ell[ell_n - n:] if n else "")
        res.append(s)
    if explicit:
        out = out.replace("...", ell)
    else:
        counts = {}
        for s in res:
            for c in s:
                counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c in counts if counts[c] == 1 and c not in ell))
    return res, out


def _einsum_sublists(operands):
    """``np.einsum(op0, sub0, op1, sub1, ..., [out])`` (the sublist form) as a subscripts string,
    the operands, and each operand's position in ``operands``."""
    if len(operands) < 2:
        raise RuleError("np.einsum: subscripts missing", fix="np.einsum('ij,jk->ik', a, b)")

    def letters(sub):
        s = ""
        for v in sub:
            if v is Ellipsis:
                s += "..."
            else:
                v = operator.index(v)
                if not 0 <= v < len(_LETTERS):
                    raise RuleError(f"np.einsum: subscript {v} out of range",
                                    fix="use subscripts 0..51")
                s += _LETTERS[v]
        return s
    n = len(operands) // 2
    ins, ops, where = [], [], []
    for k in range(n):
        ops.append(operands[2 * k])
        ins.append(letters(operands[2 * k + 1]))
        where.append(2 * k)
    subs = ",".join(ins)
    if len(operands) % 2:
        subs += "->" + letters(operands[-1])
    return subs, ops, where


def einsum_tangent(t, operands, **kwargs):
    if not isinstance(operands[0], str):
        subs, ops, where = _einsum_sublists(operands)
        return einsum_tangent((None,) + tuple(t[p] for p in where), (subs,) + tuple(ops))
    subs, *ops = operands
    m = xp(*ops)
    out = None
    for k, tk in enumerate(t[1:]):
        if is_zero(tk) or tk is None:
            continue
        args = list(ops)
        args[k] = tk
        r = m.einsum(subs, *args)
        out = r if out is None else out + r
    return out


export(globals())
