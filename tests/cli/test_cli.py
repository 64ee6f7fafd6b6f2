"""End-to-end tests of the cuzk command line (bench, keygen, verify), CPU backend, small sizes.

The CLI runs in-process through `cuzk.cli.main([...])`; one test runs `python -m cuzk` in a
subprocess to check the real exit codes. Keys always go to a temporary cache
(CUZK_CACHE_DIR). The snarkjs cross-check runs snarkjs from .ci/node (`bash .ci/run`), and is skipped
without it (a failure under CI=true).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import cuzk
from cuzk import circuits
from cuzk.cli import main
from cuzk.field import R
from snarkjs_cli import require, verdict

REPO = Path(__file__).resolve().parents[2]
PHASES = ("synthesis", "prep_msm", "ntt_msm_h", "batch_addition", "tail_msm", "b_g2", "proof_assembly")
PHASE_KEYS = ("host_s", "device_s", "peak_device_bytes", "peak_host_bytes")


def _gpu_usable() -> bool:
    from cuzk.backend import gpu_status
    return gpu_status()[0]


NO_GPU = pytest.mark.skipif(_gpu_usable(), reason="a usable CUDA device is present; this tests the no-GPU path")


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory) -> Path:
    """One key cache for the module, so keys of the same circuit are set up once."""
    return tmp_path_factory.mktemp("cuzk-cache")


@pytest.fixture(autouse=True)
def _env(monkeypatch, cache_dir):
    monkeypatch.setenv("CUZK_CACHE_DIR", str(cache_dir))
    monkeypatch.delenv("CUZK_OPT", raising=False)


def _json(path: Path):
    with open(path) as f:
        return json.load(f)


def _dump(path: Path, obj) -> Path:
    path.write_text(json.dumps(obj))
    return path


@pytest.fixture(scope="module")
def porep_run(tmp_path_factory, cache_dir):
    """`bench --backend cpu --log-size 8 --circuit porep_like --json F --save DIR`, run once."""
    out = tmp_path_factory.mktemp("porep-run")
    report, save = out / "report.json", out / "saved"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CUZK_CACHE_DIR", str(cache_dir))
        mp.delenv("CUZK_OPT", raising=False)
        rc = main(["bench", "--backend", "cpu", "--log-size", "8", "--circuit", "porep_like",
                   "--json", str(report), "--save", str(save)])
    return {"rc": rc, "report": report, "save": save, "dir": out}


@pytest.fixture
def saved(porep_run, tmp_path):
    """A private copy of the saved vk/public/proof, safe to tamper with."""
    assert porep_run["rc"] == 0
    d = tmp_path / "saved"
    shutil.copytree(porep_run["save"], d)
    return d


def _tamper_proof(d: Path) -> Path:
    """pi_a replaced by pi_c: still a valid G1 point, but the proof no longer verifies."""
    p = _json(d / "proof.json")
    assert p["pi_a"] != p["pi_c"]
    p["pi_a"] = p["pi_c"]
    return _dump(d / "proof_tampered.json", p)


def _wrong_public(d: Path) -> Path:
    pub = _json(d / "public.json")
    pub[0] = str((int(pub[0]) + 1) % R)
    return _dump(d / "public_wrong.json", pub)


# --- bench ---

def test_bench_porep_json_schema(porep_run):
    assert porep_run["rc"] == 0
    rep = _json(porep_run["report"])
    for key in ("cuzk_version", "commit", "backend", "circuit", "optimizations", "phases", "total_s",
                "verified", "gpu"):
        assert key in rep, key
    assert rep["cuzk_version"] == cuzk.__version__
    assert rep["commit"] is None or re.fullmatch(r"[0-9a-f]{40}", rep["commit"]), rep["commit"]
    assert rep["backend"] == "cpu"
    assert rep["gpu"] is None
    assert rep["verified"] is True

    r1cs, _, _ = circuits.build("porep_like", 8)
    c = rep["circuit"]
    assert {"name", "constraints", "domain", "circuits"} <= c.keys()
    assert c["name"] == "porep_like"
    assert c["constraints"] == r1cs.num_constraints
    assert c["domain"] == 256 and c["domain"] >= r1cs.qap_rows
    assert c["circuits"] == 1

    opts = rep["optimizations"]
    assert isinstance(opts, dict) and opts and all(isinstance(v, bool) for v in opts.values())
    from cuzk.opts import REGISTRY
    assert set(opts) == set(REGISTRY)

    phases = rep["phases"]
    assert list(phases) == list(PHASES)
    for name, rec in phases.items():
        for k in PHASE_KEYS:
            assert k in rec, (name, k)
        assert isinstance(rec["host_s"], float) and rec["host_s"] >= 0, name
        assert rec["device_s"] is None, name
        assert rec["peak_device_bytes"] is None, name
        assert isinstance(rec["peak_host_bytes"], int) and rec["peak_host_bytes"] > 0, name
    assert rep["total_s"] == pytest.approx(sum(r["host_s"] for r in phases.values()))


def test_bench_porep_saved_files(porep_run):
    save = porep_run["save"]
    for name in ("proof.json", "public.json", "verification_key.json"):
        assert (save / name).is_file(), name
    assert not list(save.glob("*.tmp")), "temp files left behind"
    proof, public, vk = (_json(save / n) for n in ("proof.json", "public.json", "verification_key.json"))
    assert proof["protocol"] == "groth16" and proof["curve"] == "bls12381"
    assert len(proof["pi_a"]) == 3 and len(proof["pi_b"]) == 3 and len(proof["pi_c"]) == 3
    assert isinstance(public, list) and public and all(isinstance(v, str) and v.isdigit() for v in public)
    assert vk["nPublic"] == len(public) and len(vk["IC"]) == len(public) + 1
    # the porep_like public inputs are (seed, out); they must be the ones the circuit was built with
    _, inputs, _ = circuits.build("porep_like", 8, seed=1)
    assert public == [str(int(v)) for v in inputs[1:]]


def test_bench_prints_phase_table(tmp_path, capsys):
    rc = main(["bench", "--backend", "cpu", "--log-size", "6", "--circuit", "mulchain"])
    out = capsys.readouterr().out
    assert rc == 0
    for name in PHASES:
        assert re.search(rf"^{name}\s+cpu\s", out, re.M), name
    assert "verified: True" in out
    assert "(by py_arkworks_bls12381's pairing check" in out       # which verifier said so


def test_bench_mulchain_batch_odd_lagrange_snarkjs_generator(tmp_path, capsys):
    report, save = tmp_path / "r.json", tmp_path / "save"
    rc = main(["bench", "--backend", "cpu", "--log-size", "7", "--circuits", "2", "--circuit", "mulchain",
               "--convention", "odd_lagrange", "--generator", "snarkjs", "--json", str(report),
               "--save", str(save)])
    assert rc == 0
    rep = _json(report)
    assert rep["verified"] is True
    assert rep["circuit"]["circuits"] == 2
    assert rep["circuit"]["name"] == "mulchain"
    assert rep["circuit"]["convention"] == "odd_lagrange"
    assert rep["circuit"]["generator"] == 5
    capsys.readouterr()
    # both proofs of the batch are saved and verify with the CLI, each against its own inputs
    for sfx in ("", "_1"):
        assert main(["verify", str(save / "verification_key.json"), str(save / f"public{sfx}.json"),
                     str(save / f"proof{sfx}.json")]) == 0, sfx
    assert _json(save / "public.json") != _json(save / "public_1.json")
    # and do not verify against the other circuit's inputs
    assert main(["verify", str(save / "verification_key.json"), str(save / "public.json"),
                 str(save / "proof_1.json")]) == 1


@pytest.mark.parametrize("opt", ["none", "all"])
def test_bench_opt_variants_verify(opt, tmp_path):
    report = tmp_path / "r.json"
    rc = main(["bench", "--backend", "cpu", "--log-size", "6", "--circuit", "porep_like", "--opt", opt,
               "--json", str(report)])
    assert rc == 0
    rep = _json(report)
    assert rep["verified"] is True
    assert rep["optimizations"] and set(rep["optimizations"].values()) == {opt == "all"}


# --- verify ---

def _verify(d: Path, public="public.json", proof="proof.json") -> int:
    return main(["verify", str(d / "verification_key.json"), str(d / public), str(d / proof)])


def test_verify_saved_proof(saved, capsys):
    assert _verify(saved) == 0
    assert "OK" in capsys.readouterr().out


def test_verify_rejects_tampered_proof(saved, capsys):
    bad = _tamper_proof(saved)
    assert _verify(saved, proof=bad.name) == 1
    assert "INVALID" in capsys.readouterr().out


def test_verify_rejects_wrong_public_input(saved, capsys):
    bad = _wrong_public(saved)
    assert _verify(saved, public=bad.name) == 1
    assert "INVALID" in capsys.readouterr().out


# --- keygen ---

def test_keygen_out_and_vk(tmp_path, capsys):
    from cuzk.groth16 import vk_from_json, vk_to_json
    from cuzk.keys import ProvingKey
    key, vk = tmp_path / "k" / "porep6.cuzkkey", tmp_path / "vk.json"
    assert main(["keygen", "--log-size", "6", "--out", str(key), "--vk", str(vk)]) == 0   # default circuit
    assert str(key) in capsys.readouterr().out
    pk = ProvingKey.load(key)
    r1cs, _, _ = circuits.build("porep_like", 6)
    assert pk.log_n == 6 and pk.digest.hex() == r1cs.digest()
    assert pk.convention == "coeff" and pk.generator == 7
    vkj = _json(vk)
    assert vkj == vk_to_json(vk_from_json(vkj))
    assert vkj == vk_to_json(pk.verifying_key())
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["k", "porep6.cuzkkey", "vk.json"]


def test_keygen_cache_miss_then_hit(tmp_path, monkeypatch, capsys):
    import cuzk.keygen as kg
    cache = tmp_path / "fresh-cache"
    monkeypatch.setenv("CUZK_CACHE_DIR", str(cache))
    argv = ["keygen", "--circuit", "mulchain", "--log-size", "6"]
    assert main(argv) == 0
    files = list((cache / "keys").glob("*.cuzkkey"))
    assert len(files) == 1
    path = files[0]
    assert str(path) in capsys.readouterr().out
    st = path.stat()

    calls = []

    def no_setup(*a, **k):
        calls.append(a)
        raise AssertionError("keygen set the key up again instead of using the cache")

    with monkeypatch.context() as m:
        m.setattr(kg, "setup", no_setup)
        assert main(argv) == 0
    assert calls == []
    assert str(path) in capsys.readouterr().out
    st2 = path.stat()
    assert (st2.st_ino, st2.st_mtime_ns) == (st.st_ino, st.st_mtime_ns), "cached key was rewritten"

    # the cached key is the same key --out writes (same toxic waste)
    out = tmp_path / "out.cuzkkey"
    assert main(argv + ["--out", str(out)]) == 0
    assert out.read_bytes() == path.read_bytes()


# --- backends ---

@NO_GPU
def test_backend_cuda_without_gpu_fails_cleanly(tmp_path, capsys):
    report = tmp_path / "r.json"
    rc = main(["bench", "--backend", "cuda", "--log-size", "6", "--json", str(report)])
    err = capsys.readouterr().err
    assert rc == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("cuzk: error:") and "cuda" in lines[0]
    assert not report.exists()


@NO_GPU
def test_backend_auto_falls_back_to_cpu(tmp_path, capsys):
    report = tmp_path / "r.json"
    rc = main(["bench", "--backend", "auto", "--log-size", "6", "--circuit", "mulchain", "--json", str(report)])
    err = capsys.readouterr().err
    assert rc == 0
    assert re.search(r"no GPU backend.*CPU", err), err
    rep = _json(report)
    assert rep["backend"] == "cpu" and rep["verified"] is True and rep["gpu"] is None


def test_subprocess_exit_codes(saved, cache_dir):
    """The real process exit status: 0 valid, 1 invalid, 2 bad input."""
    env = dict(os.environ, CUZK_CACHE_DIR=str(cache_dir))
    env.pop("CUZK_OPT", None)

    def run(*args):
        return subprocess.run([sys.executable, "-m", "cuzk", *args], capture_output=True, text=True,
                              env=env, cwd=saved, timeout=120)

    vk, pub, proof = (str(saved / n) for n in ("verification_key.json", "public.json", "proof.json"))
    ok = run("verify", vk, pub, proof)
    assert ok.returncode == 0, ok.stderr
    bad = run("verify", vk, pub, str(_tamper_proof(saved)))
    assert bad.returncode == 1, bad.stderr
    missing = run("verify", vk, pub, str(saved / "nope.json"))
    assert missing.returncode == 2
    assert missing.stderr.strip().startswith("cuzk: error:") and len(missing.stderr.strip().splitlines()) == 1
    if not _gpu_usable():
        cuda = run("bench", "--backend", "cuda", "--log-size", "6")
        assert cuda.returncode == 2
        assert cuda.stderr.strip().splitlines() == [cuda.stderr.strip()]
        assert cuda.stderr.startswith("cuzk: error:")


# --- opts ---

def test_opts_names_each_variant_as_what_it_runs(capsys):
    """A leave-one-out variant reads "default without X (X: what X does)": what the variant runs, never X's
    own intent as if it were the variant's; one turned on reads "default with X (...)"."""
    from cuzk.opts import REGISTRY
    assert main(["opts"]) == 0
    rows = {m.group(1): m.group(2) for m in re.finditer(r"^\| (default[-+]\w+|baseline)\s+\| (.*?)\s*\|$",
                                                        capsys.readouterr().out, re.M)}
    assert rows["default-A1"] == f"default without A1 (A1: {REGISTRY['A1'].intent})"
    for name, o in REGISTRY.items():
        sign, word = ("-", "without") if o.default else ("+", "with")
        assert rows[f"default{sign}{name}"] == f"default {word} {name} ({name}: {o.intent})"
    assert rows["baseline"] == "every toggle off"


