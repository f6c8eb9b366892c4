"""``scipy.integrate``: ``odeint``, ``solve_ivp`` (with ``t_eval``, without dense output or
events) and ``quad``.

The right-hand side (or integrand) is the user's function: its derivatives come from s2sad itself,
called from the helpers below (``_rt.call``/``_rt.pull`` for vector-Jacobian products,
``_fw.jvp_call`` for Jacobian-vector products), so it may be any function s2sad differentiates:
a def, a lambda, a closure over values that carry derivatives (its captured values get adjoints
and tangents like the ``args=`` entries).

* Reverse mode is the adjoint method: between consecutive output times, from the last one back to
  the initial time, an augmented ODE (the state, its adjoint ``a`` with ``a' = -a df/dy``, and the
  accumulator of ``-a df/dp`` for the parameters) is solved backwards with the same solver and
  tolerances, starting from the recorded state; each output time adds its cotangent to ``a``.  An
  output time ``t_k`` (k > 0) gets ``g_k . f(y_k, t_k)``; the initial time ``-a(t0+) . f(y0, t0)``.
* Forward mode solves the tangent ODE ``d' = df/dy d + df/dp dp`` alongside the state, from the
  initial tangent ``dy0 - f(y0, t0) dt0``; an output time adds ``f(y_k, t_k) dt_k``.
* ``quad``: the limits by Leibniz's rule (``f(b) db - f(a) da``), the parameters by integrating
  the integrand's derivative with the same tolerances (``quad_vec`` for the adjoint of several
  parameters at once).

Each differentiable input has its own template, so that only the inputs that carry derivatives
are followed (and checked); the reverse templates of one call share one adjoint sweep
(:func:`_sweep_once`).  ``odeint``'s times are the rule's parameter ``times`` (``t`` names the
tangent in templates); the keyword ``t=`` binds to it (``aliases=``).  Tolerances and step
controls (``rtol``, ``atol``, ``hmax``..., ``solve_ivp``'s ``**options``, ``quad``'s ``epsabs``
and ``epsrel``) carry no derivative: the exact solution does not depend on them.  Refused: ``dense_output``, ``events``,
``vectorized``, ``solve_ivp`` without ``t_eval``, ``full_output``, ``quad``'s ``weight`` and
``complex_func``, values other than floats and float arrays that carry derivatives into the
function, and functions s2sad cannot differentiate when their derivatives are needed.

Loaded only once the user's code has imported SciPy.
"""
import threading
import types

import numpy as np
import scipy.integrate as _si

from ... import runtime as _rt
from ...errors import RuleError
from ..adjoints import A, export, like
from ..registry import defrule

A = dict(A, _si=_si)

_ODEINT_OPTS = "rtol, atol, tcrit, hmax, hmin, mxstep, mxordn, mxords, tfirst"
# tolerances and step controls: the exact solution does not depend on them (floats computed by
# the caller may reach them, as when the call is only resolved at run time)
_STEP_CONTROLS = ("rtol", "atol", "tcrit", "hmax", "hmin")
defrule(_si.odeint, "func, y0, times, args=(), Dfun=None, col_deriv=0, full_output=0, ml=None, "
        "mu=None, rtol=None, atol=None, tcrit=None, h0=0.0, hmax=0.0, hmin=0.0, ixpr=0, "
        "mxstep=0, mxhnil=0, mxordn=12, mxords=5, printmessg=0, tfirst=False",
        vjp={p: f"_adj.odeint({p!r}, g, ans, func, y0, times, args, {_ODEINT_OPTS})"
             for p in ("func", "y0", "times", "args")},
        jvp={p: f"_adj.odeint_tangent({p!r}, t, ans, func, y0, times, args, {_ODEINT_OPTS})"
             for p in ("func", "y0", "times", "args")},
        forbid={"full_output": 0}, kind="array", ns=A, aliases={"t": "times"},
        constant=_STEP_CONTROLS + ("h0",))

