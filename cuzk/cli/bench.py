"""`cuzk bench`: one batch proved phase by phase (the pipelined run: bench_pipeline.py)."""
from __future__ import annotations

import time

from ..environment import options, table_gib
from .common import (_need_plots, EXIT_INVALID, EXIT_OK, CliError, _kernel_load_times, bench_outputs, bench_context,
                     check_bench_outputs, check_device_keygen, device_memory, device_memory_line, keygen_table,
                     phase_table, report_header, write_all)


def cmd_bench(args) -> int:
    from ..backend import get_backend
    from ..groth16 import verify
    from ..nvml import gpu_state
    from ..synthesis import make_pool, synthesize
    from ..timing import PhaseTimer, peak_rss_bytes

    opts = options(args.opt)
    if args.circuits < 1:
        raise CliError("--circuits must be >= 1")
    if args.parallel_synthesis < 0:
        raise CliError("--parallel-synthesis must be >= 0")
    if args.warmup < 0:
        raise CliError("--warmup must be >= 0")
    if args.timeline:
        _need_plots()
    check_bench_outputs(args)
    from .bench_pipeline import bench_pipeline, wanted
    if wanted(args):
        if args.warmup:
            raise CliError("--warmup applies to the one-batch bench; --pipeline reports its fill separately")
        return bench_pipeline(args, opts)
    args.synthesis_pool = args.synthesis_pool or "thread"
    backend = get_backend(args.backend, opts=opts, table_gib=table_gib())
    check_device_keygen(args, backend)
    gpu_before = gpu_state() if backend.name != "cpu" else None
    pool = make_pool(args.synthesis_pool, args.parallel_synthesis) if args.parallel_synthesis else None
    timer = PhaseTimer(device=backend.timer_device(), phase_peaks=True)
    try:
        with timer.phase("synthesis", backend.phase_impl("synthesis")):
            r1cs, assignments = synthesize(args.circuit, args.log_size, opts, seeds=range(1, args.circuits + 1),
                                           assign_fn=backend.assign, executor=pool, timer=timer)
    finally:
        if pool is not None:
            pool.shutdown()
    key_start = time.perf_counter() - timer.origin       # the key's set-up on the run's clock (timeline)
    ctx = bench_context(args, backend, r1cs)
    key_span = {"start_s": key_start, "stop_s": time.perf_counter() - timer.origin, "where": ctx.key.where,
                "cached": ctx.key.cached, "label": ctx.key.describe()}
    prover, pk = ctx.prover, ctx.pk
    warmup_s = []
    for _ in range(args.warmup):                  # a throwaway timer: first-use costs stay out of the phases
        t0 = time.perf_counter()
        prover.prove(assignments, PhaseTimer(device=backend.timer_device()))
        warmup_s.append(time.perf_counter() - t0)
    t1 = time.perf_counter()
    from ..progress import LARGE_LOG, first_use_during, step_printer
    steps = step_printer(f"proving 2^{pk.log_n} x{len(assignments)}") if pk.log_n >= LARGE_LOG else None
    with first_use_during() as first_use:         # kernel loads and compiles inside the timed proof
        proofs = prover.prove(assignments, timer, progress=steps)
    prove_wall = time.perf_counter() - t1
    phases = timer.as_dict()
    vk = pk.verifying_key()
    verified = all(verify(vk, a.public, p) for a, p in zip(assignments, proofs))
    total_s = sum(r["host_s"] for r in phases.values())
    report = {
        **report_header(args, backend, r1cs, pk, opts, args.parallel_synthesis,
                        args.synthesis_pool if args.parallel_synthesis else None),
        "phases": phases,
        "total_s": total_s,
        "prove_wall_s": prove_wall,
        "warmup_wall_s": warmup_s,
        "process_peak_host_bytes": max(timer.process_peak_host_bytes, peak_rss_bytes()),
        "setup_s": ctx.key.seconds,
        "key_setup": key_span,
        "keygen": ctx.key.keygen,
        "verified": verified,
        "prep_counts": prover.last_prep.counts,
        "kernel_load_s": _kernel_load_times(),
        "gpu": None if gpu_before is None else {"before": gpu_before, "after": gpu_state()},
        "device_memory": device_memory(prover.kh),
    }
    print(f"cuzk bench: {args.circuit} 2^{pk.log_n} ({r1cs.num_constraints} constraints) x {args.circuits}, "
          f"backend {backend.name}, opts {opts.label()}")
    print(phase_table(phases, total_s))
    if ctx.key.keygen is not None:
        print(keygen_table(ctx.key.keygen))
    if report["device_memory"] is not None:
        print(device_memory_line(report["device_memory"]))
    from ..groth16 import VERIFIER
    print(f"verified: {verified} (by {VERIFIER})")
    first_use.hint(args.warmup)                   # after the table: --warmup 1 when first use dominated it
    write_all(bench_outputs(args, report, vk, [a.public for a in assignments], proofs))
    return EXIT_OK if verified else EXIT_INVALID
