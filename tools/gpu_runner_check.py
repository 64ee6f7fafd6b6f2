"""Checks that the suite measures this machine's GPU, end to end, as a new GPU runner should:

    python tools/gpu_runner_check.py --workdir DIR [--phase tail_msm] [--target cuda:18] [--rounds 8]

1. asv (`run -E existing`, the path that needs no package registry) measures one phase at a cuda
   target: samples, not n/a; CUZK_REQUIRE_GPU=1 is set, so a GPU that cannot run fails loudly.
2. `cuzk gate` with that cuda workload required exits 0 on an A/A pair (head changes the README).
3. `cuzk gate` exits 1 and names the phase when head adds the phase's own device time once more (a spin
   kernel on its stream, cuzk.perf.calibrate's GPU injection at +100%; its results unchanged).
Prints a table and exits 0 when every step gave what it should, 1 otherwise.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from cuzk.perf.calibrate import CUDA_FILE, _git, commit_change, gpu_slowdown_patch, make_repo  # noqa: E402
from cuzk.perf.suite import time_benchmark  # noqa: E402
from cuzk.perf.workload import Spec  # noqa: E402

def gate(repo: Path, base: str, head: str, config: Path, out: Path, env: dict) -> tuple[int, dict | None, str, float]:
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "cuzk", "gate", "--repo", str(repo), "--base", base, "--head", head,
                        "--config", str(config), "--out", str(out)], stdout=subprocess.PIPE, text=True, env=env)
    wall = time.perf_counter() - t0        # the gate's progress goes to stderr as it runs
    data = json.loads((out / "gate.json").read_text()) if (out / "gate.json").exists() else None
    first = p.stdout.splitlines()[0] if p.stdout else "(no report)"
    return p.returncode, data, first, wall


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--phase", default="tail_msm")
    ap.add_argument("--target", default="cuda:18")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--samples", type=int, default=5)
    ap.add_argument("--steps", default="asv,broken,aa,slow",
                    help="which of asv, broken, aa, slow to run (default: all)")
    args = ap.parse_args()
    steps = set(args.steps.split(","))
    work = Path(args.workdir).resolve()
    project = Path(__file__).resolve().parents[1]
    repo = work / "repo"
    base = make_repo(project, repo)
    env = dict(os.environ, CUZK_REQUIRE_GPU="1")
    rows, ok = [], True

    # 1. asv measures the phase at the cuda target
    if "asv" in steps:
        ok &= asv_step(args, repo, base, env, rows)
    if "broken" in steps:
        ok &= broken_step(args, repo, base, env, rows, work)
    config = work / "gate.toml"
    spec = Spec.parse_target(args.target)
    config.write_text(f"[gate]\nrounds = {args.rounds}\nsamples = {args.samples}\nalpha = 0.01\nthreshold = 0.05\n"
                      f"worker_timeout_s = 900\n\n[[workload]]\nbackend = \"{spec.backend}\"\n"
                      f"circuit = \"{spec.circuit}\"\nlog_size = {spec.log_size}\nopts = \"default\"\nrequired = true\n")
    # 2-3. the gate, cuda workload required: A/A, then the phase slowed
    if "aa" in steps:
        _git(repo, "checkout", "-q", "-B", "aa", base)
        aa = commit_change(repo, "README.md", lambda t: t + "\nA/A: no code change.\n", "docs only")
        code, data, first, wall = gate(repo, base, aa, config, work / "gate-aa", env)
        good = code == 0
        ok &= good
        rows.append(("gate A/A", f"{args.target} required", "exit 0", f"exit {code}: {first[:150]}", wall, good))
    if "slow" in steps:
        _git(repo, "checkout", "-q", "-B", "slow", base)
        slow = commit_change(repo, CUDA_FILE, gpu_slowdown_patch(args.phase, 1.0), f"{args.phase}: +100% device time")
        code, data, first, wall = gate(repo, base, slow, config, work / "gate-slow", env)
        flagged = [c["area"] for o in (data or {}).get("outcomes", []) for c in o["comparisons"]
                   if c["verdict"] == "regression"]
        good = code == 1 and flagged == [args.phase]
        ok &= good
        rows.append(("gate slowed", f"{args.phase} +100% device time", f"exit 1, only {args.phase}",
                     f"exit {code}, flagged {flagged}: {first[:150]}", wall, good))
    for name in ("gate-aa", "gate-slow"):
        if (work / name / "report.md").exists():
            print(f"\n----- {name}/report.md -----\n" + (work / name / "report.md").read_text())
    print("\n| step | what | expected | got | wall | ok |\n|---|---|---|---|---|---|")
    for step, what, exp, got, wall, good in rows:
        print(f"| {step} | {what} | {exp} | {got} | {wall:.0f} s | {'yes' if good else '**NO**'} |")
    return 0 if ok else 1


def asv_run(args, repo: Path, base: str, env: dict):
    bench = re.escape(time_benchmark(args.phase, args.target)) + re.escape(f"({args.target!r}, 'default')")
    subprocess.run([sys.executable, "-m", "asv", "machine", "--yes", "--machine", "runner-check"], cwd=repo,
                   env=env, check=True, capture_output=True)
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "asv", "run", "-E", f"existing:{sys.executable}", "--set-commit-hash",
                        base, "--record-samples", "--machine", "runner-check", "--launch-method", "spawn",
                        "--show-stderr", "--bench", bench], cwd=repo, env=env, capture_output=True, text=True)
    return p, time.perf_counter() - t0


def broken_step(args, repo: Path, base: str, env: dict, rows: list, work: Path) -> bool:
    """The same benchmark with CuPy made unimportable: the GPU is there, so asv must fail, not skip."""
    fake = work / "no-cupy"
    (fake / "cupy").mkdir(parents=True, exist_ok=True)
    (fake / "cupy/__init__.py").write_text("raise ImportError('CuPy made unimportable by gpu_runner_check')\n")
    p, wall = asv_run(args, repo, base, dict(env, ASV_PYTHONPATH=str(fake), CUZK_REQUIRE_GPU="0"))
    out = p.stdout + p.stderr
    m = re.search(r"GpuUnusable: ([^\n]{0,160})", out)
    good = p.returncode == 2 and m is not None and "cannot run" in m.group(1)
    rows.append(("asv run, CuPy broken", f"{args.phase} {args.target}", "exit 2, fails",
                 f"exit {p.returncode}: {m.group(1) if m else out[-200:]!r}", wall, good))
    return good


def asv_step(args, repo: Path, base: str, env: dict, rows: list) -> bool:
    p, wall = asv_run(args, repo, base, env)
    samples, value = [], None
    files = [f for f in (repo / ".asv/results/runner-check").glob("*.json") if f.name != "machine.json"]
    if files:
        res = json.loads(files[0].read_text())
        row = dict(zip(res["result_columns"], res["results"][time_benchmark(args.phase, args.target)]))
        targets, opts = row["params"]
        i = targets.index(repr(args.target)) * len(opts) + opts.index("'default'")
        value, samples = row["result"][i], (row.get("samples") or [[]] * (i + 1))[i] or []
    good = p.returncode == 0 and value is not None and value == value and len(samples) >= 7
    rows.append(("asv run", f"{args.phase} {args.target}", "samples", f"exit {p.returncode}, {len(samples)} samples, "
                 f"median {value * 1e3:.3f} ms" if good else f"exit {p.returncode}, value {value}", wall, good))
    if not good:
        print((p.stdout + p.stderr)[-3000:], file=sys.stderr)
    return good


if __name__ == "__main__":
    sys.exit(main())
