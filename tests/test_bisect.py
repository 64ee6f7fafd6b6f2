"""`cuzk bisect` never names a culprit it did not measure: the pre-flight refuses what cannot be
measured here, asv find's saved results are checked at every commit it stepped on, and the user's
.asv/results is left as it was.

The real asv runs use an existing environment (no registry): every commit then runs the installed
code, so the throwaway repo's own benchmarks read a value planted in each commit. asv sets
ASV_COMMIT only for environments it builds; a small asv plugin (loaded through asv.conf.json's
"plugins") sets it for the existing one too.
"""
from __future__ import annotations

import datetime
import math
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from cuzk.perf import bisect, bisect_preflight, bisect_run, bisect_verdict, report, suite
from cuzk.perf.calibrate import _git, make_repo
from cuzk.perf.workload import Spec

REPO = Path(__file__).resolve().parents[1]
MACHINE = "ci-bisect"

PLUGIN = '''"""asv plugin for tests/test_bisect.py: ASV_COMMIT in an existing environment too."""
import os
from asv.environment import ExistingEnvironment


def _install_project(self, conf, repo, commit_hash=None):
    os.environ["ASV_COMMIT"] = commit_hash      # the benchmark processes inherit asv's environment


ExistingEnvironment.install_project = _install_project
'''

BENCH = '''"""Test-only benchmarks (tests/test_bisect.py): values planted per commit."""
import os
import re
import subprocess

REPO = {repo!r}


def _planted(name):
    sha = os.environ["ASV_COMMIT"]
    return subprocess.check_output(["git", "-C", REPO, "show", f"{{sha}}:{{name}}"], text=True).strip()


def track_planted():
    return float(_planted("planted.txt"))


def _gate():
    if _planted("gate.txt") == "skip":
        raise NotImplementedError("skipped here, as a cuda target is without a GPU")


def track_gated():
    return float(_planted("planted.txt"))


track_gated.setup = _gate


def track_broken():
    raise RuntimeError("broken on purpose")


class Skips:
    def setup(self):
        raise NotImplementedError("no GPU here")

    def track_skips(self):
        return 1.0
'''

# (planted.txt, gate.txt) per commit, oldest first: c3 makes track_planted slower
PLANTS = [("1", "skip"), ("1", "1"), ("1", "1"), ("3", "1"), ("3", "1")]


@pytest.fixture(scope="module")
def brepo(tmp_path_factory):
    """(repo, shas oldest first, env) with the plugin, the benchmarks and five commits."""
    base = tmp_path_factory.mktemp("bisect")
    d, plug, home = base / "repo", base / "plugin", base / "home"
    plug.mkdir(), home.mkdir()
    (plug / "bisect_commit_env.py").write_text(PLUGIN)
    make_repo(REPO, d)
    import json
    conf = json.loads((d / "asv.conf.json").read_text())
    conf["plugins"] = [".bisect_commit_env"]
    (d / "asv.conf.json").write_text(json.dumps(conf, indent=4) + "\n")
    (d / "benchmarks" / "bench_zz_bisect.py").write_text(BENCH.format(repo=str(d)))
    shas = []
    for planted, gate in PLANTS:
        (d / "planted.txt").write_text(planted + "\n")
        (d / "gate.txt").write_text(gate + "\n")
        _git(d, "add", "-A")
        amend = [] if shas else ["--amend"]          # the first plant goes into make_repo's root commit
        _git(d, "commit", "-q", "--allow-empty", *amend, "-m", f"planted {planted} {gate}")
        shas.append(_git(d, "rev-parse", "HEAD").strip())
    env = dict(os.environ, HOME=str(home), PYTHONPATH=str(plug), CUDA_VISIBLE_DEVICES="")
    env.pop("CUZK_REQUIRE_GPU", None)
    env.pop("CUZK_CUDA_EXTRA", None)
    subprocess.run([sys.executable, "-m", "asv", "machine", "--yes", "--machine", MACHINE], cwd=d, env=env,
                   check=True, capture_output=True)
    return d, shas, env


