"""Private-name mangling: inside a class body Python spells ``self.__w`` as ``self._Class__w`` (and
``__helper`` as ``_Class__helper``, ``cls.__k`` as ``cls._Class__k``), with the name of the class
that *defines* the method; s2sad reads the unmangled text and must spell names as Python did.
Mangling is lexical: a function assigned to a class later is not mangled, nor is
``getattr(o, "__w")``."""
import numpy as np
import pytest

import s2sad
from s2sad.frontend.mangle import mangle, qualname_class
from s2sad.testing import check_grads

BOTH = ("rev", "fwd")


def rng(seed):
    return np.random.default_rng(seed)


def _Model__helper(x):          # what `__helper(x)` in a method of Model calls
    return np.cos(x)


def __helper(x):                # what it would call unmangled: must not be used
    return 100.0 * x


class Model:
    __k = 3.0

    def __init__(self, w):
        self.__w = w

    @property
    def w2(self):
        return self.__w * self.__w

    def __call__(self, x):
        return np.sum(self.w2 * np.sin(x)) + self.__scaled(x)

    def __scaled(self, x):
        return np.sum(__helper(x) * self.__w) * Model.__k

    def grow(self, x):
        self.__w = self.__w * x            # written, then read
        self.__w += np.tanh(x)
        return np.sum(self.__w ** 2)

    @classmethod
    def k_times(cls, x):
        return cls.__k * x

    def nested(self, x):
        g = lambda t: t * self.__w         # noqa: E731
        def inner(u, __v=2.0):
            """A docstring
            over two lines."""
            return u * self.__w * __v + __helper(u)
        return np.sum(g(x) + inner(x))


class Sub(Model):
    def __init__(self, w):
        super().__init__(w)
        self.__w = 2.0 * w                 # Sub's own: _Sub__w, next to _Model__w

    def total(self, x):
        return self(x) + np.sum(self.__w * x) + np.sum(self.k_times(x))


class _Lead:
    """Leading underscores of the class name are stripped: _Lead__w."""
    def __init__(self, w):
        self.__w = w

    def f(self, x):
        return np.sum(self.__w * x * x)


def test_private_attribute_of_object_built_outside():
    r = rng(1)
    m = Model(r.standard_normal(3))
    assert not hasattr(m, "__w")

    def f(x):
        return m(x)
    check_grads(f, (r.standard_normal(3),), modes=BOTH)
    x = r.standard_normal(3)
    w = m._Model__w
    expect = np.sum(w * w * np.sin(x)) + np.sum(np.cos(x) * w) * 3.0
    np.testing.assert_allclose(s2sad.value_and_grad(f)(x)[0], expect, rtol=1e-12)


def test_private_attribute_written_and_read_in_methods():
    r = rng(2)

    def f(w, x):
        m = Model(w)
        return m.grow(x) + np.sum(m._Model__w)     # the name Python wrote

    check_grads(f, (r.standard_normal(3), r.standard_normal(3)), modes=BOTH)


def test_subclass_mangles_with_defining_class():
    r = rng(3)

    def f(w, x):
        s = Sub(w)
        return s.total(x) + np.sum(s._Model__w * s._Sub__w)

    w, x = r.standard_normal(3), r.standard_normal(3)
    check_grads(f, (w, x), modes=BOTH)
    s = Sub(w)
    got = s2sad.value_and_grad(f)(w, x)[0]
    np.testing.assert_allclose(got, f(w, x), rtol=1e-12)


def test_object_argument_gradient_names_mangled_attribute():
    r = rng(4)
    m = _Lead(r.standard_normal(3))
    x = r.standard_normal(3)
    g = s2sad.grad(lambda o, x: o.f(x))(m, x)
    gw = g["_Lead__w"] if isinstance(g, dict) else g._Lead__w
    np.testing.assert_allclose(gw, x * x, rtol=1e-12)
    check_grads(lambda x: m.f(x), (x,), modes=BOTH)


