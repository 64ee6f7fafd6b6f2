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


def _readings(monkeypatch, *reads):
    """Window's clock reads, given: (wall, thread CPU, run delay, process CPU) in ms at open, then at close
    (None: no schedstat)."""
    it = iter(r and tuple(round(x * 1e6) for x in r) for r in reads)
    monkeypatch.setattr(Window, "_now", staticmethod(lambda: next(it)))


def test_the_window_splits_wall_time_into_run_held_and_away(monkeypatch):
    """The arithmetic on given reads: a sleep is away; a wait to run is held, less what the process's other threads
    ran meanwhile (their CPU is the worker's own)."""
    # 50 ms: 0.2 ms run, then asleep
    _readings(monkeypatch, (0, 10, 3, 10), (50, 10.2, 3, 10.2))
    assert Window().close() == {"held_ms": 0.0, "away_ms": 49.8}
    # 58 ms: the same sleep, then 8 ms waiting for a CPU that something else had
    _readings(monkeypatch, (0, 10, 3, 10), (58, 10.2, 11, 10.2))
    assert Window().close() == {"held_ms": 8.0, "away_ms": 49.8}
    # 8 ms waited while its own other threads ran 6 ms: 2 held. Which of its waits their 6 ms overlapped is not
    # read, so it comes off both (lower bounds): 60 - 0.2 run - 8 waited - 6 theirs away
    _readings(monkeypatch, (0, 10, 3, 10), (60, 10.2, 11, 16.2))
    assert Window().close() == {"held_ms": 2.0, "away_ms": 45.8}
    # no schedstat at open: not measured
    _readings(monkeypatch, None, (1, 1, 1, 1))
    assert Window().close() is None


def test_a_sleep_is_away_and_nothing_held():
    """The kernel's reads: a 0.3 s sleep is away. Waking, the thread may wait for a CPU (a few ms on a loaded
    host; held, rightly): bounded by a share of the sleep, which counted as held would pass."""
    w = Window()
    time.sleep(0.3)
    got = w.close()
    assert got["away_ms"] >= 290 and got["held_ms"] < 0.25 * got["away_ms"], got


def test_its_own_threads_on_its_cpu_are_not_counted(one_cpu):
    """Its own other thread spinning 100 ms on its CPU, run while it waited to run and while it waited in join(),
    is neither held nor away. Against a control window of the same spin alone: what other processes do on that
    CPU is held in both."""
    s0 = steal_ns((one_cpu,))
    w = Window()
    _spin(0.05)
    control = w.close()
    if control["held_ms"] > 10:
        pytest.skip(f"other processes held the thread {control['held_ms']} ms of a 50 ms spin with no thread of "
                    f"its own beside it: its own threads' share cannot be told from theirs on CPU {one_cpu}")
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
    assert got["held_ms"] < control["held_ms"] + 10 + stolen, (got, control, stolen)
    assert got["away_ms"] < control["away_ms"] + 10 + stolen, (got, control, stolen)


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
