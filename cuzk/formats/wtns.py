"""The witness file `.wtns` (snarkjs/circom, version 2).

  1 header:  n8 u32 | prime[n8] | nWitness u32
  2 values:  nWitness × value[n8], canonical little-endian (not Montgomery)

The values are every wire of the circuit, in the .r1cs wire order: ONE, public outputs,
public inputs, private inputs, internal signals.
"""
from __future__ import annotations

import struct
import numpy as np

from ..field import FR_LIMBS, R, fr_array, ints_to_limbs
from .binfile import field_ints, limbs_lt, parse, prime_name, u32_words, write_header, write_section

LABELS = {1: "header", 2: "witness values"}
N8 = 32


class Witness:
    """The wire values, values[0] is ONE: `limbs` (canonical uint32[nWitness, 8], as read) and
    `values` (Fr ints, made from the limbs on first use)."""

    def __init__(self, values=None, limbs=None):
        if values is None and limbs is None:
            raise ValueError("Witness needs values or limbs")
        self._values, self.limbs = values, limbs

    @property
    def values(self) -> np.ndarray:
        if self._values is None:
            self._values = field_ints(self.limbs)
        return self._values

    def __len__(self) -> int:
        return len(self.limbs) if self.limbs is not None else len(self._values)


def read_wtns(source, name: str | None = None) -> Witness:
    bf = parse(source, "wtns", 2, LABELS, name)
    h = bf.reader(1)
    n8 = h.u32("the field size")
    prime = h.bigint(n8, "the prime") if n8 <= 64 else None
    if prime != R:
        raise bf.error(1, f"the prime is {prime_name(prime) if prime else f'{n8} bytes long'}, "
                          f"not bls12381's r (a witness of a circuit compiled for another curve)")
    if n8 != N8:
        raise bf.error(1, f"field size {n8} bytes, expected {N8}")
    n = h.u32("nWitness")
    h.done()
    sec = bf.section(2)
    if len(sec) != n * N8:
        raise bf.error(2, f"size {len(sec)} bytes, expected {n * N8} for {n} values")
    limbs = u32_words(sec, n, FR_LIMBS)
    bad = np.flatnonzero(~limbs_lt(limbs, R))
    if len(bad):
        raise bf.error(2, f"value {bad[0]} is not reduced mod r")
    return Witness(limbs=np.array(limbs))          # a copy: the file's buffer is not kept


def write_wtns(f, values) -> None:
    """Write the wire values (ONE first) as a version-2 .wtns to the binary file object `f`."""
    v = fr_array(values)
    write_header(f, "wtns", 2, 2)
    write_section(f, 1, struct.pack("<I", N8) + R.to_bytes(N8, "little") + struct.pack("<I", len(v)))
    write_section(f, 2, ints_to_limbs(v, FR_LIMBS))
