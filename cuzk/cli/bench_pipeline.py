"""`cuzk bench --pipeline`: its flags parsed into a PipelineSpec for the run that cuzk/pipelined_run.py makes
(synthesis running ahead on host workers, one lane per GPU; with --compare the same circuits one after
another), and that run's report printed (bench.py runs it and writes its outputs)."""
from __future__ import annotations

from ..groth16 import VERIFIER
from ..pipelined_run import PipelinedReport, PipelineSpec
from ..run import RunSpec
from .common import CliError, device_memory_line

PIPELINE_FLAGS = ("pipeline_depth", "pipeline_workers", "compare", "devices")


def _given(v) -> bool:
    """Whether a pipeline flag was given: identity, not `in (None, False)`, since 0 == False would hide
    --pipeline-depth 0 and --pipeline-workers 0."""
    return v is not None and v is not False


def wanted(args) -> bool:
    return bool(args.pipeline) or any(_given(getattr(args, f)) for f in PIPELINE_FLAGS)


def check_args(args) -> None:
    """The pipeline's flags against the rest of the command (their numbers are the run's to check)."""
    if not args.pipeline:
        given = [f"--{f.replace('_', '-')}" for f in PIPELINE_FLAGS if _given(getattr(args, f))]
        raise CliError(f"{', '.join(given)} needs --pipeline")
    if args.devices is not None and args.backend == "cpu":
        raise CliError("--devices needs the cuda backend (the cpu backend proves on one lane)")
    if args.parallel_synthesis:
        raise CliError("--pipeline sets its synthesis workers with --pipeline-workers, not --parallel-synthesis")


def device_table(p: dict) -> str:
    """One line per GPU: circuits proved, busy seconds and fraction, and a failure where one happened."""
    f = lambda v: "-" if v is None else f"{v:.3f}"      # noqa: E731
    lines = [f"{'device':>7}{'circuits':>9}{'busy s':>9}{'gpu busy s':>11}{'gpu busy':>9}  failed"]
    for d in p["devices"]:
        frac = "-" if d["gpu_busy_fraction"] is None else f"{d['gpu_busy_fraction']:.1%}"
        lines.append(f"{'-' if d['device'] is None else d['device']:>7}{len(d['circuits']):>9}"
                     f"{f(d['prover_busy_s']):>9}{f(d['gpu_busy_s']):>11}{frac:>9}  {d['failed'] or '-'}")
    return "\n".join(lines)


def _row(name: str, s: dict) -> str:
    f = lambda v: "-" if v is None else f"{v:.3f}"      # noqa: E731
    return (f"{name:<11}{f(s['wall_s']):>9}{s['proofs_per_s']:>10.3f}{f(s['s_per_proof']):>9}"
            f"{f(s['fill_s']):>8}{f(s.get('first_proof_s')):>9}{f(s['overlap_s']):>10}{f(s['prover_busy_s']):>9}{f(s['prover_idle_s']):>9}"
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
    lines.append(f"{'run':<11}{'wall s':>9}{'proofs/s':>10}{'s/proof':>9}{'fill s':>8}{'1st s':>9}{'overlap s':>10}"
                 f"{'busy s':>9}{'idle s':>9}{'gpu busy':>9}{'gpu idle':>9}")
    lines.append(_row("pipelined", p))
    if p.get("sequential"):
        lines.append(_row("sequential", p["sequential"]))
        lines.append(f"speedup (sequential wall / pipelined wall): x{p['speedup']:.3f}")
    return "\n".join(lines)


def pipeline_spec(args) -> PipelineSpec:
    """bench's pipeline flags (wanted(args)) as the run's PipelineSpec."""
    if args.warmup:
        raise CliError("--warmup applies to the one-batch bench; --pipeline reports its fill separately")
    check_args(args)
    depth = 2 if args.pipeline_depth is None else args.pipeline_depth
    return PipelineSpec(depth=depth, workers=args.pipeline_workers, pool=args.synthesis_pool or "process",
                        devices=args.devices, compare=bool(args.compare))


def print_pipeline_report(spec: RunSpec, rep: PipelinedReport) -> None:
    """The pipelined run's report: per circuit and per run (table), per GPU where several, each device's
    memory, the verdict."""
    section, devices, pipe = rep.section, rep.devices, rep.pipe
    where = "" if devices is None else f" on {len(devices)} GPU(s) {','.join(str(d) for d in devices)},"
    print(f"cuzk bench --pipeline: {spec.circuit} 2^{rep.pk.log_n} ({rep.r1cs.num_constraints} constraints) x "
          f"{spec.circuits}, backend {rep.backend.name},{where} opts {spec.opts.label()}, {rep.workers} {pipe.pool} "
          f"worker(s), depth {pipe.depth}")
    print(table(section))
    if devices is not None:
        print(device_table(section))
    for d in section["devices"]:
        if d["memory"] is not None:
            print(("" if devices is None else f"device {d['device']}: ") + device_memory_line(d["memory"]))
    print(f"verified: {rep.verified} (by {VERIFIER})")
