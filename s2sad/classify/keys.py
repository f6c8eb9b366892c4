"""Where a dict's keys become values: a check when it runs (:func:`runtime.keys_read`)."""
from .. import ir, runtime
from .common import _hashable, _insert_guards


_NUMBERS = {"a", "f", "i", "z"}


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
