"""Types of IR values, from the types of the arguments: scalar or array, numeric kind, and ndim.

A small forward inference over the classified IR, in the manner of Numba's and Pythran's (without
their breadth): a value's type is

- ``("s", k)``: a scalar (a Python or NumPy number) of kind ``k`` in ``"bifc"``;
- ``("a", k, ndim)``: a NumPy/CuPy array of kind ``k``;
- ``("t", "i")``: a tuple of integers (a shape);
- ``("T", (t0, t1, ...))``: a tuple display of known length, with its items' types (each may be
  ``None``);
- ``("L", k)``: a list display of numbers of kind ``k`` (what ``np.array([...])`` turns into a
  1-d array);
- ``None``: not known (then the emitter keeps its run-time checks).

A call of a user function that the derivative recurses into (a ``derived`` call site) has the
type its callee returns for the argument types at the call: the callee is lowered and inferred
on its own (one level: the calls inside it are not followed), and the globals it read join the
caller's (``global_refs``: rebinding one rebuilds the caller, whose code relied on the type).

Kinds join upwards (``b < i < f < c``: ``s = 0`` then ``s = s + x[i]`` is a float scalar); a
scalar and an array, or arrays of different ndim, join to ``None``.  Transfer functions cover
arithmetic operators and NumPy ufuncs (NumPy's broadcasting and type promotion), subscripts with
integers, slices and ``None``, matrix products, whole-array reductions, ``.shape``/``.T`` and a few
constructors; anything else is ``None``.  The emitter uses types only to leave out work whose
result it can prove: ``unbroadcast`` between scalars, ``conj`` of reals, values saved only for
those.
"""
import math
import operator
import threading

import numpy as np

from .. import ir
from ..runtime import containers as _containers

_ORDER = "bifc"
_ARITH = {operator.add, operator.sub, operator.mul, operator.truediv, operator.pow,
          operator.floordiv, operator.mod, operator.iadd, operator.isub, operator.imul,
          operator.itruediv, operator.ipow}
_COMPARE = {operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne}
_UNARY = {operator.neg, operator.pos, abs}
_MATMUL = {operator.matmul, operator.imatmul, np.matmul, np.dot}
_REDUCE = {np.sum, np.mean, np.prod, np.max, np.min, np.amax, np.amin, np.std, np.var}
_SAME = {np.copy, np.ascontiguousarray, np.asarray, np.array, np.transpose, np.conj,
         np.conjugate, np.real, np.imag}
_LIKE = {np.zeros_like, np.ones_like, np.empty_like, np.full_like}
_METHOD_SAME = {"copy", "conj", "conjugate", "transpose", "astype"}
# functions of ``math`` that return a Python float whatever they are given (or raise)
_MATH_FLOAT = {getattr(math, n) for n in (
    "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "asinh",
    "acosh", "atanh", "exp", "expm1", "exp2", "log", "log1p", "log2", "log10", "sqrt", "cbrt",
    "pow", "hypot", "fabs", "erf", "erfc", "gamma", "lgamma", "degrees", "radians", "copysign",
    "fmod", "remainder", "ldexp") if hasattr(math, n)}
_SEQ = {_containers.seq, _containers.loop_seq}
_FILLED = {np.empty, np.zeros, np.ones}        # (of a shape alone: float64)
_METHOD_REDUCE = {"sum", "mean", "prod", "max", "min", "std", "var"}



def _kmax(*ks):
    return max(ks, key=_ORDER.index)


def join(a, b):
    if a is None or b is None:
        return None
    if a == b:
        return a
    if a[0] == b[0] == "T" and len(a[1]) == len(b[1]):
        return ("T", tuple(x if x == y else join(x, y) for x, y in zip(a[1], b[1])))
    if a[0] == b[0] == "s":
        return ("s", _kmax(a[1], b[1]))
    if a[0] == b[0] == "a" and a[2] == b[2]:
        return ("a", _kmax(a[1], b[1]), a[2])
    return None


