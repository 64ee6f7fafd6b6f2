"""What the nightly's verdict may stand on. Results files are judged before anything reads them: a timing
that is not a measurement (0, negative, infinite, absurd), a file asv would skip (corrupt, truncated, not
an object, a FIFO, a directory), or a gated series whose newest point was not measured is exit 2 naming
the file, for `changes` and `publish` alike, never "no regression". The detector's settings are checked
before it runs. And the results leave a GPU runner with no write token: `record --no-push --export DIR`
works without the remote, `import DIR` reads DIR as untrusted data and commits it only when every file
passes."""
from __future__ import annotations

import itertools
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import asv_synth
from cuzk.cli import main
from cuzk.perf import history
from cuzk.perf.calibrate import make_repo

REPO = Path(__file__).resolve().parents[2]


def _needs_change_points():
    from cuzk.perf import changepoint
    if not changepoint.available():
        pytest.skip("apache-otava is not installed here nor in its own environment (cuda_extra.py install)")
TAIL = "bench_tail_msm.TailMsm.track_time"
GATED = ("'cpu:10'", "'default'")              # perf-gate.toml's cpu porep_like 2^10 opts=default
GATED_NAME = f"{TAIL}('cpu:10', 'default')"
AT_SCALE = "bench_tail_msm.TailMsmAtScale.track_time"
AT_SCALE_GATED = ("'cuda:porep_partition:24'", "'default'")    # perf-gate.toml's porep_partition 2^24 workload
AT_SCALE_NAME = f"{AT_SCALE}('cuda:porep_partition:24', 'default')"
BENCH = r"bench_prep_msm\.PrepMsm\.track_time\('cpu:8', 'default'\)"


