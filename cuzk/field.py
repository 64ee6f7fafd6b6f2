"""BLS12-381 base field Fp and scalar field Fr: constants, limbs, Montgomery form.

Host layout matches the device: little-endian uint32 limbs, 12 for Fp and 8 for Fr,
Montgomery form with R = 2^384 (Fp) and R = 2^256 (Fr). Vectors of field elements
on the CPU reference are numpy object arrays of Python ints in [0, modulus).
"""
from __future__ import annotations

import numpy as np

P = 0x1A0111EA397FE69A4B1BA7B6434BACD764774B84F38512BF6730D2A0F6B0F6241EABFFFEB153FFFFB9FEFFFFFFFFAAAB
R = 0x73EDA753299D7D483339D80809A1D80553BDA402FFFE5BFEFFFFFFFF00000001

FP_LIMBS = 12
FR_LIMBS = 8
FP_BYTES = 48
FR_BYTES = 32

FP_MONT_R = pow(2, 32 * FP_LIMBS, P)
FR_MONT_R = pow(2, 32 * FR_LIMBS, R)
FP_MONT_RINV = pow(FP_MONT_R, -1, P)
FR_MONT_RINV = pow(FR_MONT_R, -1, R)
# -p^-1 mod 2^32, the CIOS constant
FP_INV32 = (-pow(P, -1, 1 << 32)) % (1 << 32)
FR_INV32 = (-pow(R, -1, 1 << 32)) % (1 << 32)

FR_TWO_ADICITY = 32
FR_ODD_PART = (R - 1) >> FR_TWO_ADICITY

# Multiplicative generators used for roots of unity: bellman/arkworks use 7, snarkjs 5.
GENERATORS = {"bellman": 7, "snarkjs": 5}


def root_of_unity(log_n: int, generator: int = 7) -> int:
    """Primitive 2^log_n-th root of unity derived from `generator` (as bellman and snarkjs do)."""
    if not 0 <= log_n <= FR_TWO_ADICITY:
        raise ValueError(f"domain 2^{log_n} exceeds Fr two-adicity 2^{FR_TWO_ADICITY}")
    w = pow(generator, FR_ODD_PART, R)
    if pow(w, 1 << (FR_TWO_ADICITY - 1), R) != R - 1:
        raise ValueError(f"{generator} is not a quadratic non-residue in Fr")
    return pow(w, 1 << (FR_TWO_ADICITY - log_n), R)


def fr_array(values) -> np.ndarray:
    """Object array of canonical Fr ints."""
    a = np.asarray(values, dtype=object) if not isinstance(values, np.ndarray) else values
    if a.dtype != object:
        a = a.astype(object)
    return a % R


def _ints_to_limbs_slow(seq, nlimbs: int) -> np.ndarray:
    nbytes = 4 * nlimbs
    try:
        buf = b"".join([int(v).to_bytes(nbytes, "little") for v in seq])
    except OverflowError as e:
        raise ValueError(f"value does not fit in {nlimbs} limbs") from e
    return np.frombuffer(buf, dtype="<u4").reshape(len(seq), nlimbs).copy()


FAST_LIMBS_MIN = 1 << 12
_R_LIMBS = [(R >> (32 * i)) & 0xFFFFFFFF for i in range(FR_LIMBS)]


