"""A known slowdown of one GPU phase, for measuring the gate (cuzk.perf.calibrate).

`DeviceSlowdown(fraction).wrap(CudaBackend.tail_msm)` makes every call of the phase, after its own
work, run a spin kernel on the same stream for `fraction` of the phase's own device time. The
extra time is device time inside the phase, so the phase's own CUDA events count it, and nothing
else is touched. The phase's own time is read from events recorded around its work and read back
at the next call, never by a synchronize inside the phase; the estimate is the median own time of
the calls seen so far after the first (its module loads), so the phase's median, which is what the gate
compares, moves by the fraction. (The least call would under-inject a phase that varies from call to
call: tail_msm at 2^24, 4-10% a call, read +2.5% for an asked +3%.)
"""
from __future__ import annotations

import statistics
from collections import deque
from typing import Callable

_SPIN = r"""
extern "C" __global__ void cuzk_spin(unsigned long long ns) {
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while (t - t0 < ns);
}
"""
_kernel = None


def load_spin():
    """The spin kernel, compiled and loaded: done when a phase is wrapped, so no timed call pays the load (a first
    call that did read +30-50% at porep_like 2^18's 9 ms ntt_msm_h)."""
    global _kernel
    if _kernel is None:
        import cupy
        _kernel = cupy.RawModule(code=_SPIN).get_function("cuzk_spin")
    return _kernel


def device_spin(seconds: float) -> None:
    """One thread spins on the current stream for `seconds` of the GPU's global timer."""
    if seconds > 0:
        import cupy
        load_spin()((1,), (1,), (cupy.uint64(int(seconds * 1e9)),))


class EventTimer:
    """Device time of one call on the current stream: events around it, read back later."""

    def start(self):
        import cupy
        ev = cupy.cuda.Event()
        ev.record()
        return ev

    def stop(self, start):
        import cupy
        ev = cupy.cuda.Event()
        ev.record()
        return start, ev

    def seconds(self, pair) -> float:
        import cupy
        start, end = pair
        end.synchronize()              # the previous call's events: long done by the next call
        return cupy.cuda.get_elapsed_time(start, end) / 1e3


KEEP = 64             # own times kept: the estimate follows recent calls, and its median costs microseconds


class DeviceSlowdown:
    def __init__(self, fraction: float, timer=None, spin: Callable[[float], None] | None = None):
        if not fraction > 0:
            raise ValueError(f"slowdown fraction must be > 0, not {fraction!r}")
        self.fraction = fraction
        self.timer = timer or EventTimer()
        self.spin = spin or device_spin
        self.own: deque[float] = deque(maxlen=KEEP)    # the phase's own device seconds, one per call read back
        self.extra: list[float] = []       # the spin asked for, one per call
        self._pending = None

    def estimate(self) -> float | None:
        if self._pending is not None:
            self.own.append(self.timer.seconds(self._pending))
            self._pending = None
        if not self.own:
            return None
        seen = list(self.own)
        return statistics.median(seen[1:] if len(seen) > 1 else seen)

    def wrap(self, phase):
        if self.spin is device_spin:
            try:
                load_spin()
            except ImportError:        # no CuPy: nothing to spin on; a spin asked for later raises there
                pass
        def slowed(*args, **kwargs):
            est = self.estimate()
            t = self.timer.start()
            out = phase(*args, **kwargs)
            self._pending = self.timer.stop(t)
            extra = self.fraction * est if est is not None else 0.0     # the first call only measures
            self.extra.append(extra)
            self.spin(extra)
            return out
        slowed.__wrapped__ = phase
        slowed.slowdown = self
        return slowed
