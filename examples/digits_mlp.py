"""A small neural network (MLP) that reads handwritten digits, trained with s2sad gradients.

    python examples/digits_mlp.py            # 40 epochs, test accuracy about 98%
    python examples/digits_mlp.py --quick    # 4 epochs (also S2SAD_EXAMPLES_QUICK=1)

The data is scikit-learn's bundled digits set (1,797 images of 8x8 pixels, no download).  The
model and its loss (softmax cross-entropy through ``scipy.special.logsumexp``) are plain NumPy; the
parameters are a dict of arrays, and ``s2sad.value_and_grad`` returns the gradient as a dict of the
same shape.  The optimiser is Adam, written out in NumPy below.  The script checks the gradient
once against finite differences, prints the loss per epoch and the test accuracy, and saves
``digits_mlp.png`` (the loss curve).
"""
import argparse
import os

import numpy as np
from scipy.special import logsumexp

import s2sad
from s2sad.testing import check_grads


def predict(params, X):
    """Class scores (logits) of a two-layer MLP with tanh hidden units."""
    h = np.tanh(X @ params["W1"] + params["b1"])
    return h @ params["W2"] + params["b2"]


def loss(params, X, Y, l2):
    """Mean softmax cross-entropy against one-hot labels Y, plus l2/2 times the squared weights."""
    z = predict(params, X)
    xent = np.mean(logsumexp(z, axis=1) - np.sum(z * Y, axis=1))
    return xent + 0.5 * l2 * (np.sum(params["W1"] ** 2) + np.sum(params["W2"] ** 2))


def init(n_in, n_hidden, n_out, seed=0):
    rng = np.random.default_rng(seed)
    return {"W1": rng.standard_normal((n_in, n_hidden)) / np.sqrt(n_in),
            "b1": np.zeros(n_hidden),
            "W2": rng.standard_normal((n_hidden, n_out)) / np.sqrt(n_hidden),
            "b2": np.zeros(n_out)}


class Adam:
    """Adam (Kingma and Ba, 2015) on a dict of arrays."""

    def __init__(self, params, lr=1e-2, b1=0.9, b2=0.999, eps=1e-8):
        self.lr, self.b1, self.b2, self.eps, self.t = lr, b1, b2, eps, 0
        self.m = {k: np.zeros_like(v) for k, v in params.items()}
        self.v = {k: np.zeros_like(v) for k, v in params.items()}

    def step(self, params, grads):
        self.t += 1
        out = {}
        for k in params:
            self.m[k] = self.b1 * self.m[k] + (1 - self.b1) * grads[k]
            self.v[k] = self.b2 * self.v[k] + (1 - self.b2) * grads[k] ** 2
            m_hat = self.m[k] / (1 - self.b1 ** self.t)
            v_hat = self.v[k] / (1 - self.b2 ** self.t)
            out[k] = params[k] - self.lr * m_hat / (np.sqrt(v_hat) + self.eps)
        return out


def accuracy(params, X, labels):
    return np.mean(np.argmax(predict(params, X), axis=1) == labels)


def load(seed=0):
    from sklearn.datasets import load_digits
    digits = load_digits()
    X = digits.data / 16.0                    # pixels in [0, 1]
    labels = digits.target
    order = np.random.default_rng(seed).permutation(len(X))
    X, labels = X[order], labels[order]
    n_test = len(X) // 4
    return X[n_test:], labels[n_test:], X[:n_test], labels[:n_test]


def save_plot(train_curve, test_curve, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot (pip install matplotlib)")
        return
    fig, ax = plt.subplots(figsize=(6, 4))
    epochs = np.arange(1, len(train_curve) + 1)
    ax.plot(epochs, train_curve, marker=".", label="training loss (mean over the epoch)")
    ax.plot(epochs, test_curve, marker=".", label="test loss")
    ax.set(xlabel="epoch", ylabel="cross-entropy", yscale="log", title="digits MLP")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    print(f"plot saved to {path}")


def main(quick=False, out="."):
    X_train, y_train, X_test, y_test = load()
    Y_train, Y_test = np.eye(10)[y_train], np.eye(10)[y_test]
    epochs, batch, hidden, l2 = (4, 32, 32, 1e-4) if quick else (40, 32, 64, 1e-4)
    print(f"digits: {len(X_train)} training and {len(X_test)} test images, "
          f"MLP 64-{hidden}-10, {epochs} epochs of minibatches of {batch}")
    params = init(64, hidden, 10)

    # once: the gradient of every parameter against central finite differences
    check_grads(loss, (params, X_train[:50], Y_train[:50], l2), wrt=0)
    print("gradient check passed (s2sad vs finite differences)")

    value_and_grad = s2sad.value_and_grad(loss)       # (loss, {name: d loss / d param})
    opt = Adam(params, lr=3e-3)
    rng = np.random.default_rng(1)
    train_curve, test_curve = [], []
    for epoch in range(epochs):
        order = rng.permutation(len(X_train))
        losses = []
        for start in range(0, len(order), batch):
            idx = order[start:start + batch]
            value, grads = value_and_grad(params, X_train[idx], Y_train[idx], l2)
            params = opt.step(params, grads)
            losses.append(value)
        train_curve.append(float(np.mean(losses)))
        test_curve.append(float(loss(params, X_test, Y_test, 0.0)))
        acc = accuracy(params, X_test, y_test)
        print(f"epoch {epoch + 1:3d}: training loss {train_curve[-1]:.4f}  "
              f"test loss {test_curve[-1]:.4f}  test accuracy {acc:.3f}")
    print(f"loss: {train_curve[0]:.4f} -> {train_curve[-1]:.4f}")
    print(f"train accuracy: {accuracy(params, X_train, y_train):.3f}")
    print(f"test accuracy: {accuracy(params, X_test, y_test):.3f}")
    save_plot(train_curve, test_curve, os.path.join(out, "digits_mlp.png"))
    return params


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", default=bool(os.environ.get(
        "S2SAD_EXAMPLES_QUICK")), help="a small setting that runs in a few seconds")
    ap.add_argument("--out", default=".", help="folder for the PNG plot")
    args = ap.parse_args()
    main(quick=args.quick, out=args.out)
