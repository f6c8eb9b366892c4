"""The NumPy rule table under test: a list of :class:`rulecheck.Case`."""
import operator

import numpy as np

from rulecheck import Case


class Arr:
    """A random argument: shape, domain [lo, hi], optional transform (e.g. SPD matrices)."""

    def __init__(self, *shape, lo=-1.0, hi=1.0, f=None, scalar=False, cplx_ok=True):
        self.shape, self.lo, self.hi, self.f, self.scalar = shape, lo, hi, f, scalar
        self.cplx_ok = cplx_ok

    def __call__(self, rng, cplx=False):
        x = rng.uniform(self.lo, self.hi, self.shape)
        if cplx and self.cplx_ok:
            x = x + 1j * rng.uniform(self.lo, self.hi, self.shape)
        if self.f is not None:
            x = self.f(x)
        if self.scalar:
            return complex(x) if cplx and self.cplx_ok else float(x)
        return x


class Lst:
    """A list (or tuple) of random arguments."""

    def __init__(self, *items, tuple_=False):
        self.items, self.tuple_ = items, tuple_

    def __call__(self, rng, cplx=False):
        out = [_gen(i, rng, cplx) for i in self.items]
        return tuple(out) if self.tuple_ else out


class Fn:
    """A random argument made by a function of (rng, cplx): inputs with nan/inf at set places..."""

    def __init__(self, f):
        self.f = f

    def __call__(self, rng, cplx=False):
        return self.f(rng, cplx)


def _gen(spec, rng, cplx):
    if isinstance(spec, (Arr, Lst, Fn)):
        return spec(rng, cplx)
    return spec


def C(fn, *specs, id="", kw=None, **opts):
    kw = kw or {}

    def make(rng, cplx=False):
        return tuple(_gen(s, rng, cplx) for s in specs), {k: _gen(v, rng, cplx)
                                                          for k, v in kw.items()}
    return Case(fn, make, id=id, **opts)


def spd(x):
    x = np.real(x) if False else x
    n = x.shape[-1]
    return x @ np.conj(np.swapaxes(x, -1, -2)) + n * np.eye(n)


def wellcond(x):
    return x + 3 * np.eye(x.shape[-1])


CASES = []
add = CASES.append

# -- elementwise unary: (name, domain lo, hi, complex-capable) ----------------------------------------
UNARY = [
    ("exp", -1, 1, True), ("exp2", -1, 1, False), ("expm1", -1, 1, True), ("log", 0.5, 2, True),
    ("log2", 0.5, 2, True), ("log10", 0.5, 2, True), ("log1p", -0.5, 1, True),
    ("sqrt", 0.5, 2, True), ("cbrt", 0.5, 2, False), ("square", -1, 1, True),
    ("reciprocal", 0.5, 2, True), ("sin", -2, 2, True), ("cos", -2, 2, True), ("tan", -1, 1, True),
    ("arcsin", -0.8, 0.8, True), ("arccos", -0.8, 0.8, True), ("arctan", -2, 2, True),
    ("sinh", -1, 1, True), ("cosh", -1, 1, True), ("tanh", -1, 1, True),
    ("arcsinh", -2, 2, True), ("arccosh", 1.5, 3, True), ("arctanh", -0.8, 0.8, True),
    ("deg2rad", -1, 1, False), ("rad2deg", -1, 1, False), ("negative", -1, 1, True),
    ("positive", -1, 1, True), ("abs", 0.2, 1, True), ("fabs", -1, -0.2, False),
    ("conj", -1, 1, True), ("real", -1, 1, True), ("imag", -1, 1, True), ("angle", 0.2, 1, True),
    ("sinc", -2, 2, False),
]
for name, lo, hi, cx in UNARY:
    fn = getattr(np, name)
    add(C(fn, Arr(3, 4, lo=lo, hi=hi), id="3x4", cplx=cx))
    add(C(fn, Arr(lo=lo, hi=hi, scalar=True), id="pyfloat", f32=False))
add(C(np.abs, Arr(5, lo=-1, hi=-0.2), id="neg"))
add(C(np.exp, Arr(2, 3, 4), id="3d"))

# -- elementwise binary, with broadcasting ---------------------------------------------------------
BINARY = [
    ("add", (-1, 1), (-1, 1), True), ("subtract", (-1, 1), (-1, 1), True),
    ("multiply", (-1, 1), (-1, 1), True), ("divide", (-1, 1), (0.5, 2), True),
    ("power", (0.5, 2), (-1.5, 1.5), True), ("float_power", (0.5, 2), (-1.5, 1.5), False),
    ("maximum", (-1, 1), (-1, 1), False), ("minimum", (-1, 1), (-1, 1), False),
    ("fmax", (-1, 1), (-1, 1), False), ("fmin", (-1, 1), (-1, 1), False),
    ("hypot", (0.2, 1), (0.2, 1), False), ("arctan2", (-1, 1), (0.2, 1), False),
    ("logaddexp", (-1, 1), (-1, 1), False), ("logaddexp2", (-1, 1), (-1, 1), False),
    ("remainder", (1.1, 3), (0.7, 1), False), ("fmod", (-3, -1.1), (0.7, 1), False),
    ("copysign", (-1, 1), (-1, 1), False),
]
SHAPES = [((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 1, 4), (3, 1)), ((), (3,)), ((3,), ())]
for name, d1, d2, cx in BINARY:
    fn = getattr(np, name)
    for s1, s2 in SHAPES:
        add(C(fn, Arr(*s1, lo=d1[0], hi=d1[1]), Arr(*s2, lo=d2[0], hi=d2[1]),
              id=f"{s1}x{s2}", cplx=cx and s1 == s2))
    add(C(fn, Arr(lo=d1[0], hi=d1[1], scalar=True), Arr(3, lo=d2[0], hi=d2[1]), id="pyfloat",
          f32=False))
add(C(np.power, Arr(3, 4, lo=0.5, hi=2), 3.0, id="const-exp"))
add(C(np.power, Arr(3, lo=0.5, hi=2), 2, id="int-exp"))
add(C(np.ldexp, Arr(3, 4), np.arange(4), id="ldexp"))


