"""snarkjs/circom file formats without node: round trips, the encodings decoded by hand (not through
the readers), proofs from a .zkey verified independently, clean errors, and fuzzing.

The files here come from cuzk's own writers; tests/formats/test_snarkjs_interop.py checks the same readers
and writers against files that circom and snarkjs make.
"""
from __future__ import annotations

import io
import json
import random
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from cuzk import circuits
from cuzk.cli import main
from cuzk.curve import g1_affine_ints, g2_affine_ints
from cuzk.field import P, R
from cuzk.formats import (FormatError, coeffs_from_r1cs, read_r1cs, read_wtns, read_zkey, write_r1cs,
                          write_wtns, write_zkey)
from cuzk.formats.binfile import BN254_P, BN254_R
from cuzk.groth16 import verify, verify_blst
from cuzk.keygen import ToxicWaste, setup
from cuzk.backend.cpu.synthesis import assign
from cuzk.poly import Domain
from cuzk.opts import resolve
from cuzk.run import prove_files

LOG = 5


def _bytes(writer, *args) -> bytes:
    buf = io.BytesIO()
    writer(buf, *args)
    return buf.getvalue()


def _sections(data: bytes) -> dict:
    """id -> (offset of the payload, size), parsed here independently of cuzk.formats."""
    magic, version, n = struct.unpack_from("<4sII", data, 0)
    off, out = 12, {}
    for _ in range(n):
        sid, size = struct.unpack_from("<IQ", data, off)
        out[sid] = (off + 12, size)
        off += 12 + size
    assert off == len(data)
    return out


@pytest.fixture(scope="module")
def circuit():
    r1cs, inputs, aux = circuits.build("porep_like", LOG, seed=2)
    return r1cs, inputs, aux


@pytest.fixture(scope="module")
def pk(circuit):
    return setup(circuit[0], "odd_lagrange", 5, ToxicWaste.from_seed(11))


@pytest.fixture(scope="module")
def files(circuit, pk, tmp_path_factory) -> dict:
    r1cs, inputs, aux = circuit
    d = tmp_path_factory.mktemp("formats")
    out = {"r1cs": _bytes(write_r1cs, r1cs), "wtns": _bytes(write_wtns, np.concatenate([inputs, aux])),
           "zkey": _bytes(write_zkey, pk, coeffs_from_r1cs(r1cs))}
    for k, v in out.items():
        (d / f"c.{k}").write_bytes(v)
    out["dir"] = d
    return out


# --- round trips ---

def test_r1cs_round_trip(circuit, files):
    r1cs = circuit[0]
    got = read_r1cs(files["r1cs"])
    assert (got.n_outputs, got.n_pub_inputs, got.n_prv_inputs) == (0, r1cs.num_inputs - 1, 0)
    assert got.r1cs.num_inputs == r1cs.num_inputs and got.r1cs.num_aux == r1cs.num_aux
    for a, b in zip((got.r1cs.A, got.r1cs.B, got.r1cs.C), (r1cs.A, r1cs.B, r1cs.C)):
        assert np.array_equal(a.indptr, b.indptr) and np.array_equal(a.cols, b.cols)
        assert list(a.coeffs) == list(b.coeffs % R)
    assert got.r1cs.digest() == r1cs.digest()
    assert _bytes(write_r1cs, got.r1cs, 0, 0, got.n_labels, got.wire_labels) == files["r1cs"]


def test_r1cs_bytes_by_hand(circuit, files):
    """The first constraint's A, decoded here: n, then (wire u32, coefficient 32 bytes LE, plain)."""
    r1cs = circuit[0]
    data = files["r1cs"]
    sec = _sections(data)
    off = sec[1][0]
    n8 = struct.unpack_from("<I", data, off)[0]
    assert n8 == 32 and int.from_bytes(data[off + 4:off + 36], "little") == R
    nw, nout, npub, nprv, nlab, m = struct.unpack_from("<IIIIQI", data, off + 36)
    assert (nw, nout, npub, nprv, m) == (r1cs.num_vars, 0, r1cs.num_inputs - 1, 0, r1cs.num_constraints)
    off = sec[2][0]
    k = struct.unpack_from("<I", data, off)[0]
    lo, hi = r1cs.A.indptr[0], r1cs.A.indptr[1]
    assert k == hi - lo
    for t in range(k):
        wire = struct.unpack_from("<I", data, off + 4 + 36 * t)[0]
        val = int.from_bytes(data[off + 8 + 36 * t:off + 40 + 36 * t], "little")
        assert (wire, val) == (r1cs.A.cols[lo + t], r1cs.A.coeffs[lo + t] % R)


