"""The proving key as the CPU reference holds it: every section as arkworks points."""
from __future__ import annotations

from ...poly import Domain


class CpuKey:
    def __init__(self, pk):
        self.pk = pk
        self.domain = Domain(pk.log_n, pk.generator)
        self.pts = {name: pk.ark(name) for name in pk.points}
        self.vk = {k: self.pts[k][0] for k in ("alpha_g1", "beta_g1", "beta_g2", "delta_g1", "delta_g2")}
