"""`cuzk bench`: one batch proved phase by phase (run.run; the pipelined run: bench_pipeline.py)."""
from __future__ import annotations

from ..environment import options, table_gib
from ..groth16 import VERIFIER
from ..run import RunError, RunSpec, run
from .bench_outputs import bench_outputs, check_bench_outputs
from .bench_pipeline import bench_pipeline, wanted
from .common import (EXIT_INVALID, EXIT_OK, CliError, _need_plots, device_memory_line, keygen_table, phase_table,
                     to_stderr, write_all)


def run_spec(args) -> RunSpec:
    """bench's arguments as a run's spec, options resolved here (flag over $CUZK_OPT over the defaults)."""
    return RunSpec(opts=options(args.opt), circuit=args.circuit, log_size=args.log_size, backend=args.backend,
                   circuits=args.circuits, convention=args.convention, generator=args.generator,
                   device_keygen=args.device_keygen, keygen_backend=args.keygen_backend,
                   parallel_synthesis=args.parallel_synthesis, synthesis_pool=args.synthesis_pool or "thread",
                   warmup=args.warmup, table_gib=table_gib())


def cmd_bench(args) -> int:
    spec = run_spec(args)
    try:
        spec.check()
    except RunError as e:
        raise CliError(str(e)) from e
    if args.timeline:
        _need_plots()
    check_bench_outputs(args)
    if wanted(args):
        if args.warmup:
            raise CliError("--warmup applies to the one-batch bench; --pipeline reports its fill separately")
        return bench_pipeline(args, spec)
    try:
        rep = run(spec, log=to_stderr)
    except RunError as e:
        raise CliError(str(e)) from e
    print(f"cuzk bench: {spec.circuit} 2^{rep.pk.log_n} ({rep.r1cs.num_constraints} constraints) x {spec.circuits}, "
          f"backend {rep.backend.name}, opts {spec.opts.label()}")
    print(phase_table(rep.phases, rep.total_s))
    if rep.key.keygen is not None:
        print(keygen_table(rep.key.keygen))
    if rep.device_memory is not None:
        print(device_memory_line(rep.device_memory))
    print(f"verified: {rep.verified} (by {VERIFIER})")
    rep.first_use.hint(spec.warmup)               # after the table: --warmup 1 when first use dominated it
    write_all(bench_outputs(args, rep.to_json(), rep.vk, rep.publics, rep.proofs))
    return EXIT_OK if rep.verified else EXIT_INVALID
