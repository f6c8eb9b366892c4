"""jit=True: the real Cholesky adjoint by SciPy's trmm, trsm and trtri called from numba
(rules/jit_lapack.py), against the Python helper (rules/numpy/linalg.cholesky, itself
checked against dense inverses in tests/rules/test_linalg_lapack_paths.py) and end to end."""
import math
import warnings

import numpy as np
import pytest
import scipy.linalg

import s2sad
from s2sad.errors import JitFallbackWarning
from s2sad.rules.numpy import linalg as nl
from s2sad.testing import check_grads

numba = pytest.importorskip("numba")

from s2sad.rules import jit_lapack  # noqa: E402


def _spd(rng, n, dtype):
    x = rng.standard_normal((n, n))
    return (x @ x.T + n * np.eye(n)).astype(dtype)


@pytest.mark.parametrize("char, dtype, tol", [("d", np.float64, 1e-12), ("s", np.float32, 1e-4)])
@pytest.mark.parametrize("blocked", [False, True])
def test_compiled_cholesky_adjoint_matches_python(char, dtype, tol, blocked):
    f = (jit_lapack.cholesky_adjoint_blocked if blocked else jit_lapack.cholesky_adjoint)(char)
    run = numba.njit(lambda g, L: f(g, L))
    for n in (1, 2, 9, 63, 64, 65, 130, 200, 400):
        rng = np.random.default_rng(n)
        a = _spd(rng, n, dtype)
        L = np.linalg.cholesky(a)
        g = rng.standard_normal((n, n)).astype(dtype)
        got = run(g, L)
        want = nl.cholesky(g, L, a)
        assert got.dtype == dtype
        assert np.abs(got - want).max() <= tol * np.abs(want).max()
        assert not np.triu(got, 1).any()
        np.testing.assert_array_equal(g, g.copy())      # g is not written


def gp(x, y, s):
    d = x[:, None] - x[None, :]
    K = np.exp(-0.5 * d ** 2)
    L = np.linalg.cholesky(K + s * np.eye(len(x)))
    U = scipy.linalg.cholesky(K + 2.0 * s * np.eye(len(x)))
    alpha = scipy.linalg.solve_triangular(L, y, lower=True)
    return (-0.5 * (alpha @ alpha) - np.sum(np.log(np.diag(L))) + np.sum(U * U[::-1])
            - 0.5 * len(x) * math.log(2 * math.pi))


def test_gp_compiled_matches_python():
    rng = np.random.default_rng(0)
    args = (np.sort(rng.uniform(-3, 3, 70)), rng.standard_normal(70), 0.6)   # 70: blocked
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        vj, gj = s2sad.value_and_grad(gp, wrt=(0, 1, 2), jit=True)(*args)
    vp, gp_ = s2sad.value_and_grad(gp, wrt=(0, 1, 2))(*args)
    assert vj == pytest.approx(vp, rel=1e-12)
    for a, b in zip(gj, gp_):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    check_grads(gp, args)


_CACHED = '''
import numpy as np, numba
from s2sad.rules import jit_lapack
f = jit_lapack.cholesky_adjoint("d")

@numba.njit(cache=True)
def run(g, L):
    return f(g, L)

L = np.linalg.cholesky(np.array([[4.0, 2.0], [2.0, 3.0]]))
print(run(np.ones((2, 2)), L).tolist(), sum(run.stats.cache_hits.values()))
'''


def test_compiled_helper_is_cacheable(tmp_path):
    """The routines are called by registered names, not ctypes addresses: numba caches a
    function that calls them (it refuses functions holding ctypes pointers), and a fresh process
    loads it from the cache."""
    import subprocess
    import sys
    (tmp_path / "cached_chol.py").write_text(_CACHED)
    import os
    # (numba caches no function that calls another one at NUMBA_OPT=0, the suite's level: the
    # unoptimised call holds an address)
    env = dict(os.environ, NUMBA_OPT="3")
    runs = [subprocess.run([sys.executable, "-W", "error::numba.NumbaWarning", "-c",
                            "import cached_chol"], cwd=tmp_path, capture_output=True, text=True,
                           env=env)
            for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr
    L = np.linalg.cholesky(np.array([[4.0, 2.0], [2.0, 3.0]]))
    want = nl.cholesky(np.ones((2, 2)), L, L @ L.T).tolist()
    first, second = (r.stdout.rsplit(" ", 1) for r in runs)
    assert second[1].strip() == "1" and first[1].strip() == "0"
    for out in (first, second):
        np.testing.assert_allclose(eval(out[0]), want, rtol=1e-14)