def test_wtns_round_trip_and_bytes(circuit, files):
    r1cs, inputs, aux = circuit
    w = read_wtns(files["wtns"])
    z = np.concatenate([inputs, aux])
    assert list(w.values) == list(z)
    data = files["wtns"]
    off = _sections(data)[2][0]
    assert int.from_bytes(data[off + 32:off + 64], "little") == z[1]          # plain, not Montgomery


def test_zkey_round_trip(pk, circuit, files):
    zk = read_zkey(files["zkey"])
    assert zk.pk.convention == "odd_lagrange" and zk.pk.generator == 5 and zk.pk.log_n == LOG
    assert zk.n_public == circuit[0].num_inputs - 1
    assert zk.pk.num_constraints == circuit[0].num_constraints
    for name, pts in pk.points.items():
        assert np.array_equal(zk.pk.points[name].limbs, pts.limbs), name
        assert np.array_equal(zk.pk.points[name].inf, pts.inf), name
    assert zk.coeffs.equals(coeffs_from_r1cs(circuit[0]))
    assert _bytes(write_zkey, zk.pk, zk.coeffs, zk.mpc) == files["zkey"]


def test_zkey_encoding_by_hand(pk, circuit, files):
    """Coefficients are stored times R^2 (R = 2^256); points are Montgomery with R = 2^384."""
    data = files["zkey"]
    sec = _sections(data)
    assert sorted(sec) == list(range(1, 11))
    off, size = sec[4]
    n = struct.unpack_from("<I", data, off)[0]
    assert size == 4 + 44 * n
    A = circuit[0].A
    m, c, s = struct.unpack_from("<III", data, off + 4)
    stored = int.from_bytes(data[off + 16:off + 48], "little")
    assert (m, c, s) == (0, 0, A.cols[0])
    assert stored == A.coeffs[0] * pow(2, 512, R) % R
    # the last coefficient is the public-signal row of the last input: A, row m + ni - 1, value 1
    last = off + 4 + 44 * (n - 1)
    ni, nc = circuit[0].num_inputs, circuit[0].num_constraints
    assert struct.unpack_from("<III", data, last) == (0, nc + ni - 1, ni - 1)
    assert int.from_bytes(data[last + 12:last + 44], "little") == pow(2, 512, R)
    # the first A point (signal ONE), G1, and the B2 point of signal 1, G2
    rinv = pow(2, -384, P)
    off5 = sec[5][0]
    x, y = (int.from_bytes(data[off5 + i:off5 + i + 48], "little") * rinv % P for i in (0, 48))
    assert (x, y) == g1_affine_ints(pk.a.to_ark()[0])
    off7 = sec[7][0] + 192
    c4 = [int.from_bytes(data[off7 + i:off7 + i + 48], "little") * rinv % P for i in range(0, 192, 48)]
    assert ((c4[0], c4[1]), (c4[2], c4[3])) == g2_affine_ints(pk.b_g2.to_ark()[1])
    # header: n8q, q, n8r, r, nVars, nPublic, domainSize
    off2 = sec[2][0]
    assert struct.unpack_from("<I", data, off2)[0] == 48 and int.from_bytes(data[off2 + 4:off2 + 52], "little") == P
    assert struct.unpack_from("<I", data, off2 + 52)[0] == 32
    assert struct.unpack_from("<III", data, off2 + 88) == (circuit[0].num_vars, ni - 1, 1 << LOG)


def test_zkey_assignment_matches_synthesis(pk, circuit, files):
    """snarkjs's a, b (A·z, B·z with the public-signal rows) and c = a∘b equal cuzk's synthesis."""
    r1cs, inputs, aux = circuit
    zk = read_zkey(files["zkey"])
    got = zk.assign(np.concatenate([inputs, aux]))
    ref = assign(r1cs, inputs, aux, Domain(LOG, 5))
    for k in "abc":
        assert list(getattr(got, k)) == list(getattr(ref, k)), k
    assert got.public == ref.public


def test_proof_from_zkey_verifies(files):
    d = files["dir"]
    res = prove_files(d / "c.zkey", d / "c.wtns", "cpu", opts=resolve(), rng=random.Random(1))
    zk = read_zkey(d / "c.zkey")
    vk = zk.verifying_key()
    assert verify(vk, res.public, res.proof) and verify_blst(vk, res.public, res.proof)
    assert not verify(vk, [res.public[0] + 1] + res.public[1:], res.proof)


