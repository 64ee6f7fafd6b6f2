"""The published history: change points found in synthetic asv results with planted steps (each with
its commit range and `cuzk bisect` command), --fail-on-gated on new slowdowns of what perf-gate.toml
gates, no data as an error, and the published site opened in headless Chromium (a phase graph with one
line per optimization renders)."""
from __future__ import annotations

import itertools
import json
import math
import re
import shlex
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

REPO = Path(__file__).resolve().parents[2]


def _needs_change_points():
    from cuzk.perf import changepoint
    if not changepoint.available():
        pytest.skip("apache-otava is not installed here nor in its own environment (cuda_extra.py install)")
TAIL = "bench_tail_msm.TailMsm.track_time"
SYN = "bench_synthesis.Synthesis.track_time"
PREP = "bench_prep_msm.PrepMsm.track_time"
GATED = ("'cpu:10'", "'default'")          # perf-gate.toml's cpu porep_like 2^10 opts=default, a suite target
COMMITS = 16
STEPS = {(TAIL, ("'cpu:8'", "'default'")): (9, 1.30),                 # a regression at commit 9
         (SYN, ("'porep_like'", "12", "'default-A2'")): (5, 0.80)}        # an improvement at commit 5


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    _needs_change_points()
    d = tmp_path_factory.mktemp("asv-synth")
    repo, shas = asv_synth.build(REPO, d, COMMITS, [TAIL, SYN], STEPS, stride=2)
    return repo, shas


def _synth(tmp_path_factory, steps, commits=COMMITS, benches=(TAIL,)):
    """A point at every commit."""
    _needs_change_points()
    return asv_synth.build(REPO, tmp_path_factory.mktemp("asv-synth"), commits, list(benches), steps)


@pytest.fixture(scope="module")
def gated_slowdown(tmp_path_factory):
    """A new slowdown (3 points before the end) in a gated pair."""
    return asv_synth.build(REPO, tmp_path_factory.mktemp("asv-synth"), COMMITS, [TAIL], {(TAIL, GATED): (13, 1.30)},
                           stride=2)


@pytest.fixture(scope="module")
def ungated_slowdown(tmp_path_factory):
    """A new slowdown only in a non-gated pair; in gated pairs an old slowdown and a new speed-up."""
    return _synth(tmp_path_factory, {(TAIL, ("'cpu:8'", "'default'")): (13, 1.30), (TAIL, GATED): (6, 1.30),
                                     (PREP, GATED): (13, 0.70)}, benches=(TAIL, PREP))


def test_change_points_at_the_planted_steps(history, tmp_path, capsys):
    repo, shas = history
    out = tmp_path / "changes.json"
    assert main(["history", "changes", "--repo", str(repo), "--json", str(out)]) == 0
    table = capsys.readouterr().out
    assert table.splitlines()[0].startswith(f"Change points over {len(_series_names(repo))} series (up to "
                                            f"{COMMITS} points each) from {repo / '.asv' / 'results'}")
    found = json.loads(out.read_text())
    got = {(c["benchmark"], c["commit"]): c for c in found}
    tail = got[(f"{TAIL}('cpu:8', 'default')", shas[9])]
    syn = got[(f"{SYN}('porep_like', 12, 'default-A2')", shas[5])]
    assert tail["change"] == pytest.approx(0.30, abs=0.03) and tail["previous_commit"] == shas[8]
    assert syn["change"] == pytest.approx(-0.20, abs=0.03)
    assert len(found) == 2, found                      # nothing in the flat series
    row = next(ln for ln in table.splitlines() if f"| `{TAIL}('cpu:8', 'default')`" in ln)
    pct = float(re.search(r"\| \+(\d+(?:\.\d+)?)% ", row).group(1))      # the planted +30%, with the noise
    assert shas[9][:10] in row and 27 <= pct <= 33
    bisect = f"cuzk bisect tail_msm --target cpu:8 --opts default --good {shas[8][:10]} --bad {shas[9][:10]}"
    assert f"`{shas[8][:10]}..{shas[9][:10]}`" in row and f"`{bisect}`" in row
    assert tail["range"] == f"{shas[8][:10]}..{shas[9][:10]}" and tail["bisect"] == bisect
    # synthesis (circuit x size x opts) bisects by its exact asv name, a command `cuzk bisect` takes
    argv = shlex.split(syn["bisect"])
    assert argv[:2] == ["cuzk", "bisect"] and re.fullmatch(argv[2], syn["benchmark"])
    assert not re.search(argv[2], syn["benchmark"].replace("12", "16"))
    assert argv[3:] == ["--good", shas[4][:10], "--bad", shas[5][:10]]
    assert main([*argv[1:], "--repo", str(repo), "--dry-run"]) == 0
    assert "asv find" in capsys.readouterr().out
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
    (tmp_path / "empty").mkdir()
    assert main(["history", "changes", "--repo", str(repo), "--results", str(tmp_path / "empty")]) == 2
    assert "no asv machines in" in capsys.readouterr().err
    assert main(["history", "changes", "--repo", str(repo), "--bench", "NoSuchBenchmark"]) == 2
    assert "0 series matching --bench 'NoSuchBenchmark'" in capsys.readouterr().err


