"""The exceptions s2sad raises.  Every one derives from :class:`S2SADError`.

Messages name the user's file and line (when there is one) and say how to fix the problem.
"""


class S2SADError(Exception):
    """Base class of every error s2sad raises on purpose."""

    def __init__(self, message, origin=None, fix=None):
        self.message = message
        self.fix = fix
        self.origin = None
        super().__init__(message)
        self.locate(origin)

    def locate(self, origin):
        """Name the user's file and line (known only later for errors raised at run time)."""
        self.origin = origin
        text = self.message
        if origin is not None:
            text = f"{origin.where()}: {text}"
            if getattr(origin, "text", None):
                text += f"\n    {origin.text.strip()}"
        if self.fix:
            text += f"\nFix: {self.fix}"
        self.args = (text,) + tuple(self.args[1:])


class UnsupportedSyntaxError(S2SADError):
    """The function uses a construct s2sad does not differentiate."""


class SourceUnavailableError(S2SADError):
    """The function has no Python source s2sad can read (built-in, C extension, REPL string)."""


class StaleSourceError(SourceUnavailableError):
    """The source s2sad can read is not the source of the code that runs (a module edited after
    it was imported, or code compiled from another string under a real file's name)."""


class OpaqueCalleeError(S2SADError):
    """A callee with no source and no rule produced a differentiable value."""


class NonScalarOutputError(S2SADError):
    """``grad`` was asked for the gradient of a value that is not a scalar."""


class WrtError(S2SADError):
    """``wrt`` names an argument that does not exist or cannot carry a derivative."""


class RuleError(S2SADError):
    """A rule was declared or used incorrectly (bad keyword on an active value, bad template)."""


class DeviceMismatchError(S2SADError):
    """A call mixes arrays on different devices (CuPy with NumPy, or two GPUs)."""


class ArgumentError(S2SADError, TypeError):
    """Arguments given to a transform do not fit the function: ``jvp`` primals or tangents not in
    a tuple, a tangent or cotangent whose shape or kind differs from its value's."""


class MissingExtraError(S2SADError, ImportError):
    """A feature needs a package of an optional extra that is not installed (``pip install
    's2sad[gpu]'``); :meth:`of` builds the message from the failed import."""

    __str__ = S2SADError.__str__            # not ImportError's (its msg: no origin, no Fix line)

    @classmethod
    def of(cls, exc, feature, extra, packages):
        """The error for ``feature`` after ``exc`` (the ImportError of a package of ``extra``)."""
        missing = getattr(exc, "name", None) or packages.split(",")[0]
        return cls(f"{feature}: {missing} is not installed ({exc})",
                   fix=f"pip install 's2sad[{extra}]' (it installs {packages})")


class NotPicklableError(S2SADError, TypeError):
    """A function s2sad pickles by value (a closure, a lambda) captures a value pickle cannot
    send."""


class ArgumentWriteError(UnsupportedSyntaxError):
    """A function writes a value that carries a derivative into one of its arguments.

    ``param`` names the argument.  (For a method writing into ``self``, s2sad differentiates the
    method with the updated object as a second output instead of raising.)"""

    def __init__(self, message, origin=None, fix=None, param=None):
        self.param = param
        super().__init__(message, origin=origin, fix=fix)


def has_kept_text(code):
    """True when Python kept the text ``code`` was compiled from although its file name is not a
    file (``<ipython-input-3-...>``, ``<python-input-0>``): ``linecache`` holds it by that name
    (IPython, Python 3.13's REPL, text a user registered) or by code object (Python 3.14+'s
    REPL).  s2sad's own generated modules are not user text."""
    import linecache
    name = code.co_filename
    if not name.startswith("<"):
        return True
    if name.startswith("<s2sad"):
        return False
    entry = linecache.cache.get(name)
    if entry is not None and len(entry) != 1:
        return True
    from_code = getattr(linecache, "_getlines_from_code", None)
    try:
        return bool(from_code is not None and from_code(code))
    except Exception:
        return False


def caller_origin():
    """The user's line that called into s2sad (the innermost frame outside the s2sad package and
    outside generated code), as an :class:`~s2sad.ir.Origin`; None when there is none."""
    import linecache
    import os
    import sys
    from .ir import Origin
    here = os.path.dirname(os.path.abspath(__file__)) + os.sep
    f = sys._getframe(1)
    while f is not None:
        name = f.f_code.co_filename
        if not (os.path.abspath(name).startswith(here) or name.startswith("<") and
                not has_kept_text(f.f_code)):      # (but an IPython cell, a REPL input)
            return Origin(name, f.f_lineno, 0, linecache.getline(name, f.f_lineno).strip(),
                          f.f_code.co_name)
        f = f.f_back
    return None


