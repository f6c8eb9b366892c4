"""Traps where a derivative can go silently wrong: late binding, aliasing, in-place mutation."""
import numpy as np

import s2sad
from lang_helpers import check_grads, rng, assert_close, line_of


# == case: array_mutated_after_use
def mutate_after_use(x):
    h = x * 2.0
    y = np.sin(h)               # the adjoint of sin needs the old h
    h[0] = 5.0                  # ... which is then overwritten in place
    h *= x
    return np.sum(y) + np.sum(h)


def test_array_mutated_after_use():
    r = rng(90)
    x = r.standard_normal(4)
    check_grads(mutate_after_use, (x,))
    want = 2.0 * np.cos(2.0 * x) + 4.0 * x
    want[0] = 2.0 * np.cos(2.0 * x[0]) + 5.0
    assert_close(s2sad.grad(mutate_after_use)(x), want)


# == case: dict_value_overwritten
def overwrite(x, y):
    d = {"a": x * y}
    t = d["a"] * 3.0
    d["a"] = y * y             # the old value is gone, but t used it
    return t + d["a"]


def test_dict_value_overwritten():
    check_grads(overwrite, (0.8, -1.4), wrt=(0, 1))
    assert_close(s2sad.grad(overwrite, wrt=(0, 1))(0.8, -1.4), [3 * -1.4, 3 * 0.8 + 2 * -1.4])


# == case: same_array_twice_as_argument
def bilinear(a, b):
    return np.sum(a * np.cos(b))


def self_bilinear(x):
    return bilinear(x, x) + bilinear(x, 2.0 * x)


def test_same_array_twice_as_argument():
    r = rng(91)
    x = r.standard_normal(4)
    check_grads(self_bilinear, (x,))
    want = np.cos(x) - x * np.sin(x) + np.cos(2 * x) - 2 * x * np.sin(2 * x)
    assert_close(s2sad.grad(self_bilinear)(x), want)


# == case: gradient_not_aliased_to_input
def identity_sum(x, y):
    return np.sum(x) + np.sum(y)


def test_gradient_not_aliased_to_input():
    r = rng(92)
    x, y = r.standard_normal(3), r.standard_normal(3)
    gx, gy = s2sad.grad(identity_sum, wrt=(0, 1))(x, y)
    assert gx is not gy
    gx += 1.0
    assert_close(gy, np.ones(3))
    assert_close(x, rng(92).standard_normal(3))


# == case: loop_carried_list_pop
def stack_machine(xs, w):
    stack = list(xs)
    acc = 0.0
    while stack:
        top = stack.pop()
        acc = acc * w + top
    return acc * acc


def test_loop_carried_list_pop():
    xs = [0.5, -0.2, 1.1, 0.7]
    check_grads(stack_machine, (xs, 0.8), wrt=(0, 1))


# == case: closure_sees_rebinding
def rebinding(x, a):
    def scaled(v):
        return a * v
    first = scaled(x)
    a = a * a + 1.0              # the closure reads the new `a` at the next call
    second = scaled(x)
    return first * second


def test_closure_sees_rebinding():
    check_grads(rebinding, (0.7, 1.2), wrt=(0, 1))
    x, a = 0.7, 1.2
    b = a * a + 1.0
    assert_close(s2sad.grad(rebinding, wrt=1)(x, a), x * x * (b + a * 2 * a))


# == case: list_alias_mutation
def alias_append(x):
    a = [x]
    b = a                      # same list
    b.append(x * x)
    c = list(a)                # a copy
    c.append(100.0 * x)
    return sum(a) + 0.5 * sum(c)


def test_list_alias_mutation():
    # either the right number or a clear refusal naming the alias and the line
    try:
        g = s2sad.grad(alias_append)(0.6)
    except s2sad.S2SADError as e:
        assert "alias" in str(e) and "`b`" in str(e), str(e)
        assert f"{__file__}:{line_of(alias_append, 'b.append')}" in str(e), str(e)
    else:
        assert_close(g, 1.5 * (1 + 2 * 0.6) + 50.0)
        check_grads(alias_append, (0.6,))


# == case: nested_function_appends_to_enclosing_list
def collect(xs, w):
    out = []

    def emit(v):
        out.append(w * v)      # mutates the enclosing list (no nonlocal needed)
    for x in xs:
        emit(x * x)
    return sum(out)


