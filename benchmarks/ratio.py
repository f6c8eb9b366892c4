"""Gradient time / primal time on the 13 cases of Mooncake.jl's inter-framework benchmark suite.

Python ports of Mooncake.jl's ``bench/run_benchmarks.jl`` (``generate_inter_framework_tests``),
timed in one process: the NumPy primal, s2sad in Python mode (``s2sad.value_and_grad``) and in
Numba mode (``jit=True``), JAX (``jax.jit(jax.value_and_grad(...))``, x64), PyTorch (eager
``torch.autograd.grad``, float64) and HIPS autograd.  Each figure is a method's time for value
and gradient divided by the primal's time, the same measure as Mooncake's table.

Run, on one core with single-threaded BLAS (the shared machines are noisy: quote ratios, never
absolute times, and rerun a surprising row)::

    OMP_NUM_THREADS=1 taskset -c 2 python benchmarks/ratio.py --threads 1 [--markdown]
        [--cases sum_1000,gp_lml] [--repeat 7] [--json out.json] [--png out.png] [--quick]

Peers are optional (``pip install -e .[bench]``); a column is left out when its package is not
importable, and a cell reads "—" where a method does not run on a case (autograd cannot write
into an array; Numba mode before it exists).  Before timing, every method's value and gradient are
checked against s2sad's (or, where s2sad refuses, against the first peer that ran); a mismatch is
marked with "✗" after the number.

How each method is timed: the methods of one case take turns, ``--repeat`` rounds of them; in a
round each method runs N calls, N chosen so that one round lasts about 0.15 s, and the best round
is kept.  The first call is timed apart: it is s2sad's build time (reading, lowering, emitting the
derivative), Numba's compile time added to it in Numba mode, and JAX's trace and XLA compile time
(about 10 s to 2 minutes on the loop cases, which JAX unrolls: leave JAX out with ``--methods``).
A Numba-mode cell reads "fallback" where s2sad warned that it ran the derivative as Python.

The ports keep the Julia originals' structure: a loop stays a Python loop (JAX traces and unrolls
it under jit, which is what it does to a user's loop), ``similar(x)`` is ``np.empty_like(x)``,
``view`` a slice, ``UpperTriangular`` ``np.triu``, ``map`` over an array a comprehension over
``ravel()``, and the two library models (AbstractGPs' GP log marginal likelihood and the DynamicPPL
model) are written out in NumPy as a user would write them.
"""
import argparse
import math
import os
import sys
import time
import warnings

_n = next((a.split("=", 1)[1] if "=" in a else sys.argv[i + 1] for i, a in enumerate(sys.argv)
           if a == "--threads" or a.startswith("--threads=")), None) \
    if __name__ == "__main__" else None
if _n is not None:                                           # before NumPy loads its BLAS
    for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
               "NUMBA_NUM_THREADS", "XLA_FLAGS"):
        if _v == "XLA_FLAGS":
            os.environ[_v] = (os.environ.get(_v, "") +
                              " --xla_cpu_multi_thread_eigen=false"
                              f" intra_op_parallelism_threads={_n}").strip()
        else:
            os.environ[_v] = _n

# Every peer runs on the CPU, as NumPy does: JAX picks a GPU when one is there (on a GPU host its
# column was GPU time against a CPU primal before this line); JAX_PLATFORMS=cuda overrides it.
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import numpy as np  # noqa: E402
import scipy.linalg  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import s2sad  # noqa: E402


# ---------------------------------------------------------------------------------------------
# The primals: plain Python and NumPy, one per Mooncake case.  s2sad differentiates these.
# ---------------------------------------------------------------------------------------------
def identity(v):
    return v


def _sum(f, x):                         # Mooncake's _sum(f, x): a while loop, no rule for sum
    y = 0.0
    n = 0
    while n < len(x):
        y += f(x[n])
        n += 1
    return y


def sum_1000(x):
    return np.sum(x)


def _sum_1000(x):
    return _sum(identity, x)


def sum_sin_1000(x):
    return np.sum(np.sin(x))


def _sum_sin_1000(x):
    return _sum(math.sin, x)


def kron_sum(x, y):
    return np.sum(np.kron(x, y))


def kron_view_sum(x, y):                # view(x, 1:20, 1:20), UpperTriangular(y)
    return kron_sum(x[:20, :20], np.triu(y))


