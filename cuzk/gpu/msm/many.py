"""Several G1 MSMs as one (optimization M2): one digit kernel, one sort, one bucket plan, one run of the
bucket sums and one window reduction for all of them, then one download and a host fold per MSM.

A small MSM's time is mostly fixed latency (launches, host round trips, dependent chains), so P MSMs
run one after another pay it P times; run as one they pay it once.

Layout: with P MSMs and window c, every window has P blocks of 2^(c-1) buckets, block p for MSM p:
msm_digits_many keys window w of MSM p's points into buckets ((w - w0) P + p) 2^(c-1) + |d| - 1. To
msm_plan.pippenger(parts=P) that is one MSM of nw * P windows; its window sums come back window-major,
row w P + p = window w of MSM p, and fold_windows folds each MSM's nw rows on the host. The bases,
inf flags and scalars of the MSMs lie one after another in one array each (concat_parts); a key holds
the point's index in them. Empty MSMs take no buckets: their result is the identity.
"""
from __future__ import annotations

import cupy
import numpy as np

from ..loader import kernel
from . import pippenger as gmsm
from . import plan
from .options import DEFAULT_PAIR_LEVELS, DEFAULT_PAIR_MERGES, sum_options
from .parts import fold_parts, live_parts


class _ManyKernels(gmsm._Kernels):
    """msm._Kernels whose digits key each point into its own MSM's buckets (msm_digits_many); the
    window sums are always returned unfolded (combine)."""

    def __init__(self, bases, inf, scalars, part_off, kernels=None):
        super().__init__(1, bases, inf, scalars, host_fold=True, kernels=kernels)
        self.part_off = part_off              # device int64[P + 1]: MSM p is [part_off[p], part_off[p + 1])
        self.parts = len(part_off) - 1

    def digits(self, c, w0, w1):
        keys = self.cp.empty((w1 - w0) * self.n, dtype=self.cp.uint64)
        kernel(self.mod, "msm_digits_many", self.build)(gmsm._grid(self.n), (gmsm.THREADS,),
                                            (keys, self.scalars, self.inf8, self.part_off, np.int32(self.parts),
                                             np.int64(self.n), np.int32(c), np.int32(w0), np.int32(w1)))
        return keys


def concat_parts(parts):
    """[(bases, inf, scalars)] -> (bases, inf, scalars, sizes): the MSMs' inputs one after another."""
    if not parts:
        raise ValueError("msm_g1_many needs at least one MSM")
    sizes = [gmsm._check(1, *p) for p in parts]
    cat = [cupy.concatenate([p[j] for p in parts]) if len(parts) > 1 else parts[0][j] for j in range(3)]
    return (*cat, sizes)


def window_sums(bases, inf, scalars, sizes: list[int], c: int | None = None, max_entries: int | None = None,
                bucket_sum: str | None = None, affine_min_pairs: int | None = None, mark=None,
                pair_levels: bool | None = None, pair_merges: bool | None = None, kernels=None):
    """The window sums of the MSMs whose inputs lie one after another (concat_parts; sizes[p] points
    for MSM p): (uint32[nw, P, words] on the device, c, live), live = the indices of the non-empty
    MSMs, in order, P = len(live) (None for the sums when there are none). Arguments as msm.msm_xyzz's;
    c None: msm_plan.choose_window over all the points, with P blocks of buckets."""
    n = gmsm._check(1, bases, inf, scalars)
    live, off = live_parts(sizes)
    if int(off[-1]) != n:
        raise ValueError(f"part sizes {sizes} do not add up to the {n} points given")
    bucket_sum, min_pairs = sum_options(1, bucket_sum, affine_min_pairs)
    gmsm.last_stats.clear()
    if not live:
        return None, 1, live
    P = len(live)
    c = plan.choose_window(n, affine=bucket_sum == "affine", parts=P) if c is None else int(c)
    if P > plan.max_parts(c):
        raise ValueError(f"{P} MSMs of window {c} need more bucket ids than a key holds (at most {plan.max_parts(c)})")
    k = _ManyKernels(bases, inf, scalars, cupy.asarray(off), kernels)
    max_entries = gmsm.resolve_max_entries(max_entries, n, c, k)
    sums = plan.pippenger(k, n, c, max_entries, cupy, affine_min_pairs=min_pairs, mark=mark, parts=P,
                          pair_levels=DEFAULT_PAIR_LEVELS if pair_levels is None else bool(pair_levels),
                          pair_merges=DEFAULT_PAIR_MERGES if pair_merges is None else bool(pair_merges))
    gmsm.last_stats.update(k.stats, c=c, bucket_sum=bucket_sum, parts=P)
    return sums.reshape(plan.num_windows(c), P, -1), c, live


def msm_g1_concat(bases, inf, scalars, sizes: list[int], c: int | None = None, **kw) -> list:
    """Σ s_i P_i over each MSM's points as py_arkworks_bls12381 G1Points, one per MSM, for inputs
    one after another (concat_parts); kw: window_sums's (bucket_sum, ...)."""
    sums, c, live = window_sums(bases, inf, scalars, sizes, c, **kw)
    host = cupy.asnumpy(sums) if live else None          # one download for all
    return fold_parts(1, host, c, live, len(sizes))


def msm_g1_many(parts, c: int | None = None, **kw) -> list:
    """[msm_g1(bases, inf, scalars) for each part] as one multi-MSM: parts = [(bases, inf, scalars)],
    each as msm_g1's inputs (empty allowed); one window c for all (None: chosen for all of them)."""
    bases, inf, scalars, sizes = concat_parts(parts)
    return msm_g1_concat(bases, inf, scalars, sizes, c, **kw)
