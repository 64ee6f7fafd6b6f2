"""Prebuilt kernels: every module under kernels/ (and each of its kernel_sources.BUILDS) compiled with nvcc into the
cubin cache the loader reads ($CUZK_CUBIN_DIR, default ~/.cache/cuzk/cubin), and K1's CUB library beside them.

A file's name carries a hash of the module's source, the headers it includes, its defines and the target
(kernel_sources.source_key), so an edited kernel is never served a stale cubin: it gets a new name, and the old file
is simply unused. The loader loads a cubin whose name matches and compiles with NVRTC otherwise. The name does
not hold the compiler: the cache records the nvcc that built it (STAMP), and another nvcc rebuilds everything.

`kernel_dir` may name another tree's kernels/ (a commit about to be measured): its files get the names that
this package's loader would give them, which is what a checkout of that commit looks up when its loader keys
cubins the same way.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from . import cub_library, kernel_sources

CUBIN_FLAGS = ("-cubin", "-std=c++17")


class CubinError(RuntimeError):
    """No nvcc, or a kernel tree that cannot be read."""


@dataclass(frozen=True)
class Job:
    name: str                          # "msm/g1", or cub_library.SOURCE for K1's library
    extra: tuple[str, ...] = ()        # one of kernel_sources.BUILDS[name], or () for the default build

    @property
    def label(self) -> str:
        return self.name if not self.extra else f"{self.name} [{' '.join(self.extra)}]"


@dataclass
class Built:
    job: Job
    path: Path
    status: str                        # "built", "cached" or "failed"
    seconds: float = 0.0
    error: str = ""


def installed_kernels() -> Path:
    return kernel_sources.kernel_dir()


def module_names(kdir: Path | None = None) -> list[str]:
    """The modules of a kernels/ tree, by the loader's rule (every .cu but host/)."""
    d = Path(kdir) if kdir is not None else installed_kernels()
    return sorted(p.relative_to(d).with_suffix("").as_posix() for p in d.rglob("*.cu")
                  if p.relative_to(d).parts[0] != "host")


def jobs(kdir: Path | None = None, only: set[str] | None = None, builds: dict | None = None) -> list[Job]:
    """K1's library, then every module's default build and its BUILDS (only the modules named in `only`). builds:
    another tree's BUILDS (kernel_sources.read_builds), in place of this package's."""
    names = [n for n in module_names(kdir) if only is None or n in only]
    out = [Job(cub_library.SOURCE)] + [Job(n) for n in names]
    listed = kernel_sources.BUILDS if builds is None else builds
    out += [Job(n, b) for n, bs in listed.items() for b in bs if n in names]
    return out


def _is_installed(kdir: Path | None) -> bool:
    return kdir is None or Path(kdir).resolve() == installed_kernels().resolve()


def source_key(name: str, arch_name: str, extra: tuple[str, ...], kdir: Path) -> str:
    """kernel_sources.source_key for the module in `kdir` (tests hold the two equal on the installed tree)."""
    h = hashlib.sha256(arch_name.encode())
    for opt in kernel_sources.defines(extra):
        h.update(opt.encode())
    for p in kernel_sources.includes(Path(kdir, f"{name}.cu"), Path(kdir)):
        h.update(p.relative_to(kdir).as_posix().encode())
        h.update(p.read_bytes())
    return h.hexdigest()[:20]


def target_path(job: Job, arch_name: str, kdir: Path | None = None) -> Path:
    """Where the loader (or cub_sort) looks for this build in the cubin cache."""
    if _is_installed(kdir):
        if job.name == cub_library.SOURCE:
            return cub_library.library_path(arch_name)
        return kernel_sources.cubin_path(job.name, arch_name, job.extra)
    kdir = Path(kdir)
    if job.name == cub_library.SOURCE:
        h = hashlib.sha256(arch_name.encode())
        for f in cub_library.NVCC_FLAGS:
            h.update(f.encode())
        h.update(Path(kdir, cub_library.SOURCE).read_bytes())
        return kernel_sources.cubin_dir() / f"cub_sort-{arch_name}-{h.hexdigest()[:20]}.so"
    key = source_key(job.name, arch_name, job.extra, kdir)
    return kernel_sources.cubin_dir() / f"{job.name.replace('/', '_')}-{arch_name}-{key}.cubin"


def nvcc_command(job: Job, arch_name: str, kdir: Path, out: Path) -> list[str]:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        raise CubinError("nvcc is not on PATH: the runner needs the CUDA toolkit (docs/runners.md)")
    if job.name == cub_library.SOURCE:
        return [nvcc, f"-arch={arch_name}", *cub_library.NVCC_FLAGS, "-o", str(out), str(Path(kdir, job.name))]
    return [nvcc, f"-arch={arch_name}", *CUBIN_FLAGS, "-I", str(kdir), *kernel_sources.defines(job.extra),
            "-o", str(out), str(Path(kdir, f"{job.name}.cu"))]


def _nvcc_version_text() -> str | None:
    """What `nvcc --version` prints, or None where there is no nvcc or it does not answer."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        return None
    try:
        return subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return None


def toolkit_version() -> tuple[int, int] | None:
    """(major, minor) of the nvcc on PATH, or None where there is none or it says no release."""
    m = re.search(r"release (\d+)\.(\d+)", _nvcc_version_text() or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


STAMP = "nvcc-version"             # in the cubin cache: the nvcc that built its files


def toolkit_build() -> str | None:
    """nvcc's own description of its build ('Cuda compilation tools, release 13.0, V13.0.88'), or None."""
    lines = [ln.strip() for ln in (_nvcc_version_text() or "").splitlines() if "release" in ln]
    return lines[0] if lines else None


