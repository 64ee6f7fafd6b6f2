"""The asv suite: `asv check` passes, discovery matches what the gate names, params follow the
registry, and a real `asv run -E existing` records >= 7 samples for a phase and publishes."""
from __future__ import annotations

import copy
import functools
import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from cuzk.perf import suite
from cuzk.timing import PHASES

REPO = Path(__file__).resolve().parents[2]
ASV = [sys.executable, "-m", "asv"]


@functools.lru_cache(maxsize=None)
def _discover_all(code: str = "") -> dict:
    """{"params": {name: params}, "skip": {name: skip tuples}} as asv_runner discovers the suite, in a fresh
    interpreter (after `code`). asv_runner checks a skip tuple before set-up and records the point as n/a."""
    prog = code + """
import json, sys
from asv_runner.discovery import disc_benchmarks
bs = list(disc_benchmarks(sys.argv[1]))
print(json.dumps({"params": {b.name: [list(p) for p in b.params] for b in bs},
                  "skip": {b.name: [[repr(x) for x in s] for s in b._skip_tuples] for b in bs}}))
"""
    p = subprocess.run([sys.executable, "-c", prog, str(REPO / "benchmarks")], cwd=REPO, capture_output=True,
                       text=True, check=True)
    return json.loads(p.stdout)


def _discover(code: str = "") -> dict:
    """Benchmarks as asv_runner discovers them: {name: params (asv's repr strings)}."""
    return copy.deepcopy(_discover_all(code)["params"])


def test_asv_check_passes(tmp_path):
    p = subprocess.run(ASV + ["check", "-E", f"existing:{sys.executable}"], cwd=REPO, capture_output=True,
                       text=True, env=dict(os.environ, HOME=str(tmp_path)))
    assert p.returncode == 0, p.stdout + p.stderr
    assert "No problems found" in p.stdout


def test_discovery_matches_the_gate_and_the_registry():
    found = _discover()
    for area, name in suite.ASV_TIME_BENCHMARKS.items():
        assert name in found, name
    gpu = [repr(t) for t in suite.GPU_TARGETS]
    for area in PHASES[1:] + ("proof",):
        params = found[suite.ASV_TIME_BENCHMARKS[area]]
        assert params == [[repr(t) for t in suite.TARGETS], [repr(v) for v in suite.variants_for(area)]]
        cls = suite.ASV_TIME_BENCHMARKS[area].rsplit(".", 1)[0]
        mem = "bench_proof.ProofDevice" if area == "proof" else cls + "Memory"
        assert found[mem + ".track_peak_device_bytes"] == [gpu, ["'default'"]]     # what ships, on the GPU
    assert found["bench_synthesis.Synthesis.track_time"][2] == [repr(v) for v in suite.measured_variants("synthesis")]
    assert "bench_synthesis.Synthesis.peakmem_synthesis" in found
    assert found["bench_proof.ProofDevice.track_energy_per_proof"] == [gpu, ["'default'"]]
    assert not any("_PhaseBench" in n or "_MemoryBench" in n or n.startswith("_phase") for n in found)


def _log_size(target: str) -> int:
    import ast
    return int(ast.literal_eval(target).rsplit(":", 1)[1])


def test_every_phase_has_a_cuda_target_at_porep_scale():
    """asv's own discovery: each phase (and the whole proof) has a benchmark on a cuda target of at least
    2^24, in what ships and in baseline; the phases after synthesis also at a whole partition (2^27),
    and the pipelined sector is tracked."""
    found = _discover()
    for area in PHASES + ("proof",):
        at_scale = [(n, p) for n, p in found.items() if n.startswith(suite.ASV_TIME_BENCHMARKS[area].split(".")[0] + ".")
                    and p and any(t.startswith("'cuda:") and _log_size(t) >= 24 for t in p[0])]
        assert at_scale, area
        variants = {v for _, p in at_scale for v in p[1]}
        assert {"'default'", "'baseline'"} <= variants, (area, variants)
    for area in suite.FULL_AREAS:
        name = suite.time_benchmark(area, suite.FULL_TARGETS[0])
        assert found[name] == [[repr(t) for t in suite.FULL_TARGETS], ["'default'"]]
        assert _log_size(repr(suite.FULL_TARGETS[0])) == 27
    for fig in suite.PIPELINE_FIGURES:
        assert found[f"bench_pipeline.PipelineAtFullScale.{fig}"] == []


def test_a_phase_is_measured_in_the_variants_of_the_toggles_that_touch_it():
    from cuzk.opts import REGISTRY
    for area in PHASES + ("proof",):
        got = suite.variants_for(area)
        assert got[0] == "default" and got[-1] == "baseline"
        for name, o in REGISTRY.items():
            v = f"default{'-' if o.default else '+'}{name}"
            assert (v in got) == (area in o.phases or (area == "proof" and bool(set(o.phases) - {"synthesis"}))), v


