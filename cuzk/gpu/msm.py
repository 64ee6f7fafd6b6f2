"""G1/G2 multi-scalar multiplication on the GPU (Pippenger, signed-digit windows).

Inputs stay on the device: bases uint32[n, 24] (G1) or [n, 48] (G2) affine Montgomery
limbs, inf bool[n] (a base at infinity), scalars uint32[n, 8] Fr in Montgomery form.
The kernels are in kernels/msm.cuh (modules msm_g1.cu, msm_g2.cu); the index math is cuzk/gpu/msm_plan.py.
"""
from __future__ import annotations

import numpy as np

from .. import field as F
from ..curve import G1_WORDS, G2_WORDS, g1_from_ints, g2_from_ints
from . import msm_plan as plan
from .loader import kernel

THREADS = 128
_AFFINE_WORDS = {1: G1_WORDS, 2: G2_WORDS}


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
    """The kernel set of msm_plan.pippenger as launches of kernels/msm_g1.cu / msm_g2.cu."""

    def __init__(self, group: int, bases, inf, scalars):
        import cupy
        self.cp = cupy
        self.g = f"g{group}"
        self.mod = f"msm_g{group}"
        self.W = xyzz_words(group)
        self.n = len(inf)
        self.bases, self.inf8, self.scalars = bases, inf.view(cupy.uint8), scalars

    def _f(self, name):
        return kernel(self.mod, f"{self.g}_{name}")

    def alloc(self, count):
        return self.cp.empty((count, self.W), dtype=self.cp.uint32)

    def digits(self, c, w0, w1):
        keys = self.cp.empty((w1 - w0) * self.n, dtype=self.cp.uint64)
        kernel(self.mod, "msm_digits")(_grid(self.n), (THREADS,),
                                    (keys, self.scalars, self.inf8, np.int64(self.n), np.int32(c),
                                     np.int32(w0), np.int32(w1)))
        return keys

    def sum_affine(self, keys, seg_bucket, seg_first, offsets, S, total):
        out = self.alloc(total)
        self._f("sum_affine")(_grid(total), (THREADS,),
                              (out, keys, self.bases, seg_bucket, seg_first, offsets, np.int64(S), np.int64(total)))
        return out

    def sum_xyzz(self, partials, seg_bucket, seg_first, offsets, S, total):
        out = self.alloc(total)
        self._f("sum_xyzz")(_grid(total), (THREADS,),
                            (out, partials, seg_bucket, seg_first, offsets, np.int64(S), np.int64(total)))
        return out

    def window_chunks(self, buckets, nwp, B, T):
        cs, ct = self.alloc(nwp * T), self.alloc(nwp * T)
        self._f("window_chunks")(_grid(nwp * T), (THREADS,),
                                 (cs, ct, buckets, np.int32(nwp), np.int32(B), np.int32(T)))
        return cs, ct

    def window_final(self, window_sums, cs, ct, nwp, T, log_l, w0):
        self._f("window_final")(_grid(nwp), (THREADS,),
                                (window_sums, cs, ct, np.int32(nwp), np.int32(T), np.int32(log_l), np.int32(w0)))

    def combine(self, window_sums, nw, c):
        out = self.cp.empty(self.W, dtype=self.cp.uint32)
        self._f("combine")((1,), (32,), (out, window_sums, np.int32(nw), np.int32(c)))
        return out


def msm_xyzz(group: int, bases, inf, scalars, c: int | None = None, max_entries: int = 1 << 28):
    """Σ s_i P_i as one XYZZ point on the device (uint32[words], Montgomery limbs)."""
    import cupy
    n = _check(group, bases, inf, scalars)
    if n == 0:
        return cupy.zeros(xyzz_words(group), dtype=cupy.uint32)
    c = plan.choose_window(n) if c is None else int(c)
    return plan.pippenger(_Kernels(group, bases, inf, scalars), n, c, max_entries, cupy)


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


def xyzz_from_limbs(group: int, limbs: np.ndarray) -> tuple:
    """uint32[words] Montgomery limbs -> (X, Y, ZZ, ZZZ) as field ints (pairs for G2)."""
    v = F.fp_from_limbs(np.asarray(limbs, dtype=np.uint32).reshape(-1, F.FP_LIMBS))
    v = [int(t) for t in v]
    if group == 1:
        return tuple(v)
    return tuple((v[2 * i], v[2 * i + 1]) for i in range(4))


def xyzz_to_affine(group: int, pt: tuple):
    """(X, Y, ZZ, ZZZ) -> (x, y), or None for infinity; the same one-inversion path as ec.cuh."""
    f = FIELDS[group]
    X, Y, ZZ, ZZZ = pt
    if f.is_zero(ZZ):
        return None
    iZZZ = f.inv(ZZZ)
    iZ = f.mul(iZZZ, ZZ)
    return f.mul(X, f.mul(iZ, iZ)), f.mul(Y, iZZZ)


def to_ark(group: int, limbs: np.ndarray):
    """A device result (downloaded XYZZ limbs) as an arkworks point; checked on the curve and in
    the subgroup, so a malformed result raises cuzk.curve.PointError."""
    from py_arkworks_bls12381 import G1Point, G2Point
    xy = xyzz_to_affine(group, xyzz_from_limbs(group, limbs))
    if xy is None:
        return (G1Point if group == 1 else G2Point).identity()
    return g1_from_ints(*xy) if group == 1 else g2_from_ints(*xy)


def msm_g1(bases, inf, scalars, c: int | None = None):
    """Σ s_i P_i over G1 as a py_arkworks_bls12381 G1Point."""
    import cupy
    return to_ark(1, cupy.asnumpy(msm_xyzz(1, bases, inf, scalars, c)))


def msm_g2(bases, inf, scalars, c: int | None = None):
    """Σ s_i P_i over G2 as a py_arkworks_bls12381 G2Point."""
    import cupy
    return to_ark(2, cupy.asnumpy(msm_xyzz(2, bases, inf, scalars, c)))
