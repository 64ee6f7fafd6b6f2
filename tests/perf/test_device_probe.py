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
    """CuPy as far as the probe uses it: the kernel 'runs' for `run_s` on the host clock at the stream's sync."""

    def __init__(self, run_s: float):
        super().__init__("cupy")
        self.run_s, self.launches, self.codes = run_s, [], []
        fake = self

        class Stream:
            def __init__(self, non_blocking=False):
                self.non_blocking, self.pending = non_blocking, 0

            def __enter__(self):
                fake.current = self

            def __exit__(self, *exc):
                fake.current = None

            def synchronize(self):
                time.sleep(fake.run_s * self.pending)
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


def test_the_probe_reports_what_it_waited_past_its_spin(monkeypatch):
    """One thread of the probe kernel on a non-blocking stream of its own, waited for on the host clock; its wait
    is that time less its spin (here a 'kernel' that takes 3 ms of a 20 us spin: ~2980 us)."""
    fake = _FakeCupy(0.003)
    monkeypatch.setitem(sys.modules, "cupy", fake)
    p = device_probe.DeviceProbe()
    (code, backend), = fake.codes
    assert "device_probe" in code and "globaltimer" in code and backend == "nvrtc"
    assert fake.launches == [("device_probe", (1,), (1,), device_probe.SPIN_NS, True)]    # the load's: unrecorded
    w = p.wait_us()
    assert len(fake.launches) == 2 and 2900 <= w <= 3000 + 50_000, w
    fake.run_s = 0.0
    assert 0 <= p.wait_us() < 50_000


def test_the_probe_before_a_sample_counts_the_second_of_two(monkeypatch):
    """Before a sample the probe runs twice and reports the second: the first pays the switch from the other
    context (and waits out work of it that ends meanwhile); a kernel still running holds the second too."""
    fake = _FakeCupy(0.0)
    monkeypatch.setitem(sys.modules, "cupy", fake)
    p = device_probe.DeviceProbe()
    waits = iter([0.004, 0.0])                 # the first waits 4 ms, the second nothing
    Stream = type(p._stream)
    real_sync = Stream.synchronize

    def sync(self):
        fake.run_s = next(waits)
        real_sync(self)
    monkeypatch.setattr(Stream, "synchronize", sync)
    n = len(fake.launches)
    w = p.before_us()
    assert len(fake.launches) == n + 2 and w < 2000, w       # the first's 4 ms is not the sample's
    waits = iter([0.0, 0.004])
    assert p.before_us() >= 3900


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
