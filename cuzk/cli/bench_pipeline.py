"""`cuzk bench --pipeline`: N circuits proved with synthesis running ahead on host workers
(cuzk.pipeline), the key resident; with --compare, the same N one after another in the same process.

Before the clock: the constraint system (the same for every seed) is built once for the key, and one
warm-up proof of it is made and verified (kernels loaded, memory pools grown), so both runs see a warm
prover. The pipelined run goes first, so the sequential one gets any warmth left over from it.
The JSON's `phases` are the pipelined run's prover thread (its `synthesis` is the device assign only;
the workers' witness generation is in that phase's per-circuit 'witness' sub-records); the `pipeline`
section has the run's figures and per-circuit times (seconds since the run started).
"""
from __future__ import annotations

import sys
import time

from .common import (EXIT_INVALID, EXIT_OK, CliError, _kernel_load_times, bench_context, bench_outputs,
                     check_device_keygen, device_memory, device_memory_line, report_header, write_all)

PIPELINE_FLAGS = ("pipeline_depth", "pipeline_workers", "compare")


def wanted(args) -> bool:
    return bool(args.pipeline) or any(getattr(args, f) not in (None, False) for f in PIPELINE_FLAGS)


def check_args(args) -> None:
    if not args.pipeline:
        given = [f"--{f.replace('_', '-')}" for f in PIPELINE_FLAGS if getattr(args, f) not in (None, False)]
        raise CliError(f"{', '.join(given)} needs --pipeline")
    if args.parallel_synthesis:
        raise CliError("--pipeline sets its synthesis workers with --pipeline-workers, not --parallel-synthesis")
    if args.pipeline_depth is not None and args.pipeline_depth < 1:
        raise CliError(f"--pipeline-depth must be >= 1, got {args.pipeline_depth}")
    if args.pipeline_workers is not None and args.pipeline_workers < 1:
        raise CliError(f"--pipeline-workers must be >= 1, got {args.pipeline_workers}")


def _row(name: str, s: dict) -> str:
    f = lambda v: "-" if v is None else f"{v:.3f}"      # noqa: E731
    return (f"{name:<11}{f(s['wall_s']):>9}{s['proofs_per_s']:>10.3f}{f(s['s_per_proof']):>9}"
            f"{f(s['fill_s']):>8}{f(s['overlap_s']):>10}{f(s['prover_busy_s']):>9}{f(s['prover_idle_s']):>9}"
            f"{f(s['gpu_busy_s']):>9}{f(s['gpu_idle_s']):>9}")


def table(p: dict) -> str:
    """Per circuit (pipelined run), then one line per run and the speedup."""
    lines = [f"{'circuit':>7}{'worker':>7}{'synth s':>16}{'waited s':>9}{'prove s':>16}{'gpu s':>16}"]
    for c in p["per_circuit"]:
        gpu = ("-" if c["device_start_s"] is None else f"{c['device_start_s']:.3f}-{c['device_stop_s']:.3f}")
        lines.append(f"{c['circuit']:>7}{'-' if c['worker'] is None else c['worker']:>7}"
                     f"{c['synth_start_s']:>8.3f}-{c['synth_stop_s']:<7.3f}{c['prove_start_s'] - c['ready_s']:>9.3f}"
                     f"{c['prove_start_s']:>8.3f}-{c['prove_stop_s']:<7.3f}{gpu:>16}")
    lines.append("")
    lines.append(f"{'run':<11}{'wall s':>9}{'proofs/s':>10}{'s/proof':>9}{'fill s':>8}{'overlap s':>10}"
                 f"{'busy s':>9}{'idle s':>9}{'gpu busy':>9}{'gpu idle':>9}")
    lines.append(_row("pipelined", p))
    if p.get("sequential"):
        lines.append(_row("sequential", p["sequential"]))
        lines.append(f"speedup (sequential wall / pipelined wall): x{p['speedup']:.3f}")
    return "\n".join(lines)


