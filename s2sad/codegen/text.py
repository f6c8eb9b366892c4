"""From IR operands and rule templates to Python source text, and a small line-block model with
origins that renders to source with ``# file:line`` comments (the generated code's source map)."""
import ast
import copy
import math
import operator

from .. import ir, runtime
from ..ir import Uncommented, Verbatim

_LITERAL_TYPES = (int, float, complex, str, bytes, bool, type(None))


def is_literal(v):
    if type(v) in _LITERAL_TYPES:
        if type(v) is float and (math.isnan(v) or math.isinf(v)):
            return False
        if type(v) is complex and (math.isnan(abs(v)) or math.isinf(abs(v))):
            return False
        return True
    if v is Ellipsis:
        return True
    if type(v) is tuple:
        return all(is_literal(x) for x in v)
    return False


class Consts:
    """Constants that cannot be written as literals become module globals ``_c1``, ``_c2``..."""

    def __init__(self, namespace):
        self.namespace = namespace
        self.by_id = {}

    def name_for(self, value):
        key = id(value)
        if key not in self.by_id:
            name = f"_c{len(self.by_id) + 1}"
            self.by_id[key] = name
            self.namespace[name] = value
        return self.by_id[key]


def container_guard(s, kinds, consts):
    """Before a Mutate statement (``obj.append(v)``, ``obj.update(d)``...) on a name not known to
    be a list, dict or deque: the check that it is one (``_rt.container_receiver``)."""
    if not isinstance(s.obj, str) or kinds.get(s.obj) == "c":
        return []
    site = consts.name_for(s.origin)
    return [Line(f"_rt.container_receiver({s.obj}, {s.call.fn.name!r}, {site})", s.origin)]


def caught_check(s, consts):
    """First line of each handler of Try ``s`` whose body calls Python code s2sad
    differentiates (a method may update its object and then raise): ``_rt.caught(site)``,
    which refuses an exception that cut such a method short (runtime.refusals.mark_partial)."""
    if calls_derived(s.body):
        return [Line(f"_rt.caught({consts.name_for(s.origin)})", s.origin)]
    return []


def calls_derived(body):
    """Whether the IR block ``body`` calls Python code s2sad differentiates (a derived or
    dynamic call site), nested blocks included."""
    for x in ir.walk(body):
        call = x.value if isinstance(x, ir.Assign) else x.call if isinstance(x, ir.ExprStmt) \
            else None
        if isinstance(call, ir.Call) and call.cls in ("derived", "dynamic"):
            return True
    return False


def with_items_text(s, text, consts):
    """The items of With ``s`` as generated code writes them (``text``: an operand's text),
    each context manager inside ``_rt.exit_check(ctx, site)`` when the body calls code s2sad
    differentiates: a manager that swallows an exception which cut a self-updating method short
    is refused (runtime.refusals.exit_check), as :func:`caught_check` refuses such a handler."""
    site = consts.name_for(s.origin) if calls_derived(s.body) else None
    parts = []
    for x, v in s.items:
        ctx = text(x)
        if site is not None:
            ctx = f"_rt.exit_check({ctx}, {site})"
        parts.append(ctx + (f" as {v}" if v else ""))
    return ", ".join(parts)


def snapshot_call(target, call, origin, consts, fresh):
    """Lines for an inactive call of a user function (or one resolved when it runs) whose result
    carries no derivative but whose arguments do (classify.after_activity marks it
    ``snapshot``): ``status = fill(buf, x)`` may write into ``buf``, which would then carry a
    derivative s2sad never saw.  The float arrays, lists and dicts it is given are copied before
    and compared after (``_rt.opaque_snapshot`` / ``_rt.refuse_if_changed``): a change refuses,
    as the same call on a line of its own is refused for writing into its arguments."""
    names = list(dict.fromkeys(call.reads()))
    kept = fresh("kept")
    fn = call.fn
    if isinstance(fn, ir.Method):
        callee = f"{operand_text(call.args[0], consts)}.{fn.name}"
    elif isinstance(fn, ir.Static):
        callee = static_callee_text(fn, consts)
    elif isinstance(fn, ir.Dynamic):
        callee = operand_text(fn.var, consts)
    else:
        callee = "None"
    inputs = ", ".join(names) + ("," if len(names) == 1 else "")
    return [Line(f"{kept} = _rt.opaque_snapshot(({inputs}))", origin),
            Line(f"{target} = {call_text(call, consts)}", origin),
            Line(f"_rt.refuse_if_changed({callee}, {kept}, True)", origin)]


