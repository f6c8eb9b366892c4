"""Python mode: products of an adjoint that no later line reads are written into its buffer
(codegen/reverse/in_place.py, ``_rt.mul_into``), only where nothing else sees that buffer; the
square's adjoint in one pass (``_rt.pow_base_adjoint``); whole-array gradients returned as they
are (``api._finish_grads``)."""
import numpy as np

import s2sad
from s2sad import runtime as rt
from s2sad.api import _finish_grads
from s2sad.codegen.reverse.in_place import _rewrite
from s2sad.rules import adjoints as adj
from s2sad.testing import check_grads

R = np.random.default_rng(7)


def relu_mlp(W2, W1, Y, X):
    H = W1 @ X
    return np.sum((Y - W2 @ (H * (0 <= H))) ** 2)


def aliased(x, m, y):
    # the adjoint of z is also y's gradient (unbroadcast gives it back as it is) and h's
    # adjoint: written into in place for x's adjoint, y's gradient would be multiplied by m
    h = x * m
    z = h + y
    return np.sum(np.tanh(z))


def read_twice(x, w):
    # h's adjoint gets two contributions; the product for x reads the sum of both
    h = w @ x
    a = h * x
    b = np.tanh(h)
    return np.sum(a) + np.sum(b * b)


def tanh_layer(W, x):
    h = np.tanh(W @ x)
    return np.sum(h * h)


def bwd_source(f, *args, wrt=None):
    return s2sad.differentiate(f, wrt=wrt).adjoint_source(*args).split("__bwd")[1]


def mlp_args():
    return (R.standard_normal((6, 8)), R.standard_normal((8, 5)), R.standard_normal((6, 4)),
            R.standard_normal((5, 4)))


def test_relu_mask_product_goes_into_the_dead_adjoint():
    args = mlp_args()
    src = bwd_source(relu_mlp, *args, wrt=(0, 1, 2, 3))
    assert "_b_H = _rt.mul_into(_b_2, _1)" in src
    check_grads(relu_mlp, args, wrt=(0, 1, 2, 3))
    W2, W1, Y, X = args
    H = W1 @ X
    M = (H >= 0)
    R4 = Y - W2 @ (H * M)
    g = s2sad.grad(relu_mlp, wrt=(0, 1, 2, 3))(*args)
    gH = (W2.T @ (-2 * R4)) * M
    want = (-2 * R4 @ (H * M).T, gH @ X.T, 2 * R4, W1.T @ gH)
    for a, b in zip(g, want):
        assert np.allclose(a, b, rtol=1e-12, atol=1e-12)


def test_an_adjoint_another_name_holds_is_not_written_in_place():
    x, m, y = (R.standard_normal((5, 6)) for _ in range(3))
    src = bwd_source(aliased, x, m, y, wrt=(0, 1, 2))
    assert "_rt.mul_into(_b_h, x)" in src        # textually dead: the helper must refuse
    gx, gm, gy = s2sad.grad(aliased, wrt=(0, 1, 2))(x, m, y)
    d = 1 - np.tanh(x * m + y) ** 2
    assert np.allclose(gy, d, rtol=1e-13) and np.allclose(gx, d * m, rtol=1e-13)
    assert np.allclose(gm, d * x, rtol=1e-13)
    check_grads(aliased, (x, m, y), wrt=(0, 1, 2))


def test_an_adjoint_read_later_keeps_its_product():
    x, w = R.standard_normal((4, 3)), R.standard_normal((4, 4))
    src = bwd_source(read_twice, x, w, wrt=(0, 1))
    assert "mul_into(_b_h" not in src
    check_grads(read_twice, (x, w), wrt=(0, 1))


def test_tanh_adjoint_in_place():
    W, x = R.standard_normal((7, 5)), R.standard_normal((5, 3))
    check_grads(tanh_layer, (W, x), wrt=(0, 1))
    h = np.tanh(W @ x)
    gW = s2sad.grad(tanh_layer)(W, x)
    assert np.allclose(gW, (2 * h * (1 - h * h)) @ x.T, rtol=1e-12)


def test_rewrite_needs_a_dead_adjoint_read_once():
    line = "_b_H = _rt.unbroadcast(_b_2 * _1, H)"
    assert _rewrite(line, set()) == "_b_H = _rt.unbroadcast(_rt.mul_into(_b_2, _1), H)"
    assert _rewrite(line, {"_b_2"}) is None                       # read by a later line
    assert _rewrite("_b_x = _b_y * _b_y", set()) is None           # read twice
    assert _rewrite("_b_x = m * _b_y", set()) == "_b_x = _rt.rmul_into(_b_y, m)"
    assert _rewrite("_b_x = y * m", set()) is None                  # not an adjoint
    assert _rewrite("_b_x = _rt.cj(_b_y * m)", set()) is None       # not at the top


