"""How the kernels see arrays: flat 1-D buffers of a real dtype, addresses and strides.

Kernel interface: every kernel reads and writes *flat* 1-D buffers of a real dtype (complex arrays
are seen as pairs of reals) and is told, through an int64 table, the element offset, shape and
strides of every region it touches.  Any view (negative strides, transposed, Fortran order,
stride-0 broadcast) is therefore handled by passing its base buffer plus offset and strides, and
under Numba's CUDA simulator the very same index logic runs on NumPy buffers.

Several destination arrays in one launch: on CuPy the destination (or source) buffer is a flat
view spanning the address range of all the arrays involved (device addresses share one space), so
user gradient buffers can be accumulated into in place.  On NumPy (simulator) this needs the arrays
to share one base buffer; otherwise the work is split per base buffer (:func:`_group_spans`).

Also the argument helpers shared by the NumPy path (:mod:`s2sad.kernels`) and the kernel paths:
:func:`_info` (shape and differentiable dtype of an input) and :func:`_norm_axis`.

No Numba and no CuPy import here (CuPy only inside :meth:`_Span.flat` for a CuPy array).
"""
import numpy as np

from .device import is_cupy


# ---------------------------------------------------------------------------------------------
# inputs: shape and differentiable dtype
# ---------------------------------------------------------------------------------------------
def _info(x):
    """(shape, dtype or None) of an input; dtype None = no derivative (int, bool, non-numeric)."""
    t = type(x)
    if t is float:
        return (), np.dtype(np.float64)
    if t is complex:
        return (), np.dtype(np.complex128)
    if t is int or t is bool:
        return (), None
    dt = getattr(x, "dtype", None)
    if dt is None:
        a = np.asarray(x)
        dt, shape = a.dtype, a.shape
    else:
        dt = np.dtype(dt)
        shape = tuple(x.shape)
    return shape, (dt if dt.kind in "fc" else None)


def _norm_axis(axis, ndim):
    if axis is None:
        return None
    axis = int(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of bounds for a concatenation of {ndim}-d arrays")
    return axis % ndim


_REAL = {np.dtype(np.float16): np.dtype(np.float16), np.dtype(np.float32): np.dtype(np.float32),
         np.dtype(np.float64): np.dtype(np.float64), np.dtype(np.complex64): np.dtype(np.float32),
         np.dtype(np.complex128): np.dtype(np.float64)}


def _real(dt):
    r = _REAL.get(np.dtype(dt))
    if r is None:
        raise TypeError(f"s2sad kernels support float16/32/64 and complex64/128, not {dt}")
    return r


# ---------------------------------------------------------------------------------------------
# array descriptions: (object, data address, shape, strides in real elements)
# ---------------------------------------------------------------------------------------------
def _addr(x):
    if is_cupy(x):
        return x.data.ptr
    return x.__array_interface__["data"][0]


def _layout(x, rdt, pairs=True):
    """Shape and strides (in units of ``rdt`` elements) of ``x``; with ``pairs`` a complex x (seen
    as pairs of reals) gets a trailing (2,) axis.  None when a stride is not a multiple."""
    isz = rdt.itemsize
    shape = list(x.shape)
    strides = []
    for s in x.strides:
        if s % isz:
            return None
        strides.append(s // isz)
    if pairs and x.dtype.kind == "c":
        shape.append(2)
        strides.append(1)
    return shape, strides


def _collapse(shape, strides_list):
    """Drop unit axes and merge axes that are contiguous in every stride list."""
    dims = [(n, [s[j] for s in strides_list]) for j, n in enumerate(shape) if n != 1]
    if not dims:
        return [1], [[0] for _ in strides_list]
    out = [dims[0]]
    for n, st in dims[1:]:
        pn, pst = out[-1]
        if all(ps == s * n for ps, s in zip(pst, st)):
            out[-1] = (pn * n, st)
        else:
            out.append((n, st))
    return [n for n, _ in out], [[st[i] for _, st in out] for i in range(len(strides_list))]


def _extent(shape, strides):
    lo = hi = 0
    for n, s in zip(shape, strides):
        if n == 0:
            return 0, -1
        if s < 0:
            lo += (n - 1) * s
        else:
            hi += (n - 1) * s
    return lo, hi


def _root(x):
    r = x
    while isinstance(r.base, np.ndarray):
        r = r.base
    return r


class _Span:
    """A flat buffer of dtype ``rdt`` covering the memory of several arrays, and its base address."""

    def __init__(self, objs, ranges, rdt):
        self.rdt = rdt
        isz = rdt.itemsize
        base = min(lo for lo, _ in ranges)
        end = max(hi for _, hi in ranges) + isz
        self.base = base
        self.length = max((end - base) // isz, 1)
        self.gpu = is_cupy(objs[0])
        self.objs = objs
        self._flat = None

    def flat(self):
        if self._flat is None:
            isz = self.rdt.itemsize
            if self.gpu:
                import cupy as cp
                mem = cp.cuda.UnownedMemory(self.base, self.length * isz, self.objs)
                self._flat = cp.ndarray((self.length,), self.rdt, cp.cuda.MemoryPointer(mem, 0))
            else:
                root = _root(self.objs[0])
                rb = root.reshape(-1, order="A") if (root.flags.c_contiguous or root.flags.f_contiguous) \
                    else None
                if rb is None or not np.shares_memory(rb, root):
                    raise ValueError("cannot form a flat view of a non-contiguous base buffer")
                u8 = rb.view(np.uint8)
                off = self.base - u8.__array_interface__["data"][0]
                self._flat = u8[off: off + self.length * isz].view(self.rdt)
        return self._flat


def _group_spans(items, rdt, gpu):
    """Split (obj, lo_addr, hi_addr) items into span groups: one on the GPU, one per base buffer on CPU."""
    if gpu:
        return [items]
    groups = {}
    for it in items:
        groups.setdefault(id(_root(it[0])), []).append(it)
    return list(groups.values())
