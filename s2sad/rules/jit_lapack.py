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
import numpy as np
from numba.core import types
from numba.extending import overload

_ROUTINES = {"trmm": ("scipy.linalg.cython_blas", 11),
             "trsm": ("scipy.linalg.cython_blas", 11),
             "trtri": ("scipy.linalg.cython_lapack", 6)}


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
    """{"trmm": ..., "trsm": ..., "trtri": ...} of type ``char`` ('d' float64, 's' float32) as numba external
    functions taking pointers, or None without SciPy's Cython exports."""
    return _TABLE.get(char)


def _routine(name):
    """A jitable ``f(x, *pointers)`` calling the BLAS/LAPACK routine ``name`` of the array ``x``'s
    type (``dtrmm`` for float64, ``strmm`` for float32), picked when numba types the call: the
    helpers below are module-level functions of both types, which numba caches (a closure over
    one routine would be compiled again by every process)."""
    def stub(x, *args):
        raise NotImplementedError(f"s2sad: {name} runs inside numba-compiled code only")

    @overload(stub)
    def _impl(x, *args):
        char = {types.float64: "d", types.float32: "s"}.get(getattr(x, "dtype", None))
        fns = routines(char) if char else None
        if fns is None:
            return None
        fn = fns[name]

        def impl(x, *args):
            fn(*args)
        return impl
    stub.__name__ = stub.__qualname__ = "_" + name
    return stub


_trmm, _trsm, _trtri = _routine("trmm"), _routine("trsm"), _routine("trtri")


def _helper(fn):
    """``fn`` as a numba function of its own, compiled once per argument types and, where the disk
    cache is on, kept in numba's cache (beside this file, or numba's user-wide folder where this
    one is read-only): a derivative that calls it links the machine code instead of compiling the
    helper into itself again (the blocked Cholesky adjoint alone took ~15 s to compile into each
    derivative that called it, on a 2-core machine; about 13% of gp_lml's first compiled
    gradient).  numba's cache does not tell optimisation levels apart, so code compiled under
    another ``NUMBA_OPT`` than the default (the test suite's 0) is not cached: it would be what
    later processes load."""
    import os

    from numba import config, njit
    # (diskcache.enabled's test, read here: the disk cache is a layer above the rules)
    on = os.environ.get("S2SAD_CACHE", "1").strip().lower() not in ("0", "false", "off", "no")
    return njit(cache=on and config.OPT == 3)(fn)


@_helper
def _symbolic(gL, L):
    """``rules.numpy.linalg._cholesky_symbolic`` for C-contiguous real (n, n) float64 or float32
    arrays (trmm for M = L^T gL, then two trsm): the lower triangle of S + S^T,
    S = L^-T Phi(M) L^-1, with its diagonal halved, zeros above."""
    n = L.shape[0]
    # side, uplo, transa, diag (one byte each); Fortran reads L as U = L^T (upper)
    c = np.empty(6, np.uint8)
    c[0], c[1], c[2], c[3] = ord("R"), ord("U"), ord("T"), ord("N")
    c[4], c[5] = ord("L"), ord("N")
    ints = np.empty(1, np.int32)
    ints[0] = n
    one = np.ones(1, L.dtype)
    # Fortran sees B = gL^T: B := B U^T = gL^T L = M^T, so M in C order
    M = gL.copy()
    _trmm(L, c[0:].ctypes, c[1:].ctypes, c[2:].ctypes, c[3:].ctypes, ints.ctypes, ints.ctypes,
          one.ctypes, L.ctypes, ints.ctypes, M.ctypes, ints.ctypes)
    P = np.zeros((n, n), L.dtype)              # Phi(M)
    for i in range(n):
        for j in range(i):
            P[i, j] = M[i, j]
        P[i, i] = 0.5 * M[i, i]
    # Fortran sees P^T: P^T := P^T inv(U^T) = (L^-T P)^T (side R, transa T)
    _trsm(L, c[0:].ctypes, c[1:].ctypes, c[2:].ctypes, c[3:].ctypes, ints.ctypes, ints.ctypes,
          one.ctypes, L.ctypes, ints.ctypes, P.ctypes, ints.ctypes)
    # then X^T := inv(U) X^T = L^-T X^T = (X L^-1)^T (side L, transa N): S in C order
    _trsm(L, c[4:].ctypes, c[1:].ctypes, c[5:].ctypes, c[3:].ctypes, ints.ctypes, ints.ctypes,
          one.ctypes, L.ctypes, ints.ctypes, P.ctypes, ints.ctypes)
    r = np.zeros((n, n), L.dtype)
    for i in range(n):
        for j in range(i):
            r[i, j] = P[i, j] + P[j, i]
        r[i, i] = P[i, i]
    return r


