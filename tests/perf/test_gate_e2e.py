"""`cuzk gate` end to end on the CPU reference, in a throwaway git repo made from the project.

- A/A (head changes only the README) exits 0;
- head computes the inverse NTT of ntt_msm_h as an O(n^2) matrix product: exits 1, names ntt_msm_h;
- head's b_g2 raises: exits 2.
The gate runs as a subprocess (`python -m cuzk gate`), so the exit codes are the real ones.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cuzk.perf.calibrate import BACKEND_FILE, commit_change, make_repo, raise_patch, slowdown_patch
from runner_noise import judged, skip_where_stolen, try_dir

REPO = Path(__file__).resolve().parents[2]
# real gate runs, judged on their timing and trust: no other test beside them (tests/conftest.py)
pytestmark = pytest.mark.serial

# small and quick, but the test can fire: 8 rounds give p >= 2/2^8 = 0.0078 < alpha
CONFIG = """
[gate]
rounds = 8
samples = 3
alpha = 0.01
threshold = 0.25
min_sample_s = 0.002
worker_timeout_s = 300

[trust]
# the whole threshold (25% of a sample at a side's 75th percentile), not a GPU runner's quarter: these tests
# share a 2-core CI machine; the out-of-sight helper's test asks the quarter
max_foreign_share = 1.0

[[workload]]
backend = "cpu"
circuit = "porep_like"
log_size = 8
opts = "default"
"""

WORSE_INTT = '''

# deliberately worse: the inverse transform as an O(n^2) product with the DFT matrix
def intt(a, omega):
    n = len(a)
    rows = fr_powers(pow(omega, -1, R), n)
    m = np.array([fr_powers(r, n) for r in rows], dtype=object)
    return (m.dot(np.asarray(a, dtype=object)) % R) * pow(n, -1, R) % R
'''


def _worse_intt(text: str) -> str:
    assert "coset_intt, coset_ntt, intt" in text and "intt(v, w)" in text, "qap.py changed"
    return text + WORSE_INTT


@pytest.fixture(scope="module")
def gate_repo(tmp_path_factory):
    d = tmp_path_factory.mktemp("gate-e2e") / "repo"
    base = make_repo(REPO, d)
    cfg = d.parent / "gate.toml"
    cfg.write_text(CONFIG)
    return d, base, cfg


def _gate(d: Path, base: str, head: str, cfg: Path, tmp: Path, want=None, again=None):
    """The gate as a process. want: the untrusted message the test asks for (want(message)), so a run that a
    rule on the runner's own work spoke in first is run once more (runner_noise.judged; again() first)."""
    if want is not None:
        def run(k):
            if k > 1 and again is not None:
                again()
            return _gate(d, base, head, cfg, try_dir(tmp, k))
        return judged(run, want)
    summary = tmp / "summary.md"
    env = dict(os.environ, GITHUB_STEP_SUMMARY=str(summary))
    p = subprocess.run([sys.executable, "-m", "cuzk", "gate", "--repo", str(d), "--base", base, "--head", head,
                        "--config", str(cfg), "--out", str(tmp / "out")], capture_output=True, text=True, env=env,
                       timeout=600)
    data = json.loads((tmp / "out" / "gate.json").read_text()) if (tmp / "out" / "gate.json").exists() else None
    skip_where_stolen(data)
    return p, data, summary.read_text() if summary.exists() else ""


def _branch(d: Path, base: str, name: str):
    subprocess.run(["git", "-C", str(d), "checkout", "-q", "-B", name, base], check=True)


def test_a_a_passes(gate_repo, tmp_path):
    d, base, cfg = gate_repo
    _branch(d, base, "aa")
    head = commit_change(d, "README.md", lambda t: t + "\nA/A: no code change.\n", "docs only")
    p, data, summary = judged(lambda k: _gate(d, base, head, cfg, try_dir(tmp_path, k)))
    assert p.returncode == 0, p.stdout + p.stderr
    assert "PASS" in p.stdout and "| `ntt_msm_h`" in p.stdout
    assert summary == p.stdout[:len(summary)] and "| phase" in summary
    (oc,) = data["outcomes"]
    assert oc["status"] == "ok" and len(oc["rounds"]) == 8
    assert all(len(r[s]["areas"]["tail_msm"]["samples"]) == 3 for r in oc["rounds"] for s in ("base", "head"))
    # what each sample cost the gate (its round trip) and, of that, the worker's untimed full collection
    for r in oc["rounds"]:
        for s in ("base", "head"):
            ar = r[s]["areas"]["tail_msm"]
            assert len(ar["asked_s"]) == len(ar["gc_s"]) == len(ar["preempted"]) == len(ar["irqs"]) == 3
            assert len(ar["steal_ms"]) == 3 and all(x is None or x >= 0 for x in ar["steal_ms"])
            # the sampling thread's own reads across its timed calls, and the phase timed on the host
            assert len(ar["held_ms"]) == len(ar["away_ms"]) == 3 and ar["timed_by"] == "host"
            assert len(ar["host_s"]) == 3 and ar["guard_s"] == [None] * 3     # the worker's wall; no NVML here
            # the idle rival is stopped beside each sample: it runs nothing (FROZEN_MOST_S), not its allowance
            assert len(ar["rival_idle_ms"]) == 3 and all(0 <= x <= 0.1 for x in ar["rival_idle_ms"])
            assert all(g <= h < t and v * ar["number"] <= h
                       for g, h, t, v in zip(ar["gc_s"], ar["host_s"], ar["asked_s"], ar["samples"]))
            assert all(isinstance(k, int) and k >= 0 for k in ar["preempted"])
            assert 0 <= r[s]["idle_cpu_ms"] <= 0.1 and r[s]["idle_stopped"] is True  # its most beside one sample
            where = r[s]["idle_cpu_where"]                # beside which sample, in which thread (None: none ran)
            assert (where is None) == (r[s]["idle_cpu_ms"] == 0), where
            assert where is None or re.fullmatch(r"\w+: \d+ \([\w.?-]+\) [\d.]+ ms", where), where
            rival = [x for ar2 in r["head" if s == "base" else "base"]["areas"].values()
                     for x in ar2["rival_idle_ms"]]           # what this side ran beside its rival's samples
            assert r[s]["idle_cpu_ms"] == max(rival) and r[s]["idle_cpu_ms"] <= sum(rival) <= 2.0 * len(rival)
            assert all(0 <= g < t and t >= v * ar["number"] for g, t, v in zip(ar["gc_s"], ar["asked_s"], ar["samples"]))
    # each round's time: the workers' start and set-up, the samples, their quit and exit; no more than the run's
    assert all(set(r["times"]) == {"ready_s", "sampled_s", "closed_s"} for r in oc["rounds"])
    assert 0 < sum(sum(r["times"].values()) for r in oc["rounds"]) <= data["wall_s"]
    assert any(ln.startswith(f"Rounds: {len(oc['rounds'])} in ") for ln in p.stdout.splitlines())
    assert any(ln.startswith("Beside the samples, the idle rival ran") and "stopped (SIGSTOP) beside each" in ln
               for ln in p.stdout.splitlines())
    # what else ran on the sampling CPU (foreign_ms), printed wherever the kernel keeps a run delay
    foreign = [x for r in oc["rounds"] for s in ("base", "head") for ar in r[s]["areas"].values()
               for x in ar["foreign_ms"] if x is not None]
    assert any(ln.startswith("On the sampling CPU, other work ran") for ln in p.stdout.splitlines()) == bool(foreign)
    line = next(ln for ln in p.stdout.splitlines() if ln.startswith("Sampling: "))
    n = sum(len(r[s]["areas"][a]["samples"]) for r in oc["rounds"] for s in ("base", "head") for a in r[s]["areas"])
    assert line.startswith(f"Sampling: {n} samples in ") and "the calls' host time past the timed" in line
    assert "NVML" not in line                      # the CPU workload reads none
    assert {c["verdict"] for c in oc["comparisons"]} <= {"no change", "improvement", "not resolved"}
    # like with like: every worker of both sides timed the same calls per sample, so the report has no note
    assert len({(a, r[s]["areas"][a]["number"]) for r in oc["rounds"] for s in ("base", "head")
                for a in r[s]["areas"]}) == len(oc["rounds"][0]["base"]["areas"])
    assert "Calls per sample differ" not in p.stdout
    # each side ran its own commit's code
    for r in oc["rounds"]:
        assert "/base/" in r["base"]["cuzk_file"] and "/head/" in r["head"]["cuzk_file"]


