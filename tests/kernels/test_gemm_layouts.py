"""s2sad/kernels/gemm.py's operand layouts (op, leading dimension, batch stride) on the CPU: CuPy
is stood in for by NumPy arrays with a ``.data.ptr`` and cuBLAS by a column-major
``GemmStridedBatchedEx`` that reads memory through those pointers, as cuBLAS would."""
import ctypes
import types

import numpy as np
import pytest

from s2sad.kernels import gemm


class _Arr(np.ndarray):
    @property
    def data(self):
        return types.SimpleNamespace(ptr=self.__array_interface__["data"][0])


def _a(x):
    return np.asarray(x).view(_Arr)


def _fake_cupy():
    cp = types.SimpleNamespace()
    cp.ascontiguousarray = lambda x: _a(np.ascontiguousarray(x))
    cp.broadcast_to = lambda x, s: _a(np.broadcast_to(x, s))
    cp.empty = lambda s, dt: _a(np.full(s, np.nan, dt) if np.dtype(dt).kind in "fc"
                                else np.zeros(s, dt))
    cp.zeros = lambda s, dt: _a(np.zeros(s, dt))
    cp.ones = lambda s, dt: _a(np.ones(s, dt))
    cp.uint8 = np.uint8
    return cp


def _view(ptr, dtype, rows, cols, ld):
    """The column-major rows x cols matrix at ptr with leading dimension ld."""
    it = np.dtype(dtype).itemsize
    n = (cols - 1) * ld + rows
    buf = (ctypes.c_char * (n * it)).from_address(ptr)
    flat = np.frombuffer(buf, dtype)
    return np.lib.stride_tricks.as_strided(flat, (rows, cols), (it, ld * it))


class _Lib:
    def __init__(self, dtype):
        self.dtype = dtype
        self.calls = 0

    def cublasSetStream_v2(self, h, s):
        return 0

    def cublasGemmStridedBatchedEx(self, h, opa, opb, m, n, k, alpha, A, at, lda, sa, B, bt, ldb,
                                   sb, beta, C, ct, ldc, sc, count, compute, algo):
        self.calls += 1
        it = np.dtype(self.dtype).itemsize
        assert lda >= (m if opa == 0 else k) and ldb >= (k if opb == 0 else n) and ldc >= m
        for i in range(count):
            a = _view(A + i * sa * it, self.dtype, *((m, k) if opa == 0 else (k, m)), lda)
            b = _view(B + i * sb * it, self.dtype, *((k, n) if opb == 0 else (n, k)), ldb)
            c = _view(C + i * sc * it, self.dtype, m, n, ldc)
            c[...] = (a if opa == 0 else a.T) @ (b if opb == 0 else b.T)
        return 0

    def cublasGemmBatchedEx(self, h, opa, opb, m, n, k, alpha, A, at, lda, B, bt, ldb, beta, C,
                            ct, ldc, count, compute, algo):
        """The pointer-array batch: A, B, C are addresses of arrays of ``count`` pointers."""
        self.calls += 1
        ptrs = lambda p: np.frombuffer((ctypes.c_int64 * count).from_address(p), np.int64)  # noqa
        for pa, pb, pc in zip(ptrs(A), ptrs(B), ptrs(C)):
            a = _view(int(pa), self.dtype, *((m, k) if opa == 0 else (k, m)), lda)
            b = _view(int(pb), self.dtype, *((k, n) if opb == 0 else (n, k)), ldb)
            c = _view(int(pc), self.dtype, m, n, ldc)
            c[...] = (a if opa == 0 else a.T) @ (b if opb == 0 else b.T)
        return 0


def _pointers(grid, block, args):
    """What gemm's pointer kernel writes (its RawKernel arguments), computed on the host."""
    out, size, pa, pb, pc, n1, n2, a0, a1, a2, b0, b1, b2, c0, c1, c2 = (
        args[0], *(int(v) for v in args[1:]))
    assert grid[0] * block[0] >= size
    i = np.arange(size)
    i0, r = i // (n1 * n2), i % (n1 * n2)
    i1, i2 = r // n2, r % n2
    out[:size] = pa + i0 * a0 + i1 * a1 + i2 * a2
    out[size:2 * size] = pb + i0 * b0 + i1 * b1 + i2 * b2
    out[2 * size:] = pc + i0 * c0 + i1 * c1 + i2 * c2


@pytest.fixture
def fake(monkeypatch):
    import sys
    cp = _fake_cupy()
    monkeypatch.setitem(sys.modules, "cupy", cp)
    lib = _Lib(np.float64)
    one, zero = _a(np.ones(())), _a(np.zeros(()))
    hd = types.SimpleNamespace(lib=lib, h=None, scalars={np.float64: (one, zero)},
                               args={np.dtype(np.float64): (1, 70, one.data.ptr, zero.data.ptr)})
    monkeypatch.setattr(gemm, "_handle", lambda: hd)
    monkeypatch.setattr(gemm, "_pointers_kernel", lambda: _pointers)
    monkeypatch.setattr(gemm, "_PLANS", {})
    monkeypatch.setattr(gemm, "_POINTERS", __import__("collections").OrderedDict())
    cp.cuda = types.SimpleNamespace(get_current_stream=lambda: types.SimpleNamespace(ptr=0))
    return lib