# --- snarkjs cross-check ---

@pytest.fixture(scope="module")
def snarkjs():
    """`snarkjs groth16 verify` (tests/snarkjs_cli.py: from .ci/node, skipped without it, a failure under CI=true)."""
    cmd = require("snarkjs")
    r = subprocess.run(cmd + ["--version"], capture_output=True, text=True, timeout=60)
    if not re.match(r"snarkjs@\d", (r.stdout + r.stderr).lstrip()):     # its version first, then usage
        pytest.fail(f"{cmd[0]} does not run as snarkjs: {(r.stdout + r.stderr).strip()[:300]}")

    def verify(d: Path, public="public.json", proof="proof.json"):
        r = subprocess.run(cmd + ["groth16", "verify", str(d / "verification_key.json"), str(d / public),
                                  str(d / proof)], capture_output=True, text=True, timeout=120)
        return r.returncode, r.stdout + r.stderr
    return verify


def test_snarkjs_verdict_is_read_from_snarkjs_alone():
    assert verdict("\x1b[32;22m[INFO]  \x1b[39;1msnarkJS\x1b[0m: OK!\n") == "OK!"
    assert verdict("\x1b[31;22m[ERROR] \x1b[39;1msnarkJS\x1b[0m: Invalid proof\n") == "Invalid proof"
    npm = ('npm error npx canceled due to missing packages and no YES option: ["snarkjs@0.7.6"]\n'
           "npm error A complete log of this run can be found in: /root/.npm/_logs/x-debug-0.log\n")
    assert verdict(npm) is None
    assert verdict("[ERROR] snarkJS: Error: ENOENT: no such file or directory, open 'p.json'\n") is None


