"""A pipelined run: N circuits proved with synthesis running ahead on host workers (pipeline.py's scheduler),
the key resident on one lane per GPU; with `compare`, the same N one after another in the same process.

Before the clock: the constraint system (the same for every seed) is built once for the key, and one warm-up
proof of it is made and verified on each lane (kernels loaded, memory pools grown), so both runs see a warm
prover. The pipelined run goes first, so the sequential one gets any warmth left over from it. The report's
`phases` are the pipelined run's prover threads (its `synthesis` is the device assign only; the workers'
witness generation is in that phase's per-circuit 'witness' sub-records); its `pipeline` section has the
run's figures and per-circuit times (seconds since the run started).
"""
from __future__ import annotations

import contextlib
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

from . import circuits
from .backend.base import Backend
from .gpu.per_device import is_device_error
from .nvml import gpu_state
from .pipeline import (Job, Lane, PipelineError, plan_workers, run_pipelined, run_sequential, shm_free_bytes, summary,
                       warm_up)
from .run import (RunError, RunSpec, all_verify, device_memory, header, kernel_load_times, key_context, open_backend,
                  quiet)


@dataclass(frozen=True)
class PipelineSpec:
    depth: int = 2                      # finished circuits queued ahead of the provers
    workers: int | None = None          # synthesis workers (None: planned from the cores and memory)
    pool: str = "process"               # "process" or "thread"
    devices: str | None = None          # --devices as asked: all, the first N, or indices I,J,... (one lane per
                                        # GPU, resolved against the GPUs CUDA sees); None: the current device alone
    compare: bool = False               # also the same circuits one after another

    def check(self) -> None:
        if self.depth < 1:
            raise RunError(f"--pipeline-depth must be >= 1, got {self.depth}")
        if self.workers is not None and self.workers < 1:
            raise RunError(f"--pipeline-workers must be >= 1, got {self.workers}")


def device_count() -> int:
    """The GPUs CUDA sees (the cuda backend is up: CuPy is importable)."""
    import cupy  # only once the cuda backend is known to be there
    return cupy.cuda.runtime.getDeviceCount()


def resolve_devices(spec: str | None, count: int) -> list[int] | None:
    """--devices as device indices (None: not given, the current device alone). `count`: the GPUs CUDA sees."""
    if spec is None:
        return None
    spec = spec.strip()
    if spec == "all":
        if count < 1:
            raise RunError("--devices all: CUDA sees no GPU")
        return list(range(count))
    if "," not in spec:
        if not (spec.isdecimal() and spec.isascii()) or int(spec) < 1:
            raise RunError(f"--devices {spec}: give all, a count N >= 1, or indices with a comma ('2,' for device 2)")
        if int(spec) > count:
            raise RunError(f"--devices {spec}: {spec} GPUs asked, CUDA sees {count}")
        return list(range(int(spec)))
    parts = [x.strip() for x in spec.split(",") if x.strip()]
    if not parts or not all(x.isdecimal() and x.isascii() for x in parts):
        raise RunError(f"--devices {spec}: indices must be integers, e.g. 0,2")
    ids = [int(x) for x in parts]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise RunError(f"--devices {spec}: device {dup[0]} given twice (one prover per GPU)")
    bad = [i for i in ids if i >= count]
    if bad:
        raise RunError(f"--devices {spec}: no device {bad[0]} (CUDA sees {count}: 0..{count - 1})")
    return ids


def lane_devices(asked: str | None, backend: Backend) -> tuple[int, ...] | None:
    """The GPUs that get a lane: pipe.devices resolved on the opened backend (None: the current device alone)."""
    if asked is None:
        return None
    if backend.name != "cuda":
        raise RunError("--devices needs the cuda backend, and there is no GPU backend here")
    return tuple(resolve_devices(asked, device_count()))


def _lane_for(spec: RunSpec, r1cs, job: Job, device: int | None, backend: Backend | None, log) -> dict:
    """One lane made ready: on `device` (None: the current one, with `backend`), a backend and the key
    resident there, and a warm-up proof (untimed, verified by the caller)."""
    if device is None:
        use = contextlib.nullcontext
    else:
        import cupy  # a lane per GPU: the cuda backend is up
        use = lambda: cupy.cuda.Device(device)       # noqa: E731
    with use():
        backend = backend or open_backend(replace(spec, backend="cuda"))
        ctx = key_context(spec, backend, r1cs, log, where="" if device is None else f" (device {device})")
        t0 = time.perf_counter()
        warm, public = warm_up(ctx.prover, r1cs, job)       # along the pipelined path (B2, F2)
        warm_s = time.perf_counter() - t0
        if device is None and backend.name == "cuda":
            from .gpu.per_device import current
            device = current()
    return {"ctx": ctx, "lane": Lane(ctx.prover, device, use, is_device_error), "warm": (warm, public),
            "warmup_s": warm_s}


def _lanes(spec: RunSpec, r1cs, job: Job, devices, backend: Backend, log) -> list[dict]:
    """A lane per GPU: the first made alone (a key-cache miss is made and saved once), the others side by
    side, each in a thread with its device current."""
    if devices is None:
        return [_lane_for(spec, r1cs, job, None, backend, log)]
    first = _lane_for(spec, r1cs, job, devices[0], None, log)
    if len(devices) == 1:
        return [first]
    with ThreadPoolExecutor(len(devices) - 1, thread_name_prefix="cuzk-lane-setup") as ex:
        rest = list(ex.map(lambda d: _lane_for(spec, r1cs, job, d, None, log), devices[1:]))
    return [first, *rest]


