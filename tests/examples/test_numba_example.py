"""examples/particles_numba.py (issue 12 item 3: gradients of Numba code) runs with small settings,
its derivative compiled (the default, without a fallback) and as Python (``--python``), and its
gradient agrees with finite differences and with the closed-form derivative of one step."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("numba")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(ROOT, "examples", "particles_numba.py")


def test_marker_on_the_second_line():
    with open(EXAMPLE) as fh:
        assert fh.read().splitlines()[1] == "# s2sad-example: own-test"


@pytest.mark.parametrize("mode", [[], ["--python"]], ids=["compiled", "python"])
def test_example_runs_and_checks_its_gradient(tmp_path, mode):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               S2SAD_CACHE_DIR=str(tmp_path))
    r = subprocess.run([sys.executable, EXAMPLE, "--particles", "3", "--steps", "12",
                        "--repeat", "1"] + mode,
                       capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    assert "JitFallbackWarning" not in r.stderr, r.stderr     # (compiled: no fallback)
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout
    assert "3 particles, 12 steps: loss = " in out
    assert re.search(r"^check: ok \(max relative error ", out, re.M), out
    errors = [float(e) for e in re.findall(r"rel\. error (\S+)", out)]
    assert len(errors) == 3 and max(errors) < 1e-5, out
    ad = {m[0]: float(m[1]) for m in re.findall(r"^d loss / d (k|c)\s+= (\S+)", out, re.M)}
    assert set(ad) == {"k", "c"} and ad["k"] != 0.0 and ad["c"] != 0.0
    what = "Python derivative" if mode else "numba-compiled derivative"
    assert re.search(rf"^time: primal \(njit\) \S+ ms, value and gradient \({what}\)", out,
                     re.M), out


def test_one_step_against_its_closed_form():
    sys.path.insert(0, os.path.join(ROOT, "examples"))
    try:
        import particles_numba as pn
    finally:
        sys.path.pop(0)
    import s2sad
    rng = np.random.default_rng(1)
    x = np.arange(1.0, 4.0) + 0.1 * rng.standard_normal(3)
    v = 0.5 * rng.standard_normal(3)
    k, c, dt = 2.0, 0.3, 0.01

    def last_position(x, v, k, c):
        xn, vn = pn.step(x, v, k, c, dt)
        return xn[2]
    # xn[2] = x2 + dt * (v2 + dt * (-k (x2 - x1 - 1) - c v2 |v2|))
    gk, gc = s2sad.grad(last_position, wrt=(2, 3))(x, v, k, c)
    assert np.isclose(gk, -dt * dt * (x[2] - x[1] - 1.0), rtol=1e-13)
    assert np.isclose(gc, -dt * dt * v[2] * abs(v[2]), rtol=1e-13)
    gv = s2sad.grad(last_position, wrt=1)(x, v, k, c)
    assert np.allclose(gv, [0.0, 0.0, dt * (1.0 - dt * 2 * c * abs(v[2]))], rtol=1e-13, atol=0)
