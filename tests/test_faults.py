"""Faults a careless user or an attacker can cause: keys with points outside their subgroups, files that
lie about their sizes, FIFOs, deep JSON. Each is one line naming the file, exit 2, nothing written."""
from __future__ import annotations

import json
import os
import struct
import threading
from pathlib import Path

import numpy as np
import pytest
from py_arkworks_bls12381 import G1Point, G2Point, Scalar

from cuzk import circuits
from cuzk.cli import main
from cuzk.curve import AffineBases
from cuzk.field import P, R
from cuzk.formats import read_zkey, write_r1cs, write_wtns, write_zkey, zkey_writer
from cuzk.keygen import setup
from cuzk.keys import KeyFormatError, ProvingKey


@pytest.fixture(autouse=True)
def _cache(monkeypatch, tmp_path_factory):
    monkeypatch.setenv("CUZK_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    monkeypatch.delenv("CUZK_OPT", raising=False)


def g1_torsion(x: int = 1) -> G1Point:
    """A point of E(Fp) of small order (in the cofactor's part, not in G1): r·Q for a curve point Q."""
    while True:
        rhs = (x ** 3 + 4) % P
        y = pow(rhs, (P + 1) // 4, P)                 # p = 3 mod 4
        if y * y % P == rhs:
            q = G1Point.from_xy_bytes_unchecked_le(x.to_bytes(48, "little") + y.to_bytes(48, "little"))
            t = q * Scalar(R - 1) + q
            if any(t.to_xy_bytes_le()):
                return t
        x += 1


def _with_torsion(pts: AffineBases, i: int) -> AffineBases:
    ark = pts.to_ark()
    ark[i] = ark[i] + g1_torsion()
    return AffineBases.from_ark(1, ark)


@pytest.fixture(scope="module")
def snark(tmp_path_factory):
    """A zkey, its witness and public inputs for mulchain 2^5, and the key (to damage copies of)."""
    d = tmp_path_factory.mktemp("snark")
    r1cs, inputs, aux = circuits.build("mulchain", 5)
    pk = setup(r1cs, "odd_lagrange", 5)
    with open(d / "c.zkey", "wb") as f:
        zkey_writer(pk, r1cs)(f)
    with open(d / "w.wtns", "wb") as f:
        write_wtns(f, np.concatenate([inputs, aux]))
    with open(d / "c.r1cs", "wb") as f:
        write_r1cs(f, r1cs)
    return d


def _zkey_with(snark: Path, out: Path, section: str, change) -> Path:
    zk = read_zkey(snark / "c.zkey")
    zk.pk.points[section] = change(zk.pk.points[section])
    with open(out, "wb") as f:
        write_zkey(f, zk.pk, zk.coeffs, zk.mpc)
    return out


def _one_line(capsys) -> str:
    err = [ln for ln in capsys.readouterr().err.strip().splitlines() if not ln.startswith("cuzk: no GPU")]
    assert len(err) == 1 and err[0].startswith("cuzk: error:"), err
    return err[0]


def _files(d: Path) -> list[str]:
    return sorted(p.name for p in d.iterdir())


# ---------------------------------------------------------------- points outside their subgroups

@pytest.mark.parametrize("section,index", [("a", 1), ("a", 7), ("h", 3), ("b_g1", 2), ("l", 0)])
def test_prove_refuses_a_key_with_torsion_in_a_bulk_section(snark, tmp_path, capsys, section, index):
    """The proof's own pairing check does not see a small-order component (it vanishes in the pairing),
    but `cuzk verify` refuses the written points: prove checks them before writing and names the key."""
    zkey = _zkey_with(snark, tmp_path / "bad.zkey", section, lambda p: _with_torsion(p, index))
    rc = main(["prove", str(zkey), str(snark / "w.wtns"), str(tmp_path / "proof.json"), str(tmp_path / "public.json")])
    line = _one_line(capsys)
    assert rc == 2
    assert str(zkey) in line and "subgroup" in line, line
    assert _files(tmp_path) == ["bad.zkey"]


def test_prove_of_a_sound_key_still_verifies(snark, tmp_path, capsys):
    out = [str(tmp_path / n) for n in ("proof.json", "public.json", "vk.json")]
    assert main(["prove", str(snark / "c.zkey"), str(snark / "w.wtns"), *out[:2]]) == 0
    assert main(["export-vk", str(snark / "c.zkey"), out[2]]) == 0
    assert main(["verify", out[2], out[1], out[0]]) == 0


def test_ic_torsion_and_ic0_at_infinity_are_refused(snark, tmp_path, capsys):
    for name, change in {"ic1_torsion": lambda p: _with_torsion(p, 1),
                         "ic0_infinity": lambda p: AffineBases(1, np.where(np.arange(len(p))[:, None] == 0, 0,
                                                                           p.limbs).astype(np.uint32),
                                                               p.inf | (np.arange(len(p)) == 0))}.items():
        zkey = _zkey_with(snark, tmp_path / f"{name}.zkey", "ic", change)
        vk = tmp_path / f"{name}.json"
        assert main(["export-vk", str(zkey), str(vk)]) == 2
        line = _one_line(capsys)
        assert str(zkey) in line and "IC" in line, line
        assert not vk.exists()
        assert main(["prove", str(zkey), str(snark / "w.wtns"), str(tmp_path / "p.json"),
                     str(tmp_path / "q.json")]) == 2
        assert str(zkey) in _one_line(capsys)
        assert not (tmp_path / "p.json").exists()


def test_verify_refuses_a_vk_with_ic0_at_infinity(snark, tmp_path, capsys):
    out = [tmp_path / n for n in ("proof.json", "public.json", "vk.json")]
    assert main(["prove", str(snark / "c.zkey"), str(snark / "w.wtns"), str(out[0]), str(out[1])]) == 0
    assert main(["export-vk", str(snark / "c.zkey"), str(out[2])]) == 0
    vk = json.loads(out[2].read_text())
    vk["IC"][0] = ["0", "1", "0"]
    out[2].write_text(json.dumps(vk))
    capsys.readouterr()
    assert main(["verify", str(out[2]), str(out[1]), str(out[0])]) == 2
    line = _one_line(capsys)
    assert str(out[2]) in line and "IC[0]" in line, line


def test_cuzk_key_with_torsion_in_ic_is_refused_on_load(tmp_path):
    r1cs, _, _ = circuits.build("mulchain", 5)
    pk = setup(r1cs)
    pk.points["ic"] = _with_torsion(pk.points["ic"], 1)
    pk.save(tmp_path / "k.cuzkkey")
    with pytest.raises(KeyFormatError, match=r"k\.cuzkkey: section ic: point 1: .*subgroup"):
        ProvingKey.load(tmp_path / "k.cuzkkey")
