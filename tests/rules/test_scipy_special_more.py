"""scipy.special rules of issue 15 (part 2): each rule's adjoint and tangent templates against
central differences (float64, complex where SciPy takes it, float32 in -> float32 out), the same
functions end to end through ``s2sad.testing.check_grads`` in both modes, the incomplete gamma and
beta functions' shape derivatives against high-precision differences, and refusals of orders that
carry a derivative."""
import numpy as np
import pytest

sp = pytest.importorskip("scipy.special")

import s2sad  # noqa: E402
from s2sad.errors import S2SADError  # noqa: E402
from s2sad.testing import check_grads  # noqa: E402
from cases_numpy import Arr, C  # noqa: E402
from rulecheck import rule_params, run_rule, run_tangent, tangent_params  # noqa: E402

CASES = []
add = CASES.append

# unary: (name, lo, hi, complex-capable)
UNARY = [("erfcx", -1, 2, True), ("rgamma", 0.3, 4, True), ("exp1", 0.2, 3, True),
         ("expi", 0.2, 3, True), ("j0", -3, 3, False), ("j1", -3, 3, False), ("y0", 0.3, 4, False),
         ("y1", 0.3, 4, False), ("k0", 0.3, 4, False), ("k0e", 0.3, 4, False),
         ("k1", 0.3, 4, False), ("k1e", 0.3, 4, False)]
for name, lo, hi, cx in UNARY:
    fn = getattr(sp, name)
    add(C(fn, Arr(3, 4, lo=lo, hi=hi), id="3x4", cplx=cx))
    add(C(fn, Arr(lo=lo, hi=hi, scalar=True), id="pyfloat", f32=False))
add(C(sp.rgamma, Arr(3, lo=-2.9, hi=-0.1), id="negative"))
# Bessel functions of real order, derivative in x (the order is a constant)
for name, order, lo, hi, cx in [("jv", 1.5, 0.3, 3, True), ("yv", 0.7, 0.3, 4, True),
                                ("iv", 2.5, 0.3, 3, True), ("ive", 0.5, 0.3, 3, True),
                                ("jv", 2.0, -3, 3, True), ("iv", 1.0, -3, 3, True),
                                ("ive", 3.0, -3, 3, True),
                                ("kv", 1.2, 0.3, 4, True), ("kve", 0.4, 0.3, 4, True)]:
    fn = getattr(sp, name)
    add(C(fn, order, Arr(3, 4, lo=lo, hi=hi), id=f"v{order}", cplx=cx))
    if lo > 0:
        add(C(fn, Arr(4, lo=0.2, hi=2.5, cplx_ok=False), Arr(3, 4, lo=lo, hi=hi),
              id=f"bcast-order{order}", wrt=("x",)))
add(C(sp.yn, 2, Arr(3, 4, lo=0.5, hi=4), id="n2"))
add(C(sp.yn, -1, Arr(3, lo=0.5, hi=4), id="n-1"))
for n in (0, 1, 3):
    add(C(sp.expn, n, Arr(3, 4, lo=0.2, hi=3), id=f"n{n}"))
# the gamma and beta families
add(C(sp.beta, Arr(3, 4, lo=0.3, hi=4), Arr(4, lo=0.3, hi=4), id="bcast"))
add(C(sp.betaln, Arr(3, 4, lo=0.3, hi=4), Arr(4, lo=0.3, hi=4), id="bcast"))
add(C(sp.beta, Arr(lo=0.3, hi=4, scalar=True), Arr(lo=0.3, hi=4, scalar=True), id="pyfloat",
      f32=False))
add(C(sp.betainc, Arr(3, 4, lo=0.3, hi=6), Arr(4, lo=0.3, hi=6), Arr(3, 1, lo=0.05, hi=0.95),
      id="bcast", rtol=1e-5))
add(C(sp.betainc, Arr(lo=0.3, hi=6, scalar=True), Arr(lo=0.3, hi=6, scalar=True),
      Arr(lo=0.05, hi=0.95, scalar=True), id="pyfloat", f32=False, rtol=1e-5))
if hasattr(sp, "betaincc"):
    add(C(sp.betaincc, Arr(5, lo=0.3, hi=6), Arr(5, lo=0.3, hi=6), Arr(5, lo=0.05, hi=0.95),
          id="", rtol=1e-5))
for fn in (sp.gammainc, sp.gammaincc):
    add(C(fn, Arr(3, 4, lo=0.2, hi=12), Arr(4, lo=0.05, hi=15), id="bcast", rtol=1e-5))
    add(C(fn, Arr(lo=0.2, hi=5, scalar=True), Arr(lo=0.05, hi=8, scalar=True), id="pyfloat",
          f32=False, rtol=1e-5))
