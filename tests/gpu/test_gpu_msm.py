"""GPU MSM (kernels/msm/pippenger.cuh) and curve formulas (kernels/ec/curve.cuh via kernels/ec/ops.cu) against
arkworks, on fresh random inputs. Run on the device machine: `pytest -m gpu tests/gpu/test_gpu_msm.py`."""
import random

import numpy as np
import pytest
from py_arkworks_bls12381 import G1Point, Scalar

from cuzk import field as F
from cuzk.curve import ark_to_limbs, g1_affine_ints, g2_affine_ints
from cuzk.plans import MSM_KERNELS, msm_kernels_of as K
from gpu_msm_cases import CLS, distinct_bases, edge_case, fr_dev, rand_points, seed, upload, want

KERNEL_CODES = frozenset(MSM_KERNELS)   # every kernel toggle: what ships

pytestmark = pytest.mark.gpu

AFF = {1: g1_affine_ints, 2: g2_affine_ints}


@pytest.fixture(scope="module")
def cp():
    import cupy
    return cupy


def run(cp, group, pts, scalars, c=None):
    from cuzk.gpu.msm.pippenger import msm_g1, msm_g2
    b, inf, s = upload(cp, group, pts, scalars)
    return (msm_g1 if group == 1 else msm_g2)(b, inf, s, c=c)


@pytest.mark.parametrize("n", [1, 2, 31, 100, 512, 1000, 4097, 1 << 16])
def test_g1_msm_random(cp, n):
    rng = random.Random(seed())
    pts = rand_points(1, n, rng)
    sc = [rng.randrange(F.R) for _ in range(n)]
    assert run(cp, 1, pts, sc) == want(1, pts, sc)


@pytest.mark.parametrize("n", [1, 31, 300, 2048])
def test_g2_msm_random(cp, n):
    rng = random.Random(seed())
    pts = rand_points(2, n, rng, distinct=16)
    sc = [rng.randrange(F.R) for _ in range(n)]
    assert run(cp, 2, pts, sc) == want(2, pts, sc)


@pytest.mark.parametrize("group", [1, 2])
@pytest.mark.parametrize("c", [1, 2, 5, 8, 13, 16])
def test_msm_window_sizes(cp, group, c):
    rng = random.Random(seed())
    n = 200
    pts = rand_points(group, n, rng, distinct=16)
    sc = [rng.randrange(F.R) for _ in range(n)]
    assert run(cp, group, pts, sc, c=c) == want(group, pts, sc)


@pytest.mark.parametrize("group", [1, 2])
@pytest.mark.parametrize("c,n", [(1, 50), (2, 200), (5, 200), (8, 1000), (11, 3000), (13, 2000), (16, 300)])
def test_pair_levels_window_sizes(cp, group, c, n):
    """R1: the window reduction by pair levels (window_pair) gives arkworks' MSM at every level shape."""
    from cuzk.gpu.msm.pippenger import msm_g1, msm_g2
    rng = random.Random(seed())
    pts = rand_points(group, n, rng, distinct=16)
    sc = [rng.randrange(F.R) for _ in range(n)]
    b, inf, s = upload(cp, group, pts, sc)
    assert (msm_g1 if group == 1 else msm_g2)(b, inf, s, c=c, pair_levels=True) == want(group, pts, sc)


def test_pair_levels_g1_large_affine(cp):
    from cuzk.gpu.msm.pippenger import msm_g1
    rng = random.Random(seed())
    n = 1 << 16
    pts = rand_points(1, n, rng)
    sc = [rng.randrange(F.R) for _ in range(n)]
    b, inf, s = upload(cp, 1, pts, sc)
    for c in (None, 20):                         # the default window, and a first level of L = 64
        assert msm_g1(b, inf, s, c=c, bucket_sum="affine", pair_levels=True) == want(1, pts, sc)


EDGE_KINDS = ["zero", "one", "r-1", "mixed", "same", "small", "all-inf", "repeat-point"]


@pytest.mark.parametrize("n", [1, 7, 600])
@pytest.mark.parametrize("kind", EDGE_KINDS)
@pytest.mark.parametrize("group", [1, 2])
def test_msm_edge_cases(cp, group, kind, n):
    rng = random.Random(seed())
    pts, sc = edge_case(group, kind, n, rng)
    assert run(cp, group, pts, sc) == want(group, pts, sc)


@pytest.mark.parametrize("kind", EDGE_KINDS)
@pytest.mark.parametrize("group", [1, 2])
def test_pair_levels_edge_cases(cp, group, kind):
    """R1 and R2 (pair levels, pair merges) alone and together on every edge case ("same": one bucket a
    window, so 600 / 8 partials merged over 7 pair levels)."""
    from cuzk.gpu.msm.pippenger import msm_g1, msm_g2
    rng = random.Random(seed())
    pts, sc = edge_case(group, kind, 600, rng)
    b, inf, s = upload(cp, group, pts, sc)
    f = msm_g1 if group == 1 else msm_g2
    for levels, merges in ((True, False), (False, True), (True, True)):
        assert f(b, inf, s, c=7, pair_levels=levels, pair_merges=merges) == want(group, pts, sc), (levels, merges)


