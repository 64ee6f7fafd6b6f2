"""Several provers in one pipeline (`cuzk bench --pipeline --devices`), scheduled against fake devices on the
CPU: which circuit goes to which lane, the lane's device current in its thread, one device's failure (its
circuit proved again on another, and the run says so), and the per-device report and timeline."""
from __future__ import annotations

import contextlib
import threading
import time

import numpy as np
import pytest

from cuzk import circuits
from cuzk.cli import main
from cuzk.cli.bench_pipeline import device_table
from cuzk.groth16 import verify
from cuzk.keygen import cached_setup
from cuzk.opts import resolve
from cuzk.perf.pipeline_plot import pipeline_lanes
from cuzk.pipeline import Lane, PipelineError, run_pipelined, summary
from cuzk.pipelined_run import resolve_devices
from cuzk.prover import Prover
from cuzk.run import RunError
from cuzk.timing import merge_phases

from pipeline_fakes import LOG, FakeGpuBackend, make_job

_current = threading.local()         # the fake "current device" of a thread


def _use(dev: int):
    @contextlib.contextmanager
    def use():
        before = getattr(_current, "dev", None)
        _current.dev = dev
        try:
            yield
        finally:
            _current.dev = before
    return use


class FakeDeviceBackend(FakeGpuBackend):
    """FakeGpuBackend that checks it proves with its own device current, slowed a little per proof so
    that every lane gets circuits, and that fails on its `fail_at`-th proof (a device error)."""

    def __init__(self, opts, dev: int, fail_at: int | None = None, delay_s: float = 0.02):
        super().__init__(opts)
        self.dev, self.fail_at, self.delay_s, self.proofs = dev, fail_at, delay_s, 0
        self.wrong_device = []

    def assign(self, r1cs, inputs, aux, domain, z_limbs=None):
        if getattr(_current, "dev", None) != self.dev:
            self.wrong_device.append(getattr(_current, "dev", None))
        self.proofs += 1
        if self.fail_at is not None and self.proofs >= self.fail_at:
            raise RuntimeError(f"fake device {self.dev} lost")
        time.sleep(self.delay_s)
        return super().assign(r1cs, inputs, aux, domain, z_limbs=z_limbs)


def _lanes(opts, pk, fail=None, devices=(0, 1)):
    fail = fail or {}
    return [Lane(Prover(FakeDeviceBackend(opts, d, fail.get(d)), pk), d, _use(d)) for d in devices]


def _no_threads_left():
    return not [t for t in threading.enumerate() if t.name.startswith(("cuzk-pipe", "cuzk-lane"))]