def naive_map_sin_cos_exp(x):
    y = np.empty_like(x)
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            y[i, j] = math.sin(math.cos(math.exp(x[i, j])))
    return np.sum(y)


def map_sin_cos_exp(x):
    return np.sum(np.array([math.sin(math.cos(math.exp(v))) for v in x.ravel()]))


def broadcast_sin_cos_exp(x):
    return np.sum(np.sin(np.cos(np.exp(x))))


def simple_mlp(W2, W1, Y, X):           # sum(abs2, Y - W2 * map(x -> x * (0 <= x), W1 * X))
    H = W1 @ X
    return np.sum((Y - W2 @ (H * (0 <= H))) ** 2)


def gp_lml(x, y, s):                    # logpdf(GP(SEKernel())(x, s), y)
    d = x[:, None] - x[None, :]
    K = np.exp(-0.5 * d ** 2)
    L = np.linalg.cholesky(K + s * np.eye(len(x)))
    alpha = scipy.linalg.solve_triangular(L, y, lower=True)
    return (-0.5 * (alpha @ alpha) - np.sum(np.log(np.diag(L)))
            - 0.5 * len(x) * math.log(2 * math.pi))


# The DynamicPPL model of Mooncake's turing_broadcast_benchmark:
#     mu ~ truncated(Normal(1, 2), 0.1, 10); sigma ~ truncated(Normal(1, 2), 0.1, 10)
#     x .~ LogNormal(mu, sigma)
# as the log density of the linked (unconstrained) parameters theta: each is mapped into
# (0.1, 10) by a scaled logistic, and the log-Jacobian of that map is added.
LO, HI = 0.1, 10.0
LOG_2PI = math.log(2 * math.pi)
LOG_Z = math.log(0.5 * (math.erf((HI - 1.0) / (2.0 * math.sqrt(2))) -
                        math.erf((LO - 1.0) / (2.0 * math.sqrt(2)))))


def truncnormal_logpdf(v):
    return -0.5 * ((v - 1.0) / 2.0) ** 2 - math.log(2.0) - 0.5 * LOG_2PI - LOG_Z


def to_interval(t):
    p = 1.0 / (1.0 + math.exp(-t))
    return LO + (HI - LO) * p, math.log(HI - LO) + math.log(p) + math.log(1.0 - p)


def turing_broadcast(theta, x):
    mu, logjac_mu = to_interval(theta[0])
    sigma, logjac_sigma = to_interval(theta[1])
    lx = np.log(x)
    loglik = np.sum(-lx - math.log(sigma) - 0.5 * LOG_2PI - (lx - mu) ** 2 / (2 * sigma ** 2))
    return (truncnormal_logpdf(mu) + truncnormal_logpdf(sigma) + loglik
            + logjac_mu + logjac_sigma)


def large_single_block(x):              # g(x[1], x[2], Val(400)): 400 multiplications, no loop
    y = x[0]
    a = x[1]
    y = y * a * a * a * a * a * a * a * a * a * a
    y = y * a * a * a * a * a * a * a * a * a * a
    y = y * a * a * a * a * a * a * a * a * a * a
    y = y * a * a * a * a * a * a * a * a * a * a
    y = y * a * a * a * a * a * a * a * a * a * a
    y = y * a * a * a * a * a * a * a * a * a * a
    y = y * a * a * a * a * a * a * a * a * a * a
    y = y * a * a * a * a * a * a * a * a * a * a
    y = y * a * a * a * a * a * a * a * a * a * a
    y = y * a * a * a * a * a * a * a * a * a * a
    y = y * a * a * a * a * a * a * a * a * a * a
    y = y * a * a * a * a * a * a * a * a * a * a
    y = y * a * a * a * a * a * a * a * a * a * a
    y = y * a * a * a * a * a * a * a * a * a * a
    y = y * a * a * a * a * a * a * a * a * a * a
    y = y * a * a * a * a * a * a * a * a * a * a
    y = y * a * a * a * a * a * a * a * a * a * a
    y = y * a * a * a * a * a * a * a * a * a * a
    y = y * a * a * a * a * a * a * a * a * a * a
    y = y * a * a * a * a * a * a * a * a * a * a
    y = y * a * a * a * a * a * a * a * a * a * a
    y = y * a * a * a * a * a * a * a * a * a * a
    y = y * a * a * a * a * a * a * a * a * a * a
    y = y * a * a * a * a * a * a * a * a * a * a
    y = y * a * a * a * a * a * a * a * a * a * a
    y = y * a * a * a * a * a * a * a * a * a * a
    y = y * a * a * a * a * a * a * a * a * a * a
    y = y * a * a * a * a * a * a * a * a * a * a
    y = y * a * a * a * a * a * a * a * a * a * a
    y = y * a * a * a * a * a * a * a * a * a * a
    y = y * a * a * a * a * a * a * a * a * a * a
    y = y * a * a * a * a * a * a * a * a * a * a
    y = y * a * a * a * a * a * a * a * a * a * a
    y = y * a * a * a * a * a * a * a * a * a * a
    y = y * a * a * a * a * a * a * a * a * a * a
    y = y * a * a * a * a * a * a * a * a * a * a
    y = y * a * a * a * a * a * a * a * a * a * a
    y = y * a * a * a * a * a * a * a * a * a * a
    y = y * a * a * a * a * a * a * a * a * a * a
    y = y * a * a * a * a * a * a * a * a * a * a
    return y


