"""Lists and tuples built with + and *, augmented assignment through aliases, generator
expressions used as iterators, functools.reduce over iterators, comprehension scopes (issue 10;
several were found by tests/fuzz)."""
import functools
import operator

import numpy as np
import pytest

import s2sad
from s2sad.errors import UnsupportedSyntaxError
from s2sad.testing import check_grads

X = np.array([0.3, -1.2, 0.8])


def concat_index(x, y):
    l = [x[0]] + [y]
    return l[1] * l[0]


def concat_sorted_zip(x, y):
    return sorted(zip([x[0], x[1]] + [y], x))[2][0]


def concat_dict_items(x, y):
    l1 = [x[0], x[1]] + [2.0]
    return sorted({"a": l1[2], "b": y}.items(), key=lambda kv: 1)[1][1] + l1[1] * 3


def repeat_and_tuple_concat(x, y):
    l = [x[0] * y] * 3
    t = (y,) + (x[1], 2.0)
    return sum(l) + t[0] * t[1] + t[2]


def augmented_list(x, y):
    acc = []
    acc += [x[0]]
    acc += [y * 2.0]
    return acc[0] * acc[1]


def next_of_generator(x, y):
    return next(t * y for t in x)


def generator_then_rest(x, y):
    g = (v * y for v in x)
    first = next(g)
    return first + sum(g) + sum(v * v for v in x)


def reduce_over_iterators(x, y):
    d = {"a": x[0], "b": y}
    return functools.reduce(operator.mul, d.values(), 1.0) + \
        functools.reduce(operator.add, reversed(x)) * y + functools.reduce(operator.add, iter(x))


def comprehension_scope(x, y):
    t = y
    return sum([t * 2 for t in [t, y]]) + sum({k: k * y for k in [t]}.values())


@pytest.mark.parametrize("f", [concat_index, concat_sorted_zip, concat_dict_items,
                               repeat_and_tuple_concat, augmented_list, next_of_generator,
                               generator_then_rest, reduce_over_iterators, comprehension_scope],
                         ids=lambda f: f.__name__)
@pytest.mark.parametrize("mode", ["rev", "fwd"])
def test_sequences(f, mode):
    check_grads(f, (X, 0.7), modes=(mode,))


def aug_through_alias(x, y):
    a = x
    a *= y                   # changes x too
    return x[1]


def aug_list_through_alias(x, y):
    l = [x[0]]
    m = l
    m += [y]                 # changes l too
    return l[-1] * 2.0


@pytest.mark.parametrize("f", [aug_through_alias, aug_list_through_alias], ids=lambda f: f.__name__)
def test_augmented_assignment_through_alias_refused(f):
    with pytest.raises(UnsupportedSyntaxError) as e:
        s2sad.grad(f, wrt=1)(X, 0.7)
    assert "test_lang_sequences.py:" in str(e.value) and "Fix:" in str(e.value)


def aug_numbers_and_fresh_arrays(x, y):
    a = y
    b = a
    b += 1.0                 # a float: rebinding, as in Python
    c = x * 1.0
    c *= y
    return a * b + np.sum(c)


def test_augmented_assignment_on_numbers_and_fresh_arrays():
    check_grads(aug_numbers_and_fresh_arrays, (X, 0.7), modes=("rev", "fwd"))


def write_into_integer_array(x):
    b = np.zeros(2, dtype=int)
    b[0] = 3 * x[0]          # truncated: carries no derivative
    c = np.zeros(2)
    c[1] = 2 * x[1]
    return b[0] * 1.0 + c[1] + np.sum(b * x[:2])


@pytest.mark.parametrize("mode", ["rev", "fwd"])
def test_write_into_integer_array(mode):
    check_grads(write_into_integer_array, (np.array([1.3, -1.2, 0.8]),), modes=(mode,))


def view_bound_in_a_branch(x, y):
    # (fuzzer 101:762) a view of the argument on one branch: the write changes x
    if y:
        a1 = x[::1]
    else:
        a1 = np.zeros(3)
    a1[2] *= y
    return np.sum(x)


def constant_into_view_of_active(x, y):
    s = np.sum(x * x)
    a1 = x[1:]
    a1[0] = 0.0
    return s + np.sum(x) * y


def iterator_reused_after_loop_with_break(x, y):
    # (fuzzer 101:573) the loop may stop early: what is left of the iterator is not known
    it1 = zip(x, x)
    for p, q in it1:
        break
    return sum((p for p, q in it1)) * y


@pytest.mark.parametrize("f, wrt", [(view_bound_in_a_branch, 0), (view_bound_in_a_branch, 1),
                                    (constant_into_view_of_active, 0),
                                    (iterator_reused_after_loop_with_break, 0),
                                    (iterator_reused_after_loop_with_break, 1)],
                         ids=lambda v: getattr(v, "__name__", str(v)))
def test_refused_instead_of_wrong(f, wrt):
    with pytest.raises(UnsupportedSyntaxError) as e:
        s2sad.grad(f, wrt=wrt)(X.copy(), 0.7)
    assert "test_lang_sequences.py:" in str(e.value) and "Fix:" in str(e.value)