def _bisect(repo, env, *args, existing=True):
    extra = ["--asv-arg=-E", f"--asv-arg=existing:{sys.executable}"] if existing else []
    return subprocess.run([sys.executable, "-m", "cuzk", "bisect", *args, "--repo", str(repo), *extra],
                          cwd=repo, env=env, capture_output=True, text=True, timeout=300)


def _snapshot(d: Path) -> dict:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def _no_culprit(p):
    out = p.stdout + p.stderr
    assert "Greatest regression" not in out and "first slow commit" not in out, out


def test_cuda_target_without_a_gpu_exits_2_before_asv_runs(brepo):
    d, shas, env = brepo
    p = _bisect(d, env, "tail_msm", "--target", "cuda:18", "--opts", "default", "--good", "HEAD~1", "--bad", "HEAD",
                existing=False)
    assert p.returncode == 2, p.stdout + p.stderr
    _no_culprit(p)
    assert "Discovering benchmarks" not in p.stdout            # asv never ran
    err = p.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("cuzk: error: bisect: "), p.stderr
    assert "needs the cuda backend" in err[0]
    assert "a cuda target can only be bisected on a machine with a gpu" in err[0].lower()


def test_dry_run_prints_the_plan_and_measures_nothing(brepo):
    d, shas, env = brepo
    before = _snapshot(d)
    p = _bisect(d, env, "tail_msm", "--target", "cpu:8", "--opts", "default", "--good", shas[0], "--bad", shas[-1],
                "--dry-run", existing=False)
    assert p.returncode == 0, p.stdout + p.stderr
    first, second = p.stdout.splitlines()[:2]
    assert first.startswith("asv find --launch-method spawn ") and "bench_tail_msm" in first
    assert second.startswith("# pre-flight ok: 5 commits")
    assert "Discovering" not in p.stdout and _snapshot(d) == before
    q = _bisect(d, env, "tail_msm", "--target", "cuda:18", "--opts", "default", "--good", shas[0], "--bad", shas[-1],
                "--dry-run", existing=False)
    assert q.returncode == 2 and "needs the cuda backend" in q.stderr


def test_two_commit_range_is_refused(brepo):
    d, shas, env = brepo
    p = _bisect(d, env, "track_planted", "--good", shas[-2], "--bad", shas[-1], "--dry-run")
    assert p.returncode == 2 and "two commits" in p.stderr, p.stdout + p.stderr


def test_planted_slowdown_is_named_and_results_stay_untouched(brepo):
    d, shas, env = brepo
    results = d / ".asv" / "results"
    (results / MACHINE).mkdir(parents=True, exist_ok=True)
    (results / MACHINE / "machine.json").write_text('{"machine": "ci-bisect", "version": 1}\n')
    (results / "benchmarks.json").write_text('{"version": 2}\n')
    before = _snapshot(results)
    p = _bisect(d, env, "track_planted", "--good", shas[0], "--bad", shas[-1])
    assert p.returncode == 0, p.stdout + p.stderr
    assert _snapshot(results) == before
    assert "Greatest regression" not in p.stdout              # asv's own line is held back
    line = next(l for l in p.stdout.splitlines() if "first slow commit" in l)
    assert line == f"cuzk bisect: {shas[3][:10]} is the first slow commit: 1 -> 3 (measured at 4 commits)"
    rows = {l.split("|")[1].strip(): l for l in p.stdout.splitlines() if l.startswith("| ")}
    assert "good" in rows[shas[0][:10]] and "bad" in rows[shas[-1][:10]] and "first slow" in rows[shas[3][:10]]


