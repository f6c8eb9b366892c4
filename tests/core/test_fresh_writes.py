"""The sharing check before a write into an array (``runtime.share_guard``) is left out where the
array was made fresh earlier in the same block (``np.empty``, ``np.zeros_like``, ``x.copy()``...)
and nothing since may have made another name hold it (classify/writes.py,
``_drop_fresh_share_guards``): a step function called in a loop, which fills new arrays and
returns them, had a check per element written (the names it read held the previous step's
arrays, which the flow-insensitive objects analysis cannot tell from the new ones).  Where an
alias is made, the check stays and refuses as before."""
import numpy as np
import pytest

import s2sad
from s2sad.errors import UnsupportedSyntaxError
from s2sad.testing import check_grads

_R = np.random.default_rng(5)


def step(x, v, k):
    n = x.shape[0]
    xn = np.empty(n)
    vn = np.zeros_like(v)
    for i in range(n):
        f = -k * x[i]
        vn[i] = v[i] + 0.1 * f
        xn[i] = x[i] + 0.1 * vn[i]
    return xn, vn


def simulate(x0, v0, k):
    x, v = x0, v0
    for t in range(5):
        x, v = step(x, v, k)
    return np.sum(x ** 2) + np.sum(v ** 2)


def aliased(x):
    y = np.empty(x.shape[0])
    z = y                                   # another name for the fresh array
    for i in range(x.shape[0]):
        y[i] = x[i] * 2.0
    return np.sum(z * x)


def boxed(x):
    y = np.empty(x.shape[0])
    box = (y, x)                            # the fresh array held by a tuple
    for i in range(x.shape[0]):
        y[i] = x[i] * 2.0
    return np.sum(box[0] * x)


def copied(x):
    y = x.copy()
    for i in range(x.shape[0]):
        y[i] = y[i] * x[i]
    return np.sum(y) + np.sum(x)


@pytest.mark.parametrize("jit", [False, True])
def test_no_check_before_writes_into_fresh_arrays(jit):
    if jit:
        pytest.importorskip("numba")
    args = (_R.standard_normal(4), _R.standard_normal(4), 1.3)
    src = s2sad.differentiate(simulate, wrt=(0, 1, 2)).adjoint_source(*args, jit=jit)
    assert "share_guard" not in src
    check_grads(simulate, args, wrt=(0, 1, 2))
    g = s2sad.grad(simulate, wrt=(0, 1, 2), jit=jit)(*args)
    g0 = s2sad.grad(simulate, wrt=(0, 1, 2), jit=False)(*args)
    for a, b in zip(g, g0):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    x = _R.standard_normal(5)
    src = s2sad.differentiate(copied, wrt=0).adjoint_source(x, jit=jit)
    assert "share_guard" not in src
    check_grads(copied, (x,))


@pytest.mark.parametrize("f", [aliased, boxed])
def test_an_alias_of_the_fresh_array_is_still_refused_or_right(f):
    x = _R.standard_normal(4)
    try:
        g = s2sad.grad(f)(x)
    except UnsupportedSyntaxError:
        return
    np.testing.assert_allclose(g, 4.0 * x, rtol=1e-12)      # (sum(2 x * x))
