"""Values the reverse sweep reads only for their shapes.

A helper that reads only the shape and dtype of a parameter declares it
(``rules.adjoints._shape_only``: ``_adj.sum(g, a, axis, keepdims)`` reads ``a.shape``).  Where the
argument is a variable whose type (classify/types.py) is an array, the forward sweep binds its
shape just before the statement, that is what is saved (by name, or on a stack inside loops), and
the template gets ``_adj.standin(_shape1)``, an array of that shape (and dtype) owning one element
(every stride 0).  The array itself is no longer kept for the reverse sweep, unless another read
needs it.

- ``jit=True``: the compiled ``_rt.unbroadcast(g, x)`` (of an elementwise operation's operand)
  and ``_rt.getitem_adjoint(g, x, idx)``/``acc_getitem`` (of an element read) read x's shape
  alone too.  For real arrays that a loop binds (a value saved once per trip: one array kept
  alive per trip, on a list) and arrays that may be changed in place (their saves are copies; an
  element of one, read once per trip of an outer loop, would copy it per trip):
  ``_shape1 = a.shape`` (a tuple of ints), saved on a 2-d integer array inside loops
  (stacks.py).  The stand-in is float64, the dtype of a real array's adjoint in the compiled mode
  (float32 arguments run as Python).  Any other array is read by name, at no cost.
- Python mode: ``_shape1 = (a.shape, a.dtype)`` (its types know a dtype's kind, not its size),
  only for arrays that may be changed in place (analysis.written_arrays): their saves would be
  copies (``_rt.snap``).  Elsewhere a reference to the array costs less than a shape, a dtype and
  a stand-in.

A value saved by name (bound once at the top level) stays as it is in both modes.

A list display of real numbers given to ``np.array`` is not kept in jit mode either: its adjoint
(``_adj.array_adjoint_of(g, obj)``) reads only its numba type, and becomes
``_adj.list_adjoint(g)``.

The dtype of an array written into (``y[i] = v``), where its type does not show it is a float or
complex array, is saved the same way (:meth:`ShapeSaves.dtype_var`): an integer or bool array
truncates what is written into it, and ``v`` then gets no adjoint.
"""
from ... import ir
from ...frontend.analysis import bound_names, defined_in, written_arrays
import ast as _ast
import inspect

from .. import text as T


