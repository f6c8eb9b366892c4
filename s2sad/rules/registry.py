"""The rule registry: one :class:`Rule` per primitive callee.

A rule reads like a line of a derivative table::

    defrule(np.tanh, "x, /", vjp={"x": "g * (1 - ans * ans)"})
    defrule(operator.mul, "a, b, /", vjp={"a": "_rt.unbroadcast(g * b, a)",
                                          "b": "_rt.unbroadcast(g * a, b)"})

* ``params`` is the primal's signature as Python parameter text.  Call sites are bound to it at
  build time, so templates refer to arguments by these names.
* ``vjp`` maps each differentiable parameter to a Python *expression template* for its adjoint.  In a
  template, ``g`` is the adjoint of the output, ``ans`` is the output, parameter names are the call's
  arguments.  Templates may use the globals ``np``, ``math``, ``_rt`` (:mod:`s2sad.runtime`) and any
  names given in ``ns``.  Generated code contains the template with names substituted, so a simple
  rule is inlined and a large one is a call into a helper (``_adj.concatenate(g, arrays, axis)``).
  A parameter declared ``*args`` gets a template that returns a tuple with one adjoint per argument.
* ``joint`` = ``(names, template)``: one template returning a tuple of adjoints for ``names`` at once
  (for rules whose adjoints share work, e.g. ``linalg.solve``).
* ``jvp`` maps each differentiable parameter to a *tangent* template, linear in ``t`` (that
  parameter's tangent); the output tangent is the sum over active parameters.  Optional today.
* ``forbid`` maps parameter names to the only value the rule supports on an active call (e.g.
  ``{"out": None}``); anything else raises :class:`~s2sad.errors.RuleError` naming the call site.
* ``constant`` names parameters whose derivative is zero (a sign, an index): a value that carries a
  derivative may reach them.  Any other parameter without a ``vjp`` template refuses such a value
  with a clear error instead of silently giving it no derivative.
* ``view=True`` says the output may share memory with an input (used to decide what to copy when
  arrays are written in place).
* ``kind``: ``"array"`` (default), ``"float"`` (Python scalar), ``"same"`` (a Python float for
  Python floats, an array when an operand is an array: operators), ``"container"``, ``"any"``
  (unknown) -- the kind of value the primitive returns, used to pick ``+`` or ``_rt.add`` for
  accumulation and to resolve methods on the result at build time.
* ``n_<param>`` in a template is the number of arguments bound to a ``*param``.
* ``aliases`` maps a keyword the callee takes to the rule parameter that receives it, for a
  public parameter whose name templates reserve (``odeint(func, y0, t=ts)``: ``{"t": "times"}``);
  calls are bound through :meth:`Rule.bind_signature`, which renames those keywords (and refuses
  the internal name as a keyword, which the callee itself would not take).

``defzero(fn)`` declares a callee whose output carries no derivative (``np.floor``, ``np.argmax``).
``defmethod(name, ...)`` declares a rule for ``x.name(...)`` on an array ``x`` (NumPy or CuPy); its
``params`` start with ``self``.

Rules are looked up by the callee object (identity).  Callees that are made afresh on every access
(bound methods of library objects: ``scipy.stats.norm.logpdf``, ``norm(0, 1).logpdf``) or whole
families of objects (every ``rv_generic`` instance) are resolved by a *resolver*
(``defresolver(fn)``): a function the lookup asks, after the tables, for the rule of a callee;
it returns a :class:`Rule` or None.  A rule with ``receiver=True`` is one for a bound method whose
object is its first parameter (``self``): the object's adjoint (a dict of attribute adjoints, as
for any object) is the callee's adjoint.  ``why`` maps a parameter that has no derivative to the
reason, given in the refusal when a value carrying a derivative reaches it.
"""
import ast
import importlib
import inspect
import math
import sys
import threading

import numpy as np

from ..errors import RuleError, caller_origin

# Globals available to every template, and to the generated modules.
NAMESPACE = {"np": np, "math": math}

