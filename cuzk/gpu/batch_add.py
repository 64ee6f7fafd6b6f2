"""batch_addition on the GPU: Σ P_i over selected bases (the variables whose scalar is 1).

No digits and no sort: one bucket whose entries are the selected rows themselves, summed by the
MSM's kernels: affine pair rounds where the MSM uses them (G1, msm.DEFAULT_BUCKET_SUM), then
msm_plan.one_bucket_sum, in segments of segment_size() points and merges of 4 partials, planned on the
host (the bucket's size is known there, so nothing waits for the GPU). Bases at infinity are dropped
first (the mixed-add kernels expect finite affine points).
"""
from __future__ import annotations

from . import msm as gmsm
from . import msm_plan as plan

SEGMENT = 128            # points per thread in the first pass: 2^26 points -> 2^19 threads
SEGMENT_MIN = 8          # ... down to this many for small sums, so they still get 2^17 threads: a thread's
                         # chain of dependent adds (S, then MERGE_ONE per merge level) is the time of a small sum
THREADS_MIN = 1 << 17


def segment_size(count: int) -> int:
    """Points per thread of the first pass over `count` points: SEGMENT from 2^24 points, fewer below
    (at least SEGMENT_MIN), so that the pass has THREADS_MIN threads while it can."""
    return max(SEGMENT_MIN, min(SEGMENT, count // THREADS_MIN))


def sum_xyzz(group: int, bases, inf, idx=None, bucket_sum: str | None = None):
    """Σ bases[idx] (all rows when idx is None) as one XYZZ point on the device; bucket_sum as
    msm.msm_xyzz's ("affine" for G1 only; None: msm.DEFAULT_BUCKET_SUM). Two reads of the device
    (the index check and the count of finite rows); the sums themselves queue without waiting."""
    import cupy
    n = len(inf)
    if idx is None:
        idx = cupy.arange(n, dtype=cupy.int64)
    idx = cupy.asarray(idx).astype(cupy.int64, copy=False).ravel()
    if idx.size and bool(((idx < 0) | (idx >= n)).any()):
        raise IndexError(f"batch addition index out of range for {n} bases")
    idx = idx[~inf[idx].astype(cupy.bool_)]
    if idx.size == 0:
        return cupy.zeros(gmsm.xyzz_words(group), dtype=cupy.uint32)
    if n >= 1 << 31:
        raise ValueError("batch addition needs fewer than 2^31 bases (31-bit key index)")
    k = gmsm._Kernels(group, bases, inf, None)
    keys = idx.astype(cupy.uint64) << cupy.uint64(1)          # bucket 0, not negated
    src, keyed, count = keys, True, int(idx.size)
    bucket_sum = gmsm.DEFAULT_BUCKET_SUM[group] if bucket_sum is None else bucket_sum
    if bucket_sum == "affine" and group == 1:                 # halve by affine pair adds first
        k.reset_degenerate()
        offsets = cupy.asarray([0, count], dtype=cupy.int64)
        pts, off, rounds = plan.affine_rounds(k, keys, offsets, plan.AFFINE_MIN_PAIRS, cupy,
                                             gmsm.resolve_affine_variant())
        if rounds and not k.degenerate():
            src, keyed, count = pts, False, int(off[-1])
    partials = plan.one_bucket_sum(k, src, keyed, count, segment_size(count), cupy)
    return partials[0]


def batch_add(group: int, bases, inf, idx=None, bucket_sum: str | None = None):
    """Σ bases[idx] as a py_arkworks_bls12381 point."""
    import cupy
    return gmsm.to_ark(group, cupy.asnumpy(sum_xyzz(group, bases, inf, idx, bucket_sum)))
