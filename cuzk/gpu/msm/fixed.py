"""The G1 MSM over precomputed multiples of fixed bases (optimization P2; kernels/msm/fixed.cu).

A resident key's H bases never change between proofs. With t table blocks, block j = 2^(c G j) P (block 0: the
bases themselves), window w = j G + g of every scalar is a digit of table row j n + i at weight 2^(c g): the nw
windows fold into G = ceil(nw / t) groups that share buckets. The sort passes and the affine rounds see the same
entries as before (one per window and point, over the table's rows), but the window reduction folds G groups
instead of nw windows, so c can grow past what a reduction per window pays for, and a wider c means fewer
windows, hence fewer entries to sort and add. Memory is traded for that: (t - 1) n rows of 96 bytes, and one
group's sort pass holds t n keys.

Everything but the digits (msm_digits_fixed) is msm_plan.pippenger over cuzk/gpu/msm/pippenger.py's kernels, so the
rounds, their XYZZ fallback (x1 == x2, e.g. repeated bases) and the reduction are the tested ones.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..loader import kernel
from . import pippenger as gmsm
from . import plan

ROW_BYTES = 96             # one affine G1 row: x and y, 12 words each
C_MIN = 16                 # narrower windows never pay for tables (choose_window picks c = 20-22 without them)


@dataclass(frozen=True)
class TablePlan:
    """c: the window; t: table blocks (1 = no tables, the plain MSM); groups: G = ceil(nw / t)."""
    c: int
    t: int
    groups: int

    @property
    def windows(self) -> int:
        return plan.num_windows(self.c)

    @property
    def doublings(self) -> int:
        """Block j + 1 is block j doubled this many times."""
        return self.c * self.groups

    def table_bytes(self, n: int) -> int:
        """Device memory the tables add to the key (block 0 is the key's own section)."""
        return (self.t - 1) * n * ROW_BYTES

    def pass_bytes(self, n: int) -> int:
        """Peak of one group's sort pass: t n keys at msm_plan.PASS_BYTES_PER_ENTRY."""
        return self.t * n * plan.PASS_BYTES_PER_ENTRY


def cost(n: int, c: int, t: int, groups: int) -> float:
    """choose_window's model (Fp-multiplication equivalents, affine bucket sums) for tables of t blocks: every
    window's n entries added and sorted, the empty slots (t G > nw) sorted too, G groups of buckets reduced."""
    nw = plan.num_windows(c)
    return (n * nw * (plan.ADD_AFFINE + plan.SORT_KEY) + n * (t * groups - nw) * plan.SORT_KEY
            + groups * (1 << (c - 1)) * plan.REDUCE_BUCKET)


def choose_tables(n: int, budget: int, c: int | None = None) -> TablePlan:
    """The cheapest plan (cost) whose tables and one group's sort pass fit in `budget` bytes of device memory; the
    fewest blocks among equal costs. t n stays below 2^31 (a key's index). c: only that window. Without room for
    any tables, the plain MSM's plan (t = 1) when its pass fits, else ValueError."""
    n = max(int(n), 1)
    best = None
    for cc in ([int(c)] if c is not None else range(C_MIN, plan.C_LIMIT + 1)):
        nw = plan.num_windows(cc)
        for t in range(1, nw + 1):
            groups = -(-nw // t)
            if -(-nw // groups) != t or t * n >= 1 << 31:     # t: the fewest blocks that G groups need
                continue
            tp = TablePlan(cc, t, groups)
            if tp.table_bytes(n) + tp.pass_bytes(n) > budget:
                continue
            key = (cost(n, cc, t, groups), t)
            if best is None or key < best[0]:
                best = (key, tp)
    if best is None:
        raise ValueError(f"no MSM plan fits {budget / 2**30:.2f} GiB for {n} bases "
                         f"(one window's sort pass needs {n * plan.PASS_BYTES_PER_ENTRY / 2**30:.2f} GiB)")
    return best[1]


BUDGET_FRACTION = 0.5      # without a budget in GiB: this share of the free device memory (the rest: other phases)


def budget_bytes(free: int | None = None, gib: float | None = None) -> int:
    """P2's memory budget for the tables and one group's sort pass: `gib` GiB when given (the caller's
    $CUZK_TABLE_GIB; refused, with both sizes, beyond the free device memory), else BUDGET_FRACTION of the free
    memory. free: the free bytes (None: the device's, the pool's free blocks included)."""
    if free is None:
        import cupy
        free = cupy.cuda.runtime.memGetInfo()[0] + cupy.get_default_memory_pool().free_bytes()
    if gib is None:
        return int(BUDGET_FRACTION * free)
    if not gib > 0:
        raise ValueError(f"a table budget of {gib!r} GiB must be above 0")
    if gib * 2**30 > free:
        raise ValueError(f"the table budget (CUZK_TABLE_GIB) asks for {gib:.2f} GiB but only {free / 2**30:.2f} GiB of "
                         "device memory is free")
    return int(gib * 2**30)


class FixedTables:
    """The table blocks of one key section on the device, [t n, 24] words; block 0 is the section's own limbs, which
    the section then reads through a view of the table (no second copy). release() gives the memory back."""

    def __init__(self, bases, tp: TablePlan):
        import cupy
        if bases.group != 1 or bases.rows is not None:
            raise ValueError("tables are made for a dense G1 section")
        self.plan, self.bases = tp, bases
        n = self.n = len(bases)
        self.inf8 = bases.inf.view(cupy.uint8)
        self.limbs = cupy.empty((tp.t * n, bases.limbs.shape[1]), dtype=cupy.uint32)
        self.limbs[:n] = bases.limbs
        bases.limbs = self.limbs[:n]
        fn = kernel("msm/fixed", "msm_fixed_table")
        blocks = max(1, -(-n // TABLE_THREADS))
        for j in range(1, tp.t):
            fn((blocks,), (TABLE_THREADS,), (self.limbs[j * n:], self.limbs[(j - 1) * n:], self.inf8,
                                             np.int64(n), np.int32(tp.doublings)))

    @property
    def nbytes(self) -> int:
        """What the tables add to the key."""
        return 0 if self.limbs is None else self.plan.table_bytes(self.n)

    def release(self) -> None:
        """Back to the section alone: its limbs copied out of block 0, the table freed."""
        import cupy
        if self.limbs is None:
            return
        self.bases.limbs = self.limbs[:self.n].copy()
        self.limbs = None
        cupy.get_default_memory_pool().free_all_blocks()


TABLE_THREADS = 128        # msm_fixed_table's __launch_bounds__


def _kernels(tables: FixedTables, scalars, kernels):
    import cupy

    class FixedKernels(gmsm._Kernels):
        """msm.py's kernel set over the table's rows, with msm_digits_fixed's keys."""

        def digits(self, c, g0, g1):
            tp = tables.plan
            keys = cupy.empty((g1 - g0) * tp.t * self.n, dtype=cupy.uint64)
            kernel("msm/fixed", "msm_digits_fixed")(
                gmsm._grid(self.n), (gmsm.THREADS,),
                (keys, self.scalars, self.inf8, np.int64(self.n), np.int32(c), np.int32(tp.groups),
                 np.int32(tp.t), np.int32(g0), np.int32(g1)))
            return keys

    k = FixedKernels(1, tables.limbs[:tables.n], tables.bases.inf, scalars, True, kernels)
    k.bases = tables.limbs                  # the rows the keys index: every block
    return k


def msm_windows(tables: FixedTables, scalars, bucket_sum: str | None = None, affine_min_pairs: int | None = None,
                mark=None, pair_levels: bool | None = None, pair_merges: bool | None = None, kernels=None,
                max_entries: int | None = None):
    """The group sums of Σ s_i P_i over the tables' section: (uint32[G, words] on the device, c), Σ_g 2^(c g)
    sums[g] being the MSM (msm.fold_windows). Options as msm.msm_xyzz's."""
    import cupy
    if tables.limbs is None:
        raise ValueError("the tables were released")
    tp, n = tables.plan, tables.n
    gmsm._check(1, tables.limbs[:n], tables.bases.inf, scalars)
    bucket_sum, min_pairs = gmsm.sum_options(1, bucket_sum, affine_min_pairs)
    gmsm.last_stats.clear()
    k = _kernels(tables, scalars, kernels)
    if max_entries is None:
        max_entries = plan.PASS_ENTRIES_FLOOR
        if k.passes_from_memory:            # K6: as many groups a pass as free memory holds
            free = cupy.cuda.runtime.memGetInfo()[0] + cupy.get_default_memory_pool().free_bytes()
            max_entries = plan.pass_entries(tp.t * n, tp.groups, int(gmsm.PASS_MEMORY_FRACTION * free))
    sums = plan.pippenger(k, tp.t * n, tp.c, int(max_entries), cupy, affine_min_pairs=min_pairs, mark=mark,
                          pair_levels=gmsm.DEFAULT_PAIR_LEVELS if pair_levels is None else bool(pair_levels),
                          pair_merges=gmsm.DEFAULT_PAIR_MERGES if pair_merges is None else bool(pair_merges),
                          windows=tp.groups)
    gmsm.last_stats.update(k.stats, c=tp.c, t=tp.t, groups=tp.groups, bucket_sum=bucket_sum,
                           max_entries=int(max_entries))
    return sums, tp.c


def msm_g1(tables: FixedTables, scalars, **kw):
    """Σ s_i P_i over the tables' section as a py_arkworks_bls12381 G1Point (kw: msm_windows')."""
    import cupy
    sums, c = msm_windows(tables, scalars, **kw)
    return gmsm.fold_windows(1, cupy.asnumpy(sums), c)
