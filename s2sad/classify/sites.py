"""Call-site classification: every call site of the IR gets exactly one class.

* ``primitive``: the callee has a rule; ``info["bound"]`` maps the rule's parameters to operands.
* ``derived``: a Python function with source; s2sad recurses into it.
* ``zero``: the callee's result carries no derivative (declared, or a shape/dtype attribute).
* ``dynamic``: the callee is only known at run time (a method on a value of unknown type, a
  function held in a variable); the runtime classifier decides per call and caches its answer.
* ``opaque``: no source and no rule; allowed as long as no differentiable value comes out of it
  (checked at run time when an argument carries a derivative).
* ``inactive``: set after activity analysis on sites where no argument carries a derivative
  (:mod:`.after_activity`).

:func:`classify` runs :func:`classify_call` over the function until the value kinds it infers
stop widening.
"""
import collections
import inspect
import operator

from .. import ir, runtime
from ..errors import RuleError
from ..frontend.analysis import join, operand_kind
from ..rules import registry
from .common import _hashable


_S2SAD_MODULE_PREFIX = __name__.split(".")[0] + "."


_ZERO_ATTRS = {"shape", "ndim", "size", "dtype", "itemsize", "nbytes", "strides", "flags",
               "device", "base", "__class__"}


def _is_user_function(obj):
    from ..runtime import _is_python
    return _is_python(obj)


