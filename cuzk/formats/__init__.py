"""snarkjs/circom binary files over BLS12-381: `.r1cs`, `.wtns` and Groth16 `.zkey`.

All three use iden3's section container (binfile.py): a 4-byte magic, a u32 version, a u32
section count, then sections (u32 id, u64 size, payload) in any order. Every reader raises
`FormatError` (a ValueError) for a truncated or corrupt file, a wrong curve or a wrong
protocol, with a message that names the file and the section.
"""
from .binfile import FormatError
from .r1csfile import CircomR1CS, read_r1cs, write_r1cs
from .wtns import Witness, read_wtns, write_wtns
from .zkey import Coeffs, ZKey, coeffs_from_r1cs, read_zkey, write_zkey, zkey_writer

__all__ = ["FormatError", "CircomR1CS", "read_r1cs", "write_r1cs", "Witness", "read_wtns", "write_wtns",
           "Coeffs", "ZKey", "coeffs_from_r1cs", "read_zkey", "write_zkey", "zkey_writer"]
