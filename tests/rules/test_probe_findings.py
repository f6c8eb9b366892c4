"""Silently wrong derivatives found by probing NumPy's semantics (2026-12-03), each against central
differences: tangents of masked values (np.where, nan-reductions, fmax, nan_to_num) that turned a
nan or inf in the masked-out branch into a nan result (``0 * t``: JAX gives a finite value);
np.arange with a float start or step, heaviside's value at 0, nextafter, and the remainder of
divmod, which had zero derivatives."""
import numpy as np
import pytest

import s2sad
from s2sad.testing import check_grads


def where_sqrt(x):
    return np.sum(np.where(x > 0, np.sqrt(x), 0.0))


def masked_losses(x, target):
    r = x - target                         # target holds nan where data is missing
    return (np.nansum(r ** 2) + np.nanmean(r ** 2) + np.nanmax(-r ** 2) + np.nanvar(r)
            + np.sum(np.nan_to_num(r)) + np.sum(np.fmax(r, 0.1)))


def test_tangent_of_a_masked_nan_is_not_nan():
    x = np.array([-1.0, 0.5, 2.0])
    _, t = s2sad.jvp(where_sqrt, (x,), (np.ones(3),))
    assert t == pytest.approx(0.5 / np.sqrt(0.5) + 0.5 / np.sqrt(2.0))
    x = np.array([0.3, -1.2, 0.5])
    target = np.array([1.0, np.nan, 0.1])
    _, t = s2sad.jvp(masked_losses, (x, target), (np.ones(3), np.zeros(3)))
    g = s2sad.grad(masked_losses)(x, target)
    assert np.isfinite(t) and t == pytest.approx(np.nansum(g))


def arange_sums(a, dt):
    return (np.sum(np.arange(a, a + 3.0) ** 2) + np.sum(np.sin(np.arange(0, 1, dt)))
            + np.sum(np.arange(a, 5.0, dt) * 0.3))


def arange_stop_only(a, dt):
    return np.sum(np.arange(a * 4.0) * dt)          # arange(stop): the values are 0, 1, ...


def divmod_remainder(x, y):
    q, r = divmod(x, y)
    return r ** 2 + q * x


def heaviside_nextafter(x, h):
    return np.sum(np.heaviside(x, h) * np.arange(1.0, 4.0)) + np.sum(np.nextafter(x, np.inf) ** 2)


@pytest.mark.parametrize("f,args", [(arange_sums, (0.3, 0.27)), (arange_stop_only, (0.8, 0.5)),
                                    (divmod_remainder, (2.3, 0.7))])
@pytest.mark.parametrize("mode", ["rev", "fwd"])
def test_derivatives_that_were_zero(f, args, mode):
    check_grads(f, args, wrt=(0, 1), modes=(mode,))


def test_arange_values():
    g = s2sad.grad(arange_sums, wrt=(0, 1))(0.3, 0.27)
    assert g[0] == pytest.approx(2 * (0.3 + 1.3 + 2.3) + 0.3 * len(np.arange(0.3, 5.0, 0.27)))
    assert s2sad.grad(arange_stop_only, wrt=0)(0.8, 0.5) == 0.0


def test_heaviside_at_zero_and_nextafter():
    x = np.array([0.0, -0.3, 0.4])
    gx, gh = s2sad.grad(heaviside_nextafter, wrt=(0, 1))(x, 0.7)
    assert gh == pytest.approx(1.0)                     # h is the value at x == 0 (weight 1)
    np.testing.assert_allclose(gx, 2 * np.nextafter(x, np.inf))
    _, t = s2sad.jvp(heaviside_nextafter, (x, 0.7), (np.zeros(3), 1.0))
    assert t == pytest.approx(1.0)


# -- found by probing aliasing, classes and the API (the same day) ---------------------------
def correlate_same(a, v):
    c = np.correlate(a, v, mode="same")
    return np.sum(c * np.arange(1.0, c.size + 1))


@pytest.mark.parametrize("n,k", [(2, 4), (4, 6), (3, 4), (5, 2), (1, 3)])
def test_correlate_same_when_the_first_is_shorter(n, k):
    # NumPy centres mode 'same' at len(a) // 2 when a is the shorter; the adjoint assumed
    # (len(v) - 1) // 2: shifted by one for even len(a) < len(v)
    rng = np.random.default_rng(n * 10 + k)
    check_grads(correlate_same, (rng.standard_normal(n), rng.standard_normal(k)), wrt=(0, 1),
                modes=("rev", "fwd"))


def prod_initial(x, s):
    return np.prod(x, initial=s) + np.multiply.reduce(x, initial=s * 2)