# ---------------------------------------------------------------------------------------------
# The cases: name, primal, inputs (Mooncake's sizes and distributions), which arguments are
# differentiated (all of Mooncake's, except the model's data, which Mooncake closes over).
# ---------------------------------------------------------------------------------------------
def _gp_inputs(rng):
    x = np.arange(128) * 0.2                                     # range(0.0; step=0.2, length=128)
    s = 1.0
    d = x[:, None] - x[None, :]
    y = np.linalg.cholesky(np.exp(-0.5 * d ** 2) + s * np.eye(128)) @ rng.standard_normal(128)
    return x, y, s


CASES = {
    "sum_1000": (sum_1000, lambda r: (r.standard_normal(1000),), (0,)),
    "_sum_1000": (_sum_1000, lambda r: (r.standard_normal(1000),), (0,)),
    "sum_sin_1000": (sum_sin_1000, lambda r: (r.standard_normal(1000),), (0,)),
    "_sum_sin_1000": (_sum_sin_1000, lambda r: (r.standard_normal(1000),), (0,)),
    "kron_sum": (kron_sum, lambda r: (r.standard_normal((20, 20)), r.standard_normal((40, 40))),
                 (0, 1)),
    "kron_view_sum": (kron_view_sum,
                      lambda r: (r.standard_normal((40, 30)), r.standard_normal((40, 40))), (0, 1)),
    "naive_map_sin_cos_exp": (naive_map_sin_cos_exp, lambda r: (r.standard_normal((10, 10)),), (0,)),
    "map_sin_cos_exp": (map_sin_cos_exp, lambda r: (r.standard_normal((10, 10)),), (0,)),
    "broadcast_sin_cos_exp": (broadcast_sin_cos_exp, lambda r: (r.standard_normal((10, 10)),), (0,)),
    "simple_mlp": (simple_mlp, lambda r: (r.standard_normal((128, 256)), r.standard_normal((256, 128)),
                                          r.standard_normal((128, 70)), r.standard_normal((128, 70))),
                   (0, 1, 2, 3)),
    "gp_lml": (gp_lml, _gp_inputs, (0, 1, 2)),
    "turing_broadcast": (turing_broadcast,
                         lambda r: (r.standard_normal(2), r.lognormal(1.5, 0.5, 100_000)), (0,)),
    "large_single_block": (large_single_block, lambda r: (np.array([0.9, 0.99]),), (0,)),
}


def case_inputs(name, seed=0):
    return CASES[name][1](np.random.default_rng(seed))


