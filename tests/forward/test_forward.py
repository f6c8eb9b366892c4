"""Forward mode: jvp against finite differences and against reverse mode (the dot-product test
<J v, w> = <v, J^T w>), Jacobians, the generated source."""
import numpy as np
import pytest

import s2sad
from s2sad import transforms as tr

import programs as P
from fwdcheck import check_consistency, check_forward


def R(*shape, seed=0):
    r = np.random.default_rng(seed).standard_normal(shape)
    return float(r) if shape == () else r


CASES = [
    ("poly", P.poly, lambda: (0.7,), None),
    ("branches+", P.branches, lambda: (R(4), 0.5), 0),
    ("branches-", P.branches, lambda: (R(4), -0.5), (0, 1)),
    ("loop_sum", P.loop_sum, lambda: (R(3), 4), 0),
    ("while_halving", P.while_halving, lambda: (R(3) * 2,), None),
    ("calls_helper", P.calls_helper, lambda: (R(3), R(3, seed=1)), None),
    ("recursion", P.recursive_pow, lambda: (R(2), 3), 0),
    ("numpy_mix", P.numpy_mix, lambda: (R(3, 4), R(4, seed=1), R(3, seed=2)), None),
    ("broadcasting", P.broadcasting, lambda: (R(3), R(4, seed=1)), None),
    ("containers", P.containers, lambda: (R(3), R(3, seed=1)), None),
    ("inplace", P.inplace, lambda: (R(5),), None),
    ("dynamic", P.use_dynamic, lambda: (0.3,), None),
    ("closure", P.closure_user, lambda: (R(3), 0.7), None),
    ("concat_permute", P.concat_permute, lambda: (R(2, 3), R(2, 3, seed=1)), None),
    ("scalar_math", P.scalar_math, lambda: (0.6, -0.4), None),
    ("quad", P.quad, lambda: (R(4), R(4, 4, seed=1)), None),
    ("rosen", P.rosen, lambda: (R(5),), None),
    ("logistic", P.logistic, lambda: (R(3), R(6, 3, seed=1), np.sign(R(6, seed=2))), (0, 1)),
    ("looped", P.looped, lambda: (R(3) * 0.3,), None),
    ("looped_calls", P.looped_calls, lambda: (R(3), R(3, seed=1)), None),
]


@pytest.mark.parametrize("name, f, make, wrt", CASES, ids=[c[0] for c in CASES])
def test_jvp_against_finite_differences_and_reverse(name, f, make, wrt):
    check_forward(f, make(), wrt)


@pytest.mark.parametrize("name, f, make, wrt", CASES, ids=[c[0] for c in CASES])
def test_forward_reverse_dot_product(name, f, make, wrt):
    check_consistency(f, make(), wrt, seed=3)


def test_jvp_value_and_tangent_exact():
    value, t = tr.jvp(P.poly, (2.0,), (1.0,))
    assert value == pytest.approx(21.0)
    assert t == pytest.approx(9.0 * 4.0 - 2.0)


def test_jvp_does_not_write_user_tangents():
    x = R(5)
    v = R(5, seed=4)
    v0 = v.copy()
    tr.jvp(P.inplace, (x,), (v,))
    np.testing.assert_array_equal(v, v0)


def test_jvp_inactive_output_gives_zero_tangent():
    value, t = tr.jvp(P.ignores, (R(3), R(3)), (None, R(3)))
    assert isinstance(t, np.ndarray) and t.shape == (3,) and not t.any()


def test_jacobians_agree():
    x, y = R(3), R(4, seed=1)
    jf = tr.jacfwd(P.broadcasting, wrt=0)(x, y)
    jr = tr.jacrev(P.broadcasting, wrt=0)(x, y)
    assert jf.shape == (3, 4, 3)
    np.testing.assert_allclose(jf, jr, rtol=1e-12, atol=1e-12)
    expected = np.zeros((3, 4, 3))
    for i in range(3):
        expected[i, :, i] = y + 1.0
    np.testing.assert_allclose(jf, expected, rtol=1e-12)
    ja = tr.jacobian(P.broadcasting, wrt=(0, 1))(x, y)
    assert isinstance(ja, tuple) and ja[1].shape == (3, 4, 4)
    np.testing.assert_allclose(ja[0], jf, rtol=1e-12)


def test_jacobian_scalar_output_is_gradient():
    x = R(4)
    A = R(4, 4, seed=1)
    np.testing.assert_allclose(tr.jacobian(P.quad)(x, A), (A + A.T) @ x, rtol=1e-12)
    np.testing.assert_allclose(tr.jacfwd(P.quad)(x, A), (A + A.T) @ x, rtol=1e-12)


def test_jacrev_with_loops_rebuilds_tape():
    x = R(3)
    np.testing.assert_allclose(tr.jacrev(P.while_halving)(x), tr.jacfwd(P.while_halving)(x),
                               rtol=1e-10, atol=1e-12)


def test_forward_source_names_and_comments():
    src = tr.forward_source(P.calls_helper, 0)
    assert "def calls_helper__jvp(x, y, _d_x):" in src
    assert "helper__jvp(" in src
    body = [l for l in src.splitlines() if l.startswith("    ")]
    assert body and all("# programs.py:" in l for l in body), src
    assert "_d_z" in src and "_d_w" in src


def test_forward_source_only_active_tangents():
    src = tr.forward_source(P.branches, 0, R(3), 0.5)
    assert "_d_a" not in src
    assert "_d_x" in src


def test_forward_cache_builds_once():
    from s2sad.cache import CACHE
    x = R(3)
    tr.jvp(P.poly, (x,), (x,))
    n = CACHE.builds
    for _ in range(3):
        tr.jvp(P.poly, (x * 2,), (x,))
    assert CACHE.builds == n


def test_cli_dump_forward(capsys):
    import os
    from s2sad import cli
    path = os.path.join(os.path.dirname(__file__), "programs.py")
    rc = cli.main(["dump", f"{path}:poly", "--mode", "forward"])
    out = capsys.readouterr().out
    assert rc == 0 and "def poly__jvp(x, _d_x):" in out
