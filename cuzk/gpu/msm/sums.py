"""batch_addition on the GPU: Σ P_i over selected bases (the variables whose scalar is 1).

No digits and no sort: one bucket whose entries are the selected rows themselves, summed by the
MSM's kernels: affine pair rounds where the MSM uses them (G1, options.DEFAULT_BUCKET_SUM), then
msm_plan.one_bucket_sum, in segments of plan.segment_size() points and merges of 4 partials, planned on the
host (the bucket's size is known there, so nothing waits for the GPU). Bases at infinity are dropped
first (the mixed-add kernels expect finite affine points).

Several sections at once (sum_xyzz_many, optimization M2): one bucket per section, each section's first
segment sums on its own bases, then the merges of all of them together (msm_plan.few_bucket_sums).
"""
from __future__ import annotations

import cupy
import numpy as np

from . import pippenger as gmsm
from . import fold, plan
from .fold import xyzz_words
from .options import DEFAULT_BUCKET_SUM, DEFAULT_PAIR_MERGES


def sum_xyzz(group: int, bases, inf, idx=None, bucket_sum: str | None = None, pair_merges: bool | None = None,
             kernels=None):
    """Σ bases[idx] (all rows when idx is None) as one XYZZ point on the device; bucket_sum as
    pippenger.msm_xyzz's ("affine" for G1 only; None: options.DEFAULT_BUCKET_SUM), pair_merges too (R2;
    None: options.DEFAULT_PAIR_MERGES), kernels too (pippenger._Kernels). Two reads of the device (the index
    check and the count of finite rows); the sums themselves queue without waiting."""
    n = len(inf)
    if idx is None:
        idx = cupy.arange(n, dtype=cupy.int64)
    idx = cupy.asarray(idx).astype(cupy.int64, copy=False).ravel()
    if idx.size and bool(((idx < 0) | (idx >= n)).any()):
        raise IndexError(f"batch addition index out of range for {n} bases")
    idx = idx[~inf[idx].astype(cupy.bool_)]
    if idx.size == 0:
        return cupy.zeros(xyzz_words(group), dtype=cupy.uint32)
    if n >= 1 << 31:
        raise ValueError("batch addition needs fewer than 2^31 bases (31-bit key index)")
    k = gmsm._Kernels(group, bases, inf, None, kernels=kernels)
    keys = idx.astype(cupy.uint64) << cupy.uint64(1)          # bucket 0, not negated
    src, keyed, count = keys, True, int(idx.size)
    bucket_sum = DEFAULT_BUCKET_SUM[group] if bucket_sum is None else bucket_sum
    if bucket_sum == "affine" and group == 1:                 # halve by affine pair adds first
        k.reset_degenerate()
        offsets = cupy.asarray([0, count], dtype=cupy.int64)
        pts, _, rounds, left = plan.affine_rounds(k, keys, offsets, plan.AFFINE_MIN_PAIRS, cupy)
        if rounds and not k.degenerate():
            src, keyed, count = pts, False, left
    pairs = DEFAULT_PAIR_MERGES if pair_merges is None else bool(pair_merges)
    partials = plan.one_bucket_sum(k, src, keyed, count, plan.segment_size(count), cupy, pairs=pairs)
    return partials[0]


def batch_add(group: int, bases, inf, idx=None, bucket_sum: str | None = None, pair_merges: bool | None = None,
              kernels=None):
    """Σ bases[idx] as a py_arkworks_bls12381 point."""
    return fold.to_ark(group, cupy.asnumpy(sum_xyzz(group, bases, inf, idx, bucket_sum, pair_merges, kernels)))


def _finite_rows(idx, keep, count: int):
    """idx[keep] in order, `count` of them (known on the host): a scatter, no read of the device."""
    pos = cupy.cumsum(keep, dtype=cupy.int64) - 1
    out = cupy.empty(count + 1, dtype=cupy.int64)
    out[cupy.where(keep, pos, count)] = idx           # rows left out all land in the spare slot
    return out[:count]


def sum_xyzz_many(group: int, parts, bucket_sum: str | None = None, pair_merges: bool | None = None,
                  kernels=None):
    """[sum_xyzz(group, bases, inf, idx, bucket_sum) for each part] as XYZZ points uint32[len(parts), words]
    on the device (optimization M2): one read of the device for every part (the index checks and the
    counts of finite rows together), then each part's first segment sums on its own bases and the merges
    of all the parts at once (msm_plan.few_bucket_sums). A part large enough for affine rounds (G1, a first
    round of msm_plan.AFFINE_MIN_PAIRS pairs) is summed alone by sum_xyzz."""
    bucket_sum = DEFAULT_BUCKET_SUM[group] if bucket_sum is None else bucket_sum
    idxs, flags = [], []
    for bases, inf, idx in parts:
        n = len(inf)
        if idx is None:
            idx = cupy.arange(n, dtype=cupy.int64)
        idx = cupy.asarray(idx).astype(cupy.int64, copy=False).ravel()
        if n == 0 and idx.size:
            raise IndexError("batch addition index out of range for 0 bases")
        if n >= 1 << 31:
            raise ValueError("batch addition needs fewer than 2^31 bases (31-bit key index)")
        # out-of-range indices wrap in CuPy (checked below); no bases: nothing to look up
        keep = ~inf[idx].astype(cupy.bool_) if n else cupy.zeros(0, dtype=cupy.bool_)
        idxs.append((idx, keep))
        flags += [((idx < 0) | (idx >= n)).any().astype(cupy.int64), keep.sum(dtype=cupy.int64)]
    host = cupy.asnumpy(cupy.stack(flags)).reshape(-1, 2) if flags else np.zeros((0, 2), dtype=np.int64)
    if host[:, 0].any():
        raise IndexError("batch addition index out of range")
    counts = [int(m) for m in host[:, 1]]
    alone = [bucket_sum == "affine" and group == 1 and m // 2 >= max(1, plan.AFFINE_MIN_PAIRS) for m in counts]
    out = cupy.zeros((len(parts), xyzz_words(group)), dtype=cupy.uint32)
    few, first = [], []
    for p, ((bases, inf, _), (idx, keep), m) in enumerate(zip(parts, idxs, counts)):
        if alone[p]:
            out[p] = sum_xyzz(group, bases, inf, idx, bucket_sum, pair_merges, kernels)
        else:
            keys = _finite_rows(idx, keep, m).astype(cupy.uint64) << cupy.uint64(1)   # not negated
            few.append(p)
            first.append((gmsm._Kernels(group, bases, inf, None, kernels=kernels), keys, True, m))
    if few:
        pairs = DEFAULT_PAIR_MERGES if pair_merges is None else bool(pair_merges)
        size = plan.segment_size(sum(counts[p] for p in few))
        out[cupy.asarray(few)] = plan.few_bucket_sums(first, size, cupy, pairs=pairs)
    return out


def batch_add_many(group: int, parts, bucket_sum: str | None = None, pair_merges: bool | None = None,
                   kernels=None) -> list:
    """[batch_add(group, bases, inf, idx) for each (bases, inf, idx) of parts], summed together
    (sum_xyzz_many) and downloaded once."""
    host = cupy.asnumpy(sum_xyzz_many(group, parts, bucket_sum, pair_merges, kernels))
    return [fold.to_ark(group, row) for row in host]