def with_nan(rng, cplx=False):
    a = rng.uniform(-1, 1, (6,))
    b = rng.uniform(-1, 1, (6,))
    b[[1, 4]] = np.nan
    return (a, b), {}


add(Case(np.fmax, with_nan, id="nan", wrt=("x1",)))
add(Case(np.fmin, with_nan, id="nan", wrt=("x1",)))

add(C(np.where, Arr(3, 4).__class__(3, 4, f=lambda x: x > 0, cplx_ok=False), Arr(3, 4), Arr(4),
      id="bcast", cplx=True))
add(C(np.where, Arr(3, 1, f=lambda x: x > 0, cplx_ok=False), Arr(3, 4), 0.0, id="const"))
add(C(np.clip, Arr(3, 4, lo=-2, hi=2), -0.5, 0.7, id="const"))
add(C(np.clip, Arr(3, 4, lo=-2, hi=2), Arr(4, lo=-1, hi=-0.2), Arr(3, 1, lo=0.2, hi=1),
      id="active-bounds"))
add(C(np.clip, Arr(3, 4, lo=-2, hi=2), None, 0.5, id="hi-only"))
add(C(np.clip, Arr(3, 4, lo=-2, hi=2), kw={"min": -0.3, "max": 0.4}, id="kw-min-max"))

# -- reductions ------------------------------------------------------------------------------------
AXES = [None, 0, 1, -1, (0, 2), (0, 1, 2)]
for fn, lo, cx in [(np.sum, -1, True), (np.mean, -1, True), (np.prod, 0.5, True),
                   (np.max, -1, False), (np.min, -1, False), (np.amax, -1, False),
                   (np.amin, -1, False), (np.var, -1, True), (np.std, -1, True)]:
    for ax in AXES:
        for kd in (False, True):
            add(C(fn, Arr(2, 3, 4, lo=lo, hi=1), kw={"axis": ax, "keepdims": kd},
                  id=f"ax{ax}-kd{kd}", cplx=cx and kd))
    add(C(fn, Arr(5, lo=lo, hi=1), id="1d"))
for fn in (np.var, np.std):
    add(C(fn, Arr(3, 5), kw={"axis": 1, "ddof": 1}, id="ddof1", cplx=True))
    add(C(fn, Arr(3, 5), kw={"correction": 2}, id="correction2"))
add(C(np.sum, Lst(Arr(scalar=True), Arr(scalar=True)), id="list"))


def prod_zeros(rng, cplx=False):
    a = rng.uniform(-1, 1, (3, 4))
    a[0, 1] = 0.0
    a[1, 1] = a[1, 2] = 0.0
    return (a,), {"axis": 1}


add(Case(np.prod, prod_zeros, id="zeros"))
# a zero-length axis: the product is 1 there (an empty gradient; a crash before)
for shp, ax in (((3, 0), 1), ((0, 3), 0), ((0, 3), 1), ((3, 0), None), ((2, 0, 3), (1, 2))):
    add(C(np.prod, Arr(*shp), kw={"axis": ax}, id=f"empty{shp}-ax{ax}", cplx=True))


for fn in (np.cumsum, np.cumprod):
    for ax in (None, 0, 1, -1):
        add(C(fn, Arr(3, 4, lo=0.5 if fn is np.cumprod else -1, hi=1.5), kw={"axis": ax},
              id=f"ax{ax}", cplx=True))


def cumprod_zeros(rng, cplx=False):
    a = rng.uniform(0.5, 1.5, (3, 5))
    a[0, 2] = 0.0
    a[2, 0] = a[2, 3] = 0.0
    return (a,), {"axis": 1}


add(Case(np.cumprod, cumprod_zeros, id="zeros"))
# the array API's cumulative_sum / cumulative_prod, include_initial=True (refused before)
for fn in (np.cumulative_sum, np.cumulative_prod):
    lo = 0.5 if fn is np.cumulative_prod else -1
    for init in (False, True):
        add(C(fn, Arr(5, lo=lo, hi=1.5), kw={"include_initial": init}, id=f"1d-init{init}",
              cplx=True))
        for ax in (0, 1, -1):
            add(C(fn, Arr(3, 4, lo=lo, hi=1.5), kw={"axis": ax, "include_initial": init},
                  id=f"ax{ax}-init{init}", cplx=True))

# ufunc methods (axis=0 by default)
for u in (np.add, np.multiply, np.maximum, np.minimum):
    pos = dict(lo=0.5, hi=1.5) if u is np.multiply else {}
    for ax in (0, 1, None, (0, 1)):
        add(C(u.reduce, Arr(3, 4, **pos), kw={"axis": ax} if ax != 0 else {},
              id=f"{u.__name__}-ax{ax}", cplx=u in (np.add, np.multiply)))
    add(C(u.reduce, Arr(3, 4, **pos), kw={"axis": 1, "keepdims": True}, id=f"{u.__name__}-keep"))
    for ax in (0, 1, -1):
        add(C(u.accumulate, Arr(3, 4, **pos), kw={"axis": ax} if ax != 0 else {},
              id=f"{u.__name__}-ax{ax}", cplx=u in (np.add, np.multiply)))
add(C(np.add.reduce, Arr(3, 4), kw={"initial": Arr(scalar=True)}, id="add-initial"))
add(C(np.maximum.accumulate, Arr(7, f=lambda x: np.round(4 * x) / 4), id="maximum-ties"))
for u in (np.add, np.subtract, np.multiply, np.divide):
    for s1, s2 in [((3,), (4,)), ((2, 3), (4,)), ((), (2, 3)), ((3,), ())]:
        lo = dict(lo=0.5, hi=1.5) if u is np.divide else {}
        add(C(u.outer, Arr(*s1, scalar=not s1), Arr(*s2, scalar=not s2, **lo),
              id=f"{u.__name__}-{s1}.{s2}", cplx=True))
add(C(np.select, Lst(Arr(3, 4, f=lambda x: x > 0.3, cplx_ok=False),
                     Arr(3, 4, f=lambda x: x < -0.3, cplx_ok=False)),
      Lst(Arr(3, 4), Arr(4)), Arr(3, 4), id="two", cplx=True))
