"""What the sampling thread reads of its own timed calls (sched_window): its waits for others' work and its time
away, never its own process's work."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import pytest

from cuzk.perf.isolation import steal_ns
from cuzk.perf.sched_window import Window

# serial: what held the thread on its CPU, read with no other test beside it (tests/conftest.py)
pytestmark = [pytest.mark.skipif(not os.path.exists("/proc/thread-self/schedstat"), reason="no per-thread schedstat"),
              pytest.mark.serial]


def _spin(s: float) -> None:
    t = time.thread_time()
    while time.thread_time() - t < s:
        pass


@pytest.fixture
def one_cpu():
    was = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(was)})
    yield min(was)
    os.sched_setaffinity(0, was)


def test_a_sleep_is_away_and_nothing_held():
    w = Window()
    time.sleep(0.05)
    got = w.close()
    assert got["away_ms"] >= 45 and got["held_ms"] < 5, got


def test_its_own_threads_on_its_cpu_are_not_counted(one_cpu):
    s0 = steal_ns((one_cpu,))
    w = Window()
    t = threading.Thread(target=_spin, args=(0.1,))
    t.start()
    _spin(0.05)
    t.join()                    # it waited for its own thread: run delay and a sleep, both its process's work
    got = w.close()
    s1 = steal_ns((one_cpu,))
    # a virtual machine's host may take the CPU meanwhile (steal: neither thread's clock counts it); its count
    # moves in clock ticks, so a tick more is allowed; counting the other thread's 100 ms would pass it
    tick = 1e3 / os.sysconf("SC_CLK_TCK")
    stolen = (s1 - s0) / 1e6 + tick if s0 is not None and s1 is not None else 0.0
    assert got["held_ms"] < 10 + stolen and got["away_ms"] < 10 + stolen, (got, stolen)


def test_another_process_on_its_cpu_is_held(one_cpu):
    p = subprocess.Popen([sys.executable, "-c", "import time\nt = time.time()\nwhile time.time() - t < 2: pass"])
    try:
        time.sleep(0.2)          # started and spinning
        w = Window()
        _spin(0.05)
        got = w.close()
    finally:
        p.kill()
        p.wait()
    assert got["held_ms"] >= 20, got      # the CPU shared: about as long as it ran itself
