"""Refusals at run time: messages for opaque callees (a rule skeleton to paste), the guards
generated code runs before a step s2sad could not follow (``keys_read``, ``inplace_guard``,
``not_alias``, ``no_update``...).
"""
import operator as _operator
import types as _types

import numpy as np

from ..errors import ArgumentWriteError
from . import hooks
from .arrays import (_FunctionType, _ModuleType, _SCALARS, _is_array, _partial, array_module,
                     is_complex)
from .iterators import LazyList
from .values import _frompyfunc, differentiable, numba_ufunc
from .containers import _ITEMS_VIEW, _KEYS_VIEW


def keys_read(origin, *xs):
    """Before a dict's keys are read as values (``sorted(d)``, ``for k in d``, ``d.keys()``,
    ``d.items()``...; classify/keys.py): refuse keys that are floats (or tuples holding
    floats).  s2sad keeps a dict's derivative per key and drops the keys' own derivatives, which
    is right for values read by key but not for keys that come back out as values."""
    for x in xs:
        t = type(x)
        if t is dict or t is _KEYS_VIEW or t is _ITEMS_VIEW:
            bad = next((k for k in (x.mapping if t is not dict else x) if _inexact_key(k)), None)
            if bad is not None:
                from ..errors import UnsupportedSyntaxError
                raise UnsupportedSyntaxError(
                    f"this line reads the keys of a dict as values, and a key is a "
                    f"{type(bad).__name__} ({bad!r}); keys that are floats may carry derivatives, "
                    f"which s2sad does not follow through dict keys (it keeps a dict's "
                    f"derivative per key)", origin=origin,
                    fix="keep such pairs in a list (`pairs = list(zip(keys, values))`) or key the "
                        "dict by strings or integers; reading values by key (`d[k]`, `d.values()`) "
                        "is fine")


def _inexact_key(k):
    if isinstance(k, (float, complex)) or isinstance(getattr(k, "dtype", None), np.dtype) and \
            k.dtype.kind in "fc":
        return True
    return isinstance(k, tuple) and any(_inexact_key(e) for e in k)


def refuse_vectorize(fn, args, kwargs):
    """``np.vectorize(f)`` calls ``f`` element by element from inside NumPy, where s2sad cannot
    follow it: refuse when values that carry a derivative go in."""
    made = "np.vectorize(...)" if isinstance(fn, np.vectorize) else \
        "np.frompyfunc(...)" if _frompyfunc(fn) else None
    # (the function itself may carry a derivative: a closure over one, ``lambda t: t * y``)
    if made and (any(differentiable(a) for a in args) or differentiable(fn) or
                 any(differentiable(v) for v in kwargs.values())):
        from ..errors import OpaqueCalleeError
        raise OpaqueCalleeError(
            f"{made} calls its function element by element from inside NumPy, so s2sad "
            "cannot follow the values that carry a derivative through it",
            fix="call the function on the arrays directly (NumPy operations broadcast), or loop "
                "over the elements in your own code")


# -- opaque callees -------------------------------------------------------------------------------
def _ufunc_method(fn):
    ufunc_method_name = hooks.ufunc_method_name
    return ufunc_method_name(fn)


def _opaque_message(fn, origin=None, text=None):
    full = _callee_ref(fn, text)
    if full is None:
        full = f"a {_object_name(fn)}"
    elif not isinstance(fn, (_types.FunctionType, _types.BuiltinFunctionType, type, np.ufunc)) \
            and not _ufunc_method(fn):
        full = f"{full} (of type {_type_name(fn)})"
    if numba_ufunc(fn):
        return (f"{full} is a Numba vectorize/guvectorize ufunc with no derivative rule, and it "
                f"returned a value that carries a derivative; s2sad differentiates @numba.njit "
                f"functions from their Python source, but not the element-wise kernel of a ufunc")
    if isinstance(fn, _types.FunctionType):
        # Python source exists, but in an installed package or the standard library: s2sad
        # differentiates the user's code and asks rules of the libraries it calls
        return (f"{full} is a Python function of an installed package (or the standard "
                f"library) with no derivative rule, and it returned a value that carries a "
                f"derivative; s2sad differentiates your own code and calls library code only "
                f"through rules")
    return (f"{full} has no Python source and no derivative rule, and it returned a value that "
            f"carries a derivative")


