"""Every example in examples/ runs, with its small setting (S2SAD_EXAMPLES_QUICK=1), and prints
what it promises: an accuracy above a threshold, fitted parameters near the truth, a loss that went
down, 'gradient check passed'; and the PNG plot where it makes one (issue 16, point 3).

An example with a test of its own (it needs a cluster, an extra...) starts with the line
``# s2sad-example: own-test`` in its first lines and is skipped here; one that only runs on a GPU
is marked ``# s2sad-example: gpu`` and skipped without CuPy.  Every other example needs an entry
in EXPECT below.
"""
import importlib.util
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(ROOT, "examples")


def _markers(path):
    with open(path, encoding="utf-8") as f:
        head = [next(f, "") for _ in range(5)]
    return {m.group(1) for line in head for m in [re.match(r"#\s*s2sad-example:\s*([\w-]+)", line)]
            if m}


ALL = sorted(f for f in os.listdir(EXAMPLES) if f.endswith(".py"))
OWN_TEST = [f for f in ALL if "own-test" in _markers(os.path.join(EXAMPLES, f))]
RUN = [f for f in ALL if f not in OWN_TEST]


def numbers(pattern, out):
    """The floats of the first line matching ``pattern`` (a regex with groups)."""
    m = re.search(pattern, out, re.M)
    assert m, f"no line matching {pattern!r} in:\n{out}"
    return [float(g) for g in m.groups()]


def loss_went_down(out, pattern=r"^loss:? (\S+) -> (\S+)"):
    first, last = numbers(pattern, out)
    assert last < first, (first, last)


def floats_of_row(name, out):
    m = re.search(rf"^{name}\s+(.*)$", out, re.M)
    assert m, f"no row {name!r} in:\n{out}"
    return [float(v) for v in m.group(1).split()]


def _quickstart(out):
    assert "matches the hand-written gradient: True" in out


def _logistic(out):
    assert "gradient check passed" in out
    (acc,) = numbers(r"^test accuracy: ([\d.]+)", out)
    assert acc > 0.75
    (err,) = numbers(r"^max \|fitted - true\| = ([\d.]+)", out)
    assert err < 0.6


def _digits(out):
    assert "gradient check passed" in out
    loss_went_down(out)
    (acc,) = numbers(r"^test accuracy: ([\d.]+)", out)
    assert acc > 0.85          # the full setting reaches about 0.98


def _gp(out):
    assert "gradient check passed" in out
    loss_went_down(out, r"^-log marginal likelihood: (\S+) -> (\S+)")
    assert "agrees with scikit-learn's GaussianProcessRegressor" in out


def _ode(out):
    assert "gradient check passed" in out
    loss_went_down(out)
    (err,) = numbers(r"^max \|fitted - true\| = ([\d.]+)", out)
    assert err < 0.3


def _hmc(out):
    (rate,) = numbers(r"^acceptance rate: ([\d.]+)", out)
    assert rate > 0.5
    for j in range(3):
        true, mean, sd = numbers(rf"^\s+w\[{j}\]\s+(\S+)\s+(\S+) \+- (\S+)", out)
        assert abs(mean - true) < 4 * sd + 0.2, (j, true, mean, sd)


def _lotka(out):
    true, fitted = floats_of_row("true", out), floats_of_row("fitted", out)
    for t, f in zip(true, fitted):
        assert abs(f - t) <= 0.1 * abs(t), (true, fitted)
    loss_went_down(out)


def _attention(out):
    loss_went_down(out, r"^loss (\S+) -> (\S+)")


# example -> (check of its output, the PNG it saves or None)
EXPECT = {
    "quickstart.py": (_quickstart, None),
    "logistic_regression.py": (_logistic, "logistic_regression.png"),
    "digits_mlp.py": (_digits, "digits_mlp.png"),
    "gp_hyperparameters.py": (_gp, "gp_hyperparameters.png"),
    "ode_rk4_fit.py": (_ode, "ode_rk4_fit.png"),
    "bayesian_logistic_hmc.py": (_hmc, None),
    "lotka_volterra_fit.py": (_lotka, None),
    "gpu_attention.py": (_attention, None),       # on NumPy arrays without CuPy
}


# modules of the test extra an example needs (its data set, its cross-check)
NEEDS = {"digits_mlp.py": ["sklearn"], "gp_hyperparameters.py": ["sklearn"]}


def run_example(name, cwd, extra_path=()):
    env = dict(os.environ, S2SAD_EXAMPLES_QUICK="1", MPLBACKEND="Agg",
               PYTHONPATH=os.pathsep.join([*extra_path, ROOT, os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, os.path.join(EXAMPLES, name)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"{name} exited with {proc.returncode}:\n{out}"
    return proc.stdout


def test_every_example_is_checked():
    missing = [f for f in RUN if f not in EXPECT]
    assert not missing, (f"examples without an entry in EXPECT of {__file__}: {missing} (or mark "
                         f"one with '# s2sad-example: own-test' if it has its own test)")
    assert not [f for f in EXPECT if f not in ALL], "EXPECT names an example that is gone"


# run without matplotlib (it is hidden from the example): it still runs and says why there is no
# plot; the other examples' plots are checked
WITHOUT_MATPLOTLIB = {"ode_rk4_fit.py"}


@pytest.mark.parametrize("name", RUN)
def test_example(name, tmp_path):
    if "gpu" in _markers(os.path.join(EXAMPLES, name)):
        cupy = pytest.importorskip("cupy")
        if not cupy.is_available():
            pytest.skip("no CUDA GPU")
    if name not in EXPECT:
        pytest.fail(f"{name} has no entry in EXPECT")
    for module in NEEDS.get(name, ()):
        pytest.importorskip(module)
    check, png = EXPECT[name]
    hide = []
    if name in WITHOUT_MATPLOTLIB:
        hide = [tmp_path / "hide"]
        (hide[0] / "matplotlib").mkdir(parents=True)
        (hide[0] / "matplotlib" / "__init__.py").write_text("raise ImportError('hidden')\n")
    out = run_example(name, tmp_path, extra_path=[str(h) for h in hide])
    check(out)
    if png is None:
        return
    if hide or importlib.util.find_spec("matplotlib") is None:
        assert "matplotlib is not installed: no plot (pip install matplotlib)" in out, out
        assert not (tmp_path / png).exists()
    else:
        with open(tmp_path / png, "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n"