def _git(cwd, *args) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def _cuzk(cwd, env, *args, timeout=300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cuzk", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)


# --- changes and publish over a history with a new +30% step in a gated series ---

@pytest.fixture(scope="module")
def step(tmp_path_factory):
    """(repo, results dir): 12 points, the gated series 30% slower from point 9 on."""
    _needs_change_points()
    repo, _ = asv_synth.build(REPO, tmp_path_factory.mktemp("asv-synth"), 12, [TAIL], {(TAIL, GATED): (9, 1.30)})
    return repo, repo / ".asv" / "results"


def _copy(results: Path, dest: Path) -> Path:
    shutil.copytree(results, dest)
    return dest


def _newest(results: Path) -> Path:
    files = [p for p in (results / asv_synth.MACHINE).glob("*.json") if p.name != "machine.json"]
    return max(files, key=lambda p: json.loads(p.read_text())["date"])


def _set_value(path: Path, params: tuple, value, drop: bool = False, bench: str = TAIL) -> None:
    """One result of `bench` in an asv results file; `drop`: the benchmark left out of the file."""
    d = json.loads(path.read_text())
    if drop:
        del d["results"][bench]
    else:
        row = d["results"][bench]
        cols = d["result_columns"]
        combos = [tuple(c) for c in itertools.product(*row[cols.index("params")])]
        row[cols.index("result")][combos.index(params)] = value
    path.write_text(json.dumps(d, allow_nan=True))


def _changes(step, results: Path, *extra) -> list[str]:
    return ["history", "changes", "--repo", str(step[0]), "--results", str(results), *extra]


def test_the_step_fails_the_nightly_unpoisoned(step, tmp_path, capsys):
    """The planted step alone: a gated regression (exit 1), what the poisoned cases below would mask."""
    assert main(_changes(step, _copy(step[1], tmp_path / "r"), "--fail-on-gated", "3")) == 1
    assert f"`{GATED_NAME}` on {asv_synth.MACHINE}: +" in capsys.readouterr().out


@pytest.mark.parametrize("factor", [1.5, 3.0, 0.3])
def test_one_bad_night_long_ago_does_not_mask_a_new_gated_step(step, tmp_path, capsys, factor):
    """One point far off its neighbours widens its segment's spread until the t-test passes no change after it;
    the step of the last 3 points must still fail the nightly."""
    results = _copy(step[1], tmp_path / "r")
    files = sorted((p for p in (results / asv_synth.MACHINE).glob("*.json") if p.name != "machine.json"),
                   key=lambda p: json.loads(p.read_text())["date"])
    _set_value(files[3], GATED, 1e-3 * factor)
    assert main(_changes(step, results, "--fail-on-gated", "3")) == 1
    out = capsys.readouterr().out
    assert f"`{GATED_NAME}` on {asv_synth.MACHINE}: +" in out
    # said out loud: which point was not read as measured, and what it read
    assert "1 point(s) far off both neighbours read as their median" in out and f"`{GATED_NAME}`" in out


def test_despike_reads_only_a_lone_point_far_off_as_its_neighbours_median():
    from cuzk.perf.history import despike
    flat = [1.0] * 10
    assert despike(flat) == (flat, [])
    # a flat series (no spread at all) keeps a point 3% off: the floor is 1% of the level, six of them apart
    assert despike(flat[:5] + [1.03] + flat[5:]) == (flat[:5] + [1.03] + flat[5:], [])
    assert despike(flat[:5] + [1.5] + flat[5:]) == (flat[:5] + [1.0] + flat[5:], [5])
    assert despike(flat + [1.5]) == (flat + [1.5], [])                     # the newest: as measured
    assert despike(flat + [1.5, 1.5, 1.0])[1] == [] and despike(flat + [1.3, 1.3])[1] == []     # steps


@pytest.mark.parametrize("value", [0, -1, 0.0, 1e308, 2e6, math.inf, -math.inf, "1.2", True])
def test_a_poisoned_newest_point_is_an_error_naming_file_and_series(step, tmp_path, capsys, value):
    results = _copy(step[1], tmp_path / "r")
    newest = _newest(results)
    _set_value(newest, GATED, value)
    summary = tmp_path / "summary.md"
    assert main(_changes(step, results, "--fail-on-gated", "3", "--summary", str(summary))) == 2
    cap = capsys.readouterr()
    assert cap.err.count("\n") == 1 and f"{newest}: {GATED_NAME}: result " in cap.err, cap.err
    assert "not a measurement" in cap.err and "No new regression" not in cap.out + summary.read_text()
    assert main(_changes(step, results)) == 2           # without --fail-on-gated too
    assert str(newest) in capsys.readouterr().err


@pytest.mark.parametrize("value,why", [(math.nan, "NaN: asv skipped it"), (None, "null: the benchmark failed"),
                                       ("drop", "absent: not run")])
def test_an_unmeasured_newest_gated_point_is_said_and_exits_2(step, tmp_path, capsys, value, why):
    """asv writes NaN for a skipped parameter (a GPU one on a CPU machine) and null for a failed one: a
    missing point, not an error, in a series the gate does not guard; in a gated one, no verdict."""
    results = _copy(step[1], tmp_path / "r")
    newest = _newest(results)
    _set_value(newest, ("'cpu:8'", "'default-K1'"), math.nan)
    _set_value(newest, ("'cpu:8'", "'baseline'"), None)
    _set_value(newest, GATED, value, drop=value == "drop")
    summary = tmp_path / "summary.md"
    assert main(_changes(step, results, "--fail-on-gated", "3", "--summary", str(summary))) == 2
    cap = capsys.readouterr()
    assert cap.err.count("\n") == 1 and GATED_NAME in cap.err and str(newest) in cap.err and why in cap.err
    assert "gated series was not measured**" in summary.read_text()
    assert f"`{GATED_NAME}` on {asv_synth.MACHINE}: {why}" in cap.out
    verdict = cap.out.split("gated series was not measured**", 1)[1]      # ungated: named above, no verdict here
    assert "'cpu:8'" not in verdict and "analysed series was not measured: " in cap.out
    if value != "drop":                 # dropped, the whole benchmark is absent: cpu:10's come first in the list
        assert f"`{TAIL}('cpu:8', 'baseline')` on {asv_synth.MACHINE} (null" in cap.out


def test_a_night_that_measured_nothing_is_exit_2_not_no_change(step, tmp_path, capsys):
    """Without --fail-on-gated too: a newest results file with every value NaN (asv skipped them all) names its
    machine and file and exits 2; a benchmark that stopped (renamed) is named as not measured, never "no change"."""
    results = _copy(step[1], tmp_path / "r")
    newest = _newest(results)
    d = json.loads(newest.read_text())
    cols = d["result_columns"]
    for row in d["results"].values():
        row[cols.index("result")] = [math.nan] * len(row[cols.index("result")])
        row[cols.index("samples")] = None
    newest.write_text(json.dumps(d, allow_nan=True))
    assert main(_changes(step, results)) == 2
    cap = capsys.readouterr()
    assert cap.err.count("\n") == 1 and f"{asv_synth.MACHINE} measured none of its" in cap.err, cap.err
    assert str(newest) in cap.err and "measured none of its" in cap.out and "NaN: asv skipped it" in cap.out
    results = _copy(step[1], tmp_path / "renamed")
    _set_value(_newest(results), None, None, drop=True, bench=AT_SCALE)
    assert main(_changes(step, results)) in (0, 1)
    out = capsys.readouterr().out
    assert f"`{AT_SCALE_NAME}` on {asv_synth.MACHINE} (absent: not run" in out and "measured none" not in out


@pytest.mark.parametrize("value,why", [(math.nan, "NaN: asv skipped it"), (None, "null: the benchmark failed"),
                                       ("drop", "absent: not run")])
def test_a_gated_series_never_measured_is_named_and_exits_2(step, tmp_path, capsys, value, why):
    """A gated series failed, skipped or absent on every night has no point, hence no series: it is named
    from the gated parameter sets, and the nightly is no pass while the other gated series are judged."""
    results = _copy(step[1], tmp_path / "r")
    for f in (p for p in (results / asv_synth.MACHINE).glob("*.json") if p.name != "machine.json"):
        _set_value(f, AT_SCALE_GATED, value, drop=value == "drop", bench=AT_SCALE)
    summary = tmp_path / "summary.md"
    assert main(_changes(step, results, "--fail-on-gated", "3", "--summary", str(summary))) == 2
    cap = capsys.readouterr()
    assert cap.err.count("\n") == 1 and AT_SCALE_NAME in cap.err and str(_newest(results)) in cap.err, cap.err
    assert why in cap.err and "No new regression" not in cap.out + summary.read_text()
    assert f"`{AT_SCALE_NAME}` on {asv_synth.MACHINE}: {why}" in cap.out


@pytest.mark.parametrize("flag,value", [("--max-pvalue", "nan"), ("--max-pvalue", "0"), ("--max-pvalue", "1.5"),
                                        ("--max-pvalue", "-0.1"), ("--max-pvalue", "inf"), ("--max-pvalue", "x"),
                                        ("--min-magnitude", "nan"), ("--min-magnitude", "inf"),
                                        ("--min-magnitude", "-0.05"), ("--window", "3"), ("--window", "0"),
                                        ("--window", "-30"), ("--window", "4.5")])
def test_detector_settings_out_of_range_are_one_line_exit_2(step, capsys, flag, value):
    with pytest.raises(SystemExit) as e:
        main(_changes(step, step[1], flag, value))
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.count("\n") == 1 and f"argument {flag}: '{value}'" in err, err


def test_the_detector_settings_are_checked_by_the_api_too_and_the_lowest_run(step, capsys):
    for kw in ({"max_pvalue": math.nan}, {"min_magnitude": math.inf}, {"window": 2}):
        with pytest.raises(history.HistoryError):
            history.changes(step[1], **kw)
    assert main(_changes(step, step[1], "--max-pvalue", "1", "--min-magnitude", "0", "--window", "4")) == 0


def _truncate(p: Path):
    p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])


