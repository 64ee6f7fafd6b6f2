"""The device probe a GPU worker runs around each sample (cuzk/perf/device_probe.py)."""
from __future__ import annotations

import subprocess
import sys
import time
import types
from pathlib import Path

import pytest

from cuzk.perf import device_probe


class _FakeCupy(types.ModuleType):
    """CuPy as far as the probe uses it: the kernel 'runs' for `run_s` at the stream's sync, on a host clock of
    its own (perf_counter), which nothing else moves: the waits read are exact, whatever the host's load."""

    def __init__(self, run_s: float):
        super().__init__("cupy")
        self.run_s, self.launches, self.codes, self.now = run_s, [], [], 100.0
        fake = self

        class Stream:
            def __init__(self, non_blocking=False):
                self.non_blocking, self.pending = non_blocking, 0

            def __enter__(self):
                fake.current = self

            def __exit__(self, *exc):
                fake.current = None

            def synchronize(self):
                fake.now += fake.run_s * self.pending
                self.pending = 0

        class RawModule:
            def __init__(self, code, backend):
                fake.codes.append((code, backend))

            def get_function(self, name):
                def launch(grid, block, args):
                    fake.launches.append((name, grid, block, int(args[0]), fake.current.non_blocking))
                    fake.current.pending += 1
                return launch
        self.cuda = types.SimpleNamespace(Stream=Stream)
        self.RawModule = RawModule

    def perf_counter(self) -> float:
        return self.now


def _fake_cupy(monkeypatch, run_s: float) -> _FakeCupy:
    """The fake, imported by the probe, its clock the probe's."""
    fake = _FakeCupy(run_s)
    monkeypatch.setitem(sys.modules, "cupy", fake)
    monkeypatch.setattr(device_probe, "time", types.SimpleNamespace(perf_counter=fake.perf_counter))
    return fake


def test_the_probe_reports_what_it_waited_past_its_spin(monkeypatch):
    """One thread of the probe kernel on a non-blocking stream of its own, waited for on the host clock; its wait
    is that time less its spin (here a 'kernel' that takes 3 ms of a 20 us spin: 2980 us)."""
    fake = _fake_cupy(monkeypatch, 0.003)
    p = device_probe.DeviceProbe()
    (code, backend), = fake.codes
    assert "device_probe" in code and "globaltimer" in code and backend == "nvrtc"
    assert fake.launches == [("device_probe", (1,), (1,), device_probe.SPIN_NS, True)]    # the load's: unrecorded
    w = p.wait_us()
    assert len(fake.launches) == 2 and w == 2980.0, w
    fake.run_s = 0.0
    assert p.wait_us() == 0.0               # nothing past its spin: never below


def test_the_probe_before_a_sample_counts_the_second_of_two(monkeypatch):
    """Before a sample the probe runs twice and reports the second: the first pays the switch from the other
    context (and waits out work of it that ends meanwhile); a kernel still running holds the second too."""
    fake = _fake_cupy(monkeypatch, 0.0)
    p = device_probe.DeviceProbe()
    waits = iter([0.004, 0.00005])             # the first waits 4 ms, the second 50 us
    Stream = type(p._stream)
    real_sync = Stream.synchronize

    def sync(self):
        fake.run_s = next(waits)
        real_sync(self)
    monkeypatch.setattr(Stream, "synchronize", sync)
    n = len(fake.launches)
    w = p.before_us()
    assert len(fake.launches) == n + 2 and w == 30.0, w      # the first's 4 ms is not the sample's
    waits = iter([0.0, 0.004])
    assert p.before_us() == 3980.0


# the probe's own kernel, spinning 3 s in another process
SPINNER = f"""
import cupy, numpy
k = cupy.RawModule(code={(Path(device_probe.__file__).with_name("device_probe.cu")).read_text()!r}).get_function(
    "device_probe")
k((1,), (1,), (numpy.uint64(3_000_000_000),))
print("spinning", flush=True)
cupy.cuda.Device().synchronize()
"""


@pytest.mark.gpu
def test_the_probe_waits_behind_another_contexts_kernel():
    """What the gate's rule rests on: another process's kernel running on the GPU (time-sliced with ours) makes
    the probe wait past max_device_wait_us's default, where alone it does not (the median of 20 probes each)."""
    from cuzk.perf.foreign_work import DEFAULT_DEVICE_WAIT_US
    p = device_probe.DeviceProbe()
    alone = sorted(p.wait_us() for _ in range(20))
    spinner = subprocess.Popen([sys.executable, "-c", SPINNER], stdout=subprocess.PIPE, text=True)
    try:
        assert spinner.stdout.readline().strip() == "spinning"
        time.sleep(0.2)
        behind = sorted(p.wait_us() for _ in range(20))
        before = sorted(p.before_us() for _ in range(10))      # the pair before a sample: the second still waits
    finally:
        spinner.kill()
        spinner.wait()
    print(f"alone {alone[10]:.0f} us (most {alone[-1]:.0f}); behind another context {behind[10]:.0f} us "
          f"(least {behind[0]:.0f})")
    assert alone[10] < DEFAULT_DEVICE_WAIT_US < behind[10], (alone, behind)
    assert DEFAULT_DEVICE_WAIT_US < before[0], before
