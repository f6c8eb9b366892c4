"""The compiled-derivative cache.

A derivative is built once per (function code, closure cells, mode, wrt mask, value kinds of the
arguments) and reused: :func:`reverse_derivative` and :func:`forward_derivative` ask the cache and
call the builders (``codegen/build.py``, ``codegen/build_forward.py``) on a miss. The cache sits
above the code generator, which does not import it. Concurrent first calls from several threads
build it once: the first thread builds while the others wait on a per-key lock and then share the
result.
"""
import threading
import time

from . import logs as _logs
from .runtime import heap as _heap


class DerivativeCache:
    def __init__(self):
        self._store = {}
        self._locks = {}
        self._guard = threading.Lock()
        self.builds = 0            # how many derivatives were built (tests read this)
        self.generation = 0        # bumped by clear(): memos outside the cache start over

    def key(self, pyfunc, mode, mask, kinds):
        """(code, the closure cells read as constants, globals, mode, wrt mask, value kinds).

        Data held in closure cells is passed to the sweeps as leading parameters (its kinds are in
        ``kinds``), so a closure over new data reuses the derivative."""
        return (pyfunc.__code__, static_cells_key(pyfunc), id(pyfunc.__globals__), mode,
                tuple(mask), tuple(kinds))

    def get(self, key, build):
        d = self._store.get(key)
        if d is not None:
            if _logs.debugging():
                _log_key("cache hit", key)
            return d
        with self._guard:
            # an RLock: a build that needed its own key again (on the same thread) would fail
            # with RecursionError instead of hanging
            lock = self._locks.setdefault(key, threading.RLock())
            generation = self.generation
        with lock:
            d = self._store.get(key)
            if d is None:
                from .frontend.source import build_scope
                _heap.settle()                # (once per process: runtime/heap.py)
                debug = _logs.debugging()
                if debug:
                    _log_key("cache miss, building", key)
                    t0 = time.perf_counter()
                with build_scope():           # room for deeply nested expressions, if needed
                    d = build()               # an error propagates; a waiting thread retries
                if debug:
                    _logs.log.debug("built %s in %.1f ms; its call sites:",
                                    _logs.label(key[0]), 1e3 * (time.perf_counter() - t0))
                    _logs.sites(d)
                with self._guard:
                    if self.generation == generation:   # not cleared while building
                        self._store[key] = d
                    self.builds += 1
            elif _logs.debugging():
                _log_key("cache hit (built by another thread)", key)
        with self._guard:
            # published: later callers find it in _store; threads already waiting on this lock
            # still hold it and find it there too
            if self._locks.get(key) is lock and key in self._store:
                del self._locks[key]
        return d

    def discard(self, key, d):
        """Forget a derivative whose module globals changed since it was built."""
        with self._guard:
            if self._store.get(key) is d:
                del self._store[key]

    def clear(self):
        with self._guard:
            self._store.clear()
            self._locks.clear()
            self.generation += 1

    def __len__(self):
        return len(self._store)


def _log_key(what, key):
    code, _, _, mode, mask, kinds = key
    types = None
    if isinstance(mode, tuple):            # (mode, types) / ("reverse-jit", options, types)
        mode, types = mode[0], mode[-1]
    _logs.log.debug("%s: %s derivative of %s, wrt mask %s, kinds %s%s", what, mode,
                    _logs.label(code), "".join("1" if m else "0" for m in mask),
                    ",".join(map(str, kinds)), "" if types is None else f", types {types}")


_WRITTEN_CELLS = {}


def _written_cells(code):
    """Closure variables the code writes (``nonlocal x; x = ...``): the derivative refers to
    those cells themselves, so it belongs to one closure instance."""
    w = _WRITTEN_CELLS.get(code)
    if w is None:
        import dis
        w = _WRITTEN_CELLS[code] = frozenset(
            i.argval for i in dis.get_instructions(code)
            if i.opname in ("STORE_DEREF", "DELETE_DEREF") and i.argval in code.co_freevars)
    return w


def static_cells_key(pyfunc):
    if not pyfunc.__closure__:
        return ()
    from .frontend.source import split_closure
    static, _ = split_closure(pyfunc)
    out = []
    written = _written_cells(pyfunc.__code__)
    if written:
        cells = dict(zip(pyfunc.__code__.co_freevars, pyfunc.__closure__))
        out.extend(("cell", n, id(cells[n]), _Holder(cells[n])) for n in sorted(written))
    for name, v in static.items():
        try:
            hash(v)
            out.append((name, v))
        except TypeError:
            out.append((name, ("id", id(v)), v.__class__))
    return tuple(out)


CACHE = DerivativeCache()


def reverse_derivative(pyfunc, mask, kinds, mode="reverse", types=None):
    """The cached reverse-mode :class:`~s2sad.codegen.build.Derivative` of ``pyfunc``.

    ``mode="init"`` differentiates an ``__init__`` as a constructor: its output is ``self``;
    ``mode="mut"`` a method that updates its object: its outputs are (result, ``self``).
    ``types`` (classify/types.py, one per parameter): specialised on them where given."""
    key = CACHE.key(pyfunc, mode if types is None else (mode, tuple(types)), mask, kinds)
    d = CACHE._store.get(key)
    if d is not None:
        if d.fresh():
            if _logs.debugging():
                _log_key("cache hit", key)
            return d
        CACHE.discard(key, d)
    return CACHE.get(key, lambda: _build_reverse(pyfunc, mask, kinds, mode == "init",
                                                 mode == "mut", types))


