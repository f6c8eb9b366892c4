"""Functions and modules passed as arguments are fixed when the derivative is built
(frontend/statics.py): the derivative is specialised on their identity and calls them directly."""
import math

import numpy as np
import pytest

import s2sad
from s2sad.testing import check_grads


def identity(x):
    return x


def square(x):
    return x * x


def apply_sum(f, x):
    y = 0.0
    n = 0
    while n < len(x):
        y += f(x[n])
        n += 1
    return y


def through(f, x):
    return apply_sum(f, x) * 2.0


def with_module(xp, x):
    la = xp.linalg
    y = xp.tanh(x)
    return xp.sum(y * y) + la.norm(y)


@pytest.mark.parametrize("f", [identity, square, math.sin, np.cos, np.exp, np.sum])
def test_function_arguments_are_called_directly(f):
    x = np.random.default_rng(0).standard_normal(6)
    check_grads(apply_sum, (f, x), wrt=1)
    check_grads(through, (f, x), wrt=1)
    src = s2sad.differentiate(apply_sum, wrt=1).adjoint_source(f, x)
    assert "_rt.call" not in src and "_rt.pull" not in src     # nothing resolved at run time


def test_each_function_gets_its_own_derivative():
    x = np.random.default_rng(1).standard_normal(5)
    g = s2sad.grad(apply_sum, 1)
    np.testing.assert_allclose(g(identity, x), np.ones(5))
    np.testing.assert_allclose(g(square, x), 2 * x)
    np.testing.assert_allclose(g(math.sin, x), np.cos(x))
    np.testing.assert_allclose(g(identity, x), np.ones(5))


def test_module_argument_resolves_its_functions():
    x = np.random.default_rng(2).standard_normal(4)
    check_grads(with_module, (np, x), wrt=1)
    src = s2sad.differentiate(with_module, wrt=1).adjoint_source(np, x)
    assert "numpy.tanh(x)" in src and "_rt.call" not in src and "_b_xp" not in src


def test_closures_and_lambdas_stay_dynamic():
    x = np.random.default_rng(3).standard_normal(4)
    c = 3.0
    g = s2sad.grad(apply_sum, 1)
    np.testing.assert_allclose(g(lambda v: c * v, x), 3 * np.ones(4))
    c = 5.0
    np.testing.assert_allclose(g(lambda v: c * v, x), 5 * np.ones(4))


def _helpers_module():
    import types
    mod = types.ModuleType("s2sad_test_helpers")
    mod.sub = types.ModuleType("s2sad_test_helpers.sub")
    mod.sub.square = square                 # a module-level Python function: a constant
    mod.sub.deeper = types.ModuleType("s2sad_test_helpers.sub.deeper")
    mod.sub.deeper.square = square
    return mod


def chained_names(mod, x):
    sub = mod.sub                           # three names bound in a chain of constants
    deeper = sub.deeper
    sq = deeper.square
    f = sub.square
    return np.sum(sq(x) * f(x))


def test_a_chain_of_constant_names_is_built_in_finite_time():
    # Two names bound in a chain (`la = xp.linalg; solve = la.solve` with CuPy's solve, a plain
    # Python function) took turns being made constants for ever: building the derivative never
    # returned (found on the H200 in a graph-mode test of cupy.linalg.solve).
    x = np.random.default_rng(0).standard_normal(4)
    mod = _helpers_module()
    g = s2sad.grad(chained_names, wrt=1)(mod, x)
    np.testing.assert_allclose(g, 4 * x ** 3)
    check_grads(lambda x: chained_names(mod, x), (x,))


def bound_function(xp, x):
    la = xp.linalg                          # a NumPy function bound to a name, then called
    f = la.norm
    return f(x) * xp.sum(xp.sin(x))


def body_module(x):
    xp = np                                 # the module read from the globals, then chained
    la = xp.linalg
    f = la.norm
    g = xp.tanh
    return f(g(x)) + xp.sum(x * x)


def chain_in_loop(mod, x):
    sub = mod.sub                           # a chain of three, the function called in a loop
    deeper = sub.deeper
    sq = deeper.square
    s = 0.0
    for i in range(2):
        s = s + np.sum(sq(x * (i + 1)))
    if s > 0:
        s = s * 2.0
    return s


def bound_in_loop(xp, x):
    s = 0.0
    k = 0
    while k < 3:
        la = xp.linalg                      # bound once, inside the loop
        s = s + la.norm(x) * k
        k += 1
    return s


@pytest.mark.parametrize("f, args", [
    (bound_function, lambda x: (np, x)), (body_module, lambda x: (x,)),
    (chain_in_loop, lambda x: (_helpers_module(), x)), (bound_in_loop, lambda x: (np, x))],
    ids=["bound_function", "body_module", "chain_in_loop", "bound_in_loop"])
def test_module_chains_in_both_modes(f, args):
    x = np.random.default_rng(4).standard_normal(4)
    check_grads(f, args(x), wrt=len(args(x)) - 1, modes=("rev", "fwd"))


def test_a_numpy_function_bound_to_a_name_is_called_directly():
    # np.linalg.norm is a numpy._ArrayFunctionDispatcher under NumPy 2, not a Python function:
    # `f = la.norm; f(x)` was a call resolved at run time (_rt.call), which numba cannot compile
    x = np.random.default_rng(5).standard_normal(4)
    src = s2sad.differentiate(bound_function, wrt=1).adjoint_source(np, x)
    assert "numpy.linalg.norm(x)" in src and "_rt.call" not in src
    src = s2sad.differentiate(bound_function, wrt=1, mode="forward").forward_source(np, x)
    assert "_rt.call" not in src and "jvp_call" not in src


