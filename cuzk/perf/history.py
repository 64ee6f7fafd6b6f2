"""The published history: asv results from every runner on one branch, asv's site on another.

`record` and `publish` work in their own directory, `.asv/history` (HISTORY_DIR): `results/` is a
worktree of the results branch, `html/` the site. asv is pointed there through a temporary copy of
asv.conf.json, so a user's own `asv run` results and site (asv.conf.json's results_dir and
html_dir) are never touched.
`record` (on each GPU runner, nightly): run the whole suite on this commit in the existing
interpreter (`asv run -E existing --set-commit-hash --record-samples`, the way that works without a
package registry), add the run's GPU record (NVML: device, driver, clocks), commit this machine's
files and push, rebasing onto other runners' pushes. Each runner writes only
under its own machine name, so runners never conflict; asv's shared benchmarks.json is taken
from the newest run.
`publish`: `asv publish` over all machines' results, then the site replaces the pages branch
(with `assets`, its CDN scripts are served from the site itself: cuzk/perf/asv_assets.py).
`changes`: change-point detection (apache-otava's e-divisive with a t-test, the Hunter algorithm)
over each benchmark's history, per machine and parameter set (phase x target x optimization):
each change with its first commit, the level before and after, and its size.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

RESULTS_BRANCH, PAGES_BRANCH = "asv-results", "gh-pages"
HISTORY_DIR = Path(".asv") / "history"     # ignored by git, like the rest of .asv


class HistoryError(RuntimeError):
    pass


def _run(cmd, cwd, check=True, env=None) -> subprocess.CompletedProcess:
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env)
    if check and p.returncode != 0:
        raise HistoryError(f"{' '.join(map(str, cmd))}: exit {p.returncode}\n{(p.stdout + p.stderr).strip()[-2000:]}")
    return p


def _git(cwd, *args, check=True) -> subprocess.CompletedProcess:
    return _run(["git", *args], cwd, check)


def _conf(repo: Path) -> dict:
    return json.loads((repo / "asv.conf.json").read_text())


def history_dirs(repo: Path) -> tuple[Path, Path]:
    """(results worktree, site) of the history: its own directory, never asv.conf.json's."""
    base = Path(repo).resolve() / HISTORY_DIR
    return base / "results", base / "html"


def _own_dirs(repo: Path, conf: dict) -> tuple[Path, Path]:
    """history_dirs, refused where they would sit in (or hold) the user's own asv results or site."""
    mine = history_dirs(repo)
    theirs = [(repo / conf.get(k, d)).resolve() for k, d in (("results_dir", "results"), ("html_dir", "html"))]
    for m in mine:
        for t in theirs:
            if m == t or t in m.parents or m in t.parents:
                raise HistoryError(f"asv.conf.json's {t} overlaps the history's own {m}: move it elsewhere")
    return mine


def asv_config(repo: Path, conf: dict, results: Path, html: Path, dest: Path, commit_url: str | None = None) -> Path:
    """asv.conf.json with absolute paths and the history's results_dir and html_dir, written in `dest`."""
    c = dict(conf, repo=str((repo / conf.get("repo", ".")).resolve()),
             benchmark_dir=str(repo / conf.get("benchmark_dir", "benchmarks")),
             env_dir=str(repo / conf.get("env_dir", "env")), results_dir=str(results), html_dir=str(html))
    if commit_url:           # the real repository's URL, known only in CI
        c["show_commit_url"] = commit_url
    path = Path(dest) / "asv.conf.json"
    path.write_text(json.dumps(c, indent=1))
    return path


def _identity(cwd) -> None:
    """Commits need an author; CI runners often have none configured."""
    if _git(cwd, "config", "user.email", check=False).returncode != 0:
        _git(cwd, "config", "user.email", "cuzk-history@users.noreply.github.com")
        _git(cwd, "config", "user.name", "cuzk history")


def checkout_branch(repo: Path, remote: str, branch: str, path: Path, create: bool = True) -> None:
    """`path` becomes a detached worktree of `branch` as on `remote`; where there is none, a new root
    commit (`create`) or a HistoryError. Detached: no local branch of the user's is moved or made."""
    if path.exists():
        _git(repo, "worktree", "remove", "--force", str(path), check=False)
        shutil.rmtree(path, ignore_errors=True)
    _git(repo, "worktree", "prune")
    _identity(repo)
    has = _git(repo, "ls-remote", "--exit-code", "--heads", remote, branch, check=False).returncode == 0
    if has:
        _git(repo, "fetch", "-q", remote, f"+refs/heads/{branch}:refs/remotes/{remote}/{branch}")
        start = f"{remote}/{branch}"
    elif create:
        empty = _git(repo, "hash-object", "-t", "tree", "-w", "/dev/null").stdout.strip()
        start = _git(repo, "commit-tree", empty, "-m", f"{branch}: asv results of every runner").stdout.strip()
    else:
        raise HistoryError(f"{remote} has no {branch} branch: no results yet (`cuzk history record` makes it)")
    _git(repo, "worktree", "add", "-q", "--detach", str(path), start)


