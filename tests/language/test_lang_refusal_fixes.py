"""Programs that were refused though s2sad can differentiate them, and refusals whose message did
not describe the user's program (found by probing; one section per finding)."""
import numpy as np
import pytest

import s2sad
from s2sad.errors import ArgumentWriteError, S2SADError
from lang_helpers import check_grads, check_obj_grad, line_of

X = np.array([0.3, 0.7, -0.4])


def _no_internals(msg):
    import re
    assert "_rt." not in msg and "_b_" not in msg and "_s_" not in msg
    assert not re.search(r"`_\d+", msg), msg


# -- a method that counts its calls on self, called on an object the caller passed in ----------
# Before: "this line calls a method that changes `m`, an object the caller passed in, with values
# that carry a derivative" (reverse mode), though `self.calls += 1` writes an int.
class Counted:
    def __init__(self, w):
        self.w = w
        self.calls = 0
        self.log = []

    def apply(self, x):
        self.calls += 1
        self.log.append(self.calls)
        return np.sin(self.w * x)

    def keep(self, x):
        self.last = np.sum(x)
        return np.sin(self.w * x)


def counted_twice(x, m):
    y = m.apply(x)
    y = m.apply(y)
    return np.sum(y) * m.w + 0 * m.calls


def counted_keeps(x, m):
    y = m.keep(x)
    return np.sum(y) + m.last


def test_method_counting_calls_on_an_argument():
    m = Counted(1.5)
    g = s2sad.grad(counted_twice)(X, m)
    assert m.calls == 2 and m.log == [1, 2]           # the method ran as Python runs it
    check_grads(counted_twice, (X, Counted(1.5)), wrt=0)
    check_obj_grad(counted_twice, (X, Counted(1.5)), 1, ["w"])
    check_grads(lambda x: counted_twice(x, Counted(1.5)), (X,), modes=("rev", "fwd"))
    np.testing.assert_allclose(g, s2sad.grad(lambda x: counted_twice(x, Counted(1.5)))(X))


def test_method_keeping_a_float_on_an_argument_is_refused_naming_it():
    with pytest.raises(ArgumentWriteError) as e:
        s2sad.grad(counted_keeps)(X, Counted(1.5))
    msg = str(e.value)
    assert f":{line_of(counted_keeps, 'y = m.keep(x)')}:" in msg
    assert "`m.last`" in msg and "`m.calls`" not in msg
    _no_internals(msg)
