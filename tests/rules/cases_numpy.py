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


def _gen(spec, rng, cplx):
    if isinstance(spec, (Arr, Lst)):
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