def _const(v):
    if isinstance(v, bool):
        return ("s", "b")
    if isinstance(v, int):
        return ("s", "i")
    if isinstance(v, float):
        return ("s", "f")
    if isinstance(v, complex):
        return ("s", "c")
    return None


def _operand(o, types):
    if isinstance(o, str):
        return types.get(o)
    if isinstance(o, ir.Const):
        return _const(o.value)
    return None


_REP = {"b": np.bool_, "i": np.int64, "f": np.float64, "c": np.complex128}
_KINDS = {}


def _result_kind(f, kinds):
    """The kind NumPy gives ``f`` applied to operands of these kinds (asked of NumPy itself, on
    one-element arrays of a representative dtype per kind)."""
    key = (f, kinds)
    k = _KINDS.get(key, 0)
    if k == 0:
        try:
            with np.errstate(all="ignore"):
                r = f(*(np.ones(1, dtype=_REP[c]) for c in kinds))
            k = np.asarray(r).dtype.kind
            k = "i" if k == "u" else k
            k = k if k in _ORDER else None
        except Exception:
            k = None
        _KINDS[key] = k
    return k


def _broadcast(f, ts):
    if not ts or any(t is None or t[0] not in "sa" for t in ts):
        return None
    k = _result_kind(f, tuple(t[1] for t in ts))
    if k is None:
        return None
    nd = max((t[2] for t in ts if t[0] == "a"), default=None)
    return ("s", k) if nd is None else ("a", k, nd)


def _build_tuple():
    from ..runtime import build_tuple        # (a tuple display: lower/expressions.py)
    return build_tuple


def _numbers_kind(t):
    """The kind of the numbers a list display of numbers (``("L", k)``) or a tuple display of
    known numbers holds: ``np.array`` of it is a 1-d array of that kind; else None."""
    if t is not None and t[0] == "L":
        return t[1]
    if t is not None and t[0] == "T" and t[1] and \
            all(x is not None and x[0] == "s" for x in t[1]):
        return _kmax(*(x[1] for x in t[1]))
    return None


def _subscript(t, idx, types):
    if t is None:
        return None
    if t == ("t", "i"):
        return ("s", "i")
    if t[0] == "T":
        p = idx.parts[0] if isinstance(idx, ir.Index) and not idx.is_tuple and \
            len(idx.parts) == 1 else idx
        if isinstance(p, ir.Const) and type(p.value) is int and -len(t[1]) <= p.value < len(t[1]):
            return t[1][p.value]
        return None
    if t[0] != "a":
        return None
    parts = idx.parts if isinstance(idx, ir.Index) else [idx]
    nd = t[2]
    for p in parts:
        if isinstance(p, ir.Slice):
            continue
        if isinstance(p, ir.Const) and p.value is None:
            nd += 1
            continue
        pt = _operand(p, types)
        if pt is not None and pt[0] == "s" and pt[1] in "i":
            nd -= 1
            continue
        return None                         # an array index, an Ellipsis, a bool...: not known
    if nd < 0:
        return None
    return ("s", t[1]) if nd == 0 else ("a", t[1], nd)