add(C(np.select, Lst(Arr(3, 1, f=lambda x: x > 0, cplx_ok=False)), Lst(Arr(3, 4)), id="default0"))
add(C(np.select, Lst(Arr(2, 3, f=lambda x: x > 0, cplx_ok=False)), Lst(Arr(2, 3)),
      Arr(scalar=True), id="scalar-default"))

norm = np.linalg.norm
for ordv in (None, 1, 2, 3, 0.5, np.inf, -np.inf):
    add(C(norm, Arr(6, lo=0.1, hi=1, f=lambda x: x * np.array([1, -1, 1, -1, 1, -1])),
          kw={"ord": ordv}, id=f"vec-ord{ordv}", cplx=ordv in (None, 2, 1, 3)))
    add(C(norm, Arr(3, 4, lo=0.1, hi=1), kw={"ord": ordv, "axis": 1, "keepdims": True},
          id=f"rows-ord{ordv}"))
for ordv in (None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf):
    add(C(norm, Arr(4, 3), kw={"ord": ordv}, id=f"mat-ord{ordv}", cplx=ordv in ("fro", "nuc", 2)))
    add(C(norm, Arr(2, 4, 3), kw={"ord": ordv, "axis": (2, 1)}, id=f"batch-ord{ordv}"))
add(C(norm, Arr(2, 3, 4), id="3d-none", cplx=True))
add(C(norm, Arr(2, 3, 4), kw={"axis": -1}, id="3d-last"))
add(C(np.linalg.vector_norm, Arr(2, 3, 4), kw={"ord": 3}, id="all"))
add(C(np.linalg.vector_norm, Arr(2, 3, 4), kw={"axis": (0, 2), "ord": 2}, id="two-axes"))
add(C(np.linalg.matrix_norm, Arr(2, 3, 4), kw={"ord": "nuc"}, id="nuc"))

# -- linear algebra -------------------------------------------------------------------------------
MATMUL = [((3, 4), (4, 5)), ((4,), (4, 5)), ((3, 4), (4,)), ((4,), (4,)), ((2, 3, 4), (4, 5)),
          ((2, 3, 4), (2, 4, 5)), ((2, 1, 3, 4), (5, 4, 2)), ((4,), (2, 4, 3)), ((2, 3, 4), (4,))]
for fn in (operator.matmul, np.matmul, np.linalg.matmul):
    for s1, s2 in MATMUL:
        add(C(fn, Arr(*s1), Arr(*s2), id=f"{s1}@{s2}", cplx=True))
DOT = [((3, 4), (4, 5)), ((4,), (4,)), ((4,), (4, 2)), ((3, 4), (4,)), ((), (3, 4)), ((3,), ()),
       ((2, 3, 4), (4, 5)), ((2, 3, 4), (5, 4, 2)), ((3, 4), (2, 4, 5)), ((2, 3, 4), (4,))]
for s1, s2 in DOT:
    add(C(np.dot, Arr(*s1), Arr(*s2), id=f"{s1}.{s2}", cplx=True))
    add(C("dot", Arr(*s1), Arr(*s2), id=f"{s1}.{s2}") if s1 else None)
for s1, s2 in [((3,), (3,)), ((2, 3), (3,)), ((2, 3), (4, 3)), ((2, 2, 3), (3,)), ((), (2, 3))]:
    add(C(np.inner, Arr(*s1), Arr(*s2), id=f"{s1}.{s2}", cplx=True))
for s1, s2 in [((3,), (4,)), ((2, 3), (4,))]:
    add(C(np.outer, Arr(*s1), Arr(*s2), id=f"{s1}.{s2}", cplx=True))
    add(C(np.linalg.outer, Arr(s1[-1]), Arr(*s2), id=f"{s1}.{s2}", cplx=True))
add(C(np.vdot, Arr(2, 3), Arr(6), id="2x3.6", cplx=True))
add(C(np.vecdot, Arr(2, 3, 4), Arr(3, 4), id="last", cplx=True))
add(C(np.vecdot, Arr(4, 3), Arr(4, 1), kw={"axis": 0}, id="axis0", cplx=True))
for sa, sb, axes in [((3, 4, 2), (4, 2, 3), 2), ((3, 4, 2), (2, 5), 1), ((3, 2), (4,), 0),
                     ((3, 4, 2), (4, 3, 5), ([1, 0], [0, 1])), ((3, 4, 2), (2, 5), ([2], [0])),
                     ((3, 4, 2), (2, 4, 5), ([-1, 1], [0, 1])), ((3, 4, 2), (4, 5, 3), ([0, 1], [2, 0]))]:
    add(C(np.tensordot, Arr(*sa), Arr(*sb), kw={"axes": axes}, id=f"axes{axes}", cplx=True))
for subs, shapes in [("ij,jk->ik", [(3, 4), (4, 5)]), ("ij,jk", [(3, 4), (4, 5)]),
                     ("ii->i", [(4, 4)]), ("ii", [(4, 4)]), ("ij->", [(3, 4)]),
                     ("ij,ij->ij", [(3, 4), (3, 4)]), ("i,j->ij", [(3,), (4,)]),
                     ("...ij,...jk->...ik", [(2, 3, 4), (2, 4, 5)]),
                     ("bij,jk->bik", [(2, 3, 4), (4, 5)]), ("ij,j->i", [(3, 4), (4,)]),
                     ("iij,jk->ik", [(3, 3, 4), (4, 2)]), ("ijk->kj", [(2, 3, 4)]),
                     ("i,i,i->", [(4,), (4,), (4,)]), ("ab,b...->a...", [(2, 3), (3, 4, 5)])]:
    add(C(np.einsum, subs, *[Arr(*s) for s in shapes], id=subs, cplx=True,
          wrt=("operands",)))
add(C(np.kron, Arr(2, 3), Arr(3, 2), id="2d", cplx=True))
add(C(np.kron, Arr(3), Arr(2, 2), id="1d-2d"))
add(C(np.kron, Arr(2, 2, 2), Arr(3, 1), id="3d-2d"))
for args in [(0, 0, 1), (1, 0, 1), (-1, 0, 1), (0, 1, 2), (1, -1, 0)]:
    add(C(np.trace, Arr(3, 4, 4), *args, id=f"{args}", cplx=True))
    add(C(np.diagonal, Arr(3, 4, 4), *args, id=f"{args}", cplx=True))
