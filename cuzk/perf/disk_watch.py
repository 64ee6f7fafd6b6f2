"""What the gate's workers load from disk, watched across rounds: each side's tree, its key folder, and the caches
both share (cubins, keys, CuPy's kernels). The head's code runs as the same user as the base's and could rewrite
the base's tree or a shared cache between rounds, so that the base's next worker loads slower code.

A file's state is its inode, size, modification and change time (lstat): the change time is set by the kernel on
every write, rename or chmod and no unprivileged call sets it back, so a file rewritten and its times restored
still reads as changed. A watched place is either closed (no file may change, come or go: the trees) or a cache
(the caches both sides read, each side's key folder: files may come, as a kernel is built or a key made, and go,
as a dead writer's temp file is cleared or a damaged entry set aside, which at worst makes a side build again in
its untimed set-up; but none that stays may change, and writers' temp, lock and set-aside files are not
entries); a cache's clean check keeps what it found, so an entry made in one round is watched from the next
(the gate's _disk_changed).
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

SHOWN = 5       # changed paths named in a message


NOT_ENTRIES = (".tmp", ".lock", ".corrupt")    # a writer's temp file, a lock, an entry set aside: no one loads them


def disk_state(root: Path, shallow: bool = False) -> dict[str, tuple[int, int, int, int]]:
    """Every file and link under root (links not followed), or in root itself (shallow): relative path -> (inode,
    size, mtime_ns, ctime_ns)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        if shallow and dirpath != str(root):
            break
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            p = os.path.join(dirpath, name)
            try:
                st = os.lstat(p)
            except OSError:
                continue
            out[os.path.relpath(p, root)] = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    return out


@dataclass
class Watched:
    name: str                    # as a message names it: "the base tree", "the cubin cache (/path)"
    root: Path
    closed: bool                 # no file may come or go (a cache: files may come)
    state: dict = field(default_factory=dict)
    shallow: bool = False        # its own files only, not its folders' (an import root: see import_roots)
    code: bool = False           # compiled kernels: what comes during a gate is removed at its end (remove_new)

    def take(self) -> None:
        self.state = disk_state(self.root, self.shallow) if self.root.is_dir() else {}

    def changes(self, keep: bool = False) -> list[str]:
        """Closed: the paths that changed, came or went since take(); a cache: its entries that changed. keep:
        where none did, what is there now is what later checks compare with (a cache's new entries watched)."""
        now = disk_state(self.root, self.shallow) if self.root.is_dir() else {}
        out = self._changed(now)
        if keep and not out:
            self.state = now
        return out

    def _changed(self, now: dict) -> list[str]:
        if self.closed:
            return sorted({k for k, v in self.state.items() if now.get(k) != v} | (set(now) - set(self.state)))
        return sorted(k for k, v in self.state.items() if k in now and now[k] != v
                      and not any(m in os.path.basename(k) for m in NOT_ENTRIES))


def shared_caches(env=None) -> list[Watched]:
    """The caches every worker reads: cuzk's cubins and keys, CuPy's kernels (as the workers' environment names
    them, else their defaults)."""
    env = os.environ if env is None else env
    xdg = env.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache"))     # as cuzk reads it
    places = [("the cubin cache", env.get("CUZK_CUBIN_DIR") or os.path.join(xdg, "cuzk", "cubin"), True),
              ("the key cache", os.path.join(env.get("CUZK_CACHE_DIR") or os.path.join(xdg, "cuzk"), "keys"), False),
              ("CuPy's kernel cache", env.get("CUPY_CACHE_DIR") or os.path.expanduser("~/.cupy/kernel_cache"), True)]
    return [Watched(f"{name} ({path})", Path(path).absolute(), closed=False, code=code) for name, path, code in places]


def remove_new(w: Watched, before: dict) -> list[str]:
    """The entries of a kernel cache that came since `before` (its state when the gate began), removed. Made during
    a gate, where a head's code ran as the runner's user, one may be a kernel planted under the name a later commit's
    source will have: a later gate, or the nightly on this runner, would load it for that commit's code, unbuilt and
    unmeasured. An honest entry is built again when next needed. A writer's temp, lock or set-aside file is left to
    it; nothing is followed (a link is removed as a link)."""
    now = disk_state(w.root, w.shallow) if w.root.is_dir() else {}
    gone = []
    for rel in sorted(set(now) - set(before)):
        if any(m in os.path.basename(rel) for m in NOT_ENTRIES):
            continue
        try:
            os.unlink(w.root / rel)
            gone.append(rel)
        except OSError:
            pass
    return gone


def import_roots(path=None, spare=(), within=()) -> list[Watched]:
    """The interpreter's import folders (sys.path, as the workers' interpreter has them, less the checkouts), each
    closed and shallow: a file that comes there (a `.pth` file, a `sitecustomize` module) runs in every later worker,
    the base's too, before any of its code. Their folders' files are not watched (a walk of every installed
    package takes seconds a round): a rewrite inside an installed package is not seen (docs/runners.md 4)."""
    spare = {os.path.abspath(p) for p in spare}               # the gate's own project folder: its tests write there
    within = [os.path.abspath(p) for p in within]             # the gate's workspace: the checkouts, watched apart
    out = []
    for p in sorted({os.path.abspath(p) for p in (sys.path if path is None else path) if p}):
        if os.path.isdir(p) and p not in spare and not any(p == w or p.startswith(w + os.sep) for w in within):
            out.append(Watched(f"the interpreter's import folder ({p})", Path(p), closed=True, shallow=True))
    return out


CACHE_VARS = ("CUZK_CUBIN_DIR", "CUZK_CACHE_DIR", "CUPY_CACHE_DIR", "XDG_CACHE_HOME")


def absolute_caches(env: dict) -> dict:
    """The cache folders named relative to the gate's folder, made absolute: the workers run in their checkouts,
    where a relative one would land inside the tree (and not in the cache watched)."""
    return {**env, **{k: os.path.abspath(env[k]) for k in CACHE_VARS if env.get(k)}}


def changed_message(w: Watched, paths: list[str]) -> str:
    more = f" and {len(paths) - SHOWN} more" if len(paths) > SHOWN else ""
    return f"{w.name} changed while the workers ran: {', '.join(paths[:SHOWN])}{more}"
