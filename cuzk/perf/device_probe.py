"""Another context's work on the GPU around a sample, as the sampling process sees it.

The gate stops a worker's process between its round trips, but not the GPU work that process queued: kernels left
behind run on while it is stopped, and so does one left resident and spinning. Two contexts' work on one GPU is
time-sliced, so such work slows whichever side samples next, unseen by that side's CUDA events (an event is
stamped when its own context runs, after the switch) and by the gate's NVML reads (the worker is one of its own).
So each GPU worker, its harness the base's on both sides, runs a probe before and after a sample's timed calls:
one thread of its own context spinning for SPIN_NS on the GPU's global timer, launched on a stream of its own and
waited for on the host clock. On a GPU that runs nothing else it takes the spin and a launch's latency; behind
another context's work it waits for that context's time slice too. What it waited past its spin is the sample's
`device_wait_us` (the larger of the waits before and after it); foreign_work.device_waits judges it.

The probe before a sample is taken twice, the second counted (measured on an H200, tools/probe_levels.py): the
first after the other context's work pays the switch to this context (~250 us, where the second takes ~20 us),
and waits out any of that work that ends within the other's time slice, which then overlaps nothing of the
sample; the second, launched at once, waits only for work still running there (a whole time slice, ~2.4 ms).
"""
from __future__ import annotations

import time
from pathlib import Path

SPIN_NS = 20_000          # long enough to be a kernel, short beside any sample (two probes a sample)


class DeviceProbe:
    def __init__(self, spin_ns: int = SPIN_NS):
        import cupy
        import numpy as np
        src = Path(__file__).with_name("device_probe.cu").read_text()
        self._fn = cupy.RawModule(code=src, backend="nvrtc").get_function("device_probe")
        self._stream = cupy.cuda.Stream(non_blocking=True)     # never behind this process's other streams
        self._spin = np.uint64(spin_ns)
        self.spin_us = spin_ns / 1e3
        self.wait_us()                                         # the module's load and first launch: off the record

    def before_us(self) -> float:
        """The wait of the second of two probes (the module's docstring says why)."""
        self.wait_us()
        return self.wait_us()

    def wait_us(self) -> float:
        """Microseconds the probe took past its own spin (launch, and any other context's work ahead of it)."""
        t0 = time.perf_counter()
        with self._stream:
            self._fn((1,), (1,), (self._spin,))
        self._stream.synchronize()
        return round(max(0.0, (time.perf_counter() - t0) * 1e6 - self.spin_us), 1)
