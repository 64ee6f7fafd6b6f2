"""snarkjs's Groth16 proving key `.zkey` <-> cuzk's `ProvingKey` (checked against snarkjs 0.7.5:
src/zkey_new.js, src/zkey_utils.js, src/groth16_prove.js).

  1 header:          protocol u32 (1 groth16, 2 plonk, 10 fflonk)
  2 Groth16 header:  n8q u32 | q[n8q] | n8r u32 | r[n8r] | nVars u32 | nPublic u32 | domainSize u32 |
                     alpha1 | beta1 | beta2 | gamma2 | delta1 | delta2
  3 IC:              (nPublic + 1) G1            = cuzk "ic"
  4 coefficients:    n u32 | n × (matrix u32 | constraint u32 | signal u32 | value[n8r])
                     matrix 0 = A, 1 = B (C is not stored); value = coefficient · R² mod r
                     (R = 2^256, the Montgomery form of coefficient · R)
  5 A:               nVars G1                    = cuzk "a"
  6 B1:              nVars G1                    = cuzk "b_g1"
  7 B2:              nVars G2                    = cuzk "b_g2"
  8 C:               (nVars - nPublic - 1) G1    = cuzk "l"
  9 H:               domainSize G1, [L^(2n)_(2j+1)(τ)/δ]  = cuzk "h", convention odd_lagrange
 10 contributions:   MPC parameters (circuit hash, contributions); kept, not interpreted

Points are affine, x | y (G2: x.c0 | x.c1 | y.c0 | y.c1), each coordinate 48 bytes little-endian
in Montgomery form with R = 2^384: exactly cuzk's device limb layout, so a point section becomes
an AffineBases view with no conversion. Infinity is all zero bytes.

snarkjs's prover (buildABC1) evaluates a = A·z and b = B·z at every row of the coefficient list,
which includes one row `signal_s · 0` per public signal s (ONE included) after the circuit's
constraints, and takes c = a∘b there (C is never read). Its domain uses ω from generator 5.
"""
from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass, field

import numpy as np

from ..curve import AffineBases, PointError, first_bad_point, limbs_to_ark
from ..field import FR_LIMBS, FR_MONT_R, FP_LIMBS, P, R, fr_array, ints_to_limbs, limbs_to_ints
from ..keys import KeyFormatError, ProvingKey
from ..groth16.assignment import Assignment, is_limbs
from ..r1cs import CSR, R1CS
from .binfile import (FormatError, field_ints, limbs_lt, parse, prime_name, u32_words, write_header,
                      write_section)

LABELS = {1: "header", 2: "Groth16 header", 3: "IC points", 4: "coefficients", 5: "A points",
          6: "B1 points", 7: "B2 points", 8: "C points", 9: "H points", 10: "contributions"}
PROTOCOLS = {1: "groth16", 2: "plonk", 10: "fflonk"}
N8Q, N8R = 48, 32
WORDS = {1: 2 * FP_LIMBS, 2: 4 * FP_LIMBS}
CONVENTION, GENERATOR = "odd_lagrange", 5
R2 = FR_MONT_R * FR_MONT_R % R
R2_INV = pow(R2, -1, R)
COEF_DTYPE = np.dtype([("m", "<u4"), ("c", "<u4"), ("s", "<u4"), ("v", "<u4", (FR_LIMBS,))])
# point sections: id -> (cuzk name, group)
POINT_SECTIONS = {3: ("ic", 1), 5: ("a", 1), 6: ("b_g1", 1), 7: ("b_g2", 2), 8: ("l", 1), 9: ("h", 1)}
HEADER_POINTS = (("alpha_g1", 1), ("beta_g1", 1), ("beta_g2", 2), ("gamma_g2", 2), ("delta_g1", 1),
                 ("delta_g2", 2))
WRITE_ORDER = tuple(range(1, 11))     # as `snarkjs zkey contribute` writes (`groth16 setup`: 1,2,4,3,9,8,5,6,7,10)