def test_wrong_witness_is_rejected(circuit, files, tmp_path):
    r1cs, inputs, aux = circuit
    bad = aux.copy()
    bad[3] = (bad[3] + 1) % R
    p = tmp_path / "bad.wtns"
    p.write_bytes(_bytes(write_wtns, np.concatenate([inputs, bad])))
    with pytest.raises(ValueError, match="does not verify.*does not satisfy"):
        prove_files(files["dir"] / "c.zkey", p, "cpu", opts=resolve())


def test_writer_refuses_coeff_convention(circuit):
    key = setup(circuit[0], "coeff", 7, ToxicWaste.from_seed(1))
    with pytest.raises(ValueError, match="odd_lagrange"):
        _bytes(write_zkey, key, coeffs_from_r1cs(circuit[0]))


# --- clean errors: wrong curve, wrong protocol, structure ---

def _patch(data: bytes, off: int, new: bytes) -> bytes:
    return data[:off] + new + data[off + len(new):]


def test_wrong_curve(files):
    r1 = files["r1cs"]
    off = _sections(r1)[1][0]
    with pytest.raises(FormatError, match=r"x\.r1cs: section 1 \(header\): the prime is the bn128"):
        read_r1cs(_patch(r1, off + 4, BN254_R.to_bytes(32, "little")), name="x.r1cs")
    w = files["wtns"]
    with pytest.raises(FormatError, match=r"w: section 1 \(header\): the prime is the bn128"):
        read_wtns(_patch(w, _sections(w)[1][0] + 4, BN254_R.to_bytes(32, "little")), name="w")
    z = files["zkey"]
    with pytest.raises(FormatError, match=r"k: section 2 \(Groth16 header\): the base field is the bn128.*not for bls12381"):
        read_zkey(_patch(z, _sections(z)[2][0] + 4, BN254_P.to_bytes(48, "little")), name="k")


@pytest.mark.parametrize("pid,name", [(2, "plonk"), (10, "fflonk"), (7, "id 7")])
def test_wrong_protocol(files, pid, name):
    z = files["zkey"]
    with pytest.raises(FormatError, match=rf"k: section 1 \(header\): protocol {name}, not groth16"):
        read_zkey(_patch(z, _sections(z)[1][0], struct.pack("<I", pid)), name="k")


def test_structure_errors(files):
    z = files["zkey"]
    sec = _sections(z)
    with pytest.raises(FormatError, match="not a .zkey file"):
        read_zkey(files["wtns"], name="k")
    with pytest.raises(FormatError, match="truncated"):
        read_zkey(z[:len(z) // 2], name="k")
    with pytest.raises(FormatError, match=r"section 9 \(H points\): missing"):     # id 9 renamed 11
        read_zkey(_patch(z, sec[9][0] - 12, struct.pack("<I", 11)), name="k")
    with pytest.raises(FormatError, match=r"section 5 \(A points\): appears more than once"):
        read_zkey(_patch(z, sec[6][0] - 12, struct.pack("<I", 5)), name="k")
    with pytest.raises(FormatError, match="unexpected bytes after"):
        read_zkey(z + b"\0", name="k")
    off = sec[4][0] + 4 + 8                                 # first coefficient's signal
    with pytest.raises(FormatError, match=r"section 4 \(coefficients\): coefficient 0: signal 4294967295"):
        read_zkey(_patch(z, off, b"\xff\xff\xff\xff"), name="k")
    with pytest.raises(FormatError, match=r"section 2 \(Groth16 header\): alpha_g1.*not on the curve"):
        read_zkey(_patch(z, sec[2][0] + 100, b"\x01"), name="k")
    with pytest.raises(FormatError, match=r"section 5 \(A points\): point 0: a coordinate is not reduced"):
        read_zkey(_patch(z, sec[5][0], b"\xff" * 48), name="k")
    r1 = files["r1cs"]
    off = _sections(r1)[2][0]
    with pytest.raises(FormatError, match=r"section 2 \(constraints\): truncated in constraint 0"):
        read_r1cs(_patch(r1, off, struct.pack("<I", 1 << 30)), name="c")
    with pytest.raises(FormatError, match="cannot read"):
        read_zkey(files["dir"] / "missing.zkey")


# --- fuzzing: any damage is a FormatError (or a file that still parses), never another exception ---

def _header_positions(data: bytes) -> list[int]:
    pos = list(range(12))
    for off, _ in _sections(data).values():
        pos += list(range(off - 12, off + 16))
    return [p for p in pos if p < len(data)]


def _damage(draw, data: bytes) -> bytes:
    kind = draw(st.sampled_from(["truncate", "flip", "flip_header", "insert", "delete"]))
    if kind == "truncate":
        return data[:draw(st.integers(0, len(data) - 1))]
    if kind in ("flip", "flip_header"):
        where = st.sampled_from(_header_positions(data)) if kind == "flip_header" else st.integers(0, len(data) - 1)
        out = bytearray(data)
        for pos, x in draw(st.lists(st.tuples(where, st.integers(1, 255)), min_size=1, max_size=4)):
            out[pos] ^= x
        return bytes(out)
    pos = draw(st.integers(0, len(data) - 1))
    if kind == "insert":
        return data[:pos] + draw(st.binary(min_size=1, max_size=8)) + data[pos:]
    return data[:pos] + data[pos + draw(st.integers(1, 64)):]


FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                        HealthCheck.function_scoped_fixture])


