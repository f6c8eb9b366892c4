"""Helpers generated forward code calls as ``_fw.*`` (this module is ``_fw``): rules at run time
(:func:`tangent_function`, the tangent-from-adjoint fallback :func:`jvp_by_vjp`), dynamic call
sites (:func:`jvp_call`, :func:`jvp_method`, :func:`jvp_attr`) and the lazy derived-callee stub
(:class:`ForwardStub`); the tangents of :mod:`.tangents` are re-exported here.  Derivatives are
built through :mod:`.hooks`.
"""
import functools
from collections import deque
import inspect
import sys
import types

import numpy as np

from ..errors import ArgumentWriteError, OpaqueCalleeError, RuleError, UnsupportedSyntaxError
from .. import runtime
from . import hooks
from .arrays import _is_array
from .tangents import (_elems, copy_tangent, get_tangent, items_tangent, materialize,
                      values_tangent, zeros_like)
from .containers import DEQUE_IN_PLACE_METHODS, refuse_maxlen
from .dispatch import _check_stored, data_cell_values
from .tangents import *  # noqa: F401,F403 (_fw.zeros_like, _fw.bcast, _fw.sum_tangent...)


# -- rules at run time ------------------------------------------------------------------------------
_TANGENT_FNS = {}


def tangent_function(rule, param):
    """A rule's tangent template compiled into ``f(t, ans, **params)``."""
    key = (id(rule), param)
    fn = _TANGENT_FNS.get(key)
    if fn is None:
        NAMESPACE = hooks.rule_namespace
        params = ", ".join(["t", "ans"] + [p for p in rule.signature.parameters if p not in ("t", "ans")])
        src = f"def _tangent({params}):\n    return {rule.jvp[param].strip()}\n"
        glb = dict(NAMESPACE)
        glb["_rt"] = runtime
        glb["_fw"] = sys.modules[__name__]
        exec(compile(src, f"<tangent {rule.name}:{param}>", "exec"), glb)
        fn = _TANGENT_FNS[key] = (glb["_tangent"], rule)
    return fn[0]


def _leaves(x):
    """(getter-path, array) pairs for the floating leaves of a value (arrays, floats, tuples)."""
    if isinstance(x, (tuple, list)):
        out = []
        for i, v in enumerate(x):
            out += [((i,) + p, a) for p, a in _leaves(v)]
        return out
    if isinstance(x, (float, complex)) or (hasattr(x, "dtype") and getattr(x.dtype, "kind", "") in "fc"):
        return [((), x)]
    return []


def _with_leaf(x, path, value):
    if not path:
        return value
    items = list(x)
    items[path[0]] = _with_leaf(items[path[0]], path[1:], value)
    return type(x)(*items) if hasattr(x, "_fields") else type(x)(items)


def _inner(a, b):
    """Real inner product of two tangents with the same structure (None/0.0 are zeros)."""
    if a is None or b is None or (type(a) is float and a == 0.0) or (type(b) is float and b == 0.0):
        return 0.0
    if isinstance(a, (tuple, list)):
        return sum(_inner(x, y) for x, y in zip(a, b))
    return np.sum(np.conj(a) * b)


def _fallback_output(x):
    """An output :func:`jvp_by_vjp` can build the tangent of: numbers, arrays, tuples/lists of them."""
    if isinstance(x, (tuple, list)):
        return all(_fallback_output(v) for v in x)
    return isinstance(x, (float, int, complex, bool)) or x is None or \
        (_is_array(x))


