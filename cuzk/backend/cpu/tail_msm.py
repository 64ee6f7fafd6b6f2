"""tail_msm on the CPU reference: the A, B_G1 and L MSMs over the batch's shared tail bases (gathered once)
with each circuit's scalars there."""
from __future__ import annotations

from py_arkworks_bls12381 import G1Point

from ...timing import circuit
from .msm import gather, msm


def run(be, kh, prep, assignments) -> list:
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
