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
from dataclasses import replace

from ..run import RunError, RunSpec, device_memory, header, kernel_load_times, key_context, open_backend
from .common import EXIT_INVALID, EXIT_OK, CliError, bench_outputs, device_memory_line, write_all

PIPELINE_FLAGS = ("pipeline_depth", "pipeline_workers", "compare", "devices")


def wanted(args) -> bool:
    return bool(args.pipeline) or any(getattr(args, f) not in (None, False) for f in PIPELINE_FLAGS)


def check_args(args) -> None:
    if not args.pipeline:
        given = [f"--{f.replace('_', '-')}" for f in PIPELINE_FLAGS if getattr(args, f) not in (None, False)]
        raise CliError(f"{', '.join(given)} needs --pipeline")
    if args.devices is not None and args.backend == "cpu":
        raise CliError("--devices needs the cuda backend (the cpu backend proves on one lane)")
    if args.parallel_synthesis:
        raise CliError("--pipeline sets its synthesis workers with --pipeline-workers, not --parallel-synthesis")
    if args.pipeline_depth is not None and args.pipeline_depth < 1:
        raise CliError(f"--pipeline-depth must be >= 1, got {args.pipeline_depth}")
    if args.pipeline_workers is not None and args.pipeline_workers < 1:
        raise CliError(f"--pipeline-workers must be >= 1, got {args.pipeline_workers}")


def resolve_devices(spec: str | None, count: int) -> list[int] | None:
    """--devices as device indices (None: not given, the current device alone). `count`: the GPUs CUDA sees."""
    if spec is None:
        return None
    spec = spec.strip()
    if spec == "all":
        if count < 1:
            raise CliError("--devices all: CUDA sees no GPU")
        return list(range(count))
    if "," not in spec:
        if not (spec.isdecimal() and spec.isascii()) or int(spec) < 1:
            raise CliError(f"--devices {spec}: give all, a count N >= 1, or indices with a comma ('2,' for device 2)")
        if int(spec) > count:
            raise CliError(f"--devices {spec}: {spec} GPUs asked, CUDA sees {count}")
        return list(range(int(spec)))
    parts = [x.strip() for x in spec.split(",") if x.strip()]
    if not parts or not all(x.isdecimal() and x.isascii() for x in parts):
        raise CliError(f"--devices {spec}: indices must be integers, e.g. 0,2")
    ids = [int(x) for x in parts]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise CliError(f"--devices {spec}: device {dup[0]} given twice (one prover per GPU)")
    bad = [i for i in ids if i >= count]
    if bad:
        raise CliError(f"--devices {spec}: no device {bad[0]} (CUDA sees {count}: 0..{count - 1})")
    return ids


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


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr)


def _lane_for(spec: RunSpec, r1cs, job, device: int | None, backend=None) -> dict:
    """One lane made ready: on `device` (None: the current one, with `backend`), a backend and the key
    resident there, and a warm-up proof (untimed, verified by the caller)."""
    import contextlib
    from ..pipeline import Lane, warm_up
    if device is None:
        use = contextlib.nullcontext
    else:
        import cupy
        use = lambda: cupy.cuda.Device(device)       # noqa: E731
    with use():
        backend = backend or open_backend(replace(spec, backend="cuda"))
        ctx = key_context(spec, backend, r1cs, _stderr, where="" if device is None else f" (device {device})")
        t0 = time.perf_counter()
        warm, public = warm_up(ctx.prover, r1cs, job)       # along the pipelined path (B2, F2)
        warm_s = time.perf_counter() - t0
        if device is None and backend.name == "cuda":
            from ..gpu.per_device import current
            device = current()
    from ..gpu.per_device import is_device_error
    return {"ctx": ctx, "lane": Lane(ctx.prover, device, use, is_device_error), "warm": (warm, public),
            "warmup_s": warm_s}


def _device_lanes(spec: RunSpec, r1cs, job, devices: list[int]) -> list[dict]:
    """A lane per GPU: the first made alone (a key-cache miss is made and saved once), the others side by
    side, each in a thread with its device current."""
    from concurrent.futures import ThreadPoolExecutor
    first = _lane_for(spec, r1cs, job, devices[0])
    if len(devices) == 1:
        return [first]
    with ThreadPoolExecutor(len(devices) - 1, thread_name_prefix="cuzk-lane-setup") as ex:
        rest = list(ex.map(lambda d: _lane_for(spec, r1cs, job, d), devices[1:]))
    return [first, *rest]


