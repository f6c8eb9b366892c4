"""Attribute access through builtins, spelled as plain attribute access before lowering.

``getattr(o, "w")``, ``setattr(o, "w", v)``, ``o.__dict__["w"]`` and ``vars(o)["w"]`` (reads,
writes and augmented writes) with a constant name become ``o.w``, so the analyses and both emitters
see one form.  An object's ``__dict__`` or ``vars(o)`` used any other way (held in a variable,
iterated, updated) would let values change behind s2sad's back: it is refused.

This runs after private-name mangling (:mod:`.mangle`): ``getattr(o, "__w")`` names the attribute
``__w`` even inside a class, as in Python, where only ``o.__w`` written as such becomes ``o._C__w``.
"""
import builtins

import gast

from ..errors import UnsupportedSyntaxError


def _name(id_, ctx):
    return gast.Name(id=id_, ctx=ctx, annotation=None, type_comment=None)


def _const_str(node):
    return node.value if isinstance(node, gast.Constant) and isinstance(node.value, str) and \
        node.value.isidentifier() else None


def _simple(node):
    """An expression that may be evaluated twice: a name or a chain of attributes of one."""
    while isinstance(node, gast.Attribute):
        node = node.value
    return isinstance(node, gast.Name)


class AttrBuiltins(gast.NodeTransformer):
    """Rewrites the constant-name forms; refuses the others (see the module docstring)."""

    def __init__(self, lowerer):
        self.lw = lowerer

    def _is(self, func, builtin):
        return isinstance(func, gast.Name) and func.id not in self.lw.locals and \
            self.lw.src.resolve(func.id) is builtin

    def _dict_owner(self, node):
        """``o`` for ``o.__dict__`` or ``vars(o)``, else None."""
        if isinstance(node, gast.Attribute) and node.attr == "__dict__":
            return node.value
        if isinstance(node, gast.Call) and self._is(node.func, builtins.vars) and \
                len(node.args) == 1 and not node.keywords:
            return node.args[0]
        return None

    def _refuse(self, node, what):
        raise UnsupportedSyntaxError(
            f"{what}: s2sad follows attributes only by name (values written through an object's "
            f"__dict__ would change behind its back)", origin=self.lw.src.origin(node),
            fix="read and write the attribute by name: `o.w`, `o.w = v`, `getattr(o, \"w\")`, "
                "`setattr(o, \"w\", v)` (with a constant name)")

    def _attr(self, obj, name, ctx, like):
        return gast.copy_location(gast.Attribute(value=obj, attr=name, ctx=ctx), like)

    def visit_Subscript(self, node):
        owner = self._dict_owner(node.value)
        key = _const_str(node.slice)
        if owner is not None and key is not None:
            return self._attr(self.visit(owner), key, node.ctx, node)
        return self.generic_visit(node)

    def visit_Attribute(self, node):
        if node.attr == "__dict__":
            self._refuse(node, "`.__dict__` used other than as `o.__dict__[\"name\"]`")
        return self.generic_visit(node)

    def visit_Call(self, node):
        f = node.func
        if self._is(f, builtins.vars):
            self._refuse(node, "`vars(...)` used other than as `vars(o)[\"name\"]`")
        if self._is(f, builtins.getattr) and not node.keywords and len(node.args) in (2, 3) and \
                _const_str(node.args[1]) is not None:
            obj = self.visit(node.args[0])
            name = _const_str(node.args[1])
            read = self._attr(obj, name, gast.Load(), node)
            if len(node.args) == 2:
                return read
            if not _simple(node.args[0]):
                return self.generic_visit(node)
            test = gast.copy_location(gast.Call(func=_name("hasattr", gast.Load()),
                                                args=[obj, gast.Constant(name, None)],
                                                keywords=[]), node)
            self.lw.namespace["hasattr"] = builtins.hasattr
            return gast.copy_location(gast.IfExp(test=test, body=read,
                                                 orelse=self.visit(node.args[2])), node)
        return self.generic_visit(node)

    def visit_Expr(self, node):
        c = node.value
        if isinstance(c, gast.Call) and self._is(c.func, builtins.setattr) and \
                not c.keywords and len(c.args) == 3 and _const_str(c.args[1]) is not None:
            target = self._attr(self.visit(c.args[0]), _const_str(c.args[1]), gast.Store(), c)
            return gast.copy_location(gast.Assign(targets=[target], value=self.visit(c.args[2]),
                                                  type_comment=None), node)
        return self.generic_visit(node)

    # nested functions and classes are lowered on their own, when they are differentiated
    def visit_FunctionDef(self, node):
        if node is self.lw.fnode:
            return self.generic_visit(node)
        return node

    visit_AsyncFunctionDef = visit_FunctionDef
    visit_ClassDef = visit_FunctionDef


def normalise(lowerer, fnode):
    return AttrBuiltins(lowerer).visit(fnode)