@pytest.mark.parametrize("group", [1, 2])
def test_pair_merges_chains_first_above_the_threshold(cp, group, monkeypatch):
    """R2 with PAIR_MERGE_MAX lowered: levels above it merge by MERGE_S chains, the rest in pairs."""
    from cuzk.gpu.msm import plan as msm_plan
    from cuzk.gpu.msm.sums import batch_add
    from cuzk.gpu.msm.pippenger import msm_g1, msm_g2
    rng = random.Random(seed())
    pts, sc = edge_case(group, "same", 2000, rng)                # one bucket a window: 250 partials
    b, inf, s = upload(cp, group, pts, sc)
    monkeypatch.setattr(msm_plan, "PAIR_MERGE_MAX", 2000)       # 13.7K partials: one chain level to 1612, pairs
    assert (msm_g1 if group == 1 else msm_g2)(b, inf, s, c=5, pair_merges=True) == want(group, pts, sc)
    monkeypatch.setattr(msm_plan, "PAIR_MERGE_MAX", 64)         # a batch sum's 250 partials: chains to 63, pairs
    idx = cp.arange(len(pts), dtype=cp.int64)
    assert batch_add(group, b, inf, idx, pair_merges=True) == want(group, pts, [1] * len(pts))


@pytest.mark.parametrize("group", [1, 2])
@pytest.mark.parametrize("n", [31, 3000])
def test_pair_merges_random(cp, group, n):
    from cuzk.gpu.msm.pippenger import msm_g1, msm_g2
    rng = random.Random(seed())
    pts = rand_points(group, n, rng, distinct=16)
    sc = [rng.randrange(F.R) for _ in range(n)]
    b, inf, s = upload(cp, group, pts, sc)
    for c in (4, 11):
        assert (msm_g1 if group == 1 else msm_g2)(b, inf, s, c=c, pair_merges=True) == want(group, pts, sc)


def test_msm_negated_pairs_cancel(cp):
    rng = random.Random(seed())
    p = rand_points(1, 40, rng, distinct=40)
    pts = p + [-q for q in p]
    sc = [rng.randrange(F.R) for _ in range(40)] * 2
    assert run(cp, 1, pts, sc) == G1Point.identity()


def test_msm_large_same_scalar_g1(cp):
    """2^16 points with one scalar: a 2^16-entry bucket per window, split and merged."""
    rng = random.Random(seed())
    n = 1 << 16
    pts = rand_points(1, n, rng)
    sc = [rng.randrange(F.R)] * n
    assert run(cp, 1, pts, sc) == want(1, pts, sc)


def test_msm_multi_pass(cp):
    """Windows split over several sort passes (max_entries below n * windows)."""
    from cuzk.gpu.msm.fold import to_ark
    from cuzk.gpu.msm.pippenger import msm_xyzz
    rng = random.Random(seed())
    n = 3000
    pts = rand_points(1, n, rng)
    sc = [rng.randrange(F.R) for _ in range(n)]
    b, inf, s = upload(cp, 1, pts, sc)
    got = to_ark(1, cp.asnumpy(msm_xyzz(1, b, inf, s, c=9, max_entries=3 * n)))
    assert got == want(1, pts, sc)


def test_msm_inputs_untouched_and_empty(cp):
    from cuzk.gpu.msm.pippenger import msm_g1
    rng = random.Random(seed())
    pts = rand_points(1, 50, rng)
    sc = [rng.randrange(F.R) for _ in range(50)]
    b, inf, s = upload(cp, 1, pts, sc)
    b0, s0 = b.copy(), s.copy()
    msm_g1(b, inf, s)
    assert (b == b0).all() and (s == s0).all()
    e = cp.zeros((0, 24), dtype=cp.uint32)
    assert msm_g1(e, cp.zeros(0, dtype=bool), cp.zeros((0, 8), dtype=cp.uint32)) == G1Point.identity()


def test_msm_rejects_bad_shapes(cp):
    from cuzk.gpu.msm.pippenger import msm_g1
    b = cp.zeros((4, 24), dtype=cp.uint32)
    with pytest.raises(ValueError):
        msm_g1(b, cp.zeros(4, dtype=bool), cp.zeros((3, 8), dtype=cp.uint32))
    with pytest.raises(ValueError):
        msm_g1(cp.zeros((4, 48), dtype=cp.uint32), cp.zeros(4, dtype=bool), cp.zeros((4, 8), dtype=cp.uint32))
    with pytest.raises(ValueError):
        msm_g1(b, cp.zeros(4, dtype=bool), cp.zeros((4, 8), dtype=cp.uint32), c=0)


# --- ec/curve.cuh alone, through kernels/ec/ops.cu ---

