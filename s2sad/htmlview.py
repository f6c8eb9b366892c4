"""The side-by-side view of a derivative (``s2sad dump FILE:FUNC --html out.html``).

One self-contained HTML page (inline CSS and script, no external assets): the user's source on the
left, the generated module on the right.  Each generated line that came from a user line (the
module's source map, ``Derivative.module.line_origins``) links to it; hovering or clicking either
side highlights the pair.  The call sites (``Derivative.sites``, what ``s2sad explain`` prints) are
annotations on the user lines.  Syntax is highlighted with Pygments where it is installed (plain
escaped text otherwise).  Also :func:`highlight_terminal`, the colours ``s2sad dump`` uses on a
terminal.
"""
import html
import inspect
import os

from .frontend.source import get_function, split_lines

#: the classes of call sites (``classify.site_description``), in the legend's order
SITE_CLASSES = ("primitive", "derived", "zero", "dynamic", "inactive", "opaque")


def _pygments():
    try:
        from pygments.formatters import HtmlFormatter, TerminalFormatter
        from pygments.lexers import PythonLexer
    except ImportError:
        return None
    return PythonLexer, HtmlFormatter, TerminalFormatter


def highlight_lines(text):
    """``text`` as a list of HTML lines, one per source line (Pygments' spans are closed at each
    line end, so every line stands alone); escaped plain text without Pygments."""
    lines = split_lines(text)
    pg = _pygments()
    if pg is None:
        return [html.escape(ln) for ln in lines]
    from pygments import highlight
    lexer, fmt = pg[0](stripnl=False, ensurenl=False), pg[1](nowrap=True)
    out = highlight("\n".join(lines) + "\n", lexer, fmt).split("\n")
    if out and out[-1] == "":
        out.pop()
    if len(out) != len(lines):         # (never seen; keep the page right rather than pretty)
        return [html.escape(ln) for ln in lines]
    return out


def highlight_terminal(text):
    """``text`` with ANSI colours for a terminal, or unchanged without Pygments."""
    pg = _pygments()
    if pg is None:
        return text
    from pygments import highlight
    out = highlight(text, pg[0](stripnl=False, ensurenl=False), pg[2]())
    return out if text.endswith("\n") or not out.endswith("\n") else out[:-1]


def _same_file(a, b):
    try:
        return os.path.realpath(a) == os.path.realpath(b)
    except (TypeError, ValueError):
        return False


def user_source(fn):
    """(file, first line number, lines) of the Python function behind ``fn``."""
    py = get_function(fn)
    lines, start = inspect.getsourcelines(py)
    return inspect.getsourcefile(py) or py.__code__.co_filename, max(start, 1), \
        [ln.rstrip("\r\n") for ln in lines]


_CSS = """
body{font-family:system-ui,sans-serif;margin:0;background:#fafafa;color:#222}
header{padding:.6em 1em;background:#263238;color:#eceff1}
header h1{font-size:1.1em;margin:0 0 .2em 0}
header p{margin:.1em 0;font-size:.85em}
.legend span{display:inline-block;padding:0 .4em;margin-right:.3em;border-radius:3px}
main{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1.3fr);gap:.5em;padding:.5em;
     height:calc(100vh - 6.5em);box-sizing:border-box}
section{overflow:auto;background:#fff;border:1px solid #ccc}
section h2{font-size:.9em;margin:0;padding:.3em .6em;background:#eceff1;position:sticky;top:0;
           z-index:1}
table{border-collapse:collapse;width:100%;font:12px/1.45 ui-monospace,Menlo,Consolas,monospace}
td{vertical-align:top;padding:0 .5em}
td.no{color:#999;text-align:right;user-select:none;width:3em}
td.code{white-space:pre}
td.from{white-space:nowrap;width:8em;font-size:11px}
td.from a{color:#1565c0;text-decoration:none}
td.from .ext{color:#999}
td.sites{font-family:system-ui,sans-serif;font-size:11px}
tr.linked{cursor:pointer}
tr.hl{background:#fff59d}
tr.hl2{background:#fffde7}
.site{display:inline-block;margin:0 .3em 1px 0;padding:0 .35em;border-radius:3px;white-space:nowrap}
.c-primitive{background:#e3f2fd}.c-derived{background:#e8f5e9}.c-zero{background:#eeeeee}
.c-dynamic{background:#fff3e0}.c-inactive{background:#f5f5f5;color:#777}
.c-opaque{background:#ffebee}.c-other{background:#f3e5f5}
"""