def _replace(text: str):
    return lambda p: p.write_text(text)


def _edit(**kv):
    def f(p: Path):
        d = json.loads(p.read_text())
        d.update(kv)
        p.write_text(json.dumps(d))
    return f


def _directory(p: Path):
    p.unlink()
    p.mkdir()
    (p / "x").write_text("{}")


def _symlink(p: Path):
    target = p.with_name("elsewhere.txt")
    shutil.move(p, target)
    p.symlink_to(target.name)


def _params_bomb(p: Path):
    """One row's params 40 two-valued lists: a 1 KB row that lists 2^40 parameter sets."""
    d = json.loads(p.read_text())
    cols = d["result_columns"]
    row = next(iter(d["results"].values()))
    row[cols.index("params")] = [["'a'", "'b'"]] * 40
    row[cols.index("result")] = [1e-3]
    p.write_text(json.dumps(d, allow_nan=True))
    return p


BAD_FILES = {"corrupt": _replace('{"version": 2, "results": {'), "truncated": _truncate, "empty": _replace(""),
             "null": _replace("null"), "a list": _replace("[1, 2]"), "a date of words": _edit(date="yesterday"),
             "results not an object": _edit(results=[]), "no commit": _edit(commit_hash=None),
             "another machine": _edit(params={"machine": "elsewhere"}), "old format": _edit(version=1),
             "a directory": _directory, "a symlink": _symlink, "not UTF-8": lambda p: p.write_bytes(b"\xff\xfe{}"),
             "2^40 parameter sets": _params_bomb}


@pytest.mark.parametrize("how", sorted(BAD_FILES))
def test_an_unreadable_results_file_is_exit_2_naming_it(step, tmp_path, capsys, how):
    """asv would skip it with one log line, and the verdict would stand on the rest."""
    results = _copy(step[1], tmp_path / "r")
    bad = _newest(results)
    BAD_FILES[how](bad)
    assert main(_changes(step, results, "--fail-on-gated", "3")) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"history: {bad}: " in err, err