class S2SADWarning(UserWarning):
    """Base of s2sad's warnings: something ran another way than asked, with the same numbers."""


class GraphFallbackWarning(S2SADWarning):
    """``graph=True`` could not capture a step into a CUDA graph (a host synchronisation, a call
    that refuses capture); that argument specialisation runs without a graph (the same numbers).
    The message names the user's line."""


class JitFallbackWarning(UserWarning):
    """``jit=True`` could not compile a derivative with numba; it runs as Python instead (the same
    numbers).  The message names the user's line and the construct numba refused."""


#: The refusal of a second derivative (hessian, hvp, jacrev/jacfwd of grad, grad of grad) through
#: a call the first derivative resolves only at run time (transforms.hvp, classify/after_activity).
RUNTIME_CALL_SECOND_ORDER = (
    "second derivatives through a call s2sad resolves only at run time (a function defined inside "
    "the function and called there, a method of a local object, an in-place method of a deque or "
    "list such as `d.appendleft(v)` or `xs.sort()`, a function passed in as an argument) are not "
    "supported yet",
    "define the called function at module level and pass it what it reads as arguments; for an "
    "in-place method of a deque or list, build a new one instead (`d = deque([v, *d])`, "
    "`xs = sorted(xs)`); first derivatives (grad, jvp, vjp, jacobian) of this function work")


def runtime_call_second_order(callee, name):
    """:data:`RUNTIME_CALL_SECOND_ORDER` for a call whose callee is known where the second
    derivative runs (``callee``, the value of the user's variable ``name``): the message says what
    it is, and the fix names what to move to module level and what to pass it."""
    import types
    message, fix = RUNTIME_CALL_SECOND_ORDER
    fn = callee
    if isinstance(fn, types.MethodType):
        return (f"second derivatives (hessian, hvp, grad of grad) through a call of a method of a "
                f"`{type(fn.__self__).__qualname__}` object are not supported yet: s2sad resolves "
                f"the call only when the first derivative runs",
                "call a function defined at module level that takes the object's values as "
                "arguments; first derivatives (grad, jvp, vjp, jacobian) of this function work")
    if isinstance(fn, type):
        return (f"second derivatives (hessian, hvp, grad of grad) through the construction of a "
                f"`{fn.__qualname__}` object (its `__init__`) are not supported yet: s2sad "
                f"resolves the call only when the first derivative runs",
                f"compute with module-level functions that take the values as arguments instead "
                f"of keeping them on a `{fn.__qualname__}` object; first derivatives (grad, jvp, "
                f"vjp, jacobian) of this function work")
    if not isinstance(fn, types.FunctionType):
        return message, fix
    what = f"`{name}`" if name and not name.startswith("_") else f"`{fn.__name__}`"
    qual = fn.__qualname__
    outer = qual.rsplit(".<locals>.", 1)[0] if ".<locals>." in qual else None
    if outer is not None:
        # (a closure the first derivative made again: its qualname is that of the generated
        # function, ``make_filter__fwd__jvp``; the user's function is its first part)
        import re
        m = re.match(r"(.+?)__(?:fwd|bwd|jvp|vjp)\d*(?:__|$)", outer)
        outer = m.group(1) if m else outer
    free = list(fn.__code__.co_freevars)
    if fn.__name__ == "<lambda>":
        kind = f"a lambda{f' made inside `{outer}`' if outer else ''}"
    elif outer:
        kind = f"a function defined inside `{outer}`" + (f" (a closure over {_names(free)})"
                                                         if free else "")
    elif name is None:
        return message, fix         # (a module-level function, called by name)
    else:
        kind = f"the function `{fn.__name__}`, passed in or kept in a variable"
    message = (f"second derivatives (hessian, hvp, grad of grad) through a call of {what}, "
               f"{kind}, are not supported yet: s2sad finds the callee only when the first "
               f"derivative runs")
    params = [p for p in fn.__code__.co_varnames[:fn.__code__.co_argcount]]
    if outer or fn.__name__ == "<lambda>":
        new = fn.__name__ if fn.__name__.isidentifier() else "step"
        sig = ", ".join(free + params)
        fix = (f"define `{new}({sig})` at module level" +
               (f", taking what it reads from `{outer}` ({_names(free)}) as arguments" if free
                else "") +
               f", and call it by name (`{new}({', '.join(free + ['...'] if params else free)})`); "
               f"first derivatives (grad, jvp, vjp, jacobian) of this function work")
    else:
        fix = (f"call `{fn.__name__}` by name (a module-level function the function reads as a "
               f"global) instead of through a variable; first derivatives (grad, jvp, vjp, "
               f"jacobian) of this function work")
    return message, fix


def _names(names):
    return ", ".join(f"`{n}`" for n in names)

