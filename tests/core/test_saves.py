"""The save plan of the reverse sweep: reads of one value share one push and one pop; a value
changed between two reads is saved for each."""
import math
import re

import numpy as np
import pytest

import s2sad
from core_util import check_grads, randn


def _counts(src):
    """{stack: (pushes, pops)} of a generated source."""
    out = {}
    for name in set(re.findall(r"(_s_\w+)\.append\(", src)):
        out[name] = (src.count(f"{name}.append("), src.count(f"{name}.pop()"))
    return out


def naive_map(x):
    y = np.empty_like(x)
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            y[i, j] = math.sin(math.cos(math.exp(x[i, j])))
    return np.sum(y)


def test_a_result_read_by_its_adjoint_and_the_next_call_is_saved_once():
    x = randn(3, 4, seed=1)
    src = s2sad.differentiate(naive_map).adjoint_source(x)
    # math.exp's adjoint reads its result, math.cos's its argument: the same value
    e = re.search(r"(_\d+) = math\.exp\(", src).group(1)
    assert _counts(src)[f"_s{e}"] == (1, 1)
    assert all(push == pop for push, pop in _counts(src).values())
    v, g = s2sad.value_and_grad(naive_map)(x)
    ex = np.exp(x)
    np.testing.assert_allclose(v, np.sum(np.sin(np.cos(ex))), rtol=1e-13)
    np.testing.assert_allclose(g, np.cos(np.cos(ex)) * -np.sin(ex) * ex, rtol=1e-13)


def chain_of_three(x):
    s = 0.0
    for i in range(len(x)):
        a = math.exp(x[i])              # read after (exp's adjoint)
        b = math.sin(a) + math.cos(a)   # read before, twice
        s = s + a * b                   # read before, by the product's adjoint
    return s


def test_three_reads_of_one_value_share_one_push():
    x = randn(5, seed=2)
    src = s2sad.differentiate(chain_of_three).adjoint_source(x)
    assert _counts(src)["_s_a"] == (1, 1)
    a = np.exp(x)
    b = np.sin(a) + np.cos(a)
    want = (b + a * (np.cos(a) - np.sin(a))) * a
    np.testing.assert_allclose(s2sad.grad(chain_of_three)(x), want, rtol=1e-12)


def rebound_between_reads(x):
    s = 0.0
    for i in range(len(x)):
        a = math.exp(x[i])
        b = math.sin(a)                 # reads this a
        a = math.cos(b)                 # a rebound
        s = s + math.sin(a) * b         # reads the new a
    return s


def test_a_variable_rebound_between_two_reads_is_saved_for_each():
    x = randn(4, seed=3)
    src = s2sad.differentiate(rebound_between_reads).adjoint_source(x)
    pushes, pops = _counts(src)["_s_a"]
    assert pushes == pops == 2          # the first a (read by exp and sin), the new a
    a1 = np.exp(x)
    b = np.sin(a1)
    a2 = np.cos(b)
    db = np.cos(a2) * -np.sin(b) * b + np.sin(a2)
    np.testing.assert_allclose(s2sad.grad(rebound_between_reads)(x),
                               db * np.cos(a1) * a1, rtol=1e-12)


def caught_between_reads(x):
    s = 0.0
    for i in range(len(x)):
        try:
            a = math.exp(x[i])
            b = math.sin(a)
            if i == 2:
                raise ValueError
            c = math.cos(a)
            s = s + b * c
        except ValueError:
            s = s + b
    return s


def test_reads_in_a_try_body_that_records_progress_keep_their_own_saves():
    """The reverse of a statement after the one that raised is skipped: the earlier read must
    not count on its pop."""
    x = randn(4, seed=4)
    check_grads(caught_between_reads, (x,))
    a = np.exp(x)
    want = np.where(np.arange(4) == 2, np.cos(a) * a,
                    (np.cos(a) * np.cos(a) - np.sin(a) * np.sin(a)) * a)
    np.testing.assert_allclose(s2sad.grad(caught_between_reads)(x), want, rtol=1e-12)


def loop_reads_what_the_block_read(x, n):
    s = 0.0
    a = math.exp(x)
    t = math.sin(a)
    for _ in range(n):
        s = s + a * t                   # reads a and t each trip
    return s + math.cos(a)


@pytest.mark.parametrize("n", [0, 1, 3])
def test_reads_around_a_loop_that_reads_the_same_value(n):
    x = 0.3
    a = math.exp(x)
    want = (n * (math.sin(a) + a * math.cos(a)) - math.sin(a)) * a
    assert s2sad.grad(loop_reads_what_the_block_read)(x, n) == pytest.approx(want, rel=1e-12)