def forward_derivative(pyfunc, mask, kinds, init=False, mut=False):
    """The cached forward-mode :class:`~s2sad.codegen.build.Derivative` of ``pyfunc`` w.r.t. the
    parameters where ``mask`` is True; ``.jvp(*params, *tangents) -> (value, tangent)``.
    ``init``: an ``__init__`` differentiated as a constructor (its output is ``self``)."""
    mode = "forward-init" if init else "forward-mut" if mut else "forward"
    key = CACHE.key(pyfunc, mode, tuple(mask), tuple(kinds))
    dv = CACHE._store.get(key)
    if dv is not None:
        if dv.fresh():
            if _logs.debugging():
                _log_key("cache hit", key)
            return dv
        CACHE.discard(key, dv)
    return CACHE.get(key, lambda: _build_forward(pyfunc, tuple(mask), tuple(kinds), init, mut))


def jit_derivative(pyfunc, mask, kinds, options=(), types=None):
    """The cached :class:`~s2sad.codegen.jit.CompiledDerivative` of ``pyfunc`` (``jit=True``):
    its fused sweeps, compiled with ``numba.njit(**dict(options))`` on first use; specialised on
    the parameters' ``types`` (classify.types: kind and ndim) where given."""
    options = tuple(sorted(dict(options).items()))
    types = tuple(types) if types is not None else None
    key = CACHE.key(pyfunc, ("reverse-jit", options, types), mask, kinds)
    c = CACHE._store.get(key)
    if c is not None:
        if c.d.fresh():
            return c
        CACHE.discard(key, c)

    def build():
        from .codegen.build import build_reverse
        return build_reverse(pyfunc, mask, kinds, _namer_factory, jit=True, param_types=types)
    return CACHE.get(key, lambda: _compiled(pyfunc, "reverse-jit", mask, kinds, options, types,
                                            build))


def forward_jit_derivative(pyfunc, mask, kinds, options=(), types=None):
    """The cached :class:`~s2sad.codegen.jit.CompiledDerivative` of ``pyfunc``'s forward-mode
    derivative (``jvp(..., jit=True)``): ``f__jvp`` written for numba, compiled with
    ``numba.njit(**dict(options))`` on first use; one per argument ``types`` (classify.types)
    where given, so a fallback for one specialisation leaves the others compiled."""
    options = tuple(sorted(dict(options).items()))
    types = tuple(types) if types is not None else None
    key = CACHE.key(pyfunc, ("forward-jit", options, types), tuple(mask), tuple(kinds))
    c = CACHE._store.get(key)
    if c is not None:
        if c.d.fresh():
            return c
        CACHE.discard(key, c)

    def build():
        from .codegen.build_forward import build_forward
        return build_forward(pyfunc, tuple(mask), tuple(kinds), jit=True, param_types=types)
    return CACHE.get(key, lambda: _compiled(pyfunc, "forward-jit", tuple(mask), tuple(kinds),
                                            options, types, build))


def _compiled(pyfunc, mode, mask, kinds, options, types, build):
    """A :class:`~s2sad.codegen.jit.CompiledDerivative` of the derivative ``build()`` makes, or
    the disk cache holds: there numba caches its machine code beside the module's file
    (``cache=True``), so that another process loads it instead of compiling.  The entry's key
    holds the numba options (numba's cache index does not) and the argument types."""
    from . import diskcache
    from .codegen.jit import CompiledDerivative
    disk_mode = f"{mode}|{options!r}|{types!r}"
    d = diskcache.obtain(pyfunc, disk_mode, mask, kinds, build)
    return CompiledDerivative(d, dict(options))


def _build_forward(pyfunc, mask, kinds, init, mut):
    from . import diskcache

    def build():
        from .codegen.build_forward import build_forward
        return build_forward(pyfunc, mask, kinds, init, mut)
    mode = "forward-init" if init else "forward-mut" if mut else "forward"
    return diskcache.obtain(pyfunc, mode, mask, kinds, build)


def _build_reverse(pyfunc, mask, kinds, constructor=False, mutating=False, types=None):
    # the disk layer: a new process reads what another one built (without importing the
    # pipeline, which build() imports)
    from . import diskcache

    def build():
        from .codegen.build import build_reverse
        return build_reverse(pyfunc, mask, kinds, _namer_factory, constructor=constructor,
                             mutating=mutating, param_types=types)
    mode = "init" if constructor else "mut" if mutating else "reverse"
    if types is not None:
        mode = f"{mode}|{tuple(types)!r}"        # (the disk key: the types are part of it)
    return diskcache.obtain(pyfunc, mode, mask, kinds, build)


def _namer_factory(namespace, own_key, own_names):
    """Names derived callees inside one generated module and binds their lazy stubs."""
    from .runtime import DerivedStub
    names = {own_key: own_names}
    taken = set(namespace)

    def namer(callee, mask):
        k = (callee, tuple(mask))
        if k in names:
            return names[k]
        base = callee.__name__ if callee.__name__.isidentifier() else "f"
        fwd, bwd, n = f"{base}__fwd", f"{base}__bwd", 1
        while fwd in taken or bwd in taken or fwd in own_names or bwd in own_names:
            n += 1
            fwd, bwd = f"{base}__fwd{n}", f"{base}__bwd{n}"
        taken.update((fwd, bwd))
        stub = DerivedStub(callee, tuple(mask))
        namespace[fwd] = stub.fwd
        namespace[bwd] = stub.bwd
        names[k] = (fwd, bwd)
        return names[k]
    return namer


class _Holder:
    """Keeps a closure cell alive inside a cache key (cells are unhashable; keys use its id)."""
    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def __hash__(self):
        return id(self.obj)

    def __eq__(self, other):
        return isinstance(other, _Holder) and other.obj is self.obj


from .runtime import hooks as _hooks  # noqa: E402
_hooks.register(reverse_derivative=reverse_derivative, forward_derivative=forward_derivative,
                rules_changed=CACHE.clear)