# ---------------------------------------------------------------------------------------------
# The peers: each case in the peer's own array module, with the primal's loop structure.
# ---------------------------------------------------------------------------------------------
def _peer_functions(m, name, solve_lower, stack, setitem):
    """The case ``name`` written with array module ``m`` (jax.numpy, torch, autograd.numpy).

    ``solve_lower(L, y)``, ``stack(list of scalars)`` and ``setitem(buffer, index, value) ->
    buffer`` are the three places where the peers' idioms differ; ``setitem`` is None where the
    peer cannot write into an array (autograd)."""
    def sum_1000(x):
        return m.sum(x)

    def _sum_1000(x):
        return _sum(identity, x)

    def sum_sin_1000(x):
        return m.sum(m.sin(x))

    def _sum_sin_1000(x):
        return _sum(m.sin, x)

    def kron_sum(x, y):
        return m.sum(m.kron(x, y))

    def kron_view_sum(x, y):
        return kron_sum(x[:20, :20], m.triu(y))

    def naive_map_sin_cos_exp(x):
        y = m.empty_like(x)
        for i in range(x.shape[0]):
            for j in range(x.shape[1]):
                y = setitem(y, (i, j), m.sin(m.cos(m.exp(x[i, j]))))
        return m.sum(y)

    def map_sin_cos_exp(x):
        return m.sum(stack([m.sin(m.cos(m.exp(v))) for v in x.ravel()]))

    def broadcast_sin_cos_exp(x):
        return m.sum(m.sin(m.cos(m.exp(x))))

    def simple_mlp(W2, W1, Y, X):
        H = W1 @ X
        return m.sum((Y - W2 @ (H * (0 <= H))) ** 2)

    def gp_lml(x, y, s):
        d = x[:, None] - x[None, :]
        K = m.exp(-0.5 * d ** 2)
        L = m.linalg.cholesky(K + s * m.eye(len(x)))
        alpha = solve_lower(L, y)
        return (-0.5 * (alpha @ alpha) - m.sum(m.log(m.diag(L)))
                - 0.5 * len(x) * math.log(2 * math.pi))

    def truncnormal_logpdf(v):
        return -0.5 * ((v - 1.0) / 2.0) ** 2 - math.log(2.0) - 0.5 * LOG_2PI - LOG_Z

    def to_interval(t):
        p = 1.0 / (1.0 + m.exp(-t))
        return LO + (HI - LO) * p, math.log(HI - LO) + m.log(p) + m.log(1.0 - p)

    def turing_broadcast(theta, x):
        mu, logjac_mu = to_interval(theta[0])
        sigma, logjac_sigma = to_interval(theta[1])
        lx = m.log(x)
        loglik = m.sum(-lx - m.log(sigma) - 0.5 * LOG_2PI - (lx - mu) ** 2 / (2 * sigma ** 2))
        return (truncnormal_logpdf(mu) + truncnormal_logpdf(sigma) + loglik
                + logjac_mu + logjac_sigma)

    if name == "naive_map_sin_cos_exp" and setitem is None:
        return None
    if name == "large_single_block":
        return large_single_block           # indexing and * only: the primal itself
    return locals()[name]


class Method:
    """One way of computing (value, gradients) of a case: ``prepare(case, f, args, wrt)`` returns
    a call ``run()`` (None where the method cannot run the case); ``result(out)`` gives (value,
    [numpy gradients]).  ``key`` is the name ``--methods`` takes."""
    name = key = "?"

    def version(self):
        return ""


class Primal(Method):
    name = key = "primal"

    def prepare(self, case, f, args, wrt):
        return lambda: f(*args)


class S2sad(Method):
    def __init__(self, jit):
        self.jit = jit
        self.name = "s2sad numba" if jit else "s2sad"
        self.key = "numba" if jit else "s2sad"

    def version(self):
        if not self.jit:
            return getattr(s2sad, "__version__", "")
        import numba
        return f"numba {numba.__version__}"

    def prepare(self, case, f, args, wrt):
        w = wrt if len(wrt) > 1 else wrt[0]
        vg = s2sad.value_and_grad(f, wrt=w, jit=True) if self.jit else s2sad.value_and_grad(f, wrt=w)
        return lambda: vg(*args)

    def result(self, out):
        v, g = out
        return float(v), [np.asarray(a) for a in (g if isinstance(g, tuple) else (g,))]


class Jax(Method):
    name, key = "JAX jit", "jax"

    def __init__(self):
        import jax
        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp
        import jax.scipy.linalg
        self.jax, self.jnp = jax, jnp
        self.solve_lower = lambda L, y: jax.scipy.linalg.solve_triangular(L, y, lower=True)

    def version(self):
        return f"{self.jax.__version__} on {self.jax.devices()[0].platform}"

    def prepare(self, case, f, args, wrt):
        jax, jnp = self.jax, self.jnp
        g = _peer_functions(jnp, case, self.solve_lower, jnp.array,
                            lambda y, ij, v: y.at[ij].set(v))
        if g is None:
            return None
        vg = jax.jit(jax.value_and_grad(g, argnums=wrt))
        jargs = tuple(jnp.asarray(a) for a in args)
        return lambda: jax.block_until_ready(vg(*jargs))

    def result(self, out):
        v, g = out
        return float(v), [np.asarray(a) for a in g]


