"""Elementwise fusion for ``jit=True``: runs of elementwise array statements become one loop.

The fused function that ``codegen/jit.py`` compiles has one statement per array operation, so
numba allocates a temporary for each and walks memory once per statement.  This pass rewrites a
run of consecutive top-level statements whose array operands all have one shape into one loop
over the flattened elements, with scalar math in the loop body (the mechanism XLA uses):

- a statement of elementwise operations (``+ - * /``, integer powers, comparisons, NumPy's
  one-argument ufuncs, and the helpers ``_rt.unbroadcast`` / ``_rt.cj`` / ``_rt.add`` /
  ``_rt.pow_base_adjoint`` / ``_adj.sum`` where they are elementwise) goes into the loop; its
  value is a scalar there, and an array is written only when a statement outside the run reads
  it;
- a reduction to a scalar (``np.sum(e)``, ``_rt.unbroadcast(e, scalar)``) becomes an accumulator,
  and the rest of its statement runs after the loop;
- a scalar statement between them runs before the loop when it reads nothing the run writes,
  else after it.

Types come from a small inference over the generated function (``types_of``), from the
arguments' types (``runtime.values.type_of``): a statement is fused only when every array it
reads is a float or bool array of the run's ndim and every other operand a real scalar.  Shapes
are checked when the derivative runs: the fused loop runs only when all the arrays the run reads
have one shape, else the original statements run (they are kept in the ``else`` branch), so
broadcasting is never guessed.  The loop computes the same operations in the same order per
element; only sums add in another order (sequentially, not NumPy's pairwise order).
"""
import ast
import os

_UFUNCS = {"exp", "log", "sin", "cos", "tan", "tanh", "sinh", "cosh", "sqrt", "log1p", "expm1",
           "abs", "absolute", "arctan", "arcsin", "arccos", "arcsinh", "arctanh", "negative",
           "square", "log2", "log10", "exp2", "sign"}
_ARITH = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow)
_ORDER = "bif"


class _No(Exception):
    """This statement is not fused."""


# -- types of the generated function's variables ----------------------------------------------
def _kmax(a, b):
    return a if _ORDER.index(a) >= _ORDER.index(b) else b


def _bcast(ta, tb, div=False):
    if ta is None or tb is None or ta[0] not in "sa" or tb[0] not in "sa":
        return None
    if ta[1] not in _ORDER or tb[1] not in _ORDER:
        return None
    k = _kmax(ta[1], tb[1])
    if div:
        k = "f"
    if ta[0] == tb[0] == "s":
        return ("s", k)
    if ta[0] == "a" and tb[0] == "a":
        return ("a", k, ta[2]) if ta[2] == tb[2] else None
    nd = ta[2] if ta[0] == "a" else tb[2]
    return ("a", k, nd)


