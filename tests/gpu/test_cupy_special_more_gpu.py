"""The scipy.special rules of issue 15 (part 2) on ``cupyx.scipy.special``: each function CuPy
has gets SciPy's rule (s2sad/rules/cupy.py maps them by name), differentiated on the GPU
and compared with the same function on NumPy arrays.  Skipped without CuPy and a GPU."""
import numpy as np
import pytest
import scipy.special as sp

import s2sad
from gpu_helpers import GPU_OK, assert_same, needs_gpu, to_gpu

pytestmark = needs_gpu

if GPU_OK:
    import cupyx.scipy.special as csp
else:
    csp = None

# (name, constant first argument or None, number of active arguments, domain)
FUNCS = [("erfcx", None, 1, (-1, 2)), ("rgamma", None, 1, (0.3, 4)), ("exp1", None, 1, (0.2, 3)),
         ("expi", None, 1, (0.2, 3)), ("j0", None, 1, (-3, 3)), ("j1", None, 1, (-3, 3)),
         ("y0", None, 1, (0.3, 4)), ("y1", None, 1, (0.3, 4)), ("k0", None, 1, (0.3, 4)),
         ("k0e", None, 1, (0.3, 4)), ("k1", None, 1, (0.3, 4)), ("k1e", None, 1, (0.3, 4)),
         ("jv", 1.5, 1, (0.3, 3)), ("yv", 0.7, 1, (0.3, 4)), ("yn", 2, 1, (0.5, 4)),
         ("iv", 2.5, 1, (0.3, 3)), ("ive", 0.5, 1, (0.3, 3)), ("kv", 1.2, 1, (0.3, 4)),
         ("kve", 0.4, 1, (0.3, 4)), ("expn", 2, 1, (0.2, 3)), ("beta", None, 2, (0.3, 4)),
         ("betaln", None, 2, (0.3, 4)), ("gammainc", None, 2, (0.2, 8)),
         ("gammaincc", None, 2, (0.2, 8)), ("rel_entr", None, 2, (0.2, 2)),
         ("kl_div", None, 2, (0.2, 2))]


def _make(mod, name, const, n):
    fn = getattr(mod, name)
    if const is not None:
        def f(x):
            return (fn(const, x) * x).sum()
    elif n == 1:
        def f(x):
            return (fn(x) * x).sum()
    else:
        def f(x, y):
            return (fn(x, y) * x).sum()
    return f


@pytest.mark.parametrize("name,const,n,dom", FUNCS, ids=[f[0] for f in FUNCS])
def test_special_on_gpu(name, const, n, dom):
    if csp is None or getattr(csp, name, None) is None:
        pytest.skip(f"cupyx.scipy.special has no {name}")
    rng = np.random.default_rng(0)
    args = tuple(rng.uniform(*dom, 6) for _ in range(n))
    wrt = tuple(range(n)) if n > 1 else 0
    ref = s2sad.grad(_make(sp, name, const, n), wrt=wrt)(*args)
    got = s2sad.grad(_make(csp, name, const, n), wrt=wrt)(*to_gpu(args))
    assert_same(got, ref, name, rtol=1e-6, atol=1e-9)


def test_incomplete_beta_shapes_on_gpu():
    if csp is None or getattr(csp, "betainc", None) is None:
        pytest.skip("cupyx.scipy.special has no betainc")

    def fr(a, b, x):
        return sp.betainc(a, b, x).sum()

    def fg(a, b, x):
        return csp.betainc(a, b, x).sum()
    rng = np.random.default_rng(1)
    args = (rng.uniform(0.3, 6, 5), rng.uniform(0.3, 6, 5), rng.uniform(0.05, 0.95, 5))
    ref = s2sad.grad(fr, wrt=(0, 1, 2))(*args)
    got = s2sad.grad(fg, wrt=(0, 1, 2))(*to_gpu(args))
    assert_same(got, ref, "betainc", rtol=1e-6, atol=1e-9)


def test_logsumexp_return_sign_on_gpu():
    def f(a, b):
        r, s = csp.logsumexp(a, axis=1, b=b, return_sign=True)
        return (r * s).sum()

    def fr(a, b):
        r, s = sp.logsumexp(a, axis=1, b=b, return_sign=True)
        return (r * s).sum()
    rng = np.random.default_rng(2)
    args = (rng.standard_normal((3, 4)), rng.standard_normal(4))
    assert_same(s2sad.grad(f, wrt=(0, 1))(*to_gpu(args)), s2sad.grad(fr, wrt=(0, 1))(*args),
                "logsumexp")
