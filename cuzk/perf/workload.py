"""A proving workload held in memory so each phase can be timed alone, many times.

`Workload(spec)` synthesizes the batch, loads (or sets up, cached on disk) the key, makes it
resident on the backend and runs every phase once in order, keeping each phase's inputs; the
proofs of that pass are verified, so a broken phase is an error, not a fast benchmark.
`measure(phase)` then times one call of that phase on those inputs through PhaseTimer: CUDA
events on a GPU backend (device_s), the host clock on the CPU reference.

On the GPU the inputs are the pipeline's: each witness is assigned on the device (backend.assign,
as `cuzk bench` does), and before each timed H phase or proof a fresh copy of the kept a, b, c is
handed over as spendable, untimed, so F2 consumes it in place as in a pipelined proof. Timing the
phase on host-side a, b, c instead would time their conversion from Python ints inside it.

The wiring of phase inputs mirrors Prover.prove (tests check that the two agree).
Workloads are memoised per process (`get`): asv re-runs `setup` before every sample.
"""
from __future__ import annotations

import gc
import math
import random
import time
from dataclasses import asdict, dataclass

try:
    import resource
except ImportError:          # not on Linux: switches unknown
    resource = None

from .. import environment
from .. import backend as backends
from ..opts import OptSet, resolve, variants
from ..run import BackendError, RunSpec, all_verify, key_context, open_backend, synthesize_batch
from ..timing import PHASES, PhaseTimer
from .sched_window import Window

AREAS = PHASES + ("proof",)      # "proof" = one whole proof (all phases after synthesis)
DEVICE_KEY_FROM = 22             # from 2^22 a cuda workload's key is made on the GPU and stays there


class Unavailable(NotImplementedError):
    """The workload cannot run here because the machine has no GPU. asv skips on NotImplementedError."""


class GpuUnusable(RuntimeError):
    """The machine has a GPU (or CUZK_REQUIRE_GPU says it must) and the cuda backend cannot use it:
    CuPy missing, a driver/runtime mismatch... A failure, never a skip: asv counts it as a failed
    benchmark, and the gate as an error."""


@dataclass(frozen=True)
class Spec:
    backend: str = "cpu"            # "cpu" or "cuda"; never "auto": a benchmark must not fall back silently
    circuit: str = "porep_like"
    log_size: int = 10
    opts: str = "default"           # a variant name from opts.variants() or an --opt spec
    batch: int = 1                  # circuits proved in one call
    convention: str = "coeff"
    generator: int = 7

    @classmethod
    def parse_target(cls, target: str, **kw) -> "Spec":
        """'cpu:10' -> Spec(backend='cpu', log_size=10); 'cuda:porep_partition:24' names its circuit too."""
        parts = target.split(":")
        if len(parts) == 3:
            kw = dict(kw, circuit=parts[1])
            parts = [parts[0], parts[2]]
        if len(parts) != 2 or parts[0] not in ("cpu", "cuda") or not parts[1].isdigit():
            raise ValueError(f"bad target {target!r}; expected BACKEND:LOG_SIZE or BACKEND:CIRCUIT:LOG_SIZE, "
                             f"e.g. cpu:10, cuda:porep_partition:24")
        return cls(backend=parts[0], log_size=int(parts[1]), **kw)

    def target(self, default_circuit: str = "porep_like") -> str:
        """The suite's name for this workload's size: 'cuda:18', or 'cuda:porep_partition:24'."""
        if self.circuit == default_circuit:
            return f"{self.backend}:{self.log_size}"
        return f"{self.backend}:{self.circuit}:{self.log_size}"

    def label(self) -> str:
        b = f" x{self.batch}" if self.batch != 1 else ""
        return f"{self.backend} {self.circuit} 2^{self.log_size}{b} opts={self.opts}"

    def as_dict(self) -> dict:
        return asdict(self)


def opt_set(name_or_spec: str) -> OptSet:
    known = variants()
    return known[name_or_spec] if name_or_spec in known else resolve(name_or_spec)


def opt_spec(opts: OptSet) -> str:
    """An explicit --opt spec for exactly this set."""
    return ",".join(["none"] + [f"+{n}" for n, on in opts.flags if on])


