"""jvp(..., jit=True): the forward-mode derivative compiled with numba.njit gives the Python-mode
jvp's numbers (to 1e-12) and finite differences' directional derivatives, compiles (no fallback)
for loops, elementwise chains, matrix products and a rule without a tangent template, and falls
back to Python with one warning naming the user's line where numba cannot compile it."""
import math
import os
import warnings

import numpy as np
import pytest

import s2sad
from s2sad.api import forward_source
from s2sad.cache import forward_jit_derivative
from s2sad.runtime.values import type_of as of_value
from s2sad.errors import JitFallbackWarning
from s2sad.runtime import kind_of
from s2sad.testing import check_grads, numerical_grad

numba = pytest.importorskip("numba")

HERE = os.path.basename(__file__)


def sum_sin_loop(x, y):
    s = 0.0
    i = 0
    while i < x.shape[0]:
        s = s + np.sin(x[i]) * y
        i += 1
    return s


def _sum(f, x):                 # benchmarks/ratio.py's _sum_sin_1000: a helper inlined
    y = 0.0
    n = 0
    while n < len(x):
        y += f(x[n])
        n += 1
    return y


def sum_sin_1000(x):
    return _sum(math.sin, x)


def chain(x):
    return np.exp(np.tanh(x) * 2.0) / (1.0 + x * x) - np.sqrt(x * x + 1.0)


def products(A, B, v):
    h = np.tanh(A @ B) @ v
    return np.sum(h * h) + np.dot(v, A.T @ v)


def cholesky_logdet(A):         # np.linalg.cholesky's rule has no jvp= template
    L = np.linalg.cholesky(A @ A.T + 3.0 * np.eye(A.shape[0]))
    return 2.0 * np.sum(np.log(np.diag(L))) + np.sum(L * L)


def cholesky_factor(A):         # an array output, through the same rule
    return np.linalg.cholesky(A @ A.T + 3.0 * np.eye(A.shape[0])) * 2.0


def iterate_raveled(x):          # a loop over an array (_fw.seq_tangent), x.ravel()'s tangent
    s = 0.0                     # (its template's order='C' left out: numba's ravel takes none)
    for v in x.ravel():
        s = s + np.sin(v) * v
    return s


def fsum_sum(x):                # numba has no math.fsum
    s = math.fsum(x * x)
    return np.sum(s * x)


def _rng():
    return np.random.default_rng(12)


def _compiled(f, args, mask):
    """The cached compiled derivative jvp(f, args, ..., jit=True) used."""
    return forward_jit_derivative(f, tuple(mask), tuple(kind_of(a) for a in args), {},
                                  tuple(of_value(a) for a in args))


def _jvp_both(f, args, tangents):
    """(jit jvp, Python jvp), with a fallback warning an error (the compiled one must compile)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        compiled = s2sad.jvp(f, args, tangents, jit=True)
    python = s2sad.jvp(f, args, tangents, jit=False)
    return compiled, python


def _same(a, b, tol=1e-12):
    np.testing.assert_allclose(np.asarray(a[0]), np.asarray(b[0]), rtol=tol, atol=tol)
    np.testing.assert_allclose(np.asarray(a[1]), np.asarray(b[1]), rtol=tol, atol=tol)


def _fd(f, args, tangents):
    """Central-difference directional derivative of f along the tangents (None: no tangent)."""
    eps = 1e-6
    plus = [a if t is None else a + eps * t for a, t in zip(args, tangents)]
    minus = [a if t is None else a - eps * t for a, t in zip(args, tangents)]
    return (np.asarray(f(*plus)) - np.asarray(f(*minus))) / (2 * eps)


@pytest.mark.parametrize("case", ["loop", "inlined", "chain", "products", "cholesky",
                                  "cholesky_array", "iterate"])
def test_compiled_jvp_matches_python_and_differences(case):
    r = _rng()
    x = r.standard_normal(9)
    A, B = r.standard_normal((4, 4)), r.standard_normal((4, 4))
    v = r.standard_normal(4)
    f, args, tangents = {
        "loop": (sum_sin_loop, (x, 0.7), (r.standard_normal(9), 0.3)),
        "inlined": (sum_sin_1000, (x,), (r.standard_normal(9),)),
        "chain": (chain, (np.abs(x),), (r.standard_normal(9),)),
        "products": (products, (A, B, v), (r.standard_normal((4, 4)), None,
                                           r.standard_normal(4))),
        "cholesky": (cholesky_logdet, (A,), (r.standard_normal((4, 4)),)),
        "cholesky_array": (cholesky_factor, (A,), (r.standard_normal((4, 4)),)),
        "iterate": (iterate_raveled, (A.T,), (r.standard_normal((4, 4)),)),
    }[case]
    compiled, python = _jvp_both(f, args, tangents)
    _same(compiled, python)
    np.testing.assert_allclose(np.asarray(compiled[1]), _fd(f, args, tangents), rtol=1e-6,
                               atol=1e-7)
    mask = [t is not None for t in tangents]
    c = _compiled(f, args, mask)
    assert c.failed is None and len(c.dispatcher().overloads) == 1     # (it compiled)


def test_loop_output_type_and_value():
    x = np.linspace(0.1, 1.0, 5)
    value, tangent = s2sad.jvp(sum_sin_loop, (x, 2.0), (np.ones(5), 0.0), jit=True)
    assert type(value) is float and type(tangent) is float
    assert value == pytest.approx(2.0 * np.sum(np.sin(x)), abs=1e-13)
    assert tangent == pytest.approx(2.0 * np.sum(np.cos(x)), abs=1e-13)


def test_check_grads_forward_under_S2SAD_JIT(monkeypatch):
    """S2SAD_JIT=1 makes plain jvp compile: check_grads' forward mode goes through it."""
    monkeypatch.setenv("S2SAD_JIT", "1")
    r = _rng()
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        check_grads(sum_sin_loop, (r.standard_normal(6), 0.4), modes=("fwd",))
        check_grads(products, tuple(r.standard_normal(s) for s in ((3, 3), (3, 3), 3)),
                    modes=("fwd",))
        check_grads(cholesky_logdet, (r.standard_normal((3, 3)),), modes=("fwd",))
    x = r.standard_normal(6)
    c = _compiled(sum_sin_loop, (x, 0.4), (True, True))
    assert c.failed is None and c.dispatcher().overloads
    g = numerical_grad(sum_sin_1000, (x,))
    e = np.zeros(6)
    e[2] = 1.0
    assert s2sad.jvp(sum_sin_1000, (x,), (e,))[1] == pytest.approx(g[2], rel=1e-7)


