"""Driver for the rule table tests: the dot-product test of one rule against central differences.

A :class:`Case` names a callee (or an array method), how to make random arguments, and which
parameters to check.  :func:`check_case` runs the rule's adjoint templates directly
(``Rule.adjoint_function``); an end-to-end driver (``s2sad.testing.check_grads``) can run the same
cases through ``case.call``.
"""
import dataclasses
import zlib
from typing import Any, Callable, Optional

import numpy as np

from s2sad.rules import lookup, lookup_method


@dataclasses.dataclass
class Case:
    fn: Any                          # the callee, or a method name (str) called on args[0]
    make: Callable                   # rng -> (args tuple, kwargs dict), float64 / complex128
    id: str = ""
    wrt: Optional[tuple] = None      # rule parameters to check (default: every float one)
    post: Optional[Callable] = None  # canonicalizes an output (e.g. eigenvector signs)
    cplx: bool = False               # also check with complex inputs (make(rng, complex))
    f32: bool = True                 # also check float32 in -> float32 adjoint
    rtol: float = 1e-6
    eps: float = 1e-6

    @property
    def method(self):
        return isinstance(self.fn, str)

    def rule(self):
        return lookup_method(self.fn) if self.method else lookup(self.fn)

    def call(self, args, kwargs):
        if self.method:
            return getattr(args[0], self.fn)(*args[1:], **kwargs)
        return self.fn(*args, **kwargs)

    def name(self):
        base = self.fn if self.method else getattr(self.fn, "__name__", repr(self.fn))
        return f"{'.' if self.method else ''}{base}{'-' + self.id if self.id else ''}"


# -- trees of values: arrays, floats, lists/tuples of them ------------------------------------------
def is_float_leaf(x):
    if isinstance(x, bool):
        return False
    if isinstance(x, (float, complex)):
        return True
    dt = getattr(x, "dtype", None)
    return isinstance(dt, np.dtype) and dt.kind in "fc" and not isinstance(x, type)


def tmap(f, *xs):
    x0 = xs[0]
    if isinstance(x0, (list, tuple)) and not hasattr(x0, "_fields"):
        return type(x0)(tmap(f, *ys) for ys in zip(*xs))
    if isinstance(x0, tuple):                       # namedtuple results (eigh, svd, ...)
        return tuple(tmap(f, *ys) for ys in zip(*xs))
    return f(*xs)


def random_like(x, rng):
    def leaf(v):
        if not is_float_leaf(v):
            return None
        shp = np.shape(v)
        r = rng.standard_normal(shp)
        dt = np.result_type(v)
        if dt.kind == "c":
            r = r + 1j * rng.standard_normal(shp)
        if isinstance(v, (float, complex)):
            return type(v)(r)
        return np.asarray(r, dtype=dt)
    return tmap(leaf, x)


def axpy(x, a, v):
    return tmap(lambda xi, vi: xi if vi is None else xi + a * vi, x, v)


def inner(a, b):
    """Real inner product Re <a, b> over the leaves where both are present."""
    tot = 0.0
    la, lb = leaves(a), leaves(b)
    assert len(la) == len(lb), (len(la), len(lb))
    for x, y in zip(la, lb):
        if x is None or y is None or (type(x) is float and x == 0.0 and np.ndim(y)):
            continue
        tot += float(np.real(np.sum(np.conj(np.asarray(x)) * np.asarray(y))))
    return tot


def leaves(x):
    if isinstance(x, (list, tuple)):
        out = []
        for e in x:
            out += leaves(e)
        return out
    return [x]


def cast(x, kind):
    """Float leaves of a tree as float32 (complex64 for complex ones: 'f4') or complex128 ('c16')."""
    def leaf(v):
        if not is_float_leaf(v):
            return v
        if kind == "f4":
            if not hasattr(v, "dtype") or isinstance(v, np.generic):
                return v
            # (a complex leaf stays complex, in single precision: float32 would drop its
            # imaginary part)
            return np.asarray(v, dtype=np.complex64 if v.dtype.kind == "c" else np.float32)
        return v
    return tmap(leaf, x)


# -- the check ------------------------------------------------------------------------------------
def bind(case, rule, args, kwargs):
    return rule.signature.bind(*args, **kwargs)


