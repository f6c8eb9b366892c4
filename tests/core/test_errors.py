"""Point 10 of issue 2: bad input gets an S2SADError subclass whose message names the user's
file:line and the fix."""
import inspect
import math
import os
import re
import textwrap

import numpy as np
import pytest

import s2sad
from s2sad import errors
from core_util import randn

HERE = os.path.abspath(__file__)


def line_of(fn, marker):
    """The file line number of the first line of ``fn`` containing ``marker``."""
    lines, start = inspect.getsourcelines(fn)
    for k, text in enumerate(lines):
        if marker in text:
            return start + k
    raise LookupError(marker)


def test_one_base_class():
    for cls in (s2sad.UnsupportedSyntaxError, s2sad.SourceUnavailableError,
                s2sad.OpaqueCalleeError, s2sad.NonScalarOutputError, s2sad.WrtError,
                s2sad.RuleError, s2sad.DeviceMismatchError):
        assert issubclass(cls, s2sad.S2SADError)
        assert getattr(errors, cls.__name__) is cls


# -- unsupported constructs --------------------------------------------------------------------------
STATE = 0.0


def uses_generator(x):
    yield x * 2.0                            # MARK


async def uses_async(x):
    return x * 2.0                           # MARK


def writes_global(x):
    global STATE
    STATE = x * x                            # MARK
    return STATE * 2.0


# Constructs s2sad refuses (the list shrinks as the language grows; these are meant to stay).
UNSUPPORTED = [(uses_generator, ("yield", "generator")), (uses_async, ("async",)),
               (writes_global, ("global",))]


@pytest.mark.parametrize("fn, words", UNSUPPORTED, ids=[f.__name__ for f, _ in UNSUPPORTED])
def test_unsupported_construct_named_with_file_and_line(fn, words):
    before = STATE
    with pytest.raises(s2sad.UnsupportedSyntaxError) as ei:
        s2sad.grad(fn)(1.5)
    msg = str(ei.value)
    lines, start = inspect.getsourcelines(fn)
    candidates = [f"{HERE}:{start + k}" for k in range(len(lines))]
    assert any(c in msg for c in candidates), msg
    assert any(w in msg.lower() for w in words), msg
    assert "Fix:" in msg
    assert STATE == before                   # refused before anything ran


def undefined_name(x):
    return x * not_defined_anywhere          # noqa: F821  MARK


def test_undefined_name():
    with pytest.raises(s2sad.S2SADError) as ei:
        s2sad.grad(undefined_name)(1.0)
    msg = str(ei.value)
    assert "not_defined_anywhere" in msg
    assert f"{HERE}:{line_of(undefined_name, 'MARK')}" in msg


# -- opaque callee on an active value ------------------------------------------------------------
def uses_fsum(x, y):
    s = math.dist((x + y,), (0.7,))          # MARK  (a built-in without a rule)
    return s * x


def test_opaque_callee_on_active_value():
    with pytest.raises(s2sad.OpaqueCalleeError) as ei:
        s2sad.grad(uses_fsum)(0.5, 0.25)
    msg = str(ei.value)
    assert f"{HERE}:{line_of(uses_fsum, 'MARK')}" in msg, msg
    assert "dist" in msg
    assert "s2sad.defrule(" in msg and "defzero" in msg


def test_opaque_error_rule_skeleton_is_ready_to_paste():
    with pytest.raises(s2sad.OpaqueCalleeError) as ei:
        s2sad.grad(uses_fsum)(0.5, 0.25)
    msg = str(ei.value)
    start = msg.rindex("\n", 0, msg.index("import s2sad")) + 1
    block = []
    for line in msg[start:].splitlines():
        if not line.strip():
            break
        block.append(line)
    skeleton = textwrap.dedent("\n".join(block))
    compile(skeleton, "<skeleton>", "exec")          # it is valid Python
    assert skeleton.startswith("import s2sad\ns2sad.defrule(math.dist,")


def opaque_inactive_ok(x):
    n = math.fsum([1.0, 2.0])                # opaque, but nothing active flows in
    return x * n


def test_opaque_callee_without_active_arguments_is_fine():
    assert s2sad.grad(opaque_inactive_ok)(0.5) == pytest.approx(3.0)


# -- grad of a non-scalar output -----------------------------------------------------------------
def vector_out(x):
    return np.sin(x)


def int_out(x):
    return 3


def complex_out(x):
    return x * (1.0 + 2.0j)


def test_grad_of_array_output():
    with pytest.raises(s2sad.NonScalarOutputError) as ei:
        s2sad.grad(vector_out)(randn(3))
    msg = str(ei.value)
    assert "(3,)" in msg and "vjp" in msg
    assert HERE in msg


def test_grad_of_int_output():
    with pytest.raises(s2sad.NonScalarOutputError) as ei:
        s2sad.grad(int_out)(1.0)
    assert "int" in str(ei.value)


def test_grad_of_complex_output():
    with pytest.raises(s2sad.NonScalarOutputError) as ei:
        s2sad.grad(complex_out)(1.0)
    assert "complex" in str(ei.value) or "real" in str(ei.value)


def test_vjp_of_array_output_is_fine():
    x = randn(3)
    v, pb = s2sad.vjp(vector_out, x)
    (g,) = pb(np.ones(3))
    np.testing.assert_allclose(g, np.cos(x), rtol=1e-12)


