"""One measuring job per GPU: `cuzk gate` and `cuzk history record` hold an advisory lock named after their GPU,
so a second job of theirs on the same GPU (two runners sharing one, a runner without its CUDA_VISIBLE_DEVICES)
refuses at once instead of timing the other's kernels.

The lock is flock(2) on a file in $CUZK_LOCK_DIR (default /tmp): the kernel drops it when the holder exits,
however it exits, so a crashed job never leaves a stale lock. The file records who holds it, for the refusal's
one line. The GPU is named by its NVML UUID where NVML answers (cuzk.nvml follows CUDA_VISIBLE_DEVICES, by index
or UUID, as CUDA does), else by CUDA_VISIBLE_DEVICES's first entry as written, else as device 0.
"""
from __future__ import annotations

import fcntl
import json
import os
import re
import sys
import time
from contextlib import contextmanager
from pathlib import Path


class GpuBusy(RuntimeError):
    """Another cuzk job holds this GPU."""


def gpu_key() -> str:
    """The GPU this process's CUDA work lands on, named the same in every process on the host."""
    from ..nvml import open_device
    dev = open_device()
    if dev is not None:
        with dev:
            uuid = dev.info().uuid
        if uuid:
            return uuid
    first = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    return first or "0"


def lock_dir() -> Path:
    return Path(os.environ.get("CUZK_LOCK_DIR") or "/tmp")


def lock_path(key: str, directory: Path | None = None) -> Path:
    return (directory or lock_dir()) / f"cuzk-gpu-{re.sub(r'[^A-Za-z0-9_.-]', '_', key)}.lock"


def _holder(fd: int) -> str:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        info = json.loads(os.read(fd, 4096).decode() or "{}")
        since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(info["since"]))
        return f"pid {info['pid']}, `{info['what']}`, since {since}"
    except (OSError, ValueError, KeyError, TypeError):
        return "holder unknown"


def _open(path: Path, key: str) -> int:
    """A descriptor to flock (which needs neither read nor write): the file opened or made read-write, else, where it
    is another user's (in a sticky /tmp under fs.protected_regular, O_CREAT on it is refused), read-only."""
    try:
        try:
            return os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        except PermissionError:
            return os.open(path, os.O_RDONLY)
    except OSError as e:
        raise GpuBusy(f"GPU {key}: cannot open its lock file {path} ({e.strerror})") from e


@contextmanager
def hold(what: str, key: str | None = None, directory: Path | None = None):
    """Hold the GPU's lock for the block; GpuBusy at once (never a wait) when another process holds it."""
    key = key or gpu_key()
    path = lock_path(key, directory)
    fd = _open(path, key)
    try:
        try:
            os.fchmod(fd, 0o666)        # other runner users on the host take the same lock
        except OSError:
            pass
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise GpuBusy(f"GPU {key} is held by another cuzk job ({_holder(fd)}; lock {path}): two jobs on one "
                          "GPU would time each other's kernels; give each runner its own GPU "
                          "(CUDA_VISIBLE_DEVICES, docs/runners.md)") from None
        try:                            # who holds it, for a refusal's line (not possible on another user's file)
            os.ftruncate(fd, 0)
            os.lseek(fd, 0, os.SEEK_SET)
            os.write(fd, json.dumps({"pid": os.getpid(), "what": what, "since": time.time(),
                                     "argv": sys.argv[1:]}).encode())
        except OSError:
            pass
        try:
            yield path
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def one_gpu_problem(visible: str | None, host_gpus: int | None) -> str | None:
    """Why a perf job does not see exactly one GPU (None: it does). visible: $CUDA_VISIBLE_DEVICES (None: unset);
    host_gpus: the GPUs NVML counts on the host (None: NVML does not answer)."""
    entries = [x.strip() for x in (visible or "").split(",") if x.strip()]
    if visible is not None and not entries:
        return "CUDA_VISIBLE_DEVICES is empty: this job sees no GPU"
    if len(entries) > 1:
        return (f"CUDA_VISIBLE_DEVICES names {len(entries)} GPUs ({visible}): a perf job measures on one; give each "
                "runner its own GPU (docs/runners.md)")
    if not entries and not host_gpus:
        return "no GPU: NVML sees none on this host"
    if entries and host_gpus == 0:
        return f"CUDA_VISIBLE_DEVICES={visible} but NVML finds no such GPU on this host (a mistyped UUID?)"
    if not entries and host_gpus > 1:
        return (f"CUDA_VISIBLE_DEVICES is unset on a host with {host_gpus} GPUs: every job would land on GPU 0; "
                "set it in each runner's .env, by UUID (docs/runners.md)")
    return None
