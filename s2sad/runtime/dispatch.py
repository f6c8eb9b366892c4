"""Dynamic call sites: calls whose callee is known only at run time (:func:`call`, :func:`pull`,
:func:`attr`), derived callees built lazily (:class:`DerivedStub`), operators of user classes,
and s2sad's own transforms called inside differentiated code.  Derivatives are built through
:mod:`.hooks` (the builder registers itself there); the runtime imports nothing above it.
"""

from collections import deque as _deque
from types import MethodType as _MethodType

import numpy as np

from ..errors import ArgumentWriteError
from . import hooks
from .arrays import (_BuiltinType, _FunctionType, _ModuleType, _is_array, _z, add, array_module,
                     is_zero)
from .iterators import Iter
from .transformed import Transformed
from .values import (_DUNDERS, _is_python, cached_function, differentiable, kind_of,
                     numba_function, python_dunder, type_of)
from .containers import init_into, parts
from .refusals import (_NOT_ON_CLASS, _opaque_message, _rule_skeleton, class_attribute,
                       generated_origin, mark_partial, plain_slot, refuse_vectorize, rule_adjoint)


# -- derived callees (built lazily; recursion and mutual recursion work) --------------------------
TYPED_MAX = 8           # typed derivatives of one callee per call site (as api._TYPED_MAX)


def data_cell_values(fn, names):
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    return [cells[n].cell_contents for n in names]


def _data_cells(fn):
    if not fn.__closure__:
        return ()
    split_closure = hooks.split_closure
    return tuple(split_closure(fn)[1])


class DerivedStub:
    """``f__fwd``/``f__bwd`` for a user function called from generated code.  The derivative is
    looked up (and built once) per value kinds and types of the arguments (``type_of``: a number's
    kind, an array's dtype kind and ndim; at most :data:`TYPED_MAX` typed ones per stub, then one
    for all types), so the callee's own code leaves out what its argument types make needless, as
    the caller's does; the tape remembers which one.  Data held in the callee's closure cells is
    passed first (it carries no derivative here)."""

    __slots__ = ("callee", "mask", "_last", "_cells", "_typed")

    def __init__(self, callee, mask):
        self.callee, self.mask, self._last = callee, mask, None
        self._cells = _data_cells(callee)
        self._typed = set()

    def resolve(self, args):
        """(derivative, the sweep's arguments) for a call with ``args``."""
        if self._cells:
            args = tuple(data_cell_values(self.callee, self._cells)) + tuple(args)
            mask = (False,) * len(self._cells) + self.mask
        else:
            mask = self.mask
        kinds = tuple(kind_of(a) for a in args)
        types = tuple(type_of(a) for a in args)
        last = self._last
        if last is not None and last[0] == kinds and last[1] == types and last[2].fresh():
            d = last[2]
        else:
            typed = self._typed
            if types not in typed:
                if len(typed) < TYPED_MAX:
                    typed.add(types)
                else:
                    types = None            # (then one derivative for every type)
            reverse_derivative = hooks.reverse_derivative
            d = reverse_derivative(self.callee, mask, kinds, types=types)
            self._last = (kinds, types, d)
        return d, args

    def fwd(self, *args):
        d, args = self.resolve(args)
        fwd, bwd = _sweeps(d)
        value, tape = fwd(*args)
        return value, (bwd, tape)

    @staticmethod
    def bwd(tape, g):
        bwd, inner = tape
        return bwd(inner, g)


# -- dynamic call sites ---------------------------------------------------------------------------
_NOTHING = object()
# A record says how to pull an output adjoint back to the callee and the arguments:
#   ("rule", rule, bound, ans, is_method, nargs, kwnames)   a primitive with a rule
#   ("derived", d, tape, mask, names, kwnames, ncells, cellnames, nself, npos, defaulted, mut)
#                                                      a Python function (mut: False, or an Update)
#   ("partial", inner record, nargs_partial, partial keyword names, nargs, kwnames)
#   ("attr", name) / ("self",)                         attribute reads on objects / bound methods
#   ("dataclass", field names, nargs, kwnames)         a dataclass constructed from fields

_IN_PLACE_METHODS = {"sort", "reverse", "popitem", "update", "setdefault", "remove", "clear",
                     "__setitem__", "__delitem__", "__iadd__",
                     # followed as statements on local lists; reached here only on other lists
                     # (module-level, inside a dict...), which s2sad does not follow
                     "append", "extend", "insert", "pop",
                     # collections.deque's own (rules/deques.py)
                     "appendleft", "popleft", "extendleft", "rotate"}
# (type, method name) -> handler(obj, args, kwargs) -> (value, ("custom", pull_fn)) for in-place
# methods s2sad does follow (list.sort, list.reverse); filled by rules.python.  pull_fn(g,
# g_self) gives (adjoint of the object before, adjoints of args, of kwargs).
IN_PLACE_RULES = {}


