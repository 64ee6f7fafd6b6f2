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
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from . import checkout
from .compare import REGRESSION, Comparison, compare
from .gate_config import GateConfig, WorkloadConfig
from .worker import PROTOCOL

EXIT_OK, EXIT_REGRESSION, EXIT_ERROR = 0, 1, 2
NO_GPU = "the GPU cannot run here"      # the pre-flight's message, which the report's first line repeats
SIDES = ("base", "head")


class WorkerFailed(RuntimeError):
    pass


class WorkerTimeout(WorkerFailed):
    """A worker that did not reply within its timeout: it was killed."""


class WorkerProcess:
    """`python -m cuzk.perf.worker` with the commit's root first on sys.path; JSON lines both ways."""

    def __init__(self, root: Path, timeout: float, cpus: tuple[int, ...] | None = None):
        env = dict(os.environ)
        env["PYTHONPATH"] = str(root)
        env.pop("CUZK_OPT", None)
        self.timeout = timeout
        self.err = tempfile.TemporaryFile(mode="w+")        # a file, not a pipe: it can never fill and block
        # pinned before anything is imported (threads inherit it), by the gate's code, not the commit's
        pin = f"import os; os.sched_setaffinity(0, {list(cpus)}); " if cpus else ""
        cmd = [sys.executable, "-c", pin + "import runpy; runpy.run_module('cuzk.perf.worker', run_name='__main__')"]
        self.p = subprocess.Popen(cmd, cwd=root, env=env, text=True,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.err, bufsize=1)
        self.lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.p.stdout:
            self.lines.put(line)
        self.lines.put(None)

    @property
    def pid(self) -> int:
        return self.p.pid

    def stderr(self) -> str:
        if self.err.closed:
            return ""
        self.err.seek(0)
        return self.err.read()

    def ask(self, msg: dict) -> dict:
        self.send(msg)
        return self.receive()

    def send(self, msg: dict) -> None:
        try:
            self.p.stdin.write(json.dumps(msg) + "\n")
            self.p.stdin.flush()
        except (BrokenPipeError, OSError):
            pass                                             # the reply (EOF) tells what happened

    def receive(self) -> dict:
        try:
            line = self.lines.get(timeout=self.timeout)
        except queue.Empty:
            err = self.stderr()                      # before close() drops it
            self.kill()
            raise WorkerTimeout(f"{err}\nworker timed out after {self.timeout:.0f} s and was killed") from None
        if line is None:
            code = self.p.wait()
            raise WorkerFailed(f"{self.stderr()}\nworker exited with code {code}")
        try:
            return json.loads(line)
        except ValueError:
            raise WorkerFailed(f"{self.stderr()}\nworker reply is not JSON: {line[:500]!r}") from None

    def kill(self) -> None:
        """A hung worker does not read its stdin: no polite quit, SIGKILL at once."""
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()
        self.close()

    def close(self) -> None:
        if self.p.poll() is None:
            try:
                self.p.stdin.close()
                self.p.wait(timeout=10)
            except Exception:
                self.p.kill()
                self.p.wait()
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

    def as_dict(self) -> dict:
        return {"spec": self.config.spec.as_dict(), "required": self.config.required,
                "phases": list(self.config.phases) if self.config.phases else None, "status": self.status,
                "message": self.message, "rounds": self.rounds, "discards": self.discards,
                "comparisons": [c.as_dict() for c in self.comparisons]}


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
    harness_changed: bool = False
    exit_code: int = EXIT_ERROR
    not_gated: list[WorkloadConfig] = field(default_factory=list)   # left out by --cpu-only

    def regressions(self) -> list[tuple[Outcome, Comparison]]:
        return [(o, c) for o in self.outcomes for c in o.comparisons if c.verdict == REGRESSION]

    def as_dict(self) -> dict:
        c = self.config
        return {"repo": self.repo, "base": self.base, "head": self.head, "base_ref": self.base_ref,
                "head_ref": self.head_ref,
                "exit_code": self.exit_code, "wall_s": self.wall_s, "harness_changed": self.harness_changed,
                "config": {"path": c.path, "rounds": c.rounds, "samples": c.samples, "alpha": c.alpha,
                           "threshold": c.threshold, "thresholds": c.thresholds, "areas": list(c.areas),
                           "worker_cpus": c.worker_cpus, "worker_timeout_s": c.worker_timeout_s,
                           "worker_timeouts_s": {w.spec.label(): c.timeout_for(w) for w in c.workloads}},
                "outcomes": [o.as_dict() for o in self.outcomes],
                "not_gated": [{"spec": w.spec.as_dict(), "required": w.required} for w in self.not_gated]}