defrule(_si.solve_ivp, "fun, t_span, y0, method='RK45', t_eval=None, dense_output=False, "
        "events=None, vectorized=False, args=None, **options",
        vjp={p: f"_adj.solve_ivp({p!r}, g, ans, fun, t_span, y0, method, t_eval, args, options)"
             for p in ("fun", "t_span", "y0", "t_eval", "args")},
        jvp={p: f"_adj.solve_ivp_tangent({p!r}, t, ans, fun, t_span, y0, method, t_eval, args, "
                f"options)" for p in ("fun", "t_span", "y0", "t_eval", "args")},
        forbid={"dense_output": False, "events": None, "vectorized": False}, kind="any", ns=A,
        constant=("options",))

_QUAD_OPTS = "epsabs, epsrel, limit, points"
defrule(_si.quad, "func, a, b, args=(), full_output=0, epsabs=1.49e-08, epsrel=1.49e-08, "
        "limit=50, points=None, weight=None, wvar=None, wopts=None, maxp1=50, limlst=50, "
        "complex_func=False",
        vjp={"a": "_adj.quad_limit(g, func, a, args, -1.0)",
             "b": "_adj.quad_limit(g, func, b, args, 1.0)",
             "args": f"_adj.quad('args', g, func, a, b, args, {_QUAD_OPTS})",
             "func": f"_adj.quad('func', g, func, a, b, args, {_QUAD_OPTS})"},
        jvp={p: f"_adj.quad_tangent({p!r}, t, ans, func, a, b, args, {_QUAD_OPTS})"
             for p in ("func", "a", "b", "args")},
        forbid={"full_output": 0, "weight": None, "complex_func": False}, kind="container", ns=A,
        constant=("epsabs", "epsrel"))


# -- values, their adjoints and tangents as flat vectors -------------------------------------------
def _fix(what):
    return (f"pass the values that carry derivatives to {what} as floats or float arrays (in a "
            f"tuple, list or dict), through args= or captured by the function")


def _is_leaf(v):
    return isinstance(v, (float, np.floating)) or \
        isinstance(v, np.ndarray) and v.dtype.kind == "f"


def _cells(fn):
    """{name: value} of the data a Python function holds in its closure cells."""
    if type(fn) is not types.FunctionType:
        return {}
    names = _rt._data_cells(fn)
    if not names:
        return {}
    from ...runtime.dispatch import data_cell_values
    return dict(zip(names, data_cell_values(fn, names)))


def _size(v, what):
    """Number of floats of ``v`` that carry derivatives (checking the others carry none)."""
    if _is_leaf(v):
        return int(np.size(v))
    if isinstance(v, (list, tuple)):
        return sum(_size(x, what) for x in v)
    if isinstance(v, dict):
        return sum(_size(x, what) for x in v.values())
    if type(v) is types.FunctionType:
        return _size(_cells(v), what)
    if _rt.differentiable(v):
        if np.iscomplexobj(v):
            raise RuleError(f"{what}: a complex value carries a derivative into the function; "
                            f"s2sad differentiates these solvers for real values only",
                            fix="split the complex values into real and imaginary parts")
        raise RuleError(f"{what}: a value of type {type(v).__name__} that carries a derivative "
                        f"reaches the function; s2sad differentiates these solvers with respect to "
                        f"floats and float arrays only", fix=_fix(what))
    return 0


def _flat(adj, v, out):
    """Append the adjoint (or tangent) ``adj`` of ``v`` to ``out`` as flat float arrays
    (zeros where it is None or 0.0)."""
    if _is_leaf(v):
        n = int(np.size(v))
        if adj is None or isinstance(adj, (tuple, list, dict)):
            out.append(np.zeros(n))
        elif np.ndim(adj) == 0:
            out.append(np.full(n, float(np.real(adj))))
        else:
            a = np.asarray(adj)
            if a.dtype.kind != "f":
                a = np.real(a).astype(float)
            out.append(a.ravel() if a.size == n else np.broadcast_to(a, np.shape(v)).ravel())
    elif isinstance(v, (list, tuple)):
        seq = isinstance(adj, (list, tuple))
        for k, x in enumerate(v):
            _flat(adj[k] if seq and k < len(adj) else None, x, out)
    elif isinstance(v, dict):
        d = isinstance(adj, dict)
        for k, x in v.items():
            _flat(adj.get(k) if d else None, x, out)
    elif type(v) is types.FunctionType:
        _flat(adj, _cells(v), out)