def _bind_rule(rule, call, origin):
    """Bind a call's operands to a rule's parameters; defaults become constant operands."""
    recv = ()
    if getattr(rule, "receiver", False) and isinstance(call.fn, ir.Static):
        recv = (ir.Const(call.fn.obj.__self__),)    # a bound method's object (rule's ``self``)
    try:
        ba = rule.bind_signature(*recv, *call.args, **dict(call.kwargs))
    except TypeError as e:
        raise RuleError(f"the call to {rule.name} does not match its rule's parameters "
                        f"({', '.join(map(rule.public_name, rule.signature.parameters))}): {e}",
                        origin=origin,
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


_INT_BUILTINS = {len, int, bool, isinstance, hash, id, ord}
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
        if rule.fn is runtime.seq_add or rule.fn is runtime.seq_mul:
            return "c"                  # (chosen for a list, tuple or deque operand: one again)
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
        if k == "any" and rule.array_unless:
            bound = call.info.get("bound", {})
            if all(bound.get(p) is None or isinstance(bound[p], ir.Const) and
                   bound[p].value in (False, None) for p in rule.array_unless):
                return "a"
        return {"array": "a", "float": "f", "any": "?", "container": "c", "int": "i",
                "complex": "z"}.get(k, "?")
    if cls == "zero":
        if isinstance(call.fn, ir.Attr):
            return "i"
        if isinstance(call.fn, ir.Static) and _hashable(call.fn.obj) and \
                call.fn.obj in _INT_BUILTINS:
            return "i"                  # len(x), int(t), bool(c): an int whatever x is
        fn_ = getattr(rule, "fn", None)
        mod = getattr(fn_, "__module__", None) or ""
        if isinstance(call.fn, ir.Static) and getattr(fn_, "__name__", "") in _ARRAY_MAKERS and \
                (mod.startswith("numpy") or mod.startswith("cupy")):
            return "a"                  # np.zeros, np.empty_like, np.argmax...: arrays
        return "?"                      # (not get_array_module: that returns a module)
    return "?"


_NOT_ITERATORS = {"a", "c", "f", "i", "z"}


_SEQ_OPS = {operator.add: runtime.seq_add, operator.iadd: runtime.seq_add,
            operator.mul: runtime.seq_mul, operator.imul: runtime.seq_mul,
            runtime.seq_iadd: runtime.seq_add}


def _callable_object(obj):
    """A functools.partial, or an instance of a class whose ``__call__`` is user Python."""
    import functools
    if isinstance(obj, functools.partial):
        return True
    if isinstance(obj, type) or inspect.isroutine(obj):
        return False
    call = getattr(type(obj), "__call__", None)
    return inspect.isfunction(call) and _is_user_function(call)


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
        if obj is runtime.mul_into or obj is runtime.rmul_into:
            # a product generated code writes into a dead adjoint's buffer
            # (codegen/reverse/in_place.py) is, as a value, g * x; a derivative of that code
            # reads g after the product (a tangent line, a saved value), so it multiplies anew
            if obj is runtime.rmul_into:
                call.args.reverse()
            call.fn = fn = ir.Static(operator.mul, "operator.mul")
            obj = operator.mul
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
        compiled = runtime.numba_function(obj)
        if compiled is not None:
            from .inline import check_numba_callee
            check_numba_callee(compiled)
        compiled = compiled or runtime.cached_function(obj)
        if compiled is not None:
            # an @numba.njit function, a functools.lru_cache one: derived from its Python
            # function (``call.fn`` stays the compiled or cached one, which runs where the call
            # is inactive)
            obj = compiled
        if _is_user_function(obj):
            call.cls = "derived"
            try:
                sig = inspect.signature(obj, follow_wrapped=False)
                ba = sig.bind(*call.args, **dict(call.kwargs))
            except TypeError as e:
                raise RuleError(f"the call to {obj.__qualname__} does not match its signature: {e}",
                                origin=origin, fix="fix the call's arguments")
            given = set(ba.arguments)
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
                # an argument of the call is an operand (a variable's name, a constant); a
                # default is a value, a string default included (not a variable's name)
                given_operand = name in given and isinstance(v, (str, ir.Const, ir.Index))
                callargs.append(v if given_operand else ir.Const(v))
            call.info["callee"] = obj
            call.info["callargs"] = callargs
            call.info["diff_vars"] = [v for a in callargs for v in ir.operand_vars(a)]
            return
        if inspect.ismethod(obj) and _is_user_function(obj.__func__) or \
                getattr(obj, "__s2sad_jvp__", False) or type(obj) is runtime.Transformed:
            # a classmethod / bound method read statically; s2sad.jvp (runtime.jvp_function);
            # what s2sad.grad(f) returned, held in a global (runtime.transform_parts)
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
            call.info["recv_kind"] = recv_kind
        return
    call.cls = "dynamic"
    call.info["diff_vars"] = call.reads()


def classify(fn, param_kinds):
    """Classify every call site of ``fn`` and infer value kinds; returns ``kinds`` (var -> kind)."""
    kinds = dict(param_kinds)
    _object_methods(fn, param_kinds)
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
    if _drop_heres(fn.body, kinds):
        # (the consumers read x itself now, an array or a list: kinds again from the start, as
        # they only widen: ``for v in x.ravel()`` walks an array)
        return classify(fn, param_kinds)
    _called_objects(fn, kinds)
    fn.kinds = kinds
    from .writes import rederive_views
    rederive_views(fn, kinds)        # (views of an array bound again after writes into it)
    return kinds


def _object_vars(fn, test):
    """Variables only ever bound, in ``fn``, to what a constructor of a class ``test(cls)``
    accepts returns (a user class, not a list, dict or deque)."""
    made = {}
    for s in ir.walk(fn.body):
        if isinstance(s, ir.Assign):
            v = s.value
            obj = v.fn.obj if isinstance(v, ir.Call) and isinstance(v.fn, ir.Static) else None
            ok = isinstance(obj, type) and not issubclass(obj, _CONTAINER_TYPES) and \
                runtime.constructible(obj) and test(obj)
            made[s.target] = made.get(s.target, True) and ok
        else:
            bound = [s.target] if isinstance(s, (ir.For, ir.Mutate)) and s.target else \
                [v for _, v in s.items if v] if isinstance(s, ir.With) else \
                [v for _, v, _ in s.handlers if v] if isinstance(s, ir.Try) else []
            for t in bound:
                made[t] = False
    for p in fn.params:
        made[p] = False
    return {v for v, ok in made.items() if ok}


_CONTAINER_TYPES = (list, dict, tuple, set, frozenset, collections.deque)


def _python_call(cls):
    call = getattr(cls, "__call__", None)
    return call is not None and runtime._is_python(getattr(call, "__func__", call))


def _object_methods(fn, param_kinds):
    """``kf.update(z)``, ``buf.append(v)``, ``h.pop()`` on an object of a user class (made here
    by its constructor, or a parameter that is not a list, dict or deque): the lowering took these
    names for the list/dict methods (a Mutate statement); they are the object's own methods, a
    method call that may update the object."""
    objects = _object_vars(fn, lambda cls: True) | \
        {p for p in fn.params if param_kinds.get(p) in ("?", "o")}
    if objects:
        _unmutate(fn.body, objects)


def _unmutate(block, objects):
    for k, s in enumerate(block):
        if isinstance(s, ir.Mutate) and isinstance(s.obj, str) and s.obj in objects:
            block[k] = ir.Assign(s.target, s.call, s.origin) if s.target else \
                ir.ExprStmt(s.call, s.origin)
        for b in ir.children(s):
            _unmutate(b, objects)


def _called_objects(fn, kinds):
    """``model(x)`` where ``model`` is only ever an object of a user class with a Python
    ``__call__`` (made here by its constructor): the call may update the object, as a method
    call may (``__call__`` writing ``self.n_calls``, ``self.state``), so it also redefines it."""
    objects = _object_vars(fn, _python_call)
    if not objects:
        return
    for s in ir.walk(fn.body):
        call = s.value if isinstance(s, ir.Assign) else s.call if isinstance(s, ir.ExprStmt) \
            else None
        if isinstance(call, ir.Call) and call.cls == "dynamic" and \
                isinstance(call.fn, ir.Dynamic) and call.fn.var in objects and \
                call.extra.get("captured") is None:
            call.info["mutates"] = call.fn.var
            call.info["recv_kind"] = operand_kind(call.fn.var, kinds)


def _drop_heres(block, kinds):
    """``_rt.here(x)`` where x is known to be a list, array, number... (not an iterator): the
    consuming call reads x itself.  Returns how many were dropped."""
    keep = []
    dropped = 0
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
                dropped += 1
                continue
        keep.append(s)
        for b in ir.children(s):
            dropped += _drop_heres(b, kinds)
    block[:] = keep
    return dropped


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
