"""LAPACK and BLAS routines for numba-compiled adjoint helpers, through the pointers SciPy exports
(``scipy.linalg.cython_blas`` / ``cython_lapack``, the library SciPy itself calls).  Each is
registered with LLVM under a name of its own (``s2sad_dtrmm``...) and called as a numba external
function, as numba's own ``np.linalg`` calls its helper library: compiled code refers to the name,
not to an address, so ``cache=True`` still caches a derivative that calls one (a ctypes pointer
would make numba refuse to).  The names are registered when this module is imported, which
``rules/jit.py`` does, before any derivative compiles or loads from numba's cache.  Without
SciPy's exports :func:`routines` answers None and the overloads keep their own bodies.

Fortran reads a C-ordered (n, n) array as its transpose; the helpers here say which matrix
LAPACK sees.  Integers are LAPACK's 32-bit ``int`` (SciPy's LP64 builds), characters one byte.
"""
import functools

import numpy as np
from numba.core import types
from numba.extending import register_jitable

_ROUTINES = {"trmm": ("scipy.linalg.cython_blas", 11),
             "sygst": ("scipy.linalg.cython_lapack", 8)}


def _register(char):
    """{name: numba ExternalFunction} of BLAS/LAPACK type ``char``, or None."""
    try:
        import llvmlite.binding as ll
        from numba.extending import get_cython_function_address
        out = {}
        for name, (module, nargs) in _ROUTINES.items():
            full = char + name
            ll.add_symbol("s2sad_" + full, get_cython_function_address(module, full))
            out[name] = types.ExternalFunction("s2sad_" + full,
                                               types.void(*([types.voidptr] * nargs)))
        return out
    except (ImportError, ValueError):
        return None


_TABLE = {char: _register(char) for char in "ds"}


def routines(char):
    """{"trmm": ..., "sygst": ...} of type ``char`` ('d' float64, 's' float32) as numba external
    functions taking pointers, or None without SciPy's Cython exports."""
    return _TABLE.get(char)


@functools.lru_cache(maxsize=None)
def cholesky_adjoint(char):
    """A jitable ``f(gL, L)``: the real NumPy path of ``rules.numpy.linalg._cholesky_symbolic``
    (trmm for M = L^T gL, then sygst on the reversed matrices), for C-contiguous (n, n) arrays of
    type ``char``; the lower triangle of L^-T Q L^-1 with its diagonal halved, zeros above.
    None without SciPy's exports."""
    fns = routines(char)
    if fns is None:
        return None
    trmm, sygst = fns["trmm"], fns["sygst"]

    @register_jitable
    def f(gL, L):
        n = L.shape[0]
        ch = np.empty(5, np.uint8)                 # side, uplo, transa, diag; uplo of sygst
        ch[0], ch[1], ch[2], ch[3], ch[4] = ord("R"), ord("U"), ord("T"), ord("N"), ord("L")
        ints = np.empty(3, np.int32)               # n, itype, info
        ints[0], ints[1], ints[2] = n, 1, 0
        one = np.ones(1, L.dtype)
        # Fortran sees B = gL^T and A = L^T (upper): B := B A^T = gL^T L = M^T, i.e. M in C
        M = gL.copy()
        trmm(ch[0:].ctypes, ch[1:].ctypes, ch[2:].ctypes, ch[3:].ctypes, ints.ctypes,
             ints.ctypes, one.ctypes, L.ctypes, ints.ctypes, M.ctypes, ints.ctypes)
        # reversed: Fortran sees J M^T J (its lower triangle: M's lower triangle) and J L^T J
        # (lower triangular); itype=1, uplo='L' gives J L^-T Q L^-1 J in its lower triangle
        Mr = np.ascontiguousarray(M[::-1, ::-1])
        Lr = np.ascontiguousarray(L[::-1, ::-1])
        sygst(ints[1:].ctypes, ch[4:].ctypes, ints.ctypes, Mr.ctypes, ints.ctypes, Lr.ctypes,
              ints.ctypes, ints[2:].ctypes)
        if ints[2] != 0:
            raise ValueError("s2sad: LAPACK sygst reported an illegal argument in the cholesky "
                             "adjoint")
        r = np.zeros((n, n), L.dtype)
        for i in range(n):
            for j in range(i):
                r[i, j] = Mr[n - 1 - i, n - 1 - j]
            r[i, i] = 0.5 * Mr[n - 1 - i, n - 1 - i]
        return r
    return f
