"""cuzk against the real tools: circom2 compiles a circuit with --prime bls12381, snarkjs makes
its witness and (from a tiny 2^5 powers of tau) its key; then cuzk proves and snarkjs verifies,
and the reverse; a key made by `cuzk keygen --zkey` is used by `snarkjs groth16 prove`, also at
2^10 (snarkjs's own phase-2 setup would take minutes there).

Needs node with snarkjs and circom2 (`bash .ci/run` installs them from .ci/node); skipped
otherwise, with the reason (a failure under CI=true).
"""
from __future__ import annotations

import io
import json
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

from cuzk.cli import main
from cuzk.formats import (FormatError, coeffs_from_r1cs, read_r1cs, read_wtns, read_zkey, write_r1cs,
                          write_wtns, write_zkey)
from cuzk.groth16 import Proof, public_from_json, verify, verify_blst, vk_from_json
from snarkjs_cli import require, verdict

CIRCUIT = """pragma circom 2.0.0;

// x, z public; y private; out public. Linear combinations with constants on both sides.
template Chain(N) {
    signal input x;
    signal input y;
    signal input z;
    signal output out;
    signal acc[N + 1];
    acc[0] <== x * y;
    for (var i = 0; i < N; i++) {
        acc[i + 1] <== (acc[i] + 3 * x - i) * (acc[i] - y + 5 * z + 7);
    }
    out <== acc[N] * z;
}

component main {public [x, z]} = Chain(%d);
"""
INPUT = {"x": "3", "y": "11", "z": "123456789"}


def _run(cmd: list, cwd: Path, timeout: int = 180) -> subprocess.CompletedProcess:
    r = subprocess.run([str(c) for c in cmd], cwd=cwd, capture_output=True, text=True, timeout=timeout)
    return r


def _ok(cmd: list, cwd: Path) -> str:
    r = _run(cmd, cwd)
    assert r.returncode == 0, f"{' '.join(map(str, cmd))} failed:\n{r.stdout}\n{r.stderr}"
    return r.stdout + r.stderr


@pytest.fixture(scope="module")
def sj():
    return require("snarkjs")


@pytest.fixture(scope="module")
def circom():
    return require("circom2")


@pytest.fixture(scope="module")
def work(tmp_path_factory, sj, circom) -> Path:
    """circuit.r1cs, witness.wtns, pot.ptau (2^5) and snarkjs.zkey (setup + one contribution)."""
    d = tmp_path_factory.mktemp("snarkjs")
    (d / "circuit.circom").write_text(CIRCUIT % 22)
    (d / "input.json").write_text(json.dumps(INPUT))
    _ok(circom + ["circuit.circom", "--r1cs", "--wasm", "--prime", "bls12381", "-o", "."], d)
    _ok(sj + ["wtns", "calculate", "circuit_js/circuit.wasm", "input.json", "witness.wtns"], d)
    _ok(sj + ["powersoftau", "new", "bls12381", "5", "pot0.ptau"], d)
    _ok(sj + ["powersoftau", "contribute", "pot0.ptau", "pot1.ptau", "-e=cuzk test entropy"], d)
    _ok(sj + ["powersoftau", "prepare", "phase2", "pot1.ptau", "pot.ptau"], d)
    _ok(sj + ["groth16", "setup", "circuit.r1cs", "pot.ptau", "setup.zkey"], d)
    _ok(sj + ["zkey", "contribute", "setup.zkey", "snarkjs.zkey", "-e=more entropy"], d)
    _ok(sj + ["zkey", "export", "verificationkey", "snarkjs.zkey", "snarkjs_vk.json"], d)
    return d


def _verify_sj(sj, d: Path, vk: str, public: str, proof: str) -> bool:
    """snarkjs's verdict: True for its "OK!" (exit 0), False for its "Invalid proof" (exit 1); anything
    else (npm's "canceled", a crash) fails the test rather than counting as a rejection."""
    r = _run(sj + ["groth16", "verify", vk, public, proof], d)
    said = verdict(r.stdout + r.stderr)
    assert (said, r.returncode) in (("OK!", 0), ("Invalid proof", 1)), f"snarkjs said:\n{r.stdout}\n{r.stderr}"
    return said == "OK!"


def _cuzk(*argv) -> int:
    return main([str(a) for a in argv])


def _bytes(writer, *args) -> bytes:
    buf = io.BytesIO()
    writer(buf, *args)
    return buf.getvalue()


# --- reading what circom and snarkjs wrote ---