def test_slower_algorithm_in_one_phase_exits_1_and_names_it(gate_repo, tmp_path):
    d, base, cfg = gate_repo
    _branch(d, base, "slow")
    commit_change(d, "README.md", lambda t: t + "\nbefore\n", "docs before")
    culprit = commit_change(d, "cuzk/qap.py", _worse_intt, "ntt_msm_h: O(n^2) inverse DFT")
    head = commit_change(d, "README.md", lambda t: t + "\nafter\n", "docs after")
    p, data, summary = judged(lambda k: _gate(d, base, head, cfg, try_dir(tmp_path, k)))
    assert p.returncode == 1, p.stdout + p.stderr
    flagged = [c["area"] for c in data["outcomes"][0]["comparisons"] if c["verdict"] == "regression"]
    assert flagged == ["ntt_msm_h"]            # that phase, and no other
    assert "regression in phase ntt_msm_h" in p.stderr
    assert "FAIL: regression" in p.stdout and "`ntt_msm_h`" in p.stdout
    # base is the throwaway repo's root commit: asv find's range is then every ancestor of head
    assert f"asv find --launch-method spawn {head} " in p.stdout and "bench_ntt_msm_h" in p.stdout
    bis = f"cuzk bisect ntt_msm_h --target cpu:8 --opts default --good {base} --bad {head}"
    assert bis in p.stdout and culprit != head
    # the wrapper runs exactly the command the report prints, and its pre-flight accepts it here
    q = subprocess.run([sys.executable, "-m", "cuzk", *bis.split()[1:], "--repo", str(d), "--dry-run"],
                       capture_output=True, text=True)
    asv_line = next(x for x in p.stdout.splitlines() if x.startswith("asv find"))
    assert q.stdout.splitlines()[0] == asv_line
    assert q.returncode == 0, q.stdout + q.stderr
    assert "REGRESSION" in summary


def test_benchmark_that_raises_exits_2(gate_repo, tmp_path):
    d, base, cfg = gate_repo
    _branch(d, base, "broken")
    head = commit_change(d, BACKEND_FILE, raise_patch("b_g2"), "b_g2 raises")
    p, data, summary = _gate(d, base, head, cfg, tmp_path)
    assert p.returncode == 2, p.stdout + p.stderr
    (oc,) = data["outcomes"]
    assert oc["status"] == "error" and "b_g2 is broken on purpose" in oc["message"]
    assert "never a pass" in p.stdout and "never a pass" in summary


SPINNER = '''

# hostile: a thread that keeps working beside the other side's samples
import threading as _t


def _spin():
    import time as _time
    while True:
        _time.perf_counter()


_t.Thread(target=_spin, daemon=True).start()
'''


CHURN = '''

# hostile: work in a chain of short threads, each gone before the next read of the threads' own counters
import threading as _t


def _link():
    import time as _time
    end = _time.perf_counter() + 0.0001
    while _time.perf_counter() < end:
        pass
    _t.Thread(target=_link, daemon=True).start()


_t.Thread(target=_link, daemon=True).start()
'''


