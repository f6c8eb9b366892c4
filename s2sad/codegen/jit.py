"""``jit=True``: a derivative compiled with ``numba.njit``.

``build_reverse(..., jit=True)`` writes the forward and the reverse sweep as one function,
``f__vjp(*params, seed) -> (value, gradients)``, in which the tape never leaves the function (numba
keeps its lists native), every adjoint has one type (a zero adjoint is ``0.0`` for a float and
zeros for an array), and ``_rt``/``_adj`` are numba versions of the helpers
(``runtime/jit.py``, ``rules/jit.py``).  :class:`CompiledDerivative` compiles it, per argument
types (numba's own dispatch).  ``build_forward(..., jit=True)`` writes forward mode's
``f__jvp(*params, *tangents) -> (value, tangent)`` the same way (its ``_fw`` helpers:
``runtime/jit_forward.py``), compiled by the same class (:meth:`CompiledDerivative.call`).

What numba cannot compile (a helper without a numba version, a Python object, a derived callee)
falls back to the Python derivative: :meth:`CompiledDerivative.run` returns ``None`` and warns
once, naming the user's file:line and the construct.  Nothing else changes: the Python derivative
computes the same numbers.
"""
import contextlib
import os
import re
import time
import warnings

from ..errors import JitFallbackWarning

_NUMBA_ERRORS = None


def _numba_errors():
    global _NUMBA_ERRORS
    if _NUMBA_ERRORS is None:
        from numba.core.errors import NumbaError
        _NUMBA_ERRORS = (NumbaError, NotImplementedError)
    return _NUMBA_ERRORS


# compile options a user may pass (those of numba.njit that keep nopython semantics)
_OPTIONS = {"fastmath", "cache", "boundscheck", "error_model", "nogil", "parallel", "inline",
            "no_cpython_wrapper", "no_cfunc_wrapper", "forceinline", "looplift"}


@contextlib.contextmanager
def _opt_level(ready, args):
    """While numba compiles a derivative that takes an array of 3 or more dims: LLVM's
    optimisation level 2 instead of numba's default 3.  At 3, LLVM's non-trivial loop unswitching
    versions numba's broadcasting loops (a shape-1 test per axis and operand) exponentially: one
    `x - mu` of shapes (4, 3, 5, 5) and (1, 3, 1, 1) compiles in 12.5 s, 0.74 at level 2; a
    batch-norm gradient 175 s against ~11 (dev machine). At 2 the run time of the 13 ratio.py
    cases is the same within noise (their arrays have 1 or 2 dims, and keep level 3).  A level
    the user chose (NUMBA_OPT other than 3) is kept.  (numba reads the level from its config
    as it builds each pass pipeline; another thread compiling in the same moments sees it too.)"""
    from numba.core import config
    opt = config.OPT
    if ready or opt != 3 or getattr(opt, "is_opt_max", False) or \
            not any(getattr(a, "ndim", 0) >= 3 for a in args):
        yield
        return
    config.OPT = type(opt)(2)
    try:
        yield
    finally:
        config.OPT = opt


def njit():
    """``numba.njit``, or the error naming the extra that installs it."""
    try:
        import numba
    except ImportError as e:
        from ..errors import MissingExtraError
        raise MissingExtraError.of(e, "jit=True compiles derivatives with numba", "jit",
                                   "numba") from None
    return numba.njit


def module_arrays(fn):
    """The module-level NumPy arrays the IR function ``fn`` reads (its own and those of callees
    inlined into it), by name.  numba compiles a global array's values into the machine code,
    so a change made in place after the first call (``W[0] = 10.0``) would not be seen; the jit
    derivative takes them as parameters instead, passed in at each call (rebinding the name
    builds a new derivative, as in Python mode: Derivative.fresh)."""
    _, refs = getattr(fn, "global_refs", (None, ()))
    params = set(fn.params)
    return tuple(sorted({n for n, v in refs if _holds_array(v, tuple) and n not in params}))


