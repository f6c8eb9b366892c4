"""The SciPy derivative table (loaded only once the user's code has imported SciPy), one module per
topic.

Each module holds its rows (``defrule``/``defmethod``/``defzero``) and the helpers their templates
call, which it publishes as ``_adj.<name>`` (:mod:`s2sad.rules.adjoints`).  Importing this package
loads every module in it: a new topic is a new module, listed nowhere else.
"""
import importlib
import pkgutil

for _m in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    if not _m.startswith("_"):
        importlib.import_module(f"{__name__}.{_m}")
