"""One proving run as a library call: `run(spec) -> RunReport`.

A run is: a backend, the batch's synthesis, the key (made on the GPU and kept there, or through the key
cache), the proofs with every phase timed, and their verification. `cuzk bench` is this run with its
arguments parsed and its report printed; the pipelined bench (its own scheduler), the perf workload (each
phase alone, many times), ablate (one key shared by many option sets) and `cuzk prove` (a .zkey and a
.wtns) are built from the same steps: `open_backend`, `synthesize_batch`, `key_context`, `all_verify`,
`prove_files`, and `header` for the first fields of the report. Options arrive resolved (an OptSet and
P2's table budget); nothing here reads the environment or writes to a terminal except through `log`.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import __version__
from .backend import BackendError, get_backend
from .backend.base import Backend
from .context import ContextError, KeySource, ProvingContext, context_for_key, device_keygen_wanted, proving_context
from .curve import PointError
from .formats import FormatError, read_wtns, read_zkey
from .formats.zkey import LABELS, POINT_SECTIONS
from .groth16 import proof_point_error, verify
from .nvml import gpu_state
from .opts import OptSet
from .progress import LARGE_LOG, first_use_during, step_printer
from .synthesis import make_pool, synthesize
from .timing import PhaseTimer, peak_rss_bytes


class RunError(ValueError):
    """A run that cannot be made as asked (a bad count, a key on the GPU without the cuda backend)."""


def quiet(msg: str) -> None:
    """A `log` that says nothing (a library caller's default)."""


@dataclass(frozen=True)
class RunSpec:
    """What one run proves and how; `opts` and `table_gib` come resolved from the caller's edge."""
    opts: OptSet
    circuit: str = "porep_like"
    log_size: int = 10
    backend: str = "auto"            # "cpu", "cuda" or "auto"
    circuits: int = 1                # the batch: seeds 1..circuits
    convention: str = "coeff"
    generator: int = 7
    device_keygen: str | bool = "off"   # "on", "off" or "auto" (context.device_keygen_wanted)
    keygen_backend: str | None = None   # where a key-cache miss is made (None: the proving backend's kind)
    parallel_synthesis: int = 0      # witness workers (0: in this thread)
    synthesis_pool: str = "thread"   # "thread" or "process"
    warmup: int = 0                  # untimed proofs before the timed one
    table_gib: float | None = None   # P2's table budget (None: half the free device memory)

    def check(self) -> None:
        for name, low in (("circuits", 1), ("parallel_synthesis", 0), ("warmup", 0)):
            if getattr(self, name) < low:
                raise RunError(f"--{name.replace('_', '-')} must be >= {low}")

    @property
    def seeds(self) -> range:
        return range(1, self.circuits + 1)


def open_backend(spec: RunSpec, log=quiet) -> Backend:
    """The spec's backend, with the spec's key placement checked against it before any work."""
    be = get_backend(spec.backend, log=log, opts=spec.opts, table_gib=spec.table_gib)
    try:
        device_keygen_wanted(spec.device_keygen, be, 0)
    except ContextError as e:
        raise RunError("--device-keygen on needs the cuda backend") from e
    return be


def synthesize_batch(spec: RunSpec, backend: Backend | None, timer: PhaseTimer | None = None, executor=None,
                     seeds=None):
    """(r1cs, assignments) of the spec's batch, each witness assigned by the backend (on the device for
    cuda; no backend: on the host), in the timer's synthesis phase when a timer is given."""
    seeds = spec.seeds if seeds is None else seeds
    assign_fn = None if backend is None else backend.assign

    def go():
        return synthesize(spec.circuit, spec.log_size, spec.opts, seeds=seeds, assign_fn=assign_fn,
                          executor=executor, timer=timer)
    if timer is None:
        return go()
    with timer.phase("synthesis", "cpu" if backend is None else backend.phase_impl("synthesis")):
        return go()


def key_context(spec: RunSpec, backend: Backend, r1cs, log=quiet, where: str = "", progress: bool | None = None,
                **cache) -> ProvingContext:
    """The proving context of r1cs on backend as the spec places the key (`cache`: key_dir and key_tag of
    the device key cache, context.proving_context); one line through `log` says where the key came from."""
    ctx = proving_context(backend, r1cs, spec.convention, spec.generator, device_keygen=spec.device_keygen,
                          keygen_backend=spec.keygen_backend, progress=progress, **cache)
    log(f"key{where}: {ctx.key.describe()}")
    return ctx


def all_verify(vk, publics, proofs) -> bool:
    """A proof for every public input (and at least one), each verified by the independent verifier
    (groth16.VERIFIER): no proofs, or fewer than inputs, is not "verified"."""
    publics, proofs = list(publics), list(proofs)
    return (bool(proofs) and len(publics) == len(proofs)
            and all(verify(vk, pub, pf) for pub, pf in zip(publics, proofs)))


def git_commit() -> str | None:
    """HEAD of the checkout the package runs from; CUZK_COMMIT overrides it (a copied tree whose .git
    is not the source's, e.g. on a device machine: tools/device_setup.sh sets it from .device-commit)."""
    if os.environ.get("CUZK_COMMIT"):
        return os.environ["CUZK_COMMIT"]
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=Path(__file__).resolve().parent,
                             capture_output=True, text=True, timeout=5)
        return out.stdout.strip() or None if out.returncode == 0 else None
    except Exception:
        return None


