"""The device key cache (cuzk/device_key_cache.py) on a fake device: numpy arrays stand in for the GPU's,
a CPU key cut the way keygen.setup_on_device cuts it stands in for the GPU keygen. Made once, loaded
after; another identity, a damaged entry or a writer's leftovers are never used; the gate gives each
side its own folder."""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cuzk import device_key_cache as dkc
from cuzk import keygen
from cuzk.context import proving_context
from cuzk.curve import AffineBases
from cuzk.gpu.srs import DeviceBases, DeviceKey
from cuzk.keys import ProvingKey
from cuzk.opts import resolve
from cuzk.poly import Domain
from cuzk.qap import COEFF
from cuzk.synthesis import synthesize

REPO = Path(__file__).resolve().parents[2]
TAG = {"circuit": "porep_like", "log_size": 6, "opts": "default"}
HOST = ("alpha_g1", "beta_g1", "beta_g2", "gamma_g2", "delta_g1", "delta_g2", "ic")
DEVICE = ("a", "b_g1", "b_g2", "l", "h")


class FakeCuda:
    name = "cuda"


class FakeKh:
    def __init__(self, pk, dev):
        self.pk, self.dev = pk, dev


@pytest.fixture(scope="module")
def circuit():
    return synthesize("porep_like", 6, resolve(), seeds=(1, 2))


def fake_setup_on_device(r1cs, q=COEFF, domain=None, toxic_seed=0, progress=None):
    """setup_on_device's three results from the CPU keygen: the host key with the single points and ic
    only, the rest as 'device' sections (numpy), B's two sharing one row map as the GPU's do."""
    domain = domain or Domain.for_size(r1cs.qap_rows, 7)
    full = keygen.make_key(r1cs, q, domain, keygen.ToxicWaste.from_seed(toxic_seed), False, "cpu")
    pk = ProvingKey(full.convention, full.generator, full.log_n, full.num_inputs, full.num_aux,
                    full.num_constraints, bytes(32), {n: full.points[n] for n in HOST})
    rows = np.arange(r1cs.num_vars, dtype=np.int32)
    sections = {n: DeviceBases(full.points[n].group, full.points[n].limbs.copy(), full.points[n].inf.copy(),
                               rows if n in ("b_g1", "b_g2") else None) for n in DEVICE}
    return pk, FakeKh(pk, DeviceKey.resident(sections)), {"where": "device", "s": 1.0, "steps": {"scalars": {"s": 0.5}},
                                                         "key_device_bytes": np.int64(123)}


@pytest.fixture
def device(monkeypatch):
    """The fake device; .made counts keygen calls."""
    class Dev:
        made = 0
    dev = Dev()

    def setup_on_device(*a, **kw):
        dev.made += 1
        return fake_setup_on_device(*a, **kw)
    monkeypatch.setattr(keygen, "setup_on_device", setup_on_device)
    monkeypatch.setattr(dkc, "_download", lambda a: np.array(a))
    monkeypatch.setattr(dkc, "_upload", lambda h: np.array(h))     # a copy: the file's map is let go
    monkeypatch.setattr(dkc, "_key_handle", FakeKh)
    return dev


def ctx_for(r1cs, key_dir, tag=TAG, **kw):
    return proving_context(FakeCuda(), r1cs, device_keygen=True, key_dir=key_dir, key_tag=tag, **kw)


def full_key(ctx) -> ProvingKey:
    """The host key with the device sections put back (the fake's row map is the identity)."""
    pk = ctx.pk
    pts = dict(pk.points)
    pts.update({n: AffineBases(s.group, np.asarray(s.limbs), np.asarray(s.inf))
                for n, s in ctx.kh.dev.sections.items()})
    return ProvingKey(pk.convention, pk.generator, pk.log_n, pk.num_inputs, pk.num_aux, pk.num_constraints,
                      pk.digest, pts)


