"""How well the gate works, measured: false alarms on A/A, detection of injected slowdowns.

    python -m cuzk.perf.calibrate --runs 10 --inject tail_msm:0.10 [--config perf-gate.toml] [--json F]

builds a throwaway git repo from the project (its tracked and unignored files), commits a
change on top (none for A/A), runs `cuzk gate` on the pair `--runs` times, and prints the
exit codes, the flagged phases and the wall times, then a summary: phase tests, false alarms
(a phase flagged that was not slowed), detections of each slowed phase, gate wall time.

A slowdown is injected in the backend of each of the config's workloads, in each named phase
(`--inject ntt_msm_h:0.03,tail_msm:0.03`: every phase is judged on its own, so one run tests each), of
a known fraction of that phase's own time: on the CPU reference the phase also burns `fraction`
of its own duration in useless arithmetic; on the GPU a spin kernel runs on the phase's stream
for `fraction` of the phase's own device time (cuzk/perf/inject.py), counted by the same CUDA
events that time the phase.

Runs add up across invocations (a device lease holds two or three 2^24 gate runs): `--json F` is rewritten after
every run, so a killed invocation keeps the runs it finished, and

    python -m cuzk.perf.calibrate --merge A.json B.json ... [--json F]

pools the runs of several files into one summary. Each file names its config (path and SHA-256), injection and
noise records; files that differ in any of these are refused, as is a file that is not calibrate's.

Thresholds from measured noise (cuzk/perf/noise.py): `--record-noise MACHINE` makes the runs A/A
calibrations (`cuzk gate --calibrate`), each leaving WORKDIR/runN/gate-noise.jsonl; `--noise FILE`
then runs A/A or injected pairs under the thresholds derived from those records.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from .. import files
from .gate_config import load
from .noise import load_paths, record_files
from .values import is_int, is_number
from .workload import AREAS

BACKEND_FILE = "cuzk/backend/cpu/__init__.py"
CUDA_FILE = "cuzk/backend/cuda/__init__.py"


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
    """An edit of the CPU backend (BACKEND_FILE) that makes `phase` cost (1 + fraction) times as much."""
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


def gpu_slowdown_patch(phase: str, fraction: float):
    """An edit of the CUDA backend (CUDA_FILE): `phase` adds a spin of `fraction` of its own device time."""
    def edit(text: str) -> str:
        if f"def {phase}(" not in text:
            raise ValueError(f"{CUDA_FILE} has no method {phase}")
        return text + f'''

# injected by cuzk.perf.calibrate: {phase} adds {fraction:.0%} of its own device time on its stream
from cuzk.perf.inject import DeviceSlowdown as _DeviceSlowdown  # noqa: E402

CudaBackend.{phase} = _DeviceSlowdown({fraction!r}).wrap(CudaBackend.{phase})
'''
    return edit


def raise_patch(phase: str):
    """An edit of the CPU backend (BACKEND_FILE) whose `phase` raises."""
    def edit(text: str) -> str:
        if f"def {phase}(" not in text:
            raise ValueError(f"{BACKEND_FILE} has no method {phase}")
        return text + f'''

def _{phase}_broken(self, *args, **kwargs):
    raise RuntimeError("{phase} is broken on purpose (cuzk.perf.calibrate)")


CpuBackend.{phase} = _{phase}_broken
'''
    return edit


def run_gate(repo: Path, base: str, head: str, config: Path, out: Path | None = None, noise=(),
             record_noise: str | None = None) -> tuple[int, dict, float]:
    """One `cuzk gate` run; `noise`: A/A records its thresholds follow; `record_noise`: a machine name, and the
    run is `--calibrate` (A/A of base, its record written to out/gate-noise.jsonl)."""
    cmd = [sys.executable, "-m", "cuzk", "gate", "--repo", str(repo), "--base", base, "--config", str(config)]
    cmd += ["--calibrate", "--machine", record_noise] if record_noise else ["--head", head]
    for n in noise:
        cmd += ["--noise", str(n)]
    if out is not None:
        cmd += ["--out", str(out)]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    data = json.loads((out / "gate.json").read_text()) if out is not None and (out / "gate.json").exists() else {}
    data["stdout"], data["stderr"] = p.stdout, p.stderr
    return p.returncode, data, wall


def parse_inject(inject: str | None) -> list[tuple[str, float]]:
    """`PHASE:FRACTION[,PHASE:FRACTION...]` as [(phase, fraction)]; None or "": A/A. Each phase is slowed in
    its own gate test, so one run counts a detection for each and false alarms over the rest."""
    out = []
    for part in (inject or "").split(","):
        if not part.strip():
            continue
        phase, sep, frac = part.strip().partition(":")
        try:
            f = float(frac)
        except ValueError:
            f = math.nan
        if not sep or not phase or not 0 < f < 10:
            raise ValueError(f"--inject {inject!r}: each part is PHASE:FRACTION, e.g. tail_msm:0.03")
        if phase in dict(out):
            raise ValueError(f"--inject {inject!r}: {phase} is named twice")
        out.append((phase, f))
    return out


def summary(rows: list[dict], inject: str | None) -> dict:
    """Phase tests (a workload's phase in one gate run; the slowed phases' own are not counted),
    false alarms (a flagged phase that was not slowed), detections of each slowed phase."""
    slowed = {p for p, _ in parse_inject(inject)}

    def is_slowed(key: str) -> bool:
        return key.split(":", 1)[1] in slowed
    judged = [r for r in rows if r["exit"] in (0, 1)]
    codes = [r["exit"] for r in rows]
    out = {"inject": inject, "runs": len(rows), "judged_runs": len(judged),
           "exit_codes": {str(c): codes.count(c) for c in sorted(set(codes))},
           "phase_tests": sum(1 for r in judged for k in r["ratios"] if not is_slowed(k)),
           "false_alarms": sum(1 for r in judged for k in r["flagged"] if not is_slowed(k)),
           "wall_s_median": statistics.median(r["wall_s"] for r in rows) if rows else None}
    trees = [r["tree"] for r in rows if r.get("tree")]
    if trees:
        out["runs_by_tree"] = {t: trees.count(t) for t in sorted(set(trees))}
    if slowed:
        keys = sorted({k for r in judged for k in r["ratios"] if is_slowed(k)})
        out["detected"] = {k: sum(1 for r in judged if k in r["flagged"]) for k in keys}
        out["detection_rate"] = {k: out["detected"][k] / len(judged) for k in keys}
        out["ratio_median"] = {k: statistics.median(r["ratios"][k] for r in judged if k in r["ratios"]) for k in keys}
    return out


KIND = "cuzk-calibrate"
MAX_DOC_BYTES = 16 << 20     # a calibrate JSON: ~2 KB a run
SETUP_KEYS = ("config_sha256", "inject", "noise_sha256", "record_noise")    # runs pool only where these match


class MergeError(ValueError):
    """A calibrate JSON that cannot be pooled: not calibrate's, damaged, or measured under another set-up."""