def bench_pipeline(args, spec: RunSpec) -> int:
    """args: the parsed command (the pipeline's flags, its outputs); spec: the run they describe."""
    from .. import circuits
    from ..groth16 import verify, vk_to_json
    from ..nvml import gpu_state
    from ..pipeline import Job, PipelineError, plan_workers, run_pipelined, run_sequential, summary

    check_args(args)
    depth = args.pipeline_depth or 2
    pool = args.synthesis_pool or "process"
    opts = spec.opts
    try:
        backend = open_backend(spec)
    except RunError as e:
        raise CliError(str(e)) from e
    devices = None
    if args.devices is not None:
        if backend.name != "cuda":
            raise CliError("--devices needs the cuda backend, and there is no GPU backend here")
        import cupy
        devices = resolve_devices(args.devices, cupy.cuda.runtime.getDeviceCount())
    gpu_before = gpu_state() if backend.name != "cpu" else None
    host_assign = backend.phase_impl("synthesis") == "cpu"

    r1cs, inputs, aux = circuits.build(spec.circuit, spec.log_size, opts=opts, seed=1, limbs=not host_assign)
    del inputs, aux
    job = Job(spec.circuit, spec.log_size, opts, tuple(range(1, spec.circuits + 1)), host_assign,
              witness_limbs=getattr(backend, "witness_limbs", False))
    made = [_lane_for(spec, r1cs, job, None, backend)] if devices is None else \
        _device_lanes(spec, r1cs, job, devices)
    ctx = made[0]["ctx"]
    prover, pk = ctx.prover, ctx.pk
    vk = pk.verifying_key()
    vk_json = vk_to_json(vk)
    for m in made:
        d = m["lane"].device
        if m is not made[0] and vk_to_json(m["ctx"].pk.verifying_key()) != vk_json:
            raise CliError(f"device {d}'s key is not the first device's (its verification key differs)")
        if not verify(vk, m["warm"][1], m["warm"][0]):
            raise CliError("the warm-up proof does not verify" + ("" if devices is None else f" (device {d})"))
    warmup_s = made[0]["warmup_s"]
    lanes = [m["lane"] for m in made]
    if args.pipeline_workers:
        workers, plan = args.pipeline_workers, None
    else:       # planned now: the available memory already excludes the provers' keys and circuit
        from ..pipeline import shm_free_bytes
        plan = plan_workers(spec.circuits, spec.circuit, pk.log_n, depth, limbs=job.witness_limbs,
                            host_assign=host_assign, shm_free=shm_free_bytes() if pool == "process" else None,
                            provers=len(lanes))
        workers = plan["workers"]
        gib = lambda b: "?" if b is None else f"{b / 2**30:.1f}"      # noqa: E731
        print(f"pipeline: {workers} worker(s) (cores allow {plan['by_cores']}, memory {plan['by_memory']}"
              + (f", /dev/shm {plan['by_shm']}" if "by_shm" in plan else "") + ": "
              f"{gib(plan['available_bytes'])} GiB available, ~{gib(plan['held_bytes'])} GiB held per circuit, "
              f"~{gib(plan['private_bytes'])} GiB per worker)", file=sys.stderr)
    try:
        pipe = run_pipelined(lanes, r1cs, job, workers, depth, pool)
        if args.compare:        # one prover, one circuit after another (on the first device)
            with lanes[0].use():
                seq = run_sequential(prover, r1cs, job)
        else:
            seq = None
    except PipelineError as e:
        raise CliError(str(e)) from e
    runs = [pipe] + ([seq] if seq else [])
    verified = all(verify(vk, pub, pf) for r in runs for pub, pf in zip(r.publics, r.proofs))

    section = summary(pipe)
    section["warmup_s"] = warmup_s
    section["worker_plan"] = plan
    section["sequential"] = summary(seq) if seq else None
    section["speedup"] = seq.wall_s / pipe.wall_s if seq else None
    for d, m in zip(section["devices"], made):
        with m["lane"].use():
            d["memory"] = device_memory(m["ctx"].prover.kh)
        d.update(key_s=m["ctx"].key.seconds, warmup_s=m["warmup_s"])
    phases = pipe.phases
    report = {
        **header(spec, backend, r1cs, pk, pool),
        "phases": phases,
        "total_s": sum(r["host_s"] for r in phases.values()),
        "prove_wall_s": pipe.wall_s,
        "setup_s": ctx.key.seconds,
        "verified": verified,
        "kernel_load_s": kernel_load_times(),
        "gpu": None if gpu_before is None else {"before": gpu_before, "after": gpu_state()},
        "pipeline": section,
        "device_memory": section["devices"][0]["memory"],
    }
    where = "" if devices is None else f" on {len(lanes)} GPU(s) {','.join(str(d) for d in devices)},"
    print(f"cuzk bench --pipeline: {spec.circuit} 2^{pk.log_n} ({r1cs.num_constraints} constraints) x "
          f"{spec.circuits}, backend {backend.name},{where} opts {opts.label()}, {workers} {pool} worker(s), "
          f"depth {depth}")
    print(table(section))
    if devices is not None:
        print(device_table(section))
    for d in section["devices"]:
        if d["memory"] is not None:
            print(("" if devices is None else f"device {d['device']}: ") + device_memory_line(d["memory"]))
    from ..groth16 import VERIFIER
    print(f"verified: {verified} (by {VERIFIER})")
    write_all(bench_outputs(args, report, vk, pipe.publics, pipe.proofs))
    return EXIT_OK if verified else EXIT_INVALID