def same_key(a, b) -> bool:
    ka, kb = full_key(a), full_key(b)
    return (ka.points.keys() == kb.points.keys()
            and all(np.array_equal(ka.points[n].limbs, kb.points[n].limbs)
                    and np.array_equal(ka.points[n].inf, kb.points[n].inf) for n in ka.points)
            and (ka.log_n, ka.num_inputs, ka.num_aux, ka.num_constraints, ka.convention, ka.generator)
            == (kb.log_n, kb.num_inputs, kb.num_aux, kb.num_constraints, kb.convention, kb.generator))


def entry_of(key_dir) -> Path:
    entries = [p for p in Path(key_dir).iterdir() if not dkc._TMP in p.name]
    assert len(entries) == 1, entries
    return entries[0]


def test_first_makes_and_saves_then_the_same_circuit_loads(device, circuit, tmp_path, capsys):
    from cuzk.backend.cpu import CpuBackend
    from cuzk.groth16 import verify
    r1cs, asgs = circuit
    made = ctx_for(r1cs, tmp_path)
    assert device.made == 1 and not made.key.cached and made.key.saved_s is not None
    assert made.key.path == str(entry_of(tmp_path))
    loaded = ctx_for(r1cs, tmp_path)
    assert device.made == 1, "the second process made the key again"
    assert loaded.key.cached and loaded.key.where == "device" and "loaded onto the GPU" in loaded.key.describe()
    assert loaded.key.keygen == {"where": "device", "s": 1.0, "steps": {"scalars": {"s": 0.5}}, "key_device_bytes": 123}
    assert same_key(made, loaded)
    secs = loaded.kh.dev.sections
    assert secs["b_g1"].rows is secs["b_g2"].rows and secs["a"].rows is None     # one row map, as made
    assert capsys.readouterr().err == ""
    # the loaded key proves: the CPU prover with its points put back, and the proofs verify
    pk = full_key(loaded)
    from cuzk.prover import Prover
    proofs = Prover(CpuBackend(resolve()), pk).prove(asgs, rng=random.Random(3))
    vk = pk.verifying_key()
    assert all(verify(vk, a.public, p) for a, p in zip(asgs, proofs))


@pytest.mark.parametrize("change", ["tag", "toxic_seed", "convention", "circuit"])
def test_another_identity_is_not_reused(device, circuit, tmp_path, change):
    r1cs, _ = circuit
    first = ctx_for(r1cs, tmp_path)
    if change == "tag":
        other = ctx_for(r1cs, tmp_path, tag={**TAG, "opts": "baseline"})
    elif change == "toxic_seed":
        other = ctx_for(r1cs, tmp_path, toxic_seed=1)
    elif change == "convention":
        other = ctx_for(r1cs, tmp_path, convention="odd_lagrange")
    else:                           # another circuit given the same tag by mistake: its shape differs
        other = ctx_for(synthesize("porep_like", 7, resolve(), seeds=(1,))[0], tmp_path)
    assert device.made == 2 and not other.key.cached
    assert other.key.path != first.key.path
    assert change == "tag" or not same_key(first, other)     # the fake makes one key per circuit, whatever the tag
    assert ctx_for(r1cs, tmp_path).key.cached and device.made == 2      # the first is still there


def _truncate(entry):
    f = entry / "dev.h.limbs.npy"
    f.write_bytes(f.read_bytes()[:-100])


def _flip(entry):
    f = entry / "dev.a.limbs.npy"
    b = bytearray(f.read_bytes())
    b[-7] ^= 0x10
    f.write_bytes(bytes(b))


def _flip_host(entry):
    f = entry / "host.ic.limbs.npy"
    b = bytearray(f.read_bytes())
    b[-1] ^= 0x01
    f.write_bytes(bytes(b))


def _missing(entry):
    (entry / "dev.b_g2.inf.npy").unlink()


def _manifest_cut(entry):
    m = entry / dkc.MANIFEST
    m.write_text(m.read_text()[:50])


def _no_manifest(entry):
    (entry / dkc.MANIFEST).unlink()


def _other_identity(entry):
    m = entry / dkc.MANIFEST
    doc = json.loads(m.read_text())
    doc["identity"]["toxic_seed"] = 5
    m.write_text(json.dumps(doc))