def test_skip_at_good_exits_2_though_asv_names_a_commit(brepo):
    """asv find counts the skip (NaN) as a value and names c3, exit 0: the wrapper does not."""
    d, shas, env = brepo
    p = _bisect(d, env, "track_gated", "--good", shas[0], "--bad", shas[-1])
    assert p.returncode == 2, p.stdout + p.stderr
    _no_culprit(p)
    assert "For cuzk commit" in p.stdout                      # asv measured, live
    row = next(l for l in p.stdout.splitlines() if l.startswith(f"| {shas[0][:10]}"))
    assert "good" in row and "skipped" in row
    assert "(good among them)" in p.stderr and "no culprit" in p.stderr


def test_benchmark_that_skips_everywhere_exits_2(brepo):
    d, shas, env = brepo
    p = _bisect(d, env, r"Skips\.track_skips", "--good", shas[1], "--bad", shas[-1])
    assert p.returncode == 2, p.stdout + p.stderr
    _no_culprit(p)
    assert re.search(r"(\d+) of the \1 commits to judge by were not measured \(good and bad among them\): "
                     r"skipped", p.stderr), p.stderr


def test_failing_asv_find_exits_2_and_says_why(brepo):
    d, shas, env = brepo
    p = _bisect(d, env, "track_broken", "--good", shas[0], "--bad", shas[-1])
    assert p.returncode == 2, p.stdout + p.stderr
    _no_culprit(p)
    assert "asv find failed (exit" in p.stderr
    assert "RuntimeError: broken on purpose" in p.stdout      # asv's stored stderr, in the table


def test_dirty_tree_is_refused_before_anything_runs(brepo):
    d, shas, env = brepo
    args = ("track_planted", "--good", shas[0], "--bad", shas[-1])
    (d / "untracked.txt").write_text("not the repo's\n")               # untracked files are fine
    try:
        (d / "planted.txt").write_text("9\n")                          # changed, unstaged
        (d / "gate.txt").write_text("9\n")
        _git(d, "add", "gate.txt")                                     # changed, staged
        for dry in (["--dry-run"], []):
            p = _bisect(d, env, *args, *dry)
            assert p.returncode == 2, p.stdout + p.stderr
            assert p.stdout == "" and "Discovering" not in p.stderr     # no plan printed, asv never ran
            err = p.stderr.strip().splitlines()
            assert err == ["cuzk: error: bisect: uncommitted changes to tracked files (gate.txt, planted.txt): "
                           "commit or stash them; bisect measures commits only"], p.stderr
    finally:
        _git(d, "reset", "-q", "--hard")
    p = _bisect(d, env, *args, "--dry-run")
    assert p.returncode == 0 and "# pre-flight ok: 5 commits" in p.stdout, p.stdout + p.stderr
    (d / "untracked.txt").unlink()


def test_dirty_files_names_tracked_changes_only(tmp_path):
    d = tmp_path / "r"
    d.mkdir()
    _git(d, "init", "-q")
    for name in ("a.py", "b c.py", "old.py", "kept.py"):
        (d / name).write_text(name + "\n")
    _git(d, "add", "-A")
    _git(d, "-c", "user.name=t", "-c", "user.email=t@t.invalid", "commit", "-q", "-m", "x")
    (d / "new.py").write_text("untracked\n")
    assert bisect_preflight.dirty_files(d) == []
    (d / "a.py").write_text("changed\n")
    (d / "b c.py").unlink()
    _git(d, "mv", "old.py", "renamed.py")
    assert sorted(bisect_preflight.dirty_files(d)) == ["a.py", "b c.py", "renamed.py"]
    with pytest.raises(bisect_preflight.PreflightError, match="cannot read the state of the tree in"):
        bisect_preflight.dirty_files(tmp_path / "not-a-repo")