def push_with_rebase(path: Path, remote: str, branch: str, tries: int = 5) -> None:
    for _ in range(tries):
        if _git(path, "push", "-q", remote, f"HEAD:refs/heads/{branch}", check=False).returncode == 0:
            return
        _git(path, "fetch", "-q", remote, branch)
        # replaying our commit: "theirs" is ours here, so a clash in benchmarks.json keeps our newer copy
        if _git(path, "rebase", "-X", "theirs", "FETCH_HEAD", check=False).returncode != 0:
            _git(path, "rebase", "--abort", check=False)
            raise HistoryError(f"could not rebase the results onto {remote}/{branch}")
    raise HistoryError(f"could not push {branch} after {tries} tries")


def record(repo: Path, machine: str, remote: str = "origin", branch: str = RESULTS_BRANCH,
           bench: str | None = None, push: bool = True, log=print) -> int:
    """Run the suite on HEAD into this machine's history; returns asv's exit code (2: a benchmark failed)."""
    repo = Path(repo).resolve()
    conf = _conf(repo)
    results, html = _own_dirs(repo, conf)
    checkout_branch(repo, remote, branch, results)
    sha = _git(repo, "rev-parse", "HEAD").stdout.strip()
    asv = [sys.executable, "-m", "asv"]
    _run(asv + ["machine", "--yes", "--machine", machine], repo)
    with tempfile.TemporaryDirectory() as tmp:
        cmd = asv + ["run", "--config", str(asv_config(repo, conf, results, html, Path(tmp))),
                     "-E", f"existing:{sys.executable}", "--set-commit-hash", sha, "--record-samples",
                     "--machine", machine, "--launch-method", "spawn", "--show-stderr"]
        if bench:
            cmd += ["--bench", bench]
        log(f"cuzk history: {' '.join(cmd[2:])}")
        p = subprocess.run(cmd, cwd=repo)
    if p.returncode not in (0, 2):
        raise HistoryError(f"asv run failed with exit code {p.returncode}")
    write_gpu_state(results / machine / "gpu-state" / f"{sha}.jsonl")
    _git(results, "add", "-A")
    if _git(results, "diff", "--cached", "--quiet", check=False).returncode != 0:
        _git(results, "commit", "-qm", f"results: {machine} at {sha[:10]}")
        if push:
            push_with_rebase(results, remote, branch)
    log(f"cuzk history: results of {machine} at {sha[:10]} recorded in {results}"
        + (f" (asv exit {p.returncode}: a benchmark failed)" if p.returncode else ""))
    return p.returncode


def publish(repo: Path, remote: str = "origin", results_branch: str = RESULTS_BRANCH,
            pages_branch: str = PAGES_BRANCH, commit_url: str | None = None, push: bool = True, log=print,
            assets: Path | None = None) -> Path:
    """asv publish over every runner's results; the site becomes the single commit of the pages branch."""
    repo = Path(repo).resolve()
    conf = _conf(repo)
    results, html = _own_dirs(repo, conf)
    checkout_branch(repo, remote, results_branch, results, create=False)
    if not (results / "benchmarks.json").is_file():    # asv would only say "benchmarks.json missing!"
        raise HistoryError(f"{remote}/{results_branch} holds no results (no benchmarks.json): nothing to publish")
    with tempfile.TemporaryDirectory() as tmp:
        _run([sys.executable, "-m", "asv", "publish", "--config",
              str(asv_config(repo, conf, results, html, Path(tmp), commit_url))], repo)
    (html / ".nojekyll").touch()
    if assets is not None:
        from .asv_assets import AssetError, localize
        try:
            localize(html, assets)
        except AssetError as e:
            raise HistoryError(str(e)) from e
    if push:
        with tempfile.TemporaryDirectory() as tmp:
            site = Path(tmp) / "site"
            shutil.copytree(html, site)
            _git(site, "init", "-q", "-b", pages_branch)
            _identity(site)
            _git(site, "add", "-A")
            _git(site, "commit", "-qm", "asv site")
            url = _git(repo, "remote", "get-url", remote).stdout.strip()
            _git(site, "push", "-q", "--force", url, f"HEAD:refs/heads/{pages_branch}")
    log(f"cuzk history: site of {remote}/{results_branch} in {html}"
        + (f", pushed to {pages_branch}" if push else f" (not pushed; view it: asv preview --html-dir {html})"))
    return html