def _series_names(repo: Path) -> set:
    """Every (benchmark, params) the synthetic results measure (not asv's NaN: not selected)."""
    results = repo / ".asv" / "results" / asv_synth.MACHINE
    d = json.loads(next(p for p in sorted(results.glob("*.json")) if p.name != "machine.json").read_text())
    ip, ir = d["result_columns"].index("params"), d["result_columns"].index("result")
    return {(n, c) for n, row in d["results"].items() for c, v in zip(itertools.product(*row[ip]), row[ir])
            if not math.isnan(v)}


def test_no_results_dir_is_an_error_not_no_change(tmp_path, capsys):
    (tmp_path / "asv.conf.json").write_text((REPO / "asv.conf.json").read_text())
    assert main(["history", "changes", "--repo", str(tmp_path)]) == 2
    cap = capsys.readouterr()
    assert f"no asv results at {tmp_path / '.asv' / 'results'}" in cap.err and "No change" not in cap.out


def test_too_short_series_are_an_error_and_the_history_worktree_comes_first(history, tmp_path_factory, capsys):
    repo, _ = _synth(tmp_path_factory, {}, commits=3)
    summary = repo / "summary.md"
    assert main(["history", "changes", "--repo", str(repo), "--summary", str(summary)]) == 2
    cap = capsys.readouterr()
    err = (f"nothing to analyse in {repo / '.asv' / 'results'}: {len(_series_names(repo))} series, "
           f"the longest has 3 points")
    assert err in cap.err and err in summary.read_text() and "No change" not in cap.out
    # once `record` or `publish` made the history's worktree here, changes reads it
    shutil.copytree(history[0] / ".asv" / "results", repo / ".asv" / "history" / "results")
    assert main(["history", "changes", "--repo", str(repo)]) == 0
    assert f"from {repo / '.asv' / 'history' / 'results'}" in capsys.readouterr().out.splitlines()[0]


