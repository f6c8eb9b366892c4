"""CuPy derivative table: CuPy callees share the NumPy (and SciPy) rules.

Loaded only once the user's code has imported CuPy.  Every ``numpy.X`` / ``numpy.linalg.X`` /
``numpy.fft.X`` callee that has a rule (or is declared zero-derivative) gives its rule to
``cupy.X`` / ``cupy.linalg.X`` / ``cupy.fft.X``;
``cupyx.scipy.special.X`` gets the rule of ``scipy.special.X`` with SciPy's special functions in
the template replaced by CuPy's (``_sp.`` -> ``_csp.``), and ``cupyx.scipy.linalg.block_diag`` the
rule of ``scipy.linalg.block_diag``.  The templates work on both kinds of arrays: they call NumPy
functions that CuPy arrays dispatch through ``__array_ufunc__`` / ``__array_function__``, or
``_adj``/``_rt`` helpers that allocate with the array module of their arguments, so the generated
code of a function written with ``cupy`` (or ``xp = cupy.get_array_module(x)``) never moves data to
the host.  ``ndarray`` methods and attributes are looked up by name for any array kind already.

CuPy-only callees: ``cupy.get_array_module`` carries no derivative; ``cupy.asnumpy`` and
``cupy.asarray`` of host data move data between devices, and their adjoints move the gradient back.
"""
import sys

import numpy as np
import cupy

from . import adjoints as _adjoints
from . import numpy as _numpy_tables, python  # noqa: F401  (the rules this table gives to CuPy)
from .registry import _RULES, _key, defalias, defrule, defzero

A = {"_adj": _adjoints, "_cpx": sys.modules[__name__]}


# -- helpers the CuPy-only templates call -------------------------------------------------------------
def to_device_of(g, x):
    """``g`` on the device of ``x``: host gradients for host inputs, GPU gradients for GPU inputs."""
    if g is None or type(g) in (float, complex):
        return g
    if isinstance(x, np.ndarray):
        if type(g).__module__.startswith("cupy"):
            return cupy.asnumpy(g).astype(x.dtype, copy=False)
        return g
    if type(x).__module__.startswith("cupy"):
        if isinstance(g, np.ndarray):
            with x.device:
                return cupy.asarray(g, dtype=x.dtype)
        if g.device.id != x.device.id:
            with x.device:
                return cupy.asarray(g, dtype=x.dtype)
        return g
    return g


def from_host(g, a):
    """Adjoint of ``cupy.asarray(a)`` / ``cupy.array(a)``: ``g`` in the form of ``a`` (a list of
    floats, a NumPy array on the host, a CuPy array on its device)."""
    if hasattr(g, "reshape") and hasattr(a, "shape") and tuple(g.shape) != tuple(a.shape):
        g = g.reshape(a.shape)
    return to_device_of(_adjoints.array_adjoint(g, a), a)


# -- NumPy and NumPy-linalg callees -----------------------------------------------------------------
def _mirror(npmod, cpmod, prefix):
    n = 0
    for name in dir(npmod):
        if name.startswith("_"):
            continue
        src = getattr(npmod, name, None)
        dst = getattr(cpmod, name, None)
        if src is None or dst is None or dst is src or not callable(dst):
            continue
        try:
            rule = _RULES.get(_key(src))
        except TypeError:
            continue
        if rule is None:
            continue
        try:
            if _RULES.get(_key(dst)) is not None:
                continue            # declared explicitly (below or by the user)
        except TypeError:
            continue
        own = getattr(dst, "__name__", "") or ""
        own = own[5:] if own.startswith("cupy_") else own      # CuPy ufuncs: "cupy_tanh"
        if getattr(cpmod, own, None) is not dst:
            own = name
        defalias(dst, rule, name=f"{prefix}.{own}")
        n += 1
    return n


def _ufunc_methods():
    """``cupy.add.reduce`` and the like get the rules of ``np.add.reduce``..."""
    for name in dir(np):
        u = getattr(np, name, None)
        cu = getattr(cupy, name, None)
        if not isinstance(u, np.ufunc) or cu is None:
            continue
        for meth in ("reduce", "accumulate", "outer"):
            src, dst = getattr(u, meth, None), getattr(cu, meth, None)
            if src is None or dst is None:
                continue
            try:
                rule = _RULES.get(_key(src))
                if rule is None or _RULES.get(_key(dst)) is not None:
                    continue
            except TypeError:
                continue
            defalias(dst, rule, name=f"cupy.{name}.{meth}")


def _special():
    try:
        import scipy.special as sp
        from . import scipy as _scipy_tables  # noqa: F401  (the SciPy rules this table reuses)
        import cupyx.scipy.special as csp
    except Exception:   # noqa: BLE001  (no SciPy, or CuPy's special functions cannot load)
        return
    from .registry import NAMESPACE
    NAMESPACE.setdefault("_csp", csp)
    NAMESPACE.setdefault("_cpx", sys.modules[__name__])
    for name in dir(csp):
        if name.startswith("_"):
            continue
        src, dst = getattr(sp, name, None), getattr(csp, name, None)
        if src is None or dst is None or not callable(dst):
            continue
        try:
            rule = _RULES.get(_key(src))
        except TypeError:
            continue
        if rule is None or _RULES.get(_key(dst)) is not None:
            continue
        defalias(dst, rule, name=f"cupyx.scipy.special.{name}", subst={"_sp.": "_csp."})


def _block_diag():
    try:
        import scipy.linalg as sl
        from . import scipy as _scipy_tables  # noqa: F401
        import cupyx.scipy.linalg as csl
    except Exception:   # noqa: BLE001  (cuBLAS/cuSOLVER libraries missing on a CPU machine)
        return
    rule = _RULES.get(_key(sl.block_diag))
    if rule is not None and getattr(csl, "block_diag", None) is not None:
        defalias(csl.block_diag, rule, name="cupyx.scipy.linalg.block_diag")


# CuPy-only callees first (so the mirror does not overwrite them)
defzero(cupy.get_array_module)
defrule(cupy.asnumpy, "a, stream=None, order='C', out=None, *, blocking=True",
        vjp={"a": "_cpx.to_device_of(g, a)"}, jvp={"a": "_cpx.cupy.asnumpy(t)"},
        forbid={"out": None}, view=False, ns=A, name="cupy.asnumpy")
_ASARRAY = "a, dtype=None, order=None, *, blocking=False"
defrule(cupy.asarray, _ASARRAY, vjp={"a": "_cpx.from_host(g, a)"},
        jvp={"a": "_cpx.cupy.asarray(t, dtype=np.result_type(ans))"}, view=True, ns=A,
        name="cupy.asarray")
defrule(cupy.array, "obj, dtype=None, copy=True, order='K', subok=False, ndmin=0, *, "
        "blocking=False", vjp={"obj": "_cpx.from_host(g, obj)"},
        jvp={"obj": "_cpx.cupy.asarray(t, dtype=np.result_type(ans))"}, ns=A,
        name="cupy.array")
_sc = getattr(getattr(cupy, "_core", None), "get_array_module", None)
if _sc is not None and _sc is not cupy.get_array_module:
    defzero(_sc)
try:
    import cupyx
    defzero(cupyx.scipy.get_array_module)
except Exception:   # noqa: BLE001
    pass

N_MIRRORED = _mirror(np, cupy, "cupy") + _mirror(np.linalg, cupy.linalg, "cupy.linalg") + \
    _mirror(np.fft, cupy.fft, "cupy.fft")
_ufunc_methods()
_special()
_block_diag()
