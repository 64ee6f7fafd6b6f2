"""The measuring path shared by asv and the gate: workloads, sampling, the asv classes over it."""
from __future__ import annotations

import math
import os
import random

import pytest

from cuzk.opts import REGISTRY, variants
from cuzk.perf import sampler, suite, workload
from cuzk.perf.workload import AREAS, Spec, Unavailable, Workload
from cuzk.timing import PHASES


def _gpu() -> bool:
    from cuzk.backend import gpu_status
    return gpu_status()[0]


@pytest.fixture(scope="module")
def w8():
    return Workload(Spec(backend="cpu", log_size=8, opts="all")).prepare()


def test_phase_wiring_gives_the_provers_proof(w8):
    """Each phase called alone on the kept inputs must add up to what Prover.prove computes."""
    proofs = w8.prover.prove(w8.assignments, rng=random.Random(0))
    assert [p.to_json() for p in w8.proofs] == [p.to_json() for p in proofs]
    w8.measure("proof_assembly")
    assert [p.to_json() for p in w8.proofs] == [p.to_json() for p in proofs]


@pytest.mark.parametrize("area", AREAS)
def test_every_area_measures_a_positive_time(w8, area):
    t = w8.measure(area)
    assert t > 0
    assert w8.measure(area, number=3) > 0


def test_areas_are_the_phases_plus_the_whole_proof():
    assert AREAS == PHASES + ("proof",)
    assert set(suite.ASV_TIME_BENCHMARKS) == set(AREAS)


def test_unknown_area(w8):
    with pytest.raises(KeyError):
        w8.measure("msm_everything")


def test_calibration_repeats_short_calls(w8):
    assert w8.calibrate("prep_msm", 1.0) > 1            # tens of microseconds per call (a loaded host: more)
    assert w8.calibrate("ntt_msm_h", 0.0) == 1


def test_calibration_sizes_samples_on_warm_calls(w8, monkeypatch):
    """A sample is a full garbage collection, then n calls, the first of them cold (prep_msm at 2^8: ~56 us
    against ~14 us warm). Sized from that one cold call, samples lasted a quarter of min_sample_s."""
    cold, warm, target = 56e-6, 14e-6, 0.002
    batches = []
    monkeypatch.setattr(w8, "measure", lambda area, number=1: batches.append(number) or cold + (number - 1) * warm)
    n = w8.calibrate("prep_msm", target)
    assert cold + (n - 1) * warm >= target and n <= math.ceil(target / warm)
    assert batches and max(batches) < 2 * n                     # doubling batches, no more calls than needed
    assert w8.calibrate("prep_msm", target, max_number=50) == 50


def test_one_stalled_batch_does_not_size_the_samples(w8, monkeypatch):
    """A loaded host stalls one call now and then (2 ms against a warm call's 0.18 ms, seen on a 2-core
    runner): calibrated from that batch alone, every sample was one call, its clock's resolution unmet."""
    warm, target = 0.18e-3, 0.002
    stalls = iter([True])
    monkeypatch.setattr(w8, "measure", lambda area, number=1: number * warm + (0.01 if next(stalls, False) else 0))
    n = w8.calibrate("prep_msm", target)
    assert n * warm >= target and n <= math.ceil(target / warm)


def test_device_timed_samples_repeat_a_call_only_when_asked(w8, monkeypatch):
    """CUDA events resolve one call, so by default a device-timed sample is one call; with
    min_device_sample_s it repeats the phase (a host-paced phase's jitter averages out), while synthesis,
    timed on the host, follows min_sample_s as before."""
    monkeypatch.setattr(Workload, "device", property(lambda self: True))
    monkeypatch.setattr(w8, "measure", lambda area, number=1: number * (0.012 if area == "tail_msm" else 0.5))
    assert w8.calibrate("tail_msm", 0.002) == 1
    assert w8.calibrate("tail_msm", 0.002, min_device_sample_s=0.03) == 3
    assert w8.calibrate("tail_msm", 0.002, min_device_sample_s=0.03, max_number=2) == 2
    assert w8.calibrate("synthesis", 1.0) == 2 and w8.calibrate("synthesis", 1.0, min_device_sample_s=3.0) == 2


