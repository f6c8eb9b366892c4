"""JAX's conventions: has_aux=True on grad/value_and_grad (functions and @differentiate), argnums
as another name for wrt, and S2SAD_LOG=debug logging of cache and classification decisions."""
import logging
import os
import subprocess
import sys

import numpy as np
import pytest

import s2sad
from s2sad.errors import ArgumentError, WrtError
from s2sad.testing import check_grads

RNG = np.random.default_rng(16)
W = RNG.standard_normal((3, 4))
X = RNG.standard_normal(4)


def loss_aux(W, x):
    h = np.tanh(W @ x)
    loss = np.sum(h * h) + 0.1 * np.sum(W * W)
    return loss, {"h": h, "norm": np.sqrt(np.sum(h * h)), "count": 3}


def loss_only(W, x):
    return loss_aux(W, x)[0]


def _expected_aux(W, x):
    h = np.tanh(W @ x)
    return h, np.sqrt(np.sum(h * h))


def test_loss_only_matches_finite_differences():
    check_grads(loss_only, (W, X), wrt=(0, 1))


def test_value_and_grad_has_aux():
    (v, aux), g = s2sad.value_and_grad(loss_aux, has_aux=True)(W, X)
    h, norm = _expected_aux(W, X)
    assert v == pytest.approx(loss_only(W, X), rel=1e-14)
    np.testing.assert_allclose(aux["h"], h, rtol=1e-14)
    assert aux["norm"] == pytest.approx(norm) and aux["count"] == 3
    # aux (which shares h with the value) adds nothing to the gradient
    np.testing.assert_allclose(g, s2sad.grad(loss_only)(W, X), rtol=1e-12)
    assert g.shape == W.shape


def test_grad_has_aux_returns_grad_then_aux():
    (gW, gx), aux = s2sad.grad(loss_aux, wrt=(0, 1), has_aux=True)(W, X)
    eW, ex = s2sad.grad(loss_only, wrt=(0, 1))(W, X)
    np.testing.assert_allclose(gW, eW, rtol=1e-12)
    np.testing.assert_allclose(gx, ex, rtol=1e-12)
    np.testing.assert_allclose(aux["h"], _expected_aux(W, X)[0], rtol=1e-14)


def test_aux_carries_no_derivative():
    """The value is a function of the aux array, and aux is returned: seeding aux with anything
    but zero would change the gradient (d/dx sum(x**2) = 2x, not 2x + 1)."""
    def f(x):
        y = x * x
        return np.sum(y), y
    x = np.array([0.5, -1.5, 2.0])
    g, aux = s2sad.grad(f, has_aux=True)(x)
    np.testing.assert_allclose(g, 2 * x, rtol=1e-14)
    np.testing.assert_allclose(aux, x * x, rtol=1e-14)


def test_differentiate_has_aux_and_argnums():
    @s2sad.differentiate(has_aux=True, argnums=1)
    def k(W, x):
        z = W @ x
        return np.sum(np.sin(z)), z

    assert k(W, X)[0] == pytest.approx(np.sum(np.sin(W @ X)))      # still the plain function
    g, z = k.grad(W, X)
    np.testing.assert_allclose(g, W.T @ np.cos(W @ X), rtol=1e-12)
    np.testing.assert_allclose(z, W @ X, rtol=1e-14)
    (v, z2), g2 = k.value_and_grad(W, X)
    assert v == pytest.approx(np.sum(np.sin(W @ X)), rel=1e-14)
    np.testing.assert_allclose(g2, g, rtol=0)


def test_method_has_aux():
    class Model:
        def __init__(self, scale):
            self.scale = scale

        @s2sad.differentiate(has_aux=True)
        def loss(self, w):
            r = self.scale * w
            return np.sum(r * r), r

    m = Model(3.0)
    w = np.array([1.0, -2.0])
    g, r = m.loss.grad(w)
    np.testing.assert_allclose(g, 18.0 * w, rtol=1e-14)
    np.testing.assert_allclose(r, 3.0 * w)