def operator_methods(fn, args):
    """The Python methods that may compute ``fn(*args)`` (``a + b``, ``-a``, ``a[i]``...) on
    objects of user classes, in Python's order: (method, its object, its other arguments,
    reflected).  A binary operator's second entry, ``__radd__``..., is tried when the first
    returns NotImplemented."""
    names = _DUNDERS[fn]
    if len(names) == 1:                     # -a, abs(a), a[i]: a method of the first operand
        m = python_dunder(args[0], names[0]) if args else None
        return [(m, args[0], tuple(args[1:]), False)] if m is not None else []
    if len(args) != 2:
        return []
    a, b = args
    out = []
    m = python_dunder(a, names[0])
    if m is not None:
        out.append((m, a, (b,), False))
    m = python_dunder(b, names[1])
    if m is not None:
        out.append((m, b, (a,), True))
    return out


def _call_operator(fn, args):
    """``fn(*args)`` on objects of user classes, their operator methods differentiated; None when
    no such method applies."""
    unary = len(_DUNDERS[fn]) == 1
    for m, self_, rest, reflected in operator_methods(fn, args):
        value, rec = _call_derived(m, rest, {}, self_=self_)
        if unary or value is not NotImplemented:
            return value, ("operator", rec, int(reflected))
    return None


def _deque_method(d, fn, args, kwargs):
    """A method of a ``collections.deque`` that holds, or is given, values carrying derivatives:
    the in-place ones by their handlers (rules/deques.py), the others by the list's
    container-method rules (``copy``, ``count``, ``index``); None for a deque that carries none."""
    name = fn.__name__
    if not (differentiable(d) or any(differentiable(a) for a in args + tuple(kwargs.values()))):
        return None
    handler = IN_PLACE_RULES.get((_deque, name))
    if handler is not None:
        return handler(d, args, kwargs)
    rule = hooks.lookup_container_method(name)
    if rule is not None and name in ("copy", "count", "index"):
        ans = fn(*args, **kwargs)
        if rule.zero:
            return ans, None
        bound = rule.bind((d,) + args, kwargs)
        return ans, ("rule", rule, bound, ans, True, len(args), list(kwargs))
    from ..errors import UnsupportedSyntaxError
    raise UnsupportedSyntaxError(
        f"`.{name}(...)` on a deque that holds values carrying derivatives is not supported",
        fix="use the deque methods s2sad follows (append, appendleft, pop, popleft, extend, "
            "extendleft, insert, remove, rotate, reverse, clear, copy), or a list")


