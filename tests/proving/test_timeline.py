"""Per-phase start/stop times and per-circuit sub-records (PhaseTimer), and `cuzk bench --timeline`."""
from __future__ import annotations

import json
import time

import pytest

from cuzk.cli import main
from cuzk.perf.plots import timeline_lanes
from cuzk.timing import PhaseTimer, circuit

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


class FakeDevice:
    """A timer device whose 'events' are host timestamps (elapsed = difference)."""

    def record_event(self):
        return time.perf_counter()

    def elapsed_s(self, a, b):
        return b - a

    def peak_bytes(self):
        return 0


class FakeClock:
    """perf_counter for cuzk.timing that moves only when sleep() moves it: spans read exactly, whatever runs
    beside the test."""

    def __init__(self):
        self.now = 1000.0

    def perf_counter(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        self.now += s


def test_spans_and_circuit_subrecords(monkeypatch):
    """Each phase's span and host time, and its circuits' spans within it, read on the timer's clock from its
    origin; a circuit outside a phase records nothing."""
    import cuzk.timing
    clock = FakeClock()
    monkeypatch.setattr(cuzk.timing, "time", clock)
    t = PhaseTimer(origin=clock.perf_counter())
    with t.phase("prep_msm"):
        clock.sleep(0.002)
    with t.phase("tail_msm"):
        for i in range(3):
            with circuit(i):
                clock.sleep(0.001)
    with circuit(0):          # outside a phase: nothing recorded, no error
        pass
    d = t.as_dict()
    a, b = d["prep_msm"], d["tail_msm"]
    ms = lambda *xs: [pytest.approx(x / 1e3, abs=1e-9) for x in xs]
    assert [a["start_s"], a["stop_s"], a["host_s"]] == ms(0, 2, 2)
    assert [b["start_s"], b["stop_s"], b["host_s"]] == ms(2, 5, 3)
    assert [c["circuit"] for c in b["circuits"]] == [0, 1, 2]
    assert [(c["start_s"], c["stop_s"]) for c in b["circuits"]] == [tuple(ms(2, 3)), tuple(ms(3, 4)), tuple(ms(4, 5))]
    assert b["device_start_s"] is None and a["circuits"] == [] and b["calls"] == 1
    for k in ("host_s", "device_s", "peak_device_bytes", "peak_host_bytes"):     # docs/architecture.md's fields stay
        assert k in a


def test_device_spans_read_at_finish():
    t = PhaseTimer(device=FakeDevice())
    with t.phase("ntt_msm_h", "cuda"):
        for i in range(2):
            with circuit(i):
                time.sleep(0.001)
    with t.phase("proof_assembly", "cpu"):
        pass
    d = t.as_dict()
    r = d["ntt_msm_h"]
    assert r["device_s"] > 0 and r["device_start_s"] is not None
    assert r["device_stop_s"] - r["device_start_s"] == pytest.approx(r["device_s"], abs=1e-4)
    assert all(c["device_start_s"] is not None for c in r["circuits"])
    assert d["proof_assembly"]["device_start_s"] is None
    lanes = timeline_lanes(d)["lanes"]
    assert lanes == ["ntt_msm_h (host)", "ntt_msm_h (device)", "proof_assembly (host)"]


def test_bench_timeline_png_and_json(tmp_path, capsys):
    png, js = tmp_path / "t.png", tmp_path / "run.json"
    rc = main(["bench", "--backend", "cpu", "--log-size", "6", "--circuits", "2", "--parallel-synthesis", "2",
               "--timeline", str(png), "--json", str(js)])
    assert rc == 0
    assert png.read_bytes()[:8] == PNG_MAGIC
    rep = json.loads(js.read_text())
    assert rep["circuit"]["parallel_synthesis"] == 2
    syn = rep["phases"]["synthesis"]["circuits"]
    assert sorted({(c["circuit"], c["label"]) for c in syn}) == [(0, "assign"), (0, "witness"), (1, "assign"),
                                                                  (1, "witness")]
    for p in ("ntt_msm_h", "tail_msm", "b_g2", "batch_addition", "proof_assembly"):
        assert [c["circuit"] for c in rep["phases"][p]["circuits"]] == [0, 1], p


def test_bench_timeline_needs_a_writable_place(tmp_path, capsys):
    bad = tmp_path / "file"
    bad.write_text("x")
    rc = main(["bench", "--backend", "cpu", "--log-size", "5", "--timeline", str(bad / "t.png")])
    err = capsys.readouterr().err
    assert rc == 2 and "cuzk: error:" in err and not (bad / "t.png").exists()


def test_phase_peaks_are_per_phase(tmp_path):
    """With phase_peaks the host peak of a phase is its own: a phase after a big one that allocates
    nothing reports less than the big one (where /proc/self/clear_refs can reset the counter)."""
    import numpy as np
    from cuzk.timing import PhaseTimer, reset_peak_rss
    if not reset_peak_rss():
        pytest.skip("no /proc/self/clear_refs here")
    t = PhaseTimer(phase_peaks=True)
    with t.phase("prep_msm"):
        big = np.ones(40_000_000)            # 320 MB touched
        del big
    with t.phase("tail_msm"):
        pass
    r = t.as_dict()
    assert r["prep_msm"]["peak_host_scope"] == r["tail_msm"]["peak_host_scope"] == "phase"
    assert r["prep_msm"]["peak_host_bytes"] - r["tail_msm"]["peak_host_bytes"] > 250e6
    assert t.process_peak_host_bytes >= r["prep_msm"]["peak_host_bytes"]
    plain = PhaseTimer()
    with plain.phase("prep_msm"):
        pass
    assert plain.as_dict()["prep_msm"]["peak_host_scope"] == "process"


def test_substeps_sum_labelled_spans_by_label():
    from cuzk.cli.common import phase_table, substeps
    phases = {"ntt_msm_h": {"impl": "cuda", "host_s": 1.0, "device_s": 0.9, "peak_host_bytes": 0,
                            "circuits": [
                                {"start_s": 0.0, "stop_s": 0.5, "device_start_s": 0.1, "device_stop_s": 0.4,
                                 "circuit": 0, "label": "h scalars"},
                                {"start_s": 0.5, "stop_s": 1.0, "device_start_s": 0.4, "device_stop_s": 0.9,
                                 "circuit": 0, "label": "h msm"},
                                {"start_s": 1.0, "stop_s": 1.2, "device_start_s": 0.9, "device_stop_s": 1.0,
                                 "circuit": 1, "label": "h scalars"}]},
              "prep_msm": {"impl": "cpu", "host_s": 0.1, "device_s": None, "peak_host_bytes": 0,
                           "circuits": [{"start_s": 0.0, "stop_s": 0.1, "device_start_s": None,
                                         "device_stop_s": None, "circuit": 0}]},
              "synthesis": {"impl": "cpu", "host_s": 0.3, "device_s": None, "peak_host_bytes": 0,
                            "circuits": [{"start_s": 0.0, "stop_s": 0.25, "device_start_s": None,
                                          "device_stop_s": None, "circuit": 0, "label": "witness"}]}}
    d = substeps(phases)
    assert list(d) == ["ntt_msm_h", "synthesis"]                 # unlabelled spans are not sub-steps
    assert d["ntt_msm_h"]["h scalars"] == pytest.approx(0.4) and d["ntt_msm_h"]["h msm"] == pytest.approx(0.5)
    assert d["synthesis"]["witness"] == pytest.approx(0.25)      # host time where no device events
    table = phase_table(phases, 1.4)
    assert "ntt_msm_h: h scalars 400.00, h msm 500.00" in table


def test_the_key_set_up_has_its_own_labelled_lane_between_synthesis_and_the_proof(tmp_path, monkeypatch):
    monkeypatch.setenv("CUZK_CACHE_DIR", str(tmp_path / "cache"))
    js = tmp_path / "run.json"
    labels = []
    for _ in range(2):                                  # the first run makes the key, the second loads it
        assert main(["bench", "--backend", "cpu", "--log-size", "6", "--json", str(js),
                     "--timeline", str(tmp_path / "t.png")]) == 0
        rep = json.loads(js.read_text())
        key, ph = rep["key_setup"], rep["phases"]
        assert ph["synthesis"]["spans"][-1]["stop_s"] <= key["start_s"] < key["stop_s"]
        assert key["stop_s"] <= ph["prep_msm"]["spans"][0]["start_s"]
        tl = timeline_lanes(ph, key)
        i = tl["lanes"].index("key set-up (host)")
        assert tl["lanes"][i - 1].startswith("synthesis") and tl["lanes"][i + 1].startswith("prep_msm")
        labels += [b["label"] for b in tl["bars"] if b["lane"] == i]
    assert labels == ["keygen (saved to the cache)", "key from the cache"]
    assert "key set-up" not in " ".join(timeline_lanes(ph)["lanes"])      # no key span given: no lane
