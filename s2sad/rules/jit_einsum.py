"""``np.einsum`` for derivatives compiled with ``jit=True``: its forward, adjoint and tangent as
loop nests numba compiles (numba has no ``einsum``).

The subscripts of a call are a literal in the user's source (``np.einsum("ij,j->i", A, x)``), so
numba types them as a string literal, and each overload here reads them when the derivative
compiles: :func:`_contraction` writes, for those subscripts and the operands' dimensions, one
Python function of loops over every index letter, ``r[i, k] += a0[i, j] * a1[j, k]``, that
numba compiles like the user's own loops (``numpy.einsum`` without ``optimize`` is such a loop
nest in C).  The adjoint of an operand is the same kind of loop nest with the output's adjoint
in the operand's place, written into an array of the operand's shape: an index that repeats in
the operand (``"ii"``) writes onto its diagonal, a dimension of size 1 that the others broadcast
receives the sum over it.  The tangent is the forward with each operand's tangent in turn.

What is not here falls back to Python with the warning naming the user's line: the sublist form
(``einsum(a, [0, 1], b, [1])``), keywords (``optimize=``, ``out=``), complex operands, and
subscripts that are not a literal.  Imports numba: only ``jit=True`` imports this module.
"""
import functools

import numpy as np
from numba.core import types as nt
from numba.extending import overload, register_jitable

from .numpy.products import _einsum_parse


def einsum(*operands):
    raise NotImplementedError("s2sad: runs inside numba-compiled derivatives only")


def adjoint(g, operands, which):
    raise NotImplementedError


def tangent(t, operands):
    raise NotImplementedError


# -- the loop nests ------------------------------------------------------------------------------
@register_jitable
def _size(n, m):
    """The size of an index letter seen so far (``n``, 1 while unseen) joined with a dimension
    ``m`` that carries it: equal sizes, or 1 broadcast, as ``np.einsum`` allows."""
    if n == 1 or n == m:
        return m
    if m == 1:
        return n
    raise ValueError("einsum: operands could not be broadcast together")


def _order(ins, out, letters):
    """The letters in loop order, the others in order of appearance before the innermost: the
    output's last letter where an operand's last axis is that letter too (a loop numba can
    vectorize, writing along the output's rows), else the letter that is the last axis of the
    most operands (contiguous reads)."""
    if not letters:
        return []
    if out and any(s and s[-1] == out[-1] for s in ins):
        inner = out[-1]
    else:
        last = {c: sum(1 for s in ins if s and s[-1] == c) for c in letters}
        inner = max(letters, key=lambda c: (last[c], -letters.index(c)))
    return [c for c in letters if c != inner] + [inner]


def _products(ins, out):
    """For two operands whose letters are each distinct, every letter of an operand in the other
    operand or in ``out``: the contraction as a batch of matrix products (BLAS), as the lines of
    a generated function that has the letters' sizes ``n_*``; else None.  Batch letters are in
    both operands and the output, contracted letters in both operands only, each operand's own
    letters in the output."""
    if len(ins) != 2 or not out or any(len(set(s)) != len(s) for s in (*ins, out)):
        return None
    a, b = ins
    if not all(c in b or c in out for c in a) or not all(c in a or c in out for c in b) or \
            not all(c in a or c in b for c in out):
        return None
    batch = [c for c in out if c in a and c in b]
    left = [c for c in out if c in a and c not in b]
    right = [c for c in out if c in b and c not in a]
    summed = [c for c in a if c in b and c not in out]

    def n(cs):
        return " * ".join(f"n_{c}" for c in cs) or "1"

    def perm(s, cs):
        return "(" + "".join(f"{s.index(c)}, " for c in cs) + ")"
    done = batch + left + right
    return [f"        x = np.ascontiguousarray(np.transpose(a0, {perm(a, batch + left + summed)}))"
            f".reshape(({n(batch)}, {n(left)}, {n(summed)}))",
            f"        y = np.ascontiguousarray(np.transpose(a1, {perm(b, batch + summed + right)}))"
            f".reshape(({n(batch)}, {n(summed)}, {n(right)}))",
            f"        z = np.empty(({n(batch)}, {n(left)}, {n(right)}), dt)",
            f"        for q in range({n(batch)}):",
            "            z[q] = np.dot(x[q], y[q])",
            f"        return np.ascontiguousarray(np.transpose(z.reshape(("
            f"{''.join(f'n_{c}, ' for c in done)})), {perm(done, out)}))"]


