"""The rule tables end to end: every case of cases_numpy.py, cases_scipy.py and cases_e2e_extra.py
written as user code (tests/rules/e2e_gen.py), compiled by s2sad, and checked against central
differences with ``s2sad.testing.check_grads`` (reverse mode: vjp dot-product test, and grad for
scalar outputs).

Variants per case:

* ``f8``   the call itself, ``def case(p0, ...): return np.fn(p0, ..., kw=...)``, float64;
* ``c16``  the same with complex128 inputs, for the complex-capable cases;
* ``loop`` the call twice in a ``for`` loop on scaled intermediates, both results returned;
* ``f32``  float32 inputs: every float32 argument gets a float32 gradient of the right shape,
           close to the float64 gradient for the same cotangent;
* ``fwd``  forward mode (jvp against central differences), for the rules in ``FWD_RULES``;
* ``join`` the result returned only on a branch not taken: the rule's adjoint runs on the zero
           that fills in where the branches join (it must not fail on it).

The direct dot-product test of the rule templates is tests/rules/test_numpy_rules.py; this file
adds what only the pipeline does: binding of literals and keywords at call sites, list / tuple
displays as arguments, the tape, accumulation, unbroadcasting, results that are tuples.
"""
import inspect
import zlib

import numpy as np
import pytest

import s2sad
from s2sad.testing import check_grads

import e2e_gen
from cases_e2e_extra import CASES as EXTRA
from cases_numpy import CASES as NUMPY
from rulecheck import cast, leaves, random_like

try:
    import scipy  # noqa: F401
    from cases_scipy import CASES as SCIPY
except ImportError:                      # pragma: no cover
    SCIPY = []

TABLES = [("numpy", NUMPY), ("scipy", SCIPY), ("extra", EXTRA)]
ALL = [(t, c) for t, cases in TABLES for c in cases]


def _ids():
    seen, out = {}, []
    for t, c in ALL:
        n = c.name()
        k = seen.get(n, 0)
        seen[n] = k + 1
        out.append(n if k == 0 else f"{n}#{k}")
    return out


IDS = _ids()

# Known failures (bugs in s2sad, see /tmp/issue3_bugs.md); an XPASS fails the run (strict).
XFAIL = {
    # B1: unpacking a namedtuple result (EighResult, SVDResult) in the reverse sweep
    "eigh-4x4": "B1", "eigh-upper": "B1", "eigh-batch": "B1",
    "svd-(4, 3)": "B1", "svd-(3, 3)": "B1", "svd-(3, 5)": "B1", "svd-(2, 4, 3)": "B1",
    "svd-full-square": "B1",
    # B8: a complex constant / Python complex scalar taken for a real: conj dropped
    "mul-pyfloats": ("B8", ("c16",)), "truediv-pyfloats": ("B8", ("c16",)),
    # B11: std over a size-1 axis (identically 0) has a nan gradient
    "std-size1-axis": "B11", "std-empty-axis-tuple": "B11",
}
BUGS = {"B1": "bug B1: getitem_adjoint rebuilds a namedtuple with type(x)(list)",
        "B7": "bug B7: a list built with .append and returned is refused as an alias write",
        "B8": "bug B8: complex Python scalars / `a + bj` constants treated as real (conj dropped)",
        "B9": "bug B9: real operand times a complex constant gets a complex gradient",
        "B11": "bug B11: std over a size-1 axis gives a nan gradient (true gradient 0)"}


FIXED = ['B1', 'B10', 'B11', 'B12', 'B14', 'B15', 'B16', 'B2', 'B3', 'B4', 'B5', 'B6', 'B7', 'B8', 'B9']   # bugs fixed in s2sad since these tests were written


def xfail(bug):
    if bug in FIXED:
        return pytest.mark.skipif(False, reason="fixed")   # fixed: now runs as a plain test
    return pytest.mark.xfail(strict=True, reason=BUGS[bug])

