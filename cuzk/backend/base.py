"""The backend interface: one method per proving phase (synthesis is shared host code)."""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np


@dataclass
class Prep:
    """prep_msm's answer: which variables go to the tail MSMs and which to batch addition (host or device
    index arrays)."""
    num_inputs: int
    tail: np.ndarray          # int64 indices into z, shared by the batch
    ones: list                # per circuit: int64 indices into z (scalar 1, not in tail)
    counts: dict              # zeros / ones / others, summed over the batch

    def aux_part(self, idx: np.ndarray) -> np.ndarray:
        """Indices restricted to aux variables, shifted to aux numbering (for L)."""
        return idx[idx >= self.num_inputs] - self.num_inputs


class Backend(ABC):
    name = "abstract"

    def __init__(self, opts):
        """opts: the optimization set (an opts.OptSet), resolved by the caller: a backend reads no environment."""
        if opts is None:
            raise TypeError(f"{type(self).__name__} needs its optimization set (cuzk.environment.options() at the edge)")
        self.opts = opts

    def phase_impl(self, phase: str) -> str:
        """Which implementation runs a phase: the backend's own, or 'cpu' where it falls back."""
        return self.name

    def timer_device(self):
        """Hook for PhaseTimer device events (record_event, elapsed_s, peak_bytes); None on the CPU."""
        return None

    def synchronize(self) -> None:
        """Wait for the work queued on the device (nothing to wait for on the host)."""

    @abstractmethod
    def assign(self, r1cs, inputs, aux, domain):
        """The a/b/c evaluation of synthesis: an Assignment (groth16/assignment.py)."""

    def assign_zkey(self, zk, values):
        """a/b/c of a snarkjs key's circuit (formats.ZKey) from the witness: Fr ints, or canonical
        limbs uint32[n_vars, 8] (a .wtns as read). Host reference by default."""
        return zk.assign(values)

    @abstractmethod
    def load_key(self, pk) -> object:
        """Make the proving key resident (GPU: upload the SRS once); returns a handle."""

    @abstractmethod
    def prep_msm(self, kh, assignments):
        """0/1/other split of the scalars, merged over the batch."""

    @abstractmethod
    def ntt_msm_h(self, kh, assignments) -> list:
        """Per circuit: the H term, MSM(h, H bases)."""

    @abstractmethod
    def batch_addition(self, kh, prep) -> list:
        """Per circuit: {'a', 'b_g1', 'b_g2', 'l'} sums of bases with scalar 1."""

    @abstractmethod
    def tail_msm(self, kh, prep, assignments) -> list:
        """Per circuit: {'a', 'b_g1', 'l'} MSMs over the tail."""

    @abstractmethod
    def b_g2(self, kh, prep, assignments) -> list:
        """Per circuit: the G2 MSM of B over the tail."""

    @abstractmethod
    def proof_assembly(self, kh, parts: list, randomness: list) -> list:
        """Per circuit: the Proof from the parts and (r, s)."""
