"""synthesis: circuit -> Assignment (input and aux witness, and a, b, c over the domain)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import circuits
from ..field import limbs_to_ints
from ..opts import OptSet
from ..poly import Domain
from ..r1cs import R1CS


@dataclass
class Assignment:
    inputs: np.ndarray    # object[num_inputs], inputs[0] == 1
    aux: np.ndarray       # object[num_aux], or canonical limbs uint32[num_aux, 8] (large circuits)
    a: np.ndarray | None  # object[n]: constraint rows, then one row per input, then zeros
    b: np.ndarray | None
    c: np.ndarray | None
    abc_dev: object = None  # on the GPU backend: device uint32[3, n, 8], Montgomery (a, b, c on host are None)
    z_dev: object = None    # on the GPU backend: the witness z, device uint32[num_vars, 8], Montgomery
    aux_packed: object = None  # instead of aux: a witness_pack.PackedWitness (handed to the GPU packed, B2)
    abc_spendable: bool = False  # its proof may consume abc_dev in place (F2): the pipeline's, proved once

    @property
    def num_aux(self) -> int:
        return len(self.aux) if self.aux is not None else self.aux_packed.n

    @property
    def z(self) -> np.ndarray:
        """The witness as Fr ints (converted from limbs: small sizes only)."""
        aux = self.aux
        if aux is None:
            from ..witness_pack import unpack_host
            aux = unpack_host(self.aux_packed)
        return np.concatenate([self.inputs, aux_ints(aux)])

    @property
    def public(self) -> list[int]:
        return [int(v) for v in self.inputs[1:]]


def is_limbs(aux: np.ndarray) -> bool:
    return isinstance(aux, np.ndarray) and aux.dtype == np.uint32 and aux.ndim == 2


def aux_ints(aux: np.ndarray) -> np.ndarray:
    return limbs_to_ints(aux) if is_limbs(aux) else aux


def assign(r1cs: R1CS, inputs: np.ndarray, aux: np.ndarray, domain: Domain) -> Assignment:
    """Evaluate A z, B z, C z, check a∘b = c, and lay them out over the domain."""
    if len(inputs) != r1cs.num_inputs or len(aux) != r1cs.num_aux:
        raise ValueError(f"witness sizes ({len(inputs)} inputs, {len(aux)} aux) do not match the "
                         f"circuit ({r1cs.num_inputs}, {r1cs.num_aux})")
    aux = aux_ints(aux)
    if r1cs.qap_rows > domain.n:
        raise ValueError(f"circuit needs {r1cs.qap_rows} rows but the domain has {domain.n}")
    z = np.concatenate([inputs, aux])
    a, b, c = r1cs.evaluate(z)
    r1cs.check(a, b, c)
    m, n = r1cs.num_constraints, domain.n
    out = []
    for v, tail in ((a, inputs), (b, None), (c, None)):
        full = np.zeros(n, dtype=object)
        full[:m] = v
        if tail is not None:
            full[m:m + len(tail)] = tail
        out.append(full)
    return Assignment(inputs, aux, *out)


def _build_timed(name: str, log_size: int, opts: OptSet, seed: int, keep_r1cs: bool):
    """One circuit's witness generation, in a pool worker: (r1cs or None, inputs, aux, start, stop)
    with absolute perf_counter times (CLOCK_MONOTONIC, comparable across processes on Linux).
    With keep_r1cs the whole circuit is built; else only the witness (circuits.witness)."""
    import time
    t0 = time.perf_counter()
    if keep_r1cs:
        r1cs, inputs, aux = circuits.build(name, log_size, opts=opts, seed=seed, limbs=True)
    else:
        r1cs, (inputs, aux) = None, circuits.witness(name, log_size, seed=seed, opts=opts, limbs=True)
    return r1cs, inputs, aux, t0, time.perf_counter()


def synthesize(name: str, log_size: int, opts: OptSet, domain: Domain | None = None,
               seeds=(1,), assign_fn=None, executor=None, timer=None) -> tuple[R1CS, list[Assignment]]:
    """Build the batch's circuit once (for its first seed) and each later seed's witness only
    (circuits.witness: the constraint system does not depend on the seed), and assign each (on the
    host, or with the backend's `assign_fn`) against that one circuit.

    With `executor` (a concurrent.futures pool of threads or processes) the circuits' witnesses
    are generated in parallel, as bellperson does for a PoRep batch; the a/b/c evaluation then
    runs here, circuit by circuit. Each circuit gets a sub-record in the running synthesis phase
    (`timing.circuit`), labelled "build" (circuit 0: the constraint system and its witness) or
    "witness" (the others), then "assign". Pool workers' times go to `timer` when one is given."""
    from ..timing import circuit
    assign_fn = assign_fn or assign
    seeds = list(seeds)
    r1cs0, result = None, []
    if executor is None:
        for i, seed in enumerate(seeds):
            # two sub-steps per circuit, as in the pooled path: building (circuit 0) or the witness, then assign
            with circuit(i, label="build" if r1cs0 is None else "witness"):
                if r1cs0 is None:
                    r1cs0, inputs, aux = circuits.build(name, log_size, opts=opts, seed=seed, limbs=True)
                    domain = domain or Domain.for_size(r1cs0.qap_rows)
                else:
                    inputs, aux = circuits.witness(name, log_size, seed=seed, opts=opts, limbs=True)
            with circuit(i, label="assign"):
                result.append(assign_fn(r1cs0, inputs, aux, domain))
        return r1cs0, result
    # every seed has the same constraint system: only the first future builds it
    futures = [executor.submit(_build_timed, name, log_size, opts, seed, i == 0) for i, seed in enumerate(seeds)]
    for i, fut in enumerate(futures):
        r1cs, inputs, aux, t0, t1 = fut.result()
        if timer is not None:
            timer.add_circuit_span("synthesis", i, t0, t1, label="witness")
        if r1cs0 is None:
            r1cs0 = r1cs
            domain = domain or Domain.for_size(r1cs.qap_rows)
        with circuit(i, label="assign"):
            result.append(assign_fn(r1cs0, inputs, aux, domain))
    return r1cs0, result


def _warm(_):
    from .. import circuits  # noqa: F401  (imports paid before timing, not inside the synthesis phase)
    return 0


def make_pool(kind: str, workers: int):
    """A pool for parallel witness generation: 'thread' (one address space, as bellperson's
    rayon threads: allocations and page faults contend in one process) or 'process'
    (separate address spaces; started with 'spawn', safe beside a CUDA context)."""
    from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
    if workers < 1:
        raise ValueError(f"parallel synthesis needs >= 1 worker, got {workers}")
    if kind == "thread":
        return ThreadPoolExecutor(workers, thread_name_prefix="cuzk-synth")
    if kind == "process":
        import multiprocessing
        pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))
        list(pool.map(_warm, range(4 * workers)))     # start the workers now, outside the timed phase
        return pool
    raise ValueError(f"synthesis pool must be thread or process, not {kind!r}")
