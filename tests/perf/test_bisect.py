"""`cuzk bisect` never names a culprit it did not measure: the pre-flight refuses what cannot be
measured here, asv find's saved results are checked at every commit it stepped on, and the user's
.asv/results is left as it was.

The real asv runs here use an existing environment (no registry): asv installs nothing there, and
cuzk bisect's own plugin checks each commit out and puts it first on the benchmarks' PYTHONPATH, so
the throwaway repo's benchmarks import a value planted in each commit's code (bisect_planted.py).
tests/perf/test_bisect_e2e.py builds real asv virtualenvs.
"""
from __future__ import annotations

import datetime
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from cuzk.perf import asv_private, bisect, bisect_preflight, bisect_run, bisect_verdict, report, suite
from cuzk.perf.calibrate import _git, make_repo
from cuzk.perf.workload import Spec

REPO = Path(__file__).resolve().parents[2]
MACHINE = "ci-bisect"

BENCH = '''"""Test-only benchmarks (tests/perf/test_bisect.py): values planted in each commit's code."""
import os


def _planted(name):
    import bisect_planted             # the measured commit's own module: only its checkout has it
    assert os.environ["ASV_COMMIT"]
    return getattr(bisect_planted, name)


def track_planted():
    return float(_planted("PLANTED"))


def _gate():
    if _planted("GATE") == "skip":
        raise NotImplementedError("skipped here, as a cuda target is without a GPU")


def track_gated():
    return float(_planted("PLANTED"))


track_gated.setup = _gate


def track_broken():
    raise RuntimeError("broken on purpose")


class Skips:
    def setup(self):
        raise NotImplementedError("no GPU here")

    def track_skips(self):
        return 1.0
'''

# (planted value, gate) per commit, oldest first: c3 makes track_planted slower
PLANTS = [("1", "skip"), ("1", "1"), ("1", "1"), ("3", "1"), ("3", "1")]


@pytest.fixture(scope="module")
def brepo(tmp_path_factory):
    """(repo, shas oldest first, env) with the benchmarks and five commits."""
    base = tmp_path_factory.mktemp("bisect")
    d, home = base / "repo", base / "home"
    home.mkdir()
    make_repo(REPO, d)
    (d / "benchmarks" / "bench_zz_bisect.py").write_text(BENCH)
    shas = []
    for planted, gate in PLANTS:
        (d / "bisect_planted.py").write_text(f"PLANTED = {planted}\nGATE = {gate!r}\n")
        _git(d, "add", "-A")
        amend = [] if shas else ["--amend"]          # the first plant goes into make_repo's root commit
        _git(d, "commit", "-q", "--allow-empty", *amend, "-m", f"planted {planted} {gate}")
        shas.append(_git(d, "rev-parse", "HEAD").strip())
    env = dict(os.environ, HOME=str(home), CUDA_VISIBLE_DEVICES="")
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
    assert p.stdout.splitlines()[2].startswith("# environment: asv's virtualenv under .asv/env, built once")
    assert "Discovering" not in p.stdout and _snapshot(d) == before
    q = _bisect(d, env, "tail_msm", "--target", "cuda:18", "--opts", "default", "--good", shas[0], "--bad", shas[-1],
                "--dry-run", existing=False)
    assert q.returncode == 2 and "needs the cuda backend" in q.stderr


def test_two_commit_range_is_refused(brepo):
    d, shas, env = brepo
    p = _bisect(d, env, "track_planted", "--good", shas[-2], "--bad", shas[-1], "--dry-run")
    assert p.returncode == 2 and "two commits" in p.stderr, p.stdout + p.stderr
    assert p.stdout == ""                   # no asv command printed for input the pre-flight refused


def test_one_commit_range_is_refused_by_the_dry_run(brepo):
    """GOOD == BAD: a dry run that said "pre-flight ok" announced a run that then measures nothing."""
    d, shas, env = brepo
    p = _bisect(d, env, "track_planted", "--good", shas[-1], "--bad", shas[-1], "--dry-run")
    assert p.returncode == 2 and "one commit" in p.stderr and p.stdout == "", p.stdout + p.stderr


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
    # an asv regex is no workload the gate measures: the culprit stands on asv find's values, said so
    assert p.stdout.splitlines()[-1].startswith("cuzk bisect: not confirmed ('track_planted' is an asv regex"), \
        p.stdout