def loop_with_break_over_iterator(x, y):
    s = 0.0
    for v in iter(x * y):
        if v > 5.0:
            break
        s = s + v * v
    return s


@pytest.mark.parametrize("mode", ["rev", "fwd"])
def test_loop_with_break_over_iterator(mode):
    check_grads(loop_with_break_over_iterator, (X, 0.7), modes=(mode,))


class Bag:
    def __init__(self):
        self.items = []

    def grow(self, v):
        self.items.append(v)           # the list is still self.items: the method updates self


def method_appends_to_attribute(x, y):
    b = Bag()
    b.grow(x[0] * y)
    b.grow(x[1])
    return b.items[0] * b.items[1] + x[2]


def variable_named_r(x, y):
    r = x * 2.0                        # its adjoint must not be the output's (_b_r)
    if y > 0:
        return np.sum(r * y)
    return np.sum(r * r * y)


@pytest.mark.parametrize("f", [method_appends_to_attribute, variable_named_r],
                         ids=lambda f: f.__name__)
@pytest.mark.parametrize("mode", ["rev", "fwd"])
@pytest.mark.parametrize("y", [0.7, -0.7])
def test_object_lists_and_names(f, mode, y):
    check_grads(f, (X, y), modes=(mode,))


def list_changed_while_zipped(x, y):
    l4 = [y, 2 * y, 3 * y]
    it9 = zip(("a", "b", "c"), l4)
    l4.insert(0, np.mean(x))          # Python's zip yields the changed list's values
    l4.pop()
    return sum(l4) + 0.5 * sum(v for k, v in it9)


def test_list_changed_while_an_iterator_over_it_is_pending_refused():
    with pytest.raises(UnsupportedSyntaxError) as e:
        s2sad.grad(list_changed_while_zipped, wrt=1)(X, 0.5)
    assert "test_lang_sequences.py:" in str(e.value) and "Fix:" in str(e.value)


def map_then_change(x, y):
    l = [y, 2 * y]
    m = map(lambda t: t * 3.0, l)
    l[0] = x[0]
    return sum(m)


def view_then_change(x, y):
    d = {"a": y, "b": x[1]}
    v = d.values()
    d["a"] = x[0] * 2.0
    return sum(v)


def generator_then_change(x, y):
    l = [y, 2 * y]
    g = (t * 3.0 for t in l)
    l.append(x[0])
    return sum(g)


@pytest.mark.parametrize("f", [map_then_change, view_then_change, generator_then_change],
                         ids=lambda f: f.__name__)
def test_lazy_views_of_changed_containers_refused(f):
    with pytest.raises(UnsupportedSyntaxError) as e:
        s2sad.grad(f, wrt=1)(X, 0.5)
    assert "test_lang_sequences.py:" in str(e.value) and "Fix:" in str(e.value)


def view_then_update(x, y):
    # (fuzzer 202:129) dict.update with keywords changes the dict behind its items() view
    d2 = dict(zip("a", x))
    it3 = d2.items()
    d2.update(a=y)
    return sum((v for k, v in it3))


def test_view_then_update_refused():
    for w in (0, 1):
        with pytest.raises(UnsupportedSyntaxError):
            s2sad.grad(view_then_update, wrt=w)(X, 0.5)


def generator_reads_changed_list(x, y):
    # (fuzzer 404:1447) a generator computes its values when they are taken
    l4 = list(x)
    it5 = (sum(l4) for t in x)
    l4.pop()
    return sum(it5)


def generator_reads_rebound_name(x, y):
    it = (t * y for t in x)
    y = 5.0
    return sum(it)


@pytest.mark.parametrize("f", [generator_reads_changed_list, generator_reads_rebound_name],
                         ids=lambda f: f.__name__)
def test_generator_reading_later_changes_refused(f):
    with pytest.raises(UnsupportedSyntaxError) as e:
        s2sad.grad(f, wrt=0)(X, 0.5)
    assert "test_lang_sequences.py:" in str(e.value) and "Fix:" in str(e.value)


def zip_over_list_changed_in_body(x, y):
    # (fuzzer 20261201:3222)
    l1 = [y, 2 * y, 3 * y]
    acc = 0.0
    for p, q in zip(x, l1):
        l1[-2] *= x[0]
        acc += q * p
    return acc


def test_zip_over_list_changed_in_body_refused():
    with pytest.raises(UnsupportedSyntaxError) as e:
        s2sad.grad(zip_over_list_changed_in_body, wrt=1)(X, 0.5)
    assert "test_lang_sequences.py:" in str(e.value) and "Fix:" in str(e.value)


def dict_values_doubled_in_loop(x, y):
    d = {"a": x[0], "b": y}
    for k in d:
        d[k] = d[k] * 2.0
    return d["a"] * d["b"]


def test_dict_written_while_its_keys_are_walked():
    check_grads(dict_values_doubled_in_loop, (X, 0.5), modes=("rev", "fwd"))
