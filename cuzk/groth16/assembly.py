"""proof_assembly: A = α + ΣzA + rδ, B = β + ΣzB + sδ, C = Σaux·L + H + sA + rB₁ − rsδ."""
from __future__ import annotations

from py_arkworks_bls12381 import G1Point, Scalar


def assemble(vk_pts: dict, parts: dict, r: int, s: int):
    """vk_pts: alpha_g1, beta_g1, beta_g2, delta_g1, delta_g2; parts: a, b_g1, b_g2, l, h sums.
    C = L + H + sA + r(β + ΣzB₁): with B₁ = β + ΣzB₁ + sδ, sA + rB₁ − rsδ is exactly that, so B₁ itself
    is never formed (one two-point multiexp instead of three scalar multiplications)."""
    rs, ss = Scalar(r), Scalar(s)
    a = vk_pts["alpha_g1"] + parts["a"] + vk_pts["delta_g1"] * rs
    b2 = vk_pts["beta_g2"] + parts["b_g2"] + vk_pts["delta_g2"] * ss
    c = parts["l"] + parts["h"] + G1Point.multiexp_unchecked([a, vk_pts["beta_g1"] + parts["b_g1"]], [ss, rs])
    return a, b2, c
