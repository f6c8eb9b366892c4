"""Arrays proven to have one shape (codegen/reverse/same_shape.py): the adjoint of an operand of
an elementwise operation whose other array operands are boolean masks of its shape needs no
``unbroadcast`` (and the operand is no longer kept for its shape); everything else keeps it."""
import numpy as np
import pytest

import s2sad
from s2sad.testing import check_grads

R = np.random.default_rng(5)


def relu(x):
    return np.sum((x * (0 <= x)) ** 2)


def relu_of_product(w, x):
    h = w @ x
    m = h > 0.5
    return np.sum(np.sin(h * m))


def mask_of_other_shape(x, v):       # v (1, n) broadcasts against x (m, n): the mask is v's
    return np.sum(x * (v > 0))


def mask_then_rebound(x):           # x rebound: its shape may change, no class
    m = x > 0
    x = x[:, :1]
    return np.sum(x * m)


def two_float_arrays(x):            # y has x's shape but is no mask: dtypes may differ
    y = x + 1.0
    return np.sum(x * y)


def bwd(f, *args, jit=False):
    src = s2sad.differentiate(f).adjoint_source(*args, jit=jit)
    return src.split("__bwd")[1] if not jit else src


def test_relu_mask_needs_no_unbroadcast():
    x = R.standard_normal((4, 5))
    src = bwd(relu, x)
    assert "_rt.unbroadcast" not in src
    check_grads(relu, (x,))
    assert np.allclose(s2sad.grad(relu)(x), 2 * x * (x >= 0), rtol=1e-14)


def test_mask_of_a_product_and_the_operand_is_not_kept():
    w, x = R.standard_normal((6, 4)), R.standard_normal((4, 3))
    src = bwd(relu_of_product, w, x)
    assert "unbroadcast" not in src
    saved = src.split("= _tape")[0].split("\n")[-1].replace(" ", "").split(",")
    assert "m" in saved and "h" not in saved                   # h is not kept for its shape
    check_grads(relu_of_product, (w, x), wrt=(0, 1))
    h = w @ x
    gh = np.cos(h * (h > 0.5)) * (h > 0.5)
    gw, gx = s2sad.grad(relu_of_product, wrt=(0, 1))(w, x)
    assert np.allclose(gw, gh @ x.T, rtol=1e-13) and np.allclose(gx, w.T @ gh, rtol=1e-13)


@pytest.mark.parametrize("f, make", [
    (mask_of_other_shape, lambda: (R.standard_normal((4, 5)), R.standard_normal((1, 5)))),
    (two_float_arrays, lambda: (R.standard_normal((3, 4)),)),
])
def test_other_operands_keep_unbroadcast(f, make):
    args = make()
    assert "_rt.unbroadcast(" in bwd(f, *args)
    check_grads(f, args)


def test_a_rebound_variable_has_no_class():
    x = R.standard_normal((3, 4))
    assert "_rt.unbroadcast(" in bwd(mask_then_rebound, x)
    check_grads(mask_then_rebound, (x,))
    g = s2sad.grad(mask_then_rebound)(x)
    want = np.zeros_like(x)
    want[:, :1] = (x > 0).sum(axis=1, keepdims=True)
    assert np.allclose(g, want)


def test_float32_relu_keeps_float32():
    x = R.standard_normal((4, 5)).astype(np.float32)
    g = s2sad.grad(relu)(x)
    assert g.dtype == np.float32
    assert np.allclose(g, 2 * x * (x >= 0), rtol=1e-6)


def test_jit_mode_relu_mask():
    pytest.importorskip("numba")
    from tests.jit.compare import same_as_python
    w, x = R.standard_normal((6, 4)), R.standard_normal((4, 3))
    assert "_b_h = _rt.unbroadcast" not in bwd(relu_of_product, w, x, jit=True)
    same_as_python(relu_of_product, (w, x), (0, 1))
