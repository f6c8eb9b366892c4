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
