"""Call-site classification: every call site of the IR gets exactly one class.

* ``primitive``: the callee has a rule; ``info["bound"]`` maps the rule's parameters to operands.
* ``derived``: a Python function with source; s2sad recurses into it.
* ``zero``: the callee's result carries no derivative (declared, or a shape/dtype attribute).
* ``dynamic``: the callee is only known at run time (a method on a value of unknown type, a
  function held in a variable); the runtime classifier decides per call and caches its answer.
* ``opaque``: no source and no rule; allowed as long as no differentiable value comes out of it
  (checked at run time when an argument carries a derivative).
* ``inactive``: set after activity analysis on sites where no argument carries a derivative.
"""
import functools
import inspect
import operator

from . import ir, runtime
from .errors import ArgumentWriteError, RuleError, UnsupportedSyntaxError
from .frontend.analysis import _changed_in_place, _made_again_before, join, operand_kind
from .frontend.analysis import positions as _positions
from .rules import registry

_S2SAD_MODULE_PREFIX = __name__.split(".")[0] + "."
_ZERO_ATTRS = {"shape", "ndim", "size", "dtype", "itemsize", "nbytes", "strides", "flags",
               "device", "base", "__class__"}


def _is_user_function(obj):
    from .runtime import _is_python
    return _is_python(obj)


def _bind_rule(rule, call, origin):
    """Bind a call's operands to a rule's parameters; defaults become constant operands."""
    recv = ()
    if getattr(rule, "receiver", False) and isinstance(call.fn, ir.Static):
        recv = (ir.Const(call.fn.obj.__self__),)    # a bound method's object (rule's ``self``)
    try:
        ba = rule.signature.bind(*recv, *call.args, **dict(call.kwargs))
    except TypeError as e:
        raise RuleError(f"the call to {rule.name} does not match its rule's parameters "
                        f"({', '.join(rule.signature.parameters)}): {e}", origin=origin,
                        fix="check the call's arguments against the function's documentation")
    bound = dict(ba.arguments)
    for name, p in rule.signature.parameters.items():
        if name in bound:
            continue
        if p.kind == p.VAR_POSITIONAL:
            bound[name] = ()
        elif p.kind == p.VAR_KEYWORD:
            bound[name] = {}
        else:
            bound[name] = ir.Const(p.default)
    return bound


def _diff_vars(rule, bound):
    out = []
    for p in rule.differentiable:
        v = bound.get(p)
        if isinstance(v, tuple):
            for e in v:
                out += ir.operand_vars(e)
        elif isinstance(v, dict):
            for e in v.values():
                out += ir.operand_vars(e)
        elif v is not None:
            out += ir.operand_vars(v)
    return out


_ARRAY_MAKERS = {"zeros", "ones", "empty", "full", "eye", "identity", "arange", "linspace",
                 "zeros_like", "ones_like", "empty_like", "full_like", "tri", "indices",
                 "argmax", "argmin", "argsort", "argwhere", "nonzero", "floor", "ceil", "round",
                 "sign", "isnan", "isinf", "isfinite", "where", "searchsorted", "digitize",
                 "greater", "less", "equal", "not_equal", "greater_equal", "less_equal",
                 "logical_and", "logical_or", "logical_not", "logical_xor", "floor_divide"}


def _use_rule(call, rule, origin):
    """Classify a call site that has a rule: zero, or primitive with its arguments bound."""
    call.rule = rule
    if rule.zero:
        call.cls = "zero"
        call.info["diff_vars"] = []
        return
    call.cls = "primitive"
    bound = _bind_rule(rule, call, origin)
    call.info["bound"] = bound
    call.info["diff_vars"] = _diff_vars(rule, bound)
    call.info["view"] = rule.view


def _result_kind(call, kinds):
    cls, rule = call.cls, call.rule
    arg_kinds = [operand_kind(a, kinds) for a in call.args]
    if "o" in kinds.values() and isinstance(call.fn, ir.Static) and call.fn.obj is operator.getitem \
            and isinstance(call.args[0], str) and len(call.args) == 2:
        # t[k] of a tuple/list display whose element k is an object with Python operators
        # (``s, h = s0, 0.1`` unpacks through such a display)
        elems = kinds.get(("elements", call.args[0]))
        idx = call.args[1]
        if isinstance(idx, ir.Index) and len(idx.parts) == 1:
            idx = idx.parts[0]
        if isinstance(elems, dict) and isinstance(idx, ir.Const):
            try:
                if elems.get(idx.value) == "o":
                    return "o"
            except TypeError:                   # an unhashable key
                pass
        elif elems is not None and isinstance(idx, ir.Const) and isinstance(idx.value, int) and \
                -len(elems) <= idx.value < len(elems) and elems[idx.value] == "o":
            return "o"
    if call.info.get("operator"):
        # u + v on such objects is (most likely) one of them again; a[i] is anything
        return "?" if call.fn.obj is operator.getitem else "o"
    if cls == "dynamic" and isinstance(call.fn, ir.Static) and isinstance(call.fn.obj, type) and \
            runtime.class_has_operators(call.fn.obj):
        return "o"                      # a constructor of such a class
    if cls in ("derived", "dynamic") and "o" in arg_kinds:
        # a function of such objects most likely returns one (if not, the operators it meets
        # are decided at run time all the same, only more slowly)
        return "o"
    if cls == "primitive":
        k = rule.kind
        if k == "same":
            if arg_kinds and all(a in ("f", "i") for a in arg_kinds):
                return "f" if "f" in arg_kinds else "i"
            if "a" in arg_kinds:
                return "a"
            return "?"
        if k == "getitem":
            if arg_kinds and arg_kinds[0] == "c" and len(call.args) == 2 and \
                    isinstance(call.args[1], ir.Index) and not call.args[1].is_tuple and \
                    isinstance(call.args[1].parts[0], ir.Slice):
                return "c"              # a slice of a list or tuple is one
            return "a" if arg_kinds and arg_kinds[0] == "a" else "?"
        return {"array": "a", "float": "f", "any": "?", "container": "c", "int": "i",
                "complex": "z"}.get(k, "?")
    if cls == "zero":
        if isinstance(call.fn, ir.Attr):
            return "i"
        fn_ = getattr(rule, "fn", None)
        mod = getattr(fn_, "__module__", None) or ""
        if isinstance(call.fn, ir.Static) and getattr(fn_, "__name__", "") in _ARRAY_MAKERS and \
                (mod.startswith("numpy") or mod.startswith("cupy")):
            return "a"                  # np.zeros, np.empty_like, np.argmax...: arrays
        return "?"                      # (not get_array_module: that returns a module)
    return "?"


_NOT_ITERATORS = {"a", "c", "f", "i", "z"}
_NUMBERS = {"a", "f", "i", "z"}
_ITER_MAKERS_RT = {runtime.izip, runtime.ienumerate, runtime.ireversed, runtime.iiter}
_TAKES_FUNCTIONS = {sorted, min, max, functools.partial, functools.reduce, runtime.make_closure,
                    runtime.apply}
_SEQ_OPS = {operator.add: runtime.seq_add, operator.iadd: runtime.seq_add,
            operator.mul: runtime.seq_mul, operator.imul: runtime.seq_mul}
_NEW_OBJECT_MAKERS = {list, dict, tuple, set, runtime.build_list, runtime.build_dict,
                      runtime.build_tuple}


def _callable_object(obj):
    """A functools.partial, or an instance of a class whose ``__call__`` is user Python."""
    import functools
    if isinstance(obj, functools.partial):
        return True
    if isinstance(obj, type) or inspect.isroutine(obj):
        return False
    call = getattr(type(obj), "__call__", None)
    return inspect.isfunction(call) and _is_user_function(call)


def _hashable(obj):
    try:
        hash(obj)
        return True
    except TypeError:
        return False


