"""jit=True with scipy.special's elementwise functions (rules/jit_special.py): the derivative
compiles (no JitFallbackWarning), its value is the function's own bit for bit (SciPy's compiled
kernels, called from numba), and its gradients are Python mode's."""
import warnings

import numpy as np
import pytest
import scipy.special as sp
from scipy.special import gammaln

import s2sad
from s2sad.errors import JitFallbackWarning
from s2sad.testing import check_grads

pytest.importorskip("numba")


def f_gammaln(x):
    return np.sum(sp.gammaln(x) * x)


def f_gammaln_name(x):                          # (the function imported by name)
    return np.sum(gammaln(x + 1.0))


def f_digamma(x):
    return np.sum(sp.digamma(x) ** 2)


def f_psi(x):
    return sp.psi(x) * x


def f_polygamma(x):
    return np.sum(sp.polygamma(1, x) + sp.polygamma(2, x) * x)


def f_erf(x):
    return np.sum(sp.erf(x) * x)


def f_erfc(x):
    return np.sum(sp.erfc(x))


def f_ndtr(x):
    return np.sum(sp.ndtr(x) * x)


def f_log_ndtr(x):
    return np.sum(sp.log_ndtr(x))


def f_expit(x):
    return np.sum(sp.expit(x) * x)


def f_logit(p):
    return np.sum(sp.logit(p) ** 2)


def f_xlogy(x, y):
    return np.sum(sp.xlogy(x, y))


def f_xlog1py(x, y):
    return np.sum(sp.xlog1py(x, y) * y)


def f_betaln(a, b):
    return np.sum(sp.betaln(a, b))


def f_gamma(x):
    return sp.gamma(x) + sp.gamma(2.0 * x)


def f_loggamma(x):
    return np.sum(sp.loggamma(x) * x)


def gamma_mix(a, x):
    return np.sum(sp.gammaln(a + x) - sp.gammaln(a) - sp.gammaln(x + 1) + a * np.log(0.5))


rng = np.random.default_rng(0)
POS = rng.uniform(0.3, 4.0, (2, 3))                     # (arrays of fewer than 8 elements per sum:
REAL = rng.uniform(-2.5, 2.5, 6)                        # NumPy's pairwise sum is numba's loop)
PROB = rng.uniform(0.05, 0.95, (3, 2))

CASES = [
    (f_gammaln, (POS,), (0,)),
    (f_gammaln, (POS.T,), (0,)),                       # (a view: not C-contiguous)
    (f_gammaln_name, (REAL[:5] ** 2,), (0,)),
    (f_digamma, (POS,), (0,)),
    (f_psi, (1.7,), (0,)),
    (f_polygamma, (POS[0],), (0,)),
    (f_erf, (REAL,), (0,)),
    (f_erfc, (REAL[::2],), (0,)),
    (f_ndtr, (REAL,), (0,)),
    (f_log_ndtr, (REAL.reshape(2, 3),), (0,)),
    (f_expit, (REAL,), (0,)),
    (f_logit, (PROB,), (0,)),
    (f_xlogy, (POS, POS[0] + 0.5), (0, 1)),            # (broadcast)
    (f_xlog1py, (1.5, POS[:, 0]), (0, 1)),              # (a float and an array)
    (f_betaln, (POS, 2.5), (0, 1)),
    (f_gamma, (1.3,), (0,)),
    (f_loggamma, (POS.ravel(),), (0,)),
    (gamma_mix, (1.5, REAL[:5] ** 2), (0, 1)),
]


def _id(case):
    f, args, _ = case
    return f"{f.__name__}-" + "-".join(str(np.asarray(a).dtype) + str(np.shape(a)) for a in args)


@pytest.mark.parametrize("f, args, wrt", CASES, ids=[_id(c) for c in CASES])
def test_compiled_value_is_scipys_and_gradients_are_python_modes(f, args, wrt):
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        vj, gj = s2sad.value_and_grad(f, wrt=wrt, jit=True)(*args)
    want = f(*args)
    assert np.asarray(vj).tobytes() == np.asarray(want, dtype=np.asarray(vj).dtype).tobytes()
    assert np.asarray(vj).dtype == np.asarray(want).dtype or np.ndim(want) == 0
    vp, gp = s2sad.value_and_grad(f, wrt=wrt)(*args)
    for a, b, i in zip(gj, gp, wrt):
        assert np.shape(a) == np.shape(args[i]) and np.asarray(a).dtype == np.asarray(b).dtype
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=0)


def test_gamma_mix_against_finite_differences():
    x = np.arange(6.0)
    check_grads(gamma_mix, (1.5, x), wrt=(0,))
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        g = s2sad.grad(gamma_mix, wrt=0, jit=True)(1.5, x)
    assert g == pytest.approx(np.sum(sp.digamma(1.5 + x) - sp.digamma(1.5) + np.log(0.5)),
                              rel=1e-12)


# -- the numba versions themselves, against SciPy's ufuncs ---------------------------------------
def _bits(a):
    a = np.ascontiguousarray(a)
    return a.dtype, a.shape, a.tobytes()


UNARY = ["gammaln", "psi", "gamma", "loggamma", "erf", "erfc", "erfcx", "erfinv", "ndtr", "ndtri",
         "log_ndtr", "expit", "logit", "log_expit"]


