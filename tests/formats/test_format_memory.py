"""Memory bounded by what a file holds: .r1cs, .wtns and .zkey padded with zeros (an unknown section, or
thousands of empty section headers), with a declared count set to the file's size, read through the
functions `cuzk keygen --r1cs`, `cuzk prove` and `cuzk export-vk` call, with tracemalloc on (numpy reports
its buffers to it). Each is either handled or refused with a FormatError naming the file and the section,
within PEAK_LIMIT; the keygen one is also run as a command for its exit code and its one line.

The files are put together here section by section, independently of cuzk.formats' writer."""
from __future__ import annotations

import io
import json
import os
import re
import struct
import subprocess
import sys
import tracemalloc

import numpy as np
import pytest

from cuzk import circuits
from cuzk.cli.snarkjs import load_circuit_r1cs
from cuzk.opts import resolve
from cuzk.run import prove_files
from cuzk.formats import FormatError, read_r1cs, read_wtns, read_zkey, write_r1cs, write_wtns, zkey_writer
from cuzk.keygen import setup

PAD = 2 << 20                   # the padded files are 2 MiB
PEAK_LIMIT = 64 << 20
FLOOD_LIMIT = 4 << 20           # empty section headers: nothing is kept per section
UNKNOWN = 0x7FFF                # a section id no format uses


def _sections(data: bytes) -> list[tuple[int, bytes]]:
    n = struct.unpack_from("<I", data, 8)[0]
    out, off = [], 12
    for _ in range(n):
        sid, size = struct.unpack_from("<IQ", data, off)
        out.append((sid, data[off + 12:off + 12 + size]))
        off += 12 + size
    assert off == len(data)
    return out


def _container(magic: bytes, version: int, sections, tail: bytes = b"", tail_count: int = 0) -> bytes:
    body = b"".join(struct.pack("<IQ", sid, len(p)) + p for sid, p in sections)
    return struct.pack("<4sII", magic, version, len(sections) + tail_count) + body + tail


def _padded(magic: bytes, version: int, sections) -> bytes:
    """`sections` and one unknown section of zeros, PAD bytes in all."""
    used = 12 + sum(12 + len(p) for _, p in sections) + 12
    return _container(magic, version, [*sections, (UNKNOWN, b"\0" * (PAD - used))])


def _flooded(magic: bytes, version: int, sections, sid: int = UNKNOWN) -> bytes:
    """`sections` followed by empty sections with id `sid` (12 bytes each) up to PAD bytes."""
    n = (PAD - 12 - sum(12 + len(p) for _, p in sections)) // 12
    return _container(magic, version, sections, struct.pack("<IQ", sid, 0) * n, n)


def _patched(sections, sid: int, offset: int, value: int) -> list:
    out = []
    for s, p in sections:
        if s == sid:
            p = p[:offset] + struct.pack("<I", value) + p[offset + 4:]
        out.append((s, p))
    return out


def _prove(zkey, wtns, backend):
    """`cuzk prove`'s library call with the registry's defaults."""
    return prove_files(zkey, wtns, backend, opts=resolve())


def _traced(fn, *args):
    """(what fn returned or the FormatError it raised, peak traced bytes)."""
    tracemalloc.start()
    try:
        try:
            got = fn(*args)
        except FormatError as e:
            got = e
        return got, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.fixture(scope="module")
def good(tmp_path_factory) -> dict:
    d = tmp_path_factory.mktemp("good")
    r1cs, inputs, aux = circuits.build("mulchain", 5)
    pk = setup(r1cs, "odd_lagrange", 5)
    out = {"dir": d, "r1cs_obj": r1cs}
    for kind, write in (("r1cs", lambda f: write_r1cs(f, r1cs)), ("zkey", zkey_writer(pk, r1cs)),
                        ("wtns", lambda f: write_wtns(f, np.concatenate([inputs, aux])))):
        buf = io.BytesIO()
        write(buf)
        out[kind] = buf.getvalue()
        (d / f"c.{kind}").write_bytes(out[kind])
    return out


R1CS_NWIRES = 4 + 32            # offset of nWires in the .r1cs header section
WTNS_N = 4 + 32                 # of nWitness in the .wtns header
ZKEY_NVARS = 4 + 48 + 4 + 32    # of nVars in the .zkey Groth16 header; nPublic, domainSize follow


