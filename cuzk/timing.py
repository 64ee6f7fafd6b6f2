"""PhaseTimer: host and device time, and peak memory, for each named phase.

Device time comes from CUDA events recorded on the phase's stream and read once at
the end (no synchronize inside a phase). On the CPU backend the device fields are None.
"""
from __future__ import annotations

import resource
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

PHASES = (
    "synthesis",
    "prep_msm",
    "ntt_msm_h",
    "batch_addition",
    "tail_msm",
    "b_g2",
    "proof_assembly",
)


def peak_rss_bytes() -> int:
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return r if sys.platform == "darwin" else r * 1024


@dataclass
class PhaseRecord:
    host_s: float = 0.0
    device_s: float | None = None
    peak_device_bytes: int | None = None
    peak_host_bytes: int = 0
    impl: str = "cpu"          # which backend actually ran it ("cpu" when a GPU run fell back)
    calls: int = 0

    def as_dict(self) -> dict:
        return {
            "host_s": self.host_s,
            "device_s": self.device_s,
            "peak_device_bytes": self.peak_device_bytes,
            "peak_host_bytes": self.peak_host_bytes,
            "impl": self.impl,
        }


@dataclass
class PhaseTimer:
    """Accumulates records per phase; a phase entered twice adds up."""

    device: object | None = None   # optional backend hook with event/peak methods
    records: dict[str, PhaseRecord] = field(default_factory=dict)
    _pending: list = field(default_factory=list)

    @contextmanager
    def phase(self, name: str, impl: str = "cpu"):
        if name not in PHASES:
            raise KeyError(f"unknown phase {name!r}")
        rec = self.records.setdefault(name, PhaseRecord(impl=impl))
        rec.impl = impl
        dev = self.device if impl != "cpu" else None
        start_ev = dev.record_event() if dev is not None else None
        t0 = time.perf_counter()
        try:
            yield rec
        finally:
            rec.host_s += time.perf_counter() - t0
            rec.calls += 1
            rec.peak_host_bytes = max(rec.peak_host_bytes, peak_rss_bytes())
            if dev is not None:
                self._pending.append((rec, start_ev, dev.record_event()))
                peak = dev.peak_bytes()
                rec.peak_device_bytes = max(rec.peak_device_bytes or 0, peak)

    def finish(self) -> dict[str, PhaseRecord]:
        """Read the recorded CUDA events (one sync at the very end)."""
        for rec, a, b in self._pending:
            rec.device_s = (rec.device_s or 0.0) + self.device.elapsed_s(a, b)
        self._pending.clear()
        return self.records

    def as_dict(self) -> dict[str, dict]:
        self.finish()
        return {p: self.records[p].as_dict() for p in PHASES if p in self.records}

    def total_host_s(self) -> float:
        return sum(r.host_s for r in self.records.values())
