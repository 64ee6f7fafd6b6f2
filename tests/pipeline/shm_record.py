"""The /dev/shm blocks a test's own pipeline makes, named as they are made.

/dev/shm is the host's: another test worker's pipeline makes and removes psm_* blocks of its own at the same
time, so a before/after listing of the directory cannot tell a leak from a neighbour. Each test checks the
names its own code made instead, in its process and in the process pools that code starts (the blocks a pool
worker makes and removes itself, e.g. a witness packed after it was written, never reach the parent)."""
from __future__ import annotations

import os
import sys
import types
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import shared_memory
from pathlib import Path

from cuzk import pipeline, synthesis

SHM_DIR = Path("/dev/shm")


def record(path, patch=setattr) -> None:
    """From now on, the name of every block cuzk.pipeline makes, here and in the process pools started later
    (cuzk.synthesis.make_pool), is appended to `path` as soon as the block exists. `patch`: monkeypatch.setattr
    in a test, so the recording ends with it."""
    path = os.fspath(path)

    class Recorded(shared_memory.SharedMemory):
        def __init__(self, name=None, create=False, size=0):
            super().__init__(name, create, size)
            if create:
                with open(path, "a") as f:          # one short append per block: workers write beside each other
                    f.write(self.name + "\n")

    class Pool(ProcessPoolExecutor):
        def __init__(self, *a, initializer=None, initargs=(), **kw):
            super().__init__(*a, initializer=_worker_start, initargs=(path, initializer, initargs), **kw)

    patch(pipeline, "shared_memory", types.SimpleNamespace(SharedMemory=Recorded))
    patch(synthesis, "ProcessPoolExecutor", Pool)


def _worker_start(path, initializer, initargs) -> None:
    """A pool worker records its blocks too, then runs the pool's own initializer."""
    record(path)
    if initializer is not None:
        initializer(*initargs)


class Blocks:
    """The blocks recorded in `path`: made (every name) and left (those still in /dev/shm)."""

    def __init__(self, path):
        self.path = Path(path)

    def made(self) -> set:
        return set(self.path.read_text().split()) if self.path.exists() else set()

    def left(self) -> set:
        return {n for n in self.made() if (SHM_DIR / n).exists()}


def cli() -> None:
    """`python -c 'import shm_record; shm_record.cli()' FILE ARGS...`: cuzk's command line (as `python -m cuzk
    ARGS...`) with its blocks recorded in FILE."""
    record(sys.argv.pop(1))
    from cuzk.cli import main
    sys.exit(main())
