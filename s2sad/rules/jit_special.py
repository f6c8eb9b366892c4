"""``scipy.special``'s elementwise functions for derivatives compiled with ``jit=True``.

numba compiles NumPy's ufuncs but not SciPy's: a derivative that called ``sp.gammaln`` (the
user's call, or a rule template's ``_sp.digamma``) ran as Python.  Here each of them has a numba
version that calls SciPy's own compiled kernel, the one its ufunc loop calls, so the numbers are
SciPy's bit for bit: the ``double`` (and, where SciPy has one, ``float``) specialisations that
``scipy.special.cython_special`` exports (``__pyx_capi__``: ``gammaln``, ``__pyx_fuse_1psi``...;
the exported name is looked up by its C signature, the fused index differs between functions).
Each is registered with LLVM under a name of its own (``s2sad_sp_gammaln_d``...) and called as a
numba external function (``rules/jit_lapack.py`` does the same for BLAS), so numba's cache keeps
working.  ``polygamma(n, x)`` is SciPy's Python function ``(-1)**(n+1) gamma(n+1) zeta(n+1, x)``
(``psi(x)`` where n == 0); the Hurwitz zeta function is not among cython_special's exports, so
its ufunc's own inner loop (``scipy.special._ufuncs._zeta``, the ``dd->d`` loop and its data
pointer, read from the ufunc object) is registered and called instead.

Types follow the ufuncs' own loop choice: float64, integers and booleans take the ``d`` loop; a
float32 argument takes the ``f`` loop, which for most functions is the double kernel between two
casts and for ``expit``, ``logit``, ``log_expit`` and ``erfinv`` a float kernel of its own (the
one cython_special exports).  Each kernel, and each float32 path, is checked against the ufunc on
a few values when this module loads: one that differs (another SciPy) is left to Python.
``xlogy`` and ``xlog1py`` compute float32 in float with no exported kernel, and a float32 array
next to a Python float is float32 for NumPy (a weak scalar) but float64 for numba: such calls do
not compile here and run as Python, with the fallback warning.  Complex arguments likewise.
(The compiled mode takes no float32 values today, arguments or ``astype`` in the function: the
float32 paths are here for when it does, tested against SciPy directly.)

:func:`versions` and :func:`module_leaves` hand these to ``rules/jit_substitutes.py``, which
imports this module (only ``jit=True`` imports numba) and registers them; this module imports
nothing of s2sad, so the two do not form an import cycle.
"""
import ctypes
import math

import numpy as np
import scipy.special as _sp
import scipy.special.cython_special as _cs
from numba.core import types as nt
from numba.extending import get_cython_function_address, intrinsic, overload, register_jitable
from numba.np.numpy_support import as_dtype

# -- the kernels -----------------------------------------------------------------------------------
_CAPSULE_NAME = ctypes.pythonapi.PyCapsule_GetName
_CAPSULE_NAME.restype = ctypes.c_char_p
_CAPSULE_NAME.argtypes = [ctypes.py_object]

_C = {"d": ("double", nt.float64), "f": ("float", nt.float32)}


def _export(name, char, nargs):
    """cython_special's exported name of ``name``'s specialisation for C type ``char`` ('d', 'f')
    taking ``nargs`` arguments (plain ``gammaln`` or fused ``__pyx_fuse_1psi``), or None."""
    c = _C[char][0]
    sig = f"{c} ({', '.join([c] * nargs)}, int __pyx_skip_dispatch)"
    for key, capsule in _cs.__pyx_capi__.items():
        base = key
        if key.startswith("__pyx_fuse_"):
            base = key[len("__pyx_fuse_"):].lstrip("0123456789")
        if base == name and _CAPSULE_NAME(capsule).decode() == sig:
            return key
    return None


def _kernel(name, char, nargs):
    """A numba external function ``f(x..., skip_dispatch)`` for cython_special's ``name`` of type
    ``char``, registered with LLVM, after a check that it computes the ufunc's values bit for bit
    (:func:`_same_as_ufunc`); None where SciPy exports none or it differs."""
    import llvmlite.binding as ll
    key = _export(name, char, nargs)
    if key is None:
        return None
    address = get_cython_function_address("scipy.special.cython_special", key)
    if not _same_as_ufunc(getattr(_sp, name), address, char, nargs):
        return None
    symbol = f"s2sad_sp_{name}_{char}"
    ll.add_symbol(symbol, address)
    t = _C[char][1]
    return nt.ExternalFunction(symbol, t(*([t] * nargs), nt.intc))


