"""History kept on one machine never loses what it recorded: `record --no-push` and `import --no-push`
commit onto the local history (refs/cuzk/asv-results), merged with the remote's branch where there is one,
and `publish --no-push` builds the site of it, with or without a remote. The README's local path is run as
written; the worktree is never removed while it holds files not committed or a commit no ref holds."""
from __future__ import annotations

import json
import math
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import asv_synth
from cuzk.cli import main
from cuzk.perf import history
from cuzk.perf.calibrate import make_repo

REPO = Path(__file__).resolve().parents[2]
TAIL = "bench_tail_msm.TailMsm.track_time"
LOCAL = "refs/cuzk/asv-results"
PREVIEW = "asv preview --html-dir .asv/history/html"


def _git(cwd, *args) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def _refs(cwd) -> str:
    return _git(cwd, "for-each-ref", "--format=%(refname)")


def _commits(cwd, ref: str) -> list[str]:
    return _git(cwd, "log", "--format=%s", ref).splitlines()


def _readme_local_path() -> list[list[str]]:
    """The README's block for a history on one's own machine: its command lines as the shell splits them."""
    text = (REPO / "README.md").read_text()
    section = text[text.index("### History, change points and bisection"):text.index("### Nightly history")]
    blocks = re.findall(r"```sh\n(.*?)```", section, re.S)
    block = next(b for b in blocks if "history record" in b and "--no-push" in b)
    return [shlex.split(line, comments=True) for line in block.splitlines() if line.strip()]


