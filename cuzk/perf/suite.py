"""What the asv suite measures: targets (backend:log_size), variants, sample counts, and what it costs.

Variants come from the optimization registry, so a new entry is benchmarked with no edit here. A
phase is measured in `default`, `baseline` and the variants of the toggles that touch it (the
registry's `phases`) and that the target's backend reads (the registry's `backends`): any other
variant would only measure `default` again. The CPU reference's phases read no toggle, so a CPU target
is measured in `default` alone (asv's grid keeps its other variants as declared skips).
CPU targets are small (the reference is slow); GPU targets skip without a GPU.
"""
from __future__ import annotations

from ..opts import REGISTRY, honoured, variants
from ..timing import PHASES

CIRCUIT = "porep_like"
CPU_TARGETS = ["cpu:8", "cpu:10"]
# small while keys come from the Python test setup (2^18 takes minutes once, then is cached)
GPU_TARGETS = ["cuda:16", "cuda:18"]
TARGETS = CPU_TARGETS + GPU_TARGETS
# PoRep scale: a partition's circuit, its key made on the GPU; measured in what ships (and baseline)
SCALE_TARGETS = ["cuda:porep_partition:24"]
SCALE_VARIANTS = ["default", "baseline"]
# A whole partition (2^27, the size a 32 GiB sector's PoRep proves): one set-up a run for all its phases
# (asv setup_cache; cuzk/perf/full_scale.py), in what ships only
FULL_TARGETS = ["cuda:porep_partition:27"]
FULL_VARIANTS = ["default"]
FULL_AREAS = list(PHASES[1:])          # every phase after synthesis
# A sector proved pipelined (cuzk bench --pipeline): seconds per proof, GPU busy fraction, wall
PIPELINE = {"circuit": "porep_partition", "log_size": 27, "circuits": 10}
PIPELINE_FIGURES = ["track_s_per_proof", "track_gpu_busy_fraction", "track_wall_s"]
# The gap to the peer (benchmarks/bench_peer.py, cuzk/perf/peer.py): cuzk / sppark per op and log size
PEER_POINTS = ["msm_g1:20", "msm_g1:24", "msm_g1:26", "ntt:24", "ntt:27"]
ALL_TARGETS = TARGETS + SCALE_TARGETS + FULL_TARGETS
SYNTHESIS_CIRCUITS = ["porep_like", "mulchain"]
SYNTHESIS_SIZES = [12, 16]
SYNTHESIS_BACKEND = "cpu"          # bench_synthesis.Synthesis: host synthesis, no device assignment

SAMPLES = {"cpu": 10, "cuda": 15}     # per asv process (one per benchmark and params); >= 7 a side
MIN_SAMPLE_S = {"cpu": 0.002, "cuda": 0.0}   # host-timed samples repeat short calls up to this
WARMUP_S = {"cpu": 0.1, "cuda": 0.2}         # untimed calls first in each asv process


MEMORY_VARIANTS = ["default"]          # peak device memory and energy: what ships

# `asv continuous` is a look at what a change moved on one machine, not the pull-request gate (that is
# `cuzk gate`: per-phase thresholds from measured noise, fresh workers interleaved, trust checks). With
# one process a side, asv's test compares two processes whose samples sit tightly around values that
# differ from process to process, and flagged A/A pairs; so each side gets CONTINUOUS_ROUNDS processes
# (asv interleaves the commits' rounds) and a change is reported past CONTINUOUS_FACTOR. Fitted on the
# CPU targets (prep_msm and proof_assembly at cpu:8 and cpu:10, a 2-vCPU VM at load 1.6-2.5, 2026-12-03,
# 8 A/A tries each): the largest ratio of 32 was 1.09 (rms of ln 0.030) with these settings, 2.24
# (rms 0.180) with one process a side and samples sized on a cold call (Workload.calibrate). At load
# 4-5 no factor holds (A/A ratios to 3x). tests/perf/test_asv_aa.py holds an A/A pair to no change and a
# 2x slowdown to a report.
CONTINUOUS_ROUNDS = 3
CONTINUOUS_FACTOR = 1.25

