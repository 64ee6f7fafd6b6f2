"""`cuzk gate`: base against head, per phase, interleaved, with exit codes a CI job can trust.

Both commits are extracted (checkout.materialize) and measured by worker processes running
their own code (worker.py). Each round runs one base and one head process back to back, the
order alternating (AB, BA, AB, ...), so drift over the run hits both sides; every process
takes `samples` samples per phase round-robin, and its median is that round's value.
compare.py then judges each phase. Exit codes: 0 no regression, 1 a regression, 2 a benchmark
error, an untrusted run, or nothing measured: never a pass.
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from . import checkout
from .compare import REGRESSION, Comparison, compare
from .gate_config import GateConfig, WorkloadConfig
from .worker import PROTOCOL

EXIT_OK, EXIT_REGRESSION, EXIT_ERROR = 0, 1, 2
SIDES = ("base", "head")


@dataclass
class WorkerResult:
    status: str                 # ok | unavailable | untrusted | error
    reply: dict | None
    stderr: str
    wall_s: float


@dataclass
class Outcome:
    """One workload of the config, through the whole gate."""
    config: WorkloadConfig
    status: str = "running"     # running -> ok | skipped | error | untrusted | stopped
    message: str = ""
    rounds: list[dict] = field(default_factory=list)          # [{"base": reply, "head": reply, "order": [...]}]
    comparisons: list[Comparison] = field(default_factory=list)
    discards: int = 0

    def as_dict(self) -> dict:
        return {"spec": self.config.spec.as_dict(), "required": self.config.required, "status": self.status,
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

    def regressions(self) -> list[tuple[Outcome, Comparison]]:
        return [(o, c) for o in self.outcomes for c in o.comparisons if c.verdict == REGRESSION]

    def as_dict(self) -> dict:
        c = self.config
        return {"base": self.base, "head": self.head, "base_ref": self.base_ref, "head_ref": self.head_ref,
                "exit_code": self.exit_code, "wall_s": self.wall_s, "harness_changed": self.harness_changed,
                "config": {"path": c.path, "rounds": c.rounds, "samples": c.samples, "alpha": c.alpha,
                           "threshold": c.threshold, "thresholds": c.thresholds, "areas": list(c.areas)},
                "outcomes": [o.as_dict() for o in self.outcomes]}


def run_worker(root: Path, request: dict, timeout: float) -> WorkerResult:
    """Start `python -m cuzk.perf.worker` with the commit's root first on sys.path."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(root)
    env.pop("CUZK_OPT", None)
    t0 = time.perf_counter()
    try:
        p = subprocess.run([sys.executable, "-m", "cuzk.perf.worker"], input=json.dumps(request), cwd=root,
                           env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        err = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
        return WorkerResult("error", None, f"{err}\nworker timed out after {timeout:.0f} s", timeout)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        return WorkerResult("error", None, p.stderr + f"\nworker exited with code {p.returncode}", wall)
    try:
        reply = json.loads(p.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return WorkerResult("error", None, p.stderr + f"\nworker reply is not JSON: {p.stdout[-500:]!r}", wall)
    if reply.get("protocol") != PROTOCOL:
        return WorkerResult("error", reply, p.stderr + f"\nworker protocol {reply.get('protocol')} != {PROTOCOL}",
                            wall)
    return WorkerResult(reply.get("status", "error"), reply, p.stderr, wall)


def _request(cfg: GateConfig, wc: WorkloadConfig, root: Path) -> dict:
    pol = cfg.policy
    return {"protocol": PROTOCOL, "root": str(root), "spec": wc.spec.as_dict(), "areas": list(cfg.areas),
            "samples": cfg.samples, "min_sample_s": cfg.min_sample_s, "max_discards": cfg.max_discards,
            "pause_s": cfg.pause_s,
            "trust": {"ignore_reasons": list(pol.ignore_reasons), "watched_violations": list(pol.watched_violations),
                      "max_temperature_c": pol.max_temperature_c,
                      "allow_other_processes": pol.allow_other_processes}}


def _tail(text: str, n: int = 15) -> str:
    return "\n".join(text.strip().splitlines()[-n:])


def _round(cfg: GateConfig, oc: Outcome, r: int, roots: dict, shas: dict, runner, log) -> None:
    order = SIDES if r % 2 == 0 else SIDES[::-1]
    got: dict[str, WorkerResult] = {}
    for side in order:
        res = runner(roots[side], _request(cfg, oc.config, roots[side]), cfg.worker_timeout_s)
        got[side] = res
        if res.status in ("error", "untrusted"):
            where = f"{side} ({shas[side][:10]}), round {r + 1}"
            oc.status = res.status
            msg = res.reply.get("message", "") if res.reply else ""
            oc.message = f"{where}: {msg}\n{_tail(res.stderr)}".strip()
            if res.reply and res.reply.get("discards"):
                oc.discards += len(res.reply["discards"])
            return
    unavailable = {s: got[s].reply.get("message", "") for s in SIDES if got[s].status == "unavailable"}
    if unavailable:
        why = "; ".join(f"{s}: {m}" for s, m in unavailable.items())
        if oc.config.required:
            oc.status, oc.message = "error", f"required workload cannot run: {why}"
        else:
            oc.status, oc.message = "skipped", f"not run (required = false): {why}"
        return
    oc.discards += sum(len(got[s].reply.get("discards", [])) for s in SIDES)
    oc.rounds.append({"order": list(order), **{s: got[s].reply for s in SIDES},
                      "wall_s": {s: got[s].wall_s for s in SIDES}})
    log(f"  round {r + 1}/{cfg.rounds} {oc.config.spec.label()}: "
        + ", ".join(f"{s} {got[s].wall_s:.1f} s" for s in order))


def _judge(cfg: GateConfig, oc: Outcome) -> None:
    for area in cfg.areas:
        per = {s: [statistics.median(rd[s]["areas"][area]["samples"]) for rd in oc.rounds] for s in SIDES}
        oc.comparisons.append(compare(area, per["base"], per["head"], cfg.threshold_for(area), cfg.alpha))
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


def run(repo: str | Path, base_ref: str, head_ref: str, cfg: GateConfig,
        runner: Callable[[Path, dict, float], WorkerResult] = run_worker,
        log: Callable[[str], None] = lambda m: print(m, file=sys.stderr)) -> GateResult:
    t0 = time.perf_counter()
    repo = str(Path(repo).resolve())
    shas = {"base": checkout.resolve(repo, base_ref), "head": checkout.resolve(repo, head_ref)}
    result = GateResult(repo, shas["base"], shas["head"], base_ref, head_ref, cfg,
                        [Outcome(wc) for wc in cfg.workloads])
    result.harness_changed = harness_changed(repo, shas["base"], shas["head"])
    with tempfile.TemporaryDirectory(prefix="cuzk-gate-") as tmp:
        roots = {s: checkout.materialize(repo, shas[s], Path(tmp) / s) for s in SIDES}
        log(f"cuzk gate: base {shas['base'][:10]} ({base_ref}) vs head {shas['head'][:10]} ({head_ref}), "
            f"{cfg.rounds} rounds x {cfg.samples} samples")
        for r in range(cfg.rounds):
            for oc in result.outcomes:
                if oc.status == "running":
                    _round(cfg, oc, r, roots, shas, runner, log)
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
    return result
