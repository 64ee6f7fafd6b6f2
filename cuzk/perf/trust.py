"""Whether a GPU sample can be trusted: NVML state read before and after it.

A sample is rejected when, at either end or in between:
  - a clock-event reason other than the benign ones is set (power cap, thermal, HW slowdown, ...);
  - a violation counter (power, thermal, board limit, reliability) moved during the sample;
  - another process was on the GPU;
  - a read that one of these rules needs failed, where the device gave it when the guard opened (a device that
    never gives one is not checked on it: `unread`, which the gate reports; without the process list or the
    clock-event reasons the guard cannot open).
The rules are data (TrustPolicy), so a runner admin can relax one in perf-gate.toml, visibly.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from ..nvml import THROTTLE_REASONS, Nvml, Snapshot, reason_names

BENIGN_REASONS = ("gpu_idle", "applications_clocks_setting", "display_clock_setting")
WATCHED_VIOLATIONS = ("power", "thermal", "board_limit", "reliability")


@dataclass(frozen=True)
class TrustPolicy:
    ignore_reasons: tuple[str, ...] = BENIGN_REASONS
    watched_violations: tuple[str, ...] = WATCHED_VIOLATIONS
    max_temperature_c: int | None = None
    allow_other_processes: bool = False

    def bad_bits(self) -> int:
        return sum(b for b, n in THROTTLE_REASONS.items() if n not in self.ignore_reasons)


@dataclass
class Verdict:
    reasons: list[str] = field(default_factory=list)
    energy_j: float | None = None

    @property
    def trusted(self) -> bool:
        return not self.reasons


def needed_reads(policy: TrustPolicy) -> tuple[str, ...]:
    """The snapshot reads (Snapshot.failed's names) the policy judges a sample by."""
    return (("throttle_reasons",) + tuple(f"violation:{n}" for n in policy.watched_violations)
            + (() if policy.allow_other_processes else ("processes",)))


def judge(before: Snapshot, after: Snapshot, policy: TrustPolicy = TrustPolicy(),
          own_pids: frozenset = frozenset(), unread: frozenset = frozenset()) -> Verdict:
    """unread: the reads this device never gave (not judged); any other needed read that failed rejects."""
    v = Verdict()
    for when, s in (("before", before), ("after", after)):
        lost = [n for n in needed_reads(policy) if n in s.failed and n not in unread]
        if lost:
            v.reasons.append(f"NVML read of {', '.join(lost)} failed {when} the sample")
    bad = policy.bad_bits()
    for when, s in (("before", before), ("after", after)):
        bits = (s.throttle_reasons or 0) & bad
        if bits:
            v.reasons.append(f"throttled {when}: {', '.join(reason_names(bits))}")
        if policy.max_temperature_c is not None and (s.temperature_c or 0) > policy.max_temperature_c:
            v.reasons.append(f"temperature {s.temperature_c} C {when} > {policy.max_temperature_c} C")
    for name in policy.watched_violations:
        a, b = before.violations_ns.get(name), after.violations_ns.get(name)
        if a is not None and b is not None and b > a:
            v.reasons.append(f"{name} violation for {(b - a) / 1e6:.3f} ms during the sample")
    if not policy.allow_other_processes:
        others = other_processes(before.processes + after.processes, own_pids)
        if others:
            v.reasons.append(f"other processes on the GPU: {', '.join(map(str, others))}")
    if before.energy_mj is not None and after.energy_mj is not None:
        v.energy_j = (after.energy_mj - before.energy_mj) / 1000.0
    return v


def other_processes(pids, own_pids: frozenset) -> list[int]:
    """PIDs that are not ours (ours: this process and the gate's idle sibling worker). In a PID
    namespace (a container) NVML reports host PIDs and ours are unrecognisable: then up to as
    many unknown PIDs as we own are taken to be ours, and more mean contention."""
    own = own_pids or frozenset({os.getpid()})
    seen = sorted(set(pids))
    unknown = [p for p in seen if p not in own]
    if any(p in own for p in seen):
        return unknown
    return unknown if len(unknown) > len(own) else []


class SampleGuard:
    """Wraps one sample: `start()` before it, `finish(before)` after it."""

    def __init__(self, nvml: Nvml, policy: TrustPolicy = TrustPolicy(), own_pids: frozenset = frozenset()):
        self.nvml, self.policy, self.own_pids = nvml, policy, own_pids
        # what this device gives: a needed read it never gives is not judged (and said); one that fails later is
        first = nvml.snapshot()
        self.unread = frozenset(n for n in first.failed if n in needed_reads(policy))

    def blind(self) -> list[str]:
        """The needed reads without which the guard cannot judge a sample at all."""
        return [n for n in ("throttle_reasons", "processes") if n in self.unread]

    def start(self) -> Snapshot:
        return self.nvml.snapshot()

    def finish(self, before: Snapshot) -> tuple[Verdict, Snapshot]:
        after = self.nvml.snapshot()
        return judge(before, after, self.policy, self.own_pids, self.unread), after
