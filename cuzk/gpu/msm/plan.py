"""Pippenger index math shared by the GPU driver (cuzk/gpu/msm/pippenger.py) and its CPU model.

Every function takes an array module `xp` (numpy or cupy) where it touches arrays, so
tests/gpu/test_msm_model.py runs the very same code on the CPU.

Digits: a canonical scalar s < 2^255 is split into windows of c bits, recoded with a carry
into signed digits d_w in (-2^(c-1), 2^(c-1)]; s = sum_w d_w 2^(c w). Bucket |d| - 1 of a
window holds the points whose digit there is ±|d|, so there are B = 2^(c-1) buckets.

Per pass: digits, sort, bucket offsets; optionally affine rounds (each halves every bucket's
list by affine pair adds, batched inversion); XYZZ segment sums to one point per bucket; then
the window reduction in levels (reduce_levels), over the buckets of one or more passes.
"""
from __future__ import annotations

import numpy as np



SCALAR_BITS = 255        # r < 2^255
C_MAX = 22               # largest window choose_window picks (the window reduction is parallel now)
C_LIMIT = 24             # largest window accepted: a pass's bucket ids must fit the key's 32 bits
MERGE_S = 16             # entries per segment when merging a bucket's partial sums
PAIR_MERGE_MAX = 1 << 19 # R2 merges in pairs only levels of at most this many partials (latency-bound; above, a
                         # pair level's copies of every finished bucket cost more than MERGE_S chains at 2^24:
                         # docs/perf-log.md, 2026-11-30)
ZERO_KEY = (1 << 64) - 1 # a zero digit or a base at infinity: sorts after every bucket

# Cost model of choose_window, in Fp-multiplication equivalents.
ADD_XYZZ = 10            # mixed XYZZ add into a bucket (madd-2008-s: 8M + 2S)
ADD_AFFINE = 6           # affine add with batched inversion (3 for the batch, lambda, lambda^2, y3)
SORT_KEY = 1             # sorting one uint64 key (measured: 2^28 keys in 14.4 ms ~ 1 mult each)
REDUCE_BUCKET = 28       # window reduction: two full XYZZ adds (12M + 2S) per bucket

# Affine accumulation (affine_rounds): rounds run while they have this many pairs; below it the
# remaining points go to the XYZZ segment sums (a round's fixed cost is one inversion's latency).
AFFINE_MIN_PAIRS = 1 << 20
AFFINE_THREADS = 128     # threads per block of the round kernel (its __launch_bounds__)
# resident blocks per SM: one wave, so one inversion per block per round (the kernels' AFFINE_BLOCKS_PER_SM)
AFFINE_BLOCKS_PER_SM = 4
REDUCE_THREADS = 1 << 16 # the first reduction level aims at this many chunks in all
REDUCE_FIRST_MAX = 64    # largest chunk of the first level
REDUCE_UP = 4            # chunk of the later levels (their latency: ~3L adds a level)
REDUCE_MAX_BUCKETS = 1 << 23   # buckets of several passes are reduced together up to this many


