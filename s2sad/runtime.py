"""The few helpers that generated code calls: accumulation, zeros, un-broadcasting, indexing.

Generated sweeps use ``0.0`` as the zero adjoint of a value whose adjoint has not been produced yet
(Python's float zero adds to any float or complex scalar or array, NumPy or CuPy, without changing
its dtype); containers use tuples/lists/dicts of adjoints with ``None`` for leaves that carry none.
"""
import numbers

import numpy as np

_SCALARS = (float, int, complex, bool)


def is_zero(a):
    return a is None or (type(a) is float and a == 0.0)


def array_module(x):
    """``numpy`` or ``cupy``, by the type of ``x``; never imports CuPy itself."""
    mod = type(x).__module__
    if mod.startswith("cupy"):
        import cupy
        return cupy
    return np


def cj(x):
    """Complex conjugate, free for real values (adjoint templates of complex-capable rules)."""
    if type(x) is float or type(x) is int:
        return x
    if type(x) is complex:
        return x.conjugate()
    dt = getattr(x, "dtype", None)
    if dt is not None and dt.kind == "c":
        return x.conj()
    return x


def real_like(g, x):
    """Drop the imaginary part of ``g`` when ``x`` is real (gradients of real inputs are real)."""
    if type(x) is float:
        if type(g) is complex:
            return g.real
        if type(g) is float:
            return g
        return g
    dt = getattr(g, "dtype", None)
    if dt is not None and dt.kind == "c":
        xdt = getattr(x, "dtype", None)
        if (xdt is not None and xdt.kind != "c") or isinstance(x, (float, int)):
            return g.real
    elif type(g) is complex and not isinstance(x, complex) and getattr(x, "dtype", np.dtype(complex)).kind != "c":
        return g.real
    return g


def unbroadcast(g, x):
    """Sum ``g`` down to the shape of ``x`` (the adjoint of NumPy broadcasting), in x's dtype."""
    tx = type(x)
    if tx is float or tx is int:
        if type(g) is float:
            return g
        if type(g) is complex:
            return g.real
        s = g.sum() if hasattr(g, "sum") else g
        return real_like(s, x)
    shape = getattr(x, "shape", None)
    if shape is None:                       # other Python scalars (complex, bool)
        if hasattr(g, "shape") and g.shape != ():
            return g.sum()
        return g
    gshape = getattr(g, "shape", ())
    if gshape != shape:
        if not gshape and not hasattr(g, "shape"):
            # a Python scalar adjoint for an array input: broadcast it out
            xp = array_module(x)
            g = xp.full(shape, g, dtype=np.result_type(g, x.dtype) if x.dtype.kind == "c" else x.dtype)
        else:
            extra = len(gshape) - len(shape)
            if extra > 0:
                g = g.sum(axis=tuple(range(extra)))
            axes = tuple(i for i, n in enumerate(shape) if n == 1 and g.shape[i] != 1)
            if axes:
                g = g.sum(axis=axes, keepdims=True)
            if g.shape != shape:
                g = g.reshape(shape) if g.size == int(np.prod(shape)) else \
                    array_module(x).broadcast_to(g, shape)
    dt = getattr(x, "dtype", None)
    if dt is not None:
        gdt = getattr(g, "dtype", None)
        if gdt is not None and gdt != dt:
            if gdt.kind == "c" and dt.kind != "c":
                g = g.real
            if dt.kind in "fc":
                g = g.astype(dt, copy=False)
        elif gdt is None:
            xp = array_module(x)
            g = xp.asarray(g, dtype=dt)
    return g


def add(a, b):
    """Adjoint accumulation that understands zeros (None / 0.0) and containers."""
    if a is None or (type(a) is float and a == 0.0 and not _is_leaf_value(b)):
        return b
    if b is None:
        return a
    ta = type(a)
    if ta is tuple or ta is list:
        if type(b) is float and b == 0.0:
            return a
        return ta(add(x, y) for x, y in zip(a, b))
    if ta is dict:
        if type(b) is float and b == 0.0:
            return a
        out = dict(a)
        for k, v in b.items():
            out[k] = add(out.get(k), v)
        return out
    return a + b


def _is_leaf_value(b):
    return not isinstance(b, (tuple, list, dict)) and b is not None


