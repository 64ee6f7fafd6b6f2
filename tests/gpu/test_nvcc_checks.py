"""Ctrl-C during the nvcc compile checks (tests/nvcc_checks.py) stops them at once: no queued job starts,
and the running nvcc processes are killed. A fake nvcc on PATH (a shell script that records its pid and
sleeps) stands in for the compiler, so this runs without CUDA."""
from __future__ import annotations

import os
import signal
import threading
import time

import pytest

SLEEP_S = 8


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.serial          # how soon it stops, timed
def test_ctrl_c_cancels_queued_compiles_and_kills_running_nvcc(tmp_path, monkeypatch):
    import nvcc_checks
    from nvcc_checks import Job, compile_all
    started = tmp_path / "started"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "nvcc").write_text(f'#!/bin/sh\necho $$ >> "{started}"\nexec sleep {SLEEP_S}\n')
    (bin_dir / "nvcc").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("CUZK_NVCC_CHECK_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(nvcc_checks, "nvcc_version", lambda: "fake nvcc")
    jobs = []
    for i in range(6):
        (tmp_path / f"k{i}.cu").write_text(f"int k{i};\n")
        jobs.append(Job(f"k{i}.cu", tmp_path / f"k{i}.cu"))

    def interrupt():                     # Ctrl-C once both workers run their nvcc
        deadline = time.monotonic() + SLEEP_S
        while time.monotonic() < deadline:
            if started.exists() and len(started.read_text().split()) >= 2:
                break
            time.sleep(0.02)
        os.kill(os.getpid(), signal.SIGINT)       # as the terminal sends it
    threading.Thread(target=interrupt, daemon=True).start()
    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        compile_all(jobs, tmp_path, tmp_path, workers=2, say=lambda line: None)
    stopped_in = time.monotonic() - t0
    pids = [int(p) for p in started.read_text().split()]
    assert len(pids) == 2, pids                                  # the four queued never started
    assert stopped_in < SLEEP_S / 2, stopped_in                  # not after the running ones ended
    assert not any(_alive(p) for p in pids), pids                # killed (and reaped), not left running
    time.sleep(0.3)
    assert len(started.read_text().split()) == 2                 # nothing started after the stop