# Rules that also run forward mode end to end (variant ``fwd``: jvp against central differences).
FWD_RULES = {np.average, np.nansum, np.nanmean, np.nanmax, np.nanmin, np.nanvar, np.nanstd, np.median, np.quantile,
             np.percentile, np.ptp, np.cov, np.corrcoef, np.cross, np.convolve, np.correlate,
             np.interp, np.trapezoid, np.polyval, np.nan_to_num, np.linalg.pinv, np.linalg.lstsq,
             np.linalg.matrix_power, np.linalg.multi_dot, np.fft.fft, np.fft.ifft, np.fft.rfft,
             np.fft.irfft, np.fft.fft2, np.fft.ifft2, np.fft.fftn, np.fft.ifftn, np.fft.fftshift,
             np.fft.ifftshift, np.cumulative_sum, np.cumulative_prod, np.pad,
             np.prod}
if SCIPY:
    import scipy.special as _sp
    FWD_RULES |= {_sp.factorial, _sp.factorial2, _sp.factorialk, _sp.comb, _sp.perm}

PARAMS = []
for (table, case), cid in zip(ALL, IDS):
    variants = ["f8", "loop", "join"]
    if not case.method and case.fn in FWD_RULES:
        variants.append("fwd")
    if case.cplx:
        variants.append("c16")
    if case.f32:
        variants.append("f32")
    for v in variants:
        marks = []
        bug = XFAIL.get(cid)
        if bug is not None and not (isinstance(bug, tuple) and v not in bug[1]):
            marks.append(xfail(bug if isinstance(bug, str) else bug[0]))
        PARAMS.append(pytest.param(case, cid, v, id=f"{table}:{cid}-{v}", marks=marks))


@pytest.fixture(scope="module")
def gendir(tmp_path_factory):
    return tmp_path_factory.mktemp("e2e_generated")


def _build(case, cid, variant, gendir):
    rng = np.random.default_rng(zlib.crc32(f"{cid}-{variant}".encode()))
    args, kwargs = case.make(rng, complex) if variant == "c16" else case.make(rng)
    tag = f"{zlib.crc32((cid + variant).encode()):x}"
    src, vals, glb = e2e_gen.generate(case, args, kwargs, tag, loop=variant == "loop",
                                      join=variant == "join")
    mod = e2e_gen.load([src], glb, gendir, stem=f"e2e_{tag}")
    return getattr(mod, f"case_{tag}"), vals, src


@pytest.mark.parametrize("case,cid,variant", PARAMS)
def test_e2e(case, cid, variant, gendir):
    f, vals, src = _build(case, cid, variant, gendir)
    if variant == "join" and not all(np.all(np.isfinite(v)) for v in leaves(vals)):
        pytest.skip("inputs with nan/inf: the other branch's differences would be nan")
    if variant == "f32":
        _check_f32(f, vals, case, src)
        return
    try:
        check_grads(f, vals, eps=case.eps, rtol=max(1e-5, case.rtol), n_dirs=2,
                    modes=("fwd",) if variant == "fwd" else ("rev", "fwd") if variant == "join" else ("rev",))
    except AssertionError as e:
        raise AssertionError(f"{e}\n--- generated user code ---\n{src}") from None