class ShapeSaves:
    """The part of :class:`~.emitter.ReverseEmitter` that saves shapes instead of arrays."""

    def shape_args(self, tree, stmt):
        """``tree`` (a template, substituted) with each shape-only argument that is a typed real
        array variable replaced by a stand-in made from its saved shape."""
        for node in _ast.walk(tree):
            if not (isinstance(node, _ast.Call) and isinstance(node.func, _ast.Attribute) and
                    isinstance(node.func.value, _ast.Name) and
                    node.func.value.id in ("_adj", "_rt")):
                continue
            if node.func.value.id == "_rt":
                # (jit=True: the compiled getitem_adjoint(g, x, idx) and unbroadcast(g, x) read
                # a real array x's shape alone)
                if not (self.jit and node.func.attr in ("getitem_adjoint", "unbroadcast")):
                    continue
                positions = [1]
            elif self.jit and node.func.attr == "array_adjoint_of" and len(node.args) == 2 and \
                    isinstance(node.args[1], _ast.Name) and \
                    self.types.get(node.args[1].id) == ("L", "f"):
                # np.array of a list display of real numbers: the list's numba type (a list of
                # floats) is all the adjoint reads of it
                node.func.attr = "list_adjoint"
                del node.args[1]
                continue
            else:
                helper = getattr(self.namespace.get("_adj"), node.func.attr, None)
                params = getattr(helper, "shape_params", None)
                if not params:
                    continue
                names = list(inspect.signature(helper).parameters)
                positions = [names.index(p) for p in params]
            for i in positions:
                if i >= len(node.args) or not isinstance(node.args[i], _ast.Name):
                    continue
                if node.func.attr == "unbroadcast" and sum(
                        1 for n in _ast.walk(tree)
                        if isinstance(n, _ast.Name) and n.id == node.args[i].id) > 1:
                    continue        # (the template reads the array itself too: it is kept)
                text = self.standin_text(stmt, node.args[i].id)
                if text is not None:
                    node.args[i] = T.parse_expr(text)
        return tree

    def standin_text(self, stmt, v):
        """``_adj.standin(<v's shape, bound before stmt>)`` for an argument read for its shape
        alone, where ``v`` is a typed array (real, in jit mode) that would otherwise be saved as
        a copy (changed in place) or, in jit mode, once per trip of a loop; else None (then
        ``v`` itself is saved by name: the array costs nothing)."""
        t = self.types.get(v)
        if t is None or t[0] != "a" or (self.jit and t[1] not in "bif"):
            return None
        if v not in self.written_anywhere() and not (self.jit and self.depth > 0 and
                                                     v in self.loop_bound()):
            return None
        return f"_adj.standin({self.shape_var(stmt, v)})"

    def loop_bound(self):
        """The variables a loop body binds (a value of theirs read by the reverse sweep is saved
        once per trip; any other is read by name, which costs nothing)."""
        if self._loop_bound is None:
            self._loop_bound = set()
            for s in ir.walk(self.fn.body):
                if isinstance(s, (ir.For, ir.While)):
                    self._loop_bound |= defined_in([s])
        return self._loop_bound

    def shape_var(self, stmt, v):
        """The name of ``v``'s shape as statement ``stmt`` finds it.  Statements of one block
        between two bindings of ``v`` share one name (a shape changes only when the name is bound
        again), bound before the first of them: one save, one push and one pop per trip where
        Python mode reads ``y[0]`` and ``y[1]`` of one array (saves.py shares the push)."""
        key = self._shape_region(stmt, v)
        name = self.shape_vars.get(key)
        if name is None:
            name = self.shape_vars[key] = self.fresh("shape")
            self.synthetic[name] = "name" if self.depth == 0 else "stack"
            self.shape_users[name] = (v, [])
        self.shape_users[name][1].append(stmt)
        self.read(stmt, "pre", name)
        return name

    def shape_here(self, stmt, v):
        """The name of ``v``'s saved shape where ``stmt``'s reverse reads it (``stmt`` is one of
        its users, so it is bound there), or None."""
        name = self.shape_vars.get(self._shape_region(stmt, v))
        if name is None or not any(u is stmt for u in self.shape_users[name][1]):
            return None
        return name

    def _shape_region(self, stmt, v):
        """``(id(block), v, k)``: ``stmt`` is in ``block`` after ``k`` statements that bind ``v``
        (``(id(stmt), v)`` for a statement in no block the function has, as a loop's own)."""
        if self._blocks is None:
            self._blocks = {}
            for blk in [self.fn.body] + [b for s in ir.walk(self.fn.body)
                                         for b in ir.children(s)]:
                binds = []
                for k, x in enumerate(blk):
                    self._blocks[id(x)] = (id(blk), k, binds)
                    binds.append({n for y in ir.walk([x]) for n in bound_names(y)})
        where = self._blocks.get(id(stmt))
        if where is None:
            return (id(stmt), v)
        blk, k, binds = where
        return (blk, v, sum(1 for b in binds[:k] if v in b))

    def first_users(self):
        """id(stmt) -> [(shape name, var)] bound just before it: the first statement of its
        block that reads the shape (after the reverse sweep has named them all)."""
        if self._first_users is None:
            self._first_users = {}
            for name, (v, users) in self.shape_users.items():
                first = min(users, key=lambda x: self._blocks.get(id(x), (0, 0))[1])
                self._first_users.setdefault(id(first), []).append((name, v))
        return self._first_users

    def dtype_var(self, stmt, v):
        """The name the forward sweep binds, just before ``stmt``, to what the reverse sweep must
        know of the dtype of the array ``v`` that ``stmt`` writes into: whether a value written
        into it keeps its derivative (an integer or bool array truncates what it is given, so the
        value's adjoint is zero).  Python mode: ``_rt.dtype_of(None, v)``, the dtype (None for a
        list), for ``_rt.dtype_guard``; ``jit=True``: ``_rt.inexact(v)``, a bool, for
        ``_rt.keep_if``.  A dtype or a bool is what is saved, never the array."""
        key = (id(stmt), v, "dtype")
        name = self.shape_vars.get(key)
        if name is None:
            name = self.shape_vars[key] = self.fresh("dt")
            form = "_rt.inexact({v})" if self.jit else "_rt.dtype_of(None, {v})"
            self.shape_binds.setdefault(id(stmt), []).append((name, v, form))
            self.synthetic[name] = "name" if self.depth == 0 else "stack"
        self.read(stmt, "pre", name)
        return name

    def written_anywhere(self):
        if self._written is None:
            self._written = written_arrays(self.fn)
        return self._written

    def shape_lines(self, s):
        """The forward sweep's bindings of the shapes statement ``s``'s reverse reads."""
        form = "{v}.shape" if self.jit else "({v}.shape, {v}.dtype)"
        return [T.Line(f"{bind[0]} = " + (bind[2] if len(bind) > 2 else form).format(v=bind[1]),
                       s.origin)
                for bind in self.first_users().get(id(s), []) + self.shape_binds.get(id(s), [])]
