"""Elementwise expressions of generated code as single CuPy kernels (plain mode on CuPy arrays).

On an H200, CuPy's elementwise kernels move about 1.7 TB/s (one element per thread: too few
bytes in flight to cover memory latency) where PyTorch's move 4+ TB/s; a derivative of a large
step is mostly such passes.  :func:`s2sad.graphs.device_sweeps` hands each elementwise expression
of the generated sweeps (``+ - * /``, ``**``, unary minus, the one-argument ufuncs below, ``_rt.cj``
of a real array) to a :class:`Fused`: at run time, when its array operands are C-contiguous
CuPy arrays of one float dtype (at least ``MIN_ELEMENTS``, below), each either of the result's shape, or reduced along the last axis
with ``keepdims`` (``s / s.sum(-1, keepdims=True)``), or a vector along the last axis (a bias), or
one element, and its other operands Python numbers, the expression runs as one kernel in which
each thread loads its elements first (``_UNROLL`` of them, a grid-stride apart) and then computes
and stores them.  Anything else runs the expression as written (the fallback is the same Python
expression, so results never depend on the route: the kernel computes the same operations in the
same order in the arrays' dtype, with Python numbers converted to it as CuPy converts them).

:func:`maximum_adjoint` is the adjoint of ``maximum``/``minimum`` (relu) in one such kernel.
"""
import ast
import os

import numpy as np

# one-argument ufuncs and the CUDA function each is (float and double overloads exist for all);
# maximum and minimum of two operands too (compile_expr)
UFUNCS = {"exp": "exp", "log": "log", "tanh": "tanh", "sin": "sin", "cos": "cos", "tan": "tan",
          "sqrt": "sqrt", "sinh": "sinh", "cosh": "cosh", "log1p": "log1p", "expm1": "expm1",
          "arctan": "atan", "arcsin": "asin", "arccos": "acos", "arcsinh": "asinh",
          "arctanh": "atanh", "exp2": "exp2", "log2": "log2", "log10": "log10", "cbrt": "cbrt",
          "absolute": "fabs", "abs": "fabs", "fabs": "fabs", "negative": "-"}
_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}
_FLOATS = {np.dtype(np.float32): "float32", np.dtype(np.float64): "float64"}
_UNROLL = 4
# The size from which an expression runs as one kernel (below: CuPy's kernels, one per operation).
# Measured on the H200 host (benchmarks/gpu_hostcost.py, float32 (4, 32, 64), 2026-12-02): a CuPy
# ufunc costs ~11 us of host time per operation (two: ~24), a Fused call ~17 whatever its number
# of operations.  So an expression of two or more operations runs as one kernel at every size; one
# of a single operation only where the kernel's four elements per thread save device time (CuPy's
# kernels move one: ~1.7 TB/s on large arrays where these move ~4).
MIN_ELEMENTS = 0
MIN_ELEMENTS_ONE_OP = 1 << 20   # the same for an expression of one operation
ENABLED = os.environ.get("S2SAD_CUPY_FUSE", "1") != "0"   # S2SAD_CUPY_FUSE=0: CuPy's kernels only
_FULL, _ROW, _COL, _ONE = "f", "r", "c", "1"


