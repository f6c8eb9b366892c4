"""The ``s2sad`` command line.

    s2sad dump FILE.py:FUNC [--wrt 0,x] [--mode reverse|forward]   print the generated source
               [--html OUT.html]                                 (or write a side-by-side page)
    s2sad explain FILE.py:FUNC [--wrt 0,x]                          print every call site's class
    s2sad rules [--grep PATTERN] [--format text|md] [--json] [--tables numpy,python,scipy,cupy]
                                                                    list every supported callee
    s2sad cache info|clear                                         the on-disk derivative cache

``FUNC`` may be dotted (``Class.method``, ``outer_namespace.func``).  If it names an
``@s2sad.differentiate`` function, its own ``wrt`` is used unless ``--wrt`` is given; a method
named through its class is differentiated with respect to its first parameter after ``self``
(``--wrt 0`` for the object).  The file is
imported as a module by path (its ``if __name__ == "__main__":`` block does not run).  Errors are
printed as ``s2sad: error: <message>`` (naming the file and line where there is one, and ending
with ``Fix: ...``) and exit with status 2.
"""
import argparse
import importlib.util
import os
import re
import sys
import traceback

from .errors import S2SADError
from .ir import Origin

PROG = "s2sad"


class CLIError(S2SADError):
    """A problem with the command line's input (not a bug in s2sad)."""


def _parse_wrt(text):
    """``"0"`` -> 0, ``"x"`` -> "x", ``"0,x"`` -> (0, "x")."""
    if text is None:
        return None
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise CLIError(f"--wrt {text!r}: no parameter given",
                       fix="give parameter indices or names, e.g. --wrt 0,x")
    vals = [int(t) if t.lstrip("-").isdigit() else t for t in items]
    if len(vals) == 1 and "," not in text:
        return vals[0]
    return tuple(vals)


def load_module(path):
    """Import the Python file at ``path`` as a module (registered in ``sys.modules``)."""
    if not os.path.isfile(path):
        raise CLIError(f"no such file: {path}",
                       fix="give the path of a .py file (relative to the current directory, or "
                           "absolute), e.g. examples/quickstart.py:loss")
    path = os.path.abspath(path)
    name = os.path.splitext(os.path.basename(path))[0]
    if not name.isidentifier():
        name = "_s2sad_cli_module"
    modname = f"{name}"
    if modname in sys.modules and getattr(sys.modules[modname], "__file__", None) != path:
        modname = f"_s2sad_cli_.{name}"
    spec = importlib.util.spec_from_file_location(modname, path)
    if spec is None or spec.loader is None:
        raise CLIError(f"cannot import {path} as a Python module",
                       fix="point s2sad at a Python source file (.py)")
    module = importlib.util.module_from_spec(spec)
    sys.modules[modname] = module
    d = os.path.dirname(path)
    if d not in sys.path:
        sys.path.insert(0, d)
    try:
        spec.loader.exec_module(module)
    except Exception as e:
        if isinstance(e, (S2SADError, BrokenPipeError)):
            raise
        sys.modules.pop(modname, None)
        raise _import_error(path, e) from None
    return module


def _import_error(path, e):
    """A CLIError naming the file and line where importing ``path`` failed."""
    if isinstance(e, SyntaxError):
        where = Origin(e.filename or path, e.lineno or 1, 0, (e.text or "").strip())
        return CLIError(f"cannot import {path}: {type(e).__name__}: {e.msg}", origin=where,
                        fix="correct the syntax at that line (the file must compile: try "
                            "`python -m py_compile FILE.py`)")
    frames = traceback.extract_tb(e.__traceback__)
    mine = [f for f in frames if os.path.abspath(f.filename) == path] or frames[-1:]
    where = Origin(mine[-1].filename, mine[-1].lineno, 0, mine[-1].line or "") if mine else None
    return CLIError(f"importing {path} failed: {type(e).__name__}: {e}", origin=where,
                    fix="s2sad imports the file to find the function (its `if __name__ == "
                        "\"__main__\":` block does not run): make the file import without "
                        "errors, or move the code that fails under that block")