def test_sample_areas_round_robin(w8):
    seen = []
    real = w8.measure

    def spy(area, number=1):
        seen.append(area)
        return real(area, number)
    w8.measure = spy
    try:
        res = sampler.sample_areas(w8, ["tail_msm", "b_g2"], 3)
    finally:
        w8.measure = real
    assert seen == ["tail_msm", "b_g2"] * 3
    assert all(len(s.values) == 3 for s in res.sets.values()) and res.discards == []


def test_a_broken_phase_is_an_error_not_a_fast_benchmark(monkeypatch):
    from cuzk.backend.cpu import CpuBackend
    real = CpuBackend.proof_assembly

    def wrong(self, kh, parts, randomness):          # the H term replaced by A's sum
        return real(self, kh, [dict(p, h=p["a"]) for p in parts], randomness)
    monkeypatch.setattr(CpuBackend, "proof_assembly", wrong)
    with pytest.raises(RuntimeError, match="does not verify"):
        Workload(Spec(backend="cpu", log_size=8, opts="baseline")).prepare()


def test_variant_names_and_specs():
    assert list(variants()) == suite.variant_names()
    assert workload.opt_set("default-A1").as_dict() == {n: o.default and n != "A1" for n, o in REGISTRY.items()}
    assert workload.opt_set("+A1,-A2").as_dict()["A2"] is False
    spec = workload.opt_spec(workload.opt_set("default-A2"))
    assert workload.opt_set(spec) == workload.opt_set("default-A2")


def test_a_workload_runs_its_own_variant_and_leaves_the_environment_alone(monkeypatch):
    """The variant is the spec's alone: CUZK_OPT is neither read nor written, and the backend gets the set."""
    monkeypatch.setenv("CUZK_OPT", "all")
    w = Workload(Spec(opts="baseline", log_size=6, circuit="mulchain"))
    assert os.environ["CUZK_OPT"] == "all"
    assert w.ensure_backend().opts.label() == "baseline" and w.opts.label() == "baseline"


def test_a_workload_reads_the_table_budget_once(monkeypatch):
    monkeypatch.setenv("CUZK_TABLE_GIB", "12.5")
    w = Workload(Spec(log_size=6, circuit="mulchain"))
    monkeypatch.setenv("CUZK_TABLE_GIB", "99")
    assert w.table_gib == 12.5 and w.ensure_backend().opts == w.opts
    assert Workload(Spec(log_size=6, circuit="mulchain"), table_gib=None).table_gib is None
    monkeypatch.setenv("CUZK_TABLE_GIB", "lots")
    with pytest.raises(ValueError, match="CUZK_TABLE_GIB"):
        Workload(Spec(log_size=6, circuit="mulchain"))


def test_targets():
    assert Spec.parse_target("cpu:10") == Spec(backend="cpu", log_size=10)
    for bad in ("gpu:10", "cpu", "cpu:x", "auto:8"):
        with pytest.raises(ValueError):
            Spec.parse_target(bad)
    with pytest.raises(ValueError):
        Workload(Spec(backend="auto"))


@pytest.mark.skipif(_gpu(), reason="a GPU is present")
def test_cuda_without_a_gpu_is_unavailable_so_asv_skips():
    with pytest.raises(Unavailable) as e:
        Workload(Spec(backend="cuda", log_size=8)).prepare()
    assert isinstance(e.value, NotImplementedError)


# --- the asv classes, called the way asv_runner calls them ---

def test_asv_phase_class_returns_samples():
    from benchmarks.bench_tail_msm import TailMsm
    b = TailMsm()
    b.setup("cpu:8", "default")
    r = b.track_time("cpu:8", "default")
    assert r["number"] == 1 and len(r["samples"]) >= 7 and min(r["samples"]) > 0
    from benchmarks.bench_tail_msm import TailMsmMemory
    assert TailMsmMemory.params[0] == suite.GPU_TARGETS          # device memory: GPU targets only


