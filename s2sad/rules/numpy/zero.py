"""Callees whose output carries no derivative: shape and type queries, index-valued and
piecewise-constant functions, predicates, constructors.
"""
from ..adjoints import _np
from ..registry import defzero, defzero_method, lookup

defzero(*_np(
    # shape/type queries
    "shape", "ndim", "size", "result_type", "iscomplexobj", "isrealobj", "iscomplex", "isreal",
    "isscalar",
    # index-valued and piecewise-constant functions
    "argmax", "argmin", "argsort", "argwhere", "nonzero", "flatnonzero", "searchsorted",
    "count_nonzero", "digitize", "lexsort", "argpartition",
    "floor", "ceil", "round", "around", "rint", "fix", "trunc", "sign", "signbit",
    "floor_divide", "spacing",
    # predicates and comparisons
    "isnan", "isinf", "isfinite", "isneginf", "isposinf", "isclose", "allclose", "array_equal",
    "array_equiv", "greater", "greater_equal", "less", "less_equal", "equal", "not_equal",
    "logical_and", "logical_or", "logical_xor", "logical_not", "all", "any",
    "bitwise_and", "bitwise_or", "bitwise_xor", "invert", "left_shift", "right_shift", "gcd",
    "lcm",
    # constructors whose output carries no derivative
    "zeros", "ones", "empty", "eye", "identity", "tri", "indices",
    "zeros_like", "ones_like", "empty_like", "diag_indices", "tril_indices",
    "triu_indices", "ndindex", "unravel_index", "ravel_multi_index",
    "finfo", "iinfo", "dtype", "can_cast",
))

# np.sign is piecewise constant on real values only: on complex z it is z / |z|, so a complex
# argument that carries a derivative is refused where it runs (codegen/text.real_only_checks)
for _f in _np("sign"):
    lookup(_f).real_only = True

# -- ndarray methods -------------------------------------------------------------------------------
defzero_method("argmax", "argmin", "argsort", "nonzero", "all", "any", "round", "searchsorted",
               "argpartition", "tobytes")