@pytest.mark.parametrize("kind", ["r1cs", "wtns", "zkey"])
@FUZZ
@given(data=st.data())
def test_fuzz_readers(files, kind, data):
    reader = {"r1cs": read_r1cs, "wtns": read_wtns, "zkey": read_zkey}[kind]
    damaged = _damage(data.draw, files[kind])
    try:
        reader(damaged, name=f"fuzz.{kind}")
    except FormatError as e:
        msg = str(e)
        assert msg.startswith(f"fuzz.{kind}") and "\n" not in msg, msg


# --- the CLI on bad input: one line, exit 2, no output file ---

def _run(capsys, *argv) -> tuple[int, str]:
    rc = main([str(a) for a in argv])
    err = capsys.readouterr().err.strip().splitlines()
    return rc, err[-1] if err else ""


def test_cli_prove_ok_and_format(files, tmp_path, capsys):
    d = files["dir"]
    rc, _ = _run(capsys, "prove", d / "c.zkey", d / "c.wtns", tmp_path / "p.json", tmp_path / "pub.json",
                 "--backend", "cpu")
    assert rc == 0
    text = (tmp_path / "p.json").read_text()
    proof = json.loads(text)
    assert text == json.dumps(proof, indent=1)                  # snarkjs's layout, no final newline
    assert list(proof) == ["pi_a", "pi_b", "pi_c", "protocol", "curve"]
    assert json.loads((tmp_path / "pub.json").read_text()) == [str(v) for v in read_wtns(d / "c.wtns").values[1:3]]
    rc, _ = _run(capsys, "export-vk", d / "c.zkey", tmp_path / "vk.json")
    assert rc == 0
    assert _run(capsys, "verify", tmp_path / "vk.json", tmp_path / "pub.json", tmp_path / "p.json")[0] == 0


def test_cli_prove_bad_inputs(files, tmp_path, capsys, circuit):
    d = files["dir"]
    z = files["zkey"]
    sec = _sections(z)
    (tmp_path / "trunc.zkey").write_bytes(z[:sec[7][0] + 10])
    (tmp_path / "bn.zkey").write_bytes(_patch(z, sec[2][0] + 4, BN254_P.to_bytes(48, "little")))
    (tmp_path / "plonk.zkey").write_bytes(_patch(z, sec[1][0], struct.pack("<I", 2)))
    r1cs, inputs, aux = circuit
    (tmp_path / "short.wtns").write_bytes(_bytes(write_wtns, inputs))
    wrong = np.concatenate([inputs, aux])
    wrong[-1] = (wrong[-1] + 5) % R
    (tmp_path / "wrong.wtns").write_bytes(_bytes(write_wtns, wrong))
    (tmp_path / "one.wtns").write_bytes(_bytes(write_wtns, np.concatenate([[2], inputs[1:], aux])))
    cases = [
        ("trunc.zkey", "c.wtns", r"trunc\.zkey: section 7 \(B2 points\): truncated"),
        ("bn.zkey", "c.wtns", r"bn\.zkey: section 2 .*bn128"),
        ("plonk.zkey", "c.wtns", r"plonk\.zkey: section 1 \(header\): protocol plonk, not groth16"),
        ("c.zkey", "short.wtns", r"short\.wtns: the witness has \d+ values, but the key .* has \d+ signals"),
        ("c.zkey", "wrong.wtns", r"does not verify .* does not satisfy"),
        ("c.zkey", "one.wtns", r"the constant ONE\) is 2"),
        ("c.zkey", "missing.wtns", r"missing\.wtns: cannot read"),
        ("c.zkey", "c.zkey", r"c\.zkey: not a \.wtns file"),
    ]
    import re
    for zkey, wtns, pattern in cases:
        zp = tmp_path / zkey if (tmp_path / zkey).exists() else d / zkey
        wp = tmp_path / wtns if (tmp_path / wtns).exists() else d / wtns
        out = tmp_path / "out"
        rc, line = _run(capsys, "prove", zp, wp, out / "proof.json", out / "public.json", "--backend", "cpu")
        assert rc == 2, (zkey, wtns, line)
        assert line.startswith("cuzk: error:") and re.search(pattern, line), line
        assert not out.exists(), f"{zkey}/{wtns} left output behind"


