"""The published history: asv results from every runner on one branch, asv's site on another.

`record`, `import_results` and `publish` work in their own directory, `.asv/history` (HISTORY_DIR):
`results/` is a worktree of the history, `html/` the site. asv is pointed there through a temporary copy of
asv.conf.json, so a user's own `asv run` results and site (asv.conf.json's results_dir and
html_dir) are never touched.
The history is the local one, `refs/cuzk/<results branch>` (what record and import committed here and the
remote does not hold yet), merged with the remote's results branch where there is one (open_history);
with no remote, or none that answers, the local one alone. Nothing recorded is lost on the way: a
commit joins the local ref before anything else moves, and the worktree is never removed while it holds
files not committed or a commit no ref holds.
`record` (on each GPU runner, nightly): run the whole suite on this commit in the existing
interpreter (`asv run -E existing --set-commit-hash --record-samples`, the way that works without a
package registry), add the run's GPU record (NVML: device, driver, clocks), commit this machine's
files and push, merging other runners' pushes; or, on a runner that holds no write token,
keep the commit local (`push=False`) and `export` this run's files to a directory that travels as
an artifact. Each runner writes only under its own machine name, so runners never conflict; asv's
shared benchmarks.json is taken from the newest run.
`import_results` (a GitHub-hosted job): exported directories, read as untrusted data (regular files
of a fixed layout, every value plausible), committed per machine onto the results branch and pushed.
`publish`: `asv publish` over all machines' results, then the site replaces the pages branch
(with `assets`, its CDN scripts are served from the site itself: cuzk/perf/asv_assets.py).
Every results file is judged before asv or the change-point analysis reads it (`read_results`):
asv skips an unreadable file with one log line, which would let a verdict stand on the rest.
`changes`: change-point detection (apache-otava's e-divisive with a t-test, the Hunter algorithm)
over each benchmark's history, per machine and parameter set (phase x target x optimization):
each change with its commit range, the level before and after, its size and the `cuzk bisect`
command that finds its commit. `gated_regressions` picks the new slowdowns in what the PR gate
guards (perf-gate.toml's workloads x phases), which fail the nightly; `gated_unmeasured` the gated
series whose newest point was not measured, on which there is no verdict.
"""
from __future__ import annotations

import ast
import contextlib
import fcntl
import itertools
import json
import math
import os
import re
import shutil
import stat
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from .. import nvml
from . import bisect
from .asv_private import project_conf, write_config
from .asv_private import run as run_asv
from .changepoint import MIN_POINTS, ChangePointUnavailable, compute_change_points, where
from .noise import MACHINE_RE, MACHINE_RULE, machine_name_ok  # one rule for the history's folders and the noise records
from .opts_page import write as write_opts_page
from .report import fmt_s
from .suite import ASV_TIME_BENCHMARKS, CIRCUIT, asv_params, cost, is_timing, time_benchmark
from .values import is_int, is_number

RESULTS_BRANCH, PAGES_BRANCH = "asv-results", "gh-pages"
NOISE_DIR = "gate-noise"         # <machine>/gate-noise/<commit>.jsonl: the gate's A/A noise records (noise.py)
# records of samples that average device calls (min_device_sample_s > 0) go apart: a gate from before that setting
# reads gate-noise/ alone and would pool them with its one-call samples (their spread is smaller)
NOISE_DIR_AVERAGED = "gate-noise-2"
NOISE_DIRS = (NOISE_DIR, NOISE_DIR_AVERAGED)
RECORD_DIRS = {"gpu-state": "GPU record", NOISE_DIR: "A/A noise record", NOISE_DIR_AVERAGED: "A/A noise record"}


def noise_dir(rec: dict) -> str:
    """The folder a parsed noise record belongs in."""
    return NOISE_DIR_AVERAGED if rec.get("min_device_sample_s", 0.0) > 0 else NOISE_DIR


def noise_refs(remote: str = "origin", branch: str = RESULTS_BRANCH) -> list[str]:
    """Where the gate looks for a machine's A/A records: the local history, then the remote's branch as fetched."""
    return [local_ref(branch), f"refs/remotes/{remote}/{branch}"]
HISTORY_DIR = Path(".asv") / "history"     # ignored by git, like the rest of .asv


class HistoryError(RuntimeError):
    pass


def _last_line(text: str) -> str:
    """The line that says what failed: a tool's last fatal/error line (git ends with advice after it, e.g.
    "remove the file manually to continue." after the fatal line naming index.lock), else its last line."""
    lines = [x.strip() for x in text.strip().splitlines() if x.strip()]
    errs = [x for x in lines if x.lower().startswith(("fatal:", "error:"))]
    return f" ({(errs or lines)[-1][:200]})" if lines else ""


def _keep_log(cmd, text: str) -> str:
    """A failed tool's whole output, kept in a log file: the error stays one line and names it."""
    try:
        fd, path = tempfile.mkstemp(prefix="cuzk-history-", suffix=".log")
        with os.fdopen(fd, "w") as f:
            f.write(" ".join(map(str, cmd)) + "\n\n" + text)
        return f"its output: {path}"
    except OSError:
        return "its output could not be kept"


def _run(cmd, cwd, check=True, env=None) -> subprocess.CompletedProcess:
    # a remote that needs credentials fails at once instead of waiting on a terminal prompt
    env = dict(os.environ if env is None else env, GIT_TERMINAL_PROMPT="0")
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env)
    if check and p.returncode != 0:
        raise HistoryError(f"{' '.join(map(str, cmd[:4]))}{' ...' if len(cmd) > 4 else ''}: exit {p.returncode}"
                           f"{_last_line(p.stdout + p.stderr)}; {_keep_log(cmd, p.stdout + p.stderr)}")
    return p


def _git(cwd, *args, check=True) -> subprocess.CompletedProcess:
    return _run(["git", *args], cwd, check)


def _conf(repo: Path) -> dict:
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
    overrides = {"show_commit_url": commit_url} if commit_url else None     # the real URL, known only in CI
    return write_config(repo, dest, results=results, html=html, overrides=overrides)[0]


def _identity(cwd) -> None:
    """Commits need an author; CI runners often have none configured."""
    if _git(cwd, "config", "user.email", check=False).returncode != 0:
        _git(cwd, "config", "user.email", "cuzk-history@users.noreply.github.com")
        _git(cwd, "config", "user.name", "cuzk history")


LOCAL_REFS = "refs/cuzk"        # the local history: a ref of its own, no branch of the user's, not pushed by default


def local_ref(branch: str) -> str:
    """What record and import committed here and no remote holds yet; publish reads it, merged with the remote's."""
    return f"{LOCAL_REFS}/{branch}"


def _commit_of(cwd, ref: str) -> str | None:
    p = _git(cwd, "rev-parse", "--verify", "-q", f"{ref}^{{commit}}", check=False)
    return p.stdout.strip() if p.returncode == 0 else None


def _head(path: Path) -> str:
    return _git(path, "rev-parse", "HEAD").stdout.strip()


def _is_ancestor(cwd, a: str, b: str) -> bool:
    return _git(cwd, "merge-base", "--is-ancestor", a, b, check=False).returncode == 0


def _why(text: str) -> str:
    """git's reason: its first error line, not the advice after it."""
    lines = [x.strip() for x in text.splitlines() if x.strip()]
    pick = next((x for x in lines if x.startswith(("fatal:", "error:", "!"))), lines[0] if lines else "")
    return pick[:200]


@contextlib.contextmanager
def _locked(repo: Path):
    """One history command at a time in a checkout: they share the results worktree."""
    base = Path(repo) / HISTORY_DIR
    base.mkdir(parents=True, exist_ok=True)
    path = base / "lock"
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), 0o644)
    except OSError as e:
        raise HistoryError(f"{path}: cannot open the history's lock: {e.strerror or e}") from e
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode(errors="replace").strip() or "unknown"
            raise HistoryError(f"another cuzk history command ({holder}) is working in {base}: "
                               f"wait for it to finish") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()}: {' '.join(sys.argv[1:3]) or 'cuzk'}\n".encode(), 0)
        yield
    finally:
        os.close(fd)


