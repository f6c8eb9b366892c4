"""Point 2 of issue 2: source retrieval, name resolution, lowering to the ANF IR with origins, and
the IR printer."""
import functools
import inspect
import math
import os

import numpy as np
import pytest

import s2sad
from s2sad import ir
from s2sad.codegen.build import lower_function
from s2sad.frontend.source import FunctionSource
from core_util import check_grads, randn

HERE = os.path.abspath(__file__)
SCALE = 2.0
OFFSETS = np.array([0.5, -1.0, 2.0])


def lines_of(fn):
    lines, start = inspect.getsourcelines(fn)
    return {start + k: text.strip() for k, text in enumerate(lines)}


# -- the IR printer ------------------------------------------------------------------------------
def simple(x, y):
    z = x * y + 1.0
    return np.sin(z)


def flow(x, n):
    s = 0.0
    for i in range(n):
        if x[i] > 0:
            s = s + x[i]
    while s > 1.0:
        s = s * 0.5
    return s


def attrs(x):
    return x.T.sum(axis=0)[1:3]


def test_printer_straight_line():
    assert str(lower_function(simple)) == (
        "def simple(x, y):\n"
        "    _1 = *(x, y)\n"
        "    z = +(_1, 1.0)\n"
        "    _r = np.sin(z)\n"
        "    return _r")


def test_printer_control_flow():
    assert str(lower_function(flow)) == (
        "def flow(x, n):\n"
        "    s = 0.0\n"
        "    for i in range(0, n, 1):\n"
        "        _1 = [](x, i)\n"
        "        _2 = >(_1, 0)\n"
        "        if _2:\n"
        "            _3 = [](x, i)\n"
        "            _4 = +(s, _3)\n"
        "            s = _4\n"
        "    while:\n"
        "        _5 = >(s, 1.0)\n"
        "        if not _5: break\n"
        "        _6 = *(s, 0.5)\n"
        "        s = _6\n"
        "    _r = s\n"
        "    return _r")


def test_printer_attributes_methods_slices():
    assert str(lower_function(attrs)) == (
        "def attrs(x):\n"
        "    _1 = getattr .T(x)\n"
        "    _2 = .sum(_1, axis=0)\n"
        "    _r = [](_2, 1:3)\n"
        "    return _r")


def test_print_ir_function_matches_str():
    fn = lower_function(flow)
    assert ir.print_ir(fn) == str(fn)


def test_ir_is_a_normal_form():
    """Every call's operands are variables or constants (no nested calls)."""
    fn = lower_function(flow)
    for s in ir.walk(fn.body):
        if isinstance(s, ir.Assign) and isinstance(s.value, ir.Call):
            for op in s.value.args:
                assert isinstance(op, (str, ir.Const, ir.Index, ir.Slice)), (s, op)


def test_every_operation_is_a_call_site():
    fn = lower_function(attrs)
    calls = [s.value for s in ir.walk(fn.body) if isinstance(s, ir.Assign)
             and isinstance(s.value, ir.Call)]
    kinds = [type(c.fn).__name__ for c in calls]
    assert kinds == ["Attr", "Method", "Static"]


# -- origins -------------------------------------------------------------------------------------
@pytest.mark.parametrize("f", [simple, flow, attrs], ids=lambda f: f.__name__)
def test_every_ir_node_has_an_origin_in_the_user_file(f):
    fn = lower_function(f)
    src = lines_of(f)
    assert fn.origin.file == HERE
    stmts = list(ir.walk(fn.body))
    assert stmts
    for s in stmts:
        o = s.origin
        assert o is not None, s
        assert o.file == HERE
        assert o.line in src, (s, o.line)
        assert o.text == src[o.line], (o.text, src[o.line])
        assert o.where() == f"{HERE}:{o.line}"
        assert o.short() == f"test_frontend.py:{o.line}"


def test_origins_point_at_the_right_lines():
    fn = lower_function(flow)
    by_type = {}
    for s in ir.walk(fn.body):
        by_type.setdefault(type(s).__name__, []).append(s.origin.text)
    assert by_type["For"] == ["for i in range(n):"]
    assert by_type["If"] == ["if x[i] > 0:"]
    assert by_type["While"] == ["while s > 1.0:"]
    assert by_type["Return"] == ["return s"]


# -- source retrieval ----------------------------------------------------------------------------
def outer_factory():
    def nested_fn(x):
        return x * 3.0
    return nested_fn


def test_nested_function_source():
    f = outer_factory()
    src = FunctionSource(f)
    assert src.node.name == "nested_fn"
    assert str(lower_function(f)).startswith("def nested_fn(x):")
    assert s2sad.grad(f)(1.0) == 3.0


def deco(fn):
    @functools.wraps(fn)
    def wrapper(x):
        return fn(x)
    return wrapper


@deco
def decorated_fn(x):
    return np.sum(x ** 3)


def test_decorated_function_unwraps_to_the_user_source():
    x = randn(3)
    np.testing.assert_allclose(s2sad.grad(decorated_fn)(x), 3 * x ** 2, rtol=1e-12)


class Thing:
    factor = 1.5

    def method(self, x):
        return np.sum(x * x) * self.factor

    @staticmethod
    def static(x):
        return np.sum(np.exp(x))

    @classmethod
    def klass(cls, x):
        return np.sum(x) * cls.factor


def test_method_sources():
    t, x = Thing(), randn(3)
    np.testing.assert_allclose(s2sad.grad(t.method)(x), 3.0 * x, rtol=1e-12)
    np.testing.assert_allclose(s2sad.grad(Thing.static)(x), np.exp(x), rtol=1e-12)
    np.testing.assert_allclose(s2sad.grad(Thing.klass)(x), np.full(3, 1.5), rtol=1e-12)


def test_indented_source_is_dedented():
    src = FunctionSource(Thing.method)
    assert src.node.name == "method"
    assert src.first_line == inspect.getsourcelines(Thing.method)[1]


# -- name resolution -----------------------------------------------------------------------------
def uses_globals_and_builtins(x):
    return np.sum(OFFSETS * x) * SCALE + abs(x[0]) + math.pi * len(x)


def test_names_resolve_against_globals_and_builtins():
    x = randn(3)
    check_grads(uses_globals_and_builtins, (x,))
    fn = lower_function(uses_globals_and_builtins)
    assert fn.namespace["SCALE"] == SCALE
    assert fn.namespace["OFFSETS"] is OFFSETS
    assert fn.namespace["abs"] is abs
    assert fn.namespace["np"] is np


def test_closure_cells_resolve():
    def helper(v):
        return v * 3.0

    def inner(x):
        return helper(x) * np.float64(2.0) + len([x])
    src = FunctionSource(inner)
    assert src.resolve("np") is np
    assert src.resolve("len") is len
    assert s2sad.grad(inner)(1.0) == 6.0           # `helper` comes from a closure cell


def shadows_builtin(x):
    sum = x * 2.0                            # noqa: A001  a local named like a builtin
    return sum * x


def test_local_shadowing_a_builtin():
    check_grads(shadows_builtin, (0.7,))


def rebinding_global(x):
    return x * SCALE


def test_global_rebound_after_first_build(monkeypatch):
    assert s2sad.grad(rebinding_global)(1.0) == 2.0
    monkeypatch.setitem(globals(), "SCALE", 3.0)
    v, g = s2sad.value_and_grad(rebinding_global)(1.0)
    assert v == rebinding_global(1.0) == 3.0
    assert g == 3.0