def jvp_by_vjp(rule, which, t, ans, args):
    """Tangent of a primitive that has only an adjoint rule: ``(J t)_k = <J^T e_k, t>`` for every
    element ``k`` of the output (one adjoint evaluation per output element)."""
    bound = dict(zip(rule.signature.parameters, args))
    if rule.joint:
        names = list(rule.joint[0])
        adj = rule.adjoint_function("*")

        def pull(g):
            return adj(g, ans, **bound)[names.index(which)]
    else:
        adj = rule.adjoint_function(which)

        def pull(g):
            return adj(g, ans, **bound)
    if not _fallback_output(ans):
        raise RuleError(f"forward mode: the rule for {rule.name} has no tangent template (jvp=), and "
                        f"its output (a {type(ans).__name__}) is not an array, a number or a "
                        f"tuple/list of them, so the tangent cannot be recovered from the adjoint",
                        fix=f"add jvp={{{which!r}: ...}} to the rule for {rule.name}")
    zero = zeros_like(ans)
    out = zeros_like(ans)

    def component(path, basis_of):
        """The tangent's component along one output direction: Re<pull(e), t> for e = 1, and for
        a complex output also along e = i (the adjoint convention makes these the real and
        imaginary parts)."""
        re = np.real(_inner(pull(_with_leaf(zero, path, basis_of(1))), t))
        if not complex_out:
            return re
        return re + 1j * np.real(_inner(pull(_with_leaf(zero, path, basis_of(1j))), t))
    for path, leaf in _leaves(ans):
        complex_out = isinstance(leaf, complex) or np.iscomplexobj(leaf)
        m = runtime.array_module(leaf)      # the basis and the tangent on the output's device
        if isinstance(leaf, (float, complex)) or np.ndim(leaf) == 0:
            scalar = isinstance(leaf, (float, complex))
            val = component(path, (lambda u: type(leaf)(u) if complex_out else type(leaf)(1))
                            if scalar else (lambda u: m.ones_like(leaf) * u))
            out = _with_leaf(out, path, type(leaf)(val) if scalar
                             else m.asarray(val, dtype=leaf.dtype))
            continue
        res = m.zeros(leaf.shape, dtype=leaf.dtype)
        flat = res.reshape(-1)                  # (a view: res is contiguous)
        for k in range(leaf.size):
            def basis_of(u, k=k):
                b = m.zeros(leaf.shape, dtype=leaf.dtype)
                b.reshape(-1)[k] = u
                return b
            flat[k] = component(path, basis_of)
        out = _with_leaf(out, path, res)
    return out


def _rule_tangent(rule, bound, ans, tangents):
    """Sum over active parameters of the rule's tangent templates; ``tangents``: param -> t."""
    out = None
    for p, t in tangents.items():
        if p in rule.jvp:
            term = tangent_function(rule, p)(t, ans, **bound)
        else:
            term = jvp_by_vjp(rule, p, t, ans, tuple(bound.values()))
        out = term if out is None else runtime.add(out, term)
    if out is not None and rule.user and not rule.broadcast:
        # (as generated code checks a user's rule: codegen/forward.py)
        out = runtime.rule_tangent(out, ans, rule.name, runtime.generated_origin)
    return zeros_like(ans) if out is None else out


def _active_tangent(t, v):
    if isinstance(t, dict) and _is_object(v):      # an object's attribute tangents
        return True
    return t is not None and runtime.differentiable(v)


def _is_object(x):
    """An instance of a user class (its tangent: a dict of attribute tangents)."""
    import types
    return hasattr(x, "__dict__") and not isinstance(
        x, (type, types.ModuleType, types.FunctionType, types.MethodType, functools.partial))


def set_attr(tobj, name, t):
    """``obj.name = v`` on an object that carries a tangent: record ``v``'s tangent."""
    if not isinstance(tobj, dict):
        tobj = {}
    tobj[name] = t
    return tobj


# -- derived callees --------------------------------------------------------------------------------
class ForwardStub:
    """``f__jvp`` for a user function called from generated forward code: the forward derivative
    is looked up (and built once, lazily) per value kinds of the arguments."""

    __slots__ = ("callee", "mask", "nparams", "_last")

    def __init__(self, callee, mask):
        self.callee, self.mask, self._last = callee, tuple(mask), None
        self.nparams = len(mask)

    def __call__(self, *args):
        primals = args[:self.nparams]
        kinds = tuple(runtime.kind_of(a) for a in primals)
        last = self._last
        if last is not None and last[0] == kinds:
            f = last[1]
        else:
            forward_derivative = hooks.forward_derivative
            f = forward_derivative(self.callee, self.mask, kinds).jvp
            self._last = (kinds, f)
        return f(*args)

    def __repr__(self):
        return f"<forward derivative of {self.callee.__qualname__}>"


def _is_python(fn):
    return inspect.isfunction(fn) and not (fn.__module__ or "").startswith("s2sad.")


