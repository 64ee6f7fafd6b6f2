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
each change with its commit range, the level before and after, its size and the `cuzk bisect`
command that finds its commit. `gated_regressions` picks the new slowdowns in what the PR gate
guards (perf-gate.toml's workloads x phases), which fail the nightly.
"""
from __future__ import annotations

import ast
import itertools
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import bisect
from .suite import ASV_TIME_BENCHMARKS, CIRCUIT, asv_params, cost, is_timing, time_benchmark

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
    from .asv_private import project_conf
    return project_conf(repo)


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


def asv_config(repo: Path, results: Path, html: Path, dest: Path, commit_url: str | None = None) -> Path:
    """asv.conf.json with absolute paths and the history's results_dir and html_dir, written in `dest`."""
    from .asv_private import write_config
    overrides = {"show_commit_url": commit_url} if commit_url else None     # the real URL, known only in CI
    return write_config(repo, dest, results=results, html=html, overrides=overrides)[0]


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
        cmd = asv + ["run", "--config", str(asv_config(repo, results, html, Path(tmp))),
                     "-E", f"existing:{sys.executable}", "--set-commit-hash", sha, "--record-samples",
                     "--machine", machine, "--launch-method", "spawn", "--show-stderr"]
        if bench:
            cmd += ["--bench", bench]
        log(f"cuzk history: {' '.join(cmd[2:])}")
        if not bench:
            c = cost()
            log(f"cuzk history: the whole suite, {c['points']} parameter points, estimated {c['seconds'] / 60:.0f} "
                f"min (budget {c['budget_s'] / 60:.0f} min)")
        t0 = time.perf_counter()
        p = subprocess.run(cmd, cwd=repo)
        log(f"cuzk history: asv took {(time.perf_counter() - t0) / 60:.1f} min")
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
              str(asv_config(repo, results, html, Path(tmp), commit_url))], repo)
    (html / ".nojekyll").touch()
    from .opts_page import write as write_opts_page
    write_opts_page(html)
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

MIN_POINTS = 4          # e-divisive needs a few points on each side of a change
HASH_LENGTH = 10        # asv.conf.json's hash_length: the site and the table show the same hashes


def default_results(repo: Path) -> Path:
    """The history's worktree where `record` or `publish` made one here, else the user's own asv results."""
    repo = Path(repo)
    mine, _ = history_dirs(repo)
    return mine if mine.is_dir() else repo / _conf(repo).get("results_dir", "results")


def _series(results_dir: Path, machine: str | None, bench: str | None):
    """{(machine, env, benchmark, params): [(date, commit, value)]} from asv's result files; params are
    asv's repr strings, e.g. ("'cpu:8'", "'A1'")."""
    from asv.results import iter_results_for_machine
    try:
        pattern = re.compile(bench) if bench else None
    except re.error as e:
        raise HistoryError(f"bad --bench regex {bench!r}: {e}") from e
    out: dict = {}
    machines = sorted(d.name for d in Path(results_dir).iterdir() if (d / "machine.json").is_file())
    if not machines:
        raise HistoryError(f"no asv machines in {results_dir} (no */machine.json): no history to analyse")
    if machine is not None:
        if machine not in machines:
            raise HistoryError(f"no results for machine {machine!r} in {results_dir} (have: {', '.join(machines)})")
        machines = [machine]
    for m in machines:
        for res in iter_results_for_machine(str(results_dir), m):
            for key in res.get_all_result_keys():
                params = res.get_result_params(key)
                values = res.get_result_value(key, params)
                for combo, v in zip(_combos(params), values):
                    if pattern and not pattern.search(series_name(key, combo)):
                        continue
                    if v is None or (isinstance(v, float) and math.isnan(v)):
                        continue            # failed or skipped (a GPU parameter on a CPU machine)
                    out.setdefault((m, res.env_name, key, combo), []).append((res.date or 0, res.commit_hash, float(v)))
    return out