def _object_name(obj):
    """``ctypes._FuncPtr object 'cos'``: an object's type, and its own name where it has one."""
    name = getattr(obj, "__name__", None)
    return f"{_type_name(obj)} object" + (f" {name!r}" if isinstance(name, str) else "")


def _type_name(obj):
    t = type(obj)
    mod = t.__module__ or ""
    name = t.__name__ if "<locals>" in t.__qualname__ else t.__qualname__
    return name if mod in ("builtins", "") else f"{mod.split('.')[0]}.{name}"


def _callee_ref(fn, text=None):
    """How a user writes the callee ``fn``: its public path (``scipy.linalg.sqrtm``), else its
    spelling at the call site (``libm.cos``), else its module and name for a function or class;
    None for another object (a ctypes function, a ``np.vectorize`` object) seen without a call
    site."""
    ref = _ufunc_method(fn) or _public_ref(fn)
    if ref is not None:
        return ref
    if text:
        return text
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    if not isinstance(name, str) or not isinstance(
            fn, (_types.FunctionType, _types.BuiltinFunctionType, _types.MethodType, type)):
        return None
    mod = getattr(fn, "__module__", None) or ""
    return f"{mod.split('.')[0]}.{name}" if mod and mod != "builtins" else name


_ALTERNATIVES = {
    "numpy.frompyfunc": "np.frompyfunc's function is called element by element from inside "
                        "NumPy, where s2sad cannot follow it; call the function on the arrays "
                        "directly (NumPy operations broadcast), or loop over the elements in your "
                        "own code",
    "numpy.vectorize": "np.vectorize's function is called element by element from inside NumPy, "
                       "where s2sad cannot follow it; call the function on the arrays directly "
                       "(NumPy operations broadcast), or loop over the elements in your own code",
    "numpy.piecewise": "np.piecewise is not differentiated (its functions are called by NumPy); "
                       "write it with np.where or np.select, which are",
}


def _public_ref(fn):
    """A dotted name a user can write for ``fn``: the first public module on its module path
    that holds it (``scipy.linalg.sqrtm``, not ``scipy.linalg._matfuncs.sqrtm``); for a method
    of an object such a module holds, ``scipy.stats.norm.logpdf``.  None when there is none."""
    import sys
    owner = getattr(fn, "__self__", None)
    bound = owner is not None and not isinstance(owner, (_ModuleType, type))
    obj = owner if bound else fn
    parts = (getattr(fn, "__module__", None) or "").split(".")
    for k in range(1, len(parts) + 1):
        if parts[k - 1].startswith("_"):
            break
        mod = sys.modules.get(".".join(parts[:k]))
        if mod is None:
            continue
        name = getattr(obj, "__name__", None)
        if not (name and getattr(mod, name, None) is obj):
            name = next((a for a in dir(mod) if not a.startswith("_") and
                         getattr(mod, a, None) is obj), None)
        if name:
            return ".".join(parts[:k]) + f".{name}" + (f".{fn.__name__}" if bound else "")
    return None


def _rule_signature(fn):
    """The parameter list of ``fn`` as defrule takes it (``"b, a, x, axis=-1, zi=None"``) and
    the name of its first parameter; ``("x, /", "x")`` where Python cannot tell (C functions)."""
    import inspect
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return "x, /", "x"
    if not params or not params[0].name.isidentifier() or \
            params[0].kind not in (params[0].POSITIONAL_ONLY, params[0].POSITIONAL_OR_KEYWORD):
        return "x, /", "x"
    try:
        text = str(inspect.Signature(params))[1:-1]
    except ValueError:
        return "x, /", "x"
    if len(text) > 120 or "<" in text:               # (defaults without a readable text)
        return f"{params[0].name}, /", params[0].name
    return text, params[0].name


def _rule_skeleton(fn, text=None):
    ref = _callee_ref(fn, text) or f"<the {_object_name(fn)} you call>"
    alt = _ALTERNATIVES.get(ref)
    if alt is not None:
        return alt
    sig, x = _rule_signature(fn)
    return ("declare its derivative, e.g.\n\n"
            "    import s2sad\n"
            f"    s2sad.defrule({ref}, \"{sig}\",\n"
            f"                  vjp={{\"{x}\": \"g * <derivative of the output w.r.t. {x}>\"}})\n\n"
            "  (g is the output's adjoint, ans the output), or mark it non-differentiable with "
            f"s2sad.defzero({ref})")


