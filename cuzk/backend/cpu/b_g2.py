"""b_g2 on the CPU reference: the G2 MSM of B over the tail scalars (the 1-scalars are in batch_addition)."""
from __future__ import annotations

from py_arkworks_bls12381 import G2Point

from ...timing import circuit
from .msm import gather, msm


def run(be, kh, prep, assignments) -> list:
    bases = gather(kh.pts["b_g2"], prep.tail)
    out = []
    for i, asg in enumerate(assignments):
        with circuit(i):
            out.append(msm(bases, asg.z[prep.tail], G2Point))
    return out
