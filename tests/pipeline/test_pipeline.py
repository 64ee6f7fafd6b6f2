"""Pipelined proving (`cuzk bench --pipeline`, cuzk.pipeline), CPU backend, tiny sizes.

Times are checked by their order only (never against wall-clock thresholds). A timer device whose
events are host timestamps stands in for CUDA events, so the GPU busy/idle path runs without a GPU.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from cuzk import circuits
from cuzk.backend.cpu import CpuBackend
from cuzk.cli import main
from cuzk.field import FR_LIMBS, fr_array, ints_to_limbs
from cuzk.groth16 import verify
from cuzk.keygen import cached_setup
from cuzk.opts import resolve
from cuzk.perf.pipeline_plot import pipeline_lanes
from cuzk.pipeline import Job, run_pipelined, run_sequential, summary, warm_up
from cuzk.prover import Prover
from pipeline_fakes import LOG, FakeGpuBackend, make_job, pool_started

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
REPO = Path(__file__).resolve().parents[2]


def _check_times(s: dict, pipelined: bool):
    per = s["per_circuit"]
    assert [c["circuit"] for c in per] == list(range(s["circuits"]))
    for c in per:
        assert 0 <= c["synth_start_s"] <= c["synth_stop_s"] <= c["ready_s"] <= c["taken_s"] <= c["prove_start_s"]
        assert c["prove_start_s"] < c["prove_stop_s"] <= s["wall_s"]
    proves = sorted((c["prove_start_s"], c["prove_stop_s"]) for c in per)
    assert all(a[1] <= b[0] for a, b in zip(proves, proves[1:])), "one prover: proves never overlap"
    assert s["prover_busy_s"] + s["prover_idle_s"] == pytest.approx(s["wall_s"])
    assert s["proofs_per_s"] == pytest.approx(s["circuits"] / s["wall_s"])
    assert s["first_proof_s"] == min(c["prove_stop_s"] for c in per) and s["fill_s"] < s["first_proof_s"]
    overlapping = [(i["circuit"], j["circuit"]) for i in per for j in per
                   if j["synth_start_s"] < i["prove_stop_s"] and j["synth_stop_s"] > i["prove_start_s"]]
    if pipelined:       # sure once circuits > depth + workers: later syntheses wait for the prover to take one
        assert s["circuits"] > s["depth"] + s["workers"]
        assert overlapping and s["overlap_s"] > 0, "a synthesis runs while an earlier circuit is proved"
    else:
        assert not overlapping and s["overlap_s"] == 0
        assert all(b["synth_start_s"] >= a["prove_stop_s"] for a, b in zip(per, per[1:]))


def test_bench_pipeline_compare_json_and_png(tmp_path, capsys):
    js, png = tmp_path / "run.json", tmp_path / "t.png"
    rc = main(["bench", "--backend", "cpu", "--log-size", str(LOG), "--circuits", "4", "--pipeline", "--compare",
               "--pipeline-workers", "1", "--synthesis-pool", "thread", "--json", str(js), "--timeline", str(png)])
    out = capsys.readouterr().out
    assert rc == 0 and "verified: True" in out and "speedup" in out
    assert png.read_bytes()[:8] == PNG_MAGIC
    rep = json.loads(js.read_text())
    assert rep["verified"] is True
    p = rep["pipeline"]
    assert (p["workers"], p["depth"], p["pool"], p["circuits"]) == (1, 2, "thread", 4)
    _check_times(p, pipelined=True)
    _check_times(p["sequential"], pipelined=False)
    assert p["speedup"] == pytest.approx(p["sequential"]["wall_s"] / p["wall_s"])
    assert p["gpu_busy_s"] is None and p["gpu_idle_s"] is None          # the CPU backend has no device clock
    assert {c["worker"] for c in p["per_circuit"]} == {0}
    assert [c["circuit"] for c in rep["phases"]["tail_msm"]["circuits"]] == [0, 1, 2, 3]


def test_queue_bounds_the_circuits_held(setup):
    """Fast synthesis, slow prover: without the bound every circuit would be waiting at once."""
    opts, r1cs, pk = setup
    workers, depth, n = 2, 1, 6
    res = run_pipelined(Prover(CpuBackend(opts), pk), r1cs, make_job(opts, n), workers, depth, "thread")
    per = summary(res)["per_circuit"]
    held = max(sum(c["ready_s"] <= t < c["taken_s"] for c in per) for t in (c["ready_s"] for c in per))
    assert held <= depth + workers
    assert not [t for t in threading.enumerate() if t.name.startswith("cuzk-pipe")]
    vk = pk.verifying_key()
    assert all(verify(vk, pub, pf) for pub, pf in zip(res.publics, res.proofs))


@pytest.mark.parametrize("pool", ["thread", "process"])
@pytest.mark.parametrize("host_assign", [True, False])
def test_each_proof_is_its_own_circuits(setup, pool, host_assign):
    """Proofs, public inputs and per-circuit records land at their circuit's index: circuit i's public inputs
    are its own seed's (seeds out of order, so a proof stored at another index, or made from another
    circuit's witness, shows), and each proof verifies against them."""
    opts, r1cs, pk = setup
    seeds = (5, 3, 9, 1, 7)
    backend = CpuBackend(opts) if host_assign else FakeGpuBackend(opts)
    job = Job("porep_like", LOG, opts, seeds, host_assign, witness_limbs=not host_assign)
    res = run_pipelined(Prover(backend, pk), r1cs, job, 2, 1, pool)
    want = [list(circuits.witness("porep_like", LOG, seed=s, opts=opts)[0][1:]) for s in seeds]
    assert [list(map(int, p)) for p in res.publics] == want
    assert [r.seed for r in res.runs] == list(seeds) and [r.circuit for r in res.runs] == list(range(len(seeds)))
    vk = pk.verifying_key()
    assert all(verify(vk, pub, pf) for pub, pf in zip(res.publics, res.proofs))


