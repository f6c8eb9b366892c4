"""`s2sad dump FILE:FUNC --html OUT`: the side-by-side page (s2sad/htmlview.py), and the
terminal colours of `s2sad dump` (plain text when piped)."""
import re
import sys
import textwrap
from html.parser import HTMLParser

import pytest

import s2sad
from s2sad import cli, htmlview

SOURCE = textwrap.dedent('''\
    import numpy as np


    def helper(v):
        return v * v


    def f(x, y):
        tag = "<b>&amp;</b>"             # a string the page must escape
        s = np.sum(np.sin(x) * y)
        if s < 3.0 and len(tag) > 0:
            s = s + np.sum(helper(x))
        return s
''')


class Rows(HTMLParser):
    """Every <tr> of the page: its attributes, the text of its cells by class, its links."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.rows, self.ids, self.cell, self.tags = [], set(), None, []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append((tag, a))
        if "id" in a:
            self.ids.add(a["id"])
        if tag == "tr":
            self.rows.append({"attrs": a, "cells": {}, "links": []})
        elif tag == "td" and self.rows:
            self.cell = a.get("class")
            self.rows[-1]["cells"][self.cell] = ""
        elif tag == "a" and self.rows and "href" in a:
            self.rows[-1]["links"].append(a["href"])

    def handle_endtag(self, tag):
        if tag == "td":
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None:
            self.rows[-1]["cells"][self.cell] += data


@pytest.fixture
def target(tmp_path):
    path = tmp_path / "html_target.py"
    path.write_text(SOURCE)
    yield str(path)
    sys.modules.pop("html_target", None)


def _page(target, tmp_path, *extra):
    out = tmp_path / "out.html"
    assert cli.main(["dump", f"{target}:f", "--html", str(out), *extra]) == 0
    assert out.exists()
    text = out.read_text(encoding="utf-8")
    p = Rows()
    p.feed(text)
    return text, p


def _derivative(mode):
    mod = sys.modules["html_target"]
    if mode == "forward":
        from s2sad.api import forward_derivative_of
        return forward_derivative_of(mod.f, 0)
    return s2sad.differentiate(mod.f).derivative()


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_page_shows_both_sources_linked_line_by_line(target, tmp_path, mode):
    text, p = _page(target, tmp_path, "--mode", mode)
    d = _derivative(mode)
    assert text.startswith("<!DOCTYPE html>")
    # self-contained: nothing is fetched from elsewhere
    assert not any(t in ("link", "img", "iframe") or (t == "script" and "src" in a)
                   for t, a in p.tags)
    assert "http://" not in text and "https://" not in text
    user = [r for r in p.rows if r["attrs"].get("id", "").startswith("u")]
    gen = [r for r in p.rows if r["attrs"].get("id", "").startswith("g")]
    # the user's function, whole, with its line numbers
    lines = SOURCE.splitlines()
    assert [r["cells"]["code"] for r in user] == lines[7:13]
    assert [r["attrs"]["id"] for r in user] == [f"u{n}" for n in range(8, 14)]
    # the generated module, whole
    assert "\n".join(r["cells"]["code"] for r in gen) + "\n" == d.source
    assert ("def f__jvp(" if mode == "forward" else "def f__bwd(") in d.source
    # every generated line with an origin links to that user line, which exists
    origins = d.module.line_origins
    assert len(origins) >= 8
    for i, r in enumerate(gen, 1):
        o = origins.get(i)
        if o is None:
            assert not r["links"] and "data-src" not in r["attrs"]
            continue
        assert r["links"] == [f"#u{o.line}"], (i, r)
        assert r["attrs"]["data-src"] == f"u{o.line}"
        assert f"u{o.line}" in p.ids
        assert r["cells"]["from"] == f"html_target.py:{o.line}"
    assert {o.line for o in origins.values()} >= {10, 11, 12, 13}


def test_call_sites_annotate_user_lines(target, tmp_path):
    text, p = _page(target, tmp_path)
    sites = {r["attrs"]["id"]: r["cells"]["sites"] for r in p.rows
             if r["attrs"].get("class", "").startswith("user")}
    assert "np.sin: primitive" in sites["u10"] and "np.sum: primitive" in sites["u10"]
    assert "helper: derived" in sites["u12"]
    assert sites["u8"] == ""                       # the def line has no call site
    d = _derivative("reverse")
    # as many annotations as s2sad explain has rows for the function's lines
    assert text.count('class="site c-') == len(d.sites)
    assert all(o.line in range(8, 14) for o, *_ in d.sites)


def test_user_text_is_escaped(target, tmp_path):
    text, p = _page(target, tmp_path)
    assert "<b>" not in text and "&amp;amp;" in text
    row = next(r for r in p.rows if r["attrs"].get("id") == "u9")
    assert row["cells"]["code"] == '    tag = "<b>&amp;</b>"             # a string the page must escape'
    cmp_row = next(r for r in p.rows if r["attrs"].get("id") == "u11")
    assert "s < 3.0" in cmp_row["cells"]["code"]
    assert "s &lt; 3.0" in text or "&lt;" in text.split('id="u11"')[1].split("</tr>")[0]


def test_without_pygments_the_page_is_plain_escaped_text(target, tmp_path, monkeypatch):
    monkeypatch.setattr(htmlview, "_pygments", lambda: None)
    text, p = _page(target, tmp_path)
    assert '<span class="n">' not in text
    row = next(r for r in p.rows if r["attrs"].get("id") == "u9")
    assert row["cells"]["code"] == '    tag = "<b>&amp;</b>"             # a string the page must escape'
    gen = [r for r in p.rows if r["attrs"].get("id", "").startswith("g")]
    assert "\n".join(r["cells"]["code"] for r in gen) + "\n" == _derivative("reverse").source


def test_pygments_highlights_when_installed(target, tmp_path):
    pytest.importorskip("pygments")
    text, _ = _page(target, tmp_path)
    assert '<span class="k">def</span>' in text and "td.code .k" in text


def test_unwritable_path_is_an_error(target, tmp_path, capsys):
    bad = tmp_path / "no" / "such" / "dir" / "x.html"
    assert cli.main(["dump", f"{target}:f", "--html", str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"cannot write {bad}" in err and "Fix:" in err


def test_dump_is_plain_when_piped_and_coloured_on_a_terminal(target, capsys, monkeypatch):
    pytest.importorskip("pygments")
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert cli.main(["dump", f"{target}:f"]) == 0
    plain = capsys.readouterr().out
    assert "\x1b[" not in plain
    assert plain == s2sad.differentiate(sys.modules["html_target"].f).adjoint_source()
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert cli.main(["dump", f"{target}:f"]) == 0
    coloured = capsys.readouterr().out
    assert "\x1b[" in coloured
    assert re.sub(r"\x1b\[[0-9;]*m", "", coloured) == plain
    monkeypatch.setenv("NO_COLOR", "1")
    assert cli.main(["dump", f"{target}:f"]) == 0
    assert capsys.readouterr().out == plain