def _unflat(vec, v, pos=0):
    """(adjoint of ``v`` read from ``vec`` at ``pos``, the position after it)."""
    if _is_leaf(v):
        n = int(np.size(v))
        return like(vec[pos:pos + n].reshape(np.shape(v)), v), pos + n
    if isinstance(v, (list, tuple)):
        out = []
        for x in v:
            a, pos = _unflat(vec, x, pos)
            out.append(0.0 if a is None else a)
        return (type(v)(*out) if hasattr(v, "_fields") else type(v)(out)), pos
    if isinstance(v, dict):
        out = {}
        for k, x in v.items():
            a, pos = _unflat(vec, x, pos)
            out[k] = 0.0 if a is None else a
        return out, pos
    if type(v) is types.FunctionType and _cells(v):
        return _unflat(vec, _cells(v), pos)
    return 0.0, pos


def _vector(adj, v):
    if type(v) is tuple and type(adj) is tuple and len(adj) == len(v) and \
            all(type(x) is float for x in v) and all(type(x) is float for x in adj):
        return np.array(adj)                    # (the common args=(a, b, c))
    out = []
    _flat(adj, v, out)
    return np.concatenate(out) if out else np.zeros(0)


# -- the user's function: values, vector-Jacobian and Jacobian-vector products ------------------
class _Fn:
    """The right-hand side or integrand ``fn`` called as the solver calls it: ``fn(y, t, *args)``
    (``fn(t, y, *args)`` when ``tfirst``; ``fn(x, *args)`` for ``quad``, ``y`` None)."""

    def __init__(self, fn, args, what, tfirst=False, need=None):
        """``need``: the input whose derivative is asked for: "args" and "func" (the function's
        own closure data) are followed, and checked, only when asked for."""
        if args is None:
            args = ()
        if not isinstance(args, tuple):
            args = (args,)
        self.fn, self.args, self.what, self.tfirst = fn, args, what, tfirst
        self.cells = _cells(fn) if need == "func" else {}
        if need == "func" and _rt.differentiable(fn) and type(fn) is not types.FunctionType:
            raise RuleError(f"{what}: the function passed is a {type(fn).__name__} that holds "
                            f"values carrying derivatives; s2sad follows those through a Python "
                            f"function's closure or through args= only", fix=_fix(what))
        self.n_args = _size(args, what) if need == "args" else 0
        self.n_cells = _size(self.cells, what)

    def _ordered(self, y, t):
        if y is None:
            return (t,)
        return (t, y) if self.tfirst else (y, t)

    def value(self, y, t):
        return self.fn(*self._ordered(y, t), *self.args)

    def _checked(self):
        if not (_rt._is_python(self.fn) or _has_rule(self.fn)):
            name = getattr(self.fn, "__qualname__", None) or type(self.fn).__name__
            raise RuleError(f"{self.what}: its function {name} is not Python source s2sad can "
                            f"read (and has no derivative rule), and the derivative needs its "
                            f"derivatives", fix="pass a Python function (a def or a lambda) "
                            "calling it, and declare a rule for it with s2sad.defrule")

    def vjp(self, y, t, a):
        """(f, adjoint of y, of t, flat adjoint of args, flat adjoint of the closure data) for
        the cotangent ``a`` of f's value."""
        self._checked()
        value, rec = _rt.call(self.fn, *self._ordered(y, t), *self.args)
        g = _cotangent(a, value)
        c, adj, _ = _rt.pull(rec, g)
        adj = tuple(adj) + (0.0,) * (2 + len(self.args) - len(adj))
        k = 0 if y is None else 1
        ya, ta = (adj[1], adj[0]) if self.tfirst and y is not None else (adj[0], adj[k])
        ya = None if y is None else _vector(ya, y)
        ta = 0.0 if _rt.is_zero(ta) else float(np.real(ta))
        pa = _vector(tuple(adj[k + 1:k + 1 + len(self.args)]), self.args) if self.n_args else None
        ca = _vector(c if isinstance(c, dict) else None, self.cells) if self.n_cells else None
        return _state(value), ya, ta, pa, ca

    def jvp(self, y, t, dy, targs, tcells):
        """(f, its tangent) for the tangents ``dy`` of y, ``targs`` of args (a tuple, None
        entries for none) and ``tcells`` of the closure data (a dict or None)."""
        from ...runtime.forward import jvp_call
        self._checked()
        if y is None:
            ordered, tord = (t,), (None,)
        else:
            ordered, tord = self._ordered(y, t), ((None, dy) if self.tfirst else (dy, None))
        value, tv = jvp_call(self.fn, ordered + self.args, tord + tuple(targs), None, None,
                             ftan=tcells)
        return _state(value), _state(tv, like=value)