def _holds_array(v, containers):
    """``v`` is a NumPy array, or a container of one of the types ``containers`` (nested) that
    holds one."""
    import numpy as np
    if type(v) is np.ndarray:
        return True
    return isinstance(v, containers) and any(_holds_array(x, containers) for x in v)


def frozen_reads(py, namespace):
    """(what, generated line) of the first read in the generated function ``py`` of an array
    numba would compile in as a constant and that :func:`module_arrays` does not pass in: an
    attribute of a module (``cfg.W``), or a module-level list that holds arrays; else None.
    (A change made in place after the first call would not be seen.)"""
    import dis
    import types
    code = getattr(py, "__code__", None)
    if code is None:
        return None
    value, path, line = None, None, None
    for ins in dis.get_instructions(code):
        if ins.positions is not None and ins.positions.lineno is not None:
            if ins.opname == "LOAD_GLOBAL":
                line = ins.positions.lineno
        if ins.opname == "LOAD_GLOBAL":
            name = ins.argval
            value = namespace.get(name)
            path = name
            if isinstance(value, list) and _holds_array(value, (list, tuple)):
                return f"the module-level list {name}, which holds arrays", line
            if not isinstance(value, types.ModuleType):
                value = None
            continue
        if ins.opname == "LOAD_ATTR" and value is not None:
            value = getattr(value, ins.argval, None)
            path = f"{path}.{ins.argval}"
            if _holds_array(value, (list, tuple)):
                return f"the module attribute {path}, an array (or a container of arrays)", line
            if not isinstance(value, types.ModuleType):
                value = None
            continue
        value = None
    return None


# ndarray methods that numba compiles without arguments only, or not at all (``trace``), while it
# compiles (with rules/jit_reductions' versions) the NumPy function of the same name with them
_AS_FUNCTION = frozenset({"max", "min", "sum", "mean", "prod", "var", "std", "trace", "cumsum",
                          "cumprod", "argmax", "argmin", "all", "any"})


def methods_as_functions(fn, kinds):
    """Mark the method calls of ``fn`` on arrays that numba would not compile as written but
    compiles as NumPy's function (``x.max(axis=1)``, ``A.trace()``): their text is
    ``_np.max(x, axis=1)`` (``call.extra["as_function"]``; NumPy's method takes its function's
    arguments after the array, and ``_np`` is NumPy, its reductions bound to their numba
    versions).  Only for ``jit=True``: Python mode calls the method the user wrote."""
    from .. import ir
    for s in ir.walk(fn.body):
        call = s.value if isinstance(s, ir.Assign) else s.call if isinstance(s, ir.ExprStmt) \
            else None
        if isinstance(call, ir.Call) and isinstance(call.fn, ir.Method) and \
                call.fn.name in _AS_FUNCTION and call.args and isinstance(call.args[0], str) and \
                kinds.get(call.args[0]) == "a" and \
                (len(call.args) > 1 or call.kwargs or call.fn.name == "trace"):
            call.extra["as_function"] = call.fn.name


def template_methods_as_functions(tree, names):
    """A rule template's tree (``jit=True``) with its method calls of :data:`_AS_FUNCTION` on one
    of ``names`` (the template's parameters: arrays, never modules) written as NumPy's function:
    ``t.trace(offset, axis1, axis2)`` -> ``_np.trace(t, offset, axis1, axis2)``."""
    import ast
    import copy

    class _Rewrite(ast.NodeTransformer):
        def visit_Call(self, node):
            self.generic_visit(node)
            f = node.func
            if isinstance(f, ast.Attribute) and f.attr in _AS_FUNCTION and \
                    isinstance(f.value, ast.Name) and f.value.id in names:
                node.func = ast.Attribute(ast.Name("_np", ast.Load()), f.attr, ast.Load())
                node.args = [f.value] + node.args
            return node

    return ast.fix_missing_locations(_Rewrite().visit(copy.deepcopy(tree)))


