"""The nightly history: two runners record into one results branch, publish builds one site."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from cuzk.perf.calibrate import make_repo

REPO = Path(__file__).resolve().parents[1]
BENCH = r"bench_prep_msm\.PrepMsm\.track_time\('cpu:8', 'baseline'\)"


def _git(cwd, *args):
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def _cuzk(cwd, env, *args):
    return subprocess.run([sys.executable, "-m", "cuzk", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


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
        p = _cuzk(clone, env, "history", "record", "--machine", machine, "--bench", BENCH)
        assert p.returncode == 0, p.stdout + p.stderr
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
    p = _cuzk(pub, dict(env, GITHUB_SERVER_URL="https://github.com", GITHUB_REPOSITORY="o/cuzk"),
              "history", "publish")
    assert p.returncode == 0, p.stdout + p.stderr
    site = _git(origin, "ls-tree", "-r", "--name-only", "gh-pages").split()
    assert "index.html" in site and ".nojekyll" in site
    index = json.loads(_git(origin, "show", "gh-pages:index.json"))
    assert set(index["params"]["machine"]) == {"gpu-a", "gpu-b"}
    assert index["show_commit_url"] == "https://github.com/o/cuzk/commit/"


def test_record_needs_a_machine_name(tmp_path):
    p = _cuzk(REPO, dict(os.environ, HOME=str(tmp_path)), "history", "record")
    assert p.returncode == 2 and "--machine" in p.stderr