def _has_rule(fn):
    from ..registry import lookup
    try:
        rule = lookup(fn)
    except TypeError:
        return False
    return rule is not None


def _state(v, like=None):
    """A right-hand side's value (an array, a list of floats, a float) as a flat float array."""
    if v is None or _rt.is_zero(v):
        return np.zeros(np.size(_state(like))) if like is not None else np.zeros(1)
    if isinstance(v, (list, tuple)):
        return np.concatenate([np.ravel(np.asarray(x if x is not None else 0.0, dtype=float))
                               for x in v]) if v else np.zeros(0)
    return np.ravel(np.asarray(v, dtype=float))


def _cotangent(a, value):
    """The cotangent ``a`` (a flat array) shaped like the function's value."""
    if isinstance(value, (list, tuple)):
        out, pos = [], 0
        for x in value:
            n = int(np.size(x))
            part = a[pos:pos + n]
            out.append(float(part[0]) if np.ndim(x) == 0 else part.reshape(np.shape(x)))
            pos += n
        return type(value)(out)
    if np.ndim(value) == 0:
        return float(a[0]) if type(value) is float else np.asarray(a[0]).reshape(())
    return np.asarray(a).reshape(np.shape(value))


def _arg_tangents(args, t):
    """Per-entry tangents of ``args`` (a tuple: None where there is none)."""
    if args is None:
        return ()
    if not isinstance(args, tuple):
        args, t = (args,), (t,)
    if t is None or _rt.is_zero(t):
        return (None,) * len(args)
    t = tuple(t) + (None,) * (len(args) - len(t))
    return tuple(t[:len(args)])


def _tol(tol, n, extra):
    """A tolerance for the augmented state: the state's own (a scalar or per component), and
    its smallest value for the ``extra`` components."""
    if tol is None or np.ndim(tol) == 0:
        return tol
    tol = np.ravel(np.asarray(tol, dtype=float))
    if tol.size != n:
        return tol
    return np.concatenate([tol, np.full(extra, tol.min())])


def _fail(what, message):
    raise RuleError(f"{what}: the solver failed on the derivative's augmented system ({message})",
                    fix="loosen rtol/atol or raise the step limit (mxstep= for odeint)")


# -- the adjoint method, shared by odeint and solve_ivp ----------------------------------------------
def _adjoint_sweep(fn, times, Y, G, solve):
    """The adjoint method over output times ``times`` (the initial time first), states ``Y``
    (rows) and their cotangents ``G``: (adjoint of y0, of each time, flat adjoint of args, of the
    closure data).  ``solve(aug, z0, t_from, t_to, n_extra)`` integrates the augmented system."""
    n = Y.shape[1]
    npar, ncell = fn.n_args, fn.n_cells
    a = G[-1].copy()
    pbar, cbar = np.zeros(npar), np.zeros(ncell)
    tbar = np.zeros(len(times))

    def aug(t, z):
        f, ya, _, pa, ca = fn.vjp(z[:n].copy(), t, z[n:2 * n].copy())
        parts = [f, -ya]
        if npar:
            parts.append(-pa)
        if ncell:
            parts.append(-ca)
        return np.concatenate(parts)

    for i in range(len(times) - 1, 0, -1):
        tbar[i] = float(np.dot(_state(fn.value(Y[i].copy(), times[i])), G[i]))
        if times[i] != times[i - 1]:
            z = solve(aug, np.concatenate([Y[i], a, pbar, cbar]), times[i], times[i - 1],
                      n + npar + ncell)
            a, pbar, cbar = z[n:2 * n], z[2 * n:2 * n + npar], z[2 * n + npar:]
        a = a + G[i - 1]
    tbar[0] = -float(np.dot(a - G[0], _state(fn.value(Y[0].copy(), times[0]))))
    return a, tbar, pbar, cbar


