"""The NVML layer and the sample guard, against a fake NVML at the module boundary.

A throttled or contended sample must be discarded and taken again; a run that keeps being
rejected must end as untrusted, never as a result.
"""
from __future__ import annotations

import os

import pytest

from cuzk import nvml
from cuzk.perf import sampler, worker
from cuzk.perf.trust import SampleGuard, TrustPolicy, judge, other_processes

from fake_nvml import FakeNvml

HW_THERMAL, SW_POWER_CAP, IDLE, APP_CLOCKS = 0x40, 0x4, 0x1, 0x2


def _dev(fake=None, **state):
    fake = fake or FakeNvml(**state)
    return nvml.Nvml(fake), fake


def test_snapshot_and_info_read_through_the_module():
    dev, fake = _dev(pids=[os.getpid()], violations={0: 5, 1: 7})
    s = dev.snapshot()
    assert s.sm_clock_mhz == 1980 and s.temperature_c == 40 and s.power_w == 120.0
    assert s.throttle_reasons == IDLE and s.energy_mj == 1_000_000
    assert s.violations_ns["power"] == 5 and s.violations_ns["thermal"] == 7
    assert s.processes == (os.getpid(),)
    info = dev.info()
    assert info.name == "Fake H200" and info.driver == "570.1" and info.max_sm_clock_mhz == 1980
    assert info.app_sm_clock_mhz is None          # a getter that raises becomes None, not a crash
    assert info.power_limit_w == 700.0
    dev.close()
    assert fake.shutdowns == 1


