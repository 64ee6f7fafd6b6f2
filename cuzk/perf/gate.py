"""`cuzk gate`: base against head, per phase, interleaved, with exit codes a CI job can trust.

Both commits are extracted (checkout.materialize). Each round starts one worker process per
commit (worker.py), each running its own commit's code, and asks them for samples in turn:
for every phase a base sample and a head sample a few milliseconds apart, the order
alternating (AB, BA, ...), so drift and bursts of load hit both sides alike. A round's value
for a phase is the median of its paired log ratios ln(head/base); rounds (fresh processes,
order alternating) are the independent units that compare.py judges. Exit codes: 0 no
regression, 1 a regression, 2 a benchmark error, an untrusted run, or nothing measured: never
a pass.
"""
from __future__ import annotations

import json
import math
import os
import queue
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Callable

from ..files import read_input
from . import checkout
from .compare import NOT_RESOLVED, REGRESSION, Comparison, compare, resolved
from .disk_watch import Watched, absolute_caches, changed_message, import_roots, remove_new, shared_caches
from .foreign_work import device_waits, foreign_excess, round_excess, round_interrupts
from .isolation import device_interrupt_count, exposure, steal_ns
from .sched_window import run_delay
from .gate_config import MAX_ROUNDS, MAX_SAMPLES, GateConfig, WorkloadConfig, min_p_value
from .noise import NoiseError, Threshold, make_record, spec_key
from .suite import gate_estimate_s
from .values import is_int, is_number
from .sampler import UntrustedRun, nvml_guard
from .worker import PROTOCOL
from .workload import AREAS, DEFAULT_MIN_SAMPLE_S, Spec

EXIT_OK, EXIT_REGRESSION, EXIT_ERROR = 0, 1, 2
NO_GPU = "the GPU cannot run here"      # the pre-flight's message, which the report's first line repeats
SIDES = ("base", "head")


class WorkerFailed(RuntimeError):
    pass


class WorkerTimeout(WorkerFailed):
    """A worker that did not reply within its timeout: it was killed."""


# Run by the worker's interpreter before anything of the commit is imported (importing cuzk.perf.worker
# runs the commit's cuzk/__init__.py): fd 1 becomes the log, fd 0 /dev/null, and the worker dies with the
# gate (SIGKILL on the parent's death where Linux offers it; everywhere, EOF on a lifeline pipe that only
# the gate holds open). Not dumpable: no process of the gate's user (the other side's code) may trace it, short
# of CAP_SYS_PTRACE (root: docs/runners.md 4).
# An editable install of cuzk (the gate's own, in CI the base's checkout) puts a finder on sys.meta_path that
# serves any cuzk module the commit's root lacks from the installed copy: a head that leaves a module out would be
# measured with the base's. Workers import from the commit's root alone.
NO_EDITABLE = ("sys.meta_path[:] = [f for f in sys.meta_path if not str(getattr(f, '__module__', '')).startswith("
               "'__editable__')]; sys.path_hooks[:] = [h for h in sys.path_hooks if not str(getattr(h, '__module__', "
               "'')).startswith('__editable__')]; sys.path_importer_cache.clear()\n")

_BOOT = """\
import os, sys, threading
{no_editable}{pin}os.dup2(2, 1)
_null = os.open(os.devnull, os.O_RDONLY); os.dup2(_null, 0); os.close(_null)
try:
    import ctypes
    ctypes.CDLL(None).prctl(1, 9)
    ctypes.CDLL(None).prctl(4, 0)
except Exception:
    pass
if os.getppid() != {ppid}:
    os._exit(3)
def _lifeline(fd):
    while os.read(fd, 1):
        pass
    os._exit(3)
threading.Thread(target=_lifeline, args=({life},), daemon=True).start()
import runpy
sys.argv = ["cuzk.perf.worker", "{req}", "{rep}"]
runpy.run_module("cuzk.perf.worker", run_name="__main__")
"""


@dataclass(frozen=True)
class Usage:
    """A worker's processes so far: CPU seconds of their live threads (/proc/PID/task/TID/schedstat, ns: precise,
    but a thread's time leaves with it), those threads, and clock ticks (/proc/PID/stat utime, stime, cutime,
    cstime: coarse, 10 ms, but exited threads and reaped children stay counted)."""
    cpu_s: float
    threads: frozenset
    ticks: int
    per_thread: tuple = ()          # (tid, ns) of each live thread: which one ran, when one ran too much
    delay_ns: int | None = None     # the main (sampling) thread's time runnable but not running (schedstat's 2nd)
    own_ns: int | None = None       # all it ran, precise, its main process's exited threads included (group_cpu_ns)


class WorkerProcess:
    """`python -m cuzk.perf.worker` with the commit's root first on sys.path; JSON lines on a private pair
    of pipes, each reply matched to its request by id; the worker's own output goes to a log file."""

    def __init__(self, root: Path, timeout: float, cpus: tuple[int, ...] | None = None, log=None,
                 setup_cpus: tuple[int, ...] | None = None):
        """cpus: the CPUs the worker samples on; setup_cpus: where it sets up, when wider (narrow() then moves
        every thread of it to cpus before the first sample)."""
        env = absolute_caches(dict(os.environ))
        self.cpus = cpus
        env["PYTHONPATH"] = str(root)
        env["PYTHONDONTWRITEBYTECODE"] = "1"    # nothing written into the trees: a change there is a rewrite
        env.pop("CUZK_OPT", None)
        self.timeout = timeout
        self.log = log
        self.err = tempfile.TemporaryFile(mode="w+")        # a file, not a pipe: it can never fill and block
        self.frozen, self._pids = False, None
        self.next_id = 0
        req_r, self._req_w = os.pipe()
        self._rep_r, rep_w = os.pipe()
        life_r, self._life_w = os.pipe()
        # pinned before anything is imported (threads inherit it), by the gate's code, not the commit's
        first = setup_cpus if (cpus and setup_cpus) else cpus
        pin = f"os.sched_setaffinity(0, {list(first)})\n" if first else ""
        boot = _BOOT.format(no_editable=NO_EDITABLE, pin=pin, ppid=os.getpid(), life=life_r, req=req_r, rep=rep_w)
        try:
            self.p = subprocess.Popen([sys.executable, "-c", boot], cwd=root, env=env, stdin=subprocess.DEVNULL,
                                      stdout=self.err, stderr=self.err, pass_fds=(req_r, rep_w, life_r),
                                      start_new_session=True)
        finally:
            for fd in (req_r, rep_w, life_r):
                os.close(fd)
        self._req = os.fdopen(self._req_w, "w")
        self.lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, args=(os.fdopen(self._rep_r, "r"),), daemon=True).start()

    def _read(self, f):
        with f:
            for line in f:
                self.lines.put(line)
        self.lines.put(None)

    @property
    def pid(self) -> int:
        return self.p.pid

    def new_processes(self) -> list[int]:
        """Processes of its session that were not there at its first usage()."""
        if self._pids is None:
            return []
        return sorted(set(session_pids(self.p.pid)) - set(self._pids))

    def escaped(self) -> list[int]:
        """Processes descended from the worker (by parent) that left its session (setsid): out of reach of
        freeze() and of the per-sample reads. An orphan's parent is the gate (subreaper()), checked apart."""
        table = proc_table()
        return sorted(p for p in descendants(table, {self.p.pid} | set(self._members())) if table[p][1] != self.p.pid)

    def usage(self) -> Usage | None:
        """What its processes (those of its session at the first call) have run so far, in one pass over /proc;
        None where the kernel keeps no per-thread count. An idle worker waits on its request pipe, so none of
        it moves while its rival samples."""
        ns, ticks, seen, alive, each, delay = 0, 0, False, set(), [], None
        group, main_live = group_cpu_ns(self.p.pid), 0
        for pid in self._members():
            try:
                with open(f"/proc/{pid}/stat") as f:
                    stat = f.read()
                ticks += sum(int(v) for v in stat[stat.rindex(")") + 2:].split()[11:15])   # utime stime cutime cstime
                tids = os.listdir(f"/proc/{pid}/task")
            except (OSError, ValueError, IndexError):
                continue
            alive.update(int(t) for t in tids if t.isdigit())
            for tid in tids:
                try:
                    with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                        fields = f.read().split()
                    t_ns = int(fields[0])
                    if tid == str(self.p.pid):
                        delay = int(fields[1])
                    if pid == self.p.pid:
                        main_live += t_ns
                    ns += t_ns
                    each.append((int(tid), t_ns))
                    seen = True
                except (OSError, ValueError, IndexError):
                    continue
        own = None if group is None else ns - main_live + max(group, main_live)
        return Usage(ns / 1e9, frozenset(alive), ticks, tuple(each), delay, own) if seen else None

    def stderr(self) -> str:
        """What the worker and the measured code printed (fd 1 and 2)."""
        if self.err.closed:
            return ""
        self.err.flush()
        self.err.seek(0)
        return self.err.read()

    def ask(self, msg: dict) -> dict:
        self.send(msg)
        return self.receive()

    def narrow(self) -> None:
        """Every thread of the worker, and of any process it started, moved to the sampling CPUs (threads
        started later inherit them). With two or more, the sampling thread (the worker's main one) has the last
        to itself and every other thread shares the rest: a helper thread woken during a sample (the driver's,
        the launcher's lifeline) would otherwise take the CPU from a host-paced phase for a scheduler slice;
        threads the measured code starts later inherit the sampling thread's CPU, as they would with one.
        A thread that cannot be moved fails the round: its samples would not be taken where its rival's are."""
        if not self.cpus:
            return
        alone = self.cpus[-1:] if len(self.cpus) > 1 else self.cpus
        rest = self.cpus[:-1] if len(self.cpus) > 1 else self.cpus
        for _ in range(3):                # again while a thread not yet moved started one on the wide set
            moved = 0
            for tid in session_threads(self.p.pid):
                want = alone if tid == self.p.pid else rest
                try:
                    if os.sched_getaffinity(tid) != set(want):
                        os.sched_setaffinity(tid, want)
                        moved += 1
                except ProcessLookupError:
                    pass                                     # exited meanwhile
                except OSError as e:
                    raise self._failed(f"thread {tid} could not be moved to CPUs {list(want)}: {e}") from None
            if not moved:
                return

    def freeze(self) -> bool:
        """Stop every process of the worker (SIGSTOP: no handler, no exception) until thaw(), and wait until each
        of their threads is stopped: while its rival samples, an idle worker runs nothing at all, on the CPU or,
        through a launch, on the GPU. The processes are those of its session at its first usage (its process
        group and each of them); one started later is named at the round's end. False where a thread did not
        stop within FREEZE_WAIT_S (something continues it)."""
        self._signal(signal.SIGSTOP)
        self.frozen = True
        t0 = time.perf_counter()
        while states := running_states(self._members()):
            waited = time.perf_counter() - t0
            # a thread in the kernel's uninterruptible wait (D: the driver, a page fault) stops when it leaves it
            if waited > FREEZE_WAIT_S and (states != {"D"} or waited > FREEZE_WAIT_D_S):
                return False
            time.sleep(0.0001)
        return True

    def thaw(self) -> None:
        """Continue what freeze() stopped (before the worker's own sample, its quit, its close)."""
        if self.frozen:
            self._signal(signal.SIGCONT)
            self.frozen = False

    def _members(self) -> list[int]:
        """Those of its first processes (its session's at the first call: its first usage or stop) still in its
        session: a pid that ended and was given to another process (of this user: another job's) is never read
        or signalled."""
        if self._pids is None:
            self._pids = session_pids(self.p.pid)
        return [pid for pid in (self._pids or []) if pid == self.p.pid or session_of(pid) == self.p.pid]

    def _signal(self, sig) -> None:
        for send, target in [(os.killpg, self.p.pid)] + [(os.kill, pid) for pid in self._members()]:
            try:
                send(target, sig)
            except OSError:
                pass                                     # gone, or its group left: what stays is checked

    def send(self, msg: dict) -> None:
        self.next_id += 1
        try:
            self._req.write(json.dumps({**msg, "id": self.next_id}) + "\n")
            self._req.flush()
        except (BrokenPipeError, OSError, ValueError):
            pass                                             # the reply (EOF) tells what happened

    def _failed(self, what: str) -> WorkerFailed:
        """The failure, with the worker's output left in the gate's log (never in the report)."""
        if self.log is not None:
            out = self.stderr().strip()
            self.log(f"cuzk gate: worker {self.pid}: {what}; its output"
                     + (f" (last 40 lines):\n{_tail(out, 40)}" if out else ": none"))
        return WorkerFailed(what)

    def receive(self) -> dict:
        try:
            line = self.lines.get(timeout=self.timeout)
        except queue.Empty:
            e = self._failed(f"worker timed out after {self.timeout:.0f} s and was killed")
            self.kill()
            raise WorkerTimeout(str(e)) from None
        if line is None:
            code = self.p.wait()
            raise self._failed(f"worker exited with code {code} without a reply")
        try:
            rep = json.loads(line)
        except ValueError:
            raise self._failed(f"worker reply is not JSON: {line[:200]!r}") from None
        if not isinstance(rep, dict) or rep.get("id") != self.next_id:
            got = rep.get("id") if isinstance(rep, dict) else None
            raise self._failed(f"reply to request {got!r} where request {self.next_id} was asked: "
                               "the channel is out of step")
        if rep.get("status") == "error":
            self._failed(f"worker error: {str(rep.get('message', ''))[:200]}")
            raise WorkerFailed(str(rep.get("message", "worker error")))
        return rep

    def kill(self) -> None:
        """A hung worker does not read its requests: no polite quit, SIGKILL at once (its process group:
        whatever the measured code started goes too)."""
        if self.p.poll() is None:
            try:
                os.killpg(self.p.pid, signal.SIGKILL)
            except OSError:
                self.p.kill()
            self.p.wait()
        self.close()

    def close(self) -> None:
        self.thaw()
        if self.p.poll() is None:
            try:
                self._req.close()
                self.p.wait(timeout=10)
            except Exception:
                try:
                    os.killpg(self.p.pid, signal.SIGKILL)
                except OSError:
                    self.p.kill()
                self.p.wait()
        left = session_pids(self.p.pid)       # what it started and left behind, its own process group or not
        if left:
            _kill(left)
        try:
            self._req.close()
        except OSError:
            pass
        if self._life_w is not None:          # once: the number may belong to another file afterwards
            os.close(self._life_w)
            self._life_w = None
        self.err.close()


