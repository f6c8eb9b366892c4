"""Findings of tests/fuzz seed 20261201 (silently wrong answers in reverse mode).

Closure over a closure (20261201:19, :93, :341, :2017): a closure held in another closure's cell
(``g1 = lambda t: y`` read by ``g2``) counted as a constant (functions in cells were static), so
the values it captured got no derivative through the outer closure: a silent zero.

A ``for`` loop whose body also takes values from the iterator it walks (20261201:3141, :4153,
:17125): s2sad takes a loop's values before it runs, Python's loop skips what the body took.
Refused (like a use after a loop that may stop early).

A comprehension target shadowing an enclosing variable, read by a lambda in the comprehension
(20261201:7606): the lambda was emitted as written and read the enclosing variable, not the
renamed comprehension target: a wrong value.

A dict display with a repeated key (shrunk form of 20261201:3222): each value got the key's
adjoint, though Python keeps only the last one."""
import os

import numpy as np
import pytest

import s2sad
from s2sad.errors import S2SADError
from s2sad.testing import check_grads

X = np.array([0.3, -1.2, 0.8])
Y = 0.7
MODES = ("rev", "fwd")


# -- closures over closures --------------------------------------------------------------------
def closure_calls_closure(x, y):
    g1 = lambda t: y
    def g2(t):
        return g1(x)
    return g2(y)


def closure_maps_closure(x, y):
    def g1(t):
        return y * t
    g2 = lambda t: sum(map(g1, x))
    return g2(y)


def closure_next_map(x, y):
    def g2(t):
        return y * t
    def g3(t):
        return next(map(g2, x))
    return g3(y)


def nested_three_levels(x, y):
    g1 = lambda t: y * x[0]
    g2 = lambda t: g1(t) * y
    def g3(t):
        return g2(t) + t
    return g3(y)


@pytest.mark.parametrize("f", [closure_calls_closure, closure_maps_closure, closure_next_map,
                               nested_three_levels])
def test_closure_over_closure(f):
    check_grads(f, (X, Y), modes=MODES)


# -- loops whose body takes from the iterator they walk -----------------------------------------
def loop_body_walks_same_iterator(x, y):
    it4 = enumerate(x)
    acc5 = y
    for i, t in it4:
        for i7, t8 in it4:
            pass
        acc5 = y * acc5
    return acc5


def loop_body_sums_same_zip(x, y):
    it3 = zip(x, x)
    l4 = []
    for k5, t6 in it3:
        l4.append(sum(v * y for k, v in it3))
    return sum(l4)


def loop_body_sums_same_generator(x, y):
    it3 = (t for t in x)
    acc5 = y
    for t6 in it3:
        sum(it3)
        acc5 = y * acc5
    return acc5


@pytest.mark.parametrize("f", [loop_body_walks_same_iterator, loop_body_sums_same_zip,
                               loop_body_sums_same_generator])
@pytest.mark.parametrize("mode", MODES)
def test_loop_body_consuming_its_iterator_refused(f, mode):
    with pytest.raises(S2SADError) as e:
        check_grads(f, (X, Y), modes=(mode,))
    msg = str(e.value)
    assert f"{os.path.basename(__file__)}:" in msg
    assert "Fix:" in msg


def loop_reads_list_it_walks(x, y):
    l = [y, x[0], x[1]]
    s = 0.0
    for v in l:
        s = s + v * sum(l)
    return s


def test_loop_reading_a_list_it_walks_still_works():
    check_grads(loop_reads_list_it_walks, (X, Y), modes=MODES)


def loop_uses_iterator_after_full_loop_elsewhere(x, y):
    it = iter(x)
    s = y
    for t in it:
        s = s * t
    return s + sum(x) * y


def test_loop_over_iterator_without_body_use_still_works():
    check_grads(loop_uses_iterator_after_full_loop_elsewhere, (X, Y), modes=MODES)


# -- comprehension targets read by a lambda in the comprehension ---------------------------------
def dictcomp_lambda_reads_shadowing_target(x, y):
    i = 0
    d4 = {k: max(x * y, key=lambda t: (t - 10 * i) ** 2) for i, k in enumerate(x)}
    return sum(d4.values()) + i


def listcomp_lambda_reads_shadowing_target(x, y):
    t = y
    l = [(lambda u: u * t)(y) for t in x]
    return sum(l) + t


def test_lambda_reads_renamed_comprehension_target():
    assert s2sad.value_and_grad(dictcomp_lambda_reads_shadowing_target)(X, Y)[0] == \
        pytest.approx(dictcomp_lambda_reads_shadowing_target(X, Y))
    check_grads(listcomp_lambda_reads_shadowing_target, (X, Y), modes=MODES)


# -- dict displays with repeated keys ------------------------------------------------------------
def dict_display_repeated_keys(x, y):
    d = {'a': y * x[0], 'b': x[1], 'a': y * y}
    e = {y: y, y: 2.0 * y}
    return d['a'] + d['b'] + sum(e.values())


def test_dict_display_repeated_keys():
    check_grads(dict_display_repeated_keys, (X, Y), modes=MODES)


# -- key functions reading a loop variable (late binding), 20261201:7606 ------------------------
# The reverse sweep called the key again to find the item min/max/sorted took, when the loop
# variable it reads had moved on; the item min/max took is now read from the result, and the
# order sorted (heapq.nsmallest/nlargest) made from its result list (runtime._sorted_order).
def max_key_reads_loop_variable(x, y):
    s = 0.0
    for i in range(3):
        s = s + max(x * y, key=lambda t: (t - i) ** 2) + min([y, x[0], x[2]], key=lambda t: abs(t - i))
    return s


def sorted_key_reads_loop_variable(x, y):
    s = 0.0
    for i in range(3):
        s = s + sorted(x * y, key=lambda t: (t - i) ** 2)[0] * 2.0 + \
            sorted([y, x[0], x[1]], key=lambda t: (t - i) ** 2)[1]
    return s


def sorted_reverse_key_reads_loop_variable(x, y):
    l = [x[0], y, x[0], x[2]]                 # (two equal items: a stable sort keeps their order)
    s = 0.0
    for i in range(2):
        r = sorted(l, key=lambda t: t * (2 * i - 1), reverse=True)
        s = s + r[0] * 3.0 + 2.0 * r[1] + r[2] * y
    return s


def heapq_key_reads_loop_variable(x, y):
    import heapq
    s = 0.0
    for i in range(3):
        r = heapq.nsmallest(2, x, key=lambda t: (t - 0.5) * (i - 1))
        q = heapq.nlargest(2, [y, x[1], x[2]], key=lambda t: (t - 0.5) * (i - 1))
        s = s + r[0] * y + 3.0 * r[1] + q[0] * 2.0 - q[1]
    return s


def sorted_rebinds_the_list_it_sorts(x, y):
    # (the sorted list and the one it came from share a name: the adjoint needs both)
    l = [x[0], y, x[2]]
    for i in range(2):
        l = sorted(l, key=lambda v: v * (1 - 2 * i))
        l = [l[0] * y, l[1], l[2] * 2.0]
    m = [x[0], x[1] * y, x[2]]
    m = max(m, key=lambda v: -v)
    return l[0] * 2.0 + l[2] + m


@pytest.mark.parametrize("f", [max_key_reads_loop_variable, dictcomp_lambda_reads_shadowing_target,
                               sorted_key_reads_loop_variable,
                               sorted_reverse_key_reads_loop_variable,
                               heapq_key_reads_loop_variable, sorted_rebinds_the_list_it_sorts])
def test_key_reads_loop_variable(f):
    check_grads(f, (X, Y), modes=MODES)