_SAMPLES = np.array([0.0, -0.0, 0.3, 0.5, 0.97, 1.0, 1.5, 2.0, -0.7, -1.5, -3.0, 7.25, 33.0,
                     171.7, 1e-8, 1e-310, 1e30, -40.0, np.inf, -np.inf, np.nan])


def _same_as_ufunc(ufunc, address, char, nargs):
    """The kernel at ``address`` gives the ufunc's values for its ``char`` loop on a few arguments
    (the kernel is the one the loop calls in the SciPy this was written against; another SciPy
    may compute otherwise)."""
    ct = ctypes.c_double if char == "d" else ctypes.c_float
    fn = ctypes.CFUNCTYPE(ct, *([ct] * nargs), ctypes.c_int)(address)
    x = _SAMPLES.astype(char)
    args = (x,) if nargs == 1 else (x, x[::-1].copy())
    with np.errstate(all="ignore"):
        want = ufunc(*args)
    got = np.array([fn(*[float(a[i]) for a in args], 0) for i in range(x.size)], char)
    return want.dtype == got.dtype and want.tobytes() == got.tobytes()


def _float_via_double(ufunc, nargs):
    """SciPy's float32 loop of ``ufunc`` is its double loop between casts (on a few arguments)."""
    x = _SAMPLES.astype(np.float32)
    args = (x,) if nargs == 1 else (x, x[::-1].copy())
    with np.errstate(all="ignore"):
        want = ufunc(*args)
        got = ufunc(*[a.astype(np.float64) for a in args]).astype(np.float32)
    return want.dtype == np.float32 and want.tobytes() == got.tobytes()


class _UFuncObject(ctypes.Structure):
    """The head of NumPy's ``PyUFuncObject`` (numpy/ufuncobject.h), up to ``types``."""
    _fields_ = [("ob_refcnt", ctypes.c_ssize_t), ("ob_type", ctypes.c_void_p),
                ("nin", ctypes.c_int), ("nout", ctypes.c_int), ("nargs", ctypes.c_int),
                ("identity", ctypes.c_int), ("functions", ctypes.POINTER(ctypes.c_void_p)),
                ("data", ctypes.POINTER(ctypes.c_void_p)), ("ntypes", ctypes.c_int),
                ("reserved1", ctypes.c_int), ("name", ctypes.c_char_p)]


_LOOP = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)


def _ufunc_loop(ufunc, types, symbol):
    """Register the inner loop of ``ufunc`` for ``types`` (``"dd->d"``) as the external function
    ``symbol`` (``void(char **args, npy_intp *dims, npy_intp *steps, void *data)``) and its data
    pointer as the symbol ``symbol + "_data"``; checked against the ufunc on a few values (the
    struct is read by its layout).  Returns the loop, or None."""
    import llvmlite.binding as ll
    try:
        u = _UFuncObject.from_address(id(ufunc))
        if u.nin != 2 or u.nout != 1 or u.ntypes != len(ufunc.types) or \
                u.name.decode() != ufunc.__name__:
            return None
        i = ufunc.types.index(types)
        fn, data = u.functions[i], u.data[i]
        s = np.array([2.0, 3.0, 2.0, 5.0])
        q = np.array([0.5, 1.5, 30.0, -2.5])
        out = np.empty(4)
        args = np.array([s.ctypes.data, q.ctypes.data, out.ctypes.data], np.uintp)
        dims = np.array([4], np.intp)
        steps = np.array([8, 8, 8], np.intp)
        _LOOP(fn)(args.ctypes.data, dims.ctypes.data, steps.ctypes.data, data)
        if not np.array_equal(out, ufunc(s, q)):
            return None
    except (ValueError, AttributeError, UnicodeDecodeError):
        return None
    ll.add_symbol(symbol, fn)
    ll.add_symbol(symbol + "_data", data if data is not None else 0)
    return nt.ExternalFunction(symbol, nt.void(nt.voidptr, nt.voidptr, nt.voidptr, nt.voidptr))


