"""Shared helpers of the GPU tests: CuPy availability, host/device tree conversion, comparisons."""
import os

import numpy as np
import pytest

try:
    import cupy as cp
    GPU_OK = bool(cp.is_available()) and os.environ.get("NUMBA_ENABLE_CUDASIM") == "0"
except Exception:  # noqa: BLE001
    cp, GPU_OK = None, False

if GPU_OK:
    gam = cp.get_array_module          # the xp idiom of the tests' functions
else:
    def gam(*arrays):                  # (collected but skipped without a GPU)
        return np

needs_gpu = [pytest.mark.gpu,
             pytest.mark.skipif(not GPU_OK, reason="needs CuPy, a GPU and NUMBA_ENABLE_CUDASIM=0")]


def is_cupy(x):
    return type(x).__module__.startswith("cupy")


def to_gpu(x):
    """NumPy arrays of a tree (lists, tuples, dicts) moved to the GPU; other leaves unchanged."""
    if isinstance(x, np.ndarray):
        return cp.asarray(x)
    if isinstance(x, (list, tuple)) and not hasattr(x, "_fields"):
        return type(x)(to_gpu(v) for v in x)
    if isinstance(x, tuple):
        return tuple(to_gpu(v) for v in x)
    if isinstance(x, dict):
        return {k: to_gpu(v) for k, v in x.items()}
    return x


def assert_same(gpu, ref, what="", rtol=1e-7, atol=1e-9):
    """A GPU result against its NumPy reference: same structure, CuPy arrays where NumPy has
    arrays (nothing came back to the host), same shapes and dtypes, close values."""
    if ref is None or (type(ref) is float and ref == 0.0 and gpu is None):
        assert gpu is None or (type(gpu) is float and gpu == 0.0), f"{what}: expected no gradient"
        return
    if isinstance(ref, (list, tuple)):
        assert isinstance(gpu, (list, tuple)) and len(gpu) == len(ref), f"{what}: structure"
        for i, (a, b) in enumerate(zip(gpu, ref)):
            assert_same(a, b, f"{what}[{i}]", rtol, atol)
        return
    if isinstance(ref, np.ndarray) and ref.ndim > 0:
        assert is_cupy(gpu), f"{what}: expected a CuPy array, got {type(gpu).__name__}"
        assert gpu.shape == ref.shape, f"{what}: shape {gpu.shape} != {ref.shape}"
        assert gpu.dtype == ref.dtype, f"{what}: dtype {gpu.dtype} != {ref.dtype}"
        np.testing.assert_allclose(cp.asnumpy(gpu), ref, rtol=rtol, atol=atol, err_msg=what)
        return
    # scalars: Python floats, NumPy scalars, 0-d arrays
    assert not isinstance(gpu, np.ndarray) or gpu.ndim == 0, f"{what}: a NumPy array came back"
    g = cp.asnumpy(gpu) if is_cupy(gpu) else np.asarray(gpu)
    np.testing.assert_allclose(g, np.asarray(ref), rtol=rtol, atol=atol, err_msg=what)
