"""The SciPy rule table under test."""
import numpy as np
import scipy.linalg as sl
import scipy.special as sp

from cases_numpy import Arr, C, Lst, spd, wellcond  # noqa: F401

CASES = []
add = CASES.append

for name, lo, hi, cx in [("expit", -3, 3, False), ("logit", 0.1, 0.9, False),
                         ("erf", -1.5, 1.5, True), ("erfc", -1.5, 1.5, True),
                         ("erfinv", -0.9, 0.9, False), ("erfcinv", 0.1, 1.9, False),
                         ("ndtr", -2, 2, False), ("ndtri", 0.1, 0.9, False),
                         ("log_ndtr", -3, 3, False), ("log_expit", -3, 3, False),
                         ("gammaln", 0.5, 4, False), ("gamma", 0.5, 3, False),
                         ("digamma", 0.5, 4, False), ("i0", -2, 2, False), ("i0e", -2, 2, False),
                         ("i1", -2, 2, False), ("i1e", -2, 2, False), ("dawsn", -2, 2, False),
                         ("expm1", -1, 1, True), ("log1p", -0.5, 1, True), ("exprel", -1, 1, False),
                         ("entr", 0.2, 2, False)]:
    fn = getattr(sp, name)
    add(C(fn, Arr(3, 4, lo=lo, hi=hi), id="3x4", cplx=cx))
    add(C(fn, Arr(lo=lo, hi=hi, scalar=True), id="pyfloat", f32=False))
add(C(sp.xlogy, Arr(3, 4, lo=0.2, hi=2), Arr(4, lo=0.2, hi=2), id="bcast"))
add(C(sp.xlog1py, Arr(3, 4, lo=0.2, hi=2), Arr(4, lo=0.2, hi=2), id="bcast"))
add(C(sp.polygamma, 1, Arr(3, lo=0.5, hi=3), id="n1"))
for ax, kd in [(None, False), (0, False), (1, True), ((0, 2), False)]:
    add(C(sp.logsumexp, Arr(2, 3, 4, lo=-2, hi=2), kw={"axis": ax, "keepdims": kd},
          id=f"ax{ax}-kd{kd}"))
add(C(sp.logsumexp, Arr(3, 4), kw={"axis": 1, "b": Arr(4, lo=0.5, hi=2)}, id="b"))
for ax in (None, 0, -1, (0, 1)):
    add(C(sp.softmax, Arr(3, 4, lo=-2, hi=2), kw={"axis": ax}, id=f"ax{ax}"))
    add(C(sp.log_softmax, Arr(3, 4, lo=-2, hi=2), kw={"axis": ax}, id=f"ax{ax}"))

# factorial, comb, perm with exact=False: through the gamma function (a zero derivative before)
add(C(sp.factorial, Arr(3, 4, lo=0.2, hi=4), id="3x4"))
add(C(sp.factorial, Arr(lo=0.2, hi=4, scalar=True), id="pyfloat", f32=False))
# SciPy's 0 for n < 0 (away from the jump at 0)
add(C(sp.factorial, Arr(6, lo=-2, hi=2, f=lambda x: x + 0.3 * np.sign(x.real)), id="negative"))
add(C(sp.factorial, Arr(3, 4, lo=-0.9, hi=3), kw={"extend": "complex"}, id="complex", cplx=True))
add(C(sp.factorial2, Arr(3, 4, lo=0.2, hi=4), kw={"extend": "complex"}, id="complex", cplx=True))
add(C(sp.factorialk, Arr(5, lo=0.2, hi=4), 3, kw={"extend": "complex"}, id="k3", cplx=True))
_NK = (np.array([1.3, 4.2, -0.7, 3.1, 2.5, 5.0]), np.array([2.6, 1.4, 0.3, -0.8, 1.1, 2.2]))
for _fn in (sp.comb, sp.perm):
    add(C(_fn, Arr(3, 4, lo=3, hi=6), Arr(4, lo=0.2, hi=2.8), id="bcast"))
    add(C(_fn, Arr(lo=3, hi=6, scalar=True), Arr(lo=0.2, hi=2.8, scalar=True), id="pyfloat",
          f32=False))
    # k > N, N < 0, k < 0: SciPy's 0 (entries 0, 2 and 3)
    add(C(_fn, Arr(6, lo=-0.05, hi=0.05, f=lambda x: x + _NK[0]),
          Arr(6, lo=-0.05, hi=0.05, f=lambda x: x + _NK[1]), kw={"exact": False}, id="outside"))
# binom, poch: through gamma/digamma (refused before: no rule)
for _fn in (sp.binom, sp.poch):
    add(C(_fn, Arr(3, 4, lo=0.3, hi=5), Arr(4, lo=0.2, hi=2.8), id="bcast"))
    add(C(_fn, Arr(lo=0.3, hi=5, scalar=True), Arr(lo=0.2, hi=2.8, scalar=True), id="pyfloat",
          f32=False))
add(C(sp.binom, Arr(5, lo=-2.8, hi=-2.2), Arr(5, lo=-1.7, hi=2.4), id="negative"))
add(C(sp.poch, Arr(5, lo=-2.8, hi=-2.2), Arr(5, lo=0.2, hi=1.6), id="negative"))

tri_l = lambda x: np.tril(x) + 3 * np.eye(x.shape[-1])  # noqa: E731
for lower in (True, False):
    for trans in (0, 1, 2, "T"):
        for bshape in ((4,), (4, 2)):
            add(C(sl.solve_triangular, Arr(4, 4, f=tri_l if lower else lambda x: tri_l(x).T),
                  Arr(*bshape), kw={"trans": trans, "lower": lower},
                  id=f"l{lower}-t{trans}-b{len(bshape)}", cplx=True))
add(C(sl.solve_triangular, Arr(4, 4, f=tri_l), Arr(4), kw={"lower": True, "unit_diagonal": True},
      id="unit"))


def _mask_factor(lower):
    def post(res):
        c, low = res
        return (np.tril(c) if low else np.triu(c)), low
    return post


for lower in (True, False):
    add(C(sl.cho_factor, Arr(4, 4, f=spd), kw={"lower": lower}, id=f"lower{lower}",
          post=_mask_factor(lower), cplx=True, rtol=1e-5))
    add(C(sl.cho_solve, Lst(Arr(4, 4, f=tri_l if lower else lambda x: tri_l(x).T), lower,
                            tuple_=True), Arr(4, 2), id=f"lower{lower}", cplx=True))
    add(C(sl.cholesky, Arr(4, 4, f=spd), kw={"lower": lower}, id=f"lower{lower}", cplx=True,
          rtol=1e-5))
add(C(sl.cho_solve, Lst(Arr(3, 3, f=tri_l), True, tuple_=True), Arr(3), id="vec"))
add(C(sl.block_diag, Arr(2, 2), Arr(3), Arr(scalar=True), Arr(1, 2), id="mixed", f32=False))
add(C(sl.block_diag, Arr(2, 3), Arr(2, 2), id="2d", cplx=True))
add(C(sl.inv, Arr(3, 3, f=wellcond), id="", cplx=True))
add(C(sl.det, Arr(3, 3, f=wellcond), id="", cplx=True))
add(C(sl.solve, Arr(3, 3, f=wellcond), Arr(3, 2), id="", cplx=True))
add(C(sl.expm, Arr(3, 3), id="", cplx=True))
