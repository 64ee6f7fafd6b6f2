"""Pipelined proving: circuits are synthesized on host workers while the prover proves earlier ones.

Workers take circuit indices in order and synthesize each (the witness only, circuits.witness: the
prover holds the circuit; on a backend that assigns on the host, a/b/c too) in a thread, or in a spawned process behind the thread ('process' pool: the
witness generators are mostly object-array numpy, which holds the GIL). Finished circuits go on a
bounded queue of `depth`: a worker with a finished circuit waits while the queue is full, so at most
depth + workers + provers circuits are held on the host at once.

The provers are lanes (`Lane`): one prover each, with its key resident on its own GPU. A lane takes circuits
as they come, assigns on the device where the backend does (cuda: SpMV; the host conversion of z to limbs is
done by the worker), and proves each alone. With one lane (the default) the caller's thread is the prover and
all device work runs on it; on the CPU backend this thread plays the device. With several, each lane proves in
a thread of its own with its device current there, and the workers feed whichever lane is free. A lane whose
proof fails stops taking circuits; the failed circuit is synthesized again and proved by another lane, and the
run records the failure (`RunResult.failures`). With one lane a failed proof ends the run, as it always did.

`run_sequential` proves the same circuits one after another (synthesize, prove, next) for comparison.
Times are seconds since the run started (its PhaseTimer's origin), on the host clock; device spans
come from the PhaseTimer's CUDA events.
"""
from __future__ import annotations

import collections
import contextlib
import contextvars
import os
import queue
import sys
import threading
import time
from dataclasses import dataclass, field, replace
from multiprocessing import shared_memory

import numpy as np

from . import circuits, plans
from .backend.cpu.synthesis import assign
from .field import FR_LIMBS, fr_array, ints_to_limbs
from .poly import Domain
from .synthesis import make_pool
from .timing import PhaseTimer, circuit, merge_phases
from .witness_pack import PackedWitness, pack

QUEUE_POLL_S = 0.2        # how often a blocked worker or the prover rechecks for a stop


class PipelineError(RuntimeError):
    pass


# Host memory per pipelined circuit (estimates; local measurements in docs/perf-log.md, 2026-11-29):
# held    = the witness a circuit keeps while it waits or is proved: 32 B (one Fr limb row) per domain
#           element for limb witnesses (aux <= domain), 48 B for int witnesses (pointer + small int),
#           4x that for an Assignment made on the host (z, a, b, c).
# private = a worker's own peak on top: its interpreter and imports (WORKER_BASE_BYTES) plus, for a
#           circuit without a witness-only generator, the whole build (porep_like: ~260 B per domain
#           element measured at 2^18, porep_partition ~100 B at 2^22; BUILD_BYTES_PER_ELEM covers both).
WORKER_BASE_BYTES = 256 << 20
LIMB_BYTES_PER_ELEM = 32
INT_BYTES_PER_ELEM = 48
BUILD_BYTES_PER_ELEM = 320
MEM_FRACTION = 0.8          # of the available host memory the pipeline may plan to use


def worker_memory(name: str, log_size: int, limbs: bool = True, host_assign: bool = False) -> tuple[int, int]:
    """(held, private) bytes per circuit and per worker: see the estimate above."""
    n = 1 << log_size
    held = 4 * INT_BYTES_PER_ELEM * n if host_assign else (LIMB_BYTES_PER_ELEM if limbs else INT_BYTES_PER_ELEM) * n
    private = WORKER_BASE_BYTES + (0 if circuits.has_witness_only(name) else BUILD_BYTES_PER_ELEM * n)
    return held, private


def available_host_bytes() -> int | None:
    """MemAvailable (/proc/meminfo), lowered to the cgroup v2 limit's headroom where one is set; None if unknown."""
    avail = None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    avail = int(line.split()[1]) * 1024
                    break
    except OSError:
        return None
    try:
        with open("/sys/fs/cgroup/memory.max") as f:
            limit = f.read().strip()
        with open("/sys/fs/cgroup/memory.current") as f:
            used = int(f.read())
        if limit != "max" and avail is not None:
            avail = min(avail, int(limit) - used)
    except (OSError, ValueError):
        pass
    return avail