def adjoints(case, rule, args, kwargs, g, ans):
    bound = rule.bind(args, kwargs)
    if rule.joint:
        names, _ = rule.joint
        vals = rule.adjoint_function("*")(g, ans, **bound)
        return dict(zip(names, vals)), bound
    out = {}
    wrt = case.wrt or tuple(p for p in rule.differentiable
                            if p in bound and _has_float(bound[p]))
    for p in wrt:
        out[p] = rule.adjoint_function(p)(g, ans, **bound)
    return out, bound


def _has_float(v):
    return any(is_float_leaf(x) for x in leaves(v))


def check_case(case, rng, dtype="f8"):
    rule = case.rule()
    assert rule is not None, f"no rule for {case.name()}"
    args, kwargs = case.make(rng, complex) if dtype == "c16" else case.make(rng)
    if dtype == "f4":
        args, kwargs = cast(args, "f4"), kwargs
    post = case.post or (lambda y: y)
    ans = post(case.call(args, kwargs))
    g = random_like(ans, rng)
    adj, bound = adjoints(case, rule, args, kwargs, g, ans)
    assert adj, f"{case.name()}: nothing to check"
    if dtype == "f4":
        for p, a in adj.items():
            for x, gx in zip(leaves(bound[p]), leaves(a)):
                if hasattr(x, "dtype") and not isinstance(x, np.generic) and gx is not None:
                    assert gx.dtype == x.dtype, (case.name(), p, gx.dtype, x.dtype)
                    assert gx.shape == x.shape, (case.name(), p, gx.shape, x.shape)
        return
    ba = rule.signature.bind(*args, **kwargs)
    dirs = {p: random_like(ba.arguments[p], rng) for p in adj}
    # adjoint side
    lhs = 0.0
    for p, a in adj.items():
        x = ba.arguments[p]
        for xi, ai in zip(leaves(x), leaves(a)):
            if is_float_leaf(xi) and ai is not None:
                ai_arr = np.asarray(ai)
                assert ai_arr.shape == np.shape(xi), (case.name(), p, ai_arr.shape, np.shape(xi))
                if hasattr(xi, "dtype"):
                    xk, ak = np.result_type(xi).kind, ai_arr.dtype.kind
                    assert ak == xk, (case.name(), p, "dtype", ai_arr.dtype, np.result_type(xi))
        lhs += inner(a, dirs[p])

    # finite-difference side
    def at(s):
        b2 = rule.signature.bind(*args, **kwargs)
        for p in adj:
            b2.arguments[p] = axpy(b2.arguments[p], s * case.eps, dirs[p])
        return post(case.call(b2.args, b2.kwargs))

    fp, fm = at(1.0), at(-1.0)
    df = tmap(lambda a, b: (np.asarray(a) - np.asarray(b)) / (2 * case.eps)
              if is_float_leaf(np.asarray(a)) else None, fp, fm)
    rhs = inner(g, df)
    scale = max(1.0, abs(lhs), abs(rhs))
    assert abs(lhs - rhs) <= case.rtol * scale * 10 + 1e-7 * scale, \
        f"{case.name()} [{dtype}]: adjoint {lhs!r} vs finite differences {rhs!r}"


# -- tangents (forward mode) ----------------------------------------------------------------------
def tangent_function(rule, param):
    """The rule's tangent template for ``param`` compiled into ``f(t, ans, **params)``."""
    from s2sad import runtime
    from s2sad.rules.registry import NAMESPACE
    key = ("jvp-test", param)
    fn = rule._compiled.get(key)
    if fn is None:
        params = ", ".join(["t", "ans"] + list(rule.signature.parameters))
        src = f"def _tangent({params}):\n    return {rule.jvp[param].strip()}\n"
        glb = dict(NAMESPACE)
        glb["_rt"] = runtime
        exec(compile(src, f"<jvp {rule.name}:{param}>", "exec"), glb)
        fn = rule._compiled[key] = glb["_tangent"]
    return fn


