"""The GPU injection that measures the gate: a spin of a known fraction of the phase's own device
time, after its work, in that phase only (against a fake device timer here; the spin kernel itself
runs on the GPU in tools/gpu_runner_check.py-style runs). And calibrate's summary arithmetic."""
from __future__ import annotations

import pytest

from cuzk.perf.calibrate import CUDA_FILE, gpu_slowdown_patch, parse_inject, summary
from cuzk.perf.inject import DeviceSlowdown


class FakeDevice:
    """A device clock: phases advance it by their own time, spins by what they are asked."""

    def __init__(self):
        self.now = 0.0
        self.spins = []

    # the timer's interface: events are clock readings
    def start(self):
        return self.now

    def stop(self, t0):
        return (t0, self.now)

    def seconds(self, pair):
        return pair[1] - pair[0]

    def spin(self, s):
        self.spins.append(s)
        self.now += s


def test_the_spin_is_the_asked_fraction_of_the_phases_own_time():
    dev = FakeDevice()
    own = [0.050, 0.010, 0.012, 0.010, 0.012]          # the first call pays module loads

    def phase(i):
        dev.now += own[i]
        return i * 7

    slow = DeviceSlowdown(0.10, timer=dev, spin=dev.spin)
    wrapped = slow.wrap(phase)
    spans = []
    for i in range(len(own)):
        t0 = dev.now
        assert wrapped(i) == i * 7                        # the phase's result is untouched
        spans.append(dev.now - t0)
    assert dev.spins[0] == 0.0                             # nothing known yet: the first call only measures
    assert dev.spins[1] == pytest.approx(0.10 * 0.050)      # one call seen: that one
    # then the median of the calls after the first, so the phase's median moves by the fraction
    assert dev.spins[2:] == pytest.approx([0.10 * 0.010, 0.10 * 0.011, 0.10 * 0.010])
    # what the phase's own events see: its work plus the spin
    assert [s - o for s, o in zip(spans, own)] == pytest.approx(dev.spins)
    assert list(slow.own) == pytest.approx(own[:-1])       # read back one call late, no sync in the phase


def test_a_jittery_phase_moves_its_median_by_the_fraction():
    """A phase whose calls vary 4-10% (host-paced): the least call would give +2.5% of the median for an
    asked +3%; the median estimate gives the asked fraction."""
    import random
    import statistics
    dev, rng = FakeDevice(), random.Random(3)
    own = [0.012 * (1 + abs(rng.gauss(0, 0.15))) for _ in range(400)]

    def phase(i):
        dev.now += own[i]
    wrapped = DeviceSlowdown(0.03, timer=dev, spin=dev.spin).wrap(phase)
    spans = []
    for i in range(len(own)):
        t0 = dev.now
        wrapped(i)
        spans.append(dev.now - t0)
    ratio = statistics.median(spans[50:]) / statistics.median(own[50:])
    assert ratio == pytest.approx(1.03, abs=0.0015)          # the least call: 1.027


def test_a_fraction_that_is_not_positive_is_refused():
    with pytest.raises(ValueError):
        DeviceSlowdown(0.0)


def test_the_patch_wraps_exactly_the_named_phase():
    text = "class CudaBackend:\n    def tail_msm(self):\n        return 1\n"
    out = gpu_slowdown_patch("tail_msm", 0.1)(text)
    ns: dict = {}
    exec(compile(out, CUDA_FILE, "exec"), ns)
    m = ns["CudaBackend"].tail_msm
    assert m.slowdown.fraction == 0.1 and m.__wrapped__(None) == 1
    with pytest.raises(ValueError, match="no method b_g3"):
        gpu_slowdown_patch("b_g3", 0.1)(text)


def test_summary_counts_phase_tests_false_alarms_and_detections():
    rows = [{"run": 0, "exit": 1, "flagged": ["cuda:tail_msm"], "wall_s": 10.0,
             "ratios": {"cuda:tail_msm": 1.11, "cuda:b_g2": 1.0, "cpu:tail_msm": 1.09}},
            {"run": 1, "exit": 1, "flagged": ["cuda:b_g2", "cuda:tail_msm", "cpu:tail_msm"], "wall_s": 12.0,
             "ratios": {"cuda:tail_msm": 1.10, "cuda:b_g2": 1.07, "cpu:tail_msm": 1.12}},
            {"run": 2, "exit": 2, "flagged": [], "wall_s": 3.0, "ratios": {}}]
    s = summary(rows, "tail_msm:0.10")
    assert s["judged_runs"] == 2 and s["phase_tests"] == 2 and s["false_alarms"] == 1
    assert s["detected"] == {"cpu:tail_msm": 1, "cuda:tail_msm": 2}
    assert s["detection_rate"]["cuda:tail_msm"] == 1.0 and s["wall_s_median"] == 10.0
    aa = summary(rows[:2], None)
    assert aa["phase_tests"] == 6 and aa["false_alarms"] == 4


def test_several_phases_slowed_at_once_each_count_their_own_detections():
    rows = [{"run": 0, "exit": 1, "flagged": ["cuda:ntt_msm_h", "cuda:tail_msm"], "wall_s": 9.0,
             "ratios": {"cuda:ntt_msm_h": 1.03, "cuda:tail_msm": 1.031, "cuda:b_g2": 1.0}},
            {"run": 1, "exit": 1, "flagged": ["cuda:tail_msm", "cuda:b_g2"], "wall_s": 9.0,
             "ratios": {"cuda:ntt_msm_h": 1.01, "cuda:tail_msm": 1.03, "cuda:b_g2": 1.04}}]
    s = summary(rows, "ntt_msm_h:0.03,tail_msm:0.03")
    assert s["detected"] == {"cuda:ntt_msm_h": 1, "cuda:tail_msm": 2}
    assert s["phase_tests"] == 2 and s["false_alarms"] == 1


@pytest.mark.parametrize("bad", ["tail_msm", "tail_msm:x", ":0.1", "tail_msm:0", "a:0.1,a:0.2", "tail_msm:-1"])
def test_a_malformed_inject_is_refused(bad):
    with pytest.raises(ValueError, match="--inject"):
        parse_inject(bad)


def test_two_slowdowns_patch_one_file_and_both_phases_are_wrapped():
    text = "class CudaBackend:\n    def tail_msm(self):\n        return 1\n    def ntt_msm_h(self):\n        return 2\n"
    for phase, f in parse_inject("ntt_msm_h:0.03,tail_msm:0.05"):
        text = gpu_slowdown_patch(phase, f)(text)
    ns: dict = {}
    exec(compile(text, CUDA_FILE, "exec"), ns)
    cls = ns["CudaBackend"]
    assert cls.ntt_msm_h.slowdown.fraction == 0.03 and cls.tail_msm.slowdown.fraction == 0.05
    assert cls.ntt_msm_h.__wrapped__(None) == 2 and cls.tail_msm.__wrapped__(None) == 1
    assert parse_inject(None) == [] and parse_inject("") == []


def test_calibrate_with_no_judged_run_measured_nothing(tmp_path, monkeypatch, capsys):
    """Gate runs that all exit 2 give no false-alarm or detection figure: calibrate exits 2."""
    from cuzk.perf import calibrate
    monkeypatch.setattr(calibrate, "run_gate", lambda *a, **k: (2, {"outcomes": []}, 1.0))
    assert calibrate.main(["--runs", "2", "--workdir", str(tmp_path / "w")]) == 2
    assert "nothing measured" in capsys.readouterr().err