@pytest.mark.parametrize("result", [[1e-3], None, [1e-3] * 6])
def test_parameter_sets_are_counted_before_they_are_listed(tmp_path, result):
    """A row's parameter sets are the product of its params' lengths: a few bytes of params can ask for more
    than memory holds, null results (all failed) included; refused naming the file and benchmark."""
    d = {"version": 2, "commit_hash": "a" * 40, "env_name": "e", "python": "3.11", "params": {"machine": "m"},
         "requirements": {}, "result_columns": ["result", "params"], "date": 0,
         "results": {TAIL: [result, [["'a'", "'b'"]] * 40]}}
    path = tmp_path / "r.json"
    with pytest.raises(history.HistoryError, match=rf"^{path}: {TAIL}: more than 100000 parameter sets"):
        history.check_results_file(path, d, "m", {})
    d["results"][TAIL][1] = [["'a'", "'b'"], ["'c'", "'d'", "'e'"]]          # 6: counted, then compared
    if result is not None and len(result) != 6:
        with pytest.raises(history.HistoryError, match=rf"^{path}: {TAIL}: 1 results for 6 parameter sets"):
            history.check_results_file(path, d, "m", {})
    else:
        assert len(history.check_results_file(path, d, "m", {}).values[TAIL]) == 6


def _results_doc(**over) -> dict:
    return {"version": 2, "commit_hash": "a" * 40, "env_name": "e", "python": "3.11", "params": {"machine": "m"},
            "requirements": {}, "result_columns": ["result", "params"], "date": 0,
            "results": {TAIL: [[1e-3], [["'cpu:8'"], ["'default'"]]]}, **over}


def test_markup_in_a_results_files_env_vars_is_refused(tmp_path):
    """asv publish makes each env var a selector of the graph page, headed by its name as HTML."""
    path = tmp_path / "r.json"
    history.check_results_file(path, _results_doc(env_vars={"CUZK_CUDA_EXTRA": "cuda12"}), "m", {})
    for env in ({"<img src=x onerror=alert(1)>": "1"}, {"X": "</div><script>alert(1)</script>"}):
        with pytest.raises(history.HistoryError, match=rf"^{path}: env_vars.*holds '<', '>' or '&'"):
            history.check_results_file(path, _results_doc(env_vars=env), "m", {})


@pytest.mark.parametrize("key", ["params", "env_vars"])
def test_a_results_files_params_that_asv_publish_cannot_gather_are_refused(tmp_path, key):
    """asv publish adds every params and env_vars value to a set: an array there is a TypeError in asv, which
    fails the nightly's publish for every machine without naming the file."""
    path = tmp_path / "r.json"
    for bad in (["Linux"], {"a": "b"}):
        d = _results_doc()
        d.setdefault(key, {})["os"] = bad
        with pytest.raises(history.HistoryError, match=rf"^{path}: {key}: .* is an? (array|object), not a string"):
            history.check_results_file(path, d, "m", {})


@pytest.mark.parametrize("value", ["'x` | **PASS** @octocat `'", "'a|b'", "'a\nb'", "'<img src=x>'"])
def test_a_parameter_value_that_could_end_a_code_span_or_cell_is_refused(tmp_path, value):
    """`changes` prints each series' name, its parameter values in it, in code spans and table cells of the
    nightly's summary: a backtick, '|' or line break there would end them and render the rest as Markdown."""
    path = tmp_path / "r.json"
    ok = history.check_results_file(path, _results_doc(), "m", {})
    assert list(ok.values[TAIL]) == [("'cpu:8'", "'default'")]
    d = _results_doc()
    d["results"][TAIL][1][1] = [value]
    with pytest.raises(history.HistoryError, match=rf"^{path}: {TAIL}: parameter value .* is not asv's repr"):
        history.check_results_file(path, d, "m", {})


def test_a_results_row_not_named_as_a_benchmark_is_refused(tmp_path):
    """A row's name is printed by `changes` in code spans like its parameter values, whatever benchmarks.json
    holds: it must be a benchmark's name, as benchmarks.json's are."""
    path = tmp_path / "r.json"
    name = "x` | **PASS** <img src=x onerror=alert(1)> @octocat `"
    with pytest.raises(history.HistoryError, match=rf"^{path}: 'x` \| .* is not a benchmark name"):
        history.check_results_file(path, _results_doc(results={name: [[1e-3], []]}), "m", {})


def test_an_unreadable_machine_or_benchmarks_file_is_exit_2_naming_it(step, tmp_path, capsys):
    for rel, text in (("benchmarks.json", "{"), (f"{asv_synth.MACHINE}/machine.json", '{"machine": "other"}'),
                      ("stray.json", "{}"), (f"{asv_synth.MACHINE}/sub/old.json", "{}")):
        results = _copy(step[1], tmp_path / rel.replace("/", "_"))
        (results / rel).parent.mkdir(exist_ok=True)
        (results / rel).write_text(text)
        assert main(_changes(step, results)) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"history: {results / rel}: " in err, err


def test_a_fifo_in_the_results_is_refused_without_opening_it(step, tmp_path):
    """A FIFO would block open() until a writer comes: lstat judges it first."""
    results = _copy(step[1], tmp_path / "r")
    fifo = results / asv_synth.MACHINE / "0000000f-fifo.json"
    os.mkfifo(fifo)
    p = _cuzk(REPO, None, *_changes(step, results), timeout=120)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and f"{fifo}: a FIFO" in p.stderr, p.stderr


