"""The gate's judgement without timing anything: statistics, config, orchestration with a
scripted worker, exit codes and the report."""
from __future__ import annotations

import json
import math
import os
import random
import sys
import re
import shlex
import stat
import threading
from pathlib import Path

import pytest
from fake_nvml import FakeNvml

from cuzk import nvml
from cuzk.perf import gate, gate_config, report
from cuzk.perf.compare import IMPROVEMENT, NO_CHANGE, REGRESSION, compare as _compare, log_ratios
from cuzk.perf.gate_config import ConfigError, min_p_value
from cuzk.perf.trust import SampleGuard
from cuzk.perf.worker import PROTOCOL
from cuzk.timing import PHASES

REPO = Path(__file__).resolve().parents[2]


# --- compare ---

def compare(area, base, head, threshold, alpha):
    return _compare(area, log_ratios(base, head), threshold, alpha)


def _noisy(n, scale, sd, seed):
    rng = random.Random(seed)
    return [scale * math.exp(rng.gauss(0, sd)) for _ in range(n)]


def test_clear_regression_and_improvement():
    base = _noisy(10, 1.0, 0.01, 1)
    assert compare("x", base, [b * 1.3 for b in base], 0.05, 0.01).verdict == REGRESSION
    c = compare("x", base, [b / 1.3 for b in base], 0.05, 0.01)
    assert c.verdict == IMPROVEMENT and c.ratio == pytest.approx(1 / 1.3)


def test_same_distribution_is_no_change():
    c = compare("x", _noisy(10, 1.0, 0.02, 2), _noisy(10, 1.0, 0.02, 3), 0.05, 0.01)
    assert c.verdict == NO_CHANGE


def test_significant_but_under_threshold_is_no_change():
    base = _noisy(10, 1.0, 0.001, 4)
    c = compare("x", base, [b * 1.02 for b in base], 0.05, 0.01)
    assert c.p_value < 0.01 and c.verdict == NO_CHANGE


def test_over_threshold_but_not_significant_is_no_change():
    base = [1.0] * 10
    head = [1.5, 0.7, 1.6, 0.8, 1.5, 0.7, 1.4, 0.9, 1.3, 1.2]
    c = compare("x", base, head, 0.05, 0.01)
    assert c.ratio > 1.05 and c.p_value > 0.01 and c.verdict == NO_CHANGE


def test_pairing_cancels_drift():
    """A machine that slows down 40% over the run: paired rounds still see no change."""
    drift = [1 + 0.04 * i for i in range(10)]
    base = [d * 1.0 for d in drift]
    head = [d * 1.001 if i % 2 else d * 0.999 for i, d in enumerate(drift)]
    assert compare("x", base, head, 0.05, 0.01).verdict == NO_CHANGE


def test_identical_values_give_p_one():
    assert compare("x", [1.0] * 8, [1.0] * 8, 0.05, 0.01).p_value == 1.0


def test_min_p_value_is_what_the_test_can_reach():
    base = [1.0] * 8
    c = compare("x", base, [2.0] * 8, 0.05, 0.01)
    assert c.p_value == pytest.approx(min_p_value(8))


# --- config ---

def _doc(**gate_kw):
    return {"gate": {"rounds": 10, **gate_kw}, "workload": [{"backend": "cpu", "log_size": 8}]}


def test_project_config_parses_and_matches_asv_thresholds():
    cfg = gate_config.load(REPO / "perf-gate.toml")
    assert cfg.areas == PHASES and cfg.workloads[0].spec.backend == "cpu"
    assert min_p_value(cfg.rounds) < cfg.alpha
    asv = json.loads((REPO / "asv.conf.json").read_text())["regressions_thresholds"]
    assert asv[".*"] == cfg.threshold
    for area, t in cfg.thresholds.items():
        assert asv[f"bench_{area}\\."] == t, area
    assert set(asv) == {".*"} | {f"bench_{a}\\." for a in cfg.thresholds}


def test_the_smallest_p_value_of_a_huge_round_count_is_at_once():
    """2 / 2 ** rounds as an integer power never ends for a typo's 10**26 rounds; as a float it is 0 at once."""
    assert gate_config.min_p_value(8) == pytest.approx(2 / 256) and gate_config.min_p_value(10 ** 26) == 0.0


def test_config_that_can_never_fire_is_refused():
    with pytest.raises(ConfigError, match="could never fire"):
        gate_config.parse(_doc(rounds=7, alpha=0.01))
    gate_config.parse(_doc(rounds=8, alpha=0.01))
    with pytest.raises(ConfigError, match="could never fire"):
        gate_config.parse(_doc(rounds=5, alpha=0.05))


@pytest.mark.parametrize("doc,msg", [
    ({"gate": {"rounds": 10, "samplez": 3}, "workload": [{"backend": "cpu"}]}, "unknown keys"),
    ({"gate": {"rounds": 10}}, "no \\[\\[workload\\]\\]"),
    ({"gate": {"rounds": 10}, "workload": [{"backend": "auto"}]}, "never auto"),
    ({"gate": {"rounds": 10, "phases": ["nope"]}, "workload": [{"backend": "cpu"}]}, "unknown"),
    ({"gate": {"rounds": 10}, "thresholds": {"nope": 0.1}, "workload": [{"backend": "cpu"}]}, "unknown phases"),
    ({"gate": {"rounds": 10}, "trust": {"ignore_reasons": ["hot"]}, "workload": [{"backend": "cpu"}]}, "unknown"),
    ({"gate": {"rounds": 10, "alpha": 1.5}, "workload": [{"backend": "cpu"}]}, "alpha"),
    # a typo's extra digits: refused at once (2 ** rounds as an integer would never end)
    ({"gate": {"rounds": 10 ** 26}, "workload": [{"backend": "cpu"}]}, r"rounds must be an integer in 2\.\.1000"),
    ({"gate": {"rounds": 10, "samples": 10 ** 9}, "workload": [{"backend": "cpu"}]}, "samples in 1..10000"),
    ({"gate": 1, "workload": [{"backend": "cpu"}]}, r"gate = '1': must be a table, \[gate\]"),
    ({"trust": "x", "workload": [{"backend": "cpu"}]}, "trust = 'x': must be a table"),
    ({"workload": [1]}, r"workload: must be tables, \[\[workload\]\]"),
    # what a worker refused only after both trees were checked out, its traceback relayed
    ({"workload": [{"backend": "cpu", "log_size": 2}]}, r"workload\]\] 0: log_size must be in 3\.\.27 for porep_like"),
    ({"workload": [{"backend": "cpu", "circuit": "porep_partition", "log_size": 4}]}, r"log_size must be in 5\.\.27"),
    ({"workload": [{"backend": "cpu", "generator": 4}]}, "generator: 4 is not a quadratic non-residue"),
    ({"workload": [{"backend": "cpu", "batch": 10 ** 9}]}, r"batch = 1000000000 is not in 1\.\.1024"),
    ({"workload": [{"backend": "cpu", "log_size": 27, "batch": 32}]}, r"more than 2\^31 constraints"),
    # a typo's extra digits that would silence the gate for good
    ({"gate": {"rounds": 10, "threshold": 1e300}, "workload": [{"backend": "cpu"}]}, r"thresholds must be in \[0, 1\]"),
    ({"thresholds": {"tail_msm": 2.0}, "workload": [{"backend": "cpu"}]}, r"thresholds must be in \[0, 1\]"),
    ({"trust": {"max_discards": 10 ** 9}, "workload": [{"backend": "cpu"}]}, r"max_discards .* in 0\.\.100"),
    ({"trust": {"max_device_wait_us": 1e300}, "workload": [{"backend": "cpu"}]}, r"max_device_wait_us must be in"),
])
def test_bad_configs(doc, msg):
    with pytest.raises(ConfigError, match=msg):
        gate_config.parse(doc)


@pytest.mark.parametrize("gate_kw, trust_kw, msg", [
    ({"worker_timeout_s": 1e300}, {}, r"worker_timeout_s must be a number of seconds in \(0, 86400\]"),
    ({"min_sample_s": -1}, {}, r"min_sample_s must be a number of seconds in \[0, 10\]"),
    ({"min_sample_s": 1e300}, {}, "min_sample_s must be"),
    ({}, {"pause_s": -1}, r"pause_s must be a number of seconds in \[0, 60\]"),
    ({}, {"pause_s": 1e300}, "pause_s must be"),
    ({}, {"max_temperature_c": 0}, "max_temperature_c must be in"),
])
def test_numbers_out_of_range_are_refused_before_any_work(gate_kw, trust_kw, msg):
    """Each would fail only mid-run (an overflowing deadline, a sleep refused after a GPU sample) or after it (a
    noise record that cannot hold the run's min_sample_s), or silently run for hours."""
    doc = _doc(**gate_kw)
    if trust_kw:
        doc["trust"] = trust_kw
    with pytest.raises(ConfigError, match=msg):
        gate_config.parse(doc)


def test_a_workload_given_twice_is_refused():
    doc = _doc()
    doc["workload"].append({"backend": "cpu", "log_size": 8, "phases": ["tail_msm"]})
    with pytest.raises(ConfigError, match=r"\[\[workload\]\] 1: the same workload as \[\[workload\]\] 0"):
        gate_config.parse(doc)
    doc["workload"][1]["log_size"] = 9
    assert len(gate_config.parse(doc).workloads) == 2


