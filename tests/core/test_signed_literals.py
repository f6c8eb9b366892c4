"""Signed number literals are one constant in the IR and in the generated code: ``x ** -1.5``,
``x[-1]``, ``(-2.0) ** 2``; nothing saved for the reverse sweep.  The precedence of the source
is kept where a bare negative number would read otherwise: ``(-2.0) ** 2`` is 4.0, ``-2 ** 2``
is -4."""
import numpy as np

import s2sad
from s2sad.testing import check_grads


def signed(x):
    a = (-2.0) ** 2 * x
    b = x ** -1.5 + x[-1] * -3
    c = -x * -0.5
    return np.sum(a + b + c) + (-1.0) ** 3 * x[0] - -2 ** 2 * x[1] + np.sum(x[-2:] * +2.0)


def last_axis(A):
    return np.sum(np.max(A, axis=-1) ** 2) + np.sum(np.swapaxes(A, -1, -2)[0] * -1.0)


def test_signed_literals_are_constants_in_the_generated_code():
    x = np.linspace(0.5, 2.0, 5)
    src = s2sad.differentiate(signed).adjoint_source(x)
    fwd = src[:src.index("__bwd(")]
    for text in ("(-2.0) ** 2", "x ** (-1.5)", "x[-1]", "* (-3)", "* (-0.5)", "x[-2:]"):
        assert text in fwd, (text, src)
    assert " = -1\n" not in src and " = -1.5 " not in src, src
    tape = fwd.split("return _r, ")[1].split("\n")[0]
    assert "-" not in tape, tape                     # (no constant saved for the reverse sweep)
    value, g = s2sad.value_and_grad(signed)(x)
    assert value == signed(x)
    check_grads(signed, (x,), modes=("rev", "fwd"))
    np.testing.assert_allclose(s2sad.grad(signed, jit=True)(x), g, rtol=1e-12)


def test_negative_axes_are_constants():
    A = np.random.default_rng(1).standard_normal((3, 4))
    src = s2sad.differentiate(last_axis).adjoint_source(A)
    assert "np.max(A, axis=-1)" in src and "np.swapaxes(A, -1, -2)" in src, src
    check_grads(last_axis, (A,), modes=("rev", "fwd"))
