"""Names in generated reverse code: adjoints (``_b_x``), stacks of saved values (``_s_x``), the
template's ``ans``; the variables of the function being emitted, which they must not clash with;
and the adjoint state of a point of the reverse sweep."""
import threading


_ANS = "__ans__"


class _State:
    """The adjoints that exist at a point of the reverse sweep (``defined``), and those of them
    that may be the symbolic zero 0.0 there (``zero``: filled in where branches join)."""
    __slots__ = ("defined", "zero")

    def __init__(self, defined=(), zero=()):
        self.defined = set(defined)
        self.zero = set(zero)

    def copy(self):
        return _State(self.defined, self.zero)


_TAKEN = threading.local()   # .names: variables of the function being emitted (this thread)


def _fresh(prefix, v):
    taken = getattr(_TAKEN, "names", ())
    name = f"{prefix}{v}" if v.startswith("_") else f"{prefix}_{v}"
    k = 2
    # (a variable `r` and the temporary `_r` would both give `_b_r`: the user's variable yields)
    clash = not v.startswith("_") and "_" + v in taken
    while name in taken or clash:
        clash = False
        name = f"{prefix}{k}{v}" if v.startswith("_") else f"{prefix}{k}_{v}"
        k += 1
    return name


def b(v):
    """The adjoint's name: ``_b_x`` for ``x``, ``_b_4`` for ``_4``, ``_b_r`` for ``_r``; when the
    function already has a variable of that name (differentiating generated code), ``_b2_x``..."""
    return _fresh("_b", v)


def stack(v):
    """The list a variable's saved values are pushed on: ``_s_x`` for ``x``, ``_s_4`` for ``_4``."""
    return _fresh("_s", v)
