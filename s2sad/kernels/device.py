"""Device detection, the device guard, and the switch to the GPU that holds a kernel's arrays.

Cheap on the CPU: nothing here imports CuPy unless a CuPy array is actually present (recognised by
``type(x).__module__``), and nothing imports Numba.
"""
import numpy as np

from ..errors import DeviceMismatchError

_NDARRAY = np.ndarray


def is_cupy(x):
    """True when ``x`` is a CuPy array (without importing CuPy)."""
    return type(x).__module__.startswith("cupy")


def array_module(x):
    """``numpy`` or ``cupy``, by the type of ``x``; imports CuPy only for a CuPy array."""
    if type(x).__module__.startswith("cupy"):
        import cupy
        return cupy
    return np


def device_of(x):
    """A readable device name: ``"cpu"`` for NumPy arrays and Python scalars, ``"cuda:N"`` for CuPy."""
    if type(x).__module__.startswith("cupy"):
        dev = getattr(x, "device", None)
        return f"cuda:{getattr(dev, 'id', 0)}"
    return "cpu"


def _walk(args, prefix, out, names=None):
    for i, a in enumerate(args):
        t = type(a)
        label = (names[i] if names is not None and i < len(names) else str(i)) if not prefix \
            else f"{prefix}[{i!r}]"
        if t is _NDARRAY:
            out.append((label, "cpu"))
        elif t is list or t is tuple:
            _walk(a, label, out)
        elif t is dict:
            _walk_dict(a, label, out)
        elif t.__module__.startswith("cupy") and hasattr(a, "device"):
            out.append((label, device_of(a)))


def _walk_dict(d, prefix, out):
    for k, a in d.items():
        t = type(a)
        label = f"{prefix}[{k!r}]"
        if t is _NDARRAY:
            out.append((label, "cpu"))
        elif t is list or t is tuple:
            _walk(a, label, out)
        elif t.__module__.startswith("cupy") and hasattr(a, "device"):
            out.append((label, device_of(a)))


def _has_cupy(args, depth=0):
    for a in args:
        t = type(a)
        if t.__module__.startswith("cupy"):
            return True
        if depth < 2 and (t is list or t is tuple) and _has_cupy(a, depth + 1):
            return True
        if depth < 2 and t is dict and _has_cupy(a.values(), depth + 1):
            return True
    return False


def guard_arguments(fn_name, args, names=None):
    """The device guard at the entry of a derivative: raise :class:`DeviceMismatchError` when the
    user's arguments mix NumPy and CuPy arrays (or arrays on two GPUs), naming the parameters.

    Cheap for CPU calls: one ``type(a).__module__`` test per argument (lists, tuples and dicts
    looked into), no CuPy import; the full check runs only when a CuPy array is present."""
    if not _has_cupy(args):
        return None
    return check_devices(fn_name, args, names=names)


def _scan(args, found, depth=0):
    """Add the device of every array in ``args`` (lists, tuples, dicts looked into) to ``found``:
    -1 for NumPy, the GPU's id for CuPy.  The fast path of :func:`check_devices`."""
    for a in args:
        t = type(a)
        if t is _NDARRAY:
            found.add(-1)
        elif t is list or t is tuple:
            _scan(a, found, depth + 1)
        elif t is dict:
            _scan(a.values(), found, depth + 1)
        elif t.__module__.startswith("cupy"):
            dev = getattr(a, "device", None)
            if dev is not None:
                found.add(getattr(dev, "id", 0))


def check_devices(fn_name, args, kwargs=None, names=None):
    """Raise :class:`DeviceMismatchError` when ``args`` mix devices; return the common device.

    ``args`` is the positional argument list of a call of ``fn_name`` (lists, tuples and dicts
    inside it, such as the array list of ``concatenate``, are looked into and named ``0[2]``);
    ``kwargs`` optionally a dict of keyword arguments; ``names`` optionally the parameter names
    to use instead of positions.  Python scalars and other non-array values are ignored.  Returns
    ``"cpu"``, ``"cuda:N"`` or ``None`` (no arrays).
    """
    found = set()
    _scan(args, found)
    if kwargs:
        _scan(kwargs.values(), found)
    if len(found) <= 1:
        if not found:
            return None
        d = next(iter(found))
        return "cpu" if d == -1 else f"cuda:{d}"
    seen = []
    _walk(args, "", seen, names)
    if kwargs:
        for k, v in kwargs.items():
            sub = []
            _walk((v,), "", sub)
            seen.extend((k + p[1:], d) for p, d in sub)
    if not seen:
        return None
    first = seen[0][1]
    for _, d in seen:
        if d != first:
            break
    else:
        return first
    groups = {}
    for pos, d in seen:
        groups.setdefault(d, []).append(pos)
    desc = "; ".join(f"{d}: argument{'s' if len(p) > 1 else ''} {', '.join(p)}"
                     for d, p in groups.items())
    gpu = [d for d in groups if d != "cpu"]
    what = "arguments" if names is not None else "positions"
    if "cpu" in groups:
        fix = (f"move every array to the same device before calling {fn_name}: "
               f"cupy.asarray(x) for the NumPy arguments ({what} {', '.join(groups['cpu'])}), "
               f"or cupy.asnumpy(x) for the CuPy ones")
    else:
        fix = (f"copy the arrays to one GPU first, e.g. inside `with cupy.cuda.Device({gpu[0][5:]}):` "
               f"call cupy.asarray(x) on the others")
    raise DeviceMismatchError(f"{fn_name} got arrays on different devices ({desc})", fix=fix)


def _other_gpu(dev):
    """``cupy.cuda.Device`` of ``dev`` ("cuda:N") when it is not the current device, else None:
    kernels launch on the current device, so work on another GPU's arrays switches to it."""
    if dev is None or dev == "cpu":
        return None
    import cupy as cp
    i = int(dev[5:])
    return None if i == cp.cuda.runtime.getDevice() else cp.cuda.Device(i)