@dataclass
class Outcome:
    """One workload of the config, through the whole gate."""
    config: WorkloadConfig
    status: str = "running"     # running -> ok | skipped | error | untrusted | stopped
    message: str = ""
    rounds: list[dict] = field(default_factory=list)
    comparisons: list[Comparison] = field(default_factory=list)
    discards: int = 0
    numbers: dict | None = None     # calls per sample of each phase, shared by every worker of the workload
    guard_by: str | None = None     # who read NVML around the GPU samples: "gate" (between them), None (no guard,
                                    # or a gate.json from when the worker did, inside each round trip)

    def as_dict(self) -> dict:
        return {"spec": self.config.spec.as_dict(), "required": self.config.required,
                "phases": list(self.config.phases) if self.config.phases else None, "status": self.status,
                "message": self.message, "rounds": self.rounds, "discards": self.discards,
                "guard_by": self.guard_by, "comparisons": [c.as_dict() for c in self.comparisons]}


@dataclass
class GateResult:
    repo: str
    base: str
    head: str
    base_ref: str
    head_ref: str
    config: GateConfig
    outcomes: list[Outcome]
    wall_s: float = 0.0
    rules_changed: list[str] = field(default_factory=list)     # rule/harness files the head changes
    deps_changed: list[str] = field(default_factory=list)      # dependency files whose requirements differ
    build_changed: list[str] = field(default_factory=list)     # the kernels' nvcc flags the head changes
    isolation: list[str] = field(default_factory=list)         # what may slow a sample unseen here (isolation.py)
    exit_code: int = EXIT_ERROR
    not_gated: list[WorkloadConfig] = field(default_factory=list)   # left out by --cpu-only

    def regressions(self) -> list[tuple[Outcome, Comparison]]:
        return [(o, c) for o in self.outcomes for c in o.comparisons if c.verdict == REGRESSION]

    def unresolved(self) -> list[tuple[Outcome, Comparison]]:
        return [(o, c) for o in self.outcomes for c in o.comparisons if c.verdict == NOT_RESOLVED]

    def as_dict(self) -> dict:
        c = self.config
        return {"repo": self.repo, "base": self.base, "head": self.head, "base_ref": self.base_ref,
                "head_ref": self.head_ref,
                "exit_code": self.exit_code, "wall_s": self.wall_s, "rules_changed": self.rules_changed,
                "deps_changed": self.deps_changed, "build_changed": self.build_changed, "isolation": self.isolation,
                "config": {"path": c.path, "rounds": c.rounds, "samples": c.samples, "alpha": c.alpha,
                           "threshold": c.threshold, "thresholds": c.thresholds, "areas": list(c.areas),
                           "threshold_floor": c.threshold_floor, "min_sample_s": c.min_sample_s,
                           "min_device_sample_s": c.min_device_sample_s,
                           "pins": {a: {"pin": v, "reason": r} for a, (v, r) in c.pins.items()},
                           "derived": [{"spec": json.loads(k), "phase": a, **t.as_dict()}
                                       for (k, a), t in sorted(c.derived.items())],
                           "worker_cpus": c.worker_cpus, "worker_timeout_s": c.worker_timeout_s,
                           "max_idle_cpu_ms": c.max_idle_cpu_ms, "max_idle_cpu_ms_host": c.max_idle_cpu_ms_host,
                           "max_foreign_share": c.max_foreign_share, "irq_cost_us": c.irq_cost_us,
                           "max_discards": c.max_discards, "max_discards_apart": c.max_discards_apart,
                           "max_device_wait_us": c.max_device_wait_us,
                           "worker_timeouts_s": {w.spec.label(): c.timeout_for(w) for w in c.workloads}},
                "outcomes": [o.as_dict() for o in self.outcomes],
                "not_gated": [{"spec": w.spec.as_dict(), "required": w.required} for w in self.not_gated]}


def _request(cfg: GateConfig, wc: WorkloadConfig, root: Path, numbers: dict | None = None,
             key_dir: Path | None = None) -> dict:
    return {"protocol": PROTOCOL, "root": str(root), "spec": wc.spec.as_dict(), "areas": list(cfg.areas_for(wc)),
            "numbers": numbers, "key_dir": str(key_dir) if key_dir is not None else None,
            "min_sample_s": cfg.min_sample_s, "min_device_sample_s": cfg.min_device_sample_s}


def _tail(text: str, n: int = 15) -> str:
    return "\n".join(text.strip().splitlines()[-n:])


class _Stop(Exception):
    pass


def open_guard(what: str, policy, own_pids: frozenset):
    """The gate's NVML guard of a GPU workload's samples, read between them (sampler.nvml_guard); no NVML:
    UntrustedRun."""
    return nvml_guard(what, policy, own_pids)