def static_callee_text(fn, consts):
    """How generated code names a static callee it passes as a value (``_rt.call(f, ...)``): its
    own text when that is a dotted name, ``operator.add`` for an operator, else a constant."""
    text = fn.text or ""
    if text and all(part.isidentifier() for part in text.split(".")):
        return text
    import operator
    name = getattr(fn.obj, "__name__", "")
    if getattr(operator, name, None) is fn.obj:
        consts.namespace["operator"] = operator
        return f"operator.{name}"
    return consts.name_for(fn.obj)


def real_only_checks(call, real, consts, origin):
    """Before a call whose rule says its output carries no derivative for real arguments only
    (``np.sign``: piecewise constant on the reals, x / |x| on complex numbers): the run-time
    refusal of a complex argument that carries a derivative (``_rt.real_only``), for each such
    argument not known to be real."""
    if call.cls != "zero" or not getattr(call.rule, "real_only", False):
        return []
    varied = call.info.get("varied_args") or ()
    names = [a for a in call.args if isinstance(a, str) and a in varied and a not in real]
    if not names:
        return []
    site = consts.name_for(origin)
    return [Line(f"_rt.real_only({a}, {call.rule.name!r}, {site})", origin) for a in names]


def call_as_is(target, call, origin, consts, fresh, real):
    """The lines of a call whose result carries no derivative where it stands, run as it is:
    inside the snapshot of its arguments where it may write into them (:func:`snapshot_call`),
    else after the complex-argument checks of a rule that is zero on reals only
    (:func:`real_only_checks`).  (Both emitters: reverse mode's forward sweep, forward mode.)"""
    if call.info.get("snapshot"):
        return snapshot_call(target, call, origin, consts, fresh)
    return real_only_checks(call, real, consts, origin) + \
        [Line(f"{target} = {call_text(call, consts)}", origin)]


def identity_check(target, call, origin, changed, consts, args=None, receiver=False):
    """After a call whose result ``target`` is changed in place later (``changed``): the run-time
    check that it is not a second name for one of the call's arguments (``_rt.not_alias``) or,
    with ``receiver``, for the object whose method it called (``_rt.not_receiver``).  Nothing
    after a constructor, which makes a new object."""
    if target == "_" or target not in changed or \
            (isinstance(call.fn, ir.Static) and isinstance(call.fn.obj, type)):
        return []
    site = consts.name_for(origin)
    if receiver:
        return [Line(f"_rt.not_receiver({target}, {call.info['mutates']}, {site})", origin)]
    args = [a for a in (call.args if args is None else args) if isinstance(a, str)]
    if not args:
        return []
    names = ", ".join(args) + ("," if len(args) == 1 else "")
    return [Line(f"_rt.not_alias({target}, ({names}), {site})", origin)]


def const_text(c, consts):
    if c.text is not None:
        return c.text
    if c.value is Ellipsis:
        return "..."
    if is_literal(c.value):
        t = repr(c.value)
        # a negative number in parentheses: it may stand where a bare one reads otherwise
        # (``(-2.0) ** k``, a template's ``a ** (b - 1)``, ``(-2).bit_length()``)
        return f"({t})" if t.startswith("-") else t
    return consts.name_for(c.value)


def item_text(op, consts):
    """:func:`operand_text` for an argument, an item of a display or an index, where a negative
    number reads bare (``f(x, -1)``, ``(1, -2)``, ``x[-1]``)."""
    if isinstance(op, ir.Const) and op.text is None and type(op.value) in (int, float) and \
            is_literal(op.value):
        return repr(op.value)
    return operand_text(op, consts)