def test_unary_versions_are_scipys_bit_for_bit():
    """float64 and float32 (through the double kernel, or SciPy's float kernel for expit, logit,
    log_expit and erfinv), integers, 0-d to 3-d, views; special values included."""
    import numba
    from s2sad.rules import jit_special as J
    V = J.versions()
    x = np.concatenate([rng.uniform(-6, 6, 40), rng.uniform(0, 1, 40),
                        np.exp(rng.uniform(-30, 30, 30)),
                        [0.0, -0.0, 1.0, -1.0, -2.0, np.inf, -np.inf, np.nan, 1e-310, 171.7]])
    for name in UNARY:
        fn = getattr(sp, name)
        run = numba.njit(lambda a, stub=V[fn]: stub(a))
        for a in (x, x.astype(np.float32), x[:60].reshape(3, 4, 5)[:, ::2], np.float32(0.25),
                  np.arange(-3, 4), np.int64(3)):
            with np.errstate(all="ignore"):
                want, got = fn(a), run(a)
            if np.ndim(want) == 0:      # (numba boxes a float32 scalar as a Python float)
                assert np.isnan(want) and np.isnan(got) or float(want) == got, (name, a)
            else:
                assert _bits(got) == _bits(want), (name, a.dtype, a.shape)
        assert run(2.5) == fn(2.5) or np.isnan(fn(2.5))


def test_binary_versions_and_polygamma_are_scipys_bit_for_bit():
    import numba
    from s2sad.rules import jit_special as J
    V = J.versions()
    a = np.concatenate([rng.uniform(-3, 3, 9), [0.0, np.inf, np.nan]]).reshape(3, 4)
    b = rng.uniform(0.01, 6, 4)
    for name in ("xlogy", "xlog1py", "betaln"):
        fn = getattr(sp, name)
        run = numba.njit(lambda u, v, stub=V[fn]: stub(u, v))
        for u, v in ((a, b), (b, a), (a, a.T.copy().T), (a[:, :1], b[::2][:, None].T), (2.5, a),
                     (a, 0.5), (0.5, 2.5)):
            with np.errstate(all="ignore"):
                want, got = fn(u, v), run(u, v)
            assert _bits(got) == _bits(want), (name, np.shape(u), np.shape(v))
    f32 = a.astype(np.float32)
    run = numba.njit(lambda u, v, stub=V[sp.betaln]: stub(u, v))
    assert _bits(run(f32, f32)) == _bits(sp.betaln(f32, f32))
    pg = numba.njit(lambda n, v: J.polygamma(n, v))
    for n, v in ((0, b), (1, a), (2, 1.5), (3, -2.5), (1, f32), (np.array([0, 1, 2, 4]), a)):
        with np.errstate(all="ignore"):
            want, got = sp.polygamma(n, v), pg(n, v)
        assert _bits(got) == _bits(want), (n, np.shape(v))


def test_float32_xlogy_is_left_to_python():
    """SciPy's float32 xlogy computes in float with no kernel it exports; a float32 array beside a
    float is float32 for NumPy (a weak scalar) and float64 for numba: neither compiles here."""
    import numba
    from numba.core.errors import TypingError
    from s2sad.rules import jit_special as J
    x = POS.astype(np.float32)
    run = numba.njit(lambda u, v, stub=J.versions()[sp.xlogy]: stub(u, v))
    for u, v in ((x, x), (x, 2.0)):
        with pytest.raises(TypingError, match="No implementation of function"):
            run(u, v)
    with pytest.raises(TypingError, match="No implementation of function"):
        numba.njit(lambda u, v, stub=J.versions()[sp.betaln]: stub(u, v))(x, 2.0)
    assert run(x.astype(np.float64), 2.0).dtype == np.float64      # (float64 compiles)


SCRIPT = '''
import json, warnings
import numpy as np
import scipy.special as sp
import s2sad
from s2sad.cache import forward_jit_derivative, jit_derivative
from s2sad.runtime.values import type_of
warnings.simplefilter("error")          # (a fallback to Python fails the test)


def f(x):
    return np.sum(sp.polygamma(1, x) * sp.gammaln(x) + sp.digamma(x) + sp.xlogy(x, x + 1.0))


x = np.linspace(0.5, 3.0, 5)
t = np.linspace(1.0, 2.0, 5)
g = s2sad.grad(f, jit=True)(x)
jv = s2sad.jvp(f, (x,), (t,), jit=True)[1]
want = s2sad.grad(f)(x)
out = {"same": bool(np.allclose(g, want, rtol=1e-12, atol=0) and
                    np.isclose(jv, want @ t, rtol=1e-12))}
for name, make in (("rev", jit_derivative), ("fwd", forward_jit_derivative)):
    st = make(f, (True,), ("a",), {}, (type_of(x),)).dispatcher().stats
    out[name] = [sum(st.cache_hits.values()), sum(st.cache_misses.values())]
print(json.dumps(out))
'''


def test_machine_code_calling_scipy_kernels_loads_in_a_second_process(tmp_path):
    """The kernels are called by symbol names registered with LLVM (zeta's ufunc loop and its
    data pointer too), not by addresses compiled in: numba's cache keeps the code, and a second
    process (other addresses) loads it and gets the same numbers; forward mode as well."""
    import json
    import os
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    (tmp_path / "user_special.py").write_text(SCRIPT)
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""),
               S2SAD_CACHE_DIR=str(cache))
    for k in ("S2SAD_CACHE", "NUMBA_CACHE_DIR", "NUMBA_OPT"):
        env.pop(k, None)
    outs = []
    for _ in range(2):
        r = subprocess.run([sys.executable, "user_special.py"], capture_output=True, text=True,
                           env=env, timeout=600, cwd=str(tmp_path))
        assert r.returncode == 0, r.stderr
        outs.append(json.loads(r.stdout.strip().splitlines()[-1]))
    assert outs[0] == {"same": True, "rev": [0, 1], "fwd": [0, 1]}, outs
    assert outs[1] == {"same": True, "rev": [1, 0], "fwd": [1, 0]}, outs
