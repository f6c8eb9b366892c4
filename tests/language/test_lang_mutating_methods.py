"""Methods that update their object (``self.total = self.total + v``): s2sad differentiates such a
method with the updated object as a second output, and the call site as an update of the object."""
import numpy as np

import s2sad
from s2sad.testing import check_grads


class Accumulator:
    def __init__(self):
        self.total = 0.0

    def add(self, v):
        self.total = self.total + v

    def scaled(self, k):
        return self.total * k


def running(x):
    acc = Accumulator()
    acc.add(x * x)
    acc.add(3.0 * x)
    return acc.scaled(2.0)


class Layer:
    def __init__(self, W):
        self.W = W
        self.last = None

    def forward(self, x):
        h = np.tanh(self.W @ x)
        self.last = h                   # keeps its last output
        return h


def two_steps(W, x):
    layer = Layer(W)
    h = layer.forward(x)
    h2 = layer.forward(h)
    return np.sum(h2 ** 2) + np.sum(layer.last)


class Counter:
    def __init__(self, v):
        self.v = v

    def bump(self, a):
        self.v = self.v * a
        return self.v + 1.0


def state_fn(x, a):
    c = Counter(x)
    y = c.bump(a)
    z = c.bump(a)
    return y * z + c.v


def in_a_loop(x, a):
    c = Counter(x)
    s = 0.0
    for _ in range(4):
        s = s + c.bump(a)
    return s * c.v


def test_accumulator_value_and_gradient():
    v, g = s2sad.value_and_grad(running)(3.0)
    assert v == 2 * (9.0 + 9.0)
    assert g == 2 * (6.0 + 3.0)
    assert s2sad.jvp(running, (3.0,), (1.0,)) == (v, g)          # forward mode agrees


def test_layer_keeping_state():
    rng = np.random.default_rng(3)
    check_grads(two_steps, (rng.standard_normal((3, 3)) * 0.5, rng.standard_normal(3)), wrt=(0, 1),
                modes=("rev", "fwd"))


def test_counter_updates():
    check_grads(state_fn, (0.7, 1.3), wrt=(0, 1), modes=("rev", "fwd"))
    check_grads(in_a_loop, (0.7, 1.1), wrt=(0, 1), modes=("rev", "fwd"))


def bump_arg(c, a):
    c.bump(a)
    return c.v


def helper_bumps(c, a):
    c.bump(a)
    return 0.0


def caller_of_helper(x, a):
    c = Counter(x)
    helper_bumps(c, a)
    return c.v


def test_method_updating_an_argument_object_is_refused():
    # the object came from the caller: its update would be invisible to the caller's derivative
    import pytest
    with pytest.raises(s2sad.S2SADError, match="changes `c`"):
        s2sad.grad(bump_arg, wrt=1)(Counter(0.5), 1.5)
    with pytest.raises(s2sad.S2SADError, match="changes `c`"):
        s2sad.grad(caller_of_helper, wrt=(0, 1))(0.5, 1.5)