@intrinsic
def _symbol_address(typingctx, name):
    """The address of the symbol named by the string literal ``name`` (resolved when the code is
    linked: numba's cache keeps the name, not the address)."""
    if not isinstance(name, nt.StringLiteral):
        return None
    symbol = name.literal_value

    def codegen(context, builder, sig, args):
        from llvmlite import ir
        mod = builder.module
        try:
            gv = mod.get_global(symbol)
        except KeyError:
            gv = ir.GlobalVariable(mod, ir.IntType(8), symbol)
            gv.linkage = "external"
        return builder.bitcast(gv, ir.IntType(8).as_pointer())
    return nt.voidptr(name), codegen


# -- loops over arrays ----------------------------------------------------------------------------
def _dtype_of(t):
    return as_dtype(t.dtype if isinstance(t, nt.Array) else t)


def _realish(t):
    d = t.dtype if isinstance(t, nt.Array) else t
    return isinstance(d, (nt.Float, nt.Integer, nt.Boolean)) and \
        not (isinstance(d, nt.Float) and d.bitwidth not in (32, 64))


def _loop_char(ufunc, args, chars):
    """The loop NumPy's ufunc takes for arguments of numba types ``args`` among the real loops
    whose input letters are in ``chars``: one that matches exactly, else the first in order that
    the arguments cast to safely.  None where that is not known from the types (a float32
    argument beside another type: NumPy keeps float32 next to a Python float, numba says float64)
    or is not one of ``chars``."""
    if not all(_realish(a) for a in args):
        return None
    dts = [_dtype_of(a) for a in args]
    n = len(args)
    if any(d == np.float32 for d in dts) and not all(d == np.float32 for d in dts):
        return None
    loops = [t for t in ufunc.types if len(t) == n + 3 and len(set(t[:n])) == 1 and
             t[0] in "fd" and t[-1] == t[0]]
    for t in loops:
        if all(d == np.dtype(t[0]) for d in dts):
            return t[0] if t[0] in chars else None
    for t in loops:
        if all(np.can_cast(d, t[0]) for d in dts):
            return t[0] if t[0] in chars else None
    return None


def _map1(scalar, odt, tx):
    """A jitable ``f(x)`` applying the jitable ``scalar`` to each element of an array ``x`` (numba
    type ``tx``: any ndim, any layout), into a new C array of dtype ``odt``."""
    if tx.layout == "C":
        @register_jitable
        def fc(x):
            out = np.empty(x.shape, odt)
            o = out.reshape(out.size)
            xf = x.reshape(x.size)
            for i in range(xf.size):
                o[i] = scalar(xf[i])
            return out
        return fc

    @register_jitable
    def f(x):
        out = np.empty(x.shape, odt)
        o = out.reshape(out.size)
        i = 0
        for v in x.flat:
            o[i] = scalar(v)
            i += 1
        return out
    return f


def _map2(scalar, odt, ta, tb):
    """A jitable ``f(a, b)`` applying ``scalar`` elementwise to ``a`` and ``b`` (numba types ``ta``,
    ``tb``, scalars or arrays) broadcast together; a scalar where both are scalars."""
    A, B = isinstance(ta, nt.Array), isinstance(tb, nt.Array)
    if not A and not B:
        return scalar
    if A and not B:
        @register_jitable
        def fa(a, b):
            out = np.empty(a.shape, odt)
            o = out.reshape(out.size)
            i = 0
            for v in a.flat:
                o[i] = scalar(v, b)
                i += 1
            return out
        return fa
    if B and not A:
        @register_jitable
        def fb(a, b):
            out = np.empty(b.shape, odt)
            o = out.reshape(out.size)
            i = 0
            for v in b.flat:
                o[i] = scalar(a, v)
                i += 1
            return out
        return fb
    @register_jitable
    def broadcast(a, b):
        shape = np.broadcast_shapes(a.shape, b.shape)
        aa = np.broadcast_to(a, shape)
        bb = np.broadcast_to(b, shape)
        out = np.empty(shape, odt)
        for idx in np.ndindex(shape):
            out[idx] = scalar(aa[idx], bb[idx])
        return out
    if not (ta.layout == "C" and tb.layout == "C" and ta.ndim == tb.ndim):
        return broadcast

    @register_jitable
    def f(a, b):
        if a.shape != b.shape:
            return broadcast(a, b)
        out = np.empty(a.shape, odt)
        o, af, bf = out.reshape(out.size), a.reshape(a.size), b.reshape(b.size)
        for i in range(o.size):
            o[i] = scalar(af[i], bf[i])
        return out
    return f