def gpu_unusable_reason(why: str) -> str | None:
    """Why a cuda workload that cannot run here (`why`) is an error rather than a skip; None: skip it."""
    if environment.gpu_required():
        return f"{environment.REQUIRE_GPU_VAR} is set and the GPU cannot run: {why}"
    present, what = backends.gpu_present()       # through the module: tests stand in a machine's answer
    if present:
        return f"{what}, but the cuda backend cannot run: {why}"
    return None


def device_timed(device: bool, area: str) -> bool:
    """Whether an area's samples are CUDA-event times: a GPU workload's phases, but synthesis (host clock)."""
    return device and area != "synthesis"


DEFAULT_MIN_SAMPLE_S = 0.002      # a host-timed sample repeats a short call until it lasts this long (the clock's)


def _involuntary_switches() -> int | None:
    """Times the calling thread was taken off its CPU for another (Linux, per thread), or None where unknown.
    A host-paced phase's events span the wait: each such switch adds a scheduler slice to its device time."""
    try:
        return resource.getrusage(resource.RUSAGE_THREAD).ru_nivcsw
    except (AttributeError, OSError):
        return None


class Workload:
    def __init__(self, spec: Spec, verify: bool = True, key_dir: str | None = None, table_gib=environment.table_gib):
        """key_dir: where a key made on the GPU is kept for later processes of the same commit (the
        gate's workers, one folder per side); None: made afresh, as always. The variant is the spec's alone
        (the environment's CUZK_OPT is not read); table_gib: P2's budget in GiB, by default the process's
        $CUZK_TABLE_GIB, read here once (a workload is where the perf worker and asv's set-up start)."""
        if spec.backend not in ("cpu", "cuda"):
            raise ValueError(f"backend must be cpu or cuda, not {spec.backend!r}")
        self.spec = spec
        self.opts = opt_set(spec.opts)
        self.table_gib = table_gib() if callable(table_gib) else table_gib
        self.peak_device_bytes: dict[str, int] = {}
        self.peak_host_bytes: dict[str, int] = {}
        self._verify = verify
        self._ready = False
        self.setup_s: dict[str, float] = {}   # seconds of each set-up step (prepare)
        self.key_dir = key_dir
        self.key_report: dict = {}             # how the key came: made or loaded, seconds (prepare)
        # the run this workload times phase by phase: a production-size key (GBs) is made on the GPU and
        # kept there, once per process
        self.run_spec = RunSpec(opts=self.opts, circuit=spec.circuit, log_size=spec.log_size, backend=spec.backend,
                                circuits=spec.batch, convention=spec.convention, generator=spec.generator,
                                device_keygen=spec.backend == "cuda" and spec.log_size >= DEVICE_KEY_FROM,
                                keygen_backend="auto", table_gib=self.table_gib)

    # --- set-up (lazy: synthesis alone needs no key and no backend) ---

    def _synthesize(self, backend=None):
        return synthesize_batch(self.run_spec, backend)

    def ensure_backend(self):
        """The workload's backend, made once (no GPU: Unavailable; a GPU that cannot run: GpuUnusable)."""
        if not hasattr(self, "backend"):
            try:
                self.backend = open_backend(self.run_spec)
            except BackendError as e:
                fatal = gpu_unusable_reason(str(e)) if self.spec.backend == "cuda" else None
                if fatal:
                    raise GpuUnusable(f"{self.spec.label()}: {fatal}") from e
                raise Unavailable(str(e)) from e
        return self.backend

    def _device_synthesis(self):
        """Synthesis as the GPU pipeline runs it: the witness on the host, assigned on the device
        (finished before it returns, so the host clock covers the device part)."""
        be = self.ensure_backend()
        out = self._synthesize(be)
        be.synchronize()
        return out

    def _refresh_abc(self) -> None:
        """A fresh spendable copy of each kept device a, b, c (queued before the phase's events)."""
        for asg, abc in zip(self.assignments, self._abc_kept):
            if abc is not None:
                asg.abc_dev, asg.abc_spendable = abc.copy(), True

    def prepare(self) -> "Workload":
        if self._ready:
            return self
        clock = _Stopwatch()
        self.ensure_backend()
        clock.lap("backend")
        if self.device:
            self.r1cs, self.assignments = self._device_synthesis()
        else:
            self.r1cs, self.assignments = self._synthesize()
        self._abc_kept = [a.abc_dev for a in self.assignments]
        clock.lap("synthesis")
        ctx = key_context(self.run_spec, self.backend, self.r1cs, progress=False, **self._key_cache_args())
        self.pk, self.prover, self.kh = ctx.pk, ctx.prover, ctx.kh
        self.key_report = key_report(ctx.key)
        self.randomness = self.prover._randomness(len(self.assignments), random.Random(0))
        clock.lap("key")
        timer = PhaseTimer(device=self.backend.timer_device())
        for phase in PHASES[1:]:                 # one pass in order: warm-up, and every phase's inputs
            if phase == "ntt_msm_h":
                self._refresh_abc()
            with timer.phase(phase, self.backend.phase_impl(phase)):
                self._call(phase)
        timer.finish()
        clock.lap("phase pass")
        if self._verify and not all_verify(self.pk.verifying_key(), [a.public for a in self.assignments],
                                           self.proofs):
            raise RuntimeError(f"{self.spec.label()}: the proof from the phase pass does not verify")
        clock.lap("verify")
        self.setup_s = clock.laps
        self._ready = True
        return self

    def _key_cache_args(self) -> dict:
        """key_dir and the tag of this workload's circuit (the constraint system depends on the circuit, its
        size and, through synthesis, the optimizations; not on the batch's seeds); none without a folder."""
        if self.key_dir is None:
            return {}
        s = self.spec
        return {"key_dir": self.key_dir, "key_tag": {"circuit": s.circuit, "log_size": s.log_size, "opts": s.opts}}

    @property
    def device(self):
        """Whether timings come from the device (CUDA events) rather than the host clock."""
        return self.spec.backend != "cpu"

    # --- one call of one phase on the kept inputs ---

    def _call(self, phase: str):
        if phase == "synthesis":
            return self._synthesize()
        be, kh, asg = self.backend, self.kh, self.assignments
        if phase == "prep_msm":
            self.prep = be.prep_msm(kh, asg)
        elif phase == "ntt_msm_h":
            self.hs = be.ntt_msm_h(kh, asg)
        elif phase == "batch_addition":
            self.ones = be.batch_addition(kh, self.prep)
        elif phase == "tail_msm":
            self.tails = be.tail_msm(kh, self.prep, asg)
        elif phase == "b_g2":
            self.g2 = be.b_g2(kh, self.prep, asg)
        elif phase == "proof_assembly":
            if not hasattr(self, "parts"):
                self.parts = [{"a": o["a"] + t["a"], "b_g1": o["b_g1"] + t["b_g1"], "b_g2": o["b_g2"] + b2,
                               "l": o["l"] + t["l"], "h": h}
                              for o, t, b2, h in zip(self.ones, self.tails, self.g2, self.hs)]
            self.proofs = be.proof_assembly(kh, self.parts, self.randomness)
        else:
            raise KeyError(f"unknown phase {phase!r}")

    def measure(self, area: str, number: int = 1) -> float:
        """Seconds for `number` calls of one phase (or of a whole proof, area 'proof').
        A full garbage collection first, untimed: otherwise one phase's garbage is collected in
        (and charged to) whichever phase runs next."""
        if area != "synthesis":
            self.prepare()
        t_gc = time.perf_counter()
        gc.collect()
        self.last_gc_s = time.perf_counter() - t_gc      # untimed, but a gate round pays it: reported beside
        switches = _involuntary_switches()
        window = Window()
        try:
            return self._timed_calls(area, number)
        finally:
            self.last_window = window.close()
            after = _involuntary_switches()
            self.last_preempted = None if switches is None or after is None else after - switches

    def _timed_calls(self, area: str, number: int) -> float:
        if area == "synthesis":
            timer = PhaseTimer()
            for _ in range(number):
                with timer.phase("synthesis", "cpu"):
                    self._device_synthesis() if self.device else self._synthesize()
            rec = timer.finish()["synthesis"]
            self.peak_host_bytes["synthesis"] = rec.peak_host_bytes
            self.last_timed_by = "host"
            return rec.host_s
        timer = PhaseTimer(device=self.backend.timer_device())
        if area == "proof":
            for _ in range(number):
                self._refresh_abc()
                self.prover.prove(self.assignments, timer, rng=random.Random(0))
            recs = timer.finish()
            self._note_peaks("proof", recs.values())
            dev = [r.device_s for r in recs.values()]
            self.last_timed_by = "host" if None in dev else "device"
            return sum(dev) if None not in dev else sum(r.host_s for r in recs.values())
        impl = self.backend.phase_impl(area)
        for _ in range(number):
            if area == "ntt_msm_h":
                self._refresh_abc()
            with timer.phase(area, impl):
                self._call(area)
        rec = timer.finish()[area]
        self.last_record = rec                     # the call's PhaseRecord (host time, spans), for tools
        self._note_peaks(area, [rec])
        self.last_timed_by = "host" if rec.device_s is None else "device"
        return rec.device_s if rec.device_s is not None else rec.host_s

    def _note_peaks(self, area: str, recs) -> None:
        dev = [r.peak_device_bytes for r in recs if r.peak_device_bytes is not None]
        if dev:
            self.peak_device_bytes[area] = max(self.peak_device_bytes.get(area, 0), *dev)
        self.peak_host_bytes[area] = max([self.peak_host_bytes.get(area, 0)] + [r.peak_host_bytes for r in recs])

    def calibrate(self, area: str, min_sample_s: float, max_number: int = 1000,
                  min_device_sample_s: float = 0.0) -> int:
        """Calls per sample so that a host-timed sample lasts at least min_sample_s (the host clock's resolution)
        and a device-timed (CUDA event) one at least min_device_sample_s (0: one call). Events resolve a short
        call, but a launch-bound one (prep_msm at 2^24, 2 ms) varies from call to call and averages out over
        several. A host-paced phase (tail_msm, b_g2, batch_addition at 2^24, 10-30 ms) does not: its calls are
        fast or ~35% slow with a state of the machine that lasts about a second and is shared by the base's and
        the head's adjacent calls, so a longer sample only spaces the pair further apart (docs/runners.md).

        Timed as a sample is (measure: a full garbage collection, then n calls), n doubling until one
        such batch lasts min_sample_s. The first call after the collection runs with cold caches (prep_msm
        at 2^8: ~4x a warm call), so one call alone over-estimates the time a call and leaves samples too
        short, each led by that cold call in a share that varied from process to process. A batch that
        reaches min_sample_s is taken again and the shorter one counts: one stall of the host (a loaded
        2-core runner: 10x a warm call) would otherwise stop the doubling early and size every sample
        from it."""
        if device_timed(self.device, area):
            min_sample_s = min_device_sample_s
        if min_sample_s <= 0:
            return 1
        n = 1
        while True:
            t = self.measure(area, n)
            if t >= min_sample_s and n < max_number:
                t = min(t, self.measure(area, n))
            if t >= min_sample_s or n >= max_number:
                break
            n = min(max_number, 2 * n)
        if t <= 0:
            return max_number
        return max(1, min(max_number, math.ceil(min_sample_s * n / t)))


def key_report(key) -> dict:
    """How a workload's key came (context.KeySource): where it lives, made or loaded, its seconds (and of
    those, saving it for later workers)."""
    saved = getattr(key, "saved_s", None)
    return {"where": key.where, "how": "loaded" if key.cached else "made", "s": round(key.seconds, 3),
            "saved_s": round(saved, 3) if saved is not None else None, "path": key.path}


class _Stopwatch:
    """Seconds of each named step since the previous one."""

    def __init__(self):
        self.laps: dict[str, float] = {}
        self._t = time.perf_counter()

    def lap(self, name: str) -> None:
        t = time.perf_counter()
        self.laps[name] = round(t - self._t, 3)
        self._t = t


_CACHE: dict[Spec, Workload] = {}


def get(spec: Spec) -> Workload:
    """The process's Workload for `spec` (built once)."""
    if spec not in _CACHE:
        _CACHE[spec] = Workload(spec)
    return _CACHE[spec]