def in_place_fix(call):
    """The fix for an in-place NumPy operation s2sad has no rule for (``a.fill(v)``,
    ``a.sort()``, ``np.copyto(a, b)``...), given its IR call site: the assignment s2sad follows
    that does the same, where there is one, else the general advice."""
    fn = call.fn
    method = type(fn).__name__ == "Method"              # (recv.name(...): recv is args[0])
    name = getattr(fn, "name", None) if not hasattr(fn, "obj") else \
        getattr(fn.obj, "__name__", None)
    args = [a if isinstance(a, str) and not a.startswith("_") else None for a in call.args]
    recv = (args[0] if args and method else None) or "a"
    first = (args[0] if args and not method else None) or "a"
    text = {
        "fill": f"write `{recv}[...] = v` (the same values, as an assignment s2sad follows)",
        "sort": f"write `{recv}[...] = np.sort({recv})` (or `{recv} = np.sort({recv})`)",
        "copyto": f"write `{first}[...] = src` (with where=: `{first}[...] = np.where(where, src, "
                  f"{first})`)",
        "putmask": f"write `{first}[...] = np.where(mask, values, {first})` (values shaped like "
                   f"{first})",
        "place": f"write `{first}[mask] = values` (values of the mask's length)",
        "shuffle": "write `p = rng.permutation(len(a)); a = a[p]`",
    }.get(name)
    if text is not None:
        return text
    return "compute the new value with an expression and assign it (e.g. `y = np.where(...)`, " \
        "`y[idx] = v`), or declare a rule with s2sad.defrule"


def check_opaque(value, site):
    """Raise if an opaque callee (no source, no rule), called with values that carry a
    derivative, produced a differentiable value or an iterator (whose values s2sad cannot see:
    ``itertools.chain(xs, ys)``...), or None: a function that returns None is called for its
    effect, which may be a change of an array in place (``_ = np.copyto(y, x)``, ``r = y.sort()``,
    ``np.put(...)`` inside an expression), as the same call on a line of its own is refused for
    at build time (classify.after_activity)."""
    if value is None:
        from ..errors import UnsupportedSyntaxError
        call = site.call
        fn = getattr(call.fn, "obj", None)
        name = getattr(call.fn, "text", None) or (f".{call.fn.name}" if hasattr(call.fn, "name")
                                                 else None) or getattr(fn, "__name__", "this call")
        raise UnsupportedSyntaxError(
            f"`{name}(...)` returned None: it is called for its effect on values that carry a "
            f"derivative, and s2sad has no rule for it (it may change an array in place, which "
            f"s2sad cannot see)", origin=site.origin,
            fix=in_place_fix(call))
    if hasattr(value, "__next__") and hasattr(value, "__iter__") and not isinstance(value, (str, bytes)):
        from ..errors import OpaqueCalleeError
        fn = getattr(site.call.fn, "obj", None)
        qual = getattr(fn, "__qualname__", None) or repr(fn)
        name = _ufunc_method(fn) or f"{getattr(fn, '__module__', None) or ''}.{qual}".lstrip(".")
        raise OpaqueCalleeError(
            f"{name} returned an iterator over values that carry a derivative; s2sad cannot follow "
            f"the values an iterator without Python source yields", origin=site.origin,
            fix="build the values with a loop or a comprehension instead (map, filter, zip, "
                "enumerate, functools.reduce, itertools.accumulate and itertools.chain are followed)")
    if differentiable(value):
        from ..errors import OpaqueCalleeError
        call = site.call
        fn = getattr(call.fn, "obj", None)
        text = getattr(call.fn, "text", None)
        mod = getattr(fn, "__module__", None) or ""
        if mod == "s2sad.runtime" and getattr(fn, "__name__", None) in ("call", "call_method",
                                                                       "pull"):
            # a derivative differentiated again through its call resolved at run time
            from ..errors import RUNTIME_CALL_SECOND_ORDER, UnsupportedSyntaxError, \
                runtime_call_second_order
            message, fix = RUNTIME_CALL_SECOND_ORDER
            first = call.args[0] if call.args else None
            name = first if isinstance(first, str) else None
            if fn.__name__ in ("call", "call_method") and first is not None:
                # (the callee, or the method's object, is a variable of the generated code
                # running the first derivative, named as the user named it, or a constant)
                import sys
                frame = sys._getframe(1).f_locals
                if name in frame or name is None and hasattr(first, "value"):
                    callee = frame[name] if name is not None else first.value
                    if fn.__name__ == "call_method":
                        meth = call.args[1] if len(call.args) > 1 else None
                        meth = getattr(meth, "value", None)
                        callee = getattr(callee, meth, None) if isinstance(meth, str) else None
                    if callee is not None:
                        message, fix = runtime_call_second_order(callee, name)
            raise UnsupportedSyntaxError(message, origin=site.origin, fix=fix)
        if mod.startswith("s2sad.rules.") or mod == "s2sad.runtime" or \
                mod.startswith("s2sad.runtime."):
            # a helper of s2sad's own generated code: a derivative of a derivative (hessian,
            # hvp, grad of grad) through a rule whose adjoint has no rule of its own
            table = mod.split(".")[-1] if mod.startswith("s2sad.rules.") else "runtime"
            raise OpaqueCalleeError(
                f"second derivatives through this call are not supported yet: its derivative "
                f"calls s2sad's helper `{getattr(fn, '__name__', fn)}` (the {table} rules), which "
                f"has no derivative rule of its own", origin=site.origin,
                fix="take the second derivative by differences of s2sad.grad (or jacfwd/jacrev "
                    "of a function whose gradient you write out), or write this call with "
                    "NumPy and scipy.special functions, whose second derivatives s2sad has")
        desc = _opaque_message(fn, text=text) if fn is not None else \
            f"`{site.origin.text}` calls something s2sad has no rule for, and it returned a value " \
            f"that carries a derivative"
        raise OpaqueCalleeError(desc, origin=site.origin, fix=_rule_skeleton(fn, text)
                                if fn is not None else "declare a rule with s2sad.defrule")


