"""Whether a GPU runner is ready to measure: `cuzk runner-check` (docs/runners.md, "The acceptance check").

The checks, in order; each one that cannot run because an earlier one failed is reported as not run:
  gpu       an NVIDIA GPU is here and CuPy can use it (without one the check stops: never a pass)
  nvml      NVML reads the device, its driver and a state snapshot (clocks, temperature, power, processes)
  toolkit   nvcc is on PATH, and the driver runs what it builds (its CUDA version >= the toolkit's); CuPy's
            CUDA major is the toolkit's
  prebuild  every kernel module, each of its builds and K1's CUB library are in the cubin cache
            ($CUZK_CUBIN_DIR), built with nvcc where missing: this package's kernels and those of each
            commit asked for (the gate's base and head), so no worker compiles in its set-up
  proof     a workload at the target is set up on the GPU and its proofs verify; every kernel module it
            loaded came from the cubin cache, and K1's library loaded
  point     one phase of that workload measured: `samples` device timings (CUDA events) that NVML's guard
            trusted, as the gate and the nightly take them
With `deep` (a working directory): also the suite end to end, as a new runner is commissioned: asv measures
the phase at the target (samples, not n/a); asv fails, never skips, when CuPy is broken on a machine with a GPU;
`cuzk gate` passes an A/A pair and flags the phase, alone, slowed by +100% of its device time.
"""
from __future__ import annotations

import json
import math
import os
import re
import stat
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from .. import backend as backends
from .. import nvml
from ..files import write_outputs
from ..gpu import cubins, kernel_sources, loader
from ..timing import PHASES
from . import workload
from .asv_private import run as run_asv
from .calibrate import CUDA_FILE, _git, commit_change, gpu_slowdown_patch, make_repo
from .checkout import CheckoutError, git, materialize, resolve
from .gpu_lock import hold
from .suite import time_benchmark
from .trust import SampleGuard, TrustPolicy
from .workload import Spec

DEEP_STEPS = ("asv", "broken", "aa", "slow")
MIN_SAMPLES = 7          # asv's Mann-Whitney and the gate's test need at least this many


@dataclass
class Check:
    name: str
    ok: bool | None           # None: not run
    detail: str
    seconds: float = 0.0


@dataclass
class Report:
    checks: list[Check] = field(default_factory=list)

    @property
    def ready(self) -> bool:
        return bool(self.checks) and all(c.ok for c in self.checks)

    def failing(self) -> list[str]:
        return [c.name for c in self.checks if c.ok is False]

    def not_run(self) -> list[str]:
        return [c.name for c in self.checks if c.ok is None]

    def verdict(self) -> str:
        if self.ready:
            return "runner-check: ready"
        return ("runner-check: NOT ready: failed: " + (", ".join(self.failing()) or "nothing")
                + (f"; not run: {', '.join(self.not_run())}" if self.not_run() else ""))

    def add(self, name: str, ok: bool | None, detail: str, t0: float | None = None) -> Check:
        c = Check(name, ok, detail, time.perf_counter() - t0 if t0 is not None else 0.0)
        self.checks.append(c)
        return c

    def markdown(self) -> str:
        rows = ["| check | result | detail | time |", "|---|---|---|---|"]
        for c in self.checks:
            res = "ok" if c.ok else ("not run" if c.ok is None else "**FAILED**")
            rows.append(f"| {c.name} | {res} | {c.detail.replace('|', '/')} | {c.seconds:.1f} s |")
        return "\n".join(rows)

    def as_dict(self) -> dict:
        return {"ready": self.ready, "checks": [c.__dict__ for c in self.checks]}


class NoGpu(RuntimeError):
    """No NVIDIA GPU on this machine: a runner's check cannot pass here."""


def _say(msg: str) -> None:
    print(f"cuzk: runner-check: {msg}", file=sys.stderr, flush=True)


def _short(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0][:300]}" if text else type(e).__name__


# --- the checks ---------------------------------------------------------------------------------------

