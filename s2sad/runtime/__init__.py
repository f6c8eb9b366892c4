"""The helpers generated code calls, reached there as ``_rt`` (this package's namespace).

The modules, from the bottom up (each imports only those before it):

- :mod:`.arrays`: zero tests, un-broadcasting, adjoint accumulation, zeros, conjugation, the small
  adjoints of the Python rule table;
- :mod:`.iterators`: :class:`Iter`, :class:`Cursor`, :func:`here`, :class:`LazyList`;
- :mod:`.values`: which values carry a derivative, value kinds, user code versus libraries;
- :mod:`.indexing`: adjoints of subscripts, scatter-accumulation, :func:`snap`;
- :mod:`.containers`: displays, mutation undo, container reads, the adjoints of the builtins over
  sequences;
- :mod:`.refusals`: opaque-callee messages and the guards generated code runs;
- :mod:`.dispatch`: dynamic calls, derived callees built lazily, operators of user classes;
- :mod:`.forward` (with :mod:`.tangents`): the helpers generated forward code calls as ``_fw``.
  They are not re-exported here: ``_fw.zeros_like`` (a zero tangent) is not ``_rt.zeros_like``
  (a zero adjoint).

:mod:`.hooks` holds the callbacks the layers above register (building a derivative, looking a
rule up): the runtime imports nothing above it.  :mod:`.heap` settles glibc's allocation
thresholds once per process (the derivative cache calls it); generated code does not.

Every name defined in the modules above :mod:`.forward` (private ones too) is re-exported here,
and the functions among them report ``s2sad.runtime`` as their module, as generated code spells
them (``_rt.call``): rule names and messages say ``s2sad.runtime.call``.
"""
from types import FunctionType as _FunctionType, ModuleType as _ModuleType

from . import hooks  # noqa: F401
from . import arrays, iterators, values, indexing, containers, refusals, dispatch


def _export(modules, namespace, name):
    for m in modules:
        for k, v in vars(m).items():
            if k.startswith("__") or isinstance(v, _ModuleType):
                continue
            if type(v) is _FunctionType and v.__module__ == m.__name__:
                v.__module__ = name
            namespace[k] = v


_export((arrays, iterators, values, indexing, containers, refusals, dispatch), globals(), __name__)