_RULES = {}           # callee object (or id for unhashable ones) -> Rule
_METHODS = {}         # method name -> Rule (methods on NumPy/CuPy arrays)
_ATTRS = {}           # attribute name -> Rule (attributes of NumPy/CuPy arrays: T, mT, real, imag)
_ZERO = object()      # marker stored in _RULES for zero-derivative callees


class Rule:
    """A primitive's derivative rule.  See the module docstring for the fields."""

    user = False                # declared by a user's s2sad.defrule (not s2sad's own tables)

    def __init__(self, fn, params, vjp=None, joint=None, jvp=None, forbid=None, view=False,
                 kind="array", ns=None, name=None, zero=False, broadcast=False, constant=(),
                 receiver=False, why=None, aliases=None, lazy=False):
        self.fn = fn
        self.receiver = receiver     # a bound method's rule: its first parameter is the object
        self.why = dict(why or {})   # parameter -> why it has no derivative (for refusals)
        self.joint = joint
        self.forbid = dict(forbid or {})
        self.view = view
        self.kind = kind
        self.ns = dict(ns or {})
        self.zero = zero
        self.broadcast = broadcast   # elementwise with NumPy broadcasting (lets emitters drop no-op unbroadcasts)
        self.constant = tuple(constant)   # parameters whose derivative is zero (signs, indices)
        # kind="any" rules whose result is an array unless one of these keywords is given a value
        # other than a constant False/None (logsumexp's return_sign=: a tuple then)
        self.array_unless = ()
        self._parsed = {}
        self._compiled = {}
        # the rest (name, signature, vjp, jvp, aliases) is read and checked by _finish: at once
        # for a user's rule (its errors name the user's line), on first use for the rows of
        # s2sad's own tables (lazy=True: a derivative read from the disk cache imports a table
        # module for its helpers and never reads most of its rows; tests/core/test_disk_cache.py
        # finishes every built-in rule)
        self._pending = (params, vjp, jvp, name, aliases)
        if not lazy:
            self._finish()
        self._publish_ns()

    def __getattr__(self, attr):
        """An attribute :meth:`_finish` sets, read before it ran: finish, then read it.  (Read
        again even where ``_pending`` is gone: another thread's ``_finish`` may have set it since
        this lookup missed; raising there was a race, seen as ``AttributeError: aliases`` when
        eight threads built their first derivatives at once.)"""
        if attr.startswith("__"):
            raise AttributeError(attr)
        if "_pending" in self.__dict__:
            self._finish()
        return object.__getattribute__(self, attr)

    def _finish(self):
        pending = self.__dict__.get("_pending")
        if pending is None:
            return
        params, vjp, jvp, name, aliases = pending
        joint, fn, zero = self.joint, self.fn, self.zero
        self_name = name or _callee_name(fn)
        self.name = self_name
        signature = _parse_params(params, fn, self_name)
        vjp = dict(vjp or {})
        jvp = dict(jvp or {})
        if not zero and "dtype" in signature.parameters:
            # ``dtype=`` is the output's dtype: an integer or bool output carries no derivative
            # (its adjoints and tangents are zero; a cast would truncate them instead)
            vjp = {k: _dtype_guarded(v) for k, v in vjp.items()}
            jvp = {k: _dtype_guarded(v) for k, v in jvp.items()}
        aliases = dict(aliases or {})   # the callee's keyword -> the parameter taking it
        names = set(signature.parameters)
        if "like" in names and "like" not in vjp and "like" not in jvp and \
                (getattr(fn, "__module__", None) or "").startswith("numpy"):
            # NumPy's like= (NEP 35) picks the array type of the result: never a value
            self.constant = tuple(self.constant) + ("like",)
        clash = names & {"g", "ans", "t"}
        if clash and not zero:
            raise RuleError(f"rule for {self_name}: parameters named {sorted(clash)} would hide the "
                            f"template names g (output adjoint), ans (output), t (tangent)",
                            origin=caller_origin(),
                            fix="rename them in params= (the names are yours: params=\"x, /\" "
                                "binds the callee's first argument to x; a keyword the callee "
                                "takes by that name: aliases={\"t\": \"times\"})")
        for public, p in aliases.items():
            if p not in names or public in names:
                raise RuleError(f"rule for {self_name}: aliases= maps the keyword {public!r} to "
                                f"{p!r}, which must be a parameter of ({params}) and {public!r} "
                                f"not one", origin=caller_origin(),
                                fix="key aliases= by the callee's own keyword and give the "
                                    "parameter of params= that takes it")
        for p in list(vjp) + list(jvp) + list((joint or ((), ""))[0]) + list(self.forbid):
            if p not in names:
                raise RuleError(f"rule for {self_name}: {p!r} is not a parameter of ({params})",
                                origin=caller_origin(),
                                fix="key vjp=/jvp= by the names given in params=")
        for text in list(vjp.values()) + list(jvp.values()) + ([joint[1]] if joint else []):
            try:
                ast.parse(text.strip(), mode="eval")
            except SyntaxError as e:
                raise RuleError(f"rule for {self_name}: template {text!r} is not an expression: "
                                f"{e.msg}", origin=caller_origin(),
                                fix="write each template as one Python expression of g (or t), "
                                    "ans and the parameters") from None
        self.signature, self.vjp, self.jvp, self.aliases = signature, vjp, jvp, aliases
        self.__dict__.pop("_pending", None)

    def _publish_ns(self):
        for k, v in self.ns.items():
            if k in NAMESPACE and NAMESPACE[k] is not v:
                raise RuleError(f"rule for {self.name}: template global {k!r} already means "
                                f"{NAMESPACE[k]!r}", origin=caller_origin(),
                                fix="give the object another name in ns= and in the templates")
            NAMESPACE[k] = v

    # -- what the emitter asks -------------------------------------------------------------
    @property
    def differentiable(self):
        """Parameter names that can carry a derivative: those with an adjoint template, then
        those with only a tangent template (the helpers generated code calls, whose tangents make
        second derivatives; a tangent that is zero, ``0.0 * ans``, makes a parameter constant)."""
        if self.joint:
            return tuple(self.joint[0])
        return tuple(self.vjp) + tuple(p for p in self.jvp if p not in self.vjp and
                                       self.jvp[p].replace(" ", "") != "0.0*ans")

    def _adjoint_text(self, which):
        if which == "*":
            return self.joint[1]
        if which not in self.vjp:
            raise RuleError(f"{self.name} has a tangent (forward-mode) rule for `{which}` but no "
                            f"adjoint (reverse-mode) rule, which reverse mode over a derivative "
                            f"(jacrev of a gradient) needs here",
                            fix="use forward mode over the gradient: s2sad.hessian(f), "
                                "s2sad.hvp(f) or s2sad.jacfwd(s2sad.grad(f))")
        return self.vjp[which]

    def template(self, which):
        """Parsed expression template: ``which`` is a parameter name, or ``"*"`` for ``joint``."""
        tree = self._parsed.get(which)
        if tree is None:
            text = self._adjoint_text(which)
            try:
                tree = ast.parse(text.strip(), mode="eval").body
            except SyntaxError as e:
                raise RuleError(f"rule for {self.name}: template {text!r} is not an expression: {e}",
                                origin=caller_origin(),
                                fix="write each template as one Python expression of g (or t), ans "
                                    "and the parameters")
            self._parsed[which] = tree
        return tree

    def tangent_template(self, param):
        key = ("jvp", param)
        tree = self._parsed.get(key)
        if tree is None:
            tree = ast.parse(self.jvp[param].strip(), mode="eval").body
            self._parsed[key] = tree
        return tree

    def reads(self, which):
        """Names a template reads: ``g``, ``ans`` and parameter names."""
        tree = self.template(which)
        names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        return names & (set(self.signature.parameters) | {"g", "ans"})

    def adjoint_function(self, which):
        """The template compiled into ``f(g, ans, **params)``: for runtime dispatch and tests."""
        fn = self._compiled.get(which)
        if fn is None:
            from .. import runtime
            params = ", ".join(["g", "ans"] + list(self.signature.parameters))
            text = self._adjoint_text(which)
            src = f"def _adjoint({params}):\n    return {text.strip()}\n"
            glb = dict(NAMESPACE)
            glb["_rt"] = runtime
            exec(compile(src, f"<rule {self.name}:{which}>", "exec"), glb)
            fn = self._compiled[which] = glb["_adjoint"]
        return fn

    def keyword(self, name):
        """The parameter a call's keyword ``name`` binds to (``aliases``)."""
        return self.aliases.get(name, name)

    def public_name(self, param):
        """The callee's own name of the parameter ``param`` (for messages and listings)."""
        for public, p in self.aliases.items():
            if p == param:
                return public
        return param

    def bind_signature(self, *args, **kwargs):
        """``self.signature.bind(*args, **kwargs)`` with the call's keywords renamed by
        ``aliases``: every binding of a call to the rule goes through here.  Raises TypeError
        when the call does not match (also for a parameter's internal name used as a keyword
        where the callee's own keyword is another: the callee would refuse it)."""
        if self.aliases:
            inner = set(self.aliases.values())
            for k in kwargs:
                if k in inner:
                    raise TypeError(f"got an unexpected keyword argument {k!r} (the callee's "
                                    f"keyword is " + " or ".join(
                                        repr(a) for a, p in self.aliases.items() if p == k) + ")")
            kwargs = {self.keyword(k): v for k, v in kwargs.items()}
        return self.signature.bind(*args, **kwargs)

    def bind(self, args, kwargs):
        """Bind call arguments to the rule's parameters: returns an ordered dict, defaults applied.

        ``*args`` parameters are bound to a tuple, ``**kwargs`` to a dict.  Raises TypeError when
        the call does not match the signature."""
        ba = self.bind_signature(*args, **kwargs)
        ba.apply_defaults()
        return ba.arguments

    def __repr__(self):
        return f"<Rule {self.name}({', '.join(self.signature.parameters)})>"