def _worktree(repo: Path, path: Path) -> tuple[str | None, bool]:
    """(the commit git's worktree at `path` holds, whether its directory is there to use). An empty or
    missing directory has nothing to keep. A HistoryError, before anything moves, where the directory
    holds files not committed or is not this repository's worktree: its files are never removed."""
    real = os.path.realpath(path)
    head, listed = None, False
    for block in _git(repo, "worktree", "list", "--porcelain").stdout.split("\n\n"):
        fields = dict(line.partition(" ")[::2] for line in block.splitlines())
        if fields.get("worktree") and os.path.realpath(fields["worktree"]) == real:
            listed, head = True, fields.get("HEAD") or None
    if not os.path.lexists(path):
        return head, False          # removed by hand or by a CI checkout's clean: its commit may still need keeping
    if path.is_symlink() or not path.is_dir():
        raise HistoryError(f"{path}: not a directory, where the history's worktree belongs: move it away")
    if not any(path.iterdir()):
        return head, False
    if not listed:
        raise HistoryError(f"{path} is not a git worktree of {repo} (its files are kept): move it away")
    top = _git(path, "rev-parse", "--show-toplevel", check=False)
    if top.returncode != 0 or os.path.realpath(top.stdout.strip()) != real:
        raise HistoryError(f"{path}: a broken git worktree ({_why(top.stderr) or 'not its own top level'}; "
                           f"its files are kept): move it away")
    dirty = _git(path, "status", "--porcelain", "--untracked-files=all", "--ignored").stdout.splitlines()
    if dirty:
        raise HistoryError(f"{path} holds {len(dirty)} file(s) not committed, e.g. {dirty[0][3:]!r} (a record that "
                           f"did not finish?); keep them: git -C {path} add -A && git -C {path} commit -m kept; "
                           f"or drop them: git -C {path} reset -q --hard && git -C {path} clean -fdxq")
    return head, True


def _absorb(path: Path, commit: str, what: str) -> None:
    """The worktree's commit becomes one that holds `commit` too: itself, `commit`, or a merge of both. A file
    both sides changed keeps the newer commit's copy (benchmarks.json: the newest run's, as asv takes it);
    each runner writes only its own machine's directory. A merge that still conflicts changes nothing."""
    head = _head(path)
    if _is_ancestor(path, commit, head):
        return
    if _is_ancestor(path, head, commit):
        _git(path, "checkout", "-q", "--detach", commit)
        return
    when = [int(_git(path, "log", "-1", "--format=%ct", c).stdout) for c in (head, commit)]
    p = _git(path, "merge", "-q", "--no-edit", "--no-verify", "--allow-unrelated-histories",
             "-X", "ours" if when[0] >= when[1] else "theirs", "-m", f"merge {what}", commit, check=False)
    if p.returncode != 0:
        _git(path, "merge", "--abort", check=False)
        raise HistoryError(f"cannot merge {what} ({commit[:10]}) into the history in {path}: "
                           f"{_why(p.stdout + p.stderr)}; nothing was changed")


REF_LOCK = "cuzk-history.lock"     # in git's common dir: every checkout of one repository shares local_ref
REF_LOCK_WAIT_S = 120.0             # what a ref update by another checkout takes, at most: a merge and update-ref


@contextlib.contextmanager
def _ref_lock(repo: Path):
    """The local history's ref is one for all linked worktrees (git worktree) of a repository, while each checkout
    has its own results worktree and _locked: its read, merge and update take turns across them here."""
    common = Path(repo) / _git(repo, "rev-parse", "--git-common-dir").stdout.strip()
    path = common.resolve() / REF_LOCK
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), 0o644)
    except OSError as e:
        raise HistoryError(f"{path}: cannot open the history's lock: {e.strerror or e}") from e
    try:
        deadline = time.monotonic() + REF_LOCK_WAIT_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    holder = os.pread(fd, 200, 0).decode(errors="replace").strip() or "unknown"
                    raise HistoryError(f"another cuzk history command ({holder}) held {path} for over "
                                       f"{REF_LOCK_WAIT_S:g} s: the local history was not changed") from None
                time.sleep(0.2)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()}: {' '.join(sys.argv[1:3]) or 'cuzk'}\n".encode(), 0)
        yield
    finally:
        os.close(fd)


def _keep(repo: Path, branch: str, path: Path, theirs: str | None, tries: int = 5) -> None:
    """The worktree's commit becomes the local history before anything else moves. Where the remote's branch
    holds all of it the local ref goes: the remote keeps it, and what the remote dropped on purpose does
    not come back from here. The ref is shared by every checkout of the repository: what another one kept
    there meanwhile is merged into the worktree first, and the ref moves only from the value read (a
    compare-and-swap), so no commit of another's drops out of it. Returns only once the ref (or the remote's
    branch) holds the worktree's commit."""
    ref = local_ref(branch)
    for _ in range(tries):
        with _ref_lock(repo):
            cur = _commit_of(repo, ref)
            if cur is not None and not _is_ancestor(repo, cur, _head(path)):
                _absorb(path, cur, ref)
            head = _head(path)
            if theirs is not None and _is_ancestor(repo, head, theirs):
                if cur is None:
                    return
                p = _git(repo, "update-ref", "-m", "cuzk history", "-d", ref, cur, check=False)
            else:
                if cur == head:
                    return
                p = _git(repo, "update-ref", "-m", "cuzk history", ref, head, cur or "", check=False)
            if p.returncode == 0:
                return
    raise HistoryError(f"{ref} kept moving under this command ({_why(p.stderr)}): its commit {head[:10]} stays in "
                       f"{path}, and the next history command here keeps it")


def _fetch(repo: Path, remote: str, branch: str, need: bool, log) -> str | None:
    """The remote's `branch`, fetched into refs/remotes/REMOTE/BRANCH: its commit, or None where it has none.
    A remote that is not configured or does not answer is a HistoryError where it is needed (a push
    follows); else said in one line, and its branch as last fetched is used."""
    tracking = f"refs/remotes/{remote}/{branch}"
    if _git(repo, "remote", "get-url", remote, check=False).returncode != 0:
        if need:
            raise HistoryError(f"no remote {remote!r} in {repo} (--remote NAME; --no-push keeps the history local)")
        log(f"cuzk history: no remote {remote!r}: the local history only ({local_ref(branch)})")
        return None
    ls = _git(repo, "ls-remote", "--exit-code", "--heads", remote, branch, check=False)
    if ls.returncode == 2:              # the remote answered and has no such branch
        return None
    if ls.returncode != 0:
        why = _why(ls.stderr) or f"git ls-remote exit {ls.returncode}"
        if need:
            raise HistoryError(f"cannot read {remote}'s {branch} branch: {why} (--no-push works without it)")
        last = _commit_of(repo, tracking)
        log(f"cuzk history: cannot read {remote} ({why}); "
            + (f"its {branch} as last fetched ({last[:10]}) and the local history" if last
               else f"the local history only ({local_ref(branch)})"))
        return last
    _git(repo, "fetch", "-q", remote, f"+refs/heads/{branch}:{tracking}")
    return _commit_of(repo, tracking)


def open_history(repo: Path, remote: str, branch: str, path: Path, create: bool = True, need_remote: bool = False,
                 log=print) -> str | None:
    """Point the results worktree `path` at the history: the local one (local_ref) merged with `remote`'s
    `branch`, kept in local_ref until the remote holds it all. Returns the remote's commit (None: none known).
    Nothing is removed first: a worktree holding files not committed is an error, and a commit that only the
    worktree holds (a former version's local record) joins the local history. `create`: with no history
    anywhere, a new root commit; else a HistoryError. `need_remote`: see _fetch."""
    with _ref_lock(repo):           # the config is shared by every checkout, and git refuses a second writer
        _identity(repo)
    ref = local_ref(branch)
    own, usable = _worktree(repo, path)
    if own and not _git(repo, "for-each-ref", "--count=1", "--contains", own).stdout.strip():
        if not usable:
            _place(repo, path, own, usable)
            usable = True
        _keep(repo, branch, path, None)         # merged with what the ref holds, never over it
    theirs = _fetch(repo, remote, branch, need_remote, log)
    start = _commit_of(repo, ref) or theirs
    if start is None:
        if not create:
            raise HistoryError(f"no results yet: {remote} has no {branch} branch and there is no local history "
                               f"({ref}); `cuzk history record` makes it")
        empty = _git(repo, "hash-object", "-t", "tree", "-w", "/dev/null").stdout.strip()
        start = _git(repo, "commit-tree", empty, "-m", f"{branch}: asv results of every runner").stdout.strip()
        log(f"cuzk history: the results go on a new root commit of {branch}, kept in {ref}")
    _place(repo, path, start, usable)
    if theirs is not None:
        _absorb(path, theirs, f"{remote}/{branch}")
    _keep(repo, branch, path, theirs)
    return theirs


