"""The MSM as every GPU phase runs it under the backend's plan (plans.MsmPlan): its window, and an MSM that
may be empty."""
from __future__ import annotations

import cupy
import numpy as np
from py_arkworks_bls12381 import G1Point, G2Point

from ...gpu import fr as gfr
from ...gpu import msm as gmsm
from ...gpu.msm_plan import choose_window
from ...plans import MsmPlan


def _popcount(scalars, sample: int = 256) -> float:
    """Mean set bits of the (canonical) scalars, from a small random sample."""
    n = scalars.shape[0]
    idx = np.random.default_rng(n).integers(0, n, size=min(n, sample))
    vals = gfr.download(scalars[cupy.asarray(idx)])
    return float(np.mean([int(v).bit_count() for v in vals]))


def window(kh, scalars, plan: MsmPlan, group: int = 1, parts: int = 1) -> int:
    """One window size for every MSM (the one for the largest, H), or with window_per_msm one chosen per MSM
    from its size, its scalars' popcount and the group's bucket sums (affine or XYZZ); parts > 1: for a
    multi-MSM of that many MSMs over these scalars."""
    if not plan.window_per_msm:
        return choose_window(len(kh.dev["h"]), affine=plan.bucket_sum(1) == "affine")
    return choose_window(scalars.shape[0], _popcount(scalars), affine=plan.bucket_sum(group) == "affine",
                         parts=parts)


def msm(group: int, bases, inf, scalars, kh, plan: MsmPlan):
    """An MSM that may be empty (a sparse section can keep none of the tail)."""
    if inf.size == 0:
        return (G2Point if group == 2 else G1Point).identity()
    if group == 2:
        return gmsm.msm_g2(bases, inf, scalars, window(kh, scalars, plan, 2), **plan.kw(2))
    return gmsm.msm_g1(bases, inf, scalars, window(kh, scalars, plan, 1), **plan.kw(1))
