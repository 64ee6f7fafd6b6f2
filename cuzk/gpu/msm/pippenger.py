"""G1/G2 multi-scalar multiplication on the GPU (Pippenger, signed-digit windows).

Inputs stay on the device: bases uint32[n, 24] (G1) or [n, 48] (G2) affine Montgomery
limbs, inf bool[n] (a base at infinity), scalars uint32[n, 8] Fr in Montgomery form.
The kernels are in kernels/msm/pippenger.cuh and kernels/msm/affine.cuh (modules msm/g1.cu, msm/g2.cu);
the index math is cuzk/gpu/msm/plan.py.

Bucket sums: "xyzz" (mixed XYZZ adds, one thread per segment) or, for G1, "affine" (rounds of
affine pair additions with batched inversion, msm_plan.affine_rounds; a pass that meets
P + P or P + (-P) is redone in XYZZ).
"""
from __future__ import annotations

import numpy as np
from py_arkworks_bls12381 import G1Point, G2Point

from ... import field as F
from ...curve import G1_WORDS, G2_WORDS, PointError, canonical_to_ark, g1_from_ints, g2_from_ints, scalars_to_ark
from ...plans import MsmKernels, MsmPlan
from ..cub_sort import sort_keys
from ..loader import kernel
from ..per_device import device_cache
from . import plan

THREADS = 128
_AFFINE_WORDS = {1: G1_WORDS, 2: G2_WORDS}
BUCKET_SUMS = ("xyzz", "affine")
DEFAULT_BUCKET_SUM = {1: "affine", 2: "xyzz"}  # G1 affine: 2^26 550 ms vs 960 (xyzz c=16), docs/perf-log.md
# calls without an option take what ships: the plans' defaults (the backend passes its own plan per call;
# tests/proving/test_plans.py holds the plans' defaults equal to the registry's)
DEFAULT_PAIR_LEVELS = MsmPlan().pair_levels
DEFAULT_PAIR_MERGES = MsmPlan().pair_merges
SQR_BUILD = ("CUZK_FASTSQR=1",)                # the msm_g1 build with the dedicated squaring (kernel_sources.BUILDS)
CALL_BUILD = ("CUZK_FP_CALL=1",)               # msm_g1 and msm_g2 with the Fp products called
CALLEE_BUILD = ("CUZK_FASTMUL_VARIANT_FP=3",)  # the called Fp product on fastmul build 3
last_stats: dict = {}                         # of the latest msm_xyzz: affine_rounds, fallbacks
PASS_MEMORY_FRACTION = 0.75                   # K6: the share of free device memory (the pool's too) a sort pass takes


def kernel_build(group: int, kernels: MsmKernels) -> tuple[str, ...]:
    """The msm_g<group> module build (kernel_sources.BUILDS) that the kernel set selects: the squaring (G1 only), the
    called Fp products, and their callee's build (only where the products are called)."""
    call = CALL_BUILD + (CALLEE_BUILD if kernels.callee_build3 else ()) if kernels.called_fp else ()
    return (SQR_BUILD if kernels.squaring_build and group == 1 else ()) + call


def xyzz_words(group: int) -> int:
    return 2 * _AFFINE_WORDS[group]