def _key_may_be_items(call, kinds):
    """``x[key]`` where x's kind is unknown (it may be np.r_/np.c_/np.mgrid... held in a
    variable or passed in) and the key reads a variable that may carry a derivative: the items of
    an index trick, whose derivatives a plain subscript would drop."""
    if len(call.args) != 2 or call.kwargs:
        return False
    recv, key = call.args
    if isinstance(recv, str):
        if kinds.get(recv) != "?":
            return False
    elif not (isinstance(recv, ir.Const) and operand_kind(recv, kinds) == "?"):
        return False
    one = key.parts[0] if isinstance(key, ir.Index) and len(key.parts) == 1 else key
    if isinstance(one, ir.Const) and isinstance(one.value, str) and \
            any(c in one.value for c in ",;"):
        return True         # r["a, b"]: a matrix of the variables the string names (refused)
    return any(kinds.get(v, "i") != "i" for v in ir.operand_vars(key))


def _route_subscript(call):
    """``x[a, 0:n]`` as ``runtime.subscript(x, (True, "vs"), a, 0, n, None)``."""
    recv, key = call.args
    parts = key.parts if isinstance(key, ir.Index) else [key]
    layout, flat = "", []
    for p in parts:
        if isinstance(p, ir.Slice):
            layout += "s"
            flat += [q if q is not None else ir.Const(None) for q in (p.lower, p.upper, p.step)]
        else:
            layout += "v"
            flat.append(p)
    is_tuple = isinstance(key, ir.Index) and key.is_tuple
    call.fn = ir.Static(runtime.subscript, "_rt.subscript")
    call.args = [recv, ir.Const((is_tuple, layout))] + flat


def classify_call(call, kinds, origin):
    fn = call.fn
    call.info = {}
    if isinstance(fn, ir.Static):
        obj = fn.obj
        if obj is runtime.apply or obj is runtime.init_into or obj is runtime.DerivedStub.bwd or \
                isinstance(getattr(obj, "__self__", None), runtime.DerivedStub):
            # (derived callees inside generated code are stubs: seen through at run time)
            call.cls = "dynamic"
            call.info["diff_vars"] = call.reads()
            return
        if _hashable(obj) and obj in runtime._DUNDERS and not call.kwargs and \
                (any(operand_kind(a, kinds) == "o" for a in call.args) or
                 obj is operator.getitem and isinstance(call.args[0], ir.Const) and
                 runtime.kind_of(call.args[0].value) == "o"):
            # an operator on an object of a class with Python __add__/__radd__/__getitem__...:
            # the methods are differentiated at run time
            key = call.args[1] if obj is operator.getitem and len(call.args) == 2 else None
            if isinstance(key, ir.Index) and not key.is_tuple and len(key.parts) == 1 and \
                    not isinstance(key.parts[0], ir.Slice):
                call.args[1] = key.parts[0]     # o[x]: x an argument, its adjoint routed back
            call.cls = "dynamic"
            call.info["diff_vars"] = call.reads()
            call.info["operator"] = True
            return
        if obj is operator.getitem and _key_may_be_items(call, kinds):
            _route_subscript(call)
            obj = call.fn.obj
        rule = registry.lookup(obj)
        if _hashable(obj) and obj in _SEQ_OPS and len(call.args) == 2 and not call.kwargs:
            ks = {operand_kind(a, kinds) for a in call.args}
            if "c" in ks and "a" not in ks:
                # + or * of a list or tuple: concatenation / repetition (where the kinds are not
                # known, the arithmetic rule refuses lists at run time: runtime.unbroadcast)
                rule = registry.lookup(_SEQ_OPS[obj])
        if rule is not None:
            _use_rule(call, rule, origin)
            return
        if _is_user_function(obj):
            call.cls = "derived"
            try:
                sig = inspect.signature(obj, follow_wrapped=False)
                ba = sig.bind(*call.args, **dict(call.kwargs))
            except TypeError as e:
                raise RuleError(f"the call to {obj.__qualname__} does not match its signature: {e}",
                                origin=origin, fix="fix the call's arguments")
            ba.apply_defaults()
            callargs = []
            if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in sig.parameters.values()) \
                    or obj.__closure__:
                # *args/**kwargs and closures are bound at run time
                call.cls = "dynamic"
                call.info["diff_vars"] = call.reads()
                return
            for name, p in sig.parameters.items():
                v = ba.arguments[name]
                callargs.append(v if isinstance(v, (str, ir.Const, ir.Index)) else ir.Const(v))
            call.info["callee"] = obj
            call.info["callargs"] = callargs
            call.info["diff_vars"] = [v for a in callargs for v in ir.operand_vars(a)]
            return
        if inspect.ismethod(obj) and _is_user_function(obj.__func__) or \
                getattr(obj, "__s2sad_jvp__", False):
            # a classmethod / bound method read statically; s2sad.jvp (runtime.jvp_function)
            call.cls = "dynamic"
            call.info["diff_vars"] = call.reads()
            return
        if isinstance(obj, type) and runtime.constructible(obj) or _callable_object(obj):
            # a user class: its __init__ is differentiated; a functools.partial or an object with
            # a Python __call__ (a model) held in a global: seen through at run time
            call.cls = "dynamic"
            call.info["diff_vars"] = call.reads()
            return
        call.cls = "opaque"
        call.info["diff_vars"] = []
        return
    if isinstance(fn, (ir.Method, ir.Attr)):
        recv_kind = operand_kind(call.args[0], kinds)
        name = fn.name
        if recv_kind == "a":
            if isinstance(fn, ir.Attr) and name in _ZERO_ATTRS:
                call.cls = "zero"
                call.info["diff_vars"] = []
                return
            rule = (registry.lookup_attr(name) if isinstance(fn, ir.Attr)
                    else registry.lookup_method(name))
            if rule is not None:
                _use_rule(call, rule, origin)
                return
            call.cls = "opaque"
            call.info["diff_vars"] = []
            return
        if recv_kind in ("i",):
            call.cls = "opaque"
            call.info["diff_vars"] = []
            return
        if recv_kind == "c" and isinstance(fn, ir.Method):
            rule = registry.lookup_container_method(name)
            if rule is not None:
                _use_rule(call, rule, origin)
                return
        if isinstance(fn, ir.Attr) and name in _ZERO_ATTRS:
            call.cls = "zero"
            call.info["diff_vars"] = []
            return
        call.cls = "dynamic"
        call.info["diff_vars"] = call.reads()
        if isinstance(fn, ir.Method) and isinstance(call.args[0], str) and \
                (recv_kind in ("?", "o") or recv_kind == "c" and name in runtime._IN_PLACE_METHODS):
            # a method of an object may update the object: the call also redefines it
            call.info["mutates"] = call.args[0]
        return
    call.cls = "dynamic"
    call.info["diff_vars"] = call.reads()


def _copy_aliases(fn, before=None, pos=None):
    """Classes of variables bound to the same object by plain copies (``b = a``).  With
    ``before`` (a statement), only copies that can run before it count."""
    parent = {}

    def find(a):
        while parent.get(a, a) != a:
            a = parent[a]
        return a
    for s in ir.walk(fn.body):
        if isinstance(s, ir.Assign) and isinstance(s.value, str):
            if before is not None:
                i, loops = pos[id(s)]
                j, wloops = pos[id(before)]
                if i > j and not (loops & wloops):
                    continue
            ra, rb = find(s.target), find(s.value)
            if ra != rb:
                parent[ra] = rb
    classes = {}
    for v in list(parent):
        classes.setdefault(find(v), set()).add(v)
    for root, members in classes.items():
        members.add(root)
    return {v: members for members in classes.values() for v in members}


def _read_via_copies(fn, v, changed, reads):
    """Whether ``v`` is read, directly or through plain copies of it made at any point (``d5 = v``
    after ``changed`` was written in place through another name: ``d5`` is the changed object
    too, but the reverse sweep would route its adjoint around the write).  Copies of ``changed``
    itself do not count."""
    copies = {}
    for t in ir.walk(fn.body):
        if isinstance(t, ir.Assign) and isinstance(t.value, str):
            copies.setdefault(t.value, []).append(t.target)
    seen, todo = {changed}, [v]
    while todo:
        u = todo.pop()
        if u in seen:
            continue
        seen.add(u)
        if reads.get(u):
            return True
        todo.extend(copies.get(u, ()))
    return False


