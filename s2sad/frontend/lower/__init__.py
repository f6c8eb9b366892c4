"""Lowering: a gast function definition becomes an IR :class:`~s2sad.ir.Function` in A-normal form.

Every operation becomes a call site: operators call :mod:`operator` functions, ``x[i]`` calls
``operator.getitem``, ``x.T`` is an :class:`~s2sad.ir.Attr` site, ``x.sum()`` a
:class:`~s2sad.ir.Method` site.  ``and``/``or`` and conditional expressions become ``If`` statements;
loops over sequences become loops over ``range`` with an explicit read of the element.

The lowering is one class, :class:`~.lowerer.Lowerer`, made of parts, one module each:

- :mod:`.lowerer`: its state and the function as a whole;
- :mod:`.statements`: statements and assignments;
- :mod:`.loops`: ``for`` loops and comprehensions;
- :mod:`.expressions`: expressions, closures, subscripts;
- :mod:`.calls`: calls, star-arguments, ``map``/``filter``/``reduce``/``itertools``;
- :mod:`.iterators`: iterator cursors and lazy iterators;
- :mod:`.tables` (operators, iterator calls) and :mod:`.scopes` (names a scope binds and reads).
"""
from .lowerer import Lowerer, lower  # noqa: F401
from .scopes import free_names  # noqa: F401
from .tables import BINOPS, CMPOPS, UNARYOPS  # noqa: F401
