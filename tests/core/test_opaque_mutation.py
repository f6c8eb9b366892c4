"""An opaque callee (no rule, no Python source s2sad differentiates) that changes an argument
carrying a derivative in place, reached through a call resolved at run time (a method of an
argument: ``rng.shuffle(a)``), is refused; before, the change was not followed and the
gradient was silently wrong."""
import random

import numpy as np
import pytest

import s2sad
from s2sad.errors import OpaqueCalleeError

X = np.array([0.33, 0.71, -0.46, 1.1])


def shuffled(x, rng):
    a = x * 1.0
    rng.shuffle(a)
    return np.sum(a * np.arange(4.0))


def list_shuffled(x, r):
    l = [x[0] * 2.0, x[1] * 3.0, x[2]]
    r.shuffle(l)
    return l[0] + 10 * l[1] + 100 * l[2]


def constant_shuffled(x, rng):
    b = np.arange(4.0)
    rng.shuffle(b)                  # carries no derivative: runs as written
    return np.sum(x * b)


def reads_only(x, fmt):
    a = x * 2.0
    label = fmt.format(a)           # a method of an argument, resolved at run time: reads an
    return np.sum(a) + 0.0 * len(label)  # array that carries a derivative, changes nothing


def test_shuffle_of_an_active_array_refused_reverse():
    with pytest.raises(OpaqueCalleeError) as e:
        s2sad.grad(shuffled)(X, np.random.default_rng(0))
    msg = str(e.value)
    assert "test_opaque_mutation.py:18" in msg and "changed an array it was given in place" in msg
    assert "rng.permutation" in msg                       # the fix


def test_shuffle_of_an_active_array_refused_forward():
    with pytest.raises(OpaqueCalleeError, match="changed an array it was given in place"):
        s2sad.jvp(shuffled, (X, np.random.default_rng(0)), (np.arange(4.0), None))


def test_shuffle_of_an_active_list_refused_reverse():
    with pytest.raises(OpaqueCalleeError, match="changed the list it was given in place"):
        s2sad.grad(list_shuffled)(X, random.Random(0))


def test_shuffle_of_a_constant_array_is_fine():
    b = np.arange(4.0)
    np.random.default_rng(0).shuffle(b)
    g = s2sad.grad(constant_shuffled)(X, np.random.default_rng(0))
    np.testing.assert_array_equal(g, b)


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_opaque_reads_of_active_arrays_still_run(mode):
    if mode == "reverse":
        g = s2sad.grad(reads_only)(X, "a = {}")
        np.testing.assert_allclose(g, 2.0 * np.ones(4))
    else:
        _, t = s2sad.jvp(reads_only, (X, "a = {}"), (np.ones(4), None))
        assert t == pytest.approx(8.0)