def _r1cs_no_map(good) -> list:
    return [(s, p) for s, p in _sections(good["r1cs"]) if s != 3]


# --------------------------------------------------------------- .r1cs (keygen --r1cs)

def test_padded_r1cs_is_refused_before_keygen(good, tmp_path):
    """Zero padding in an unknown section and nWires = the file's size: 2 MB made a 968 MB key."""
    path = tmp_path / "pad.r1cs"
    path.write_bytes(_padded(b"r1cs", 1, _patched(_r1cs_no_map(good), 1, R1CS_NWIRES, PAD)))
    assert path.stat().st_size == PAD
    got, peak = _traced(load_circuit_r1cs, path)
    assert isinstance(got, FormatError), f"read as a circuit of {got.num_vars} wires"
    assert str(got).startswith(f"{path}: section 1 (header): nWires") and "\n" not in str(got)
    assert peak < PEAK_LIMIT, peak


def test_r1cs_without_wire_map_declares_only_the_wires_its_constraints_use(good):
    secs = _r1cs_no_map(good)
    used = good["r1cs_obj"].num_vars
    assert read_r1cs(_container(b"r1cs", 1, secs)).n_wires == used       # a file without a map still reads
    for extra in (1, 1000):
        data = _container(b"r1cs", 1, _patched(secs, 1, R1CS_NWIRES, used + extra))
        with pytest.raises(FormatError, match=rf"c\.r1cs: section 1 \(header\): nWires: declares {used + extra} "
                                              rf"wires, .*no wire map"):
            read_r1cs(data, name="c.r1cs")


def test_r1cs_wire_map_must_hold_every_wire(good):
    secs = _patched(_sections(good["r1cs"]), 1, R1CS_NWIRES, PAD)
    got, peak = _traced(read_r1cs, _padded(b"r1cs", 1, secs), "c.r1cs")
    assert isinstance(got, FormatError) and "section 3 (wire-to-label map): size" in str(got)
    assert peak < PEAK_LIMIT


def test_cli_keygen_refuses_padded_r1cs_in_one_line(good, tmp_path):
    path = tmp_path / "pad.r1cs"
    path.write_bytes(_padded(b"r1cs", 1, _patched(_r1cs_no_map(good), 1, R1CS_NWIRES, PAD)))
    out = tmp_path / "k.cuzkkey"

    def cap():                  # the unfixed reader goes on to a 1.6 GiB keygen: fail fast instead
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
    p = subprocess.run([sys.executable, "-m", "cuzk", "keygen", "--r1cs", str(path), "--backend", "cpu",
                        "--out", str(out)], capture_output=True, text=True, timeout=120, preexec_fn=cap,
                       env={**os.environ, "CUZK_CACHE_DIR": str(tmp_path / "cache")})
    lines = [ln for ln in p.stderr.strip().splitlines() if not ln.startswith("cuzk: no GPU")]
    assert p.returncode == 2, p.stderr[-2000:]
    assert len(lines) == 1 and lines[0].startswith(f"cuzk: error: {path}: section 1 (header): nWires"), lines
    assert not out.exists() and not p.stdout


# --------------------------------------------------------------- .zkey (prove, export-vk)

def test_padded_zkey_proves_and_exports(good, tmp_path):
    path = tmp_path / "pad.zkey"
    path.write_bytes(_padded(b"zkey", 1, _sections(good["zkey"])))
    got, peak = _traced(read_zkey, path)            # export-vk
    assert not isinstance(got, FormatError), got
    assert peak < PEAK_LIMIT, peak
    got, peak = _traced(_prove, path, good["dir"] / "c.wtns", "cpu")
    assert not isinstance(got, FormatError) and got.verified, got
    assert peak < PEAK_LIMIT, peak


@pytest.mark.parametrize("field, offset, value, section", [
    ("nVars", ZKEY_NVARS, PAD, r"section 5 \(A points\): size"),
    ("nPublic", ZKEY_NVARS + 4, PAD - 2, r"section 2 \(Groth16 header\): nPublic"),
    ("domainSize", ZKEY_NVARS + 8, 1 << 21, r"section 9 \(H points\): size"),
])
def test_padded_zkey_counts_are_refused(good, tmp_path, field, offset, value, section):
    path = tmp_path / "pad.zkey"
    path.write_bytes(_padded(b"zkey", 1, _patched(_sections(good["zkey"]), 2, offset, value)))
    for fn, args in ((read_zkey, (path,)), (_prove, (path, good["dir"] / "c.wtns", "cpu"))):
        got, peak = _traced(fn, *args)
        assert isinstance(got, FormatError), f"{field} = {value} accepted"
        assert str(got).startswith(str(path)) and re.search(section, str(got)), got
        assert peak < PEAK_LIMIT, peak


