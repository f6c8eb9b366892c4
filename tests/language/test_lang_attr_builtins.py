"""Attributes written and read through builtins: setattr/getattr, ``__dict__``, ``vars()``
(issue 10, class 3).  The constant-name forms are differentiated like ``o.w``; other uses of an
object's ``__dict__`` are refused."""
import numpy as np
import pytest

import s2sad
from s2sad.errors import UnsupportedSyntaxError
from s2sad.testing import check_grads

rng = np.random.default_rng(3)
X = rng.standard_normal(3)


class Box:
    pass


def set_then_get(x):
    o = Box()
    setattr(o, "w", x * 2.0)
    return np.sum(getattr(o, "w") * o.w)


def dict_write(x):
    o = Box()
    o.w = x
    o.__dict__["w"] = x * 3.0
    o.__dict__["v"] = np.sin(x)
    return np.sum(o.w * o.__dict__["v"])


def vars_write(x):
    o = Box()
    o.w = x
    vars(o)["w"] = x * 3.0
    vars(o)["w"] += x
    return np.sum(o.w * vars(o)["w"])


def getattr_default(x):
    o = Box()
    o.w = x * 2.0
    a = getattr(o, "w", 1.0)
    b = getattr(o, "missing", x[0])
    return np.sum(a * b)


def setattr_in_loop(x):
    o = Box()
    o.acc = 0.0
    for k in range(3):
        setattr(o, "acc", o.acc + x[k] * x[k])
    return o.acc


@pytest.mark.parametrize("f", [set_then_get, dict_write, vars_write, getattr_default, setattr_in_loop],
                         ids=lambda f: f.__name__)
@pytest.mark.parametrize("mode", ["rev", "fwd"])
def test_attribute_builtins(f, mode):
    check_grads(f, (X,), modes=(mode,))


def dict_held(x):
    o = Box()
    d = o.__dict__
    d["w"] = x
    return np.sum(o.w)


def vars_held(x):
    o = Box()
    o.w = x
    return sum(np.sum(v) for v in vars(o).values())


def setattr_dynamic_name(x):
    o = Box()
    name = "w" if x[0] > -100 else "v"
    setattr(o, name, x * 2.0)
    return np.sum(o.w)


@pytest.mark.parametrize("f", [dict_held, vars_held, setattr_dynamic_name], ids=lambda f: f.__name__)
def test_refused(f):
    with pytest.raises(UnsupportedSyntaxError) as e:
        s2sad.grad(f)(X)
    msg = str(e.value)
    assert "test_lang_attr_builtins.py:" in msg
    assert "Fix:" in msg
