"""`cuzk bench`: its arguments parsed into a RunSpec (with --pipeline also a PipelineSpec: bench_pipeline.py),
its outputs checked, one run (run.run: one batch proved phase by phase; or pipelined_run.run_pipelined_batch),
its report printed and its outputs written (bench_outputs.py)."""
from __future__ import annotations

from ..environment import options, table_gib
from ..groth16 import VERIFIER
from ..pipelined_run import run_pipelined_batch
from ..run import RunError, RunReport, RunSpec, run
from .bench_outputs import bench_outputs, check_bench_outputs
from .bench_pipeline import pipeline_spec, print_pipeline_report, wanted
from .common import (EXIT_INVALID, EXIT_OK, CliError, _need_plots, device_memory_line, keygen_table, phase_table,
                     to_stderr, write_all)


def run_spec(args) -> RunSpec:
    """bench's arguments as a run's spec, options resolved here (flag over $CUZK_OPT over the defaults)."""
    return RunSpec(opts=options(args.opt), circuit=args.circuit, log_size=args.log_size, backend=args.backend,
                   circuits=args.circuits, convention=args.convention, generator=args.generator,
                   device_keygen=args.device_keygen, keygen_backend=args.keygen_backend,
                   parallel_synthesis=args.parallel_synthesis, synthesis_pool=args.synthesis_pool or "thread",
                   warmup=args.warmup, table_gib=table_gib())


def print_batch_report(spec: RunSpec, rep: RunReport) -> None:
    """One batch's report: the phase table, the GPU keygen's steps and the device memory where there are any,
    the verdict, and (stderr) --warmup 1 suggested where first use dominated the table."""
    print(f"cuzk bench: {spec.circuit} 2^{rep.pk.log_n} ({rep.r1cs.num_constraints} constraints) x {spec.circuits}, "
          f"backend {rep.backend.name}, opts {spec.opts.label()}")
    print(phase_table(rep.phases, rep.total_s))
    if rep.key.keygen is not None:
        print(keygen_table(rep.key.keygen))
    if rep.device_memory is not None:
        print(device_memory_line(rep.device_memory))
    print(f"verified: {rep.verified} (by {VERIFIER})")
    rep.first_use.hint(spec.warmup)               # after the table: --warmup 1 when first use dominated it


def cmd_bench(args) -> int:
    if args.synthesis_pool is not None and not args.parallel_synthesis and not args.pipeline:
        # one circuit after another has no pool: the choice would be recorded as nothing, unsaid
        raise CliError("--synthesis-pool needs --parallel-synthesis N (or --pipeline)")
    spec = run_spec(args)
    try:
        spec.check()
    except RunError as e:
        raise CliError(str(e)) from e
    if args.timeline:
        _need_plots()
    check_bench_outputs(args)
    pipe = pipeline_spec(args) if wanted(args) else None
    try:
        rep = run_pipelined_batch(spec, pipe, log=to_stderr) if pipe is not None else run(spec, log=to_stderr)
    except RunError as e:
        raise CliError(str(e)) from e
    if pipe is not None:
        print_pipeline_report(spec, rep)
    else:
        print_batch_report(spec, rep)
    write_all(bench_outputs(args, rep))
    return EXIT_OK if rep.verified else EXIT_INVALID