def _round(cfg: GateConfig, oc: Outcome, r: int, roots: dict, shas: dict, spawn, log,
           key_dirs: dict | None = None, reaping: bool = False) -> None:
    order = SIDES if r % 2 == 0 else SIDES[::-1]
    workers: dict = {}
    side = order[0]
    asking = "set-up"                 # what the worker was doing when it failed: set-up or a phase

    def fail(status: str, message: str, discards=()):
        blame(side, status, message, discards)

    def fail_round(status: str, message: str):        # not one side's: which worker's code it was, is unknown
        oc.status, oc.message = status, message
        raise _Stop

    def blame(who: str, status: str, message: str, discards=()):
        oc.status, oc.message = status, f"{who} ({shas[who][:10]}), round {r + 1}: {message}".strip()
        oc.discards += len(discards)
        raise _Stop

    def halt(who: str, w, when: str) -> bool | None:
        """Stop a worker (freeze) and take the stop's own report; untrusted where it did not stop."""
        halted = _freeze(w)
        if halted is False:         # by whom is unknown: a process of either side may send SIGCONT
            fail_round("untrusted", f"round {r + 1}: the {who} worker (pid {w.pid}) did not stop within "
                                    f"{FREEZE_WAIT_S:.0f} s {when}: something continues it")
        _stops_since(w)
        return halted

    def unsignalled(pairs, when: str) -> None:
        """No stop or continue of these workers but the gate's since it last took their reports."""
        for who, w in pairs:
            if _stops_since(w):     # the workers are the gate's children: it hears of each
                fail_round("untrusted", f"round {r + 1}: the {who} worker (pid {w.pid}) was stopped or continued "
                                        f"{when}, not by the gate: a process of either side signals it")

    t0 = time.perf_counter()
    rejected: dict = {s: [] for s in SIDES}      # per side, why the gate's guard rejected a sample
    orphans_before = gate_children() if reaping else None
    # From round 2, GPU workloads set up both at once (nothing is timed yet, and they are given round 1's
    # calls per sample): a round costs one set-up, not two. Round 1 and host-timed workloads set up one
    # after the other: the first worker calibrates the calls per sample alone, as a rival's set-up beside
    # it would skew that, and host-timed ones calibrate in every set-up.
    together = oc.config.spec.backend != "cpu" and oc.numbers is not None
    try:
        for side in order:
            # set up together, on every CPU the gate may use (synthesis, the key's load), then narrowed
            workers[side] = spawn(roots[side], cfg.timeout_for(oc.config), setup_wide=together)
        ready = {}
        for side in order:
            # calls per sample: calibrated once, by the gate's first worker, then the same for every worker
            workers[side].send(_request(cfg, oc.config, roots[side], oc.numbers, (key_dirs or {}).get(side)))
            if not together:
                ready[side] = workers[side].receive()
                if oc.numbers is None and isinstance(ready[side], dict) and ready[side].get("status") == "ready":
                    oc.numbers = dict(ready[side].get("numbers") or {})
        for side in order:
            if together:
                ready[side] = workers[side].receive()
            if not isinstance(ready[side], dict) or ready[side].get("status") not in (
                    "ready", "unavailable", "untrusted", "unusable"):
                fail("error", f"unexpected reply {str(ready[side])[:200]}")
            if ready[side]["status"] == "untrusted":
                fail("untrusted", ready[side].get("message", ""), ready[side].get("discards", []))
            if ready[side]["status"] == "unusable":          # a GPU that cannot run: never a skip
                fail("error", ready[side].get("message", ""))
            if ready[side]["status"] not in ("ready", "unavailable"):
                fail("error", f"unexpected reply {ready[side]}")
            if ready[side]["status"] == "ready" and oc.numbers is not None and ready[side].get("numbers") != oc.numbers:
                fail("untrusted", f"it set up {str(ready[side].get('numbers'))[:200]} calls per sample, not the "
                                  f"{oc.numbers} the gate gave it")
            applied = ready[side].get("min_device_sample_s", 0.0)
            gpu_ready = ready[side]["status"] == "ready" and oc.config.spec.backend != "cpu"
            if gpu_ready and applied != cfg.min_device_sample_s:
                # the harness is the base's: one from before min_device_sample_s samples one call, and the
                # thresholds derived for the config's sampling would not fit what it measures
                fail("error", f"the base's harness applied min_device_sample_s = {applied!r}, not the config's "
                              f"{cfg.min_device_sample_s}: set [gate] min_device_sample_s = 0 to gate this base")
        if all(ready[s]["status"] == "ready" for s in SIDES):
            _check_compilers(ready, lambda st, m: fail_round(st, f"round {r + 1}: {m}"), log if r == 0 else None)
        unavailable = {s: ready[s].get("message", "") for s in SIDES if ready[s]["status"] == "unavailable"}
        if oc.config.spec.backend != "cpu" and not unavailable:     # round 1's too: its sampling thread alone
            for side in order:
                asking = "moving to the sampling CPUs"
                getattr(workers[side], "narrow", lambda: None)()
        if unavailable:
            why = "; ".join(f"{s}: {m}" for s, m in unavailable.items())
            if oc.config.required:
                oc.status, oc.message = "error", f"required workload cannot run: {why}"
            elif len(unavailable) < len(SIDES) or oc.rounds:
                # no GPU is the machine's, both sides' from the start: one side's alone, or one that ran before,
                # is its code's (the head's may answer so for a workload it slows), never a skip
                said = "to one side only" if len(unavailable) < len(SIDES) else "after a round that ran"
                oc.status, oc.message = "error", f"round {r + 1}: the workload was unavailable {said}: {why}"
            else:
                oc.status, oc.message = "skipped", f"not run (required = false): {why}"
            return
        t_ready = time.perf_counter()
        areas = cfg.areas_for(oc.config)
        got = {s: {a: [] for a in areas} for s in SIDES}
        energy = {s: {a: [] for a in areas} for s in SIDES}
        states = {s: {a: [] for a in areas} for s in SIDES}
        asked = {s: {a: [] for a in areas} for s in SIDES}       # a sample's round trip, what it costs the gate
        collected = {s: {a: [] for a in areas} for s in SIDES}   # of which the worker's untimed full collection
        hosted = {s: {a: [] for a in areas} for s in SIDES}      # the worker's wall around the calls, set-up included
        guarded = {s: {a: [] for a in areas} for s in SIDES}     # its NVML checks around them
        beside = {s: {a: [] for a in areas} for s in SIDES}      # CPU ms the idle rival ran beside the sample
        foreign = {s: {a: [] for a in areas} for s in SIDES}     # ms the sampling thread waited for others' work
        preempted = {s: {a: [] for a in areas} for s in SIDES}   # the sampling thread switched out while timed
        held = {s: {a: [] for a in areas} for s in SIDES}        # across its timed calls (sched_window): waits
        away = {s: {a: [] for a in areas} for s in SIDES}        # for others' work, and neither run nor wait
        timed_by = {s: {} for s in SIDES}                        # per area, "host" or "device"
        irqs = {s: {a: [] for a in areas} for s in SIDES}        # device interrupts served on the sampling CPU
        stolen = {s: {a: [] for a in areas} for s in SIDES}      # ms the hypervisor took the sampling CPU (steal)
        waited = {s: {a: [] for a in areas} for s in SIDES}      # us its device probes waited: another context's work
        waited_out = {s: {a: [] for a in areas} for s in SIDES}  # and beside the samples of a pair taken again
        idle_most: dict = {}              # per side, the most CPU ms it ran while idle during one rival sample
        idle_ticks: dict = {}             # per side, clock ticks it ran while idle, over the round
        idle_where: dict = {}             # per side, beside which sample and in which thread that most ran
        frozen: dict = {}                 # per side, stopped beside every rival sample (False: not, or not always)
        guard = None
        held_since: dict = {}                        # per side, its usage when the gate last stopped it
        if oc.config.spec.backend != "cpu":          # NVML read by the gate, between the samples
            try:
                guard = open_guard(oc.config.spec.label(), cfg.policy, frozenset(w.pid for w in workers.values()))
            except UntrustedRun as e:
                fail_round("untrusted", f"round {r + 1}: {e}")
            oc.guard_by = "gate"
            if r == 0 and getattr(guard, "unread", None):
                log(f"  {oc.config.spec.label()}: NVML does not give {', '.join(sorted(guard.unread))} on this "
                    f"device: not checked")
        for s_, w in workers.items():                # each runs only inside its own round trips from here on
            halted = halt(s_, w, "before the first sample")
            held_since[s_] = _usage(w) if halted else None       # None: a worker that cannot be stopped (scripted)
        per_sample = (got, energy, states, asked, irqs, foreign, beside, collected, hosted, guarded, preempted, held,
                      away, stolen, waited)
        for i in range(cfg.samples):
            for a in areas:
                pair = order if i % 2 == 0 else order[::-1]
                # a pair the gate's guard rejects a sample of is taken again, both sides: where only the
                # rejected side's were, a head that trips the guard at will would choose which samples count
                mark = {s: [len(per[s][a]) for per in per_sample] for s in SIDES}
                at = 0
                while at < len(pair):
                    side = pair[at]
                    other = SIDES[1 - SIDES.index(side)]
                    rival = workers[other]
                    asking = f"stopping the idle worker beside {a}"
                    stopped = halt(f"idle {other}", rival, f"before {side}'s sample of {a}")
                    frozen[other] = frozen.get(other, True) and bool(stopped)
                    # the guard's NVML reads while the side is still stopped, so that what it runs is all
                    # inside the round trip the gate times
                    t_g = time.perf_counter()
                    snap = guard.start() if guard is not None else None
                    guard_s = time.perf_counter() - t_g
                    asking = f"phase {a}"
                    before, own = _usage(rival), _usage(workers[side])
                    # stopped by the gate since its last round trip: nothing ran
                    _still(workers[side], held_since.get(side), own, lambda m: fail_round(
                        "untrusted", f"round {r + 1}: the {side} worker (pid {workers[side].pid}) {m} between "
                                     f"its round trips, stopped by the gate: a process of either side continues "
                                     f"it"))
                    unsignalled(((side, workers[side]), (other, rival)), f"before {side}'s sample of {a}")
                    i0 = device_interrupt_count(getattr(workers[side], "cpus", None))
                    st0 = steal_ns(getattr(workers[side], "cpus", None))
                    _thaw(workers[side])
                    _stops_since(workers[side])             # the continue the gate sent
                    t_ask = time.perf_counter()
                    rep = workers[side].ask({"sample": a})
                    asked[side][a].append(round(time.perf_counter() - t_ask, 6))
                    unsignalled(((side, workers[side]), (other, rival)), f"during {side}'s sample of {a}")
                    # stopped again at once, before the reads after it
                    halted = halt(side, workers[side], f"after its sample of {a}")
                    i1 = device_interrupt_count(getattr(workers[side], "cpus", None))
                    st1 = steal_ns(getattr(workers[side], "cpus", None))
                    irqs[side][a].append(i1 - i0 if i0 is not None and i1 is not None and i1 >= i0 else None)
                    stolen[side][a].append(round((st1 - st0) / 1e6, 3) if st0 is not None and st1 is not None
                                           and st1 >= st0 else None)
                    after = _usage(rival)
                    now = _usage(workers[side])
                    foreign[side][a].append(foreign_ms(own, now, workers[side].pid))
                    held_since[side] = now if halted else None
                    if guard is not None:
                        t_g = time.perf_counter()
                        verdict, after_snap = guard.finish(snap)
                        guard_s += time.perf_counter() - t_g
                    # a stopped worker that ran was continued, by a process of either side: not blamed on it
                    unknown = partial(lambda o, st, m: fail_round(st, f"round {r + 1}, {o} idle: {m}"), other)
                    _check_idle(rival.pid, before, after, f"{side}'s sample of {a}",
                                unknown if stopped else partial(blame, other),
                                FROZEN_MOST_S if stopped else cfg.idle_cpu_s(oc.config), stopped=bool(stopped))
                    if before is not None and after is not None:
                        used = round(max(0.0, after.cpu_s - before.cpu_s) * 1e3, 3)
                        if used > idle_most.get(other, 0.0) or other not in idle_most:
                            idle_most[other] = used
                            b = busiest(before, after) if used > 0 else None
                            idle_where[other] = f"{a}: {b[0]} {b[1]} ms" if b else None
                        idle_ticks[other] = idle_ticks.get(other, 0) + max(0, after.ticks - before.ticks)
                    beside[side][a].append(used if before is not None and after is not None else None)
                    gc_s = rep.get("gc_s")
                    collected[side][a].append(round(gc_s, 6) if _finite(gc_s, 0) else None)
                    x = rep.get("host_s")
                    hosted[side][a].append(round(x, 6) if _finite(x, 0) else None)
                    guarded[side][a].append(round(guard_s, 6) if guard is not None else None)
                    pre = rep.get("preempted")
                    preempted[side][a].append(pre if _count(pre) else None)
                    dw = rep.get("device_wait_us")
                    waited[side][a].append(round(dw, 1) if _finite(dw, 0) and dw <= MAX_SAMPLE_S * 1e6 else None)
                    win = rep.get("window") if isinstance(rep.get("window"), dict) else {}
                    for into, k in ((held, "held_ms"), (away, "away_ms")):
                        into[side][a].append(round(win[k], 3) if _finite(win.get(k), 0) else None)
                    if rep.get("timed_by") in ("host", "device"):
                        timed_by[side].setdefault(a, rep["timed_by"])
                    if rep["status"] != "ok":
                        # the reply is the measured code's to write: only an error or an untrusted run, never a
                        # status (a skip) that exit_code would not count against a pass
                        st = rep["status"] if rep["status"] in ("error", "untrusted") else "error"
                        said = "" if st == rep["status"] else f"a sample reply of status {str(rep['status'])[:40]!r}: "
                        discards = rep.get("discards") if isinstance(rep.get("discards"), list) else []
                        fail(st, said + str(rep.get("message", "")), discards)
                    v = rep.get("value")
                    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < math.inf:
                        fail("error", f"phase {a}: a sample of {v!r} s is not a positive finite time")
                    if guard is not None and not verdict.trusted:
                        for s_ in SIDES:       # nothing of the pair is left behind but its probes (the work the
                            # other side left running may be what the guard rejected): waited is per_sample's last
                            waited_out[s_][a] += waited[s_][a][mark[s_][-1]:]
                            for per, n in zip(per_sample, mark[s_]):
                                del per[s_][a][n:]
                        rejected[side].append("; ".join(verdict.reasons))
                        if len(rejected[side]) > cfg.max_discards:     # by whom: the other side may cause them
                            oc.discards += sum(len(x) for x in rejected.values())
                            fail_round("untrusted", f"round {r + 1}: untrusted run: {oc.config.spec.label()}: "
                                                    f"{len(rejected[side])} of {side}'s samples rejected "
                                                    f"({rejected[side][-1]})")
                        time.sleep(cfg.pause_s)        # let clocks and temperature settle before retaking
                        at = 0
                        continue
                    got[side][a].append(float(v))
                    if guard is not None:
                        if verdict.energy_j is not None:
                            energy[side][a].append(verdict.energy_j / ready[side]["numbers"][a])
                        states[side][a].append({"sm_clock_mhz": after_snap.sm_clock_mhz,
                                                "temperature_c": after_snap.temperature_c,
                                                "power_w": after_snap.power_w,
                                                "throttle_reasons": after_snap.throttle_reasons})
                    at += 1
        apart = len(rejected["head"]) - len(rejected["base"])
        if abs(apart) > cfg.max_discards_apart:      # the GPU's state is shared: honest rejections fall on both
            fail_round("untrusted", f"round {r + 1}: the gate's guard rejected {len(rejected['head'])} of the head's "
                                    f"samples and {len(rejected['base'])} of the base's (more than "
                                    f"{cfg.max_discards_apart} apart): rejections that fall on one side choose "
                                    f"which of its samples count ({rejected['head' if apart > 0 else 'base'][-1]})")
        for idle in SIDES:
            _thaw(workers[idle])
        if orphans_before is not None:
            _check_orphans(orphans_before, workers, lambda m: fail_round("untrusted", f"round {r + 1}: {m}"))
        if run_delay() is not None:      # this kernel keeps it: a figure missing was made to go missing
            for s in [s for s in SIDES if isinstance(getattr(workers[s], "p", None), subprocess.Popen)]:
                reports = any(x is not None for xs in held[s].values() for x in xs)   # a harness from before: never
                for a in areas:
                    lost = sum(1 for x in foreign[s][a] + (held[s][a] if reports else []) if x is None)
                    if lost:
                        fail_round("untrusted", f"round {r + 1}: {lost} of the reads of {s}'s sampling thread beside "
                                                f"its samples of {a} failed, where this kernel keeps them: other work "
                                                f"beside them cannot be told from the code's")
        for s in SIDES:                  # the count read now and lost beside a sample was made to go missing
            cpus = getattr(workers[s], "cpus", None)
            lost = sum(1 for a in areas for x in irqs[s][a] if x is None)
            if lost and device_interrupt_count(cpus) is not None:
                fail_round("untrusted", f"round {r + 1}: {lost} of the counts of device interrupts on the sampling "
                                        f"CPU around {s}'s samples failed, where /proc/interrupts is read: a storm "
                                        f"beside them cannot be told from the code's")
        for idle in SIDES:
            _check_new_processes(workers[idle], partial(blame, idle))
            if idle_ticks.get(idle, 0) * TICK_S > IDLE_TICKS_MOST_S:
                blame(idle, "untrusted", f"the idle worker (pid {workers[idle].pid}) ran {idle_ticks[idle]} clock ticks "
                                         f"of CPU, its short-lived threads and children included, during its rival's "
                                         f"samples: something it starts works beside them")
        t_sampled = time.perf_counter()
        done = {}
        asking = "quit"
        for side in order:
            done[side] = workers[side].ask({"quit": True})
    except WorkerFailed as e:
        hung = f"hung in {asking}: " if isinstance(e, WorkerTimeout) else f"{asking}: "
        oc.status, oc.message = "error", f"{side} ({shas[side][:10]}), round {r + 1}, {hung}{_tail(str(e))}"
        return
    except _Stop:
        return
    finally:
        for w in workers.values():
            w.close()
        if orphans_before is not None:      # whatever ended the round, the check or not: nothing adopted outlives it
            left = gate_children() - orphans_before
            if left:
                _kill(left, spare=orphans_before)
    oc.discards += sum(len(done[s].get("discards", [])) + len(rejected[s]) for s in SIDES)
    # where a round's time went: until both workers were ready (their start and set-up), the samples, the
    # workers' quit and exit (a GPU context's teardown)
    times = {"ready_s": round(t_ready - t0, 3), "sampled_s": round(t_sampled - t_ready, 3),
             "closed_s": round(time.perf_counter() - t_sampled, 3)}
    oc.rounds.append({"order": list(order), "times": times, **{
        s: {**ready[s], "areas": {a: {"samples": got[s][a], "energy_j": energy[s][a], "states": states[s][a],
                                      "asked_s": asked[s][a], "gc_s": collected[s][a], "host_s": hosted[s][a],
                                      "guard_s": guarded[s][a], "preempted": preempted[s][a],
                                      "rival_idle_ms": beside[s][a], "foreign_ms": foreign[s][a],
                                      "held_ms": held[s][a], "away_ms": away[s][a], "timed_by": timed_by[s].get(a),
                                      "irqs": irqs[s][a], "steal_ms": stolen[s][a],
                                      "device_wait_us": waited[s][a],
                                      "rejected_device_wait_us": waited_out[s][a],
                                      "number": ready[s]["numbers"][a]} for a in areas},
            "discards": done[s].get("discards", []) + rejected[s],
            "peak_device_bytes": done[s].get("peak_device_bytes"),
            "idle_cpu_ms": idle_most.get(s), "idle_cpu_where": idle_where.get(s), "idle_stopped": frozen.get(s, False)}
        for s in SIDES}})
    log(f"  round {r + 1}/{cfg.rounds} {oc.config.spec.label()}: {time.perf_counter() - t0:.1f} s")