# --------------------------------------------------------------- .wtns (prove)

def test_padded_wtns(good, tmp_path):
    path = tmp_path / "pad.wtns"
    path.write_bytes(_padded(b"wtns", 2, _sections(good["wtns"])))
    got, peak = _traced(_prove, good["dir"] / "c.zkey", path, "cpu")
    assert not isinstance(got, FormatError) and got.verified, got
    assert peak < PEAK_LIMIT, peak
    path.write_bytes(_padded(b"wtns", 2, _patched(_sections(good["wtns"]), 1, WTNS_N, PAD)))
    got, peak = _traced(read_wtns, path)
    assert isinstance(got, FormatError) and str(got).startswith(f"{path}: section 2 (witness values): size")
    assert peak < PEAK_LIMIT, peak


# --------------------------------------------------------------- thousands of empty sections

@pytest.mark.parametrize("kind", ["r1cs", "wtns", "zkey"])
def test_flood_of_unknown_sections_costs_nothing(good, tmp_path, kind):
    """174k empty sections of an unknown id: skipped, nothing kept per section (48 MiB before)."""
    magic, version = {"r1cs": (b"r1cs", 1), "wtns": (b"wtns", 2), "zkey": (b"zkey", 1)}[kind]
    path = tmp_path / f"flood.{kind}"
    path.write_bytes(_flooded(magic, version, _sections(good[kind])))
    read = {"r1cs": load_circuit_r1cs, "wtns": read_wtns, "zkey": read_zkey}[kind]
    got, peak = _traced(read, path)
    assert not isinstance(got, FormatError), got
    assert peak < FLOOD_LIMIT, peak


@pytest.mark.parametrize("kind, sid, label", [("r1cs", 3, "wire-to-label map"), ("wtns", 1, "header"),
                                              ("zkey", 10, "contributions")])
def test_flood_of_copies_of_a_section_is_refused(good, tmp_path, kind, sid, label):
    magic, version = {"r1cs": (b"r1cs", 1), "wtns": (b"wtns", 2), "zkey": (b"zkey", 1)}[kind]
    path = tmp_path / f"flood.{kind}"
    path.write_bytes(_flooded(magic, version, _sections(good[kind]), sid))
    read = {"r1cs": load_circuit_r1cs, "wtns": read_wtns, "zkey": read_zkey}[kind]
    got, peak = _traced(read, path)
    assert isinstance(got, FormatError) and str(got).startswith(f"{path}: section {sid} ({label}): appears "), got
    assert peak < FLOOD_LIMIT, peak


def test_keygen_of_a_circuit_with_no_private_wire(tmp_path):
    """Every wire public (nWires = 1 + inputs): the empty private sections are made, not a reshape error."""
    from cuzk.formats.r1csfile import write_r1cs
    from cuzk.r1cs import ConstraintSystem
    cs = ConstraintSystem()
    x = cs.alloc_input(3)
    y = cs.alloc_input(9)
    cs.enforce(cs.lc((1, x)), cs.lc((1, x)), cs.lc((1, y)))
    r1cs, _, aux = cs.finalize()
    assert len(aux) == 0
    path = tmp_path / "public.r1cs"
    with open(path, "wb") as f:
        write_r1cs(f, r1cs)
    p = subprocess.run([sys.executable, "-m", "cuzk", "keygen", "--r1cs", str(path), "--backend", "cpu",
                        "--zkey", str(tmp_path / "k.zkey"), "--vk", str(tmp_path / "vk.json")],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    q = subprocess.run([sys.executable, "-m", "cuzk", "export-vk", str(tmp_path / "k.zkey"), str(tmp_path / "vk2.json")],
                       capture_output=True, text=True, timeout=300)
    assert q.returncode == 0, q.stderr
    assert json.loads((tmp_path / "vk2.json").read_text()) == json.loads((tmp_path / "vk.json").read_text())