add(C(sp.multigammaln, Arr(3, 4, lo=2, hi=5), 3, id="d3"))
add(C(sp.multigammaln, Arr(lo=2, hi=5, scalar=True), 2, id="pyfloat", f32=False))
# relative entropies
add(C(sp.rel_entr, Arr(3, 4, lo=0.2, hi=2), Arr(4, lo=0.2, hi=2), id="bcast"))
add(C(sp.kl_div, Arr(3, 4, lo=0.2, hi=2), Arr(4, lo=0.2, hi=2), id="bcast"))
# logsumexp: b=, axis=, keepdims=, return_sign=, complex
for ax, kd in [(None, False), (1, False), (0, True), ((0, 2), False)]:
    add(C(sp.logsumexp, Arr(2, 3, 4, lo=-2, hi=2), kw={"axis": ax, "keepdims": kd,
                                                       "return_sign": True},
          id=f"sign-ax{ax}-kd{kd}", cplx=True))
add(C(sp.logsumexp, Arr(3, 4, lo=-2, hi=2), kw={"axis": 1, "b": Arr(4, lo=-2, hi=-0.5),
                                                "return_sign": True}, id="sign-negb", cplx=True))
add(C(sp.logsumexp, Arr(3, 4, lo=-2, hi=2), kw={"axis": 0, "b": Arr(3, 1, lo=0.5, hi=2)},
      id="b-col", cplx=True))
add(C(sp.logsumexp, Arr(3, 4, lo=-2, hi=2), id="complex", cplx=True))


@pytest.mark.parametrize("case,dtype", rule_params(CASES))
def test_rule(case, dtype):
    run_rule(case, dtype)


@pytest.mark.parametrize("case,dtype", tangent_params(CASES))
def test_tangent(case, dtype):
    run_tangent(case, dtype)


def test_every_function_of_the_issue_has_a_rule():
    from s2sad.rules import lookup
    names = """gammaln digamma polygamma beta betaln betainc gammainc gammaincc rgamma gammasgn
        multigammaln erf erfc erfinv erfcinv erfcx ndtr log_ndtr ndtri xlogy xlog1py entr rel_entr
        kl_div logit expit log_expit softmax log_softmax logsumexp j0 j1 jv y0 y1 yv yn i0 i0e i1
        i1e iv ive k0 k0e k1 k1e kv kve expn exp1 expi sinc""".split()
    missing = [n for n in names if lookup(getattr(sp, n)) is None]
    assert not missing, missing
    assert lookup(sp.gammasgn).zero


# -- end to end, both modes ---------------------------------------------------------------------
def _e2e(fn, consts, nargs):
    """f(*active) = sum of fn(*consts, *active): the constants are closure values."""
    if consts:
        (c,) = consts
        if nargs == 1:
            def f(x):
                return np.sum(fn(c, x))
            return f
        raise AssertionError(nargs)
    if nargs == 1:
        def f(x):
            return np.sum(fn(x))
    elif nargs == 2:
        def f(x, y):
            return np.sum(fn(x, y))
    else:
        def f(x, y, z):
            return np.sum(fn(x, y, z))
    return f


_RNG = np.random.default_rng(7)
E2E = [(getattr(sp, n), (), (_RNG.uniform(lo, hi, 5),)) for n, lo, hi, _ in UNARY] + [
    (sp.jv, (1.5,), (_RNG.uniform(0.3, 3, 5),)), (sp.jv, (2.0,), (_RNG.uniform(-3, 3, 5),)),
    (sp.yv, (0.7,), (_RNG.uniform(0.3, 4, 5),)),
    (sp.yn, (2,), (_RNG.uniform(0.5, 4, 5),)), (sp.iv, (2.5,), (_RNG.uniform(0.3, 3, 5),)),
    (sp.ive, (0.5,), (_RNG.uniform(0.3, 3, 5),)), (sp.ive, (1.0,), (_RNG.uniform(-3, 3, 5),)),
    (sp.kv, (1.2,), (_RNG.uniform(0.3, 4, 5),)),
    (sp.kve, (0.4,), (_RNG.uniform(0.3, 4, 5),)), (sp.expn, (2,), (_RNG.uniform(0.2, 3, 5),)),
    (sp.beta, (), (_RNG.uniform(0.3, 4, 5), _RNG.uniform(0.3, 4, 5))),
    (sp.betaln, (), (_RNG.uniform(0.3, 4, 5), _RNG.uniform(0.3, 4, 5))),
    (sp.betainc, (), (_RNG.uniform(0.3, 6, 5), _RNG.uniform(0.3, 6, 5),
                      _RNG.uniform(0.05, .95, 5))),
    (sp.gammainc, (), (_RNG.uniform(0.2, 12, 5), _RNG.uniform(0.05, 15, 5))),
    (sp.gammaincc, (), (_RNG.uniform(0.2, 12, 5), _RNG.uniform(0.05, 15, 5))),
    (sp.rel_entr, (), (_RNG.uniform(0.2, 2, 5), _RNG.uniform(0.2, 2, 5))),
    (sp.kl_div, (), (_RNG.uniform(0.2, 2, 5), _RNG.uniform(0.2, 2, 5))),
]