def _expr_type(node, env, globs):
    T = lambda n: _expr_type(n, env, globs)          # noqa: E731
    if isinstance(node, ast.Name):
        if node.id in env:
            return env[node.id]
        v = globs.get(node.id, _MISSING)
        if type(v) is float:
            return ("s", "f")
        if type(v) is int:
            return ("s", "i")
        return None
    if isinstance(node, ast.Constant):
        v = node.value
        return {bool: ("s", "b"), int: ("s", "i"), float: ("s", "f")}.get(type(v))
    if isinstance(node, ast.BinOp):
        a, b = T(node.left), T(node.right)
        if isinstance(node.op, ast.MatMult):
            if a is None or b is None or a[0] != "a" or b[0] != "a" or "f" not in (a[1], b[1]):
                return None
            nd = {(2, 2): 2, (2, 1): 1, (1, 2): 1}.get((a[2], b[2]))
            return None if nd is None else ("a", "f", nd)
        if isinstance(node.op, _ARITH):
            t = _bcast(a, b, isinstance(node.op, ast.Div))
            if t is not None and t[1] == "b":
                return None                              # (bool arithmetic: NumPy's is logical)
            return t
        return None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        t = T(node.operand)
        return None if t is None or t[1] == "b" else t
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        t = _bcast(T(node.left), T(node.comparators[0]))
        return None if t is None else t[:1] + ("b",) + t[2:]
    if isinstance(node, ast.Tuple):
        return ("t", tuple(T(e) for e in node.elts))
    if isinstance(node, ast.Subscript):
        t = T(node.value)
        idx = node.slice
        if t is not None and t[0] == "t" and isinstance(idx, ast.Constant) and \
                type(idx.value) is int and -len(t[1]) <= idx.value < len(t[1]):
            return t[1][idx.value]
        if t is not None and t[0] == "a" and t[2] == 1 and isinstance(idx, ast.Constant) and \
                type(idx.value) is int:
            return ("s", t[1])
        return None
    if isinstance(node, ast.Attribute) and node.attr == "T":
        t = T(node.value)
        return t if t is not None and t[0] == "a" else None
    if isinstance(node, ast.Call):
        node = _as_unbroadcast(node)
        name = _callee(node)
        args = [T(a) for a in node.args]
        if name is None:
            return None
        mod, fn = name
        if mod == "np" and fn in _UFUNCS and len(args) == 1 and not node.keywords:
            t = args[0]
            if t is None or t[0] not in "sa" or t[1] == "b":
                return None
            return t[:1] + ("f",) + t[2:] if fn not in ("abs", "absolute", "negative", "sign",
                                                        "square") else t
        if mod == "math" and args and all(a is not None and a[0] == "s" for a in args):
            return ("s", "f")
        if mod == "np" and fn == "sum" and len(args) == 1 and not node.keywords and \
                args[0] is not None and args[0][0] == "a" and args[0][1] == "f":
            # (a scalar only over the whole array: np.sum(x, axis=1, keepdims=True) is an array)
            return ("s", "f")
        if mod == "_rt" and fn in ("unbroadcast", "zero_of") and len(args) >= 1:
            t = args[-1] if fn == "unbroadcast" else args[0]
            if t is not None and t[0] in "sa" and t[1] in "bif":
                return t[:1] + ("f",) + t[2:]
            return None
        if mod == "_rt" and fn == "cj" and len(args) == 1:
            return args[0]
        if mod == "_rt" and fn == "add" and len(args) == 2:
            return _bcast(args[0], args[1])
        if mod == "_rt" and fn == "pow_base_adjoint" and len(args) == 3:
            return args[0]
        if mod == "_adj" and fn == "sum" and len(args) == 4:
            t = args[1]
            return ("a", "f", t[2]) if t is not None and t[0] == "a" else None
        if mod == "_adj" and fn == "matmul" and len(args) == 4 and \
                isinstance(node.args[3], ast.Constant):
            t = args[1 + node.args[3].value] if node.args[3].value in (0, 1) else None
            return ("a", "f", t[2]) if t is not None and t[0] == "a" else None
        return None
    return None


_MISSING = object()


def _as_unbroadcast(call):
    """``_rt.sum_product(a, b, x)`` read as what it computes, ``_rt.unbroadcast(a * b, x)`` (a
    fused loop sums the product into an accumulator itself); any other call as it is."""
    if _callee(call) == ("_rt", "sum_product") and len(call.args) == 3 and not call.keywords:
        a, b, x = call.args
        return ast.Call(ast.Attribute(ast.Name("_rt", ast.Load()), "unbroadcast", ast.Load()),
                        [ast.BinOp(a, ast.Mult(), b), x], [])
    return call


def _callee(call):
    f = call.func
    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
        return f.value.id, f.attr
    return None


def range_loop(loop, globs):
    """Whether the ``for`` loop ``loop`` walks ``range(...)`` or ``reversed(range(...))`` (its
    counter an int), ``range`` being the builtin (not a name of ``globs``)."""
    it = loop.iter
    if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "reversed" \
            and it.args:
        it = it.args[0]
    return isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and \
        it.func.id == "range" and "range" not in globs


