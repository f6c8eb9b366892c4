"""scipy.integrate: odeint, solve_ivp and quad in both modes, against closed forms and central
differences (tight solver tolerances), and their refusals."""
import functools
import importlib.util
import os

import numpy as np
import pytest

pytest.importorskip("scipy")
import scipy.integrate as si  # noqa: E402

import s2sad  # noqa: E402
from s2sad.errors import RuleError, S2SADError  # noqa: E402
from s2sad.testing import check_grads  # noqa: E402

MODES = [("rev",), ("fwd",)]
TS = np.array([0.0, 0.4, 1.1, 2.0])


def grads(f, args, wrt, mode):
    """Gradient of the scalar f by reverse mode, or by forward mode one unit tangent at a time."""
    if mode == ("rev",):
        return s2sad.grad(f, wrt=wrt)(*args)
    out = []
    for w in wrt:
        x = args[w]
        cols = []
        for k in range(np.size(x)):
            e = np.zeros(np.shape(x)) if np.ndim(x) else 0.0
            if np.ndim(x):
                e.flat[k] = 1.0
            else:
                e = 1.0
            tans = [None] * len(args)
            tans[w] = e
            cols.append(s2sad.jvp(f, args, tuple(tans))[1])
        out.append(np.reshape(cols, np.shape(x)) if np.ndim(x) else cols[0])
    return tuple(out)


# -- exponential decay: y(t) = y0 exp(-k (t - t0)) -------------------------------------------------
def decay(y, t, k):
    return -k * y


def decay_loss(y0, k, ts):
    ys = si.odeint(decay, y0, ts, args=(k,), rtol=1e-11, atol=1e-12)
    return np.sum(ys * ys)


@pytest.mark.parametrize("mode", MODES)
def test_odeint_exponential_decay_closed_form(mode):
    y0, k, ts = np.array([1.0, -2.0]), 0.7, TS.copy()
    gy0, gk, gts = grads(decay_loss, (y0, k, ts), (0, 1, 2), mode)
    e = np.exp(-2 * k * (ts - ts[0]))               # y(t)^2 = y0^2 e
    s = np.sum(y0 ** 2)
    np.testing.assert_allclose(gy0, 2 * y0 * e.sum(), rtol=1e-7)
    np.testing.assert_allclose(gk, s * np.sum(-2 * (ts - ts[0]) * e), rtol=1e-7)
    want_t = s * (-2 * k) * e
    want_t[0] = s * 2 * k * e[1:].sum()             # moving t0 shifts every later sample
    np.testing.assert_allclose(gts, want_t, rtol=1e-7, atol=1e-10)



def decay_loss_keyword(y0, k, ts):
    ys = si.odeint(decay, y0, t=ts, args=(k,), rtol=1e-11, atol=1e-12)     # odeint's own t=
    return np.sum(ys * ys)


def decay_loss_keywords_only(y0, k, ts):
    ys = si.odeint(func=decay, y0=y0, t=ts, args=(k,), rtol=1e-11, atol=1e-12)
    return np.sum(ys * ys)


def decay_loss_dict(y0, k, ts):
    opts = {"t": ts, "args": (k,)}                 # the call is bound at run time
    ys = si.odeint(decay, y0, rtol=1e-11, atol=1e-12, **opts)
    return np.sum(ys * ys)


def decay_loss_partial(y0, k, ts):
    solve = functools.partial(si.odeint, t=ts, rtol=1e-11, atol=1e-12)
    return np.sum(solve(decay, y0, args=(k,)) ** 2)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f", [decay_loss_keyword, decay_loss_keywords_only, decay_loss_dict,
                               decay_loss_partial])
def test_odeint_times_by_keyword(f, mode):
    """``t=`` binds to the rule's ``times`` (its alias), also when the call is resolved at run
    time; the tolerances, floats the caller computes, carry no derivative."""
    args = (np.array([1.0, -2.0]), 0.7, TS.copy())
    want = s2sad.grad(decay_loss, wrt=(0, 1, 2))(*args)
    got = grads(f, args, (0, 1, 2), mode)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-9)