def _check_f32(f, vals, case, src):
    """float32 arrays in -> float32 gradients, close to the float64 gradients."""
    v32 = tuple(cast(v, "f4") for v in vals)
    rng = np.random.default_rng(0)
    out32, pb32 = s2sad.vjp(f, *v32)
    w = random_like(out32, rng)
    g32 = pb32(w)
    out64, pb64 = s2sad.vjp(f, *vals)
    w64 = _like_tree(w, out64)
    g64 = pb64(w64)
    checked = 0
    for x32, a32, a64 in zip(leaves(list(v32)), _grad_leaves(g32, v32), _grad_leaves(g64, vals)):
        if not (isinstance(x32, np.ndarray) and x32.dtype == np.float32):
            continue
        assert a32 is not None, f"{case.name()}: no gradient for a float32 argument\n{src}"
        a32 = np.asarray(a32)
        assert a32.dtype == np.float32, \
            f"{case.name()}: float32 argument got a {a32.dtype} gradient\n{src}"
        assert a32.shape == x32.shape, (case.name(), a32.shape, x32.shape)
        a64 = np.asarray(a64)
        scale = max(1.0, float(np.max(np.abs(a64)))) if a64.size else 1.0
        err = float(np.max(np.abs(a32 - a64))) if a64.size else 0.0
        assert err <= 2e-3 * scale * max(1.0, case.rtol / 1e-6), \
            f"{case.name()}: float32 gradient differs from float64 by {err:.3g}\n{src}"
        checked += 1
    if not checked:
        pytest.skip("no float32 array among the arguments (Python floats only)")


def _like_tree(w, ref):
    """Cotangent ``w`` cast leafwise to the dtypes of ``ref`` (float32 -> float64)."""
    if isinstance(w, (list, tuple)):
        items = [_like_tree(a, b) for a, b in zip(w, ref)]
        return type(w)(*items) if hasattr(w, "_fields") else type(w)(items)
    if w is None:
        return None
    if hasattr(ref, "dtype") and not isinstance(w, (float, complex)):
        return np.asarray(w, dtype=np.result_type(ref))
    return w


def _grad_leaves(grads, args):
    """One gradient leaf per argument leaf (None where the gradient is None or a zero)."""
    out = []
    for g, a in zip(grads, args):
        n = len(leaves(a)) if isinstance(a, (list, tuple)) else 1
        if g is None or (isinstance(g, float) and g == 0.0 and n > 1):
            out += [None] * n
        elif isinstance(a, (list, tuple)):
            out += _grad_leaves(list(g), list(a))
        else:
            out.append(g)
    return out


# -- counts -------------------------------------------------------------------------------------
def test_counts(capsys):
    """How much of the rule tables this file runs end to end (printed with pytest -s)."""
    rules = {}
    for table, c in ALL:
        r = c.rule()
        assert r is not None, f"{c.name()}: no rule registered"
        rules[id(r)] = r.name
    by_variant = {}
    for p in PARAMS:
        v = p.values[2]
        by_variant[v] = by_variant.get(v, 0) + 1
    with capsys.disabled():
        print(f"\n[e2e table] {len(ALL)} cases, {len(set(rules.values()))} distinct rules, "
              f"{len(PARAMS)} checks {by_variant}")
    assert len(set(rules.values())) >= 250


# -- hand-written programs: several rules, broadcasting, keywords, in one function -------------
def softmax_rows(x):
    e = np.exp(x - np.max(x, axis=1, keepdims=True))
    return e / np.sum(e, axis=1, keepdims=True)


def layer_norm(x, gamma, beta):
    mu = x.mean(axis=-1, keepdims=True)
    sd = np.sqrt(x.var(axis=-1, keepdims=True) + 1e-5)
    return gamma * (x - mu) / sd + beta


def standardize_cols(x):
    return (x - x.mean(0)) / x.std(0, ddof=1)


def mlp(W1, b1, W2, x):
    h = np.tanh(x @ W1.T + b1)
    return np.sum((h @ W2) ** 2, axis=-1).mean()


def scalar_kinds(x, a, b):
    # Python float a, NumPy float64 b, 0-d array through a reduction
    s = np.sum(x) * a
    return np.float64(2.0) * x * b + s + a ** 2 - b / (1.0 + a * a)


def gram_logdet(X):
    G = X.T @ X + np.eye(X.shape[1])
    sign, logdet = np.linalg.slogdet(G)
    return logdet + np.trace(np.linalg.solve(G, G @ G))


def pairwise_dists(X):
    d = X[:, None, :] - X[None, :, :]
    return np.sqrt(np.sum(d * d, axis=-1) + 1e-3)