def call(fn, *args, **kwargs):
    """Run a call whose callee is only known now; returns (value, record for :func:`pull`)."""
    import functools
    import inspect
    refuse_vectorize(fn, args, kwargs)
    if not kwargs and type(fn) is _BuiltinType and fn in _DUNDERS:
        done = _call_operator(fn, args)
        if done is not None:
            return done
    self_ = getattr(fn, "__self__", None)
    if type(self_) is _deque and hasattr(fn, "__name__"):
        done = _deque_method(self_, fn, args, kwargs)
        if done is not None:
            return done
    if type(self_) in (list, dict) and getattr(fn, "__name__", None) in _IN_PLACE_METHODS and \
            (differentiable(self_) or any(differentiable(a) for a in args + tuple(kwargs.values()))):
        handler = IN_PLACE_RULES.get((type(self_), fn.__name__))
        if handler is not None:
            return handler(self_, args, kwargs)
        from ..errors import UnsupportedSyntaxError
        grow = fn.__name__ in ("append", "extend", "insert", "pop")
        raise UnsupportedSyntaxError(
            f"`.{fn.__name__}(...)` changes a {type(self_).__name__} that holds values carrying "
            f"derivatives in a way s2sad does not follow" +
            (" (s2sad follows these on lists held by a local variable)" if grow else ""),
            fix="keep the list in a local variable (`xs = []` ... `xs.append(v)`) or build it with a "
                "comprehension, and return it if the caller needs it" if grow else
                "build a new list/dict instead (e.g. `sorted(xs)`, `xs[::-1]`, `{**d, k: v}`)")
    if type(self_) in (list, dict, tuple) and hasattr(fn, "__name__"):
        # d.get / d.values / d.items / d.copy...: the container-method rules (they gave zero)
        lookup_container_method = hooks.lookup_container_method
        rule = lookup_container_method(fn.__name__)
        if rule is not None:
            ans = fn(*args, **kwargs)
            if rule.zero:
                return ans, None
            bound = rule.bind((self_,) + args, kwargs)
            _check_rule_params(rule, bound)
            return ans, ("rule", rule, bound, ans, True, len(args), list(kwargs))
    if inspect.ismethod(fn):
        func = fn.__func__
        if _is_python(func):
            return _call_derived(func, args, kwargs, self_=self_)
    elif self_ is not None and not isinstance(self_, type(np)) and hasattr(fn, "__name__") \
            and (_is_array(self_) or type(self_) in (float, complex)):
        # a method of a NumPy/CuPy array (or of a Python float/complex: z.conjugate())
        lookup_method = hooks.lookup_method
        rule = lookup_method(fn.__name__)
        if rule is None and any(differentiable(a) for a in args + tuple(kwargs.values())):
            from ..errors import OpaqueCalleeError
            raise OpaqueCalleeError(
                f"the array method .{fn.__name__}() has no derivative rule and is called with "
                f"values that carry a derivative (it may change the array in place)",
                fix="compute the new value with an expression and assign it, or declare a rule "
                    "with s2sad.defmethod")
        ans = hooks.graph_callee(fn)(*args, **kwargs)     # x.dot(b)
        if rule is None and differentiable(self_) and (ans is None or differentiable(ans)):
            from ..errors import OpaqueCalleeError       # (a.sort(), a.fill(0) change a in place)
            raise OpaqueCalleeError(
                f"the method .{fn.__name__}() of a {type(self_).__name__} that carries a derivative "
                f"has no derivative rule" + (" (it changes the array in place)" if ans is None else ""),
                fix="compute the new value with an expression and assign it (`a = np.sort(a)`), or "
                    "declare a rule with s2sad.defmethod")
        if rule is None or rule.zero:
            return ans, None
        bound = rule.bind((self_,) + args, kwargs)
        _check_rule_params(rule, bound)
        return ans, ("rule", rule, bound, ans, True, len(args), list(kwargs))
    if isinstance(self_, DerivedStub) and getattr(fn, "__func__", None) is DerivedStub.fwd:
        # generated code calling a derived callee, itself being differentiated: see through
        d, full = self_.resolve(args)
        (value, inner), rec = _call_derived(d.fwd, full, {})
        return (value, (d.bwd, inner)), ("stubfwd", rec, len(full) - len(args))
    if fn is DerivedStub.bwd:
        (bwd, inner), g = args
        value, rec = _call_derived(bwd, (inner, g), {})
        return value, ("stubbwd", rec)
    if fn is init_into:
        cls, obj = args[0], args[1]
        base = super(cls, obj).__init__
        func = getattr(base, "__func__", None)
        if func is not None and _is_python(func):
            _, rec = _call_derived(func, args[2:], kwargs, self_=obj, mode="init")
            return obj, ("init_into", rec)
        base(*args[2:], **kwargs)
        return obj, None
    if getattr(fn, "__s2sad_jvp__", False) and not kwargs and len(args) == 3:
        # s2sad.jvp(f, primals, tangents) inside: its generated forward sweep is Python too
        jfn, full, layout = jvp_function(*args)
        value, rec = _call_derived(jfn, full, {})
        return value, ("jvp", rec, layout)
    parts_ = transform_parts(fn, args)
    if parts_ is not None:
        # s2sad.grad(f) / value_and_grad(f) called inside a function being differentiated: the
        # generated gradient function is Python s2sad differentiates like any other
        done = [_call_derived(p, args, kwargs) if _is_python(p) else call(p, *args, **kwargs)
                for p in parts_]
        if len(done) == 1:
            return done[0]
        return tuple(v for v, _ in done), ("parts", [r for _, r in done])
    if isinstance(fn, functools.partial):
        value, rec = call(fn.func, *(fn.args + args), **{**fn.keywords, **kwargs})
        return value, ("partial", rec, len(fn.args), list(fn.keywords), len(args), list(kwargs))
    lookup = hooks.lookup
    try:
        rule = lookup(fn)
    except TypeError:
        rule = None
    if rule is not None:
        # graph mode: a matrix product (xp.matmul, xp.tensordot... with xp a local variable) on
        # the capturable route (kernels.contract)
        ans = hooks.graph_callee(fn)(*args, **kwargs)
        if rule.zero:
            return ans, None
        if rule.receiver:           # a bound method's rule: its object is the first parameter
            bound = rule.bind((self_,) + args, kwargs)
            _check_rule_params(rule, bound)
            return ans, ("rule", rule, bound, ans, True, len(args), list(kwargs))
        bound = rule.bind(args, kwargs)
        _check_rule_params(rule, bound)
        return ans, ("rule", rule, bound, ans, False, len(args), list(kwargs))
    compiled = numba_function(fn) or cached_function(fn)
    if compiled is not None and _is_python(compiled):   # @numba.njit, lru_cache: its function
        return _call_derived(compiled, args, kwargs)
    if _is_python(fn):
        return _call_derived(fn, args, kwargs)
    if plain_namedtuple(fn):
        ans = fn(*args, **kwargs)              # a named tuple built from its fields
        return ans, ("namedtuple", len(args), list(kwargs), list(fn._fields))
    if isinstance(fn, type):
        import dataclasses
        if dataclasses.is_dataclass(fn) and not hasattr(fn, "__post_init__"):
            ans = fn(*args, **kwargs)
            names = [f.name for f in dataclasses.fields(fn) if f.init]
            return ans, ("dataclass", names, len(args), list(kwargs))
        init = fn.__init__
        if _is_python(init) and any(differentiable(a) for a in args + tuple(kwargs.values())):
            obj = fn.__new__(fn)
            _, rec = _call_derived(init, args, kwargs, self_=obj, mode="init")
            return obj, rec
    elif not inspect.isroutine(fn) and hasattr(type(fn), "__call__") and \
            _is_python(getattr(type(fn).__call__, "__func__", type(fn).__call__)):
        # a callable object (a model with __call__)
        return _call_derived(type(fn).__call__, args, kwargs, self_=fn)
    # (a method's own object is one of its inputs)
    recv = () if self_ is None or isinstance(self_, (type, _ModuleType)) else (self_,)
    inputs = recv + args + tuple(kwargs.values())
    kept = opaque_snapshot(inputs)
    ans = fn(*args, **kwargs)
    if may_carry(ans) and any(differentiable(a) for a in inputs):
        from ..errors import OpaqueCalleeError
        raise OpaqueCalleeError(_opaque_message(fn), fix=_rule_skeleton(fn))
    refuse_if_changed(fn, kept)
    return ans, None