def zeros_like(x):
    """A zero adjoint with the shape/structure of ``x``; None for values that carry no derivative."""
    if isinstance(x, float):
        return 0.0
    if isinstance(x, complex):
        return 0j
    if isinstance(x, (tuple, list)):
        return type(x)(zeros_like(v) for v in x)
    if isinstance(x, dict):
        return {k: zeros_like(v) for k, v in x.items()}
    dt = getattr(x, "dtype", None)
    if dt is not None and dt.kind in "fc":
        return array_module(x).zeros_like(x)
    return None


def materialize(g, x):
    """Turn a symbolic zero adjoint (0.0 / None) into real zeros shaped like ``x``."""
    if is_zero(g):
        return zeros_like(x)
    if type(g) in (tuple, list) and type(x) in (tuple, list):
        return type(x)(materialize(a, b) for a, b in zip(g, x))
    if type(g) is dict and type(x) is dict:
        return {k: materialize(g.get(k), v) for k, v in x.items()}
    if hasattr(x, "shape") and getattr(g, "shape", None) != x.shape:
        return unbroadcast(g, x)
    return g


# -- indexing ---------------------------------------------------------------------------------
def _basic_index(idx):
    """True when ``x[idx]`` cannot select an element twice (no integer/boolean arrays)."""
    if isinstance(idx, tuple):
        return all(_basic_index(i) for i in idx)
    return idx is None or idx is Ellipsis or isinstance(idx, (slice, numbers.Integral))


def getitem_adjoint(g, x, idx):
    """Adjoint of ``x[idx]``: zeros shaped like x with ``g`` placed (added for repeats) at idx."""
    if isinstance(x, (tuple, list)):
        out = [None] * len(x)
        if isinstance(idx, slice):
            for k, v in zip(range(*idx.indices(len(x))), g):
                out[k] = v
        else:
            out[idx] = g
        return type(x)(out) if isinstance(x, tuple) else out
    if isinstance(x, dict):
        return {idx: g}
    xp = array_module(x)
    out = xp.zeros(x.shape, dtype=_grad_dtype(x, g))
    return acc_getitem(out, x, idx, g, _owned=True)


def _grad_dtype(x, g):
    dt = x.dtype
    gdt = getattr(g, "dtype", None)
    if dt.kind != "c" and gdt is not None and gdt.kind == "c":
        return dt
    return dt


def acc_getitem(acc, x, idx, g, _owned=False):
    """Add ``g`` into ``acc[idx]`` in place, allocating ``acc`` if it is still a symbolic zero.

    Only used on adjoint buffers the derivative allocated itself (never a user's array)."""
    if not _owned and is_zero(acc):
        return getitem_adjoint(g, x, idx)
    if isinstance(x, (tuple, list, dict)):
        return add(acc, getitem_adjoint(g, x, idx))
    if acc.dtype.kind != "c":
        g = real_like(g, x)
    if _basic_index(idx):
        acc[idx] += g
    else:
        array_module(acc).add.at(acc, idx, g)
    return acc


def setitem_adjoint(g, idx):
    """Adjoint of ``x[idx] = v`` for the old ``x``: a copy of ``g`` with zeros at ``idx``."""
    if is_zero(g):
        return g
    if isinstance(g, list):
        out = list(g)
        out[idx] = None if not isinstance(idx, slice) else [None] * len(out[idx])
        return out
    if isinstance(g, dict):
        out = dict(g)
        out.pop(idx, None)
        return out
    out = g.copy()
    out[idx] = 0
    return out


def setitem_value_adjoint(g, idx, v):
    """Adjoint of ``x[idx] = v`` for ``v``: ``g[idx]`` summed down to v's shape, as a copy."""
    if is_zero(g):
        return 0.0
    if isinstance(g, (list, dict)):
        try:
            return g[idx]
        except (KeyError, IndexError):
            return None
    return unbroadcast(g[idx].copy() if hasattr(g[idx], "copy") else g[idx], v)


def snap(v):
    """A copy of an array that is later written in place (so the reverse sweep sees the old value)."""
    c = getattr(v, "copy", None)
    if c is not None and hasattr(v, "shape"):
        return c()
    if isinstance(v, list):
        return list(v)
    if isinstance(v, dict):
        return dict(v)
    return v


