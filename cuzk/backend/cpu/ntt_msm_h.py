"""ntt_msm_h on the CPU reference: the H scalars by the key's QAP convention (cuzk/qap.py), then their MSM
over the H bases."""
from __future__ import annotations

from py_arkworks_bls12381 import G1Point

from ...timing import circuit
from .msm import msm


def run(be, kh, assignments) -> list:
    out = []
    for i, asg in enumerate(assignments):
        with circuit(i):
            h = kh.pk.qap.h_scalars(asg.a, asg.b, asg.c, kh.domain)
            out.append(msm(kh.pts["h"], h, G1Point))
    return out
