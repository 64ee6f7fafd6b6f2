"""G1 and G2 affine points: host limb layout, py_arkworks_bls12381 bridge, snarkjs JSON.

Host layout (identical on the device):
  G1 affine: uint32[N, 24] = x[12] | y[12], Fp limbs in Montgomery form.
  G2 affine: uint32[N, 48] = x.c0 | x.c1 | y.c0 | y.c1.
  Infinity is a separate bool[N] flag; its limbs are zero.
"""
from __future__ import annotations

import reprlib
from dataclasses import dataclass

import numpy as np
from py_arkworks_bls12381 import G1Point, G2Point, Scalar

from . import field as F

G1_WORDS = 2 * F.FP_LIMBS
G2_WORDS = 4 * F.FP_LIMBS
_XY_BYTES = {1: 2 * F.FP_BYTES, 2: 4 * F.FP_BYTES}
_CLS = {1: G1Point, 2: G2Point}


class PointError(ValueError):
    """A point that is malformed, off the curve or outside the subgroup."""


@dataclass
class AffineBases:
    """A vector of affine points in device layout."""

    group: int            # 1 or 2
    limbs: np.ndarray     # uint32[N, 24] or uint32[N, 48], Montgomery
    inf: np.ndarray       # bool[N]

    def __len__(self) -> int:
        return len(self.inf)

    def take(self, idx: np.ndarray) -> "AffineBases":
        return AffineBases(self.group, self.limbs[idx], self.inf[idx])

    def to_ark(self) -> list:
        return limbs_to_ark(self.group, self.limbs, self.inf)

    @classmethod
    def from_ark(cls, group: int, points) -> "AffineBases":
        limbs, inf = ark_to_limbs(group, points)
        return cls(group, limbs, inf)


def ark_to_limbs(group: int, points) -> tuple[np.ndarray, np.ndarray]:
    nb = _XY_BYTES[group]
    raw = b"".join([p.to_xy_bytes_le() for p in points])
    n = len(raw) // nb
    row = 2 * group * F.FP_LIMBS                 # explicit: reshape(0, -1) cannot infer a row of an empty set
    canon = np.frombuffer(raw, dtype="<u4").reshape(n * 2 * group, F.FP_LIMBS)
    inf = ~canon.reshape(n, row).any(axis=1)
    limbs = F.fp_to_limbs(F.limbs_to_ints(canon), mont=True).reshape(n, row)
    limbs[inf] = 0
    return limbs, inf


def limbs_to_ark(group: int, limbs: np.ndarray, inf: np.ndarray, check: bool = False) -> list:
    n = len(inf)
    if n == 0:
        return []
    canon = F.ints_to_limbs(F.fp_from_limbs(limbs.reshape(-1, F.FP_LIMBS)), F.FP_LIMBS)
    return canonical_to_ark(group, canon.reshape(n, -1), inf, check)


def canonical_to_ark(group: int, raw: np.ndarray, inf: np.ndarray, check: bool = False) -> list:
    """Points from canonical (not Montgomery) coordinate limbs, uint32[n, 24 or 48]; rows where inf
    is set become the identity (all-zero coordinates). raw is modified there."""
    raw[inf] = 0
    buf = raw.tobytes()
    nb = _XY_BYTES[group]
    cls = _CLS[group]
    make = cls.from_xy_bytes_le if check else cls.from_xy_bytes_unchecked_le
    try:
        return [make(buf[i:i + nb]) for i in range(0, len(buf), nb)]
    except Exception as e:  # arkworks raises plain exceptions
        raise PointError(f"G{group} point is not on the curve or not in the subgroup ({e})") from e


def first_bad_point(bases: AffineBases, no_infinity=()) -> str | None:
    """Why the first point of a (small) section is unusable, or None: off the curve, outside the
    prime-order subgroup, or at infinity at an index in `no_infinity`. One arkworks check a point:
    for the few points a verifier uses, not for the bulk sections."""
    for i in no_infinity:
        if i < len(bases) and bases.inf[i]:
            return f"point {i} is the point at infinity"
    n = len(bases)
    if n == 0:
        return None
    coords = F.limbs_to_ints(bases.limbs.reshape(-1, F.FP_LIMBS))
    over = np.flatnonzero(coords >= F.P)
    if len(over):
        return f"point {over[0] // (2 * bases.group)}: a coordinate is not reduced mod p"
    raw = F.ints_to_limbs((coords * F.FP_MONT_RINV) % F.P, F.FP_LIMBS).reshape(n, -1)
    raw[bases.inf] = 0
    buf, nb, make = raw.tobytes(), _XY_BYTES[bases.group], _CLS[bases.group].from_xy_bytes_le
    for i in range(n):
        try:
            make(buf[i * nb:(i + 1) * nb])
        except Exception as e:  # arkworks raises plain exceptions
            return f"point {i}: {e}"
    return None


