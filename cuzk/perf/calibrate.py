"""How well the gate works, measured: false alarms on A/A, detection of injected slowdowns.

    python -m cuzk.perf.calibrate --runs 10 --inject tail_msm:0.10 [--config perf-gate.toml]

builds a throwaway git repo from the project (its tracked and unignored files), commits a
change on top (none for A/A), runs `cuzk gate` on the pair `--runs` times, and prints the
exit codes, the flagged phases and the wall times. The tests use the same repo builders.

A slowdown is injected by wrapping one CPU backend phase so that every call also burns
`fraction` of its own duration in useless arithmetic: a real, proportional extra cost in that
phase only, of known size.
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

BACKEND_FILE = "cuzk/backend/cpu.py"


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def project_files(project: Path) -> list[str]:
    out = _git(project, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    return sorted({f for f in out.split("\0") if f and (project / f).is_file()})


def make_repo(project: Path, dest: Path) -> str:
    """A new git repo at dest holding the project's files as one commit; returns its SHA."""
    project, dest = Path(project), Path(dest)
    for f in project_files(project):
        (dest / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(project / f, dest / f)
    _git(dest, "init", "-q", "-b", "main")
    _git(dest, "config", "user.email", "gate@cuzk.invalid")
    _git(dest, "config", "user.name", "cuzk gate test")
    _git(dest, "config", "commit.gpgsign", "false")
    _git(dest, "add", "-A")
    _git(dest, "commit", "-q", "-m", "project")
    return _git(dest, "rev-parse", "HEAD").strip()


def commit_change(repo: Path, path: str, edit, message: str) -> str:
    """Apply edit(text) -> text to one file, commit, return the SHA."""
    p = Path(repo) / path
    p.write_text(edit(p.read_text()))
    _git(repo, "commit", "-q", "-am", message)
    return _git(repo, "rev-parse", "HEAD").strip()


def slowdown_patch(phase: str, fraction: float):
    """An edit of cuzk/backend/cpu.py that makes `phase` cost (1 + fraction) times as much."""
    def edit(text: str) -> str:
        if f"def {phase}(" not in text:
            raise ValueError(f"{BACKEND_FILE} has no method {phase}")
        return text + f'''

# injected by cuzk.perf.calibrate: {phase} burns {fraction:.0%} of its own time on top
import time as _time

_{phase}_real = CpuBackend.{phase}


def _{phase}_slowed(self, *args, **kwargs):
    t0 = _time.perf_counter()
    out = _{phase}_real(self, *args, **kwargs)
    end = _time.perf_counter() + {fraction!r} * (_time.perf_counter() - t0)
    x = 1
    while _time.perf_counter() < end:
        x = (x * 6364136223846793005 + 1) % 2**64
    return out


CpuBackend.{phase} = _{phase}_slowed
'''
    return edit


def raise_patch(phase: str):
    """An edit of cuzk/backend/cpu.py whose `phase` raises."""
    def edit(text: str) -> str:
        if f"def {phase}(" not in text:
            raise ValueError(f"{BACKEND_FILE} has no method {phase}")
        return text + f'''

def _{phase}_broken(self, *args, **kwargs):
    raise RuntimeError("{phase} is broken on purpose (cuzk.perf.calibrate)")


CpuBackend.{phase} = _{phase}_broken
'''
    return edit


def run_gate(repo: Path, base: str, head: str, config: Path, out: Path | None = None) -> tuple[int, dict, float]:
    cmd = [sys.executable, "-m", "cuzk", "gate", "--repo", str(repo), "--base", base, "--head", head,
           "--config", str(config)]
    if out is not None:
        cmd += ["--out", str(out)]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    data = json.loads((out / "gate.json").read_text()) if out is not None and (out / "gate.json").exists() else {}
    data["stdout"], data["stderr"] = p.stdout, p.stderr
    return p.returncode, data, wall


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m cuzk.perf.calibrate", description=__doc__.split("\n\n")[0])
    ap.add_argument("--project", default=".", help="the project checkout to copy")
    ap.add_argument("--config", default=None, help="gate config (default: the project's perf-gate.toml)")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--inject", default=None, metavar="PHASE:FRACTION", help="e.g. tail_msm:0.10; none = A/A")
    ap.add_argument("--workdir", required=True, help="an empty directory for the throwaway repo and outputs")
    args = ap.parse_args(argv)
    project, work = Path(args.project).resolve(), Path(args.workdir).resolve()
    work.mkdir(parents=True, exist_ok=True)
    repo = work / "repo"
    base = make_repo(project, repo)
    head = base
    if args.inject:
        phase, frac = args.inject.split(":")
        head = commit_change(repo, BACKEND_FILE, slowdown_patch(phase, float(frac)), f"slow {phase} by {frac}")
    config = Path(args.config).resolve() if args.config else project / "perf-gate.toml"
    rows = []
    for i in range(args.runs):
        rc, data, wall = run_gate(repo, base, head, config, work / f"run{i}")
        flagged = sorted({c["area"] for o in data.get("outcomes", []) for c in o.get("comparisons", [])
                          if c["verdict"] == "regression"})
        ratios = {c["area"]: round(c["ratio"], 4) for o in data.get("outcomes", []) for c in o.get("comparisons", [])
                  if o["status"] == "ok"}
        rows.append({"run": i, "exit": rc, "flagged": flagged, "wall_s": round(wall, 1), "ratios": ratios})
        print(json.dumps(rows[-1]), flush=True)
    codes = [r["exit"] for r in rows]
    print(json.dumps({"inject": args.inject, "runs": len(rows), "exit_codes": {c: codes.count(c) for c in set(codes)},
                      "wall_s_median": statistics.median(r["wall_s"] for r in rows)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
