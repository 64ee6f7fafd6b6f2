"""The CUDA backend. Part 1: a/b/c evaluation and the H polynomial's NTTs run on the GPU;
phases not yet on the GPU fall back to the CPU reference, and PhaseRecord.impl says so
('cuda', 'mixed' for GPU work with a CPU step inside, or 'cpu')."""
from __future__ import annotations

import cupy
import numpy as np
from py_arkworks_bls12381 import G1Point

from ..field import FR_LIMBS
from ..gpu import fr as gfr
from ..gpu import h as gh
from ..gpu import spmv
from ..phases.synthesis import Assignment
from ..phases.tail_msm import msm
from .cpu import CpuBackend, CpuKey


class CudaTimerDevice:
    """PhaseTimer hook: CUDA events on the current stream, read once at the end."""

    def record_event(self):
        ev = cupy.cuda.Event()
        ev.record()
        return ev

    def elapsed_s(self, a, b) -> float:
        b.synchronize()
        return cupy.cuda.get_elapsed_time(a, b) / 1e3

    def peak_bytes(self) -> int:
        return int(cupy.get_default_memory_pool().total_bytes())


class CudaBackend(CpuBackend):
    name = "cuda"
    IMPL = {"synthesis": "mixed", "ntt_msm_h": "mixed"}   # host witness + GPU SpMV; GPU NTTs + CPU MSM

    def phase_impl(self, phase: str) -> str:
        return self.IMPL.get(phase, "cpu")

    def timer_device(self):
        return CudaTimerDevice()

    def assign(self, r1cs, inputs, aux, domain):
        if len(inputs) != r1cs.num_inputs or len(aux) != r1cs.num_aux:
            raise ValueError(f"witness sizes ({len(inputs)} inputs, {len(aux)} aux) do not match the "
                             f"circuit ({r1cs.num_inputs}, {r1cs.num_aux})")
        z = gfr.upload(np.concatenate([inputs, aux]), pinned=self.opts.enabled("B1"))
        abc = spmv.evaluate(spmv.DeviceR1CS.of(r1cs), z, domain.n)
        return Assignment(inputs, aux, None, None, None, abc_dev=abc)

    def _abc(self, asg: Assignment, n: int):
        if asg.abc_dev is not None:
            return asg.abc_dev.copy()            # the H pipeline works in place
        return gfr.upload(np.concatenate([asg.a, asg.b, asg.c])).reshape(3, n, FR_LIMBS)

    def ntt_msm_h(self, kh: CpuKey, assignments) -> list:
        out = []
        for asg in assignments:
            h = gh.h_scalars(self._abc(asg, kh.domain.n), kh.domain, kh.pk.convention)
            out.append(msm(kh.pts["h"], gfr.download(h), G1Point))
        return out
