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
