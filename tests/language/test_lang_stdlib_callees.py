"""Standard-library callees and methods that real code calls on values carrying derivatives
(issue 10, "false refusals"): dict(...), tolist/float/list/complex conversions, list.sort and
list.reverse, copy.copy/deepcopy, dataclasses.replace, itertools.starmap, heapq.nsmallest and
nlargest.  Each is checked against central differences in reverse and forward mode; what is
refused names the user's line and says how to fix it."""
import copy
import dataclasses
import heapq
import itertools
import math
import operator

import numpy as np
import pytest

import s2sad
from s2sad.errors import ArgumentWriteError, OpaqueCalleeError, UnsupportedSyntaxError
from s2sad.testing import check_grads

from lang_helpers import line_of

BOTH = ("rev", "fwd")


def rng(seed=0):
    return np.random.default_rng(seed)


def floats(n=2, seed=0):
    return tuple(float(v) for v in rng(seed).uniform(0.3, 1.7, n))


def _ones(a):
    return [_ones(v) for v in a] if isinstance(a, list) else np.ones_like(a)


def refused(fn, args, exc, needle, *, modes=BOTH, at=None):
    """``fn`` is refused with ``exc`` in every mode, naming the line holding ``needle`` (in ``at``,
    by default ``fn``) and a Fix."""
    at = at or fn
    where = f"{at.__code__.co_filename}:{line_of(at, needle)}"
    for mode in modes:
        with pytest.raises(exc) as e:
            if mode == "rev":
                s2sad.value_and_grad(fn)(*args)
            else:
                s2sad.jvp(fn, args, tuple(_ones(a) for a in args))
        text = str(e.value)
        assert where in text, (mode, text)
        assert "Fix:" in text, (mode, text)


# -- dict(...) ------------------------------------------------------------------------------------
def dict_of_ranked_pairs(contrib):
    names = ["a", "b", "c", "d"]
    ranked = sorted(list(zip(names, contrib * contrib)), key=lambda p: -p[1])
    best = dict(ranked[:2])
    return sum(best.values()) + best.get("a", 0.0) * 3.0


def dict_of_pair_list(x, y):
    d = dict([("a", x), ("b", y * x)])
    return d["a"] * d["b"] + d["a"]


def dict_later_pair_wins(x, y):
    d = dict([("a", x), ("b", y), ("a", x * y)])      # the first ("a", x) is dropped
    return d["a"] * 2.0 + d["b"] ** 2


def dict_of_zip(x, y):
    keys = ["a", "b"]
    d = dict(zip(keys, [x, y * y]))
    return d["a"] * d["b"]


def dict_of_keywords(x, y):
    d = dict(a=x, b=y)
    return d["a"] * d["b"] + d["a"]


def dict_of_dict(x, y):
    d = {"a": x, "b": y}
    e = dict(d)
    e["a"] = e["a"] * 3.0                 # a new dict: d keeps its value
    return e["a"] * d["a"] + e["b"]


def dict_of_dict_and_keywords(x, y):
    d = {"a": x, "b": y}
    e = dict(d, c=x * y, b=y * 2.0)        # b is replaced by the keyword
    return e["a"] * e["c"] + e["b"] + d["b"]


def dict_of_pairs_and_keywords(x, y):
    d = dict([("a", x), ("b", y)], a=y * 3.0)
    return d["a"] * 2.0 + d["b"] * x


def dict_of_starred(x, y):
    d = {"a": x, "b": y}
    e = dict(**d)
    return e["a"] * e["b"]


def dict_of_arrays(v, w):
    d = dict([("v", v), ("w", v * w)])
    return np.sum(d["v"] * d["w"])


@pytest.mark.parametrize("fn", [dict_of_pair_list, dict_later_pair_wins, dict_of_zip, dict_of_keywords,
                                dict_of_dict, dict_of_dict_and_keywords, dict_of_pairs_and_keywords,
                                dict_of_starred])
def test_dict_constructor(fn):
    check_grads(fn, floats(2, seed=1), modes=BOTH)


def test_dict_of_ranked_pairs():
    check_grads(dict_of_ranked_pairs, (rng(2).uniform(0.3, 1.7, 4),), modes=BOTH)


def test_dict_of_arrays():
    check_grads(dict_of_arrays, (rng(3).standard_normal(3), rng(4).standard_normal(3)), modes=BOTH)