def not_receiver(value, obj, origin):
    """Refuse a method that changes its object and returns that same object (``return self``)
    when its result gets a name (``c.add(a).add(b)``, ``d = c.add(a)``): changes made through the
    second name would not reach the first one's derivative."""
    if value is obj and not _is_array(obj) and type(obj) not in (list, dict, tuple) and \
            differentiable(obj):
        from ..errors import UnsupportedSyntaxError
        raise UnsupportedSyntaxError(
            "this method returns its own object (`return self`), and the object is changed "
            "through that second name (chaining, or assigning the result); s2sad does not follow "
            "changes through such a second name",
            origin=origin,
            fix="call such methods one per statement (`c.add(a)` then `c.add(b)`) and keep using "
                "the object's own name")


def not_alias(value, args, origin):
    """Refuse a call that returned one of its own arguments when the result is changed in place
    later: the change would reach the argument under a name s2sad does not connect to it."""
    if type(value) in (int, float, complex, bool, str, tuple) or value is None:
        return
    for a in args:
        if a is value:
            from ..errors import UnsupportedSyntaxError
            raise UnsupportedSyntaxError(
                "this call returns one of its arguments (the same object), and the result is "
                "changed in place later; s2sad does not follow changes through such a second name",
                origin=origin,
                fix="change the object under its own name, or have the function return a copy "
                    "(`return x.copy()`)")


def _changes_in_place(value, op):
    """Whether ``value op= ...`` changes ``value`` itself (its type has ``__iadd__``... for the
    operator ``op``: an array, a list), rather than binding a new object."""
    return hasattr(type(value), "__i" + getattr(op, "__name__", "").strip("_") + "__")


def inplace_guard(value, op, name, other, fix, origin, arrays_only=False, *seen):
    """Before ``name op= ...`` (see classify/writes.py): refuse when ``value`` is an
    object that ``op=`` changes in place (an array, a list), because ``other``, read afterwards,
    may hold it or share its memory and s2sad makes a new value instead.  ``arrays_only``: other
    only shares elements with ``value``, which a list changed in place keeps.  ``seen``: the
    values of the names that may share it, when all are known here; then only a real sharing
    (:func:`shares`) refuses."""
    if _changes_in_place(value, op) and not (arrays_only and isinstance(value, (list, dict, set))) \
            and (not seen or shares(value, seen)):
        from ..errors import UnsupportedSyntaxError
        raise UnsupportedSyntaxError(
            f"`{name} {_AUG_TEXT.get(op, 'op')}= ...` changes `{name}` (a "
            f"{type(value).__module__}.{type(value).__qualname__}) in place, and it may be held by "
            f"{other} or share its memory (a row, an element, a function's result), which is read "
            f"afterwards; s2sad makes a new value for `{name}` and does not follow the change",
            origin=origin, fix=fix)