def _call(call, types):
    fn = call.fn
    if getattr(call, "cls", None) == "derived" and call.info.get("callee") is not None:
        return _callee_return(call, types)
    args = [_operand(a, types) for a in call.args]
    if isinstance(fn, ir.Static):
        obj = fn.obj
        if obj in (operator.pow, operator.ipow) and len(args) == 2 and \
                all(a is not None and a[0] == "s" for a in args) and args[1][1] not in "bi":
            return None         # (a Python float to a float power may be complex: (-8.0) ** 0.5)
        if obj in _ARITH or obj in _COMPARE or obj in _UNARY:
            return _broadcast(obj, args) if not call.kwargs else None
        if obj is _build_tuple() and not call.kwargs and call.args:
            return ("T", tuple(args))
        if obj is _containers.build_list and not call.kwargs and call.args and \
                all(a is not None and a[0] == "s" for a in args):
            return ("L", _kmax(*(a[1] for a in args)))
        if obj in (np.array, np.asarray) and len(call.args) == 1 and not call.kwargs:
            k = _numbers_kind(args[0])
            if k is not None:
                return ("a", k, 1)
        if obj is operator.getitem and len(call.args) == 2:
            return _subscript(args[0], call.args[1], types)
        if obj in _MATMUL and len(args) == 2 and all(a is not None and a[0] == "a" for a in args):
            k = _kmax(args[0][1], args[1][1])
            nd = {(2, 2): 2, (2, 1): 1, (1, 2): 1, (1, 1): 0}.get((args[0][2], args[1][2]))
            if nd is None:
                return None
            return ("s", k) if nd == 0 else ("a", k, nd)
        if isinstance(obj, np.ufunc) and obj.nout == 1 and not call.kwargs and \
                len(args) == obj.nin:
            return _broadcast(obj, args)
        if obj in _REDUCE and len(call.args) == 1 and not call.kwargs and args[0] is not None:
            k = args[0][1]
            if obj in (np.mean, np.std, np.var):
                k = _kmax(k, "f")
            return ("s", k)
        if obj in _REDUCE and len(call.args) == 1 and args[0] is not None and \
                args[0][0] == "a" and call.kwargs:
            return _reduce_axis(obj, args[0], dict(call.kwargs), types)
        if obj in _SAME and len(call.args) == 1 and not call.kwargs:
            return args[0] if args[0] is not None and args[0][0] == "a" else None
        if obj in _LIKE and call.args and args[0] is not None and args[0][0] == "a" and \
                not call.kwargs and len(call.args) <= (2 if obj is np.full_like else 1):
            return args[0]
        if obj in _FILLED and len(call.args) == 1 and not call.kwargs:
            nd = _shape_ndim(args[0])     # (np.empty(n), np.zeros((n, m)): float64 arrays)
            return None if nd is None else ("a", "f", nd)
        if obj in _MATH_FLOAT:
            return ("s", "f")
        if obj in _SEQ and len(args) == 1 and args[0] is not None and args[0][0] == "a":
            return args[0]                  # (what a loop walks: an array as it is)
        lin = _linalg(obj, args, call)
        if lin is not False:
            return lin
        if obj is len:
            return ("s", "i")
        if obj is float:
            return ("s", "f")
        if obj is int:
            return ("s", "i")
        return None
    if isinstance(fn, ir.Attr) and len(args) == 1:
        t = args[0]
        if t is not None and t[0] == "a":
            if fn.name == "shape":
                return ("t", "i")
            if fn.name in ("T", "mT"):
                return t
            if fn.name in ("size", "ndim"):
                return ("s", "i")
            if fn.name in ("real", "imag"):
                return ("a", "f", t[2]) if t[1] == "c" else t
        return None
    if isinstance(fn, ir.Method) and args and args[0] is not None and args[0][0] == "a":
        t = args[0]
        if fn.name in _METHOD_SAME and len(call.args) == 1 and not call.kwargs:
            return t
        if fn.name in _METHOD_REDUCE and len(call.args) == 1 and not call.kwargs:
            return ("s", _kmax(t[1], "f") if fn.name in ("mean", "std", "var") else t[1])
        if fn.name in ("ravel", "flatten") and len(call.args) == 1:
            return ("a", t[1], 1)
    return None


# linear algebra: functions of one square (stack of) matrix that return a matrix of its shape, in
# floating point (an integer matrix gives float64), and functions whose result has the
# right-hand side's ndim; SciPy's by module and name (SciPy is not imported here)
_SQUARE = {np.linalg.cholesky, np.linalg.inv, np.tril, np.triu}
_SQUARE_SCIPY = {("scipy.linalg", n) for n in ("cholesky", "inv", "expm")}
_RHS_SCIPY = {("scipy.linalg", n) for n in ("solve_triangular", "solve")}