def _place(repo: Path, path: Path, commit: str, usable: bool) -> None:
    """The worktree at `path` holds `commit`, detached: checked out where it is `usable` (clean: _worktree),
    else made afresh where there is none or an empty directory."""
    if usable:
        _git(path, "checkout", "-q", "--detach", commit)
        return
    if path.is_dir():
        path.rmdir()                # empty: _worktree said so
    _git(repo, "worktree", "prune")
    # -f -f: a worktree whose `git worktree add` was killed stays locked ("initializing") and would refuse every
    # later add; its folder is missing or empty (_worktree) and its commit kept, and _locked rules out a live add
    _git(repo, "worktree", "add", "-q", "-f", "-f", "--detach", str(path), commit)


def push_merging(path: Path, remote: str, branch: str, tries: int = 5) -> str:
    """Push the worktree's commit to the remote's branch; where another runner pushed meanwhile, merge theirs
    (_absorb) and try again. Returns the commit pushed."""
    tracking = f"refs/remotes/{remote}/{branch}"
    for _ in range(tries):
        p = _git(path, "push", "-q", remote, f"HEAD:refs/heads/{branch}", check=False)
        if p.returncode == 0:
            head = _head(path)
            _git(path, "update-ref", tracking, head)
            return head
        if "(fetch first)" not in p.stderr and "(non-fast-forward)" not in p.stderr:
            raise HistoryError(f"cannot push {branch} to {remote}: {_why(p.stderr) or f'exit {p.returncode}'}")
        _git(path, "fetch", "-q", remote, f"+refs/heads/{branch}:{tracking}")
        _absorb(path, tracking, f"{remote}/{branch}")
    raise HistoryError(f"could not push {branch} to {remote} after {tries} tries: others kept pushing")


def record(repo: Path, machine: str, remote: str = "origin", branch: str = RESULTS_BRANCH,
           bench: str | None = None, push: bool = True, log=print, export: Path | None = None,
           gate_noise: Path | None = None) -> int:
    """Run the suite on HEAD into this machine's history; returns asv's exit code (2: a benchmark failed).
    The commit joins the local history (local_ref) before it is pushed, so a failed push loses nothing.
    `export`: also copy this run's files there (the layout `read_export` takes), for `import_results`.
    `gate_noise`: an A/A noise record of this machine at HEAD (noise.py), kept beside the results."""
    repo = Path(repo).resolve()
    check_machine_name(machine)
    if export is not None:
        export = _export_target(Path(export), repo)   # before the suite's hours, not after
    noise_bytes = noise_folder = None
    if gate_noise is not None:                        # judged before the suite runs, too
        from .noise import NoiseError, parse_record
        noise_bytes = read_regular(Path(gate_noise))
        head = _git(repo, "rev-parse", "HEAD").stdout.strip()
        try:
            rec = parse_record(noise_bytes, str(gate_noise), machine)
        except NoiseError as e:
            raise HistoryError(str(e)) from e
        if rec["commit"] != head:
            raise HistoryError(f"{gate_noise}: the A/A record of {rec['commit'][:10]}, not of HEAD ({head[:10]})")
        noise_folder = noise_dir(rec)
    conf = _conf(repo)
    results, html = _own_dirs(repo, conf)
    with _locked(repo):
        theirs = open_history(repo, remote, branch, results, need_remote=push, log=log)
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
                log(f"cuzk history: the whole suite, {c['points']} parameter points, estimated "
                    f"{c['seconds'] / 60:.0f} min (budget {c['budget_s'] / 60:.0f} min)")
            t0 = time.perf_counter()
            try:
                p = run_asv(cmd, cwd=repo)
                log(f"cuzk history: asv took {(time.perf_counter() - t0) / 60:.1f} min")
                if p.returncode not in (0, 2):
                    raise HistoryError(f"asv run failed with exit code {p.returncode}")
                write_gpu_state(results, f"{machine}/gpu-state/{sha}.jsonl")
                if noise_bytes is not None:
                    _write_under(results, f"{machine}/{noise_folder}/{sha}.jsonl", noise_bytes)
                mine = run_files(results, machine, sha)         # judged before anything is committed or exported
            except BaseException:
                _drop_unmeasured(results, machine)
                raise
        _git(results, "add", "-A", "-f")
        if _git(results, "diff", "--cached", "--quiet", check=False).returncode != 0:
            _git(results, "commit", "-q", "--no-verify", "-m", f"results: {machine} at {sha[:10]}")
        _keep(repo, branch, results, theirs)
        if push:
            _push_kept(repo, results, remote, branch)
    if export is not None:
        write_export(export, mine)
        log(f"cuzk history: {len(mine)} files of {machine} at {sha[:10]} exported to {export}")
    log(f"cuzk history: results of {machine} at {sha[:10]} recorded in {results}"
        + ("" if push else f" (not pushed: kept in {local_ref(branch)})")
        + (f" (asv exit {p.returncode}: a benchmark failed)" if p.returncode else ""))
    return p.returncode


def _drop_unmeasured(results: Path, machine: str) -> None:
    """After a record that failed: where it measured nothing (no results file of the machine's is new or
    changed), what it wrote (asv's benchmarks.json, machine.json) goes, so the next record can start;
    measurements stay, and the next command says how to keep or drop them (_worktree)."""
    changed = _git(results, "status", "--porcelain", "--untracked-files=all", "--ignored", "--", machine,
                   check=False).stdout.splitlines()
    if not any(line[3:].endswith(".json") and not line[3:].endswith("/machine.json") for line in changed):
        _git(results, "reset", "-q", "--hard", check=False)
        _git(results, "clean", "-fdxq", check=False)


def _push_kept(repo: Path, results: Path, remote: str, branch: str) -> None:
    try:
        pushed = push_merging(results, remote, branch)
    except HistoryError as e:
        raise HistoryError(f"{e}; the results are kept in {local_ref(branch)}") from e
    _keep(repo, branch, results, pushed)


def publish(repo: Path, remote: str = "origin", results_branch: str = RESULTS_BRANCH,
            pages_branch: str = PAGES_BRANCH, commit_url: str | None = None, push: bool = True, log=print,
            assets: Path | None = None) -> Path:
    """asv publish over every runner's results; the site becomes the single commit of the pages branch.
    The history read is the local one merged with the remote's (open_history); a site that is pushed shows
    only what the remote's results branch holds, so local results not pushed yet are refused there."""
    repo = Path(repo).resolve()
    if assets is not None:              # an input: judged before asv publish replaces the site there was
        from .asv_assets import missing
        gone = missing(assets)
        if gone:
            raise HistoryError(f"asset files missing under {assets}: {', '.join(gone)} (npm ci in .ci/node)")
    conf = _conf(repo)
    results, html = _own_dirs(repo, conf)
    with _locked(repo):
        theirs = open_history(repo, remote, results_branch, results, create=False, need_remote=push, log=log)
        head, ref = _head(results), local_ref(results_branch)
        if push and (theirs is None or not _is_ancestor(repo, head, theirs)):
            raise HistoryError(f"the local history ({ref}) holds results that {remote}'s {results_branch} lacks: "
                               f"view them with --no-push, or push them first: "
                               f"git push {remote} {ref}:refs/heads/{results_branch}")
        if not (results / "benchmarks.json").is_file():    # asv would only say "benchmarks.json missing!"
            raise HistoryError(f"the history at {head[:10]} holds no results (no benchmarks.json): nothing to publish")
        read_results(results)           # asv publish would skip a bad file with one log line and publish the rest
        with tempfile.TemporaryDirectory() as tmp:
            _run([sys.executable, "-m", "asv", "publish", "--config",
                  str(asv_config(repo, results, html, Path(tmp), commit_url))], repo)
        (html / ".nojekyll").touch()
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
    where = (f"{remote}/{results_branch}" if theirs is not None and _is_ancestor(repo, head, theirs)
             else f"{ref}" + (f" merged with {remote}/{results_branch}" if theirs is not None else ""))
    log(f"cuzk history: site of {where} at {head[:10]} in {html}"
        + (f", pushed to {pages_branch}" if push else f" (not pushed; view it: asv preview --html-dir {html})"))
    return html


def write_gpu_state(results: Path, rel: str) -> Path:
    """The run's GPU record (device, driver, clocks, limits, state) beside asv's results, at results/rel, never
    through a link the results branch holds (_write_under). Not *.json, which asv would try to read as results."""
    dev = nvml.open_device()
    rec = {"gpu": None}
    if dev is not None:
        with dev:
            rec = {"gpu": dev.info().as_dict(), "state": dev.snapshot().as_dict()}
    return _write_under(results, rel, (json.dumps(rec) + "\n").encode())


