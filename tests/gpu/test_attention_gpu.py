"""The attention example on the GPU: CuPy gradients equal the NumPy ones, stay on the device, and
the gradient computation does not synchronise with the host."""
import gc
import time

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


def _queue_gpu_work(busy, seconds, per):
    for _ in range(int(seconds / per) + 1):
        busy @ busy
    ev = cp.cuda.Event()
    ev.record()
    return ev


def _waits(step, busy, per):
    """Run ``step`` traced line by line behind queued GPU work; the places after which the queue
    had drained (where the step waited for the GPU), each with the stack that led there."""
    import sys
    import traceback
    state = {"ev": _queue_gpu_work(busy, 2.0, per), "prev": None}
    sites = []

    def tracer(frame, event, arg):
        if state["ev"].done:
            sites.append(f"after {state['prev']}:\n" + "".join(traceback.format_stack(frame)[-6:]))
            state["ev"] = _queue_gpu_work(busy, 2.0, per)
        state["prev"] = (frame.f_code.co_filename, frame.f_lineno, event)
        return tracer
    sys.settrace(tracer)
    try:
        step()
    finally:
        sys.settrace(None)
    return sites


def test_gradient_step_without_host_synchronisation():
    """Queue about two seconds of GPU work, then take a (second) training step traced line by line:
    had the step waited for the GPU anywhere (a host synchronisation, a copy from pageable host
    memory, a module load), the queue would have drained at that line."""
    att = load()
    params, teacher = att.init(cp, d_model=32, seed=0)
    x, y = att.data(cp, teacher, batch=4, tokens=8, d_model=32, seed=1)
    vg = s2sad.value_and_grad(att.loss, wrt=(0, 1, 2, 3, 4))
    result = {}

    def step():
        value, grads = vg(*params, x, y)
        result["params"] = [p - 0.1 * g for p, g in zip(params, grads)]
        result["value"], result["grads"] = value, grads
    step()      # build the derivative, compile s2sad's and CuPy's kernels (loading one waits)
    busy = cp.ones((4096, 4096), cp.float32)
    busy @ busy
    cp.cuda.Device().synchronize()
    t = time.perf_counter()
    for _ in range(10):
        busy @ busy
    cp.cuda.Device().synchronize()
    per = (time.perf_counter() - t) / 10
    gc.collect()                            # no collection of a large heap inside the traced call
    sites = _waits(step, busy, per)
    assert not sites, f"the gradient step waited for the GPU {len(sites)} times:\n" + "\n----\n".join(sites)
    assert all(type(g).__module__.startswith("cupy") for g in result["grads"])
    assert np.isfinite(float(result["value"]))


def test_training_on_gpu_lowers_the_loss():
    att = load()
    hist = att.train(cp, steps=5, batch=4, tokens=16, d_model=32)
    assert all(b < a for a, b in zip(hist, hist[1:]))
