"""Issue 12: np.linalg.norm in derivatives compiled with jit=True.  The 2-norm of a real 1-D array,
the Frobenius norm of a real 2-D one (ord and axis None) and the 2-norms along one axis, keepdims
(rules/jit_reductions.norm) compile (rules/jit.py: _adj.norm, _adj.norm_tangent) and give Python
mode's numbers; other forms (another ord, a complex array) fall back to Python with a
JitFallbackWarning and Python mode's numbers."""
import warnings

import numpy as np
import pytest

import s2sad
from s2sad.errors import JitFallbackWarning

from .compare import same_as_python

pytest.importorskip("numba")

_R = np.random.default_rng(1212)


def scaled_norm(x, s):
    return s * np.linalg.norm(x) + np.sum(x * x)


def norm_ratio(x):
    return np.linalg.norm(np.sin(x)) / (1.0 + np.linalg.norm(x))


def norm_one(x):
    return np.linalg.norm(x, 1) * 2.0


def plain_norm(x):
    return np.linalg.norm(x)


def row_norms(x):                   # one axis, keepdims (rules/jit_reductions.norm)
    return np.sum(np.linalg.norm(x, axis=1)) + \
        np.sum(np.linalg.norm(x, axis=0, keepdims=True) * x) + np.linalg.norm(x)


def normalised(x):
    return np.sum(np.sin(x / np.linalg.norm(x, axis=-1, keepdims=True)))


def vector_axis(v):
    return np.linalg.norm(v, axis=0) ** 2


_CASES = {
    "axis": (row_norms, (_R.standard_normal((3, 4)),), (0,)),
    "axis_keepdims_3d": (normalised, (_R.standard_normal((2, 3, 4)),), (0,)),
    "axis_of_a_vector": (vector_axis, (_R.standard_normal(5),), (0,)),
    "vector": (scaled_norm, (_R.standard_normal(7), 1.3), (0, 1)),
    "matrix": (scaled_norm, (_R.standard_normal((3, 4)), 0.7), (0, 1)),
    "fortran": (norm_ratio, (np.asfortranarray(_R.standard_normal((4, 3))),), (0,)),
    "ratio": (norm_ratio, (_R.standard_normal(5),), (0,)),
}


@pytest.mark.parametrize("case", sorted(_CASES))
def test_grad_compiles_and_matches_python(case):
    f, args, wrt = _CASES[case]
    same_as_python(f, args, wrt)            # no fallback; 1e-12 to Python mode; check_grads


@pytest.mark.parametrize("case", sorted(_CASES))
def test_jvp_compiles_and_matches_python(case):
    f, args, wrt = _CASES[case]
    tangents = tuple(_R.standard_normal(np.shape(a)) if i in wrt else None
                     for i, a in enumerate(args))
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        vj, tj = s2sad.jvp(f, args, tangents, jit=True)
    vp, tp = s2sad.jvp(f, args, tangents, jit=False)
    assert vj == pytest.approx(vp, rel=1e-12)
    assert tj == pytest.approx(tp, rel=1e-12, abs=1e-12)
    eps = 1e-6
    plus = [a if t is None else a + eps * t for a, t in zip(args, tangents)]
    minus = [a if t is None else a - eps * t for a, t in zip(args, tangents)]
    assert tj == pytest.approx((f(*plus) - f(*minus)) / (2 * eps), rel=1e-6, abs=1e-7)


@pytest.mark.parametrize("shape", [(4,), (2, 3)])
def test_zero_array_gives_zeros_as_python(shape):
    x = np.zeros(shape)
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        gj = s2sad.grad(plain_norm, jit=True)(x)
        vj, tj = s2sad.jvp(plain_norm, (x,), (np.ones(shape),), jit=True)
    gp = s2sad.grad(plain_norm, jit=False)(x)
    vp, tp = s2sad.jvp(plain_norm, (x,), (np.ones(shape),), jit=False)
    np.testing.assert_array_equal(gj, np.zeros(shape))
    np.testing.assert_array_equal(gj, gp)
    assert (vj, tj) == (0.0, 0.0) == (vp, tp)


def test_a_zero_row_gives_zeros_as_python():
    x = np.array([[0.0, 0.0, 0.0, 0.0], [1.0, 2.0, 0.0, 1.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        gj = s2sad.grad(row_norms, jit=True)(x)
    np.testing.assert_allclose(gj, s2sad.grad(row_norms)(x), rtol=1e-12)
    assert np.all(np.isfinite(gj))


@pytest.mark.parametrize("f, x", [
    (norm_one, np.array([3.0, -4.0, 0.5])),                    # ord=1: no compiled body
    (plain_norm, np.array([3.0 + 1.0j, 4.0, -2.0j])),          # complex: no compiled body
], ids=["ord1", "complex"])
def test_unsupported_forms_fall_back_with_python_numbers(f, x):
    t = np.linspace(0.5, 1.5, x.size).astype(x.dtype)
    with pytest.warns(JitFallbackWarning, match="could not compile the derivative of"):
        gj = s2sad.grad(f, jit=True)(x)
    with pytest.warns(JitFallbackWarning, match="could not compile the derivative of"):
        vj, tj = s2sad.jvp(f, (x,), (t,), jit=True)
    gp = s2sad.grad(f, jit=False)(x)
    vp, tp = s2sad.jvp(f, (x,), (t,), jit=False)
    np.testing.assert_allclose(gj, gp, rtol=1e-12, atol=1e-12)
    assert (vj, tj) == pytest.approx((vp, tp), rel=1e-12)
    if f is norm_one:
        np.testing.assert_array_equal(gj, 2.0 * np.sign(x))
    else:
        np.testing.assert_allclose(gj, x / np.linalg.norm(x), rtol=1e-12)
