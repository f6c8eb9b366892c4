"""Gradients of Numba kernels: ``s2sad.value_and_grad(kernel, jit=True)`` of functions decorated
with ``numba.njit``, as Numba users write them (loops over arrays, ``math`` functions, buffers
swapped each time step, ``prange``), timed against the compiled kernel itself in one run.

    python benchmarks/numba_kernels.py [--rounds 7] [--only heat,conv2d] [--python]

For each kernel: the primal's time (the njit function), the compiled gradient's (value and
gradient of every float argument) and their ratio; with ``--python``, Python mode's too (slow on
loops: that is what jit=True is for).  Compile times are reported apart: the primal's first call
and the gradient's (s2sad's build and Numba's compile; the disk cache is off in this process).
Each gradient is checked once against Python mode's (1e-9 relative).  Quote only ratios measured
in one run.
"""
import argparse
import math
import os
import time
import timeit
import warnings

os.environ["S2SAD_CACHE"] = "0"     # (compile times, not the cache's)

import numba  # noqa: E402
import numpy as np  # noqa: E402

import s2sad  # noqa: E402


@numba.njit
def heat(u0, kappa):                        # explicit heat equation, buffers swapped per step
    u = u0.copy()
    un = np.empty_like(u)
    for t in range(100):
        un[0] = u[0]
        un[-1] = u[-1]
        for i in range(1, u.shape[0] - 1):
            un[i] = u[i] + kappa * (u[i + 1] - 2.0 * u[i] + u[i - 1])
        u, un = un, u
    return np.sum(u ** 2)


@numba.njit
def ar1_loglik(y, phi, sigma):              # a time-series likelihood
    ll = 0.0
    for t in range(1, y.shape[0]):
        e = y[t] - phi * y[t - 1]
        ll += -0.5 * (e / sigma) ** 2 - math.log(sigma)
    return ll


@numba.njit
def rhs(y, a, b):
    return np.array([a * y[0] - b * y[0] * y[1], -y[1] + b * y[0] * y[1]])


@numba.njit
def rk4(y0, a, b):                          # Lotka-Volterra, 100 RK4 steps through an njit rhs
    y = y0.copy()
    h = 0.01
    for _ in range(100):
        k1 = rhs(y, a, b)
        k2 = rhs(y + 0.5 * h * k1, a, b)
        k3 = rhs(y + 0.5 * h * k2, a, b)
        k4 = rhs(y + h * k3, a, b)
        y = y + h / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
    return y[0] + y[1]


@numba.njit
def conv2d(img, k):                         # a valid 2-d convolution, then tanh
    n, m = img.shape
    p, q = k.shape
    out = np.zeros((n - p + 1, m - q + 1))
    for i in range(n - p + 1):
        for j in range(m - q + 1):
            acc = 0.0
            for a in range(p):
                for b in range(q):
                    acc += img[i + a, j + b] * k[a, b]
            out[i, j] = acc
    return np.sum(np.tanh(out))


@numba.njit(parallel=True)
def pair_energy(x):                         # a prange loop over pairs
    n = x.shape[0]
    e = np.zeros(n)
    for i in numba.prange(n):
        for j in range(n):
            if i != j:
                d = x[i] - x[j]
                e[i] += 1.0 / math.sqrt(d * d + 0.1)
    return e.sum()


@numba.njit
def lennard_jones(pos):
    n = pos.shape[0]
    e = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            r2 = 0.0
            for k in range(3):
                d = pos[i, k] - pos[j, k]
                r2 += d * d
            ir6 = 1.0 / r2 ** 3
            e += 4.0 * (ir6 * ir6 - ir6)
    return e


@numba.njit
def gmm_loglik(x, mu, log_s, w):            # a mixture's log likelihood, logsumexp by hand
    n, k = x.shape[0], mu.shape[0]
    ll = 0.0
    lp = np.empty(k)
    for i in range(n):
        m = -np.inf
        for j in range(k):
            z = (x[i] - mu[j]) / math.exp(log_s[j])
            lp[j] = math.log(w[j]) - 0.5 * z * z - log_s[j]
            if lp[j] > m:
                m = lp[j]
        s = 0.0
        for j in range(k):
            s += math.exp(lp[j] - m)
        ll += m + math.log(s)
    return ll