class Torch(Method):
    name, key = "PyTorch", "torch"

    def __init__(self):
        import torch
        torch.set_default_dtype(torch.float64)
        self.torch = torch

    def version(self):
        return self.torch.__version__

    def prepare(self, case, f, args, wrt):
        torch = self.torch

        def setitem(y, ij, v):
            y[ij] = v
            return y
        solve = lambda L, y: torch.linalg.solve_triangular(L, y[:, None], upper=False)[:, 0]  # noqa
        g = _peer_functions(torch, case, solve, torch.stack, setitem)
        if g is None:
            return None
        targs = [torch.tensor(a, dtype=torch.float64) for a in args]

        def run():
            xs = [a.detach().requires_grad_(True) if i in wrt else a for i, a in enumerate(targs)]
            out = g(*xs)
            return out, torch.autograd.grad(out, [xs[i] for i in wrt])
        return run

    def result(self, out):
        v, g = out
        return float(v.detach()), [a.detach().numpy() for a in g]


class Autograd(Method):
    name = key = "autograd"

    def __init__(self):
        import autograd
        import autograd.numpy as anp
        import autograd.scipy.linalg
        self.autograd, self.anp = autograd, anp
        self.solve_lower = lambda L, y: autograd.scipy.linalg.solve_triangular(L, y, lower=True)

    def version(self):
        from importlib.metadata import version
        return version("autograd")

    def prepare(self, case, f, args, wrt):
        g = _peer_functions(self.anp, case, self.solve_lower, self.anp.array, None)
        if g is None:
            return None
        vg = self.autograd.value_and_grad(g, wrt if len(wrt) > 1 else wrt[0])
        return lambda: vg(*args)

    def result(self, out):
        v, g = out
        return float(v), [np.asarray(a) for a in (g if isinstance(g, tuple) else (g,))]


def methods(selected=None):
    """The methods that can run here: the primal, s2sad's two modes, and the importable peers."""
    want = (lambda key: key == "primal" or not selected or key in selected)
    out = [m for m in (Primal(), S2sad(jit=False), S2sad(jit=True)) if want(m.key)]
    for cls in (Jax, Torch, Autograd):
        if want(cls.key):
            try:
                out.append(cls())
            except ImportError:
                pass
    return out


# ---------------------------------------------------------------------------------------------
# Timing
# ---------------------------------------------------------------------------------------------
class Cell:
    """What one method gave on one case."""

    def __init__(self):
        self.status = "ok"        # ok | n/a (the method does not run this case) | refused | fallback
        self.error = ""
        self.first_s = None       # the first call: build (+ compile) time
        self.best_s = math.inf    # best time per call over the rounds
        self.match = None         # True/False: value and gradient agree with the reference
        self.n = 0

    def as_dict(self):
        return {k: (None if v == math.inf else v) for k, v in vars(self).items()}


def _calls(run, n):
    t0 = time.perf_counter()
    for _ in range(n):
        run()
    return (time.perf_counter() - t0) / n


def _agree(a, b):
    """Values and gradients agree to what float64 round-off allows across implementations."""
    (va, ga), (vb, gb) = a, b
    if not np.isclose(va, vb, rtol=1e-8, atol=1e-12):
        return False
    return len(ga) == len(gb) and all(
        np.shape(x) == np.shape(y) and np.allclose(x, y, rtol=1e-6,
                                                   atol=1e-9 * max(1.0, np.max(np.abs(y))))
        for x, y in zip(ga, gb))