def bind_namespace(fn, namespace, forward=False, arrays=()):
    """Make a generated module's namespace (``namespace``, for the IR function ``fn``) the one
    ``numba.njit`` compiles against: ``_rt``, ``_adj`` (and, for forward mode, ``_fw``) are the
    numba helpers, SciPy callees their numba versions (rules/jit_substitutes.py), and a run-time
    check's site (an Origin, which numba cannot type) an int.  Returns (a copy of the namespace
    as it was before, what :func:`rebind` needs to bind that copy the same way): what the disk
    cache records, the derivative's ``jit_binding``."""
    njit()                              # (numba installed, or the error naming the extra)
    from ..rules import jit_substitutes
    unbound = dict(namespace)
    _bind_helpers(namespace, forward)
    texts = jit_substitutes.bind(fn, namespace)
    binding = {"forward": bool(forward), "texts": texts, "arrays": list(arrays)}
    python = _numpy_aliasing(fn) or _scalar_isinstance(fn)
    if python is not None:
        binding["python"] = python
    return unbound, binding


def _numpy_aliasing(fn):
    """[why, the user's line] when ``fn`` binds a name to a call that returns its operand itself
    only at times (frontend.analysis.returned_operand: ``a.conj()`` of a real array, ``np.diag`` of
    a matrix, ``a.astype(t, copy=False)``...) and that object is changed in place: NumPy's result
    is then the operand, which sees the change, and numba's version of the call a copy, which does
    not; the compiled derivative would differ from the function.  It runs as Python (which checks
    the sharing when it runs: classify.writes)."""
    import numpy as np
    from .. import ir
    from ..frontend.analysis import returned_operand, written_arrays
    written = None
    for s in ir.walk(fn.body):
        if not isinstance(s, ir.Assign) or returned_operand(s.value) is None or \
                isinstance(s.value.fn, ir.Static) and s.value.fn.obj in (np.real, np.imag):
            continue                    # (numba's np.real and np.imag return views, as NumPy's)
        if written is None:
            written = written_arrays(fn)
        if s.target in written:
            src = s.value.args[0]
            text = s.origin.text.strip() if s.origin is not None and s.origin.text else "this call"
            line = s.origin.line if s.origin is not None else None
            return [f"`{text}` may return `{src}` itself (as NumPy does when nothing needs "
                    f"converting), and that array is changed in place; numba's version makes a "
                    f"copy, which would not see the change", line]
    return None


def _scalar_isinstance(fn):
    """[why, the user's line] when ``fn`` tests ``isinstance(v, C)`` against a number class C
    (:func:`scalar_isinstance_site`): numba answers from its own types, not Python's, so the
    compiled derivative could take the other branch.  It runs as Python."""
    from ..frontend.analysis import scalar_isinstance_site
    s = scalar_isinstance_site(fn)
    if s is None:
        return None
    text = s.origin.text.strip() if s.origin is not None and s.origin.text else "isinstance"
    line = s.origin.line if s.origin is not None else None
    return [f"`{text}` tests a value against a number class, which numba decides by its own "
            f"types (a bool is no int to it, a NumPy int64 or float32 is an int or a float)", line]


def rebind(namespace, binding):
    """:func:`bind_namespace` again, from what it returned, without the IR function (a derivative
    read from the disk cache); raises ValueError where a callee has no numba version now."""
    njit()
    from ..rules import jit_substitutes
    _bind_helpers(namespace, binding["forward"])
    jit_substitutes.rebind(namespace, binding["texts"])


def _bind_helpers(namespace, forward):
    import numpy as np
    from .. import ir
    from ..rules import jit as _jit_adj
    from ..runtime import jit as _jit_rt
    namespace["_rt"] = _jit_rt.namespace()
    namespace["_np"] = np               # (methods written as functions: methods_as_functions)
    for k, v in list(namespace.items()):
        if isinstance(v, ir.Origin):
            namespace[k] = 0            # (a check's site: numba cannot type it; the check
            #                              defers to the Python derivative for the message)
    namespace["_adj"] = _jit_adj.namespace()
    if forward:
        from ..runtime import jit_forward
        namespace["_fw"] = jit_forward.namespace()