def types_of(fdef, params, param_types, globs):
    """``{name: type}`` for the variables of the generated function ``fdef``: flow-insensitive
    (a name bound to values of two types has none)."""
    env = {}
    conflict = set()

    def bind(name, t):
        if name in conflict:
            return
        if name in env and env[name] != t:
            conflict.add(name)
            env[name] = None
        else:
            env[name] = t

    def target(tgt, t):
        if isinstance(tgt, ast.Name):
            bind(tgt.id, t)
        elif isinstance(tgt, ast.Tuple):
            ts = t[1] if t is not None and t[0] == "t" and len(t[1]) == len(tgt.elts) else None
            for i, e in enumerate(tgt.elts):
                target(e, None if ts is None else ts[i])
        else:
            for n in ast.walk(tgt):
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                    bind(n.id, None)

    def block(stmts):
        for s in stmts:
            if isinstance(s, ast.Assign) and len(s.targets) == 1:
                target(s.targets[0], _expr_type(s.value, env, globs))
            elif isinstance(s, (ast.If, ast.While)):
                block(s.body)
                block(s.orelse)
            elif isinstance(s, ast.For):
                target(s.target, ("s", "i") if range_loop(s, globs) else None)
                for _ in range(2):
                    block(s.body)
                block(s.orelse)
            else:
                for n in ast.walk(s):
                    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                        bind(n.id, None)
                for n in ast.walk(s):
                    if isinstance(n, ast.stmt) and n is not s and \
                            isinstance(n, ast.Assign):
                        target(n.targets[0], None)

    seed = fdef.args.args[-1].arg if len(fdef.args.args) > len(params) else None
    seed_type = None
    for _ in range(2):                 # (the seed's type is the output's: known after one pass)
        env.clear()
        conflict.clear()
        env.update(zip(params, param_types))
        if seed is not None:
            env[seed] = seed_type
        block(fdef.body)
        block(fdef.body)               # (a name read before its binding in a loop)
        ret = fdef.body[-1]
        if seed is not None and isinstance(ret, ast.Return) and \
                isinstance(ret.value, ast.Tuple) and ret.value.elts and \
                isinstance(ret.value.elts[0], ast.Name):
            # the seed (the output's adjoint) has the output's type
            seed_type = env.get(ret.value.elts[0].id)
    return env


