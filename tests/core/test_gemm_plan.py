"""The layout plan of s2sad's cuBLAS matrix product (s2sad/kernels/gemm.py), checked on the CPU.

``gemm._plan`` decides how a product of CuPy array views runs without copies: each operand's
cuBLAS op and leading dimension, and its batch axes merged into at most three (a strided batch
for one, pointer arrays for two or three).  Here NumPy arrays stand in for CuPy's, and a small
emulator reads memory exactly as cuBLAS would under that plan (offsets, leading dimensions,
transposes), so a wrong stride or op gives a wrong product.  The GPU tests run the real calls."""
import sys
import types

import numpy as np
import pytest

from s2sad.kernels import gemm


@pytest.fixture
def fake_cupy(monkeypatch):
    mod = types.SimpleNamespace(ascontiguousarray=np.ascontiguousarray,
                                broadcast_to=np.broadcast_to)
    monkeypatch.setitem(sys.modules, "cupy", mod)
    return mod


def _matrix(x, off, op, ld, r, c):
    """The row-major r x c matrix cuBLAS reads from x's memory at element offset ``off``."""
    item = x.itemsize
    start = np.lib.stride_tricks.as_strided(x, shape=(1,), strides=(item,))   # x's first element
    if op == gemm._N:
        strides = (ld * item, item)
    else:
        strides = (item, ld * item)
    # as_strided from x's first element, moved by off elements (may be negative only via the
    # caller's error: the plan never produces one)
    base = np.lib.stride_tricks.as_strided(start, shape=(off + 1,), strides=(item,))[off:]
    return np.lib.stride_tricks.as_strided(base, shape=(r, c), strides=strides)


def _emulate(a, b):
    a1, b1 = a.ndim == 1, b.ndim == 1
    A = a[None, :] if a1 else a
    B = b[:, None] if b1 else b
    m, k = A.shape[-2:]
    n = B.shape[-1]
    batch = tuple(np.broadcast_shapes(A.shape[:-2], B.shape[:-2]))
    plan, A2, B2 = gemm._new_plan(a, b)
    dt, _, _, m, k, n, batch, (opa, lda), (opb, ldb), axes, rows, copied = plan
    if copied:              # the plan is for the copies _new_plan made
        A, B = A2, B2
    out = np.zeros(batch + (m, n), np.result_type(a, b))
    flat = out.reshape(-1)
    assert len(axes) <= 3
    sizes = [ax[0] for ax in axes]
    for idx in np.ndindex(*sizes) if sizes else [()]:
        oa = sum(i * ax[1] for i, ax in zip(idx, axes))
        ob = sum(i * ax[2] for i, ax in zip(idx, axes))
        oc = sum(i * ax[3] for i, ax in zip(idx, axes))
        MA = _matrix(A, oa, opa, lda, rows, k)
        MB = _matrix(B, ob, opb, ldb, k, n)
        flat[oc:oc + rows * n] = (MA @ MB).reshape(-1)
    if a1:
        out = out[..., 0, :]
    if b1:
        out = out[..., 0]
    return out, axes


def _heads(B, T, H, d, rng):
    """(B, H, T, d) views of a (B, T, H*d) array, as attention makes them."""
    return rng.standard_normal((B, T, H * d)).reshape(B, T, H, d).transpose(0, 2, 1, 3)


CASES = {
    "matrix": lambda r: (r.standard_normal((5, 7)), r.standard_normal((7, 3))),
    "transposed both": lambda r: (r.standard_normal((7, 5)).T, r.standard_normal((3, 7)).T),
    "vector-matrix": lambda r: (r.standard_normal(7), r.standard_normal((7, 3))),
    "matrix-vector": lambda r: (r.standard_normal((5, 7)), r.standard_normal(7)),
    "stack @ matrix (folded)": lambda r: (r.standard_normal((4, 6, 7)), r.standard_normal((7, 3))),
    "stack slice @ matrix.T": lambda r: (r.standard_normal((4, 6, 14))[..., 7:],
                                         r.standard_normal((3, 7)).T),
    "heads @ heads^T": lambda r: (_heads(2, 6, 3, 4, r),
                                  _heads(2, 6, 3, 4, r).swapaxes(-1, -2)),
    "scores @ heads": lambda r: (r.standard_normal((2, 3, 6, 6)), _heads(2, 6, 3, 4, r)),
    "heads^T @ grads": lambda r: (_heads(2, 6, 3, 4, r).swapaxes(-1, -2),
                                  r.standard_normal((2, 3, 6, 5))),
    "broadcast batch": lambda r: (r.standard_normal((3, 1, 5, 7)), r.standard_normal((4, 7, 2))),
    "interleaved broadcast": lambda r: (r.standard_normal((2, 1, 3, 1, 5, 7)),
                                        r.standard_normal((1, 4, 1, 2, 7, 2))),
    "no unit stride": lambda r: (r.standard_normal((5, 14))[:, ::2],
                                 r.standard_normal((7, 6))[:, ::2]),
    "complex heads": lambda r: (_heads(2, 4, 2, 3, r) + 1j * _heads(2, 4, 2, 3, r),
                                (_heads(2, 4, 2, 3, r) - 2j).swapaxes(-1, -2)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_plan_reads_what_numpy_multiplies(name, fake_cupy):
    a, b = CASES[name](np.random.default_rng(1))
    got, _ = _emulate(a, b)
    want = a @ b
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_head_views_need_no_copy_and_two_axes(fake_cupy, monkeypatch):
    """The attention products run in place: (B, H) batch axes that do not nest stay two axes
    (pointer arrays), and nothing is copied."""
    copies = []
    monkeypatch.setattr(fake_cupy, "ascontiguousarray",
                        lambda x: copies.append(x.shape) or np.ascontiguousarray(x))
    rng = np.random.default_rng(0)
    q, k = _heads(2, 6, 3, 4, rng), _heads(2, 6, 3, 4, rng)
    _, axes = _emulate(q, k.swapaxes(-1, -2))
    assert copies == [] and len(axes) == 2
    _, axes = _emulate(rng.standard_normal((4, 6, 7)), rng.standard_normal((7, 3)))
    assert axes == [] and copies == []            # folded into one (24, 7) @ (7, 3) product
    _, axes = _emulate(rng.standard_normal((5, 14))[:, ::2], rng.standard_normal((7, 3)))
    assert copies == [(5, 7)]                     # the only layout cuBLAS cannot read