def test_dict_later_pair_wins_numbers():
    x, y = 0.7, 1.3
    v, (gx, gy) = s2sad.value_and_grad(dict_later_pair_wins, wrt=(0, 1))(x, y)
    assert v == pytest.approx(2.0 * x * y + y * y)
    assert (gx, gy) == (pytest.approx(2.0 * y), pytest.approx(2.0 * x + 2.0 * y))


# -- conversions of arrays and numbers -----------------------------------------------------------
def tolist_1d(x):
    xs = x.tolist()
    return xs[0] * xs[1] + sum(xs)


def tolist_2d(m):
    rows = m.tolist()
    return rows[0][1] * rows[1][0] + sum(rows[1]) + rows[2][2] ** 2


def tolist_0d(x):
    v = np.sum(x * x).tolist()             # a 0-d value: a Python float
    return v * 2.0


def tolist_complex(z):
    zs = z.tolist()
    return (zs[0] * zs[1]).real + abs(zs[1])


def float_of_arrays(x):
    s = float(np.sum(x ** 2))              # a NumPy scalar
    t = float(x[1:2].reshape(()))          # a 0-d array
    return s * float(x[0]) + t * float(np.dot(x, x))


def list_of_rows(m):
    rows = list(m)
    return np.sum(rows[0] * rows[1]) + np.sum(rows[2])


def list_of_vector(x):
    xs = list(x)                           # NumPy scalars
    return xs[0] * xs[2] + sum(xs)


def complex_of_complex(x, y):
    z = complex(x, y)
    w = complex(z)
    return (w * w).real + w.imag * x


def complex_parts(x, y):
    z = complex(x * y, y)
    return z.real * z.imag + (z * z).imag


def complex_conjugate(x, y):
    z = complex(x, y * x)
    return (z * z.conjugate()).real + (z.conjugate() * 2.0).imag


def complex_of_complex_parts(x, y):
    z = complex(complex(x, y), complex(y, x * x))     # = (x - x*x) + i (y + y)
    return z.real * 3.0 + z.imag ** 2


@pytest.mark.parametrize("fn, shape", [(tolist_1d, (3,)), (tolist_2d, (3, 3)), (tolist_0d, (3,)),
                                       (float_of_arrays, (3,)), (list_of_rows, (3, 2)),
                                       (list_of_vector, (3,))])
def test_array_conversions(fn, shape):
    check_grads(fn, (rng(5).standard_normal(shape),), modes=BOTH)


def test_tolist_of_complex_array():
    z = rng(6).standard_normal(2) + 1j * rng(7).standard_normal(2)
    check_grads(tolist_complex, (z,), modes=BOTH)


def test_tolist_adjoint_is_an_array():
    x = rng(8).standard_normal((2, 3))
    g = s2sad.grad(lambda m: m.tolist()[1][2] * 2.0)(x)
    assert isinstance(g, np.ndarray) and g.shape == (2, 3) and g.dtype == np.float64
    want = np.zeros((2, 3))
    want[1, 2] = 2.0
    np.testing.assert_array_equal(g, want)


@pytest.mark.parametrize("fn", [complex_of_complex, complex_parts, complex_conjugate,
                                complex_of_complex_parts])
def test_complex_numbers(fn):
    check_grads(fn, floats(2, seed=9), modes=BOTH)


# -- list.sort / list.reverse -------------------------------------------------------------------
def sort_pairs_by_key(x, y):
    xs = [("a", x), ("b", y), ("c", x * y)]
    xs.sort(key=lambda p: p[1])
    return xs[0][1] * 2.0 + xs[2][1] ** 2


def sort_pairs_reversed(x, y):
    xs = [("a", x), ("b", y), ("c", x * y)]
    xs.sort(key=lambda p: p[1], reverse=True)
    return xs[0][1] * 2.0 + xs[1][1] * 5.0


def sort_numbers(x, y):
    xs = [x, y, x * y]
    xs.sort()
    return xs[0] * 2.0 + xs[2]


def sort_key_itemgetter(x, y):
    xs = [[x, "p"], [y, "q"], [x - y, "r"]]
    xs.sort(key=operator.itemgetter(0))
    return xs[0][0] * 3.0 + xs[1][0]


def sort_in_a_loop(x, y):
    xs = [x, y, x * y]
    s = 0.0
    for i in range(3):
        xs.sort(reverse=(i % 2 == 0))
        s = s + xs[0] * (i + 1.0)
        xs[0] = xs[0] * 0.5
    return s


