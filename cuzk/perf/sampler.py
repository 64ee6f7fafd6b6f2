"""Taking samples: each one guarded by NVML, a rejected one discarded and taken again.

`collect` never keeps a sample that its guard rejected. When more than `max_discards` samples
of one process are rejected it raises UntrustedRun: the run is reported untrusted, never judged.
The asv benchmarks (`sample_areas`) and the gate's workers (worker.py) both take every sample
as `collect` around `Workload.measure`, calibrated by `Workload.calibrate`, guarded by `guard_for`.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

from .. import nvml
from .trust import SampleGuard, TrustPolicy


class UntrustedRun(RuntimeError):
    """Samples that could not be trusted: `discards` rejected ones, or `why` no sample could be checked at all."""

    def __init__(self, what: str, discards: list[str], why: str | None = None):
        self.what, self.discards = what, list(discards)
        counts: dict[str, int] = {}
        for r in discards:
            counts[r] = counts.get(r, 0) + 1
        top = "; ".join(f"{n}x {r}" for r, n in sorted(counts.items(), key=lambda kv: -kv[1])[:3])
        super().__init__(f"untrusted run: {what}: {why}" if why is not None else
                         f"untrusted run: {what}: {len(discards)} samples rejected ({top})")


@dataclass
class SampleSet:
    values: list[float] = field(default_factory=list)        # seconds per call
    energy_j: list[float] = field(default_factory=list)      # joules per call, where NVML counts energy
    states: list[dict] = field(default_factory=list)         # GPU state after each kept sample
    number: int = 1                                          # calls per sample
    host_s: list[float] = field(default_factory=list)        # a kept sample's measure() wall, set-up included
    guard_s: list[float] = field(default_factory=list)       # its NVML checks, before and after

    def as_dict(self) -> dict:
        return {"samples": self.values, "number": self.number, "energy_j": self.energy_j, "states": self.states}


def collect(measure: Callable[[], float], n: int, guard: SampleGuard | None = None, *,
            out: SampleSet | None = None, discards: list[str] | None = None, max_discards: int = 10,
            pause_s: float = 1.0, what: str = "sample", number: int = 1) -> SampleSet:
    """Append n trusted samples of `measure()` (seconds for `number` calls) to `out`.
    Each rejected sample adds its reasons to `discards`, the budget shared by one process."""
    out = out if out is not None else SampleSet(number=number)
    discards = discards if discards is not None else []
    got = 0
    while got < n:
        t0 = time.perf_counter()
        before = guard.start() if guard is not None else None
        t1 = time.perf_counter()
        value = measure()
        t2 = time.perf_counter()
        if guard is not None:
            verdict, after = guard.finish(before)
            if not verdict.trusted:
                discards.append("; ".join(verdict.reasons))
                if len(discards) > max_discards:
                    raise UntrustedRun(what, discards)
                if pause_s:
                    time.sleep(pause_s)       # let clocks and temperature settle before retaking
                continue
            if verdict.energy_j is not None:
                out.energy_j.append(verdict.energy_j / number)
            out.states.append({"sm_clock_mhz": after.sm_clock_mhz, "temperature_c": after.temperature_c,
                               "power_w": after.power_w, "throttle_reasons": after.throttle_reasons})
        out.values.append(value / number)
        out.host_s.append(t2 - t1)
        out.guard_s.append((t1 - t0) + (time.perf_counter() - t2))
        got += 1
    return out


_NVML: dict = {}


def guard_for(workload, policy: TrustPolicy | None = None, own_pids: frozenset = frozenset()) -> SampleGuard | None:
    """An NVML guard for a GPU workload (one NVML handle per process); None on the CPU reference.
    A GPU workload without NVML cannot be checked: that is an untrusted run, not a silent pass."""
    if not workload.device:
        return None
    return nvml_guard(workload.spec.label(), policy, own_pids)


def nvml_guard(what: str, policy: TrustPolicy | None = None, own_pids: frozenset = frozenset()) -> SampleGuard:
    """The NVML guard of GPU samples (one NVML handle per process); no NVML: an untrusted run."""
    if "dev" not in _NVML:
        _NVML["dev"] = nvml.open_device()
    if _NVML["dev"] is None:
        raise UntrustedRun(what, [], why="NVML is unavailable, so GPU state cannot be checked")
    guard = SampleGuard(_NVML["dev"], policy or TrustPolicy(), own_pids)
    if guard.blind():
        raise UntrustedRun(what, [], why=f"NVML cannot read the GPU's {', '.join(guard.blind())}, so a sample "
                                         f"cannot be checked")
    return guard


@dataclass
class AreaSamples:
    sets: dict[str, SampleSet]
    discards: list[str]


def sample_areas(workload, areas, n: int, *, policy: TrustPolicy | None = None,
                 guard: SampleGuard | None = None, min_sample_s: float = 0.0, max_discards: int = 10,
                 pause_s: float = 1.0) -> AreaSamples:
    """n trusted samples of each area, round-robin over the areas so drift hits all alike."""
    guard = guard if guard is not None else guard_for(workload, policy)
    numbers = {a: workload.calibrate(a, min_sample_s) for a in areas}
    res = AreaSamples({a: SampleSet(number=numbers[a]) for a in areas}, [])
    for _ in range(n):
        for a in areas:
            collect(lambda: workload.measure(a, numbers[a]), 1, guard, out=res.sets[a], discards=res.discards,
                    max_discards=max_discards, pause_s=pause_s, what=f"{workload.spec.label()}", number=numbers[a])
    return res


def sample(workload, area: str, n: int, **kw) -> SampleSet:
    return sample_areas(workload, [area], n, **kw).sets[area]
