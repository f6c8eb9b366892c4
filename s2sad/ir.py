"""The IR: structured, A-normal form.  Every statement does one thing; every operand is a variable
name (``str``) or a :class:`Const`.  Every operation is a call site (:class:`Call`), whatever its
surface syntax (``a + b``, ``x[i]``, ``x.T``, ``x.sum()``, ``f(x)``).  Control flow stays structured.
Every statement keeps its :class:`Origin` (file, line, source text).
"""
import os


class Origin:
    __slots__ = ("file", "line", "col", "text", "func")

    def __init__(self, file, line, col=0, text="", func=""):
        self.file, self.line, self.col, self.text, self.func = file, line, col, text, func

    def where(self):
        return f"{self.file}:{self.line}"

    def short(self):
        return f"{os.path.basename(self.file)}:{self.line}"

    def __repr__(self):
        return f"Origin({self.where()})"


class Verbatim(str):
    """A line of user source that begins inside a string literal (a multi-line string of a
    nested def copied as written): written exactly as it is, no indentation or comment added."""
    __slots__ = ()


class Uncommented(str):
    """A line that continues onto the next one (it ends inside a string, or after a backslash):
    no comment may be appended to it."""
    __slots__ = ()


# -- operands ---------------------------------------------------------------------------------
class Const:
    """A constant operand: a literal, or a value read from globals/closure at build time."""
    __slots__ = ("value", "text")

    def __init__(self, value, text=None):
        self.value = value
        self.text = text            # how to spell it (a global's name); None -> repr(value)

    def __repr__(self):
        return self.text if self.text is not None else repr(self.value)

    def __eq__(self, other):
        return isinstance(other, Const) and self.value is other.value and self.text == other.text

    def __hash__(self):
        return hash((id(self.value), self.text))


class Index:
    """A subscript operand ``x[...]``: parts are operands, :class:`Slice` or nested tuples."""
    __slots__ = ("parts", "is_tuple")

    def __init__(self, parts, is_tuple):
        self.parts, self.is_tuple = parts, is_tuple

    def operands(self):
        for p in self.parts:
            if isinstance(p, Slice):
                yield from (q for q in (p.lower, p.upper, p.step) if q is not None)
            else:
                yield p

    def __repr__(self):
        s = ", ".join(map(_op_str, self.parts))
        return s + "," if self.is_tuple and len(self.parts) == 1 else s


class Slice:
    __slots__ = ("lower", "upper", "step")

    def __init__(self, lower, upper, step):
        self.lower, self.upper, self.step = lower, upper, step

    def __repr__(self):
        s = f"{_op_str(self.lower) if self.lower is not None else ''}:" \
            f"{_op_str(self.upper) if self.upper is not None else ''}"
        return s + (f":{_op_str(self.step)}" if self.step is not None else "")


def _op_str(op):
    return op if isinstance(op, str) else repr(op)


def operand_vars(op):
    """Variable names read by an operand."""
    if isinstance(op, str):
        return [op]
    if isinstance(op, Index):
        return [v for p in op.operands() for v in operand_vars(p)]
    return []


def map_vars(op, mapping):
    """``op`` with each variable it reads replaced by ``mapping.get(name, name)`` (a name, or an
    operand such as a Const); Index and Slice parts are replaced in place."""
    if isinstance(op, str):
        return mapping.get(op, op)
    if isinstance(op, tuple):
        return tuple(map_vars(x, mapping) for x in op)
    if isinstance(op, list):
        return [map_vars(x, mapping) for x in op]
    if isinstance(op, dict):
        return {k: map_vars(v, mapping) for k, v in op.items()}
    if isinstance(op, Index):
        op.parts = [map_vars(p, mapping) for p in op.parts]
        return op
    if isinstance(op, Slice):
        op.lower, op.upper, op.step = (map_vars(p, mapping) for p in (op.lower, op.upper, op.step))
        return op
    return op


# -- callees ----------------------------------------------------------------------------------
class Static:
    """A callee known at build time: ``obj`` is the object, ``text`` its spelling in user code."""
    __slots__ = ("obj", "text")

    def __init__(self, obj, text):
        self.obj, self.text = obj, text

    def __repr__(self):
        return self.text


class Method:
    """``recv.name(...)``: the callee depends on the receiver's run-time type."""
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f".{self.name}"


class Attr:
    """Attribute read ``obj.name`` (a call site with one argument)."""
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"getattr .{self.name}"


class Dynamic:
    """A callee held in a local variable (``f(x)`` where ``f`` is an argument)."""
    __slots__ = ("var",)

    def __init__(self, var):
        self.var = var

    def __repr__(self):
        return f"dyn {self.var}"