def test_two_devices_share_the_circuits(setup):
    opts, r1cs, pk = setup
    lanes = _lanes(opts, pk)
    res = run_pipelined(lanes, r1cs, make_job(opts, 8, host_assign=False), 2, 2, "thread")
    assert _no_threads_left()
    vk = pk.verifying_key()
    assert all(verify(vk, pub, pf) for pub, pf in zip(res.publics, res.proofs))
    for ln in lanes:
        assert ln.prover.backend.wrong_device == [], "a lane proved without its device current"
    s = summary(res)
    assert s["lanes"] == 2 and s["device_failures"] == []
    by = {d["device"]: d for d in s["devices"]}
    assert sorted(by[0]["circuits"] + by[1]["circuits"]) == list(range(8)), "each circuit proved exactly once"
    assert by[0]["circuits"] and by[1]["circuits"], "the free lane takes the next circuit"
    for c in s["per_circuit"]:
        assert c["circuit"] in by[c["device"]]["circuits"] and c["lane"] == c["device"]
    for d in s["devices"]:            # within one lane, proofs never overlap; its GPU busy inside them
        mine = sorted((c["prove_start_s"], c["prove_stop_s"]) for c in s["per_circuit"] if c["device"] == d["device"])
        assert all(a[1] <= b[0] for a, b in zip(mine, mine[1:]))
        assert 0 < d["gpu_busy_s"] <= d["prover_busy_s"] and d["gpu_busy_fraction"] == pytest.approx(
            d["gpu_busy_s"] / s["wall_s"])
        assert d["failed"] is None
    assert s["gpu_busy_s"] == pytest.approx(sum(d["gpu_busy_s"] for d in s["devices"]))
    assert s["gpu_idle_s"] == pytest.approx(2 * s["wall_s"] - s["gpu_busy_s"])
    # the merged phases: every circuit's tail MSM, from both lanes
    assert sorted(c["circuit"] for c in res.phases["tail_msm"]["circuits"]) == list(range(8))
    assert res.phases["tail_msm"]["calls"] == 8
    assert [x["device"] for x in res.lanes] == [0, 1] and all(x["phases"] for x in res.lanes)
    tl = pipeline_lanes(s)
    assert tl["lanes"] == ["worker 0 (host)", "worker 1 (host)", "waiting for prover",
                           "prover device 0 (host)", "GPU device 0 (CUDA events)",
                           "prover device 1 (host)", "GPU device 1 (CUDA events)"]
    prove_lane = {b["circuit"]: b["lane"] for b in tl["bars"] if b["kind"] == "prove"}
    assert {prove_lane[i] for i in by[1]["circuits"]} == {5}
    assert "device" in device_table(s).splitlines()[0]


def test_one_device_failing_hands_its_circuit_to_another(setup, capsys):
    opts, r1cs, pk = setup
    lanes = _lanes(opts, pk, fail={1: 2})          # device 1's second proof fails
    res = run_pipelined(lanes, r1cs, make_job(opts, 7, host_assign=False), 2, 2, "thread")
    assert _no_threads_left()
    vk = pk.verifying_key()
    assert len(res.proofs) == 7 and all(verify(vk, pub, pf) for pub, pf in zip(res.publics, res.proofs))
    assert len(res.failures) == 1
    f = res.failures[0]
    assert f["device"] == 1 and "fake device 1 lost" in f["error"]
    s = summary(res)
    by = {d["device"]: d for d in s["devices"]}
    assert f["circuit"] in by[0]["circuits"] and f["circuit"] not in by[1]["circuits"]
    assert len(by[1]["circuits"]) == 1 and "fake device 1 lost" in by[1]["failed"] and by[0]["failed"] is None
    assert sorted(by[0]["circuits"] + by[1]["circuits"]) == list(range(7))
    assert s["device_failures"] == res.failures
    err = capsys.readouterr().err
    assert f"device 1 failed proving circuit {f['circuit']}" in err and "proved again on another" in err
    assert "fake device 1 lost" in device_table(s)


def test_the_wall_ends_with_the_last_proof(setup):
    """Several lanes: the run ends when its last proof does, not when the idle lanes next poll the queue."""
    from cuzk.pipeline import QUEUE_POLL_S
    opts, r1cs, pk = setup
    res = run_pipelined(_lanes(opts, pk), r1cs, make_job(opts, 4, host_assign=False), 2, 2, "thread")
    last = max(r.prove_stop_s for r in res.runs)
    assert last <= res.wall_s < last + QUEUE_POLL_S / 2


def test_a_circuits_own_error_is_not_retried(setup):
    """An error the lane does not call the device's (a bad witness, a bug) ends the run as with one lane."""
    opts, r1cs, pk = setup
    lanes = _lanes(opts, pk, fail={1: 1})
    for ln in lanes:
        ln.device_error = lambda e: False
    with pytest.raises(RuntimeError, match="fake device 1 lost"):
        run_pipelined(lanes, r1cs, make_job(opts, 6, host_assign=False), 2, 2, "thread")
    assert _no_threads_left()


