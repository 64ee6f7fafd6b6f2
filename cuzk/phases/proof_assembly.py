"""proof_assembly: A = α + ΣzA + rδ, B = β + ΣzB + sδ, C = Σaux·L + H + sA + rB₁ − rsδ."""
from __future__ import annotations

from py_arkworks_bls12381 import Scalar

from ..field import R


def assemble(vk_pts: dict, parts: dict, r: int, s: int):
    """vk_pts: alpha_g1, beta_g1, beta_g2, delta_g1, delta_g2; parts: a, b_g1, b_g2, l, h sums."""
    rs, ss = Scalar(r), Scalar(s)
    d1 = vk_pts["delta_g1"]
    a = vk_pts["alpha_g1"] + parts["a"] + d1 * rs
    b2 = vk_pts["beta_g2"] + parts["b_g2"] + vk_pts["delta_g2"] * ss
    b1 = vk_pts["beta_g1"] + parts["b_g1"] + d1 * ss
    c = parts["l"] + parts["h"] + a * ss + b1 * rs - d1 * Scalar(r * s % R)
    return a, b2, c