def item_inplace_guard(value, obj, key, op, name, other, origin, unknown=False, *seen):
    """Before ``obj[key] op= ...`` on a list or dict (see classify/writes.py): Python changes the
    item ``value`` in place and stores it back; s2sad stores a new value in ``obj[key]`` only.
    Refuse when ``value`` is an object that ``op=`` changes in place (an array, a list) and
    another item of ``obj`` holds it or shares its memory (``[np.zeros(3)] * 3``), or one of
    ``seen`` (the values of names read afterwards that may share it) does; with ``unknown``
    (such names not all bound here), whenever it is such an object."""
    attrs = None
    if not isinstance(obj, (list, dict)):
        attrs = getattr(obj, "__dict__", None) if not _is_array(obj) else None
        if not isinstance(attrs, dict):
            return                      # (an array: the item is written back into its memory)
    if not _changes_in_place(value, op):
        return
    if attrs is not None:               # ``o.w += v``: the object's other attributes
        rest = [v for k, v in attrs.items() if k != key]
    elif isinstance(obj, dict):
        rest = [v for k, v in obj.items() if k != key]
    else:
        i = key + len(obj) if type(key) is int and key < 0 else key
        rest = [v for j, v in enumerate(obj) if j != i] if type(i) is int else list(obj)
    if unknown or shares(value, rest) or shares(value, seen):
        from ..errors import UnsupportedSyntaxError
        holder = other if not shares(value, rest) else \
            "another attribute of the same object" if attrs is not None else \
            "another item of the same container"
        sym = _AUG_TEXT.get(op, "op")
        raise UnsupportedSyntaxError(
            f"`{name} {sym}= ...` changes the {type(value).__module__}."
            f"{type(value).__qualname__} in `{name}` in place, and {holder} may hold the same "
            f"object or share its memory (`[a] * n` makes n references to one array), which is "
            f"read afterwards; s2sad stores a new value in `{name}` and does not follow the "
            f"change", origin=origin,
            fix=f"write `{name} = {name} {sym} ...` (a new value), or give each item its own "
                f"array (`[np.zeros(3) for _ in range(n)]`)")


def attr_write_guard(obj, name, origin):
    """Before ``obj.name = v`` (v carrying a derivative, see classify/mutation.py): refuse when the
    class stores the attribute some other way than in the object (a property's setter, another
    descriptor with ``__set__``, its own ``__setattr__``): s2sad follows the value into
    ``obj.name`` itself, which is not where the class puts it."""
    cls = type(obj)
    how = None
    if isinstance(getattr(cls, "__setattr__", None), _FunctionType) and \
            not _is_dataclass_frozen(cls):      # (a Python __setattr__; C types' store plainly)
        how = f"its own `__setattr__` ({cls.__qualname__})"
    else:
        d = class_attribute(cls, name)
        if d is not _NOT_ON_CLASS and hasattr(type(d), "__set__") and not plain_slot(d):
            how = "a property's setter" if isinstance(d, property) else \
                f"a descriptor ({type(d).__qualname__})"
    if how is not None:
        from ..errors import UnsupportedSyntaxError
        raise UnsupportedSyntaxError(
            f"this line writes `.{name}` on a {cls.__qualname__}, whose class stores it through "
            f"{how}: s2sad follows the value into the attribute itself, not where the class "
            f"puts it", origin=origin,
            fix=f"call what the setter does directly (a method, or the attribute it writes: "
                f"`obj._{name} = ...`)")


_NOT_ON_CLASS = object()     # (class_attribute: no such attribute; a __getattr__ makes it)


def class_attribute(cls, name):
    """``name`` as the class defines it (a value, a property, a descriptor; not calling it), or
    ``_NOT_ON_CLASS``."""
    import inspect
    try:
        return inspect.getattr_static(cls, name)
    except AttributeError:
        return _NOT_ON_CLASS