class CompiledDerivative:
    """The numba-compiled fused sweeps of one derivative (``d``: its Derivative, whose module holds
    ``f__vjp``), or, after a failure, the record of why it runs as Python."""

    def __init__(self, d, options=None):
        self.d = d
        self.options = {k: v for k, v in (options or {}).items() if k in _OPTIONS}
        self.py = d.fwd                        # the fused function, as Python
        self.failed = None                     # why it runs as Python (a message), once known
        self.compile_time = 0.0                # seconds numba spent, all signatures together
        self._dispatcher = None
        self._refused = set()                  # argument types this one has warned about
        self._checked = False                  # frozen_reads looked at
        # dict and list parameters passed as tuples (containers_as_tuples): [[index, keys or
        # None], ...], and per gradient the keys (or None) to make it a dict (or list) again
        binding = getattr(d, "jit_binding", None)
        self._tuples = binding[1].get("tuples") if binding is not None else None
        if self._tuples:
            keys = {i: k for i, k in self._tuples}
            params = d.ir.params
            self._outs = tuple(keys.get(params.index(w), _KEEP) for w in d.wrt)

    @property
    def source(self):
        return self.d.source

    def fresh(self):
        return self.d.fresh()

    def __getattr__(self, name):
        # what the Python derivative tells (ir, sites, wrt, module: explain(), source maps)
        if name.startswith("__") or name == "d":
            raise AttributeError(name)
        return getattr(self.d, name)

    def dispatcher(self):
        if self._dispatcher is None:
            options = dict(self.options)
            # numba's cache needs the module's real file: the disk cache's entry (numba writes
            # the machine code beside it, in __pycache__); a derivative built in memory only
            # (S2SAD_CACHE=0, a function without a disk key) compiles in each process
            if self.d.cache_path is None or not os.path.exists(self.d.cache_path):
                options.pop("cache", None)
            else:
                options.setdefault("cache", True)
            self._dispatcher = njit()(**options)(self.py)
        return self._dispatcher

    def run(self, args, seed):
        """``(value, gradients)`` from the compiled function, or ``None`` when it cannot be
        compiled for these arguments (then it has warned, and the caller runs Python)."""
        out = self.call(args, (seed,))
        return out if out is None else self._containers_out(out)

    def quick(self, args):
        """:meth:`run` with the seed 1.0, without its checks: the per-signature shortcut
        (api._vg), for arguments of the types of an earlier call that compiled and ran; None
        where a check in the compiled code refused (then the full path runs)."""
        if self._tuples:
            args = _containers_in(args, self._tuples)
        try:
            out = self.dispatcher()(*args, 1.0, *self.arrays_now())
        except ValueError as e:
            from ..runtime.jit import REFUSED
            if REFUSED in str(e):
                return None                 # (a run-time check refused: the full path's turn)
            raise
        return self._containers_out(out)

    def _captured(self, i):
        """The name of the closure variable the compiled function's parameter ``i`` holds (the
        data a closure captured is passed first), or None for one of the function's own."""
        code = self.py.__code__
        name = code.co_varnames[i] if i < code.co_argcount else None
        user = getattr(getattr(self.d, "ir", None), "pyfunc", None)
        ucode = getattr(user, "__code__", None)
        if name is None or ucode is None or name not in ucode.co_freevars:
            return None
        return name

    def _containers_out(self, out):
        """``(value, gradients)`` with the adjoint of each dict or list parameter passed as a tuple
        (:func:`containers_as_tuples`) as a dict or a list again."""
        if not self._tuples:
            return out
        value, grads = out
        return value, tuple(g if k is _KEEP else _container_like(k, g)
                            for k, g in zip(self._outs, grads))

    def call(self, args, extra=()):
        """The compiled function of ``*args, *extra`` (a forward-mode derivative's: primals and
        tangents, ``(value, tangent)``), or ``None`` as :meth:`run`; ``args`` are checked for
        types the compiled mode takes."""
        if self.failed is not None:
            return None
        binding = getattr(self.d, "jit_binding", None)
        python = binding[1].get("python") if binding is not None else None
        if python is not None:
            why, user_line = python
            self.fail(why, next((k for k, o in sorted(self.d.module.line_origins.items())
                                 if o is not None and o.line == user_line), None))
            return None
        if not self._checked:
            self._checked = True
            frozen = frozen_reads(self.py, self.py.__globals__)
            if frozen is not None:
                what, line = frozen
                self.fail(f"it reads {what}, which numba would compile in as constants (a change "
                          f"made in place later would not be seen); pass it as an argument",
                          line)
                return None
        args = _drop_statics(self.py, args)
        if self._tuples:
            args = _containers_in(args, self._tuples)
        bad = _untypeable(args)
        if bad is not None:
            # these arguments run as Python; others of the same type class (float64 where this
            # call had float32: the cache's types do not tell dtypes apart) still compile
            if bad not in self._refused:
                self._refused.add(bad)
                i, _, what = bad.partition(" ")
                cell = self._captured(int(i))
                where = f"argument {bad}" if cell is None else \
                    f"the variable `{cell}` the function captured {what}"
                self._warn(f"{where}: the compiled mode takes floats, integers, NumPy "
                           f"arrays of float64, complex128, int64/int32 or bool, and tuples of "
                           f"them (dicts and lists of them too, where the function only reads "
                           f"their items)", None)
            return None
        arrays = binding[1].get("arrays") if binding is not None else None
        if arrays:
            extra = tuple(extra) + self.arrays_now()
            for name, v in zip(arrays, extra[-len(arrays):]):
                bad = _untypeable(_flat(v))
                if bad is not None:
                    self.fail(f"the module-level {name} holds {bad.split(' is ', 1)[1]}; the "
                              f"compiled mode takes arrays of float64, complex128, int64/int32 "
                              f"or bool", None)
                    return None
        disp = self.dispatcher()
        n = len(disp.overloads)
        ready = n > 0 and _compiled_for(disp, (*args, *extra))   # (an error of its run, then)
        t0 = time.perf_counter()
        try:
            with warnings.catch_warnings():
                # numba declines to cache some code (one holding an address, as unoptimised code
                # may): then it compiles in each process, which is no reason to warn the user
                warnings.filterwarnings("ignore", message=".*Cannot cache compiled function")
                with _opt_level(ready, (*args, *extra)):
                    out = disp(*args, *extra)
        except _numba_errors() as e:
            self.fail(_first_line(e), _generated_line(e, self.d.module.filename))
            return None
        except AttributeError as e:
            from ..runtime.jit import MISSING
            if MISSING not in str(e):
                raise
            name = str(e).split(MISSING)[1].strip()
            self.fail(f"{name} has no compiled version yet", self._line_of(name + "("))
            return None
        except ValueError as e:
            from ..runtime.jit import REFUSED, SHAPE_ERROR
            if REFUSED in str(e):
                return None                 # (the Python derivative checks again, and refuses)
            if SHAPE_ERROR in str(e):
                self.fail("an array changed shape between iterations, which a compiled "
                          "adjoint cannot follow", None)
                return None
            if ready or len(disp.overloads) > n:
                raise                       # (compiled, then the user's code raised)
            self.fail(f"numba failed while compiling ({type(e).__name__}: {e})", None)
            return None
        except Exception as e:
            if ready or len(disp.overloads) > n or isinstance(e, (KeyboardInterrupt,)):
                raise                       # (compiled, then the user's code raised)
            # numba itself failed while typing or lowering (an AssertionError, a TypeError...)
            self.fail(f"numba failed while compiling ({type(e).__name__}: {_first_line(e)})",
                      _generated_line(e, self.d.module.filename))
            return None
        if len(disp.overloads) > n:
            self.compile_time += time.perf_counter() - t0
        return out

    def arrays_now(self):
        """The module-level arrays the compiled function takes after its other parameters
        (:func:`module_arrays`), as the module holds them now (the objects the derivative was
        built with: a rebound name makes it stale, Derivative.fresh); () for most functions."""
        binding = getattr(self.d, "jit_binding", None)
        names = binding[1].get("arrays") if binding is not None else None
        if not names:
            return ()
        unbound = binding[0]
        glb = getattr(self.d.ir, "global_refs", (None, ()))[0]
        if glb is None:
            glb = unbound
        return tuple(glb[n] if n in glb else unbound[n] for n in names)

    def _line_of(self, text):
        for i, ln in enumerate(self.d.source.splitlines(), 1):
            if text in ln.split("#")[0]:
                return i
        return None

    def fail(self, why, line):
        """Fall back to Python for good, with one warning naming the user's line."""
        self.failed = why
        self._warn(why, line, 5)

    def _warn(self, why, line, stacklevel=4):
        origin = self.d.module.line_origins.get(line) if line else None
        where = self.d.ir.origin if origin is None else origin
        text = ""
        if line:
            gen = self.d.source.splitlines()[line - 1].split("#")[0].strip()
            text = f" (generated line: `{gen}`)"
        warnings.warn(
            f"{where.short()}: jit=True could not compile the derivative of "
            f"{self.d.ir.name} here: {why}{text}\n    {where.text}\n"
            f"It runs as Python (the same numbers, without the speed).",
            JitFallbackWarning, stacklevel=stacklevel)


