"""G1/G2 multi-scalar multiplication on the GPU (Pippenger, signed-digit windows).

Inputs stay on the device: bases uint32[n, 24] (G1) or [n, 48] (G2) affine Montgomery
limbs, inf bool[n] (a base at infinity), scalars uint32[n, 8] Fr in Montgomery form.
The kernels are in kernels/msm/pippenger.cuh and kernels/msm/affine.cuh (modules msm/g1.cu, msm/g2.cu);
the index math is cuzk/gpu/msm/plan.py, the options and kernel builds options.py, the host fold fold.py.

Bucket sums: "xyzz" (mixed XYZZ adds, one thread per segment) or, for G1, "affine" (rounds of
affine pair additions with batched inversion, msm_plan.affine_rounds; a pass that meets
P + P or P + (-P) is redone in XYZZ).
"""
from __future__ import annotations

import cupy
import numpy as np

from ... import field as F
from ...plans import MsmKernels
from ..cub_sort import sort_keys
from ..loader import kernel
from ..per_device import device_cache
from . import fold, plan
from .fold import AFFINE_WORDS, xyzz_words
from .options import DEFAULT_PAIR_LEVELS, DEFAULT_PAIR_MERGES, kernel_build, sum_options

THREADS = 128
last_stats: dict = {}                         # of the latest msm_xyzz: affine_rounds, fallbacks
PASS_MEMORY_FRACTION = 0.75                   # K6: the share of free device memory (the pool's too) a sort pass takes


