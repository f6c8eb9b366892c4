"""scipy.special.binom and poch: derivatives through gamma/digamma (both were refused: no rule),
including where SciPy returns 0 at a pole of a denominator Gamma (the analytic function's
derivative is not 0 there) and the refusal where poch's derivative in m does not exist."""
import numpy as np
import pytest
import scipy.special as sp

import s2sad
from s2sad.errors import UnsupportedSyntaxError


def _num(f, a, b, i, eps=1e-6):
    return (f(a + eps, b) - f(a - eps, b)) / (2 * eps) if i == 0 else \
        (f(a, b + eps) - f(a, b - eps)) / (2 * eps)


@pytest.mark.parametrize("n, k", [(2.0, 3.0), (1.0, 4.0), (3.0, -1.0), (3.0, -2.0), (2.5, -1.0),
                                  (5.0, 2.0), (-2.5, 3.0)])
@pytest.mark.parametrize("mode", ["rev", "fwd"])
def test_binom_at_its_zeros_and_elsewhere(n, k, mode):
    f = lambda n, k: sp.binom(n, k)      # noqa: E731
    if mode == "rev":
        got = s2sad.grad(f, (0, 1))(n, k)
    else:
        got = (s2sad.jvp(f, (n, k), (1.0, 0.0))[1], s2sad.jvp(f, (n, k), (0.0, 1.0))[1])
    np.testing.assert_allclose(got, [_num(sp.binom, n, k, i) for i in (0, 1)], rtol=1e-7,
                               atol=1e-9)
    if (n, k) == (2.0, 3.0):             # binom(n, 3) = n(n-1)(n-2)/6: 1/3 at n = 2, not 0
        assert abs(got[0] - 1 / 3) < 1e-12


@pytest.mark.parametrize("z, m", [(-3.0, 2.0), (-4.0, 3.0), (-2.0, -1.0), (-3.0, 2.5),
                                  (-2.0, 0.5), (0.0, 1.5), (-1.5, 2.0), (2.0, 1.3)])
def test_poch_in_z(z, m):
    g = s2sad.grad(lambda z, m: sp.poch(z, m))(z, m)
    assert abs(g - _num(sp.poch, z, m, 0)) < 1e-7 * max(1, abs(g))
    t = s2sad.jvp(lambda z: sp.poch(z, m), (z,), (1.0,))[1]
    assert abs(t - g) < 1e-12 * max(1, abs(g))


def test_poch_in_m():
    f = lambda z, m: sp.poch(z, m)       # noqa: E731
    assert s2sad.grad(f, 1)(-3.0, 2.5) == 0.0          # poch(-3, m) = 0 near 2.5
    assert abs(s2sad.grad(f, 1)(1.5, 2.2) - _num(sp.poch, 1.5, 2.2, 1)) < 1e-7
    with pytest.raises(UnsupportedSyntaxError, match="poch.*in m does not exist") as e:
        s2sad.grad(f, 1)(-3.0, 2.0)                    # poch jumps there: no derivative
    assert "test_binom_poch.py" in str(e.value)


def test_float32():
    n = np.array([1.5, 3.2, 4.1], np.float32)
    k = np.array([0.5, 1.2, 2.0], np.float32)
    for fn in (sp.binom, sp.poch):
        f = lambda a, b: np.sum(fn(a, b))                # noqa: E731
        ga, gb = s2sad.grad(f, (0, 1))(n, k)
        assert ga.dtype == gb.dtype == np.float32
        g64 = s2sad.grad(f, (0, 1))(n.astype(float), k.astype(float))
        np.testing.assert_allclose(ga, g64[0], rtol=1e-4)
        assert s2sad.jvp(f, (n, k), (n, k))[1].dtype == np.float32
