"""a/b/c of a snarkjs .zkey on the GPU (gpu/zkey.py) against ZKey.assign, and `cuzk prove --backend
cuda`; the host parts (the device CSR's layout, witness checks, bench-snarkjs --skip-snarkjs) run
everywhere. GPU tests: `pytest -m gpu tests/formats/test_zkey_gpu.py`, skipped without a GPU."""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cuzk import circuits
from cuzk.cli import main
from cuzk.field import FR_LIMBS, FR_MONT_R, R, fr_array, ints_to_limbs, limbs_to_ints
from cuzk.formats import coeffs_from_r1cs, read_wtns, read_zkey, write_wtns, write_zkey
from cuzk.formats.zkey import R2_INV, ZKey
from cuzk.groth16 import Proof, public_from_json, verify, verify_blst
from cuzk.keygen import ToxicWaste, setup
from cuzk.opts import resolve
from cuzk.run import prove_files

ROOT = Path(__file__).resolve().parents[2]


def _files(tmp_path_factory, log: int, circuit: str = "porep_like") -> dict:
    r1cs, inputs, aux = circuits.build(circuit, log, seed=3)
    pk = setup(r1cs, "odd_lagrange", 5, ToxicWaste.from_seed(7), backend="cpu")
    d = tmp_path_factory.mktemp(f"zkey{log}")
    with open(d / "c.zkey", "wb") as f:
        write_zkey(f, pk, coeffs_from_r1cs(r1cs))
    with open(d / "c.wtns", "wb") as f:
        write_wtns(f, np.concatenate([inputs, aux]))
    return {"dir": d, "zkey": d / "c.zkey", "wtns": d / "c.wtns", "r1cs": r1cs, "z": np.concatenate([inputs, aux])}


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    return _files(tmp_path_factory, 6)


# --- host parts ---

@pytest.mark.parametrize("source", ["file", "r1cs"])
def test_raw_csr_equals_matrices(small, source):
    """The device CSR's host arrays (Coeffs.raw_csr) = ZKey.matrices(), from a key as read (raw limbs) and from
    coefficients made from an R1CS (canonical ints)."""
    zk = read_zkey(small["zkey"])
    coeffs = zk.coeffs if source == "file" else coeffs_from_r1cs(small["r1cs"])
    ref = ZKey(zk.pk, zk.n_public, coeffs).matrices()
    for which, m in enumerate(ref):
        indptr, cols, raw = coeffs.raw_csr(which, zk.domain_size)
        assert m.nnz > 0
        assert cols.dtype == np.int32 and raw.shape == (m.nnz, FR_LIMBS)
        assert np.array_equal(indptr, m.indptr) and np.array_equal(cols, m.cols)
        assert list(limbs_to_ints(raw) * R2_INV % R) == list(m.coeffs)


def test_lazy_coefficients_match(small):
    zk = read_zkey(small["zkey"])
    assert zk.coeffs._value is None                     # not converted on read
    assert zk.coeffs.equals(coeffs_from_r1cs(small["r1cs"]))
    assert np.array_equal(zk.coeffs.raw(), coeffs_from_r1cs(small["r1cs"]).raw())


def test_assign_takes_limbs(small):
    zk = read_zkey(small["zkey"])
    w = read_wtns(small["wtns"])
    a, b = zk.assign(w.limbs), zk.assign(small["z"])
    for k in "abc":
        assert list(getattr(a, k)) == list(getattr(b, k))
    assert list(w.values) == list(small["z"])


@pytest.mark.parametrize("form", ["ints", "limbs"])
def test_bad_witness_rejected(small, form):
    zk = read_zkey(small["zkey"])
    z = small["z"]
    conv = (lambda v: ints_to_limbs(fr_array(v), FR_LIMBS)) if form == "limbs" else (lambda v: v)
    with pytest.raises(ValueError, match="witness has"):
        zk.assign(conv(z[:-1]))
    bad = z.copy()
    bad[0] = 2
    with pytest.raises(ValueError, match="constant ONE"):
        zk.assign(conv(bad))


def test_bad_witness_rejected_by_gpu_assign_before_upload(small):
    """The GPU assign checks sizes before touching the device (runs without a GPU): gpu/zkey.py, a device module,
    loaded in a fresh interpreter over a stand-in CuPy that holds nothing, so any device call would fail first."""
    code = f"""if True:
        import sys, types
        sys.modules["cupy"] = types.ModuleType("cupy")
        from cuzk.field import FR_LIMBS, fr_array, ints_to_limbs
        from cuzk.formats import read_wtns, read_zkey
        from cuzk.gpu import zkey as gzkey
        zk, z = read_zkey({str(small["zkey"])!r}), read_wtns({str(small["wtns"])!r}).values
        for bad in (ints_to_limbs(fr_array(z[:-2]), FR_LIMBS), list(z) + [5]):
            try:
                gzkey.assign(zk, bad)
            except ValueError as e:
                assert "witness has" in str(e), e
            else:
                raise AssertionError("a witness of the wrong size was taken")
        print("rejected")
    """
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert p.returncode == 0 and p.stdout == "rejected\n", p.stderr


def test_prove_rejects_short_witness(small, tmp_path, capsys):
    p = tmp_path / "short.wtns"
    with open(p, "wb") as f:
        write_wtns(f, small["z"][:-1])
    with pytest.raises(ValueError, match="witness has"):
        prove_files(small["zkey"], p, "cpu", opts=resolve())
    out = tmp_path / "proof.json"
    assert main(["prove", str(small["zkey"]), str(p), str(out), str(tmp_path / "pub.json"), "--backend", "cpu"]) == 2
    assert not out.exists()


