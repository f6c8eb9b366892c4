import numpy as np
import pytest

from s2sad import DeviceMismatchError
from s2sad.kernels import check_devices, device_of, array_module


class _Dev:
    def __init__(self, i):
        self.id = i


class FakeCupyArray:
    """Looks like a CuPy array to the guard (module name and .device) without needing CuPy."""

    def __init__(self, dev=0):
        self.device = _Dev(dev)


FakeCupyArray.__module__ = "cupy._core.core"


def test_cpu_and_scalars_pass():
    assert check_devices("concatenate", [[np.ones(2), np.ones(3)], 0]) == "cpu"
    assert check_devices("f", [1.0, 2, "s"]) is None
    assert device_of(np.ones(2)) == "cpu" and device_of(3.0) == "cpu"
    assert array_module(np.ones(2)) is np


def test_gpu_only_passes():
    assert check_devices("concatenate", [[FakeCupyArray(), FakeCupyArray()]]) == "cuda:0"
    assert device_of(FakeCupyArray(1)) == "cuda:1"


def test_mixed_cpu_gpu_raises_with_positions_and_fix():
    with pytest.raises(DeviceMismatchError) as e:
        check_devices("concatenate", [[FakeCupyArray(), np.ones(2), FakeCupyArray()]])
    msg = str(e.value)
    assert "concatenate" in msg and "cuda:0: arguments 0[0], 0[2]" in msg and "cpu: argument 0[1]" in msg
    assert "Fix:" in msg and "cupy.asarray" in msg


def test_two_gpus_raise():
    with pytest.raises(DeviceMismatchError, match=r"matmul got arrays on different devices \(cuda:0: "
                                                  r"argument 0; cuda:1: argument 1\)"):
        check_devices("matmul", [FakeCupyArray(0), FakeCupyArray(1)])


def test_keyword_arguments():
    with pytest.raises(DeviceMismatchError, match="out"):
        check_devices("add", [FakeCupyArray(0)], {"out": np.ones(2)})
