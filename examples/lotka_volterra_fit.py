"""Fit a Lotka-Volterra predator-prey model to noisy observations: scipy.optimize.minimize with
the gradient s2sad computes through scipy.integrate.odeint.

Run:  python examples/lotka_volterra_fit.py
      python examples/lotka_volterra_fit.py --quick    # fewer points and iterations
                                                        # (also S2SAD_EXAMPLES_QUICK=1)

    prey' = alpha * prey - beta * prey * pred
    pred' = delta * prey * pred - gamma * pred

The loss is the mean squared error between the model's trajectory and the observations, as a
function of the logarithms of the four parameters (so that they stay positive).  s2sad
differentiates it through ``odeint`` by the adjoint method: an augmented ODE solved backwards in
time, whose right-hand side uses s2sad's own derivative of ``lotka_volterra``.
"""
import argparse
import os

import numpy as np
import scipy.integrate
import scipy.optimize

import s2sad

TRUE_PARAMS = np.array([1.0, 0.1, 1.5, 0.075])       # alpha, beta, gamma, delta
Z0 = np.array([10.0, 5.0])                           # prey, predators at t = 0


def lotka_volterra(z, t, p):
    prey, pred = z[0], z[1]
    alpha, beta, gamma, delta = p[0], p[1], p[2], p[3]
    return np.array([alpha * prey - beta * prey * pred, delta * prey * pred - gamma * pred])


def loss(log_params, z0, ts, observed):
    traj = scipy.integrate.odeint(lotka_volterra, z0, ts, args=(np.exp(log_params),),
                                  rtol=1e-6, atol=1e-6)
    r = traj - observed
    return np.sum(r * r) / r.size


def observations(n_times=20, t_end=10.0, noise=0.5, seed=0):
    """Noisy samples of the true model's trajectory."""
    rng = np.random.default_rng(seed)
    ts = np.linspace(0.0, t_end, n_times)
    clean = scipy.integrate.odeint(lotka_volterra, Z0, ts, args=(TRUE_PARAMS,), rtol=1e-10,
                                   atol=1e-10)
    return ts, clean + noise * rng.standard_normal(clean.shape)


def fit(n_times=20, t_end=10.0, max_iter=100, verbose=True):
    """Fit the parameters from a guess 20% off; returns (fitted parameters, loss history)."""
    ts, observed = observations(n_times, t_end)
    guess = np.log(TRUE_PARAMS * np.array([1.2, 0.8, 0.8, 1.2]))
    value_and_grad = s2sad.value_and_grad(loss)          # (loss, d loss / d log_params)
    history = [loss(guess, Z0, ts, observed)]
    if verbose:
        print(f"iteration   0: loss {history[0]:.6f}")

    def report(xk):
        history.append(loss(xk, Z0, ts, observed))
        if verbose:
            print(f"iteration {len(history) - 1:3d}: loss {history[-1]:.6f}")

    result = scipy.optimize.minimize(value_and_grad, guess, args=(Z0, ts, observed), jac=True,
                                     method="L-BFGS-B", callback=report,
                                     options={"maxiter": max_iter})
    return np.exp(result.x), history


def main(quick=False):
    params, history = fit(n_times=10, max_iter=10) if quick else fit()
    print()
    print("             alpha     beta    gamma    delta")
    print("true      " + "".join(f"{v:9.4f}" for v in TRUE_PARAMS))
    print("fitted    " + "".join(f"{v:9.4f}" for v in params))
    print(f"loss: {history[0]:.4f} -> {history[-1]:.4f} in {len(history) - 1} iterations")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", default=bool(os.environ.get(
        "S2SAD_EXAMPLES_QUICK")), help="a small setting that runs in a few seconds")
    main(quick=ap.parse_args().quick)