def einsum_attention(Q, K, V):
    s = np.einsum("bqd,bkd->bqk", Q, K) / np.sqrt(Q.shape[-1])
    s = s - s.max(axis=-1, keepdims=True)
    p = np.exp(s)
    p = p / p.sum(axis=-1, keepdims=True)
    return np.einsum("bqk,bkd->bqd", p, V)


def logsumexp_manual(x, axis):
    m = np.max(x, axis=axis, keepdims=True)
    return np.squeeze(m, axis=axis) + np.log(np.sum(np.exp(x - m), axis=axis))


def stack_and_split(a, b):
    z = np.stack([a, b * 2.0, a * b], axis=1)
    u, v = np.split(z, [1], axis=1)
    return np.concatenate([v.reshape(-1), u.ravel() ** 2])


def mixed_reductions(x):
    return (np.prod(x, axis=0) * np.cumsum(x, axis=1)[-1]).sum() + np.linalg.norm(x, axis=1).max()


def where_clip(x, y):
    z = np.where(x > 0, x * y, np.clip(y, -0.3, 0.3))
    return np.maximum(z, 0.1 * x) + np.minimum(x, y.T[0][:, None])


def complex_mix(z, w):
    return np.sum(np.abs(z * np.conj(w) + np.exp(z)) ** 2) + np.real(np.vdot(w, z))


def _r(*shape, lo=-1.0, hi=1.0, seed=0):
    return np.random.default_rng(seed + len(shape)).uniform(lo, hi, shape)


def namedtuple_unpack(A):
    w, v = np.linalg.eigh(A)
    return np.sum(w * v[0] ** 2)


def namedtuple_fields(A):
    r = np.linalg.svd(A, full_matrices=False)
    return np.sum(r.S ** 2) + r[0][0, 0] ** 2      # r[0] is U (squared: sign-free)


def list_append_returned(x):
    outs = []
    for k in range(2):
        r = np.exp(x * (1.0 - 0.05 * k))
        outs.append(r)
    return outs


def real_times_complex_constant(z):
    return np.sum(np.abs(z * np.conj(w_const) + np.exp(1j * np.real(z))) ** 2)


w_const = np.array([0.3 - 0.2j, -0.5 + 0.1j, 0.7 + 0.9j])
_sym = _r(3, 3) + _r(3, 3).T + np.diag([1.0, 2.0, 3.0])

PROGRAMS = [
    (softmax_rows, (_r(3, 5),)),
    (layer_norm, (_r(4, 6), _r(6, seed=1), _r(6, seed=2))),
    (standardize_cols, (_r(5, 3),)),
    (mlp, (_r(4, 3), _r(4, seed=1), _r(4, 2, seed=3), _r(5, 3, seed=4))),
    (scalar_kinds, (_r(2, 3), 0.7, np.float64(-0.4))),
    (pairwise_dists, (_r(4, 3),)),
    (einsum_attention, (_r(2, 3, 4), _r(2, 5, 4, seed=1), _r(2, 5, 4, seed=2))),
    (logsumexp_manual, (_r(3, 4), 1)),
    (logsumexp_manual, (_r(3, 4), 0)),
    (stack_and_split, (_r(4), _r(4, seed=5))),
    (mixed_reductions, (_r(3, 4, lo=0.5, hi=1.5),)),
    (where_clip, (_r(3, 4), _r(3, 4, seed=7))),
    (complex_mix, (_r(3) + 1j * _r(3, seed=1), _r(3, seed=2) + 1j * _r(3, seed=3))),
    pytest.param(gram_logdet, (_r(5, 3),), marks=xfail("B1")),
    pytest.param(namedtuple_unpack, (_sym,), marks=xfail("B1")),
    pytest.param(namedtuple_fields, (_r(4, 3),), marks=xfail("B1")),
    pytest.param(list_append_returned, (_r(3),), marks=xfail("B7")),
    pytest.param(real_times_complex_constant, (_r(3) + 1j * _r(3, seed=1),), marks=xfail("B9")),
]