def test_device_follows_cuda_visible_devices(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-abc,GPU-def")
    dev, fake = _dev()
    assert fake.handles == [("uuid", "GPU-abc")]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2")
    dev, fake = _dev()
    assert fake.handles == [("index", 2)] and dev.index == 2


def test_no_nvml_means_none():
    class Broken(FakeNvml):
        def nvmlInit(self):
            raise RuntimeError("NVML Shared Library Not Found")
    assert nvml.open_device(Broken()) is None


@pytest.mark.parametrize("bits,trusted", [(IDLE, True), (APP_CLOCKS | IDLE, True), (HW_THERMAL, False),
                                          (SW_POWER_CAP, False), (0x8, False), (0x20, False), (0x80, False)])
def test_throttle_bits(bits, trusted):
    dev, fake = _dev()
    before = dev.snapshot()
    fake.state["throttle"] = bits
    after = dev.snapshot()
    v = judge(before, after)
    assert v.trusted is trusted, v.reasons


def test_policy_can_accept_a_reason_explicitly():
    dev, fake = _dev(throttle=SW_POWER_CAP)
    s = dev.snapshot()
    assert not judge(s, s).trusted
    assert judge(s, s, TrustPolicy(ignore_reasons=("gpu_idle", "sw_power_cap"))).trusted


def test_violation_counter_moving_during_a_sample_rejects_it():
    dev, fake = _dev(violations={1: 100})
    before = dev.snapshot()
    fake.state["violations"] = {1: 100 + 2_000_000}         # 2 ms of thermal violation, bits clear again
    v = judge(before, dev.snapshot())
    assert not v.trusted and "thermal violation" in v.reasons[0]
    before = dev.snapshot()
    fake.state["violations"] = {1: 100 + 2_000_000, 4: 10**9}   # low-utilization time is not throttling
    assert judge(before, dev.snapshot()).trusted


def test_other_processes():
    me = os.getpid()
    assert other_processes([me], frozenset({me})) == []
    assert other_processes([me, 4242], frozenset({me})) == [4242]
    # in a container NVML shows host PIDs: one unknown PID is us, two mean contention
    assert other_processes([777], frozenset({me})) == []
    assert other_processes([777, 888], frozenset({me})) == [777, 888]
    dev, fake = _dev(pids=[me, 4242])
    s = dev.snapshot()
    assert not judge(s, s, own_pids=frozenset({me})).trusted
    assert judge(s, s, TrustPolicy(allow_other_processes=True), frozenset({me})).trusted


class _Failing(FakeNvml):
    """NVML whose reads named in `fail` raise (a driver error, a read the device does not give)."""

    def __init__(self, **state):
        super().__init__(**state)
        self.fail: set = set()

    def nvmlDeviceGetComputeRunningProcesses(self, h):
        if "processes" in self.fail:
            raise RuntimeError("NVML_ERROR_UNKNOWN")
        return super().nvmlDeviceGetComputeRunningProcesses(h)

    def nvmlDeviceGetCurrentClocksEventReasons(self, h):
        if "throttle" in self.fail:
            raise RuntimeError("NVML_ERROR_UNKNOWN")
        return super().nvmlDeviceGetCurrentClocksEventReasons(h)

    def nvmlDeviceGetViolationStatus(self, h, policy):
        if policy in self.fail:
            raise RuntimeError("NVML_ERROR_NOT_SUPPORTED")
        return super().nvmlDeviceGetViolationStatus(h, policy)


def test_a_read_that_fails_is_never_read_as_nothing_to_see():
    """A process list or a clock-event read that fails is never 'no other process', 'no reason': a pass.
    A needed read that the device gave when the guard opened and that fails at either end of a sample rejects it;
    one the device never gives is not judged, and the guard says which (unread); without the process list or the
    clock-event reasons there is no guard."""
    me = os.getpid()
    fake = _Failing(pids=[me, 4242])           # another process is on the GPU: only the process list shows it
    dev = nvml.Nvml(fake)
    guard = SampleGuard(dev, own_pids=frozenset({me}))
    assert guard.unread == frozenset() and guard.blind() == []
    fake.fail = {"processes"}
    before = guard.start()
    assert "processes" in before.failed and before.processes == ()
    fake.fail = set()
    verdict, _ = guard.finish(before)
    assert not verdict.trusted and any("NVML read of processes failed before" in r for r in verdict.reasons)
    fake.state["pids"] = [me]
    before = guard.start()
    fake.fail = {"throttle"}
    verdict, _ = guard.finish(before)
    assert verdict.reasons == ["NVML read of throttle_reasons failed after the sample"]
    fake.fail = set()
    assert guard.finish(guard.start())[0].trusted
    # a violation counter this device never gives: not judged, and said
    fake.fail = {nvml.VIOLATION_POLICIES["reliability"]}
    guard = SampleGuard(dev, own_pids=frozenset({me}))
    assert guard.unread == {"violation:reliability"} and guard.blind() == []
    assert guard.finish(guard.start())[0].trusted
    # a device without a process list: no guard at all
    fake.fail = {"processes"}
    assert SampleGuard(dev).blind() == ["processes"]
    saved = dict(sampler._NVML)
    sampler._NVML["dev"] = dev
    try:
        with pytest.raises(sampler.UntrustedRun, match="cannot read the GPU's processes") as e:
            sampler.nvml_guard("w")
        assert "samples rejected" not in str(e.value)          # no sample was taken: why, not a count
        assert sampler.nvml_guard("w", TrustPolicy(allow_other_processes=True)).unread == frozenset()
    finally:
        sampler._NVML.clear()
        sampler._NVML.update(saved)


def test_clock_event_reasons_by_the_old_name_where_the_driver_lacks_the_new():
    """nvidia-ml-py has the new name even where a driver before R535 has only the old one (the new raises): the
    reasons are read by the old name, the guard opens, and throttling still rejects."""
    class OldDriver(FakeNvml):
        def nvmlDeviceGetCurrentClocksEventReasons(self, h):
            raise RuntimeError("NVML_ERROR_FUNCTION_NOT_FOUND")

        def nvmlDeviceGetCurrentClocksThrottleReasons(self, h):
            return self.state["throttle"]
    fake = OldDriver(pids=[os.getpid()])
    guard = SampleGuard(nvml.Nvml(fake), own_pids=frozenset({os.getpid()}))
    assert guard.blind() == [] and guard.finish(guard.start())[0].trusted
    fake.state["throttle"] = SW_POWER_CAP
    assert not guard.finish(guard.start())[0].trusted


def test_energy_per_sample():
    dev, fake = _dev()
    before = dev.snapshot()
    fake.state["energy_mj"] += 2500
    assert judge(before, dev.snapshot()).energy_j == pytest.approx(2.5)


class Scripted:
    """measure(): call i returns i seconds; throttles the GPU during the calls listed."""

    def __init__(self, fake, throttled_calls, bits=HW_THERMAL):
        self.fake, self.throttled, self.bits, self.calls = fake, set(throttled_calls), bits, 0

    def __call__(self):
        self.calls += 1
        self.fake.state["throttle"] = self.bits if self.calls in self.throttled else IDLE
        self.fake.state["energy_mj"] += 1000
        v = float(self.calls)
        return v


def test_throttled_sample_is_discarded_and_retaken():
    dev, fake = _dev(pids=[os.getpid()])
    guard = SampleGuard(dev, own_pids=frozenset({os.getpid()}))
    m = Scripted(fake, throttled_calls={2})
    discards = []
    s = sampler.collect(m, 4, guard, discards=discards, pause_s=0)
    # call 2 ran throttled; its "after" snapshot flags it, and call 3's "before" still sees the bit
    # set by call 2, so call 3 is rejected too; calls 4.. are clean
    assert m.calls == 6
    assert s.values == [1.0, 4.0, 5.0, 6.0]
    assert 2.0 not in s.values and 3.0 not in s.values
    assert len(discards) == 2 and all("hw_thermal_slowdown" in d for d in discards)
    assert s.energy_j == [1.0] * 4
    assert len(s.states) == 4 and all(st["throttle_reasons"] == IDLE for st in s.states)


def test_persistent_throttling_makes_the_run_untrusted():
    dev, fake = _dev()
    m = Scripted(fake, throttled_calls=range(1, 100), bits=SW_POWER_CAP)
    with pytest.raises(sampler.UntrustedRun) as e:
        sampler.collect(m, 5, SampleGuard(dev), max_discards=3, pause_s=0, what="w")
    assert len(e.value.discards) == 4 and "sw_power_cap" in str(e.value)


class FakeGpuWorkload:
    """Enough of perf.workload.Workload for the sampler and the worker: a 'device' workload."""
    device = True

    def __init__(self, spec, fake):
        self.spec, self.fake, self.peak_device_bytes, self.calls = spec, fake, {}, 0

    def prepare(self):
        return self

    def calibrate(self, area, min_sample_s, min_device_sample_s=0.0):
        self.asked = (min_sample_s, min_device_sample_s)
        return max(1, round(min_device_sample_s / 0.001))

    def measure(self, area, number=1):
        self.calls += 1
        return 0.001


class _Probe:
    """A stand-in device probe: its waits in turn, each call logged into `seen`."""

    def __init__(self, seen=None, waits=(12.5,)):
        self.seen, self.waits, self.n = seen if seen is not None else [], list(waits), 0

    def wait_us(self):
        self.n += 1
        self.seen.append("probe")
        return self.waits[(self.n - 1) % len(self.waits)]

    before_us = wait_us       # the real one's pair of probes: tests/perf/test_device_probe.py


def _serve(monkeypatch, w, fake, areas, n, freeze=False, probe=None, **req_extra):
    """Drive worker.serve as the gate does: set-up, n samples per area, quit."""
    import json
    from cuzk.perf import workload
    monkeypatch.setattr(workload, "Workload", lambda spec, **kw: (setattr(w, "spec", spec), w)[1])
    monkeypatch.setattr(worker.Worker, "make_probe", staticmethod(lambda: probe or _Probe()))
    monkeypatch.setattr(sampler, "_NVML", {"dev": nvml.Nvml(fake)})
    monkeypatch.setattr(nvml, "open_device", lambda *a, **k: nvml.Nvml(fake))
    req = {"protocol": worker.PROTOCOL, "spec": {"backend": "cuda", "log_size": 16}, "areas": areas,
           "max_discards": 4, "pause_s": 0, "sibling_pid": 424242, **req_extra}
    lines = [json.dumps(req)] + [json.dumps({"sample": a}) for _ in range(n) for a in areas] + ['{"quit": true}']
    replies = []
    assert worker.serve(iter(lines), replies.append, freeze=freeze) == 0
    return replies


def test_the_worker_reads_no_nvml_around_its_samples(monkeypatch):
    """A GPU sample's guard is the gate's, read between the requests: the worker (the head's code runs in it) takes
    its samples without NVML, so the round trip the gate times holds the sample alone, and a throttled GPU is the
    gate's to see (tests/perf/test_gate_logic.py)."""
    fake = FakeNvml(throttle=HW_THERMAL)              # throttled the whole time: not the worker's to judge
    reads = []
    for name in ("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetTotalEnergyConsumption",
                 "nvmlDeviceGetComputeRunningProcesses"):
        real = getattr(fake, name)
        setattr(fake, name, lambda h, _real=real, _n=name: reads.append(_n) or _real(h))
    w = FakeGpuWorkload(None, fake)
    replies = _serve(monkeypatch, w, fake, ["tail_msm", "b_g2"], 5)
    assert replies[0]["status"] == "ready" and replies[0]["gpu"]["name"] == "Fake H200"
    assert [r["status"] for r in replies[1:]] == ["ok"] * 10 + ["done"] and w.calls == 10
    assert reads == [] and all("energy_j" not in r and "guard_s" not in r for r in replies[1:11])
    assert replies[-1]["discards"] == []


def test_a_gpu_worker_probes_the_device_before_and_after_each_sample(monkeypatch):
    """Another context's work left on the GPU (a stopped process's kernels run on) slows the next sample unseen by
    its events: each GPU sample is bracketed by a device probe, untimed, and the larger wait is its
    device_wait_us."""
    seen: list = []
    fake = FakeNvml(pids=[os.getpid(), 424242])
    w = FakeGpuWorkload(None, fake)
    w.measure = lambda area, number=1: seen.append("sample") or 0.001
    # set-up's probe is made and not called; then (before, after) per sample: 10 then 40, 300 then 5
    replies = _serve(monkeypatch, w, fake, ["tail_msm"], 2, probe=_Probe(seen, (10.0, 40.0, 300.0, 5.0)))
    assert seen == ["probe", "sample", "probe"] * 2
    assert [r["device_wait_us"] for r in replies[1:3]] == [40.0, 300.0]


def test_worker_sizes_device_samples_as_the_gate_asks(monkeypatch):
    """min_device_sample_s reaches the workload's calibration; calls per sample given by the gate (round 1's,
    shared by both sides) stand over it."""
    fake = FakeNvml(pids=[os.getpid(), 424242])
    w = FakeGpuWorkload(None, fake)
    replies = _serve(monkeypatch, w, fake, ["tail_msm"], 1, min_sample_s=0.002, min_device_sample_s=0.03)
    assert replies[0]["numbers"] == {"tail_msm": 30} and w.asked == (0.002, 0.03)
    w = FakeGpuWorkload(None, fake)
    replies = _serve(monkeypatch, w, fake, ["tail_msm"], 1, min_device_sample_s=0.03, numbers={"tail_msm": 4})
    assert replies[0]["numbers"] == {"tail_msm": 4} and not hasattr(w, "asked")
    assert replies[0]["status"] == "ready" and _serve(monkeypatch, FakeGpuWorkload(None, fake), fake, ["b_g2"], 1)[
        0]["numbers"] == {"b_g2": 1}                                  # not asked: one call a sample


def test_worker_process_freezes_its_set_up_before_the_first_sample(monkeypatch):
    """The worker process (main) moves the set-up's objects out of the collector's reach once ready, after a
    collection, so each sample's full collection walks only the phases' garbage; serve() alone (in a test's
    process) does not."""
    import types
    seen = []
    monkeypatch.setattr(worker, "gc", types.SimpleNamespace(collect=lambda: seen.append("collect"),
                                                           freeze=lambda: seen.append("freeze")))
    fake = FakeNvml(pids=[os.getpid(), 424242])
    w = FakeGpuWorkload(None, fake)
    w.measure = lambda area, number=1: seen.append(f"sample {area}") or 0.001
    _serve(monkeypatch, w, fake, ["tail_msm"], 2, freeze=True, probe=_Probe(seen))
    assert seen == ["collect", "freeze"] + ["probe", "sample tail_msm", "probe"] * 2
    seen.clear()
    _serve(monkeypatch, FakeGpuWorkload(None, fake), fake, ["tail_msm"], 1)
    assert "freeze" not in seen


def test_worker_refuses_code_from_elsewhere():
    with pytest.raises(RuntimeError, match="not from the commit under test"):
        worker.Worker({"protocol": worker.PROTOCOL, "root": "/nonexistent/commit", "spec": {}, "areas": []})


def test_gpu_state_without_a_gpu_is_none():
    from cuzk.backend import gpu_status
    if gpu_status()[0]:
        pytest.skip("a GPU is present")
    assert nvml.gpu_state() is None


def test_gpu_state_command_with_a_fake_nvml(monkeypatch, capsys):
    import json
    from cuzk.cli import main
    fake = FakeNvml(throttle=SW_POWER_CAP, pids=[1, 2])
    monkeypatch.setattr(nvml, "open_device", lambda *a, **k: nvml.Nvml(fake))
    assert main(["gpu-state"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["gpu"]["name"] == "Fake H200" and out["gpu"]["driver"] == "570.1"
    assert out["state"]["throttle_names"] == ["sw_power_cap"] and out["state"]["processes"] == [1, 2]
    assert fake.shutdowns == 1                      # read-only, and closed again
