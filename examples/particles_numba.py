# Gradients of Numba code (issue 12): tested by tests/examples/test_numba_example.py
# s2sad-example: own-test
"""Gradients of a Numba simulation: a chain of particles joined by springs, with drag.

Run:  python examples/particles_numba.py [--particles 16] [--steps 200] [--repeat 5] [--python]

N particles on a line, each joined to its neighbours (the first one to a wall at 0) by springs of
stiffness ``k`` and rest length 1, slowed by quadratic drag ``c v |v|``, are integrated for T steps
by semi-implicit Euler.  The functions are ordinary ``@numba.njit`` code: loops over steps and
particles, float64 arrays, an ``if``.  The loss compares the final positions with targets and adds
the final kinetic energy.

s2sad differentiates the loss with respect to the initial velocities and the two physical
parameters straight from the Numba functions (it reads their Python source, ``.py_func``, and
recurses into the njit functions they call), then the example checks the gradient against central
finite differences of the compiled primal and times both.

The derivative is compiled with numba too (``jit=True``, the default for a function decorated
with ``numba.njit``, with the options it was compiled with); ``--python`` runs it as Python
instead, to compare (``jit=False``).
"""
import argparse
import sys
import time

import numba
import numpy as np

import s2sad

REST = 1.0          # rest length of every spring
JIT = True          # compile the derivative with numba too (--python: not); the primal always is


@numba.njit
def step(x, v, k, c, dt):
    """One semi-implicit Euler step of the chain: new positions and velocities."""
    n = x.shape[0]
    xn = np.empty(n)
    vn = np.empty(n)
    for i in range(n):
        left = x[i - 1] if i > 0 else 0.0           # the wall, for the first particle
        f = -k * (x[i] - left - REST)
        if i < n - 1:
            f = f + k * (x[i + 1] - x[i] - REST)
        vi = v[i] + dt * (f - c * v[i] * abs(v[i]))
        vn[i] = vi
        xn[i] = x[i] + dt * vi
    return xn, vn


@numba.njit
def simulate(x0, v0, k, c, dt, steps):
    x, v = x0, v0
    for t in range(steps):
        x, v = step(x, v, k, c, dt)
    return x, v


@numba.njit
def loss(x0, v0, k, c, dt, steps, target):
    x, v = simulate(x0, v0, k, c, dt, steps)
    e = 0.0
    for i in range(x.shape[0]):
        d = x[i] - target[i]
        e = e + d * d
    return e + 0.5 * np.sum(v ** 2)


def gradient_function(jit):
    """``value_and_grad`` of the loss w.r.t. v0, k and c; ``jit=`` where this s2sad has it."""
    wrt = ("v0", "k", "c")
    try:
        return s2sad.value_and_grad(loss, wrt=wrt, jit=jit)
    except TypeError:                 # an s2sad without the jit keyword: the Python derivative
        if jit:
            print("(this s2sad has no jit=: the derivative runs as Python)")
        return s2sad.value_and_grad(loss, wrt=wrt)


def best_time(f, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return min(times)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--particles", type=int, default=16)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--python", dest="jit", action="store_false", default=JIT,
                   help="run the derivative as Python (jit=False)")
    p.add_argument("--jit", dest="jit", action="store_true", help="the default: compiled")
    a = p.parse_args(argv)

    rng = np.random.default_rng(0)
    n, steps, dt = a.particles, a.steps, 0.01
    x0 = np.arange(1, n + 1) * REST + 0.1 * rng.standard_normal(n)
    v0 = 0.3 * rng.standard_normal(n)
    k, c = 2.0, 0.1
    target = np.arange(1, n + 1) * REST * 1.05
    args = (x0, v0, k, c, dt, steps, target)

    t0 = time.perf_counter()
    value = loss(*args)                                     # (compiles the primal)
    compile_primal = time.perf_counter() - t0
    vg = gradient_function(a.jit)
    t0 = time.perf_counter()
    value2, (g_v0, g_k, g_c) = vg(*args)                    # (builds the derivative)
    build_grad = time.perf_counter() - t0
    print(f"{n} particles, {steps} steps: loss = {value:.12g}")
    print(f"d loss / d k  = {g_k:.12g}")
    print(f"d loss / d c  = {g_c:.12g}")
    print(f"d loss / d v0 = {np.array2string(g_v0, precision=6, max_line_width=96)}")

    # central finite differences of the compiled primal: d/dk, d/dc, and v0 along a direction
    h = 1e-6
    fd_k = (loss(x0, v0, k + h, c, dt, steps, target) -
            loss(x0, v0, k - h, c, dt, steps, target)) / (2 * h)
    fd_c = (loss(x0, v0, k, c + h, dt, steps, target) -
            loss(x0, v0, k, c - h, dt, steps, target)) / (2 * h)
    u = rng.standard_normal(n)
    fd_u = (loss(x0, v0 + h * u, k, c, dt, steps, target) -
            loss(x0, v0 - h * u, k, c, dt, steps, target)) / (2 * h)
    errs = {"k": (g_k, fd_k), "c": (g_c, fd_c), "v0 . u": (g_v0 @ u, fd_u)}
    worst = 0.0
    for name, (ad, fd) in errs.items():
        rel = abs(ad - fd) / max(abs(fd), 1e-12)
        worst = max(worst, rel)
        print(f"check {name:7s} s2sad {ad: .10e}  finite differences {fd: .10e}  rel. error {rel:.1e}")
    ok = worst < 1e-5 and abs(value2 - value) <= 1e-12 * abs(value)
    print(f"check: {'ok' if ok else 'FAILED'} (max relative error {worst:.1e})")

    t_primal = best_time(lambda: loss(*args), a.repeat)
    t_grad = best_time(lambda: vg(*args), a.repeat)
    mode = "numba-compiled derivative" if a.jit else "Python derivative"
    print(f"time: primal (njit) {t_primal * 1e3:.3f} ms, value and gradient ({mode}) "
          f"{t_grad * 1e3:.3f} ms, ratio {t_grad / t_primal:.1f}")
    print(f"      first calls: primal compile {compile_primal:.2f} s, derivative build "
          f"{build_grad:.2f} s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
