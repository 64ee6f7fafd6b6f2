"""An MSM's result on the host: downloaded XYZZ points (Montgomery limbs) as field ints, affine points and
arkworks points, and the fold of downloaded window sums into the MSM (msm_g1 and msm_g2 fold on the host)."""
from __future__ import annotations

import numpy as np
from py_arkworks_bls12381 import G1Point, G2Point

from ... import field as F
from ...curve import G1_WORDS, G2_WORDS, PointError, canonical_to_ark, g1_from_ints, g2_from_ints, scalars_to_ark

AFFINE_WORDS = {1: G1_WORDS, 2: G2_WORDS}


def xyzz_words(group: int) -> int:
    return 2 * AFFINE_WORDS[group]


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