def test_nested_function_appends_to_enclosing_list():
    xs = [0.3, -1.1, 0.8]
    # either the right numbers or a clear refusal naming `out` and the line
    try:
        g = s2sad.grad(collect, wrt=1)(xs, 0.9)
    except s2sad.S2SADError as e:
        assert "`out`" in str(e), str(e)
        assert f"{__file__}:{line_of(collect, 'out.append')}" in str(e), str(e)
    else:
        assert_close(g, sum(v * v for v in xs))
        check_grads(collect, (xs, 0.9), wrt=(0, 1))


# -- advanced indexing makes a copy ----------------------------------------------------------------
# `z = x[idx]` with an integer array, a boolean mask or a list in the index is a copy in NumPy;
# writing into it changes neither x nor an array x came from.  Before: refused as "this line
# changes `x[...]` in place, an object held by the argument `x`" or "writes into `z`, a view of
# `y`".  Basic indexing (a slice) is still a view, and still refused.
def _fancy_copy_of_argument(x, idx):
    z = x[idx]
    z[z > 0] = z[z > 0] ** 2
    return z.sum()


def _fancy_copy_of_local(x, idx):
    y = x * 1.0
    z = y[idx]
    z[0] = 5.0 * x[1]
    return z.sum() + (y ** 2).sum()


def _mask_copy(x):
    z = x[(x > 0) & (x < 10)]
    z[0] = z[0] ** 3
    w = x[[0, 2, 2]]
    w[1] += x[0]
    return z.sum() + (w ** 2).sum()


def _slice_view_of_argument(x):
    z = x[1:]
    z[0] = 1.0
    return z.sum()


def test_advanced_indexing_makes_a_copy():
    import pytest
    x, idx = np.array([0.3, -0.5, 0.7, 1.1]), np.array([0, 2, 2, 3])
    for f, args in ((_fancy_copy_of_argument, (x, idx)), (_fancy_copy_of_local, (x, idx)),
                    (_mask_copy, (x,))):
        check_grads(f, args, wrt=0, modes=("rev", "fwd"))
    assert np.array_equal(x, [0.3, -0.5, 0.7, 1.1])
    with pytest.raises(s2sad.errors.ArgumentWriteError):
        s2sad.grad(_slice_view_of_argument)(x)


# == case: double buffers swapped in a loop (flow-sensitive aliases: classify.aliases.stale_reads)
def heat_swap(u0, kappa):
    u = u0.copy()
    un = np.empty_like(u)
    for t in range(4):
        for i in range(1, u.shape[0] - 1):
            un[i] = u[i] + kappa * (u[i + 1] - 2.0 * u[i] + np.sin(u[i - 1]))
        un[0] = u[0]
        un[-1] = u[-1] * kappa
        u, un = un, u
    return np.sum(u ** 2)


def heat_tmp_swap(u0, kappa):
    u = u0.copy()
    un = np.zeros_like(u)
    for t in range(3):
        for i in range(u.shape[0]):
            un[i] = np.cos(u[i]) * kappa + u[i - 1]
        tmp = u
        u = un
        un = tmp
    return np.sum(u * un)


def test_swapped_buffers_are_followed():
    r = rng(95)
    for f in (heat_swap, heat_tmp_swap):
        check_grads(f, (r.random(6), 0.3), wrt=(0, 1))


def _refused(f, *args):
    import pytest
    with pytest.raises(s2sad.errors.UnsupportedSyntaxError,
                       match="refers to the same object|shares its memory"):
        s2sad.grad(f)(*args)


def kept_before_swaps(u0):
    u = u0.copy()
    un = np.zeros_like(u)
    keep = u                    # the first buffer: written through `un` two rounds later
    for t in range(3):
        for i in range(u.shape[0]):
            un[i] = u[i] * u0[i]
        u, un = un, u
    return np.sum(keep) + np.sum(u)


def rebound_after_write(x):
    a = x * 2.0
    b = a
    a[0] = 5.0                  # b sees it
    a = np.zeros(3)             # a is another object now; b still the changed one
    return np.sum(b * x) + np.sum(a)


def previous_round(x):
    u = x * 1.0
    s = 0.0
    prev = u
    for t in range(3):
        s += np.sum(prev * x)   # prev is u: changed in place at the line below
        u[t] = x[t] ** 2
        prev = u
    return s


def test_aliases_that_hold_the_changed_object_are_refused():
    x = rng(96).random(3)
    for f in (kept_before_swaps, rebound_after_write, previous_round):
        _refused(f, x)