def _scipy_name(obj):
    mod = getattr(obj, "__module__", None) or ""
    if not mod.startswith("scipy.linalg"):
        return None
    return ("scipy.linalg", getattr(obj, "__name__", None))


def _fkind(*ts):
    return _kmax("f", *(t[1] for t in ts))


def _linalg(obj, args, call):
    """The type of a linear-algebra call (``np.linalg.cholesky``, ``solve``, ``np.diag``,
    ``np.eye``, ``scipy.linalg.solve_triangular``...), None where not known, or False where
    ``obj`` is none of them."""
    a0 = args[0] if args else None
    arr0 = a0 is not None and a0[0] == "a"
    if obj in _SQUARE:
        if not arr0 or a0[2] < 2 or (obj in (np.tril, np.triu) and len(args) > 2):
            return None
        return a0 if obj in (np.tril, np.triu) else ("a", _fkind(a0), a0[2])
    if obj in (np.eye, np.identity):
        ok = len(args) == 1 and not call.kwargs and a0 == ("s", "i")
        return ("a", "f", 2) if ok else None
    if obj is np.diag:
        if not arr0 or len(args) > 2 or call.kwargs or a0[2] not in (1, 2):
            return None
        return ("a", a0[1], 3 - a0[2])
    if obj is np.diagonal or obj is np.trace:
        if not arr0 or len(args) > 1 or call.kwargs or a0[2] < 2:
            return None
        nd = a0[2] - (1 if obj is np.diagonal else 2)
        return ("s", a0[1]) if nd == 0 else ("a", a0[1], nd)
    if obj is np.outer:
        ok = len(args) == 2 and not call.kwargs and all(a is not None and a[0] in "sa"
                                                         for a in args)
        return ("a", _kmax(*(a[1] for a in args)), 2) if ok else None
    if obj is np.linalg.det:
        return ("s", _fkind(a0)) if arr0 and a0[2] == 2 and len(args) == 1 else None
    if obj is np.linalg.solve:
        if len(args) != 2 or call.kwargs:
            return None
        A, b = args
        if not arr0 or b is None or b[0] != "a" or A[2] < 2:
            return None
        nd = A[2] - 1 if b[2] == 1 else max(A[2], b[2])
        return ("a", _fkind(A, b), nd)
    name = _scipy_name(obj)
    if name is None:
        return False
    if name in _SQUARE_SCIPY:
        return ("a", _fkind(a0), 2) if arr0 and a0[2] == 2 and len(args) == 1 else None
    if name in _RHS_SCIPY:
        if len(args) != 2 or not arr0 or a0[2] != 2 or args[1] is None or args[1][0] != "a":
            return None
        return ("a", _fkind(a0, args[1]), args[1][2])
    return None


def _shape_ndim(t):
    """The ndim of an array made with shape ``t``: an int scalar, or a tuple display of them."""
    if t == ("s", "i"):
        return 1
    if t is not None and t[0] == "T" and all(x == ("s", "i") for x in t[1]):
        return len(t[1])
    return None


def _reduce_axis(obj, t, kw, types):
    """``np.sum(a, axis=..., keepdims=...)`` of an array: with keepdims=True an array of a's
    ndim, else one axis (a constant int) fewer; None where it cannot be told."""
    if not set(kw) <= {"axis", "keepdims"}:
        return None
    k = _kmax(t[1], "f") if obj in (np.mean, np.std, np.var) else t[1]
    keep = kw.get("keepdims")
    if keep is not None and not (isinstance(keep, ir.Const) and type(keep.value) is bool):
        return None
    if keep is not None and keep.value:
        return ("a", k, t[2])
    axis = kw.get("axis")
    if axis is None or isinstance(axis, ir.Const) and axis.value is None:
        return ("s", k)
    if isinstance(axis, ir.Const) and type(axis.value) is int and -t[2] <= axis.value < t[2]:
        return ("a", k, t[2] - 1) if t[2] > 1 else ("s", k)
    return None