def call_method(obj, name, /, *args, **kwargs):
    """``obj.name(*args, **kwargs)`` at a method-call site whose object's type is known only now.
    The record's callee adjoint is the adjoint of ``obj``: for a method of ``obj`` that is the
    bound method's; for a callable stored on the object (a layer object, a closure, a partial, a
    property that returns one) the callee's adjoint goes back through the attribute read
    (``{name: adjoint}``, or the property's derivative)."""
    if type(obj) in _PLAIN_RECEIVERS or _is_array(obj) or \
            isinstance(obj, (_ModuleType, type, super, _deque)):
        return call(getattr(obj, name), *args, **kwargs)
    fn, ra = attr(obj, name)
    value, rc = call(fn, *args, **kwargs)
    if ra is None or ra == ("self",) or rc is None:
        return value, rc
    return value, ("member", ra, rc)


_PLAIN_RECEIVERS = (list, dict, tuple, set, frozenset, str, bytes, int, float, complex, bool)


def _pull_member(rec, g, g_self):
    """Adjoints of ``obj.name(...)`` where the callee is a value stored on ``obj`` (a
    ``"member"`` record of :func:`call_method`); ``g_self`` as in :func:`pull`."""
    _, ra, rc = rec
    if g_self is _NOTHING:
        c, a, k = pull(rc, g)
        return (0.0 if is_zero(c) else pull(ra, c)[0]), a, k
    if ra[0] == "attr":
        # a callee that may update itself (its own attributes): its adjoint after the call is
        # the object's for that attribute
        name = ra[1]
        after = g_self.get(name, 0.0) if isinstance(g_self, dict) else 0.0
        c, a, k = pull(rc, g, after)
        obj = dict(g_self) if isinstance(g_self, dict) else {}
        if is_zero(c):
            obj.pop(name, None)
        else:
            obj[name] = c
        return (obj or 0.0), a, k
    c, a, k = pull(rc, g)
    if not is_zero(c):
        c = pull(ra, c)[0]
    return add(g_self, c) if not is_zero(g_self) else c, a, k


def container_receiver(obj, name, origin):
    """Before ``obj.name(...)`` (append, extend, insert, pop, update) on a name whose type s2sad
    could not tell when it built the derivative, which differentiates it as the list/dict/deque
    method: refuse an object of another class (its own method of that name)."""
    if isinstance(obj, (list, dict, _deque, set)):
        return
    from ..errors import UnsupportedSyntaxError
    cls = type(obj).__name__
    raise UnsupportedSyntaxError(
        f"`.{name}(...)` is called on a {cls} object here, and s2sad took it for the list/dict "
        f"method of that name (it could not tell the object's type when it built the derivative)",
        origin=origin,
        fix=f"make the object in this function with its class (`obj = {cls}(...)`), where s2sad "
            f"knows it is one and differentiates its own `.{name}`, or give the method another "
            f"name")


def opaque_snapshot(inputs):
    """Before an opaque callee (no rule, no Python source) runs on ``inputs``: a copy of each
    that carries a derivative and that the callee could change in place (a writable NumPy or
    CuPy array of floats, a list or dict holding values that carry one), for
    :func:`refuse_if_changed`.  Empty, and free, when none does."""
    kept = []
    for a in inputs:
        t = type(a)
        if t is list or t is dict:
            if differentiable(a):
                kept.append((a, _items(a)))
        elif _writable_floats(a):
            kept.append((a, a.copy()))
        elif type(getattr(a, "__dict__", None)) is dict and \
                not isinstance(a, (type, _ModuleType, _FunctionType, _MethodType)):
            # an object of a class of yours: its attributes, each as the object it holds, and
            # the contents of those that are arrays, lists or dicts (``o.w[0] = v`` changes
            # o.w, not which object o.w is)
            attrs = _Attrs(a.__dict__)
            attrs.contents = [(v, v.copy() if _writable_floats(v) else _items(v))
                              for v in a.__dict__.values()
                              if _writable_floats(v) or type(v) in (list, dict) and
                              differentiable(v)]
            kept.append((a, attrs))
    return kept


def _writable_floats(a):
    return _is_array(a) and getattr(a.dtype, "kind", "") in "fc" and \
        getattr(getattr(a, "flags", None), "writeable", False)


def _items(c):
    return list(c.items()) if type(c) is dict else list(c)


def _same_items(obj, before):
    now = _items(obj)
    return len(now) == len(before) and all(
        (x[0] is y[0] and x[1] is y[1]) if type(obj) is dict else x is y
        for x, y in zip(now, before))


def _same_array(obj, before):
    return obj.shape == before.shape and \
        bool(array_module(obj).array_equal(obj, before, equal_nan=True))


class _Attrs(dict):
    """The attributes of an object as :func:`opaque_snapshot` found them (name -> the object),
    with ``contents``: (array, copy) and (list or dict, items) of those that hold floats."""
    contents = ()


