"""Reverse-mode emitter: an analysed IR function becomes a forward sweep and a reverse sweep.

``f__fwd(params) -> (value, tape)`` runs the user's computation and saves what the reverse sweep
reads; ``f__bwd(tape, _b_r) -> tuple of adjoints`` (one per active parameter) walks it backwards.

How values reach the reverse sweep.  A variable bound once, directly in the function body (or a
parameter never rebound), still holds the same value at the end of the forward sweep: it travels in
the tape by name.  Any other value the reverse sweep reads is pushed onto a per-variable list
(``_s_v``) at the point it is read, and popped at the mirrored point.  Arrays later written in place
are copied when pushed.  Loops record their trip count only when it cannot be recomputed (``while``,
or a ``for`` that may end early); branches are re-taken from their saved test value.

How adjoints accumulate.  The emitter knows statically which adjoints exist at every point: the
first contribution assigns (``_b_x = ...``), later ones add.  Where control flow joins (branches,
loop back-edges) an adjoint that exists on one side only is set to ``0.0`` on the other.

The emitter is one class, :class:`~.emitter.ReverseEmitter`, made of parts, one module each:

- :mod:`.emitter`: its state, the reads it records, and ``emit`` (the two functions as a whole);
- :mod:`.adjoints`: contributions to adjoints and the rules' templates;
- :mod:`.reverse_sweep`: the reverse sweep of statements (branches, loops, ``try``/``with``,
  in-place changes of lists and dicts, item writes);
- :mod:`.reverse_calls`: the reverse sweep of assignments and calls (primitive, derived, dynamic);
- :mod:`.saves`: the save plan (by name in the tape, or on a stack), pushes and pops, the tape;
- :mod:`.forward_sweep`: the forward sweep of statements and calls;
- :mod:`.names` (adjoint and stack names, the adjoint state) and :mod:`.operands` (what the parts
  ask of operands and call sites).
"""
from .emitter import ReverseEmitter  # noqa: F401
from .names import b, stack  # noqa: F401
from .operands import _is_scalar_operand, _OpaqueSite  # noqa: F401
