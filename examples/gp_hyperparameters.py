"""Gaussian-process regression: fit the kernel's hyperparameters by maximising the log marginal
likelihood, with its gradient from s2sad through a Cholesky factorisation.

    python examples/gp_hyperparameters.py            # 150 noisy observations
    python examples/gp_hyperparameters.py --quick    # 40 observations (also S2SAD_EXAMPLES_QUICK=1)

The kernel is a squared exponential, k(x, x') = variance * exp(-(x - x')^2 / (2 lengthscale^2)),
plus white noise.  The negative log marginal likelihood

    0.5 y^T K^{-1} y + sum(log diag L) + n/2 log(2 pi),     K = L L^T,

is written with ``np.linalg.cholesky`` and ``scipy.linalg.cho_solve``, both of which s2sad has rules
for (``s2sad rules | grep -i cho``).  It is a function of the logarithms of the three
hyperparameters (so that they stay positive), minimised with L-BFGS.  The data are drawn from a GP
with known hyperparameters; the script prints the fitted ones next to the truth and saves
``gp_hyperparameters.png`` (the data, the posterior mean and a 95% band).
"""
import argparse
import os

import numpy as np
import scipy.linalg
import scipy.optimize

import s2sad
from s2sad.testing import check_grads

TRUE = {"lengthscale": 0.8, "variance": 1.5, "noise": 0.05}      # noise: a variance


def kernel(xa, xb, lengthscale, variance):
    d = xa[:, None] - xb[None, :]
    return variance * np.exp(-0.5 * d * d / (lengthscale * lengthscale))


def neg_log_marginal_likelihood(log_theta, x, y):
    lengthscale, variance, noise = np.exp(log_theta[0]), np.exp(log_theta[1]), np.exp(log_theta[2])
    n = x.shape[0]
    K = kernel(x, x, lengthscale, variance) + noise * np.eye(n)
    L = np.linalg.cholesky(K)
    alpha = scipy.linalg.cho_solve((L, True), y)        # K^{-1} y
    return 0.5 * y @ alpha + np.sum(np.log(np.diag(L))) + 0.5 * n * np.log(2 * np.pi)


def posterior(x, y, x_new, lengthscale, variance, noise):
    """Mean and standard deviation of the GP's prediction of the noise-free function at x_new."""
    K = kernel(x, x, lengthscale, variance) + noise * np.eye(len(x))
    L = np.linalg.cholesky(K)
    Ks = kernel(x, x_new, lengthscale, variance)
    mean = Ks.T @ scipy.linalg.cho_solve((L, True), y)
    v = scipy.linalg.solve_triangular(L, Ks, lower=True)
    var = variance - np.sum(v * v, axis=0)
    return mean, np.sqrt(np.maximum(var, 0.0))


def make_data(n, seed=0):
    """n noisy observations of one draw of the true GP, at random points of [-5, 5]."""
    rng = np.random.default_rng(seed)
    x = np.sort(rng.uniform(-5.0, 5.0, n))
    K = kernel(x, x, TRUE["lengthscale"], TRUE["variance"]) + 1e-9 * np.eye(n)
    f = np.linalg.cholesky(K) @ rng.standard_normal(n)
    return x, f + np.sqrt(TRUE["noise"]) * rng.standard_normal(n)


def save_plot(x, y, fitted, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot (pip install matplotlib)")
        return
    grid = np.linspace(-5.5, 5.5, 300)
    mean, sd = posterior(x, y, grid, *fitted)
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.fill_between(grid, mean - 1.96 * sd, mean + 1.96 * sd, alpha=0.25, label="95% band")
    ax.plot(grid, mean, label="posterior mean")
    ax.plot(x, y, "k.", label="observations")
    ax.set(xlabel="x", ylabel="y", title="GP with fitted hyperparameters")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    print(f"plot saved to {path}")


def main(quick=False, out="."):
    n = 40 if quick else 150
    x, y = make_data(n)
    start = np.log([2.0, 0.5, 0.5])                      # lengthscale, variance, noise

    check_grads(neg_log_marginal_likelihood, (start, x, y), wrt=0)
    print("gradient check passed (s2sad vs finite differences)")

    value_and_grad = s2sad.value_and_grad(neg_log_marginal_likelihood)
    history = [neg_log_marginal_likelihood(start, x, y)]
    print(f"iteration   0: -log marginal likelihood {history[0]:.4f}")

    def report(xk):
        history.append(neg_log_marginal_likelihood(xk, x, y))
        print(f"iteration {len(history) - 1:3d}: -log marginal likelihood {history[-1]:.4f}")

    result = scipy.optimize.minimize(value_and_grad, start, args=(x, y), jac=True,
                                     method="L-BFGS-B", callback=report)
    fitted = np.exp(result.x)
    print(f"converged: {result.success} ({result.message})")
    print()
    print(f"{n} observations      true    fitted")
    for (name, t), f in zip(TRUE.items(), fitted):
        print(f"  {name:17s} {t:6.3f}  {f:8.3f}")
    print(f"-log marginal likelihood: {history[0]:.3f} -> {history[-1]:.3f} "
          f"(at the true hyperparameters: "
          f"{neg_log_marginal_likelihood(np.log(list(TRUE.values())), x, y):.3f})")
    print("(one draw of the function on [-5, 5] says little about the variance: the fitted values "
          "maximise this data's likelihood, the true ones need not)")
    compare_with_sklearn(x, y, fitted, history[-1])
    save_plot(x, y, fitted, os.path.join(out, "gp_hyperparameters.png"))
    return fitted


def compare_with_sklearn(x, y, fitted, nlml):
    """The same fit by scikit-learn's GaussianProcessRegressor (its own hand-written gradient)."""
    try:
        from sklearn.gaussian_process import GaussianProcessRegressor
        from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel
    except ImportError:
        print("scikit-learn is not installed: no comparison (pip install scikit-learn)")
        return
    k = ConstantKernel(0.5, (1e-5, 1e5)) * RBF(2.0, (1e-5, 1e5)) + WhiteKernel(0.5, (1e-8, 1e5))
    gpr = GaussianProcessRegressor(k, normalize_y=False).fit(x[:, None], y)
    p = gpr.kernel_.get_params()
    theirs = np.array([p["k1__k2__length_scale"], p["k1__k1__constant_value"],
                       p["k2__noise_level"]])
    print("scikit-learn finds   " + "  ".join(f"{v:.3f}" for v in theirs) +
          f"  (-log marginal likelihood {-gpr.log_marginal_likelihood_value_:.3f})")
    same_value = abs(-gpr.log_marginal_likelihood_value_ - nlml) < 1e-3
    if np.allclose(theirs, fitted, rtol=1e-2) and same_value:
        print("agrees with scikit-learn's GaussianProcessRegressor")
    else:
        print("differs from scikit-learn's fit (another local optimum?)")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", default=bool(os.environ.get(
        "S2SAD_EXAMPLES_QUICK")), help="a small setting that runs in a few seconds")
    ap.add_argument("--out", default=".", help="folder for the PNG plot")
    args = ap.parse_args()
    main(quick=args.quick, out=args.out)
