"""Several G1 MSMs as one (cuzk/gpu/msm/many.py) and several batch sums as one (batch_add.sum_xyzz_many),
optimization M2, against arkworks and the one-at-a-time paths, on fresh random inputs.
Run on the device machine: `pytest -m gpu tests/gpu/test_gpu_msm_many.py`."""
import random

import numpy as np
import pytest
from py_arkworks_bls12381 import G1Point, Scalar

from cuzk import field as F
from cuzk.curve import ark_to_limbs
from cuzk.plans import MSM_KERNELS, msm_kernels_of as K
from gpu_msm_cases import CLS, distinct_bases, fr_dev, rand_points, seed, upload, want

KERNEL_CODES = frozenset(MSM_KERNELS)   # every kernel toggle: what ships

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def cp():
    import cupy
    return cupy


def many_case(cp, sizes, rng, distinct=64):
    """One part per size: random points and scalars, with a zero scalar, a scalar 1 and r - 1 where
    the part is large enough. Returns (host (points, scalars) per part, device parts)."""
    host, dev = [], []
    for m in sizes:
        pts = rand_points(1, m, rng, distinct)
        sc = [rng.randrange(F.R) for _ in range(m)]
        for j, v in enumerate([0, 1, F.R - 1][:m if m > 1 else 0]):
            sc[j] = v
        host.append((pts, sc))
        dev.append(upload(cp, 1, pts, sc))
    return host, dev


# --- msm_g1_many ---

@pytest.mark.parametrize("pairs", [False, True])
@pytest.mark.parametrize("bucket_sum", ["xyzz", "affine"])
@pytest.mark.parametrize("c", [None, 5, 13])
def test_many_matches_arkworks_and_msm_g1(cp, bucket_sum, c, pairs):
    """Parts of 1, 0, 31, 5000 and 1000 points (an empty one, a zero scalar, a scalar 1): each result is
    arkworks' multiexp of the part and msm_g1's on the part alone."""
    from cuzk.gpu.msm.pippenger import last_stats, msm_g1
    from cuzk.gpu.msm.many import msm_g1_many
    rng = random.Random(seed())
    sizes = [1, 0, 31, 5000, 1000]
    host, dev = many_case(cp, sizes, rng)
    got = msm_g1_many(dev, c=c, bucket_sum=bucket_sum, pair_levels=pairs, pair_merges=pairs)
    assert last_stats["parts"] == 4 and last_stats["bucket_sum"] == bucket_sum
    assert c is None or last_stats["c"] == c
    assert len(got) == len(sizes)
    for (pts, sc), d, g in zip(host, dev, got):
        assert g == want(1, pts, sc)
        assert g == msm_g1(*d, c=c, bucket_sum=bucket_sum)


@pytest.mark.parametrize("sizes", [[0], [0, 0, 0], [7], [600], [1, 1, 1], [0, 300, 0]])
def test_many_few_and_empty_parts(cp, sizes):
    """All empty (identities, nothing launched), one part (the single MSM), parts of one point."""
    from cuzk.gpu.msm.many import msm_g1_many
    rng = random.Random(seed())
    host, dev = many_case(cp, sizes, rng)
    assert msm_g1_many(dev) == [want(1, p, s) for p, s in host]