def sort_then_append(x, y):
    xs = [x, y]
    xs.sort()
    xs.append(x * 3.0)
    xs.sort(reverse=True)
    return xs[0] * 2.0 + xs[1] * 3.0 + xs[2]


def sort_in_a_branch(x, y):
    xs = [x, y, x * y]
    if x < y:
        xs.sort()
    return xs[0] * 2.0 + xs[2]


def reverse_list(x, y):
    xs = [x, y, x * y]
    xs.reverse()
    return xs[0] * 2.0 + xs[1] * 3.0


@pytest.mark.parametrize("fn", [sort_pairs_by_key, sort_pairs_reversed, sort_numbers,
                                sort_key_itemgetter, sort_in_a_loop, sort_then_append,
                                sort_in_a_branch, reverse_list])
def test_list_sort(fn):
    check_grads(fn, floats(2, seed=10), modes=BOTH)
    check_grads(fn, floats(2, seed=11)[::-1], modes=BOTH)


def sort_pairs_of_arrays(v, w):
    xs = [("a", v), ("b", w), ("c", v * w)]
    xs.sort(key=lambda p: float(np.sum(p[1])))
    return np.sum(xs[0][1] * 2.0 + xs[2][1] ** 2)


def test_list_sort_of_arrays():
    check_grads(sort_pairs_of_arrays, (rng(12).standard_normal(2), rng(13).standard_normal(2)),
                modes=BOTH)


def sort_an_argument(xs):
    xs.sort()                             # sorts the caller's list, as Python does
    return xs[0] * 2.0 + xs[2]


def reverse_an_argument(xs):
    xs.reverse()
    return 0.0


def calls_reverse_on_its_list(x, y):
    xs = [y, x, x * y]
    reverse_an_argument(xs)               # the caller's xs is reversed now
    return xs[0] * 3.0 + xs[2] ** 2


class _Ranked:
    def __init__(self, items):
        self.items = items

    def order(self):
        self.items.sort()

    def order_new(self):
        self.items = sorted(self.items)


def calls_a_sorting_method(x, y):
    r = _Ranked([y, x, x * y])
    r.order()
    return r.items[0] * 3.0 + r.items[2] ** 2


def calls_a_method_storing_a_sorted_list(x, y):
    r = _Ranked([y, x, x * y])
    r.order_new()
    return r.items[0] * 3.0 + r.items[2] ** 2


def sorts_its_argument_into_a_new_list(xs):
    xs = sorted(xs, key=lambda v: -v)     # (forward mode read the sorted list as the old one)
    return xs[0] * 2.0 + xs[2]


def test_list_sort_of_an_argument_is_refused():
    # the caller's list changes order, which s2sad does not follow back to the caller (a caller
    # reading it afterwards got a silently wrong gradient)
    refused(sort_an_argument, ([0.3, 1.7, -0.4],), ArgumentWriteError, "xs.sort()")
    refused(calls_reverse_on_its_list, (0.3, 1.7), ArgumentWriteError, "xs.reverse()",
            at=reverse_an_argument)
    refused(calls_a_sorting_method, (0.3, 1.7), UnsupportedSyntaxError, "self.items.sort()",
            at=_Ranked.order)


def test_sorting_into_a_new_list_instead():
    check_grads(calls_a_method_storing_a_sorted_list, floats(2, seed=21), modes=BOTH)
    check_grads(sorts_its_argument_into_a_new_list, ([0.3, 1.7, -0.4],), modes=BOTH)


def test_list_sort_value_and_gradient():
    v, (gx, gy) = s2sad.value_and_grad(sort_pairs_by_key, wrt=(0, 1))(2.0, 0.5)
    # sorted by value: ("b", 0.5), ("c", 1.0), ("a", 2.0)
    assert v == 0.5 * 2.0 + 2.0 ** 2
    assert (gx, gy) == (2.0 * 2.0, 2.0)


def sort_an_alias(x, y):
    xs = [x, y, x * y]
    ys = xs
    xs.sort()
    return ys[0] * 2.0 + ys[2]


def sort_a_list_from_a_dict(x, y):
    d = {"k": [x, y, x * y]}
    d["k"].sort()
    return d["k"][0] * 2.0 + d["k"][2]


class _Bag:
    def __init__(self, items):
        self.items = items


def sort_a_list_on_an_object(x, y):
    b = _Bag([x, y, x * y])
    b.items.sort()
    return b.items[0] * 2.0 + b.items[2]