def test_mul_into_writes_in_place_only_where_nothing_else_sees_it():
    x = np.full(3, 2.0)

    def sole():
        g = np.ones(3)
        return rt.mul_into(g, x)
    assert np.array_equal(sole(), [2.0, 2.0, 2.0])

    g = np.ones(3)
    keep = g                                     # a second name: out of place
    r = rt.mul_into(g, x)
    assert r is not g and np.array_equal(keep, [1.0, 1.0, 1.0])

    def view():
        g = np.ones(3)
        v = g[:2]
        r = rt.mul_into(g, x)
        return r, g, v
    r, g, v = view()
    assert r is not g and np.array_equal(v, [1.0, 1.0])

    def cases():
        out = []
        g = np.ones((2, 3))
        out.append(rt.mul_into(g, np.ones(3)).shape)             # broadcasts: out of place
        g = np.ones(3, np.float32)
        out.append(rt.mul_into(g, x).dtype)                       # promotes: out of place
        g = np.ones(3)
        out.append(rt.rmul_into(g, np.array([True, False, True])).tolist())
        g = np.ones(2)
        g.flags.writeable = False
        out.append(rt.mul_into(g, 3.0).tolist())
        return out
    assert cases() == [(2, 3), np.float64, [1.0, 0.0, 1.0], [3.0, 3.0]]


def test_in_place_product_identity():
    def sole():
        g = np.ones(4)
        h = rt.mul_into(g, 2.0)
        return h is g
    assert sole()


def test_square_adjoint_one_pass_same_values():
    a = R.standard_normal((70, 80))
    a32 = a.astype(np.float32)
    view = adj.sum(1.5, a, None, False)           # a full sum's adjoint: stride 0
    assert not any(view.strides)
    g = R.standard_normal(a.shape)
    for gg, aa in ((1.5, a), (np.float32(1.5), a32), (np.float64(1.5), a32), (view, a),
                   (view, a32), (g, a), (g.astype(np.float32), a32), (g, a32), (g[:, :1], a)):
        r = rt.pow_base_adjoint(gg, aa, 2)
        want = gg * (2 * aa)
        assert r.dtype == want.dtype and r.shape == want.shape
        assert np.array_equal(r, want)


def test_whole_array_gradients_returned_as_they_are():
    args = (np.ones((2, 3)), np.ones(3))
    grads = [np.zeros((2, 3)), np.zeros(3)]
    out = _finish_grads(grads, args, [(0, None), (1, None)])
    assert out[0] is grads[0] and out[1] is grads[1]
    same = np.zeros(3)                                           # one object twice: copied
    out = _finish_grads([same, same], (np.ones(3), np.ones(3)), [(0, None), (1, None)])
    assert out[0] is same and out[1] is not same
    base = np.zeros(6)                                           # views of one buffer: copied
    out = _finish_grads([base[:3], base[3:]], (np.ones(3), np.ones(3)), [(0, None), (1, None)])
    out[0][:] = 1.0
    assert not out[1].any()
    ro = np.zeros(3)
    ro.flags.writeable = False
    out = _finish_grads([np.zeros(3), ro], (np.ones(3), np.ones(3)), [(0, None), (1, None)])
    assert out[1].flags.writeable


def softplus_sum(x, c):
    return np.sum(np.log1p(np.exp(c * x)))


def test_second_derivatives_of_a_gradient_with_in_place_products():
    # the gradient's code holds _rt.mul_into; differentiated again (forward over reverse,
    # reverse over reverse) it is a plain product, so g is read intact after it
    from s2sad import transforms as tr
    x, c = R.standard_normal(5), R.standard_normal(5)
    assert "_rt.mul_into(" in bwd_source(softplus_sum, x, c, wrt=0)
    s = 1 / (1 + np.exp(-c * x))
    want = np.diag(c * c * s * (1 - s))
    assert np.allclose(tr.hessian(softplus_sum)(x, c), want, rtol=1e-10, atol=1e-12)
    v = R.standard_normal(5)
    assert np.allclose(s2sad.grad(grad_dot)(x, c, v), want @ v, rtol=1e-10, atol=1e-12)


def grad_dot(x, c, v):
    return np.sum(s2sad.grad(softplus_sum)(x, c) * v)
