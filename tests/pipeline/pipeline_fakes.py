"""What the pipeline tests share: a CPU backend that stands in for a GPU one, the jobs they prove, and a wait for
a cuzk process's pool workers before it is signalled."""
from __future__ import annotations

import os
import signal
import time

import numpy as np

from cuzk.backend.cpu import CpuBackend
from cuzk.field import FR_LIMBS, fr_array, ints_to_limbs
from cuzk.pipeline import Job

LOG = 8


class FakeDevice:
    """Timer device whose 'events' are host timestamps (elapsed = difference)."""

    def record_event(self):
        return time.perf_counter()

    def elapsed_s(self, a, b):
        return b - a

    def peak_bytes(self):
        return 0


class FakeGpuBackend(CpuBackend):
    """The CPU backend with every proving phase 'on a device' timed by FakeDevice, and a/b/c
    assigned on the prover thread (as the cuda backend does)."""
    name = "fakegpu"
    witness_limbs = True

    def assign(self, r1cs, inputs, aux, domain, z_limbs=None):
        z = np.concatenate([inputs, aux])
        assert z_limbs is not None and (z_limbs == ints_to_limbs(fr_array(z), FR_LIMBS)).all()
        self.limbs_seen = getattr(self, "limbs_seen", 0) + 1
        return super().assign(r1cs, inputs, aux, domain)

    def phase_impl(self, phase):
        return {"synthesis": "mixed", "proof_assembly": "cpu"}.get(phase, "fake")

    def timer_device(self):
        return FakeDevice()


def make_job(opts, n, host_assign=True):
    return Job("porep_like", LOG, opts, tuple(range(1, n + 1)), host_assign, witness_limbs=not host_assign)


def _children(pid: int) -> list[int]:
    kids = []
    for d in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{d}/stat") as f:
                if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:      # ppid, after the (command name)
                    kids.append(int(d))
        except (OSError, IndexError, ValueError):      # gone meanwhile
            pass
    return kids


def _started_pool_worker(pid: int) -> bool:
    """A multiprocessing worker that has run cuzk.synthesis._worker_init: Ctrl-C ignored (SigIgn)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            if b"--multiprocessing-fork" not in f.read().split(b"\0"):
                return False
        with open(f"/proc/{pid}/status") as f:
            ign = next(int(line.split()[1], 16) for line in f if line.startswith("SigIgn:"))
    except (OSError, StopIteration):
        return False
    return bool(ign & (1 << (signal.SIGINT - 1)))


def pool_started(p, workers: int, within_s: float = 120.0) -> list[int]:
    """The child processes of Popen `p` (its pool's workers and resource tracker) once `workers` pool workers
    have run their initializer: a signal sent before that finds a worker with Python's own handlers (Ctrl-C
    would print its traceback). `within_s` only bounds the wait on a loaded host; no timing is asserted."""
    deadline = time.monotonic() + within_s
    while True:
        kids = _children(p.pid)
        started = sum(map(_started_pool_worker, kids))
        if started >= workers:
            return kids
        if p.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"{started} of {workers} pool workers started (exit status {p.poll()})")
        time.sleep(0.05)
