"""jit=True on loop kernels written as Numba users write them: a float accumulator written into an
output array (``acc += img[i + a, j + b] * k[a, b]``; its in-place check is left out where the
types prove ``acc`` a number, and numba's version of the check passes numbers), and ``prange``
loops (differentiated as the serial loop), double buffers swapped in a loop, and, in forward mode, ``np.array`` of a display of
numbers (an ODE's right-hand side).  Each ran the whole derivative as Python before."""
import math
import warnings

import numpy as np
import pytest

import s2sad
from s2sad.errors import JitFallbackWarning, UnsupportedSyntaxError

from .compare import random_tangents, same_as_python, same_jvp_as_python

numba = pytest.importorskip("numba")
prange = numba.prange


def conv2d(img, k):
    n, m = img.shape
    p, q = k.shape
    out = np.zeros((n - p + 1, m - q + 1))
    for i in range(n - p + 1):
        for j in range(m - q + 1):
            acc = 0.0
            for a in range(p):
                for b in range(q):
                    acc += img[i + a, j + b] * k[a, b]
            out[i, j] = acc
    return np.sum(np.tanh(out))


def running(x, v):                   # r = v[i] is a number: its `+=` rebinds it
    out = np.zeros(3)
    for i in range(3):
        r = v[i]
        r += x[i] * 2.0
        out[i] = r * r
    return np.sum(out) + np.sum(v * x)


def row_added(x):                    # r = m[i] is a row of m: `+=` changes m, refused
    m = np.outer(x, x)
    for i in range(3):
        r = m[i]
        r += x
    return np.sum(m)


@numba.njit(parallel=True)
def pair_energy(x):
    n = x.shape[0]
    e = np.zeros(n)
    for i in numba.prange(n):
        for j in range(n):
            if i != j:
                d = x[i] - x[j]
                e[i] += 1.0 / math.sqrt(d * d + 0.1)
    return e.sum()


def prange_sum(x, y):                # prange imported by name, in a plain function
    s = 0.0
    for i in prange(x.shape[0]):
        s += math.sin(x[i] * y)
    return s


def rhs(y, a, b):
    return np.array([a * y[0] - b * y[0] * y[1], -y[1] + b * y[0] * y[1]])


def euler(y0, a, b):                 # np.array of a list in a helper, called in a loop
    y = y0.copy()
    for _ in range(20):
        y = y + 0.05 * rhs(y, a, b)
    return y[0] * y[1]


def asarray_of_array(x, y):          # np.asarray of an array (numba has no np.array of one)
    v = x * y
    w = np.asarray(v)
    return np.sum(w * v) + np.array([y, 1.0, x[0]]) @ x


def heat(u0, kappa):                 # double buffers swapped each step
    u = u0.copy()
    un = np.empty_like(u)
    for t in range(10):
        un[0] = u[0]
        un[-1] = u[-1]
        for i in range(1, u.shape[0] - 1):
            un[i] = u[i] + kappa * (u[i + 1] - 2.0 * u[i] + u[i - 1])
        u, un = un, u
    return np.sum(u ** 2)


@numba.njit
def thomas(a, b, c, d):              # a tridiagonal solve: arrays read where the loop wrote them
    n = d.shape[0]
    cp = np.empty(n)
    dp = np.empty(n)
    cp[0] = c[0] / b[0]
    dp[0] = d[0] / b[0]
    for i in range(1, n):
        m = b[i] - a[i] * cp[i - 1]
        cp[i] = c[i] / m
        dp[i] = (d[i] - a[i] * dp[i - 1]) / m
    x = np.empty(n)
    x[n - 1] = dp[n - 1]
    for i in range(n - 2, -1, -1):
        x[i] = dp[i] - cp[i] * x[i + 1]
    return np.sum(x ** 2)


@numba.njit
def verlet(pos0, vel0, k):           # `+=` on local arrays, a value carried across steps
    pos = pos0.copy()
    vel = vel0.copy()
    dt = 0.01
    acc = -k * pos
    for step in range(20):
        pos += dt * vel + 0.5 * dt * dt * acc
        new_acc = -k * pos
        vel += 0.5 * dt * (acc + new_acc)
        acc = new_acc
    return np.sum(pos ** 2) + np.sum(vel ** 2)


R = np.random.default_rng(41)
CASES = [
    (conv2d, (R.random((6, 5)), R.random((3, 2))), (0, 1)),
    (running, (R.normal(size=3), R.normal(size=3)), (0, 1)),
    (pair_energy, (R.random(7),), (0,)),
    (prange_sum, (R.normal(size=5), 0.7), (0, 1)),
    (euler, (np.array([1.0, 0.5]), 1.1, 0.4), (0, 1, 2)),
    (asarray_of_array, (R.normal(size=3), 0.6), (0, 1)),
    (heat, (R.random(8), 0.2), (0, 1)),
    (thomas, (R.random(6), 4 + R.random(6), R.random(6), R.random(6)), (0, 1, 2, 3)),
    (verlet, (R.normal(size=4), R.normal(size=4), 1.3), (0, 1, 2)),
]


@pytest.mark.parametrize("f, args, wrt", CASES, ids=[c[0].__name__ for c in CASES])
def test_compiles_in_reverse(f, args, wrt):
    same_as_python(f, args, wrt)


@pytest.mark.parametrize("f, args, wrt", CASES, ids=[c[0].__name__ for c in CASES])
def test_compiles_in_forward(f, args, wrt):
    same_jvp_as_python(f, args, random_tangents(args, 5))


@pytest.mark.parametrize("jit", [False, True])
def test_typed_numbers_have_no_inplace_check(jit):
    # the check is for arrays and lists; the types prove acc and r numbers, so neither mode
    # writes it (Python mode calls it at every iteration otherwise)
    for f, args, wrt in CASES[:2]:
        src = s2sad.differentiate(f, wrt=wrt, jit=jit).adjoint_source(*args, jit=jit)
        assert "inplace_guard" not in src


@pytest.mark.parametrize("jit", [False, True])
def test_row_changed_in_place_is_refused_in_both_modes(jit):
    # (an array's check has no compiled version: the derivative runs as Python, which refuses)
    x = np.array([0.3, -1.2, 0.8])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", JitFallbackWarning)
        with pytest.raises(UnsupportedSyntaxError, match=r"`r \+= \.\.\.` changes `r`") as e:
            s2sad.grad(row_added, jit=jit)(x)
        assert "test_jit_kernels.py" in str(e.value)
        with pytest.raises(UnsupportedSyntaxError, match=r"`r \+= \.\.\.` changes `r`"):
            s2sad.jvp(row_added, (x,), (np.ones(3),), jit=jit)


def test_prange_loop_is_a_range_loop_in_the_source():
    src = s2sad.differentiate(prange_sum, wrt=(0, 1)).adjoint_source(R.normal(size=5), 0.7)
    assert "for i in range(" in src and "_rt.here" not in src


def test_element_reads_of_changed_arrays_save_shapes():
    # u[0] read once per step of u, which the swap makes an array changed in place: the
    # compiled getitem adjoint reads u's shape alone, so the shape is saved per step, not a copy
    args = (R.random(8), 0.2)
    src = s2sad.differentiate(heat, wrt=(0, 1), jit=True).adjoint_source(*args, jit=True)
    assert "_rt.snap(u)" not in src and "_rt.getitem_adjoint(" in src, src
    assert "_adj.standin(_shape" in src, src
