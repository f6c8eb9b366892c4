"""Callbacks into the layers above the runtime.

The runtime imports nothing above it (not api, cache, codegen, classify, frontend or rules), yet
at run time it must build derivatives lazily (a derived callee, ``s2sad.jvp`` inside a
derivative) and look rules up (a call whose callee is known only at run time).  Each module
below registers its function here when it is imported, and the runtime calls through this
module (``hooks.lookup(fn)``), never through a name imported from it.  ``import s2sad`` sets
every hook but ``index_tricks``, which is set when the rule tables load: before the first
derivative is built, but not before a derivative read from the disk cache runs (that loads only
the tables its code calls), so the runtime reaches it through :func:`index_tricks_module`.
"""

reverse_derivative = None       # s2sad.cache: (fn, mask, kinds, mode="reverse") -> ReverseDerivative
forward_derivative = None       # s2sad.codegen.build_forward: (fn, mask, kinds, ...) -> forward derivative
split_closure = None            # s2sad.frontend.source: fn -> ({name: static value}, [data cell names])
lookup = None                   # s2sad.rules.registry: the rule of a callee, or None
lookup_method = None            # s2sad.rules.registry: the rule of an array method, by name
lookup_container_method = None  # s2sad.rules.registry: the rule of a list/dict method, by name
lookup_attr = None              # s2sad.rules.registry: the rule of an array attribute, by name
ufunc_method_name = None        # s2sad.rules.registry: "np.add.reduce" for a ufunc's method
rule_namespace = None           # s2sad.rules.registry.NAMESPACE: the globals of rule templates
index_tricks = None             # the module s2sad.rules.numpy.index_tricks (np.r_, np.c_... adjoints)
load_tables = None              # s2sad.rules.registry: load the built-in rule tables (once)
concrete = None                 # s2sad.api._concrete: the generated function behind s2sad.grad(f)
grad = None                     # s2sad.api.grad
graph_sweeps = None             # s2sad.graphs: a derivative's (fwd, bwd) with capturable matmuls in
                                # graph mode (preparing or capturing), None otherwise
rules_changed = None            # s2sad.cache: the user declared a rule; derivatives built before
                                # (which may have used the rule it replaced) are built again
origin_of = None                # s2sad.frontend.source: (file name, line) of generated code -> the
                                # user's Origin behind it, or None
graph_callee = None             # s2sad.graphs: fn, or in graph mode its capturable version (a matmul
                                # of xp.matmul/tensordot/... through kernels.contract)


def register(**callbacks):
    """Set hooks by name (a name that is not a hook above is an error)."""
    g = globals()
    for name, fn in callbacks.items():
        if name not in g or name.startswith("_") or name in ("register", "index_tricks_module"):
            raise NameError(f"s2sad.runtime.hooks has no hook {name!r}")
        g[name] = fn


def index_tricks_module():
    """The ``index_tricks`` hook, loading the rule tables (which set it) if they have not loaded."""
    if index_tricks is None:
        load_tables()
    return index_tricks