def _grid(n: int) -> tuple[int]:
    return ((n + THREADS - 1) // THREADS,)


def _check(group: int, bases, inf, scalars) -> int:
    n = len(inf)
    w = AFFINE_WORDS[group]
    if bases.dtype != cupy.uint32 or bases.shape != (n, w) or not bases.flags.c_contiguous:
        raise ValueError(f"G{group} bases must be a contiguous uint32[{n}, {w}] device array")
    if inf.dtype not in (cupy.bool_, cupy.uint8) or inf.shape != (n,):
        raise ValueError(f"inf must be a bool[{n}] device array")
    if scalars.dtype != cupy.uint32 or scalars.shape != (n, F.FR_LIMBS) or not scalars.flags.c_contiguous:
        raise ValueError(f"scalars must be a contiguous uint32[{n}, 8] device array")
    if n >= 1 << 31:
        raise ValueError("MSM size must be below 2^31 (the sort key holds a 31-bit index)")
    return n


class _Kernels:
    """The kernel set of msm_plan.pippenger as launches of kernels/msm/g1.cu / msm/g2.cu."""

    def __init__(self, group: int, bases, inf, scalars, host_fold: bool = False, kernels: MsmKernels | None = None):
        """host_fold: combine returns the window sums as they are (fold_windows folds them on the host).
        kernels: the code to run (plans.MsmKernels; None: what ships)."""
        self.cp = cupy
        self.host_fold = host_fold
        self.g = f"g{group}"
        self.mod = f"msm/g{group}"
        kk = MsmKernels() if kernels is None else kernels
        if not isinstance(kk, MsmKernels):
            raise TypeError(f"kernels must be a plans.MsmKernels, got {type(kk).__name__}")
        self.build = kernel_build(group, kk)
        self.lazy = "_lazy" if kk.lazy_rounds else ""
        self.bit_sort = kk.sort_bucket_bits
        self.direct_offsets = kk.offsets_from_keys         # bucket_offsets searches the keys themselves
        self.plan_by_entry = kk.plans_by_entry             # affine_rounds: k.affine_plan_entry
        self.sizes_once = kk.round_sizes_once              # affine_rounds: k.round_totals
        self.totals_kernel = "msm_round_totals1" if kk.totals_read_once else "msm_round_totals"
        self.lean_offsets = kk.offsets_by_counts           # msm_plan.round_offsets: k.counts_offsets
        self.passes_from_memory = kk.pass_from_free_memory   # resolve_max_entries
        self.group_reduce = kk.reduce_by_groups            # msm_plan.pippenger: group_windows
        self.plan_kernel = ("msm_affine_plan_entry4", 4) if kk.plans_four_per_thread else ("msm_affine_plan_entry", 1)
        self.binary_inv = np.int32(kk.binary_inverse)      # the round kernels' argument: their root inverse by Euclid
        self.W = xyzz_words(group)
        self.n = len(inf)
        self.bases, self.inf8, self.scalars = bases, inf.view(cupy.uint8), scalars
        self.flag = cupy.zeros(1, dtype=cupy.int32)
        self.stats = {"affine_rounds": 0, "fallbacks": 0}

    def _f(self, name):
        return kernel(self.mod, f"{self.g}_{name}", self.build)

    def alloc(self, count):
        return self.cp.empty((count, self.W), dtype=self.cp.uint32)

    def digits(self, c, w0, w1):
        keys = self.cp.empty((w1 - w0) * self.n, dtype=self.cp.uint64)
        kernel(self.mod, "msm_digits", self.build)(_grid(self.n), (THREADS,),
                                    (keys, self.scalars, self.inf8, np.int64(self.n), np.int32(c),
                                     np.int32(w0), np.int32(w1)))
        return keys

    def sort(self, keys, nb):
        if self.bit_sort:
            return sort_keys(keys, *plan.sort_bits(nb))
        keys.sort()                           # CuPy: all 64 bits
        return keys

    def sum_affine(self, src, keyed, seg_bucket, seg_first, offsets, S, total):
        out = self.alloc(total)
        if keyed:
            self._f("sum_affine")(_grid(total), (THREADS,), (out, src, self.bases, seg_bucket, seg_first, offsets,
                                                             np.int64(S), np.int64(total)))
        else:
            self._f("sum_affine_direct")(_grid(total), (THREADS,), (out, src, seg_bucket, seg_first, offsets,
                                                                    np.int64(S), np.int64(total)))
        return out

    def affine_plan(self, in_off, out_off, total):
        out = self.cp.empty(total, dtype=self.cp.uint32)
        kernel(self.mod, "msm_affine_plan", self.build)(_grid(total), (THREADS,),
                                            (out, in_off, out_off, np.int64(len(in_off) - 1), np.int64(total)))
        return out

    def affine_plan_entry(self, by, keyed, in_off, out_off, count, total):
        words = self.cp.empty(total, dtype=self.cp.uint32)
        ids = self.cp.empty(total, dtype=self.cp.uint32)
        null = np.uint64(0)                   # a null pointer, passed by value
        keys, prev = (by, null) if keyed else (null, by)
        name, e = self.plan_kernel
        kernel(self.mod, name, self.build)(_grid(-(-count // e)), (THREADS,),
                                           (words, ids, keys, prev, in_off, out_off, np.int64(count)))
        return words, ids

    def counts_offsets(self, in_off, shift):
        nb = len(in_off) - 1
        cnt = self.cp.empty(nb, dtype=self.cp.int64)
        kernel(self.mod, "msm_round_counts", self.build)(_grid(nb), (THREADS,), (cnt, in_off, np.int64(nb),
                                                                                 np.int32(shift)))
        return plan._offsets_of(cnt, self.cp)

    def round_totals(self, offsets):
        totals = self.cp.zeros(32, dtype=self.cp.uint64)
        nb = len(offsets) - 1
        kernel(self.mod, self.totals_kernel, self.build)((max(1, min(_grid(nb)[0], 4 * _sm_count())),), (THREADS,),
                                             (totals, offsets, np.int64(nb)))
        return totals

    def affine_round(self, src, keyed, plan_words, total):
        out = self.cp.empty((total, self.W // 2), dtype=self.cp.uint32)
        blocks, per = plan.round_geometry(total, plan.AFFINE_THREADS, _sm_count() * plan.AFFINE_BLOCKS_PER_SM)
        if keyed:
            self._f("affine_round_keyed" + self.lazy)((blocks,), (plan.AFFINE_THREADS,),
                                                      (out, src, self.bases, plan_words, np.int64(total),
                                                       np.int64(per), self.flag, self.binary_inv))
        else:
            self._f("affine_round" + self.lazy)((blocks,), (plan.AFFINE_THREADS,),
                                                (out, src, plan_words, np.int64(total), np.int64(per), self.flag,
                                                 self.binary_inv))
        return out

    def reset_degenerate(self):
        self.flag.fill(0)

    def degenerate(self) -> bool:
        return bool(int(self.flag[0]))

    def sum_xyzz(self, partials, seg_bucket, seg_first, offsets, S, total):
        out = self.alloc(total)
        self._f("sum_xyzz")(_grid(total), (THREADS,),
                            (out, partials, seg_bucket, seg_first, offsets, np.int64(S), np.int64(total)))
        return out

    def window_level(self, A, T, count, L, first, log_scale):
        a_out, t_out = self.alloc(count), self.alloc(count)
        self._f("window_level")(_grid(count), (THREADS,),
                                (a_out, t_out, T if A is None else A, T, np.int64(count), np.int32(L), np.int32(first),
                                 np.int32(log_scale), np.int32(A is not None)))
        return a_out, t_out

    def merge_pairs(self, partials, plan_words, total):
        out = self.alloc(total)
        self._f("merge_pairs")(_grid(total), (THREADS,), (out, partials, plan_words, np.int64(total)))
        return out

    def window_pair(self, A, T, count, first, log_scale):
        a_out = self.alloc(count)
        t_out = self.alloc(count) if log_scale else a_out     # the last level makes no T'
        warps = -(-count // 32)
        self._f("window_pair")(_grid(64 * warps), (THREADS,),
                               (a_out, t_out, T if A is None else A, T, np.int64(count), np.int32(first),
                                np.int32(log_scale)))
        return a_out, (t_out if log_scale else None)

    def concat(self, arrays):
        return arrays[0] if len(arrays) == 1 else self.cp.concatenate(arrays)

    def gather(self, points, idx):
        return self.cp.take(points, idx, axis=0)

    def group_counts(self, off, units, B, s):
        nh = units * ((1 << s) - 1) * (B >> s)
        cnt = self.cp.empty(nh, dtype=self.cp.int64)
        kernel(self.mod, "msm_group_counts", self.build)(_grid(nh), (THREADS,),
                                                     (cnt, off, np.int64(nh), np.int64(B), np.int32(s)))
        return cnt

    def group_gather(self, pts, off, off_h, count, units, B, s):
        """msm_plan.group_offsets' grouped points: pts, then H's runs (msm_group_gather); sized 2 count (H holds at
        most count entries), so no device read."""
        aw = pts.shape[1]
        out = self.cp.empty((2 * count, aw), dtype=self.cp.uint32)
        out[:count] = pts[:count]
        nh = len(off_h) - 1
        kernel(self.mod, "msm_group_gather", self.build)(_grid(nh), (THREADS,),
                                                     (out, pts, off, off_h, np.int64(nh), np.int64(B), np.int32(s),
                                                      np.int64(count), np.int32(aw)))
        return out

    def window_join(self, hi_sums, lo_sums, count, s):
        out = self.alloc(count)
        self._f("window_join")(_grid(count), (THREADS,), (out, hi_sums, lo_sums, np.int64(count), np.int32(s)))
        return out

    def combine(self, window_sums, nw, c):
        if self.host_fold:
            return window_sums
        out = self.cp.empty(self.W, dtype=self.cp.uint32)
        self._f("combine")((1,), (32,), (out, window_sums, np.int32(nw), np.int32(c)))
        return out


@device_cache(maxsize=1)
def _sm_count() -> int:
    return int(cupy.cuda.Device().attributes["MultiProcessorCount"])


def free_bytes() -> int:
    """The device's free memory, the pool's free blocks included (what K6's sort passes and P2's tables size to)."""
    return cupy.cuda.runtime.memGetInfo()[0] + cupy.get_default_memory_pool().free_bytes()


def msm_xyzz(group: int, bases, inf, scalars, c: int | None = None, max_entries: int | None = None,
             bucket_sum: str | None = None, affine_min_pairs: int | None = None, mark=None,
             pair_levels: bool | None = None, pair_merges: bool | None = None, kernels: MsmKernels | None = None):
    """Σ s_i P_i as one XYZZ point on the device (uint32[words], Montgomery limbs).

    bucket_sum: "xyzz" or "affine" (G1 only); None -> options.DEFAULT_BUCKET_SUM. affine_min_pairs:
    the affine rounds' threshold (msm_plan.AFFINE_MIN_PAIRS when None; 1 runs rounds until
    every bucket holds one point). Counts of the run land in last_stats. mark: profiling hook (msm_plan.pippenger). pair_levels: the window reduction
    by pair levels (msm_plan.reduce_windows; None -> options.DEFAULT_PAIR_LEVELS); pair_merges: the bucket sums'
    merges by pairs (msm_plan.bucket_sums; None -> options.DEFAULT_PAIR_MERGES); kernels: the code to run
    (plans.MsmKernels; None: what ships). max_entries: the keys a sort pass may hold (None:
    resolve_max_entries, from free memory under K6).
    The windows are folded on the device by one thread (the *_combine kernel); msm_g1/msm_g2 fold
    them on the host instead (msm_windows, fold.fold_windows).
    """
    return _pippenger(group, bases, inf, scalars, c, max_entries, bucket_sum, affine_min_pairs, mark,
                      False, pair_levels, pair_merges, kernels)[0]


def msm_windows(group: int, bases, inf, scalars, c: int | None = None, max_entries: int | None = None,
                bucket_sum: str | None = None, affine_min_pairs: int | None = None, mark=None,
                pair_levels: bool | None = None, pair_merges: bool | None = None, kernels: MsmKernels | None = None):
    """The window sums of msm_xyzz's MSM, not yet folded: (uint32[nw, words] on the device, c);
    arguments as msm_xyzz's. Σ_w 2^(c w) sums[w] is the MSM (fold.fold_windows)."""
    return _pippenger(group, bases, inf, scalars, c, max_entries, bucket_sum, affine_min_pairs, mark,
                      True, pair_levels, pair_merges, kernels)


def resolve_max_entries(max_entries: int | None, n: int, c: int, k) -> int:
    """The keys a sort pass may hold: max_entries when given; else, when kernel set k has K6 on, as many windows as
    PASS_MEMORY_FRACTION of the free device memory (the pool's free blocks included) holds (msm_plan.pass_entries);
    else msm_plan.PASS_ENTRIES_FLOOR."""
    if max_entries is not None:
        return int(max_entries)
    if not k.passes_from_memory:
        return plan.PASS_ENTRIES_FLOOR
    return plan.pass_entries(n, plan.num_windows(c), int(PASS_MEMORY_FRACTION * free_bytes()))


def _pippenger(group, bases, inf, scalars, c, max_entries, bucket_sum, affine_min_pairs, mark, host_fold, pair_levels=None,
               pair_merges=None, kernels: MsmKernels | None = None):
    n = _check(group, bases, inf, scalars)
    bucket_sum, min_pairs = sum_options(group, bucket_sum, affine_min_pairs)
    affine = bucket_sum == "affine"
    last_stats.clear()
    if n == 0:
        zero = cupy.zeros(xyzz_words(group), dtype=cupy.uint32)
        return (zero[None, :] if host_fold else zero), 1
    c = plan.choose_window(n, affine=affine) if c is None else int(c)
    k = _Kernels(group, bases, inf, scalars, host_fold, kernels)
    max_entries = resolve_max_entries(max_entries, n, c, k)
    out = plan.pippenger(k, n, c, max_entries, cupy, affine_min_pairs=min_pairs, mark=mark,
                         pair_levels=DEFAULT_PAIR_LEVELS if pair_levels is None else bool(pair_levels),
                         pair_merges=DEFAULT_PAIR_MERGES if pair_merges is None else bool(pair_merges))
    last_stats.update(k.stats, c=c, bucket_sum=bucket_sum, max_entries=max_entries)
    return out, c


def msm_g1(bases, inf, scalars, c: int | None = None, **kw):
    """Σ s_i P_i over G1 as a py_arkworks_bls12381 G1Point (kw: msm_xyzz's bucket_sum, ...)."""
    sums, c = msm_windows(1, bases, inf, scalars, c, **kw)
    return fold.fold_windows(1, cupy.asnumpy(sums), c)


def msm_g2(bases, inf, scalars, c: int | None = None, **kw):
    """Σ s_i P_i over G2 as a py_arkworks_bls12381 G2Point (kw: msm_xyzz's pair_levels, pair_merges, kernels)."""
    sums, c = msm_windows(2, bases, inf, scalars, c, **kw)
    return fold.fold_windows(2, cupy.asnumpy(sums), c)