@pytest.mark.parametrize("name, code", [("spin", SPINNER), ("churn", CHURN)])
def test_a_head_that_leaves_work_running_is_stopped_beside_the_base_samples(gate_repo, tmp_path, name, code):
    """Pull-request code that starts a thread of its own (spinning on the CPU the workers share, or launching
    kernels on the GPU) would slow the base's samples and hide a regression. The idle worker is stopped (SIGSTOP)
    beside each of its rival's samples, so that work runs only beside the head's own: it slows the head, which
    the gate then reports (exit 1), and the base's samples are untouched by it. A chain of short threads also
    costs the kernel time on the sampling CPU that no thread of the worker is charged with (each thread made and
    ended, some of it done later, beside the base's samples too, and beside its own, in its sampling thread's run
    delay): past the share of the threshold, the run is untrusted instead (exit 2); never a pass either way. The
    spinner (or the chain) holds the GIL between the head's timed calls too: a phase whose round trips the gate's clock reads
    slower where its reported times do not (synthesis x7.3 against x0.99 on 2 vCPUs) is untrusted (exit 2), its
    untimed work grown, whatever the other phases show."""
    d, base, cfg = gate_repo
    _branch(d, base, name)
    head = commit_change(d, "cuzk/__init__.py", lambda t: t + code, "a background thread")
    p, data, _ = _gate(d, base, head, cfg, tmp_path)
    (oc,) = data["outcomes"]
    for rd in oc["rounds"]:
        for s in ("base", "head"):
            assert rd[s]["idle_stopped"] is True
            assert rd[s]["idle_cpu_ms"] <= 0.1, rd[s]          # nothing ran beside a rival sample, the spinner neither
    assert "PASS" not in p.stdout
    cpu_rule = p.returncode == 2 and oc["status"] == "untrusted" and any(w in oc["message"] for w in (
        "samples other work took the sampling CPU", "sampling thread was held"))
    if p.returncode == 2 and oc["status"] == "untrusted" and "the gate's own clock" in oc["message"]:
        assert "where the times the workers reported read less" in oc["message"], oc["message"]
        return
    if name == "churn" and p.returncode == 2:
        assert cpu_rule, oc["message"]
        return
    if cpu_rule:        # the head's worker was stopped and ran nothing beside the base (above): the runner's work
        pytest.skip(f"other work of this runner held the sampling CPU, the head's stopped worker ran none of it: "
                    f"{oc['message']}")
    assert p.returncode == 1, p.stdout + p.stderr
    assert oc["status"] == "ok" and any(c["verdict"] == "regression" for c in oc["comparisons"])


def _outside(what: str, double: bool = False, act: str = "_os.kill(_worker, 0)", pause: float = 0.01) -> str:
    """Hostile code: a process forked out of the worker's session (setsid; double: through a child that exits at
    once, so its parent is gone) that runs `act` on the worker until the worker is gone."""
    return f"""

# hostile: {what}
import os as _os
_worker = _os.getpid()
if _os.fork() == 0:
    if {double} and _os.fork() != 0:
        _os._exit(0)
    _os.setsid()
    import time as _time
    while True:
        try:
            {act}
        except OSError:
            _os._exit(0)
        _time.sleep({pause})
if {double}:
    _os.wait()
"""


STOPPER = _outside("a process out of the head's session that, while the head is stopped (the base samples), "
                   "stops the base's worker for 2 ms: a slower base, no CPU spent",
                   act=(
                       "_st = open(f'/proc/{_worker}/stat').read().rsplit(')', 1)[1].split()\n"
                       "            if _st[0] == 'T':\n"
                       "                for _d in _os.listdir('/proc'):\n"
                       "                    if _d.isdigit() and int(_d) != _worker:\n"
                       "                        try:\n"
                       "                            _o = open(f'/proc/{_d}/stat').read().rsplit(')', 1)[1].split()\n"
                       "                        except OSError:\n"
                       "                            continue\n"
                       "                        if int(_o[1]) == int(_st[1]):\n"
                       "                            _os.kill(int(_d), 19); _time.sleep(0.002); _os.kill(int(_d), 18)"),
                   pause=0.001)
CONTINUER = _outside("a process out of the worker's session that continues it whenever it is stopped",
                     act="_os.kill(_worker, 18)", pause=0.0002)      # SIGCONT
ORPHAN = _outside("a grandchild out of the worker's session, its parent gone: no one's the gate reads", double=True)
LEAVER = _outside("a child that leaves the worker's session (setsid) and stays, out of reach of the stop")


CHAIN = """

# hostile: a double-forked orphan that forks anew every millisecond and exits, so that no list of pids holds it
import os as _os
if _os.fork() == 0:
    if _os.fork() != 0:
        _os._exit(0)
    _os.setsid()
    import time as _time
    _end = _time.time() + 30
    while _time.time() < _end:
        _time.sleep(0.001)
        if _os.fork() != 0:
            _os._exit(0)
    _os._exit(0)
_os.wait()
"""