def _tangent_sweep(fn, which, tt, times, Y, y0, args, solve):
    """Forward sensitivities: the tangent of the states ``Y`` at ``times`` (the initial time
    first) for the tangent ``tt`` of one input (``which``: "func", "y0", "t", "args").
    ``solve(aug, z0, n_extra)`` integrates the augmented system over ``times``, returning rows."""
    n = Y.shape[1]
    dY = np.zeros_like(Y)
    targs = _arg_tangents(args, tt if which == "args" else None)
    tcells = tt if which == "func" and isinstance(tt, dict) else None
    if which in ("t", "times"):
        dt = np.broadcast_to(np.ravel(np.asarray(tt, dtype=float)), (len(times),))
        d0 = -_state(fn.value(Y[0].copy(), times[0])) * dt[0]
    else:
        dt = None
        d0 = _vector(tt, y0) if which == "y0" else np.zeros(n)
    if which in ("func", "args") or np.any(d0 != 0):
        def aug(t, z):
            f, tf = fn.jvp(z[:n].copy(), t, z[n:].copy(), targs, tcells)
            return np.concatenate([f, tf])
        Z = solve(aug, np.concatenate([Y[0], d0]), n)
        dY = Z[:, n:].copy()
    if dt is not None:
        for k in range(len(times)):
            if dt[k] != 0:
                dY[k] += _state(fn.value(Y[k].copy(), times[k])) * dt[k]
    return dY


# -- odeint ----------------------------------------------------------------------------------------
def _odeint_solver(rtol, atol, tcrit, hmax, hmin, mxstep, mxordn, mxords, n):
    def solve(aug, z0, times, extra):
        tol = dict(rtol=_tol(rtol, n, 2 * n + extra - n), atol=_tol(atol, n, 2 * n + extra - n))
        Z, info = _si.odeint(lambda z, t: aug(t, z), z0, times, tcrit=tcrit, hmax=hmax,
                             hmin=hmin, mxstep=mxstep, mxordn=mxordn, mxords=mxords,
                             full_output=True, **tol)
        if info["message"] != "Integration successful.":
            _fail("scipy.integrate.odeint", info["message"])
        return Z
    return solve


_SWEEPS = threading.local()


def _sweep_once(which, g, ans, key, run):
    """The adjoint sweep's results for ``which``, shared by the templates of one call (the
    same ``g`` and ``ans``): a sweep gives y0's and the times' adjoints with those of args= or of
    the closure data, so only a second one of those two runs a second sweep."""
    last = getattr(_SWEEPS, "last", None)
    if last is None or last[0] is not g or last[1] is not ans or last[2] != key:
        last = _SWEEPS.last = (g, ans, key, {})
    done = last[3]
    if which not in done:
        done.update(run(which if which in ("args", "func") else None))
    return done[which]


def odeint(which, g, ans, func, y0, t, args, rtol, atol, tcrit, hmax, hmin, mxstep, mxordn,
           mxords, tfirst):
    """Adjoint of ``scipy.integrate.odeint`` for input ``which`` (func, y0, times, args), by the
    adjoint method."""
    def run(need):
        fn = _Fn(func, args, "scipy.integrate.odeint", tfirst, need)
        Y = np.asarray(ans, dtype=float)
        times = np.ravel(np.asarray(t, dtype=float))
        G = np.broadcast_to(np.asarray(g, dtype=float), Y.shape)
        solve = _odeint_solver(rtol, atol, tcrit, hmax, hmin, mxstep, mxordn, mxords, Y.shape[1])
        a, tbar, pbar, cbar = _adjoint_sweep(
            fn, times, Y, G, lambda aug, z0, t1, t0, extra: solve(aug, z0, [t1, t0], extra)[-1])
        return _results(fn, need, a, y0, pbar, cbar, times=like(tbar, t))
    return _sweep_once(which, g, ans, "odeint", run)


