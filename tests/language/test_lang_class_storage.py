"""Objects whose class stores or computes attributes some other way than in the object: a
property's setter, a descriptor, ``__setattr__``, ``__getattr__``, and the value a context
manager's ``__enter__`` returns.  s2sad followed these as plain attributes and gave a wrong or a
zero gradient without an error (found by probing); they are refused, naming the line.  Plain
attributes, properties read, slots and class constants are followed as before."""
import numpy as np
import pytest

import s2sad
from s2sad.errors import UnsupportedSyntaxError
from s2sad.testing import check_grads


class Circle:
    def __init__(self, r):
        self._r = r

    @property
    def r(self):
        return self._r

    @r.setter
    def r(self, v):
        self._r = v


class Doubling:
    def __init__(self, w):
        self.w = w

    def __setattr__(self, name, value):
        object.__setattr__(self, name, 2.0 * value)


class Lazy:
    def __init__(self, base):
        self.base = base

    def __getattr__(self, name):
        if name == "double":
            return self.base * 2.0
        raise AttributeError(name)


class Scope:
    def __init__(self, v):
        self.v = v

    def __enter__(self):
        return self.v * 2.0

    def __exit__(self, *a):
        return False


class Slotted:
    __slots__ = ("a",)
    scale = 3.0                        # a class constant

    def __init__(self, a):
        self.a = a


def through_setter(r):
    c = Circle(r)
    c.r = c.r * 2.0
    return c.r ** 2


def through_setattr(x):
    d = Doubling(x)
    d.w = x
    return d.w * x


def through_getattr(x):
    return Lazy(x).double ** 2


def through_enter(x):
    with Scope(x) as s:
        y = s * s
    return y


def plain_storage(x):
    c = Circle(x)
    s = Slotted(x * 2.0)
    s.a = s.a * s.scale
    return c.r * s.a


@pytest.mark.parametrize("f, where", [
    (through_setter, "c.r = c.r * 2.0"), (through_setattr, "self.w = w"),    # (in __init__)
    (through_getattr, "return Lazy(x).double ** 2"), (through_enter, "with Scope(x) as s:"),
], ids=["setter", "setattr", "getattr", "enter"])
def test_attributes_the_class_stores_or_computes_itself_are_refused(f, where):
    with pytest.raises(UnsupportedSyntaxError) as e:
        s2sad.grad(f)(1.5)
    assert e.value.origin.text.strip() == where


def test_plain_attributes_properties_slots_and_class_constants_are_followed():
    check_grads(plain_storage, (1.5,))
    assert s2sad.grad(plain_storage)(1.5) == pytest.approx(4 * 3.0 * 1.5)