def _other_shape(entry):
    """A file whose bytes pass but whose shape is not the manifest's."""
    f = entry / "dev.l.inf.npy"
    np.save(f, np.load(f)[:-1])
    m = entry / dkc.MANIFEST
    doc = json.loads(m.read_text())
    doc["files"]["dev.l.inf.npy"]["crc32"] = dkc._crc(np.load(f))
    m.write_text(json.dumps(doc))


def _manifest_edit(change):
    """A manifest edited as a flipped bit can: still JSON, its identity and files' CRCs intact."""
    def damage(entry):
        m = entry / dkc.MANIFEST
        doc = json.loads(m.read_text())
        change(doc)
        m.write_text(json.dumps(doc))
    damage.__name__ = change.__name__
    return damage


def _generator(doc):
    doc["pk"]["generator"] = 6                 # '7' -> '6': one bit


def _log_n(doc):
    doc["pk"]["log_n"] += 1


def _group(doc):
    doc["device"]["a"]["group"] = 0            # '1' -> '0': one bit


def _not_an_object(doc):
    doc["host"] = []


def _fifo(name):
    def damage(entry):
        (entry / name).unlink()
        os.mkfifo(entry / name)
    damage.__name__ = f"fifo {name}"
    return damage


@pytest.mark.parametrize("damage", [_truncate, _flip, _flip_host, _missing, _manifest_cut, _no_manifest,
                                    _other_identity, _other_shape, _manifest_edit(_generator),
                                    _manifest_edit(_log_n), _manifest_edit(_group), _manifest_edit(_not_an_object),
                                    _fifo(dkc.MANIFEST), _fifo("dev.a.limbs.npy")],
                         ids=lambda f: f.__name__)
def test_a_damaged_entry_is_made_again_never_used(device, circuit, tmp_path, capsys, damage):
    r1cs, _ = circuit
    good = ctx_for(r1cs, tmp_path)
    damage(entry_of(tmp_path))

    def hung(signum, frame):
        pytest.fail("the load blocked on the entry")        # not an OSError: the cache must not take it for damage
    old = signal.signal(signal.SIGALRM, hung)
    signal.alarm(10)
    try:
        again = ctx_for(r1cs, tmp_path)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    assert device.made == 2 and not again.key.cached
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not used" in err[0] and "making the key again" in err[0], err
    assert same_key(good, again)
    third = ctx_for(r1cs, tmp_path)                      # the entry was written again, whole
    assert third.key.cached and device.made == 2 and same_key(good, third)


def test_a_save_that_fails_keeps_the_key_and_leaves_nothing(device, circuit, tmp_path, monkeypatch, capsys):
    r1cs, _ = circuit
    calls = []

    def download(a):
        calls.append(1)
        if len(calls) == 3:
            raise OSError(28, "No space left on device")
        return np.array(a)
    monkeypatch.setattr(dkc, "_download", download)
    ctx = ctx_for(r1cs, tmp_path)
    assert ctx.key.path is None and ctx.kh.dev.sections["h"].limbs is not None
    err = capsys.readouterr().err
    assert "not saved" in err and "No space left" in err
    assert list(tmp_path.iterdir()) == []                # neither an entry nor a temporary folder
    monkeypatch.setattr(dkc, "_download", lambda a: np.array(a))
    assert not ctx_for(r1cs, tmp_path).key.cached and device.made == 2


_KILLED_WRITER = """
import os, signal, sys
import numpy as np
sys.path.insert(0, {tests!r})
import test_device_key_cache as t
from cuzk import device_key_cache as dkc
from cuzk.synthesis import synthesize
from cuzk.opts import resolve
r1cs = synthesize("porep_like", 6, resolve(), seeds=(1,))[0]
pk, kh, info = t.fake_setup_on_device(r1cs)
n = []
def download(a):
    n.append(1)
    if len(n) == 3:
        os.kill(os.getpid(), signal.SIGKILL)         # killed mid-write: two arrays of the key written
    return np.array(a)
dkc._download = download
dkc.save({key_dir!r}, dkc.identity(r1cs, t.COEFF, 7, 0, t.TAG), pk, kh, info)
"""