def _results(fn, need, a, y0, pbar, cbar, **more):
    out = dict(more, y0=_like_state(a, y0))
    if need == "func":
        out["func"] = _unflat(cbar, fn.cells)[0] if fn.n_cells else 0.0
    if need == "args":
        out["args"] = _unflat(pbar, fn.args)[0] if fn.n_args else 0.0
    return out


def _like_state(a, y0):
    if isinstance(y0, (list, tuple)) and all(np.ndim(v) == 0 for v in y0):
        return type(y0)(float(v) for v in a)
    if np.ndim(y0) == 0:
        return like(a[0], y0)
    return like(a.reshape(np.shape(y0)), y0)


def odeint_tangent(which, tt, ans, func, y0, t, args, rtol, atol, tcrit, hmax, hmin, mxstep,
                   mxordn, mxords, tfirst):
    """Tangent of ``scipy.integrate.odeint`` for the tangent ``tt`` of input ``which``, by
    forward sensitivities."""
    fn = _Fn(func, args, "scipy.integrate.odeint", tfirst, which)
    Y = np.asarray(ans, dtype=float)
    times = np.ravel(np.asarray(t, dtype=float))
    run = _odeint_solver(rtol, atol, tcrit, hmax, hmin, mxstep, mxordn, mxords, Y.shape[1])
    return _tangent_sweep(fn, which, tt, times, Y, y0, args,
                          lambda aug, z0, extra: run(aug, z0, times, extra))


# -- solve_ivp -------------------------------------------------------------------------------------
_REFUSE_OPTS = ("jac", "jac_sparsity", "lband", "uband")


def _ivp_setup(ans, fun, t_span, y0, t_eval, args, need):
    what = "scipy.integrate.solve_ivp"
    if t_eval is None:
        raise RuleError(f"{what} without t_eval= carrying a derivative: the output times are the "
                        f"solver's own steps, which move with the inputs",
                        fix="pass t_eval= with the times you need (t_eval=[t1] for the state at "
                            "the end of t_span)")
    if not ans.success:
        raise RuleError(f"{what} did not succeed ({ans.message}), so its result has no "
                        f"derivative", fix="make the solve succeed (tolerances, method, t_span)")
    fn = _Fn(fun, args, what, True, need)
    n = int(np.size(y0))
    t0 = float(np.ravel(np.asarray(t_span, dtype=float))[0])
    times = np.concatenate([[t0], np.ravel(np.asarray(t_eval, dtype=float))])
    Y = np.concatenate([np.ravel(np.asarray(y0, dtype=float))[None, :],
                        np.asarray(ans.y, dtype=float).reshape(n, -1).T])
    return fn, n, times, Y


def _ivp_solver(method, options, n):
    opts = {k: v for k, v in options.items() if k not in _REFUSE_OPTS}

    def solve(aug, z0, t_from, t_to, extra, t_eval=None):
        o = dict(opts)
        for k in ("rtol", "atol"):
            if k in o:
                o[k] = _tol(o[k], n, n + extra)
        r = _si.solve_ivp(aug, (t_from, t_to), z0, method=method, t_eval=t_eval, **o)
        if not r.success:
            _fail("scipy.integrate.solve_ivp", r.message)
        return r.y
    return solve


def solve_ivp(which, g, ans, fun, t_span, y0, method, t_eval, args, options):
    """Adjoint of ``scipy.integrate.solve_ivp`` for input ``which`` (fun, t_span, y0, t_eval,
    args), by the adjoint method.  ``g`` is the adjoint of the result object: {"y": ..., "t": ...}."""
    def run(need):
        fn, n, times, Y = _ivp_setup(ans, fun, t_span, y0, t_eval, args, need)
        gd = g if isinstance(g, dict) else {}
        gy = gd.get("y")
        G = np.zeros_like(Y)
        if gy is not None and not _rt.is_zero(gy):
            G[1:] = np.broadcast_to(np.asarray(gy, dtype=float), ans.y.shape).reshape(n, -1).T
        solve = _ivp_solver(method, options, n)
        a, tbar, pbar, cbar = _adjoint_sweep(
            fn, times, Y, G, lambda aug, z0, t1, t0, extra: solve(aug, z0, t1, t0, extra)[:, -1])
        gt = gd.get("t")
        te = tbar[1:]
        if gt is not None and not _rt.is_zero(gt):
            te = te + np.ravel(np.asarray(gt, dtype=float))
        span = np.zeros(np.shape(t_span))
        span.flat[0] = tbar[0]
        return _results(fn, need, a, y0, pbar, cbar, t_span=like(span, t_span),
                        t_eval=like(te, t_eval))
    return _sweep_once("func" if which == "fun" else which, g, ans, "solve_ivp", run)


