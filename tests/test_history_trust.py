"""What the nightly's verdict may stand on. Results files are judged before anything reads them: a timing
that is not a measurement (0, negative, infinite, absurd), a file asv would skip (corrupt, truncated, not
an object, a FIFO, a directory), or a gated series whose newest point was not measured is exit 2 naming
the file, for `changes` and `publish` alike, never "no regression". The detector's settings are checked
before it runs."""
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

REPO = Path(__file__).resolve().parents[1]
TAIL = "bench_tail_msm.TailMsm.track_time"
GATED = ("'cpu:10'", "'default'")              # perf-gate.toml's cpu porep_like 2^10 opts=default
GATED_NAME = f"{TAIL}('cpu:10', 'default')"


def _git(cwd, *args) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def _cuzk(cwd, env, *args, timeout=300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cuzk", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)


# --- changes and publish over a history with a new +30% step in a gated series ---

@pytest.fixture(scope="module")
def step(tmp_path_factory):
    """(repo, results dir): 12 points, the gated series 30% slower from point 9 on."""
    pytest.importorskip("otava")
    repo, _ = asv_synth.build(REPO, tmp_path_factory.mktemp("asv-synth"), 12, [TAIL], {(TAIL, GATED): (9, 1.30)})
    return repo, repo / ".asv" / "results"


def _copy(results: Path, dest: Path) -> Path:
    shutil.copytree(results, dest)
    return dest


def _newest(results: Path) -> Path:
    files = [p for p in (results / asv_synth.MACHINE).glob("*.json") if p.name != "machine.json"]
    return max(files, key=lambda p: json.loads(p.read_text())["date"])


def _set_value(path: Path, params: tuple, value, drop: bool = False) -> None:
    """One result of TAIL in an asv results file; `drop`: the benchmark left out of the file."""
    d = json.loads(path.read_text())
    if drop:
        del d["results"][TAIL]
    else:
        row = d["results"][TAIL]
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
    assert f"`{GATED_NAME}` on {asv_synth.MACHINE}: {why}" in cap.out and "'cpu:8'" not in cap.out


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


BAD_FILES = {"corrupt": _replace('{"version": 2, "results": {'), "truncated": _truncate, "empty": _replace(""),
             "null": _replace("null"), "a list": _replace("[1, 2]"), "a date of words": _edit(date="yesterday"),
             "results not an object": _edit(results=[]), "no commit": _edit(commit_hash=None),
             "another machine": _edit(params={"machine": "elsewhere"}), "old format": _edit(version=1),
             "a directory": _directory, "a symlink": _symlink, "not UTF-8": lambda p: p.write_bytes(b"\xff\xfe{}")}


@pytest.mark.parametrize("how", sorted(BAD_FILES))
def test_an_unreadable_results_file_is_exit_2_naming_it(step, tmp_path, capsys, how):
    """asv would skip it with one log line, and the verdict would stand on the rest."""
    results = _copy(step[1], tmp_path / "r")
    bad = _newest(results)
    BAD_FILES[how](bad)
    assert main(_changes(step, results, "--fail-on-gated", "3")) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"history: {bad}: " in err, err


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
    p = _cuzk(REPO, None, *_changes(step, results)[:], timeout=120)
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