def check_gpu(rep: Report) -> str | None:
    """The GPU's target architecture (sm_90), or None when CuPy cannot use the GPU (the check failed).
    NoGpu where the machine has none at all."""
    t0 = time.perf_counter()
    present, what = backends.gpu_present()
    if not present:
        raise NoGpu(what)
    ok, why = backends.gpu_status()
    if not ok:
        rep.add("gpu", False, f"{what}, but CuPy cannot use it: {why}", t0)
        return None
    try:
        import cupy
        arch = loader.arch()
        dev = cupy.cuda.Device()
        name = cupy.cuda.runtime.getDeviceProperties(dev.id)["name"]
        name = name.decode() if isinstance(name, bytes) else str(name)
        free, total = dev.mem_info
    except Exception as e:
        rep.add("gpu", False, f"{what}, but CUDA fails on it: {_short(e)}", t0)
        return None
    rep.add("gpu", True, f"{name}, {arch}, {free / 2**30:.0f} of {total / 2**30:.0f} GiB free; "
                         f"CuPy {cupy.__version__}", t0)
    return arch


def check_nvml(rep: Report) -> dict:
    """NVML's device record (DeviceInfo as a dict; {} when the check failed)."""
    t0 = time.perf_counter()
    dev = nvml.open_device()
    if dev is None:
        rep.add("nvml", False, "NVML does not answer (nvidia-ml-py missing, or no driver library): the samples "
                               "of a GPU run could not be guarded", t0)
        return {}
    with dev:
        info, snap = dev.info(), dev.snapshot()
    missing = [k for k, v in (("driver", info.driver), ("SM clock", snap.sm_clock_mhz),
                              ("temperature", snap.temperature_c), ("clock-event reasons", snap.throttle_reasons))
               if v is None]
    if "processes" in snap.failed:          # read as none, which would pass for an idle GPU
        missing.append("the processes on the GPU")
    if missing:
        rep.add("nvml", False, f"NVML answers for {info.name} but cannot read: {', '.join(missing)}", t0)
        return {}
    rep.add("nvml", True, f"{info.name}, driver {info.driver}, SM {snap.sm_clock_mhz} MHz, "
                          f"{snap.temperature_c} C, {len(snap.processes)} process(es) on the GPU", t0)
    return info.as_dict()