@pytest.mark.parametrize("fn,consts,args", E2E, ids=[e[0].__name__ for e in E2E])
def test_end_to_end(fn, consts, args):
    f = _e2e(fn, consts, len(args))
    check_grads(f, args, modes=("rev", "fwd"), rtol=1e-5)
    g = s2sad.grad(f, wrt=tuple(range(len(args))))(*[a.astype(np.float32) for a in args])
    g = g if isinstance(g, tuple) else (g,)
    assert all(gi.dtype == np.float32 for gi in g), [gi.dtype for gi in g]


def test_multigammaln_end_to_end():
    def f(a):
        return np.sum(sp.multigammaln(a, 3))
    check_grads(f, (np.array([2.5, 3.0, 4.2]),), modes=("rev", "fwd"))


def lse_sign(a, b):
    r, s = sp.logsumexp(a, axis=1, b=b, return_sign=True)
    return np.sum(r * s)


def lse_keep(a):
    return np.sum(sp.logsumexp(a, axis=(0, 2), keepdims=True) ** 2)


def lse_complex(a):
    r = sp.logsumexp(a, axis=0)
    return np.sum(r.real * r.imag)


def lse_complex_sign(a):
    r, s = sp.logsumexp(a, axis=0, return_sign=True)
    return np.sum(r * s.real + s.imag)


def test_logsumexp_end_to_end():
    rng = np.random.default_rng(3)
    check_grads(lse_sign, (rng.standard_normal((3, 4)), rng.standard_normal(4)),
                modes=("rev", "fwd"))
    check_grads(lse_keep, (rng.standard_normal((2, 3, 4)),), modes=("rev", "fwd"))
    z = rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))
    check_grads(lse_complex, (z,), modes=("rev", "fwd"))
    check_grads(lse_complex_sign, (z,), modes=("rev", "fwd"))


# -- shape derivatives of the incomplete functions against high-precision differences ------------
def _richardson(f, x0, h=1e-3):
    """f'(x0) by central differences extrapolated (Richardson, 4 levels): ~1e-12 for smooth f."""
    table = []
    for k in range(5):
        hk = h / 2 ** k
        table.append([(f(x0 + hk) - f(x0 - hk)) / (2 * hk)])
    for j in range(1, 5):
        for k in range(j, 5):
            prev, coarse = table[k][j - 1], table[k - 1][j - 1]
            table[k].append(prev + (prev - coarse) / (4 ** j - 1))
    return table[-1][-1]


GAMMA_POINTS = [(0.1, 0.01), (0.5, 0.3), (1.0, 2.0), (2.5, 2.5), (10.0, 15.0), (100.0, 90.0),
                (0.5, 20.0), (3.0, 0.2), (30.0, 30.5), (1000.0, 1010.0), (0.005, 7.9), (5.0, 8.1)]
BETA_POINTS = [(0.1, 0.3, 0.2), (0.5, 0.5, 0.5), (2.0, 3.0, 0.9), (5.0, 1.0, 0.3),
               (50.0, 60.0, 0.45), (0.5, 7.0, 0.01), (3.0, 0.2, 0.99), (200.0, 150.0, 0.57),
               (1.0, 1.0, 0.3), (0.05, 268.0, 1e-4), (368.0, 0.015, 0.9999)]


@pytest.mark.parametrize("a,x", GAMMA_POINTS)
def test_gammainc_da_accuracy(a, x):
    from s2sad.rules import adjoints as A
    got = A.gammainc_da(np.array([a]), np.array([x]))[0]
    ref = _richardson(lambda t: sp.gammainc(t, x), a, h=min(1e-2, a / 4))
    assert abs(got - ref) <= 1e-7 * abs(ref) + 1e-12, (got, ref)
    assert A.gammainc_da(a, x) == pytest.approx(got, rel=1e-13)          # scalars too