def write_gpu_state(path: Path) -> None:
    """The run's GPU record (device, driver, clocks, limits, state) beside asv's results.
    Not *.json, which asv would try to read as results."""
    from ..nvml import open_device
    dev = open_device()
    rec = {"gpu": None}
    if dev is not None:
        with dev:
            rec = {"gpu": dev.info().as_dict(), "state": dev.snapshot().as_dict()}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rec) + "\n")


def commit_url_from_env() -> str | None:
    s, r = os.environ.get("GITHUB_SERVER_URL"), os.environ.get("GITHUB_REPOSITORY")
    return f"{s}/{r}/commit/" if s and r else None


# --- change points ---

def _series(results_dir: Path, machine: str | None, bench: str | None):
    """{(machine, env, benchmark(params)): [(date, commit, value)]} from asv's result files."""
    import math
    import re
    from asv.results import iter_results_for_machine
    out: dict = {}
    machines = sorted(d.name for d in Path(results_dir).iterdir() if (d / "machine.json").is_file())
    if machine is not None:
        if machine not in machines:
            raise HistoryError(f"no results for machine {machine!r} in {results_dir} (have: {', '.join(machines) or 'none'})")
        machines = [machine]
    for m in machines:
        for res in iter_results_for_machine(str(results_dir), m):
            for key in res.get_all_result_keys():
                params = res.get_result_params(key)
                values = res.get_result_value(key, params)
                combos = _combos(params)
                for combo, v in zip(combos, values):
                    name = f"{key}({', '.join(combo)})" if combo else key
                    if bench and not re.search(bench, name):
                        continue
                    if v is None or (isinstance(v, float) and math.isnan(v)):
                        continue            # failed or skipped (a GPU parameter on a CPU machine)
                    out.setdefault((m, res.env_name, name), []).append((res.date or 0, res.commit_hash, float(v)))
    return out


def _combos(params) -> list[tuple]:
    import itertools
    return [tuple(c) for c in itertools.product(*params)] if params else [()]


def changes(results_dir: Path, machine: str | None = None, bench: str | None = None, max_pvalue: float = 0.001,
            min_magnitude: float = 0.05, window: int = 30) -> list[dict]:
    """Change points of every series, largest first within a benchmark. `min_magnitude`: the smallest
    relative change kept (0.05 = 5%); `max_pvalue`: the t-test threshold of the merge step."""
    from otava.analysis import compute_change_points
    results_dir = Path(results_dir)
    if not results_dir.is_dir():
        raise HistoryError(f"no asv results at {results_dir} (run `cuzk history publish --no-push` or check out "
                           f"the {RESULTS_BRANCH} branch there)")
    found = []
    for (m, env, name), pts in sorted(_series(results_dir, machine, bench).items()):
        pts.sort(key=lambda p: p[0])
        values = [p[2] for p in pts]
        if len(values) < 4:
            continue
        cps, _ = compute_change_points(values, window_len=window, max_pvalue=max_pvalue,
                                       min_magnitude=min_magnitude)
        for cp in cps:
            i, st = cp.index, cp.stats
            i = int(i)
            found.append({"machine": m, "env": env, "benchmark": name, "index": i, "points": len(values),
                          "commit": pts[i][1], "previous_commit": pts[i - 1][1],
                          "before": float(st.mean_1), "after": float(st.mean_2),
                          "change": float(st.mean_2 / st.mean_1 - 1) if st.mean_1 else float("inf"),
                          "pvalue": float(st.pvalue)})
    return found


def changes_markdown(found: list[dict], hash_length: int = 10) -> str:
    from tabulate import tabulate

    from .report import fmt_s
    if not found:
        return "No change points.\n"
    rows = [[f"`{c['benchmark']}`", c["machine"], c["commit"][:hash_length], fmt_s(c["before"]), fmt_s(c["after"]),
             f"{c['change']:+.1%}", f"{c['pvalue']:.2g}"] for c in found]
    return tabulate(rows, headers=["benchmark", "machine", "first commit", "before", "after", "change", "p"],
                    tablefmt="github", disable_numparse=True) + "\n"