def infer(fn, param_types):
    """``{variable: type}`` for the IR function ``fn`` (classified), from its parameters' types."""
    stack = _LOCAL.__dict__.setdefault("stack", [])
    stack.append((fn, {}))
    try:
        return _infer(fn, param_types)
    finally:
        stack.pop()


def _infer(fn, param_types):
    types = {p: t for p, t in zip(fn.params, param_types) if t is not None}
    seen = set(types)
    for _ in range(6):
        before = dict(types)
        _block(fn.body, types, seen)
        if types == before:
            break
    return types


_LOCAL = threading.local()          # (the functions being inferred, innermost last: builds may
                                    # run in several threads)


def _callee_return(call, types):
    """The type the user function of a ``derived`` call returns, given its arguments' types; None
    where not known.  Its globals join the caller's (``fn.global_refs``); a callee in another
    module that reads globals is not followed (the caller's staleness check sees one module)."""
    stack = getattr(_LOCAL, "stack", None)
    if not stack:
        return None
    caller, memo = stack[-1]
    callee = call.info["callee"]
    from .inline import _qualifies
    if not _qualifies(callee, ()):      # (a plain module-level function: no closure, generator...)
        return None
    callargs = call.info.get("callargs") or ()
    args = tuple(_operand(a, types) for a in callargs)
    key = (callee, args)
    if key not in memo:
        memo[key] = _callee_type(callee, callargs, args)
    found = memo[key]
    if found is None:
        return None
    t, glb, refs = found
    own = getattr(caller, "global_refs", None)
    if refs:
        if own is None or own[0] is not glb:
            return None
        merged = dict(own[1])
        for name, value in refs:
            merged.setdefault(name, value)
        if len(merged) != len(own[1]):
            caller.global_refs = (glb, tuple(merged.items()))
    return t


def _callee_type(callee, callargs, args):
    """(return type, the callee's globals dict, the globals it read) of ``callee`` called with
    arguments of types ``args``, or None: its own IR, lowered apart and inferred (what cannot be
    lowered is not known)."""
    from ..frontend import statics
    from .inline import lower_callee, static_kinds
    body = lower_callee(callee)
    if body is None or len(body.params) != len(args):
        return None
    try:
        statics.bind(body, static_kinds(callargs))
        inner = _infer(body, args)
    except Exception:                   # (s2sad reports what it cannot read at the callee's build)
        return None
    t = None
    for i, s in enumerate(r for r in ir.walk(body.body) if isinstance(r, ir.Return)):
        rt = _operand(s.value, inner)
        if rt is None:
            return None
        t = rt if i == 0 else join(t, rt)
        if t is None:
            return None
    if t is None:
        return None
    glb, refs = getattr(body, "global_refs", (None, ()))
    return t, glb, tuple(refs)


def _set(types, seen, var, t):
    if var in seen:
        old = types.get(var)
        new = join(old, t) if old is not None else None
    else:
        seen.add(var)
        new = t
    if new is None:
        types.pop(var, None)
    else:
        types[var] = new


def _block(stmts, types, seen):
    for s in stmts:
        if isinstance(s, ir.Assign):
            v = s.value
            t = _call(v, types) if isinstance(v, ir.Call) else _operand(v, types)
            _set(types, seen, s.target, t)
        elif isinstance(s, ir.For):
            _set(types, seen, s.target, ("s", "i"))
        elif isinstance(s, ir.Mutate):
            if s.target:
                _set(types, seen, s.target, None)
        elif isinstance(s, ir.With):
            for _, v in s.items:
                if v:
                    _set(types, seen, v, None)
        elif isinstance(s, ir.Try):
            for _, v, _ in s.handlers:
                if v:
                    _set(types, seen, v, None)
        for b in ir.children(s):
            _block(b, types, seen)
