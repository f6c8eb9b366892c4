"""Loading generated source as a real module: compiled under a file name registered in
``linecache`` (so tracebacks and pdb show generated lines), with a source map back to user lines."""
import itertools
import linecache
import os
import sys
import types

from ..frontend.source import register_generated, split_lines
# the source map (generated line -> user's Origin) is kept below, in frontend/source.py
from ..frontend.source import is_generated, origin_of  # noqa: F401

_counter = itertools.count(1)


def user_origin(e):
    """The user's line behind the innermost generated-code frame of an exception's traceback."""
    tb = e.__traceback__
    origin = None
    while tb is not None:
        o = origin_of(tb.tb_frame.f_code.co_filename, tb.tb_lineno)
        if o is not None:
            origin = o
        tb = tb.tb_next
    return origin


class GeneratedModule:
    def __init__(self, name, source, namespace, line_origins, filename=None):
        """``filename``: the real file the source was read from (an entry of the disk cache)."""
        self.name = name
        self.source = source
        self.namespace = namespace                # what the code found there (the disk cache
        # records how to get each object again)
        safe = "".join(c if c.isprintable() and c not in "<>" else "_" for c in str(name))
        self.filename = filename or f"<s2sad-generated {safe} #{next(_counter)}>"
        self.line_origins = line_origins          # generated line number (1-based) -> Origin
        modname = f"s2sad_generated.{safe}"
        if filename:
            # an entry of the disk cache: importable by its own name, as numba's cache needs
            # (the machine code it reads back names the module of the function's globals)
            stem = os.path.splitext(os.path.basename(filename))[0]
            modname = "s2sad_generated." + "".join(c if c.isalnum() else "_" for c in stem)
        self.module = types.ModuleType(modname)
        self.module.__dict__.update(namespace)
        self.module.__file__ = self.filename
        if filename:
            sys.modules[modname] = self.module
        lines = split_lines(source, True)        # Python's line ends only, as compile() counts
        linecache.cache[self.filename] = (len(source), None, lines, self.filename)
        code = compile(source, self.filename, "exec")
        exec(code, self.module.__dict__)
        register_generated(self)

    def __getitem__(self, name):
        return self.module.__dict__[name]

