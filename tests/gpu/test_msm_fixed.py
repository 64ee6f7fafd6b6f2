"""P2, the MSM over precomputed multiples of fixed bases (cuzk/gpu/msm/fixed.py, kernels/msm/fixed.cu), on the CPU:
its plan and memory sizes, and msm_digits_fixed transcribed and run through the very schedule the GPU runs
(msm_plan.pippenger with windows = G) over the stand-in group Z_r and over real G1 points, against arkworks."""
import random

import numpy as np
import pytest
from py_arkworks_bls12381 import G1Point, Scalar

from cuzk.field import FR_LIMBS, R
from cuzk.gpu.msm import tables
from cuzk.gpu.msm import plan as plan
from test_msm_model import EDGE, XYZZ, IntGroup, ModelKernels, ark_affine, curve_case, int_case

GIB = 1 << 30


# --- the plan ---

def test_choose_tables_every_plan_covers_the_windows():
    for n in (1, 1000, 1 << 20, 1 << 26, 1 << 27):
        for budget in (n * 100, n * 400, n * 2000, 200 * GIB):
            try:
                tp = tables.choose_tables(n, budget)
            except ValueError:
                assert budget < n * plan.PASS_BYTES_PER_ENTRY      # not even one window's pass fits
                continue
            nw = tp.windows
            assert tp.t * tp.groups >= nw and -(-nw // tp.t) == tp.groups and -(-nw // tp.groups) == tp.t
            assert tp.table_bytes(n) + tp.pass_bytes(n) <= budget
            assert tp.t * n < 1 << 31


def test_choose_tables_at_2_26():
    """With room for every block, one group; the model's choice is c = 24, 11 windows in one set of buckets."""
    n = 1 << 26
    tp = tables.choose_tables(n, 140 * GIB)
    assert (tp.c, tp.t, tp.groups) == (24, 11, 1)
    assert tp.table_bytes(n) == 10 * n * 96
    plain = tables.cost(n, 20, 1, plan.num_windows(20))              # choose_window's c = 20 without tables
    assert tables.cost(n, tp.c, tp.t, tp.groups) < 0.9 * plain
    assert plan.choose_window(n, affine=True) == 20


def test_choose_tables_small_budget():
    n = 1 << 20
    tp = tables.choose_tables(n, n * plan.PASS_BYTES_PER_ENTRY + 1)   # one window's pass, no room for a table
    assert tp.t == 1 and tp.groups == tp.windows and tp.table_bytes(n) == 0
    with pytest.raises(ValueError, match="no MSM plan fits"):
        tables.choose_tables(n, n * plan.PASS_BYTES_PER_ENTRY - 1)
    assert tables.choose_tables(n, 200 * GIB, c=20).c == 20


# --- msm_digits_fixed transcribed ---

def fixed_digits_thread(limbs, skip, i, n, c, G, t, g0, g1, keys):
    """msm_digits_fixed for one scalar (window_digit of msm/digit.cuh, then the key of window w = j G + g)."""
    half, mask = 1 << (c - 1), (1 << c) - 1
    carry = 0
    for w in range((t - 1) * G + g1):            # the last block's groups past g1 are left out
        pos = w * c
        limb, off = pos >> 5, pos & 31
        sel = lambda k: limbs[k] if k < FR_LIMBS else 0           # noqa: E731 (limb_sel)
        bits = sel(limb) >> off
        if off:
            bits |= (sel(limb + 1) << (32 - off)) & 0xFFFFFFFF
        bits &= mask
        d = bits + carry
        neg = d > half
        d, carry = ((1 << c) - d, 1) if neg else (d, 0)
        j, g = divmod(w, G)
        if not g0 <= g < g1:
            continue
        key = plan.ZERO_KEY
        if d != 0 and not skip:
            key = (((g - g0) * half + d - 1) << 32) | ((j * n + i) << 1) | int(neg)
        keys[((g - g0) * t + j) * n + i] = key


class FixedModel(ModelKernels):
    """ModelKernels over the table's t n rows (built on the host), with msm_digits_fixed's keys."""

    def __init__(self, G, bases, inf, scalars, tp, **kw):
        n = len(bases)
        table = [None] * (tp.t * n)
        for i, p in enumerate(bases):
            for j in range(tp.t):
                table[j * n + i] = p if inf[i] else G.mul(p, 1 << (tp.doublings * j))
        super().__init__(G, table, inf, scalars, **kw)
        self.n_bases, self.tp = n, tp

    def digits(self, c, g0, g1):
        n, tp = self.n_bases, self.tp
        keys = np.zeros((g1 - g0) * tp.t * n, dtype=np.uint64)
        for i in range(n):
            fixed_digits_thread(self.limbs[i], bool(self.inf[i]), i, n, c, tp.groups, tp.t, g0, g1, keys)
        return keys


class IntMul(IntGroup):
    def mul(self, p, k): return p * k % R


class CurveMul(XYZZ):
    def mul(self, p, k):
        """k p for an affine point (x, y) as ints: through arkworks, back to affine ints."""
        from cuzk.curve import g1_from_ints
        return ark_affine(1, g1_from_ints(*p) * Scalar(k % R))


def model_fixed(G, bases, inf, sc, tp, max_entries=1 << 28, min_pairs=None, **kw):
    k = FixedModel(G, bases, inf, sc, tp, **kw)
    out = plan.pippenger(k, tp.t * len(bases), tp.c, max_entries, np, affine_min_pairs=min_pairs,
                         windows=tp.groups)
    return out, k


def plans(c):
    """Plans of window c from no tables to one group: t = 1, 2, about sqrt(nw) and nw (each with its fewest G)."""
    nw = plan.num_windows(c)
    ts = sorted({1, min(2, nw), max(1, round(nw ** 0.5)), nw})
    return [tables.TablePlan(c, -(-nw // -(-nw // t)), -(-nw // t)) for t in ts]


@pytest.mark.parametrize("c", [1, 3, 8, 13, 24])
def test_fixed_digits_reconstruct_scalar(c):
    """Every window's digit lands in its group's buckets at its table row: Σ ±d 2^(c g) 2^(c G j) = s."""
    rng = random.Random(c)
    scalars = EDGE + [rng.randrange(R) for _ in range(30)]
    n = len(scalars)
    for tp in plans(c):
        k = FixedModel(IntMul(), [1] * n, [False] * n, scalars, tp)
        B = 1 << (c - 1)
        keys = k.digits(c, 0, tp.groups)
        total = [0] * n
        for key in map(int, keys):
            if key == plan.ZERO_KEY:
                continue
            bucket, idx, neg = key >> 32, (key & 0xFFFFFFFF) >> 1, key & 1
            g, d = divmod(bucket, B)
            j, i = divmod(idx, n)
            assert g < tp.groups and j < tp.t
            total[i] += (-1 if neg else 1) * (d + 1) << (c * g + tp.doublings * j)
        assert total == scalars, tp


def test_fixed_digit_passes_match_one_pass():
    rng = random.Random(2)
    sc = [rng.randrange(R) for _ in range(11)]
    tp = tables.TablePlan(5, 3, 18)                  # 52 windows of 5 bits, 3 blocks, 18 groups
    k = FixedModel(IntMul(), [1] * 11, [False] * 11, sc, tp)
    full = k.digits(5, 0, 18)
    parts = []
    for g0, g1 in plan.window_passes(3 * 11, 18, max_entries=100):
        keys = k.digits(5, g0, g1)
        valid = keys != np.uint64(plan.ZERO_KEY)
        keys[valid] += np.uint64(g0 * 16) << np.uint64(32)
        parts.append(keys)
    assert (np.concatenate(parts) == full).all()


@pytest.mark.parametrize("n,c", [(1, 3), (31, 5), (100, 4), (300, 9), (1000, 12)])
@pytest.mark.parametrize("kind", ["random", "edge", "same", "small"])
def test_fixed_schedule_int_group(n, c, kind):
    bases, inf, sc, want = int_case(n, n * 7 + c, kind)
    for tp in plans(c):
        assert model_fixed(IntMul(), bases, inf, sc, tp)[0] == want, tp


def test_fixed_schedule_passes_and_affine_rounds():
    """Several groups a pass and a pass a group, with affine rounds (min_pairs 1) and K10's groups."""
    bases, inf, sc, want = int_case(200, 9, "edge")
    tp = tables.TablePlan(6, 3, 15)
    for max_entries in (600, 1800, 1 << 28):
        assert model_fixed(IntMul(), bases, inf, sc, tp, max_entries)[0] == want
        got, k = model_fixed(IntMul(), bases, inf, sc, tp, max_entries, min_pairs=1, group_reduce=True)
        assert got == want and k.stats["affine_rounds"] > 0


def test_fixed_schedule_all_zero_and_all_infinite():
    bases, inf, sc, _ = int_case(40, 4)
    tp = tables.TablePlan(5, 13, 4)
    assert model_fixed(IntMul(), bases, inf, [0] * 40, tp)[0] == 0
    assert model_fixed(IntMul(), bases, [True] * 40, sc, tp)[0] == 0


@pytest.mark.parametrize("n,c,repeat", [(1, 3, False), (23, 4, False), (40, 5, True)])
def test_fixed_schedule_on_curve_vs_arkworks(n, c, repeat):
    """Real G1 tables (2^(c G j) P by arkworks), the affine rounds with their batch inversion, and the XYZZ
    fallback that a repeated base forces: arkworks' MSM."""
    from cuzk.gpu.msm.fold import xyzz_to_affine
    bases, inf, sc, want = curve_case(1, n, n * 5 + c + repeat, repeat)
    for tp in (plans(c)[1], plans(c)[-1]) if n > 1 else plans(c)[-1:]:
        got, k = model_fixed(CurveMul(1), bases, inf, sc, tp, min_pairs=1)
        assert xyzz_to_affine(1, got) == ark_affine(1, want), tp
        assert (k.stats["fallbacks"] > 0) == repeat


def test_table_doublings_match_scalar():
    """Block j + 1 = 2^(c G) block j (msm_fixed_table doubles c G times): the weight of row j n + i."""
    P = G1Point() * Scalar(12345)
    tp = tables.TablePlan(4, 3, 22)
    blk = [P]
    for _ in range(tp.t - 1):
        q = blk[-1]
        for _ in range(tp.doublings):
            q = q + q
        blk.append(q)
    assert [b == P * Scalar(pow(2, tp.doublings * j, R)) for j, b in enumerate(blk)] == [True] * tp.t


# --- the budget and the memory line ---

def test_budget_bytes():
    free = 100 * GIB
    assert tables.budget_bytes(free) == int(tables.BUDGET_FRACTION * free)
    assert tables.budget_bytes(free, 12.5) == int(12.5 * GIB)
    for bad, why in ((0.0, "above 0"), (-3.0, "above 0"), (float("nan"), "above 0"),
                     (150.0, "asks for 150.00 GiB but only 100.00 GiB")):
        with pytest.raises(ValueError, match=why):
            tables.budget_bytes(free, bad)


def test_the_table_budget_is_read_from_the_environment_at_the_edge():
    """$CUZK_TABLE_GIB is parsed once (cuzk/environment.py), naming the variable when it is not a number of GiB."""
    from cuzk.environment import table_gib
    assert table_gib({}) is None and table_gib({"CUZK_TABLE_GIB": " "}) is None
    assert table_gib({"CUZK_TABLE_GIB": " 12.5 "}) == 12.5
    for bad, why in (("lots", "not a number"), ("0", "above 0"), ("-3", "above 0"), ("nan", "above 0"),
                     ("inf", "above 0")):
        with pytest.raises(ValueError, match=why) as e:
            table_gib({"CUZK_TABLE_GIB": bad})
        assert "CUZK_TABLE_GIB" in str(e.value)


def test_device_memory_line():
    from cuzk.cli.common import device_memory_line
    mem = {"key_bytes": 47 * GIB, "table_bytes": 0, "work_bytes": 30 * GIB, "device_total_bytes": 140 * GIB}
    line = device_memory_line(mem)
    assert line.startswith("device memory: key 47.00 GiB, no P2 tables, work buffers 30.00 GiB")
    assert line.endswith("of 140.00 GiB")
    mem |= {"table_bytes": 12 * GIB, "tables": {"c": 22, "blocks": 2, "groups": 6, "made_s": 15.04}}
    assert "P2 tables 12.00 GiB (c = 22, 2 blocks, 6 groups, made in 15.0 s)" in device_memory_line(mem)
