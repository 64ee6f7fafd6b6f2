"""Synthetic asv history for tests: a throwaway git repo of the project with N empty commits, the
real suite's benchmarks.json (asv_runner's own discovery), and asv results for every commit written
through asv's Results API, with steps planted where a test wants them; and a throwaway repo with an
asv machine registered, for tests that run asv itself."""
from __future__ import annotations

import datetime
import itertools
import json
import os
import random
import subprocess
import sys
from pathlib import Path

from cuzk.perf.calibrate import _git, make_repo

MACHINE = "synth-box"


def machine_repo(project: Path, dest: Path, machine: str) -> tuple[Path, str, dict]:
    """(repo, sha, env): a throwaway repo of the project at dest/repo, and an environment whose HOME
    (dest/home) has `machine` registered with asv."""
    repo, home = dest / "repo", dest / "home"
    sha = make_repo(project, repo)
    home.mkdir()
    env = dict(os.environ, HOME=str(home))
    subprocess.run([sys.executable, "-m", "asv", "machine", "--yes", "--machine", machine], cwd=repo, env=env,
                   check=True, capture_output=True)
    return repo, sha, env


def discover(repo: Path) -> list[dict]:
    code = "import sys, asv_runner.discovery as d; d.list_benchmarks(sys.argv[1], sys.stdout)"
    env = dict(os.environ, PYTHONPATH=str(repo))
    p = subprocess.run([sys.executable, "-c", code, str(repo / "benchmarks")], cwd=repo, env=env,
                       capture_output=True, text=True, check=True)
    return json.loads(p.stdout)


def build(project: Path, dest: Path, commits: int, benches: list[str], steps: dict | None = None,
          noise: float = 0.01, seed: int = 0, stride: int = 1) -> tuple[Path, list[str]]:
    """Returns (repo, the measured shas oldest first). `steps`: {(benchmark, params tuple): (point index,
    factor)}; every other series is flat at 1 ms (x noise). `stride`: commits per measured point (a
    nightly history has several commits between its points), the last of each group measured. Every
    parameter set perf-gate.toml gates is measured too, as on a nightly runner (the other parameter sets
    of a benchmark not in `benches` are NaN, not selected): an unmeasured gated series fails the nightly."""
    from asv import util
    from asv.results import Results
    from asv.runner import BenchmarkResult

    from cuzk.perf import gate_config, history

    steps = steps or {}
    requested = set(benches)
    repo = dest / "repo"
    make_repo(project, repo)
    t0 = datetime.datetime(2026, 11, 1, tzinfo=datetime.timezone.utc)
    shas = []
    for i in range(commits * stride):
        when = (t0 + datetime.timedelta(hours=i)).isoformat()
        env = dict(os.environ, GIT_AUTHOR_DATE=when, GIT_COMMITTER_DATE=when)
        subprocess.run(["git", "-C", str(repo), "commit", "-q", "--allow-empty", "-m", f"commit {i}"], env=env,
                       check=True)
        if i % stride == stride - 1:
            shas.append(_git(repo, "rev-parse", "HEAD").strip())
    conf = json.loads((repo / "asv.conf.json").read_text())
    results = repo / conf["results_dir"]
    all_benches = {b["name"]: b for b in discover(repo)}
    gated = history.gated_pairs(gate_config.load(project / gate_config.DEFAULT_PATH))
    benches = list(benches) + sorted({b for b, _ in gated} - set(benches))
    (results / MACHINE).mkdir(parents=True, exist_ok=True)
    util.write_json(str(results / "benchmarks.json"), {**{n: all_benches[n] for n in benches}}, api_version=2)
    machine = {"arch": "x86_64", "cpu": "synthetic", "machine": MACHINE, "num_cpu": "2", "os": "Linux",
               "ram": "8GB", "version": 1}
    (results / MACHINE / "machine.json").write_text(json.dumps(machine))
    rng = random.Random(seed)
    for i, sha in enumerate(shas):
        date = int((t0 + datetime.timedelta(hours=i)).timestamp() * 1000)
        params = {k: v for k, v in machine.items() if k != "version"}
        params["python"] = "3.11"
        r = Results(params, {}, sha, date, "3.11", "existing-py_synthetic", {})
        for name in benches:
            b = all_benches[name]
            combos = list(itertools.product(*b["params"])) if b["params"] else [()]
            vals, samples = [], []
            for combo in combos:
                if name not in requested and (name, combo) not in gated:
                    vals.append(float("nan"))
                    samples.append(None)
                    continue
                base = 1e-3
                at, factor = steps.get((name, combo), (None, 1.0))
                level = base * (factor if at is not None and i >= at else 1.0)
                s = [level * (1 + rng.gauss(0, noise)) for _ in range(10)]
                samples.append(s)
                vals.append(sorted(s)[5])
            res = BenchmarkResult(result=vals, samples=samples, number=[1] * len(vals), errcode=0, stderr="",
                                  profile=None)
            r.add_result(b, res, started_at=datetime.datetime.fromtimestamp(date / 1000, datetime.timezone.utc),
                         duration=1.0, record_samples=True)
        r.save(str(results))
    return repo, shas
