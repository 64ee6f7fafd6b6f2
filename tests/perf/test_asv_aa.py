"""`asv continuous` with the README's settings on the CPU target: over 5 tries of an A/A pair (the head
changes only the README) the median ratio is within --factor (no side is favoured), and the same settings
report a 2x slowdown of the phase. A single A/A try may be flagged: each process of the CPU reference sits
at its own level (the README gives the measured rate), which is why the README sends a change to the gate.

asv continuous refuses an existing environment ("No range spec may be specified"), and its virtualenvs
need a package registry, so each try does what it does, with its settings (suite.continuous_args), one
step at a time: the two commits' rounds in turn (--interleave-rounds; suite.CONTINUOUS_ROUNDS processes a
side, each an `asv run` of one round whose samples are added to the side's), then `asv compare` with the
same --factor and --split. Each side imports its own commit's code: a checkout of it first on the
benchmark processes' path (ASV_PYTHONPATH; asv removes PYTHONPATH there).

The same A/A on another target (a GPU runner; asv's options after --):

    python tests/perf/test_asv_aa.py --target cuda:18 --tries 5 --dest /tmp/aa -- --cpu-affinity 2
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from cuzk.perf import suite

REPO = Path(__file__).resolve().parents[2]
if "pytest" in sys.modules:            # run as a script (a GPU runner's perf extra), it needs no pytest
    import pytest
    # A/A and 2x timings: no other test beside them (tests/conftest.py)
    pytestmark = pytest.mark.serial
MACHINE = "aa-test"
PHASE = "prep_msm"        # ~15 us a call on the CPU at 2^8: host-bound, the phase whose A/A pairs flipped
TARGET = "cpu:8"
TRIES = 5


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


class Pair:
    """A throwaway repo of the project with asv's machine registered and a checkout of each commit."""

    def __init__(self, dest: Path, project: Path = REPO):
        from asv_synth import machine_repo
        self.dest = dest
        self.repo, self.base, self.env = machine_repo(project, dest, MACHINE)

    def commit(self, path: str, edit, message: str) -> str:
        from cuzk.perf.calibrate import commit_change
        return commit_change(self.repo, path, edit, message)

    def tree(self, sha: str) -> Path:
        tree = self.dest / "trees" / sha[:12]
        if not tree.exists():
            _git(self.repo, "worktree", "add", "-q", "--detach", str(tree), sha)
        return tree

    def run(self, sha: str, bench: str, rounds: int, extra: list[str] = (), append: bool = False) -> None:
        """asv run of one commit's code (samples recorded; added to the commit's earlier ones with append)."""
        env = dict(self.env, ASV_PYTHONPATH=str(self.tree(sha)))
        keep = "--append-samples" if append else "--record-samples"
        p = subprocess.run([sys.executable, "-m", "asv", "run", "-E", f"existing:{sys.executable}",
                            "--set-commit-hash", sha, keep, "-a", f"rounds={rounds}",
                            "--machine", MACHINE, "--bench", bench, "--show-stderr", *extra],
                           cwd=self.repo, env=env, capture_output=True, text=True, timeout=600)
        if p.returncode != 0:
            raise RuntimeError(f"asv run of {sha[:10]} exited {p.returncode}:\n{(p.stdout + p.stderr)[-4000:]}")

    def interleaved(self, base: str, head: str, bench: str, rounds: int, extra: list[str] = ()) -> None:
        """Both sides' rounds in turn, one process each, as `asv continuous --interleave-rounds` runs them:
        a drift of the host's speed lands on both sides instead of on one."""
        for r in range(rounds):
            for sha in (base, head):
                self.run(sha, bench, 1, extra, append=r > 0)

    def samples(self, sha: str, name: str, params: tuple) -> list[float]:
        """The recorded samples of one point ([] where it was not measured)."""
        f = next((self.repo / ".asv/results" / MACHINE).glob(f"{sha[:8]}-*.json"))
        res = json.loads(f.read_text())
        row = dict(zip(res["result_columns"], res["results"][name]))
        targets, opts = row["params"]
        i = targets.index(params[0]) * len(opts) + opts.index(params[1])
        return [s for s in (row.get("samples") or [None] * (i + 1))[i] or [] if s == s]

    def compare(self, base: str, head: str, factor: float) -> dict[str, tuple[str, str]]:
        """asv compare --factor --split: {benchmark (params): (its mark, its ratio)} for every row."""
        p = subprocess.run([sys.executable, "-m", "asv", "compare", base, head, "--machine", MACHINE,
                            "--factor", str(factor), "--split"], cwd=self.repo, env=self.env,
                           capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stdout + p.stderr
        rows = {}
        for line in p.stdout.splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) == 5 and cells[4].startswith("bench_"):
                rows[cells[4]] = (cells[0], cells[3])
        return rows


def _point(target: str, phase: str = PHASE) -> tuple[str, tuple, str]:
    name = suite.time_benchmark(phase, target)
    params = (repr(target), "'default'")
    return name, params, "^" + re.escape(f"{name}({params[0]}, {params[1]})") + "$"