def _jvp_python(fn, args, targs, kwargs=None, tkwargs=None, top=False, ftan=None, init=False,
                mut=False, compiled=None):
    """Run the forward derivative of the Python function ``fn`` on these arguments and tangents
    (None: no tangent).  ``top``: the tangents are the user's, copy those the function writes.
    ``ftan``: the tangent of a closure (``{captured name: tangent}``, ``"param="`` for the
    defaults it was made with).  ``init``: ``fn`` is an ``__init__`` run as a constructor on
    ``args[0]``, whose tangent (a dict of attribute tangents) it fills in.  ``compiled``: the
    hook of ``jvp(..., jit=True)`` (see below)."""
    forward_derivative = hooks.forward_derivative
    kwargs = kwargs or {}
    tkwargs = tkwargs or {}
    call_args, call_kwargs = tuple(args), dict(kwargs)
    ct = ftan if isinstance(ftan, dict) else {}
    code = fn.__code__
    if kwargs or code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS) or fn.__kwdefaults__ \
            or (fn.__defaults__ and len(args) < code.co_argcount):
        sig = inspect.signature(fn, follow_wrapped=False)
        ba = sig.bind(*args, **kwargs)
        tb = sig.bind(*(tuple(targs) + (None,) * (len(args) - len(targs))),
                      **{k: tkwargs.get(k) for k in kwargs})
        given = set(ba.arguments)
        ba.apply_defaults()
        args = tuple(ba.arguments.values())
        # a default value's tangent: the one it had when the closure was made
        targs = tuple(tb.arguments.get(k) if k in given else ct.get(f"{k}=")
                      for k in ba.arguments)
    else:
        args = tuple(args)
        targs = tuple(targs) + (None,) * (len(args) - len(targs))
    cells = runtime._data_cells(fn)
    if cells:          # data held in closure cells: leading parameters (tangents from ftan)
        args = tuple(data_cell_values(fn, cells)) + args
        targs = tuple(ct.get(n) for n in cells) + targs
    mask = [_active_tangent(t, a) for t, a in zip(targs, args)]
    if init or mut:
        mask[len(cells)] = True          # the object's tangent is filled in / updated
    mask = tuple(mask)
    if not any(mask):
        value = fn(*call_args, **call_kwargs)
        return value, zeros_like(value)
    kinds = tuple(runtime.kind_of(a) for a in args)
    if compiled is not None and not (init or mut):
        # jvp(..., jit=True): compiled(fn, mask, kinds, args, tangents) runs the numba-compiled
        # derivative, or gives None where it falls back (it has warned): then Python runs
        out = compiled(fn, mask, kinds, args, targs)
        if out is not None:
            return out
    dv = forward_derivative(fn, mask, kinds, init=init, mut=mut)
    written = set(getattr(dv, "written_params", ())) if top else set()
    tans = [materialize(runtime.snap(t) if p in written else t, a)
            for p, t, a, m in zip(dv.ir.params, targs, args, mask) if m]
    try:
        return dv.jvp(*args, *tans)
    except BaseException as e:
        if mut:
            runtime.mark_partial(e, fn)     # (the object's tangent went with the raise)
        raise


def is_stub_sweep(obj):
    """True for ``f__fwd``/``f__bwd`` of a derived callee inside generated reverse code."""
    return isinstance(getattr(obj, "__self__", None), runtime.DerivedStub) or \
        obj is runtime.DerivedStub.bwd


def _jvp_stub(fn, args, targs):
    """Forward mode through a derived callee's sweeps inside generated reverse code: the stub
    picks the callee's generated ``__fwd``/``__bwd``, which are differentiated as Python code."""
    if fn is runtime.DerivedStub.bwd:
        (bwd, inner), g = args
        ttape, tg = targs
        tinner = ttape[1] if isinstance(ttape, tuple) else None
        return _jvp_python(bwd, (inner, g), (tinner, tg))
    stub = fn.__self__
    reverse_derivative = hooks.reverse_derivative
    cells = runtime._data_cells(stub.callee)
    if cells:
        args = tuple(data_cell_values(stub.callee, cells)) + tuple(args)
        targs = (None,) * len(cells) + tuple(targs)
    mask = (False,) * len(cells) + tuple(stub.mask)
    d = reverse_derivative(stub.callee, mask, tuple(runtime.kind_of(a) for a in args))
    (value, tape), (tv, ttape) = _jvp_python(d.fwd, tuple(args), tuple(targs))
    return (value, (d.bwd, tape)), (tv, (None, ttape))


