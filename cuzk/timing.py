"""PhaseTimer: host and device time, and peak memory, for each named phase.

Device time comes from CUDA events recorded on the phase's stream and read once at
the end (no synchronize inside a phase). On the CPU backend the device fields are None.

Each record also keeps when the phase ran, for timelines (`cuzk bench --timeline`):
`start_s`/`stop_s` (host clock, seconds since the timer was made), `device_start_s`/
`device_stop_s` (CUDA events, placed on the same axis: seconds from the timer's first
device event, plus the host time at which that event was recorded), one entry per call in
`spans`, and, where a phase loops over the circuits of a batch, one sub-record per circuit in
`circuits` (`with circuit(i):` inside a phase; a no-op outside one). These are added fields:
the fields listed in docs/architecture.md (What a run records) keep their names and meaning.
"""
from __future__ import annotations

import contextvars
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


def reset_peak_rss() -> bool:
    """Reset the process's peak RSS to its current RSS (Linux: "5" to /proc/self/clear_refs), so the
    next peak_rss_bytes() is the peak since now. False where that is not possible. It moves the
    process-wide counter that asv's peakmem_ reads: only for timers that own their process (bench)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


@dataclass
class Span:
    """One interval: host times (seconds since the timer's origin) and, on a GPU, device times."""
    start_s: float
    stop_s: float | None = None
    circuit: int | None = None
    label: str | None = None
    device_start_s: float | None = None
    device_stop_s: float | None = None
    _events: tuple | None = None          # (start, stop) CUDA events until finish()

    def as_dict(self) -> dict:
        d = {"start_s": self.start_s, "stop_s": self.stop_s,
             "device_start_s": self.device_start_s, "device_stop_s": self.device_stop_s}
        if self.circuit is not None:
            d["circuit"] = self.circuit
        if self.label is not None:
            d["label"] = self.label
        return d


@dataclass
class PhaseRecord:
    host_s: float = 0.0
    device_s: float | None = None
    peak_device_bytes: int | None = None
    peak_host_bytes: int = 0
    peak_host_scope: str = "process"   # "phase": the phase's own peak RSS; "process": the process's peak so far
    impl: str = "cpu"          # which backend actually ran it ("cpu" when a GPU run fell back)
    calls: int = 0
    spans: list = field(default_factory=list)      # one Span per entry of the phase
    circuits: list = field(default_factory=list)   # per-circuit sub-records (Span with .circuit)

    def as_dict(self) -> dict:
        dev = [s for s in self.spans if s.device_start_s is not None]
        return {
            "host_s": self.host_s,
            "device_s": self.device_s,
            "peak_device_bytes": self.peak_device_bytes,
            "peak_host_bytes": self.peak_host_bytes,
            "peak_host_scope": self.peak_host_scope,
            "impl": self.impl,
            # added for timelines (the fields above, docs/architecture.md's, are unchanged)
            "calls": self.calls,
            "start_s": self.spans[0].start_s if self.spans else None,
            "stop_s": self.spans[-1].stop_s if self.spans else None,
            "device_start_s": dev[0].device_start_s if dev else None,
            "device_stop_s": dev[-1].device_stop_s if dev else None,
            "spans": [s.as_dict() for s in self.spans],
            "circuits": [s.as_dict() for s in self.circuits],
        }


# the phase being timed in this thread/context: (timer, record, device hook or None)
_ACTIVE: contextvars.ContextVar = contextvars.ContextVar("cuzk_phase", default=None)


@contextmanager
def circuit(index: int, label: str | None = None):
    """A per-circuit sub-record of the phase being timed (host clock; CUDA events on a GPU
    phase, recorded, never synchronized). Outside a timed phase it does nothing."""
    active = _ACTIVE.get()
    if active is None:
        yield
        return
    timer, rec, dev = active
    span = Span(time.perf_counter() - timer.origin, circuit=index, label=label)
    ev0 = timer._device_event(dev) if dev is not None else None
    try:
        yield
    finally:
        span.stop_s = time.perf_counter() - timer.origin
        if dev is not None:
            span._events = (ev0, dev.record_event())
            timer._pending_spans.append(span)
        rec.circuits.append(span)


@dataclass
class PhaseTimer:
    """Accumulates records per phase; a phase entered twice adds up."""

    device: object | None = None   # optional backend hook with event/peak methods
    phase_peaks: bool = False      # reset the process's peak RSS at each phase start: per-phase host peaks
    records: dict[str, PhaseRecord] = field(default_factory=dict)
    process_peak_host_bytes: int = 0   # with phase_peaks, the process's peak across the resets
    _pending: list = field(default_factory=list)
    origin: float = field(default_factory=time.perf_counter)   # host time zero of the spans
    _dev_origin: object = None              # the first CUDA event, and the host time it was recorded
    _dev_origin_host_s: float = 0.0
    _pending_spans: list = field(default_factory=list)

    def _device_event(self, dev):
        if self._dev_origin is None:
            self._dev_origin_host_s = time.perf_counter() - self.origin
            self._dev_origin = dev.record_event()
        return dev.record_event()

    @contextmanager
    def phase(self, name: str, impl: str = "cpu"):
        if name not in PHASES:
            raise KeyError(f"unknown phase {name!r}")
        rec = self.records.setdefault(name, PhaseRecord(impl=impl))
        rec.impl = impl
        dev = self.device if impl != "cpu" else None
        span = Span(time.perf_counter() - self.origin)
        scoped = False
        if self.phase_peaks:
            self.process_peak_host_bytes = max(self.process_peak_host_bytes, peak_rss_bytes())
            scoped = reset_peak_rss()
        start_ev = self._device_event(dev) if dev is not None else None
        token = _ACTIVE.set((self, rec, dev))
        t0 = time.perf_counter()
        try:
            yield rec
        finally:
            t1 = time.perf_counter()
            _ACTIVE.reset(token)
            rec.host_s += t1 - t0
            rec.calls += 1
            span.stop_s = t1 - self.origin
            rec.spans.append(span)
            rec.peak_host_bytes = max(rec.peak_host_bytes, peak_rss_bytes())
            rec.peak_host_scope = "phase" if scoped else "process"
            self.process_peak_host_bytes = max(self.process_peak_host_bytes, rec.peak_host_bytes)
            if dev is not None:
                span._events = (start_ev, dev.record_event())
                self._pending.append((rec, start_ev, span._events[1]))
                self._pending_spans.append(span)
                peak = dev.peak_bytes()
                rec.peak_device_bytes = max(rec.peak_device_bytes or 0, peak)

    def add_circuit_span(self, phase: str, index: int, start: float, stop: float, label: str | None = None) -> None:
        """A per-circuit sub-record measured elsewhere (e.g. in a pool worker), from absolute
        time.perf_counter() values (CLOCK_MONOTONIC: comparable across processes on Linux)."""
        rec = self.records.setdefault(phase, PhaseRecord())
        rec.circuits.append(Span(start - self.origin, stop - self.origin, circuit=index, label=label))

    def finish(self) -> dict[str, PhaseRecord]:
        """Read the recorded CUDA events (one sync at the very end)."""
        for rec, a, b in self._pending:
            rec.device_s = (rec.device_s or 0.0) + self.device.elapsed_s(a, b)
        self._pending.clear()
        for span in self._pending_spans:
            a, b = span._events
            base = self._dev_origin_host_s
            span.device_start_s = base + self.device.elapsed_s(self._dev_origin, a)
            span.device_stop_s = base + self.device.elapsed_s(self._dev_origin, b)
            span._events = None
        self._pending_spans.clear()
        return self.records

    def as_dict(self) -> dict[str, dict]:
        self.finish()
        return {p: self.records[p].as_dict() for p in PHASES if p in self.records}

    def total_host_s(self) -> float:
        return sum(r.host_s for r in self.records.values())


def merge_phases(runs: list[dict]) -> dict[str, dict]:
    """Several timers' as_dict() (provers that ran side by side, one per GPU) as one: per phase the times
    and calls summed, the peaks the largest, the spans and per-circuit records of all in start order."""
    out: dict[str, dict] = {}
    for p in PHASES:
        recs = [r[p] for r in runs if p in r]
        if not recs:
            continue
        dev = [r["device_s"] for r in recs if r["device_s"] is not None]
        pdev = [r["peak_device_bytes"] for r in recs if r["peak_device_bytes"] is not None]
        spans = sorted((s for r in recs for s in r["spans"]), key=lambda s: s["start_s"])
        dspans = [s for s in spans if s["device_start_s"] is not None]
        out[p] = {
            "host_s": sum(r["host_s"] for r in recs),
            "device_s": sum(dev) if dev else None,
            "peak_device_bytes": max(pdev) if pdev else None,
            "peak_host_bytes": max(r["peak_host_bytes"] for r in recs),
            "peak_host_scope": "process",
            "impl": recs[0]["impl"],
            "calls": sum(r["calls"] for r in recs),
            "start_s": spans[0]["start_s"] if spans else None,
            "stop_s": max((s["stop_s"] for s in spans if s["stop_s"] is not None), default=None),
            "device_start_s": min((s["device_start_s"] for s in dspans), default=None),
            "device_stop_s": max((s["device_stop_s"] for s in dspans), default=None),
            "spans": spans,
            "circuits": sorted((c for r in recs for c in r["circuits"]), key=lambda c: c["start_s"]),
        }
    return out
