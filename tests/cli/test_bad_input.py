"""Bad input: every one is a clean, one-line error (exit code 2 on the CLI) and leaves no
partial output file behind.

Key files are damaged byte by byte following the layout in cuzk/keys.py (and
docs/key-format.md): a "<8sI16sIIIQQQ32s" header, then for each section a "<4sIQ"
(tag, group, count) header, count points of 24 (G1) or 48 (G2) little-endian u32 limbs,
count infinity flags padded to 8 bytes; then the sha256 of everything before.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import struct
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from cuzk import circuits, keys
from cuzk.backend.cpu import CpuBackend
from cuzk.cli import main
from cuzk.cli.common import MAX_CIRCUITS, MAX_JSON_INPUT_BYTES
from cuzk.cli.main import build_parser
from cuzk.field import P, R
from cuzk.keygen import setup
from cuzk.keys import KeyFormatError, ProvingKey
from cuzk.opts import resolve
from cuzk.backend.cpu.synthesis import assign
from cuzk.synthesis import synthesize
from cuzk.poly import Domain
from cuzk.prover import Prover
from cuzk.r1cs import UnsatisfiedError

HEADER = struct.Struct("<8sI16sIIIQQQ32s")
SECTION = struct.Struct("<4sIQ")
SECTIONS = ("alpha_g1", "beta_g1", "beta_g2", "gamma_g2", "delta_g1", "delta_g2",
            "ic", "a", "b_g1", "b_g2", "l", "h")
WORDS = {1: 24, 2: 48}


def _gpu_usable() -> bool:
    from cuzk.backend import gpu_status
    return gpu_status()[0]


@pytest.fixture(autouse=True)
def cache_dir(monkeypatch, tmp_path_factory) -> Path:
    """A fresh key cache per test, outside tmp_path (so tmp_path holds only what a test writes)."""
    d = tmp_path_factory.mktemp("cache")
    monkeypatch.setenv("CUZK_CACHE_DIR", str(d))
    monkeypatch.delenv("CUZK_OPT", raising=False)
    return d


def _one_line_error(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, f"expected a one-line error, got:\n{err}"
    assert lines[0].startswith("cuzk: error:"), lines[0]
    return lines[0]


def _listing(d: Path) -> list[str]:
    return sorted(str(p.relative_to(d)) for p in d.rglob("*"))


# ---------------------------------------------------------------- key files

@pytest.fixture(scope="module")
def key_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("keys")


@pytest.fixture(scope="module")
def pk(key_dir):
    r1cs, _, _ = circuits.build("mulchain", 5)
    return setup(r1cs)


@pytest.fixture(scope="module")
def key_bytes(pk, key_dir) -> bytes:
    path = key_dir / "good.cuzkkey"
    pk.save(path)
    return path.read_bytes()


def _resign(body_and_sum: bytes) -> bytes:
    """Replace the trailing sha256 so that only the structural checks can fire."""
    body = body_and_sum[:-32]
    return body + hashlib.sha256(body).digest()


def _layout(data: bytes) -> dict[str, tuple[int, int, int]]:
    """name -> (section header offset, first limb byte, end of the section), parsed here from the spec."""
    out, off = {}, HEADER.size
    for name in SECTIONS:
        tag, group, count = SECTION.unpack_from(data, off)
        assert tag.rstrip(b"\0") == name.encode()[:4]
        start = off + SECTION.size
        end = start + count * WORDS[group] * 4 + count + (-count % 8)
        out[name] = (off, start, end)
        off = end
    assert off == len(data) - 32
    return out


def _write(tmp_path: Path, data: bytes, name: str = "bad.cuzkkey") -> Path:
    p = tmp_path / name
    p.write_bytes(data)
    return p


def _load_error(path: Path) -> str:
    with pytest.raises(KeyFormatError) as ei:
        ProvingKey.load(str(path))
    msg = str(ei.value)
    assert str(path) in msg, f"message does not name the file: {msg}"
    assert len(msg.splitlines()) == 1
    return msg


def test_layout_matches_the_library(key_bytes, pk):
    assert keys._HEADER.format == HEADER.format and keys._SECTION.format == SECTION.format
    assert tuple(n for n, _ in keys.SECTIONS) == SECTIONS
    lay = _layout(key_bytes)
    assert key_bytes[-32:] == hashlib.sha256(key_bytes[:-32]).digest()
    assert HEADER.unpack_from(key_bytes)[0] == b"CUZKKEY\0"
    for name, (off, _, _) in lay.items():
        assert SECTION.unpack_from(key_bytes, off)[2] == len(pk.points[name])


def test_good_key_loads(key_bytes, pk, tmp_path):
    k = ProvingKey.load(_write(tmp_path, key_bytes, "good.cuzkkey"))
    assert (k.log_n, k.num_inputs, k.num_aux, k.digest) == (pk.log_n, pk.num_inputs, pk.num_aux, pk.digest)
    for name in SECTIONS:
        assert np.array_equal(k.points[name].limbs, pk.points[name].limbs), name


def test_missing_key_file(tmp_path):
    msg = _load_error(tmp_path / "absent.cuzkkey")
    assert "cannot read" in msg


@pytest.mark.parametrize("where", ["empty", "in_magic", "in_header", "after_header", "in_section_header",
                                   "in_section_a", "before_checksum", "in_checksum"])
def test_truncated_key(key_bytes, tmp_path, where):
    lay = _layout(key_bytes)
    cut = {"empty": 0, "in_magic": 5, "in_header": HEADER.size - 10, "after_header": HEADER.size,
           "in_section_header": lay["beta_g1"][0] + 7, "in_section_a": lay["a"][1] + 100,
           "before_checksum": len(key_bytes) - 32, "in_checksum": len(key_bytes) - 1}[where]
    msg = _load_error(_write(tmp_path, key_bytes[:cut]))
    assert re.search(r"truncated|checksum", msg), msg


@pytest.mark.parametrize("section", ["beta_g1", "a", "b_g2", "h"])
def test_truncated_section_names_the_section(key_bytes, tmp_path, section):
    """Cut inside a section and re-sign the file: the loader reaches the section and names it."""
    _, start, end = _layout(key_bytes)[section]
    cut = (start + end) // 2
    data = key_bytes[:cut] + hashlib.sha256(key_bytes[:cut]).digest()
    msg = _load_error(_write(tmp_path, data))
    assert f"section {section}" in msg and "truncated" in msg, msg


def test_cut_at_a_section_boundary_names_the_next_section(key_bytes, tmp_path):
    cut = _layout(key_bytes)["l"][2]           # everything up to and including section l
    data = key_bytes[:cut] + hashlib.sha256(key_bytes[:cut]).digest()
    msg = _load_error(_write(tmp_path, data))
    assert "section h" in msg, msg


def test_bad_section_tag(key_bytes, tmp_path):
    off = _layout(key_bytes)["ic"][0]
    data = bytearray(key_bytes)
    data[off:off + 4] = b"xyz\0"
    msg = _load_error(_write(tmp_path, _resign(bytes(data))))
    assert "section ic" in msg, msg


def test_wrong_section_group(key_bytes, tmp_path):
    off = _layout(key_bytes)["b_g2"][0]
    data = bytearray(key_bytes)
    struct.pack_into("<I", data, off + 4, 1)
    msg = _load_error(_write(tmp_path, _resign(bytes(data))))
    assert "section b_g2" in msg, msg


@pytest.mark.parametrize("section", ["alpha_g1", "ic", "l", "h"])
def test_flipped_byte_is_a_checksum_mismatch(key_bytes, tmp_path, section):
    _, start, end = _layout(key_bytes)[section]
    data = bytearray(key_bytes)
    data[(start + end) // 2] ^= 0x01
    msg = _load_error(_write(tmp_path, bytes(data)))
    assert "checksum" in msg, msg


def test_bad_magic(key_bytes, tmp_path):
    msg = _load_error(_write(tmp_path, _resign(b"NOTAKEY\0" + key_bytes[8:])))
    assert "magic" in msg, msg


@pytest.mark.parametrize("resign", [True, False])
def test_wrong_version(key_bytes, tmp_path, resign):
    h = list(HEADER.unpack_from(key_bytes))
    h[1] = 2
    data = HEADER.pack(*h) + key_bytes[HEADER.size:]
    msg = _load_error(_write(tmp_path, _resign(data) if resign else data))
    assert "version 2" in msg, msg


def test_wrong_curve(key_bytes, tmp_path):
    h = list(HEADER.unpack_from(key_bytes))
    h[2] = b"bn254".ljust(16, b"\0")
    data = _resign(HEADER.pack(*h) + key_bytes[HEADER.size:])
    assert hashlib.sha256(data[:-32]).digest() == data[-32:]
    msg = _load_error(_write(tmp_path, data))
    assert "bn254" in msg and "checksum" not in msg, msg


@pytest.mark.parametrize("field,value", [(3, 7), (5, 0), (5, 40)])   # convention, log_n
def test_bad_header_values(key_bytes, tmp_path, field, value):
    h = list(HEADER.unpack_from(key_bytes))
    h[field] = value
    msg = _load_error(_write(tmp_path, _resign(HEADER.pack(*h) + key_bytes[HEADER.size:])))
    assert "bad header" in msg, msg


def test_wrong_point_count_names_file_and_section(pk, tmp_path):
    bad = ProvingKey(pk.convention, pk.generator, pk.log_n, pk.num_inputs, pk.num_aux, pk.num_constraints,
                     pk.digest, dict(pk.points))
    bad.points["h"] = pk.points["h"].take(np.arange(len(pk.points["h"]) - 1))
    path = tmp_path / "short_h.cuzkkey"
    bad.save(path)                       # a well-formed file whose h section is one point short
    msg = _load_error(path)
    assert "section h" in msg, msg


def test_wrong_point_count_is_a_key_format_error(pk, tmp_path):
    """The same damage as above, checked without the file-name requirement."""
    bad = ProvingKey(pk.convention, pk.generator, pk.log_n, pk.num_inputs, pk.num_aux, pk.num_constraints,
                     pk.digest, dict(pk.points))
    bad.points["h"] = pk.points["h"].take(np.arange(len(pk.points["h"]) - 1))
    path = tmp_path / "short_h.cuzkkey"
    bad.save(path)
    with pytest.raises(KeyFormatError, match="section h"):
        ProvingKey.load(path)


def test_failed_key_save_leaves_nothing(pk, tmp_path):
    class Boom:                              # a section that fails while it is written
        def __len__(self):
            return 1

        @property
        def limbs(self):
            raise RuntimeError("boom")

    bad = ProvingKey(pk.convention, pk.generator, pk.log_n, pk.num_inputs, pk.num_aux, pk.num_constraints,
                     pk.digest, {**pk.points, "h": Boom()})
    with pytest.raises(RuntimeError, match="boom"):
        bad.save(tmp_path / "k.cuzkkey")     # fails after several sections were written
    assert _listing(tmp_path) == []


# hypothesis: blind damage must always be a KeyFormatError

@st.composite
def _damage(draw, size: int):
    if draw(st.booleans()):
        return ("cut", draw(st.integers(0, size - 1)))
    flips = draw(st.lists(st.tuples(st.integers(0, size - 1), st.integers(1, 255)), min_size=1, max_size=4,
                          unique_by=lambda t: t[0]))
    return ("flip", flips)


def _apply(data: bytes, dmg) -> bytes:
    kind, arg = dmg
    if kind == "cut":
        return data[:arg]
    b = bytearray(data)
    for pos, mask in arg:
        b[pos] ^= mask
    return bytes(b)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_fuzz_damaged_key_is_a_key_format_error(key_bytes, key_dir, data):
    dmg = data.draw(_damage(len(key_bytes)))
    path = key_dir / "fuzz.cuzkkey"
    path.write_bytes(_apply(key_bytes, dmg))
    try:
        ProvingKey.load(str(path))
    except KeyFormatError as e:
        assert str(path) in str(e)
    else:
        raise AssertionError(f"damaged key loaded without error: {dmg}")


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_fuzz_resigned_damage_never_crashes(key_bytes, key_dir, data):
    """Damage with a recomputed checksum reaches the structural checks: a load either works
    (a limb changed) or raises KeyFormatError, never anything else."""
    body = key_bytes[:-32]
    dmg = data.draw(_damage(len(body)))
    damaged = _apply(body, dmg)
    path = key_dir / "fuzz-resigned.cuzkkey"
    path.write_bytes(damaged + hashlib.sha256(damaged).digest())
    try:
        ProvingKey.load(str(path))
    except KeyFormatError:
        pass


# ---------------------------------------------------------------- verify

@pytest.fixture(scope="module")
def good(tmp_path_factory):
    """vk / public / proof from a real run (mulchain 2^6), in a module folder: copy before damaging."""
    d = tmp_path_factory.mktemp("good")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CUZK_CACHE_DIR", str(d / "cache"))
        mp.delenv("CUZK_OPT", raising=False)
        assert main(["bench", "--backend", "cpu", "--circuit", "mulchain", "--log-size", "6",
                     "--save", str(d / "s")]) == 0
    return {n: json.loads((d / "s" / f"{n}.json").read_text()) for n in ("verification_key", "public", "proof")}


def _bump_y(pt):
    """The same x with y + 1: not on the curve."""
    pt = json.loads(json.dumps(pt))
    if isinstance(pt[1], list):
        pt[1][0] = str((int(pt[1][0]) + 1) % P)
    else:
        pt[1] = str((int(pt[1]) + 1) % P)
    return pt


def _vk_drop(key):
    def f(g):
        del g["verification_key"][key]
    return f


def _set(kind, key, value):
    def f(g):
        g[kind][key] = value(g[kind][key]) if callable(value) else value
    return f


def _pub(f):
    def g(d):
        d["public"] = f(d["public"])
    return g


BAD_JSON = {
    "vk_missing_IC": _vk_drop("IC"),
    "vk_missing_alpha": _vk_drop("vk_alpha_1"),
    "vk_empty_IC": _set("verification_key", "IC", []),
    "vk_alpha_off_curve": _set("verification_key", "vk_alpha_1", _bump_y),
    "vk_delta_off_curve": _set("verification_key", "vk_delta_2", _bump_y),
    "vk_IC_off_curve": _set("verification_key", "IC", lambda ic: [_bump_y(ic[0])] + ic[1:]),
    "vk_coordinate_unreduced": _set("verification_key", "vk_alpha_1", lambda p: [str(int(p[0]) + P)] + p[1:]),
    "vk_curve_bn128": _set("verification_key", "curve", "bn128"),
    "vk_nPublic_wrong": _set("verification_key", "nPublic", lambda n: n + 1),
    "vk_nPublic_float": _set("verification_key", "nPublic", float),
    "vk_nPublic_bool": lambda g: (g["verification_key"].update(nPublic=True, IC=g["verification_key"]["IC"][:2]),
                                  g.update(public=g["public"][:1])),
    "vk_not_an_object": lambda g: g.__setitem__("verification_key", [1, 2, 3]),
    "proof_pi_a_off_curve": _set("proof", "pi_a", _bump_y),
    "proof_pi_b_off_curve": _set("proof", "pi_b", _bump_y),
    "proof_pi_c_off_curve": _set("proof", "pi_c", _bump_y),
    "proof_curve_bn128": _set("proof", "curve", "bn128"),
    "proof_protocol_plonk": _set("proof", "protocol", "plonk"),
    "proof_missing_pi_c": lambda g: g["proof"].pop("pi_c"),
    "proof_not_affine": _set("proof", "pi_a", lambda p: p[:2] + ["2"]),
    "proof_coordinate_number": _set("proof", "pi_a", lambda p: [int(p[0])] + p[1:]),
    "public_too_few": _pub(lambda p: p[:-1]),
    "public_too_many": _pub(lambda p: p + ["1"]),
    "public_hex": _pub(lambda p: [hex(int(p[0]))] + p[1:]),
    "public_int": _pub(lambda p: [int(p[0])] + p[1:]),
    "public_negative": _pub(lambda p: ["-1"] + p[1:]),
    "public_float": _pub(lambda p: ["1.5"] + p[1:]),
    "public_empty_string": _pub(lambda p: [""] + p[1:]),
    "public_padded": _pub(lambda p: [" " + p[0]] + p[1:]),
    "public_unreduced": _pub(lambda p: [str(int(p[0]) + R)] + p[1:]),
    "public_superscript_digit": _pub(lambda p: ["\u00b2"] + p[1:]),
    "public_not_a_list": _pub(lambda p: {"0": p[0]}),
}


def _write_set(d: Path, g: dict) -> list[str]:
    for n, v in g.items():
        (d / f"{n}.json").write_text(json.dumps(v))
    return [str(d / f"{n}.json") for n in ("verification_key", "public", "proof")]


def _verify_bad(args, tmp_path, capsys) -> str:
    before = _listing(tmp_path)
    rc = main(["verify", *args])
    out, err = capsys.readouterr()
    assert rc == 2, (rc, out, err)
    assert "OK" not in out and "INVALID" not in out
    assert _listing(tmp_path) == before
    return _one_line_error(err)


def test_verify_good_set_is_ok(good, tmp_path, capsys):
    assert main(["verify", *_write_set(tmp_path, good)]) == 0


@pytest.mark.parametrize("case", sorted(BAD_JSON))
def test_verify_bad_json_content(good, tmp_path, capsys, case):
    g = json.loads(json.dumps(good))
    BAD_JSON[case](g)
    _verify_bad(_write_set(tmp_path, g), tmp_path, capsys)


def test_verify_public_non_ascii_digit(good, tmp_path, capsys):
    g = json.loads(json.dumps(good))
    g["public"][0] = "\u0661"
    _verify_bad(_write_set(tmp_path, g), tmp_path, capsys)


@pytest.mark.parametrize("field", ["pi_a", "public"])
def test_verify_number_past_int_digit_limit_names_its_field(good, tmp_path, capsys, field):
    """A number of 5000 digits is one line naming the field and the number, not Python's own
    int() message; the same valid number with 5000 leading zeros is still that number."""
    g = json.loads(json.dumps(good))
    if field == "pi_a":
        g["proof"]["pi_a"][0] = "9" * 5000
        want = "pi_a: coordinate '99999"
    else:
        g["public"][0] = "9" * 5000
        want = "public input '99999"
    line = _verify_bad(_write_set(tmp_path, g), tmp_path, capsys)
    assert want in line and "not a reduced" in line and "digits" not in line, line
    g = json.loads(json.dumps(good))
    if field == "pi_a":
        g["proof"]["pi_a"][0] = "0" * 5000 + g["proof"]["pi_a"][0]
    else:
        g["public"][0] = "0" * 5000 + g["public"][0]
    assert main(["verify", *_write_set(tmp_path, g)]) == 0


@pytest.mark.parametrize("which", [0, 1, 2])
def test_verify_missing_file(good, tmp_path, capsys, which):
    args = _write_set(tmp_path, good)
    args[which] = str(tmp_path / "does-not-exist.json")
    line = _verify_bad(args, tmp_path, capsys)
    assert "does-not-exist.json" in line


@pytest.mark.parametrize("which", [0, 1, 2])
@pytest.mark.parametrize("content", [b"{\"protocol\": ", b"", b"\xff\xfe\x00garbage", b"[1, 2,]"])
def test_verify_malformed_json(good, tmp_path, capsys, which, content):
    args = _write_set(tmp_path, good)
    Path(args[which]).write_bytes(content)
    line = _verify_bad(args, tmp_path, capsys)
    assert os.path.basename(args[which]) in line


def test_verify_directory_as_file(good, tmp_path, capsys):
    args = _write_set(tmp_path, good)
    (tmp_path / "adir").mkdir()
    args[2] = str(tmp_path / "adir")
    _verify_bad(args, tmp_path, capsys)


@pytest.mark.parametrize("which", [0, 1, 2])
@pytest.mark.parametrize("size", [MAX_JSON_INPUT_BYTES + 1, 3 << 30])
def test_verify_oversized_json_is_refused_on_its_size(good, tmp_path, capsys, which, size):
    """A sparse file past the cap costs no disk; read and parsed it would be seconds and gigabytes. It is
    refused on its size alone: one line naming the file, its size and the cap."""
    args = _write_set(tmp_path, good)
    with open(args[which], "wb") as f:
        f.truncate(size)
    t0 = time.perf_counter()
    line = _verify_bad(args, tmp_path, capsys)
    assert time.perf_counter() - t0 < 5
    assert os.path.basename(args[which]) in line and f"{size} bytes" in line
    assert f"{MAX_JSON_INPUT_BYTES >> 20} MiB" in line, line


# ---------------------------------------------------------------- witness and sizes

def _first_failing_row(r1cs, z) -> int | None:
    """Evaluate every constraint row by row, independently of R1CS.evaluate/check."""
    def row(m, i):
        s = 0
        for k in range(m.indptr[i], m.indptr[i + 1]):
            s += int(m.coeffs[k]) * int(z[m.cols[k]])
        return s % R
    for i in range(r1cs.num_constraints):
        if (row(r1cs.A, i) * row(r1cs.B, i) - row(r1cs.C, i)) % R:
            return i
    return None


@pytest.mark.parametrize("name,frac", [("mulchain", 0.5), ("mulchain", 0.9), ("porep_like", 0.3)])
def test_unsatisfied_witness_names_first_failing_constraint(name, frac):
    r1cs, inputs, aux = circuits.build(name, 6)
    domain = Domain.for_size(r1cs.qap_rows)
    z = np.concatenate([inputs, aux])
    assert _first_failing_row(r1cs, z) is None
    assign(r1cs, inputs, aux, domain)                 # the honest witness passes

    bad = aux.copy()
    j = int(len(aux) * frac)
    bad[j] = (int(bad[j]) + 1) % R
    expected = _first_failing_row(r1cs, np.concatenate([inputs, bad]))
    assert expected is not None and expected > 0
    with pytest.raises(UnsatisfiedError) as ei:
        assign(r1cs, inputs, bad, domain)
    msg = str(ei.value)
    m = re.search(r"constraint (\d+)\b", msg)
    assert m and int(m.group(1)) == expected, (msg, expected)


def test_prover_rejects_assignment_of_another_size(pk):
    _, asgs = synthesize("mulchain", 6, resolve())
    asg = asgs[0]
    assert len(asg.aux) != pk.num_aux
    with pytest.raises(ValueError) as ei:
        Prover(CpuBackend(resolve()), pk).prove([asg])
    msg = str(ei.value)
    assert f"{len(asg.aux)} aux" in msg and str(pk.num_aux) in msg, msg


def test_prover_rejects_assignment_on_another_domain(pk):
    r1cs, inputs, aux = circuits.build("mulchain", 5)
    asg = assign(r1cs, inputs, aux, Domain(pk.log_n + 1))
    with pytest.raises(ValueError) as ei:
        Prover(CpuBackend(resolve()), pk).prove([asg])
    msg = str(ei.value)
    assert str(1 << (pk.log_n + 1)) in msg and str(1 << pk.log_n) in msg, msg


# ---------------------------------------------------------------- bench / keygen outputs

BENCH_BAD = {
    "unknown_opt": ["--opt", "+NOPE"],
    "zero_circuits": ["--circuits", "0"],
    "negative_circuits": ["--circuits", "-3"],
    "too_many_circuits": ["--circuits", str(MAX_CIRCUITS + 1)],
    "huge_circuits": ["--circuits", str(10 ** 12)],      # would fill memory with seeds before any check
    "log_size_too_small": ["--log-size", "2"],
    "log_size_too_large": ["--log-size", "28"],
    "porep_too_small": ["--circuit", "porep_like", "--log-size", "3"],
}


@pytest.mark.parametrize("case", sorted(BENCH_BAD) + ["env_unknown_opt", "cuda_without_gpu"])
def test_bench_bad_input_writes_nothing(case, tmp_path, monkeypatch, capsys, cache_dir):
    argv = ["bench", "--backend", "cpu", "--circuit", "mulchain", "--log-size", "6"]
    if case == "env_unknown_opt":
        monkeypatch.setenv("CUZK_OPT", "+NOPE")
    elif case == "cuda_without_gpu":
        if _gpu_usable():
            pytest.skip("a usable CUDA device is present")
        argv[2] = "cuda"
    else:
        argv += BENCH_BAD[case]
    out, save = tmp_path / "report.json", tmp_path / "saved"
    try:
        rc = main(argv + ["--json", str(out), "--save", str(save)])
    except SystemExit as e:              # a usage error: argparse exits
        rc = e.code
    line = _one_line_error(capsys.readouterr().err)
    assert rc == 2
    if "opt" in case:
        assert "NOPE" in line
    if "circuits" in case:
        assert "--circuits" in line, line
    if case in ("too_many_circuits", "huge_circuits"):
        assert f"<= {MAX_CIRCUITS}" in line, line
    assert not out.exists()
    assert not (save / "proof.json").exists()
    assert _listing(tmp_path) == []            # no temp files
    assert _listing(cache_dir) == []           # and no key in the cache: it failed before setup


def test_bench_circuits_bound_itself_parses():
    args = build_parser().parse_args(["bench", "--circuits", str(MAX_CIRCUITS)])
    assert args.circuits == MAX_CIRCUITS


def test_bench_json_into_a_directory(tmp_path, capsys):
    (tmp_path / "report").mkdir()
    rc = main(["bench", "--backend", "cpu", "--circuit", "mulchain", "--log-size", "6",
               "--json", str(tmp_path / "report"), "--save", str(tmp_path / "saved")])
    err = capsys.readouterr().err
    assert rc == 2
    # the run itself succeeded (stderr has its informational "key: ..." line), then --json failed
    _one_line_error("\n".join(ln for ln in err.splitlines() if not ln.startswith("key: ")))
    assert not (tmp_path / "saved").exists()
    assert _listing(tmp_path / "report") == []
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_bench_unwritable_save_leaves_no_report(tmp_path, capsys):
    (tmp_path / "blocker").write_text("")
    out = tmp_path / "report.json"
    rc = main(["bench", "--backend", "cpu", "--circuit", "mulchain", "--log-size", "6",
               "--json", str(out), "--save", str(tmp_path / "blocker" / "saved")])
    assert rc == 2
    assert not out.exists()


def test_keygen_out_under_a_file(tmp_path, capsys):
    blocker = tmp_path / "blocker"
    blocker.write_text("")
    rc = main(["keygen", "--circuit", "mulchain", "--log-size", "6", "--out", str(blocker / "k.cuzkkey")])
    _one_line_error(capsys.readouterr().err)
    assert rc == 2
    assert _listing(tmp_path) == ["blocker"] and blocker.read_text() == ""


def test_keygen_out_onto_a_directory(tmp_path, capsys):
    target = tmp_path / "adir"
    target.mkdir()
    rc = main(["keygen", "--circuit", "mulchain", "--log-size", "6", "--out", str(target)])
    _one_line_error(capsys.readouterr().err)
    assert rc == 2
    assert _listing(tmp_path) == ["adir"], "temp file left beside the target"


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores directory permissions")
def test_keygen_out_into_read_only_directory(tmp_path, capsys):
    d = tmp_path / "ro"
    d.mkdir()
    d.chmod(0o500)
    try:
        rc = main(["keygen", "--circuit", "mulchain", "--log-size", "6", "--out", str(d / "k.cuzkkey")])
        _one_line_error(capsys.readouterr().err)
        assert rc == 2
        assert _listing(d) == []
    finally:
        d.chmod(0o700)


def test_keygen_unwritable_vk_leaves_no_key(tmp_path, capsys):
    (tmp_path / "blocker").write_text("")
    key = tmp_path / "k.cuzkkey"
    rc = main(["keygen", "--circuit", "mulchain", "--log-size", "6", "--out", str(key),
               "--vk", str(tmp_path / "blocker" / "vk.json")])
    assert rc == 2
    assert not key.exists()


def test_a_bounded_read_reserves_what_the_file_holds_not_its_limit(tmp_path):
    """read_input's limit is a refusal, not a buffer: reading a 1 KB file under a 64 MiB limit reserved the
    64 MiB (a verify of three small JSON files peaked at 64 MiB). A file at the limit still reads whole, one past
    it is refused."""
    import tracemalloc
    from cuzk.files import read_input
    small = tmp_path / "small.json"
    small.write_text("x" * 1000)
    tracemalloc.start()
    try:
        assert read_input(small, 64 << 20) == "x" * 1000
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20, peak
    small.write_bytes(b"y" * 4096)
    assert read_input(small, 4096, mode="rb") == b"y" * 4096
    with pytest.raises(OSError, match="4096 bytes, more than"):
        read_input(small, 4095, mode="rb")
