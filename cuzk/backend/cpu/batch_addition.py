"""batch_addition on the CPU reference: per circuit, the plain sum of the bases whose scalar is 1
(A, B_G1, B_G2, L)."""
from __future__ import annotations

from py_arkworks_bls12381 import G1Point, G2Point

from ...timing import circuit
from .msm import gather, point_sum


def run(be, kh, prep) -> list:
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
