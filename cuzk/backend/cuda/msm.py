"""The MSM options the registry sets, shared by every GPU phase that runs an MSM or a bucket sum."""
from __future__ import annotations

import cupy
import numpy as np
from py_arkworks_bls12381 import G1Point, G2Point

from ...gpu import fr as gfr
from ...gpu import msm as gmsm


def _popcount(scalars, sample: int = 256) -> float:
    """Mean set bits of the (canonical) scalars, from a small random sample."""
    n = scalars.shape[0]
    idx = np.random.default_rng(n).integers(0, n, size=min(n, sample))
    vals = gfr.download(scalars[cupy.asarray(idx)])
    return float(np.mean([int(v).bit_count() for v in vals]))


def bucket_sum(opts, group: int) -> str:
    """M1 on: the G1 MSMs sum buckets by affine rounds (gmsm.DEFAULT_BUCKET_SUM); off: XYZZ."""
    return gmsm.DEFAULT_BUCKET_SUM[group] if opts.enabled("M1") else "xyzz"


def kernel_opts(opts) -> frozenset:
    """The MSM kernels' toggles (msm.KERNEL_OPTS) that opts turns on."""
    return frozenset(o for o in gmsm.KERNEL_OPTS if opts.enabled(o))


def msm_kw(opts, group: int) -> dict:
    """The MSM options the registry sets: bucket sums (M1, G1), the window reduction's levels (R1), the
    bucket sums' merges (R2) and the kernels' code (S1, L1)."""
    kw = {"pair_levels": opts.enabled("R1"), "pair_merges": opts.enabled("R2"), "kernel_opts": kernel_opts(opts)}
    if group == 1:
        kw["bucket_sum"] = bucket_sum(opts, 1)
    return kw


def window(kh, scalars, opts, group: int = 1, parts: int = 1) -> int:
    """D4 off: one window size for every MSM (the one for the largest, H); on: chosen per MSM
    from its size, its scalars' popcount and the group's bucket sums (affine or XYZZ); parts > 1:
    for a multi-MSM (M2) of that many MSMs over these scalars."""
    from ...gpu.msm_plan import choose_window
    if not opts.enabled("D4"):
        return choose_window(len(kh.dev["h"]), affine=bucket_sum(opts, 1) == "affine")
    return choose_window(scalars.shape[0], _popcount(scalars), affine=bucket_sum(opts, group) == "affine",
                         parts=parts)


def msm(group: int, bases, inf, scalars, kh, opts):
    """An MSM that may be empty (a sparse section can keep none of the tail)."""
    if inf.size == 0:
        return (G2Point if group == 2 else G1Point).identity()
    if group == 2:
        return gmsm.msm_g2(bases, inf, scalars, window(kh, scalars, opts, 2), **msm_kw(opts, 2))
    return gmsm.msm_g1(bases, inf, scalars, window(kh, scalars, opts, 1), **msm_kw(opts, 1))