def test_a_cpu_target_is_measured_only_in_the_variants_its_backend_reads():
    """The CPU reference's phases read no toggle: each phase at a CPU target is `default` alone, every other
    point of asv's grid a declared skip; host synthesis keeps the toggles it reads, and baseline."""
    from cuzk.opts import REGISTRY
    all_skips = _discover_all()["skip"]
    for area in PHASES[1:] + ("proof",):
        name = suite.ASV_TIME_BENCHMARKS[area]
        skips = {tuple(s) for s in all_skips[name]}
        assert skips == {(repr(t), repr(v)) for t in suite.CPU_TARGETS for v in suite.variants_for(area)
                         if v != "default"}, area
        for t in suite.CPU_TARGETS:
            assert suite.measured_variants(area, t) == ["default"]
        for t in suite.GPU_TARGETS:
            assert suite.measured_variants(area, t) == suite.variants_for(area)
    host = [f"default{'-' if o.default else '+'}{n}" for n, o in REGISTRY.items()
            if "synthesis" in o.phases and "cpu" in o.backends]
    assert host and suite.measured_variants("synthesis") == ["default"] + host + ["baseline"]
    assert not any(all_skips[n] for n in all_skips if not n.startswith(tuple(suite.ASV_TIME_BENCHMARKS.values())))


def test_the_cpu_reference_reads_only_the_toggles_declared_for_it(monkeypatch):
    """The registry's `backends` is what the code reads: a CPU workload (synthesis, every phase, a whole
    proof) asks for exactly the toggles declared for "cpu", so no CPU variant is dropped that differs."""
    from cuzk.opts import REGISTRY, OptSet
    from cuzk.perf.workload import AREAS, Spec, Workload
    asked = set()
    real_enabled, real_get = OptSet.enabled, OptSet.__getitem__
    monkeypatch.setattr(OptSet, "enabled", lambda self, n: asked.add(n) or real_enabled(self, n))
    monkeypatch.setattr(OptSet, "__getitem__", lambda self, n: asked.add(n) or real_get(self, n))
    for circuit in suite.SYNTHESIS_CIRCUITS:
        w = Workload(Spec(circuit=circuit, log_size=8, opts="baseline"))
        for area in AREAS:
            w.measure(area)
    assert asked == {n for n, o in REGISTRY.items() if "cpu" in o.backends}


def test_a_new_registry_entry_is_benchmarked_without_editing_benchmarks():
    found = _discover("""
from cuzk.opts import Optimization, register
register(Optimization("TESTOPT", ("tail_msm",), "test entry", False, "none"))
""")
    assert "'default+TESTOPT'" in found["bench_tail_msm.TailMsm.track_time"][1]
    assert "'default+TESTOPT'" in found["bench_proof.Proof.track_time"][1]
    assert "'default+TESTOPT'" not in found["bench_b_g2.BG2.track_time"][1]            # TESTOPT does not touch b_g2
    assert "'default+TESTOPT'" not in found["bench_synthesis.Synthesis.track_time"][2]


def test_the_nightly_suite_fits_its_budget_and_the_estimate_counts_what_asv_runs():
    """The parameter count is held against the budget as the registry grows."""
    import itertools
    found = _discover_all()
    points = sum(len(list(itertools.product(*p))) if p else 1 for n, p in found["params"].items()
                 if not n.startswith("bench_snarkjs"))
    skipped = sum(len(s) for s in found["skip"].values())
    c = suite.cost()
    assert c["points"] + c["skipped"] == points and c["skipped"] == skipped
    assert c["seconds"] <= suite.NIGHTLY_BUDGET_S, f"{points} points, ~{c['seconds'] / 60:.0f} min"


def test_the_pr_gate_fits_its_budget():
    from cuzk.perf import gate_config
    cfg = gate_config.load(REPO / "perf-gate.toml")
    est = suite.gate_estimate_s(cfg)
    assert est is not None and est <= suite.GATE_BUDGET_S
    # device samples repeated up to min_device_sample_s: at most that much a phase, side and paired sample more
    gpu_phase_samples = sum(len(cfg.areas_for(w)) for w in cfg.workloads if w.spec.backend != "cpu")
    assert cfg.min_device_sample_s > 0 and gpu_phase_samples > 0
    extra = est - suite.gate_estimate_s(replace(cfg, min_device_sample_s=0.0))
    assert extra == pytest.approx(cfg.rounds * cfg.samples * 2 * gpu_phase_samples * cfg.min_device_sample_s)


@pytest.fixture(scope="module")
def asv_repo(tmp_path_factory):
    from asv_synth import machine_repo
    return machine_repo(REPO, tmp_path_factory.mktemp("asv-run"), "ci-test")