class Call:
    """A call site.  ``args``: operands (for Method/Attr the receiver is ``args[0]``);
    ``kwargs``: list of (name, operand).  Classification fills ``cls``/``rule``/``info``."""
    __slots__ = ("fn", "args", "kwargs", "cls", "rule", "info", "extra")

    def __init__(self, fn, args, kwargs=(), extra=None):
        self.fn, self.args, self.kwargs = fn, list(args), list(kwargs)
        self.cls = None
        self.rule = None
        self.info = None
        self.extra = extra or {}     # lowering's notes for the emitters (e.g. a closure's source)

    def operands(self):
        ops = list(self.args) + [v for _, v in self.kwargs]
        if isinstance(self.fn, Dynamic):
            ops.append(self.fn.var)
        return ops

    def reads(self):
        return [v for op in self.operands() for v in operand_vars(op)] + \
            list(self.extra.get("captured", ()))

    def __repr__(self):
        parts = [_op_str(a) for a in self.args] + [f"{k}={_op_str(v)}" for k, v in self.kwargs]
        tag = f" [{self.cls}]" if self.cls else ""
        return f"{self.fn!r}({', '.join(parts)}){tag}"


# -- statements -------------------------------------------------------------------------------
class Stmt:
    origin = None


class Assign(Stmt):
    """``target = value`` where value is a Call or an operand (a copy)."""
    __slots__ = ("target", "value", "origin")

    def __init__(self, target, value, origin):
        self.target, self.value, self.origin = target, value, origin

    def reads(self):
        return self.value.reads() if isinstance(self.value, Call) else operand_vars(self.value)


class SetItem(Stmt):
    """``obj[index] = value`` (writes into obj in place); with ``attr``, ``obj.attr = value``
    (then ``index`` is the constant attribute name).  ``obj`` may be a Const (a global dict)."""
    __slots__ = ("obj", "index", "value", "origin", "attr", "building")

    def __init__(self, obj, index, value, origin, attr=None, building=False):
        self.obj, self.index, self.value, self.origin, self.attr = obj, index, value, origin, attr
        self.building = building     # (a dict comprehension's own dict: frontend.analysis.building)

    def reads(self):
        return operand_vars(self.obj) + operand_vars(self.index) + operand_vars(self.value)


class DelItem(Stmt):
    """``del obj[index]``."""
    __slots__ = ("obj", "index", "origin")

    def __init__(self, obj, index, origin):
        self.obj, self.index, self.origin = obj, index, origin

    def reads(self):
        return operand_vars(self.obj) + operand_vars(self.index)


class Mutate(Stmt):
    """``[target =] obj.method(args)`` where the method changes ``obj`` in place (``list.append``,
    ``list.pop``, ``dict.update``...).  ``call`` is a Method call whose ``args[0]`` is ``obj``."""
    __slots__ = ("target", "obj", "call", "origin")

    def __init__(self, target, obj, call, origin):
        self.target, self.obj, self.call, self.origin = target, obj, call, origin

    def reads(self):
        return self.call.reads()


class With(Stmt):
    """``with ctx [as var], ...: body``; items are (context operand, variable name or None).
    (A context manager may swallow an exception, so the body is replayed like a try body.)"""
    __slots__ = ("items", "body", "origin")
    handlers, orelse, finalbody = (), (), ()

    def __init__(self, items, body, origin):
        self.items, self.body, self.origin = items, body, origin

    def reads(self):
        return [v for c, _ in self.items for v in operand_vars(c)]


class Try(Stmt):
    """``try/except/else/finally``; handlers are (type operand or None, name or None, block)."""
    __slots__ = ("body", "handlers", "orelse", "finalbody", "origin")

    def __init__(self, body, handlers, orelse, finalbody, origin):
        self.body, self.handlers, self.orelse, self.finalbody = body, handlers, orelse, finalbody
        self.origin = origin

    def reads(self):
        return [v for t, _, _ in self.handlers if t is not None for v in operand_vars(t)]


class ExprStmt(Stmt):
    """A call made for its side effects (``print(x)``)."""
    __slots__ = ("call", "origin")

    def __init__(self, call, origin):
        self.call, self.origin = call, origin

    def reads(self):
        return self.call.reads()


class Raise(Stmt):
    __slots__ = ("exc", "origin")

    def __init__(self, exc, origin):
        self.exc, self.origin = exc, origin

    def reads(self):
        return operand_vars(self.exc) if self.exc is not None else []


class If(Stmt):
    __slots__ = ("test", "body", "orelse", "origin")

    def __init__(self, test, body, orelse, origin):
        self.test, self.body, self.orelse, self.origin = test, body, orelse, origin

    def reads(self):
        return operand_vars(self.test)


class For(Stmt):
    """``for target in range(start, stop, step)`` (every loop over a sequence is lowered to this).

    ``brk`` names the flag that ends the loop early (set by lowered ``break``/``return``)."""
    __slots__ = ("target", "start", "stop", "step", "body", "brk", "origin", "orelse")

    def __init__(self, target, start, stop, step, body, origin, brk=None, orelse=None):
        self.target, self.start, self.stop, self.step = target, start, stop, step
        self.body, self.origin, self.brk = body, origin, brk
        self.orelse = orelse or []       # consumed by jumps.structure

    def reads(self):
        return [v for op in (self.start, self.stop, self.step) for v in operand_vars(op)]