def test_warm_up_takes_the_pipelined_path(setup):
    """The bench's untimed warm-up proof goes through the pipeline's hand-off: limbs to the device
    assign, and an assignment the proof may consume (F2), as the timed proofs do."""
    opts, r1cs, pk = setup
    be = FakeGpuBackend(opts)
    prover, spendable = Prover(be, pk), []
    prove = prover.prove

    def watched(asgs, *a, **kw):
        spendable.extend(x.abc_spendable for x in asgs)
        return prove(asgs, *a, **kw)
    prover.prove = watched
    proof, public = warm_up(prover, r1cs, make_job(opts, 3, host_assign=False))
    assert be.limbs_seen == 1 and spendable == [True]
    assert verify(pk.verifying_key(), public, proof)


def test_device_clock_busy_idle_and_lanes(setup):
    opts, r1cs, pk = setup
    prover = Prover(FakeGpuBackend(opts), pk)
    res = run_pipelined(prover, r1cs, make_job(opts, 4, host_assign=False), 1, 2, "thread")
    assert prover.backend.limbs_seen == 4
    assert all(verify(pk.verifying_key(), pub, pf) for pub, pf in zip(res.publics, res.proofs))
    s = summary(res)
    _check_times(s, pipelined=True)
    assert 0 < s["gpu_busy_s"] <= s["prover_busy_s"] and s["gpu_idle_s"] == pytest.approx(s["wall_s"] - s["gpu_busy_s"])
    for c in s["per_circuit"]:
        phases = [d["phase"] for d in c["device_spans"]]
        assert phases[0] == "synthesis" and "tail_msm" in phases and "proof_assembly" not in phases
        for d in c["device_spans"]:          # fake events are host times: inside the circuit's prove
            assert c["prove_start_s"] - 1e-3 <= d["start_s"] <= d["stop_s"] <= c["prove_stop_s"] + 1e-3
    tl = pipeline_lanes(s)
    assert tl["lanes"] == ["worker 0 (host)", "waiting for prover", "prover (host)", "GPU (CUDA events)"]
    assert sorted(b["circuit"] for b in tl["bars"] if b["kind"] == "prove") == [0, 1, 2, 3]
    seq = summary(run_sequential(prover, r1cs, make_job(opts, 2, host_assign=False)))
    _check_times(seq, pipelined=False)
    assert pipeline_lanes(seq)["lanes"][0] == "synthesis (host)"


def test_waiting_bars_get_their_own_rows():
    per = [{"circuit": i, "worker": 0, "synth_start_s": 0.0, "synth_stop_s": 0.1 * (i + 1), "prove_start_s": 1.0 + i,
            "prove_stop_s": 2.0 + i} for i in range(3)]
    bars = [b for b in pipeline_lanes({"per_circuit": per})["bars"] if b["kind"] == "waiting"]
    assert sorted(b["row"] for b in bars) == [0, 1, 2] and {b["rows"] for b in bars} == {3}


def test_process_pool_default(tmp_path, capsys):
    js, out = tmp_path / "run.json", tmp_path / "save"
    rc = main(["bench", "--backend", "cpu", "--log-size", str(LOG), "--circuits", "5", "--pipeline",
               "--pipeline-workers", "2", "--json", str(js), "--save", str(out)])
    assert rc == 0
    p = json.loads(js.read_text())["pipeline"]
    assert p["pool"] == "process" and p["sequential"] is None and p["speedup"] is None
    _check_times(p, pipelined=True)
    capsys.readouterr()
    vk = str(out / "verification_key.json")
    assert main(["verify", vk, str(out / "public_2.json"), str(out / "proof_2.json")]) == 0
    assert main(["verify", vk, str(out / "public_1.json"), str(out / "proof_2.json")]) == 1