def test_cuda_parameter_that_skips_past_the_preflight_exits_2(brepo, monkeypatch, capsys):
    """The reported case with the pre-flight passed (as if a GPU were usable): every step is asv's n/a."""
    d, shas, env = brepo
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("CUZK_REQUIRE_GPU", raising=False)
    monkeypatch.setattr("cuzk.backend.gpu_status", lambda: (True, "a pretend GPU"))
    with pytest.raises(bisect.BisectError, match="not measured.*skipped.*no culprit"):
        bisect_run.run("tail_msm", shas[0], shas[-1], "cuda:18", "default", repo=str(d),
                   extra=["-E", f"existing:{sys.executable}"])
    out = capsys.readouterr().out
    assert "For cuzk commit" in out and "first slow" not in out and "Greatest" not in out


# --- the pre-flight's hints, and the commands the gate prints ---

@pytest.mark.parametrize("setting, major, extra", [("cuda13", None, "cuda13"), (None, 12, "cuda12"),
                                                   (None, 13, "cuda13"), (None, None, "cuda12|cuda13")])
def test_gpu_present_but_unusable_says_what_to_install(monkeypatch, setting, major, extra):
    monkeypatch.setattr("cuzk.backend.gpu_status", lambda: (False, "CuPy is not importable (ModuleNotFoundError)"))
    monkeypatch.setattr("cuzk.backend.gpu_present", lambda: (True, "NVML reports 1 NVIDIA device(s)"))
    from cuzk import cuda_extra                  # the driver the install command would read
    monkeypatch.setattr(cuda_extra, "driver_devices", lambda root="/": (1, "/proc/driver/nvidia/gpus"))
    monkeypatch.setattr(cuda_extra, "driver_major", lambda root="/": {12: 550, 13: 580}.get(major))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    if setting:
        monkeypatch.setenv("CUZK_CUDA_EXTRA", setting)
    else:
        monkeypatch.delenv("CUZK_CUDA_EXTRA", raising=False)
    with pytest.raises(bisect_preflight.PreflightError) as e:
        bisect_preflight.cuda_verdict("x('cuda:18', 'default')")
    msg = str(e.value)
    assert "NVML reports 1" in msg and f"pip install -e '.[{extra}]'" in msg
    assert f"on a GPU runner: CUZK_CUDA_EXTRA={extra} (docs/runners.md)" in msg


def test_cuda_extra_none_or_unknown_is_refused(monkeypatch):
    monkeypatch.setenv("CUZK_CUDA_EXTRA", "none")
    with pytest.raises(bisect_preflight.PreflightError, match="without CuPy"):
        bisect_preflight.extra_verdict()
    monkeypatch.setenv("CUZK_CUDA_EXTRA", "cuda11")
    with pytest.raises(bisect_preflight.PreflightError, match="use one of cuda12, cuda13, none"):
        bisect_preflight.extra_verdict()
    monkeypatch.setenv("CUZK_CUDA_EXTRA", "cuda13")
    assert "CUZK_CUDA_EXTRA=cuda13" in bisect_preflight.extra_verdict()
    monkeypatch.setattr("cuzk.backend.gpu_status", lambda: (True, "1 CUDA device(s)"))
    assert bisect_preflight.cuda_verdict("x") == "x runs on 1 CUDA device(s)"


def test_selection_follows_asv_matching():
    found = {"a.A.track_time": [["'cpu:8'", "'cuda:18'"], ["'default'"]], "a.A.track_time_x": [], "b.track": []}
    assert bisect_preflight.selection(r"A\.track_time\('cuda", found) == {"a.A.track_time": [("'cuda:18'", "'default'")]}
    assert list(bisect_preflight.selection("a.A.track_time", found)) == ["a.A.track_time"]     # exact name wins
    assert len(bisect_preflight.selection("track", found)) == 3


def _outcome(target):
    return SimpleNamespace(config=SimpleNamespace(spec=Spec.parse_target(target, circuit=suite.CIRCUIT, opts="default")))