def _grid(n: int) -> tuple[int]:
    return ((n + THREADS - 1) // THREADS,)


def _check(group: int, bases, inf, scalars) -> int:
    import cupy
    n = len(inf)
    w = _AFFINE_WORDS[group]
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
        import cupy
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
    import cupy
    return int(cupy.cuda.Device().attributes["MultiProcessorCount"])


def msm_xyzz(group: int, bases, inf, scalars, c: int | None = None, max_entries: int | None = None,
             bucket_sum: str | None = None, affine_min_pairs: int | None = None, mark=None,
             pair_levels: bool | None = None, pair_merges: bool | None = None, kernels: MsmKernels | None = None):
    """Σ s_i P_i as one XYZZ point on the device (uint32[words], Montgomery limbs).

    bucket_sum: "xyzz" or "affine" (G1 only); None -> DEFAULT_BUCKET_SUM. affine_min_pairs:
    the affine rounds' threshold (msm_plan.AFFINE_MIN_PAIRS when None; 1 runs rounds until
    every bucket holds one point). Counts of the run land in last_stats. mark: profiling hook (msm_plan.pippenger). pair_levels: the window reduction
    by pair levels (msm_plan.reduce_windows; None -> DEFAULT_PAIR_LEVELS); pair_merges: the bucket sums'
    merges by pairs (msm_plan.bucket_sums; None -> DEFAULT_PAIR_MERGES); kernels: the code to run
    (plans.MsmKernels; None: what ships). max_entries: the keys a sort pass may hold (None:
    resolve_max_entries, from free memory under K6).
    The windows are folded on the device by one thread (the *_combine kernel); msm_g1/msm_g2 fold
    them on the host instead (msm_windows, fold_windows).
    """
    return _pippenger(group, bases, inf, scalars, c, max_entries, bucket_sum, affine_min_pairs, mark,
                      False, pair_levels, pair_merges, kernels)[0]


def msm_windows(group: int, bases, inf, scalars, c: int | None = None, max_entries: int | None = None,
                bucket_sum: str | None = None, affine_min_pairs: int | None = None, mark=None,
                pair_levels: bool | None = None, pair_merges: bool | None = None, kernels: MsmKernels | None = None):
    """The window sums of msm_xyzz's MSM, not yet folded: (uint32[nw, words] on the device, c);
    arguments as msm_xyzz's. Σ_w 2^(c w) sums[w] is the MSM (fold_windows)."""
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
    import cupy
    free = cupy.cuda.runtime.memGetInfo()[0] + cupy.get_default_memory_pool().free_bytes()
    return plan.pass_entries(n, plan.num_windows(c), int(PASS_MEMORY_FRACTION * free))


def sum_options(group: int, bucket_sum, affine_min_pairs) -> tuple[str, int | None]:
    """msm_xyzz's bucket_sum and affine_min_pairs resolved and checked: (bucket_sum, min_pairs or None for XYZZ)."""
    bucket_sum = DEFAULT_BUCKET_SUM[group] if bucket_sum is None else bucket_sum
    if bucket_sum not in BUCKET_SUMS:
        raise ValueError(f"bucket_sum must be one of {BUCKET_SUMS}, got {bucket_sum!r}")
    if bucket_sum == "affine" and group != 1:
        raise ValueError("affine bucket sums are implemented for G1 only")
    min_pairs = None
    if bucket_sum == "affine":
        min_pairs = plan.AFFINE_MIN_PAIRS if affine_min_pairs is None else int(affine_min_pairs)
        if min_pairs < 1:
            raise ValueError("affine_min_pairs must be >= 1")
    return bucket_sum, min_pairs


def _pippenger(group, bases, inf, scalars, c, max_entries, bucket_sum, affine_min_pairs, mark, host_fold, pair_levels=None,
               pair_merges=None, kernels: MsmKernels | None = None):
    import cupy
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


# --- host side: XYZZ limbs -> affine ints -> arkworks point ---

class Fp:
    """Fp on Python ints (the host mirror of fp_t's operations)."""
    zero, one = 0, 1

    @staticmethod
    def add(a, b): return (a + b) % F.P
    @staticmethod
    def sub(a, b): return (a - b) % F.P
    @staticmethod
    def mul(a, b): return a * b % F.P
    @staticmethod
    def neg(a): return -a % F.P
    @staticmethod
    def inv(a): return pow(a, -1, F.P)
    @staticmethod
    def is_zero(a): return a == 0


class Fp2:
    """Fp2 = Fp[u]/(u^2 + 1) on pairs of ints."""
    zero, one = (0, 0), (1, 0)

    @staticmethod
    def add(a, b): return ((a[0] + b[0]) % F.P, (a[1] + b[1]) % F.P)
    @staticmethod
    def sub(a, b): return ((a[0] - b[0]) % F.P, (a[1] - b[1]) % F.P)
    @staticmethod
    def mul(a, b): return ((a[0] * b[0] - a[1] * b[1]) % F.P, (a[0] * b[1] + a[1] * b[0]) % F.P)
    @staticmethod
    def neg(a): return (-a[0] % F.P, -a[1] % F.P)
    @staticmethod
    def inv(a):
        d = pow(a[0] * a[0] + a[1] * a[1], -1, F.P)
        return (a[0] * d % F.P, -a[1] * d % F.P)
    @staticmethod
    def is_zero(a): return a == (0, 0)


FIELDS = {1: Fp, 2: Fp2}


def xyzz_rows(group: int, limbs: np.ndarray) -> list[tuple]:
    """uint32[k, words] Montgomery limbs (one conversion for all) -> k points (X, Y, ZZ, ZZZ) as field
    ints (pairs for G2)."""
    rows = np.asarray(limbs, dtype=np.uint32).reshape(-1, xyzz_words(group))
    v = [int(t) for t in F.fp_from_limbs(rows.reshape(-1, F.FP_LIMBS))]
    per = rows.shape[1] // F.FP_LIMBS                 # 4 (G1) or 8 (G2) Fp values a point
    if group == 1:
        return [tuple(v[i * per:(i + 1) * per]) for i in range(len(rows))]
    return [tuple((v[i * per + 2 * j], v[i * per + 2 * j + 1]) for j in range(4)) for i in range(len(rows))]


def xyzz_from_limbs(group: int, limbs: np.ndarray) -> tuple:
    """uint32[words] Montgomery limbs -> (X, Y, ZZ, ZZZ) as field ints (pairs for G2)."""
    return xyzz_rows(group, limbs)[0]


def _affine(f, pt: tuple, iZZZ):
    """(x, y) of a finite XYZZ point, given 1 / ZZZ: the one-inversion path of ec/curve.cuh."""
    X, Y, ZZ, _ = pt
    iZ = f.mul(iZZZ, ZZ)
    return f.mul(X, f.mul(iZ, iZ)), f.mul(Y, iZZZ)


def xyzz_to_affine(group: int, pt: tuple):
    """(X, Y, ZZ, ZZZ) -> (x, y), or None for infinity."""
    f = FIELDS[group]
    if f.is_zero(pt[2]):
        return None
    return _affine(f, pt, f.inv(pt[3]))


def to_ark(group: int, limbs: np.ndarray):
    """A device result (downloaded XYZZ limbs) as an arkworks point; checked on the curve and in
    the subgroup, so a malformed result raises cuzk.curve.PointError."""
    xy = xyzz_to_affine(group, xyzz_from_limbs(group, limbs))
    if xy is None:
        return (G1Point if group == 1 else G2Point).identity()
    return g1_from_ints(*xy) if group == 1 else g2_from_ints(*xy)


def fold_windows(group: int, sums: np.ndarray, c: int):
    """Σ_w 2^(c w) sums[w] as an arkworks point, from downloaded XYZZ window sums (uint32[nw, words]):
    one batched inversion to affine, an on-curve check of each, then one arkworks multiexp (on the
    device this fold is a chain of c (nw - 1) doublings in one thread: ~4 ms in G1, ~19 ms in G2).
    The result is checked in the subgroup, so a malformed window sum raises cuzk.curve.PointError."""
    f, cls = FIELDS[group], (G1Point if group == 1 else G2Point)
    live = [(w, p) for w, p in enumerate(xyzz_rows(group, sums)) if not f.is_zero(p[2])]
    if not live:
        return cls.identity()
    prefix, acc = [], f.one                  # batched inversion of the ZZZ's
    for _, p in live:
        prefix.append(acc)
        acc = f.mul(acc, p[3])
    inv = f.inv(acc)
    xy = [None] * len(live)
    for i in range(len(live) - 1, -1, -1):
        pt = live[i][1]
        xy[i] = _affine(f, pt, f.mul(inv, prefix[i]))
        inv = f.mul(inv, pt[3])
    b = (4, 4) if group == 2 else 4          # y^2 = x^3 + 4 (G1), x^3 + 4(1 + u) (G2)
    for x, y in xy:
        if f.mul(y, y) != f.add(f.mul(f.mul(x, x), x), b):
            raise PointError(f"G{group} MSM window sum is not on the curve")
    flat = [v for x, y in xy for v in ((x, y) if group == 1 else (*x, *y))]
    raw = F.ints_to_limbs(np.array(flat, dtype=object), F.FP_LIMBS).reshape(len(xy), -1)
    points = canonical_to_ark(group, raw, np.zeros(len(xy), dtype=bool))
    out = cls.multiexp_unchecked(points, scalars_to_ark([pow(2, c * w, F.R) for w, _ in live]))
    if not out.is_in_subgroup():
        raise PointError(f"G{group} MSM result is not in the subgroup")
    return out


def msm_g1(bases, inf, scalars, c: int | None = None, **kw):
    """Σ s_i P_i over G1 as a py_arkworks_bls12381 G1Point (kw: msm_xyzz's bucket_sum, ...)."""
    import cupy
    sums, c = msm_windows(1, bases, inf, scalars, c, **kw)
    return fold_windows(1, cupy.asnumpy(sums), c)


def msm_g2(bases, inf, scalars, c: int | None = None, **kw):
    """Σ s_i P_i over G2 as a py_arkworks_bls12381 G2Point (kw: msm_xyzz's pair_levels, pair_merges, kernels)."""
    import cupy
    sums, c = msm_windows(2, bases, inf, scalars, c, **kw)
    return fold_windows(2, cupy.asnumpy(sums), c)