def resolve(target):
    """``FILE.py:FUNC`` -> the object named FUNC (possibly dotted) in that file."""
    path, sep, func = target.rpartition(":")
    if not sep or not path or not func:
        raise CLIError(f"{target!r}: expected FILE.py:FUNC",
                       fix="name the file and the function, e.g. examples/quickstart.py:loss")
    module = load_module(path)
    obj = owner = module
    done = []
    for part in func.split("."):
        try:
            owner, obj = obj, getattr(obj, part)
        except AttributeError:
            where = ".".join(done) or path
            names = sorted(n for n, v in vars(obj).items() if callable(v) and
                           not n.startswith("_"))[:12] if hasattr(obj, "__dict__") else []
            raise CLIError(f"{where} has no attribute {part!r}",
                           fix="name a function defined there (dotted for a method: "
                               "Class.method)" + (f"; it has: {', '.join(names)}" if names
                                                  else "")) from None
        done.append(part)
    if not callable(obj):
        raise CLIError(f"{func} in {path} is not a function (it is a {type(obj).__name__})",
                       fix="name a function (or a method, as Class.method) defined in the file")
    if isinstance(owner, type) and _takes_self(owner, func.rpartition(".")[2], obj):
        obj = _Method(obj)
    return obj


class _Method:
    """A method named as ``Class.method``: without ``--wrt`` it is differentiated with respect
    to its first parameter after ``self`` (the object is an argument like any other with
    ``--wrt 0``)."""
    def __init__(self, fn):
        self.fn = fn


def _takes_self(cls, name, fn):
    """``cls.name`` is a plain method (not a staticmethod or classmethod) with a parameter after
    ``self``."""
    import inspect
    code = getattr(fn, "__code__", None)
    return isinstance(inspect.getattr_static(cls, name, None), type(fn)) and \
        code is not None and code.co_argcount >= 2


def _target(obj, wrt):
    """The function and the wrt to use: a method named through its class defaults to 1."""
    if isinstance(obj, _Method):
        return obj.fn, (1 if wrt is None else wrt)
    return obj, wrt


def _differentiable(obj, wrt):
    from .api import Differentiable, differentiate
    if isinstance(obj, Differentiable):
        if wrt is None:
            return obj
        return differentiate(obj._fn, wrt=wrt)
    return differentiate(obj, wrt=0 if wrt is None else wrt)


def cmd_dump(args):
    obj, wrt = _target(resolve(args.target), _parse_wrt(args.wrt))
    from .api import Differentiable
    fn = obj._fn if isinstance(obj, Differentiable) else obj
    mode = args.mode or (obj._mode if isinstance(obj, Differentiable) else "reverse")
    if mode == "forward":
        from .api import forward_derivative_of
        if wrt is None:
            wrt = obj._wrt if isinstance(obj, Differentiable) else 0
        d = forward_derivative_of(fn, wrt)
    else:
        d = _differentiable(obj, wrt).derivative()
    if args.html:
        _write_html(args.html, fn, d)
        return 0
    _print_source(d.source)
    return 0


def _print_source(text):
    """Generated source on stdout: highlighted on a terminal, plain text when piped."""
    if sys.stdout.isatty() and not os.environ.get("NO_COLOR"):
        from .htmlview import highlight_terminal
        text = highlight_terminal(text)
    print(text, end="")


def _write_html(path, fn, d):
    from .htmlview import render
    page = render(fn, d)
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(page)
    except OSError as e:
        raise CLIError(f"cannot write {path}: {e.strerror or e}",
                       fix="give --html a path in a directory that exists and is writable") from None
    print(f"wrote {path}", file=sys.stderr)


def cmd_explain(args):
    obj, wrt = _target(resolve(args.target), _parse_wrt(args.wrt))
    print(_differentiable(obj, wrt).explain())
    return 0