def check_mutation(fn, varied):
    """Refuse in-place writes s2sad cannot differentiate correctly: writes of values that carry a
    derivative into a parameter (the caller's object), and writes through one name into a list or
    array that another name still refers to."""
    pos = _positions(fn)
    all_aliases = _copy_aliases(fn)
    reads = {}
    for s in ir.walk(fn.body):
        if isinstance(s, ir.Assign) and isinstance(s.value, str):
            continue                              # a copy only passes the object on
        for v in s.reads():
            reads[v] = reads.get(v, 0) + 1
    views = _view_sources(fn)
    all_params = set(fn.params) - {getattr(fn, "constructed", None)}
    rebound = _rebound_params(fn, all_params)
    from .frontend.analysis import _mutated
    _check_pending_iterators(fn, pos, varied)
    _check_loop_sources(fn)
    _check_lazy(fn, pos)
    _check_bound_methods(fn, pos)
    guards = []
    from .shared_writes import check_writes_shared
    check_writes_shared(fn, pos, varied, guards)
    for s in ir.walk(fn.body):
        # a parameter rebound to a new object (``args = list(args)``) is no longer the caller's
        rb = rebound.get(id(s), set())
        m = _mutated(s)
        params = all_params - ({m} & rb)
        if m is not None:
            call = s.value if isinstance(s, ir.Assign) else s.call
            group = all_aliases.get(m, {m})
            if group & params and any(v in varied for v in call.reads()):
                # whether the method changes the caller's object is known only when it runs
                call.info["argument"] = sorted(group & params)[0]
        permutes = False
        _check_augmented(fn, s, pos, reads)
        _check_augmented_shared(fn, s, pos, guards)
        if isinstance(s, ir.SetItem) and isinstance(s.obj, str):
            hot = any(v in varied for v in ir.operand_vars(s.value))
            obj = s.obj
        elif isinstance(s, ir.Mutate):
            hot = any(v in varied for v in s.call.reads()[1:])
            obj = s.obj
        elif m is not None and isinstance(call.fn, ir.Method) and call.fn.name in _PERMUTING:
            # xs.sort() / xs.reverse(): every other name of xs sees the new order (the caller's
            # too, for an argument)
            hot, obj, permutes = m in varied, m, True
        else:
            continue
        params = all_params - ({obj} & rb)
        group = all_aliases.get(obj, {obj})
        if not hot:
            # a constant written in place: harmless, unless another name for the same object
            # carries derivatives (the reverse sweep would read the changed object through it),
            # or the object is a view of one that does
            cold_view = any(isinstance(t, ir.Assign) and t.target in group and
                            isinstance(t.value, ir.Call) and _is_view_call(t.value) and
                            any(isinstance(a, str) and a in varied for a in t.value.args)
                            for t in ir.walk(fn.body)) and isinstance(s, ir.SetItem) and \
                not getattr(s, "attr", None)
            if not cold_view and (len(group) < 2 or not any(v in varied for v in group)):
                continue
            if not cold_view and obj not in params and group & params:
                p = sorted(group & params)[0]
                raise ArgumentWriteError(
                    f"this line writes into `{obj}`, which is the argument `{p}` (an object the "
                    f"caller passed in, that carries a derivative); s2sad does not follow writes "
                    f"into an argument through another name", origin=s.origin, param=p,
                    fix=f"work on a copy (`{obj} = {p}.copy()`, `list({p})`) and return the result "
                        f"if the caller needs it")
        if permutes and group & params:
            p = sorted(group & params)[0]
            raise ArgumentWriteError(
                f"this line reorders `{p}`, a list the caller passed in, in place; s2sad does not "
                f"follow such changes back to the caller", origin=s.origin, param=p,
                fix=f"sort a new list instead (`{p} = sorted({p}, ...)`, `{p} = {p}[::-1]`), and "
                    f"return it if the caller needs it")
        root = _taken_from_param(fn, obj, set(fn.params)) if permutes else None
        if root is not None:        # (self.items.sort() in a method: not an update s2sad follows)
            raise UnsupportedSyntaxError(
                f"this line reorders `{root[1]}`, a list taken from `{root[0]}` (an argument), in "
                f"place; s2sad does not follow such changes back to the caller", origin=s.origin,
                fix=f"sort a new list and store that (`{root[1]} = sorted({root[1]}, ...)`), or "
                    f"return it")
        if group & params:
            p = sorted(group & params)[0]
            what = f"`{p}.{s.attr}`" if getattr(s, "attr", None) else f"the argument `{p}`"
            raise ArgumentWriteError(
                f"this line writes a value that carries a derivative into {what}, an object the "
                f"caller passed in; s2sad does not differentiate writes into arguments",
                origin=s.origin, param=p,
                fix=(f"return the new value instead of storing it on `{p}`" if getattr(s, "attr", None)
                     else f"work on a copy (e.g. `{p} = {p}.copy()` or `list({p})`) and return the "
                          f"result, or return the new value instead of storing it"))
        group = _copy_aliases(fn, s, pos).get(obj, {obj})
        others = sorted(v for v in group if v != obj and _read_via_copies(fn, v, obj, reads))
        made = defining_call(fn, obj)
        if made is not None and isinstance(made.fn, ir.Attr) and isinstance(made.args[0], str):
            owner, name = made.args[0], made.fn.name
            again = [t for t in ir.walk(fn.body) if isinstance(t, ir.Assign) and
                     isinstance(t.value, ir.Call) and t.value is not made and
                     isinstance(t.value.fn, ir.Attr) and t.value.fn.name == name and
                     t.value.args[0] == owner]
            if again:
                raise UnsupportedSyntaxError(
                    f"this line changes `{owner}.{name}` in place with a value that carries a "
                    f"derivative, and the function reads `{owner}.{name}` again; s2sad does not "
                    f"follow derivatives through state kept on objects", origin=s.origin,
                    fix="keep the values in a local list and read them from there")
        is_view = made is not None and _shares_memory_call(fn, made)
        if not is_view:
            # bound in several places (branches): a view on any of them is enough
            made = next((t.value for t in ir.walk(fn.body) if isinstance(t, ir.Assign) and
                         t.target in all_aliases.get(obj, {obj}) and isinstance(t.value, ir.Call)
                         and _shares_memory_call(fn, t.value) and any(isinstance(a, str)
                                                                      for a in t.value.args)), made)
            is_view = made is not None and _shares_memory_call(fn, made)
        if is_view and not getattr(s, "attr", None) and any(isinstance(a, str) for a in made.args):
            src = next(a for a in made.args if isinstance(a, str))
            how = made.rule.name if made.rule is not None else f".{made.fn.name}"
            what = f"`{obj}`, a view of `{src}` (made by {how})" if not obj.startswith("_") else \
                f"a value taken from `{src}` (by {how}) that shares memory with it"
            raise UnsupportedSyntaxError(
                f"this line writes into {what}; s2sad does not follow writes through views",
                origin=s.origin,
                fix=f"write into `{src}` itself with one index (e.g. `{src}[i, j] = ...` for an "
                    f"array), or build the nested values as new lists/arrays" if obj.startswith("_")
                else f"write into `{src}` itself with an index (e.g. `{src}[...] = ...`), or make "
                     f"`{obj}` a copy")
        if getattr(s, "attr", None):
            # an object taken out of a container and changed: the container still holds it
            others += sorted(c for c in views.get(obj, ()) if reads.get(c) and c not in others)
        if others:
            other = f"`{others[0]}`" if not others[0].startswith("_") else \
                "the list, tuple or dict it was taken from"
            what = f"`{obj}`" if not obj.startswith("_") else "an object taken from a container"
            raise UnsupportedSyntaxError(
                f"{what} is changed in place while {other} refers to the same object; "
                f"s2sad does not follow derivatives through such aliases", origin=s.origin,
                fix=f"make a copy (`{obj} = {obj}.copy()`, `list(...)`, `copy.copy(...)`) before "
                    f"changing it, or build a new object" if not obj.startswith("_") else
                    "take the object into a local variable, copy it (`copy.copy(...)`), change the "
                    "copy and put it back, or build a new object")

    _insert_guards(fn.body, dict(guards))


_PERMUTING = {"sort", "reverse"}      # in-place list methods s2sad follows (rules.python_rules)