def test_snarkjs_accepts_saved_proof(snarkjs, saved):
    rc, out = snarkjs(saved)
    assert rc == 0 and verdict(out) == "OK!", out


def test_snarkjs_rejects_tampered_proof(snarkjs, saved):
    rc, out = snarkjs(saved, proof=_tamper_proof(saved).name)
    assert rc != 0 and verdict(out) == "Invalid proof", out


def test_snarkjs_rejects_wrong_public_input(snarkjs, saved):
    rc, out = snarkjs(saved, public=_wrong_public(saved).name)
    assert rc != 0 and verdict(out) == "Invalid proof", out


def test_keygen_backend_flag(tmp_path, monkeypatch, capsys):
    """--backend cpu makes the same key as the default; --backend cuda without a GPU is a clear error."""
    import cuzk.backend as B
    import cuzk.keygen as kg
    a, b = tmp_path / "a.cuzkkey", tmp_path / "b.cuzkkey"
    assert main(["keygen", "--log-size", "5", "--out", str(a)]) == 0
    assert main(["keygen", "--log-size", "5", "--out", str(b), "--backend", "cpu"]) == 0
    assert a.read_bytes() == b.read_bytes()
    seen = []
    real = kg.setup
    monkeypatch.setattr(kg, "setup", lambda *x, **k: seen.append(k.get("backend")) or real(*x, **k))
    monkeypatch.setattr(B, "gpu_status", lambda: (False, "no GPU here"))
    assert main(["keygen", "--log-size", "5", "--out", str(tmp_path / "c"), "--backend", "cuda"]) == 2
    assert "keygen backend cuda: no GPU here" in capsys.readouterr().err
    assert seen == ["cuda"] and not (tmp_path / "c").exists()