class PoisonBackend(FakeDeviceBackend):
    """Fails on one circuit's witness whichever device proves it (the circuit's fault, not a device's)."""
    poison = None

    def assign(self, r1cs, inputs, aux, domain, z_limbs=None):
        if np.array_equal(np.asarray(aux, dtype=object), self.poison):
            self.proofs += 1
            raise RuntimeError("this circuit always fails")
        return super().assign(r1cs, inputs, aux, domain, z_limbs=z_limbs)


def test_a_circuit_failing_on_two_devices_ends_the_run(setup):
    opts, r1cs, pk = setup
    PoisonBackend.poison = np.asarray(circuits.witness("porep_like", LOG, seed=3, opts=opts)[1], dtype=object)
    lanes = [Lane(Prover(PoisonBackend(opts, d), pk), d, _use(d)) for d in (0, 1, 2)]
    with pytest.raises(PipelineError, match=r"circuit 2 failed on two devices .*not retried again"):
        run_pipelined(lanes, r1cs, make_job(opts, 6, host_assign=False), 2, 2, "thread")
    assert sum(ln.prover.backend.proofs for ln in lanes) >= 2
    assert _no_threads_left()


def test_every_device_failing_is_an_error(setup):
    opts, r1cs, pk = setup
    lanes = _lanes(opts, pk, fail={0: 1, 1: 1})
    with pytest.raises(PipelineError, match="every device failed"):
        run_pipelined(lanes, r1cs, make_job(opts, 5, host_assign=False), 2, 2, "thread")
    assert _no_threads_left()


def test_one_lane_failing_raises_as_before(setup):
    """One prover: its error ends the run as it is, not retried (there is nowhere to retry)."""
    opts, r1cs, pk = setup
    lanes = _lanes(opts, pk, fail={0: 2}, devices=(0,))
    with pytest.raises(RuntimeError, match="fake device 0 lost"):
        run_pipelined(lanes, r1cs, make_job(opts, 4, host_assign=False), 1, 2, "thread")
    assert _no_threads_left()


def test_one_lane_runs_on_the_callers_thread(setup):
    opts, r1cs, pk = setup
    seen = []
    prover = Prover(FakeGpuBackend(opts), pk)
    prove = prover.prove
    prover.prove = lambda *a, **kw: (seen.append(threading.current_thread()), prove(*a, **kw))[1]
    res = run_pipelined(prover, r1cs, make_job(opts, 3, host_assign=False), 1, 2, "thread")
    assert set(seen) == {threading.current_thread()}
    s = summary(res)
    assert s["lanes"] == 1 and [d["circuits"] for d in s["devices"]] == [[0, 1, 2]]
    assert pipeline_lanes(s)["lanes"][-2:] == ["prover (host)", "GPU (CUDA events)"]


def test_a_failed_synthesis_stops_every_lane(setup, monkeypatch):
    opts, r1cs, pk = setup
    witness = circuits.witness

    def broken(name, log_size, seed=1, **kw):
        if seed == 4:
            raise ValueError("injected failure")
        return witness(name, log_size, seed=seed, **kw)
    monkeypatch.setattr(circuits, "witness", broken)
    with pytest.raises(PipelineError, match=r"circuit 3 \(seed 4\) failed: ValueError: injected failure"):
        run_pipelined(_lanes(opts, pk), r1cs, make_job(opts, 6, host_assign=False), 2, 2, "thread")
    assert _no_threads_left()


@pytest.mark.parametrize("spec, count, want", [
    (None, 4, None), ("all", 3, [0, 1, 2]), ("2", 4, [0, 1]), ("1", 1, [0]), ("0,2", 4, [0, 2]),
    ("3,", 4, [3]), (" 1, 0 ", 2, [1, 0]),
])
def test_resolve_devices(spec, count, want):
    assert resolve_devices(spec, count) == want


