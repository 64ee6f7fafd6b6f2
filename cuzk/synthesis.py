"""synthesis, the part both backends share: circuit -> witness (in parallel for a batch), each circuit's
witness then assigned (a, b, c) by the backend's `assign` (the CPU reference's by default)."""
from __future__ import annotations

import os
import signal
import threading
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

from . import circuits
from .backend.cpu.synthesis import assign
from .groth16.assignment import Assignment
from .opts import OptSet
from .poly import Domain
from .r1cs import R1CS
from .timing import circuit


def _build_timed(name: str, log_size: int, opts: OptSet, seed: int, keep_r1cs: bool):
    """One circuit's witness generation, in a pool worker: (r1cs or None, inputs, aux, start, stop)
    with absolute perf_counter times (CLOCK_MONOTONIC, comparable across processes on Linux).
    With keep_r1cs the whole circuit is built; else only the witness (circuits.witness)."""
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
    """Nothing: unpickling it imports this module, and so .circuits, in the worker (paid before timing, not inside
    the synthesis phase)."""
    return 0


PARENT_POLL_S = 1.0     # how often a process worker checks that its parent is still there


def _exit_with_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(PARENT_POLL_S)
    os._exit(1)


def _worker_init(parent: int) -> None:
    """A process worker's start: Ctrl-C (SIGINT to the whole process group) is the parent's to handle, which
    stops the pool (an idle worker would print a KeyboardInterrupt traceback and die); and a parent killed
    outright (SIGKILL, the OOM killer) takes its workers along (they would wait on their queue forever,
    orphaned, and keep the resource tracker and its /dev/shm blocks alive)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_exit_with_parent, args=(parent,), name="cuzk-parent-watch", daemon=True).start()


def make_pool(kind: str, workers: int):
    """A pool for parallel witness generation: 'thread' (one address space, as bellperson's
    rayon threads: allocations and page faults contend in one process) or 'process'
    (separate address spaces; started with 'spawn', safe beside a CUDA context)."""
    if workers < 1:
        raise ValueError(f"parallel synthesis needs >= 1 worker, got {workers}")
    if kind == "thread":
        return ThreadPoolExecutor(workers, thread_name_prefix="cuzk-synth")
    if kind == "process":
        import multiprocessing
        pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                                   initializer=_worker_init, initargs=(os.getpid(),))
        list(pool.map(_warm, range(4 * workers)))     # start the workers now, outside the timed phase
        return pool
    raise ValueError(f"synthesis pool must be thread or process, not {kind!r}")