# dtypes whose arithmetic numba promotes as NumPy 2 does (a Python float times a float32 array is
# float64 under numba, float32 under NumPy): other dtypes run as Python, so the numbers and dtypes
# are NumPy's
_DTYPES = {"float64", "complex128", "int64", "int32", "bool"}


def _unread_params(py):
    """The parameters of the generated function that its code never reads (cached on it)."""
    code = getattr(py, "__code__", None)
    if code is None:
        return frozenset()
    unread = py.__dict__.get("_s2sad_unread")
    if unread is None:
        import dis
        params = code.co_varnames[:code.co_argcount]
        read = set(code.co_cellvars)           # (a parameter a nested function reads)
        for ins in dis.get_instructions(code):
            if ins.opname.startswith("LOAD_FAST") or ins.opname in ("LOAD_CLOSURE", "DELETE_FAST"):
                v = ins.argval
                read.update(v if isinstance(v, tuple) else (v,))
        unread = py._s2sad_unread = frozenset(i for i, p in enumerate(params) if p not in read)
    return unread


def _drop_statics(py, args):
    """``args`` with each module or function the derivative was specialised on (frontend/statics:
    its reads are constants, so the generated code never reads the parameter) replaced by 0, a
    value numba types: the derivative does not depend on it."""
    from ..runtime.values import static_value
    unread = _unread_params(py)
    if not unread or not any(i in unread and static_value(a) for i, a in enumerate(args)):
        return args
    return tuple(0 if i in unread and static_value(a) else a for i, a in enumerate(args))