def _taken_from_param(fn, var, params):
    """(parameter, expression) when ``var`` was read out of a parameter (``var = p.items``,
    ``var = p[0]``, chains of those), else None."""
    seen, path = set(), ""
    while var not in params and var not in seen:
        seen.add(var)
        made = defining_call(fn, var)
        if made is None or not made.args or not isinstance(made.args[0], str):
            return None
        if isinstance(made.fn, ir.Attr):
            path = f".{made.fn.name}{path}"
        elif isinstance(made.fn, ir.Static) and made.fn.obj is operator.getitem:
            path = f"[...]{path}"
        else:
            return None
        var = made.args[0]
    return (var, var + path) if var in params else None
def _check_pending_iterators(fn, pos, varied):
    """An object changed in place while an iterator over it (zip, enumerate, iter, reversed, map,
    filter, a generator, a dict view) has yet to be used up: Python's iterator then yields the
    changed object's values, whose adjoints s2sad would send to the positions the object had
    when the iterator was made (and ``a *= y`` on an array, which s2sad rebinds, would not even
    give Python's values).  Refused, whatever name the change goes through: another name bound
    to the same object, a join of branches, a container or attribute it was put in, a function
    that returned it (objects.Objects follows these)."""
    from .frontend.analysis import may_run_after
    from .objects import Objects, iterator_sources
    makers = [(s, made) for s in ir.walk(fn.body) if (made := iterator_sources(s)) is not None]
    if not makers:
        return
    objs = Objects(fn)
    stmts = list(ir.walk(fn.body))
    chains = _block_chains(fn)
    for s in stmts:
        changed, how = _changed_in_place(fn, s)
        rebound = s.target if isinstance(s, ir.Assign) else None
        if changed is None and rebound is None:
            continue
        hit = objs.of(changed) if changed is not None else set()
        for made, (call, names, late) in makers:
            if s is made or not may_run_after(pos, made, s):
                continue
            it = made.target
            rebinds = False
            if hit & objs.sources.get(("s", id(made)), set()):
                name = changed
            elif late and rebound in names:
                # (a generator reads its names when it runs: rebinding counts)
                name, rebinds = rebound, True
            else:
                continue
            if not (how == "augmented" or it in varied or name in varied or
                    any(n in varied for n in names)):
                continue          # (nothing carries a derivative: Python's values are s2sad's)
            i_s, loops_s = pos[id(s)]
            if isinstance(name, str) and i_s < pos[id(made)][0] and any(
                    isinstance(t, ir.Assign) and t.target == name and
                    pos[id(t)][0] < i_s and pos[id(t)][1] <= loops_s and
                    pos[id(t)][1] <= pos[id(made)][1] for t in stmts):
                continue          # (in a loop, rebound to a new object before it is changed)
            me = ("s", id(made))
            later = [t for t in stmts if t is not s and may_run_after(pos, s, t) and
                     any(objs.holds(v, me) for v in t.reads()) and
                     not _made_again_before(chains, made, s, t)]
            if later:
                user = isinstance(name, str) and not name.startswith("_")
                what = f"`{name}`" if user else "a list, array or dict"
                if rebinds:
                    raise UnsupportedSyntaxError(
                        f"this line binds {what} anew while a generator expression made on line "
                        f"{made.origin.line}, which reads {what}, is still to be used: Python runs "
                        f"the generator when its values are taken, with the new value; s2sad "
                        f"computes its values where it is made", origin=s.origin,
                        fix=f"use the generator up before binding {what} again (e.g. `vals = "
                            f"list(...)`), or use another name")
                if how == "augmented":
                    op = f"{name} {_opname_of(s.value)}= ..."
                    raise UnsupportedSyntaxError(
                        f"`{op}` changes {what} in place (an array or a list) while an iterator or "
                        f"dict view made on line {made.origin.line} over the same object is still "
                        f"to be used: Python's iterator then yields the changed values",
                        origin=s.origin,
                        fix=f"write `{name} = {name} {_opname_of(s.value)} ...` (a new value), or use "
                            f"the iterator up first (e.g. `pairs = list(zip(...))`)")
                raise UnsupportedSyntaxError(
                    f"this line changes {what} in place while an iterator or dict view made on "
                    f"line {made.origin.line} over the same object (under this or another name) "
                    f"is still to be used: Python's iterator then yields the changed values, and "
                    f"s2sad cannot tell which of them they are", origin=s.origin,
                    fix=f"use the iterator up before changing `{name}` (e.g. `pairs = list(zip("
                        f"...))`), or change a copy (`{name} = {name}.copy()`, `list(...)`)"
                    if user else "use the iterator up before the change (e.g. `pairs = "
                                 "list(zip(...))`), or change a copy")


def _block_chains(fn):
    """id(statement) -> [(id(block), index in it)] for the blocks around it, outermost first."""
    out = {}

    def walk(block, chain):
        for k, s in enumerate(block):
            here = chain + [(id(block), k)]
            out[id(s)] = here
            for b in ir.children(s):
                walk(b, here)
    walk(fn.body, [])
    return out


def _deferred_state(fn, var, binds, late, held, seen=None):
    """What calling the function in ``var`` reads when it runs: names a closure captured
    (``late``: rebinding them counts too, closures read their cells when called) and objects
    it was made from (``held``: a bound method's object, functools.partial's arguments, a
    closure's default values), following closures that call closures."""
    seen = set() if seen is None else seen
    if var in seen:
        return
    seen.add(var)
    for b in binds.get(var, ()):
        v = b.value
        if isinstance(v, str):
            _deferred_state(fn, v, binds, late, held, seen)         # g = h
        elif isinstance(v, ir.Call) and isinstance(v.fn, ir.Static) and \
                v.fn.obj is runtime.make_closure:
            for key, a in zip(v.args[0].value, v.args[1:]):
                if isinstance(a, str):
                    (held if key.endswith("=") else late).add(a)
                    _deferred_state(fn, a, binds, late, held, seen)
        elif isinstance(v, ir.Call) and not (isinstance(v.fn, ir.Static) and
                                             v.fn.obj in (runtime.build_list, runtime.build_tuple,
                                                          runtime.build_dict)):
            for a in v.args:                      # o.m, functools.partial(g, a), ...
                if isinstance(a, str):
                    held.add(a)
                    _deferred_state(fn, a, binds, late, held, seen)


def _iterator_names(fn):
    """Names bound to an iterator s2sad made (zip, enumerate, iter, reversed, map, filter,
    generator expressions)."""
    return {s.target for s in ir.walk(fn.body) if isinstance(s, ir.Assign) and
            isinstance(s.value, ir.Call) and isinstance(s.value.fn, ir.Static) and
            _hashable(s.value.fn.obj) and s.value.fn.obj in _ITER_MAKERS_RT}


