"""nvcc compile checks of kernels/ (tests/gpu/test_kernels.py): every job compiled once, in parallel, and
remembered by what it compiles, so a second run of the tests compiles only what changed.

A job's key hashes nvcc's version, the target, the defines, and the bytes of the source and of every
kernels/ header it includes (transitively, conditional includes too). Only clean compiles (exit 0) are
kept: a failure is compiled again next time. The cache lives in $CUZK_NVCC_CHECK_CACHE, else
$CUZK_CACHE_DIR/nvcc-checks, else ~/.cache/cuzk/nvcc-checks. While jobs compile, a progress line per
finished job goes to the terminal (`say`: the test passes one that writes past pytest's capture).
Ctrl-C stops at once: queued jobs are cancelled and running nvcc processes killed (each runs in a process
group of its own, so its cicc and ptxas go with it).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from cuzk.cli.common import write_all
from cuzk.gpu.kernel_sources import includes

ARCH = "sm_90"


@dataclass(frozen=True)
class Job:
    label: str                    # e.g. "ntt/reg.cu" or "ntt/reg.cu CUZK_FASTMUL_VARIANT_FR=6"
    source: Path                  # a .cu, or a .cuh compiled through a one-line probe unit
    defines: tuple[str, ...] = ()


@dataclass(frozen=True)
class Result:
    returncode: int
    stderr: str
    cached: bool = False


def cache_dir() -> Path:
    if os.environ.get("CUZK_NVCC_CHECK_CACHE"):
        return Path(os.environ["CUZK_NVCC_CHECK_CACHE"])
    base = os.environ.get("CUZK_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "cuzk")
    return Path(base) / "nvcc-checks"


_VERSION: list[str] = []


def nvcc_version() -> str:
    if not _VERSION:
        _VERSION.append(subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout)
    return _VERSION[0]


def key(job: Job, include_dir: Path) -> str:
    h = hashlib.sha256(f"{nvcc_version()}|{ARCH}|{' '.join(job.defines)}|{job.source.suffix}".encode())
    for p in includes(job.source, include_dir):
        h.update(p.relative_to(include_dir).as_posix().encode() + b"\0" + p.read_bytes())
    return h.hexdigest()[:32]


def _compile(job: Job, include_dir: Path, tmp: Path) -> Result:
    src = job.source
    stem = re.sub(r"[^A-Za-z0-9_.]+", "_", job.label)
    if src.suffix == ".cuh":
        tu = tmp / f"{stem}.tu.cu"
        tu.write_text(f'#include "{src}"\n__global__ void cuzk_probe(unsigned *o) {{ o[0] = 1; }}\n')
        src = tu
    return Result(*_nvcc(["nvcc", f"-arch={ARCH}", "-c", "-Xptxas", "-v", "-I", str(include_dir),
                          *(f"-D{d}" for d in job.defines), "-o", str(tmp / f"{stem}.o"), str(src)]))


class Stopped(Exception):
    """A job not started because the checks were interrupted."""


_lock = threading.Lock()
_running: set[subprocess.Popen] = set()
_stopping = threading.Event()


def _nvcc(cmd: list[str]) -> tuple[int, str]:
    """(exit status, stderr) of one nvcc run, registered so that stop_all can kill it."""
    with _lock:
        if _stopping.is_set():
            raise Stopped
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)
        _running.add(p)
    try:
        _, err = p.communicate()
    finally:
        with _lock:
            _running.discard(p)
    return p.returncode, err


def stop_all() -> None:
    """No new nvcc starts, and each running one is killed with its process group."""
    with _lock:
        _stopping.set()
        for p in _running:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


def _store(path: Path, res: Result) -> None:
    write_all({path: json.dumps({"returncode": res.returncode, "stderr": res.stderr})}, say=None)


def compile_all(jobs: list[Job], include_dir: Path, tmp: Path, workers: int | None = None,
                say=lambda line: print(line, file=sys.stderr, flush=True)) -> dict[str, Result]:
    cache = cache_dir()
    out: dict[str, Result] = {}
    todo = []
    for job in jobs:
        k = key(job, include_dir)
        f = cache / f"{k}.json"
        if f.is_file():
            d = json.loads(f.read_text())
            out[job.label] = Result(d["returncode"], d["stderr"], cached=True)
        else:
            todo.append((job, f))
    if not todo:
        return out
    t0 = time.perf_counter()
    n = len(todo)
    say(f"nvcc checks: compiling {n} of {len(jobs)} (the rest cached in {cache}) with "
        f"{workers or max(2, os.cpu_count() or 2)} jobs")
    _stopping.clear()
    ex = ThreadPoolExecutor(workers or max(2, os.cpu_count() or 2))
    try:
        futs = {ex.submit(_compile, job, include_dir, tmp): (job, f) for job, f in todo}
        for i, fut in enumerate(as_completed(futs), 1):
            job, f = futs[fut]
            res = fut.result()
            out[job.label] = res
            if res.returncode == 0:
                _store(f, res)
            say(f"nvcc checks: {i}/{n} {job.label} ({'ok' if res.returncode == 0 else 'FAILED'}, "
                f"{time.perf_counter() - t0:.0f} s)")
    except BaseException:               # Ctrl-C (or a failure): nothing queued runs, nothing running stays
        ex.shutdown(wait=False, cancel_futures=True)
        stop_all()
        raise
    finally:
        ex.shutdown(wait=True)          # after a stop, only the killed runs are left to return
    return out
