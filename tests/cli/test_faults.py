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
from py_arkworks_bls12381 import G1Point, Scalar

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


# ---------------------------------------------------------------- sizes, FIFOs, nesting

REPO = str(Path(__file__).resolve().parents[2])


def _limited(cmd: list[str], cwd: Path, mem_bytes: int = 2 << 30, timeout: float = 120):
    """The CLI in a child process with its address space capped: memory is bounded or it fails."""
    import resource
    import subprocess
    import sys

    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (mem_bytes, mem_bytes))
    return subprocess.run([sys.executable, "-m", "cuzk", *cmd], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, preexec_fn=cap, env={**os.environ, "CUZK_CACHE_DIR": str(cwd / "cache")})


def _tiny_r1cs(n_wires: int) -> bytes:
    """A .r1cs with no constraints and no wire map whose header declares `n_wires` wires."""
    header = (struct.pack("<I", 32) + R.to_bytes(32, "little") + struct.pack("<IIIIQI", n_wires, 0, 1, 0, 0, 0))
    body = struct.pack("<IQ", 1, len(header)) + header + struct.pack("<IQ", 2, 0)
    return b"r1cs" + struct.pack("<II", 1, 2) + body


@pytest.mark.parametrize("n_wires", [1 << 26, (1 << 32) - 1])
def test_r1cs_declaring_huge_wire_count_fails_at_once(tmp_path, n_wires):
    path = tmp_path / "tiny.r1cs"
    path.write_bytes(_tiny_r1cs(n_wires))
    assert path.stat().st_size < 256
    p = _limited(["keygen", "--r1cs", str(path), "--out", str(tmp_path / "k.cuzkkey")], tmp_path)
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2, p.stderr[-2000:]
    assert len(lines) == 1 and str(path) in lines[0] and "wires" in lines[0], lines
    assert not (tmp_path / "k.cuzkkey").exists()


@pytest.mark.parametrize("what", ["zkey", "wtns"])
def test_fifo_as_input_is_refused_without_blocking(snark, tmp_path, what):
    fifo = tmp_path / f"pipe.{what}"
    os.mkfifo(fifo)
    args = {"zkey": [fifo, snark / "w.wtns"], "wtns": [snark / "c.zkey", fifo]}[what]
    p = _limited(["prove", *map(str, args), str(tmp_path / "proof.json"), str(tmp_path / "public.json")],
                 tmp_path, timeout=60)
    lines = [ln for ln in p.stderr.strip().splitlines() if not ln.startswith("cuzk: no GPU")]
    assert p.returncode == 2 and len(lines) == 1, p.stderr
    assert str(fifo) in lines[0] and "FIFO" in lines[0], lines
    assert not (tmp_path / "proof.json").exists()


@pytest.mark.parametrize("kind", ["fifo", "device"])
@pytest.mark.parametrize("args", [["gate", "--from-json", "{}"], ["ablate", "--from-json", "{}"],
                                  ["ablate", "--resume", "{}", "--max-seconds", "1"],
                                  ["gate", "--base", "HEAD", "--head", "HEAD", "--config", "{}", "--repo", REPO]])
def test_the_measuring_tools_refuse_a_fifo_or_a_device_as_input(tmp_path, kind, args):
    """A saved gate.json or ablation, or a gate config, given as a FIFO would block in its read, and /dev/zero
    would fill memory: one line naming it, exit 2, without waiting or reading it."""
    path = tmp_path / "pipe.json"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path = Path("/dev/zero")
    p = _limited([a.replace("{}", str(path)) for a in args], tmp_path, timeout=60)
    lines = [ln for ln in p.stderr.strip().splitlines() if not ln.startswith("cuzk: no GPU")]
    assert p.returncode == 2 and len(lines) == 1, p.stderr[-2000:]
    assert str(path) in lines[0] and ("FIFO" if kind == "fifo" else "character device") in lines[0], lines


@pytest.mark.parametrize("args, limit", [
    (["gate", "--from-json", "{}"], "64 MiB"), (["ablate", "--from-json", "{}"], "64 MiB"),
    (["gate", "--base", "HEAD", "--head", "HEAD", "--config", "{}", "--repo", REPO], "1 MiB")])
def test_the_measuring_tools_refuse_a_huge_input_before_reading_it(tmp_path, args, limit):
    """A sparse file of gigabytes is a few bytes in a pull request's artifact: refused by its size, one line,
    in bounded memory (the child's address space is capped below the file)."""
    path = tmp_path / "huge.json"
    with open(path, "wb") as f:
        f.truncate(3 << 30)
    p = _limited([a.replace("{}", str(path)) for a in args], tmp_path, mem_bytes=2 << 30, timeout=60)
    lines = [ln for ln in p.stderr.strip().splitlines() if not ln.startswith("cuzk: no GPU")]
    assert p.returncode == 2 and len(lines) == 1, p.stderr[-2000:]
    assert str(path) in lines[0] and f"more than the {limit}" in lines[0], lines


