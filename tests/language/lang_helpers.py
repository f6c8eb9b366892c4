"""Shared helpers for the language-coverage tests (not collected by pytest).

Gradients are checked with ``s2sad.testing.check_grads`` (dot-product test against central
differences along random directions, float64).  Objects (user classes, dataclasses) are not
pytrees for check_grads, so ``obj_fd_grad`` computes their attribute gradients by central
differences and ``as_attr_dict`` normalises what s2sad returns for an object argument (the same
dataclass/class, or a dict of attribute names) to a dict.
"""
import copy
import dataclasses
import inspect

import numpy as np

import s2sad
from s2sad.testing import check_grads, numerical_grad  # noqa: F401  (re-exported)


def rng(seed=0):
    return np.random.default_rng(seed)


def line_of(fn, needle):
    """Absolute line number of the first line of ``fn``'s source that contains ``needle``."""
    lines, start = inspect.getsourcelines(fn)
    for k, text in enumerate(lines):
        if needle in text:
            return start + k
    raise AssertionError(f"{needle!r} not in the source of {fn.__qualname__}")


def as_attr_dict(g, attrs):
    """The gradient of an object argument as {attribute name: gradient} (None if absent)."""
    if g is None:
        return {a: None for a in attrs}
    if isinstance(g, dict):
        return {a: g.get(a) for a in attrs}
    return {a: getattr(g, a, None) for a in attrs}


def _with_attr(obj, name, value):
    if dataclasses.is_dataclass(obj) and not getattr(type(obj), "__dataclass_params__").frozen:
        new = copy.copy(obj)
        setattr(new, name, value)
        return new
    if dataclasses.is_dataclass(obj):
        return dataclasses.replace(obj, **{name: value})
    new = copy.copy(obj)
    setattr(new, name, value)
    return new


def obj_fd_grad(f, args, pos, attrs, eps=1e-6):
    """{attr: d f / d obj.attr} by central differences, for the object args[pos]."""
    obj = args[pos]
    out = {}
    for a in attrs:
        val = getattr(obj, a)
        x = np.array(val, dtype=np.float64)
        g = np.zeros_like(x)
        flat, gflat = x.reshape(-1), g.reshape(-1)
        for k in range(flat.size):
            for sign in (1.0, -1.0):
                y = flat.copy()
                y[k] += sign * eps
                newval = y.reshape(x.shape)
                if np.ndim(val) == 0 and not isinstance(val, np.ndarray):
                    newval = float(newval)
                a2 = list(args)
                a2[pos] = _with_attr(obj, a, newval)
                gflat[k] += sign * float(f(*a2)) / (2 * eps)
        out[a] = g if np.ndim(val) else float(g)
    return out


def assert_close(got, want, rtol=1e-5, atol=1e-7, what=""):
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=what)


def check_obj_grad(f, args, pos, attrs, wrt=None):
    """s2sad.grad of f with respect to the object args[pos], against finite differences."""
    g = s2sad.grad(f, wrt=pos if wrt is None else wrt)(*args)
    gd = as_attr_dict(g, attrs)
    want = obj_fd_grad(f, args, pos, attrs)
    for a in attrs:
        assert gd[a] is not None, f"no gradient for attribute {a!r}: {g!r}"
        assert_close(gd[a], want[a], what=f"attribute {a}")
    return g
