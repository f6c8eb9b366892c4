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

:class:`Group` runs a run of consecutive elementwise statements of the sweeps (``_2 = _1 + b1;
h = maximum(_2, 0.0)``) the same way: one kernel that computes every statement for its elements
(each into a local of the arrays' type, rounded as CuPy's kernel of that statement rounds it) and
stores every name the run binds.  :func:`maximum_adjoint` is the adjoint of
``maximum``/``minimum`` (relu) in one such kernel.
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


class _Launches:
    """What :class:`Fused` and :class:`Group` share: a kernel per (dtype, operand layouts, index
    width) made from ``self.stmts`` (C templates: ``{i}`` leaf i, ``tK`` the value of statement
    K) storing the values ``self.stored``, and a launch plan per operand signature."""

    stmts = stored = ()
    min = 0
    text = ""

    def _fits(self, modes):
        """Whether operands of these layouts (``_plan``'s modes) can take the kernel route."""
        return True

    def _prepared(self, vals):
        """(launch plan, the operands as the kernel takes them) for these leaf values, kept per
        signature (shape, strides, dtype of each CuPy array; the type of anything else); (None,
        vals) where the fallback runs them."""
        nd = _ND or _cupy_ndarray()
        sig = tuple((v.shape, v.strides, v.dtype) if type(v) is nd else type(v) for v in vals)
        plan = self.plans.get(sig, _NEW)
        if plan is _NEW:
            plan = self._new_plan(vals, sig)
        if plan is None:
            return None, vals
        views = plan[4]
        if views is not None:           # (else every operand is an array passed as it is)
            conv = plan[3]
            vals = tuple(conv(v) if m is None else (v if m is True else v[m])
                         for v, m in zip(vals, views))
        return plan, vals

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
            if got is not None and got[3] >= self.min and self._fits(got[2]):
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
                            views.append(_one_copy(v.strides))
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
            make = lambda: _kernel(self.stmts, self.stored, dt, modes, small)  # noqa: E731
            k = self.kernels[key] = built(make, f"the fused kernel of `{self.text}`")
        return k


class Fused(_Launches):
    """One elementwise expression; called with the values of its leaves (names, in order)."""

    def __init__(self, cexpr, arity, fallback, text, nops=2):
        self.stmts, self.stored = (cexpr,), (0,)   # C text with {0}, {1}... for the leaves
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
        fn = _entry(self, "type({0}) is _nd and {0}.size >= _f.min")
        fn.fused = self
        return fn

    def __call__(self, *vals):
        plan, args = self._prepared(vals)
        if plan is None:
            return self.fallback(*vals)
        kern, shape, dt, _, _, grid, tail = plan
        out = _ND(shape, dt)
        kern(grid, _BLOCK, args + (out,) + tail)
        return out


class Group(_Launches):
    """A run of consecutive elementwise statements of the sweeps (:class:`s2sad.graphs._Runs`)
    as one kernel; called with the values of its leaves (the names the run reads before it binds
    them, in order), it returns the value of every name the run binds (a tuple, in ``names``'
    order; the value itself for one name).  The kernel route applies when :func:`_plan` takes
    the leaves and every statement's result has the full result shape (it reads a full-shaped
    leaf or an earlier statement's result: those are all full); it stores each value that is an
    output, and an alias (``z = _7``) is the same array object as its source.  Otherwise
    ``fallback`` (the statements as written, returning the same tuple) runs.  Every size takes
    the kernel (a run saves launches whatever its size)."""

    def __init__(self, stmts, reads, stored, picks, arity, fallback, text):
        self.stmts = tuple(stmts)       # C template of each statement: {i} leaf i, tK statement K
        self.reads = tuple(reads)       # per statement: (the leaves it reads, reads an earlier one)
        self.stored = tuple(stored)     # the statements whose values are outputs (kernel order)
        self.picks = tuple(picks)       # per output name: its index in ``stored``
        self.single = len(picks) == 1
        self.direct = self.picks == tuple(range(len(self.stored)))
        self.arity = arity
        self.fallback = fallback
        self.text = text                # the Python statements (for reading the code)
        self.kernels = {}
        self.plans = {}

    def __repr__(self):
        return f"<s2sad fused run: {self.text}>"

    def _fits(self, modes):
        return all(earlier or any(modes[i] == _FULL for i in leaves)
                   for leaves, earlier in self.reads)

    def entry(self):
        """What generated code calls (as :meth:`Fused.entry`: the fallback, called directly,
        unless a leaf is a CuPy array).  It carries ``text`` and ``group`` (this object)."""
        fn = _entry(self, "type({0}) is _nd")
        fn.group = self
        return fn

    def __call__(self, *vals):
        plan, args = self._prepared(vals)
        if plan is None:
            return self.fallback(*vals)
        kern, shape, dt, _, _, grid, tail = plan
        outs = tuple([_ND(shape, dt) for _ in self.stored])
        kern(grid, _BLOCK, args + outs + tail)
        if self.single:
            return outs[0]
        return outs if self.direct else tuple([outs[k] for k in self.picks])


