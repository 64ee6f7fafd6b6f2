"""The CPU reference backend: Python-int Fr arithmetic, arkworks for curve MSMs."""
from __future__ import annotations

from py_arkworks_bls12381 import G1Point, G2Point

from ..groth16 import Proof
from ..phases.batch_addition import gather, point_sum
from ..phases.b_g2 import b_g2_msm
from ..phases.ntt_msm_h import h_scalars
from ..phases.prep_msm import prep_msm
from ..phases.proof_assembly import assemble
from ..phases.tail_msm import msm
from ..poly import Domain
from ..timing import circuit
from .base import Backend


class CpuKey:
    def __init__(self, pk):
        self.pk = pk
        self.domain = Domain(pk.log_n, pk.generator)
        self.pts = {name: pk.ark(name) for name in pk.points}
        self.vk = {k: self.pts[k][0] for k in ("alpha_g1", "beta_g1", "beta_g2", "delta_g1", "delta_g2")}


class CpuBackend(Backend):
    name = "cpu"

    def load_key(self, pk) -> CpuKey:
        return CpuKey(pk)

    def prep_msm(self, kh: CpuKey, assignments):
        return prep_msm([a.z for a in assignments], kh.pk.num_inputs)

    def ntt_msm_h(self, kh: CpuKey, assignments) -> list:
        out = []
        for i, asg in enumerate(assignments):
            with circuit(i):
                h = h_scalars(asg.a, asg.b, asg.c, kh.domain, kh.pk.convention)
                out.append(msm(kh.pts["h"], h, G1Point))
        return out

    def batch_addition(self, kh: CpuKey, prep) -> list:
        out = []
        g1, g2 = G1Point.identity(), G2Point.identity()
        for i, ones in enumerate(prep.ones):
            with circuit(i):
                out.append({
                    "a": point_sum(gather(kh.pts["a"], ones), g1),
                    "b_g1": point_sum(gather(kh.pts["b_g1"], ones), g1),
                    "b_g2": point_sum(gather(kh.pts["b_g2"], ones), g2),
                    "l": point_sum(gather(kh.pts["l"], prep.aux_part(ones)), g1),
                })
        return out

    def tail_msm(self, kh: CpuKey, prep, assignments) -> list:
        t, tl = prep.tail, prep.aux_part(prep.tail)
        bases = {q: gather(kh.pts[q], t) for q in ("a", "b_g1")}
        bases["l"] = gather(kh.pts["l"], tl)
        out = []
        for i, asg in enumerate(assignments):
            with circuit(i):
                z = asg.z
                out.append({"a": msm(bases["a"], z[t], G1Point), "b_g1": msm(bases["b_g1"], z[t], G1Point),
                            "l": msm(bases["l"], asg.aux[tl], G1Point)})
        return out

    def b_g2(self, kh: CpuKey, prep, assignments) -> list:
        bases = gather(kh.pts["b_g2"], prep.tail)
        out = []
        for i, asg in enumerate(assignments):
            with circuit(i):
                out.append(b_g2_msm(bases, asg.z[prep.tail]))
        return out

    def proof_assembly(self, kh: CpuKey, parts: list, randomness: list) -> list:
        out = []
        for i, (p, (r, s)) in enumerate(zip(parts, randomness)):
            with circuit(i):
                out.append(Proof(*assemble(kh.vk, p, r, s)))
        return out
