"""The ports in benchmarks/ratio.py are right, and s2sad differentiates them right.

No timing here: each case's s2sad gradient is checked against central finite differences
(s2sad.testing.check_grads) and, where the case has one, against its closed form; the peers'
ports (when importable) must compute the primal's value; the script's --quick path runs.
"""
import importlib.util
import json
import math
import os
import sys

import numpy as np
import pytest

import s2sad
from s2sad.testing import check_grads

_PATH = os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks", "ratio.py")


def _load():
    if "s2sad_bench_ratio" in sys.modules:
        return sys.modules["s2sad_bench_ratio"]
    spec = importlib.util.spec_from_file_location("s2sad_bench_ratio", _PATH)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod            # s2sad reads the cases' source through their module
    spec.loader.exec_module(mod)
    return mod


ratio = _load()

# The benchmark's sizes, except where a case is slow to check at them: smaller inputs there.
SMALL = {
    "simple_mlp": lambda r: (r.standard_normal((16, 32)), r.standard_normal((32, 16)),
                             r.standard_normal((16, 7)), r.standard_normal((16, 7))),
    "gp_lml": lambda r: (np.arange(24) * 0.2, r.standard_normal(24), 1.0),
    "turing_broadcast": lambda r: (r.standard_normal(2), r.lognormal(1.5, 0.5, 2_000)),
}


def inputs(name):
    rng = np.random.default_rng(1)
    return SMALL[name](rng) if name in SMALL else ratio.CASES[name][1](rng)


def test_thirteen_cases():
    assert len(ratio.CASES) == 13


@pytest.mark.parametrize("name", list(ratio.CASES))
def test_s2sad_gradient_against_finite_differences(name):
    f, _, wrt = ratio.CASES[name]
    args = inputs(name)
    v, g = s2sad.value_and_grad(f, wrt=wrt)(*args)
    assert v == pytest.approx(f(*args), rel=1e-12)
    assert len(g) == len(wrt)
    for i, gi in zip(wrt, g):
        assert np.shape(gi) == np.shape(args[i])
    check_grads(f, args, wrt=wrt)


def _closed_forms():
    x = np.random.default_rng(2).standard_normal(1000)
    m = np.random.default_rng(3).standard_normal((10, 10))
    dm = -np.cos(np.cos(np.exp(m))) * np.sin(np.exp(m)) * np.exp(m)
    return [
        ("sum_1000", x, np.ones(1000)),
        ("_sum_1000", x, np.ones(1000)),
        ("sum_sin_1000", x, np.cos(x)),
        ("_sum_sin_1000", x, np.cos(x)),
        ("naive_map_sin_cos_exp", m, dm),
        ("map_sin_cos_exp", m, dm),
        ("broadcast_sin_cos_exp", m, dm),
        ("large_single_block", np.array([0.9, 0.99]),
         np.array([0.99 ** 400, 400 * 0.9 * 0.99 ** 399])),
    ]


@pytest.mark.parametrize("name, x, expected", _closed_forms(), ids=[c[0] for c in _closed_forms()])
def test_s2sad_gradient_closed_form(name, x, expected):
    g = s2sad.grad(ratio.CASES[name][0])(x)
    np.testing.assert_allclose(g, expected, rtol=1e-12, atol=1e-14)


def test_kron_view_sum_gradient_is_zero_outside_the_view_and_below_the_diagonal():
    x, y = inputs("kron_view_sum")
    gx, gy = s2sad.grad(ratio.kron_view_sum, wrt=(0, 1))(x, y)
    # sum(kron(A, B)) = sum(A) * sum(B): d/dA = sum(B), d/dB = sum(A)
    A, B = x[:20, :20], np.triu(y)
    expect_x = np.zeros_like(x)
    expect_x[:20, :20] = B.sum()
    np.testing.assert_allclose(gx, expect_x, rtol=1e-12)
    np.testing.assert_allclose(gy, np.triu(np.full_like(y, A.sum())), rtol=1e-12)


def test_gp_lml_is_the_gaussian_log_density():
    """The port's log marginal likelihood is log N(y; 0, K + s I), computed without Cholesky."""
    x, y, s = ratio.case_inputs("gp_lml")
    C = np.exp(-0.5 * (x[:, None] - x[None, :]) ** 2) + s * np.eye(len(x))
    sign, logdet = np.linalg.slogdet(C)
    expect = -0.5 * y @ np.linalg.solve(C, y) - 0.5 * logdet - 0.5 * len(x) * math.log(2 * math.pi)
    assert ratio.gp_lml(x, y, s) == pytest.approx(expect, rel=1e-10)


def test_turing_broadcast_is_the_models_log_density():
    """Against scipy.stats: truncated-normal priors, log-normal likelihood, logistic link."""
    stats = pytest.importorskip("scipy.stats")
    theta, data = inputs("turing_broadcast")
    p = 1 / (1 + np.exp(-theta))
    mu, sigma = 0.1 + 9.9 * p
    prior = stats.truncnorm((0.1 - 1) / 2, (10 - 1) / 2, loc=1, scale=2)
    expect = (prior.logpdf(mu) + prior.logpdf(sigma)
              + stats.lognorm(s=sigma, scale=np.exp(mu)).logpdf(data).sum()
              + np.sum(np.log(9.9 * p * (1 - p))))
    assert ratio.turing_broadcast(theta, data) == pytest.approx(expect, rel=1e-10)


@pytest.mark.parametrize("name", list(ratio.CASES))
def test_autograd_port_agrees(name):
    """The autograd port: the primal's value, s2sad's gradient (skipped without autograd)."""
    pytest.importorskip("autograd")
    f, _, wrt = ratio.CASES[name]
    args = inputs(name)
    m = ratio.Autograd()
    run = m.prepare(name, f, args, wrt)
    if run is None:
        assert name == "naive_map_sin_cos_exp"          # autograd cannot write into an array
        return
    v, g = m.result(run())
    v2, g2 = ratio.S2sad(jit=False).result(s2sad.value_and_grad(f, wrt=wrt)(*args))
    assert v == pytest.approx(v2, rel=1e-10)
    for a, b in zip(g, g2):
        np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-12)


def test_quick_run_writes_json(tmp_path, capsys):
    out = tmp_path / "r.json"
    ratio.main(["--quick", "--cases", "sum_1000,_sum_1000", "--methods", "s2sad",
                "--json", str(out), "--markdown"])
    text = capsys.readouterr().out
    assert "| sum_1000 |" in text and "| _sum_1000 |" in text
    data = json.loads(out.read_text())
    assert data["methods"] == ["primal", "s2sad"]
    for case in ("sum_1000", "_sum_1000"):
        cell = data["cases"][case]["s2sad"]
        assert cell["status"] == "ok" and cell["match"] is True
        assert cell["best_s"] > 0 and cell["first_s"] > 0