def _flat(v):
    """The leaves of a (nested) tuple, as a tuple; ``(v,)`` for anything else."""
    if type(v) is not tuple:
        return (v,)
    return tuple(x for e in v for x in _flat(e))


def arg_type(a):
    """The type a compiled derivative is specialised on (runtime.values.type_of); for a dict of
    up to 32 values under string keys (``params["W"]``) ``("K", keys, the type of the tuple of its
    values)``, for a list of up to 32 items ``("Q", the type of the tuple of its items)``:
    :func:`containers_as_tuples` makes such a parameter a tuple."""
    from ..runtime.values import type_of
    # (type_of bounds the tuple's length: None for an empty or a longer one)
    if type(a) is dict and all(type(k) is str for k in a):
        t = type_of(tuple(a.values()))
        return ("K", tuple(a), t) if t is not None else None
    if type(a) is list:
        t = type_of(tuple(a))
        return ("Q", t) if t is not None else None
    return type_of(a)


def containers_as_tuples(fn, param_types):
    """Make each dict parameter (typed ``("K", keys, t)``, see :func:`arg_type`) a tuple of its
    values in the order of ``keys`` where ``fn`` only reads items of it under constant keys
    (``p["W"]``, rewritten ``p[0]``), and each list parameter (``("Q", t)``) a tuple of its
    items where ``fn`` only reads it (``ws[i]``, ``len(ws)``, ``for w in ws``, ``zip``): numba
    takes tuples, not dicts of values of several types, and a tuple of arrays faster than a list.
    Returns (the types, the tuple's type ``t`` for those made tuples, None for the other dicts
    and lists; and ``[[index, keys or None], ...]`` of those, which
    :meth:`CompiledDerivative.call` converts)."""
    from .. import ir
    types, made = list(param_types), []
    for i, (p, t) in enumerate(zip(fn.params, param_types)):
        if t is None or t[0] not in "KQ":
            continue
        keys = t[1] if t[0] == "K" else None
        reads = _reads_only(fn, p, keys)
        if reads is None:
            types[i] = None             # (any other use: it stays, and runs as Python)
            continue
        for v in reads:
            v.args[1] = ir.Index([ir.Const(keys.index(v.args[1].parts[0].value))], False)
        types[i] = t[-1]
        made.append([i, list(keys) if keys is not None else None])
    return types, made