def _origin_with_results(tmp: Path, step, mutate=None) -> tuple[Path, Path]:
    """(bare origin whose asv-results branch holds the synthetic history, mutated; a clone of it)."""
    origin, work, clone = tmp / "origin.git", tmp / "work", tmp / "clone"
    _git(tmp, "clone", "-q", "--bare", str(step[0]), str(origin))
    _git(tmp, "clone", "-q", str(origin), str(work))
    _git(work, "checkout", "-q", "--orphan", "asv-results")
    _git(work, "rm", "-rfq", ".")
    shutil.copytree(step[1], work, dirs_exist_ok=True)
    if mutate:
        mutate(work)
    _git(work, "add", "-A")
    _git(work, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "history")
    _git(work, "push", "-q", "origin", "asv-results")
    _git(tmp, "clone", "-q", str(origin), str(clone))
    return origin, clone


@pytest.mark.parametrize("how", ["corrupt", "truncated", "a date of words", "null"])
def test_publish_refuses_an_unreadable_results_file(step, tmp_path, capsys, how):
    bad = {}

    def mutate(work: Path):
        bad["rel"] = _newest(work).relative_to(work)
        BAD_FILES[how](work / bad["rel"])
    origin, clone = _origin_with_results(tmp_path, step, mutate)
    assert main(["history", "publish", "--no-push", "--repo", str(clone)]) == 2
    err = capsys.readouterr().err
    path = clone.resolve() / ".asv" / "history" / "results" / bad["rel"]
    assert err.count("\n") == 1 and f"history: {path}: " in err, err
    assert not (clone / ".asv" / "history" / "html" / "index.html").exists()


def test_publish_refuses_a_poisoned_timing(step, tmp_path, capsys):
    bad = {}

    def mutate(work: Path):
        bad["rel"] = _newest(work).relative_to(work)
        _set_value(work / bad["rel"], GATED, math.inf)
    origin, clone = _origin_with_results(tmp_path, step, mutate)
    assert main(["history", "publish", "--no-push", "--repo", str(clone)]) == 2
    err = capsys.readouterr().err
    assert f"{bad['rel']}: {GATED_NAME}: result Infinity is not a measurement" in err, err


# --- record --no-push --export on a runner without the remote; import as untrusted data ---

@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """(tmp, origin, runner clone, export dir, commit): one real `record --no-push --export` (one CPU
    parameter set), its clone's origin unreachable, as with persist-credentials: false on a private repo."""
    tmp = tmp_path_factory.mktemp("export")
    src, origin, runner = tmp / "src", tmp / "origin.git", tmp / "runner"
    sha = make_repo(REPO, src)
    _git(tmp, "clone", "-q", "--bare", str(src), str(origin))
    _git(tmp, "clone", "-q", str(origin), str(runner))
    _git(runner, "remote", "set-url", "origin", str(tmp / "unreachable.git"))
    (tmp / "home").mkdir()
    env = dict(os.environ, HOME=str(tmp / "home"))
    exp = tmp / "artifact" / "results"
    p = _cuzk(runner, env, "history", "record", "--machine", "gpu-a", "--no-push", "--export", str(exp),
              "--bench", BENCH)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "cannot read origin" in p.stdout and "new root commit" in p.stdout
    return tmp, origin, runner, exp, sha