def run_case(case, meths, repeat, target_s, log=print):
    f, _, wrt = CASES[case]
    args = case_inputs(case)
    cells, runs, results = {}, {}, {}
    for m in meths:
        c = cells[m.name] = Cell()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                run = m.prepare(case, f, args, wrt)
                if run is None:
                    c.status = "n/a"
                    continue
                t0 = time.perf_counter()
                out = run()
                c.first_s = time.perf_counter() - t0
            except TypeError as e:
                if isinstance(m, S2sad) and m.jit and "jit" in str(e):
                    c.status, c.error = "n/a", "no jit= keyword in this s2sad"
                    continue
                c.status, c.error = "refused", f"{type(e).__name__}: {e}"
                continue
            except Exception as e:                        # a refusal or a crash: reported, not fatal
                c.status, c.error = "refused", f"{type(e).__name__}: {e}"
                continue
        if isinstance(m, S2sad) and m.jit:
            fell = [w for w in caught if "Fallback" in w.category.__name__ or
                    "could not compile" in str(w.message)]          # s2sad's JitFallbackWarning
            if fell:
                c.status, c.error = "fallback", str(fell[0].message)
                continue
        if not isinstance(m, Primal):
            results[m.name] = m.result(out)
        runs[m.name] = run
    # check every method against s2sad (or against the first one that ran)
    ref = next((k for k in ("s2sad",) + tuple(results) if k in results), None)
    for k, r in results.items():
        cells[k].match = _agree(r, results[ref])
        if not cells[k].match:
            log(f"  {case}: {k} disagrees with {ref}")
    cells["primal"].match = None if ref is None else bool(
        np.isclose(float(f(*args)), results[ref][0], rtol=1e-8, atol=1e-12))
    # how many calls per round: about target_s each
    for k, run in runs.items():
        t = _calls(run, 1)
        n = max(1, int(target_s / max(t, 1e-7)))
        if n > 1:
            n = max(1, int(target_s / _calls(run, min(n, 10))))
        cells[k].n = n
    for _ in range(repeat):                       # rounds, the methods interleaved
        for k, run in runs.items():
            cells[k].best_s = min(cells[k].best_s, _calls(run, cells[k].n))
    return cells


def ratio_of(cells, k):
    c, p = cells[k], cells["primal"].best_s
    return c.best_s / p if c.status == "ok" and c.best_s < math.inf else None


def fmt_ratio(cells, k):
    c = cells.get(k)
    if c is None or c.status == "n/a":
        return "—"
    if c.status != "ok":
        return c.status
    r = ratio_of(cells, k)
    s = f"{r:.3g}" if r >= 0.01 else f"{r:.2g}"
    return s + ("" if c.match in (True, None) else " ✗")


def fmt_s(t):
    if t is None or t == math.inf:
        return "—"
    return f"{t * 1e6:.3g} µs" if t < 1e-3 else f"{t * 1e3:.3g} ms" if t < 1 else f"{t:.3g} s"