@pytest.mark.parametrize("a,b,x", BETA_POINTS)
def test_betainc_dab_accuracy(a, b, x):
    from s2sad.rules import adjoints as A
    da = A.betainc_da(np.array([a]), np.array([b]), np.array([x]))[0]
    db = A.betainc_db(np.array([a]), np.array([b]), np.array([x]))[0]
    ra = _richardson(lambda t: sp.betainc(t, b, x), a, h=min(1e-2, a / 4))
    rb = _richardson(lambda t: sp.betainc(a, t, x), b, h=min(1e-2, b / 4))
    assert abs(da - ra) <= 1e-7 * abs(ra) + 1e-12, (da, ra)
    assert abs(db - rb) <= 1e-7 * abs(rb) + 1e-12, (db, rb)


def test_incomplete_edges_and_dtypes():
    from s2sad.rules import adjoints as A
    assert A.gammainc_da(np.array([2.0, 2.0]), np.array([0.0, np.inf])).tolist() == [0.0, 0.0]
    assert np.isnan(A.gammainc_da(-1.0, 2.0))
    da = A.betainc_da(np.float32([2.0, 2.0]), np.float32([3.0, 3.0]), np.float32([0.0, 1.0]))
    assert da.dtype == np.float32 and da.tolist() == [0.0, 0.0]
    assert type(A.betainc_db(2.0, 3.0, 0.4)) is float


# -- orders carry no derivative: refused, never dropped -------------------------------------------
def bessel_in_order(v, x):
    return np.sum(sp.jv(v, x))


def expn_in_order(n, x):
    return np.sum(sp.expn(n, x))


@pytest.mark.parametrize("f", [bessel_in_order, expn_in_order])
def test_active_order_refused(f):
    with pytest.raises(S2SADError) as e:
        s2sad.grad(f, wrt=(0, 1))(1.5, np.array([0.5, 1.0]))
    msg = str(e.value)
    assert "test_scipy_special_more.py" in msg and "Fix:" in msg
    assert "parameter `v`" in msg or "parameter `n`" in msg
    # the same call with a constant order is differentiated (test_end_to_end)


# -- second derivatives (forward over reverse) of logsumexp, softmax, log_softmax ---------------
from scipy.special import log_softmax as _log_softmax, logsumexp as _lse, softmax as _softmax  # noqa: E402


def lse_plain(x):
    return _lse(x)


def lse_axis_and_b(x):
    return _lse(x.reshape(2, 3), axis=1).sum() + _lse(x[:3], b=x[3:] ** 2)


def lse_keepdims(x):
    return _lse(x.reshape(3, 2), axis=0, keepdims=True).sum() * x[0]


def softmaxes(x):
    return np.sum(_softmax(x) * x) + np.sum(_log_softmax(x.reshape(2, 3), axis=0) ** 2)


def lse_sign_first(x):
    return _lse(x, return_sign=True)[0]


def _fd_hessian(f, x, eps=1e-5):
    g = s2sad.grad(f)
    n = x.size
    return np.stack([(g(x + eps * np.eye(n)[i]) - g(x - eps * np.eye(n)[i])) / (2 * eps)
                     for i in range(n)], axis=1)


@pytest.mark.parametrize("f", [lse_plain, lse_axis_and_b, lse_keepdims, softmaxes])
def test_second_derivatives_of_the_log_sum_exp_family(f):
    # (before: "s2sad.rules.scipy.special.logsumexp has no Python source and no derivative
    # rule" for the adjoint helper, and with axis= a dynamic call on its result)
    x = np.array([0.3, -0.5, 1.2, 0.7, -0.1, 0.4])
    H = s2sad.hessian(f)(x)
    np.testing.assert_allclose(H, _fd_hessian(f, x), rtol=1e-6, atol=1e-7)
    v = np.linspace(-1.0, 1.0, 6)
    np.testing.assert_allclose(s2sad.hvp(f)(x, v), H @ v, rtol=1e-10, atol=1e-12)


def test_logsumexp_return_sign_second_derivative_is_refused_clearly():
    x = np.array([0.3, -0.5, 1.2])
    check_grads(lse_sign_first, (x,), modes=("rev", "fwd"))           # first derivatives: fine
    with pytest.raises(S2SADError) as e:
        s2sad.hessian(lse_sign_first)(x)
    assert "return_sign=True" in str(e.value) and "test_scipy_special_more.py:" in str(e.value)
