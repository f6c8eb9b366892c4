"""s2sad quickstart: a value, a gradient, and the derivative's generated source.

Run:  python examples/quickstart.py
Also: s2sad dump examples/quickstart.py:loss     (the same generated source)
      s2sad explain examples/quickstart.py:loss  (how each call site was classified)
"""
import numpy as np

import s2sad


@s2sad.differentiate                   # with respect to argument 0 (W) by default
def loss(W, x, y):
    h = np.tanh(W @ x)
    err = h - y
    return 0.5 * np.sum(err * err)


def main():
    rng = np.random.default_rng(0)
    W = rng.standard_normal((3, 4))
    x = rng.standard_normal(4)
    y = rng.standard_normal(3)

    print("loss(W, x, y) =", loss(W, x, y))          # still the plain function

    value, gW = loss.value_and_grad(W, x, y)
    print("value =", value)
    print("gradient with respect to W:")
    print(gW)

    # the same gradient, written by hand, as a check
    h = np.tanh(W @ x)
    expected = np.outer((h - y) * (1 - h * h), x)
    print("matches the hand-written gradient:", np.allclose(gW, expected))

    print()
    print("generated source:")
    print(loss.adjoint_source())


if __name__ == "__main__":
    main()
