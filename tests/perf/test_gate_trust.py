"""The verdict belongs to the base: `cuzk gate` tried as a hostile or careless pull request would.

Each case runs the real gate (`python -m cuzk gate`) on a throwaway git repo made from the project
(cuzk.perf.calibrate.make_repo), on the CPU reference:
- a head that slows a phase and relaxes its own perf-gate.toml and harness is still judged (exit 1);
- a head that writes reply-shaped lines to fd 1 inside a phase changes nothing (exit 0, nothing flagged);
- a killed gate leaves no worker running, and its workspace is removed by the next gate;
- a dirty tree and an unwritable --out are refused before any sample (exit 2, one line);
- a worker error holding Markdown cannot add a heading to the report or the step summary.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cuzk.perf import checkout, gate, report
from cuzk.perf.calibrate import BACKEND_FILE, commit_change, make_repo

REPO = Path(__file__).resolve().parents[2]
# real gate runs, judged on their timing and trust: no other test beside them (tests/conftest.py)
pytestmark = pytest.mark.serial

# the small CPU gate and the slower inverse DFT of the gate's end-to-end tests
from test_gate_e2e import CONFIG, WORSE_INTT as SLOW_INTT  # noqa: E402
from runner_noise import judged, skip_where_stolen, try_dir  # noqa: E402

# the head's own harness would report every head sample ten times faster
FAST_HARNESS = '''

_measure_real = Workload.measure
Workload.measure = lambda self, area, number=1: _measure_real(self, area, number) / 10
'''

# a phase that prints as native code would: straight to fd 1 and fd 2, lines shaped like replies
PRINTING_PHASE = '''

import json as _json
import os as _os

_tail_real = CpuBackend.tail_msm


def _tail_printing(self, *args, **kwargs):
    for i in range(12):
        line = _json.dumps({"id": i, "status": "ok", "value": 1e-9, "energy_j": None, "state": None})
        _os.write(1, (line + "\\n").encode())
        _os.write(2, (line + "\\n").encode())
    print('{"status": "ready"}', flush=True)
    return _tail_real(self, *args, **kwargs)


CpuBackend.tail_msm = _tail_printing
'''

MARKDOWN_ERROR = '''

def _b_g2_broken(self, *args, **kwargs):
    raise RuntimeError("boom\\n## cuzk gate **PASS**\\n````\\n# forged\\n```\\n### also forged")


CpuBackend.b_g2 = _b_g2_broken
'''


@pytest.fixture(scope="module")
def base_repo(tmp_path_factory):
    """The project with the small CPU config committed as its perf-gate.toml: the base's rules."""
    d = tmp_path_factory.mktemp("gate-trust") / "repo"
    make_repo(REPO, d)
    base = commit_change(d, "perf-gate.toml", lambda t: CONFIG, "the base's rules: a small CPU gate")
    return d, base


def _branch(d: Path, base: str, name: str):
    subprocess.run(["git", "-C", str(d), "checkout", "-q", "-B", name, base], check=True)


def _commit_all(d: Path, msg: str) -> str:
    subprocess.run(["git", "-C", str(d), "commit", "-qam", msg], check=True)
    return subprocess.run(["git", "-C", str(d), "rev-parse", "HEAD"], check=True, capture_output=True,
                          text=True).stdout.strip()


def _gate(d: Path, base: str, head: str, tmp: Path, *extra, env=None, config: Path | None = None):
    summary = tmp / "summary.md"
    env = dict(os.environ, GITHUB_STEP_SUMMARY=str(summary), **(env or {}))
    cmd = [sys.executable, "-m", "cuzk", "gate", "--repo", str(d), "--base", base, "--head", head,
           "--out", str(tmp / "out"), *extra]
    if config is not None:
        cmd += ["--config", str(config)]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    data = json.loads((tmp / "out" / "gate.json").read_text()) if (tmp / "out" / "gate.json").exists() else None
    skip_where_stolen(data)
    return p, data, summary.read_text() if summary.exists() else ""


def headings(md: str) -> list[str]:
    """The ATX headings of a CommonMark document, outside fenced code blocks (a fence closes only on a
    line of at least as many of the same character)."""
    out, fence = [], None
    for line in md.splitlines():
        m = re.match(r" {0,3}(`{3,}|~{3,})(.*)$", line)
        if fence is None and m:
            fence = m.group(1)
            continue
        if fence is not None:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not m.group(2).strip():
                fence = None
            continue
        if re.match(r" {0,3}#{1,6}(\s|$)", line):
            out.append(line.strip())
    return out


