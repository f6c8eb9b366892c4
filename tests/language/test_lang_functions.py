"""Functions as values: closures, nested defs, lambdas, partial, higher-order builtins."""
import functools
import math

import numpy as np

import s2sad
from lang_helpers import check_grads, rng, assert_close


# == case: builtin_abs
def l1_plus(x, y):
    return abs(x - y) + abs(x * y)


def test_builtin_abs():
    check_grads(l1_plus, (0.7, -1.9), wrt=(0, 1))
    assert_close(s2sad.grad(l1_plus, wrt=(0, 1))(0.7, -1.9), [1.0 + 1.9, -1.0 - 0.7])


# == case: builtin_sum_min_max
def spread(xs):
    return max(xs) - min(xs) + 0.1 * sum(xs)


def softmin_gap(x, y):
    return min(x * y, x + y) + max(x, y, 0.5)


def test_builtin_sum_min_max():
    xs = [0.3, 1.7, -0.8, 0.9]
    check_grads(spread, (xs,))
    assert_close(s2sad.grad(spread)(xs), [0.1, 1.1, -0.9, 0.1])
    check_grads(softmin_gap, (1.3, 0.4), wrt=(0, 1))


# == case: builtin_sorted_with_key
def top2_by_magnitude(xs):
    ranked = sorted(xs, key=abs, reverse=True)
    return ranked[0] * ranked[1]


def median3(a, b, c):
    return sorted([a, b, c])[1]


def test_builtin_sorted_with_key():
    xs = [0.3, -1.7, 0.8, 1.1]
    check_grads(top2_by_magnitude, (xs,))
    assert_close(s2sad.grad(top2_by_magnitude)(xs), [0.0, 1.1, 0.0, -1.7])
    check_grads(median3, (0.2, 1.5, 0.9), wrt=(0, 1, 2))


# == case: nested_def_called_twice
def softplus_sum(x, beta):
    def softplus(z):
        return np.log1p(np.exp(beta * z)) / beta
    return np.sum(softplus(x)) + np.sum(softplus(2.0 * x))


def test_nested_def_called_twice():
    r = rng(2)
    check_grads(softplus_sum, (r.standard_normal(6), 1.3), wrt=(0, 1))


# == case: lambda_in_body
def huber_like(x, delta):
    sq = lambda t: 0.5 * t * t
    lin = lambda t: delta * (np.abs(t) - 0.5 * delta)
    return np.sum(sq(x)) * 0.3 + np.sum(lin(x))


def test_lambda_in_body():
    r = rng(3)
    check_grads(huber_like, (r.standard_normal(7) + 0.1, 0.8), wrt=(0, 1))


# == case: functools_partial
def weighted_sq(w, x, power=2.0):
    return np.sum(w * np.abs(x) ** power)


def partial_loss(x, w):
    f = functools.partial(weighted_sq, w, power=3.0)
    return f(x) + f(2.0 * x)


def test_functools_partial():
    r = rng(4)
    x, w = r.standard_normal(5) + 0.05, r.random(5) + 0.5
    check_grads(partial_loss, (x, w), wrt=(0, 1))


# == case: function_passed_as_argument
def apply(f, x):
    return f(x)


def apply_twice(f, x):
    return f(f(x))


def uses_apply(x, a):
    y = apply(np.tanh, a * x)
    z = apply_twice(lambda v: v * a + np.sin(v), x)
    return np.sum(y * z)


def test_function_passed_as_argument():
    r = rng(5)
    check_grads(uses_apply, (r.standard_normal(4), 0.7), wrt=(0, 1))


# == case: builtin_map
def map_loss(xs, c):
    ys = list(map(lambda v: c * v * v, xs))
    return sum(ys)


def map_two_lists(a, b):
    return sum(map(lambda u, v: u * math.sin(v), a, b))


def test_builtin_map():
    r = rng(6)
    xs = [float(v) for v in r.standard_normal(4)]
    check_grads(map_loss, (xs, 1.1), wrt=(0, 1))
    a = [float(v) for v in r.standard_normal(3)]
    b = [float(v) for v in r.standard_normal(3)]
    check_grads(map_two_lists, (a, b), wrt=(0, 1))


# == case: builtin_filter
def positive_energy(xs, k):
    kept = filter(lambda v: v > 0.0, xs)
    return sum(k * v * v for v in kept)