@pytest.mark.parametrize("doc, what", [
    ({"setup": {}, "rounds_done": "x"}, "rounds_done \"x\" is not a count"),
    ({"setup": {"backend": "cpu", "names": 5}, "rounds_done": 0}, "setup.names is not a list"),
    ({"setup": {"backend": "cpu", "circuit": {"a": 1}}, "rounds_done": 0}, "setup.circuit"),
    ({"setup": {"backend": "cpu", "confidence": 0.95}, "rounds_done": 3, "rounds": 7}, "KeyError"),
])
def test_a_broken_ablation_to_resume_is_one_line_before_any_work(tmp_path, doc, what):
    import json
    path = tmp_path / "saved.json"
    path.write_text(json.dumps(doc))
    p = _limited(["ablate", "--resume", str(path), "--max-seconds", "1"], tmp_path, timeout=60)
    lines = [ln for ln in p.stderr.strip().splitlines() if not ln.startswith("cuzk: no GPU")]
    assert p.returncode == 2 and len(lines) == 1 and str(path) in lines[0] and what in lines[0], p.stderr[-2000:]
    assert not (tmp_path / "cache").exists()                 # no key made first


def test_fifo_as_cuzk_key_is_refused(tmp_path):
    fifo = tmp_path / "k.cuzkkey"
    os.mkfifo(fifo)
    done = []
    t = threading.Thread(target=lambda: done.append(pytest.raises(KeyFormatError, ProvingKey.load, fifo)),
                         daemon=True)
    t.start()
    t.join(60)
    if not done:                               # unblock the reader before failing
        with open(fifo, "wb"):
            pass
        t.join(10)
        raise AssertionError("ProvingKey.load blocked on a FIFO")
    assert "FIFO" in str(done[0].value) and str(fifo) in str(done[0].value)


@pytest.fixture(scope="module")
def proof_set(snark, tmp_path_factory):
    d = tmp_path_factory.mktemp("proof_set")
    out = {n: d / f"{n}.json" for n in ("proof", "public", "vk")}
    assert main(["prove", str(snark / "c.zkey"), str(snark / "w.wtns"), str(out["proof"]), str(out["public"])]) == 0
    assert main(["export-vk", str(snark / "c.zkey"), str(out["vk"])]) == 0
    return {n: p.read_text() for n, p in out.items()}


def _verify_set(tmp_path, texts: dict) -> list[str]:
    for n, t in texts.items():
        (tmp_path / f"{n}.json").write_text(t)
    return [str(tmp_path / f"{n}.json") for n in ("vk", "public", "proof")]


@pytest.mark.parametrize("which", ["vk", "public", "proof"])
@pytest.mark.parametrize("doc", ["[" * 100000, "[" * 100000 + "]" * 100000, '{"a":' * 50000 + "1" + "}" * 50000])
def test_verify_deep_json_is_bad_input(proof_set, tmp_path, capsys, which, doc):
    args = _verify_set(tmp_path, {**proof_set, which: doc})
    capsys.readouterr()
    assert main(["verify", *args]) == 2
    line = _one_line(capsys)
    assert str(tmp_path / f"{which}.json") in line, line


def _bump(pt):
    return [pt[0], str((int(pt[1]) + 1) % P), *pt[2:]]


@pytest.mark.parametrize("which,field,change", [
    ("proof", "pi_a", _bump), ("proof", "pi_c", _bump), ("vk", "vk_alpha_1", _bump),
    ("vk", "IC", lambda ic: [ic[0], _bump(ic[1]), *ic[2:]]), ("proof", "pi_a", lambda p: ["x", *p[1:]])])
def test_verify_point_errors_name_the_file_and_field(proof_set, tmp_path, capsys, which, field, change):
    doc = json.loads(proof_set[which])
    doc[field] = change(doc[field])
    args = _verify_set(tmp_path, {**proof_set, which: json.dumps(doc)})
    capsys.readouterr()
    assert main(["verify", *args]) == 2
    line = _one_line(capsys)
    assert str(tmp_path / f"{which}.json") in line and (field if field != "IC" else "IC[1]") in line, line


# ---------------------------------------------------------------- signals, temp files, the key cache

def test_sigterm_as_a_temp_file_is_created_leaves_nothing(tmp_path, monkeypatch):
    """The signal lands the moment mkstemp returns: the temp file is already registered for clean-up."""
    import signal
    import tempfile
    from cuzk.cli.common import write_all
    from cuzk.files import Interrupted, raise_on_sigterm
    real = tempfile.mkstemp

    def mkstemp_then_signal(*a, **k):
        out = real(*a, **k)
        os.kill(os.getpid(), signal.SIGTERM)
        return out
    old = signal.getsignal(signal.SIGTERM)
    raise_on_sigterm()
    try:
        monkeypatch.setattr(tempfile, "mkstemp", mkstemp_then_signal)
        with pytest.raises(Interrupted) as ei:
            write_all({tmp_path / "a.json": "{}", tmp_path / "b.json": "{}"}, say=None)
    finally:
        signal.signal(signal.SIGTERM, old)
    assert ei.value.code == 143
    assert _files(tmp_path) == []


