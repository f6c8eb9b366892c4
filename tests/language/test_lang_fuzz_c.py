"""Forward-mode crashes found by tests/fuzz seed 20261201 (both modes checked).

20261201:3821, :8513, :11497, :16366, :18600, :9421 (fuzz tag ``loop_var_reuse``): a closure's
tangent (``{captured name: tangent}``, built where the closure is made and where it is called)
read the tangent of a captured variable that was not bound yet, or was bound only on another path
(a variable assigned after the ``def``, in one branch, or a comprehension target inside the nested
def that has the name of one of f's locals): UnboundLocalError on ``_d_k``.  Such tangents now
start as None.

20261201:1501: ``dict(zip(keys, values))`` where a value is the int 0 (``sum`` of an exhausted
iterator): its tangent came out None (the reverse-mode zero of an int), and ``y * _d_s8`` failed.

20261201:18582: ``float - array`` has the float's tangent (a scalar); iterating it (zip, dict,
sum ...) failed with "numpy.float64 object is not iterable".  It is broadcast to the array's shape.
"""
import functools

import numpy as np

from s2sad.testing import check_grads

X = np.array([0.3, -1.2, 0.8])
Y = 0.7
MODES = ("rev", "fwd")


# -- captured variable bound after the def ---------------------------------------------------------
def closure_reads_name_bound_later(x, y):
    def g(t):
        return p * t
    p, q = list(zip(x, x))[0]
    return g(y)


def test_closure_reads_name_bound_later():
    check_grads(closure_reads_name_bound_later, (X, Y), modes=MODES)


def comprehension_in_closure_binds_name_assigned_later(x, y):
    def g(t):
        return sum({"a": t, "b": t}[k] for k in ("a", "b"))
    k = x
    return g(y) + np.sum(k)


def test_comprehension_in_closure_binds_name_assigned_later():
    check_grads(comprehension_in_closure_binds_name_assigned_later, (X, Y), modes=MODES)


def comprehension_in_closure_early_return(x, y):
    def g(t):
        return max({k: v for k, v in {"a": t, "b": y, "c": x[0]}.items()}.values())
    if y > 0.5:
        return g(y)
    k = x
    return np.sum(k)


def test_comprehension_in_closure_early_return():
    check_grads(comprehension_in_closure_early_return, (X, Y), modes=MODES)
    check_grads(comprehension_in_closure_early_return, (X, 0.2), modes=MODES)


def comprehension_in_closure_name_bound_in_branch(x, y):
    if y > 100.0:
        k = y
    def g(t):
        return sum({"a": t, "b": t * x[0]}[k] for k in ("a", "b"))
    return g(y)


def test_comprehension_in_closure_name_bound_in_branch():
    check_grads(comprehension_in_closure_name_bound_in_branch, (X, Y), modes=MODES)


def loop_target_like_closure_comprehension(x, y):
    def g(t):
        return sum([t * k for k in x])
    acc = y
    for k in {"a": x[0], "b": y}:
        acc = acc * x[1] + y
    return g(y) + acc


def test_loop_target_like_closure_comprehension():
    check_grads(loop_target_like_closure_comprehension, (X, Y), modes=MODES)


# -- 1501: dict value that is the int 0 ------------------------------------------------------------
def helper(t, u):
    return t


def dict_of_exhausted_sums(x, y):
    it1 = map(functools.partial(helper, u=x), x)
    s8 = dict(zip((y, y, y), [sum(it1) for t in x]))[y]
    return y * s8 + np.sum(x)


def test_dict_of_exhausted_sums():
    check_grads(dict_of_exhausted_sums, (X, Y), modes=MODES)


def dict_int_value(x, y):
    d = dict(zip(("a", "b"), [x[0] * y, 0]))
    return y * d["b"] + d["a"]


def test_dict_int_value():
    check_grads(dict_int_value, (X, Y), modes=MODES)


# -- 18582: scalar minus array, iterated ---------------------------------------------------------
def scalar_minus_array_zipped(x, y):
    d2 = dict(zip(("a", "b", "c"), float(x[1]) - np.stack([0.7, 1.2, 0.25])))
    return sum(d2.values()) * y


def test_scalar_minus_array_zipped():
    check_grads(scalar_minus_array_zipped, (X, Y), modes=MODES)


def scalar_times_array_summed(x, y):
    return sum(y * np.array([0.7, 1.2, 0.25])) + sum(a * b for a, b in zip(x, x[0] + np.ones(3)))


def test_scalar_times_array_summed():
    check_grads(scalar_times_array_summed, (X, Y), modes=MODES)
