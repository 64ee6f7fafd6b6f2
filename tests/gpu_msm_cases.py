"""Inputs and arkworks references shared by the GPU MSM tests (test_gpu_msm.py, test_gpu_msm_many.py)."""
import random

import numpy as np
from py_arkworks_bls12381 import G1Point, G2Point, Scalar

from cuzk import field as F
from cuzk.curve import ark_to_limbs, scalars_to_ark

CLS = {1: G1Point, 2: G2Point}
WORDS = {1: 24, 2: 48}


def seed():
    return random.SystemRandom().randrange(1 << 30)


def rand_points(group, n, rng, distinct=64):
    """n points (at most `distinct` different ones, then repeated: scalar multiplication in
    Python is the slow part), with infinity and a repeat mixed in."""
    base = [CLS[group]() * Scalar(rng.randrange(1, F.R)) for _ in range(min(n, distinct))]
    pts = [base[i % len(base)] for i in range(n)]
    if n > 5:
        pts[3] = CLS[group].identity()
        pts[4] = pts[1]
    rng.shuffle(pts)
    return pts


def fr_dev(cp, scalars):
    return cp.asarray(F.fr_to_limbs(np.array(scalars, dtype=object)))


def upload(cp, group, pts, scalars):
    """(bases, inf, scalars) on the device; no points: empty arrays of the right shapes."""
    if not pts:
        return (cp.zeros((0, WORDS[group]), dtype=cp.uint32), cp.zeros(0, dtype=bool),
                cp.zeros((0, F.FR_LIMBS), dtype=cp.uint32))
    limbs, inf = ark_to_limbs(group, pts)
    return cp.asarray(limbs), cp.asarray(inf), fr_dev(cp, scalars)


def want(group, pts, scalars):
    if not pts:
        return CLS[group].identity()
    return CLS[group].multiexp_unchecked(pts, scalars_to_ark(scalars))


def distinct_bases(cp, n, rng):
    """n independent random G1 points a_i G made on the device (cuzk.gpu.keygen's fixed-base
    kernel; spot-checked against arkworks here), so no pair in a bucket is degenerate."""
    from cuzk.curve import limbs_to_ark
    from cuzk.gpu.keygen import FixedBase
    a = [rng.randrange(1, F.R) for _ in range(n)]
    limbs, inf = FixedBase(1)(fr_dev(cp, a))
    assert not bool(inf.any())
    for i in rng.sample(range(n), min(n, 4)):
        assert limbs_to_ark(1, cp.asnumpy(limbs[i:i + 1]), np.zeros(1, dtype=bool))[0] == G1Point() * Scalar(a[i])
    return a, limbs, inf


def edge_case(group, kind, n, rng):
    pts = rand_points(group, n, rng, distinct=8)
    if kind == "zero":
        sc = [0] * n
    elif kind == "one":
        sc = [1] * n
    elif kind == "r-1":
        sc = [F.R - 1] * n
    elif kind == "mixed":
        sc = [rng.choice([0, 1, 2, F.R - 1, F.R - 2, rng.randrange(F.R)]) for _ in range(n)]
    elif kind == "same":                         # every point in one bucket per window: merges
        sc = [rng.randrange(F.R)] * n
    elif kind == "small":
        sc = [rng.randrange(1 << 12) for _ in range(n)]
    elif kind == "all-inf":
        pts = [CLS[group].identity()] * n
        sc = [rng.randrange(F.R) for _ in range(n)]
    elif kind == "repeat-point":                 # one base: P + P and P + (-P) in buckets
        pts = [pts[0]] * n
        sc = [rng.randrange(F.R) for _ in range(n)]
    return pts, sc