def _pid(i, p):
    f = p.values[0] if hasattr(p, "values") else p[0]
    return f"{f.__name__}-{i}"


@pytest.mark.parametrize("f,args", PROGRAMS, ids=[_pid(i, p) for i, p in enumerate(PROGRAMS)])
def test_program(f, args):
    check_grads(f, args)


# -- keywords that change the value: initial=, fill values, include_initial= ----------------------
BUGS.update({
    "B2": "bug B2: np.full / np.full_like are declared zero-derivative: an active fill value "
          "gets gradient 0",
    "B3": "bug B3: np.sum(x, initial=s) with an active s: gradient wrt s is 0",
    "B4": "bug B4: np.prod(x, initial=c): the gradient misses the factor c",
    "B5": "bug B5: np.max(x, initial=c) with c above the max: nan gradient (0 ties)",
})


def full_active(s):
    return np.sum(np.full((3,), s) * np.arange(1.0, 4.0))


def full_like_active(x, s):
    return np.sum(np.full_like(x, s) * x)


def sum_initial_active(x, s):
    return np.sum(x, initial=s) * s


def sum_initial_const(x):
    return np.sum(x ** 2, axis=0, initial=1.5).prod()


def prod_initial(x):
    return np.prod(x, axis=1, initial=2.0).sum()


def prod_initial_method(x):
    return x.prod(axis=0, initial=0.5).sum()


def max_initial_some_rows(x):
    return np.max(x, axis=1, initial=1.4).sum()


def max_initial_above(x):
    return np.max(x, initial=10.0) + np.sum(x)


def min_initial_active(x, s):
    return np.min(x, axis=0, initial=s).sum()


def cumulative_sum_include_initial(x):
    return np.sum(np.cumulative_sum(x, axis=1, include_initial=True) ** 2)


_pos = _r(3, 4, lo=0.5, hi=1.5, seed=11)
KEYWORD_PROGRAMS = [
    pytest.param(full_active, (0.7,), marks=xfail("B2")),
    pytest.param(full_like_active, (_pos, 0.7), marks=xfail("B2")),
    pytest.param(sum_initial_active, (_pos, 0.3), marks=xfail("B3")),
    (sum_initial_const, (_pos,)),
    pytest.param(prod_initial, (_pos,), marks=xfail("B4")),
    pytest.param(prod_initial_method, (_pos,), marks=xfail("B4")),
    pytest.param(max_initial_some_rows, (_pos,), marks=xfail("B5")),
    pytest.param(max_initial_above, (_pos,), marks=xfail("B5")),
    pytest.param(min_initial_active, (_pos, 0.6), marks=xfail("B5")),
]


@pytest.mark.parametrize("f,args", KEYWORD_PROGRAMS,
                         ids=[_pid(i, p) for i, p in enumerate(KEYWORD_PROGRAMS)])
def test_value_changing_keywords(f, args):
    """Right, or refused with the user's line: never a silently wrong gradient."""
    try:
        check_grads(f, args)
    except s2sad.S2SADError as e:
        assert "test_e2e_table.py" in str(e), str(e)


def test_full_like_of_a_value_that_carries_a_derivative():
    """np.full_like(x, s) takes only x's shape and dtype: an active x is no reason to refuse
    (it was: 'x carries a derivative into parameter a of np.full_like'), and s gets its
    gradient."""
    check_grads(full_like_active, (_pos, 0.7), wrt=(0, 1), modes=("rev", "fwd"))
    g = s2sad.grad(full_like_active, wrt=1)(_pos, 0.7)
    assert g == pytest.approx(float(np.sum(_pos)))


def constructors_like_an_active_array(x, s):
    a = np.asarray([s, 2 * s], like=x)
    b = np.full(x.shape[1], s, like=x)
    return np.sum(a ** 2) + np.sum(b * x)


