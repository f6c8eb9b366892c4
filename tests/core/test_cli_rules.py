"""`s2sad rules`: the list of every supported callee, and docs/coverage.md (filled from it when
the documentation site is built)."""
import json
import os
import re
import subprocess
import sys

import pytest

from s2sad import cli
from s2sad.rules import listing

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COVERAGE = os.path.join(ROOT, "docs", "coverage.md")


def rules(*argv, capsys):
    rc = cli.main(["rules", *argv])
    out, err = capsys.readouterr()
    assert rc == 0, err
    return out


def row(text, callee):
    """The text listing's line of ``callee``."""
    for line in text.splitlines():
        if re.match(rf"  {re.escape(callee)}( \(also [^)]*\))?\s+reverse:", line):
            return line
    raise AssertionError(f"{callee} is not listed:\n{text}")


def test_known_callees_with_their_parameters(capsys):
    out = rules("--tables", "numpy,python", capsys=capsys)
    assert re.search(r"reverse: x1, x2\s+forward: x1, x2$", row(out, "numpy.multiply"))
    assert "(also abs)" in row(out, "numpy.absolute")
    assert re.search(r"reverse: a\s+forward: a\*$", row(out, "numpy.linalg.eigh"))
    assert re.search(r"reverse: iterable\s+forward: iterable$", row(out, "builtins.sorted"))
    assert "reverse: y, x" in row(out, "math.atan2")
    assert row(out, "ndarray.sum") and row(out, "numpy.add.reduce")
    assert out.splitlines()[0].startswith("numpy [numpy]: ")
    assert "scipy" not in out                        # only the tables asked for


def test_zero_derivative_callees_are_listed_apart(capsys):
    out = rules("--tables", "numpy,python", capsys=capsys)
    zero = [line for line in out.splitlines() if line.startswith("  zero derivative: ")]
    numpy_zero = next(line for line in zero if "numpy.argmax" in line)
    assert "numpy.floor" in numpy_zero and "numpy.sin," not in numpy_zero
    assert any("math.floor" in line for line in zero)
    assert not re.search(r"  numpy\.argmax\s+reverse:", out)


def test_scipy_callees():
    pytest.importorskip("scipy")
    entries = {e.callee: e for e in listing.collect(["scipy"])}
    assert entries["scipy.special.gammainc"].reverse == ["a", "x"]
    assert entries["scipy.special.jv"].aliases == ["scipy.special.jn"]
    assert entries["scipy.special.gammasgn"].zero
    assert entries["scipy.linalg.expm"].forward
    assert {e.table for e in entries.values()} == {"scipy"}


def test_scipy_stats_rules_made_by_the_resolver_are_listed(capsys):
    """scipy.stats's rules come from a resolver (no table holds them): the listing asks it about
    each distribution's methods, as generated code would, and lists them per distribution."""
    pytest.importorskip("scipy")
    entries = {e.callee: e for e in listing.collect(["scipy"])}
    assert entries["scipy.stats.norm.logpdf"].reverse == ["x", "loc", "scale"]
    assert entries["scipy.stats.gamma.cdf"].forward == ["x", "a", "loc", "scale"]
    assert entries["scipy.stats.t.ppf"].reverse == ["q", "df", "loc", "scale"]
    assert entries["scipy.stats.poisson.logpmf"].reverse == ["mu"]        # k carries none
    assert entries["scipy.stats.multivariate_normal.logpdf"].reverse == ["x", "mean", "cov"]
    assert entries["scipy.stats.dirichlet.pdf"].reverse == ["x", "alpha"]
    assert "freezing" in entries["scipy.stats.norm"].note        # norm(loc, scale).logpdf(x)
    for dist in ("norm", "t", "gamma", "beta", "chi2", "expon", "laplace", "cauchy", "logistic",
                 "lognorm", "uniform", "invgamma", "weibull_min", "halfnorm"):
        for m in ("logpdf", "pdf", "logcdf", "cdf", "logsf", "sf"):
            assert entries[f"scipy.stats.{dist}.{m}"].topic == "scipy.stats", (dist, m)
    for dist in ("poisson", "binom", "nbinom", "geom"):
        assert f"scipy.stats.{dist}.pmf" in entries and f"scipy.stats.{dist}.logpmf" in entries
    out = rules("--grep", r"scipy\.stats\.norm\.", capsys=capsys)
    assert out.startswith("scipy.stats [scipy]: ")
    assert re.search(r"reverse: x, loc, scale\s+forward: x, loc, scale$",
                     row(out, "scipy.stats.norm.logpdf"))


