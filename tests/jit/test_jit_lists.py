"""jit=True: builtin ``max``/``min``/``sum``/``abs``/``sorted`` and lists of numbers compile
in both modes (runtime/jit.py: abs_tangent, loop_zip_seq, seq_adjoint, add_part and
add_part_tangent, zero_of of a list, list items and slices in getitem_adjoint/acc_getitem, max of
a list, sorted_adjoint; runtime/jit_forward.py: sum_tangent, extremum_tangent, sorted_tangent).
Each made the whole derivative run as Python before, in functions numba itself compiles (found
by the fuzzer: programs whose primal ``numba.njit`` compiles but whose derivative fell back)."""
import numpy as np
import pytest

import s2sad

from .compare import (compiled, compiled_jvp, random_tangents, same_as_python,
                      same_jvp_as_python)

numba = pytest.importorskip("numba")


def clip_fill(x, y):                 # max of two floats, written into an array in a loop
    a = np.zeros(3)
    for i in range(3):
        a[i] = max(np.cos(y), x[i]) + min(x[i], -y)
    return 1.3 * np.sum(a)


def list_sum(x, y):
    return sum([y, x[-1] * y, -0.3]) + max([x[0], y, x[1]]) ** 2


def zip_unused(x, y):                # a zip loop whose names the body never reads
    acc = y
    for p, q in zip(x, x):
        acc = x[1] * acc - 1.1
    return 1.3 * acc


def listed(x, y):                    # list(array) and its sum
    return 0.5 * sum(list(x * x + y))


def concatenated(x, y):              # list slices and +
    l2 = [y, x[0], y][1:] + [y * y, y, y][:1]
    return 0.5 * y + 1.3 * sum(l2) + l2[1] * l2[2]


def absolute(x, y):
    s = 0.0
    for v in x:
        s += abs(v - y) * v
    return s + abs(y)


def ordered(x, y):                   # sorted without a key, both directions
    s = sorted([y, x[1] * y, x[2]])
    r = sorted(x, reverse=True)
    return s[0] * 2.0 + s[-1] + r[0] * r[2]


def list_loop(x, y):                 # a loop over a list that is not differentiated in every item
    acc = y
    for t in [t for t in [y, x[0], 2.0]]:
        acc = acc * np.tanh(acc / (1.0 + t ** 2))
    return acc


_R = np.random.default_rng(61)
X, Y = _R.normal(size=3), 0.7
CASES = [clip_fill, list_sum, zip_unused, listed, concatenated, absolute, ordered, list_loop]


@pytest.mark.parametrize("f", CASES, ids=[f.__name__ for f in CASES])
def test_compiles_as_python(f):
    same_as_python(f, (X, Y), (0, 1))


@pytest.mark.parametrize("f", CASES, ids=[f.__name__ for f in CASES])
def test_tangent_compiles(f):
    same_jvp_as_python(f, (X, Y), random_tangents((X, Y), 5))


def test_max_of_equal_floats_picks_the_first():
    """Python's max returns the first of equal items: the derivative goes to it alone, in both
    modes, compiled as in Python."""
    def f(x, y):
        return max(y, x[0], y) * 2.0 + min([x[1], y, x[1]])
    x = np.array([0.2, 0.4, 0.0])
    _, g = compiled(f, (0, 1), (x, 0.4))          # (a tie: no central differences)
    _, gp = s2sad.value_and_grad(f, wrt=(0, 1))(x, 0.4)
    assert g[1] == gp[1] == 2.0                   # max's first y; min's first x[1], not y
    np.testing.assert_array_equal(g[0], [0.0, 1.0, 0.0])
    np.testing.assert_array_equal(gp[0], g[0])
    _, t = compiled_jvp(f, (x, 0.4), (np.array([1.0, 10.0, 100.0]), 1000.0))
    assert t == s2sad.jvp(f, (x, 0.4), (np.array([1.0, 10.0, 100.0]), 1000.0))[1] == 2010.0


def test_a_list_of_another_length_is_a_shape_error_as_in_python():
    """The tangent of a sum needs the list's own tangents: a list built longer in the primal
    than its tangent (not possible in generated code) would raise, not read past the end."""
    from s2sad.runtime import jit_forward
    f = numba.njit(lambda n: jit_forward.sum_tangent([1.0, 2.0], [5.0] * n, 0.0))
    with pytest.raises(ValueError):
        f(3)
    assert f(2) == 3.0


