"""Extra cases for the end-to-end table (tests/rules/test_e2e_table.py), beyond cases_numpy.py /
cases_scipy.py: rules the direct table does not reach (operators, array attributes, aliases,
``math``), and more shapes and broadcasting patterns (0-d arrays, NumPy scalars, Python floats,
size-1 axes, empty arrays, negative and tuple axes)."""
import math
import operator

import numpy as np

from cases_numpy import Arr, C, wellcond
from rulecheck import Case
from s2sad.rules.registry import lookup_attr


class AttrCase(Case):
    """``x.name`` for an array attribute (``T``, ``mT``, ``real``, ``imag``)."""

    attribute = True

    def rule(self):
        return lookup_attr(self.fn)

    def call(self, args, kwargs):
        return getattr(args[0], self.fn)

    def name(self):
        return f".{self.fn}{'-' + self.id if self.id else ''}"


def A(name, *specs, id="", **opts):
    def make(rng, cplx=False):
        return tuple(s(rng, cplx) for s in specs), {}
    return AttrCase(name, make, id=id, **opts)


def f64(lo=-1.0, hi=1.0):
    """A NumPy float64 scalar (np.generic), not a Python float."""
    return Arr(lo=lo, hi=hi, f=np.float64, cplx_ok=False)


CASES = []
add = CASES.append

# -- operators with broadcasting (a + b, a * b, ...): shapes and scalar kinds ---------------------
OPS = [(operator.add, (-1, 1), (-1, 1)), (operator.sub, (-1, 1), (-1, 1)),
       (operator.mul, (-1, 1), (-1, 1)), (operator.truediv, (-1, 1), (0.5, 2)),
       (operator.pow, (0.5, 2), (-1.5, 1.5))]
PATTERNS = [((3, 4), (3, 4)), ((3, 4), (4,)), ((3, 1), (1, 4)), ((2, 1, 4), (3, 1)),
            ((), (3,)), ((3, 4), ()), ((1,), (2, 3)), ((2, 3, 1, 5), (4, 1))]
for fn, d1, d2 in OPS:
    for s1, s2 in PATTERNS:
        add(C(fn, Arr(*s1, lo=d1[0], hi=d1[1]), Arr(*s2, lo=d2[0], hi=d2[1]), id=f"{s1}x{s2}",
              cplx=s1 == s2 and fn is not operator.pow))
    add(C(fn, Arr(lo=d1[0], hi=d1[1], scalar=True), Arr(3, lo=d2[0], hi=d2[1]), id="pyfloat-arr",
          f32=False))
    add(C(fn, Arr(3, lo=d1[0], hi=d1[1]), Arr(lo=d2[0], hi=d2[1], scalar=True), id="arr-pyfloat"))
    add(C(fn, f64(*d1), Arr(2, 3, lo=d2[0], hi=d2[1]), id="f64-arr"))
    add(C(fn, Arr(2, 3, lo=d1[0], hi=d1[1]), f64(*d2), id="arr-f64"))
    add(C(fn, Arr(lo=d1[0], hi=d1[1], scalar=True), Arr(lo=d2[0], hi=d2[1], scalar=True),
          id="pyfloats", f32=False, cplx=fn is not operator.pow))
    add(C(fn, f64(*d1), f64(*d2), id="f64s", f32=False))
for fn in (operator.neg, operator.pos):
    add(C(fn, Arr(3, 4), id="3x4", cplx=True))
    add(C(fn, Arr(scalar=True), id="pyfloat", f32=False))
add(C(operator.mod, Arr(3, 4, lo=1.1, hi=3), Arr(4, lo=0.7, hi=1), id="bcast"))
add(C(operator.getitem, Arr(3, 4), (slice(None), 1), id="col"))
add(C(operator.getitem, Arr(3, 4), (np.array([0, 2, 0]), slice(1, 3)), id="fancy-repeat"))
add(C(operator.getitem, Arr(3, 4), np.array([[True, False, True, True]] * 3), id="mask"))
add(C(operator.getitem, Arr(3, 4), (Ellipsis, None, -1), id="ellipsis-newaxis"))

# -- unary ufuncs on more shapes and scalar kinds -------------------------------------------------
for name, lo, hi in [("exp", -1, 1), ("log", 0.5, 2), ("sin", -2, 2), ("tanh", -1, 1),
                     ("sqrt", 0.5, 2), ("abs", 0.2, 1), ("arctan", -2, 2), ("log1p", -0.5, 1)]:
    fn = getattr(np, name)
    add(C(fn, Arr(2, 3, 4, lo=lo, hi=hi), id="2x3x4"))
    add(C(fn, Arr(lo=lo, hi=hi), id="0d"))
    add(C(fn, f64(lo, hi), id="f64scalar", f32=False))
    add(C(fn, Arr(1, 3, 1, lo=lo, hi=hi), id="size1-axes"))