def test_gate_prints_the_runners_cuda_extra_and_no_system_site_packages(monkeypatch):
    monkeypatch.setenv("CUZK_CUDA_EXTRA", "cuda13")
    oc = _outcome("cuda:18")
    cmd = report.bisect_command(oc, "tail_msm", "b" * 40, "h" * 40)
    find = report.asv_find_command(oc, "tail_msm", "b" * 40, "h" * 40)
    assert cmd.startswith("CUZK_CUDA_EXTRA=cuda13 cuzk bisect tail_msm --target cuda:18 --opts default ")
    hint, line = find.splitlines()
    assert hint.startswith("# asv's environments get CuPy") and "CUZK_CUDA_EXTRA" in hint
    assert line.startswith("CUZK_CUDA_EXTRA=cuda13 asv find ") and "VIRTUALENV" not in find
    monkeypatch.delenv("CUZK_CUDA_EXTRA")
    assert report.asv_find_command(oc, "tail_msm", "b", "h").splitlines()[1].startswith("asv find ")
    cpu = _outcome("cpu:8")
    assert report.asv_find_command(cpu, "tail_msm", "b", "h").startswith("asv find ")
    monkeypatch.setenv("CUZK_CUDA_EXTRA", "cuda13")
    assert report.bisect_command(cpu, "tail_msm", "b", "h").startswith("cuzk bisect ")


# --- the verdict on crafted asv result files ---

def _write_results(results: Path, values: dict[str, list]):
    from asv.results import Results
    from asv.runner import BenchmarkResult
    bench = {"name": "bench_x.X.track_time", "version": "1", "params": [["'cpu:8'", "'cuda:18'"]],
             "param_names": ["target"], "type": "track", "unit": "seconds"}
    (results / MACHINE).mkdir(parents=True, exist_ok=True)
    (results / MACHINE / "machine.json").write_text(f'{{"machine": "{MACHINE}", "version": 1}}')
    for i, (sha, vals) in enumerate(values.items()):
        r = Results({"machine": MACHINE, "python": "3.11"}, {}, sha, 1_700_000_000_000 + i, "3.11", "existing-py", {})
        res = BenchmarkResult(result=vals, samples=[[v] if v else [] for v in vals], number=[1] * len(vals),
                              errcode=0 if None not in vals else 1, stderr="", profile=None)
        r.add_result(bench, res, started_at=datetime.datetime.now(datetime.timezone.utc), duration=1.0)
        r.save(str(results))


# asv find's output with --show-stderr (0.6.6), abridged
ASV_SAID = """\
·· For cuzk commit aaaaaaaa <main~2>:
·· Benchmarking existing-py_work_venv_bin_python
··· bench_x.X.track_time                                           n/a
···· asv: skipped: Unavailable('no GPU here')
·· For cuzk commit bbbbbbbb <main~1>:
··· bench_x.X.track_time                                        failed
···· Traceback (most recent call last):
       File "/x/benchmarks/bench_x.py", line 7, in track_time
         raise RuntimeError("boom")
     RuntimeError: boom
     asv: benchmark failed (exit status 1)
·· For cuzk commit cccccccc <main>:
··· bench_x.X.track_time                                           2.0
""".splitlines(keepends=True)


def test_read_tells_skipped_failed_and_measured(tmp_path):
    shas = ["a" * 40, "b" * 40, "c" * 40]
    _write_results(tmp_path, {shas[0]: [1e-3, math.nan], shas[1]: [None, None], shas[2]: [2e-3, 5.0]})
    why = bisect_verdict.said(ASV_SAID)
    assert why == {"aaaaaaaa": "skipped: Unavailable('no GPU here')",
                   "bbbbbbbb": "RuntimeError: boom; benchmark failed (exit status 1)"}
    name, labels, pts = bisect_verdict.read(tmp_path, r"track_time\('cpu:8'\)", why)
    assert name == "bench_x.X.track_time" and labels == ["'cpu:8'"]
    assert pts[shas[0]].values == [1e-3] and pts[shas[2]].values == [2e-3] and pts[shas[2]].measured
    assert pts[shas[1]].values == [None] and pts[shas[1]].why == ["failed: RuntimeError: boom; benchmark failed "
                                                                  "(exit status 1)"]
    _, labels, pts = bisect_verdict.read(tmp_path, r"track_time\('cuda:18'\)", why)
    assert pts[shas[0]].values == [None] and not pts[shas[0]].measured
    assert pts[shas[0]].why == ["skipped (asv's n/a): Unavailable('no GPU here')"]
    assert pts[shas[2]].values == [5.0]
    _, _, pts = bisect_verdict.read(tmp_path, r"track_time\('cuda:18'\)")      # asv said nothing
    assert pts[shas[0]].why == [bisect_verdict.SKIPPED]


