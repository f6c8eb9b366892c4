"""Iterators consumed by builtins: materialised once, where Python consumes them (issue 10, class 1).

Each program is checked in both modes against central differences."""
import operator

import numpy as np
import pytest

from s2sad.testing import check_grads

rng = np.random.default_rng(7)
A = rng.standard_normal(4)
B = rng.standard_normal(4)


def sorted_zip(a, b):
    p = sorted(zip(a, b), key=lambda t: t[1])
    return p[0][0] * 2.0 + p[-1][1] * 3.0 + p[1][0] * p[2][1]


def sorted_enumerate(a, b):
    p = sorted(enumerate(a), key=lambda t: t[1])
    return p[0][1] * 2.0 + p[-1][1] * b[0]


def sorted_itemgetter(a, b):
    p = sorted(zip(a, b), key=operator.itemgetter(1), reverse=True)
    return p[0][0] * p[1][1]


def max_zip(a, b):
    m = max(zip(a, b), key=lambda t: t[1])
    return m[0] * m[1]


def min_enumerate(a, b):
    i, v = min(enumerate(a), key=operator.itemgetter(1))
    return v * 3.0 + i * b[0]


def max_reversed(a, b):
    return max(reversed(a), key=lambda t: -t) * 2.0 + b[1]


def reuse_exhausted(a, b):
    z = zip(a, b)
    s = 0.0
    for u, v in z:
        s = s + u * v
    for u, v in z:            # exhausted: Python yields nothing here
        s = s + 100.0 * u
    return s + sum(z, 0.0)


def next_then_rest(a, b):
    it = iter(a)
    x = next(it)
    y = next(it)
    return x * y + sum(it) * b[0]


def next_default(a, b):
    it = iter(a[:1])
    x = next(it)
    y = next(it, b[0])        # exhausted: the default
    return x * y


def zip_same_iterator(a, b):
    it = iter(a)
    pairs = list(zip(it, it))  # consecutive pairs, as Python pairs them
    return sum(u * v for u, v in pairs) + b[0]


def map_filter_sorted(a, b):
    sq = map(lambda t: t * t, a)
    pos = filter(lambda t: t > 0.1, b * 1.0)
    return sum(sorted(sq)[:2]) + sum(pos) + max(filter(lambda t: t > 9.0, a), default=b[3])


def map_reused(a, b):
    m = map(lambda u, v: u * v, a, b)
    first = list(m)
    again = list(m)           # exhausted
    return sum(first) + len(again)


def dict_views(a, b):
    d = {"x": a[0], "y": a[1] * 2.0, "z": b[2]}
    k, v = min(d.items(), key=lambda kv: kv[1])
    return max(d.values()) + v + sum(iter(d.values()))


def zip_with_shorter(a, b):
    it = iter(a)
    firsts = [u * v for u, v in zip(it, b[:2])]
    rest = list(it)           # zip took one more value from `it` before it stopped
    return sum(firsts) + sum(rest) * 3.0


def passed_to_helper(a, b):
    return _consume(zip(a, b)) + _consume(enumerate(b))


def _consume(it):
    first = next(it)
    return first[0] * first[1] + sum(u * v for u, v in it)


PROGRAMS = [sorted_zip, sorted_enumerate, sorted_itemgetter, max_zip, min_enumerate, max_reversed,
            reuse_exhausted, next_then_rest, next_default, zip_same_iterator, map_filter_sorted,
            map_reused, dict_views, zip_with_shorter, passed_to_helper]


@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("mode", ["rev", "fwd"])
def test_iterator_programs(f, mode):
    check_grads(f, (A, B), wrt=(0, 1), modes=(mode,))


def test_values_match_python():
    import s2sad
    for f in PROGRAMS:
        v, _ = s2sad.vjp(f, A, B)
        assert np.allclose(v, f(A, B)), f.__name__


def test_generated_code_keeps_lists_plain():
    """``_rt.here`` appears only where a value may be an iterator, not for lists and arrays."""
    import s2sad

    def f(a, b):
        xs = [u * 2.0 for u in a]
        return sum(xs) + max(list(b)) + sum(sorted(xs))
    src = s2sad.differentiate(f).adjoint_source(A, B)
    assert "_rt.here" not in src
    check_grads(f, (A, B), wrt=(0, 1), modes=("rev", "fwd"))


def unpacked_iterators(a, b):
    p, q, r = (v * b[0] for v in a[:3])
    s, t = map(lambda v: v * 2.0, a[:2])
    (u, w), c = list(zip(a[:2], b[1:])), 1.0
    return p * q + r + s * t + u[0] * w[1] * c


@pytest.mark.parametrize("mode", ["rev", "fwd"])
def test_unpacking_iterators(mode):
    check_grads(unpacked_iterators, (A, B), wrt=(0, 1), modes=(mode,))