# Seconds per asv parameter point (one process: start-up, set-up, samples), for the cost estimate.
# cpu: measured here on 2026-12-01 (interpreter and imports ~1.5 s; set-up 0.25 s at 2^8, 1.0 s at
# 2^10). cuda:18: the H200 gate rounds of 2026-12-01, 12-15 s for two workers' set-up and 35 samples
# each (docs/perf-log.md); cuda:16 taken as the same.
# cuda:porep_partition:24: one asv point (TailMsmAtScale, default) took 60 s on the H200 on 2026-12-01,
# nearly all of it the partition's synthesis and its key made on the GPU.
POINT_S = {"cpu:8": 2.0, "cpu:10": 3.0, "cuda:16": 7.0, "cuda:18": 7.0, "cuda:porep_partition:24": 60.0}
# Estimates until measured on the runner (docs/perf-log.md): a 2^27 partition's one set-up is its synthesis
# (~14 s), its key made on the GPU (~8x the 7.8 s at 2^24) and a phase pass (~1.4 s), then 15 samples
# of six phases (~1.4 s a round); the pipelined sector is another key, the warm-up and ~25 s of proofs.
# Each benchmark that reads a shared set-up still costs a process (~5 s).
FULL_SETUP_S = 180.0
PIPELINE_SETUP_S = 240.0
# the peer's one set-up: its build (~20 s with nvcc here, once per commit of the shim) and every point's inputs
# and 6 calls a side (2^26's bases made on the GPU): an estimate until measured
PEER_SETUP_S = 180.0
CACHED_POINT_S = 5.0
SYNTHESIS_POINT_S = {12: 2.0, 16: 4.0}
# a declared skip (a CPU target in a variant its backend does not read) still costs asv one process:
# the interpreter and the suite's imports, no set-up
SKIPPED_POINT_S = 0.5
# a partition's synthesis at 2^24 on the GPU backend: build ~4 s (2-core dev machine, 2^20 x 16) and the
# device assignment, 15 samples and the warm-up: an estimate until measured
SYNTHESIS_SCALE_POINT_S = 75.0
NIGHTLY_BUDGET_S = 2 * 3600            # the whole suite on one GPU runner, every night
GATE_BUDGET_S = 15 * 60                # the PR gate with perf-gate.toml, on one GPU runner


def continuous_args() -> list[str]:
    """The README's `asv continuous` settings; samples are recorded by default there."""
    return ["--interleave-rounds", "-a", f"rounds={CONTINUOUS_ROUNDS}", "--factor", f"{CONTINUOUS_FACTOR}",
            "--split"]


def variant_names() -> list[str]:
    return list(variants())


def is_timing(benchmark: str) -> bool:
    """Whether an asv benchmark's values are seconds (`time_*`, the suite's `track_time`)."""
    return benchmark.rsplit(".", 1)[-1].startswith(("time_", "track_time"))


def touches(area: str, name: str) -> bool:
    """Whether toggle `name` can change `area` (a whole proof: every phase after synthesis)."""
    phases = REGISTRY[name].phases
    return area in phases or (area == "proof" and any(p != "synthesis" for p in phases))


def backend_of(target: str) -> str:
    """'cuda:porep_partition:24' -> 'cuda'."""
    return target.split(":", 1)[0]


def variants_for(area: str, backend: str | None = None) -> list[str]:
    """default, default-X / default+X for each toggle X that touches `area`, baseline. On `backend`
    (None: any), only the toggles its code reads, and baseline only where that leaves one to turn off
    or the backend reads toggles of the proving phases (every toggle off is then a state of its own)."""
    toggles = [v for v in variant_names() if v not in ("default", "baseline") and touches(area, v[8:])
               and (backend is None or honoured(v[8:], backend))]
    proving = backend is None or any(honoured(n, backend) and set(o.phases) - {"synthesis"}
                                     for n, o in REGISTRY.items())
    return ["default"] + toggles + (["baseline"] if toggles or proving else [])


def cost() -> dict:
    """The nightly suite's measured parameter points, the declared skips of asv's grid (a CPU target
    in a variant its backend does not read) and the estimated seconds, from the declarations the
    benchmarks use (tests hold this against asv's own discovery)."""
    pts, skipped, secs = 0, 0, 0.0
    for area in ASV_TIME_BENCHMARKS:
        if area == "synthesis":
            n = len(SYNTHESIS_CIRCUITS) * len(variants_for("synthesis", SYNTHESIS_BACKEND))
            pts += 2 * n * len(SYNTHESIS_SIZES)                 # track_time and peakmem_synthesis
            secs += 2 * n * sum(SYNTHESIS_POINT_S[k] for k in SYNTHESIS_SIZES)
            pts += len(SCALE_VARIANTS) * len(SCALE_TARGETS)      # SynthesisAtScale
            secs += len(SCALE_VARIANTS) * len(SCALE_TARGETS) * SYNTHESIS_SCALE_POINT_S
            continue
        declared = len(variants_for(area))
        for t in TARGETS:
            m = len(measured_variants(area, t))
            pts += m
            skipped += declared - m
            secs += m * POINT_S[t] + (declared - m) * SKIPPED_POINT_S
        pts += len(SCALE_VARIANTS) * len(SCALE_TARGETS)         # the same at PoRep scale
        secs += len(SCALE_VARIANTS) * sum(POINT_S[t] for t in SCALE_TARGETS)
        if area in FULL_AREAS:                                  # a whole partition: the shared set-up
            pts += len(FULL_VARIANTS) * len(FULL_TARGETS)
            secs += len(FULL_VARIANTS) * len(FULL_TARGETS) * CACHED_POINT_S
        extra = 2 if area == "proof" else 1                     # peak device memory (and energy per proof)
        pts += extra * len(MEMORY_VARIANTS) * len(GPU_TARGETS)
        secs += extra * len(MEMORY_VARIANTS) * sum(POINT_S[t] for t in GPU_TARGETS)
    secs += len(FULL_VARIANTS) * len(FULL_TARGETS) * FULL_SETUP_S
    pts += len(PIPELINE_FIGURES)
    secs += PIPELINE_SETUP_S + len(PIPELINE_FIGURES) * CACHED_POINT_S
    pts += len(PEER_POINTS)
    secs += PEER_SETUP_S + len(PEER_POINTS) * CACHED_POINT_S
    return {"points": pts, "skipped": skipped, "seconds": secs, "budget_s": NIGHTLY_BUDGET_S}

