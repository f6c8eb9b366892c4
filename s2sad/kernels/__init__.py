"""Adjoints and tangents of the concatenate and permute families.

Every function works on NumPy arrays (plain NumPy slicing, no Numba import) and on CuPy arrays
(Numba CUDA kernels launched on CuPy's current stream: :mod:`.segments` for the concat family,
:mod:`.tiled` for the permute family, both built and launched by :mod:`.launch` over the flat
buffers of :mod:`.layout`).  The same kernels run on NumPy arrays under Numba's CUDA simulator
with ``backend="cuda"`` (tests, CI).

    concat_adjoint(g, arrays, axis=0, acc=None, backend=None) -> tuple (one adjoint or None per input)
    concat_tangent(tangents, arrays, axis=0, backend=None)    -> array
    permute_adjoint(g, axes=None, acc=None, backend=None)      -> array  (adjoint of np.transpose(x, axes))
    permute_tangent(t, axes=None, backend=None)                -> array  (np.transpose(t, axes), materialised)

Conventions: integer and boolean inputs get ``None`` (no derivative); each adjoint has its input's
shape and dtype (a complex cotangent of a real input keeps its real part); ``axis=None`` means the
inputs were flattened (``np.concatenate`` semantics).  Adjoints are fresh arrays the caller owns,
one per position (``concatenate([x, x])`` gives two; summing them is the caller's job).  With
``acc=`` the contributions are added in place into the given buffers (``None`` entries get fresh
arrays) and those buffers are returned; the same buffer may appear at several positions.
"""
import numpy as np

from .device import array_module, device_of, check_devices, is_cupy
from .layout import _info, _norm_axis

__all__ = ["concat_adjoint", "concat_tangent", "permute_adjoint", "permute_tangent",
           "array_module", "device_of", "check_devices", "is_cupy", "differentiable_dtype"]

_BACKENDS = (None, "auto", "numpy", "cuda")


def differentiable_dtype(dt):
    """True for floating and complex dtypes (the ones that carry derivatives)."""
    return dt.kind in "fc"


def _choose(backend, *arrays):
    if backend not in _BACKENDS:
        raise ValueError(f"backend must be one of {_BACKENDS[1:]}, got {backend!r}")
    if backend == "numpy":
        return "numpy"
    if backend == "cuda":
        return "cuda"
    for a in arrays:
        if is_cupy(a):
            return "cuda"
    return "numpy"


def _scalarize(x, v):
    """Python scalar inputs get Python scalar adjoints."""
    t = type(x)
    if t is float:
        return float(v.real if np.iscomplexobj(v) else v)
    if t is complex:
        return complex(v)
    return v


def _cast(v, dt, xp):
    if v.dtype.kind == "c" and dt.kind != "c":
        v = v.real
    return xp.array(v, dtype=dt, copy=True, order="C")


def _concat_layout(g, arrays, axis):
    """Shapes, dtypes, normalised axis and per-input start offsets along the axis (or flat)."""
    infos = [_info(x) for x in arrays]
    if axis is not None:
        if not infos:
            raise ValueError("need at least one array to concatenate")
        axis = _norm_axis(axis, max(len(infos[0][0]), 1))
    starts, pos = [], 0
    for shape, _ in infos:
        starts.append(pos)
        if axis is None:
            n = 1
            for s in shape:
                n *= s
        else:
            n = shape[axis] if shape else 1
        pos += n
    expect = pos
    gsh = tuple(g.shape)
    if axis is None:
        if len(gsh) != 1 or gsh[0] != expect:
            if int(np.prod(gsh, dtype=np.int64)) != expect:
                raise ValueError(f"cotangent has shape {gsh}, expected ({expect},) for axis=None")
    elif len(gsh) <= axis or gsh[axis] != expect:
        raise ValueError(f"cotangent has shape {gsh}, expected size {expect} along axis {axis}")
    return infos, axis, starts


