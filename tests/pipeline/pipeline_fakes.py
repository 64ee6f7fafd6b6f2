"""What the pipeline tests share: a CPU backend that stands in for a GPU one, and the jobs they prove."""
from __future__ import annotations

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