def _disk_changed(watched: list[Watched], outcomes: list[Outcome], r: int) -> bool:
    """After round r, each watched place as it was: else every workload still running is untrusted."""
    for w in watched:
        paths = w.changes(keep=not w.closed)   # a cache's files that came (a kernel built, a key made) watched from now
        if paths:
            for oc in outcomes:
                if oc.status == "running":
                    oc.status, oc.message = "untrusted", f"round {r}: {changed_message(w, paths)}"
            return True
    return False


def _stops_since(worker) -> int:
    """How many stops and continues of a worker (the gate's child) were reported since the last call (waitid
    with WSTOPPED | WCONTINUED: exits are left to Popen); 0 for a scripted worker."""
    pid = getattr(worker, "pid", None)
    if not isinstance(getattr(worker, "p", None), subprocess.Popen) or not hasattr(os, "waitid"):
        return 0
    n = 0
    for _ in range(64):
        try:
            got = os.waitid(os.P_PID, pid, os.WSTOPPED | os.WCONTINUED | os.WNOHANG)
        except ChildProcessError:
            break
        if got is None or got.si_pid == 0:
            break
        n += 1
    return n


def foreign_ms(before: Usage | None, after: Usage | None, pid: int) -> float | None:
    """What else ran on the sampling CPU while the sampling thread (the worker's main one) wanted it, in ms: the
    time it waited runnable (its run delay) less what its worker's other threads ran meanwhile (they share its
    CPU; threads that exited meanwhile too, where the kernel gives the process's CPU clock). Whoever that was (a
    process the gate cannot see, another job) it took the sample's CPU; None where the kernel keeps no run
    delay."""
    if before is None or after is None or before.delay_ns is None or after.delay_ns is None:
        return None
    main = dict(after.per_thread).get(pid, 0) - dict(before.per_thread).get(pid, 0)
    if before.own_ns is not None and after.own_ns is not None:
        others = after.own_ns - before.own_ns - main
    else:
        others = (after.cpu_s - before.cpu_s) * 1e9 - main
    return round(max(0.0, after.delay_ns - before.delay_ns - max(0.0, others)) / 1e6, 3)