def _left_with(marker: str, pids=None) -> list[int]:
    """Live processes whose environment holds marker (the gate's, inherited by its workers and their children)."""
    out = []
    for d in (os.listdir("/proc") if pids is None else pids):
        try:
            with open(f"/proc/{d}/environ", "rb") as f:
                env = f.read()
            with open(f"/proc/{d}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if marker.encode() in env and state not in ("Z", "X"):
            out.append(int(d))
    return out


def _newest_with(marker: str, s: float = 1.0) -> list[int]:
    """_left_with over the newest pids, again for s seconds: a chain's member lives a millisecond, so a walk of
    /proc finds it gone (a zombie, its child forked after the listing) but a read of the last pids given finds
    the one alive."""
    end = time.time() + s
    while time.time() < end:
        last = int(Path("/proc/sys/kernel/ns_last_pid").read_text())
        left = _left_with(marker, range(last, last - 20, -1))
        if left:
            return left
        time.sleep(0.005)
    return []


@pytest.mark.parametrize("name, code, said", [("orphan", ORPHAN, "orphaned to the gate"),
                                              ("leaver", LEAVER, "left its session"),
                                              ("chain", CHAIN, "orphaned to the gate")])
def test_a_head_that_forks_out_of_its_session_is_untrusted(gate_repo, tmp_path, name, code, said):
    """A process forked out of the worker's session (setsid) is not stopped with it: it could work beside the
    base's samples. A child of the worker's that left is found by its parent; a double-forked orphan becomes
    the gate's child, as the gate is the subreaper of what it starts. Either makes the run untrusted (exit 2)."""
    d, base, cfg = gate_repo
    _branch(d, base, name)
    head = commit_change(d, "cuzk/__init__.py", lambda t: t + code, "a process out of the session")
    p, data, _ = _gate(d, base, head, cfg, tmp_path, want=lambda m: said in m)
    assert p.returncode == 2 and data, p.stdout + p.stderr
    (oc,) = data["outcomes"]
    assert oc["status"] == "untrusted" and said in oc["message"], oc["message"]
    assert "UNTRUSTED" in p.stdout and "PASS" not in p.stdout
    mark = f"{tmp_path}/try"                  # the GITHUB_STEP_SUMMARY of each run's environment
    end = time.time() + 3                      # a killed process leaves /proc when the kernel is done with it
    while _left_with(mark) and time.time() < end:
        time.sleep(0.05)
    left = _left_with(mark)               # the gate killed them, the chain's last too
    left = left or _newest_with(mark)
    assert left == [], [open(f"/proc/{p}/stat").read() for p in left]


def test_a_head_that_fails_after_forking_out_leaves_nothing(gate_repo, tmp_path):
    """A round that a failure ends before its orphan check (the head's worker dies in its set-up) still kills
    what the gate adopted: the chain goes with the round, not to init."""
    d, base, cfg = gate_repo
    _branch(d, base, "chain-fails")
    chain = CHAIN.replace("_os.setsid()", "_os.setsid(); _os.closerange(3, 1024)")   # the worker's EOF not held
    assert chain != CHAIN
    head = commit_change(d, "cuzk/__init__.py", lambda t: t + chain + "raise SystemExit(5)\n", "forks out, fails")
    p, data, _ = _gate(d, base, head, cfg, tmp_path)
    assert p.returncode == 2 and data and data["outcomes"][0]["status"] == "error", p.stdout + p.stderr
    left = _newest_with(str(tmp_path / "summary.md"))
    assert left == [], left


def test_a_head_that_rewrites_the_base_tree_is_untrusted(gate_repo, tmp_path):
    """The head's code runs as the same user as the base's: it could rewrite the base's checkout (or a cache both
    load) so that the base's next worker loads slower code. What the workers load is watched between rounds by
    its files' change times; a change makes the run untrusted (exit 2)."""
    d, base, cfg = gate_repo
    _branch(d, base, "rewriter")
    code = (f"\n\nimport os as _os\n_p = _os.path.join(_os.getcwd(), '..', 'base', {BACKEND_FILE!r})\n"
            "if _os.path.exists(_p):\n    with open(_p, 'a') as _f:\n        _f.write('\\n# slower now\\n')\n")
    head = commit_change(d, "cuzk/__init__.py", lambda t: t + code, "the base's tree rewritten")
    p, data, _ = _gate(d, base, head, cfg, tmp_path, want=lambda m: "the base tree changed while" in m)
    assert p.returncode == 2 and data, p.stdout + p.stderr
    (oc,) = data["outcomes"]
    assert oc["status"] == "untrusted" and "the base tree changed while the workers ran" in oc["message"], oc["message"]
    assert BACKEND_FILE in oc["message"]


def test_a_head_that_stops_the_base_worker_while_it_samples_is_untrusted(gate_repo, tmp_path):
    """A process out of the head's session could stop the base's worker (SIGSTOP, SIGCONT) in the middle of its
    sample: the base reads slower, and no CPU is spent anywhere. The workers are the gate's children, so it hears
    of every stop and continue (waitid): one it did not send, during a sample, makes the run untrusted."""
    d, base, cfg = gate_repo
    _branch(d, base, "stopper")
    head = commit_change(d, "cuzk/__init__.py", lambda t: t + STOPPER, "the base stopped while it samples")
    p, data, _ = _gate(d, base, head, cfg, tmp_path, want=lambda m: "not by the gate" in m)
    assert p.returncode == 2 and data, p.stdout + p.stderr
    (oc,) = data["outcomes"]
    assert oc["status"] == "untrusted" and "not by the gate" in oc["message"], oc["message"]
    assert "UNTRUSTED" in p.stdout and "PASS" not in p.stdout


UNSEEN = """

# hostile: a helper out of the head's session, reaped by the kernel (SIGCHLD ignored) so that no trace of it is
# left at the round's end, that follows the worker onto its CPU and spins there only while the head is stopped,
# i.e. beside the base's samples, for SPIN_S of each of the first STOPS of them, and is gone before the round's
# last base sample: the process checks find nothing
import os as _os
import signal as _signal
_worker = _os.getpid()
_signal.signal(_signal.SIGCHLD, _signal.SIG_IGN)
if _os.fork() == 0:
    _os.setsid()
    import time as _time
    _stops, _was, _end = 0, False, _time.time() + 120
    while _time.time() < _end and _stops < STOPS:
        try:
            _state = open(f"/proc/{_worker}/stat").read().rsplit(")", 1)[1].split()[0]
            _os.sched_setaffinity(0, _os.sched_getaffinity(_worker))
        except OSError:
            _os._exit(0)
        if _state == "T" and not _was:
            _stops += 1
            _t = _time.perf_counter()
            while _time.perf_counter() - _t < SPIN_S:
                pass
        _was = _state == "T"
        _time.sleep(0.0002)
    _os._exit(0)
"""


def test_work_on_the_sampling_cpu_from_out_of_sight_is_untrusted(gate_repo, tmp_path):
    """A helper out of the head's session that works on the sampling CPU only beside the base's samples and
    leaves no trace by the round's end is out of reach of the stop and of the process checks. The sampling
    thread's run delay, less its own worker's other threads, measures what else took its CPU, whoever it was
    (gate.json keeps it per sample: foreign_ms). Beside 18 of a round's 21 base samples, it passes a quarter of
    a phase's threshold at the 75th percentile: the run is untrusted (exit 2), never a pass. (That work beside
    a few samples is let be: tests/perf/test_foreign_work.py.)"""
    d, base, cfg = gate_repo
    cfg = tmp_path / "strict.toml"
    cfg.write_text(CONFIG.replace("max_foreign_share = 1.0", "max_foreign_share = 0.25"))
    _branch(d, base, "unseen")
    code = UNSEEN.replace("STOPS", "18").replace("SPIN_S", "0.003")
    head = commit_change(d, "cuzk/__init__.py", lambda t: t + code, "a helper beside the base's samples")
    p, data, _ = _gate(d, base, head, cfg, tmp_path)
    assert p.returncode == 2 and data and data["outcomes"][0]["rounds"], p.stdout + p.stderr
    (oc,) = data["outcomes"]
    base_ms = [x for rd in oc["rounds"] for ar in rd["base"]["areas"].values() for x in ar["foreign_ms"]
               if x is not None]
    assert base_ms and max(base_ms) >= 1.5, base_ms
    assert oc["status"] == "untrusted" and "beside base's samples other work took the sampling CPU" in \
        oc["message"], oc["message"]
    assert "UNTRUSTED" in p.stdout and "PASS" not in p.stdout


def test_a_head_that_continues_its_stopped_worker_is_untrusted(gate_repo, tmp_path):
    """Stopping the idle worker is only worth what it holds: a helper process that left the worker's session and
    sends it SIGCONT lets a spinning thread run beside the base's samples. The stopped worker's CPU is still read
    around each rival sample, and any of it makes the run untrusted (exit 2), never a pass."""
    d, base, cfg = gate_repo
    _branch(d, base, "continuer")
    head = commit_change(d, "cuzk/__init__.py", lambda t: t + SPINNER + CONTINUER, "a thread kept running")
    p, data, _ = _gate(d, base, head, cfg, tmp_path, want=lambda m: m.startswith("round "))
    assert p.returncode == 2, p.stdout + p.stderr
    (oc,) = data["outcomes"]
    # who continued it is unknown (a process of either side could): the round is named, not a side
    assert oc["status"] == "untrusted" and oc["message"].startswith("round "), oc["message"]
    assert any(w in oc["message"] for w in ("something continued it", "did not stop", "not by the gate")), oc["message"]
    assert "UNTRUSTED" in p.stdout and "PASS" not in p.stdout


def _beside_base(what: str, setup: str, on_stop: str, prelude: str = "_first = True") -> str:
    """Hostile code: a helper forked out of the head worker's session (reaped by the kernel: SIGCHLD ignored) that,
    where `prelude` sets `_first`, runs `setup` (4 spaces deep), then `on_stop` (16 deep) at each stop of the
    head (one before each base sample, and one more where the head samples twice running; `_stops` counts them, `_b` is the base worker's pid once `_base()` found
    it, `_state(pid)` a process's state), for the first 18 of a round's 21 base samples: it is gone before the
    round's end."""
    return f"""

# hostile: {what}
import os as _os
import signal as _signal
_worker = _os.getpid()
_signal.signal(_signal.SIGCHLD, _signal.SIG_IGN)
{prelude}
if _first and _os.fork() == 0:
    _os.setsid()
    import time as _time
{setup}
    _stops, _end, _b = 0, _time.time() + 120, None

    def _state(pid):
        return open(f"/proc/{{pid}}/stat").read().rsplit(")", 1)[1].split()[0]

    def _base():
        _gate = open(f"/proc/{{_worker}}/stat").read().rsplit(")", 1)[1].split()[1]
        for _d in _os.listdir("/proc"):
            if _d.isdigit() and int(_d) != _worker:
                try:
                    _o = open(f"/proc/{{_d}}/stat").read().rsplit(")", 1)[1].split()
                    if _o[1] == _gate and b"cuzk.perf.worker" in open(f"/proc/{{_d}}/cmdline", "rb").read():
                        return int(_d)
                except OSError:
                    continue
    while _time.time() < _end and _stops < 18:
        try:
            if _state(_worker) == "T":
                _stops += 1
{on_stop}
                while _state(_worker) == "T":
                    _time.sleep(0.0002)
        except OSError:
            _os._exit(0)
        _time.sleep(0.0002)
    _os._exit(0)
"""


# the third phase (ntt_msm_h) is the third of every seven base samples
ONE_ROUND = _beside_base(
    "a helper out of the head's session, in the first round only (a marker file made at once), that starts\n# four "
    "spinners on the sampling CPU beside each of that round's base ntt_msm_h samples, which leave as each ends: "
    "that round's\n# base samples take about five times as long, one round in eight turned over; beside 3 of 24 base "
    "samples the\n# 75th percentile of the whole run reads nothing",
    setup="",
    on_stop="""\
                if _stops % 7 == 3:
                    _os.sched_setaffinity(0, _os.sched_getaffinity(_worker))
                    for _ in range(4):
                        if _os.fork() == 0:
                            _os.setsid()          # a session, so a scheduler group, of its own: a full share each
                            while _state(_worker) == "T":
                                pass
                            _os._exit(0)""",
    prelude="""\
try:
    _os.close(_os.open(MARKER, _os.O_CREAT | _os.O_EXCL | _os.O_WRONLY))
    _first = True
except OSError:
    _first = False""")


PTRACER = _beside_base(
    "a helper out of the head's session that stops the base's sampling thread through ptrace for 8 ms inside\n# each "
    "of its ntt_msm_h samples: not runnable (no run delay), not a stop its parent (the gate) hears of",
    setup="""\
    _signal.signal(_signal.SIGCHLD, _signal.SIG_DFL)      # it waits for its tracee
    import ctypes as _ct
    _libc = _ct.CDLL(None, use_errno=True)
    _libc.ptrace.argtypes = [_ct.c_long, _ct.c_long, _ct.c_void_p, _ct.c_void_p]
    _elsewhere = set(range(_os.cpu_count())) - _os.sched_getaffinity(_worker)
    if _elsewhere:                                   # its own work off the sampling CPU: only the stop is seen there
        _os.sched_setaffinity(0, _elsewhere)""",
    on_stop="""\
                _b = _b or _base()
                if _stops % 7 == 3 and _b:
                    _time.sleep(0.002)
                    if _state(_b) != "T" and _libc.ptrace(0x4206, _b, None, None) == 0:    # PTRACE_SEIZE
                        _libc.ptrace(0x4207, _b, None, None)                             # PTRACE_INTERRUPT
                        _os.waitpid(_b, 0x40000000)                                      # __WALL
                        _time.sleep(0.008)
                        _libc.ptrace(17, _b, None, None)                                 # PTRACE_DETACH""")


def _may_ptrace() -> bool:
    """Whether this machine lets a process trace another of its user's (no Yama scope, no seccomp filter)."""
    import ctypes
    p = subprocess.Popen([sys.executable, "-c", "import time\ntime.sleep(30)"])
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
        ok = libc.ptrace(0x4206, p.pid, None, None) == 0
        if ok:
            libc.ptrace(17, p.pid, None, None)
        return ok
    finally:
        p.kill()
        p.wait()


@pytest.mark.parametrize("name", ["one-round", "ptrace"])
def test_a_helper_that_slows_the_base_unseen_by_the_run_wide_checks_is_untrusted(gate_repo, tmp_path, name):
    """A head 50% slower in ntt_msm_h, and a helper out of its session that slows the base's samples where the
    run-wide checks do not look: beside one round's samples only (the 75th percentile of the run reads nothing,
    yet that round's median turns over and the signed-rank p passes alpha), or by stopping the base's sampling
    thread through ptrace (no run delay, not a stop the gate hears of). Either passed (exit 0). The sampling
    thread reads, across its own timed calls, its waits for others' work and its time away: a round whose median
    sample lost past the share of the threshold is untrusted (exit 2), never a pass."""
    if name == "ptrace" and not _may_ptrace():
        pytest.skip("this machine does not let a process trace another (Yama or seccomp): the attack cannot run")
    d, base, cfg = gate_repo
    _branch(d, base, name)
    commit_change(d, BACKEND_FILE, slowdown_patch("ntt_msm_h", 0.5), "ntt_msm_h 50% slower")
    marker = tmp_path / "acted"
    code = ONE_ROUND.replace("MARKER", repr(str(marker))) if name == "one-round" else PTRACER
    head = commit_change(d, "cuzk/__init__.py", lambda t: t + code, "a helper beside the base's samples")
    want = (lambda m: "in round 1," in m) if name == "one-round" else \
        (lambda m: "base's sampling thread was held by other work or away" in m)
    p, data, _ = _gate(d, base, head, cfg, tmp_path, want=lambda m: "not by the gate" in m or want(m),
                       again=lambda: marker.unlink(missing_ok=True))       # the helper acts once a run
    assert p.returncode == 2 and data and data["outcomes"][0]["rounds"], p.stdout + p.stderr
    (oc,) = data["outcomes"]
    # the base's samples held or stopped; or, as the spinners leave, the head's next sample beside them. The head is
    # stopped after each of its own round trips too, so a helper that counts its stops is now and then a sample
    # off: its stop of the base may land beside the head's sample, where the gate hears of it (waitid)
    assert oc["status"] == "untrusted", oc["message"]
    if "not by the gate" not in oc["message"]:
        assert "sampling thread was held" in oc["message"], oc["message"]
        assert ("in round 1," in oc["message"]) if name == "one-round" else \
            ("base's sampling thread was held by other work or away" in oc["message"]), oc["message"]
    assert "UNTRUSTED" in p.stdout and "PASS" not in p.stdout


BLINDER = _beside_base(
    "a helper out of the head's session that, from the base's fourth sample on, mounts a file over the base\n# "
    "sampling thread's schedstat (as root may), so every read of it fails: with no figure, work beside the base's\n# "
    "samples from then on would not be judged",
    setup="""\
    import ctypes as _ct
    import tempfile as _tf
    _libc = _ct.CDLL(None, use_errno=True)
    _fake = _tf.NamedTemporaryFile("w", delete=False)
    _fake.write("x\\n")
    _fake.close()
    _done = False""",
    on_stop="""\
                _b = _b or _base()
                if _stops >= 4 and _b and not _done:
                    _done = True
                    for _p in (f"/proc/{_b}/task/{_b}/schedstat", f"/proc/{_b}/schedstat"):
                        if _libc.mount(_fake.name.encode(), _p.encode(), None, 4096, None) != 0:    # MS_BIND
                            _os._exit(0)""")


def test_a_helper_that_blinds_the_reads_of_the_base_is_untrusted(gate_repo, tmp_path):
    """Root may mount a file over the base sampling thread's schedstat, so that every read of it fails and the
    figures that judge other work go missing mid-run (a kernel without them is not judged). Where the gate reads
    its own, a worker's figure that is missing was made to go missing: the run is untrusted (exit 2)."""
    if os.geteuid() != 0:
        pytest.skip("mounting over /proc needs root: the attack cannot run")
    d, base, cfg = gate_repo
    _branch(d, base, "blinder")
    commit_change(d, BACKEND_FILE, slowdown_patch("ntt_msm_h", 0.5), "ntt_msm_h 50% slower")
    head = commit_change(d, "cuzk/__init__.py", lambda t: t + BLINDER, "a helper that blinds the base's reads")
    p, data, _ = _gate(d, base, head, cfg, tmp_path, want=lambda m: "reads of base's sampling thread" in m)
    assert p.returncode == 2 and data, p.stdout + p.stderr
    (oc,) = data["outcomes"]
    if "reads of base's sampling thread" not in oc["message"]:
        pytest.skip(f"the mount did not take here: {oc['message'][:200]}")  # e.g. a read-only /proc
    assert oc["status"] == "untrusted" and "failed, where this kernel keeps them" in oc["message"], oc["message"]
    assert "UNTRUSTED" in p.stdout and "PASS" not in p.stdout


STORM = _beside_base(
    "a helper out of the head's session, off the sampling CPU, that reads a file of its own straight from the\n# disk "
    "(O_DIRECT, 4 KiB at a time) while each base sample runs: the disk's completions interrupt the sampling CPU\n# "
    "where its interrupt line is routed there, and their handlers' time is charged to the base's samples",
    setup="""\
    import mmap as _mmap
    _elsewhere = set(range(_os.cpu_count())) - _os.sched_getaffinity(_worker)
    if not _elsewhere:
        _os._exit(0)
    _os.sched_setaffinity(0, _elsewhere)
    _size = 32 << 20
    _path = STORM_FILE
    with open(_path, "wb") as _f:
        _f.write(_os.urandom(1 << 20) * 32)
        _f.flush()
        _os.fsync(_f.fileno())
    _fd = _os.open(_path, _os.O_RDONLY | _os.O_DIRECT)
    _buf, _off = _mmap.mmap(-1, 4096), 0""",
    on_stop="""\
                while _state(_worker) == "T":
                    for _ in range(8):
                        _os.preadv(_fd, [_buf], _off)
                        _off = (_off + 4096 * 97) % _size""")


def test_a_helper_that_makes_a_device_interrupt_the_base_is_untrusted(gate_repo, tmp_path):
    """A device's interrupts routed to the sampling CPU are served there whoever caused them: a helper out of the
    head's session reads from the disk on another CPU beside each base sample, and the completions' handlers take
    the base's time, seen by no run-delay read (this kernel charges them to the interrupted thread): a +50%
    ntt_msm_h head read x1.22, "not resolved", exit 0, with the rule off (`irq_cost_us = 0`). The gate counts the
    device interrupts on the sampling CPU around each sample: a round whose median sample served more than the
    share of the threshold at `irq_cost_us` each is untrusted (exit 2), never a pass."""
    from cuzk.perf.gate import worker_cpus
    from cuzk.perf.isolation import device_interrupts_on
    cpus = worker_cpus(1)
    if not cpus or len(os.sched_getaffinity(0)) < 2 or not device_interrupts_on(cpus) or not hasattr(os, "O_DIRECT"):
        pytest.skip("no device interrupt line is served on the sampling CPU here (or one CPU): the attack cannot run")
    d, base, cfg = gate_repo
    cfg = tmp_path / "strict.toml"
    cfg.write_text(CONFIG.replace("max_foreign_share = 1.0", "max_foreign_share = 0.25"))
    _branch(d, base, "storm")
    commit_change(d, BACKEND_FILE, slowdown_patch("ntt_msm_h", 0.5), "ntt_msm_h 50% slower")
    code = STORM.replace("STORM_FILE", repr(str(tmp_path / "storm.bin")))
    head = commit_change(d, "cuzk/__init__.py", lambda t: t + code, "a helper that reads the disk beside the base")
    p, data, _ = _gate(d, base, head, cfg, tmp_path)
    assert data and data["outcomes"][0]["rounds"], p.stdout + p.stderr
    (oc,) = data["outcomes"]
    counts = [k for rd in oc["rounds"] for ar in rd["base"]["areas"].values() for k in ar["irqs"] if k is not None]
    if not counts or max(counts) < 10:
        pytest.skip(f"the disk's completions did not reach the sampling CPU here (most {max(counts, default=0)} "
                    f"a sample): the attack did not run")
    assert p.returncode == 2, p.stdout + p.stderr
    assert oc["status"] == "untrusted", oc["message"]
    assert "UNTRUSTED" in p.stdout and "PASS" not in p.stdout
    # the interrupt rule judges this run's counts untrusted; the gate names the first rule that fires, and the
    # storm's completions may also run kernel threads on the sampling CPU (run delay: the foreign-work rule), or a
    # round's check may catch the helper out of the worker's session first (it calls setsid)
    from cuzk.perf.foreign_work import DEFAULT_IRQ_COST_US, round_interrupts
    fired = [w for a in oc["rounds"][0]["base"]["areas"]
             if (w := round_interrupts(oc["rounds"], a, 0.25, 0.25, DEFAULT_IRQ_COST_US))]
    assert fired and "base's median sample served" in fired[0], (fired, oc["message"])
    assert oc["message"] == fired[0] or "other work took the sampling CPU" in oc["message"] \
        or "held by other work" in oc["message"] or "left its session" in oc["message"], oc["message"]


def _wrapping_measure(why: str, body: str, setup: str = "") -> str:
    """Hostile code for the end of a head's cuzk/__init__.py: a thread that waits for the harness's Workload (the
    worker imports it after cuzk) and wraps its measure in its own worker; `body` (indented 16) runs on each
    sample's value v, self and area in scope, and returns what the sample reports; `setup` (indented 12) once."""
    return f"""

# hostile: {why}
import sys as _sys
import threading as _t
import time as _time


def _wrap():
    for _ in range(60000):
        _w = _sys.modules.get("cuzk.perf.workload")
        if _w is not None and hasattr(_w, "Workload"):
            _real = _w.Workload.measure
{setup}
            def _measure(self, area, number=1):
                v = _real(self, area, number)
{body}
            _w.Workload.measure = _measure
            return
        _time.sleep(0.001)


_t.Thread(target=_wrap, daemon=True).start()
"""


FORGER = _wrapping_measure(
    "the head rewrites the harness in its own worker (the measured code runs there): its ntt_msm_h samples\n"
    "# report two thirds of their time; the thread that does it ends during the set-up",
    '                return v / 1.5 if area == "ntt_msm_h" else v')


def test_a_head_that_forges_its_own_times_is_untrusted(gate_repo, tmp_path):
    """The head's code runs in the head's worker, and so can rewrite the harness there and report any time: a
    +50% ntt_msm_h head that reports two thirds of it passed (exit 0). On the CPU workload the gate's own clock
    (each sample's round trip) is the sample and ~1 ms more, so it still reads the regression: untrusted (exit 2)."""
    d, base, cfg = gate_repo
    _branch(d, base, "forger")
    commit_change(d, BACKEND_FILE, slowdown_patch("ntt_msm_h", 0.5), "ntt_msm_h 50% slower")
    head = commit_change(d, "cuzk/__init__.py", lambda t: t + FORGER, "the head's times rewritten")
    p, data, _ = _gate(d, base, head, cfg, tmp_path,
                       want=lambda m: m.startswith("phase ntt_msm_h: the gate's own clock"))
    assert p.returncode == 2 and data, p.stdout + p.stderr
    (oc,) = data["outcomes"]
    assert oc["status"] == "untrusted" and oc["message"].startswith("phase ntt_msm_h: the gate's own clock"), \
        oc["message"]
    assert "UNTRUSTED" in p.stdout and "PASS" not in p.stdout


# a device sample of 10 ms at least: the round trip's ~1 ms of requests and reply leave a +50% head past the threshold
GPU_CONFIG = CONFIG.replace('backend = "cpu"', 'backend = "cuda"').replace("log_size = 8", "log_size = 16").replace(
    "min_sample_s = 0.002", "min_sample_s = 0.002\nmin_device_sample_s = 0.01")


@pytest.mark.gpu
@pytest.mark.quiet_gpu
@pytest.mark.parametrize("name", ["a-a", "forger"])
def test_a_gpu_gate_reads_nvml_itself_and_catches_a_head_that_forges_its_times(gate_repo, tmp_path, name):
    """On the GPU the NVML guard is the gate's, read between the round trips with each worker stopped outside its
    own: an A/A gate passes with every sample's guard read and its energy counted; a head 50% slower in ntt_msm_h
    on the device that reports two thirds of its time is caught on the gate's own clock (untrusted, exit 2)."""
    from cuzk.perf.calibrate import CUDA_FILE, gpu_slowdown_patch
    d, base, _ = gate_repo
    cfg = tmp_path / "gpu.toml"
    cfg.write_text(GPU_CONFIG)
    _branch(d, base, f"gpu-{name}")
    if name == "a-a":
        head = commit_change(d, "README.md", lambda t: t + "\nnothing measured changes\n", "a change")
    else:
        commit_change(d, CUDA_FILE, gpu_slowdown_patch("ntt_msm_h", 0.5), "ntt_msm_h 50% slower on the device")
        head = commit_change(d, "cuzk/__init__.py", lambda t: t + FORGER, "the head's times rewritten")
    p, data, _ = _gate(d, base, head, cfg, tmp_path)
    assert data and data["outcomes"][0]["rounds"], p.stdout + p.stderr[-3000:]
    (oc,) = data["outcomes"]
    assert oc["guard_by"] == "gate"
    for rd in oc["rounds"]:
        for s in ("base", "head"):
            for ar in rd[s]["areas"].values():
                assert all(g is not None and g > 0 for g in ar["guard_s"]) and ar["states"], ar
    if name == "a-a":
        assert p.returncode == 0, p.stdout + p.stderr[-3000:]
        # every GPU sample probed, on both sides (the honest level: docs/runners.md 4)
        assert all(x is not None for rd in oc["rounds"] for s in ("base", "head")
                   for ar in rd[s]["areas"].values() for x in ar["device_wait_us"])
    else:
        assert p.returncode == 2 and oc["status"] == "untrusted", p.stdout + p.stderr[-3000:]
        assert oc["message"].startswith("phase ntt_msm_h: the gate's own clock"), oc["message"]


# the probe's own kernel (one thread spinning on the global timer), here for 60 ms, left running past each reply
KERNEL_LEFT = _wrapping_measure(
    "after each sample of its own, the head leaves a kernel spinning on the GPU (60 ms by the global timer)\n"
    "# and replies at once; the gate stops its process, not the kernel, which runs on into the base's next sample",
    """                if self.device:
                    import cupy
                    import numpy
                    if not _k:
                        from pathlib import Path
                        from cuzk.perf import device_probe
                        src = Path(device_probe.__file__).with_name("device_probe.cu").read_text()
                        _k["f"] = cupy.RawModule(code=src).get_function("device_probe")
                        _k["s"] = cupy.cuda.Stream(non_blocking=True)
                    with open(MARK, "a") as _f:       # the test reads what it left, and how long each ran there
                        for _e in [e for e in _k.setdefault("ev", []) if e[1].done]:
                            _k["ev"].remove(_e)
                            _f.write(f"ran {cupy.cuda.get_elapsed_time(*_e):.1f}\\n")
                        _f.write("left\\n")
                    _e0 = _k["s"].record()            # stamped when the GPU reaches it on the stream
                    with _k["s"]:
                        _k["f"]((1,), (1,), (numpy.uint64(60_000_000),))
                    _k["ev"].append((_e0, _k["s"].record()))
                return v""",
    "            _k = {}")


@pytest.mark.gpu
@pytest.mark.quiet_gpu
def test_a_head_that_leaves_gpu_work_past_its_reply_is_untrusted(gate_repo, tmp_path):
    """A stopped process's kernels run on: a head that leaves one spinning past each reply slows the base's next
    sample, unseen by its events and by the gate's NVML reads (the head's worker is the gate's own). The base's
    device probes around its samples wait behind it: untrusted (exit 2)."""
    d, base, _ = gate_repo
    cfg = tmp_path / "gpu.toml"
    cfg.write_text(GPU_CONFIG)
    _branch(d, base, "gpu-leaver")
    mark = tmp_path / "kernels-left"
    head = commit_change(d, "cuzk/__init__.py", lambda t: t + KERNEL_LEFT.replace("MARK", repr(str(mark))),
                         "a kernel left spinning past each reply")
    p, data, _ = _gate(d, base, head, cfg, tmp_path)
    lines = mark.read_text().split("\n") if mark.exists() else []
    left, ran = lines.count("left"), sorted(float(x[4:]) for x in lines if x.startswith("ran "))
    assert left > 0, "the head left no kernel: the attack did not run, " + p.stdout[-2000:] + p.stderr[-3000:]
    # each left kernel's own span on the GPU (events around it on its stream): 60 ms, or it never held the GPU
    assert ran and ran[len(ran) // 2] >= 50, f"{left} kernels left, GPU spans {ran[:5]}..{ran[-5:]} ms"
    assert p.returncode == 2 and data, f"{left} kernels left, median {ran[len(ran) // 2]} ms on the GPU; " + \
        p.stdout + p.stderr[-3000:]
    (oc,) = data["outcomes"]
    assert oc["status"] == "untrusted" and "base's device probes waited" in oc["message"], oc["message"]


PTH = """

# hostile: a `.pth` file written into the interpreter's site-packages runs in every later worker, the base's too
import os as _os
import site as _site
for _p in _site.getsitepackages():
    if _os.path.isdir(_p) and _os.access(_p, _os.W_OK):
        with open(_os.path.join(_p, "zz_cuzk_e2e_hostile.pth"), "w") as _f:
            _f.write("# a line of it would run in every worker started after this one\\n")
        break
"""


def test_a_head_that_writes_into_the_interpreters_import_folder_is_untrusted(gate_repo, tmp_path):
    """The head runs as the gate's user, and the workers' interpreter reads its import folders before any of a
    commit's code: a file that comes there (here a `.pth` file, which could run code in the base's next worker)
    is a change the gate watches between rounds: untrusted (exit 2)."""
    import site
    roots = [p for p in site.getsitepackages() if os.path.isdir(p) and os.access(p, os.W_OK)]
    if not roots:
        pytest.skip("no writable site-packages here: the attack cannot run")
    d, base, cfg = gate_repo
    _branch(d, base, "pth")
    head = commit_change(d, "cuzk/__init__.py", lambda t: t + PTH, "a .pth file in site-packages")
    try:
        p, data, _ = _gate(d, base, head, cfg, tmp_path)
    finally:
        for r in roots:
            Path(r, "zz_cuzk_e2e_hostile.pth").unlink(missing_ok=True)
    assert p.returncode == 2 and data, p.stdout + p.stderr
    (oc,) = data["outcomes"]
    assert oc["status"] == "untrusted" and "the interpreter's import folder" in oc["message"] and \
        "zz_cuzk_e2e_hostile.pth" in oc["message"], oc["message"]
