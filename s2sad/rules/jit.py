"""``_adj`` for derivatives compiled with ``jit=True``: numba versions of the adjoint helpers that
rule templates call, for the rules whose helpers numba can compile.

A helper missing here is a typing error when numba compiles the derivative, which
``codegen/jit.py`` turns into a fallback to Python with one warning naming the user's line.  Each
helper is a stub with a numba ``overload`` (the body is chosen by argument types when the
derivative compiles), with the semantics of its Python twin in ``rules/numpy``.  Imports numba:
only ``jit=True`` imports this module.
"""
import types as _types

import numpy as np
from numba.core import types as nt
from numba.extending import overload

from ..runtime import jit as _jrt


def sum(g, a, axis=None, keepdims=False):
    raise NotImplementedError("s2sad: _adj.sum runs inside numba-compiled derivatives only")


def mean(g, a, axis=None, keepdims=False):
    raise NotImplementedError


def matmul(g, a, b, which):
    raise NotImplementedError


def dot(g, a, b, which):
    raise NotImplementedError


@overload(matmul, prefer_literal=True)
def _matmul(g, a, b, which):
    if not isinstance(which, nt.IntegerLiteral):
        return None
    w = which.literal_value
    if not (isinstance(a, nt.Array) and isinstance(b, nt.Array)):
        return None
    A, B = a.ndim, b.ndim
    if (A, B) == (2, 1):
        if w == 0:
            return lambda g, a, b, which: np.outer(g, b)
        return lambda g, a, b, which: np.ascontiguousarray(a.T) @ g
    if (A, B) == (2, 2):
        if w == 0:
            return lambda g, a, b, which: g @ np.ascontiguousarray(b.T)
        return lambda g, a, b, which: np.ascontiguousarray(a.T) @ g
    if (A, B) == (1, 2):
        if w == 0:
            return lambda g, a, b, which: b @ g
        return lambda g, a, b, which: np.outer(a, g)
    if (A, B) == (1, 1):
        if w == 0:
            return lambda g, a, b, which: g * b
        return lambda g, a, b, which: g * a


@overload(dot, prefer_literal=True)
def _dot(g, a, b, which):
    if isinstance(a, nt.Array) and isinstance(b, nt.Array) and a.ndim <= 2 and b.ndim <= 2:
        return lambda g, a, b, which: matmul(g, a, b, which)


def _whole(axis):
    return axis is None or isinstance(axis, (nt.NoneType, nt.Omitted))


@overload(sum)
def _sum(g, a, axis=None, keepdims=False):
    if _whole(axis) and isinstance(a, nt.Array):
        dt = _jrt._float_dtype(a)
        return lambda g, a, axis=None, keepdims=False: np.full(a.shape, g, dt)
    if _whole(axis) and isinstance(a, (nt.Float, nt.Integer)):
        return lambda g, a, axis=None, keepdims=False: g


@overload(mean)
def _mean(g, a, axis=None, keepdims=False):
    if _whole(axis) and isinstance(a, nt.Array):
        dt = _jrt._float_dtype(a)
        return lambda g, a, axis=None, keepdims=False: np.full(a.shape, g / a.size, dt)


def namespace():
    """A module holding the compiled helpers under the names templates use (``_adj``)."""
    mod = _types.ModuleType("s2sad_jit_adjoints")
    for name in ("sum", "mean", "matmul", "dot"):
        setattr(mod, name, globals()[name])
    mod.__getattr__ = _jrt.missing("_adj")
    return mod