def test_argnums_is_wrt():
    a = s2sad.grad(loss_only, argnums=(1, 0))(W, X)
    b = s2sad.grad(loss_only, wrt=(1, 0))(W, X)
    assert a[0].shape == X.shape and a[1].shape == W.shape
    for p, q in zip(a, b):
        np.testing.assert_allclose(p, q, rtol=0)
    v, g = s2sad.value_and_grad(loss_only, argnums="x")(W, X)
    np.testing.assert_allclose(g, b[0], rtol=0)


def test_wrt_and_argnums_both_refused():
    with pytest.raises(WrtError) as e:
        s2sad.grad(loss_only, wrt=0, argnums=0)
    msg = str(e.value)
    assert "wrt=0 and argnums=0 both given: argnums is another name for wrt" in msg
    assert "test_jax_conventions.py" in msg and msg.endswith("Fix: give only one of them")
    with pytest.raises(WrtError, match="both given"):
        s2sad.value_and_grad(loss_only, 1, argnums=1)
    with pytest.raises(WrtError, match="both given"):
        s2sad.differentiate(wrt=1, argnums=1)


def test_has_aux_needs_a_pair():
    with pytest.raises(ArgumentError) as e:
        s2sad.grad(loss_only, has_aux=True)(W, X)
    msg = str(e.value)
    assert "has_aux=True, but loss_only returned an array of dtype float64, not a pair " \
           "(value, aux)" in msg
    assert f"test_jax_conventions.py:{loss_only.__code__.co_firstlineno}: " in msg
    assert "\nFix: return (value, aux)" in msg

    def three(x):
        return np.sum(x), x, x
    with pytest.raises(ArgumentError, match=r"three returned a tuple of 3, not a pair"):
        s2sad.value_and_grad(three, has_aux=True)(X)


def test_has_aux_value_must_be_scalar():
    def f(x):
        return x * 2.0, None
    with pytest.raises(s2sad.NonScalarOutputError, match="returned an array of shape \\(4,\\)"):
        s2sad.grad(f, has_aux=True)(X)


# -- S2SAD_LOG -------------------------------------------------------------------------------------
def _logged(caplog, f, *args):
    caplog.set_level(logging.DEBUG, logger="s2sad")
    caplog.clear()
    s2sad.grad(f)(*args)
    return [r.getMessage() for r in caplog.records if r.name == "s2sad"]


def test_debug_log_tells_cache_and_classification(caplog):
    def fresh(x):                       # a new code object: not built before in this process
        return np.sum(np.tanh(x) * 3.0)
    msgs = _logged(caplog, fresh, X)
    assert any(m.startswith("cache miss, building: reverse derivative of ") and
               "fresh (" in m and "wrt mask 1" in m for m in msgs), msgs
    assert any(m.startswith("built ") and "fresh" in m and "its call sites:" in m for m in msgs)
    assert any("np.tanh: primitive (rule numpy.tanh)" in m for m in msgs), msgs
    assert any("np.sum: primitive" in m for m in msgs)
    # a second grad(f) object: the per-function memo is new, the cache has the derivative
    s2sad.api._SPECS.clear()
    msgs = _logged(caplog, fresh, X)
    assert any(m.startswith("cache hit: reverse derivative of ") for m in msgs), msgs
    assert not any(m.startswith("cache miss") for m in msgs)


def test_log_is_quiet_by_default(caplog):
    caplog.set_level(logging.WARNING, logger="s2sad")

    def quiet(x):
        return np.sum(x * x)
    s2sad.grad(quiet)(X)
    assert [r for r in caplog.records if r.name == "s2sad"] == []


def test_S2SAD_LOG_environment_variable(tmp_path):
    script = tmp_path / "logged.py"
    script.write_text("import numpy as np, s2sad\n"
                      "def f(x):\n"
                      "    return np.sum(np.sin(x))\n"
                      "print(s2sad.grad(f)(np.ones(2)))\n")
    env = dict(os.environ, S2SAD_LOG="debug")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    assert "s2sad DEBUG: cache miss, building: reverse derivative of f (" in p.stderr
    assert "logged.py:3  np.sin: primitive (rule numpy.sin)" in p.stderr
    assert "0.5403023" in p.stdout
    env.pop("S2SAD_LOG")
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env,
                       timeout=300)
    assert p.returncode == 0 and "s2sad" not in p.stderr