def _run_line(cwd: Path, env: dict, args: list[str]) -> subprocess.CompletedProcess:
    assert args[0] == "cuzk", args
    return subprocess.run([sys.executable, "-m", "cuzk", *args[1:]], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


def _site_points(html: Path, machine: str, bench: str) -> dict[str, list]:
    """{commit: values} of one benchmark's graph for one machine in the built site."""
    index = json.loads((html / "index.json").read_text())
    rev = {int(k): v for k, v in index["revision_to_hash"].items()}
    graphs = list((html / "graphs" / "branch-main" / f"machine-{machine}").glob(f"*/{bench}.json"))
    assert len(graphs) == 1, graphs
    return {rev[r]: v for r, v in json.loads(graphs[0].read_text())}


def test_the_readme_local_path_keeps_both_records_and_builds_the_site(tmp_path):
    """The README's local path, as written, on a clone whose origin has no asv-results branch: two records on
    two commits and a local publish; the site holds both points and nothing was pushed."""
    record, publish = _readme_local_path()
    assert record[:3] == ["cuzk", "history", "record"] and "--no-push" in record
    build, preview = publish[:publish.index("&&")], publish[publish.index("&&") + 1:]
    assert build == ["cuzk", "history", "publish", "--no-push"] and shlex.join(preview) == PREVIEW
    machine = record[record.index("--machine") + 1]
    src, origin, clone = tmp_path / "src", tmp_path / "origin.git", tmp_path / "clone"
    make_repo(REPO, src)
    _git(tmp_path, "clone", "-q", "--bare", str(src), str(origin))
    _git(tmp_path, "clone", "-q", str(origin), str(clone))
    (tmp_path / "home").mkdir()
    (tmp_path / "locks").mkdir(mode=0o700)              # a GPU lock of its own: other test runs hold theirs
    env = dict(os.environ, HOME=str(tmp_path / "home"), CUZK_LOCK_DIR=str(tmp_path / "locks"))
    shas = []
    for i in range(2):
        if i:
            _git(clone, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "next")
        shas.append(_git(clone, "rev-parse", "HEAD").strip())
        p = _run_line(clone, env, record)
        assert p.returncode == 0, p.stdout + p.stderr
        assert f"kept in {LOCAL}" in p.stdout
    assert _commits(clone, LOCAL)[:2] == [f"results: {machine} at {s[:10]}" for s in reversed(shas)]
    p = _run_line(clone, env, build)
    assert p.returncode == 0, p.stdout + p.stderr
    html = clone / ".asv" / "history" / "html"
    assert f"--html-dir {html}" in p.stdout and (html / "index.html").is_file()
    points = _site_points(html, machine, TAIL)
    assert set(points) == set(shas) and all(v is not None for v in points.values()), points
    assert "asv-results" not in _git(origin, "branch", "--list")          # nothing pushed
    assert _git(clone, "branch", "--list") == "* main\n"                   # no branch of the user's made
    kept = _git(clone, "rev-parse", LOCAL)
    nothing = ["cuzk", "history", "record", "--machine", "new-box", "--no-push", "--bench", "no-such-benchmark"]
    p = _run_line(clone, env, nothing)      # measured nothing (asv wrote new-box/machine.json): leaves nothing
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "asv run failed" in p.stderr, p.stderr
    assert not _git(clone / ".asv" / "history" / "results", "status", "--porcelain", "--ignored")
    assert _git(clone, "rev-parse", LOCAL) == kept


# --- the same with import, and the remote's history merged in: synthetic asv results, fast ---

@pytest.fixture(scope="module")
def synth(tmp_path_factory):
    """(project repo with 4 commits, an export of machine synth-box, an export of machine gpu-c): asv results
    of every commit, as `record --export` writes them."""
    tmp = tmp_path_factory.mktemp("local")
    repo, shas = asv_synth.build(REPO, tmp, 4, [TAIL])
    a = repo / ".asv" / "results"
    c = tmp / "export-c"
    shutil.copytree(a, c)
    for p in (c / asv_synth.MACHINE).iterdir():
        p.write_text(p.read_text().replace(f'"{asv_synth.MACHINE}"', '"gpu-c"'))
    (c / asv_synth.MACHINE).rename(c / "gpu-c")
    return repo, a, c


def _clone(tmp: Path, project: Path, origin: Path | None = None) -> Path:
    """A clone of `origin` (made from `project` where absent), or with no origin, a clone with no remote."""
    clone = tmp / "clone"
    if origin is None:
        _git(tmp, "clone", "-q", str(project), str(clone))
        _git(clone, "remote", "remove", "origin")
        return clone
    if not origin.exists():
        _git(tmp, "clone", "-q", "--bare", str(project), str(origin))
    _git(tmp, "clone", "-q", str(origin), str(clone))
    return clone


def _machines(clone: Path) -> set:
    return set(json.loads((clone / ".asv" / "history" / "html" / "index.json").read_text())["params"]["machine"])


def test_import_then_publish_without_a_remote_branch_or_a_remote(synth, tmp_path, capsys):
    repo, a, _ = synth
    for name, origin in (("no-branch", tmp_path / "origin.git"), ("no-remote", None)):
        (tmp_path / name).mkdir()
        clone = _clone(tmp_path / name, repo, origin)
        assert main(["history", "import", str(a), "--no-push", "--repo", str(clone)]) == 0
        assert main(["history", "publish", "--no-push", "--repo", str(clone)]) == 0, capsys.readouterr().err
        out = capsys.readouterr().out
        assert _machines(clone) == {asv_synth.MACHINE}
        assert f"site of {LOCAL} at " in out and ("no remote 'origin'" in out) == (origin is None)
        assert main(["history", "publish", "--repo", str(clone)]) == 2          # pushing needs the remote's branch
        err = capsys.readouterr().err
        assert err.count("\n") == 1
        assert ("no remote 'origin'" if origin is None else f"{LOCAL}) holds results that origin's") in err, err


def test_publish_with_assets_missing_leaves_the_site_it_had(synth, tmp_path, capsys):
    """--assets is an input: one that lacks asv's scripts is exit 2 before asv publish replaces the built site."""
    repo, a, _ = synth
    clone = _clone(tmp_path, repo)
    assert main(["history", "import", str(a), "--no-push", "--repo", str(clone)]) == 0
    assert main(["history", "publish", "--no-push", "--repo", str(clone)]) == 0
    html = clone / ".asv" / "history" / "html"
    (html / "kept.txt").write_text("the site as it was\n")
    before = {p: p.stat().st_mtime_ns for p in html.rglob("*")}
    capsys.readouterr()
    assert main(["history", "publish", "--no-push", "--repo", str(clone), "--assets", str(tmp_path / "none")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "asset files missing" in err[0], err
    assert {p: p.stat().st_mtime_ns for p in html.rglob("*")} == before


def test_the_local_history_merges_the_remotes_and_publish_pushes_only_what_it_holds(synth, tmp_path, capsys):
    repo, a, c = synth
    origin = tmp_path / "origin.git"
    (tmp_path / "runner").mkdir()
    runner = _clone(tmp_path / "runner", repo, origin)
    assert main(["history", "import", str(a), "--repo", str(runner)]) == 0           # origin gets synth-box
    assert LOCAL not in _refs(runner)               # the remote holds it all: no local ref
    (tmp_path / "me").mkdir()
    me = _clone(tmp_path / "me", repo, origin)
    assert main(["history", "import", str(c), "--no-push", "--repo", str(me)]) == 0
    assert main(["history", "publish", "--no-push", "--repo", str(me)]) == 0
    assert _machines(me) == {asv_synth.MACHINE, "gpu-c"}
    capsys.readouterr()
    assert main(["history", "publish", "--repo", str(me)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"git push origin {LOCAL}:refs/heads/asv-results" in err, err
    assert "gh-pages" not in _git(origin, "branch", "--list")
    _git(me, "push", "-q", "origin", f"{LOCAL}:refs/heads/asv-results")             # as the line says
    assert main(["history", "publish", "--repo", str(me)]) == 0
    assert "gh-pages" in _git(origin, "branch", "--list") and LOCAL not in _refs(me)
    files = _git(origin, "ls-tree", "-r", "--name-only", "asv-results").split()
    assert any(f.startswith("gpu-c/") for f in files) and any(f.startswith(f"{asv_synth.MACHINE}/") for f in files)


def test_a_push_merges_what_another_runner_pushed_meanwhile(synth, tmp_path):
    repo, a, c = synth
    origin = tmp_path / "origin.git"
    (tmp_path / "x").mkdir()
    x = _clone(tmp_path / "x", repo, origin)
    (tmp_path / "y").mkdir()
    y = _clone(tmp_path / "y", repo, origin)
    assert main(["history", "import", str(c), "--no-push", "--repo", str(y)]) == 0   # y: gpu-c, not pushed yet
    assert main(["history", "import", str(a), "--repo", str(x)]) == 0                # x pushes synth-box first
    worktree = y / ".asv" / "history" / "results"
    pushed = history.push_merging(worktree, "origin", "asv-results")
    assert _git(origin, "rev-parse", "asv-results").strip() == pushed
    files = _git(origin, "ls-tree", "-r", "--name-only", "asv-results").split()
    assert any(f.startswith("gpu-c/") for f in files) and any(f.startswith(f"{asv_synth.MACHINE}/") for f in files)


def _stray(clone: Path, export: Path) -> Path:
    """What an interrupted record leaves: a machine's files asv wrote, not committed. Returns its results file."""
    shutil.copytree(export / "gpu-c", clone / ".asv" / "history" / "results" / "gpu-c")
    return next(p for p in (clone / ".asv" / "history" / "results" / "gpu-c").glob("*.json") if p.name != "machine.json")


def test_a_worktree_with_files_not_committed_is_never_removed(synth, tmp_path, capsys, monkeypatch):
    repo, a, c = synth
    (tmp_path / "locks").mkdir(mode=0o700)              # record's GPU lock of its own: other test runs hold theirs
    monkeypatch.setenv("CUZK_LOCK_DIR", str(tmp_path / "locks"))
    clone = _clone(tmp_path, repo, tmp_path / "origin.git")
    assert main(["history", "import", str(a), "--no-push", "--repo", str(clone)]) == 0
    local = _git(clone, "rev-parse", LOCAL)
    stray = _stray(clone, c)
    data = stray.read_text()
    for args in (["publish"], ["import", str(c)], ["record", "--machine", "gpu-c", "--bench", "nothing"]):
        capsys.readouterr()
        assert main(["history", *args, "--no-push", "--repo", str(clone)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "file(s) not committed, e.g. 'gpu-c/" in err, err
        assert stray.read_text() == data and _git(clone, "rev-parse", LOCAL) == local
    worktree = clone / ".asv" / "history" / "results"
    keep = err.split("keep them: ", 1)[1].split("; or drop them", 1)[0]       # the line's own command, run
    subprocess.run(keep, shell=True, check=True, capture_output=True, cwd=tmp_path)
    assert main(["history", "publish", "--no-push", "--repo", str(clone)]) == 0
    assert _git(clone, "show", f"{LOCAL}:gpu-c/{stray.name}") == data          # kept, as the line said
    assert _machines(clone) == {asv_synth.MACHINE, "gpu-c"}
    assert _commits(clone, LOCAL)[0] == "kept" and not _git(worktree, "status", "--porcelain")


def test_a_commit_only_the_worktree_holds_joins_the_local_history(synth, tmp_path, capsys):
    """The state a former version left after `record --no-push`: the results commit on the worktree's detached
    HEAD and no ref; kept. Kept too where the worktree's directory was removed (a CI checkout's clean) and the
    local history went elsewhere meanwhile: both are merged."""
    repo, a, c = synth
    clone = _clone(tmp_path, repo, tmp_path / "origin.git")
    worktree = clone / ".asv" / "history" / "results"
    for export, machines in ((a, {asv_synth.MACHINE}), (c, {asv_synth.MACHINE, "gpu-c"})):
        assert main(["history", "import", str(export), "--no-push", "--repo", str(clone)]) == 0
        orphan = _git(clone, "rev-parse", LOCAL).strip()
        _git(clone, "update-ref", "-d", LOCAL)
        other = None
        if export == c:
            shutil.rmtree(worktree)
            empty = _git(clone, "hash-object", "-t", "tree", "-w", "/dev/null").strip()
            other = _git(clone, "commit-tree", empty, "-m", "elsewhere").strip()
            _git(clone, "update-ref", LOCAL, other)
        assert main(["history", "publish", "--no-push", "--repo", str(clone)]) == 0, capsys.readouterr().err
        kept = _git(clone, "rev-parse", LOCAL).strip()
        for commit in filter(None, (orphan, other)):
            _git(clone, "merge-base", "--is-ancestor", commit, kept)
        assert _machines(clone) == machines


def test_one_history_command_at_a_time(synth, tmp_path, capsys):
    repo, a, _ = synth
    clone = _clone(tmp_path, repo, tmp_path / "origin.git")
    with history._locked(clone.resolve()):
        assert main(["history", "import", str(a), "--no-push", "--repo", str(clone)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"another cuzk history command (pid {os.getpid()}" in err, err
    assert LOCAL not in _refs(clone)


def test_two_checkouts_of_one_repository_keep_both_records(synth, tmp_path, monkeypatch, capsys):
    """Linked worktrees (git worktree) share refs/cuzk/asv-results, each with its own results worktree: an import
    in the second that lands between the first's read of the ref and its update stays in the ref, beside the
    first's; and a ref lock held elsewhere is waited for, then refused in one line, the ref untouched."""
    repo, a, c = synth
    clone = _clone(tmp_path, repo)
    second = tmp_path / "second"
    _git(clone, "worktree", "add", "-q", "--detach", str(second))
    write = history._write_under
    raced = []

    def racing(root, rel, data):            # the second checkout's import, done while the first's is in flight
        if not raced:
            raced.append(None)
            raced[0] = main(["history", "import", str(c), "--no-push", "--repo", str(second)])
        return write(root, rel, data)
    monkeypatch.setattr(history, "_write_under", racing)
    assert main(["history", "import", str(a), "--no-push", "--repo", str(clone)]) == 0
    assert raced == [0], capsys.readouterr().err
    for path in (clone, second):
        tip = _git(path, "rev-parse", LOCAL).strip()
        files = _git(path, "ls-tree", "-r", "--name-only", tip).split()
        assert {f.split("/")[0] for f in files if f.endswith("/machine.json")} == {asv_synth.MACHINE, "gpu-c"}
    monkeypatch.setattr(history, "REF_LOCK_WAIT_S", 0.5)
    before = _git(clone, "rev-parse", LOCAL)
    third = tmp_path / "third"
    _git(clone, "worktree", "add", "-q", "--detach", str(third))
    capsys.readouterr()
    with history._ref_lock(clone):
        assert main(["history", "import", str(c), "--no-push", "--repo", str(third)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"another cuzk history command (pid {os.getpid()}" in err, err
    assert _git(clone, "rev-parse", LOCAL) == before


def _row(path: Path, bench: str = TAIL):
    d = json.loads(path.read_text())
    cols = d["result_columns"]
    return d, d["results"][bench], cols.index("result"), cols.index("samples")


def test_a_second_export_of_the_same_commit_keeps_what_the_first_measured(synth, tmp_path, capsys):
    """A re-run job exports the same machine and commit again: a parameter set it did not measure (NaN, null) keeps
    the history's value and samples, one it measured replaces it; parameters that differ are refused naming both."""
    repo, a, _ = synth
    clone = _clone(tmp_path, repo)
    assert main(["history", "import", str(a), "--no-push", "--repo", str(clone)]) == 0
    rel = sorted(p.relative_to(a) for p in (a / asv_synth.MACHINE).glob("*.json") if p.name != "machine.json")[-1]
    b = tmp_path / "again"
    shutil.copytree(a, b)
    d, row, ir, isam = _row(b / rel)
    first, second = row[ir][0], row[ir][1]
    kept_samples = row[isam][0]
    row[ir][0], row[isam][0] = math.nan, None           # skipped this time
    row[ir][1] = second * 2                             # measured again
    (b / rel).write_text(json.dumps(d, allow_nan=True))
    capsys.readouterr()
    assert main(["history", "import", str(b), "--no-push", "--repo", str(clone)]) == 0, capsys.readouterr().err
    worktree = clone / ".asv" / "history" / "results"
    _, row, ir, isam = _row(worktree / rel)
    assert row[ir][0] == first and row[isam][0] == kept_samples and row[ir][1] == second * 2
    assert "merged: 1 measured value(s)" in _git(worktree, "log", "-1", "--format=%s")
    history.read_results(worktree)
    d, row, _, _ = _row(b / rel)
    row[d["result_columns"].index("params")][0][0] = "'cpu:99'"
    (b / rel).write_text(json.dumps(d, allow_nan=True))
    head = _git(clone, "rev-parse", LOCAL)
    assert main(["history", "import", str(b), "--no-push", "--repo", str(clone)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(b / rel) in err and str(worktree / rel) in err, err
    assert _git(clone, "rev-parse", LOCAL) == head and not _git(worktree, "status", "--porcelain")


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def test_a_record_stopped_by_sigterm_leaves_no_benchmark_running(tmp_path):
    """asv starts each benchmark in a process group of its own: a record ended by SIGTERM (a job's timeout, a
    cancelled run) stops asv so that asv ends its benchmark too, rather than leaving it running, orphaned, beside
    the next job on the GPU once the GPU's lock is released."""
    src, clone = tmp_path / "src", tmp_path / "clone"
    make_repo(REPO, src)
    _git(tmp_path, "clone", "-q", str(src), str(clone))
    _git(clone, "remote", "remove", "origin")
    pidfile = tmp_path / "bench.pid"
    (clone / "benchmarks" / "bench_zz_slow.py").write_text(
        "import os, time\n\n\nclass Slow:\n    timeout = 300\n\n    def track_slow(self):\n"
        f"        with open({str(pidfile)!r}, 'w') as f:\n            f.write(str(os.getpid()))\n"
        "        time.sleep(120)\n        return 1.0\n")
    _git(clone, "add", "benchmarks/bench_zz_slow.py")
    _git(clone, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "-m", "a slow benchmark")
    (tmp_path / "home").mkdir()
    (tmp_path / "locks").mkdir(mode=0o700)
    env = dict(os.environ, HOME=str(tmp_path / "home"), CUZK_LOCK_DIR=str(tmp_path / "locks"), PYTHONPATH=str(clone))
    p = subprocess.Popen([sys.executable, "-m", "cuzk", "history", "record", "--machine", "laptop", "--no-push",
                          "--bench", "Slow.track_slow"], cwd=clone, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    pid = None
    try:
        deadline = time.monotonic() + 240
        while not (pidfile.exists() and pidfile.read_text()) and p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert pidfile.exists(), p.communicate()[0] if p.poll() is not None else "the benchmark never started"
        pid = int(pidfile.read_text())
        p.send_signal(signal.SIGTERM)
        out = p.communicate(timeout=60)[0]
        assert p.returncode == 143 and "cuzk: interrupted" in out, out
        deadline = time.monotonic() + 5
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(pid), f"the benchmark (pid {pid}) still runs after the record was stopped"
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        if pid is not None and _alive(pid):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("left", ["an empty folder", "no folder"])
def test_a_worktree_add_that_was_killed_does_not_block_the_next_command(synth, tmp_path, capsys, left):
    """`git worktree add` keeps its worktree locked ("initializing") until its checkout ends: one killed there (a
    SIGTERM'd history command kills its git) left that lock beside an empty or missing folder, and every later
    history command in the checkout failed on it."""
    repo, a, _ = synth
    clone = _clone(tmp_path, repo)
    assert main(["history", "import", str(a), "--no-push", "--repo", str(clone)]) == 0
    results = clone / ".asv" / "history" / "results"
    _git(clone, "worktree", "lock", "--reason", "initializing", str(results))
    shutil.rmtree(results)
    if left == "an empty folder":
        results.mkdir()
    capsys.readouterr()
    assert main(["history", "import", str(a), "--no-push", "--repo", str(clone)]) == 0, capsys.readouterr().err
    listed = _git(clone, "worktree", "list", "--porcelain")
    assert listed.count(f"worktree {results}\n") == 1 and "locked" not in listed, listed
    assert not _git(results, "status", "--porcelain")


def test_a_failed_git_is_reported_by_its_fatal_line_not_its_advice(tmp_path):
    """A git killed while committing leaves index.lock; git's last line is advice ("remove the file manually to
    continue."): the one line shown names the file, from git's own fatal line."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".git" / "index.lock").write_text("")
    with pytest.raises(history.HistoryError) as e:
        history._git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "x")
    assert "index.lock" in str(e.value) and "File exists" in str(e.value), e.value