def scalars_to_ark(values) -> list:
    """Fr ints -> arkworks Scalars (through one bytes buffer)."""
    limbs = F.ints_to_limbs(F.fr_array(values), F.FR_LIMBS)
    buf = limbs.tobytes()
    f = Scalar.from_le_bytes
    return [f(buf[i:i + 32]) for i in range(0, len(buf), 32)]


def g1_affine_ints(p: G1Point) -> tuple[int, int] | None:
    b = p.to_xy_bytes_le()
    if not any(b):
        return None
    return int.from_bytes(b[:48], "little"), int.from_bytes(b[48:], "little")


def g2_affine_ints(p: G2Point) -> tuple[tuple[int, int], tuple[int, int]] | None:
    b = p.to_xy_bytes_le()
    if not any(b):
        return None
    c = [int.from_bytes(b[i:i + 48], "little") for i in range(0, 192, 48)]
    return (c[0], c[1]), (c[2], c[3])


def g1_from_ints(x: int, y: int) -> G1Point:
    if not (0 <= x < F.P and 0 <= y < F.P):
        raise PointError("G1 coordinate is not a reduced Fp element")
    try:
        return G1Point.from_xy_bytes_le(x.to_bytes(48, "little") + y.to_bytes(48, "little"))
    except Exception as e:
        raise PointError(f"G1 point is not on the curve or not in the subgroup ({e})") from e


def g2_from_ints(x: tuple[int, int], y: tuple[int, int]) -> G2Point:
    c = [x[0], x[1], y[0], y[1]]
    if not all(0 <= v < F.P for v in c):
        raise PointError("G2 coordinate is not a reduced Fp element")
    try:
        return G2Point.from_xy_bytes_le(b"".join(v.to_bytes(48, "little") for v in c))
    except Exception as e:
        raise PointError(f"G2 point is not on the curve or not in the subgroup ({e})") from e


# --- snarkjs JSON: decimal strings, projective with z = 1; infinity is (0, 1, 0) ---

def g1_to_json(p: G1Point) -> list[str]:
    xy = g1_affine_ints(p)
    if xy is None:
        return ["0", "1", "0"]
    return [str(xy[0]), str(xy[1]), "1"]


def g2_to_json(p: G2Point) -> list[list[str]]:
    xy = g2_affine_ints(p)
    if xy is None:
        return [["0", "0"], ["1", "0"], ["0", "0"]]
    (x0, x1), (y0, y1) = xy
    return [[str(x0), str(x1)], [str(y0), str(y1)], ["1", "0"]]


def decimal_below(s, bound: int) -> int | None:
    """The value of the decimal string s where it is below `bound`, else None. Leading zeros are dropped and the
    digits counted first: int() of a string past Python's digit limit (leading zeros count) fails with its own
    message, naming neither the field nor the number."""
    digits = s.lstrip("0") or "0"
    if len(digits) > len(str(bound)):
        return None
    v = int(digits)
    return v if v < bound else None


def _dec(s) -> int:
    if not isinstance(s, str) or not (s.isascii() and s.isdigit()):
        raise PointError(f"expected a decimal string, got {reprlib.repr(s)}")
    v = decimal_below(s, F.P)
    if v is None:
        raise PointError(f"coordinate {reprlib.repr(s)} is not a reduced Fp element")
    return v


def g1_from_json(v) -> G1Point:
    if not (isinstance(v, list) and len(v) in (2, 3)):
        raise PointError("G1 point must be a list [x, y, z]")
    x, y = _dec(v[0]), _dec(v[1])
    z = _dec(v[2]) if len(v) == 3 else 1
    if z == 0:
        return G1Point.identity()
    if z != 1:
        raise PointError("G1 point must be affine (z = 1)")
    return g1_from_ints(x, y)


def g2_from_json(v) -> G2Point:
    if not (isinstance(v, list) and len(v) in (2, 3) and all(isinstance(c, list) and len(c) == 2 for c in v)):
        raise PointError("G2 point must be a list [[x0, x1], [y0, y1], [z0, z1]]")
    x = (_dec(v[0][0]), _dec(v[0][1]))
    y = (_dec(v[1][0]), _dec(v[1][1]))
    z = (_dec(v[2][0]), _dec(v[2][1])) if len(v) == 3 else (1, 0)
    if z == (0, 0):
        return G2Point.identity()
    if z != (1, 0):
        raise PointError("G2 point must be affine (z = 1)")
    return g2_from_ints(x, y)
