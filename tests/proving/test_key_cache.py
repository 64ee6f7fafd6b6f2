"""The key cache heals: a cached key that is truncated, corrupt, of an old format or another circuit's is
moved aside and made again with one warning line; keys reach the disk (fsync) before and after their
rename; a temp file whose writer is dead (its key's lock is free) goes at once, one whose writer holds
the lock stays. A key file given by the user is not a cache: damage there stays an error. A cache that
cannot be written (a full disk) is one line naming the file, exit 2, nothing left behind."""
from __future__ import annotations

import errno
import fnmatch
import os
import signal
import stat
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cuzk import circuits
from cuzk.cli import main
from cuzk.keygen import STALE_TEMP_S, cache_dir, cache_path, cached_setup
from cuzk.keys import KeyFormatError, ProvingKey

BENCH = ["bench", "--backend", "cpu", "--circuit", "mulchain", "--log-size", "5"]


@pytest.fixture(autouse=True)
def _cache(monkeypatch, tmp_path):
    monkeypatch.setenv("CUZK_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("CUZK_OPT", raising=False)


def _err_lines(capsys) -> list[str]:
    return [ln for ln in capsys.readouterr().err.splitlines() if ln and not ln.startswith("cuzk: no GPU")]


def _key_path() -> Path:
    r1cs, _, _ = circuits.build("mulchain", 5)
    return cache_path(r1cs, "coeff", 7, 0)


def _aside(path: Path) -> list[Path]:
    return sorted(path.parent.glob(path.name + ".corrupt-*"))


def _truncate(b: bytes) -> bytes:
    return b[:len(b) // 2]


def _flip_middle(b: bytes) -> bytes:
    i = len(b) // 2
    return b[:i] + bytes([b[i] ^ 0x01]) + b[i + 1:]


def _flip_last(b: bytes) -> bytes:                  # in the checksum itself
    return b[:-1] + bytes([b[-1] ^ 0x80])


def _old_version(b: bytes) -> bytes:
    return b[:8] + struct.pack("<I", 0) + b[12:]


def _other_circuits_key(b: bytes) -> bytes:
    """A valid key, but for mulchain 2^6: what a cache name must never hold."""
    r1cs, _, _ = circuits.build("mulchain", 6)
    _, other, _ = cached_setup(r1cs, backend="cpu", progress=False)
    return other.read_bytes()


DAMAGE = {"truncated": (_truncate, "checksum mismatch"), "empty": (lambda b: b"", "truncated header"),
          "flipped byte": (_flip_middle, "checksum mismatch"), "flipped checksum": (_flip_last, "checksum mismatch"),
          "old version": (_old_version, "version 0"), "other circuit": (_other_circuits_key, "another circuit")}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_damaged_cached_key_is_made_again(capsys, damage):
    change, why = DAMAGE[damage]
    assert main(BENCH) == 0
    path = _key_path()
    good = path.read_bytes()
    bad = change(good)
    path.write_bytes(bad)
    capsys.readouterr()

    assert main(BENCH) == 0
    warnings = [ln for ln in _err_lines(capsys) if "warning" in ln]
    assert len(warnings) == 1, warnings
    assert warnings[0].startswith("cuzk: warning: cached key ") and str(path) in warnings[0] and why in warnings[0]
    (aside,) = _aside(path)
    assert aside.read_bytes() == bad and aside.name in warnings[0]
    assert path.read_bytes() == good                # the same toxic waste: the same key, bit for bit
    ProvingKey.load(path)

    assert main(BENCH) == 0                         # healed: a plain hit, no warning
    lines = _err_lines(capsys)
    assert not [ln for ln in lines if "warning" in ln] and any(ln.endswith("(cached)") for ln in lines), lines


def test_at_most_one_corrupt_key_is_kept(capsys):
    assert main(BENCH) == 0
    path = _key_path()
    for i in range(3):
        path.write_bytes(b"damaged %d" % i)
        assert main(BENCH) == 0
    (aside,) = _aside(path)
    assert aside.read_bytes() == b"damaged 2"


def test_concurrent_benches_heal_a_corrupt_key_once(tmp_path):
    assert main(BENCH) == 0
    path = _key_path()
    path.write_bytes(_truncate(path.read_bytes()))
    env = {**os.environ, "CUZK_CACHE_DIR": str(tmp_path / "cache")}
    procs = [subprocess.Popen([sys.executable, "-m", "cuzk", *BENCH], cwd=tmp_path, env=env,
                              stdout=subprocess.DEVNULL, stderr=open(tmp_path / f"err{i}", "w")) for i in range(3)]
    assert [p.wait(120) for p in procs] == [0, 0, 0]
    lines = [ln for i in range(3) for ln in (tmp_path / f"err{i}").read_text().splitlines()]
    assert sum("warning" in ln for ln in lines) == 1, lines
    assert sum(ln.startswith("key: ") and "generated" in ln for ln in lines) == 1, lines
    assert len(_aside(path)) == 1
    ProvingKey.load(path)


def test_users_key_file_is_not_healed(tmp_path):
    """`cuzk keygen --out FILE` makes a key the user owns: a damaged one is an error naming it, left as is."""
    out = tmp_path / "mine.cuzkkey"
    assert main(["keygen", "--circuit", "mulchain", "--log-size", "5", "--backend", "cpu", "--out", str(out)]) == 0
    bad = _truncate(out.read_bytes())
    out.write_bytes(bad)
    with pytest.raises(KeyFormatError, match=r"mine\.cuzkkey: checksum mismatch"):
        ProvingKey.load(out)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "cache") == ["mine.cuzkkey"]
    assert out.read_bytes() == bad


def test_unreadable_cached_key_is_an_error_not_moved(capsys):
    """Something that cannot be read at all (here a FIFO) says nothing about a key: exit 2, left in place."""
    path = _key_path()
    path.parent.mkdir(parents=True)
    os.mkfifo(path)
    assert main(BENCH) == 2
    lines = _err_lines(capsys)
    assert len(lines) == 1 and lines[0].startswith("cuzk: error: ") and str(path) in lines[0], lines
    assert stat.S_ISFIFO(os.lstat(path).st_mode) and not _aside(path)


# ---------------------------------------------------------------- temp files of dead and live writers

WRITER = """
import fcntl, os, sys, time
lock, tmp = sys.argv[1:]
fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666)
fcntl.flock(fd, fcntl.LOCK_EX)
with open(tmp, "wb") as f:
    f.write(b"half a key")
print("ready", flush=True)
time.sleep(120)
"""


def _writer(key: Path):
    """A cache writer of `key` part way: its lock held, its temp file written. (process, temp path)"""
    key.parent.mkdir(parents=True, exist_ok=True)
    tmp = key.with_name(key.name + ".w1r2t3r4.tmp")
    p = subprocess.Popen([sys.executable, "-c", WRITER, str(key) + ".lock", str(tmp)], stdout=subprocess.PIPE,
                         text=True)
    assert p.stdout.readline().strip() == "ready"
    return p, tmp


def _kill(p) -> None:
    p.send_signal(signal.SIGKILL)
    p.wait()


@pytest.mark.parametrize("which", ["this key", "another key"])
def test_dead_writers_temp_is_removed_at_once(which):
    key = _key_path() if which == "this key" else cache_dir() / "0123456789abcdef01234567.cuzkkey"
    p, tmp = _writer(key)
    _kill(p)                                     # its temp is fresh: the age rule alone would keep it an hour
    r1cs, _, _ = circuits.build("mulchain", 5)
    cached_setup(r1cs, backend="cpu", progress=False)
    assert not tmp.exists()


def test_live_writers_temp_is_left_alone():
    key = cache_dir() / "0123456789abcdef01234567.cuzkkey"
    p, tmp = _writer(key)
    try:
        old = time.time() - 2 * STALE_TEMP_S           # a slow writer: alive, whatever the temp's age
        os.utime(tmp, (old, old))
        r1cs, _, _ = circuits.build("mulchain", 5)
        cached_setup(r1cs, backend="cpu", progress=False)           # a miss
        cached_setup(r1cs, backend="cpu", progress=False)           # a hit
        assert tmp.exists()
    finally:
        _kill(p)
    cached_setup(r1cs, backend="cpu", progress=False)               # its writer is gone now
    assert not tmp.exists()


# ---------------------------------------------------------------- durability

def test_key_is_fsynced_before_and_after_its_rename(monkeypatch):
    events = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd):
        st = os.fstat(fd)
        events.append(("fsync", "dir" if stat.S_ISDIR(st.st_mode) else "file", st.st_ino))
        real_fsync(fd)

    def replace(src, dst, **kw):
        events.append(("replace", Path(src).name, Path(dst).name))
        real_replace(src, dst, **kw)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    r1cs, _, _ = circuits.build("mulchain", 5)
    _, path, hit = cached_setup(r1cs, backend="cpu", progress=False)
    assert not hit
    renames = [i for i, e in enumerate(events) if e[0] == "replace" and e[2] == path.name]
    assert len(renames) == 1, events
    i = renames[0]
    # the temp's name carries its key's: remove_dead_temps finds a temp's lock by it (files.new_temp's naming)
    assert fnmatch.fnmatch(events[i][1], path.name + ".*.tmp"), events[i]
    assert ("fsync", "file", path.stat().st_ino) in events[:i], events     # the key's data, then its name
    assert ("fsync", "dir", path.parent.stat().st_ino) in events[i + 1:], events