def _check_lazy(fn, pos):
    """map/filter/starmap and generator expressions are computed where they are made (the
    lowering builds their values there: lower._lazy); Python computes each value when it is
    taken.  The two differ when, in between, what their function reads changes (a name a
    closure captured, rebound or changed in place; the object of a bound method), or when an
    iterator they take values from (walking it, or in their function) is read elsewhere too.
    Both are refused."""
    from .frontend.analysis import may_run_after, _mutated, bound_names
    binds = {}
    for s in ir.walk(fn.body):
        if isinstance(s, ir.Assign):
            binds.setdefault(s.target, []).append(s)
    iterators = None
    aliases = None
    for made in ir.walk(fn.body):
        v = made.value if isinstance(made, ir.Assign) else None
        lazy = v.extra.get("lazy") if isinstance(v, ir.Call) else None
        if lazy is None or lazy.get("dropped"):
            continue
        it, token = made.target, lazy["token"]
        late, held = set(), set()
        if lazy["fn"] is None:                    # a generator: it reads its names when it runs
            for n in v.extra.get("sources", ()):
                late.add(n)
                _deferred_state(fn, n, binds, late, held)
        elif isinstance(lazy["fn"], str):
            _deferred_state(fn, lazy["fn"], binds, late, held)
        walks = set(v.extra.get("sources", ()))
        uses = [t for t in ir.walk(fn.body) if t is not made and it in t.reads()]
        what = lazy["what"] if lazy["fn"] is None else f"the function given to {lazy['what']}"
        this = "this generator expression" if lazy["fn"] is None else f"this {lazy['what']}"
        line = made.origin.line

        def ours(t):
            c = t.value if isinstance(t, ir.Assign) else getattr(t, "call", None)
            return isinstance(c, ir.Call) and c.extra.get("lazy_of") is token

        if late or held:
            if aliases is None:
                aliases = _copy_aliases(fn)
            for s in ir.walk(fn.body):
                if s is made or ours(s) or not may_run_after(pos, made, s):
                    continue
                changed = s.obj if isinstance(s, (ir.SetItem, ir.Mutate, ir.DelItem)) and \
                    isinstance(s.obj, str) else _mutated(s)
                hit = None
                if changed is not None and aliases.get(changed, {changed}) & (late | held):
                    hit = changed
                elif late & set(bound_names(s)) and not isinstance(s, ir.For):
                    hit = sorted(late & set(bound_names(s)))[0]
                if hit is None:
                    continue
                if any(may_run_after(pos, s, t) and not _remade_between(pos, s, made, t)
                       for t in uses):
                    name = f"`{hit}`" if not hit.startswith("_") else "a value"
                    raise UnsupportedSyntaxError(
                        f"this line changes {name}, which {what} (line {line}) reads; Python "
                        f"computes its values only when they are taken, after this change, "
                        f"s2sad where it is made", origin=s.origin,
                        fix=f"take the values where they are made (`list(...)`), or give the "
                            f"function the value it needs as an argument or a default "
                            f"(`lambda t, v=v: ...`)")
        if iterators is None:
            iterators = _iterator_names(fn)
        shared = sorted((walks | late | held) & iterators)
        for name in shared:
            other = next((t for t in ir.walk(fn.body) if t is not made and not ours(t) and
                          name in t.reads() and may_run_after(pos, made, t)), None)
            if other is not None and uses:
                shown = f"`{name}`" if not name.startswith("_") else "an iterator"
                raise UnsupportedSyntaxError(
                    f"{this} takes values from {shown} (walking it, or in its function), which "
                    f"line {other.origin.line} reads "
                    f"too; Python takes them only when its values are used, s2sad where it is "
                    f"made, so the two would take different values", origin=made.origin,
                    fix=f"take all the values where they are made (`vals = list(...)`), or "
                        f"give each its own list of the values (`vals = list({name})` first)")


def _check_bound_methods(fn, pos):
    """``g = o.m`` then ``o`` changed, then ``g(...)``: a bound method reads ``o`` when it is
    called, while its derivative goes back to ``o`` where the method was taken.  Refused."""
    from .frontend.analysis import may_run_after, _mutated
    aliases = None
    for made in ir.walk(fn.body):
        v = made.value if isinstance(made, ir.Assign) else None
        if not (isinstance(v, ir.Call) and isinstance(v.fn, ir.Attr) and v.args and
                isinstance(v.args[0], str)):
            continue
        g, obj = made.target, v.args[0]
        calls = [t for t in ir.walk(fn.body) if t is not made and _calls_var(t, g)]
        if not calls:
            continue
        if aliases is None:
            aliases = _copy_aliases(fn)
        group = aliases.get(obj, {obj})
        for s in ir.walk(fn.body):
            if s is made or not may_run_after(pos, made, s):
                continue
            changed = s.obj if isinstance(s, (ir.SetItem, ir.Mutate, ir.DelItem)) and \
                isinstance(s.obj, str) else _mutated(s)
            if changed is None or changed not in group:
                continue
            if any(may_run_after(pos, s, t) and not _remade_between(pos, s, made, t)
                   for t in calls):
                shown = f"`{obj}`" if not obj.startswith("_") else "the object"
                raise UnsupportedSyntaxError(
                    f"this line changes {shown} after its method `{v.fn.name}` was taken on line "
                    f"{made.origin.line} and before that method is called; the call reads the "
                    f"changed object, which s2sad does not follow", origin=s.origin,
                    fix=f"call `{obj}.{v.fn.name}(...)` where it is needed instead of keeping the "
                        f"bound method")


def _remade_between(pos, s, made, t):
    """Whether every way from statement ``s`` to statement ``t`` runs ``made`` again (it lies
    between them in straight-line order, or, for ``t`` reached in the loop's next pass, where
    that pass runs it before ``t``)."""
    i_s, i_m, i_t = pos[id(s)][0], pos[id(made)][0], pos[id(t)][0]
    if i_s < i_m < i_t:
        return True
    common = pos[id(s)][1] & pos[id(t)][1]
    return i_t <= i_s and bool(common) and common <= pos[id(made)][1] and \
        (i_m < i_t or i_m > i_s)


def _calls_var(t, g):
    """Whether statement ``t`` calls ``g`` or passes it as a function (``key=g``, map(g, ...))."""
    c = t.value if isinstance(t, ir.Assign) else getattr(t, "call", None)
    if not isinstance(c, ir.Call) or g not in c.reads():
        return False
    if isinstance(c.fn, ir.Dynamic) and c.fn.var == g:
        return True
    if any(v == g for _, v in c.kwargs):
        return True
    return isinstance(c.fn, ir.Static) and _hashable(c.fn.obj) and c.fn.obj in _TAKES_FUNCTIONS


def _check_loop_sources(fn):
    """A ``for`` loop over a list or array whose body changes it in place: s2sad walks the values
    by index as the loop starts, Python's iterator (zip, enumerate...) sees the changes.  Refused,
    whatever name the change goes through (objects.Objects: another name, a container holding
    the object, a join of branches...)."""
    seqs = (runtime.seq, runtime.loop_seq, runtime.zip_seq, runtime.loop_zip_seq)
    objs = None

    def block(stmts):
        nonlocal objs
        for k, s in enumerate(stmts):
            v = s.value if isinstance(s, ir.Assign) else None
            if isinstance(v, ir.Call) and isinstance(v.fn, ir.Static) and v.fn.obj in seqs:
                srcs = {a for a in v.args if isinstance(a, str)}
                loop = next((t for t in stmts[k + 1:] if isinstance(t, ir.For)), None)
                if loop is not None and srcs:
                    if objs is None:
                        from .objects import Objects
                        objs = Objects(fn)
                    walked = set().union(*(objs.of(a) for a in srcs))
                    for o in walked & objs.iters:
                        walked |= objs.sources.get(o, set())
                    for t in ir.walk(loop.body):
                        # (item writes under a one-sequence loop read back live, as in Python;
                        # under zip(...) the values were taken first; growing, shrinking,
                        # reordering and ``a op= v`` (which s2sad rebinds) always)
                        changed, how = _changed_in_place(fn, t)
                        if changed is None or getattr(t, "attr", None) or \
                                isinstance(t, ir.SetItem) and v.fn.obj in seqs[:2]:
                            continue
                        hit = objs.of(changed)
                        if not hit & walked:
                            continue
                        name = changed if isinstance(changed, str) and \
                            not changed.startswith("_") else None
                        what = f"`{name}`" if name else "a list or array the loop walks"
                        raise UnsupportedSyntaxError(
                            f"this line changes {what} in place while a `for` loop walks it (under "
                            f"this or another name); s2sad takes the loop's values as it starts, "
                            f"Python's iterator sees the change", origin=t.origin,
                            fix=(f"loop over a copy (`for ... in list({name})`) or build a new "
                                 f"list instead of changing `{name}` inside the loop") if name
                            else "loop over a copy (`for ... in list(...)`) or build a new list "
                                 "instead of changing it inside the loop")
            for b in ir.children(s):
                block(b)
    block(fn.body)


