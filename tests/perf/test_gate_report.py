"""The gate's report as a perf engineer reads it: its first line names the verdict, the workload and
the phases; per phase the base and head medians come from the very samples the ratio is computed
from, and the ratio carries its confidence interval. Reports are rendered from crafted gate.json
files through `cuzk gate --from-json`, so every figure is known in advance."""
from __future__ import annotations

import json
import math
import os
import random
import re
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from cuzk.cli import main
from cuzk.perf import gate, gate_config, report
from cuzk.perf.calibrate import commit_change, make_repo
from cuzk.timing import PHASES

REPO = Path(__file__).resolve().parents[2]
SPEC = {"backend": "cuda", "circuit": "porep_like", "log_size": 18, "opts": "default", "batch": 1,
        "convention": "coeff", "generator": 7}


def _doc(levels: dict, rounds: int = 10, samples: int = 9, seed: int = 1, numbers=None) -> dict:
    """A gate.json: `levels[area] = (base seconds, head seconds)`, 1% noise, every round alike."""
    rng = random.Random(seed)
    numbers = numbers or {}
    rds = []
    for r in range(rounds):
        rd = {"order": ["base", "head"] if r % 2 == 0 else ["head", "base"]}
        for i, side in enumerate(("base", "head")):
            rd[side] = {"status": "ready", "gpu": None, "discards": [], "areas": {
                a: {"samples": [lv[i] * (1 + rng.gauss(0, 0.01)) for _ in range(samples)], "energy_j": [],
                    "states": [], "number": numbers.get(a, (1, 1))[i]} for a, lv in levels.items()}}
        rds.append(rd)
    return {"repo": "/r", "base": "a" * 40, "head": "b" * 40, "base_ref": "main", "head_ref": "HEAD",
            "exit_code": 0, "wall_s": 12.0, "harness_changed": False,
            "config": {"path": "perf-gate.toml", "rounds": rounds, "samples": samples, "alpha": 0.01,
                       "threshold": 0.05, "thresholds": {}, "areas": list(levels)},
            "outcomes": [{"spec": SPEC, "required": True, "status": "ok", "message": "", "rounds": rds,
                          "discards": 0, "comparisons": []}]}


def _render(tmp_path, doc, capsys) -> tuple[int, str]:
    f = tmp_path / "gate.json"
    f.write_text(json.dumps(doc))
    code = main(["gate", "--from-json", str(f)])
    return code, capsys.readouterr().out


def _row(md: str, area: str) -> list[str]:
    line = next(ln for ln in md.splitlines() if ln.startswith(f"| `{area}`"))
    return [c.strip() for c in line.strip("|").split("|")]


def _ms(cell: str) -> float:
    v, unit = cell.split()
    return float(v) * {"s": 1e3, "ms": 1.0, "µs": 1e-3}[unit]


def test_columns_agree_with_the_ratio_and_its_interval(tmp_path, capsys):
    doc = _doc({"tail_msm": (0.0200, 0.0220), "b_g2": (0.0050, 0.0050)})
    code, md = _render(tmp_path, doc, capsys)
    assert code == 1
    first = md.splitlines()[0]
    assert first.startswith("## cuzk gate **FAIL: regression**") and "`tail_msm`" in first
    assert "cuda porep_like 2^18 opts=default" in first and re.search(r"x1\.\d+ \[1\.\d+, 1\.\d+\]", first)
    for area in ("tail_msm", "b_g2"):
        phase, base, head, ratio, ci, p, threshold, could, verdict = _row(md, area)
        samples = {s: [x for rd in doc["outcomes"][0]["rounds"] for x in rd[s]["areas"][area]["samples"]]
                   for s in ("base", "head")}
        # the columns are the medians of every sample of each side, as printed (3 significant digits)
        assert _ms(base) == pytest.approx(statistics.median(samples["base"]) * 1e3, rel=5e-3)
        assert _ms(head) == pytest.approx(statistics.median(samples["head"]) * 1e3, rel=5e-3)
        lo, hi = (float(x) for x in ci.split(" – "))
        assert lo <= float(ratio) <= hi
        assert lo - 0.002 <= _ms(head) / _ms(base) <= hi + 0.002        # the columns agree with the ratio
    assert float(_row(md, "tail_msm")[3]) == pytest.approx(1.10, abs=0.01)
    assert _row(md, "tail_msm")[-1] == "**REGRESSION**" and _row(md, "b_g2")[-1] == "no change"
    assert re.search(r"\| (9[5-9]\.\d)% CI\s*\|", md)                       # the interval's exact coverage


