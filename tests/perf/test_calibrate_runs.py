"""calibrate's runs add up across invocations: the JSON is rewritten after each run (a killed invocation keeps what
it finished), and `--merge` pools files measured under one set-up, refusing any other (named, exit 2)."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from cuzk.perf import calibrate

ROOT = Path(__file__).resolve().parents[2]


def _project(tmp_path: Path) -> Path:
    """A small project calibrate can copy: a gate config and the CUDA backend's file the injection patches."""
    d = tmp_path / "proj"
    (d / "cuzk/backend/cuda").mkdir(parents=True)
    shutil.copy(ROOT / "tools/gate-cuda24.toml", d / "perf-gate.toml")
    (d / calibrate.CUDA_FILE).write_text("class CudaBackend:\n    def tail_msm(self):\n        return 1\n")
    subprocess.run(["git", "init", "-q", str(d)], check=True)
    git = ["git", "-C", str(d), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(git + ["add", "-A"], check=True)
    subprocess.run(git + ["commit", "-qm", "project"], check=True)
    return d


def _gate(flag_tail: bool):
    """A stand-in gate run: five phases judged, tail_msm flagged or not."""
    comps = [{"area": a, "verdict": "regression" if a == "tail_msm" and flag_tail else "no change",
              "ratio": 1.03 if a == "tail_msm" else 1.0, "threshold": 0.02}
             for a in ("prep_msm", "ntt_msm_h", "batch_addition", "tail_msm", "b_g2")]
    return 0, {"outcomes": [{"spec": {"backend": "cuda"}, "status": "ok", "comparisons": comps}]}, 180.0


def _run(tmp_path, name, runs, inject=None, flags=(True,), fail_at=None, monkeypatch=None, dirty=False):
    calls = iter(range(100))

    def fake(*a, **k):
        i = next(calls)
        if i == fail_at:
            raise KeyboardInterrupt                     # the lease ends mid-invocation
        return _gate(flags[i % len(flags)])
    monkeypatch.setattr(calibrate, "run_gate", fake)
    monkeypatch.delenv("CUZK_COMMIT", raising=False)        # the tree from the project's own git here
    out = tmp_path / f"{name}.json"
    project = _project(tmp_path / name)
    if dirty:
        (project / calibrate.CUDA_FILE).write_text("class CudaBackend:\n    def tail_msm(self):\n        return 2\n")
    argv = ["--project", str(project), "--runs", str(runs), "--workdir",
            str(tmp_path / name / "w"), "--json", str(out)] + (["--inject", inject] if inject else [])
    return argv, out


def test_a_killed_invocation_keeps_the_runs_it_finished(tmp_path, monkeypatch):
    argv, out = _run(tmp_path, "a", 3, inject="tail_msm:0.03", fail_at=2, monkeypatch=monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        calibrate.main(argv)
    doc = json.loads(out.read_text())
    assert doc["kind"] == calibrate.KIND and len(doc["runs"]) == 2
    assert doc["summary"]["detected"] == {"cuda:tail_msm": 2} and doc["setup"]["inject"] == "tail_msm:0.03"
    assert not list(tmp_path.glob(".a.json.*.tmp"))


def test_merge_pools_runs_measured_under_one_setup(tmp_path, monkeypatch, capsys):
    argv, a = _run(tmp_path, "a", 2, inject="tail_msm:0.03", flags=(True, False), monkeypatch=monkeypatch)
    assert calibrate.main(argv) == 0
    argv, b = _run(tmp_path, "b", 3, inject="tail_msm:0.03", flags=(True,), monkeypatch=monkeypatch, dirty=True)
    assert calibrate.main(argv) == 0
    capsys.readouterr()
    trees = [json.loads(f.read_text())["setup"]["tree"] for f in (a, b)]
    assert len(trees[0]) == 40 and trees[1] == calibrate._git(tmp_path / "b" / "proj", "rev-parse", "HEAD").strip() + "+changes"
    pooled = tmp_path / "pooled.json"
    assert calibrate.main(["--merge", str(a), str(b), "--json", str(pooled)]) == 0
    s = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert s["runs"] == 5 and s["detected"] == {"cuda:tail_msm": 4} and s["phase_tests"] == 20
    assert s["false_alarms"] == 0
    assert s["runs_by_tree"] == {trees[0]: 2, trees[1]: 3}             # pooled across trees, each run's kept
    doc = json.loads(pooled.read_text())
    assert [r["tree"] for r in doc["runs"]] == [trees[0]] * 2 + [trees[1]] * 3
    assert doc["setup"]["tree"] is None                                # a pooled file holds more than one
    capsys.readouterr()
    assert calibrate.main(["--merge", str(pooled)]) == 0              # pooled again: each run keeps its own
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["runs_by_tree"] == s["runs_by_tree"]
    bad = tmp_path / "bad-tree.json"
    bad.write_text(json.dumps({**doc, "runs": [dict(doc["runs"][0], tree=["x"])]}))
    assert calibrate.main(["--merge", str(bad)]) == 2
    assert capsys.readouterr().err.strip() == f"calibrate: {bad}: a tree is not a commit id"
    assert [r["source"] for r in doc["runs"]] == [str(a)] * 2 + [str(b)] * 3


def test_merge_refuses_another_setup_and_bad_files(tmp_path, monkeypatch, capsys):
    argv, a = _run(tmp_path, "a", 1, inject="tail_msm:0.03", monkeypatch=monkeypatch)
    calibrate.main(argv)
    argv, b = _run(tmp_path, "b", 1, inject="tail_msm:0.05", monkeypatch=monkeypatch)
    calibrate.main(argv)
    capsys.readouterr()
    pooled = tmp_path / "pooled.json"
    assert calibrate.main(["--merge", str(a), str(b), "--json", str(pooled)]) == 2
    assert capsys.readouterr().err.strip() == f"calibrate: {b}: measured under another set-up than {a} (inject)"
    assert not pooled.exists()
    cases = {"text.json": "not json", "other.json": json.dumps({"runs": []}),
             "bad-run.json": json.dumps({**json.loads(a.read_text()), "runs": [{"exit": 0, "flagged": ["x"],
                                                                                 "ratios": {}, "wall_s": 1}]})}
    for name, text in cases.items():
        (tmp_path / name).write_text(text)
        assert calibrate.main(["--merge", str(a), str(tmp_path / name)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith(f"calibrate: {tmp_path / name}: "), err


def test_merge_takes_only_json_beside_it(tmp_path):
    with pytest.raises(SystemExit):
        calibrate.main(["--merge", str(tmp_path / "a.json"), "--runs", "3"])


def test_a_json_path_that_cannot_be_written_is_refused_before_any_run(tmp_path, monkeypatch, capsys):
    argv, _ = _run(tmp_path, "a", 2, fail_at=0, monkeypatch=monkeypatch)      # a run would raise
    (tmp_path / "dir.json").mkdir()
    argv[argv.index("--json") + 1] = str(tmp_path / "dir.json")
    with pytest.raises(SystemExit) as e:
        calibrate.main(argv)
    assert e.value.code == 2 and str(tmp_path / "dir.json") in capsys.readouterr().err


def test_the_json_is_written_through_a_link(tmp_path, monkeypatch):
    argv, out = _run(tmp_path, "a", 1, monkeypatch=monkeypatch)
    target = tmp_path / "real.json"
    out.symlink_to(target)
    assert calibrate.main(argv) == 0
    assert out.is_symlink() and json.loads(target.read_text())["kind"] == calibrate.KIND


def test_the_tree_is_the_one_cuzk_commit_names_on_a_copied_checkout(tmp_path, monkeypatch):
    """A device machine's copy keeps a stale .git: the tree a run names is CUZK_COMMIT's (tools/device_setup.sh
    sets it from .device-commit), "-dirty" read as "+changes"; a malformed one names none rather than a stale one."""
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "f").write_text("x\n")
    for args in (("init", "-q"), ("add", "f"), ("-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "f")):
        calibrate._git(proj, *args)
    monkeypatch.delenv("CUZK_COMMIT", raising=False)
    stale = calibrate._git(proj, "rev-parse", "HEAD").strip()
    assert calibrate.tree_of(proj) == stale
    monkeypatch.setenv("CUZK_COMMIT", "ab" * 20)
    assert calibrate.tree_of(proj) == "ab" * 20
    monkeypatch.setenv("CUZK_COMMIT", "ab" * 20 + "-dirty")
    assert calibrate.tree_of(proj) == "ab" * 20 + "+changes"
    monkeypatch.setenv("CUZK_COMMIT", "main")
    assert calibrate.tree_of(proj) is None


def test_the_recorded_accuracy_runs_pool_with_the_next_ones():
    """docs/perf-data/gate-accuracy-h200-24 holds the H200 accuracy runs made so far (docs/perf-log.md): later runs
    pool with them (--merge) only under the same config and noise records, so an edit of tools/gate-cuda24.toml
    that would split the series fails here first, and the records still fit the config's sampling."""
    from cuzk.perf import gate_config
    d = ROOT / "docs/perf-data/gate-accuracy-h200-24"
    runs = sorted(d.glob("i*.json"))
    records = sorted(d.glob("noise24-*.jsonl"))
    assert runs and records
    for inject in {json.loads(p.read_text())["setup"]["inject"] for p in runs}:
        group = [p for p in runs if json.loads(p.read_text())["setup"]["inject"] == inject]
        setup, rows = calibrate.merge(group)
        assert setup["config_sha256"] == calibrate._sha(ROOT / "tools/gate-cuda24.toml")
        assert setup["noise_sha256"] == sorted(calibrate._sha(r) for r in records)
        assert all(r["exit"] in (0, 1) for r in rows)
    cfg = gate_config.load(ROOT / "tools/gate-cuda24.toml")
    for r in records:
        rec = json.loads(r.read_text().splitlines()[0])
        assert (rec["samples"], rec["rounds"], rec["min_device_sample_s"]) == (cfg.samples, cfg.rounds,
                                                                              cfg.min_device_sample_s)


def test_merge_refuses_a_run_pooled_twice_and_figures_that_are_no_measure(tmp_path, monkeypatch, capsys):
    """The same file twice, or a pooled file beside one of its own, would count its runs twice; a NaN wall time, a
    ratio that is no ratio, an exit that is no gate's, a file past the size a calibrate JSON may be: each exit 2,
    one line naming the file."""
    argv, a = _run(tmp_path, "a", 2, inject="tail_msm:0.03", monkeypatch=monkeypatch)
    assert calibrate.main(argv) == 0
    pooled = tmp_path / "pooled.json"
    assert calibrate.main(["--merge", str(a), "--json", str(pooled)]) == 0
    capsys.readouterr()
    for files in ([a, a], [pooled, a]):
        assert calibrate.main(["--merge", *map(str, files)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith(f"calibrate: {files[1]}: run 0 is one ") and "pooled twice" in err[0]
    doc = json.loads(a.read_text())
    run = doc["runs"][0]
    for i, bad in enumerate([dict(run, wall_s=float("nan")), dict(run, wall_s=-1.0), dict(run, exit=True),
                             dict(run, exit=7), dict(run, ratios={**run["ratios"], "cuda:tail_msm": -1.0}),
                             dict(run, ratios={**run["ratios"], "cuda:tail_msm": float("inf")})]):
        f = tmp_path / f"bad{i}.json"
        f.write_text(json.dumps({**doc, "runs": [bad]}))
        assert calibrate.main(["--merge", str(f)]) == 2, bad
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith(f"calibrate: {f}: a run is malformed"), err
    big = tmp_path / "big.json"
    with open(big, "wb") as fh:
        fh.truncate(calibrate.MAX_DOC_BYTES + 1)          # sparse: nothing read
    assert calibrate.main(["--merge", str(big)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"calibrate: {big}: ") and "more than" in err[0], err


def test_a_bad_noise_path_config_or_injection_is_one_line_before_the_project_is_copied(tmp_path, monkeypatch,
                                                                                       capsys):
    """--noise that is missing or holds no record, a phase the backend has no method for, a config that does not
    parse, a workdir already used, no runs asked for: exit 2, one line naming it, and the workdir never made. A folder of records is read as the gate reads it:
    the set-up holds its files' hashes."""
    from cuzk.perf import noise as noise_mod
    argv, out = _run(tmp_path, "a", 1, monkeypatch=monkeypatch)
    work = Path(argv[argv.index("--workdir") + 1])
    (tmp_path / "empty").mkdir()
    (tmp_path / "bad.toml").write_text("[gate]\nrounds = 'ten'\n")
    used = tmp_path / "used"
    used.mkdir()
    (used / "run0").mkdir()
    cases = [(["--noise", str(tmp_path / "missing.jsonl")], str(tmp_path / "missing.jsonl")),
             (["--noise", str(tmp_path / "empty")], "no *.jsonl noise records"),
             (["--inject", "b_g2:0.03"], "has no method b_g2"),
             (["--inject", "no_such:0.1"], "has no method no_such"),
             (["--config", str(tmp_path / "bad.toml")], str(tmp_path / "bad.toml")),
             (["--workdir", str(used)], f"--workdir {used}: not a new path or an empty folder"),
             (["--runs", "0"], "--runs 0: at least one gate run")]
    for extra, said in cases:
        assert calibrate.main(argv + extra) == 2, extra
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("calibrate: ") and said in err[0], (extra, err)
        assert not work.exists() and not out.exists()
    d = tmp_path / "records"
    d.mkdir()
    rec = noise_mod.make_record("h200", "c" * 40, 10, 9, [({"backend": "cuda", "circuit": "porep_partition",
                                                             "log_size": 24, "opts": "default"},
                                                            {"tail_msm": [0.001 * i for i in range(10)]})])
    (d / "r.jsonl").write_text(noise_mod.dumps(rec))
    assert calibrate.main(argv + ["--noise", str(d)]) == 0
    assert json.loads(out.read_text())["setup"]["noise_sha256"] == [calibrate._sha(d / "r.jsonl")]


def _doc(setup=None, runs=None) -> dict:
    """A calibrate JSON as the run mode writes it: one judged run of five cuda phases, A/A."""
    s = {"config": "c.toml", "config_sha256": "a" * 64, "inject": None, "noise_sha256": [], "record_noise": None,
         "tree": None, **(setup or {})}
    r = [{"run": 0, "exit": 0, "flagged": [], "wall_s": 1.0,
          "ratios": {f"cuda:{p}": 1.0 for p in ("prep_msm", "ntt_msm_h", "batch_addition", "tail_msm", "b_g2")}}]
    return {"kind": calibrate.KIND, "version": 1, "setup": s, "runs": runs if runs is not None else r}


def test_merge_refuses_an_injection_or_phase_key_it_cannot_read_before_printing(tmp_path, capsys):
    """An injection that is no PHASE:FRACTION list (or no string), a ratio or flagged key that is no BACKEND:PHASE:
    exit 2, one line naming the file, and nothing on stdout (no run printed before the input is known good)."""
    run = _doc()["runs"][0]
    cases = {"inject-word": _doc({"inject": "bogus"}), "inject-int": _doc({"inject": 5}),
             "inject-twice": _doc({"inject": "tail_msm:0.1,tail_msm:0.2"}),
             "key-bare": _doc({"inject": "tail_msm:0.1"}, [dict(run, ratios={"x": 1.0})]),
             "key-backend": _doc(None, [dict(run, ratios={"opencl:tail_msm": 1.0})]),
             "key-phase": _doc(None, [dict(run, ratios={"cuda:no_such": 1.0})]),
             "flag-twice": _doc(None, [dict(run, flagged=["cuda:b_g2", "cuda:b_g2"])])}
    for name, doc in cases.items():
        f = tmp_path / f"{name}.json"
        f.write_text(json.dumps(doc))
        assert calibrate.main(["--merge", str(f)]) == 2, name
        out, err = capsys.readouterr()
        err = err.strip().splitlines()
        assert out == "" and len(err) == 1 and err[0].startswith(f"calibrate: {f}: "), (name, out, err)
    ok = tmp_path / "ok.json"
    ok.write_text(json.dumps(_doc({"inject": "tail_msm:0.1"})))
    assert calibrate.main(["--merge", str(ok)]) == 0


def test_runs_that_tested_no_phase_or_not_the_slowed_one_are_no_measurement(tmp_path, monkeypatch, capsys):
    """A run the gate judged (exit 0 or 1) with no phase test is malformed; a pool with no test of an unslowed phase
    (no false alarm measured), or an injection whose slowed phase no judged run tested (no detection measured), is
    exit 2 said on stderr, never the 0 of an accuracy figure."""
    run = _doc()["runs"][0]
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps(_doc(None, [dict(run, exit=1, ratios={})])))
    assert calibrate.main(["--merge", str(empty)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.strip() == f"calibrate: {empty}: a run is malformed: {str(dict(run, exit=1, ratios={}))}"
    cases = {"other-phase": ("tail_msm:0.1", {"cuda:b_g2": 1.0}, "tail_msm"),
             "one-of-two": ("ntt_msm_h:0.03,tail_msm:0.03", {"cuda:tail_msm": 1.1, "cuda:b_g2": 1.0}, "ntt_msm_h"),
             "only-slowed": ("tail_msm:0.1", {"cuda:tail_msm": 1.1}, "no false alarm")}
    for name, (inject, ratios, said) in cases.items():
        f = tmp_path / f"{name}.json"
        f.write_text(json.dumps(_doc({"inject": inject}, [dict(run, ratios=ratios), dict(run, run=1, exit=2, ratios={})])))
        assert calibrate.main(["--merge", str(f)]) == 2, name
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("calibrate: ") and said in err[0], (name, err)
    monkeypatch.setattr(calibrate, "run_gate", lambda *a, **k: (0, {}, 1.0))      # a gate.json with no outcome
    argv, out = _run(tmp_path, "a", 2, monkeypatch=monkeypatch)
    monkeypatch.setattr(calibrate, "run_gate", lambda *a, **k: (0, {}, 1.0))
    assert calibrate.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no phase was tested" in err[0], err


def test_the_json_is_never_one_of_the_inputs(tmp_path, monkeypatch, capsys):
    """--json naming a --merge file, the config or a noise record (or one in a --noise folder) would overwrite what
    it reads: exit 2, one line naming it, nothing printed and the input as it was."""
    a = tmp_path / "a.json"
    a.write_text(json.dumps(_doc()))
    before = a.read_bytes()
    with pytest.raises(SystemExit) as e:
        calibrate.main(["--merge", str(a), "--json", str(a)])
    out, err = capsys.readouterr()
    assert e.value.code == 2 and out == "" and len(err.strip().splitlines()) == 1 and str(a) in err and "--merge" in err, err
    assert a.read_bytes() == before
    argv, _ = _run(tmp_path, "r", 1, fail_at=0, monkeypatch=monkeypatch)      # a run would raise
    work = Path(argv[argv.index("--workdir") + 1])
    noise = tmp_path / "noise"
    noise.mkdir()
    (noise / "r.jsonl").write_text("{}\n")
    config = tmp_path / "r" / "proj" / "perf-gate.toml"
    cases = [([], config, "--config"), (["--config", str(config)], config, "--config"),
             (["--noise", str(noise / "r.jsonl")], noise / "r.jsonl", "--noise"),
             (["--noise", str(noise)], noise / "r.jsonl", "--noise")]
    for extra, target, role in cases:
        before = target.read_bytes()
        args = argv + extra
        args[args.index("--json") + 1] = str(target)
        with pytest.raises(SystemExit) as e:
            calibrate.main(args)
        out, err = capsys.readouterr()
        assert e.value.code == 2 and out == "" and str(target) in err and role in err, (extra, err)
        assert target.read_bytes() == before and not work.exists()


def test_a_json_that_cannot_be_written_after_a_run_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    """A disk that fills during the runs (/dev/full: every write is ENOSPC) is one line naming the file, exit 2, not
    a traceback and exit 1; so is --merge's."""
    argv, a = _run(tmp_path, "a", 3, inject="tail_msm:0.03", monkeypatch=monkeypatch)
    argv[argv.index("--json") + 1] = "/dev/full"
    assert calibrate.main(argv) == 2
    cap = capsys.readouterr()
    assert cap.err == "calibrate: /dev/full: cannot write: No space left on device\n", cap.err
    assert len(cap.out.splitlines()) == 1                  # no run started after the one it could not keep
    argv, a = _run(tmp_path, "b", 1, inject="tail_msm:0.03", monkeypatch=monkeypatch)
    assert calibrate.main(argv) == 0
    capsys.readouterr()
    assert calibrate.main(["--merge", str(a), "--json", "/dev/full"]) == 2
    assert capsys.readouterr().err == "calibrate: /dev/full: cannot write: No space left on device\n"
