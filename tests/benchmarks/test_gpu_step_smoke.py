"""benchmarks/gpu_step.py runs, and the steps it times are differentiated right.

No timing here: s2sad's gradient of every step is checked against central finite differences at
float64 on small sizes; the PyTorch and JAX versions (when importable) must compute the same
value as the NumPy step; ``--numpy --quick`` runs and prints every step with numbers.
"""
import importlib.util
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import s2sad
from s2sad.testing import check_grads

_ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
_PATH = os.path.join(_ROOT, "benchmarks", "gpu_step.py")


def _load():
    if "s2sad_bench_gpu_step" in sys.modules:
        return sys.modules["s2sad_bench_gpu_step"]
    spec = importlib.util.spec_from_file_location("s2sad_bench_gpu_step", _PATH)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod            # s2sad reads the steps' source through their module
    spec.loader.exec_module(mod)
    return mod


bench = _load()

SMALL = [bench.attention_case(2, 4, 8), bench.mlp_case(6, 5, 7, 3), bench.example_case(2, 4, 8)]
IDS = [c[0] for c in SMALL]


@pytest.mark.parametrize("case", SMALL, ids=IDS)
def test_s2sad_gradient_against_finite_differences(case):
    name, step, _, params, data, pnames = case
    args = tuple(params) + tuple(data)
    wrt = tuple(range(len(params)))
    v, g = s2sad.value_and_grad(step, wrt=wrt)(*args)
    assert v == pytest.approx(step(*args), rel=1e-12)
    assert [np.shape(x) for x in g] == [np.shape(p) for p in params]
    assert all(np.linalg.norm(x) > 1e-6 for x in g)        # every parameter matters
    check_grads(step, args, wrt=wrt)


def test_mlp_step_is_the_cross_entropy():
    _, step, _, params, (x, t), _ = SMALL[1]
    W1, b1, W2, b2, W3, b3 = params
    z = np.tanh(np.maximum(x @ W1 + b1, 0) @ W2 + b2) @ W3 + b3
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    assert step(*params, x, t) == pytest.approx(-np.mean(np.log(p[t.astype(bool)])), rel=1e-12)


@pytest.mark.parametrize("case", SMALL, ids=IDS)
def test_torch_port_computes_the_step(case):
    torch = pytest.importorskip("torch")
    name, step, port, params, data, _ = case
    ts = [torch.tensor(a, dtype=torch.float64) for a in list(params) + list(data)]
    assert float(port(*ts)) == pytest.approx(step(*params, *data), rel=1e-10)


@pytest.mark.parametrize("case", SMALL, ids=IDS)
def test_jax_version_computes_the_step(case):
    pytest.importorskip("jax")
    name, step, _, params, data, _ = case

    class Args:
        warmup, repeat = 0, 1
    r = bench.run_jax(step, params, data, Args)
    assert r["value"] == pytest.approx(step(*params, *data), rel=1e-5)
    assert len(r["grads"]) == len(params)


def test_numpy_quick_run():
    path = os.pathsep.join([os.path.abspath(_ROOT), os.environ.get("PYTHONPATH", "")])
    env = dict(os.environ, PYTHONPATH=path, JAX_PLATFORMS="cpu")
    out = subprocess.run([sys.executable, _PATH, "--numpy", "--quick"], env=env,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    text = out.stdout
    assert "errors:" not in text, text
    for name in ("attention B2 T8 D16", "MLP N16 D8 H16 C5", "examples/gpu_attention.py B2 T16 D32"):
        row = next(line for line in text.splitlines() if line.startswith(name) and "ms" not in line
                   and "vs" not in line)
        cells = row[len(name):].split()
        assert float(cells[0]) > 0 and float(cells[1]) > 0, row      # primal and s2sad ms
        assert cells[2] == "n/a", row                                 # no graph mode on NumPy
    if "JAX" in text.splitlines()[2]:
        assert "jax.default_matmul_precision('float32')" in text
        # one row per compared method and step (s2sad vs JAX; with PyTorch present, s2sad and
        # JAX vs PyTorch), each with an error for every parameter of its step
        n_params = {"attention": 4, "MLP": 6, "examples/gpu_attention.py": 5}
        compared = [line for line in text.splitlines() if " vs " in line]
        for step in n_params:
            assert any(line.startswith(step) and "s2sad vs" in line for line in compared), text
        errs = []
        for line in compared:
            found = [float(e) for e in re.findall(r"\b[A-Za-z]+\d? (\d\.\de[-+]\d\d)", line)]
            assert len(found) == n_params[line.split()[0]], line
            errs += found
        assert max(errs) < 1e-4, text                      # float32 against the peer's gradients
