"""Bayesian logistic regression sampled with a hand-written Hamiltonian Monte Carlo loop.

The log density is plain NumPy/SciPy: a normal prior from ``scipy.stats.norm.logpdf`` and a
Bernoulli likelihood through ``scipy.special.log_expit``.  ``s2sad.grad`` gives its gradient for the
leapfrog steps.

Run:  python examples/bayesian_logistic_hmc.py
      python examples/bayesian_logistic_hmc.py --quick    # fewer samples
                                                           # (also S2SAD_EXAMPLES_QUICK=1)
"""
import argparse
import os

import numpy as np
from scipy import special, stats

import s2sad


def log_density(w, X, y, prior_scale):
    """log p(w | X, y) up to a constant: N(0, prior_scale^2) prior, logistic likelihood."""
    log_prior = np.sum(stats.norm.logpdf(w, 0.0, prior_scale))
    z = X @ w
    log_lik = np.sum(y * special.log_expit(z) + (1 - y) * special.log_expit(-z))
    return log_prior + log_lik


grad_log_density = s2sad.grad(log_density)          # with respect to w


def make_data(n=200, true_w=(1.5, -2.0, 0.5), seed=0):
    rng = np.random.default_rng(seed)
    true_w = np.asarray(true_w, dtype=float)
    X = np.column_stack([np.ones(n), rng.standard_normal((n, len(true_w) - 1))])
    y = (rng.random(n) < special.expit(X @ true_w)).astype(float)
    return X, y, true_w


def hmc(X, y, n_samples=400, n_warmup=100, step=0.12, n_leapfrog=10, prior_scale=5.0, seed=1):
    """Returns (samples after warm-up, acceptance rate)."""
    rng = np.random.default_rng(seed)
    w = np.zeros(X.shape[1])
    logp, g = log_density(w, X, y, prior_scale), grad_log_density(w, X, y, prior_scale)
    samples, accepted = [], 0
    for i in range(n_warmup + n_samples):
        p = rng.standard_normal(w.shape)
        w_new, g_new = w.copy(), g.copy()
        p_new = p + 0.5 * step * g_new                   # leapfrog
        for k in range(n_leapfrog):
            w_new = w_new + step * p_new
            g_new = grad_log_density(w_new, X, y, prior_scale)
            if k < n_leapfrog - 1:
                p_new = p_new + step * g_new
        p_new = p_new + 0.5 * step * g_new
        logp_new = log_density(w_new, X, y, prior_scale)
        log_accept = (logp_new - 0.5 * p_new @ p_new) - (logp - 0.5 * p @ p)
        if np.log(rng.random()) < log_accept:
            w, logp, g = w_new, logp_new, g_new
            if i >= n_warmup:
                accepted += 1
        if i >= n_warmup:
            samples.append(w)
    return np.array(samples), accepted / n_samples


def main(n=200, n_samples=400, n_warmup=100, verbose=True):
    X, y, true_w = make_data(n)
    samples, rate = hmc(X, y, n_samples=n_samples, n_warmup=n_warmup)
    mean, std = samples.mean(axis=0), samples.std(axis=0)
    if verbose:
        print(f"acceptance rate: {rate:.2f}")
        print("coefficient   true   posterior mean +- sd")
        for j, (t, m, s) in enumerate(zip(true_w, mean, std)):
            print(f"  w[{j}]      {t:6.2f}   {m:6.2f} +- {s:.2f}")
    return mean, std, rate, true_w


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", default=bool(os.environ.get(
        "S2SAD_EXAMPLES_QUICK")), help="a small setting that runs in a few seconds")
    if ap.parse_args().quick:
        main(n_samples=100, n_warmup=50)
    else:
        main()