add(C(np.linalg.trace, Arr(2, 3, 3), id="batch"))
add(C(np.linalg.diagonal, Arr(2, 3, 4), kw={"offset": 1}, id="batch"))
for k in (0, 1, -2):
    add(C(np.diag, Arr(4), k, id=f"vec-k{k}", cplx=True))
    add(C(np.diag, Arr(3, 4), k, id=f"mat-k{k}", cplx=True))
    add(C(np.triu, Arr(3, 4), k, id=f"k{k}"))
    add(C(np.tril, Arr(2, 3, 4), k, id=f"k{k}"))
add(C(np.triu, Arr(4), id="1d"))
add(C(np.linalg.inv, Arr(4, 4, f=wellcond), id="4x4", cplx=True))
add(C(np.linalg.inv, Arr(2, 3, 3, f=wellcond), id="batch"))
add(C(np.linalg.det, Arr(3, 3, f=wellcond), id="3x3", cplx=True))
add(C(np.linalg.det, Arr(2, 3, 3, f=wellcond), id="batch"))
add(C(np.linalg.slogdet, Arr(3, 3, f=lambda x: x - 3 * np.eye(3)), id="3x3", cplx=True))
add(C(np.linalg.slogdet, Arr(2, 3, 3, f=wellcond), id="batch"))
add(C(np.linalg.solve, Arr(3, 3, f=wellcond), Arr(3), id="vec", cplx=True))
add(C(np.linalg.solve, Arr(3, 3, f=wellcond), Arr(3, 2), id="mat", cplx=True))
add(C(np.linalg.solve, Arr(2, 3, 3, f=wellcond), Arr(3, 2), id="batch-bcast"))
add(C(np.linalg.cholesky, Arr(4, 4, f=spd), id="4x4", cplx=True, rtol=1e-5))
add(C(np.linalg.cholesky, Arr(4, 4, f=spd), kw={"upper": True}, id="upper", cplx=True,
      rtol=1e-5))
add(C(np.linalg.cholesky, Arr(2, 3, 3, f=spd), id="batch", rtol=1e-5))


def fix_vec_sign(res):
    w, v = res
    s = np.sign(np.take_along_axis(v, np.abs(v).argmax(axis=-2)[..., None, :], axis=-2))
    return type(res)(w, v * s)


add(C(np.linalg.eigh, Arr(4, 4, f=lambda x: x + 2 * np.diag(np.arange(4))), id="4x4",
      post=fix_vec_sign, cplx=False, rtol=1e-5))
add(C(np.linalg.eigh, Arr(4, 4, f=lambda x: x + 2 * np.diag(np.arange(4))), "U", id="upper",
      post=fix_vec_sign, rtol=1e-5))
add(C(np.linalg.eigh, Arr(2, 3, 3, f=lambda x: x + 2 * np.diag(np.arange(3))), id="batch",
      post=fix_vec_sign, rtol=1e-5))
add(C(np.linalg.eigvalsh, Arr(4, 4), id="4x4", cplx=True, rtol=1e-5))
for shp in [(4, 3), (3, 3), (3, 5), (2, 4, 3)]:
    add(C(np.linalg.qr, Arr(*shp), id=f"{shp}", cplx=True, rtol=1e-5))
add(C(np.linalg.qr, Arr(4, 3), "r", id="r", cplx=True, rtol=1e-5))
add(C(np.linalg.qr, Arr(3, 5), "complete", id="complete-wide", rtol=1e-5))


def fix_svd_sign(res):
    u, s, vh = res
    sg = np.sign(np.take_along_axis(u, np.abs(u).argmax(axis=-2)[..., None, :], axis=-2))
    return type(res)(u * sg, s, vh * np.swapaxes(sg, -1, -2))


for shp in [(4, 3), (3, 3), (3, 5), (2, 4, 3)]:
    add(C(np.linalg.svd, Arr(*shp), kw={"full_matrices": False}, id=f"{shp}",
          post=fix_svd_sign, rtol=1e-5))
    add(C(np.linalg.svd, Arr(*shp), kw={"compute_uv": False}, id=f"{shp}-s", cplx=True,
          rtol=1e-5))
add(C(np.linalg.svd, Arr(3, 3), id="full-square", post=fix_svd_sign, rtol=1e-5))
add(C(np.linalg.svdvals, Arr(2, 4, 3), id="batch", rtol=1e-5))

# -- shape functions ------------------------------------------------------------------------------
add(C(np.reshape, Arr(3, 4), (2, 6), id="2x6", cplx=True))
add(C(np.reshape, Arr(3, 4), (4, -1), id="F", kw={"order": "F"}))
add(C(np.reshape, Arr(3, 4), kw={"shape": (12,)}, id="kw"))
add(C(np.ravel, Arr(3, 4), id="C"))
add(C(np.ravel, Arr(3, 4), "F", id="F"))
add(C(np.squeeze, Arr(3, 1, 4, 1), id="all"))
add(C(np.squeeze, Arr(3, 1, 4, 1), 1, id="ax1"))
add(C(np.expand_dims, Arr(3, 4), (0, 2), id="two"))
add(C(np.broadcast_to, Arr(3, 1), (2, 3, 4), id="bcast"))
add(C(np.atleast_1d, Arr(scalar=True), id="scalar", f32=False))
add(C(np.atleast_2d, Arr(3), id="1d"))
add(C(np.atleast_3d, Arr(3), Arr(2, 2), id="two"))
add(C(np.tile, Arr(2, 3), (2, 1, 2), id="more-reps"))
add(C(np.tile, Arr(2, 3, 2), 2, id="int"))
add(C(np.repeat, Arr(2, 3), 2, id="flat"))
add(C(np.repeat, Arr(2, 3), 3, 1, id="ax1"))
add(C(np.repeat, Arr(2, 3), [1, 0, 2], 1, id="counts"))
add(C(np.flip, Arr(2, 3, 4), id="all"))
add(C(np.flip, Arr(2, 3, 4), (0, 2), id="axes"))
add(C(np.fliplr, Arr(2, 3), id=""))
add(C(np.flipud, Arr(2, 3), id=""))
add(C(np.roll, Arr(2, 5), 2, id="flat"))
add(C(np.roll, Arr(2, 5), (1, -2), (0, 1), id="axes"))
add(C(np.rot90, Arr(2, 3), id="k1"))
add(C(np.rot90, Arr(2, 3, 4), 3, (2, 0), id="k3"))
for mode in ("constant", "edge", "reflect", "symmetric", "wrap"):
    add(C(np.pad, Arr(3, 4), ((1, 2), (2, 3)), mode, id=mode))
