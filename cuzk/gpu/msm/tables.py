"""P2's table plans on the host: for the G1 MSM over precomputed multiples of fixed bases (fixed.py), the window c and
the table blocks t a budget of device memory holds, by choose_window's cost model (plan.py).

With t table blocks, block j = 2^(c G j) P (block 0: the bases themselves), window w = j G + g of every scalar is a
digit of table row j n + i at weight 2^(c g): the nw windows fold into G = ceil(nw / t) groups that share buckets.
Memory is traded for that: (t - 1) n rows of 96 bytes, and one group's sort pass holds t n keys.
"""
from __future__ import annotations

from dataclasses import dataclass

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


def budget_bytes(free: int, gib: float | None = None) -> int:
    """P2's memory budget for the tables and one group's sort pass: `gib` GiB when given (the caller's
    $CUZK_TABLE_GIB; refused, with both sizes, beyond the free device memory), else BUDGET_FRACTION of the free
    memory. free: the free bytes (on the device: pippenger.free_bytes(), the pool's free blocks included)."""
    if gib is None:
        return int(BUDGET_FRACTION * free)
    if not gib > 0:
        raise ValueError(f"a table budget of {gib!r} GiB must be above 0")
    if gib * 2**30 > free:
        raise ValueError(f"the table budget (CUZK_TABLE_GIB) asks for {gib:.2f} GiB but only {free / 2**30:.2f} GiB of "
                         "device memory is free")
    return int(gib * 2**30)