def _entry(obj, test):
    """A function of ``obj.arity`` leaves that calls ``obj`` when ``test`` (a format of one
    leaf's name) holds for a leaf, and ``obj.fallback`` otherwise (one call, arguments bound
    once)."""
    names = [f"l{i}" for i in range(obj.arity)]
    cond = " or ".join(test.format(n) for n in names) or "False"
    args = ", ".join(names)
    src = (f"def _s2sad_fused({args}):\n    if {cond}:\n        return _f({args})\n"
           f"    return _fallback({args})\n")
    ns = {"_f": obj, "_fallback": obj.fallback, "_nd": _ND or _cupy_ndarray(), "type": type}
    exec(compile(src, f"<s2sad fused: {obj.text}>", "exec"), ns)
    fn = ns["_s2sad_fused"]
    fn.text = obj.text
    return fn


_ND = None
_NEW = object()
_BLOCK = (256,)
_SCALAR = {np.dtype(np.float32): np.float32, np.dtype(np.float64): np.float64}
FAILED = []                     # (what, error) of each kernel that did not build (tests read it)


def built(make, what):
    """The ``cupy.RawKernel`` that ``make()`` returns, compiled now; None when it does not build
    (s2sad's bug, never the user's: the caller runs CuPy's kernels instead), with a warning naming
    ``what`` and a record in :data:`FAILED`.  Callers keep the result, None included, so a kernel
    that does not build is tried once."""
    try:
        k = make()
        k.compile()
        return k
    except Exception as e:  # noqa: BLE001
        from .. import logs
        logs.log.warning("s2sad: %s did not build (%s: %s); CuPy's kernels run it", what,
                         type(e).__name__, e)
        FAILED.append((what, repr(e)))
        return None


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
            v = v[_one_copy(v.strides)]
            if not v.flags.c_contiguous:
                return None
            arrays[-1] = v
        s = v.shape
        if s == shape:
            modes.append(_FULL)
        elif v.size == 1 and len(s) <= nd:
            modes.append(_ONE)
        elif len(s) == nd and s[:-1] == shape[:-1] and s[-1] == 1:
            modes.append(_ROW)
        elif len(s) <= nd and s[-1] == last and v.size == last:
            modes.append(_COL)
        else:
            return None
    return dt, shape, tuple(modes), big.size, last, arrays


def _source(stmts, stored, dt, modes, small):
    """CUDA source of the kernel of statements ``stmts`` (C templates: ``{i}`` leaf i, ``tK``
    statement K's value) storing the values of statements ``stored`` (to ``out0``, ``out1``...),
    for one dtype and operand layout: each thread loads its ``_UNROLL`` elements of every array
    operand (a grid-stride apart: coalesced), then computes each statement into a local of the
    arrays' type (rounded as CuPy's kernel of that statement rounds it) and stores (loads first,
    so that they are all in flight together).  One expression is one statement."""
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
    params += [f"{ctype}* __restrict__ out{k}" for k in range(len(stored))]
    params += ["const long long n", "const long long last"]
    work = [f"const {ctype} t{k} = ({ctype})({c.replace('__T__', ctype).format(*names)});"
            for k, c in enumerate(stmts)]
    work += [f"out{i}[j] = t{k};" for i, k in enumerate(stored)]
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
             "    if (j < N) {",
             *("        " + w for w in work),
             "    }",
             "}"]
    return ('extern "C" __global__ void s2sad_fused(' + ", ".join(params) + ") {\n    "
            + "\n    ".join(body) + "\n}\n")


def _one_copy(strides):
    """The index that reads a broadcast view (stride 0 along some axes) through its one copy of
    the data."""
    return tuple(slice(0, 1) if st == 0 else slice(None) for st in strides)


def _kernel(stmts, stored, dt, modes, small):
    """The ``cupy.RawKernel`` of :func:`_source` (its launch costs the host about half of an
    ElementwiseKernel's, measured on the H200)."""
    import cupy
    # no fused multiply-add contraction: each operation rounds as CuPy's separate kernels do, so
    # the route never changes a result (`1 - h * h` contracted to one fma differed in the last
    # bits, far more after the cancellation)
    return cupy.RawKernel(_source(stmts, stored, dt, modes, small), "s2sad_fused",
                          options=("--fmad=false",))


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