def test_failed_synthesis_is_an_error_and_writes_nothing(tmp_path, capsys, monkeypatch):
    build = circuits.build

    def broken(name, log_size, opts=None, seed=1, limbs=False):
        if seed == 3:
            raise ValueError("injected failure")
        return build(name, log_size, opts=opts, seed=seed, limbs=limbs)

    monkeypatch.setattr(circuits, "build", broken)
    js = tmp_path / "run.json"
    rc = main(["bench", "--backend", "cpu", "--log-size", str(LOG), "--circuits", "5", "--pipeline",
               "--synthesis-pool", "thread", "--pipeline-workers", "2", "--json", str(js)])
    assert rc == 2
    assert "synthesis of circuit 2 (seed 3) failed: ValueError: injected failure" in capsys.readouterr().err
    assert not js.exists()
    assert not [t for t in threading.enumerate() if t.name.startswith("cuzk-pipe")]


@pytest.mark.parametrize("argv, msg", [
    (["--pipeline", "--pipeline-depth", "0"], "--pipeline-depth must be >= 1"),
    (["--pipeline", "--pipeline-workers", "0"], "--pipeline-workers must be >= 1"),
    (["--compare"], "--compare needs --pipeline"),
    (["--pipeline-depth", "3"], "--pipeline-depth needs --pipeline"),
    (["--pipeline-depth", "0"], "--pipeline-depth needs --pipeline"),       # 0 == False: not taken for unset
    (["--pipeline-workers", "0"], "--pipeline-workers needs --pipeline"),
    (["--pipeline", "--pipeline-depth", "-1"], "--pipeline-depth must be >= 1, got -1"),
    (["--pipeline", "--pipeline-workers", "-2"], "--pipeline-workers must be >= 1, got -2"),
    (["--pipeline", "--parallel-synthesis", "2"], "not --parallel-synthesis"),
    (["--synthesis-pool", "process"], "--synthesis-pool needs --parallel-synthesis N"),   # no pool to choose
])
def test_bad_pipeline_args(argv, msg, tmp_path, capsys):
    js = tmp_path / "run.json"
    rc = main(["bench", "--backend", "cpu", "--log-size", str(LOG), "--json", str(js)] + argv)
    out, err = capsys.readouterr()
    assert rc == 2 and msg in err and not js.exists(), (rc, err)
    assert len(err.strip().splitlines()) == 1 and out == "", err


