"""CuPy derivative table: CuPy callees share the NumPy (and SciPy) rules.

Loaded only once the user's code has imported CuPy.  Every ``numpy.X`` / ``numpy.linalg.X`` /
``numpy.fft.X`` callee that has a rule (or is declared zero-derivative) gives its rule to
``cupy.X`` / ``cupy.linalg.X`` / ``cupy.fft.X``;
``cupyx.scipy.special.X`` gets the rule of ``scipy.special.X`` with SciPy's special functions in
the template replaced by CuPy's (``_sp.`` -> ``_csp.``), and ``cupyx.scipy.linalg.X`` /
``cupyx.scipy.signal.X`` the rule of ``scipy.linalg.X`` / ``scipy.signal.X`` (``block_diag``,
``solve_triangular``, ``expm``; ``convolve``, ``correlate``, ``fftconvolve``, ``oaconvolve``,
``convolve2d``, ``correlate2d``) where their parameters match.  ``cupy.linalg.eig`` and ``eigvals``
(CuPy 14+) mirror NumPy's rules like every ``cupy.linalg`` callee; CuPy returns complex results
for real matrices, which the helpers take as NumPy's complex case.  The templates work on both
kinds of arrays: they call NumPy functions that CuPy arrays dispatch through ``__array_ufunc__`` /
``__array_function__``, or ``_adj``/``_rt`` helpers that allocate with the array module of their
arguments, so the generated code of a function written with ``cupy`` (or ``xp =
cupy.get_array_module(x)``) never moves data to the host.  ``ndarray`` methods and attributes are looked up by name for any array kind already.

CuPy-only callees: ``cupy.get_array_module`` carries no derivative; ``cupy.asnumpy`` and
``cupy.asarray`` of host data move data between devices, and their adjoints move the gradient back.
"""
import sys

import numpy as np
import cupy

from . import adjoints as _adjoints
from .registry import _RULES, _key, defalias, defrule, defzero, load_table

load_table("python")       # the rules this table gives to CuPy (every NumPy topic module)
load_table("numpy")

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


#: cupyx.scipy modules whose callees take the rules of their SciPy namesakes: the module, SciPy's,
#: the template text to replace (SciPy's module in the templates -> CuPy's), and the callees whose
#: keywords are named otherwise (``cupyx.scipy.linalg.expm(a)``, ``scipy.linalg.expm(A)``).
_SCIPY_COUNTERPARTS = (
    ("cupyx.scipy.linalg", "scipy.linalg", {}, {"expm": {"a": "A"}}),
    ("cupyx.scipy.signal", "scipy.signal", {"_ssig.": "_cssig."}, {}),
)


def _scipy_counterparts():
    """``cupyx.scipy.linalg.X`` / ``cupyx.scipy.signal.X`` get the rule of ``scipy.linalg.X`` /
    ``scipy.signal.X`` when their parameters are the rule's, in the same order (the helpers the
    templates call work on CuPy arrays with CuPy's own functions: ``_linalg_of``, ``_signal_of``).
    A callee whose parameters differ is left out: declared apart, or not at all."""
    import importlib
    import inspect
    from .registry import NAMESPACE
    for cname, sname, subst, renamed in _SCIPY_COUNTERPARTS:
        try:
            smod = importlib.import_module(sname)
            from . import scipy as _scipy_tables  # noqa: F401  (the SciPy rules mirrored)
            cmod = importlib.import_module(cname)
        except Exception:   # noqa: BLE001  (no SciPy, or cuBLAS/cuSOLVER missing on a CPU machine)
            continue
        for short in set(subst.values()):
            NAMESPACE.setdefault(short.rstrip("."), cmod)
        for name in dir(cmod):
            if name.startswith("_"):
                continue
            src, dst = getattr(smod, name, None), getattr(cmod, name, None)
            if src is None or dst is None or not callable(dst):
                continue
            try:
                rule = _RULES.get(_key(src))
                if rule is None or _RULES.get(_key(dst)) is not None:
                    continue
                own = list(inspect.signature(dst).parameters)
            except (TypeError, ValueError):
                continue
            aliases = renamed.get(name, {})
            if own != [next((k for k, v in aliases.items() if v == p), p)
                       for p in rule.signature.parameters]:
                continue
            defalias(dst, rule, name=f"{cname}.{name}", subst=subst or None,
                     aliases=aliases or None)


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
_scipy_counterparts()