@numba.njit
def thomas(a, b, c, d):                     # a tridiagonal solve
    n = d.shape[0]
    cp = np.empty(n)
    dp = np.empty(n)
    cp[0] = c[0] / b[0]
    dp[0] = d[0] / b[0]
    for i in range(1, n):
        m = b[i] - a[i] * cp[i - 1]
        cp[i] = c[i] / m
        dp[i] = (d[i] - a[i] * dp[i - 1]) / m
    x = np.empty(n)
    x[n - 1] = dp[n - 1]
    for i in range(n - 2, -1, -1):
        x[i] = dp[i] - cp[i] * x[i + 1]
    return np.sum(x ** 2)


@numba.njit
def verlet(pos0, vel0, k):                  # velocity Verlet, arrays updated with +=
    pos = pos0.copy()
    vel = vel0.copy()
    dt = 0.01
    acc = -k * pos
    for step in range(100):
        pos += dt * vel + 0.5 * dt * dt * acc
        new_acc = -k * pos
        vel += 0.5 * dt * (acc + new_acc)
        acc = new_acc
    return np.sum(pos ** 2) + np.sum(vel ** 2)


def cases(rng):
    return {
        "heat": (heat, (rng.random(200), 0.2), (0, 1)),
        "ar1_loglik": (ar1_loglik, (rng.standard_normal(10000), 0.5, 1.3), (0, 1, 2)),
        "rk4": (rk4, (np.array([1.0, 0.5]), 1.1, 0.4), (0, 1, 2)),
        "conv2d": (conv2d, (rng.random((64, 64)), rng.random((5, 5))), (0, 1)),
        "pair_energy": (pair_energy, (rng.random(300),), (0,)),
        "lennard_jones": (lennard_jones, (np.arange(150.0).reshape(50, 3) * 1.1 +
                                          rng.random((50, 3)),), (0,)),
        "gmm_loglik": (gmm_loglik, (rng.standard_normal(2000), np.array([-1.0, 0.5, 2.0]),
                                    np.array([0.1, -0.2, 0.3]), np.array([0.3, 0.3, 0.4])),
                       (0, 1, 2, 3)),
        "thomas": (thomas, (rng.random(1000), 4 + rng.random(1000), rng.random(1000),
                            rng.random(1000)), (0, 1, 2, 3)),
        "verlet": (verlet, (rng.standard_normal(100), rng.standard_normal(100), 1.3), (0, 1, 2)),
    }


def _best(call, rounds, budget=0.05):
    call()
    t = timeit.timeit(call, number=1)
    n = max(1, int(budget / max(t, 1e-7)))
    return min(timeit.repeat(call, number=n, repeat=rounds)) / n


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--only", default=None)
    ap.add_argument("--python", action="store_true", help="time Python mode too")
    a = ap.parse_args(argv)
    warnings.simplefilter("error", s2sad.errors.JitFallbackWarning)
    rng = np.random.default_rng(0)
    table = cases(rng)
    names = a.only.split(",") if a.only else list(table)
    print(f"date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, numba {numba.__version__}, "
          f"NumPy {np.__version__}")
    head = "| kernel | primal | jit gradient | gradient / primal |"
    if a.python:
        head += " Python mode / primal |"
    head += " primal compile | gradient build + compile |"
    print(head)
    print("|---" * (head.count("|") - 1) + "|")
    for name in names:
        f, args, wrt = table[name]
        t0 = time.perf_counter()
        f(*args)
        c_primal = time.perf_counter() - t0
        vg = s2sad.value_and_grad(f, wrt=wrt, jit=True)
        t0 = time.perf_counter()
        v, g = vg(*args)
        c_grad = time.perf_counter() - t0
        py = s2sad.value_and_grad(f, wrt=wrt)
        vp, gp = py(*args)
        for x, y in zip(g, gp):
            np.testing.assert_allclose(x, y, rtol=1e-9, atol=1e-9 * max(1.0, np.abs(y).max()))
        tp = _best(lambda: f(*args), a.rounds)
        tg = _best(lambda: vg(*args), a.rounds)
        row = f"| {name} | {tp * 1e6:.1f} µs | {tg * 1e6:.1f} µs | {tg / tp:.2f} |"
        if a.python:
            row += f" {_best(lambda: py(*args), 3, budget=0.2) / tp:.1f} |"
        row += f" {c_primal:.2f} s | {c_grad:.2f} s |"
        print(row, flush=True)


if __name__ == "__main__":
    main()