class Fused:
    """One elementwise expression; called with the values of its leaves (names, in order)."""

    def __init__(self, cexpr, arity, fallback, text, nops=2):
        self.cexpr = cexpr              # C text with {0}, {1}... for the leaves
        self.arity = arity
        # the size from which the kernel runs (module constants: measured, see their comment)
        self.min = MIN_ELEMENTS if nops >= 2 else MIN_ELEMENTS_ONE_OP
        self.fallback = fallback
        self.text = text                # the Python expression (for reading the code)
        self.kernels = {}               # (dtype, layouts, 32-bit index) -> RawKernel, or None
        self.plans = {}                 # operands' signature -> launch plan, or None (fallback)

    def __repr__(self):
        return f"<s2sad fused kernel: {self.text}>"

    def entry(self):
        """What generated code calls: a function of the leaves (one parameter each) that runs the
        fallback itself when no leaf is a CuPy array of ``self.min`` elements or more (NumPy
        arrays, numbers: one call, arguments bound once; about 0.2 us over the bare expression
        on NumPy arrays where calling the object costs 0.7), and this object otherwise.  It
        carries ``text`` and ``fused`` (this object)."""
        names = [f"l{i}" for i in range(self.arity)]
        test = " or ".join(f"type({n}) is _nd and {n}.size >= _f.min" for n in names) or "False"
        args = ", ".join(names)
        src = (f"def _s2sad_fused({args}):\n    if {test}:\n        return _f({args})\n"
               f"    return _fallback({args})\n")
        ns = {"_f": self, "_fallback": self.fallback, "_nd": _ND or _cupy_ndarray(), "type": type}
        exec(compile(src, f"<s2sad fused: {self.text}>", "exec"), ns)
        fn = ns["_s2sad_fused"]
        fn.text, fn.fused = self.text, self
        return fn

    def __call__(self, *vals):
        nd = _ND or _cupy_ndarray()
        sig = tuple((v.shape, v.strides, v.dtype) if type(v) is nd else type(v) for v in vals)
        plan = self.plans.get(sig, _NEW)
        if plan is _NEW:
            plan = self._new_plan(vals, sig)
        if plan is None:
            return self.fallback(*vals)
        kern, shape, dt, conv, views, grid, tail = plan
        out = nd(shape, dt)
        if views is not None:           # (else every operand is an array passed as it is)
            vals = tuple(conv(v) if m is None else (v if m is True else v[m])
                         for v, m in zip(vals, views))
        kern(grid, _BLOCK, vals + (out,) + tail)
        return out

    def _new_plan(self, vals, sig):
        """The launch plan for operands of this signature (kept), or None: the fallback runs
        them (other types or layouts, fewer than ``self.min`` elements, a kernel that failed to
        build)."""
        plan = None
        if len(self.plans) > 64:
            self.plans.clear()
        nd = _ND or _cupy_ndarray()
        if all(s in (float, int) or type(v) is nd for s, v in zip(sig, vals)):
            got = _plan(vals)
            if got is not None and got[3] >= self.min:
                dt, shape, modes, n, last, arrays = got
                small = n < 2 ** 31
                kern = self._kernel(dt, modes, small)
                if kern is not None:
                    views = []
                    for v, a in zip(vals, arrays):
                        if type(v) is not nd:
                            views.append(None)
                        elif a is v:
                            views.append(True)
                        else:           # a broadcast view: read through its one copy of the data
                            views.append(tuple(slice(0, 1) if st == 0 else slice(None)
                                               for st in v.strides))
                    threads = -(-n // _UNROLL)
                    grid = (max(1, -(-threads // _BLOCK[0])),)
                    if all(m is True for m in views):
                        views = None
                    plan = (kern, shape, dt, _SCALAR[dt], views, grid,
                            (np.int64(n), np.int64(last)))
        self.plans[sig] = plan
        return plan

    def _kernel(self, dt, modes, small):
        key = (dt, modes, small)
        k = self.kernels.get(key, _NEW)
        if k is _NEW:
            try:
                k = _kernel(self.cexpr, dt, modes, small)
                k.compile()             # (a kernel that does not build falls back now, once)
            except Exception as e:  # noqa: BLE001  (s2sad's bug, never the user's: run as written)
                from .. import logs
                logs.log.warning("s2sad: the fused kernel of `%s` did not build (%s: %s); CuPy's "
                                 "kernels run it", self.text, type(e).__name__, e)
                FAILED.append((self.text, repr(e)))
                k = None
            self.kernels[key] = k
        return k


_ND = None
_NEW = object()
_BLOCK = (256,)
_SCALAR = {np.dtype(np.float32): np.float32, np.dtype(np.float64): np.float64}
FAILED = []                     # (expression, error) of each kernel that did not build (tests read it)


def _cupy_ndarray():
    """CuPy's ndarray type (a type no value has, where CuPy is not importable)."""
    global _ND
    try:
        import cupy
        _ND = cupy.ndarray
    except Exception:  # noqa: BLE001
        _ND = type("NoCuPy", (), {})
    return _ND


def _plan(vals):
    """(dtype, result shape, mode of each operand, size, last-axis length, operands) when the
    kernel route applies, else None.  A broadcast view (stride 0 along some axes: a reduction's
    adjoint) is read through its one copy of the data."""
    big = None
    dt = None
    for v in vals:
        t = type(v)
        if t is float or t is int:
            continue
        if not t.__module__.startswith("cupy") or not hasattr(v, "flags"):
            return None
        if dt is None:
            dt = v.dtype
        elif v.dtype != dt:
            return None
        if big is None or v.size > big.size:
            big = v
    if big is None or dt not in _FLOATS:
        return None
    shape = big.shape
    nd = len(shape)
    last = shape[-1] if nd else 1
    modes = []
    arrays = []
    for v in vals:
        t = type(v)
        arrays.append(v)
        if t is float or t is int:
            modes.append("s")
            continue
        if not v.flags.c_contiguous:
            if 0 not in v.strides:
                return None
            v = v[tuple(slice(0, 1) if st == 0 else slice(None) for st in v.strides)]
            if not v.flags.c_contiguous:
                return None
            arrays[-1] = v
        s = v.shape
        if s == shape:
            modes.append(_FULL)
        elif v.size == 1:
            modes.append(_ONE)
        elif len(s) == nd and s[:-1] == shape[:-1] and s[-1] == 1:
            modes.append(_ROW)
        elif len(s) <= nd and s[-1] == last and v.size == last:
            modes.append(_COL)
        else:
            return None
    return dt, shape, tuple(modes), big.size, last, arrays


def _kernel(cexpr, dt, modes, small):
    """The kernel of one expression for one dtype and operand layout (a ``cupy.RawKernel``: its
    launch costs the host about half of an ElementwiseKernel's, measured on the H200): each
    thread loads its ``_UNROLL`` elements of every array operand (a grid-stride apart:
    coalesced), then computes and stores them (loads first, so that they are all in flight
    together)."""
    import cupy
    ctype = "float" if _FLOATS[dt] == "float32" else "double"
    idx = "unsigned int" if small else "long long"
    params, loads, names = [], [], []
    for i, m in enumerate(modes):
        if m == "s":
            params.append(f"const {ctype} s{i}")
            names.append(f"s{i}")
            continue
        params.append(f"const {ctype}* __restrict__ a{i}")
        loads.append(f"v{i}[u] = a{i}[{ {_FULL: 'j', _ROW: 'j / L', _COL: 'j % L', _ONE: '0'}[m]}];")
        names.append(f"v{i}[u]")
    params += [f"{ctype}* __restrict__ out", "const long long n", "const long long last"]
    expr = cexpr.replace("__T__", ctype).format(*names)
    body = [f"const {idx} S = ({idx})gridDim.x * blockDim.x, N = ({idx})n, L = ({idx})last;",
            f"const {idx} i = ({idx})blockIdx.x * blockDim.x + threadIdx.x;"]
    body += [f"{ctype} v{i}[{_UNROLL}];" for i, m in enumerate(modes) if m != "s"]
    body += ["#pragma unroll",
             f"for (int u = 0; u < {_UNROLL}; ++u) {{",
             f"    const {idx} j = i + u * S;",
             "    if (j < N) { " + " ".join(loads) + " }",
             "}",
             "#pragma unroll",
             f"for (int u = 0; u < {_UNROLL}; ++u) {{",
             f"    const {idx} j = i + u * S;",
             f"    if (j < N) out[j] = ({ctype})({expr});",
             "}"]
    src = ('extern "C" __global__ void s2sad_fused(' + ", ".join(params) + ") {\n    "
           + "\n    ".join(body) + "\n}\n")
    # no fused multiply-add contraction: each operation rounds as CuPy's separate kernels do, so
    # the route never changes a result (`1 - h * h` contracted to one fma differed in the last
    # bits, far more after the cancellation)
    return cupy.RawKernel(src, "s2sad_fused", options=("--fmad=false",))


# -- building a Fused from an expression of generated code -------------------------------------------

def compile_expr(node, resolve, cj, products=None):
    """(C template, leaves in order, number of operations) of an elementwise expression, or None
    when ``node`` is not
    an elementwise operation.  A leaf is a name (str) or a subexpression the kernel cannot compute
    (an ``ast`` node: a call such as ``_adj.sum(...)``, a subscript), whose value the generated
    code computes first and passes in: left to right, as Python would have evaluated it.
    ``resolve(expr)`` gives the object a dotted name denotes (None for locals); ``cj`` is the
    runtime's conjugate (the identity on the real arrays that reach a kernel); ``products`` maps
    the runtime's in-place products (``mul_into(g, x)``: ``g * x`` written into g's buffer where
    that is safe; on CuPy arrays a plain product) to "ab" or "ba", their operand order."""
    products = products or {}
    leaves = []
    ops = []

    def leaf(e):
        if isinstance(e, ast.Name):
            if e.id not in leaves:
                leaves.append(e.id)
            return "{%d}" % leaves.index(e.id)
        leaves.append(e)
        return "{%d}" % (len(leaves) - 1)

    def op(e):
        """C text of an operation of the kernel's, or None."""
        if isinstance(e, ast.BinOp):
            if isinstance(e.op, ast.Pow):
                return "pow({}, {})"
            b = _BINOPS.get(type(e.op))
            return None if b is None else "({} " + b + " {})"
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.USub, ast.UAdd)):
            return "(-{})" if isinstance(e.op, ast.USub) else "(+{})"
        if isinstance(e, ast.Call) and len(e.args) == 2 and not e.keywords and \
                not any(isinstance(a, ast.Starred) for a in e.args):
            fn = resolve(e.func)
            if fn is not None and fn in products:    # (an in-place product: g * x, fresh here)
                return "({0} * {1})" if products[fn] == "ab" else "({1} * {0})"
            if fn is not None and type(fn).__name__ == "ufunc" and \
                    type(fn).__module__.split(".")[0] in ("numpy", "cupy"):
                name = getattr(fn, "__name__", "")
                name = name[5:] if name.startswith("cupy_") else name
                if name in ("maximum", "minimum"):
                    # CuPy's float maximum: NaN if either is NaN (a + b is), else CUDA's max
                    f = "max" if name == "maximum" else "min"
                    return "((({0} != {0}) | ({1} != {1})) ? ({0} + {1}) : %s({0}, {1}))" % f
        if isinstance(e, ast.Call) and len(e.args) == 1 and not e.keywords and \
                not isinstance(e.args[0], ast.Starred):
            fn = resolve(e.func)
            if fn is None:
                return None
            if fn is cj:
                return "{}"
            name = getattr(fn, "__name__", None)
            if isinstance(name, str) and name.startswith("cupy_"):
                name = name[5:]                     # (CuPy's ufuncs are named cupy_exp...)
            if name in UFUNCS and type(fn).__name__ == "ufunc" and \
                    type(fn).__module__.split(".")[0] in ("numpy", "cupy"):
                f = UFUNCS[name]
                return "(-{})" if f == "-" else f + "({})"
        return None

    def c(e):
        if isinstance(e, ast.Constant) and type(e.value) in (int, float) and \
                np.isfinite(e.value):
            return f"((__T__){float(e.value)!r})"   # in the arrays' dtype, as CuPy converts it
        form = op(e)
        if form is None:
            return leaf(e)
        if form != "{}" and form != "(+{})":
            ops.append(e)
        if isinstance(e, ast.BinOp):
            return form.format(c(e.left), c(e.right))
        if isinstance(e, ast.Call) and len(e.args) == 2:
            return form.format(c(e.args[0]), c(e.args[1]))
        return form.format(c(e.operand if isinstance(e, ast.UnaryOp) else e.args[0]))

    if op(node) is None:
        return None
    text = c(node)
    if not ops or not leaves:
        return None                 # no operation (``_rt.cj(x)`` of a real array is x itself),
                                    # or constants only (``-1``)
    return text, leaves, len(ops)


# -- the adjoint of maximum / minimum --------------------------------------------------------------

def _no_kernel(*vals):
    return None


# where(a > b, g, where(a == b, g / 2, 0 * g)), as one Fused expression (its layouts, its kernel)
_MAXIMUM = {sign: Fused("(({1} %s {2}) ? {0} : (({1} == {2}) ? ({0} * ((__T__)0.5)) : "
                        "({0} * ((__T__)0.0))))" % cmp, 3, _no_kernel,
                        f"maximum adjoint ({cmp})", nops=3)
            for sign, cmp in ((1, ">"), (-1, "<"))}


def maximum_adjoint(g, a, b, sign):
    """``where(a > b, g, where(a == b, g / 2, 0 * g))`` (``<`` for minimum) in one kernel, for
    large C-contiguous CuPy arrays ``g`` and ``a`` of one float dtype and shape and ``b`` a Python
    number or such an array; None otherwise (the caller's general path)."""
    t = type(g)
    if not t.__module__.startswith("cupy") or type(a) is not t or g.shape != a.shape:
        return None
    if type(b) not in (float, int) and (type(b) is not t or b.shape != g.shape):
        return None
    return _MAXIMUM[1 if sign > 0 else -1](g, a, b)
