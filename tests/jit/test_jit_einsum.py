"""jit=True: np.einsum with literal subscripts compiles (rules/jit_einsum.py: the forward, each
operand's adjoint and the tangent as loop nests written for the subscripts); a derivative with
np.einsum ran as Python before.  Each case: Python mode's numbers (1e-12), central differences,
and the tangent."""
import warnings

import numpy as np
import pytest

import s2sad
from s2sad.errors import JitFallbackWarning

from .compare import (fallback_same_as_python, random_tangents, same_as_python,
                      same_jvp_as_python)

numba = pytest.importorskip("numba")


def matvec(A, x):
    return np.sum(np.tanh(np.einsum("ij,j->i", A, x)) ** 2)


def matmul_t(A, B):
    return np.sum(np.sin(np.einsum("ij,kj->ik", A, B)))


def trace_and_diag(A, x):
    return np.einsum("ii", A) * 2.0 + np.sum(np.einsum("ii->i", A) * x)


def outer_transpose(x, y):
    return np.sum(np.cos(np.einsum("i,j->ji", x, y)) * np.arange(x.shape[0]))


def implicit(A, B):
    return np.sum(np.einsum("ij,jk", A, B) ** 2)


def batched(A, B):
    return np.sum(np.exp(0.1 * np.einsum("bij,bjk->bik", A, B)))


def ellipsis(A, B):
    return np.sum(np.einsum("...ij,...jk->...ik", A, B) ** 2)


def three(A, B, C):
    return np.sum(np.einsum("ij,jk,kl->il", A, B, C) ** 2)


def total(A):
    return np.einsum("ij->", A) ** 2 + np.einsum("ij,ij", A, A)


def with_a_number(x, s):
    return np.sum(np.einsum("i,->i", x, s) ** 3)


def broadcast_row(A, B):          # A (1, n) against B (m, n): NumPy broadcasts a size-1 letter
    return np.sum(np.einsum("ij,ij->ij", A, B) ** 2)


def spaces(A, x):
    return np.sum(np.einsum(" ij , j -> i ", A, x) ** 2)


_R = np.random.default_rng(41)
CASES = [
    (matvec, (_R.normal(size=(3, 4)), _R.normal(size=4)), (0, 1)),
    (matvec, (_R.normal(size=(4, 6))[:, ::2], _R.normal(size=6)[::-2]), (0, 1)),
    (matmul_t, (_R.normal(size=(3, 5)), _R.normal(size=(2, 5))), (0, 1)),
    (matmul_t, (_R.normal(size=(3, 3)),) * 2, (0, 1)),
    (trace_and_diag, (_R.normal(size=(4, 4)), _R.normal(size=4)), (0, 1)),
    (outer_transpose, (_R.normal(size=3), _R.normal(size=5)), (0, 1)),
    (implicit, (_R.normal(size=(2, 3)), _R.normal(size=(3, 4))), (0, 1)),
    (batched, (_R.normal(size=(2, 3, 4)), _R.normal(size=(2, 4, 3))), (0, 1)),
    (ellipsis, (_R.normal(size=(2, 3, 4)), _R.normal(size=(4, 2))), (0, 1)),
    (three, (_R.normal(size=(2, 3)), _R.normal(size=(3, 4)), _R.normal(size=(4, 2))), (0, 1, 2)),
    (total, (_R.normal(size=(3, 4)),), (0,)),
    (with_a_number, (_R.normal(size=5), 1.5), (0, 1)),
    (broadcast_row, (_R.normal(size=(1, 4)), _R.normal(size=(3, 4))), (0, 1)),
    (spaces, (_R.normal(size=(3, 4)), _R.normal(size=4)), (0, 1)),
    # (sizes at which a contraction of two is a batch of BLAS products, where nothing broadcasts)
    (matmul_t, (_R.normal(size=(20, 30)), _R.normal(size=(25, 30))), (0, 1)),
    (batched, (_R.normal(size=(3, 16, 12)), _R.normal(size=(3, 12, 20))), (0, 1)),
    (ellipsis, (_R.normal(size=(2, 3, 16, 12)), _R.normal(size=(12, 20))), (0, 1)),
    (outer_transpose, (_R.normal(size=70), _R.normal(size=80)), (0, 1)),
    (broadcast_row, (_R.normal(size=(1, 80)), _R.normal(size=(70, 80))), (0, 1)),
]
IDS = ["matvec", "matvec-strided", "ij,kj", "same-array", "trace-diag", "outer", "implicit",
       "batched", "ellipsis", "three", "total", "number", "broadcast-row", "spaces", "blas-ij,kj",
       "blas-batched", "blas-ellipsis", "blas-outer", "broadcast-large"]


@pytest.mark.parametrize("f, args, wrt", CASES, ids=IDS)
def test_einsum_compiles(f, args, wrt):
    same_as_python(f, args, wrt)


@pytest.mark.parametrize("f, args, wrt", CASES, ids=IDS)
def test_einsum_tangent_compiles(f, args, wrt):
    tangents = random_tangents(args, 5)
    same_jvp_as_python(f, args, tangents)


def partial_wrt(A, B):
    return np.sum(np.einsum("ij,jk->ik", A, B) ** 2)


def test_one_operand_differentiated_and_integer_operands():
    A, B = _R.normal(size=(3, 4)), _R.normal(size=(4, 2))
    same_as_python(partial_wrt, (A, B), (1,))
    counts = np.arange(8).reshape(4, 2)               # (an integer operand has no adjoint)
    same_as_python(partial_wrt, (A, counts), (0,))


def test_shapes_that_do_not_fit_raise_as_numpy_does():
    """The loop nest raises NumPy's ValueError; after a call that compiled, such an error is the
    user's, raised as it is, and the derivative stays compiled (no fallback warning)."""
    A, x = _R.normal(size=(3, 4)), _R.normal(size=5)
    with pytest.raises(ValueError):
        np.einsum("ij,j->i", A, x)
    vg = s2sad.value_and_grad(matvec, wrt=(0, 1), jit=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        with pytest.raises(ValueError):
            vg(A, x)
        good = vg(A, x[:4])
        with pytest.raises(ValueError, match="broadcast"):
            vg(A, x)
        again = vg(A, x[:4])
    assert good[0] == again[0]
    np.testing.assert_array_equal(good[1][0], again[1][0])


def sublists(A, x):
    return np.sum(np.einsum(A, [0, 1], x, [1], [0]) ** 2)


def optimized(A, x):
    return np.sum(np.einsum("ij,j->i", A, x, optimize=True) ** 2)


@pytest.mark.parametrize("f", [sublists, optimized])
def test_forms_without_a_loop_nest_run_as_python(f):
    fallback_same_as_python(f, (_R.normal(size=(3, 4)), _R.normal(size=4)), (0, 1))