def cmd_rules(args):
    from .rules import listing
    tables = None
    if args.tables:
        tables = [t.strip() for t in args.tables.split(",") if t.strip()]
        unknown = [t for t in tables if t not in listing.TABLES]
        if unknown or not tables:
            raise CLIError(f"--tables {args.tables!r}: unknown table(s) {', '.join(unknown)}",
                           fix=f"choose among {', '.join(listing.TABLES)} (comma-separated)")
        missing = [t for t in tables if not listing.available(t)]
        if missing:
            raise CLIError(f"--tables: {', '.join(missing)} cannot be imported here",
                           fix="install the library, or leave its table out of --tables")
    entries = listing.collect(tables)
    tables = tables or sorted({e.table for e in entries}, key=list(listing.TABLES).index)
    if args.grep:
        try:
            entries = listing.select(entries, args.grep)
        except re.error as e:
            raise CLIError(f"--grep {args.grep!r} is not a regular expression: {e}",
                           fix="escape special characters, e.g. --grep 'linalg\\.eig'") from None
    if args.json:
        print(listing.render_json(entries), end="")
    elif args.format == "md":
        print(listing.render_markdown(entries, tables), end="")
    else:
        print(listing.render_text(entries), end="")
    return 0


def cmd_cache(args):
    from . import diskcache
    if args.action == "clear":
        n = diskcache.clear()
        print(f"removed {n} entr{'y' if n == 1 else 'ies'} from {diskcache.folder()[0]}")
        return 0
    i = diskcache.info()
    state = "off (S2SAD_CACHE=0)" if not i["enabled"] else \
        f"refused: {i['refused']}" if i["refused"] else "on"
    rate = "n/a (no derivative asked in this process)" if i["hit_rate"] is None else \
        f"{100 * i['hit_rate']:.0f}%"
    print(f"folder:   {i['folder']}{' (S2SAD_CACHE_DIR)' if i['explicit'] else ''}\n"
          f"state:    {state}\n"
          f"entries:  {i['entries']}\n"
          f"size:     {i['bytes'] / 2**20:.2f} MB of {i['limit_bytes'] / 2**20:.0f} MB "
          f"(S2SAD_CACHE_MAX_MB)\n"
          f"this process: {i['hits']} hits, {i['misses']} misses, hit rate {rate}")
    return 0


def make_parser():
    p = argparse.ArgumentParser(
        prog=PROG, description="s2sad: source-to-source automatic differentiation for Python.")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    d = sub.add_parser("dump", help="print the generated derivative source of FILE.py:FUNC")
    d.add_argument("target", metavar="FILE.py:FUNC")
    d.add_argument("--wrt", help="arguments to differentiate by index or name, e.g. 0 or 0,x "
                                 "(default: the decorator's wrt, else 0; for Class.method, "
                                 "the first parameter after self)")
    d.add_argument("--mode", choices=("reverse", "forward"),
                   help="default: the decorator's mode, else reverse")
    d.add_argument("--html", metavar="OUT.html",
                   help="write a self-contained page instead: your source beside the generated "
                        "one, each generated line linked to its line, call sites annotated")
    d.set_defaults(run=cmd_dump)
    e = sub.add_parser("explain", help="print every call site of FILE.py:FUNC with its class")
    e.add_argument("target", metavar="FILE.py:FUNC")
    e.add_argument("--wrt", help="arguments to differentiate by index or name, e.g. 0 or 0,x")
    e.set_defaults(run=cmd_explain)
    r = sub.add_parser("rules", help="list every callee the derivative tables support")
    r.add_argument("--grep", metavar="PATTERN",
                   help="only callees whose name or module matches this regular expression")
    r.add_argument("--format", choices=("text", "md"), default="text",
                   help="md: Markdown tables (docs/coverage.md is made with --format md "
                        "--tables numpy,python,scipy)")
    r.add_argument("--json", action="store_true", help="a JSON list of the entries")
    r.add_argument("--tables", metavar="T1,T2",
                   help="the tables to list, among numpy,python,scipy,cupy (default: those whose "
                        "library is installed)")
    r.set_defaults(run=cmd_rules)
    c = sub.add_parser("cache", help="the on-disk cache of derivatives: info, or clear it")
    c.add_argument("action", choices=("info", "clear"))
    c.set_defaults(run=cmd_cache)
    return p


def main(argv=None):
    """Entry point of the ``s2sad`` console script; returns the exit status."""
    parser = make_parser()
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except S2SADError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
