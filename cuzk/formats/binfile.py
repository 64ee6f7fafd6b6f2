"""iden3's binary container, shared by `.r1cs`, `.wtns`, `.zkey` (and `.ptau`).

    magic[4] | version u32 | nSections u32 | nSections × (id u32 | size u64 | payload[size])

All integers are little-endian. Sections may come in any order; a reader looks them up by
id, and an id the format uses must appear once. Files are mapped read-only, so big point
sections become numpy views without a copy. A section with an id the format does not use is
stepped over: nothing of it is read or kept, so padding a file costs no memory.
"""
from __future__ import annotations

import mmap
import os
import struct
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..field import P, R, limbs_to_ints
from ..files import open_input

_FILE_HDR = struct.Struct("<4sII")
_SECTION_HDR = struct.Struct("<IQ")


class FormatError(ValueError):
    """A snarkjs/circom file that is truncated, corrupt, for another curve or another protocol.
    The message names the file and, where one is at fault, the section."""


def load(source, name: str | None = None) -> tuple[memoryview, str]:
    """(read-only buffer, display name) for a path or a bytes-like object."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return memoryview(source).cast("B"), name or "<bytes>"
    path = Path(source)
    shown = name or str(path)
    try:
        with open_input(path) as f:
            size = os.fstat(f.fileno()).st_size
            if size == 0:
                return memoryview(b""), shown
            mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except OSError as e:
        raise FormatError(f"{shown}: cannot read: {e.strerror or e}") from e
    return memoryview(mm), shown


@dataclass
class BinFile:
    buf: memoryview
    name: str
    kind: str
    version: int
    labels: dict                                   # section id the format uses -> human name
    table: dict = field(default_factory=dict)      # section id -> (offset, size)

    def where(self, sid: int) -> str:
        label = self.labels.get(sid)
        return f"{self.name}: section {sid}" + (f" ({label})" if label else "")

    def error(self, sid: int | None, msg: str) -> FormatError:
        return FormatError(f"{self.where(sid) if sid is not None else self.name}: {msg}")

    def has(self, sid: int) -> bool:
        return sid in self.table

    def section(self, sid: int) -> memoryview:
        if sid not in self.table:
            raise self.error(sid, f"missing from this .{self.kind} file (truncated or corrupt?)")
        off, size = self.table[sid]
        return self.buf[off:off + size]

    def reader(self, sid: int) -> "SectionReader":
        return SectionReader(self.section(sid), self, sid)


def parse(source, kind: str, max_version: int, labels: dict, name: str | None = None) -> BinFile:
    """Read the container header and the section table; check that every section fits. Only the
    ids in `labels` are recorded, each once (a second copy is refused at once): a file of many
    tiny or unknown sections costs no memory per section."""
    buf, name = load(source, name)
    if len(buf) < _FILE_HDR.size:
        raise FormatError(f"{name}: truncated: {len(buf)} bytes, not even a .{kind} header")
    magic, version, nsec = _FILE_HDR.unpack_from(buf, 0)
    if magic != kind.encode():
        raise FormatError(f"{name}: not a .{kind} file (magic {bytes(magic)!r}, expected {kind.encode()!r})")
    if not 1 <= version <= max_version:
        raise FormatError(f"{name}: .{kind} version {version} is not supported (1..{max_version})")
    bf = BinFile(buf, name, kind, version, labels)
    off = _FILE_HDR.size
    for i in range(nsec):
        if off + _SECTION_HDR.size > len(buf):
            raise FormatError(f"{name}: truncated: the header of section #{i + 1} of {nsec} is cut off "
                              f"at byte {len(buf)}")
        sid, size = _SECTION_HDR.unpack_from(buf, off)
        off += _SECTION_HDR.size
        if size > len(buf) - off:
            raise FormatError(f"{bf.where(sid)}: truncated: declares {size} bytes, {len(buf) - off} remain")
        if sid in labels:
            if sid in bf.table:
                raise bf.error(sid, "appears more than once")
            bf.table[sid] = (off, size)
        off += size
    if off != len(buf):
        raise FormatError(f"{name}: {len(buf) - off} unexpected bytes after the last of {nsec} sections")
    return bf


class SectionReader:
    """Sequential reads inside one section, each bounds-checked against the section."""

    def __init__(self, mv: memoryview, bf: BinFile, sid: int):
        self.mv, self.bf, self.sid, self.pos = mv, bf, sid, 0

    def _take(self, n: int, what: str) -> memoryview:
        if self.pos + n > len(self.mv):
            raise self.bf.error(self.sid, f"truncated: {what} needs {n} bytes at offset {self.pos}, "
                                          f"the section has {len(self.mv)}")
        out = self.mv[self.pos:self.pos + n]
        self.pos += n
        return out

    def u32(self, what: str) -> int:
        return int.from_bytes(self._take(4, what), "little")

    def u64(self, what: str) -> int:
        return int.from_bytes(self._take(8, what), "little")

    def bigint(self, n8: int, what: str) -> int:
        return int.from_bytes(self._take(n8, what), "little")

    def raw(self, n: int, what: str) -> memoryview:
        return self._take(n, what)

    def rest(self) -> memoryview:
        out = self.mv[self.pos:]
        self.pos = len(self.mv)
        return out

    def done(self) -> None:
        if self.pos != len(self.mv):
            raise self.bf.error(self.sid, f"size {len(self.mv)} bytes, expected {self.pos}")


# --- field elements in bulk ---

def limbs_lt(limbs: np.ndarray, modulus: int) -> np.ndarray:
    """bool[N]: is each little-endian uint32[N, k] number below `modulus`? (vectorized)"""
    n, k = limbs.shape
    if n == 0:
        return np.ones(0, dtype=bool)
    m = np.frombuffer(modulus.to_bytes(4 * k, "little"), dtype="<u4")
    top_first = limbs[:, ::-1]
    mt = m[::-1]
    ne = top_first != mt
    first = ne.argmax(axis=1)                               # the most significant differing limb
    differs = ne[np.arange(n), first]
    return differs & (top_first[np.arange(n), first] < mt[first])


def u32_words(mv: memoryview, count: int, width: int) -> np.ndarray:
    """uint32[count, width] view of `mv` (read-only, no copy)."""
    return np.frombuffer(mv, dtype="<u4", count=count * width).reshape(count, width)


def field_ints(limbs: np.ndarray) -> np.ndarray:
    """uint32[N, k] canonical little-endian values -> object array of ints."""
    return limbs_to_ints(limbs)


# --- writing ---

def write_header(f, kind: str, version: int, nsections: int) -> None:
    f.write(_FILE_HDR.pack(kind.encode(), version, nsections))


def write_section(f, sid: int, *parts) -> None:
    """One section whose payload is the concatenation of `parts` (bytes or numpy arrays)."""
    # an empty array (a circuit with no private wire) has no byte view to cast: it writes nothing
    views = [(memoryview(np.ascontiguousarray(p)).cast("B") if p.size else memoryview(b""))
             if isinstance(p, np.ndarray) else memoryview(p) for p in parts]
    f.write(_SECTION_HDR.pack(sid, sum(v.nbytes for v in views)))
    for v in views:
        f.write(v)


# --- curves, to name the one a file was made for ---

BN254_P = 21888242871839275222246405745257275088696311157297823662689037894645226208583
BN254_R = 21888242871839275222246405745257275088548364400416034343698204186575808495617


def prime_name(prime: int) -> str:
    known = {R: "the bls12381 scalar field r", P: "the bls12381 base field p",
             BN254_R: "the bn128 (BN254) scalar field r", BN254_P: "the bn128 (BN254) base field p"}
    if prime in known:
        return known[prime]
    s = str(prime)
    return f"an unknown prime {s[:12]}{'...' if len(s) > 12 else ''}"