def test_key_save_signal_at_temp_creation_leaves_nothing(tmp_path, monkeypatch):
    import signal
    import tempfile
    from cuzk.files import Interrupted, raise_on_sigterm
    r1cs, _, _ = circuits.build("mulchain", 5)
    pk = setup(r1cs)
    real = tempfile.mkstemp

    def mkstemp_then_signal(*a, **k):
        out = real(*a, **k)
        os.kill(os.getpid(), signal.SIGTERM)
        return out
    old = signal.getsignal(signal.SIGTERM)
    raise_on_sigterm()
    try:
        monkeypatch.setattr(tempfile, "mkstemp", mkstemp_then_signal)
        with pytest.raises(Interrupted):
            pk.save(tmp_path / "k.cuzkkey")
    finally:
        signal.signal(signal.SIGTERM, old)
    assert _files(tmp_path) == []


def _spawn(args, cwd: Path, stderr_path: Path):
    import subprocess
    import sys
    return subprocess.Popen([sys.executable, "-m", "cuzk", *args], cwd=cwd, stdout=subprocess.DEVNULL,
                            stderr=open(stderr_path, "w"), env={**os.environ, "CUZK_CACHE_DIR": str(cwd / "cache")})


@pytest.mark.parametrize("sig,code", [("SIGINT", 130), ("SIGTERM", 143)])
def test_interrupted_keygen_is_one_line_and_leaves_no_temp_file(tmp_path, sig, code):
    import signal
    import time
    err = tmp_path / "stderr"
    out = tmp_path / "out"
    out.mkdir()
    p = _spawn(["keygen", "--circuit", "mulchain", "--log-size", "16", "--backend", "cpu",
                "--out", str(out / "k.cuzkkey")], tmp_path, err)
    try:
        while "keygen" not in err.read_text() and p.poll() is None:     # the progress bar: set-up under way
            time.sleep(0.05)
        assert p.poll() is None, err.read_text()
        p.send_signal(getattr(signal, sig))
        rc = p.wait(120)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    text = err.read_text()
    assert rc == code, text
    assert "Traceback" not in text and text.rstrip("\n").splitlines()[-1].strip("\r ").endswith("cuzk: interrupted"), text
    assert _files(out) == []


def test_stale_cache_temps_removed_only_when_old_and_ours(tmp_path, monkeypatch):
    import time
    from cuzk.keygen import STALE_TEMP_S, cache_dir, cached_setup
    monkeypatch.setenv("CUZK_CACHE_DIR", str(tmp_path))
    d = cache_dir()
    d.mkdir(parents=True)
    old = time.time() - 2 * STALE_TEMP_S
    made = {}
    for name in ("aa.cuzkkey.x1.tmp", "bb.cuzkkey.x2.tmp", "notes.tmp", "cc.cuzkkey"):
        (d / name).write_text("x")
        made[name] = d / name
    os.utime(made["aa.cuzkkey.x1.tmp"], (old, old))          # old and ours: removed
    os.utime(made["notes.tmp"], (old, old))                  # old, not a key temp: kept
    os.utime(made["cc.cuzkkey"], (old, old))                 # a key: kept
    (d / "link.cuzkkey.x3.tmp").symlink_to(made["notes.tmp"])   # a link: kept, its target too
    os.utime(d / "link.cuzkkey.x3.tmp", (old, old), follow_symlinks=False)
    r1cs, _, _ = circuits.build("mulchain", 5)
    _, path, hit = cached_setup(r1cs, backend="cpu")
    assert not hit
    left = set(_files(d))
    assert "aa.cuzkkey.x1.tmp" not in left
    assert {"bb.cuzkkey.x2.tmp", "notes.tmp", "cc.cuzkkey", "link.cuzkkey.x3.tmp", path.name} <= left


def test_concurrent_benches_make_the_key_once(tmp_path):
    procs = [_spawn(["bench", "--backend", "cpu", "--circuit", "mulchain", "--log-size", "10"], tmp_path,
                    tmp_path / f"err{i}") for i in range(4)]
    for p in procs:
        assert p.wait(300) == 0
    lines = [ln for i in range(4) for ln in (tmp_path / f"err{i}").read_text().splitlines() if ln.startswith("key: ")]
    assert len(lines) == 4, lines
    assert sum("generated" in ln for ln in lines) == 1, lines
    assert sum("cached" in ln for ln in lines) == 3, lines
    keys = list((tmp_path / "cache" / "keys").iterdir())
    assert not [k for k in keys if k.name.endswith(".tmp")], keys


def test_saved_key_gets_the_usual_mode(tmp_path):
    old = os.umask(0o022)
    try:
        assert main(["keygen", "--circuit", "mulchain", "--log-size", "5", "--out", str(tmp_path / "k.cuzkkey")]) == 0
    finally:
        os.umask(old)
    assert (tmp_path / "k.cuzkkey").stat().st_mode & 0o777 == 0o644
