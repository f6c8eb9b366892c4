"""Python's integers in ``jit=True``: products and powers of two ints, checked.

Python's ``int`` has no bound and ``2 ** -1`` is ``0.5``; numba's ints are 64-bit, a product that
leaves that range wraps around silently, and an int to a negative int power is an int.  A
derivative compiled with those rules would give other numbers than the function (a factorial
``fact *= k`` past ``20!``; ``x * 2 ** (-k)``).  This pass writes each product and power of two
operands typed int in the fused function as ``_rt.imul(a, b)`` / ``_rt.ipow(a, b)``
(runtime/jit.py): the same int where the result is the one Python computes, else the run-time
refusal that makes that call run as the Python derivative (the same numbers, without the speed).
A sum would need 2**63 to overflow and is left as it is.
"""
import ast

from .jit_fuse import range_loop

_CHECKED = {ast.Mult: "_rt.imul", ast.Pow: "_rt.ipow"}


class _Checked(ast.NodeTransformer):
    def __init__(self, ints):
        self.ints = ints
        self.changed = False

    def visit_Call(self, node):
        self.generic_visit(node)
        f = node.func
        if isinstance(f, ast.Name) and f.id == "pow" and len(node.args) == 2 and \
                not node.keywords and all(_is_int(a, self.ints) for a in node.args):
            self.changed = True
            return ast.Call(ast.Name("_rt.ipow", ast.Load()), node.args, [])
        return node

    def visit_BinOp(self, node):
        self.generic_visit(node)
        helper = _CHECKED.get(type(node.op))
        if helper is None or not (_is_int(node.left, self.ints) and
                                  _is_int(node.right, self.ints)):
            return node
        self.changed = True
        return ast.Call(ast.Name(helper, ast.Load()), [node.left, node.right], [])


_INT_OPS = (ast.Add, ast.Sub, ast.Mult, ast.Pow, ast.FloorDiv, ast.Mod)


def _is_int(node, ints):
    """Whether ``node`` is an int, given the names ``ints`` that hold ints (and the names of
    int64 stacks and of shapes, under ``("stack", name)`` and ``("shape", name)``): also
    ``len``/``int`` of anything, ``abs``/``max``/``min``/``pow`` of ints, ``a.shape[i]``,
    ``a.size``, ``a.ndim``."""
    if isinstance(node, ast.Constant):
        return type(node.value) is int
    if isinstance(node, ast.Name):
        return node.id in ints
    if isinstance(node, ast.BinOp) and isinstance(node.op, _INT_OPS):
        return _is_int(node.left, ints) and _is_int(node.right, ints)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return _is_int(node.operand, ints)
    if isinstance(node, ast.Subscript):     # (an item of a loop's stack of ints, of a shape)
        v = node.value
        return _is_int(node.slice, ints) and (
            isinstance(v, ast.Name) and (("stack", v.id) in ints or ("shape", v.id) in ints) or
            isinstance(v, ast.Attribute) and v.attr == "shape")
    if isinstance(node, ast.Attribute):
        return node.attr in ("size", "ndim")
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        name = node.func.id
        if name in ("len", "int"):
            return True
        if name in ("abs", "max", "min", "pow"):
            return bool(node.args) and all(_is_int(a, ints) for a in node.args)
    return False


def _int_stack(node):
    """``_np.empty(n, _np.int64)``: a loop's stack of ints (codegen/reverse)."""
    return isinstance(node, ast.Call) and len(node.args) == 2 and \
        not isinstance(node.args[0], ast.Tuple) and isinstance(node.args[1], ast.Attribute) and \
        node.args[1].attr == "int64" and isinstance(node.func, ast.Attribute) and \
        node.func.attr == "empty"


def int_names(fdef, params, param_types, globs):
    """The names of ``fdef`` that hold ints wherever they are bound (the greatest such set:
    an int parameter, a ``range`` loop's counter, a name every assignment of which is an int
    expression of those), and ``("stack", name)`` of its int64 stacks."""
    values = {}                         # name -> the values bound to it (None: not followed)
    stacks, shapes = set(), set()
    for p, t in zip(params, param_types):
        values.setdefault(p, []).append(ast.Constant(0) if t == ("s", "i") else None)
    for n in ast.walk(fdef):
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and \
                isinstance(n.targets[0], ast.Name):
            if _int_stack(n.value):
                stacks.add(n.targets[0].id)
            if isinstance(n.value, ast.Attribute) and n.value.attr == "shape":
                shapes.add(n.targets[0].id)
            values.setdefault(n.targets[0].id, []).append(n.value)
        elif isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name):
            values.setdefault(n.target.id, []).append(
                ast.BinOp(ast.Name(n.target.id, ast.Load()), n.op, n.value))
        elif isinstance(n, ast.For) and isinstance(n.target, ast.Name):
            values.setdefault(n.target.id, []).append(
                ast.Constant(0) if range_loop(n, globs) else None)
    for n in ast.walk(fdef):            # (a name bound otherwise: unpacked, in a comprehension)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and \
                not _simply_bound(fdef, n):
            values.setdefault(n.id, []).append(None)
    ints = {("stack", v) for v in stacks if all(_int_stack(x) for x in values[v])}
    ints |= {("shape", v) for v in shapes if all(isinstance(x, ast.Attribute) and
                                                 x.attr == "shape" for x in values[v])}
    ints |= {v for v, vs in values.items() if None not in vs}
    while True:
        drop = {v for v in ints if type(v) is str and
                not all(_is_int(x, ints) for x in values[v])}
        if not drop:
            return ints
        ints -= drop


def _simply_bound(fdef, name_node):
    """Whether the store ``name_node`` is the whole target of an assignment or of a for loop."""
    for n in ast.walk(fdef):
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and n.targets[0] is name_node:
            return True
        if isinstance(n, (ast.AugAssign, ast.For)) and n.target is name_node:
            return True
    return False


def checked_ints(triples, params, param_types, globs):
    """``triples`` (indent, text, origin, ...) of a function written for numba, with the products
    and powers of two ints written as checked helper calls (see the module docstring)."""
    if param_types is None:
        return triples
    try:
        start = next(i for i, t in enumerate(triples) if t[0] == 0 and t[1].startswith("def "))
        fdef = ast.parse("\n".join("    " * t[0] + t[1] for t in triples[start:])).body[0]
    except (StopIteration, SyntaxError):
        return triples
    ints = int_names(fdef, params, param_types, globs)
    out = list(triples)
    for k in range(start + 1, len(out)):
        indent, text = out[k][0], out[k][1]
        if not isinstance(text, str) or "\n" in text or len(out[k]) < 3 or out[k][2] is None:
            continue                                # (s2sad's own lines: stack sizes...)
        if "*" not in text and "pow(" not in text:
            continue
        try:
            stmt = ast.parse(text.strip()).body[0]
        except (SyntaxError, IndexError):
            continue                                # (a loop's or a branch's header)
        if not isinstance(stmt, (ast.Assign, ast.AugAssign, ast.Return, ast.Expr)):
            continue
        t = _Checked(ints)
        stmt = t.visit(stmt)
        if t.changed:
            out[k] = (indent, ast.unparse(ast.fix_missing_locations(stmt))) + tuple(out[k][2:])
    return out
