"""jit=True keeps Python's int arithmetic: a product or power of two ints that numba's 64-bit ints
would get wrong (a wrap-around, an int to a negative power, which Python makes a float) is
written as a checked helper (codegen/jit_ints.py), which refuses at run time; that call then runs
as the Python derivative, with the same numbers as the function."""
import warnings

import numpy as np
import pytest

import s2sad
from s2sad.errors import JitFallbackWarning

pytest.importorskip("numba")


def halving(x, n):
    s = 0.0
    for k in range(n):
        s += x * 2 ** (-k)              # Python: a float; numba's int power: 0 from k = 1
    return s


def taylor_exp(x, n):
    s = 0.0
    fact = 1
    for k in range(n):
        if k > 0:
            fact *= k                   # past 20!, int64 wraps around
        s += x ** k / fact
    return s


def strided_sum(x, n):
    s = 0.0
    for i in range(n):
        j = (i * 3) % x.shape[0]        # products of ints that fit: compiled as they are
        s += x[j] * 2 ** i
    return s


def from_calls_and_shapes(x, k):      # ints that calls and shapes give
    return x[0] * pow(2, -k) + x[1] * int(k) ** -2 + x[2] * x.shape[0] ** -1 + \
        x[0] * max(k, 1) ** -1 + x[1] * x.shape[0] ** 50 / 1e23 + x[2] * int(k) ** 25 / 1e40


def _both(f, args, wrt=0):
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        vj, gj = s2sad.value_and_grad(f, wrt=wrt, jit=True)(*args)
    vp, gp = s2sad.value_and_grad(f, wrt=wrt)(*args)
    return (vj, gj), (vp, gp)


@pytest.mark.parametrize("f, args, want", [
    (halving, (1.3, 5), (1.3 * (2 - 2 ** -4), 2 - 2 ** -4)),
    (taylor_exp, (30.0, 40), None),
    (taylor_exp, (0.5, 10), None),
    (from_calls_and_shapes, (np.array([1.3, -0.7, 2.0]), 3), None),
    (from_calls_and_shapes, (np.array([1.3, -0.7, 2.0]), 100), None),
], ids=["negative-power", "factorial-past-int64", "factorial-in-range", "calls-and-shapes",
        "calls-and-shapes-past-int64"])
def test_int_products_and_powers_give_pythons_numbers(f, args, want):
    (vj, gj), (vp, gp) = _both(f, args)
    assert vj == pytest.approx(vp, rel=1e-13)
    np.testing.assert_allclose(gj, gp, rtol=1e-13)
    if want is not None:
        assert (vj, gj) == pytest.approx(want, rel=1e-13)
    t = (np.ones_like(args[0]) if np.ndim(args[0]) else 1.0, None)
    tj = s2sad.jvp(f, args, t, jit=True)
    assert tj == pytest.approx(s2sad.jvp(f, args, t), rel=1e-13)


def test_the_checked_helpers_are_in_the_source_and_ints_that_fit_stay_compiled():
    src = s2sad.differentiate(taylor_exp).adjoint_source(0.5, 10, jit=True)
    assert "_rt.imul(fact, k)" in src
    assert "_rt.ipow(2, " in s2sad.differentiate(halving).adjoint_source(1.3, 5, jit=True)
    x = np.linspace(0.1, 1.0, 7)
    (vj, gj), (vp, gp) = _both(strided_sum, (x, 9))
    assert vj == pytest.approx(vp, rel=1e-13)
    np.testing.assert_allclose(gj, gp, rtol=1e-13)
    c = s2sad.differentiate(strided_sum, jit=True).derivative(x, 9)
    assert c.failed is None


def test_a_later_call_that_refuses_runs_as_python_through_the_shortcut_too():
    # the first call compiles and runs (n = 10: 9! fits); the second takes the per-signature
    # shortcut (api._vg), where the check refuses (n = 40): the full path runs it as Python
    vg = s2sad.value_and_grad(taylor_exp, jit=True)
    for n in (10, 40, 12):
        v, g = vg(3.0, n)
        vp, gp = s2sad.value_and_grad(taylor_exp)(3.0, n)
        assert v == pytest.approx(vp, rel=1e-13) and g == pytest.approx(gp, rel=1e-13)