def refuse_if_changed(fn, kept, unused=False):
    """After the opaque callee ``fn`` ran: refuse when it changed one of the inputs
    :func:`opaque_snapshot` kept (``rng.shuffle(a)``, a C routine filling a buffer): s2sad cannot
    know how the values moved, and going on would give a wrong derivative without an error."""
    for obj, before in kept:
        if type(before) is _Attrs:
            # (an attribute that holds no float before or after, an int counter, may change)
            now = obj.__dict__
            same = not any(differentiable(before.get(k)) or differentiable(now.get(k))
                           for k in now.keys() | before.keys()
                           if now.get(k, _Attrs) is not before.get(k, _Attrs)) and \
                all(_same_items(v, c) if type(c) is list else _same_array(v, c)
                    for v, c in before.contents)
            what = f"attributes of the {type(obj).__name__} object it was given"
        elif isinstance(before, list):
            same = _same_items(obj, before)
            what = f"the {type(obj).__name__} it was given"
        else:
            same = _same_array(obj, before)
            what = "an array it was given"
        if not same:
            from ..errors import OpaqueCalleeError
            from .refusals import _callee_ref
            name = _callee_ref(fn, None) or getattr(fn, "__qualname__", None) or repr(fn)
            if unused:
                # (codegen.text.snapshot_call: a call of code s2sad could differentiate, run as
                # it is because its result carries no derivative)
                from ..errors import UnsupportedSyntaxError
                raise UnsupportedSyntaxError(
                    f"{name} changed {what} in place, a value that carries a derivative; its "
                    f"result carries none, so s2sad ran it as it is and did not follow the change",
                    fix="return the new values and assign them (build them inside on a copy), "
                        "or call it on a line of its own, where s2sad differentiates what it "
                        "does")
            raise OpaqueCalleeError(
                f"{name} changed {what} in place, a value that carries a derivative, and s2sad "
                f"has no derivative rule for it and does not differentiate its code, so it cannot "
                f"follow how the values moved",
                fix="compute the new value with an expression and assign it (for a shuffle: "
                    "`p = rng.permutation(len(a)); a = a[p]`), or declare a rule with "
                    "s2sad.defrule")


def may_carry(value):
    """What an opaque callee (no rule, no source) given values that carry a derivative may
    return without a refusal: only values that hold no float or complex numbers.  An iterator
    (other than s2sad's own) is not known to hold none: it counts as carrying one."""
    if differentiable(value):
        return True
    return hasattr(value, "__next__") and not isinstance(value, (str, bytes, Iter))


def _check_rule_params(rule, bound):
    """A value carrying a derivative must not reach a parameter the rule has no derivative for."""
    if (getattr(rule.fn, "__module__", None) or "").startswith("s2sad."):
        return
    skip = set(rule.differentiable) | set(rule.constant)
    params = rule.signature.parameters
    for p, v in bound.items():
        if p in params and v is params[p].default:
            continue            # the rule's own default (h0=0.0): not the caller's value
        if p not in skip and v is not None and differentiable(v):
            from ..errors import RuleError
            why = rule.why.get(p)
            raise RuleError(f"a value carrying a derivative reaches parameter `{p}` of "
                            f"{rule.name}, which has no derivative rule for it" +
                            (f" ({why})" if why else ""),
                            fix=f"pass a constant for `{p}`, or declare the derivative with "
                                f"s2sad.defrule(..., vjp={{{p!r}: ...}})")


def plain_namedtuple(cls):
    """A named tuple class (``collections.namedtuple``, ``typing.NamedTuple``) whose ``__new__``
    is the one namedtuple made (fields in, the tuple of them out), not a subclass's own."""
    new = getattr(cls, "__new__", None)
    return isinstance(cls, type) and issubclass(cls, tuple) and hasattr(cls, "_fields") and \
        str(getattr(new, "__globals__", {}).get("__name__", "")).startswith("namedtuple_")


def constructible(cls):
    """A class whose construction s2sad differentiates: a user __init__, a plain dataclass, or a
    plain named tuple."""
    import dataclasses
    if dataclasses.is_dataclass(cls) and not hasattr(cls, "__post_init__") or \
            plain_namedtuple(cls):
        return True
    init = getattr(cls, "__init__", None)
    return init is not None and _is_python(init)


