"""Functions that return the array namespace (module) of their arguments, and how to compute it,
when a derivative is built, from the array libraries of those arguments.

``cupy.get_array_module(x)`` is CuPy where ``x`` is a CuPy array and NumPy where it is a NumPy
array: the derivative is specialised on the array library of its arguments (``runtime.kind_of``
gives NumPy's arrays the kind ``"a"`` and other libraries' arrays ``"a:<library>"``), so
``xp = cupy.get_array_module(x)`` is a module known when the derivative is built
(``frontend/namespaces.py``) and ``xp.tanh(...)`` the call of a known function.

A table row is ``defnamespace(fn, resolve)``: ``resolve(libraries)`` takes the set of top-level
package names of the array arguments' types (``{"numpy"}``, ``{"cupy"}``, ``{"numpy", "cupy"}``)
and returns the module ``fn`` returns for such arguments, or None where it cannot say (the call is
then made at run time, as before).  The rows of libraries s2sad knows are added when a lookup
finds the library imported; nothing here imports CuPy.
"""
import sys

import numpy as np

_TABLE = {}
_LOADED = set()


def defnamespace(fn, resolve):
    """Declare that ``fn(*arrays)`` returns ``resolve(libraries of the arrays)`` (a module, or
    None: not known before run time)."""
    _TABLE[fn] = resolve


def lookup(fn):
    """The resolver declared for ``fn``, or None."""
    for lib, load in _KNOWN.items():
        if lib not in _LOADED and lib in sys.modules:
            _LOADED.add(lib)
            load(sys.modules[lib])
    try:
        return _TABLE.get(fn)
    except TypeError:                   # unhashable
        return None


def _cupy_rows(cupy):
    def xp(libs):
        # get_array_module returns CuPy for CuPy arrays (and sparse matrices, whose library is
        # cupyx: not resolved) and NumPy for anything else
        if not libs <= {"numpy", "cupy"}:
            return None
        return cupy if "cupy" in libs else np

    def scipy_of(libs):
        if not libs <= {"numpy", "cupy"}:
            return None
        if "cupy" in libs:
            import cupyx.scipy
            return cupyx.scipy
        import scipy
        return scipy
    defnamespace(cupy.get_array_module, xp)
    core = getattr(getattr(cupy, "_core", None), "get_array_module", None)
    if core is not None:
        defnamespace(core, xp)
    try:
        import cupyx.scipy
        defnamespace(cupyx.scipy.get_array_module, scipy_of)
    except Exception:   # noqa: BLE001 (an install without cupyx.scipy)
        pass


def _array_api_compat_rows(aac):
    def ns(libs):
        if libs == {"numpy"}:
            return aac.array_namespace(np.empty(0))
        return None                     # (other libraries: decided at run time)
    for name in ("array_namespace", "get_namespace"):
        f = getattr(aac, name, None)
        if f is not None:
            defnamespace(f, ns)


_KNOWN = {"cupy": _cupy_rows, "array_api_compat": _array_api_compat_rows}
