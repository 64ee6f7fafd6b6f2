"""Seeded fuzzing of every reader through the command line: .r1cs (keygen --r1cs), .wtns (prove), .zkey
(export-vk), the cuzk key file (ProvingKey.load, what the key cache reads) and the proof, verification key
and public JSON (verify). Each damaged file either still works or fails with exit 2 and one line that
names it, within a bounded amount of memory, and leaves no output file.

Damage: truncations, byte flips (anywhere and in headers), section sizes and declared counts set huge,
the curve's primes swapped for bn128's, and for JSON also deep nesting, wrong types and bad numbers.
Padding: the files grown to 2 MiB with zeros in an unknown section, a declared count set to what the
padding could pay for (the file's size, or it over 8, 12, 36, 96 bytes), the .r1cs's wire map dropped.
The counts are fixed (CASES) and the generator seeded, so a run is the same everywhere."""
from __future__ import annotations

import hashlib
import json
import random
import struct
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from cuzk import circuits
from cuzk.cli import main
from cuzk.field import P, R
from cuzk.formats import write_r1cs, write_wtns, zkey_writer
from cuzk.formats.binfile import BN254_P, BN254_R
from cuzk.keygen import setup
from cuzk.keys import KeyFormatError, ProvingKey

CASES = {"r1cs": 300, "wtns": 200, "zkey": 400, "zkey_prove": 60, "cuzkkey": 1000, "json": 500, "padded": 16}
MEMORY_LIMIT = 64 << 20          # peak traced allocation per case: the inputs are ~25 KB