def ints_to_limbs(values, nlimbs: int) -> np.ndarray:
    """Ints (object array or sequence) -> uint32[N, nlimbs], little-endian.

    Large object arrays take a vectorized path for the values circuits are full of: those below
    2^64 (converted by numpy) and, for Fr, those within 2^64 below r (negated small constants,
    r - d, by a limb subtraction); only the rest go through int.to_bytes."""
    if not (isinstance(values, np.ndarray) and values.dtype == object and values.ndim == 1
            and len(values) >= FAST_LIMBS_MIN and nlimbs >= 2):
        seq = values.tolist() if isinstance(values, np.ndarray) else list(values)
        return _ints_to_limbs_slow(seq, nlimbs)
    n = len(values)
    out = np.zeros((n, nlimbs), dtype="<u4")
    small = (values >= 0) & (values < (1 << 64))
    rest = ~small
    if small.any():
        x = values[small].astype(np.uint64)
        out[small, 0] = (x & 0xFFFFFFFF).astype(np.uint32)
        out[small, 1] = (x >> np.uint64(32)).astype(np.uint32)
    if nlimbs == FR_LIMBS and rest.any():
        idx = np.flatnonzero(rest)
        vals = values[idx]
        near = (vals < R) & (vals > R - (1 << 64))
        if near.any():
            d = (R - vals[near]).astype(np.uint64)          # in [1, 2^64)
            sub = [(d & 0xFFFFFFFF).astype(np.int64), (d >> np.uint64(32)).astype(np.int64)]
            limbs = np.empty((len(d), FR_LIMBS), dtype=np.int64)
            borrow = np.zeros(len(d), dtype=np.int64)
            for i in range(FR_LIMBS):
                t = _R_LIMBS[i] - (sub[i] if i < 2 else 0) - borrow
                borrow = (t < 0).astype(np.int64)
                limbs[:, i] = t + (borrow << 32)
            out[idx[near]] = limbs.astype(np.uint32)
            rest[idx[near]] = False
    if rest.any():
        out[rest] = _ints_to_limbs_slow(values[rest].tolist(), nlimbs)
    return out


def limbs_to_ints(limbs: np.ndarray) -> np.ndarray:
    """uint32[N, nlimbs] -> object array of ints."""
    limbs = np.ascontiguousarray(limbs, dtype="<u4")
    n, k = limbs.shape
    buf = limbs.tobytes()
    step = 4 * k
    f = int.from_bytes
    out = np.empty(n, dtype=object)
    out[:] = [f(buf[i:i + step], "little") for i in range(0, len(buf), step)]
    return out


def fr_to_limbs(values, mont: bool = True) -> np.ndarray:
    v = fr_array(values)
    if mont:
        v = (v * FR_MONT_R) % R
    return ints_to_limbs(v, FR_LIMBS)


def fr_from_limbs(limbs: np.ndarray, mont: bool = True) -> np.ndarray:
    v = limbs_to_ints(limbs)
    if (v >= R).any():
        raise ValueError("Fr limb value is not reduced")
    return (v * FR_MONT_RINV) % R if mont else v


def fp_to_limbs(values, mont: bool = True) -> np.ndarray:
    v = np.asarray(values, dtype=object) % P
    if mont:
        v = (v * FP_MONT_R) % P
    return ints_to_limbs(v, FP_LIMBS)


def fp_from_limbs(limbs: np.ndarray, mont: bool = True) -> np.ndarray:
    v = limbs_to_ints(limbs)
    if (v >= P).any():
        raise ValueError("Fp limb value is not reduced")
    return (v * FP_MONT_RINV) % P if mont else v


def fr_powers(x: int, n: int) -> np.ndarray:
    """[1, x, x^2, ..., x^(n-1)] by doubling: log2(n) vectorized steps."""
    out = np.empty(n, dtype=object)
    if n == 0:
        return out
    out[0] = 1
    filled, xp = 1, x % R
    while filled < n:
        k = min(filled, n - filled)
        out[filled:filled + k] = (out[:k] * xp) % R
        filled += k
        xp = xp * xp % R
    return out


def fr_batch_inverse(values: np.ndarray) -> np.ndarray:
    """Montgomery's trick, vectorized as a product tree (log2 N numpy steps)."""
    v = fr_array(values)
    n = len(v)
    if n == 0:
        return v.copy()
    if (v == 0).any():
        raise ZeroDivisionError("inverse of zero in Fr")
    levels = [v]
    while len(levels[-1]) > 1:
        cur = levels[-1]
        if len(cur) % 2:
            cur = np.concatenate([cur, np.array([1], dtype=object)])
        levels.append((cur[0::2] * cur[1::2]) % R)
    inv = np.array([pow(int(levels[-1][0]), -1, R)], dtype=object)
    for lvl in reversed(levels[:-1]):
        m = len(lvl)
        pad = lvl if m % 2 == 0 else np.concatenate([lvl, np.array([1], dtype=object)])
        nxt = np.empty(len(pad), dtype=object)
        nxt[0::2] = (inv * pad[1::2]) % R
        nxt[1::2] = (inv * pad[0::2]) % R
        inv = nxt[:m]
    return inv