def plan_workers(circuits_n: int, name: str | None = None, log_size: int | None = None, depth: int = 2,
                 available: int | None = None, limbs: bool = True, host_assign: bool = False,
                 shm_free: int | None = None, provers: int = 1) -> dict:
    """Default worker count: half the cores (the rest for the prover threads, the driver and numpy), at
    most one per circuit, and at most what host memory holds: the pipeline keeps up to
    workers + depth + provers witnesses (`held` each; one in each prover's hands) plus each worker's
    `private` peak, within MEM_FRACTION of `available` (default: available_host_bytes(), read now: call it
    once the provers hold their keys and circuit). With `shm_free` (process workers handing witnesses over
    in /dev/shm), also at most what that filesystem holds: workers + depth + provers blocks of `held` each."""
    by_cores = max(1, min(circuits_n, (os.cpu_count() or 2) // 2))
    plan = {"workers": by_cores, "by_cores": by_cores, "by_memory": None}
    if name is None or log_size is None:
        return plan
    avail = available_host_bytes() if available is None else available
    held, private = worker_memory(name, log_size, limbs, host_assign)
    plan.update(held_bytes=held, private_bytes=private, available_bytes=avail)
    if avail is None:
        return plan
    by_mem = int((avail * MEM_FRACTION - (depth + provers) * held) // (held + private))
    plan["by_memory"] = by_mem
    plan["workers"] = max(1, min(by_cores, by_mem))
    if shm_free is not None and not host_assign and held >= SHARE_MIN_BYTES:
        plan["by_shm"] = by_shm = int(shm_free // (held * SHM_MARGIN)) - depth - provers
        if by_shm >= 1:              # below 1 the witnesses travel pickled (no blocks): no cap
            plan["workers"] = max(1, min(plan["workers"], by_shm))
    return plan


def default_workers(circuits_n: int, name: str | None = None, log_size: int | None = None, depth: int = 2,
                    available: int | None = None, limbs: bool = True, host_assign: bool = False) -> int:
    return plan_workers(circuits_n, name, log_size, depth, available, limbs, host_assign)["workers"]


@dataclass(frozen=True)
class Job:
    """What to synthesize: circuit `name` at 2^log_size, one witness seed per circuit."""
    name: str
    log_size: int
    opts: object
    seeds: tuple
    host_assign: bool        # a/b/c evaluated by the worker (CPU backend); else on the prover thread
    witness_limbs: bool = False   # the worker also converts z to limbs for the backend's assign (cuda)


SHARE_MIN_BYTES = 1 << 20   # arrays from process workers at least this large travel in shared memory
SHM_DIR = "/dev/shm"
SHM_MARGIN = 1.1            # room asked for a block: its size plus 10%


def shm_free_bytes() -> int | None:
    """Free space of the shared-memory filesystem (None where there is none to ask). A tmpfs that
    fills up while a worker writes its witness kills it with SIGBUS, so blocks are only made with room
    (and reserved: shm_block)."""
    try:
        st = os.statvfs(SHM_DIR)
    except OSError:
        return None
    return st.f_bavail * st.f_frsize


def shm_room(nbytes: int) -> bool:
    free = shm_free_bytes()
    return free is not None and free >= nbytes * SHM_MARGIN


def shm_block(size: int):
    """A new shared-memory block of `size` bytes with its pages reserved (posix_fallocate), or None where
    /dev/shm cannot hold it. Room checked first can still be taken by another worker before the pages are
    written, and a write past a full tmpfs is SIGBUS, not an error: the reservation turns that into ENOSPC
    here, before the block is used."""
    shm = shared_memory.SharedMemory(create=True, size=size)
    try:
        fd = os.open(os.path.join(SHM_DIR, shm.name), os.O_RDWR)
        try:
            os.posix_fallocate(fd, 0, size)
        finally:
            os.close(fd)
    except OSError:
        shm.close()
        shm.unlink()
        return None
    return shm


@dataclass(frozen=True)
class Shared:
    """A numpy array left by a worker process in a POSIX shared-memory block: the prover maps it
    instead of unpickling a copy through a pipe (a 2^27 witness is 4 GiB; unpickling it holds the GIL)."""
    name: str
    shape: tuple
    dtype: str

    @classmethod
    def put(cls, a: np.ndarray) -> "Shared | None":
        """a copied into a new block; None where /dev/shm cannot hold it."""
        shm = shm_block(max(a.nbytes, 1))
        if shm is None:
            return None
        np.ndarray(a.shape, a.dtype, buffer=shm.buf)[...] = a
        out = cls(shm.name, a.shape, a.dtype.str)
        shm.close()
        return out

    def discard(self) -> None:
        """Remove the block unread (a hand-off that failed); nothing if it was taken already."""
        try:
            shm = shared_memory.SharedMemory(name=self.name)
        except FileNotFoundError:
            return
        shm.unlink()
        shm.close()

    def take(self):
        """(array, block): the array maps the block; the block's name is removed at once, and its
        memory goes when the block is closed after the last use of the array."""
        shm = shared_memory.SharedMemory(name=self.name)
        shm.unlink()
        return np.ndarray(self.shape, np.dtype(self.dtype), buffer=shm.buf), shm


def _shared(a, share: bool):
    """a as a Shared block where sharing pays and /dev/shm has room; else a itself (pickled)."""
    if share and isinstance(a, np.ndarray) and a.dtype != object and a.nbytes >= SHARE_MIN_BYTES \
            and shm_room(a.nbytes):
        shared = Shared.put(a)
        if shared is not None:
            return shared
    return a


def _parts(x, fn):
    """x with fn applied to it, or to each of a packed witness's arrays (which B3 shares one by one)."""
    if isinstance(x, PackedWitness):
        return replace(x, bits=fn(x.bits), idx=fn(x.idx), vals=fn(x.vals))
    return fn(x)


def _discard_shared(x):
    if isinstance(x, Shared):
        x.discard()
    return x


def _shared_packed(pw: PackedWitness) -> PackedWitness:
    """B3: a packed witness whose large arrays wait in Shared blocks (not pickled through the pool's pipe);
    on a failure, the blocks already made are removed."""
    made: list = []

    def share(a):
        made.append(_shared(a, True))
        return made[-1]
    try:
        return _parts(pw, share)
    except BaseException:
        for x in made:
            _discard_shared(x)
        raise


def _unshare(payload):
    """(inputs, aux, limbs) with Shared parts mapped (a packed witness's too), and the blocks to close
    after the proof."""
    blocks = []

    def take(x):
        if isinstance(x, Shared):
            x, shm = x.take()
            blocks.append(shm)
        return x
    return tuple(_parts(x, take) for x in payload), blocks


class _ShmAlloc:
    """`alloc` for circuits.witness in a process worker: the witness is written straight into a
    fresh (zero-filled) shared-memory block, so it reaches the prover with no copy."""

    def __init__(self):
        self.blocks: list = []       # (block, data address of the array made in it)

    def __call__(self, shape, dtype) -> np.ndarray:
        dtype = np.dtype(dtype)
        size = max(int(np.prod(shape)) * dtype.itemsize, 1)
        shm = shm_block(size) if shm_room(size) else None
        if shm is None:                      # no room in /dev/shm: an ordinary array, pickled back
            return np.zeros(shape, dtype)
        a = np.ndarray(shape, dtype, buffer=shm.buf)
        self.blocks.append((shm, a.ctypes.data))
        return a

    def handle(self, a: np.ndarray) -> Shared:
        if len(self.blocks) != 1 or a.ctypes.data != self.blocks[0][1]:
            raise RuntimeError("the witness is not in the one block allocated for it")
        return Shared(self.blocks[0][0].name, a.shape, a.dtype.str)

    def close(self, unlink: bool = False) -> None:
        """Unmap the blocks here (the prover maps and unlinks them); with `unlink` (a failure) also
        remove them, and leave a mapping still viewed to the process's end."""
        blocks, self.blocks = self.blocks, []
        for shm, _ in blocks:
            if unlink:
                shm.unlink()
                try:
                    shm.close()
                except BufferError:
                    pass
            else:
                shm.close()          # BufferError here: a view of the witness was kept (a bug)


_OWN_CIRCUIT: dict = {}     # a process worker's circuit for host assign: built on its first job, kept


def _r1cs_for(name: str, log_size: int, opts):
    key = (name, log_size, opts)
    if key not in _OWN_CIRCUIT:
        _OWN_CIRCUIT.clear()
        _OWN_CIRCUIT[key] = circuits.build(name, log_size, opts=opts)[0]
    return _OWN_CIRCUIT[key]


def synth_one(name: str, log_size: int, opts, seed: int, host_assign: bool, witness_limbs: bool = False,
              share: bool = False, r1cs=None):
    """One circuit's synthesis (in a worker thread or process): (payload, start, stop) with absolute
    perf_counter times (CLOCK_MONOTONIC: comparable across processes on Linux). Only the witness is
    generated (circuits.witness: the prover holds the circuit). The payload is an Assignment
    (host_assign: against `r1cs`, or the worker process's own copy, built on its first job) or
    (inputs, aux, z as canonical limbs or None); with `share` (process workers) large limb arrays
    come back as Shared blocks, the witness-only limbs written there directly."""
    t0 = time.perf_counter()
    if host_assign:
        r1cs = r1cs if r1cs is not None else _r1cs_for(name, log_size, opts)
        inputs, aux = circuits.witness(name, log_size, seed=seed, opts=opts)
        return assign(r1cs, inputs, aux, Domain.for_size(r1cs.qap_rows)), t0, time.perf_counter()
    sp = plans.handoff(opts) if opts is not None else None
    packs = witness_limbs and sp is not None and sp.packed_witness   # (inputs, PackedWitness, None)
    packed_shared = share and packs and sp.packed_shared
    if packs and sp.packed_direct and circuits.has_packed_witness(name):      # B4: no limbs made at all
        inputs, pw = circuits.witness_packed(name, log_size, seed=seed, opts=opts)
        if pw is not None:
            payload = (inputs, _shared_packed(pw) if packed_shared else pw, None)
            return payload, t0, time.perf_counter()
    direct = share and witness_limbs and circuits.has_witness_only(name)
    alloc = _ShmAlloc() if direct else None
    try:
        inputs, aux = circuits.witness(name, log_size, seed=seed, opts=opts, limbs=witness_limbs, alloc=alloc)
        if direct and alloc.blocks:
            pw = pack(aux) if packs else None
            payload = (inputs, pw if pw is not None else alloc.handle(aux), None)
            del aux
            alloc.close(unlink=pw is not None)
        elif witness_limbs and aux.dtype == np.uint32:      # limbs from the generator (porep_partition)
            pw = pack(aux) if packs else None
            payload = (inputs, pw, None) if pw is not None else \
                tuple(_shared(x, share) for x in (inputs, aux, None))   # assign takes them as they are
        else:
            limbs = ints_to_limbs(fr_array(np.concatenate([inputs, aux])), FR_LIMBS) if witness_limbs else None
            pw = pack(limbs[len(inputs):]) if packs else None
            payload = (inputs, pw, None) if pw is not None else tuple(_shared(x, share) for x in (inputs, aux, limbs))
        if packed_shared and isinstance(payload[1], PackedWitness):
            payload = (payload[0], _shared_packed(payload[1]), None)
    except BaseException:
        if alloc is not None:
            alloc.close(unlink=True)
        raise
    return payload, t0, time.perf_counter()


@dataclass
class CircuitRun:
    """When one circuit's steps ran (seconds since the run started)."""
    circuit: int
    seed: int
    worker: int | None           # None: synthesized on the prover thread (sequential run)
    synth_start_s: float = 0.0
    synth_stop_s: float = 0.0
    ready_s: float = 0.0         # the result is back in this process (after unpickling, for processes)
    taken_s: float = 0.0         # the prover took it from the queue
    prove_start_s: float = 0.0
    prove_stop_s: float = 0.0
    spans: list = field(default_factory=list)     # (phase, timing.Span) of this circuit's proving
    device: int | None = None    # the GPU of the lane that proved it (None: the CPU backend's)
    lane: int = 0

    def device_spans(self) -> list[dict]:
        return [{"phase": p, "start_s": s.device_start_s, "stop_s": s.device_stop_s}
                for p, s in self.spans if s.device_start_s is not None]

    def as_dict(self) -> dict:
        dev = self.device_spans()
        return {"circuit": self.circuit, "seed": self.seed, "worker": self.worker, "device": self.device, "lane": self.lane,
                "synth_start_s": self.synth_start_s, "synth_stop_s": self.synth_stop_s,
                "ready_s": self.ready_s, "taken_s": self.taken_s,
                "prove_start_s": self.prove_start_s, "prove_stop_s": self.prove_stop_s,
                "device_start_s": dev[0]["start_s"] if dev else None,
                "device_stop_s": dev[-1]["stop_s"] if dev else None,
                "device_spans": dev}


@dataclass
class RunResult:
    mode: str                    # "pipelined" or "sequential"
    wall_s: float
    runs: list                   # CircuitRun per circuit, by index
    proofs: list
    publics: list
    phases: dict                 # the run's PhaseTimer.as_dict()
    workers: int | None = None
    depth: int | None = None
    pool: str | None = None
    lanes: list = field(default_factory=list)      # per lane: lane, device, phases (None: lost), failed; a failed
    #                                                attempt's records stay in its lane's phases (and the merged ones)
    failures: list = field(default_factory=list)   # per failed proof: lane, device, circuit, error


class _Proving:
    """The prover thread's step for one circuit: device assign where needed, prove, record."""

    def __init__(self, prover, r1cs, job: Job, timer: PhaseTimer):
        self.prover, self.r1cs, self.job, self.timer = prover, r1cs, job, timer
        self.domain = Domain.for_size(r1cs.qap_rows)
        self.impl = prover.backend.phase_impl("synthesis")
        self.blocks, self.pending = [], []      # shared-memory blocks of the circuit being proved / not yet closed

    def now(self) -> float:
        return time.perf_counter() - self.timer.origin

    def prove(self, run: CircuitRun, payload):
        """The proof and public inputs of one circuit; its spans are tagged with its index."""
        timer, i = self.timer, run.circuit
        run.prove_start_s = self.now()
        if self.job.host_assign:
            asg = payload
        else:
            (inputs, aux, limbs), blocks = _unshare(payload)
            if isinstance(aux, PackedWitness):            # B2: bits plus the other entries, expanded on the GPU
                kw, aux = {"z_packed": aux}, None
            else:
                kw = {} if limbs is None else {"z_limbs": limbs}
            with timer.phase("synthesis", self.impl):
                with circuit(i, label="assign"):
                    asg = self.prover.backend.assign(self.r1cs, inputs, aux, self.domain, **kw)
            run.spans.append(("synthesis", timer.records["synthesis"].spans[-1]))
            asg.abc_spendable = True                       # proved once, here: F2 may consume its a, b, c
            del aux, limbs
            self.blocks = blocks
        marks = {p: (len(r.spans), len(r.circuits)) for p, r in timer.records.items()}
        proof = self.prover.prove([asg], timer)[0]
        for p, rec in timer.records.items():
            s0, c0 = marks.get(p, (0, 0))
            run.spans.extend((p, s) for s in rec.spans[s0:])
            for sub in rec.circuits[c0:]:        # the backend numbers circuits within its batch of one
                sub.circuit = i
        run.prove_stop_s = self.now()
        public = asg.public
        del asg
        self.close_blocks()
        return proof, public

    def close_blocks(self):
        """Unmap the circuit's shared-memory blocks once nothing views them (else at a later call)."""
        left = []
        for shm in self.pending + self.blocks:
            try:
                shm.close()
            except BufferError:          # still viewed (e.g. a caller kept the Assignment): retry later
                left.append(shm)
        self.pending, self.blocks = left, []


def _put(q: queue.Queue, item, stop: threading.Event) -> bool:
    while not stop.is_set():
        try:
            q.put(item, timeout=QUEUE_POLL_S)
            return True
        except queue.Full:
            continue
    return False


def _any_error(e: BaseException) -> bool:
    return True


@dataclass
class Lane:
    """One prover and the GPU it proves on. `use()` makes that device current in the lane's thread (on the
    cuda backend, cupy.cuda.Device(i)); `device` names it in the report (None: the CPU backend's one lane).
    `device_error(e)`: whether a proof's error is the device's (the circuit may go to another lane) rather
    than the circuit's (the run ends); the cuda lanes' is per_device.is_device_error."""
    prover: object
    device: int | None = None
    use: object = contextlib.nullcontext
    device_error: object = _any_error


class _Work:
    """The circuits left to synthesize: indices in order, a failed proof's circuit put back first (made
    again: the failed proof may have consumed its witness). While nothing is left to take but proofs that
    could still fail are running, a worker waits here rather than stopping."""

    def __init__(self, n: int):
        self.todo = collections.deque(range(n))
        self.left = n                       # circuits not yet proved
        self.done_at: float | None = None   # perf_counter when the last was proved (the run's end)
        self.cond = threading.Condition()

    def take(self, stop: threading.Event) -> int | None:
        with self.cond:
            while not self.todo:
                if self.left == 0 or stop.is_set():
                    return None
                self.cond.wait(QUEUE_POLL_S)
            return self.todo.popleft()

    def proved(self) -> None:
        with self.cond:
            self.left -= 1
            if self.left == 0:
                self.done_at = time.perf_counter()
            self.cond.notify_all()

    def again(self, i: int) -> None:
        with self.cond:
            self.todo.appendleft(i)
            self.cond.notify_all()

    def finished(self) -> bool:
        return self.left == 0


def run_pipelined(provers, r1cs, job: Job, workers: int, depth: int, pool: str = "thread") -> RunResult:
    """Prove job's circuits with synthesis on `workers` workers ahead of the provers, through a queue of
    `depth`. `provers`: one Prover (one lane, on the caller's thread) or a list of Lane. Raises PipelineError
    if a synthesis fails (the other workers are stopped first) or every lane's proof failed."""
    if workers < 1 or depth < 1:
        raise ValueError(f"a pipeline needs >= 1 worker and depth >= 1, got {workers} and {depth}")
    if pool not in ("thread", "process"):
        raise ValueError(f"synthesis pool must be thread or process, not {pool!r}")
    lanes = list(provers) if isinstance(provers, (list, tuple)) else [Lane(provers)]
    if not lanes:
        raise ValueError("a pipeline needs at least one prover")
    n = len(job.seeds)
    executor = make_pool("process", workers) if pool == "process" else None   # started before the clock
    q: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()
    todo = _Work(n)
    origin = time.perf_counter()
    steps = [_Proving(ln.prover, r1cs, job, PhaseTimer(device=ln.prover.backend.timer_device(), origin=origin))
             for ln in lanes]
    now = steps[0].now

    def work(w: int):
        while not stop.is_set():
            i = todo.take(stop)
            if i is None:
                return
            args = (job.name, job.log_size, job.opts, job.seeds[i], job.host_assign, job.witness_limbs,
                    executor is not None)
            try:   # threads share the prover's circuit; a process builds its own once if it assigns
                res = executor.submit(synth_one, *args).result() if executor else synth_one(*args, r1cs=r1cs)
                item = (i, w, res, now(), None)
            except BaseException as e:          # handed to a prover, which raises it
                item = (i, w, None, now(), e)
            if not _put(q, item, stop):
                _discard(item)                  # the run stopped: nobody takes it
                return
            if item[4] is not None:
                return

    threads = [threading.Thread(target=work, args=(w,), name=f"cuzk-pipe-{w}", daemon=True)
               for w in range(workers)]
    runs: list = [None] * n
    proofs: list = [None] * n
    publics: list = [None] * n
    failures: list = []
    failures_lock = threading.Lock()

    def prove_lane(k: int):
        """Lane k's loop: take a synthesized circuit, prove it, until every circuit is proved."""
        lane, step = lanes[k], steps[k]
        while not todo.finished() and not stop.is_set():
            try:
                item = q.get(timeout=QUEUE_POLL_S)
            except queue.Empty:
                if not any(t.is_alive() for t in threads) and q.empty() and not todo.finished():
                    raise PipelineError("the synthesis workers stopped without a result")
                continue
            i, w, res, ready, err = item
            taken = step.now()
            if err is not None:
                raise PipelineError(f"synthesis of circuit {i} (seed {job.seeds[i]}) failed: "
                                    f"{type(err).__name__}: {err}") from err
            payload, t0, t1 = res
            run = CircuitRun(i, job.seeds[i], w, t0 - origin, t1 - origin, ready, taken, device=lane.device, lane=k)
            step.timer.add_circuit_span("synthesis", i, t0, t1, label="witness")
            try:
                proofs[i], publics[i] = step.prove(run, payload)
            except Exception as e:
                _discard(item)                  # its blocks, if the proof failed before taking them
                if len(lanes) == 1 or not lane.device_error(e):
                    raise                       # one lane, or the circuit's own error: the run ends, as it did
                step.close_blocks()
                where = f"device {lane.device}" if lane.device is not None else f"lane {k}"
                with failures_lock:
                    before = [f for f in failures if f["circuit"] == i]
                    failures.append({"lane": k, "device": lane.device, "circuit": i, "at_s": step.now(),
                                     "error": f"{type(e).__name__}: {e}"})
                    others = len(lanes) - len({f["lane"] for f in failures})     # a failed lane takes no more
                if before:                      # a second device failed on it too: the circuit, not the devices
                    raise PipelineError(f"circuit {i} failed on two devices ({before[0]['error']}; then {where}: "
                                        f"{type(e).__name__}: {e}): not retried again") from e
                if not others:
                    raise PipelineError(f"every device failed; the last, {where}, on circuit {i}: "
                                        f"{type(e).__name__}: {e}") from e
                print(f"cuzk: {where} failed proving circuit {i} ({type(e).__name__}: {e}); it takes no more "
                      f"circuits, and circuit {i} is proved again on another", file=sys.stderr, flush=True)
                todo.again(i)
                return
            del payload, res, item
            runs[i] = run
            todo.proved()

    errors: list = []

    def lane_thread(k: int):
        try:
            with lanes[k].use():
                prove_lane(k)
        except BaseException as e:
            errors.append(e)
            stop.set()

    lane_threads = [] if len(lanes) == 1 else [
        threading.Thread(target=contextvars.copy_context().run, args=(lane_thread, k), name=f"cuzk-lane-{k}",
                         daemon=True) for k in range(len(lanes))]
    try:
        for t in threads:
            t.start()
        if lane_threads:
            for t in lane_threads:
                t.start()
            for t in lane_threads:
                t.join()
            if errors:
                raise errors[0]
            wall = todo.done_at - origin    # not when the idle lanes noticed (up to a queue poll later)
        else:
            with lanes[0].use():
                prove_lane(0)
            wall = now()
    finally:
        stop.set()
        _drain(q)                           # unblock workers waiting on a full queue
        for t in threads:
            if t.is_alive():
                t.join()
        _drain(q)                           # what a worker put while the first drain ran
        if executor is not None:
            executor.shutdown(wait=True, cancel_futures=True)
    lane_info = []
    for k, (ln, step) in enumerate(zip(lanes, steps)):
        failed = next((f["error"] for f in failures if f["lane"] == k), None)
        try:
            with ln.use():
                phases = step.timer.as_dict()
        except Exception:                   # a failed device may not read its events back
            if failed is None:
                raise
            phases = None
        lane_info.append({"lane": k, "device": ln.device, "phases": phases, "failed": failed})
    phases = lane_info[0]["phases"] if len(lanes) == 1 else merge_phases([x["phases"] for x in lane_info
                                                                          if x["phases"] is not None])
    return RunResult("pipelined", wall, runs, proofs, publics, phases, workers, depth, pool, lane_info, failures)


def _discard(item) -> None:
    """Remove the /dev/shm blocks of a queue item that will never be proved (a run that stopped early):
    a worker's witness (Shared) or a packed witness's arrays (B3)."""
    res = item[2]
    if res is not None and isinstance(res[0], tuple):
        for x in res[0]:
            _parts(x, _discard_shared)


def _drain(q: queue.Queue) -> None:
    while True:
        try:
            _discard(q.get_nowait())
        except queue.Empty:
            return


def warm_up(prover, r1cs, job: Job, seed: int | None = None) -> tuple:
    """(proof, public) of one circuit proved untimed along the pipelined path (run_sequential's: the same
    hand-off, B2's packed witness, device assign and in-place a, b, c, F2), so the first timed proof finds
    every kernel, table and pool block of that path already made."""
    res = run_sequential(prover, r1cs, replace(job, seeds=(job.seeds[0] if seed is None else seed,)))
    return res.proofs[0], res.publics[0]


def run_sequential(prover, r1cs, job: Job) -> RunResult:
    """The same circuits one after another on this thread: synthesize, prove, next."""
    timer = PhaseTimer(device=prover.backend.timer_device())
    step = _Proving(prover, r1cs, job, timer)
    runs, proofs, publics = [], [], []
    for i, seed in enumerate(job.seeds):
        payload, t0, t1 = synth_one(job.name, job.log_size, job.opts, seed, job.host_assign, job.witness_limbs,
                                    r1cs=r1cs)
        ready = step.now()
        run = CircuitRun(i, seed, None, t0 - timer.origin, t1 - timer.origin, ready, ready)
        timer.add_circuit_span("synthesis", i, t0, t1, label="witness")
        proof, public = step.prove(run, payload)
        del payload
        runs.append(run)
        proofs.append(proof)
        publics.append(public)
    wall = step.now()
    return RunResult("sequential", wall, runs, proofs, publics, timer.as_dict())


# --- summary ---

def _union(intervals) -> list[tuple[float, float]]:
    out: list = []
    for a, b in sorted((a, b) for a, b in intervals if b > a):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def _length(intervals) -> float:
    return sum(b - a for a, b in _union(intervals))


def _overlap(xs, ys) -> float:
    """Length of the time covered by both interval sets."""
    return _length([(max(a, c), min(b, d)) for a, b in _union(xs) for c, d in _union(ys)])


def summary(res: RunResult) -> dict:
    """Throughput, busy/idle time of the provers and (where CUDA events were recorded) the GPUs, and the
    overlap of synthesis with proving, over the run's wall time. With several lanes the busy and idle
    seconds are summed over them (lane-seconds: idle = lanes x wall - busy) and `devices` has each lane's
    own, with its GPU's busy fraction; with one they are that lane's, as the run has one prover."""
    n, wall = len(res.runs), res.wall_s
    prove = [(r.prove_start_s, r.prove_stop_s) for r in res.runs]
    synth = [(r.synth_start_s, r.synth_stop_s) for r in res.runs]
    info = res.lanes or [{"lane": 0, "device": None, "failed": None}]
    devices = []
    for ln in info:
        mine = [r for r in res.runs if r.lane == ln["lane"]]
        dev = [(d["start_s"], d["stop_s"]) for r in mine for d in r.device_spans()]
        busy = _length([(r.prove_start_s, r.prove_stop_s) for r in mine])
        gpu = _length(dev) if dev else None
        devices.append({"lane": ln["lane"], "device": ln["device"], "circuits": [r.circuit for r in mine],
                        "prover_busy_s": busy, "gpu_busy_s": gpu,
                        "gpu_busy_fraction": None if gpu is None else gpu / wall, "failed": ln["failed"]})
    k = len(devices)
    busy = sum(d["prover_busy_s"] for d in devices)
    gpus = [d["gpu_busy_s"] for d in devices if d["gpu_busy_s"] is not None]
    gpu_busy = sum(gpus) if gpus else None
    return {
        "mode": res.mode, "circuits": n, "workers": res.workers, "depth": res.depth, "pool": res.pool,
        "lanes": k,
        "wall_s": wall, "proofs_per_s": n / wall, "s_per_proof": wall / n,
        "fill_s": min(a for a, _ in prove),          # before the first prove: nothing to prove yet
        "first_proof_s": min(b for _, b in prove),   # the first proof done: what a sector's first partition waits
        "overlap_s": _overlap(synth, prove),
        "prover_busy_s": busy, "prover_idle_s": k * wall - busy,
        "gpu_busy_s": gpu_busy, "gpu_idle_s": None if gpu_busy is None else k * wall - gpu_busy,
        "gpu_busy_fraction": None if gpu_busy is None else gpu_busy / (k * wall),
        "devices": devices,
        "device_failures": list(res.failures),
        "per_circuit": [r.as_dict() for r in res.runs],
    }