@functools.lru_cache(maxsize=None)
def _contraction(ins, out, shaped, scalars, dtype, plain=False):
    """A jitable ``f(a0, a1, ..., [like])``: the sum over every letter that is not in ``out`` of
    the product of the operands ``a_k`` (letters ``ins[k]``), as an array with the letters
    ``out`` in the dtype ``dtype`` (a NumPy dtype name), or a scalar when ``out`` is empty.
    ``shaped``: the result has the shape of the last argument ``like`` (its dimensions of size
    1 summed into, its repeated letters on the diagonal) instead of the letters' sizes.
    ``scalars``: which operands are numbers (no letters, read as they are).  ``plain``: every
    operand is an array of ``dtype``, a float type: a contraction of two that is a batch of
    matrix products calls BLAS for them where no letter is broadcast."""
    args = [f"a{k}" for k in range(len(ins))]
    arrays = list(ins) + ([out] if shaped else [])
    names = args + (["like"] if shaped else [])
    letters = []
    for s in arrays:
        for c in s:
            if c not in letters:
                letters.append(c)
    lines = [f"def contract({', '.join(names)}):"]
    for c in letters:
        lines.append(f"    n_{c} = 1")
    for name, s in zip(names, arrays):
        for d, c in enumerate(s):
            lines.append(f"    n_{c} = _size(n_{c}, {name}.shape[{d}])")

    def index(name, s, shape_of):
        """``name``'s element at the loop letters ``s``: a dimension of size 1 where the letter
        is longer (broadcast) is read at 0."""
        for d, c in enumerate(s):
            lines.append(f"    m_{name}_{d} = 1 if {shape_of}.shape[{d}] == n_{c} else 0")
        return f"{name}[{', '.join(f'{c} * m_{name}_{d}' for d, c in enumerate(s))}]"

    fast = _products(ins, out) if plain else None
    if fast is not None:                        # (matrix products, where every size matches)
        checks = [f"{name}.shape[{d}] == n_{c}" for name, s in zip(names, arrays)
                  for d, c in enumerate(s)]
        work = " * ".join(f"n_{c}" for c in letters)        # (small ones: the loops are faster)
        lines.append(f"    if {work} >= 4096 and {' and '.join(checks)}:")
        lines.extend(fast)
    reads = [a if k in scalars else f"{a}[()]" if not s else index(a, s, a)
             for k, (a, s) in enumerate(zip(args, ins))]
    if not out:
        lines.append("    r = np.zeros(1, dt)")
        target = "r[0]"
    elif shaped:
        lines.append("    r = np.zeros(like.shape, dt)")
        target = index("r", out, "like")
    else:
        lines.append(f"    r = np.zeros(({', '.join(f'n_{c}' for c in out)},), dt)")
        target = f"r[{', '.join(out)}]"
    indent = "    "
    for c in _order(ins, out, letters):
        lines.append(f"{indent}for {c} in range(n_{c}):")
        indent += "    "
    lines.append(f"{indent}{target} += {' * '.join(reads) if reads else '1'}")
    lines.append("    return r[0]" if not out else "    return r")
    namespace = {"np": np, "dt": np.dtype(dtype), "_size": _size}
    exec(compile("\n".join(lines) + "\n", f"<s2sad einsum {','.join(ins)}->{out}>", "exec"),
         namespace)
    return register_jitable(namespace["contract"])


# -- typing: which calls have a loop nest --------------------------------------------------------
def _operand(t):
    """A real operand: a real array, or a real number."""
    if isinstance(t, nt.Array):
        return isinstance(t.dtype, (nt.Float, nt.Integer, nt.Boolean))
    return isinstance(t, (nt.Float, nt.Integer, nt.Boolean))


def _dtype_of(t):
    return t.dtype if isinstance(t, nt.Array) else t


def _dtype(t):
    from numba.np.numpy_support import as_dtype
    return as_dtype(_dtype_of(t))


def _parsed(subscripts, ops):
    """(ins, out) of literal ``subscripts`` for the operand types ``ops``, or None where numba's
    version does not apply (a subscripts string that is not a literal, complex or object
    operands, subscripts that do not fit: Python mode raises NumPy's error)."""
    if not isinstance(subscripts, nt.StringLiteral) or not ops or \
            not all(_operand(t) for t in ops):
        return None
    subs = subscripts.literal_value
    ndims = [t.ndim if isinstance(t, nt.Array) else 0 for t in ops]
    try:
        ins, out = _einsum_parse(subs, ndims)
    except Exception:               # (subscripts NumPy refuses: Python mode raises its error)
        return None
    if len(ins) != len(ops) or any(len(s) != n for s, n in zip(ins, ndims)) or \
            not all(c.isalpha() for s in ins + [out] for c in s) or len(set(out)) != len(out) or \
            not set(out) <= set("".join(ins)):
        return None
    return tuple(ins), out


def _plain(ts, dt):
    """Every operand an array of the float dtype ``dt`` (what BLAS's products take)."""
    return np.dtype(dt).kind == "f" and all(isinstance(t, nt.Array) and _dtype(t) == dt
                                            for t in ts)


def _scalars(ops):
    return frozenset(k for k, t in enumerate(ops) if not isinstance(t, nt.Array))