# -- the overloads ---------------------------------------------------------------------------------
_VERSIONS = {}          # scipy.special function -> its numba stub


def _stub(name):
    def stub(*args):
        raise NotImplementedError("s2sad: runs inside numba-compiled derivatives only")
    stub.__name__ = stub.__qualname__ = name
    return stub


_ZERO = np.int32(0)


def _unary(name, kd, kf, f32):
    """The numba version of the ufunc ``scipy.special.<name>`` from its double kernel ``kd`` and
    float kernel ``kf`` (None: float32 goes through the double kernel, as SciPy's ``f->f`` loop
    does); ``f32``: float32 is handled (else it runs as Python)."""
    ufunc = getattr(_sp, name)

    @register_jitable
    def sd(x):
        return kd(np.float64(x), _ZERO)

    if kf is not None:
        @register_jitable
        def sf(x):
            return kf(np.float32(x), _ZERO)
    else:
        @register_jitable
        def sf(x):
            return np.float32(kd(np.float64(x), _ZERO))

    stub = _stub(name)

    @overload(stub)
    def ov(x):
        c = _loop_char(ufunc, (x,), "fd" if f32 else "d")
        if c is None:
            return None
        scalar, odt = (sd, np.float64) if c == "d" else (sf, np.float32)
        if not isinstance(x, nt.Array):
            return lambda x: scalar(x)
        return _map1(scalar, odt, x)
    _VERSIONS[ufunc] = stub
    return stub


def _binary(name, kd, f_via_double):
    """The numba version of the two-argument ufunc ``scipy.special.<name>``; float32 only where
    SciPy's ``ff->f`` loop is the double kernel between casts (``f_via_double``)."""
    ufunc = getattr(_sp, name)

    @register_jitable
    def sd(a, b):
        return kd(np.float64(a), np.float64(b), _ZERO)

    @register_jitable
    def sf(a, b):
        return np.float32(kd(np.float64(a), np.float64(b), _ZERO))

    stub = _stub(name)

    @overload(stub)
    def ov(a, b):
        c = _loop_char(ufunc, (a, b), "fd" if f_via_double else "d")
        if c is None:
            return None
        scalar, odt = (sd, np.float64) if c == "d" else (sf, np.float32)
        return _map2(scalar, odt, a, b)
    _VERSIONS[ufunc] = stub
    return stub


# -- polygamma -------------------------------------------------------------------------------------
def polygamma(n, x):
    raise NotImplementedError("s2sad: runs inside numba-compiled derivatives only")


@register_jitable
def _pg_finish(n, z, psi_x):
    """SciPy's ``where(n == 0, psi(x), (-1.0)**(n+1) * gamma(n+1.0) * zeta(n+1, x))`` for one
    element, from z = zeta(n+1, x) and psi(x) (as float64)."""
    if n == 0:
        return psi_x
    return math.pow(-1.0, np.float64(n + 1)) * _GAMMA_D(np.float64(n + 1.0), _ZERO) * z