def _dtype_guarded(text):
    """``_rt.dtype_guard(dtype, <template>)`` (dropped from generated code when dtype is None)."""
    t = text.strip()
    if t.startswith("_rt.dtype_guard(dtype,"):
        return text
    return f"_rt.dtype_guard(dtype, {t})"


def ufunc_method_name(fn):
    """``np.add.reduce`` for a method of a NumPy ufunc (``reduce``, ``at``...), else None."""
    owner = getattr(fn, "__self__", None)
    if isinstance(owner, np.ufunc):
        return f"np.{owner.__name__}.{getattr(fn, '__name__', '?')}"
    return None


def _callee_name(fn):
    if isinstance(fn, tuple):
        return ".".join(str(p) for p in fn)
    mod = getattr(fn, "__module__", None) or ""
    qn = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)
    if isinstance(fn, np.ufunc):
        return f"numpy.{fn.__name__}"
    method = ufunc_method_name(fn)
    if method is not None:
        return method
    short = {"numpy": "np", "_operator": "operator", "builtins": ""}.get(mod.split(".")[0], mod)
    if mod.startswith("numpy"):
        short = "np" + mod[5:].replace(".core", "").replace("._core", "")
        short = short.split("._")[0]
    return f"{short}.{qn}" if short else qn


def _parse_params(params, fn, name):
    if params is None:
        try:
            return inspect.signature(fn)
        except (TypeError, ValueError):
            raise RuleError(f"rule for {name}: the callee has no signature s2sad can read",
                            origin=caller_origin(),
                            fix="give params=, e.g. params=\"x, /, axis=None\"")
    sig = _SIGNATURES.get(params)
    if sig is not None:
        return sig
    src = f"def _sig({params}): pass"
    glb = dict(NAMESPACE)
    try:
        exec(compile(src, "<params>", "exec"), glb)
    except SyntaxError as e:
        raise RuleError(f"rule for {name}: params {params!r} do not parse: {e}",
                        origin=caller_origin(),
                        fix="write params= as a Python parameter list, e.g. \"x, y=1.0, /\"")
    sig = inspect.signature(glb["_sig"])
    if all(p.default is p.empty or p.default is None or type(p.default) in (bool, int, float, str)
           for p in sig.parameters.values()):
        _SIGNATURES[params] = sig   # (immutable: shared by the rules that write the same text)
    return sig


