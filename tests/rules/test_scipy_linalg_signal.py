"""Issue 15 part 4, SciPy: scipy.linalg logm, sqrtm, solve_sylvester, solve_continuous_lyapunov,
solve_banded (expm had its rule already), and scipy.signal convolve, correlate, fftconvolve,
oaconvolve, convolve2d, correlate2d in modes full/same/valid.  Each rule's adjoint and tangent
templates against central differences (float64, complex, float32 in -> float32 out), end to end
through ``s2sad.testing.check_grads`` in both modes, and the refusals."""
import numpy as np
import pytest

sl = pytest.importorskip("scipy.linalg")
ss = pytest.importorskip("scipy.signal")

import s2sad  # noqa: E402
from s2sad.errors import S2SADError  # noqa: E402
from s2sad.testing import check_grads  # noqa: E402
from cases_numpy import Arr, C, Fn  # noqa: E402
from rulecheck import rule_params, run_rule, run_tangent, tangent_params  # noqa: E402

CASES = []
add = CASES.append


def spd(x):
    return x @ np.conj(x.T) + 3 * np.eye(x.shape[-1])


def shifted(k):
    return lambda x: x + k * np.eye(x.shape[-1])


def banded(rng, cplx=False):
    """The band of a diagonally dominant (l, u) = (2, 1) matrix of order 6."""
    ab = rng.uniform(-1, 1, (4, 6))
    ab[1] += 4
    if cplx:
        ab = ab + 1j * rng.uniform(-1, 1, (4, 6))
    return ab


add(C(sl.logm, Arr(3, 3, f=spd), id="spd", cplx=True, rtol=1e-5))
add(C(sl.logm, Arr(3, 3, f=shifted(3)), id="general", cplx=True, rtol=1e-5))
add(C(sl.sqrtm, Arr(3, 3, f=spd), id="spd", cplx=True, rtol=1e-5))
add(C(sl.sqrtm, Arr(4, 4, f=shifted(3)), id="general", cplx=True, rtol=1e-5))
add(C(sl.solve_sylvester, Arr(3, 3, f=shifted(3)), Arr(2, 2, f=shifted(2)), Arr(3, 2), id="",
      cplx=True))
add(C(sl.solve_continuous_lyapunov, Arr(3, 3, f=shifted(-3)), Arr(3, 3), id="", cplx=True))
add(C(sl.solve_banded, (2, 1), Fn(banded), Arr(6), id="vector", cplx=True))
add(C(sl.solve_banded, (2, 1), Fn(banded), Arr(6, 2), id="matrix", cplx=True))
for mode in ("full", "same", "valid"):
    for f in (ss.convolve, ss.correlate, ss.fftconvolve, ss.oaconvolve):
        add(C(f, Arr(5, 6), Arr(2, 3), mode, id=mode, cplx=True))
        add(C(f, Arr(7), Arr(4), mode, id=mode + "-1d", cplx=True))
        add(C(f, Arr(2, 3), Arr(4, 5), mode, id=mode + "-in2-larger", cplx=True))
    for f in (ss.convolve2d, ss.correlate2d):
        add(C(f, Arr(5, 6), Arr(2, 3), mode, id=mode, cplx=True))
        add(C(f, Arr(6, 6), Arr(4, 4), mode, id=mode + "-even", cplx=True))
        add(C(f, Arr(2, 3), Arr(4, 5), mode, id=mode + "-in2-larger", cplx=True))
    add(C(ss.fftconvolve, Arr(3, 7), Arr(1, 4), mode, kw={"axes": 1}, id=mode + "-axes-bcast",
          cplx=True))
    add(C(ss.fftconvolve, Arr(3, 7), Arr(3, 4), mode, kw={"axes": [1]}, id=mode + "-axes",
          cplx=True))

# batches of triangular systems (SciPy >= 1.15 solves them): the adjoint of op(A) = A^T is a
# transpose of each matrix, not of the whole batch (it was: wrong derivatives, or a crash)
_tri_u = lambda x: np.triu(x) + 3 * np.eye(x.shape[-1])  # noqa: E731
try:
    sl.solve_triangular(np.ones((2, 1, 1)), np.ones((2, 1, 1)))
    _BATCHES = (0, 1, 2)
except ValueError:          # an older SciPy: no batches
    _BATCHES = ()
for trans in _BATCHES:
    for bshape in ((3,), (3, 2), (4, 3, 2)):
        add(C(sl.solve_triangular, Arr(4, 3, 3, f=_tri_u), Arr(*bshape), kw={"trans": trans},
              id=f"batch-t{trans}-b{len(bshape)}", cplx=True))
if _BATCHES:
    add(C(sl.solve_triangular, Arr(2, 3, 3, f=_tri_u), Arr(2, 3, 2),
          kw={"trans": 1, "unit_diagonal": True}, id="batch-unit", cplx=True))


@pytest.mark.parametrize("case,dtype", rule_params(CASES))
def test_rule(case, dtype):
    run_rule(case, dtype)


@pytest.mark.parametrize("case,dtype", tangent_params(CASES))
def test_tangent(case, dtype):
    run_tangent(case, dtype)


# -- end to end, both modes -----------------------------------------------------------------------
RNG = np.random.default_rng(5)
M = spd(RNG.standard_normal((3, 3)))


def logm_sqrtm(a):
    return np.sum(sl.logm(a) ** 2) + np.sum(sl.sqrtm(a) * a)


def sylvester(a, b, q):
    return np.sum(sl.solve_sylvester(a, b, q) ** 2)


def lyapunov(a, q):
    return np.sum(np.sin(sl.solve_continuous_lyapunov(a, q)))


def banded_solve(ab, b):
    return np.sum(sl.solve_banded((2, 1), ab, b) ** 2)


def signal_loss(x, k):
    return (np.sum(ss.convolve(x, k, mode="same") ** 2) + np.sum(ss.correlate(x, k) ** 3)
            + np.sum(ss.fftconvolve(x, k, mode="valid")) + np.sum(ss.convolve2d(x, k) ** 2)
            + np.sum(ss.correlate2d(x, k, mode="same") ** 2))


E2E = [(logm_sqrtm, (M,)),
       (sylvester, (shifted(3)(RNG.standard_normal((3, 3))), shifted(2)(RNG.standard_normal((2, 2))),
                    RNG.standard_normal((3, 2)))),
       (lyapunov, (shifted(-3)(RNG.standard_normal((3, 3))), RNG.standard_normal((3, 3)))),
       (banded_solve, (banded(RNG), RNG.standard_normal(6))),
       (signal_loss, (RNG.standard_normal((5, 6)), RNG.standard_normal((2, 3))))]


@pytest.mark.parametrize("f,args", E2E, ids=[e[0].__name__ for e in E2E])
def test_end_to_end(f, args):
    check_grads(f, args, modes=("rev", "fwd"), rtol=1e-5)


def test_float32_kept():
    x = RNG.standard_normal((5, 6)).astype(np.float32)
    k = RNG.standard_normal((2, 3)).astype(np.float32)
    gx, gk = s2sad.grad(signal_loss, wrt=(0, 1))(x, k)
    assert gx.dtype == gk.dtype == np.float32
    assert s2sad.grad(logm_sqrtm)(M.astype(np.float32)).dtype == np.float32


def wrap2d(x, k):
    return np.sum(ss.convolve2d(x, k, boundary="wrap"))


def test_convolve2d_other_boundaries_refused():
    with pytest.raises(S2SADError, match="boundary"):
        s2sad.grad(wrap2d)(np.ones((4, 4)), np.ones((2, 2)))
