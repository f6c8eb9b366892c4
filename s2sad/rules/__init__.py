"""Rule tables, grouped by library.  :mod:`.registry` is the mechanism; the other modules are tables.

SciPy rules are loaded only once SciPy is imported (by the user's code); CuPy callees map to the
NumPy rules (see :mod:`.cupy`).
"""
from .registry import defmethod, defrule, defzero, defzero_method, lookup, lookup_method, Rule  # noqa: F401
# the list of tables and their loading live in the registry, which imports them by name
from .registry import load_builtin_tables, load_optional_tables  # noqa: F401