def jvp_call(fn, args, targs, kwargs=None, tkwargs=None, ftan=None, _bound=False, _updates=None):
    """A call whose callee is only known at run time: returns (value, tangent).

    ``targs``/``tkwargs`` hold the arguments' tangents, None for arguments that carry none;
    ``ftan`` the callee's own tangent (a closure over data that carries one)."""
    kwargs = kwargs or {}
    tkwargs = tkwargs or {}
    runtime.refuse_vectorize(fn, args, kwargs)
    if not kwargs and type(fn) is types.BuiltinFunctionType and fn in runtime._DUNDERS:
        done = _jvp_operator(fn, args, targs)
        if done is not None:
            return done
    self_ = getattr(fn, "__self__", None)
    if isinstance(self_, runtime.DerivedStub) or fn is runtime.DerivedStub.bwd:
        return _jvp_stub(fn, args, targs)
    if getattr(fn, "__s2sad_jvp__", False) and not kwargs and len(args) == 3:
        jfn, full, (ncells, cellnames, _, mask) = runtime.jvp_function(*args)
        tf, tp, tt = (tuple(targs) + (None,) * 3)[:3]
        ct = tf if isinstance(tf, dict) else {}
        tp = tuple(tp) if isinstance(tp, (tuple, list)) else (None,) * len(args[1])
        tt = tuple(tt) if isinstance(tt, (tuple, list)) else (None,) * len(args[2])
        tfull = [ct.get(n) for n in cellnames] + list(tp) + \
            [t for t, m in zip(tt, mask[ncells:]) if m]
        return _jvp_python(jfn, full, tuple(tfull))
    parts_ = runtime.transform_parts(fn, args)
    if parts_ is not None:                   # s2sad.grad(f) / value_and_grad(f) inside
        done = [jvp_call(p, args, targs, kwargs, tkwargs, ftan=ftan) for p in parts_]
        if len(done) == 1:
            return done[0]
        return tuple(v for v, _ in done), tuple(t for _, t in done)
    if fn is runtime.init_into:              # super().__init__(...) inside a constructor
        cls, obj = args[0], args[1]
        base = super(cls, obj).__init__
        func = getattr(base, "__func__", None)
        tobj = targs[1] if len(targs) > 1 and isinstance(targs[1], dict) else {}
        if func is not None and _is_python(func):
            _, tobj = _jvp_python(func, (obj,) + tuple(args[2:]), (tobj,) + tuple(targs[2:]),
                                  kwargs, tkwargs, init=True)
            return obj, tobj
        base(*args[2:], **kwargs)
        return obj, tobj
    if isinstance(fn, type):
        return _jvp_construct(fn, args, targs, kwargs, tkwargs)
    if self_ is not None and not inspect.ismodule(self_) and hasattr(fn, "__name__") and not _bound:
        return jvp_method(self_, ftan if isinstance(ftan, dict) else None, fn.__name__, args,
                          targs, kwargs, tkwargs)
    if _is_python(fn) and hooks.lookup(fn) is None:     # (a rule wins over the source, as in
        return _jvp_python(fn, args, targs, kwargs, tkwargs, ftan=ftan)   # reverse mode)
    compiled = runtime.numba_function(fn) or runtime.cached_function(fn)
    if compiled is not None and _is_python(compiled) and hooks.lookup(fn) is None:
        return _jvp_python(compiled, args, targs, kwargs, tkwargs)     # @numba.njit, lru_cache
    if isinstance(fn, functools.partial):
        pa, pk = ftan if isinstance(ftan, tuple) and len(ftan) == 2 else (None, None)
        pa = tuple(pa) if pa is not None else (None,) * len(fn.args)
        return jvp_call(fn.func, fn.args + tuple(args), pa + tuple(targs),
                        {**fn.keywords, **(kwargs or {})}, {**(pk or {}), **(tkwargs or {})})
    lookup = hooks.lookup
    rule = lookup(fn) if not isinstance(fn, (list, dict)) else None
    call = getattr(type(fn), "__call__", None)
    if rule is None and inspect.isfunction(call) and _is_python(call):  # an object of a user class
        # (its __call__ may update the object, as a method may: the object's tangent follows;
        # a rule for the object itself, e.g. a scipy.stats distribution, wins over its source)
        trecv = ftan if isinstance(ftan, dict) else None
        value, tv, tself = jvp_method_update(fn, trecv, "__call__", args, targs, kwargs, tkwargs)
        if isinstance(trecv, dict) and isinstance(tself, dict) and tself is not trecv:
            trecv.clear()
            trecv.update(tself)
        if _updates is not None:                # (jvp_call_update: the object's tangent after)
            _updates.append(tself)
        return value, tv
    kept = runtime.opaque_snapshot(tuple(args) + tuple(kwargs.values()) + (
        (fn.__self__,) if _bound else ())) if rule is None else ()
    value = fn(*args, **kwargs)
    if kept:
        runtime.refuse_if_changed(fn, kept)
    if rule is not None and not rule.zero:
        bound = rule.bind(args, kwargs)
        return value, _rule_tangent(rule, bound, value, _param_tangents(rule, args, targs, kwargs, tkwargs))
    if rule is None and runtime.differentiable(value) and any(
            _active_tangent(t, a) for t, a in list(zip(targs, args)) +
            [(tkwargs.get(k), v) for k, v in kwargs.items()]):
        raise OpaqueCalleeError(runtime._opaque_message(fn), fix=runtime._rule_skeleton(fn))
    return value, zeros_like(value)


def jvp_call_update(fn, args, targs, kwargs=None, tkwargs=None, ftan=None):
    """:func:`jvp_call` of a value that may be an object whose Python ``__call__`` updates it
    (``model(x)``): (value, tangent, the object's tangent after the call)."""
    box = []
    value, tv = jvp_call(fn, args, targs, kwargs, tkwargs, ftan=ftan, _updates=box)
    return value, tv, (box[0] if box else ftan)


