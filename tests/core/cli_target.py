"""Functions the CLI tests point `s2sad dump` / `s2sad explain` at (not a test module)."""
import numpy as np

import s2sad


def plain(x, y):
    z = np.sin(x) * y
    return np.sum(z * z)


@s2sad.differentiate(wrt="y")
def decorated(x, y):
    return np.sum(np.exp(x) * y)


class Model:
    def energy(self, x, w):
        return np.sum(np.tanh(x * w))


def broken(x):
    yield x


if __name__ == "__main__":
    raise SystemExit("the CLI must not run the file's main block")
