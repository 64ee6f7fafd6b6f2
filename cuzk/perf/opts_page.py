"""The optimization codes beside the published asv site: the site's graphs name variants by code
(`default-K1`), so the site gets a page with each toggle's one-line description from the registry,
and a link to it on every page asv wrote."""
from __future__ import annotations

import html
from pathlib import Path

from ..opts import REGISTRY, describe
from .suite import variant_names

PAGE = "opts.html"
_LINK = ('<a id="cuzk-opts" href="opts.html" style="position:fixed;right:1em;bottom:1em;z-index:9999;'
         'background:#fff;padding:.3em .6em;border:1px solid #ccc">optimization codes</a>')


def rows() -> list[tuple[str, str, str, str]]:
    """(code, on by default, phases, intent) for every registry toggle."""
    return [(o.name, "on" if o.default else "off", ", ".join(o.phases), o.intent) for o in REGISTRY.values()]


def page() -> str:
    e = html.escape
    toggles = "\n".join(f"<tr><td><code>{e(c)}</code></td><td>{d}</td><td>{e(p)}</td><td>{e(i)}</td></tr>"
                        for c, d, p, i in rows())
    variants = "\n".join(f"<tr><td><code>{e(v)}</code></td><td>{e(describe(v))}</td></tr>" for v in variant_names())
    return f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>cuzk optimization codes</title></head><body>
<h1>Optimization codes</h1>
<p>Each benchmark is measured per variant: <code>default</code> is what ships, <code>default-X</code> leaves
toggle X out (X's contribution today), <code>default+X</code> adds a toggle that is off by default, and
<code>baseline</code> has every toggle off. <a href="index.html">Back to the benchmarks</a>.</p>
<h2>Toggles</h2>
<table id="toggles"><tr><th>code</th><th>default</th><th>phases</th><th>what it does</th></tr>
{toggles}
</table>
<h2>Variants</h2>
<table id="variants"><tr><th>variant</th><th>meaning</th></tr>
{variants}
</table>
</body></html>
"""


def write(site: Path) -> Path:
    """opts.html in the site, and a link to it on each of asv's top-level pages."""
    site = Path(site)
    out = site / PAGE
    out.write_text(page())
    for f in site.glob("*.html"):
        if f.name == PAGE:
            continue
        text = f.read_text()
        if 'id="cuzk-opts"' not in text and "</body>" in text:
            f.write_text(text.replace("</body>", _LINK + "</body>", 1))
    return out