def _request(cfg: GateConfig, wc: WorkloadConfig, root: Path, sibling_pid: int | None) -> dict:
    pol = cfg.policy
    return {"protocol": PROTOCOL, "root": str(root), "spec": wc.spec.as_dict(), "areas": list(cfg.areas_for(wc)),
            "min_sample_s": cfg.min_sample_s, "max_discards": cfg.max_discards, "pause_s": cfg.pause_s,
            "sibling_pid": sibling_pid,
            "trust": {"ignore_reasons": list(pol.ignore_reasons), "watched_violations": list(pol.watched_violations),
                      "max_temperature_c": pol.max_temperature_c,
                      "allow_other_processes": pol.allow_other_processes}}


def _tail(text: str, n: int = 15) -> str:
    return "\n".join(text.strip().splitlines()[-n:])


class _Stop(Exception):
    pass


def _round(cfg: GateConfig, oc: Outcome, r: int, roots: dict, shas: dict, spawn, log) -> None:
    order = SIDES if r % 2 == 0 else SIDES[::-1]
    workers: dict = {}
    side = order[0]
    asking = "set-up"                 # what the worker was doing when it failed: set-up or a phase

    def fail(status: str, message: str, discards=()):
        oc.status, oc.message = status, f"{side} ({shas[side][:10]}), round {r + 1}: {message}".strip()
        oc.discards += len(discards)
        raise _Stop

    t0 = time.perf_counter()
    try:
        for side in order:
            workers[side] = spawn(roots[side], cfg.timeout_for(oc.config))
        ready = {}
        # GPU workloads set up both at once (nothing is timed yet; their samples are one call each): a round
        # costs one set-up, not two. Host-timed ones one after the other: their calls per sample are
        # calibrated during set-up, and a rival's set-up beside it would skew that.
        together = oc.config.spec.backend != "cpu"
        for side in order:
            other = workers[SIDES[1 - SIDES.index(side)]]
            workers[side].send(_request(cfg, oc.config, roots[side], other.pid))
            if not together:
                ready[side] = workers[side].receive()
        for side in order:
            if together:
                ready[side] = workers[side].receive()
            if ready[side]["status"] == "untrusted":
                fail("untrusted", ready[side].get("message", ""), ready[side].get("discards", []))
            if ready[side]["status"] == "unusable":          # a GPU that cannot run: never a skip
                fail("error", ready[side].get("message", ""))
            if ready[side]["status"] not in ("ready", "unavailable"):
                fail("error", f"unexpected reply {ready[side]}")
        unavailable = {s: ready[s].get("message", "") for s in SIDES if ready[s]["status"] == "unavailable"}
        if unavailable:
            why = "; ".join(f"{s}: {m}" for s, m in unavailable.items())
            if oc.config.required:
                oc.status, oc.message = "error", f"required workload cannot run: {why}"
            else:
                oc.status, oc.message = "skipped", f"not run (required = false): {why}"
            return
        areas = cfg.areas_for(oc.config)
        got = {s: {a: [] for a in areas} for s in SIDES}
        energy = {s: {a: [] for a in areas} for s in SIDES}
        states = {s: {a: [] for a in areas} for s in SIDES}
        for i in range(cfg.samples):
            for a in areas:
                for side in (order if i % 2 == 0 else order[::-1]):
                    asking = f"phase {a}"
                    rep = workers[side].ask({"sample": a})
                    if rep["status"] != "ok":
                        fail(rep["status"], rep.get("message", ""), rep.get("discards", []))
                    got[side][a].append(rep["value"])
                    if rep.get("energy_j") is not None:
                        energy[side][a].append(rep["energy_j"])
                    if rep.get("state") is not None:
                        states[side][a].append(rep["state"])
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
    oc.discards += sum(len(done[s].get("discards", [])) for s in SIDES)
    oc.rounds.append({"order": list(order), **{
        s: {**ready[s], "areas": {a: {"samples": got[s][a], "energy_j": energy[s][a], "states": states[s][a],
                                      "number": ready[s]["numbers"][a]} for a in areas},
            "discards": done[s].get("discards", []), "peak_device_bytes": done[s].get("peak_device_bytes")}
        for s in SIDES}})
    log(f"  round {r + 1}/{cfg.rounds} {oc.config.spec.label()}: {time.perf_counter() - t0:.1f} s")


