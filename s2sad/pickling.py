"""Pickling what s2sad's API returns: ``@differentiate`` functions (:class:`~s2sad.api.Differentiable`)
and the callables of ``grad(f)`` and ``value_and_grad(f)``, so that they travel to
multiprocessing, Dask or Ray workers with plain ``pickle`` (and with cloudpickle).

Each pickles as the call that made it (``grad(f, wrt=..., has_aux=...)``), with ``f``:

* by reference (module and name), as pickle sends any function, when ``f`` is found under its
  name at the top of an importable module;
* by value otherwise (a closure, a lambda, a function defined inside another, or one defined in
  ``__main__``): the text s2sad reads for it (:func:`~s2sad.frontend.source.defining_text`, the
  text that compiles to its code), the module-level names its code reads (modules by name, other
  values pickled), its closure cells' values and its defaults.  The receiving process compiles
  the text, keeps it in ``linecache`` under the function's file name (or, when that process has
  another text under that name, ``<pickled FILE #hash>``), so that s2sad reads the function there
  as it reads a function of a file, and rebuilds the function.  Functions it refers to that are
  not importable travel the same way (a recursive or mutually recursive local function too).

A captured value that pickle cannot send is refused when pickling, with
:class:`~s2sad.errors.NotPicklableError` naming it.
"""
import builtins
import importlib
import linecache
import os
import pickle
import sys
import types
import weakref

from .errors import NotPicklableError
from .frontend.source import defining_text

_FUNCTION = types.FunctionType


class _Empty:
    """Marks a closure cell not bound yet (the class itself: pickled by reference)."""


def by_reference(obj):
    """True when pickle can send ``obj`` by reference: its module (not ``__main__``) holds it
    under its qualified name."""
    mod, name = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if not isinstance(mod, str) or not isinstance(name, str) or mod == "__main__" or \
            "<" in name:
        return False
    o = sys.modules.get(mod)
    for part in name.split("."):
        o = getattr(o, part, None)
    return o is obj


def reduce(obj, make, fn, options):
    """``obj.__reduce__()`` for an object made by ``make(fn, **options)``: its name when pickle
    can send it by reference, else that call with ``fn`` :func:`portable`."""
    if by_reference(obj):
        return obj.__qualname__
    return construct, (make, portable(fn), options)


def construct(make, fn, options):
    """``make(fn, **options)`` (what :func:`reduce` pickles)."""
    return make(fn, **options)


def portable(v):
    """``v`` as pickled here: a Python function that pickle cannot send by reference travels by
    value (:class:`_ByValue`), a module by name; anything else as itself."""
    if type(v) is _FUNCTION and not by_reference(v):
        return _by_value(v)
    if type(v) is types.ModuleType:
        return _Module(v.__name__)
    return v


# one holder per function while it is being pickled: pickle's memo then sends a function that
# refers to itself (or to a function that refers back) once
_HOLDERS = weakref.WeakValueDictionary()


def _by_value(fn):
    h = _HOLDERS.get(fn)
    if h is None:
        h = _HOLDERS[fn] = _ByValue(fn)
    return h


class _Module:
    """A module, pickled by name."""
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __reduce__(self):
        return importlib.import_module, (self.name,)


class _ByValue:
    """A Python function pickled by value (see the module's docstring)."""
    __slots__ = ("fn", "__weakref__")

    def __init__(self, fn):
        self.fn = fn

    def __reduce__(self):
        fn = self.fn
        code = fn.__code__
        filename, text, flags = defining_text(fn)
        found = _codes(filename, text, flags, code)
        qual = getattr(code, "co_qualname", None)
        # (not equal: a test module pytest compiled with its asserts rewritten)
        index = found.index(code) if code in found else \
            next((i for i, c in enumerate(found) if getattr(c, "co_qualname", None) == qual), 0)
        names = set()
        _names(code, names)
        glb = {n: _value(fn, n, fn.__globals__[n], "the global")
               for n in sorted(names) if n in fn.__globals__}
        cells = []
        for n, c in zip(code.co_freevars, fn.__closure__ or ()):
            try:
                v = c.cell_contents
            except ValueError:
                v = _Empty
            cells.append(v if v is _Empty else _value(fn, n, v, "the captured variable"))
        extra = {k: v for k, v in fn.__dict__.items() if k != "__wrapped__"}
        state = (glb, cells, fn.__defaults__, fn.__kwdefaults__, extra)
        args = (filename, text, flags, code.co_name, code.co_firstlineno, index,
                fn.__qualname__, fn.__module__)
        return _rebuild, args, state, None, None, _fill


