"""One measuring job per GPU: `cuzk gate` and `cuzk history record` hold an advisory lock named after their GPU,
so a second job of theirs on the same GPU (a runner without its CUDA_VISIBLE_DEVICES, a job started by hand beside
the runner's) refuses at once instead of timing the other's kernels.

The lock is flock(2) on a file: the kernel drops it when the holder exits, however it exits, so a crashed job never
leaves a stale lock. The file records who holds it, for the refusal's one line. It lives in a directory only this
user can write ($CUZK_LOCK_DIR, else $XDG_RUNTIME_DIR/cuzk, else /tmp/cuzk-locks-UID), because a lock file in a
shared directory lets any local user hold the GPU's lock, or plant a symlink that the holder then writes through.
Neither the directory nor the file is followed through a symlink; anything not this user's alone is refused.
The lock therefore orders the jobs of one user only: one runner user per GPU (docs/runners.md) is the real guard.

`held` is the same lock for another name: `cuzk ablate` holds one per JSON file it rewrites round by round.

The GPU is named by its NVML UUID where NVML answers (cuzk.nvml follows CUDA_VISIBLE_DEVICES, by index or UUID, as
CUDA does), else by CUDA_VISIBLE_DEVICES's first entry as written, else as device 0.
"""
from __future__ import annotations

import errno
import fcntl
import json
import os
import re
import stat
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from .. import nvml


class LockBusy(RuntimeError):
    """A named lock (held) cannot be taken: another cuzk process holds it, or its file cannot be opened safely."""


class GpuBusy(LockBusy):
    """The GPU's lock cannot be taken: another cuzk job holds it, or its file cannot be opened safely."""


class UnsafeLock(GpuBusy):
    """The lock's directory or file is not this user's alone: refused, never used."""


def gpu_key() -> str:
    """The GPU this process's CUDA work lands on, named the same in every process on the host."""
    dev = nvml.open_device()
    if dev is not None:
        with dev:
            uuid = dev.info().uuid
        if uuid:
            return uuid
    first = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    return first or "0"


def lock_dir() -> Path:
    """$CUZK_LOCK_DIR, else $XDG_RUNTIME_DIR/cuzk (the login's private runtime directory), else
    /tmp/cuzk-locks-UID. Not checked here: open_lock_dir checks it."""
    if os.environ.get("CUZK_LOCK_DIR"):
        return Path(os.environ["CUZK_LOCK_DIR"])
    xdg = os.environ.get("XDG_RUNTIME_DIR", "")
    if os.path.isabs(xdg):              # the XDG spec: a relative value is to be ignored
        return Path(xdg) / "cuzk"
    return Path(f"/tmp/cuzk-locks-{os.getuid()}")


def lock_path(key: str, directory: Path | None = None, kind: str = "gpu") -> Path:
    return (directory or lock_dir()) / f"cuzk-{kind}-{re.sub(r'[^A-Za-z0-9_.-]', '_', key)}.lock"


def _holder(fd: int) -> str:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        info = json.loads(os.read(fd, 4096).decode() or "{}")
        since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(info["since"]))
        return f"pid {info['pid']}, `{info['what']}`, since {since}"
    except (OSError, ValueError, KeyError, TypeError):
        return "holder unknown"


def dir_problem(st: os.stat_result, uid: int) -> str | None:
    """What makes a directory (its lstat/fstat) unfit to hold the lock, else None: it must be a real directory
    of uid's that no one else can write (else another user could take the lock or swap the file)."""
    if stat.S_ISLNK(st.st_mode):
        return "is a symbolic link"
    if not stat.S_ISDIR(st.st_mode):
        return "is not a directory"
    if st.st_uid != uid:
        return f"is owned by uid {st.st_uid}, not by this user (uid {uid})"
    who = [w for bit, w in ((stat.S_IWGRP, "group"), (stat.S_IWOTH, "others")) if st.st_mode & bit]
    if who:
        return f"is writable by {' and '.join(who)} (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def _refuse(what: str, path: Path, problem: str, fix: str, label: str = "GPU lock") -> UnsafeLock:
    return UnsafeLock(f"{label} {what} {path} {problem}: refused ({fix})")