def test_renamed_parameters_are_listed_under_the_callee_s_names():
    """odeint's times are the rule's parameter ``times`` (``t`` is the tangent in templates),
    bound from the keyword ``t=``: listed as ``t``."""
    pytest.importorskip("scipy")
    entries = {e.callee: e for e in listing.collect(["scipy"])}
    assert entries["scipy.integrate.odeint"].reverse == ["func", "y0", "t", "args"]


def test_grep(capsys):
    out = rules("--grep", r"linalg\.eig", capsys=capsys)
    listed = re.findall(r"^  (\S+)", out, re.M)
    assert "numpy.linalg.eigh" in listed and "numpy.linalg.eigvalsh" in listed
    assert all("linalg.eig" in name for name in listed), listed
    # aliases match too: numpy.acos is listed as numpy.arccos
    assert "numpy.arccos (also acos)" in rules("--grep", "^numpy.acos$", capsys=capsys)


def test_json_parses(capsys):
    data = json.loads(rules("--json", "--tables", "numpy,python", capsys=capsys))
    by = {d["callee"]: d for d in data}
    assert by["numpy.tanh"]["reverse"] == ["x"] and by["numpy.tanh"]["forward"] == ["x"]
    assert by["numpy.tanh"]["zero"] is False and by["numpy.argmax"]["zero"] is True
    assert by["numpy.argmax"]["reverse"] == [] and by["numpy.argmax"]["table"] == "numpy"
    assert set(by["numpy.tanh"]) >= {"table", "topic", "callee", "aliases", "reverse", "forward"}
    assert by["builtins.sorted"]["table"] == "python"


def test_markdown(capsys):
    out = rules("--format", "md", "--tables", "python", capsys=capsys)
    assert out.startswith("# Supported callees\n")
    assert "## math\n\n| callee | reverse | forward |" in out
    assert "| `math.sin` | x | x |" in out
    assert re.search(r"^Zero derivative: .*`math.floor`", out, re.M)


def test_bad_arguments(capsys):
    assert cli.main(["rules", "--tables", "numpy,nope"]) == 2
    assert "unknown table(s) nope" in capsys.readouterr().err
    assert cli.main(["rules", "--grep", "("]) == 2
    assert "Fix:" in capsys.readouterr().err


def test_coverage_page_is_made_from_the_tables():
    """docs/coverage.md is filled when the site is built (docs/hooks.py, the marker) with what
    `s2sad rules --format md --tables numpy,python,scipy` prints, so it is never stale: the
    committed page holds the marker and no rows, and the hook's tables are the command's."""
    pytest.importorskip("scipy")
    with open(COVERAGE) as f:
        page = f.read()
    hooks = _hooks()
    assert hooks.COVERAGE in page
    assert not [ln for ln in page.splitlines() if ln.startswith("| `")], \
        "docs/coverage.md holds rows by hand; the site's hook makes them from the tables"
    made = hooks.coverage_markdown()
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-m", "s2sad", "rules", "--format", "md", "--tables",
                        "numpy,python,scipy"], capture_output=True, text=True, cwd=ROOT, env=env,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("# Supported callees\n")
    assert made == r.stdout.split("\n", 1)[1].lstrip("\n")
    rows = [ln for ln in made.splitlines() if ln.startswith("| `")]
    assert len(rows) == sum(not e.zero for e in listing.collect(["numpy", "python", "scipy"]))
    assert any(ln.startswith("| `scipy.special.gammainc` |") for ln in rows)


def _hooks():
    import importlib.util
    spec = importlib.util.spec_from_file_location("s2sad_docs_hooks",
                                                  os.path.join(ROOT, "docs", "hooks.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