def _jvp_operator(fn, args, targs):
    """``a + b``, ``-a``, ``a[i]`` on objects of user classes: their Python ``__add__`` /
    ``__radd__``... in forward mode; None when no such method applies."""
    unary = len(runtime._DUNDERS[fn]) == 1
    targs = tuple(targs) + (None,) * (len(args) - len(targs))

    def obj_t(t):
        return t if isinstance(t, dict) else None
    for m, self_, rest, reflected in runtime.operator_methods(fn, args):
        tans = (obj_t(targs[1]), targs[0]) if reflected else (obj_t(targs[0]),) + tuple(targs[1:])
        value, t = _jvp_python(m, (self_,) + tuple(rest), tans)
        if unary or value is not NotImplemented:
            return value, t
    return None


def _jvp_construct(cls, args, targs, kwargs, tkwargs):
    """``cls(*args, **kwargs)``: a user class's ``__init__`` is differentiated as a constructor
    (the object's tangent is a dict of attribute tangents); a plain dataclass's fields take the
    arguments' tangents."""
    import dataclasses
    lookup = hooks.lookup
    try:
        rule = lookup(cls)
    except TypeError:
        rule = None
    if rule is None and dataclasses.is_dataclass(cls) and not hasattr(cls, "__post_init__"):
        obj = cls(*args, **kwargs)
        names = [f.name for f in dataclasses.fields(cls) if f.init]
        tobj = {}
        for n, t in list(zip(names, targs)) + [(k, tkwargs.get(k)) for k in kwargs]:
            if t is not None:
                tobj[n] = t
        return obj, tobj
    if rule is None and runtime.plain_namedtuple(cls):
        value = cls(*args, **kwargs)            # the fields' tangents, in a tuple of its class
        given = dict(zip(cls._fields, targs))
        given.update((k, tkwargs.get(k)) for k in kwargs)
        return value, cls(*(zeros_like(v) if given.get(n) is None else given[n]
                            for n, v in zip(cls._fields, value)))
    init = cls.__init__
    if rule is None and _is_python(init) and runtime.constructible(cls):
        obj = cls.__new__(cls)
        _, tobj = _jvp_python(init, (obj,) + tuple(args), ({},) + tuple(targs), kwargs, tkwargs,
                              init=True)
        return obj, tobj if isinstance(tobj, dict) else {}
    value = cls(*args, **kwargs)
    if rule is not None and not rule.zero:
        bound = rule.bind(args, kwargs)
        return value, _rule_tangent(rule, bound, value, _param_tangents(rule, args, targs, kwargs,
                                                                        tkwargs))
    if rule is None and runtime.differentiable(value) and any(
            _active_tangent(t, a) for t, a in list(zip(targs, args)) +
            [(tkwargs.get(k), v) for k, v in kwargs.items()]):
        raise OpaqueCalleeError(runtime._opaque_message(cls), fix=runtime._rule_skeleton(cls))
    return value, {} if _is_object(value) else zeros_like(value)


def _param_tangents(rule, args, targs, kwargs, tkwargs, self_=None, tself=None):
    """Rule parameter -> tangent, for the active arguments of a call bound to the rule."""
    allargs = ((self_,) if self_ is not None else ()) + tuple(args)
    alltans = ((tself,) if self_ is not None else ()) + tuple(targs)
    ba = rule.bind_signature(*[("__pos__", i) for i in range(len(allargs))],
                             **{k: ("__kw__", k) for k in kwargs})
    out = {}
    for p, marker in ba.arguments.items():
        if p not in rule.differentiable:
            continue
        if isinstance(marker, dict):                 # a **kwargs parameter: {name: tangent}
            tans = {k: tkwargs.get(k) if _active_tangent(tkwargs.get(k), kwargs[k]) else None
                    for k in marker}
            if any(v is not None for v in tans.values()):
                out[p] = {k: zeros_like(kwargs[k]) if v is None else v for k, v in tans.items()}
            continue
        markers = marker if isinstance(marker, tuple) and marker and isinstance(marker[0], tuple) \
            else (marker,)
        tans, any_active = [], False
        for m in markers:
            if m[0] == "__pos__":
                tv, val = alltans[m[1]], allargs[m[1]]
            else:
                tv, val = tkwargs.get(m[1]), kwargs[m[1]]
            if _active_tangent(tv, val):
                any_active = True
                tans.append(tv)
            else:
                tans.append(zeros_like(val))
        if any_active:
            out[p] = tuple(tans) if markers is marker else tans[0]
    return out


