import random

import numpy as np
import pytest
from py_arkworks_bls12381 import G1Point, G2Point, Scalar

from cuzk.backend.cpu import CpuBackend
from cuzk.curve import AffineBases, g1_from_json, g1_to_json, g2_from_json, g2_to_json
from cuzk.field import R
from cuzk.opts import resolve
from cuzk.backend.cpu.prep_msm import prep_msm
from cuzk.backend.cpu.msm import msm


def rand_points(cls, n, seed):
    rng = random.Random(seed)
    pts = [cls() * Scalar(rng.randrange(1, R)) for _ in range(n)]
    if n > 3:
        pts[2] = cls.identity()          # infinity in the bases
        pts[3] = pts[1]                  # a repeated point
    return pts


def naive(points, scalars, cls):
    acc = cls.identity()
    for p, s in zip(points, scalars):
        acc = acc + p * Scalar(int(s))
    return acc


def edge_scalars(n, seed):
    rng = random.Random(seed)
    s = [rng.randrange(R) for _ in range(n)]
    for i, v in enumerate([0, 1, R - 1, 2, 0, 1]):
        if i < n:
            s[i] = v
    return np.array(s, dtype=object)


@pytest.mark.parametrize("cls", [G1Point, G2Point])
@pytest.mark.parametrize("n", [1, 7, 33])
def test_msm_matches_naive_sum(cls, n):
    pts = rand_points(cls, n, n)
    sc = edge_scalars(n, n + 1)
    assert msm(pts, sc, cls) == naive(pts, sc, cls)


def test_msm_empty():
    assert msm([], [], G1Point) == G1Point.identity()


@pytest.mark.parametrize("group,cls", [(1, G1Point), (2, G2Point)])
def test_affine_limbs_roundtrip(group, cls):
    pts = rand_points(cls, 6, group)
    b = AffineBases.from_ark(group, pts)
    assert b.inf.tolist() == [False, False, True, False, False, False]
    assert not b.limbs[2].any()
    assert b.to_ark() == pts


def test_json_points():
    g1 = rand_points(G1Point, 5, 3)
    g2 = rand_points(G2Point, 5, 4)
    assert [g1_from_json(g1_to_json(p)) for p in g1] == g1
    assert [g2_from_json(g2_to_json(p)) for p in g2] == g2
    assert g1_to_json(G1Point.identity()) == ["0", "1", "0"]
    assert g1_to_json(G1Point())[2] == "1"


class _Key:
    """A minimal key handle for the CPU backend's batch_addition / tail_msm."""

    def __init__(self, nv, ni, seed):
        self.pts = {"a": rand_points(G1Point, nv, seed), "b_g1": rand_points(G1Point, nv, seed + 1),
                    "b_g2": rand_points(G2Point, nv, seed + 2), "l": rand_points(G1Point, nv - ni, seed + 3)}


class _Asg:
    def __init__(self, z, ni):
        self.inputs, self.aux = z[:ni], z[ni:]

    @property
    def z(self):
        return np.concatenate([self.inputs, self.aux])


def test_split_drives_batch_addition_and_tail():
    """ones + tail over the merged split equals the full MSM, per circuit, for mixed masks."""
    nv, ni = 40, 3
    rng = random.Random(5)
    zs = []
    for c in range(3):
        z = np.array([rng.choice([0, 1, 1, rng.randrange(R)]) for _ in range(nv)], dtype=object)
        z[0] = 1
        zs.append(z)
    zs[1][10] = 1
    zs[2][10] = 12345                     # position 10 is 'other' for circuit 2 only
    prep = prep_msm(zs, ni)
    assert 10 in prep.tail and 10 not in prep.ones[1]
    assert sum(prep.counts.values()) == 3 * nv
    for ones in prep.ones:
        assert not np.isin(ones, prep.tail).any()
    be, key = CpuBackend(resolve()), _Key(nv, ni, 11)
    asgs = [_Asg(z, ni) for z in zs]
    ba = be.batch_addition(key, prep)
    tm = be.tail_msm(key, prep, asgs)
    g2 = be.b_g2(key, prep, asgs)
    for c, z in enumerate(zs):
        assert ba[c]["a"] + tm[c]["a"] == naive(key.pts["a"], z, G1Point)
        assert ba[c]["b_g1"] + tm[c]["b_g1"] == naive(key.pts["b_g1"], z, G1Point)
        assert ba[c]["b_g2"] + g2[c] == naive(key.pts["b_g2"], z, G2Point)
        assert ba[c]["l"] + tm[c]["l"] == naive(key.pts["l"], z[ni:], G1Point)


def test_batch_add_segment_size():
    """Long segments (SEGMENT) from 2^24 points, shorter ones for smaller sums, never below SEGMENT_MIN."""
    from cuzk.gpu.msm import plan as mp
    assert mp.segment_size(1 << 26) == mp.segment_size(1 << 24) == mp.SEGMENT
    assert mp.segment_size(1 << 18) == mp.segment_size(5) == mp.segment_size(0) == mp.SEGMENT_MIN
    sizes = [mp.segment_size(1 << k) for k in range(0, 28)]
    assert sizes == sorted(sizes)
    assert all((1 << k) // s >= mp.THREADS_MIN for k, s in zip(range(28), sizes) if mp.SEGMENT_MIN < s < mp.SEGMENT)


def test_first_segment_size():
    """Twice the mean bucket load for large MSMs; capped so a small MSM keeps SEGMENT_THREADS segments."""
    from cuzk.gpu.msm import plan as mp
    big = (1 << 26) * 13                         # 2^26 points, 13 windows of c = 20
    assert mp.first_segment_size(big, 13 << 19) == 2 * -(-big // (13 << 19))
    small = (1 << 18) * 22                       # 2^18 points, 22 windows of c = 12: mean 128 a bucket
    s = mp.first_segment_size(small, 22 << 11)
    assert s < 256 and small // s >= mp.SEGMENT_THREADS
    assert mp.first_segment_size(10, 4) == 8 and mp.first_segment_size(0, 1) == 8