@pytest.mark.parametrize("spec, count, msg", [
    ("all", 0, "CUDA sees no GPU"), ("0", 2, "count N >= 1"), ("3", 2, "3 GPUs asked, CUDA sees 2"),
    ("0,0", 2, "device 0 given twice"), ("0,5", 2, "no device 5"), ("a,b", 2, "must be integers"),
    ("x", 2, "give all"),
])
def test_resolve_devices_refuses(spec, count, msg):
    with pytest.raises(RunError, match=msg):
        resolve_devices(spec, count)


def test_devices_on_the_cpu_backend_is_one_line(tmp_path, capsys):
    js = tmp_path / "run.json"
    rc = main(["bench", "--backend", "cpu", "--log-size", str(LOG), "--pipeline", "--devices", "2", "--json", str(js)])
    err = capsys.readouterr().err
    assert rc == 2 and "--devices needs the cuda backend" in err and not js.exists()
    assert main(["bench", "--backend", "cpu", "--log-size", str(LOG), "--devices", "2"]) == 2
    assert "--devices needs --pipeline" in capsys.readouterr().err


def test_merge_phases_sums_and_orders():
    a = {"tail_msm": {"host_s": 1.0, "device_s": 0.5, "peak_device_bytes": 10, "peak_host_bytes": 5,
                      "peak_host_scope": "phase", "impl": "cuda", "calls": 1, "start_s": 0.0, "stop_s": 1.0,
                      "device_start_s": 0.1, "device_stop_s": 0.6,
                      "spans": [{"start_s": 0.0, "stop_s": 1.0, "device_start_s": 0.1, "device_stop_s": 0.6}],
                      "circuits": [{"start_s": 0.0, "stop_s": 1.0, "circuit": 0}]}}
    b = {"tail_msm": {**a["tail_msm"], "host_s": 2.0, "device_s": None, "peak_device_bytes": 30, "calls": 2,
                      "spans": [{"start_s": -1.0, "stop_s": 3.0, "device_start_s": None, "device_stop_s": None}],
                      "circuits": [{"start_s": -1.0, "stop_s": 3.0, "circuit": 1}]},
         "b_g2": a["tail_msm"]}
    m = merge_phases([a, b])
    t = m["tail_msm"]
    assert (t["host_s"], t["device_s"], t["peak_device_bytes"], t["calls"]) == (3.0, 0.5, 30, 3)
    assert (t["start_s"], t["stop_s"], t["device_start_s"], t["device_stop_s"]) == (-1.0, 3.0, 0.1, 0.6)
    assert [c["circuit"] for c in t["circuits"]] == [1, 0]
    assert list(m) == ["tail_msm", "b_g2"]         # in the phases' order


# --- GPU ---

@pytest.mark.gpu
@pytest.mark.parametrize("spec", ["none", "none,+P1"])
def test_cuda_two_provers_side_by_side_verify(setup, spec):
    """Two provers on device 0, each with its own key there, proving side by side in their lanes' threads:
    what one backend keeps (streams, tables, the circuit's matrices) never leaks into the other's proofs.
    On a host with several GPUs, test_cuda_devices_all_verifies puts one on each."""
    import cupy
    from cuzk.backend.cuda import CudaBackend
    from cuzk.gpu.per_device import is_device_error
    opts, r1cs, pk = setup
    be = resolve(spec)              # P1: each proof's jobs on their own threads, the lane's device current
    lanes = [Lane(Prover(CudaBackend(be), pk), 0, lambda: cupy.cuda.Device(0), is_device_error) for _ in range(2)]
    res = run_pipelined(lanes, r1cs, make_job(opts, 8, host_assign=False), 2, 2, "thread")
    vk = pk.verifying_key()
    assert all(verify(vk, pub, pf) for pub, pf in zip(res.publics, res.proofs))
    s = summary(res)
    assert s["device_failures"] == [] and [d["lane"] for d in s["devices"]] == [0, 1]
    assert sorted(c for d in s["devices"] for c in d["circuits"]) == list(range(8))
    assert all(d["gpu_busy_s"] > 0 for d in s["devices"] if d["circuits"])
    assert _no_threads_left()