@pytest.mark.parametrize("fn", [sort_an_alias, sort_a_list_from_a_dict, sort_a_list_on_an_object])
def test_list_sort_through_a_second_name_is_refused(fn):
    # the sorted order would reach the other name, which s2sad does not connect: refused
    refused(fn, (0.3, 1.7), UnsupportedSyntaxError, ".sort()")


def _same(a):
    return a * 1.0


def sort_an_array_in_place(x):
    a = _same(x)                      # an array of a kind known only at run time
    a.sort()
    return a[0] * 2.0 + a[2]


def test_array_sort_in_place_is_refused():
    # ndarray.sort changes the array in place; s2sad has no rule for it (np.sort has one)
    refused(sort_an_array_in_place, (np.array([0.3, 1.7, -0.5]),), OpaqueCalleeError, "a.sort()")


# -- copy.copy, copy.deepcopy, dataclasses.replace ----------------------------------------------
@dataclasses.dataclass
class Pair:
    a: float
    b: float


@dataclasses.dataclass
class Derived:
    a: float
    b: float

    def __post_init__(self):
        self.c = self.a * self.b


class Plain:
    def __init__(self, a, b):
        self.a = a
        self.b = b


def copy_list_then_write(x, y):
    a = [x, y]
    b = copy.copy(a)
    b[0] = b[0] * 3.0                     # the copy changes, a does not
    return a[0] * b[0] + b[1]


def copy_list_then_append(x, y):
    a = [x, y]
    b = copy.copy(a)
    b.append(x * y)
    return sum(b) * a[0] + len(a)


def copy_dict_then_write(x, y):
    a = {"p": x, "q": y}
    b = copy.copy(a)
    b["p"] = b["q"] * x
    return a["p"] * b["p"] + b["q"]


def deepcopy_nested(x, y):
    a = {"p": [x, y], "q": (x * y, 2.0)}
    b = copy.deepcopy(a)
    p = b["p"]
    return a["p"][0] * p[0] + b["q"][0] * p[1]


def deepcopy_tuple(x, y):
    a = (x, [y, x])
    b = copy.deepcopy(a)
    return b[0] * b[1][0] + b[1][1]


def copy_dataclass_then_write(x, y):
    p = Pair(x, y)
    q = copy.copy(p)
    q.a = q.a * 2.0
    return p.a * q.a + q.b


def deepcopy_dataclass_then_write(x, y):
    p = Pair(x, y)
    q = copy.deepcopy(p)
    q.b = q.b * q.a
    return q.b + p.b * 3.0


def copy_plain_object_then_write(x, y):
    p = Plain(x, y)
    q = copy.copy(p)
    q.a = q.a * 2.0
    return p.a * q.a + q.b


def replace_dataclass(x, y):
    p = Pair(x, y)
    q = dataclasses.replace(p, b=x * y)
    return q.a * q.b + p.b


def replace_twice(x, y):
    p = Pair(x, y)
    q = dataclasses.replace(p, a=p.a * 2.0)
    r = dataclasses.replace(q, b=q.a + q.b)
    return r.a * r.b + p.a


@pytest.mark.parametrize("fn", [copy_list_then_write, copy_list_then_append, copy_dict_then_write,
                                deepcopy_nested, deepcopy_tuple, copy_dataclass_then_write,
                                deepcopy_dataclass_then_write, copy_plain_object_then_write,
                                replace_dataclass, replace_twice])
def test_copies(fn):
    check_grads(fn, floats(2, seed=14), modes=BOTH)


def copy_array_then_write(x):
    y = copy.copy(x)
    y[0] = 5.0
    z = copy.deepcopy(x)
    z[1] = z[1] * 2.0
    return np.sum(y * x) + np.sum(z ** 2)


def test_copy_of_an_array():
    check_grads(copy_array_then_write, (rng(15).standard_normal(3),), modes=BOTH)


def test_copy_value_and_gradient():
    v, (gx, gy) = s2sad.value_and_grad(copy_list_then_write, wrt=(0, 1))(2.0, 5.0)
    assert v == 2.0 * 6.0 + 5.0
    assert (gx, gy) == (12.0, 1.0)


def replace_with_post_init(x, y):
    q = Derived(1.0, 2.0)
    r = dataclasses.replace(q, a=x)
    return r.a * y


@dataclasses.dataclass
class OwnInit:
    a: float
    b: float

    def __init__(self, a, b):
        self.a = a * 2.0
        self.b = b