def _combos(params) -> list[tuple]:
    return [tuple(c) for c in itertools.product(*params)] if params else [()]


def series_name(benchmark: str, params: tuple) -> str:
    """asv's own name of one parameter set, what its --bench regexes match: `bench.Class.track_time('cpu:8', 'A1')`."""
    return f"{benchmark}({', '.join(params)})" if params else benchmark


def bisect_command(benchmark: str, params: tuple, good: str, bad: str) -> str:
    """The `cuzk bisect` command for one series: a phase with --target/--opts where the suite's per-phase
    timing has this parameter set, else the exact asv regex of the series' name."""
    if len(params) == 2:                      # per-phase timings: (target, opts); synthesis has three
        try:
            target, opts = (ast.literal_eval(p) for p in params)
        except (ValueError, SyntaxError):
            target = opts = None
        for phase in ASV_TIME_BENCHMARKS:
            if phase != "synthesis" and isinstance(target, str) and time_benchmark(phase, target) == benchmark:
                try:
                    bisect.bench_regex(phase, target, opts)           # what `cuzk bisect` would accept
                except bisect.BisectError:
                    break
                return bisect.cuzk_command(phase, good, bad, target, opts)
    # spaces need no escape and a quote reads better as \x27 inside the shell's single quotes
    exact = re.escape(series_name(benchmark, params)).replace("\\ ", " ").replace("'", r"\x27")
    regex = bisect.bench_regex("^" + exact + "$")
    return bisect.cuzk_command(regex, good, bad)


@dataclass
class Changes:
    source: Path            # the results directory read
    series: int             # series with at least one value
    analysed: int           # those with >= MIN_POINTS points
    longest: int            # points in the longest series
    found: list[dict]
    pairs: set = field(default_factory=set)     # (benchmark, params) of the series analysed


def commits_between(repo: Path | None, good: str, bad: str) -> int | None:
    """Commits in good..bad (bad included) on the first-parent line; None without the repository."""
    if repo is None:
        return None
    p = _git(repo, "rev-list", "--first-parent", "--count", f"{good}..{bad}", check=False)
    return int(p.stdout) if p.returncode == 0 and p.stdout.strip().isdigit() else None


def changes(results_dir: Path, machine: str | None = None, bench: str | None = None, max_pvalue: float = 0.001,
            min_magnitude: float = 0.05, window: int = 30, repo: Path | None = None) -> Changes:
    """Change points of every series. `min_magnitude`: the smallest relative change kept (0.05 = 5%);
    `max_pvalue`: the t-test threshold of the merge step. No series long enough to analyse is a
    HistoryError: no data never reads as no change."""
    from otava.analysis import compute_change_points
    results_dir = Path(results_dir)
    if not results_dir.is_dir():
        raise HistoryError(f"no asv results at {results_dir} (run `cuzk history publish --no-push`, or "
                           f"`asv run` for your own results)")
    series = _series(results_dir, machine, bench)
    longest = max((len(p) for p in series.values()), default=0)
    analysed = sum(len(p) >= MIN_POINTS for p in series.values())
    if not analysed:
        raise HistoryError(f"nothing to analyse in {results_dir}: {len(series)} series"
                           + (f" matching --bench {bench!r}" if bench else "")
                           + (f", the longest has {longest} points" if series else "")
                           + f"; change-point detection needs >= {MIN_POINTS} points")
    found, pairs = [], set()
    for (m, env, bname, params), pts in sorted(series.items()):
        pts.sort(key=lambda p: p[0])
        values = [p[2] for p in pts]
        if len(values) < MIN_POINTS:
            continue
        pairs.add((bname, params))
        cps, _ = compute_change_points(values, window_len=window, max_pvalue=max_pvalue,
                                       min_magnitude=min_magnitude)
        for cp in cps:
            i, st = int(cp.index), cp.stats
            prev, commit = pts[i - 1][1], pts[i][1]
            # adjacent points: the later commit is the change, and asv find has nothing to search
            adjacent = commits_between(repo, prev, commit) == 1
            found.append({"machine": m, "env": env, "benchmark": series_name(bname, params),
                          "asv_benchmark": bname, "params": list(params), "index": i, "points": len(values),
                          "commit": commit, "previous_commit": prev,
                          "range": f"{prev[:HASH_LENGTH]}..{commit[:HASH_LENGTH]}",
                          "bisect": None if adjacent else
                          bisect_command(bname, params, prev[:HASH_LENGTH], commit[:HASH_LENGTH]),
                          "before": float(st.mean_1), "after": float(st.mean_2),
                          "change": float(st.mean_2 / st.mean_1 - 1) if st.mean_1 else float("inf"),
                          "pvalue": float(st.pvalue)})
    return Changes(results_dir, len(series), analysed, longest, found, pairs)