add(C(np.degrees, Arr(3), id="alias"))
add(C(np.radians, Arr(3), id="alias"))
add(C(np.conjugate, Arr(3), id="alias", cplx=True))

# -- binary ufuncs with 0-d arrays and NumPy scalars ------------------------------------------------
for name in ("add", "multiply", "maximum", "arctan2", "hypot", "logaddexp"):
    fn = getattr(np, name)
    add(C(fn, Arr(lo=0.2, hi=1), Arr(2, 3, lo=0.3, hi=1), id="0d-2x3"))
    add(C(fn, Arr(2, 3, lo=0.2, hi=1), f64(0.3, 1), id="2x3-f64"))
    add(C(fn, Arr(2, 1, 3, lo=0.2, hi=1), Arr(4, 1, lo=0.3, hi=1), id="outer-bcast"))

# -- reductions: more axes patterns -----------------------------------------------------------------
for fn in (np.sum, np.mean, np.prod, np.max, np.var, np.std):
    lo = 0.5 if fn is np.prod else -1
    add(C(fn, Arr(2, 3, 4, lo=lo, hi=1.5), kw={"axis": (-1, 0)}, id="neg-tuple"))
    add(C(fn, Arr(2, 3, 4, lo=lo, hi=1.5), kw={"axis": (-1, 0), "keepdims": True},
          id="neg-tuple-kd"))
    add(C(fn, Arr(4, lo=lo, hi=1.5), kw={"axis": 0, "keepdims": True}, id="1d-kd"))
    add(C(fn, Arr(1, 3, 1, lo=lo, hi=1.5), kw={"axis": 2}, id="size1-axis"))
    add(C(fn, Arr(2, 3, lo=lo, hi=1.5), kw={"axis": ()}, id="empty-axis-tuple"))
add(C(np.sum, Arr(0, 3), kw={"axis": 0}, id="empty-array"))
add(C(np.sum, Arr(lo=-1, hi=1), id="0d"))
add(C(np.mean, Arr(2, 3, 4), 1, id="positional-axis"))
add(C(np.cumulative_sum, Arr(3, 4), kw={"axis": 1}, id="ax1"))
add(C(np.cumulative_prod, Arr(3, 4, lo=0.5, hi=1.5), kw={"axis": 0}, id="ax0"))

# -- aliases and array-API names the direct table does not reach --------------------------------------
add(C(np.asanyarray, Arr(3, 2), id=""))
add(C(np.ascontiguousarray, Arr(3, 2), id=""))
add(C(np.asfortranarray, Arr(3, 2), id=""))
add(C(np.linalg.matrix_transpose, Arr(2, 3, 4), id=""))
add(C(np.linalg.tensordot, Arr(3, 4, 2), Arr(4, 2, 5), id="axes2"))
add(C(np.linalg.vecdot, Arr(2, 3), Arr(3), id="bcast"))
add(C(np.linalg.solve, Arr(3, 3, f=wellcond), Arr(3, 1), id="column"))

# -- array attributes ---------------------------------------------------------------------------------
add(A("T", Arr(3, 4), id="2d", cplx=True))
add(A("T", Arr(2, 3, 4), id="3d"))
add(A("T", Arr(4), id="1d"))
add(A("mT", Arr(2, 3, 4), id="3d", cplx=True))
add(A("real", Arr(3, 4), id="", cplx=True))
add(A("imag", Arr(3, 4), id="", cplx=True))
add(C("conjugate", Arr(3), id="", cplx=True))

# -- math on Python floats --------------------------------------------------------------------------
for name, lo, hi in [("sin", -2, 2), ("cos", -2, 2), ("tan", -1, 1), ("asin", -0.8, 0.8),
                     ("acos", -0.8, 0.8), ("atan", -2, 2), ("sinh", -1, 1), ("cosh", -1, 1),
                     ("tanh", -1, 1), ("asinh", -2, 2), ("acosh", 1.5, 3), ("atanh", -0.8, 0.8),
                     ("exp", -1, 1), ("expm1", -1, 1), ("log", 0.5, 2), ("log2", 0.5, 2),
                     ("log10", 0.5, 2), ("log1p", -0.5, 1), ("sqrt", 0.5, 2), ("fabs", 0.2, 1),
                     ("erf", -1.5, 1.5), ("erfc", -1.5, 1.5), ("gamma", 0.5, 3),
                     ("lgamma", 0.5, 3), ("degrees", -1, 1), ("radians", -1, 1)]:
    add(C(getattr(math, name), Arr(lo=lo, hi=hi, scalar=True), id="", f32=False))
for name in ("atan2", "hypot", "pow", "copysign"):
    add(C(getattr(math, name), Arr(lo=0.3, hi=1, scalar=True), Arr(lo=0.3, hi=1, scalar=True),
          id="", f32=False))
add(C(math.log, Arr(lo=0.5, hi=2, scalar=True), Arr(lo=2, hi=3, scalar=True), id="base",
      f32=False))