def group_cpu_ns(pid: int) -> int | None:
    """CPU ns a process has run, every thread it ever had included: its CPU-time clock (clock_getcpuclockid's id,
    (~pid << 3) | 2, CPUCLOCK_SCHED of the whole process); None where it is gone or the kernel refuses."""
    try:
        return time.clock_gettime_ns((~pid << 3) | 2)
    except (OSError, OverflowError, AttributeError):
        return None


def _still(worker, then: Usage | None, now: Usage | None, fail) -> None:
    """A worker the gate stopped ran nothing since (then: its usage when stopped; now: before the gate continues
    it); fail(message) otherwise. Not judged without both reads (a scripted worker)."""
    if then is None or now is None:
        return
    ran = now.cpu_s - then.cpu_s
    if ran > FROZEN_MOST_S or now.ticks > then.ticks or now.threads != then.threads:
        fail(f"ran {ran * 1e3:.3f} ms of CPU ({now.ticks - then.ticks} clock ticks)")


def _freeze(worker) -> bool | None:
    """Stop an idle worker (WorkerProcess.freeze); None for one that cannot be stopped (a scripted worker)."""
    f = getattr(worker, "freeze", None)
    return f() if f else None


def _thaw(worker) -> None:
    f = getattr(worker, "thaw", None)
    if f:
        f()


def _usage(worker) -> Usage | None:
    f = getattr(worker, "usage", None)
    return f() if f else None


TICK_S = 1.0 / os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 0.01
IDLE_TICKS_MOST_S = 0.05      # an idle worker's coarse CPU over a round's rival samples: a tick or two of wake-ups
FROZEN_MOST_S = 0.0001        # a stopped worker's threads run nothing; this much is the kernel's accounting at most


def _check_idle(pid: int, before: Usage | None, after: Usage | None, during: str, fail, most_s: float,
                stopped: bool = False) -> None:
    """A worker stopped beside its rival's sample (freeze) runs nothing: any CPU of its threads means something
    continued it. One the gate cannot stop waits on its request pipe, so what it runs is a reply's tail and a
    library thread's wake-up (a CPU worker's: microseconds; a GPU worker's driver thread, cuda-EvtHandlr, woken
    beside the rival's syncs: up to 4 ms at 2^24 on the H200); more than [trust] max_idle_cpu_ms is work of its
    own. Either way a thread started or ended is: something the measured code left running beside the rival's
    sample, slowing it on the shared CPU or GPU."""
    if before is None or after is None:
        return
    if stopped and after.cpu_s - before.cpu_s > most_s:
        fail("untrusted", f"the idle worker (pid {pid}), stopped, ran {(after.cpu_s - before.cpu_s) * 1e3:.1f} ms of "
                          f"CPU during {during}{_busiest_said(before, after)}: something continued it")
    if after.threads != before.threads:
        fail("untrusted", f"the idle worker (pid {pid}) started or ended threads during {during} "
                          f"({len(after.threads - before.threads)} new, {len(before.threads - after.threads)} gone): "
                          f"an idle worker waits on its pipe")
    if after.cpu_s - before.cpu_s > most_s:
        fail("untrusted", f"the idle worker (pid {pid}) ran {(after.cpu_s - before.cpu_s) * 1e3:.1f} ms of CPU during "
                          f"{during}{_busiest_said(before, after)}: something it left running works beside its "
                          f"rival's samples")


def busiest(before: Usage, after: Usage) -> tuple[str, float] | None:
    """The thread that ran most between two usages, as "TID (name)", and its CPU ms; None where none ran."""
    was = dict(before.per_thread)
    ran = [(ns - was.get(tid, 0), tid) for tid, ns in after.per_thread]
    if not ran or max(ran)[0] <= 0:
        return None
    ns, tid = max(ran)
    return f"{tid} ({thread_name(tid)})", round(ns / 1e6, 3)


def thread_name(tid: int) -> str:
    """A thread's name from /proc, as a clue only (any thread may take any name, the driver's too): bytes read,
    anything but word characters, dots and dashes replaced, so a crafted name cannot break a message or report."""
    try:
        with open(f"/proc/{tid}/comm", "rb") as f:
            raw = f.read(64)
    except OSError:
        return "gone"
    return re.sub(r"[^\w.-]", "?", raw.decode("utf-8", "replace").strip(), flags=re.ASCII)[:16] or "?"


def _busiest_said(before: Usage, after: Usage) -> str:
    b = busiest(before, after)
    return f", {b[1]:.1f} ms of it in thread {b[0]}" if b else ""


def _check_new_processes(worker, fail) -> None:
    """A process a worker started after its first sample (the per-sample check counts only those found then):
    the measured code has no business starting one, and whatever it ran beside the samples is unaccounted. One
    that left the worker's session, whenever started, is out of reach of the stop and the reads alike."""
    if getattr(worker, "new_processes", None) is None:
        return
    new = worker.new_processes()
    if new:
        fail("untrusted", f"the worker (pid {worker.pid}) started process(es) {', '.join(map(str, new))} while sampling")
    out = getattr(worker, "escaped", lambda: [])()
    if out:
        _kill(out)
        fail("untrusted", f"process(es) {', '.join(map(str, out))} of the worker (pid {worker.pid}) left its session: "
                          f"they run out of reach of the stop beside the rival's samples")


def _kill(pids, spare=None) -> None:
    """The measured code's processes that the gate found out of place, gone with the run: each, every process
    of their sessions and what descends from them, and, given `spare` (the gate's children to keep: its workers
    and those it had before), any other child of the gate (an orphan it adopted), again until none is left (a
    chain that forks anew as it is killed included); the adopted ones reaped. A table is a slow snapshot: a
    chain's member listed alive may have forked and exited by the time it is read (a zombie, its child not
    listed), so each session's leader's group (a chain's, unless it changes group) is killed at once, fork under
    way included, and the end is a table with no live target and no zombie that the table before did not hold."""
    me, targets, sids, dead = os.getpid(), set(pids), set(), None
    for _ in range(1000):
        table = proc_table()
        sids |= {table[p][1] for p in targets if p in table} - {os.getsid(0)}
        targets |= {p for p, (pp, sid, _) in table.items()
                    if sid in sids or (spare is not None and pp == me and p not in spare)}
        targets |= descendants(table, targets)
        live = [p for p in targets if p in table and table[p][2] not in ("Z", "X") and p != me]
        for send, p in [(os.killpg, sid) for sid in sids] + [(os.kill, p) for p in live]:
            try:
                send(p, signal.SIGKILL)
            except OSError:
                pass
        for p in [p for p in targets if table.get(p, (0,))[0] == me and p not in (spare or ())]:
            try:
                os.waitpid(p, os.WNOHANG)
            except OSError:
                pass
        zombies = {p for p in targets if table.get(p, (0, 0, ""))[2] in ("Z", "X")}
        if not live and dead is not None and zombies <= dead:
            return
        dead = zombies
        time.sleep(0.001)


def _check_orphans(before: set[int], workers: dict, fail) -> None:
    """A process orphaned to the gate during the round (the gate is their subreaper): a worker's code
    double-forked it out of its session, out of reach of the stop and the reads."""
    new = gate_children() - before - {w.pid for w in workers.values()}
    if new:
        _kill(new, spare=before | {w.pid for w in workers.values()})
        fail(f"process(es) {', '.join(map(str, sorted(new)))} left a worker's session and were orphaned to the "
             f"gate during the round: they run out of reach of the stop beside the rival's samples")


def aa_record(res: GateResult, machine: str, date: str | None = None) -> dict:
    """The noise record of an A/A gate run (noise.py): every judged workload's round values per phase."""
    if res.base != res.head:
        raise NoiseError(f"not an A/A run: base {res.base[:10]} and head {res.head[:10]} differ")
    workloads = [(o.config.spec.as_dict(), {a: [statistics.median(paired_log_ratios(rd, a)) for rd in o.rounds]
                                            for a in res.config.areas_for(o.config)})
                 for o in res.outcomes if o.status == "ok"]
    gpu = next((rd[s]["gpu"].get("name") for o in res.outcomes for rd in o.rounds for s in SIDES
                if isinstance(rd.get(s, {}).get("gpu"), dict)), None)
    return make_record(machine, res.head, res.config.rounds, res.config.samples, workloads, gpu, date,
                       res.config.min_device_sample_s, res.config.min_sample_s, res.config.worker_cpus)


def paired_log_ratios(rd: dict, area: str) -> list[float]:
    return [math.log(h / b) for b, h in zip(rd["base"]["areas"][area]["samples"], rd["head"]["areas"][area]["samples"])]


def own_clock(oc: Outcome, area: str, threshold: float, alpha: float) -> Comparison | None:
    """The comparison on each sample's round trip as the gate timed it (asked_s): the sample plus ~1 ms of
    requests, collection and reply, so a regression the worker's reported times hide still shows. Where the worker
    read NVML inside each round trip (a GPU gate.json from before the gate read it between samples: 12-19 ms, a
    round's median up to 34 ms apart between the sides on an honest H200) it is not judged. None where not judged
    or a round trip is missing."""
    if oc.config.spec.backend != "cpu" and oc.guard_by != "gate":
        return None
    d = []
    for rd in oc.rounds:
        b, h = (rd[s]["areas"][area].get("asked_s") or [] for s in SIDES)
        n = len(rd["base"]["areas"][area]["samples"])
        if len(b) != n or len(h) != n or not all(_finite(x, 0, strict=True) for x in b + h):
            return None
        d.append(statistics.median(math.log(y / x) for x, y in zip(b, h)))
    return compare(area, d, threshold, alpha) if len(d) >= 2 else None


