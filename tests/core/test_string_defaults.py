"""A helper's string default filled in where it is called was taken for a variable's name: with
``y="y"`` the caller's variable ``y`` was read instead (a silently wrong gradient, 3.0 for 2.0),
and other strings crashed with NameError."""
import numpy as np
import pytest

import s2sad
from s2sad.testing import check_grads


def _h(x, y="y"):
    return x * (2.0 if y == "y" else 3.0)


def caller_with_same_name(x, y):
    return _h(x)


def _padded(x, mode="constant"):
    return np.sum(np.pad(x, 1, mode=mode) ** 2 * np.arange(5.0))


def caller_of_padded(x):
    return _padded(x) + _padded(x, "edge")


def test_string_default_is_a_value_not_a_name():
    assert s2sad.grad(caller_with_same_name)(1.0, 5.0) == 2.0
    assert s2sad.jvp(caller_with_same_name, (1.0, 5.0), (1.0, 0.0))[1] == 2.0


@pytest.mark.parametrize("mode", ["rev", "fwd"])
def test_string_default_passed_on_to_numpy(mode):
    x = np.array([0.3, -1.2, 0.8])
    check_grads(caller_of_padded, (x,), modes=(mode,))
