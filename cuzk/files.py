"""Opening input files: regular files only, checked without blocking (a FIFO or a device given as
a key would block in open() or never end)."""
from __future__ import annotations

import errno
import os
import stat

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