class Coeffs:
    """The A and B entries snarkjs's prover uses, in file order. `value` (canonical ints) is made on
    first use from `raw` (uint32[k, 8], value·R² mod r as the file stores it) when read from a key."""

    def __init__(self, matrix, row, col, value=None, raw=None):
        if value is None and raw is None:
            raise ValueError("Coeffs needs value or raw")
        self.matrix = matrix   # int64[k]: 0 = A, 1 = B
        self.row = row         # int64[k]
        self.col = col         # int64[k]
        self._value, self._raw = value, raw

    @property
    def value(self) -> np.ndarray:
        """object[k], canonical."""
        if self._value is None:
            self._value = (field_ints(self._raw) * R2_INV) % R
        return self._value

    def raw(self) -> np.ndarray:
        """uint32[k, 8]: value·R² mod r in limbs, as the file stores it (the Montgomery form of
        value·R: a Montgomery reduction on the GPU gives value's Montgomery form)."""
        if self._raw is None:
            self._raw = ints_to_limbs((fr_array(self._value) * R2) % R, FR_LIMBS)
        return self._raw

    def __len__(self) -> int:
        return len(self.row)

    def rows_of(self, which: int, rows: int) -> tuple[np.ndarray, np.ndarray]:
        """(order, indptr): matrix `which`'s entries sorted by row (file order kept within a row)."""
        sel = np.flatnonzero(self.matrix == which)
        order = sel[np.argsort(self.row[sel], kind="stable")]
        indptr = np.zeros(rows + 1, dtype=np.int64)
        np.cumsum(np.bincount(self.row[order], minlength=rows), out=indptr[1:])
        return order, indptr

    def csr(self, which: int, rows: int) -> CSR:
        order, indptr = self.rows_of(which, rows)
        return CSR(indptr, self.col[order], self.value[order])

    def raw_csr(self, which: int, rows: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Matrix `which` (0 = A, 1 = B) as the device takes it (gpu/zkey.py): (indptr int64[rows + 1],
        cols int32[nnz], raw uint32[nnz, 8]: value·R² mod r), in csr's row order (= ZKey.matrices())."""
        order, indptr = self.rows_of(which, rows)
        cols = self.col[order]
        if len(cols) and cols.max() >= 2**31:
            raise ValueError("more than 2^31 signals")
        return indptr, cols.astype(np.int32), np.ascontiguousarray(self.raw()[order])

    def equals(self, other: "Coeffs") -> bool:
        return (len(self) == len(other) and all(np.array_equal(getattr(self, k), getattr(other, k))
                                                for k in ("matrix", "row", "col", "value")))


def coeffs_from_r1cs(r1cs: R1CS) -> Coeffs:
    """What `snarkjs groth16 setup` writes for this circuit: per constraint its A terms then its B
    terms, then one A entry `1 · signal_s` at row m + s for each public signal s (ONE included)."""
    A, B = r1cs.A, r1cs.B
    rows = np.concatenate([A.row_ids(), B.row_ids()])
    mat = np.concatenate([np.zeros(A.nnz, np.int64), np.ones(B.nnz, np.int64)])
    order = np.lexsort((mat, rows))               # by row, A before B, file order kept within
    m, ni = r1cs.num_constraints, r1cs.num_inputs
    one = np.empty(ni, dtype=object)
    one.fill(1)
    return Coeffs(np.concatenate([mat[order], np.zeros(ni, np.int64)]),
                  np.concatenate([rows[order], m + np.arange(ni, dtype=np.int64)]),
                  np.concatenate([np.concatenate([A.cols, B.cols])[order].astype(np.int64),
                                  np.arange(ni, dtype=np.int64)]),
                  np.concatenate([np.concatenate([A.coeffs, B.coeffs])[order] % R, one]))


@dataclass
class ZKey:
    pk: ProvingKey            # convention odd_lagrange, generator 5
    n_public: int             # public signals, ONE not counted
    coeffs: Coeffs
    mpc: bytes | None = None  # section 10 as read (written back unchanged)
    name: str = "<zkey>"
    _mats: tuple | None = field(default=None, repr=False)
    _device: object = field(default=None, repr=False)    # gpu.zkey.DeviceZKey per device index, made on first use there

    @property
    def n_vars(self) -> int:
        return self.pk.num_inputs + self.pk.num_aux

    @property
    def domain_size(self) -> int:
        return 1 << self.pk.log_n

    def verifying_key(self):
        return self.pk.verifying_key()

    def matrices(self) -> tuple[CSR, CSR]:
        if self._mats is None:
            self._mats = (self.coeffs.csr(0, self.domain_size), self.coeffs.csr(1, self.domain_size))
        return self._mats

    def check_witness(self, n: int, first: int) -> None:
        """`n` values, value 0 (ONE) equal to `first`: else ValueError."""
        if n != self.n_vars:
            raise ValueError(f"the witness has {n} values, the key's circuit has {self.n_vars} signals")
        if first != 1:
            raise ValueError(f"witness value 0 (the constant ONE) is {first}, not 1")

    def assign(self, values) -> Assignment:
        """a, b, c over the domain exactly as snarkjs's prover builds them: a = A·z, b = B·z,
        c = a∘b. Without C the witness cannot be checked here; a wrong one gives a proof that
        does not verify. `values`: Fr ints, or canonical limbs uint32[n, 8]."""
        z = limbs_to_ints(values) if is_limbs(values) else fr_array(values)
        self.check_witness(len(z), z[0] if len(z) else None)
        A, B = self.matrices()
        a, b = A.matvec(z), B.matvec(z)
        ni = self.pk.num_inputs
        return Assignment(z[:ni].copy(), z[ni:].copy(), a, b, (a * b) % R)


def _points(bf, sid: int, group: int, count: int, mv=None) -> AffineBases:
    sec = bf.section(sid) if mv is None else mv
    words = WORDS[group]
    if len(sec) != count * words * 4:
        raise bf.error(sid, f"size {len(sec)} bytes, expected {count * words * 4} for {count} "
                            f"G{group} points")
    limbs = u32_words(sec, count, words)
    bad = np.flatnonzero(~limbs_lt(limbs.reshape(-1, FP_LIMBS), P))
    if len(bad):
        raise bf.error(sid, f"point {bad[0] // (words // FP_LIMBS)}: a coordinate is not reduced mod p")
    return AffineBases(group, limbs, ~limbs.any(axis=1))


def read_zkey(source, name: str | None = None) -> ZKey:
    bf = parse(source, "zkey", 2, LABELS, name)
    h = bf.reader(1)
    proto = h.u32("the protocol id")
    h.done()
    if proto != 1:
        raise bf.error(1, f"protocol {PROTOCOLS.get(proto, f'id {proto}')}, not groth16")

    g = bf.reader(2)
    n8q = g.u32("n8q")
    q = g.bigint(n8q, "the base field prime") if n8q <= 64 else None
    if q != P:
        raise bf.error(2, f"the base field is {prime_name(q) if q else f'{n8q} bytes long'}: the key is "
                          f"not for bls12381")
    if n8q != N8Q:
        raise bf.error(2, f"n8q is {n8q}, expected {N8Q}")
    n8r = g.u32("n8r")
    r = g.bigint(n8r, "the scalar field prime") if n8r <= 64 else None
    if r != R or n8r != N8R:
        raise bf.error(2, f"the scalar field is {prime_name(r) if r else f'{n8r} bytes long'}, not "
                          f"bls12381's r")
    n_vars = g.u32("nVars")
    n_public = g.u32("nPublic")
    domain = g.u32("domainSize")
    if domain < 2 or domain & (domain - 1):
        raise bf.error(2, f"domain size {domain} is not a power of two >= 2")
    if n_public + 1 > n_vars:
        raise bf.error(2, f"nPublic {n_public} + ONE exceeds nVars {n_vars}")
    pts = {}
    for pname, group in HEADER_POINTS:
        raw = g.raw(WORDS[group] * 4, pname)
        pts[pname] = _points(bf, 2, group, 1, raw)
    g.done()
    for pname, _ in HEADER_POINTS:                  # 6 points: check them fully (curve and subgroup)
        try:
            limbs_to_ark(pts[pname].group, pts[pname].limbs, pts[pname].inf, check=True)
        except PointError as e:
            raise bf.error(2, f"{pname}: {e}") from e
        if pts[pname].inf[0]:
            raise bf.error(2, f"{pname} is the point at infinity")

    ni = n_public + 1
    counts = {3: ni, 5: n_vars, 6: n_vars, 7: n_vars, 8: n_vars - ni, 9: domain}
    for sid, (pname, group) in POINT_SECTIONS.items():
        pts[pname] = _points(bf, sid, group, counts[sid])
    why = first_bad_point(pts["ic"], (0,))          # what the verifier uses; IC[0] at infinity fails every proof
    if why is not None:
        raise bf.error(3, why)

    coeffs, nc, digest = _read_coeffs(bf, n_vars, n_public, domain)
    mpc = bytes(bf.section(10)) if bf.has(10) else None
    pk = ProvingKey(CONVENTION, GENERATOR, domain.bit_length() - 1, ni, n_vars - ni, nc, digest, pts)
    try:
        pk.check_shapes()
    except KeyFormatError as e:
        raise FormatError(f"{bf.name}: {e}") from e
    return ZKey(pk, n_public, coeffs, mpc, bf.name)


def _read_coeffs(bf, n_vars: int, n_public: int, domain: int):
    sec = bf.section(4)
    if len(sec) < 4:
        raise bf.error(4, f"truncated: {len(sec)} bytes")
    n = int.from_bytes(sec[:4], "little")
    if len(sec) != 4 + n * COEF_DTYPE.itemsize:
        raise bf.error(4, f"size {len(sec)} bytes, expected {4 + n * COEF_DTYPE.itemsize} for {n} "
                          f"coefficients")
    rec = np.frombuffer(sec, dtype=COEF_DTYPE, count=n, offset=4)
    mat, row, col = (rec[k].astype(np.int64) for k in ("m", "c", "s"))
    for vals, limit, what in ((mat, 2, "matrix {} (only 0 = A and 1 = B are stored)"),
                              (row, domain, "constraint {}, outside the domain of " + str(domain)),
                              (col, n_vars, "signal {}, but nVars is " + str(n_vars))):
        i = np.flatnonzero(vals >= limit)
        if len(i):
            raise bf.error(4, f"coefficient {i[0]}: " + what.format(vals[i[0]]))
    limbs = np.ascontiguousarray(rec["v"])
    i = np.flatnonzero(~limbs_lt(limbs, R))
    if len(i):
        raise bf.error(4, f"coefficient {i[0]}: value not reduced mod r")
    # snarkjs puts the public-signal rows last, at m + s for s = 0..nPublic; m follows from them.
    nc = max(int(row.max()) - n_public, 0) if n else 0
    digest = hashlib.sha256(struct.pack("<III", n_vars, n_public, domain) + bytes(sec)).digest()
    return Coeffs(mat, row, col, raw=limbs), nc, digest


class _HashingWriter:
    def __init__(self, f):
        self.f, self.h = f, hashlib.blake2b(digest_size=64)

    def write(self, b) -> None:
        self.h.update(b)
        self.f.write(b)


def _point_bytes(pts: AffineBases) -> np.ndarray:
    limbs = np.ascontiguousarray(pts.limbs, dtype="<u4")
    if pts.inf.any():
        limbs = np.where(pts.inf[:, None], np.uint32(0), limbs).astype("<u4")
    return limbs


def write_zkey(f, pk: ProvingKey, coeffs: Coeffs, mpc: bytes | None = None) -> None:
    """Write a snarkjs Groth16 .zkey to the binary file object `f`. Without `mpc`, section 10 holds
    a blake2b-512 of sections 2 to 9 (not snarkjs's circuit hash) and no contributions."""
    if pk.convention != CONVENTION or pk.generator != GENERATOR:
        raise ValueError(f"a snarkjs key needs the {CONVENTION} H convention with generator {GENERATOR}; "
                         f"this key has {pk.convention} with generator {pk.generator}")
    n = 1 << pk.log_n
    n_vars, ni = pk.num_inputs + pk.num_aux, pk.num_inputs
    if len(coeffs) and (coeffs.row.max() >= n or coeffs.col.max() >= n_vars or coeffs.matrix.max() > 1
                        or coeffs.matrix.min() < 0):
        raise ValueError("coefficients outside the key's domain or signals")
    if n_vars >= 1 << 32 or len(coeffs) >= 1 << 32:
        raise ValueError("too large for the zkey format's 32-bit counts")
    p = pk.points
    rec = np.zeros(len(coeffs), dtype=COEF_DTYPE)
    rec["m"], rec["c"], rec["s"] = coeffs.matrix, coeffs.row, coeffs.col
    rec["v"] = coeffs.raw()
    body = {
        1: (struct.pack("<I", 1),),
        2: (struct.pack("<I", N8Q), P.to_bytes(N8Q, "little"), struct.pack("<I", N8R),
            R.to_bytes(N8R, "little"), struct.pack("<III", n_vars, ni - 1, n),
            *[_point_bytes(p[name]) for name, _ in HEADER_POINTS]),
        3: (_point_bytes(p["ic"]),),
        4: (struct.pack("<I", len(coeffs)), rec),
        5: (_point_bytes(p["a"]),), 6: (_point_bytes(p["b_g1"]),), 7: (_point_bytes(p["b_g2"]),),
        8: (_point_bytes(p["l"]),), 9: (_point_bytes(p["h"]),),
    }
    hw = _HashingWriter(f)
    write_header(f, "zkey", 1, len(WRITE_ORDER))
    for sid in WRITE_ORDER:
        if sid == 10:
            write_section(f, 10, mpc if mpc is not None else hw.h.digest() + struct.pack("<I", 0))
        else:
            write_section(hw if sid > 1 else f, sid, *body[sid])


def zkey_writer(pk, r1cs):
    """A callable for write_all that writes pk as a snarkjs .zkey with r1cs's coefficients."""
    coeffs = coeffs_from_r1cs(r1cs)
    return lambda f: write_zkey(f, pk, coeffs)