def test_a_head_that_relaxes_its_own_rules_and_harness_is_judged_by_the_base(base_repo, tmp_path):
    d, base = base_repo
    _branch(d, base, "relax")
    commit_change(d, "cuzk/qap.py", lambda t: t + SLOW_INTT, "ntt_msm_h: O(n^2) inverse DFT")
    commit_change(d, "cuzk/perf/workload.py", lambda t: t + FAST_HARNESS, "the head's harness: faster numbers")
    head = commit_change(d, "perf-gate.toml", lambda t: t.replace("threshold = 0.25", "threshold = 1.0"),
                         "the head's rules: nothing is ever a regression")
    p, data, summary = judged(lambda k: _gate(d, base, head, try_dir(tmp_path, k)))   # the base's perf-gate.toml
    assert p.returncode == 1, p.stdout + p.stderr
    (oc,) = data["outcomes"]
    flagged = {c["area"]: c for c in oc["comparisons"] if c["verdict"] == "regression"}
    assert list(flagged) == ["ntt_msm_h"] and flagged["ntt_msm_h"]["threshold"] == 0.25
    assert data["config"]["path"].startswith(f"{base} (") and data["config"]["threshold"] == 0.25
    assert data["rules_changed"] == ["cuzk/perf/workload.py", "perf-gate.toml"]
    # the report says so in its first lines, before anything measured
    first = p.stdout.split("\n\n")[1]
    assert "changes the gate's rules or measuring code" in first
    assert "`perf-gate.toml`" in first and "`cuzk/perf/workload.py`" in first and "after merge" in first
    # both sides ran the base's harness with their own commit's prover
    for rd in oc["rounds"]:
        assert "/head/" in rd["head"]["cuzk_file"] and "/base/" in rd["base"]["cuzk_file"]


def test_a_head_printing_reply_shaped_lines_to_fd_1_changes_nothing(base_repo, tmp_path):
    d, base = base_repo
    _branch(d, base, "printf")
    head = commit_change(d, BACKEND_FILE, lambda t: t + PRINTING_PHASE, "tail_msm: a debug printf")
    p, data, _ = judged(lambda k: _gate(d, base, head, try_dir(tmp_path, k)))
    assert p.returncode == 0, p.stdout + p.stderr
    (oc,) = data["outcomes"]
    assert oc["status"] == "ok" and len(oc["rounds"]) == 8
    assert not [c for c in oc["comparisons"] if c["verdict"] == "regression"]
    # every sample is a real time, none of the printed 1e-9 ones
    assert all(x > 1e-6 for rd in oc["rounds"] for s in ("base", "head") for a in rd[s]["areas"].values()
               for x in a["samples"])
    assert '"value": 1e-9' not in p.stdout


def test_a_worker_error_holding_markdown_adds_no_heading(base_repo, tmp_path):
    d, base = base_repo
    _branch(d, base, "forge")
    head = commit_change(d, BACKEND_FILE, lambda t: t + MARKDOWN_ERROR, "b_g2 raises Markdown")
    p, data, summary = _gate(d, base, head, tmp_path)
    assert p.returncode == 2, p.stdout + p.stderr
    assert "forged" in data["outcomes"][0]["message"]
    md = (tmp_path / "out" / "report.md").read_text()
    for text in (md, summary, p.stdout):
        hs = headings(text)
        assert hs[0].startswith("## cuzk gate **FAIL: not judged**"), hs
        assert not [h for h in hs if "PASS" in h or "forged" in h], hs
    assert "# forged" in md                     # shown, inside its fence


def _running_in(root: Path) -> list[int]:
    """PIDs whose working directory is inside `root` (the workers run in their commit's checkout)."""
    pids = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                cwd = os.readlink(p / "cwd")
            except OSError:
                continue
            if cwd.startswith(str(root)):
                pids.append(int(p.name))
    return pids


