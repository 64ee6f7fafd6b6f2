"""What the asv suite measures: targets (backend:log_size), variants and sample counts.

Variants come from the optimization registry, so a new entry is benchmarked alone with no
edit here. CPU targets are small (the reference is slow); GPU targets skip without a GPU.
"""
from __future__ import annotations

from ..opts import describe, variants

CIRCUIT = "porep_like"
CPU_TARGETS = ["cpu:8", "cpu:10"]
# small while keys come from the Python test setup (2^18 takes minutes once, then is cached)
GPU_TARGETS = ["cuda:16", "cuda:18"]
TARGETS = CPU_TARGETS + GPU_TARGETS
SYNTHESIS_CIRCUITS = ["porep_like", "mulchain"]
SYNTHESIS_SIZES = [12, 16]

SAMPLES = {"cpu": 10, "cuda": 15}     # per asv process (one per benchmark and params); >= 7 a side
MIN_SAMPLE_S = {"cpu": 0.002, "cuda": 0.0}   # host-timed samples repeat short calls up to this


def variant_names() -> list[str]:
    return list(variants())


def variants_doc() -> str:
    """The variants with their one-line descriptions, from the registry (the asv site shows it)."""
    return "Variants (opts):\n" + "\n".join(f"- {v}: {describe(v)}" for v in variant_names())

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


def asv_params(area: str, spec) -> tuple | None:
    """The asv parameter tuple that matches a workload, or None where the suite has no such point."""
    if spec.batch != 1 or spec.opts not in variant_names() or (spec.convention, spec.generator) != ("coeff", 7):
        return None
    if area == "synthesis":
        ok = spec.circuit in SYNTHESIS_CIRCUITS and spec.log_size in SYNTHESIS_SIZES
        return (repr(spec.circuit), repr(spec.log_size), repr(spec.opts)) if ok else None
    target = f"{spec.backend}:{spec.log_size}"
    return (repr(target), repr(spec.opts)) if spec.circuit == CIRCUIT and target in TARGETS else None