def decay_loss_internal_name(y0, k, ts):
    return np.sum(si.odeint(decay, y0, times=ts, args=(k,)))


@pytest.mark.parametrize("mode", ["rev", "fwd"])
def test_odeint_internal_name_is_refused(mode):
    e = _refused(decay_loss_internal_name, np.array([1.0, -2.0]), 0.7, TS.copy(),
                 match="unexpected keyword argument 'times'", mode=mode)
    assert "func, y0, t, args" in str(e)

# -- Lotka-Volterra: 4 parameters and the initial state ----------------------------------------------
def lotka_volterra(z, t, a, b, c, d):
    x, y = z[0], z[1]
    return [a * x - b * x * y, d * x * y - c * y]      # a list, as odeint users often write


def lv_loss(z0, p, ts):
    ys = si.odeint(lotka_volterra, z0, ts, args=(p[0], p[1], p[2], p[3]), rtol=1e-10,
                   atol=1e-10)
    w = np.arange(1.0, ys.size + 1.0).reshape(ys.shape)
    return np.sum(w * ys)


LV = (np.array([1.0, 0.5]), np.array([1.1, 0.4, 0.4, 0.1]), np.linspace(0.0, 3.0, 5))


@pytest.mark.parametrize("mode", MODES)
def test_odeint_lotka_volterra(mode):
    check_grads(lv_loss, LV, modes=mode, eps=1e-5, rtol=1e-5)


def test_odeint_lotka_volterra_modes_agree():
    rev = s2sad.grad(lv_loss, wrt=(0, 1, 2))(*LV)
    fwd = grads(lv_loss, LV, (0, 1, 2), ("fwd",))
    for r, f in zip(rev, fwd):
        np.testing.assert_allclose(r, f, rtol=1e-6, atol=1e-8)


def closure_loss(k, y0):
    rhs = lambda y, t: -k * y + np.sin(t)             # noqa: E731  (k: captured, not args=)
    ys = si.odeint(rhs, y0, [0.0, 1.0, 2.0], rtol=1e-11, atol=1e-11)
    return np.sum(ys ** 2)


@pytest.mark.parametrize("mode", MODES)
def test_odeint_closure_over_parameters(mode):
    check_grads(closure_loss, (0.7, np.array([1.0, -2.0])), modes=mode, eps=1e-5, rtol=1e-5)


def tfirst_loss(y0, k):
    ys = si.odeint(lambda t, y, k: -k * y * t, y0, np.array([0.0, 1.0]), args=(k,), tfirst=True,
                   rtol=1e-11, atol=1e-11)
    return ys[-1, 0]


@pytest.mark.parametrize("mode", MODES)
def test_odeint_tfirst_scalar_state(mode):
    check_grads(tfirst_loss, (1.5, 0.3), modes=mode, eps=1e-5, rtol=1e-5)
    assert isinstance(s2sad.grad(tfirst_loss)(1.5, 0.3), float)


# -- solve_ivp -------------------------------------------------------------------------------------
def ivp_loss(y0, p, t_eval, t_span, method):
    r = si.solve_ivp(lambda t, z, a, b, c, d: [a * z[0] - b * z[0] * z[1],
                                               d * z[0] * z[1] - c * z[1]],
                     t_span, y0, method=method, t_eval=t_eval, args=tuple(p), rtol=1e-10,
                     atol=1e-10)
    w = np.arange(1.0, r.y.size + 1.0).reshape(r.y.shape)
    return np.sum(w * r.y) + np.sum(r.t ** 2)


@pytest.mark.parametrize("method", ["RK45", "LSODA", "BDF"])
@pytest.mark.parametrize("mode", MODES)
def test_solve_ivp(method, mode):
    args = (LV[0], LV[1], np.array([0.5, 1.0, 2.0]), np.array([0.2, 2.5]), method)
    check_grads(ivp_loss, args, wrt=(0, 1, 2, 3), modes=mode, eps=1e-5, rtol=1e-4, n_dirs=1)


