"""A feature whose optional extra is not installed says which extra to install."""
import os
import sys

import numpy as np
import pytest

import s2sad
from s2sad.errors import MissingExtraError, S2SADError
from s2sad.kernels import concat_adjoint, launch, permute_adjoint




@pytest.fixture
def no_numba(monkeypatch):
    """numba (and so numba.cuda) cannot be imported; the kernels' lazily imported module is
    forgotten."""
    monkeypatch.setitem(sys.modules, "numba", None)
    monkeypatch.setattr(launch, "cuda", None)
    monkeypatch.setattr(launch, "_kernels", {})    # (kernels compiled by earlier tests: forgotten)


def test_kernels_without_numba_name_the_gpu_extra(no_numba):
    with pytest.raises(MissingExtraError) as e:
        launch._nb()
    assert "numba is not installed" in str(e.value)
    with pytest.raises(MissingExtraError) as e:
        concat_adjoint(np.ones(5), (np.ones(2), np.ones(3)), backend="cuda")
    msg = str(e.value)
    assert msg.startswith("the concatenate and permute adjoints on CuPy arrays (Numba CUDA "
                          "kernels): numba is not installed")
    assert msg.endswith("Fix: pip install 's2sad[gpu]' (it installs cupy, numba and numba-cuda)")
    assert isinstance(e.value, ImportError) and isinstance(e.value, S2SADError)
    with pytest.raises(MissingExtraError, match=r"s2sad\[gpu\]"):
        permute_adjoint(np.ones((2, 3)), (1, 0), backend="cuda")


def test_numpy_gradients_need_no_numba(no_numba):
    """The CPU path of the same adjoints is plain NumPy: no numba import."""
    def f(a, b):
        return np.sum(np.concatenate([a, b]).T ** 2)
    a, b = np.array([1.0, 2.0]), np.array([3.0, -1.0, 0.5])
    ga, gb = s2sad.grad(f, (0, 1))(a, b)
    np.testing.assert_allclose(ga, 2 * a)
    np.testing.assert_allclose(gb, 2 * b)


def test_missing_numba_cuda_is_named(monkeypatch):
    """numba present but numba-cuda missing: the module that failed is named."""
    monkeypatch.setitem(sys.modules, "numba.cuda", None)
    if "numba" in sys.modules:          # (`from numba import cuda` reads the package attribute)
        monkeypatch.delattr(sys.modules["numba"], "cuda", raising=False)
    monkeypatch.setattr(launch, "cuda", None)
    monkeypatch.setattr(launch, "_kernels", {})
    with pytest.raises(MissingExtraError, match=r"numba\.cuda is not installed .*\nFix: pip "
                                                r"install 's2sad\[gpu\]'"):
        launch._nb()
    with pytest.raises(MissingExtraError, match=r"numba\.cuda is not installed .*\nFix: pip "
                                                r"install 's2sad\[gpu\]'"):
        concat_adjoint(np.ones(5), (np.ones(2), np.ones(3)), backend="cuda")