@pytest.mark.gpu
@pytest.mark.parametrize("spec", ["all", "0,"])
def test_cuda_devices_all_verifies(spec, tmp_path, capsys):
    import json
    import cupy
    count = cupy.cuda.runtime.getDeviceCount()
    js, png = tmp_path / "run.json", tmp_path / "t.png"
    rc = main(["bench", "--backend", "cuda", "--log-size", "12", "--circuits", str(3 * count), "--pipeline",
               "--compare", "--pipeline-workers", "2", "--synthesis-pool", "thread", "--devices", spec,
               "--json", str(js), "--timeline", str(png)])
    out = capsys.readouterr().out
    assert rc == 0, out
    p = json.loads(js.read_text())["pipeline"]
    want = list(range(count)) if spec == "all" else [0]
    assert [d["device"] for d in p["devices"]] == want and p["device_failures"] == []
    assert sorted(c for d in p["devices"] for c in d["circuits"]) == list(range(3 * count))
    for d in p["devices"]:
        assert 0 < d["gpu_busy_fraction"] <= 1 and d["memory"]["key_bytes"] > 0
    assert "verified: True" in out and "gpu busy" in out


@pytest.mark.gpu
def test_cuda_devices_beyond_the_host_is_one_line(tmp_path, capsys):
    import cupy
    count = cupy.cuda.runtime.getDeviceCount()
    rc = main(["bench", "--backend", "cuda", "--log-size", "10", "--pipeline", "--devices", str(count + 1)])
    assert rc == 2 and f"CUDA sees {count}" in capsys.readouterr().err


@pytest.mark.gpu
def test_device_errors_are_told_from_the_circuits():
    import cupy
    from cuzk.gpu.per_device import is_device_error
    from cuzk.r1cs import UnsatisfiedError
    assert is_device_error(cupy.cuda.memory.OutOfMemoryError(1 << 40, 0))
    assert is_device_error(cupy.cuda.runtime.CUDARuntimeError(700))       # an illegal address
    assert not is_device_error(UnsatisfiedError("constraint 3 fails"))
    assert not is_device_error(ValueError("z_limbs has shape (1, 8)"))


def test_process_workers_and_a_failing_device_leave_no_shared_block(setup, shm_blocks):
    """Process workers hand porep_partition witnesses over in /dev/shm; device 1 fails after mapping one. Its
    circuit is made again and proved on device 0, every proof verifies, and no block is left behind."""
    from test_pipeline import LimbAuxBackend
    from cuzk.pipeline import Job
    opts = setup[0]
    r1cs, _, _ = circuits.build("porep_partition", LOG, opts=opts, seed=1)
    pk, _, _ = cached_setup(r1cs, progress=False, backend="cpu")

    class Failing(LimbAuxBackend):
        def __init__(self, opts, fail_at):
            super().__init__(opts)
            self.fail_at, self.calls = fail_at, 0

        def assign(self, r1cs, inputs, aux, domain, z_limbs=None):
            self.calls += 1
            time.sleep(0.02)
            if self.fail_at is not None and self.calls >= self.fail_at:
                raise RuntimeError("fake device 1 lost")
            return super().assign(r1cs, inputs, aux, domain, z_limbs=z_limbs)

    lanes = [Lane(Prover(Failing(opts, f), pk), d, _use(d)) for d, f in ((0, None), (1, 2))]
    job = Job("porep_partition", LOG, opts, (1, 2, 3, 4, 5, 6), False, witness_limbs=True)
    res = run_pipelined(lanes, r1cs, job, 2, 2, "process")
    vk = pk.verifying_key()
    assert len(res.proofs) == 6 and all(verify(vk, pub, pf) for pub, pf in zip(res.publics, res.proofs))
    assert [f["device"] for f in res.failures] == [1]
    assert shm_blocks.made() and not shm_blocks.left(), "every shared block was unlinked"
    assert _no_threads_left()