def header(spec: RunSpec, backend: Backend, r1cs, pk, synthesis_pool) -> dict:
    """The first fields of a run's JSON, the same for one batch and the pipelined bench
    (docs/architecture.md, What a run records)."""
    return {"cuzk_version": __version__, "commit": git_commit(), "backend": backend.name,
            "circuit": {"name": spec.circuit, "constraints": r1cs.num_constraints, "domain": 1 << pk.log_n,
                        "circuits": spec.circuits, "convention": pk.convention, "generator": pk.generator,
                        "parallel_synthesis": spec.parallel_synthesis, "synthesis_pool": synthesis_pool},
            "optimizations": spec.opts.as_dict()}


def kernel_load_times() -> dict:
    """NVRTC compile/load seconds per kernel module (empty where no kernel was loaded)."""
    mod = sys.modules.get("cuzk.gpu.loader")
    return dict(mod.load_times) if mod is not None else {}


def device_memory(kh) -> dict | None:
    """The key handle's device memory by use (CudaKey.memory, with P2's table plan), or None off the GPU."""
    mem = getattr(kh, "memory", None)
    if mem is None:
        return None
    out = mem()
    tb = getattr(kh, "tables", None)
    if tb is not None:
        out["tables"] = {"c": tb.plan.c, "blocks": tb.plan.t, "groups": tb.plan.groups, "made_s": kh.tables_s}
    return out


@dataclass
class RunReport:
    """What `run` did and measured; `to_json` is the documented schema of `cuzk bench --json`."""
    spec: RunSpec
    backend: Backend
    r1cs: object
    pk: object
    publics: list
    proofs: list
    phases: dict
    prove_wall_s: float
    warmup_wall_s: list
    process_peak_host_bytes: int
    key: KeySource
    key_span: dict
    verified: bool
    prep_counts: object
    kernel_load_s: dict
    gpu: dict | None
    device_memory: dict | None
    first_use: object = field(repr=False, default=None)   # progress.FirstUse: did first use dominate?

    @property
    def total_s(self) -> float:
        return sum(r["host_s"] for r in self.phases.values())

    @property
    def vk(self):
        return self.pk.verifying_key()

    def to_json(self) -> dict:
        s = self.spec
        return {
            **header(s, self.backend, self.r1cs, self.pk, s.synthesis_pool if s.parallel_synthesis else None),
            "phases": self.phases,
            "total_s": self.total_s,
            "prove_wall_s": self.prove_wall_s,
            "warmup_wall_s": self.warmup_wall_s,
            "process_peak_host_bytes": self.process_peak_host_bytes,
            "setup_s": self.key.seconds,
            "key_setup": self.key_span,
            "keygen": self.key.keygen,
            "verified": self.verified,
            "prep_counts": self.prep_counts,
            "kernel_load_s": self.kernel_load_s,
            "gpu": self.gpu,
            "device_memory": self.device_memory,
        }


def run(spec: RunSpec, log=quiet, backend: Backend | None = None) -> RunReport:
    """One batch: synthesized, its key set up, proved phase by phase (each timed), verified. `log` gets
    the lines a person watching wants (where the key came from); a large proof's steps go to stderr."""
    spec.check()
    backend = backend or open_backend(spec, log)
    gpu_before = gpu_state() if backend.name != "cpu" else None
    pool = make_pool(spec.synthesis_pool, spec.parallel_synthesis) if spec.parallel_synthesis else None
    timer = PhaseTimer(device=backend.timer_device(), phase_peaks=True)
    try:
        r1cs, assignments = synthesize_batch(spec, backend, timer, executor=pool)
    except BrokenProcessPool as e:          # a worker killed (a signal, the OOM killer): not a bug here
        raise RunError(f"synthesis failed: a worker process died ({e})") from e
    finally:
        if pool is not None:        # after a failure or an interrupt, the circuits not started are not made
            pool.shutdown(cancel_futures=True)
    key_start = time.perf_counter() - timer.origin       # the key's set-up on the run's clock (timeline)
    ctx = key_context(spec, backend, r1cs, log, progress=None)
    key_span = {"start_s": key_start, "stop_s": time.perf_counter() - timer.origin, "where": ctx.key.where,
                "cached": ctx.key.cached, "label": ctx.key.describe()}
    prover, pk = ctx.prover, ctx.pk
    warmup_s = []
    for _ in range(spec.warmup):                  # a throwaway timer: first-use costs stay out of the phases
        t0 = time.perf_counter()
        prover.prove(assignments, PhaseTimer(device=backend.timer_device()))
        warmup_s.append(time.perf_counter() - t0)
    steps = step_printer(f"proving 2^{pk.log_n} x{len(assignments)}") if pk.log_n >= LARGE_LOG else None
    t1 = time.perf_counter()
    with first_use_during() as first_use:         # kernel loads and compiles inside the timed proof
        proofs = prover.prove(assignments, timer, progress=steps)
    prove_wall = time.perf_counter() - t1
    publics = [a.public for a in assignments]
    return RunReport(
        spec=spec, backend=backend, r1cs=r1cs, pk=pk, publics=publics, proofs=proofs, phases=timer.as_dict(),
        prove_wall_s=prove_wall, warmup_wall_s=warmup_s,
        process_peak_host_bytes=max(timer.process_peak_host_bytes, peak_rss_bytes()), key=ctx.key,
        key_span=key_span, verified=all_verify(pk.verifying_key(), publics, proofs),
        prep_counts=prover.last_prep.counts, kernel_load_s=kernel_load_times(),
        gpu=None if gpu_before is None else {"before": gpu_before, "after": gpu_state()},
        device_memory=device_memory(prover.kh), first_use=first_use)


