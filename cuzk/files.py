"""Opening input files: regular files only, checked without blocking (a FIFO or a device given as
a key would block in open() or never end)."""
from __future__ import annotations

import errno
import os
import signal
import stat
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path

_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory"))


def open_input(path, mode: str = "rb"):
    """`path` opened for reading, or OSError (strerror says why) when it is not a regular file.
    O_NONBLOCK makes open() return at once on a FIFO; fstat then judges what was opened."""
    fd = os.open(os.fspath(path), os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = next((name for test, name in _KINDS if test(st.st_mode)), "not a regular file")
            raise OSError(errno.EINVAL, f"{kind}, not a regular file", os.fspath(path))
        os.set_blocking(fd, True)
        return os.fdopen(fd, mode)
    except BaseException:
        os.close(fd)
        raise


class Interrupted(SystemExit):
    """SIGTERM (or SIGINT) in the main thread: exit 128 + the signal, finally blocks run on the way out."""

    def __init__(self, signum: int):
        super().__init__(128 + signum)
        self.signum = signum


def raise_on_sigterm() -> None:
    """Make SIGTERM raise Interrupted in the main thread (a timeout, a job scheduler): temp files and
    workers are cleaned up by the code that made them."""
    if threading.current_thread() is threading.main_thread():
        def handler(signum, frame):
            raise Interrupted(signum)
        signal.signal(signal.SIGTERM, handler)


@contextmanager
def signals_held():
    """SIGINT and SIGTERM wait (pending) until the block ends: what it creates is registered for clean-up
    before the handler can run."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "pthread_sigmask"):
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


TEMP_SUFFIX = ".tmp"


def new_temp(path: Path, tmps: list) -> int:
    """A temp file beside `path` (its name: path's name, a random part, .tmp), appended to `tmps` before
    a signal can interrupt; its open descriptor returned."""
    with signals_held():
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=TEMP_SUFFIX)
        tmps.append(tmp)
    return fd


def file_mode() -> int:
    """The mode a new file gets here: 0o666 less the process's umask (read from /proc where it can be,
    since setting the umask to read it is not thread-safe)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return 0o666 & ~int(line.split()[1], 8)
    except OSError:
        pass
    old = os.umask(0o022)
    os.umask(old)
    return 0o666 & ~old


def remove_stale_temps(folder: Path, pattern: str, max_age_s: float) -> list[Path]:
    """Remove the temp files in `folder` named `pattern` (a glob ending in .tmp) that are regular files
    of this user, not modified for `max_age_s`: what a killed writer left. A writer in progress keeps
    its file's mtime fresh, and nothing else (links, others' files, other names) is touched."""
    gone = []
    now = time.time()
    for p in folder.glob(pattern):
        try:
            st = os.lstat(p)
            if (stat.S_ISREG(st.st_mode) and st.st_uid == os.getuid() and now - st.st_mtime > max_age_s
                    and p.name.endswith(TEMP_SUFFIX)):
                p.unlink()
                gone.append(p)
        except OSError:
            pass                    # raced with its writer's rename or another clean-up
    return gone