def test_a_culprit_that_shows_no_step_against_its_parent_is_bisected_again_with_the_gate(brepo, monkeypatch, capsys,
                                                                                      tmp_path):
    """asv find's culprit is measured again against its parent in alternation before it is named: where that
    reads the step, the culprit and the confirmation; where it reads none (asv find followed a value the machine's
    speed moved), the range is bisected again with the gate alone and its culprit named, or none (exit 2) where
    that cannot tell; where the run could not be judged, no culprit and no walk."""
    import shutil

    from cuzk.perf import bisect_confirm
    from cuzk.perf.workload import Spec
    d, shas, env = brepo
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    asked, walked = [], []
    # every run below gives asv find the same command, range and planted values: it runs once, and the later runs
    # are given its output and its results (copied into their own results directory) as it gave them
    real_stream, found = bisect_run.stream, {}

    def stream(argv, cwd, env):
        i = argv.index("--config") + 1
        results, same = Path(argv[i]).parent / "results", [*argv[:i], "CONFIG", *argv[i + 1:]]
        if not found:
            found.update(argv=same, out=real_stream(argv, cwd, env))
            shutil.copytree(results, tmp_path / "asv-find-results")
        else:
            assert same == found["argv"]
            shutil.copytree(tmp_path / "asv-find-results", results, dirs_exist_ok=True)
            sys.stdout.write("".join(x for x in found["out"][1] if not bisect.NAMED.search(x)))
        return found["out"]
    monkeypatch.setattr(bisect_run, "stream", stream)
    monkeypatch.setattr(bisect_confirm, "workload", lambda b, t, o: (Spec.parse_target("cpu:8", opts="default"), None))

    def measured(verdict, judged=True):
        def confirm(repo, parent, named, area, spec, before, after, invert=False):
            asked.append((parent, named, before, after))
            return bisect_confirm.Confirmation(verdict, f"{named[:10]} against its parent: x1.002, the test's", judged)
        return confirm

    def walk(found):
        def run(repo, commits, area, spec, good_value, bad_value, invert=False, out=print):
            assert (good_value, bad_value) == (1.0, 3.0)        # asv find's values at the ends
            walked.append(commits)
            if found is None:
                raise bisect.BisectError("x1.1 against GOOD in alternation: the spread hides the step; no culprit")
            return found, "x2.000 against GOOD (the test's walk)"
        return run
    args = ("track_planted", shas[0], shas[-1])
    extra = ["-E", f"existing:{sys.executable}"]
    # refuted: the gate alone names the commit
    monkeypatch.setattr(bisect_confirm, "confirm", measured(False))
    monkeypatch.setattr(bisect_confirm, "walk", walk(shas[1]))
    assert bisect_run.run(*args, repo=str(d), extra=extra) == 0
    out = capsys.readouterr().out
    assert asked == [(shas[2], shas[3], 1.0, 3.0)] and walked == [shas]
    assert f"cuzk bisect: {shas[3][:10]} is the first slow commit" not in out, out      # asv find's, refuted
    assert "cuzk bisect: asv find's culprit refuted: " in out
    assert out.splitlines()[-1] == f"cuzk bisect: {shas[1][:10]} is the first slow commit: x2.000 against GOOD " \
                                   "(the test's walk)"
    # refuted, and the walk cannot tell: no culprit
    monkeypatch.setattr(bisect_confirm, "walk", walk(None))
    with pytest.raises(bisect.BisectError, match="the spread hides the step; no culprit"):
        bisect_run.run(*args, repo=str(d), extra=extra)
    assert "is the first slow commit" not in capsys.readouterr().out
    # not judged: no culprit, no walk
    monkeypatch.setattr(bisect_confirm, "confirm", measured(False, judged=False))
    with pytest.raises(bisect.BisectError, match=rf"asv find named {shas[3][:10]}, measured again: .*no culprit"):
        bisect_run.run(*args, repo=str(d), extra=extra)
    assert len(walked) == 2
    # confirmed: asv find's culprit and the confirmation
    monkeypatch.setattr(bisect_confirm, "confirm", measured(True))
    assert bisect_run.run(*args, repo=str(d), extra=extra) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-2] == f"cuzk bisect: {shas[3][:10]} is the first slow commit: 1 -> 3 (measured at 4 commits)"
    assert out[-1].startswith("cuzk bisect: confirmed: ")
    # and not measured again where asked not to: said so
    assert bisect_run.run(*args, repo=str(d), extra=extra, confirm=False) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("cuzk bisect: not confirmed (--no-confirm)")
    assert len(asked) == 4 and len(walked) == 2

