"""The G1 MSM over precomputed multiples of fixed bases (optimization P2; kernels/msm/fixed.cu).

A resident key's H bases never change between proofs. With t table blocks, block j = 2^(c G j) P (block 0: the
bases themselves), window w = j G + g of every scalar is a digit of table row j n + i at weight 2^(c g): the nw
windows fold into G = ceil(nw / t) groups that share buckets. The sort passes and the affine rounds see the same
entries as before (one per window and point, over the table's rows), but the window reduction folds G groups
instead of nw windows, so c can grow past what a reduction per window pays for, and a wider c means fewer
windows, hence fewer entries to sort and add. Memory is traded for that: (t - 1) n rows of 96 bytes, and one
group's sort pass holds t n keys. The plan (c, t) a memory budget holds is chosen on the host (tables.py).

Everything but the digits (msm_digits_fixed) is msm_plan.pippenger over cuzk/gpu/msm/pippenger.py's kernels, so the
rounds, their XYZZ fallback (x1 == x2, e.g. repeated bases) and the reduction are the tested ones.
"""
from __future__ import annotations

import cupy
import numpy as np

from ..loader import kernel
from . import pippenger as gmsm
from . import fold, plan
from .options import DEFAULT_PAIR_LEVELS, DEFAULT_PAIR_MERGES, sum_options
from .tables import TablePlan


class FixedTables:
    """The table blocks of one key section on the device, [t n, 24] words; block 0 is the section's own limbs, which
    the section then reads through a view of the table (no second copy). release() gives the memory back."""

    def __init__(self, bases, tp: TablePlan):
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
        if self.limbs is None:
            return
        self.bases.limbs = self.limbs[:self.n].copy()
        self.limbs = None
        cupy.get_default_memory_pool().free_all_blocks()


TABLE_THREADS = 128        # msm_fixed_table's __launch_bounds__


def _kernels(tables: FixedTables, scalars, kernels):

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
    sums[g] being the MSM (fold.fold_windows). Options as pippenger.msm_xyzz's."""
    if tables.limbs is None:
        raise ValueError("the tables were released")
    tp, n = tables.plan, tables.n
    gmsm._check(1, tables.limbs[:n], tables.bases.inf, scalars)
    bucket_sum, min_pairs = sum_options(1, bucket_sum, affine_min_pairs)
    gmsm.last_stats.clear()
    k = _kernels(tables, scalars, kernels)
    if max_entries is None:
        max_entries = plan.PASS_ENTRIES_FLOOR
        if k.passes_from_memory:            # K6: as many groups a pass as free memory holds
            max_entries = plan.pass_entries(tp.t * n, tp.groups, int(gmsm.PASS_MEMORY_FRACTION * gmsm.free_bytes()))
    sums = plan.pippenger(k, tp.t * n, tp.c, int(max_entries), cupy, affine_min_pairs=min_pairs, mark=mark,
                          pair_levels=DEFAULT_PAIR_LEVELS if pair_levels is None else bool(pair_levels),
                          pair_merges=DEFAULT_PAIR_MERGES if pair_merges is None else bool(pair_merges),
                          windows=tp.groups)
    gmsm.last_stats.update(k.stats, c=tp.c, t=tp.t, groups=tp.groups, bucket_sum=bucket_sum,
                           max_entries=int(max_entries))
    return sums, tp.c


def msm_g1(tables: FixedTables, scalars, **kw):
    """Σ s_i P_i over the tables' section as a py_arkworks_bls12381 G1Point (kw: msm_windows')."""
    sums, c = msm_windows(tables, scalars, **kw)
    return fold.fold_windows(1, cupy.asnumpy(sums), c)