def test_solve_ivp_final_state_closed_form():
    def f(y0, k):
        r = si.solve_ivp(lambda t, y: -k * y, (0.0, 2.0), y0, t_eval=[2.0], rtol=1e-11,
                         atol=1e-12)
        return r.y[0, -1]
    gy0, gk = s2sad.grad(f, wrt=(0, 1))(np.array([3.0]), 0.5)
    np.testing.assert_allclose(gy0, [np.exp(-1.0)], rtol=1e-7)
    np.testing.assert_allclose(gk, -2.0 * 3.0 * np.exp(-1.0), rtol=1e-7)


# -- quad ------------------------------------------------------------------------------------------
def quad_loss(a, b, p):
    v, err = si.quad(lambda x, s, w: np.exp(-s * x * x) * np.cos(w * x), a, b, args=(p[0], p[1]),
                     epsabs=1e-13, epsrel=1e-13)
    return v * v


@pytest.mark.parametrize("mode", MODES)
def test_quad_parameters_and_limits(mode):
    check_grads(quad_loss, (0.2, 1.7, np.array([0.8, 2.0])), modes=mode, eps=1e-5, rtol=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_quad_closed_form_infinite_limit(mode):
    def f(s, a):          # int_a^inf exp(-s x) dx = exp(-s a) / s
        return si.quad(lambda x: np.exp(-s * x), a, np.inf, epsabs=1e-13, epsrel=1e-13)[0]
    gs, ga = grads(f, (1.3, 0.4), (0, 1), mode)
    s, a = 1.3, 0.4
    np.testing.assert_allclose(gs, -np.exp(-s * a) * (a / s + 1 / s ** 2), rtol=1e-7)
    np.testing.assert_allclose(ga, -np.exp(-s * a), rtol=1e-9)


# -- the example ----------------------------------------------------------------------------------
def test_lotka_volterra_fit_example_runs():
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))), "examples", "lotka_volterra_fit.py")
    spec = importlib.util.spec_from_file_location("lotka_volterra_fit_example", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    params, history = mod.fit(n_times=8, t_end=4.0, max_iter=4, verbose=False)
    assert len(history) >= 2 and history[-1] < 0.5 * history[0]
    assert params.shape == (4,) and np.all(params > 0)


# -- refusals -------------------------------------------------------------------------------------
Y0 = np.array([1.0, 2.0])


def _refused(f, *args, match, mode="rev"):
    with pytest.raises(S2SADError, match=match) as info:
        if mode == "rev":
            s2sad.grad(f)(*args)
        else:
            s2sad.jvp(f, args, tuple(1.0 if np.ndim(a) == 0 else np.ones_like(a) for a in args))
    text = str(info.value)
    assert "test_scipy_integrate.py:" in text and "\nFix: " in text, text
    return info.value


def ivp_dense(k):
    return np.sum(si.solve_ivp(lambda t, y: -k * y, (0.0, 1.0), Y0, t_eval=[1.0],
                               dense_output=True).y)


def ivp_events(k):
    return np.sum(si.solve_ivp(lambda t, y: -k * y, (0.0, 1.0), Y0, t_eval=[1.0],
                               events=lambda t, y: y[0] - 0.5).y)


def ivp_vectorized(k):
    return np.sum(si.solve_ivp(lambda t, y: -k * y, (0.0, 1.0), Y0, t_eval=[1.0],
                               vectorized=True).y)


def ivp_no_t_eval(k):
    return np.sum(si.solve_ivp(lambda t, y: -k * y, (0.0, 1.0), Y0).y)


def odeint_full_output(k):
    return np.sum(si.odeint(decay, Y0, [0.0, 1.0], args=(k,), full_output=1)[0])


def quad_weight(s):
    return si.quad(lambda x: s * x, 0.0, 1.0, weight="cos", wvar=2.0)[0]


def quad_complex(s):
    return si.quad(lambda x: s * x, 0.0, 1.0, complex_func=True)[0].real


@pytest.mark.parametrize("mode", ["rev", "fwd"])
@pytest.mark.parametrize("f,match", [
    (ivp_dense, "dense_output"), (ivp_events, "events"), (ivp_vectorized, "vectorized"),
    (ivp_no_t_eval, "without t_eval"), (odeint_full_output, "full_output"),
    (quad_weight, "weight"), (quad_complex, "complex_func")])
def test_refused_options(f, match, mode):
    _refused(f, 0.5, match=match, mode=mode)


class Rates:
    def __init__(self, k):
        self.k = k


def object_in_args(k):
    return np.sum(si.odeint(lambda y, t, r: -r.k * y, Y0, [0.0, 1.0], args=(Rates(k),)))


def complex_in_args(k):
    return np.sum(si.odeint(lambda y, t, c: -(c * c.conjugate()).real * y, Y0, [0.0, 1.0],
                            args=(k * (1 + 1j),)))


def partial_rhs(k):
    return np.sum(si.odeint(functools.partial(decay, k=k), Y0, [0.0, 1.0]))


_ns = {}
exec("def no_source_rhs(y, t, k):\n    return -k * y\n"          # no source s2sad can read
     "def no_source_f(x, k):\n    return -k * x\n", _ns)


def rhs_without_source(k):
    return np.sum(si.odeint(_ns["no_source_rhs"], Y0, [0.0, 1.0], args=(k,)))


def quad_without_source(k):
    return si.quad(_ns["no_source_f"], 0.0, 1.0, args=(k,))[0]


@pytest.mark.parametrize("mode", ["rev", "fwd"])
@pytest.mark.parametrize("f,match", [
    (object_in_args, "type Rates"), (complex_in_args, "complex"), (partial_rhs, "partial"),
    (rhs_without_source, "not Python source"), (quad_without_source, "not Python source")])
def test_refused_functions_and_args(f, match, mode):
    e = _refused(f, 0.5, match=match, mode=mode)
    assert isinstance(e, RuleError)


def test_limits_need_no_source():
    """Derivatives with respect to the limits only evaluate the integrand: no source needed."""
    def f(b):
        return si.quad(_ns["no_source_f"], 0.0, b, args=(2.0,))[0]
    assert s2sad.grad(f)(1.5) == pytest.approx(-2.0 * 1.5)


def test_args_that_carry_no_derivative_are_not_followed():
    """An object in args= (or captured) that is not differentiated with respect to is passed
    through: only the inputs asked for are followed."""
    rates = Rates(0.5)

    def f(y0):
        ys = si.odeint(lambda y, t, r: -r.k * y, y0, [0.0, 1.0], args=(rates,), rtol=1e-11,
                       atol=1e-12)
        return np.sum(ys[-1])
    for mode in MODES:
        (g,) = grads(f, (np.array([1.0, 2.0]),), (0,), mode)
        np.testing.assert_allclose(g, [np.exp(-0.5)] * 2, rtol=1e-7)


def closure_and_args_ivp(c, k, y0):
    r = si.solve_ivp(lambda t, y, k: -k * y + c * np.cos(t), (0.0, 2.0), y0, t_eval=[1.0, 2.0],
                     args=(k,), rtol=1e-11, atol=1e-11)
    return np.sum(r.y ** 2)


def closure_and_args_quad(c, k, a):
    return si.quad(lambda x, k: np.exp(-k * x) * c, a, 2.0, args=(k,), epsabs=1e-13,
                   epsrel=1e-13)[0] ** 2


@pytest.mark.parametrize("f", [closure_and_args_ivp, closure_and_args_quad])
@pytest.mark.parametrize("mode", MODES)
def test_closure_and_args_together(f, mode):
    x = np.array([1.0, 2.0]) if f is closure_and_args_ivp else 0.1
    check_grads(f, (0.3, 0.7, x), modes=mode, eps=1e-5, rtol=1e-5)
