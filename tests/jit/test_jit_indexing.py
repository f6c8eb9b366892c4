"""jit=True: the adjoint of ``x[idx]`` with a 1-d integer array (rows, repeats added, negative
indices) and of ``x[mask]`` with a 1-d boolean mask compile (runtime/jit.py: _scatter_rows,
_scatter_mask); they made the whole derivative run as Python before.  numba cannot index with a
mask of more than one dimension: such a derivative still runs as Python, with the same numbers."""
import warnings

import numpy as np
import pytest

import s2sad
from s2sad.errors import JitFallbackWarning

from .compare import same_as_python

numba = pytest.importorskip("numba")


def gather(x, idx):
    return np.sum(x[idx] ** 2) + np.sum(np.sin(x[::2]))


def gather_rows(W, idx):
    return np.sum(np.tanh(W[idx]) * W[idx[0]])


def masked(x):
    return np.sum(x[x > 0.1] ** 3)


def gather_in_a_loop(x, idx):
    s = 0.0
    for k in range(3):
        s = s + np.sum(x[idx] * k)
    return s


_R = np.random.default_rng(8)
_IDX = np.array([0, 2, 2, -1, 1])
CASES = {
    "gather": (gather, (_R.standard_normal(6), _IDX)),
    "gather_rows": (gather_rows, (_R.standard_normal((4, 3)), _IDX)),
    "masked": (masked, (_R.standard_normal(7),)),
    "masked_strided": (masked, (_R.standard_normal(12)[::2],)),
    "gather_in_a_loop": (gather_in_a_loop, (_R.standard_normal(5), _IDX)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_gathers_compile(name):
    f, args = CASES[name]
    same_as_python(f, args, (0,))


def test_a_2d_mask_runs_as_python_with_the_same_numbers():
    x = _R.standard_normal((3, 4))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        vj, gj = s2sad.value_and_grad(masked, jit=True)(x)
    assert any(issubclass(m.category, JitFallbackWarning) for m in w)
    vp, gp = s2sad.value_and_grad(masked)(x)
    assert vj == vp
    np.testing.assert_array_equal(gj, gp)