def test_differentiate_jit_jvp_and_printed_source():
    r = _rng()
    A = r.standard_normal((3, 3))
    f = s2sad.differentiate(cholesky_logdet, jit=True)
    t = r.standard_normal((3, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        got = f.jvp((A,), (t,))
    _same(got, s2sad.jvp(cholesky_logdet, (A,), (t,)))
    src = forward_source(cholesky_logdet, 0, A, jit=True)
    assert "for numba.njit (jit=True)" in src.splitlines()[0]
    # the rule has no tangent template: its adjoint, once per output element, in the source
    assert "_fw.basis(L, " in src and "_adj.cholesky(" in src and "_fw.jvp_by_vjp" not in src
    assert "_fw.jvp_by_vjp" in forward_source(cholesky_logdet, 0, A)
    fwd = s2sad.differentiate(cholesky_logdet, mode="forward")
    assert fwd.adjoint_source(A, jit=True) == src
    # a keyword the call left at its default is left out for numba: np.sum(t), not keepdims=
    assert "np.sum(_d_" in src and "keepdims" not in src


def test_fallback_warns_once_naming_the_line():
    r = _rng()
    x, t = r.standard_normal(5), r.standard_normal(5)
    line = fsum_sum.__code__.co_firstlineno + 1
    with pytest.warns(JitFallbackWarning) as rec:
        got = s2sad.jvp(fsum_sum, (x,), (t,), jit=True)
    msgs = [str(w.message) for w in rec if w.category is JitFallbackWarning]
    assert len(msgs) == 1
    assert msgs[0].startswith(f"{HERE}:{line}: jit=True could not compile the derivative of "
                              f"fsum_sum here")
    assert "s = math.fsum(x * x)" in msgs[0]
    assert "It runs as Python" in msgs[0]
    _same(got, s2sad.jvp(fsum_sum, (x,), (t,)))
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)     # once: not again
        again = s2sad.jvp(fsum_sum, (x,), (t,), jit=True)
    _same(again, got)
    np.testing.assert_allclose(got[1], _fd(fsum_sum, (x,), (t,)), rtol=1e-6)


def test_complex_output_of_a_rule_without_template_falls_back():
    """The per-direction adjoint loop has bodies for real outputs only (a complex one needs the
    direction i e_k too): a complex Cholesky factor runs as Python, with the same numbers."""
    r = _rng()
    A = r.standard_normal((3, 3)) + 1j * r.standard_normal((3, 3))
    t = r.standard_normal((3, 3)) + 1j * r.standard_normal((3, 3))

    def hermitian_factor(A):
        L = np.linalg.cholesky(A @ A.conj().T + 3.0 * np.eye(3))
        return np.sum(np.abs(L) ** 2)
    with pytest.warns(JitFallbackWarning, match="hermitian_factor"):
        got = s2sad.jvp(hermitian_factor, (A,), (t,), jit=True)
    _same(got, s2sad.jvp(hermitian_factor, (A,), (t,)))


def test_float32_runs_as_python_with_numpy_dtypes():
    x = np.linspace(0.1, 1.0, 4, dtype=np.float32)
    with pytest.warns(JitFallbackWarning, match="dtype float32"):
        got = s2sad.jvp(chain, (x,), (np.ones(4, np.float32),), jit=True)
    want = s2sad.jvp(chain, (x,), (np.ones(4, np.float32),))
    assert got[1].dtype == want[1].dtype == np.float32
    np.testing.assert_array_equal(got[1], want[1])


def float32_first(x):
    return np.sum(np.exp(np.tanh(x) * 2.0) / (1.0 + x * x))


def test_float32_call_leaves_float64_compiled():
    """The compiled derivatives are cached by type class (float32 and float64 arrays share one):
    a float32 call, which runs as Python, must not stop the same function's float64 calls from
    compiling, in forward or reverse mode (it did: the float32 refusal marked the shared compiled
    derivative failed for good, a test-order dependent failure of the [chain] case above)."""
    x = np.linspace(0.1, 1.0, 4)
    t = np.ones(4)
    with pytest.warns(JitFallbackWarning, match="dtype float32"):
        s2sad.jvp(float32_first, (x.astype(np.float32),), (t.astype(np.float32),), jit=True)
        s2sad.grad(float32_first, jit=True)(x.astype(np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        got = s2sad.jvp(float32_first, (x,), (t,), jit=True)
        g = s2sad.grad(float32_first, jit=True)(x)
    _same(got, s2sad.jvp(float32_first, (x,), (t,)))
    np.testing.assert_allclose(g, s2sad.grad(float32_first)(x), rtol=1e-12)
    c = _compiled(float32_first, (x,), [True])
    assert c.failed is None and len(c.dispatcher().overloads) == 1
    with warnings.catch_warnings():     # the float32 refusal warned once per compiled derivative
        warnings.simplefilter("error", JitFallbackWarning)
        s2sad.jvp(float32_first, (x.astype(np.float32),), (t.astype(np.float32),), jit=True)


def scale_in_place(x):
    for i in range(x.shape[0]):
        x[i] = x[i] * (i + 1.0)
    return np.sum(np.sin(x))


def test_refusals_are_the_same_in_jit_mode():
    """What s2sad refuses it refuses in jit mode too, naming the user's line (no fallback, no
    compiled guess): a write into an argument."""
    from s2sad.errors import ArgumentWriteError
    x = np.linspace(0.0, 1.0, 4)
    line = scale_in_place.__code__.co_firstlineno + 2
    for jit in (True, False):
        with pytest.raises(ArgumentWriteError, match=f"{HERE}:{line}: this line writes"):
            s2sad.jvp(scale_in_place, (x.copy(),), (np.ones(4),), jit=jit)


def test_closure_callee_falls_back_naming_the_call():
    """A nested function that is not inlined (it has a default value; one called by its name
    without is: test_jit_closures.py) cannot be compiled: the warning names the line that makes
    it."""
    def outer(x, a):
        def inner(v, b=1.5):
            return np.sin(v) * a * b
        return np.sum(inner(x))
    x, t = np.linspace(0.0, 1.0, 4), np.ones(4)
    line = outer.__code__.co_firstlineno + 1
    made = f"{HERE}:{line}: .*\n    def inner\\(v, b=1.5\\):"
    with pytest.warns(JitFallbackWarning, match=made) as rec:
        got = s2sad.jvp(outer, (x, 2.0), (t, None), jit=True)
    assert sum(w.category is JitFallbackWarning for w in rec) == 1
    _same(got, s2sad.jvp(outer, (x, 2.0), (t, None)))


def test_repeated_calls_check_what_types_do_not_settle():
    """Calls with arguments of an earlier call's types reuse its compiled derivative; a tangent
    of another shape is still refused, a float tangent of an array still means zeros, and other
    types build another specialisation."""
    from s2sad.errors import ArgumentError
    r = _rng()
    x, t = r.standard_normal(6), r.standard_normal(6)
    first = s2sad.jvp(sum_sin_loop, (x, 0.5), (t, 1.0), jit=True)
    again = s2sad.jvp(sum_sin_loop, (x, 0.5), (t, 1.0), jit=True)
    _same(first, again)
    _same(first, s2sad.jvp(sum_sin_loop, (x, 0.5), (t, 1.0)))
    with pytest.raises(ArgumentError, match="tangent"):
        s2sad.jvp(sum_sin_loop, (x, 0.5), (t[:5], 1.0), jit=True)
    y = r.standard_normal(3)
    _same(s2sad.jvp(sum_sin_loop, (y, 0.5), (np.ones(3), 0.0), jit=True),
          (0.5 * np.sum(np.sin(y)), 0.5 * np.sum(np.cos(y))))
    X = r.standard_normal((4, 2))     # a 2-d x: s is a float, then an array (numba: one type)
    line = sum_sin_loop.__code__.co_firstlineno + 4
    with pytest.warns(JitFallbackWarning, match=f"{HERE}:{line}: .*sum_sin_loop"):
        got = s2sad.jvp(sum_sin_loop, (X, 0.5), (np.ones((4, 2)), 0.0), jit=True)
    np.testing.assert_allclose(got[1], 0.5 * np.cos(X).sum(axis=0), rtol=1e-12)
    _same(got, s2sad.jvp(sum_sin_loop, (X, 0.5), (np.ones((4, 2)), 0.0)))
    # (the 1-d specialisation is still compiled)
    c = _compiled(sum_sin_loop, (x, 0.5), (True, True))
    assert c.failed is None
