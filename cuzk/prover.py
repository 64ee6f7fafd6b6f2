"""The prover: backend-independent orchestration of the proving phases."""
from __future__ import annotations

import secrets
import time
from contextlib import contextmanager

from .backend.base import Backend
from .field import R
from .timing import PhaseTimer


class Prover:
    """Holds the key resident on its backend across many proofs."""

    def __init__(self, backend: Backend, pk, kh=None):
        """`kh`: a key handle already resident (from `load_key` of a backend of the same kind), so
        several provers (e.g. one per optimization set in `cuzk ablate`) share one copy of the key."""
        self.backend = backend
        self.pk = pk
        self.kh = kh if kh is not None else backend.load_key(pk)

    def _randomness(self, n: int, rng) -> list[tuple[int, int]]:
        if rng is None:
            return [(secrets.randbelow(R), secrets.randbelow(R)) for _ in range(n)]
        return [(rng.randrange(R), rng.randrange(R)) for _ in range(n)]   # tests only

    def prove(self, assignments: list, timer: PhaseTimer | None = None, rng=None, progress=None) -> list:
        """One proof per assignment. `rng` (a random.Random) makes r, s reproducible: tests only.
        `progress(phase, seconds)`, when given, is called as each phase ends (progress.step_printer)."""
        if not assignments:
            return []
        pk = self.pk
        for i, asg in enumerate(assignments):
            if asg.a is None and asg.abc_dev is None:
                raise ValueError(f"circuit {i}: its a, b, c were consumed by an earlier proof (optimization F2 "
                                 f"spends a pipeline's assignments); make the assignment again")
            n = len(asg.a) if asg.a is not None else asg.abc_dev.shape[1]
            if len(asg.inputs) != pk.num_inputs or asg.num_aux != pk.num_aux or n != 1 << pk.log_n:
                raise ValueError(f"circuit {i}: assignment sizes ({len(asg.inputs)} inputs, {asg.num_aux} aux, "
                                 f"domain {n}) do not match the key ({pk.num_inputs}, {pk.num_aux}, "
                                 f"{1 << pk.log_n})")
        timer = timer if timer is not None else PhaseTimer(device=self.backend.timer_device())
        be, kh = self.backend, self.kh

        @contextmanager
        def phase(name):
            t0 = time.perf_counter()
            with timer.phase(name, be.phase_impl(name)):
                yield
            if progress is not None:
                progress(name, time.perf_counter() - t0)
        with phase("prep_msm"):
            prep = be.prep_msm(kh, assignments)
        with phase("ntt_msm_h"):
            hs = be.ntt_msm_h(kh, assignments)
        with phase("batch_addition"):
            ones = be.batch_addition(kh, prep)
        with phase("tail_msm"):
            tails = be.tail_msm(kh, prep, assignments)
        with phase("b_g2"):
            g2 = be.b_g2(kh, prep, assignments)
        with phase("proof_assembly"):
            parts = [{"a": o["a"] + t["a"], "b_g1": o["b_g1"] + t["b_g1"], "b_g2": o["b_g2"] + b2,
                      "l": o["l"] + t["l"], "h": h} for o, t, b2, h in zip(ones, tails, g2, hs)]
            proofs = be.proof_assembly(kh, parts, self._randomness(len(assignments), rng))
        self.last_prep = prep
        return proofs
