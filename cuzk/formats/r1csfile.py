"""circom's `.r1cs` (iden3 r1csfile, version 1) <-> cuzk's CSR `R1CS`.

  1 header:       n8 u32 | prime[n8] | nWires u32 | nPubOut u32 | nPubIn u32 | nPrvIn u32 |
                  nLabels u64 | nConstraints u32
  2 constraints:  per constraint, the linear combinations A, B, C, each
                  n u32 | n × (wire u32 | coefficient[n8], canonical little-endian)
  3 wire map:     nWires × label id u64 (circom always writes it; without it, nWires must be
                  what the constraints use: every wire count is backed by bytes of the file)
  4, 5:           PLONK custom gates (rejected here: Groth16 has none)

circom numbers wires ONE, public outputs, public inputs, private inputs, internal signals,
which is cuzk's order ONE, inputs, aux with inputs = outputs then public inputs.
"""
from __future__ import annotations

import struct
from array import array
from dataclasses import dataclass

import numpy as np

from ..field import FR_LIMBS, R, ints_to_limbs
from ..r1cs import CSR, R1CS
from .binfile import (FormatError, field_ints, limbs_lt, parse, prime_name, write_header,
                      write_section)

LABELS = {1: "header", 2: "constraints", 3: "wire-to-label map", 4: "custom gates list",
          5: "custom gates uses"}
N8 = 32
_U32 = struct.Struct("<I")


@dataclass
class CircomR1CS:
    r1cs: R1CS
    n_outputs: int
    n_pub_inputs: int
    n_prv_inputs: int
    n_labels: int
    wire_labels: np.ndarray | None = None      # uint64[nWires], when the file has the map

    @property
    def n_public(self) -> int:
        """Public signals, not counting ONE (snarkjs's nPublic)."""
        return self.n_outputs + self.n_pub_inputs

    @property
    def n_wires(self) -> int:
        return self.r1cs.num_vars


def read_r1cs(source, name: str | None = None) -> CircomR1CS:
    bf = parse(source, "r1cs", 1, LABELS, name)
    for sid in (4, 5):
        if bf.has(sid):
            raise bf.error(sid, "PLONK custom gates are not supported by Groth16 (compile without them)")
    h = bf.reader(1)
    n8 = h.u32("the field size")
    prime = h.bigint(n8, "the prime") if n8 <= 64 else None
    if prime != R:
        raise bf.error(1, f"the prime is {prime_name(prime) if prime else f'{n8} bytes long'}, "
                          f"not bls12381's r (compile with circom --prime bls12381)")
    if n8 != N8:
        raise bf.error(1, f"field size {n8} bytes, expected {N8}")
    n_wires = h.u32("nWires")
    n_out = h.u32("nPubOut")
    n_pub = h.u32("nPubIn")
    n_prv = h.u32("nPrvIn")
    n_labels = h.u64("nLabels")
    m = h.u32("nConstraints")
    h.done()
    # keygen makes points for every wire, so nWires must be paid for by bytes that describe wires,
    # before anything is sized by it: 8 per wire in the wire map (circom always writes one), or,
    # without a map, a constraint term (36 bytes) that uses the last wire (checked once read).
    if bf.has(3):
        if len(bf.section(3)) != 8 * n_wires:
            raise bf.error(3, f"size {len(bf.section(3))} bytes, expected {8 * n_wires} for {n_wires} wires")
    elif bf.has(2) and n_wires > 1 + len(bf.section(2)) // (4 + N8):
        raise bf.error(1, f"nWires: declares {n_wires} wires, but there is no wire map (section 3) and the "
                          f"constraints ({len(bf.section(2))} bytes) cannot use that many (truncated or corrupt)")
    if 1 + n_out + n_pub + n_prv > n_wires:
        raise bf.error(1, f"{n_out} outputs + {n_pub} public + {n_prv} private inputs + ONE exceed "
                          f"{n_wires} wires")
    ni = 1 + n_out + n_pub

    mats = _read_constraints(bf, m, n_wires)
    if not bf.has(3):
        used = 1 + max((int(x.cols.max()) for x in mats if x.nnz), default=0)
        if n_wires > used:
            raise bf.error(1, f"nWires: declares {n_wires} wires, but there is no wire map (section 3) and the "
                              f"constraints use only wires 0..{used - 1} (truncated or corrupt)")
    labels = None
    if bf.has(3):
        labels = np.frombuffer(bf.section(3), dtype="<u8")
    r1cs = R1CS(ni, n_wires - ni, *mats)
    return CircomR1CS(r1cs, n_out, n_pub, n_prv, n_labels, labels)