def test_bad_depth_exit_code_in_a_process():
    r = subprocess.run([sys.executable, "-m", "cuzk", "bench", "--backend", "cpu", "--pipeline", "--pipeline-depth",
                        "0"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "--pipeline-depth must be >= 1" in r.stderr and r.stdout == ""


@pytest.mark.gpu
def test_cuda_assign_from_limbs_matches(setup):
    import cupy
    from cuzk.backend.cuda import CudaBackend
    from cuzk.poly import Domain
    opts, r1cs, _ = setup
    be = CudaBackend(opts)
    _, inputs, aux = circuits.build("porep_like", LOG, opts=opts, seed=5)
    d = Domain.for_size(r1cs.qap_rows)
    limbs = ints_to_limbs(fr_array(np.concatenate([inputs, aux])), FR_LIMBS)
    a, b = be.assign(r1cs, inputs, aux, d), be.assign(r1cs, inputs, aux, d, z_limbs=limbs)
    assert bool(cupy.array_equal(a.abc_dev, b.abc_dev)) and bool(cupy.array_equal(a.z_dev, b.z_dev))
    with pytest.raises(ValueError, match="z_limbs has shape"):
        be.assign(r1cs, inputs, aux, d, z_limbs=limbs[1:])


@pytest.mark.gpu
@pytest.mark.parametrize("pool,circuit,opt", [("thread", "porep_like", ""), ("process", "porep_like", ""),
                                              ("process", "porep_partition", "+B2")])
def test_cuda_pipeline_verifies_with_gpu_clock(pool, circuit, opt, tmp_path, capsys):
    js = tmp_path / "run.json"
    rc = main(["bench", "--backend", "cuda", "--log-size", "12", "--circuits", "5", "--pipeline", "--compare",
               "--pipeline-workers", "2", "--synthesis-pool", pool, "--circuit", circuit, "--json", str(js)]
              + (["--opt", opt] if opt else []))
    assert rc == 0
    rep = json.loads(js.read_text())
    p = rep["pipeline"]
    assert rep["verified"] is True and p["pool"] == pool
    _check_times(p, pipelined=True)
    _check_times(p["sequential"], pipelined=False)
    for s in (p, p["sequential"]):
        assert 0 < s["gpu_busy_s"] < s["wall_s"] and s["gpu_idle_s"] == pytest.approx(s["wall_s"] - s["gpu_busy_s"])
        for c in s["per_circuit"]:
            assert c["device_spans"][0]["phase"] == "synthesis" and c["device_start_s"] < c["device_stop_s"]


def test_sigterm_stops_a_pipeline_cleanly(tmp_path):
    """`cuzk bench --pipeline` killed by SIGTERM mid-run exits 143 through its cleanup: no JSON written, none of
    its /dev/shm blocks left (the CPU backend assigns on the host, so today it hands none over), no worker
    process left behind."""
    import os
    import signal
    from shm_record import Blocks
    js, blocks = tmp_path / "run.json", Blocks(tmp_path / "shm-blocks")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(Path(__file__).parent),
                                                        os.environ.get("PYTHONPATH", "")])}
    p = subprocess.Popen([sys.executable, "-c", "import shm_record; shm_record.cli()", str(blocks.path),  # as -m cuzk
                          "bench", "--backend", "cpu", "--log-size", str(LOG), "--circuits", "1000", "--pipeline",
                          "--json", str(js)],
                         cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for line in p.stderr:                              # the run starts after this line
            if line.startswith("pipeline:"):
                break
        workers = pool_started(p, int(line.split()[1]))   # "pipeline: N worker(s) ..."
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 128 + signal.SIGTERM, err
    assert not js.exists() and not blocks.left()
    assert workers                                          # the process pool was running

    def alive(pid):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"     # a zombie is gone but unreaped
    deadline = time.time() + 10                             # the resource tracker exits when its pipe closes
    while any(alive(x) for x in workers) and time.time() < deadline:
        time.sleep(0.1)
    assert not [x for x in workers if alive(x)]


def test_shared_memory_handoff_roundtrip():
    from cuzk.pipeline import Shared, _shared, _unshare
    rng = np.random.default_rng(5)
    a = rng.integers(0, 2**32, size=(1 << 16, 8), dtype=np.uint64).astype(np.uint32)   # 2 MiB: shared
    small = np.arange(4, dtype=np.uint32)
    obj = np.array([1, 2, 3], dtype=object)
    payload = (obj, _shared(a, True), _shared(small, True))
    assert isinstance(payload[1], Shared) and payload[2] is small and payload[0] is obj
    (x, y, z), blocks = _unshare(payload)
    assert len(blocks) == 1 and np.array_equal(y, a) and z is small
    import os
    assert not os.path.exists(f"/dev/shm/{payload[1].name}")     # the name is gone once mapped
    del y
    blocks[0].close()
    assert _shared(a, False) is a


# --- witness-only workers (porep_partition) and the memory-bounded default worker count ---

class LimbAuxBackend(CpuBackend):
    """The CPU backend assigning on the prover thread from limb witnesses, as the cuda backend does."""
    name = "limbaux"
    witness_limbs = True

    def assign(self, r1cs, inputs, aux, domain, z_limbs=None):
        assert z_limbs is None and aux.dtype == np.uint32       # the worker's limbs, as written
        self.seen = getattr(self, "seen", []) + [aux.copy()]
        return super().assign(r1cs, inputs, aux, domain)

    def phase_impl(self, phase):
        return {"synthesis": "mixed", "proof_assembly": "cpu"}.get(phase, "fake")


@pytest.mark.parametrize("pool", ["thread", "process"])
def test_porep_partition_pipeline_from_witness_only_workers(pool, monkeypatch, shm_blocks):
    from cuzk.circuits import porep_partition as pp
    opts = resolve("none")
    r1cs, _, _ = circuits.build("porep_partition", LOG, opts=opts, seed=1)
    pk, _, _ = cached_setup(r1cs, progress=False, backend="cpu")
    if pool == "thread":      # the workers never build the circuit (processes: checked by the shm path)
        monkeypatch.setattr(circuits, "build", lambda *a, **k: (_ for _ in ()).throw(AssertionError("built")))
    prover = Prover(LimbAuxBackend(opts), pk)
    job = Job("porep_partition", LOG, opts, (1, 2, 3, 4), False, witness_limbs=True)
    res = run_pipelined(prover, r1cs, job, 2, 1, pool)
    vk = pk.verifying_key()
    assert all(verify(vk, pub, pf) for pub, pf in zip(res.publics, res.proofs))
    assert len(prover.backend.seen) == 4
    import hashlib
    digest = lambda a: hashlib.sha256(a.tobytes()).hexdigest()      # noqa: E731
    assert {digest(a) for a in prover.backend.seen} == {digest(pp.build(LOG, seed=s)[2]) for s in job.seeds}
    assert [list(map(int, p)) for p in res.publics] == [list(circuits.witness("porep_partition", LOG, seed=s,
                                                                              opts=opts)[0][1:]) for s in job.seeds]
    assert bool(shm_blocks.made()) == (pool == "process"), "process workers hand witnesses over in /dev/shm"
    assert not shm_blocks.left(), "every shared block was unlinked"


class PackedAuxBackend(CpuBackend):
    """Assigns from the packed witness B2 hands over (expanded on the host here, on the GPU in cuda)."""
    name = "packedaux"
    witness_limbs = True

    def assign(self, r1cs, inputs, aux, domain, z_limbs=None, z_packed=None):
        from cuzk.witness_pack import unpack_host
        assert aux is None and z_limbs is None and z_packed is not None
        self.seen = getattr(self, "seen", 0) + 1
        return super().assign(r1cs, inputs, unpack_host(z_packed), domain)

    def phase_impl(self, phase):
        return {"synthesis": "mixed", "proof_assembly": "cpu"}.get(phase, "fake")


@pytest.mark.parametrize("pool", ["thread", "process"])
def test_pipeline_hands_the_witness_over_packed_with_b2(pool, shm_blocks):
    """B2: proofs from packed witnesses verify, pipelined and sequential; process workers write the witness
    into a block, pack it and remove that block themselves."""
    opts = resolve("none,+B2")
    r1cs, _, _ = circuits.build("porep_partition", LOG, opts=opts, seed=1)
    pk, _, _ = cached_setup(r1cs, progress=False, backend="cpu")
    prover = Prover(PackedAuxBackend(opts), pk)
    job = Job("porep_partition", LOG, opts, (1, 2, 3), False, witness_limbs=True)
    res = run_pipelined(prover, r1cs, job, 2, 1, pool)
    vk = pk.verifying_key()
    assert all(verify(vk, pub, pf) for pub, pf in zip(res.publics, res.proofs)) and prover.backend.seen == 3
    seq = run_sequential(prover, r1cs, job)
    assert all(verify(vk, pub, pf) for pub, pf in zip(seq.publics, seq.proofs)) and prover.backend.seen == 6
    assert bool(shm_blocks.made()) == (pool == "process") and not shm_blocks.left()


def test_a_run_that_stops_early_leaves_no_shared_block(monkeypatch, shm_blocks):
    """Process workers hand 2^16 witnesses over in /dev/shm. The prover fails on the first one before mapping
    it; that witness's block, those queued and those of witnesses still being made are all removed, and the
    error is the prover's."""
    import types
    import cuzk.pipeline as pl
    opts = resolve("none")
    taken = []

    def failing(payload):
        taken.append(payload)
        raise RuntimeError("injected: the device is gone")
    monkeypatch.setattr(pl, "_unshare", failing)
    prover = types.SimpleNamespace(backend=LimbAuxBackend(opts))
    job = Job("porep_partition", 16, opts, (1, 2, 3, 4, 5), False, witness_limbs=True)
    with pytest.raises(RuntimeError, match="injected"):
        run_pipelined(prover, types.SimpleNamespace(qap_rows=1 << 16), job, 2, 2, "process")
    assert len(taken) == 1 and isinstance(taken[0][1], pl.Shared)
    assert taken[0][1].name in shm_blocks.made() and not shm_blocks.left()


def test_discard_removes_a_packed_witness_blocks(monkeypatch, shm_blocks):
    """B3's packed arrays in /dev/shm are removed when their item is dropped, and a block already taken is
    skipped."""
    import cuzk.pipeline as pl
    monkeypatch.setattr(pl, "SHARE_MIN_BYTES", 1)
    payload, t0, t1 = pl.synth_one("porep_partition", 12, resolve("none,+B2,+B3"), 5, False, True,
                                   share=True)
    assert shm_blocks.left() == {getattr(payload[1], k).name for k in ("bits", "idx", "vals")}
    payload[1].bits.take()[1].close()                       # one taken (mapped and unlinked) already
    pl._discard((0, 0, (payload, t0, t1), 0.0, None))
    assert not shm_blocks.left()


def test_synth_one_writes_the_witness_into_shared_memory(shm_blocks):
    from cuzk.circuits import porep_partition as pp
    from cuzk.pipeline import Shared, _unshare, synth_one
    payload, t0, t1 = synth_one("porep_partition", 12, None, 5, False, True, share=True)
    assert t0 <= t1 and isinstance(payload[1], Shared) and payload[2] is None
    (inputs, aux, _), blocks = _unshare(payload)
    _, ri, ra = pp.build(12, seed=5)
    assert list(inputs) == list(ri) and np.array_equal(aux, ra)
    assert shm_blocks.made() == {payload[1].name} and not shm_blocks.left()
    del aux
    blocks[0].close()
    p2, _, _ = synth_one("porep_like", LOG, None, 5, False, True, share=True)     # fallback: build, limbs made
    assert p2[2] is not None


def test_synth_one_hands_a_packed_witness_over_in_shared_memory_with_b3(monkeypatch, shm_blocks):
    """B3: the packed witness's arrays come back as Shared blocks (every array, with the size floor at 1
    byte) and map back to the packed witness of the circuit's own witness; without B3 they are pickled."""
    import cuzk.pipeline as pl
    from cuzk.circuits import porep_partition as pp
    from cuzk.witness_pack import pack
    monkeypatch.setattr(pl, "SHARE_MIN_BYTES", 1)
    _, _, ra = pp.build(12, seed=5)
    want = pack(ra)
    for spec, shared in (("none,+B2", False), ("none,+B2,+B3", True)):
        payload, _, _ = pl.synth_one("porep_partition", 12, resolve(spec), 5, False, True, share=True)
        pw = payload[1]
        assert isinstance(pw, pl.PackedWitness) and payload[2] is None
        assert all(isinstance(getattr(pw, k), pl.Shared) == shared for k in ("bits", "idx", "vals"))
        (_, got, _), blocks = pl._unshare(payload)
        assert len(blocks) == (3 if shared else 0) and got.n == want.n
        assert all(np.array_equal(getattr(got, k), getattr(want, k)) for k in ("bits", "idx", "vals"))
        assert not shm_blocks.left()                    # mapped blocks are unlinked at once
        del got, pw, payload
        for b in blocks:
            b.close()


@pytest.mark.parametrize("spec, shared", [("none,+B2,+B4", False), ("none,+B2,+B3,+B4", True)])
def test_synth_one_with_b4_makes_no_limbs_and_hands_over_the_same_packed_witness(monkeypatch, spec, shared,
                                                                                 shm_blocks):
    """B4: the packed witness comes from the circuit's packed generator (the limbs generator is never called)
    and equals pack() of the circuit's own witness, pickled or in shared memory as B3 says."""
    import cuzk.pipeline as pl
    from cuzk import circuits
    from cuzk.circuits import porep_partition as pp
    from cuzk.witness_pack import pack
    monkeypatch.setattr(pl, "SHARE_MIN_BYTES", 1)
    want = pack(pp.build(12, seed=5)[2])

    def no_limbs(*a, **k):
        raise AssertionError("B4 made the limbs")
    monkeypatch.setitem(circuits.WITNESSES, "porep_partition", no_limbs)
    payload, t0, t1 = pl.synth_one("porep_partition", 12, resolve(spec), 5, False, True, share=True)
    pw = payload[1]
    assert t0 <= t1 and isinstance(pw, pl.PackedWitness) and payload[2] is None
    assert all(isinstance(getattr(pw, k), pl.Shared) == shared for k in ("bits", "idx", "vals"))
    (_, got, _), blocks = pl._unshare(payload)
    assert all(np.array_equal(getattr(got, k), getattr(want, k)) for k in ("bits", "idx", "vals"))
    assert bool(shm_blocks.made()) == shared and not shm_blocks.left()
    for b in blocks:
        b.close()


def test_synth_one_with_b4_falls_back_to_limbs_where_the_packed_generator_declines(monkeypatch):
    import cuzk.pipeline as pl
    from cuzk import circuits
    from cuzk.circuits import porep_partition as pp
    from cuzk.witness_pack import pack
    monkeypatch.setitem(circuits.PACKED, "porep_partition", lambda log_size, opts=None, seed=1: (None, None))
    payload, _, _ = pl.synth_one("porep_partition", 12, resolve("none,+B2,+B4"), 5, False, True)
    want = pack(pp.build(12, seed=5)[2])
    assert all(np.array_equal(getattr(payload[1], k), getattr(want, k)) for k in ("bits", "idx", "vals"))


def test_b3_failure_leaves_no_shared_block(monkeypatch, shm_blocks):
    import cuzk.pipeline as pl
    monkeypatch.setattr(pl, "SHARE_MIN_BYTES", 1)
    put, calls = pl.Shared.put.__func__, []

    def failing(cls, a):
        calls.append(1)
        if len(calls) == 3:
            raise OSError("injected: /dev/shm full")
        return put(cls, a)
    monkeypatch.setattr(pl.Shared, "put", classmethod(failing))
    with pytest.raises(OSError, match="injected"):
        pl.synth_one("porep_partition", 12, resolve("none,+B2,+B3"), 5, False, True, share=True)
    assert len(calls) == 3 and shm_blocks.made() and not shm_blocks.left()


def test_synth_one_failure_leaves_no_shared_block(monkeypatch, shm_blocks):
    from cuzk.pipeline import synth_one

    def fails(log_size, opts=None, seed=1, alloc=None):
        alloc((1 << 16, 8), np.uint32)
        raise ValueError("injected")
    monkeypatch.setitem(circuits.WITNESSES, "porep_partition", fails)
    with pytest.raises(ValueError, match="injected"):
        synth_one("porep_partition", 12, None, 5, False, True, share=True)
    assert shm_blocks.made() and not shm_blocks.left()


def test_plan_workers_by_memory(monkeypatch):
    from cuzk import pipeline as pl
    monkeypatch.setattr(pl.os, "cpu_count", lambda: 64)
    G = 2**30
    p = pl.plan_workers(10, "porep_partition", 27, depth=2, available=100 * G)
    held, private = pl.worker_memory("porep_partition", 27)
    assert held == 4 * G and private == pl.WORKER_BASE_BYTES
    assert p["by_cores"] == 10 and p["by_memory"] == int((80 * G - 3 * held) // (held + private)) == 16
    assert p["workers"] == 10
    assert pl.plan_workers(10, "porep_partition", 27, 2, available=40 * G)["workers"] == 4     # (32-12)/4.25
    assert pl.plan_workers(10, "porep_partition", 27, 2, available=8 * G)["workers"] == 1      # never below 1
    assert pl.plan_workers(10, "porep_like", 27, 2, available=100 * G)["workers"] == 1         # builds: ~40 GiB each
    assert pl.plan_workers(10, "porep_like", 20, 2, available=100 * G)["workers"] == 10
    assert pl.plan_workers(3)["workers"] == 3 and pl.default_workers(3) == 3
    monkeypatch.setattr(pl, "available_host_bytes", lambda: None)
    assert pl.plan_workers(10, "porep_partition", 27)["workers"] == 10                         # unknown: cores


def test_available_host_bytes_reads_meminfo():
    from cuzk.pipeline import available_host_bytes
    b = available_host_bytes()
    assert b is None or b > 0


def test_bench_default_workers_are_planned_and_explicit_wins(tmp_path, capsys):
    js = tmp_path / "run.json"
    assert main(["bench", "--backend", "cpu", "--circuit", "porep_partition", "--log-size", str(LOG), "--circuits",
                 "3", "--pipeline", "--synthesis-pool", "thread", "--json", str(js)]) == 0
    err = capsys.readouterr().err
    plan = json.loads(js.read_text())["pipeline"]["worker_plan"]
    assert f"pipeline: {plan['workers']} worker(s)" in err and plan["workers"] >= 1
    assert json.loads(js.read_text())["pipeline"]["workers"] == plan["workers"]
    assert main(["bench", "--backend", "cpu", "--circuit", "porep_partition", "--log-size", str(LOG), "--circuits",
                 "3", "--pipeline", "--pipeline-workers", "2", "--synthesis-pool", "thread", "--json", str(js)]) == 0
    p = json.loads(js.read_text())["pipeline"]
    assert p["workers"] == 2 and p["worker_plan"] is None and "pipeline: " not in capsys.readouterr().err


def test_no_room_in_dev_shm_falls_back_to_pickling(monkeypatch):
    """Without room in /dev/shm (a small Docker default) nothing is written there: a full tmpfs would
    kill the writing worker with SIGBUS. The witness then travels as an ordinary array."""
    from cuzk import pipeline as pl
    monkeypatch.setattr(pl, "shm_free_bytes", lambda: 1 << 20)
    a = np.ones((1 << 16, 8), dtype=np.uint32)                     # 2 MiB > the 1 MiB free
    assert pl._shared(a, True) is a
    alloc = pl._ShmAlloc()
    z = alloc((1 << 16, 8), np.uint32)
    assert not alloc.blocks and z.shape == (1 << 16, 8) and not z.any()
    plain = resolve("-B2")
    payload, _, _ = pl.synth_one("porep_partition", 16, plain, 2, host_assign=False, witness_limbs=True,
                                 share=True)                   # 2^16 aux limbs: ~2 MiB, no room
    assert not any(isinstance(x, pl.Shared) for x in payload)
    inputs, aux = circuits.witness("porep_partition", 16, seed=2, opts=plain, limbs=True)
    assert np.array_equal(payload[1], aux)
    monkeypatch.setattr(pl, "SHARE_MIN_BYTES", 1)                  # B3: the packed arrays stay pickled too
    monkeypatch.setattr(pl, "shm_free_bytes", lambda: 0)
    payload, _, _ = pl.synth_one("porep_partition", 16, resolve("+B2,+B3"), 2, host_assign=False,
                                 witness_limbs=True, share=True)
    pw = payload[1]
    assert isinstance(pw, pl.PackedWitness) and not any(isinstance(getattr(pw, k), pl.Shared)
                                                        for k in ("bits", "idx", "vals"))


def test_a_block_dev_shm_cannot_reserve_falls_back_and_leaves_nothing(monkeypatch, shm_blocks):
    """posix_fallocate's ENOSPC (another worker took the room after the check): the array is an ordinary one,
    pickled back, and the block made for it is gone."""
    import errno
    from cuzk import pipeline as pl

    def full(fd, offset, size):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(pl.os, "posix_fallocate", full)
    monkeypatch.setattr(pl, "shm_free_bytes", lambda: 1 << 40)    # the check saw room
    a = np.ones((1 << 16, 8), dtype=np.uint32)
    assert pl._shared(a, True) is a
    alloc = pl._ShmAlloc()
    z = alloc((1 << 16, 8), np.uint32)
    assert not alloc.blocks and z.shape == (1 << 16, 8) and not z.any()
    payload, _, _ = pl.synth_one("porep_partition", 16, resolve("-B2"), 2, host_assign=False, witness_limbs=True,
                                 share=True)
    assert not any(isinstance(x, pl.Shared) for x in payload)
    inputs, aux = circuits.witness("porep_partition", 16, seed=2, opts=resolve("-B2"), limbs=True)
    assert np.array_equal(payload[1], aux) and shm_blocks.made() and not shm_blocks.left()


_TWO_WORKERS = """
import numpy as np
from cuzk import pipeline as pl
n = (40 << 20) // 8                          # two 40 MiB witnesses in a 64 MiB /dev/shm: both see room
a1, a2 = pl._ShmAlloc(), pl._ShmAlloc()
x, y = a1((n,), np.uint64), a2((n,), np.uint64)
x[...] = 1
y[...] = 2                                   # the second one's pages: SIGBUS where they were not reserved
assert int(x[-1]) == 1 and int(y[-1]) == 2
print("blocks", len(a1.blocks) + len(a2.blocks))
a1.close(unlink=True)
a2.close(unlink=True)
s = pl._shared(np.ones(n, np.uint64), True)  # room enough, then filled by another before the copy
hog = pl._ShmAlloc()
h = hog(((60 << 20) // 8,), np.uint64)
h[...] = 3
t = pl._shared(np.ones(n, np.uint64), True)
print("shared", isinstance(s, pl.Shared), isinstance(t, pl.Shared))
"""


def test_two_workers_that_both_saw_room_in_a_small_dev_shm_are_not_killed(tmp_path):
    """A real 64 MiB tmpfs on /dev/shm (a user and mount namespace of its own): two workers' 40 MiB witnesses both
    pass the room check; the second one's block cannot be reserved, so it goes pickled instead of dying with
    SIGBUS mid-write."""
    import shutil
    unshare = shutil.which("unshare")
    if unshare is None or subprocess.run([unshare, "--user", "--map-root-user", "--mount", "true"],
                                         capture_output=True).returncode != 0:
        pytest.skip("no unprivileged user and mount namespaces here (unshare) to make a small /dev/shm")
    script = tmp_path / "two.py"
    script.write_text(_TWO_WORKERS)
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": f"{root}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    r = subprocess.run([unshare, "--user", "--map-root-user", "--mount", "sh", "-c",
                        f'mount -t tmpfs -o size=64m tmpfs /dev/shm && exec "{sys.executable}" -W ignore "{script}"'],
                       capture_output=True, text=True, env=env, timeout=120)
    if r.returncode != 0 and "mount" in r.stderr and "blocks" not in r.stdout:
        pytest.skip(f"a tmpfs cannot be mounted here: {r.stderr.strip()[:200]}")
    assert r.returncode == 0, (r.returncode, r.stderr[-2000:])
    assert r.stdout.split() == ["blocks", "1", "shared", "True", "False"], r.stdout


def test_plan_workers_fits_dev_shm():
    from cuzk.pipeline import SHM_MARGIN, plan_workers
    held = 32 << 20                                              # 2^20 limbs
    roomy = plan_workers(8, "porep_partition", 20, depth=2, available=1 << 40, shm_free=1 << 40)
    assert roomy["workers"] == roomy["by_cores"]
    tight = plan_workers(8, "porep_partition", 20, depth=2, available=1 << 40, shm_free=int(5.5 * held * SHM_MARGIN))
    assert tight["by_shm"] == 2 and tight["workers"] == min(2, tight["by_cores"])
    none = plan_workers(8, "porep_partition", 20, depth=2, available=1 << 40, shm_free=held)
    assert none["by_shm"] < 1 and none["workers"] == none["by_cores"]      # pickled: no cap from /dev/shm