add(C(np.pad, Arr(4), 2, id="int"))
# pad_width as a dict {axis: width or (before, after)} (NumPy 2.3+; a crash before)
if np.lib.NumpyVersion(np.__version__) >= "2.3.0":
    add(C(np.pad, Arr(3, 4), {0: (1, 2)}, id="dict", cplx=True))
    add(C(np.pad, Arr(3, 4), {-1: 2}, "reflect", id="dict-neg-reflect"))
    add(C(np.pad, Arr(3, 4), {0: (3, 0), 1: 2}, "wrap", id="dict-both-wrap"))
    add(C(np.pad, Arr(2, 3, 4), {1: (1, 1)}, "mean", id="dict-mean"))
add(C(np.split, Arr(6, 4), 3, id="sections"))
add(C(np.split, Arr(6, 4), [1, 3], 1, id="indices"))
add(C(np.array_split, Arr(7, 2), 3, id="uneven"))
add(C(np.hsplit, Arr(2, 6), 2, id=""))
add(C(np.vsplit, Arr(4, 3), [1], id=""))
add(C(np.dsplit, Arr(2, 2, 4), 2, id=""))
add(C(np.take, Arr(3, 4), np.array([0, 2, 2, 5, -1]), id="flat"))
add(C(np.take, Arr(3, 4), np.array([[0, 2], [3, 3]]), 1, id="ax1"))
add(C(np.take, Arr(3, 4), np.array([0, 5]), 0, kw={"mode": "clip"}, id="clip"))
add(C(np.take_along_axis, Arr(3, 4), np.array([[0, 1, 1], [3, 3, 0], [2, 1, 0]]), 1, id="ax1"))
add(C(np.take_along_axis, Arr(3, 4), np.array([[0, 2, 1, 1]]), 0, id="ax0"))
add(C(np.take_along_axis, Arr(3, 4), np.array([0, 11, 11]), None, id="none"))
add(C(np.sort, Arr(3, 5), id="last"))
add(C(np.sort, Arr(3, 5), 0, id="ax0"))
add(C(np.sort, Arr(3, 5), None, id="none"))
add(C(np.diff, Arr(3, 5), id="n1"))
add(C(np.diff, Arr(5, 3), 2, 0, id="n2"))
add(C(np.diff, Arr(3, 5), kw={"prepend": Arr(scalar=True)}, id="prepend-number"))
add(C(np.diff, Arr(4, 3), 2, 0, kw={"append": Arr(2, 3)}, id="n2-append-rows"))
add(C(np.diff, Arr(3, 4), 1, 1, kw={"prepend": Arr(3, 2), "append": Arr(scalar=True)},
      id="both"))
add(C(np.copy, Arr(3, 2), id=""))
add(C(np.array, Lst(Arr(scalar=True), Arr(scalar=True), 2.0), id="list", cplx=True))
add(C(np.array, Lst(Lst(Arr(scalar=True), Arr(scalar=True)), Lst(Arr(scalar=True), 1.0)),
      id="nested"))
add(C(np.array, Arr(2, 3), id="array"))
add(C(np.asarray, Lst(Arr(3), Arr(3), tuple_=True), id="tuple-of-arrays"))
add(C(np.broadcast_arrays, Arr(3, 1), Arr(4), id=""))
add(C(np.meshgrid, Arr(3), Arr(4), id="xy"))
add(C(np.meshgrid, Arr(3), Arr(4), Arr(2), kw={"indexing": "ij"}, id="ij"))
add(C(np.linspace, Arr(scalar=True), Arr(scalar=True), 7, id="scalars", f32=False))
add(C(np.linspace, Arr(scalar=True), Arr(scalar=True), 5, False, id="no-endpoint", f32=False))
add(C(np.linspace, Arr(3), Arr(3), 4, kw={"axis": 1}, id="arrays-axis1"))

# concat family
add(C(np.concatenate, Lst(Arr(2, 3), Arr(4, 3)), id="ax0", cplx=True))
add(C(np.concatenate, Lst(Arr(2, 3), Arr(2, 1), Arr(2, 2)), 1, id="ax1"))
add(C(np.concatenate, Lst(Arr(2, 3), Arr(5)), None, id="none"))
add(C(np.concatenate, Lst(Arr(2, 3), np.ones((1, 3), dtype=int)), id="int-input"))
add(C(np.concat, Lst(Arr(2, 3), Arr(2, 3), tuple_=True), kw={"axis": -1}, id="tuple"))
add(C(np.stack, Lst(Arr(2, 3), Arr(2, 3)), id="ax0"))
add(C(np.stack, Lst(Arr(2, 3), Arr(2, 3), Arr(2, 3)), -1, id="ax-1"))
add(C(np.vstack, Lst(Arr(3), Arr(2, 3)), id=""))
add(C(np.hstack, Lst(Arr(3), Arr(2)), id="1d"))
add(C(np.hstack, Lst(Arr(2, 3), Arr(2, 1)), id="2d"))
add(C(np.dstack, Lst(Arr(3), Arr(3)), id="1d"))
add(C(np.dstack, Lst(Arr(2, 3), Arr(2, 3, 2)), id="2d3d"))
add(C(np.column_stack, Lst(Arr(3), Arr(3, 2)), id=""))
add(C(np.append, Arr(2, 3), Arr(4), id="flat"))
add(C(np.append, Arr(2, 3), Arr(1, 3), 0, id="ax0"))
add(C(np.insert, Arr(5), 2, Arr(scalar=True), id="scalar"))
add(C(np.insert, Arr(5), [0, 3, 3], Arr(3), id="several"))
add(C(np.insert, Arr(2, 3), 1, Arr(scalar=True), id="flat-broadcast"))
add(C(np.insert, Arr(2, 3), [2, 0], Arr(2, 2), 1, id="ax1-columns"))
add(C(np.insert, Arr(3, 2), slice(0, 3, 2), Arr(2), 0, id="slice-rows"))
add(C(np.insert, Arr(4), -1, Arr(2), id="negative"))
add(C(np.delete, Arr(5), 1, id="one"))
add(C(np.delete, Arr(5), [0, 3], id="several"))
add(C(np.delete, Arr(3, 4), slice(None, None, 2), 1, id="slice-ax1"))
add(C(np.delete, Arr(3, 4), np.array([True, False, True]), 0, id="mask-ax0"))
add(C(np.delete, Arr(2, 3), -2, id="flat-negative"))
add(C(np.resize, Arr(3), (2, 4), id="repeat"))
add(C(np.resize, Arr(2, 3), 4, id="cut"))
add(C(np.block, Lst(Lst(Arr(2, 2), Arr(2, 3)), Lst(Arr(1, 5))), id="2level"))
add(C(np.block, Lst(Arr(3), Arr(2), Arr(scalar=True)), id="1level", f32=False))
add(C(np.unstack, Arr(3, 4), kw={"axis": 1}, id="ax1"))

