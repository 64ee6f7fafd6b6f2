"""Pippenger index math shared by the GPU driver (cuzk/gpu/msm.py) and its CPU model.

Every function takes an array module `xp` (numpy or cupy) where it touches arrays, so
tests/test_msm_model.py runs the very same code on the CPU.

Digits: a canonical scalar s < 2^255 is split into windows of c bits, recoded with a carry
into signed digits d_w in (-2^(c-1), 2^(c-1)]; s = sum_w d_w 2^(c w). Bucket |d| - 1 of a
window holds the points whose digit there is ±|d|, so there are B = 2^(c-1) buckets.
"""
from __future__ import annotations


SCALAR_BITS = 255        # r < 2^255
C_MAX = 16               # largest window choose_window picks: on the H200 c = 16 beat 20 at 2^24 and 2^26
                         # (257 vs 382 ms, 1086 vs 1225 ms: the window reduction grows with 2^c)
C_LIMIT = 24             # largest window accepted: a pass's bucket ids must fit the key's 32 bits
MERGE_S = 16             # entries per segment when merging a bucket's partial sums
ZERO_KEY = (1 << 64) - 1 # a zero digit or a base at infinity: sorts after every bucket


def num_windows(c: int) -> int:
    """Windows so that the top carry is absorbed: c * nw >= 256 > 255 bits."""
    if not 1 <= c <= C_LIMIT:
        raise ValueError(f"window size must be in [1, {C_LIMIT}], got {c}")
    return -(-(SCALAR_BITS + 1) // c)


def choose_window(n: int, popcount: float | None = None) -> int:
    """c minimising nw * (adds of points into buckets + ~2 adds per bucket to reduce).

    popcount, when given, is the scalars' mean number of set bits: sparse scalars leave
    more digits zero, so fewer points are added per window (optimization D4 refines this).
    """
    n = max(int(n), 1)
    density = 1.0 if popcount is None else min(max(popcount / SCALAR_BITS, 1e-9), 1.0)
    best = None
    for c in range(1, C_MAX + 1):
        nonzero = 1.0 - (1.0 - density) ** c if popcount is not None else 1.0
        # a mixed add ~ 10 mults, a full add ~ 14: bucket reduction is 2 full adds per bucket
        cost = num_windows(c) * (n * nonzero * 10 + (1 << (c - 1)) * 28)
        if best is None or cost < best[0]:
            best = (cost, c)
    return best[1]


def window_passes(n: int, nw: int, max_entries: int = 1 << 28) -> list[tuple[int, int]]:
    """Windows [w0, w1) per pass, so a pass sorts at most max(n, max_entries) keys.
    (nw windows of c <= C_LIMIT bits have fewer than 2^32 - 1 bucket ids in all.)"""
    per = max(1, max_entries // max(n, 1))
    return [(w0, min(w0 + per, nw)) for w0 in range(0, nw, per)]


def chunks(c: int) -> tuple[int, int]:
    """(T, log2 L): a window's B = 2^(c-1) buckets in T chunks of L, T ~ L ~ sqrt(B)."""
    log_b = c - 1
    log_t = log_b // 2
    return 1 << log_t, log_b - log_t


def first_segment_size(valid: int, nbuckets: int) -> int:
    """Entries per segment of the first accumulation: twice the mean bucket load, so a
    random MSM gets one segment per bucket and only outsized buckets are split."""
    return max(8, 2 * -(-valid // max(nbuckets, 1)))


def bucket_offsets(sorted_keys, nbuckets: int, xp):
    """offsets[b] = first sorted entry of bucket b; offsets[nbuckets] = valid entries."""
    hi = sorted_keys >> xp.uint64(32)
    return xp.searchsorted(hi, xp.arange(nbuckets + 1, dtype=xp.uint64)).astype(xp.int64)


def segment_plan(offsets, S: int, xp):
    """Split each bucket's run [offsets[b], offsets[b+1]) into ceil(len/S) segments, at
    least one (an empty bucket gets an empty segment, i.e. infinity).

    Returns (seg_first[nb + 1], seg_bucket[total], total): segment j belongs to bucket
    b = seg_bucket[j] and is its (j - seg_first[b])-th; bucket b's segments are
    seg_first[b] .. seg_first[b+1] - 1, so segment partials are again runs per bucket.
    """
    counts = offsets[1:] - offsets[:-1]
    nseg = xp.maximum((counts + (S - 1)) // S, 1)
    seg_first = xp.zeros(len(nseg) + 1, dtype=xp.int64)
    xp.cumsum(nseg, out=seg_first[1:])
    total = int(seg_first[-1])
    seg_bucket = (xp.searchsorted(seg_first, xp.arange(total, dtype=xp.int64), side="right") - 1).astype(xp.int64)
    return seg_first, seg_bucket, total


def pippenger(k, n: int, c: int, max_entries: int, xp):
    """The MSM schedule, over a kernel set `k` (the GPU launches, or the CPU model's
    emulation of the same kernels). Returns k.combine's result.

    k.digits(c, w0, w1) -> uint64 keys [(w1 - w0) * n]
    k.sum_affine(keys, seg_bucket, seg_first, offsets, S, total) -> partials [total]
    k.sum_xyzz(partials, seg_bucket, seg_first, offsets, S, total) -> partials [total]
    k.window_chunks(buckets, nwp, B, T) -> (chunk_s, chunk_t) [nwp * T]
    k.window_final(window_sums, chunk_s, chunk_t, nwp, T, log_l, w0): window_sums[w0:w0+nwp]
    k.combine(window_sums, nw, c) -> the result
    """
    nw = num_windows(c)
    B = 1 << (c - 1)
    T, log_l = chunks(c)
    window_sums = k.alloc(nw)
    for w0, w1 in window_passes(n, nw, max_entries):
        nwp = w1 - w0
        nb = nwp * B
        keys = k.digits(c, w0, w1)
        keys.sort()                       # CUB radix sort under CuPy
        offsets = bucket_offsets(keys, nb, xp)
        S = first_segment_size(int(offsets[-1]), nb)
        seg_first, seg_bucket, total = segment_plan(offsets, S, xp)
        partials = k.sum_affine(keys, seg_bucket, seg_first, offsets, S, total)
        del keys
        while total > nb:                 # some bucket has several partials: merge them
            offsets = seg_first
            seg_first, seg_bucket, total = segment_plan(offsets, MERGE_S, xp)
            partials = k.sum_xyzz(partials, seg_bucket, seg_first, offsets, MERGE_S, total)
        chunk_s, chunk_t = k.window_chunks(partials, nwp, B, T)
        k.window_final(window_sums, chunk_s, chunk_t, nwp, T, log_l, w0)
    return k.combine(window_sums, nw, c)