def bench_pipeline(args, opts) -> int:
    from .. import circuits
    from ..backend import get_backend
    from ..groth16 import verify
    from ..nvml import gpu_state
    from ..pipeline import Job, PipelineError, plan_workers, run_pipelined, run_sequential, summary, warm_up

    check_args(args)
    depth = args.pipeline_depth or 2
    pool = args.synthesis_pool or "process"
    backend = get_backend(args.backend, opts=opts)
    check_device_keygen(args, backend)
    gpu_before = gpu_state() if backend.name != "cpu" else None
    host_assign = backend.phase_impl("synthesis") == "cpu"

    r1cs, inputs, aux = circuits.build(args.circuit, args.log_size, opts=opts, seed=1, limbs=not host_assign)
    ctx = bench_context(args, backend, r1cs)
    prover, pk = ctx.prover, ctx.pk
    vk = pk.verifying_key()
    del inputs, aux
    job = Job(args.circuit, args.log_size, opts, tuple(range(1, args.circuits + 1)), host_assign,
              witness_limbs=getattr(backend, "witness_limbs", False))
    t0 = time.perf_counter()
    warm, public = warm_up(prover, r1cs, job)       # untimed, along the pipelined path (B2, F2)
    warmup_s = time.perf_counter() - t0
    if not verify(vk, public, warm):
        raise CliError("the warm-up proof does not verify")
    if args.pipeline_workers:
        workers, plan = args.pipeline_workers, None
    else:       # planned now: the available memory already excludes the prover's key and circuit
        from ..pipeline import shm_free_bytes
        plan = plan_workers(args.circuits, args.circuit, pk.log_n, depth, limbs=job.witness_limbs,
                            host_assign=host_assign, shm_free=shm_free_bytes() if pool == "process" else None)
        workers = plan["workers"]
        gib = lambda b: "?" if b is None else f"{b / 2**30:.1f}"      # noqa: E731
        print(f"pipeline: {workers} worker(s) (cores allow {plan['by_cores']}, memory {plan['by_memory']}"
              + (f", /dev/shm {plan['by_shm']}" if "by_shm" in plan else "") + ": "
              f"{gib(plan['available_bytes'])} GiB available, ~{gib(plan['held_bytes'])} GiB held per circuit, "
              f"~{gib(plan['private_bytes'])} GiB per worker)", file=sys.stderr)
    try:
        pipe = run_pipelined(prover, r1cs, job, workers, depth, pool)
        seq = run_sequential(prover, r1cs, job) if args.compare else None
    except PipelineError as e:
        raise CliError(str(e)) from e
    runs = [pipe] + ([seq] if seq else [])
    verified = all(verify(vk, pub, pf) for r in runs for pub, pf in zip(r.publics, r.proofs))

    section = summary(pipe)
    section["warmup_s"] = warmup_s
    section["worker_plan"] = plan
    section["sequential"] = summary(seq) if seq else None
    section["speedup"] = seq.wall_s / pipe.wall_s if seq else None
    phases = pipe.phases
    report = {
        **report_header(args, backend, r1cs, pk, opts, 0, pool),
        "phases": phases,
        "total_s": sum(r["host_s"] for r in phases.values()),
        "prove_wall_s": pipe.wall_s,
        "setup_s": ctx.key.seconds,
        "verified": verified,
        "kernel_load_s": _kernel_load_times(),
        "gpu": None if gpu_before is None else {"before": gpu_before, "after": gpu_state()},
        "pipeline": section,
        "device_memory": device_memory(prover.kh),
    }
    print(f"cuzk bench --pipeline: {args.circuit} 2^{pk.log_n} ({r1cs.num_constraints} constraints) x "
          f"{args.circuits}, backend {backend.name}, opts {opts.label()}, {workers} {pool} worker(s), depth {depth}")
    print(table(section))
    if report["device_memory"] is not None:
        print(device_memory_line(report["device_memory"]))
    from ..groth16 import VERIFIER
    print(f"verified: {verified} (by {VERIFIER})")
    write_all(bench_outputs(args, report, vk, pipe.publics, pipe.proofs))
    return EXIT_OK if verified else EXIT_INVALID