def _xyzz_host(group, pt, rng):
    """arkworks point -> XYZZ Montgomery limbs with a random z (infinity: zeros)."""
    from cuzk.gpu.msm.fold import FIELDS
    f = FIELDS[group]
    xy = AFF[group](pt)
    if xy is None:
        vals = [f.zero] * 4
    else:
        z = rng.randrange(1, F.P) if group == 1 else (rng.randrange(F.P), rng.randrange(1, F.P))
        zz = f.mul(z, z)
        zzz = f.mul(zz, z)
        vals = [f.mul(xy[0], zz), f.mul(xy[1], zzz), zz, zzz]
    flat = vals if group == 1 else [c for v in vals for c in v]
    return F.fp_to_limbs(np.array(flat, dtype=object)).reshape(-1)


def _cases(group, rng):
    """(a, b) pairs: random, P + P, P + (-P), infinity on either or both sides."""
    cls = CLS[group]
    ps = [cls() * Scalar(rng.randrange(1, F.R)) for _ in range(12)]
    pairs = [(ps[i], ps[i + 1]) for i in range(0, 8, 2)]
    pairs += [(ps[8], ps[8]), (ps[9], -ps[9]), (cls.identity(), ps[10]), (ps[11], cls.identity()),
              (cls.identity(), cls.identity())]
    return pairs


KERNEL_SETS = [(), ("S1",), ("L1",), ("S1", "L1"), ("I1",), ("S1", "L1", "I1"), ("I1", "I2"), ("S1", "L1", "I1", "I2"),
               ("K1",), ("K3",), ("K4",), ("K5",), ("K4", "K5"), ("K5", "K8"), ("K9",), ("K4", "K11"), ("K15",),
               ("L1", "K15"), ("S1", "L1", "I1", "I2", "K1", "K3", "K4", "K5", "K8", "K9"),
               ("S1", "L1", "I1", "I2", "K1", "K3", "K4", "K5", "K8", "K9", "K11"),
               ("S1", "L1", "I1", "I2", "K1", "K3", "K4", "K5", "K8", "K9", "K11", "K15")]


@pytest.mark.parametrize("kind", ["random", *EDGE_KINDS])
@pytest.mark.parametrize("group", [1, 2])
def test_kernel_opts_same_window_sums(cp, group, kind):
    """S1 (the kernels built with the dedicated squaring), L1 (affine rounds with products left < 2p), I1 (the
    products called, not inlined), I2 (I1's callee on Fp build 3), K1 (the keys sorted by their bucket bits
    alone), K3 (offsets searched in the keys), K4 (round plans by entry), K5 (the rounds' sizes read once), K8
    (their totals in one read of the offsets), K9 (each round's offsets from one counts kernel), K11 (K4's plans
    4 entries a thread), K15 (the rounds' block inverses by Euclid), alone and
    together, give the default kernels' window sums word for word (XYZZ words of a fresh MSM each) and
    arkworks' MSM; G1 in XYZZ and with affine rounds forced (lambda^2 and the block inversions square, the lazy
    products feed them), G2 in XYZZ."""
    from cuzk.gpu.msm.fold import fold_windows
    from cuzk.gpu.msm.pippenger import msm_windows
    rng = random.Random(seed())
    n = 3000
    if kind == "random":
        pts = rand_points(group, n, rng, distinct=64)
        sc = [rng.randrange(F.R) for _ in range(n)]
    else:
        pts, sc = edge_case(group, kind, n, rng)
    b, inf, s = upload(cp, group, pts, sc)
    sums = ["xyzz", "affine"] if group == 1 else ["xyzz"]
    for bucket_sum in sums:
        kw = dict(c=9, bucket_sum=bucket_sum, affine_min_pairs=1 if bucket_sum == "affine" else None)
        ref, c = msm_windows(group, b, inf, s, kernels=K(()), **kw)
        ref = cp.asnumpy(ref)
        assert fold_windows(group, ref, c) == want(group, pts, sc), bucket_sum
        for ko in KERNEL_SETS[1:]:
            got, c2 = msm_windows(group, b, inf, s, kernels=K(ko), **kw)
            assert c2 == c and np.array_equal(ref, cp.asnumpy(got)), (bucket_sum, ko)


@pytest.mark.parametrize("kind", ["random", *EDGE_KINDS])
@pytest.mark.parametrize("c", [4, 9, 12])
def test_k10_group_reduce(cp, kind, c, monkeypatch):
    """K10 on every pass (GROUP_MIN_BUCKETS lowered), G1 with affine rounds forced: arkworks' MSM on fresh random
    inputs and every edge case, one pass and several, with the K4/K5/K9 plans on and off; the group rounds run on
    random inputs (distinct points: no fallback)."""
    from cuzk.gpu.msm import plan as plan
    from cuzk.gpu.msm.pippenger import last_stats, msm_g1
    monkeypatch.setattr(plan, "GROUP_MIN_BUCKETS", 1)
    rng = random.Random(seed())
    n = 3000
    if kind == "random":
        a, b, inf = distinct_bases(cp, n, rng)
        sc = [rng.randrange(F.R) for _ in range(n)]
        w = G1Point() * Scalar(sum(x * y for x, y in zip(a, sc)) % F.R)
        s = fr_dev(cp, sc)
    else:
        pts, sc = edge_case(1, kind, n, rng)
        b, inf, s = upload(cp, 1, pts, sc)
        w = want(1, pts, sc)
    for ko in (KERNEL_CODES | {"K10"}, (KERNEL_CODES | {"K10"}) - {"K4", "K5", "K9"}):
        for max_entries in (None, 2 * n):
            got = msm_g1(b, inf, s, c=c, bucket_sum="affine", affine_min_pairs=1, kernels=K(ko),
                         max_entries=max_entries)
            assert got == w, (kind, sorted(ko), max_entries)
            if kind == "random":
                assert last_stats["affine_rounds"] > 0 and last_stats["group_rounds"] > 0
                assert last_stats["fallbacks"] == 0


