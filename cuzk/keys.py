"""Groth16 proving and verifying keys, and the versioned binary key file (docs/key-format.md).

All points are AffineBases in device layout, so a key file is read straight into the
arrays the GPU uploads.
"""
from __future__ import annotations

import errno
import hashlib
import os
import struct
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .curve import G1_WORDS, G2_WORDS, AffineBases, first_bad_point
from .files import file_mode, new_temp, open_input
from .qap import CONVENTIONS, QAP, qap

MAGIC = b"CUZKKEY\0"
VERSION = 1
CURVE = b"bls12381".ljust(16, b"\0")
# order of the point sections in the file: (name, group)
SECTIONS = (
    ("alpha_g1", 1), ("beta_g1", 1), ("beta_g2", 2), ("gamma_g2", 2), ("delta_g1", 1), ("delta_g2", 2),
    ("ic", 1), ("a", 1), ("b_g1", 1), ("b_g2", 2), ("l", 1), ("h", 1),
)
# Sections checked point by point on load (curve, subgroup; infinity where Groth16 forbids it: the
# single points and IC[0]). The bulk sections (a, b_g1, b_g2, l, h) are 2^24 points and more: a point
# outside its subgroup there can only reach a proof through pi_a, pi_b or pi_c, which the prover's
# callers check before anything is written (groth16.proof_point_error).
SMALL_SECTIONS = {"alpha_g1": (0,), "beta_g1": (0,), "beta_g2": (0,), "gamma_g2": (0,), "delta_g1": (0,),
                  "delta_g2": (0,), "ic": (0,)}
_HEADER = struct.Struct("<8sI16sIIIQQQ32s")   # magic, version, curve, convention, generator, log_n,
                                              # num_inputs, num_aux, num_constraints, circuit digest
_SECTION = struct.Struct("<4sIQ")              # name tag, group, count


class KeyFormatError(ValueError):
    """A key file that is truncated, corrupt, for another curve, or of another version."""


class KeyUnreadable(KeyFormatError):
    """A key file that could not be read at all (permissions, not a regular file, an I/O error): nothing
    is known about its content, so the key cache leaves it in place rather than making it again."""


