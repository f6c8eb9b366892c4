"""Index tricks reached through a variable (issue 10): ``r = np.r_; r[a, b]``, np.c_ passed as an
argument, np.mgrid/np.ogrid/np.s_ held in a local, the key built beforehand.  Written directly,
``np.r_[...]`` is lowered to a concatenation; through a variable the subscript's receiver is only
known at run time, and its items' derivatives were dropped (a silent zero).  Such subscripts
(receiver of unknown kind, key that may carry a derivative) now go through
``runtime.subscript``, which gives an index trick's items a concatenation's adjoints and refuses
what it cannot follow.  Also here: subscripts of objects whose class defines ``__getitem__`` in
Python, whose key was dropped the same way."""
import operator

import numpy as np
import pytest

import s2sad
from s2sad.errors import RuleError, UnsupportedSyntaxError
from s2sad.testing import check_grads
from s2sad.transforms import jvp

BOTH = ("rev", "fwd")
r = np.random.default_rng(11)
A, B = r.standard_normal(3), r.standard_normal(4)


def r_local(a, b):
    rr = np.r_
    return np.sum(np.sin(rr[a, 0.5, b]) * np.arange(8.0))


def c_argument(a, b, c):
    return np.sum(c[a, b * a] ** 2)


def r_key_built_first(a, b):
    rr = np.r_
    key = (a, b)
    return np.sum(rr[key] ** 3)


def r_explicit_getitem(a, b):
    return np.sum(operator.getitem(np.r_, (a, b)) ** 2)


def r_slices(a, x):
    rr = np.r_
    return np.sum(rr[a, 0:x:4j, 1:4] ** 2)


def r_directive(a, b):
    rr = np.r_
    return np.sum(rr["0,2,0", a, b] * np.arange(7.0)[:, None])


def mgrid_local(a, x):
    g = np.mgrid
    return np.sum(g[0:x:5j] * a[0])


def ogrid_local(a, x):
    g = np.ogrid
    u, v = g[0:x:3j, 0.5:2.0:4j]
    return np.sum(u * v * a[1])


def s_local(a, b):
    s = np.s_
    return np.sum(s[a] * b[:3])


def from_attribute(a, b, holder):
    return np.sum(holder.r[a, b] ** 2)


class Holder:
    r = np.r_


@pytest.mark.parametrize("f, args", [
    (r_local, (A, B)),
    (c_argument, (A, A[::-1].copy(), np.c_)),
    (r_key_built_first, (A, B)),
    (r_explicit_getitem, (A, B)),
    (r_slices, (A, 1.7)),
    (r_directive, (A, B)),
    (mgrid_local, (A, 1.3)),
    (ogrid_local, (A, 1.3)),
    (s_local, (A, B)),
    (from_attribute, (A, B, Holder())),
], ids=lambda v: getattr(v, "__name__", ""))
def test_index_trick_through_a_variable(f, args):
    wrt = tuple(k for k, v in enumerate(args) if isinstance(v, (float, np.ndarray)))
    check_grads(f, args, wrt=wrt, modes=BOTH)


def test_gradients_are_the_concatenation_adjoint():
    ga, gb = s2sad.grad(r_local, wrt=(0, 1))(A, B)
    w = np.arange(8.0)
    full = np.cos(np.r_[A, 0.5, B]) * w
    np.testing.assert_allclose(ga, full[:3], rtol=1e-12)
    np.testing.assert_allclose(gb, full[4:], rtol=1e-12)
    _, t = jvp(r_local, (A, B), (np.ones(3), np.zeros(4)))
    np.testing.assert_allclose(t, full[:3].sum(), rtol=1e-12)


def test_slice_bound_gets_its_derivative():
    # d/dx sum(linspace(0, x, 4)**2) = sum(2 * v * v / x)
    g = s2sad.grad(r_slices, wrt=1)(A, 1.7)
    v = np.linspace(0, 1.7, 4)
    np.testing.assert_allclose(g, np.sum(2 * v * v / 1.7), rtol=1e-10)


def test_generated_code_routes_through_runtime_subscript():
    src = s2sad.differentiate(r_local, wrt=(0, 1)).adjoint_source(A, B)
    assert "_rt.subscript(rr, (True, 'vvv'), a, 0.5, b)" in src
    assert "_rt.subscript_adjoint(" in src


def test_plain_subscripts_keep_their_form():
    """Arrays, containers and integer keys are not routed (nothing changes for them)."""
    def f(x, xs, i):
        return x[i] * xs[0] + np.sum(x[1:])
    src = s2sad.differentiate(f, wrt=(0, 1)).adjoint_source(A, [1.0, 2.0], 2)
    assert "_rt.subscript" not in src


def _refused(exc, f, *args):
    for mode in BOTH:
        with pytest.raises(exc) as e:
            if mode == "rev":
                s2sad.grad(f)(*args)
            else:
                jvp(f, args, tuple(np.ones_like(a) if isinstance(a, np.ndarray) else 1.0
                                   for a in args))
        msg = str(e.value)
        assert "test_index_trick_aliases.py:" in msg, msg
        assert "\nFix: " in msg, msg
    return msg