def test_sorted_keeps_equal_items_in_order_as_python():
    """sorted is stable, reverse=True too: of equal items the first stays first, and its
    adjoint goes to it, in both modes, compiled as in Python."""
    def f(x, y):
        s = sorted([y, x[0], y, x[1]], reverse=True)
        return s[0] * 1.0 + s[1] * 10.0 + s[2] * 100.0 + s[3] * 1000.0
    x = np.array([0.4, 0.1, 0.0])
    _, g = compiled(f, (0, 1), (x, 0.4))
    _, gp = s2sad.value_and_grad(f, wrt=(0, 1))(x, 0.4)
    assert g[1] == gp[1] and np.array_equal(g[0], gp[0])
    assert g[1] == 1.0 + 100.0 and g[0][0] == 10.0        # y, x[0], y: the first y leads
    t = (np.array([1.0, 2.0, 0.0]), 5.0)
    assert compiled_jvp(f, (x, 0.4), t)[1] == s2sad.jvp(f, (x, 0.4), t)[1]


_CLOSURE_OVER_CHANGED_LIST = '''
import heapq
import itertools
import operator

import numpy as np


def f(x, y):
    l1 = list(itertools.accumulate([y, x[0], 0.25]))
    s2 = heapq.nlargest(2, [v for i, v in enumerate([x[2], x[-1], x[-1]])])[1]
    a3 = np.array(np.stack([x.item(0), max(zip(x, list(x)), key=operator.itemgetter(1))[1],
                            x[-1]]))
    acc4 = y
    n5 = 0
    while n5 < 3:
        acc4 = acc4 + ((np.array(l1) @ np.c_[a3, x][:, 1]) *
                       (lambda t: min(l1, key=np.sin))(np.c_[a3, x].sum()))
        n5 += 1
    l1.insert(0, a3[-3]); l1.pop()
    s8 = min(l1[-1], s2)
    return 0.5 * sum(l1) + 1.3 * s8
'''


def test_a_closure_over_a_list_changed_later_is_not_inlined():
    """Fuzz seed 120701 program 2050 (shortened): Python mode differentiates it; once inlined, the
    lambda's binding of ``l1`` made an alias that ``l1.insert`` then changed, and jit=True refused
    the function.  A closure over a variable changed in place later stays a call (jit=True runs
    the derivative as Python, with its warning)."""
    from tests.fuzz.oracle import check_source
    for point in (0, 1):
        res = check_source(_CLOSURE_OVER_CHANGED_LIST, seed=point, modes=("rev", "revjit"))
        assert res.modes["rev"].outcome == "agree", res.report()
        assert res.modes["revjit"].outcome in ("agree", "fellback"), res.report()


def _helper(a, b):
    return a * b + np.sin(b)


def accumulate_through_helper(x, y):
    acc = 0.0
    for t in [y, -1.1, y]:
        acc += _helper(acc, y) * t
    return acc + x[0]


def test_a_refusal_only_the_numba_build_meets_runs_as_python():
    """The numba build inlines ``_helper``, binding its parameter to ``acc``; the aliasing check
    then took ``acc += ...`` for an in-place change of a shared object and jit=True refused a
    function Python mode differentiates (fuzz seed 120704 program 1625).  Such a refusal now runs
    the derivative as Python, with one JitFallbackWarning naming it, in both modes."""
    import warnings

    from s2sad.errors import JitFallbackWarning
    x, y = np.array([0.3, 0.5, 0.1]), 0.7
    want = s2sad.value_and_grad(accumulate_through_helper, wrt=(0, 1))(x, y)
    counts = []
    for _ in range(2):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            got = s2sad.value_and_grad(accumulate_through_helper, wrt=(0, 1), jit=True)(x, y)
            tj = s2sad.jvp(accumulate_through_helper, (x, y), (np.ones(3), 2.0), jit=True)
        assert got[0] == want[0] and got[1][1] == want[1][1]
        np.testing.assert_array_equal(got[1][0], want[1][0])
        assert tj == s2sad.jvp(accumulate_through_helper, (x, y), (np.ones(3), 2.0))
        msgs = [str(m.message) for m in w if issubclass(m.category, JitFallbackWarning)]
        assert all("could not build the derivative" in m and "acc +=" in m for m in msgs)
        counts.append(len(msgs))
    assert counts == [2, 0]        # (reverse and forward mode once each; then no more)


def closure_over_changed_list(x, y):
    l1 = [y, x[0], 0.25]
    k = lambda t: l1[0] * t  # noqa: E731
    m = k(2.0)
    l1.insert(0, x[1])
    return m * sum(l1)


def test_python_modes_own_refusal_is_what_jit_raises():
    """Where Python mode refuses too, jit=True raises Python mode's refusal (its message, its
    line), not the numba build's."""
    from s2sad.errors import UnsupportedSyntaxError
    x = np.array([0.3, 0.5, 0.1])
    with pytest.raises(UnsupportedSyntaxError) as py:
        s2sad.value_and_grad(closure_over_changed_list, wrt=(0, 1))(x, 0.7)
    with pytest.raises(UnsupportedSyntaxError) as jit:
        s2sad.value_and_grad(closure_over_changed_list, wrt=(0, 1), jit=True)(x, 0.7)
    assert str(jit.value) == str(py.value)