_SIGNATURES = {}       # params text -> its Signature (the tables repeat "x, /" and the like)


def _key(fn):
    try:
        hash(fn)
        return fn
    except TypeError:
        return ("id", id(fn))


# -- declaring rules -------------------------------------------------------------------------
# Every declaration made outside this package, as (what, arguments): the disk cache keys entries
# on them (s2sad/diskcache.py), so that a derivative built under other rules is never reused.
USER_DECLARATIONS = []


def _note_user(what, *args):
    """Record a declaration made outside this package; returns whether it was (False for the
    rows of s2sad's own tables, whose rules are read lazily: :class:`Rule`)."""
    caller = sys._getframe(2).f_globals.get("__name__", "")
    if not caller.startswith(__package__ + "."):
        USER_DECLARATIONS.append((what, args))
        if _hooks.rules_changed is not None:
            # (a rule declared again, or for a function a derivative recursed into: the
            # derivatives built so far may follow what it replaces)
            _hooks.rules_changed()
        return True
    return False


def defrule(fn, params=None, *, vjp=None, joint=None, jvp=None, forbid=None, view=False,
            kind="array", ns=None, name=None, broadcast=False, constant=(), aliases=None):
    """Declare the derivative rule of a primitive callee ``fn``; returns the :class:`Rule`.

    ``broadcast=True`` marks an elementwise operation that broadcasts its array operands;
    ``aliases={"t": "times"}`` binds the callee's keyword ``t=`` to the parameter ``times`` (for
    a keyword named like a template name: ``g``, ``ans``, ``t``)."""
    _before_user_declaration()
    user = _note_user("defrule", fn, params, vjp, joint, jvp, forbid, view, kind, ns, name,
                      broadcast, constant, aliases)
    rule = Rule(fn, params, vjp=vjp, joint=joint, jvp=jvp, forbid=forbid, view=view, kind=kind,
                ns=ns, name=name, broadcast=broadcast, constant=constant, aliases=aliases,
                lazy=not user)
    rule.user = user            # (its adjoints' shapes are checked when they run)
    _RULES[_key(fn)] = rule
    return rule


