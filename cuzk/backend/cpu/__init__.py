"""The CPU reference backend: Python-int Fr arithmetic, arkworks for curve MSMs; one module per phase."""
from __future__ import annotations

from ..base import Backend
from . import b_g2, batch_addition, ntt_msm_h, prep_msm, proof_assembly, tail_msm
from .key import CpuKey
from .synthesis import assign


class CpuBackend(Backend):
    name = "cpu"

    def assign(self, r1cs, inputs, aux, domain):
        return assign(r1cs, inputs, aux, domain)

    def load_key(self, pk) -> CpuKey:
        return CpuKey(pk)

    def prep_msm(self, kh: CpuKey, assignments):
        return prep_msm.run(self, kh, assignments)

    def ntt_msm_h(self, kh: CpuKey, assignments) -> list:
        return ntt_msm_h.run(self, kh, assignments)

    def batch_addition(self, kh: CpuKey, prep) -> list:
        return batch_addition.run(self, kh, prep)

    def tail_msm(self, kh: CpuKey, prep, assignments) -> list:
        return tail_msm.run(self, kh, prep, assignments)

    def b_g2(self, kh: CpuKey, prep, assignments) -> list:
        return b_g2.run(self, kh, prep, assignments)

    def proof_assembly(self, kh: CpuKey, parts: list, randomness: list) -> list:
        return proof_assembly.run(self, kh, parts, randomness)