def test_the_interval_is_the_order_statistics_of_the_round_ratios():
    from cuzk.perf.compare import median_ci
    d = [math.log(x) for x in (1.01, 1.03, 0.99, 1.10, 1.02, 1.00, 1.04, 1.05, 0.98, 1.02)]
    lo, hi, level = median_ci(d)
    xs = sorted(d)
    assert (lo, hi) == (xs[1], xs[8]) and level == pytest.approx(1 - 2 * 11 / 1024)
    assert median_ci(d, 0.99)[:2] == (xs[0], xs[9])


def test_bimodal_rounds_are_flagged_not_hidden(tmp_path, capsys):
    """Rounds in two states (the sides' medians 3x apart while the paired ratio is 1): the report says so."""
    doc = _doc({"proof_assembly": (0.001, 0.001)}, rounds=9)
    for r, rd in enumerate(doc["outcomes"][0]["rounds"]):
        for side, slow_from in (("base", 5), ("head", 4)):
            a = rd[side]["areas"]["proof_assembly"]
            if r >= slow_from:
                a["samples"] = [x * 3 for x in a["samples"]]
    code, md = _render(tmp_path, doc, capsys)
    assert code == 0 and md.startswith("## cuzk gate **PASS**")
    assert "disagree with the paired ratio" in md and re.search(r"`proof_assembly` \(x(2\.9|3\.0)", md)


def test_calls_per_sample_that_differ_are_flagged(tmp_path, capsys):
    doc = _doc({"proof_assembly": (0.001, 0.001)}, numbers={"proof_assembly": (1, 2)})
    code, md = _render(tmp_path, doc, capsys)
    assert "Calls per sample differ" in md and "`proof_assembly` base 1, head 2" in md


def test_a_file_that_is_not_a_gate_json_is_one_line_exit_2(tmp_path, capsys):
    f = tmp_path / "x.json"
    f.write_text('{"config": {}}')
    assert main(["gate", "--from-json", str(f)]) == 2
    err = capsys.readouterr().err
    assert str(f) in err and "not a gate.json" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("change, says", [
    (lambda d: d["config"].update(alpha=0.0), "alpha out of range"),          # no test could have fired: a PASS
    (lambda d: d["config"].update(alpha=1e-4), "no test could have fired"),   # below 2^-9, the 10 rounds' least
    (lambda d: d["outcomes"][0]["rounds"].pop(), "judged on 9 rounds, not the config's 10")])
def test_a_saved_verdict_that_could_not_have_been_measured_is_refused(tmp_path, capsys, change, says):
    doc = _doc({"tail_msm": (0.0200, 0.0220)})
    change(doc)
    f = tmp_path / "gate.json"
    f.write_text(json.dumps(doc))
    code = main(["gate", "--from-json", str(f)])
    err = capsys.readouterr().err
    assert code == 2 and says in err and len(err.strip().splitlines()) == 1, err


# --- a GPU runner's gate needs the GPU; a developer gates the CPU alone, and is told so ---

def _workflow_gate_step() -> tuple[str, dict]:
    wf = yaml.safe_load((REPO / ".github/workflows/perf-pr.yml").read_text())
    job = wf["jobs"]["gate"]
    (step,) = [s for s in job["steps"] if " gate " in s.get("run", "")]
    return step["run"].strip(), {**job.get("env", {}), **step.get("env", {})}