# -- one run of statements ----------------------------------------------------------------------
class _Run:
    def __init__(self, env, globs, ndim):
        self.env = env
        self.globs = globs
        self.ndim = ndim
        self.local = {}            # array name -> its loop-local scalar
        self.inputs = {}           # array name read from before the run -> its flat view
        self.shaped = []           # arrays whose shape must be the run's (inputs, shape-only uses)
        self.accs = []             # (accumulator, update expression text, origin)
        self.late = set()          # names known only after the loop (reductions, deferred)
        self.reads = set()         # names the loop and the deferred statements read
        self.writes = set()        # names the run writes
        self.deferred_reads = set()
        self.stmts = []            # (kind, stmt, triple): "E" loop, "P" before, "D" after
        self.n_elementwise = 0
        self.n_acc = 0

    def is_array(self, name):
        t = self.env.get(name)
        return t is not None and t[0] == "a" and t[2] == self.ndim and t[1] in "fb"

    def shape_of(self, name):
        if name not in self.local and name not in self.shaped:
            self.shaped.append(name)

    # each returns (kind, text): "S" scalar (as written), "E" per element, "R" after the loop
    def x(self, node):
        if isinstance(node, ast.Name):
            v = node.id
            self.reads.add(v)
            if v in self.late:
                return "R", v
            if v in self.local:
                return "E", self.local[v]
            t = self.env.get(v) if v in self.env else _expr_type(node, self.env, self.globs)
            if t is None:
                raise _No
            if t[0] == "a":
                if not self.is_array(v):
                    raise _No
                if v in self.writes:
                    raise _No
                if v not in self.inputs:
                    self.inputs[v] = f"_f_{v}"
                    self.shape_of(v)
                return "E", f"{self.inputs[v]}[_i]"
            if t[0] == "s" and t[1] in _ORDER:
                return "S", v
            raise _No
        if isinstance(node, ast.Constant):
            if type(node.value) in (int, float, bool):
                return "S", repr(node.value)
            raise _No
        if isinstance(node, ast.BinOp) and isinstance(node.op, _ARITH):
            if _expr_type(node, self.env, self.globs) is None:
                raise _No
            (ka, a), (kb, b) = self.x(node.left), self.x(node.right)
            if isinstance(node.op, ast.Pow) and kb != "S" or isinstance(node.op, ast.Pow) and \
                    not (isinstance(node.right, ast.Constant) and type(node.right.value) is int):
                raise _No
            k = self.join(ka, kb)
            if isinstance(node.op, ast.Div) and k == "E":
                return k, f"_rt.fdiv({a}, {b})"
            op = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**"}
            return k, f"({a} {op[type(node.op)]} {b})"
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            if _expr_type(node, self.env, self.globs) is None:
                raise _No
            k, a = self.x(node.operand)
            return k, f"({'-' if isinstance(node.op, ast.USub) else '+'}{a})"
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and \
                isinstance(node.ops[0], (ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq)):
            if _expr_type(node, self.env, self.globs) is None:
                raise _No
            (ka, a), (kb, b) = self.x(node.left), self.x(node.comparators[0])
            op = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==",
                  ast.NotEq: "!="}[type(node.ops[0])]
            return self.join(ka, kb), f"({a} {op} {b})"
        if isinstance(node, ast.Call) and not node.keywords:
            return self.call(node)
        raise _No

    def join(self, ka, kb):
        if "R" in (ka, kb):
            if "E" in (ka, kb):
                raise _No
            return "R"
        return "E" if "E" in (ka, kb) else "S"

    def no_arrays(self, node):
        return not any(isinstance(n, ast.Name) and (self.env.get(n.id) or ("",))[0] == "a"
                       for n in ast.walk(node))

    def typ(self, node):
        return _expr_type(node, self.env, self.globs)

    def reduce(self, k, text, origin):
        if k == "S":
            raise _No
        if k == "R":
            raise _No
        self.n_acc += 1
        acc = f"_acc{self.n_acc}"
        self.accs.append((acc, text, origin))
        self.late.add(acc)
        return "R", acc

    def call(self, node):
        node = _as_unbroadcast(node)
        name = _callee(node)
        if name is None:
            raise _No
        mod, fn = name
        args = node.args
        if self.typ(node) is None:
            raise _No
        if all(self.typ(a) is not None and self.typ(a)[0] == "s" and self.no_arrays(a)
               for a in args):
            # a scalar call: as written (its operands must not be known only after the loop)
            for a in args:
                for n in ast.walk(a):
                    if isinstance(n, ast.Name):
                        if n.id in self.late:
                            return "R", ast.unparse(node)
                        self.reads.add(n.id)
            return "S", ast.unparse(node)
        if mod == "np" and fn in _UFUNCS and len(args) == 1:
            k, a = self.x(args[0])
            if k != "E":
                raise _No
            return "E", f"np.{fn}({a})"
        if mod == "np" and fn == "sum" and len(args) == 1:
            k, a = self.x(args[0])
            return self.reduce(k, a, self._origin)
        if mod == "_rt" and fn == "unbroadcast" and len(args) == 2:
            tx = self.typ(args[1])
            k, g = self.x(args[0])
            if tx[0] == "a":
                if not isinstance(args[1], ast.Name) or not self.is_array(args[1].id) or \
                        args[1].id in self.writes and args[1].id not in self.local:
                    raise _No
                self.shape_of(args[1].id)
                self.reads.add(args[1].id)
                if k == "R":
                    raise _No
                return "E", g
            if k == "E":
                return self.reduce(k, g, self._origin)
            return k, f"_rt.unbroadcast({g}, {ast.unparse(args[1])})"
        if mod == "_rt" and fn == "cj" and len(args) == 1:
            return self.x(args[0])
        if mod == "_rt" and fn == "add" and len(args) == 2:
            (ka, a), (kb, b) = self.x(args[0]), self.x(args[1])
            return self.join(ka, kb), f"({a} + {b})"
        if mod == "_rt" and fn == "pow_base_adjoint" and len(args) == 3 and \
                isinstance(args[2], ast.Constant) and type(args[2].value) is int:
            (kg, g), (ka, a) = self.x(args[0]), self.x(args[1])
            k = self.join(kg, ka)
            p = args[2].value
            if p == 0:
                return k, f"({g} * 0.0)"
            if p == 1:
                return kg, g
            if p == 2:
                return k, f"({g} * (2 * {a}))"
            return k, f"({g} * ({p} * {a} ** {p - 1}))"
        if mod == "_adj" and fn == "sum" and len(args) == 4 and \
                isinstance(args[2], ast.Constant) and args[2].value is None and \
                isinstance(args[3], ast.Constant) and args[3].value is False and \
                isinstance(args[1], ast.Name) and self.is_array(args[1].id):
            kg, g = self.x(args[0])
            if kg != "S" or args[1].id in self.writes and args[1].id not in self.local:
                raise _No
            self.shape_of(args[1].id)
            self.reads.add(args[1].id)
            return "E", g
        raise _No


