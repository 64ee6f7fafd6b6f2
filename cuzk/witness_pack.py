"""A witness packed for the host -> GPU hand-off: PoRep-shaped circuits are ~99% bits, so z travels as
one bit per variable plus the few entries that are not 0 or 1 (their index and canonical limbs), and
is expanded on the GPU. At 2^27 that is ~60 MB instead of 4 GiB of limbs (optimization B2).

The same code expands on the host (numpy) and on the device (CuPy): `unpack(..., xp)`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .field import FR_LIMBS, FR_MONT_R, ints_to_limbs

# packing pays only when most entries are bits: beyond this share of other values, send plain limbs
MAX_OTHER_SHARE = 0.25


@dataclass
class PackedWitness:
    n: int                 # entries (aux variables)
    bits: np.ndarray       # uint8[ceil(n / 8)], np.packbits order (big-endian bits within a byte)
    idx: np.ndarray        # int64[k], ascending: the entries that are neither 0 nor 1
    vals: np.ndarray       # uint32[k, 8]: their canonical limbs

    @property
    def nbytes(self) -> int:
        return int(self.bits.nbytes + self.idx.nbytes + self.vals.nbytes)


def worth_packing(n: int, others: int, max_other_share: float = MAX_OTHER_SHARE) -> bool:
    """Whether n entries of which `others` are neither 0 nor 1 pack smaller than their limbs."""
    return not (n and others > max_other_share * n)


def pack(limbs: np.ndarray, max_other_share: float = MAX_OTHER_SHARE) -> PackedWitness | None:
    """Canonical uint32[n, 8] limbs -> PackedWitness, or None when more than `max_other_share` of
    the entries are neither 0 nor 1 (plain limbs are then smaller or about as small)."""
    if limbs.ndim != 2 or limbs.shape[1] != FR_LIMBS or limbs.dtype != np.uint32:
        raise ValueError(f"pack takes canonical uint32[n, {FR_LIMBS}] limbs, not {limbs.dtype}{list(limbs.shape)}")
    n = limbs.shape[0]
    v = np.ascontiguousarray(limbs).view(np.uint64)      # (n, 4): 64-bit words, 2.5x faster than 32-bit ones
    high = v[:, 1] | v[:, 2]
    high |= v[:, 3]
    other = (high != 0) | (v[:, 0] > 1)
    del high
    if not worth_packing(n, int(np.count_nonzero(other)), max_other_share):
        return None
    bit = np.where(other, 0, limbs[:, 0]).astype(np.uint8)
    idx = np.flatnonzero(other).astype(np.int64)
    return PackedWitness(n, np.packbits(bit), idx, np.ascontiguousarray(limbs[idx]))


def unpack_host(pw: PackedWitness) -> np.ndarray:
    """The canonical uint32[n, 8] limbs again (host; for the CPU paths that need z as ints)."""
    out = np.zeros((pw.n, FR_LIMBS), dtype=np.uint32)
    out[:, 0] = np.unpackbits(pw.bits)[:pw.n]
    out[pw.idx] = pw.vals
    return out


def mont_one() -> np.ndarray:
    """1 in Montgomery form (R mod r) as uint32[8] limbs."""
    return ints_to_limbs([FR_MONT_R], FR_LIMBS)[0]


def unpack_into(z, pw: PackedWitness, xp, to_mont) -> None:
    """Write the packed entries into z (xp uint32[n, 8]) in Montgomery form: bits as 0 or R mod r,
    the others through `to_mont` (in place on an xp uint32[k, 8] array)."""
    if z.shape != (pw.n, FR_LIMBS):
        raise ValueError(f"z has shape {tuple(z.shape)}, the packed witness {pw.n} entries")
    if pw.n == 0:
        return
    bit = xp.unpackbits(xp.asarray(pw.bits))[:pw.n].astype(xp.uint32)
    one = mont_one()
    for j in range(FR_LIMBS):
        z[:, j] = bit * np.uint32(one[j])
    if len(pw.idx):
        z[xp.asarray(pw.idx)] = to_mont(xp.asarray(pw.vals))
