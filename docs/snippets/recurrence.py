"""A loop with a branch, for the page "Reading a generated derivative" (docs/hooks.py dumps it)."""
import numpy as np


def decay(x, rate, steps):
    total = 0.0
    for i in range(steps):
        x = x * rate
        if i % 2 == 0:
            total = total + np.sin(x)
    return total