def test_builtin_filter():
    xs = [0.9, -0.4, 1.3, -2.0, 0.25]
    check_grads(positive_energy, (xs, 0.6), wrt=(0, 1))
    g = s2sad.grad(positive_energy)(xs, 0.6)
    assert_close(g, [2 * 0.6 * v if v > 0 else 0.0 for v in xs])


# == case: functools_reduce
def product_chain(xs):
    return functools.reduce(lambda acc, v: acc * v, xs, 1.0)


def matrix_chain(mats, v):
    m = functools.reduce(lambda a, b: a @ b, mats)
    return np.sum(m @ v)


def test_functools_reduce():
    xs = [0.5, 1.5, -0.7, 2.0]
    check_grads(product_chain, (xs,))
    r = rng(7)
    mats = [r.standard_normal((3, 3)) for _ in range(3)]
    check_grads(matrix_chain, (mats, r.standard_normal(3)), wrt=(0, 1))


# == case: closure_over_loop_accumulator
def poly_eval(coeffs, x):
    def horner(t):
        acc = 0.0
        for c in coeffs:
            acc = acc * t + c
        return acc
    return horner(x) + horner(0.5 * x)


def test_closure_over_parameter_list():
    coeffs = [0.4, -1.2, 0.7, 2.1]
    check_grads(poly_eval, (coeffs, 0.9), wrt=(0, 1))


# == case: closure_reads_active_enclosing
def make_loss(target):
    def loss(w):
        err = w - target
        return np.sum(err * err)
    return loss


def scaled_norm(w, scale):
    def inner(v):
        return scale * np.sum(v ** 2)      # reads the active enclosing `scale`
    return inner(w) + np.sum(np.sin(w))


def test_closure_reads_enclosing_variables():
    r = rng(1)
    target = r.standard_normal(5)
    loss = make_loss(target)
    w = r.standard_normal(5)
    check_grads(loss, (w,))
    assert_close(s2sad.grad(loss)(w), 2 * (w - target))
    check_grads(scaled_norm, (w, 1.7), wrt=(0, 1))


# == case: closure_factory_composition
def compose(*fs):
    def composed(x):
        for f in reversed(fs):
            x = f(x)
        return x
    return composed


def composed_loss(x, a):
    h = compose(np.tanh, lambda v: a * v, np.sin)
    return np.sum(h(x))


def test_closure_factory_composition():
    r = rng(8)
    check_grads(composed_loss, (r.standard_normal(5), 1.4), wrt=(0, 1))


# == case: decorated_helper
def with_scale(factor):
    def deco(fn):
        @functools.wraps(fn)
        def wrapper(x):
            return factor * fn(x)
        return wrapper
    return deco


@with_scale(2.5)
def energy(x):
    return np.sum(np.cos(x) * x)


def decorated_user(x):
    return energy(x) + energy(x * x)


def test_decorated_helper():
    r = rng(9)
    check_grads(decorated_user, (r.standard_normal(4),))


# == case: recursive_closure
def series(x, n):
    def term(k):
        if k == 0:
            return 1.0
        return term(k - 1) * x / k
    return sum(term(k) for k in range(n))


def test_recursive_closure_exp_series():
    check_grads(series, (0.8, 8), wrt=0)
    g = s2sad.grad(series)(0.8, 8)
    assert abs(g - sum(0.8 ** k / math.factorial(k) for k in range(7))) < 1e-8


# == case: partial_binds_active_value
def scaled_residual(x, a, b):
    return (x * a - b) ** 2


def partial_bound_active(a, b):
    f = functools.partial(scaled_residual, a=a, b=b)   # active values bound in the partial
    g = functools.partial(scaled_residual, 0.5, a)      # positional binding
    return f(2.0) + g(b)                                # called with inactive / active args


def test_partial_binds_active_value():
    check_grads(partial_bound_active, (1.5, 0.4), wrt=(0, 1))
    ga, gb = s2sad.grad(partial_bound_active, wrt=(0, 1))(1.5, 0.4)
    assert_close(ga, 2 * (2.0 * 1.5 - 0.4) * 2.0 + 2 * (0.5 * 1.5 - 0.4) * 0.5)
    assert_close(gb, -2 * (2.0 * 1.5 - 0.4) - 2 * (0.5 * 1.5 - 0.4))


# == case: itertools_accumulate_and_chain
import itertools                                   # noqa: E402
from itertools import accumulate                   # noqa: E402


def running_products(xs):
    return sum(v * v for v in itertools.accumulate(xs, lambda a, b: a * b + 0.1))