def test_cli_keygen_and_export_errors(files, tmp_path, capsys):
    rc, line = _run(capsys, "keygen", "--r1cs", files["dir"] / "c.r1cs", "--circuit", "mulchain",
                    "--zkey", tmp_path / "k.zkey")
    assert rc == 2 and "not both" in line
    rc, line = _run(capsys, "keygen", "--r1cs", files["dir"] / "c.wtns", "--zkey", tmp_path / "k.zkey")
    assert rc == 2 and "not a .r1cs file" in line
    rc, line = _run(capsys, "keygen", "--circuit", "mulchain", "--log-size", "5", "--zkey", tmp_path / "k.zkey",
                    "--generator", "bellman")
    assert rc == 2 and "odd_lagrange" in line
    rc, line = _run(capsys, "export", "--circuit", "mulchain")
    assert rc == 2 and "at least one" in line
    assert list(tmp_path.iterdir()) == []


def test_cli_export_then_keygen_zkey(tmp_path, capsys):
    """`cuzk export` + `cuzk keygen --r1cs --zkey`: the same key as keygen from the built-in circuit."""
    rc, _ = _run(capsys, "export", "--circuit", "mulchain", "--log-size", "5", "--seed", "3",
                 "--r1cs", tmp_path / "m.r1cs", "--wtns", tmp_path / "m.wtns", "--public", tmp_path / "pub.json")
    assert rc == 0
    assert _run(capsys, "keygen", "--r1cs", tmp_path / "m.r1cs", "--zkey", tmp_path / "a.zkey")[0] == 0
    assert _run(capsys, "keygen", "--circuit", "mulchain", "--log-size", "5", "--zkey", tmp_path / "b.zkey")[0] == 0
    assert (tmp_path / "a.zkey").read_bytes() == (tmp_path / "b.zkey").read_bytes()
    assert _run(capsys, "prove", tmp_path / "a.zkey", tmp_path / "m.wtns", tmp_path / "p.json",
                tmp_path / "p_pub.json", "--backend", "cpu")[0] == 0
    assert json.loads((tmp_path / "p_pub.json").read_text()) == json.loads((tmp_path / "pub.json").read_text())


def test_cli_outputs_that_coincide_are_refused_before_any_work(files, tmp_path, capsys):
    """`prove ZKEY WTNS same.json same.json` would lose the proof; an output over an input would destroy
    it: one line naming the file and both roles, exit 2, nothing written or changed."""
    d = files["dir"]
    same = tmp_path / "same.json"
    rc, line = _run(capsys, "prove", d / "c.zkey", d / "c.wtns", same, same, "--backend", "cpu")
    assert rc == 2 and "same.json: given as PUBLIC and as output PROOF" in line and not same.exists()
    wtns = tmp_path / "w.wtns"
    wtns.write_bytes((d / "c.wtns").read_bytes())
    rc, line = _run(capsys, "prove", d / "c.zkey", wtns, wtns, tmp_path / "pub.json", "--backend", "cpu")
    assert rc == 2 and "w.wtns: given as PROOF and as input WTNS" in line
    assert wtns.read_bytes() == (d / "c.wtns").read_bytes() and not (tmp_path / "pub.json").exists()
    zkey = tmp_path / "k.zkey"
    zkey.write_bytes((d / "c.zkey").read_bytes())
    rc, line = _run(capsys, "export-vk", zkey, zkey)
    assert rc == 2 and "k.zkey: given as VK and as input ZKEY" in line
    assert zkey.read_bytes() == (d / "c.zkey").read_bytes()
    rc, line = _run(capsys, "export", "--log-size", "4", "--r1cs", tmp_path / "x", "--wtns", tmp_path / "x")
    assert rc == 2 and "given as --wtns and as output --r1cs" in line and not (tmp_path / "x").exists()
