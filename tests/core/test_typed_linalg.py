"""Types of linear-algebra calls (classify/types.py ``_linalg``): ``np.linalg.cholesky``/``inv``/
``solve``/``det``, ``np.diag``/``diagonal``/``trace``/``outer``/``eye``/``tril``/``triu``, and
SciPy's ``solve_triangular``/``solve``/``cholesky``/``inv``/``expm``.

Each inferred type is checked against the value the function really computes (a type the
emitter trusts leaves out run-time checks, so a wrong one is a wrong gradient), and the typed
derivative of a GP log likelihood reads plain: no ``unbroadcast`` or ``conj`` between numbers
after its solve."""
import math
import sys

import numpy as np
import pytest
import scipy.linalg

import s2sad
from s2sad import runtime
from s2sad.classify import types as T
from s2sad.codegen.build import lower_function
from s2sad.frontend import statics
from s2sad import classify as C
from s2sad.runtime.values import type_of
from s2sad.testing import check_grads


def square_things(A, b, B):
    L = np.linalg.cholesky(A @ A.T + 3.0 * np.eye(A.shape[0]))
    Ai = np.linalg.inv(A)
    x = np.linalg.solve(A, b)
    X = np.linalg.solve(A, B)
    det = np.linalg.det(A)
    dg = np.diag(L)
    D = np.diag(b)
    dgl = np.diagonal(A)
    tr = np.trace(A)
    o = np.outer(b, x)
    lo = np.tril(A)
    up = np.triu(A, 1)
    eye = np.identity(3)
    s = np.sum(dg) + det + tr
    return s + np.sum(Ai) + np.sum(X) + np.sum(D) + np.sum(dgl) + np.sum(o) + np.sum(lo + up + eye)


def scipy_things(A, b, B):
    L = scipy.linalg.cholesky(A @ A.T + 3.0 * np.eye(3), lower=True)
    a = scipy.linalg.solve_triangular(L, b, lower=True)
    M = scipy.linalg.solve_triangular(L, B, lower=True, trans=1)
    y = scipy.linalg.solve(A, b)
    Ai = scipy.linalg.inv(A)
    E = scipy.linalg.expm(0.1 * A)
    q = a @ a
    return q + np.sum(M) + np.sum(y) + np.sum(Ai) + np.sum(E)


def int_matrix(A):                      # an integer matrix: float results
    Ai = np.linalg.inv(A)
    det = np.linalg.det(A)
    return np.sum(Ai) + det


def _inferred(f, args):
    fn = lower_function(f)
    kinds = statics.bind(fn, tuple(runtime.kind_of(a) for a in args))
    C.classify(fn, dict(zip(fn.params, kinds)))
    return T.infer(fn, tuple(type_of(a) for a in args))


def _locals_at_return(f, args):
    seen = {}

    def tracer(frame, event, arg):
        if frame.f_code is f.__code__:
            if event == "return":
                seen.update(frame.f_locals)
            return tracer
        return None
    sys.settrace(tracer)
    try:
        f(*args)
    finally:
        sys.settrace(None)
    return seen


def _args():
    r = np.random.default_rng(5)
    return r.standard_normal((3, 3)), r.standard_normal(3), r.standard_normal((3, 2))


@pytest.mark.parametrize("f, args, names", [
    (square_things, _args(), ["L", "Ai", "x", "X", "det", "dg", "D", "dgl", "tr", "o", "lo",
                              "up", "eye", "s"]),
    (scipy_things, _args(), ["L", "a", "M", "y", "Ai", "E", "q"]),
    (int_matrix, (np.array([[2, 1], [1, 3]]),), ["Ai", "det"]),
])
def test_inferred_types_are_the_values_types(f, args, names):
    inferred = _inferred(f, args)
    real = _locals_at_return(f, args)
    for name in names:
        assert name in inferred, (name, inferred)
        assert inferred[name] == type_of(real[name]), (name, inferred[name], real[name])


def gp(x, y, s):
    d = x[:, None] - x[None, :]
    K = np.exp(-0.5 * d ** 2)
    L = np.linalg.cholesky(K + s * np.eye(len(x)))
    alpha = scipy.linalg.solve_triangular(L, y, lower=True)
    return (-0.5 * (alpha @ alpha) - np.sum(np.log(np.diag(L)))
            - 0.5 * len(x) * math.log(2 * math.pi))


def test_gp_derivative_is_plain_after_the_solve():
    r = np.random.default_rng(2)
    x, y = np.sort(r.uniform(-2, 2, 12)), r.standard_normal(12)
    src = s2sad.differentiate(gp, wrt=(0, 1, 2)).adjoint_source(x, y, 0.3)
    bwd = src[src.index("__bwd("):]
    assert "_rt.unbroadcast(_b_r" not in bwd and "_rt.cj(" not in bwd, src
    assert "_b_12 = _b_16" in bwd or "= _b_r " in bwd, src
    check_grads(gp, (x, y, 0.3), wrt=(0, 1, 2), modes=("rev", "fwd"))
    check_grads(square_things, _args(), wrt=(0, 1, 2), modes=("rev",))
    check_grads(scipy_things, _args(), wrt=(0, 1, 2), modes=("rev",))
