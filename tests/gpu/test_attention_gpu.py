"""The attention example on the GPU: CuPy gradients equal the NumPy ones, stay on the device, and
the gradient computation does not synchronise with the host."""
import numpy as np
import pytest

import s2sad
from gpu_helpers import GPU_OK, assert_same, cp, needs_gpu, to_gpu
from attention_loader import load

pytestmark = needs_gpu


@pytest.mark.parametrize("dtype,tol", [("float64", 1e-9), ("float32", 2e-4)])
def test_cupy_gradients_match_numpy(dtype, tol):
    att = load()
    params, teacher = att.init(np, d_model=16, seed=0, dtype=dtype)
    x, y = att.data(np, teacher, batch=3, tokens=5, d_model=16, seed=1, dtype=dtype)
    vg = s2sad.value_and_grad(att.loss, wrt=(0, 1, 2, 3, 4))
    v_ref, g_ref = vg(*params, x, y)
    v, g = vg(*to_gpu(params), cp.asarray(x), cp.asarray(y))
    assert_same(v, v_ref, "loss", rtol=tol, atol=tol)
    assert_same(g, g_ref, "gradients", rtol=tol, atol=tol)


def test_gradient_step_without_host_synchronisation():
    """Queue a long stretch of GPU work, then take a gradient step: had the step waited for the
    GPU anywhere (a host synchronisation, a device-to-host copy), the work queued before it would
    be finished when the step returns."""
    att = load()
    params, teacher = att.init(cp, d_model=32, seed=0)
    x, y = att.data(cp, teacher, batch=4, tokens=8, d_model=32, seed=1)
    vg = s2sad.value_and_grad(att.loss, wrt=(0, 1, 2, 3, 4))
    vg(*params, x, y)                       # build the derivative and compile the kernels first
    busy = cp.ones((4096, 4096), cp.float32)
    cp.cuda.Device().synchronize()
    for _ in range(100):                    # a few hundred ms of matrix products
        busy @ busy
    queued = cp.cuda.Event()
    queued.record()
    value, grads = vg(*params, x, y)
    params = [p - 0.1 * g for p, g in zip(params, grads)]
    assert not queued.done, "the gradient step waited for the GPU"
    assert all(type(g).__module__.startswith("cupy") for g in grads)
    assert np.isfinite(float(value))


def test_training_on_gpu_lowers_the_loss():
    att = load()
    hist = att.train(cp, steps=5, batch=4, tokens=16, d_model=32)
    assert all(b < a for a, b in zip(hist, hist[1:]))