@_helper
def _blocked(gL, L):
    """:func:`_symbolic`'s result: that formula for n < 64 (as
    ``rules.numpy.linalg._cholesky_lapack``), else ``rules.numpy.linalg._cholesky_blocked``'s
    sweep (blocks of 32, 48 from n = 112, 64 from 384, 128 from 768; each diagonal block
    inverted by trtri, then products).  A singular diagonal block (trtri's info > 0) takes the
    whole-matrix formula."""
    n = L.shape[0]
    if n < 64:
        return _symbolic(gL, L)
    nb = 32 if n < 112 else 48 if n < 384 else 64 if n < 768 else 128
    A = gL.copy()                            # Lbar, becoming the adjoint
    c = np.empty(2, np.uint8)                # Fortran sees D^T: uplo U, diag N
    c[0], c[1] = ord("U"), ord("N")
    ints = np.empty(2, np.int32)             # order, info
    k = n
    while k > 0:
        j = max(0, k - nb)
        m = k - j
        D = np.tril(L[j:k, j:k])             # zeros above the diagonal (C order)
        Di = D.copy()
        ints[0] = m
        _trtri(L, c[0:].ctypes, c[1:].ctypes, ints[0:].ctypes, Di.ctypes, ints[0:].ctypes,
               ints[1:].ctypes)              # (D^T)^-1 in Fortran order: D^-1 in C order
        if ints[1] != 0:
            return _symbolic(gL, L)
        Cb = np.zeros((0, m), L.dtype)
        if k < n:
            C = np.ascontiguousarray(L[k:, j:k])
            Cb = np.ascontiguousarray(A[k:, j:k]) @ Di          # Cbar D^-1
            A[k:, j:k] = Cb
            if j > 0:
                A[k:, :j] -= Cb @ np.ascontiguousarray(L[j:k, :j])
            A[j:k, j:k] -= Cb.T @ C
        P = D.T @ np.tril(A[j:k, j:k])      # D^T Dbar, then Phi
        for i in range(m):
            for t in range(i + 1, m):
                P[i, t] = 0.0
            P[i, i] *= 0.5
        X = Di.T @ (P @ Di)                 # S = D^-T Phi D^-1
        S2 = X + X.T
        for i in range(m):
            for t in range(i):
                A[j + i, j + t] = S2[i, t]
            A[j + i, j + i] = 0.5 * S2[i, i]
        if j > 0:
            upd = S2 @ np.ascontiguousarray(L[j:k, :j])
            if k < n:
                upd += np.ascontiguousarray(Cb.T) @ np.ascontiguousarray(L[k:, :j])
            A[j:k, :j] -= upd
        k -= nb
    return np.tril(A)


def cholesky_adjoint(char):
    """A numba function ``f(gL, L)``: ``rules.numpy.linalg._cholesky_symbolic`` for C-contiguous
    real (n, n) arrays of type ``char`` ('d' float64, 's' float32; :func:`_symbolic`).  None
    without SciPy's exports."""
    return _symbolic if routines(char) is not None else None


def cholesky_adjoint_blocked(char):
    """A numba function ``f(gL, L)`` with :func:`cholesky_adjoint`'s result, blocked from n = 64
    (:func:`_blocked`), for C-contiguous real (n, n) arrays of type ``char``.  None without
    SciPy's exports."""
    return _blocked if routines(char) is not None else None