def _check_augmented(fn, s, pos, reads):
    """``a *= y`` / ``xs += [v]`` change an array or list in place in Python; s2sad rebinds the
    name.  Refused while another name refers to the same object (``a = x`` before)."""
    call = s.value if isinstance(s, ir.Assign) else None
    if not isinstance(call, ir.Call) or "augmented" not in call.extra:
        return
    var = call.args[0] if isinstance(call.args[0], str) else s.target
    kind = getattr(fn, "kinds", {}).get(var)
    if kind in ("f", "i", "z"):
        return                                 # numbers: rebinding is what Python does
    group = _copy_aliases(fn, s, pos).get(var, {var})
    others = sorted(v for v in group if v != var and _read_via_copies(fn, v, var, reads))
    if others:
        name = call.extra["augmented"]
        other = f"`{others[0]}`" if not others[0].startswith("_") else "another name"
        raise UnsupportedSyntaxError(
            f"`{name} {_opname_of(call)}= ...` changes `{name}` in place (for an array or a list) "
            f"while {other} refers to the same object; s2sad does not follow derivatives through "
            f"such aliases", origin=s.origin,
            fix=f"write `{name} = {name} {_opname_of(call)} ...` to make a new value, or copy "
                f"first (`{name} = {name}.copy()`)")


def _check_augmented_shared(fn, s, pos, guards):
    """``a *= y`` on an array or list changes the object in place; s2sad makes a new value and
    rebinds ``a``.  That is right only while nothing else that holds the object (or shares its
    memory: a view ``a = x[1:]``, ``x.T``, ``np.asarray(x)``..., the array it is a view of, a list
    holding it) is read afterwards.  A sure view read afterwards is refused here; a name that may
    share the object (``r = m[0]``: a row of a matrix, or a number; a function's result) gets a
    check at run time (:func:`runtime.inplace_guard`) that refuses when the object is one that
    ``op=`` changes in place."""
    from .frontend.analysis import may_run_after
    call = s.value if isinstance(s, ir.Assign) else None
    if not isinstance(call, ir.Call) or "augmented" not in call.extra or \
            not isinstance(call.args[0], str):
        return
    var = call.args[0]
    kinds = getattr(fn, "kinds", {})
    if kinds.get(var) in ("f", "i", "z"):
        return
    # who sees a change of ``var``'s object: SYM links (aliases, views: both see each other's
    # changes), PART links a -> b (a is held by b: an element, a list item), ELEM links (two
    # containers holding the same elements: ``list(v)``, ``zip(...)``)
    adj = {}

    def link(a, b, kind, certain=False):
        if not isinstance(a, str) or not isinstance(b, str) or a == b or \
                kinds.get(b) in ("f", "i", "z") or kinds.get(a) in ("f", "i", "z"):
            return
        adj.setdefault(a, []).append((b, kind, certain))
        if kind != "part":
            adj.setdefault(b, []).append((a, kind, certain))
    for t in ir.walk(fn.body):
        if t is not s and not may_run_after(pos, t, s):
            continue
        if isinstance(t, ir.Assign) and isinstance(t.value, str):
            link(t.target, t.value, "sym", True)
        elif isinstance(t, ir.Assign) and isinstance(t.value, ir.Call):
            c = t.value
            names = [a for a in c.args if isinstance(a, str)] + \
                [v for _, v in c.kwargs if isinstance(v, str)]
            f = c.fn.obj if isinstance(c.fn, ir.Static) else None
            if "augmented" in c.extra:
                link(t.target, c.args[0], "sym", True)   # (Python's result is the same object)
            elif _is_view_call(c) or f in _MAY_RETURN_ARGUMENT:
                getitem = f in (operator.getitem, runtime.subscript)
                idx = c.args[1] if getitem and len(c.args) > 1 else None
                sliced = isinstance(idx, ir.Index) and any(
                    isinstance(p, ir.Slice) or isinstance(p, ir.Const) and
                    (p.value is Ellipsis or p.value is None) for p in idx.parts)
                src = kinds.get(c.args[0]) if c.args else None
                if getitem and src == "c":
                    if not sliced:                       # an item of a list: held by the list
                        link(t.target, c.args[0], "part")
                    continue                             # (a slice of a list is a new list)
                for a in (names[:1] if getitem or isinstance(c.fn, (ir.Attr, ir.Method))
                          else names):
                    # x[i] of an array: a row (a view) or a number
                    link(t.target, a, "sym", not getitem or sliced)
            elif f is _np.array:
                if any(k == "copy" for k, _ in c.kwargs):     # copy=False/None: maybe the same
                    for a in names[:1]:
                        link(t.target, a, "sym")
            elif f in (runtime.build_list, runtime.build_tuple, runtime.build_dict):
                for a in names:
                    link(a, t.target, "part")
            elif c.cls == "primitive" and c.rule is not None and \
                    c.rule.kind not in ("any", "container", "getitem"):
                continue                                 # arithmetic: a new array or number
            elif c.cls == "primitive" and c.rule is not None:
                for a in names:                          # list(v), zip(v, w)...: v's elements
                    link(t.target, a, "elem")
            else:
                # functions s2sad has no rule for, user functions: the result may be an argument
                for a in names + list(c.extra.get("captured", ())):
                    link(t.target, a, "sym")
        elif isinstance(t, ir.SetItem) and isinstance(t.obj, str):
            for a in ir.operand_vars(t.value):
                link(a, t.obj, "part")
        elif isinstance(t, ir.Mutate) and isinstance(t.obj, str):
            for a in t.call.reads()[1:]:
                link(a, t.obj, "part")

    def seen_by(certain_only, container=False):
        # (name, whether the object itself changed or one it holds); a list extended in place
        # does not change the elements it shares with another container
        todo, done = [(var, "self")], set()
        while todo:
            n, state = todo.pop()
            if (n, state) in done:
                continue
            done.add((n, state))
            for m, kind, certain in adj.get(n, ()):
                if certain_only and not certain:
                    continue
                if kind == "elem" and state == "self" and (container or kinds.get(n) == "c"):
                    continue
                todo.append((m, state if kind == "sym" else "part"))
        return {n for n, _ in done}
    own = {var, s.target}
    later = set()
    for t in ir.walk(fn.body):
        if t is not s and may_run_after(pos, s, t):
            later.update(v for v in t.reads() if v not in own)
    later -= getattr(fn, "rederived", {}).get(id(s), set())    # (views bound again after s)
    hit = sorted(later & seen_by(True))
    name = call.extra["augmented"]
    op = _opname_of(call)
    fix = (f"write `{name} = {name} {op} ...` to make a new value, or make `{name}` a copy "
           f"(`.copy()`, `list(...)`) before changing it")
    if hit:
        w = next((v for v in hit if not v.startswith("_")), hit[0])
        other = f"`{w}`" if not w.startswith("_") else "another value"
        raise UnsupportedSyntaxError(
            f"`{name} {op}= ...` changes `{name}` in place, and `{name}` shares memory with "
            f"{other} (a view, e.g. a slice, `.T`, `.reshape`, `np.asarray`), which is read "
            f"afterwards; s2sad makes a new value for `{name}` and does not follow the change "
            f"into {other}", origin=s.origin, fix=fix)
    hit = sorted(later & seen_by(False))
    if hit:
        # (a list changed in place (``l += [v]``) changes no element it shares with another)
        arrays_only = not (later & seen_by(False, container=True))
        w = next((v for v in hit if not v.startswith("_")), hit[0])
        other = f"`{w}`" if not w.startswith("_") else "another value"
        # (when all of them are bound here, the guard looks at what they hold: ``list(zip(a,
        # x))`` of a vector holds numbers, not views)
        from .shared_writes import surely_bound
        seen = hit if set(hit) <= surely_bound(fn).get(id(s), frozenset()) else []
        guards.append((id(s), ir.ExprStmt(ir.Call(
            ir.Static(runtime.inplace_guard, "_rt.inplace_guard"),
            [var, ir.Const(getattr(call.fn, "obj", None)), ir.Const(name), ir.Const(other),
             ir.Const(fix), ir.Const(s.origin), ir.Const(arrays_only)] + seen), s.origin)))


_MAY_RETURN_ARGUMENT = set()      # filled below: functions that may return their argument's memory


def _insert_guards(block, guards):
    """Put each guard statement just before the statement it checks (by id)."""
    if not guards:
        return
    i = 0
    while i < len(block):
        g = guards.get(id(block[i]))
        if g is not None:
            g.call.cls, g.call.info = "inactive", {"varied_args": []}
            block.insert(i, g)
            i += 1
        for b in ir.children(block[i]):
            _insert_guards(b, guards)
        i += 1