# permute family
add(C(np.transpose, Arr(2, 3, 4), id="rev", cplx=True))
add(C(np.transpose, Arr(2, 3, 4), (1, 2, 0), id="perm"))
add(C(np.permute_dims, Arr(2, 3, 4), (2, 0, 1), id="perm"))
add(C(np.moveaxis, Arr(2, 3, 4, 5), 0, -1, id="one"))
add(C(np.moveaxis, Arr(2, 3, 4, 5), (0, 1), (3, 0), id="two"))
add(C(np.swapaxes, Arr(2, 3, 4), 0, 2, id=""))
add(C(np.rollaxis, Arr(2, 3, 4, 5), 3, 1, id="3to1"))
add(C(np.rollaxis, Arr(2, 3, 4, 5), 1, 4, id="1to4"))
add(C(np.matrix_transpose, Arr(2, 3, 4), id=""))

# -- statistics -----------------------------------------------------------------------------------
add(C(np.average, Arr(3, 4), id="plain", cplx=True))
add(C(np.average, Arr(2, 3, 4), kw={"axis": 1, "weights": Arr(3, lo=0.5, hi=1.5)},
      id="ax1-w1d", cplx=True))
add(C(np.average, Arr(2, 3, 4), kw={"axis": (2, 0), "weights": Arr(4, 2, lo=0.5, hi=1.5),
                                    "keepdims": True}, id="axes-w2d-kd"))
add(C(np.average, Arr(3, 4), kw={"weights": Arr(3, 4, lo=0.5, hi=1.5)}, id="full-w"))
add(C(np.average, Arr(3, 4), kw={"axis": -1, "weights": Arr(3, 4, lo=0.5, hi=1.5)},
      id="full-w-ax"))


def with_nans(*shp, lo=-1.0, hi=1.0, at=((0, 1), (1, 3))):
    def make(rng, cplx=False):
        a = rng.uniform(lo, hi, shp)
        for i in at:
            a[i] = np.nan
        return a
    return make


NAN34 = Fn(with_nans(3, 4))
for fn in (np.nansum, np.nanmean, np.nanmax, np.nanmin):
    add(C(fn, NAN34, id="all", f32=fn in (np.nansum, np.nanmean)))
    add(C(fn, NAN34, kw={"axis": 1}, id="ax1"))
    add(C(fn, NAN34, kw={"axis": 0, "keepdims": True}, id="ax0-kd"))
    add(C(fn, Arr(2, 3, 4), kw={"axis": (0, 2)}, id="no-nan-axes"))
for fn in (np.nanvar, np.nanstd):
    add(C(fn, NAN34, id="all", f32=True))
    add(C(fn, NAN34, kw={"axis": 1, "ddof": 1}, id="ax1-ddof1"))
    add(C(fn, NAN34, kw={"axis": 0, "keepdims": True}, id="ax0-kd"))
    add(C(fn, Arr(2, 3, 4), kw={"axis": (0, 2), "correction": 1}, id="no-nan-axes-corr"))
    add(C(fn, Arr(3, 4), kw={"axis": 0}, id="cplx", cplx=True))
add(C(np.nansum, Arr(3, 4), kw={"axis": 1}, id="cplx", cplx=True))
add(C(np.nanmean, Arr(3, 4), kw={"axis": 0}, id="cplx", cplx=True))
for fn in (np.median, np.ptp):
    for ax, kd in [(None, False), (0, False), (1, True), ((0, 2), False), (-1, False)]:
        add(C(fn, Arr(2, 3, 5), kw={"axis": ax, "keepdims": kd}, id=f"ax{ax}-kd{kd}"))
add(C(np.median, Arr(4, 6), kw={"axis": 1}, id="even"))
# q away from the kinks (q (n - 1) an integer), where the derivative in q jumps; 1 and 0 as ints
for fn, qs in ((np.quantile, (0.3, [0.13, 0.47, 0.81], 1, 0)), (np.percentile, (30.0, [10.0, 90.0]))):
    for q in qs:
        add(C(fn, Arr(3, 5), q, id=f"q{q}-flat"))
        add(C(fn, Arr(3, 5), q, kw={"axis": 1}, id=f"q{q}-ax1"))
    add(C(fn, Arr(2, 3, 5), qs[1], kw={"axis": (0, 2), "keepdims": True}, id="axes-kd"))
add(C(np.quantile, Arr(3, 6), Arr(2, lo=0.1, hi=0.9), kw={"axis": 1}, id="q-active",
      wrt=("a", "q")))
add(C(np.percentile, Arr(7), Arr(lo=20, hi=80, scalar=True), id="q-active", f32=False))
for kw in ({}, {"rowvar": False}, {"bias": True}, {"ddof": 2}):
    add(C(np.cov, Arr(3, 6), kw=kw, id=f"m{kw}", cplx=True))
    add(C(np.cov, Arr(2, 6) if kw.get("rowvar", True) else Arr(6, 2), Arr(6),
          kw=kw, id=f"m-y{kw}"))