def test_the_walk_measures_the_step_again_where_asv_finds_ends_read_more_than_the_gate(monkeypatch):
    """asv find's ends read 4x apart (each end's process on another level of a moving machine), the gate 2x: at
    half asv's step (+100%) the run reads no change, so the step is measured again at half of what it read, and
    the bisection names the slow commit. A range with no step is still refused, and so is a step under 2%."""
    from cuzk.perf import bisect_confirm
    from cuzk.perf.compare import NO_CHANGE, REGRESSION
    commits = [f"{i:040x}" for i in range(6)]
    slow_from, asked = 3, []

    def fake(step):
        def measure(repo, base, head, area, spec, th, invert=False):
            ratio = step if commits.index(head) >= slow_from else 1.0
            asked.append((head, round(th, 4)))
            return bisect_confirm.Run(REGRESSION if ratio - 1 > th else NO_CHANGE, ratio, f"x{ratio:.3f}")
        return measure
    spec = Spec.parse_target("cpu:8", opts="default")
    monkeypatch.setattr(bisect_confirm, "measure", fake(2.001))
    first, line = bisect_confirm.walk(None, commits, "tail_msm", spec, 8.517, 34.27, out=lambda s: None)
    assert first == commits[slow_from], (first, asked)
    half = round(math.sqrt(2.001) - 1, 4)
    assert asked[:2] == [(commits[-1], round(math.sqrt(34.27 / 8.517) - 1, 4)), (commits[-1], half)]
    assert all(th == half for _, th in asked[1:])
    for step in (1.0, 1.015):        # no step, or one under what a run resolves: no second run, no culprit
        asked.clear()
        monkeypatch.setattr(bisect_confirm, "measure", fake(step))
        with pytest.raises(bisect.BisectError, match="no step to bisect; no culprit"):
            bisect_confirm.walk(None, commits, "tail_msm", spec, 8.517, 34.27, out=lambda s: None)
        assert len(asked) == 1


def _walk_reads(monkeypatch, reads, asked):
    """A gate that reads reads[i] for commit i against GOOD: a regression where ratio - 1 > th; asked: (i, th)."""
    from cuzk.perf import bisect_confirm
    from cuzk.perf.compare import NO_CHANGE, REGRESSION
    commits = [f"{i:040x}" for i in range(len(reads))]

    def measure(repo, base, head, area, spec, th, invert=False):
        ratio = reads[commits.index(head)]
        asked.append((commits.index(head), round(th, 4)))
        return bisect_confirm.Run(REGRESSION if ratio - 1 > th else NO_CHANGE, ratio, f"x{ratio:.3f}")
    monkeypatch.setattr(bisect_confirm, "measure", measure)
    return commits


def test_a_step_under_2pct_is_not_bisected_whatever_asv_read(monkeypatch):
    """A step the gate measures under 2% is refused after BAD's run, where asv find read it small as where it read
    4x: bisected at the least threshold (1%, more than half the step) a commit holding most of it would read "not"
    slow and its child be named."""
    from cuzk.perf import bisect_confirm
    spec = Spec.parse_target("cpu:8", opts="default")
    for good, bad in ((8.517, 34.27), (10.0, 10.12)):
        asked = []
        commits = _walk_reads(monkeypatch, [1.0, 1.0, 1.009, 1.012, 1.012, 1.012], asked)
        with pytest.raises(bisect.BisectError, match="no step to bisect; no culprit"):
            bisect_confirm.walk(None, commits, "tail_msm", spec, good, bad, out=lambda s: None)
        assert {i for i, _ in asked} == {5}, asked
    asked = []                      # 2.5%: bisected at half of it
    commits = _walk_reads(monkeypatch, [1.0, 1.0, 1.025, 1.025, 1.025, 1.025], asked)
    first, line = bisect_confirm.walk(None, commits, "tail_msm", spec, 10.0, 10.25, out=lambda s: None)
    assert first == commits[2] and all(th == round(math.sqrt(1.025) - 1, 4) for _, th in asked[1:]), asked