def _judge(cfg: GateConfig, oc: Outcome) -> None:
    for area in cfg.areas_for(oc.config):     # first: other work beside one side's samples voids them all
        th = cfg.threshold_in_force(area, oc.config).value
        why = foreign_excess(oc.rounds, area, th, cfg.max_foreign_share) or \
            round_excess(oc.rounds, area, th, cfg.max_foreign_share, on_device=oc.config.spec.backend != "cpu") or \
            round_interrupts(oc.rounds, area, th, cfg.max_foreign_share, cfg.irq_cost_us) or \
            device_waits(oc.rounds, area, cfg.max_device_wait_us)
        if why:
            oc.status, oc.message = "untrusted", why
            return
    for area in cfg.areas_for(oc.config):
        d = [statistics.median(paired_log_ratios(rd, area)) for rd in oc.rounds]
        pooled = {s: [x for rd in oc.rounds for x in rd[s]["areas"][area]["samples"]] for s in SIDES}
        th = cfg.threshold_in_force(area, oc.config)
        c = compare(area, d, th.value, cfg.alpha, base_s=statistics.median(pooled["base"]),
                    head_s=statistics.median(pooled["head"]))
        oc.comparisons.append(resolved(replace(c, threshold_source=th.source, threshold_basis=th.basis), d))
    # a slowdown on the gate's clock (the round trips) that the reported times show as large, short of alpha only,
    # is a regression on the clock's test; one they show smaller is hidden: untrusted, beside another phase's
    # regression too (the head's reported times are void, that regression's size with them, and exit 1 would
    # show the hidden phase as no change)
    for i, c in enumerate(oc.comparisons):
        own = own_clock(oc, c.area, c.threshold, cfg.alpha)
        if own is None or own.verdict != REGRESSION:
            continue
        if c.verdict == REGRESSION:
            # a regression reported far smaller than the clock reads it (their intervals apart, the clock's
            # above) is not taken at the head's word: its size is what a reviewer weighs
            hidden = own.ci_low > c.ci_high
        elif c.ratio >= own.ratio:      # the round trips' fixed ~1 ms dilutes an honest slowdown: nothing hid it
            oc.comparisons[i] = replace(c, verdict=REGRESSION, clock_ratio=own.ratio, clock_p=own.p_value)
            hidden = False
        else:
            hidden = True
        if hidden:
            oc.status, oc.comparisons = "untrusted", []
            oc.message = (f"phase {c.area}: the gate's own clock (each sample's round trip) reads the head "
                          f"x{own.ratio:.3f} (p={own.p_value:.4f}), a regression, where the times the workers "
                          f"reported read less, x{c.ratio:.3f}: the head's times are not the harness's (its code "
                          f"runs in its worker and may rewrite the timer), or its untimed work per sample grew past "
                          f"the threshold")
            return
    oc.status = "ok"


class GateRefused(ValueError):
    """The gate will not start: what it would measure is not what it was asked to (exit 2, one line)."""


def rules_changed(repo, base: str, head: str) -> list[str]:
    """The rule and harness files the head changes: the base's were used; the head's apply after merge."""
    return checkout.changed_paths(repo, base, head, checkout.RULES + checkout.HARNESS + checkout.ALSO_WATCHED)


def refuse_dirty(repo) -> None:
    """The gate measures commits: uncommitted changes would silently not be measured."""
    dirty = checkout.dirty_files(repo)
    if dirty:
        shown = ", ".join(dirty[:10]) + (f" and {len(dirty) - 10} more" if len(dirty) > 10 else "")
        raise GateRefused(f"uncommitted changes to tracked files in {repo} ({shown}): commit or stash them; "
                          "the gate measures commits only")


def exit_code(outcomes: list[Outcome]) -> int:
    if any(o.status in ("error", "untrusted", "running", "stopped") for o in outcomes):
        return EXIT_ERROR
    if not any(o.status == "ok" for o in outcomes):
        return EXIT_ERROR                    # nothing was measured: not a pass
    if any(c.verdict == REGRESSION for o in outcomes for c in o.comparisons):
        return EXIT_REGRESSION
    return EXIT_OK


def cpu_only(cfg: GateConfig) -> tuple[GateConfig, list[WorkloadConfig]]:
    """The config with its CPU workloads alone (for a developer without a GPU), and what it left out."""
    keep = [w for w in cfg.workloads if w.spec.backend == "cpu"]
    if not keep:
        raise ValueError(f"--cpu-only: {cfg.path or 'the config'} has no cpu workload")
    return replace(cfg, workloads=keep), [w for w in cfg.workloads if w.spec.backend != "cpu"]


def preflight(oc: Outcome, gpu_status=None) -> None:
    """A required cuda workload on a machine whose GPU cannot run fails before anything is measured:
    the CPU rounds would only delay the same verdict."""
    if oc.config.spec.backend != "cuda" or not oc.config.required:
        return
    if gpu_status is None:
        from ..backend import gpu_status
    ok, why = gpu_status()
    if not ok:
        oc.status = "error"
        oc.message = f"{NO_GPU} ({why}); this workload is required"


def proc_table(proc: str = "/proc") -> dict[int, tuple[int, int, str]]:
    """Every process this user may read: pid -> (parent pid, session id, state)."""
    out = {}
    try:
        entries = os.listdir(proc)
    except OSError:
        return out
    for d in entries:
        if not d.isdigit():
            continue
        try:
            with open(f"{proc}/{d}/stat") as f:
                stat = f.read()
            fields = stat[stat.rindex(")") + 2:].split()                # state ppid pgrp session ...
            out[int(d)] = (int(fields[1]), int(fields[3]), fields[0])
        except (OSError, ValueError, IndexError):
            continue                                         # gone meanwhile, or not ours to read
    return out


def descendants(table: dict, roots) -> set[int]:
    """The processes of a proc_table descended (by parent) from roots, roots not included."""
    inside, out = set(roots), set()
    grew = True
    while grew:
        new = {p for p, (pp, _, _) in table.items() if pp in inside and p not in inside}
        inside |= new
        out |= new
        grew = bool(new)
    return out


def session_of(pid: int, proc: str = "/proc") -> int | None:
    """A process's session id; None where it is gone."""
    try:
        with open(f"{proc}/{pid}/stat") as f:
            stat = f.read()
        return int(stat[stat.rindex(")") + 2:].split()[3])
    except (OSError, ValueError, IndexError):
        return None


def _check_compilers(ready: dict, fail, log=None) -> None:
    """Like with like: a kernel module compiled from source (NVRTC) on one side, where the other loaded the same
    module prebuilt by nvcc, pits two compilers' code, whichever commit changed what. Both sides prebuilt (or both
    compiled) pass; a side that cannot say (its loader keeps no record: None) is not judged, and the log says so."""
    here = {s: ready[s].get("compiled_here") for s in SIDES}
    if any(v is None for v in here.values()):
        if log is not None:
            log(f"the {' and '.join(s for s in SIDES if here[s] is None)} keeps no record of the kernel modules "
                f"it compiled from source: whether both sides ran nvcc's cubins was not checked")
        return
    if not all(isinstance(v, list) and all(isinstance(m, str) for m in v) for v in here.values()):
        fail("error", f"unexpected compiled_here {str(here)[:200]}")
    one = {s: sorted(set(here[s]) - set(here[o])) for s, o in (("base", "head"), ("head", "base"))}
    if one["base"] or one["head"]:
        said = "; ".join(f"{s}: {', '.join(m[:6])[:300]}" for s, m in one.items() if m)
        fail("untrusted", f"kernel modules compiled from source (NVRTC) on one side only, the other's built by nvcc "
                          f"({said}): prebuild both commits' kernels (cuzk runner-check --commit BASE --commit HEAD)")