def test_calibrate_checks_the_machine_name_before_any_round(repo, tmp_path, capsys):
    from cuzk.cli import main
    out = tmp_path / "cal"
    assert main(["gate", "--repo", str(repo), "--base", "HEAD", "--calibrate", "--machine", "bad/name",
                 "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--machine 'bad/name'" in err[0] and not out.exists(), err


@pytest.mark.parametrize("flag", ["--base", "--head"])
@pytest.mark.parametrize("config", [False, True])
def test_a_ref_that_names_no_commit_is_one_line_naming_its_flag(tmp_path, capsys, flag, config):
    """A typo in --base or --head (with or without --config) names the flag and the ref, exit 2, before any work."""
    from cuzk.cli import main
    refs = {"--base": "HEAD", "--head": "HEAD", flag: "no-such-ref"}
    out = tmp_path / "out"
    argv = ["gate", "--repo", str(REPO), *(x for kv in refs.items() for x in kv), "--cpu-only", "--out", str(out)]
    assert main(argv + (["--config", str(REPO / "perf-gate.toml")] if config else [])) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{flag} no-such-ref: not a commit" in err[0] and not out.exists(), err


@pytest.mark.parametrize("section, field, value, msg", [
    ("workload", "log_size", "ten", "log_size = 'ten': must be an integer in 1..32"),
    ("workload", "batch", 0, "batch = 0: must be an integer >= 1"),
    ("workload", "circuit", "nope", "circuit = 'nope': known"),
    ("workload", "convention", 3, "convention = 3: must be a string"),
    ("workload", "opts", "+NOPE", r"opts = '\+NOPE'"),
    ("workload", "required", "yes", "required = 'yes': must be true or false"),
    ("gate", "rounds", 10.5, "rounds = 10.5: must be an integer"),
    ("gate", "threshold", "5%", "threshold = '5%': must be a number"),
    ("gate", "worker_cpus", True, "worker_cpus = True: must be an integer"),
    ("trust", "max_idle_cpu_ms", -1, "max_idle_cpu_ms must be in"),
    ("trust", "max_idle_cpu_ms", "2", "max_idle_cpu_ms = '2': must be a number of ms"),
    ("trust", "pause_s", "1s", "pause_s = '1s'"),
    ("trust", "max_discards", None, "max_discards = None"),
    ("trust", "max_discards_apart", 1.5, "max_discards_apart = 1.5: must be an integer"),
    ("trust", "max_discards_apart", -1, r"max_discards and max_discards_apart must be in 0\.\.100"),
    ("thresholds", "tail_msm", -0.1, "tail_msm = -0.1: must be a number >= 0"),
])
def test_each_field_is_type_checked_naming_the_file_and_field(tmp_path, capsys, section, field, value, msg):
    """A wrong type is one line naming the file and the field, exit 2, before any work (never a TypeError)."""
    import tomllib
    doc = {"gate": {"rounds": 10}, "workload": [{"backend": "cpu", "log_size": 8}]}
    if section == "workload":
        doc["workload"][0][field] = value
    else:
        doc.setdefault(section, {})[field] = value
    if value is None:                       # TOML has no null: write the key as an empty inline table instead
        value = {}
        doc[section][field] = value
        msg = msg.replace("None", "{}")
    toml = _toml(doc)
    tomllib.loads(toml)
    f = tmp_path / "gate.toml"
    f.write_text(toml)
    with pytest.raises(ConfigError, match=msg) as e:
        gate_config.load(f)
    assert str(e.value).startswith(str(f))
    from cuzk.cli import main
    assert main(["gate", "--base", "HEAD", "--head", "HEAD", "--config", str(f), "--repo", str(REPO)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(f) in err[0] and field in err[0]


def _toml(doc: dict) -> str:
    def val(v):
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, str):
            return json.dumps(v)
        if isinstance(v, dict):
            return "{}"
        if isinstance(v, list):
            return "[" + ", ".join(val(x) for x in v) + "]"
        return repr(v)
    out = []
    for section in ("gate", "thresholds", "trust"):
        if section in doc:
            out += [f"[{section}]"] + [f"{k} = {val(v)}" for k, v in doc[section].items()]
    for w in doc["workload"]:
        out += ["[[workload]]"] + [f"{k} = {val(v)}" for k, v in w.items()]
    return "\n".join(out) + "\n"


# --- orchestration with a scripted worker ---

@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    from cuzk.perf.calibrate import commit_change, make_repo
    d = tmp_path_factory.mktemp("gate-logic-repo")
    base = make_repo(REPO, d)
    commit_change(d, "README.md", lambda t: t + "\nfirst\n", "between")     # asv find needs a commit between
    head = commit_change(d, "README.md", lambda t: t + "\nchanged\n", "head")
    return d, base, head


class FakeSpawn:
    """Spawns scripted workers: time per area = 1 s x factor on head; failures on demand."""

    def __init__(self, head_factor=None, fail=None, noise=0.01, seed=0, device_wait=None):
        self.head_factor = head_factor or {}
        self.device_wait = device_wait      # (side, its sample count) -> a GPU sample's device_wait_us
        self.fail = fail or {}              # (side, round) or (side, "*") -> error | untrusted | unavailable
        self.spawned, self.asks, self.wide = [], [], []
        self.rng = random.Random(seed)
        self.noise = noise

    def __call__(self, root, timeout, setup_wide=False):
        side = Path(root).name
        rnd = self.spawned.count(side)
        self.spawned.append(side)
        self.wide.append(setup_wide)
        return FakeWorker(self, side, self.fail.get((side, rnd)) or self.fail.get((side, "*")))


class FakeWorker:
    def __init__(self, parent, side, fail):
        self.parent, self.side, self.fail = parent, side, fail
        self.pid = 1000 + len(parent.spawned)

    def ask(self, msg):
        p = self.parent
        if "protocol" in msg:
            p.asks.append((self.side, "setup"))
            assert msg["protocol"] == PROTOCOL and "trust" not in msg      # the guard is the gate's
            if self.fail == "error":
                raise gate.WorkerFailed("Traceback...\nRuntimeError: b_g2 exploded\nworker exited with code 1")
            if self.fail == "unavailable":
                return {"status": "unavailable", "message": "no GPU"}
            ready = {"status": "ready", "numbers": {a: 1 for a in msg["areas"]}, "gpu": None, "cuzk_file": "x",
                     "min_device_sample_s": msg.get("min_device_sample_s", 0.0)}
            if self.fail == "old harness":              # a worker from before min_device_sample_s
                ready.pop("min_device_sample_s")
            return ready
        if "sample" in msg:
            p.asks.append((self.side, msg["sample"]))
            if self.fail == "untrusted" and sum(1 for s, _ in p.asks if s == self.side) > 5:
                return {"status": "untrusted", "message": "untrusted run: 11 samples rejected",
                        "discards": ["throttled after: hw_thermal_slowdown"] * 11}
            f = p.head_factor.get(msg["sample"], 1.0) if self.side == "head" else 1.0
            v = p.last = f * (1 + p.rng.gauss(0, p.noise))
            if p.device_wait is not None:
                n = sum(1 for s, a in p.asks if s == self.side and a not in ("setup", "narrow"))
                return {"status": "ok", "value": v, "device_wait_us": p.device_wait(self.side, n)}
            return {"status": "ok", "value": v}
        assert msg == {"quit": True}
        return {"status": "done", "discards": [], "peak_device_bytes": {}}

    def send(self, msg):                 # WorkerProcess's two halves of ask
        self._pending = msg

    def narrow(self):
        self.parent.asks.append((self.side, "narrow"))

    def receive(self):
        return self.ask(self._pending)

    def close(self):
        pass


@pytest.fixture(autouse=True)
def quiet_gpu(monkeypatch):
    """A GPU workload's samples are guarded by the gate's own NVML reads: here a stand-in GPU, idle and cool."""
    monkeypatch.setattr(gate, "open_guard", lambda what, policy, own: SampleGuard(nvml.Nvml(FakeNvml()), policy, own))


def _cfg(workloads=({"backend": "cpu", "log_size": 8},), **kw):
    return gate_config.parse({"gate": {"rounds": 8, "samples": 3, **kw}, "workload": list(workloads)})


def test_kernel_cache_entries_made_during_a_run_are_removed_at_its_end(repo, tmp_path, monkeypatch):
    """A head's worker can write a kernel into the runner's cubin or CuPy cache under the name a later commit's source
    will have (anyone can compute it), for that commit's runner-check to find "cached" and its gate and the nightly
    to load unbuilt: what came into those caches during the run is removed when it ends (said in the log), what was
    there stays, and the key cache (data a proof at set-up checks) keeps what came."""
    d, base, head = repo
    caches = {v: tmp_path / v for v in ("CUZK_CUBIN_DIR", "CUPY_CACHE_DIR", "CUZK_CACHE_DIR")}
    for v, p in caches.items():
        monkeypatch.setenv(v, str(p))
    (caches["CUZK_CUBIN_DIR"] / "sub").mkdir(parents=True)
    (caches["CUZK_CUBIN_DIR"] / "old.cubin").write_text("built by runner-check")
    keys = caches["CUZK_CACHE_DIR"] / "keys"
    keys.mkdir(parents=True)

    class Planting(FakeSpawn):
        def __call__(self, root, timeout, setup_wide=False):
            if len(self.spawned) == 3:          # round 2, after the gate took the caches' state
                (caches["CUZK_CUBIN_DIR"] / "msm_g1-sm_90-0123456789abcdef0123.cubin").write_text("planted")
                (caches["CUZK_CUBIN_DIR"] / "sub" / "x.cubin").write_text("planted")
                (caches["CUZK_CUBIN_DIR"] / "link.cubin").symlink_to(tmp_path / "elsewhere")
                (caches["CUZK_CUBIN_DIR"] / "w.cubin.lock").write_text("")
                (caches["CUPY_CACHE_DIR"]).mkdir()
                (caches["CUPY_CACHE_DIR"] / "abc.cubin").write_text("planted")
                (keys / "k.key").write_text("a key")
            return super().__call__(root, timeout, setup_wide)
    (tmp_path / "elsewhere").write_text("not the cache's")
    said = []
    res = gate.run(d, base, head, _cfg(), spawn=Planting(), log=said.append)
    assert res.exit_code == gate.EXIT_OK
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file() or p.is_symlink()) \
        == ["CUZK_CACHE_DIR/keys/k.key", "CUZK_CUBIN_DIR/old.cubin", "CUZK_CUBIN_DIR/w.cubin.lock", "elsewhere"]
    lines = [m for m in said if m.startswith("cuzk gate: removed ")]
    assert len(lines) == 2 and lines[0].startswith("cuzk gate: removed 3 entries made during the run from the cubin "
                                                   "cache"), said


def test_the_gate_is_not_dumpable_while_its_workers_run(repo):
    """A dumpable gate lets the head's code (its worker runs as the gate's user) open /proc/GATE/fd/N and write
    requests into the base's pipe, or write the gate's memory: while workers live, the gate is not dumpable, and
    it is as it was afterwards."""
    import ctypes
    libc = ctypes.CDLL(None)
    seen = []

    class Spawn(FakeSpawn):
        def __call__(self, root, timeout, setup_wide=False):
            seen.append(libc.prctl(3, 0, 0, 0, 0))          # PR_GET_DUMPABLE
            return super().__call__(root, timeout, setup_wide)
    d, base, head = repo
    before = libc.prctl(3, 0, 0, 0, 0)
    assert gate.run(d, base, head, _cfg(), spawn=Spawn(), log=lambda m: None).exit_code == gate.EXIT_OK
    assert seen and set(seen) == {0}
    assert libc.prctl(3, 0, 0, 0, 0) == before


def test_rounds_interleave_ab_ba(repo):
    d, base, head = repo
    s = FakeSpawn()
    res = gate.run(d, base, head, _cfg(), spawn=s, log=lambda m: None)
    assert res.exit_code == gate.EXIT_OK
    assert s.spawned == ["base", "head", "head", "base"] * 4              # rounds alternate AB, BA
    assert [r["order"] for r in res.outcomes[0].rounds][:2] == [["base", "head"], ["head", "base"]]
    samples = [a for a in s.asks if a[1] != "setup"]
    n = len(PHASES)
    # round 1: sample 1 of every phase base then head; sample 2 head then base; ...
    assert samples[:2 * n] == [(side, p) for p in PHASES for side in ("base", "head")]
    assert samples[2 * n:4 * n] == [(side, p) for p in PHASES for side in ("head", "base")]
    assert len(samples) == 8 * 3 * n * 2


def test_regression_exits_1_and_names_the_phase(repo):
    d, base, head = repo
    res = gate.run(d, base, head, _cfg(), spawn=FakeSpawn({"tail_msm": 1.2}), log=lambda m: None)
    assert res.exit_code == gate.EXIT_REGRESSION
    assert [c.area for _, c in res.regressions()] == ["tail_msm"]
    md = report.markdown(res)
    assert "FAIL: regression" in md and "`tail_msm`" in md
    line = next(l for l in md.splitlines() if l.startswith("| `tail_msm`"))
    assert "REGRESSION" in line and "1.2" in line
    cmd = next(l for l in md.splitlines() if l.startswith("asv find"))
    # base..head with base included: base^..head, or every ancestor of head when base is a root commit
    from cuzk.perf.bisect import commit_range
    assert f" {commit_range(base, head, d)} " in cmd and "bench_tail_msm" in cmd
    assert commit_range(base, head) == f"{base}^..{head}"
    assert f"cuzk bisect tail_msm --target cpu:8 --opts default --good {base} --bad {head}" in md
    regex = shlex.split(cmd)[-1]
    # asv matches parametrized benchmarks as name(param, ...) with the params repr'd
    assert re.search(regex, "bench_tail_msm.TailMsm.track_time('cpu:8', 'default')")
    assert not re.search(regex, "bench_tail_msm.TailMsm.track_time('cpu:10', 'default')")


def test_improvement_passes(repo):
    d, base, head = repo
    res = gate.run(d, base, head, _cfg(), spawn=FakeSpawn({"ntt_msm_h": 0.5}), log=lambda m: None)
    assert res.exit_code == gate.EXIT_OK
    assert {c.area: c.verdict for c in res.outcomes[0].comparisons}["ntt_msm_h"] == IMPROVEMENT


@pytest.mark.parametrize("status", ["error", "untrusted"])
def test_error_or_untrusted_exits_2_even_with_a_regression(repo, status):
    d, base, head = repo
    s = FakeSpawn({"tail_msm": 2.0}, fail={("head", 3): status})
    res = gate.run(d, base, head, _cfg(), spawn=s, log=lambda m: None)
    assert res.exit_code == gate.EXIT_ERROR
    assert res.outcomes[0].status == status and "head" in res.outcomes[0].message
    assert "round 4" in res.outcomes[0].message and len(s.spawned) == 8     # stopped at the failure
    md = report.markdown(res)
    assert "never a pass" in md and ("UNTRUSTED" in md if status == "untrusted" else "benchmark error" in md)


def test_unavailable_optional_workload_is_skipped(repo):
    d, base, head = repo
    cfg = _cfg([{"backend": "cpu", "log_size": 8}, {"backend": "cuda", "log_size": 16, "required": False}])

    fake = FakeSpawn()

    class Spawn:
        """cuda workers are unavailable: their set-up says so."""
        def __call__(self, root, timeout, setup_wide=False):
            w = fake(root, timeout, setup_wide)
            real = w.ask
            w.ask = lambda msg: ({"status": "unavailable", "message": "no GPU"}
                                 if msg.get("spec", {}).get("backend") == "cuda" else real(msg))
            return w
    res = gate.run(d, base, head, cfg, spawn=Spawn(), log=lambda m: None)
    assert res.exit_code == gate.EXIT_OK
    assert [o.status for o in res.outcomes] == ["ok", "skipped"]


@pytest.mark.parametrize("status", ["skipped", "done", "stopped!"])
def test_a_head_that_answers_a_sample_with_another_status_is_an_error_not_a_skip(repo, status):
    """The head's code runs in its worker and may write its own reply: a sample answered "skipped" would skip the
    workload it slows, and the other workloads' pass would be the gate's (exit 0)."""
    d, base, head = repo
    cfg = _cfg([{"backend": "cpu", "log_size": 8}, {"backend": "cpu", "log_size": 9}])

    class Spawn(FakeSpawn):
        def __call__(self, root, timeout, setup_wide=False):
            w = super().__call__(root, timeout, setup_wide)
            real = w.ask
            w.ask = lambda msg: ({"status": status, "message": "not run (required = false)"}
                                 if w.side == "head" and "sample" in msg and w.log_size == 9 else real(msg))
            w.send = lambda msg: (setattr(w, "log_size", msg["spec"]["log_size"]) if "spec" in msg else None,
                                  setattr(w, "_pending", msg))
            return w
    res = gate.run(d, base, head, cfg, spawn=Spawn(), log=lambda m: None)
    assert res.exit_code == gate.EXIT_ERROR, [(o.status, o.message) for o in res.outcomes]
    assert res.outcomes[1].status == "error" and f"status {status!r}" in res.outcomes[1].message


@pytest.mark.parametrize("who, when", [("head", "*"), ("base", "*"), ("head", 3)])
def test_an_optional_workload_unavailable_to_one_side_or_after_a_round_is_an_error(repo, who, when):
    """No GPU is the machine's, both sides' from round 1: a head's set-up that answers "unavailable" alone (its code
    writes the reply) would skip the optional workload it slows, and the rest would pass."""
    d, base, head = repo
    cfg = _cfg([{"backend": "cpu", "log_size": 8}, {"backend": "cuda", "log_size": 16, "required": False}])
    sides = ("base", "head") if when == 3 else (who,)
    fake = FakeSpawn()

    class Spawn:
        def __call__(self, root, timeout, setup_wide=False):
            w = fake(root, timeout, setup_wide)
            real, late = w.ask, fake.spawned.count(w.side) - 1 >= 3
            w.ask = lambda msg: ({"status": "unavailable", "message": "no GPU"}
                                 if msg.get("spec", {}).get("backend") == "cuda" and w.side in sides
                                 and (when == "*" or late) else real(msg))
            return w
    res = gate.run(d, base, head, cfg, spawn=Spawn(), log=lambda m: None)
    assert res.exit_code == gate.EXIT_ERROR, [(o.status, o.message) for o in res.outcomes]
    assert res.outcomes[1].status == "error" and "unavailable" in res.outcomes[1].message


def test_unavailable_required_workload_is_an_error(repo):
    d, base, head = repo
    s = FakeSpawn(fail={("base", "*"): "unavailable", ("head", "*"): "unavailable"})
    res = gate.run(d, base, head, _cfg([{"backend": "cuda", "log_size": 16}]), spawn=s, log=lambda m: None)
    assert res.exit_code == gate.EXIT_ERROR and res.outcomes[0].status == "error"


def test_nothing_measured_is_not_a_pass(repo):
    d, base, head = repo
    s = FakeSpawn(fail={("base", "*"): "unavailable", ("head", "*"): "unavailable"})
    res = gate.run(d, base, head, _cfg([{"backend": "cuda", "log_size": 16, "required": False}]), spawn=s,
                   log=lambda m: None)
    assert res.exit_code == gate.EXIT_ERROR and "every workload was skipped" in report.markdown(res)


def test_bad_ref_is_exit_2_through_the_cli(repo, capsys):
    from cuzk.cli import main
    d, base, head = repo
    assert main(["gate", "--repo", str(d), "--base", "no-such-ref", "--head", head]) == 2
    assert "gate:" in capsys.readouterr().err


def test_missing_config_is_exit_2(repo, capsys):
    from cuzk.cli import main
    d, base, head = repo
    assert main(["gate", "--repo", str(d), "--base", base, "--head", head, "--config", str(d / "nope.toml")]) == 2


def test_materialize_imports_the_commit_not_the_installed_copy(repo, tmp_path):
    import subprocess
    import sys
    from cuzk.perf import checkout
    d, base, head = repo
    root = checkout.materialize(d, head, tmp_path / "side")
    out = subprocess.run([sys.executable, "-c", "import cuzk, cuzk.kernels; print(cuzk.__file__); "
                          "print(cuzk.kernels.__file__)"], cwd=root, capture_output=True, text=True,
                         env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"}).stdout.split()
    assert all(Path(p).resolve().is_relative_to(root.resolve()) for p in out), out
    assert (root / "README.md").read_text().endswith("changed\n")


def _git_repo(d: Path, files: dict, extra=None) -> str:
    """A one-commit repository of `files` (path: text); extra(run) adds index entries before the commit."""
    import subprocess
    run = lambda *a: subprocess.run(["git", *a], cwd=d, check=True, capture_output=True)
    d.mkdir(parents=True, exist_ok=True)
    run("init", "-q")
    for rel, text in files.items():
        (d / rel).parent.mkdir(parents=True, exist_ok=True)
        (d / rel).write_text(text)
    run("add", "-A")
    if extra:
        extra(run)
    run("-c", "user.email=a@b", "-c", "user.name=a", "commit", "-q", "-m", "x")
    from cuzk.perf import checkout
    return checkout.resolve(d, "HEAD")


def test_the_commits_files_are_written_as_git_holds_them_not_as_its_attributes_export_them(tmp_path):
    """`git archive` would apply the commit's own .gitattributes: export-ignore drops a module (then served from the
    gate's installed copy: a head measured with the base's code), export-subst rewrites one. The tree is written
    from git's objects."""
    from cuzk.perf import checkout
    files = {"cuzk/__init__.py": "", "cuzk/qap.py": "SLOW = True\n", "cuzk/ver.py": "V = '$Format:%H$'\n",
             ".gitattributes": "cuzk/qap.py export-ignore\ncuzk/ver.py export-subst\n", "run.sh": "#!/bin/sh\n"}
    sha = _git_repo(tmp_path / "r", files, lambda run: run("update-index", "--chmod=+x", "run.sh"))
    root = checkout.materialize(tmp_path / "r", sha, tmp_path / "ws" / "head")
    for rel, text in files.items():
        assert (root / rel).read_text() == text, rel
    assert os.access(root / "run.sh", os.X_OK) and not os.access(root / "cuzk" / "qap.py", os.X_OK)


@pytest.mark.parametrize("kind", ["link", "submodule"])
def test_a_commit_holding_a_link_or_a_submodule_is_refused(tmp_path, kind):
    """A link in the tree could lead the gate's writes (the harness overlay) or reads out of its workspace, however
    its target is spelled: only regular files are measured."""
    from cuzk.perf import checkout
    files = {"cuzk/__init__.py": ""}
    if kind == "link":
        extra = lambda run: run("update-index", "--add", "--cacheinfo",
                                f"120000,{_blob(tmp_path, '../../victim')},deep")
    else:
        extra = lambda run: run("update-index", "--add", "--cacheinfo", f"160000,{'1' * 40},sub")
    sha = _git_repo(tmp_path / "r", files, extra)
    want = "is a symbolic link" if kind == "link" else "is a submodule"
    with pytest.raises(checkout.CheckoutError, match=f"'{'deep' if kind == 'link' else 'sub'}' {want}"):
        checkout.materialize(tmp_path / "r", sha, tmp_path / "ws" / "head")
    assert not (tmp_path / "ws" / "head" / "cuzk").exists() or not any((tmp_path / "ws").rglob("deep"))


def _blob(tmp_path, text: str) -> str:
    import subprocess
    d = tmp_path / "r"
    d.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q"], cwd=d, check=True)
    return subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=d, input=text, capture_output=True, text=True,
                          check=True).stdout.strip()


@pytest.mark.parametrize("path", ["cuzk/__pycache__/nvml.cpython-311.pyc", "cuzk/nvml.cpython-311-x86_64-linux-gnu.so",
                                  "sitecustomize.py", "usercustomize/__init__.py", "/".join(["d"] * 40) + "/f"])
def test_a_commit_with_compiled_start_up_or_too_deep_files_is_refused(tmp_path, path):
    """A .pyc or a native module is imported before the source beside it (the base's harness laid over the
    head's), sitecustomize runs before the worker's boot, and a path thousands of levels deep breaks the
    workspace's removal: none is written."""
    from cuzk.perf import checkout
    sha = _git_repo(tmp_path / "r", {"cuzk/__init__.py": "", path: "x"})
    with pytest.raises(checkout.CheckoutError, match="not measured from a commit|no path inside a tree"):
        checkout.materialize(tmp_path / "r", sha, tmp_path / "ws" / "head")


def test_a_tree_that_repeats_a_subtree_is_refused_as_git_lists_it(tmp_path):
    """A few objects can name a million files (a subtree repeated under 100 names, three levels down): the file cap
    is checked as git lists them, and the listing is stopped there, never held whole."""
    import subprocess
    from cuzk.perf import checkout
    d = tmp_path / "r"
    _git_repo(d, {"cuzk/__init__.py": ""})
    run = lambda *a, inp=None: subprocess.run(["git", *a], cwd=d, check=True, capture_output=True, input=inp,
                                              text=True).stdout.strip()
    blob = run("hash-object", "-w", "--stdin", inp="x")
    t = run("mktree", inp="".join(f"100644 blob {blob}\tf{i:03}\n" for i in range(100)))
    for _ in range(2):
        t = run("mktree", inp="".join(f"040000 tree {t}\td{i:03}\n" for i in range(100)))
    top = run("mktree", inp=f"040000 tree {t}\tbomb\n040000 tree {run('rev-parse', 'HEAD:cuzk')}\tcuzk\n")
    sha = run("-c", "user.email=a@b", "-c", "user.name=a", "commit-tree", top, "-m", "bomb")
    with pytest.raises(checkout.CheckoutError, match="more than 1024 MiB or 100000 files"):
        checkout.materialize(d, sha, tmp_path / "ws" / "head")


def test_a_replace_ref_does_not_change_the_tree_written(tmp_path):
    """The objects the commit names, not what `git replace` (a ref the workers' user could write) swaps in."""
    import subprocess
    from cuzk.perf import checkout
    d = tmp_path / "r"
    sha = _git_repo(d, {"cuzk/__init__.py": "HONEST = 1\n"})
    run = lambda *a, inp=None: subprocess.run(["git", *a], cwd=d, check=True, capture_output=True, input=inp,
                                              text=True).stdout.strip()
    other = run("hash-object", "-w", "--stdin", inp="SWAPPED = 1\n")
    run("replace", run("rev-parse", "HEAD:cuzk/__init__.py"), other)
    root = checkout.materialize(d, sha, tmp_path / "ws" / "head")
    assert (root / "cuzk" / "__init__.py").read_text() == "HONEST = 1\n"


def test_the_harness_overlay_removes_a_package_that_would_shadow_a_module(tmp_path):
    """The head's cuzk/nvml/ package would be imported before the base's cuzk/nvml.py laid over it."""
    from cuzk.perf import checkout
    base, head = tmp_path / "base", tmp_path / "head"
    for root in (base, head):
        (root / "cuzk" / "perf").mkdir(parents=True)
    (base / "cuzk" / "nvml.py").write_text("BASE = 1\n")
    (head / "cuzk" / "nvml").mkdir()
    (head / "cuzk" / "nvml" / "__init__.py").write_text("HEAD = 1\n")
    checkout.overlay_harness(base, head)
    assert not (head / "cuzk" / "nvml").exists() and (head / "cuzk" / "nvml.py").read_text() == "BASE = 1\n"


def test_a_worker_imports_no_cuzk_module_its_commit_lacks(tmp_path):
    """An editable install of cuzk serves a module the commit's root lacks from the installed copy; the workers'
    boot takes that finder away, so a head that leaves a module out fails to import it instead."""
    import subprocess
    root = tmp_path / "root"
    (root / "cuzk").mkdir(parents=True)
    (root / "cuzk" / "__init__.py").write_text("")
    env = {**os.environ, "PYTHONPATH": str(root)}
    probe = "import cuzk.qap, sys; print(cuzk.qap.__file__)"
    p = subprocess.run([sys.executable, "-c", "import sys\n" + gate.NO_EDITABLE + probe], cwd=root, env=env,
                       capture_output=True, text=True)
    assert p.returncode != 0 and "No module named 'cuzk.qap'" in p.stderr, p.stdout + p.stderr
    plain = subprocess.run([sys.executable, "-c", probe], cwd=root, env=env, capture_output=True, text=True)
    if plain.returncode == 0:          # an editable install here: without the boot's line, the installed copy
        assert not Path(plain.stdout.strip()).resolve().is_relative_to(root.resolve())


@pytest.mark.parametrize("where", ["/abs", "../victim", "cuzk.perf=/abs", "cuzk.perf=../victim"])
def test_a_head_whose_package_dir_points_out_of_its_tree_is_refused(tmp_path, where):
    """The head's pyproject.toml chooses the import root the gate lays out, and the gate replaces the harness under
    it (overlay_harness deletes its cuzk/perf): a package-dir outside the commit's tree is refused, before anything
    there is touched."""
    import subprocess
    from cuzk.perf import checkout
    victim = tmp_path / "victim"
    (victim / "cuzk" / "perf").mkdir(parents=True)
    (victim / "cuzk" / "__init__.py").write_text("")
    (victim / "cuzk" / "perf" / "important.txt").write_text("keep me\n")
    d = tmp_path / "repo"
    (d / "cuzk").mkdir(parents=True)
    (d / "cuzk" / "__init__.py").write_text("")
    pkg, _, rel = where.rpartition("=")
    rel = str(victim) if rel == "/abs" else rel.replace("..", "../..") if pkg else rel
    (d / "pyproject.toml").write_text(f'[tool.setuptools.package-dir]\n"{pkg}" = "{rel}"\n')
    run = lambda *a: subprocess.run(["git", *a], cwd=d, check=True, capture_output=True)
    run("init", "-q")
    run("add", "-A")
    run("-c", "user.email=a@b", "-c", "user.name=a", "commit", "-q", "-m", "x")
    sha = checkout.resolve(d, "HEAD")
    with pytest.raises(checkout.CheckoutError, match="is not a folder inside the commit's tree"):
        checkout.materialize(d, sha, tmp_path / "ws" / "head")
    assert (victim / "cuzk" / "perf" / "important.txt").read_text() == "keep me\n"
    assert not any(p.is_symlink() for p in victim.rglob("*"))


@pytest.mark.parametrize("tree", ["empty", "not cuzk"])
def test_a_repository_that_is_not_cuzk_is_one_line_exit_2(tmp_path, capsys, tree):
    """--repo pointed at another project (or a commit of no files): one line naming the commit, before any worker."""
    import subprocess
    from cuzk.cli import main
    d = tmp_path / "other"
    run = lambda *a: subprocess.run(["git", *a], cwd=d, check=True, capture_output=True)
    d.mkdir()
    run("init", "-q")
    if tree == "not cuzk":
        (d / "README").write_text("another project\n")
        run("add", "README")
    run("-c", "user.email=a@b", "-c", "user.name=a", "commit", "-q", "--allow-empty", "-m", "x")
    cfg = tmp_path / "gate.toml"
    cfg.write_text('[gate]\nrounds = 8\n[[workload]]\nbackend = "cpu"\nlog_size = 8\n')
    assert main(["gate", "--repo", str(d), "--base", "HEAD", "--head", "HEAD", "--config", str(cfg),
                 "--cpu-only"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    want = "no files to measure" if tree == "empty" else "holds no cuzk package"
    assert len(err) == 1 and want in err[0] and str(d) in err[0], err


class _Joules(SampleGuard):
    """The gate's guard over a stand-in GPU whose energy counter moves by `joules` a second of the sample just
    taken (the scripted worker's last value)."""

    def __init__(self, spawn, joules, policy, own):
        super().__init__(nvml.Nvml(FakeNvml()), policy, own)
        self.spawn, self.joules = spawn, joules

    def finish(self, before):
        self.nvml.N.state["energy_mj"] += round(self.spawn.last * self.joules * 1000)
        return super().finish(before)


def _energy_gate(repo, monkeypatch, spawn, joules):
    d, base, head = repo
    monkeypatch.setattr(gate, "open_guard", lambda what, policy, own: _Joules(spawn, joules, policy, own))
    return gate.run(d, base, head, _cfg([{"backend": "cuda", "log_size": 16}]), spawn=spawn, log=lambda m: None,
                    gpu_status=lambda: (True, "a pretend GPU"))


def test_report_shows_energy_per_call_when_nvml_counts_it(repo, monkeypatch):
    res = _energy_gate(repo, monkeypatch, FakeSpawn({"b_g2": 2.0}), 300.0)
    rd = res.outcomes[0].rounds[0]
    assert [x["sm_clock_mhz"] for x in rd["head"]["areas"]["b_g2"]["states"]] == [1980] * 3   # kept in gate.json
    line = next(l for l in report.markdown(res).splitlines() if l.startswith("Energy per call"))
    b, h = map(float, re.search(r"`b_g2` ([\d.]+) J → ([\d.]+) J", line).groups())
    assert b == pytest.approx(300, rel=0.02) and h == pytest.approx(600, rel=0.02)


def test_energy_is_shown_only_where_the_counter_moved(repo, monkeypatch):
    """A phase shorter than NVML's energy counter's resolution reads mostly 0 J: left out and named, never
    shown as "0 J -> 0 J"."""
    res = _energy_gate(repo, monkeypatch, FakeSpawn(), 300.0)
    oc = res.outcomes[0]
    for rd in oc.rounds:                 # tail_msm's counter ticks in one sample of three: too short
        for s in ("base", "head"):
            e = rd[s]["areas"]["tail_msm"]["energy_j"]
            rd[s]["areas"]["tail_msm"]["energy_j"] = [0.0, 0.0, e[0]]
    shown = report.energy_per_call(oc)
    assert "tail_msm" not in shown and "b_g2" in shown
    line = next(l for l in report.markdown(res).splitlines() if l.startswith("Energy per call"))
    assert "`tail_msm`" not in line and "shorter than the counter's resolution: tail_msm" in line


def test_rounds_override_is_validated_like_the_file(repo, capsys):
    from cuzk.cli import main
    d, base, head = repo
    for n, said in (("3", "could never fire"), ("0", "rounds must be an integer in 2..")):
        assert main(["gate", "--repo", str(d), "--base", base, "--head", head, "--rounds", n]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and f"--rounds {n}: " in err[0] and said in err[0], err     # the option named


def test_worker_cpus_are_the_last_allowed_and_shared():
    assert gate.worker_cpus(2, {0, 1, 2, 3, 7}) == (3, 7)
    assert gate.worker_cpus(8, {0, 1}) == (0, 1)
    assert gate.worker_cpus(0, {0, 1, 2}) is None
    cfg = gate_config.parse({"gate": {"worker_cpus": 0}, "workload": [{"backend": "cpu", "log_size": 8}]})
    assert cfg.worker_cpus == 0
    assert gate_config.parse({"workload": [{"backend": "cpu", "log_size": 8}]}).worker_cpus == 1
    with pytest.raises(ConfigError, match="worker_cpus"):
        gate_config.parse({"gate": {"worker_cpus": -1}, "workload": [{"backend": "cpu", "log_size": 8}]})


@pytest.mark.skipif(not hasattr(__import__("os"), "sched_getaffinity"), reason="no CPU affinity here")
def test_a_worker_process_runs_on_the_cpus_it_was_given():
    """Pinned by the gate's own launcher, before the commit's code is imported, so a base commit that
    knows nothing of pinning is pinned all the same; the set-up reply still comes."""
    import os
    repo = Path(__file__).resolve().parents[2]
    cpus = gate.worker_cpus(1)
    cfg = gate_config.parse({"workload": [{"backend": "cpu", "log_size": 8}]})
    w = gate.WorkerProcess(repo, 120, cpus)
    try:
        rep = w.ask(gate._request(cfg, cfg.workloads[0], repo, None))
        assert rep["status"] == "ready", rep
        assert os.sched_getaffinity(w.pid) == set(cpus)
        assert rep["cuzk_file"].startswith(str(repo))
    finally:
        w.close()


def test_gpu_workers_set_up_wide_and_sample_narrow(repo):
    """After the first round, a GPU workload's two workers set up together on every CPU the gate may use,
    and both are moved to the sampling CPUs once both are ready, before any sample; round 1 (which
    calibrates the calls per sample) and host-timed workloads are pinned from the start, and round 1's
    GPU workers are narrowed too (the sampling thread to a CPU of its own)."""
    d, base, head = repo
    s = FakeSpawn()
    res = gate.run(d, base, head, _cfg([{"backend": "cpu", "log_size": 8}, {"backend": "cuda", "log_size": 16}]),
                   spawn=s, log=lambda m: None, gpu_status=lambda: (True, "a pretend GPU"))
    assert res.exit_code == gate.EXIT_OK
    # per round: cpu's two workers, then cuda's two
    assert s.wide == [False, False, False, False] + [False, False, True, True] * 7
    narrowed = [i for i, a in enumerate(s.asks) if a[1] == "narrow"]
    assert len(narrowed) == 16              # every GPU round, the first too (its sampling thread alone)
    for i in narrowed[::2]:                 # both set up, then both narrowed, then the first sample
        assert [a[1] for a in s.asks[i - 2:i + 2]] == ["setup", "setup", "narrow", "narrow"]
        assert s.asks[i + 2][1] in PHASES


class _Logged(SampleGuard):
    """The gate's guard over a stand-in GPU, its reads logged beside the workers' stops and requests."""

    def __init__(self, log, fake, policy, own):
        super().__init__(nvml.Nvml(fake), policy, own)
        self.log, self.fake = log, fake

    def start(self):
        self.log.append(("guard", "start"))
        return super().start()

    def finish(self, before):
        self.fake.state["energy_mj"] += 30        # 0.03 J a sample
        self.log.append(("guard", "finish"))
        return super().finish(before)


class _Stoppable(FakeSpawn):
    """Workers that log their stops, continues and requests (the gate's order of them is what is tested)."""

    def __init__(self, log, **kw):
        super().__init__(**kw)
        self.log = log

    def __call__(self, root, timeout, setup_wide=False):
        w = super().__call__(root, timeout, setup_wide)
        w.freeze = lambda: self.log.append((w.side, "stop")) or True
        w.thaw = lambda: self.log.append((w.side, "continue"))
        ask = w.ask
        w.ask = lambda msg: (self.log.append((w.side, "sample")) if "sample" in msg else None) or ask(msg)
        return w


def _gpu_gate(repo, fake, log=None, trust=None, spawn=None):
    d, base, head = repo
    cfg = gate_config.parse({"gate": {"rounds": 8, "samples": 3}, "trust": {"pause_s": 0, **(trust or {})},
                             "workload": [{"backend": "cuda", "log_size": 16, "phases": ["tail_msm", "b_g2"]}]})
    log = [] if log is None else log
    guards = []

    def open_guard(what, policy, own):
        guards.append(_Logged(log, fake, policy, own))
        return guards[-1]
    gate.open_guard, saved = open_guard, gate.open_guard
    try:
        res = gate.run(d, base, head, cfg, spawn=spawn or _Stoppable(log), log=lambda m: None,
                       gpu_status=lambda: (True, "a pretend GPU"))
    finally:
        gate.open_guard = saved
    return res, log, guards


def test_the_gate_reads_nvml_between_gpu_samples_with_the_side_stopped(repo):
    """A GPU sample's NVML guard is the gate's: read while the side is stopped, then the side continued, asked,
    and stopped again before the reads after it. So the round trip the gate times holds the sample alone (the
    head's code runs in its worker, and a guard read there would be time it reports), and the side runs nothing
    outside it. Energy per call and the GPU's state come from the gate's reads."""
    res, log, guards = _gpu_gate(repo, FakeNvml(pids=[]))
    assert res.exit_code == gate.EXIT_OK and res.outcomes[0].guard_by == "gate", res.outcomes[0].message
    assert len(guards) == 8 and all(len(g.own_pids) == 2 for g in guards)     # a guard a round, its two workers
    samples = [i for i, e in enumerate(log) if e[1] == "sample"]
    assert len(samples) == 8 * 3 * 2 * 2
    first = log.index(("guard", "start"))               # both stopped before the round's first sample
    assert log[:first] == [("base", "stop"), ("head", "stop"), ("head", "stop")]    # then the rival's, as always
    for i in samples:
        side = log[i][0]
        assert log[i - 2:i] == [("guard", "start"), (side, "continue")], log[i - 4:i + 3]
        assert log[i + 1:i + 3] == [(side, "stop"), ("guard", "finish")], log[i - 4:i + 3]
    rd = res.outcomes[0].rounds[0]
    ar = rd["base"]["areas"]["tail_msm"]
    assert ar["energy_j"] == [pytest.approx(0.03)] * 3 and ar["states"][0]["sm_clock_mhz"] == 1980
    assert len(ar["guard_s"]) == 3 and all(x >= 0 for x in ar["guard_s"])
    assert res.as_dict()["outcomes"][0]["guard_by"] == "gate"
    assert gate.from_dict(json.loads(json.dumps(res.as_dict()))).outcomes[0].guard_by == "gate"


def test_a_gpu_worker_that_runs_between_its_round_trips_is_untrusted(repo):
    """Between a side's reply and its next request the gate reads NVML (milliseconds) with the side stopped; a
    process of either side that continues it there gives it time no clock reads. The gate compares the side's CPU
    from its stop to just before it continues it: any of it is untrusted. Here the head's worker runs 2 ms while
    the gate reads NVML after its second sample, and stops again before the base's sample."""
    log, cpu = [], {"base": 0.0, "head": 0.0}

    class Counted(_Stoppable):
        def __call__(self, root, timeout, setup_wide=False):
            w = super().__call__(root, timeout, setup_wide)
            w.usage = lambda: gate.Usage(cpu[w.side], frozenset({w.pid}), 0)
            return w

    class Fake(FakeNvml):
        def nvmlDeviceGetTotalEnergyConsumption(self, h):     # read last of the guard's reads after a sample
            heads = sum(1 for e in log if e == ("head", "sample"))
            if heads == 2 and log[-2:] == [("head", "stop"), ("guard", "finish")]:
                cpu["head"] += 0.002
            return super().nvmlDeviceGetTotalEnergyConsumption(h)
    res, _, _ = _gpu_gate(repo, Fake(pids=[]), log=log, spawn=Counted(log))
    (oc,) = res.outcomes
    assert res.exit_code == 2 and oc.status == "untrusted", oc.message
    assert "the head worker" in oc.message and "ran 2.000 ms of CPU" in oc.message and \
        "between its round trips" in oc.message, oc.message
    cpu["head"] = 0.0
    log.clear()
    assert _gpu_gate(repo, FakeNvml(pids=[]), log=log, spawn=Counted(log))[0].exit_code == gate.EXIT_OK


def test_a_worker_that_sets_up_other_calls_per_sample_than_given_is_untrusted(repo):
    """Both sides time the calls per sample the gate's first worker calibrated; the head's worker says which it
    set up (the head's code runs there), and one that says otherwise is untrusted, never divided by."""
    d, base, head = repo

    class Liar(FakeSpawn):
        def __call__(self, root, timeout, setup_wide=False):
            w = super().__call__(root, timeout, setup_wide)
            if w.side == "head":
                ask = w.ask
                w.ask = lambda msg: ({**r, "numbers": {a: 0 for a in r["numbers"]}}
                                     if isinstance(r := ask(msg), dict) and r.get("status") == "ready" else r)
            return w
    res = gate.run(d, base, head, _cfg(), spawn=Liar(), log=lambda m: None)
    assert res.exit_code == 2 and res.outcomes[0].status == "untrusted", res.outcomes[0].message
    assert "calls per sample, not the" in res.outcomes[0].message


def test_a_sample_the_gates_guard_rejects_is_taken_again_and_too_many_are_untrusted(repo):
    class Throttled(FakeNvml):
        """Power-capped at the reads after every fifth sample."""

        def __init__(self, every):
            super().__init__(pids=[])
            self.every, self.n = every, 0

        def nvmlDeviceGetCurrentClocksEventReasons(self, h):
            self.n += 1
            return 0x4 if self.every and self.n % (2 * self.every) == 0 else 0x1
    res, log, _ = _gpu_gate(repo, Throttled(5))
    (oc,) = res.outcomes
    assert res.exit_code == gate.EXIT_OK and oc.discards > 0, oc.message
    for rd in oc.rounds:
        for s in ("base", "head"):
            for ar in rd[s]["areas"].values():      # a rejected sample leaves nothing behind
                assert all(len(ar[k]) == 3 for k, v in ar.items() if isinstance(v, list)
                           and k != "rejected_device_wait_us"), ar
    kept = sum(len(rd[s]["discards"]) for rd in oc.rounds for s in ("base", "head"))
    assert kept == oc.discards and all("sw_power_cap" in x for rd in oc.rounds for s in ("base", "head")
                                       for x in rd[s]["discards"])
    res, _, _ = _gpu_gate(repo, Throttled(1))         # every sample: past max_discards (3)
    (oc,) = res.outcomes
    assert res.exit_code == 2 and oc.status == "untrusted" and "4 of base's samples rejected" in oc.message, \
        oc.message
    assert "sw_power_cap" in oc.message


class _CapsHead(FakeNvml):
    """Power-capped at the reads after the head's samples whose number (1, 2, ... over the gate) is chosen:
    what a head that trips the guard after a slow sample of its own would do."""

    def __init__(self, log, chosen):
        super().__init__(pids=[])
        self.log, self.chosen, self.heads = log, chosen, 0

    def nvmlDeviceGetCurrentClocksEventReasons(self, h):
        if self.log and self.log[-1] == ("guard", "finish"):
            side = next(e[0] for e in reversed(self.log) if e[1] == "sample")
            if side == "head":
                self.heads += 1
                return 0x4 if self.chosen(self.heads) else 0x1
        return 0x1


def test_a_rejected_sample_takes_its_pair_again_and_rejections_on_one_side_are_untrusted(repo):
    """A head that trips the guard after a slow sample of its own gets that sample taken again: a choice of which
    of its samples count. So the pair is taken again (the base's sample beside it is dropped too), and a round whose
    rejections fall on one side more than `max_discards_apart` is untrusted."""
    log: list = []
    # each round's first head sample (a round takes 2 phases x 3 pairs, 7 head samples with the retake)
    res, _, _ = _gpu_gate(repo, _CapsHead(log, lambda n: (n - 1) % 7 == 0), log=log)
    (oc,) = res.outcomes
    assert res.exit_code == gate.EXIT_OK and oc.discards == 8, oc.message
    samples = [e[0] for e in log if e[1] == "sample"]
    # round 1: base first, so the base's sample beside the rejected one is taken again; round 2: the head first
    assert samples[:4] == ["base", "head", "base", "head"], samples[:6]
    assert samples[14:17] == ["head", "head", "base"], samples[12:18]
    for rd in oc.rounds:
        assert len(rd["head"]["discards"]) == 1 and rd["base"]["discards"] == []
        for s in ("base", "head"):
            for ar in rd[s]["areas"].values():      # the pair's samples left nothing behind, on either side
                assert all(len(ar[k]) == 3 for k, v in ar.items() if isinstance(v, list)
                           and k != "rejected_device_wait_us"), ar
    log.clear()
    res, _, _ = _gpu_gate(repo, _CapsHead(log, lambda n: n <= 2), log=log)
    (oc,) = res.outcomes
    assert res.exit_code == 2 and oc.status == "untrusted", oc.message
    assert "round 1" in oc.message and "rejected 2 of the head's samples and 0 of the base's" in oc.message
    assert "sw_power_cap" in oc.message
    log.clear()        # allowed by the config's own key
    res, _, _ = _gpu_gate(repo, _CapsHead(log, lambda n: n <= 2), log=log, trust={"max_discards_apart": 2})
    assert res.exit_code == gate.EXIT_OK, res.outcomes[0].message


class _BalancedTrips(_Stoppable):
    """A head that knows the gate's order (it is fixed) and picks its samples: the first try at pairs 0 and 1 of
    each phase is slow (1.5 s; a retake 1.0 s). After a slow sample it leaves power-burning GPU work: second in its
    pair, its own guard read sees the power cap; first, the work runs into the base's sample, whose probe waits
    5000 us behind it and whose read sees the cap. Rejections fall on both sides alike, and each slow sample's pair
    is taken again."""

    def __init__(self, log, attack=True):
        super().__init__(log)
        self.attack, self.trace, self.tried = attack, [], set()

    def __call__(self, root, timeout, setup_wide=False):
        w = super().__call__(root, timeout, setup_wide)
        inner = w.ask

        def ask(msg):
            rep = inner(msg)
            if "sample" not in msg or rep.get("status") != "ok":
                return rep
            f = sys._getframe()
            while f.f_code.co_name != "_round":             # where the gate is: the order the head can know
                f = f.f_back
            g = f.f_locals
            head_first = g["pair"][0] == "head"
            if w.side == "head":
                key = (g["r"], g["a"], g["i"])
                slow = key not in self.tried and g["i"] in (0, 1)
                self.tried.add(key)
                self.trace.append(("head", slow, head_first))
                return {**rep, "value": 1.5 if slow else 1.0, "device_wait_us": 20.0}
            prev = self.trace[-1] if self.trace else None
            behind = self.attack and prev is not None and prev[0] == "head" and prev[1] and g["at"] == 1
            self.trace.append(("base", behind, head_first))
            return {**rep, "value": 1.0, "device_wait_us": 5000.0 if behind else 20.0}
        w.ask = ask
        return w


class _TripNvml(FakeNvml):
    def __init__(self, spawn):
        super().__init__(pids=[])
        self.spawn = spawn

    def nvmlDeviceGetCurrentClocksEventReasons(self, h):
        log, trace = self.spawn.log, self.spawn.trace
        if self.spawn.attack and log and log[-1] == ("guard", "finish") and trace:
            side, flag, head_first = trace[-1]
            if flag and (side == "base" or not head_first):
                return 0x4          # sw_power_cap
        return 0x1


def test_a_head_that_trips_the_guard_on_both_sides_to_choose_its_samples_is_untrusted(repo):
    """Balanced rejections pass max_discards_apart, and a rejected pair's samples leave gate.json: the base's
    probes that waited behind the head's left-over work are kept apart (rejected_device_wait_us) and judged, so
    the head that hid a 1.5x regression this way is untrusted, not a pass."""
    log: list = []
    honest = _BalancedTrips(log, attack=False)
    res, _, _ = _gpu_gate(repo, _TripNvml(honest), log=log, spawn=honest)
    assert res.exit_code == gate.EXIT_REGRESSION, res.outcomes[0].message
    log.clear()
    sp = _BalancedTrips(log)
    res, _, _ = _gpu_gate(repo, _TripNvml(sp), log=log, spawn=sp)
    (oc,) = res.outcomes
    assert res.exit_code == 2 and oc.status == "untrusted", (oc.message, [c.verdict for c in oc.comparisons])
    assert "base's device probes waited more than 300 us" in oc.message and "rejected by the guard" in oc.message
    kept = [x for rd in oc.rounds for x in rd["base"]["areas"]["tail_msm"]["rejected_device_wait_us"]]
    assert kept and max(kept) == 5000.0
    for rd in oc.rounds:
        assert len(rd["head"]["discards"]) == len(rd["base"]["discards"]) >= 1      # balanced: apart 0
    assert gate.from_dict(json.loads(json.dumps(res.as_dict()))).exit_code == 2


def test_the_device_probes_of_each_gpu_sample_reach_gate_json_and_are_judged(repo):
    """Each GPU sample's device_wait_us (the worker's probes around it) is kept beside the sample; a side whose
    probes waited behind another context's work beside many samples is untrusted (exit 2)."""
    res, _, _ = _gpu_gate(repo, FakeNvml(pids=[]), spawn=FakeSpawn(device_wait=lambda side, n: 20.0 + n % 7))
    (oc,) = res.outcomes
    assert res.exit_code == gate.EXIT_OK, oc.message
    ar = oc.rounds[0]["base"]["areas"]["tail_msm"]
    assert len(ar["device_wait_us"]) == 3 and all(20 <= x <= 26 for x in ar["device_wait_us"])
    assert gate.from_dict(json.loads(json.dumps(res.as_dict()))).exit_code == gate.EXIT_OK
    # the head's kernels left running past each reply: the base's probes wait for their time slices
    left = FakeSpawn(device_wait=lambda side, n: 1500.0 if side == "base" else 20.0)
    res, _, _ = _gpu_gate(repo, FakeNvml(pids=[]), spawn=left)
    (oc,) = res.outcomes
    assert res.exit_code == 2 and oc.status == "untrusted", oc.message
    assert "base's device probes waited more than 300 us beside 24 of its 24 samples" in oc.message
    res, _, _ = _gpu_gate(repo, FakeNvml(pids=[]), spawn=left, trust={"max_device_wait_us": 2000})
    assert res.exit_code == gate.EXIT_OK, res.outcomes[0].message


def test_a_gpu_workload_without_nvml_for_the_gate_is_untrusted(repo, monkeypatch):
    from cuzk.perf import sampler
    monkeypatch.setattr(sampler, "_NVML", {"dev": None})
    monkeypatch.setattr(gate, "open_guard", gate.nvml_guard)
    d, base, head = repo
    res = gate.run(d, base, head, _cfg([{"backend": "cuda", "log_size": 16}]), spawn=FakeSpawn(),
                   log=lambda m: None, gpu_status=lambda: (True, "a pretend GPU"))
    assert res.exit_code == 2 and res.outcomes[0].status == "untrusted"
    assert "NVML is unavailable" in res.outcomes[0].message


def test_session_threads_finds_every_thread_of_the_session(tmp_path):
    """A worker's threads and its children's are found by session; another session's are not."""
    import subprocess
    import sys
    import time
    script = ("import os, subprocess, sys, threading, time\n"
              "threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n"
              "c = subprocess.Popen([sys.executable, '-c', 'import threading, time; "
              "threading.Thread(target=time.sleep, args=(60,), daemon=True).start(); print(1, flush=True); "
              "time.sleep(60)'], stdout=subprocess.PIPE)\n"
              "c.stdout.readline(); print(c.pid, flush=True); time.sleep(60)\n")
    p = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, start_new_session=True, text=True)
    try:
        child = int(p.stdout.readline())
        time.sleep(0.2)
        tids = set(gate.session_threads(p.pid))
        import os
        want = {int(t) for pid in (p.pid, child) for t in os.listdir(f"/proc/{pid}/task")}
        assert len(want) >= 4 and tids == want
        assert os.getpid() not in gate.session_threads(p.pid)
    finally:
        os.killpg(p.pid, 9)
        p.wait()


@pytest.mark.skipif(not hasattr(__import__("os"), "sched_getaffinity") or len(__import__("os").sched_getaffinity(0)) < 2,
                    reason="needs CPU affinity and two CPUs")
def test_a_worker_set_up_wide_is_narrowed_thread_by_thread():
    """A worker spawned to set up on every CPU runs there until narrow(); then every one of its threads
    (the launcher's lifeline thread too, which sched_setaffinity on the pid alone would miss) is on the
    sampling CPUs."""
    import os
    repo = Path(__file__).resolve().parents[2]
    every = tuple(sorted(os.sched_getaffinity(0)))
    cpus = gate.worker_cpus(1)
    cfg = gate_config.parse({"workload": [{"backend": "cpu", "log_size": 8}]})
    w = gate.WorkerProcess(repo, 120, cpus, setup_cpus=every)
    try:
        rep = w.ask(gate._request(cfg, cfg.workloads[0], repo, None))
        assert rep["status"] == "ready", rep
        tids = [int(t) for t in os.listdir(f"/proc/{w.pid}/task")]
        assert len(tids) >= 2
        assert all(os.sched_getaffinity(t) == set(every) for t in tids)
        w.narrow()
        assert all(os.sched_getaffinity(t) == set(cpus) for t in os.listdir(f"/proc/{w.pid}/task") for t in [int(t)])
        assert w.ask({"sample": "prep_msm"})["status"] == "ok"
    finally:
        w.close()


@pytest.mark.skipif(not hasattr(__import__("os"), "sched_getaffinity") or len(__import__("os").sched_getaffinity(0)) < 2,
                    reason="needs CPU affinity and two CPUs")
def test_the_sampling_thread_has_a_cpu_of_its_own():
    """With two sampling CPUs or more, the worker's main thread (which times the phases) is alone on the last and
    every other thread (the lifeline, the libraries') shares the rest, in both workers alike."""
    import os
    repo = Path(__file__).resolve().parents[2]
    cpus = gate.worker_cpus(2)
    cfg = gate_config.parse({"workload": [{"backend": "cpu", "log_size": 8}]})
    w = gate.WorkerProcess(repo, 120, cpus)
    try:
        assert w.ask(gate._request(cfg, cfg.workloads[0], repo, None))["status"] == "ready"
        w.narrow()
        tids = [int(t) for t in os.listdir(f"/proc/{w.pid}/task")]
        assert len(tids) >= 2
        assert os.sched_getaffinity(w.pid) == {cpus[-1]}
        assert all(os.sched_getaffinity(t) == set(cpus[:-1]) for t in tids if t != w.pid)
        assert w.ask({"sample": "prep_msm"})["status"] == "ok"
    finally:
        w.close()


class SendingWorker(FakeWorker):
    """A FakeWorker that records when a request is sent, apart from when its reply is read."""

    def send(self, msg):
        self.parent.asks.append((self.side, "sent " + ("setup" if "protocol" in msg else "other")))
        super().send(msg)


class SendingSpawn(FakeSpawn):
    def __call__(self, root, timeout, setup_wide=False):
        side = Path(root).name
        self.spawned.append(side)
        return SendingWorker(self, side, None)


def test_both_workers_set_up_at_once(repo):
    """Both set-up requests go out before either reply is read; the samples still alternate one by one."""
    d, base, head = repo
    s = SendingSpawn()
    res = gate.run(d, base, head, _cfg([{"backend": "cuda", "log_size": 16}]), spawn=s, log=lambda m: None,
                   gpu_status=lambda: (True, "fake"))
    assert res.exit_code == gate.EXIT_OK
    # round 1 calibrates once, one after the other; later rounds set up both at once, given those numbers
    assert s.asks[:4] == [("base", "sent setup"), ("base", "setup"), ("head", "sent setup"), ("head", "setup")]
    r2 = s.asks.index(("head", "sent setup"), 4)
    assert s.asks[r2:r2 + 4] == [("head", "sent setup"), ("base", "sent setup"), ("head", "setup"), ("base", "setup")]
    samples = [a for a in s.asks if "setup" not in a[1] and a[1] != "narrow"]
    assert samples[:2] == [("base", PHASES[0]), ("head", PHASES[0])]
    # host-timed workloads calibrate their calls per sample while setting up: one after the other
    s = SendingSpawn()
    gate.run(d, base, head, _cfg(), spawn=s, log=lambda m: None)
    assert s.asks[:4] == [("base", "sent setup"), ("base", "setup"), ("head", "sent setup"), ("head", "setup")]


def test_every_worker_is_given_the_first_ones_calls_per_sample(repo):
    """Like with like: the first worker calibrates, every later one (either side, every round) is given that."""
    d, base, head = repo
    s = FakeSpawn()
    sent = []
    real = gate._request
    try:
        gate._request = lambda *a, **k: sent.append(real(*a, **k)) or sent[-1]
        res = gate.run(d, base, head, _cfg(), spawn=s, log=lambda m: None)
    finally:
        gate._request = real
    assert res.exit_code == gate.EXIT_OK
    assert sent[0]["numbers"] is None and len(sent) == 16
    assert all(r["numbers"] == {a: 1 for a in PHASES} for r in sent[1:])
    assert not report.calls_per_sample_differ(res.outcomes[0])


def test_a_workload_may_gate_its_own_phases(repo):
    """A PoRep-size workload leaves out synthesis (seconds a sample on the host, gated at the small size):
    its workers are asked for its phases only, and the report and gate.json say which."""
    d, base, head = repo
    cfg = _cfg([{"backend": "cpu", "log_size": 8},
                {"backend": "cpu", "log_size": 10, "phases": ["tail_msm", "b_g2"]}])
    assert cfg.workloads[1].phases == ("tail_msm", "b_g2") and cfg.workloads[0].phases is None
    s = FakeSpawn({"tail_msm": 1.3})
    res = gate.run(d, base, head, cfg, spawn=s, log=lambda m: None)
    assert res.exit_code == gate.EXIT_REGRESSION
    small, big = res.outcomes
    assert [c.area for c in small.comparisons] == list(PHASES)
    assert [c.area for c in big.comparisons] == ["tail_msm", "b_g2"]
    again = gate.from_dict(json.loads(json.dumps(res.as_dict())))
    assert [c.area for c in again.outcomes[1].comparisons] == ["tail_msm", "b_g2"]
    assert "2^10 opts=default (tail_msm, b_g2)" in report._workloads(res)
    with pytest.raises(ConfigError, match="phases: unknown"):
        _cfg([{"backend": "cpu", "log_size": 8, "phases": ["nope"]}])


# --- a worker that hangs: killed at the timeout, the phase named, the report still written ---

HANGING_WORKER = r'''
import json, os, sys, time
hang = HANG
requests, replies = os.fdopen(int(sys.argv[1])), os.fdopen(int(sys.argv[2]), "w")
for line in requests:
    msg = json.loads(line)
    if "protocol" in msg:
        reply = {"status": "ready", "numbers": {a: 1 for a in msg["areas"]}, "gpu": None, "cuzk_file": "x"}
    elif "sample" in msg:
        if msg["sample"] == hang:
            print("worker: entering", hang, file=sys.stderr, flush=True)
            time.sleep(3600)
        reply = {"status": "ok", "value": 1.0, "energy_j": None, "state": None}
    else:
        reply = {"status": "done", "discards": [], "peak_device_bytes": {}}
    replies.write(json.dumps({**reply, "id": msg["id"]}) + "\n")
    replies.flush()
'''


class _HangTimed(gate.WorkerProcess):
    """WorkerProcess given the config's timeout for its samples of the phase it hangs in only; every other reply
    (its start-up's above all: a Python started beside other tests may take seconds) is waited for REPLY_S."""
    REPLY_S = 60.0

    def __init__(self, root, timeout, phase, **kw):
        super().__init__(root, self.REPLY_S, **kw)
        self.phase_timeout, self.phase = timeout, phase

    def send(self, msg):
        self.timeout = self.phase_timeout if msg.get("sample") == self.phase else self.REPLY_S
        super().send(msg)


class HangingSpawn:
    """Real worker processes (WorkerProcess, its pipes and timeout) from a stand-in commit root whose
    cuzk.perf.worker is a script that answers at once, except head's in one phase, where it hangs."""

    def __init__(self, phase: str, where: Path):
        self.phase, self.where, self.workers, self.log = phase, where, [], []

    def __call__(self, root, timeout, setup_wide=False):
        side = Path(root).name
        fake = self.where / side
        (fake / "cuzk" / "perf").mkdir(parents=True, exist_ok=True)
        (fake / "cuzk" / "__init__.py").write_text("")
        (fake / "cuzk" / "perf" / "__init__.py").write_text("")
        hang = self.phase if side == "head" else "-"
        (fake / "cuzk" / "perf" / "worker.py").write_text(HANGING_WORKER.replace("HANG", repr(hang)))
        w = _HangTimed(fake, timeout, hang, log=self.log.append)
        self.workers.append(w)
        return w


def test_hung_worker_is_killed_and_the_phase_named(repo, tmp_path):
    d, base, head = repo
    spawn = HangingSpawn("tail_msm", tmp_path)
    res = gate.run(d, base, head, _cfg(worker_timeout_s=2), spawn=spawn, log=lambda m: None)
    assert res.exit_code == gate.EXIT_ERROR
    oc = res.outcomes[0]
    assert oc.status == "error"
    assert "head" in oc.message and "round 1" in oc.message and "hung in phase tail_msm" in oc.message, oc.message
    assert "timed out after 2 s" in oc.message
    # what the worker printed is in the gate's log, not in the report
    assert "worker: entering tail_msm" not in oc.message and "worker: entering tail_msm" in "\n".join(spawn.log)
    assert all(w.p.poll() is not None for w in spawn.workers)          # none left running
    md = report.markdown(res)
    assert "tail_msm" in md and "never a pass" in md
    json.dumps(res.as_dict())


def test_hung_worker_gate_cli_writes_report_and_json(repo, tmp_path, monkeypatch, capsys):
    from cuzk.cli import main
    d, base, head = repo
    real = gate.run
    monkeypatch.setattr(gate, "run", lambda *a, **k: real(*a, **k, spawn=HangingSpawn("b_g2", tmp_path / "fake"),
                                                             log=lambda m: None))
    cfg = tmp_path / "gate.toml"
    cfg.write_text('[gate]\nrounds = 8\nsamples = 2\nworker_timeout_s = 2\n\n'
                   '[[workload]]\nbackend = "cpu"\ncircuit = "porep_like"\nlog_size = 8\nopts = "default"\n')
    out = tmp_path / "out"
    rc = main(["gate", "--repo", str(d), "--base", base, "--head", head, "--config", str(cfg), "--out", str(out)])
    assert rc == 2
    assert "hung in phase b_g2" in (out / "report.md").read_text()
    doc = json.loads((out / "gate.json").read_text())
    assert doc["exit_code"] == 2 and "hung in phase b_g2" in doc["outcomes"][0]["message"]


@pytest.mark.parametrize("how", ["error", "killed"])
def test_an_earlier_runs_files_are_gone_before_the_first_sample(tmp_path, monkeypatch, capsys, how):
    """A gate that fails before its verdict, or is killed mid-run, leaves no earlier run's gate.json in a reused
    --out to be read (by --from-json, --comment or a workflow's upload) as its own."""
    from cuzk.cli import main
    out = tmp_path / "out"
    out.mkdir()
    for n in ("gate.json", "report.md"):
        (out / n).write_text("an earlier run's PASS\n")
    (out / "notes.txt").write_text("the user's own\n")

    def run(*a, on_start=None, **kw):
        on_start()
        assert not (out / "gate.json").exists() and not (out / "report.md").exists()
        if how == "killed":
            raise KeyboardInterrupt         # stands for the process ending here, whatever ends it
        raise RuntimeError("worker failed to start")

    monkeypatch.setattr(gate, "run", run)
    argv = ["gate", "--repo", str(REPO), "--base", "HEAD", "--head", "HEAD", "--cpu-only", "--out", str(out)]
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == (130 if how == "killed" else 2), err
    assert ("interrupted" if how == "killed" else "worker failed to start") in err
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]


def test_an_earlier_runs_file_behind_a_link_goes_and_the_link_and_a_fifo_stay(tmp_path, monkeypatch, capsys):
    """--out's files are removed as the output rule writes them: a link's target (the link stays, for this run's
    file to land through it), a FIFO left for its reader; neither the link nor the FIFO is removed."""
    from cuzk.cli import main
    out, shared = tmp_path / "out", tmp_path / "shared"
    out.mkdir()
    shared.mkdir()
    (shared / "gate.json").write_text("an earlier run's PASS\n")
    (out / "gate.json").symlink_to(shared / "gate.json")
    os.mkfifo(out / "report.md")

    def run(*a, on_start=None, **kw):
        on_start()
        raise RuntimeError("worker failed to start")
    monkeypatch.setattr(gate, "run", run)
    argv = ["gate", "--repo", str(REPO), "--base", "HEAD", "--head", "HEAD", "--cpu-only", "--out", str(out)]
    assert main(argv) == 2, capsys.readouterr().err
    assert not (shared / "gate.json").exists()
    assert (out / "gate.json").is_symlink() and stat.S_ISFIFO((out / "report.md").lstat().st_mode)


def test_a_bad_ref_leaves_an_earlier_runs_files_alone(tmp_path, capsys):
    """Nothing is removed before the run's inputs are judged: a typo costs no earlier result."""
    from cuzk.cli import main
    out = tmp_path / "out"
    out.mkdir()
    (out / "gate.json").write_text("{}\n")
    argv = ["gate", "--repo", str(REPO), "--base", "no-such-ref", "--head", "HEAD", "--cpu-only", "--out", str(out)]
    assert main(argv) == 2
    assert (out / "gate.json").read_text() == "{}\n"


def test_a_dirty_tree_leaves_an_earlier_runs_files_alone(tmp_path, monkeypatch, capsys):
    """Uncommitted changes are refused before any sample, and before the earlier run's files are removed: the
    refusal measures nothing, so it costs no earlier result."""
    from cuzk.cli import main
    out = tmp_path / "out"
    out.mkdir()
    (out / "gate.json").write_text("{}\n")
    monkeypatch.setattr(gate.checkout, "dirty_files", lambda repo: ["cuzk/msm.py"])
    argv = ["gate", "--repo", str(REPO), "--base", "HEAD", "--head", "HEAD", "--cpu-only", "--out", str(out)]
    assert main(argv) == 2
    assert "uncommitted changes" in capsys.readouterr().err
    assert (out / "gate.json").read_text() == "{}\n"


def test_default_worker_timeout_fits_the_workload():
    small = gate_config.default_worker_timeout_s(gate_config.Spec(backend="cpu", log_size=10))
    part = gate_config.default_worker_timeout_s(gate_config.Spec(backend="cuda", circuit="porep_partition",
                                                                 log_size=24))
    big_cpu = gate_config.default_worker_timeout_s(gate_config.Spec(backend="cpu", log_size=16))
    assert small == gate_config.MIN_TIMEOUT_S < part
    assert small < big_cpu
    cfg = _cfg([{"backend": "cpu", "log_size": 10}])
    assert cfg.worker_timeout_s is None and cfg.timeout_for(cfg.workloads[0]) == small
    assert _cfg(worker_timeout_s=5).timeout_for(cfg.workloads[0]) == 5
    with pytest.raises(ConfigError, match="worker_timeout_s"):
        _cfg(worker_timeout_s=0)


def test_a_base_harness_that_samples_otherwise_than_the_config_is_an_error(repo):
    """The workers run the base's harness: one from before min_device_sample_s takes one call a device sample
    whatever the config says, and thresholds derived for the config's sampling would not fit; the GPU workload
    is an error (exit 2) naming the setting, never judged. A CPU workload's samples do not depend on it."""
    d, base, head = repo
    GPU = lambda: (True, "a pretend GPU")                  # noqa: E731
    old = {("base", "*"): "old harness", ("head", "*"): "old harness"}
    cuda = [{"backend": "cuda", "log_size": 16}]
    res = gate.run(d, base, head, _cfg(cuda, min_device_sample_s=0.03), spawn=FakeSpawn(fail=old), log=lambda m: None, gpu_status=GPU)
    assert res.exit_code == gate.EXIT_ERROR and res.outcomes[0].status == "error"
    assert "min_device_sample_s = 0.0, not the config's 0.03" in res.outcomes[0].message
    assert gate.run(d, base, head, _cfg(cuda, min_device_sample_s=0.03), spawn=FakeSpawn(),
                    log=lambda m: None, gpu_status=GPU).exit_code == gate.EXIT_OK
    assert gate.run(d, base, head, _cfg(cuda), spawn=FakeSpawn(fail=old), log=lambda m: None, gpu_status=GPU).exit_code == gate.EXIT_OK
    assert gate.run(d, base, head, _cfg(min_device_sample_s=0.03), spawn=FakeSpawn(fail=old),
                    log=lambda m: None, gpu_status=GPU).exit_code == gate.EXIT_OK


def test_a_worker_that_started_a_process_while_sampling_makes_the_round_untrusted(repo):
    """The per-sample idle check reads the processes a worker had at its first sample; one started since (a
    child the measured code left running) is named at the round's end and the run is untrusted."""
    d, base, head = repo

    class Spawner(FakeSpawn):
        def __call__(self, root, timeout, setup_wide=False):
            w = super().__call__(root, timeout, setup_wide)
            if w.side == "head":
                w.new_processes = lambda: [4242]
            return w
    res = gate.run(d, base, head, _cfg(), spawn=Spawner(), log=lambda m: None)
    assert res.exit_code == 2
    assert res.outcomes[0].status == "untrusted" and "started process(es) 4242 while sampling" in res.outcomes[0].message


def test_a_count_of_device_interrupts_lost_beside_a_sample_is_untrusted(repo, monkeypatch):
    """The gate counts the device interrupts on the sampling CPU around each sample; one count that failed while
    /proc/interrupts still reads at the round's end was made to fail (root may mount over it): untrusted. A
    machine where it never reads (no count at all) is not judged on it."""
    d, base, head = repo
    reads = []

    def count(cpus, proc="/proc", fail_at=None):
        if cpus is None:
            return None
        reads.append(cpus)
        return None if len(reads) == fail_at else 1000 + len(reads)

    class Pinned(FakeSpawn):
        def __call__(self, root, timeout, setup_wide=False):
            w = super().__call__(root, timeout, setup_wide)
            w.cpus = (0,)
            return w
    monkeypatch.setattr(gate, "device_interrupt_count", count)
    res = gate.run(d, base, head, _cfg(), spawn=Pinned(), log=lambda m: None)
    assert res.exit_code == 0, res.outcomes[0].message
    assert all(k == 1 for rd in res.outcomes[0].rounds for s in ("base", "head")
               for ar in rd[s]["areas"].values() for k in ar["irqs"])
    reads.clear()
    monkeypatch.setattr(gate, "device_interrupt_count", lambda cpus, proc="/proc": count(cpus, proc, fail_at=40))
    res = gate.run(d, base, head, _cfg(), spawn=Pinned(), log=lambda m: None)
    assert res.exit_code == 2 and res.outcomes[0].status == "untrusted"
    assert "1 of the counts of device interrupts on the sampling CPU" in res.outcomes[0].message, \
        res.outcomes[0].message
    monkeypatch.setattr(gate, "device_interrupt_count", lambda cpus, proc="/proc": None)
    assert gate.run(d, base, head, _cfg(), spawn=Pinned(), log=lambda m: None).exit_code == 0


def test_the_idle_check_fails_on_a_rival_that_ran_and_passes_one_that_waited():
    fails = []

    def fail(status, message):
        fails.append((status, message))

    def u(t):
        return gate.Usage(t, frozenset({7}), 0)
    gate._check_idle(7, u(1.0), u(1.0005), "head's sample of b_g2", fail, 0.002)
    gate._check_idle(7, None, None, "x", fail, 0.002)                   # no count: nothing said
    gate._check_idle(7, u(1.0), u(1.0105), "head's sample of b_g2", fail, 0.02)      # a runner's relaxed rule
    assert not fails
    gate._check_idle(7, u(1.0), u(1.0105), "head's sample of b_g2", fail, 0.002)
    assert fails == [("untrusted", "the idle worker (pid 7) ran 10.5 ms of CPU during head's sample of b_g2: "
                                   "something it left running works beside its rival's samples")]


def test_the_idle_check_names_the_thread_that_ran():
    """Which of the idle worker's threads ran (its id and name from /proc), so a runner can tell the measured
    code's work from a driver's wake-up before it changes [trust] max_idle_cpu_ms."""
    me = threading.get_native_id()
    was = gate.Usage(1.0, frozenset({me, 99}), 0, ((me, 5_000_000), (99, 1_000)))
    now = gate.Usage(1.0105, frozenset({me, 99}), 0, ((me, 15_000_000), (99, 500_000)))
    with open(f"/proc/{me}/comm") as f:
        name = f.read().strip()
    assert gate.busiest(was, now) == (f"{me} ({name})", 10.0)
    assert gate.busiest(was, was) is None
    fails = []
    gate._check_idle(7, was, now, "head's sample of b_g2", lambda st, msg: fails.append(msg), 0.002)
    assert fails == [f"the idle worker (pid 7) ran 10.5 ms of CPU during head's sample of b_g2, 10.0 ms of it in "
                     f"thread {me} ({name}): something it left running works beside its rival's samples"]


def test_a_crafted_thread_name_cannot_break_the_message_or_the_gate():
    """The measured code names its threads as it likes: bytes that are not UTF-8, a newline, markdown. The name
    is read as bytes and kept to word characters, dots and dashes, so the gate neither stops on it nor passes
    it into a message, gate.json or the report."""
    got = {}

    def named():
        tid = threading.get_native_id()
        with open(f"/proc/self/task/{tid}/comm", "wb") as f:
            f.write(b"\xff\xfe# x`|\n")
        got["name"] = gate.thread_name(tid)
    t = threading.Thread(target=named)
    t.start()
    t.join()
    assert got["name"] == "????x??"                 # two bad bytes, "# ", x, "`|" (the newline stripped)
    assert gate.IDLE_WHERE.fullmatch(f"b_g2: 12 ({got['name']}) 3.1 ms")
    assert gate.thread_name(2**22 + 12345) == "gone"


def test_a_host_timed_workload_keeps_the_strict_idle_allowance():
    """A GPU worker's driver thread wakes beside its rival's syncs (max_idle_cpu_ms, 10 ms); a host-timed
    worker has none, so the CPU workload keeps max_idle_cpu_ms_host (2 ms): the GPU allowance is not an
    attacker's on the CPU workload."""
    cfg = gate_config.parse({"gate": {"rounds": 8}, "trust": {"max_idle_cpu_ms": 12.0},
                             "workload": [{"backend": "cpu", "circuit": "porep_like", "log_size": 10},
                                          {"backend": "cuda", "circuit": "porep_like", "log_size": 18}]})
    assert [cfg.idle_cpu_s(w) for w in cfg.workloads] == [0.002, 0.012]
    with pytest.raises(ConfigError, match="max_idle_cpu_ms_host must be in"):
        gate_config.parse({"gate": {"rounds": 8}, "trust": {"max_idle_cpu_ms_host": 2000},
                           "workload": [{"backend": "cpu"}]})


def test_an_idle_worker_whose_threads_change_or_whose_ticks_add_up_is_untrusted(repo):
    """Work in threads that come and go leaves no trace in the live threads' counters: a thread started or ended
    while idle fails the round, and so do the process-wide clock ticks (exited threads and reaped children
    included) that an idle worker gathers over a round's rival samples; both name the idle side."""
    fails = []

    gate._check_idle(7, gate.Usage(1.0, frozenset({7, 8}), 0), gate.Usage(1.0, frozenset({7, 8, 9}), 0),
                     "base's sample of b_g2", lambda st, msg: fails.append(msg), 0.002)
    assert fails and "started or ended threads during base's sample of b_g2 (1 new, 0 gone)" in fails[0]
    d, base, head = repo

    class Ticking(FakeSpawn):
        def __call__(self, root, timeout, setup_wide=False):
            w = super().__call__(root, timeout, setup_wide)
            if w.side == "head":
                n = iter(range(0, 10**6, 2))
                w.usage = lambda: gate.Usage(1.0, frozenset({1}), next(n))     # two ticks beside every base sample
            return w
    res = gate.run(d, base, head, _cfg(), spawn=Ticking(), log=lambda m: None)
    assert res.exit_code == 2 and res.outcomes[0].status == "untrusted"
    assert res.outcomes[0].message.startswith("head (") and "clock ticks" in res.outcomes[0].message

    class BaseTicking(FakeSpawn):        # each side's ticks are checked, not the last side's alone
        def __call__(self, root, timeout, setup_wide=False):
            w = super().__call__(root, timeout, setup_wide)
            if w.side == "base":
                n = iter(range(0, 10**6, 2))
                w.usage = lambda: gate.Usage(1.0, frozenset({1}), next(n))
            return w
    res = gate.run(d, base, head, _cfg(), spawn=BaseTicking(), log=lambda m: None)
    msg = res.outcomes[0].message
    assert res.exit_code == 2 and msg.startswith("base (") and "clock ticks" in msg
    assert gate.run(d, base, head, _cfg(), spawn=FakeSpawn(), log=lambda m: None).exit_code == 0


def test_a_stopped_worker_never_signals_a_pid_that_left_its_session(tmp_path):
    """freeze() and thaw() signal the worker's first processes by pid: one that ended and whose pid another
    process took (another job's) is no longer in the worker's session and is left alone."""
    import signal
    import subprocess
    import sys
    import time

    code = "import sys; sys.stdin.read()"
    worker = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, start_new_session=True)
    stranger = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, start_new_session=True)
    try:
        w = gate.WorkerProcess.__new__(gate.WorkerProcess)
        w.p, w.frozen, w._pids = worker, False, [worker.pid, stranger.pid]     # as if stranger had taken a pid
        assert w._members() == [worker.pid]
        assert w.freeze() is True
        time.sleep(0.05)
        assert not gate.running_states([worker.pid]) and gate.running_states([stranger.pid])
        w.thaw()
        time.sleep(0.05)
        assert gate.running_states([worker.pid])
    finally:
        for p in (worker, stranger):
            p.send_signal(signal.SIGKILL)
            p.wait()


def test_a_cache_entry_made_during_the_gate_is_watched_from_the_next_round(tmp_path):
    """A cache may gain files (a kernel built in round 1), but one it gained may not change later: the gate takes
    a cache again after each clean check; a closed place (a checkout) keeps its first state."""
    from cuzk.perf.disk_watch import Watched
    cache = Watched("the cubin cache", tmp_path / "c", closed=False)
    (tmp_path / "c").mkdir()
    cache.take()
    oc = gate.Outcome(_cfg().workloads[0])
    (tmp_path / "c" / "k.cubin").write_bytes(b"built in round 1")
    assert gate._disk_changed([cache], [oc], 1) is False and oc.status == "running"
    os.utime(tmp_path / "c" / "k.cubin", ns=(0, 0))          # rewritten in round 2: no longer as built
    assert gate._disk_changed([cache], [oc], 2) is True
    assert oc.status == "untrusted" and oc.message.startswith("round 2: the cubin cache changed")
    assert "k.cubin" in oc.message


def test_a_thread_is_stopped_in_t_or_under_a_tracer_and_waits_in_d(tmp_path):
    """freeze() waits for every thread to stop: T (or t, a tracer's stop) or gone counts; D, an uninterruptible
    wait in the kernel, is waited out longer than a running or sleeping thread (FREEZE_WAIT_D_S)."""
    def proc(states):
        for i, st in enumerate(states):
            d = tmp_path / "proc" / "7" / "task" / str(7 + i)
            d.mkdir(parents=True, exist_ok=True)
            (d / "stat").write_text(f"{7 + i} (py thr) {st} 1 7 7 0 -1")
        return str(tmp_path / "proc")
    assert gate.running_states([7], proc(["T", "t", "Z"])) == set()
    assert gate.running_states([7], proc(["T", "D", "S"])) == {"D", "S"}
    assert gate.running_states([8], str(tmp_path / "proc")) == set()          # gone
    assert gate.FREEZE_WAIT_D_S > gate.FREEZE_WAIT_S


@pytest.mark.parametrize("base, head, verdict", [
    ([], [], "ok"),
    (["msm/g1"], ["msm/g1"], "ok"),                                 # one compiler on both sides
    ([], ["msm/g1 [CUZK_FP_CALL=1]"], "untrusted"),                 # the head's new build left to NVRTC
    (["ntt/reg"], [], "untrusted"),
    (None, ["msm/g1"], "ok"),                                       # a side that cannot say: not judged
    ([], "msm/g1", "error"),
])
def test_a_kernel_compiled_from_source_on_one_side_only_is_untrusted(repo, base, head, verdict):
    """Like with like: a module one side compiled with NVRTC where the other loaded nvcc's cubin pits two
    compilers' code (a head's new build that the runner did not prebuild, say)."""
    d, b, h = repo
    said = {"base": base, "head": head}

    class Compiled(FakeSpawn):
        def __call__(self, root, timeout, setup_wide=False):
            w = super().__call__(root, timeout, setup_wide)
            ask = w.ask
            w.ask = lambda msg: ({**r, "compiled_here": said[w.side]}
                                 if isinstance(r := ask(msg), dict) and r.get("status") == "ready" else r)
            return w
    logged = []
    res = gate.run(d, b, h, _cfg(), spawn=Compiled(), log=logged.append)
    oc = res.outcomes[0]
    assert oc.status == verdict, oc.message
    unchecked = [m for m in logged if "was not checked" in m]
    assert len(unchecked) == (1 if None in (base, head) else 0), logged      # said once, in the first round
    if base is None:
        assert unchecked[0].startswith("the base keeps no record")
    if verdict == "untrusted":
        assert res.exit_code == 2 and "compiled from source (NVRTC) on one side only" in oc.message
        assert (head or base)[0] in oc.message and "runner-check --commit" in oc.message


def test_the_worker_names_the_modules_its_cuzk_compiled_from_source(monkeypatch):
    from cuzk.perf import worker
    fake = type(sys)("cuzk.gpu.loader")
    fake.compiled_from_source = {("msm/g1", ("CUZK_FP_CALL=1",)), ("ntt/reg", ())}
    import cuzk.gpu
    monkeypatch.setitem(sys.modules, "cuzk.gpu.loader", fake)
    monkeypatch.setattr(cuzk.gpu, "loader", fake, raising=False)
    assert worker.compiled_here() == ["msm/g1 [CUZK_FP_CALL=1]", "ntt/reg"]
    del fake.compiled_from_source                   # a loader from before the record: unknown
    assert worker.compiled_here() is None