_JS = """
(function(){
  function rows(sel){return Array.prototype.slice.call(document.querySelectorAll(sel));}
  function clear(){rows('tr.hl,tr.hl2').forEach(function(r){r.classList.remove('hl','hl2');});}
  function mark(user){
    clear();
    var u=document.getElementById(user); if(u){u.classList.add('hl');}
    rows('tr[data-src="'+user+'"]').forEach(function(r){r.classList.add('hl2');});
  }
  rows('tr[data-src]').forEach(function(r){
    r.addEventListener('mouseenter',function(){mark(r.dataset.src); r.classList.add('hl');});
    r.addEventListener('click',function(){
      var u=document.getElementById(r.dataset.src); if(u){u.scrollIntoView({block:'center'});}});
  });
  rows('tr.user').forEach(function(r){
    r.addEventListener('mouseenter',function(){mark(r.id);});
    r.addEventListener('click',function(){
      var g=document.querySelector('tr[data-src="'+r.id+'"]');
      if(g){g.scrollIntoView({block:'center'});}});
  });
})();
"""


def _site_badges(sites):
    out = []
    for callee, cls, chosen in sites:
        c = cls if cls in SITE_CLASSES else "other"
        out.append(f'<span class="site c-{c}" title="{html.escape(chosen, quote=True)}">'
                   f'{html.escape(callee)}: {html.escape(cls)}</span>')
    return " ".join(out)


def render(fn, derivative, title=None):
    """The side-by-side page for ``derivative`` (a built
    :class:`~s2sad.codegen.build.Derivative`) of the function ``fn``, as one HTML string."""
    file, start, ulines = user_source(fn)
    uids = {start + i: f"u{start + i}" for i in range(len(ulines))}
    sites = {}
    for origin, callee, cls, chosen in derivative.sites:
        if origin is not None and _same_file(origin.file, file):
            sites.setdefault(origin.line, []).append((callee, cls, chosen))
    linked = set()
    origins = derivative.module.line_origins
    g_rows = []
    for i, code in enumerate(highlight_lines(derivative.source), 1):
        o = origins.get(i)
        attrs, src = f'id="g{i}"', ""
        if o is not None and _same_file(o.file, file) and o.line in uids:
            uid = uids[o.line]
            linked.add(o.line)
            attrs += f' class="linked" data-src="{uid}"'
            src = f'<a href="#{uid}">{html.escape(o.short())}</a>'
        elif o is not None:
            src = f'<span class="ext">{html.escape(o.short())}</span>'
        g_rows.append(f'<tr {attrs}><td class="no">{i}</td><td class="code">{code}</td>'
                      f'<td class="from">{src}</td></tr>')
    u_rows = []
    for k, code in enumerate(highlight_lines("\n".join(ulines))):
        n = start + k
        cls = "user linked" if n in linked else "user"
        u_rows.append(f'<tr id="{uids[n]}" class="{cls}"><td class="no">{n}</td>'
                      f'<td class="code">{code}</td>'
                      f'<td class="sites">{_site_badges(sites.get(n, []))}</td></tr>')
    name = derivative.ir.name
    wrt = ", ".join(derivative.wrt) or "nothing"
    title = title or f"s2sad: {derivative.mode}-mode derivative of {name}"
    legend = "".join(f'<span class="c-{c}">{c}</span>' for c in SITE_CLASSES)
    style = ""
    pg = _pygments()
    if pg is not None:
        style = pg[1]().get_style_defs("td.code")
    return "\n".join([
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title>", f"<style>{_CSS}{style}</style></head><body>",
        "<header>", f"<h1>{html.escape(title)}</h1>",
        f"<p>{html.escape(file)}:{start}, with respect to {html.escape(wrt)}. "
        "Hover a line to see its pair; click to scroll to it. Right column: the user line each "
        "generated line came from.</p>",
        f'<p class="legend">call sites: {legend}</p>', "</header>", "<main>",
        f'<section id="user"><h2>your source: {html.escape(os.path.basename(file))}</h2>'
        f'<table>{"".join(u_rows)}</table></section>',
        f'<section id="generated"><h2>generated: {html.escape(derivative.module.filename)}</h2>'
        f'<table>{"".join(g_rows)}</table></section>',
        "</main>", f"<script>{_JS}</script>", "</body></html>", ""])