def r_string(a, b):
    rr = np.r_
    return np.sum(np.asarray(rr["a, b"]) * 2.0)


def r_matrix(a, b):
    rr = np.r_
    return np.sum(np.asarray(rr["r", a, b]))


def test_string_key_through_variable_is_refused():
    msg = _refused(UnsupportedSyntaxError, r_string, A, B)
    assert "np.r_" in msg and "np.block" in msg


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")
def test_matrix_directive_through_variable_is_refused():
    msg = _refused(RuleError, r_matrix, A, B)
    assert "np.matrix" in msg


# -- objects whose class defines __getitem__ in Python ---------------------------------------------
class Lookup:
    def __init__(self, w):
        self.w = w

    def __getitem__(self, k):
        return k * self.w


class Pair:
    def __init__(self, w):
        self.w = w

    def __getitem__(self, k):
        return k[0] * self.w + k[1]


LOOKUP, PAIR = Lookup(3.0), Pair(2.0)


def key_into_argument(x, obj):
    return obj[x] ** 2


def key_into_global(x):
    return LOOKUP[x] * x


def tuple_key_built_first(x, y):
    k = (x, y)
    return PAIR[k] ** 2


class Owner:
    def __init__(self):
        self.t = Lookup(1.5)

    def f(self, x):
        return self.t[x] ** 2

    def g(self, x):
        return self.t.__getitem__(x) ** 2


OWNER = Owner()


def through_attribute(x):
    return OWNER.f(x)


def through_attribute_method(x):
    return OWNER.g(x)


@pytest.mark.parametrize("f, args, wrt", [
    (key_into_argument, (0.7, LOOKUP), 0),
    (key_into_global, (0.7,), 0),
    (tuple_key_built_first, (0.7, -1.2), (0, 1)),
    (through_attribute_method, (0.7,), 0),
], ids=lambda v: getattr(v, "__name__", ""))
def test_key_into_python_getitem(f, args, wrt):
    check_grads(f, args, wrt=wrt, modes=BOTH)


def test_key_into_python_getitem_values():
    assert s2sad.grad(key_into_argument)(0.7, LOOKUP) == pytest.approx(2 * 0.7 * 9.0)
    assert s2sad.grad(key_into_global)(0.7) == pytest.approx(2 * 0.7 * 3.0)


def several_parts(x, y):
    return PAIR[x, y] ** 2


def test_several_key_parts_into_python_getitem_are_refused():
    msg = _refused(UnsupportedSyntaxError, several_parts, 0.7, -1.2)
    assert "key = (a, b)" in msg


def test_object_of_unknown_kind_with_python_getitem_is_refused():
    msg = _refused(UnsupportedSyntaxError, through_attribute, 0.7)
    assert "Lookup[...]" in msg and "__getitem__" in msg


# -- CuPy: cupy.r_ / cupy.c_ through a variable -----------------------------------------------------
def _gpu():
    import os
    try:
        import cupy as cp
        ok = bool(cp.is_available()) and os.environ.get("NUMBA_ENABLE_CUDASIM") == "0"
    except Exception:  # noqa: BLE001
        return None
    return cp if ok else None


def cupy_r_local(a, b):
    import cupy
    rr = cupy.r_
    return cupy.sum(cupy.sin(rr[a, 2.5, b * b]) * cupy.arange(7.0))


def cupy_c_argument(a, b, c):
    import cupy
    return cupy.sum(c[a, b * a] ** 2)


@pytest.mark.gpu
@pytest.mark.parametrize("f", [cupy_r_local, cupy_c_argument])
def test_cupy_index_tricks_through_a_variable(f):
    cp = _gpu()
    if cp is None:
        pytest.skip("needs CuPy, a GPU and NUMBA_ENABLE_CUDASIM=0")
    a, b = cp.asarray(A), cp.asarray(A[::-1].copy())
    extra = (cp.c_,) if f is cupy_c_argument else ()
    ga, gb = s2sad.grad(f, wrt=(0, 1))(a, b, *extra)
    assert type(ga).__module__.startswith("cupy") and ga.shape == (3,)
    eps = 1e-6
    for k in range(3):
        e = cp.zeros(3)
        e[k] = 1.0
        fd_a = float(f(a + eps * e, b, *extra) - f(a - eps * e, b, *extra)) / (2 * eps)
        fd_b = float(f(a, b + eps * e, *extra) - f(a, b - eps * e, *extra)) / (2 * eps)
        assert float(ga[k]) == pytest.approx(fd_a, rel=1e-6, abs=1e-8)
        assert float(gb[k]) == pytest.approx(fd_b, rel=1e-6, abs=1e-8)
        _, t = jvp(f, (a, b) + extra, (e, cp.zeros(3)) + ((None,) if extra else ()))
        assert float(t) == pytest.approx(fd_a, rel=1e-6, abs=1e-8)