def check_tangent(case, rng, dtype="f8"):
    """Sum of the rule's tangent templates along random directions vs central differences."""
    rule = case.rule()
    args, kwargs = case.make(rng, complex) if dtype == "c16" else case.make(rng)
    if dtype == "f4":
        args = cast(args, "f4")
    post = case.post or (lambda y: y)
    ans = post(case.call(args, kwargs))
    bound = rule.bind(args, kwargs)
    wrt = case.wrt or tuple(p for p in rule.differentiable if p in bound and _has_float(bound[p]))
    wrt = tuple(p for p in wrt if p in rule.jvp)
    if not wrt:
        return False
    if dtype == "f4":
        # the tangent in a float32 array argument has the output's dtype (float32 for a float32
        # output: no float64 from an integer count or a float64 constant in the template)
        ba = rule.signature.bind(*args, **kwargs)
        for p in wrt:
            xs = [x for x in leaves(ba.arguments[p]) if is_float_leaf(x)]
            if not xs or not all(isinstance(x, np.ndarray) for x in xs):
                continue                # (a Python float's tangent is a Python float)
            tv = tmap(lambda d: 0.0 if d is None else d, random_like(ba.arguments[p], rng))
            tp = tangent_function(rule, p)(tv, ans, **bound)
            for tl, al in zip(leaves(tp), leaves(ans)):
                if is_float_leaf(al) and hasattr(al, "dtype") and hasattr(tl, "dtype"):
                    assert np.result_type(tl) == np.result_type(al), \
                        (case.name(), p, "tangent dtype", np.result_type(tl), np.result_type(al))
        return True
    ba = rule.signature.bind(*args, **kwargs)
    dirs = {p: random_like(ba.arguments[p], rng) for p in wrt}
    tan = None
    for p in wrt:
        tv = tmap(lambda d: 0.0 if d is None else d, dirs[p])
        tp = tangent_function(rule, p)(tv, ans, **bound)
        tan = tp if tan is None else tmap(lambda u, v: u + v, tan, tp)

    def at(s):
        b2 = rule.signature.bind(*args, **kwargs)
        for p in wrt:
            b2.arguments[p] = axpy(b2.arguments[p], s * case.eps, dirs[p])
        return post(case.call(b2.args, b2.kwargs))

    fp, fm = at(1.0), at(-1.0)
    if isinstance(ans, tuple):                 # tuple results (lstsq): leaf by leaf, floats only
        pairs = [(tl, (np.asarray(a) - np.asarray(b)) / (2 * case.eps))
                 for tl, a, b, y in zip(leaves(tan), leaves(fp), leaves(fm), leaves(ans))
                 if is_float_leaf(y)]
    else:
        pairs = [(tan, (np.asarray(fp) - np.asarray(fm)) / (2 * case.eps))]
    for tl, fd in pairs:
        tl = np.asarray(tl)
        assert tl.shape == fd.shape, (case.name(), tl.shape, fd.shape)
        err = np.max(np.abs(tl - fd)) if fd.size else 0.0
        scale = max(1.0, float(np.max(np.abs(fd))) if fd.size else 1.0)
        assert err <= case.rtol * 10 * scale, f"{case.name()} [{dtype}] tangent: max error {err}"
    return True


def rule_params(cases):
    """pytest params for the adjoint checks: every case at float64, plus float32 and complex128
    where the case allows them."""
    import pytest
    out = []
    for c in cases:
        out.append(pytest.param(c, "f8", id=c.name() + "-f8"))
        if c.f32:
            out.append(pytest.param(c, "f4", id=c.name() + "-f4"))
        if c.cplx:
            out.append(pytest.param(c, "c16", id=c.name() + "-c16"))
    return out


def tangent_params(cases):
    """pytest params for the tangent checks: cases whose rule has jvp templates (float32: the
    tangents' dtype)."""
    import pytest
    out = []
    for c in cases:
        r = c.rule()
        if r is not None and r.jvp:
            out.append(pytest.param(c, "f8", id=c.name() + "-f8"))
            if c.f32:
                out.append(pytest.param(c, "f4", id=c.name() + "-f4"))
            if c.cplx:
                out.append(pytest.param(c, "c16", id=c.name() + "-c16"))
    return out


def run_rule(case, dtype):
    check_case(case, np.random.default_rng(zlib.crc32((case.name() + dtype).encode())), dtype)


def run_tangent(case, dtype):
    check_tangent(case, np.random.default_rng(zlib.crc32((case.name() + dtype + "jvp").encode())),
                  dtype)