@pytest.fixture(autouse=True)
def _cache(monkeypatch, tmp_path_factory):
    monkeypatch.setenv("CUZK_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    monkeypatch.delenv("CUZK_OPT", raising=False)


@pytest.fixture(scope="module")
def good(tmp_path_factory) -> dict:
    d = tmp_path_factory.mktemp("good")
    r1cs, inputs, aux = circuits.build("mulchain", 5)
    pk = setup(r1cs, "odd_lagrange", 5)
    for name, write in (("c.r1cs", lambda f: write_r1cs(f, r1cs)), ("c.zkey", zkey_writer(pk, r1cs)),
                        ("w.wtns", lambda f: write_wtns(f, np.concatenate([inputs, aux])))):
        with open(d / name, "wb") as f:
            write(f)
    pk.save(d / "k.cuzkkey")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CUZK_CACHE_DIR", str(d / "cache"))
        assert main(["prove", str(d / "c.zkey"), str(d / "w.wtns"), str(d / "proof.json"), str(d / "public.json")]) == 0
        assert main(["export-vk", str(d / "c.zkey"), str(d / "vk.json")]) == 0
    return {"dir": d, **{n: (d / n).read_bytes() for n in ("c.r1cs", "c.zkey", "w.wtns", "k.cuzkkey")},
            **{n: json.loads((d / f"{n}.json").read_text()) for n in ("proof", "public", "vk")}}


# --------------------------------------------------------------- damage

def _iden3_sections(data: bytes) -> list[tuple[int, int]]:
    """(offset of the section header, payload size) of each section of an iden3 container."""
    out, off = [], 12
    for _ in range(struct.unpack_from("<I", data, 8)[0]):
        sid, size = struct.unpack_from("<IQ", data, off)
        out.append((off, size))
        off += 12 + size
    return out


def _swap(data: bytes, old: int, new: int, n8: int) -> bytes:
    return data.replace(old.to_bytes(n8, "little"), new.to_bytes(n8, "little"))


def damage_iden3(rng: random.Random, data: bytes) -> bytes:
    kind = rng.choice(["truncate", "flip", "flip_header", "huge_section", "huge_count", "wrong_curve", "insert"])
    secs = _iden3_sections(data)
    b = bytearray(data)
    if kind == "truncate":
        return data[:rng.randrange(len(data))]
    if kind == "flip":
        for _ in range(rng.randint(1, 4)):
            b[rng.randrange(len(b))] ^= rng.randint(1, 255)
    elif kind == "flip_header":
        off, _ = rng.choice(secs)
        pos = rng.choice([rng.randrange(12), off + rng.randrange(12), off + 12 + rng.randrange(64)])
        if pos < len(b):
            b[pos] ^= rng.randint(1, 255)
    elif kind == "huge_section":
        off, _ = rng.choice(secs)
        struct.pack_into("<Q", b, off + 4, rng.choice([2 ** 63, 2 ** 64 - 1, 2 ** 32, len(data) * 1000]))
    elif kind == "huge_count":          # a u32 inside a header section (counts, sizes) set huge
        off, size = rng.choice(secs[:3])
        pos = off + 12 + 4 * rng.randrange(max(1, min(size, 160) // 4))
        if pos + 4 <= len(b):
            struct.pack_into("<I", b, pos, rng.choice([2 ** 32 - 1, 2 ** 26, 2 ** 31, 2 ** 24 + 1]))
    elif kind == "wrong_curve":
        return _swap(_swap(data, R, BN254_R, 32), P, BN254_P, 48)
    else:
        pos = rng.randrange(len(data))
        return data[:pos] + rng.randbytes(rng.randint(1, 16)) + data[pos:]
    return bytes(b)


PAD = 2 << 20
PAD_ID = 0x7FFF                  # a section id no format uses
# section id -> offsets of its declared counts (u32), per format
COUNTS = {"r1cs": {1: [36, 36, 36, 40, 44, 48, 52, 60]},          # nWires (thrice: keygen sizes most by it), nPubOut,
                                                                  # nPubIn, nPrvIn, nLabels, nConstraints
          "wtns": {1: [36]},                                      # nWitness
          "zkey": {2: [88, 92, 96], 4: [0]}}                      # nVars, nPublic, domainSize; coefficients


def pad_iden3(rng: random.Random, kind: str, data: bytes) -> bytes:
    """`data` grown to PAD bytes by an unknown section of zeros, with one declared count set to what the
    padding could pay for (a .r1cs loses its wire map half the time)."""
    secs, off = [], 12
    for _ in range(struct.unpack_from("<I", data, 8)[0]):
        sid, size = struct.unpack_from("<IQ", data, off)
        secs.append([sid, bytearray(data[off + 12:off + 12 + size])])
        off += 12 + size
    if kind == "r1cs" and rng.random() < 0.5:
        secs = [s for s in secs if s[0] != 3]
    sid = rng.choice(list(COUNTS[kind]))
    body = next(p for s, p in secs if s == sid)
    value = rng.choice([PAD, PAD // 8, PAD // 12, PAD // 36, PAD // 96, 1 << 21, 1 << 14, rng.randrange(PAD)])
    struct.pack_into("<I", body, rng.choice(COUNTS[kind][sid]), value)
    used = 12 + sum(12 + len(p) for _, p in secs) + 12
    secs.insert(rng.randrange(len(secs) + 1), [PAD_ID, b"\0" * (PAD - used)])
    return struct.pack("<4sII", data[:4], *struct.unpack_from("<I", data, 4), len(secs)) + b"".join(
        struct.pack("<IQ", s, len(p)) + bytes(p) for s, p in secs)


def damage_cuzkkey(rng: random.Random, data: bytes) -> bytes:
    """Damage with the checksum recomputed half the time, so the structural checks are reached."""
    body = bytearray(data[:-32])
    kind = rng.choice(["truncate", "flip", "huge_count", "header"])
    if kind == "truncate":
        body = body[:rng.randrange(len(body))]
    elif kind == "flip":
        for _ in range(rng.randint(1, 4)):
            body[rng.randrange(len(body))] ^= rng.randint(1, 255)
    elif kind == "huge_count":          # the first section header follows the 116-byte file header
        struct.pack_into("<Q", body, 116 + 8, rng.choice([2 ** 64 - 1, 2 ** 40, 2 ** 32]))
    else:
        body[rng.randrange(116)] ^= rng.randint(1, 255)
    tail = hashlib.sha256(bytes(body)).digest() if rng.random() < 0.5 else data[-32:]
    return bytes(body) + tail


def _walk(doc, path=()):
    yield path, doc
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _walk(v, path + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _walk(v, path + (i,))


def damage_json(rng: random.Random, doc) -> str:
    kind = rng.choice(["nest", "truncate", "replace", "drop", "bytes", "big_number"])
    if kind == "nest":
        n = rng.choice([2000, 20000, 100000])
        return rng.choice(["[" * n, "[" * n + "]" * n, '{"a":' * n + "1" + "}" * n])
    text = json.dumps(doc)
    if kind == "truncate":
        return text[:rng.randrange(len(text))]
    if kind == "bytes":
        b = bytearray(text.encode())
        b[rng.randrange(len(b))] = rng.randrange(256)
        return b.decode("latin-1")
    doc = json.loads(text)
    paths = [p for p, _ in _walk(doc) if p]
    path = rng.choice(paths)
    parent = doc
    for k in path[:-1]:
        parent = parent[k]
    if kind == "drop":
        del parent[path[-1]]
    elif kind == "big_number":
        parent[path[-1]] = str(rng.choice([P, P + 1, R, 2 ** 400, -1]))
    else:
        parent[path[-1]] = rng.choice([None, 1, 1.5, "x", "", [], {}, [[[]]], "0x10", True, "٣", " 1"])
    return json.dumps(doc)


# --------------------------------------------------------------- running a case

def _files(d: Path) -> set[str]:
    return {p.name for p in d.iterdir()}


def _run(argv, bad: Path, tmp: Path, capsys) -> str | None:
    """What is wrong with how the CLI handled this case, or None."""
    before = _files(tmp)
    tracemalloc.start()
    try:
        rc = main([str(a) for a in argv])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    out, err = capsys.readouterr()
    lines = [ln for ln in err.strip().splitlines() if not ln.startswith("cuzk: no GPU")]
    if peak >= MEMORY_LIMIT:
        return f"peak {peak} bytes"
    if rc == 0 or (rc == 1 and argv[0] == "verify"):       # the damage left a valid file (or a valid, wrong proof)
        return None
    if rc != 2:
        return f"exit {rc}: {err[-300:]}"
    if not (len(lines) == 1 and lines[0].startswith("cuzk: error:")):
        return f"not one line: {err[-300:]}"
    if str(bad) not in lines[0]:
        return f"does not name the file: {lines[0]}"
    if _files(tmp) != before:
        return "output written on bad input"
    return None


@pytest.mark.parametrize("kind", ["r1cs", "wtns", "zkey"])
def test_fuzz_iden3_readers(good, tmp_path, capsys, kind):
    rng = random.Random(f"cuzk-fuzz-{kind}")
    name = {"r1cs": "c.r1cs", "wtns": "w.wtns", "zkey": "c.zkey"}[kind]
    bad = tmp_path / f"bad.{kind}"
    out = tmp_path / "out"
    out.mkdir()
    g = good["dir"]
    problems = []
    for i in range(CASES[kind]):
        bad.write_bytes(damage_iden3(rng, good[name]))
        argv = {"r1cs": ["keygen", "--r1cs", bad, "--out", out / "k.cuzkkey"],
                "wtns": ["prove", g / "c.zkey", bad, out / "proof.json", out / "public.json"],
                "zkey": ["export-vk", bad, out / "vk.json"]}[kind]
        problems.append(_run(argv, bad, out, capsys))
        for p in out.iterdir():
            p.unlink()
    problems = [p for p in problems if p]
    assert not problems, f"{len(problems)} of {CASES[kind]}:\n" + "\n".join(problems)


def test_fuzz_padded_iden3(good, tmp_path, capsys):
    """2 MiB of zeros buy nothing: each padded file is handled or refused within MEMORY_LIMIT."""
    rng = random.Random("cuzk-fuzz-padded")
    out = tmp_path / "out"
    out.mkdir()
    g = good["dir"]
    problems = []
    for i in range(CASES["padded"]):
        for kind, name in (("r1cs", "c.r1cs"), ("wtns", "w.wtns"), ("zkey", "c.zkey")):
            bad = tmp_path / f"pad.{kind}"
            data = pad_iden3(rng, kind, good[name])
            assert len(data) == PAD
            bad.write_bytes(data)
            argv = {"r1cs": ["keygen", "--r1cs", bad, "--backend", "cpu", "--out", out / "k.cuzkkey"],
                    "wtns": ["prove", g / "c.zkey", bad, out / "proof.json", out / "public.json"],
                    "zkey": rng.choice([["export-vk", bad, out / "vk.json"],
                                        ["prove", bad, g / "w.wtns", out / "proof.json", out / "public.json"]])}[kind]
            why = _run(argv, bad, out, capsys)
            if why:
                problems.append(f"{kind} case {i}: {why}")
            for p in out.iterdir():
                p.unlink()
    assert not problems, "\n".join(problems)


def test_fuzz_cuzk_key_reader(good, tmp_path):
    rng = random.Random("cuzk-fuzz-cuzkkey")
    bad = tmp_path / "bad.cuzkkey"
    for i in range(CASES["cuzkkey"]):
        bad.write_bytes(damage_cuzkkey(rng, good["k.cuzkkey"]))
        tracemalloc.start()
        try:
            ProvingKey.load(bad)
        except KeyFormatError as e:
            msg = str(e)
            assert str(bad) in msg and "\n" not in msg, msg
        finally:
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
        assert peak < MEMORY_LIMIT, peak


def test_fuzz_json_readers(good, tmp_path, capsys):
    rng = random.Random("cuzk-fuzz-json")
    names = {"vk": "vk", "public": "public", "proof": "proof"}
    problems = []
    for i in range(CASES["json"]):
        which = rng.choice(list(names))
        for n in names:
            text = damage_json(rng, good[n]) if n == which else json.dumps(good[n])
            (tmp_path / f"{n}.json").write_text(text, encoding="latin-1")
        problems.append(_run(["verify", tmp_path / "vk.json", tmp_path / "public.json", tmp_path / "proof.json"],
                             tmp_path / f"{which}.json", tmp_path, capsys))
    problems = [p for p in problems if p]
    assert not problems, f"{len(problems)} of {CASES['json']}:\n" + "\n".join(problems)


def test_fuzz_prove_with_damaged_zkey(good, tmp_path, capsys):
    """The bulk sections are read by the prover, not the zkey reader: damage there surfaces while proving."""
    rng = random.Random("cuzk-fuzz-zkey-prove")
    bad = tmp_path / "bad.zkey"
    out = tmp_path / "out"
    out.mkdir()
    g = good["dir"]
    problems = []
    for i in range(CASES["zkey_prove"]):
        data = bytearray(good["c.zkey"])
        off, size = rng.choice(_iden3_sections(bytes(data))[4:9])        # A, B1, B2, C, H
        for _ in range(rng.randint(1, 3)):
            data[off + 12 + rng.randrange(size)] ^= rng.randint(1, 255)
        bad.write_bytes(bytes(data))
        problems.append(_run(["prove", bad, g / "w.wtns", out / "proof.json", out / "public.json"], bad, out, capsys))
        for p in out.iterdir():
            p.unlink()
    problems = [p for p in problems if p]
    assert not problems, f"{len(problems)} of {CASES['zkey_prove']}:\n" + "\n".join(problems)