def test_a_writer_killed_midway_leaves_nothing_a_reader_loads(device, circuit, tmp_path, capsys):
    r1cs, _ = circuit
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    p = subprocess.run([sys.executable, "-c", _KILLED_WRITER.format(tests=str(Path(__file__).resolve().parent), key_dir=str(tmp_path))],
                       env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == -9, p.stderr
    left = list(tmp_path.iterdir())
    assert len(left) == 1 and dkc._TMP in left[0].name and any(left[0].iterdir())    # its temporary folder
    ident = dkc.identity(r1cs, COEFF, 7, 0, TAG)
    assert dkc.load(tmp_path, ident) is None
    # a whole entry's files in a live writer's temporary folder are not read either
    live = tmp_path / f"{dkc.entry_path(tmp_path, ident).name}{dkc._TMP}{os.getppid()}-x"
    dkc.save(tmp_path / "elsewhere", ident, *fake_setup_on_device(r1cs)[:2], {})
    os.rename(entry_of(tmp_path / "elsewhere"), live)
    assert dkc.load(tmp_path, ident) is None
    made = ctx_for(r1cs, tmp_path)
    assert device.made == 1 and not made.key.cached and capsys.readouterr().err == ""
    names = sorted(p.name for p in tmp_path.iterdir() if p.name != "elsewhere")
    # the dead writer's folder is gone, the live one's kept, the entry whole
    assert names == sorted([Path(made.key.path).name, live.name])
    assert ctx_for(r1cs, tmp_path).key.cached and device.made == 1


def test_without_a_folder_the_key_is_made_and_nothing_written(device, circuit, tmp_path, monkeypatch):
    r1cs, _ = circuit
    monkeypatch.chdir(tmp_path)
    for _ in range(2):
        ctx = proving_context(FakeCuda(), r1cs, device_keygen=True)
        assert not ctx.key.cached and ctx.key.path is None
    assert device.made == 2 and list(tmp_path.iterdir()) == []


def test_without_a_tag_the_circuit_digest_names_the_entry(circuit):
    r1cs, _ = circuit
    other = synthesize("mulchain", 6, resolve(), seeds=(1,))[0]
    a, b = dkc.identity(r1cs, COEFF, 7, 0), dkc.identity(other, COEFF, 7, 0)
    assert a["tag"] == {"digest": r1cs.digest()} and dkc.entry_path("k", a) != dkc.entry_path("k", b)
    assert dkc.entry_path("k", a) == dkc.entry_path("k", dkc.identity(r1cs, COEFF, 7, 0))


# --- the perf workload and the worker ---

def test_the_workload_names_its_circuit_and_passes_the_folder(tmp_path):
    from cuzk.perf.workload import Spec, Workload
    w = Workload(Spec("cuda", "porep_partition", 24, batch=3), key_dir=str(tmp_path))
    assert w._key_cache_args() == {"key_dir": str(tmp_path),
                                   "key_tag": {"circuit": "porep_partition", "log_size": 24, "opts": "default"}}
    # the tag does not depend on the batch (one constraint system for every seed), only the circuit
    assert (Workload(Spec("cuda", "porep_partition", 24, batch=1), key_dir="x")._key_cache_args()["key_tag"]
            == w._key_cache_args()["key_tag"])
    assert Workload(Spec("cuda", "porep_partition", 24))._key_cache_args() == {}       # no folder: as before


def test_the_worker_gives_the_folder_and_says_how_the_key_came(tmp_path):
    from cuzk.perf import worker
    req = {"protocol": worker.PROTOCOL, "spec": {"backend": "cpu", "log_size": 6}, "areas": ["prep_msm"],
           "key_dir": str(tmp_path / "base.keys")}
    w = worker.Worker(req)
    assert w.w.key_dir == str(tmp_path / "base.keys")
    rep = w.setup()
    assert rep["status"] == "ready" and rep["key"]["where"] == "cache"       # a host key: the folder is not used
    assert rep["key"]["how"] in ("made", "loaded") and rep["key"]["s"] >= 0 and "key" in rep["setup_s"]
    assert not (tmp_path / "base.keys").exists()
    assert worker.Worker({**req, "key_dir": None}).w.key_dir is None


# --- the gate ---

def test_the_gate_gives_each_side_a_folder_of_its_own(tmp_path):
    from cuzk.perf import gate, gate_config
    from cuzk.perf.calibrate import commit_change, make_repo
    base = make_repo(REPO, tmp_path / "repo")
    head = commit_change(tmp_path / "repo", "README.md", lambda t: t + "\nchanged\n", "head")
    seen = []

    class Worker:
        def __init__(self, root):
            self.side, self.pid = Path(root).name, 4000 + len(seen)

        def send(self, msg):
            self.msg = msg

        def receive(self):
            msg = self.msg
            if "protocol" in msg:
                seen.append((self.side, msg["key_dir"], msg["root"]))
                assert msg["protocol"] == gate.PROTOCOL
                return {"status": "ready", "numbers": {a: 1 for a in msg["areas"]}}
            if "sample" in msg:
                return {"status": "ok", "value": 1.0}
            return {"status": "done", "discards": []}

        def ask(self, msg):
            self.send(msg)
            return self.receive()

        def close(self):
            pass
    cfg = gate_config.parse({"gate": {"rounds": 4, "samples": 2, "alpha": 0.2},
                             "workload": [{"backend": "cpu", "log_size": 8, "phases": ["prep_msm"]}]})
    res = gate.run(tmp_path / "repo", base, head, cfg, spawn=lambda root, timeout, setup_wide=False: Worker(root), log=lambda m: None)
    assert res.exit_code == gate.EXIT_OK and len(seen) == 8
    dirs = {side: {d for s, d, _ in seen if s == side} for side in ("base", "head")}
    assert all(len(d) == 1 for d in dirs.values()), dirs              # one folder a side, every round
    (b,), (h,) = dirs["base"], dirs["head"]
    assert b != h and Path(b).parent == Path(h).parent                 # apart, in the gate's workspace
    roots = {s: r for s, _, r in seen}
    assert Path(roots["base"]).parent == Path(b).parent                # beside the side's checkout,
    assert not Path(b).is_relative_to(roots["base"]) and not Path(h).is_relative_to(roots["head"])  # not in it
    assert not Path(b).parent.exists()                                 # removed with the workspace


def test_a_device_error_while_loading_is_raised_and_the_entry_kept(device, circuit, tmp_path, monkeypatch):
    """Out of device memory says nothing about the files: loud, and the entry is still there."""
    r1cs, _ = circuit
    ctx_for(r1cs, tmp_path)

    def upload(h):
        raise MemoryError("out of memory allocating 1,610,612,736 bytes")
    monkeypatch.setattr(dkc, "_upload", upload)
    with pytest.raises(MemoryError):
        ctx_for(r1cs, tmp_path)
    monkeypatch.setattr(dkc, "_upload", lambda h: np.array(h))
    assert ctx_for(r1cs, tmp_path).key.cached and device.made == 1


def test_two_writers_of_one_key_keep_one_entry_and_say_nothing(device, circuit, tmp_path, capsys):
    """Two workers that both missed save the same key: the second's rename finds the first's entry, which
    stays; that is no failure to report."""
    r1cs, _ = circuit
    ident = dkc.identity(r1cs, COEFF, 7, 0, TAG)
    pk, kh, info = fake_setup_on_device(r1cs)
    first = dkc.save(tmp_path, ident, pk, kh, info)
    second = dkc.save(tmp_path, ident, pk, kh, info)
    assert second == first and [p.name for p in tmp_path.iterdir()] == [first.name]
    assert capsys.readouterr().err == ""
    assert dkc.load(tmp_path, ident) is not None
