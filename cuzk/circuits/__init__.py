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

# Witness-only generators: (inputs, aux limbs) equal to the generator's, without the constraint
# system (the same for every seed). Signature (log_size, opts=, seed=, alloc=).
WITNESSES: dict[str, Callable] = {
    "porep_partition": porep_partition.witness_limbs,
}

# Packed-witness generators: (inputs, PackedWitness or None) equal to pack() of the witness-only generator's
# limbs, made without them. Signature (log_size, opts=, seed=).
PACKED: dict[str, Callable] = {
    "porep_partition": porep_partition.witness_packed,
}

MIN_LOG_SIZE = {"porep_partition": 5}       # the others start at 3


def check_size(name: str, log_size: int) -> None:
    """ValueError where `name` is no circuit or `log_size` is outside its range."""
    if name not in CIRCUITS:
        raise ValueError(f"unknown circuit {name!r}; known: {', '.join(CIRCUITS)}")
    lo = MIN_LOG_SIZE.get(name, 3)
    if not lo <= log_size <= 27:
        raise ValueError(f"--log-size must be in {lo}..27 for {name}, got {log_size}")


# A batch's circuits are held at once (their witnesses): past these a run holds what no host has, and a number read
# from a file or a command line must fail as one line before any key is made, never as "out of host memory" after
MAX_CIRCUITS = 1024            # a 32 GiB sector's PoRep batch is 10
MAX_BATCH_LOG = 31             # circuits x 2^log_size: 2^31 constraints hold 64 GiB of witness alone (10 x 2^27 fits)


def check_batch(name: str, log_size: int, circuits: int, what: str = "--circuits") -> None:
    """ValueError where `circuits` of `name` at `log_size` are not a batch a run can hold (check_size first)."""
    check_size(name, log_size)
    if not 1 <= circuits <= MAX_CIRCUITS:
        raise ValueError(f"{what} = {circuits} is not in 1..{MAX_CIRCUITS}")
    if circuits << log_size > 1 << MAX_BATCH_LOG:
        raise ValueError(f"{what} = {circuits} at 2^{log_size} is more than 2^{MAX_BATCH_LOG} constraints in one "
                         f"batch, more than a run can hold")


def build(name: str, log_size: int, opts: OptSet | None = None, seed: int = 1, limbs: bool = False):
    """(R1CS, inputs, aux). aux is Fr ints, or with `limbs` whatever the generator made: canonical
    uint32[num_aux, 8] limbs for the generators that write them (porep_partition), else ints."""
    check_size(name, log_size)
    r1cs, inputs, aux = CIRCUITS[name](log_size, opts=opts, seed=seed)
    if not limbs and aux.dtype != object:
        aux = limbs_to_ints(aux)
    return r1cs, inputs, aux


def has_witness_only(name: str) -> bool:
    return name in WITNESSES


def has_packed_witness(name: str) -> bool:
    return name in PACKED


def witness_packed(name: str, log_size: int, seed: int = 1, opts: OptSet | None = None):
    """(inputs, PackedWitness or None) from the circuit's packed-witness generator (has_packed_witness)."""
    check_size(name, log_size)
    return PACKED[name](log_size, opts=opts, seed=seed)


def witness(name: str, log_size: int, seed: int = 1, opts: OptSet | None = None, limbs: bool = False,
            alloc=None):
    """(inputs, aux) exactly as build(...)[1:] gives them, for a prover that already holds the circuit.
    Uses the circuit's witness-only generator where it has one (no matrices; aux limbs allocated by
    `alloc(shape, dtype)`, zero-filled), else builds the whole circuit and drops it (`alloc` unused)."""
    check_size(name, log_size)
    if name not in WITNESSES:
        return build(name, log_size, opts=opts, seed=seed, limbs=limbs)[1:]
    inputs, aux = WITNESSES[name](log_size, opts=opts, seed=seed, alloc=alloc)
    return inputs, (aux if limbs else limbs_to_ints(aux))