def test_prod_initial_tangent():
    # (forward mode ignored initial=: every component off by a factor 1/initial)
    check_grads(prod_initial, (np.array([1.0, 2.0, 3.0]), 0.5), wrt=(0, 1), modes=("rev", "fwd"))


def _add_at_square(x):
    a = np.zeros(2)
    np.add.at(a, np.array([0, 0]), x)
    return a[0] ** 2


def _grad_first(x):
    return s2sad.grad(_add_at_square)(x)[0]


def test_reverse_over_reverse_through_repeated_indices():
    # (the transpose of a gather kept the last of repeated indices: [0, 0] for [2, 2])
    np.testing.assert_allclose(s2sad.grad(_grad_first)(np.array([0.3, 0.5])), [2.0, 2.0])


def keyword_only(x, y, *, scale=2.0):
    return np.sum(x * y) * scale


def test_integer_wrt_counts_positional_parameters():
    # (wrt=-1 picked the keyword-only scale: d/dscale instead of d/dy; JAX's argnums is y)
    x, y = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    np.testing.assert_allclose(s2sad.grad(keyword_only, argnums=-1)(x, y), 2 * x)
    assert s2sad.grad(keyword_only, wrt="scale")(x, y) == pytest.approx(11.0)


def loop_then_write(x):
    s = x * 1.0
    for _ in range(3):
        s = np.sin(s) * x
    y = s.copy()
    y[0] = s[1] * s[2]
    return y


def test_a_pullback_can_be_called_again():
    # (the second call popped the loop stacks the first had emptied: IndexError inside s2sad)
    x = np.array([0.3, 0.5, 0.9])
    _, pb = s2sad.vjp(loop_then_write, x)
    first = pb(np.ones(3))[0]
    np.testing.assert_array_equal(pb(np.ones(3))[0], first)
    e0 = np.array([1.0, 0.0, 0.0])
    np.testing.assert_allclose(pb(e0)[0], s2sad.vjp(loop_then_write, x)[1](e0)[0])


class Buf:
    def __init__(self, a):
        self.buf = a
        self.d = {}

    def put(self, i, v):
        self.buf[i] = v

    def put_key(self, k, v):
        self.d[k] = v

    def replace_first(self, v):
        b = self.buf.copy()
        b[0] = v
        self.buf = b


def method_writes_into_attribute(x):
    b = Buf(np.zeros(2))
    b.put(0, x[1] * 3.0)
    return np.sum(b.buf ** 2)


def method_writes_into_dict_attribute(x):
    b = Buf(np.zeros(2))
    b.put_key("k", x[0])
    return b.d["k"] * x[1]


def method_assigns_a_new_attribute(x):
    b = Buf(x * 1.0)
    b.replace_first(x[1] * 3.0)
    return np.sum(b.buf ** 2)


@pytest.mark.parametrize("f", [method_writes_into_attribute, method_writes_into_dict_attribute])
@pytest.mark.parametrize("mode", ["rev", "fwd"])
def test_item_write_into_an_attribute_of_self_is_refused(f, mode):
    # (the write was lost: gradient [0, 0] where it is [0, 12.78])
    from s2sad.errors import ArgumentWriteError
    x = np.array([0.7, 1.3])
    with pytest.raises(ArgumentWriteError) as e:
        if mode == "rev":
            s2sad.grad(f)(x)
        else:
            s2sad.jvp(f, (x,), (np.ones(2),))
    assert "test_probe_findings.py:" in str(e.value) and "self." in str(e.value)


def test_assigning_the_new_value_to_the_attribute_still_works():
    check_grads(method_assigns_a_new_attribute, (np.array([0.7, 1.3]),), modes=("rev", "fwd"))


def _insert_into_ints(x):
    return np.sum(np.insert(np.arange(4), [1, 2], x[:2] * 2.7) * 1.0) + x[2]


def _insert_delete_resize(x):
    y = np.insert(x, [0, 2], x[1] * 3.0)
    y = np.delete(y, 1)
    return np.sum(np.resize(y, 7) ** 2)


def test_insert_delete_resize_differentiate_and_insert_into_ints_truncates():
    # np.insert / np.delete / np.resize had no rules (refused); np.insert gives its result the
    # array's dtype, so values put into an integer array lose their fraction and derivative
    x = np.array([0.7, 1.3, 0.9])
    np.testing.assert_allclose(s2sad.grad(_insert_into_ints)(x), [0.0, 0.0, 1.0])
    assert s2sad.jvp(_insert_into_ints, (x,), (np.ones(3),))[1] == pytest.approx(1.0)
    check_grads(_insert_delete_resize, (x,))