def solve_ivp_tangent(which, tt, ans, fun, t_span, y0, method, t_eval, args, options):
    """Tangent of ``scipy.integrate.solve_ivp`` ({"y": ..., "t": ...}) for the tangent ``tt`` of
    input ``which``, by forward sensitivities."""
    fn, n, times, Y = _ivp_setup(ans, fun, t_span, y0, t_eval, args,
                                 "func" if which == "fun" else which)
    te_tangent = np.ravel(np.asarray(tt, dtype=float)).copy() if which == "t_eval" else None
    if which == "fun":
        which = "func"
    elif which == "t_span":
        tt = np.concatenate([np.ravel(np.asarray(tt, dtype=float))[:1], np.zeros(len(times) - 1)])
        which = "t"
    elif which == "t_eval":
        tt = np.concatenate([[0.0], np.ravel(np.asarray(tt, dtype=float))])
        which = "t"
    run = _ivp_solver(method, options, n)

    def solve(aug, z0, extra):
        Z = run(aug, z0, times[0], float(np.ravel(np.asarray(t_span, dtype=float))[-1]), extra,
                t_eval=times)
        return Z.T
    dY = _tangent_sweep(fn, which, tt, times, Y, y0, args, solve)
    out = {"y": dY[1:].T.reshape(np.shape(ans.y))}
    if te_tangent is not None:
        out["t"] = te_tangent
    return out


# -- quad ------------------------------------------------------------------------------------------
def _gy(g):
    gy = g[0] if isinstance(g, (tuple, list)) else g
    return 0.0 if gy is None else float(np.real(gy))


def _limit_value(fn, x):
    return 0.0 if not np.isfinite(x) else float(_state(fn.value(None, float(x)))[0])


def quad_limit(g, func, x, args, sign):
    """Adjoint of ``scipy.integrate.quad`` for a limit ``x``: +-g f(x) (zero at infinity)."""
    return like(sign * _gy(g) * _limit_value(_Fn(func, args, "scipy.integrate.quad"), x), x)


def quad(which, g, func, a, b, args, epsabs, epsrel, limit, points):
    """Adjoint of ``scipy.integrate.quad`` for ``args`` or ``func`` (its closure data): the
    integral of the integrand's vector-Jacobian product, by ``quad_vec``."""
    fn = _Fn(func, args, "scipy.integrate.quad", need=which)
    if not (fn.n_args or fn.n_cells):
        return 0.0
    gy = _gy(g)

    def integrand(x):
        _, _, _, pa, ca = fn.vjp(None, float(x), np.array([gy]))
        return pa if which == "args" else ca
    v, _ = _si.quad_vec(integrand, a, b, epsabs=epsabs, epsrel=epsrel, points=points)
    v = np.asarray(v, dtype=float)
    return _unflat(v, fn.args if which == "args" else fn.cells)[0]


def quad_tangent(which, tt, ans, func, a, b, args, epsabs, epsrel, limit, points):
    """Tangent of ``scipy.integrate.quad`` ((value, 0.0): the error estimate carries none)."""
    fn = _Fn(func, args, "scipy.integrate.quad", need=which)
    if which == "a":
        return (-float(tt) * _limit_value(fn, a), 0.0)
    if which == "b":
        return (float(tt) * _limit_value(fn, b), 0.0)
    targs = _arg_tangents(args, tt if which == "args" else None)
    tcells = tt if which == "func" and isinstance(tt, dict) else None
    v, _ = _si.quad(lambda x: float(fn.jvp(None, x, None, targs, tcells)[1][0]), a, b,
                    epsabs=epsabs, epsrel=epsrel, limit=limit, points=points)
    return (v, 0.0)


export(globals())
