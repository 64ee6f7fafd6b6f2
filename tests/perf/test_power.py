"""Power from resampled A/A rounds (cuzk.perf.power): what it reports must follow the noise it is given."""
from __future__ import annotations

import json
import math
import random
import subprocess
import sys
from pathlib import Path

import pytest

from cuzk.perf import power

AREAS = ["ntt_msm_h", "tail_msm", "b_g2"]


SPEC = {"backend": "cuda", "circuit": "porep_like", "log_size": 18, "opts": "default"}


def _gate_json(path, sd: float, rounds: int = 8, samples: int = 5, seed: int = 1, derived=()):
    """An A/A gate.json whose samples are lognormal around 10 ms with spread sd (ln units); derived:
    [(phase, threshold)] from noise records, as the gate stores them."""
    rng = random.Random(seed)
    side = lambda: {"areas": {a: {"samples": [0.01 * math.exp(rng.gauss(0, sd)) for _ in range(samples)]}  # noqa: E731
                              for a in AREAS}}
    doc = {"base": "a" * 40, "head": "a" * 40, "base_ref": "main", "head_ref": "main",
           "config": {"rounds": rounds, "samples": samples, "alpha": 0.01, "threshold": 0.05, "thresholds": {},
                      "areas": AREAS, "derived": [{"spec": SPEC, "phase": a, "value": v, "source": "noise",
                                                   "basis": "test"} for a, v in derived]},
           "outcomes": [{"status": "ok", "spec": SPEC,
                         "rounds": [{"base": side(), "head": side()} for _ in range(rounds)]}]}
    path.write_text(json.dumps(doc))
    return str(path)


def test_quiet_rounds_detect_ten_percent_and_noisy_ones_do_not(tmp_path):
    quiet = power.load_pools([_gate_json(tmp_path / f"q{i}.json", 0.01, seed=i) for i in range(3)])
    noisy = power.load_pools([_gate_json(tmp_path / f"n{i}.json", 0.30, seed=i) for i in range(3)])
    (q,), (n,) = quiet.values(), noisy.values()
    assert len(q["rounds"]) == 24 and q["files"] == 3
    rq = power.simulate(q, {"tail_msm": 0.10}, 300)
    rn = power.simulate(n, {"tail_msm": 0.10}, 300)
    assert rq["detection_rate"]["tail_msm"] > 0.95
    assert rn["detection_rate"]["tail_msm"] < 0.5
    assert rq["phase_tests"] == 600 and rq["false_alarms"] == 0       # the other two phases are not slowed
    aa = power.simulate(q, {}, 300)
    assert aa["phase_tests"] == 900 and aa["false_alarms"] <= 9


def test_the_effect_shifts_each_round_by_its_log(tmp_path):
    (pool,) = power.load_pools([_gate_json(tmp_path / "a.json", 0.0)]).values()
    # no noise at all: every round value is 0, a 10% effect is exactly ln 1.1 a round: always flagged
    assert all(r["tail_msm"] == 0.0 for r in pool["rounds"])
    assert power.simulate(pool, {"tail_msm": 0.10}, 20)["detection_rate"]["tail_msm"] == 1.0
    assert power.simulate(pool, {"tail_msm": 0.04}, 20)["detection_rate"]["tail_msm"] == 0.0   # under threshold


def test_each_phase_is_judged_at_the_threshold_its_runs_had(tmp_path):
    """A threshold derived from noise records (kept in gate.json) is the one a resampled run is judged at:
    +3% under a 1.5% threshold is found, under the config's 5% it is not; runs judged at other thresholds
    do not pool."""
    (pool,) = power.load_pools([_gate_json(tmp_path / "a.json", 0.0, derived=[("tail_msm", 0.015)])]).values()
    assert power.thresholds(pool) == {"ntt_msm_h": (0.05, "config"), "tail_msm": (0.015, "noise"),
                                      "b_g2": (0.05, "config")}
    r = power.simulate(pool, {"tail_msm": 0.03, "b_g2": 0.03}, 20)
    assert r["detection_rate"] == {"tail_msm": 1.0, "b_g2": 0.0}
    with pytest.raises(power.PowerInputError, match="b.json: .*thresholds differ"):
        power.load_pools([_gate_json(tmp_path / "a.json", 0.0, derived=[("tail_msm", 0.015)]),
                          _gate_json(tmp_path / "b.json", 0.0)])