def defalias(fn, rule, name=None, subst=None, aliases=None):
    """Declare that callee ``fn`` has the same derivative as ``rule`` (e.g. ``cupy.tanh`` and
    ``np.tanh``); returns the new :class:`Rule`.  ``subst`` maps template text to replace (e.g.
    ``{"_sp.": "_csp."}`` to call CuPy's special functions instead of SciPy's); ``aliases``
    replaces the rule's (``fn``'s keyword -> the rule's parameter: ``cupyx.scipy.linalg.expm(a=)``
    binds to the parameter ``A`` of ``scipy.linalg.expm``'s rule)."""
    import copy
    rule._finish()
    _note_user("defalias", fn, rule.name, name, subst, aliases)
    new = copy.copy(rule)
    new.fn = fn
    new.name = name or _callee_name(fn)
    if aliases is not None:
        params = new.signature.parameters
        for public, p in aliases.items():
            if p not in params or public in params:
                raise RuleError(f"alias of {new.name}: aliases= maps {public!r} to {p!r}, which "
                                f"must be a parameter of ({', '.join(params)}) and {public!r} "
                                f"not one", origin=caller_origin(),
                                fix="key aliases= by the callee's own keyword")
        new.aliases = dict(aliases)
    if subst:
        def sub(text):
            for a, b in subst.items():
                text = text.replace(a, b)
            return text
        new.vjp = {k: sub(v) for k, v in rule.vjp.items()}
        new.jvp = {k: sub(v) for k, v in rule.jvp.items()}
        new.joint = (rule.joint[0], sub(rule.joint[1])) if rule.joint else None
        new._parsed, new._compiled = {}, {}
    _RULES[_key(fn)] = new
    return new


def defzero(*fns, params=None):
    """Declare callees whose outputs carry no derivative (``np.floor``, ``np.argmax``...)."""
    _before_user_declaration()
    user = _note_user("defzero", fns, params)
    for fn in fns:
        _RULES[_key(fn)] = Rule(fn, params if params is not None else "*args, **kwargs", zero=True,
                                lazy=not user)