@pytest.mark.parametrize("c", [2, 5, 12])
def test_k10_group_counts_kernel(cp, c):
    """msm_group_counts gives group_offsets' H run lengths (the transposed count array), over fresh random runs with
    empty buckets and outsized ones, several units."""
    from cuzk.gpu.msm import plan as plan
    from cuzk.gpu.msm.pippenger import _Kernels
    rng = np.random.default_rng(seed())
    B, s, units = 1 << (c - 1), plan.group_split(c), int(rng.integers(1, 5))
    counts = rng.poisson(1.5, units * B) * (rng.random(units * B) < 0.7)
    counts[rng.integers(units * B)] += 5000
    off = cp.asarray(np.concatenate(([0], np.cumsum(counts))).astype(np.int64))
    count = int(off[-1])
    k = _Kernels(1, None, cp.zeros(1, dtype=cp.uint8), None, kernels=K(KERNEL_CODES))
    got = plan.group_offsets(off, count, units, B, s, cp, k)
    ref = plan.group_offsets(off, count, units, B, s, cp)
    assert all(cp.array_equal(a, b) for a, b in zip(got[:2], ref[:2])) and got[2] == ref[2]


def test_k10_group_degenerate_falls_back(cp, monkeypatch):
    """Two buckets of one lo whose sums are equal (b1 + b2 under digits 1 and 2^s + 1): a group round meets
    x1 == x2: the flag, read once after the bucket and the group rounds, sends the pass to XYZZ; the MSM is
    arkworks'."""
    from cuzk.gpu.msm import plan as plan
    from cuzk.gpu.msm.pippenger import last_stats, msm_g1
    monkeypatch.setattr(plan, "GROUP_MIN_BUCKETS", 1)
    rng = random.Random(seed())
    c = 8
    s = plan.group_split(c)
    p1, p2 = (G1Point() * Scalar(rng.randrange(1, F.R)) for _ in range(2))
    pts, sc = [p1, p2, p1, p2], [1, 1, (1 << s) + 1, (1 << s) + 1]
    b, inf, sd = upload(cp, 1, pts, sc)
    got = msm_g1(b, inf, sd, c=c, bucket_sum="affine", affine_min_pairs=1, kernels=K(KERNEL_CODES | {"K10"}))
    assert got == want(1, pts, sc)
    assert last_stats["affine_rounds"] > 0 and last_stats["group_rounds"] > 0 and last_stats["fallbacks"] == 1


@pytest.mark.parametrize("log_n,c", [(20, 20), (18, 16)])
def test_k10_at_its_threshold_matches_the_bucket_reduction(cp, log_n, c):
    """K10 at the registry's GROUP_MIN_BUCKETS and AFFINE_MIN_PAIRS (2^20 bases made on the device, c = 20: 13 windows of
    2^19 buckets), against the same MSM reduced bucket by bucket (the path arkworks checks above): the same point."""
    from cuzk import micro_ops as micro
    from cuzk.gpu.msm import plan as plan
    from cuzk.gpu.msm.pippenger import last_stats, msm_g1
    bases, inf = micro.independent_bases(log_n, 1, distinct_log=log_n, seed=seed())
    scalars = micro.random_fr(1 << log_n, seed=seed())
    ref = msm_g1(bases, inf, scalars, c=c, bucket_sum="affine", kernels=K(KERNEL_CODES - {"K10"}))
    assert last_stats.get("group_rounds", 0) == 0
    got = msm_g1(bases, inf, scalars, c=c, bucket_sum="affine", kernels=K(KERNEL_CODES | {"K10"}))
    assert got == ref
    if plan.num_windows(c) << (c - 1) >= plan.GROUP_MIN_BUCKETS:
        assert last_stats["group_rounds"] > 0 and last_stats["fallbacks"] == 0


