"""Shrink a failing program to a minimal one that fails the same way.

Greedy reduction on the program's syntax tree, repeated until nothing more can be removed:

1. delete a statement (anywhere, helpers and imports included; an emptied body gets ``pass``);
2. replace an ``if`` by one of its arms;
3. replace an expression by one of its sub-expressions, or by ``y``, ``x`` or ``0.5``.

A candidate is kept when :func:`tests.fuzz.oracle.check_source` gives the same failure: the same
outcome in the same mode, and for crashes the same exception signature.
"""
import ast
import copy
import time
import warnings

from .oracle import check_source


def same_failure(want):
    """A predicate on results: the failure ``want`` (a Result) again, in the same mode."""
    mode = want.mode
    sig = want.modes[mode].signature

    def pred(res):
        r = res.modes.get(mode)
        return r is not None and r.outcome == want.outcome and r.signature == sig
    return pred


def _parents(tree):
    par = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            par[child] = node
    return par


def _replace(parent, old, new):
    for field, value in ast.iter_fields(parent):
        if value is old:
            setattr(parent, field, new)
            return True
        if isinstance(value, list):
            for i, v in enumerate(value):
                if v is old:
                    if new is None:
                        del value[i]
                        if not value and field in ("body", "finalbody"):
                            value.append(ast.Pass())
                    elif isinstance(new, list):
                        value[i:i + 1] = new
                    else:
                        value[i] = new
                    return True
    return False


def _load_expr(node):
    return isinstance(node, ast.expr) and not isinstance(getattr(node, "ctx", None),
                                                         (ast.Store, ast.Del))


def _candidates(tree):
    """Edits, each a function of a fresh copy of ``tree`` (and its node list) that applies it."""
    nodes = list(ast.walk(tree))
    par = _parents(tree)
    edits = []
    # statements: deletions, and ifs replaced by an arm
    for i, node in enumerate(nodes):
        if not isinstance(node, ast.stmt) or node not in par:
            continue
        if isinstance(node, ast.FunctionDef) and node.name == "f" and isinstance(par[node], ast.Module):
            continue
        edits.append(("del", i, None))
        if isinstance(node, ast.If):
            edits.append(("if_body", i, None))
            if node.orelse:
                edits.append(("if_else", i, None))
        if isinstance(node, (ast.For, ast.While)):
            edits.append(("loop_body", i, None))
    # expressions, outermost first
    index = {id(n): j for j, n in enumerate(nodes)}
    for i, node in enumerate(nodes):
        if not _load_expr(node) or node not in par:
            continue
        kids = [index[id(n)] for n in ast.iter_child_nodes(node) if _load_expr(n)]
        for j in kids:
            edits.append(("sub", i, j))
        p = par[node]
        if (isinstance(p, ast.Call) and p.func is node) or (
                isinstance(p, (ast.Attribute, ast.Subscript)) and p.value is node):
            continue
        for leaf in ("y", "0.5", "x"):
            if not (isinstance(node, ast.Name) and node.id == leaf) and not (
                    isinstance(node, ast.Constant) and leaf == "0.5"):
                edits.append(("leaf", i, leaf))
    return edits


def _apply(tree, edit):
    t2 = copy.deepcopy(tree)
    nodes = list(ast.walk(t2))
    par = _parents(t2)
    kind, i, arg = edit
    node = nodes[i]
    parent = par.get(node)
    if parent is None:
        return None
    if kind == "del":
        ok = _replace(parent, node, None)
    elif kind == "if_body":
        ok = _replace(parent, node, list(node.body))
    elif kind == "if_else":
        ok = _replace(parent, node, list(node.orelse))
    elif kind == "loop_body":
        ok = _replace(parent, node, list(node.body) if not isinstance(node, ast.For) else
                      [ast.Assign(targets=[node.target], value=ast.Subscript(
                          value=ast.Call(func=ast.Name("list", ast.Load()), args=[node.iter],
                                         keywords=[]),
                          slice=ast.Constant(0), ctx=ast.Load()), lineno=0)] + list(node.body))
    elif kind == "sub":
        ok = _replace(parent, node, nodes[arg])
    else:
        new = ast.parse(arg, mode="eval").body
        ok = _replace(parent, node, new)
    if not ok:
        return None
    ast.fix_missing_locations(t2)
    return t2


def shrink(source, want, seed=0, budget_s=300.0, modes=("rev", "fwd"), log=None):
    """The smallest program found that fails like ``want`` (a Result of ``source``)."""
    pred = same_failure(want)
    modes = (want.mode,) if want.mode else modes
    tree = ast.parse(source)
    best = ast.unparse(tree)
    seen = {best}
    t0 = time.time()
    tries = 0
    pos, improved = 0, False
    while time.time() - t0 < budget_s:
        cands = _candidates(tree)
        if pos >= len(cands):
            if not improved:
                break
            pos, improved = 0, False
            continue
        edit = cands[pos]
        pos += 1
        t2 = _apply(tree, edit)
        if t2 is None:
            continue
        try:
            src = ast.unparse(t2)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                compile(src, "<shrink>", "exec")
        except Exception:
            continue
        if src in seen or len(src) >= len(best):
            continue
        seen.add(src)
        tries += 1
        res = check_source(src + "\n", seed=seed, modes=modes, timeout=30)
        if pred(res):
            tree, best = t2, src
            improved = True
            pos -= 1
            if log:
                log(f"  shrink: {len(best)} chars after {tries} tries")
    return best + "\n"
