"""python -m cuzk.perf.rival_idle: whether the idle rival's CPU beside a sample follows how slow it was."""
from __future__ import annotations

import json
import random

import pytest

from cuzk.perf import rival_idle


def _doc(follows: bool, seed: int = 1) -> dict:
    """A judged gate.json of 10 rounds x 9 samples of b_g2 whose slow samples (x1.35, a quarter) had the idle
    rival running 3-4 ms beside them (follows) or at random."""
    rng = random.Random(seed)
    rounds = []
    for _ in range(10):
        rd = {"order": ["base", "head"]}
        for s in ("base", "head"):
            slow = [rng.random() < 0.25 for _ in range(9)]
            xs = [0.011 * (1.35 if k else 1.0) * (1 + 0.005 * rng.random()) for k in slow]
            ms = [(3 + rng.random()) if (k if follows else rng.random() < 0.25) else 0.3 * rng.random()
                  for k in slow]
            rd[s] = {"status": "ready", "gpu": None, "areas": {"b_g2": {"samples": xs, "number": 1,
                                                                        "rival_idle_ms": ms}}}
        rounds.append(rd)
    spec = {"backend": "cuda", "circuit": "porep_partition", "log_size": 24, "opts": "default"}
    return {"repo": "/r", "base": "a" * 40, "head": "b" * 40, "base_ref": "HEAD^1", "head_ref": "HEAD",
            "exit_code": 0, "wall_s": 1.0, "rules_changed": [],
            "config": {"rounds": 10, "samples": 9, "alpha": 0.01, "threshold": 0.05, "thresholds": {},
                       "areas": ["b_g2"], "path": "perf-gate.toml"},
            "outcomes": [{"spec": spec, "required": True, "phases": None, "status": "ok", "message": "",
                          "rounds": rounds, "discards": 0}]}


def test_a_rival_that_runs_beside_the_slow_samples_is_seen_and_one_at_random_is_not(tmp_path, capsys):
    a, b = tmp_path / "follows.json", tmp_path / "random.json"
    a.write_text(json.dumps(_doc(True)))
    b.write_text(json.dumps(_doc(False)))
    (k, got), = rival_idle.pairs([str(a)]).items()
    assert k == ("cuda porep_partition 2^24 opts=default", "b_g2")
    s = rival_idle.summary(got, 1.15)
    assert s["samples"] == 180 and 0.1 < s["slow_share"] < 0.4
    assert s["rival_ms_slow"] > 3 > 0.3 > s["rival_ms_other"] and s["rho"] > 0.5 and s["p"] < 1e-6
    r = rival_idle.summary(rival_idle.pairs([str(b)])[k], 1.15)
    assert abs(r["rho"]) < 0.3 and r["p"] > 1e-3
    assert rival_idle.main([str(a)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:3] == ["workload", "phase", "samples"] and "b_g2" in out[1] and " 180 " in out[1]


def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    old = _doc(True)
    for rd in old["outcomes"][0]["rounds"]:
        for s in ("base", "head"):
            del rd[s]["areas"]["b_g2"]["rival_idle_ms"]
    cases = {"old.json": json.dumps(old), "text.json": "not json", "other.json": json.dumps({"kind": "x"})}
    for name, text in cases.items():
        (tmp_path / name).write_text(text)
        assert rival_idle.main([str(tmp_path / name)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith(f"rival_idle: {tmp_path / name}"), err
    assert rival_idle.main([str(tmp_path / "missing.json")]) == 2
    assert rival_idle.main([str(tmp_path / "old.json"), "--slow", "0.9"]) == 2
    capsys.readouterr()
    assert rival_idle.main([str(tmp_path / "old.json")]) == 2
    assert "no sample with rival_idle_ms" in capsys.readouterr().err


@pytest.mark.parametrize("got", [[(0.0, 1.0)] * 5, [(0.1, 1.0), (0.0, 1.0), (0.2, 1.0)]])
def test_a_phase_whose_figures_do_not_vary_has_no_correlation(got):
    s = rival_idle.summary(got, 1.15)
    assert s["rho"] is None and s["p"] is None
