"""``xp = get_array_module(x)`` resolved when the derivative is built.

A derivative is specialised on the array library of its arguments: ``runtime.kind_of`` gives a
NumPy array the kind ``"a"`` and an array of another library ``"a:<library>"`` (``"a:cupy"``), so
the cache keys of a NumPy call and a CuPy call differ.  :func:`resolve` reads those kinds: a call
of a function that returns the array namespace of its arguments (``rules/namespaces.py``:
``cupy.get_array_module``, ``cupyx.scipy.get_array_module``, ``array_api_compat.array_namespace``)
whose arguments are all parameters the function never binds again, or constants, is replaced by
its value, the module.  ``statics.bind`` then propagates that constant like a module passed in:
``xp.tanh(h)`` becomes the call of the module's own ``tanh`` (a primitive with its rule), and
``xp`` has no adjoint.  Anything else (the namespace of a computed value, keyword arguments, an
argument whose library a resolver does not know) is left to run time, as before.

The kinds handed on have ``"a:<library>"`` replaced by ``"a"``: classification needs only "an
array".
"""
from .. import ir
from ..rules import namespaces as _table
from .analysis import bound_names

_SCALAR_KINDS = ("f", "i", "z")


def array_kind(k):
    """The library of an array kind: "numpy" for "a", "cupy" for "a:cupy"; None otherwise."""
    if k == "a":
        return "numpy"
    if type(k) is str and k.startswith("a:"):
        return k[2:]
    return None


def resolve(fn, kinds):
    """Replace the namespace calls whose value the kinds fix by constants; returns (the kinds with
    every array kind as "a", the targets rewritten)."""
    libs = {}
    for p, k in zip(fn.params, kinds):
        lib = array_kind(k)
        if lib is not None:
            libs[p] = lib
        elif k in _SCALAR_KINDS:
            libs[p] = None              # (a number: get_array_module looks past it)
    plain = tuple("a" if array_kind(k) is not None else k for k in kinds)
    if not libs:
        return plain, []
    counts = {}
    for s in ir.walk(fn.body):
        for v in bound_names(s):
            counts[v] = counts.get(v, 0) + 1
    done = []
    for s in ir.walk(fn.body):
        if not (isinstance(s, ir.Assign) and isinstance(s.value, ir.Call) and
                isinstance(s.value.fn, ir.Static) and not s.value.kwargs):
            continue
        resolver = _table.lookup(s.value.fn.obj)
        if resolver is None:
            continue
        seen = set()
        for a in s.value.args:
            if isinstance(a, str) and a in libs and not counts.get(a):
                lib = libs[a]
            elif isinstance(a, ir.Const) and isinstance(a.value, (int, float, complex, type(None))):
                lib = None
            else:
                break                   # a value whose library is known only at run time
            if lib is not None:
                seen.add(lib)
        else:
            if not seen:
                continue
            mod = resolver(frozenset(seen))
            if mod is not None:
                s.value = ir.Const(mod)
                done.append(s.target)
    return plain, done