def _pts(**vals):
    return {sha: bisect_verdict.Point(sha, [v], [None if v is not None else "skipped"]) for sha, v in vals.items()}


C = [c * 40 for c in "abcde"]


def test_judge_names_the_culprit_only_when_every_step_was_measured():
    ok = []
    pts = _pts(**{C[0]: 1.0, C[2]: 1.0, C[3]: 2.0, C[4]: 2.0})
    assert bisect_verdict.judge("b", ["p"], pts, C, C[3], 0, out=ok.append) == 0
    assert ok[-1] == f"cuzk bisect: {C[3][:10]} is the first slow commit: 1 -> 2 (measured at 4 commits)"
    out = []
    # the bad end never stepped on
    with pytest.raises(bisect.BisectError, match=r"\(bad among them\).*no culprit"):
        bisect_verdict.judge("b", ["p"], _pts(**{C[0]: 1.0, C[2]: 1.0, C[3]: 2.0}), C, C[3], 0, out=out.append)
    # a step in the middle skipped
    with pytest.raises(bisect.BisectError, match="1 of the 4 commits.*skipped; no culprit"):
        bisect_verdict.judge("b", ["p"], _pts(**{C[0]: 1.0, C[2]: None, C[3]: 2.0, C[4]: 2.0}), C, C[3], 0,
                             out=out.append)
    # asv find failed, even with every value there
    with pytest.raises(bisect.BisectError, match=r"asv find failed \(exit 1\)"):
        bisect_verdict.judge("b", ["p"], pts, C, C[3], 1, out=out.append)
    # the named commit is no slower than its parent
    with pytest.raises(bisect.BisectError, match="no slower than its parent"):
        bisect_verdict.judge("b", ["p"], _pts(**{C[0]: 1.0, C[2]: 1.0, C[3]: 1.0, C[4]: 1.0}), C, C[3], 0,
                             out=out.append)
    # asv named nothing
    with pytest.raises(bisect.BisectError, match="named no commit"):
        bisect_verdict.judge("b", ["p"], pts, C, None, 0, out=out.append)
    assert out and not [l for l in out if "first slow" in l]


def test_bench_regex_for_every_suite_target():
    """Every target the suite has gives the benchmark that measures it; what is not measured is an error."""
    from cuzk.perf import suite
    from cuzk.perf.bisect import BisectError, bench_regex
    assert bench_regex("tail_msm", "cuda:porep_partition:24", "default").startswith(
        "^bench_tail_msm\\.TailMsmAtScale\\.track_time")
    assert bench_regex("tail_msm", "cuda:porep_partition:27", "default").startswith(
        "^bench_tail_msm\\.TailMsmAtFullScale\\.track_time")
    assert bench_regex("synthesis", "cuda:porep_partition:24").startswith("^bench_synthesis\\.SynthesisAtScale")
    for target in suite.ALL_TARGETS:
        assert bench_regex("ntt_msm_h", target)
    with pytest.raises(BisectError, match="not measured at cuda:porep_partition:27"):
        bench_regex("proof", "cuda:porep_partition:27")
    with pytest.raises(BisectError, match="not measured in variant 'baseline'"):
        bench_regex("tail_msm", "cuda:porep_partition:27", "baseline")
    with pytest.raises(BisectError, match="synthesis is parametrised"):
        bench_regex("synthesis", "cuda:18")