def operand_text(op, consts):
    if isinstance(op, str):
        return op
    if isinstance(op, ir.Const):
        return const_text(op, consts)
    if isinstance(op, ir.Index):
        return index_value_text(op, consts)
    if isinstance(op, tuple):
        inner = ", ".join(operand_text(x, consts) for x in op)
        return f"({inner},)" if len(op) == 1 else f"({inner})"
    if isinstance(op, dict):
        return "{" + ", ".join(f"{k!r}: {operand_text(v, consts)}" for k, v in op.items()) + "}"
    if isinstance(op, ir.Slice):
        return "slice(" + ", ".join(operand_text(p, consts) if p is not None else "None"
                                   for p in (op.lower, op.upper, op.step)) + ")"
    return repr(op)


def index_subscript_text(idx, consts):
    """``1:3, i`` -- the text inside ``x[...]``."""
    parts = []
    for p in idx.parts:
        if isinstance(p, ir.Slice):
            s = (operand_text(p.lower, consts) if p.lower is not None else "") + ":" + \
                (operand_text(p.upper, consts) if p.upper is not None else "")
            if p.step is not None:
                s += ":" + operand_text(p.step, consts)
            parts.append(s)
        else:
            parts.append(item_text(p, consts))
    s = ", ".join(parts)
    if idx.is_tuple and len(parts) == 1:
        s += ","
    if idx.is_tuple and not parts:
        s = "()"
    return s


def index_value_text(idx, consts):
    """The index as a value: ``(slice(1, 3, None), i)``."""
    parts = [operand_text(p, consts) for p in idx.parts]
    if idx.is_tuple:
        return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
    return parts[0]


# -- forward text of a call site --------------------------------------------------------------
_BIN = {operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/",
        operator.floordiv: "//", operator.mod: "%", operator.pow: "**", operator.matmul: "@",
        operator.lshift: "<<", operator.rshift: ">>", operator.and_: "&", operator.or_: "|",
        operator.xor: "^", operator.eq: "==", operator.ne: "!=", operator.lt: "<",
        operator.le: "<=", operator.gt: ">", operator.ge: ">=", operator.is_: "is",
        operator.is_not: "is not"}
_UN = {operator.neg: "-", operator.pos: "+", operator.not_: "not ", operator.invert: "~"}


def call_text(call, consts, callee_text=None):
    """Python source for a call site as the user would write it (``a + b``, ``x[i]``, ``f(x)``)."""
    fn = call.fn
    a = [operand_text(x, consts) if not isinstance(x, ir.Index) else None for x in call.args]
    bare = [item_text(x, consts) if not isinstance(x, ir.Index) else None for x in call.args]
    if isinstance(fn, ir.Static) and callee_text is None:
        obj = fn.obj
        if obj in _BIN and len(call.args) == 2 and not call.kwargs:
            return f"{a[0]} {_BIN[obj]} {a[1]}"
        if obj in _UN and len(call.args) == 1:
            return f"{_UN[obj]}{a[0]}"
        if obj is operator.getitem:
            idx = call.args[1]
            inner = index_subscript_text(idx, consts) if isinstance(idx, ir.Index) else a[1]
            return f"{a[0]}[{inner}]"
        if obj is operator.contains:
            return f"{a[1]} in {a[0]}"
        if obj is runtime.not_in:
            return f"{a[1]} not in {a[0]}"
        if obj is runtime.build_tuple:
            return "(" + ", ".join(bare) + ("," if len(a) == 1 else "") + ")"
        if obj is runtime.build_list:
            return "[" + ", ".join(bare) + "]"
        if obj is runtime.build_dict:
            keys = call.args[0]
            return f"_rt.build_dict({', '.join(a)})" if isinstance(keys, str) else \
                f"_rt.build_dict({', '.join(a)})"
    if isinstance(fn, ir.Attr):
        return f"{a[0]}.{fn.name}"
    kw = [f"{k}={item_text(v, consts)}" for k, v in call.kwargs]
    if isinstance(fn, ir.Method):
        if call.extra.get("as_function"):       # (jit=True: codegen/jit.methods_as_functions)
            return f"_np.{fn.name}({', '.join(bare + kw)})"
        return f"{a[0]}.{fn.name}({', '.join(bare[1:] + kw)})"
    if callee_text is None:
        callee_text = fn.text if isinstance(fn, ir.Static) else operand_text(fn.var, consts)
    return f"{callee_text}({', '.join(bare + kw)})"