def test_a_second_read_of_bad_larger_by_chance_does_not_raise_the_bisections_threshold(monkeypatch):
    """BAD read x2 at half asv's 4x (no change), then x5 at half of x2: bisected at half of x5 (124%), the 2x
    commits would read "not" slow and BAD be named; at the smaller of the two halves the slow commit is."""
    from cuzk.perf import bisect_confirm
    from cuzk.perf.compare import NO_CHANGE, REGRESSION
    commits = [f"{i:040x}" for i in range(6)]
    bad_reads, asked = [2.0, 5.0], []

    def measure(repo, base, head, area, spec, th, invert=False):
        i = commits.index(head)
        ratio = bad_reads.pop(0) if i == 5 and bad_reads else (2.0 if i >= 3 else 1.0)
        asked.append((i, round(th, 4)))
        return bisect_confirm.Run(REGRESSION if ratio - 1 > th else NO_CHANGE, ratio, f"x{ratio:.3f}")
    monkeypatch.setattr(bisect_confirm, "measure", measure)
    first, line = bisect_confirm.walk(None, commits, "tail_msm", Spec.parse_target("cpu:8", opts="default"),
                                      8.517, 34.27, out=lambda s: None)
    assert first == commits[3], (line, asked)
    assert all(th == round(math.sqrt(2.0) - 1, 4) for _, th in asked[1:]), asked


def test_the_culprits_line_counts_the_commits_measured_not_the_runs(monkeypatch):
    """BAD measured twice (asv find's ends read 4x, the gate 2x) is one commit measured."""
    from cuzk.perf import bisect_confirm
    asked = []
    commits = _walk_reads(monkeypatch, [1.0, 1.0, 1.0, 2.0, 2.0, 2.0], asked)
    first, line = bisect_confirm.walk(None, commits, "tail_msm", Spec.parse_target("cpu:8", opts="default"),
                                      8.517, 34.27, out=lambda s: None)
    assert first == commits[3] and len(asked) == 4 and [i for i, _ in asked[:2]] == [5, 5]
    assert line.endswith(f"(measured in alternation by the gate at {len({i for i, _ in asked})} commits)"), line


@pytest.mark.parametrize("good, bad, invert", [(0.0, 2.0, False), (2.0, 0.0, True), (1.0, math.nan, False),
                                               (-1.0, 2.0, False), (1.0, math.inf, False)])
def test_an_asv_value_that_is_no_time_names_no_culprit(monkeypatch, good, bad, invert):
    """A benchmark's own number may be 0 (or anything): no step to halve, a BisectError (exit 2), not a traceback,
    and nothing measured."""
    from cuzk.perf import bisect_confirm
    asked = []
    commits = _walk_reads(monkeypatch, [1.0] * 4, asked)
    spec = Spec.parse_target("cpu:8", opts="default")
    with pytest.raises(bisect.BisectError, match="not two positive times"):
        bisect_confirm.walk(None, commits, "tail_msm", spec, good, bad, invert=invert, out=lambda s: None)
    with pytest.raises(bisect.BisectError, match="not two positive times"):
        bisect_confirm.confirm(None, commits[0], commits[1], "tail_msm", spec, good, bad, invert)
    assert asked == []