def concat_str(*parts):
    return "".join(parts)


def not_in(container, item):
    return item not in container


# -- displays (tuple/list/dict literals); the lowering turns `(a, b)` into build_tuple(a, b) -----
def build_tuple(*items):
    return items


def build_list(*items):
    return list(items)


def build_dict(keys, *values):
    return dict(zip(keys, values))


def parts(g, n):
    """Split the adjoint of an n-element tuple/list into n adjoints (a zero splits into zeros)."""
    if is_zero(g):
        return (0.0,) * n
    return tuple(0.0 if v is None else v for v in g)


def dict_parts(g, keys):
    if is_zero(g):
        return (0.0,) * len(keys)
    return tuple(0.0 if g.get(k) is None else g[k] for k in keys)


# -- small adjoint helpers used by the Python rule table ----------------------------------------
def safe_log(a):
    """log(a) where it is defined; 0 where a == 0 (the pow-exponent adjoint there is 0 anyway)."""
    if type(a) is float or type(a) is int:
        return __import__("math").log(a) if a > 0 else (0.0 if a == 0 else complex(__import__("cmath").log(a)))
    xp = array_module(a)
    dt = getattr(a, "dtype", None)
    if dt is not None and dt.kind == "c":
        return xp.log(xp.where(a == 0, 1, a))
    with np.errstate(divide="ignore", invalid="ignore"):
        return xp.where(a > 0, xp.log(xp.where(a > 0, a, 1)), 0.0)


def pow_base_adjoint(g, a, b):
    if type(b) is int or type(b) is float:
        if b == 0:
            return g * 0.0
        if b == 1:
            return g
        if b == 2:
            return g * cj(2 * a)
        return g * cj(b * a ** (b - 1))
    return g * cj(b * a ** (b - 1))


def pow_exponent_adjoint(g, ans, a):
    return g * cj(ans * safe_log(a))


def abs_adjoint(g, x):
    if type(x) is float or type(x) is int:
        return g * (1.0 if x > 0 else -1.0 if x < 0 else 0.0)
    if type(x) is complex:
        return g * (x / abs(x)) if x != 0 else 0j
    xp = array_module(x)
    if x.dtype.kind == "c":
        ax = xp.abs(x)
        return g * xp.where(ax == 0, 0, x / xp.where(ax == 0, 1, ax))
    return g * xp.sign(x)


def abs_tangent(t, x):
    if type(x) is float or type(x) is int:
        return t * (1.0 if x > 0 else -1.0 if x < 0 else 0.0)
    xp = array_module(x)
    if getattr(x, "dtype", np.dtype(float)).kind == "c":
        ax = xp.abs(x)
        return (xp.conj(x) * t).real / xp.where(ax == 0, 1, ax)
    return t * xp.sign(x)


def real_adjoint(g, x):
    """Adjoint of ``x.real``: a real g becomes the complex gradient g + 0j for complex x."""
    dt = getattr(x, "dtype", None)
    if dt is not None and dt.kind == "c":
        return g.astype(dt) if hasattr(g, "astype") else complex(g)
    return g


def imag_adjoint(g, x):
    dt = getattr(x, "dtype", None)
    if dt is not None and dt.kind == "c":
        return (1j * g).astype(dt) if hasattr(g, "astype") else 1j * g
    return 0.0 * g


def hypot_adjoint(g, ans, coords):
    return tuple(g * c / ans if ans != 0 else 0.0 for c in coords)


def digamma(x):
    from scipy.special import digamma as dg   # only reached for math.gamma / math.lgamma
    return float(dg(x))


def sum_adjoint(g, iterable):
    """Adjoint of builtin ``sum(iterable)``: every element receives g (summed down to its shape)."""
    if isinstance(iterable, (list, tuple)):
        return type(iterable)(unbroadcast(g, v) if hasattr(v, "shape") or isinstance(v, float) else g
                              for v in iterable)
    # an array summed over its first axis
    return array_module(iterable).broadcast_to(g, iterable.shape).astype(iterable.dtype)


