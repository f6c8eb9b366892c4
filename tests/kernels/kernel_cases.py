"""Shared inputs for the kernel tests (simulator and GPU): odd strides, dtypes, sizes."""
import numpy as np

DTYPES = [np.float16, np.float32, np.float64, np.complex64, np.complex128]


def rand(rng, shape, dtype):
    dtype = np.dtype(dtype)
    x = rng.standard_normal(shape)
    if dtype.kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def strided(rng, shape, dtype, layout):
    """An array of ``shape`` with the given memory layout (a view where possible)."""
    shape = tuple(shape)
    if layout == "C":
        return rand(rng, shape, dtype)
    if layout == "F":
        return np.asfortranarray(rand(rng, shape, dtype))
    if layout == "neg":          # negative strides on every axis
        return rand(rng, shape, dtype)[(slice(None, None, -1),) * len(shape)]
    if layout == "step":         # every other element, last axis reversed
        big = rand(rng, tuple(2 * n for n in shape), dtype)
        return big[tuple(slice(None, None, 2) for _ in shape[:-1]) + (slice(None, None, -2),)]
    if layout == "T":            # a transposed view
        return rand(rng, shape[::-1], dtype).T
    if layout == "bcast":        # stride 0 on the first axis
        return np.broadcast_to(rand(rng, (1,) + shape[1:], dtype), shape)
    raise ValueError(layout)


LAYOUTS = ["C", "F", "neg", "step", "T", "bcast"]


def tol(dtype):
    return {np.float16: 1e-2, np.float32: 1e-5, np.complex64: 1e-5}.get(np.dtype(dtype).type, 1e-12)


H = np.float16


def special_halves(rng, n):
    """float16 values with the awkward cases mixed in: subnormals, ±0, ±inf, nan, near overflow."""
    x = (rng.standard_normal(n) * 4).astype(H)
    pool = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 6e-8, -6e-8, 1e-5, 65504, -65504, 32768,
                     0.0999], H)
    pick = rng.random(n) < 0.3
    x[pick] = rng.choice(pool, int(pick.sum()))
    return x


def bits_equal(got, expect):
    """float16 arrays equal bit for bit (every nan counts as equal to every nan)."""
    got, expect = np.asarray(got), np.asarray(expect)
    assert got.shape == expect.shape and got.dtype == expect.dtype == H
    nan = np.isnan(expect)
    np.testing.assert_array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(got.view(np.uint16)[~nan], expect.view(np.uint16)[~nan])
