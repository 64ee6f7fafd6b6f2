"""asv's published pages load jQuery, flot, bootstrap and a few plugins from CDNs. `localize`
serves them from the site itself instead: copies from npm packages (pinned in .ci/node, the same
versions the CDN URLs name; stupid-table-plugin 1.1.3, the only one npm has) into `vendor/`, and
rewrites the tags (integrity attributes dropped: the files are same-origin now). A site so made
renders with no third-party network, as in CI's headless-Chromium check.
"""
from __future__ import annotations

import re
import shutil
from pathlib import Path

# CDN URL (as asv 0.6 writes it) -> (npm package, file in the package)
ASSETS = {
    "https://code.jquery.com/jquery-3.3.1.min.js": ("jquery", "dist/jquery.min.js"),
    "https://cdnjs.cloudflare.com/ajax/libs/flot/0.8.3/jquery.flot.min.js": ("flot", "jquery.flot.js"),
    "https://cdnjs.cloudflare.com/ajax/libs/flot/0.8.3/jquery.flot.time.min.js": ("flot", "jquery.flot.time.js"),
    "https://cdnjs.cloudflare.com/ajax/libs/flot/0.8.3/jquery.flot.selection.min.js":
        ("flot", "jquery.flot.selection.js"),
    "https://cdnjs.cloudflare.com/ajax/libs/flot/0.8.3/jquery.flot.categories.min.js":
        ("flot", "jquery.flot.categories.js"),
    "https://cdn.jsdelivr.net/npm/flot-orderbars@1.0.0/js/jquery.flot.orderBars.js":
        ("flot-orderbars", "js/jquery.flot.orderBars.js"),
    "https://cdnjs.cloudflare.com/ajax/libs/stupidtable/1.0.1/stupidtable.min.js":
        ("stupid-table-plugin", "stupidtable.min.js"),
    "https://cdnjs.cloudflare.com/ajax/libs/blueimp-md5/2.19.0/js/md5.min.js": ("blueimp-md5", "js/md5.min.js"),
    "https://cdn.jsdelivr.net/npm/bootstrap@3.1.1/dist/js/bootstrap.min.js": ("bootstrap", "dist/js/bootstrap.min.js"),
    "https://cdn.jsdelivr.net/npm/bootstrap@3.1.1/dist/css/bootstrap.min.css":
        ("bootstrap", "dist/css/bootstrap.min.css"),
}

_TAG = re.compile(r"<(script|link)\b[^>]*?(?:src|href)=\"(https?://[^\"]+)\"[^>]*>", re.S)


class AssetError(RuntimeError):
    pass


def default_node_modules(repo: Path) -> Path:
    return Path(repo) / ".ci" / "node" / "node_modules"


def missing(node_modules: Path) -> list[str]:
    return sorted({f"{pkg}/{f}" for pkg, f in ASSETS.values() if not (Path(node_modules) / pkg / f).is_file()})


def localize(html_dir: Path, node_modules: Path) -> list[str]:
    """Rewrite every page of the site to load the assets from vendor/; returns the URLs replaced.
    Raises AssetError for a file that is missing or a CDN URL this table does not know."""
    html_dir, node_modules = Path(html_dir), Path(node_modules)
    gone = missing(node_modules)
    if gone:
        raise AssetError(f"asset files missing under {node_modules}: {', '.join(gone)} (npm ci in .ci/node)")
    vendor = html_dir / "vendor"
    vendor.mkdir(exist_ok=True)
    done = []
    for page in sorted(html_dir.glob("*.html")):
        text = page.read_text()

        def swap(m):
            url = m.group(2)
            if url not in ASSETS:
                raise AssetError(f"{page.name}: unknown external asset {url}")
            pkg, f = ASSETS[url]
            local = f"vendor/{pkg}/{f}"
            dst = html_dir / local
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(node_modules / pkg / f, dst)
            done.append(url)
            tag = m.group(0).replace(url, local)
            tag = re.sub(r"\s+integrity=\"[^\"]*\"", "", tag)
            tag = re.sub(r"\s+crossorigin=\"[^\"]*\"", "", tag)
            return re.sub(r"\s+referrerpolicy=\"[^\"]*\"", "", tag)
        new = _TAG.sub(swap, text)
        if new != text:
            page.write_text(new)
    return done
