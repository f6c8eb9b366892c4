"""Table-wide properties of the NumPy/SciPy rules: unsupported keywords are forbidden, SciPy stays
optional, aliases share their rules, and bad keywords raise a clear error through the pipeline."""
import subprocess
import sys

import numpy as np
import pytest

from s2sad.errors import RuleError
from s2sad.rules import lookup, lookup_method, registry


def test_every_differentiable_ufunc_rule_forbids_out_and_where():
    registry._ensure_tables()
    ufunc_rules = [r for r in registry._RULES.values() if isinstance(r.fn, np.ufunc) and not r.zero]
    assert len(ufunc_rules) > 50
    for r in ufunc_rules:
        if "out" in r.signature.parameters:
            assert r.forbid.get("out", "missing") is None, r
        if "where" in r.signature.parameters:
            assert r.forbid.get("where", "missing") is True, r


def test_reductions_forbid_out_and_pass_where_on():
    # out= is refused on an active value; where= (a mask without a derivative) reaches the
    # derivative templates
    for fn in (np.sum, np.mean, np.prod, np.max, np.min, np.var, np.std, np.nansum, np.nanmean,
               np.nanmax, np.nanvar, np.nanstd, np.add.reduce, np.multiply.reduce):
        r = lookup(fn)
        assert r.forbid["out"] is None and "where" not in r.forbid, fn
    for name in ("sum", "mean", "prod", "max", "min", "var", "std"):
        assert lookup_method(name).forbid["out"] is None
        assert "where" not in lookup_method(name).forbid, name


def test_aliases_have_rules():
    for fn in (np.absolute, np.conjugate, np.true_divide, np.mod, np.amax, np.amin, np.concat,
               np.permute_dims, np.pow, np.acos, np.linalg.matmul, np.linalg.matrix_transpose):
        assert lookup(fn) is not None, fn


def test_zero_rules():
    for fn in (np.floor, np.argmax, np.zeros_like, np.ones_like, np.greater, np.isnan, np.shape,
               np.eye, np.sign, np.round, np.floor_divide):
        r = lookup(fn)
        assert r is not None and r.zero, fn
    assert lookup_method("argmax").zero
    # np.arange differentiates in its float start/step (start + step * i); only its count is
    # piecewise constant
    assert not lookup(np.arange).zero


def test_scipy_rules_load_only_with_scipy():
    code = ("import sys, numpy as np\n"
            "from s2sad.rules import lookup\n"
            "assert lookup(np.tanh) is not None\n"
            "assert 'scipy' not in sys.modules, 'the NumPy table imported SciPy'\n"
            "print('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=str(__import__('pathlib').Path(__file__).parents[2]))
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr


def test_out_keyword_on_active_value_is_a_clear_error():
    s2sad = pytest.importorskip("s2sad")

    def f(x, buf):
        return np.sum(np.exp(x, out=buf))

    with pytest.raises(RuleError) as e:
        s2sad.grad(f)(np.ones(3), np.ones(3))
    msg = str(e.value)
    assert "out=" in msg and "test_table_properties.py" in msg


def test_unsupported_option_in_helper_is_a_clear_error():
    r = lookup(np.pad)
    x = np.ones(3)
    ans = np.pad(x, 1, mode="maximum")
    with pytest.raises(RuleError, match="mode='maximum'"):
        r.adjoint_function("array")(np.ones(5), ans, **r.bind((x, 1), {"mode": "maximum"}))
    r = lookup(np.linalg.svd)
    a = np.random.default_rng(0).standard_normal((4, 3))
    ans = np.linalg.svd(a)
    g = (np.ones((4, 4)), np.ones(3), np.ones((3, 3)))
    with pytest.raises(RuleError, match="full_matrices=False"):
        r.adjoint_function("a")(g, ans, **r.bind((a,), {}))