# -- templates --------------------------------------------------------------------------------
class _Subst(ast.NodeTransformer):
    def __init__(self, mapping):
        self.mapping = mapping

    def visit_Name(self, node):
        if node.id in self.mapping:
            return copy.deepcopy(self.mapping[node.id])
        return node


def parse_expr(text):
    return ast.parse(text, mode="eval").body


def substitute(tree, mapping):
    """Replace names in a template tree by expression trees (mapping: name -> ast.expr)."""
    return _Subst(mapping).visit(copy.deepcopy(tree))


# NumPy functions whose value is real wherever their arguments are (NaN where undefined)
_REAL_ON_REAL = {"sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh",
                 "arcsinh", "arccosh", "arctanh", "exp", "expm1", "exp2", "log", "log1p", "log2",
                 "log10", "sqrt", "cbrt", "square", "abs", "absolute", "sign", "reciprocal",
                 "negative", "arctan2", "hypot", "power", "maximum", "minimum", "where"}


class _Simplify(ast.NodeTransformer):
    """Peephole simplifications that keep generated adjoints readable:
    ``_rt.cj(c)`` of a real constant or Python float is ``c``; ``_rt.unbroadcast(e, v)`` is ``e``
    when ``v`` is a Python float and so is every other operand (``scalar_names``); a keyword
    ``where=True`` of ``np.*``/``_adj.*``/``_rt.*`` calls is dropped (the default)."""

    def __init__(self, real_names, drop_unbroadcast_for, sum_for=()):
        self.real_names = real_names
        self.drop = drop_unbroadcast_for
        self.sum_for = sum_for

    def visit_Call(self, node):
        self.generic_visit(node)
        f = node.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and \
                f.value.id in ("np", "_adj", "_rt") and node.keywords:
            # where=True is the default of NumPy's reductions and of the helpers that take a mask
            # (the reduction rules pass where= on): a call without it reads as before
            node.keywords = [k for k in node.keywords if not (
                k.arg == "where" and isinstance(k.value, ast.Constant) and k.value.value is True)]
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and \
                f.value.id == "math" and f.attr == "log" and len(node.args) == 1 and \
                not node.keywords and isinstance(node.args[0], ast.Constant) and \
                type(node.args[0].value) is float and math.log(node.args[0].value) == 1.0:
            # the natural logarithm's base bound as math.log's default: log(e) is exactly 1.0
            return ast.Constant(1.0)
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "_rt":
            if f.attr == "cj" and len(node.args) == 1:
                x = node.args[0]
                if self._real(x):
                    return x
            if f.attr == "unit" and len(node.args) == 1 and self._real(node.args[0]):
                node.func = ast.Attribute(value=ast.Name("np", ast.Load()), attr="sign",
                                          ctx=ast.Load())
            if f.attr in ("dtype_guard", "times_initial") and len(node.args) == 2:
                # a cast to no dtype / no initial value: the adjoint itself
                first, other = (node.args[0], node.args[1]) if f.attr == "dtype_guard" else \
                    (node.args[1], node.args[0])
                if isinstance(first, ast.Constant) and first.value is None:
                    return other
            if f.attr == "unbroadcast" and len(node.args) == 2:
                x = node.args[1]
                if isinstance(x, ast.Name) and x.id in self.drop:
                    return node.args[0]
                e = node.args[0]
                if isinstance(x, ast.Name) and x.id in self.sum_for and \
                        isinstance(e, ast.BinOp) and isinstance(e.op, ast.Mult):
                    # the adjoint of a real number x in x * y: sum(g * y) as one dot product
                    node.func = ast.Attribute(value=ast.Name("_rt", ast.Load()),
                                              attr="sum_product", ctx=ast.Load())
                    node.args = [e.left, e.right, x]
        return node


    def visit_Compare(self, node):
        # ``None is None`` (a rule template's test of an argument left at its default): True
        self.generic_visit(node)
        if len(node.ops) == 1 and isinstance(node.ops[0], (ast.Is, ast.IsNot)) and \
                all(isinstance(v, ast.Constant) and v.value is None
                    for v in (node.left, node.comparators[0])):
            return ast.Constant(isinstance(node.ops[0], ast.Is))
        return node

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        if all(isinstance(v, ast.Constant) and type(v.value) is bool for v in node.values):
            vals = [v.value for v in node.values]
            return ast.Constant(all(vals) if isinstance(node.op, ast.And) else any(vals))
        return node

    def visit_IfExp(self, node):
        # ``e1 if True else e2`` (a template's branch on arguments known when it is written): e1
        self.generic_visit(node)
        if isinstance(node.test, ast.Constant) and type(node.test.value) is bool:
            return node.body if node.test.value else node.orelse
        return node

    def visit_BinOp(self, node):
        # g * (1 / x) is g / x: one array operation instead of two (log's, arctan's adjoints)
        self.generic_visit(node)
        r = node.right
        if isinstance(node.op, ast.Div) and isinstance(r, ast.BinOp) and \
                isinstance(r.op, ast.Mult) and isinstance(r.right, ast.Constant) and \
                type(r.right.value) is float and r.right.value == 1.0:
            # g / (x * 1.0) is g / x (true division converts an int divisor as x * 1.0 does):
            # math.log's adjoint g / (x * math.log(base)) with the default base
            node.right = r.left
            return node
        if isinstance(node.op, ast.Mult) and isinstance(r, ast.BinOp) and \
                isinstance(r.op, ast.Div) and isinstance(r.left, ast.Constant) and \
                type(r.left.value) in (int, float) and r.left.value == 1:
            return ast.BinOp(left=node.left, op=ast.Div(), right=r.right)
        return node

    def _real(self, x):
        """True when an expression is built from real constants, real names (Python floats, or
        values typed real) and NumPy functions that are real on real arguments."""
        for n in ast.walk(x):
            if isinstance(n, ast.Call):
                f = n.func
                if not (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and
                        f.value.id == "np" and f.attr in _REAL_ON_REAL and not n.keywords):
                    return False
            elif isinstance(n, ast.Attribute):
                if not (isinstance(n.value, ast.Name) and n.value.id == "np"):
                    return False
            elif isinstance(n, ast.Name):
                if n.id not in self.real_names and n.id != "np":
                    return False
            elif isinstance(n, ast.Constant):
                if not isinstance(n.value, (int, float)):
                    return False
            elif not isinstance(n, (ast.BinOp, ast.UnaryOp, ast.operator, ast.unaryop, ast.Load)):
                return False
        return True


