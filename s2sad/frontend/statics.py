"""Arguments fixed when a derivative is built: functions and modules passed as arguments.

A derivative is specialised on the identity of an argument that is a module, a builtin or NumPy
ufunc, or a module-level Python function without closure (``runtime.values.kind_of`` gives such a
value the kind ``("static", obj)``, so the cache keys carry it).  Inside, the parameter is that
object: every read of it becomes a constant, ``f(x)`` a call of a known callee (a rule, or a
function s2sad recurses into) instead of a call resolved at run time, and ``xp.tanh(x)`` on a module
``xp`` the call of ``xp``'s own ``tanh``.  Constants propagate through names bound once
(``la = xp.linalg``).  This is what JAX's tracing does with Python callables, made explicit: the
``_sum(f, x)`` of Mooncake's suite differentiates ``f`` where it is called.

A parameter the function assigns to is left alone (it is not fixed).  A local name bound once to
such a value read from the module (``xp = np``, ``act = np.tanh``) is a constant as well.
"""
import types

from .. import ir
from ..runtime.values import STATIC, static_value
from . import namespaces
from .analysis import bound_names, upward_exposed

def is_static_kind(k):
    return type(k) is tuple and len(k) == 2 and k[0] == STATIC


def bind(fn, kinds):
    """Make the parameters of ``fn`` whose kind is static constants; returns the kinds with
    those replaced by ``"?"`` (they are read nowhere any more)."""
    kinds, resolved = namespaces.resolve(fn, kinds)    # (xp = get_array_module(x))
    statics = {p: k[1] for p, k in zip(fn.params, kinds) if is_static_kind(k)}
    # (a local alias of a module-level one, ``xp = np`` or ``act = np.tanh``: a constant too)
    resolved = resolved or _binds_static(fn.body)
    if not statics and not resolved:
        return kinds
    counts = {}
    for s in ir.walk(fn.body):
        for v in bound_names(s):
            counts[v] = counts.get(v, 0) + 1
    consts = {}
    taken = set(fn.params) | set(counts) | set(fn.namespace)
    for p, obj in statics.items():
        if counts.get(p):
            continue                            # assigned in the body: not fixed
        consts[p] = ir.Const(obj, _name_for(obj, p, fn, taken))
    done = set(consts)                  # every name made a constant so far (in any round)
    if resolved:
        _block(fn.body, {}, consts, counts, fn, taken, done)  # (names bound once: constants)
    while consts:
        more = {}
        done.update(consts)
        _block(fn.body, consts, more, counts, fn, taken, done)
        consts = more
    return tuple("?" if is_static_kind(k) else k for k in kinds)


def _binds_static(stmts):
    """Whether a statement assigns a function or module known when the derivative is built (a
    global read, ``xp = np``, or an attribute of one, ``act = np.tanh``) to a name."""
    for s in ir.walk(stmts):
        if isinstance(s, ir.Assign):
            v = s.value
            if isinstance(v, ir.Const) and static_value(v.value):
                return True
            if isinstance(v, ir.Call) and isinstance(v.fn, ir.Attr) and v.args and \
                    isinstance(v.args[0], ir.Const) and isinstance(v.args[0].value,
                                                                  types.ModuleType):
                return True
    return False


def _name_for(obj, param, fn, taken):
    """A module-level name for ``obj`` in the generated code: its own name where free."""
    base = getattr(obj, "__name__", "") or param
    base = base.rsplit(".", 1)[-1] if isinstance(obj, types.ModuleType) else base
    if not base.isidentifier():
        base = f"_{param}"
    name, k = base, 2
    while name in taken and fn.namespace.get(name, obj) is not obj:
        name, k = f"{base}_{k}", k + 1
    taken.add(name)
    fn.namespace[name] = obj
    return name


def _call(call, consts, fn, taken):
    """Substitute in a call; fold ``module.attr`` and method calls on constant modules.  Returns
    the call, or a Const where the whole call is an attribute of a constant module."""
    call.args = [ir.map_vars(a, consts) for a in call.args]
    call.kwargs = [(k, ir.map_vars(a, consts)) for k, a in call.kwargs]
    f = call.fn
    if isinstance(f, ir.Dynamic) and f.var in consts:
        c = consts[f.var]
        call.fn = ir.Static(c.value, c.text)
    elif isinstance(f, (ir.Method, ir.Attr)) and call.args and isinstance(call.args[0], ir.Const) \
            and isinstance(call.args[0].value, types.ModuleType):
        mod = call.args[0]
        try:
            obj = getattr(mod.value, f.name)
        except AttributeError:
            return call                         # (fails at run time as Python would)
        text = f"{mod.text}.{f.name}" if mod.text else None
        if isinstance(f, ir.Attr):
            if len(call.args) == 1 and not call.kwargs:
                return ir.Const(obj, text)
            return call
        call.fn = ir.Static(obj, text)
        call.args = call.args[1:]
    return call


def _block(stmts, consts, more, counts, fn, taken, done):
    for s in stmts:
        if isinstance(s, ir.Assign):
            v = s.value
            if isinstance(v, ir.Call):
                s.value = _call(v, consts, fn, taken)
            else:
                s.value = ir.map_vars(v, consts)
            v = s.value
            # (a name made a constant in an earlier round is not one again: two names bound in a
            # chain, ``la = xp.linalg; solve = la.solve``, took turns for ever)
            # (nor a name some path reads before its binding: `if c: la = xp.linalg` then
            # `la.norm(x)` raises UnboundLocalError in Python when c is false)
            if isinstance(v, ir.Const) and counts.get(s.target) == 1 and static_value(v.value) \
                    and s.target not in consts and s.target not in done \
                    and not upward_exposed(fn.body, s.target):
                if v.text is None:
                    v.text = _name_for(v.value, s.target, fn, taken)
                more[s.target] = v
        elif isinstance(s, ir.ExprStmt):
            r = _call(s.call, consts, fn, taken)
            s.call = r if isinstance(r, ir.Call) else s.call
        elif isinstance(s, ir.SetItem):
            s.index = ir.map_vars(s.index, consts)
            s.value = ir.map_vars(s.value, consts)
        elif isinstance(s, ir.Return):
            s.value = ir.map_vars(s.value, consts)
        elif isinstance(s, ir.If):
            s.test = ir.map_vars(s.test, consts)
        elif isinstance(s, ir.For):
            s.start, s.stop, s.step = (ir.map_vars(p, consts) for p in (s.start, s.stop, s.step))
        elif isinstance(s, ir.While):
            s.test = ir.map_vars(s.test, consts)
        elif isinstance(s, ir.Mutate):
            if isinstance(s.call, ir.Call):
                r = _call(s.call, consts, fn, taken)
                s.call = r if isinstance(r, ir.Call) else s.call
        for b in ir.children(s):
            _block(b, consts, more, counts, fn, taken, done)