def test_a_confirmation_whose_spread_hides_the_step_refutes_nothing(monkeypatch):
    """A run of the named commit against its parent that reads "not resolved" could not have seen the step: not
    confirmed, and not "refuted" either (the walk with the gate goes on, on its own runs)."""
    from cuzk.perf import bisect_confirm
    from cuzk.perf.compare import IMPROVEMENT, NO_CHANGE, NOT_RESOLVED, REGRESSION
    spec = Spec.parse_target("cpu:8", opts="default")
    for verdict, confirmed, refuted in ((NOT_RESOLVED, False, False), (NO_CHANGE, False, True),
                                        (REGRESSION, True, True), (IMPROVEMENT, False, True)):
        monkeypatch.setattr(bisect_confirm, "measure", lambda *a, v=verdict, **k: bisect_confirm.Run(v, 1.3, "x1.300"))
        c = bisect_confirm.confirm(None, "a" * 40, "b" * 40, "tail_msm", spec, 1.0, 2.0)
        assert (c.confirmed, c.judged, c.refuted) == (confirmed, True, refuted), (verdict, c)
        assert ("not resolved" in c.line) == (verdict == NOT_RESOLVED), c.line
        if not confirmed:
            assert ("no step of half the size" in c.line) == refuted, c.line


def test_the_confirmation_takes_the_commits_trust_and_alpha_not_its_thresholds(monkeypatch):
    """The parent's perf-gate.toml gives its trust rules and its alpha (with the rounds that alpha needs); its
    threshold_floor (a bound on derived thresholds, which bisect never uses) would refuse a half step under it."""
    from cuzk.perf import bisect_confirm, gate_config
    spec = Spec.parse_target("cpu:8", opts="default")
    raw = {"gate": {"threshold": 0.05, "threshold_floor": 0.05, "alpha": 0.001, "rounds": 12, "samples": 9,
                    "min_sample_s": 0.004}, "trust": {"max_foreign_share": 0.5}}
    monkeypatch.setattr(gate_config, "load_commit", lambda repo, sha: type("C", (), {"raw": raw})())
    cfg = bisect_confirm.config(None, "a" * 40, "tail_msm", spec, 0.02)
    assert cfg.threshold == 0.02 and cfg.samples == bisect_confirm.SAMPLES and cfg.min_sample_s == 0.004
    assert cfg.alpha == 0.001 and cfg.rounds == 11 and gate_config.min_p_value(cfg.rounds) < 0.001 \
        <= gate_config.min_p_value(cfg.rounds - 1)
    assert cfg.max_foreign_share == 0.5
    raw["gate"].pop("alpha")
    assert bisect_confirm.config(None, "a" * 40, "tail_msm", spec, 0.02).rounds == bisect_confirm.ROUNDS


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
        (d / "bisect_planted.py").write_text("PLANTED = 9\n")         # changed, unstaged
        (d / "README.md").write_text("9\n")
        _git(d, "add", "README.md")                                    # changed, staged
        for dry in (["--dry-run"], []):
            p = _bisect(d, env, *args, *dry)
            assert p.returncode == 2, p.stdout + p.stderr
            assert p.stdout == "" and "Discovering" not in p.stderr     # no plan printed, asv never ran
            err = p.stderr.strip().splitlines()
            assert err == ["cuzk: error: bisect: uncommitted changes to tracked files (README.md, bisect_planted.py): "
                           "commit or stash them; bisect measures commits only"], p.stderr
    finally:
        _git(d, "reset", "-q", "--hard")
    p = _bisect(d, env, *args, "--dry-run")
    assert p.returncode == 0 and "# pre-flight ok: 5 commits" in p.stdout, p.stdout + p.stderr
    (d / "untracked.txt").unlink()