def test_circom_files_read_and_round_trip(work):
    c = read_r1cs(work / "circuit.r1cs")
    w = read_wtns(work / "witness.wtns")
    assert (c.n_outputs, c.n_pub_inputs, c.n_prv_inputs) == (1, 2, 1)
    assert c.r1cs.num_constraints >= 23 and len(w) == c.n_wires
    assert w.values[0] == 1 and w.values[2] == 3 and w.values[3] == 123456789   # ONE, out, x, z, y...
    c.r1cs.check(*c.r1cs.evaluate(w.values))                # circom's witness satisfies the circuit as read
    assert _bytes(write_r1cs, c.r1cs, c.n_outputs, c.n_prv_inputs, c.n_labels, c.wire_labels) == \
        (work / "circuit.r1cs").read_bytes()
    assert _bytes(write_wtns, w.values) == (work / "witness.wtns").read_bytes()


def test_snarkjs_zkey_read_and_round_trip(work):
    zk = read_zkey(work / "snarkjs.zkey")
    c = read_r1cs(work / "circuit.r1cs")
    assert zk.n_public == 3 and zk.n_vars == c.n_wires
    assert zk.pk.num_constraints == c.r1cs.num_constraints
    assert zk.pk.log_n == 5 and zk.pk.convention == "odd_lagrange" and zk.pk.generator == 5
    assert zk.coeffs.equals(coeffs_from_r1cs(c.r1cs))       # our coefficient writer = snarkjs's setup
    assert zk.mpc is not None
    assert _bytes(write_zkey, zk.pk, zk.coeffs, zk.mpc) == (work / "snarkjs.zkey").read_bytes()
    # `groth16 setup` writes its sections in another order; the contents are the same
    zk0 = read_zkey(work / "setup.zkey")
    assert zk0.coeffs.equals(zk.coeffs)
    assert np.array_equal(zk0.pk.points["alpha_g1"].limbs, zk.pk.points["alpha_g1"].limbs)


def test_export_vk_matches_snarkjs(work, tmp_path):
    assert _cuzk("export-vk", work / "snarkjs.zkey", tmp_path / "vk.json") == 0
    ours = json.loads((tmp_path / "vk.json").read_text())
    theirs = json.loads((work / "snarkjs_vk.json").read_text())
    theirs.pop("vk_alphabeta_12")
    assert ours == theirs


# --- cuzk proves, snarkjs verifies; snarkjs proves, cuzk verifies ---

def test_cuzk_proves_snarkjs_key(work, sj, tmp_path):
    assert _cuzk("prove", work / "snarkjs.zkey", work / "witness.wtns", tmp_path / "proof.json",
                 tmp_path / "public.json", "--backend", "cpu") == 0
    assert _verify_sj(sj, work, str(work / "snarkjs_vk.json"), str(tmp_path / "public.json"),
                      str(tmp_path / "proof.json"))
    # snarkjs's own proof of the same witness: same public signals, same file layout
    _ok(sj + ["groth16", "prove", "snarkjs.zkey", "witness.wtns", tmp_path / "sj_proof.json",
              tmp_path / "sj_public.json"], work)
    assert (tmp_path / "public.json").read_text() == (tmp_path / "sj_public.json").read_text()
    ours, theirs = ((tmp_path / n).read_text() for n in ("proof.json", "sj_proof.json"))
    assert list(json.loads(ours)) == list(json.loads(theirs))
    shape = lambda t: re.sub(r"\d+", "N", t)                 # noqa: E731  same layout, other numbers
    assert shape(ours) == shape(theirs)
    # and snarkjs rejects it against other public signals
    pub = json.loads((tmp_path / "public.json").read_text())
    pub[1] = str(int(pub[1]) + 1)
    (tmp_path / "bad_public.json").write_text(json.dumps(pub))
    assert not _verify_sj(sj, work, str(work / "snarkjs_vk.json"), str(tmp_path / "bad_public.json"),
                          str(tmp_path / "proof.json"))


def test_cuzk_verifies_snarkjs_proof(work, sj, tmp_path, capsys):
    _ok(sj + ["groth16", "prove", "snarkjs.zkey", "witness.wtns", tmp_path / "proof.json",
              tmp_path / "public.json"], work)
    assert _cuzk("verify", work / "snarkjs_vk.json", tmp_path / "public.json", tmp_path / "proof.json") == 0
    assert "OK" in capsys.readouterr().out
    vk = vk_from_json(json.loads((work / "snarkjs_vk.json").read_text()))
    pub = public_from_json(json.loads((tmp_path / "public.json").read_text()))
    proof = Proof.from_json(json.loads((tmp_path / "proof.json").read_text()))
    assert verify_blst(vk, pub, proof)
    assert not verify(vk, [pub[0] + 1] + pub[1:], proof)


# --- keys from cuzk keygen, used by snarkjs ---