def test_the_summary_is_an_output_checked_before_the_analysis(history, tmp_path, capsys):
    """--summary is appended to by the output rule: a folder is one line before any work, the same file as --json
    is refused, a link's target gets the text added (never replaced), and a second run appends."""
    repo, _ = history
    d = tmp_path / "summary-dir"
    d.mkdir()
    assert main(["history", "changes", "--repo", str(repo), "--summary", str(d)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(d) in err[0] and "a folder" in err[0], err
    same = tmp_path / "out.md"
    assert main(["history", "changes", "--repo", str(repo), "--summary", str(same), "--json", str(same)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "given as --summary and as output --json" in err[0] and not same.exists(), err
    target = tmp_path / "kept.md"
    target.write_text("earlier steps\n")
    link = tmp_path / "link.md"
    link.symlink_to(target)
    for _ in range(2):
        assert main(["history", "changes", "--repo", str(repo), "--summary", str(link)]) == 0
    out = capsys.readouterr().out
    assert link.is_symlink() and target.read_text() == "earlier steps\n" + out


def test_an_output_inside_the_results_it_reads_is_refused(history, tmp_path, capsys):
    """--json under the results directory would be read back as an asv file by the next `changes`, which then
    fails on it: refused before the analysis, nothing written there."""
    repo, _ = history
    results = repo / ".asv" / "results"
    before = sorted(results.rglob("*"))
    for flag, path in (("--json", results / asv_synth.MACHINE / "changes.json"), ("--json", results / "c.json"),
                       ("--summary", results / asv_synth.MACHINE / "summary.json")):
        assert main(["history", "changes", "--repo", str(repo), flag, str(path)]) == 2, (flag, path)
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and flag in err[0] and "inside the results" in err[0], err
    assert sorted(results.rglob("*")) == before
    assert main(["history", "changes", "--repo", str(repo)]) == 0


def test_a_gated_series_too_short_to_judge_is_named_not_passed(gated_slowdown, tmp_path, capsys):
    """A new runner's first nights: its gated series has fewer points than a change point needs, so it is named as
    not judged beside the verdict on the series that are long enough, never folded into "no new regression"."""
    src, _ = gated_slowdown
    repo = tmp_path / "repo"
    shutil.copytree(src, repo, symlinks=True)
    results = repo / ".asv" / "results"
    new = results / "new-runner"
    new.mkdir()
    machine = json.loads((results / asv_synth.MACHINE / "machine.json").read_text())
    (new / "machine.json").write_text(json.dumps({**machine, "machine": "new-runner"}))
    for f in sorted(p for p in (results / asv_synth.MACHINE).glob("*.json") if p.name != "machine.json")[-2:]:
        doc = json.loads(f.read_text())
        doc["params"]["machine"] = "new-runner"
        (new / f.name).write_text(json.dumps(doc))
    assert main(["history", "changes", "--repo", str(repo), "--fail-on-gated", "2"]) == 0
    out = capsys.readouterr().out
    short = [ln for ln in out.splitlines() if ln.startswith("- `") and ln.endswith("on new-runner: 2 point(s)")]
    assert f"**Not judged: {len(short)} gated series have fewer than 4 points**" in out, out
    assert f"- `{TAIL}({GATED[0]}, {GATED[1]})` on new-runner: 2 point(s)" in short
    assert "No new regression in the " in out and "gated parameter set(s)" in out


def test_no_change_points_says_what_was_analysed(history, capsys):
    repo, _ = history
    assert main(["history", "changes", "--repo", str(repo), "--bench", r"Synthesis.*'mulchain'"]) == 0
    out = capsys.readouterr().out
    n = sum(1 for b, c in _series_names(repo) if b == SYN and c[0] == "'mulchain'")
    assert f"No change points in the {n} series analysed (up to {COMMITS} points each)." in out


def test_fail_on_gated_fails_on_a_new_gated_slowdown(gated_slowdown, tmp_path, capsys):
    repo, shas = gated_slowdown
    summary = tmp_path / "summary.md"
    assert main(["history", "changes", "--repo", str(repo), "--fail-on-gated", "3", "--summary", str(summary)]) == 1
    out = capsys.readouterr().out
    failing = out[out.index("new regression(s) in gated phases"):]
    assert f"`{TAIL}('cpu:10', 'default')` on {asv_synth.MACHINE}: +" in failing
    assert f"cuzk bisect tail_msm --target cpu:10 --opts default --good {shas[12][:10]} --bad {shas[13][:10]}" in failing
    assert summary.read_text() == out
    # older than the last 2 points: not new
    assert main(["history", "changes", "--repo", str(repo), "--fail-on-gated", "2"]) == 0
    assert f"No new regression in the {_gated_count()} gated parameter set(s)" in capsys.readouterr().out


def test_fail_on_gated_passes_on_an_ungated_slowdown(ungated_slowdown, tmp_path, capsys):
    repo, shas = ungated_slowdown
    argv = ["history", "changes", "--repo", str(repo), "--json", str(tmp_path / "c.json"), "--fail-on-gated"]
    assert main([*argv, "3"]) == 0
    assert f"No new regression in the {_gated_count()} gated parameter set(s)" in capsys.readouterr().out
    found = {(c["benchmark"], c["commit"]) for c in json.loads((tmp_path / "c.json").read_text())}
    assert {(f"{TAIL}('cpu:8', 'default')", shas[13]), (f"{TAIL}('cpu:10', 'default')", shas[6]),
            (f"{PREP}('cpu:10', 'default')", shas[13])} <= found          # all three were seen, none failed
    assert main([*argv, "10"]) == 1                                    # the old gated slowdown, within 10
    assert f"`{TAIL}('cpu:10', 'default')`" in capsys.readouterr().out.split("gated phases")[1]


def test_fail_on_gated_reads_the_gate_config(gated_slowdown, tmp_path, capsys):
    repo, _ = gated_slowdown
    cfg = tmp_path / "gate.toml"                    # gates tail_msm at cpu 2^8 only: the slowdown is not gated there
    cfg.write_text((REPO / "perf-gate.toml").read_text().split("[[workload]]")[0]
                   + '[[workload]]\nbackend = "cpu"\ncircuit = "porep_like"\nlog_size = 8\nopts = "default"\n'
                   + 'phases = ["tail_msm"]\n')
    argv = ["history", "changes", "--repo", str(repo), "--fail-on-gated", "3", "--gate-config", str(cfg)]
    assert main(argv) == 0
    capsys.readouterr()
    cfg.write_text(cfg.read_text().replace('log_size = 8\nopts = "default"', 'log_size = 14\nopts = "default"'))
    assert main(argv) == 2                          # no such suite target: nothing gated, never a pass
    assert "match no parameter set" in capsys.readouterr().err
    assert main(["history", "changes", "--repo", str(repo), "--fail-on-gated", "3", "--bench", "cpu:8"]) == 2
    assert f"none of the {_gated_count()} gated parameter sets has a series" in capsys.readouterr().err


def _gated_count() -> int:
    """perf-gate.toml's gated parameter sets, each of which the synthetic results measure (asv_synth)."""
    from cuzk.perf import gate_config, history
    return len(history.gated_pairs(gate_config.load(REPO / "perf-gate.toml")))


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
        for variant in ("baseline", "default-K1", "default-D4", "default-M2", "default-R1", "default"):
            assert f">{variant}<" in page, variant
        assert "opts-default; target-cpu:8" in page and "opts-default-D4; target-cpu:8" in page    # lines in the legend
        shot = tmp_path / "asv-tail_msm.png"
        s = _browse(chrome, url, tmp_path, f"--screenshot={shot}")
        assert s.returncode == 0 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000
        print(f"screenshot of the published phase graph: {shot}")
        reg = _browse(chrome, f"http://127.0.0.1:{port}/index.html#regressions", tmp_path, "--dump-dom")
        assert f"{TAIL}('cpu:8', 'default')" in reg.stdout                 # asv's own regressions page lists it too
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_adjacent_points_name_the_commit_instead_of_a_bisection(tmp_path_factory, tmp_path):
    """A point at every commit: the change point's commit is the change itself, nothing to bisect."""
    repo, shas = _synth(tmp_path_factory, {(TAIL, ("'cpu:8'", "'default'")): (9, 1.30)})
    out = tmp_path / "changes.json"
    assert main(["history", "changes", "--repo", str(repo), "--json", str(out)]) == 0
    (c,) = json.loads(out.read_text())
    assert c["commit"] == shas[9] and c["previous_commit"] == shas[8] and c["bisect"] is None