def subreaper(on: bool) -> bool:
    """Make the gate the parent of any process orphaned below it (Linux PR_SET_CHILD_SUBREAPER), so one that a
    worker's code double-forked out of its session stays in sight; False where it cannot be set."""
    try:
        import ctypes
        return ctypes.CDLL(None, use_errno=True).prctl(36, int(on), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def dumpable(on: bool) -> bool | None:
    """Set whether the gate itself is dumpable (PR_SET_DUMPABLE); its state before, None where not read. A dumpable
    gate lets any process of its user (the head's code in its worker) open /proc/GATE/fd/N, the base's request and
    reply pipes among them, and read or write its memory: the judge is kept from them as the workers are."""
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        was = libc.prctl(3, 0, 0, 0, 0)              # PR_GET_DUMPABLE
        libc.prctl(4, int(on), 0, 0, 0)              # PR_SET_DUMPABLE
        return was > 0 if was >= 0 else None
    except (OSError, AttributeError):
        return None


def gate_children(proc: str = "/proc") -> set[int]:
    me = os.getpid()
    return {pid for pid, (ppid, _, _) in proc_table(proc).items() if ppid == me}


def session_pids(sid: int, proc: str = "/proc") -> list[int]:
    """The process ids of session sid (a worker and what it started)."""
    return [pid for pid, (_, s, _) in proc_table(proc).items() if s == sid]


FREEZE_WAIT_S = 1.0     # a blocked or running thread stops in microseconds; one that does not is continued
FREEZE_WAIT_D_S = 10.0  # unless it sits in an uninterruptible wait


def running_states(pids, proc: str = "/proc") -> set[str]:
    """The states of these processes' threads that are not stopped (T, or t under a tracer) or gone (exited,
    or a zombie): R, S, D, ...; empty once all are stopped."""
    out = set()
    for pid in pids:
        try:
            tids = os.listdir(f"{proc}/{pid}/task")
        except OSError:
            continue                                         # gone
        for tid in tids:
            try:
                with open(f"{proc}/{pid}/task/{tid}/stat") as f:
                    stat = f.read()
            except OSError:
                continue
            state = stat[stat.rindex(")") + 2:][:1]
            if state not in ("T", "t", "Z", "X"):
                out.add(state)
    return out


def session_threads(sid: int, proc: str = "/proc") -> list[int]:
    """The thread ids of every process in session sid (a worker and what it started: start_new_session)."""
    out = []
    for pid in session_pids(sid, proc):
        try:
            out += [int(t) for t in os.listdir(f"{proc}/{pid}/task") if t.isdigit()]
        except OSError:
            continue                                         # gone meanwhile, or not ours to read
    return out


def worker_cpus(n: int, allowed=None) -> tuple[int, ...] | None:
    """The CPUs both workers of every round are pinned to: the last n this process may use (away from
    CPU 0, which takes most interrupts). Phases at latency-bound sizes are host-bound, so a worker on a
    slower or busier core than its rival would read as a change; one shared set keeps the pair alike.
    n = 0, or no affinity support: not pinned (None)."""
    if n <= 0 or not hasattr(os, "sched_getaffinity"):
        return None
    cpus = sorted(allowed if allowed is not None else os.sched_getaffinity(0))
    return tuple(cpus[-n:])


def run(repo: str | Path, base_ref: str, head_ref: str, cfg: GateConfig,
        spawn: Callable[[Path, float], WorkerProcess] = WorkerProcess,
        log: Callable[[str], None] = lambda m: print(m, file=sys.stderr),
        not_gated: list[WorkloadConfig] | None = None, gpu_status=None,
        on_start: Callable[[], None] | None = None) -> GateResult:
    """on_start: called once the run's refusals (refs, a dirty tree) have passed, before any worker starts (the
    CLI clears an earlier run's files from --out there)."""
    t0 = time.perf_counter()
    spawn_is_real = spawn is WorkerProcess
    if spawn_is_real:
        cpus = worker_cpus(cfg.worker_cpus)
        wide = tuple(sorted(os.sched_getaffinity(0))) if cpus else None

        def spawn(root, timeout, setup_wide=False):
            return WorkerProcess(root, timeout, cpus, log, wide if setup_wide else None)
    repo = str(Path(repo).resolve())
    shas = {"base": checkout.resolve(repo, base_ref), "head": checkout.resolve(repo, head_ref)}
    refuse_dirty(repo)
    if on_start is not None:
        on_start()
    result = GateResult(repo, shas["base"], shas["head"], base_ref, head_ref, cfg,
                        [Outcome(wc) for wc in cfg.workloads], not_gated=list(not_gated or []))
    result.rules_changed = rules_changed(repo, shas["base"], shas["head"])
    result.deps_changed = checkout.dependencies_changed(repo, shas["base"], shas["head"])
    result.build_changed = checkout.build_rules_changed(repo, shas["base"], shas["head"])
    if spawn_is_real:
        result.isolation = exposure(cpus)
    for oc in result.outcomes:
        preflight(oc, gpu_status)
    if any(o.status == "error" for o in result.outcomes):
        for oc in result.outcomes:
            if oc.status == "running":
                oc.status, oc.message = "stopped", "not judged: the gate stopped at another workload's failure"
        result.exit_code = exit_code(result.outcomes)
        result.wall_s = time.perf_counter() - t0
        return result
    for d in checkout.remove_stale():
        log(f"cuzk gate: removed {d}, the workspace of a gate that did not finish")
    with checkout.workspace() as tmp:
        roots = {s: checkout.materialize(repo, shas[s], Path(tmp) / s) for s in SIDES}
        # keys made on the GPU, kept for the side's later workers: per side, so a head that changes keygen
        # is measured with its own key; removed with the workspace
        key_dirs = {s: Path(tmp) / f"{s}.keys" for s in SIDES}
        checkout.overlay_harness(roots["base"], roots["head"], Path(tmp) / "head")
        if result.rules_changed:
            log("cuzk gate: the head changes rule or harness files, judged by the base's: "
                + ", ".join(result.rules_changed))
        est = gate_estimate_s(cfg)
        log(f"cuzk gate: base {shas['base'][:10]} ({base_ref}) vs head {shas['head'][:10]} ({head_ref}), "
            f"{cfg.rounds} rounds x {cfg.samples} paired samples; estimated "
            + (f"{est:.0f} s" if est is not None else "(no figure for a target in cuzk/perf/suite.py GATE_ROUND_S)"))
        # what the workers load from disk: a change between rounds is code or data that the next worker of a
        # side would load unmeasured (the head's code runs as the same user and could rewrite the base's)
        watched = [Watched(f"the {s} tree", Path(tmp) / s, closed=True) for s in SIDES] + shared_caches() + \
            import_roots(spare=(repo, Path(__file__).resolve().parents[2]), within=(tmp,))
        for w in watched:
            w.take()
        at_start = {w.name: dict(w.state) for w in watched if w.code}
        reaping = subreaper(True)
        was_dumpable = dumpable(False)
        try:
            for r in range(cfg.rounds):
                if r and _disk_changed(watched, result.outcomes, r):
                    break
                if r == 1:             # each side's key, made in round 1, loaded as it is from then on
                    for s in SIDES:
                        watched.append(Watched(f"the {s} key folder", key_dirs[s], closed=False))
                        watched[-1].take()
                for oc in result.outcomes:
                    if oc.status == "running":
                        _round(cfg, oc, r, roots, shas, spawn, log, key_dirs, reaping)
                if any(o.status in ("error", "untrusted") for o in result.outcomes):
                    break                       # the verdict is 2 whatever else happens: stop early
            else:
                _disk_changed(watched, result.outcomes, cfg.rounds)
        finally:
            if reaping:
                subreaper(False)
            if was_dumpable:
                dumpable(True)
            for w in watched:
                if w.code:
                    gone = remove_new(w, at_start[w.name])
                    if gone:
                        log(f"cuzk gate: removed {len(gone)} entries made during the run from {w.name} (a later run "
                            f"builds them again; one a head made could serve a later commit's code): "
                            + ", ".join(gone[:5]) + (" ..." if len(gone) > 5 else ""))
    failed = any(o.status in ("error", "untrusted") for o in result.outcomes)
    for oc in result.outcomes:
        if oc.status == "running":
            if failed:
                oc.status, oc.message = "stopped", "not judged: the gate stopped at another workload's failure"
            else:
                _judge(cfg, oc)
    result.exit_code = exit_code(result.outcomes)
    result.wall_s = time.perf_counter() - t0
    log(f"cuzk gate: took {result.wall_s:.0f} s")
    return result


_SHA = re.compile(r"[0-9a-f]{7,64}")
_WORD = re.compile(r"[A-Za-z0-9_.,:+-]{1,64}")
_SPEC_WORDS = {"backend", "circuit", "opts", "convention"}
_SPEC_INTS = {"log_size", "batch", "generator"}
_STATUSES = ("ok", "skipped", "error", "untrusted", "stopped", "running")


def _check(ok: bool, what: str) -> None:
    if not ok:
        raise ValueError(f"gate.json: {what}")


def _check_doc(doc) -> None:
    """gate.json is data from a machine that ran the pull request's code: every field the report renders
    or judges is checked for its type and range before use (a ValueError names the first that is not)."""
    _check(isinstance(doc, dict), "not a JSON object")
    for k in ("base", "head"):
        _check(isinstance(doc.get(k), str) and bool(_SHA.fullmatch(doc[k])), f"{k} is not a commit id")
    for k in ("base_ref", "head_ref"):
        _check(isinstance(doc.get(k), str) and len(doc[k]) <= 256, f"{k} is not a ref name")
    repo = doc.get("repo", "")      # the report's bisect hint runs git in it
    _check(isinstance(repo, str) and "\0" not in repo and len(repo) <= 4096, "repo is not a path")
    c = doc.get("config")
    _check(isinstance(c, dict), "config is not an object")
    _check(is_int(c.get("rounds")) and 2 <= c["rounds"] <= MAX_ROUNDS and is_int(c.get("samples"))
           and 1 <= c["samples"] <= MAX_SAMPLES
           and _finite(doc.get("wall_s", 0.0), 0) and isinstance(c.get("path") or "", str), "config.rounds or samples")
    _check(isinstance(c.get("areas"), list) and all(a in AREAS for a in c["areas"]), "config.areas: unknown phases")
    th = c.get("thresholds", {})
    _check(isinstance(th, dict) and all(a in AREAS and _finite(v, 0) for a, v in th.items()), "config.thresholds")
    _check(_finite(c.get("threshold"), 0) and _finite(c.get("alpha"), 0) and 0 < c["alpha"] < 1,
           "config.threshold or alpha out of range")
    _check(min_p_value(c["rounds"]) < c["alpha"], "config.alpha: below the smallest p-value its rounds can give "
                                                   "(no test could have fired)")
    _check(_finite(c.get("threshold_floor", 0.0), 0), "config.threshold_floor")
    for k in ("min_sample_s", "min_device_sample_s"):
        _check(_finite(c.get(k, 0.0), 0) and c.get(k, 0.0) <= 60, f"config.{k}")
    for k in ("max_idle_cpu_ms", "max_idle_cpu_ms_host"):
        _check(_finite(c.get(k, 0.0), 0) and c.get(k, 0.0) <= 1000, f"config.{k}")
    _check(_finite(c.get("max_foreign_share", 0.0), 0) and c.get("max_foreign_share", 0.0) <= 1,
           "config.max_foreign_share")
    _check(_finite(c.get("irq_cost_us", 0.0), 0) and c.get("irq_cost_us", 0.0) <= 1000, "config.irq_cost_us")
    _check(_finite(c.get("max_device_wait_us", 0.0), 0), "config.max_device_wait_us")
    pins = c.get("pins", {})
    _check(isinstance(pins, dict) and all(a in AREAS and isinstance(v, dict) and _finite(v.get("pin"), 0)
                                          and isinstance(v.get("reason"), str) and len(v["reason"]) <= 200
                                          for a, v in pins.items()), "config.pins")
    der = c.get("derived", [])
    _check(isinstance(der, list) and all(
        isinstance(t, dict) and isinstance(t.get("spec"), dict) and t.get("phase") in AREAS
        and _finite(t.get("value"), 0) and t.get("source") in ("noise", "pin", "config")
        and isinstance(t.get("basis"), str) and len(t["basis"]) <= 400 for t in der), "config.derived")
    _check(isinstance(doc.get("outcomes"), list) and isinstance(doc.get("not_gated", []), list), "outcomes")
    for k in ("rules_changed", "deps_changed", "build_changed", "isolation"):
        _check(isinstance(doc.get(k, []), list) and len(doc.get(k, [])) <= 1000
               and all(isinstance(f, str) and len(f) <= 4000 for f in doc.get(k, [])), k)
    for i, o in enumerate(doc["outcomes"] + [w for w in doc.get("not_gated", [])]):
        _check(isinstance(o, dict) and isinstance(o.get("spec"), dict), f"outcome {i} has no spec")
        sp = o["spec"]               # fields left out take Spec's defaults
        _check(sp.get("backend", "cpu") in ("cpu", "cuda") and set(sp) <= _SPEC_WORDS | _SPEC_INTS and all(
            isinstance(v, str) and _WORD.fullmatch(v) for k, v in sp.items() if k in _SPEC_WORDS)
               and all(is_int(v) and 0 < v < 64
                       for k, v in sp.items() if k in _SPEC_INTS), f"outcome {i}: spec")
    for i, o in enumerate(doc["outcomes"]):
        _check(o.get("status") in _STATUSES and isinstance(o.get("message", ""), str), f"outcome {i}: status")
        _check(_count(o.get("discards", 0)), f"outcome {i}: discards is not a count")    # the report prints it
        ph = o.get("phases")
        _check(ph is None or (isinstance(ph, list) and ph and all(a in AREAS for a in ph)), f"outcome {i}: phases")
        _check(isinstance(o.get("rounds"), list), f"outcome {i}: rounds")
        _check(o["status"] != "ok" or len(o["rounds"]) == c["rounds"],     # judged only once every round is in
               f"outcome {i}: judged on {len(o['rounds'])} rounds, not the config's {c['rounds']}")
        areas = ph or c["areas"]
        measured = None         # the report reads each phase on both sides of every round
        for r, rd in enumerate(o["rounds"] if o["status"] == "ok" else []):
            tm = rd.get("times", {}) if isinstance(rd, dict) else None
            _check(isinstance(tm, dict) and set(tm) <= {"ready_s", "sampled_s", "closed_s"} and all(
                _finite(x, 0) and x <= MAX_SAMPLE_S for x in tm.values()), f"outcome {i} round {r}: times")
            # a rejected pair leaves at most one probe figure a side: no more than the round's rejections
            rejections = sum(len(x) for x in (rd.get(s, {}).get("discards") if isinstance(rd.get(s), dict) else None
                                              for s in SIDES) if isinstance(x, list)) if isinstance(rd, dict) else 0
            for side in SIDES:
                sd = rd.get(side) if isinstance(rd, dict) else None
                _check(isinstance(sd, dict) and isinstance(sd.get("areas"), dict), f"outcome {i} round {r}: {side}")
                _check((sd.get("idle_cpu_ms") is None or (_finite(sd["idle_cpu_ms"], 0)
                                                          and sd["idle_cpu_ms"] <= MAX_SAMPLE_S * 1e3))
                       and (sd.get("idle_cpu_where") is None or (isinstance(sd["idle_cpu_where"], str)
                                                                 and IDLE_WHERE.fullmatch(sd["idle_cpu_where"])))
                       and isinstance(sd.get("idle_stopped", False), bool),
                       f"outcome {i} round {r}: {side}: idle CPU")
                g = sd.get("gpu")           # NVML's record of the device: names and numbers, nothing nested
                _check(g is None or (isinstance(g, dict) and len(g) <= 64 and all(
                    v is None or isinstance(v, bool) or is_number(v) or (isinstance(v, str) and len(v) <= 200)
                    for v in g.values())), f"outcome {i} round {r}: {side}: gpu is not NVML's record of a device")
                for a in areas:
                    xs = sd["areas"].get(a, {}).get("samples") if isinstance(sd["areas"].get(a), dict) else None
                    _check(isinstance(xs, list) and xs and all(_finite(x, 0, strict=True) for x in xs),
                           f"outcome {i} round {r}: {side} {a}: samples are not positive finite times")
                for a, ar in sd["areas"].items():
                    where = f"outcome {i} round {r}: {side} {a}"
                    _check(a in AREAS and isinstance(ar, dict), f"{where}: not a phase's samples")
                    n = ar.get("number", 1)
                    _check(is_int(n) and 1 <= n <= MAX_NUMBER,
                           f"{where}: number is not a count of calls")
                    for k in ("asked_s", "gc_s", "host_s", "guard_s"):
                        v = ar.get(k, [])
                        _check(isinstance(v, list) and len(v) <= len(ar.get("samples") or []) and all(
                            x is None or (_finite(x, 0) and x <= MAX_SAMPLE_S) for x in v),
                            f"{where}: {k} is not a list of seconds, one a sample")
                    for k in ("preempted", "irqs"):
                        v = ar.get(k, [])
                        _check(isinstance(v, list) and len(v) <= len(ar.get("samples") or []) and all(
                            x is None or _count(x) for x in v), f"{where}: {k} is not a list of counts, one a sample")
                    v = ar.get("energy_j", [])      # NVML's counter read twice: a difference, of either sign
                    _check(isinstance(v, list) and len(v) <= len(ar.get("samples") or []) and all(
                        is_number(x) for x in v), f"{where}: energy_j is not a list of joules, one a sample")
                    for k in ("rival_idle_ms", "foreign_ms", "held_ms", "away_ms", "steal_ms"):
                        v = ar.get(k, [])
                        _check(isinstance(v, list) and len(v) <= len(ar.get("samples") or []) and all(
                            x is None or (_finite(x, 0) and x <= MAX_SAMPLE_S * 1e3) for x in v),
                            f"{where}: {k} is not a list of ms, one a sample")
                    for k, most in (("device_wait_us", len(ar.get("samples") or [])),
                                    ("rejected_device_wait_us", rejections)):
                        v = ar.get(k, [])
                        _check(isinstance(v, list) and len(v) <= most and all(
                                   x is None or (_finite(x, 0) and x <= MAX_SAMPLE_S * 1e6) for x in v),
                               f"{where}: {k} is not a list of microseconds, one a sample (or a rejected one)")
                    _check(ar.get("timed_by") in (None, "host", "device"), f"{where}: timed_by is not host or device")
                    asked_s, parts = ar.get("asked_s") or [], [ar.get("host_s") or []]  # the gate's guard: outside
                    _check(all(t is None or x is None or x <= t for xs in parts for t, x in zip(asked_s, xs)),
                           f"{where}: host_s is more than the sample's round trip")
                measured = set(sd["areas"]) if measured is None else measured
                _check(set(sd["areas"]) == measured, f"outcome {i} round {r}: {side}: not the phases of the others")


MAX_NUMBER = 1_000_000       # calls a sample (workload.calibrate stops at 1000)
IDLE_WHERE = re.compile(r"\w+: \d+ \([\w.?-]{1,16}\) [\d.]+ ms", re.ASCII)   # idle_cpu_where: phase, thread, ms
MAX_SAMPLE_S = 86_400.0      # a sample's round trip: a day is no measurement
MAX_GATE_JSON_BYTES = 64 << 20    # a 2^18 gate of 10 rounds writes ~0.5 MB


def _count(v) -> bool:
    return is_int(v) and 0 <= v <= MAX_NUMBER


def _finite(v, low: float, strict: bool = False) -> bool:
    return is_number(v) and (v > low if strict else v >= low)


class GateJsonError(ValueError):
    """A file that cannot be read as a gate.json: its one-line reason, the path first."""


def read_json(path) -> GateResult:
    """A gate.json file judged afresh (from_dict); GateJsonError names the file and what is wrong with it."""
    try:
        return from_dict(json.loads(read_input(path, MAX_GATE_JSON_BYTES)))   # never a FIFO, a device, or GiBs
    except OSError as e:
        raise GateJsonError(f"{path}: {e.strerror or e}") from None
    except json.JSONDecodeError as e:
        raise GateJsonError(f"{path}: not JSON ({e.msg}, line {e.lineno})") from None
    except (UnicodeDecodeError, ValueError, KeyError, TypeError, IndexError, AttributeError, RecursionError) as e:
        first = str(e).splitlines()[0] if str(e) else ""
        raise GateJsonError(f"{path}: not a gate.json ({type(e).__name__}: {first})") from None


def from_dict(doc: dict) -> GateResult:
    """A saved gate.json judged afresh from its samples (the report of a past run, or of crafted data)."""
    _check_doc(doc)
    c = doc["config"]
    cfg = GateConfig(rounds=c["rounds"], samples=c["samples"], alpha=c["alpha"], threshold=c["threshold"],
                     thresholds=dict(c.get("thresholds", {})), areas=tuple(c["areas"]), path=c.get("path"),
                     worker_cpus=c.get("worker_cpus", 0), threshold_floor=c.get("threshold_floor", 0.0),
                     min_sample_s=c.get("min_sample_s", DEFAULT_MIN_SAMPLE_S),
                     min_device_sample_s=c.get("min_device_sample_s", 0.0),
                     max_idle_cpu_ms=c.get("max_idle_cpu_ms", GateConfig.max_idle_cpu_ms),
                     max_idle_cpu_ms_host=c.get("max_idle_cpu_ms_host", GateConfig.max_idle_cpu_ms_host),
                     max_foreign_share=c.get("max_foreign_share", GateConfig.max_foreign_share),
                     irq_cost_us=c.get("irq_cost_us", GateConfig.irq_cost_us),
                     max_device_wait_us=c.get("max_device_wait_us", GateConfig.max_device_wait_us),
                     pins={a: (v["pin"], v["reason"]) for a, v in c.get("pins", {}).items()},
                     derived={(spec_key(t["spec"]), t["phase"]): Threshold(t["value"], t["source"], t["basis"])
                              for t in c.get("derived", [])})
    outcomes = []
    for o in doc["outcomes"]:
        phases = tuple(o["phases"]) if o.get("phases") else None
        oc = Outcome(WorkloadConfig(Spec(**o["spec"]), bool(o.get("required", True)), phases), status=o["status"],
                     message=o.get("message", ""), rounds=o["rounds"], discards=o.get("discards", 0),
                     guard_by=o.get("guard_by") if o.get("guard_by") == "gate" else None)
        if oc.status == "ok":
            _judge(cfg, oc)
        outcomes.append(oc)
    cfg.workloads = [o.config for o in outcomes]
    res = GateResult(doc.get("repo", ""), doc["base"], doc["head"], doc["base_ref"], doc["head_ref"], cfg, outcomes,
                     wall_s=doc.get("wall_s", 0.0), rules_changed=[str(x) for x in doc.get("rules_changed", [])],
                     deps_changed=[str(x) for x in doc.get("deps_changed", [])],
                     build_changed=[str(x) for x in doc.get("build_changed", [])],
                     isolation=[str(x) for x in doc.get("isolation", [])],
                     not_gated=[WorkloadConfig(Spec(**w["spec"]), w["required"]) for w in doc.get("not_gated", [])])
    res.exit_code = exit_code(outcomes)
    return res
