"""Adjoint products written into the adjoint's own buffer (Python mode).

A rule's adjoint is often the incoming adjoint times something: ``g * cj(b)`` for ``a * b``,
``g * (1 - ans * ans)`` for ``tanh``, ``g * mask`` for a ReLU.  Where ``g`` is an adjoint that no
later line of the reverse sweep reads, its buffer is free after that line, and the product can be
written into it instead of into a new array (one allocation and one array of memory traffic
less).  This pass rewrites such a product, at the top level of a statement of the top-level
reverse sweep (``_b_h = g * x`` or ``_b_h = _rt.unbroadcast(g * x, h)``), into
``_rt.mul_into(g, x)``; the run-time helper writes in place only where that is invisible (an
array that owns its buffer, nothing else refers to it, the product has its shape and dtype), and
multiplies as before otherwise.

"No later line reads g" is decided on the text: any later appearance of the name (in a line, in a
loop or branch body, in the pops of saved values, in the returned gradients) keeps the product as
it is.  Lines inside loops and branches are left alone (a loop runs its body again).
"""
import ast
import re

from .. import text as T

_ADJOINT = re.compile(r"_b\d*_\w*\Z")
_NAME = re.compile(r"[A-Za-z_]\w*")


def _texts(item, expand):
    """The text of an item of the reverse sweep, nested bodies and expanded hooks included."""
    if isinstance(item, T.Line):
        return [item.text]
    if isinstance(item, T.Hook):
        out = []
        for it in expand(item):
            out += _texts(it, expand)
        return out
    out = [item.header]
    for it in item.body:
        out += _texts(it, expand)
    orelse = item.orelse
    if orelse:
        for it in (orelse if isinstance(orelse, list) else [orelse]):
            out += _texts(it, expand)
    return out


def write_in_place(rev, expand, tail, scalars=()):
    """Rewrite, in the top-level reverse sweep ``rev`` (a list of text items), the products of a
    dead adjoint as described above.  ``expand(hook)`` gives a hook's lines; ``tail`` is the
    text that follows the sweep (the return of the gradients); ``scalars`` names adjoints known
    to be numbers (left as they are: nothing to write into)."""
    later = set(_NAME.findall(tail)) | set(scalars)
    for i in range(len(rev) - 1, -1, -1):
        item = rev[i]
        if isinstance(item, T.Line) and not item.raw:
            new = _rewrite(item.text, later)
            if new is not None:
                item.text = new
        for text in _texts(item, expand):
            later.update(_NAME.findall(text))


def _rewrite(text, later):
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.Assign):
        return None
    stmt = tree.body[0]
    value = stmt.value
    if _is_product(value):
        new = _into(value, later, stmt.value)
        if new is None:
            return None
        stmt.value = new
    elif isinstance(value, ast.Call) and _is_rt(value.func, "unbroadcast") and value.args and \
            _is_product(value.args[0]):
        new = _into(value.args[0], later, value)
        if new is None:
            return None
        value.args[0] = new
    else:
        return None
    return ast.unparse(ast.fix_missing_locations(tree))


def _is_product(node):
    return isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult)


def _is_rt(node, name):
    return isinstance(node, ast.Attribute) and node.attr == name and \
        isinstance(node.value, ast.Name) and node.value.id == "_rt"


def _into(prod, later, scope):
    """``_rt.mul_into(g, x)`` for ``g * x`` (``_rt.rmul_into(g, x)`` for ``x * g``) where ``g`` is
    an adjoint that ``later`` does not name and that ``scope`` (the right-hand side) reads once."""
    for side, helper in ((prod.left, "mul_into"), (prod.right, "rmul_into")):
        if not (isinstance(side, ast.Name) and _ADJOINT.match(side.id)) or side.id in later:
            continue
        reads = sum(1 for n in ast.walk(scope) if isinstance(n, ast.Name) and n.id == side.id)
        if reads != 1:
            continue
        other = prod.right if side is prod.left else prod.left
        return ast.Call(func=ast.Attribute(value=ast.Name(id="_rt", ctx=ast.Load()), attr=helper,
                                           ctx=ast.Load()),
                        args=[side, other], keywords=[])
    return None
