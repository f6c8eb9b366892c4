"""Scopes, read from the gast tree: the names a function binds (its locals, its ``global`` and
``nonlocal`` declarations), the names a nested function or lambda reads from outside, and whether
a loop body may leave early."""
import gast

_SCOPES = (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda, gast.ClassDef, gast.ListComp,
           gast.SetComp, gast.DictComp, gast.GeneratorExp)


def _scope_nodes(node):
    """Nodes of a function's own scope: nested functions, lambdas, classes and comprehensions are
    not entered (their names are their own), but a nested def's name, decorators and defaults are."""
    todo = list(gast.iter_child_nodes(node))
    while todo:
        n = todo.pop()
        yield n
        if isinstance(n, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
            todo.extend(n.decorator_list)
            if not isinstance(n, gast.ClassDef):
                todo.extend(d for d in n.args.defaults + n.args.kw_defaults if d is not None)
            continue
        if isinstance(n, gast.Lambda):
            todo.extend(d for d in n.args.defaults + n.args.kw_defaults if d is not None)
            continue
        if isinstance(n, (gast.ListComp, gast.SetComp, gast.DictComp, gast.GeneratorExp)):
            todo.append(n.generators[0].iter)
            # an assignment expression inside a comprehension binds in the enclosing function
            todo.extend(m.target for m in gast.walk(n) if isinstance(m, gast.NamedExpr))
            continue
        todo.extend(gast.iter_child_nodes(n))


def _assigned_names(fnode):
    """(local names, names declared global, names declared nonlocal) of a function's own scope."""
    names, glob, nonloc = set(), set(), set()
    for node in _scope_nodes(fnode):
        if isinstance(node, gast.Name) and isinstance(node.ctx, (gast.Store, gast.Del)):
            names.add(node.id)
        elif isinstance(node, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, gast.Global):
            glob.update(node.names)
        elif isinstance(node, gast.Nonlocal):
            nonloc.update(node.names)
        elif isinstance(node, gast.ExceptHandler) and isinstance(node.name, gast.Name):
            names.add(node.name.id)
    return names - glob - nonloc, glob, nonloc


def free_names(node):
    """Names a nested function or lambda reads from outside itself."""
    params = {a.id for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs}
    for a in (node.args.vararg, node.args.kwarg):
        if a is not None:
            params.add(a.id)
    if isinstance(node, gast.Lambda):
        own = params
    else:
        own = params | _assigned_names(node)[0]
    loads = set()
    for n in gast.walk(node):
        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load):
            loads.add(n.id)
    return loads - own


def _stores(nodes, name):
    return any(isinstance(m, gast.Name) and m.id == name and isinstance(m.ctx, gast.Store)
               for n in nodes for m in gast.walk(n))


def _leaves_early(nodes):
    """True when a loop body may stop the loop early (``break``, ``return``; not inside nested
    loops or functions)."""
    stack = list(nodes)
    while stack:
        n = stack.pop()
        if isinstance(n, (gast.Break, gast.Return)):
            return True
        if isinstance(n, (gast.For, gast.While)):
            stack.extend(n.orelse)
            stack.extend(x for x in gast.walk(n) if isinstance(x, gast.Return))
            continue
        if isinstance(n, (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda, gast.ClassDef)):
            continue
        stack.extend(gast.iter_child_nodes(n))
    return False
