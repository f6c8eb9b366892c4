"""s2sad/kernels/contract.py on the CPU: dot, tensordot, inner and einsum as one matrix product
(the capturable route of graph mode), against NumPy; what is not one product is left to the
callee; and the routing of every way generated code reaches a product (a resolved callee, ``xp``
a local variable, ``x.dot(b)``, the adjoints of tensordot and einsum).  CuPy arrays are faked:
``contract._device`` is patched to accept NumPy arrays, ``contract._mm`` to count products."""
import numpy as np
import pytest

import s2sad
from s2sad import graphs
from s2sad.kernels import contract, gemm


@pytest.fixture
def products(monkeypatch):
    """NumPy arrays taken as device arrays; the list of the matrix products made."""
    made = []

    def mm(a, b):
        made.append((a.shape, b.shape))
        return np.matmul(a, b)
    monkeypatch.setattr(contract, "_device", lambda *xs: all(isinstance(x, np.ndarray)
                                                              for x in xs))
    monkeypatch.setattr(contract, "_mm", mm)
    return made


def _r(*shape, seed=0, dtype=np.float64):
    return np.random.default_rng(seed + len(shape)).standard_normal(shape).astype(dtype)


TENSORDOTS = [((3, 4), (4, 5), 1), ((2, 3, 4), (3, 4, 5), 2),
              ((2, 3, 4), (4, 3, 5), ([1, 2], [1, 0])),
              ((2, 3), (3, 2), ([0, 1], [1, 0])), ((3,), (3,), 1), ((2, 3), (4, 5), 0),
              ((2, 3, 4), (5, 3), ([-2], [1])), ((2, 0, 3), (0, 4), ([1], [0])), ((4, 3), (3,), 1)]


@pytest.mark.parametrize("sa, sb, axes", TENSORDOTS)
def test_tensordot_is_one_matmul(products, sa, sb, axes):
    a, b = _r(*sa), _r(*sb, seed=1)
    got = contract.tensordot(a, b, axes)
    want = np.tensordot(a, b, axes)
    assert got.shape == want.shape and len(products) == 1
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("sa, sb", [((3, 4), (4, 5)), ((4,), (4, 5)), ((3, 4), (4,)),
                                    ((4,), (4,)), ((2, 3, 4), (4, 5)), ((2, 3, 4), (6, 4, 5)),
                                    ((3, 4), (2, 4, 5)), ((2, 3, 4), (4,))])
def test_dot_and_inner(products, sa, sb):
    a, b = _r(*sa), _r(*sb, seed=1)
    got = contract.dot(a, b)
    want = np.dot(a, b)
    assert np.shape(got) == want.shape and len(products) == 1
    np.testing.assert_allclose(got, want, rtol=1e-13)
    b2 = _r(*(sb[:-2] + sb[-1:] + sb[-2:-1]) if len(sb) > 1 else sb, seed=2)
    np.testing.assert_allclose(contract.inner(a, b2), np.inner(a, b2), rtol=1e-13)


EINSUMS = [("ij,jk->ik", (3, 4), (4, 5)), ("ij,jk", (3, 4), (4, 5)), ("ij,kj->ki", (3, 4), (5, 4)),
           ("bij,bjk->bik", (2, 3, 4), (2, 4, 5)), ("bhtd,bhsd->bhts", (2, 3, 4, 5), (2, 3, 6, 5)),
           ("...ij,...jk->...ik", (2, 3, 4), (2, 4, 5)), ("...d,de->...e", (2, 3, 4), (4, 6)),
           ("i,i->", (4,), (4,)), ("i,j->ij", (3,), (4,)), ("ijk,jil->kl", (2, 3, 4), (3, 2, 5)),
           ("ab,ab->ab", (3, 4), (3, 4)), ("btd,btd->bt", (2, 3, 4), (2, 3, 4)),
           ("ij,jk->ki", (3, 4), (4, 5)), ("ij,jk->ik", (3, 0), (0, 5))]