class While(Stmt):
    """``while True: <test_body>; if not test: break; <body>`` in structured form."""
    __slots__ = ("test_body", "test", "body", "brk", "origin", "orelse")

    def __init__(self, test_body, test, body, origin, brk=None, orelse=None):
        self.test_body, self.test, self.body, self.origin, self.brk = test_body, test, body, origin, brk
        self.orelse = orelse or []       # consumed by jumps.structure

    def reads(self):
        return operand_vars(self.test)


class Return(Stmt):
    __slots__ = ("value", "origin")

    def __init__(self, value, origin):
        self.value, self.origin = value, origin

    def reads(self):
        return operand_vars(self.value)


class Break(Stmt):
    __slots__ = ("origin",)

    def __init__(self, origin):
        self.origin = origin

    def reads(self):
        return []


class Continue(Break):
    __slots__ = ()


class Function:
    """A lowered function: parameter names, body, and where it came from."""

    def __init__(self, name, params, body, origin, pyfunc=None, namespace=None):
        self.name, self.params, self.body, self.origin = name, params, body, origin
        self.pyfunc = pyfunc
        self.namespace = namespace or {}     # names the body's Static/Const spellings need

    def __str__(self):
        return print_ir(self)


def children(stmt):
    """Nested blocks of a statement."""
    if isinstance(stmt, If):
        return [stmt.body, stmt.orelse]
    if isinstance(stmt, For):
        return [stmt.body]
    if isinstance(stmt, While):
        return [stmt.test_body, stmt.body]
    if isinstance(stmt, With):
        return [stmt.body]
    if isinstance(stmt, Try):
        return [stmt.body] + [h[2] for h in stmt.handlers] + [stmt.orelse, stmt.finalbody]
    return []


def walk(block):
    """Every statement of a block, nested ones included, in program order."""
    for s in block:
        yield s
        for b in children(s):
            yield from walk(b)


# -- printer ----------------------------------------------------------------------------------
def print_ir(fn):
    lines = [f"def {fn.name}({', '.join(fn.params)}):"]
    _print_block(fn.body, lines, 1)
    return "\n".join(lines)


def _print_block(block, lines, depth):
    ind = "    " * depth
    if not block:
        lines.append(ind + "pass")
    for s in block:
        if isinstance(s, Assign):
            lines.append(f"{ind}{s.target} = {s.value if isinstance(s.value, Call) else _op_str(s.value)}")
        elif isinstance(s, SetItem):
            if s.attr:
                lines.append(f"{ind}{_op_str(s.obj)}.{s.attr} = {_op_str(s.value)}")
            else:
                lines.append(f"{ind}{_op_str(s.obj)}[{s.index!r}] = {_op_str(s.value)}")
        elif isinstance(s, DelItem):
            lines.append(f"{ind}del {_op_str(s.obj)}[{s.index!r}]")
        elif isinstance(s, Mutate):
            lines.append(f"{ind}{s.target + ' = ' if s.target else ''}{s.call!r}  (mutates {s.obj})")
        elif isinstance(s, With):
            items = ", ".join(_op_str(c) + (f" as {v}" if v else "") for c, v in s.items)
            lines.append(f"{ind}with {items}:")
            _print_block(s.body, lines, depth + 1)
        elif isinstance(s, Try):
            lines.append(f"{ind}try:")
            _print_block(s.body, lines, depth + 1)
            for t, n, blk in s.handlers:
                lines.append(f"{ind}except{' ' + _op_str(t) if t is not None else ''}"
                             f"{' as ' + n if n else ''}:")
                _print_block(blk, lines, depth + 1)
            if s.orelse:
                lines.append(f"{ind}else:")
                _print_block(s.orelse, lines, depth + 1)
            if s.finalbody:
                lines.append(f"{ind}finally:")
                _print_block(s.finalbody, lines, depth + 1)
        elif isinstance(s, ExprStmt):
            lines.append(f"{ind}{s.call!r}")
        elif isinstance(s, Raise):
            lines.append(f"{ind}raise {_op_str(s.exc) if s.exc is not None else ''}".rstrip())
        elif isinstance(s, Return):
            lines.append(f"{ind}return {_op_str(s.value)}")
        elif isinstance(s, Continue):
            lines.append(f"{ind}continue")
        elif isinstance(s, Break):
            lines.append(f"{ind}break")
        elif isinstance(s, If):
            lines.append(f"{ind}if {_op_str(s.test)}:")
            _print_block(s.body, lines, depth + 1)
            if s.orelse:
                lines.append(f"{ind}else:")
                _print_block(s.orelse, lines, depth + 1)
        elif isinstance(s, For):
            brk = f"  (until {s.brk})" if s.brk else ""
            lines.append(f"{ind}for {s.target} in range({_op_str(s.start)}, {_op_str(s.stop)}, "
                         f"{_op_str(s.step)}):{brk}")
            _print_block(s.body, lines, depth + 1)
        elif isinstance(s, While):
            lines.append(f"{ind}while:")
            _print_block(s.test_body, lines, depth + 1)
            lines.append(f"{ind}    if not {_op_str(s.test)}: break")
            _print_block(s.body, lines, depth + 1)
        else:
            lines.append(f"{ind}<{type(s).__name__}>")