def jvp_apply(fn, args, targs, kwargs, tkwargs, ftan=None):
    """``fn(*args, **kwargs)`` (a call with starred arguments) with the tangents of the argument
    tuple and keyword dict."""
    args = tuple(args)
    if targs is None or (type(targs) is float and targs == 0.0):
        targs = (None,) * len(args)
    targs = tuple(targs)
    kwargs = dict(kwargs or {})
    tkwargs = dict(tkwargs) if isinstance(tkwargs, dict) else {}
    return jvp_call(fn, args, targs, kwargs, tkwargs, ftan)


def _no_tangent(t):
    return t is None or (type(t) is float and t == 0.0)


def _deque_method(recv, trecv, name, method, args, targs):
    """The methods of a deque that lists lack (and ``extend``, which slices a list): the same
    method on its tangent, a deque of tangents.  None for the others, which lists share."""
    if name in ("append", "appendleft"):
        value = method(*args)
        getattr(trecv, name)(materialize(targs[0], args[0]))
        return value, None
    if name in ("pop", "popleft"):
        value = method(*args)
        return value, materialize(getattr(trecv, name)(), value)
    if name in ("extend", "extendleft"):
        n0 = len(recv)
        ta = targs[0] if targs else None
        items = None if _no_tangent(ta) else list(_elems(ta, args[0]))
        value = method(*args)
        k = len(recv) - n0
        added = list(recv)[n0:] if name == "extend" else list(recv)[:k][::-1]
        getattr(trecv, name)([zeros_like(v) for v in added] if items is None else
                             [materialize(t, v) for t, v in zip(items, added)])
        return value, None
    if name == "rotate":
        value = method(*args)
        trecv.rotate(*args)
        return value, None
    return None


def _container_method(recv, trecv, name, args, targs, kwargs, tkwargs):
    """A method of a list or dict (in place or read-only), its tangent container mirrored."""
    method = getattr(recv, name)
    targs = tuple(targs) + (None,) * (len(args) - len(targs))
    active_args = any(not _no_tangent(t) for t in targs) or \
        any(not _no_tangent(tkwargs.get(k)) for k in kwargs)
    if type(recv) is deque:
        if name in DEQUE_IN_PLACE_METHODS and (active_args or not _no_tangent(trecv)):
            refuse_maxlen(recv)
        if not _no_tangent(trecv):
            done = _deque_method(recv, trecv, name, method, args, targs)
            if done is not None:
                return done
    if _no_tangent(trecv):
        if name in DEQUE_IN_PLACE_METHODS and active_args and runtime.differentiable(list(args) + list(kwargs.values())):
            raise UnsupportedSyntaxError(
                f"forward mode: `.{name}(...)` puts values that carry a derivative into a "
                f"{type(recv).__name__} that carries none here",
                fix="build the container from those values (a display or comprehension) instead")
        value = method(*args, **kwargs)
        return value, zeros_like(value)
    if name == "extend":
        n0 = len(recv)
        ta = targs[0] if targs else None
        tl = None if _no_tangent(ta) else list(_elems(ta, args[0]))
        value = method(*args, **kwargs)
        added = recv[n0:]
        trecv.extend([zeros_like(v) for v in added] if tl is None else
                     [materialize(t, v) for t, v in zip(tl, added)])
        return value, None
    if name in ("append", "insert"):
        value = method(*args, **kwargs)
        if args:
            last = materialize(targs[-1], args[-1])
            getattr(trecv, name)(*(list(args[:-1]) + [last]))
        return value, None
    if name == "pop":
        if isinstance(recv, dict):
            key = args[0]
            had = key in recv
            value = method(*args, **kwargs)
            if had:
                return value, materialize(trecv.pop(key, None), value)
            return value, materialize(targs[1] if len(targs) > 1 else None, value)
        value = method(*args, **kwargs)
        return value, materialize(trecv.pop(*args), value)
    if name == "remove":
        i = recv.index(args[0])
        value = method(*args)
        del trecv[i]
        return value, None
    if name in ("reverse", "clear"):
        value = method(*args, **kwargs)
        getattr(trecv, name)()
        return value, None
    if name == "sort":
        key, rev = kwargs.get("key"), kwargs.get("reverse", False)
        keyf = key if key is not None else (lambda v: v)
        order = sorted(range(len(recv)), key=lambda k: keyf(recv[k]), reverse=rev)
        tans = _elems(trecv, recv)
        value = method(*args, **kwargs)
        trecv[:] = [tans[k] for k in order]
        return value, None
    if name == "update":
        new = {}
        if args:
            other = args[0]
            pairs = other.items() if isinstance(other, dict) else list(other)
            tother = targs[0]
            if isinstance(other, dict):
                tpairs = [(k, (tother or {}).get(k) if isinstance(tother, dict) else None)
                          for k in other]
            else:
                tl = _elems(tother, pairs)
                tpairs = [(k, None if _no_tangent(tp) else tp[1]) for (k, _), tp in zip(pairs, tl)]
            vals = dict(pairs)
            for k, tv in tpairs:
                new[k] = materialize(tv, vals[k])
        for k, v in kwargs.items():
            new[k] = materialize(tkwargs.get(k), v)
        value = method(*args, **kwargs)
        trecv.update(new)
        return value, None
    if name == "setdefault":
        key = args[0]
        if key not in recv:
            trecv[key] = materialize(targs[1] if len(targs) > 1 else None,
                                     args[1] if len(args) > 1 else None)
        value = method(*args, **kwargs)
        return value, materialize(trecv.get(key), value)
    if name == "popitem":
        value = method()
        return value, (zeros_like(value[0]), materialize(trecv.pop(value[0], None), value[1]))
    value = method(*args, **kwargs)
    if name == "copy":
        return value, copy_tangent(trecv, recv)
    if name == "get":
        t = get_tangent(trecv, recv, args[0], value)
        if len(args) > 1 and args[0] not in recv:
            t = materialize(targs[1], value)
        return value, t
    if name == "values":
        return value, values_tangent(trecv, recv)
    if name == "items":
        return value, items_tangent(trecv, recv)
    if name in ("index", "count", "keys"):
        return value, zeros_like(value)
    if runtime.differentiable(value):
        raise OpaqueCalleeError(f"forward mode: the {type(recv).__name__} method .{name}() has no "
                                f"derivative rule", fix=runtime._rule_skeleton(method))
    return value, zeros_like(value)


