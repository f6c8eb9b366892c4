"""Array operations per gradient step: the proxy for host time on CuPy (issue 14, item 1).

    PYTHONPATH=$PWD python benchmarks/op_count.py [--only TEXT] [--show]

On CuPy every array operation (a ufunc, an operator on arrays, a NumPy-namespace function, an
array method, a view) is a call into CuPy's Python layer, about 10-40 µs of host time each; the
small steps of ``benchmarks/gpu_step.py`` are host-bound, so fewer operations per step is what
makes them faster.  This script runs each step of gpu_step.py once on NumPy float32 arrays (the
``--numpy --quick`` sizes, with ``get_array_module`` resolved as CuPy's is) under a line tracer,
and counts, per executed line of the generated derivative and of s2sad's runtime and rules (code
in NumPy itself is not traced: its call counts as one operation where it is made):

* ops: array operations: ufunc/operator applications with an array operand, calls of NumPy
  functions with an array argument (and array constructors), array methods that compute;
* views: subscripts, ``.T``/``.real``/``.reshape``/``.transpose`` and other view methods;
* lines: Python lines of s2sad and the generated code executed (the rest of the host time).

The counts are heuristics read from the source of each line (an operand is an array when its name
or attribute chain holds an ndarray before the line runs); they compare one version of s2sad with
another, they are not CuPy launch counts (the concat/permute adjoints run as CUDA kernels there).
"""
import argparse
import ast
import linecache
import os
import sys

os.environ.setdefault("S2SAD_CACHE", "0")
import numpy as np  # noqa: E402

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(_HERE))
sys.path.insert(0, _HERE)
import s2sad  # noqa: E402

_NUMPY_DIR = os.path.dirname(np.__file__)
_S2SAD_DIR = os.path.dirname(os.path.abspath(s2sad.__file__))
_VIEW_METHODS = {"reshape", "transpose", "swapaxes", "view", "ravel", "squeeze"}
_VIEW_ATTRS = {"T", "mT", "real", "imag"}
_NOT_OPS = {"result_type", "dtype", "shape", "ndim", "isscalar", "iscomplexobj", "can_cast",
            "promote_types", "broadcast_shapes", "normalize_axis_tuple", "size"}
_MAKERS = {"full", "zeros", "ones", "empty", "full_like", "zeros_like", "ones_like",
           "empty_like", "array", "ascontiguousarray", "copy"}
_VIEW_FUNCS = {"transpose", "swapaxes", "moveaxis", "reshape", "broadcast_to", "expand_dims",
               "squeeze", "ravel", "asarray", "asanyarray", "permute_dims", "rollaxis"}
_MISSING = object()


def _resolve(node, frame):
    """The value of a Name or attribute chain, or _MISSING."""
    if isinstance(node, ast.Name):
        for ns in (frame.f_locals, frame.f_globals, frame.f_builtins):
            if node.id in ns:
                return ns[node.id]
        return _MISSING
    if isinstance(node, ast.Attribute):
        base = _resolve(node.value, frame)
        if base is _MISSING:
            return _MISSING
        try:
            return getattr(base, node.attr)
        except Exception:  # noqa: BLE001
            return _MISSING
    return _MISSING


def _arrayish(node, frame):
    """Whether an expression (probably) is an array: a chain holding an ndarray, or an
    expression over one."""
    if isinstance(node, (ast.Name, ast.Attribute)):
        v = _resolve(node, frame)
        if v is not _MISSING:
            return isinstance(v, np.ndarray)
    for sub in ast.iter_child_nodes(node):
        if isinstance(sub, ast.expr) and not isinstance(sub, (ast.Lambda,)) and \
                _arrayish(sub, frame):
            return True
    return False


def _walk(node, frame, boolean=False):
    """The nodes of a statement that run as array operations: a comparison in a boolean context
    (an ``and``/``or``, an ``if`` test) cannot be one (an array there raises), and of a
    conditional expression only the branch its test (a name) picks."""
    if isinstance(node, ast.Compare) and boolean:
        return
    if isinstance(node, ast.IfExp):
        test = _resolve(node.test, frame) if isinstance(node.test, (ast.Name, ast.Attribute)) \
            else _MISSING
        yield from _walk(node.test, frame, True)
        if test is _MISSING:
            yield from _walk(node.body, frame, boolean)
        else:
            yield from _walk(node.body if test else node.orelse, frame, boolean)
        return
    yield node
    inner = boolean or isinstance(node, (ast.BoolOp, ast.If, ast.While, ast.Assert)) or \
        isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)
    for sub in ast.iter_child_nodes(node):
        if isinstance(node, (ast.If, ast.While, ast.Assert)) and sub is not node.test:
            continue
        yield from _walk(sub, frame, inner and not isinstance(node, ast.Call))