def replace_with_own_init(x, y):
    o = OwnInit(x, y)
    p = dataclasses.replace(o, b=x)       # runs OwnInit.__init__ again: a doubles again
    return p.a * p.b


class CopiesScaled:
    def __init__(self, a):
        self.a = a

    def __copy__(self):
        return CopiesScaled(self.a * 2.0)


class PicklesScaled:
    def __init__(self, a):
        self.a = a

    def __getstate__(self):
        return {"a": self.a * 3.0}


def copy_with_own_copy(x, y):
    t = copy.copy(CopiesScaled(x))
    return t.a * y


def deepcopy_with_own_state(x, y):
    t = copy.deepcopy([PicklesScaled(x), y])
    return t[0].a * t[1]


def test_replace_of_a_dataclass_with_post_init_is_refused():
    # __post_init__ computes other fields from the replaced ones: s2sad does not follow it
    refused(replace_with_post_init, (0.3, 1.7), UnsupportedSyntaxError, "dataclasses.replace")
    refused(replace_with_own_init, (0.3, 1.7), UnsupportedSyntaxError, "dataclasses.replace")


def test_copy_of_a_class_that_copies_itself_is_refused():
    # its __copy__ / __getstate__ change values on the way: the copy's adjoint is not the original's
    refused(copy_with_own_copy, (0.3, 1.7), UnsupportedSyntaxError, "copy.copy")
    refused(deepcopy_with_own_state, (0.3, 1.7), UnsupportedSyntaxError, "copy.deepcopy")


# -- itertools.starmap, heapq.nsmallest / nlargest ---------------------------------------------
def _quad(a, b):
    return a * a + b


def starmap_lambda(x, y):
    vals = list(itertools.starmap(lambda a, b: a * b, [(x, y), (y, 2.0)]))
    return vals[0] + vals[1] ** 2


def starmap_operator(x, y):
    return sum(itertools.starmap(operator.mul, [(x, y), (y, y)]))


def starmap_function_twice(x, y):
    out = itertools.starmap(_quad, [[x, y], [y, x * 2.0]])
    first = list(out)
    second = list(out)                    # used up, as in Python
    return sum(first) * 2.0 + len(second)


def starmap_zip(x, y):
    return sum(itertools.starmap(lambda a, b: a * b, zip([x, y], [y, 3.0])))


def starmap_closure_max(x, y):
    w = x * 0.5
    return max(itertools.starmap(lambda a, b: a * w + b, [(x, y), (y, 2.0)]))


def nsmallest_numbers(x, y):
    s = heapq.nsmallest(2, [x, y, x * y])
    return s[0] * 3.0 + s[1]


def nlargest_numbers(x, y):
    s = heapq.nlargest(2, [x, y, x * y, 0.1])
    return s[0] * 3.0 + s[1]


def nsmallest_key(x, y):
    s = heapq.nsmallest(2, [("a", x), ("b", y), ("c", x * y)], key=lambda p: p[1])
    return s[0][1] * 3.0 + s[1][1]


def nlargest_key(x, y):
    s = heapq.nlargest(2, [("a", x), ("b", y), ("c", x * y)], key=lambda p: p[1])
    return s[0][1] * 3.0 + s[1][1]


def nlargest_more_than_there_are(x, y):
    s = heapq.nlargest(5, [x, y])
    return s[0] * 3.0 + s[1] + len(s)


def nsmallest_of_zip(x, y):
    s = heapq.nsmallest(1, zip([x, y], [y, x]), key=lambda p: p[0] * p[1] + p[0])
    return s[0][0] * 2.0 + s[0][1]


@pytest.mark.parametrize("fn", [starmap_lambda, starmap_operator, starmap_function_twice,
                                starmap_zip, starmap_closure_max, nsmallest_numbers,
                                nlargest_numbers, nsmallest_key, nlargest_key,
                                nlargest_more_than_there_are, nsmallest_of_zip])
def test_iteration_helpers(fn):
    check_grads(fn, floats(2, seed=16), modes=BOTH)
    check_grads(fn, floats(2, seed=17)[::-1], modes=BOTH)


def nsmallest_of_a_vector(v):
    s = heapq.nsmallest(2, v)
    return s[0] * 3.0 + s[1]


def nlargest_of_rows(m):
    s = heapq.nlargest(2, list(m), key=lambda r: float(r[0]))
    return np.sum(s[0] * 3.0 + s[1] ** 2)