def _opname_of(call):
    return {operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/",
            operator.floordiv: "//", operator.pow: "**", operator.matmul: "@",
            operator.mod: "%"}.get(getattr(call.fn, "obj", None), "op")


def _new_object(value):
    """True for a call that certainly returns a new object (a copy or a fresh container)."""
    import copy
    if not isinstance(value, ir.Call):
        return False
    f = value.fn
    if isinstance(f, ir.Method):
        return f.name == "copy"
    if isinstance(f, ir.Static):
        return _hashable(f.obj) and f.obj in _NEW_OBJECT_MAKERS or \
            f.obj in (copy.copy, copy.deepcopy)
    return False


def _rebound_params(fn, params):
    """id(statement) -> parameters that, on every path to it, were rebound to a new object."""
    out = {}
    new_tmps = {s.target for s in ir.walk(fn.body) if isinstance(s, ir.Assign) and
                s.target.startswith("_") and _new_object(s.value)}

    def block(stmts, fresh):
        fresh = set(fresh)
        for s in stmts:
            out[id(s)] = fresh
            for b in ir.children(s):
                block(b, fresh)
            if isinstance(s, ir.Assign) and s.target in params:
                new = _new_object(s.value) or isinstance(s.value, str) and s.value in new_tmps
                fresh = fresh | {s.target} if new else fresh - {s.target}
            elif isinstance(s, (ir.For, ir.While, ir.If, ir.Try, ir.With)):
                # a parameter rebound inside a nested block may still be the caller's after it
                inner = {t for b in ir.children(s) for st in ir.walk(b)
                         if isinstance(st, ir.Assign) and (t := st.target) in params}
                fresh = fresh - inner
    block(fn.body, set())
    return out


def _is_view_call(call):
    return (call.rule is not None and call.rule.view) or \
        (isinstance(call.fn, (ir.Attr, ir.Method)) and call.fn.name in _VIEW_NAMES)


def _shares_memory_call(fn, call):
    """A view call, less a slice of a list or tuple (a new list)."""
    return _is_view_call(call) and not (
        isinstance(call.fn, ir.Static) and call.fn.obj is operator.getitem and
        len(call.args) == 2 and isinstance(call.args[0], str) and
        getattr(fn, "kinds", {}).get(call.args[0]) == "c" and isinstance(call.args[1], ir.Index)
        and any(isinstance(p, ir.Slice) for p in call.args[1].parts))


_VIEW_NAMES = {"T", "mT", "real", "imag", "reshape", "view", "transpose", "swapaxes", "squeeze",
               "ravel", "diagonal", "__getitem__"}

import numpy as _np  # noqa: E402
_MAY_RETURN_ARGUMENT.update((_np.real, _np.imag, _np.asarray, _np.asanyarray))


def defining_call(fn, var):
    """The call that binds ``var``, when exactly one statement binds it."""
    found = [s for s in ir.walk(fn.body) if isinstance(s, ir.Assign) and s.target == var]
    if len(found) == 1 and isinstance(found[0].value, ir.Call):
        return found[0].value
    return None


def _view_sources(fn):
    """var -> containers it was read out of (``p = ps[i]``), following copies."""
    src = {}
    for s in ir.walk(fn.body):
        if isinstance(s, ir.Assign) and isinstance(s.value, ir.Call) and \
                isinstance(s.value.fn, ir.Static) and s.value.fn.obj is operator.getitem and \
                isinstance(s.value.args[0], str):
            src.setdefault(s.target, set()).add(s.value.args[0])
    changed = True
    while changed:
        changed = False
        for s in ir.walk(fn.body):
            if isinstance(s, ir.Assign) and isinstance(s.value, str) and s.value in src:
                before = len(src.get(s.target, ()))
                src.setdefault(s.target, set()).update(src[s.value])
                changed |= len(src[s.target]) != before
    return src


def classify(fn, param_kinds):
    """Classify every call site of ``fn`` and infer value kinds; returns ``kinds`` (var -> kind)."""
    kinds = dict(param_kinds)
    for _ in range(4):
        before = dict(kinds)
        for s in ir.walk(fn.body):
            if isinstance(s, ir.Assign):
                v = s.value
                if isinstance(v, ir.Call):
                    classify_call(v, kinds, s.origin)
                    k = _result_kind(v, kinds)
                    if isinstance(v.fn, ir.Static) and v.fn.obj in (runtime.build_tuple,
                                                                     runtime.build_list):
                        kinds[("elements", s.target)] = [operand_kind(a, kinds) for a in v.args]
                    elif isinstance(v.fn, ir.Static) and v.fn.obj is runtime.build_dict and \
                            v.args and isinstance(v.args[0], ir.Const):
                        kinds[("elements", s.target)] = dict(zip(
                            v.args[0].value, (operand_kind(a, kinds) for a in v.args[1:])))
                else:
                    k = operand_kind(v, kinds)
                kinds[s.target] = join(kinds.get(s.target), k) if s.target in before or \
                    s.target in kinds and kinds[s.target] is not None else k
            elif isinstance(s, ir.ExprStmt):
                classify_call(s.call, kinds, s.origin)
            elif isinstance(s, ir.For):
                kinds[s.target] = "i"
            elif isinstance(s, ir.Mutate):
                if s.target:
                    kinds[s.target] = "?"
            elif isinstance(s, ir.With):
                for _, v in s.items:
                    if v:
                        kinds[v] = "?"
            elif isinstance(s, ir.Try):
                for _, v, _ in s.handlers:
                    if v:
                        kinds[v] = "i"
        # kinds only widen; stop at a fixpoint
        if kinds == before:
            break
    _drop_heres(fn.body, kinds)
    fn.kinds = kinds
    from .shared_writes import rederive_views
    rederive_views(fn, kinds)        # (views of an array bound again after writes into it)
    return kinds


def _drop_heres(block, kinds):
    """``_rt.here(x)`` where x is known to be a list, array, number... (not an iterator): the
    consuming call reads x itself."""
    keep = []
    for s in block:
        v = s.value if isinstance(s, ir.Assign) else None
        if isinstance(v, ir.Call) and isinstance(v.fn, ir.Static) and v.fn.obj is runtime.here and \
                "consumer" in v.extra and operand_kind(v.args[0], kinds) in _NOT_ITERATORS:
            call, k = v.extra["consumer"]
            # (kept where the call's result rebinds x, ``xs = sorted(xs, key=...)``: a rule's
            # adjoint reading both x and the result ``ans`` needs two names)
            rebinds = any(isinstance(t, ir.Assign) and t.value is call and t.target == v.args[0]
                          for t in block)
            if call.args[k] == s.target and not rebinds:
                call.args[k] = v.args[0]
                kinds.pop(s.target, None)
                classify_call(call, kinds, s.origin)
                continue
        keep.append(s)
        for b in ir.children(s):
            _drop_heres(b, kinds)
    block[:] = keep


