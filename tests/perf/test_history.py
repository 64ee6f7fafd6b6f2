"""The nightly history: two runners record into one results branch, publish builds one site, and
neither touches the user's own asv results and site (asv.conf.json's results_dir and html_dir)."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

from cuzk.perf.calibrate import make_repo

REPO = Path(__file__).resolve().parents[2]
BENCH = r"bench_prep_msm\.PrepMsm\.track_time\('cpu:8', 'default'\)"


def _git(cwd, *args):
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def _cuzk(cwd, env, *args):
    return subprocess.run([sys.executable, "-m", "cuzk", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


def _plant_own_results(clone: Path) -> None:
    """A user's own `asv run` results and `asv publish` site, which the history must leave alone."""
    for rel, text in {".asv/results/benchmarks.json": '{"mine": 1}', ".asv/results/laptop/machine.json": "{}",
                      ".asv/results/laptop/0123abcd-existing.json": '{"result": 1}',
                      ".asv/html/index.html": "<p>my own site</p>"}.items():
        (clone / rel).parent.mkdir(parents=True, exist_ok=True)
        (clone / rel).write_text(text)


def _own_results(clone: Path) -> dict:
    """Every path under the user's .asv/results and .asv/html, with each file's hash."""
    return {str(p.relative_to(clone)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
            for d in (".asv/results", ".asv/html") for p in sorted((clone / d).rglob("*"))}


def test_two_runners_one_history(tmp_path):
    src = tmp_path / "src"
    make_repo(REPO, src)
    origin = tmp_path / "origin.git"
    _git(tmp_path, "clone", "-q", "--bare", str(src), str(origin))
    env = dict(os.environ, HOME=str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    for machine in ("gpu-a", "gpu-b"):
        clone = tmp_path / machine
        _git(tmp_path, "clone", "-q", str(origin), str(clone))
        _plant_own_results(clone)
        before = _own_results(clone)
        p = _cuzk(clone, env, "history", "record", "--machine", machine, "--bench", BENCH)
        assert p.returncode == 0, p.stdout + p.stderr
        assert _own_results(clone) == before and len(before) == 5
        assert (clone / ".asv/history/results" / machine / "machine.json").is_file()
    files = _git(origin, "ls-tree", "-r", "--name-only", "asv-results").split()
    assert "benchmarks.json" in files
    for m in ("gpu-a", "gpu-b"):
        assert f"{m}/machine.json" in files
        assert any(f.startswith(f"{m}/") and f.endswith(".json") and f != f"{m}/machine.json" for f in files)
        gpu = [f for f in files if f.startswith(f"{m}/gpu-state/")]
        assert len(gpu) == 1 and "gpu" in json.loads(_git(origin, "show", f"asv-results:{gpu[0]}"))
    assert len(_git(origin, "log", "--format=%s", "asv-results").split("\n")) >= 2

    pub = tmp_path / "publisher"
    _git(tmp_path, "clone", "-q", str(origin), str(pub))
    _plant_own_results(pub)
    before = _own_results(pub)
    p = _cuzk(pub, env, "history", "publish", "--no-push")
    assert p.returncode == 0, p.stdout + p.stderr
    assert str(pub / ".asv/history/html") in p.stdout and (pub / ".asv/history/html/index.html").is_file()
    assert _own_results(pub) == before
    assert "gh-pages" not in _git(origin, "branch", "--list")
    assert _git(pub, "branch", "--list") == "* main\n"          # detached: no local branch made or moved
    p = _cuzk(pub, dict(env, GITHUB_SERVER_URL="https://github.com", GITHUB_REPOSITORY="o/cuzk"),
              "history", "publish")
    assert p.returncode == 0, p.stdout + p.stderr
    site = _git(origin, "ls-tree", "-r", "--name-only", "gh-pages").split()
    assert "index.html" in site and ".nojekyll" in site and "opts.html" in site
    opts_page = _git(origin, "show", "gh-pages:opts.html")
    assert ">default-K1<" in opts_page and "without K1" in opts_page and 'href="opts.html"' in \
        _git(origin, "show", "gh-pages:index.html")
    index = json.loads(_git(origin, "show", "gh-pages:index.json"))
    assert set(index["params"]["machine"]) == {"gpu-a", "gpu-b"}
    assert index["show_commit_url"] == "https://github.com/o/cuzk/commit/"
    assert _own_results(pub) == before


def test_publish_without_results_is_one_clear_line(tmp_path):
    """No results branch, or one with no benchmarks.json: exit 2 with one line, not asv's traceback."""
    src, origin, clone = tmp_path / "src", tmp_path / "origin.git", tmp_path / "clone"
    make_repo(REPO, src)
    _git(tmp_path, "clone", "-q", "--bare", str(src), str(origin))
    _git(tmp_path, "clone", "-q", str(origin), str(clone))
    env = dict(os.environ, HOME=str(tmp_path))
    _plant_own_results(clone)
    before = _own_results(clone)
    p = _cuzk(clone, env, "history", "publish", "--no-push")
    assert p.returncode == 2 and p.stderr.count("\n") == 1, p.stderr
    assert "origin has no asv-results branch" in p.stderr
    empty = tmp_path / "empty"
    _git(tmp_path, "clone", "-q", str(origin), str(empty))
    _git(empty, "checkout", "-q", "--orphan", "asv-results")
    _git(empty, "rm", "-rfq", ".")
    (empty / "README").write_text("asv results\n")
    _git(empty, "add", "README")
    _git(empty, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "empty")
    _git(empty, "push", "-q", "origin", "asv-results")
    p = _cuzk(clone, env, "history", "publish", "--no-push")
    assert p.returncode == 2 and p.stderr.count("\n") == 1, p.stderr
    assert "no benchmarks.json" in p.stderr and "missing!" not in p.stdout + p.stderr
    assert _own_results(clone) == before


def test_record_needs_a_machine_name(tmp_path):
    p = _cuzk(REPO, dict(os.environ, HOME=str(tmp_path)), "history", "record")
    assert p.returncode == 2 and "--machine" in p.stderr


def test_an_option_of_another_action_is_refused_not_ignored(tmp_path, capsys):
    """`publish --json F` would write nothing and exit 0: an option the action does not read is exit 2, one line,
    before any work (no repository is read here)."""
    from cuzk.cli import main
    out = tmp_path / "changes.json"
    cases = [["publish", "--no-push", "--json", str(out)], ["import", str(tmp_path), "--summary", str(out)],
             ["record", "--machine", "m", "--fail-on-gated", "3"], ["changes", "--assets", str(tmp_path)],
             ["changes", "--gate-noise", str(out)], ["publish", "--results", str(tmp_path)],
             ["publish", "--bench", "TailMsm"], ["import", str(tmp_path), "--machine", "m"],
             ["record", "--machine", "m", "--gate-config", str(out)]]
    for argv in cases:
        assert main(["history", *argv, "--repo", str(tmp_path)]) == 2, argv
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "goes with history" in err[0], (argv, err)
    assert not out.exists()
