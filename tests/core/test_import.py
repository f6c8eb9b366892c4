"""Point 1 of issue 2: importing s2sad (and its testing and CLI modules) does not import numba
or cupy; the package metadata is in place."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_python(code):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=120)


@pytest.mark.parametrize("module", ["s2sad", "s2sad.testing", "s2sad.cli", "s2sad.diskcache"])
def test_import_does_not_import_numba_or_cupy(module):
    # (nor SciPy; the disk cache's platformdirs and filelock are imported on first use only, and
    # so are gast (parsing) and logging (S2SAD_LOG): issue 13's import time)
    r = run_python(f"import sys, {module}\n"
                   "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
                   "('numba', 'cupy', 'scipy', 'platformdirs', 'filelock', 'gast', 'logging'))\n"
                   "print(bad)\n")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


def test_cpu_gradient_does_not_import_cupy(tmp_path):
    script = tmp_path / "user_script.py"
    script.write_text("import sys\nimport numpy as np\nimport s2sad\n\n"
                      "def f(x):\n    return np.sum(np.sin(x) * x)\n\n"
                      "g = s2sad.grad(f)(np.ones(3))\n"
                      "assert np.allclose(g, np.cos(1.0) + np.sin(1.0))\n"
                      "print(sorted(m for m in sys.modules if m.split('.')[0] == 'cupy'))\n")
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


def test_version_and_public_names():
    import s2sad
    assert isinstance(s2sad.__version__, str)
    for name in ("differentiate", "grad", "value_and_grad", "vjp", "S2SADError"):
        assert hasattr(s2sad, name)
    import s2sad.testing
    assert callable(s2sad.testing.check_grads) and s2sad.testing.check_grads.__doc__


def test_pyproject_declares_the_console_script():
    try:
        import tomllib
    except ImportError:                          # Python 3.10
        pytest.skip("tomllib needs Python 3.11")
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as fh:
        meta = tomllib.load(fh)
    assert meta["project"]["name"] == "s2sad"
    assert meta["project"]["scripts"]["s2sad"] == "s2sad.cli:main"
    deps = " ".join(meta["project"]["dependencies"])
    for d in ("numpy", "gast"):
        assert d in deps
    # the lean install: numba comes with the jit/gpu extras, never by default
    assert "numba" not in deps
    extras = meta["project"]["optional-dependencies"]
    assert any(d.startswith("numba") for d in extras["jit"])
    assert any(d.startswith("numba-cuda") for d in extras["gpu"])