def test_cli_reports_and_writes_json(tmp_path):
    files = [_gate_json(tmp_path / f"r{i}.json", 0.02, seed=i) for i in range(2)]
    out = tmp_path / "power.json"
    p = subprocess.run([sys.executable, "-m", "cuzk.perf.power", *files, "--effect", "tail_msm:0.10",
                        "--trials", "100", "--json", str(out)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "16 real rounds from 2 A/A runs" in p.stdout and "tail_msm:0.1: detected in" in p.stdout
    (res,) = json.loads(out.read_text()).values()
    assert set(res) == {"files", "aa", "tail_msm:0.1"}


def test_bad_input_is_one_line_exit_2(tmp_path):
    junk = tmp_path / "junk.json"
    junk.write_text("[1, 2")
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"config": {}, "outcomes": [{"status": "ok"}]}))
    good = _gate_json(tmp_path / "g.json", 0.02)
    for args, what in (([str(junk)], "junk.json: not JSON"), ([str(other)], "other.json: not a gate.json"),
                       ([str(tmp_path / "none.json")], "none.json: No such file"),
                       ([good, "--effect", "nope:0.1"], "unknown phase nope"),
                       ([good, "--alpha", "2"], "--alpha 2: must be in (0, 1)"),
                       ([good, "--alpha", "nan"], "--alpha nan: must be in (0, 1)")):
        p = subprocess.run([sys.executable, "-m", "cuzk.perf.power", *args], capture_output=True, text=True)
        assert p.returncode == 2 and what in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
        assert not p.stdout