# == case: accumulated twice a round (a spurious refusal before: each `E += ...`'s result, which
# holds E's object, is bound again in the next round before anything reads it)
def energy_twice_a_round(x, v):
    E = 0.0
    for i in range(x.shape[0]):
        E += 0.5 * v[i] ** 2
        E += np.cos(x[i])
    return E


def array_twice_a_round(x):
    E = np.zeros(3)
    for i in range(3):
        E += x * i
        E += np.sin(x)
    return np.sum(E ** 2)


def items_twice_a_round(x, W):
    g = {"W": np.zeros_like(W), "b": np.zeros(3)}
    for i in range(2):
        g["W"] += np.outer(x, x) * i
        g["b"] += x
    return np.sum(g["W"] * W) + np.sum(g["b"] ** 2)


def own_items(x):
    acc = [np.zeros(3) for _ in range(3)]
    for i in range(3):
        acc[i] += x * i
    return sum(np.sum(a * a) for a in acc)


def test_accumulators_changed_twice_a_round_are_differentiated():
    r = rng(97)
    x, v, W = r.standard_normal(3), r.standard_normal(3), r.standard_normal((3, 3))
    for f, args in ((energy_twice_a_round, (x, v)), (array_twice_a_round, (x,)),
                    (items_twice_a_round, (x, W)), (own_items, (x,))):
        check_grads(f, args)
    assert_close(s2sad.grad(energy_twice_a_round, wrt=(0, 1))(x, v)[0], -np.sin(x))


# == case: one array held twice (Python's `op=` changes it for every holder; s2sad would change
# one): refused, where before the value and gradient were silently wrong
def repeated_item(x):
    acc = [np.zeros(3)] * 3             # three references to one array
    for i in range(3):
        acc[i] += x * i
    return sum(np.sum(a * a) for a in acc)


def dict_of_one_array(x):
    a = x * 1.0
    d = {"p": a, "q": a}
    d["p"] += x
    return np.sum(d["q"] * x)


def unpacked_pair(x):
    a = x * 1.0
    pair = (a, a)
    u, v = pair
    u += x
    return np.sum(v * x)


def test_an_array_held_twice_and_changed_in_place_is_refused():
    import pytest
    from s2sad.errors import UnsupportedSyntaxError
    x = rng(98).standard_normal(3)
    for f, where in ((repeated_item, "acc[i] += x * i"), (dict_of_one_array, 'd["p"] += x'),
                     (unpacked_pair, "u += x")):
        with pytest.raises(UnsupportedSyntaxError, match="in place") as e:
            s2sad.grad(f)(x)
        assert e.value.origin.line == line_of(f, where)


def sliced_copy(a, b):                  # lst[:] is a new list of the same arrays
    lst = [a * 1.0, a * 2.0]
    lst2 = lst[:]
    lst2[0] += b
    return np.sum(lst[0] * a)


def test_an_item_of_a_sliced_copy_changed_in_place_is_refused():
    import pytest
    from s2sad.errors import UnsupportedSyntaxError
    x = rng(99).standard_normal(3)
    with pytest.raises(UnsupportedSyntaxError, match="in place"):
        s2sad.grad(sliced_copy)(x, x)


class _Holder:
    pass


class _Opt:
    def __init__(self, w):
        self.w = w * 1.0
        self.m = w * 0.0

    def step(self, g):
        self.m += g
        self.w -= 0.1 * self.m


def two_attributes_one_array(a, b):
    o = _Holder()
    x = a * 2.0
    o.w = x
    o.v = x                             # the same array under two attributes
    o.w += b                            # changes o.v too, in Python
    return np.sum(o.v * a)


def optimizer_steps(a, b):              # attributes of their own: followed
    o = _Opt(a)
    for _ in range(2):
        o.step(b * a)
    return np.sum(o.w ** 2)


def test_an_attribute_changed_in_place_that_another_holds_is_refused():
    import pytest
    from s2sad.errors import UnsupportedSyntaxError
    a, b = np.array([0.1, 0.2, 0.3]), np.array([1.0, -2.0, 0.5])
    with pytest.raises(UnsupportedSyntaxError, match="another attribute of the same object"):
        s2sad.grad(two_attributes_one_array)(a, b)
    check_grads(optimizer_steps, (a, b), wrt=(0, 1))
