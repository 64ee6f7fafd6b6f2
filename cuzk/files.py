"""Opening input files: regular files only, checked without blocking (a FIFO or a device given as
a key would block in open() or never end). Writing output files: one rule for every command
(write_outputs)."""
from __future__ import annotations

import errno
import fcntl
import os
import secrets
import signal
import stat
import sys
import tempfile
import threading
import time
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
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


def read_input(path, limit: int, mode: str = "r"):
    """The whole of a regular file (open_input's rule), at most `limit` bytes: a larger one (a sparse file of
    gigabytes is a few bytes in an archive) is OSError (EFBIG) before it is read, never memory it fills."""
    with open_input(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        # as much as the file holds (and a byte more, to see one that grew): read(limit + 1) would reserve the whole
        # limit up front, 64 MiB for a 1 KB file
        data = f.read(size + 1) if size <= limit else b""
        if size < len(data) <= limit:           # it grew since fstat: the rest, up to the limit
            data += f.read(limit + 1 - len(data))
        if size > limit or len(data) > limit:
            raise OSError(errno.EFBIG, f"{max(size, len(data))} bytes, more than the {limit >> 20} MiB such a file "
                                       f"may be", os.fspath(path))
    return data.decode("utf-8") if mode == "r" else data


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
    """SIGINT and SIGTERM wait until the block ends: what it creates is registered for clean-up before the
    handler can run. The handlers are swapped for one that notes the signal, rather than the signals
    masked: a signal sent to the process may land in any thread that leaves it unmasked (a native
    library's pool), and CPython then runs the main thread's handler at once, mask or not."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []
    old = {}
    for s in (signal.SIGINT, signal.SIGTERM):
        if callable(signal.getsignal(s)):          # a Python-level handler: one that would raise here
            old[s] = signal.signal(s, lambda signum, frame: pending.append(signum))
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        if pending:
            old[pending[0]](pending[0], None)


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
    its file's mtime fresh, and nothing else (links, others' files, other names, a file another name still holds:
    the old file a set in progress keeps) is touched."""
    gone = []
    now = time.time()
    for p in folder.glob(pattern):
        try:
            st = os.lstat(p)
            if (stat.S_ISREG(st.st_mode) and st.st_uid == os.getuid() and now - st.st_mtime > max_age_s
                    and p.name.endswith(TEMP_SUFFIX) and st.st_nlink == 1):   # 2: a set's kept file (_keep_old)
                p.unlink()
                gone.append(p)
        except OSError:
            pass                    # raced with its writer's rename or another clean-up
    return gone


# ---------------------------------------------------------------- outputs (the rule: write_outputs)

TEMP_PREFIX = ".cuzk-"
STALE_TEMP_S = 24 * 3600     # a writer in progress keeps its temp file's time fresh
_STREAM_KINDS = ((stat.S_ISCHR, "a character device"), (stat.S_ISFIFO, "a FIFO"))
_REFUSED_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


class OutputError(OSError):
    """An output that cannot be written: its message is one line naming the user's path."""

    def __init__(self, path, why: str, err: int = errno.EINVAL):
        super().__init__(err, why, os.fspath(path))
        self.message = f"{os.fspath(path)}: {why}"

    def __str__(self) -> str:
        return self.message


@dataclass
class PathWriter:
    """Content made by a function that writes a whole file at a path it is given (a key's own save):
    it gets the temp file's path (a stream output: a path in a private temp folder, then copied)."""
    write: object


@dataclass
class Output:
    path: str                  # as the user gave it: every message names it
    target: str                # where it lands: the path, or a link's final target
    stream: bool               # a character device or FIFO: written directly
    identity: tuple            # (st_dev, st_ino) of a file (a descriptor's too); ("new", real path); ("stream", path);
                               # ("fd", N) for a descriptor on a pipe or device
    mode: int | None           # the permission bits of a regular file it replaces
    fd: int | None = None      # a descriptor this process holds (/dev/stdout): written through a dup of it


_FD_NAMES = {"/dev/stdout": 1, "/dev/stderr": 2}


def _named_fd(p: str) -> int | None:
    """The descriptor that `p` names (/dev/stdout, /dev/fd/N, /proc/self/fd/N), or None."""
    a = os.path.normpath(os.path.abspath(p))
    if a in _FD_NAMES:
        return _FD_NAMES[a]
    folder, name = os.path.split(a)
    fd_dirs = ("/dev/fd", "/proc/self/fd", f"/proc/{os.getpid()}/fd")
    return int(name) if folder in fd_dirs and name.isdigit() else None


def _why(e: OSError) -> str:
    return e.strerror or type(e).__name__


def _kind(mode: int, kinds) -> str | None:
    return next((name for test, name in kinds if test(mode)), None)


def _writable_folder(path: str, target: str) -> None:
    """The nearest existing folder above `target` can take a new file (missing ones are made)."""
    d = os.path.dirname(os.path.abspath(target))
    while not os.path.lexists(d):
        d = os.path.dirname(d)
    if not os.path.isdir(d):
        raise OutputError(path, f"cannot write: {d} is not a folder", errno.ENOTDIR)
    if not os.access(d, os.W_OK | os.X_OK):
        raise OutputError(path, f"cannot write: the folder {d} is not writable", errno.EACCES)


# the character devices an output may be: /dev/null, /dev/zero, /dev/full (1:3, 1:5, 1:7), the virtual consoles,
# /dev/tty and pseudo-terminals (136-143); never memory, a port or serial line, a disk's SCSI node or flash
# (/dev/mem, /dev/port, /dev/ttyS*, /dev/sg*)
_PTY_MAJORS = range(136, 144)


def _harmless_device(rdev: int) -> bool:
    major, minor = os.major(rdev), os.minor(rdev)
    # major 4 below minor 64: the virtual consoles (from 64 on: serial ports, ttyS*); 5:0 /dev/tty (not the console
    # 5:1 or ptmx 5:2)
    return ((major == 1 and minor in (3, 5, 7)) or major in _PTY_MAJORS or (major == 4 and minor < 64)
            or (major == 5 and minor == 0))


def resolve_output(path) -> Output:
    """Where `path` would be written, by the output rule (write_outputs), and whether it can be:
    OutputError if not."""
    p = os.fspath(path)
    if not p or p.endswith(os.sep):
        raise OutputError(p, "not a file name", errno.EINVAL)
    fd = _named_fd(p)
    if fd is not None:                 # opening it again would start at offset 0 and lose O_APPEND
        try:
            flags = fcntl.fcntl(fd, fcntl.F_GETFL)
        except OSError as e:
            raise OutputError(p, f"cannot write: descriptor {fd} is not open", e.errno) from e
        if flags & os.O_ACCMODE == os.O_RDONLY:
            raise OutputError(p, f"cannot write: descriptor {fd} is open for reading only", errno.EBADF)
        st = os.fstat(fd)
        # a file behind the descriptor is known by its inode, so `>> key.zkey` meets the check against the inputs
        # and the other outputs; a pipe or terminal (written to, never replaced) by the number
        ident = (st.st_dev, st.st_ino) if stat.S_ISREG(st.st_mode) else ("fd", fd)
        return Output(p, p, True, ident, None, fd)
    try:
        st = os.stat(p)                                   # follows links
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise OutputError(p, _why(e), e.errno) from e
    if st is None:                                        # a new file, or a dangling link's target
        target = os.path.realpath(p) if os.path.islink(p) else p
        try:
            os.lstat(target)                              # a name too long, a file where a folder should be
        except FileNotFoundError:
            pass
        except OSError as e:
            raise OutputError(p, _why(e), e.errno) from e
        _writable_folder(p, target)
        return Output(p, target, False, ("new", os.path.realpath(target)), None)
    identity = (st.st_dev, st.st_ino)
    if stat.S_ISCHR(st.st_mode) and not _harmless_device(st.st_rdev):
        raise OutputError(p, f"a character device ({os.major(st.st_rdev)}:{os.minor(st.st_rdev)}) that is not "
                             f"/dev/null, /dev/zero, /dev/full or a terminal: never an output", errno.EINVAL)
    if _kind(st.st_mode, _STREAM_KINDS):
        if not os.access(p, os.W_OK):
            raise OutputError(p, f"cannot write: {_kind(st.st_mode, _STREAM_KINDS)} not writable", errno.EACCES)
        return Output(p, p, True, ("stream", os.path.abspath(p)), None)
    refused = _kind(st.st_mode, _REFUSED_KINDS)
    if refused or not stat.S_ISREG(st.st_mode):
        raise OutputError(p, f"{refused or 'not a regular file'}: an output is written to a regular file, a new "
                             f"path, a character device or a FIFO", errno.EINVAL)
    target = p
    if os.path.islink(p):
        target = os.path.realpath(p)
        try:
            same = os.stat(target)
        except OSError:
            same = None
        if same is None or (same.st_dev, same.st_ino) != identity:
            raise OutputError(p, "a link whose target has no path to replace (a deleted file?)", errno.EINVAL)
    if not os.access(target, os.W_OK):
        raise OutputError(p, "cannot write: a read-only file", errno.EACCES)
    _writable_folder(p, target)
    return Output(p, target, False, identity, stat.S_IMODE(st.st_mode))


def _input_identity(path) -> tuple:
    p = os.fspath(path)
    try:
        st = os.stat(p)
        return (st.st_dev, st.st_ino)
    except OSError:
        return ("new", os.path.realpath(p))


def check_outputs(outputs: dict, inputs: dict | None = None) -> dict:
    """Check a command's outputs (role -> path; None: not asked for) before any work: each can be written
    (resolve_output), and none is another output or an input (role -> path). OutputError names the path
    and both roles. Returns {role: Output}."""
    seen: dict[tuple, str] = {}
    for role, path in (inputs or {}).items():
        if path is not None:
            seen.setdefault(_input_identity(path), f"input {role}")
    resolved = {}
    for role, path in outputs.items():
        if path is None:
            continue
        out = resolve_output(path)
        other = seen.get(out.identity)
        if other is not None:
            raise OutputError(path, f"given as {role} and as {other}: one file would overwrite the other")
        seen.setdefault(out.identity, f"output {role}")
        resolved[role] = out
    return resolved


def _write_content(f, content) -> None:
    if callable(content):
        content(f)
    else:
        f.write(content.encode() if isinstance(content, str) else content)


def _keep_old(target: str, folder: str, names: list) -> str | bool | None:
    """Before a rename replaces `target`: a hard link to the file there, under a temp name in its folder (named in
    `names`), so a set that fails halfway puts it back; None where there is no file (the rename makes one), False
    where it cannot be kept (then the new file stays: whole, never nothing)."""
    try:
        if not stat.S_ISREG(os.lstat(target).st_mode):
            return False
    except FileNotFoundError:
        return None
    except OSError:
        return False
    for _ in range(8):
        name = os.path.join(folder, f"{TEMP_PREFIX}{secrets.token_hex(4)}{TEMP_SUFFIX}")
        names.append(name)
        try:
            os.link(target, name)
            return name
        except FileExistsError:
            names.pop()
        except OSError:
            names.pop()
            return False
    return False


def _fsync_folder(fd: int) -> None:
    try:
        os.fsync(fd)
    except OSError:
        pass                                 # a file system that cannot sync a folder: the rename stands


_HELD = threading.local()       # the folders (st_dev, st_ino) this thread holds locked (folder_held)


def _held_here() -> set:
    if not hasattr(_HELD, "ids"):
        _HELD.ids = set()
    return _HELD.ids


@contextmanager
def folder_held(path):
    """The writers' lock on the folder `path` (the one write_outputs takes across its renames) held over a
    read, merge and write of a file there, so that no other cuzk writes in between. A write_outputs inside the
    block, on this thread, finds it held and does not wait for itself. A folder that cannot be opened or
    locked: no lock (best effort, as write_outputs)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        yield
        return
    held = _held_here()
    try:
        st = os.fstat(fd)
        key = (st.st_dev, st.st_ino)
        if key in held:
            yield
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:
            yield
            return
        held.add(key)
        try:
            yield
        finally:
            held.discard(key)
    finally:
        os.close(fd)


@contextmanager
def _folders_locked(folders):
    """An exclusive flock on each folder (sorted: two writers never wait on each other in a cycle); the
    folders' descriptors are yielded for fsync. A folder that cannot be opened or locked is synced
    without a lock (best effort: e.g. a file system without flock); one this thread holds (folder_held)
    is not locked again."""
    held = _held_here()
    with ExitStack() as stack:
        fds = []
        for d in sorted(set(folders)):
            try:
                fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
            except OSError:
                continue
            stack.callback(os.close, fd)
            fds.append(fd)
            st = os.fstat(fd)
            if (st.st_dev, st.st_ino) in held:
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
            except OSError:
                pass
        yield fds


def _write_stream(out: Output, content) -> None:
    """A character device or FIFO: opened as it is (no create, no truncate), written, closed."""
    if isinstance(content, PathWriter):
        with tempfile.TemporaryDirectory(prefix="cuzk-") as d:
            tmp = os.path.join(d, "out")
            content.write(tmp)
            with open(tmp, "rb") as src:
                _write_stream(out, lambda f: _copy(src, f))
        return
    try:
        if out.fd is not None:
            for f in (sys.stdout, sys.stderr):       # what this process printed comes first
                if f is not None and not f.closed:
                    f.flush()
            fd = os.dup(out.fd)
        else:
            fd = os.open(out.path, os.O_WRONLY | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0))
        with os.fdopen(fd, "wb") as f:
            _write_content(f, content)
    except OutputError:
        raise
    except OSError as e:
        raise OutputError(out.path, f"cannot write: {_why(e)}", e.errno or errno.EIO) from e


def append_output(path, text: str) -> None:
    """`text` added at the end of `path` (a step summary: GITHUB_STEP_SUMMARY, --summary): resolved by the output
    rule (a link's final target, a stream written as it is; a folder, a block device or a socket refused), a new
    path made; the final target opened without following a link put there since. OutputError names the path."""
    out = resolve_output(path)
    if out.stream:
        _write_stream(out, text)
        return
    try:
        fd = os.open(out.target, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK
                     | getattr(os, "O_CLOEXEC", 0), 0o666)
        with os.fdopen(fd, "a") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise OSError(errno.EINVAL, "not a regular file once opened")
            f.write(text)
    except OSError as e:
        raise OutputError(out.path, f"cannot write: {_why(e)}", e.errno or errno.EIO) from e


def _copy(src, dst, chunk: int = 1 << 20) -> None:
    while True:
        b = src.read(chunk)
        if not b:
            return
        dst.write(b)


def write_outputs(files: dict) -> list[str]:
    """Write `files` (path -> content: str, bytes, a callable that writes to a binary file, or a
    PathWriter) by the output rule, all or nothing; the paths written are returned. On any failure before the
    last rename (a signal included) the temp files are removed, an output already renamed is put back as it was
    (a file it replaced, through a hard link kept until the set is whole; a new one removed), and made folders
    are removed. SIGINT and SIGTERM wait for the renames: once they start, the set lands whole.

    The output rule, for every file a command writes:
    - A regular file, or a path that does not exist yet, is written atomically: a temp file with a short name
      (.cuzk-XXXXXXXX.tmp) in the same folder, fsynced, renamed over the path, then the folder fsynced.
      Missing folders above a new path are made. A file that is replaced keeps its permission bits; a new
      one gets 0o666 less the umask. A read-only file is refused.
    - A symbolic link is written through: its final target is replaced (or made, when the link dangles)
      by the same atomic write in the target's folder; the link stays a link.
    - A character device or a FIFO (/dev/null, /dev/stdout, a named pipe) is written directly: opened
      without creating or truncating, no temp file, no rename; a FIFO waits for its reader. The devices are
      /dev/null, /dev/zero, /dev/full and terminals; any other (/dev/mem, /dev/port, /dev/sg0) is refused.
      Streams are told apart by name: /dev/stdout and /dev/stderr are two outputs even on one terminal.
    - /dev/stdout, /dev/stderr, /dev/fd/N and /proc/self/fd/N name a descriptor this process holds: it is
      written directly, whatever it is open on (`cuzk export-vk K /dev/stdout >> log` appends to log).
    - A folder, a block device, a socket or another character device is refused.
    - Before any work, a command checks all its outputs (check_outputs): each writable, none the same
      file as another output or an input (the same st_dev/st_ino where it exists, else the same real path).
    - Several outputs (proof and public inputs, bench's --save set) are all or nothing: every temp file is
      written before the first rename, and an advisory lock (flock) on each folder they land in is held
      across the renames, so a concurrent cuzk writing the same set lands its set whole, before or after.
      SIGKILL between two renames can still leave a mixed set, each file whole.
    - Every error is one line naming the path as the user gave it, never the temp file.
    - A temp file of this user's that a killed writer left in an output's folder (untouched for a day) goes.
    """
    outs = []
    seen: dict[tuple, str] = {}
    for path, content in files.items():
        out = resolve_output(path)
        if out.identity in seen:
            raise OutputError(path, f"written twice by one command (also as {seen[out.identity]})")
        seen[out.identity] = out.path
        outs.append((out, content))
    regular = [(o, c) for o, c in outs if not o.stream]
    for folder in {os.path.dirname(os.path.abspath(o.target)) for o, _ in regular}:
        if os.path.isdir(folder):           # what a writer killed there (SIGKILL) left, a day on
            remove_stale_temps(Path(folder), f"{TEMP_PREFIX}*{TEMP_SUFFIX}", STALE_TEMP_S)
    names: list[str] = []                   # temp files, registered before a signal can land
    made: list[str] = []
    done: list[tuple[Output, str | bool | None]] = []     # renamed, with what _keep_old kept of the file replaced
    committed = False
    default_mode = file_mode()
    try:
        staged = []
        for out, content in regular:
            folder = os.path.dirname(os.path.abspath(out.target))
            try:
                missing = []
                d = folder
                while not os.path.isdir(d):
                    missing.append(d)
                    d = os.path.dirname(d)
                for d in reversed(missing):
                    os.mkdir(d)
                    made.append(d)
                with signals_held():
                    fd, tmp = tempfile.mkstemp(dir=folder, prefix=TEMP_PREFIX, suffix=TEMP_SUFFIX)
                    names.append(tmp)
                if isinstance(content, PathWriter):
                    os.close(fd)
                    content.write(tmp)
                    fd = os.open(tmp, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
                    with os.fdopen(fd, "rb") as f:
                        os.fsync(f.fileno())
                else:
                    with os.fdopen(fd, "wb") as f:
                        _write_content(f, content)
                        f.flush()
                        os.fsync(f.fileno())
                os.chmod(tmp, default_mode if out.mode is None else out.mode)
            except OutputError:
                raise
            except OSError as e:
                raise OutputError(out.path, f"cannot write: {_why(e)}", e.errno or errno.EIO) from e
            staged.append((out, tmp, folder))
        for out, content in outs:           # streams cannot be taken back: after every temp file is whole
            if out.stream:
                _write_stream(out, content)
        with _folders_locked(folder for _, _, folder in staged) as folder_fds:
            with signals_held():            # a signal waits for the set's renames: none lands between two
                for out, tmp, folder in staged:
                    old = _keep_old(out.target, folder, names)
                    try:
                        os.replace(tmp, out.target)
                    except OSError as e:
                        raise OutputError(out.path, f"cannot write: {_why(e)}", e.errno or errno.EIO) from e
                    done.append((out, old))
                for fd in folder_fds:
                    _fsync_folder(fd)
                committed = True
    except BaseException:
        if not committed:
            for out, old in reversed(done):     # a half-written set is worse than none: each file as it was
                try:
                    if old:
                        os.replace(old, out.target)
                    elif old is None:
                        os.unlink(out.target)
                except OSError:
                    pass
        raise
    finally:
        for tmp in names:                   # temp files not renamed, and the replaced files' kept links
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass
        for d in reversed(made if not committed else []):      # emptied above: a failed set leaves no folder
            try:
                os.rmdir(d)
            except OSError:
                pass
    return [o.path for o, _ in outs]