add(C(np.cov, Arr(7), id="1d"))
add(C(np.cov, Arr(7), Arr(7), id="1d-1d", cplx=True))
add(C(np.cov, Arr(5, 3), Arr(5, 2), kw={"rowvar": False}, id="y2d-cols"))
for kw in ({}, {"rowvar": False}):
    add(C(np.corrcoef, Arr(3, 6), kw=kw, id=f"{kw}", cplx=True))
add(C(np.corrcoef, Arr(6), Arr(6), id="1d-1d"))
add(C(np.corrcoef, Arr(2, 6), Arr(6), id="m-y", cplx=True))

# -- signal processing and polynomials ------------------------------------------------------------
def _cross_takes_2_vectors():
    """NumPy 2.0-2.4 accept 2-vectors in np.cross (deprecated); later versions refuse them."""
    import warnings
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            np.cross(np.ones(2), np.ones(2))
        return True
    except ValueError:
        return False


_CROSS = [((3,), (3,), {}), ((4, 3), (3,), {}),
          ((3, 4), (4, 3), {"axisa": 0, "axisc": 0}), ((2, 3, 5), (5, 3), {"axis": 1})]
if _cross_takes_2_vectors():
    _CROSS += [((2,), (2,), {}), ((4, 2), (4, 3), {}), ((3, 2), (3, 2), {"axisa": -1, "axisb": 1})]
for sa, sb, kw in _CROSS:
    add(C(np.cross, Arr(*sa), Arr(*sb), kw=kw, id=f"{sa}x{sb}{kw}", cplx=True))
for fn in (np.convolve, np.correlate):
    for n, k in [(6, 3), (3, 5), (4, 4), (5, 1)]:
        for mode in ("full", "same", "valid"):
            add(C(fn, Arr(n), Arr(k), mode, id=f"{n},{k}-{mode}", cplx=True))
    add(C(fn, Arr(6), Arr(3), id="default"))
_XP = np.array([-1.0, -0.4, 0.1, 0.5, 1.2])
add(C(np.interp, Arr(7, lo=-1.5, hi=1.5), _XP, Arr(5), id="x-fp", cplx=False,
      wrt=("x", "fp")))
add(C(np.interp, Arr(3, 4, lo=-0.9, hi=1.1), _XP, Arr(5), id="inside-2d"))
add(C(np.interp, Arr(6, lo=-1.5, hi=1.5), _XP, Arr(5), kw={"left": Arr(scalar=True),
                                                           "right": Arr(scalar=True)},
      id="left-right", f32=False))
add(C(np.interp, Arr(lo=-0.9, hi=1.1, scalar=True), _XP, Arr(5), id="scalar-x", f32=False))
add(C(np.interp, Arr(6, lo=-0.9, hi=1.1), Arr(5, f=lambda x: np.sort(x) * 2 + np.arange(5)),
      Arr(5), id="xp-active"))


def _complex_fp(rng, cplx=False):
    return rng.uniform(-1, 1, 5) + 1j * rng.uniform(-1, 1, 5)


add(C(np.interp, Arr(6, lo=-1.5, hi=1.5), _XP, Fn(_complex_fp), id="complex-fp"))
add(C(np.trapezoid, Arr(3, 5), id="default", cplx=True, wrt=("y",)))
add(C(np.trapezoid, Arr(3, 5), kw={"dx": Arr(scalar=True, lo=0.1, hi=1.0), "axis": 0},
      id="dx-ax0", f32=False))
add(C(np.trapezoid, Arr(3, 5), Arr(5, f=lambda x: np.cumsum(np.abs(x) + 0.1)), id="x1d",
      cplx=True, wrt=("y", "x")))
add(C(np.trapezoid, Arr(4, 3), Arr(4, 3, f=lambda x: np.cumsum(np.abs(x) + 0.1, axis=0)),
      kw={"axis": 0}, id="x2d", wrt=("y", "x")))
add(C(np.trapezoid, Arr(2, 4, 3), Arr(4, f=lambda x: np.cumsum(np.abs(x) + 0.1)),
      kw={"axis": 1}, id="x1d-ax1", wrt=("y", "x")))
add(C(np.polyval, Arr(4), Arr(5), id="vec", cplx=True))
add(C(np.polyval, Arr(3), Arr(2, 3), id="mat"))
add(C(np.polyval, Arr(5), Arr(scalar=True), id="scalar-x", f32=False))
add(C(np.polyval, Arr(1), Arr(3), id="const"))
add(C(np.polyval, Lst(Arr(scalar=True), Arr(scalar=True), 2.0), Arr(4), id="list-p", f32=False))


def with_infs(rng, cplx=False):
    a = rng.uniform(-1, 1, (3, 4))
    a[0, 1], a[1, 2], a[2, 0] = np.nan, np.inf, -np.inf
    return a


add(C(np.nan_to_num, NAN34, id="nan", wrt=("x",)))  # default posinf: ~1.8e308 overflows FD sums
add(C(np.nan_to_num, Fn(with_infs), kw={"posinf": 3.0, "neginf": -2.0}, id="nan-inf",
      wrt=("x", "posinf", "neginf")))
add(C(np.nan_to_num, Arr(3, 4), id="finite", cplx=True, wrt=("x",)))
add(C(np.nan_to_num, Fn(with_infs), kw={"nan": 1.0, "posinf": 5.0, "neginf": -4.0},
      id="values"))

# -- more linear algebra --------------------------------------------------------------------------
for shp in [(4, 3), (3, 3), (3, 5), (2, 4, 3)]:
    add(C(np.linalg.pinv, Arr(*shp, f=lambda x: x + 0.5 * np.eye(*x.shape[-2:])), id=f"{shp}",
          cplx=True, rtol=1e-5))
add(C(np.linalg.pinv, Arr(3, 3, f=spd), kw={"hermitian": True}, id="hermitian", rtol=1e-5))
add(C(np.linalg.lstsq, Arr(5, 3), Arr(5), id="vec", cplx=True, rtol=1e-5))
add(C(np.linalg.lstsq, Arr(5, 3), Arr(5, 2), id="mat", cplx=True, rtol=1e-5))
add(C(np.linalg.lstsq, Arr(3, 3, f=wellcond), Arr(3, 2), id="square", rtol=1e-5))
add(C(np.linalg.lstsq, Arr(3, 5), Arr(3), id="wide", rtol=1e-5))
for n in (0, 1, 2, 3, 5, -1, -2):
    add(C(np.linalg.matrix_power, Arr(3, 3, f=wellcond if n < 0 else None), n, id=f"n{n}",
          cplx=True))
