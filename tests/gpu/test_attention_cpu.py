"""The attention example's model (examples/gpu_attention.py) on NumPy arrays: s2sad's gradients
against central finite differences, and a training step that lowers the loss."""
import numpy as np

import s2sad
from s2sad.testing import check_grads
from attention_loader import load

att = load()


def small_problem(seed=0):
    params, teacher = att.init(np, d_model=8, seed=seed, dtype="float64")
    x, y = att.data(np, teacher, batch=2, tokens=3, d_model=8, seed=seed + 1, dtype="float64")
    return params, x, y


def test_loss_gradients_against_finite_differences():
    params, x, y = small_problem()
    check_grads(att.loss, (*params, x, y), wrt=(0, 1, 2, 3, 4), rtol=1e-5, n_dirs=2)


def test_block_gradient_wrt_input_against_finite_differences():
    params, x, _ = small_problem(3)
    check_grads(att.attention_block, (*params, x), wrt=5, rtol=1e-5, n_dirs=2)


def test_gradient_shapes_and_a_descent_step():
    params, x, y = small_problem(5)
    value, grads = s2sad.value_and_grad(att.loss, wrt=(0, 1, 2, 3, 4))(*params, x, y)
    assert [g.shape for g in grads] == [p.shape for p in params]
    assert all(g.dtype == np.float64 for g in grads)
    stepped = [p - 0.05 * g for p, g in zip(params, grads)]
    assert att.loss(*stepped, x, y) < value


def test_training_lowers_the_loss():
    hist = att.train(np, steps=4, batch=2, tokens=4, d_model=8, dtype="float64")
    assert len(hist) == 4 and all(b < a for a, b in zip(hist, hist[1:]))