def paired_log_ratios(rd: dict, area: str) -> list[float]:
    return [math.log(h / b) for b, h in zip(rd["base"]["areas"][area]["samples"], rd["head"]["areas"][area]["samples"])]


def _judge(cfg: GateConfig, oc: Outcome) -> None:
    for area in cfg.areas_for(oc.config):
        d = [statistics.median(paired_log_ratios(rd, area)) for rd in oc.rounds]
        pooled = {s: [x for rd in oc.rounds for x in rd[s]["areas"][area]["samples"]] for s in SIDES}
        oc.comparisons.append(compare(area, d, cfg.threshold_for(area), cfg.alpha,
                                      base_s=statistics.median(pooled["base"]),
                                      head_s=statistics.median(pooled["head"])))
    oc.status = "ok"


def harness_changed(repo, base: str, head: str) -> bool:
    p = subprocess.run(["git", "-C", str(repo), "diff", "--quiet", base, head, "--", "cuzk/perf", "benchmarks"],
                       capture_output=True)
    return p.returncode != 0


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
    from dataclasses import replace
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
        not_gated: list[WorkloadConfig] | None = None, gpu_status=None) -> GateResult:
    t0 = time.perf_counter()
    if spawn is WorkerProcess:
        cpus = worker_cpus(cfg.worker_cpus)
        spawn = lambda root, timeout: WorkerProcess(root, timeout, cpus)     # noqa: E731
    repo = str(Path(repo).resolve())
    shas = {"base": checkout.resolve(repo, base_ref), "head": checkout.resolve(repo, head_ref)}
    result = GateResult(repo, shas["base"], shas["head"], base_ref, head_ref, cfg,
                        [Outcome(wc) for wc in cfg.workloads], not_gated=list(not_gated or []))
    result.harness_changed = harness_changed(repo, shas["base"], shas["head"])
    for oc in result.outcomes:
        preflight(oc, gpu_status)
    if any(o.status == "error" for o in result.outcomes):
        for oc in result.outcomes:
            if oc.status == "running":
                oc.status, oc.message = "stopped", "not judged: the gate stopped at another workload's failure"
        result.exit_code = exit_code(result.outcomes)
        result.wall_s = time.perf_counter() - t0
        return result
    with tempfile.TemporaryDirectory(prefix="cuzk-gate-") as tmp:
        roots = {s: checkout.materialize(repo, shas[s], Path(tmp) / s) for s in SIDES}
        from .suite import gate_estimate_s
        est = gate_estimate_s(cfg)
        log(f"cuzk gate: base {shas['base'][:10]} ({base_ref}) vs head {shas['head'][:10]} ({head_ref}), "
            f"{cfg.rounds} rounds x {cfg.samples} paired samples; estimated "
            + (f"{est:.0f} s" if est is not None else "(no figure for a target in cuzk/perf/suite.py POINT_S)"))
        for r in range(cfg.rounds):
            for oc in result.outcomes:
                if oc.status == "running":
                    _round(cfg, oc, r, roots, shas, spawn, log)
            if any(o.status in ("error", "untrusted") for o in result.outcomes):
                break                       # the verdict is 2 whatever else happens: stop early
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


def from_dict(doc: dict) -> GateResult:
    """A saved gate.json judged afresh from its samples (the report of a past run, or of crafted data)."""
    from .workload import Spec
    c = doc["config"]
    cfg = GateConfig(rounds=c["rounds"], samples=c["samples"], alpha=c["alpha"], threshold=c["threshold"],
                     thresholds=dict(c.get("thresholds", {})), areas=tuple(c["areas"]), path=c.get("path"),
                     worker_cpus=c.get("worker_cpus", 0))
    outcomes = []
    for o in doc["outcomes"]:
        phases = tuple(o["phases"]) if o.get("phases") else None
        oc = Outcome(WorkloadConfig(Spec(**o["spec"]), bool(o.get("required", True)), phases), status=o["status"],
                     message=o.get("message", ""), rounds=o["rounds"], discards=o.get("discards", 0))
        if oc.status == "ok":
            _judge(cfg, oc)
        outcomes.append(oc)
    cfg.workloads = [o.config for o in outcomes]
    res = GateResult(doc.get("repo", ""), doc["base"], doc["head"], doc["base_ref"], doc["head_ref"], cfg, outcomes,
                     wall_s=doc.get("wall_s", 0.0), harness_changed=bool(doc.get("harness_changed", False)),
                     not_gated=[WorkloadConfig(Spec(**w["spec"]), w["required"]) for w in doc.get("not_gated", [])])
    res.exit_code = exit_code(outcomes)
    return res