# -- wrt ---------------------------------------------------------------------------------------------
def two_args(x, n):
    return x * n


def test_wrt_names_a_nonexistent_argument():
    with pytest.raises(s2sad.WrtError) as ei:
        s2sad.grad(two_args, wrt="y")
    msg = str(ei.value)
    assert "'y'" in msg and "x" in msg and "n" in msg
    assert f"{HERE}:" in msg


def test_wrt_index_out_of_range():
    with pytest.raises(s2sad.WrtError) as ei:
        s2sad.grad(two_args, wrt=2)
    assert "2" in str(ei.value)


def test_wrt_in_decorator_checked_at_decoration():
    with pytest.raises(s2sad.WrtError):
        s2sad.differentiate(two_args, wrt="nope")


def test_wrt_on_a_non_differentiable_argument():
    with pytest.raises(s2sad.WrtError) as ei:
        s2sad.grad(two_args, wrt="n")(1.5, 3)
    msg = str(ei.value)
    assert "'n'" in msg and "int" in msg
    assert "Fix:" in msg


def test_wrt_on_an_integer_array():
    with pytest.raises(s2sad.WrtError) as ei:
        s2sad.grad(two_args, wrt=0)(np.arange(3), 2.0)
    assert "int64" in str(ei.value) or "int" in str(ei.value)


def test_wrt_twice():
    with pytest.raises(s2sad.WrtError):
        s2sad.grad(two_args, wrt=(0, "x"))


# -- no source ---------------------------------------------------------------------------------------
def test_builtin_has_no_source():
    """A built-in without a rule (with a rule, grad(math.sin) works: see test_api)."""
    import cmath
    with pytest.raises(s2sad.SourceUnavailableError) as ei:
        s2sad.grad(cmath.phase)(1.0)
    assert "Fix:" in str(ei.value)


def test_c_extension_ufunc_has_no_source():
    with pytest.raises(s2sad.SourceUnavailableError):
        s2sad.grad(np.frexp)(1.0)


def test_function_from_exec_string_has_no_source():
    ns = {}
    exec("def from_string(x):\n    return x * x\n", ns)
    with pytest.raises(s2sad.SourceUnavailableError) as ei:
        s2sad.grad(ns["from_string"])(1.0)
    msg = str(ei.value)
    assert "from_string" in msg and "exec" in msg


def test_decorating_exec_string_function():
    ns = {}
    exec("def from_string2(x):\n    return x * x\n", ns)
    with pytest.raises(s2sad.SourceUnavailableError):
        s2sad.differentiate(ns["from_string2"]).grad(1.0)


def test_not_a_function():
    with pytest.raises(s2sad.S2SADError):
        s2sad.grad(42)


# -- errors at run time point at the user's line -------------------------------------------------
def shape_mismatch(a, b):
    c = a * 2.0
    return np.sum(c @ b)                     # MARK


def test_runtime_error_in_generated_code_points_at_user_line():
    with pytest.raises(ValueError) as ei:
        s2sad.grad(shape_mismatch)(randn(3), randn(4))
    notes = "\n".join(getattr(ei.value, "__notes__", []))
    assert f"{HERE}:{line_of(shape_mismatch, 'MARK')}" in notes, notes


def uses_private_module_callee(A):
    import scipy.linalg as sla
    return float(np.sum(sla.signm(A @ A.T + np.eye(2))))


def test_opaque_error_names_the_public_path():
    """scipy.linalg.signm lives in scipy.linalg._matfuncs: the message and the rule skeleton
    use the name a user writes."""
    with pytest.raises(s2sad.OpaqueCalleeError) as ei:
        s2sad.grad(uses_private_module_callee)(np.eye(2))
    msg = str(ei.value)
    assert "scipy.linalg.signm is a Python function of an installed package" in msg
    # SciPy < 1.18: (A, disp=<sentinel>), a default without readable text, so "A, /"; 1.18: (A)
    assert re.search(r'defrule\(scipy\.linalg\.signm, "A(, /)?",', msg), msg
    assert "_matfuncs" not in msg


def uses_library_python_function(b, x):
    import scipy.signal
    return np.sum(scipy.signal.lfilter(b, [1.0, -0.5], x) ** 2)


@pytest.mark.parametrize("mode", ["rev", "fwd"])
def test_opaque_library_function_is_not_said_to_lack_source(mode):
    """scipy.signal.lfilter is Python code of an installed package: the message said it had no
    Python source, and the skeleton said `"x, /"`; the skeleton now has its parameters."""
    b, x = np.array([1.0, 0.5]), np.linspace(0.0, 1.0, 6)
    with pytest.raises(s2sad.OpaqueCalleeError) as ei:
        if mode == "rev":
            s2sad.grad(uses_library_python_function, wrt=(0, 1))(b, x)
        else:
            s2sad.jvp(uses_library_python_function, (b, x), (b, x))
    msg = str(ei.value)
    assert "has no Python source" not in msg
    assert "scipy.signal.lfilter is a Python function of an installed package" in msg
    assert "calls library code only through rules" in msg
    assert 's2sad.defrule(scipy.signal.lfilter, "b, a, x, axis=-1, zi=None",' in msg
    assert 'vjp={"b": "g * <derivative of the output w.r.t. b>"}' in msg
    assert f"{HERE}:" in msg