_SHAPE_ONLY = {("_rt", "unbroadcast"): 1, ("_adj", "sum"): 1, ("_rt", "zero_of"): 0,
               ("_rt", "sum_product"): 2}


def _value_reads(node):
    """The names ``node`` reads for their values (not those read only for their shape and dtype,
    as the second operand of ``_rt.unbroadcast``)."""
    shape_only = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Call):
            k = _SHAPE_ONLY.get(_callee(n))
            if k is not None and len(n.args) > k and isinstance(n.args[k], ast.Name):
                shape_only.add(id(n.args[k]))
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and
            isinstance(n.ctx, ast.Load) and id(n) not in shape_only}


def _names(node, ctx):
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ctx)}


def _try_add(run, stmt, triple):
    """Add ``stmt`` to ``run``; False (``run`` unchanged) when it does not belong there."""
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and
            isinstance(stmt.targets[0], ast.Name)):
        return False
    tgt = stmt.targets[0].id
    saved = {k: (set(v) if isinstance(v, set) else dict(v) if isinstance(v, dict) else
                 list(v) if isinstance(v, list) else v) for k, v in vars(run).items()}
    run._origin = triple[2]
    n_accs = len(run.accs)
    try:
        k, text = run.x(stmt.value)
        reads = _names(stmt.value, ast.Load)
        if k == "E":
            t = run.env.get(tgt)
            if t is None or t[0] != "a" or t[2] != run.ndim or t[1] not in "fb" or \
                    reads & run.late or tgt in run.deferred_reads or tgt in run.late:
                raise _No
            if tgt in run.inputs:
                raise _No             # (read from before the run, then rebound in it)
            run.local[tgt] = f"_e_{tgt}"
            run.writes.add(tgt)
            run.stmts.append(("E", stmt, triple, text, run.accs[n_accs:]))
            run.n_elementwise += 1
            return True
        t = run.env.get(tgt)
        if t is None or t[0] != "s" or tgt in run.local or tgt in run.inputs:
            raise _No
        if k == "S" and not (reads & (run.writes | run.late)) and \
                tgt not in run.reads and tgt not in run.writes:
            run.stmts.append(("P", stmt, triple, None, []))
            return True
        # after the loop
        run.stmts.append(("D", stmt, triple, (tgt, text), run.accs[n_accs:]))
        run.late.add(tgt)
        run.writes.add(tgt)
        run.deferred_reads |= reads
        return True
    except _No:
        for k, v in saved.items():
            setattr(run, k, v)
        return False