def test_heapq_of_arrays():
    check_grads(nsmallest_of_a_vector, (rng(18).standard_normal(4),), modes=BOTH)
    check_grads(nlargest_of_rows, (rng(19).standard_normal((4, 2)),), modes=BOTH)


def test_heapq_value_and_gradient():
    v, (gx, gy) = s2sad.value_and_grad(nlargest_key, wrt=(0, 1))(2.0, 0.5)
    # by value: ("a", 2.0), ("c", 1.0), ("b", 0.5)
    assert v == 2.0 * 3.0 + 1.0
    assert (gx, gy) == (3.0 + 0.5, 2.0)


# -- second derivatives through the helpers these rules use ------------------------------------
def _dict_twice(v):
    d = dict(a=v[0], b=v[1])
    e = dict([("c", d["a"] * d["b"]), ("d", v[0])])
    return e["c"] ** 2 * e["d"]


def _nsmallest_product(v):
    s = heapq.nsmallest(2, [v[0], v[1], v[0] * v[1]])
    return s[0] * s[1] ** 2


def _tolist_cubed(v):
    xs = v.tolist()
    return xs[0] ** 3 * xs[1]


def _deepcopy_product(v):
    b = copy.deepcopy([v[0], v[1]])
    return b[0] ** 2 * b[1]


def _fd_hessian(f, p, eps=1e-4):
    n = p.size
    e = np.eye(n) * eps
    return np.array([[(f(p + e[i] + e[j]) - f(p + e[i] - e[j]) - f(p - e[i] + e[j]) + f(p - e[i] - e[j]))
                      / (4 * eps * eps) for j in range(n)] for i in range(n)])


@pytest.mark.parametrize("fn", [_dict_twice, _nsmallest_product, _tolist_cubed, _deepcopy_product])
def test_hessians(fn):
    p = np.array([0.6, 1.3])
    np.testing.assert_allclose(s2sad.hessian(fn)(p), _fd_hessian(fn, p), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(s2sad.jacrev(s2sad.grad(fn))(p), _fd_hessian(fn, p), rtol=1e-5,
                               atol=1e-5)


# -- methods of containers and numbers whose kind is known only at run time --------------------
def _make_dict(x, y):
    return {"a": x, "b": y}


def _make_list(x, y):
    return [x, y, x * y]


def dict_methods_at_run_time(x, y):
    d = _make_dict(x, y)             # a dict s2sad meets only at run time
    e = d.copy()
    e["a"] = 3.0
    s = 0.0
    for k, v in d.items():
        s = s + v * v
    return d.get("a") * 2.0 + d.get("c", y) * 3.0 + sum(d.values()) * x + e["b"] * s


def list_methods_at_run_time(x, y):
    xs = _make_list(x, y)
    xs.sort(reverse=True)
    return xs.index(y) * x + xs[0] * 2.0 + xs[2]


def _same_number(z):
    return z


def conjugate_at_run_time(x, y):
    w = _same_number(complex(x, y))
    return (w * w.conjugate()).real + w.conjugate().imag * x


@pytest.mark.parametrize("fn", [dict_methods_at_run_time, list_methods_at_run_time,
                                conjugate_at_run_time])
def test_methods_at_run_time(fn):
    # (d.values(), d.items(), d.copy() and z.conjugate() gave silently zero adjoints here)
    check_grads(fn, floats(2, seed=20), modes=BOTH)


# == case: math_prod_fmod_remainder
def products(x):
    return (math.prod(x[:3]) + 5.0 * math.prod([x[0], 0.0, x[1]])     # (a zero item)
            + math.prod(v * v for v in x) + math.prod(x[:2], start=x[2]))


def product_of_arrays(x):
    return np.sum(math.prod([x, x[::-1], np.full(3, 2.0)]))


def remainders(x):
    return 2.0 * math.fmod(x[0], x[1]) + math.remainder(x[2], 0.7) + math.fmod(3.3, x[2])


def test_math_prod_fmod_remainder():
    # refused as opaque callees before; fmod/remainder's derivative in y is -(x - ans) / y
    x = np.array([0.3, -1.2, 0.8])
    for f in (products, product_of_arrays, remainders):
        check_grads(f, (x,), modes=("rev", "fwd"))
    np.testing.assert_allclose(s2sad.grad(remainders)(x), [2.0, 0.0, 1.0 - 4.0])
