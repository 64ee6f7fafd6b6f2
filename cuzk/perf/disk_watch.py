"""What the gate's workers load from disk, watched across rounds: each side's tree, its key folder, and the caches
both share (cubins, keys, CuPy's kernels). The head's code runs as the same user as the base's and could rewrite
the base's tree or a shared cache between rounds, so that the base's next worker loads slower code.

A file's state is its inode, size, modification and change time (lstat): the change time is set by the kernel on
every write, rename or chmod and no unprivileged call sets it back, so a file rewritten and its times restored
still reads as changed. A watched place is either closed (no file may change, come or go: the trees, a key folder
once its key is made) or a cache (files may come, as a kernel is built or a key made, but none that was there may
change or go); a cache is taken again after each clean check, so an entry made in one round is watched from the
next (the gate's _disk_changed).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

SHOWN = 5       # changed paths named in a message


def disk_state(root: Path) -> dict[str, tuple[int, int, int, int]]:
    """Every file and link under root (links not followed): relative path -> (inode, size, mtime_ns, ctime_ns)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
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

    def take(self) -> None:
        self.state = disk_state(self.root) if self.root.is_dir() else {}

    def changes(self) -> list[str]:
        """The paths that changed or went since take() (and, closed, those that came), sorted."""
        now = disk_state(self.root) if self.root.is_dir() else {}
        out = {k for k, v in self.state.items() if now.get(k) != v}
        if self.closed:
            out |= set(now) - set(self.state)
        return sorted(out)


def shared_caches(env=None) -> list[Watched]:
    """The caches every worker reads: cuzk's cubins and keys, CuPy's kernels (as the workers' environment names
    them, else their defaults)."""
    env = os.environ if env is None else env
    xdg = env.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    places = [("the cubin cache", env.get("CUZK_CUBIN_DIR") or os.path.join(xdg, "cuzk", "cubin")),
              ("the key cache", os.path.join(env.get("CUZK_CACHE_DIR") or os.path.join(xdg, "cuzk"), "keys")),
              ("CuPy's kernel cache", env.get("CUPY_CACHE_DIR") or os.path.expanduser("~/.cupy/kernel_cache"))]
    return [Watched(f"{name} ({path})", Path(path), closed=False) for name, path in places]


def changed_message(w: Watched, paths: list[str]) -> str:
    more = f" and {len(paths) - SHOWN} more" if len(paths) > SHOWN else ""
    return f"{w.name} changed while the workers ran: {', '.join(paths[:SHOWN])}{more}"