# ---------------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------------
def header(meths):
    import platform
    lines = [f"Python {platform.python_version()}, NumPy {np.__version__}, "
             f"SciPy {scipy.__version__}, s2sad {getattr(s2sad, '__version__', '?')}"]
    lines.append("peers: " + (", ".join(f"{m.name} {m.version()}" for m in meths
                                        if not isinstance(m, (Primal, S2sad))) or "none importable"))
    jm = next((m for m in meths if isinstance(m, S2sad) and m.jit), None)
    if jm:
        lines[-1] += f"; s2sad numba mode: {jm.version()}"
    try:
        aff = len(os.sched_getaffinity(0))
    except AttributeError:
        aff = os.cpu_count()
    threads = {v: os.environ.get(v, "unset") for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")}
    cpu = " ".join(x for x in (platform.machine(), platform.processor()) if x)
    lines.append(f"machine: {platform.platform()}, {cpu}, {os.cpu_count()} CPUs ({aff} usable), "
                 + ", ".join(f"{k}={v}" for k, v in threads.items()))
    lines.append(time.strftime("date: %Y-%m-%d %H:%M %Z"))
    return lines


def table(results, names, markdown):
    cols = ["case", "primal"] + [n for n in names if n != "primal"]
    rows = [[case, fmt_s(cells["primal"].best_s)] + [fmt_ratio(cells, n) for n in cols[2:]]
            for case, cells in results.items()]
    if markdown:
        out = ["| " + " | ".join(cols) + " |", "|---|" + "---:|" * (len(cols) - 1)]
        out += ["| " + " | ".join(r) + " |" for r in rows]
    else:
        w = [max(len(str(x)) for x in col) for col in zip(cols, *rows)]
        out = ["  ".join(str(x).rjust(wi) if i else str(x).ljust(wi)
                         for i, (x, wi) in enumerate(zip(r, w))) for r in [cols] + rows]
    return "\n".join(out)


def first_call_table(results, names, markdown):
    """s2sad's build time, Numba's and JAX's compile time: the first call, apart from run time."""
    cols = [n for n in names if n in ("s2sad", "s2sad numba", "JAX jit")]
    if not cols:
        return ""
    hdr = ["case"] + [f"{n} first call" for n in cols]
    rows = [[case] + [fmt_s(cells[n].first_s) if cells[n].status == "ok" else cells[n].status
                      for n in cols] for case, cells in results.items()]
    if markdown:
        out = ["| " + " | ".join(hdr) + " |", "|---|" + "---:|" * len(cols)]
        out += ["| " + " | ".join(r) + " |" for r in rows]
    else:
        w = [max(len(str(x)) for x in col) for col in zip(hdr, *rows)]
        out = ["  ".join(str(x).rjust(wi) if i else str(x).ljust(wi)
                         for i, (x, wi) in enumerate(zip(r, w))) for r in [hdr] + rows]
    return "\n".join(out)


def plot(results, names, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"(no chart: matplotlib is not importable; {path} not written)")
        return
    names = [n for n in names if n != "primal"]
    cases = list(results)
    fig, ax = plt.subplots(figsize=(max(8, 1.1 * len(cases)), 4.8))
    width = 0.8 / max(1, len(names))
    for i, n in enumerate(names):
        xs, ys = [], []
        for j, case in enumerate(cases):
            r = ratio_of(results[case], n)
            if r is not None:
                xs.append(j + (i - (len(names) - 1) / 2) * width)
                ys.append(r)
        ax.bar(xs, ys, width, label=n)
    ax.set_yscale("log")
    ax.axhline(1.0, color="k", lw=0.6)
    ax.set_xticks(range(len(cases)))
    ax.set_xticklabels(cases, rotation=35, ha="right", fontsize=8)
    ax.set_ylabel("gradient time / primal time")
    ax.set_title("Mooncake inter-framework cases, Python ports (lower is better)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"chart: {path}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", help="comma-separated case names (default: all 13)")
    ap.add_argument("--methods", help="comma-separated, of s2sad,numba,jax,torch,autograd "
                    "(default: all that are importable)")
    ap.add_argument("--repeat", type=int, default=7, help="rounds per case; the best is kept")
    ap.add_argument("--quick", action="store_true", help="smoke test: 1 round of about 10 ms")
    ap.add_argument("--threads", type=int, help="threads for BLAS/OpenMP/XLA/torch (set before "
                    "NumPy is imported)")
    ap.add_argument("--json", help="write the measurements to this file")
    ap.add_argument("--png", help="write a grouped bar chart (log scale) to this file")
    ap.add_argument("--markdown", action="store_true", help="print the tables as Markdown")
    a = ap.parse_args(argv)
    cases = a.cases.split(",") if a.cases else list(CASES)
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        ap.error(f"unknown case(s) {unknown}; the cases are {list(CASES)}")
    repeat, target = (1, 0.01) if a.quick else (a.repeat, 0.15)
    meths = methods(a.methods.split(",") if a.methods else None)
    if a.threads:
        for m in meths:
            if isinstance(m, Torch):
                m.torch.set_num_threads(a.threads)
    for line in header(meths):
        print(("" if a.markdown else "# ") + line)
    names = [m.name for m in meths]
    # the rule tables load on the first derivative built: not any one case's build time
    s2sad.value_and_grad(lambda x: np.sum(np.sin(x)))(np.ones(2))
    results, errors = {}, []
    for case in cases:
        t0 = time.perf_counter()
        results[case] = cells = run_case(case, meths, repeat, target)
        print(f"  {case}: {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        errors += [(case, n, c.status, c.error) for n, c in cells.items() if c.error]
    print()
    print("gradient time / primal time (value and gradient; lower is better; ✗: disagrees with "
          "s2sad's gradient)")
    print(table(results, names, a.markdown))
    print()
    print("first call (s2sad: build; Numba mode: build and compile; JAX: trace and compile)")
    print(first_call_table(results, names, a.markdown))
    seen = {}
    for case, n, status, err in errors:            # one line per method and distinct message
        seen.setdefault((n, status, err.splitlines()[0] if err else ""), []).append(case)
    for (n, status, err), cs in seen.items():
        print(f"\n{n}, {status} on {', '.join(cs) if len(cs) < len(results) else 'every case'}:"
              f" {err}")
    if a.json:
        import json
        with open(a.json, "w") as fh:
            json.dump({"header": header(meths), "methods": names,
                       "cases": {c: {n: cell.as_dict() for n, cell in cells.items()}
                                 for c, cells in results.items()}}, fh, indent=1)
        print(f"json: {a.json}")
    if a.png:
        plot(results, names, a.png)


if __name__ == "__main__":
    main()