def _settings() -> tuple[int, float]:
    """rounds and factor from the README's `asv continuous` command, which must be suite.continuous_args."""
    args = suite.continuous_args()
    cmd = "asv continuous " + " ".join(args)
    assert cmd in (REPO / "README.md").read_text(), f"the README's command is not `{cmd} ...`"
    return int(args[args.index("-a") + 1].split("=")[1]), float(args[args.index("--factor") + 1])


def test_the_readme_recommends_the_gate_not_asv_continuous():
    """A/A pairs flagged on the H200 (docs/perf-log.md): the README says so, and its GPU runner block runs the
    gate, not `asv continuous`."""
    text = (REPO / "README.md").read_text()
    asv = text.split("### asv", 1)[1].split("\n### ", 1)[0]
    assert "`asv continuous` is not recommended for judging a change" in asv and "cuzk gate" in asv
    runner = asv.split("On a GPU runner", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    assert "cuzk gate --base main --head HEAD" in runner and "asv continuous" not in runner


def test_an_aa_pair_favours_no_side_and_a_2x_slowdown_is_reported(tmp_path):
    from cuzk.perf.calibrate import BACKEND_FILE, slowdown_patch
    rounds, factor = _settings()
    pair = Pair(tmp_path)
    head = pair.commit("README.md", lambda t: t + "\nA change to the documentation only.\n", "docs only")
    slow = pair.commit(BACKEND_FILE, slowdown_patch(PHASE, 1.0), f"{PHASE} twice as slow")
    name, params, bench = _point(TARGET)
    row = f"{name}({params[0]}, {params[1]})"
    per_side = rounds * suite.SAMPLES["cpu"]
    verdicts = []
    for _ in range(TRIES):
        pair.interleaved(pair.base, head, bench, rounds)
        for sha in (pair.base, head):          # no figure is no verdict
            got = pair.samples(sha, name, params)
            assert len(got) == per_side and min(got) > 0, (sha, got)
        verdicts.append(pair.compare(pair.base, head, factor)[row])
    # Each process of the CPU reference sits at its own level (prep_msm at cpu:8: about 15 or 26 us a call,
    # 2-vCPU VM, 2026-12-03), so about one try in eleven is flagged (README). A side favoured by the harness
    # (a slower tree on one side's path, a side always run first) moves the median of the tries' ratios.
    ratios = sorted(float(r.lstrip("~")) for _, r in verdicts)
    median = ratios[len(ratios) // 2]
    assert 1 / factor < median < factor, \
        f"A/A median ratio {median} over {verdicts} (load average {os.getloadavg()})"
    pair.run(slow, bench, rounds)
    mark, ratio = pair.compare(pair.base, slow, factor)[row]
    assert mark == "+" and float(ratio.lstrip("~")) >= factor, (mark, ratio, verdicts)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="A/A tries of `asv continuous`'s settings on one target")
    ap.add_argument("--target", default=TARGET)
    ap.add_argument("--phase", default=PHASE)
    ap.add_argument("--tries", type=int, default=TRIES)
    ap.add_argument("--rounds", type=int, default=suite.CONTINUOUS_ROUNDS,
                    help=f"processes a side (default {suite.CONTINUOUS_ROUNDS}, the README's)")
    ap.add_argument("--dest", type=Path, required=True, help="an empty or missing folder for the throwaway repo")
    ap.add_argument("asv_args", nargs="*", help="more `asv run` options (after --), e.g. --cpu-affinity 2")
    a = ap.parse_args(argv)
    if a.dest.exists() and any(a.dest.iterdir()):
        print(f"--dest {a.dest}: not empty", file=sys.stderr)
        return 2
    if a.phase not in suite.ASV_TIME_BENCHMARKS or a.phase == "synthesis":
        print(f"--phase {a.phase!r}: not a phase of the suite's targets", file=sys.stderr)
        return 2
    if a.target not in suite.TARGETS + suite.SCALE_TARGETS:
        print(f"--target {a.target!r}: the suite has {', '.join(suite.TARGETS + suite.SCALE_TARGETS)}",
              file=sys.stderr)
        return 2
    name, params, bench = _point(a.target, a.phase)
    a.dest.mkdir(parents=True, exist_ok=True)
    rounds, factor = a.rounds, suite.CONTINUOUS_FACTOR
    pair = Pair(a.dest)
    head = pair.commit("README.md", lambda t: t + "\nA change to the documentation only.\n", "docs only")
    flagged = 0
    for i in range(a.tries):
        try:
            pair.interleaved(pair.base, head, bench, rounds, a.asv_args)
        except RuntimeError as e:
            print(f"try {i + 1}: {e}", file=sys.stderr)
            return 2
        n = [len(pair.samples(s, name, params)) for s in (pair.base, head)]
        if min(n) == 0:
            print(f"try {i + 1}: not measured ({n} samples): no verdict", file=sys.stderr)
            return 2
        mark, ratio = pair.compare(pair.base, head, factor)[f"{name}({params[0]}, {params[1]})"]
        flagged += mark != ""
        print(f"try {i + 1}: {a.phase} at {a.target}: ratio {ratio}, {n} samples, "
              f"{'flagged ' + mark if mark else 'no change'} at --factor {factor}", flush=True)
    print(f"{flagged} of {a.tries} A/A tries flagged")
    return 1 if flagged else 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))     # tests/: asv_synth
    raise SystemExit(main())
