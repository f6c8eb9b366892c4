"""The lowerer: its state (the block being filled, locals, renames, the namespace of generated code,
the globals and closures it reads), fresh names, and the function as a whole.  The lowering of
statements, loops, expressions, calls and iterators is in the modules of its parts, mixed in."""
import types

import gast

from ... import ir
from ...errors import UnsupportedSyntaxError
from ..attrs import normalise as normalise_attrs
from ..mangle import mangle_function
from ..source import _MISSING
from .calls import CallLowering
from .expressions import ExpressionLowering
from .iterators import IteratorLowering
from .loops import LoopLowering
from .scopes import _assigned_names
from .statements import StatementLowering
from .tables import _CONSTRUCT_NAMES


class Lowerer(StatementLowering, LoopLowering, ExpressionLowering, CallLowering, IteratorLowering):
    def __init__(self, src):
        self.src = src
        self.counter = 0
        self.namespace = {}
        self.block = None
        self.fnode = src.node
        # private names (self.__w) as Python spelled them in the class body: _Class__w
        self._mangled = mangle_function(src.fn, self.fnode)
        args = self.fnode.args
        self.params = list(src.data_cells)
        self.params += [a.id for a in args.posonlyargs + args.args]
        if args.vararg is not None:
            self.params.append(args.vararg.id)
        self.params += [a.id for a in args.kwonlyargs]
        if args.kwarg is not None:
            self.params.append(args.kwarg.id)
        if isinstance(self.fnode, gast.Lambda):
            self.locals, self.globals_decl, self.nonlocal_decl = set(), set(), set()
        else:
            self.locals, self.globals_decl, self.nonlocal_decl = _assigned_names(self.fnode)
        self.locals |= set(self.params)
        self.renames = {}
        self.global_refs = {}            # module globals read at build time (checked before reuse)
        self.closures = {}               # local variable -> enclosing variables its closure reads
        self._lazy_fns = {}              # list a map/filter/starmap builds -> its function
        self._nonlocal_writers = []      # (names, origin) of nested defs writing our variables

    # -- helpers ----------------------------------------------------------------------------
    def tmp(self):
        """A fresh temporary ``_N`` (never a name the function already uses: generated code has
        such names, and s2sad differentiates generated code too)."""
        while True:
            self.counter += 1
            name = f"_{self.counter}"
            if name not in self.locals:
                return name

    def emit(self, stmt):
        self.block.append(stmt)

    def unsupported(self, node, what=None):
        what = what or _CONSTRUCT_NAMES.get(type(node)) or f"`{type(node).__name__}`"
        fix = "define the class at module level, outside the function" \
            if isinstance(node, gast.ClassDef) else \
            "rewrite this line with plain assignments, calls, if/for/while; or move it into a " \
            "helper with a rule (s2sad.defrule)"
        raise UnsupportedSyntaxError(f"{what} is not supported by s2sad yet",
                                     origin=self.src.origin(node), fix=fix)

    def free(self, name, node):
        value = self.src.resolve(name)
        if value is _MISSING:
            raise UnsupportedSyntaxError(f"name {name!r} is not defined", origin=self.src.origin(node),
                                         fix=f"define {name!r} before calling the function")
        self.namespace[name] = value
        if name not in self.src.closure and name not in self.src.imports and \
                name in self.src.globals and not isinstance(value, types.ModuleType):
            self.global_refs[name] = value
        return value

    # -- function ---------------------------------------------------------------------------
    def lower_function(self):
        self.block = []
        self.fnode = normalise_attrs(self, self.fnode)
        body = self.fnode.body
        if isinstance(self.fnode, gast.Lambda):
            r = self.expr(body)
            self.emit(ir.Return(r, self.src.origin(body)))
        else:
            if isinstance(self.fnode, gast.AsyncFunctionDef):
                self.unsupported(self.fnode, "an async function")
            for node in gast.walk(self.fnode):
                if isinstance(node, (gast.Yield, gast.YieldFrom, gast.Await)):
                    self.unsupported(node)
            self.stmts(body)
        fn = ir.Function(self.src.fn.__name__, self.params, self.block,
                         self.src.origin(self.fnode), pyfunc=self.src.fn, namespace=self.namespace)
        self._drop_unused_lazy(fn)
        fn.nonlocal_writers = self._nonlocal_writers
        fn.global_refs = (self.src.globals, tuple(self.global_refs.items()))
        return fn

    def stmts(self, nodes):
        for n in nodes:
            self.stmt(n)

    def sub_block(self, nodes):
        saved, self.block = self.block, []
        self.stmts(nodes)
        out, self.block = self.block, saved
        return out

    def name(self, n):
        return self.renames.get(n, n)

    def _plain_local(self, n):
        return n not in self.globals_decl and n not in self.nonlocal_decl

    def _fresh_name(self, base):
        while True:
            self.counter += 1
            name = f"{base}_{self.counter}"
            if name not in self.locals:
                return name


def lower(src):
    """Lower a :class:`~s2sad.frontend.source.FunctionSource` to an IR function."""
    return Lowerer(src).lower_function()
