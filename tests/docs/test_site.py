"""The documentation site builds with ``mkdocs build --strict`` (issue 16), and what its build
hook (docs/hooks.py) generates is there: the coverage tables, the real dumps, the GPU chart."""
import html
import importlib.util
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _hooks():
    spec = importlib.util.spec_from_file_location("s2sad_docs_hooks",
                                                  os.path.join(ROOT, "docs", "hooks.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    for mod in ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python"):
        pytest.importorskip(mod)
    pytest.importorskip("scipy")
    out = tmp_path_factory.mktemp("site")
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               NO_MKDOCS_2_WARNING="1")
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(out)],
                       cwd=ROOT, capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "WARNING" not in r.stderr, r.stderr
    return out


def _page(site, name):
    with open(os.path.join(site, name, "index.html"), encoding="utf-8") as f:
        return f.read()


def _text(page):
    return html.unescape(re.sub(r"<[^>]+>", "", page))


def test_site_builds_strict_with_every_page(site):
    for name in ("getting-started", "reading-a-derivative", "language", "usage", "rules",
                 "coverage", "gpu", "performance", "cli", "comparison", "api", "architecture"):
        assert os.path.isfile(os.path.join(site, name, "index.html")), name
    assert os.path.isfile(os.path.join(site, "index.html"))
    assert not os.path.exists(os.path.join(site, "hooks.py"))


def test_coverage_page_lists_every_rule(site):
    from s2sad.rules import listing
    text = _text(_page(site, "coverage"))
    entries = listing.collect(["numpy", "python", "scipy"])
    for e in entries:
        assert e.callee in text, e.callee
    assert "scipy.special.gammainc" in text and "numpy.linalg.eigh" in text


def test_dumps_are_the_generated_source(site):
    """The page reads real dumps: each listing is what `s2sad dump` prints now, and every
    generated name its prose mentions (`_s_x`, `_b_rate`...) is in them."""
    hooks = _hooks()
    dumps = [hooks.dump_source("examples/quickstart.py", "loss"),
             hooks.dump_source("docs/snippets/recurrence.py", "decay", "0,1")]
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-m", "s2sad", "dump", "docs/snippets/recurrence.py:decay",
                        "--wrt", "0,1"], cwd=ROOT, capture_output=True, text=True, env=env,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout == dumps[1]
    text = _text(_page(site, "reading-a-derivative"))
    for d in dumps:
        for line in d.splitlines():
            assert line.strip() in text
    with open(os.path.join(ROOT, "docs", "reading-a-derivative.md"), encoding="utf-8") as f:
        prose = f.read()
    names = set(re.findall(r"`[^`]*?\b(_[sbd]_\w+|_adj\.\w+|_rt\.\w+|\w+__(?:fwd|bwd|jvp))", prose))
    assert len(names) >= 10
    missing = [n for n in names - {"_b_v", "_d_v"}             # (the prose's pattern names)
               if n.startswith(("_s_", "_b_", "_adj.", "_rt.")) and not any(n in d for d in dumps)]
    assert not missing, f"the page names {missing}, which the generated code no longer has"


def test_api_reference_has_the_public_names(site):
    """Every public name of ``s2sad`` has its entry (an anchor made by mkdocstrings), with the
    first words of its docstring."""
    import s2sad
    page = _page(site, "api")
    text = _text(page)
    for name in s2sad.__all__:
        obj = getattr(s2sad, name)
        anchors = {f"s2sad.{name}", f"{obj.__module__}.{obj.__qualname__}",
                   f"s2sad.errors.{name}"}
        assert any(f'id="{a}"' in page for a in anchors), name
        first = re.sub(r"[`:]", "", (obj.__doc__ or "").strip().split("\n")[0])
        words = " ".join(re.findall(r"[A-Za-z]{4,}", first)[:3])
        assert all(w in text for w in words.split()), (name, words)


def test_gpu_chart_from_results():
    hooks = _hooks()
    rows = hooks.gpu_rows()
    assert len(rows) >= 4
    with open(os.path.join(ROOT, "benchmarks", "RESULTS.md"), encoding="utf-8") as f:
        results = f.read()
    # the latest GPU-kernel run's section: the first with an "s2sad µs" column (as gpu_rows reads)
    first = next(sec for sec in results.split("\n## ") if "s2sad µs" in sec)
    for case, s, cupy, torch in rows:
        line = next(ln for ln in first.splitlines() if ln.startswith(f"| {case} | float32 |"))
        cells = [c.strip() for c in line.strip("|").split("|")]
        nums = [float(c) for c in cells if re.fullmatch(r"[0-9.]+", c)]
        assert nums[0] == s and cupy in nums[1:] and torch in nums[1:] and torch != cupy
    svg = hooks.gpu_chart_svg(rows)
    assert svg.count("<rect") == 2 * len(rows) + 2
    case, s, cupy, torch = rows[0]
    assert f"{cupy / s:.2f}x" in svg and f"{torch / s:.2f}x" in svg