def simplify(tree, real_names=(), drop_unbroadcast_for=(), sum_for=()):
    """``sum_for``: names of real numbers whose ``_rt.unbroadcast(a * b, x)`` becomes
    ``_rt.sum_product(a, b, x)``."""
    return ast.fix_missing_locations(_Simplify(set(real_names), set(drop_unbroadcast_for),
                                               set(sum_for)).visit(tree))


class _Unstar(ast.NodeTransformer):
    def __init__(self, arity, fresh):
        self.arity, self.fresh, self.hoisted = arity, fresh, []

    def visit_Call(self, node):
        self.generic_visit(node)
        if not any(isinstance(a, ast.Starred) for a in node.args):
            return node
        args = []
        for a in node.args:
            if not isinstance(a, ast.Starred):
                args.append(a)
            elif isinstance(a.value, (ast.Tuple, ast.List)):
                args.extend(a.value.elts)               # *(x, y): x, y
            else:
                n = self.arity(a.value)
                if n is None:
                    args.append(a)                      # (a length not known: left starred)
                    continue
                names = [self.fresh() for _ in range(n)]
                self.hoisted.append((names, ast.unparse(a.value)))
                args.extend(ast.Name(id=x, ctx=ast.Load()) for x in names)
        node.args = args
        return node


def unstar(tree, arity, fresh):
    """Starred arguments of calls in ``tree`` made plain, for numba (a constant after ``*`` is no
    longer a literal to numba's overloads, and numba has no ``f(*a, k=v)``): ``*(x, y)`` is
    spliced; ``*e``, where ``arity(e)`` (an AST) says how many values ``e`` has, becomes that many
    fresh names (``fresh()`` makes one), bound beforehand.  Returns the tree and the bindings to
    write before it: ``[(names, text of e)]``."""
    u = _Unstar(arity, fresh)
    tree = ast.fix_missing_locations(u.visit(tree))
    return tree, u.hoisted


