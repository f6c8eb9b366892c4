"""Loading generated source as a real module: compiled under a file name registered in
``linecache`` (so tracebacks and pdb show generated lines), with a source map back to user lines."""
import itertools
import linecache
import types

from ..frontend.source import split_lines

_counter = itertools.count(1)


class GeneratedModule:
    def __init__(self, name, source, namespace, line_origins):
        self.name = name
        self.source = source
        safe = "".join(c if c.isprintable() and c not in "<>" else "_" for c in str(name))
        self.filename = f"<s2sad-generated {safe} #{next(_counter)}>"
        self.line_origins = line_origins          # generated line number (1-based) -> Origin
        self.module = types.ModuleType(f"s2sad_generated.{safe}")
        self.module.__dict__.update(namespace)
        self.module.__file__ = self.filename
        lines = split_lines(source, True)        # Python's line ends only, as compile() counts
        linecache.cache[self.filename] = (len(source), None, lines, self.filename)
        code = compile(source, self.filename, "exec")
        exec(code, self.module.__dict__)
        _REGISTRY[self.filename] = self

    def __getitem__(self, name):
        return self.module.__dict__[name]


_REGISTRY = {}


def origin_of(filename, lineno):
    """The user's Origin for a line of generated code, or None."""
    mod = _REGISTRY.get(filename)
    if mod is None:
        return None
    return mod.line_origins.get(lineno)


def is_generated(filename):
    return filename in _REGISTRY