def test_asv_run_existing_records_samples_and_publishes(asv_repo):
    d, sha, env = asv_repo
    bench = r"bench_tail_msm\.TailMsm\.track_time\('cpu:8', 'default'\)"
    p = subprocess.run(ASV + ["run", "-E", f"existing:{sys.executable}", "--set-commit-hash", sha,
                              "--record-samples", "--machine", "ci-test", "--bench", bench, "--show-stderr"],
                       cwd=d, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    files = [f for f in (d / ".asv/results/ci-test").glob("*.json") if f.name != "machine.json"]
    assert len(files) == 1
    res = json.loads(files[0].read_text())
    cols = res["result_columns"]
    row = dict(zip(cols, res["results"]["bench_tail_msm.TailMsm.track_time"]))
    targets, opts = row["params"]
    i = targets.index("'cpu:8'") * len(opts) + opts.index("'default'")
    samples = row["samples"][i]
    assert len(samples) >= 7 and all(s > 0 for s in samples)
    assert row["result"][i] > 0
    p = subprocess.run(ASV + ["publish"], cwd=d, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    assert (d / ".asv/html/index.html").exists()


def test_asv_exit_code_2_when_a_benchmark_errors(asv_repo):
    """What `cuzk nightly` relies on: asv reports a failing benchmark with exit code 2."""
    d, sha, env = asv_repo
    broken = d / "benchmarks" / "bench_zz_broken.py"
    broken.write_text("def track_broken():\n    raise RuntimeError('broken on purpose')\n")
    try:
        p = subprocess.run(ASV + ["run", "-E", f"existing:{sys.executable}", "--set-commit-hash", sha,
                                  "--machine", "ci-test", "--bench", "track_broken"], cwd=d, capture_output=True,
                           text=True, timeout=300, env=env)
    finally:
        broken.unlink()
    assert p.returncode == 2, p.stdout + p.stderr


def test_variants_are_default_one_toggle_flipped_and_baseline_each_described():
    from cuzk.opts import REGISTRY, describe, resolve, variants
    v = variants()
    flipped = {n for n in v if n not in ("default", "baseline")}
    assert flipped == {f"default{'-' if o.default else '+'}{o.name}" for o in REGISTRY.values()}
    assert v["default"] == resolve(None) and v["baseline"] == resolve("none")
    for name, o in REGISTRY.items():
        sign = "-" if o.default else "+"
        d = dict(v[f"default{sign}{name}"].flags)
        assert d[name] is (not o.default)
        assert {k: x for k, x in d.items() if k != name} == {k: x for k, x in v["default"].flags if k != name}
        assert o.intent in describe(f"default{sign}{name}")
    out = subprocess.run([sys.executable, "-m", "cuzk", "opts"], capture_output=True, text=True, check=True).stdout
    assert all(f"| {n} " in out and f"| default{'-' if o.default else '+'}{n} " in out for n, o in REGISTRY.items())


def test_a_removed_toggle_leaves_no_variant():
    found = _discover("""
from cuzk import opts
del opts.REGISTRY["A4"]
""")
    names = found["bench_b_g2.BG2.track_time"][1]
    assert "'default+A4'" not in names and "'default-D4'" in names


def test_full_scale_benchmarks_share_one_set_up_and_skip_without_a_gpu(asv_repo):
    """A real `asv run` of every whole-partition benchmark: asv runs the one setup_cache they inherit once,
    and on a machine without a GPU each reports a skip (NaN), exit 0 (tests/perf/test_asv_env.py holds the
    failure when a GPU is present but unusable)."""
    from cuzk.backend import gpu_present
    if gpu_present()[0]:
        pytest.skip("a GPU is present: this is the no-GPU path")
    d, sha, env = asv_repo
    p = subprocess.run(ASV + ["run", "-E", f"existing:{sys.executable}", "--set-commit-hash", sha, "--machine",
                              "ci-test", "--bench", r"AtFullScale\.track_time|PipelineAtFullScale", "--show-stderr"],
                       cwd=d, env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.count("Setting up _phase:") == 1, p.stdout
    assert p.stdout.count("Setting up bench_pipeline:") == 1, p.stdout
    files = [f for f in (d / ".asv/results/ci-test").glob("*.json") if f.name != "machine.json"]
    res = json.loads(max(files, key=lambda f: f.stat().st_mtime).read_text())
    cols = res["result_columns"]
    names = [suite.time_benchmark(a, suite.FULL_TARGETS[0]) for a in suite.FULL_AREAS]
    names += [f"bench_pipeline.PipelineAtFullScale.{f}" for f in suite.PIPELINE_FIGURES]
    for n in names:
        row = dict(zip(cols, res["results"][n]))
        # asv writes a skip as NaN and a failure as null: skipped, no figure
        assert len(row["result"]) == 1 and row["result"][0] != row["result"][0], (n, row)


def test_the_snarkjs_ratio_of_proofs_that_do_not_verify_fails_the_point(monkeypatch):
    """The ratio was tracked even where a proof failed verification, where `cuzk bench-snarkjs` exits 1."""
    from benchmarks import bench_snarkjs
    row = {"verified": False, "ratio_cli": 3.0, "ratio_resident": 9.0}
    monkeypatch.setattr(bench_snarkjs, "_files", lambda k: {})
    monkeypatch.setattr(bench_snarkjs.sb, "run", lambda *a, **k: [row])
    monkeypatch.setattr(bench_snarkjs, "_memo", {})
    with pytest.raises(RuntimeError, match="2\\^12: a proof did not verify"):
        bench_snarkjs.Ratio().setup(12)
    monkeypatch.setattr(bench_snarkjs, "_memo", {})
    row["verified"] = True
    r = bench_snarkjs.Ratio()
    r.setup(12)
    assert (r.track_ratio_cli(12), r.track_ratio_resident(12)) == (3.0, 9.0)