# -- kinds of run-time values (the build is specialised on them) ----------------------------------
def kind_of(v):
    t = type(v)
    if t is float or t is complex:
        return "f"
    if t is int or t is bool or v is None or t is str:
        return "i"
    if t is tuple or t is list or t is dict:
        return "c"
    if hasattr(v, "dtype") and hasattr(v, "shape"):
        return "a"
    return "?"


def differentiable(v):
    """True for values that carry a derivative: real/complex floats and arrays, containers of them."""
    t = type(v)
    if t is float or t is complex:
        return True
    if t is tuple or t is list:
        return any(differentiable(x) for x in v)
    if t is dict:
        return any(differentiable(x) for x in v.values())
    dt = getattr(v, "dtype", None)
    if dt is not None and hasattr(v, "shape"):
        return dt.kind in "fc"
    return False


# -- derived callees (built lazily; recursion and mutual recursion work) --------------------------
class DerivedStub:
    """``f__fwd``/``f__bwd`` for a user function called from generated code.  The derivative is
    looked up (and built once) per value kinds of the arguments; the tape remembers which one."""

    __slots__ = ("callee", "mask", "_last")

    def __init__(self, callee, mask):
        self.callee, self.mask, self._last = callee, mask, None

    def fwd(self, *args):
        kinds = tuple(kind_of(a) for a in args)
        last = self._last
        if last is not None and last[0] == kinds:
            d = last[1]
        else:
            from .cache import reverse_derivative
            d = reverse_derivative(self.callee, self.mask, kinds)
            self._last = (kinds, d)
        value, tape = d.fwd(*args)
        return value, (d.bwd, tape)

    @staticmethod
    def bwd(tape, g):
        bwd, inner = tape
        return bwd(inner, g)


# -- dynamic call sites ---------------------------------------------------------------------------
_DYN = {}     # (callee type or function) -> how to differentiate it


def call(fn, *args, **kwargs):
    """Run a call whose callee is only known now; returns (value, record for :func:`pull`)."""
    self_ = getattr(fn, "__self__", None)
    if self_ is not None and not isinstance(self_, type(np)) and hasattr(fn, "__name__"):
        # bound method: an array method with a rule, or a method of a user class
        if hasattr(self_, "dtype") and hasattr(self_, "shape"):
            from .rules.registry import lookup_method
            rule = lookup_method(fn.__name__)
            if rule is not None:
                ans = fn(*args, **kwargs)
                if rule.zero:
                    return ans, None
                return ans, ("rule", rule, rule.bind((self_,) + args, kwargs), ans, True, len(args), list(kwargs))
            ans = fn(*args, **kwargs)
            return ans, None
        func = getattr(fn, "__func__", None)
        if func is not None and _is_python(func):
            value, rec = _call_derived(func, (self_,) + args, kwargs)
            return value, ("method", rec)
    from .rules.registry import lookup
    rule = lookup(fn) if not isinstance(fn, (list, dict)) else None
    if rule is not None:
        ans = fn(*args, **kwargs)
        if rule.zero:
            return ans, None
        return ans, ("rule", rule, rule.bind(args, kwargs), ans, False, len(args), list(kwargs))
    if _is_python(fn):
        return _call_derived(fn, args, kwargs)
    ans = fn(*args, **kwargs)
    if differentiable(ans) and any(differentiable(a) for a in args + tuple(kwargs.values())):
        from .errors import OpaqueCalleeError
        raise OpaqueCalleeError(_opaque_message(fn), fix=_rule_skeleton(fn))
    return ans, None


def _is_python(fn):
    import inspect
    return inspect.isfunction(fn) and not (fn.__module__ or "").startswith("s2sad.")


def _call_derived(fn, args, kwargs):
    import inspect
    from .cache import reverse_derivative
    if kwargs:
        ba = inspect.signature(fn).bind(*args, **kwargs)
        ba.apply_defaults()
        args = tuple(ba.arguments.values())
        names = list(ba.arguments)
    else:
        names = None
        if fn.__defaults__ and len(args) < fn.__code__.co_argcount:
            ba = inspect.signature(fn).bind(*args)
            ba.apply_defaults()
            args = tuple(ba.arguments.values())
    mask = tuple(differentiable(a) for a in args)
    kinds = tuple(kind_of(a) for a in args)
    d = reverse_derivative(fn, mask, kinds)
    value, tape = d.fwd(*args)
    return value, ("derived", d, tape, mask, names, kwargs and list(kwargs))