@pytest.mark.parametrize("group", [1, 2])
def test_k6_pass_size_from_free_memory(cp, group, monkeypatch):
    """K6: with the device's free memory every window fits one pass; with none free, the floor's passes (balanced);
    an explicit max_entries wins. Each MSM is arkworks'."""
    from cuzk.gpu.msm import pippenger as gmsm
    from cuzk.gpu.msm import plan as plan
    rng = random.Random(seed())
    n, c = 3000, 9
    nw = plan.num_windows(c)
    pts = rand_points(group, n, rng, distinct=64)
    sc = [rng.randrange(F.R) for _ in range(n)]
    b, inf, s = upload(cp, group, pts, sc)
    fn = gmsm.msm_g1 if group == 1 else gmsm.msm_g2
    ko = KERNEL_CODES | {"K6"}
    w = want(group, pts, sc)
    assert fn(b, inf, s, c=c, kernels=K(ko)) == w and gmsm.last_stats["max_entries"] == nw * n
    monkeypatch.setattr(gmsm, "PASS_MEMORY_FRACTION", 0.0)
    monkeypatch.setattr(plan, "PASS_ENTRIES_FLOOR", 7 * n)
    assert fn(b, inf, s, c=c, kernels=K(ko)) == w and gmsm.last_stats["max_entries"] == plan.pass_entries(n, nw, 0)
    assert gmsm.last_stats["max_entries"] == -(-nw // -(-nw // 7)) * n                # 29 windows: 5 passes of 6
    assert fn(b, inf, s, c=c, kernels=K(ko - {"K6"})) == w and gmsm.last_stats["max_entries"] == 7 * n
    assert fn(b, inf, s, c=c, kernels=K(ko), max_entries=2 * n) == w and gmsm.last_stats["max_entries"] == 2 * n


@pytest.mark.parametrize("shape", ["random", "zeros", "one", "skewed"])
def test_plan_entry_and_round_totals_kernels(cp, shape):
    """msm_affine_plan_entry (K4) writes every word of msm_affine_plan's (the search) and the bucket of every output,
    into poisoned outputs, round after round (its ids feeding the next); msm_round_totals (K5) gives every round's size
    (numpy's sum of ceil(cnt / 2^r)), as does K8's kernel, and K9's counts kernel gives the generic offsets, over
    fresh random bucket counts with empty buckets and outsized ones."""
    from cuzk.gpu.msm import plan as plan
    from cuzk.gpu.loader import kernel
    from cuzk.gpu.msm.options import kernel_build
    from cuzk.gpu.msm.pippenger import _grid, _Kernels
    rng = np.random.default_rng(seed())
    nb = int(rng.integers(1000, 5000))
    counts = {"random": rng.poisson(6, nb), "zeros": rng.poisson(6, nb) * (rng.random(nb) < 0.4),
              "one": np.zeros(nb, dtype=np.int64), "skewed": rng.poisson(2, nb)}[shape].astype(np.int64)
    if shape == "one":
        counts[int(rng.integers(nb))] = 70001
    if shape == "skewed":
        counts[rng.integers(nb, size=3)] += 20000
    off = np.concatenate(([0], np.cumsum(counts)))
    k = _Kernels(1, None, cp.zeros(1, dtype=cp.uint8), None, kernels=K(KERNEL_CODES - {"K8"}))
    want_t = [int(sum((int(c) + (1 << r) - 1) >> r for c in counts)) for r in range(32)]
    assert [int(t) for t in k.round_totals(cp.asarray(off)).get()] == want_t            # K5's kernel
    k8 = _Kernels(1, None, cp.zeros(1, dtype=cp.uint8), None, kernels=K(KERNEL_CODES | {"K8"}))
    assert [int(t) for t in k8.round_totals(cp.asarray(off)).get()] == want_t          # K8's kernel
    b = np.repeat(np.arange(nb, dtype=np.uint64), counts)
    keys = cp.asarray((b << np.uint64(32)) | (np.arange(len(b), dtype=np.uint64) << np.uint64(1)))
    by, keyed, in_off, rounds = keys, True, cp.asarray(off), 0
    while True:
        out_off, total = plan.round_offsets(in_off, cp)
        if total == int(in_off[-1]):
            break
        k9 = _Kernels(1, None, cp.zeros(1, dtype=cp.uint8), None, kernels=K(KERNEL_CODES | {"K9"}))
        for shift in (1, 2):                  # K9's counts kernel and cumsum: the generic offsets
            assert cp.array_equal(k9.counts_offsets(in_off, shift),
                                  plan._offsets_of(plan._ceil_shift(in_off[1:] - in_off[:-1], shift), cp)), shift
        want_w = k.affine_plan(in_off, out_off, total)
        words = cp.full(total, 0xFFFFFFFF, dtype=cp.uint32)
        ids = cp.full(total, 0xFFFFFFFF, dtype=cp.uint32)
        kernel(k.mod, "msm_affine_plan_entry", kernel_build(1, K(KERNEL_CODES)))(
            _grid(int(in_off[-1])), (128,), (words, ids, by if keyed else np.uint64(0), np.uint64(0) if keyed else by, in_off,
                                            out_off, np.int64(int(in_off[-1]))))
        assert cp.array_equal(words, want_w), rounds
        assert np.array_equal(cp.asnumpy(ids), np.repeat(np.arange(nb), np.diff(cp.asnumpy(out_off)))), rounds
        got_w, got_ids = k.affine_plan_entry(by, keyed, in_off, out_off, int(in_off[-1]), total)
        assert cp.array_equal(got_w, words) and cp.array_equal(got_ids, ids)
        k11 = _Kernels(1, None, cp.zeros(1, dtype=cp.uint8), None, kernels=K(KERNEL_CODES | {"K11"}))
        got_w, got_ids = k11.affine_plan_entry(by, keyed, in_off, out_off, int(in_off[-1]), total)   # K11: 4 a thread
        assert cp.array_equal(got_w, words) and cp.array_equal(got_ids, ids), rounds
        assert total == want_t[rounds + 1]
        by, keyed, in_off, rounds = ids, False, out_off, rounds + 1
    assert rounds >= 3


@pytest.mark.parametrize("group", [1, 2])
@pytest.mark.parametrize("n", [1, 31, 5000])
def test_kernel_opts_batch_add(cp, group, n, monkeypatch):
    """S1 and L1 in the batch sums, one at a time and several together (M2's batch_add_many); affine rounds
    forced (G1), so L1's round kernels run."""
    from cuzk.gpu.msm import plan as msm_plan
    from cuzk.gpu.msm.sums import batch_add, batch_add_many
    monkeypatch.setattr(msm_plan, "AFFINE_MIN_PAIRS", 1)
    rng = random.Random(seed())
    pts = rand_points(group, n, rng)
    limbs, inf = ark_to_limbs(group, pts)
    b, i = cp.asarray(limbs), cp.asarray(inf)
    total = CLS[group].identity()
    for p in pts:
        total = total + p
    half = cp.arange(n // 2, dtype=cp.int64)
    part = batch_add(group, b, i, half, kernels=K(()))
    for ko in KERNEL_SETS[1:]:
        assert batch_add(group, b, i, kernels=K(ko)) == total, ko
        assert batch_add_many(group, [(b, i, None), (b, i, half)], kernels=K(ko)) == [total, part], ko


@pytest.mark.parametrize("group", [1, 2])
def test_ec_ops_vs_arkworks(cp, group):
    from cuzk.gpu.loader import kernel
    from cuzk.gpu.msm.fold import to_ark, xyzz_words
    rng = random.Random(seed())
    pairs = _cases(group, rng)
    n = len(pairs)
    W = xyzz_words(group)
    A = cp.asarray(np.stack([_xyzz_host(group, a, rng) for a, _ in pairs]))
    B = cp.asarray(np.stack([_xyzz_host(group, b, rng) for _, b in pairs]))
    blimbs, binf = ark_to_limbs(group, [b for _, b in pairs])
    Baff, Binf = cp.asarray(blimbs), cp.asarray(binf.astype(np.uint8))
    g = f"g{group}"
    grid = ((n + 63) // 64,)

    def out():
        return cp.full((n, W), 0xFFFFFFFF, dtype=cp.uint32)

    o_add, o_madd, o_mmem, o_dbl, o_neg = out(), out(), out(), out(), out()
    kernel("ec/ops", f"{g}_add")(grid, (64,), (o_add, A, B, np.int64(n)))
    kernel("ec/ops", f"{g}_add_affine")(grid, (64,), (o_madd, A, Baff, Binf, np.int64(n)))
    kernel("ec/ops", f"{g}_add_affine_mem")(grid, (64,), (o_mmem, A, Baff, Binf, np.int64(n)))
    kernel("ec/ops", f"{g}_dbl")(grid, (64,), (o_dbl, A, np.int64(n)))
    kernel("ec/ops", f"{g}_neg")(grid, (64,), (o_neg, A, np.int64(n)))
    o_aff = cp.full((n, W // 2), 0xFFFFFFFF, dtype=cp.uint32)
    o_inf = cp.full(n, 7, dtype=cp.uint8)
    kernel("ec/ops", f"{g}_to_affine")(grid, (64,), (o_aff, o_inf, A, np.int64(n)))
    h = {k: cp.asnumpy(v) for k, v in dict(add=o_add, madd=o_madd, mmem=o_mmem, dbl=o_dbl, neg=o_neg).items()}
    aff, ainf = cp.asnumpy(o_aff), cp.asnumpy(o_inf)
    for i, (a, b) in enumerate(pairs):
        assert to_ark(group, h["add"][i]) == a + b, i
        assert to_ark(group, h["madd"][i]) == a + b, i
        assert to_ark(group, h["mmem"][i]) == a + b, i
        assert to_ark(group, h["dbl"][i]) == a + a, i
        assert to_ark(group, h["neg"][i]) == -a, i
        assert bool(ainf[i]) == (AFF[group](a) is None), i
        if not ainf[i]:
            got = F.fp_from_limbs(aff[i].reshape(-1, F.FP_LIMBS)).tolist()
            xy = AFF[group](a)
            flat = list(xy) if group == 1 else [*xy[0], *xy[1]]
            assert got == flat, i


@pytest.mark.parametrize("pairs", [False, True])
@pytest.mark.parametrize("group", [1, 2])
@pytest.mark.parametrize("n", [0, 1, 2, 31, 1000, 5000])
@pytest.mark.parametrize("threads_min", [None, 32])
def test_batch_add_matches_arkworks(cp, group, n, threads_min, pairs, monkeypatch):
    """gpu/msm/sums.py: Σ bases[idx] over a random subset (with repeats of a row, a base at infinity
    and a repeated point among the bases), against arkworks' sum; threads_min 32: the long
    segments that large sums use (segment_size)."""
    from cuzk.gpu.msm import plan as mp
    from cuzk.gpu.msm.sums import batch_add
    if threads_min:
        monkeypatch.setattr(mp, "THREADS_MIN", threads_min)
    rng = random.Random(seed())
    pts = rand_points(group, max(n, 8), rng)
    limbs, inf = ark_to_limbs(group, pts)
    idx = [i for i in range(len(pts)) if rng.random() < 0.6][:n] if n else []
    if n > 3:
        idx.append(idx[0])                                   # the same row twice: a doubling
    total = CLS[group].identity()
    for i in idx:
        total = total + pts[i]
    got = batch_add(group, cp.asarray(limbs), cp.asarray(inf), cp.asarray(np.array(idx, dtype=np.int64)),
                    pair_merges=pairs)
    assert got == total
    with pytest.raises(IndexError):
        batch_add(group, cp.asarray(limbs), cp.asarray(inf), cp.asarray(np.array([len(pts)], dtype=np.int64)))
# --- affine bucket sums (kernels/msm/affine.cuh) ---

def run_affine(cp, b, inf, s, **kw):
    from cuzk.gpu.msm.pippenger import last_stats, msm_g1
    kw.setdefault("affine_min_pairs", 1)
    got = msm_g1(b, inf, s, bucket_sum="affine", **kw)
    return got, dict(last_stats)


@pytest.mark.parametrize("n", [1, 31, 512, 1000, 1 << 16])
def test_g1_affine_random(cp, n):
    rng = random.Random(seed())
    a, b, inf = distinct_bases(cp, n, rng)
    sc = [rng.randrange(F.R) for _ in range(n)]
    got, st = run_affine(cp, b, inf, fr_dev(cp, sc))
    assert got == G1Point() * Scalar(sum(x * y for x, y in zip(a, sc)) % F.R)
    assert st["fallbacks"] == 0 and st["bucket_sum"] == "affine"
    assert st["affine_rounds"] > 0 or n == 1


@pytest.mark.parametrize("c", [1, 2, 5, 8, 13, 16, 20])
def test_g1_affine_window_sizes(cp, c):
    """Random scalars, 50 of them twice (distinct bases): every window has buckets of two or more, so
    the affine rounds run at every c (with 300 random scalars alone, c = 20 often gave no pair at all)."""
    rng = random.Random(seed())
    n = 300
    a, b, inf = distinct_bases(cp, n, rng)
    sc = [rng.randrange(F.R) for _ in range(n - 50)]
    sc += sc[:50]
    got, st = run_affine(cp, b, inf, fr_dev(cp, sc), c=c)
    assert got == G1Point() * Scalar(sum(x * y for x, y in zip(a, sc)) % F.R)
    assert st["fallbacks"] == 0 and st["affine_rounds"] > 0


@pytest.mark.parametrize("min_pairs", [1 << 10, 1 << 14, None])
def test_g1_affine_threshold(cp, min_pairs):
    """Rounds stop below the threshold and the XYZZ segment sums finish the buckets."""
    rng = random.Random(seed())
    n = 1 << 14
    a, b, inf = distinct_bases(cp, n, rng)
    sc = [rng.randrange(F.R) for _ in range(n)]
    got, st = run_affine(cp, b, inf, fr_dev(cp, sc), c=10, affine_min_pairs=min_pairs)
    assert got == G1Point() * Scalar(sum(x * y for x, y in zip(a, sc)) % F.R)
    assert st["fallbacks"] == 0
    assert (st["affine_rounds"] > 0) == (min_pairs is not None)       # default 2^20: none at this size


def test_g1_affine_large_same_scalar_and_multi_pass(cp):
    """2^16 points, one scalar: one 2^16-point bucket per window (16 rounds); then windows over
    several sort passes."""
    rng = random.Random(seed())
    n = 1 << 16
    a, b, inf = distinct_bases(cp, n, rng)
    s = rng.randrange(F.R)
    got, st = run_affine(cp, b, inf, fr_dev(cp, [s] * n))
    assert got == G1Point() * Scalar(sum(a) * s % F.R)
    assert st["fallbacks"] == 0 and st["affine_rounds"] >= 16
    sc = [rng.randrange(F.R) for _ in range(n)]
    got, st = run_affine(cp, b, inf, fr_dev(cp, sc), c=9, max_entries=3 * n)
    assert got == G1Point() * Scalar(sum(x * y for x, y in zip(a, sc)) % F.R)
    assert st["fallbacks"] == 0


@pytest.mark.parametrize("n", [1, 7, 600])
@pytest.mark.parametrize("kind", EDGE_KINDS)
def test_g1_affine_edge_cases(cp, kind, n):
    rng = random.Random(seed())
    pts, sc = edge_case(1, kind, n, rng)
    b, inf, s = upload(cp, 1, pts, sc)
    got, _ = run_affine(cp, b, inf, s)
    assert got == want(1, pts, sc)


def test_g1_affine_repeated_base_falls_back(cp):
    """One base repeated: pairs P + P and P + (-P) are met, the passes are redone in XYZZ."""
    rng = random.Random(seed())
    n = 600
    pts = [G1Point() * Scalar(rng.randrange(1, F.R))] * n
    sc = [rng.randrange(F.R) for _ in range(n)]
    b, inf, s = upload(cp, 1, pts, sc)
    got, st = run_affine(cp, b, inf, s)
    assert got == want(1, pts, sc)
    assert st["fallbacks"] >= 1


def test_g1_affine_negated_pairs_cancel(cp):
    rng = random.Random(seed())
    p = rand_points(1, 40, rng, distinct=40)
    pts = p + [-q for q in p]
    sc = [rng.randrange(F.R) for _ in range(40)] * 2
    b, inf, s = upload(cp, 1, pts, sc)
    assert run_affine(cp, b, inf, s)[0] == G1Point.identity()


def test_g1_affine_inputs_untouched(cp):
    rng = random.Random(seed())
    _, b, inf = distinct_bases(cp, 500, rng)
    s = fr_dev(cp, [rng.randrange(F.R) for _ in range(500)])
    b0, s0 = b.copy(), s.copy()
    run_affine(cp, b, inf, s)
    assert (b == b0).all() and (s == s0).all()


def test_msm_bucket_sum_bad_args(cp):
    from cuzk.gpu.msm.pippenger import msm_xyzz
    b1, b2 = cp.zeros((4, 24), dtype=cp.uint32), cp.zeros((4, 48), dtype=cp.uint32)
    inf, s = cp.zeros(4, dtype=bool), cp.zeros((4, 8), dtype=cp.uint32)
    with pytest.raises(ValueError):
        msm_xyzz(2, b2, inf, s, bucket_sum="affine")
    with pytest.raises(ValueError):
        msm_xyzz(1, b1, inf, s, bucket_sum="projective")
    with pytest.raises(ValueError):
        msm_xyzz(1, b1, inf, s, bucket_sum="affine", affine_min_pairs=0)


def test_g1_xyzz_window_20(cp):
    """c = 20 (2^19 buckets a window) through the multi-level window reduction, XYZZ sums."""
    rng = random.Random(seed())
    n = 200
    pts = rand_points(1, n, rng, distinct=16)
    sc = [rng.randrange(F.R) for _ in range(n)]
    assert run(cp, 1, pts, sc, c=20) == want(1, pts, sc)


@pytest.mark.parametrize("n", [2, 3, 1000])
def test_batch_add_affine_rounds(cp, n, monkeypatch):
    """The G1 batch addition through affine pair rounds (every round taken: threshold 1) on
    distinct points, and the fallback when a row repeats (P + P in a pair)."""
    from cuzk.gpu.msm import options
    from cuzk.gpu.msm import plan as mp
    from cuzk.gpu.msm import sums as gb
    monkeypatch.setitem(options.DEFAULT_BUCKET_SUM, 1, "affine")
    monkeypatch.setattr(mp, "AFFINE_MIN_PAIRS", 1)
    rng = random.Random(seed())
    pts = [G1Point() * Scalar(rng.randrange(1, F.R)) for _ in range(n)]
    limbs, inf = ark_to_limbs(1, pts)
    total = G1Point.identity()
    for p in pts:
        total = total + p
    assert gb.batch_add(1, cp.asarray(limbs), cp.asarray(inf)) == total
    idx = np.array([0, 0] + list(range(1, n)), dtype=np.int64)       # rows 0, 0 pair up: degenerate
    assert gb.batch_add(1, cp.asarray(limbs), cp.asarray(inf), cp.asarray(idx)) == total + pts[0]


def test_g1_affine_second_round_degenerate_falls_back(cp):
    """P0 + P1 == P2 + P3: the first round's sums meet x1 == x2 in the second; flagged, redone in XYZZ.
    Four bases a, b, c, a + b - c with one scalar: each window's bucket holds the four in order."""
    rng = random.Random(seed())
    x, y, z = (rng.randrange(1, F.R) for _ in range(3))
    a = [x, y, z, (x + y - z) % F.R]
    pts = [G1Point() * Scalar(v) for v in a]
    s = rng.randrange(F.R)
    b, inf, sd = upload(cp, 1, pts, [s] * 4)
    got, st = run_affine(cp, b, inf, sd)
    assert got == G1Point() * Scalar(sum(a) * s % F.R)
    assert st["fallbacks"] >= 1