def concat_adjoint(g, arrays, axis=0, acc=None, backend=None):
    """Adjoints of ``concatenate(arrays, axis)`` given its cotangent ``g``: a tuple, one per input.

    ``acc``: optional list (one entry per input, ``None`` allowed) of buffers to add into in place.
    ``backend``: ``None``/``"auto"`` (NumPy for NumPy arrays, CUDA kernels for CuPy arrays),
    ``"numpy"``, or ``"cuda"`` (the Numba kernels, also on NumPy arrays under the CUDA simulator).
    """
    arrays = list(arrays)
    if acc is not None:
        acc = list(acc)
        if len(acc) != len(arrays):
            raise ValueError(f"acc has {len(acc)} entries for {len(arrays)} inputs")
    infos, axis, starts = _concat_layout(g, arrays, axis)
    if _choose(backend, g) == "cuda":
        from . import segments
        return segments.concat_adjoint(g, arrays, infos, axis, starts, acc)
    xp = array_module(g)
    if axis is None:
        g = g.reshape(-1)
    outs = []
    for i, (x, (shape, dt)) in enumerate(zip(arrays, infos)):
        if dt is None:
            outs.append(None)
            continue
        s = starts[i]
        if axis is None:
            n = int(np.prod(shape, dtype=np.int64))
            piece = g[s:s + n].reshape(shape)
        else:
            piece = g[(slice(None),) * axis + (slice(s, s + shape[axis]),)]
        buf = acc[i] if acc is not None else None
        if buf is None:
            outs.append(_scalarize(x, _cast(piece, dt, xp)))
        else:
            if piece.dtype.kind == "c" and buf.dtype.kind != "c":
                piece = piece.real
            xp.add(buf, piece, out=buf, casting="unsafe")
            outs.append(buf)
    return tuple(outs)


def concat_tangent(tangents, arrays, axis=0, backend=None):
    """Tangent of ``concatenate(arrays, axis)``: the concatenation of ``tangents`` (None = zero).

    The result has the dtype ``np.concatenate`` gives for ``arrays`` (``None`` when no input is
    differentiable).
    """
    arrays = list(arrays)
    tangents = list(tangents)
    if len(tangents) != len(arrays):
        raise ValueError(f"{len(tangents)} tangents for {len(arrays)} inputs")
    if _choose(backend, *tangents, *arrays) == "cuda":
        from . import segments
        return segments.concat_tangent(tangents, arrays, axis)
    xp = np
    for a in (*tangents, *arrays):
        if is_cupy(a):
            xp = array_module(a)
            break
    infos = [_info(x) for x in arrays]
    dts = [dt for _, dt in infos if dt is not None]
    if not dts:
        return None
    rdt = np.result_type(*[(x.dtype if hasattr(x, "dtype") else np.asarray(x).dtype)
                           for x in arrays])
    if rdt.kind not in "fc":
        rdt = np.result_type(*dts)
    parts = []
    for t, x, (shape, dt) in zip(tangents, arrays, infos):
        if t is None or dt is None:
            parts.append(xp.zeros(shape, rdt))
        else:
            parts.append(xp.asarray(t).astype(rdt, copy=False).reshape(shape))
    if axis is None:
        return xp.concatenate([p.reshape(-1) for p in parts])
    return xp.concatenate(parts, axis=axis)


def _norm_axes(axes, ndim):
    if axes is None:
        return tuple(range(ndim - 1, -1, -1))
    axes = tuple(int(a) % ndim if ndim else int(a) for a in axes)
    if sorted(axes) != list(range(ndim)):
        raise ValueError(f"axes {axes} is not a permutation of {ndim} axes")
    return axes


def _inverse(axes):
    inv = [0] * len(axes)
    for i, a in enumerate(axes):
        inv[a] = i
    return tuple(inv)


def permute_adjoint(g, axes=None, acc=None, backend=None):
    """Adjoint of ``y = transpose(x, axes)``: ``transpose(g, inverse(axes))`` as a C-contiguous array.

    With ``acc`` (an array of ``x``'s shape) the result is added into ``acc`` in place and returned.
    """
    axes = _norm_axes(axes, g.ndim)
    inv = _inverse(axes)
    if _choose(backend, g) == "cuda":
        from . import tiled
        return tiled.permute(g, inv, acc)
    xp = array_module(g)
    v = g.transpose(inv)
    if acc is None:
        return xp.ascontiguousarray(v)
    if v.dtype.kind == "c" and acc.dtype.kind != "c":
        v = v.real
    xp.add(acc, v, out=acc, casting="unsafe")
    return acc


def permute_tangent(t, axes=None, backend=None):
    """Tangent of ``y = transpose(x, axes)``: ``transpose(t, axes)`` as a C-contiguous array."""
    if t is None:
        return None
    axes = _norm_axes(axes, t.ndim)
    if _choose(backend, t) == "cuda":
        from . import tiled
        return tiled.permute(t, axes, None)
    xp = array_module(t)
    return xp.ascontiguousarray(t.transpose(axes))
