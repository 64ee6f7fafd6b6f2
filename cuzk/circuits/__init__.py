"""Circuit generators. Each builds a whole circuit with block calls, never one Python call
per constraint, and returns (R1CS, inputs, aux) for a given witness seed (aux as Fr ints, or as
canonical uint32 limbs where the generator writes them: see build)."""
from __future__ import annotations

from typing import Callable

from ..field import limbs_to_ints
from ..opts import OptSet
from ..r1cs import R1CS
from . import mulchain, porep_like, porep_partition

Generator = Callable[..., "tuple[R1CS, object, object]"]

CIRCUITS: dict[str, Generator] = {
    "mulchain": mulchain.build,
    "porep_like": porep_like.build,
    "porep_partition": porep_partition.build,
}

MIN_LOG_SIZE = {"porep_partition": 5}       # the others start at 3


def build(name: str, log_size: int, opts: OptSet | None = None, seed: int = 1, limbs: bool = False):
    """(R1CS, inputs, aux). aux is Fr ints, or with `limbs` whatever the generator made: canonical
    uint32[num_aux, 8] limbs for the generators that write them (porep_partition), else ints."""
    if name not in CIRCUITS:
        raise ValueError(f"unknown circuit {name!r}; known: {', '.join(CIRCUITS)}")
    lo = MIN_LOG_SIZE.get(name, 3)
    if not lo <= log_size <= 27:
        raise ValueError(f"--log-size must be in {lo}..27 for {name}, got {log_size}")
    r1cs, inputs, aux = CIRCUITS[name](log_size, opts=opts, seed=seed)
    if not limbs and aux.dtype != object:
        aux = limbs_to_ints(aux)
    return r1cs, inputs, aux
