"""Progress of long steps on stderr, a line per step: keygen on the GPU and proving at large sizes, where a
step takes seconds and a silent terminal looks hung. (The CPU keygen has its tqdm bar; kernel compilation
its own notice, cuzk/gpu/loader.py.)"""
from __future__ import annotations

import sys

LARGE_LOG = 20          # from a 2^20 domain a proof's phases and a key's steps take long enough to report


def step_printer(what: str, stream=None):
    """A progress callback, step(name, seconds), that prints `cuzk: <what>: <name> (<seconds> s)`."""
    def step(name: str, seconds: float) -> None:
        print(f"cuzk: {what}: {name} ({seconds:.2f} s)", file=stream or sys.stderr, flush=True)
    return step
