"""Issue 15 part 4, NumPy: np.linalg.eig/eigvals, np.gradient, np.partition, np.real_if_close,
np.pad with every pad_width form and its linear modes, np.einsum in sublist form.  Each rule's
adjoint and tangent templates against central differences (float64, complex, float32 in -> float32
out), then end to end through ``s2sad.testing.check_grads`` in both modes, and the refusals."""
import numpy as np
import pytest

import s2sad
from s2sad.errors import S2SADError
from s2sad.testing import check_grads
from cases_numpy import Arr, C
from rulecheck import rule_params, run_rule, run_tangent, tangent_params

CASES = []
add = CASES.append


def fix_eig(res):
    """Each eigenvector's sign fixed by its largest component (real, by LAPACK's convention)."""
    w, v = res
    k = np.abs(v).argmax(axis=-2)[..., None, :]
    return (w, v * np.sign(np.take_along_axis(v, k, axis=-2).real))


add(C(np.linalg.eig, Arr(4, 4), id="4x4", post=fix_eig, cplx=True, rtol=1e-5))
add(C(np.linalg.eig, Arr(4, 4, f=lambda x: x + 3 * np.diag(np.arange(4.0))), id="real-eigs",
      post=fix_eig, cplx=True, rtol=1e-5))
add(C(np.linalg.eig, Arr(2, 3, 3), id="batch", post=fix_eig, cplx=True, rtol=1e-5))
add(C(np.linalg.eigvals, Arr(4, 4), id="4x4", cplx=True, rtol=1e-5))
add(C(np.linalg.eigvals, Arr(2, 3, 3), id="batch", cplx=True, rtol=1e-5))

add(C(np.partition, Arr(7), 3, id="1d", cplx=True))
add(C(np.partition, Arr(5, 3), (1, 4), kw={"axis": 0}, id="ax0-kths"))
add(C(np.partition, Arr(3, 4), 5, kw={"axis": None}, id="none"))
add(C(np.real_if_close, Arr(5), id="", cplx=True))


def coords(n):
    return Arr(n, f=lambda x: np.cumsum(np.abs(x) + 0.3), cplx_ok=False)


H = Arr(lo=0.3, hi=1.0, scalar=True, cplx_ok=False)
add(C(np.gradient, Arr(6), id="1d", cplx=True))
add(C(np.gradient, Arr(6), 0.7, id="h-const", cplx=True))
add(C(np.gradient, Arr(6), H, id="h", f32=False))
add(C(np.gradient, Arr(4, 5), id="2d", cplx=True))
add(C(np.gradient, Arr(4, 5), H, kw={"edge_order": 2}, id="2d-h-eo2", f32=False))
add(C(np.gradient, Arr(4, 5), H, coords(5), id="2d-h-coords", f32=False, cplx=True))
add(C(np.gradient, Arr(4, 6), coords(6), kw={"axis": 1, "edge_order": 2}, id="coords-eo2",
      cplx=True))
add(C(np.gradient, Arr(7), coords(7), id="coords-eo1", cplx=True))
add(C(np.gradient, Arr(3), coords(3), kw={"edge_order": 2}, id="coords-n3", cplx=True))
add(C(np.gradient, Arr(2), coords(2), id="coords-n2", cplx=True))
add(C(np.gradient, Arr(3, 4, 5), kw={"axis": (0, 2)}, id="axes", cplx=True))
add(C(np.gradient, Arr(3, 4, 5), H, H, kw={"axis": (-1, 0)}, id="axes-h", f32=False))

PAD = [(1, "constant", {}), ((1,), "edge", {}), ((1, 2), "reflect", {}),
       (((1, 2),), "symmetric", {}), ([(2, 1), (0, 5)], "wrap", {}),
       (5, "reflect", {"reflect_type": "odd"}), (6, "symmetric", {"reflect_type": "odd"}),
       ((2, 3), "linear_ramp", {"end_values": 4.0}), ((2, 3), "mean", {}),
       ([(1, 2), (3, 1)], "mean", {"stat_length": ((1, 2), (3, 1))}),
       (2, "constant", {"constant_values": 3.0}), (((1, 1), (2, 0)), "constant", {})]
for pw, mode, kw in PAD:
    add(C(np.pad, Arr(3, 4), pw, mode, kw=kw, id=f"{mode}-{pw}-{sorted(kw)}", cplx=True))
add(C(np.pad, Arr(5), (2,), id="1d"))


@pytest.mark.parametrize("case,dtype", rule_params(CASES))
def test_rule(case, dtype):
    run_rule(case, dtype)


@pytest.mark.parametrize("case,dtype", tangent_params(CASES))
def test_tangent(case, dtype):
    run_tangent(case, dtype)


# -- end to end, both modes -----------------------------------------------------------------------
RNG = np.random.default_rng(11)


def eig_loss(a):
    w, v = np.linalg.eig(a)
    return np.sum(np.abs(w) ** 2) + np.sum(np.abs(v[0]) ** 2 + v.real[1] ** 3)


def eigvals_loss(a):
    return np.sum(np.linalg.eigvals(a) ** 2).real