def _sha(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def setup_of(config: Path, inject: str | None, noise: list[Path], record_noise: str | None,
             project: Path | None = None) -> dict:
    """What a run was measured under: the config (by content), the injection, the noise records (by content),
    and the project's tree (its commit, "+changes" where the copy held uncommitted ones): runs of several trees
    pool, each keeping its tree, so a summary says which runs are which."""
    return {"config": str(config), "config_sha256": _sha(config), "inject": inject or None,
            "noise_sha256": sorted(_sha(n) for n in record_files(noise)), "record_noise": record_noise,
            "tree": tree_of(project) if project is not None else None}


def _tree_ok(t) -> bool:
    return t is None or (isinstance(t, str) and re.fullmatch(r"[0-9a-f]{40}(\+changes)?", t) is not None)


def tree_of(project: Path) -> str | None:
    """The project's commit, "+changes" where the copy holds uncommitted ones. CUZK_COMMIT, where set, says it
    instead ("-dirty" for changes): a copied tree whose .git is not the source's (a device machine's copy,
    tools/device_setup.sh) would name a stale commit."""
    given = os.environ.get("CUZK_COMMIT", "").strip()
    if given:
        tree = given[:-len("-dirty")] + "+changes" if given.endswith("-dirty") else given
        return tree if _tree_ok(tree) else None
    try:
        head = _git(project, "rev-parse", "HEAD").strip()
        dirty = _git(project, "status", "--porcelain").strip()     # untracked files are copied too (project_files)
    except (subprocess.CalledProcessError, OSError):
        return None
    return head + ("+changes" if dirty else "")


def write_doc(path: Path, setup: dict, rows: list[dict]) -> None:
    """The runs so far and their summary, replacing `path` whole by the output rule (files.write_outputs); one line,
    as docs/perf-data keeps them (its size is bounded in lines: tests/project/test_perf_log.py)."""
    doc = {"kind": KIND, "version": 1, "setup": setup, "runs": rows, "summary": summary(rows, setup["inject"])}
    files.write_outputs({path: json.dumps(doc) + "\n"})


def _saved(path: Path, setup: dict, rows: list[dict]) -> bool:
    """write_doc, or one line saying why not (a full disk): False, and the caller exits 2, never with a traceback."""
    try:
        write_doc(path, setup, rows)
    except files.OutputError as e:
        print(f"calibrate: {e}", file=sys.stderr)
        return False
    return True


def _read_doc(path: Path) -> dict:
    try:
        doc = json.loads(files.read_input(path, MAX_DOC_BYTES))
    except OSError as e:
        raise MergeError(f"{path}: {e.strerror or e}") from None
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        raise MergeError(f"{path}: not readable as JSON ({e})") from None
    if not isinstance(doc, dict) or doc.get("kind") != KIND or doc.get("version") != 1:
        raise MergeError(f"{path}: not a calibrate JSON (kind {KIND!r}, version 1)")
    setup, runs = doc.get("setup"), doc.get("runs")
    if not isinstance(setup, dict) or any(k not in setup for k in SETUP_KEYS) or not isinstance(runs, list):
        raise MergeError(f"{path}: no setup or runs")
    if not all(_tree_ok(x.get("tree") if isinstance(x, dict) else None) for x in [setup, *runs]):
        raise MergeError(f"{path}: a tree is not a commit id")
    inject = setup["inject"]
    try:                        # summary() reads it: what parse_inject refuses would fail after the runs are printed
        if inject is not None and not isinstance(inject, str):
            raise ValueError(f"not a string: {str(inject)[:40]}")
        parse_inject(inject)
    except ValueError as e:
        raise MergeError(f"{path}: setup.inject is no PHASE:FRACTION list ({e})") from None
    pos = lambda v: is_number(v) and 0 < v < math.inf
    for r in runs:
        ok = (isinstance(r, dict) and r.get("exit") in (0, 1, 2) and is_int(r["exit"])
              and isinstance(r.get("flagged"), list) and isinstance(r.get("ratios"), dict) and pos(r.get("wall_s"))
              and (r["ratios"] or r["exit"] == 2)      # a judged gate run had an ok workload: its phases tested
              and all(_test_key(k) and pos(v) for k, v in r["ratios"].items())
              and all(isinstance(k, str) and k in r["ratios"] for k in r["flagged"])
              and len(set(r["flagged"])) == len(r["flagged"]))         # a phase flagged twice would count twice
        if not ok:
            raise MergeError(f"{path}: a run is malformed: {str(r)[:120]}")
    return doc


def _test_key(k) -> bool:
    """A phase test's key as the run mode writes it: BACKEND:PHASE, e.g. cuda:tail_msm."""
    backend, _, area = k.partition(":") if isinstance(k, str) else ("", "", "")
    return backend in ("cpu", "cuda") and area in AREAS


def merge(paths: list[Path]) -> tuple[dict, list[dict]]:
    """The pooled set-up and runs of several calibrate JSONs; MergeError names the file that does not fit."""
    if not paths:
        raise MergeError("--merge needs at least one file")
    docs = [(p, _read_doc(p)) for p in paths]
    first_path, first = docs[0]
    key = {k: first["setup"][k] for k in SETUP_KEYS}
    rows, seen = [], {}
    for p, doc in docs:
        other = {k: doc["setup"][k] for k in SETUP_KEYS}
        if other != key:
            diff = ", ".join(k for k in SETUP_KEYS if other[k] != key[k])
            raise MergeError(f"{p}: measured under another set-up than {first_path} ({diff})")
        for r in doc["runs"]:
            row = dict(r, source=str(p), tree=r.get("tree", doc["setup"].get("tree")))
            same = json.dumps({k: v for k, v in row.items() if k != "source"}, sort_keys=True)
            if same in seen:            # a file given twice, or a pooled file beside one of its own
                raise MergeError(f"{p}: run {r.get('run')!r} is one {seen[same]} holds already: a run pooled twice")
            seen[same] = p
            rows.append(row)
    trees = {r["tree"] for r in rows}
    return dict(first["setup"], tree=trees.pop() if len(trees) == 1 else None), rows


def backends(config: Path) -> set[str]:
    return {w.spec.backend for w in load(config).workloads}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m cuzk.perf.calibrate", description=__doc__.split("\n\n")[0])
    ap.add_argument("--project", default=".", help="the project checkout to copy")
    ap.add_argument("--config", default=None, help="gate config (default: the project's perf-gate.toml)")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--inject", default=None, metavar="PHASE:FRACTION", help="e.g. tail_msm:0.10, or several: ntt_msm_h:0.03,tail_msm:0.03; none = A/A")
    ap.add_argument("--workdir", required=True, help="an empty directory for the throwaway repo and outputs")
    ap.add_argument("--json", metavar="FILE", help="write every run and the summary as JSON")
    ap.add_argument("--noise", action="append", default=[], metavar="PATH",
                    help="A/A noise records the gate's thresholds follow (repeatable; see cuzk gate --noise)")
    ap.add_argument("--record-noise", metavar="MACHINE",
                    help="A/A runs as `cuzk gate --calibrate`: each run's noise record in WORKDIR/runN/")
    ap.add_argument("--merge", nargs="+", metavar="JSON",
                    help="pool the runs of calibrate JSONs measured under one set-up; runs nothing")
    if argv is None:
        argv = sys.argv[1:]
    if "--merge" in argv:
        return _merge_main(ap, argv)
    args = ap.parse_args(argv)
    try:
        injects = parse_inject(args.inject)
    except ValueError as e:
        ap.error(str(e))
    if args.record_noise and (args.inject or args.noise):
        ap.error("--record-noise runs A/A under the config's thresholds: no --inject or --noise")
    project, work = Path(args.project).resolve(), Path(args.workdir).resolve()
    config = Path(args.config).resolve() if args.config else project / "perf-gate.toml"
    noise_in = {}
    for i, n in enumerate(args.noise, 1):        # a folder's records are read too: none may be the --json
        noise_in[f"--noise {i}"] = n
        if Path(n).is_dir():
            noise_in.update({f"--noise {i} ({f.name})": f for f in sorted(Path(n).glob("*.jsonl"))})
    _check_json(ap, args.json, {"--config": config, **noise_in})
    try:                    # every input judged before the project is copied: a bad one is one line, exit 2
        if args.runs < 1:
            raise ValueError(f"--runs {args.runs}: at least one gate run")
        used = backends(config)
        for phase, _ in injects:
            for backend in sorted(used):
                path = BACKEND_FILE if backend == "cpu" else CUDA_FILE
                if f"def {phase}(" not in files.read_input(project / path, 1 << 20):
                    raise ValueError(f"--inject {phase}: {path} has no method {phase} to slow")
        load_paths(args.noise)
        if work.exists() and (not work.is_dir() or any(work.iterdir())):
            raise ValueError(f"--workdir {args.workdir}: not a new path or an empty folder")
    except (OSError, ValueError) as e:         # ConfigError, NoiseError: ValueErrors that name their file
        print(f"calibrate: {getattr(e, 'filename', None) or ''}{': ' if getattr(e, 'filename', None) else ''}"
              f"{e.strerror if isinstance(e, OSError) and e.strerror else e}", file=sys.stderr)
        return 2
    work.mkdir(parents=True, exist_ok=True)
    repo = work / "repo"
    base = make_repo(project, repo)
    head = base
    for phase, frac in injects:
        for backend in sorted(used):
            path, patch = ((BACKEND_FILE, slowdown_patch) if backend == "cpu" else (CUDA_FILE, gpu_slowdown_patch))
            head = commit_change(repo, path, patch(phase, frac), f"slow {phase} by {frac} ({backend})")
    noise = [Path(n).resolve() for n in args.noise]
    setup = setup_of(config, args.inject, noise, args.record_noise, project)
    rows = []
    for i in range(args.runs):
        rc, data, wall = run_gate(repo, base, head, config, work / f"run{i}", noise, args.record_noise)
        tests = [(f"{o['spec']['backend']}:{c['area']}", c) for o in data.get("outcomes", []) if o["status"] == "ok"
                 for c in o.get("comparisons", [])]          # one phase test: a workload's phase, e.g. cuda:tail_msm
        flagged = sorted(k for k, c in tests if c["verdict"] == "regression")
        ratios = {k: round(c["ratio"], 4) for k, c in tests}
        thresholds = {k: round(c["threshold"], 4) for k, c in tests}
        rows.append({"run": i, "exit": rc, "flagged": flagged, "wall_s": round(wall, 1), "ratios": ratios,
                     "thresholds": thresholds, "tree": setup["tree"]})
        print(json.dumps(rows[-1]), flush=True)
        if args.json and not _saved(Path(args.json), setup, rows):
            return 2            # the runs so far are on stdout; more could not be kept either
    s = summary(rows, args.inject)
    print(json.dumps(s))
    return _verdict(s, rows)


def _verdict(s: dict, rows: list[dict]) -> int:
    """0 where the runs measured what the summary reports, else 2 with a line saying what was not measured."""
    if not s["judged_runs"]:               # no false alarm and no detection in runs the gate never judged
        print(f"calibrate: none of the {len(rows)} gate runs was judged (exit 2): nothing measured", file=sys.stderr)
        return 2
    slowed = [p for p, _ in parse_inject(s["inject"])]
    judged = [r for r in rows if r["exit"] in (0, 1)]
    tested = {k.split(":", 1)[1] for r in judged for k in r["ratios"]}
    untested = [p for p in slowed if p not in tested]
    if untested:                           # "detected: {}" would read as a detection rate of nothing
        print(f"calibrate: slowed phase {', '.join(untested)} was never tested in the {len(judged)} judged runs "
              "(exit 2): no detection measured", file=sys.stderr)
        return 2
    if not s["phase_tests"]:               # "false_alarms: 0" of no test would read as an A/A pass
        what = "no phase beside the slowed ones" if slowed else "no phase"
        print(f"calibrate: {what} was tested in the {len(judged)} judged runs (exit 2): no false alarm measured",
              file=sys.stderr)
        return 2
    return 0


def _check_json(ap, path, inputs: dict) -> None:
    """--json checked by the output rule before any work: a path that cannot be written, or that names an input
    (role -> path), is exit 2 now, not after the runs."""
    try:
        files.check_outputs({"--json": path}, inputs)
    except files.OutputError as e:
        ap.exit(2, f"calibrate: {e}\n")


def _merge_main(ap, argv) -> int:
    sub = argparse.ArgumentParser(prog=ap.prog + " --merge")
    sub.add_argument("--merge", nargs="+", required=True, metavar="JSON")
    sub.add_argument("--json", metavar="FILE", help="write the pooled runs and their summary")
    args, rest = sub.parse_known_args(argv)
    if rest:
        ap.error(f"--merge takes only --json beside it, not {' '.join(rest)}")
    _check_json(ap, args.json, {f"--merge {i}": p for i, p in enumerate(args.merge, 1)})
    try:
        setup, rows = merge([Path(p) for p in args.merge])
    except MergeError as e:
        print(f"calibrate: {e}", file=sys.stderr)
        return 2
    s = summary(rows, setup["inject"])       # before any line: a summary that failed would leave the runs printed
    for r in rows:
        print(json.dumps(r))
    print(json.dumps(s))
    if args.json and not _saved(Path(args.json), setup, rows):
        return 2
    return _verdict(s, rows)


if __name__ == "__main__":
    sys.exit(main())