def running_sums_from(xs, start):
    return sum(accumulate(xs, initial=start)) + list(itertools.accumulate(xs))[-1] ** 2


def chained_inputs(xs, ys):
    return sum(math.sin(v) for v in itertools.chain(xs, [2.0], ys))


def running_max_arrays(x):
    rows = list(itertools.accumulate([x[0], x[1], x[2]], np.maximum))
    return float(np.sum(rows[-1] * rows[1]))


def test_itertools_accumulate_and_chain():
    xs, ys = [0.3, -0.7, 1.1, 0.4], [0.5, -0.2]
    check_grads(running_products, (xs,))
    check_grads(running_sums_from, (xs, 0.6), wrt=(0, 1))
    check_grads(chained_inputs, (xs, ys), wrt=(0, 1))
    check_grads(running_max_arrays, (rng(5).standard_normal((3, 4)),))
    assert_close(s2sad.grad(running_sums_from, wrt=1)(xs, 0.6), 5.0)


def pairwise_products(x):
    acc = []
    for a, b in itertools.pairwise(x):
        acc.append(a * b)
    return sum(acc)


def pairwise_steps(xs):
    steps = list(itertools.pairwise([xs[0], xs[1] ** 2, 3.0, *xs[2:]]))
    return sum((b - a) ** 2 for a, b in steps) + steps[0][1] * len(steps)


def test_itertools_pairwise():
    # (was refused: an iterator without Python source; lowered to the list of neighbours)
    check_grads(pairwise_products, (rng(6).standard_normal(5),))
    check_grads(pairwise_steps, ([0.3, -0.7, 1.1, 0.4],))


def first_two(xs):
    return sum(itertools.islice(xs, 2))


def test_iterator_without_source_is_refused():
    """An iterator made by a callee without Python source yields values s2sad cannot see: a
    clear error, never a silent zero gradient."""
    import pytest
    with pytest.raises(s2sad.errors.OpaqueCalleeError, match=r"itertools.islice returned an "
                                                             r"iterator"):
        s2sad.grad(first_two)([0.3, 0.5, 0.7])


def vectorized_square(x):
    sq = np.vectorize(lambda v: v * v)
    return np.sum(sq(x))


def test_np_vectorize_is_refused_in_both_modes():
    import pytest
    x = np.array([0.5, 1.5])
    for run in (lambda: s2sad.grad(vectorized_square)(x),
                lambda: s2sad.jvp(vectorized_square, (x,), (np.ones(2),))):
        with pytest.raises(s2sad.errors.OpaqueCalleeError) as ei:
            run()
        msg = str(ei.value)
        assert "test_lang_functions.py" in msg and "np.vectorize" in msg
        # the user's line comes before the fix
        assert msg.index("return np.sum(sq(x))") < msg.index("Fix:")


# == case: math_fsum_ldexp
def fsum_ldexp(xs, y):
    return math.fsum([v * v for v in xs]) + math.ldexp(y, 3) * math.fsum(xs)


def test_math_fsum_and_ldexp():
    check_grads(fsum_ldexp, ([0.3, -1.2, 0.7], 0.4), wrt=(0, 1))
    assert_close(s2sad.grad(fsum_ldexp, wrt=1)([0.3, -1.2, 0.7], 0.4), 8 * (0.3 - 1.2 + 0.7))


# == case: lru_cache_callees
@functools.lru_cache(maxsize=None)
def _weight(n):
    return 1.0 / (n + 1.0)


@functools.cache
def _bump(v):
    return v * v + np.sin(v)


def cached_series(x):
    s = 0.0
    for i in range(3):
        s = s + _weight(i) * _bump(x[i])       # a cached helper on a value with a derivative
    return s


def cached_through_a_name(x):
    h = _bump                                  # (resolved when it runs)
    return h(x[0]) * x[1]


def test_lru_cache_callees_are_differentiated_through_the_function_they_cache():
    # functools.lru_cache / functools.cache wrap a pure function: its derivative is the wrapped
    # function's (an opaque-callee refusal before); an inactive call still goes through the cache
    x = np.array([0.3, -1.1, 2.0])
    want = np.array([(2 * v + np.cos(v)) / (i + 1) for i, v in enumerate(x)])
    assert_close(s2sad.grad(cached_series)(x), want)
    check_grads(cached_series, (x,), modes=("rev", "fwd"))
    check_grads(cached_through_a_name, (x,), modes=("rev", "fwd"))
    assert "_weight(i)" in s2sad.differentiate(cached_series).adjoint_source()
