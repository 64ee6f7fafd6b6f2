"""What the scheduler did to the sampling thread while a sample was timed, read by the sampling thread itself.

Across the timed calls (and nothing else: not the collection before them, not the reply), the thread's wall time
is its own running, its waits to run (run delay: the CPU was busy) and its sleeps. Its process's other threads'
CPU (the process CPU clock, exited threads included) is the worker's own work. What is left is not the worker's:
- held: the run delay less its process's other threads' CPU: something else ran on its CPU while it wanted it;
- away: the rest of the wall time, neither its own work nor a wait to run: sleeps (a device wait that sleeps, a
  file read), a stop (a tracer's, one not sent by the gate) and, where the kernel accounts interrupt time apart,
  the device interrupts served on its CPU.
Both are lower bounds where the process's other threads ran beside it on another CPU. A host-timed phase does
not sleep, so its away time is not its code's; a device-timed phase's events may not feel either.
"""
from __future__ import annotations

import time


def run_delay() -> int | None:
    """The calling thread's ns waited runnable (schedstat's second field: current while it runs, unlike the
    first, which lags until the next tick), or None where the kernel keeps none (so a worker's missing figure
    can be the kernel's)."""
    try:
        with open("/proc/thread-self/schedstat", "rb") as f:
            return int(f.read().split()[1])
    except (OSError, ValueError, IndexError):
        return None


class Window:
    """Open before the timed calls, close() after: {"held_ms", "away_ms"} or None where not measured."""

    def __init__(self):
        self._start = self._now()

    @staticmethod
    def _now():
        delay = run_delay()
        if delay is None:
            return None
        return (time.monotonic_ns(), time.clock_gettime_ns(time.CLOCK_THREAD_CPUTIME_ID), delay,
                time.clock_gettime_ns(time.CLOCK_PROCESS_CPUTIME_ID))

    def close(self) -> dict | None:
        end = self._now()
        if self._start is None or end is None:
            return None
        (w0, r0, d0, p0), (w1, r1, d1, p1) = self._start, end
        wall, run, delay = w1 - w0, r1 - r0, d1 - d0
        others = max(0, p1 - p0 - run)
        return {"held_ms": round(max(0, delay - others) / 1e6, 3),
                "away_ms": round(max(0, wall - run - delay - others) / 1e6, 3)}