def _call_derived(fn, args, kwargs, self_=None, mode="reverse"):
    import inspect
    reverse_derivative = hooks.reverse_derivative
    nself = 0
    if self_ is not None:
        args = (self_,) + tuple(args)
        nself = 1
    code = fn.__code__
    names = None
    defaulted = ()
    if kwargs or code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS) or \
            (fn.__defaults__ and len(args) < code.co_argcount) or fn.__kwdefaults__:
        sig = inspect.signature(fn, follow_wrapped=False)
        ba = sig.bind(*args, **kwargs)
        given = set(ba.arguments)
        ba.apply_defaults()
        names = list(ba.arguments)
        vals = list(ba.arguments.values())
        defaulted = tuple(n for n in names if n not in given)
    else:
        vals = list(args)
    cellnames = _data_cells(fn)
    cells = []
    if cellnames:
        cells = data_cell_values(fn, cellnames)
    full = tuple(cells) + tuple(vals)
    mask = tuple(differentiable(a) for a in full)
    kinds = tuple(kind_of(a) for a in full)
    if nself and mode == "reverse" and fn.__code__ in _MUTATING:
        mode = "mut"
    try:
        d = reverse_derivative(fn, mask, kinds, mode)
    except ArgumentWriteError as e:
        # a method that writes into its own object: differentiate it as an update of the object
        first = fn.__code__.co_varnames[0] if fn.__code__.co_argcount else None
        if not (nself and mode == "reverse" and e.param == first):
            raise
        _MUTATING.add(fn.__code__)
        mode = "mut"
        d = reverse_derivative(fn, mask, kinds, mode)
    try:
        value, tape = _sweeps(d)[0](*full)
    except BaseException as e:
        if mode == "mut":
            mark_partial(e, fn)
        raise
    mut = False
    if mode == "mut":
        value = value[0]
        mut = Update(_update_carries(d, self_))
    return value, ("derived", d, tape, mask, names, list(kwargs), len(cells), cellnames, nself,
                   len(args) - nself, defaulted, mut)


_MUTATING = set()          # code objects of methods that update their object


class Update:
    """The last field of a record of a method that updated its object (true, where a record of
    another call has False there).  ``carries``: the attributes of the object the method changed
    that now hold values carrying a derivative (a tuple of names), or None when s2sad cannot tell
    which it changed; an empty tuple when none does (``self.calls += 1``), so that a caller that
    does not follow the update (runtime.no_update) loses nothing."""
    __slots__ = ("carries",)

    def __init__(self, carries):
        self.carries = carries

    def __bool__(self):
        return True


def _update_carries(d, obj):
    """:attr:`Update.carries` of ``obj`` after the method of derivative ``d`` updated it."""
    names = getattr(d, "self_writes", None)
    cls = type(obj)
    if names is None or getattr(cls, "__setattr__", None) is not object.__setattr__:
        return None                     # (which attributes it changed is not known)
    import inspect
    own = getattr(obj, "__dict__", None)
    out = []
    for n in names:
        if own is not None and n in own and \
                not hasattr(type(inspect.getattr_static(cls, n, None)), "__set__"):
            v = own[n]
        else:
            desc = inspect.getattr_static(cls, n, None)
            if type(desc).__name__ != "member_descriptor":
                return None             # (a property, another descriptor: not a plain attribute)
            v = getattr(obj, n, None)   # (a slot)
        if differentiable(v):
            out.append(n)
    return tuple(out)


def _sweeps(d):
    """A derived callee's (fwd, bwd); in graph mode (``graph=True`` preparing or capturing a CUDA
    graph) the ones whose matrix products the capture accepts (:func:`s2sad.graphs.sweeps`)."""
    got = hooks.graph_sweeps(d)
    return (d.fwd, d.bwd) if got is None else got