def test_a_device_peak_that_was_not_recorded_is_no_zero(w8):
    """A phase that recorded no device memory peak (timed without a device) was tracked as 0 bytes."""
    from benchmarks.bench_tail_msm import TailMsmMemory
    b = TailMsmMemory()
    b.w = w8                                                    # the CPU reference: no device peak
    with pytest.raises(RuntimeError, match="tail_msm at cpu:8: no device memory peak was recorded"):
        b.track_peak_device_bytes("cpu:8", "default")


def test_asv_samples_come_after_a_warm_up_and_a_calibration(w8, monkeypatch):
    """Untimed calls first, then calibration batches, then the samples, each of the calibrated number."""
    from benchmarks._phase import take_samples
    calls = []
    real = w8.measure
    monkeypatch.setattr(w8, "measure", lambda area, number=1: calls.append(number) or real(area, number))
    s = take_samples(w8, "prep_msm", "cpu")
    n = suite.SAMPLES["cpu"]
    assert len(s.values) == n and s.number > 1 and calls[-n:] == [s.number] * n
    assert calls[0] == 1 and len(calls) > n + 2


@pytest.mark.skipif(_gpu(), reason="a GPU is present")
def test_asv_gpu_params_skip_in_setup():
    from benchmarks.bench_proof import Proof
    with pytest.raises(NotImplementedError):
        Proof().setup(suite.GPU_TARGETS[0], "default")


def test_asv_setup_is_memoised():
    from benchmarks.bench_b_g2 import BG2
    a, b = BG2(), BG2()
    a.setup("cpu:8", "baseline")
    b.setup("cpu:8", "baseline")
    assert a.w is b.w


def test_asv_synthesis_class():
    from benchmarks.bench_synthesis import Synthesis
    b = Synthesis()
    b.setup("mulchain", 12, "A2")
    assert not b.w._ready                      # no key, no backend: peakmem sees synthesis only
    r = b.track_time("mulchain", 12, "A2")
    assert len(r["samples"]) >= 7
    b.peakmem_synthesis("mulchain", 12, "A2")


@pytest.mark.skipif(not _gpu(), reason="needs a GPU")
def test_cuda_workload_times_the_pipelines_inputs():
    """On the GPU the phases get what a pipelined proof gets: a, b, c assigned on the device (no host
    ints to convert inside the H phase), a fresh spendable copy for each H call, the kept one intact;
    every call's proof still verifies."""
    from cuzk.groth16 import verify
    w = Workload(Spec(backend="cuda", log_size=8)).prepare()
    assert all(a.a is None and k is not None for a, k in zip(w.assignments, w._abc_kept))
    kept = [k.copy() for k in w._abc_kept]
    first = [p.to_json() for p in w.proofs]
    for area in ("ntt_msm_h", "ntt_msm_h", "proof", "ntt_msm_h"):
        assert w.measure(area) > 0
    for k, before in zip(w._abc_kept, kept):
        assert bool((k == before).all())
    w.measure("proof_assembly")                    # the parts of the first pass: the same proofs again
    assert [p.to_json() for p in w.proofs] == first
    assert all(verify(w.pk.verifying_key(), a.public, p) for a, p in zip(w.assignments, w.proofs))
    assert w.measure("synthesis") > 0


@pytest.mark.serial          # a rival spun on a CPU
@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs Linux CPU affinity")
def test_a_sample_counts_the_times_its_thread_was_switched_out(w8):
    """A rival busy on the sampling thread's CPU takes it off that CPU while timed: the count says so (the gate
    keeps it beside each sample), so a noisy sample can be told from a slow phase."""
    import subprocess
    import sys
    import time
    cpu = max(os.sched_getaffinity(0))
    before = os.sched_getaffinity(0)
    rival = subprocess.Popen([sys.executable, "-c", f"import os; os.sched_setaffinity(0, {{{cpu}}})\nwhile 1: pass"])
    try:
        os.sched_setaffinity(0, {cpu})
        time.sleep(0.2)                          # the rival is up and spinning
        n = 1
        while w8.measure("prep_msm", number=n) * n < 0.3 and n < 1 << 20:
            n *= 2
        assert w8.last_preempted > 0
    finally:
        os.sched_setaffinity(0, before)
        rival.kill()
        rival.wait()
    w8.measure("prep_msm")
    assert isinstance(w8.last_preempted, int) and w8.last_preempted >= 0