NEEDS_PRIVATE_DIR = "the lock needs a directory only this user can write: CUZK_LOCK_DIR, docs/runners.md"


def open_lock_dir(directory: Path, label: str = "GPU lock") -> int:
    """A descriptor of the lock directory, made 0700 if missing, checked on the opened directory itself (no
    symlink followed, so what is checked is what the lock file is made in)."""
    try:
        os.mkdir(directory, 0o700)
    except FileExistsError:
        pass
    except OSError as e:
        raise GpuBusy(f"{label} directory {directory}: cannot create it ({e.strerror})") from None
    try:
        dfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as e:
        if e.errno in (errno.ENOTDIR, errno.ELOOP):          # a symlink or a file: say which
            try:
                problem = dir_problem(os.lstat(directory), os.getuid()) or "is not a directory"
            except OSError:
                problem = None
            if problem:
                raise _refuse("directory", directory, problem, NEEDS_PRIVATE_DIR, label) from None
        raise GpuBusy(f"{label} directory {directory}: cannot open it ({e.strerror})") from None
    problem = dir_problem(os.fstat(dfd), os.getuid())
    if problem:
        os.close(dfd)
        raise _refuse("directory", directory, problem, NEEDS_PRIVATE_DIR, label)
    return dfd


def _open(path: Path, key: str, label: str = "GPU lock") -> int:
    """The lock file, opened or made 0600 in its checked directory; a symlink, or anything but a regular file of
    this user's, is refused without being followed or read (O_NONBLOCK: a FIFO planted there must not hang us)."""
    dfd = open_lock_dir(path.parent, label)
    try:
        try:
            fd = os.open(path.name, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, 0o600,
                         dir_fd=dfd)
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise _refuse("file", path, "is a symbolic link", "not followed; remove it", label) from None
            raise GpuBusy(f"{label} file {path} ({key}): cannot open it ({e.strerror})") from None
    finally:
        os.close(dfd)
    st = os.fstat(fd)
    problem = ("is not a regular file" if not stat.S_ISREG(st.st_mode) else
               f"is owned by uid {st.st_uid}, not by this user (uid {os.getuid()})" if st.st_uid != os.getuid()
               else None)
    if problem:
        os.close(fd)
        raise _refuse("file", path, problem, "remove it; the lock is a regular file of this user's", label)
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    if stat.S_IMODE(st.st_mode) & 0o077:
        os.fchmod(fd, 0o600)             # a file made under a looser rule: this user's alone from now on
    return fd


@contextmanager
def hold(what: str, key: str | None = None, directory: Path | None = None):
    """Hold the GPU's lock for the block; GpuBusy at once (never a wait) when another process holds it,
    UnsafeLock (a GpuBusy) when its directory or file is not this user's alone."""
    key = key or gpu_key()
    path = lock_path(key, directory)

    def busy(holder: str) -> GpuBusy:
        return GpuBusy(f"GPU {key} is held by another cuzk job ({holder}; lock {path}): two jobs on one GPU would "
                       "time each other's kernels; give each runner its own GPU (CUDA_VISIBLE_DEVICES, "
                       "docs/runners.md)")
    with held(path, key, what, busy) as p:
        yield p


@contextmanager
def held(path: Path, key: str, what: str, busy, label: str = "GPU lock"):
    """Hold the lock file `path` (in its private directory, see above) for the block; busy(holder) is raised at
    once (never a wait) when another process holds it, UnsafeLock when its directory or file is not this user's
    alone. `what` is recorded for another process's refusal line."""
    fd = _open(path, key, label)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise busy(_holder(fd)) from None
        try:                            # who holds it, for a refusal's line
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