def grad_loss(f, x, h):
    gy, gx = np.gradient(f, h, x, edge_order=2)
    return np.sum(gy ** 2) + np.sum(np.sin(gx))


def grad_1d(f):
    return np.sum(np.gradient(f) ** 2)


def partition_loss(a):
    p = np.partition(a, 2)
    i = np.argpartition(a, 2)
    return np.sum(p[:3] ** 2) + np.sum(a[i[3:]])


def ric_loss(z):
    return np.sum(np.real_if_close(z * z) ** 2)


def pad_loss(x):
    return np.sum(np.pad(x, (1,)) ** 2) + np.sum(np.pad(x, ((1, 2),), mode="reflect",
                                                        reflect_type="odd") ** 3)


def einsum_loss(x, y):
    return np.sum(np.einsum(x, [0, 1], y, [1, 2], [0, 2]) ** 2)


def einsum_ellipsis_loss(x, y):
    d = np.einsum(x, [Ellipsis, 1, 1], [Ellipsis, 1])   # the diagonals
    tr = np.einsum(x, [Ellipsis, 1, 1])                  # implicit output: the traces
    return np.sum(np.abs(np.einsum(d, [0, 1], y, [1])) ** 2) + np.sum(np.abs(tr) ** 2)


E2E = [(eig_loss, (RNG.standard_normal((4, 4)),)),
       (eig_loss, (RNG.standard_normal((3, 3)) + 1j * RNG.standard_normal((3, 3)),)),
       (eigvals_loss, (RNG.standard_normal((4, 4)),)),
       (grad_loss, (RNG.standard_normal((4, 5)), np.cumsum(RNG.uniform(0.3, 1, 5)), 0.6)),
       (grad_1d, (RNG.standard_normal(6),)),
       (partition_loss, (RNG.standard_normal(7),)),
       (ric_loss, (RNG.standard_normal(4) + 0j,)),
       (pad_loss, (RNG.standard_normal(4),)),
       (einsum_loss, (RNG.standard_normal((2, 3)), RNG.standard_normal((3, 2)))),
       (einsum_ellipsis_loss, (RNG.standard_normal((2, 3, 3)) + 1j * RNG.standard_normal((2, 3, 3)),
                               RNG.standard_normal(3)))]


@pytest.mark.parametrize("f,args", E2E, ids=[f"{e[0].__name__}-{i}" for i, e in enumerate(E2E)])
def test_end_to_end(f, args):
    check_grads(f, args, modes=("rev", "fwd"), rtol=1e-5)


def test_float32_kept():
    x = RNG.standard_normal((4, 4)).astype(np.float32)
    for f in (eigvals_loss, grad_1d, pad_loss):
        arg = x if f is eigvals_loss else x[0]
        assert s2sad.grad(f)(arg).dtype == np.float32


# -- refusals -------------------------------------------------------------------------------------
def eig_vec(a):
    return np.sum(np.linalg.eig(a)[1].real)


def eig_val(a):
    return np.sum(np.linalg.eig(a)[0].real)


def test_eig_repeated_eigenvalues_refused():
    with pytest.raises(S2SADError, match="repeated eigenvalues") as e:
        s2sad.grad(eig_vec)(np.eye(3))
    assert "Fix:" in str(e.value)
    with pytest.raises(S2SADError, match="repeated eigenvalues"):
        s2sad.jvp(eig_val, (np.eye(3),), (np.ones((3, 3)),))


def test_eig_defective_refused():
    with pytest.raises(S2SADError, match="defective"):
        s2sad.grad(eigvals_loss)(np.array([[1.0, 1.0], [0.0, 1.0]]))


def test_eigvals_only_of_a_repeated_eigenvalue():
    # the eigenvalues' adjoint divides by nothing: the trace-like function is differentiated
    g = s2sad.grad(eig_val)(np.diag([1.0, 1.0, 2.0]))
    np.testing.assert_allclose(g, np.eye(3))


def pad_max(x):
    return np.sum(np.pad(x, 2, mode="maximum"))


def test_pad_nonlinear_modes_refused():
    for mode in ("rev", "fwd"):
        with pytest.raises(S2SADError, match="maximum"):
            check_grads(pad_max, (np.arange(3.0),), modes=(mode,))


# -- star-argument calls to zero-derivative callees -----------------------------------------------
def star_floor(x, y):
    a = [x, y]
    return np.floor(*a[:1]) + x * y + np.maximum(*a) + np.sign(*(x,)) * y


def star_floor_arrays(x, y):
    return np.sum(np.floor(*[x]) * y + np.rint(*(y,)) + x * y)


def test_star_args_to_zero_derivative_callees():
    """``np.floor(*a)`` on Python floats crashed in runtime.star_args_adjoint: the call has no
    derivative record and its arguments' adjoints came back as a zeros marker of unknown length."""
    check_grads(star_floor, (1.5, 2.25), modes=("rev", "fwd"))
    check_grads(star_floor_arrays, (RNG.standard_normal(3) + 0.1, RNG.standard_normal(3) + 0.2),
                modes=("rev", "fwd"))
    assert s2sad.grad(star_floor, wrt=(0, 1))(1.5, 2.25) == (2.25, 1.5 + 1.0 + 1.0)