CASES = [((5, 7), (7, 3)), ((7,), (7, 3)), ((5, 7), (7,)), ((7,), (7,)), ((2, 3, 5, 7), (7, 4)),
         ((5, 7), (2, 3, 7, 4)), ((2, 3, 5, 7), (2, 3, 7, 4)), ((3, 1, 5, 7), (4, 7, 2)),
         ((1, 5, 7), (3, 7, 2)), ((1, 7), (7, 1)), ((5, 1), (1, 4))]


@pytest.mark.parametrize("sa, sb", CASES)
def test_layouts_against_numpy(fake, sa, sb):
    rng = np.random.default_rng(1)
    a0 = rng.standard_normal(sa)
    b0 = rng.standard_normal(sb)
    variants = [(a0, b0)]
    if len(sa) >= 2:
        variants.append((np.ascontiguousarray(np.swapaxes(a0, -1, -2)).swapaxes(-1, -2), b0))
        variants.append((a0[..., ::-1, :], b0))
    if len(sb) >= 2:
        variants.append((a0, np.asfortranarray(b0) if len(sb) == 2 else b0[..., ::-1]))
        big = rng.standard_normal(sb[:-1] + (2 * sb[-1],))
        variants.append((a0, big[..., ::2]))              # column stride 2: copied
        wide = rng.standard_normal(sb[:-1] + (sb[-1] + 3,))
        variants.append((a0, wide[..., :sb[-1]]))           # row stride > columns: in place
    if len(sa) >= 3:
        variants.append((np.moveaxis(np.ascontiguousarray(np.moveaxis(a0, 0, -1)), -1, 0), b0))
    for a, b in variants:
        got = gemm._gemm(_a(a), _a(b))
        want = np.matmul(a, b)
        assert got.shape == want.shape
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12)
    assert fake.calls == len(variants) or sa == (7,) and sb == (7,)


def test_in_place_operands_are_not_copied(fake, monkeypatch):
    """A transposed view and a row-padded view go to cuBLAS as they are (op T, ld)."""
    copies = []
    cp = __import__("sys").modules["cupy"]
    real = cp.ascontiguousarray
    cp.ascontiguousarray = lambda x: copies.append(x.shape) or real(x)
    rng = np.random.default_rng(2)
    w = rng.standard_normal((6, 4))
    x = rng.standard_normal((3, 5, 9))[..., :6]
    got = gemm._gemm(_a(x), _a(w.T.T))
    np.testing.assert_allclose(np.asarray(got), x @ w, rtol=1e-12)
    got = gemm._gemm(_a(x), _a(np.asfortranarray(w)))
    np.testing.assert_allclose(np.asarray(got), x @ w, rtol=1e-12)
    assert copies == []


def test_outside_graph_mode_is_plain_matmul():
    a = np.arange(6.0).reshape(2, 3)
    assert not gemm.active()
    np.testing.assert_array_equal(gemm.matmul(a, a.T), a @ a.T)
    with gemm.graph_matmuls():
        assert gemm.active()
        np.testing.assert_array_equal(gemm.matmul(a, a.T), [[5.0, 14.0], [14.0, 50.0]])
    assert not gemm.active()


def test_retain_collects_inside_graph_mode_only():
    a, b = object(), object()
    gemm.retain(a)                                  # outside: nothing kept, no error
    with gemm.graph_matmuls() as kept:
        gemm.retain(a)
        with gemm.graph_matmuls() as inner:
            gemm.retain(b)
        gemm.retain(b)
    assert kept == [a, b] and inner == [b]
    assert getattr(gemm._state, "keep", None) is None


def test_pointer_arrays_are_kept_per_addresses_in_plain_mode(fake, monkeypatch):
    calls = []

    def counting(grid, block, args):
        calls.append(args[2:5])
        _pointers(grid, block, args)
    monkeypatch.setattr(gemm, "_pointers_kernel", lambda: counting)
    a, b, c, c2 = (_a(np.zeros((2, 3, 4, 4))) for _ in range(4))
    axes = [(1, 0, 0, 0), (2, 48, 48, 48), (3, 16, 16, 16)]
    p1 = gemm._pointer_arrays(a, b, c, axes, 8, 6, 0)
    assert gemm._pointer_arrays(a, b, c, axes, 8, 6, 0) is p1 and len(calls) == 1
    p2 = gemm._pointer_arrays(a, b, c2, axes, 8, 6, 0)      # another output: its own addresses
    assert p2 is not p1 and len(calls) == 2
    assert int(p2[12]) == c2.data.ptr and int(p2[13]) == c2.data.ptr + 16 * 8
    assert int(p1[3]) == a.data.ptr + 48 * 8                 # (i0, i1, i2) = (0, 1, 0)
    gemm._pointer_arrays(a, b, c, axes, 8, 6, 1)             # another stream: not shared
    assert len(calls) == 3