def _render(run, outside_reads, value_reads, indent, dtype_of):
    """The fused run's triples: the shape check, the loop, and the original statements in the
    ``else`` branch."""
    out = []
    ref = run.shaped[0]
    first = run.stmts[0][2][2]
    cond = " and ".join(f"{s}.shape == {ref}.shape" for s in run.shaped[1:]) or "True"
    for kind, stmt, triple, _, _ in run.stmts:
        if kind == "P":                 # (reads nothing the run writes: before it, both ways)
            out.append((indent, triple[1], triple[2]))
    n = sum(x[0] != "P" for x in run.stmts)
    out.append((indent, f"if {cond}:  # {n} statements fused into one loop", first))
    i1, i2 = indent + 1, indent + 2
    for v, flat in run.inputs.items():
        out.append((i1, f"{flat} = _rt.flat({v})", None))
    mats = list(dict.fromkeys(x[1].targets[0].id for x in run.stmts if x[0] == "E" and
                              x[1].targets[0].id in outside_reads))
    for v in mats:
        # (an array read later only for its shape is allocated, not written)
        out.append((i1, f"{v} = np.empty({ref}.shape, {dtype_of(v)})", None))
        if v in value_reads:
            out.append((i1, f"_f_{v} = {v}.reshape({v}.size)", None))
    mats = [v for v in mats if v in value_reads]
    for acc, _, _ in run.accs:
        out.append((i1, f"{acc} = 0.0", None))
    out.append((i1, f"for _i in range({ref}.size):", None))
    for kind, stmt, triple, text, accs in run.stmts:
        for acc, upd, origin in accs:
            out.append((i2, f"{acc} += {upd}", origin))
        if kind == "E":
            v = stmt.targets[0].id
            out.append((i2, f"{run.local[v]} = {text}", triple[2]))
            if v in mats:
                out.append((i2, f"_f_{v}[_i] = {run.local[v]}", None))
    for kind, stmt, triple, text, _ in run.stmts:
        if kind == "D":
            out.append((i1, f"{text[0]} = {text[1]}", triple[2]))
    out.append((indent, "else:", None))
    for x in run.stmts:
        if x[0] != "P":
            out.append((i1, x[2][1], x[2][2]))
    return out


def fuse(triples, params, param_types, globs):
    """``triples`` (indent, text, origin) of the fused function, with runs of elementwise
    statements over arrays of one shape written as one loop each (see the module docstring)."""
    if param_types is None or any("\n" in t[1] for t in triples) or \
            os.environ.get("S2SAD_JIT_FUSE", "1") == "0":         # (off: to measure it)
        return triples
    try:
        start = next(i for i, t in enumerate(triples) if t[0] == 0 and t[1].startswith("def "))
    except StopIteration:
        return triples
    fn_lines = triples[start:]
    src = "\n".join("    " * t[0] + t[1] for t in fn_lines)
    try:
        fdef = ast.parse(src).body[0]
    except SyntaxError:
        return triples
    env = types_of(fdef, params, param_types, globs)
    body = fdef.body
    # the triple range of each top-level statement
    spans = []
    for i, s in enumerate(body):
        end = body[i + 1].lineno - 1 if i + 1 < len(body) else len(fn_lines)
        spans.append((s.lineno - 1, end))
    stmt_reads = [_names(s, ast.Load) for s in body]
    value_reads = [_value_reads(s) for s in body]

    def dtype_of(v):
        return "np.bool_" if env[v][1] == "b" else "np.float64"

    out = list(triples[:start]) + [fn_lines[0]]
    i = 0
    while i < len(body):
        s = body[i]
        one_line = spans[i][1] - spans[i][0] == 1
        run = None
        j = i
        if one_line and isinstance(s, ast.Assign):
            for nd in _candidate_ndims(s, env, globs):
                r = _Run(env, globs, nd)
                j = i
                while j < len(body) and spans[j][1] - spans[j][0] == 1 and \
                        _try_add(r, body[j], fn_lines[spans[j][0]]):
                    j += 1
                # trailing statements that run before or after the loop gain nothing
                while r.stmts and (r.stmts[-1][0] == "P" or r.stmts[-1][0] == "D" and
                                   not r.stmts[-1][4]):
                    r.stmts.pop()
                    j -= 1
                if r.n_elementwise + len(r.accs) >= 2 and r.n_elementwise >= 1 and r.shaped:
                    run = r
                    break
        if run is None:
            for k in range(*spans[i]):
                out.append(fn_lines[k])
            i += 1
            continue
        outside, values = set(), set()
        for k in range(len(body)):
            if not i <= k < j:
                outside |= stmt_reads[k]
                values |= value_reads[k]
        out.extend(_render(run, outside, values, 1, dtype_of))
        i = j
    return out


def _candidate_ndims(stmt, env, globs):
    nds = []
    for n in ast.walk(stmt.value):
        if isinstance(n, ast.Name):
            t = env.get(n.id)
            if t is not None and t[0] == "a" and t[1] in "fb" and t[2] >= 1 and t[2] not in nds:
                nds.append(t[2])
    return nds