def test_good_newer_than_bad_is_said_so(tmp_path):
    """Swapped ends: not "--good is not on the first-parent line of --bad", which sends the user looking for a
    branch; a commit off the line still gets that line."""
    def git(*a):
        return subprocess.run(["git", "-C", str(tmp_path), *a], capture_output=True, text=True, check=True).stdout
    git("init", "-q", "-b", "main")
    shas = []
    for i in range(3):
        git("-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", f"c{i}")
        shas.append(git("rev-parse", "HEAD").strip())
    old, new = shas[0], shas[2]
    with pytest.raises(bisect_preflight.PreflightError, match="is newer than --bad .*: swap them"):
        bisect_preflight.range_verdict(bisect.range_commits(new, old, tmp_path), new, old, tmp_path)
    git("checkout", "-q", "-b", "side", old)
    git("-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "side")
    side = git("rev-parse", "HEAD").strip()
    with pytest.raises(bisect_preflight.PreflightError, match="not on the first-parent line"):
        bisect_preflight.range_verdict(bisect.range_commits(side, new, tmp_path), side, new, tmp_path)
    assert bisect_preflight.range_verdict(bisect.range_commits(old, new, tmp_path), old, new, tmp_path) \
        .startswith("3 commits")


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


def _write_param_results(results: Path, rows: list[tuple[str, list[str], list[float]]]):
    """One result file a commit, each with its own parameter sets (a set added or removed in the range)."""
    from asv.results import Results
    from asv.runner import BenchmarkResult
    (results / MACHINE).mkdir(parents=True, exist_ok=True)
    (results / MACHINE / "machine.json").write_text(f'{{"machine": "{MACHINE}", "version": 1}}')
    for i, (sha, params, vals) in enumerate(rows):
        bench = {"name": "bench_x.X.track_time", "version": "1", "params": [params], "param_names": ["target"],
                 "type": "track", "unit": "seconds"}
        r = Results({"machine": MACHINE, "python": "3.11"}, {}, sha, 1_700_000_000_000 + i, "3.11", "existing-py", {})
        res = BenchmarkResult(result=vals, samples=[[v] for v in vals], number=[1] * len(vals), errcode=0,
                              stderr="", profile=None)
        r.add_result(bench, res, started_at=datetime.datetime.now(datetime.timezone.utc), duration=1.0)
        r.save(str(results))


@pytest.mark.parametrize("added", [True, False])
def test_a_parameter_set_added_or_removed_in_the_range_is_not_compared_by_position(tmp_path, added):
    """A commit that adds a parameter set (sorted first) shifts every value after it: by position, 'cpu:16' 1 s
    read as 'cpu:8' 1 s -> 2 s and the commit was named, though nothing got slower."""
    old, new = ["'cpu:16'", "'cpu:8'"], ["'cpu:12'", "'cpu:16'", "'cpu:8'"]
    before, after = (old, new) if added else (new, old)
    v = {2: [2.0, 1.0], 3: [0.5, 2.0, 1.0]}
    _write_param_results(tmp_path, [(C[i], p, v[len(p)]) for i, p in ((0, before), (2, before), (3, after),
                                                                        (4, after))])
    name, labels, pts = bisect_verdict.read(tmp_path, "track_time")
    assert sorted(labels) == sorted(new)
    for sha in (C[0], C[2], C[3], C[4]):
        by = dict(zip(labels, pts[sha].values))
        assert by["'cpu:16'"] == 2.0 and by["'cpu:8'"] == 1.0
    out = []
    with pytest.raises(bisect.BisectError, match=r"2 of the 4 commits .* not measured \((good|bad) among them\): "
                                                  r"no bench_x.X.track_time\('cpu:12'\) at this commit.*no culprit"):
        bisect_verdict.judge(name, labels, pts, C, C[3], 0, out=out.append)
    assert not [line for line in out if "first slow" in line]


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


# --- the temporary config: the project checkout's commands, links from the remote ---

def _conf_for(tmp_path, remote: str | None) -> dict:
    d = tmp_path / "proj"
    d.mkdir()
    _git(d, "init", "-q")
    (d / "asv.conf.json").write_text((REPO / "asv.conf.json").read_text())
    if remote:
        _git(d, "remote", "add", "origin", remote)
    out = tmp_path / "out"
    out.mkdir()
    conf, _ = asv_private.write_config(d, out)
    return json.loads(conf.read_text())


@pytest.mark.parametrize("remote, page, commit", [
    ("https://x-access-token:s3cret@github.com/o/cuzk.git", "https://github.com/o/cuzk",
     "https://github.com/o/cuzk/commit/"),
    ("git@github.com:o/cuzk.git", "https://github.com/o/cuzk", "https://github.com/o/cuzk/commit/"),
    ("ssh://git@gitlab.com:2222/g/sub/cuzk", "https://gitlab.com/g/sub/cuzk",
     "https://gitlab.com/g/sub/cuzk/-/commit/"),
    ("https://git.example.org/o/cuzk", "https://git.example.org/o/cuzk", None),
    ("/srv/git/cuzk.git", None, None),
    (None, None, None),
])
def test_links_come_from_the_remote_or_are_left_out(tmp_path, remote, page, commit):
    conf = _conf_for(tmp_path, remote)
    assert conf.get("project_url") == page and conf.get("show_commit_url") == commit
    assert "s3cret" not in json.dumps(conf) and "OWNER" not in json.dumps(conf)


def test_the_temporary_config_installs_with_the_project_checkout(tmp_path):
    conf = _conf_for(tmp_path, None)
    proj = (tmp_path / "proj").resolve()
    (cmd,) = conf["install_command"]
    assert "{conf_dir}" not in cmd and f"{proj}/cuzk/cuda_extra.py install" in cmd
    assert f"--constraints-if-present {proj}/constraints.txt" in cmd
    assert asv_private.pin_conf_dir("a {{conf_dir}} {conf_dir}/b", proj) == f"a {{{{conf_dir}}}} {proj}/b"


def test_setup_failure_says_what_asv_could_not_run():
    lines = """\
·· Creating virtualenv for virtualenv-py3.11
·· Error running /r/.asv/env/abc/bin/python -m pip install -v wheel pip>=8 (exit status 1)
   STDOUT -------->
   Looking in links: /nowhere
   STDERR -------->
   ERROR: Could not find a version that satisfies the requirement wheel (from versions: none)
   ERROR: No matching distribution found for wheel

·· Failure creating environment for virtualenv-py3.11
""".splitlines(keepends=True)
    why = bisect_verdict.setup_failure(lines)
    assert why.startswith("/r/.asv/env/abc/bin/python -m pip install -v wheel pip>=8 exited 1: "
                          "ERROR: No matching distribution found for wheel; no package index here?")
    assert "PIP_NO_INDEX=1 PIP_FIND_LINKS=DIR" in why and "existing:PYTHON" in why
    broken = ["·· Error running /e/bin/python /p/cuzk/cuda_extra.py install /w.whl bench (exit status 2)\n",
              "   STDERR -------->\n", "   python: can't open file '/p/cuzk/cuda_extra.py'\n", "·· Failed\n"]
    assert bisect_verdict.setup_failure(broken).endswith(
        "exited 2: python: can't open file '/p/cuzk/cuda_extra.py'")
    assert bisect_verdict.setup_failure(ASV_SAID) is None
    with pytest.raises(bisect.BisectError,
                       match=r"asv find failed \(exit 1\): /e/bin/python .* exited 2: .*; no culprit"):
        bisect_verdict.judge(None, [], {}, C, None, 1, out=lambda *a: None,
                             failure=bisect_verdict.setup_failure(broken))


def test_a_step_that_does_not_explain_good_to_bad_is_noted():
    """asv find followed a value the machine's load doubled (measured: 4.84, 9.71, 18.08, 9.78 ms with the
    planted 2x at the second commit): the culprit stands as measured, with a note that it is no clean step."""
    out = []
    pts = _pts(**{C[0]: 4.84e-3, C[2]: 9.71e-3, C[3]: 18.08e-3, C[4]: 9.78e-3})
    assert bisect_verdict.judge("b", ["p"], pts, C, C[3], 0, out=out.append) == 0
    assert out[-1].startswith("cuzk bisect: note: not one clean step from GOOD to BAD (GOOD 0.00484, parent "
                              "0.00971, named 0.01808, BAD 0.00978)")
    timed = []
    bisect_verdict.judge("x.X.track_time", ["p"], pts, C, C[3], 0, out=timed.append)
    assert "(GOOD 4.84 ms, parent 9.71 ms, named 18.08 ms, BAD 9.78 ms)" in timed[-1]
    clean = []
    bisect_verdict.judge("b", ["p"], _pts(**{C[0]: 1.0, C[2]: 1.1, C[3]: 2.0, C[4]: 2.1}), C, C[3], 0,
                         out=clean.append)
    assert "first slow commit" in clean[-1]
