"""The CUDA backend: every proving phase on the GPU, with the proving key resident there; one module per phase.

synthesis     host witness generation, then a/b/c by SpMV on the GPU ('mixed')
prep_msm      0/1/other split of the witness on the GPU, merged over the batch
ntt_msm_h     H scalars by NTTs, then their G1 MSM
batch_addition  the 1-scalar bases summed through the MSM's bucket-sum kernels (M2: a circuit's G1 sums together)
tail_msm      G1 MSMs over the batch's shared tail bases (gathered once; M2: a circuit's three as one multi-MSM)
b_g2          G2 MSM over the tail (A4 moves it to the CPU, a thread pool across circuits)
proof_assembly  on the host, as the CPU reference does it (a handful of point operations with random r, s)
PhaseRecord.impl says where each phase ran.
"""
from __future__ import annotations

import cupy

from ... import plans
from ..base import Backend
from ..cpu import proof_assembly
from . import b_g2, batch_addition, ntt_msm_h, prep_msm, synthesis, tail_msm
from .device import Concurrent, CudaKey, CudaTimerDevice


class CudaBackend(Backend):
    name = "cuda"
    IMPL = {"synthesis": "mixed", "proof_assembly": "cpu"}
    _concurrent: Concurrent | None = None
    witness_limbs = True      # assign takes z_limbs: the host conversion made ahead (bench --pipeline workers)

    def __init__(self, opts, table_gib: float | None = None):
        """table_gib: P2's budget for the tables in GiB (the caller's $CUZK_TABLE_GIB); None: half the free
        device memory (gpu/msm/tables.budget_bytes)."""
        super().__init__(opts)
        self.plan = plans.cuda(opts)             # what every phase reads: the toggles as choices
        self.table_gib = table_gib

    def jobs(self, jobs: list) -> list:
        """Run a phase's independent jobs one after another, or concurrently on streams (concurrent_jobs)."""
        if not self.plan.concurrent_jobs or len(jobs) < 2:
            return [fn() for fn in jobs]
        if self._concurrent is None:
            self._concurrent = Concurrent()
        return self._concurrent.run(jobs)

    def phase_impl(self, phase: str) -> str:
        if phase == "b_g2" and self.plan.b_g2_on_host:
            return "cpu"
        return self.IMPL.get(phase, "cuda")

    def timer_device(self):
        return CudaTimerDevice()

    def synchronize(self) -> None:
        cupy.cuda.Device().synchronize()

    def assign(self, r1cs, inputs, aux, domain, z_limbs=None, z_packed=None):
        return synthesis.assign(self, r1cs, inputs, aux, domain, z_limbs, z_packed)

    def assign_zkey(self, zk, values):
        return synthesis.assign_zkey(zk, values)

    def load_key(self, pk) -> CudaKey:
        kh = CudaKey(pk)
        if self.plan.h.tables:                  # the tables are made once, with the key
            ntt_msm_h.tables(self, kh)
        return kh

    def prep_msm(self, kh: CudaKey, assignments):
        return prep_msm.run(self, kh, assignments)

    def ntt_msm_h(self, kh: CudaKey, assignments) -> list:
        return ntt_msm_h.run(self, kh, assignments)

    def batch_addition(self, kh: CudaKey, prep) -> list:
        return batch_addition.run(self, kh, prep)

    def tail_msm(self, kh: CudaKey, prep, assignments) -> list:
        return tail_msm.run(self, kh, prep, assignments)

    def b_g2(self, kh: CudaKey, prep, assignments) -> list:
        return b_g2.run(self, kh, prep, assignments)

    def proof_assembly(self, kh: CudaKey, parts: list, randomness: list) -> list:
        return proof_assembly.run(self, kh, parts, randomness)