def renew_for_toolkit(say=None) -> list[Path]:
    """A file's name holds its sources' hash, not the compiler's: when the nvcc on PATH is not the one whose
    build line the cache's stamp records, remove every cubin and library so this nvcc rebuilds them (a toolkit
    upgrade must not leave the old compiler's code in what is measured). Writes the stamp; returns what went."""
    d = kernel_sources.cubin_dir()
    now = toolkit_build()
    if now is None:
        return []
    d.mkdir(parents=True, exist_ok=True)
    stamp = d / STAMP
    before = stamp.read_text().strip() if stamp.is_file() else None
    gone = []
    if before is not None and before != now:     # a cache with no record (made before it kept one) is adopted
        gone = [f for f in sorted(d.iterdir()) if f.is_file() and not f.is_symlink() and f.suffix in (".cubin", ".so")]
        for f in gone:
            f.unlink()
        if gone and say is not None:
            say(f"{len(gone)} cached builds of {before or 'an unrecorded nvcc'} removed: this nvcc is {now}")
    if before != now:
        stamp.write_text(now + "\n")
    return gone


class _Procs:
    """The nvcc processes running now, so that an interrupt ends them at once instead of after the queue."""

    def __init__(self):
        self.lock, self.live, self.stopped = threading.Lock(), set(), False

    def run(self, cmd: list[str]) -> tuple[int, str]:
        with self.lock:
            if self.stopped:
                return -signal.SIGTERM, "stopped"
            p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                 start_new_session=True)
            self.live.add(p)
        try:
            out, _ = p.communicate()
        finally:
            with self.lock:
                self.live.discard(p)
        return p.returncode, out

    def stop(self) -> None:
        with self.lock:
            self.stopped = True
            for p in self.live:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass


def build(arch_name: str, kdir: Path | None = None, workers: int | None = None, only: set[str] | None = None,
          say=None, note=None, builds: dict | None = None) -> list[Built]:
    """Compile what the cubin cache lacks for the kernels in `kdir` (default: this package's), `workers` nvcc
    processes at a time. A file already there is left as it is ("cached") and its time stamp renewed, so that
    `prune` can tell files in use from stale ones; the builds of another nvcc go first (renew_for_toolkit,
    said through `note`). Each result is said as it comes (`say`)."""
    kd = Path(kdir) if kdir is not None else installed_kernels()
    if not kd.is_dir():
        raise CubinError(f"no kernel sources at {kd}")
    todo = jobs(kd, only, builds)
    if only is not None and set(only) - set(module_names(kd)):
        raise CubinError(f"no such modules in {kd}: {', '.join(sorted(set(only) - set(module_names(kd))))}")
    kernel_sources.cubin_dir().mkdir(parents=True, exist_ok=True)
    renew_for_toolkit(note)
    procs = _Procs()

    def one(job: Job) -> Built:
        dst = target_path(job, arch_name, kd)
        # a file under the name that is no whole image (cut short, a FIFO) is built again, not kept as cached
        if dst.exists() and kernel_sources.cubin_problem(dst, None) is None:
            os.utime(dst)
            return Built(job, dst, "cached")
        tmp = dst.with_name(f"{dst.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        t0 = time.perf_counter()
        try:
            code, out = procs.run(nvcc_command(job, arch_name, kd, tmp))
        except CubinError as e:
            return Built(job, dst, "failed", 0.0, str(e))
        dt = time.perf_counter() - t0
        if code != 0:
            tmp.unlink(missing_ok=True)
            return Built(job, dst, "failed", dt, out.strip() or f"nvcc exited {code}")
        try:
            tmp.replace(dst)
        except OSError as e:        # a folder in its place
            tmp.unlink(missing_ok=True)
            return Built(job, dst, "failed", dt, f"{dst}: {e.strerror}")
        return Built(job, dst, "built", dt)

    results = []
    ex = ThreadPoolExecutor(max(1, workers or os.cpu_count() or 2))
    try:
        for fut in as_completed([ex.submit(one, j) for j in todo]):
            results.append(fut.result())
            if say is not None:
                say(results[-1])
    except BaseException:
        procs.stop()
        ex.shutdown(wait=True, cancel_futures=True)
        raise
    ex.shutdown()
    order = {j: i for i, j in enumerate(todo)}
    return sorted(results, key=lambda r: order[r.job])


def prune(keep_days: float | None = None, keep: set[Path] | None = None, now: float | None = None) -> list[Path]:
    """Remove files from the cubin cache: with `keep_days`, the cubins, K1 libraries and left-over temporaries
    that `build` has neither made nor renewed for that many days (builds of kernels no job asked for since);
    with `keep`, every file but those. Returns what was removed."""
    if (keep_days is None) == (keep is None):
        raise ValueError("prune takes keep_days or keep")
    d = kernel_sources.cubin_dir()
    if not d.is_dir():
        return []
    limit = (now if now is not None else time.time()) - (keep_days or 0) * 86400
    names = {p.name for p in keep} if keep is not None else None
    gone = []
    for f in sorted(d.iterdir()):
        if not f.is_file() or f.is_symlink():
            continue
        stale = f.name not in names if names is not None else \
            f.suffix in (".cubin", ".so", ".tmp") and f.stat().st_mtime < limit
        if stale:
            f.unlink()
            gone.append(f)
    return gone
