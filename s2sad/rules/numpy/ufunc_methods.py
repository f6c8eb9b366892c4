"""Methods of NumPy ufuncs: ``reduce`` and ``accumulate`` of add, multiply, maximum, minimum;
``outer`` of add, subtract, multiply, divide.
"""
import numpy as np

from ..adjoints import A, BINARY, UFUNC, asarray, cj, export, like, xp
from ..registry import defrule

# -- reduce and accumulate (axis=0 by default, unlike np.sum), outer -------------------------------
_UREDUCE = "array, axis=0, dtype=None, out=None, keepdims=False, initial=None, where=True"
defrule(np.add.reduce, _UREDUCE, name="np.add.reduce",
        vjp={"array": "_rt.dtype_guard(dtype, _adj.sum(g, array, axis, keepdims, where=where))",
             "initial": "_rt.unbroadcast(g, initial)"},
        jvp={"array": "np.add.reduce(t, axis=axis, keepdims=keepdims, where=where)"},
        forbid={"out": None}, ns=A)
defrule(np.multiply.reduce, _UREDUCE, name="np.multiply.reduce",
        vjp={"array": "_rt.dtype_guard(dtype, _adj.prod(_rt.times_initial(g, initial), array, axis, "
                      "keepdims, where=where))",
             "initial": "_rt.unbroadcast(g * np.prod(array, axis=axis, keepdims=keepdims, "
                        "where=where), initial)"},
        jvp={"array": "_rt.times_initial(_adj.prod_tangent(t, array, axis, keepdims, where=where), "
                      "initial)",
             "initial": "t * np.prod(array, axis=axis, keepdims=keepdims, where=where)"},
        forbid={"out": None}, ns=A)
for _u in ("maximum", "minimum"):
    defrule(getattr(np, _u).reduce, _UREDUCE, name=f"np.{_u}.reduce",
            vjp={"array": "_adj.extremum(g, ans, array, axis, keepdims, where=where)",
                 "initial": "_rt.extremum_initial_adjoint(g, ans, array, initial, axis, keepdims, "
                            "where=where)"},
            jvp={"array": "_adj.extremum_tangent(t, ans, array, axis, keepdims, where=where)"},
            forbid={"out": None, "dtype": None}, ns=A)
    defrule(getattr(np, _u).accumulate, "array, axis=0, dtype=None, out=None",
            name=f"np.{_u}.accumulate", vjp={"array": "_adj.running_extremum(g, ans, array, axis)"},
            forbid={"out": None, "dtype": None}, ns=A)
defrule(np.add.accumulate, "array, axis=0, dtype=None, out=None", name="np.add.accumulate",
        vjp={"array": "_rt.dtype_guard(dtype, _adj.cumsum(g, array, axis))"},
        jvp={"array": "np.add.accumulate(t, axis=axis)"}, forbid={"out": None}, ns=A)
defrule(np.multiply.accumulate, "array, axis=0, dtype=None, out=None",
        name="np.multiply.accumulate",
        vjp={"array": "_rt.dtype_guard(dtype, _adj.cumprod(g, ans, array, axis))"},
        forbid={"out": None}, ns=A)
for _u in ("add", "subtract", "multiply", "divide"):
    defrule(getattr(np, _u).outer, BINARY.replace("x1, x2", "A, B"), name=f"np.{_u}.outer",
            vjp={"A": f"_adj.ufunc_outer(g, A, B, {_u!r}, 0)", "B": f"_adj.ufunc_outer(g, A, B, {_u!r}, 1)"},
            jvp={"A": f"_adj.ufunc_outer_tangent(t, A, B, {_u!r}, 0)",
                 "B": f"_adj.ufunc_outer_tangent(t, A, B, {_u!r}, 1)"},
            forbid=UFUNC, ns=A)


# -- helpers the templates call --------------------------------------------------------------------
def running_extremum(g, ans, a, axis=0):
    """Adjoint of ``np.maximum.accumulate`` / ``np.minimum.accumulate``.

    Output ``i`` equals the elements ``j <= i`` where the running extremum was reached with its
    current value (its "plateau"); like ``np.max``, its adjoint is shared evenly among them (what
    central differences give at a tie)."""
    a = asarray(a)
    m = xp(a)
    if a.ndim == 0:
        return like(asarray(g, like=a), a)
    axis = axis % a.ndim
    A = m.moveaxis(a, axis, -1)
    Y = m.moveaxis(asarray(ans, like=a), axis, -1)
    G = m.moveaxis(m.broadcast_to(asarray(g, like=a), a.shape), axis, -1)
    n = A.shape[-1]
    idx = m.broadcast_to(m.arange(n), A.shape)
    hit = A == Y                                    # element j is (one of) the extremum at j
    start = m.ones(Y.shape, dtype=bool)
    start[..., 1:] = Y[..., 1:] != Y[..., :-1]      # a new plateau of the running extremum
    end = m.ones(Y.shape, dtype=bool)
    end[..., :-1] = start[..., 1:]
    first = m.maximum.accumulate(m.where(start, idx, 0), axis=-1)
    last = m.flip(m.minimum.accumulate(m.flip(m.where(end, idx, n - 1), -1), axis=-1), -1)
    hits = m.cumsum(hit, axis=-1)
    before = m.take_along_axis(hits - hit, first, axis=-1)
    w = G / m.maximum(hits - before, 1)             # output i's share for each of its elements
    cw = m.cumsum(w, axis=-1)
    r = m.where(hit, m.take_along_axis(cw, last, axis=-1) - (cw - w), 0 * w)
    return like(m.moveaxis(r, -1, axis), a)


_OUTER_OPS = ("add", "subtract", "multiply", "divide", "true_divide")


def ufunc_outer(g, a, b, op, which):
    """Adjoint of ``np.<op>.outer(a, b)`` (shape ``a.shape + b.shape``) for ``a`` (which=0) or
    ``b`` (which=1): the elementwise adjoint summed over the other operand's axes."""
    m = xp(a, b, g)
    A, B, g = m.asarray(a), m.asarray(b), m.asarray(g)
    na, nb = A.ndim, B.ndim
    Ae = A.reshape(A.shape + (1,) * nb)
    Be = B.reshape((1,) * na + B.shape)
    if op == "add":
        d = g
    elif op == "subtract":
        d = g if which == 0 else -g
    elif op == "multiply":
        d = g * cj(Be) if which == 0 else g * cj(Ae)
    else:                                   # divide
        d = g / cj(Be) if which == 0 else -g * cj(Ae / (Be * Be))
    axes = tuple(range(na, na + nb)) if which == 0 else tuple(range(na))
    r = d.sum(axis=axes) if axes else d
    return like(r, a if which == 0 else b)


def ufunc_outer_tangent(t, a, b, op, which):
    """Tangent of ``np.<op>.outer(a, b)`` along ``a`` (which=0) or ``b`` (which=1)."""
    m = xp(a, b, t)
    a, b, t = m.asarray(a), m.asarray(b), m.asarray(t)
    if op in ("add", "subtract"):
        z = m.zeros_like(b if which == 0 else a)
        if which == 0:
            return m.add.outer(t, z)
        return m.add.outer(z, t) if op == "add" else m.subtract.outer(z, t)
    if op == "multiply":
        return m.multiply.outer(t, b) if which == 0 else m.multiply.outer(a, t)
    if which == 0:
        return m.divide.outer(t, b)
    return -m.multiply.outer(a, t / (b * b))


export(globals())