@overload(einsum, prefer_literal=True)
def _einsum(*operands):
    """``np.einsum(subscripts, *ops)`` with literal subscripts."""
    if not operands:
        return None
    ops = operands[1:]
    got = _parsed(operands[0], ops)
    if got is None:
        return None
    ins, out = got
    dt = np.result_type(*[_dtype(t) for t in ops]).name
    f = _contraction(ins, out, False, _scalars(ops), dt, _plain(ops, dt))
    # (``lambda *operands: f(operands[1], ..., operands[n])`` spelled out: numba unpacks a
    # star-argument tuple by constant indices)
    namespace = {"f": f}
    exec("def impl(*operands):\n    return f(" +
         ", ".join(f"operands[{k + 1}]" for k in range(len(ops))) + ")\n", namespace)
    return namespace["impl"]


@overload(adjoint, prefer_literal=True)
def _adjoint(g, operands, which):
    """The adjoints of every real floating operand (a tuple, None first for the subscripts and
    for operands without one), or of the operand ``which`` alone (a literal)."""
    if not isinstance(operands, nt.Tuple) or len(operands) < 2:    # (subscripts, operands...)
        return None
    ops = tuple(operands.types[1:])
    got = _parsed(operands.types[0], ops)
    k_only = None if isinstance(which, (nt.NoneType, nt.Omitted)) or which is None else \
        getattr(which, "literal_value", None)
    if got is None or (k_only is None and not isinstance(which, (nt.NoneType, nt.Omitted))) or \
            not (isinstance(g, nt.Float) or (isinstance(g, nt.Array) and
                                             isinstance(g.dtype, nt.Float))):
        return None
    ins, out = got
    if (isinstance(g, nt.Array) and g.ndim != len(out)) or (not isinstance(g, nt.Array) and out):
        return None
    fns = {}
    for k, (s, t) in enumerate(zip(ins, ops)):
        if (k_only is not None and k != k_only) or not isinstance(_dtype_of(t), nt.Float):
            continue                        # (an integer operand has no adjoint, as in Python)
        others = [j for j in range(len(ops)) if j != k]
        dt = np.result_type(_dtype(g), *[_dtype(ops[j]) for j in others]).name
        number = not isinstance(t, nt.Array)        # (a float operand: its adjoint a float)
        scalars = frozenset(1 + i for i, j in enumerate(others)
                            if not isinstance(ops[j], nt.Array))
        if not isinstance(g, nt.Array):
            scalars |= frozenset([0])
        f = _contraction((out,) + tuple(ins[j] for j in others), s, not number, scalars, dt,
                         _plain([g] + [ops[j] for j in others], dt))
        fns[k] = (f, others, _dtype(t).name, number)
    if k_only is not None and k_only not in fns:
        return None
    lines = ["def impl(g, operands, which):"]
    namespace = {"np": np}
    for k, (f, others, odt, number) in fns.items():
        namespace[f"f{k}"] = f
        namespace[f"dt{k}"] = np.dtype(odt).type
        call = ", ".join(["g"] + [f"operands[{j + 1}]" for j in others] +
                         ([] if number else [f"operands[{k + 1}]"]))
        lines.append(f"    r{k} = dt{k}(f{k}({call}))" if number else
                     f"    r{k} = f{k}({call}).astype(dt{k})")
    if k_only is not None:
        lines.append(f"    return r{k_only}")
    else:
        items = ["None"] + [f"r{k}" if k in fns else "None" for k in range(len(ops))]
        lines.append(f"    return ({', '.join(items)},)")
    exec("\n".join(lines) + "\n", namespace)
    return namespace["impl"]


@overload(tangent, prefer_literal=True)
def _tangent(t, operands):
    """The sum over the operands of the forward with the operand's tangent in its place (None
    tangents, of the subscripts or of operands without one, are left out)."""
    if not isinstance(operands, nt.Tuple) or not isinstance(t, (nt.Tuple, nt.UniTuple)) or \
            len(t) != len(operands):
        return None
    ops = tuple(operands.types[1:])
    got = _parsed(operands.types[0], ops)
    if got is None:
        return None
    ins, out = got
    tk = [k for k in range(len(ops)) if not isinstance(t[k + 1], nt.NoneType)]
    if not tk or not all(_operand(t[k + 1]) and (isinstance(t[k + 1], nt.Array) ==
                                                  isinstance(ops[k], nt.Array)) for k in tk):
        return None
    namespace = {}
    lines = ["def impl(t, operands):"]
    terms = []
    for k in tk:
        types_ = [t[j + 1] if j == k else ops[j] for j in range(len(ops))]
        dt = np.result_type(*[_dtype(x) for x in types_]).name
        namespace[f"f{k}"] = _contraction(ins, out, False, _scalars(types_), dt,
                                          _plain(types_, dt))
        args = ", ".join(f"t[{j + 1}]" if j == k else f"operands[{j + 1}]"
                         for j in range(len(ops)))
        terms.append(f"f{k}({args})")
    lines.append(f"    return {' + '.join(terms)}")
    exec("\n".join(lines) + "\n", namespace)
    return namespace["impl"]
