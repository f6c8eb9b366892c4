"""Named tuples (``typing.NamedTuple``, ``collections.namedtuple``) as a program's parameters:
built inside the function, read by field and by index, and passed in as arguments, in reverse and
forward mode (each against central differences / the reverse gradient)."""
from collections import namedtuple
from typing import NamedTuple

import numpy as np
import pytest

import s2sad
from lang_helpers import assert_close, check_grads, rng


class Params(NamedTuple):
    w: np.ndarray
    b: float = 0.5


Pair = namedtuple("Pair", ["w", "b"])


class Doubled(Pair):                    # a subclass with its own __new__: not a plain named tuple
    def __new__(cls, w, b):
        return super().__new__(cls, 2.0 * w, b)


def built_inside(x):
    p = Params(np.tanh(x), 3.0 * x[0])
    q = Pair(b=x[1], w=p.w * p.b)       # keywords in another order
    return np.sum(q.w * q.b) + p[1] * np.sum(x) + Params(x).b * x[2]


def as_argument(p, x):
    return np.sum(np.sin(p.w * x)) + p.b * p[1] + np.sum(p[0])


def test_named_tuples_built_inside_reverse_and_forward():
    x = rng(3).standard_normal(4)
    check_grads(built_inside, (x,))
    g = s2sad.grad(built_inside)(x)
    t = rng(4).standard_normal(4)
    assert_close(s2sad.jvp(built_inside, (x,), (t,))[1], g @ t)


def test_a_named_tuple_argument_reverse_and_forward():
    r = rng(5)
    p, x = Params(r.standard_normal(3), 0.7), r.standard_normal(3)
    gp, gx = s2sad.grad(as_argument, wrt=(0, 1))(p, x)
    assert type(gp) is Params
    tp, tx = Params(r.standard_normal(3), 0.3), r.standard_normal(3)
    # forward mode read every field's tangent as zero (jvp_attr): the tangent was 0
    _, out = s2sad.jvp(as_argument, (p, x), (tp, tx))
    assert_close(out, gp.w @ tp.w + gp.b * tp.b + gx @ tx)
    _, only_b = s2sad.jvp(as_argument, (p, x), (Params(np.zeros(3), 1.0), None))
    assert_close(only_b, 2 * p.b)


def test_a_named_tuple_with_its_own_new_is_refused():
    def f(x):
        p = Doubled(x, 3.0)
        return np.sum(p.w * p.b)
    with pytest.raises(s2sad.OpaqueCalleeError, match="Doubled"):
        s2sad.grad(f)(np.ones(2))