def module_tanh(xp, x):
    t = xp.tanh                             # a ufunc bound to a name, from a module argument
    return xp.sum(t(x) * x) + apply_sum(xp.sin, x)


def rebinds(xp, x):
    if x[0] > 100.0:
        xp = np                             # assigned in the body: not fixed, read at run time
    return xp.sum(x * x)


def _no_fallback(run):
    import warnings
    from s2sad.errors import JitFallbackWarning
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        return run()


@pytest.mark.parametrize("f, arg", [(apply_sum, square), (apply_sum, np.sin), (module_tanh, np)],
                         ids=["function", "ufunc", "module"])
def test_function_and_module_arguments_compile_in_jit_mode(f, arg):
    # the generated code never reads a fixed parameter: it is passed to numba as 0 (was: every
    # call with a module or function argument fell back, 'argument 0 is function')
    pytest.importorskip("numba")
    x = np.random.default_rng(6).standard_normal(4)
    v = np.random.default_rng(7).standard_normal(4)
    g = _no_fallback(lambda: s2sad.grad(f, 1, jit=True)(arg, x))
    value, t = _no_fallback(lambda: s2sad.jvp(f, (arg, x), (None, v), jit=True))
    g0 = s2sad.grad(f, 1)(arg, x)
    np.testing.assert_allclose(g, g0, rtol=1e-12)
    np.testing.assert_allclose(t, g0 @ v, rtol=1e-12)
    np.testing.assert_allclose(value, f(arg, x), rtol=1e-12)
    check_grads(f, (arg, x), wrt=1, modes=("rev", "fwd"))


def test_a_module_argument_read_at_run_time_falls_back_naming_it():
    pytest.importorskip("numba")
    from s2sad.errors import JitFallbackWarning
    x = np.random.default_rng(8).standard_normal(4)
    with pytest.warns(JitFallbackWarning, match="argument 0 is the module numpy") as rec:
        g = s2sad.grad(rebinds, 1, jit=True)(np, x)
    assert "dtype" not in str(rec[0].message)       # (was: 'an array of dtype <class numpy.dtype>')
    np.testing.assert_allclose(g, 2 * x, rtol=1e-12)


def bound_in_one_branch(xp, x):
    if x[0] > 0:
        la = xp.linalg
    return la.norm(x)


def test_a_name_bound_on_one_path_only_is_not_a_constant():
    # `la` made a constant was read on the path that never binds it: s2sad gave a gradient where
    # Python raises UnboundLocalError (the plain function has no value there)
    x = np.array([-1.0, 2.0, 3.0])
    with pytest.raises(UnboundLocalError):
        bound_in_one_branch(np, x)
    with pytest.raises(UnboundLocalError):
        s2sad.grad(bound_in_one_branch, 1)(np, x)
    with pytest.raises(UnboundLocalError):
        s2sad.jvp(bound_in_one_branch, (np, x), (None, np.ones(3)))
    np.testing.assert_allclose(s2sad.grad(bound_in_one_branch, 1)(np, -x), -x / np.linalg.norm(x))
    check_grads(bound_in_one_branch, (np, -x), wrt=1, modes=("rev", "fwd"))


# -- local aliases of module-level functions and modules (``xp = np``) ---------------------------
ACT = np.tanh


def alias_module(x):
    xp = np
    return xp.sum(xp.sin(x) * x)


def alias_function(x):
    act = ACT
    return np.sum(act(x) * x)


def alias_on_one_path(x, flag):
    if flag:
        act = np.sin
    else:
        act = np.cos
    return np.sum(act(x))


def test_a_local_alias_of_numpy_is_a_constant():
    x = np.linspace(-1.0, 1.0, 7)
    src = s2sad.differentiate(alias_module).adjoint_source(x)
    assert "_rt.call" not in src and "_b_xp" not in src and "np.sin(x)" in src, src
    check_grads(alias_module, (x,), modes=("rev", "fwd"))


def test_a_local_alias_of_numpy_compiles_with_jit():
    pytest.importorskip("numba")
    import warnings
    x = np.linspace(-1.0, 1.0, 7)
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # (no JitFallbackWarning)
        g = s2sad.grad(alias_module, jit=True)(x)
    np.testing.assert_allclose(g, np.cos(x) * x + np.sin(x), rtol=1e-12)


def test_rebinding_the_aliased_global_rebuilds():
    global ACT
    x = np.linspace(-1.0, 1.0, 5)
    g = s2sad.grad(alias_function)
    try:
        ACT = np.tanh
        np.testing.assert_allclose(g(x), (1 - np.tanh(x) ** 2) * x + np.tanh(x), rtol=1e-12)
        ACT = np.sin
        np.testing.assert_allclose(g(x), np.cos(x) * x + np.sin(x), rtol=1e-12)
    finally:
        ACT = np.tanh


def test_an_alias_bound_on_two_paths_stays_a_variable():
    x = np.linspace(-1.0, 1.0, 5)
    np.testing.assert_allclose(s2sad.grad(alias_on_one_path)(x, True), np.cos(x), rtol=1e-12)
    np.testing.assert_allclose(s2sad.grad(alias_on_one_path)(x, False), -np.sin(x), rtol=1e-12)