@dataclass
class PipelinedReport:
    """What `run_pipelined_batch` did and measured; `to_json` is `cuzk bench --pipeline --json`'s document."""
    spec: RunSpec
    pipe: PipelineSpec
    devices: tuple[int, ...] | None      # pipe.devices resolved: the lanes' GPUs (None: the current device alone)
    backend: Backend
    r1cs: object
    pk: object
    publics: list
    proofs: list
    section: dict                        # the `pipeline` section: figures, per circuit, per device
    phases: dict
    wall_s: float
    key_s: float
    verified: bool
    workers: int
    gpu: dict | None
    kernel_load_s: dict

    @property
    def vk(self):
        return self.pk.verifying_key()

    def to_json(self) -> dict:
        return {
            **header(self.spec, self.backend, self.r1cs, self.pk, self.pipe.pool),
            "phases": self.phases,
            "total_s": sum(r["host_s"] for r in self.phases.values()),
            "prove_wall_s": self.wall_s,
            "setup_s": self.key_s,
            "verified": self.verified,
            "kernel_load_s": self.kernel_load_s,
            "gpu": self.gpu,
            "pipeline": self.section,
            "device_memory": self.section["devices"][0]["memory"],
        }


def run_pipelined_batch(spec: RunSpec, pipe: PipelineSpec, backend: Backend | None = None,
                        log=quiet) -> PipelinedReport:
    """spec's batch proved pipelined (and, with pipe.compare, sequentially too), every proof verified, on the
    GPUs pipe.devices asks for. RunError: a spec or a device list that cannot be run, a lane's key that differs
    from the first's, or a warm-up proof that does not verify."""
    spec.check()
    pipe.check()
    backend = backend or open_backend(spec)      # quietly: the report's backend says where 'auto' went
    devices = lane_devices(pipe.devices, backend)
    gpu_before = gpu_state() if backend.name != "cpu" else None
    host_assign = backend.phase_impl("synthesis") == "cpu"
    opts = spec.opts
    r1cs, inputs, aux = circuits.build(spec.circuit, spec.log_size, opts=opts, seed=1, limbs=not host_assign)
    del inputs, aux
    job = Job(spec.circuit, spec.log_size, opts, tuple(spec.seeds), host_assign,
              witness_limbs=getattr(backend, "witness_limbs", False))
    made = _lanes(spec, r1cs, job, devices, backend, log)
    ctx = made[0]["ctx"]
    prover, pk = ctx.prover, ctx.pk
    vk = pk.verifying_key()
    for m in made:
        d = m["lane"].device
        if m is not made[0] and m["ctx"].pk.verifying_key() != vk:     # the points compared, not their JSON
            raise RunError(f"device {d}'s key is not the first device's (its verification key differs)")
        if not all_verify(vk, [m["warm"][1]], [m["warm"][0]]):
            raise RunError("the warm-up proof does not verify" + ("" if devices is None else f" (device {d})"))
    lanes = [m["lane"] for m in made]
    if pipe.workers:
        workers, plan = pipe.workers, None
    else:       # planned now: the available memory already excludes the provers' keys and circuit
        plan = plan_workers(spec.circuits, spec.circuit, pk.log_n, pipe.depth, limbs=job.witness_limbs,
                            host_assign=host_assign, shm_free=shm_free_bytes() if pipe.pool == "process" else None,
                            provers=len(lanes))
        workers = plan["workers"]
        gib = lambda b: "?" if b is None else f"{b / 2**30:.1f}"      # noqa: E731
        log(f"pipeline: {workers} worker(s) (cores allow {plan['by_cores']}, memory {plan['by_memory']}"
            + (f", /dev/shm {plan['by_shm']}" if "by_shm" in plan else "") + ": "
            f"{gib(plan['available_bytes'])} GiB available, ~{gib(plan['held_bytes'])} GiB held per circuit, "
            f"~{gib(plan['private_bytes'])} GiB per worker)")
    try:
        res = run_pipelined(lanes, r1cs, job, workers, pipe.depth, pipe.pool)
        if pipe.compare:        # one prover, one circuit after another (on the first device)
            with lanes[0].use():
                seq = run_sequential(prover, r1cs, job)
        else:
            seq = None
    except PipelineError as e:
        raise RunError(str(e)) from e
    runs = [res] + ([seq] if seq else [])
    verified = all(all_verify(vk, r.publics, r.proofs) for r in runs)
    section = summary(res)
    section["warmup_s"] = made[0]["warmup_s"]
    section["worker_plan"] = plan
    section["sequential"] = summary(seq) if seq else None
    section["speedup"] = seq.wall_s / res.wall_s if seq else None
    for d, m in zip(section["devices"], made):
        with m["lane"].use():
            d["memory"] = device_memory(m["ctx"].prover.kh)
        d.update(key_s=m["ctx"].key.seconds, warmup_s=m["warmup_s"])
    return PipelinedReport(
        spec=spec, pipe=pipe, devices=devices, backend=backend, r1cs=r1cs, pk=pk, publics=res.publics, proofs=res.proofs,
        section=section, phases=res.phases, wall_s=res.wall_s, key_s=ctx.key.seconds, verified=verified,
        workers=workers, gpu=None if gpu_before is None else {"before": gpu_before, "after": gpu_state()},
        kernel_load_s=kernel_load_times())
