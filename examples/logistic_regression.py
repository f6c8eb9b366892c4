"""Logistic regression fitted with scipy.optimize.minimize, the gradient from s2sad.

    python examples/logistic_regression.py            # 5,000 samples, 8 features
    python examples/logistic_regression.py --quick    # a small version
                                                      # (also S2SAD_EXAMPLES_QUICK=1)

Synthetic data with known coefficients: the loss is the mean negative log-likelihood (plus a small
L2 penalty) written in NumPy; ``s2sad.value_and_grad(loss)`` returns ``(loss, gradient)``, which is
what ``minimize(..., jac=True)`` asks for.  The script checks the gradient once against finite
differences, prints the fit's progress, the fitted coefficients next to the true ones and the
accuracy on held-out data, and saves ``logistic_regression.png``.
"""
import argparse
import os

import numpy as np
import scipy.optimize

import s2sad
from s2sad.testing import check_grads


def loss(w, X, y, l2):
    """Mean negative log-likelihood of labels y (0/1) under P(y=1) = sigmoid(X @ w), plus
    l2/2 |w|^2 (the intercept w[0] is not penalised)."""
    z = X @ w
    nll = np.mean(np.logaddexp(0.0, z) - y * z)
    return nll + 0.5 * l2 * np.sum(w[1:] * w[1:])


def make_data(n, n_features, seed=0):
    rng = np.random.default_rng(seed)
    true_w = np.round(rng.uniform(-2.0, 2.0, n_features + 1), 2)      # intercept first
    X = np.column_stack([np.ones(n), rng.standard_normal((n, n_features))])
    p = 1.0 / (1.0 + np.exp(-(X @ true_w)))
    y = (rng.random(n) < p).astype(float)
    return X, y, true_w


def accuracy(w, X, y):
    return np.mean((X @ w > 0) == (y > 0.5))


def save_plot(history, true_w, fitted, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot (pip install matplotlib)")
        return
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
    a.plot(history, marker=".")
    a.set(xlabel="L-BFGS iteration", ylabel="training loss", title="loss")
    k = np.arange(len(true_w))
    b.bar(k - 0.2, true_w, width=0.4, label="true")
    b.bar(k + 0.2, fitted, width=0.4, label="fitted")
    b.set(xlabel="coefficient (0 = intercept)", title="coefficients")
    b.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    print(f"plot saved to {path}")


def main(quick=False, out="."):
    n, d = (400, 4) if quick else (5000, 8)
    X, y, true_w = make_data(n + n // 4, d)
    X_train, y_train, X_test, y_test = X[:n], y[:n], X[n:], y[n:]
    l2 = 1e-3
    w0 = np.zeros(d + 1)

    # once: s2sad's gradient against central finite differences at a random point
    check_grads(loss, (np.random.default_rng(1).standard_normal(d + 1), X_train, y_train, l2),
                wrt=0)
    print("gradient check passed (s2sad vs finite differences)")

    value_and_grad = s2sad.value_and_grad(loss)          # (loss, d loss / d w)
    history = [loss(w0, X_train, y_train, l2)]
    print(f"iteration   0: loss {history[0]:.6f}")

    def report(wk):
        history.append(loss(wk, X_train, y_train, l2))
        print(f"iteration {len(history) - 1:3d}: loss {history[-1]:.6f}")

    result = scipy.optimize.minimize(value_and_grad, w0, args=(X_train, y_train, l2), jac=True,
                                     method="L-BFGS-B", callback=report)
    w = result.x
    print(f"converged: {result.success} ({result.message})")
    print()
    print("coefficient           true   fitted")
    for j, (t, f) in enumerate(zip(true_w, w)):
        name = f"w[{j}]" + (" (intercept)" if j == 0 else "")
        print(f"  {name:18s} {t:6.2f}  {f:7.3f}")
    print(f"max |fitted - true| = {np.max(np.abs(w - true_w)):.3f}")
    print(f"train accuracy: {accuracy(w, X_train, y_train):.3f}")
    print(f"test accuracy: {accuracy(w, X_test, y_test):.3f} "
          f"(the true coefficients score {accuracy(true_w, X_test, y_test):.3f})")
    save_plot(history, true_w, w, os.path.join(out, "logistic_regression.png"))
    return w, true_w


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", default=bool(os.environ.get(
        "S2SAD_EXAMPLES_QUICK")), help="a small setting that runs in a few seconds")
    ap.add_argument("--out", default=".", help="folder for the PNG plot")
    args = ap.parse_args()
    main(quick=args.quick, out=args.out)