def test_like_keyword_of_an_active_array():
    """like= (NEP 35) only picks the result's array type: an active array there is no reason
    to refuse."""
    check_grads(constructors_like_an_active_array, (_pos, 0.7), wrt=(0, 1), modes=("rev", "fwd"))


def test_cumulative_sum_include_initial():
    """include_initial=True: differentiated, or refused naming the call and its line."""
    try:
        check_grads(cumulative_sum_include_initial, (_pos,))
    except s2sad.S2SADError as e:
        msg = str(e)
        assert "test_e2e_table.py" in msg and "cumulative_sum" in msg, msg


# -- NumPy functions without a rule: a clear refusal, never a silent zero --------------------------
def np_add_reduce(x):
    return np.add.reduce(x, axis=0).sum()


def np_select(x):
    return np.sum(np.select([x > 1.0], [x * 2.0], default=x))


def np_piecewise(x):
    return np.sum(np.piecewise(x, [x > 1.0], [lambda v: v * 2.0, lambda v: v]))


NO_RULE = [np_add_reduce, np_select, np_piecewise]


@pytest.mark.parametrize("f", NO_RULE, ids=[f.__name__ for f in NO_RULE])
def test_numpy_function_without_rule(f):
    """Today each of these is refused (OpaqueCalleeError naming the line and how to declare a
    rule); once a rule exists, it must be right."""
    try:
        check_grads(f, (_pos,))
    except s2sad.errors.OpaqueCalleeError as e:
        msg = str(e)
        src, first = inspect.getsourcelines(f)
        assert f"test_e2e_table.py:{first + 1}" in msg, msg
        assert "defrule" in msg or "np.where or np.select" in msg, msg


# -- the functions that used to be refused, now with rules, in small programs ----------------------
def np_average(x):
    return np.average(x, axis=1, weights=np.arange(1.0, 5.0)).sum()


def np_cov(x):
    return np.cov(x).sum()


def np_median(x):
    return np.median(x, axis=1).sum()


def np_nansum(x):
    return np.nansum(x * 2.0)


def np_interp(x):
    return np.interp(0.3, [0.0, 1.0], x[0, :2])


def np_nan_to_num(x):
    return np.sum(np.nan_to_num(x))


def np_fft(x):
    return np.abs(np.fft.fft(x[0])).sum()


def np_pinv(x):
    return np.linalg.pinv(x).sum()


def np_convolve(x):
    return np.convolve(x[0], x[1]).sum()


def np_trapezoid(x):
    return np.trapezoid(x, dx=0.1, axis=1).sum()


def spectral_energy(x):
    # a real signal through rfft/irfft with a smooth filter, a robust statistic and a fit
    X = np.fft.rfft(x, axis=1, norm="ortho")
    y = np.fft.irfft(X * np.exp(-0.1 * np.arange(X.shape[1])), n=x.shape[1], axis=1, norm="ortho")
    c = np.corrcoef(x, y)
    sol, res, rank, sv = np.linalg.lstsq(x.T, y[0], rcond=None)
    return np.sum(c) + np.percentile(y, 40.0) + np.sum(sol ** 2) + np.ptp(y, axis=0).sum()


def poly_and_products(x):
    p = np.polyval(x[0], x[1])
    m = np.linalg.multi_dot([x[:, :3], x[:3, :], x[0]])
    q = np.linalg.matrix_power(x[:3, :3] + 3.0 * np.eye(3), -2)
    return np.sum(p) * np.sum(m) + np.sum(q) + np.nanmean(np.cross(x[:, :3], x[:, 1:]))


NOW_RULED = [np_average, np_cov, np_median, np_nansum, np_interp, np_nan_to_num, np_fft, np_pinv,
             np_convolve, np_trapezoid, spectral_energy, poly_and_products]


@pytest.mark.parametrize("f", NOW_RULED, ids=[f.__name__ for f in NOW_RULED])
def test_numpy_function_with_new_rule(f):
    """These have rules now: reverse and forward mode against central differences."""
    check_grads(f, (_pos,), modes=("rev", "fwd"))