def pull(rec, g):
    """Adjoints of a dynamic call: (adjoint of the callee's self, tuple for args, dict for kwargs)."""
    if rec is None or is_zero(g):
        return _ZERO_PULL
    kind = rec[0]
    if kind == "rule":
        _, rule, bound, ans, is_method, nargs, kwnames = rec
        params = list(rule.signature.parameters)
        adj = {}
        if rule.joint:
            vals = rule.adjoint_function("*")(g, ans, **bound)
            adj = dict(zip(rule.joint[0], vals))
        else:
            for p in rule.differentiable:
                v = bound.get(p)
                if v is not None and differentiable(v):
                    adj[p] = rule.adjoint_function(p)(g, ans, **bound)
        pos = [adj.get(p, 0.0) for p in params[:nargs + (1 if is_method else 0)]]
        kw = {k: adj.get(k, 0.0) for k in kwnames}
        if is_method:
            return pos[0], tuple(pos[1:]), kw
        return 0.0, tuple(pos), kw
    if kind == "method":
        c, a, k = pull(rec[1], g)
        return a[0], a[1:], k
    _, d, tape, mask, names, kwnames = rec
    grads = iter(d.bwd(tape, g))
    full = [next(grads) if m else 0.0 for m in mask]
    if names and kwnames:
        kw = {k: full[names.index(k)] for k in kwnames}
        pos = [v for n, v in zip(names, full) if n not in kwnames]
        return 0.0, tuple(pos), kw
    return 0.0, tuple(full), {}


class _ZeroPull(tuple):
    """(0.0, zeros..., {}) for calls whose output adjoint is zero: indexable at any position."""

    def __getitem__(self, i):
        if i == 0:
            return 0.0
        if i == 1:
            return _Zeros()
        return _ZeroDict()


class _Zeros:
    def __getitem__(self, i):
        return 0.0


class _ZeroDict(dict):
    def __missing__(self, k):
        return 0.0


_ZERO_PULL = _ZeroPull()


def attr(obj, name):
    """Attribute read on a value of unknown type: arrays use the attribute rules."""
    value = getattr(obj, name)
    if hasattr(obj, "dtype") and hasattr(obj, "shape"):
        from .rules.registry import lookup_attr
        rule = lookup_attr(name)
        if rule is not None and not rule.zero:
            return value, ("rule", rule, {"self": obj}, value, True, 0, [])
    return value, None


# -- opaque callees -------------------------------------------------------------------------------
def _opaque_message(fn, origin=None):
    name = getattr(fn, "__qualname__", None) or repr(fn)
    mod = getattr(fn, "__module__", None)
    full = f"{mod}.{name}" if mod else name
    return (f"{full} has no Python source and no derivative rule, and it returned a value that "
            f"carries a derivative")


def _rule_skeleton(fn):
    name = getattr(fn, "__qualname__", None) or "fn"
    mod = getattr(fn, "__module__", None) or ""
    ref = f"{mod.split('.')[0]}.{name}" if mod and mod != "builtins" else name
    return ("declare its derivative, e.g.\n\n"
            "    import s2sad\n"
            f"    s2sad.defrule({ref}, \"x, /\",\n"
            "                  vjp={\"x\": \"g * <derivative of the output w.r.t. x>\"})\n\n"
            "  (g is the output's adjoint, ans the output), or mark it non-differentiable with "
            f"s2sad.defzero({ref})")


def check_opaque(value, site):
    """Raise if an opaque callee (no source, no rule) produced a differentiable value."""
    if differentiable(value):
        from .errors import OpaqueCalleeError
        call = site.call
        fn = getattr(call.fn, "obj", None)
        desc = _opaque_message(fn) if fn is not None else \
            f"`{site.origin.text}` calls something s2sad has no rule for, and it returned a value " \
            f"that carries a derivative"
        raise OpaqueCalleeError(desc, origin=site.origin, fix=_rule_skeleton(fn) if fn is not None
                                else "declare a rule with s2sad.defrule")
