"""Rule tables, grouped by library.  :mod:`.registry` is the mechanism; the other modules are tables.

SciPy rules are loaded only once SciPy is imported (by the user's code); CuPy callees map to the
NumPy rules (see :mod:`.cupy_rules`).
"""
import importlib
import sys

from .registry import defmethod, defrule, defzero, defzero_method, lookup, lookup_method, Rule  # noqa: F401

_TABLES = ["python_rules", "numpy", "runtime_rules", "transform_rules"]
_OPTIONAL = {"scipy": "scipy", "cupy": "cupy_rules"}
_optional_loaded = set()


def load_builtin_tables():
    for name in _TABLES:
        try:
            importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as e:
            if e.name != f"{__name__}.{name}":
                raise
    load_optional_tables()


def load_optional_tables():
    """Load the tables of optional libraries the user's process has imported by now."""
    for lib, table in _OPTIONAL.items():
        if table not in _optional_loaded and lib in sys.modules:
            try:
                importlib.import_module(f"{__name__}.{table}")
            except ModuleNotFoundError as e:
                if e.name != f"{__name__}.{table}":
                    raise
            finally:
                _optional_loaded.add(table)   # published once filled (or failed): see registry