def _bound_method_rule(method):
    """The rule of a bound method of a library object (a resolver's), or None."""
    if not isinstance(method, types.MethodType) or runtime._is_python(method.__func__):
        return None
    lookup = hooks.lookup
    try:
        return lookup(method)
    except TypeError:
        return None


def jvp_method(recv, trecv, name, args, targs, kwargs=None, tkwargs=None):
    """``recv.name(*args, **kwargs)`` with tangents: list and dict methods are mirrored on the
    tangent container, array methods use their rules, methods of user classes are differentiated."""
    kwargs = kwargs or {}
    tkwargs = tkwargs or {}
    if type(recv) in (list, dict, tuple, deque):
        return _container_method(recv, trecv, name, args, targs, kwargs, tkwargs)
    method = getattr(recv, name)
    if _is_array(recv) or type(recv) in (float, complex):      # (z.conjugate() of a Python complex)
        lookup_method = hooks.lookup_method
        rule = lookup_method(name)
        value = method(*args, **kwargs)
        if rule is None or rule.zero:
            if rule is None and (value is None or runtime.differentiable(value)) and (
                    _active_tangent(trecv, recv) or any(_active_tangent(t, a) for t, a in zip(targs, args))):
                raise OpaqueCalleeError(f"the array method .{name}() has no derivative rule",
                                        fix=runtime._rule_skeleton(method))
            return value, zeros_like(value)
        bound = rule.bind((recv,) + tuple(args), kwargs)
        tans = _param_tangents(rule, args, targs, kwargs, tkwargs, self_=recv, tself=trecv)
        return value, _rule_tangent(rule, bound, value, tans)
    func = getattr(method, "__func__", None)
    rule = _bound_method_rule(method)
    if rule is not None:
        # a rule for this bound method (scipy.stats: norm.logpdf, norm(0, 1).logpdf) wins over
        # the library's Python source; a ``receiver`` rule's first parameter is the object
        value = method(*args, **kwargs)
        if rule.zero:
            return value, zeros_like(value)
        self_ = (recv,) if rule.receiver else ()
        bound = rule.bind(self_ + tuple(args), kwargs)
        tans = _param_tangents(rule, args, targs, kwargs, tkwargs, self_=recv if self_ else None,
                               tself=trecv)
        return value, _rule_tangent(rule, bound, value, tans)
    if getattr(method, "__self__", None) is not recv and \
            not isinstance(recv, (types.ModuleType, type, super)):
        # a callable stored on the object (a layer object, a closure, a partial, a property that
        # returns one), not one of its methods: called with its own tangent, the attribute's
        fn, tfn = jvp_attr(recv, trecv, name)
        return jvp_call(fn, args, targs, kwargs, tkwargs, ftan=tfn)
    if func is not None and _is_python(func):
        self_ = method.__self__          # the object itself, also through super()
        if isinstance(self_, type):      # a classmethod: the class carries no tangent
            return _jvp_python(func, (self_,) + tuple(args), (None,) + tuple(targs), kwargs, tkwargs)
        return _jvp_python(func, (self_,) + tuple(args), (trecv,) + tuple(targs), kwargs, tkwargs)
    value, tv = jvp_call(method, args, targs, kwargs, tkwargs, _bound=True)
    if not _no_tangent(trecv) and runtime.differentiable(recv) and runtime.differentiable(value):
        lookup = hooks.lookup       # a method without a rule, of an object that
        if lookup(method) is None:                # carries a tangent (it gave a zero tangent)
            raise OpaqueCalleeError(runtime._opaque_message(method), fix=runtime._rule_skeleton(method))
    return value, tv


