"""prep_msm on the GPU: the 0/1/other split of each circuit's scalars, merged over the batch.

Returns the same structure as the CPU phase (backend.base.Prep), with device index arrays:
tail = positions where any circuit has an 'other' scalar (its bases are gathered once), and
per circuit the positions with scalar 1 outside the tail (batch addition).
"""
from __future__ import annotations

from dataclasses import dataclass

import cupy
import numpy as np

from .loader import kernel

THREADS = 256


@dataclass
class DevicePrep:
    num_inputs: int
    tail: object          # cupy int64[t]
    ones: list            # per circuit: cupy int64 indices
    counts: dict

    def aux_part(self, idx):
        return idx[idx >= self.num_inputs] - self.num_inputs


def prep_msm(zs, num_inputs: int) -> DevicePrep:
    """zs: device uint32[batch, n, 8], Montgomery."""
    batch, n = zs.shape[0], zs.shape[1]
    cls = cupy.empty((batch, n), dtype=cupy.uint8)
    other_any = cupy.zeros(n, dtype=cupy.uint32)
    kernel("msm/prep", "classify_scalars")(((n + THREADS - 1) // THREADS, batch), (THREADS,),
                                           (cls, other_any, zs, np.int64(n)))
    tail = cupy.flatnonzero(other_any)
    keep = other_any == 0
    ones = [cupy.flatnonzero((cls[c] == 1) & keep) for c in range(batch)]
    counts = {"zeros": int((cls == 0).sum()), "ones": int((cls == 1).sum()), "others": int((cls == 2).sum())}
    return DevicePrep(num_inputs, tail, ones, counts)