def consumed_after_a_saved_copy(a, b):
    # (fuzzer 77:270) a list of unknown kind consumed by a comprehension, then an array written
    # in place later: the reverse sweep reads saved copies, and the adjoint must still flow
    import copy
    l1 = copy.deepcopy([a[0] * q for q in a])
    s3 = np.sum([q for q in l1])
    a4 = np.zeros(3)
    for i in range(3):
        a4[i] = a[i]
    l5 = [q for q in a4]
    return s3 + l5[0] * b[0]


@pytest.mark.parametrize("mode", ["rev", "fwd"])
def test_consumed_after_a_saved_copy(mode):
    check_grads(consumed_after_a_saved_copy, (A, B), wrt=(0, 1), modes=(mode,))


# == case: zip(*...) and enumerate(*...): the call is resolved when it runs, and its raw zip
# object's values' adjoints went nowhere (a zero gradient, silently)
def zip_star(x, y):
    pair = (x, y)
    return sum(a * b for a, b in zip(*pair))


def transposed_rows(x, y):
    cols = list(zip(*[x, y, x * y]))          # the transpose idiom
    return sum(c[0] * c[2] + c[1] for c in cols)


def enumerate_star(x):
    return sum(i * v for i, v in enumerate(*[x]))


def test_zip_and_enumerate_of_starred_arguments():
    import s2sad
    r = np.random.default_rng(61)
    x, y = r.standard_normal(3), r.standard_normal(3)
    for f, args in ((zip_star, (x, y)), (transposed_rows, (x, y)), (enumerate_star, (x,))):
        check_grads(f, args, wrt=tuple(range(len(args))))
    np.testing.assert_allclose(s2sad.grad(zip_star)(x, y), y, rtol=1e-14)


def sgd_over_items(w, b):               # each key written after its own pass read it
    params = {"w": w * 1.0, "b": b * 1.0}
    grads = {"w": 2 * w, "b": 2 * b}
    for k, v in params.items():
        params[k] = v - 0.1 * grads[k]
    return np.sum(params["w"] * params["b"])


def other_key_over_items(w, b):         # a key the view has yet to yield: Python's view sees it
    params = {"w": w * 1.0, "b": b * 1.0}
    for k, v in params.items():
        params["b"] = v * 2.0
    return np.sum(params["w"] * params["b"])


def sgd_in_place_over_items(w, b):      # the same step as `params[k] -= ...`
    params = {"w": w * 1.0, "b": b * 1.0}
    grads = {"w": 2 * w, "b": 2 * b}
    for k, v in params.items():
        params[k] -= 0.1 * grads[k] + 0.01 * v
    return np.sum(params["w"] * params["b"])


def in_place_then_read_over_items(w, b):   # v is the changed array in Python: refused
    params = {"w": w * 1.0, "b": b * 1.0}
    t = 0.0
    for k, v in params.items():
        params[k] *= 0.5
        t = t + np.sum(v)
    return np.sum(params["w"] * params["b"]) + t


def in_place_over_items_of_one_array(w, b):   # two keys, one array: refused when it runs
    a = w * b
    params = {"w": a, "b": a}
    for k, v in params.items():
        params[k] -= 0.1 * v
    return np.sum(params["w"] * params["b"])


def test_augmented_write_of_the_key_a_dict_view_loop_took():
    import s2sad
    from s2sad.errors import UnsupportedSyntaxError
    w, b = np.array([0.1, 0.2, 0.3]), np.array([1.0, -2.0, 0.5])
    check_grads(sgd_in_place_over_items, (w, b), wrt=(0, 1))
    t = (np.ones(3), np.zeros(3))
    assert s2sad.jvp(sgd_in_place_over_items, (w, b), t)[1] == pytest.approx(
        np.sum(s2sad.grad(sgd_in_place_over_items)(w, b)), rel=1e-12)
    for f in (in_place_then_read_over_items, in_place_over_items_of_one_array):
        with pytest.raises(UnsupportedSyntaxError, match="may hold the same object"):
            s2sad.grad(f, wrt=(0, 1))(w, b)
        with pytest.raises(UnsupportedSyntaxError, match="may hold the same object"):
            s2sad.jvp(f, (w, b), t)


def test_writing_the_key_a_dict_view_loop_took():
    import s2sad
    from s2sad.errors import UnsupportedSyntaxError
    w, b = np.array([0.1, 0.2, 0.3]), np.array([1.0, -2.0, 0.5])
    check_grads(sgd_over_items, (w, b), wrt=(0, 1))
    with pytest.raises(UnsupportedSyntaxError, match="while a `for` loop walks it"):
        s2sad.grad(other_key_over_items, wrt=(0, 1))(w, b)