# area -> the asv benchmark that times it (tests check these against asv's own discovery)
ASV_TIME_BENCHMARKS = {
    "synthesis": "bench_synthesis.Synthesis.track_time",
    "prep_msm": "bench_prep_msm.PrepMsm.track_time",
    "ntt_msm_h": "bench_ntt_msm_h.NttMsmH.track_time",
    "batch_addition": "bench_batch_addition.BatchAddition.track_time",
    "tail_msm": "bench_tail_msm.TailMsm.track_time",
    "b_g2": "bench_b_g2.BG2.track_time",
    "proof_assembly": "bench_proof_assembly.ProofAssembly.track_time",
    "proof": "bench_proof.Proof.track_time",
}


def time_benchmark(area: str, target: str | None = None) -> str:
    """The asv benchmark that times `area` at `target`: PoRep-scale targets have classes of their own
    (`TailMsmAtScale`, `TailMsmAtFullScale`), measured in SCALE_VARIANTS / FULL_VARIANTS only."""
    name = ASV_TIME_BENCHMARKS[area]
    cls, method = name.rsplit(".", 1)
    if target in SCALE_TARGETS:
        return f"{cls}AtScale.{method}"
    if target in FULL_TARGETS:
        if area not in FULL_AREAS:
            raise KeyError(f"{area} is not measured at {target}; there: {', '.join(FULL_AREAS)}")
        return f"{cls}AtFullScale.{method}"
    return name


def measured_variants(area: str, target: str | None = None) -> list[str]:
    """The variants the suite measures `area` in at `target` (every target: None)."""
    if target in SCALE_TARGETS:
        return SCALE_VARIANTS
    if target in FULL_TARGETS:
        return FULL_VARIANTS if area in FULL_AREAS else []
    if area == "synthesis":
        return variants_for(area, SYNTHESIS_BACKEND)
    return variants_for(area, backend_of(target) if target else None)


def asv_params(area: str, spec) -> tuple | None:
    """The asv parameter tuple that the suite measures for a workload, or None where it has no such point."""
    if spec.batch != 1 or (spec.convention, spec.generator) != ("coeff", 7):
        return None
    target = spec.target(CIRCUIT)
    if area == "synthesis" and target in SCALE_TARGETS:
        return (repr(target), repr(spec.opts)) if spec.opts in SCALE_VARIANTS else None
    if area == "synthesis":
        ok = (spec.circuit in SYNTHESIS_CIRCUITS and spec.log_size in SYNTHESIS_SIZES
              and spec.opts in measured_variants(area))
        return (repr(spec.circuit), repr(spec.log_size), repr(spec.opts)) if ok else None
    if target in TARGETS or target in SCALE_TARGETS or target in FULL_TARGETS:
        return (repr(target), repr(spec.opts)) if spec.opts in measured_variants(area, target) else None
    return None


# A gate round: its two workers' set-up (at once) and, per paired sample, both sides' calls of every phase
# with their overhead (a request, a collection, NVML). (set-up s, s per paired sample), from measured
# rounds with each worker on one CPU (worker_cpus = 1), H200 (docs/perf-log.md): cuda:18
# tools/gate-cuda18.toml, 2026-12-01/02, 8 rounds x 5 samples in 102-126 s; cuda:porep_partition:24
# tools/gate-cuda24.toml at ee8d5fe, 2026-12-04, 10 rounds x 9 samples in 151-168 s (nine runs; 55.8 s of
# round trips in a 150 s one, 0.62 s a paired sample; the rest, ~9.5 s a round, set-up with the device key
# cache and the workers' start; prep_msm's ~8 calls are in it, so the allowance below counts them twice);
# cpu:10: perf-gate.toml's CPU workload on the 2-core dev machine, 10 rounds x 9 samples in 25.6 s.
GATE_ROUND_S = {"cpu:8": (0.9, 0.1), "cpu:10": (1.2, 0.15), "cuda:16": (11.0, 0.92), "cuda:18": (11.0, 0.92),
                "cuda:porep_partition:24": (10.0, 0.62)}


def gate_estimate_s(cfg) -> float | None:
    """A gate's seconds: rounds x each workload's round (set-up + samples x a paired sample's cost);
    None where a workload's target has no figure in GATE_ROUND_S. The figures are of one-call device samples: a
    GPU workload's paired sample adds at most min_device_sample_s a phase and side (a phase shorter than that
    is repeated up to it)."""
    per = [GATE_ROUND_S.get(w.spec.target(CIRCUIT)) for w in cfg.workloads]
    if None in per:
        return None
    return cfg.rounds * sum(
        setup + cfg.samples * (pair + (2 * len(cfg.areas_for(w)) * cfg.min_device_sample_s
                                       if w.spec.backend != "cpu" else 0.0))
        for w, (setup, pair) in zip(cfg.workloads, per))