def plain_slot(d):
    """Whether the class attribute ``d`` stores its value in the object as any attribute is
    stored (a ``__slots__`` member, a C type's field)."""
    return type(d).__name__ in ("member_descriptor", "getset_descriptor")


def _is_dataclass_frozen(cls):
    p = getattr(cls, "__dataclass_params__", None)
    return p is not None and getattr(p, "frozen", False)


def argument_inplace_guard(value, op, name, param, origin):
    """Before ``name op= ...`` where ``name`` is (or may be) the object the caller passed in as
    ``param`` (see classify/writes.py): refuse when ``op=`` changes that object in place (an
    array, a list, a dict, a set, a class with ``__iadd__``...).  Python changes the caller's
    object; the derivative makes a new value, so the caller would read the old one."""
    if _changes_in_place(value, op):
        from ..errors import ArgumentWriteError
        arg = f"the argument `{param}`" if param == name else \
            f"`{name}`, which is the argument `{param}`"
        raise ArgumentWriteError(
            f"`{name} {_AUG_TEXT.get(op, 'op')}= ...` changes {arg} (a "
            f"{type(value).__module__}.{type(value).__qualname__}, an object the caller passed in) "
            f"in place; s2sad makes a new value for `{name}` and does not follow the change back "
            f"to the caller", origin=origin, param=param,
            fix=f"write `{name} = {name} {_AUG_TEXT.get(op, 'op')} ...` and return the new value "
                f"if the caller needs it (or work on a copy: `{name} = {name}.copy()`)")


def shares(value, others, _depth=4):
    """Whether one of ``others`` is ``value``, holds it (as an item of a list, tuple, dict or set,
    an attribute, what a closure or bound method captured), or shares memory with it (an array
    and its views).  Values s2sad cannot look into (iterators, generators) count as sharing."""
    seen = set()
    todo = [(o, 0) for o in others]
    arr = value if isinstance(value, np.ndarray) or (
        _is_array(value) and not isinstance(value, np.generic)) else None
    while todo:
        o, d = todo.pop()
        if o is value:
            return True
        if o is None or isinstance(o, (*_SCALARS, str, bytes, np.generic, type, _ModuleType)) or \
                id(o) in seen:
            continue
        seen.add(id(o))
        if _is_array(o):
            if arr is not None and type(o) is type(arr) and \
                    array_module(o).may_share_memory(o, arr):
                return True
            if getattr(o, "dtype", None) is not None and o.dtype.kind == "O" and d < _depth:
                todo.extend((v, d + 1) for v in o.ravel().tolist())
            continue
        if d >= _depth:
            return True                 # (deeper than we look: assume it does)
        if isinstance(o, (list, tuple, set, frozenset)) or type(o) is LazyList:
            todo.extend((v, d + 1) for v in o)
        elif isinstance(o, dict):
            todo.extend((v, d + 1) for v in o.values())
            todo.extend((k, d + 1) for k in o)
        elif isinstance(o, (_types.MethodType,)):
            todo.append((o.__self__, d + 1))
        elif isinstance(o, _FunctionType):
            todo.extend((c.cell_contents, d + 1) for c in (o.__closure__ or ())
                        if _cell_full(c))
            todo.extend((v, d + 1) for v in (o.__defaults__ or ()))
        elif isinstance(o, _partial):
            todo.extend((v, d + 1) for v in (o.func, *o.args, *o.keywords.values()))
        elif hasattr(o, "__next__") or isinstance(o, (_types.GeneratorType, map, filter, zip)):
            return True                 # (an iterator: what it reads is not ours to see)
        elif hasattr(o, "__dict__") or hasattr(type(o), "__slots__"):
            vals = list(getattr(o, "__dict__", {}).values()) + \
                [getattr(o, n) for n in getattr(type(o), "__slots__", ()) if hasattr(o, n)]
            todo.extend((v, d + 1) for v in vals)
    return False


def _cell_full(c):
    try:
        c.cell_contents
        return True
    except ValueError:
        return False