def test_bench_warmup_keeps_first_use_out_of_the_phases(tmp_path, capsys):
    """--warmup N: N untimed proofs first (their wall times in the report), then the timed one, verified."""
    report = tmp_path / "r.json"
    rc = main(["bench", "--backend", "cpu", "--log-size", "6", "--circuit", "mulchain", "--warmup", "2",
               "--json", str(report)])
    assert rc == 0
    rep = _json(report)
    assert len(rep["warmup_wall_s"]) == 2 and all(t > 0 for t in rep["warmup_wall_s"])
    assert rep["verified"] is True and rep["phases"]["tail_msm"]["calls"] == 1


@pytest.mark.parametrize("extra", [["--warmup", "-1"], ["--warmup", "1", "--pipeline"]])
def test_bench_warmup_bad_values(extra, capsys):
    rc = main(["bench", "--backend", "cpu", "--log-size", "6", "--circuit", "mulchain", *extra])
    assert rc != 0
    assert "--warmup" in capsys.readouterr().err


def test_outputs_get_the_usual_mode_and_are_named(tmp_path, capsys):
    """Written all or nothing through temp files, yet with the umask's mode, not the temp file's 0600;
    one line on stderr names what was written."""
    import os
    import stat
    from cuzk.cli.common import write_all
    old = os.umask(0o022)
    try:
        write_all({tmp_path / "a.json": "{}\n", tmp_path / "sub" / "b.bin": b"\x00"})
    finally:
        os.umask(old)
    for f in (tmp_path / "a.json", tmp_path / "sub" / "b.bin"):
        assert stat.S_IMODE(f.stat().st_mode) == 0o644, oct(f.stat().st_mode)
    err = capsys.readouterr().err
    assert err.startswith("cuzk: wrote ") and "a.json" in err and "b.bin" in err
    os.umask(0o077)
    try:
        write_all({tmp_path / "c.json": "{}\n"}, say=None)
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "c.json").stat().st_mode) == 0o600
    assert capsys.readouterr().err == ""


def test_one_parser_a_process_reads_the_environment_when_its_command_runs(tmp_path, monkeypatch, capsys):
    """The parser is built once a process (a suite of in-process commands paid 30 ms a call for it), so no
    default may be read from the environment when it is built: $CUZK_MACHINE set after a first command counts."""
    import importlib
    cli_main = importlib.import_module("cuzk.cli.main")
    assert cli_main._parser() is cli_main._parser()
    argv = ["gate", "--calibrate", "--base", "a", "--head", "b", "--out", str(tmp_path / "o")]
    monkeypatch.delenv("CUZK_MACHINE", raising=False)
    assert main(argv) == 2
    assert "--machine NAME (or $CUZK_MACHINE)" in capsys.readouterr().err
    monkeypatch.setenv("CUZK_MACHINE", "runner-1")
    assert main(argv) == 2
    assert "measures --base against itself: leave --head out" in capsys.readouterr().err