def defmethod(name, params, *, vjp=None, joint=None, jvp=None, forbid=None, view=False,
              kind="array", ns=None):
    """Declare the rule of the array method ``x.name(...)``; ``params`` start with ``self``."""
    _before_user_declaration()
    user = _note_user("defmethod", name, params, vjp, joint, jvp, forbid, view, kind, ns)
    rule = Rule(("ndarray", name), params, vjp=vjp, joint=joint, jvp=jvp, forbid=forbid,
                view=view, kind=kind, ns=ns, name=f"ndarray.{name}", lazy=not user)
    _METHODS[name] = rule
    return rule


def defzero_method(*names):
    user = _note_user("defzero_method", names)
    for name in names:
        _METHODS[name] = Rule(("ndarray", name), "self, *args, **kwargs", zero=True,
                              name=f"ndarray.{name}", lazy=not user)


def defattr(name, *, vjp=None, jvp=None, view=False, kind="array"):
    """Declare the rule of the array attribute ``x.name`` (``T``, ``real``...); its param is ``self``."""
    user = _note_user("defattr", name, vjp, jvp, view, kind)
    rule = Rule(("ndarray", name), "self", vjp=vjp, jvp=jvp, view=view, kind=kind,
                name=f"ndarray.{name}", lazy=not user)
    _ATTRS[name] = rule
    return rule


_CONTAINER_METHODS = {}   # method name -> Rule (read-only methods of dict/list/tuple)


def defcontainer(name, params, *, vjp=None, jvp=None, kind="any", zero=False, view=False):
    """Declare the rule of a read-only container method ``d.name(...)`` (``dict.get``...);
    ``view=True``: the result is live, it shares the container's memory (``d.items()``)."""
    user = _note_user("defcontainer", name, params, vjp, jvp, kind, zero, view)
    rule = Rule(("container", name), params, vjp=vjp, jvp=jvp, kind=kind, zero=zero, view=view,
                name=f"container.{name}", lazy=not user)
    _CONTAINER_METHODS[name] = rule
    return rule


def lookup_container_method(name):
    _ensure_tables()
    return _CONTAINER_METHODS.get(name)


def lookup_attr(name):
    _ensure_tables()
    return _ATTRS.get(name)


def lookup(fn):
    """The :class:`Rule` registered for ``fn``, or None."""
    _ensure_tables()
    try:
        rule = _RULES.get(fn) if _hashable(fn) else _RULES.get(("id", id(fn)))
    except TypeError:
        return None
    if rule is None and _optional_pending():
        _load_optional_tables()
        rule = _RULES.get(fn) if _hashable(fn) else _RULES.get(("id", id(fn)))
    if rule is None:
        for resolve in _RESOLVERS:
            rule = resolve(fn)
            if rule is not None:
                break
    return rule


_RESOLVERS = []       # functions callee -> Rule or None, asked when no table holds the callee


def defresolver(fn):
    """Declare a resolver: ``fn(callee)`` returns the :class:`Rule` of callees no table holds by
    identity (bound methods made on each access, families of instances), or None.  It is asked on
    every lookup that misses the tables, so it must reject foreign callees quickly (a type test)
    and cache the rules it makes."""
    if fn not in _RESOLVERS:
        _note_user("defresolver", fn)
        _RESOLVERS.append(fn)
    return fn


def _optional_pending():
    return any(lib in sys.modules and table not in _optional_loaded for lib, table in _OPTIONAL.items())


def lookup_method(name):
    """The rule for ``x.name(...)`` on an array, or None."""
    _ensure_tables()
    return _METHODS.get(name)


def _hashable(fn):
    try:
        hash(fn)
        return True
    except TypeError:
        return False


# -- loading the built-in tables -------------------------------------------------------------
# The table modules of this package, imported by name (they import this module, not the reverse).
# SciPy rules are loaded only once SciPy is imported (by the user's code); CuPy callees map to the
# NumPy rules (see :mod:`.cupy`).
_TABLES = ["python", "deques", "numpy", "runtime_helpers", "transforms"]
_OPTIONAL = {"scipy": "scipy", "cupy": "cupy"}
_optional_loaded = set()


