"""The lowering's tables: which :mod:`operator` function each operator node calls (and its text in
generated code), the names of unsupported constructs, and the calls that make, consume or drain
iterators."""
import itertools
import math
import operator

import gast

from ... import runtime

BINOPS = {
    gast.Add: operator.add, gast.Sub: operator.sub, gast.Mult: operator.mul,
    gast.Div: operator.truediv, gast.FloorDiv: operator.floordiv, gast.Mod: operator.mod,
    gast.Pow: operator.pow, gast.MatMult: operator.matmul, gast.LShift: operator.lshift,
    gast.RShift: operator.rshift, gast.BitAnd: operator.and_, gast.BitOr: operator.or_,
    gast.BitXor: operator.xor,
}
UNARYOPS = {gast.USub: operator.neg, gast.UAdd: operator.pos, gast.Not: operator.not_,
            gast.Invert: operator.invert}
CMPOPS = {gast.Eq: operator.eq, gast.NotEq: operator.ne, gast.Lt: operator.lt,
          gast.LtE: operator.le, gast.Gt: operator.gt, gast.GtE: operator.ge,
          gast.Is: operator.is_, gast.IsNot: operator.is_not, gast.In: operator.contains,
          gast.NotIn: "not in"}

_OPNAMES = {operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/",
            operator.floordiv: "//", operator.mod: "%", operator.pow: "**", operator.matmul: "@",
            operator.lshift: "<<", operator.rshift: ">>", operator.and_: "&", operator.or_: "|",
            operator.xor: "^", operator.neg: "-", operator.pos: "+", operator.not_: "not",
            operator.invert: "~", operator.eq: "==", operator.ne: "!=", operator.lt: "<",
            operator.le: "<=", operator.gt: ">", operator.ge: ">=", operator.is_: "is",
            operator.is_not: "is not"}


def _opname(fn):
    return _OPNAMES[fn]


_CONSTRUCT_NAMES = {
    gast.Lambda: "a lambda expression", gast.ListComp: "a list comprehension",
    gast.SetComp: "a set comprehension", gast.DictComp: "a dict comprehension",
    gast.GeneratorExp: "a generator expression", gast.Yield: "`yield` (generator functions)",
    gast.YieldFrom: "`yield from` (generator functions)", gast.Await: "`await` (async functions)",
    gast.NamedExpr: "an assignment expression (:=)", gast.Starred: "starred arguments (*args)",
    gast.JoinedStr: None, gast.Set: None,
    gast.With: "a `with` statement", gast.AsyncWith: "`async with`", gast.Try: "a try statement",
    gast.AsyncFor: "`async for`", gast.ClassDef: "a class definition inside the function",
    gast.FunctionDef: "a nested function definition", gast.Global: "a `global` declaration",
    gast.Nonlocal: "a `nonlocal` declaration", gast.Delete: "a `del` statement",
}


_MUTATORS = {"append", "extend", "insert", "pop", "update"}

# Calls that consume an iterable argument, and which arguments ("all", "one": the single-argument
# form of min/max, or positions); each such argument gets a cursor (runtime.here).
_ITER_CONSUMERS = {sorted: (0,), list: (0,), tuple: (0,), set: (0,), frozenset: (0,), dict: (0,),
                   sum: (0,), any: (0,), all: (0,), min: "one", max: "one", zip: "all",
                   enumerate: (0,), iter: (0,), next: (0,), math.fsum: (0,), math.prod: (0,)}
try:
    import heapq as _heapq
    _ITER_CONSUMERS.update({_heapq.nsmallest: (1,), _heapq.nlargest: (1,)})
    _ITER_CONSUMERS.update({itertools.starmap: (1,), itertools.islice: (0,),
                            itertools.takewhile: (1,), itertools.dropwhile: (1,)})
except ImportError:     # pragma: no cover
    pass
# ... of which these take every value
_ITER_DRAINS = {sorted, list, tuple, set, frozenset, dict, sum, any, all, min, max, math.fsum,
                math.prod}
# Calls that make an iterator: inside a derivative they make a runtime.Iter
_ITER_MAKERS = {zip: runtime.izip, enumerate: runtime.ienumerate, reversed: runtime.ireversed,
                iter: runtime.iiter}

# calls that make a value without other effects (what a map or generator walks: _pure_iterable)
_PURE_MAKERS = {zip, enumerate, reversed, iter, range, list, tuple, len}


def _hashable(obj):
    try:
        hash(obj)
        return True
    except TypeError:
        return False


def _index_trick(value):
    """np.r_, np.c_, np.mgrid, np.ogrid, np.s_, np.index_exp (and CuPy's): lowered as calls."""
    cls = type(value)
    if cls.__module__.startswith(("numpy", "cupy")) and not isinstance(value, type):
        from ...rules.adjoints import _index_trick_kind
        return _index_trick_kind(value) is not None
    return False