def pull(rec, g, g_self=_NOTHING):
    """Adjoints of a dynamic call: (adjoint of the callee, tuple for args, dict for kwargs).

    The callee's adjoint is the adjoint of a bound method's object, or a dict of a closure's
    captured variables.  ``g_self`` is given for a method call that may update its object: the
    adjoint of the object after the call (the result's callee adjoint is then the object's adjoint
    before the call)."""
    if rec is not None and rec[0] == "custom":
        return rec[1](g, g_self)
    if rec is not None and rec[0] == "member":
        return _pull_member(rec, g, g_self)
    if g_self is not _NOTHING:
        return _pull_mut(rec, g, g_self)
    if rec is None or is_zero(g):
        return _zero_pull(rec)
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
                    if rule.user and not rule.broadcast:
                        # (as generated code checks a user's rule: codegen/reverse_calls.py)
                        adj[p] = rule_adjoint(adj[p], v, rule.name, p, generated_origin)
        pos = []
        for p in params:
            kp = rule.signature.parameters[p].kind
            if kp == kp.VAR_POSITIONAL:
                pos.extend(adj.get(p, (0.0,) * len(bound.get(p, ()))))
            elif kp == kp.VAR_KEYWORD or p in {rule.keyword(k) for k in kwnames}:
                continue
            else:
                pos.append(adj.get(p, 0.0))
        pos = pos[:nargs + (1 if is_method else 0)]
        sig = rule.signature.parameters
        var_kw = [adj.get(p) for p in params if sig[p].kind == sig[p].VAR_KEYWORD]    # **kwargs
        var_kw = var_kw[0] if var_kw and isinstance(var_kw[0], dict) else {}
        kw = {k: _z(adj.get(rule.keyword(k), 0.0) if rule.keyword(k) in sig else
                    var_kw.get(k, 0.0)) for k in kwnames}
        if is_method:
            return _z(pos[0]), tuple(_z(v) for v in pos[1:]), kw
        return 0.0, tuple(_z(v) for v in pos), kw
    if kind == "derived":
        d, tape, mut = rec[1], rec[2], rec[-1]
        return _derived_adjoints(rec, _sweeps(d)[1](tape, (g, 0.0) if mut else g))
    if kind == "operator":                  # a user class's __add__ / __radd__ / __neg__...
        _, inner, reflected = rec
        g_self, g_args, _ = pull(inner, g)
        if not g_args:
            return 0.0, (g_self,), {}
        return 0.0, ((g_args[0], g_self) if reflected else (g_self, g_args[0])), {}
    if kind == "jvp":
        _, inner, (ncells, cellnames, nprim, mask) = rec
        _, a, _ = pull(inner, g)
        a = list(a)
        f_adj = dict(zip(cellnames, a[:ncells])) if ncells else 0.0
        prim = tuple(a[ncells:ncells + nprim])
        it = iter(a[ncells + nprim:])
        tans = tuple(next(it) if m else 0.0 for m in mask[ncells:])
        return 0.0, (f_adj, prim, tans), {}
    if kind == "parts":                     # value_and_grad(f): (f, its gradient function)
        callee, pos, kw = 0.0, None, {}
        for r, gi in zip(rec[1], parts(g, len(rec[1]))):
            c, a, k = pull(r, gi)
            callee = add(callee, c)
            pos = a if pos is None else tuple(add(u, v) for u, v in zip(pos, a))
            kw = {n: add(kw.get(n, 0.0), k.get(n, 0.0)) for n in set(kw) | set(k)}
        return callee, pos, kw
    if kind == "partial":
        _, inner, npart, pkw, nargs, kwnames = rec
        c, a, k = pull(inner, g)
        callee = {"func": c, "args": tuple(a[:npart]), "keywords": {n: k.get(n, 0.0) for n in pkw}}
        return callee, tuple(a[npart:npart + nargs]), {n: k.get(n, 0.0) for n in kwnames}
    if kind == "stubfwd":
        gv, gt = parts(g, 2)
        g_inner = 0.0 if is_zero(gt) else parts(gt, 2)[1]
        c, a, k = pull(rec[1], (gv, g_inner))
        return 0.0, tuple(a[rec[2]:]), k
    if kind == "stubbwd":
        c, a, k = pull(rec[1], g)
        return 0.0, ((0.0, a[0]), a[1]), k
    if kind == "init_into":
        c, a, k = pull(rec[1], g)
        return 0.0, (0.0, c) + tuple(a), k
    if kind == "attr":
        return {rec[1]: g}, (), {}
    if kind == "namedtuple":
        _, nargs, kwnames, fields = rec
        vals = parts(g, len(fields))
        return 0.0, tuple(vals[:nargs]), {k: vals[fields.index(k)] for k in kwnames}
    if kind == "nt_attr":
        _, k, n, typ = rec
        vals = [0.0] * n
        vals[k] = g
        return typ(*vals), (), {}
    if kind == "self":
        return g, (), {}
    if kind == "dataclass":
        _, names, nargs, kwnames = rec
        pos = [_z(g.get(n)) if isinstance(g, dict) else 0.0 for n in names[:nargs]]
        kw = {n: _z(g.get(n)) if isinstance(g, dict) else 0.0 for n in kwnames}
        return 0.0, tuple(pos), kw
    raise AssertionError(f"unknown record {kind}")


def _pull_mut(rec, g, g_self):
    if rec is not None and rec[0] == "derived" and rec[-1]:
        if is_zero(g) and is_zero(g_self):
            return _ZERO_PULL
        # the sweep's output adjoint is (result, object after); its bwd takes the pair
        return _derived_adjoints(rec, _sweeps(rec[1])[1](rec[2], (g, g_self)))
    r = pull(rec, g)
    c, a, k = r[0], r[1], r[2]
    return (add(g_self, c) if not is_zero(g_self) else c), a, k


def _derived_adjoints(rec, grads):
    """(callee adjoint, positional adjoints, keyword adjoints) of a derived call, from the
    gradients its reverse sweep returned (one per active sweep parameter)."""
    _, d, tape, mask, names, kwnames, ncells, cellnames, nself, npos, defaulted, mut = rec
    grads = iter(grads)
    full = [_z(next(grads)) if m else 0.0 for m in mask]
    cells = full[:ncells]
    vals = full[ncells:]
    callee = {n: v for n, v in zip(cellnames, cells)} if ncells else 0.0
    if defaulted:
        callee = dict(callee) if isinstance(callee, dict) else {}
        for n in defaulted:
            callee[f"{n}="] = vals[names.index(n)]
    if nself:
        callee = vals[0]
    if names is None:
        return callee, tuple(vals[nself:]), {}
    import inspect
    params = inspect.signature(d.ir.pyfunc, follow_wrapped=False).parameters
    by_name = dict(zip(names, vals))
    pos, kw = [], {}
    for n in names[nself:]:
        if n in defaulted:
            continue
        p = params.get(n)
        if p is not None and p.kind == p.VAR_POSITIONAL:
            pos.extend(by_name[n] if not is_zero(by_name[n]) else ())
        elif p is not None and p.kind == p.VAR_KEYWORD:
            if not is_zero(by_name[n]):
                kw.update(by_name[n])
        elif n in kwnames:
            kw[n] = by_name[n]
        else:
            pos.append(by_name[n])
    pos = pos[:npos] + [0.0] * max(0, npos - len(pos))
    for k in kwnames:
        kw.setdefault(k, 0.0)
    return callee, tuple(pos), kw


class _ZeroPull(tuple):
    """(0.0, zeros..., {}) for calls whose output adjoint is zero: indexable at any position."""

    def __getitem__(self, i):
        if i == 0:
            return 0.0
        if i == 1:
            return _Zeros()
        return _ZeroDict()


