"""MkDocs hooks for the s2sad site (mkdocs.yml: ``hooks: [docs/hooks.py]``).

Pages hold markers that are filled when the site is built, from the code as it is:

* ``<!-- s2sad:coverage -->`` (coverage.md): the tables of every supported callee, made by
  ``s2sad.rules.listing`` from the rule tables (what ``s2sad rules --format md --tables
  numpy,python,scipy`` prints); everything after the marker is replaced;
* ``<!-- s2sad:dump FILE:FUNC -->`` (or ``... wrt=0,1 -->``): the generated reverse-mode source
  of that function, as ``s2sad dump FILE:FUNC [--wrt 0,1]`` prints it;
* ``<!-- s2sad:gpu-chart -->``: a bar chart (inline SVG) of the latest GPU kernel table in
  benchmarks/RESULTS.md;
* ``<!-- s2sad:ratio-chart -->``: docs/img/ratio.png (``benchmarks/ratio.py --png``) where it
  exists, else a line saying how to make it.

Nav entries whose page does not exist yet (another engineer's page in progress) are dropped, with
a log line, so that ``mkdocs build --strict`` stays green.
"""
import html
import logging
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = os.path.join(ROOT, "docs")
log = logging.getLogger("mkdocs.plugins.s2sad")

COVERAGE = "<!-- s2sad:coverage -->"
_DUMP = re.compile(r"<!-- s2sad:dump (\S+?):(\S+?)(?: wrt=(\S+))? -->")
GPU_CHART = "<!-- s2sad:gpu-chart -->"
RATIO_CHART = "<!-- s2sad:ratio-chart -->"
TABLES = ("numpy", "python", "scipy")


def _s2sad():
    if ROOT not in sys.path:
        sys.path.insert(0, ROOT)


def coverage_markdown(tables=TABLES):
    """The coverage tables, without their page title (the page has its own)."""
    _s2sad()
    from s2sad.rules import listing
    tables = [t for t in tables if listing.available(t)]
    md = listing.render_markdown(listing.collect(tables), tables)
    return md.split("\n", 1)[1].lstrip("\n")        # drop "# Supported callees"


def dump_source(target, func, wrt=None):
    """The generated source of ``target:func`` (a path from the repository root), as ``s2sad
    dump`` prints it."""
    _s2sad()
    from s2sad import cli
    obj = cli.resolve(f"{os.path.join(ROOT, target)}:{func}")
    return cli._differentiable(obj, cli._parse_wrt(wrt)).adjoint_source()


def gpu_rows(path=os.path.join(ROOT, "benchmarks", "RESULTS.md"), dtype="float32"):
    """(case, s2sad µs, CuPy µs, PyTorch µs) of ``dtype`` from the first table of RESULTS.md
    that has a "s2sad µs" column (the latest run)."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    rows, cols = [], None
    for ln in lines:
        if not ln.startswith("|"):
            if rows:
                break
            cols = None if not ln.strip() else cols
            continue
        cells = [c.strip() for c in ln.strip().strip("|").split("|")]
        if cols is None:
            if "s2sad µs" in cells:
                cols = cells
            continue
        if set(cells[0]) <= set("-: "):
            continue
        if cells[1] == dtype:
            get = dict(zip(cols, cells))
            rows.append((cells[0], float(get["s2sad µs"]), float(get["cupy µs"]),
                         float(get["torch µs"])))
    return rows


def gpu_chart_svg(rows):
    """Horizontal bars: each peer's time per call relative to s2sad's (> 1: s2sad is faster)."""
    peers = (("CuPy", 2, "#90a4ae"), ("PyTorch", 3, "#ef8a62"))
    bar, gap, left, width = 12, 10, 150, 360
    top = max(max(r[i] / r[1] for r in rows) for _, i, _ in peers)
    scale = width / max(top, 1.0) / 1.1
    h = 30 + len(rows) * (len(peers) * bar + gap)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 60}" height="{h + 20}" '
           f'font-family="sans-serif" font-size="11" role="img" '
           f'aria-label="GPU kernel time relative to s2sad">']
    x1 = left + scale
    out.append(f'<line x1="{x1:.1f}" y1="20" x2="{x1:.1f}" y2="{h}" stroke="#333" '
               f'stroke-dasharray="3,3"/><text x="{x1 + 3:.1f}" y="14">s2sad = 1</text>')
    y = 24
    for case, s, *times in rows:
        out.append(f'<text x="{left - 6}" y="{y + bar + 3}" text-anchor="end">'
                   f'{html.escape(case)}</text>')
        for name, i, colour in peers:
            r = (s, *times)[i - 1] / s
            out.append(f'<rect x="{left}" y="{y}" width="{r * scale:.1f}" height="{bar - 1}" '
                       f'fill="{colour}"><title>{name}: {r:.2f}x</title></rect>'
                       f'<text x="{left + r * scale + 3:.1f}" y="{y + bar - 2}">{r:.2f}x</text>')
            y += bar
        y += gap
    lx = left
    for name, _, colour in peers:
        out.append(f'<rect x="{lx}" y="{h + 4}" width="10" height="10" fill="{colour}"/>'
                   f'<text x="{lx + 14}" y="{h + 13}">{name}</text>')
        lx += 80
    out.append("</svg>")
    return "".join(out)


def on_config(config, **kwargs):
    def keep(items):
        out = []
        for item in items:
            if isinstance(item, dict):
                (title, value), = item.items()
                if isinstance(value, list):
                    out.append({title: keep(value)})
                    continue
                path = value
            else:
                path = item
            if isinstance(path, str) and path.endswith(".md") and \
                    not os.path.exists(os.path.join(config["docs_dir"], path)):
                log.info("s2sad hooks: %s is not written yet; left out of the nav", path)
                continue
            out.append(item)
        return out
    if config.get("nav"):
        config["nav"] = keep(config["nav"])
    return config


def on_page_markdown(markdown, page, config, files, **kwargs):
    if COVERAGE in markdown:
        markdown = markdown.split(COVERAGE)[0] + coverage_markdown()
    markdown = _DUMP.sub(lambda m: "```python\n" + dump_source(*m.groups()) + "```", markdown)
    if GPU_CHART in markdown:
        markdown = markdown.replace(GPU_CHART, gpu_chart_svg(gpu_rows()))
    if RATIO_CHART in markdown:
        if os.path.exists(os.path.join(DOCS, "img", "ratio.png")):
            img = "![Gradient time over primal time, per case and method](img/ratio.png)"
        else:
            img = ("*(The chart is made by `python benchmarks/ratio.py --png docs/img/ratio.png`; "
                   "it is not in this build.)*")
        markdown = markdown.replace(RATIO_CHART, img)
    return markdown