def _start_and_wait_for_workers(d, base, head, tmp: Path):
    tmpdir = tmp / "t"
    tmpdir.mkdir(parents=True)
    env = dict(os.environ, TMPDIR=str(tmpdir))
    g = subprocess.Popen([sys.executable, "-m", "cuzk", "gate", "--repo", str(d), "--base", base, "--head", head],
                         env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while time.time() < deadline:
        ws = list(tmpdir.glob(checkout.WORKSPACE_PREFIX + "*"))
        if ws and len(_running_in(ws[0])) >= 2:
            return g, ws[0]
        time.sleep(0.2)
    g.kill()
    pytest.fail("the gate started no workers within 120 s")


@pytest.mark.skipif(not Path("/proc/self/cwd").exists(), reason="needs /proc to find the workers")
def test_a_killed_gate_leaves_no_worker_and_its_workspace_goes_at_the_next_start(base_repo, tmp_path):
    d, base = base_repo
    _branch(d, base, "killed")
    head = commit_change(d, "README.md", lambda t: t + "\nkilled\n", "docs only")
    g, ws = _start_and_wait_for_workers(d, base, head, tmp_path / "kill")
    g.send_signal(signal.SIGKILL)
    g.wait()
    deadline = time.time() + 20
    while _running_in(ws) and time.time() < deadline:
        time.sleep(0.2)
    assert _running_in(ws) == []                               # the workers died with the gate
    assert ws.exists()                                          # SIGKILL: nothing could clean up ...
    assert checkout.remove_stale(ws.parent) == [ws]            # ... the next gate's start removes it
    assert not ws.exists()
    # SIGTERM: the gate itself cleans up, workers included
    g, ws = _start_and_wait_for_workers(d, base, head, tmp_path / "term")
    g.send_signal(signal.SIGTERM)
    assert g.wait(timeout=60) == 143
    deadline = time.time() + 20
    while _running_in(ws) and time.time() < deadline:
        time.sleep(0.2)
    assert _running_in(ws) == [] and not ws.exists()


def test_a_live_gates_workspace_is_left_alone(tmp_path):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TMPDIR", str(tmp_path))
        import tempfile
        mp.setattr(tempfile, "tempdir", None)
        with checkout.workspace() as ws:
            assert ws.parent == tmp_path
            assert checkout.remove_stale(tmp_path) == [] and ws.exists()
        assert not ws.exists()
    orphan = tmp_path / (checkout.WORKSPACE_PREFIX + "orphan")
    orphan.mkdir()
    assert checkout.remove_stale(tmp_path) == [] and orphan.exists()            # young: maybe still starting
    os.utime(orphan, (time.time() - 7200, time.time() - 7200))
    assert checkout.remove_stale(tmp_path) == [orphan]
    dead = tmp_path / (checkout.WORKSPACE_PREFIX + "dead")
    dead.mkdir()
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    (dead / "owner.json").write_text(json.dumps({"pid": p.pid, "start": None}))
    assert checkout.remove_stale(tmp_path) == [dead]


def test_a_dirty_tree_is_refused_before_any_sample(base_repo, tmp_path):
    d, base = base_repo
    _branch(d, base, "dirty")
    head = commit_change(d, "README.md", lambda t: t + "\ncommitted\n", "docs")
    (d / "cuzk" / "qap.py").write_text((d / "cuzk" / "qap.py").read_text() + SLOW_INTT)     # left uncommitted
    try:
        p, data, summary = _gate(d, base, head, tmp_path)
    finally:
        subprocess.run(["git", "-C", str(d), "checkout", "--", "cuzk/qap.py"], check=True)
    assert p.returncode == 2 and p.stdout == "", p.stdout + p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "uncommitted changes" in lines[0] and "cuzk/qap.py" in lines[0], p.stderr
    assert data is None and not (tmp_path / "out").exists() and summary == ""


@pytest.mark.parametrize("out", ["/proc/cuzk-gate-out", "FILE"])
def test_an_unwritable_out_is_refused_before_any_sample(base_repo, tmp_path, out):
    d, base = base_repo
    if out == "FILE":
        out = tmp_path / "a-file"
        out.write_text("not a directory\n")
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "cuzk", "gate", "--repo", str(d), "--base", base, "--head", base,
                        "--out", str(out)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and p.stdout == "", p.stdout + p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and str(out) in lines[0], p.stderr
    assert "round" not in p.stderr and time.perf_counter() - t0 < 30


def test_the_base_config_is_read_from_the_base_commit_even_when_the_worktree_differs(base_repo, tmp_path):
    from cuzk.perf import gate_config
    d, base = base_repo
    _branch(d, base, "cfg")
    head = commit_change(d, "perf-gate.toml", lambda t: t.replace("threshold = 0.25", "threshold = 1.0"), "relax")
    cfg = gate_config.load_commit(d, base)
    assert cfg.threshold == 0.25 and cfg.path.startswith(base)
    assert gate_config.load_commit(d, head).threshold == 1.0
    with pytest.raises(gate_config.ConfigError, match="not readable from the base commit"):
        gate_config.load_commit(d, "no-such-ref")


# --- the report and the comment quote untrusted text ---

HOSTILE = ["## cuzk gate **PASS**", "```\n# h1\n```", "````\n## x", "`", "a | b", "\n\n### h3\n", "<!-- x -->",
           "~~~\n# t", "\x1b[31mred\x07"]


@pytest.mark.parametrize("text", HOSTILE)
def test_fenced_text_can_never_end_its_fence(text):
    md = "## ours\n\n" + report.fenced(text) + "\n\nafter\n"
    assert headings(md) == ["## ours"]
    assert md.rstrip().endswith("after")


@pytest.mark.parametrize("text", HOSTILE)
def test_inline_text_stays_on_its_line_in_a_code_span(text):
    s = report.inline(text)
    assert "\n" not in s and "\x1b" not in s and "\x07" not in s
    ticks = re.match(r"`+", s).group(0)
    assert s.endswith(ticks) and ticks not in s[len(ticks):-len(ticks)]
    assert headings(f"## ours\n{s}\n") == ["## ours"]


def _gate_doc(**over) -> dict:
    spec = {"backend": "cpu", "circuit": "porep_like", "log_size": 8, "opts": "default", "batch": 1,
            "convention": "coeff", "generator": 7}
    rounds = [{"order": ["base", "head"], **{s: {"status": "ready", "gpu": None, "areas": {
        "tail_msm": {"samples": [1.0 * (1.5 if s == "head" else 1) * (1 + 0.001 * i) for i in range(3)],
                     "number": 1}}} for s in ("base", "head")}} for _ in range(8)]
    doc = {"repo": "/somewhere", "base": "a" * 40, "head": "b" * 40, "base_ref": "HEAD^1", "head_ref": "HEAD",
           "exit_code": 1, "wall_s": 1.0, "rules_changed": [],
           "config": {"rounds": 8, "samples": 3, "alpha": 0.01, "threshold": 0.05, "thresholds": {},
                      "areas": ["tail_msm"], "path": "perf-gate.toml"},
           "outcomes": [{"spec": spec, "required": True, "phases": None, "status": "ok", "message": "",
                         "rounds": rounds, "discards": 0}]}
    doc.update(over)
    return doc


@pytest.mark.parametrize("bad", [
    {"base": "main; rm -rf /"}, {"head_ref": 5}, {"config": {"areas": ["nope"]}},
    {"rules_changed": [1]}, {"wall_s": float("nan")}, {"repo": "/r\0x"}, {"repo": ["/r"]},
])
def test_a_crafted_gate_json_is_refused(bad):
    doc = _gate_doc()
    if "config" in bad:
        doc["config"].update(bad["config"])
    else:
        doc.update(bad)
    with pytest.raises(ValueError):
        gate.from_dict(doc)


def test_a_crafted_gpu_record_is_refused_by_name():
    doc = _gate_doc()
    doc["outcomes"][0]["rounds"][2]["head"]["gpu"] = {"name": ["x"]}
    with pytest.raises(ValueError, match="round 2: head: gpu is not NVML's record"):
        gate.from_dict(doc)
    doc["outcomes"][0]["rounds"][2]["head"]["gpu"] = {"name": "NVIDIA H200", "max_sm_clock_mhz": 1980, "uuid": None}
    gate.from_dict(doc)


@pytest.mark.parametrize("poison", [0.0, -1.0, float("inf"), "1.0", None, True, 10 ** 400])
def test_a_gate_json_with_a_poisoned_sample_is_refused(poison):
    doc = _gate_doc()
    doc["outcomes"][0]["rounds"][3]["head"]["areas"]["tail_msm"]["samples"][1] = poison
    with pytest.raises(ValueError, match="positive finite"):
        gate.from_dict(doc)


def test_a_spec_holding_markdown_is_refused():
    doc = _gate_doc()
    doc["outcomes"][0]["spec"]["circuit"] = "x\n## cuzk gate **PASS**"
    with pytest.raises(ValueError, match="spec"):
        gate.from_dict(doc)


def test_the_sticky_comment_is_rendered_from_data(tmp_path):
    from cuzk.cli import main
    doc = _gate_doc(base_ref="x\n## cuzk gate **PASS**", rules_changed=["perf-gate.toml"])
    doc["outcomes"][0]["spec"].update(backend="cuda", log_size=18)
    f = tmp_path / "gate.json"
    f.write_text(json.dumps(doc))
    out = tmp_path / "comment.md"
    rc = main(["gate", "--from-json", str(f), "--comment", str(out), "--run-url",
               "https://github.com/o/r/actions/runs/1", "--history-url", "https://o.github.io/r/"])
    assert rc == 0
    text = out.read_text()
    assert text.splitlines()[0] == report.COMMENT_MARKER
    hs = headings(text)
    assert hs[0].startswith("## cuzk gate **FAIL: regression**") and not [h for h in hs if "PASS" in h], hs
    assert "[the gate's run](https://github.com/o/r/actions/runs/1)" in text
    assert "https://o.github.io/r/#" in text and "p-target=%27cuda%3A18%27" in text
    assert "asv find" not in text and "`perf-gate.toml`" in text
    # a link target that could break out of the Markdown link is refused, nothing written
    out.unlink()
    rc = main(["gate", "--from-json", str(f), "--comment", str(out), "--run-url", "https://x/)[PASS](https://y"])
    assert rc == 2 and not out.exists()


def test_a_crafted_isolation_line_cannot_act_in_the_comment(tmp_path):
    """gate.json's isolation lines come from the runner's own text, but the file reaches the comment job as a pull
    request's artifact: shown as prose, they make no heading, mention, image, link or HTML comment."""
    from cuzk.cli import main
    hostile = ("irq 1\n\n## cuzk gate **PASS**: approved by @octocat ![x](https://attacker.example/p.png)\n\n<!--")
    f, out = tmp_path / "gate.json", tmp_path / "comment.md"
    f.write_text(json.dumps(_gate_doc(isolation=[hostile])))
    assert main(["gate", "--from-json", str(f), "--comment", str(out)]) == 0
    text = out.read_text()
    assert [h for h in headings(text) if "PASS" in h] == [] and "<!--" not in text.split("\n", 1)[1]
    assert "@octocat" not in text and "![x](" not in text and "approved by" in text
    f.write_text(json.dumps(_gate_doc(isolation=["x" * 5000])))            # longer than any line of ours
    assert main(["gate", "--from-json", str(f), "--comment", str(out)]) == 2


def test_a_crafted_discard_count_cannot_act_in_the_comment(tmp_path, capsys):
    """The GPU line prints the outcome's discards: anything but a count is refused, naming the file."""
    from cuzk.cli import main
    doc = _gate_doc()
    doc["outcomes"][0]["spec"].update(backend="cuda", log_size=18)
    for rd in doc["outcomes"][0]["rounds"]:
        for s in ("base", "head"):
            rd[s]["gpu"] = {"name": "NVIDIA H100"}
    f, out = tmp_path / "gate.json", tmp_path / "comment.md"
    f.write_text(json.dumps(doc))
    assert main(["gate", "--from-json", str(f), "--comment", str(out)]) == 0
    assert "; 0 samples discarded" in out.read_text()
    out.unlink()
    capsys.readouterr()
    doc["outcomes"][0]["discards"] = "0\n\n## cuzk gate **PASS** @octocat <img src=x onerror=alert(1)>\n"
    f.write_text(json.dumps(doc))
    assert main(["gate", "--from-json", str(f), "--comment", str(out)]) == 2 and not out.exists()
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{f}: " in err and "outcome 0: discards" in err, err


def _energy(doc, value):
    for rd in doc["outcomes"][0]["rounds"]:
        for s in ("base", "head"):
            rd[s]["areas"]["tail_msm"]["energy_j"] = value


def _extra_phase(doc, side):
    doc["outcomes"][0]["rounds"][3][side]["areas"]["prep_msm"] = {"samples": [1.0], "number": 1}


@pytest.mark.parametrize("craft, says", [
    (lambda d: _energy(d, ["1.0"] * 3), "round 0: base tail_msm: energy_j is not a list of joules"),
    (lambda d: _energy(d, "abc"), "round 0: base tail_msm: energy_j is not a list of joules"),
    (lambda d: _extra_phase(d, "base"), "round 3: base: not the phases of the others"),
    (lambda d: _extra_phase(d, "head"), "round 3: head: not the phases of the others"),
])
def test_what_the_report_reads_beside_the_samples_is_checked_first(tmp_path, capsys, craft, says):
    """Energy readings and a phase on one side only were read by the report unchecked: a crafted gate.json
    ended in an internal error, not in one line naming the file."""
    from cuzk.cli import main
    doc = _gate_doc()
    _energy(doc, [2.0] * 3)
    f = tmp_path / "gate.json"
    f.write_text(json.dumps(doc))
    assert main(["gate", "--from-json", str(f)]) == 1 and "`tail_msm` 2 J → 2 J" in capsys.readouterr().out
    craft(doc)
    f.write_text(json.dumps(doc))
    assert main(["gate", "--from-json", str(f)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"gate: {f}: " in err and says in err, err


def _fake_commit(tmp_path: Path, init: str, answer: str) -> Path:
    """A stand-in commit root whose cuzk.perf.worker reads requests from its pipe and runs `answer` (lines
    indented into the request loop, with `msg` and `rep` in scope) for each."""
    fake = tmp_path / "w"
    (fake / "cuzk" / "perf").mkdir(parents=True)
    (fake / "cuzk" / "__init__.py").write_text(init)
    (fake / "cuzk" / "perf" / "__init__.py").write_text("")
    (fake / "cuzk" / "perf" / "worker.py").write_text(
        "import json, os, sys\n"
        "req, rep = os.fdopen(int(sys.argv[1])), os.fdopen(int(sys.argv[2]), 'w')\n"
        "for line in req:\n"
        "    msg = json.loads(line)\n" + answer + "    rep.flush()\n")
    return fake


def test_a_worker_reply_to_another_request_is_an_error(tmp_path):
    """Replies are matched to their requests: a stray or replayed reply is named, never taken as a sample."""
    fake = _fake_commit(tmp_path, "",
                        "    rep.write(json.dumps({'id': msg['id'] + 1, 'status': 'ok', 'value': 1.0}) + '\\n')\n")
    logged = []
    w = gate.WorkerProcess(fake, 30, log=logged.append)
    try:
        with pytest.raises(gate.WorkerFailed, match="reply to request 2 where request 1 was asked"):
            w.ask({"sample": "tail_msm"})
    finally:
        w.kill()
    assert logged


def test_the_worker_cannot_be_traced_by_its_users_other_processes(tmp_path):
    """The gate's boot makes each worker not dumpable before the commit's code runs: a process of the same user
    (the other side's code) cannot trace it, so cannot stop its sampling thread unseen, short of CAP_SYS_PTRACE."""
    fake = _fake_commit(tmp_path, "",
                        "    import ctypes\n"
                        "    rep.write(json.dumps({'id': msg['id'], 'status': 'ok', 'value': 1.0, "
                        "'dumpable': ctypes.CDLL(None).prctl(3, 0, 0, 0, 0)}) + '\\n')\n")     # PR_GET_DUMPABLE
    w = gate.WorkerProcess(fake, 30)
    try:
        assert w.ask({"sample": "tail_msm"})["dumpable"] == 0
    finally:
        w.kill()


def test_the_worker_sees_no_channel_on_fd_0_1_or_2(tmp_path):
    """What the commit under test writes to fd 1 lands in the log; fd 0 is /dev/null."""
    fake = _fake_commit(tmp_path, "import os\nos.write(1, b'{\"id\": 1, \"status\": \"ok\"}\\n')\n",
                        "    stdin = os.read(0, 10)\n"
                        "    rep.write(json.dumps({'id': msg['id'], 'status': 'ok', 'value': 2.5, "
                        "'stdin': stdin.decode()}) + '\\n')\n")
    w = gate.WorkerProcess(fake, 30)
    try:
        r = w.ask({"sample": "tail_msm"})
        assert r["value"] == 2.5 and r["stdin"] == ""
        assert '{"id": 1, "status": "ok"}' in w.stderr()
    finally:
        w.close()


def test_overlay_replaces_the_heads_harness_with_the_bases(base_repo, tmp_path):
    d, base = base_repo
    _branch(d, base, "overlay")
    head = commit_change(d, "cuzk/perf/workload.py", lambda t: t + FAST_HARNESS, "harness")
    roots = {s: checkout.materialize(d, sha, tmp_path / s) for s, sha in (("base", base), ("head", head))}
    assert (roots["head"] / "cuzk/perf/workload.py").read_text().endswith(FAST_HARNESS)
    checkout.overlay_harness(roots["base"], roots["head"])
    for rel in ("cuzk/perf/workload.py", "cuzk/perf/worker.py", "cuzk/nvml.py"):
        assert (roots["head"] / rel).read_bytes() == (roots["base"] / rel).read_bytes()
    assert not (roots["head"] / "cuzk/perf").is_symlink()


@pytest.mark.parametrize("changed, said", [(["cuzk/perf/workload.py"], True), (["perf-gate.toml"], False), ([], False)])
def test_a_head_failing_under_the_bases_harness_is_told_why(changed, said):
    doc = _gate_doc(rules_changed=changed, exit_code=2)
    doc["outcomes"][0].update(status="error", rounds=[],
                              message="head (bbbbbbbbbb), round 1, set-up: AttributeError: no attribute 'x'")
    md = report.markdown(gate.from_dict(doc))
    assert ("land the harness change on its own first" in md) == said


def test_a_dependency_change_is_said_in_the_first_line(base_repo, tmp_path):
    d, base = base_repo
    _branch(d, base, "deps")
    readme = commit_change(d, "pyproject.toml", lambda t: t.replace("[project]", "# a comment\n[project]", 1),
                           "pyproject: no dependency changed")
    assert checkout.dependencies_changed(d, base, readme) == []
    head = commit_change(d, "pyproject.toml", lambda t: t.replace('"numpy>=1.26"', '"numpy>=2.1"', 1),
                         "a new numpy")
    assert checkout.dependencies_changed(d, base, head) == ["pyproject.toml"]
    doc = _gate_doc(deps_changed=["pyproject.toml"])
    first = report.markdown(gate.from_dict(doc)).splitlines()[0]
    assert "**Not measured**" in first and "`pyproject.toml`" in first


def test_a_change_to_the_kernels_nvcc_flags_is_said_in_the_first_line(base_repo):
    """Both sides' kernels are built by the base's rules (runner-check, the loader's cubin names): a head that
    changes the nvcc flags is not measured with them, and the verdict says so rather than "no change"."""
    d, base = base_repo
    _branch(d, base, "flags")
    same = commit_change(d, "cuzk/gpu/cubins.py", lambda t: t + "\n# a comment\n", "cubins: a comment")
    assert checkout.build_rules_changed(d, base, same) == []
    head = commit_change(d, "cuzk/gpu/cubins.py",
                         lambda t: t.replace('CUBIN_FLAGS = ("-cubin", "-std=c++17")',
                                             'CUBIN_FLAGS = ("-cubin", "-std=c++17", "-maxrregcount=96")', 1),
                         "cubins: fewer registers")
    assert checkout.build_rules_changed(d, base, head) == ["cuzk/gpu/cubins.py CUBIN_FLAGS"]
    lib = commit_change(d, "cuzk/gpu/cub_library.py", lambda t: t.replace('"-O3", ', '"-O2", ', 1), "cub: -O2")
    assert checkout.build_rules_changed(d, head, lib) == ["cuzk/gpu/cub_library.py NVCC_FLAGS"]
    doc = _gate_doc(build_changed=["cuzk/gpu/cubins.py CUBIN_FLAGS"])
    res = gate.from_dict(doc)
    first = report.markdown(res).splitlines()[0]
    assert "**Not measured**" in first and "nvcc flags" in first and "`cuzk/gpu/cubins.py CUBIN_FLAGS`" in first
    assert gate.from_dict(json.loads(json.dumps(res.as_dict()))).build_changed == ["cuzk/gpu/cubins.py CUBIN_FLAGS"]
    with pytest.raises(ValueError, match="build_changed"):
        gate.from_dict(_gate_doc(build_changed="cuzk/gpu/cubins.py"))


def test_the_no_gpu_verdict_names_cpu_only():
    doc = _gate_doc(exit_code=2)
    doc["outcomes"][0].update(status="error", rounds=[], message=f"{gate.NO_GPU} (no CUDA); this workload is required")
    first = report.markdown(gate.from_dict(doc)).splitlines()[0]
    assert gate.NO_GPU in first and "--cpu-only" in first


def test_a_rejected_pairs_probes_are_no_more_than_the_rounds_rejections():
    """A rejected pair leaves at most one probe figure a side, so a round holds no more of them than its
    rejections: a crafted file cannot dilute the probes' 1% allowance with made-up rejected samples."""
    doc = _gate_doc()
    rd = doc["outcomes"][0]["rounds"][1]
    rd["base"]["discards"], rd["head"]["discards"] = ["throttled after: sw_power_cap"], []
    rd["base"]["areas"]["tail_msm"]["rejected_device_wait_us"] = [5000.0]
    rd["head"]["areas"]["tail_msm"]["rejected_device_wait_us"] = [20.0]
    gate.from_dict(doc)
    rd["base"]["areas"]["tail_msm"]["rejected_device_wait_us"] = [0.0] * 2
    with pytest.raises(ValueError, match="round 1: base tail_msm: rejected_device_wait_us is not a list"):
        gate.from_dict(doc)
    doc = _gate_doc()
    doc["config"]["rounds"] = 10 ** 26
    with pytest.raises(ValueError, match="config.rounds or samples"):
        gate.from_dict(doc)


@pytest.mark.parametrize("key, value, what", [
    ("asked_s", 5, "asked_s is not a list"), ("gc_s", {"a": 1}, "gc_s is not a list"),
    ("asked_s", [0.1, float("nan"), 0.1], "asked_s is not a list"), ("asked_s", [0.1] * 4, "asked_s is not a list"),
    ("gc_s", [1e308, 0, 0], "gc_s is not a list"), ("number", 1e308, "number is not a count"),
    ("number", True, "number is not a count"), ("preempted", [1.5, 0, 0], "preempted is not a list of counts"),
    ("preempted", [True, 0, 0], "preempted is not a list of counts"), ("preempted", [0] * 4, "preempted is not a list"),
    ("preempted", [-1, 0, 0], "preempted is not a list of counts"),
    ("host_s", [0.1, -1.0, 0.1], "host_s is not a list"), ("guard_s", "0.1", "guard_s is not a list"),
    ("rival_idle_ms", [0.1, float("nan"), 0.1], "rival_idle_ms is not a list"),
    ("foreign_ms", [0.1, -1.0, 0.1], "foreign_ms is not a list"), ("foreign_ms", [0.1] * 4, "foreign_ms is not a list"),
    ("rival_idle_ms", [0.1] * 4, "rival_idle_ms is not a list"),
    # JSON allows any integer; one past a float's range is no figure, and no OverflowError either
    ("foreign_ms", [0.1, 10 ** 400, 0.1], "foreign_ms is not a list"), ("asked_s", [10 ** 400] * 3, "asked_s is not"),
    ("device_wait_us", [12.0, -1.0, 12.0], "device_wait_us is not a list of microseconds"),
    ("device_wait_us", [12.0, 10 ** 400, 12.0], "device_wait_us is not a list of microseconds"),
    ("device_wait_us", [12.0] * 4, "device_wait_us is not a list of microseconds"),
    ("device_wait_us", "abc", "device_wait_us is not a list"), ("device_wait_us", 5, "device_wait_us is not a list"),
    ("device_wait_us", {"a": 1}, "device_wait_us is not a list"),
    ("device_wait_us", [float("nan")] * 3, "device_wait_us is not a list"),
    ("rejected_device_wait_us", [12.0, -3.0], "rejected_device_wait_us is not a list"),
    ("rejected_device_wait_us", "12", "rejected_device_wait_us is not a list"),
])
def test_a_gate_json_with_crafted_sampling_costs_is_refused_by_name(key, value, what):
    """What the report's Sampling line adds up is checked like the samples: one clear error, never a crash."""
    doc = _gate_doc()
    doc["outcomes"][0]["rounds"][2]["base"]["areas"]["tail_msm"][key] = value
    with pytest.raises(ValueError, match=f"round 2: base tail_msm: {what}"):
        gate.from_dict(doc)
    doc = _gate_doc()
    doc["outcomes"][0]["rounds"][0]["head"]["areas"]["b_g2"] = 7          # a phase entry that is no table
    with pytest.raises(ValueError, match="round 0: head b_g2: not a phase's samples"):
        gate.from_dict(doc)
    doc = _gate_doc()
    doc["outcomes"][0]["rounds"][0]["head"]["areas"]["tail_msm"].update(asked_s=[0.2, 0.2, 0.2], gc_s=[0.1, None])
    assert "Sampling: 3 samples in 0.6 s" in report.markdown(gate.from_dict(doc))
    assert "Switched out" not in report.markdown(gate.from_dict(doc))
    doc["outcomes"][0]["rounds"][0]["head"]["areas"]["tail_msm"]["preempted"] = [0, 2, None]
    doc["outcomes"][0]["rounds"][1]["base"]["areas"]["tail_msm"]["preempted"] = [1, 0, 0]
    assert "`tail_msm` 2 of 5 samples" in report.markdown(gate.from_dict(doc))


@pytest.mark.parametrize("times", [5, {"ready_s": -1.0}, {"ready_s": float("inf")}, {"sampled_s": "1"},
                                   {"setup_s": 1.0}, {"ready_s": 1e308}])
def test_a_gate_json_with_crafted_round_times_is_refused_by_name(times):
    """A round's times are seconds of its three stages, nothing else: a crafted value is refused by name."""
    doc = _gate_doc()
    doc["outcomes"][0]["rounds"][1]["times"] = times
    with pytest.raises(ValueError, match="round 1: times"):
        gate.from_dict(doc)
    doc["outcomes"][0]["rounds"][1]["times"] = {"ready_s": 9.5, "sampled_s": 5.5, "closed_s": 1.0}
    assert "Rounds: 1 in 16.0 s" in report.markdown(gate.from_dict(doc))


@pytest.mark.parametrize("key, value", [("idle_cpu_ms", -5.0), ("idle_cpu_ms", "nan"), ("idle_cpu_ms", True),
                                        ("idle_cpu_where", "b_g2: 12 (x\n# PWN) 3 ms"), ("idle_cpu_where", "x" * 10**6),
                                        ("idle_cpu_where", 7), ("idle_stopped", "yes"), ("idle_stopped", 1)])
def test_a_gate_json_with_crafted_idle_cpu_is_refused_by_name(key, value):
    """What an idle worker ran is data from a machine that ran the pull request: a number of ms, and where (phase,
    thread id and a name of word characters, ms), nothing else; a well-formed one loads."""
    doc = _gate_doc()
    doc["outcomes"][0]["rounds"][1]["head"][key] = value
    with pytest.raises(ValueError, match="round 1: head: idle CPU"):
        gate.from_dict(doc)
    doc["outcomes"][0]["rounds"][1]["head"].update(idle_cpu_ms=3.1,
                                                   idle_cpu_where="b_g2: 12 (cuda-EvtHandlr) 3.1 ms", idle_stopped=True)
    gate.from_dict(doc)


def test_a_gate_json_whose_worker_times_exceed_the_round_trip_is_refused():
    """A sample's worker wall is part of its round trip: more than it is a crafted file. (The NVML checks are the
    gate's, between the round trips.)"""
    doc = _gate_doc()
    ar = doc["outcomes"][0]["rounds"][0]["head"]["areas"]["tail_msm"]
    ar.update(asked_s=[0.2, 0.2, 0.2], host_s=[0.1, 0.3, 0.1], guard_s=[0.01, 0.01, 0.01])
    with pytest.raises(ValueError, match="host_s is more than the sample's round trip"):
        gate.from_dict(doc)
    ar["host_s"][1] = 0.1
    assert "Sampling: 3 samples in 0.6 s of round trips" in report.markdown(gate.from_dict(doc))
    assert "the rest 0.3 s (requests and replies)." in report.markdown(gate.from_dict(doc))    # no NVML on a CPU


def test_a_gate_json_with_a_crafted_idle_allowance_is_refused():
    doc = _gate_doc()
    doc["config"]["max_idle_cpu_ms"] = "lots"
    with pytest.raises(ValueError, match="config.max_idle_cpu_ms"):
        gate.from_dict(doc)


def test_a_report_too_long_for_a_comment_is_cut_to_its_verdict(tmp_path):
    """GitHub refuses a comment past 65,536 characters: a head whose error text is longer (its own output)
    must not leave the pull request without a comment. The verdict and the run's link stay."""
    from cuzk.cli import main
    doc = _gate_doc()
    doc["outcomes"][0].update(status="error", message="x " * 60_000)
    f, out = tmp_path / "gate.json", tmp_path / "comment.md"
    f.write_text(json.dumps(doc))
    assert main(["gate", "--from-json", str(f), "--comment", str(out), "--run-url",
                 "https://github.com/o/r/actions/runs/1"]) == 0
    text = out.read_text()
    assert len(text) <= 65_536 and text.splitlines()[0] == report.COMMENT_MARKER
    assert headings(text)[0].startswith("## cuzk gate **FAIL: not judged**")
    assert "[the gate's run](https://github.com/o/r/actions/runs/1)" in text and "more than a comment holds" in text
    doc["deps_changed"] = [f"d{i}/" + "y" * 3000 for i in range(1000)]     # the verdict line alone too long
    f.write_text(json.dumps(doc))
    assert main(["gate", "--from-json", str(f), "--comment", str(out)]) == 0
    text = out.read_text()
    assert len(text) <= 65_536 and "the head changes 1000 dependency files" in headings(text)[0]