def load_table(name):
    """Import the table ``name`` of this package: a module, or a package and every topic module
    in it (``numpy``: ``numpy/reductions.py``...; a new topic is a new module, listed nowhere
    else).  A topic module can also be imported alone, with the modules it imports itself: a
    derivative read from the disk cache imports only those whose helpers it calls."""
    full = f"{__package__}.{name}"
    try:
        mod = importlib.import_module(full)
    except ModuleNotFoundError as e:
        if e.name != full:
            raise
        return
    path = getattr(mod, "__path__", None)
    if path is not None:
        import pkgutil
        for sub in sorted(m.name for m in pkgutil.iter_modules(path)):
            if not sub.startswith("_"):
                importlib.import_module(f"{full}.{sub}")


def load_builtin_tables():
    for name in _TABLES:
        load_table(name)
    load_optional_tables()


def load_optional_tables():
    """Load the tables of optional libraries the user's process has imported by now."""
    for lib, table in _OPTIONAL.items():
        if table not in _optional_loaded and lib in sys.modules:
            try:
                load_table(table)
            finally:
                _optional_loaded.add(table)   # published once filled (or failed): see below


# The tables are filled first and published after: ``_loaded`` turns True only once every table
# module has run.  Threads making their first calls together wait on ``_LOAD_LOCK`` for the thread
# that loads; that thread itself (a table whose import looks a rule up, or declares one) goes on
# with the tables it has filled so far.  A derivative is never built from half-filled tables.
_LOAD_LOCK = threading.RLock()
_loaded = False
_loader = None          # the thread loading the tables, while it does


def _ensure_tables():
    """Import the built-in rule tables once (lazily, so `import s2sad` stays light)."""
    global _loaded, _loader
    if _loaded or _loader is threading.current_thread():
        return
    with _LOAD_LOCK:
        if _loaded or _loader is not None:      # loaded meanwhile, or this thread is loading
            return
        _loader = threading.current_thread()
        try:
            load_builtin_tables()
            _loaded = True
        finally:
            _loader = None


def _load_optional_tables():
    """Load the tables of optional libraries imported since (SciPy...), under the same lock: a
    thread that finds a table not yet loaded waits until it is filled."""
    global _loader
    if _loader is threading.current_thread():
        return
    with _LOAD_LOCK:
        if _loader is not None:
            return
        _loader = threading.current_thread()
        try:
            load_optional_tables()
        finally:
            _loader = None


def _before_user_declaration():
    """A rule declared by the user (``s2sad.defrule`` before any derivative was built) must not
    be overwritten by the built-in tables loading later: load them first.  The tables' own
    declarations (modules of this package) skip this."""
    if _loaded or _loader is threading.current_thread():
        return
    caller = sys._getframe(2).f_globals.get("__name__", "")
    if caller.startswith(__package__ + "."):
        return
    _ensure_tables()


# -- listing the tables (``s2sad rules``, docs/coverage.md) ------------------------------------------
def iter_rules():
    """Every rule declared so far, as ``(where, rule)``, after loading the built-in tables (SciPy's
    and CuPy's once those libraries are imported).  ``where`` is ``"callee"`` (looked up by the
    callee object, ``rule.fn``), ``"method"`` (``x.name(...)`` on an array), ``"attr"``
    (``x.name``) or ``"container"`` (``d.name(...)`` on a dict, list or tuple).  The rules a
    resolver makes are not listed: ask :func:`lookup` about the callee."""
    _ensure_tables()
    _load_optional_tables()
    for where, table in (("callee", _RULES), ("method", _METHODS), ("attr", _ATTRS),
                         ("container", _CONTAINER_METHODS)):
        for rule in list(table.values()):
            yield where, rule


from ..runtime import hooks as _hooks  # noqa: E402
_hooks.register(lookup=lookup, lookup_method=lookup_method, lookup_container_method=lookup_container_method,
                lookup_attr=lookup_attr, ufunc_method_name=ufunc_method_name, rule_namespace=NAMESPACE,
                load_tables=_ensure_tables)