def test_more_rounds_from_the_same_pool_detect_more(tmp_path):
    files = [_gate_json(tmp_path / f"m{i}.json", 0.12, seed=i) for i in range(3)]
    rates = []
    for n in ("8", "24"):
        out = tmp_path / f"p{n}.json"
        p = subprocess.run([sys.executable, "-m", "cuzk.perf.power", *files, "--effect", "tail_msm:0.10",
                            "--rounds", n, "--trials", "200", "--json", str(out)], capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        (res,) = json.loads(out.read_text()).values()
        assert res["aa"]["rounds_a_run"] == int(n)
        rates.append(res["tail_msm:0.1"]["detection_rate"]["tail_msm"])
    assert rates[1] > rates[0] + 0.2
    p = subprocess.run([sys.executable, "-m", "cuzk.perf.power", *files, "--rounds", "4"], capture_output=True, text=True)
    assert p.returncode == 2 and "4 rounds can never reach" in p.stderr
    p = subprocess.run([sys.executable, "-m", "cuzk.perf.power", *files, "--rounds", str(10 ** 26)],
                       capture_output=True, text=True, timeout=60)          # a typo: refused, never drawn
    assert p.returncode == 2 and "must be 2 to 1000" in p.stderr


def test_more_samples_a_round_narrow_the_modelled_rounds_as_the_median_does(tmp_path):
    """--samples S: rounds modelled from the runs' pairs. Lognormal pairs of spread sd: the median of S has a
    spread near 1.2533 sd * sqrt(2 / S) (a pair's ratio has sqrt 2 sd), and a threshold from noise records is
    derived again from it, so a +3% that a 5-sample gate at a 4% threshold misses, a 25-sample one finds."""
    files = [_gate_json(tmp_path / f"a{i}.json", 0.03, rounds=10, seed=i, derived=[("tail_msm", 0.04)])
             for i in range(4)]
    (pool,) = power.load_pools(files).values()
    assert len(pool["pairs"]["tail_msm"]) == 4 * 10 * 4               # each round's median pair left out
    sd = {n: float(power.np.std(power.modelled_rounds(pool, n, 20000, scaled=False)["tail_msm"])) for n in (5, 25)}
    pair_sd = 0.03 * math.sqrt(2)
    assert sd[25] == pytest.approx(1.2533 * pair_sd / 5, rel=0.2)
    measured = power.statistics.pstdev([r["tail_msm"] for r in pool["rounds"]])
    at5 = float(power.np.std(power.modelled_rounds(pool, 5, 20000)["tail_msm"]))
    assert at5 == pytest.approx(measured, rel=0.05)                    # scaled to what the rounds measured
    assert sd[5] > 1.8 * sd[25]
    th = {n: power.modelled_thresholds(pool, n)["tail_msm"] for n in (5, 25)}
    assert th[5][1] == th[25][1] == "noise" and th[25][0] < th[5][0]
    assert power.modelled_thresholds(pool, 5)["b_g2"] == power.thresholds(pool)["b_g2"]   # the config's: kept
    few = power.simulate(pool, {"tail_msm": 0.03}, 200, samples=5)["detection_rate"]["tail_msm"]
    many = power.simulate(pool, {"tail_msm": 0.03}, 200, samples=25)["detection_rate"]["tail_msm"]
    assert many > 0.95 and few < many


def test_cli_models_other_sample_counts_and_refuses_nonsense(tmp_path):
    f = _gate_json(tmp_path / "a.json", 0.02, rounds=10)
    p = subprocess.run([sys.executable, "-m", "cuzk.perf.power", f, "--samples", "9", "--trials", "50"],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "modelled at 9" in p.stdout and "round spread, measured" in p.stdout
    for bad, what in ((["--samples", "0"], "--samples 0"), (["--samples", "9", "--trials", "-1"], "--trials -1")):
        p = subprocess.run([sys.executable, "-m", "cuzk.perf.power", f, *bad], capture_output=True, text=True)
        assert p.returncode == 2 and p.stderr.count("\n") == 1 and what in p.stderr, p.stderr
    one = _gate_json(tmp_path / "one.json", 0.02, rounds=10, samples=1)      # no pair off its round's median
    p = subprocess.run([sys.executable, "-m", "cuzk.perf.power", one, "--samples", "9"], capture_output=True, text=True)
    assert p.returncode == 2 and "nothing to model" in p.stderr and p.stderr.count("\n") == 1


def test_a_round_offset_beyond_the_pairs_is_kept_at_any_sample_count(tmp_path):
    """Rounds that vary more than their pairs predict (an offset shared by a round's pairs) do not narrow with more
    samples: the excess is added, so the modelled spread stays near the offset's however many samples."""
    rng = random.Random(5)
    paths = []
    for k in range(4):
        doc = json.loads(open(_gate_json(tmp_path / f"o{k}.json", 0.03, rounds=10, samples=9, seed=k)).read())
        for rd in doc["outcomes"][0]["rounds"]:
            off = math.exp(rng.gauss(0, 0.02))
            rd["head"]["areas"]["tail_msm"]["samples"] = [x * off for x in rd["head"]["areas"]["tail_msm"]["samples"]]
        (tmp_path / f"o{k}.json").write_text(json.dumps(doc))
        paths.append(str(tmp_path / f"o{k}.json"))
    (pool,) = power.load_pools(paths).values()
    sd81 = float(power.np.std(power.modelled_rounds(pool, 81, 20000)["tail_msm"]))
    assert sd81 > 0.014                                   # the 2% offset (measured over 40 rounds) stays


def test_json_follows_the_output_rule(tmp_path):
    """--json is written by the project's output rule: checked before any work (an input or a folder named as
    the output is one line, exit 2, the input untouched), and a link is written through, staying a link."""
    good = _gate_json(tmp_path / "g.json", 0.02)
    before = Path(good).read_bytes()
    for target, what in ((good, "g.json"), (str(tmp_path), str(tmp_path.name))):
        p = subprocess.run([sys.executable, "-m", "cuzk.perf.power", good, "--trials", "10", "--json", target],
                           capture_output=True, text=True)
        assert p.returncode == 2 and what in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
        assert not p.stdout
        assert target != good or "given as --json and as input gate_json 1:" in p.stderr, p.stderr
    assert Path(good).read_bytes() == before
    real, link = tmp_path / "real.json", tmp_path / "link.json"
    real.write_text("old")
    link.symlink_to(real)
    p = subprocess.run([sys.executable, "-m", "cuzk.perf.power", good, "--trials", "10", "--json", str(link)],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert link.is_symlink() and "aa" in next(iter(json.loads(real.read_text()).values()))