@pytest.mark.parametrize("subs, sa, sb", EINSUMS)
def test_einsum_of_one_contraction(products, subs, sa, sb):
    a, b = _r(*sa), _r(*sb, seed=1)
    got = contract.einsum(subs, a, b)
    want = np.einsum(subs, a, b)
    assert got.shape == want.shape and len(products) == 1
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("call", [
    lambda: contract.einsum("ii,ij->j", _r(3, 3), _r(3, 4)),          # a diagonal
    lambda: contract.einsum("ij,jk->k", _r(3, 4), _r(4, 5)),          # i summed within a
    lambda: contract.einsum("ij,jk->ik", _r(3, 1), _r(4, 5)),         # size-1 broadcasting
    lambda: contract.einsum("ij,jk,kl->il", _r(3, 4), _r(4, 5), _r(5, 2)),
    lambda: contract.einsum("ij->ji", _r(3, 4)),
    lambda: contract.einsum("ij,jk->ik", _r(3, 4), _r(4, 5), out=np.empty((3, 5))),
    lambda: contract.einsum(_r(3, 4), [0, 1], _r(4, 5), [1, 2]),      # sublists
    lambda: contract.tensordot(_r(3, 4), _r(5, 6), 1),                # the library's error
    lambda: contract.tensordot(_r(3, 4), _r(4, 6), ([1, 1], [0, 0])),
    lambda: contract.dot(_r(3, 4), np.float64(2.0)[()]),
    lambda: contract.dot(np.ones((3, 4), int), np.ones((4, 2), int))])
def test_not_one_product_is_left_to_the_callee(products, call):
    assert call() is NotImplemented and products == []


def test_table_is_keyed_on_callees():
    for fn, form in [(np.matmul, contract.matmul), (np.dot, contract.dot),
                     (np.tensordot, contract.tensordot), (np.einsum, contract.einsum),
                     (np.inner, contract.inner)]:
        assert contract.form_of(fn) is form
    assert contract.form_of(np.linalg.solve) is None and contract.form_of(np.add) is None
    assert contract.route(np.linalg.inv) is None
    routed = contract.route(np.tensordot)
    assert routed is contract.route(np.tensordot) and routed.__s2sad_routes__ is np.tensordot
    assert contract.capturable(np.tensordot) is np.tensordot          # outside graph mode
    with gemm.graph_matmuls():
        assert contract.capturable(np.tensordot) is routed
        assert contract.capturable(np.linalg.inv) is np.linalg.inv


def test_routed_callee_outside_graph_mode_or_on_numpy_runs_the_callee():
    a, b = _r(3, 4), _r(4, 5)
    routed = contract.route(np.einsum)
    np.testing.assert_array_equal(routed("ij,jk->ik", a, b), np.einsum("ij,jk->ik", a, b))
    with gemm.graph_matmuls():                    # NumPy arrays: not the device route
        np.testing.assert_array_equal(routed("ij,jk->ik", a, b), np.einsum("ij,jk->ik", a, b))


def products_everywhere(W, x, V):
    xp = np                                     # a local: _rt.call(xp.matmul, ...) at run time
    a = xp.matmul(W, x)                         # (4, 2)
    b = np.dot(W, x)
    c = np.tensordot(V, a, axes=([0], [0]))     # (3, 2)
    e = np.einsum("ij,jk->ik", W, x)
    m = W.dot(x)
    return np.sum(a * b * e * m) + np.sum(np.tanh(c))


def test_generated_code_routes_every_product(products):
    """graphs.sweeps on a step with a product of each kind: in graph mode each forward product is
    one contraction on the capturable route (counted), the adjoints of tensordot (2) too, and the
    numbers equal the plain sweeps'."""
    W, x, V = _r(4, 3), _r(3, 2, seed=1), _r(4, 3, seed=2)
    d = s2sad.differentiate(products_everywhere, wrt=(0, 1, 2)).derivative(W, x, V)
    fwd, bwd = graphs.sweeps(d)
    names = set(fwd.__code__.co_names)
    assert {"_s2sad_route0", "_s2sad_route1", "_s2sad_route2", "_s2sad_capturable"} <= names
    assert not names & {"tensordot", "einsum"}       # (W.dot stays: _s2sad_capturable(W.dot))
    v0, t0 = d.fwd(W, x, V)
    g0 = d.bwd(t0, 1.0)
    assert products == []
    v1, t1 = fwd(W, x, V)                       # outside graph mode: the callees themselves
    assert products == [] and v1 == v0
    with gemm.graph_matmuls():
        v2, t2 = fwd(W, x, V)
        n_fwd = len(products)
        g2 = bwd(t2, 1.0)
    assert n_fwd == 5                            # xp.matmul, dot, tensordot, einsum, W.dot
    assert len(products) == 5 + 2 + 2           # the tensordot and einsum adjoints
    np.testing.assert_allclose(v2, v0, rtol=1e-13)
    for a, b in zip(g2, g0):
        np.testing.assert_allclose(a, b, rtol=1e-12)