def share_guard(value, name, others, fix, origin, *seen):
    """Before a write into ``value`` (the object of ``name``: an item or slice write, an in-place
    method; see classify/writes.py): refuse when one of ``seen`` (the values of the
    names ``others``, read afterwards) holds it or shares its memory; s2sad's reverse sweep would
    give their adjoints to the object as it was before the write."""
    import sys
    frame_locals = None
    for k, other in enumerate(others):
        if k < len(seen):
            v = seen[k]
        else:                       # (a name not surely bound here: look it up, if it is)
            if frame_locals is None:
                frame_locals = sys._getframe(1).f_locals
            if other not in frame_locals:
                continue
            v = frame_locals[other]
        if shares(value, [v]):
            from ..errors import UnsupportedSyntaxError
            what = f"`{other}`" if not other.startswith("_") else "a value read afterwards"
            obj = f"`{name}`" if not name.startswith("_") else "an object taken from a container"
            raise UnsupportedSyntaxError(
                f"this line writes into {obj} (a {type(value).__module__}."
                f"{type(value).__qualname__}) while {what} shares its memory or holds it (a view, "
                f"e.g. a slice, `.T`, `.reshape`, `np.asarray`, a row; the same array, e.g. "
                f"`.astype(t, copy=False)`, `np.array(a, copy=None)`, `.conj()` of a real array; a "
                f"list or object that holds it) and is read afterwards; s2sad does not follow the "
                f"write into {what}",
                origin=origin, fix=fix)


_AUG_TEXT = {_operator.add: "+", _operator.sub: "-", _operator.mul: "*", _operator.truediv: "/",
             _operator.floordiv: "//", _operator.pow: "**", _operator.matmul: "@",
             _operator.mod: "%", _operator.and_: "&", _operator.or_: "|", _operator.xor: "^",
             _operator.lshift: "<<", _operator.rshift: ">>"}


def real_only(x, name, origin):
    """Refuse a complex ``x`` that carries a derivative given to ``name`` (``np.sign``), whose
    rule is that of a piecewise constant: right for real values, not for complex ones."""
    if is_complex(x):
        from ..errors import UnsupportedSyntaxError
        raise UnsupportedSyntaxError(
            f"{name} of a complex value that carries a derivative: s2sad gives {name} the "
            f"derivative of a piecewise constant, which holds for real values only (for complex "
            f"z it is z / |z|, which turns as z moves)",
            origin=origin,
            fix="write z / np.abs(z) (np.where(z == 0, 0, z / np.where(z == 0, 1, np.abs(z))) "
                "where z may be 0), whose derivative s2sad has")


def no_update(rec, name, origin):
    """Refuse a method call that changed ``name``, an object the caller passed in."""
    if rec is not None and rec[0] == "derived" and rec[-1]:
        carries = getattr(rec[-1], "carries", None)
        if carries == ():
            return          # (it changed only attributes that now hold no float: an int counter)
        what = "with values that carry a derivative" if not carries else \
            ("and leaves values that carry a derivative in " +
             ", ".join(f"`{name}.{a}`" for a in carries))
        raise ArgumentWriteError(
            f"this line calls a method that changes `{name}`, an object the caller passed in, "
            f"{what}; s2sad does not follow such changes back to the caller", origin=origin,
            param=name,
            fix=f"make the object inside the function, or return the new values instead of "
                f"keeping them on `{name}`")


# -- exceptions that cut a method short after it may have changed its object -----------------------
def mark_partial(exc, fn):
    """``fn``, a method differentiated as an update of its object (its derivative returns the
    object's new state), raised ``exc``: what the method changed before the raise is on the
    object, and its derivative went with the raise.  Marks ``exc`` so that a handler in
    generated code that catches it refuses (:func:`caught`); an exception that reaches the user
    is left as it was."""
    try:
        if getattr(exc, "_s2sad_partial", None) is None:
            exc._s2sad_partial = getattr(fn, "__qualname__", None) or repr(fn)
    except Exception:               # (an exception type that takes no attributes)
        pass


def caught(origin):
    """First line of an ``except`` block in generated code whose ``try`` body calls code s2sad
    differentiates: refuse an exception that :func:`mark_partial` marked."""
    import sys
    name = getattr(sys.exc_info()[1], "_s2sad_partial", None)
    if name is not None:
        _refuse_partial("an except clause of this try caught", name, origin)