def fsync_dir(folder: str | os.PathLike) -> None:
    """fsync a folder, so that a rename in it survives a crash. File systems that cannot fsync a folder
    (EINVAL, ENOTSUP) are let be: there the rename is as durable as it gets."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError as e:
        if e.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF):
            raise
    finally:
        os.close(fd)


@dataclass
class ProvingKey:
    convention: str
    generator: int
    log_n: int
    num_inputs: int          # including ONE
    num_aux: int
    num_constraints: int
    digest: bytes            # sha256 of the circuit
    points: dict[str, AffineBases] = field(default_factory=dict)
    _ark: dict = field(default_factory=dict, repr=False)

    def __getattr__(self, name):
        pts = self.__dict__.get("points", {})
        if name in pts:
            return pts[name]
        raise AttributeError(name)

    @property
    def qap(self) -> QAP:
        """The key's R1CS-to-QAP convention (qap.py), from the name the key carries."""
        return qap(self.convention)

    def ark(self, name: str) -> list:
        """The section as arkworks points, converted once and kept (the CPU backend's 'upload')."""
        if name not in self._ark:
            self._ark[name] = self.points[name].to_ark()
        return self._ark[name]

    def check_shapes(self) -> None:
        nv = self.num_inputs + self.num_aux
        n = 1 << self.log_n
        want = {"alpha_g1": 1, "beta_g1": 1, "beta_g2": 1, "gamma_g2": 1, "delta_g1": 1, "delta_g2": 1,
                "ic": self.num_inputs, "a": nv, "b_g1": nv, "b_g2": nv, "l": self.num_aux,
                "h": self.qap.h_len(n)}
        for name, count in want.items():
            got = len(self.points[name]) if name in self.points else None
            if got != count:
                raise KeyFormatError(f"section {name}: {got} points, expected {count}")
        if self.num_constraints + self.num_inputs > n:
            raise KeyFormatError(f"domain 2^{self.log_n} is smaller than the circuit")

    def check_small_sections(self) -> None:
        """KeyFormatError naming the section and point where a small section's point is unusable."""
        for name, no_inf in SMALL_SECTIONS.items():
            why = first_bad_point(self.points[name], no_inf)
            if why is not None:
                raise KeyFormatError(f"section {name}: {why}")

    def verifying_key(self) -> "VerifyingKey":
        p = self.points
        return VerifyingKey(p["alpha_g1"].to_ark()[0], p["beta_g2"].to_ark()[0], p["gamma_g2"].to_ark()[0],
                            p["delta_g2"].to_ark()[0], p["ic"].to_ark())

    # --- file format ---

    def save(self, path: str | os.PathLike) -> None:
        """Write atomically and durably: a temp file in the same folder, fsynced, renamed into place, then
        the folder fsynced (without it a crash can leave the new name pointing at unwritten blocks: a
        truncated key)."""
        path = Path(path)
        missing = [name for name, _ in SECTIONS if name not in self.points]
        if missing:
            raise KeyFormatError(f"{path}: the key lacks sections {', '.join(missing)} (a key kept on the GPU "
                                 f"cannot be saved)")
        path.parent.mkdir(parents=True, exist_ok=True)
        h = hashlib.sha256()
        tmps: list = []
        try:
            fd = new_temp(path, tmps)                # registered before a signal can land
            tmp = tmps[0]
            with os.fdopen(fd, "wb") as f:
                def put(b: bytes) -> None:
                    h.update(b)
                    f.write(b)
                put(_HEADER.pack(MAGIC, VERSION, CURVE, CONVENTIONS.index(self.convention), self.generator,
                                 self.log_n, self.num_inputs, self.num_aux, self.num_constraints,
                                 self.digest))
                for name, group in SECTIONS:
                    pts = self.points[name]
                    put(_SECTION.pack(name.encode()[:4].ljust(4, b"\0"), group, len(pts)))
                    put(np.ascontiguousarray(pts.limbs, dtype="<u4").tobytes())
                    flags = pts.inf.astype(np.uint8).tobytes()
                    put(flags + b"\0" * (-len(flags) % 8))
                f.write(h.digest())
                os.fchmod(f.fileno(), file_mode())   # the usual mode, not mkstemp's 0600
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
            fsync_dir(path.parent)
        except BaseException:
            for tmp in tmps:
                if os.path.exists(tmp):
                    os.unlink(tmp)
            raise

    @classmethod
    def load(cls, path: str | os.PathLike) -> "ProvingKey":
        path = Path(path)
        try:
            with open_input(path) as f:
                data = f.read()
        except OSError as e:
            raise KeyUnreadable(f"{path}: cannot read: {e.strerror}") from e
        where = str(path)
        if len(data) < _HEADER.size + 32:
            raise KeyFormatError(f"{where}: truncated header ({len(data)} bytes)")
        magic, version, curve, conv, gen, log_n, ni, na, nc, digest = _HEADER.unpack_from(data, 0)
        if magic != MAGIC:
            raise KeyFormatError(f"{where}: not a cuzk key (bad magic)")
        if version != VERSION:
            raise KeyFormatError(f"{where}: key format version {version}, this cuzk reads {VERSION}")
        if curve != CURVE:
            raise KeyFormatError(f"{where}: key is for curve {curve.rstrip(bytes(1)).decode(errors='replace')!r}, "
                                 f"not bls12381")
        if conv >= len(CONVENTIONS) or not 1 <= log_n <= 32:
            raise KeyFormatError(f"{where}: bad header (convention {conv}, log_n {log_n})")
        if hashlib.sha256(memoryview(data)[:-32]).digest() != data[-32:]:   # a view: no copy of the key
            raise KeyFormatError(f"{where}: checksum mismatch (truncated or corrupt)")
        key = cls(CONVENTIONS[conv], gen, log_n, ni, na, nc, digest)
        off = _HEADER.size
        body_end = len(data) - 32
        for name, group in SECTIONS:
            if off + _SECTION.size > body_end:
                raise KeyFormatError(f"{where}: section {name}: truncated")
            tag, g, count = _SECTION.unpack_from(data, off)
            off += _SECTION.size
            if tag.rstrip(b"\0") != name.encode()[:4] or g != group:
                raise KeyFormatError(f"{where}: section {name}: bad tag or group")
            words = G1_WORDS if group == 1 else G2_WORDS
            nbytes = count * words * 4
            flen = count + (-count % 8)
            if off + nbytes + flen > body_end:
                raise KeyFormatError(f"{where}: section {name}: truncated ({count} points declared)")
            limbs = np.frombuffer(data, dtype="<u4", count=count * words, offset=off).reshape(count, words)
            off += nbytes
            inf = np.frombuffer(data, dtype=np.uint8, count=count, offset=off).astype(bool)
            off += flen
            key.points[name] = AffineBases(group, limbs, inf)
        if off != body_end:
            raise KeyFormatError(f"{where}: {body_end - off} unexpected trailing bytes")
        try:
            key.check_shapes()
            key.check_small_sections()
        except KeyFormatError as e:
            raise KeyFormatError(f"{where}: {e}") from e
        return key


@dataclass
class VerifyingKey:
    alpha_g1: object
    beta_g2: object
    gamma_g2: object
    delta_g2: object
    ic: list

    @property
    def num_public(self) -> int:
        return len(self.ic) - 1
