"""Programs the fuzzer found s2sad getting wrong (or crashing on), shrunk and kept.

One test per finding, the program inline.  Each is judged like a fuzzed program (see oracle.py):
in both modes, at three random points, against central differences; it passes when s2sad gives
the right derivative or refuses clearly (an S2SADError naming the file:line, with a Fix).
A finding not fixed yet is marked xfail(strict=False) with its class as the reason.
"""
import textwrap

import pytest

from .oracle import DISCARDED, check_source


def judge(source, modes=("rev", "fwd"), points=(0, 1, 2)):
    for point in points:
        res = check_source(textwrap.dedent(source), seed=point, modes=modes)
        assert res.outcome not in DISCARDED, \
            f"point {point}: the program was discarded ({res.detail}); the test could not fail"
        assert res.outcome in ("agree", "refused"), f"point {point}:\n{res.report()}"


# -- found by the fuzzer, seed 1 and 2 (first runs) ----------------------------------------

@pytest.mark.xfail(strict=False, reason="list made by + (concatenation): reverse sweep crashes")
def test_list_concatenation_element():
    # rev: ValueError: too many values to unpack (expected 1) in f__bwd
    judge("""
        def f(x, y):
            l = [x[0]] + [y]
            return l[1]
    """)


@pytest.mark.xfail(strict=False, reason="list made by + (concatenation) consumed by min/sorted/zip")
def test_list_concatenation_min_with_key():
    judge("""
        def f(x, y):
            l = [y]
            return min(l + l, key=lambda t: t)
    """)


@pytest.mark.xfail(strict=False, reason="list made by + (concatenation) consumed by min/sorted/zip")
def test_list_concatenation_zipped_and_sorted():
    # rev gave a derivative 3.5 times too large before it crashed
    judge("""
        def f(x, y):
            return sorted(zip([x[0], x[1]] + [y], x))[2][0]
    """)


@pytest.mark.xfail(strict=False, reason="list made by + (concatenation) in a dict, sorted items")
def test_list_concatenation_into_dict_items_sorted():
    # fwd: IndexError: list index out of range in f__jvp
    judge("""
        def f(x, y):
            l1 = [x[0], x[1]] + [2.0]
            return sorted({"a": l1[2], "b": y}.items(), key=lambda kv: 1)[1][1]
    """)


@pytest.mark.xfail(strict=False, reason="comprehension target named like a variable its iterable reads")
def test_comprehension_target_shadows_name_in_iterable():
    # both modes: UnboundLocalError: cannot access local variable 't_2'
    judge("""
        def f(x, y):
            t = y
            return sum([t * 2 for t in [t, y]])
    """)


@pytest.mark.xfail(strict=False, reason="comprehension target named like a variable its iterable reads")
def test_comprehension_target_shadows_parameter_of_closure():
    judge("""
        def f(x, y):
            def g(t):
                return sum([t * 2 for t in [t, y]])
            return g(y)
    """)


@pytest.mark.xfail(strict=False, reason="next() of a generator expression")
def test_next_of_generator_expression():
    # both modes: TypeError: 'list' object is not an iterator
    judge("""
        def f(x, y):
            return next(t * y for t in x)
    """)


@pytest.mark.xfail(strict=False, reason="functools.reduce over an iterator or a dict view")
def test_reduce_over_reversed():
    # both modes: TypeError: 'Iter' object is not subscriptable
    judge("""
        import functools
        import operator

        def f(x, y):
            return functools.reduce(operator.add, reversed(x)) * y
    """)


@pytest.mark.xfail(strict=False, reason="functools.reduce over an iterator or a dict view")
def test_reduce_over_dict_values():
    # both modes: TypeError: 'dict_values' object is not subscriptable
    judge("""
        import functools
        import operator

        def f(x, y):
            d = {'a': x[0], 'b': y}
            return functools.reduce(operator.mul, d.values())
    """)


@pytest.mark.xfail(strict=False, reason="in-place write into the argument through an alias")
def test_inplace_write_into_argument_through_alias():
    # both modes: a silently wrong value (x is not updated); `x *= y` or `a[0] = y` are refused
    judge("""
        def f(x, y):
            a = x
            a *= y
            return x[1]
    """)


def test_frompyfunc_of_a_closure():
    # fwd gave a wrong tangent (class 4 of issue 10); refused now
    judge("""
        import numpy as np

        def f(x, y):
            a = np.frompyfunc(lambda t: t * y, 1, 1)(x).astype(float)
            return np.sum(a)
    """)


def test_deepcopy_of_dict_call():
    # rev gave a zero gradient
    judge("""
        import copy

        def f(x, y):
            d = copy.deepcopy(dict(a=x[0], b=y))
            return sum(d.values())
    """)