def _refuse_partial(how, name, origin):
    """The refusal of :func:`caught` and :class:`exit_check`: ``how`` the exception that cut
    ``name`` short was stopped."""
    from ..errors import S2SADError
    raise S2SADError(f"{how} an exception raised inside `{name}`, a method that changes its "
                     f"object, which it may have changed before it raised; s2sad cannot "
                     f"differentiate half of a call", origin=origin,
                     fix=f"test for the failure before calling `{name}` and skip the call, or "
                         f"catch the exception inside the method")


class exit_check:
    """The context manager of a ``with`` in generated code whose body calls code s2sad
    differentiates: ``ctx`` as it is, except that when ``ctx``'s ``__exit__`` swallows an
    exception that :func:`mark_partial` marked (``contextlib.suppress``, a handler of the user's
    own), it refuses, as :func:`caught` does for an ``except`` clause.  An exception that goes on
    is left as it was."""
    __slots__ = ("ctx", "origin")

    def __init__(self, ctx, origin):
        self.ctx = ctx
        self.origin = origin

    def __enter__(self):
        return type(self.ctx).__enter__(self.ctx)

    def __exit__(self, typ, exc, tb):
        swallowed = type(self.ctx).__exit__(self.ctx, typ, exc, tb)
        name = getattr(exc, "_s2sad_partial", None) if swallowed else None
        if name is not None:
            _refuse_partial("the context manager of this with statement swallowed", name,
                            self.origin)
        return swallowed


def _same_shape(got, want):
    """Whether a derivative of shape ``got`` fits a value of shape ``want`` (None: a number; a
    number's derivative may be a 0-d or one-element array)."""
    return got == want or (want is None and got in ((), (1,))) or (want == () and got is None)


def rule_adjoint(adj, x, rule, param, origin):
    """The adjoint a user's rule (``s2sad.defrule``) gave its parameter ``param``, whose value is
    ``x``, checked when it runs (``origin``: the site, or a function that finds it, called only
    for the error): an array adjoint of another shape than ``x`` (or any array for
    a number ``x`` but one with one element) would be broadcast or summed into the gradient
    without an error (``np.sum(g * ...)`` for an array argument: every element got the total)."""
    if adj is None or (type(adj) is float and adj == 0.0):
        return adj
    xs, gs = getattr(x, "shape", None), getattr(adj, "shape", None)
    if _same_shape(gs, xs):
        return adj
    from ..errors import RuleError
    raise RuleError(
        f"the rule of {rule} gave `{param}` an adjoint of shape {gs if gs is not None else '()'} "
        f"(a {type(adj).__name__}), and `{param}` has shape {xs if xs is not None else '()'}; an "
        f"adjoint has its argument's shape (s2sad would broadcast it into the gradient)",
        origin=origin() if callable(origin) else origin,
        fix=f"return one value per element of `{param}` from the vjp template (e.g. `g * "
            f"dydx` rather than `np.sum(g * dydx)`), or declare the rule with broadcast=True if "
            f"the function broadcasts its arguments")


def generated_origin():
    """The user's line behind the innermost frame of generated code on the stack (a dynamic
    call's rule runs from there), else the user's line that called into s2sad."""
    import sys
    f = sys._getframe(1)
    while f is not None:
        o = hooks.origin_of(f.f_code.co_filename, f.f_lineno) if hooks.origin_of else None
        if o is not None:
            return o
        f = f.f_back
    from ..errors import caller_origin
    return caller_origin()


def rule_tangent(t, ans, rule, origin):
    """The tangent a user's rule gave its result ``ans`` in forward mode, checked when it runs
    (:func:`rule_adjoint`'s counterpart): an array of another shape than an array or number
    result would be broadcast on without an error.  Containers are not checked."""
    if t is None or (type(t) is float and t == 0.0) or isinstance(ans, (tuple, list, dict)):
        return t
    rs, ts = getattr(ans, "shape", None), getattr(t, "shape", None)
    if _same_shape(ts, rs):
        return t
    from ..errors import RuleError
    raise RuleError(
        f"the rule of {rule} gave its result a tangent of shape {ts if ts is not None else '()'}"
        f", and the result has shape {rs if rs is not None else '()'}; a tangent has its "
        f"result's shape (s2sad would broadcast it on)",
        origin=origin() if callable(origin) else origin,
        fix="return one value per element of the result from the jvp template, or declare the "
            "rule with broadcast=True if the function broadcasts its arguments")