class Counter:
    def __init__(self):
        self.ops = 0
        self.views = 0
        self.lines = 0
        self.per_line = {}
        self._stmts = {}
        self._last = {}
        self._node = {}

    def _stmt(self, filename, lineno):
        key = filename
        table = self._stmts.get(key)
        if table is None:
            src = "".join(linecache.getlines(filename))
            table = {}
            try:
                tree = ast.parse(src)
            except SyntaxError:
                tree = None
            if tree is not None:
                for node in ast.walk(tree):
                    if isinstance(node, ast.stmt):
                        if isinstance(node, (ast.If, ast.While)):
                            part = node
                        elif isinstance(node, ast.For):
                            part = node.iter
                        elif isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.Try,
                                               ast.With)):
                            part = None
                        else:
                            part = node
                        table.setdefault(node.lineno, part)
            self._stmts[key] = table
        return table.get(lineno)

    def count_line(self, frame):
        code = frame.f_code
        node = self._stmt(code.co_filename, frame.f_lineno)
        self.lines += 1
        line = self._last.get(id(frame))
        self._last[id(frame)] = frame.f_lineno
        if node is None and line is not None:
            return          # (a continuation line of the statement counted before)
        if node is not None and node is self._node.get(id(frame)):
            return          # (the statement's first line again, after its continuation lines)
        self._node[id(frame)] = node
        if node is None or code.co_name in ("<genexpr>", "<listcomp>", "<dictcomp>", "<setcomp>"):
            return
        ops = views = 0
        for n in _walk(node, frame):
            if isinstance(n, ast.BinOp):
                if _arrayish(n.left, frame) or _arrayish(n.right, frame):
                    ops += 1
            elif isinstance(n, ast.AugAssign):
                if _arrayish(n.target, frame) or _arrayish(n.value, frame):
                    ops += 1
            elif isinstance(n, ast.UnaryOp) and not isinstance(n.op, ast.Not):
                if _arrayish(n.operand, frame):
                    ops += 1
            elif isinstance(n, ast.Compare):
                if any(_arrayish(x, frame) for x in [n.left] + n.comparators) and \
                        not any(isinstance(o, (ast.Is, ast.IsNot, ast.In, ast.NotIn))
                                for o in n.ops):
                    ops += 1
            elif isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Load):
                if _arrayish(n.value, frame):
                    views += 1
            elif isinstance(n, ast.Attribute) and n.attr in _VIEW_ATTRS and \
                    isinstance(n.ctx, ast.Load):
                if isinstance(_resolve(n.value, frame), np.ndarray):
                    views += 1
            elif isinstance(n, ast.Call):
                f = _resolve(n.func, frame)
                if f is _MISSING:
                    if isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Call):
                        # xp(a).full(...), m.broadcast_to(g, s).astype(...): a NumPy function
                        # of a module computed on the line, or a method of an array made on it
                        name = n.func.attr
                        args = list(n.args) + [k.value for k in n.keywords]
                        if name in _NOT_OPS or not (hasattr(np, name) or
                                                    hasattr(np.ndarray, name)):
                            continue
                        if name in _VIEW_METHODS or name in _VIEW_FUNCS:
                            views += 1
                        elif name in _MAKERS or hasattr(np.ndarray, name) or \
                                any(_arrayish(a, frame) for a in args):
                            ops += 1
                    continue
                name = getattr(f, "__name__", "")
                owner = getattr(f, "__self__", None)
                if isinstance(owner, np.ndarray):
                    if name in ("reshape", "ravel") and not owner.flags.c_contiguous:
                        ops += 1        # (a copy, as a rule: counted as an operation)
                    elif name in _VIEW_METHODS:
                        views += 1
                    elif name not in _NOT_OPS:
                        ops += 1
                elif isinstance(f, np.ufunc) or \
                        (getattr(f, "__module__", None) or "").startswith("numpy") and \
                        callable(f) and name not in _NOT_OPS:
                    args = list(n.args) + [k.value for k in n.keywords]
                    if name in _MAKERS or any(_arrayish(a, frame) for a in args):
                        if name in _VIEW_FUNCS:
                            views += 1
                        else:
                            ops += 1
        if ops or views:
            self.ops += ops
            self.views += views
            k = (os.path.basename(code.co_filename), frame.f_lineno, code.co_name)
            o, v = self.per_line.get(k, (0, 0))
            self.per_line[k] = (o + ops, v + views)

    def tracer(self, frame, event, arg):
        fn = frame.f_code.co_filename
        if fn.startswith(_NUMPY_DIR) or not (fn.startswith(_S2SAD_DIR) or fn.startswith("<") or
                                             "s2sad" in fn):
            return None
        if event == "call":
            self._last.pop(id(frame), None)
            self._node.pop(id(frame), None)
            return self._local
        return None

    def _local(self, frame, event, arg):
        if event == "line":
            self.count_line(frame)
        return self._local


def count_step(step, params, data):
    vg = s2sad.value_and_grad(step, wrt=tuple(range(len(params))))
    vg(*params, *data)                  # build, warm the call memo
    c = Counter()
    sys.settrace(c.tracer)
    try:
        vg(*params, *data)
    finally:
        sys.settrace(None)
    return c


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", default="")
    ap.add_argument("--show", action="store_true", help="the counted lines")
    args = ap.parse_args(argv)
    import gpu_step as G               # (its CPU get_array_module resolves as CuPy's does)
    total = [0, 0, 0]
    print(f"{'step':44s} {'ops':>5s} {'views':>5s} {'lines':>6s}")
    for name, step, _, params_np, data_np, _ in G.cases(True, True):
        if args.only not in name:
            continue
        params = [np.asarray(p, np.float32) for p in params_np]
        data = [np.asarray(d, np.float32) for d in data_np]
        c = count_step(step, params, data)
        print(f"{name:44s} {c.ops:5d} {c.views:5d} {c.lines:6d}")
        total = [total[0] + c.ops, total[1] + c.views, total[2] + c.lines]
        if args.show:
            for (f, ln, co), (o, v) in sorted(c.per_line.items()):
                print(f"    {f}:{ln} {co}: ops {o} views {v}  "
                      f"{linecache.getline(f if os.path.exists(f) else f, ln).strip()[:90]}")
    print(f"{'total':44s} {total[0]:5d} {total[1]:5d} {total[2]:6d}")


if __name__ == "__main__":
    main()