def test_nested_lambda_and_def_in_method():
    r = rng(5)
    m = Model(r.standard_normal(3))
    x = r.standard_normal(3)
    check_grads(lambda x: m.nested(x), (x,), modes=BOTH)
    w = m._Model__w
    np.testing.assert_allclose(s2sad.value_and_grad(lambda x: m.nested(x))(x)[0],
                               np.sum(x * w + x * w * 2.0 + np.cos(x)), rtol=1e-12)
    # the method itself: its nested definitions are copied with Python's spelling
    d = s2sad.differentiate(Model.nested, wrt=1)
    src = d.adjoint_source(m, x)
    assert "self._Model__w" in src and "_Model__helper(u)" in src
    assert "self.__w" not in src.split("#")[0]
    check_grads(Model.nested, (m, x), wrt=1, modes=BOTH)


def test_unmangled_attribute_of_same_name_is_not_read():
    """An attribute spelled __w (set with setattr) next to the real _Model__w: a wrong spelling
    would read it silently."""
    r = rng(6)
    m = Model(r.standard_normal(3))
    setattr(m, "__w", 1000.0 * np.ones(3))
    x = r.standard_normal(3)
    v, g = s2sad.value_and_grad(lambda x: m(x))(x)
    assert np.isclose(v, m(x))
    check_grads(lambda x: m(x), (x,), modes=BOTH)


class Named:
    def __init__(self, w):
        setattr(self, "__w", w)             # a string: never mangled
        self.__w = 2.0 * w

    def f(self, x):
        return np.sum(getattr(self, "__w") * x) + np.sum(self.__w * x * x)


def test_getattr_with_constant_name_is_not_mangled():
    r = rng(7)

    def f(w, x):
        return Named(w).f(x)
    w, x = r.standard_normal(3), r.standard_normal(3)
    check_grads(f, (w, x), modes=BOTH)
    np.testing.assert_allclose(s2sad.grad(f, wrt=1)(w, x), w + 4.0 * w * x, rtol=1e-12)


def _outside(self, x):                      # written at module level: no mangling
    return np.sum(self.__w * x)


class Assigned:
    def __init__(self, w):
        setattr(self, "__w", w)

    f = _outside


def test_function_assigned_to_class_is_not_mangled():
    r = rng(8)
    a = Assigned(r.standard_normal(3))
    x = r.standard_normal(3)
    np.testing.assert_allclose(s2sad.grad(lambda x: a.f(x))(x), getattr(a, "__w"), rtol=1e-12)
    check_grads(lambda x: a.f(x), (x,), modes=BOTH)


def test_mangling_rules():
    assert mangle("Model", "__w") == "_Model__w"
    assert mangle("__Lead", "__w") == "_Lead__w"
    assert mangle("Model", "__init__") == "__init__"
    assert mangle("Model", "_w") == "_w"
    assert mangle("___", "__w") == "__w"
    assert mangle(None, "__w") == "__w"
    assert qualname_class("Model.f") == "Model"
    assert qualname_class("Model.f.<locals>.<lambda>") == "Model"
    assert qualname_class("f.<locals>.Model.g") == "Model"
    assert qualname_class("A.B.g") == "B"
    assert qualname_class("f.<locals>.g") is None
    assert qualname_class("f") is None


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_generated_source_spells_mangled_names(mode):
    m = Model(np.ones(2))
    d = s2sad.differentiate(Model._Model__scaled, wrt=1, mode=mode)
    src = d.adjoint_source(m, np.ones(2))
    code = "\n".join(line.split("#")[0] for line in src.splitlines())
    assert "self._Model__w" in code and "Model._Model__k" in code and "_Model__helper" in code
    assert ".__w" not in code and ".__k" not in code
    check_grads(Model._Model__scaled, (m, np.arange(1.0, 3.0)), wrt=1,
                modes=("rev",) if mode == "reverse" else ("fwd",))