def containers_for_numba(fn, param_types):
    """In place, before classification: the dict displays and the dict and list parameters
    (``param_types`` None: none) that ``fn`` only reads become tuples
    (:func:`dict_displays_as_tuples`, :func:`containers_as_tuples`).  Returns
    :func:`containers_as_tuples`'s (types, made), (None, None) without ``param_types``."""
    dict_displays_as_tuples(fn)
    if param_types is None:
        return None, None
    return containers_as_tuples(fn, param_types)


def dict_displays_as_tuples(fn):
    """In place: each dict display under constant string keys (``p = {"W": W, "b": b}``, lowered
    to ``build_dict``) bound to a name that nothing else binds and that is only read as
    ``p["W"]`` becomes a tuple of its values, read as ``p[0]``: numba has no dict of values of
    several types.  (Others stay dicts, and the derivative runs as Python, with the warning.)"""
    from .. import ir, runtime
    binds = {}
    for st in ir.walk(fn.body):
        t = getattr(st, "target", None)
        if isinstance(t, str):
            binds.setdefault(t, []).append(st)
    for p, sts in binds.items():
        st = sts[0]
        v = getattr(st, "value", None)
        if len(sts) != 1 or p in fn.params or not isinstance(st, ir.Assign) or \
                not isinstance(v, ir.Call) or not isinstance(v.fn, ir.Static) or \
                v.fn.obj is not runtime.build_dict or v.kwargs or not v.args or \
                not isinstance(v.args[0], ir.Const) or type(v.args[0].value) is not tuple:
            continue
        keys = list(v.args[0].value)
        if not keys or len(set(keys)) != len(keys) or any(type(k) is not str for k in keys) or \
                len(v.args) != len(keys) + 1:
            continue
        reads = _reads_only(fn, p, keys, st)
        if reads is None:
            continue
        for r in reads:
            r.args[1] = ir.Index([ir.Const(keys.index(r.args[1].parts[0].value))], False)
        st.value = ir.Call(ir.Static(runtime.build_tuple, "build_tuple"), v.args[1:])