def _read_constraints(bf, m: int, n_wires: int) -> list[CSR]:
    sec = bf.section(2)
    size = len(sec)
    if 12 * m > size:
        raise bf.error(2, f"truncated: {m} constraints need at least {12 * m} bytes, the section has {size}")
    term = 4 + N8
    # The one sequential step: walk the 3m linear combinations to find where each starts (each
    # starts with its term count). Everything after is vectorized over all terms.
    # array, not list: 8 bytes per combination, where a list of ints costs ~40 (empty combinations
    # are 4 bytes of file each).
    unpack = _U32.unpack_from
    starts, counts = array("q"), array("q")
    pos = 0
    for k in range(3 * m):
        if pos + 4 > size:
            raise bf.error(2, f"truncated in constraint {k // 3} of {m}")
        c = unpack(sec, pos)[0]
        starts.append(pos + 4)
        counts.append(c)
        pos += 4 + term * c
        if pos > size:
            raise bf.error(2, f"truncated in constraint {k // 3} of {m} ({c} terms declared)")
    if pos != size:
        raise bf.error(2, f"{size - pos} unexpected bytes after constraint {m - 1}")
    counts = np.frombuffer(counts, dtype=np.int64) if m else np.zeros(0, np.int64)
    starts = np.frombuffer(starts, dtype=np.int64) if m else np.zeros(0, np.int64)
    total = int(counts.sum())
    lc = np.repeat(np.arange(3 * m, dtype=np.int64), counts)
    first = np.concatenate([[0], np.cumsum(counts)[:-1]]) if m else np.zeros(0, np.int64)
    off_words = (starts[lc] + term * (np.arange(total, dtype=np.int64) - first[lc])) // 4
    words = np.frombuffer(sec, dtype="<u4", count=size // 4)
    wires = words[off_words].astype(np.int64)
    vals = words[off_words[:, None] + 1 + np.arange(FR_LIMBS)]
    bad = np.flatnonzero(wires >= n_wires)
    if len(bad):
        raise bf.error(2, f"constraint {lc[bad[0]] // 3} uses wire {wires[bad[0]]}, but there are {n_wires}")
    bad = np.flatnonzero(~limbs_lt(vals, R))
    if len(bad):
        raise bf.error(2, f"constraint {lc[bad[0]] // 3} has a coefficient that is not reduced mod r")
    coeffs = field_ints(vals)
    mats = []
    for j in range(3):
        sel = (lc % 3) == j
        indptr = np.zeros(m + 1, dtype=np.int64)
        np.cumsum(counts[j::3], out=indptr[1:])
        mats.append(CSR(indptr, wires[sel], coeffs[sel]))
    return mats


def write_r1cs(f, r1cs: R1CS, n_outputs: int = 0, n_prv_inputs: int = 0, n_labels: int | None = None,
               wire_labels=None) -> None:
    """Write `r1cs` as a circom .r1cs to the binary file object `f`. Its inputs (after ONE) are
    n_outputs public outputs, then public inputs; n_prv_inputs of the aux are private inputs.
    Without labels, wire i has label i."""
    ni = r1cs.num_inputs
    if not 0 <= n_outputs <= ni - 1 or not 0 <= n_prv_inputs <= r1cs.num_aux:
        raise ValueError("bad output or private-input count for this circuit")
    m, nw = r1cs.num_constraints, r1cs.num_vars
    labels = np.arange(nw, dtype="<u8") if wire_labels is None else np.asarray(wire_labels, dtype="<u8")
    if len(labels) != nw:
        raise ValueError(f"{len(labels)} wire labels for {nw} wires")
    n_labels = nw if n_labels is None else n_labels
    header = b"".join([_U32.pack(N8), R.to_bytes(N8, "little"), _U32.pack(nw), _U32.pack(n_outputs),
                       _U32.pack(ni - 1 - n_outputs), _U32.pack(n_prv_inputs),
                       struct.pack("<Q", n_labels), _U32.pack(m)])
    mats = (r1cs.A, r1cs.B, r1cs.C)
    cnt = np.stack([np.diff(x.indptr) for x in mats], axis=1).reshape(-1)    # LC k = 3·row + matrix
    lc_words = 1 + 9 * cnt
    lc_off = np.concatenate([[0], np.cumsum(lc_words)[:-1]]).astype(np.int64)
    words = np.zeros(int(lc_words.sum()), dtype="<u4")
    words[lc_off] = cnt
    for j, x in enumerate(mats):
        if x.nnz == 0:
            continue
        rows = x.row_ids()
        pos = np.arange(x.nnz, dtype=np.int64) - x.indptr[rows]
        dst = lc_off[3 * rows + j] + 1 + 9 * pos
        words[dst] = x.cols
        words[dst[:, None] + 1 + np.arange(FR_LIMBS)] = ints_to_limbs(x.coeffs % R, FR_LIMBS)
    write_header(f, "r1cs", 1, 3)
    write_section(f, 2, words)                   # circom's order: constraints, header, wire map
    write_section(f, 1, header)
    write_section(f, 3, labels)


__all__ = ["CircomR1CS", "read_r1cs", "write_r1cs", "FormatError"]