def test_snarkjs_proves_with_cuzk_keygen_zkey(work, sj, tmp_path):
    assert _cuzk("keygen", "--r1cs", work / "circuit.r1cs", "--zkey", tmp_path / "cuzk.zkey",
                 "--vk", tmp_path / "vk.json") == 0
    _ok(sj + ["zkey", "export", "verificationkey", tmp_path / "cuzk.zkey", tmp_path / "sj_vk.json"], work)
    theirs = json.loads((tmp_path / "sj_vk.json").read_text())
    theirs.pop("vk_alphabeta_12")
    assert theirs == json.loads((tmp_path / "vk.json").read_text())
    _ok(sj + ["groth16", "prove", tmp_path / "cuzk.zkey", "witness.wtns", tmp_path / "proof.json",
              tmp_path / "public.json"], work)
    assert _verify_sj(sj, work, str(tmp_path / "sj_vk.json"), str(tmp_path / "public.json"),
                      str(tmp_path / "proof.json"))
    assert _cuzk("verify", tmp_path / "vk.json", tmp_path / "public.json", tmp_path / "proof.json") == 0


def test_larger_key_from_cuzk_keygen(sj, tmp_path):
    """2^10, beyond what a CI-friendly snarkjs ceremony reaches: cuzk export + keygen --zkey."""
    d = tmp_path
    assert _cuzk("export", "--circuit", "porep_like", "--log-size", "10", "--r1cs", d / "c.r1cs",
                 "--wtns", d / "w.wtns", "--public", d / "expected_public.json") == 0
    _ok(sj + ["wtns", "check", "c.r1cs", "w.wtns"], d)        # snarkjs agrees the witness satisfies it
    assert _cuzk("keygen", "--r1cs", d / "c.r1cs", "--zkey", d / "c.zkey") == 0
    _ok(sj + ["zkey", "export", "verificationkey", "c.zkey", "vk.json"], d)
    _ok(sj + ["groth16", "prove", "c.zkey", "w.wtns", "sj_proof.json", "sj_public.json"], d)
    assert _verify_sj(sj, d, "vk.json", "sj_public.json", "sj_proof.json")
    assert _cuzk("prove", d / "c.zkey", d / "w.wtns", d / "proof.json", d / "public.json", "--backend", "cpu") == 0
    assert _verify_sj(sj, d, "vk.json", "public.json", "proof.json")
    assert _cuzk("verify", d / "vk.json", d / "sj_public.json", d / "sj_proof.json") == 0
    expected = json.loads((d / "expected_public.json").read_text())
    assert json.loads((d / "public.json").read_text()) == expected == json.loads((d / "sj_public.json").read_text())


# --- real files for the wrong curve and the wrong protocol ---

def test_bn128_files_are_rejected(work, sj, circom, tmp_path, capsys):
    d = tmp_path
    (d / "circuit.circom").write_text(CIRCUIT % 22)
    (d / "input.json").write_text(json.dumps(INPUT))
    _ok(circom + ["circuit.circom", "--r1cs", "--wasm", "-o", "."], d)        # circom's default: bn128
    _ok(sj + ["wtns", "calculate", "circuit_js/circuit.wasm", "input.json", "witness.wtns"], d)
    with pytest.raises(FormatError, match=r"circuit\.r1cs: section 1 \(header\): the prime is the bn128"):
        read_r1cs(d / "circuit.r1cs")
    assert _cuzk("prove", work / "snarkjs.zkey", d / "witness.wtns", d / "p.json", d / "q.json") == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert re.search(r"witness\.wtns: section 1 \(header\): the prime is the bn128", line), line
    assert not (d / "p.json").exists() and not (d / "q.json").exists()
    assert _cuzk("keygen", "--r1cs", d / "circuit.r1cs", "--zkey", d / "k.zkey") == 2
    assert "bls12381" in capsys.readouterr().err and not (d / "k.zkey").exists()


def test_plonk_zkey_is_rejected(work, sj, circom, tmp_path, capsys):
    d = tmp_path
    (d / "small.circom").write_text(CIRCUIT % 2)              # PLONK needs more rows: keep it small
    _ok(circom + ["small.circom", "--r1cs", "--prime", "bls12381", "-o", "."], d)
    _ok(sj + ["plonk", "setup", d / "small.r1cs", "pot.ptau", d / "plonk.zkey"], work)
    assert _cuzk("prove", d / "plonk.zkey", work / "witness.wtns", d / "p.json", d / "q.json") == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert re.search(r"plonk\.zkey: section 1 \(header\): protocol plonk, not groth16", line), line
    assert sorted(p.name for p in d.iterdir()) == ["plonk.zkey", "small.circom", "small.r1cs"]