class _Zeros:
    """Zero adjoints of positional arguments of unknown number (a call whose record is None)."""
    zeros = True                       # star_args_adjoint reads it: every segment's adjoint is zero

    def __getitem__(self, i):
        return 0.0


class _ZeroDict(dict):
    def __missing__(self, k):
        return 0.0


_ZERO_PULL = _ZeroPull()


def _zero_pull(rec):
    """Zero adjoints of a call; the positional ones as a real tuple of zeros where the record
    tells how many (a call with ``*args`` reads that tuple whole)."""
    if rec is not None and rec[0] == "member":
        return _zero_pull(rec[2])
    at = {"rule": 5, "derived": 9, "partial": 4}.get(rec[0]) if rec is not None else None
    if at is None:
        return _ZERO_PULL
    return 0.0, (0.0,) * rec[at], _ZeroDict()


def attr(obj, name):
    """Attribute read on a value of unknown type: arrays (and Python numbers) use the attribute
    rules, named tuples give their field's adjoint back in place, objects give their attribute's
    adjoint back as ``{name: adjoint}``, properties are differentiated."""
    if isinstance(obj, tuple) and hasattr(obj, "_fields") and name in obj._fields:
        value = getattr(obj, name)
        k = obj._fields.index(name)
        return value, ("nt_attr", k, len(obj), type(obj)) if differentiable(value) else None
    if (_is_array(obj)) or type(obj) in (float, complex):
        value = getattr(obj, name)
        lookup_attr = hooks.lookup_attr
        rule = lookup_attr(name)
        if rule is not None and not rule.zero:
            return value, ("rule", rule, {"self": obj}, value, True, 0, [])
        return value, None
    prop = getattr(type(obj), name, None)
    if isinstance(prop, property) and prop.fget is not None and _is_python(prop.fget):
        return _call_derived(prop.fget, (), {}, self_=obj)
    value = getattr(obj, name)
    if getattr(value, "__self__", None) is obj and callable(value):
        return value, ("self",)
    if differentiable(value):
        _check_stored(obj, name)
        return value, ("attr", name)
    return value, None


def _check_stored(obj, name):
    """Refuse an attribute read whose value the class computes (its ``__getattr__`` for a missing
    name, a descriptor other than a property or a slot): its adjoint would go to an attribute
    ``name`` the object does not hold, and the derivative through it would be lost (a zero)."""
    d = getattr(obj, "__dict__", None)
    if d is not None and name in d or isinstance(obj, dict) and name in obj:
        return          # (stored; or an item a dict's __getattr__ reads: SciPy's OdeResult)
    cls = type(obj)
    found = class_attribute(cls, name)
    if found is _NOT_ON_CLASS:
        how = f"its class's `__getattr__` ({cls.__qualname__})"
    elif not hasattr(type(found), "__get__") or plain_slot(found):
        return                          # (a value on the class, a slot)
    else:
        how = f"a descriptor ({type(found).__qualname__})"
    from ..errors import UnsupportedSyntaxError
    raise UnsupportedSyntaxError(
        f"`.{name}` of a {cls.__qualname__} is computed by {how}, not stored in the object; "
        f"s2sad cannot follow the derivative through it",
        fix=f"compute it with a method or a property (`@property def {name}(self): ...`), or "
            f"store it as an attribute")


def transform_parts(fn, args):
    """For a function s2sad's API returned (``grad(f)``, ``value_and_grad(f)``), the Python
    functions whose results it returns: [the generated gradient function] or [f, that function];
    None for anything else."""
    t = fn.__s2sad_transform__ if type(fn) is Transformed else None
    if t is None:
        return None
    kind, f, wrt = t
    _concrete, grad = hooks.concrete, hooks.grad
    if kind == "grad":
        return [_concrete(fn, args)]
    if kind == "value_and_grad":
        return [_concrete(f, args), _concrete(grad(f, wrt), args)]
    return None


def jvp_function(f, primals, tangents):
    """(generated forward function, its arguments, layout) for ``s2sad.jvp(f, primals,
    tangents)``: the arguments are f's captured data, the primals, and the tangents that are
    given (layout: number and names of the captured values, number of primals, tangent mask)."""
    _concrete = hooks.concrete
    forward_derivative = hooks.forward_derivative
    primals, tangents = tuple(primals), tuple(tangents)
    fn = _concrete(f, primals)
    if not _is_python(fn):
        from ..errors import UnsupportedSyntaxError
        raise UnsupportedSyntaxError(
            "s2sad.jvp inside a differentiated function takes a Python function",
            fix="pass a function defined in Python (a def or a lambda)")
    cells = _data_cells(fn)
    lead = ()
    if cells:
        lead = tuple(data_cell_values(fn, cells))
    args = lead + primals
    targs = (None,) * len(lead) + tangents
    mask = tuple(t is not None and not is_zero(t) for t in targs)
    d = forward_derivative(fn, mask, tuple(kind_of(a) for a in args))
    full = args + tuple(t for t, m in zip(targs, mask) if m)
    return d.jvp, full, (len(lead), list(cells), len(primals), mask)