# ---------------------------------------------------------------- a cache that cannot be written

def _full_disk(monkeypatch):
    def fsync(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))     # as a write or fsync says it: no file named
    monkeypatch.setattr(os, "fsync", fsync)


def _lock_is_a_folder(monkeypatch):
    lock = _key_path().with_name(_key_path().name + ".lock")
    lock.mkdir(parents=True)


@pytest.mark.parametrize("fault", [_full_disk, _lock_is_a_folder])
def test_a_cache_that_cannot_be_written_is_one_line_naming_the_file(capsys, monkeypatch, fault):
    fault(monkeypatch)
    assert main(BENCH) == 2
    lines = _err_lines(capsys)
    assert len(lines) == 1 and lines[0].startswith("cuzk: error: ") and str(_key_path()) in lines[0], lines
    assert "cannot write the key cache" in lines[0], lines
    assert not list(_key_path().parent.glob("*.tmp")) and not _key_path().exists()


def test_another_user_s_lock_file_is_locked_read_only(tmp_path, monkeypatch):
    """In a cache shared by several users a key's lock file is its maker's (0644): opening it for writing fails
    with EACCES for the others, where flock needs only read access. The lock is taken read-only, and held."""
    import fcntl

    from cuzk import keygen
    lock = tmp_path / "k.cuzkkey.lock"
    lock.write_text("")
    real_open = os.open

    def as_other_user(path, flags, *a):
        if Path(path) == lock and flags & (os.O_RDWR | os.O_WRONLY):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_open(path, flags, *a)
    monkeypatch.setattr(keygen.os, "open", as_other_user)
    with keygen._locked(lock):
        fd = real_open(lock, os.O_RDONLY)
        try:
            with pytest.raises(BlockingIOError):        # held: another taker would wait
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)