def _cuda_version(v: int | None) -> tuple[int, int] | None:
    """CUDA's integer version (13000) as (13, 0)."""
    return (v // 1000, (v % 1000) // 10) if v else None


def check_toolkit(rep: Report, nvml_info: dict) -> bool:
    t0 = time.perf_counter()
    tk = cubins.toolkit_version()
    if tk is None:
        rep.add("toolkit", False, "no nvcc on PATH: the kernels cannot be prebuilt and K1's CUB sort falls back "
                                  "(install the CUDA toolkit; docs/runners.md lists the versions)", t0)
        return False
    try:
        import cupy
        drv = _cuda_version(nvml_info.get("cuda_driver") or cupy.cuda.runtime.driverGetVersion())
        cupy_cuda = _cuda_version(cupy.cuda.runtime.runtimeGetVersion())
    except Exception as e:
        rep.add("toolkit", False, f"nvcc {tk[0]}.{tk[1]}, but CUDA's versions cannot be read: {_short(e)}", t0)
        return False
    what = f"nvcc {tk[0]}.{tk[1]}, driver's CUDA {drv[0]}.{drv[1]}" if drv else f"nvcc {tk[0]}.{tk[1]}"
    what += f", CuPy built for CUDA {cupy_cuda[0]}.{cupy_cuda[1]}" if cupy_cuda else ""
    why = toolkit_problem(tk, drv, cupy_cuda)
    rep.add("toolkit", why is None, what + (f": {why}" if why else ""), t0)
    return why is None


def toolkit_problem(tk: tuple[int, int], drv: tuple[int, int] | None, cupy_cuda: tuple[int, int] | None) -> str | None:
    """Why nvcc's builds would not serve this machine (None: they do). tk, drv, cupy_cuda: (major, minor) of
    the toolkit, of the CUDA the driver supports, of the CUDA CuPy was built for."""
    if drv is None:
        return "the driver's CUDA version cannot be read"
    if tk > drv:
        return ("the driver is older than the toolkit and cannot load what nvcc builds (a newer driver, or the "
                "toolkit of the driver's CUDA)")
    if cupy_cuda and cupy_cuda[0] != tk[0]:
        return (f"CuPy's CUDA major differs from the toolkit's (CUZK_CUDA_EXTRA=cuda{tk[0]} and reinstall, or the "
                f"CUDA {cupy_cuda[0]} toolkit)")
    return None


BUILDS_FILE = "cuzk/gpu/kernel_sources.py"     # where a commit lists its module builds (BUILDS)


def commit_builds(repo: Path, ref: str) -> dict | None:
    """The module builds commit `ref` selects at run time (its BUILDS, read as data: kernel_sources.read_builds),
    so that its own are prebuilt, not this cuzk's: a head that adds a build would otherwise compile it with NVRTC
    in the gate, against the base's nvcc cubins. None where the commit has no such file (another layout); a file
    there that holds no readable BUILDS is ValueError."""
    sha = resolve(repo, ref)
    try:
        text = git(repo, "show", f"{sha}:{BUILDS_FILE}")
    except CheckoutError:
        return None
    return kernel_sources.read_builds(text, f"--commit {ref}: {BUILDS_FILE}")


def commit_kernels(repo: Path, ref: str, dest: Path) -> Path:
    """The kernel sources of commit `ref` under dest: the folder its pyproject.toml maps cuzk.kernels to
    (kernels/), extracted alone, so that the names it gets are those a checkout of the commit looks up."""
    try:
        sha = resolve(repo, ref)
    except CheckoutError as e:
        raise ValueError(f"--commit {ref}: not a commit of {repo} ({e})") from e
    try:
        mapping = tomllib.loads(git(repo, "show", f"{sha}:pyproject.toml"))["tool"]["setuptools"]["package-dir"]
        rel = mapping.get("cuzk.kernels", "cuzk/kernels")
    except (CheckoutError, KeyError, ValueError):
        rel = "cuzk/kernels"
    tree = dest / sha[:12]
    try:                    # from git's objects, as the gate writes a side: never the commit's own export rules
        materialize(repo, sha, tree)
    except CheckoutError as e:
        raise ValueError(f"--commit {ref}: {e}") from e
    kdir = tree / str(rel)
    if not kdir.resolve().is_relative_to(tree.resolve()) or not kdir.is_dir():
        raise ValueError(f"--commit {ref}: no kernel sources at {rel} in {sha[:12]}")
    return kdir


def check_prebuild(rep: Report, arch: str, trees: dict[str, tuple], workers: int | None, keep_days: float | None,
                   say=_say) -> bool:
    """trees: label -> (kernel folder, its BUILDS), None for this cuzk's own (and for a commit whose BUILDS file
    is not where this cuzk looks: its builds then are this cuzk's, and the line says so)."""
    t0 = time.perf_counter()
    made, cached, failed, paths = 0, 0, [], set()
    say(f"prebuilding the kernels ({', '.join(trees)}) into {kernel_sources.cubin_dir()} with nvcc for {arch}")

    def one(r):
        if r.status == "built":
            say(f"built {r.job.label} in {r.seconds:.0f} s")
        elif r.status == "failed":
            say(f"nvcc FAILED on {r.job.label}:\n{r.error}")
    unlisted = [label for label, (kdir, builds) in trees.items() if kdir is not None and builds is None]
    for label, (kdir, builds) in trees.items():
        try:
            results = cubins.build(arch, kdir, workers=workers, say=one, note=say, builds=builds)
        except (cubins.CubinError, OSError) as e:
            failed.append(f"{label}: {_short(e)}")
            continue
        for r in results:
            paths.add(r.path)
            made += r.status == "built"
            cached += r.status == "cached"
            if r.status == "failed":
                failed.append(f"{label}: {r.job.label}")
    pruned = cubins.prune(keep_days=keep_days) if keep_days is not None and not failed else []
    files = f"{len(paths)} files for {len(trees)} tree(s): {made} built, {cached} cached"
    if unlisted:
        files += f"; no {BUILDS_FILE} in {', '.join(unlisted)}: its builds taken as this cuzk's"
    files += f"; {len(pruned)} unused for {keep_days:g} days removed" if pruned else ""
    if failed:
        rep.add("prebuild", False, f"{files}; nvcc failed on {', '.join(failed)}", t0)
        return False
    rep.add("prebuild", True, f"{files}, in {kernel_sources.cubin_dir()}", t0)
    return True


def check_proof(rep: Report, target: str, say=_say):
    """The workload, set up (its proofs verified), or None when the check failed."""
    t0 = time.perf_counter()
    spec = Spec.parse_target(target)
    say(f"setting up {spec.label()} (synthesis, key, one pass of every phase, verification)")
    try:
        wl = workload.Workload(spec).prepare()
    except Exception as e:
        rep.add("proof", False, f"{spec.label()}: {_short(e)}", t0)
        return None
    from ..gpu import cub_sort                  # a device module: the workload just proved on the GPU
    arch = loader.arch()
    loaded = sorted(loader._modules)           # (name, extra) of every module this process loaded
    compiled = [n if not x else f"{n} [{' '.join(x)}]" for n, x in loaded
                if not kernel_sources.cubin_path(n, arch, x).exists()]
    steps = ", ".join(f"{k} {v:.1f} s" for k, v in wl.setup_s.items())
    if compiled:
        rep.add("proof", False, f"proofs verify, but {', '.join(compiled)} came from NVRTC, not the cubin cache: "
                                f"the prebuilt names do not match the loader's", t0)
        return None
    if not cub_sort.available():
        rep.add("proof", False, f"proofs verify, but K1's CUB library did not load ({cub_sort._failed})", t0)
        return None
    rep.add("proof", True, f"{spec.label()}: {len(wl.proofs)} proof(s) verified; {len(loaded)} kernel module(s), "
                           f"all from the cubin cache; {steps}", t0)
    return wl


def check_point(rep: Report, wl, phase: str, samples: int, max_discards: int = 10) -> bool:
    t0 = time.perf_counter()
    dev = nvml.open_device()
    if dev is None:
        rep.add("point", False, "NVML does not answer: no sample could be guarded", t0)
        return False
    values, rejected = [], []
    try:
        with dev:
            guard = SampleGuard(dev, TrustPolicy(), frozenset({os.getpid()}))
            if guard.blind():               # it would trust every sample unjudged; the gate refuses to run
                rep.add("point", False, f"{phase}: NVML cannot read the GPU's {', '.join(guard.blind())}, so no "
                                        f"sample can be guarded", t0)
                return False
            while len(values) < samples and len(rejected) <= max_discards:
                before = guard.start()
                v = wl.measure(phase)
                verdict, _ = guard.finish(before)
                rec = getattr(wl, "last_record", None)
                if rec is None or rec.device_s is None:
                    rep.add("point", False, f"{phase}: no device time (CUDA events) was recorded", t0)
                    return False
                if not (isinstance(v, float) and math.isfinite(v) and v > 0):
                    rep.add("point", False, f"{phase}: a sample of {v!r} s", t0)
                    return False
                if verdict.trusted:
                    values.append(v)
                else:
                    rejected.append(verdict.reasons)
    except Exception as e:
        rep.add("point", False, f"{phase}: {_short(e)}", t0)
        return False
    if len(values) < samples:
        rep.add("point", False, f"{phase}: {len(rejected)} samples rejected by the NVML guard "
                                f"(first: {'; '.join(rejected[0])}), {len(values)} trusted", t0)
        return False
    med = statistics.median(values)
    q = statistics.quantiles(values, n=4)
    rep.add("point", True, f"{phase} at {wl.spec.target()}: median {med * 1e3:.3f} ms of {len(values)} trusted "
                           f"device timings, IQR {(q[2] - q[0]) / med:.1%} of it"
            + (f"; {len(rejected)} rejected and retaken" if rejected else ""), t0)
    return True


def run(target: str = "cuda:18", phase: str = "tail_msm", samples: int = 9, commits: tuple[str, ...] = (),
        repo: str | Path = ".", workers: int | None = None, keep_days: float | None = 30.0,
        deep: Path | None = None, deep_steps: tuple[str, ...] = DEEP_STEPS, deep_rounds: int = 8,
        deep_samples: int = 5, say=_say) -> Report:
    """Every check; ValueError for bad arguments and NoGpu where the machine has no GPU, both before any work."""
    if phase not in PHASES[1:]:                 # synthesis is timed on the host: no device point
        raise ValueError(f"--phase {phase}: not a GPU phase ({', '.join(PHASES[1:])})")
    if samples < MIN_SAMPLES:
        raise ValueError(f"--samples {samples}: at least {MIN_SAMPLES} (the tests that judge points need them)")
    if Spec.parse_target(target).backend != "cuda":
        raise ValueError(f"--target {target}: a runner's check measures a cuda target")
    if deep is not None:
        project_root()
        new_or_empty(Path(deep))
        if set(deep_steps) - set(DEEP_STEPS):
            raise ValueError(f"unknown deep steps {sorted(set(deep_steps) - set(DEEP_STEPS))}; known: {DEEP_STEPS}")
    with tempfile.TemporaryDirectory(prefix="cuzk-runner-check-") as tmp:
        trees = {"this cuzk": (None, None)}
        for ref in commits:
            trees[ref] = (commit_kernels(Path(repo), ref, Path(tmp)), commit_builds(Path(repo), ref))
        rep = Report()
        arch = check_gpu(rep)
        info = check_nvml(rep)
        if arch is None:
            for name in ("toolkit", "prebuild", "proof", "point"):
                rep.add(name, None, "needs a GPU that CuPy can use")
            return rep
        prebuilt = False
        if not check_toolkit(rep, info):
            rep.add("prebuild", None, "needs an nvcc whose builds the driver runs")
        else:
            prebuilt = check_prebuild(rep, arch, trees, workers, keep_days, say)
        if not prebuilt:
            for name in ("proof", "point"):
                rep.add(name, None, "needs every kernel prebuilt")
            return rep
    with hold("cuzk runner-check"):         # measuring: no other cuzk job may share the GPU meanwhile
        wl = check_proof(rep, target, say)
        if wl is None:
            rep.add("point", None, "needs the proof's workload")
        else:
            say(f"measuring {phase} ({samples} guarded samples)")
            check_point(rep, wl, phase, samples)
    if deep is not None and rep.ready:
        deep_checks(rep, Path(deep), phase, target, deep_rounds, deep_samples, deep_steps, say)
    return rep


# --- deep: the suite end to end, on a copy of this checkout -------------------------------------------

def project_root() -> Path:
    """The checkout this cuzk runs from (deep checks copy it into a throwaway git repository)."""
    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists() or not (root / "asv.conf.json").is_file():
        raise ValueError(f"--deep needs cuzk installed from a git checkout (pip install -e); {root} is not one")
    return root


def new_or_empty(work: Path) -> None:
    """--deep's WORKDIR, judged before any check runs: a new path or an empty folder (what it writes there, a repo
    and a config, never lands on what was there)."""
    try:
        st = os.lstat(work)
    except FileNotFoundError:
        return
    except OSError as e:
        raise ValueError(f"--deep {work}: {e.strerror or e}") from None
    if not stat.S_ISDIR(st.st_mode) or any(os.scandir(work)):
        raise ValueError(f"--deep {work}: not a new path or an empty folder")


def deep_checks(rep: Report, work: Path, phase: str, target: str, rounds: int = 8, samples: int = 5,
                steps=DEEP_STEPS, say=_say) -> None:
    new_or_empty(work)
    work = work.resolve()
    repo = work / "repo"
    work.mkdir(parents=True, exist_ok=True)
    base = make_repo(project_root(), repo)
    env = dict(os.environ, CUZK_REQUIRE_GPU="1")
    if "asv" in steps:
        say(f"asv run -E existing: {phase} at {target}")
        _asv_step(rep, repo, base, env, phase, target)
    if "broken" in steps:
        say("asv run with CuPy made unimportable: must fail, not skip")
        _broken_step(rep, repo, base, env, phase, target, work)
    spec = Spec.parse_target(target)
    config = work / "gate.toml"
    write_outputs({config: f"[gate]\nrounds = {rounds}\nsamples = {samples}\nalpha = 0.01\nthreshold = 0.05\n\n"
                            f"[[workload]]\nbackend = \"{spec.backend}\"\ncircuit = \"{spec.circuit}\"\n"
                            f"log_size = {spec.log_size}\nopts = \"default\"\nrequired = true\n"})
    if "aa" in steps:
        say("cuzk gate on an A/A pair (the head changes the README)")
        _git(repo, "checkout", "-q", "-B", "aa", base)
        aa = commit_change(repo, "README.md", lambda t: t + "\nA/A: no code change.\n", "docs only")
        t0 = time.perf_counter()
        code, _, first = _gate(repo, base, aa, config, work / "gate-aa", env)
        rep.add("gate A/A", code == 0, f"{target} required: exit {code} (expected 0): {first[:150]}", t0)
    if "slow" in steps:
        say(f"cuzk gate with {phase} slowed by +100% of its device time")
        _git(repo, "checkout", "-q", "-B", "slow", base)
        slow = commit_change(repo, CUDA_FILE, gpu_slowdown_patch(phase, 1.0), f"{phase}: +100% device time")
        t0 = time.perf_counter()
        code, data, first = _gate(repo, base, slow, config, work / "gate-slow", env)
        flagged = [c["area"] for o in (data or {}).get("outcomes", []) for c in o["comparisons"]
                   if c["verdict"] == "regression"]
        rep.add("gate slowed", code == 1 and flagged == [phase],
                f"{phase} +100%: exit {code}, flagged {flagged} (expected exit 1, only {phase}): {first[:150]}", t0)


def _gate(repo: Path, base: str, head: str, config: Path, out: Path, env: dict) -> tuple[int, dict | None, str]:
    p = subprocess.run([sys.executable, "-m", "cuzk", "gate", "--repo", str(repo), "--base", base, "--head", head,
                        "--config", str(config), "--out", str(out)], stdout=subprocess.PIPE, text=True, env=env)
    data = json.loads((out / "gate.json").read_text()) if (out / "gate.json").exists() else None
    return p.returncode, data, p.stdout.splitlines()[0] if p.stdout else "(no report)"


def _asv_run(repo: Path, base: str, env: dict, phase: str, target: str):
    bench = re.escape(time_benchmark(phase, target)) + re.escape(f"({target!r}, 'default')")
    subprocess.run([sys.executable, "-m", "asv", "machine", "--yes", "--machine", "runner-check"], cwd=repo,
                   env=env, check=True, capture_output=True)
    return run_asv([sys.executable, "-m", "asv", "run", "-E", f"existing:{sys.executable}", "--set-commit-hash",
                    base, "--record-samples", "--machine", "runner-check", "--launch-method", "spawn",
                    "--show-stderr", "--bench", bench], cwd=repo, env=env, capture_output=True, text=True)


def _asv_step(rep: Report, repo: Path, base: str, env: dict, phase: str, target: str) -> None:
    t0 = time.perf_counter()
    p = _asv_run(repo, base, env, phase, target)
    samples, value = [], None
    files = [f for f in (repo / ".asv/results/runner-check").glob("*.json") if f.name != "machine.json"]
    if files:
        res = json.loads(files[0].read_text())
        row = dict(zip(res["result_columns"], res["results"][time_benchmark(phase, target)]))
        targets, opts = row["params"]
        i = targets.index(repr(target)) * len(opts) + opts.index("'default'")
        value, samples = row["result"][i], (row.get("samples") or [[]] * (i + 1))[i] or []
    good = p.returncode == 0 and value is not None and value == value and len(samples) >= MIN_SAMPLES
    detail = (f"{phase} {target}: {len(samples)} samples, median {value * 1e3:.3f} ms" if good
              else f"{phase} {target}: exit {p.returncode}, value {value}, {len(samples)} samples: "
                   f"{(p.stdout + p.stderr).strip()[-300:]!r}")
    rep.add("asv point", good, detail, t0)


def _broken_step(rep: Report, repo: Path, base: str, env: dict, phase: str, target: str, work: Path) -> None:
    """The same benchmark with CuPy made unimportable: the GPU is there, so asv must fail, not skip."""
    t0 = time.perf_counter()
    fake = work / "no-cupy"
    (fake / "cupy").mkdir(parents=True, exist_ok=True)
    (fake / "cupy/__init__.py").write_text("raise ImportError('CuPy made unimportable by cuzk runner-check')\n")
    p = _asv_run(repo, base, dict(env, ASV_PYTHONPATH=str(fake), CUZK_REQUIRE_GPU="0"), phase, target)
    out = p.stdout + p.stderr
    m = re.search(r"GpuUnusable: ([^\n]{0,160})", out)
    good = p.returncode == 2 and m is not None and "cannot run" in m.group(1)
    rep.add("asv, CuPy broken", good, f"exit {p.returncode} (expected 2, a failure): "
                                      f"{m.group(1) if m else out[-200:]!r}", t0)