def finish(fn, active, varied):
    """After activity analysis: mark sites with no active argument ``inactive``, check that
    rules support the keywords given on active calls, and refuse writes of values that carry a
    derivative through ``global``/``nonlocal``, into arguments, or through aliases."""
    check_mutation(fn, varied)
    for names, origin in getattr(fn, "nonlocal_writers", ()):
        hot = sorted(n for n in names if n in varied)
        if hot:
            raise UnsupportedSyntaxError(
                f"a nested function writes `nonlocal {', '.join(hot)}`, a value that carries a "
                f"derivative", origin=origin,
                fix="return the new value from the nested function instead of assigning it")
    for s in ir.walk(fn.body):
        if isinstance(s, ir.SetItem) and isinstance(s.obj, ir.Const) and \
                any(v in varied for v in ir.operand_vars(s.value)):
            text = s.obj.text or ""
            if s.attr is not None and text.startswith("_cell_"):
                what = f"a write through `nonlocal {text[len('_cell_'):]}`"
            elif s.attr is None and text == "_globals":
                what = f"a write through `global {s.index.parts[0].value}`"
            else:
                what = f"a write into the module-level `{text or 'object'}`"
            raise UnsupportedSyntaxError(
                f"{what} of a value that carries a derivative", origin=s.origin,
                fix="return the value instead of storing it in a global/nonlocal variable")
        if isinstance(s, ir.Mutate) and isinstance(s.obj, ir.Const) and \
                any(v in varied for v in s.call.reads()):
            raise UnsupportedSyntaxError(
                f"`.{s.call.fn.name}(...)` changes the module-level `{s.obj.text or 'object'}` with "
                f"a value that carries a derivative; s2sad does not follow values kept outside the "
                f"function", origin=s.origin,
                fix="build the list or dict inside the function and return it (or pass it in and "
                    "return the new one)")
        call = s.value if isinstance(s, ir.Assign) else s.call if isinstance(s, ir.ExprStmt) else None
        if not isinstance(call, ir.Call):
            continue
        varied_args = [v for v in call.reads() if v in varied]
        call.info["varied_args"] = varied_args
        if call.cls == "dynamic" and call.info.get("operator") and \
                call.fn.obj is operator.getitem and isinstance(call.args[1], ir.Index) and \
                any(v in varied for v in ir.operand_vars(call.args[1])):
            # obj[a, b] / obj[a:b] on a class with a Python __getitem__: the key's parts would
            # get no derivative back (o[k] with one value k does)
            raise UnsupportedSyntaxError(
                "a subscript with several parts or a slice, on an object whose class defines "
                "__getitem__ in Python, with a key part that carries a derivative",
                origin=s.origin,
                fix="build the key as one value first (`key = (a, b)`) and write `obj[key]`")
        if call.cls == "primitive" and call.rule.forbid and varied_args:
            _check_forbid(call, s.origin)
        if call.cls == "primitive" and varied_args:
            _check_nondifferentiable(call, varied, s.origin)
        if isinstance(s, ir.ExprStmt) and call.cls == "opaque" and varied_args:
            name = call.fn.text if isinstance(call.fn, ir.Static) else f".{call.fn.name}" \
                if isinstance(call.fn, (ir.Method, ir.Attr)) else "this call"
            raise UnsupportedSyntaxError(
                f"`{name}(...)` is called for its effect on values that carry a derivative, and "
                f"s2sad has no rule for it (it may change an array in place, which s2sad cannot "
                f"see)", origin=s.origin,
                fix="compute the new value with an expression and assign it (e.g. `y = np.where(...)`"
                    ", `y[idx] = v`), or declare a rule with s2sad.defrule")
        if call.cls == "opaque" and not varied_args:
            call.info["base_cls"] = call.cls
            call.cls = "inactive"
            continue
        if call.info.get("mutates") and call.cls == "dynamic":
            target = s.target if isinstance(s, ir.Assign) else None
            if any(v in active for v in call.info["diff_vars"]) and \
                    (call.info["mutates"] in active or (target is not None and target in active)):
                continue
        if isinstance(s, ir.ExprStmt) and call.cls in ("derived", "dynamic") and varied_args:
            # called for its effect with values that carry a derivative: run it through the
            # runtime, which builds its derivative (and so refuses writes into its arguments)
            call.info["effect"] = True
            continue
        if call.cls in ("primitive", "derived", "dynamic"):
            target = s.target if isinstance(s, ir.Assign) else None
            if not any(v in active for v in call.info.get("diff_vars", [])) or \
                    (target is not None and target not in active):
                call.info["base_cls"] = call.cls
                call.cls = "inactive"
                continue
    _guard_key_reads(fn)


def _key_readers():
    import heapq
    import math
    return {sorted: "all", list: "all", tuple: "all", set: "all", frozenset: "all", sum: "all",
            min: "all", max: "all", any: "all", all: "all", zip: "all", enumerate: "all",
            iter: "all", reversed: "all", math.fsum: "all", math.prod: "all",
            heapq.nsmallest: (1,), heapq.nlargest: (1,), runtime.izip: "all",
            runtime.ienumerate: "all", runtime.ireversed: "all", runtime.iiter: "all",
            runtime.here: "all", runtime.seq: "all", runtime.loop_seq: "all",
            runtime.zip_seq: "all", runtime.loop_zip_seq: "all"}


def _guard_key_reads(fn):
    """Where a dict's keys become values (iterating it: ``sorted(d)``, ``for k in d``, ``zip(d,
    ...)``; ``d.keys()``, ``d.items()``, ``d.popitem()``), a check when it runs
    (:func:`runtime.keys_read`): keys that are floats may carry derivatives, and s2sad keeps a
    dict's derivative per key (a key's own derivative is dropped), so it refuses them there.
    Values read by key (``d[k]``, ``d.values()``) need no check.  Operands known to be numbers or
    arrays get none."""
    readers = _key_readers()
    kinds = getattr(fn, "kinds", {})
    guards = {}
    for s in ir.walk(fn.body):
        call = s.value if isinstance(s, ir.Assign) else s.call if isinstance(s, ir.ExprStmt) else \
            s.call if isinstance(s, ir.Mutate) else None
        if not isinstance(call, ir.Call):
            continue
        fn_ = call.fn
        if isinstance(fn_, ir.Method) and fn_.name in ("keys", "items", "popitem"):
            args = call.args[:1]
        elif isinstance(fn_, ir.Static) and _hashable(fn_.obj) and fn_.obj in readers:
            pos = readers[fn_.obj]
            args = call.args if pos == "all" else [call.args[k] for k in pos if k < len(call.args)]
        else:
            continue
        names = list(dict.fromkeys(a for a in args if isinstance(a, str) and
                                   kinds.get(a) not in _NUMBERS))
        if names and id(s) not in guards:
            guards[id(s)] = ir.ExprStmt(ir.Call(ir.Static(runtime.keys_read, "_rt.keys_read"),
                                                [ir.Const(s.origin)] + names), s.origin)
    _insert_guards(fn.body, guards)


def _check_nondifferentiable(call, varied, origin):
    """A value that carries a derivative must not reach a parameter the rule has no derivative
    for (it would silently get none)."""
    rule = call.rule
    if (getattr(rule.fn, "__module__", None) or "").startswith("s2sad."):
        return          # helpers of generated code: their other parameters are shapes and flags
    diff = set(rule.differentiable) | set(rule.constant)
    for p, op in call.info["bound"].items():
        if p in diff:
            continue
        ops = op.values() if isinstance(op, dict) else op if isinstance(op, tuple) else (op,)
        hot = [v for o in ops for v in ir.operand_vars(o) if v in varied]
        if hot:
            why = getattr(rule, "why", {}).get(p)
            raise RuleError(
                f"`{hot[0]}` carries a derivative into parameter `{p}` of {rule.name}, which has no "
                f"derivative rule for it" + (f" ({why})" if why else ""), origin=origin,
                fix=f"pass a constant for `{p}`, or declare the derivative with s2sad.defrule("
                    f"..., vjp={{{p!r}: ...}})")


def _check_forbid(call, origin):
    bound = call.info["bound"]
    for p, allowed in call.rule.forbid.items():
        v = bound.get(p)
        if isinstance(v, (str, ir.Index, tuple, dict)):
            ok = False
        else:
            val = v.value if isinstance(v, ir.Const) else v
            try:
                ok = val is allowed or bool(val == allowed)
            except Exception:
                ok = False
        if not ok:
            raise RuleError(
                f"{call.rule.name}(..., {p}=...) is not supported on a value that carries "
                f"a derivative", origin=origin,
                fix=f"drop {p}= (s2sad supports only {p}={allowed!r} here) and write the "
                    f"computation without it")


def site_description(call):
    """(class, what was chosen) for explain()."""
    cls = call.cls
    base = call.info.get("base_cls") if call.info else None
    if call.rule is not None:
        chosen = f"rule {call.rule.name}"
    elif cls == "derived" or base == "derived":
        chosen = f"function {call.info['callee'].__module__}.{call.info['callee'].__qualname__}"
    elif cls == "dynamic" or base == "dynamic":
        chosen = "resolved at run time"
    elif isinstance(call.fn, ir.Static):
        chosen = f"{getattr(call.fn.obj, '__qualname__', call.fn.text)} (no rule, no source)"
    else:
        chosen = ""
    return cls, chosen

