"""A key's fixed multiples of the generators, by arkworks: the bulk sections' points on the CPU
(mul_points) and the six single points (alpha, beta, gamma, delta in G1/G2) on both backends."""
from __future__ import annotations

import numpy as np
from py_arkworks_bls12381 import G1Point, G2Point, Scalar

from .curve import AffineBases
from .field import fr_array


def mul_points(gen, scalars: np.ndarray, bar) -> list:
    ident = type(gen).identity()
    out = []
    for s in scalars.tolist():
        out.append(gen * Scalar(int(s)) if s else ident)
        if bar is not None:
            bar.update(1)
    return out


def single_points(alpha: int, beta: int, gamma: int, delta: int) -> dict:
    """The key's six single points, by arkworks (both backends)."""
    g1, g2 = G1Point(), G2Point()
    def G1(x): return AffineBases.from_ark(1, mul_points(g1, fr_array([x]), None))
    def G2(x): return AffineBases.from_ark(2, mul_points(g2, fr_array([x]), None))
    return {"alpha_g1": G1(alpha), "beta_g1": G1(beta), "beta_g2": G2(beta), "gamma_g2": G2(gamma),
            "delta_g1": G1(delta), "delta_g2": G2(delta)}
