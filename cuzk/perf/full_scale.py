"""The nightly's production-size figures: a whole PoRep partition's phases, and a sector proved pipelined.

Both are too large to set up once per asv process (a 2^27 partition's key is ~45 GiB, made on the GPU
in about a minute), so each is measured once per asv run in a `setup_cache` (benchmarks/_phase.py,
benchmarks/bench_pipeline.py) and its figures shared by the benchmarks that report them:
- `partition_samples`: one Workload per (target, variant) of suite.FULL_TARGETS x FULL_VARIANTS, every
  phase after synthesis sampled round-robin, as the gate's workers sample;
- `pipeline_figures`: `cuzk bench --pipeline` over suite.PIPELINE's sector (10 partitions at 2^27, key
  made on the GPU), run as a command: seconds per proof, the GPU's busy fraction, the wall time, and
  every proof verified (an unverified run is an error, never a figure).
Without a GPU both return {"unavailable": why} and the benchmarks skip; with a GPU that cannot run, or
CUZK_REQUIRE_GPU set, they raise workload.GpuUnusable: a failure.
"""
from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from . import sampler, suite, workload


def _gpu_check() -> dict | None:
    """None where the cuda backend runs here; {"unavailable": why} on a machine without a GPU (asv skips);
    GpuUnusable where a GPU is present but cannot run, or one is required (the rule every workload keeps)."""
    try:
        workload.Workload(workload.Spec(backend="cuda")).ensure_backend()
    except workload.Unavailable as e:
        return {"unavailable": str(e)}
    return None


def key(target: str, opts: str) -> str:
    return f"{target}|{opts}"


def partition_samples(n: int | None = None) -> dict:
    """{"samples": {key(target, opts): {area: [seconds]}}, "setup_s": {...}}, or {"unavailable": why}."""
    miss = _gpu_check()
    if miss is not None:
        return miss
    n = n or suite.SAMPLES["cuda"]
    out = {"samples": {}, "setup_s": {}}
    for target in suite.FULL_TARGETS:
        for opts in suite.FULL_VARIANTS:
            w = workload.Workload(workload.Spec.parse_target(target, circuit=suite.CIRCUIT, opts=opts)).prepare()
            got = sampler.sample_areas(w, suite.FULL_AREAS, n)
            out["samples"][key(target, opts)] = {a: s.values for a, s in got.sets.items()}
            out["setup_s"][key(target, opts)] = w.setup_s
            del w, got
            _free_device()
    return out


def _free_device() -> None:
    gc.collect()
    try:
        import cupy
        cupy.get_default_memory_pool().free_all_blocks()
        cupy.get_default_pinned_memory_pool().free_all_blocks()
    except ImportError:
        pass


def figures(report: dict, path: str = "bench JSON") -> dict:
    """The tracked figures of one `cuzk bench --pipeline --json` report."""
    try:
        pipe = report["pipeline"]
        verified = report["verified"]
        wall, busy = pipe["wall_s"], pipe["gpu_busy_s"]
        out = {"s_per_proof": pipe["s_per_proof"], "wall_s": wall, "proofs": pipe["circuits"],
               "gpu_busy_fraction": None if busy is None else busy / wall}
    except (KeyError, TypeError, ZeroDivisionError) as e:
        raise RuntimeError(f"{path}: not a pipelined bench report ({type(e).__name__}: {e})") from e
    if verified is not True:
        raise RuntimeError(f"{path}: the pipelined run's proofs did not all verify: no figure")
    if out["gpu_busy_fraction"] is None:
        raise RuntimeError(f"{path}: the run recorded no device spans: no GPU busy fraction")
    return out


def pipeline_figures(timeout_s: float = 3000) -> dict:
    """suite.PIPELINE's sector proved pipelined on the GPU, as `cuzk bench --pipeline` proves it."""
    miss = _gpu_check()
    if miss is not None:
        return miss
    p = suite.PIPELINE
    with tempfile.TemporaryDirectory(prefix="cuzk-pipeline-") as tmp:
        out = Path(tmp) / "bench.json"
        cmd = [sys.executable, "-m", "cuzk", "bench", "--backend", "cuda", "--circuit", p["circuit"],
               "--log-size", str(p["log_size"]), "--circuits", str(p["circuits"]), "--pipeline",
               "--device-keygen", "on", "--json", str(out)]
        env = dict(os.environ)
        env.pop("CUZK_OPT", None)                  # what ships: the registry's defaults
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=env)
        if r.returncode != 0 or not out.exists():
            tail = "\n".join((r.stdout + r.stderr).strip().splitlines()[-15:])
            raise RuntimeError(f"{' '.join(cmd[1:])}: exit {r.returncode}\n{tail}")
        return figures(json.loads(out.read_text()), str(out))