def _reads_only(fn, p, keys, binding=None):
    """The subscripts of parameter ``p`` under constant keys among ``keys`` (a dict's), or, with
    ``keys`` None (a list's), [] where every use of ``p`` reads it (a subscript, ``len``, a loop
    over it); None where ``p`` is used otherwise or bound again (by a statement other than
    ``binding``, a local dict's display)."""
    import operator
    from .. import ir, runtime
    walks = (runtime.seq, runtime.loop_seq, runtime.zip_seq, runtime.loop_zip_seq, runtime.here,
             len)
    found = []
    for st in ir.walk(fn.body):
        if st is binding or p not in st.reads() and getattr(st, "target", None) != p:
            continue
        v = getattr(st, "value", None)
        if not (isinstance(st, ir.Assign) and st.target != p and isinstance(v, ir.Call) and
                isinstance(v.fn, ir.Static) and not v.kwargs and p not in
                v.extra.get("captured", ())):
            return None
        obj = v.fn.obj
        if obj is operator.getitem and len(v.args) == 2 and v.args[0] == p and \
                p not in ir.operand_vars(v.args[1]):
            if keys is None:
                continue
            k = v.args[1]
            if isinstance(k, ir.Index) and not k.is_tuple and len(k.parts) == 1 and \
                    isinstance(k.parts[0], ir.Const) and k.parts[0].value in keys:
                found.append(v)
                continue
            return None
        if keys is None and any(obj is w for w in walks) and p in v.args:
            continue
        return None
    return found


_KEEP = object()        # (a gradient CompiledDerivative._containers_out leaves as it is)


def _container_like(keys, g):
    """The adjoint ``g`` of a dict (``keys``) or a list (``keys`` None) passed as a tuple."""
    if type(g) is not tuple:
        return g
    return list(g) if keys is None else dict(zip(keys, g))


def _containers_in(args, made):
    """``args`` with each dict or list argument that :func:`containers_as_tuples` made a tuple
    passed as the tuple of its values (a dict's keys the same, in the same order; else it stays,
    and runs as Python)."""
    out = list(args)
    for i, keys in made:
        a = out[i] if i < len(out) else None
        if keys is None and type(a) is list:
            out[i] = tuple(a)
        elif keys is not None and type(a) is dict and list(a) == list(keys):
            out[i] = tuple(a.values())
    return tuple(out)


def _untypeable(args):
    import numpy as np
    for i, a in enumerate(args):
        t = type(a)
        if t in (float, int, bool, complex):
            continue
        if isinstance(a, np.generic) and a.dtype.name in _DTYPES:
            continue
        if t is np.ndarray and a.dtype.name in _DTYPES:
            continue
        if t is tuple and a:
            inner = _untypeable(a)
            if inner is None:
                continue            # (numba passes a tuple of those as it is)
            return f"{i} is a tuple whose item {inner}"
        # (an array's dtype is a np.dtype: the module numpy has a .dtype too, the class)
        if isinstance(getattr(a, "dtype", None), np.dtype):
            what = f"an array of dtype {a.dtype}"
        elif isinstance(a, type(np)):
            what = f"the module {a.__name__}"
        else:
            what = t.__name__
        return f"{i} is {what}"
    return None


def _compiled_for(disp, args):
    """Whether numba's dispatcher ``disp`` holds machine code for these arguments' types: an
    exception of a call it then makes is the user's code raising, not numba failing to
    compile (which would send the derivative to Python for good)."""
    try:
        return tuple(disp.typeof_pyval(a) for a in args) in disp.overloads
    except Exception:
        return False


def _first_line(e):
    msg = str(e).strip()
    for ln in msg.splitlines():
        ln = ln.strip()
        if ln and not ln.startswith(("During:", "File ", "- ", "^")):
            return ln[:300]
    return type(e).__name__


def _generated_line(e, filename):
    """The generated line numba's message points at (the last one it names), or None."""
    # (numba names a real file, a disk cache entry's, by a path relative to the working folder)
    base = os.path.basename(filename) if os.path.isabs(filename) else filename
    pat = r'File "(?:[^"]*[/\\])?' + re.escape(f'{base}", line ') + r"(\d+)"
    hits = re.findall(pat, str(e))
    return int(hits[-1]) if hits else None