def jvp_method_update(recv, trecv, name, args, targs, kwargs=None, tkwargs=None):
    """``recv.name(...)`` for a method that may update its object: (value, tangent, the object's
    tangent after the call).  A method that writes into ``self`` is differentiated with the
    updated object as a second output (as in reverse mode)."""
    if isinstance(recv, types.ModuleType):            # xp.mean(...): a function, not a method
        value, tv = jvp_method(recv, None, name, args, targs, kwargs, tkwargs)
        return value, tv, trecv
    method = getattr(recv, name)
    func = getattr(method, "__func__", None)
    if func is None or not _is_python(func) or isinstance(method.__self__, type) or \
            _bound_method_rule(method) is not None or \
            (method.__self__ is not recv and not isinstance(recv, super)):
        # (a method of another object, stored on this one: jvp_method calls it with the
        # attribute's tangent)
        value, tv = jvp_method(recv, trecv, name, args, targs, kwargs, tkwargs)
        return value, tv, trecv
    recv = method.__self__                           # the object itself, also through super()
    if func.__code__ not in runtime._MUTATING:
        try:
            value, tv = _jvp_python(func, (recv,) + tuple(args), (trecv,) + tuple(targs),
                                    kwargs, tkwargs)
            return value, tv, trecv
        except ArgumentWriteError as e:
            first = func.__code__.co_varnames[0] if func.__code__.co_argcount else None
            if e.param != first:
                raise
            runtime._MUTATING.add(func.__code__)
    (value, _), (tv, tself) = _jvp_python(func, (recv,) + tuple(args), (trecv,) + tuple(targs),
                                          kwargs, tkwargs, mut=True)
    return value, tv, tself


def jvp_attr(obj, tobj, name):
    """Attribute read on a value of unknown type: arrays use the attribute rules, objects of user
    classes their attribute tangents (a dict), properties are differentiated."""
    if _is_array(obj) or type(obj) in (float, complex):      # (z.real, z.imag of a Python complex)
        value = getattr(obj, name)
        if tobj is not None:
            lookup_attr = hooks.lookup_attr
            rule = lookup_attr(name)
            if rule is not None and not rule.zero and "self" in rule.jvp:
                return value, tangent_function(rule, "self")(materialize(tobj, obj), value, self=obj)
        return value, zeros_like(value)
    prop = getattr(type(obj), name, None)
    if isinstance(prop, property) and prop.fget is not None and _is_python(prop.fget):
        return _jvp_python(prop.fget, (obj,), (tobj,))
    value = getattr(obj, name)
    if getattr(value, "__self__", None) is obj and callable(value):
        return value, tobj                   # a bound method: its object's tangent
    if isinstance(obj, dict) and isinstance(tobj, dict) and getattr(type(obj), name, None) is None \
            and name in obj and value is obj[name]:
        # a dict whose __getattr__ reads its items (scipy's OptimizeResult, OdeResult...): the
        # item's tangent
        t = tobj.get(name)
        if t is None or (type(t) is float and t == 0.0 and not isinstance(value, (float, int))):
            t = zeros_like(value)
        return value, t
    if isinstance(tobj, dict) and not isinstance(obj, dict):
        if runtime.differentiable(value):
            _check_stored(obj, name)     # (a value its class computes: not the attribute's tangent)
        t = tobj.get(name)
        if t is None or (type(t) is float and t == 0.0 and not isinstance(value, (float, int))):
            t = zeros_like(value)
            if isinstance(value, (list, dict)) or _is_object(value):
                if t is None:
                    t = {}
                tobj[name] = t               # a mutable attribute: its tangent stays with it
        return value, t
    k = obj._fields.index(name) if isinstance(obj, tuple) and \
        name in getattr(obj, "_fields", ()) else -1
    if k >= 0 and isinstance(tobj, tuple) and len(tobj) == len(obj) and value is obj[k]:
        t = tobj[k]                            # a named tuple's field: its item's tangent
        return value, zeros_like(value) if t is None else t
    return value, zeros_like(value)