def _names(code, out):
    out.update(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            _names(c, out)


_PLAIN = (int, float, complex, str, bytes, bool, type(None))


def _value(fn, name, v, what):
    """A global or captured value of ``fn`` as pickled; a clear error for one pickle cannot send."""
    p = portable(v)
    if p is not v or isinstance(v, _PLAIN) or type(v).__module__ == "numpy" or \
            getattr(v, "dtype", None) is not None and getattr(v, "dtype").kind != "O":
        return p
    try:
        pickle.dumps(v, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as e:
        try:
            import cloudpickle
            cloudpickle.dumps(v)         # cloudpickle (Dask, Ray) sends more than pickle does
        except Exception:
            code = fn.__code__
            raise NotPicklableError(
                f"cannot pickle {fn.__qualname__} ({code.co_filename}:{code.co_firstlineno}) by "
                f"value: {what} {name!r} holds a {type(v).__name__}, which pickle cannot send "
                f"({type(e).__name__}: {e})",
                fix=f"pass {name} as an argument instead of capturing it, make it picklable, or "
                    f"define the function at the top of an importable module (then it is "
                    f"pickled by reference)") from None
    return v


_COMPILED = {}


def _codes(filename, text, flags, code):
    """The code objects named and placed like ``code`` in ``text`` compiled under ``filename``."""
    key = (filename, text, flags)
    found = _COMPILED.get(key)
    if found is None:
        found = {}
        todo = [compile(text, filename, "exec", flags=flags, dont_inherit=True)]
        while todo:
            c = todo.pop()
            found.setdefault((c.co_name, c.co_firstlineno), []).append(c)
            todo.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
        if len(_COMPILED) >= 64:
            _COMPILED.clear()
        _COMPILED[key] = found
    return found.get((code.co_name, code.co_firstlineno) if isinstance(code, types.CodeType)
                     else code, [])


def _register(filename, text):
    """The file name to compile ``text`` under here: ``filename`` with ``text`` put in
    ``linecache`` (where this process has no other text under that name), else a name of its
    own."""
    lines = text.splitlines(True)
    have = linecache.cache.get(filename)
    if have is not None and len(have) > 2 and "".join(have[2]) == text:
        return filename
    if have is None and not os.path.exists(filename):
        linecache.cache[filename] = (len(text), None, lines, filename)
        return filename
    import hashlib
    digest = hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    name = f"<pickled {filename} #{digest}>"
    linecache.cache[name] = (len(text), None, lines, name)
    return name


def _rebuild(filename, text, flags, name, firstlineno, index, qualname, module):
    """The function (its globals and cells still empty: :func:`_fill`)."""
    filename = _register(filename, text)
    code = _codes(filename, text, flags, (name, firstlineno))[index]
    glb = {"__builtins__": builtins, "__name__": module}
    closure = tuple(types.CellType() for _ in code.co_freevars)
    fn = types.FunctionType(code, glb, name, None, closure or None)
    fn.__qualname__ = qualname
    fn.__module__ = module
    return fn


def _fill(fn, state):
    glb, cells, defaults, kwdefaults, extra = state
    fn.__globals__.update(glb)
    for c, v in zip(fn.__closure__ or (), cells):
        if v is not _Empty:
            c.cell_contents = v
    fn.__defaults__ = defaults
    fn.__kwdefaults__ = kwdefaults
    fn.__dict__.update(extra)