def num_windows(c: int) -> int:
    """Windows so that the top carry is absorbed: c * nw >= 256 > 255 bits."""
    if not 1 <= c <= C_LIMIT:
        raise ValueError(f"window size must be in [1, {C_LIMIT}], got {c}")
    return -(-(SCALAR_BITS + 1) // c)


def choose_window(n: int, popcount: float | None = None, affine: bool = False, parts: int = 1) -> int:
    """c minimising nw * (points into buckets + buckets to reduce), in multiplications.

    popcount, when given, is the scalars' mean number of set bits: sparse scalars leave
    more digits zero, so fewer points are added per window (optimization D4 refines this).
    affine: the bucket sums use affine_rounds (cheaper adds) rather than XYZZ.
    parts: n points of that many MSMs run as one (msm_many), each with its own buckets.
    """
    n = max(int(n), 1)
    density = 1.0 if popcount is None else min(max(popcount / SCALAR_BITS, 1e-9), 1.0)
    add = ADD_AFFINE if affine else ADD_XYZZ
    best = None
    for c in range(1, C_MAX + 1):
        nonzero = 1.0 - (1.0 - density) ** c if popcount is not None else 1.0
        cost = num_windows(c) * (n * nonzero * add + n * SORT_KEY + parts * (1 << (c - 1)) * REDUCE_BUCKET)
        if best is None or cost < best[0]:
            best = (cost, c)
    return best[1]


def max_parts(c: int) -> int:
    """Most MSMs that one multi-MSM of window c holds: every bucket id, parts * nw * 2^(c-1) of them,
    must stay below 2^32 - 1 (the key's high word; all ones is ZERO_KEY's)."""
    return ((1 << 32) - 2) // (num_windows(c) << (c - 1))


PASS_ENTRIES_FLOOR = 1 << 28  # the fixed pass size before K6


def window_passes(n: int, nw: int, max_entries: int = PASS_ENTRIES_FLOOR) -> list[tuple[int, int]]:
    """Windows [w0, w1) per pass, so a pass sorts at most max(n, max_entries) keys.
    (nw windows of c <= C_LIMIT bits have fewer than 2^32 - 1 bucket ids in all.)"""
    per = max(1, max_entries // max(n, 1))
    return [(w0, min(w0 + per, nw)) for w0 in range(0, nw, per)]


PASS_BYTES_PER_ENTRY = 84    # a pass's peak an entry: its key (8 B), round 0's and round 1's points (48 + 24 B), plans, ids


def pass_entries(n: int, nw: int, budget: int, floor: int | None = None) -> int:
    """K6: the keys a sort pass may hold (window_passes' max_entries) when `budget` bytes of device memory are free
    for it: as many of the nw windows of n keys as the budget holds at PASS_BYTES_PER_ENTRY, never fewer than
    `floor` keys hold, the count below 2^31 (affine_rounds' plan words), then balanced: the fewest passes with
    their largest as small as can be. floor None: PASS_ENTRIES_FLOOR."""
    n, floor = max(n, 1), PASS_ENTRIES_FLOOR if floor is None else floor
    per = max(1, floor // n, min(budget // (PASS_BYTES_PER_ENTRY * n), ((1 << 31) - 1) // n))
    per = min(per, nw)
    passes = -(-nw // per)
    return -(-nw // passes) * n


def reduce_levels(nwin: int, B: int, pairs: bool = False) -> list[tuple[int, bool, int]]:
    """Window reduction levels (L, first, log_scale), each a k.window_level over chunks of L
    (pairs: every level after the first has L = 2, and every L = 2 level is a k.window_pair).

    Invariant after each level, per window: V = sum_i A_i + sum_i i * T_i over its N entries;
    a level makes chunk u of L entries into A'_u = sum_j A_uL+j + sum_j (j + first) T_uL+j and
    T'_u = 2^log_scale * sum_j T_uL+j with 2^log_scale = L (0 at the last level: T' unused).
    The first level reads the buckets as T (no A; bucket k has weight k + 1). N = B, B/L, ...
    until 1, when V = A_0.
    """
    levels, N, first = [], B, True
    while first or N > 1:
        if first:
            want = max(2, (nwin * N) // REDUCE_THREADS)
            L = min(1 << (min(want, REDUCE_FIRST_MAX).bit_length() - 1), N)
        else:
            L = min(2 if pairs else REDUCE_UP, N)
        N //= L
        levels.append((L, first, L.bit_length() - 1 if N > 1 else 0))
        first = False
    return levels


SEGMENT_THREADS = 1 << 17   # a small MSM's first accumulation still gets this many segments (threads)


def first_segment_size(valid: int, nbuckets: int) -> int:
    """Entries per segment of the first accumulation: twice the mean bucket load, so a
    random MSM gets one segment per bucket and only outsized buckets are split; but no more
    than valid / SEGMENT_THREADS (at least 8), so that a small MSM is not a few thousand
    threads each adding hundreds of points in a dependent chain."""
    return max(8, min(2 * -(-valid // max(nbuckets, 1)), valid // SEGMENT_THREADS))


def sort_bits(nb: int) -> tuple[int, int]:
    """The key bits [lo, hi) a stable sort needs when the bucket ids are < nb: the high word's low nb.bit_length()
    bits. ZERO_KEY's bits there are all ones, >= nb, so it still sorts last; within a bucket the digits kernel
    writes the keys by ascending index (the low word), and a stable sort keeps that, so the order is the full
    sort's."""
    return 32, 32 + max(1, nb.bit_length())


def bucket_offsets(sorted_keys, nbuckets: int, xp, direct: bool = False):
    """offsets[b] = first sorted entry of bucket b; offsets[nbuckets] = valid entries. direct (K3): search the
    keys themselves for b << 32 (they are in numeric order: bucket, then index; ZERO_KEY last) instead of a
    shifted copy of their high words (a pass that writes and reads 8 bytes a key)."""
    q = xp.arange(nbuckets + 1, dtype=xp.uint64)
    if direct:
        return xp.searchsorted(sorted_keys, q << xp.uint64(32)).astype(xp.int64)
    hi = sorted_keys >> xp.uint64(32)
    return xp.searchsorted(hi, q).astype(xp.int64)


def _offsets_of(counts, xp):
    """[0, cumsum(counts)] as int64 (the runs of consecutive buckets)."""
    off = xp.zeros(len(counts) + 1, dtype=xp.int64)
    xp.cumsum(counts, out=off[1:])
    return off


def _ceil_shift(counts, r: int):
    return (counts + ((1 << r) - 1)) >> r


def segment_plan(offsets, S: int, xp, total: int | None = None):
    """Split each bucket's run [offsets[b], offsets[b+1]) into ceil(len/S) segments, at
    least one (an empty bucket gets an empty segment, i.e. infinity).

    Returns (seg_first[nb + 1], seg_bucket[total], total): segment j belongs to bucket
    b = seg_bucket[j] and is its (j - seg_first[b])-th; bucket b's segments are
    seg_first[b] .. seg_first[b+1] - 1, so segment partials are again runs per bucket.
    total: the number of segments when the host knows it already (no read of the device).
    """
    counts = offsets[1:] - offsets[:-1]
    seg_first = _offsets_of(xp.maximum((counts + (S - 1)) // S, 1), xp)
    total = int(seg_first[-1]) if total is None else int(total)
    seg_bucket = (xp.searchsorted(seg_first, xp.arange(total, dtype=xp.int64), side="right") - 1).astype(xp.int64)
    return seg_first, seg_bucket, total


def round_offsets(in_off, xp, total: int | None = None, k=None):
    """One affine round: bucket b's cnt_b = in_off[b+1] - in_off[b] points become ceil(cnt_b / 2)
    (pairs summed, an odd last one copied), stored compactly. Returns (out_off, total_out); total: total_out when
    the host knows it (no read of the device). k: a kernel set whose lean_offsets (K9) makes them with
    k.counts_offsets(in_off, 1)."""
    if k is not None and getattr(k, "lean_offsets", False):     # K9: one counts kernel and the cumsum
        out_off = k.counts_offsets(in_off, 1)
    else:
        out_off = _offsets_of(_ceil_shift(in_off[1:] - in_off[:-1], 1), xp)
    return out_off, int(out_off[-1]) if total is None else int(total)


def round_totals(offsets, xp):
    """totals[r] = sum_b ceil(cnt_b / 2^r) for r < 32: the entries left after r affine rounds (msm_round_totals;
    ceil(ceil(c / 2) / 2) = ceil(c / 4), so round r + 1's size follows from the first counts). With every
    cnt_b < 2^31, totals[r] for r >= 31 is totals[31], the non-empty buckets."""
    counts = offsets[1:] - offsets[:-1]
    return xp.stack([_ceil_shift(counts, r).sum() for r in range(32)])


def round_geometry(total: int, threads: int, max_blocks: int) -> tuple[int, int]:
    """(blocks, per): one wave of at most max_blocks blocks; thread t of block k takes outputs
    k * threads * per + t + threads * i for i < per (those below total)."""
    blocks = max(1, min(-(-total // threads), max_blocks))
    per = max(1, -(-total // (blocks * threads)))
    return -(-total // (threads * per)), per


def affine_rounds(k, keys, offsets, min_pairs: int, xp, mark=None, keyed: bool = True):
    """Halve every bucket's list by affine pair additions while a round has >= min_pairs pairs
    (and at least one). Round 0 reads bases through the sorted keys, later rounds the previous
    round's points. Returns (points, offsets, rounds, count), count = offsets[-1] known on the host
    (one device read for all rounds: each round's size is the next one's count); with rounds == 0,
    (keys, offsets, 0, count).

    k.affine_plan(in_off, out_off, total) -> uint32 words s << 1 | paired per output
    k.affine_round(src, keyed, plan, total) -> affine points [total]; an x1 == x2 pair sets
    k.degenerate() (its output is then garbage: the caller redoes the pass in XYZZ).
    k.plan_by_entry (K4): the words by k.affine_plan_entry(by, keyed, in_off, out_off, count, total) ->
    (words, ids) instead, no search: by = the keys in round 0 (bucket = key >> 32), else the previous round's ids
    (ids[o] = the bucket of output o).
    k.sizes_once (K5): every round's size from one read of k.round_totals(offsets) (round_totals), not a read
    per round.
    mark(name), when given, is called after the sizes' read ("round sizes": K5's totals, else the count), after each
    round's offsets ("round offsets", with their device read without K5), after its plan kernel ("round plans") and
    after its round kernel ("affine rounds").
    keyed=False: `keys` are affine points already (K10's groups): round 0 reads them as later rounds do, and every
    round is planned by the search (no keys to take the buckets from).
    """
    mark = mark or (lambda name: None)
    by_entry = keyed and getattr(k, "plan_by_entry", False)
    sizes = k.round_totals(offsets).tolist() if getattr(k, "sizes_once", False) else None
    src, in_off, rounds, ids = keys, offsets, 0, keys
    count = int(offsets[-1]) if sizes is None else int(sizes[0])
    mark("round sizes")
    if count >= 1 << 31:                      # a plan word holds an entry index << 1
        return src, in_off, 0, count
    while True:
        out_off, total = round_offsets(in_off, xp, None if sizes is None else sizes[min(rounds + 1, 31)], k)
        mark("round offsets")
        pairs = count - total
        if pairs == 0 or pairs < min_pairs:
            return src, in_off, rounds, count
        if by_entry:
            plan, ids = k.affine_plan_entry(ids, rounds == 0, in_off, out_off, count, total)
        else:
            plan = k.affine_plan(in_off, out_off, total)
        mark("round plans")
        src = k.affine_round(src, keyed and rounds == 0, plan, total)
        mark("affine rounds")
        in_off, rounds, count = out_off, rounds + 1, total


def bucket_sums(k, src, keyed: bool, offsets, nb: int, xp, S: int | None = None, pairs: bool = False,
                count: int | None = None):
    """One XYZZ sum per bucket of the runs src[offsets[b]:offsets[b+1]] (keys or affine points):
    segments of S entries (default: first_segment_size), then merges of MERGE_S partials until one
    per bucket (pairs, optimization R2: a level of at most PAIR_MERGE_MAX partials merges them in pairs,
    one add deep, k.merge_pairs over k.affine_plan's words). count: offsets[-1] when the host knows it."""
    if S is None:
        S = first_segment_size(int(offsets[-1]) if count is None else count, nb)
    seg_first, seg_bucket, total = segment_plan(offsets, S, xp)
    partials = k.sum_affine(src, keyed, seg_bucket, seg_first, offsets, S, total)
    while total > nb:                     # some bucket has several partials (total == nb: one each)
        if pairs and total <= PAIR_MERGE_MAX:
            out_off, total = round_offsets(seg_first, xp)
            partials = k.merge_pairs(partials, k.affine_plan(seg_first, out_off, total), total)
            seg_first = out_off
            continue
        offsets = seg_first
        seg_first, seg_bucket, total = segment_plan(offsets, MERGE_S, xp)
        partials = k.sum_xyzz(partials, seg_bucket, seg_first, offsets, MERGE_S, total)
    return partials


# batch addition (sums.py): one bucket of known size, summed in segments, then merged
SEGMENT = 128            # points per thread in the first pass: 2^26 points -> 2^19 threads
SEGMENT_MIN = 8          # ... down to this many for small sums, so they still get 2^17 threads: a thread's
                         # chain of dependent adds (S, then MERGE_ONE per merge level) is the time of a small sum
THREADS_MIN = 1 << 17


def segment_size(count: int) -> int:
    """Points per thread of batch addition's first pass over `count` points: SEGMENT from 2^24 points, fewer
    below (at least SEGMENT_MIN), so that the pass has THREADS_MIN threads while it can."""
    return max(SEGMENT_MIN, min(SEGMENT, count // THREADS_MIN))


MERGE_ONE = 4            # partials per merge thread when one bucket is summed (batch addition)


def known_pair_plan(counts: list[int], xp):
    """Pair merge plan (msm_affine_plan's words) of consecutive buckets whose partial counts (host ints,
    each >= 1) the host knows, made on the host: (words on the device, the counts after the level)."""
    c = np.asarray(counts, dtype=np.int64)
    m = (c + 1) // 2
    in_off = np.concatenate(([0], np.cumsum(c)))
    out_off = np.concatenate(([0], np.cumsum(m)))
    b = np.repeat(np.arange(len(c)), m)
    s_ = in_off[b] + 2 * (np.arange(out_off[-1]) - out_off[b])
    words = (s_ << 1) | (s_ + 1 < in_off[b + 1])
    return xp.asarray(words.astype(np.uint32)), [int(v) for v in m]


def one_bucket_sum(k, src, keyed: bool, count: int, S: int, xp, M: int = MERGE_ONE, pairs: bool = False):
    """bucket_sums for a single bucket of `count` entries (> 0) whose size the host knows: every segment
    plan is made without reading the device, so nothing waits for the GPU until the caller reads the
    result. Segments of S entries, then merges of M partials (short dependent chains: a sum of n
    entries is S + M * ceil(log_M(n / S)) additions deep). Returns partials[1]."""
    def plan_of(total, nseg):             # offsets [0, total], seg_first [0, nseg], every segment in bucket 0
        return xp.arange(0, 2 * total, max(total, 1), dtype=xp.int64)[:2], \
            xp.arange(0, 2 * nseg, nseg, dtype=xp.int64)[:2], xp.zeros(nseg, dtype=xp.int64)
    nseg = max(1, -(-count // S))
    offsets, seg_first, seg_bucket = plan_of(count, nseg)
    partials = k.sum_affine(src, keyed, seg_bucket, seg_first, offsets, S, nseg)
    while nseg > 1:
        if pairs and nseg <= PAIR_MERGE_MAX:   # R2: pair merges, planned without reading the device
            half = -(-nseg // 2)
            o = xp.arange(half, dtype=xp.uint32)
            words = (o << xp.uint32(2)) | (2 * o + 1 < nseg).astype(xp.uint32)
            partials = k.merge_pairs(partials, words, half)
            nseg = half
            continue
        count, nseg = nseg, -(-nseg // M)
        offsets, seg_first, seg_bucket = plan_of(count, nseg)
        partials = k.sum_xyzz(partials, seg_bucket, seg_first, offsets, M, nseg)
    return partials


def known_plan(counts: list[int], S: int, xp):
    """segment_plan of consecutive buckets whose sizes (host ints, 0 allowed) the host knows, made
    without reading the device: (offsets, seg_first, seg_bucket, nseg), nseg[b] = bucket b's segments
    (at least one: an empty bucket's is empty, i.e. infinity)."""
    nseg = [max(1, -(-c // S)) for c in counts]
    off, first = [0], [0]
    for c, m in zip(counts, nseg):
        off.append(off[-1] + c)
        first.append(first[-1] + m)
    seg_first = xp.asarray(first, dtype=xp.int64)
    seg_bucket = (xp.searchsorted(seg_first, xp.arange(first[-1], dtype=xp.int64), side="right") - 1).astype(xp.int64)
    return xp.asarray(off, dtype=xp.int64), seg_first, seg_bucket, nseg


def few_bucket_sums(first: list, S: int, xp, M: int = MERGE_ONE, pairs: bool = False):
    """one_bucket_sum for several buckets at once (batch sums of several sections, optimization M2):
    first = [(k, src, keyed, count)], one per bucket, each with its own kernel set (its own bases).
    Each bucket's first segment sums (S entries) run on its kernel set; then the partials of all the
    buckets merge together, M at a time, in launches of first[0]'s kernel set, planned on the host
    (known_plan). Returns partials[len(first)], bucket b's sum at b."""
    parts, counts = [], []
    for k, src, keyed, count in first:
        offsets, seg_first, seg_bucket, nseg = known_plan([count], S, xp)
        parts.append(k.sum_affine(src, keyed, seg_bucket, seg_first, offsets, S, nseg[0]))
        counts += nseg
    k = first[0][0]
    partials = k.concat(parts)
    while max(counts) > 1:
        if pairs and sum(counts) <= PAIR_MERGE_MAX:   # R2: pair merges (known_pair_plan)
            words, counts = known_pair_plan(counts, xp)
            partials = k.merge_pairs(partials, words, sum(counts))
            continue
        offsets, seg_first, seg_bucket, nseg = known_plan(counts, M, xp)
        partials = k.sum_xyzz(partials, seg_bucket, seg_first, offsets, M, sum(nseg))
        counts = nseg
    return partials


def reduce_windows(k, buckets, nwin: int, B: int, pairs: bool = False):
    """nwin window sums sum_k (k + 1) bucket_k from nwin * B buckets (window-major). pairs (optimization
    R1): the levels after the first (and a first of L = 2) are k.window_pair, two adds deep each."""
    A, T, N = None, buckets, B
    for L, first, log_scale in reduce_levels(nwin, B, pairs):
        N //= L
        if pairs and L == 2:
            A, T = k.window_pair(A, T, nwin * N, first, log_scale)
        else:
            A, T = k.window_level(A, T, nwin * N, L, first, log_scale)
    return A


GROUP_MIN_BUCKETS = 1 << 20   # K10 reduces a pass's windows by affine groups from this many buckets


def group_split(c: int) -> int:
    """K10's split of a digit d = 2^s hi + lo, 1 <= d <= 2^(c-1): s = c // 2."""
    return c // 2


def group_offsets(off, count: int, units: int, B: int, s: int, xp, k=None):
    """K10's groups of the bucket runs off[units * B + 1] left by the affine rounds (count = off[-1]). Bucket j of a
    unit (one window of one MSM) has digit d = j + 1 = 2^s hi + lo, so its weighted sum is
    sum_j d P_j = 2^s sum_hi hi G_hi + sum_lo lo H_lo, G_hi the sum of the buckets with that hi, H_lo of those with
    that lo. Per unit, the G runs are one run of hi = 0 (weight 0, discarded), then hi = 1 .. B / 2^s: each a
    contiguous range of the bucket runs, so the points stay where they are (entries [0, count) of the grouped
    array). The H runs are lo = 1 .. 2^s - 1, each the buckets j = 2^s hi + lo - 1 for hi < B / 2^s, then an empty
    run (lo = 2^s: a power of two of runs); k.group_gather copies them after the G runs.
    k: a kernel set whose k.group_counts(off, units, B, s) gives H's run lengths in that order (else numpy/CuPy's
    transpose). Returns (off_h, offsets, ng): off_h[t] = where H's bucket t (order: unit, lo - 1, hi) starts among
    the H entries; group g of the grouped array is [offsets[g], offsets[g + 1]), ng groups."""
    HB, lo_n = B >> s, (1 << s) - 1
    ju = xp.arange(units, dtype=xp.int64)[:, None] * B
    g_first = xp.concatenate([ju, ju + (xp.arange(1, HB + 1, dtype=xp.int64)[None, :] << s) - 1], axis=1).ravel()
    off_g = off[g_first]                                                   # units * (1 + HB) group starts
    if k is not None:                                                    # one kernel (msm_group_counts)
        off_h = _offsets_of(k.group_counts(off, units, B, s), xp)
    else:
        cnt = (off[1:] - off[:-1]).reshape(units, HB, 1 << s).transpose(0, 2, 1)[:, :lo_n, :]   # (unit, lo - 1, hi)
        off_h = _offsets_of(xp.ascontiguousarray(cnt).ravel(), xp)
    per_unit = lo_n * HB
    starts = off_h[:-1:HB].reshape(units, lo_n)
    ends = off_h[per_unit::per_unit].reshape(units, 1)                   # each unit's end: its empty run
    goff_h = xp.concatenate([xp.concatenate([starts, ends], axis=1).ravel(), off_h[-1:]])
    offsets = xp.concatenate([off_g, goff_h + count])
    return off_h, offsets, len(offsets) - 1


def group_windows(k, pts, off, count: int, units: int, B: int, c: int, min_pairs: int, xp,
                  pair_levels: bool = False, pair_merges: bool = False, mark=None):
    """The window sums of `units` windows (optimization K10) from the affine points pts that the bucket rounds left
    (bucket runs off, count = off[-1]): group_offsets' G and H groups summed by more affine rounds (the same adds
    as a running sum's two a bucket, at the affine price), their XYZZ sums reduced per unit (B / 2^s and 2^s
    groups: small), then k.window_join: 2^s G + H. The degenerate flag is not reset: the caller's bucket rounds
    are not read before the groups are planned (the host plans them while those rounds run), and one read after the
    group rounds covers both; None when either met x1 == x2 (the caller redoes the pass in XYZZ).
    k.group_gather(pts, off, off_h, count, units, B, s) -> the grouped points (group_offsets);
    k.gather(points, idx) -> points[idx]; k.window_join(hi_sums, lo_sums, count, s)."""
    mark = mark or (lambda name: None)
    s = group_split(c)
    off_h, goff, ng = group_offsets(off, count, units, B, s, xp, k if getattr(k, "group_counts", None) else None)
    grouped = k.group_gather(pts, off, off_h, count, units, B, s)
    mark("group gather")
    pts2, off2, rounds, count2 = affine_rounds(k, grouped, goff, min_pairs, xp, lambda name: mark("group " + name),
                                               keyed=False)
    k.stats["group_rounds"] = k.stats.get("group_rounds", 0) + rounds
    if k.degenerate():
        return None
    partials = bucket_sums(k, pts2, False, off2, ng, xp, pairs=pair_merges, count=count2)
    mark("bucket sums")
    HB = B >> s
    g_rows = (xp.arange(units, dtype=xp.int64)[:, None] * (1 + HB) + xp.arange(1, HB + 1, dtype=xp.int64)).ravel()
    hi_sums = reduce_windows(k, k.gather(partials, g_rows), units, HB, pair_levels)
    lo_sums = reduce_windows(k, partials[units * (1 + HB):], units, 1 << s, pair_levels)
    return k.window_join(hi_sums, lo_sums, units, s)


def pippenger(k, n: int, c: int, max_entries: int, xp, affine_min_pairs: int | None = None, mark=None,
              parts: int = 1, pair_levels: bool = False, pair_merges: bool = False,
              windows: int | None = None):
    """The MSM schedule, over a kernel set `k` (the GPU launches, or the CPU model's
    emulation of the same kernels). Returns k.combine's result.

    parts > 1: several MSMs in one (msm_many): n points in all, and every window has parts blocks
    of 2^(c-1) buckets, one per MSM (k.digits keys them so); the window sums handed to k.combine
    are then window-major, row w * parts + p for window w of MSM p.

    affine_min_pairs: None -> buckets accumulate in XYZZ; else affine_rounds with that
    threshold first (G1), the pass redone in XYZZ if a round met x1 == x2.
    pair_levels: the window reduction's later levels by k.window_pair (reduce_windows, optimization R1).
    pair_merges: the bucket sums' merges by k.merge_pairs (bucket_sums, optimization R2).
    mark(name), when given, is called after each step (profiling).
    windows: the windows to sum and fold (None: num_windows(c)); fewer when k.digits keys several windows of
    each point into one window's buckets (P2: msm_fixed, whose n counts every table row).

    k.digits(c, w0, w1) -> uint64 keys [(w1 - w0) * n]
    k.sort(keys, nb) -> the keys in ascending order (keys of one bucket by index: sort_bits)
    k.direct_offsets: bucket_offsets' form (K3)
    k.sum_affine(src, keyed, seg_bucket, seg_first, offsets, S, total) -> partials [total]
    k.sum_xyzz(partials, seg_bucket, seg_first, offsets, S, total) -> partials [total]
    k.affine_plan, k.affine_round, k.reset_degenerate(), k.degenerate(): see affine_rounds
    k.window_level(A, T, count, L, first, log_scale) -> (A', T') [count]; A None at the first
    k.merge_pairs(partials, plan, total) -> partials [total], output o = the pair (or single) of plan[o]
    k.window_pair(A, T, count, first, log_scale) -> (A', T') [count], from 2 * count entries (T' None
    or unused when log_scale is 0)
    k.concat(list of arrays) -> one array; k.combine(window_sums, nw, c) -> the result
    k.group_reduce (K10): a pass of at least GROUP_MIN_BUCKETS buckets whose affine rounds ran makes its window sums
    by group_windows (k.gather, k.window_join)
    k.stats: dict, counts of "affine_rounds" and "fallbacks" added to
    """
    mark = mark or (lambda name: None)
    nw = num_windows(c) if windows is None else int(windows)
    B = 1 << (c - 1)
    PB = parts * B                        # buckets of one window
    sums, pending, pending_w = [], [], 0

    def flush():                          # the pending passes' buckets, reduced together, into sums
        nonlocal pending, pending_w
        if pending:
            sums.append(reduce_windows(k, k.concat(pending), pending_w * parts, B, pair_levels))
        pending, pending_w = [], 0
    passes = window_passes(n, nw, max_entries)
    for i, (w0, w1) in enumerate(passes):
        nwp = w1 - w0
        nb = nwp * PB
        keys = k.digits(c, w0, w1)
        mark("digits")
        keys = k.sort(keys, nb)           # CUB radix sort (K1: the bucket id bits only)
        mark("sort")
        offsets = bucket_offsets(keys, nb, xp, k.direct_offsets)
        mark("offsets")
        partials = direct = None
        if affine_min_pairs is not None:
            k.reset_degenerate()
            pts, off, rounds, count = affine_rounds(k, keys, offsets, affine_min_pairs, xp, mark)
            k.stats["affine_rounds"] = k.stats.get("affine_rounds", 0) + rounds
            mark("affine rounds")
            group = rounds and getattr(k, "group_reduce", False) and nb >= GROUP_MIN_BUCKETS and c >= 2   # K10
            if group:                         # the flag read once, after the group rounds
                direct = group_windows(k, pts, off, count, nwp * parts, B, c, affine_min_pairs, xp,
                                       pair_levels, pair_merges, mark)
                degenerate = direct is None
            else:
                degenerate = rounds and k.degenerate()
            if degenerate:                    # P + P or P + (-P) met: this pass in XYZZ instead
                k.stats["fallbacks"] = k.stats.get("fallbacks", 0) + 1
            elif rounds and not group:
                partials = bucket_sums(k, pts, False, off, nb, xp, pairs=pair_merges, count=count)
            del pts, off
        if direct is not None:                # K10: this pass's window sums, after the earlier passes' own
            del keys
            flush()
            sums.append(direct)
            mark("window reduction")
            continue
        if partials is None:
            partials = bucket_sums(k, keys, True, offsets, nb, xp, pairs=pair_merges)
        mark("bucket sums")
        del keys
        pending.append(partials)
        pending_w += nwp
        nxt = passes[i + 1][1] - passes[i + 1][0] if i + 1 < len(passes) else 0
        if not nxt or (pending_w + nxt) * PB > REDUCE_MAX_BUCKETS:
            flush()
            mark("window reduction")
    out = k.combine(k.concat(sums), nw, c)
    mark("combine")
    return out
