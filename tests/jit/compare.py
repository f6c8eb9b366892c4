"""Checks the tests/jit files share: a derivative that must compile (a JitFallbackWarning is an
error), and its numbers against Python mode's and central differences."""
import warnings

import numpy as np
import pytest

import s2sad
from s2sad.errors import JitFallbackWarning
from s2sad.testing import check_grads


def compiled(f, wrt, args):
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        return s2sad.value_and_grad(f, wrt=wrt, jit=True)(*args)


def same_as_python(f, args, wrt):
    vj, gj = compiled(f, wrt, args)
    vp, gp = s2sad.value_and_grad(f, wrt=wrt, jit=False)(*args)
    assert vj == pytest.approx(vp, rel=1e-12)
    for a, b, i in zip(gj, gp, wrt):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
        assert np.shape(a) == np.shape(args[i])
    check_grads(f, args, wrt=wrt)
    return gj


def compiled_jvp(f, args, tangents):
    """``jvp(f, args, tangents, jit=True)``, a JitFallbackWarning an error."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        return s2sad.jvp(f, args, tangents, jit=True)


def random_tangents(args, seed):
    """Standard normal tangents in the arguments' shapes (a float for a number)."""
    r = np.random.default_rng(seed)
    return tuple(r.normal(size=np.shape(a)) if np.ndim(a) else float(r.normal()) for a in args)


def same_jvp_as_python(f, args, tangents, rel=1e-10):
    """The compiled jvp of a scalar function: its value as Python mode's (1e-12), its tangent to
    ``rel``."""
    vj, tj = compiled_jvp(f, args, tangents)
    vp, tp = s2sad.jvp(f, args, tangents, jit=False)
    assert vj == pytest.approx(vp, rel=1e-12) and tj == pytest.approx(tp, rel=rel)
    return vj, tj


def fallback_same_as_python(f, args, wrt):
    """``value_and_grad(..., jit=True)`` where it may run as Python (the warning allowed): the
    numbers of Python mode (1e-12)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", JitFallbackWarning)
        vj, gj = s2sad.value_and_grad(f, wrt=wrt, jit=True)(*args)
    vp, gp = s2sad.value_and_grad(f, wrt=wrt, jit=False)(*args)
    assert vj == pytest.approx(vp, rel=1e-12)
    for a, b in zip(gj, gp):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    return vj, gj
