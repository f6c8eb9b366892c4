"""The device guard without a GPU: a stand-in for CuPy arrays (module name and ``.device``) is
enough for the guard, which must reject mixed calls before anything touches the arrays, and must
leave pure-CPU calls alone (without importing CuPy)."""
import os
import subprocess
import sys

import numpy as np
import pytest

import s2sad
from s2sad import DeviceMismatchError
from s2sad.kernels.device import guard_arguments
from s2sad.rules import adjoints as _adj


class _Dev:
    def __init__(self, i):
        self.id = i


class FakeCupyArray:
    def __init__(self, dev=0, shape=(2,)):
        self.device = _Dev(dev)
        self.shape = shape
        self.dtype = np.dtype(np.float64)
        self.ndim = len(shape)


FakeCupyArray.__module__ = "cupy._core.core"


def model(W, x, bias=0.0):
    return np.sum(np.tanh(W @ x) + bias)


def test_entry_guard_names_function_parameters_devices_and_fix():
    with pytest.raises(DeviceMismatchError) as e:
        s2sad.grad(model, wrt=(0, 1))(FakeCupyArray(), np.ones(2))
    msg = str(e.value)
    line = test_entry_guard_names_function_parameters_devices_and_fix.__code__.co_firstlineno + 2
    assert msg.startswith(f"{__file__}:{line}: model got arrays on different devices (cuda:0: "
                          f"argument W; cpu: argument x)")          # the user's line first
    assert "Fix: move every array to the same device before calling model: cupy.asarray(x) for the " \
           "NumPy arguments (arguments x), or cupy.asnumpy(x) for the CuPy ones" in msg


def test_entry_guard_looks_into_containers():
    def f(ws, x):
        return np.sum(ws[0] * x)
    with pytest.raises(DeviceMismatchError, match=r"cpu: arguments ws\[0\], x; cuda:0: argument ws\[1\]"):
        s2sad.grad(f)([np.ones(2), FakeCupyArray()], np.ones(2))


def test_entry_guard_two_gpus():
    with pytest.raises(DeviceMismatchError) as e:
        s2sad.value_and_grad(model, wrt=(0, 1))(FakeCupyArray(0), FakeCupyArray(1))
    assert "(cuda:0: argument W; cuda:1: argument x)" in str(e.value)
    assert "cupy.cuda.Device(0)" in str(e.value)


def test_entry_guard_on_vjp_and_decorated():
    with pytest.raises(DeviceMismatchError, match="argument W"):
        s2sad.vjp(model, FakeCupyArray(), np.ones(2))
    d = s2sad.differentiate(model, wrt=(0, 1))
    with pytest.raises(DeviceMismatchError, match="argument x"):
        d.grad(np.ones((2, 2)), FakeCupyArray())


def test_cpu_calls_unaffected():
    W, x = np.arange(4.0).reshape(2, 2) / 4, np.array([0.3, -0.2])
    gW, gx = s2sad.grad(model, wrt=(0, 1))(W, x, 1.0)
    h = 1 - np.tanh(W @ x) ** 2
    np.testing.assert_allclose(gW, np.outer(h, x))
    np.testing.assert_allclose(gx, W.T @ h)
    assert guard_arguments("f", (W, [x, (x, 1.0)], {"k": x}, 3, "s")) is None


def test_guard_does_not_import_cupy(tmp_path):
    code = ("import sys, numpy as np, s2sad\n"
            "def f(x, y):\n    return np.sum(np.concatenate([x, y]).T * 2.0)\n"
            "s2sad.grad(f, wrt=(0, 1))(np.ones(3), np.ones(2))\n"
            "assert 'cupy' not in sys.modules, 'cupy imported'\n"
            "assert 'numba' not in sys.modules, 'numba imported'\n")
    script = tmp_path / "cpu_only.py"
    script.write_text(code)
    root = os.path.dirname(os.path.dirname(os.path.abspath(s2sad.__file__)))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr


def test_concat_and_permute_adjoints_guard_the_cotangent():
    with pytest.raises(DeviceMismatchError, match=r"the adjoint of concatenate got arrays on different "
                                                  r"devices \(cpu: argument cotangent; cuda:0: arguments "
                                                  r"input\[0\], input\[1\]\)"):
        _adj.concatenate(np.ones(4), [FakeCupyArray(), FakeCupyArray()], 0)
    with pytest.raises(DeviceMismatchError, match=r"the adjoint of swapaxes got arrays on different "
                                                  r"devices \(cpu: argument cotangent; cuda:0: argument input\)"):
        _adj.swapaxes(np.ones((2, 3)), FakeCupyArray(shape=(3, 2)), 0, 1)
    # NumPy only: unaffected
    a, b = np.ones((2, 3)), np.zeros((1, 3))
    ga, gb = _adj.concatenate(np.arange(9.0).reshape(3, 3), [a, b], 0)
    np.testing.assert_array_equal(gb, [[6.0, 7.0, 8.0]])