@pytest.mark.parametrize("kind", ["zero", "one", "same", "all-inf", "negated"])
def test_many_edge_parts(cp, kind):
    """One odd part among ordinary ones: all scalars 0, all 1, one scalar for all (one bucket a window:
    merges), every base at infinity, a part whose points cancel."""
    from cuzk.gpu.msm.many import msm_g1_many
    rng = random.Random(seed())
    host, dev = many_case(cp, [200, 0, 50], rng)
    m = 700
    pts = rand_points(1, m, rng, distinct=8)
    sc = [rng.randrange(F.R) for _ in range(m)]
    if kind == "zero":
        sc = [0] * m
    elif kind == "one":
        sc = [1] * m
    elif kind == "same":
        sc = [rng.randrange(F.R)] * m
    elif kind == "all-inf":
        pts = [G1Point.identity()] * m
    elif kind == "negated":
        half = rand_points(1, m // 2, rng, distinct=m // 2)
        pts, sc = half + [-p for p in half], sc[:m // 2] * 2
    host.insert(1, (pts, sc))
    dev.insert(1, upload(cp, 1, pts, sc))
    got = msm_g1_many(dev)
    assert got == [want(1, p, s) for p, s in host]
    if kind in ("zero", "all-inf", "negated"):
        assert got[1] == G1Point.identity()


def test_many_multi_pass_and_concat(cp):
    """Windows over several sort passes (max_entries), and msm_g1_concat on inputs concatenated by the
    caller (tail_msm's M2 path) equal to msm_g1_many; inputs untouched."""
    from cuzk.gpu.msm.many import concat_parts, msm_g1_concat, msm_g1_many
    rng = random.Random(seed())
    host, dev = many_case(cp, [3000, 17, 0, 900], rng)
    copies = [tuple(a.copy() for a in d) for d in dev]
    wants = [want(1, p, s) for p, s in host]
    assert msm_g1_many(dev, c=9, max_entries=3 * 3917) == wants
    bases, inf, scalars, sizes = concat_parts(dev)
    assert sizes == [3000, 17, 0, 900]
    assert msm_g1_concat(bases, inf, scalars, sizes, bucket_sum="xyzz") == wants
    for d, c0 in zip(dev, copies):
        assert all(bool((a == b).all()) for a, b in zip(d, c0))


def distinct_parts(cp, sizes, rng):
    """One G1 MSM a size over independent points made on the device (no degenerate pair) and fresh random scalars:
    (device parts, arkworks' results); a size of 0 is an empty part."""
    dev, wants = [], []
    for m in sizes:
        sc = [rng.randrange(F.R) for _ in range(m)]
        if not m:
            dev.append(upload(cp, 1, [], []))
            wants.append(G1Point.identity())
            continue
        a, limbs, inf = distinct_bases(cp, m, rng)
        dev.append((limbs, inf, fr_dev(cp, sc)))
        wants.append(G1Point() * Scalar(sum(x * y for x, y in zip(a, sc)) % F.R))
    return dev, wants


@pytest.mark.parametrize("plans", ["off", "on"])
def test_many_affine_rounds(cp, plans):
    """Every affine round taken (threshold 1) over distinct points made on the device: the multi-MSM's
    buckets go through the rounds like one MSM's, no fallback; also with K4 and K5 (the plans by entry, the keys'
    buckets counting every part's)."""
    from cuzk.gpu.msm.pippenger import last_stats
    from cuzk.gpu.msm.many import msm_g1_many
    dev, wants = distinct_parts(cp, (1000, 0, 300, 2), random.Random(seed()))
    ko = KERNEL_CODES | {"K4", "K5"} if plans == "on" else KERNEL_CODES - {"K4", "K5"}
    got = msm_g1_many(dev, bucket_sum="affine", affine_min_pairs=1, kernels=K(ko))
    assert got == wants
    assert last_stats["affine_rounds"] > 0 and last_stats["fallbacks"] == 0


def test_many_k10_group_reduce(cp, monkeypatch):
    """K10 on a multi-MSM (GROUP_MIN_BUCKETS lowered; a unit is one window of one part), every affine round taken,
    over distinct points made on the device: each part's MSM is arkworks'; the group rounds ran, no fallback."""
    from cuzk.gpu.msm import plan as plan
    from cuzk.gpu.msm.pippenger import last_stats
    from cuzk.gpu.msm.many import msm_g1_many
    monkeypatch.setattr(plan, "GROUP_MIN_BUCKETS", 1)
    dev, wants = distinct_parts(cp, (2000, 0, 700, 3), random.Random(seed()))
    got = msm_g1_many(dev, bucket_sum="affine", affine_min_pairs=1, kernels=K(KERNEL_CODES | {"K10"}))
    assert got == wants
    assert last_stats["group_rounds"] > 0 and last_stats["fallbacks"] == 0


def test_many_repeated_base_falls_back(cp):
    """P + P inside a bucket of one part: its pass redone in XYZZ, every part still right."""
    from cuzk.gpu.msm.pippenger import last_stats
    from cuzk.gpu.msm.many import msm_g1_many
    rng = random.Random(seed())
    host, dev = many_case(cp, [400, 50], rng)
    p = G1Point() * Scalar(rng.randrange(1, F.R))
    pts, sc = [p] * 300, [rng.randrange(F.R) for _ in range(300)]
    host.append((pts, sc))
    dev.append(upload(cp, 1, pts, sc))
    got = msm_g1_many(dev, bucket_sum="affine", affine_min_pairs=1)
    assert got == [want(1, q, s) for q, s in host]
    assert last_stats["fallbacks"] >= 1


def test_many_bad_args(cp):
    from cuzk.gpu.msm.many import msm_g1_concat, msm_g1_many
    rng = random.Random(seed())
    _, dev = many_case(cp, [10, 5], rng)
    with pytest.raises(ValueError):
        msm_g1_many([])
    with pytest.raises(ValueError):
        msm_g1_many(dev, bucket_sum="nope")
    with pytest.raises(ValueError):
        msm_g1_many(dev, c=0)
    with pytest.raises(ValueError):                       # scalars of another length
        msm_g1_many([dev[0], (dev[1][0], dev[1][1], dev[0][2])])
    with pytest.raises(ValueError):                       # sizes that do not add up
        msm_g1_concat(dev[0][0], dev[0][1], dev[0][2], [4, 5])
    with pytest.raises(ValueError):
        msm_g1_concat(dev[0][0], dev[0][1], dev[0][2], [12, -2])


# --- batch sums of several sections at once (batch_add.sum_xyzz_many) ---

def batch_case(cp, group, sizes, rng):
    """One section per size (its own points, with infinity and a repeated point among them) and a random
    subset of its rows (a row twice where there are several); size None: every row (idx None)."""
    host, dev = [], []
    for m in sizes:
        pts = rand_points(group, max(m or 40, 8), rng, distinct=16)
        limbs, inf = ark_to_limbs(group, pts)
        if m is None:
            idx = list(range(len(pts)))
        else:
            idx = [rng.randrange(len(pts)) for _ in range(m)]
            if m > 3:
                idx.append(idx[0])
        total = CLS[group].identity()
        for i in idx:
            total = total + pts[i]
        host.append(total)
        rows = None if m is None else cp.asarray(np.array(idx, dtype=np.int64))
        dev.append((cp.asarray(limbs), cp.asarray(inf), rows))
    return host, dev


@pytest.mark.parametrize("pairs", [False, True])
@pytest.mark.parametrize("group", [1, 2])
@pytest.mark.parametrize("threads_min", [None, 32])
def test_batch_many_matches_arkworks_and_batch_add(cp, group, threads_min, pairs, monkeypatch):
    """Sections summed together (0, 1, 31, 5000 and 1000 rows, every row of one): each sum is arkworks'
    and batch_add's alone; threads_min 32: long first segments (segment_size)."""
    from cuzk.gpu.msm import plan as mp
    from cuzk.gpu.msm import sums as gb
    if threads_min:
        monkeypatch.setattr(mp, "THREADS_MIN", threads_min)
    rng = random.Random(seed())
    host, dev = batch_case(cp, group, [0, 1, 31, None, 5000, 1000], rng)
    got = gb.batch_add_many(group, dev, pair_merges=pairs)
    assert got == host
    assert got == [gb.batch_add(group, *d, pair_merges=pairs) for d in dev]


def test_batch_many_infinity_rows_and_bad_index(cp):
    """A section whose chosen rows are all at infinity (its sum is the identity, the others unchanged),
    a section with no bases at all; an index out of range in any section raises IndexError."""
    from cuzk.gpu.msm import sums as gb
    rng = random.Random(seed())
    host, dev = batch_case(cp, 1, [100, 7], rng)
    limbs, inf, _ = dev[0]
    at_inf = np.flatnonzero(cp.asnumpy(inf))
    assert at_inf.size
    dev.insert(1, (limbs, inf, cp.asarray(np.repeat(at_inf, 3))))
    host.insert(1, G1Point.identity())
    dev.append((cp.zeros((0, 24), dtype=cp.uint32), cp.zeros(0, dtype=bool), cp.zeros(0, dtype=cp.int64)))
    host.append(G1Point.identity())
    assert gb.batch_add_many(1, dev) == host
    for bad in (len(inf), -1):
        idx = cp.asarray(np.array([0, bad], dtype=np.int64))
        with pytest.raises(IndexError):
            gb.batch_add_many(1, [dev[0], (limbs, inf, idx)])
    with pytest.raises(IndexError):
        gb.batch_add_many(1, [dev[0], (dev[-1][0], dev[-1][1], cp.zeros(1, dtype=cp.int64))])


def test_batch_many_affine_parts_alone(cp, monkeypatch):
    """G1 with affine rounds from 4 pairs on: the sections that large (1000 and 301 rows) are summed alone
    (sum_xyzz, its rounds and, for a repeated row, its fallback), the small ones (5, 7 rows, one
    repeated) together; all equal arkworks'."""
    from cuzk.gpu.msm import options
    from cuzk.gpu.msm import plan as mp
    from cuzk.gpu.msm import sums as gb
    monkeypatch.setitem(options.DEFAULT_BUCKET_SUM, 1, "affine")
    monkeypatch.setattr(mp, "AFFINE_MIN_PAIRS", 4)
    rng = random.Random(seed())
    dev, host = [], []
    for m, repeat in ((1000, False), (5, False), (300, True), (6, True)):
        pts = [G1Point() * Scalar(rng.randrange(1, F.R)) for _ in range(m)]
        limbs, inf = ark_to_limbs(1, pts)
        idx = ([0] if repeat else []) + list(range(m))          # rows 0, 0 pair up: degenerate
        total = G1Point.identity()
        for i in idx:
            total = total + pts[i]
        dev.append((cp.asarray(limbs), cp.asarray(inf), cp.asarray(np.array(idx, dtype=np.int64))))
        host.append(total)
    assert gb.batch_add_many(1, dev) == host
