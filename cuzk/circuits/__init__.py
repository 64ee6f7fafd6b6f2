"""Circuit generators. Each builds a whole circuit with block calls, never one Python call
per constraint, and returns (R1CS, inputs, aux) for a given witness seed."""
from __future__ import annotations

from typing import Callable

from ..opts import OptSet
from ..r1cs import R1CS
from . import mulchain, porep_like

Generator = Callable[..., "tuple[R1CS, object, object]"]

CIRCUITS: dict[str, Generator] = {
    "mulchain": mulchain.build,
    "porep_like": porep_like.build,
}


def build(name: str, log_size: int, opts: OptSet | None = None, seed: int = 1):
    if name not in CIRCUITS:
        raise ValueError(f"unknown circuit {name!r}; known: {', '.join(CIRCUITS)}")
    if not 3 <= log_size <= 27:
        raise ValueError(f"--log-size must be in 3..27, got {log_size}")
    return CIRCUITS[name](log_size, opts=opts, seed=seed)