def test_the_workflow_gate_command_without_a_gpu_exits_2_and_says_so(tmp_path):
    from cuzk.backend import gpu_status
    if gpu_status()[0]:
        pytest.skip("this machine has a usable GPU")
    repo = tmp_path / "repo"
    make_repo(REPO, repo)
    commit_change(repo, "README.md", lambda t: t + "\nhead\n", "head")
    cmd, job_env = _workflow_gate_step()
    bindir = tmp_path / "runner/venv/bin"
    bindir.mkdir(parents=True)
    (bindir / "cuzk").write_text(f'#!/bin/sh\nexec {sys.executable} -m cuzk "$@"\n')
    (bindir / "cuzk").chmod(0o755)
    env = dict(os.environ, RUNNER_TEMP=str(tmp_path / "runner"), GITHUB_STEP_SUMMARY=str(tmp_path / "summary.md"),
               PYTHONPATH=str(REPO), **{k: str(v) for k, v in job_env.items()})
    p = subprocess.run(["bash", "-e", "-c", cmd], cwd=repo, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 2, p.stdout + p.stderr
    first = (tmp_path / "runner/gate-out/report.md").read_text().splitlines()[0]
    assert "FAIL: the GPU cannot run here" in first and "cuda porep_like 2^18 opts=default" in first
    assert "PASS" not in p.stdout
    assert (tmp_path / "summary.md").read_text().splitlines()[0] == first


def test_cpu_only_gates_the_cpu_and_says_only_the_cpu_was_gated(tmp_path):
    from test_gate_logic import FakeSpawn
    repo = tmp_path / "repo"
    base = make_repo(REPO, repo)
    head = commit_change(repo, "README.md", lambda t: t + "\nhead\n", "head")
    cfg = gate_config.load(REPO / "perf-gate.toml")
    cfg = gate_config.parse({**cfg.raw, "gate": {**cfg.raw["gate"], "rounds": 8, "samples": 3}}, cfg.path)
    assert {w.spec.backend for w in cfg.workloads} == {"cpu", "cuda"}
    only, left = gate.cpu_only(cfg)
    res = gate.run(repo, base, head, only, spawn=FakeSpawn(), log=lambda m: None, not_gated=left,
                   gpu_status=lambda: (False, "no GPU here"))
    md = report.markdown(res)
    assert res.exit_code == 0 and [o.config.spec.backend for o in res.outcomes] == ["cpu"]
    assert "**Only the CPU reference was gated**" in md and "cuda porep_like 2^18 opts=default" in md
    assert json.loads(json.dumps(res.as_dict()))["not_gated"][0]["spec"]["backend"] == "cuda"
    # without --cpu-only the same machine fails at once, before any round
    spawn = FakeSpawn()
    res = gate.run(repo, base, head, cfg, spawn=spawn, log=lambda m: None, gpu_status=lambda: (False, "no GPU"))
    assert res.exit_code == 2 and spawn.spawned == []
    assert report.markdown(res).startswith("## cuzk gate **FAIL: the GPU cannot run here**")
    with pytest.raises(ValueError, match="no cpu workload"):
        gate.cpu_only(gate_config.parse({"gate": {"rounds": 8}, "workload": [{"backend": "cuda"}]}))
    assert PHASES


# --- the bisect range the report prints ----------------------------------------------------------

def _commit(repo: Path, msg: str) -> str:
    return commit_change(repo, "README.md", lambda t: t + f"\n{msg}\n", msg)


def _result(repo: Path, base: str, head: str):
    from cuzk.perf.gate import GateConfig, GateResult
    return GateResult(str(repo), base, head, "base", "head", GateConfig(), [])


def test_a_pull_requests_merge_commit_is_bisected_over_the_pull_requests_commits(tmp_path):
    from cuzk.perf.calibrate import _git
    repo = tmp_path / "repo"
    base = make_repo(REPO, repo)
    _git(repo, "checkout", "-q", "-b", "pr")
    first = _commit(repo, "pr 1")
    _commit(repo, "pr 2")
    tip = _commit(repo, "pr 3")
    _git(repo, "checkout", "-q", "main")
    _git(repo, "merge", "-q", "--no-ff", "-m", "merge pr", "pr")
    merge = _git(repo, "rev-parse", "HEAD").strip()
    good, bad, note = report.bisect_range(_result(repo, base, merge))       # HEAD^1..HEAD, as perf-pr.yml gates
    assert (good, bad) == (base, tip) and "3 commits" in note
    # a one-commit pull request: the commit is named, no bisection is offered
    _git(repo, "checkout", "-q", "-b", "one", base)
    single = _commit(repo, "single")
    _git(repo, "checkout", "-q", "main")
    _git(repo, "reset", "-q", "--hard", base)
    _git(repo, "merge", "-q", "--no-ff", "-m", "merge one", "one")
    merge = _git(repo, "rev-parse", "HEAD").strip()
    good, bad, note = report.bisect_range(_result(repo, base, merge))
    assert good is None and single[:10] in note and "nothing to bisect" in note
    # a plain range of several commits is bisected as it is; one commit is the change itself
    assert report.bisect_range(_result(repo, base, tip))[:2] == (base, tip)
    assert report.bisect_range(_result(repo, base, first))[0] is None


def test_sampling_cost_adds_round_trips_and_leaves_out_what_is_not_a_time():
    """The report's Sampling line: round trips, the phases' calls in them (per-call value x calls) and the
    workers' collections, over rounds and sides; a crafted gate.json's non-numbers are left out, never raised."""
    import types
    from cuzk.perf.report import sampling_cost
    side = {"areas": {"tail_msm": {"samples": [0.01, 0.01], "number": 3, "asked_s": [0.2, 0.3], "gc_s": [0.1, None]},
                      "b_g2": {"samples": [0.02, "x"], "number": True, "asked_s": [float("nan"), 0.4], "gc_s": []}}}
    n, asked, calls, gc_s = sampling_cost(types.SimpleNamespace(rounds=[{"base": side, "head": side}]))[:4]
    assert (n, asked, calls, gc_s) == (4, pytest.approx(1.0), pytest.approx(0.12), pytest.approx(0.2))
    assert sampling_cost(types.SimpleNamespace(rounds=[{"base": {"areas": {"a": {"samples": [1.0]}}}}])) is None


def test_the_rounds_line_says_where_the_rounds_time_went():
    """Per round the gate keeps until both workers were ready, the sampling, and their quit and exit; the report
    adds them up beside the set-up steps the workers timed, and leaves out a round whose times are not times."""
    import types
    from cuzk.perf.report import round_times, rounds_line
    rd = {"times": {"ready_s": 9.5, "sampled_s": 5.5, "closed_s": 1.0},
          "base": {"setup_s": {"synthesis": 1.5, "key": 3.0, "odd": "x"}}, "head": {"setup_s": {"key": 4.0}}}
    bad = {"times": {"ready_s": float("nan"), "sampled_s": 1.0, "closed_s": 1.0}}
    got = round_times(types.SimpleNamespace(rounds=[rd, rd, bad, {"order": []}]))
    assert got == (2, 19.0, 11.0, 2.0, {"base": 9.0, "head": 8.0})
    assert rounds_line(*got) == ("Rounds: 2 in 32.0 s: the workers' start and set-up 19.0 s (the set-up steps they "
                                 "timed: base 9.0 s, head 8.0 s), sampling 11.0 s, their quit and exit 2.0 s.")
    assert round_times(types.SimpleNamespace(rounds=[bad])) is None


def test_the_sampling_line_splits_the_workers_time_where_they_said_it():
    """With each sample's measure() wall (host_s) and NVML checks (guard_s) from the workers, the round trips
    split into the timed calls, the collections, the set-up and host time past the timed calls, the NVML checks
    and the rest; a gate.json without them (or with a sample lacking one) keeps the older, coarser line."""
    import types
    from cuzk.perf.report import sampling_cost, sampling_line
    ar = {"samples": [0.01, 0.01], "number": 2, "asked_s": [0.05, 0.06], "gc_s": [0.001, 0.001],
          "host_s": [0.03, 0.03], "guard_s": [0.004, 0.006]}
    oc = types.SimpleNamespace(rounds=[{"base": {"areas": {"tail_msm": ar}}, "head": {"areas": {"tail_msm": ar}}}])
    got = sampling_cost(oc)
    assert got == (4, pytest.approx(0.22), pytest.approx(0.08), pytest.approx(0.004), pytest.approx(0.12),
                   pytest.approx(0.02))
    assert sampling_line(*got) == ("Sampling: 4 samples in 0.2 s of round trips: the phases' calls 0.1 s, the "
                                   "workers' full collections before them 0.0 s, each sample's set-up and the calls' "
                                   "host time past the timed 0.0 s, NVML checks 0.0 s, the rest 0.1 s (requests and "
                                   "replies, retaken samples and their pauses).")
    # the gate's own NVML reads, between the round trips: not a part of them
    assert sampling_line(*got, guard_outside=True).endswith(
        "host time past the timed 0.0 s, the rest 0.1 s (requests and replies); the gate's NVML checks between the "
        "samples 0.0 s, retaken samples and their pauses besides.")
    older = dict(ar, guard_s=[0.004, None])
    oc.rounds[0]["head"]["areas"]["tail_msm"] = older
    assert sampling_cost(oc)[4:] == (pytest.approx(0.12), None)
    assert "the rest 0.1 s (requests, each sample's set-up and NVML checks" in sampling_line(*sampling_cost(oc))


def test_the_report_says_what_the_idle_rival_ran_beside_the_samples():
    """Per phase the median and most of the idle rival's CPU beside a sample (rival_idle_ms) and where the most of
    any round was: on a GPU runner its driver thread's wake-ups, the runner's noise a reader should see."""
    import types
    from cuzk.perf.report import rival_idle
    rd = {"base": {"areas": {"b_g2": {"rival_idle_ms": [0.5, 3.9, None, 1.0]}}, "idle_cpu_ms": 3.9,
                   "idle_cpu_where": "b_g2: 12 (cuda-EvtHandlr) 3.9 ms"},
          "head": {"areas": {"b_g2": {"rival_idle_ms": [0.7]}, "tail_msm": {}}, "idle_cpu_ms": 0.7,
                   "idle_cpu_where": "b_g2: 13 (cuda-EvtHandlr) 0.7 ms"}}
    idle, where = rival_idle(types.SimpleNamespace(rounds=[rd]))
    assert idle == {"b_g2": (pytest.approx(0.85), 3.9, 4)} and where == "b_g2: 12 (cuda-EvtHandlr) 3.9 ms"
    assert rival_idle(types.SimpleNamespace(rounds=[{"base": {"areas": {"b_g2": {}}}}])) == ({}, None)


def test_the_report_says_whether_the_idle_rival_was_stopped():
    """The idle worker is stopped beside its rival's samples (gate.json's idle_stopped): the report says so only
    where both sides were, in every round; a gate.json from before the stop, or one side not stopped, reads not."""
    import types

    from cuzk.perf.report import idle_stopped
    both = {"base": {"idle_stopped": True}, "head": {"idle_stopped": True}}
    assert idle_stopped(types.SimpleNamespace(rounds=[both, both]))
    assert not idle_stopped(types.SimpleNamespace(rounds=[both, {**both, "head": {"idle_stopped": False}}]))
    assert not idle_stopped(types.SimpleNamespace(rounds=[both, {"base": {}, "head": {}}]))
    assert not idle_stopped(types.SimpleNamespace(rounds=[]))


def test_the_report_says_what_else_ran_on_the_sampling_cpu():
    """foreign_ms per sample, pooled per phase over rounds and sides; crafted non-numbers are left out."""
    import types

    from cuzk.perf.report import foreign_work
    rd = {"base": {"areas": {"b_g2": {"foreign_ms": [0.1, 4.0, None, True]}}},
          "head": {"areas": {"b_g2": {"foreign_ms": [0.3]}, "tail_msm": {}}}}
    assert foreign_work(types.SimpleNamespace(rounds=[rd])) == {"b_g2": (pytest.approx(0.3), 4.0, 3)}
