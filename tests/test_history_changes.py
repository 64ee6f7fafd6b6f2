"""The published history: change points found in synthetic asv results with planted steps, and the
published site opened in headless Chromium (a phase graph with one line per optimization renders)."""
from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

import asv_synth
from cuzk.cli import main
from cuzk.perf import asv_assets

REPO = Path(__file__).resolve().parents[1]
TAIL = "bench_tail_msm.TailMsm.track_time"
SYN = "bench_synthesis.Synthesis.track_time"
COMMITS = 16
STEPS = {(TAIL, ("'cpu:8'", "'A1'")): (9, 1.30),                 # a regression at commit 9
         (SYN, ("'porep_like'", "12", "'A2'")): (5, 0.80)}        # an improvement at commit 5


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    pytest.importorskip("otava")
    d = tmp_path_factory.mktemp("asv-synth")
    repo, shas = asv_synth.build(REPO, d, COMMITS, [TAIL, SYN], STEPS)
    return repo, shas


def test_change_points_at_the_planted_steps(history, tmp_path, capsys):
    repo, shas = history
    out = tmp_path / "changes.json"
    assert main(["history", "changes", "--repo", str(repo), "--json", str(out)]) == 0
    table = capsys.readouterr().out
    found = json.loads(out.read_text())
    got = {(c["benchmark"], c["commit"]): c for c in found}
    tail = got[(f"{TAIL}('cpu:8', 'A1')", shas[9])]
    syn = got[(f"{SYN}('porep_like', 12, 'A2')", shas[5])]
    assert tail["change"] == pytest.approx(0.30, abs=0.03) and tail["previous_commit"] == shas[8]
    assert syn["change"] == pytest.approx(-0.20, abs=0.03)
    assert len(found) == 2, found                      # nothing in the flat series
    row = next(ln for ln in table.splitlines() if f"| `{TAIL}('cpu:8', 'A1')`" in ln)
    pct = float(re.search(r"\| \+(\d+(?:\.\d+)?)% ", row).group(1))      # the planted +30%, with the noise
    assert shas[9][:10] in row and 27 <= pct <= 33
    # one benchmark, one machine
    assert main(["history", "changes", "--repo", str(repo), "--bench", "Synthesis", "--machine",
                 asv_synth.MACHINE]) == 0
    only = capsys.readouterr().out
    assert "Synthesis" in only and "TailMsm" not in only


def test_changes_bad_input(history, capsys, tmp_path):
    repo, _ = history
    assert main(["history", "changes", "--repo", str(repo), "--machine", "nope"]) == 2
    assert "no results for machine 'nope'" in capsys.readouterr().err
    assert main(["history", "changes", "--repo", str(repo), "--results", str(tmp_path / "none")]) == 2
    assert "no asv results" in capsys.readouterr().err


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        if shutil.which(name):
            return shutil.which(name)
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _browse(chrome: str, url: str, tmp: Path, *extra: str) -> subprocess.CompletedProcess:
    ud = tmp / f"chrome-profile-{time.monotonic_ns()}"
    return subprocess.run([chrome, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                           "--disable-component-update", "--disable-sync", "--no-first-run",
                           f"--user-data-dir={ud}", "--window-size=1400,1000", "--virtual-time-budget=15000",
                           *extra, url], capture_output=True, text=True, timeout=120)


def test_published_site_renders_a_phase_graph_in_chromium(history, tmp_path):
    chrome = _chromium()
    if chrome is None:
        pytest.skip("no Chromium (Debian: apt-get install chromium; .ci/run installs it)")
    node_modules = asv_assets.default_node_modules(REPO)
    if asv_assets.missing(node_modules):
        pytest.skip(f"asv's browser libraries are not installed under {node_modules} (npm ci in .ci/node)")
    repo, shas = history
    p = subprocess.run([sys.executable, "-m", "asv", "publish"], cwd=repo, capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    html = repo / ".asv" / "html"
    assert len(asv_assets.localize(html, node_modules)) == len(asv_assets.ASSETS)
    assert "https://cdn" not in (html / "index.html").read_text()
    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"], cwd=html,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        url = f"http://127.0.0.1:{port}/index.html#{TAIL}"
        dom = _browse(chrome, url, tmp_path, "--dump-dom")
        assert dom.returncode == 0, dom.stderr[-2000:]
        page = dom.stdout
        assert "external (JavaScript) dependencies" not in page, "asv's error page: a script did not load"
        assert 'class="flot-base"' in page                           # flot drew the graph's canvas
        for variant in ("baseline", "A1", "A2", "B1", "D4", "A4", "all"):   # one selector per optimization
            assert f">{variant}<" in page, variant
        assert "opts-baseline; target-cpu:8" in page and "opts-A1; target-cpu:8" in page    # lines in the legend
        shot = tmp_path / "asv-tail_msm.png"
        s = _browse(chrome, url, tmp_path, f"--screenshot={shot}")
        assert s.returncode == 0 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000
        print(f"screenshot of the published phase graph: {shot}")
        reg = _browse(chrome, f"http://127.0.0.1:{port}/index.html#regressions", tmp_path, "--dump-dom")
        assert f"{TAIL}('cpu:8', 'A1')" in reg.stdout                 # asv's own regressions page lists it too
    finally:
        server.terminate()
        server.wait(timeout=10)