def _tree(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def test_record_exports_this_runs_files_without_the_remote(exported):
    tmp, origin, runner, exp, sha = exported
    files = _tree(exp)
    results = [f for f in files if f.startswith("gpu-a/") and f.endswith(".json") and f != "gpu-a/machine.json"]
    assert set(files) == {"benchmarks.json", "gpu-a/machine.json", f"gpu-a/gpu-state/{sha}.jsonl", *results}
    assert len(results) == 1 and results[0].startswith(f"gpu-a/{sha[:8]}-")
    r = json.loads(files[results[0]])
    assert r["commit_hash"] == sha and r["params"]["machine"] == "gpu-a"
    assert "gpu" in json.loads(files[f"gpu-a/gpu-state/{sha}.jsonl"])
    local = runner / ".asv" / "history" / "results"
    assert files == {k: v for k, v in _tree(local).items() if k in files}     # the same bytes as committed
    log = _git(local, "log", "--format=%s %P", "HEAD").splitlines()
    assert log[0].startswith(f"results: gpu-a at {sha[:10]} ") and log[1] == "asv-results: asv results of every runner "
    assert "asv-results" not in _git(origin, "branch", "--list")


def test_record_refuses_a_used_export_dir_and_a_bad_machine_name_before_measuring(exported, tmp_path):
    """An export folder that holds files, or lies in the repo's .asv (the history's worktree would keep files no
    commit of it has), a machine name that is a path, a remote that does not answer: one line, before measuring."""
    tmp, _, runner, _, _ = exported
    env = dict(os.environ, HOME=str(tmp / "home"))
    (tmp_path / "used").mkdir()
    (tmp_path / "used" / "old.json").write_text("{}")
    inside = runner / ".asv" / "history" / "results" / "export"
    for args, msg in ((["--no-push", "--export", str(tmp_path / "used")], "is not an empty directory"),
                      (["--no-push", "--export", str(inside)], f"inside {runner.resolve() / '.asv'}, where asv's"),
                      (["--no-push", "--machine", "../gpu"], "machine name '../gpu'"),
                      (["--no-push", "--machine", "box.json"], "machine name 'box.json'"),
                      ([], "cannot read origin's asv-results branch")):       # pushing: the remote must answer
        p = _cuzk(runner, env, "history", "record", "--machine", "gpu-a", "--bench", BENCH, *args, timeout=60)
        assert p.returncode == 2 and p.stderr.count("\n") == 1 and msg in p.stderr, p.stderr
        assert "asv took" not in p.stdout


@pytest.fixture(scope="module")
def imported(exported):
    """A publisher's clone of origin after importing the export: (clone, origin's asv-results commit)."""
    tmp, origin, _, exp, _ = exported
    pub = tmp / "publisher"
    _git(tmp, "clone", "-q", str(origin), str(pub))
    assert main(["history", "import", str(exp), "--repo", str(pub)]) == 0
    return pub, _git(origin, "rev-parse", "asv-results").strip()


def test_import_commits_and_pushes_the_export(exported, imported, capsys):
    tmp, origin, _, exp, sha = exported
    pub, head = imported
    files = set(_git(origin, "ls-tree", "-r", "--name-only", "asv-results").split())
    assert files == set(_tree(exp))
    for f in files:
        assert _git(origin, "show", f"asv-results:{f}").encode() == (exp / f).read_bytes()
    assert _git(origin, "log", "--format=%s", "asv-results").splitlines()[0] == f"results: gpu-a at {sha[:10]}"
    assert main(["history", "import", str(exp), "--repo", str(pub)]) == 0     # again: nothing new
    assert "nothing new for asv-results" in capsys.readouterr().out
    assert _git(origin, "rev-parse", "asv-results").strip() == head
    assert main(["history", "publish", "--no-push", "--repo", str(pub)]) == 0     # what asv publish takes
    assert (pub / ".asv" / "history" / "html" / "index.html").is_file()


def _fifo(p: Path):
    os.mkfifo(p)


def _sparse(p: Path):
    with open(p, "wb") as f:
        f.truncate((64 << 20) + 1)


def _results_file(exp: Path) -> Path:
    return next(p for p in (exp / "gpu-a").glob("*.json") if p.name != "machine.json")


def _poison(value):
    def f(exp: Path) -> Path:
        p = _results_file(exp)
        d = json.loads(p.read_text())
        for row in d["results"].values():
            col = d["result_columns"].index("result")
            row[col] = [v if v is None or math.isnan(v) else value for v in row[col]]
        p.write_text(json.dumps(d, allow_nan=True))
        return p
    return f


def _make(rel: str, how, named: str | None = None):
    """Make exp/rel with how(path); returns the path the error must name: exp/named, else exp/rel."""
    def f(exp: Path) -> Path:
        p = exp / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        how(p)
        return exp / (named or rel)
    return f


def _link_out(exp: Path) -> Path:
    p = exp / "gpu-a" / "machine.json"
    shutil.move(p, exp.parent / "machine.json")
    p.symlink_to(Path("..") / ".." / "machine.json")
    return p


def _escape(exp: Path) -> Path:
    (exp.parent / "outside" / "gpu-b").mkdir(parents=True)
    p = exp / "gpu-b"
    p.symlink_to(Path("..") / "outside" / "gpu-b")
    return p


def _renamed(exp: Path) -> Path:
    p = _results_file(exp)
    new = p.with_name("0123abcd-" + p.name.split("-", 1)[1])
    p.rename(new)
    return new


def _corrupt(exp: Path) -> Path:
    _truncate(_results_file(exp))
    return _results_file(exp)


def _bad_gpu_record(exp: Path) -> Path:
    p = next((exp / "gpu-a" / "gpu-state").glob("*.jsonl"))
    p.write_text('{"gpu": nul\n')
    return p


def _no_benchmarks(exp: Path) -> Path:
    (exp / "benchmarks.json").unlink()
    return exp / "benchmarks.json"


def _benchmarks(edit):
    """exp/benchmarks.json edited: asv's pages put its strings into HTML as they are."""
    def f(exp: Path) -> Path:
        p = exp / "benchmarks.json"
        d = json.loads(p.read_text())
        edit(d, next(k for k in d if k != "version"))
        p.write_text(json.dumps(d))
        return p
    return f


def _named(d: dict, name: str) -> None:
    d['x" onmouseover="alert(1)'] = {**d[name], "name": 'x" onmouseover="alert(1)'}


def _json_machine(exp: Path) -> Path:
    """A machine folder x.json: asv reads it as a results file, and publish and changes would fail for all."""
    for p in (exp / "gpu-a").glob("*.json"):
        p.write_text(p.read_text().replace('"gpu-a"', '"x.json"'))
    (exp / "gpu-a").rename(exp / "x.json")
    return exp / "x.json"


def _markup_param(exp: Path) -> Path:
    p = _results_file(exp)
    d = json.loads(p.read_text())
    d["params"]["<b onmouseover=alert(1)>os</b>"] = "Linux"
    p.write_text(json.dumps(d))
    return p


UNTRUSTED = {
    "markup in a pretty name": _benchmarks(lambda d, n: d[n].update(pretty_name="<img src=x onerror=alert(1)>")),
    "markup in a benchmark's code": _benchmarks(lambda d, n: d[n].update(code="</pre><script>alert(1)</script>")),
    "a quote in a benchmark's name": _benchmarks(_named),
    "markup in machine.json": _make("gpu-a/machine.json",
                                    _replace('{"machine": "gpu-a", "version": 1, "cpu": "<svg onload=alert(1)>"}')),
    "markup in a results file's params": _markup_param,
    "a symlink": _link_out,
    "a ../ symlinked directory": _escape,
    "a FIFO": _make("gpu-a/extra.json", _fifo),
    "a dot-dot name": _make("gpu-a/..json", _replace("{}")),
    "a hidden machine": _make(".gpu/machine.json", _replace("{}"), ".gpu"),
    "a machine named *.json": _json_machine,
    "a bad machine name": _make("gpu a/machine.json", _replace('{"machine": "gpu a"}'), "gpu a"),
    "a name outside the layout": _make("gpu-a/notes.txt", _replace("hi")),
    "a deeper directory": _make("gpu-a/sub/x.json", _replace("{}"), "gpu-a/sub"),
    "corrupt JSON": _corrupt,
    "a poisoned timing": _poison(math.inf),
    "a zero timing": _poison(0.0),
    "an absurd timing": _poison(1e308),
    "a bad GPU record": _bad_gpu_record,
    "a renamed results file": _renamed,
    "another machine's machine.json": _make("gpu-a/machine.json", _replace('{"machine": "gpu-b"}')),
    "an oversized file": _make("gpu-a/big.json", _sparse),
    "no benchmarks.json": _no_benchmarks,
    "2^40 parameter sets": lambda exp: _params_bomb(_results_file(exp)),
}


@pytest.mark.parametrize("how", sorted(UNTRUSTED))
def test_import_refuses_untrusted_data_and_commits_nothing(exported, imported, tmp_path, capsys, how):
    tmp, origin, _, exp, _ = exported
    pub, head = imported
    good, bad = tmp_path / "good", tmp_path / "bad"
    shutil.copytree(exp, good)
    shutil.copytree(exp, bad)
    for p in (good / "gpu-a").iterdir():                 # another runner's good export, given first
        if p.suffix == ".json":
            p.write_text(p.read_text().replace('"gpu-a"', '"gpu-c"'))
    (good / "gpu-a").rename(good / "gpu-c")
    worktree = pub / ".asv" / "history" / "results"
    before = _git(worktree, "rev-parse", "HEAD")
    named = UNTRUSTED[how](bad)
    assert main(["history", "import", str(good), str(bad), "--repo", str(pub)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"history: {named}" in err, err
    assert _git(origin, "rev-parse", "asv-results").strip() == head
    assert _git(worktree, "rev-parse", "HEAD") == before and not _git(worktree, "status", "--porcelain")


def test_import_of_an_empty_or_missing_directory_is_an_error(imported, tmp_path, capsys):
    pub, _ = imported
    (tmp_path / "empty").mkdir()
    for dirs, msg in (([tmp_path / "empty"], "no machine's results"), ([tmp_path / "none"], "No such file"),
                      ([], "history import needs DIR")):
        assert main(["history", "import", *map(str, dirs), "--repo", str(pub)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and msg in err, err


@pytest.mark.parametrize("name", ["k.zkey", "benchmarks.json"])
def test_import_of_a_regular_file_says_it_is_a_file_not_an_export(tmp_path, capsys, name):
    """A regular file is refused as what it is, not as "not a regular file"; before any repository is read."""
    f = tmp_path / name
    f.write_bytes(b"\x00zkey" if name.endswith(".zkey") else b"{}")
    assert main(["history", "import", str(f), "--repo", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{f}: a file, not a directory written by `history record --export`" in err, err
    assert "not a regular file" not in err
    assert ("not a file in it" in err) == name.endswith(".json"), err


def test_an_artifact_writes_only_the_machine_its_name_gives(exported, imported, tmp_path, capsys):
    """asv-results-<machine> may hold that machine's files alone: a runner that ran a pull request's code must not
    rewrite another runner's history, nor the noise records from which that runner's gate takes its thresholds."""
    tmp, origin, _, exp, _ = exported
    pub, head = imported
    own, other = tmp_path / "asv-results-gpu-a", tmp_path / "asv-results-gpu-b"
    shutil.copytree(exp, own)
    shutil.copytree(exp, other)                         # gpu-b's artifact, holding gpu-a's files
    argv = ["history", "import", str(own), str(other), "--dir-prefix", "asv-results-", "--repo", str(pub)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"history: {other}: " in err and "'gpu-b'" in err, err
    assert _git(origin, "rev-parse", "asv-results").strip() == head
    assert main(["history", "import", str(own), "--dir-prefix", "asv-results-", "--repo", str(pub)]) == 0


def test_a_machine_name_ending_in_json_is_refused_by_every_check():
    """asv reads any *.json in the results as a file: a machine folder so named breaks publish and changes for all."""
    from cuzk.perf import noise
    for name in ("box.json", "benchmarks.json", "machine.json"):
        with pytest.raises(history.HistoryError, match=f"machine name '{name}'.*not ending in '.json'"):
            history.check_machine_name(name)
        assert not noise.machine_name_ok(name)
        with pytest.raises(history.HistoryError, match=f"x/{name}: machine '{name}'"):
            history.check_export({"benchmarks.json": b"{}", f"{name}/machine.json": b"{}"}, lambda rel: f"x/{rel}")
    for name in ("gpu-a", "h100.0", "box.jsonl", "json"):
        history.check_machine_name(name)
        assert noise.machine_name_ok(name)


def test_a_failed_tool_is_one_line_naming_the_log_of_its_output(tmp_path):
    from cuzk.perf import history
    script = "import sys; print('first line of much output'); print('the reason', file=sys.stderr); sys.exit(3)"
    with pytest.raises(history.HistoryError) as e:
        history._run([sys.executable, "-c", script], tmp_path)
    msg = str(e.value)
    assert "\n" not in msg and "exit 3 (the reason)" in msg
    log = Path(msg.rsplit("its output: ", 1)[1])
    assert "first line of much output" in log.read_text() and "the reason" in log.read_text()
    log.unlink()


def test_the_gpu_record_is_never_written_through_a_link_the_results_branch_holds(tmp_path, monkeypatch):
    """A link planted on the results branch where `record` writes the run's GPU record (its folder or the file):
    refused by name, its target untouched; a plain place gets the record."""
    import json as _json
    from cuzk.perf import history
    monkeypatch.setattr(history.nvml, "open_device", lambda: None)
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    results, sha = tmp_path / "results", "a" * 40
    (results / "m" / "gpu-state").mkdir(parents=True)
    (results / "m" / "gpu-state" / f"{sha}.jsonl").symlink_to(victim)
    with pytest.raises(history.HistoryError, match=f"{sha}.jsonl: a symbolic link in the results branch"):
        history.write_gpu_state(results, f"m/gpu-state/{sha}.jsonl")
    (results / "n").mkdir()
    (results / "n" / "gpu-state").symlink_to(tmp_path)
    with pytest.raises(history.HistoryError, match="gpu-state: a symbolic link in the results branch"):
        history.write_gpu_state(results, f"n/gpu-state/{sha}.jsonl")
    assert victim.read_text() == "precious\n" and not (tmp_path / f"{sha}.jsonl").exists()
    p = history.write_gpu_state(results, f"o/gpu-state/{sha}.jsonl")
    assert _json.loads(p.read_text()) == {"gpu": None}


def test_a_results_folder_s_machine_is_named_by_the_rule_record_and_import_use(tmp_path):
    """`changes --results DIR` reads a folder the user chose; its machine names go into the tables as record's
    and import's do, so they follow the same rule: a name that ends a code span or a cell is refused, naming it."""
    name = "x` | **PASS** @octocat"
    (tmp_path / name).mkdir()
    (tmp_path / name / "machine.json").write_text(json.dumps({"machine": name, "version": 1}))
    with pytest.raises(history.HistoryError, match=r": machine 'x` \\| \*\*PASS\*\* @octocat': use letters"):
        history.read_results(tmp_path)
    (tmp_path / name).rename(tmp_path / "gpu-a")
    (tmp_path / "gpu-a" / "machine.json").write_text(json.dumps({"machine": "gpu-a", "version": 1}))
    assert history.read_results(tmp_path).machines == ["gpu-a"]