add(C(np.linalg.matrix_power, Arr(2, 3, 3, f=wellcond), -3, id="batch-n-3"))
add(C(np.linalg.matrix_power, Arr(2, 3, 3), 4, id="batch-n4"))
for shapes in [[(3, 4), (4, 5)], [(3, 4), (4, 2), (2, 5)], [(4,), (4, 3), (3, 2)],
               [(3, 4), (4, 2), (2,)], [(4,), (4, 3), (3, 2), (2,)]]:
    add(C(np.linalg.multi_dot, Lst(*[Arr(*s) for s in shapes]), id=f"{shapes}", cplx=True))

# -- FFT ------------------------------------------------------------------------------------------
for norm in (None, "ortho", "forward", "backward"):
    for fn in (np.fft.fft, np.fft.ifft):
        add(C(fn, Arr(3, 6), kw={"norm": norm}, id=f"{norm}", cplx=True))
    add(C(np.fft.rfft, Arr(3, 6), kw={"norm": norm}, id=f"even-{norm}"))
    add(C(np.fft.rfft, Arr(7), kw={"norm": norm}, id=f"odd-{norm}"))
    add(C(np.fft.irfft, Arr(3, 4), kw={"norm": norm}, id=f"{norm}", cplx=True))
    add(C(np.fft.irfft, Arr(4), kw={"n": 7, "norm": norm}, id=f"odd-{norm}", cplx=True))
    for fn in (np.fft.fft2, np.fft.ifft2):
        add(C(fn, Arr(2, 3, 4), kw={"norm": norm}, id=f"{norm}", cplx=True))
for fn in (np.fft.fft, np.fft.ifft):
    add(C(fn, Arr(4, 5), kw={"n": 8, "axis": 0}, id="pad-ax0", cplx=True))
    add(C(fn, Arr(6), kw={"n": 4}, id="cut", cplx=True))
add(C(np.fft.rfft, Arr(3, 6), kw={"n": 9, "axis": 1}, id="pad"))
add(C(np.fft.rfft, Arr(6, 2), kw={"n": 4, "axis": 0}, id="cut"))
add(C(np.fft.irfft, Arr(6), kw={"n": 6}, id="cut", cplx=True))
add(C(np.fft.irfft, Arr(3), kw={"n": 10}, id="pad", cplx=True))
add(C(np.fft.fft2, Arr(4, 5), kw={"s": (6, 3)}, id="s", cplx=True))
add(C(np.fft.ifft2, Arr(3, 4, 5), kw={"axes": (0, 2)}, id="axes02", cplx=True))
# fftn/ifftn, fftshift/ifftshift (had no rule: "numpy.fft.fftshift has no Python source and no
# derivative rule")
for norm in (None, "ortho", "forward"):
    for fn in (np.fft.fftn, np.fft.ifftn):
        add(C(fn, Arr(2, 3, 4), kw={"norm": norm}, id=f"{norm}", cplx=True))
for fn in (np.fft.fftn, np.fft.ifftn):
    add(C(fn, Arr(3, 4, 5), kw={"s": (5, 2), "axes": (2, 0)}, id="s-axes", cplx=True))
for fn in (np.fft.fftshift, np.fft.ifftshift):
    add(C(fn, Arr(5), id="odd", cplx=True))
    add(C(fn, Arr(3, 4), id="all", cplx=True))
    add(C(fn, Arr(3, 5), kw={"axes": 1}, id="ax1"))
    add(C(fn, Arr(3, 5, 2), kw={"axes": (0, 1)}, id="ax01", cplx=True))

# -- ndarray methods ------------------------------------------------------------------------------
for name in ("sum", "mean", "prod", "max", "min", "var", "std"):
    for ax, kd in [(None, False), (1, True), ((0, 2), False)]:
        add(C(name, Arr(2, 3, 4, lo=0.5 if name == "prod" else -1, hi=1.5),
              kw={"axis": ax, "keepdims": kd}, id=f"ax{ax}-kd{kd}"))
add(C("var", Arr(3, 4), kw={"ddof": 1}, id="ddof"))
add(C("cumsum", Arr(3, 4), 1, id="ax1"))
add(C("cumprod", Arr(3, 4, lo=0.5, hi=1.5), id="flat"))
add(C("reshape", Arr(3, 4), 2, 6, id="varargs"))
add(C("reshape", Arr(3, 4), (6, 2), id="tuple"))
add(C("reshape", Arr(3, 4), (6, 2), kw={"order": "F"}, id="F"))
add(C("ravel", Arr(3, 4), id=""))
add(C("flatten", Arr(3, 4), "F", id="F"))
add(C("squeeze", Arr(3, 1), id=""))
add(C("transpose", Arr(2, 3, 4), id="rev"))
add(C("transpose", Arr(2, 3, 4), 1, 0, 2, id="varargs"))
add(C("transpose", Arr(2, 3, 4), (2, 0, 1), id="tuple"))
add(C("swapaxes", Arr(2, 3, 4), 0, 1, id=""))
add(C("copy", Arr(3), id=""))
add(C("conj", Arr(3), id="", cplx=True))
add(C("clip", Arr(3, 4), -0.5, 0.5, id=""))
add(C("astype", Arr(3, 4), np.float32, id="f32", rtol=1e-2, eps=1e-3, f32=False))
add(C("astype", Arr(3, 4), np.complex128, id="to-complex"))
add(C("item", Arr(3, 4), 5, id="flat-index"))
add(C("item", Arr(3, 4), 1, 2, id="2d-index"))
add(C("item", Arr(1), id="single"))
add(C("repeat", Arr(3), 2, id=""))
add(C("take", Arr(3, 4), [1, 1], 1, id=""))
add(C("diagonal", Arr(3, 3), id=""))
add(C("trace", Arr(3, 3), id=""))

CASES = [c for c in CASES if c is not None]