def test_bench_snarkjs_skip_snarkjs_cpu(tmp_path, capsys):
    """No node needed: cuzk's CLI and resident proofs timed and verified by cuzk; no ratio."""
    js = tmp_path / "rows.json"
    rc = main(["bench-snarkjs", "--skip-snarkjs", "--backend", "cpu", "--keygen-backend", "cpu", "--log-sizes", "6",
               "--repeat", "1", "--workdir", str(tmp_path / "w"), "--json", str(js)])
    out = capsys.readouterr().out
    assert rc == 0, out
    row = json.loads(js.read_text())["rows"][0]
    assert row["verified"] and row["snarkjs_s"] is None and row["ratio_cli"] is None
    assert row["cuzk_cli_s"] > 0 and row["cuzk_resident_s"] > 0
    ph = row["resident_phases"]                  # where the resident proof's time went
    assert {"synthesis", "ntt_msm_h", "tail_msm", "proof_assembly"} <= set(ph)
    assert 0 < sum(v["host_s"] for v in ph.values()) <= row["cuzk_resident_s"]
    assert "| 2^6 |" in out and "| - |" in out


@pytest.mark.parametrize("kind", ["file", "under_a_file", "link_to_a_file", "dev_null"])
def test_bench_snarkjs_workdir_that_is_no_folder_is_refused_before_any_work(kind, tmp_path, capsys):
    """A --workdir that cannot hold the files was found only after the circuit was built and its key made (into
    the key cache), and the error named a file under it: now one line naming --workdir, before any work."""
    import os
    f = tmp_path / "exist.txt"
    f.write_text("mine\n")
    link = tmp_path / "link"
    link.symlink_to(f)
    workdir = {"file": f, "under_a_file": f / "w", "link_to_a_file": link, "dev_null": "/dev/null"}[kind]
    cache = os.environ["CUZK_CACHE_DIR"]
    before = sorted(os.listdir(cache))
    rc = main(["bench-snarkjs", "--skip-snarkjs", "--backend", "cpu", "--keygen-backend", "cpu", "--log-sizes", "6",
               "--repeat", "1", "--workdir", str(workdir)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and f"--workdir {workdir}" in err[0], err
    assert f.read_text() == "mine\n" and sorted(os.listdir(cache)) == before


# --- GPU ---

@pytest.fixture(scope="module")
def mid(tmp_path_factory):
    return _files(tmp_path_factory, 10)


@pytest.mark.gpu
@pytest.mark.parametrize("form", ["ints", "limbs"])
def test_gpu_assign_equals_host(mid, form):
    from cuzk.gpu import fr as gfr
    from cuzk.gpu.per_device import current
    from cuzk.gpu import zkey as gzkey
    zk = read_zkey(mid["zkey"])
    w = read_wtns(mid["wtns"])
    ref = zk.assign(w.values)
    asg = gzkey.assign(zk, w.limbs if form == "limbs" else w.values)
    n = zk.domain_size
    assert asg.a is None and asg.abc_dev.shape == (3, n, FR_LIMBS)
    got = gfr.download(asg.abc_dev)
    for i, k in enumerate("abc"):
        assert list(got[i * n:(i + 1) * n]) == list(getattr(ref, k)), k
    assert list(gfr.download(asg.z_dev)) == list(w.values)
    assert asg.public == ref.public and len(asg.aux) == zk.pk.num_aux
    assert gzkey.DeviceZKey.of(zk) is zk._device[current()] is gzkey.DeviceZKey.of(zk)    # once per key and device


@pytest.mark.gpu
def test_gpu_fr_mul_and_from_mont():
    import cupy
    from cuzk.gpu import fr as gfr
    rng = random.Random(4)
    x = np.array([rng.randrange(R) for _ in range(1000)] + [0, 1, R - 1], dtype=object)
    y = np.array([rng.randrange(R) for _ in range(1003)], dtype=object)
    out = cupy.full((len(x), FR_LIMBS), 0xFFFFFFFF, dtype=cupy.uint32)
    gfr.mul(gfr.upload(x), gfr.upload(y), out=out)
    assert list(gfr.download(out)) == list(x * y % R)
    raw = cupy.asarray(ints_to_limbs(x, FR_LIMBS))          # plain x read as Montgomery: x·R^-1
    assert list(gfr.download(gfr.from_mont(raw), mont=False)) == list(x * pow(FR_MONT_R, -1, R) % R)


@pytest.mark.gpu
def test_gpu_prove_verifies(mid, tmp_path):
    res = prove_files(mid["zkey"], mid["wtns"], "cuda", opts=resolve(), rng=random.Random(2))
    vk = read_zkey(mid["zkey"]).verifying_key()
    assert verify(vk, res.public, res.proof) and verify_blst(vk, res.public, res.proof)
    assert not verify(vk, [res.public[0] + 1] + res.public[1:], res.proof)
    bad = mid["z"].copy()
    bad[5] = (bad[5] + 1) % R
    p = tmp_path / "bad.wtns"
    with open(p, "wb") as f:
        write_wtns(f, bad)
    with pytest.raises(ValueError, match="does not verify"):
        prove_files(mid["zkey"], p, "cuda", opts=resolve())


@pytest.mark.gpu
def test_cli_prove_cuda_verifies(mid, tmp_path):
    proof, pub, vkp = tmp_path / "proof.json", tmp_path / "public.json", tmp_path / "vk.json"
    assert main(["prove", str(mid["zkey"]), str(mid["wtns"]), str(proof), str(pub), "--backend", "cuda"]) == 0
    assert main(["export-vk", str(mid["zkey"]), str(vkp)]) == 0
    assert main(["verify", str(vkp), str(pub), str(proof)]) == 0
    public = public_from_json(json.loads(pub.read_text()))
    assert public == [int(v) for v in mid["z"][1:mid["r1cs"].num_inputs]]
    Proof.from_json(json.loads(proof.read_text()))