def gated_pairs(cfg) -> set[tuple[str, tuple]]:
    """(asv benchmark, params) of what the PR gate guards: perf-gate.toml's workloads x their phases,
    where the suite has that parameter set."""
    out = set()
    for w in cfg.workloads:
        for area in cfg.areas_for(w):
            params = asv_params(area, w.spec)
            if area in ASV_TIME_BENCHMARKS and params is not None:
                out.add((time_benchmark(area, w.spec.target(CIRCUIT)), tuple(params)))
    return out


def gated_regressions(found: list[dict], gated: set, last: int) -> list[dict]:
    """The change points that fail the nightly: a gated series got slower (all gated benchmarks are
    timings), and the change's first commit is among the last `last` points of its series."""
    return [c for c in found if (c["asv_benchmark"], tuple(c["params"])) in gated and c["change"] > 0
            and c["index"] >= c["points"] - last]


def _level(benchmark: str, v: float) -> str:
    from .report import fmt_s
    return fmt_s(v) if is_timing(benchmark) else f"{v:.4g}"      # bytes and joules are not seconds


def changes_markdown(ch: Changes) -> str:
    from tabulate import tabulate
    head = (f"Change points over {ch.analysed} series (up to {ch.longest} points each) from {ch.source}"
            + (f"; {ch.series - ch.analysed} series with fewer than {MIN_POINTS} points skipped"
               if ch.series > ch.analysed else "") + ".\n\n")
    if not ch.found:
        return head + f"No change points in the {ch.analysed} series analysed (up to {ch.longest} points each).\n"
    rows = [[f"`{c['benchmark']}`", c["machine"], f"`{c['range']}`", _level(c["asv_benchmark"], c["before"]),
             _level(c["asv_benchmark"], c["after"]), f"{c['change']:+.1%}", f"{c['pvalue']:.2g}",
             f"`{c['bisect']}`" if c["bisect"] else f"none: `{c['commit'][:HASH_LENGTH]}` is the change"]
            for c in ch.found]
    return head + tabulate(rows, headers=["benchmark", "machine", "range", "before", "after", "change", "p",
                                          "bisect"], tablefmt="github", disable_numparse=True) + "\n"


def gated_markdown(failing: list[dict], last: int, watched: int) -> str:
    """The --fail-on-gated verdict; `watched`: the gated parameter sets that had a series to analyse."""
    if not failing:
        return (f"\nNo new regression in the {watched} gated parameter set(s) (perf-gate.toml's workloads x "
                f"phases) over the last {last} points.\n")
    lines = [f"\n**{len(failing)} new regression(s) in gated phases** (first commit among the last {last} "
             f"points of the series):\n"]
    lines += [f"- `{c['benchmark']}` on {c['machine']}: {c['change']:+.1%} in `{c['range']}`: "
              + (f"`{c['bisect']}`" if c["bisect"] else f"`{c['commit'][:HASH_LENGTH]}` is the change")
              for c in failing]
    return "\n".join(lines) + "\n"