# --- a run from files: a snarkjs .zkey and .wtns ---

DIAGNOSE_MAX_POINTS = 1 << 20      # above this, naming the section would cost minutes: say which it may be


@dataclass
class ProveResult:
    proof: object
    public: list
    timer: object
    read_s: float
    load_s: float
    prove_s: float
    verified: bool


def prove_files(zkey_path, wtns_path, backend: Backend | str = "cpu", opts: OptSet | None = None,
                table_gib: float | None = None, check: bool = True, rng=None) -> ProveResult:
    """Read a snarkjs .zkey and a .wtns, prove as snarkjs does, and (by default) verify the proof with the
    key's own verifying key. A backend by name is made with `opts` (the caller's resolved set). Raises
    FormatError/ValueError on bad input, including a witness that does not satisfy the key's circuit (seen
    as a proof that does not verify)."""
    if not isinstance(backend, Backend) and opts is None:
        raise TypeError("prove_files: a backend by name needs the resolved opts")
    t0 = time.perf_counter()
    zk = read_zkey(zkey_path)
    w = read_wtns(wtns_path)
    if len(w) != zk.n_vars:
        raise ValueError(f"{wtns_path}: the witness has {len(w)} values, but the key {zkey_path} has "
                         f"{zk.n_vars} signals (a witness of another circuit?)")
    first = int.from_bytes(np.ascontiguousarray(w.limbs[0]).tobytes(), "little") if len(w) else None
    if first != 1:
        raise FormatError(f"{wtns_path}: witness value 0 (the constant ONE) is {first}, not 1")
    be = backend if isinstance(backend, Backend) else get_backend(backend, opts=opts, table_gib=table_gib)
    t1 = time.perf_counter()
    try:
        prover = context_for_key(be, zk.pk).prover
        t2 = time.perf_counter()
        timer = PhaseTimer(device=be.timer_device())
        with timer.phase("synthesis", be.phase_impl("synthesis")):
            asg = be.assign_zkey(zk, w.limbs)
        proof = prover.prove([asg], timer, rng=rng)[0]
    except PointError as e:                 # a bulk section's point off the curve, met while proving
        raise FormatError(f"{zkey_path}: {_off_curve_section(zk)}: {e}") from e
    t3 = time.perf_counter()
    bad = proof_point_error(proof)          # a torsion component from a bulk section: the pairing misses it
    if bad is not None:
        raise FormatError(f"{zkey_path}: the proof would be refused ({bad}): a bulk point section of the key "
                          f"(A, B1, B2, C or H) holds a point outside its subgroup; nothing written")
    ok = True
    if check:
        ok = verify(zk.verifying_key(), asg.public, proof)
        if not ok:
            raise ValueError(f"the proof does not verify against {zkey_path}: the witness {wtns_path} does "
                             f"not satisfy the key's circuit (or the key is corrupt)")
    return ProveResult(proof, asg.public, timer, t1 - t0, t2 - t1, t3 - t2, ok)


def _off_curve_section(zk) -> str:
    """The first bulk section with a point the curve does not hold (read again, on the failure path only)."""
    if zk.n_vars > DIAGNOSE_MAX_POINTS:
        return "a bulk point section (A, B1, B2, C or H)"
    for sid, (name, _) in POINT_SECTIONS.items():
        try:
            zk.pk.points[name].to_ark()
        except PointError:
            return f"section {sid} ({LABELS[sid]})"
    return "a point section"


__all__ = ["RunError", "RunSpec", "RunReport", "BackendError", "run", "open_backend", "synthesize_batch",
           "key_context", "all_verify", "header", "device_memory", "kernel_load_times", "git_commit",
           "prove_files", "ProveResult"]