def commit_url_from_env() -> str | None:
    s, r = os.environ.get("GITHUB_SERVER_URL"), os.environ.get("GITHUB_REPOSITORY")
    return f"{s}/{r}/commit/" if s and r else None


# --- results files, judged before anything reads them ---

FILE_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+=-]{0,199}")      # asv's <hash>-<environment>.json and the like
HASH_RE = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")
BENCH_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_.]{0,199}")         # asv's module.Class.method
# asv's repr of a parameter value, e.g. 'cuda:porep_partition:24' quoted: `changes` prints it in code spans and
# table cells, where a backtick, a '|' or a line break would end them
PARAM_RE = re.compile(r"[A-Za-z0-9_.,:+'\"/=()\[\] -]{1,200}")
MAX_FILE_BYTES = 64 << 20
MAX_IMPORT_FILES, MAX_IMPORT_BYTES = 10_000, 512 << 20
MAX_SECONDS = 1e6           # ~11 days for one call: a broken clock or a poisoned file, not a measurement
MAX_OTHER = 1e18            # bytes, joules, ratios
MAX_PARAM_SETS = 100_000    # of one benchmark in a results file; the suite's most is a few hundred
RESULTS_API, BENCHMARKS_API, MACHINE_API = 2, 2, 1       # asv 0.6's file format versions
_KINDS = ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
          (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


def check_machine_name(machine: str, where: str = "machine name") -> None:
    if not machine_name_ok(machine):
        raise HistoryError(f"{where} {machine!r}: use {MACHINE_RULE}"
                           + (" (asv reads a *.json there as a results file)" if str(machine).endswith(".json") else ""))


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def read_regular(path: Path, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of a regular file. lstat judges it before any open: a symlink is never followed and a
    FIFO never opened (the open would wait for a writer)."""
    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode):
            raise HistoryError(f"{path}: {_kind(st.st_mode)}, not a regular file")
        if st.st_size > limit:
            raise HistoryError(f"{path}: {st.st_size} bytes, over the {limit >> 20} MiB limit")
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
        with open(fd, "rb") as f:
            now = os.fstat(fd)
            if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino) or not stat.S_ISREG(now.st_mode):
                raise HistoryError(f"{path}: replaced while being read")
            data = f.read(limit + 1)
    except OSError as e:
        raise HistoryError(f"{path}: cannot read it: {e.strerror or e}") from e
    if len(data) > limit:
        raise HistoryError(f"{path}: over the {limit >> 20} MiB limit")
    return data


def parse_json(path: Path, data: bytes):
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise HistoryError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from e
    except (ValueError, RecursionError) as e:
        raise HistoryError(f"{path}: not valid JSON ({str(e).splitlines()[0] if str(e) else type(e).__name__})") from e


def _listing(d: Path) -> list[tuple[Path, os.stat_result]]:
    """A directory's entries with their own lstat: nothing followed."""
    try:
        with os.scandir(d) as it:
            entries = sorted(it, key=lambda e: e.name)
        return [(Path(e.path), e.stat(follow_symlinks=False)) for e in entries]
    except OSError as e:
        raise HistoryError(f"{d}: cannot list it: {e.strerror or e}") from e


def _jtype(v) -> str:
    if v is None:
        return "null"
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}.get(type(v), "a number")


@dataclass
class ResultFile:
    path: Path
    machine: str
    env: str
    commit: str
    date: int
    values: dict        # {benchmark: {params: a float; None (asv: failed) or NaN (asv: skipped)}}


def _plausible(path, series: str, what: str, v, timing: bool) -> float:
    """A measured value: a timing finite, > 0 and <= MAX_SECONDS; bytes, joules and ratios finite, >= 0 and
    <= MAX_OTHER. Anything else is a poisoned or broken file, never a point of a series."""
    if not (is_number(v) and (0 < v <= MAX_SECONDS if timing else 0 <= v <= MAX_OTHER)):
        rule = (f"a time in seconds is finite, > 0 and <= {MAX_SECONDS:g}" if timing
                else f"a value is finite, >= 0 and <= {MAX_OTHER:g}")
        raise HistoryError(f"{path}: {series}: {what} {json.dumps(v, allow_nan=True)[:40]} is not a measurement "
                           f"({rule})")
    return float(v)


def check_results_file(path: Path, d, machine: str, units: dict) -> ResultFile:
    """One asv results file (format 2) judged as asv and the change points would read it: `units` (from
    benchmarks.json) tells timings from other values; without one, the benchmark's name does."""
    def bad(msg):
        return HistoryError(f"{path}: {msg}")
    if not isinstance(d, dict):
        raise bad(f"not an asv results file ({_jtype(d)}, not an object)")
    if d.get("version") != RESULTS_API:
        raise bad(f"asv results format {d.get('version')!r}, not {RESULTS_API}")
    for k, t in (("commit_hash", str), ("env_name", str), ("python", str), ("params", dict), ("requirements", dict),
                 ("result_columns", list), ("results", dict)):
        if not isinstance(d.get(k), t):
            raise bad(f"{k!r} is {'missing' if k not in d else _jtype(d[k])}, not {_jtype(t())}")
    for k in ("env_vars", "durations"):
        if not isinstance(d.get(k, {}), dict):
            raise bad(f"{k!r} is {_jtype(d[k])}, not an object")
    if not HASH_RE.fullmatch(d["commit_hash"]):
        raise bad(f"commit_hash {d['commit_hash'][:80]!r} is not a full git commit hash")
    date = d.get("date")
    if not (is_int(date) and date >= 0):
        raise bad(f"date {json.dumps(date)[:40]} is not a timestamp (milliseconds since 1970)")
    if d["params"].get("machine") != machine:
        raise bad(f"its machine {d['params'].get('machine')!r} is not {machine!r}, its directory's")
    for k in ("params", "env_vars"):        # asv publish gathers their values in sets: an array or object kills it
        v = next((v for v in d.get(k, {}).values() if isinstance(v, (list, dict))), None)
        if v is not None:
            raise bad(f"{k}: {json.dumps(v)[:40]} is {_jtype(v)}, not a string")
    _no_markup(path, "params", d["params"])
    _no_markup(path, "env_vars", d.get("env_vars", {}))     # asv's graph page heads a selector with each name
    cols = d["result_columns"]
    if not all(isinstance(c, str) for c in cols) or "result" not in cols or "params" not in cols:
        raise bad("result_columns does not name asv's result and params columns")
    ir, ip = cols.index("result"), cols.index("params")
    isam = cols.index("samples") if "samples" in cols else None
    values = {}
    for name, row in d["results"].items():
        if not BENCH_RE.fullmatch(name):            # `changes` prints it in code spans, like its parameter values
            raise bad(f"{name[:80]!r} is not a benchmark name (letters, digits, '_', '.')")
        if not isinstance(row, list) or len(row) > len(cols):
            raise bad(f"{name}: not a row of at most {len(cols)} columns")
        row = row + [None] * (len(cols) - len(row))         # asv drops trailing nulls
        params = row[ip] if row[ip] is not None else []
        if not (isinstance(params, list) and all(isinstance(p, list) and all(isinstance(x, str) for x in p)
                                                 for p in params)):
            raise bad(f"{name}: params is not a list of lists of strings")
        odd = next((x for p in params for x in p if not PARAM_RE.fullmatch(x)), None)
        if odd is not None:
            raise bad(f"{name}: parameter value {odd[:40]!r} is not asv's repr of a value (letters, digits, spaces "
                      f"and _.,:+'\"/=()[]-)")
        # counted before they are listed, and no further than the cap: 40 two-valued lists in a 1 KB file
        # are 2^40 parameter sets
        n = 1
        for p in params:
            n *= len(p)
            if n > MAX_PARAM_SETS:
                raise bad(f"{name}: more than {MAX_PARAM_SETS} parameter sets (the product of its params' "
                          f"lengths)")
        result = row[ir] if row[ir] is not None else [None] * n     # null: all failed
        if not isinstance(result, list) or len(result) != n:
            raise bad(f"{name}: {len(result) if isinstance(result, list) else _jtype(result)} results for "
                      f"{n} parameter sets")
        combos = _combos(params)
        timing = units[name] == "seconds" if isinstance(units.get(name), str) else is_timing(name)
        vals = {}
        for combo, v in zip(combos, result):
            if v is None or (isinstance(v, float) and math.isnan(v)):
                vals[combo] = v                  # asv: null failed, NaN skipped (or not selected)
            else:
                vals[combo] = _plausible(path, series_name(name, combo), "result", v, timing)
        samples = row[isam] if isam is not None else None
        if samples is not None:
            if not isinstance(samples, list) or len(samples) != len(combos):
                raise bad(f"{name}: samples is not a list per parameter set")
            for combo, ss in zip(combos, samples):
                if ss is not None and not isinstance(ss, list):
                    raise bad(f"{series_name(name, combo)}: samples is {_jtype(ss)}, not an array")
                for x in ss or ():
                    _plausible(path, series_name(name, combo), "sample", x, timing)
        values[name] = vals
    return ResultFile(Path(path), machine, d["env_name"], d["commit_hash"], date, values)


def _no_markup(path, what: str, v) -> None:
    """asv's pages put benchmark and machine strings into HTML as they are (tooltips, headings): none may hold
    '<', '>' or '&', keys included, or a results branch would publish script to the site."""
    if isinstance(v, dict):
        for k, x in v.items():
            _no_markup(path, what, k)
            _no_markup(path, f"{what}.{k}", x)
    elif isinstance(v, list):
        for x in v:
            _no_markup(path, what, x)
    elif isinstance(v, str) and re.search(r"[<>&]", v):
        raise HistoryError(f"{path}: {what}: {v[:40]!r} holds '<', '>' or '&', which asv's pages render as markup")


def check_machine_file(path: Path, d, machine: str) -> None:
    if not isinstance(d, dict):
        raise HistoryError(f"{path}: not asv's machine.json ({_jtype(d)}, not an object)")
    _no_markup(path, "machine.json", d)
    if d.get("machine") != machine:
        raise HistoryError(f"{path}: machine {d.get('machine')!r} is not {machine!r}, its directory")
    if d.get("version", MACHINE_API) != MACHINE_API:
        raise HistoryError(f"{path}: asv machine format {d.get('version')!r}, not {MACHINE_API}")


def check_benchmarks_file(path: Path, d) -> dict:
    """asv's benchmarks.json; returns {benchmark: unit}."""
    if not isinstance(d, dict):
        raise HistoryError(f"{path}: not asv's benchmarks.json ({_jtype(d)}, not an object)")
    if d.get("version") != BENCHMARKS_API:
        raise HistoryError(f"{path}: asv benchmarks format {d.get('version')!r}, not {BENCHMARKS_API}")
    units = {}
    for name, b in d.items():
        if name == "version":
            continue
        if not isinstance(b, dict):
            raise HistoryError(f"{path}: {name}: {_jtype(b)}, not an object")
        if not BENCH_RE.fullmatch(name) or b.get("name", name) != name:     # pages put it in an href="#..."
            raise HistoryError(f"{path}: {name[:80]!r} is not a benchmark name (letters, digits, '_', '.')")
        _no_markup(path, name, b)
        if isinstance(b.get("unit"), str):
            units[name] = b["unit"]
    return units


@dataclass
class ResultsSet:
    root: Path
    machines: list[str]         # every machine directory (one with a machine.json)
    files: list[ResultFile]     # of the machines read
    units: dict


def read_results(results_dir: Path, machine: str | None = None) -> ResultsSet:
    """Every file asv would read in a results directory (benchmarks.json, each machine's machine.json and
    results), judged; `machine`: only its directory is read. Anything asv would skip with a log line, or
    that holds an implausible value, is a HistoryError naming the file. Only directories and regular files
    (and the worktree's .git) may be there; other files than *.json are not read."""
    root = Path(results_dir)
    units, dirs = {}, []
    for p, st in _listing(root):
        if p.name == ".git":
            continue                        # the results worktree's link to its repository
        if stat.S_ISDIR(st.st_mode) and p.name.endswith(".json"):
            raise HistoryError(f"{p}: a directory, where asv expects a file")
        if stat.S_ISDIR(st.st_mode):
            dirs.append(p)
        elif not stat.S_ISREG(st.st_mode):
            raise HistoryError(f"{p}: {_kind(st.st_mode)}, not a regular file or directory")
        elif p.name == "benchmarks.json":
            units = check_benchmarks_file(p, parse_json(p, read_regular(p)))
        elif p.name.endswith(".json"):
            raise HistoryError(f"{p}: a .json file outside a machine's directory (asv would skip it)")
    machines = [d.name for d in dirs if any(q.name == "machine.json" for q, _ in _listing(d))]
    files = []
    for d in dirs:
        if machine is not None and d.name != machine:
            continue
        if d.name not in machines:
            stray = next(iter(_json_files(d)), None)
            if stray is not None:
                raise HistoryError(f"{stray}: no machine.json in {d} (asv would skip it)")
            continue
        check_machine_name(d.name, f"{d}: machine")     # printed by `changes` in its tables, as record's are
        mpath = d / "machine.json"
        check_machine_file(mpath, parse_json(mpath, read_regular(mpath)), d.name)
        for p, st in _listing(d):
            if stat.S_ISDIR(st.st_mode) and p.name.endswith(".json"):
                raise HistoryError(f"{p}: a directory, where asv expects a file")
            if stat.S_ISDIR(st.st_mode):
                stray = next(iter(_json_files(p)), None)
                if stray is not None:
                    raise HistoryError(f"{stray}: a .json file below a machine's directory (asv would skip it)")
            elif not stat.S_ISREG(st.st_mode):
                raise HistoryError(f"{p}: {_kind(st.st_mode)}, not a regular file or directory")
            elif p.name.endswith(".json") and p.name != "machine.json":
                files.append(check_results_file(p, parse_json(p, read_regular(p)), d.name, units))
    return ResultsSet(root, sorted(machines), files, units)


def _json_files(d: Path):
    """The *.json files under d (and any entry that is neither a directory nor a regular file, as an error)."""
    for p, st in _listing(d):
        if stat.S_ISDIR(st.st_mode):
            yield from _json_files(p)
        elif not stat.S_ISREG(st.st_mode):
            raise HistoryError(f"{p}: {_kind(st.st_mode)}, not a regular file or directory")
        elif p.name.endswith(".json"):
            yield p


# --- export and import: results that leave a runner with no write token, as an artifact ---

def _export_target(dest: Path, repo: Path) -> Path:
    """--export's directory: absent or empty, so an artifact holds this run's files alone, and outside the repo's
    .asv (the history's worktree there would hold files no commit of it has, and the next record refuse)."""
    dest = Path(os.path.abspath(dest))
    inside = Path(repo).resolve() / ".asv"
    if Path(os.path.realpath(dest)).is_relative_to(inside):
        raise HistoryError(f"--export {dest}: inside {inside}, where asv's results and the history's worktree live")
    try:
        st = os.lstat(dest)
    except FileNotFoundError:
        return dest
    except OSError as e:
        raise HistoryError(f"--export {dest}: {e.strerror or e}") from e
    if stat.S_ISDIR(st.st_mode):
        with os.scandir(dest) as it:
            if next(it, None) is None:
                return dest
    raise HistoryError(f"--export {dest}: exists and is not an empty directory")


def run_files(results: Path, machine: str, sha: str) -> dict[str, bytes]:
    """This run's files in the results worktree, judged as `read_export` will judge them: {path under the
    export: bytes}: benchmarks.json, <machine>/machine.json, the results of `sha` and its GPU record."""
    files = {rel: read_regular(results / rel) for rel in ("benchmarks.json", f"{machine}/machine.json")}
    for p in sorted((results / machine).glob(f"{sha[:8]}-*.json")):
        data = read_regular(p)
        d = parse_json(p, data)
        if isinstance(d, dict) and d.get("commit_hash") == sha:      # not another commit of the same prefix
            files[f"{machine}/{p.name}"] = data
    if len(files) == 2:
        raise HistoryError(f"asv wrote no results of {machine} at {sha[:10]} in {results / machine}")
    gpu = f"{machine}/gpu-state/{sha}.jsonl"
    files[gpu] = read_regular(results / gpu)
    for folder in NOISE_DIRS:
        noise = f"{machine}/{folder}/{sha}.jsonl"
        if (results / noise).exists():
            files[noise] = read_regular(results / noise)
    check_export(files, lambda rel: results / rel)
    return files


def write_export(dest: Path, files: dict[str, bytes]) -> None:
    """All or nothing: written in a temporary directory beside `dest`, then renamed."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    try:
        for rel, data in files.items():
            (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp / rel).write_bytes(data)
        os.chmod(tmp, 0o755)
        if dest.exists():
            dest.rmdir()                    # empty: _export_target checked
        os.rename(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def read_export(d: Path) -> tuple[dict[str, bytes], dict[str, set]]:
    """An exported directory, read as untrusted data: ({path under it: bytes}, {machine: commits}). Only this layout, of
    directories and regular files (no symlink, FIFO or device; names from a conservative alphabet):
        benchmarks.json
        <machine>/machine.json, <machine>/<asv results>.json
        <machine>/gpu-state/<commit>.jsonl, <machine>/gate-noise[-2]/<commit>.jsonl
    each file at most MAX_FILE_BYTES, and every value judged as `read_results` judges it (check_export).
    Anything else is a HistoryError naming the file."""
    d = Path(os.path.abspath(d))
    try:
        st = os.lstat(d)
    except OSError as e:
        raise HistoryError(f"{d}: {e.strerror or e}") from e
    if stat.S_ISREG(st.st_mode):
        # _kind names only what is not a regular file; a results .json given alone is the likeliest slip
        hint = " (import takes the directory `record --export` wrote, not a file in it)" if d.suffix == ".json" else ""
        raise HistoryError(f"{d}: a file, not a directory written by `history record --export`{hint}")
    if not stat.S_ISDIR(st.st_mode):
        raise HistoryError(f"{d}: {_kind(st.st_mode)}, not an exported directory")
    found: list[tuple[str, Path]] = []

    def refuse(p: Path, st, what: str):
        if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
            return HistoryError(f"{p}: {_kind(st.st_mode)}, not a regular file or directory")
        return HistoryError(f"{p}: {what}")

    for p, st in _listing(d):
        if p.name == "benchmarks.json" and stat.S_ISREG(st.st_mode):
            found.append((p.name, p))
        elif stat.S_ISDIR(st.st_mode) and p.name.endswith(".json"):
            raise HistoryError(f"{p}: a machine's directory named *.json, which asv reads as a results file")
        elif stat.S_ISDIR(st.st_mode) and MACHINE_RE.fullmatch(p.name):
            for q, qst in _listing(p):
                if q.name in RECORD_DIRS and stat.S_ISDIR(qst.st_mode):
                    for r, rst in _listing(q):
                        if not (stat.S_ISREG(rst.st_mode) and FILE_RE.fullmatch(r.name) and r.name.endswith(".jsonl")):
                            raise refuse(r, rst, f"not a <commit>.jsonl {RECORD_DIRS[q.name]}")
                        found.append((f"{p.name}/{q.name}/{r.name}", r))
                elif stat.S_ISREG(qst.st_mode) and FILE_RE.fullmatch(q.name) and q.name.endswith(".json"):
                    found.append((f"{p.name}/{q.name}", q))
                else:
                    raise refuse(q, qst, "not a .json file or gpu-state/ of a machine's export")
        else:
            raise refuse(p, st, "not benchmarks.json or a machine's directory (a name of letters, digits, "
                                "'.', '_', '-', starting with a letter or digit)")
        if len(found) > MAX_IMPORT_FILES:
            raise HistoryError(f"{d}: over {MAX_IMPORT_FILES} files")
    files, total = {}, 0
    for rel, p in found:
        files[rel] = read_regular(p)
        total += len(files[rel])
        if total > MAX_IMPORT_BYTES:
            raise HistoryError(f"{d}: over {MAX_IMPORT_BYTES >> 20} MiB in all")
    return files, check_export(files, lambda rel: d / rel)


def check_export(files: dict[str, bytes], where) -> dict[str, set]:
    """An export's files judged: benchmarks.json and each machine's machine.json present, at least one
    results file per machine, each named as asv names it (so it cannot stand in for another commit's),
    every GPU record JSON lines. `where(rel)`: the path to name. Returns {machine: commits}."""
    for rel in files:
        parts = rel.split("/")
        if len(parts) > 1:
            check_machine_name(parts[0], f"{where(parts[0])}: machine")
        if not (rel == "benchmarks.json"
                or (len(parts) == 2 and FILE_RE.fullmatch(parts[1]) and parts[1].endswith(".json"))
                or (len(parts) == 3 and parts[1] in RECORD_DIRS
                    and FILE_RE.fullmatch(parts[2]) and parts[2].endswith(".jsonl"))):
            raise HistoryError(f"{where(rel)}: a name outside an export's layout")
    machines = sorted({rel.split("/")[0] for rel in files if "/" in rel})
    if not machines:
        raise HistoryError(f"{where('')}: no machine's results in it")
    if "benchmarks.json" not in files:
        raise HistoryError(f"{where('benchmarks.json')}: missing")
    units = check_benchmarks_file(where("benchmarks.json"), parse_json(where("benchmarks.json"),
                                                                       files["benchmarks.json"]))
    from asv.results import get_filename
    commits = {}
    for m in machines:
        mrel = f"{m}/machine.json"
        if mrel not in files:
            raise HistoryError(f"{where(mrel)}: missing")
        check_machine_file(where(mrel), parse_json(where(mrel), files[mrel]), m)
        for rel, data in files.items():
            if not rel.startswith(m + "/") or rel == mrel:
                continue
            path = where(rel)
            folder = rel.split("/")[1] if rel.count("/") == 2 else None
            if folder in NOISE_DIRS:
                from .noise import NoiseError, parse_record
                try:
                    rec = parse_record(data, str(path), m)
                except NoiseError as e:
                    raise HistoryError(str(e)) from e
                if Path(rel).name != f"{rec['commit']}.jsonl":
                    raise HistoryError(f"{path}: holds the A/A record of {rec['commit'][:10]}")
                if folder != noise_dir(rec):
                    raise HistoryError(f"{path}: a record of min_device_sample_s = "
                                       f"{rec.get('min_device_sample_s', 0.0)} belongs in {noise_dir(rec)}/")
                continue
            if rel.endswith(".jsonl"):
                for i, line in enumerate(data.splitlines(), 1):
                    if line.strip() and not isinstance(parse_json(f"{path}:{i}", line), dict):
                        raise HistoryError(f"{path}:{i}: not a JSON object")
                continue
            r = check_results_file(path, parse_json(path, data), m, units)
            expected = os.path.basename(get_filename(m, r.commit, r.env))
            if Path(rel).name != expected:
                raise HistoryError(f"{path}: asv names the results of {r.commit[:10]} in {r.env!r} {expected}")
            commits.setdefault(m, set()).add(r.commit)
        if m not in commits:
            raise HistoryError(f"{where(m)}: no results file")
    return commits


def _write_under(root: Path, rel: str, data: bytes) -> Path:
    """Write root/rel, where no part of rel may be a symlink (a results branch could hold one)."""
    path = root
    for part in Path(rel).parts[:-1]:
        path = path / part
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            path.mkdir()
            continue
        if not stat.S_ISDIR(st.st_mode):
            raise HistoryError(f"{path}: {_kind(st.st_mode)} in the results branch, where a directory belongs")
    path = path / Path(rel).name
    if path.is_symlink() or (path.exists() and not path.is_file()):
        raise HistoryError(f"{path}: {_kind(os.lstat(path).st_mode)} in the results branch, where a file belongs")
    path.write_bytes(data)
    return path


def _measured(v) -> bool:
    return v is not None and not (isinstance(v, float) and math.isnan(v))


def merge_results(old_path: Path, old: bytes, new_path: Path, new: bytes, machine: str, units: dict) -> tuple[bytes, int]:
    """A results file the history holds and an incoming one of the same machine, commit and environment, merged
    per parameter set: a measured incoming value replaces the old one, a null or NaN one (failed, skipped, not
    selected) keeps what was measured, with its samples and statistics; a benchmark the incoming file lacks
    stays. Returns (the merged file, how many measured values were kept from the old one). A pair that cannot be
    merged value by value (other columns or parameters) is a HistoryError naming both files."""
    o, n = parse_json(old_path, old), parse_json(new_path, new)
    check_results_file(old_path, o, machine, units)
    cols = n["result_columns"]
    if o["result_columns"] != cols:
        raise HistoryError(f"{new_path}: its result_columns differ from those of {old_path}, which the history holds "
                           f"for the same commit: they cannot be merged")
    ir, ip = cols.index("result"), cols.index("params")
    per_set = [i for i, c in enumerate(cols) if c in ("result", "samples") or c.startswith("stats_")]
    kept = 0
    for name, orow in o["results"].items():
        if name not in n["results"]:
            n["results"][name] = orow
            continue
        orow = orow + [None] * (len(cols) - len(orow))
        nrow = n["results"][name] + [None] * (len(cols) - len(n["results"][name]))
        if (orow[ip] or []) != (nrow[ip] or []):
            raise HistoryError(f"{new_path}: {name} has other parameters than in {old_path}, which the history holds "
                               f"for the same commit: they cannot be merged")
        sets = len(_combos(nrow[ip] or []))
        ores, nres = orow[ir] or [None] * sets, nrow[ir] or [None] * sets
        for j in range(sets):
            if _measured(ores[j]) and not _measured(nres[j]):
                kept += 1
                for i in per_set:
                    if nrow[i] is None:
                        nrow[i] = [None] * sets
                    if isinstance(nrow[i], list) and len(nrow[i]) == sets:
                        nrow[i][j] = orow[i][j] if isinstance(orow[i], list) and len(orow[i]) == sets else None
        n["results"][name] = nrow
    if isinstance(o.get("durations"), dict) and isinstance(n.get("durations", {}), dict):
        n["durations"] = {**o["durations"], **n.get("durations", {})}
    data = json.dumps(n, allow_nan=True).encode()
    check_results_file(new_path, parse_json(new_path, data), machine, units)      # what readers will judge
    return data, kept


def import_results(repo: Path, dirs: list[Path], remote: str = "origin", branch: str = RESULTS_BRANCH,
                   push: bool = True, log=print, dir_prefix: str | None = None) -> list[str]:
    """Exported directories (`record --export`) onto the results branch: every one judged first
    (read_export), nothing written unless all pass; then one commit per machine on the history (open_history), pushed
    (`push`) with push_merging. A benchmarks.json given twice: the last directory's. Returns the commits' subjects.
    `dir_prefix`: each directory is named it and then the one machine it may hold (one runner's artifact)."""
    repo = Path(repo).resolve()
    if not dirs:
        raise HistoryError("import needs at least one exported directory")
    staged: dict[str, bytes] = {}
    source: dict[str, Path] = {}
    commits: dict[str, set] = {}
    for d in dirs:
        files, shas = read_export(Path(d))
        named = Path(d).name[len(dir_prefix):] if dir_prefix and Path(d).name.startswith(dir_prefix) else None
        if dir_prefix and set(shas) != {named}:
            raise HistoryError(f"{d}: holds {', '.join(map(repr, sorted(shas)))}, not only {named!r}, the machine "
                               f"its name gives after {dir_prefix!r}")
        for m, c in shas.items():
            commits.setdefault(m, set()).update(c)
        for rel, data in files.items():
            if rel != "benchmarks.json" and rel in staged and staged[rel] != data:
                raise HistoryError(f"{Path(d) / rel}: differs from {source[rel]}, the same file of another directory")
            staged[rel], source[rel] = data, Path(d) / rel
    results, _ = _own_dirs(repo, _conf(repo))
    with _locked(repo):
        theirs = open_history(repo, remote, branch, results, need_remote=push, log=log)
        made = []
        units = check_benchmarks_file(source["benchmarks.json"], parse_json(source["benchmarks.json"],
                                                                            staged["benchmarks.json"]))
        try:
            _write_under(results, "benchmarks.json", staged["benchmarks.json"])
            for m in sorted(commits):
                rels = [rel for rel in staged if rel.startswith(m + "/")]
                kept = 0
                for rel in rels:
                    data = staged[rel]
                    # a second export of the same commit (a re-run job) must not turn what was measured into NaN
                    if rel.count("/") == 1 and rel.endswith(".json") and rel != f"{m}/machine.json" \
                            and os.path.lexists(results / rel):
                        old = read_regular(results / rel)
                        if old != data:
                            data, k = merge_results(results / rel, old, source[rel], data, m, units)
                            kept += k
                    _write_under(results, rel, data)
                _git(results, "add", "-f", "--", "benchmarks.json", *rels)
                if _git(results, "diff", "--cached", "--quiet", check=False).returncode != 0:
                    subject = f"results: {m} at {', '.join(sorted(c[:10] for c in commits[m]))}" + (
                        f" (merged: {kept} measured value(s) the import lacks kept)" if kept else "")
                    _git(results, "commit", "-q", "--no-verify", "-m", subject)
                    made.append(subject)
        except BaseException:
            # open_history found the worktree clean: what is not committed is this import's, still in its DIRs
            _git(results, "reset", "-q", "--hard", check=False)
            _git(results, "clean", "-fdxq", check=False)
            raise
        finally:
            _keep(repo, branch, results, theirs)
        if made and push:
            _push_kept(repo, results, remote, branch)
    if made:
        log(f"cuzk history: {len(made)} commit(s) on {branch} in {results}"
            + ("" if push else f" (not pushed: kept in {local_ref(branch)})") + ": " + "; ".join(made))
    else:
        log(f"cuzk history: nothing new for {branch}: {results} holds these files already")
    return made


# --- change points ---

HASH_LENGTH = 10        # asv.conf.json's hash_length: the site and the table show the same hashes


def default_results(repo: Path) -> Path:
    """The history's worktree where `record` or `publish` made one here, else the user's own asv results."""
    repo = Path(repo)
    mine, _ = history_dirs(repo)
    return mine if mine.is_dir() else repo / _conf(repo).get("results_dir", "results")


def _series(rs: ResultsSet, bench: str | None):
    """{(machine, env, benchmark, params): [(date, commit, value)]} of the measured points; params are
    asv's repr strings, e.g. ("'cpu:8'", "'A1'"). And {machine: its newest results file}."""
    try:
        pattern = re.compile(bench) if bench else None
    except re.error as e:
        raise HistoryError(f"bad --bench regex {bench!r}: {e}") from e
    out: dict = {}
    newest: dict = {}
    for res in rs.files:
        if res.machine not in newest or (res.date, str(res.path)) > (newest[res.machine].date,
                                                                      str(newest[res.machine].path)):
            newest[res.machine] = res
        for name, vals in res.values.items():
            for combo, v in vals.items():
                if pattern and not pattern.search(series_name(name, combo)):
                    continue
                if v is None or math.isnan(v):
                    continue            # failed or skipped (a GPU parameter on a CPU machine)
                out.setdefault((res.machine, res.env, name, combo), []).append((res.date, res.commit, v))
    return out, newest


def _unmeasured(pairs, newest: dict) -> list[dict]:
    """Of each (benchmark, params) in `pairs`, on each machine read, the ones its newest results file holds
    as null (a failure), NaN (a skip) or not at all. Taken from the pairs, not from the series found: a
    series never measured has no point, and would otherwise go unnamed."""
    out = []
    for m, res in sorted(newest.items()):
        for name, combo in sorted(pairs):
            v = res.values.get(name, {}).get(combo, "absent")
            if v == "absent" or not _measured(v):
                why = ("null: the benchmark failed" if v is None else "absent: not run" if v == "absent"
                       else "NaN: asv skipped it")
                out.append({"machine": m, "env": res.env, "benchmark": series_name(name, combo),
                            "asv_benchmark": name, "params": list(combo), "commit": res.commit,
                            "file": str(res.path), "why": why})
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
    newest: dict = field(default_factory=dict)       # {machine: its newest ResultFile}, for _unmeasured
    short: list = field(default_factory=list)        # (machine, benchmark, params, points) of series too short
    spikes: list = field(default_factory=list)       # points read as their neighbours' median (despike)
    unmeasured: list = field(default_factory=list)   # analysed series whose newest point was not measured (_unmeasured)
    silent: list = field(default_factory=list)       # (machine, its newest file, series): none of them measured there


def commits_between(repo: Path | None, good: str, bad: str) -> int | None:
    """Commits in good..bad (bad included) on the first-parent line; None without the repository."""
    if repo is None:
        return None
    p = _git(repo, "rev-list", "--first-parent", "--count", f"{good}..{bad}", check=False)
    return int(p.stdout) if p.returncode == 0 and p.stdout.strip().isdigit() else None


def check_changes_args(max_pvalue: float, min_magnitude: float, window: int) -> None:
    """The detector's settings; out of range they would find nothing (a NaN threshold passes no test, a
    window under MIN_POINTS cannot hold a change) and read as "no change"."""
    if not (isinstance(max_pvalue, (int, float)) and 0 < max_pvalue <= 1):
        raise HistoryError(f"--max-pvalue {max_pvalue}: needs 0 < P <= 1")
    if not (isinstance(min_magnitude, (int, float)) and math.isfinite(min_magnitude) and min_magnitude >= 0):
        raise HistoryError(f"--min-magnitude {min_magnitude}: needs a finite M >= 0")
    if not (is_int(window) and window >= MIN_POINTS):
        raise HistoryError(f"--window {window}: needs an integer >= {MIN_POINTS}")


def despike(values: list[float], k: float = 6.0, floor: float = 0.01) -> tuple[list[float], list[int]]:
    """(values, the indices replaced): each point far off the median of it and its neighbours (k robust deviations,
    a deviation at least `floor` of the series' median level) read as that median; the newest point kept as
    measured. One bad night widens its segment's spread until the t-test passes no change after it (a single 1.5x
    point hid a new +30% step); a step of two points or more is its own median, untouched."""
    n = len(values)
    if n < 3:
        return list(values), []
    med = [sorted(values[j:j + 3])[1] for j in (min(max(i - 1, 0), n - 3) for i in range(n))]
    scale = max(1.4826 * statistics.median(abs(v - m) for v, m in zip(values, med)),
                floor * abs(statistics.median(values)))
    out = [m if i < n - 1 and abs(v - m) > k * scale else v for i, (v, m) in enumerate(zip(values, med))]
    return out, [i for i in range(n) if out[i] != values[i]]


def changes(results_dir: Path, machine: str | None = None, bench: str | None = None, max_pvalue: float = 0.001,
            min_magnitude: float = 0.05, window: int = 30, repo: Path | None = None) -> Changes:
    """Change points of every series. `min_magnitude`: the smallest relative change kept (0.05 = 5%);
    `max_pvalue`: the t-test threshold of the merge step. No series long enough to analyse is a
    HistoryError: no data never reads as no change."""
    check_changes_args(max_pvalue, min_magnitude, window)
    try:
        where()                       # otava here, or in its own environment (changepoint.py)
    except ChangePointUnavailable as e:
        raise HistoryError(str(e)) from e
    results_dir = Path(results_dir)
    if not results_dir.is_dir():
        raise HistoryError(f"no asv results at {results_dir} (run `cuzk history publish --no-push`, or "
                           f"`asv run` for your own results)")
    rs = read_results(results_dir, machine)
    if not rs.machines:
        raise HistoryError(f"no asv machines in {results_dir} (no */machine.json): no history to analyse")
    if machine is not None and machine not in rs.machines:
        raise HistoryError(f"no results for machine {machine!r} in {results_dir} (have: {', '.join(rs.machines)})")
    series, newest = _series(rs, bench)
    longest = max((len(p) for p in series.values()), default=0)
    analysed = sum(len(p) >= MIN_POINTS for p in series.values())
    if not analysed:
        raise HistoryError(f"nothing to analyse in {results_dir}: {len(series)} series"
                           + (f" matching --bench {bench!r}" if bench else "")
                           + (f", the longest has {longest} points" if series else "")
                           + f"; change-point detection needs >= {MIN_POINTS} points")
    found, pairs, short, spikes = [], set(), [], []
    for (m, env, bname, params), pts in sorted(series.items()):
        pts.sort(key=lambda p: p[0])
        values, replaced = despike([p[2] for p in pts])
        spikes += [{"machine": m, "benchmark": series_name(bname, params), "asv_benchmark": bname,
                    "commit": pts[i][1], "value": pts[i][2], "read_as": values[i]} for i in replaced]
        if len(values) < MIN_POINTS:
            short.append((m, bname, params, len(values)))
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
    # each machine's own series, judged against its newest file: a night that measured nothing, or a benchmark
    # that stopped (renamed, dropped), is said, not read as "no change"
    unmeasured, silent = [], []
    for m in sorted({k[0] for k, pts in series.items() if len(pts) >= MIN_POINTS}):
        own = {(b, p) for (mm, _e, b, p), pts in series.items() if mm == m and len(pts) >= MIN_POINTS}
        lost = _unmeasured(own, {m: newest[m]})
        unmeasured += lost
        if len(lost) == len(own):
            silent.append((m, str(newest[m].path), len(own)))
    return Changes(results_dir, len(series), analysed, longest, found, pairs, newest, short, spikes, unmeasured,
                   silent)


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
    return fmt_s(v) if is_timing(benchmark) else f"{v:.4g}"      # bytes and joules are not seconds


def changes_markdown(ch: Changes) -> str:
    from tabulate import tabulate
    head = (f"Change points over {ch.analysed} series (up to {ch.longest} points each) from {ch.source}"
            + (f"; {ch.series - ch.analysed} series with fewer than {MIN_POINTS} points skipped"
               if ch.series > ch.analysed else "") + ".\n\n")
    if ch.spikes:                   # what was not read as measured is said, with the value it had
        head += (f"{len(ch.spikes)} point(s) far off both neighbours read as their median: " + "; ".join(
            f"`{x['benchmark']}` on {x['machine']} at `{x['commit'][:HASH_LENGTH]}` "
            f"({_level(x['asv_benchmark'], x['value'])} read as {_level(x['asv_benchmark'], x['read_as'])})"
            for x in ch.spikes[:8]) + (f"; and {len(ch.spikes) - 8} more" if len(ch.spikes) > 8 else "") + ".\n\n")
    if ch.unmeasured:               # no verdict on a point that was not measured
        u = ch.unmeasured
        head += (f"The newest point of {len(u)} analysed series was not measured: " + "; ".join(
            f"`{x['benchmark']}` on {x['machine']} ({x['why']}, at `{x['commit'][:HASH_LENGTH]}`)" for x in u[:8])
            + (f"; and {len(u) - 8} more" if len(u) > 8 else "") + ".\n\n")
    for m, f, n in ch.silent:
        head += f"**{m} measured none of its {n} analysed series in its newest results file** ({f}).\n\n"
    if not ch.found:
        return head + (f"No change points in the {ch.analysed} series analysed (up to {ch.longest} points each)"
                       + (", among the points measured.\n" if ch.unmeasured else ".\n"))
    rows = [[f"`{c['benchmark']}`", c["machine"], f"`{c['range']}`", _level(c["asv_benchmark"], c["before"]),
             _level(c["asv_benchmark"], c["after"]), f"{c['change']:+.1%}", f"{c['pvalue']:.2g}",
             f"`{c['bisect']}`" if c["bisect"] else f"none: `{c['commit'][:HASH_LENGTH]}` is the change"]
            for c in ch.found]
    return head + tabulate(rows, headers=["benchmark", "machine", "range", "before", "after", "change", "p",
                                          "bisect"], tablefmt="github", disable_numparse=True) + "\n"


def gated_unmeasured(ch: Changes, gated: set) -> list[dict]:
    """Gated series whose newest point was not measured, on each machine read (a series never measured
    included): no verdict on them, never a pass."""
    return _unmeasured(gated, ch.newest)


def gated_markdown(failing: list[dict], last: int, watched: int, unmeasured: list[dict] = (),
                   short: list = ()) -> str:
    """The --fail-on-gated verdict; `watched`: the gated parameter sets that had a series to analyse;
    `unmeasured`: gated_unmeasured, listed first; `short`: gated series too short to judge (a new runner's or a
    renamed parameter set's first nights), named so that nothing reads as judged that was not."""
    lines = []
    if short:
        lines += [f"\n**Not judged: {len(short)} gated series have fewer than {MIN_POINTS} points** (a change point "
                  f"needs {MIN_POINTS}):\n"]
        lines += [f"- `{series_name(b, p)}` on {m}: {n} point(s)" for m, b, p, n in short]
    if unmeasured:
        lines += [f"\n**Not judged: the newest point of {len(unmeasured)} gated series was not measured**:\n"]
        lines += [f"- `{u['benchmark']}` on {u['machine']}: {u['why']}, at `{u['commit'][:HASH_LENGTH]}` "
                  f"in {u['file']}" for u in unmeasured]
    if not failing:
        return "\n".join(lines) + ("\n" if lines else "") + (
            f"\nNo new regression in the {watched} gated parameter set(s) (perf-gate.toml's workloads x "
            f"phases) over the last {last} points" + (", among the points measured.\n" if unmeasured else ".\n"))
    lines += [f"\n**{len(failing)} new regression(s) in gated phases** (first commit among the last {last} "
              f"points of the series):\n"]
    lines += [f"- `{c['benchmark']}` on {c['machine']}: {c['change']:+.1%} in `{c['range']}`: "
              + (f"`{c['bisect']}`" if c["bisect"] else f"`{c['commit'][:HASH_LENGTH]}` is the change")
              for c in failing]
    return "\n".join(lines) + "\n"