def unparse(tree):
    return ast.unparse(tree)


# -- blocks of lines --------------------------------------------------------------------------
class Line:
    """One generated line; ``raw`` lines (a user's nested def copied as written) get no comment."""
    __slots__ = ("text", "origin", "raw")

    def __init__(self, text, origin=None, raw=False):
        self.text, self.origin, self.raw = text, origin, raw


class Nest:
    """A compound statement: ``header`` then an indented body (and optional ``else`` body)."""
    __slots__ = ("header", "origin", "body", "orelse")

    def __init__(self, header, origin, body, orelse=None):
        self.header, self.origin, self.body, self.orelse = header, origin, body, orelse


class Hook:
    """A placeholder that a later pass expands into lines (e.g. the pops of saved values)."""
    __slots__ = ("key", "when", "origin")

    def __init__(self, key, when, origin):
        self.key, self.when, self.origin = key, when, origin


def render(items, expand, out, depth=1, state=None):
    """Flatten a block into (indent, text, origin) triples; ``expand(hook)`` gives a hook's lines."""
    for it in items:
        if isinstance(it, Hook):
            render(expand(it), expand, out, depth, state)
        elif isinstance(it, Line):
            out.append((depth, it.text, it.origin, it.raw))
        else:
            out.append((depth, it.header, it.origin, False))
            n = len(out)
            render(it.body, expand, out, depth + 1, state)
            if len(out) == n:
                out.append((depth + 1, "pass", None, False))
            if it.orelse:
                if isinstance(it.orelse, Nest):
                    render([it.orelse], expand, out, depth, state)
                else:
                    out.append((depth, "else:", None, False))
                    render(it.orelse, expand, out, depth + 1, state)
    return out


# characters that must not reach a comment as they are: Python's line ends (a file name or a
# line holding one would end the comment and make the rest code), NUL, and the characters that
# str.splitlines and editors take as line breaks
_COMMENT_UNSAFE = {c: c.encode("unicode_escape").decode("ascii")
                   for c in "\r\n\x00\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"}


def comment_safe(text):
    """``text`` with the characters that could end or break a comment escaped (``\\n``...)."""
    if any(c in _COMMENT_UNSAFE for c in text):
        return "".join(_COMMENT_UNSAFE.get(c, c) for c in text)
    return text


def format_lines(triples, comment_col=40):
    """Source text with a ``# file:line  source`` comment on each line that has an origin.

    The first line generated from a user line also shows that line's text.  Comment text (file
    names, user lines, comment-only lines) is escaped so that it can never end the comment."""
    lines = []
    last = None
    for depth, text, origin, *rest in triples:
        if isinstance(text, Verbatim):
            lines.append(str(text))
            continue
        if text.lstrip().startswith("#"):
            text = comment_safe(text)
        code = "    " * depth + text
        if origin is not None and not (rest and rest[0]) and text.strip() and \
                not isinstance(text, Uncommented):
            tag = comment_safe(origin.short())
            comment = f"# {tag}"
            key = (origin.file, origin.line)
            if key != last and origin.text:
                comment += f"  {comment_safe(origin.text)}"
            last = key
            pad = max(comment_col - len(code), 2)
            code = code + " " * pad + comment
        lines.append(code)
    return lines