def _polygamma_overload(zeta_loop):
    psi_d = _K["psi"]["d"]

    @register_jitable
    def psi64(x):
        return psi_d(np.float64(x), _ZERO)

    @register_jitable
    def psi32(x):          # SciPy's psi(float32) is its f->f loop: the double kernel, cast
        return np.float64(np.float32(psi_d(np.float64(x), _ZERO)))

    @register_jitable
    def zeta(s, q):
        """zeta(s[i], q[i]) for C-contiguous float64 1-d arrays, through the ufunc's loop."""
        out = np.empty(s.size, np.float64)
        if s.size:
            ptrs = np.empty(3, np.uintp)
            ptrs[0], ptrs[1], ptrs[2] = s.ctypes.data, q.ctypes.data, out.ctypes.data
            dims = np.empty(1, np.intp)
            dims[0] = s.size
            steps = np.empty(3, np.intp)
            steps[0], steps[1], steps[2] = 8, 8, 8
            zeta_loop(ptrs.ctypes, dims.ctypes, steps.ctypes,
                      _symbol_address("s2sad_sp_zeta_dd_loop_data"))
        return out

    @overload(polygamma)
    def ov(n, x):
        # (n + 1 for an integer or float64 n is float64 next to x; a float32 n is not handled)
        dn = n.dtype if isinstance(n, nt.Array) else n
        if not (isinstance(dn, nt.Integer) or dn == nt.float64):
            return None
        if _loop_char(_sp.psi, (x,), "fd") is None:
            return None
        psi = psi32 if _dtype_of(x) == np.float32 else psi64
        N, X = isinstance(n, nt.Array), isinstance(x, nt.Array)
        if not N and not X:
            def impl(n, x):
                s = np.empty(1)
                q = np.empty(1)
                s[0], q[0] = n + 1, x
                return _pg_finish(n, zeta(s, q)[0], psi(x))
            return impl

        def impl_a(n, x):
            nn = np.asarray(n)
            xx = np.asarray(x)
            shape = np.broadcast_shapes(nn.shape, xx.shape)
            nb = np.broadcast_to(nn, shape)
            xb = np.broadcast_to(xx, shape)
            size = 1
            for d in shape:
                size *= d
            s = np.empty(size)
            q = np.empty(size)
            i = 0
            for idx in np.ndindex(shape):
                s[i] = nb[idx] + 1
                q[i] = xb[idx]
                i += 1
            z = zeta(s, q)
            out = np.empty(shape)
            i = 0
            for idx in np.ndindex(shape):
                out[idx] = _pg_finish(nb[idx], z[i], psi(xb[idx]))
                i += 1
            return out
        return impl_a
    _VERSIONS[_sp.polygamma] = polygamma


# -- the table -------------------------------------------------------------------------------------
_UNARY = ("gammaln", "psi", "gamma", "loggamma", "erf", "erfc", "erfcx", "erfinv", "ndtr",
          "ndtri", "log_ndtr", "expit", "logit", "log_expit")
_BINARY = ("xlogy", "xlog1py", "betaln")

_K = {}
for _name in _UNARY:
    if not isinstance(getattr(_sp, _name, None), np.ufunc):
        continue
    _kd = _kernel(_name, "d", 1)
    if _kd is None:
        continue
    _K[_name] = {"d": _kd}
    # float32: the double kernel between casts where SciPy's f->f loop is that, else the float
    # kernel SciPy exports (expit, logit, log_expit, erfinv in SciPy 1.17), else Python's
    _kf = None if _float_via_double(getattr(_sp, _name), 1) else _kernel(_name, "f", 1)
    _unary(_name, _kd, _kf, _kf is not None or _float_via_double(getattr(_sp, _name), 1))
for _name in _BINARY:
    _kd = _kernel(_name, "d", 2) if isinstance(getattr(_sp, _name, None), np.ufunc) else None
    if _kd is not None:
        _binary(_name, _kd, _float_via_double(getattr(_sp, _name), 2))
_GAMMA_D = _K.get("gamma", {}).get("d")
if _GAMMA_D is not None and "psi" in _K:
    _zl = _ufunc_loop(getattr(_sp._ufuncs, "_zeta", None), "dd->d", "s2sad_sp_zeta_dd_loop") \
        if isinstance(getattr(_sp._ufuncs, "_zeta", None), np.ufunc) else None
    if _zl is not None:
        _polygamma_overload(_zl)


def versions():
    """{scipy.special function: its numba version}."""
    return dict(_VERSIONS)


def module_leaves():
    """{(name,): numba version} of ``scipy.special``'s functions, for a stand-in module of it
    (a rule template's ``_sp``); ``digamma`` reads as ``psi``'s version, as SciPy names both."""
    leaves = {(fn.__name__,): stub for fn, stub in _VERSIONS.items()}
    if _sp.psi in _VERSIONS:
        leaves[("digamma",)] = _VERSIONS[_sp.psi]
    return leaves
